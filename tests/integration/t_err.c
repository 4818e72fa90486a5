// SPDX-License-Identifier: MIT
/*
 * Bad input and hostile conditions: every failure must be exit 1 (or 2 for
 * usage) with "error:" and "hint:", and must leave the target unharmed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "itest.h"

/* exit 1 with both "error:" and "hint:" on stderr. */
static int expect_failure(struct hres *r, const char *what)
{
	const char *crash = hres_crash(r);

	if (crash) {
		t_fail("%s: %s [%s]", what, hres_desc(r), crash);
		return -1;
	}
	if (hres_exit(r) != 1) {
		t_fail("%s: %s (wanted exit 1)", what, hres_desc(r));
		return -1;
	}
	if (!strstr(r->err, "error:") || !strstr(r->err, "hint:")) {
		t_fail("%s: stderr lacks 'error:' and 'hint:': %.300s", what, r->err);
		return -1;
	}
	return 0;
}

static void test_pid_nonexistent(void)
{
	char spid[16];
	struct hres r;
	pid_t pid;
	int tries;

	/* A pid that just died and was reaped, so it is free right now. */
	for (tries = 0; tries < 10; tries++) {
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0) {
			t_fail("fork: %s", strerror(errno));
			return;
		}
		waitpid(pid, NULL, 0);
		if (kill(pid, 0) && errno == ESRCH)
			break;
	}
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	hc_run(&r, NULL, "stats", "-p", spid, NULL);
	expect_failure(&r, "stats on a pid that does not exist");
	hres_free(&r);
}

static void test_pid_not_numeric(void)
{
	static const char *const bad[] = { "abc", "12x", "", "-5", "99999999999999999999" };
	struct hres r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]) && !t_failed(); i++) {
		hc_run(&r, NULL, "stats", "-p", bad[i], NULL);
		if (hres_crash(&r) || hres_exit(&r) != 2)
			t_fail("-p '%s': %s (wanted exit 2)", bad[i], hres_desc(&r));
		hres_free(&r);
	}
}

static void test_not_jemalloc(void)
{
	static const char *const cmds[][3] = {
		/* glibc is driven now: its stats work, but it has no profiler and no mallctl */
		{ "prof", "on", NULL }, { "prof", "status", NULL }, { "get", "opt.prof", NULL },
	};
	struct victim vv, *v = &vv;
	char why[512], reply[256];
	struct hres r;
	size_t i;

	if (victim_start(v, "plain_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *args[8];
		int n = 0;

		args[n++] = cmds[i][0];
		if (cmds[i][1] && strcmp(cmds[i][0], "get"))
			args[n++] = cmds[i][1];
		args[n++] = "-p";
		args[n++] = v->spid;
		if (!strcmp(cmds[i][0], "get"))
			args[n++] = cmds[i][1];
		args[n] = NULL;
		hc_runv(&r, NULL, args);
		if (!expect_failure(&r, cmds[i][0]) && !strcasestr_(r.err, "jemalloc") &&
		    !strcasestr_(r.err, "glibc"))
			t_fail("%s on a glibc-malloc process: message names neither jemalloc nor"
			       " glibc: %.300s", cmds[i][0], r.err);
		hres_free(&r);
		if (!t_failed() && !victim_check(v, 0))
			victim_expect(v, "feed 100", "read ok 100", reply, sizeof(reply));
	}
	victim_kill(v);
}

static void test_no_prof(void)
{
	struct victim vv, *v = &vv;
	char why[512], path[512];
	struct hres r = { 0 };
	bool enabled;

	if (victim_start(v, "jemalloc_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	hc_run(&r, NULL, "prof", "on", "-p", v->spid, NULL);
	if (expect_failure(&r, "prof on without opt.prof"))
		goto out;
	if (!strstr(r.err, "MALLOC_CONF=prof:true")) {
		t_fail("prof on without opt.prof: hint does not mention MALLOC_CONF=prof:true: %.300s",
		       r.err);
		goto out;
	}
	hres_free(&r);
	if (victim_check(v, 0))
		goto out;

	snprintf(path, sizeof(path), "%s/noprof.heap", cfg.tmpdir);
	hc_run(&r, NULL, "dump", "-p", v->spid, "-o", path, NULL);
	if (expect_failure(&r, "dump without opt.prof"))
		goto out;
	hres_free(&r);
	if (!access(path, F_OK)) {
		t_fail("dump without opt.prof failed but left %s", path);
		goto out;
	}

	/* status may succeed, but must then tell the truth. */
	hc_run(&r, NULL, "prof", "status", "-p", v->spid, "--json", NULL);
	if (hres_crash(&r) || (hres_exit(&r) != 0 && hres_exit(&r) != 1)) {
		t_fail("%s", hres_desc(&r));
		goto out;
	}
	if (hres_exit(&r) == 0 && (json_get_bool(r.out, "enabled", &enabled) || enabled)) {
		t_fail("prof status --json without opt.prof: %.200s", r.out);
		goto out;
	}
	hres_free(&r);

	/* Everything that does not need profiling still works. */
	if (hc_expect(&r, 0, "stats", "-p", v->spid, "--json", NULL))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
	victim_kill(v);
}

static void test_unknown_mallctl(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	hc_run(&r, NULL, "get", "-p", v->spid, "no.such.name", NULL);
	if (!expect_failure(&r, "get no.such.name"))
		victim_check(v, 0);
	hres_free(&r);
}

static void test_set_bad_value(void)
{
	struct victim *v = shared_victim();
	char val[64];
	struct hres r;

	if (!v)
		return;
	hc_run(&r, NULL, "set", "-p", v->spid, "prof.active", "banana", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1)
		t_fail("set prof.active banana: %s (wanted exit 1)", hres_desc(&r));
	else if (!strstr(r.err, "error:"))
		t_fail("set prof.active banana: no 'error:' on stderr");
	hres_free(&r);
	if (t_failed() || victim_ctl(v, "prof.active", val, sizeof(val)))
		return;
	if (strcmp(val, "false"))
		t_fail("a rejected value changed prof.active to %s", val);
	else
		victim_check(v, 0);
}

static void test_set_read_only(void)
{
	struct victim *v = shared_victim();
	char val[64];
	struct hres r;

	if (!v)
		return;
	hc_run(&r, NULL, "set", "-p", v->spid, "opt.prof", "false", NULL);
	expect_failure(&r, "set opt.prof false (read-only)");
	hres_free(&r);
	if (t_failed() || victim_ctl(v, "opt.prof", val, sizeof(val)))
		return;
	if (strcmp(val, "true"))
		t_fail("opt.prof reads %s after a refused write", val);
	else
		victim_check(v, 0);
}

static void test_purge_bad_arena(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	hc_run(&r, NULL, "purge", "-p", v->spid, "--arena", "99999", NULL);
	if (hres_crash(&r) || (hres_exit(&r) != 1 && hres_exit(&r) != 2))
		t_fail("purge --arena 99999: %s (wanted exit 1 or 2)", hres_desc(&r));
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "purge", "-p", v->spid, "--arena", "zero", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 2)
		t_fail("purge --arena zero: %s (wanted exit 2)", hres_desc(&r));
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
}

/*
 * SIGKILL the target at different moments of a call: heapctl must exit 1
 * with a message (or 0 if it finished first), never hang or crash. The
 * killed target stays an unreaped zombie until heapctl is done, as it
 * would under a busy parent.
 */
static void test_target_killed(void)
{
	static const char *const calls[][4] = {
		{ "stats", "--full", NULL, NULL },
		{ "prof", "on", NULL, NULL },
		{ "stats", "--json", NULL, NULL },
		{ "purge", NULL, NULL, NULL },
	};
	int round, ok = 0, failed = 0, rounds = 32;
	long worst = 0, span_us;
	struct victim vv, *v = &vv;
	struct hres r;
	char why[512];

	/* Calibrate: spread the kills over one whole call. */
	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	hc_expect(&r, 0, "stats", "--full", "-p", v->spid, NULL);
	span_us = 2 * r.ms * 1000 + 2000;	/* before, during and after */
	hres_free(&r);
	victim_kill(v);
	if (t_failed())
		return;

	for (round = 0; round < rounds && !t_failed(); round++) {
		const char *const *c = calls[round % 4];
		const char *args[12];
		struct hproc hp;
		long delay_us = span_us * round / (rounds - 4);
		int n = 0, i;

		if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
			t_fail("%s", why);
			return;
		}
		for (i = 0; c[i]; i++)
			args[n++] = c[i];
		args[n++] = "-p";
		args[n++] = v->spid;
		args[n] = NULL;
		hc_startv(&hp, NULL, args);
		if (delay_us)
			usleep((useconds_t)delay_us);
		kill(-v->pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		victim_kill(v);
		if (r.ms > worst)
			worst = r.ms;
		if (r.timed_out) {
			t_fail("round %d: %s (target SIGKILLed %ld us after exec, left as a zombie)",
			       round, hres_desc(&r), delay_us);
		} else if (hres_crash(&r)) {
			t_fail("round %d: %s [%s]", round, hres_desc(&r), hres_crash(&r));
		} else if (hres_exit(&r) == 1) {
			if (!strstr(r.err, "error:"))
				t_fail("round %d: exit 1 without 'error:': %.200s", round, r.err);
			failed++;
		} else if (hres_exit(&r) == 0) {
			ok++;
		} else {
			t_fail("round %d: %s (wanted exit 1)", round, hres_desc(&r));
		}
		hres_free(&r);
	}
	if (!t_failed() && !failed)
		t_fail("no call noticed that its target was killed (%d rounds)", rounds);
	t_note("target killed over a %ld us span: %d calls failed cleanly, %d finished first,"
	       " slowest %ld ms", span_us, failed, ok, worst);
}

static bool is_heapctl(pid_t pid)
{
	char path[64], exe[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	return !strcmp(exe, cfg.heapctl);
}

/*
 * Ctrl-C, SIGTERM or SIGHUP while heapctl works: the call in flight finishes,
 * the target is restored, and heapctl says so before the signal ends it.
 * Spread over a whole call, some rounds land mid-operation.
 */
static void test_interrupted(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct victim vv, *v = &vv;
	int said = 0, finished = 0, early = 0;
	char why[512];

	struct hres cal;
	long span_us;

	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	/* Calibrate: spread the signals over one whole run, however slow the machine. */
	hc_expect(&cal, 0, "stats", "--full", "-p", v->spid, NULL);
	span_us = cal.ms * 1000 + 1000;
	hres_free(&cal);
	for (int round = 0; round < 24 && !t_failed(); round++) {
		const char *args[] = { "stats", "--full", "-p", v->spid, NULL };
		int sig = sigs[round % 3];
		struct hproc hp;
		struct hres r;

		if (hc_startv(&hp, NULL, args)) {
			t_fail("cannot start heapctl");
			break;
		}
		/*
		 * Until exec the child is a copy of this harness, whose own SIGINT
		 * handling would strike the victim: wait for heapctl to be running.
		 */
		for (long end = now_ms() + 2000; !is_heapctl(hp.pid) && now_ms() < end;)
			usleep(100);
		usleep((useconds_t)(span_us * (round + 1) / 25));
		kill(hp.pid, sig);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		if (r.timed_out) {
			t_fail("round %d: %s", round, hres_desc(&r));
		} else if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
			finished++;
		} else if (WIFSIGNALED(r.status) && WTERMSIG(r.status) == sig) {
			if (strstr(r.err, "stopping on SIG"))
				said++;
			else if (!strstr(r.err, "heapctl: info:"))
				early++; /* before it opened the target: nothing to restore */
			else if (strstr(r.err, "gave tid") || strstr(r.out, "End jemalloc statistics"))
				finished++; /* after it let go of the target */
			else
				t_fail("round %d: died of signal %d without saying so: %.200s", round,
				       sig, r.err);
		} else if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1 &&
			   strstr(r.err, "interrupted by SIG")) {
			said++; /* cancelled while waiting for a safe point */
		} else {
			t_fail("round %d: %s", round, hres_desc(&r));
		}
		hres_free(&r);
		if (!t_failed())
			victim_check(v, 0);
	}
	if (!t_failed() && !said)
		t_fail("no signal reached heapctl mid-operation in 24 rounds");
	t_note("interrupted: %d stopped with a message, %d finished first, %d before opening",
	       said, finished, early);
	victim_kill(v);
}

/* No right to ptrace the target: a clear refusal that names the fix. */
static void test_not_permitted(void)
{
	struct victim vv, *v = &vv;
	const char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			       cfg.heapctl, "stats", "-p", NULL, NULL };
	char why[512];
	struct hres r;

	if (getuid() != 0 || access("/usr/bin/setpriv", X_OK)) {
		t_skip(false, "needs root and setpriv to run heapctl as another user");
		return;
	}
	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	argv[7] = v->spid;
	run_prog(&r, argv, HC_TIMEOUT_S);
	if (hres_exit(&r) == 126 || (strstr(r.err, "Permission denied") && !strstr(r.err, "heapctl:")))
		t_skip(false, "heapctl is not executable by another user here");
	else if (hres_exit(&r) != 1 || !strstr(r.err, "error: not permitted to trace") ||
		 !strstr(r.err, "hint:") || !strstr(r.err, "CAP_SYS_PTRACE"))
		t_fail("as nobody: %s: %.300s", hres_desc(&r), r.err);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

/* VmSize of pid in bytes, 0 if unknown. */
static unsigned long long vm_size(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * A target at its RLIMIT_AS (prlimit --as) cannot map heapctl's page: the
 * error must say so and name the limit, not blame the allocator, and the
 * target must be unharmed.  Its soft limit is set to what it maps now, so
 * that not one more page fits; the victim's threads sit in read() and map
 * nothing meanwhile.
 */
static void test_as_limit(void)
{
	struct victim vv, *v = &vv;
	struct rlimit old, low;
	char why[512], reply[256], num[32];
	unsigned long long vs;
	struct hres r;

	if (victim_start(v, "plain_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	vs = vm_size(v->pid);
	if (!vs || prlimit(v->pid, RLIMIT_AS, NULL, &old)) {
		t_fail("cannot read pid %d's VmSize or RLIMIT_AS: %s", (int)v->pid, strerror(errno));
		victim_kill(v);
		return;
	}
	low = old;
	low.rlim_cur = vs;
	if (prlimit(v->pid, RLIMIT_AS, &low, NULL)) {
		t_fail("prlimit --as=%llu on pid %d: %s", vs, (int)v->pid, strerror(errno));
		victim_kill(v);
		return;
	}
	hc_run(&r, NULL, "stats", "-p", v->spid, NULL);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)low.rlim_cur);
	if (!expect_failure(&r, "stats on a process at its RLIMIT_AS") &&
	    (!strstr(r.err, "address-space limit") || !strstr(r.err, num) ||
	     !strstr(r.err, "prlimit") || strstr(r.err, "allocator refused")))
		t_fail("the error does not name the address-space limit (%s bytes): %.400s", num,
		       r.err);
	hres_free(&r);
	/* Back to its own limit: the victim must work as before. */
	if (prlimit(v->pid, RLIMIT_AS, &old, NULL))
		t_fail("restoring RLIMIT_AS of pid %d: %s", (int)v->pid, strerror(errno));
	if (!t_failed() && !victim_check(v, 0))
		victim_expect(v, "feed 100", "read ok 100", reply, sizeof(reply));
	victim_kill(v);
}

/* A target that already died but was not reaped. */
static void test_zombie_target(void)
{
	struct victim vv, *v = &vv;
	char why[512];
	struct hres r;
	siginfo_t si;

	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	kill(v->pid, SIGKILL);
	memset(&si, 0, sizeof(si));
	/* Wait for the exit without reaping it. */
	if (waitid(P_PID, (id_t)v->pid, &si, WEXITED | WNOWAIT)) {
		t_fail("waitid: %s", strerror(errno));
		victim_kill(v);
		return;
	}
	hc_run(&r, NULL, "prof", "status", "-p", v->spid, NULL);
	expect_failure(&r, "prof status on a zombie");
	hres_free(&r);
	victim_kill(v);
}

const struct itest t_err_tests[] = {
	{ "error-pid-nonexistent", test_pid_nonexistent, 0 },
	{ "error-pid-not-numeric", test_pid_not_numeric, 0 },
	{ "error-not-jemalloc", test_not_jemalloc, 0 },
	{ "error-jemalloc-without-prof", test_no_prof, 0 },
	{ "error-unknown-mallctl", test_unknown_mallctl, 0 },
	{ "error-set-bad-value", test_set_bad_value, 0 },
	{ "error-set-read-only", test_set_read_only, 0 },
	{ "error-purge-bad-arena", test_purge_bad_arena, 0 },
	{ "error-zombie-target", test_zombie_target, 0 },
	{ "error-as-limit", test_as_limit, 0 },
	{ "error-target-killed", test_target_killed, 0 },
	{ "error-interrupted", test_interrupted, 0 },
	{ "error-not-permitted", test_not_permitted, 0 },
	{ NULL, NULL, 0 },
};
