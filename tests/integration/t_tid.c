// SPDX-License-Identifier: MIT
/*
 * Borrowing a chosen thread (--tid) out of each kind of blocking syscall,
 * real-time signals queued during a burst of calls, and a job-control
 * stopped target.
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
#include <sys/syscall.h>
#include <sys/wait.h>

#include "itest.h"

/*
 * After heapctl let go, the thread must be back in the syscall it was
 * borrowed from (the kernel restarted it), not returned to user space.
 * It may take the scheduler a moment to get there.
 */
static int back_in_syscall(struct victim *v, pid_t tid, const long *set, const char *what)
{
	long nr;

	if (!proc_wait_syscall(v->pid, tid, set, 3000, &nr))
		return 0;
	t_fail("%s thread %d is not back in its syscall after heapctl (now in %ld)", what,
	       (int)tid, nr);
	return -1;
}

/* Runs one heapctl call with --tid tid; exit 0 expected. */
static int borrow(struct victim *v, pid_t tid, const char *cmd, const char *opt)
{
	char stid[16];
	struct hres r = { 0 };
	int ret;

	snprintf(stid, sizeof(stid), "%d", (int)tid);
	if (opt && opt[0] != '-' && strcmp(cmd, "prof"))	/* get NAME: operand last */
		ret = hc_expect(&r, 0, cmd, "-p", v->spid, "--tid", stid, opt, NULL);
	else if (opt)
		ret = hc_expect(&r, 0, cmd, opt, "-p", v->spid, "--tid", stid, NULL);
	else
		ret = hc_expect(&r, 0, cmd, "-p", v->spid, "--tid", stid, NULL);
	if (!ret && cfg.vflag) {
		const char *b = strstr(r.err, "borrowed tid ");

		/* Reported only: the -v wording is not under test. */
		if (b && strtol(b + 13, NULL, 10) != (long)tid)
			t_note("asked for --tid %d, heapctl says: %.60s", (int)tid, b);
	}
	hres_free(&r);
	return ret;
}

/*
 * Proves that heapctl borrowed exactly tid: "set thread.arena" acts on the
 * calling thread only, so bind tid to the victim's extra arena, let the
 * thread wake (wake command, or poll if it wakes by itself) and ask every
 * thread which arena it sees. Then bind it back the same way.
 */
static int arena_round(struct victim *v, pid_t tid, const char *kind, const char *wake,
		       const long *nrs, long to, long others_not)
{
	char stid[16], sto[16], reply[512];
	struct hres r = { 0 };
	long end, seen = -1;
	int k;
	static const char *const kinds[] = {
		"main", "read", "sleep", "epoll", "futex", "regs", "hammer", "ticker", "sig",
	};

	snprintf(stid, sizeof(stid), "%d", (int)tid);
	snprintf(sto, sizeof(sto), "%ld", to);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "--tid", stid, "thread.arena", sto, NULL)) {
		hres_free(&r);
		return -1;
	}
	hres_free(&r);
	if (nrs && back_in_syscall(v, tid, nrs, kind))
		return -1;
	if (wake && victim_expect(v, wake, "", reply, sizeof(reply)))
		return -1;
	if (wake && !strstr(reply, " ok")) {
		t_fail("after set thread.arena --tid %s: '%s' -> %s", stid, wake, reply);
		return -1;
	}
	for (end = now_ms() + 3000;;) {
		if (victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
			return -1;
		seen = kv_long(reply, kind, -1);
		if (seen == to || now_ms() > end)
			break;
		sleep_ms(5);
	}
	if (seen != to) {
		t_fail("set thread.arena %ld --tid %s: the %s thread sees arena %ld, so heapctl did"
		       " not borrow it (%s)", to, stid, kind, seen, reply);
		return -1;
	}
	for (k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++) {
		if (strcmp(kinds[k], kind) && kv_long(reply, kinds[k], -1) == others_not) {
			t_fail("set thread.arena --tid %s changed the %s thread instead (%s)", stid,
			       kinds[k], reply);
			return -1;
		}
	}
	return 0;
}

static int prove_borrow(struct victim *v, pid_t tid, const char *kind, const char *wake,
			const long *nrs)
{
	char reply[512];
	long orig;

	if (victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
		return -1;
	orig = kv_long(reply, kind, -1);
	if (orig < 0 || orig == (long)v->xarena) {
		t_fail("setup: the %s thread sees arena %ld (%s)", kind, orig, reply);
		return -1;
	}
	if (arena_round(v, tid, kind, wake, nrs, v->xarena, v->xarena))
		return -1;
	return arena_round(v, tid, kind, wake, nrs, orig, v->xarena);
}

static void test_tid_read(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_read, "stats", "--json") ||
	    back_in_syscall(v, v->t_read, nrs_read, "read"))
		return;
	/* The read() must now return exactly the bytes we send, once. */
	if (victim_expect(v, "feed 1234", "read ok 1234", reply, sizeof(reply)) ||
	    victim_expect(v, "feed 1", "read ok 1", reply, sizeof(reply)))
		return;
	if (prove_borrow(v, v->t_read, "read", "feed 99", nrs_read))
		return;
	victim_check(v, 0);
}

static void test_tid_nanosleep(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_sleep, "prof", "status") ||
	    back_in_syscall(v, v->t_sleep, nrs_sleep, "sleep"))
		return;
	/* Each sleep checks its own length and return value. */
	if (victim_expect(v, "sleepwait 2", "sleep ok", reply, sizeof(reply)))
		return;
	if (prove_borrow(v, v->t_sleep, "sleep", NULL, nrs_sleep))
		return;
	victim_check(v, 0);
}

static void test_tid_epoll(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_epoll, "stats", NULL) ||
	    back_in_syscall(v, v->t_epoll, nrs_epoll, "epoll"))
		return;
	if (victim_expect(v, "epoll 777", "epoll ok 777", reply, sizeof(reply)))
		return;
	if (prove_borrow(v, v->t_epoll, "epoll", "epoll 5", nrs_epoll))
		return;
	victim_check(v, 0);
}

static void test_tid_futex(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_futex, "get", "opt.prof") ||
	    back_in_syscall(v, v->t_futex, nrs_futex, "futex"))
		return;
	if (victim_expect(v, "futex", "futex ok", reply, sizeof(reply)))
		return;
	if (prove_borrow(v, v->t_futex, "futex", "futex", nrs_futex))
		return;
	victim_check(v, 0);
}

static void test_tid_main(void)
{
	struct victim *v = shared_victim();

	if (!v || borrow(v, v->t_main, "stats", "--json") ||
	    back_in_syscall(v, v->t_main, nrs_read, "main"))
		return;
	if (prove_borrow(v, v->t_main, "main", NULL, nrs_read))
		return;
	victim_check(v, 0);
}

static void test_tid_sig(void)
{
	struct victim *v = shared_victim();

	if (!v || borrow(v, v->t_sig, "info", NULL) ||
	    back_in_syscall(v, v->t_sig, nrs_read, "sig"))
		return;
	if (prove_borrow(v, v->t_sig, "sig", "sigpoke", nrs_read))
		return;
	victim_check(v, 0);
}

static void test_tid_ticker(void)
{
	struct victim *v = shared_victim();

	if (!v || borrow(v, v->t_ticker, "prof", "status") ||
	    prove_borrow(v, v->t_ticker, "ticker", NULL, NULL))
		return;
	/* Its own gap is the borrow itself; only EINTR and errors matter here. */
	victim_ticker_reset(v);
	victim_check(v, 0);
}

/* All registers survive, over several different calls. */
static void test_tid_regs(void)
{
	static const char *const calls[][2] = {
		{ "prof", "status" }, { "stats", "--json" }, { "stats", "--full" },
		{ "get", "version" }, { "info", NULL }, { "purge", NULL },
	};
	struct victim *v = shared_victim();
	char reply[512];
	size_t i;

	if (!v)
		return;
	t_note("register sentinel mode: %s", v->regs_mode);
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		if (borrow(v, v->t_regs, calls[i][0], calls[i][1]) ||
		    back_in_syscall(v, v->t_regs, nrs_read, "regs"))
			return;
		if (victim_cmd(v, "regs", reply, sizeof(reply), 15000) ||
		    strcmp(reply, "regs ok")) {
			t_fail("after '%s %s --tid %d': %s", calls[i][0],
			       calls[i][1] ? calls[i][1] : "", (int)v->t_regs, reply);
			return;
		}
	}
	/* "regs" wakes it and reports bad registers from the round too. */
	if (prove_borrow(v, v->t_regs, "regs", "regs", nrs_read))
		return;
	victim_check(v, 0);
}

/*
 * --tid on the hammer thread, which is most likely inside malloc(). heapctl
 * may wait for it to leave the allocator, or refuse with a hint; it must
 * not deadlock the target or hang.
 */
/* One "set thread.arena" on the hammer: 0 done, 1 refused (with a hint), -1 failed. */
static int hammer_set(struct victim *v, long arena)
{
	char stid[16], sa[16];
	struct hres r = { 0 };
	int ret;

	snprintf(stid, sizeof(stid), "%d", (int)v->t_hammer);
	snprintf(sa, sizeof(sa), "%ld", arena);
	hc_run(&r, NULL, "set", "-p", v->spid, "--tid", stid, "thread.arena", sa, NULL);
	if (hres_crash(&r) || r.timed_out || (hres_exit(&r) != 0 && hres_exit(&r) != 1)) {
		t_fail("%s", hres_desc(&r));
		ret = -1;
	} else if (hres_exit(&r) == 1 && !strstr(r.err, "hint:")) {
		t_fail("refused without a hint: %s", hres_desc(&r));
		ret = -1;
	} else {
		ret = hres_exit(&r);
	}
	hres_free(&r);
	return ret;
}

/* Polls until the hammer reports arena want; false after 3 s. */
static bool hammer_sees(struct victim *v, long want, long *seen)
{
	char reply[512];
	long end = now_ms() + 3000;

	do {
		if (victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
			return false;
		*seen = kv_long(reply, "hammer", -1);
		if (*seen == want)
			return true;
		sleep_ms(5);
	} while (now_ms() < end);
	return false;
}

/*
 * --tid on the hammer thread, which is most likely inside malloc(). heapctl
 * may wait for it to leave the allocator, or refuse with a hint; it must
 * not deadlock the target or hang, and when it says it succeeded the
 * borrowed thread must really be the hammer.
 */
static void test_tid_in_allocator(void)
{
	struct victim *v = shared_victim();
	int i, r, ok = 0, refused = 0;
	char reply[512];
	long orig, seen = -1;

	if (!v || victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
		return;
	orig = kv_long(reply, "hammer", -1);
	for (i = 0; i < 5 && !t_failed(); i++) {
		r = hammer_set(v, i % 2 ? orig : (long)v->xarena);
		if (r < 0)
			return;
		if (r == 1) {
			refused++;
			continue;
		}
		ok++;
		if (!hammer_sees(v, i % 2 ? orig : (long)v->xarena, &seen)) {
			t_fail("set thread.arena --tid %d (hammer) succeeded, but the hammer sees"
			       " arena %ld", (int)v->t_hammer, seen);
			return;
		}
		if (victim_check(v, 0))
			return;
	}
	/* Leave it where it was. */
	for (i = 0; i < 10 && !t_failed(); i++)
		if (!hammer_sees(v, orig, &seen) && hammer_set(v, orig) < 0)
			return;
	t_note("inside the allocator: %d succeeded, %d refused", ok, refused);
	if (!t_failed())
		victim_check(v, 0);
}

/* ---- real-time signals during a burst -------------------------------- */

#define SIG_MIN 50

/*
 * Child: sigqueue()s SIGRTMIN+1 to pid every ~2 ms until stop_fd hangs up
 * (and at least SIG_MIN times), then writes "count sum" to res_fd.
 */
static void signaller(pid_t pid, int stop_fd, int res_fd)
{
	long count = 0, sum = 0;

	for (;;) {
		struct pollfd p = { .fd = stop_fd, .events = POLLIN };
		union sigval sv;
		char buf[64];
		int n;

		sv.sival_int = (int)(count * 7 + 3);
		if (sigqueue(pid, SIGRTMIN + 1, sv)) {
			n = snprintf(buf, sizeof(buf), "error %d\n", errno);
			if (write(res_fd, buf, (size_t)n) < 0)
				_exit(2);
			_exit(1);
		}
		count++;
		sum += sv.sival_int;
		if (poll(&p, 1, 2) > 0 && count >= SIG_MIN) {
			n = snprintf(buf, sizeof(buf), "%ld %ld\n", count, sum);
			if (write(res_fd, buf, (size_t)n) < 0)
				_exit(2);
			_exit(0);
		}
	}
}

static void test_signals_burst(void)
{
	struct victim *v = shared_victim();
	int stop[2], res[2], i, st;
	char t_sig[16], t_main[16], buf[128], s_x[16], s_orig[16], reply[512];
	long count = 0, sum = 0, orig;
	pid_t pid;
	ssize_t n;

	if (!v || victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
		return;
	orig = kv_long(reply, "sig", -1);
	snprintf(s_orig, sizeof(s_orig), "%ld", orig);
	snprintf(s_x, sizeof(s_x), "%u", v->xarena);
	snprintf(t_sig, sizeof(t_sig), "%d", (int)v->t_sig);
	snprintf(t_main, sizeof(t_main), "%d", (int)v->t_main);
	if (pipe2(stop, O_CLOEXEC) || pipe2(res, O_CLOEXEC)) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(stop[1]);
		close(res[0]);
		signaller(v->pid, stop[0], res[1]);
		_exit(0);
	}
	close(stop[0]);
	close(res[1]);
	if (pid < 0) {
		t_fail("fork: %s", strerror(errno));
		close(stop[1]);
		close(res[0]);
		return;
	}
	track_pid(pid);

	/* Mostly borrow the two threads that take the signal. */
	for (i = 0; i < 12 && !t_failed(); i++) {
		struct hres r = { 0 };

		switch (i % 4) {
		case 0:
			hc_expect(&r, 0, "prof", "status", "-p", v->spid, "--tid", t_sig, NULL);
			break;
		case 1:
			hc_expect(&r, 0, "stats", "--json", "-p", v->spid, "--tid", t_main, NULL);
			break;
		case 2:
			/* Also proves afterwards which thread did the work. */
			hc_expect(&r, 0, "set", "-p", v->spid, "--tid", t_sig, "thread.arena",
				  (i / 4) % 2 ? s_orig : s_x, NULL);
			break;
		default:
			hc_expect(&r, 0, "stats", "-p", v->spid, NULL);
			break;
		}
		hres_free(&r);
	}
	close(stop[1]);
	if (wait_pid(pid, &st, 10000)) {
		kill_wait(pid);
		t_fail("signal sender did not finish");
		close(res[0]);
		return;
	}
	n = read(res[0], buf, sizeof(buf) - 1);
	close(res[0]);
	buf[n > 0 ? n : 0] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) || sscanf(buf, "%ld %ld", &count, &sum) != 2) {
		t_fail("signal sender failed: %s", buf);
		/* Keep the books straight anyway for later tests. */
		v->sig_sent += (unsigned long)(count > 0 ? count : 0);
		return;
	}
	v->sig_sent += (unsigned long)count;
	v->sig_sum += sum;
	t_note("%ld SIGRTMIN+1 queued during 12 calls", count);
	if (t_failed() || victim_check(v, 0))
		return;
	/* The last "set thread.arena" landed on the sig thread. */
	if (victim_expect(v, "sigpoke", "sigpoke ok", reply, sizeof(reply)) ||
	    victim_expect(v, "tarena", "tarena ", reply, sizeof(reply)))
		return;
	if (kv_long(reply, "sig", -1) != (long)v->xarena) {
		t_fail("set thread.arena --tid %s did not reach the sig thread: %s", t_sig, reply);
		return;
	}
	arena_round(v, v->t_sig, "sig", "sigpoke", nrs_read, orig, v->xarena);
}

/* ---- job-control stop ------------------------------------------------- */

static void test_stopped_target(void)
{
	struct victim vv, *v = &vv;
	struct hres r = { 0 };
	char why[512];
	long end;

	if (victim_start(v, "jemalloc_victim", "prof:true,prof_active:false", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	kill(v->pid, SIGSTOP);
	for (end = now_ms() + 5000; !proc_all_stopped(v->pid) && now_ms() < end;)
		sleep_ms(2);
	if (!proc_all_stopped(v->pid)) {
		t_fail("setup: victim did not stop");
		goto out;
	}
	hc_run(&r, NULL, "prof", "status", "-p", v->spid, NULL);
	if (hres_crash(&r) || r.timed_out) {
		t_fail("%s", hres_desc(&r));
		goto out;
	}
	if (hres_exit(&r) == 1 && !strstr(r.err, "hint:")) {
		t_fail("refused a stopped target without a hint: %s", hres_desc(&r));
		goto out;
	}
	if (hres_exit(&r) != 0 && hres_exit(&r) != 1) {
		t_fail("%s (wanted 0, or 1 with a hint)", hres_desc(&r));
		goto out;
	}
	if (hres_exit(&r) == 0 && !r.outlen) {
		t_fail("prof status on a stopped target: exit 0 but printed nothing");
		goto out;
	}
	t_note("stopped target: heapctl exit %d", hres_exit(&r));
	/*
	 * A detached task that was in group stop goes back into it on its
	 * own (do_jobctl_trap()); give it a moment, then it must be T.
	 */
	for (end = now_ms() + 2000; proc_check_tasks(v->pid, true, why, sizeof(why)) &&
				    now_ms() < end;)
		sleep_ms(1);
	if (proc_check_tasks(v->pid, true, why, sizeof(why))) {
		t_fail("job-control stop not preserved: %s", why);
		goto out;
	}
	kill(v->pid, SIGCONT);
	for (end = now_ms() + 5000; proc_check_tasks(v->pid, false, why, sizeof(why)) &&
				    now_ms() < end;)
		sleep_ms(2);
	/* The stop itself stretched the ticker; it is not heapctl's doing. */
	victim_ticker_reset(v);
	victim_check(v, VC_EPOLL_EINTR_OK);
out:
	hres_free(&r);
	victim_kill(v);
}

/* ---- the harness's excuse for a long ticker gap -------------------------- */

/* The ticker gap of v once it reaches want_us, or the last seen after wait_ms. */
static long await_gap(struct victim *v, long want_us, long wait_ms)
{
	char st[2048];
	long end = now_ms() + wait_ms, got;

	while ((got = victim_cmd(v, "state", st, sizeof(st), 5000) ? -1 :
		      kv_long(st, "maxgap_us", -1)) < want_us && now_ms() < end)
		sleep_ms(5);
	return got;
}

static long await_control_gap(const struct victim *v, long want_us, long wait_ms)
{
	long end = now_ms() + wait_ms, got;

	while ((got = victim_control_gap(v)) < want_us && now_ms() < end)
		sleep_ms(5);
	return got;
}

/*
 * A long gap is forgiven only when the untouched control stalled in the
 * same window.  Here a machine stall is a SIGSTOP of the target and the
 * control together; after it another victim's window opens, which once
 * reset the control's maximum and hid the stall from the target's check.  A
 * stall of the target alone must not be forgiven.  The stall is 150 ms, or
 * twice the lane's gap limit where the machine itself makes long gaps
 * (sanitized or emulated runs), so that their noise stays below half of it.
 */
static void test_control_window(void)
{
	long stall_ms = cfg.maxgap_us / 500 > 150 ? cfg.maxgap_us / 500 : 150;
	long seen = stall_ms * 900, half = stall_ms * 500, wait_ms = 3000 + 2 * stall_ms;
	struct victim a, b;
	char why[512];
	long gap, cgap;
	pid_t cpid;

	if (victim_start(&a, "jemalloc_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_start(&b, "jemalloc_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		victim_kill(&a);
		return;
	}
	victim_ticker_reset(&a);
	cpid = victim_control_pid();
	if (cpid <= 0) {
		t_fail("no control process");
		goto out;
	}
	kill(a.pid, SIGSTOP);
	kill(cpid, SIGSTOP);
	sleep_ms(stall_ms);
	kill(cpid, SIGCONT);
	kill(a.pid, SIGCONT);
	cgap = await_control_gap(&a, seen, wait_ms);
	victim_ticker_reset(&b);
	gap = await_gap(&a, seen, wait_ms);
	if (gap < seen || cgap < seen || victim_control_gap(&a) < seen) {
		t_fail("machine stall of %ld ms: the target's gap %ld us, the control's in its window"
		       " %ld us", stall_ms, gap, cgap);
		goto out;
	}
	cgap = victim_control_gap(&b);
	if (cgap >= half) {
		t_fail("a window opened after the stall sees the control's %ld us gap", cgap);
		goto out;
	}
	victim_ticker_reset(&a);
	kill(a.pid, SIGSTOP);
	sleep_ms(stall_ms);
	kill(a.pid, SIGCONT);
	gap = await_gap(&a, seen, wait_ms);
	cgap = victim_control_gap(&a);
	if (gap < seen || cgap >= half)
		t_fail("the target stalled alone for %ld ms: its gap %ld us, the control's %ld us",
		       stall_ms, gap, cgap);
	else
		t_note("a %ld ms stall of both: forgiven; of the target alone: %ld us against the"
		       " control's %ld us", stall_ms, gap, cgap);
out:
	victim_kill(&a);
	victim_kill(&b);
	/* the next control starts with no stall of ours in its log */
	control_victim_drop();
}

/* The shared victim exits normally after everything above. */
static void test_victim_exit(void)
{
	struct victim *v = shared_victim();
	char reply[256];
	int st;

	if (!v)
		return;
	/* Must be able to exit cleanly, with its own state intact. */
	if (victim_expect(v, "state", "state ", reply, sizeof(reply)))
		return;
	st = victim_stop(v);
	shared_victim_drop();
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("victim did not exit cleanly on quit (status 0x%x)", st);
}

const struct itest t_tid_tests[] = {
	{ "tid-read", test_tid_read, 0 },
	{ "tid-nanosleep", test_tid_nanosleep, 0 },
	{ "tid-epoll_wait", test_tid_epoll, 0 },
	{ "tid-futex", test_tid_futex, 0 },
	{ "tid-main", test_tid_main, 0 },
	{ "tid-sig-handler-thread", test_tid_sig, 0 },
	{ "tid-clock_nanosleep-ticker", test_tid_ticker, 0 },
	{ "tid-register-sentinel", test_tid_regs, 0 },
	{ "tid-inside-allocator", test_tid_in_allocator, 0 },
	{ "signals-during-burst", test_signals_burst, 0 },
	{ "stopped-target", test_stopped_target, 0 },
	{ "harness-control-window", test_control_window, 0 },
	{ "victim-clean-exit", test_victim_exit, 0 },
	{ NULL, NULL, 0 },
};
