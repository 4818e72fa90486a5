// SPDX-License-Identifier: MIT
/*
 * Timed waits are never made late (docs/design.md, "Blocked syscalls"):
 * a thread borrowed out of a timed epoll_wait, poll, futex or nanosleep
 * ends its wait when it asked to, give or take the borrow itself.  These
 * tests are about timing, so they measure it, with generous margins.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harm.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line from fd within timeout_ms, into buf (no newline); 0 or -1. */
static int read_line(int fd, char *buf, size_t sz, long timeout_ms)
{
	long end = now_ms() + timeout_ms;
	size_t n = 0;

	while (n + 1 < sz) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = end - now_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	buf[n] = '\0';
	return -1;
}

/* Wait until tid sits in one of nrs (the kernel's own view). */
static int wait_in_syscall(pid_t pid, pid_t tid, const long *nrs, const char *what)
{
	long nr;

	if (!proc_wait_syscall(pid, tid, nrs, 5000, &nr))
		return 0;
	t_fail("%s thread %d never entered its wait (in syscall %ld)", what, (int)tid, nr);
	return -1;
}

#define MARGIN_US 150000L

/*
 * What a slow or loaded machine adds to any wake-up, on top of the
 * margins: the ticker gap this lane allows beyond the default (raised for
 * sanitized and emulated runs), or the largest stall (of 4 ms or more) the
 * untouched control process saw since victim_ticker_reset(NULL), whichever
 * is larger.
 */
static long allowance_us(void)
{
	long lane = cfg.maxgap_us > MAXGAP_US ? cfg.maxgap_us - MAXGAP_US : 0;
	long cgap = victim_control_gap(NULL);

	return cgap > lane ? cgap : lane;
}

/* How long heapctl held the thread, from -v; else the whole run. */
static long borrow_us(const struct hres *r)
{
	const char *b = strstr(r->err, "borrowed tid ");
	long tid, us;

	if (b && sscanf(b, "borrowed tid %ld for %ld us", &tid, &us) == 2)
		return us;
	return r->ms * 1000;
}

/*
 * Python's selectors retry an interrupted epoll.poll() with the time left
 * (PEP 475): with heapctl's stop giving the EINTR any signal gives, poll(5)
 * ends at 5 s; re-issued with its original timeout it ended at 4 + 5 s.
 */
static void test_python_epoll(void)
{
	static const char script[] =
		"import os,select,sys,time\n"
		"ep=select.epoll()\n"
		"t=time.monotonic()\n"
		"sys.stdout.write('%d %.6f\\n'%(os.getpid(),t));sys.stdout.flush()\n"
		"ep.poll(5)\n"
		"e=time.monotonic()\n"
		"sys.stdout.write('%.6f %.6f\\n'%(e-t,e));sys.stdout.flush()\n";
	char py[512], line[256], why[256], spid[16];
	const char *argv[] = { py, "-c", script, NULL };
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	int out[2] = { -1, -1 };
	double t0 = 0, elapsed = 0, end = 0, hc_end, slack;
	struct hres r = { 0 };
	pid_t pid;
	long ipid = 0;

	if (!find_in_path("python3", py, sizeof(py))) {
		t_skip(false, "python3 is not installed");
		return;
	}
	if (pipe(out)) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	o.out_fd = out[1];
	pid = spawn(argv, &o, why, sizeof(why));
	close(out[1]);
	if (pid < 0) {
		t_fail("python3: %s", why);
		close(out[0]);
		return;
	}
	if (read_line(out[0], line, sizeof(line), 10000) ||
	    sscanf(line, "%ld %lf", &ipid, &t0) != 2 || ipid != pid) {
		t_fail("python3 did not start (got \"%s\")", line);
		goto out;
	}
	victim_ticker_reset(NULL); /* opens the control's window for allowance_us() */
	if (wait_in_syscall(pid, pid, nrs_epoll, "python"))
		goto out;
	/* 4 s into its 5 s wait, as in the report; the delay is the subject here */
	if (mono_s() < t0 + 4.0)
		sleep_ms((long)((t0 + 4.0 - mono_s()) * 1000) + 1);
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	if (hc_expect(&r, 0, "stats", "-p", spid, NULL)) {
		hres_free(&r);
		goto out;
	}
	hres_free(&r);
	hc_end = mono_s();
	if (read_line(out[0], line, sizeof(line), 15000) ||
	    sscanf(line, "%lf %lf", &elapsed, &end) != 2) {
		t_fail("python3 never ended its epoll.poll(5) (got \"%s\")", line);
		goto out;
	}
	slack = 0.2 + allowance_us() / 1e6;
	t_note("epoll.poll(5) took %.3f s; heapctl was done %.3f s after it started", elapsed,
	       hc_end - t0);
	if (elapsed < 4.99)
		t_fail("epoll.poll(5) returned early, after %.3f s", elapsed);
	/* beyond the borrow itself: a heapctl slower than 1 s may end it later */
	else if (elapsed > 5 + slack && end > hc_end + slack)
		t_fail("epoll.poll(5) took %.3f s, more than %.3f s: heapctl restarted its timeout",
		       elapsed, 5 + slack);
out:
	close(out[0]);
	kill_wait(pid);
}

#define TIMED_MS 1500
/*
 * The wait to use: 1.5 s, or longer where one heapctl run takes long
 * (an emulated CPU), so that every borrow lands inside the wait.  One
 * calibration run borrows tid while it idles.
 */
static long wait_ms_for(const char *spid, pid_t tid, long runs)
{
	char stid[16];
	struct hres r = { 0 };
	long ms;

	snprintf(stid, sizeof(stid), "%d", (int)tid);
	if (hc_expect(&r, 0, "stats", "-p", spid, "--tid", stid, NULL)) {
		hres_free(&r);
		return -1;
	}
	ms = r.ms * runs;
	hres_free(&r);
	if (ms < TIMED_MS)
		ms = TIMED_MS;
	if (ms > 30000)
		ms = 30000;
	if (ms > TIMED_MS)
		t_note("one heapctl run takes %ld ms here: waits of %ld ms", ms / runs, ms);
	return ms;
}

enum { K_EPOLL, K_POLL, K_FUTEX, K_SLEEP, K_N };
static const char *const kname[K_N] = { "epoll", "poll", "futex", "sleep" };
static const long *const knrs[K_N] = { nrs_epoll, nrs_poll, nrs_futex, nrs_sleep };

/* A timer_victim: its stdin, its stdout, and its four waiting threads. */
struct tv {
	pid_t pid;
	int in, out;
	char spid[16];
	int t[K_N];
	long wms;		/* the wait: wait_ms_for() */
	char line[1024];	/* the last reply */
	char *base_fds, *base_maps;	/* as it started: proc_fd_set(), maps_snap() */
};

/* One wait, from "result": elapsed us, EINTRs, early returns, first errno. */
struct wres {
	long el, eintr, early, err;
};

/*
 * Sends cmd and reads the reply into v->line; 0 if it is want (starts
 * with it, when want ends in a space), else t_fail().
 */
static int tv_cmd(struct tv *v, const char *cmd, const char *want, long timeout_ms)
{
	size_t wl = strlen(want);

	v->line[0] = '\0';
	if (dprintf(v->in, "%s\n", cmd) < 0 ||
	    read_line(v->out, v->line, sizeof(v->line), timeout_ms) ||
	    (want[wl - 1] == ' ' ? strncmp(v->line, want, wl) : strcmp(v->line, want))) {
		t_fail("timer_victim: %s: \"%s\"", cmd, v->line);
		return -1;
	}
	return 0;
}

/*
 * Starts timer_victim, learns its threads and picks the wait (runs: see
 * wait_ms_for()).  0, or -1 after t_fail(); tv_stop() in either case.
 */
static int tv_start(struct tv *v, long runs)
{
	char bin[512], tl[16], why[256];
	const char *argv[] = { bin, tl, NULL };
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	int in[2], out[2];

	memset(v, 0, sizeof(*v));
	v->pid = -1;
	v->in = v->out = -1;
	snprintf(bin, sizeof(bin), "%s/timer_victim", cfg.victim_dir);
	snprintf(tl, sizeof(tl), "%d", TIMED_MS);
	if (pipe(in)) {
		t_fail("pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe(out)) {
		t_fail("pipe: %s", strerror(errno));
		close(in[0]);
		close(in[1]);
		return -1;
	}
	o.in_fd = in[0];
	o.out_fd = out[1];
	v->pid = spawn(argv, &o, why, sizeof(why));
	close(in[0]);
	close(out[1]);
	v->in = in[1];
	v->out = out[0];
	if (v->pid < 0) {
		t_fail("timer_victim: %s", why);
		return -1;
	}
	snprintf(v->spid, sizeof(v->spid), "%d", (int)v->pid);
	if (tv_cmd(v, "tids", "tids ", 10000))
		return -1;
	if (sscanf(v->line, "tids epoll=%d poll=%d futex=%d sleep=%d", &v->t[0], &v->t[1],
		   &v->t[2], &v->t[3]) != 4) {
		t_fail("timer_victim did not start (got \"%s\")", v->line);
		return -1;
	}
	v->base_fds = proc_fd_set(v->pid);
	v->base_maps = maps_snap(v->pid);
	if (!v->base_fds || !v->base_maps) {
		t_fail("cannot read /proc/%d", (int)v->pid);
		return -1;
	}
	v->wms = wait_ms_for(v->spid, v->t[K_EPOLL], runs);
	return v->wms < 0 ? -1 : 0;
}

/* One wait of v->wms in every thread. */
static int tv_go(struct tv *v)
{
	char go[32];

	snprintf(go, sizeof(go), "go %ld", v->wms);
	victim_ticker_reset(NULL); /* opens the control's window for allowance_us() */
	return tv_cmd(v, go, "started", 5000);
}

/* Waits for the waits to end and reads how each went. */
static int tv_result(struct tv *v, struct wres w[K_N])
{
	if (tv_cmd(v, "result", "result ", 20000 + v->wms))
		return -1;
	for (int k = 0; k < K_N; k++) {
		char key[16];
		const char *p;

		snprintf(key, sizeof(key), " %s=", kname[k]);
		p = strstr(v->line, key);
		if (!p || sscanf(p + strlen(key), "%ld,%ld,%ld,%ld", &w[k].el, &w[k].eintr,
				 &w[k].early, &w[k].err) != 4) {
			t_fail("timer_victim: no %s in \"%s\"", kname[k], v->line);
			return -1;
		}
	}
	return 0;
}

/*
 * The target unharmed after heapctl: no task traced or stopped, its fds
 * as they were, no new executable or PROT_NONE mapping.
 */
static int tv_unharmed(struct tv *v, const char *what)
{
	struct leftovers lo;
	char why[1024];
	long end = now_ms() + 2000;
	int rc;

	while ((rc = proc_check_tasks(v->pid, false, why, sizeof(why))) && now_ms() < end)
		sleep_ms(2);
	if (rc || fds_settle(v->pid, v->base_fds, 2000, why, sizeof(why))) {
		t_fail("target harmed %s: %s", what, why);
		return -1;
	}
	if (maps_classify(v->pid, v->base_maps, &lo)) {
		t_fail("cannot read /proc/%d/maps", (int)v->pid);
		return -1;
	}
	if (lo.odd) {
		t_fail("target harmed %s: new mapping(s) %s", what, lo.odd_desc);
		return -1;
	}
	return 0;
}

/* "quit" (answered with "bye") unless the test failed already; then reaps it. */
static void tv_stop(struct tv *v)
{
	if (v->pid > 0 && !t_failed())
		tv_cmd(v, "quit", "bye", 5000);
	if (v->in >= 0)
		close(v->in);
	if (v->out >= 0)
		close(v->out);
	if (v->pid > 0)
		kill_wait(v->pid);
	free(v->base_fds);
	free(v->base_maps);
	memset(v, 0, sizeof(*v));
	v->in = v->out = -1;
	v->pid = -1;
}

/*
 * A C victim times its own waits of 1.5 s (longer where heapctl is slow,
 * see wait_ms_for()) while heapctl borrows each of its threads twice per
 * wait, over two waits.  Every wait must end within 150 ms (plus the
 * borrows and allowance_us()) of its deadline and never before it.  EINTR
 * is allowed only where any signal gives it (epoll_wait); poll, futex and
 * nanosleep resume through the kernel's restart with the time left.
 */
static void test_tid_waits(void)
{
	char stid[16];
	struct wres w[K_N];
	long held[K_N], margin;
	struct hres r = { 0 };
	struct tv v;

	if (tv_start(&v, 12))
		goto out;
	for (int round = 0; round < 2; round++) {
		memset(held, 0, sizeof(held));
		if (tv_go(&v))
			goto out;
		for (int k = 0; k < K_N; k++)
			if (wait_in_syscall(v.pid, v.t[k], knrs[k], kname[k]))
				goto out;
		/* well into the wait: a restarted timeout would show by far */
		sleep_ms(v.wms / 4);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < K_N; k++) {
				snprintf(stid, sizeof(stid), "%d", v.t[k]);
				if (hc_expect(&r, 0, "stats", "-p", v.spid, "--tid", stid, NULL)) {
					hres_free(&r);
					goto out;
				}
				held[k] += borrow_us(&r);
				hres_free(&r);
			}
		if (tv_unharmed(&v, "after the borrows"))
			goto out;
		if (tv_result(&v, w))
			goto out;
		margin = MARGIN_US + allowance_us();
		for (int k = 0; k < K_N; k++) {
			long late = w[k].el - v.wms * 1000L;

			t_note("round %d: %s waited %ld ms for %d ms (held %ld ms), %ld EINTR", round,
			       kname[k], w[k].el / 1000, (int)v.wms, held[k] / 1000, w[k].eintr);
			if (w[k].err)
				t_fail("%s: unexpected error %ld (%s)", kname[k], w[k].err,
				       strerror((int)w[k].err));
			else if (w[k].early)
				t_fail("%s: the syscall said its time was up %ld time(s) before it was",
				       kname[k], w[k].early);
			else if (late < -1000)
				t_fail("%s: the wait ended %ld ms early", kname[k], -late / 1000);
			else if (late > margin + held[k])
				t_fail("%s: a %d ms wait took %ld ms (held %ld ms, margin %ld ms):"
				       " timer made late", kname[k], (int)v.wms, w[k].el / 1000,
				       held[k] / 1000, margin / 1000);
			else if (k != K_EPOLL && w[k].eintr)
				t_fail("%s saw EINTR %ld time(s): the kernel resumes it by itself",
				       kname[k], w[k].eintr);
		}
	}
out:
	tv_stop(&v);
}

/*
 * Runs heapctl -vvv stats --tid tid and SIGKILLs it right after it says
 * it borrows the thread.  Returns 1 if the kill landed, 0 if heapctl was
 * done first, -1 on error; *held_us is from its start to the kill.
 */
static int kill_while_borrowed(const char *spid, pid_t tid, long *held_us)
{
	char stid[16], acc[8192] = "";
	const char *args[] = { "-vvv", "stats", "-p", spid, "--tid", stid, NULL };
	const char *saved = cfg.vflag;
	struct hproc hp;
	struct hres r = { 0 };
	long t0 = now_ms();
	bool killed = false;

	snprintf(stid, sizeof(stid), "%d", (int)tid);
	cfg.vflag = NULL;
	if (hc_startv(&hp, NULL, args) < 0) {
		cfg.vflag = saved;
		hc_finish(&hp, &r, 10);
		t_fail("heapctl did not start: %s", hres_desc(&r));
		hres_free(&r);
		return -1;
	}
	cfg.vflag = saved;
	/* killed after the borrow is announced: the thread is held (or about to be) */
	if (hp_err_until(&hp, "borrowing tid ", acc, sizeof(acc), 10000) &&
	    !pid_exited(hp.pid)) {
		kill(hp.pid, SIGKILL);
		killed = true;
	}
	*held_us = (now_ms() - t0) * 1000;
	hc_finish(&hp, &r, 10);
	if (killed && !(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL))
		killed = false;
	if (!killed && hres_exit(&r) != 0) {
		t_fail("heapctl failed before the kill: %s", hres_desc(&r));
		hres_free(&r);
		return -1;
	}
	hres_free(&r);
	return killed ? 1 : 0;
}

/*
 * heapctl killed while it holds a thread: the thread runs rt_sigreturn on
 * heapctl's frame.  A timed epoll_wait keeps the EINTR any signal gives
 * it and ends on time.  nanosleep, timed poll and FUTEX_WAIT lost their
 * restart block to that rt_sigreturn: they start over rather than fail
 * with an EINTR no signal gives a thread without a handler (the one
 * documented case of a late timer, docs/design.md); only the absence of
 * EINTR is checked for them.
 */
static void test_killed_waits(void)
{
	unsigned int landed = 0;
	struct wres w[K_N];
	struct tv v;

	if (tv_start(&v, 6))
		goto out;
	for (int k = 0; k < K_N; k++) {
		long late, held = 0;
		int kr = 0;

		if (tv_go(&v) || wait_in_syscall(v.pid, v.t[k], knrs[k], kname[k]))
			goto out;
		sleep_ms(v.wms / 4);
		/* a heapctl that finished before the kill proves nothing: again */
		for (int tries = 0; tries < 3 && kr == 0; tries++) {
			long h = 0;

			kr = kill_while_borrowed(v.spid, v.t[k], &h);
			held += h;
		}
		if (kr < 0 || tv_unharmed(&v, kr ? "after heapctl was killed" : "after heapctl"))
			goto out;
		landed += kr;
		if (tv_result(&v, w))
			goto out;
		late = w[k].el - v.wms * 1000L;
		t_note("%s: heapctl %s; waited %ld ms for %d ms (heapctl ran %ld ms), %ld EINTR",
		       kname[k], kr ? "killed once it said it borrows" : "done before the kill",
		       w[k].el / 1000, (int)v.wms, held / 1000, w[k].eintr);
		if (w[k].err)
			t_fail("%s: unexpected error %ld (%s)", kname[k], w[k].err,
			       strerror((int)w[k].err));
		else if (w[k].early)
			t_fail("%s: the syscall said its time was up %ld time(s) before it was",
			       kname[k], w[k].early);
		else if (late < -1000)
			t_fail("%s: the wait ended %ld ms early", kname[k], -late / 1000);
		else if (k != K_EPOLL && w[k].eintr)
			t_fail("%s saw EINTR %ld time(s) after heapctl was killed", kname[k],
			       w[k].eintr);
		else if (k == K_EPOLL && late > MARGIN_US + allowance_us() + held)
			t_fail("%s: a %d ms wait took %ld ms after heapctl was killed: timer made late",
			       kname[k], (int)v.wms, w[k].el / 1000);
	}
	if (!landed)
		t_skip(false, "heapctl finished before every kill: nothing was proved");
out:
	tv_stop(&v);
}

/*
 * A call that faults in the target is never delivered: heapctl restores
 * the thread and reports it.  The restore must keep the thread's restart
 * block (no real rt_sigreturn), so a nanosleep borrowed by that call goes
 * on with the time left.  The victim corrupts its own heap so that
 * mallinfo2() faults; that leaves glibc's arena lock held, so one fault
 * per victim.
 */
static void test_fault_sleep(void)
{
	char stid[16];
	struct wres w[K_N];
	struct hres r = { 0 };
	struct tv v;
	long late, held, margin;

	if (tv_start(&v, 6) || tv_cmd(&v, "corrupt", "corrupted", 5000) || tv_go(&v) ||
	    wait_in_syscall(v.pid, v.t[K_SLEEP], knrs[K_SLEEP], "sleep"))
		goto out;
	sleep_ms(v.wms / 4);
	snprintf(stid, sizeof(stid), "%d", v.t[K_SLEEP]);
	hc_run(&r, NULL, "stats", "-p", v.spid, "--tid", stid, NULL);
	if (WIFSIGNALED(r.status) || hres_exit(&r) == 0 || !strstr(r.err, "fault")) {
		t_fail("heapctl stats on a corrupted heap: want a reported fault, got %s",
		       hres_desc(&r));
		hres_free(&r);
		goto out;
	}
	held = borrow_us(&r);
	hres_free(&r);
	if (tv_unharmed(&v, "after the faulting call"))
		goto out;
	if (tv_result(&v, w))
		goto out;
	late = w[K_SLEEP].el - v.wms * 1000L;
	margin = MARGIN_US + allowance_us();
	t_note("sleep waited %ld ms for %ld ms (held %ld ms), %ld EINTR, after a faulting call",
	       w[K_SLEEP].el / 1000, v.wms, held / 1000, w[K_SLEEP].eintr);
	if (w[K_SLEEP].err || w[K_SLEEP].early || w[K_SLEEP].eintr)
		t_fail("sleep: error %ld, %ld early, %ld EINTR after the faulting call",
		       w[K_SLEEP].err, w[K_SLEEP].early, w[K_SLEEP].eintr);
	else if (late < -1000 || late > margin + held)
		t_fail("sleep: a %ld ms nanosleep took %ld ms (held %ld ms, margin %ld ms): the"
		       " faulting call restarted it", v.wms, w[K_SLEEP].el / 1000, held / 1000,
		       margin / 1000);
out:
	tv_stop(&v);
}

const struct itest t_timers_tests[] = {
	{ "timed-wait-python-epoll", test_python_epoll, 0 },
	{ "timed-wait-tid-borrows", test_tid_waits, 0 },
	{ "timed-wait-heapctl-killed", test_killed_waits, 0 },
	{ "timed-wait-call-faults", test_fault_sleep, 0 },
	{ NULL, NULL, 0 },
};
