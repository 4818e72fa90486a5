// SPDX-License-Identifier: MIT
/*
 * Several heapctls on one process.  They take turns (the per-target lock,
 * src/lib/borrow/tlock.c): twenty started together all succeed and leave the
 * target unharmed; one that waits longer than --timeout names the heapctl
 * it waited for, as does one refused because a heapctl in another network
 * namespace traces the target; a thread held by another tracer is reported
 * as traced by it, never as a permission problem.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"

#define VCONF "prof:true,prof_active:false"
#define NCONC 20

static int start(struct victim *v)
{
	char why[512];

	if (victim_start(v, "jemalloc_victim", VCONF, why, sizeof(why))) {
		t_fail("%s", why);
		return -1;
	}
	victim_baseline(v);
	victim_ticker_reset(v);
	return 0;
}

/*
 * Read (and drop) the stdout of all of them at once: `stats --full` writes
 * its report while it holds the lock, and one blocked on a full pipe would
 * keep the others waiting.  Ends when every stdout is closed.
 */
static void drain_stdout(struct hproc *hp, const bool *started, int n)
{
	long until = now_ms() + HC_TIMEOUT_S * 3 * 1000L;
	bool open_[NCONC];
	int left = 0;

	for (int i = 0; i < n; i++) {
		open_[i] = started[i] && hp[i].out >= 0;
		left += open_[i];
	}
	while (left && now_ms() < until) {
		struct pollfd p[NCONC];
		int idx[NCONC], np = 0;
		char buf[65536];

		for (int i = 0; i < n; i++)
			if (open_[i]) {
				p[np].fd = hp[i].out;
				p[np].events = POLLIN;
				p[np].revents = 0;
				idx[np++] = i;
			}
		if (poll(p, (nfds_t)np, 1000) <= 0)
			continue;
		for (int k = 0; k < np; k++)
			if (p[k].revents && read(p[k].fd, buf, sizeof(buf)) <= 0) {
				open_[idx[k]] = false;
				left--;
			}
	}
}

/* 10 prof on/off and 10 stats --full, all started before any is waited for. */
static void test_concurrent(void)
{
	struct victim v;
	struct hproc hp[NCONC];
	bool started[NCONC] = { false };
	unsigned int ok = 0;

	if (start(&v))
		return;
	for (int i = 0; i < NCONC; i++) {
		const char *prof[] = { "prof", i % 4 ? "off" : "on", "-p", v.spid, NULL };
		const char *stats[] = { "stats", "--full", "-p", v.spid, NULL };

		started[i] = hc_startv(&hp[i], NULL, i % 2 ? stats : prof) == 0;
		if (!started[i])
			t_fail("cannot start heapctl #%d", i);
	}
	drain_stdout(hp, started, NCONC);
	for (int i = 0; i < NCONC; i++) {
		struct hres r = { 0 };

		if (!started[i])
			continue;
		/* each waits for the ones before it: allow for all of them */
		hc_finish(&hp[i], &r, HC_TIMEOUT_S * 3);
		if (hres_exit(&r) == 0)
			ok++;
		else
			t_fail("%s: %s", r.cmdline, hres_desc(&r));
		hres_free(&r);
	}
	t_note("%u of %d concurrent heapctls succeeded", ok, NCONC);
	victim_check(&v, 0);
	victim_kill(&v);
}

/* Field 22 of /proc/PID/stat. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], *s, *p;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = read_file_str(path);
	p = s ? strrchr(s, ')') : NULL;
	for (int f = 3; p && f <= 22; f++) {
		p = strchr(p, ' ');
		if (p && f == 22)
			v = strtoull(p + 1, NULL, 10);
		if (p)
			p++;
	}
	free(s);
	return v;
}

/* The address of the target's lock (see src/lib/borrow/tlock.c); returns its length. */
static socklen_t lock_addr(pid_t pid, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "heapctl-lock-%d-%llu", (int)pid,
		     start_time(pid));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Hold the target's lock as another heapctl would. */
static int hold_lock(pid_t pid)
{
	struct sockaddr_un sa;
	socklen_t len = lock_addr(pid, &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 64)) {
		t_fail("cannot take the lock of pid %d: %s", (int)pid, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void test_lock_wait(void)
{
	struct victim v;
	struct hproc hp;
	struct hres r = { 0 };
	char me[32];
	int fd;

	if (start(&v))
		return;
	fd = hold_lock(v.pid);
	if (fd < 0)
		goto out;
	snprintf(me, sizeof(me), "(pid %d)", (int)getpid());
	/* held past --timeout: give up, naming the holder, with a hint */
	hc_run(&r, NULL, "-v", "stats", "--timeout", "0.5", "-p", v.spid, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, "error: another heapctl") || !strstr(r.err, me) ||
	    !strstr(r.err, "hint:") || !strstr(r.err, "--timeout"))
		t_fail("wanted 'another heapctl %s is working on' and a --timeout hint: %s", me,
		       hres_desc(&r));
	else if (!strstr(r.err, "waiting up to"))
		t_fail("-v does not say that it waits: %s", r.err);
	hres_free(&r);
	victim_check(&v, 0);
	/* SIGINT while it waits: it stops at once, without waiting out --timeout */
	if (hc_startv(&hp, NULL, (const char *const[]){ "-v", "stats", "-p", v.spid, NULL })) {
		t_fail("cannot start heapctl");
	} else {
		char err[8192] = "";

		if (!hp_err_until(&hp, "waiting up to", err, sizeof(err), 20000)) {
			t_fail("no 'waiting up to' line at -v: %.300s", err);
			kill_wait(hp.pid);
			close(fd);
			goto out;
		}
		kill(hp.pid, SIGINT);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		/* it dies of the signal once it has said so (see src/cli/util.c) */
		if (r.timed_out || !WIFSIGNALED(r.status) || WTERMSIG(r.status) != SIGINT ||
		    !strstr(r.err, "stopping on SIGINT"))
			t_fail("SIGINT while waiting: %s", hres_desc(&r));
		hres_free(&r);
	}
	victim_check(&v, 0);
	/* released while it waits: it goes on and succeeds */
	if (hc_startv(&hp, NULL, (const char *const[]){ "-v", "stats", "-p", v.spid, NULL })) {
		t_fail("cannot start heapctl");
		close(fd);
		goto out;
	} else {
		char err[8192] = "";

		if (!hp_err_until(&hp, "waiting up to", err, sizeof(err), 20000))
			t_fail("no 'waiting up to' line at -v: %.300s", err);
	}
	close(fd);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_exit(&r) != 0)
		t_fail("after the lock was released: %s", hres_desc(&r));
	hres_free(&r);
	victim_check(&v, 0);
out:
	victim_kill(&v);
}

/* EPERM from the seize of a thread someone else traces: "traced by", not "run as root". */
static void test_thread_tracer(void)
{
	struct victim v;
	char stid[16], want[64];
	struct hres r = { 0 };
	pid_t tracer;
	int hold = -1;

	if (start(&v))
		return;
	tracer = tracer_start(v.t_sleep, &hold);
	if (tracer < 0) {
		t_fail("cannot seize thread %d", (int)v.t_sleep);
		goto out;
	}
	snprintf(stid, sizeof(stid), "%d", (int)v.t_sleep);
	snprintf(want, sizeof(want), "traced by pid %d (", (int)tracer);
	hc_run(&r, NULL, "stats", "-p", v.spid, "--tid", stid, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, want) || !strstr(r.err, "hint:"))
		t_fail("wanted '%s...' and a hint: %s", want, hres_desc(&r));
	if (strcasestr_(r.err, "Yama") || strcasestr_(r.err, "root") ||
	    strcasestr_(r.err, "not permitted"))
		t_fail("reported as a permission problem: %s", r.err);
	hres_free(&r);
	tracer_stop(tracer, hold);
	victim_check(&v, 0);
out:
	victim_kill(&v);
}

/* The pid holding the target's lock, by SO_PEERCRED, or 0 if none holds it. */
static pid_t lock_holder(pid_t pid)
{
	struct sockaddr_un sa;
	socklen_t len = lock_addr(pid, &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cred = { 0 };
	socklen_t cl = sizeof(cred);

	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&sa, len) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl))
		cred.pid = 0;
	close(fd);
	return cred.pid;
}

static bool holds_lock(const struct victim *v, pid_t worker)
{
	return lock_holder(v->pid) == worker;
}

static bool traces_main(const struct victim *v, pid_t worker)
{
	char state;
	long tracer;

	return task_status(v->pid, v->pid, &state, &tracer) == 0 && tracer == worker;
}

/*
 * Start argv (a heapctl at -vv, or a command that runs one) until its
 * worker is caught stopped (SIGSTOP) where caught() says, after line:
 * the worker's pid, and hp still running; 0 if it never was (30 tries).
 */
static pid_t stop_worker(const struct victim *v, const char *const argv[], const char *line,
			 bool (*caught)(const struct victim *, pid_t), struct hproc *hp)
{
	for (int tries = 0; tries < 30; tries++) {
		char err[8192] = "";
		struct hres r = { 0 };

		if (prog_start(hp, argv) < 0)
			return 0;
		if (hp_err_until(hp, line, err, sizeof(err), 20000)) {
			pid_t w = hp_worker(hp);

			if (w != hp->pid && !kill(w, SIGSTOP)) {
				char state = '?';
				long tracer;

				for (long end = now_ms() + 2000;
				     (task_status(w, w, &state, &tracer) || state != 'T') &&
				     now_ms() < end;)
					sleep_ms(1);
				if (caught(v, w))
					return w;
				kill(w, SIGCONT);
			}
		}
		hc_finish(hp, &r, HC_TIMEOUT_S);
		hres_free(&r);
	}
	return 0;
}

/*
 * While worker is stopped, another heapctl is refused with want in its
 * message and hint in its hint; then worker goes on and its command
 * succeeds, the target unharmed.
 */
static void refused_while_stopped(struct victim *v, struct hproc *hp, pid_t worker,
				  const char *want, const char *hint)
{
	struct hres r = { 0 };

	hc_run(&r, NULL, "stats", "--timeout", "0.3", "-p", v->spid, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, want) || !strstr(r.err, hint))
		t_fail("wanted '%s' (the command, not its worker %d) and '%s': %s", want,
		       (int)worker, hint, hres_desc(&r));
	hres_free(&r);
	kill(worker, SIGCONT);
	hc_finish(hp, &r, HC_TIMEOUT_S);
	if (hres_exit(&r) != 0)
		t_fail("the stopped heapctl, continued: %s", hres_desc(&r));
	hres_free(&r);
	victim_check(v, 0);
}

/*
 * A heapctl that waits for another names the command its user started,
 * not that command's worker (src/cli/keeper.c), which is what holds the
 * lock: the worker is stopped (SIGSTOP) while it holds it.
 */
static void test_lock_names_front(void)
{
	struct victim v;
	struct hproc hp;
	char stid[16], want[48];
	pid_t worker;

	if (start(&v))
		return;
	snprintf(stid, sizeof(stid), "%d", (int)v.t_read);
	worker = stop_worker(&v,
			     (const char *const[]){ cfg.heapctl, "-vv", "prof", "status", "--tid",
						    stid, "-p", v.spid, NULL },
			     "holding the lock", holds_lock, &hp);
	if (!worker) {
		t_fail("never caught a worker holding the lock of pid %d", (int)v.pid);
	} else {
		snprintf(want, sizeof(want), "another heapctl (pid %d)", (int)hp.pid);
		refused_while_stopped(&v, &hp, worker, want, "hint:");
	}
	victim_kill(&v);
}

/*
 * A heapctl in another network namespace does not share this one's lock
 * (an abstract socket): while it traces the target, this one refuses, and
 * names the command that user started, not its worker.  Its worker is
 * stopped while it traces the main thread, in stats --full.
 */
static void test_traced_names_command(void)
{
	struct victim v;
	struct hres r = { 0 };
	struct hproc hp;
	char un[512], want[64];
	pid_t worker;

	if (!find_in_path("unshare", un, sizeof(un))) {
		t_skip(true, "unshare not found");
		return;
	}
	if (prog_start(&hp, (const char *const[]){ un, "--net", "true", NULL }) < 0) {
		t_fail("cannot start unshare");
		return;
	}
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_exit(&r) != 0) {
		t_skip(true, "no network namespace can be made here (unshare --net: %.120s)", r.err);
		hres_free(&r);
		return;
	}
	hres_free(&r);
	if (start(&v))
		return;
	worker = stop_worker(&v,
			     (const char *const[]){ un, "--net", cfg.heapctl, "-vv", "stats", "--full",
						    "--tid", v.spid, "-p", v.spid, NULL },
			     "borrowing tid", traces_main, &hp);
	if (!worker) {
		t_fail("never caught a heapctl tracing pid %d", (int)v.pid);
	} else {
		snprintf(want, sizeof(want), "already traced by pid %d (heapctl)", (int)hp.pid);
		refused_while_stopped(&v, &hp, worker, want, "hint: another heapctl");
	}
	victim_kill(&v);
}

const struct itest t_concurrent_tests[] = {
	{ "concurrent-20", test_concurrent, 300 },
	{ "concurrent-lock-wait", test_lock_wait, 0 },
	{ "concurrent-thread-tracer", test_thread_tracer, 0 },
	{ "concurrent-lock-names-command", test_lock_names_front, 0 },
	{ "concurrent-traced-names-command", test_traced_names_command, 0 },
	{ NULL, NULL, 0 },
};
