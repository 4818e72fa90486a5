// SPDX-License-Identifier: MIT
/*
 * The borrowed thread from stop to stop: the stepping under steps 4 to 6
 * of the sequence in call.c.
 *
 * step_wait() says what kind of stop the thread is in; step_run() lets it go
 * under PTRACE_SYSCALL until one remote syscall or call is over, keeping
 * the signals that arrive meanwhile for step_redeliver() after the restore and
 * taking the real mask at the first syscall-entry stop; step_rsys() is one
 * syscall on the target's own "syscall; ret" gadget; step_signal_stop()
 * takes the thread to a stop inside signal delivery.  Whatever state a
 * step leaves the thread in, it restores itself from there if heapctl
 * dies: everything it runs ends in the restorer's rt_sigreturn on the
 * frame (aim_restore()).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "call_int.h"
#include "clock.h"
#include "log.h"
#include "ptrace.h"
#include "engine.h"
#include "image.h"
#include "where.h"



/* Signals that report a fault of the running code: never blocked. */
static bool is_fault_sig(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS;
}

static uint64_t call_mask(void)
{
	uint64_t m = ~0ull;

	/*
	 * Leave synchronous faults unblocked: if a blocked one is forced, the
	 * kernel resets the target's handler to SIG_DFL (force_sig_info_to_task).
	 */
	for (int sig = 1; sig <= 64; sig++)
		if (is_fault_sig(sig))
			m &= ~(1ull << (sig - 1));
	return m;
}

const char *step_stop_name(enum stop st)
{
	static const char *const n[] = { "exit", "event-stop", "group-stop", "syscall-stop",
					 "signal-delivery-stop" };
	return n[st];
}

/*
 * Wait for the next stop of tid.  Returns 0 with *st, 1 on timeout, 2 when
 * a termination signal asks heapctl to stop (only outside a running call
 * and outside cleanup), -1 on error.
 */
int step_wait_ex(struct engine *t, pid_t tid, bool cancellable, enum stop *st,
		 int *sig, struct hc_err *err)
{
	int status, csig = 0;
	int r = ptrace_wait(tid, &status, t->deadline_ns, cancellable, &csig, err);

	if (r == 2) {
		t->cancel_sig = csig;
		return 2;
	}
	if (r == 3) {
		/* /proc/TID/status says it is not ours any more: execve by another thread */
		if (t->sess)
			t->sess->exec_seen = true;
		*st = ST_EXITED;
		*sig = 0;
		return 0;
	}
	if (r <= 0)
		return r < 0 ? -1 : 1; /* 1: timed out */
	*sig = 0;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		*st = ST_EXITED;
		pr_debug("tid %d exited (status 0x%x)", tid, status);
		return 0;
	}
	*sig = WSTOPSIG(status);
	t->timing.stops++;
	if ((status >> 16) == PTRACE_EVENT_EXEC) {
		/*
		 * Another thread (or this one) ran execve: the old program and
		 * everything heapctl saved of it are gone.  Let the new one run.
		 */
		struct hc_err e = { 0 };

		pr_info("pid %d started a new program during the call; leaving it alone", t->img->pid);
		ptrace_detach(tid, 0, &e);
		if (t->sess)
			t->sess->exec_seen = true;
		*st = ST_EXITED;
		return 0;
	}
	if ((status >> 16) == PTRACE_EVENT_STOP)
		*st = (*sig == SIGSTOP || *sig == SIGTSTP || *sig == SIGTTIN || *sig == SIGTTOU) ?
			      ST_GROUP :
			      ST_EVENT;
	else if (*sig == (SIGTRAP | 0x80))
		*st = ST_SYSCALL;
	else if (status >> 16)
		*st = ST_EVENT; /* an event we did not ask for: treat as a plain stop */
	else
		*st = ST_SIGNAL;
	/*
	 * Event and signal stops are logged by the callers, after they acted:
	 * a signal is held by the stop until heapctl resumes it, and the kernel
	 * discards it if heapctl dies first, so nothing slow may come before.
	 */
	if (*st != ST_EVENT && *st != ST_SIGNAL)
		pr_trace("tid %d: %s sig %d", tid, step_stop_name(*st), *sig);
	return 0;
}

int step_wait(struct engine *t, pid_t tid, enum stop *st, int *sig,
	      struct hc_err *err)
{
	return step_wait_ex(t, tid, false, st, sig, err);
}

int step_cancelled(struct engine *t, struct hc_err *err)
{
	return err_set(err, HC_E_CANCELLED, 0, "interrupted by SIG%s; pid %d was restored",
		       sigabbrev_np(t->cancel_sig), t->img->pid);
}

int step_gone(struct engine *t, struct hc_err *err)
{
	if (t->sess)
		t->sess->gone = true;
	if (t->sess && t->sess->exec_seen)
		return err_sethint(err, HC_E_GONE, 0, "retry on the new program if it uses jemalloc",
				   "pid %d ran execve while heapctl was working on it; the new "
				   "program was left alone", t->img->pid);
	return err_set(err, HC_E_GONE, 0, "pid %d exited while heapctl was working on it", t->img->pid);
}

int step_set_gregs(struct engine *t, const void *g, struct hc_err *err)
{
	/* what the registers point at goes first: the frame, the chain, the strings */
	if (shadow_flush(t, err) < 0)
		return -1;
	return ptrace_regset_set(t->sess->tid, NT_PRSTATUS_, g, t->img->arch->gregs_len, err);
}

int step_get_gregs(struct engine *t, void *g, struct hc_err *err)
{
	size_t len = t->img->arch->gregs_len;

	return ptrace_regset_get(t->sess->tid, NT_PRSTATUS_, g, &len, err);
}

static void defer_signal(struct sess *s, int sig, const siginfo_t *si)
{
	if (s->ndefer < MAX_DEFER) {
		s->defer[s->ndefer].sig = sig;
		s->defer[s->ndefer].si = *si;
		s->ndefer++;
	}
	pr_debug("tid %d: signal %d arrived during the call; it is delivered after the restore",
		 s->tid, sig);
}

/* Re-send signals that reached us as signal-delivery-stops while we held the thread. */
void step_redeliver(struct engine *t, struct sess *s)
{
	for (unsigned int i = 0; i < s->ndefer; i++) {
		siginfo_t *si = &s->defer[i].si;
		long r;

		/* rt_tgsigqueueinfo keeps si_value for sigqueue'd signals (si_code < 0). */
		if (si->si_code < 0 && si->si_code != SI_TKILL)
			r = syscall(SYS_rt_tgsigqueueinfo, t->img->pid, s->tid, s->defer[i].sig, si);
		else
			r = syscall(SYS_tgkill, t->img->pid, s->tid, s->defer[i].sig);
		if (r < 0)
			pr_warn("could not re-deliver signal %d to tid %d: %s", s->defer[i].sig,
				s->tid, strerror(errno));
	}
	s->ndefer = 0;
}

/* The real mask, read once the kernel has undone any temporary one; then ours. */
static int take_mask(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (ptrace_sigmask_get(s->tid, &s->mask, err) < 0)
		return -1;
	/* The frame must carry the real mask before heapctl blocks anything. */
	if (shadow_write(t, s->frame + t->img->arch->sigframe_mask_off, &s->mask, sizeof(s->mask), err) <
		    0 ||
	    shadow_flush(t, err) < 0)
		return -1;
	s->mask_known = true;
	return 0;
}

int step_block_signals(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (s->mask_blocked)
		return 0;
	if (ptrace_sigmask_set(s->tid, call_mask(), err) < 0)
		return -1;
	s->mask_blocked = true;
	return 0;
}

/* Hand tid back now, from its first stop: nothing of ours is in it. */
int step_give_back_pending(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	int sig = s->pending_sig;

	/*
	 * A signal arrived before heapctl took the mask.  Put the original
	 * registers back and let it be delivered right here, exactly as the
	 * kernel would have without us: an interrupted syscall gets EINTR or
	 * restarts per SA_RESTART, and the handler's frame saves the real mask.
	 */
	s->pending_sig = 0;
	if (step_set_gregs(t, s->gregs, err) < 0 || ptrace_detach(s->tid, sig, err) < 0)
		return -1;
	pr_debug("tid %d: signal %d arrived before the call; delivered it and retrying", s->tid,
		 sig);
	s->nextra = 0;
	s->tid = 0;
	s->touched = s->stopped = s->saved = s->eintr_undone = false;
	return 0;
}

/* At a syscall-entry stop: have the kernel skip the syscall. */
int step_skip_syscall(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	int minus_one = -1;

	if (t->img->arch->skip_regset)
		return ptrace_regset_set(s->tid, t->img->arch->skip_regset, &minus_one,
					 sizeof(minus_one), err);
	t->img->arch->skip_syscall(s->cur);
	return step_set_gregs(t, s->cur, err);
}

/*
 * Point the thread at the restorer, whose rt_sigreturn on the frame gives
 * it back: after a fault in a call, and before a stop that leaves the
 * thread's registers to heapctl's care.
 */
static int aim_restore(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	memcpy(s->cur, s->gregs, t->img->arch->gregs_len);
	t->img->arch->prep_restore(s->cur, t->restorer, s->frame);
	return step_set_gregs(t, s->cur, err);
}

/*
 * At a syscall-entry stop in a call through the ret gadget: has the gadget
 * stored the result?  Then this is the restorer's rt_sigreturn, the only
 * syscall after the gadget, and *ret is the result: known from the read
 * that takes the result anyway, with no register read.  1 if so, 0 if the
 * slot still holds SLOT_PENDING (a syscall of the callee's, or, by chance,
 * that very result), -1 on error.
 */
static int slot_filled(struct engine *t, uint64_t *ret, struct hc_err *err)
{
	uint64_t v;

	if (shadow_read(t, t->sess->slot, &v, sizeof(v), err) < 0)
		return -1;
	if (v == SLOT_PENDING)
		return 0;
	*ret = v;
	return 1;
}

/* A call's result at the restorer's stop: in a register, or where the ret gadget put it. */
static int call_result(struct engine *t, uint64_t *ret, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (t->img->arch->get_ret) {
		*ret = t->img->arch->get_ret(s->cur);
		return 0;
	}
	return shadow_read(t, s->slot, ret, sizeof(*ret), err);
}

/*
 * Run the thread under PTRACE_SYSCALL until the step ends:
 *  STEP_SYSCALL  at the exit stop of the gadget's syscall (*ret = its result);
 *  STEP_CALL     at the entry stop of the restorer's rt_sigreturn after the
 *                call (*ret = the call's result), s->at_ret;
 *  STEP_RESTORE  the same after aim_restore(), with no result.
 * The thread stays at that stop, from which it restores itself if heapctl
 * dies.  A call that faults ends as STEP_RESTORE, with the fault in err.
 * Returns 0, 1 if a signal arrived before the mask was taken (s->pending_sig,
 * thread handed back at that signal stop), or -1.
 */
int step_run(struct engine *t, enum step kind, uint64_t *ret, call_cb_fn cb, void *cb_arg,
	struct hc_err *err)
{
	const struct hc_arch *a = t->img->arch;
	struct sess *s = t->sess;
	struct hc_err cberr = { 0 };
	uint64_t done_pc = kind == STEP_SYSCALL ? t->gadget + a->syscall_insn.len : t->restorer_end;
	/* from a syscall-entry stop, that syscall's exit stop comes first */
	bool in_sys = s->at == ST_SYSCALL && s->at_entry, aborted = false;
	/* the slot is asked first until the callee shows a syscall of its own */
	bool by_slot = kind == STEP_CALL && a->ret_gadget && s->mask_known;
	bool rewrite = in_sys && t->skip_errno;
	uint8_t want[sizeof(s->cur)] __attribute__((aligned(16)));
	enum stop st;
	int sig, r;

	/* the registers the caller set, should a seccomp errno overwrite one (see below) */
	memcpy(want, s->cur, a->gregs_len);
	if (ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	s->touched = true;
	s->at_ret = false;
	for (;;) {
		/* the thread has run since any read of the scratch */
		s->shadow_fresh = false;
		r = step_wait(t, s->tid, &st, &sig, err);
		if (r < 0)
			return -1;
		if (r > 0) {
			if (kind != STEP_CALL || aborted)
				return err_set(err, HC_E_TIMEOUT, 0,
					       "thread %d did not finish its remote step in time", s->tid);
			/*
			 * The call does not return: it waits, most likely for a lock
			 * another thread holds.  Abandoning it could leave a lock it
			 * took on the way held for good.  Instead let it finish on its
			 * own, untraced: it returns into the restorer, which gives
			 * the thread back (the same way as when heapctl dies).
			 */
			t->deadline_ns = now_ns() + 5000000000ull;
			if (ptrace_interrupt(s->tid, err) < 0)
				return -1;
			/* Follow the thread to the interrupt's stop inside get_signal(). */
			for (;;) {
				siginfo_t si;

				r = step_wait(t, s->tid, &st, &sig, err);
				if (r > 0) {
					/*
					 * Not even a stop: let the thread go as it is when
					 * heapctl exits (exit_ptrace()); the call returns into
					 * the restorer, which gives it back.
					 */
					s->stopped = false;
					return err_set(err, HC_E_TIMEOUT, 0,
						       "the call in thread %d did not return in time and "
						       "the thread did not stop when asked; it is let go "
						       "when heapctl exits and restores itself when the "
						       "call returns", s->tid);
				}
				if (r < 0)
					return -1;
				if (st == ST_EXITED)
					return step_gone(t, err);
				if (st == ST_EVENT || st == ST_GROUP)
					break;
				if (st == ST_SYSCALL) {
					in_sys = !in_sys;
					/*
					 * The interrupt ended the wait with a syscall stop,
					 * and a syscall stop uses the trap up (ptrace(2),
					 * PTRACE_INTERRUPT): the wait would restart with
					 * nothing left to stop it.  Ask again.
					 */
					if (ptrace_interrupt(s->tid, err) < 0)
						return -1;
				}
				if (st == ST_SIGNAL) {
					if (ptrace_siginfo_get(s->tid, &si, err) < 0)
						return -1;
					if (si.si_code <= 0 || !is_fault_sig(sig))
						defer_signal(s, sig, &si);
					break; /* in get_signal too; the redirect suppresses it */
				}
				if (ptrace_resume(s->tid, true, 0, err) < 0)
					return -1;
			}
			if (st != ST_SIGNAL) {
				pid_t tid = s->tid;

				/* inside get_signal(): the kernel restarts the call's own wait */
				if (ptrace_detach(tid, 0, err) < 0)
					return -1;
				step_redeliver(t, s);
				s->tid = 0; /* nothing left for call_end() to restore */
				return err_set(err, HC_E_TIMEOUT, 0,
					       "the call in thread %d did not return in time; heapctl let "
					       "it finish on its own: the thread restores itself when it "
					       "returns", tid);
			}
			/* a fault at that very moment: give the thread back now */
			err_set(err, HC_E_TIMEOUT, 0,
				"the call in thread %d did not return in time and then faulted; the "
				"thread was restored", s->tid);
			aborted = true;
			kind = STEP_RESTORE;
			done_pc = t->restorer_end;
			in_sys = false;
			if (aim_restore(t, err) < 0 || ptrace_resume(s->tid, true, 0, err) < 0)
				return -1;
			continue;
		}
		s->at = st;
		s->at_entry = false;
		if (st != ST_SYSCALL)
			rewrite = false; /* a signal came first: the registers are set again anyway */
		switch (st) {
		case ST_EXITED:
			return step_gone(t, err);
		case ST_EVENT:
		case ST_GROUP:
			break;
		case ST_SIGNAL: {
			siginfo_t si;

			if (!s->mask_known) {
				/*
				 * Hand it back at once: a signal held in a signal-
				 * delivery-stop is discarded if heapctl dies there.
				 */
				s->pending_sig = sig;
				return step_give_back_pending(t, err) < 0 ? -1 : 1;
			}
			if (ptrace_siginfo_get(s->tid, &si, err) < 0)
				return -1;
			if (si.si_code <= 0 || !is_fault_sig(sig) || kind != STEP_CALL) {
				defer_signal(s, sig, &si);
				break;
			}
			/* The callee faulted: never deliver that; restore instead. */
			if (step_get_gregs(t, s->cur, err) < 0)
				return -1;
			where_disasm(t, a->get_pc(s->cur), HC_LOG_DEBUG);
			err_set(err, HC_E_FAULT, 0,
				"the call faulted in thread %d: %s at pc 0x%llx, address 0x%llx", s->tid,
				strsignal(sig), (unsigned long long)a->get_pc(s->cur),
				(unsigned long long)(uintptr_t)si.si_addr);
			aborted = true;
			kind = STEP_RESTORE;
			done_pc = t->restorer_end;
			in_sys = false;
			if (aim_restore(t, err) < 0)
				return -1;
			break;
		}
		case ST_SYSCALL: {
			bool returned = false;

			if (!in_sys && by_slot && kind == STEP_CALL) {
				r = slot_filled(t, ret, err);
				if (r < 0)
					return -1;
				returned = by_slot = r > 0;
			}
			/*
			 * An exit stop tells a call nothing: the stops alternate
			 * (in_sys), and only a remote syscall's result is read
			 * there.  A callee's madvise()s, write()s and the skipped
			 * syscall's exit take no register read in the pause.
			 */
			if (!returned && (!in_sys || kind == STEP_SYSCALL) &&
			    step_get_gregs(t, s->cur, err) < 0)
				return -1;
			if (!in_sys) {
				in_sys = true;
				s->at_entry = true;
				if (!s->mask_known &&
				    (take_mask(t, err) < 0 || step_block_signals(t, err) < 0))
					return -1;
				if (!returned && kind != STEP_SYSCALL && a->get_pc(s->cur) == done_pc) {
					returned = true;
					if (kind == STEP_CALL && call_result(t, ret, err) < 0)
						return -1;
				}
				if (returned) {
					/* the restorer's rt_sigreturn: stay here (see arch/arch.h) */
					s->at_ret = true;
					if (err_isset(err))
						return -1;
					if (err_isset(&cberr)) {
						*err = cberr;
						return -1;
					}
					return 0;
				}
				if (kind == STEP_CALL && a->get_pc(s->cur) == t->notify_end &&
				    t->notify_end) {
					uint64_t args[6];

					for (unsigned int i = 0; i < 6; i++)
						args[i] = a->get_arg(s->cur, i);
					/*
					 * Never abandon a call half way (it may hold the
					 * allocator's locks): keep the callback's first
					 * error and go on.
					 */
					if (cb && !err_isset(&cberr))
						cb(cb_arg, t, args, &cberr);
				}
				break;
			}
			in_sys = false;
			if (rewrite) {
				/*
				 * The exit of the syscall skipped for this step: the
				 * target's seccomp filter gave it an errno, which went
				 * into the return register, one of the call's.
				 */
				rewrite = false;
				if (step_set_gregs(t, want, err) < 0)
					return -1;
				break;
			}
			if (kind == STEP_SYSCALL && a->get_pc(s->cur) == done_pc) {
				*ret = (uint64_t)a->get_syscall_ret(s->cur);
				return 0;
			}
			break;
		}
		}
		if (ptrace_resume(s->tid, true, 0, err) < 0)
			return -1;
	}
}

/*
 * From a syscall-entry stop: skip that syscall once the registers for what
 * comes next are in place (x86_64 took orig_rax = -1 with them).  Until
 * then, should heapctl die, the syscall the thread stopped in runs: the
 * restorer's rt_sigreturn gives it back.
 */
static int skip_here(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (s->at != ST_SYSCALL || !s->at_entry || !t->img->arch->skip_regset)
		return 0;
	return step_skip_syscall(t, err);
}

int step_start(struct engine *t, struct hc_err *err)
{
	return skip_here(t, err);
}

int step_rsys(struct engine *t, long nr, const uint64_t *args, unsigned int n,
	 int64_t *ret, struct hc_err *err)
{
	struct sess *s = t->sess;
	/* the gadget's ret goes into the restorer, at the frame's pretcode */
	struct hc_call c = { .pc = t->gadget, .ret_addr = t->restorer, .frame = s->frame, .nr = nr,
			     .nargs = n };
	uint64_t r = 0;
	int rc;

	memcpy(c.args, args, n * sizeof(*args));
	memcpy(s->cur, s->gregs, t->img->arch->gregs_len);
	t->img->arch->prep_syscall(s->cur, &c);
	/* registers first, then the skip and the mask: each intermediate state restores itself */
	if (step_set_gregs(t, s->cur, err) < 0 || skip_here(t, err) < 0 ||
	    (s->mask_known && step_block_signals(t, err) < 0))
		return -1;
	rc = step_run(t, STEP_SYSCALL, &r, NULL, NULL, err);
	*ret = (int64_t)r;
	if (rc == 0)
		pr_trace("tid %d: syscall %ld = %lld", s->tid, nr, (long long)*ret);
	return rc;
}

int step_rsys_ok(struct engine *t, long nr, const uint64_t *args, unsigned int n,
	    int64_t *ret, const char *what, struct hc_err *err)
{
	int r = step_rsys(t, nr, args, n, ret, err);

	if (r != 0)
		return r;
	if (*ret < 0 && *ret > -4096)
		/* a remote failure: decode the target's errno, not ours */
		return err_set(err, HC_E_REMOTE, (int)-*ret, "%s in pid %d failed: %s", what, t->img->pid,
			       strerror((int)-*ret));
	return 0;
}

int step_to_exit(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	enum stop st;
	int sig, r;

	if (s->at != ST_SYSCALL || !s->at_entry)
		return 0;
	if (aim_restore(t, err) < 0 || skip_here(t, err) < 0 ||
	    ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	s->at_ret = false;
	for (;;) {
		r = step_wait(t, s->tid, &st, &sig, err);
		if (r != 0)
			return r < 0 ? -1 :
				       err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop", s->tid);
		s->at = st;
		s->at_entry = false;
		if (st == ST_EXITED)
			return step_gone(t, err);
		if (st == ST_SYSCALL)
			return 0;
		if (st == ST_SIGNAL) {
			siginfo_t si;

			/* blocked ones cannot come: keep it for after the restore */
			if (ptrace_siginfo_get(s->tid, &si, err) < 0)
				return -1;
			defer_signal(s, sig, &si);
		}
		if (ptrace_resume(s->tid, true, 0, err) < 0)
			return -1;
	}
}

int step_signal_stop(struct engine *t, int *sig, struct hc_err *err)
{
	struct sess *s = t->sess;
	enum stop st;
	int r, held = 0;

	if (!sig)
		sig = &held;
	*sig = 0;
	if (s->at == ST_EVENT || s->at == ST_GROUP)
		return 0;
	/*
	 * At the restorer again should heapctl die from here on; the syscall
	 * the thread stopped in, if at its entry, is skipped.  Then a stop
	 * inside get_signal(), which the interrupt asks for.
	 */
	if (aim_restore(t, err) < 0 || skip_here(t, err) < 0 || ptrace_interrupt(s->tid, err) < 0 ||
	    ptrace_resume(s->tid, false, 0, err) < 0)
		return -1;
	s->at_ret = false;
	for (;;) {
		r = step_wait(t, s->tid, &st, sig, err);
		if (r != 0)
			return r < 0 ? -1 :
				       err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop when asked",
					       s->tid);
		s->at = st;
		s->at_entry = false;
		if (st == ST_EXITED)
			return step_gone(t, err);
		if (st == ST_EVENT || st == ST_GROUP) {
			*sig = 0;
			return 0;
		}
		if (st == ST_SIGNAL) {
			siginfo_t si;

			if (sig != &held)
				return 0; /* in get_signal too: delivered on detach */
			/* the thread goes on for heapctl: that signal waits for the restore */
			if (ptrace_siginfo_get(s->tid, &si, err) < 0)
				return -1;
			defer_signal(s, *sig, &si);
			*sig = 0;
			return 0;
		}
		if (ptrace_resume(s->tid, false, 0, err) < 0)
			return -1;
	}
}
