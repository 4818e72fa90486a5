/* SPDX-License-Identifier: MIT */
/*
 * Private to the remote-call engine: what call.c (sessions), step.c (the
 * thread from stop to stop), thread.c (which thread) and gadget.c (the
 * target's text, leftover pages) share.  Nothing else includes it; the
 * rest of heapctl goes through call.h.
 */
#ifndef HC_CALL_INT_H
#define HC_CALL_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "call.h"

#define CODE_LEN 4096
#define NOTIFY_OFF 64 /* the callback stub's offset in the code page */
_Static_assert(HC_STUB_OFF + 8 <= NOTIFY_OFF, "the arch's stub runs into the notify stub");
#define CHAIN_OFF 80  /* the page's way out from its mmap (arch.h, page_exit) */
#define SCRATCH_LEN (16 * 1024) /* strings and out-values, on the thread's stack */
#define MAGIC_OFF 128            /* heapctl's mark in its code page */
#define MAGIC "HEAPCTL1"
#define MAX_EXTRA 4
#define MAX_DEFER 64

enum stop { ST_EXITED, ST_EVENT, ST_GROUP, ST_SYSCALL, ST_SIGNAL };
enum step { STEP_SYSCALL, STEP_CALL, STEP_RESTORE };

struct deferred {
	int sig;
	siginfo_t si;
};

struct sess {
	pid_t tid;
	uint8_t gregs[512] __attribute__((aligned(16))); /* the state to give back */
	uint8_t cur[512] __attribute__((aligned(16)));   /* working copy */
	/*
	 * arm64, after probe_restart(): gregs goes on in restart_syscall, which
	 * an rt_sigreturn (the frame) would turn into EINTR; the frame re-runs
	 * the sleep as it was instead (see x86_64's restart_now()).
	 */
	uint8_t fgregs[512] __attribute__((aligned(16)));
	bool probed;
	struct hc_regset extra[MAX_EXTRA];
	unsigned int nextra;
	uint64_t mask;      /* the thread's real mask, restored at the end */
	bool mask_known;    /* read at the first syscall-entry stop */
	bool mask_blocked;  /* heapctl's mask is in place */
	bool stopped;       /* in a ptrace stop we can act on */
	bool saved;         /* gregs holds the original registers */
	bool eintr_undone;  /* gregs re-issues a syscall our stop made fail */
	bool touched;       /* registers were changed and the thread ran */
	bool fp_ready;      /* the callee's FP state is in place (prepare_fp()) */
	bool gone;
	bool exec_seen;     /* the target ran execve: nothing to restore */
	bool real_sigreturn; /* an rt_sigreturn ran: the restart block is reset */
	enum stop at;       /* the kind of stop the thread is in now */
	int pending_sig;    /* a signal that arrived before the mask was taken */
	struct hc_presys presys; /* the thread's syscall just before our stop */
	uint64_t frame;     /* the signal frame below the red zone */
	uint64_t code;
	uint64_t scratch;   /* above the frame, below the red zone */
	size_t scratch_used;
	struct deferred defer[MAX_DEFER];
	unsigned int ndefer;
	uint64_t stopped_ns;
};

/* step.c */

/* Name of a kind of stop, for the log. */
const char *step_stop_name(enum stop st);
/* Wait for the next stop of tid; cancellable by a termination signal (2). */
int step_wait_ex(struct hc_target *t, pid_t tid, bool cancellable, enum stop *st, int *sig,
		 struct hc_err *err);
/* step_wait_ex(), not cancellable. */
int step_wait(struct hc_target *t, pid_t tid, enum stop *st, int *sig, struct hc_err *err);
/* HC_E_CANCELLED for the termination signal in t->cancel_sig. */
int step_cancelled(struct hc_target *t, struct hc_err *err);
/* HC_E_GONE: the process exited, or ran execve; marks the session gone. */
int step_gone(struct hc_target *t, struct hc_err *err);
/* The borrowed thread's general registers (NT_PRSTATUS). */
int step_set_gregs(struct hc_target *t, const void *g, struct hc_err *err);
int step_get_gregs(struct hc_target *t, void *g, struct hc_err *err);
/* Re-send the signals deferred while heapctl held the thread. */
void step_redeliver(struct hc_target *t, struct sess *s);
/* Free the saved extra regsets. */
void step_forget_extra(struct sess *s);
/* Put heapctl's mask (every signal but faults) on the thread, once. */
int step_block_signals(struct hc_target *t, struct hc_err *err);
/* Hand the thread back at its first stop to take s->pending_sig. */
int step_give_back_pending(struct hc_target *t, struct hc_err *err);
/* At a syscall-entry stop: have the kernel skip the syscall. */
int step_skip_syscall(struct hc_target *t, struct hc_err *err);
/* Run the thread until the step ends: 0, 1 (a signal came first, thread given back), -1. */
int step_run(struct hc_target *t, enum step kind, uint64_t *ret, call_cb_fn cb, void *cb_arg,
	struct hc_err *err);
/* One syscall in the target, on the gadget; *ret is its raw result. */
int step_rsys(struct hc_target *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
	 struct hc_err *err);
/*
 * step_rsys() whose "ret" finds ret_addr at sp (x86_64; arm64 takes it in
 * x30): where the thread goes should heapctl die before the syscall's exit.
 * xreg, if not 0, is set to xval too (arm64's page chain).
 */
int step_rsys_to(struct hc_target *t, long nr, const uint64_t *args, unsigned int n,
		 uint64_t sp, uint64_t ret_addr, unsigned int xreg, uint64_t xval, int64_t *ret,
		 struct hc_err *err);
/* step_rsys(), with a failure in the target turned into HC_E_REMOTE naming what. */
int step_rsys_ok(struct hc_target *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
	    const char *what, struct hc_err *err);

/* thread.c */

/* Seize tid and stop it.  1: stopped and safe, 0: not usable now (why), -1: error. */
int thread_try(struct hc_target *t, pid_t tid, bool picky, char *why, size_t whylen,
	       struct hc_err *err);
/* The process's threads (at most max; 0: all) in the order to try them; *out is malloc'ed. */
int thread_list(struct hc_target *t, size_t max, pid_t **out, size_t *n, struct hc_err *err);
/* A job-control stopped process: fails if another thread stopped inside the allocator. */
int thread_check_stopped(struct hc_target *t, struct hc_err *err);

/* gadget.c */

/* Find the "syscall; ret" gadget and a sigreturn restorer (t->gadget, t->restorer). */
int gadget_find(struct hc_target *t, struct hc_err *err);
/* Is the program heapctl inspected still the one running (no execve since)? */
bool gadget_same_program(struct hc_target *t);
/* Code pages of killed heapctl runs, at most max into out; how many. */
size_t gadget_find_leftovers(struct hc_target *t, uint64_t *out, size_t max);
/* Unmap them, on the borrowed thread. */
void gadget_reclaim_leftovers(struct hc_target *t, const uint64_t *pages, size_t n);

#endif
