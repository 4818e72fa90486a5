// SPDX-License-Identifier: MIT
/*
 * The command line as a whole: output to stdout, leak's signals and
 * scratch files, -p by name, the one ptrace wrapper, and the ptrace
 * requests a borrow makes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "itest.h"

static void test_output_stdout(void)
{
	struct victim *v = shared_victim();
	char dir[400], dash[480], heap[480];
	struct stat st;
	struct hres r = { 0 };
	FILE *f;

	if (!v)
		return;
	snprintf(dir, sizeof(dir), "%s/stdout", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(dash, sizeof(dash), "%s/-", dir);
	snprintf(heap, sizeof(heap), "%s/saved.heap", dir);

	{
		const char *const args[] = { "dump", "-p", v->spid, "-o", "-", NULL };

		hc_runv(&r, dir, args);
	}
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("dump -o -: %s", hres_desc(&r));
		goto out;
	}
	if (strncmp(r.out, "heap_v2/", 8)) {
		t_fail("dump -o -: stdout is not the profile: %.100s", r.out);
		goto out;
	}
	if (strstr(r.out, "wrote ") || strstr(r.out, "next:")) {
		t_fail("dump -o -: messages mixed into the profile on stdout");
		goto out;
	}
	/* keep it: report reads it below */
	f = fopen(heap, "we");
	if (!f || fwrite(r.out, 1, r.outlen, f) != r.outlen || fclose(f)) {
		t_fail("saving the profile: %s", strerror(errno));
		goto out;
	}
	hres_free(&r);

	{
		const char *const args[] = { "dump", "-p", v->spid, "-o", "x.heap", "--svg", "-",
					     NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("dump --svg -: %s", hres_desc(&r));
			goto out;
		}
		if (!strstr(r.out, "<svg") || strstr(r.out, "wrote ")) {
			t_fail("dump --svg -: stdout is not the SVG alone: %.200s", r.out);
			goto out;
		}
		hres_free(&r);
	}
	{
		const char *const args[] = { "report", heap, "--format", "folded", "-o", "-", NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("report -o -: %s", hres_desc(&r));
			goto out;
		}
		hres_free(&r);
	}
	{
		const char *const args[] = { "leak", "-p", v->spid, "--for", "0.2", "-o", "-", NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("leak -o -: %s", hres_desc(&r));
			goto out;
		}
		if (!strstr(r.out, "<svg") || strstr(r.out, "pid ")) {
			t_fail("leak -o -: stdout is not the SVG alone: %.200s", r.out);
			goto out;
		}
		if (!strstr(r.err, "pid ") || !strstr(r.err, " in "))
			t_fail("leak -o -: the summary is not on stderr: %.200s", r.err);
		hres_free(&r);
	}
	if (!t_failed() && lstat(dash, &st) == 0)
		t_fail("a file named '-' was created in heapctl's cwd %s", dir);
	if (!t_failed())
		victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * Ctrl-C during leak's wait ends the wait, not the measurement: the second
 * profile is taken at once, the growth so far is reported and written, and
 * prof.active is put back as it was found.  The signal is sent once heapctl
 * has said on stderr that the wait began.
 */
/*
 * A termination signal during the wait ends it early: the second profile is
 * taken, prof.active restored, the growth reported.  SIGQUIT too: it once
 * killed heapctl with prof.active left on.
 */
static void leak_signal(int sig)
{
	struct victim *v = shared_victim();
	char svg[400], err[4096] = "", val[64], why[512];
	const char *args[10];
	struct hproc hp;
	struct hres r = { 0 };
	bool begun = false;

	if (!v)
		return;
	if (victim_ctl(v, "prof.active", val, sizeof(val)) || strcmp(val, "false")) {
		t_fail("the shared victim should start with prof.active=false, reads %s", val);
		return;
	}
	snprintf(svg, sizeof(svg), "%s/leak-%s.svg", cfg.tmpdir, sigabbrev_np(sig));
	unlink(svg);
	args[0] = "leak";
	args[1] = "-p";
	args[2] = v->spid;
	args[3] = "--for";
	args[4] = "1h";
	args[5] = "-o";
	args[6] = svg;
	args[7] = NULL;
	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	/* Read stderr up to the line that announces the wait. */
	begun = hp_err_until(&hp, "measuring growth", err, sizeof(err), HC_TIMEOUT_S * 1000L);
	if (!begun) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		t_fail("leak never said that the wait began: %.300s%.300s", err, r.err);
		hres_free(&r);
		return;
	}
	kill(hp.pid, sig);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("leak after SIG%s: %s (wanted exit 0); before: %.200s", sigabbrev_np(sig),
		       hres_desc(&r), err);
		goto out;
	}
	if (!strstr(r.out, "pid ") || !strstr(r.out, " in ")) {
		t_fail("leak after SIG%s reported nothing: %.300s", sigabbrev_np(sig), r.out);
		goto out;
	}
	snprintf(why, sizeof(why), "SIG%s", sigabbrev_np(sig));
	if (!strstr(r.err, why)) {
		t_fail("leak after %s did not say it ended early: %.300s", why, r.err);
		goto out;
	}
	if (!file_starts_with(svg, "<?xml", why, sizeof(why)) &&
	    !file_starts_with(svg, "<svg", why, sizeof(why))) {
		t_fail("leak after SIG%s: %s", sigabbrev_np(sig), why);
		goto out;
	}
	snprintf(why, sizeof(why), "leak ended by SIG%s", sigabbrev_np(sig));
	if (!expect_ctl(v, "prof.active", "false", why))
		victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_leak_sigint(void)
{
	leak_signal(SIGINT);
}

static void test_leak_sigquit(void)
{
	leak_signal(SIGQUIT);
}

/*
 * A signal during the warm-up, before the first profile: nothing was
 * measured, and leak says so (exit 1, error and hint), with prof.active
 * put back as it was and the target unharmed.
 */
static void test_leak_sigint_warmup(void)
{
	struct victim *v = shared_victim();
	const char *args[] = { "leak", "-p", v ? v->spid : "0", "--for", "1h", "-o", "/dev/null",
			       "--format", "folded", NULL };
	char err[4096] = "";
	struct hproc hp;
	struct hres r = { 0 };

	if (!v)
		return;
	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	if (!hp_err_until(&hp, "warming up", err, sizeof(err), HC_TIMEOUT_S * 1000L)) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		t_fail("leak never said it warms up: %.300s%.300s", err, r.err);
		goto out;
	}
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "nothing was measured") ||
	    !strstr(r.err, "hint:"))
		t_fail("leak after SIGINT in its warm-up: %s: %.400s", hres_desc(&r), r.err);
	expect_ctl(v, "prof.active", "false", "leak stopped in its warm-up");
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* leak's two profiles go under $TMPDIR, as every scratch file of heapctl does. */
static void test_leak_tmpdir(void)
{
	struct victim *v = shared_victim();
	char tmp[400], svg[480], want[480], cmd[1000];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct hres r = { 0 };

	if (!v)
		goto out_env;
	snprintf(tmp, sizeof(tmp), "%s/leak-tmpdir", cfg.tmpdir);
	mkdir(tmp, 0700);
	snprintf(svg, sizeof(svg), "%s/leak-tmpdir.svg", cfg.tmpdir);
	setenv("TMPDIR", tmp, 1);
	/* -v keeps the profiles and says where */
	hc_run(&r, NULL, "-v", "leak", "-p", v->spid, "--for", "0.2", "-o", svg, NULL);
	if (old)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	snprintf(want, sizeof(want), "profiles kept in %s/heapctl-leak.", tmp);
	if (hres_crash(&r) || hres_exit(&r) != 0)
		t_fail("leak with TMPDIR=%s: %s", tmp, hres_desc(&r));
	else if (!strstr(r.err, want))
		t_fail("leak did not keep its profiles under TMPDIR (%s): %.400s", want, r.err);
	hres_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", tmp, svg);
	if (system(cmd))
		t_note("could not remove %s", tmp);
	if (!t_failed())
		expect_ctl(v, "prof.active", "false", "leak with TMPDIR");
out_env:
	free(saved);
}

/* -p NAME, like pidof: one match drives it, several are listed and refused. */
static void test_pid_by_name(void)
{
	char name[64], link[600], target[600], bad[512];
	struct victim a, b;
	struct hres r = { 0 };
	bool a_up = false, b_up = false;

	/* A name no other process has: a symlink to the victim, so argv[0] and comm carry it. */
	snprintf(name, sizeof(name), "jemalloc-%d", (int)getpid() % 100000);
	snprintf(link, sizeof(link), "%s/%s", cfg.victim_dir, name);
	snprintf(target, sizeof(target), "%s/jemalloc_victim", cfg.victim_dir);
	unlink(link);
	if (symlink(target, link)) {
		t_skip(false, "cannot make %s: %s", link, strerror(errno));
		return;
	}
	if (victim_start(&a, name, "prof:true,prof_active:false", bad, sizeof(bad))) {
		t_fail("%s", bad);
		goto out;
	}
	a_up = true;
	if (hc_expect(&r, 0, "stats", "-p", name, "--json", NULL))
		goto out_r;
	if (!strstr(r.out, a.spid)) {
		t_fail("stats -p %s did not drive pid %s: %.200s", name, a.spid, r.out);
		goto out_r;
	}
	hres_free(&r);
	if (victim_check(&a, 0))
		goto out;

	if (victim_start(&b, name, "prof:true,prof_active:false", bad, sizeof(bad))) {
		t_fail("%s", bad);
		goto out;
	}
	b_up = true;
	hc_run(&r, NULL, "stats", "-p", name, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 2) {
		t_fail("stats -p NAME with two matches: %s (wanted exit 2)", hres_desc(&r));
		goto out_r;
	}
	if (!strstr(r.err, "2 processes are named") || !strstr(r.err, a.spid) ||
	    !strstr(r.err, b.spid) || !strstr(r.err, "-p PID")) {
		t_fail("two matches: not both listed with a hint to pick one: %.400s", r.err);
		goto out_r;
	}
	hres_free(&r);

	snprintf(bad, sizeof(bad), "no-such-%s", name);
	hc_run(&r, NULL, "stats", "-p", bad, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "no process named") ||
	    !strstr(r.err, "heapctl list"))
		t_fail("stats -p %s: %s: %.300s", bad, hres_desc(&r), r.err);
	hres_free(&r);
	/* report's optional -p goes through the same lookup */
	if (!t_failed()) {
		hc_run(&r, NULL, "report", "/dev/null", "-p", name, NULL);
		if (hres_crash(&r) || hres_exit(&r) != 2 || !strstr(r.err, "2 processes are named"))
			t_fail("report -p NAME with two matches: %s: %.300s", hres_desc(&r), r.err);
		hres_free(&r);
	}
	if (!t_failed() && !victim_check(&a, 0))
		victim_check(&b, 0);
	goto out;
out_r:
	hres_free(&r);
out:
	if (a_up)
		victim_stop(&a);
	if (b_up)
		victim_stop(&b);
	unlink(link);
}

/*
 * Run heapctl ARGS (NULL-terminated) under "strace -f -qq -e trace=TRACE"
 * into log, and open the log.  NULL with the test failed or skipped.
 */
static FILE *strace_heapctl(const char *log, const char *trace, const char *const args[])
{
	const char *argv[32];
	struct hres r = { 0 };
	size_t n = 0;
	FILE *f = NULL;

	if (access("/usr/bin/strace", X_OK)) {
		t_skip(false, "strace is not installed");
		return NULL;
	}
	argv[n++] = "/usr/bin/strace";
	argv[n++] = "-f";
	argv[n++] = "-qq";
	argv[n++] = "-e";
	argv[n++] = trace;
	argv[n++] = "-o";
	argv[n++] = log;
	argv[n++] = "/usr/bin/env";
	argv[n++] = asan_no_leak_check();
	argv[n++] = cfg.heapctl;
	for (size_t i = 0; args[i] && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	run_prog(&r, argv, 60);
	if (hres_exit(&r) != 0)
		t_fail("strace heapctl %s: %s", args[0], hres_desc(&r));
	else if (!(f = fopen(log, "re")))
		t_fail("no strace log %s", log);
	hres_free(&r);
	return f;
}

/*
 * Only src/lib/borrow/ptrace.c calls ptrace(2), libraries included (libunwind's
 * ptrace accessors once read registers on their own): heapctl unwound at
 * every ptrace(2) it makes (callers.c), the first frame of its own is one
 * of ptrace.c's ptrace_* wrappers.
 */
static void test_ptrace_one_wrapper(void)
{
	static const char *const cmds[][3] = {
		{ "prof", "status", NULL }, { "stats", "--full", NULL }, { "purge", NULL, NULL },
	};
	struct victim *v = shared_victim();
	unsigned int calls = 0;

	if (!v)
		return;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *const args[] = { cmds[i][0], "-p", v->spid, cmds[i][1], NULL };
		char bad[1024], why[600];
		unsigned int n;
		int r = ptrace_callers(args, &n, bad, sizeof(bad), why, sizeof(why));

		if (r > 0) {
			t_skip(false, "%s", why);
			return;
		}
		if (r < 0)
			t_fail("%s", why);
		else if (bad[0])
			t_fail("heapctl %s: ptrace(2) not from ptrace.c: %s", args[0], bad);
		calls += n;
	}
	if (!t_failed() && calls < 10)
		t_fail("the tracer saw %u ptrace calls (wanted a borrow's worth each)", calls);
	else if (!t_failed())
		t_note("%u ptrace calls, each from ptrace.c", calls);
}

/*
 * What a one-call command does while its thread is stopped, between the
 * interrupt and the detach: the registers are read once, at the stop.  On
 * x86_64 the restorer's stop is known from the scratch the result is read
 * from anyway (the ret gadget's slot), with no register read; arm64 reads
 * x0 there.  And no termination signal is looked for: borrow() looked
 * just before the seize.
 */
static void test_borrow_requests(void)
{
#if defined(__x86_64__)
	const unsigned int want_regs = 1;
#else
	const unsigned int want_regs = 2;
#endif
	static const char *const cmds[] = { "on", "off" };
	struct victim *v = shared_victim();
	char log[400], line[1024], stid[16];

	if (!v)
		return;
	snprintf(log, sizeof(log), "%s/borrow-requests.%s", cfg.tmpdir, v->spid);
	snprintf(stid, sizeof(stid), "%d", (int)v->t_read);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *const args[] = { "prof", "-p", v->spid, "--tid", stid, cmds[i], NULL };
		unsigned int regs = 0, pending = 0, borrows = 0;
		bool stopped = false;
		FILE *f;

		f = strace_heapctl(log, "trace=ptrace,rt_sigpending", args);
		if (!f)
			return;
		while (fgets(line, sizeof(line), f)) {
			if (strstr(line, "PTRACE_INTERRUPT")) {
				stopped = true;
				borrows++;
			} else if (strstr(line, "PTRACE_DETACH")) {
				stopped = false;
			} else if (stopped && strstr(line, "PTRACE_GETREGSET") &&
				   strstr(line, "NT_PRSTATUS")) {
				regs++;
			} else if (stopped && strstr(line, "rt_sigpending(")) {
				pending++;
			}
		}
		fclose(f);
		unlink(log);
		if (borrows != 1)
			t_fail("prof %s: %u borrows under strace (wanted 1)", cmds[i], borrows);
		else if (regs != want_regs || pending)
			t_fail("prof %s: %u register reads (wanted %u) and %u signal checks (wanted "
			       "none) while the thread was stopped", cmds[i], regs, want_regs,
			       pending);
	}
	if (!t_failed())
		victim_check(v, 0);
}

const struct itest t_cli_tests[] = {
	{ "ptrace-one-wrapper", test_ptrace_one_wrapper, 0 },
	{ "borrow-requests", test_borrow_requests, 0 },
	{ "output-stdout", test_output_stdout, 0 },
	{ "leak-sigint", test_leak_sigint, 0 },
	{ "leak-sigquit", test_leak_sigquit, 0 },
	{ "leak-sigint-warmup", test_leak_sigint_warmup, 0 },
	{ "leak-tmpdir", test_leak_tmpdir, 0 },
	{ "pid-by-name", test_pid_by_name, 0 },
	{ NULL, NULL, 0 },
};
