// SPDX-License-Identifier: MIT
/*
 * Borrowing a chosen thread (--tid) out of each kind of blocking syscall,
 * real-time signals queued during a burst of calls, and a job-control
 * stopped target.
 */
#define _GNU_SOURCE
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

/* Syscalls a parked thread may legitimately be seen in. */
static const long k_read[] = { SYS_read, -2 };
static const long k_sleep[] = { SYS_nanosleep, SYS_clock_nanosleep, -2 };
static const long k_epoll[] = { SYS_epoll_wait, SYS_epoll_pwait, 441, -2 };
static const long k_futex[] = { SYS_futex, -2 };

static bool nr_in(long nr, const long *set)
{
	for (; *set != -2; set++)
		if (nr == *set)
			return true;
	return false;
}

/*
 * After heapctl let go, the thread must be back in the syscall it was
 * borrowed from (the kernel restarted it), not returned to user space.
 * It may take the scheduler a moment to get there.
 */
static int back_in_syscall(struct victim *v, pid_t tid, const long *set, const char *what)
{
	long end = now_ms() + 3000, nr = -1;

	while (now_ms() < end) {
		nr = proc_task_syscall(v->pid, tid);
		if (nr_in(nr, set))
			return 0;
		sleep_ms(2);
	}
	t_fail("%s thread %d is not back in its syscall after heapctl (now in %ld)", what,
	       (int)tid, nr);
	return -1;
}

/* Runs one heapctl call with --tid tid; exit 0 expected. */
static int borrow(struct victim *v, pid_t tid, const char *cmd, const char *opt)
{
	char stid[16];
	struct hres r;
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

static void test_tid_read(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_read, "stats", "--json") ||
	    back_in_syscall(v, v->t_read, k_read, "read"))
		return;
	/* The read() must now return exactly the bytes we send, once. */
	if (victim_expect(v, "feed 1234", "read ok 1234", reply, sizeof(reply)) ||
	    victim_expect(v, "feed 1", "read ok 1", reply, sizeof(reply)))
		return;
	victim_check(v, 0);
}

static void test_tid_nanosleep(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_sleep, "prof", "status") ||
	    back_in_syscall(v, v->t_sleep, k_sleep, "sleep"))
		return;
	/* Each sleep checks its own length and return value. */
	if (victim_expect(v, "sleepwait 2", "sleep ok", reply, sizeof(reply)))
		return;
	victim_check(v, 0);
}

static void test_tid_epoll(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_epoll, "stats", NULL) ||
	    back_in_syscall(v, v->t_epoll, k_epoll, "epoll"))
		return;
	if (victim_expect(v, "epoll 777", "epoll ok 777", reply, sizeof(reply)))
		return;
	victim_check(v, 0);
}

static void test_tid_futex(void)
{
	struct victim *v = shared_victim();
	char reply[256];

	if (!v || borrow(v, v->t_futex, "get", "opt.prof") ||
	    back_in_syscall(v, v->t_futex, k_futex, "futex"))
		return;
	if (victim_expect(v, "futex", "futex ok", reply, sizeof(reply)))
		return;
	victim_check(v, 0);
}

static void test_tid_main(void)
{
	struct victim *v = shared_victim();

	if (!v || borrow(v, v->t_main, "stats", "--json") ||
	    back_in_syscall(v, v->t_main, k_read, "main"))
		return;
	victim_check(v, 0);
}

static void test_tid_ticker(void)
{
	struct victim *v = shared_victim();
	char reply[64];

	if (!v || borrow(v, v->t_ticker, "prof", "status"))
		return;
	/* Its own gap is the borrow itself; only EINTR and errors matter here. */
	victim_cmd(v, "tickreset", reply, sizeof(reply), 5000);
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
		    back_in_syscall(v, v->t_regs, k_read, "regs"))
			return;
		if (victim_cmd(v, "regs", reply, sizeof(reply), 15000) || strcmp(reply, "regs ok")) {
			t_fail("after '%s %s --tid %d': %s", calls[i][0], calls[i][1] ? calls[i][1] : "",
			       (int)v->t_regs, reply);
			return;
		}
	}
	victim_check(v, 0);
}

/*
 * --tid on the hammer thread, which is most likely inside malloc(). heapctl
 * may wait for it to leave the allocator, or refuse with a hint; it must
 * not deadlock the target or hang.
 */
static void test_tid_in_allocator(void)
{
	struct victim *v = shared_victim();
	char stid[16];
	struct hres r;
	int i, ok = 0, refused = 0;

	if (!v)
		return;
	snprintf(stid, sizeof(stid), "%d", (int)v->t_hammer);
	for (i = 0; i < 5 && !t_failed(); i++) {
		hc_run(&r, NULL, "stats", "--json", "-p", v->spid, "--tid", stid, NULL);
		if (hres_crash(&r) || r.timed_out || (hres_exit(&r) != 0 && hres_exit(&r) != 1))
			t_fail("%s", hres_desc(&r));
		else if (hres_exit(&r) == 1 && !strstr(r.err, "hint:"))
			t_fail("refused without a hint: %s", hres_desc(&r));
		else if (hres_exit(&r) == 0)
			ok++;
		else
			refused++;
		hres_free(&r);
		if (!t_failed())
			victim_check(v, 0);
	}
	t_note("inside the allocator: %d succeeded, %d refused", ok, refused);
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
	char t_sig[16], t_main[16], buf[128];
	long count = 0, sum = 0;
	pid_t pid;
	ssize_t n;

	if (!v)
		return;
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
		struct hres r;

		switch (i % 4) {
		case 0:
			hc_expect(&r, 0, "prof", "status", "-p", v->spid, "--tid", t_sig, NULL);
			break;
		case 1:
			hc_expect(&r, 0, "stats", "--json", "-p", v->spid, "--tid", t_main, NULL);
			break;
		case 2:
			hc_expect(&r, 0, "get", "-p", v->spid, "--tid", t_sig, "opt.prof", NULL);
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
	victim_check(v, 0);
}

/* ---- job-control stop ------------------------------------------------- */

static void test_stopped_target(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[64];
	struct hres r = { 0 };
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
	t_note("stopped target: heapctl exit %d", hres_exit(&r));
	if (proc_check_tasks(v->pid, true, why, sizeof(why))) {
		t_fail("job-control stop not preserved: %s", why);
		goto out;
	}
	kill(v->pid, SIGCONT);
	for (end = now_ms() + 5000; proc_check_tasks(v->pid, false, why, sizeof(why)) &&
				    now_ms() < end;)
		sleep_ms(2);
	/* The stop itself stretched the ticker; it is not heapctl's doing. */
	victim_cmd(v, "tickreset", reply, sizeof(reply), 5000);
	victim_check(v, VC_EPOLL_EINTR_OK);
out:
	hres_free(&r);
	victim_kill(v);
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
	{ "tid-clock_nanosleep-ticker", test_tid_ticker, 0 },
	{ "tid-register-sentinel", test_tid_regs, 0 },
	{ "tid-inside-allocator", test_tid_in_allocator, 0 },
	{ "signals-during-burst", test_signals_burst, 0 },
	{ "stopped-target", test_stopped_target, 0 },
	{ "victim-clean-exit", test_victim_exit, 0 },
	{ NULL, NULL, 0 },
};
