/* SPDX-License-Identifier: MIT */
/*
 * An .eh_frame_hdr made from an object's .eh_frame (ehhdr.c), for objects
 * linked without one: gcc leaves PT_GNU_EH_FRAME out of -static links, and
 * the freestanding sampler's unwinder finds CFI only through that table
 * (src/sampler/hcs.h, struct hcs_obj).  Pure: the section's bytes come from
 * the caller, and are the target's to choose.
 */
#ifndef HC_EHHDR_H
#define HC_EHHDR_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The most FDEs a table may index: far above any real object's, and a bound on the memory garbage costs. */
#define EHHDR_MAX_FDES 4000000u

/*
 * An .eh_frame_hdr (version 1: eh_frame_ptr_enc DW_EH_PE_pcrel|sdata4,
 * fde_count_enc DW_EH_PE_udata4, table_enc DW_EH_PE_datarel|sdata4, sorted by
 * initial location) for the .eh_frame section whose bytes are eh (len bytes)
 * and which is at runtime address eh_addr in the target, to be placed at
 * runtime address hdr_addr.  Returns a malloc'd buffer and *out_len, or NULL
 * with err set (struct hc_err, src/lib/base/err.h) when the section is
 * malformed or an offset does not fit in 32 bits.
 *
 * The table indexes every FDE with a non-zero initial location and range, in
 * the order of their initial locations; of FDEs that begin at one address,
 * only the first in the section.  Pc-relative locations are taken against
 * eh_addr; absolute ones (DW_EH_PE_absptr, udata*) as they are, which is
 * right for a non-PIE executable, the objects that lack a table.  Fails with
 * HC_E_FORMAT for a malformed section, HC_E_UNSUPPORTED for an encoding an
 * .eh_frame FDE may not use (datarel, textrel, funcrel, aligned, indirect),
 * an offset from hdr_addr beyond 32 bits or more than EHHDR_MAX_FDES FDEs,
 * HC_E_NOMEM.  Reads nothing outside eh[0..len).
 */
uint8_t *ehhdr_build(const uint8_t *eh, size_t len, uint64_t eh_addr, uint64_t hdr_addr,
		     size_t *out_len, struct hc_err *err);

/*
 * The table ehhdr_build() made for hdr_addr from, changed in place to be
 * placed at to: its offsets count from the table's own address.  0, or -1
 * with err set: HC_E_FORMAT if tab[0..len) is not such a table,
 * HC_E_UNSUPPORTED if an offset no longer fits in 32 bits (tab is then
 * partly changed).
 */
int ehhdr_rebase(uint8_t *tab, size_t len, uint64_t from, uint64_t to, struct hc_err *err);

#endif
