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

#define SCRATCH_LEN (16 * 1024) /* strings and out-values, on the thread's stack */
#define CHAIN_ROOM 128          /* below the frame: a ret gadget's words (arch.h) */
#define SLOT_ROOM 16            /* the scratch's first bytes: the ret gadget's slot */
/* the shadow's size: the chain, a frame with the largest XSAVE image heapctl reads, the scratch */
#define SHADOW_MAX (CHAIN_ROOM + 72 * 1024 + SCRATCH_LEN)
#define MAX_EXTRA 4
/* where the extra regsets are saved (t->regs_area): AMX's 11 KiB XSAVE image fits, SVE's too */
#define REGS_AREA (64 * 1024)
#define MAX_DEFER 64

#define NT_PRSTATUS_ 1 /* <elf.h>'s, without its other names */

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
	enum stop at;       /* the kind of stop the thread is in now */
	bool at_entry;      /* a syscall-entry stop (at == ST_SYSCALL) */
	/*
	 * At the entry stop of the restorer's rt_sigreturn, after a call: run,
	 * it gives the thread back, or heapctl skips it for the next step.
	 */
	bool at_ret;
	int pending_sig;    /* a signal that arrived before the mask was taken */
	bool asked;         /* borrow() looked for a termination signal just before the seize */
	struct hc_presys presys; /* the thread's syscall just before our stop */
	uint64_t frame;     /* the signal frame below the red zone */
	uint64_t slot;      /* where the ret gadget stores a call's result (x86_64) */
	uint64_t scratch;   /* above the frame, below the red zone */
	size_t scratch_used;
	/*
	 * heapctl's copy of the thread's stack from CHAIN_ROOM below the frame
	 * to the end of the scratch (t->shadow): written to the target in one
	 * go before the thread runs, read back in one go after (shadow_*()).
	 */
	uint64_t shadow_lo;
	size_t shadow_len;
	uint64_t dirty_lo, dirty_hi; /* what heapctl wrote since the last flush */
	bool shadow_fresh;           /* the scratch's used part is as the target has it */
	struct deferred defer[MAX_DEFER];
	unsigned int ndefer;
	uint64_t stopped_ns;
};

/*
 * What the slot holds until the ret gadget stores the result over it: at a
 * syscall-entry stop, a slot that holds anything else says the callee has
 * returned, and the stop is the restorer's rt_sigreturn (step_run()).
 */
#define SLOT_PENDING 0x8badc0de5107f00dull

/* shadow.c: the shadow of the thread's stack area (struct sess) */

/* Write into the target, through the shadow where raddr is in it (flushed before the thread runs). */
int shadow_write(struct engine *t, uint64_t raddr, const void *buf, size_t len,
		 struct hc_err *err);
/* Read from the target, through the shadow where raddr is in it. */
int shadow_read(struct engine *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err);
/* Write out what the shadow holds that the target does not yet. */
int shadow_flush(struct engine *t, struct hc_err *err);

/* step.c */

/* Name of a kind of stop, for the log. */
const char *step_stop_name(enum stop st);
/* Wait for the next stop of tid; cancellable by a termination signal (2). */
int step_wait_ex(struct engine *t, pid_t tid, bool cancellable, enum stop *st, int *sig,
		 struct hc_err *err);
/* step_wait_ex(), not cancellable. */
int step_wait(struct engine *t, pid_t tid, enum stop *st, int *sig, struct hc_err *err);
/* HC_E_CANCELLED for the termination signal in t->cancel_sig. */
int step_cancelled(struct engine *t, struct hc_err *err);
/* HC_E_GONE: the process exited, or ran execve; marks the session gone. */
int step_gone(struct engine *t, struct hc_err *err);
/* The borrowed thread's general registers (NT_PRSTATUS). */
int step_set_gregs(struct engine *t, const void *g, struct hc_err *err);
int step_get_gregs(struct engine *t, void *g, struct hc_err *err);
/* Re-send the signals deferred while heapctl held the thread. */
void step_redeliver(struct engine *t, struct sess *s);
/* Put heapctl's mask (every signal but faults) on the thread, once. */
int step_block_signals(struct engine *t, struct hc_err *err);
/* Hand the thread back at its first stop to take s->pending_sig. */
int step_give_back_pending(struct engine *t, struct hc_err *err);
/* At a syscall-entry stop: have the kernel skip the syscall. */
int step_skip_syscall(struct engine *t, struct hc_err *err);
/* Run the thread until the step ends: 0, 1 (a signal came first, thread given back), -1. */
int step_run(struct engine *t, enum step kind, uint64_t *ret, call_cb_fn cb, void *cb_arg,
	struct hc_err *err);
/* One syscall in the target, on the gadget; *ret is its raw result. */
int step_rsys(struct engine *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
	 struct hc_err *err);
/*
 * The registers of a call are in place: skip the syscall the thread is at
 * the entry of (the restorer's, after the last call), where gregs cannot
 * say so (arm64).
 */
int step_start(struct engine *t, struct hc_err *err);
/*
 * From a syscall-entry stop, to the exit stop of that syscall, skipped, the
 * thread aimed at the restorer: where heapctl may write every register
 * without a seccomp filter's errno landing in one.  Elsewhere nothing.
 */
int step_to_exit(struct engine *t, struct hc_err *err);
/*
 * Take the thread to a stop inside signal delivery, where every register
 * can be written and the kernel's restart logic runs after them, aiming it
 * at the restorer meanwhile.  *sig: a signal held at that stop, delivered
 * when the thread is let go; with sig NULL it waits for the restore
 * (step_redeliver()).
 */
int step_signal_stop(struct engine *t, int *sig, struct hc_err *err);
/* step_rsys(), with a failure in the target turned into HC_E_REMOTE naming what. */
int step_rsys_ok(struct engine *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
	    const char *what, struct hc_err *err);

/* thread.c */

/* Seize tid and stop it.  1: stopped and safe, 0: not usable now (why), -1: error. */
int thread_try(struct engine *t, pid_t tid, bool picky, char *why, size_t whylen,
	       struct hc_err *err);
/* The process's threads (at most max; 0: all) in the order to try them; *out is malloc'ed. */
int thread_list(struct engine *t, size_t max, pid_t **out, size_t *n, struct hc_err *err);
/* /proc/PID/task/TID/syscall of a blocked thread (pre->valid false otherwise). */
void thread_presys(pid_t pid, pid_t tid, struct hc_presys *pre);
/* Is a signal pending that tid does not block?  Then it will be delivered anyway. */
bool thread_signal_pending(pid_t pid, pid_t tid);
/* Exited, or a zombie. */
bool thread_gone(pid_t pid, pid_t tid);
/* A job-control stopped process: fails if another thread stopped inside the allocator. */
int thread_check_stopped(struct engine *t, struct hc_err *err);

/* gadget.c */

/* Find what heapctl runs on in the target's text (engine.h: gadget, restorer, retg, notify_fn). */
int gadget_find(struct engine *t, struct hc_err *err);
/* What runs in the target now: the program heapctl read, another (execve), none (exit). */
enum prog { PROG_SAME, PROG_OTHER, PROG_GONE };
enum prog gadget_program(struct engine *t);

#endif
