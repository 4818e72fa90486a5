// SPDX-License-Identifier: MIT
/*
 * cmd_list.c: heapctl list — every process heapctl can drive.
 *
 * hc_target_open() only reads /proc and ELF files, so trying it on every
 * process is cheap and stops nothing.  That is all a plain `list` does:
 * a look around must not pause every service on the machine.  The
 * profiling state (PROF) is known only by asking the allocator, so only
 * `list --probe` has each jemalloc or tcmalloc process lend a thread, once,
 * for hc_prof_get().  What the environment says (MALLOC_CONF in
 * /proc/PID/environ) is not used instead: it is the start-up request, not
 * what prof.active is now, and a program may set it at build time.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* include/linux/sched.h; not exported to user space. */

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Numeric entries of /proc, sorted; NULL with errno set on failure. */
static pid_t *scan_proc(size_t *count)
{
	pid_t *pids = NULL, *p;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]) || cli_parse_pid(de->d_name, &pid))
			continue;
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
		pids[n++] = pid;
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

/* Open failures that just mean "not one of ours": not worth a line. */
static bool quiet_failure(enum hc_errc code)
{
	return code == HC_E_NO_ALLOC || code == HC_E_NO_PROC || code == HC_E_PERM ||
	       code == HC_E_GONE;
}

struct row {
	pid_t pid;
	char name[64];
	char allocator[40];
	char user[33];
	long uid;      /* -1 if unknown */
	uint64_t rss;  /* bytes, VmRSS */
	const char *prof;
	bool known, enabled, active;
};

/*
 * RSS (VmRSS) and the effective uid from /proc/PID/status.  Not the owner of
 * /proc/PID: that is root for any process that is not dumpable, proc(5).
 */
static void read_status(pid_t pid, struct row *r)
{
	static uid_t last_uid = (uid_t)-1;
	static char last_name[33];
	char path[64], line[256];
	unsigned long long kb;
	unsigned long ruid, euid;
	struct passwd *pw;
	FILE *f;

	r->uid = -1;
	r->rss = 0;
	snprintf(r->user, sizeof(r->user), "?");
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu", &ruid, &euid) == 2)
			r->uid = (long)euid;
		else if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			r->rss = (uint64_t)kb * 1024;
	}
	fclose(f);
	if (r->uid < 0)
		return;
	/* Most processes share a few users: spare a passwd lookup per row. */
	if ((uid_t)r->uid != last_uid) {
		pw = getpwuid((uid_t)r->uid);
		if (pw)
			snprintf(last_name, sizeof(last_name), "%s", pw->pw_name);
		else
			snprintf(last_name, sizeof(last_name), "%ld", r->uid);
		last_uid = (uid_t)r->uid;
	}
	snprintf(r->user, sizeof(r->user), "%s", last_name);
}

static void print_row(const struct cli_env *env, const struct row *r, unsigned int index)
{
	char rss[32];

	if (!env->json) {
		printf("%7d  %-10.10s %10s  %-16s %-21s %s\n", (int)r->pid, r->user,
		       cli_size(r->rss, rss, sizeof(rss)), r->name, r->allocator, r->prof);
		return;
	}
	fputs(index ? ",\n  {" : "\n  {", stdout);
	printf("\"pid\":%d,\"name\":", (int)r->pid);
	cli_json_str(stdout, r->name);
	fputs(",\"user\":", stdout);
	cli_json_str(stdout, r->user);
	if (r->uid >= 0)
		printf(",\"uid\":%ld", r->uid);
	else
		fputs(",\"uid\":null", stdout);
	printf(",\"rss\":%llu,\"allocator\":", (unsigned long long)r->rss);
	cli_json_str(stdout, r->allocator);
	if (r->prof[0] == '-')
		fputs(",\"prof\":null", stdout);
	else
		printf(",\"prof\":\"%s\"", r->prof);
	if (r->known)
		printf(",\"enabled\":%s,\"active\":%s}", cli_bool(r->enabled),
		       cli_bool(r->active));
	else
		fputs(",\"enabled\":null,\"active\":null}", stdout);
}

/*
 * Returns 1 if a row was filled, 0 to skip the process.  *denied counts the
 * processes skipped for lack of permission, for the hint at the end.
 */
static int probe(const struct cli_env *env, pid_t pid, struct row *r, unsigned int *denied)
{
	struct hc_target *t;
	struct hc_where w;
	struct hc_err err;
	int ret;

	memset(&err, 0, sizeof(err));
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	if (cli_read_comm(pid, r->name, sizeof(r->name)))
		return 0; /* gone already */

	t = cli_open(env, pid, &err);
	if (!t && (err.code == HC_E_NO_SYM || err.code == HC_E_NO_ALLOC)) {
		struct hc_evidence ev;
		struct hc_err e2 = { 0 };

		/* An allocator seen by its strings but not drivable: say so, never glibc. */
		if (hc_evidence_read(pid, &ev, &e2) > 0 && !ev.has_symbols) {
			cli_log(HC_LOG_DEBUG, "pid %d (%s): %s", (int)pid, r->name, err.msg);
			snprintf(r->allocator, sizeof(r->allocator), "%s (no symbols)",
				 ev.allocator);
			read_status(pid, r);
			r->prof = "?";
			return 1;
		}
	}
	if (!t) {
		if (err.code == HC_E_PERM)
			(*denied)++;
		cli_log(quiet_failure(err.code) ? HC_LOG_DEBUG : HC_LOG_INFO, "pid %d (%s): %s",
			(int)pid, r->name, err.msg[0] ? err.msg : hc_err_name(err.code));
		return 0;
	}
	memset(&w, 0, sizeof(w));
	hc_target_where(t, &w);
	/* The where strings belong to t: copy before closing it. */
	snprintf(r->allocator, sizeof(r->allocator), "%s",
		 w.allocator && w.allocator[0] ? w.allocator : "?");
	read_status(pid, r);

	if (w.allocator &&
	    (!strcmp(w.allocator, "glibc") || !strcmp(w.allocator, "tcmalloc_minimal"))) {
		/* No heap profiler in these: known without asking. */
		r->prof = "n/a";
		cli_close(t);
		return 1;
	}
	if (!env->probe) {
		r->prof = "-"; /* only a call into the process can tell: --probe */
		cli_close(t);
		return 1;
	}
	ret = hc_prof_get(t, &r->enabled, &r->active, &err);
	if (ret == 0) {
		cli_timing(env, t);
		r->known = true;
		r->prof = r->active ? "active" : r->enabled ? "enabled" : "off";
	} else if (err.code == HC_E_UNSUPPORTED && w.allocator && !strcmp(w.allocator, "glibc")) {
		r->prof = "n/a"; /* glibc has no heap profiler; nothing was called */
	} else if (err.code == HC_E_GONE || err.code == HC_E_NO_PROC) {
		cli_close(t);
		return 0; /* exited under us */
	} else {
		cli_log(HC_LOG_INFO, "pid %d (%s): %s", (int)pid, r->name,
			err.msg[0] ? err.msg : hc_err_name(err.code));
		r->prof = "?";
	}
	cli_close(t);
	return 1;
}

int cmd_list(struct cli_env *env)
{
	unsigned int shown = 0, denied = 0;
	pid_t self = getpid();
	size_t i, n = 0;
	pid_t *pids;

	/* a look around the machine must not send one query per stripped program */
	env->topts.no_debuginfod = true;
	pids = scan_proc(&n);
	if (!pids) {
		struct hc_err err = { .code = HC_E_IO, .sys_errno = errno };

		snprintf(err.msg, sizeof(err.msg), "cannot read /proc: %s", strerror(errno));
		snprintf(err.hint, sizeof(err.hint), "is /proc mounted?");
		return cli_fail(env, &err);
	}
	if (env->json)
		fputs("[", stdout);
	else
		printf("%7s  %-10s %10s  %-16s %-21s %s\n", "PID", "USER", "RSS", "NAME",
		       "ALLOCATOR", "PROF");
	cli_flush();

	for (i = 0; i < n; i++) {
		struct row r;

		if (pids[i] == self || cli_is_kthread(pids[i]))
			continue;
		if (!probe(env, pids[i], &r, &denied))
			continue;
		print_row(env, &r, shown++);
		/*
		 * Rows appear as they are found, so a long scan shows progress.  Once
		 * nobody reads them ("| head -3"), stop pausing processes for nothing.
		 */
		if (cli_flush())
			break;
	}
	if (env->json)
		fputs(shown ? "\n]\n" : "]\n", stdout);
	free(pids);

	cli_log(HC_LOG_INFO, "%zu processes scanned, %u listed%s", n, shown,
		env->probe ? "" : "; PROF needs --probe");
	if (denied && geteuid() != 0)
		cli_log(HC_LOG_WARN, "%u processes could not be inspected (permission denied); "
			"run as root to see them", denied);
	return CLI_EXIT_OK;
}
