// SPDX-License-Identifier: MIT
/*
 * jemalloc_hostile: odd targets for t_hostile.c, one per mode.
 *
 * Usage: jemalloc_hostile READY_FD CTL_FD REPLY_FD MODE
 *
 * The line protocol of vcommon.h; every mode answers "ping" (pong N, N a
 * progress counter) and "sigblk" (the thread's blocked mask, in hex).
 *
 * Modes:
 *   idle        main only, blocked in read() on CTL_FD
 *   threads     main plus one thread parked in read() ("tids" names it)
 *   inmalloc    one thread, which lives in malloc/free: it looks at CTL_FD
 *               (non-blocking) only every 4096 rounds
 *   sighandler  main, plus a worker in a malloc/free loop with a SIGUSR1
 *               handler that parks (read() on a pipe) when the signal
 *               interrupted jemalloc's code, and returns otherwise.
 *               "parked" says whether it is parked; "release" lets it go,
 *               and so does a SIGUSR2 to the worker, which needs no main
 *               thread (main may be waiting for a lock the handler holds)
 *   sighandler-alt  the same, the handler running on a sigaltstack of its
 *               own (mmap'ed, away from the thread's stack)
 *   after-exec  what "execsoon" turns the process into (see below)
 *
 * Commands, besides ping/sigblk/quit:
 *   tids                tids pid=P main=T other=T
 *   strict              the calling (main) thread enters SECCOMP_MODE_STRICT
 *   filter WHAT         a filter on every thread (TSYNC) for mmap: WHAT is
 *                       errno (EPERM), kill (kill the process), trap (SIGSYS,
 *                       counted by a handler: "sigsys"), skipped (kill for
 *                       syscall number -1 instead of mmap), or none (allow
 *                       all, deny only the unrelated syscall acct)
 *   execsoon US         a thread execve()s this program as "after-exec" US
 *                       microseconds from now; the new image answers ping
 *                       with "pong exec'd"
 *   exitsoon US         a thread calls exit_group(7) US microseconds from now
 *   leaderexit          the main thread leaves (pthread_exit); the other
 *                       thread takes over the protocol
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <jemalloc/jemalloc.h>

#include "vcommon.h"

static struct vfds fds;
static atomic_ulong progress, sigsys_count;
static atomic_int parked_flag;
static atomic_int release_flag;
static int park_pipe[2];
static pid_t tid_main, tid_other;
static char self_path[PATH_MAX];
static uintptr_t je_lo, je_hi;
static long action_us;
static bool after_exec;
static bool use_altstack;

static void serve(void);

/* jemalloc's text: the executable segment of the object holding mallctl. */
static int find_je(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t want = (uintptr_t)arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && want >= lo &&
		    want < lo + ph->p_memsz) {
			je_lo = lo;
			je_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static void *other_thread(void *arg)
{
	char c;

	(void)arg;
	__atomic_store_n(&tid_other, vgettid(), __ATOMIC_RELEASE);
	if (arg == (void *)1) {
		serve();
		return NULL;
	}
	while (read(park_pipe[0], &c, 1) < 0)
		;
	return NULL;
}

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
#if defined(__aarch64__)
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#endif
	char c;

	(void)sig;
	(void)si;
	if (pc < je_lo || pc >= je_hi)
		return;
	atomic_store(&parked_flag, 1);
	/* parked inside the handler, on top of the allocator's frames */
	while (!atomic_load(&release_flag) && read(park_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	atomic_store(&release_flag, 0);
	atomic_store(&parked_flag, 0);
}

/* Not SA_RESTART: the parked read() returns EINTR and sees the flag. */
static void on_usr2(int sig)
{
	(void)sig;
	atomic_store(&release_flag, 1);
}

static void churn(void)
{
	static void *slot[64];
	static unsigned int i;
	size_t sz = 16 + (i * 2654435761u) % 8192;

	free(slot[i % 64]);
	slot[i % 64] = malloc(sz);
	i++;
	atomic_fetch_add(&progress, 1);
}

static void *worker_thread(void *arg)
{
	struct sigaction sa;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (use_altstack) {
		stack_t ss = { .ss_size = 256 * 1024 };

		ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL))
			vdie("sigaltstack");
		sa.sa_flags |= SA_ONSTACK;
	}
	sigaction(SIGUSR1, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	__atomic_store_n(&tid_other, vgettid(), __ATOMIC_RELEASE);
	for (;;)
		churn();
	return NULL;
}

static void *exec_thread(void *arg)
{
	struct timespec ts = { action_us / 1000000, (action_us % 1000000) * 1000 };
	char r[16], c[16], p[16];

	(void)arg;
	nanosleep(&ts, NULL);
	snprintf(r, sizeof(r), "%d", fds.ready);
	snprintf(c, sizeof(c), "%d", fds.ctl);
	snprintf(p, sizeof(p), "%d", fds.reply);
	{
		char *const av[] = { self_path, r, c, p, (char *)"after-exec", NULL };

		execv(self_path, av);
	}
	vdie("execv");
	return NULL;
}

static void *exit_thread(void *arg)
{
	struct timespec ts = { action_us / 1000000, (action_us % 1000000) * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	syscall(SYS_exit_group, 7);
	return NULL;
}

static void on_sigsys(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigsys_count, 1);
}

#if defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#endif

static int install_filter(const char *what)
{
	uint32_t act;
	int nr = SYS_mmap;
	struct sigaction sa;

	if (!strcmp(what, "errno"))
		act = SECCOMP_RET_ERRNO | EPERM;
	else if (!strcmp(what, "kill"))
		act = SECCOMP_RET_KILL_PROCESS;
	else if (!strcmp(what, "trap"))
		act = SECCOMP_RET_TRAP;
	else if (!strcmp(what, "skipped")) {
		/* as an allowlist filter does: a syscall number of -1 is unknown, and kills */
		act = SECCOMP_RET_KILL_PROCESS;
		nr = -1;
	} else if (!strcmp(what, "memfd")) {
		/* no memfd_create (a sandbox's allowlist): heapctl's sampler needs another way in */
		act = SECCOMP_RET_ERRNO | EPERM;
		nr = SYS_memfd_create;
	} else if (!strcmp(what, "none")) {
		act = SECCOMP_RET_ERRNO | EPERM;
		nr = SYS_acct;
	} else {
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigsys;
	sigaction(SIGSYS, &sa, NULL);
	{
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr == SYS_memfd_create ? NATIVE_AUDIT_ARCH :
				 AUDIT_ARCH_X86_64, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, act),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return -1;
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
				    &prog);
	}
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg))
		vdie("pthread_create");
	pthread_detach(t);
}

static void sigblk(char *out, size_t sz)
{
	FILE *f = fopen("/proc/thread-self/status", "re");
	char line[256];

	snprintf(out, sz, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			snprintf(out, sz, "%.16s", line + 8);
	fclose(f);
}

/* One command; false on quit or EOF. */
static bool command(char *cmd)
{
	char *arg = strchr(cmd, ' ');
	char buf[64];

	if (arg)
		*arg++ = '\0';
	else
		arg = cmd + strlen(cmd);
	if (!strcmp(cmd, "ping")) {
		if (after_exec)
			vreply(fds.reply, "pong exec'd");
		else
			vreply(fds.reply, "pong %lu", atomic_load(&progress));
	} else if (!strcmp(cmd, "tids")) {
		vreply(fds.reply, "tids pid=%d main=%d other=%d", (int)getpid(), (int)tid_main,
		       (int)__atomic_load_n(&tid_other, __ATOMIC_ACQUIRE));
	} else if (!strcmp(cmd, "sigblk")) {
		sigblk(buf, sizeof(buf));
		vreply(fds.reply, "sigblk %s", buf);
	} else if (!strcmp(cmd, "sigsys")) {
		vreply(fds.reply, "sigsys %lu", atomic_load(&sigsys_count));
	} else if (!strcmp(cmd, "parked")) {
		vreply(fds.reply, "parked %d", atomic_load(&parked_flag));
	} else if (!strcmp(cmd, "release")) {
		if (vwrite_all(park_pipe[1], "r", 1))
			vdie("release");
		vreply(fds.reply, "release ok");
	} else if (!strcmp(cmd, "strict")) {
		vreply(fds.reply, "strict ok");
		/* from here on only read, write, _exit and sigreturn */
		syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
	} else if (!strcmp(cmd, "filter")) {
		if (install_filter(arg))
			vreply(fds.reply, "filter bad %s", strerror(errno));
		else
			vreply(fds.reply, "filter ok");
	} else if (!strcmp(cmd, "execsoon") || !strcmp(cmd, "exitsoon")) {
		action_us = strtol(arg, NULL, 10);
		start(cmd[1] == 'x' && cmd[2] == 'e' ? exec_thread : exit_thread, NULL);
		vreply(fds.reply, "%s ok", cmd);
	} else if (!strcmp(cmd, "leaderexit")) {
		vreply(fds.reply, "leaderexit ok");
		start(other_thread, (void *)1);
		pthread_exit(NULL);
	} else if (!strcmp(cmd, "quit")) {
		vreply(fds.reply, "bye");
		return false;
	} else {
		vreply(fds.reply, "error unknown command '%s'", cmd);
	}
	return true;
}

/* The protocol loop, with plain read(): the only syscalls strict mode allows. */
static void serve(void)
{
	static struct vline line;
	char cmd[512];

	for (;;) {
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), NULL);

		if (n < 0 || !command(cmd))
			syscall(SYS_exit_group, 0);
	}
}

/* Only thread, inside the allocator: commands are looked at between rounds. */
static void serve_inmalloc(void)
{
	static char buf[512];
	size_t len = 0;

	fcntl(fds.ctl, F_SETFL, fcntl(fds.ctl, F_GETFL) | O_NONBLOCK);
	for (;;) {
		ssize_t n;
		char *nl;

		for (int i = 0; i < 4096; i++)
			churn();
		n = read(fds.ctl, buf + len, sizeof(buf) - 1 - len);
		if (n == 0)
			syscall(SYS_exit_group, 0);
		if (n < 0)
			continue;
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (!command(buf))
				syscall(SYS_exit_group, 0);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 4 ? argv[4] : "idle";
	char c = 'R';
	ssize_t n;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	tid_main = vgettid();
	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n > 0)
		self_path[n] = '\0';
	if (pipe2(park_pipe, O_CLOEXEC))
		vdie("pipe2");
	dl_iterate_phdr(find_je, (void *)(uintptr_t)&mallctl);
	free(malloc(1)); /* jemalloc initialised before anyone looks */
	if (!strcmp(mode, "after-exec")) {
		after_exec = true;
		serve();
	}
	use_altstack = !strcmp(mode, "sighandler-alt");
	if (!strcmp(mode, "threads") || !strcmp(mode, "sighandler") || use_altstack) {
		start(!strcmp(mode, "threads") ? other_thread : worker_thread, NULL);
		while (!__atomic_load_n(&tid_other, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	if (!strcmp(mode, "inmalloc"))
		serve_inmalloc();
	serve();
	return 0;
}
