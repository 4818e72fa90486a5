/* SPDX-License-Identifier: MIT */
/*
 * The borrow engine's part of a target (struct engine): every borrow/
 * function takes it, and through it reaches the image it works on and
 * nothing of the driver's or the sampler's.
 */
#ifndef HC_ENGINE_H
#define HC_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <heapctl/heapctl.h>

#include "arch.h"
#include "image.h"

struct sess;
struct uw_arg;

/* What the borrow engine keeps (borrow/): the stopped thread, its saved state, its scratch. */
struct engine {
	struct image *img; /* the image it works on, its target's */
	/*
	 * The engine's safe-point policy, filled in by the API from the
	 * driver: is raddr inside the allocator's code?  NULL: no allocator
	 * code to avoid beyond the malloc family (where.c), whose names may
	 * carry the allocator's prefix (alloc_prefix: "je_"; "" none).
	 */
	bool (*in_allocator)(struct engine *e, uint64_t raddr);
	const char *alloc_prefix;
	/* the current borrowed thread, while attached */
	struct sess *sess;
	uint8_t *shadow;   /* the session's copy of the thread's stack area (call_int.h) */
	uint8_t *regs_area; /* where a session saves the extra regsets (call_int.h) */
	unsigned int held; /* call_hold() depth: call_done() keeps the thread */
	void *unw; /* libunwind address space, created once */
	struct uw_arg *uw; /* where.c: its page cache, as long as the target */
	uint64_t pac_mask; /* PAC bits of return addresses (arm64), once pac_known */
	bool pac_known;
	struct hc_timing timing;
	uint64_t deadline_ns;
	int seccomp;    /* Seccomp: from /proc/PID/status (2: filters) */
	bool skip_errno; /* its filters fail a skipped syscall with an errno (seccomp_check()) */
	int cancel_sig; /* a termination signal cancelled the operation */
	int cancel_hold; /* > 0: calls run despite cancel_sig (undoing what was begun) */
	int lockfd;     /* the per-target lock (tlock.c), from the first call to close; or -1 */
	uint64_t gadget;   /* "syscall; ret" in the target's text */
	uint64_t restorer; /* a sigreturn restorer in the target's text */
	uint64_t restorer_end; /* pc at its rt_sigreturn syscall stops */
	/* x86_64: ret gadgets (arch.h), one with room for two stack arguments; addr 0: none */
	struct hc_ret_gadget retg, retg8;
	uint64_t notify_fn;  /* what callbacks point at (the C library's getpid()), or 0 */
	uint64_t notify_end; /* pc at its syscall stops */
};

#endif
