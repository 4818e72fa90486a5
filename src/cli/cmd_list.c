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
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

/* USER is the effective uid (not the owner of /proc/PID: root if not dumpable, proc(5)). */
static void fill_proc(struct row *r, const struct hc_proc *p)
{
	r->uid = p->euid;
	r->rss = p->rss;
	cli_uid_name(p->euid, r->user, sizeof(r->user));
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
	hc_json_str(stdout, r->name);
	fputs(",\"user\":", stdout);
	hc_json_str(stdout, r->user);
	if (r->uid >= 0)
		printf(",\"uid\":%ld", r->uid);
	else
		fputs(",\"uid\":null", stdout);
	printf(",\"rss\":%llu,\"allocator\":", (unsigned long long)r->rss);
	hc_json_str(stdout, r->allocator);
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
static int probe(const struct cli_env *env, pid_t pid, const struct hc_proc *p, struct row *r,
		 unsigned int *denied)
{
	struct hc_target *t;
	struct hc_where w;
	struct hc_err err;
	int ret;

	memset(&err, 0, sizeof(err));
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	snprintf(r->name, sizeof(r->name), "%s", p->name);
	fill_proc(r, p);

	t = cli_open(env, pid, &err);
	/*
	 * An allocator seen by its strings but not drivable: say so, never
	 * glibc.  The refusal carries what the objects showed (topts.evidence).
	 */
	if (!t && env->topts.evidence->allocator[0] && !env->topts.evidence->has_symbols) {
		cli_log(HC_LOG_DEBUG, "pid %d (%s): %s", (int)pid, r->name, err.msg);
		snprintf(r->allocator, sizeof(r->allocator), "%s (no symbols)",
			 env->topts.evidence->allocator);
		r->prof = "?";
		return 1;
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

	if (cli_prof_kind(w.allocator) == CLI_PROF_NONE ||
	    cli_prof_kind(w.allocator) == CLI_PROF_MINIMAL) {
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
	struct hc_evidence ev;
	pid_t self = getpid();
	size_t i, n = 0;
	pid_t *pids;

	/* a look around the machine must not send one query per stripped program */
	env->topts.no_debuginfod = true;
	env->topts.evidence = &ev;
	pids = cli_scan_proc(&n);
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
		struct hc_err e = { 0 };
		struct hc_proc p;
		struct row r;

		/* gone already, or a kernel thread: nothing to list */
		if (pids[i] == self || hc_proc_read(pids[i], &p, &e) || p.kthread)
			continue;
		if (!probe(env, pids[i], &p, &r, &denied))
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
