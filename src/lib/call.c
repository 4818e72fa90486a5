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
 *  4. mmap heapctl's pages with remote syscalls on a "syscall; ret" gadget of
 *     the target's own text, returning into its own sigreturn restorer; run
 *     under PTRACE_SYSCALL, nothing in the target is ever patched.  The real
 *     signal mask is read at the first syscall-entry stop: by then the kernel
 *     has put back a mask that ppoll/pselect/epoll_pwait/sigsuspend had
 *     swapped in.  Then every asynchronous signal is blocked; they stay
 *     pending and are delivered after the restore, none lost or doubled.
 *  5. Calls return into a trampoline in heapctl's page that issues a
 *     getpid; heapctl reads the result at that syscall-entry stop.  Should
 *     heapctl die, the trampoline goes on to unmap its own page and
 *     rt_sigreturn (arch/arch.h): nothing of heapctl's is left behind.
 *     Callbacks are a getpid syscall heapctl watches for.
 *  6. Restore: put back registers, regsets and mask at a stop inside signal
 *     delivery (PTRACE_INTERRUPT), and detach there, so the kernel's restart
 *     logic sees the original registers and a blocked read/nanosleep/futex
 *     resumes exactly as if nothing happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "call.h"
#include "log.h"
#include "procfs.h"
#include "ptrace.h"
#include "seccomp.h"
#include "target.h"
#include "tlock.h"
#include "where.h"

#define NT_PRSTATUS_ 1
#define CODE_LEN 4096
#define NOTIFY_OFF 64 /* the callback stub's offset in the code page */
#define SCRATCH_LEN (16 * 1024) /* strings and out-values, on the thread's stack */
#define MAGIC_OFF 128            /* heapctl's mark in its code page */
#define MAGIC "HEAPCTL1"
#define MAX_EXTRA 4
#define MAX_DEFER 64
#define MAX_RANKED 16 /* threads whose state is read to order the choice */

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

static const char *stop_name(enum stop st)
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
static int wait_stop_ex(struct hc_target *t, pid_t tid, bool cancellable, enum stop *st,
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

		pr_info("pid %d started a new program during the call; leaving it alone", t->pid);
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
		pr_trace("tid %d: %s sig %d", tid, stop_name(*st), *sig);
	return 0;
}

static int wait_stop(struct hc_target *t, pid_t tid, enum stop *st, int *sig,
		     struct hc_err *err)
{
	return wait_stop_ex(t, tid, false, st, sig, err);
}

static int cancelled(struct hc_target *t, struct hc_err *err)
{
	return err_set(err, HC_E_CANCELLED, 0, "interrupted by SIG%s; pid %d was restored",
		       sigabbrev_np(t->cancel_sig), t->pid);
}

static int gone(struct hc_target *t, struct hc_err *err)
{
	if (t->sess)
		t->sess->gone = true;
	if (t->sess && t->sess->exec_seen)
		return err_sethint(err, HC_E_GONE, 0, "retry on the new program if it uses jemalloc",
				   "pid %d ran execve while heapctl was working on it; the new "
				   "program was left alone", t->pid);
	return err_set(err, HC_E_GONE, 0, "pid %d exited while heapctl was working on it", t->pid);
}

static int set_gregs(struct hc_target *t, const void *g, struct hc_err *err)
{
	return ptrace_regset_set(t->sess->tid, NT_PRSTATUS_, g, t->arch->gregs_len, err);
}

static int get_gregs(struct hc_target *t, void *g, struct hc_err *err)
{
	size_t len = t->arch->gregs_len;

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
static void redeliver(struct hc_target *t, struct sess *s)
{
	for (unsigned int i = 0; i < s->ndefer; i++) {
		siginfo_t *si = &s->defer[i].si;
		long r;

		/* rt_tgsigqueueinfo keeps si_value for sigqueue'd signals (si_code < 0). */
		if (si->si_code < 0 && si->si_code != SI_TKILL)
			r = syscall(SYS_rt_tgsigqueueinfo, t->pid, s->tid, s->defer[i].sig, si);
		else
			r = syscall(SYS_tgkill, t->pid, s->tid, s->defer[i].sig);
		if (r < 0)
			pr_warn("could not re-deliver signal %d to tid %d: %s", s->defer[i].sig,
				s->tid, strerror(errno));
	}
	s->ndefer = 0;
}

static void sess_free(struct sess *s)
{
	for (unsigned int i = 0; i < s->nextra; i++)
		free(s->extra[i].buf);
	free(s);
}

static void forget_extra(struct sess *s)
{
	for (unsigned int i = 0; i < s->nextra; i++)
		free(s->extra[i].buf);
	s->nextra = 0;
}

/* The real mask, read once the kernel has undone any temporary one; then ours. */
static int take_mask(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (ptrace_sigmask_get(s->tid, &s->mask, err) < 0)
		return -1;
	/* The frame must carry the real mask before heapctl blocks anything. */
	if (mem_write(t->memfd, s->frame + t->arch->sigframe_mask_off, &s->mask, sizeof(s->mask),
		      err) < 0)
		return -1;
	s->mask_known = true;
	return 0;
}

static int block_signals(struct hc_target *t, struct hc_err *err)
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
static int give_back_pending(struct hc_target *t, struct hc_err *err)
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
	if (set_gregs(t, s->gregs, err) < 0 || ptrace_detach(s->tid, sig, err) < 0)
		return -1;
	pr_debug("tid %d: signal %d arrived before the call; delivered it and retrying", s->tid,
		 sig);
	forget_extra(s);
	s->tid = 0;
	s->touched = s->stopped = s->saved = s->eintr_undone = false;
	return 0;
}

/* At a syscall-entry stop: have the kernel skip the syscall. */
static int skip_syscall(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	int minus_one = -1;

	if (t->arch->skip_regset)
		return ptrace_regset_set(s->tid, t->arch->skip_regset, &minus_one,
					 sizeof(minus_one), err);
	t->arch->skip_syscall(s->cur);
	return set_gregs(t, s->cur, err);
}

/*
 * Point the thread at a way back to the frame, should heapctl die.
 * Preferably ret_tramp, whose getpid heapctl skips like after a call (run()
 * stops there): heapctl then restores the thread itself, and a real
 * rt_sigreturn, which resets the restart block (a nanosleep the thread was
 * borrowed from would start over in full), is avoided.  The target's own
 * restorer before heapctl's page exists.
 */
static uint64_t restore_pc(const struct hc_target *t)
{
	return t->sess->code ? t->sess->code : t->restorer;
}

static int aim_restore(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	t->arch->prep_restore(s->cur, restore_pc(t), s->frame);
	return set_gregs(t, s->cur, err);
}

/*
 * Run the thread under PTRACE_SYSCALL until the step ends:
 *  STEP_SYSCALL  at the exit stop of the gadget's syscall (*ret = its result);
 *  STEP_CALL     after ret_tramp's getpid (*ret = the call's result);
 *  STEP_RESTORE  after ret_tramp's getpid (skipped, as after a call), or
 *                the restorer's rt_sigreturn that aim_restore() chose.
 * In every case the thread is left at a syscall-exit stop from which it
 * restores itself if heapctl dies.  Returns 0, 1 if a signal arrived before
 * the mask was taken (s->pending_sig, thread at that signal stop), or -1.
 */
static int run(struct hc_target *t, enum step kind, uint64_t *ret, call_cb_fn cb, void *cb_arg,
	       struct hc_err *err)
{
	const struct hc_arch *a = t->arch;
	struct sess *s = t->sess;
	struct hc_err cberr = { 0 };
	uint64_t done_pc, notify_pc = s->code + NOTIFY_OFF + a->notify_sys_end;
	bool in_sys = false, sigreturned = false, aborted = false;
	enum stop st;
	int sig, r;

	switch (kind) {
	case STEP_SYSCALL:
		done_pc = t->gadget + a->syscall_insn.len;
		break;
	case STEP_CALL:
		done_pc = s->code + a->ret_tramp_stop;
		break;
	default:
		done_pc = s->code ? s->code + a->ret_tramp_stop : t->restorer_end;
	}
	if (ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	s->touched = true;
	for (;;) {
		r = wait_stop(t, s->tid, &st, &sig, err);
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
			 * own, untraced: it returns into ret_tramp, whose cleanup
			 * gives the thread back (the same way as when heapctl dies).
			 */
			t->deadline_ns = now_ns() + 5000000000ull;
			if (ptrace_interrupt(s->tid, err) < 0)
				return -1;
			/* Follow the thread to the interrupt's stop inside get_signal(). */
			for (;;) {
				siginfo_t si;

				r = wait_stop(t, s->tid, &st, &sig, err);
				if (r > 0) {
					/*
					 * Not even a stop: let the thread go as it is when
					 * heapctl exits (exit_ptrace()); the call returns into
					 * ret_tramp, whose cleanup restores it.
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
					return gone(t, err);
				if (st == ST_EVENT || st == ST_GROUP)
					break;
				if (st == ST_SYSCALL) {
					in_sys = !in_sys;
					/*
					 * The interrupt ended the wait with a syscall-exit
					 * stop, and a syscall stop uses the trap up
					 * (ptrace(2), PTRACE_INTERRUPT): the wait would
					 * restart with nothing left to stop it.  Ask again.
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
				redeliver(t, s);
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
			done_pc = s->code ? s->code + a->ret_tramp_stop : t->restorer_end;
			if (aim_restore(t, err) < 0 || ptrace_resume(s->tid, true, 0, err) < 0)
				return -1;
			continue;
		}
		s->at = st;
		switch (st) {
		case ST_EXITED:
			return gone(t, err);
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
				return give_back_pending(t, err) < 0 ? -1 : 1;
			}
			if (ptrace_siginfo_get(s->tid, &si, err) < 0)
				return -1;
			if (si.si_code <= 0 || !is_fault_sig(sig) || kind != STEP_CALL) {
				defer_signal(s, sig, &si);
				break;
			}
			/* The callee faulted: never deliver that; restore instead. */
			if (get_gregs(t, s->cur, err) < 0)
				return -1;
			where_disasm(t, a->get_pc(s->cur), HC_LOG_DEBUG);
			err_set(err, HC_E_FAULT, 0,
				"the call faulted in thread %d: %s at pc 0x%llx, address 0x%llx", s->tid,
				strsignal(sig), (unsigned long long)a->get_pc(s->cur),
				(unsigned long long)(uintptr_t)si.si_addr);
			aborted = true;
			kind = STEP_RESTORE;
			done_pc = s->code ? s->code + a->ret_tramp_stop : t->restorer_end;
			in_sys = false;
			if (aim_restore(t, err) < 0)
				return -1;
			break;
		}
		case ST_SYSCALL:
			if (get_gregs(t, s->cur, err) < 0)
				return -1;
			if (!in_sys) {
				uint64_t pc = a->get_pc(s->cur);

				in_sys = true;
				if (!s->mask_known &&
				    (take_mask(t, err) < 0 || block_signals(t, err) < 0))
					return -1;
				if (kind == STEP_CALL && pc == notify_pc) {
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
				} else if (kind == STEP_CALL && pc == done_pc) {
					/* the result; then skip this getpid, see arch/arch.h */
					*ret = a->get_ret(s->cur);
					sigreturned = true;
					if (skip_syscall(t, err) < 0)
						return -1;
				} else if (kind == STEP_RESTORE && pc == done_pc) {
					sigreturned = true;
					/* ret_tramp's: skipped, call_end() restores (see aim_restore()) */
					if (s->code && skip_syscall(t, err) < 0)
						return -1;
				}
				break;
			}
			in_sys = false;
			if (kind == STEP_SYSCALL && a->get_pc(s->cur) == done_pc) {
				*ret = (uint64_t)a->get_syscall_ret(s->cur);
				return 0;
			}
			if (sigreturned) {
				if (kind == STEP_RESTORE && !s->code) {
					/* rt_sigreturn put back the thread's state and mask */
					s->mask_blocked = false;
					s->real_sigreturn = true;
				}
				if (err_isset(err))
					return -1;
				if (err_isset(&cberr)) {
					*err = cberr;
					return -1;
				}
				return 0;
			}
			break;
		}
		if (ptrace_resume(s->tid, true, 0, err) < 0)
			return -1;
	}
}

/* One syscall in the target, on the gadget, from whatever stop the thread is in. */
static int rsys(struct hc_target *t, long nr, const uint64_t *args, unsigned int n,
		int64_t *ret, struct hc_err *err)
{
	struct sess *s = t->sess;
	/* if heapctl dies meanwhile: through its page's cleanup, if it has one, to the restorer */
	struct hc_call c = { .pc = t->gadget,
			     .ret_addr = s->code ? s->code + t->arch->ret_tramp_stop : t->restorer,
			     .frame = s->frame, .nr = nr, .nargs = n };
	uint64_t r = 0;
	int rc;

	memcpy(c.args, args, n * sizeof(*args));
	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	t->arch->prep_syscall(s->cur, &c);
	/* registers first, then the mask: each intermediate state restores itself */
	if ((c.slot_addr && mem_write(t->memfd, c.slot_addr, &c.slot_val, 8, err) < 0) ||
	    set_gregs(t, s->cur, err) < 0 || (s->mask_known && block_signals(t, err) < 0))
		return -1;
	rc = run(t, STEP_SYSCALL, &r, NULL, NULL, err);
	*ret = (int64_t)r;
	if (rc == 0)
		pr_trace("tid %d: syscall %ld = %lld", s->tid, nr, (long long)*ret);
	return rc;
}

static int rsys_ok(struct hc_target *t, long nr, const uint64_t *args, unsigned int n,
		   int64_t *ret, const char *what, struct hc_err *err)
{
	int r = rsys(t, nr, args, n, ret, err);

	if (r != 0)
		return r;
	if (*ret < 0 && *ret > -4096)
		/* a remote failure: decode the target's errno, not ours */
		return err_set(err, HC_E_REMOTE, (int)-*ret, "%s in pid %d failed: %s", what, t->pid,
			       strerror((int)-*ret));
	return 0;
}

/* Is a signal pending that tid does not block?  Then it will be delivered anyway. */
static bool signal_pending(pid_t pid, pid_t tid)
{
	struct procfs_status st;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (procfs_status(path, &st) < 0)
		return true;
	return ((st.sigpnd | st.shdpnd) & ~st.sigblk) != 0;
}

/*
 * epoll_wait and friends return EINTR for a mere stop, ours included.  When
 * the wait has no timeout and no signal explains the EINTR, it was
 * heapctl's: make the saved state re-issue the syscall, so the program
 * never sees it.  A timed wait keeps the EINTR: re-issued with its
 * original timeout it would wait that long again, while an EINTR is what
 * any signal (or SIGSTOP/SIGCONT) gives it, and event loops recompute the
 * time left (docs/design.md, "Blocked syscalls").
 */
static void undo_our_eintr(struct hc_target *t, struct sess *s)
{
	uint8_t g[sizeof(s->gregs)] __attribute__((aligned(16)));
	uint8_t insn[8];
	struct hc_err e = { 0 };

	memcpy(g, s->gregs, t->arch->gregs_len);
	if (!t->arch->undo_stop_eintr(g, &s->presys) ||
	    mem_read(t->pid, t->memfd, t->arch->get_pc(g), insn, t->arch->syscall_insn.len, &e) < 0 ||
	    memcmp(insn, t->arch->syscall_insn.b, t->arch->syscall_insn.len))
		return;
	/*
	 * Into the thread at once, before anything slower: from here even
	 * heapctl's death leaves no EINTR.  Take it back if a pending signal
	 * explains the EINTR after all, or if Capstone does not confirm the
	 * syscall instruction the bytes suggest.
	 */
	if (set_gregs(t, g, &e) < 0)
		return;
	if (signal_pending(t->pid, s->tid) || !where_is_syscall(t, t->arch->get_pc(g))) {
		set_gregs(t, s->gregs, &e);
		return;
	}
	memcpy(s->gregs, g, t->arch->gregs_len);
	s->eintr_undone = true;
	pr_debug("tid %d: syscall %ld got EINTR from heapctl's stop; it will run again", s->tid,
		 t->arch->syscall_nr(s->gregs));
}

/* /proc/PID/task/TID/syscall of a blocked thread: "nr a0 .. a5 sp pc". */
static void read_presys(pid_t pid, pid_t tid, struct hc_presys *pre)
{
	char path[96], buf[256];
	unsigned long long v[9];
	FILE *f;

	memset(pre, 0, sizeof(*pre));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9' &&
	    sscanf(buf, "%llu %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
		pre->nr = (long)v[0];
		for (int i = 0; i < 6; i++)
			pre->args[i] = v[i + 1];
		pre->sp = v[7];
		pre->pc = v[8];
		pre->valid = true;
	}
	fclose(f);
}

/*
 * arm64: the thread sits rewound on the svc of a relative sleep (nanosleep,
 * FUTEX_WAIT with a timeout), and only do_signal(), after this stop, picks
 * restart_syscall to go on with the time left; restored later, at another
 * stop, the sleep would start over in full.  So let do_signal() decide
 * with the original registers and stop the thread at the syscall-entry
 * stop of that svc (PTRACE_SYSCALL): the saved state takes the kernel's
 * choice, the syscall is skipped, and the thread is put back on the svc.
 * 1: done (or nothing to learn), 0: handed back (why says so), -1: error.
 */
static int probe_restart(struct hc_target *t, struct sess *s, char *why, size_t whylen,
			 struct hc_err *err)
{
	uint8_t g[sizeof(s->gregs)] __attribute__((aligned(16)));
	enum stop st;
	int sig, r;
	bool ok;

	if (ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	r = wait_stop(t, s->tid, &st, &sig, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop", s->tid);
	if (st == ST_EXITED) {
		if (s->exec_seen)
			return gone(t, err);
		snprintf(why, whylen, "thread %d exited", s->tid);
		s->tid = 0;
		s->stopped = s->saved = false;
		return 0;
	}
	if (st == ST_SIGNAL) {
		/* A signal came first: deliver it right there, as without heapctl. */
		snprintf(why, whylen, "thread %d took a signal", s->tid);
		s->pending_sig = sig;
		return give_back_pending(t, err) < 0 ? -1 : 0;
	}
	s->at = st;
	if (st != ST_SYSCALL)
		return 1; /* a group stop, still in get_signal(): registers as saved */
	if (get_gregs(t, g, err) < 0)
		return -1;
	/*
	 * The kernel's answer into the saved state, and the saved state into
	 * the thread, back on the svc, before the syscall is skipped: should
	 * heapctl die at any point from here, the thread runs that svc again.
	 * (Dying between these two writes lets the syscall run once first and
	 * return onto the svc: restart_syscall then finds its sleep over.  An
	 * entry at any other svc cannot happen without a signal stop first;
	 * the saved state is then put back unchanged.)
	 */
	memcpy(s->fgregs, s->gregs, t->arch->gregs_len);
	ok = t->arch->restart_probed(s->gregs, g);
	s->probed = ok;
	if (set_gregs(t, s->gregs, err) < 0 || skip_syscall(t, err) < 0 ||
	    ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	r = wait_stop(t, s->tid, &st, &sig, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop", s->tid);
	if (st == ST_EXITED)
		return gone(t, err);
	s->at = st;
	pr_debug("tid %d: %s", s->tid,
		 ok ? "the kernel's restart decision for its sleep is in the saved state" :
		      "unexpected syscall entry after the stop; saved state unchanged");
	return 1;
}

/* State letter of a thread (R, S, D, T, t, Z, X), or 0 if gone. */
static char task_state(pid_t pid, pid_t tid)
{
	struct procfs_stat st;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	procfs_stat(path, &st);
	return st.state;
}

static bool thread_dead(pid_t pid, pid_t tid)
{
	char c = task_state(pid, tid);

	return !c || c == 'Z' || c == 'X';
}

/* Seize tid and stop it.  1: stopped and safe, 0: not usable now, -1: error. */
static int try_thread(struct hc_target *t, pid_t tid, bool picky, char *why, size_t whylen,
		      struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_err e = { 0 };
	uint64_t saved_deadline;
	enum stop st;
	int sig, r;

	if (ptrace_seize(tid, &e) < 0) {
		/* an exiting thread refuses with EPERM too: not a permission problem */
		if (e.code == HC_E_GONE || (e.code == HC_E_PERM && thread_dead(t->pid, tid))) {
			snprintf(why, whylen, "thread %d exited", tid);
			return 0;
		}
		/* nor is a thread that another tracer (gdb, strace) holds: name it */
		if (e.code == HC_E_PERM && tlock_traced_error(t->pid, tid, err) < 0)
			return -1;
		*err = e;
		return -1;
	}
	s->tid = tid;
	s->probed = false;
	if (t->arch->needs_presys)
		read_presys(t->pid, tid, &s->presys);
	if (ptrace_interrupt(tid, err) < 0)
		return -1;
	/* A stop takes microseconds; do not let a spent retry budget cut it short. */
	saved_deadline = t->deadline_ns;
	if (t->deadline_ns < now_ns() + 2000000000ull)
		t->deadline_ns = now_ns() + 2000000000ull;
	for (;;) {
		r = wait_stop_ex(t, tid, true, &st, &sig, err);
		if (r < 0)
			return -1;
		if (r == 2)
			return cancelled(t, err);
		if (r > 0)
			return err_set(err, HC_E_TIMEOUT, 0,
				       "thread %d did not stop (uninterruptible sleep?)", tid);
		if (st == ST_EXITED) {
			if (s->exec_seen)
				return gone(t, err);
			snprintf(why, whylen, "thread %d exited", tid);
			return 0;
		}
		if (st != ST_SIGNAL)
			break;
		/* A signal on its way: deliver it as the kernel would, then stop. */
		if (ptrace_resume(tid, false, sig, err) < 0)
			return -1;
		pr_trace("tid %d: signal %d delivered before the stop", tid, sig);
	}
	t->deadline_ns = saved_deadline;
	s->at = st;
	s->stopped = true;
	s->stopped_ns = now_ns();
	if (get_gregs(t, s->gregs, err) < 0)
		return -1;
	s->saved = true;
	undo_our_eintr(t, s);
	/*
	 * Not under seccomp filters: the probe skips a syscall (number -1)
	 * before seccomp_check() has looked at the filters.
	 */
	if (t->arch->restart_probe && st == ST_EVENT && t->seccomp == 0 &&
	    t->arch->restart_probe(s->gregs, &s->presys)) {
		r = probe_restart(t, s, why, whylen, err);
		if (r <= 0)
			return r;
	}
	pr_debug("tid %d stopped (%s) at pc 0x%llx, in syscall %ld", tid, stop_name(st),
		 (unsigned long long)t->arch->get_pc(s->gregs), t->arch->syscall_nr(s->gregs));
	where_disasm(t, t->arch->get_pc(s->gregs), HC_LOG_TRACE);
	if (hc_log_on(HC_LOG_TRACE)) {
		char buf[1024];

		t->arch->dump_regs(s->gregs, buf, sizeof(buf));
		pr_trace("registers of tid %d:\n%s", tid, buf);
	}
	/*
	 * A thread resuming an interrupted sleep through restart_syscall
	 * depends on its restart block; should heapctl die, the rt_sigreturn
	 * that gives the thread back resets that block and the sleep would end
	 * with EINTR.  So prefer other threads, and wait up to a second for a
	 * --tid thread to start its next syscall; only then, or in a process
	 * with no other thread, is that small, death-only risk taken.
	 */
	if (picky && t->arch->syscall_nr(s->gregs) == t->arch->nr_restart_syscall)
		snprintf(why, whylen, "thread %d is resuming an interrupted sleep", tid);
	else if (where_safe(t, tid, s->gregs, why, whylen) == 1)
		return 1;
	pr_debug("tid %d is not at a safe point: %s", tid, why);
	if (ptrace_detach(tid, 0, err) < 0) /* an undone EINTR is already in its registers */
		return -1;
	s->eintr_undone = false;
	s->tid = 0;
	s->stopped = s->saved = false;
	return 0;
}


/* Threads in the order we try them: sleeping ones first, then running, then the rest. */
static int list_threads(struct hc_target *t, pid_t **out, size_t *n, struct hc_err *err)
{
	char path[64];
	struct dirent *de;
	pid_t *v = NULL;
	int *rank = NULL;
	size_t cnt = 0, cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d) {
		if (errno == ENOENT)
			return err_set(err, HC_E_GONE, ENOENT, "pid %d exited", t->pid);
		return err_errno(err, errno, "open %s", path);
	}
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);
		int rk = 3;

		if (tid <= 0)
			continue;
		/* Rank the first threads only: reading a thousand stat files costs ms. */
		if (cnt < MAX_RANKED) {
			char c = task_state(t->pid, tid);
			struct hc_presys pre;

			rk = c == 'S' ? 0 : c == 'R' ? 1 : (c == 'T' || c == 't') ? 2 : c == 'Z' ? 9 : 3;
			/*
			 * A sleeper whose syscall our stop would disturb comes
			 * after the running threads: epoll_wait and friends get
			 * EINTR (a timed one keeps it), arm64 needs extra stops
			 * to keep a relative sleep's time left (probe_restart()),
			 * restart_syscall loses its restart block if heapctl dies.
			 */
			if (rk == 0) {
				read_presys(t->pid, tid, &pre);
				if (pre.valid && (pre.nr == t->arch->nr_restart_syscall ||
						  t->arch->wait_kind(pre.nr, pre.args) !=
							  HC_WAIT_UNDISTURBED))
					rk = 2;
			}
		}
		if (rk == 9)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			pid_t *nv = realloc(v, ncap * sizeof(*v));
			int *nr = nv ? realloc(rank, ncap * sizeof(*rank)) : NULL;

			if (nv)
				v = nv;
			if (!nv || !nr) {
				closedir(d);
				free(v);
				free(rank);
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
			}
			rank = nr;
			cap = ncap;
		}
		v[cnt] = tid;
		rank[cnt++] = rk;
	}
	closedir(d);
	/* stable insertion sort by rank: thread lists are short */
	for (size_t i = 1; i < cnt; i++)
		for (size_t j = i; j > 0 && rank[j - 1] > rank[j]; j--) {
			int rk = rank[j];
			pid_t tv = v[j];

			rank[j] = rank[j - 1];
			v[j] = v[j - 1];
			rank[j - 1] = rk;
			v[j - 1] = tv;
		}
	free(rank);
	*out = v;
	*n = cnt;
	return 0;
}

static int save_extra(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	for (const unsigned int *nt = t->arch->extra_regsets; *nt && s->nextra < MAX_EXTRA; nt++) {
		/* Ask with a generous buffer; the kernel says how much is real. */
		size_t len = 64 * 1024;
		uint8_t *buf = malloc(len);
		struct hc_err e = { 0 };

		if (!buf)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (ptrace_regset_get(s->tid, *nt, buf, &len, &e) < 0) {
			free(buf);
			/* A regset this CPU or kernel does not have (e.g. no SVE): nothing to save. */
			if (e.sys_errno == EINVAL || e.sys_errno == ENODEV) {
				pr_debug("tid %d: no regset 0x%x here", s->tid, *nt);
				continue;
			}
			*err = e;
			return -1;
		}
		s->extra[s->nextra].nt = *nt;
		s->extra[s->nextra].buf = buf;
		s->extra[s->nextra].len = len;
		s->nextra++;
		pr_debug("tid %d: saved regset 0x%x, %zu bytes", s->tid, *nt, len);
	}
	return 0;
}

/*
 * Write the signal frame that gives the thread back, below its red zone.
 * Returns 1 if the stack has no room there (the thread is not usable).
 */
static int write_frame(struct hc_target *t, char *why, size_t whylen, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_sigframe f = { .gregs = s->probed ? s->fgregs : s->gregs, .extra = s->extra,
				 .nextra = s->nextra };
	struct hc_err e = { 0 };
	uint8_t *buf;
	size_t len;
	int r = 0;

	/* A mask swapped in by ppoll & co is replaced by the real one at the first stop. */
	if (s->mask_known)
		f.mask = s->mask;
	else if (ptrace_sigmask_get(s->tid, &f.mask, err) < 0)
		return -1;
	len = (t->arch->sigframe_len(&f) + 15) & ~(size_t)15;
	f.raddr = s->frame = t->arch->frame_place(t->arch->get_sp(s->gregs), len + SCRATCH_LEN);
	s->scratch = s->frame + len;
	s->scratch_used = 0;
	buf = calloc(1, len);
	if (!buf)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	if (t->arch->sigframe_build(&f, buf, len, err) < 0) {
		r = -1;
	} else if (mem_write(t->memfd, s->frame, buf, len, &e) < 0 ||
		   mem_write(t->memfd, s->scratch + SCRATCH_LEN - 8, buf, 8, &e) < 0) {
		snprintf(why, whylen, "thread %d has no stack room below 0x%llx", s->tid,
			 (unsigned long long)t->arch->get_sp(s->gregs));
		r = 1;
	}
	free(buf);
	return r;
}

/* Lines of /proc/PID/maps, i.e. mappings; 0 if unreadable. */
static unsigned long count_maps(pid_t pid)
{
	char path[64], buf[4096];
	unsigned long n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/*
 * The target's mmap of heapctl's page failed with error e.  ENOMEM there is
 * rarely "out of memory": name the limit the page ran into.  RLIMIT_AS is
 * checked by the kernel against VmSize (may_expand_vm()); the margin
 * covers what the target's other threads map and unmap meanwhile.
 */
static int map_failed(struct hc_target *t, int e, struct hc_err *err)
{
	const char *what = "mmap of heapctl's code page";
	struct procfs_status st;
	char path[64], hint[256];
	uint64_t as, hard;
	unsigned long nmaps, maxmaps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", t->pid);
	if (e == ENOMEM && procfs_limit(t->pid, "Max address space", &as, &hard) == 0 &&
	    as != UINT64_MAX && procfs_status(path, &st) == 0 && st.vmsize + (1 << 20) > as) {
		/* some room above what it maps now, within the hard limit if it has one */
		uint64_t want = as + (64 << 20) < hard ? as + (64 << 20) : hard;

		if (want > as)
			snprintf(hint, sizeof(hint),
				 "raise the target's limit, e.g. `prlimit --pid %d --as=%llu:`, or "
				 "make it free address space: heapctl maps one page (%u bytes) in it",
				 t->pid, (unsigned long long)want, CODE_LEN);
		else
			snprintf(hint, sizeof(hint),
				 "its hard limit is reached too: raise both as root, e.g. `prlimit "
				 "--pid %d --as=%llu`, or make it free address space: heapctl maps "
				 "one page (%u bytes) in it",
				 t->pid, (unsigned long long)(as + (64 << 20)), CODE_LEN);
		return err_sethint(err, HC_E_NOMEM, e, hint,
				   "%s in pid %d failed: the process is at its address-space limit "
				   "(RLIMIT_AS, \"Max address space\" %llu bytes; VmSize %llu bytes)",
				   what, t->pid, (unsigned long long)as,
				   (unsigned long long)st.vmsize);
	}
	f = e == ENOMEM ? fopen("/proc/sys/vm/max_map_count", "re") : NULL;
	if (f) {
		if (fscanf(f, "%lu", &maxmaps) != 1)
			maxmaps = 0;
		fclose(f);
	}
	if (maxmaps && (nmaps = count_maps(t->pid)) + 16 > maxmaps)
		return err_sethint(err, HC_E_NOMEM, e,
				   "raise vm.max_map_count (sysctl -w vm.max_map_count=...)",
				   "%s in pid %d failed: the process has %lu mappings, at the "
				   "system's limit (vm.max_map_count %lu)",
				   what, t->pid, nmaps, maxmaps);
	if (e == ENOMEM)
		return err_sethint(err, HC_E_NOMEM, e,
				   "free memory on the system (or check vm.overcommit_memory) and "
				   "retry",
				   "%s in pid %d failed: %s", what, t->pid, strerror(e));
	return err_sethint(err, HC_E_REMOTE, e,
			   "a seccomp filter or a security policy of the target may forbid "
			   "executable anonymous memory",
			   "%s in pid %d failed: %s", what, t->pid, strerror(e));
}

static int map_pages(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	uint8_t code[MAGIC_OFF + 16];
	uint32_t owner = (uint32_t)getpid();
	uint64_t a[6];
	int64_t ret;
	int r;

	/* the kill tests' mark: a SIGKILL from here to "code page at" may leave the page */
	pr_debug("pid %d: mapping heapctl's code page", t->pid);
	/* r-x from the start; written through /proc/PID/mem, never writable */
	a[0] = 0;
	a[1] = CODE_LEN;
	a[2] = PROT_READ | PROT_EXEC;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	a[4] = (uint64_t)-1;
	a[5] = 0;
	r = rsys(t, t->arch->nr_mmap, a, 6, &ret, err);
	if (r != 0)
		return r;
	if (ret < 0 && ret > -4096)
		return map_failed(t, (int)-ret, err); /* the target's errno, not ours */
	memset(code, 0, sizeof(code));
	memcpy(code, t->arch->ret_tramp.b, t->arch->ret_tramp.len);
	t->arch->ret_tramp_fill(code, t->gadget, t->restorer);
	memcpy(code + NOTIFY_OFF, t->arch->notify.b, t->arch->notify.len);
	/* The mark lets a later heapctl reclaim a page that outlived its owner. */
	memcpy(code + MAGIC_OFF, MAGIC, 8);
	memcpy(code + MAGIC_OFF + 8, &owner, 4);
	if (mem_write(t->memfd, (uint64_t)ret, code, sizeof(code), err) < 0)
		return -1;
	s->code = (uint64_t)ret;
	/*
	 * The gadget's ret still goes straight to the restorer: aim it at the
	 * page's cleanup, so that from now on a SIGKILL leaves no page behind.
	 */
	struct hc_call c = { .pc = t->gadget + t->arch->syscall_insn.len,
			     .ret_addr = s->code + t->arch->ret_tramp_stop, .frame = s->frame };

	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	t->arch->prep_syscall(s->cur, &c);
	if ((c.slot_addr && mem_write(t->memfd, c.slot_addr, &c.slot_val, 8, err) < 0) ||
	    set_gregs(t, s->cur, err) < 0)
		return -1;
	pr_debug("pid %d: code page at 0x%llx, frame at 0x%llx", t->pid,
		 (unsigned long long)s->code, (unsigned long long)s->frame);
	return 0;
}

/*
 * Code pages of heapctl runs that were killed mid-operation: anonymous r-x
 * pages carrying heapctl's mark whose owner is gone.  Found before the
 * thread is stopped, unmapped during the session.
 */
static size_t find_leftovers(struct hc_target *t, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (unsigned int i = 0; i < t->nanon_rx && n < max; i++) {
		uint64_t lo = t->anon_rx[i].lo, hi = t->anon_rx[i].hi;

		/* adjacent leftovers merge into one mapping: look at every page */
		if (hi - lo > 256 * CODE_LEN)
			continue;
		for (uint64_t pg = lo; pg < hi && n < max; pg += CODE_LEN) {
			char mark[12];
			uint32_t owner;
			struct hc_err e = { 0 };

			if (mem_read(t->pid, t->memfd, pg + MAGIC_OFF, mark, sizeof(mark), &e) < 0 ||
			    memcmp(mark, MAGIC, 8))
				continue;
			memcpy(&owner, mark + 8, 4);
			/* a heapctl still running on this process owns it: leave it */
			if (owner && (kill((pid_t)owner, 0) == 0 || errno != ESRCH))
				continue;
			out[n++] = pg;
		}
	}
	return n;
}

static void reclaim_leftovers(struct hc_target *t, const uint64_t *pages, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t a[2] = { pages[i], CODE_LEN };
		struct hc_err e = { 0 };
		int64_t ret;

		if (rsys_ok(t, t->arch->nr_munmap, a, 2, &ret, "munmap", &e) == 0)
			pr_info("pid %d: reclaimed a page left by a killed heapctl at 0x%llx", t->pid,
				(unsigned long long)pages[i]);
	}
}

/* Find pat in the executable text of the vDSO, libc, then the executable. */
static uint64_t find_text(struct hc_target *t, const struct hc_bytes *pat, bool want_syscall)
{
	size_t step = t->arch->syscall_insn.len == 4 ? 4 : 1; /* arm64 code is 4-aligned */

	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < t->nobjs; i++) {
			struct obj *o = &t->objs[i];
			bool want = pass == 0 ? o->is_vdso :
				    pass == 1 ? strstr(o->path, "/libc.so") || strstr(o->path, "/libc.musl") :
						o->is_exe;
			uint8_t buf[65536];

			if (!want || !o->text_lo)
				continue;
			for (uint64_t at = o->text_lo; at < o->text_hi; at += sizeof(buf) - 16) {
				size_t len = o->text_hi - at < sizeof(buf) ? o->text_hi - at : sizeof(buf);
				struct hc_err e = { 0 };

				if (mem_read(t->pid, t->memfd, at, buf, len, &e) < 0)
					break;
				for (size_t k = 0; k + pat->len <= len; k += step) {
					if (memcmp(buf + k, pat->b, pat->len))
						continue;
					if (want_syscall && !where_is_syscall(t, at + k))
						continue;
					pr_debug("found %zu-byte pattern at 0x%llx in %s", pat->len,
						 (unsigned long long)(at + k), o->path);
					return at + k;
				}
			}
		}
	}
	return 0;
}

/* Look for pat within a few KiB of functions that are known to hold it. */
static uint64_t find_near(struct hc_target *t, const struct hc_bytes *pat, bool want_syscall,
			  const char *const *names)
{
	size_t step = t->arch->syscall_insn.len == 4 ? 4 : 1;

	for (size_t i = 0; i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];
		struct hc_err e = { 0 };

		if (!o->text_lo || !(strstr(o->path, "/libc.so") || strstr(o->path, "/libc.musl")) ||
		    sym_load(t, o, false, &e) < 0)
			continue;
		for (const char *const *n = names; *n; n++) {
			const struct sym *sy = sym_by_name(o, *n);
			uint8_t buf[8192];
			uint64_t at;

			if (!sy || sy->raddr < o->text_lo + 4096 || sy->raddr + 4096 > o->text_hi)
				continue;
			at = sy->raddr - 4096;
			if (mem_read(t->pid, t->memfd, at, buf, sizeof(buf), &e) < 0)
				continue;
			for (size_t k = 0; k + pat->len <= sizeof(buf); k += step)
				if (!memcmp(buf + k, pat->b, pat->len) &&
				    (!want_syscall || where_is_syscall(t, at + k)))
					return at + k;
		}
	}
	return 0;
}

static int find_gadgets(struct hc_target *t, struct hc_err *err)
{
	/* small syscall wrappers end in "syscall; ret"; __restore_rt sits by sigaction */
	static const char *const wrappers[] = { "getpid", "getuid", "getppid", "sched_yield", NULL };
	static const char *const sigaction_fns[] = { "sigaction", "__sigaction", NULL };

	t->gadget = find_near(t, &t->arch->syscall_ret, true, wrappers);
	if (!t->gadget)
		t->gadget = find_text(t, &t->arch->syscall_ret, true);
	for (const struct hc_bytes *r = t->arch->restorers; r->len && !t->restorer; r++) {
		t->restorer = find_near(t, r, false, sigaction_fns);
		if (!t->restorer)
			t->restorer = find_text(t, r, false);
		t->restorer_end = t->restorer + r->len;
	}
	if (!t->gadget || !t->restorer)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "heapctl needs the C library's signal return code in the target",
				   "pid %d has no %s in its text", t->pid,
				   t->gadget ? "sigreturn restorer" : "\"syscall; ret\" sequence");
	pr_debug("syscall gadget at 0x%llx, sigreturn restorer at 0x%llx",
		 (unsigned long long)t->gadget, (unsigned long long)t->restorer);
	return 0;
}

/*
 * Is the program heapctl inspected still the one running?  After an execve
 * the executable's ELF header is no longer where maps_load() found it.
 */
static bool same_program(struct hc_target *t)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		uint8_t magic[4];

		if (!t->objs[i].is_exe || !t->objs[i].base)
			continue;
		return mem_read(t->pid, t->memfd, t->objs[i].base, magic, 4, &(struct hc_err){ 0 }) == 0 &&
		       !memcmp(magic, "\177ELF", 4);
	}
	return true;
}

/*
 * The process is stopped by job control, so its other threads cannot run
 * out of the allocator: if one of them stopped inside it, holding a lock,
 * the call would wait for it forever.  They are stopped anyway, so look at
 * each of them (seize, unwind, detach: they stay stopped).
 */
static int check_stopped_threads(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess, saved = *s;
	pid_t *tids = NULL;
	size_t n = 0;
	char why[256];
	int ret = 0;

	/* every thread, even with --tid: any of them may hold the lock */
	if (list_threads(t, &tids, &n, err) < 0)
		return -1;

	for (size_t i = 0; i < n && !ret; i++) {
		if (tids[i] == saved.tid)
			continue;
		memset(s, 0, sizeof(*s));
		/* try_thread() detaches an unsafe thread itself and says why */
		int r = try_thread(t, tids[i], false, why, sizeof(why), err);

		if (r < 0)
			ret = -1;
		else if (r == 0 && !strstr(why, "exited"))
			ret = err_sethint(err, HC_E_UNSAFE, 0,
					  "resume it (kill -CONT) and retry, or retry when it is stopped elsewhere",
					  "pid %d is stopped by job control and %s: a call would wait for it forever",
					  t->pid, why);
		else if (r > 0 && ptrace_detach(tids[i], 0, err) < 0)
			ret = -1;
	}
	*s = saved;
	free(tids);
	return ret;
}

/* Pick and stop a thread at a safe point, save it, map heapctl's pages. */
static int borrow(struct hc_target *t, struct hc_err *err)
{
	char why[256] = "no thread found";
	pid_t *tids = NULL;
	size_t ntids = 0;
	unsigned int attempts = 0;
	useconds_t backoff = 200;
	int r;

	uint64_t leftovers[32];
	size_t nleft;

	/* how long a --tid thread may be waited for to leave restart_syscall */
	uint64_t picky_until = now_ns() + 1000000000ull;

	/* one heapctl at a time: before any seize, and before leftovers are judged */
	if (tlock_acquire(t, err) < 0)
		return -1;
	if (!t->gadget && find_gadgets(t, err) < 0) {
		if (!same_program(t)) {
			memset(err, 0, sizeof(*err));
			return err_set(err, HC_E_GONE, 0, "pid %d ran execve while heapctl looked at it",
				       t->pid);
		}
		return -1;
	}
	nleft = find_leftovers(t, leftovers, 32);
	/* what the safe-point check reads, ready before anything stops */
	sym_prepare(t);
	t->sess = calloc(1, sizeof(*t->sess));
	if (!t->sess)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memset(&t->timing, 0, sizeof(t->timing));
	for (;;) {
		free(tids);
		tids = NULL;
		if (t->opts.tid) {
			tids = malloc(sizeof(*tids));
			if (!tids)
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
			tids[0] = t->opts.tid;
			ntids = 1;
		} else if (list_threads(t, &tids, &ntids, err) < 0) {
			goto fail;
		}
		/* two passes over the threads: the first one picky (see try_thread()) */
		for (size_t k = 0; k < 2 * ntids && (k == 0 || now_ns() < t->deadline_ns); k++) {
			size_t i = k % ntids;

			attempts++;
			r = try_thread(t, tids[i],
				       t->opts.tid ? now_ns() < picky_until : k < ntids && ntids > 1,
				       why, sizeof(why), err);
			if (r < 0)
				goto fail;
			if (r == 0)
				continue;
			if ((t->seccomp == 2 && seccomp_check(t, t->sess->tid, err) < 0) ||
			    (t->sess->at == ST_GROUP && check_stopped_threads(t, err) < 0) ||
			    save_extra(t, err) < 0)
				goto fail;
			/*
			 * Unless the thread sits in a syscall that swapped in a
			 * temporary mask (ppoll & co), its mask is the real one:
			 * take it now, so no signal is ever dequeued before
			 * heapctl blocks it.
			 */
			if (t->arch->swaps_mask(t->sess->gregs) == 0) {
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
				forget_extra(t->sess);
				t->sess->tid = 0;
				t->sess->stopped = t->sess->saved = false;
				continue;
			}
			r = map_pages(t, err);
			if (r < 0)
				goto fail;
			if (r > 0) {
				/* run() already gave it back to take its signal */
				snprintf(why, sizeof(why), "thread %d took a signal", tids[i]);
				k--; /* same thread again */
				continue;
			}
			reclaim_leftovers(t, leftovers, nleft);
			free(tids);
			t->timing.tid = t->sess->tid;
			t->timing.attempts = attempts;
			pr_info("borrowing tid %d of pid %d", t->sess->tid, t->pid);
			return 0;
		}
		if (!ntids || !same_program(t)) {
			/* every thread is a zombie (killed, not yet reaped), or execve ran */
			if (ntids)
				t->sess->exec_seen = true;
			gone(t, err);
			goto fail;
		}
		if (t->opts.tid && ntids == 1 && strstr(why, "exited")) {
			err_set(err, HC_E_NO_PROC, 0, "thread %d is not in pid %d", t->opts.tid, t->pid);
			goto fail;
		}
		if (now_ns() + backoff * 1000ull >= t->deadline_ns) {
			if (t->opts.tid)
				err_sethint(err, HC_E_UNSAFE, 0,
					    "retry later, raise --timeout, or drop --tid to let heapctl pick a thread",
					    "thread %d never reached a safe point: %s", t->opts.tid, why);
			else
				err_set(err, HC_E_UNSAFE, 0,
					"no thread of pid %d reached a safe point (last: %s)", t->pid, why);
			goto fail;
		}
		t->cancel_sig = term_pending();
		if (t->cancel_sig) {
			cancelled(t, err);
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
static int need(struct hc_target *t, struct hc_err *err)
{
	if (t->sess)
		return 0;
	if (err_isset(err))
		return -1;
	return borrow(t, err);
}

void call_hold(struct hc_target *t)
{
	t->held++;
}

int call_release(struct hc_target *t, struct hc_err *err)
{
	if (t->held)
		t->held--;
	return call_done(t, err);
}

int call_done(struct hc_target *t, struct hc_err *err)
{
	if (!t->held)
		return call_end(t, err);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_cb_raddr(struct hc_target *t, struct hc_err *err)
{
	return need(t, err) == 0 ? t->sess->code + NOTIFY_OFF : 0;
}

/* Give the callee the FP state the ABI promises; rt_sigreturn brings the real one back. */
static int prepare_fp(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	for (unsigned int i = 0; i < s->nextra; i++) {
		uint8_t *copy = malloc(s->extra[i].len);
		int r = 0;

		if (!copy)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		memcpy(copy, s->extra[i].buf, s->extra[i].len);
		if (t->arch->call_fpstate(s->extra[i].nt, copy, s->extra[i].len))
			r = ptrace_regset_set(s->tid, s->extra[i].nt, copy, s->extra[i].len, err);
		free(copy);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int call_any(struct hc_target *t, uint64_t fn, uint64_t sret, const uint64_t *args,
		    unsigned int nargs, uint64_t *ret, call_cb_fn cb, void *cb_arg,
		    struct hc_err *err)
{
	struct sess *s;
	struct hc_call c = { .pc = fn, .nargs = nargs, .sret = sret };

	if (nargs > HC_ARCH_MAX_ARGS)
		return err_set(err, HC_E_ARGS, 0, "%u arguments", nargs);
	if (need(t, err) < 0)
		return -1;
	s = t->sess;
	c.ret_addr = s->code;
	c.frame = s->frame;
	if (!t->cancel_sig)
		t->cancel_sig = term_pending();
	if (t->cancel_sig)
		return cancelled(t, err);
	if (nargs)
		memcpy(c.args, args, nargs * sizeof(*args));
	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	if (t->arch->prep_call(s->cur, &c, err) < 0)
		return -1;
	/* registers first, then FP state and mask: each step restores itself */
	if ((c.slot_addr && mem_write(t->memfd, c.slot_addr, &c.slot_val, 8, err) < 0) ||
	    set_gregs(t, s->cur, err) < 0 || prepare_fp(t, err) < 0 || block_signals(t, err) < 0)
		return -1;
	return run(t, STEP_CALL, ret, cb, cb_arg, err) == 0 ? 0 : -1;
}

int call_fn(struct hc_target *t, uint64_t fn, const uint64_t *args, unsigned int nargs,
	    uint64_t *ret, call_cb_fn cb, void *cb_arg, struct hc_err *err)
{
	return call_any(t, fn, 0, args, nargs, ret, cb, cb_arg, err);
}

int call_fn_sret(struct hc_target *t, uint64_t fn, uint64_t sret_raddr, const uint64_t *args,
		 unsigned int nargs, uint64_t *ret, struct hc_err *err)
{
	if (!sret_raddr)
		return err_set(err, HC_E_INTERNAL, 0, "no address for the returned struct");
	return call_any(t, fn, sret_raddr, args, nargs, ret, NULL, NULL, err);
}

int call_end(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_err e = { 0 };
	uint64_t a[2];
	int64_t ret;
	enum stop st;
	int sig = 0, r;
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
	if (s->code) {
		a[0] = s->code;
		a[1] = CODE_LEN;
		s->code = 0; /* this munmap returns into the target's restorer, not the page */
		if (rsys_ok(t, t->arch->nr_munmap, a, 2, &ret, "munmap", &e) != 0 && s->gone)
			goto out;
	}
	if (err_isset(&e)) {
		pr_warn("pid %d: could not unmap heapctl's code page (%s)", t->pid, e.msg);
		memset(&e, 0, sizeof(e));
	}
	/*
	 * The thread now sits at a syscall-exit stop from which it would
	 * restore itself.  Stop it once more inside get_signal(): only there
	 * does x86 run its restart logic on the registers put back below
	 * (arch_do_signal_or_restart() after get_signal()).
	 */
	if (ptrace_interrupt(s->tid, &e) < 0 || ptrace_resume(s->tid, false, 0, &e) < 0)
		goto fail;
	for (;;) {
		r = wait_stop(t, s->tid, &st, &sig, &e);
		if (r != 0) {
			err_set(&e, HC_E_TIMEOUT, 0, "thread %d did not stop for the restore", s->tid);
			goto fail;
		}
		if (st == ST_EXITED) {
			s->gone = true;
			goto out;
		}
		if (st == ST_EVENT || st == ST_GROUP) {
			sig = 0;
			break;
		}
		if (st == ST_SIGNAL)
			break; /* in get_signal too: deliver it on detach */
		if (ptrace_resume(s->tid, false, 0, &e) < 0)
			goto fail;
	}
	/* Mask first, registers last: until then the thread would still restore itself. */
	if (ptrace_sigmask_set(s->tid, s->mask, &e) < 0)
		goto fail;
	for (unsigned int i = 0; i < s->nextra; i++)
		if (ptrace_regset_set(s->tid, s->extra[i].nt, s->extra[i].buf, s->extra[i].len, &e))
			goto fail;
	if (s->real_sigreturn) {
		/* the restart block is gone: as the frame would have it */
		if (s->probed)
			memcpy(s->gregs, s->fgregs, t->arch->gregs_len);
		t->arch->restart_now(s->gregs);
	}
	if (set_gregs(t, s->gregs, &e) < 0 || ptrace_detach(s->tid, sig, &e) < 0)
		goto fail;
done:
	t->timing.paused_us = (now_ns() - s->stopped_ns) / 1000;
	pr_info("gave tid %d of pid %d back after %llu us", s->tid, t->pid,
		(unsigned long long)t->timing.paused_us);
	redeliver(t, s);
	goto out;
fail:
	if (e.code == HC_E_GONE)
		s->gone = true;
	else
		pr_err("pid %d tid %d: restore failed: %s", t->pid, s->tid, e.msg);
	if (!err_isset(err))
		*err = e;
out:
	if (s->gone && !err_isset(err))
		gone(t, err);
	t->sess = NULL;
	sess_free(s);
	/* the thread is given back: the next heapctl may come (even while we print) */
	if (!keep_lock)
		tlock_release(t);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_scratch(struct hc_target *t, size_t len, struct hc_err *err)
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

size_t call_scratch_mark(const struct hc_target *t)
{
	return t->sess ? t->sess->scratch_used : 0;
}

void call_scratch_release(struct hc_target *t, size_t mark)
{
	if (t->sess && mark <= t->sess->scratch_used)
		t->sess->scratch_used = mark;
}

uint64_t call_strdup(struct hc_target *t, const char *str, struct hc_err *err)
{
	size_t len = strlen(str) + 1;
	uint64_t at = call_scratch(t, len, err);

	if (!at) {
		err_set(err, HC_E_ARGS, 0, "string of %zu bytes does not fit heapctl's scratch space", len);
		return 0;
	}
	if (mem_write(t->memfd, at, str, len, err) < 0)
		return 0;
	return at;
}

int call_write(struct hc_target *t, uint64_t raddr, const void *buf, size_t len,
	       struct hc_err *err)
{
	if (need(t, err) < 0)
		return -1;
	return mem_write(t->memfd, raddr, buf, len, err);
}

int call_read(struct hc_target *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err)
{
	return mem_read(t->pid, t->memfd, raddr, buf, len, err);
}

int call_read_str(struct hc_target *t, uint64_t raddr, char *buf, size_t len,
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
		if (mem_read(t->pid, t->memfd, at, buf + got, chunk, err) < 0)
			return -1;
		nul = memchr(buf + got, 0, chunk);
		if (nul)
			return 0;
		got += chunk;
	}
	buf[len - 1] = 0;
	return 0;
}
