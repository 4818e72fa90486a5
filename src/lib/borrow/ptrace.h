/* SPDX-License-Identifier: MIT */
/*
 * The only module that calls ptrace(2), plus the target-memory accessors and
 * the bounded wait for ptrace stops.
 */
#ifndef HC_PTRACE_H
#define HC_PTRACE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hc_err;

int ptrace_seize(pid_t tid, struct hc_err *err);
int ptrace_interrupt(pid_t tid, struct hc_err *err);
/* Resume: PTRACE_CONT, or PTRACE_SYSCALL when to_syscall. sig is delivered. */
int ptrace_resume(pid_t tid, bool to_syscall, int sig, struct hc_err *err);
int ptrace_detach(pid_t tid, int sig, struct hc_err *err);
/* *len: buffer size in, size the kernel filled out. */
int ptrace_regset_get(pid_t tid, unsigned int nt, void *buf, size_t *len, struct hc_err *err);
int ptrace_regset_set(pid_t tid, unsigned int nt, const void *buf, size_t len,
		      struct hc_err *err);
int ptrace_sigmask_get(pid_t tid, uint64_t *mask, struct hc_err *err);
int ptrace_sigmask_set(pid_t tid, uint64_t mask, struct hc_err *err);
int ptrace_siginfo_get(pid_t tid, siginfo_t *si, struct hc_err *err);
/* The idx-th seccomp filter of stopped tid into prog; returns its length or -1. */
long ptrace_seccomp_filter(pid_t tid, unsigned long idx, void *prog, size_t max,
			   struct hc_err *err);

/*
 * Wait for tid to report a stop or exit, up to deadline_ns on
 * CLOCK_MONOTONIC.  Returns 1 with *status, 0 on timeout, -1 on error.
 * If cancellable, a termination signal (SIGINT, SIGTERM, SIGHUP) that the
 * caller has blocked ends the wait: it returns 2 and *cancel_sig, and the
 * signal is left pending.  Returns 3 if tid stopped being heapctl's tracee
 * without a word (released by another thread's execve).
 */
int ptrace_wait(pid_t tid, int *status, uint64_t deadline_ns, bool cancellable, int *cancel_sig,
		struct hc_err *err);
/*
 * Keep SIGCHLD blocked from before a borrow's first stop to after its
 * detach, so that no wait in between changes the signal mask.
 */
void ptrace_hold_sigchld(void);
void ptrace_release_sigchld(void);

#endif
