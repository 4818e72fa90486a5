/* SPDX-License-Identifier: MIT */
/* Where a stopped thread is: libunwind-ptrace for frames, Capstone for code. */
#ifndef HC_WHERE_H
#define HC_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log.h"

struct engine;

int where_init(struct engine *t, struct hc_err *err);
void where_fini(struct engine *t);
/*
 * The unwind table heapctl built (once, before the first borrow, or here)
 * for the object whose text starts at text_lo, one linked without
 * .eh_frame_hdr: an .eh_frame_hdr
 * made for the address of the object's .eh_frame (eh, eh_len bytes long),
 * len bytes.  NULL if the object has none: why says what failed, or is ""
 * if nothing was tried (it has a table of its own, or no .eh_frame).
 */
const uint8_t *where_eh_table(struct engine *t, uint64_t text_lo, size_t *len, uint64_t *eh,
			      uint64_t *eh_len, char *why, size_t whylen);
/* What where_safe() needs ready before anything stops; -1 if out of memory. */
int where_prepare(struct engine *t);
/*
 * Before a thread blocked at pc with its stack pointer at sp is stopped:
 * read its stack once and judge pc and the code the stack returns into,
 * so that the stopped window finds the memory warm and the verdicts made.
 * Decides nothing.
 */
void where_warm_up(struct engine *t, uint64_t sp, uint64_t pc);
/*
 * Right after the thread stopped, before its registers are read: read its
 * stack from sp as /proc said before the stop, which the safe-point check
 * then takes if the registers show that sp.  The read fills the moment the
 * kernel needs to take the thread off its CPU, which the first register
 * read would wait for.
 */
void where_prefetch(struct engine *t, uint64_t sp);
/*
 * Is stopped thread tid, whose registers are gregs (NT_PRSTATUS as saved),
 * at a safe point?  A scan of its stack proves most threads safe; the
 * others are unwound, and any frame inside the allocator, a malloc-family
 * function or the dynamic linker, or an incomplete unwind, makes them
 * unsafe.  Returns 1 safe, 0 unsafe (reason
 * says why), never fails: an error means unsafe.
 */
int where_safe(struct engine *t, pid_t tid, const void *gregs, char *reason, size_t len);
/*
 * Is a frame in the function name (an ELF symbol) inside the allocator for
 * where_safe()?  An entry point of allocfn.c, anything in the allocator's
 * own namespace (prefix, e.g. "je_"; "" or NULL for none), or a glibc
 * malloc internal.  Pure.
 */
bool where_malloc_family(const char *name, const char *prefix);
/* Log a few instructions at pc (for -vvv). */
void where_disasm(struct engine *t, uint64_t pc, enum hc_log_level level);

#endif
