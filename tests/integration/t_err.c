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
#include <dirent.h>
#include <sys/stat.h>
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
	struct hres r = { 0 };
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
	/* Usage errors: exit 2.  Other words are process names now (pid-by-name). */
	static const char *const bad[] = { "", "-5", "0", "99999999999999999999" };
	struct hres r = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]) && !t_failed(); i++) {
		hc_run(&r, NULL, "stats", "-p", bad[i], NULL);
		if (hres_crash(&r) || hres_exit(&r) != 2)
			t_fail("-p '%s': %s (wanted exit 2)", bad[i], hres_desc(&r));
		hres_free(&r);
	}
}

/* stderr must hold want and none of the process hints a file error used to get. */
static void expect_file_error(struct hres *r, const char *what, const char *want)
{
	static const char *const wrong[] = { "report this as a bug", "may have exited",
					     "target's user", "borrowed tid" };
	size_t i;

	if (expect_failure(r, what))
		return;
	if (!strstr(r->err, want)) {
		t_fail("%s: stderr lacks '%s': %.300s", what, want, r->err);
		return;
	}
	for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
		if (strstr(r->err, wrong[i])) {
			t_fail("%s: stderr says '%s': %.300s", what, wrong[i], r->err);
			return;
		}
}

/* Nothing but the names in keep[] may be in dir: no temporary file was left. */
static void expect_dir_holds(const char *dir, const char *const keep[], size_t nkeep)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		t_fail("opendir %s: %s", dir, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		bool ok = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");

		for (size_t i = 0; i < nkeep; i++)
			ok = ok || !strcmp(de->d_name, keep[i]);
		if (!ok) {
			t_fail("%s/%s was left behind", dir, de->d_name);
			break;
		}
	}
	closedir(d);
}

/*
 * An output that cannot be written is refused before any thread is
 * borrowed, with a hint about the file, never about the process; and
 * nothing, not even a temporary file, is left.
 */
static void test_output_paths(void)
{
	struct victim *v = shared_victim();
	char dir[400], sub[480], file[480], missing[480];
	struct hres r = { 0 };

	if (!v)
		return;
	snprintf(dir, sizeof(dir), "%s/outpaths", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(sub, sizeof(sub), "%s/adir", dir);
	mkdir(sub, 0755);
	snprintf(missing, sizeof(missing), "%s/no-such-dir/x.heap", dir);

	/* -v: "borrowed tid" would show that the target was touched first */
	hc_run(&r, NULL, "-v", "dump", "-p", v->spid, "-o", sub, NULL);
	expect_file_error(&r, "dump -o DIRECTORY", "names a directory");
	if (!t_failed() && !strstr(r.err, "give a file name"))
		t_fail("dump -o DIRECTORY: no 'give a file name' hint: %.300s", r.err);
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "-v", "dump", "-p", v->spid, "-o", missing, NULL);
	expect_file_error(&r, "dump -o MISSING/x.heap", "does not exist");
	if (!t_failed() && !strstr(r.err, "create it or choose another path"))
		t_fail("dump -o MISSING/x.heap: hint: %.300s", r.err);
	hres_free(&r);
	if (t_failed())
		return;
	/* sysfs refuses new files even to root (EACCES, or EROFS in containers) */
	hc_run(&r, NULL, "-v", "dump", "-p", v->spid, "-o", "/sys/heapctl-test.heap", NULL);
	expect_file_error(&r, "dump -o /sys/x.heap", "choose a writable path");
	hres_free(&r);
	if (t_failed())
		return;
	/* the other writers of files: --svg/--folded, leak and report */
	snprintf(file, sizeof(file), "%s/ok.heap", dir);
	hc_run(&r, NULL, "-v", "dump", "-p", v->spid, "-o", file, "--svg", missing, NULL);
	expect_file_error(&r, "dump --svg MISSING/x", "does not exist");
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "-v", "dump", "-p", v->spid, "-o", file, "--folded", sub, NULL);
	expect_file_error(&r, "dump --folded DIRECTORY", "names a directory");
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "-v", "leak", "-p", v->spid, "--for", "1h", "-o", sub, NULL);
	expect_file_error(&r, "leak -o DIRECTORY", "names a directory");
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "report", "/dev/null", "-o", missing, "--format", "text", NULL);
	expect_file_error(&r, "report -o MISSING/x", "does not exist");
	hres_free(&r);
	if (t_failed())
		return;
	{
		const char *const keep[] = { "adir" };

		expect_dir_holds(dir, keep, 1);
		if (!t_failed())
			expect_dir_holds(sub, NULL, 0);
	}
	if (!t_failed())
		victim_check(v, 0);
}

/*
 * An output that fails only when it is put in place (/dev/full is writable
 * until written): the failure is reported, no success is claimed (no
 * "wrote", no --json object on stdout), and the profile that did get
 * written is said to be there.
 */
static void test_dump_commit_fails(void)
{
	struct victim *v = shared_victim();
	char dir[400], file[480];
	struct stat st;
	struct hres r = { 0 };

	if (!v)
		return;
	if (access("/dev/full", W_OK)) {
		t_note("no writable /dev/full here: not run");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/commitfail", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(file, sizeof(file), "%s/ok.heap", dir);
	unlink(file);
	hc_run(&r, NULL, "dump", "-p", v->spid, "-o", file, "--svg", "/dev/full", "--json", NULL);
	if (!expect_failure(&r, "dump --svg /dev/full --json") && !strstr(r.err, "/dev/full"))
		t_fail("%s: stderr does not name /dev/full: %.300s", "dump --svg /dev/full --json", r.err);
	if (!t_failed() && r.out[0])
		t_fail("dump --svg /dev/full --json failed but printed on stdout: %.300s", r.out);
	if (!t_failed() && stat(file, &st))
		t_fail("dump --svg /dev/full: the profile %s is missing: %s", file, strerror(errno));
	if (!t_failed() && !strstr(r.err, "the profile itself was written to"))
		t_fail("dump --svg /dev/full: not said where the profile is: %.300s", r.err);
	hres_free(&r);
	if (t_failed())
		return;
	unlink(file);
	hc_run(&r, NULL, "dump", "-p", v->spid, "-o", file, "--svg", "/dev/full", NULL);
	if (!expect_failure(&r, "dump --svg /dev/full") && !strstr(r.err, "/dev/full"))
		t_fail("%s: stderr does not name /dev/full: %.300s", "dump --svg /dev/full", r.err);
	if (!t_failed() && strstr(r.out, "wrote "))
		t_fail("dump --svg /dev/full failed but said it wrote it: %.300s", r.out);
	hres_free(&r);
	if (t_failed())
		return;
	hc_run(&r, NULL, "dump", "-p", v->spid, "-o", "/dev/full", "--json", NULL);
	if (!expect_failure(&r, "dump -o /dev/full --json") && !strstr(r.err, "/dev/full"))
		t_fail("%s: stderr does not name /dev/full: %.300s", "dump -o /dev/full --json", r.err);
	if (!t_failed() && r.out[0])
		t_fail("dump -o /dev/full --json failed but printed on stdout: %.300s", r.out);
	hres_free(&r);
	unlink(file);
	rmdir(dir);
	if (!t_failed())
		victim_check(v, 0);
}

/*
 * leak checks its arguments before it starts: a mistake is not found
 * after --for has been waited out, and the target is left as it was.
 */
static void test_leak_validates(void)
{
	struct victim *v = shared_victim();
	char dir[400], png[480], val[64];
	struct hres r = { 0 };

	if (!v)
		return;
	snprintf(dir, sizeof(dir), "%s/leakval", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(png, sizeof(png), "%s/x.png", dir);
	/* --for 1h: a late check would run into the harness's timeout */
	hc_run(&r, NULL, "leak", "-p", v->spid, "--for", "1h", "-o", png, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 2)
		t_fail("leak -o x.png: %s (wanted exit 2)", hres_desc(&r));
	else if (!strstr(r.err, "cannot tell the format") || !strstr(r.err, ".svg"))
		t_fail("leak -o x.png: not refused as an unknown suffix: %.300s", r.err);
	hres_free(&r);
	if (t_failed())
		return;
	if (!access(png, F_OK)) {
		t_fail("leak -o x.png was refused but wrote %s", png);
		return;
	}
	hc_run(&r, NULL, "leak", "-p", v->spid, "--for", "1h", "-o", "/sys/x.svg", NULL);
	expect_file_error(&r, "leak -o /sys/x.svg", "choose a writable path");
	hres_free(&r);
	if (t_failed() || victim_ctl(v, "prof.active", val, sizeof(val)))
		return;
	if (strcmp(val, "false"))
		t_fail("a refused leak left prof.active=%s", val);
	else
		victim_check(v, 0);
}

static bool proc_has(pid_t pid, const char *file, const char *want)
{
	char path[64], *text;
	bool has;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	text = read_file_str(path);
	has = text && strstr(text, want);
	free(text);
	return has;
}

/* One run, one exit code, and stderr must say want and not unwanted (or NULL). */
static void expect_said(int want_exit, const char *want, const char *unwanted,
			const char *const args[])
{
	struct hres r = { 0 };

	hc_runv(&r, NULL, args);
	if (hres_crash(&r) || hres_exit(&r) != want_exit)
		t_fail("%s: %s (wanted exit %d)", r.cmdline, hres_desc(&r), want_exit);
	else if (!strstr(r.err, "hint:"))
		t_fail("%s: no hint: %.300s", r.cmdline, r.err);
	else if (!strstr(r.err, want))
		t_fail("%s: stderr lacks '%s': %.300s", r.cmdline, want, r.err);
	else if (unwanted && strcasestr_(r.err, unwanted))
		t_fail("%s: stderr says '%s': %.300s", r.cmdline, unwanted, r.err);
	hres_free(&r);
}

/* Odd pids, each with its own accurate message. */
static void test_odd_pids(void)
{
	struct victim *v = shared_victim();
	char self[16], spid[16], pidmax[32] = "";
	FILE *f;
	pid_t z;

	if (!v)
		return;
	/* a kernel thread: pid 2 is kthreadd wherever there is a kthreadd */
	if (proc_has(2, "status", "Name:\tkthreadd")) {
		const char *const stats[] = { "stats", "-p", "2", NULL };
		const char *const maps[] = { "maps", "-p", "2", NULL };

		expect_said(1, "is a kernel thread", "exited", stats);
		expect_said(1, "is a kernel thread", "profile", maps);
	} else {
		t_note("no kthreadd at pid 2 here: kernel thread case not run");
	}
	if (t_failed())
		return;

	/* a zombie: a child that exited, not reaped while heapctl looks */
	z = fork_exited();
	if (z < 0)
		return;
	snprintf(spid, sizeof(spid), "%d", (int)z);
	{
		const char *const maps[] = { "maps", "-p", spid, NULL };
		const char *const stats[] = { "stats", "-p", spid, NULL };

		expect_said(1, "is a zombie", "profile", maps);
		if (!t_failed())
			expect_said(1, "is a zombie", NULL, stats);
	}
	waitpid(z, NULL, 0);
	if (t_failed())
		return;

	/* --tid of another process: this harness's own pid */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	{
		const char *const args[] = { "stats", "-p", v->spid, "--tid", self, NULL };
		char want[64];

		snprintf(want, sizeof(want), "belongs to pid %s", self);
		expect_said(2, want, "may have exited", args);
		if (!t_failed())
			expect_said(2, "is not a thread of pid", NULL, args);
	}
	if (t_failed())
		return;

	/* a pid past pid_max: out of range, and the limit is named */
	f = fopen("/proc/sys/kernel/pid_max", "re");
	if (f) {
		long m;

		if (fscanf(f, "%ld", &m) == 1)
			snprintf(pidmax, sizeof(pidmax), "up to %ld", m - 1);
		fclose(f);
	}
	{
		const char *const args[] = { "stats", "-p", "99999999999999999999", NULL };

		expect_said(2, "out of range", "positive number", args);
		if (!t_failed() && pidmax[0])
			expect_said(2, pidmax, NULL, args);
	}
	if (t_failed())
		return;

	/* -p twice: refused, not the last one silently */
	{
		const char *const args[] = { "stats", "-p", v->spid, "-p", "1", NULL };

		expect_said(2, "-p given twice", NULL, args);
	}
	if (!t_failed())
		victim_check(v, 0);
}

static void test_not_jemalloc(void)
{
	static const char *const cmds[][3] = {
		/*
		 * glibc is driven now: its stats work, but it has no profiler of its
		 * own ("prof on" loads heapctl's: t_sampler.c) and no mallctl
		 */
		{ "prof", "on", "--sampler=native" }, { "get", "opt.prof", NULL },
	};
	struct victim vv, *v = &vv;
	char why[512], reply[256];
	struct hres r = { 0 };
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
		if (cmds[i][2])
			args[n++] = cmds[i][2];
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
	/* the allocator's own profiler; "prof on" alone loads heapctl's (sampler-jemalloc) */
	hc_run(&r, NULL, "prof", "on", "-p", v->spid, "--sampler", "native", NULL);
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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };
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
		/* heapctl's time to notice counts from the kill (a slow machine delays it) */
		hc_finish(&hp, &r, HC_TIMEOUT_S + (int)(delay_us / 1000000));
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

/*
 * Ctrl-C, SIGTERM, SIGHUP or SIGQUIT while heapctl works: the call in flight finishes,
 * the target is restored, and heapctl says so before the signal ends it.
 * Spread over a whole call, some rounds land mid-operation.
 */
static void test_interrupted(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
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
		int sig = sigs[round % 4];
		struct hproc hp;
		struct hres r = { 0 };

		if (hc_startv(&hp, NULL, args)) {
			t_fail("cannot start heapctl");
			break;
		}
		/*
		 * Until exec the child is a copy of this harness, whose own SIGINT
		 * handling would strike the victim: wait for heapctl to be running.
		 */
		wait_exec(hp.pid, cfg.heapctl, 2000);
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

/*
 * Ctrl-C at any moment of a dump: the output's temporary file goes with
 * heapctl.  The directory holds the finished profile or nothing.
 */
static void test_interrupted_dump(void)
{
	struct victim *v = shared_victim();
	char dir[400], out[480];
	struct hres cal;
	long span_us;
	int stopped = 0;

	if (!v)
		return;
	snprintf(dir, sizeof(dir), "%s/intdump", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(out, sizeof(out), "%s/x.heap", dir);
	if (hc_expect(&cal, 0, "dump", "-p", v->spid, "-o", out, NULL)) {
		hres_free(&cal);
		return;
	}
	span_us = cal.ms * 1000 + 1000;
	hres_free(&cal);
	for (int round = 0; round < 12 && !t_failed(); round++) {
		const char *args[] = { "dump", "-p", v->spid, "-o", out, NULL };
		const char *const keep[] = { "x.heap" };
		struct hproc hp;
		struct hres r = { 0 };

		unlink(out);
		if (hc_startv(&hp, NULL, args)) {
			t_fail("cannot start heapctl");
			break;
		}
		wait_exec(hp.pid, cfg.heapctl, 2000);
		usleep((useconds_t)(span_us * (round + 1) / 13));
		kill(hp.pid, SIGINT);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		if (r.timed_out || (WIFSIGNALED(r.status) && WTERMSIG(r.status) != SIGINT) ||
		    (WIFEXITED(r.status) && WEXITSTATUS(r.status) > 1))
			t_fail("round %d: %s", round, hres_desc(&r));
		else if (WIFSIGNALED(r.status))
			stopped++;
		hres_free(&r);
		if (!t_failed())
			expect_dir_holds(dir, keep, 1);
	}
	t_note("dump interrupted: %d of 12 rounds ended by the signal", stopped);
	if (!t_failed())
		victim_check(v, 0);
	if (!t_failed() && !stopped)
		t_skip(false, "no round interrupted the dump: the signals all came too late");
}

/* No right to ptrace the target: a clear refusal that names the fix. */
static void test_not_permitted(void)
{
	struct victim vv, *v = &vv;
	const char *argv[9];
	char why[512];
	struct hres r = { 0 };
	int n;

	if (getuid() != 0) {
		t_skip(false, "needs root to run heapctl as another user");
		return;
	}
	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	/* as uid and gid 65534 without groups, dropped by the harness (itest_exec_as()) */
	n = exec_as(argv, "--uid", "65534");
	argv[n++] = cfg.heapctl;
	argv[n++] = "stats";
	argv[n++] = "-p";
	argv[n++] = v->spid;
	argv[n] = NULL;
	run_prog(&r, argv, HC_TIMEOUT_S);
	/* heapctl exits 0, 1 or 2: 127 is itest_exec_as()'s failed exec */
	if (hres_exit(&r) == 126 || hres_exit(&r) == 127)
		t_skip(false, "heapctl is not executable by another user here: %.200s", r.err);
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
 * A target at its RLIMIT_AS (prlimit --as): heapctl maps nothing in it, so
 * stats works as anywhere else, with the limit in place, and the target is
 * unharmed.  Its soft limit is set to what it maps now, so that not one
 * more page fits; the victim's threads sit in read() and map nothing
 * meanwhile.
 */
static void test_as_limit(void)
{
	struct victim vv, *v = &vv;
	struct rlimit old, low, now;
	char why[512], reply[256];
	unsigned long long vs;
	struct hres r = { 0 };

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
	if (hres_exit(&r) != 0 || !strstr(r.out, "arena"))
		t_fail("stats on a process at its RLIMIT_AS: %s; %.400s", hres_desc(&r), r.err);
	hres_free(&r);
	if (vm_size(v->pid) != vs)
		t_fail("VmSize went from %llu to %llu bytes", vs, vm_size(v->pid));
	if (prlimit(v->pid, RLIMIT_AS, NULL, &now) || now.rlim_cur != low.rlim_cur)
		t_fail("the limit changed: %llu", (unsigned long long)now.rlim_cur);
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
	struct hres r = { 0 };
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
	struct hres r = { 0 };

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
	struct hres r = { 0 };
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
	/* heapctl drives four allocators; the help must not say jemalloc alone. */
	else if (!strstr(a.out, "glibc") || !strstr(a.out, "tcmalloc") ||
		 !strstr(a.out, "mimalloc") || !strstr(a.out, "  help "))
		t_fail("--help names not glibc, tcmalloc and mimalloc, or not 'help': %.300s", a.out);
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
	struct hres r = { 0 };
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

/* --json's summary goes to stdout: dump and leak refuse -o - with it, in the same words. */
static void test_json_output_stdout(void)
{
	static const char *const cmds[] = { "dump", "leak" };
	struct hres r = { 0 };

	for (size_t i = 0; i < 2 && !t_failed(); i++) {
		char want[64];

		hc_run(&r, NULL, cmds[i], "-p", "1", "-o", "-", "--json", NULL);
		snprintf(want, sizeof(want), "%s --json prints its summary on stdout", cmds[i]);
		if (!expect_usage(&r, cmds[i], want) && !strstr(r.err, "give -o a file name"))
			t_fail("%s -o - --json: no hint to name a file: %.300s", cmds[i], r.err);
		hres_free(&r);
	}
}

/*
 * The checked-in jemalloc profile, found from heapctl's path
 * (BUILD/heapctl -> tests/data/prof/...); false and a skip if it is not there.
 */
static bool sample_profile(char *path, size_t len)
{
	snprintf(path, len, "%s", cfg.heapctl);
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(path, '/');

		if (slash)
			*slash = '\0';
	}
	strncat(path, "/tests/data/prof/leaker-5.3.heap", len - strlen(path) - 1);
	if (access(path, R_OK)) {
		t_skip(false, "%s not found next to the build", path);
		return false;
	}
	return true;
}

/* report --json is report --format json; asking for two formats is an error. */
static void test_report_json_switch(void)
{
	char path[512];
	struct hres a, b;

	if (!sample_profile(path, sizeof(path)))
		return;
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

/*
 * report's -p only helps find the binary and libraries: a process that has
 * exited since the profile was taken still gets its report (as without -p),
 * while a -p that is no pid at all is still a usage error.
 */
static void test_report_pid_exited(void)
{
	char path[512], spid[16];
	struct hres a, b;
	pid_t pid;

	if (!sample_profile(path, sizeof(path)))
		return;
	pid = fork_exited();
	if (pid < 0)
		return;
	waitpid(pid, NULL, 0);
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	memset(&b, 0, sizeof(b));
	if (hc_expect(&a, 0, "report", path, "--format", "folded", NULL) ||
	    hc_expect(&b, 0, "report", path, "--format", "folded", "-p", spid, NULL))
		goto out;
	if (strcmp(a.out, b.out))
		t_fail("report -p EXITED differs from report without -p: %.200s", b.out);
	hres_free(&a);
	memset(&a, 0, sizeof(a));
	hc_run(&a, NULL, "report", path, "-p", "0", NULL);
	expect_usage(&a, "report -p 0", "invalid pid");
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
	{ "usage-json-output-stdout", test_json_output_stdout, 0 },
	{ "report-pid-exited", test_report_pid_exited, 0 },
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
	{ "error-output-paths", test_output_paths, 0 },
	{ "error-dump-commit-fails", test_dump_commit_fails, 0 },
	{ "error-leak-validates", test_leak_validates, 0 },
	{ "error-odd-pids", test_odd_pids, 0 },
	{ "error-interrupted-dump", test_interrupted_dump, 0 },
	{ NULL, NULL, 0 },
};
