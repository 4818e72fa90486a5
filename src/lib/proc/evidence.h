/* SPDX-License-Identifier: MIT */
/* Signs of an allocator in an object's read-only data, symbols or not (evidence.c). */
#ifndef HC_EVIDENCE_H
#define HC_EVIDENCE_H

#include <stdbool.h>

#include "err.h"
#include "image.h" /* struct evidence, struct obj */

/*
 * The signs in one run of read-only data (NUL-terminated strings, the last
 * perhaps cut at len): 1 with ev filled, or 0.
 */
int evidence_strings(const char *buf, size_t len, struct evidence *ev);
/*
 * 1 with ev filled if the ELF file open at fd (closed here; -1: none)
 * carries an allocator's signs, 0 if not, -1 unreadable.
 */
int evidence_file(int fd, struct evidence *ev);
/*
 * The part of evidence_file() after the file is open: the signs in an ELF
 * image already handed to libelf (its read-only sections, or without
 * section headers its read-only PT_LOAD segments).  The file's contents
 * are the target's: fuzzed from memory.  1 with ev filled, or 0.
 */
struct Elf;
int evidence_elf(struct Elf *elf, struct evidence *ev);
/*
 * evidence_elf() of the file st describes, from the cache when that file
 * was read already (the same file mapped in many processes: heapctl list).
 */
struct stat;
int evidence_of(const struct stat *st, struct Elf *elf, struct evidence *ev);
/*
 * The same signs in o's loaded image, for an object whose file cannot be
 * opened: its read-only PT_LOAD segments, through the ELF and program
 * headers at o->base in o->pid's memory.  1, 0, or -1 as evidence_file().
 */
struct obj;
int evidence_mem(const struct obj *o, struct evidence *ev);
/*
 * Does o name an allocator (libjemalloc.so.2) or carry one's signs?  Only
 * then are its symbols worth looking for elsewhere (sym.c): every stripped
 * library of a glibc program would otherwise have its MiniDebugInfo
 * decompressed and its debug files looked for, on each open.  glibc's own
 * objects are never read.
 */
bool evidence_likely(const struct obj *o);
/*
 * Will evidence_check() read o whichever driver is chosen: the executable,
 * or an object named after an allocator (the driver's, as a rule)?  Never
 * glibc's own objects, the loader or the vDSO.  Others are read only with
 * glibc or no driver.
 */
bool evidence_sure(const struct obj *o);
/*
 * After the driver is chosen (drv, the allocator it names, and drv_obj,
 * its object's path): refuse (HC_E_NO_SYM) if an object holds an
 * allocator that has no symbols and is not the driver's.  Reads the executable and the
 * driver's object; with all, every object but glibc's own.  Notes the
 * evidence for the driver in t->ev_*.
 */
int evidence_check(struct image *t, const char *drv, const char *drv_obj, bool all,
		   struct hc_err *err);
/*
 * The first object with an allocator's signs, as hc_evidence_read() says:
 * what evidence_check() found if it ran, else the objects are read now
 * (the executable first).  1 with out filled, 0 if none.
 */
struct hc_evidence;
int evidence_first(struct image *t, struct hc_evidence *out);
/* The judgement sym_load() asks for (struct sym_judge, image.h), from the three above. */
extern const struct sym_judge evidence_judge;

#endif
