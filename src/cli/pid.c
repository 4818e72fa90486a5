// SPDX-License-Identifier: MIT
/*
 * pid.c: what -p and --tid name, checked before a command does anything.
 *
 * -p takes a pid or, like pidof, a process name.  Before a command runs,
 * the process is checked for what would otherwise fail later with a
 * message about something else: a kernel thread, a zombie, a thread id
 * given for a process id, a --tid of another process.  Each gets its own
 * message and a hint that names the fix.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* include/linux/sched.h: the task is a kernel thread. */
#define PF_KTHREAD 0x00200000ul

static unsigned long pid_max(void)
{
	unsigned long v = 4194304; /* PID_MAX_LIMIT on 64-bit */
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return v;
}

int cli_parse_id(const char *s, const char *what, pid_t *out, char *why, size_t len)
{
	unsigned long max = pid_max(), v;
	const char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++)
		;
	if (!*s || *p) {
		snprintf(why, len, "invalid %s '%s' (expected a number)", what, s);
		return -1;
	}
	/* Digits only: too many of them is a range problem, not a syntax one. */
	if (cli_parse_uint(s, ULONG_MAX, &v) || v >= max) {
		snprintf(why, len, "%s %s is out of range: %ss here go up to %lu "
			 "(/proc/sys/kernel/pid_max)", what, s, what, max - 1);
		return -1;
	}
	if (v == 0) {
		snprintf(why, len, "invalid %s 0 (%ss start at 1)", what, what);
		return -1;
	}
	*out = (pid_t)v;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* "Name:", "State:", "Tgid:", "PPid:" of /proc/PATH/status. */
struct pstatus {
	char name[64];
	char state;
	pid_t tgid, ppid;
};

static int read_status(const char *dir, struct pstatus *ps)
{
	char path[96], buf[4096], *line;

	memset(ps, 0, sizeof(*ps));
	snprintf(path, sizeof(path), "%s/status", dir);
	if (cli_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, "Name:\t", 6))
			snprintf(ps->name, sizeof(ps->name), "%.*s", (int)strcspn(line + 6, "\n"),
				 line + 6);
		else if (!strncmp(line, "State:\t", 7))
			ps->state = line[7];
		else if (!strncmp(line, "Tgid:\t", 6))
			ps->tgid = (pid_t)atoi(line + 6);
		else if (!strncmp(line, "PPid:\t", 6))
			ps->ppid = (pid_t)atoi(line + 6);
	}
	return 0;
}

bool cli_is_kthread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cli_read_small(path, buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return false;
	/* comm may hold anything; after ')': state ppid pgrp session tty_nr tpgid flags */
	for (i = 0; i < 7 && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		flags = strtoul(p + 1, NULL, 10);
	return flags & PF_KTHREAD;
}

/* A zombie leader whose other threads still run is alive (hc_target_open uses them). */
static bool has_live_task(pid_t pid)
{
	char path[64], tp[384];
	struct dirent *de;
	struct pstatus ts;
	bool live = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!live && (de = readdir(d))) {
		if (!all_digits(de->d_name))
			continue;
		snprintf(tp, sizeof(tp), "%s/%s", path, de->d_name);
		if (read_status(tp, &ts) == 0 && ts.state != 'Z' && ts.state != 'X')
			live = true;
	}
	closedir(d);
	return live;
}

static int fail(const struct cli_env *env, enum hc_errc code, const char *hint, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

static int fail(const struct cli_env *env, enum hc_errc code, const char *hint, const char *fmt,
		...)
{
	struct hc_err err;
	va_list ap;

	memset(&err, 0, sizeof(err));
	err.code = code;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	snprintf(err.hint, sizeof(err.hint), "%s", hint);
	return cli_fail(env, &err);
}

/* ---- -p NAME ------------------------------------------------------------ */

static const char *base_name(const char *s)
{
	const char *b = strrchr(s, '/');

	return b ? b + 1 : s;
}

/*
 * Does pid go by name, as pidof sees it: comm, the exe's or argv[0]'s
 * basename?  A name with a '/' is a path: the exe's or argv[0] as a whole.
 */
static bool named(pid_t pid, const char *name)
{
	bool path_given = strchr(name, '/') != NULL;
	char buf[PATH_MAX], path[64];
	ssize_t n;

	if (!path_given && cli_read_comm(pid, buf, sizeof(buf)) == 0 && !strcmp(buf, name))
		return true;
	if (cli_read_exe(pid, buf, sizeof(buf)) == 0) {
		n = (ssize_t)strlen(buf);
		if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
			buf[n - 10] = '\0';
		if (!strcmp(path_given ? buf : base_name(buf), name))
			return true;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (cli_read_small(path, buf, sizeof(buf)) > 0 &&
	    !strcmp(path_given ? buf : base_name(buf), name))
		return true;
	return false;
}

/* One line of the "several processes" table on stderr. */
static void print_candidate(pid_t pid)
{
	char comm[64], path[64], cmd[4096], user[32];
	struct passwd *pw;
	struct stat st;
	ssize_t n, i;

	cli_read_comm(pid, comm, sizeof(comm));
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	snprintf(user, sizeof(user), "?");
	if (stat(path, &st) == 0) {
		pw = getpwuid(st.st_uid);
		if (pw)
			snprintf(user, sizeof(user), "%s", pw->pw_name);
		else
			snprintf(user, sizeof(user), "%u", (unsigned)st.st_uid);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = cli_read_small(path, cmd, sizeof(cmd));
	if (n <= 0) {
		snprintf(cmd, sizeof(cmd), "[%s]", comm);
		n = (ssize_t)strlen(cmd);
	}
	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
		else if (!isprint((unsigned char)cmd[i]))
			cmd[i] = '?';
	cmd[n] = '\0';
	fprintf(stderr, "  %7d  %-10.10s  %-15.15s  %.60s%s\n", (int)pid, user, comm, cmd,
		n > 60 ? "..." : "");
}

#define MAX_SHOWN 20

static int resolve_name(const struct cli_env *env, const char *name, pid_t *out)
{
	pid_t found[MAX_SHOWN], self = getpid();
	struct dirent *de;
	size_t nfound = 0, i;
	DIR *d;

	if (name[0] == '-' || strchr(name, '\n'))
		return cli_usage(env, "invalid pid '%s' (expected a pid or a process name)", name);
	d = opendir("/proc");
	if (!d)
		return fail(env, HC_E_IO, "heapctl needs /proc mounted", "cannot read /proc: %s",
			    strerror(errno));
	while ((de = readdir(d))) {
		pid_t pid;

		if (!all_digits(de->d_name))
			continue;
		pid = (pid_t)atoi(de->d_name);
		if (pid == self || !named(pid, name))
			continue;
		if (nfound < MAX_SHOWN)
			found[nfound] = pid;
		nfound++;
	}
	closedir(d);
	if (nfound == 1) {
		*out = found[0];
		cli_log(HC_LOG_INFO, "-p %s: pid %d", name, (int)found[0]);
		return CLI_EXIT_OK;
	}
	if (!nfound)
		return fail(env, HC_E_NO_PROC,
			    "'heapctl list' shows the processes heapctl can drive; a pid works "
			    "too (-p PID)",
			    "no process named '%s'", name);
	cli_flush();
	fprintf(stderr, "heapctl: error: %zu processes are named '%s':\n", nfound, name);
	fprintf(stderr, "  %7s  %-10s  %-15s  %s\n", "PID", "USER", "NAME", "COMMAND");
	for (i = 0; i < nfound && i < MAX_SHOWN; i++)
		print_candidate(found[i]);
	if (nfound > MAX_SHOWN)
		fprintf(stderr, "  ... and %zu more\n", nfound - MAX_SHOWN);
	fprintf(stderr, "hint: pick one with -p PID\n");
	return CLI_EXIT_USAGE;
}

/* ---- checks ------------------------------------------------------------- */

static int check_tid(const struct cli_env *env, pid_t pid, pid_t tid)
{
	char path[96];
	struct pstatus ts;

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	if (access(path, F_OK) == 0)
		return CLI_EXIT_OK;
	snprintf(path, sizeof(path), "/proc/%d", (int)tid);
	if (read_status(path, &ts) == 0 && ts.tgid > 0 && ts.tgid != pid) {
		char hint[200], comm[64];

		cli_read_comm(ts.tgid, comm, sizeof(comm));
		snprintf(hint, sizeof(hint),
			 "give -p %d --tid %d, or a tid listed in /proc/%d/task", (int)ts.tgid,
			 (int)tid, (int)pid);
		return fail(env, HC_E_USAGE, hint,
			    "tid %d is not a thread of pid %d: it belongs to pid %d (%s)", (int)tid,
			    (int)pid, (int)ts.tgid, comm);
	}
	snprintf(path, sizeof(path), "pid %d's threads are listed in /proc/%d/task", (int)pid,
		 (int)pid);
	return fail(env, HC_E_NO_PROC, path, "no thread %d in pid %d (nor anywhere else)",
		    (int)tid, (int)pid);
}

int cli_resolve_pid(struct cli_env *env)
{
	char why[200], dir[64], hint[200];
	struct pstatus ps;
	int rc;

	if (!env->pid_arg)
		return CLI_EXIT_OK;
	if (all_digits(env->pid_arg)) {
		if (cli_parse_id(env->pid_arg, "pid", &env->pid, why, sizeof(why)))
			return cli_usage(env, "%s", why);
	} else {
		rc = resolve_name(env, env->pid_arg, &env->pid);
		if (rc)
			return rc;
	}
	if (env->pid == getpid())
		return CLI_EXIT_OK; /* hc_target_open() says why not */
	snprintf(dir, sizeof(dir), "/proc/%d", (int)env->pid);
	if (read_status(dir, &ps))
		return fail(env, HC_E_NO_PROC,
			    "check the pid with ps; 'heapctl list' shows the processes heapctl "
			    "can drive",
			    "no process with pid %d", (int)env->pid);
	/* /proc/TID exists for every thread, though readdir does not show it. */
	if (ps.tgid > 0 && ps.tgid != env->pid) {
		char comm[64];

		cli_read_comm(ps.tgid, comm, sizeof(comm));
		snprintf(hint, sizeof(hint), "give -p %d (with --tid %d to borrow that very thread)",
			 (int)ps.tgid, (int)env->pid);
		return fail(env, HC_E_USAGE, hint, "%d is a thread of pid %d (%s), not a process",
			    (int)env->pid, (int)ps.tgid, comm);
	}
	if (cli_is_kthread(env->pid))
		return fail(env, HC_E_UNSUPPORTED,
			    "heapctl drives user processes; 'heapctl list' shows them",
			    "pid %d (%s) is a kernel thread: it has no user memory, nothing is "
			    "mapped and there is no allocator", (int)env->pid, ps.name);
	if ((ps.state == 'Z' || ps.state == 'X') && !has_live_task(env->pid)) {
		char pcomm[64];

		cli_read_comm(ps.ppid, pcomm, sizeof(pcomm));
		snprintf(hint, sizeof(hint),
			 "nothing is left to inspect; its parent, pid %d (%s), has not reaped it yet",
			 (int)ps.ppid, pcomm);
		return fail(env, HC_E_NO_PROC, hint,
			    "pid %d (%s) is a zombie: it has exited and nothing is mapped any more",
			    (int)env->pid, ps.name);
	}
	if (env->topts.tid)
		return check_tid(env, env->pid, env->topts.tid);
	return CLI_EXIT_OK;
}
