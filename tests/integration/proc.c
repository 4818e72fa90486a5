// SPDX-License-Identifier: MIT
/*
 * Process plumbing for the harness: spawn, wait with a deadline, run
 * heapctl and capture what it says, and read the kernel's view of a
 * target from /proc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "itest.h"

unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

long now_ms(void)
{
	return (long)(mono_ns() / 1000000ull);
}

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

const char *strcasestr_(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	if (!hay)
		return NULL;
	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return hay;
	return NULL;
}

/* Child side of spawn(): never returns. */
static void child_exec(const char *const argv[], const struct spawn_opts *o)
{
	int devnull = open("/dev/null", O_RDWR);
	int fds[3], i, top = 3;
	sigset_t none;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (o->ignore_sig)
		signal(o->ignore_sig, SIG_IGN); /* an ignored signal survives exec */
	fds[0] = o->in_fd >= 0 ? o->in_fd : devnull;
	fds[1] = o->out_fd >= 0 ? o->out_fd : devnull;
	fds[2] = o->err_fd >= 0 ? o->err_fd : devnull;
	/* Move everything we keep above the range we are about to fill. */
	for (i = 0; i < 3; i++)
		fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64);
	{
		int pass[16];

		for (i = 0; i < o->npass && i < 16; i++)
			pass[i] = fcntl(o->pass_fds[i], F_DUPFD_CLOEXEC, 64);
		for (i = 0; i < 3; i++)
			dup2(fds[i], i);
		for (i = 0; i < o->npass && i < 16; i++)
			dup2(pass[i], top + i);
		top += o->npass;
	}
	syscall(SYS_close_range, (unsigned int)top, ~0U, 0);
	if (o->cwd && chdir(o->cwd)) {
		dprintf(2, "itest: chdir %s: %s\n", o->cwd, strerror(errno));
		_exit(127);
	}
	if (o->unsetenv_names)
		for (i = 0; o->unsetenv_names[i]; i++)
			unsetenv(o->unsetenv_names[i]);
	if (o->setenv_kv)
		for (i = 0; o->setenv_kv[i]; i++)
			putenv((char *)o->setenv_kv[i]);
	execvp(argv[0], (char *const *)argv);
	dprintf(2, "itest: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

pid_t spawn(const char *const argv[], const struct spawn_opts *o, char *why, size_t whysz)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		snprintf(why, whysz, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child_exec(argv, o);
	setpgid(pid, pid);
	track_pid(pid);
	return pid;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int wait_pid(pid_t pid, int *status, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	int pfd = pidfd_open_(pid);
	int st = 0;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		long left;

		if (r == pid) {
			if (pfd >= 0)
				close(pfd);
			untrack_pid(pid);
			if (status)
				*status = st;
			return 0;
		}
		if (r < 0 && errno != EINTR) {
			if (pfd >= 0)
				close(pfd);
			untrack_pid(pid);
			if (status)
				*status = 0;
			return 0;
		}
		left = end - now_ms();
		if (left <= 0) {
			if (pfd >= 0)
				close(pfd);
			return -1;
		}
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			poll(&p, 1, (int)(left < 1000 ? left : 1000));
		} else {
			sleep_ms(left < 5 ? left : 5);
		}
	}
}

void kill_wait(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	if (wait_pid(pid, NULL, 10000))
		fprintf(stderr, "itest: pid %d does not die\n", (int)pid);
}

pid_t tracer_start(pid_t tid, int *hold)
{
	int p[2], q[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (pipe2(q, O_CLOEXEC)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		close(p[1]);
		close(q[0]);
		c = ptrace(PTRACE_SEIZE, tid, 0, 0) ? 'E' : 'S';
		if (write(q[1], &c, 1) != 1)
			_exit(1);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	close(q[1]);
	if (pid > 0) {
		setpgid(pid, pid);
		track_pid(pid);
	}
	if (pid < 0 || read(q[0], &c, 1) != 1 || c != 'S') {
		close(p[1]);
		close(q[0]);
		kill_wait(pid);
		return -1;
	}
	close(q[0]);
	*hold = p[1];
	return pid;
}

void tracer_stop(pid_t pid, int hold)
{
	if (hold >= 0)
		close(hold);
	if (pid > 0 && wait_pid(pid, NULL, 5000))
		kill_wait(pid);
}

/* ---- running heapctl -------------------------------------------------- */

static void cmdline_of(char *out, size_t sz, const char *const argv[])
{
	size_t len = 0;
	int i;

	out[0] = '\0';
	for (i = 0; argv[i] && len + 2 < sz; i++) {
		const char *b = strrchr(argv[i], '/');
		const char *s = i == 0 && b ? b + 1 : argv[i];
		int n = snprintf(out + len, sz - len, "%s%s", i ? " " : "", s);

		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (len >= sz)
		out[sz - 1] = '\0';
}

/*
 * Start argv with its stdout and stderr read by hc_finish().  heapctl
 * itself gets TMPDIR set to the scratch directory when the suite was given
 * none: what -v keeps there (leak's two profiles) goes with the scratch.
 */
static int start_in(struct hproc *hp, const char *cwd, const char *const argv[], bool heapctl)
{
	struct spawn_opts o = { .cwd = cwd, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	static const char *const unset[] = { "MALLOC_CONF", NULL };
	static char tmpdir_kv[sizeof(cfg.tmpdir) + 8];
	const char *env[] = { tmpdir_kv, NULL };
	int po[2], pe[2];
	char why[256];

	if (heapctl && !getenv("TMPDIR") && cfg.tmpdir[0]) {
		snprintf(tmpdir_kv, sizeof(tmpdir_kv), "TMPDIR=%s", cfg.tmpdir);
		o.setenv_kv = env;
	}

	memset(hp, 0, sizeof(*hp));
	hp->pid = -1;
	hp->out = hp->err = -1;
	cmdline_of(hp->cmdline, sizeof(hp->cmdline), argv);
	if (pipe2(po, O_CLOEXEC))
		return -1;
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	o.out_fd = po[1];
	o.err_fd = pe[1];
	o.unsetenv_names = unset;
	hp->t0_ms = now_ms();
	hp->pid = spawn(argv, &o, why, sizeof(why));
	close(po[1]);
	close(pe[1]);
	hp->out = po[0];
	hp->err = pe[0];
	return hp->pid < 0 ? -1 : 0;
}

static void buf_add(char **b, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (!*b || *len + n + 1 > *cap) {
		size_t nc = (*cap ? *cap * 2 : 4096);
		char *nb;

		while (nc < *len + n + 1)
			nc *= 2;
		nb = realloc(*b, nc);
		if (!nb) {
			fputs("itest: out of memory\n", stderr);
			abort();
		}
		*b = nb;
		*cap = nc;
	}
	memcpy(*b + *len, p, n);
	*len += n;
	(*b)[*len] = '\0';
}

/* Collects the borrow lines printed with -v. */
static void note_borrows(const char *err)
{
	const char *p = err;

	while (p && (p = strstr(p, "borrowed tid "))) {
		long tid, us;

		if (sscanf(p, "borrowed tid %ld for %ld us", &tid, &us) == 2)
			t_borrow_seen(tid, us);
		p++;
	}
}

void hc_finish(struct hproc *hp, struct hres *r, int timeout_s)
{
	size_t ocap = 0, ecap = 0;
	long end = hp->t0_ms + timeout_s * 1000L;

	memset(r, 0, sizeof(*r));
	snprintf(r->cmdline, sizeof(r->cmdline), "%s", hp->cmdline);
	buf_add(&r->out, &r->outlen, &ocap, "", 0);
	buf_add(&r->err, &r->errlen, &ecap, "", 0);
	if (hp->pid < 0) {
		r->exec_failed = true;
		r->status = 127 << 8;
		goto out;
	}
	while (hp->out >= 0 || hp->err >= 0) {
		struct pollfd p[2] = {
			{ .fd = hp->out, .events = POLLIN },
			{ .fd = hp->err, .events = POLLIN },
		};
		long left = end - now_ms();
		char buf[65536];
		int i;

		if (left <= 0) {
			r->timed_out = true;
			break;
		}
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n > 0) {
				if (i == 0)
					buf_add(&r->out, &r->outlen, &ocap, buf, (size_t)n);
				else
					buf_add(&r->err, &r->errlen, &ecap, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(p[i].fd);
				if (i == 0)
					hp->out = -1;
				else
					hp->err = -1;
			}
		}
	}
	if (!r->timed_out) {
		long left = end - now_ms();

		if (wait_pid(hp->pid, &r->status, (int)(left > 0 ? left : 1)))
			r->timed_out = true;
	}
	if (r->timed_out) {
		kill_wait(hp->pid);
		r->status = SIGKILL;
	}
out:
	if (hp->out >= 0)
		close(hp->out);
	if (hp->err >= 0)
		close(hp->err);
	hp->out = hp->err = -1;
	r->ms = now_ms() - hp->t0_ms;
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127 && strstr(r->err, "itest: exec"))
		r->exec_failed = true;
	note_borrows(r->err);
}

int hc_startv(struct hproc *hp, const char *cwd, const char *const args[])
{
	const char *argv[64];
	int n = 0, i;

	argv[n++] = cfg.heapctl;
	/* heapctl [-v...] <command> [opts]: global flags go first. */
	if (cfg.vflag && args[0])
		argv[n++] = cfg.vflag;
	for (i = 0; args[i] && n < 60; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return start_in(hp, cwd, argv, true);
}

void hc_runv(struct hres *r, const char *cwd, const char *const args[])
{
	struct hproc hp;

	hc_startv(&hp, cwd, args);
	hc_finish(&hp, r, HC_TIMEOUT_S);
}

static void collect_args(const char **args, int max, va_list ap)
{
	int n = 0;
	const char *a;

	while ((a = va_arg(ap, const char *)) && n < max - 1)
		args[n++] = a;
	args[n] = NULL;
}

void hc_run(struct hres *r, const char *cwd, ...)
{
	const char *args[48];
	va_list ap;

	va_start(ap, cwd);
	collect_args(args, 48, ap);
	va_end(ap);
	hc_runv(r, cwd, args);
}

void run_prog(struct hres *r, const char *const argv[], int timeout_s)
{
	struct hproc hp;

	start_in(&hp, NULL, argv, false);
	hc_finish(&hp, r, timeout_s);
}

int prog_start(struct hproc *hp, const char *const argv[])
{
	return start_in(hp, NULL, argv, false);
}

unsigned int heapctl_children(pid_t parent, pid_t *first)
{
	unsigned int n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d))) {
		char path[64], buf[512], comm[32], st = 0;
		int pid = atoi(de->d_name), ppid = 0;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%*d (%31[^)]) %c %d", comm, &st, &ppid) == 3 && ppid == parent &&
		    st != 'Z' && !strcmp(comm, "heapctl") && !n++ && first)
			*first = pid;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

pid_t hp_worker(const struct hproc *hp)
{
	char path[64];
	pid_t found = hp->pid;
	FILE *c;

	/* its children, at once where the kernel lists them (CONFIG_PROC_CHILDREN) */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)hp->pid, (int)hp->pid);
	c = fopen(path, "re");
	if (c) {
		int pid = 0;

		if (fscanf(c, "%d", &pid) == 1 && pid > 0)
			found = pid;
		fclose(c);
		if (found != hp->pid)
			return found;
	}
	heapctl_children(hp->pid, &found);
	return found;
}

bool pid_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return true;
	return si.si_pid != 0;
}

void hres_free(struct hres *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

int hres_exit(const struct hres *r)
{
	if (r->timed_out || !WIFEXITED(r->status))
		return -1;
	return WEXITSTATUS(r->status);
}

/* First line of s, trimmed to fit. */
static void first_line(char *out, size_t sz, const char *s)
{
	size_t n;

	while (*s == '\n')
		s++;
	n = strcspn(s, "\n");
	if (n >= sz)
		n = sz - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* The start of the line of heapctl's stderr that says "error:", or NULL. */
static const char *error_line(const struct hres *r)
{
	const char *e = strstr(r->err, "error:");

	while (e && e > r->err && e[-1] != '\n')
		e--;
	return e;
}

const char *hres_desc(const struct hres *r)
{
	static char buf[1024];
	char line[400];
	const char *e;

	if (r->exec_failed) {
		first_line(line, sizeof(line), r->err);
		snprintf(buf, sizeof(buf), "`%s` could not run (%s)", r->cmdline, line);
		return buf;
	}
	if (r->timed_out) {
		snprintf(buf, sizeof(buf), "`%s` hung, killed after %d s", r->cmdline, HC_TIMEOUT_S);
		return buf;
	}
	/* Prefer the error line over -v chatter. */
	e = error_line(r);
	first_line(line, sizeof(line), e ? e : r->err);
	if (WIFSIGNALED(r->status))
		snprintf(buf, sizeof(buf), "`%s` killed by signal %d; stderr: %s", r->cmdline,
			 WTERMSIG(r->status), line);
	else
		snprintf(buf, sizeof(buf), "`%s` exit %d; stderr: %s", r->cmdline,
			 WEXITSTATUS(r->status), line[0] ? line : "(empty)");
	return buf;
}

static const char *crash_of(const struct hres *r)
{
	static const char *const marks[] = {
		"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
		"runtime error:", "stack smashing", "double free", "free(): ",
		"malloc(): ", "Segmentation fault",
	};
	size_t i;

	if (WIFSIGNALED(r->status) && !r->timed_out)
		return "crashed";
	for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(r->err, marks[i]))
			return marks[i];
	return NULL;
}

static void note_crash(const struct hres *r)
{
	static const char *const starts[] = { "ERROR: ", "runtime error:", "SUMMARY:" };
	const char *p = NULL;
	size_t i;
	int lines;

	for (i = 0; i < sizeof(starts) / sizeof(starts[0]) && !p; i++)
		p = strstr(r->err, starts[i]);
	if (!p)
		return;
	while (p > r->err && p[-1] != '\n')
		p--;
	/* The headline and the top frames are enough to file it. */
	for (lines = 0; *p && lines < 8; lines++) {
		size_t l = strcspn(p, "\n");

		t_note("  %.*s", (int)(l < 200 ? l : 200), p);
		p += l + (p[l] ? 1 : 0);
	}
}

const char *hres_crash(struct hres *r)
{
	const char *c = crash_of(r);

	if (c && !r->crash_noted) {
		r->crash_noted = true;
		note_crash(r);
	}
	return c;
}

/* The -v lines heapctl wrote before its error (the last 6), as notes: what led to it. */
static void note_before_error(const struct hres *r)
{
	const char *e = error_line(r), *start[6];
	size_t n = 0;

	if (!e)
		return;
	for (const char *l = r->err; l < e;) {
		const char *nl = memchr(l, '\n', (size_t)(e - l));

		start[n++ % 6] = l;
		l = nl ? nl + 1 : e;
	}
	for (size_t i = n > 6 ? n - 6 : 0; i < n; i++) {
		const char *l = start[i % 6], *nl = memchr(l, '\n', (size_t)(e - l));
		size_t len = nl ? (size_t)(nl - l) : (size_t)(e - l);

		t_note("  %.*s", (int)(len > 300 ? 300 : len), l);
	}
}

int hc_expect(struct hres *r, int want, ...)
{
	const char *args[48];
	const char *crash;
	va_list ap;

	va_start(ap, want);
	collect_args(args, 48, ap);
	va_end(ap);
	hc_runv(r, NULL, args);
	crash = hres_crash(r);
	if (crash) {
		t_fail("%s [%s]", hres_desc(r), crash);
		return -1;
	}
	if (hres_exit(r) != want) {
		t_fail("%s (wanted exit %d)", hres_desc(r), want);
		note_before_error(r);
		return -1;
	}
	return 0;
}

/* ---- /proc ----------------------------------------------------------- */

char *read_file_str(const char *path)
{
	size_t len = 0, cap = 0;
	char *b = NULL, buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf_add(&b, &len, &cap, "", 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		buf_add(&b, &len, &cap, buf, (size_t)n);
	close(fd);
	return b;
}

static int list_tasks(pid_t pid, pid_t *out, int max)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max)
		if (isdigit((unsigned char)de->d_name[0]))
			out[n++] = (pid_t)atoi(de->d_name);
	closedir(d);
	return n;
}

int task_status(pid_t pid, pid_t tid, char *state, long *tracer)
{
	char path[96];
	char *s, *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	s = read_file_str(path);
	if (!s)
		return -1;
	*state = '?';
	*tracer = -1;
	p = strstr(s, "\nState:");
	if (p)
		sscanf(p, "\nState: %c", state);
	p = strstr(s, "\nTracerPid:");
	if (p)
		sscanf(p, "\nTracerPid: %ld", tracer);
	free(s);
	return 0;
}

int proc_check_tasks(pid_t pid, bool stopped, char *why, size_t whysz)
{
	pid_t tids[512];
	int n = list_tasks(pid, tids, 512), i;

	if (n <= 0) {
		snprintf(why, whysz, "pid %d is gone", (int)pid);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char st;
		long tr;

		if (task_status(pid, tids[i], &st, &tr))
			continue;
		if (tr != 0) {
			snprintf(why, whysz, "task %d still has TracerPid %ld", (int)tids[i], tr);
			return -1;
		}
		if (st == 't') {
			snprintf(why, whysz, "task %d left in tracing stop (state t)", (int)tids[i]);
			return -1;
		}
		if (st == 'Z' || st == 'X') {
			snprintf(why, whysz, "task %d is dead (state %c)", (int)tids[i], st);
			return -1;
		}
		if (stopped && st != 'T') {
			snprintf(why, whysz, "task %d is in state %c, expected T (stopped)",
				 (int)tids[i], st);
			return -1;
		}
		if (!stopped && st == 'T') {
			snprintf(why, whysz, "task %d left stopped (state T)", (int)tids[i]);
			return -1;
		}
	}
	return 0;
}

bool proc_all_stopped(pid_t pid)
{
	pid_t tids[512];
	int n = list_tasks(pid, tids, 512), i;

	if (n <= 0)
		return false;
	for (i = 0; i < n; i++) {
		char st;
		long tr;

		if (task_status(pid, tids[i], &st, &tr) || st != 'T')
			return false;
	}
	return true;
}

long proc_task_syscall(pid_t pid, pid_t tid)
{
	char path[96];
	char *s;
	long nr = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	s = read_file_str(path);
	if (!s)
		return -1;
	if (isdigit((unsigned char)s[0]))
		nr = strtol(s, NULL, 10);
	free(s);
	return nr;
}

/* Syscall numbers this architecture lacks (aarch64: no epoll_wait, nanosleep, poll). */
#ifdef SYS_epoll_wait
#define NR_EPOLL_WAIT SYS_epoll_wait
#else
#define NR_EPOLL_WAIT (-3L)
#endif
#ifdef SYS_nanosleep
#define NR_NANOSLEEP SYS_nanosleep
#else
#define NR_NANOSLEEP (-3L)
#endif
#ifdef SYS_poll
#define NR_POLL SYS_poll
#else
#define NR_POLL (-3L)
#endif

const long nrs_read[] = { SYS_read, NR_END };
/* restart_syscall: a nanosleep the kernel resumes with the time left */
const long nrs_sleep[] = { NR_NANOSLEEP, SYS_clock_nanosleep, SYS_restart_syscall, NR_END };
const long nrs_epoll[] = { NR_EPOLL_WAIT, SYS_epoll_pwait, 441 /* epoll_pwait2 */, NR_END };
const long nrs_poll[] = { NR_POLL, SYS_ppoll, NR_END };
const long nrs_futex[] = { SYS_futex, NR_END };

bool nr_in(long nr, const long *set)
{
	for (; *set != NR_END; set++)
		if (nr == *set)
			return true;
	return false;
}

int proc_wait_syscall(pid_t pid, pid_t tid, const long *set, long timeout_ms, long *last_nr)
{
	long end = now_ms() + timeout_ms, nr = -1;

	for (;;) {
		nr = proc_task_syscall(pid, tid);
		if (nr_in(nr, set) || now_ms() >= end)
			break;
		sleep_ms(2);
	}
	if (last_nr)
		*last_nr = nr;
	return nr_in(nr, set) ? 0 : -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Joins lines (sorted) into one malloc'ed string. */
static char *join_sorted(char **lines, size_t n)
{
	size_t len = 0, cap = 0, i;
	char *b = NULL;

	qsort(lines, n, sizeof(*lines), cmp_str);
	buf_add(&b, &len, &cap, "", 0);
	for (i = 0; i < n; i++) {
		buf_add(&b, &len, &cap, lines[i], strlen(lines[i]));
		buf_add(&b, &len, &cap, "\n", 1);
		free(lines[i]);
	}
	return b;
}

char *proc_fd_set(pid_t pid)
{
	char path[64], lpath[384], target[PATH_MAX];
	char *lines[1024];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return NULL;
	while ((de = readdir(d)) && n < 1024) {
		ssize_t l;

		if (de->d_name[0] == '.')
			continue;
		snprintf(lpath, sizeof(lpath), "%s/%s", path, de->d_name);
		l = readlink(lpath, target, sizeof(target) - 1);
		if (l < 0)
			continue;
		target[l] = '\0';
		if (asprintf(&lines[n], "%s -> %s", de->d_name, target) > 0)
			n++;
	}
	closedir(d);
	return join_sorted(lines, n);
}

char *proc_odd_maps(pid_t pid, bool with_none)
{
	char path[64];
	char *s, *line, *save = NULL;
	char *lines[4096];
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	s = read_file_str(path);
	if (!s)
		return NULL;
	for (line = strtok_r(s, "\n", &save); line && n < 4096;
	     line = strtok_r(NULL, "\n", &save)) {
		char range[64], perms[8];
		unsigned long inode;
		int off = 0;

		if (sscanf(line, "%63s %7s %*x %*x:%*x %lu %n", range, perms, &inode, &off) < 3)
			continue;
		if (inode != 0 || (off && line[off] == '['))
			continue;
		if (perms[2] == 'x' || (with_none && !strcmp(perms, "---p")))
			if (asprintf(&lines[n], "%s %s%s%s", range, perms, off ? " " : "",
				     off ? line + off : "") > 0)
				n++;
	}
	free(s);
	return join_sorted(lines, n);
}

char *lines_missing(const char *base, const char *now)
{
	size_t len = 0, cap = 0;
	char *b = NULL;
	const char *p = now;

	buf_add(&b, &len, &cap, "", 0);
	while (p && *p) {
		size_t l = strcspn(p, "\n");
		const char *q = base;
		bool found = false;

		while (q && *q) {
			size_t ql = strcspn(q, "\n");

			if (ql == l && !strncmp(q, p, l)) {
				found = true;
				break;
			}
			q += ql + (q[ql] ? 1 : 0);
		}
		if (!found) {
			buf_add(&b, &len, &cap, p, l);
			buf_add(&b, &len, &cap, "; ", 2);
		}
		p += l + (p[l] ? 1 : 0);
	}
	return b;
}

bool file_starts_with(const char *path, const char *prefix, char *why, size_t whysz)
{
	char buf[64] = "";
	size_t want = strlen(prefix);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, whysz, "%s: %s", path, strerror(errno));
		return false;
	}
	n = read(fd, buf, want < sizeof(buf) - 1 ? want : sizeof(buf) - 1);
	close(fd);
	if (n < 0 || (size_t)n < want || memcmp(buf, prefix, want)) {
		size_t i;

		for (i = 0; i < (n > 0 ? (size_t)n : 0); i++)
			if (!isprint((unsigned char)buf[i]))
				buf[i] = '.';
		buf[n > 0 ? n : 0] = '\0';
		snprintf(why, whysz, "%s starts with '%s', expected '%s'", path, buf, prefix);
		return false;
	}
	return true;
}

bool find_in_path(const char *prog, char *out, size_t outsz)
{
	const char *path = getenv("PATH");
	char *dup, *dir, *save = NULL;
	bool found = false;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
	dup = strdup(path);
	if (!dup)
		return false;
	for (dir = strtok_r(dup, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, outsz, "%s/%s", dir, prog);
		if (!access(out, X_OK)) {
			found = true;
			break;
		}
	}
	free(dup);
	return found;
}

/* A TCP port on 127.0.0.1 that nobody listens on right now, or -1. */
int loopback_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

bool hp_err_until(struct hproc *hp, const char *needle, char *buf, size_t len, long timeout_ms)
{
	size_t have = strlen(buf);

	for (long end = now_ms() + timeout_ms; now_ms() < end;) {
		struct pollfd p = { .fd = hp->err, .events = POLLIN };
		ssize_t n;

		if (strstr(buf, needle))
			return true;
		if (have + 1 >= len) {
			/* keep the later half: the needle may straddle the cut */
			memmove(buf, buf + have / 2, have - have / 2 + 1);
			have -= have / 2;
		}
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(hp->err, buf + have, len - 1 - have);
		if (n <= 0)
			return false;
		have += (size_t)n;
		buf[have] = '\0';
	}
	return strstr(buf, needle) != NULL;
}

bool wait_exec(pid_t pid, const char *path, long timeout_ms)
{
	char want[PATH_MAX], link[64], exe[PATH_MAX];

	if (!realpath(path, want))
		snprintf(want, sizeof(want), "%s", path);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (long end = now_ms() + timeout_ms;; usleep(100)) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		if (n > 0) {
			exe[n] = '\0';
			if (!strcmp(exe, want))
				return true;
		}
		if (now_ms() >= end || pid_exited(pid))
			return false;
	}
}

pid_t fork_exited(void)
{
	pid_t z = fork();

	if (z == 0)
		_exit(0);
	if (z < 0)
		t_fail("fork: %s", strerror(errno));
	else
		wait_exited(z, 5000);
	return z;
}

bool wait_exited(pid_t pid, long ms)
{
	for (long end = now_ms() + ms; !pid_exited(pid) && now_ms() < end;)
		sleep_ms(1);
	return pid_exited(pid);
}

const char *asan_no_leak_check(void)
{
	static char env[512];
	const char *was = getenv("ASAN_OPTIONS");

	snprintf(env, sizeof(env), "ASAN_OPTIONS=%s%sdetect_leaks=0", was ? was : "",
		 was ? ":" : "");
	return env;
}

int count_str(const char *s, const char *needle)
{
	int n = 0;

	while (s && (s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}
