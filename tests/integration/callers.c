// SPDX-License-Identifier: MIT
/*
 * Who calls ptrace(2) in heapctl: heapctl runs under a tracer of the
 * harness's own, which follows its threads and children, stops each one
 * at the entry of every ptrace(2) and unwinds it (libunwind, as debuggers
 * do) to the first frame in heapctl's executable.  heapctl links its
 * libraries statically, so a library's own call (libunwind reading
 * registers, say) shows up as a frame of heapctl that is no wrapper.
 *
 * The tracer is a process of its own, so that waiting for any child
 * never reaps one of the harness's.  It writes its findings to a pipe:
 * "calls N", "exit STATUS" and one "bad STACK" per offending call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libunwind-ptrace.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"

/* Is pc in an executable mapping of the file at exe, in tid's process? */
static bool in_exe(pid_t tid, const char *exe, unsigned long pc)
{
	char path[64], line[PATH_MAX + 128];
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!in && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8], *name = strchr(line, '/');

		if (!name || sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x')
			continue;
		name[strcspn(name, "\n")] = 0;
		in = pc >= lo && pc < hi && !strcmp(name, exe);
	}
	fclose(f);
	return in;
}

/*
 * tid stopped at the entry of ptrace(2): is the first frame of heapctl's
 * own one of ptrace.c's wrappers?  Else the stack goes to out.
 */
static void judge(pid_t tid, const char *exe, unw_addr_space_t as, FILE *out)
{
	char stack[1024] = "", name[128];
	size_t used = 0;
	void *ui = _UPT_create(tid);
	unw_cursor_t c;
	bool ok = false;

	if (!ui || unw_init_remote(&c, as, ui) < 0) {
		fprintf(out, "bad thread %d: cannot unwind\n", tid);
		if (ui)
			_UPT_destroy(ui);
		return;
	}
	for (int depth = 0; depth < 64; depth++) {
		unw_word_t ip, off;
		bool own;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			break;
		if (unw_get_proc_name(&c, name, sizeof(name), &off) < 0)
			snprintf(name, sizeof(name), "0x%lx", (unsigned long)ip);
		own = in_exe(tid, exe, ip);
		used += (size_t)snprintf(stack + used, sizeof(stack) - used, "%s%s%s",
					 depth ? " < " : "", own ? "" : "~", name);
		if (used >= sizeof(stack))
			used = sizeof(stack) - 1;
		if (own) {
			ok = !strncmp(name, "ptrace_", 7);
			break;
		}
		if (unw_step(&c) <= 0)
			break;
	}
	if (!ok)
		fprintf(out, "bad thread %d: %s\n", tid, stack);
	_UPT_destroy(ui);
}

/* The tracer: runs heapctl's argv, reports to fd out; never returns. */
static void tracer(char *const argv[], const char *log, int outfd)
{
	unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
	FILE *out = fdopen(outfd, "w");
	char exe[PATH_MAX];
	unsigned int calls = 0;
	bool no_info = false;
	int st, hc_status = -1;
	pid_t hc, w;

	if (!out || !as || !realpath(argv[0], exe))
		_exit(3);
	/* a group of its own, as every child of the harness's (kill_wait()) */
	setpgid(0, 0);
	hc = fork();
	if (hc == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 ||
		    putenv((char *)asan_no_leak_check()))
			_exit(127);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 || raise(SIGSTOP))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	if (hc < 0 || waitpid(hc, &st, __WALL) != hc || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, hc, NULL,
		   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE |
				  PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
				  PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) < 0 ||
	    ptrace(PTRACE_SYSCALL, hc, NULL, NULL) < 0) {
		fprintf(out, "bad cannot trace heapctl: %s\n", strerror(errno));
		fclose(out);
		_exit(0);
	}
	while ((w = waitpid(-1, &st, __WALL)) > 0) {
		struct __ptrace_syscall_info si;
		int sig = 0;

		if (!WIFSTOPPED(st)) {
			if (w == hc)
				hc_status = st;
			continue;
		}
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, w, (void *)sizeof(si), &si) <= 0)
				no_info = true;
			else if (si.op == PTRACE_SYSCALL_INFO_ENTRY && si.entry.nr == SYS_ptrace) {
				calls++;
				judge(w, exe, as, out);
			}
		} else if (!(st >> 16) && WSTOPSIG(st) != SIGSTOP) {
			/* a signal of heapctl's (SIGCHLD from its own tracee, say): pass it on */
			sig = WSTOPSIG(st);
		}
		/* else an event, or a new thread's or child's first stop */
		ptrace(PTRACE_SYSCALL, w, NULL, (void *)(long)sig);
	}
	if (no_info)
		fprintf(out, "skip this kernel has no PTRACE_GET_SYSCALL_INFO (Linux 5.3)\n");
	fprintf(out, "calls %u\nexit %d\n", calls, hc_status);
	fclose(out);
	_exit(0);
}

int ptrace_callers(const char *const args[], unsigned int *calls, char *bad, size_t badlen,
		   char *why, size_t whylen)
{
	char *argv[32], log[400], line[1200], skip[sizeof(line)] = "";
	int p[2], st, hc_status = -1;
	size_t n = 0;
	bool done = false;
	pid_t pid;
	FILE *in;

	*calls = 0;
	bad[0] = 0;
	argv[n++] = (char *)cfg.heapctl;
	for (size_t i = 0; args[i] && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/ptrace-callers.out", cfg.tmpdir);
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		tracer(argv, log, p[1]);
	}
	close(p[1]);
	if (pid > 0)
		setpgid(pid, pid);
	if (pid < 0) {
		close(p[0]);
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	track_pid(pid);
	in = fdopen(p[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "bad ", 4) && !bad[0])
			snprintf(bad, badlen, "%s", line + 4);
		else if (!strncmp(line, "skip ", 5))
			snprintf(skip, sizeof(skip), "%s", line + 5);
		else if (sscanf(line, "calls %u", calls) == 1)
			continue;
		else if (sscanf(line, "exit %d", &hc_status) == 1)
			done = true;
	}
	if (in)
		fclose(in);
	else
		close(p[0]);
	if (wait_pid(pid, &st, HC_TIMEOUT_S * 1000) < 0)
		kill_wait(pid);
	untrack_pid(pid);
	if (skip[0]) {
		snprintf(why, whylen, "%s", skip);
		return 1;
	}
	if (!done && !bad[0]) {
		snprintf(why, whylen, "the tracer of heapctl stopped without a report");
		return -1;
	}
	if (done && !(WIFEXITED(hc_status) && WEXITSTATUS(hc_status) == 0)) {
		snprintf(why, whylen, "heapctl %s under the tracer: status 0x%x (output in %s)",
			 args[0], hc_status, log);
		return -1;
	}
	unlink(log);
	return 0;
}
