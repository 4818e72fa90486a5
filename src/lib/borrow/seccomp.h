/* SPDX-License-Identifier: MIT */
/*
 * Will the target's seccomp filters let heapctl's own syscalls through?
 * A classic-BPF interpreter for seccomp programs (pure code, fuzzed), and
 * the check call.c runs before the first remote syscall.
 */
#ifndef HC_SECCOMP_H
#define HC_SECCOMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

struct engine;
struct hc_err;

/*
 * Run one seccomp program on d.  Returns 0 with *action (SECCOMP_RET_*
 * with its data), or -1 for a program the kernel would not have accepted
 * (bad opcode, out-of-range jump or load, division by zero, no return).
 */
int seccomp_eval(const struct sock_filter *prog, size_t n, const struct seccomp_data *d,
		 uint32_t *action);

/* Of two actions, the one the kernel applies (the lower, as a signed value). */
uint32_t seccomp_stricter(uint32_t a, uint32_t b);

/*
 * With thread tid stopped: refuse (-1, HC_E_UNSUPPORTED) if a filter would
 * kill, trap or suspend on one of heapctl's syscalls; 0 if all pass.
 */
int seccomp_check(struct engine *t, pid_t tid, struct hc_err *err);

#endif
