/* SPDX-License-Identifier: MIT */
/* Signs of an allocator in an object's read-only data, symbols or not (evidence.c). */
#ifndef HC_EVIDENCE_H
#define HC_EVIDENCE_H

#include <stdbool.h>

#include "err.h"

struct hc_target;
struct obj;

struct evidence {
	const char *alloc; /* "jemalloc", "tcmalloc", "mimalloc" */
	char found[192];   /* what was found, for people: "_RJEM_MALLOC_CONF string, ..." */
};

/*
 * 1 with ev filled if the ELF file open at fd (closed here; -1: none)
 * carries an allocator's signs, 0 if not, -1 unreadable.
 */
int evidence_file(int fd, struct evidence *ev);
/*
 * Does o name an allocator (libjemalloc.so.2) or carry one's signs?  Only
 * then are its symbols worth looking for elsewhere (sym.c): every stripped
 * library of a glibc program would otherwise have its MiniDebugInfo
 * decompressed and its debug files looked for, on each open.  glibc's own
 * objects are never read.
 */
bool evidence_likely(const struct obj *o);
/*
 * After the driver is chosen: refuse (HC_E_NO_SYM) if an object holds an
 * allocator that has no symbols and is not the driver's.  Reads the executable and the
 * driver's object; with all, every object but glibc's own.  Notes the
 * evidence for the driver in t->ev_*.
 */
int evidence_check(struct hc_target *t, bool all, struct hc_err *err);
/*
 * The first object with an allocator's signs, as hc_evidence_read() says:
 * what evidence_check() found if it ran, else the objects are read now
 * (the executable first).  1 with out filled, 0 if none.
 */
struct hc_evidence;
int evidence_first(struct hc_target *t, struct hc_evidence *out);

#endif
