// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "procfs.h"
#include "ptrace.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

static int pclock_ret(enum pclock k, int r, uint64_t since)
{
	pclock_add(k, since);
	return r;
}

static int fail(struct hc_err *err, const char *what, pid_t tid)
{
	int e = errno;

	pr_debug("ptrace %s tid %d: %s", what, tid, strerror(e));
	if (e == ESRCH || e == ECHILD)
		return err_set(err, HC_E_GONE, e, "thread %d exited or its process ran execve (%s)",
			       tid, what);
	return err_errno(err, e, "ptrace %s on thread %d", what, tid);
}

int ptrace_seize(pid_t tid, struct hc_err *err)
{
	/*
	 * No PTRACE_O_EXITKILL: if heapctl dies, the target must live on.
	 * TRACESYSGOOD tells syscall stops from real SIGTRAPs; TRACEEXEC
	 * reports an execve, after which there is nothing left to restore.
	 */
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC) < 0)
		return fail(err, "SEIZE", tid);
	pr_debug("seized tid %d", tid);
	return 0;
}

int ptrace_interrupt(pid_t tid, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "INTERRUPT", tid), t0);
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_resume(pid_t tid, bool to_syscall, int sig, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(to_syscall ? PTRACE_SYSCALL : PTRACE_CONT, tid, 0, (long)sig) < 0)
		return pclock_ret(PCLK_STOP, fail(err, to_syscall ? "SYSCALL" : "CONT", tid), t0);
	return pclock_ret(PCLK_STOP, 0, t0);
}

int ptrace_detach(pid_t tid, int sig, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_DETACH, tid, 0, (long)sig) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "DETACH", tid), t0);
	pr_debug("detached tid %d", tid);
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_regset_get(pid_t tid, unsigned int nt, void *buf, size_t *len, struct hc_err *err)
{
	struct iovec iov = { .iov_base = buf, .iov_len = *len };
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)nt, &iov) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "GETREGSET", tid), t0);
	*len = iov.iov_len;
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_regset_set(pid_t tid, unsigned int nt, const void *buf, size_t len,
		      struct hc_err *err)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)nt, &iov) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "SETREGSET", tid), t0);
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_sigmask_get(pid_t tid, uint64_t *mask, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "GETSIGMASK", tid), t0);
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_sigmask_set(pid_t tid, uint64_t mask, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "SETSIGMASK", tid), t0);
	return pclock_ret(PCLK_REGS, 0, t0);
}

int ptrace_siginfo_get(pid_t tid, siginfo_t *si, struct hc_err *err)
{
	uint64_t t0 = now_ns();

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, si) < 0)
		return pclock_ret(PCLK_REGS, fail(err, "GETSIGINFO", tid), t0);
	return pclock_ret(PCLK_REGS, 0, t0);
}

/* TracerPid of thread tid, 0 if none, -1 if it is gone. */
static pid_t tracer_of(pid_t tid)
{
	struct procfs_status st;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	return procfs_status(path, &st) == 0 ? st.tracer : -1;
}

long ptrace_seccomp_filter(pid_t tid, unsigned long idx, void *prog, size_t max,
			   struct hc_err *err)
{
	long n;

	/* a NULL buffer asks for the length, so an oversized filter is refused, not cut */
	n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, NULL);
	if (n < 0 || (size_t)n > max) {
		if (n >= 0)
			errno = E2BIG;
		return err_set(err, err_code_of_errno(errno), errno, "seccomp filter %lu of thread %d",
			       idx, tid);
	}
	n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, prog);
	if (n < 0)
		return err_set(err, err_code_of_errno(errno), errno, "seccomp filter %lu of thread %d",
			       idx, tid);
	return n;
}

/*
 * How long a wait polls before it sleeps.  A stop heapctl waits for comes
 * within microseconds; a tracer asleep in sigtimedwait() needs a wake-up
 * (on a VM, a halted vCPU's) for each one, which made the stops most of a
 * borrow's pause.  Polling yields the CPU at each turn, so a target thread
 * placed on it runs at once; past this, heapctl sleeps as before.
 */
#define SPIN_NS 100000ull

/*
 * A tracer gets SIGCHLD for every stop of its tracees.  It stays blocked
 * while heapctl waits, so that it stays pending between waitpid(WNOHANG)
 * and sigtimedwait(): no lost wake-up.  Held for a whole borrow
 * (ptrace_hold_sigchld()), no wait changes the mask while a thread is
 * stopped; otherwise each wait blocks it and puts the mask back.
 */
static __thread bool chld_held; /* per thread, as signal masks are */
static __thread sigset_t chld_old;

void ptrace_hold_sigchld(void)
{
	sigset_t set;

	if (chld_held)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, &chld_old);
	chld_held = true;
}

void ptrace_release_sigchld(void)
{
	if (!chld_held)
		return;
	chld_held = false;
	pthread_sigmask(SIG_SETMASK, &chld_old, NULL);
}

int ptrace_wait(pid_t tid, int *status, uint64_t deadline_ns, bool cancellable, int *cancel_sig,
		struct hc_err *err)
{
	uint64_t t0 = now_ns();
	sigset_t set, old;
	unsigned int slice = 0;
	uint64_t left, spin_until = 0;
	int ret = -1;
	bool held = chld_held;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (held)
		old = chld_old;
	else
		pthread_sigmask(SIG_BLOCK, &set, &old);
	for (unsigned int i = 0; cancellable && i < NTERM_SIGS; i++)
		if (sigismember(&old, term_sigs[i]) == 1)
			sigaddset(&set, term_sigs[i]);
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		uint64_t now;
		struct timespec ts;
		int sig;

		if (r == tid) {
			ret = 1;
			break;
		}
		if (r < 0 && errno != EINTR) {
			fail(err, "wait", tid);
			break;
		}
		now = now_ns();
		if (now >= deadline_ns) {
			ret = 0;
			break;
		}
		if (!spin_until)
			spin_until = now + SPIN_NS;
		if (now < spin_until) {
			sched_yield();
			continue;
		}
		/*
		 * Wake up every 100 ms to make sure tid is still ours: when
		 * another thread runs execve, the kernel releases a traced
		 * leader silently and no stop or exit is ever reported.
		 */
		if (slice++ && tracer_of(tid) != getpid()) {
			ret = 3;
			break;
		}
		left = deadline_ns - now < 100000000ull ? deadline_ns - now : 100000000ull;
		ts.tv_sec = (time_t)(left / 1000000000ull);
		ts.tv_nsec = (long)(left % 1000000000ull);
		sig = sigtimedwait(&set, NULL, &ts);
		if (sig > 0 && sig != SIGCHLD) {
			/* still blocked: it stays pending for the caller */
			pthread_kill(pthread_self(), sig);
			*cancel_sig = sig;
			ret = 2;
			break;
		}
		if (sig < 0 && errno != EAGAIN && errno != EINTR) {
			fail(err, "sigtimedwait", tid);
			break;
		}
	}
	if (!held)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	pclock_add(PCLK_STOP, t0);
	return ret;
}
