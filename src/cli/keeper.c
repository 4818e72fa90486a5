// SPDX-License-Identifier: MIT
/*
 * keeper.c: a command that may borrow a thread runs in two processes.  The
 * one the user started (the front) makes the worker, which does the whole
 * command and is the tracer, and only waits for it, passing on Ctrl-C and
 * the other stop signals.  Killing the front, SIGKILL included, is then a
 * request to stop, as SIGTERM is: the worker hears of its parent's death
 * (PR_SET_PDEATHSIG), finishes the step it is on, gives the thread back
 * whole and exits.  A SIGKILL of the tracer itself could not be made
 * harmless: the kernel lets a traced thread go from wherever its tracer
 * left it, and an epoll_wait that heapctl's stop interrupted a moment
 * before would return EINTR (docs/design.md, "A killed heapctl").
 *
 * The worker has a process group of its own, so that a kill of the job or
 * of the group (kill %1, timeout -s KILL) reaches the front only; being in
 * a background group never stops it, since it ignores SIGTTOU and SIGTTIN
 * (heapctl reads no terminal).  The front exits as the worker did: with
 * its status, or by the same signal.
 *
 * The worker is a process that shares the front's memory (clone(CLONE_VM),
 * the way posix_spawn() makes its child), not a fork: a fork copied the
 * page tables, then every page the worker wrote again, and tore the
 * address space down twice, once per process, before the user's shell
 * saw the front exit.  That was about a sixth of a round trip.  The price
 * is that the two must not share anything live: the worker keeps the
 * stack, the thread-local storage and the C library, and the front, from
 * the instant clone() returns, runs on a stack of its own and calls the
 * kernel directly (no errno, no lock, no buffer), as posix_spawn()'s child
 * does; and before the clone it stops the kernel writing anything for it
 * into that memory (front_quiet()).  Where a shadow stack is on, or the
 * clone is refused, the worker is a fork, as it used to be.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* A C library before glibc 2.35 registers no rseq area: nothing to give up. */
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define HAVE_RSEQ_AREA 1
#endif

static const int relayed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/*
 * The other signals whose default action dumps core.  Before Linux 5.16
 * a core dump killed every process sharing the dumper's memory, so one
 * of these sent to the front would have killed the worker, the tracer,
 * in the middle of a borrow.  The front takes them as a request to stop
 * (SIGTERM to the worker) and dies by them once the worker has exited.
 */
static const int dumping[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGTRAP,
			       SIGXCPU, SIGXFSZ };
#define NSIGS(a) (sizeof(a) / sizeof((a)[0]))

/* A system call with no errno: -errno on failure.  A fifth argument is 0. */
static inline long rawsys(long n, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = 0;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = 0;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
#else
#error "unsupported host architecture"
#endif
}

/*
 * clone(CLONE_VM | SIGCHLD) on the current stack.  The child returns 0 on
 * it; the parent never returns: with only registers touched since the
 * kernel let it go, it moves to sp and calls fn(child's pid).  On failure
 * no child exists and the parent returns -errno on its own stack.
 */
static long clone_vm_leave(void *sp, void (*fn)(long))
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	long ret;

	/* at the call, sp is 16-byte aligned, as the ABI wants it */
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jle 1f\n\t"
			 "mov %[sp], %%rsp\n\t"
			 "mov %%rax, %%rdi\n\t"
			 "call *%[fn]\n\t"
			 "ud2\n"
			 "1:"
			 : "=a"(ret)
			 : "a"((long)SYS_clone), "D"((long)(CLONE_VM | SIGCHLD)), "S"(0L), "d"(0L),
			   "r"(r10), "r"(r8), [sp] "r"(sp), [fn] "r"(fn)
			 : "rcx", "r11", "memory", "cc");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_clone;
	register long x0 __asm__("x0") = CLONE_VM | SIGCHLD;
	register long x1 __asm__("x1") = 0;
	register long x2 __asm__("x2") = 0;
	register long x3 __asm__("x3") = 0;
	register long x4 __asm__("x4") = 0;

	__asm__ volatile("svc #0\n\t"
			 "cmp x0, #0\n\t"
			 "b.le 1f\n\t"
			 "mov sp, %[sp]\n\t"
			 "blr %[fn]\n\t"
			 "brk #0\n"
			 "1:"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), [sp] "r"(sp), [fn] "r"(fn)
			 : "x30", "memory", "cc");
	return x0;
#else
#error "unsupported host architecture"
#endif
}

/*
 * Is a shadow stack (x86's CET, arm64's GCS) on for this thread?  The
 * kernel gives a CLONE_VM child without CLONE_VFORK a new, empty one, and
 * the worker, going on on the front's stack, would fault at its first
 * return.  Then the worker is a fork, as it used to be.
 */
static bool shadow_stack_on(void)
{
#if defined(__x86_64__)
	unsigned long features = 0;

	/* ARCH_SHSTK_STATUS, ARCH_SHSTK_SHSTK (Linux 6.6) */
	return rawsys(SYS_arch_prctl, 0x5005, (long)&features, 0, 0) == 0 && (features & 1);
#elif defined(__aarch64__)
	unsigned long status = 0;

	/* PR_GET_SHADOW_STACK_STATUS, PR_SHADOW_STACK_ENABLE (Linux 6.13) */
	return rawsys(SYS_prctl, 74, (long)&status, 0, 0) == 0 && (status & 1);
#endif
}

/* The front's own stack: the worker never touches it. */
static unsigned char front_stack[16384] __attribute__((aligned(16)));

/* The kernel's struct sigaction on both hosts (SA_RESTORER is defined on both). */
struct ksigaction {
	unsigned long handler, flags, restorer, mask;
};

/*
 * The front's life after the clone: wait, pass signals on, end as the
 * worker did.  Kernel calls only, and no sanitizer code, which keeps its
 * state in the thread-local storage the worker owns.  The signals it
 * waits for (relayed[], dumping[], SIGCHLD) are blocked from before the
 * clone; any other acts by its default action (the worker then hears of
 * its death), never by a handler that would run C code here: heapctl
 * installs none before this, and only ignores SIGPIPE.
 */
__attribute__((noreturn, no_stack_protector, no_sanitize("address", "undefined"))) static void
front_raw(long worker)
{
	unsigned long dumpset = 0, waitset = 1UL << (SIGCHLD - 1), one;
	struct ksigaction dfl = { 0 };
	long none[2] = { 0, 0 }, sig, own = 0;
	int st = 0;
	unsigned char info[128]; /* siginfo_t, unread */

	/* the kernel's sigset: what cli_keeper() blocked before the clone */
	for (size_t i = 0; i < NSIGS(dumping); i++)
		dumpset |= 1UL << (dumping[i] - 1);
	for (size_t i = 0; i < NSIGS(relayed); i++)
		waitset |= 1UL << (relayed[i] - 1);
	waitset |= dumpset;
	for (;;) {
		sig = rawsys(SYS_rt_sigtimedwait, (long)&waitset, (long)info, 0, 8);
		if (sig > 0 && sig != SIGCHLD) {
			if (dumpset & 1UL << (sig - 1)) {
				own = own ? own : sig;
				sig = SIGTERM;
			}
			rawsys(SYS_kill, worker, sig, 0, 0);
			continue;
		}
		if (rawsys(SYS_wait4, worker, (long)&st, WNOHANG, 0) == worker)
			break;
	}
	if (WIFEXITED(st) && !own)
		rawsys(SYS_exit_group, WEXITSTATUS(st), 0, 0, 0);
	/* the same death (the front's own signal first), without a second core file */
	sig = own ? own : WTERMSIG(st);
	rawsys(SYS_prlimit64, 0, RLIMIT_CORE, (long)none, 0);
	rawsys(SYS_rt_sigaction, sig, (long)&dfl, 0, 8);
	one = 1UL << (sig - 1);
	rawsys(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&one, 0, 8);
	rawsys(SYS_kill, rawsys(SYS_getpid, 0, 0, 0, 0), sig, 0, 0);
	for (;;)
		rawsys(SYS_exit_group, 128 + sig, 0, 0, 0);
}

/*
 * What the kernel would otherwise write for the front into the memory the
 * worker goes on using: at its exit, 0 into the thread-id word of the C
 * library's thread block (set_tid_address) and the owner-died bit into
 * robust mutexes on its list; while it runs, its CPU number into the rseq
 * area.  The front gives all three up before the clone (in one process,
 * if the clone fails, none is missed: heapctl joins no main thread and
 * locks no robust mutex, and glibc then asks the kernel for the CPU).  A
 * cleared thread id was seen: the C library keys recursive locks by it,
 * and a worker still holding one when the front was killed waited for
 * itself (the sanitizer build's leak check, in dl_iterate_phdr()).
 */
static void front_quiet(void)
{
	rawsys(SYS_set_tid_address, 0, 0, 0, 0);
	rawsys(SYS_set_robust_list, 0, 3 * sizeof(long), 0, 0);
#ifdef HAVE_RSEQ_AREA
	/* glibc registers its rseq area with 32 bytes, or __rseq_size if larger */
	if (__rseq_size)
		rawsys(SYS_rseq, (long)((char *)__builtin_thread_pointer() + __rseq_offset),
		       __rseq_size > 32 ? __rseq_size : 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
#endif
}

void cli_keeper(void)
{
	pid_t me = getpid(), worker;
	sigset_t set, old;

	sigemptyset(&set);
	for (size_t i = 0; i < NSIGS(relayed); i++)
		sigaddset(&set, relayed[i]);
	for (size_t i = 0; i < NSIGS(dumping); i++)
		sigaddset(&set, dumping[i]);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	front_quiet();
	worker = shadow_stack_on() ? -ENOSYS
				   : (pid_t)clone_vm_leave(front_stack + sizeof(front_stack), front_raw);
	if (worker < 0) {
		/* a shadow stack, or the clone refused (a seccomp filter, say): a fork */
		worker = fork();
		if (worker > 0)
			front_raw(worker);
		worker = worker < 0 ? -errno : 0;
	}
	if (worker == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* the front died before that: it was killed before anything began */
		if (getppid() != me)
			_exit(128 + SIGTERM);
		setpgid(0, 0);
		signal(SIGTTOU, SIG_IGN);
		signal(SIGTTIN, SIG_IGN);
	} else {
		errno = -worker;
		cli_log(HC_LOG_DEBUG, "no worker process: %m; heapctl runs in one process (its "
				      "SIGKILL may leave an interrupted epoll_wait an EINTR)");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
