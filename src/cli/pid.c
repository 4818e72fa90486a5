// SPDX-License-Identifier: MIT
/*
 * pid.c: what -p and --tid name, and the walk over /proc.
 *
 * -p takes a pid or, like pidof, a process name.  Whether that process can
 * be inspected (a kernel thread, a zombie, a thread id given for a process
 * id, a --tid of another process) is the library's to say: hc_target_open()
 * and hc_pid_check() give each case its own message and hint.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

pid_t *cli_scan_proc(size_t *count)
{
	pid_t *pids = NULL, *p;
	size_t n = 0, cap = 0;
	unsigned long v;
	struct dirent *de;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (cli_parse_uint(de->d_name, INT_MAX, &v) || !v)
			continue; /* not a process: "self", "sys", ... */
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			p = realloc(pids, cap * sizeof(*pids));
			if (!p) {
				free(pids);
				closedir(d);
				errno = ENOMEM;
				return NULL;
			}
			pids = p;
		}
		pids[n++] = (pid_t)v;
	}
	closedir(d);
	if (!pids) {
		/* An empty /proc: give the caller a valid, empty array. */
		pids = malloc(sizeof(*pids));
		if (!pids)
			return NULL;
	}
	qsort(pids, n, sizeof(*pids), cmp_pid);
	*count = n;
	return pids;
}

const char *cli_uid_name(long uid, char *buf, size_t len)
{
	/* Most processes share a few users: spare a passwd lookup per process. */
	static long last_uid = -1;
	static char last_name[33];
	struct passwd *pw;

	if (uid < 0) {
		snprintf(buf, len, "?");
		return buf;
	}
	if (uid != last_uid) {
		pw = getpwuid((uid_t)uid);
		if (pw)
			snprintf(last_name, sizeof(last_name), "%s", pw->pw_name);
		else
			snprintf(last_name, sizeof(last_name), "%ld", uid);
		last_uid = uid;
	}
	snprintf(buf, len, "%s", last_name);
	return buf;
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

/* One line of the "several processes" table on stderr; USER as `list` has it. */
static void print_candidate(pid_t pid)
{
	char path[64], cmd[4096], user[33];
	struct hc_proc p;
	struct hc_err err = { 0 };
	ssize_t n, i;

	if (hc_proc_read(pid, &p, &err))
		snprintf(p.name, sizeof(p.name), "?");
	cli_uid_name(p.euid, user, sizeof(user));
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = cli_read_small(path, cmd, sizeof(cmd));
	if (n <= 0) {
		snprintf(cmd, sizeof(cmd), "[%s]", p.name);
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
	fprintf(stderr, "  %7d  %-10.10s  %-15.15s  %.60s%s\n", (int)pid, user, p.name, cmd,
		n > 60 ? "..." : "");
}

#define MAX_SHOWN 20

static int resolve_name(const struct cli_env *env, const char *name, pid_t *out)
{
	pid_t found[MAX_SHOWN], self = getpid(), *pids;
	size_t nfound = 0, n = 0, i;

	if (name[0] == '-' || strchr(name, '\n'))
		return cli_usage(env, "invalid pid '%s' (expected a pid or a process name)", name);
	pids = cli_scan_proc(&n);
	if (!pids)
		return fail(env, HC_E_IO, "heapctl needs /proc mounted", "cannot read /proc: %s",
			    strerror(errno));
	for (i = 0; i < n; i++) {
		if (pids[i] == self || !named(pids[i], name))
			continue;
		if (nfound < MAX_SHOWN)
			found[nfound] = pids[i];
		nfound++;
	}
	free(pids);
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

/* ---- -p ---------------------------------------------------------------- */

int cli_resolve_pid(struct cli_env *env)
{
	const char *arg = env->pid_arg;
	struct hc_err err = { 0 };
	char why[200];
	int rc;

	if (!arg)
		return CLI_EXIT_OK;
	if (arg[0] && !arg[strspn(arg, "0123456789")]) {
		if (cli_parse_id(arg, "pid", &env->pid, why, sizeof(why)))
			return cli_usage(env, "%s", why);
	} else {
		rc = resolve_name(env, arg, &env->pid);
		if (rc)
			return rc;
	}
	/*
	 * An optional -p (report's) only helps find the files a profile names,
	 * and the process may well have exited since: without it they are
	 * looked for by the profile's own paths.
	 */
	if ((env->cmd->opts & CLI_O_PIDOPT) && hc_pid_check(env->pid, 0, &err)) {
		cli_log(HC_LOG_WARN, "%s: -p %d is not used; files are found by the profile's paths, "
			"on the host (--sysroot DIR for a profile you do not trust)", err.msg,
			(int)env->pid);
		env->pid = 0;
	}
	return CLI_EXIT_OK;
}
