/* SPDX-License-Identifier: MIT */
/* Where a stopped thread is: libunwind-ptrace for frames, Capstone for code. */
#ifndef HC_WHERE_H
#define HC_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log.h"

struct hc_target;

int where_init(struct hc_target *t, struct hc_err *err);
void where_fini(struct hc_target *t);
/*
 * Is stopped thread tid at a safe point?  Unwinds it; any frame inside the
 * allocator, a malloc-family function or the dynamic linker, or an
 * incomplete unwind, makes it unsafe.  Returns 1 safe, 0 unsafe (reason
 * says why), never fails: an error means unsafe.
 */
int where_safe(struct hc_target *t, pid_t tid, char *reason, size_t len);
/*
 * Is a frame in the function name (an ELF symbol) inside the allocator for
 * where_safe()?  An entry point of allocfn.c, anything in the allocator's
 * own namespace (prefix, e.g. "je_"; "" or NULL for none), or a glibc
 * malloc internal.  Pure.
 */
bool where_malloc_family(const char *name, const char *prefix);
/*
 * arm64 frame-record walk, pure (unit-tested on every host).  From fp
 * (x29), follow {saved x29, return address} records upwards from sp; rd
 * reads one 16-byte record.  Fills rets[] with the return addresses, PAC
 * bits cleared with pac_mask.  Returns how many, once a record with a saved
 * x29 of 0 ends the chain (the outermost frame), or -1 with why if the
 * chain breaks first (unreadable, misaligned, below sp, not increasing, a
 * step of more than 16 MiB, more than max frames).
 */
typedef int (*where_read_fn)(void *arg, uint64_t addr, uint64_t rec[2]);
int where_frame_walk(uint64_t fp, uint64_t sp, uint64_t pac_mask, where_read_fn rd, void *arg,
		     uint64_t *rets, unsigned int max, char *why, size_t whylen);
/* Does the instruction at raddr decode as the syscall instruction? */
bool where_is_syscall(struct hc_target *t, uint64_t raddr);
/* Log a few instructions at pc (for -vvv). */
void where_disasm(struct hc_target *t, uint64_t pc, enum hc_log_level level);

#endif
