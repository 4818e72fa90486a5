// SPDX-License-Identifier: MIT
/*
 * Hostile and odd targets.  Each must get a correct result or a clear
 * refusal (exit 1 with "error:" and "hint:"), and be unchanged afterwards:
 * alive, untraced, not stopped (unless it was), answering its protocol.
 *
 * Victims: jemalloc_hostile (one mode per oddity, see its header),
 * jemalloc_victim, and fixtures built by `make fixtures` into the victim
 * directory: fx_idle32 (gcc -m32), fx_jemalloc_static (-static with
 * libjemalloc.a: .symtab only), fx_jemalloc_je and fx_jemalloc_rjem (the
 * victim against Debian's libjemalloc_pic.a with every symbol it defines
 * renamed with the prefix), fx_jemalloc_dbg (fx_jemalloc_rjem stripped,
 * its symbols only in fx_jemalloc_dbg.debug, named by .gnu_debuglink).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harm.h"

#define VCONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define REPLY_MS 10000

static void fx_path(char *out, size_t sz, const char *name)
{
	snprintf(out, sz, "%s/%s", cfg.victim_dir, name);
}

/* jemalloc_hostile in MODE. */
static int hv_start(struct victim *v, const char *mode, char *why, size_t whysz)
{
	char path[512];
	const char *argv[] = { path, "3", "4", "5", mode, NULL };

	fx_path(path, sizeof(path), "jemalloc_hostile");
	return victim_start_argv(v, argv, VCONF, NULL, 0, why, whysz);
}

/* exit 0, or exit 1 with error: and hint:.  Returns the exit code, -1 on anything else. */
static int ok_or_refused(struct hres *r, const char *what)
{
	const char *crash = hres_crash(r);

	if (crash || r->timed_out) {
		t_fail("%s: %s%s%s", what, hres_desc(r), crash ? " " : "", crash ? crash : "");
		return -1;
	}
	if (hres_exit(r) == 0)
		return 0;
	if (hres_exit(r) == 1 && strstr(r->err, "error:") && strstr(r->err, "hint:"))
		return 1;
	t_fail("%s: %s (wanted exit 0, or 1 with a hint)", what, hres_desc(r));
	return -1;
}

static int refused(struct hres *r, const char *what)
{
	int e = ok_or_refused(r, what);

	if (e == 0)
		t_fail("%s: succeeded, a refusal was expected", what);
	return e == 1 ? 0 : -1;
}

/* Alive, untraced, not stopped, answering ping. */
static int unchanged(struct victim *v, const char *what)
{
	char why[512], reply[256];

	if (pid_exited(v->pid)) {
		t_fail("%s: the target died", what);
		return -1;
	}
	if (proc_check_tasks(v->pid, false, why, sizeof(why))) {
		t_fail("%s: target harmed: %s", what, why);
		return -1;
	}
	if (victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS) || strncmp(reply, "pong", 4)) {
		t_fail("%s: target harmed: no answer to ping (%s)", what, reply);
		return -1;
	}
	return 0;
}

static const char *first_error(const char *err)
{
	static char line[300];
	const char *e = strstr(err, "error:");
	size_t n;

	if (!e)
		return "";
	n = strcspn(e, "\n");
	snprintf(line, sizeof(line), "%.*s", (int)(n < 299 ? n : 299), e);
	return line;
}

/* ---- job control, zombie leader, exit and execve during a call ------- */

static void test_stopped_every_op(void)
{
	static const char *const ops[][3] = {
		{ "stats", "--full", NULL }, { "dump", "-o", NULL }, { "prof", "on", NULL },
		{ "purge", NULL, NULL },
	};
	struct victim vv, *v = &vv;
	char why[512], dump[320], reply[64];
	long end;

	if (victim_start(v, "jemalloc_victim", VCONF, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(dump, sizeof(dump), "%s/stopped.heap", cfg.tmpdir);
	kill(v->pid, SIGSTOP);
	for (end = now_ms() + 5000; !proc_all_stopped(v->pid) && now_ms() < end;)
		sleep_ms(2);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !t_failed(); i++) {
		for (int withtid = 0; withtid < 2 && !t_failed(); withtid++) {
			const char *a[12];
			char tid[16], what[96];
			struct hres r = { 0 };
			int n = 0;

			for (int k = 0; k < 3 && ops[i][k]; k++)
				a[n++] = ops[i][k];
			if (!strcmp(ops[i][0], "dump"))
				a[n++] = dump;
			a[n++] = "-p";
			a[n++] = v->spid;
			if (withtid) {
				snprintf(tid, sizeof(tid), "%d", (int)v->t_regs);
				a[n++] = "--tid";
				a[n++] = tid;
			}
			a[n] = NULL;
			snprintf(what, sizeof(what), "%s%s on a stopped target", ops[i][0],
				 withtid ? " --tid regs" : "");
			hc_runv(&r, NULL, a);
			ok_or_refused(&r, what);
			hres_free(&r);
			for (end = now_ms() + 2000;
			     proc_check_tasks(v->pid, true, why, sizeof(why)) && now_ms() < end;)
				sleep_ms(1);
			if (proc_check_tasks(v->pid, true, why, sizeof(why)))
				t_fail("%s: job-control stop not preserved: %s", what, why);
		}
	}
	kill(v->pid, SIGCONT);
	for (end = now_ms() + 5000; proc_check_tasks(v->pid, false, why, sizeof(why)) &&
				    now_ms() < end;)
		sleep_ms(2);
	/*
	 * The ticker's first tick after SIGCONT measures the stop itself:
	 * let it happen (a tick is 1 ms) before the gap count starts again.
	 */
	sleep_ms(20);
	victim_cmd(v, "tickreset", reply, sizeof(reply), 5000);
	if (!t_failed())
		victim_check(v, VC_EPOLL_EINTR_OK);
	victim_kill(v);
}

static void test_zombie_leader(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[256];
	struct hres r = { 0 };
	long end;
	char st = 0;

	if (hv_start(v, "threads", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_expect(v, "leaderexit", "leaderexit ok", reply, sizeof(reply)))
		goto out;
	/* wait until the leader is a zombie while the process lives on */
	for (end = now_ms() + 3000; now_ms() < end; sleep_ms(5)) {
		char path[64], *s;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)v->pid);
		s = read_file_str(path);
		if (s && strstr(s, "State:\tZ"))
			st = 'Z';
		free(s);
		if (st)
			break;
	}
	if (!st) {
		t_skip(false, "the leader never showed as a zombie");
		goto out;
	}
	hc_run(&r, NULL, "stats", "-p", v->spid, NULL);
	if (ok_or_refused(&r, "stats on a process whose main thread exited") == 1 &&
	    (strcasestr_(r.err, "zombie") || strcasestr_(r.err, "exited")))
		t_fail("live process with an exited main thread refused as dead: %s",
		       first_error(r.err));
	else if (hres_exit(&r) == 1)
		t_note("refused: %s", first_error(r.err));
	hres_free(&r);
	if (!t_failed() && victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS))
		t_fail("target harmed: no answer to ping (%s)", reply);
out:
	victim_kill(v);
}

static void test_exit_during_call(void)
{
	int rounds = 12, ok = 0, refusals = 0;

	for (int i = 0; i < rounds && !t_failed(); i++) {
		struct victim vv, *v = &vv;
		char why[512], cmd[64], reply[64];
		struct hres r = { 0 };
		int st = 0;

		if (hv_start(v, "threads", why, sizeof(why))) {
			t_fail("%s", why);
			return;
		}
		snprintf(cmd, sizeof(cmd), "exitsoon %d", (int)rnd_below(4000));
		if (victim_expect(v, cmd, "exitsoon ok", reply, sizeof(reply))) {
			victim_kill(v);
			return;
		}
		hc_run(&r, NULL, "stats", "--full", "-p", v->spid, NULL);
		switch (ok_or_refused(&r, "stats --full on a process exiting")) {
		case 0:
			ok++;
			break;
		case 1:
			refusals++;
			break;
		}
		hres_free(&r);
		if (wait_pid(v->pid, &st, 5000))
			t_fail("round %d: the target did not exit", i);
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
			t_fail("round %d: the target did not exit by itself with 7 (status 0x%x)", i,
			       st);
		v->pid = -1;
		victim_kill(v);
	}
	t_note("exit during the call: %d finished first, %d refused", ok, refusals);
}

static void test_execve_during_call(void)
{
	int rounds = 12, ok = 0, refusals = 0;

	for (int i = 0; i < rounds && !t_failed(); i++) {
		struct victim vv, *v = &vv;
		char why[512], cmd[64], reply[256];
		struct hres r = { 0 };

		if (hv_start(v, "threads", why, sizeof(why))) {
			t_fail("%s", why);
			return;
		}
		snprintf(cmd, sizeof(cmd), "execsoon %d", (int)rnd_below(4000));
		if (victim_expect(v, cmd, "execsoon ok", reply, sizeof(reply))) {
			victim_kill(v);
			return;
		}
		hc_run(&r, NULL, "stats", "--full", "-p", v->spid, NULL);
		switch (ok_or_refused(&r, "stats --full on a process calling execve")) {
		case 0:
			ok++;
			break;
		case 1:
			refusals++;
			break;
		}
		hres_free(&r);
		sleep_ms(20); /* the execve is due 4 ms at most after the command */
		if (victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS) ||
		    strcmp(reply, "pong exec'd")) {
			t_fail("round %d: the new program did not start: %s", i, reply);
		} else if (!unchanged(v, "after execve") &&
			   !victim_cmd(v, "sigblk", reply, sizeof(reply), REPLY_MS) &&
			   strcmp(reply, "sigblk 0000000000000000")) {
			t_fail("round %d: the new program starts with a blocked mask: %s", i, reply);
		}
		victim_kill(v);
	}
	t_note("execve during the call: %d finished first, %d refused", ok, refusals);
}

/* ---- seccomp ------------------------------------------------------------ */

static void test_seccomp_strict(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[64];
	struct hres r = { 0 };

	if (hv_start(v, "idle", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (!victim_expect(v, "strict", "strict ok", reply, sizeof(reply))) {
		sleep_ms(20);
		hc_run(&r, NULL, "stats", "-p", v->spid, NULL);
		if (!refused(&r, "stats on a strict-seccomp target"))
			t_note("%s", first_error(r.err));
		hres_free(&r);
		unchanged(v, "strict seccomp");
	}
	victim_kill(v);
}

static void seccomp_filter(const char *what, bool must_work)
{
	struct victim vv, *v = &vv;
	char why[512], reply[64], cmd[32], desc[96];
	struct hres r = { 0 };
	int e;

	if (hv_start(v, "threads", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(cmd, sizeof(cmd), "filter %s", what);
	snprintf(desc, sizeof(desc), "stats --full under a seccomp filter (%s on mmap)", what);
	if (victim_expect(v, cmd, "filter ok", reply, sizeof(reply)))
		goto out;
	hc_run(&r, NULL, "stats", "--full", "-p", v->spid, NULL);
	e = ok_or_refused(&r, desc);
	if (e == 1)
		t_note("refused: %s", first_error(r.err));
	if (e == 1 && must_work)
		t_fail("%s: refused a filter that allows everything heapctl does", desc);
	hres_free(&r);
	if (unchanged(v, desc))
		goto out;
	if (!victim_cmd(v, "sigsys", reply, sizeof(reply), REPLY_MS) && strcmp(reply, "sigsys 0"))
		t_fail("%s: the target caught SIGSYS from heapctl's syscalls (%s)", desc, reply);
out:
	victim_kill(v);
}

/*
 * A target whose seccomp filter refuses memfd_create: heapctl's sampler
 * comes in through a file in the target's own /tmp instead, removed at
 * once, and works; nothing is left in the target's temporary directories.
 */
static void test_sampler_no_memfd(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[64], out[512];
	struct hres r = { 0 };

	if (hv_start(v, "threads", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_expect(v, "filter memfd", "filter ok", reply, sizeof(reply)))
		goto out;
	if (hc_expect(&r, 0, "-v", "prof", "on", "-p", v->spid, "--sampler", "inject", NULL))
		goto out;
	if (!strstr(r.err, "no memfd") || !strstr(r.out, "heapctl's sampler"))
		t_fail("prof on without memfd_create: %.300s %.300s", r.out, r.err);
	hres_free(&r);
	snprintf(out, sizeof(out), "%.256s/nomemfd.%.15s.heap", cfg.tmpdir, v->spid);
	if (!hc_expect(&r, 0, "dump", "-p", v->spid, "-o", out, NULL) &&
	    !file_starts_with(out, "heap_v2/", why, sizeof(why)))
		t_fail("dump from the file-loaded sampler: %s", why);
	hres_free(&r);
	remove(out);
	hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL);
	hres_free(&r);
	if (dump_leftovers(v->pid, false, NULL))
		t_fail("the sampler's file or directory is left in the target's temporary directories");
	if (!victim_cmd(v, "sigsys", reply, sizeof(reply), REPLY_MS) && strcmp(reply, "sigsys 0"))
		t_fail("the target caught SIGSYS (%s)", reply);
out:
	hres_free(&r);
	victim_kill(v);
}

static void test_seccomp_errno(void)
{
	seccomp_filter("errno", false);
}

static void test_seccomp_kill(void)
{
	seccomp_filter("kill", false);
}

/*
 * A tracer skips a syscall by making its number -1, and seccomp then judges
 * -1 like any number (kernel/entry/common.c runs it after the ptrace stop):
 * an allowlist filter, such as systemd's SystemCallFilter=, kills for it.
 */
static void test_seccomp_skipped(void)
{
	seccomp_filter("skipped", false);
}

static void test_seccomp_trap(void)
{
	seccomp_filter("trap", false);
}

static void test_seccomp_allow(void)
{
	seccomp_filter("none", true);
}

/* ---- already traced ------------------------------------------------------- */

static void traced(bool whole)
{
	struct victim vv, *v = &vv;
	char why[512], reply[256], spid[16];
	struct hres r = { 0 };
	pid_t tracer, tid;
	int hold = -1;

	if (hv_start(v, "threads", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_expect(v, "tids", "tids ", reply, sizeof(reply)))
		goto out;
	tid = whole ? v->pid : (pid_t)kv_long(reply, "other", 0);
	tracer = tracer_start(tid, &hold);
	if (tracer < 0) {
		t_fail("cannot start a tracer");
		goto out;
	}
	snprintf(spid, sizeof(spid), "%d", (int)tracer);
	hc_run(&r, NULL, "stats", "-p", v->spid, NULL);
	if (whole) {
		if (!refused(&r, "stats on a traced target") && !strstr(r.err, spid))
			t_fail("the refusal does not name the tracer (pid %s): %s", spid,
			       first_error(r.err));
	} else if (ok_or_refused(&r, "stats with one thread traced by another") == 1) {
		t_note("refused: %s", first_error(r.err));
		if (!strstr(r.err, spid))
			t_fail("the refusal does not name the tracer (pid %s): %s", spid,
			       first_error(r.err));
	}
	hres_free(&r);
	tracer_stop(tracer, hold);
	unchanged(v, "after the other tracer left");
out:
	victim_kill(v);
}

static void test_traced(void)
{
	traced(true);
}

static void test_thread_traced(void)
{
	traced(false);
}

/* ---- 32-bit --------------------------------------------------------------- */

/*
 * Can this kernel run the 32-bit fixture at all?  A kernel built without
 * IA32 emulation (or booted with ia32_emulation=0) refuses it in execve()
 * with ENOEXEC; that is the machine, not heapctl, so the test is skipped
 * with the reason.  The probe execs the fixture with no arguments (it then
 * exits 2 at once) and reads execve's errno back through a CLOEXEC pipe.
 * 0: it runs; 1: the kernel cannot run it (why says so); -1: other trouble.
 */
static int probe_exec(const char *path, char *why, size_t whysz)
{
	int fd[2], err = 0, st = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC)) {
		snprintf(why, whysz, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, whysz, "fork: %s", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		char *const argv[] = { (char *)path, NULL };
		int e;

		close(fd[0]);
		setpgid(0, 0);
		execv(path, argv);
		e = errno;
		if (write(fd[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
			_exit(126);
		_exit(127);
	}
	setpgid(pid, pid);
	track_pid(pid);
	close(fd[1]);
	do
		n = read(fd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(fd[0]);
	if (wait_pid(pid, &st, 10000)) {
		kill_wait(pid);
		snprintf(why, whysz, "%s (no arguments) did not exit", path);
		return -1;
	}
	if (n == (ssize_t)sizeof(err)) {
		if (err == ENOEXEC) {
			snprintf(why, whysz,
				 "this kernel cannot run 32-bit programs (built without "
				 "IA32 emulation?): execve %s: %s", path, strerror(err));
			return 1;
		}
		snprintf(why, whysz, "execve %s: %s", path, strerror(err));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 2) {
		snprintf(why, whysz, "%s (no arguments) ended with status 0x%x, not exit 2", path, st);
		return -1;
	}
	return 0;
}

enum run32 { RUN32_OK, RUN32_SKIP, RUN32_FAIL };

/* The whole 32-bit check on the fixture at path; why says why on SKIP or FAIL. */
static enum run32 run_32bit(const char *path, char *why, size_t whysz)
{
	struct victim vv, *v = &vv;
	const char *argv[] = { path, "3", "4", "5", NULL };
	enum run32 ret = RUN32_OK;
	char reply[64] = "";
	struct hres r = { 0 };

	switch (probe_exec(path, why, whysz)) {
	case 0:
		break;
	case 1:
		return RUN32_SKIP;
	default:
		return RUN32_FAIL;
	}
	if (victim_start_argv(v, argv, NULL, NULL, 0, why, whysz))
		return RUN32_FAIL;
	hc_run(&r, NULL, "stats", "-p", v->spid, NULL);
	if (!refused(&r, "stats on a 32-bit process")) {
		if (!strstr(r.err, "32-bit") && !strstr(r.err, "64-bit")) {
			snprintf(why, whysz, "the refusal does not say the target is 32-bit: %s",
				 first_error(r.err));
			ret = RUN32_FAIL;
		} else {
			t_note("%s", first_error(r.err));
		}
	}
	hres_free(&r);
	if (t_failed())
		ret = RUN32_FAIL; /* refused() has said why */
	if (ret == RUN32_OK && (proc_check_tasks(v->pid, false, why, whysz) ||
				victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS) ||
				strcmp(reply, "pong"))) {
		size_t l = strlen(why);

		snprintf(why + l, whysz - l, " (target harmed; reply '%s')", reply);
		ret = RUN32_FAIL;
	}
	victim_kill(v);
	return ret;
}

#ifdef __x86_64__
#define IS_X86_64 1
#else
#define IS_X86_64 0
#endif

static void test_32bit(void)
{
	char path[512], why[512] = "";

	fx_path(path, sizeof(path), "fx_idle32");
	if (access(path, X_OK)) {
		t_skip(true, "%s missing (%s)", path,
		       IS_X86_64 ? "make fixtures; needs gcc-multilib" : "a 32-bit x86 program: x86_64 only");
		return;
	}
	switch (run_32bit(path, why, sizeof(why))) {
	case RUN32_OK:
		break;
	case RUN32_SKIP:
		/* Not a missing package: no `make deps` can add it, so no failure under CI. */
		t_skip(false, "%s", why);
		break;
	case RUN32_FAIL:
		if (!t_failed())
			t_fail("%s", why);
		break;
	}
}

/*
 * The skip path above, on this kernel, whatever it can run: a copy of the
 * fixture whose e_machine no binary loader accepts gets the very ENOEXEC a
 * kernel without IA32 emulation gives the real one.  That copy must come
 * out as a skip with the reason, never as "did not get ready".
 */
static void test_32bit_noexec(void)
{
	char path[512], copy[512], why[512] = "";
	unsigned char hdr[20];
	int in, out;
	ssize_t n;
	char buf[65536];

	fx_path(path, sizeof(path), "fx_idle32");
	if (access(path, X_OK)) {
		t_skip(true, "%s missing (%s)", path,
		       IS_X86_64 ? "make fixtures; needs gcc-multilib" : "a 32-bit x86 program: x86_64 only");
		return;
	}
	snprintf(copy, sizeof(copy), "%s/idle32-noexec", cfg.tmpdir);
	in = open(path, O_RDONLY | O_CLOEXEC);
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	/* e_machine (bytes 18-19): 0xfeed is no architecture. */
	if (in < 0 || out < 0 || pread(in, hdr, sizeof(hdr), 0) != sizeof(hdr) ||
	    memcmp(hdr, "\177ELF\001", 5) || pwrite(out, "\xed\xfe", 2, 18) != 2) {
		t_fail("cannot make %s from %s: %s", copy, path, strerror(errno));
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (t_failed())
		return;
	switch (run_32bit(copy, why, sizeof(why))) {
	case RUN32_SKIP:
		if (!strstr(why, "cannot run 32-bit") || !strstr(why, strerror(ENOEXEC)))
			t_fail("the skip reason does not say why: %s", why);
		else
			t_note("would skip: %s", why);
		break;
	case RUN32_OK:
		t_fail("%s with e_machine 0xfeed ran", copy);
		break;
	case RUN32_FAIL:
		t_fail("an unrunnable 32-bit binary failed the test instead of skipping it: %s", why);
		break;
	}
	unlink(copy);
}

/* ---- fixtures speaking jemalloc_victim's protocol ------------------------- */

/*
 * info, stats, prof on (--tid), dump, prof off, stats --full; then the full
 * unharmed check.  Without prof, "prof on" is heapctl's sampler, taken out
 * again by prof reset.
 */
static void drive(struct victim *v, const char *expect_in_info, bool prof)
{
	char dump[320], why[256], tid[16];
	struct hres r = { 0 };

	snprintf(dump, sizeof(dump), "%s/fx-%d.heap", cfg.tmpdir, (int)v->pid);
	snprintf(tid, sizeof(tid), "%d", (int)v->t_regs);
	if (hc_expect(&r, 0, "info", "-p", v->spid, "--timeout", "10", NULL) == 0 &&
	    expect_in_info && !strstr(r.out, expect_in_info))
		t_fail("info does not mention %s: %.300s", expect_in_info, r.out);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "stats", "-p", v->spid, "--timeout", "10", NULL) == 0 &&
	    !strstr(r.out, "jemalloc"))
		t_fail("stats: no jemalloc in %.200s", r.out);
	hres_free(&r);
	if (!t_failed()) {
		/* without opt.prof, heapctl's sampler, through jemalloc's own hooks */
		if (hc_expect(&r, 0, "prof", "on", "-p", v->spid, "--tid", tid, "--timeout", "10", NULL) == 0 &&
		    !prof && !strstr(r.out, "heapctl's sampler"))
			t_fail("prof on without opt.prof: not heapctl's sampler: %.300s", r.out);
		hres_free(&r);
		if (!t_failed() &&
		    hc_expect(&r, 0, "dump", "-p", v->spid, "-o", dump, "--timeout", "10", NULL) == 0 &&
		    !file_starts_with(dump, "heap_v2/", why, sizeof(why)))
			t_fail("dump: %s", why);
		hres_free(&r);
		if (!t_failed())
			hc_expect(&r, 0, "prof", "off", "-p", v->spid, "--timeout", "10", NULL);
		hres_free(&r);
		if (!t_failed() && !prof)
			hc_expect(&r, 0, "prof", "reset", "-p", v->spid, "--timeout", "10", NULL);
		hres_free(&r);
	}
	if (!t_failed())
		hc_expect(&r, 0, "stats", "--full", "-p", v->spid, "--timeout", "10", NULL);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
}

static void fixture(const char *name, const char *expect_in_info, bool prof)
{
	struct victim vv, *v = &vv;
	char path[512], why[512];
	const char *argv[] = { path, "3", "4", "5", NULL };

	fx_path(path, sizeof(path), name);
	if (access(path, X_OK)) {
		t_skip(true, "%s missing (make fixtures)", path);
		return;
	}
	if (victim_start_argv(v, argv, prof ? VCONF : "dirty_decay_ms:-1", NULL,
			      VS_TIDS | VS_JEMALLOC, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	victim_ticker_reset(v);
	drive(v, expect_in_info, prof);
	victim_kill(v);
}

/*
 * Without profiling: in a static binary jemalloc's prof_boot2() calls
 * libgcc's unwinder before glibc has finished starting, which aborts.
 */
static void test_static(void)
{
	fixture("fx_jemalloc_static", ".symtab", false);
}

static void test_prefix_je(void)
{
	fixture("fx_jemalloc_je", "je_", true);
}

static void test_prefix_rjem(void)
{
	fixture("fx_jemalloc_rjem", "_rjem_", true);
}

static void test_debuglink(void)
{
	fixture("fx_jemalloc_dbg", "fx_jemalloc_dbg.debug", true);
}

/* ---- a container: own PID and mount namespaces, private /tmp ------------- */

static pid_t only_child(pid_t pid)
{
	char path[96], *s;
	pid_t c = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	s = read_file_str(path);
	if (s)
		c = (pid_t)strtol(s, NULL, 10);
	free(s);
	return c;
}

static void test_namespace(void)
{
	struct victim vv, *v = &vv;
	char path[512], why[512], un[512], dir[320];
	const char *argv[] = { un, "--fork", "--pid", "--mount", "--mount-proc", "/bin/sh", "-c",
			       /* the victim may live under /tmp: keep it open across the mount */
			       "exec 9<\"$0\" && mount -t tmpfs -o mode=1777 tmpfs /tmp && "
			       "exec /proc/self/fd/9 3 4 5", path,
			       NULL };
	pid_t upid, inner;
	long end;

	fx_path(path, sizeof(path), "jemalloc_victim");
	if (!find_in_path("unshare", un, sizeof(un))) {
		t_skip(true, "unshare not found");
		return;
	}
	if (victim_start_argv(v, argv, VCONF, NULL, 0, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	upid = v->pid;
	for (end = now_ms() + 3000; !(inner = only_child(upid)) && now_ms() < end;)
		sleep_ms(5);
	if (!inner) {
		t_fail("cannot find the process unshare started");
		goto out;
	}
	/* From here on the victim is the inner process, seen by its host pid. */
	v->pid = inner;
	snprintf(v->spid, sizeof(v->spid), "%d", (int)inner);
	v->jemalloc = true;
	if (victim_adopt(v, why, sizeof(why))) {
		t_fail("%s", why);
		goto out;
	}
	victim_ticker_reset(v);
	/* tids are the namespace's own: --tid is not for this test */
	v->t_regs = inner;
	{
		char *s = NULL;

		snprintf(dir, sizeof(dir), "/proc/%d/status", (int)inner);
		s = read_file_str(dir);
		if (s && strstr(s, "NSpid:") && !strstr(strstr(s, "NSpid:"), "\t1\n"))
			t_note("NSpid does not show pid 1 inside: %.40s", strstr(s, "NSpid:"));
		free(s);
	}
	drive(v, NULL, true);
	/* nothing of heapctl's left in the container's private /tmp */
	if (!t_failed() && dump_leftovers(inner, false, NULL))
		t_fail("heapctl left files in the container's /tmp");
out:
	v->pid = upid;
	victim_kill(v);
}

/* ---- safe points under pressure ------------------------------------------- */

static void test_only_thread_in_malloc(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[64];
	long before, after;

	if (hv_start(v, "inmalloc", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS)) {
		t_fail("ping: %s", reply);
		goto out;
	}
	before = strtol(reply + 5, NULL, 10);
	for (int withtid = 0; withtid < 2 && !t_failed(); withtid++) {
		struct hres r = { 0 };
		int e;

		if (withtid)
			hc_run(&r, NULL, "stats", "-p", v->spid, "--tid", v->spid, "--timeout", "3",
			       NULL);
		else
			hc_run(&r, NULL, "stats", "-p", v->spid, "--timeout", "3", NULL);
		e = ok_or_refused(&r, withtid ? "stats --tid on the only thread, in malloc" :
						"stats, the only thread in malloc");
		if (e >= 0 && r.ms > 8000)
			t_fail("took %ld ms with --timeout 3", r.ms);
		if (e >= 0)
			t_note("%s: exit %d after %ld ms%s%s", withtid ? "--tid" : "no --tid", e,
			       r.ms, e ? ": " : "", e ? first_error(r.err) : "");
		hres_free(&r);
	}
	sleep_ms(50);
	if (!t_failed() && !unchanged(v, "only thread in malloc") &&
	    !victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS)) {
		after = strtol(reply + 5, NULL, 10);
		if (after <= before)
			t_fail("the thread stopped making progress (%ld -> %ld)", before, after);
	}
out:
	victim_kill(v);
}

/*
 * A thread parked in a signal handler that interrupted jemalloc: its
 * frames sit on top of the allocator's, which may hold a lock.  heapctl
 * must never borrow it, whether the handler runs on the thread's own stack
 * or on a sigaltstack of its own (alt), where the stack above the handler
 * is not the one with the allocator's frames.
 */
static void handler_over_malloc(bool alt)
{
	struct victim vv, *v = &vv;
	char why[512], reply[256], stid[16], want[48];
	struct hres r = { 0 };
	pid_t worker;
	long end;
	bool parked = false;

	if (hv_start(v, alt ? "sighandler-alt" : "sighandler", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_expect(v, "tids", "tids ", reply, sizeof(reply)))
		goto out;
	worker = (pid_t)kv_long(reply, "other", 0);
	for (end = now_ms() + 10000; !parked && now_ms() < end;) {
		syscall(SYS_tgkill, v->pid, worker, SIGUSR1);
		sleep_ms(2);
		parked = !victim_cmd(v, "parked", reply, sizeof(reply), REPLY_MS) &&
			 !strcmp(reply, "parked 1");
	}
	if (!parked) {
		t_skip(false, "the signal never landed inside jemalloc");
		goto out;
	}
	snprintf(stid, sizeof(stid), "%d", (int)worker);
	hc_run(&r, NULL, "stats", "-p", v->spid, "--tid", stid, "--timeout", "2", NULL);
	if (ok_or_refused(&r, "stats --tid on a handler over malloc") == 0)
		t_fail("borrowed thread %s, inside a signal handler that interrupted jemalloc",
		       stid);
	else if (r.ms > 7000)
		t_fail("took %ld ms with --timeout 2", r.ms);
	hres_free(&r);
	if (!t_failed()) {
		/* the parked handler may hold a lock the call waits for: bound it */
		hc_run(&r, NULL, "stats", "-p", v->spid, "--timeout", "5", NULL);
		snprintf(want, sizeof(want), "gave tid %s of ", stid);
		if (ok_or_refused(&r, "stats with a handler over malloc") == 0 &&
		    strstr(r.err, want))
			t_fail("picked thread %s, inside a signal handler that interrupted jemalloc",
			       stid);
		hres_free(&r);
	}
	/*
	 * Released by a signal to the worker, not by a command: the call may
	 * still wait in main for a lock the handler holds (heapctl then let it
	 * finish on its own), and main serves the commands.  Once the handler
	 * lets go, that call must return and main restore itself.
	 */
	syscall(SYS_tgkill, v->pid, worker, SIGUSR2);
	unchanged(v, "handler over malloc");
out:
	victim_kill(v);
}

static void test_handler_over_malloc(void)
{
	handler_over_malloc(false);
}

static void test_handler_altstack(void)
{
	handler_over_malloc(true);
}

const struct itest t_hostile_tests[] = {
	{ "hostile-stopped-every-op", test_stopped_every_op, 0 },
	{ "hostile-zombie-leader", test_zombie_leader, 0 },
	{ "hostile-exit-during-call", test_exit_during_call, 0 },
	{ "hostile-execve-during-call", test_execve_during_call, 0 },
	{ "hostile-seccomp-strict", test_seccomp_strict, 0 },
	{ "hostile-seccomp-filter-errno", test_seccomp_errno, 0 },
	{ "hostile-sampler-no-memfd", test_sampler_no_memfd, 0 },
	{ "hostile-seccomp-filter-kill", test_seccomp_kill, 0 },
	{ "hostile-seccomp-filter-trap", test_seccomp_trap, 0 },
	{ "hostile-seccomp-filter-skipped", test_seccomp_skipped, 0 },
	{ "hostile-seccomp-filter-allow", test_seccomp_allow, 0 },
	{ "hostile-already-traced", test_traced, 0 },
	{ "hostile-thread-traced", test_thread_traced, 0 },
	{ "hostile-32bit", test_32bit, 0 },
	{ "hostile-32bit-noexec", test_32bit_noexec, 0 },
	{ "hostile-namespace", test_namespace, 0 },
	{ "hostile-static-symtab", test_static, 0 },
	{ "hostile-prefix-je", test_prefix_je, 0 },
	{ "hostile-prefix-rjem", test_prefix_rjem, 0 },
	{ "hostile-debuglink", test_debuglink, 0 },
	{ "hostile-only-thread-in-malloc", test_only_thread_in_malloc, 0 },
	{ "hostile-handler-over-malloc", test_handler_over_malloc, 0 },
	{ "hostile-handler-altstack", test_handler_altstack, 0 },
	{ NULL, NULL, 0 },
};
