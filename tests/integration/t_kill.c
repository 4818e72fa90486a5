// SPDX-License-Identifier: MIT
/*
 * The kill suite: heapctl is SIGKILLed at random moments of random
 * operations against the multi-threaded jemalloc_victim, while a storm of
 * queued real-time signals runs.  After every kill the victim must be
 * alive, untraced, not stopped, with every parked thread taking its next
 * wake-up normally (no EINTR, sentinel registers intact), the same fds,
 * and nothing of heapctl's left behind, checked before any other heapctl
 * runs.  Each of these is harm, counted and reported apart from the rest:
 *
 *   - a new executable anonymous page (its code page) or its data area;
 *   - a heapctl directory or profile in the target's /tmp;
 *   - a changed /proc/PID/fd;
 *   - an EINTR the victim saw (epoll_wait stopped by heapctl's stop).
 *
 * The kills that landed while a thread of the victim was held are counted
 * too.
 *
 * Two ways to pick the moment, half the runs each:
 *   line  heapctl runs with -vvv, which logs every ptrace stop; the run is
 *         killed right after its Nth line of stderr, N uniform over the
 *         lines the same operation printed in a calibration run;
 *   time  heapctl runs quietly and is killed after a delay uniform over
 *         the calibrated duration of the operation.
 *
 * ITEST_KILL_RUNS sets the number of runs (default 300; `make torture` runs
 * KILLS, 10,000 unless told), ITEST_SEED the random seed (printed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
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

#define VCONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define GAP_LIMIT_US 200000	/* a thread is never held that long, even by -vvv */

static unsigned int nproblems;

struct op {
	const char *name;
	const char *args[8];	/* after the subcommand's -p PID; DUMP is replaced */
	unsigned int weight;
};

#define DUMP "\x01"

static const struct op ops[] = {
	{ "prof on", { "prof", "on", NULL }, 2 },
	{ "prof off", { "prof", "off", NULL }, 2 },
	{ "prof status", { "prof", "status", NULL }, 1 },
	{ "dump", { "dump", "-o", DUMP, NULL }, 4 },
	{ "stats", { "stats", NULL }, 2 },
	{ "stats --json", { "stats", "--json", NULL }, 1 },
	{ "stats --full", { "stats", "--full", NULL }, 4 },
	{ "purge", { "purge", NULL }, 2 },
	{ "purge --arena 0", { "purge", "--arena", "0", NULL }, 1 },
	{ "get", { "get", "stats.allocated", NULL }, 1 },
	{ "set", { "set", "prof.active", "false", NULL }, 1 },
	{ "set decay", { "set", "--", "arena.0.dirty_decay_ms", "-1", NULL }, 1 },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

struct calib {
	long lines;	/* stderr lines with -vvv */
	long us;	/* wall time without */
};

struct tally {
	unsigned long runs, killed, completed, refused, held, line_mode;
	unsigned long per_op[NOPS];
	unsigned long crashes, hangs, traced, stopped, harmed, fd_changes, odd_maps;
	unsigned long dumps_left, dirs_left;
	unsigned long sig_sent;
	long sig_sum, sig_got, maxgap_us;
	unsigned long sig_bad, restarts_bad, sig_total;
};

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void spin_us(long us)
{
	long end = now_us() + us;

	while (now_us() < end)
		;
}

/* Builds heapctl's argument list: [-vvv] ARGS... -p PID [--tid T] --timeout 5 */
static void build_args(const char **a, const struct op *op, const struct victim *v,
		       const char *tid, bool loud, const char *dump)
{
	int n = 0;

	/* -vv at least: watch_line() reads it */
	a[n++] = loud ? "-vvv" : "-vv";
	for (int i = 0; op->args[i]; i++) {
		if (!strcmp(op->args[i], "--"))
			break;
		a[n++] = !strcmp(op->args[i], DUMP) ? dump : op->args[i];
	}
	a[n++] = "-p";
	a[n++] = v->spid;
	if (tid) {
		a[n++] = "--tid";
		a[n++] = tid;
	}
	a[n++] = "--timeout";
	a[n++] = "5";
	/* operands after "--" (a negative value) come last */
	for (int i = 0; op->args[i]; i++)
		if (!strcmp(op->args[i], "--")) {
			for (; op->args[i]; i++)
				a[n++] = op->args[i];
			break;
		}
	a[n] = NULL;
}

static void count_lines(const char *s, long *n)
{
	for (; *s; s++)
		if (*s == '\n')
			(*n)++;
}

/* Per-run state while heapctl's stderr streams in. */
struct watch {
	long lines;
	bool held;	/* a thread of the victim is seized right now */
	char part[512];
	size_t plen;
};

static void watch_line(struct watch *w, const char *l)
{
	w->lines++;
	if (strstr(l, "seized tid") || strstr(l, "borrowing tid"))
		w->held = true;
	else if (strstr(l, "detached tid") || strstr(l, "borrowed tid"))
		w->held = false;
}

static void watch_feed(struct watch *w, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			w->part[w->plen] = '\0';
			watch_line(w, w->part);
			w->plen = 0;
		} else if (w->plen < sizeof(w->part) - 1) {
			w->part[w->plen++] = buf[i];
		}
	}
}

/*
 * Runs heapctl and SIGKILLs it at the kill_line-th stderr line (line
 * mode) or kill_us after the start.  Returns true if it was killed
 * (rather than finishing first); *held tells whether a thread was seized.
 */
static bool run_and_kill(const char *const *args, bool line_mode, long kill_line, long kill_us,
			 long extra_us, struct hres *r, bool *held)
{
	struct watch w = { 0 };
	struct hproc hp;
	long t0 = now_us();
	bool killed = false;

	if (hc_startv(&hp, NULL, args) < 0) {
		hc_finish(&hp, r, 10);
		*held = false;
		return false;
	}
	while (hp.err >= 0 || hp.out >= 0) {
		struct pollfd p[2] = { { .fd = hp.err, .events = POLLIN },
				       { .fd = hp.out, .events = POLLIN } };
		long left = line_mode ? 10000 : (t0 + kill_us - now_us()) / 1000;
		char buf[65536];

		if (!line_mode && now_us() >= t0 + kill_us)
			break;
		if (poll(p, 2, (int)(left < 0 ? 0 : left + 1)) < 0 && errno != EINTR)
			break;
		if (p[1].revents) {
			ssize_t n = read(hp.out, buf, sizeof(buf));

			if (n <= 0) {
				close(hp.out);
				hp.out = -1;
			}
		}
		if (p[0].revents) {
			ssize_t n = read(hp.err, buf, sizeof(buf) - 1);

			if (n <= 0) {
				close(hp.err);
				hp.err = -1;
				continue;
			}
			buf[n] = '\0';
			for (ssize_t i = 0; i < n; i++) {
				watch_feed(&w, buf + i, 1);
				if (line_mode && w.lines >= kill_line && buf[i] == '\n')
					goto kill_now;
			}
		}
		if (!line_mode && now_us() >= t0 + kill_us)
			break;
	}
	if (line_mode)
		goto done; /* it finished before the chosen line */
kill_now:
	if (extra_us)
		spin_us(extra_us);
	if (!pid_exited(hp.pid)) {
		*held = w.held;
		kill(hp.pid, SIGKILL);
		killed = true;
	}
done:
	hc_finish(&hp, r, 10);
	/* It may have exited on its own between the check and the kill. */
	if (killed && !(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL))
		killed = false;
	if (!killed)
		*held = false;
	return killed;
}

static void calibrate(struct victim *v, struct calib *c, const char *dump)
{
	for (size_t i = 0; i < NOPS; i++) {
		const char *a[24];
		struct hres r = { 0 };
		long t0;

		build_args(a, &ops[i], v, NULL, true, dump);
		hc_runv(&r, NULL, a);
		c[i].lines = 0;
		count_lines(r.err, &c[i].lines);
		if (hres_exit(&r) != 0)
			t_fail("calibration: %s", hres_desc(&r));
		hres_free(&r);
		build_args(a, &ops[i], v, NULL, false, dump);
		t0 = now_us();
		hc_runv(&r, NULL, a);
		c[i].us = now_us() - t0;
		if (hres_exit(&r) != 0)
			t_fail("calibration: %s", hres_desc(&r));
		hres_free(&r);
	}
}

static void pick_op(size_t *idx)
{
	unsigned int total = 0, x;

	for (size_t i = 0; i < NOPS; i++)
		total += ops[i].weight;
	x = (unsigned int)rnd_below(total);
	for (size_t i = 0; i < NOPS; i++) {
		if (x < ops[i].weight) {
			*idx = i;
			return;
		}
		x -= ops[i].weight;
	}
	*idx = 0;
}

struct kstate {
	struct victim v;
	bool up;
	struct vcount base;
	char *base_fds, *base_maps;
	struct sigstorm storm;
	bool storming;
	pid_t sig_tids[2];
};

static int kstart(struct kstate *k, struct tally *t)
{
	char why[512], reply[64];

	if (victim_start(&k->v, "jemalloc_victim", VCONF, why, sizeof(why))) {
		t_fail("%s", why);
		return -1;
	}
	k->up = true;
	victim_cmd(&k->v, "tickreset", reply, sizeof(reply), 5000);
	free(k->base_fds);
	free(k->base_maps);
	k->base_fds = proc_fd_set(k->v.pid);
	k->base_maps = maps_snap(k->v.pid);
	if (vcount_get(&k->v, &k->base, why, sizeof(why))) {
		t_fail("%s", why);
		return -1;
	}
	/* A fresh victim has counted nothing yet. */
	t->sig_sent = 0;
	t->sig_sum = 0;
	k->sig_tids[0] = k->v.t_main;
	k->sig_tids[1] = k->v.t_sig;
	return 0;
}

static void storm_on(struct kstate *k)
{
	if (k->storming)
		return;
	/* process-directed and to the two threads that take SIGRTMIN+1 */
	k->storming = !sigstorm_start(&k->storm, k->v.pid, k->sig_tids, 2, 1, 2, 1000);
	if (!k->storming)
		t_fail("cannot start the signal storm");
}

static void storm_off_and_tally(struct kstate *k, struct tally *t, long run, const char *what)
{
	char why[4096];
	unsigned long before = t->sig_sent;
	long got = 0;

	if (!k->storming)
		return;
	k->storming = false;
	if (sigstorm_stop(&k->storm, &t->sig_sent, &t->sig_sum)) {
		t_fail("signal storm failed");
		return;
	}
	t->sig_total += t->sig_sent - before;
	if (sig_tally(&k->v, t->sig_sent, t->sig_sum, 5000, &got, why, sizeof(why))) {
		t->sig_bad++;
		problem("run %ld (%s): target harmed: %s", run, what, why);
		/* Go on counting from what the victim has now. */
		t->sig_sent = (unsigned long)got;
		victim_cmd(&k->v, "state", why, sizeof(why), 5000);
		t->sig_sum = kv_long(why, "sig_sum", 0);
	}
}

static void kstop(struct kstate *k)
{
	if (k->storming) {
		unsigned long c = 0;
		long s = 0;

		sigstorm_stop(&k->storm, &c, &s);
		k->storming = false;
	}
	if (k->up)
		victim_kill(&k->v);
	k->up = false;
	free(k->base_fds);
	free(k->base_maps);
	k->base_fds = k->base_maps = NULL;
}

/*
 * Everything that must hold after one kill.  Returns -1 if the victim is
 * unusable, 1 if it is fine but holds leftovers of heapctl's.
 */
static int after_kill(struct kstate *k, struct tally *t, unsigned long run, const char *what)
{
	struct victim *v = &k->v;
	struct leftovers lo;
	char why[1024], st[4096];
	long end = now_ms() + 500;
	int rc;

	if (pid_exited(v->pid) || !victim_alive(v)) {
		t->crashes++;
		problem("run %lu (%s): victim died", run, what);
		return -1;
	}
	while ((rc = proc_check_tasks(v->pid, false, why, sizeof(why))) && now_ms() < end)
		sleep_ms(2);
	if (rc) {
		if (strstr(why, "TracerPid"))
			t->traced++;
		else
			t->stopped++;
		problem("run %lu (%s): target harmed: %s", run, what, why);
		return -1;
	}
	if (wake_check(v, &k->base, false, why, sizeof(why))) {
		t->harmed++;
		problem("run %lu (%s): target harmed: %s", run, what, why);
		return -1;
	}
	if (fds_settle(v->pid, k->base_fds, 2000, why, sizeof(why))) {
		t->fd_changes++;
		problem("run %lu (%s): target harmed: %s", run, what, why);
		free(k->base_fds);
		k->base_fds = proc_fd_set(v->pid);
	}
	if (maps_classify(v->pid, k->base_maps, &lo) == 0) {
		if (lo.odd) {
			t->odd_maps += lo.odd;
			problem("run %lu (%s): unexpected new mapping(s): %s", run, what,
			       lo.odd_desc);
		}
		free(k->base_maps);
		k->base_maps = maps_snap(v->pid);
	}
	{
		unsigned int prof = 0;

		unsigned int dirs = dump_leftovers(v->pid, true, &prof);

		t->dirs_left += dirs;
		t->dumps_left += prof;
		if (dirs)
			problem("run %lu (%s): left behind: %u heapctl entr%s in the target's /tmp "
				"(%u profile(s))", run, what, dirs, dirs == 1 ? "y" : "ies", prof);
	}
	/* mappings of the next run's would merge with these: start from a clean victim */
	if (lo.odd)
		return 1;
	if (!victim_cmd(v, "state", st, sizeof(st), 5000)) {
		long gap = kv_long(st, "maxgap_us", 0);

		if (gap > t->maxgap_us)
			t->maxgap_us = gap;
		if (gap > GAP_LIMIT_US && !victim_machine_stalled(v, GAP_LIMIT_US, NULL))
			problem("run %lu (%s): ticker thread stalled for %ld us", run, what, gap);
		victim_ticker_reset(v);
	}
	return 0;
}

static const char *const tid_names[] = {
	"main", "read", "sleep", "epoll", "futex", "regs", "hammer", "ticker", "sig",
};

static pid_t tid_of(const struct victim *v, unsigned int i)
{
	const pid_t t[9] = { v->t_main, v->t_read, v->t_sleep, v->t_epoll, v->t_futex,
			     v->t_regs, v->t_hammer, v->t_ticker, v->t_sig };

	return i < 9 ? t[i] : 0;
}

/* One run: heapctl op [--tid], killed at kill_line (line mode) or kill_us; then every check. */
static void one_run(struct kstate *k, struct tally *t, long run, size_t oi, int ti,
		    bool line_mode, long kill_line, long kill_us, long extra, const char *dump)
{
	const struct op *op = &ops[oi];
	const char *args[24];
	char what[160], stid[16];
	const char *tid = NULL;
	bool held = false, killed;
	struct hres r = { 0 };
	int rc;

	if (!k->up && kstart(k, t))
		return;
	storm_on(k);
	if (ti >= 0) {
		snprintf(stid, sizeof(stid), "%d", (int)tid_of(&k->v, (unsigned int)ti));
		tid = stid;
		snprintf(what, sizeof(what), "%s --tid %s(%s)", op->name, stid, tid_names[ti]);
	} else {
		snprintf(what, sizeof(what), "%s", op->name);
	}
	if (line_mode)
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 ", killed at stderr line %ld +%ld us", kill_line, extra);
	else
		snprintf(what + strlen(what), sizeof(what) - strlen(what), ", killed after %ld us",
			 kill_us);
	build_args(args, op, &k->v, tid, line_mode, dump);
	killed = run_and_kill(args, line_mode, kill_line, kill_us, extra, &r, &held);
	/* Tally the signals of this run alone, so a loss names its run. */
	storm_off_and_tally(k, t, run, what);
	t->runs++;
	t->per_op[oi]++;
	t->line_mode += line_mode;
	if (killed) {
		t->killed++;
		t->held += held;
	} else if (r.timed_out) {
		t->hangs++;
		problem("run %ld (%s): heapctl hung", run, what);
	} else if (hres_crash(&r)) {
		problem("run %ld (%s): %s", run, what, hres_crash(&r));
	} else if (hres_exit(&r) == 0) {
		t->completed++;
	} else if (hres_exit(&r) == 1 && strstr(r.err, "hint:")) {
		t->refused++;	/* e.g. --tid on the hammer thread, always in malloc */
	} else {
		problem("run %ld (%s): %s", run, what, hres_desc(&r));
	}
	hres_free(&r);
	rc = after_kill(k, t, (unsigned long)run, what);
	if (rc) {
		/* Go on with a fresh victim: the figures are the point. */
		if (rc < 0)
			t->restarts_bad++;
		kstop(k);
	}
}

static void report(const struct tally *t, long t0)
{
	char per[512];
	size_t len = 0;

	t_note("%lu runs in %ld s: %lu killed (%lu while a thread was held), "
	       "%lu finished first, %lu refused with a hint; %lu line-triggered, %lu timed",
	       t->runs, (now_ms() - t0) / 1000, t->killed, t->held, t->completed, t->refused,
	       t->line_mode, t->runs - t->line_mode);
	for (size_t i = 0; i < NOPS; i++)
		if (t->per_op[i])
			len += (size_t)snprintf(per + len, sizeof(per) - len, "%s%s %lu",
						len ? ", " : "", ops[i].name, t->per_op[i]);
	t_note("operations: %s", per);
	t_note("after every kill: crashes %lu, hangs %lu, left traced %lu, left stopped %lu, "
	       "EINTR/register/thread harm %lu, fd changes %lu, new executable mappings %lu",
	       t->crashes, t->hangs, t->traced, t->stopped, t->harmed, t->fd_changes, t->odd_maps);
	t_note("signals: %lu SIGRTMIN+1 queued, lost or duplicated in %lu runs; %lu victims "
	       "replaced after harm; ticker max gap %ld us",
	       t->sig_total, t->sig_bad, t->restarts_bad, t->maxgap_us);
	t_note("leftovers: %lu /tmp/.heapctl-PID-* entries holding %lu profiles", t->dirs_left,
	       t->dumps_left);
	t_note("harm by leftovers: %lu (mappings, /tmp entries, changed fds)",
	       t->odd_maps + t->dirs_left + t->fd_changes);
}

static void test_kill_suite(void)
{
	struct kstate k = { 0 };
	struct tally t = { 0 };
	struct calib cal[NOPS];
	long runs = env_long("KILL_RUNS", 300);
	char dump[320];
	long t0 = now_ms();

	nproblems = 0;
	snprintf(dump, sizeof(dump), "%s/kill.heap", cfg.tmpdir);
	if (kstart(&k, &t))
		goto out;
	calibrate(&k.v, cal, dump);
	if (t_failed())
		goto out;
	t_note("seed %llu (ITEST_SEED), %ld runs (ITEST_KILL_RUNS)", rnd_seed(), runs);
	for (long run = 0; run < runs; run++) {
		size_t oi;
		bool line_mode = rnd_below(2) == 0;
		int ti = rnd_below(3) == 0 ? (int)rnd_below(9) : -1;
		long kill_line = 0, kill_us = 0, extra = 0;

		pick_op(&oi);
		if (line_mode) {
			kill_line = 1 + (long)rnd_below((unsigned long)cal[oi].lines + 2);
			extra = (long)rnd_below(200);
		} else {
			kill_us = (long)rnd_below((unsigned long)(cal[oi].us * 6 / 5) + 1);
		}
		one_run(&k, &t, run, oi, ti, line_mode, kill_line, kill_us, extra, dump);
	}
	report(&t, t0);
out:
	kstop(&k);
}

/*
 * Deterministic sweep: "prof status --tid T" for each kind of parked
 * thread, killed right after each line heapctl -vvv prints, first to last.
 * Every ptrace stop of the sequence is a kill point at least once.
 */
static void test_kill_each_step(void)
{
	static const int kinds[] = { 0, 1, 2, 3, 4, 5, 8 }; /* not hammer, ticker */
	struct kstate k = { 0 };
	struct tally t = { 0 };
	char dump[320];
	long t0 = now_ms(), run = 0;
	size_t oi = 2; /* prof status */

	nproblems = 0;
	snprintf(dump, sizeof(dump), "%s/kill-step.heap", cfg.tmpdir);
	if (kstart(&k, &t))
		goto out;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		long lines = 0;
		const char *a[24];
		char stid[16];
		struct hres r = { 0 };

		/* How many lines this thread's borrow prints. */
		snprintf(stid, sizeof(stid), "%d", (int)tid_of(&k.v, (unsigned int)kinds[i]));
		build_args(a, &ops[oi], &k.v, stid, true, dump);
		hc_runv(&r, NULL, a);
		count_lines(r.err, &lines);
		hres_free(&r);
		for (long l = 1; l <= lines; l++)
			one_run(&k, &t, run++, oi, kinds[i], true, l, 0, 0, dump);
	}
	report(&t, t0);
out:
	kstop(&k);
}

/* Live heapctl processes re-parented to us (a guardian outliving its job would be one). */
static unsigned int heapctl_orphans(void)
{
	return heapctl_children(getpid(), NULL);
}

/*
 * heapctl SIGKILLed while its private directory stands in the target's
 * /tmp (just made, empty; then holding the profile after prof.dump): its
 * guardian removes it, and nothing waits for a later heapctl run to do so.
 * heapctl is stopped at the logged moment and the directory seen before
 * the kill, so a round proves something only if the kill hit the window.
 */
static void test_kill_dump_dir(void)
{
	static const char *const at[] = { "made the private directory", "prof.dump to" };
	struct victim vv, *v = &vv;
	char why[512], out[320];
	unsigned int hits = 0;

	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(out, sizeof(out), "%s/kill-dump.heap", cfg.tmpdir);
	for (size_t i = 0; i < 2 * sizeof(at) / sizeof(at[0]) && !t_failed(); i++) {
		const char *const args[] = { "-vv", "dump", "-p", v->spid, "-o", out, NULL };
		char err[8192] = "";
		unsigned int dirs, prof = 0;
		bool there;
		pid_t worker;
		struct hproc hp;
		struct hres r = { 0 };

		if (hc_startv(&hp, NULL, args)) {
			t_fail("cannot start heapctl");
			break;
		}
		if (!hp_err_until(&hp, at[i % 2], err, sizeof(err), HC_TIMEOUT_S * 1000L)) {
			kill_wait(hp.pid);
			t_fail("heapctl dump never logged '%s'", at[i % 2]);
			break;
		}
		/*
		 * The tracer itself, which holds the directory: killing the
		 * front only would have it clean up (src/cli/keeper.c).
		 */
		worker = hp_worker(&hp);
		kill(worker, SIGSTOP);
		there = dump_dirs_now(v->pid, false, NULL) > 0;
		kill(worker, SIGKILL);
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		hres_free(&r);
		hits += there;
		dirs = dump_leftovers(v->pid, true, &prof);
		if (dirs) {
			t_fail("heapctl killed at '%s' left %u directory(ies) with %u profile(s) in "
			       "the target's /tmp", at[i % 2], dirs, prof);
			break;
		}
		if (hc_expect(&r, 0, "prof", "status", "-p", v->spid, NULL))
			break;
		hres_free(&r);
		if (victim_check(v, 0))
			break;
	}
	/* the guardians are done once the directories are gone: none may linger */
	for (long end = now_ms() + 2000; heapctl_orphans() && now_ms() < end;)
		sleep_ms(10);
	if (!t_failed() && heapctl_orphans())
		t_fail("%u heapctl process(es) outlived the killed heapctls", heapctl_orphans());
	if (!t_failed() && !hits)
		t_skip(false, "no kill landed while the directory stood: nothing was checked");
	else if (!t_failed())
		t_note("%u of 4 kills landed while heapctl's directory stood", hits);
	victim_kill(v);
}

/* Do pids a and b share one address space?  1 yes, 0 no, -1 unknown (no kcmp()). */
static int same_vm(pid_t a, pid_t b)
{
	long r = syscall(SYS_kcmp, a, b, 1 /* KCMP_VM */, 0, 0);

	return r < 0 ? -1 : r == 0;
}

/*
 * One round: heapctl -v watch on v, run by launcher (NULL: none), is sent
 * sig once it took a sample.  Its worker must be a process apart, sharing
 * the front's memory or not as shared says, and end before the front's
 * own death (SIGKILL: after it, on its own), which is by sig with no core.
 */
static void front_round(struct victim *v, const char *launcher, int sig, bool shared)
{
	const char *const argv[] = { launcher, cfg.heapctl, "-v", "watch", "-p", v->spid,
				     "--every", "30s", NULL };
	char err[4096] = "";
	struct hproc hp;
	struct hres r = { 0 };
	pid_t worker;
	int same;

	if (prog_start(&hp, launcher ? argv : argv + 1)) {
		t_fail("cannot start heapctl");
		return;
	}
	if (!hp_err_until(&hp, "borrowed tid", err, sizeof(err), HC_TIMEOUT_S * 1000L)) {
		kill_wait(hp.pid);
		t_fail("heapctl watch took no sample: %.300s", err);
		return;
	}
	worker = hp_worker(&hp);
	same = same_vm(hp.pid, worker);
	if (worker == hp.pid || (same >= 0 && same != shared)) {
		kill_wait(hp.pid);
		t_fail("under %s: worker %d of heapctl %d %s", launcher ? launcher : "no launcher",
		       (int)worker, (int)hp.pid,
		       worker == hp.pid ? "missing"
		       : shared		? "does not share its memory"
					: "shares its memory, though such a clone is refused");
		return;
	}
	kill(hp.pid, sig);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (r.timed_out || !WIFSIGNALED(r.status) || WTERMSIG(r.status) != sig ||
	    WCOREDUMP(r.status))
		t_fail("%s to the front: %s (wanted death by that signal, no core)", strsignal(sig),
		       hres_desc(&r));
	else if (sig != SIGKILL && !pid_exited(worker))
		t_fail("%s to the front: it died before its worker %d", strsignal(sig),
		       (int)worker);
	hres_free(&r);
	/* a worker outliving a SIGKILLed front was re-parented to us: it ends and is reaped */
	if (!wait_exited(worker, HC_TIMEOUT_S * 1000L) && !t_failed())
		t_fail("%s to the front: its worker %d did not end", strsignal(sig), (int)worker);
	waitpid(worker, NULL, WNOHANG);
	if (!t_failed()) {
		if (same < 0)
			t_note("no kcmp() here: whether the worker shares memory was not checked");
		victim_check(v, 0);
	}
}

/* front_round() for each of sigs, on a victim of their own. */
static void front_rounds(const char *launcher, const int *sigs, size_t n, bool shared)
{
	struct victim vv, *v = &vv;
	char why[512];

	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	for (size_t i = 0; i < n && !t_failed(); i++)
		front_round(v, launcher, sigs[i], shared);
	victim_kill(v);
}

/*
 * A signal that dumps core, sent to the process the user started (the
 * front): the front asks its worker to stop, waits for it, and only then
 * dies by that signal, with no core file.  Before Linux 5.16 a core dump
 * killed every process sharing the dumper's memory, the worker (the
 * tracer) included, so the front must never dump while the worker runs
 * (src/cli/keeper.c).
 */
static void test_kill_front_core_signal(void)
{
	static const int sigs[] = { SIGABRT, SIGSEGV };

	front_rounds(NULL, sigs, sizeof(sigs) / sizeof(sigs[0]), true);
}

/*
 * A seccomp filter that refuses a clone sharing memory (tests/victims/
 * no_clone_vm): the worker is a fork, and killing the front, SIGKILL or
 * a core-dumping signal, is as harmless as with the shared worker.
 */
static void test_kill_front_forked_worker(void)
{
	static const int sigs[] = { SIGKILL, SIGABRT };
	char launcher[400];

	snprintf(launcher, sizeof(launcher), "%s/no_clone_vm", cfg.victim_dir);
	front_rounds(launcher, sigs, sizeof(sigs) / sizeof(sigs[0]), false);
}

/*
 * heapctl started with SIGCHLD ignored (a parent that ignores it passes
 * that on through exec): the kernel would reap the worker unseen and send
 * no SIGCHLD, and the front, waiting for one, would never exit.
 */
static void test_front_sigchld_ignored(void)
{
	struct spawn_opts so = { .in_fd = -1, .out_fd = -1, .err_fd = -1,
				 .ignore_sig = SIGCHLD };
	struct victim vv, *v = &vv;
	char why[512];
	int st = 0;
	long t0;
	pid_t pid;

	if (victim_start(v, "jemalloc_victim", "prof:true", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	const char *const argv[] = { cfg.heapctl, "prof", "status", "-p", v->spid, NULL };

	t0 = now_ms();
	pid = spawn(argv, &so, why, sizeof(why));
	if (pid < 0)
		t_fail("%s", why);
	else if (wait_pid(pid, &st, 20000) < 0) {
		kill_wait(pid);
		t_fail("prof status with SIGCHLD ignored hung; killed after 20 s");
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		t_fail("prof status with SIGCHLD ignored: wait status 0x%x", st);
	} else if (now_ms() - t0 > 5000) {
		t_fail("prof status with SIGCHLD ignored took %ld ms", now_ms() - t0);
	} else {
		victim_check(v, 0);
	}
	victim_kill(v);
}

const struct itest t_kill_tests[] = {
	{ "kill-each-step", test_kill_each_step, 600 },
	{ "kill-suite", test_kill_suite, 900 },
	{ "kill-dump-dir", test_kill_dump_dir, 0 },
	{ "kill-front-core-signal", test_kill_front_core_signal, 0 },
	{ "kill-front-forked-worker", test_kill_front_forked_worker, 0 },
	{ "front-sigchld-ignored", test_front_sigchld_ignored, 0 },
	{ NULL, NULL, 0 },
};
