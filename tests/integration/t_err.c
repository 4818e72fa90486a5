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
		/*
		 * glibc is driven now: its stats work, but it has no profiler and no
		 * mallctl ("prof status" says "unavailable" and succeeds: alloc-prof-glibc)
		 */
		{ "prof", "on", NULL }, { "get", "opt.prof", NULL },
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

/* exit 2, stderr holds want (and hint:), stdout is empty: no help was printed instead. */
static int expect_usage(struct hres *r, const char *what, const char *want)
{
	if (hres_crash(r) || hres_exit(r) != 2) {
		t_fail("%s: %s (wanted exit 2)", what, hres_desc(r));
		return -1;
	}
	if (!strstr(r->err, want) || !strstr(r->err, "hint:")) {
		t_fail("%s: stderr lacks \"%s\" or a hint: %.300s", what, want, r->err);
		return -1;
	}
	if (r->out[0]) {
		t_fail("%s: printed on stdout: %.200s", what, r->out);
		return -1;
	}
	return 0;
}

/*
 * "-w.heap" is a typo, not a request for help: getopt took its 'h' as -h
 * and printed help with exit 0.  A bundle with an unknown letter is an
 * error naming the letter; -h in a valid bundle still helps.
 */
static void test_usage_bundle(void)
{
	struct hres r;

	hc_run(&r, NULL, "report", "-w.heap", NULL);
	if (expect_usage(&r, "report -w.heap", "unknown option '-w'"))
		goto out;
	hres_free(&r);
	hc_run(&r, NULL, "stats", "-p", "1", "-vhx", NULL);
	if (expect_usage(&r, "stats -p 1 -vhx", "unknown option '-x'"))
		goto out;
	hres_free(&r);
	if (!hc_expect(&r, 0, "stats", "-vh", NULL) && !strstr(r.out, "Usage: heapctl stats"))
		t_fail("stats -vh did not print the help of stats: %.200s", r.out);
out:
	hres_free(&r);
}

/* "does not apply" names the option the user gave, as typed, and only it. */
static void test_usage_not_applicable(void)
{
	static const struct {
		const char *args[6], *want, *unwanted;
	} cases[] = {
		{ { "stats", "-p", "1", "--objects", NULL }, "'--objects' does not apply to 'stats'",
		  "--format" },
		{ { "stats", "-p", "1", "--lin", NULL }, "'--lin' does not apply", "--sysroot" },
		{ { "purge", "-p", "1", "-o", "x", NULL }, "'-o' does not apply to 'purge'", "--output" },
		{ { "get", "-p", "1", "--svg=x.svg", "opt.prof", NULL }, "'--svg' does not apply",
		  "--folded" },
	};
	struct hres r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !t_failed(); i++) {
		hc_runv(&r, NULL, cases[i].args);
		if (!expect_usage(&r, cases[i].args[3], cases[i].want) &&
		    strstr(r.err, cases[i].unwanted))
			t_fail("%s: the message names %s too: %.200s", cases[i].args[3],
			       cases[i].unwanted, r.err);
		hres_free(&r);
	}
}

/* "heapctl help CMD" is "heapctl CMD --help"; "heapctl help" the top-level help. */
static void test_help_command(void)
{
	struct hres a, b;

	memset(&b, 0, sizeof(b));
	if (hc_expect(&a, 0, "help", "dump", NULL) || hc_expect(&b, 0, "dump", "--help", NULL))
		goto out;
	if (strcmp(a.out, b.out) || !strstr(a.out, "Usage: heapctl dump"))
		t_fail("'help dump' differs from 'dump --help': %.200s", a.out);
	hres_free(&a);
	hres_free(&b);
	if (hc_expect(&a, 0, "help", NULL) || hc_expect(&b, 0, "--help", NULL))
		goto out;
	if (strcmp(a.out, b.out) || !strstr(a.out, "Commands:"))
		t_fail("'help' differs from '--help': %.200s", a.out);
	/* heapctl drives three allocators; the help must not say jemalloc alone. */
	else if (!strstr(a.out, "glibc") || !strstr(a.out, "tcmalloc") || !strstr(a.out, "  help "))
		t_fail("--help names neither glibc nor tcmalloc, or not 'help': %.300s", a.out);
	hres_free(&a);
	memset(&a, 0, sizeof(a));
	hc_run(&a, NULL, "help", "dmup", NULL);
	expect_usage(&a, "help dmup", "did you mean 'heapctl dump'");
out:
	hres_free(&a);
	hres_free(&b);
}

/* A typo in a command or a long option gets the likely name in the hint. */
static void test_usage_did_you_mean(void)
{
	static const struct {
		const char *args[5], *want;
	} cases[] = {
		{ { "stat", "-p", "1", NULL }, "did you mean 'heapctl stats'" },
		{ { "lsit", NULL }, "did you mean 'heapctl list'" },
		{ { "rep", "x.heap", NULL }, "did you mean 'heapctl report'" },
		{ { "stats", "-p", "1", "--jsno", NULL }, "did you mean '--json'" },
		{ { "purge", "-p", "1", "--arean=0", NULL }, "did you mean '--arena'" },
	};
	struct hres r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !t_failed(); i++) {
		hc_runv(&r, NULL, cases[i].args);
		expect_usage(&r, cases[i].args[0], cases[i].want);
		hres_free(&r);
	}
	/* Nothing close: no guess. */
	hc_run(&r, NULL, "frobnicate", NULL);
	if (!expect_usage(&r, "frobnicate", "unknown command") && strstr(r.err, "did you mean"))
		t_fail("frobnicate got a guess: %.200s", r.err);
	hres_free(&r);
}

/* report --json is report --format json; asking for two formats is an error. */
static void test_report_json_switch(void)
{
	char path[512], *slash;
	struct hres a, b;

	snprintf(path, sizeof(path), "%s", cfg.heapctl);
	slash = strrchr(path, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(path, '/');
	if (slash)
		*slash = '\0';
	strncat(path, "/tests/data/prof/leaker-5.3.heap", sizeof(path) - strlen(path) - 1);
	if (access(path, R_OK)) {
		t_skip(false, "%s not found next to the build", path);
		return;
	}
	memset(&b, 0, sizeof(b));
	if (hc_expect(&a, 0, "report", path, "--json", NULL) ||
	    hc_expect(&b, 0, "report", path, "--format", "json", NULL))
		goto out;
	if (strcmp(a.out, b.out) || !strstr(a.out, "\"format\":\"heapctl-report-1\""))
		t_fail("report --json differs from --format json: %.200s", a.out);
	hres_free(&a);
	memset(&a, 0, sizeof(a));
	hc_run(&a, NULL, "report", path, "--json", "--format", "svg", NULL);
	expect_usage(&a, "report --json --format svg", "two formats");
out:
	hres_free(&a);
	hres_free(&b);
}

const struct itest t_err_tests[] = {
	{ "usage-bundle-unknown-letter", test_usage_bundle, 0 },
	{ "usage-not-applicable-as-typed", test_usage_not_applicable, 0 },
	{ "usage-help-command", test_help_command, 0 },
	{ "usage-did-you-mean", test_usage_did_you_mean, 0 },
	{ "report-json-switch", test_report_json_switch, 0 },
	{ "error-pid-nonexistent", test_pid_nonexistent, 0 },
	{ "error-pid-not-numeric", test_pid_not_numeric, 0 },
	{ "error-not-jemalloc", test_not_jemalloc, 0 },
	{ "error-jemalloc-without-prof", test_no_prof, 0 },
	{ "error-unknown-mallctl", test_unknown_mallctl, 0 },
	{ "error-set-bad-value", test_set_bad_value, 0 },
	{ "error-set-read-only", test_set_read_only, 0 },
	{ "error-purge-bad-arena", test_purge_bad_arena, 0 },
	{ "error-zombie-target", test_zombie_target, 0 },
	{ "error-target-killed", test_target_killed, 0 },
	{ "error-interrupted", test_interrupted, 0 },
	{ "error-not-permitted", test_not_permitted, 0 },
	{ NULL, NULL, 0 },
};
