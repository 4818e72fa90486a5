/* SPDX-License-Identifier: MIT */
/*
 * The GOT slots of a loaded object that bind to the functions the sampler
 * hooks, found through its dynamic section (got.c).  Pure: the target's
 * memory is read through a callback (inject.c reads the target's,
 * tests/fuzz/fuzz_got.c its input), since what the dynamic section, the
 * relocations, the symbols and their names say is the target's to choose.
 */
#ifndef HC_GOT_H
#define HC_GOT_H

#include <stddef.h>
#include <stdint.h>

#include "../../sampler/hcs.h"

/* The most a target's dynamic section may make got.c read. */
#define GOT_MAX_DYN 128            /* dynamic entries */
#define GOT_MAX_TABLE (64u << 20)  /* bytes of DT_STRTAB, DT_RELA or DT_JMPREL */
#define GOT_MAX_SYMS (1u << 20)    /* symbol index */

struct got_src {
	/* len bytes at raddr into buf: 0, or -1 if they cannot be read */
	int (*read)(void *arg, uint64_t raddr, void *buf, size_t len);
	/* the hook (enum hcs_hook) a symbol's slot is for, or -1: not hooked */
	int (*hook)(void *arg, const char *name);
	/* PROT_* of the mapping that holds raddr, or -1: none */
	int (*prot)(void *arg, uint64_t raddr);
	void *arg;
	uint64_t dynamic;     /* the object's PT_DYNAMIC in the target, or 0 */
	uint64_t dynamic_len; /* its p_memsz: what may be read there */
	uint64_t base, bias; /* its ELF header in the target; runtime - ELF address */
	uint32_t r_jump_slot, r_glob_dat; /* the arch's relocation types (struct hc_arch) */
};

/*
 * Append to out[*n] the slots of the object s describes whose DT_RELA or
 * DT_JMPREL relocation (JUMP_SLOT or GLOB_DAT) names a hooked symbol, in
 * mapped memory and 8-aligned, until *n reaches max.  Whatever cannot be
 * read, or is out of bounds, adds nothing.
 */
void got_slots_from_dynamic(const struct got_src *s, struct hcs_slot *out, unsigned *n,
			    unsigned max);

#endif
