// SPDX-License-Identifier: MIT
/*
 * The remote-call engine: the arch-neutral sequence.
 *
 *  1. Seize ONE thread (PTRACE_SEIZE + PTRACE_INTERRUPT); the others run on.
 *     Keep it only if where_safe() finds no frame inside the allocator.
 *  2. Save NT_PRSTATUS, every extra regset at the size the kernel reports
 *     (11008 bytes of XSTATE on AMX machines), and the signal mask.
 *  3. Write a real signal frame below the red zone: rt_sigreturn on it gives
 *     the thread back exactly.  From here on, every state the thread is left
 *     in ends in that rt_sigreturn if heapctl dies (see arch/arch.h), so
 *     there is no moment at which killing heapctl harms the target.
 *  4. Calls run on the thread with a return into the target's own sigreturn
 *     restorer (on x86_64 through a ret gadget that keeps the result), under
 *     PTRACE_SYSCALL: heapctl takes the result at that rt_sigreturn's entry
 *     stop.  Nothing in the target is ever patched or mapped.  Before the
 *     first call every asynchronous signal is blocked; they stay pending and
 *     are delivered after the restore, none lost or doubled.  A thread inside
 *     ppoll/pselect/epoll_pwait/sigsuspend gives its real mask only at its
 *     first syscall stop: one remote getpid() comes first for it.
 *     Callbacks point at the C library's getpid(), a syscall heapctl stops at.
 *  5. Between calls the rt_sigreturn is skipped; after the last one it runs,
 *     and heapctl detaches at its entry stop: the frame puts back registers,
 *     FP/vector state and mask, and re-issues the interrupted syscall, which
 *     is what a detach at that moment would do anyway if heapctl died.  Where
 *     the frame cannot say it all (a relative sleep the kernel resumes
 *     through restart_syscall; live SVE state), heapctl writes the registers
 *     back itself, at that syscall stop with the restart decision the kernel
 *     would make (arch restart_here()), or at a stop inside signal delivery.
 *
 * This file holds the session: borrow() with the frame, the calls,
 * scratch space, and the restore in call_end().  step.c runs the thread
 * from stop to stop, thread.c picks and stops it, gadget.c finds what the
 * target's text lends heapctl, shadow.c keeps heapctl's copy of the
 * thread's stack area; call_int.h is what they share.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "call.h"
#include "call_int.h"
#include "clock.h"
#include "log.h"
#include "mem.h"
#include "procfs.h"
#include "ptrace.h"
#include "seccomp.h"
#include "engine.h"
#include "image.h"
#include "tlock.h"
#include "where.h"

/* The extra regsets, one after the other in t->regs_area: nothing allocated while stopped. */
static int save_extra(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	size_t used = 0;

	for (const unsigned int *nt = t->img->arch->extra_regsets; *nt && s->nextra < MAX_EXTRA; nt++) {
		/* Ask with all the room left; the kernel says how much is real. */
		size_t room = REGS_AREA - used, len = room;
		uint8_t *buf = t->regs_area + used;
		struct hc_err e = { 0 };

		if (ptrace_regset_get(s->tid, *nt, buf, &len, &e) < 0) {
			/* A regset this CPU or kernel does not have (e.g. no SVE): nothing to save. */
			if (e.sys_errno == EINVAL || e.sys_errno == ENODEV) {
				pr_debug("tid %d: no regset 0x%x here", s->tid, *nt);
				continue;
			}
			*err = e;
			return -1;
		}
		/* what filled the room may have been cut short: never restore part of a state */
		if (len >= room)
			return err_set(err, HC_E_UNSUPPORTED, 0,
				       "thread %d: register set 0x%x is larger than %zu bytes", s->tid,
				       *nt, room);
		used += (len + 15) & ~(size_t)15;
		s->extra[s->nextra].nt = *nt;
		s->extra[s->nextra].buf = buf;
		s->extra[s->nextra].len = len;
		s->nextra++;
		pr_debug("tid %d: saved regset 0x%x, %zu bytes", s->tid, *nt, len);
	}
	return 0;
}

/*
 * Build the signal frame that gives the thread back, below its red zone,
 * in the shadow, which the first register write flushes to the target.
 * Returns 1 if the stack has no room there (the thread is not usable).
 */
static int write_frame(struct engine *t, char *why, size_t whylen, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_sigframe f = { .gregs = s->probed ? s->fgregs : s->gregs, .extra = s->extra,
				 .nextra = s->nextra, .restorer = t->restorer };
	uint64_t sp = t->img->arch->get_sp(s->gregs);
	const struct vma *v;
	struct hc_err e = { 0 };
	size_t len;

	/* A mask swapped in by ppoll & co is replaced by the real one at the first stop. */
	if (s->mask_known)
		f.mask = s->mask;
	else if (ptrace_sigmask_get(s->tid, &f.mask, err) < 0)
		return -1;
	len = (t->img->arch->sigframe_len(&f) + 15) & ~(size_t)15;
	f.raddr = s->frame = t->img->arch->frame_place(sp, len + SCRATCH_LEN);
	s->scratch = s->frame + len;
	s->slot = s->scratch;
	s->scratch_used = SLOT_ROOM;
	s->shadow_lo = s->frame - CHAIN_ROOM;
	s->shadow_len = CHAIN_ROOM + len + SCRATCH_LEN;
	if (s->shadow_len > SHADOW_MAX)
		return err_set(err, HC_E_INTERNAL, 0, "signal frame of %zu bytes", len);
	memset(t->shadow, 0, CHAIN_ROOM + len);
	if (t->img->arch->sigframe_build(&f, t->shadow + CHAIN_ROOM, len, err) < 0)
		return -1;
	s->dirty_lo = s->frame;
	s->dirty_hi = s->frame + len;
	s->shadow_fresh = true;
	/*
	 * Room on the stack: the mapping sp is in reaches down that far, as
	 * maps_load() saw it; else ask the target itself, as a write would.
	 */
	v = vma_at(t->img, sp);
	if (v && v == vma_at(t->img, s->shadow_lo))
		return 0;
	if (mem_write(t->img->memfd, s->shadow_lo, t->shadow, 8, &e) < 0 ||
	    mem_write(t->img->memfd, s->scratch + SCRATCH_LEN - 8, t->shadow, 8, &e) < 0) {
		snprintf(why, whylen, "thread %d has no stack room below 0x%llx", s->tid,
			 (unsigned long long)sp);
		return 1;
	}
	return 0;
}

/* Threads the first look at a process lists; all of them after that. */
#define FIRST_LISTED 64

/* Pick and stop a thread at a safe point, save it, write its frame. */
static int borrow(struct engine *t, struct hc_err *err)
{
	char why[256] = "no thread found";
	pid_t *tids = NULL;
	size_t ntids = 0;
	unsigned int attempts = 0;
	useconds_t backoff = 200;
	enum prog prog;
	int r;

	/* how long a --tid thread may be waited for to leave restart_syscall */
	uint64_t picky_until = now_ns() + 1000000000ull;

	/* one heapctl at a time: before any seize, and before leftovers are judged */
	if (tlock_acquire(t, err) < 0)
		return -1;
	if (!t->gadget && gadget_find(t, err) < 0) {
		enum prog p = gadget_program(t);

		if (p != PROG_SAME) {
			pr_info("%s", err->msg);
			memset(err, 0, sizeof(*err));
			if (p == PROG_GONE)
				return err_set(err, HC_E_GONE, 0,
					       "pid %d exited while heapctl looked at it", t->img->pid);
			/* the same words as step_gone(): HC_E_GONE's own hint speaks of an exit */
			return err_sethint(err, HC_E_GONE, 0,
					   "retry on the new program if it uses jemalloc",
					   "pid %d ran execve while heapctl looked at it", t->img->pid);
		}
		return -1;
	}
	/*
	 * The stack area's copy, its first 16 KiB touched now, where a frame
	 * (11 KiB with AMX's XSAVE image) and what a command writes fit, and
	 * the room for the saved register sets, its first 16 KiB too: no
	 * allocation or page fault while a thread is stopped.
	 */
	if (!t->shadow && (t->shadow = malloc(SHADOW_MAX)))
		memset(t->shadow, 0, 16 * 1024);
	if (!t->regs_area && (t->regs_area = malloc(REGS_AREA)))
		memset(t->regs_area, 0, 16 * 1024);
	if (!t->shadow || !t->regs_area)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	/* what the safe-point check reads, ready before anything stops */
	sym_prepare(t->img, t->gadget);
	if (t->img->arch->prepare)
		t->img->arch->prepare();
	if (where_prepare(t) < 0)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	t->sess = calloc(1, sizeof(*t->sess));
	if (!t->sess)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	ptrace_hold_sigchld(); /* until call_end() */
	memset(&t->timing, 0, sizeof(t->timing));
	for (;;) {
		free(tids);
		tids = NULL;
		if (t->img->opts.tid) {
			tids = malloc(sizeof(*tids));
			if (!tids)
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
			tids[0] = t->img->opts.tid;
			ntids = 1;
		} else if (thread_list(t, attempts ? 0 : FIRST_LISTED, &tids, &ntids, err) < 0) {
			goto fail;
		}
		/* two passes over the threads: the first one picky (see thread_try()) */
		for (size_t k = 0; k < 2 * ntids && (k == 0 || now_ns() < t->deadline_ns); k++) {
			size_t i = k % ntids;

			attempts++;
			/* asked to stop (the front's death, see src/cli/keeper.c): seize nothing more */
			t->cancel_sig = term_pending();
			if (t->cancel_sig) {
				err_set(err, HC_E_CANCELLED, 0, "interrupted by SIG%s; pid %d untouched",
					sigabbrev_np(t->cancel_sig), t->img->pid);
				goto fail;
			}
			r = thread_try(t, tids[i],
				       t->img->opts.tid ? now_ns() < picky_until : k < ntids && ntids > 1,
				       why, sizeof(why), err);
			if (r < 0)
				goto fail;
			if (r == 0)
				continue;
			if ((t->seccomp == 2 && seccomp_check(t, t->sess->tid, err) < 0) ||
			    (t->sess->at == ST_GROUP && thread_check_stopped(t, err) < 0) ||
			    save_extra(t, err) < 0)
				goto fail;
			/*
			 * Unless the thread sits in a syscall that swapped in a
			 * temporary mask (ppoll & co), its mask is the real one:
			 * take it now, so no signal is ever dequeued before
			 * heapctl blocks it.
			 */
			if (t->img->arch->swaps_mask(t->sess->gregs) == 0) {
				if (ptrace_sigmask_get(t->sess->tid, &t->sess->mask, err) < 0)
					goto fail;
				t->sess->mask_known = true;
			}
			r = write_frame(t, why, sizeof(why), err);
			if (r < 0)
				goto fail;
			if (r > 0) {
				if (ptrace_detach(tids[i], 0, err) < 0)
					goto fail;
				t->sess->nextra = 0;
				t->sess->tid = 0;
				t->sess->stopped = t->sess->saved = t->sess->mask_known = false;
				continue;
			}
			/*
			 * ppoll & co: the real mask comes at a syscall stop, so a
			 * getpid() first.  A signal that comes before it is
			 * delivered at once, the thread given back: same thread again.
			 */
			if (!t->sess->mask_known) {
				int64_t pid;

				r = step_rsys(t, t->img->arch->nr_getpid, NULL, 0, &pid, err);
				if (r < 0)
					goto fail;
				if (r > 0) {
					snprintf(why, sizeof(why), "thread %d took a signal", tids[i]);
					k--;
					continue;
				}
			}
			free(tids);
			t->sess->asked = true;
			t->timing.tid = t->sess->tid;
			t->timing.attempts = attempts;
			pr_debug("borrowing tid %d of pid %d", t->sess->tid, t->img->pid);
			return 0;
		}
		prog = ntids ? gadget_program(t) : PROG_GONE;
		if (prog != PROG_SAME) {
			/* all threads zombies (killed, not yet reaped) or exited, or execve ran */
			if (prog == PROG_OTHER)
				t->sess->exec_seen = true;
			step_gone(t, err);
			goto fail;
		}
		if (t->img->opts.tid && ntids == 1 && strstr(why, "exited")) {
			err_set(err, HC_E_NO_PROC, 0, "thread %d is not in pid %d", t->img->opts.tid, t->img->pid);
			goto fail;
		}
		if (now_ns() + backoff * 1000ull >= t->deadline_ns) {
			if (t->img->opts.tid)
				err_sethint(err, HC_E_UNSAFE, 0,
					    "retry later, raise --timeout, or drop --tid to let heapctl pick a thread",
					    "thread %d never reached a safe point: %s", t->img->opts.tid, why);
			else
				err_set(err, HC_E_UNSAFE, 0,
					"no thread of pid %d reached a safe point (last: %s)", t->img->pid, why);
			goto fail;
		}
		t->cancel_sig = term_pending();
		if (t->cancel_sig) {
			step_cancelled(t, err);
			goto fail;
		}
		/* Let the threads run on out of the allocator, then look again. */
		usleep(backoff);
		if (backoff < 20000)
			backoff *= 2;
	}
fail:
	free(tids);
	call_end(t, err);
	return -1;
}

/*
 * The thread is borrowed at the first thing that needs it (a call, a
 * write, scratch space), not when a session opens: an operation that
 * refuses before that never stops anything.  After a failed borrow the
 * error stands; nothing tries again within the same error.
 */
static int need(struct engine *t, struct hc_err *err)
{
	if (t->sess)
		return 0;
	if (err_isset(err))
		return -1;
	return borrow(t, err);
}

void call_hold(struct engine *t)
{
	t->held++;
}

int call_release(struct engine *t, struct hc_err *err)
{
	if (t->held)
		t->held--;
	return call_done(t, err);
}

int call_done(struct engine *t, struct hc_err *err)
{
	if (!t->held)
		return call_end(t, err);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_ret_raddr(const struct engine *t)
{
	return t->img->arch->ret_gadget ? t->retg.addr : t->restorer;
}

uint64_t call_saved_pc(const struct engine *t)
{
	return t->sess && t->sess->saved ? t->img->arch->get_pc(t->sess->gregs) : 0;
}

uint64_t call_cb_raddr(struct engine *t, struct hc_err *err)
{
	if (need(t, err) < 0)
		return 0;
	if (!t->notify_fn)
		err_set(err, HC_E_UNSUPPORTED, 0,
			"pid %d has no getpid() of its C library's for a callback to stop at", t->img->pid);
	return t->notify_fn;
}

/*
 * Give the callee the FP state the ABI promises; rt_sigreturn brings the
 * real one back.  Once a borrow: a function returns the control words as
 * it found them and the x87 stack empty (none heapctl calls returns a long
 * double), so the next call finds the state the ABI promises already.
 */
static int prepare_fp(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (s->fp_ready)
		return 0;
	s->fp_ready = true;
	for (unsigned int i = 0; i < s->nextra; i++) {
		uint8_t *copy = malloc(s->extra[i].len);
		int r = 0;

		if (!copy)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		memcpy(copy, s->extra[i].buf, s->extra[i].len);
		/* most threads have that state already: then there is nothing to write */
		if (t->img->arch->call_fpstate(s->extra[i].nt, copy, s->extra[i].len) &&
		    memcmp(copy, s->extra[i].buf, s->extra[i].len))
			r = ptrace_regset_set(s->tid, s->extra[i].nt, copy, s->extra[i].len, err);
		free(copy);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The words the backend wants on the stack: a return address, and stack arguments above it. */
static int write_slot(struct engine *t, const struct hc_call *c, struct hc_err *err)
{
	uint64_t w[1 + sizeof(c->stack) / sizeof(c->stack[0])];

	if (!c->slot_addr)
		return 0;
	if (c->nstack > sizeof(c->stack) / sizeof(c->stack[0]))
		return err_set(err, HC_E_INTERNAL, 0, "%u stack words from the backend", c->nstack);
	w[0] = c->slot_val;
	memcpy(w + 1, c->stack, c->nstack * sizeof(c->stack[0]));
	return shadow_write(t, c->slot_addr, w, (1 + c->nstack) * sizeof(w[0]), err);
}

/*
 * Asked to stop (SIGINT, SIGTERM, the front's death): no new call, unless
 * one is undoing.  The first call of a borrow does not ask the kernel
 * again, in the stopped window: borrow() asked just before the seize, and
 * a request that comes while the thread stops finds the call as good as
 * begun (docs/design.md, "If heapctl is killed").
 */
static bool cancelled(struct engine *t, struct hc_err *err)
{
	bool asked = t->sess->asked;

	t->sess->asked = false;
	if (t->cancel_hold)
		return false;
	if (!t->cancel_sig && !asked)
		t->cancel_sig = term_pending();
	return t->cancel_sig && step_cancelled(t, err) < 0;
}

static int call_any(struct engine *t, uint64_t fn, uint64_t sret, const uint64_t *args,
		    unsigned int nargs, uint64_t *ret, call_cb_fn cb, void *cb_arg,
		    struct hc_err *err)
{
	struct sess *s;
	struct hc_call c = { .pc = fn, .nargs = nargs, .sret = sret };
	const struct hc_ret_gadget *g = nargs > 6 ? &t->retg8 : &t->retg;

	if (nargs > HC_ARCH_MAX_ARGS)
		return err_set(err, HC_E_ARGS, 0, "%u arguments", nargs);
	if (need(t, err) < 0)
		return -1;
	s = t->sess;
	if (cancelled(t, err))
		return -1;
	/* an 8th argument goes in x7 on arm64, which no syscall stop lets heapctl write */
	if (nargs == 8 && !t->img->arch->ret_gadget && s->at == ST_SYSCALL &&
	    step_signal_stop(t, NULL, err) < 0)
		return -1;
	c.frame = s->frame;
	if (t->img->arch->ret_gadget) {
		if (!g->addr)
			return err_set(err, HC_E_UNSUPPORTED, 0,
				       "%u arguments: pid %d has no ret gadget with room for "
				       "stack arguments", nargs, t->img->pid);
		c.ret_addr = g->addr;
		c.ret_reg = g->reg;
		c.ret_pop = g->pop;
		c.ret_base = s->slot - (uint64_t)(int64_t)g->disp;
	} else {
		c.ret_addr = t->restorer;
	}
	if (nargs)
		memcpy(c.args, args, nargs * sizeof(*args));
	memcpy(s->cur, s->gregs, t->img->arch->gregs_len);
	if (t->img->arch->prep_call(s->cur, &c, err) < 0)
		return -1;
	if (t->img->arch->ret_gadget) {
		uint64_t pending = SLOT_PENDING;

		if (shadow_write(t, s->slot, &pending, sizeof(pending), err) < 0)
			return -1;
	}
	/* registers first, then the skip, FP state and mask: each step restores itself */
	if (write_slot(t, &c, err) < 0 || step_set_gregs(t, s->cur, err) < 0 ||
	    step_start(t, err) < 0 || prepare_fp(t, err) < 0 || step_block_signals(t, err) < 0)
		return -1;
	return step_run(t, STEP_CALL, ret, cb, cb_arg, err) == 0 ? 0 : -1;
}

int call_syscall(struct engine *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
		 struct hc_err *err)
{
	if (need(t, err) < 0 || cancelled(t, err))
		return -1;
	return step_rsys(t, nr, args, n, ret, err) == 0 ? 0 : -1;
}

int call_fn(struct engine *t, uint64_t fn, const uint64_t *args, unsigned int nargs,
	    uint64_t *ret, call_cb_fn cb, void *cb_arg, struct hc_err *err)
{
	return call_any(t, fn, 0, args, nargs, ret, cb, cb_arg, err);
}

int call_fn_sret(struct engine *t, uint64_t fn, uint64_t sret_raddr, const uint64_t *args,
		 unsigned int nargs, uint64_t *ret, struct hc_err *err)
{
	if (!sret_raddr)
		return err_set(err, HC_E_INTERNAL, 0, "no address for the returned struct");
	return call_any(t, fn, sret_raddr, args, nargs, ret, NULL, NULL, err);
}

int call_end(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_err e = { 0 };
	int sig = 0;
	bool keep_lock = false;

	if (!s)
		return 0;
	t->sess = NULL;
	if (!s->tid || s->gone)
		goto out;
	if (!s->stopped) {
		/* Seized but never stopped: heapctl's exit detaches it (exit_ptrace()). */
		pr_warn("tid %d never stopped; it is released when heapctl exits", s->tid);
		keep_lock = true; /* still ours: the next heapctl must wait for our exit */
		goto out;
	}
	t->sess = s;
	/* Give cleanup its own budget: restoring must not fail for lack of time. */
	t->deadline_ns = now_ns() + 5000000000ull;
	if (!s->saved || !s->touched) {
		/* Only stopped: hand it back as it was (with our EINTR undone, if any). */
		if (ptrace_detach(s->tid, 0, &e) < 0)
			goto fail;
		goto done;
	}
	if (s->at_ret && !s->probed &&
	    (!t->img->arch->frame_restores ||
	     t->img->arch->frame_restores(s->gregs, s->extra, s->nextra))) {
		/*
		 * At the restorer's rt_sigreturn: let it run.  The frame puts back
		 * the registers, FP/vector state and mask, and the interrupted
		 * syscall runs again, as the kernel restarts it.
		 */
		if (ptrace_detach(s->tid, 0, &e) < 0)
			goto fail;
		goto done;
	}
	/*
	 * Otherwise heapctl puts everything back itself.  At a syscall stop the
	 * kernel runs no restart logic unless a signal is pending, so heapctl
	 * makes the decision it would make (restart_here()) and restores right
	 * there; the restart block is untouched, a nanosleep goes on with the
	 * time left.  Where registers cannot all be written at a syscall stop
	 * (arm64), stop the thread once more inside get_signal() instead, where
	 * the kernel's own restart logic sees the registers put back.
	 */
	if (t->img->arch->restart_here && s->at == ST_SYSCALL) {
		/* at an entry stop the syscall is skipped: past seccomp's errno first, if any */
		if (t->skip_errno && step_to_exit(t, &e) < 0) {
			if (s->gone)
				goto out;
			goto fail;
		}
		t->img->arch->restart_here(s->gregs);
		goto put_back;
	}
	if (step_signal_stop(t, &sig, &e) < 0) {
		if (s->gone)
			goto out;
		goto fail;
	}
put_back:
	/* Mask first, registers last: until then the thread would still restore itself. */
	if (ptrace_sigmask_set(s->tid, s->mask, &e) < 0)
		goto fail;
	for (unsigned int i = 0; i < s->nextra; i++)
		if (ptrace_regset_set(s->tid, s->extra[i].nt, s->extra[i].buf, s->extra[i].len, &e))
			goto fail;
	if (step_set_gregs(t, s->gregs, &e) < 0 || ptrace_detach(s->tid, sig, &e) < 0)
		goto fail;
done:
	t->timing.paused_us = (now_ns() - s->stopped_ns) / 1000;
	{
		uint64_t ns[PCLK_N];

		pclock_read(ns);
		t->timing.stop_us = ns[PCLK_STOP] / 1000;
		t->timing.regs_us = ns[PCLK_REGS] / 1000;
		t->timing.mem_us = ns[PCLK_MEM] / 1000;
	}
	pr_info("gave tid %d of pid %d back after %llu us", s->tid, t->img->pid,
		(unsigned long long)t->timing.paused_us);
	step_redeliver(t, s);
	goto out;
fail:
	if (e.code == HC_E_GONE)
		s->gone = true;
	else
		pr_err("pid %d tid %d: restore failed: %s", t->img->pid, s->tid, e.msg);
	if (!err_isset(err))
		*err = e;
out:
	if (s->gone && !err_isset(err))
		step_gone(t, err);
	t->sess = NULL;
	free(s);
	ptrace_release_sigchld();
	/* the thread is given back: the next heapctl may come (even while we print) */
	if (!keep_lock)
		tlock_release(t);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_scratch(struct engine *t, size_t len, struct hc_err *err)
{
	struct sess *s;
	uint64_t at;

	if (need(t, err) < 0)
		return 0;
	s = t->sess;
	len = (len + 15) & ~(size_t)15;
	if (s->scratch_used + len > SCRATCH_LEN)
		return 0;
	at = s->scratch + s->scratch_used;
	s->scratch_used += len;
	return at;
}

size_t call_scratch_mark(const struct engine *t)
{
	/* a mark taken before the borrow: all of the scratch but the slot */
	return t->sess ? t->sess->scratch_used : SLOT_ROOM;
}

void call_scratch_release(struct engine *t, size_t mark)
{
	if (t->sess && mark <= t->sess->scratch_used)
		t->sess->scratch_used = mark;
}

uint64_t call_strdup(struct engine *t, const char *str, struct hc_err *err)
{
	size_t len = strlen(str) + 1;
	uint64_t at = call_scratch(t, len, err);

	if (!at) {
		err_set(err, HC_E_ARGS, 0, "string of %zu bytes does not fit heapctl's scratch space", len);
		return 0;
	}
	if (shadow_write(t, at, str, len, err) < 0)
		return 0;
	return at;
}

int call_write(struct engine *t, uint64_t raddr, const void *buf, size_t len,
	       struct hc_err *err)
{
	if (need(t, err) < 0)
		return -1;
	return shadow_write(t, raddr, buf, len, err);
}

int call_read(struct engine *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err)
{
	return shadow_read(t, raddr, buf, len, err);
}

int call_read_str(struct engine *t, uint64_t raddr, char *buf, size_t len,
		  struct hc_err *err)
{
	size_t got = 0;

	/* Read in chunks that never cross a page, so a short string near an unmapped page works. */
	while (got + 1 < len) {
		uint64_t at = raddr + got;
		size_t chunk = 4096 - (at & 4095);
		char *nul;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		if (shadow_read(t, at, buf + got, chunk, err) < 0)
			return -1;
		nul = memchr(buf + got, 0, chunk);
		if (nul)
			return 0;
		got += chunk;
	}
	buf[len - 1] = 0;
	return 0;
}
