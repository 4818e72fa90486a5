// SPDX-License-Identifier: MIT
/*
 * cmd_serve.c: heapctl serve — the heap figures and profiles of every process
 * heapctl can drive, for Prometheus (/metrics) and pprof clients (Parca,
 * Grafana Pyroscope, go tool pprof: /debug/pprof/heap), over HTTP.
 *
 * One thread borrows: this one, the worker, which is the tracer.  The HTTP
 * threads (serve_http.c) only ask for pages: they say what they need (a
 * snapshot of a target no older than --min-interval, with a heap profile
 * or not), wake the worker and wait.  The worker borrows a target when
 * something is needed of it and --min-interval has passed since its last
 * borrow, and then takes everything in one session: the figures, the
 * profiler's state and, if asked, a profile.  So however many scrapes come,
 * and however many at once, each target lends a thread at most once per
 * --min-interval; a target that fails is left alone for longer each time
 * (back-off, up to BACKOFF_MAX_S).
 *
 * --profile keeps profiling on in the processes it names (heapctl's sampler,
 * or the allocator's own profiler), in a restarted process of that name too,
 * and turns it off again in every process it turned it on in when serve
 * ends (SIGTERM, SIGINT, SIGHUP, SIGQUIT).  Those signals stay blocked in
 * every thread and are read from a signalfd, so a borrow in flight when one
 * comes is finished and the target restored first (heapctl.h,
 * "Cancellation").
 *
 * The processes are found by walking /proc at most once per --min-interval;
 * one that cannot be driven is remembered (with why) and not opened again
 * until its pid is reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"
#include "serve.h"

#define DEFAULT_LISTEN "127.0.0.1:6061"
#define DEFAULT_INTERVAL_MS 10000u
#define MAX_TARGETS 512
#define MAX_REJECTS 4096
#define BACKOFF_MAX_S 300.0
/* how long a page waits for the worker beyond what it asked for */
#define PAGE_WAIT_S 60.0
/*
 * /metrics waits less: under Prometheus' default scrape_timeout (10 s).
 * A target whose borrow is slower shows its last figures, or none yet.
 */
#define METRICS_WAIT_S 5.0

struct tgt {
	bool used;
	pid_t pid;
	unsigned long long start; /* /proc/PID/stat starttime: tells a reused pid */
	char comm[16], allocator[32], container[80];
	bool profile;    /* --profile names it */
	bool prof_ours;  /* serve turned its profiling on: off again at the end */
	/* heapctl's sampler was in with samples before serve: they stay at the end */
	bool kept_before;
	bool prof_given_up; /* turning it on failed: not tried again */
	/* what the last borrow found */
	bool have;
	double snap_at;
	struct hc_stats st;
	struct hc_doctor *doc; /* the findings, from smaps read right after it; or NULL */
	struct hc_sampler smp;
	bool prof_known, prof_active;
	char prof_file[PATH_MAX];
	double prof_at;
	int prof_fd;     /* the last profile, open (the file itself is unlinked) */
	/* health */
	bool up;
	uint64_t borrows, fails[HC_E__COUNT];
	double pause_s, last_borrow, backoff_until, last_borrow_unix;
	unsigned streak;
	struct hc_err err;
	double err_at;
	/* what the pages need */
	bool want, want_prof;
	double want_after;
};

struct reject {
	pid_t pid;
	unsigned long long start;
	struct hc_err err;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t report_lock; /* symbolizing: one at a time, it is CPU-heavy */
	int evfd;
	bool stopping;
	struct cli_env *env;
	double interval;
	char dir[PATH_MAX]; /* private: the profiles the targets write */
	unsigned long seq;
	struct tgt *t;      /* [MAX_TARGETS] */
	struct reject *rej; /* [MAX_REJECTS], a ring */
	size_t nrej;
	double last_scan;
	uint64_t refused, scrapes;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.report_lock = PTHREAD_MUTEX_INITIALIZER, .evfd = -1 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wake_worker(void)
{
	uint64_t one = 1;

	if (write(S.evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		cli_log(HC_LOG_DEBUG, "waking the worker: %s", strerror(errno));
}

/* ---- /proc -------------------------------------------------------------- */

/* starttime (field 22) of /proc/PID/stat, 0 if the process is gone. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cli_read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strrchr(buf, ')'); /* comm may hold anything, ')' included */
	if (!p)
		return 0;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

/* The container a cgroup v2 path names: its 64-hex id, cut to 12 as docker ps does. */
static void container_of(pid_t pid, char *out, size_t len)
{
	char path[64], buf[4096], *line;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (cli_read_small(path, buf, sizeof(buf)) < 0)
		return;
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		size_t run = 0;
		char *p;

		if (strncmp(line, "0::", 3))
			continue;
		for (p = line + 3; *p && *p != '\n'; p++) {
			bool hex = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');

			run = hex ? run + 1 : 0;
			if (run == 64) {
				snprintf(out, len, "%.12s", p - 63);
				return;
			}
		}
	}
}

static bool cgroup_has(pid_t pid, const char *sub)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	return cli_read_small(path, buf, sizeof(buf)) >= 0 && strstr(buf, sub);
}

/* --select: none given selects all; else any one that matches. */
static bool selected(pid_t pid, const struct hc_proc *p)
{
	const struct cli_env *env = S.env;
	unsigned long uid;

	if (!env->nselect)
		return true;
	for (int i = 0; i < env->nselect; i++) {
		const char *s = env->select[i];

		if (!strncmp(s, "uid=", 4)) {
			if (!cli_parse_uint(s + 4, UINT_MAX, &uid) && p->euid == (long)uid)
				return true;
		} else if (!strncmp(s, "cgroup=", 7)) {
			if (cgroup_has(pid, s + 7))
				return true;
		} else if (!strcmp(s, p->name)) {
			return true;
		}
	}
	return false;
}

static bool profiled(pid_t pid, const char *comm)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", (int)pid);
	for (int i = 0; i < S.env->nprofile; i++)
		if (!strcmp(S.env->profile[i], comm) || !strcmp(S.env->profile[i], num))
			return true;
	return false;
}

static const struct reject *rejected(pid_t pid, unsigned long long start)
{
	size_t n = S.nrej < MAX_REJECTS ? S.nrej : MAX_REJECTS;

	for (size_t i = 0; i < n; i++)
		if (S.rej[i].pid == pid && S.rej[i].start == start)
			return &S.rej[i];
	return NULL;
}

static void reject(pid_t pid, unsigned long long start, const struct hc_err *err)
{
	struct reject *r = &S.rej[S.nrej++ % MAX_REJECTS];

	r->pid = pid;
	r->start = start;
	r->err = *err;
}

static struct tgt *find(pid_t pid)
{
	for (size_t i = 0; i < MAX_TARGETS; i++)
		if (S.t[i].used && S.t[i].pid == pid)
			return &S.t[i];
	return NULL;
}

static void drop(struct tgt *t)
{
	if (t->prof_fd >= 0)
		close(t->prof_fd);
	free(t->doc);
	memset(t, 0, sizeof(*t));
	t->prof_fd = -1;
}

/*
 * Walk /proc: new processes are opened (no borrow: /proc and ELF files) to
 * learn whether they can be driven; gone ones leave the table.  The worker
 * alone changes the table; S.lock is held only to change it.
 */
static void scan(void)
{
	pid_t self = getpid(), *pids;
	size_t n = 0;
	bool *seen = calloc(MAX_TARGETS, sizeof(bool));

	pids = cli_scan_proc(&n);
	if (!pids || !seen) {
		cli_log(HC_LOG_WARN, "cannot read /proc: %s", strerror(errno));
		free(pids);
		free(seen);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct hc_target_opts o = S.env->topts;
		unsigned long long st = start_time(pids[i]);
		struct hc_err err = { 0 };
		struct hc_proc p;
		struct hc_target *h;
		struct hc_where w;
		struct tgt *t;

		if (pids[i] == self || pids[i] == getppid() || !st)
			continue;
		t = find(pids[i]);
		if (t && t->start == st) {
			seen[t - S.t] = true;
			continue;
		}
		if (rejected(pids[i], st) || hc_proc_read(pids[i], &p, &err) || p.kthread)
			continue;
		if (!selected(pids[i], &p)) {
			err.code = HC_E_PERM;
			snprintf(err.msg, sizeof(err.msg), "pid %d (%s) is not among the processes "
				 "this heapctl serve drives", (int)pids[i], p.name);
			snprintf(err.hint, sizeof(err.hint), "its --select options leave it out");
			reject(pids[i], st, &err);
			continue;
		}
		o.no_debuginfod = true;
		h = hc_target_open(pids[i], &o, &err);
		if (!h) {
			cli_log(HC_LOG_DEBUG, "pid %d (%s): %s", (int)pids[i], p.name, err.msg);
			reject(pids[i], st, &err);
			continue;
		}
		hc_target_where(h, &w);
		pthread_mutex_lock(&S.lock);
		if (t) /* the pid was reused: a new process */
			drop(t);
		for (size_t k = 0; !t && k < MAX_TARGETS; k++)
			if (!S.t[k].used)
				t = &S.t[k];
		if (t) {
			drop(t);
			t->used = true;
			t->pid = pids[i];
			t->start = st;
			snprintf(t->comm, sizeof(t->comm), "%.15s", p.name);
			snprintf(t->allocator, sizeof(t->allocator), "%s",
				 w.allocator ? w.allocator : "?");
			container_of(pids[i], t->container, sizeof(t->container));
			t->profile = profiled(pids[i], p.name);
			seen[t - S.t] = true;
			cli_log(HC_LOG_INFO, "pid %d (%s): %s%s", (int)t->pid, t->comm, t->allocator,
				t->profile ? ", profiled (--profile)" : "");
		} else {
			cli_log(HC_LOG_WARN, "pid %d (%s): more than %d processes; left out",
				(int)pids[i], p.name, MAX_TARGETS);
		}
		pthread_mutex_unlock(&S.lock);
		hc_target_close(h);
	}
	pthread_mutex_lock(&S.lock);
	for (size_t k = 0; k < MAX_TARGETS; k++)
		if (S.t[k].used && !seen[k]) {
			cli_log(HC_LOG_INFO, "pid %d (%s): gone", (int)S.t[k].pid, S.t[k].comm);
			drop(&S.t[k]);
		}
	S.last_scan = now_s();
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
	free(pids);
	free(seen);
}

/* ---- the borrow ----------------------------------------------------------- */

static void failed(struct tgt *t, const struct hc_err *err, double now, bool back_off)
{
	t->fails[err->code < HC_E__COUNT ? err->code : HC_E_INTERNAL]++;
	t->err = *err;
	t->err_at = now;
	if (!back_off)
		return;
	t->up = false;
	t->streak++;
	{
		double wait = S.interval;

		for (unsigned i = 0; i < t->streak && wait < BACKOFF_MAX_S; i++)
			wait *= 2;
		t->backoff_until = now + (wait < BACKOFF_MAX_S ? wait : BACKOFF_MAX_S);
	}
	cli_log(HC_LOG_WARN, "pid %d (%s): %s; next try in %.0f s", (int)t->pid, t->comm,
		err->msg[0] ? err->msg : hc_err_name(err->code), t->backoff_until - now);
}

/* Called and returns with S.lock held; released for the borrow itself. */
static void borrow(struct tgt *t)
{
	pid_t pid = t->pid;
	unsigned long long start = t->start;
	bool want_prof = t->want_prof, turn_on = t->profile && !t->prof_ours && !t->prof_given_up;
	struct hc_err err = { 0 }, perr = { 0 }, onerr = { 0 }, serr = { 0 }, eerr = { 0 };
	struct hc_target_opts o = S.env->topts;
	struct hc_stats *st = malloc(sizeof(*st));
	struct hc_sampler *smp = malloc(sizeof(*smp));
	char path[PATH_MAX] = "", comm[64] = "", alloc[32] = "";
	bool enabled = false, active = false, prof_known = false, on_ok = false, dumped = false;
	bool kept_before = false;
	struct hc_timing tm = { 0 };
	struct hc_target *h = NULL;
	struct hc_where w = { 0 };
	struct hc_doctor *doc = NULL;
	double at = now_s();
	int fd = -1;

	t->want = t->want_prof = false;
	pthread_mutex_unlock(&S.lock);

	if (!st || !smp) {
		err.code = HC_E_NOMEM;
		snprintf(err.msg, sizeof(err.msg), "out of memory");
		goto out;
	}
	memset(st, 0, sizeof(*st));
	memset(smp, 0, sizeof(*smp));
	if (start_time(pid) != start) {
		err.code = HC_E_NO_PROC;
		snprintf(err.msg, sizeof(err.msg), "pid %d has exited", (int)pid);
		snprintf(err.hint, sizeof(err.hint), "%s", hc_err_default_hint(HC_E_NO_PROC));
		goto out;
	}
	o.no_debuginfod = true;
	h = hc_target_open(pid, &o, &err);
	if (!h)
		goto out;
	if (cli_read_comm(pid, comm, sizeof(comm)))
		comm[0] = '\0';
	hc_target_where(h, &w);
	/* w's strings are h's: kept past hc_target_close() */
	snprintf(alloc, sizeof(alloc), "%s", w.allocator ? w.allocator : "");
	hc_session_begin(h);
	if (turn_on) {
		struct hc_sampler before;

		kept_before = !hc_sampler_get(h, &before, &(struct hc_err){ 0 }) &&
			      (before.enabled || before.kept);
		on_ok = !hc_prof_set(h, true, NULL, &onerr);
	}
	if (hc_stats_get(h, st, &err))
		goto end;
	if (!hc_sampler_get(h, smp, &serr) && (cli_prof_kind(w.allocator) == CLI_PROF_JEMALLOC ||
					       cli_prof_kind(w.allocator) == CLI_PROF_GPERF))
		prof_known = !hc_prof_get(h, &enabled, &active, &serr);
	if (want_prof) {
		snprintf(path, sizeof(path), "%.4000s/%d.%lu.heap", S.dir, (int)pid, ++S.seq);
		dumped = !hc_prof_dump(h, path, NULL, &perr);
	}
end:
	if (hc_session_end(h, &eerr) && !err.code)
		err = eerr;
	hc_target_timing(h, &tm);
	hc_target_close(h);
	if (tm.tid)
		cli_log(HC_LOG_INFO, "pid %d: borrowed tid %d for %llu us", (int)pid, (int)tm.tid,
			(unsigned long long)tm.paused_us);
	/*
	 * The findings, with the thread given back: once per borrow, not per
	 * page (smaps walks the target's whole address space under its mmap lock)
	 */
	if (!err.code)
		doc = cli_stats_findings(pid, st);
	if (dumped) {
		/* kept open, the file unlinked: a page may read it while the next is made */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		unlink(path);
	} else if (path[0]) {
		unlink(path);
	}
out:
	pthread_mutex_lock(&S.lock);
	/* the table may have changed meanwhile only by the worker itself: t is still t */
	if (tm.tid) {
		t->borrows++;
		t->pause_s = (double)tm.paused_us / 1e6;
	}
	t->last_borrow = at;
	t->last_borrow_unix = (double)time(NULL);
	if (alloc[0])
		snprintf(t->allocator, sizeof(t->allocator), "%s", alloc);
	/* an exec keeps the pid and the start time, not the name */
	if (comm[0])
		snprintf(t->comm, sizeof(t->comm), "%.15s", comm);
	if (turn_on && on_ok) {
		t->prof_ours = true;
		t->kept_before = kept_before;
		cli_log(HC_LOG_INFO, "pid %d (%s): profiling on", (int)pid, t->comm);
	} else if (turn_on && !err.code && onerr.code) {
		t->prof_given_up = true;
		cli_log(HC_LOG_WARN, "pid %d (%s): cannot profile: %s (hint: %s)", (int)pid, t->comm,
			onerr.msg, onerr.hint);
		failed(t, &onerr, at, false);
	}
	if (err.code == HC_E_NO_PROC || err.code == HC_E_GONE) {
		/* gone: no failure of anyone's, no back-off; the pages waiting see it leave */
		cli_log(HC_LOG_INFO, "pid %d (%s): gone", (int)pid, t->comm);
		t->err = err;
		t->err_at = at;
	} else if (err.code) {
		failed(t, &err, at, true);
	} else {
		t->up = true;
		t->streak = 0;
		t->have = true;
		t->snap_at = at;
		t->st = *st;
		free(t->doc);
		t->doc = doc;
		doc = NULL;
		t->smp = *smp;
		t->prof_known = prof_known;
		t->prof_active = prof_known ? active : smp->enabled;
		if (want_prof && dumped && fd >= 0) {
			if (t->prof_fd >= 0)
				close(t->prof_fd);
			t->prof_fd = fd;
			fd = -1;
			t->prof_at = at;
		} else if (want_prof) {
			if (!perr.code) {
				perr.code = HC_E_IO;
				snprintf(perr.msg, sizeof(perr.msg), "the profile of pid %d could not "
					 "be read back", (int)pid);
			}
			failed(t, &perr, at, false);
		}
	}
	if (fd >= 0)
		close(fd);
	if (err.code == HC_E_NO_PROC || err.code == HC_E_GONE)
		drop(t);
	pthread_cond_broadcast(&S.cond);
	free(st);
	free(smp);
	free(doc);
}

/* The next target due, or NULL and *wait (seconds) until one may be. */
static struct tgt *due(double now, double *wait)
{
	for (size_t i = 0; i < MAX_TARGETS; i++) {
		struct tgt *t = &S.t[i];
		double at;

		if (!t->used || S.stopping)
			continue;
		if (!t->want && !(t->profile && !t->prof_ours && !t->prof_given_up))
			continue;
		at = t->last_borrow ? t->last_borrow + S.interval : 0;
		if (t->backoff_until > at)
			at = t->backoff_until;
		if (t->want && t->want_after > at)
			at = t->want_after;
		if (at <= now)
			return t;
		if (at - now < *wait)
			*wait = at - now;
	}
	return NULL;
}

/* Profiling off wherever serve turned it on; the targets' threads each lent once more. */
static void profiling_off(void)
{
	for (size_t i = 0; i < MAX_TARGETS; i++) {
		struct tgt *t = &S.t[i];
		struct hc_target_opts o = S.env->topts;
		struct hc_err err = { 0 };
		struct hc_sampler smp = { 0 };
		struct hc_target *h;

		if (!t->used || !t->prof_ours)
			continue;
		if (start_time(t->pid) != t->start)
			continue;
		o.no_debuginfod = true;
		h = hc_target_open(t->pid, &o, &err);
		/*
		 * As serve found it: heapctl's sampler, which it loaded or hooked,
		 * comes out too (prof reset), unless it held samples before.
		 */
		if (h && !hc_prof_set(h, false, NULL, &err) &&
		    (t->kept_before || !hc_sampler_get(h, &smp, &err)) &&
		    (t->kept_before || !smp.installed || !hc_prof_reset(h, &err)))
			cli_log(HC_LOG_INFO, "pid %d (%s): profiling off%s", (int)t->pid, t->comm,
				!t->kept_before && smp.installed ? ", heapctl's hooks out" : "");
		else
			cli_log(HC_LOG_WARN, "pid %d (%s): profiling left on: %s", (int)t->pid, t->comm,
				err.msg);
		hc_target_close(h);
	}
}

/* ---- pages (HTTP threads) -------------------------------------------- */

static void page_text(struct serve_page *pg, unsigned status, const char *type, char *body,
		      size_t len)
{
	pg->status = status;
	pg->type = type;
	pg->body = body;
	pg->len = len;
}

static unsigned status_of(enum hc_errc code)
{
	switch (code) {
	case HC_E_USAGE:
		return 400;
	case HC_E_PERM:
		return 403;
	case HC_E_NO_PROC:
	case HC_E_GONE:
		return 404;
	case HC_E_NO_ALLOC:
	case HC_E_PROF_OFF:
	case HC_E_UNSUPPORTED:
	case HC_E_NO_SYM:
		return 409;
	case HC_E_TIMEOUT:
	case HC_E_UNSAFE:
	case HC_E_CANCELLED:
		return 503;
	default:
		return 500;
	}
}

void serve_error_page(struct serve_page *pg, unsigned status, const struct hc_err *err)
{
	char *b = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);

	if (!f) {
		page_text(pg, 503, NULL, NULL, 0);
		return;
	}
	fprintf(f, "heapctl: error: %s\n",
		err->msg[0] ? err->msg : hc_err_name(err->code));
	fprintf(f, "hint: %s\n", err->hint[0] ? err->hint : hc_err_default_hint(err->code));
	if (fclose(f)) {
		free(b);
		b = NULL;
	}
	page_text(pg, status ? status : status_of(err->code), "text/plain; charset=utf-8", b, n);
}

void serve_count_refused(void)
{
	pthread_mutex_lock(&S.lock);
	S.refused++;
	pthread_mutex_unlock(&S.lock);
}

static void stopping_page(struct serve_page *pg)
{
	struct hc_err e = { .code = HC_E_CANCELLED };

	snprintf(e.msg, sizeof(e.msg), "heapctl serve is stopping");
	snprintf(e.hint, sizeof(e.hint), "ask again once it is back");
	serve_error_page(pg, 503, &e);
}

/* With S.lock held: wait on the worker until deadline; false if serve is stopping. */
static bool wait_worker(double deadline)
{
	struct timespec ts;
	double rem = deadline - now_s();

	if (S.stopping || rem <= 0)
		return !S.stopping;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)rem;
	ts.tv_nsec += (long)((rem - (double)(time_t)rem) * 1e9);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&S.cond, &S.lock, &ts);
	return !S.stopping;
}

static void labels(const struct tgt *t, struct cli_prom_labels *l)
{
	l->pid = t->pid;
	l->comm = t->comm;
	l->allocator = t->allocator;
	l->container = t->container[0] ? t->container : NULL;
}

static void metrics_of(struct cli_prom *p, const struct tgt *t)
{
	struct cli_prom_labels l;

	labels(t, &l);
	cli_prom_u64(p, "heapctl_up", "gauge",
		     "1 if heapctl's last borrow of the process succeeded", &l, NULL, NULL, t->up);
	if (t->have) {
		struct hc_stats st = t->st;

		/* the allocator's name is the label's: as it was found when first seen */
		cli_stats_prom_add(p, &l, &st, t->doc);
		cli_prom_u64(p, "heapctl_arenas", "gauge", "the allocator's arenas", &l, NULL, NULL,
			     t->st.narenas);
		cli_prom_u64(p, "heapctl_profiling_active", "gauge",
			     "1 if heap profiling samples now (the allocator's profiler or "
			     "heapctl's sampler)", &l, NULL, NULL, t->prof_active || t->smp.enabled);
		cli_prom_u64(p, "heapctl_sampler_enabled", "gauge",
			     "1 if heapctl's injected sampler samples now", &l, NULL, NULL,
			     t->smp.enabled);
		if (t->smp.installed) {
			cli_prom_u64(p, "heapctl_sampler_interval_bytes", "gauge",
				     "heapctl's sampler: mean bytes between samples", &l, NULL, NULL,
				     t->smp.interval);
			cli_prom_u64(p, "heapctl_sampler_samples", "gauge",
				     "heapctl's sampler: allocations sampled since its profile started",
				     &l, NULL, NULL, t->smp.samples);
			cli_prom_u64(p, "heapctl_sampler_live_samples", "gauge",
				     "heapctl's sampler: sampled allocations not freed yet", &l, NULL,
				     NULL, t->smp.live);
			cli_prom_u64(p, "heapctl_sampler_dropped_samples", "gauge",
				     "heapctl's sampler: samples lost to full tables", &l, NULL, NULL,
				     t->smp.dropped);
		}
	}
	cli_prom_f64(p, "heapctl_borrow_pause_seconds", "gauge",
		     "how long heapctl's last borrow stopped the thread it borrowed", &l, NULL, NULL,
		     t->pause_s);
	cli_prom_u64(p, "heapctl_borrows_total", "counter",
		     "threads heapctl serve borrowed from the process", &l, NULL, NULL, t->borrows);
	if (t->last_borrow_unix)
		cli_prom_f64(p, "heapctl_last_borrow_timestamp_seconds", "gauge",
			     "when heapctl serve last tried the process (Unix time)", &l, NULL, NULL,
			     t->last_borrow_unix);
	for (int c = 1; c < HC_E__COUNT; c++)
		if (t->fails[c])
			cli_prom_u64(p, "heapctl_failures_total", "counter",
				     "heapctl serve's failures with the process, by error code", &l,
				     "code", hc_err_name((enum hc_errc)c), t->fails[c]);
}

void serve_metrics(struct serve_page *pg)
{
	struct cli_prom_labels none = { 0 };
	struct cli_prom *p = cli_prom_new();
	double now = now_s(), deadline = now + METRICS_WAIT_S;
	char *b = NULL;
	size_t n = 0, ntg = 0;
	FILE *f;

	pthread_mutex_lock(&S.lock);
	S.scrapes++;
	/* what is older than an interval is asked for, and waited for, once */
	for (size_t i = 0; i < MAX_TARGETS; i++) {
		struct tgt *t = &S.t[i];

		if (t->used && (!t->have || t->snap_at < now - S.interval) &&
		    t->backoff_until <= now) {
			t->want = true;
			if (t->want_after > now - S.interval || !t->want_after)
				t->want_after = now - S.interval;
		}
	}
	wake_worker();
	for (;;) {
		bool waiting = false;

		for (size_t i = 0; i < MAX_TARGETS; i++) {
			const struct tgt *t = &S.t[i];

			/* want is cleared when the borrow starts: not a sign it is done */
			if (t->used && t->backoff_until <= now &&
			    !(t->have && t->snap_at >= now - S.interval) && t->err_at < now)
				waiting = true;
		}
		if (!waiting || !wait_worker(deadline) || now_s() >= deadline)
			break;
	}
	if (S.stopping || !p) {
		pthread_mutex_unlock(&S.lock);
		cli_prom_free(p);
		stopping_page(pg);
		return;
	}
	for (size_t i = 0; i < MAX_TARGETS; i++)
		if (S.t[i].used) {
			metrics_of(p, &S.t[i]);
			ntg++;
		}
	cli_prom_u64(p, "heapctl_serve_targets", "gauge", "processes heapctl serve drives", &none,
		     NULL, NULL, ntg);
	cli_prom_u64(p, "heapctl_serve_scrapes_total", "counter", "/metrics pages served", &none,
		     NULL, NULL, S.scrapes);
	cli_prom_u64(p, "heapctl_serve_refused_total", "counter",
		     "requests refused (bad query, token, method)", &none, NULL, NULL, S.refused);
	pthread_mutex_unlock(&S.lock);
	f = open_memstream(&b, &n);
	if (f && !cli_prom_write(p, f) && !fclose(f)) {
		page_text(pg, 200, "text/plain; version=0.0.4; charset=utf-8", b, n);
	} else {
		if (f)
			fclose(f);
		free(b);
		page_text(pg, 503, NULL, NULL, 0);
	}
	cli_prom_free(p);
}

static void html(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

void serve_index(struct serve_page *pg)
{
	char *b = NULL, size[32];
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);

	if (!f) {
		page_text(pg, 503, NULL, NULL, 0);
		return;
	}
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>heapctl serve</title>"
	      "</head><body>\n<h1>heapctl serve</h1>\n<p><a href=\"/metrics\">/metrics</a>: "
	      "Prometheus. Heap profiles (gzipped pprof) per process below.</p>\n<table border=\"1\" "
	      "cellpadding=\"4\">\n<tr><th>pid</th><th>name</th><th>allocator</th><th>container</th>"
	      "<th>RSS</th><th>up</th><th>profiling</th><th>profile</th></tr>\n", f);
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < MAX_TARGETS; i++) {
		const struct tgt *t = &S.t[i];

		if (!t->used)
			continue;
		fprintf(f, "<tr><td>%d</td><td>", (int)t->pid);
		html(f, t->comm);
		fputs("</td><td>", f);
		html(f, t->allocator);
		fputs("</td><td>", f);
		html(f, t->container);
		fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td>",
			t->have ? cli_size(t->st.rss, size, sizeof(size)) : "-",
			!t->last_borrow ? "-" : t->up ? "yes" : "no",
			!t->have ? "-" : t->prof_active || t->smp.enabled ? "on" : "off");
		fprintf(f, "<td><a href=\"/debug/pprof/heap?pid=%d\">heap</a> "
			"<a href=\"/debug/pprof/allocs?pid=%d\">allocs</a> "
			"<a href=\"/debug/pprof/heap?pid=%d&amp;seconds=30\">growth over 30 s</a>"
			"</td></tr>\n", (int)t->pid, (int)t->pid, (int)t->pid);
	}
	pthread_mutex_unlock(&S.lock);
	fputs("</table>\n</body></html>\n", f);
	if (fclose(f)) {
		free(b);
		b = NULL;
	}
	page_text(pg, b ? 200 : 503, "text/html; charset=utf-8", b, n);
}

/*
 * The target q names, with S.lock held: by pid, or the newest process of
 * that name.  NULL with err filled as the CLI would say it.
 */
static struct tgt *resolve(const struct serve_query *q, struct hc_err *err)
{
	struct tgt *best = NULL;

	if (q->pid) {
		struct tgt *t = find(q->pid);
		const struct reject *r;

		if (t)
			return t;
		if (hc_pid_check(q->pid, 0, err))
			return NULL;
		r = rejected(q->pid, start_time(q->pid));
		if (r) {
			*err = r->err;
			return NULL;
		}
		err->code = HC_E_NO_PROC;
		snprintf(err->msg, sizeof(err->msg), "pid %d is not among the processes heapctl "
			 "serve drives (yet)", (int)q->pid);
		snprintf(err->hint, sizeof(err->hint), "new processes are found within "
			 "--min-interval; 'heapctl list' shows what heapctl can drive");
		return NULL;
	}
	for (size_t i = 0; i < MAX_TARGETS; i++)
		if (S.t[i].used && !strcmp(S.t[i].comm, q->name) &&
		    (!best || S.t[i].start > best->start))
			best = &S.t[i];
	if (!best) {
		err->code = HC_E_NO_PROC;
		snprintf(err->msg, sizeof(err->msg), "no process named '%s' among those heapctl "
			 "serve drives", q->name);
		snprintf(err->hint, sizeof(err->hint), "check the name with 'heapctl list' (the "
			 "name as ps -o comm shows it, 15 bytes at most)");
	}
	return best;
}

/*
 * A profile of the process q names, taken at or after `after`: a dup of
 * its file descriptor, and when it was taken.  -1 with err filled.
 */
static int get_profile(const struct serve_query *q, double after, pid_t *pid, double *at,
		       struct hc_err *err)
{
	double asked = now_s(), deadline = asked + PAGE_WAIT_S + (after > asked ? after - asked : 0);
	unsigned long long start;
	struct tgt *t;
	int fd = -1;

	pthread_mutex_lock(&S.lock);
	t = resolve(q, err);
	if (!t)
		goto out;
	*pid = t->pid;
	start = t->start;
	for (;;) {
		if (t->prof_fd >= 0 && t->prof_at >= after) {
			fd = fcntl(t->prof_fd, F_DUPFD_CLOEXEC, 3);
			*at = t->prof_at;
			if (fd < 0) {
				err->code = HC_E_IO;
				snprintf(err->msg, sizeof(err->msg), "out of file descriptors");
			}
			break;
		}
		if (t->err_at >= asked) {
			*err = t->err;
			break;
		}
		if (t->backoff_until > now_s()) {
			*err = t->err;
			snprintf(err->hint, sizeof(err->hint), "heapctl serve tries pid %d again in "
				 "%.0f s", (int)t->pid, t->backoff_until - now_s());
			break;
		}
		if (!t->want_prof || !t->want || t->want_after < after) {
			t->want = t->want_prof = true;
			if (t->want_after < after)
				t->want_after = after;
			wake_worker();
		}
		if (!wait_worker(deadline) || now_s() >= deadline) {
			err->code = S.stopping ? HC_E_CANCELLED : HC_E_TIMEOUT;
			snprintf(err->msg, sizeof(err->msg), S.stopping ? "heapctl serve is stopping" :
				 "no profile of pid %d in time", (int)*pid);
			break;
		}
		/* the process went, or its pid now names another one */
		if (!t->used || t->pid != *pid || t->start != start) {
			err->code = HC_E_GONE;
			snprintf(err->msg, sizeof(err->msg), "pid %d exited", (int)*pid);
			snprintf(err->hint, sizeof(err->hint), "%s", hc_err_default_hint(HC_E_GONE));
			break;
		}
	}
out:
	pthread_mutex_unlock(&S.lock);
	return fd;
}

static struct hc_prof *load_fd(int fd, const char *name, struct hc_err *err)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct hc_prof *p;
	ssize_t r;

	for (;;) {
		if (len + 65536 > cap) {
			char *m = realloc(buf, cap = cap ? cap * 2 : 1 << 20);

			if (!m) {
				free(buf);
				err->code = HC_E_NOMEM;
				snprintf(err->msg, sizeof(err->msg), "out of memory reading a profile");
				return NULL;
			}
			buf = m;
		}
		r = pread(fd, buf + len, cap - len, (off_t)len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	p = hc_prof_parse(buf, len, name, err);
	free(buf);
	return p;
}

/*
 * The last pages of plain heap profiles (no seconds=), by process and the
 * time of the profile: a profile is symbolized and written once however
 * many scrapes ask for it within --min-interval.  Under report_lock.
 */
#define HEAP_CACHE 8
static struct heap_page {
	pid_t pid;
	double at;
	bool allocs; /* /debug/pprof/allocs: its default sample type differs */
	char *body;
	size_t len;
	unsigned long used;
} heap_pages[HEAP_CACHE];
static unsigned long heap_pages_tick;

/* A copy of the page of (pid, at, allocs), or NULL. */
static char *heap_page_get(pid_t pid, double at, bool allocs, size_t *len)
{
	for (int i = 0; i < HEAP_CACHE; i++) {
		struct heap_page *c = &heap_pages[i];
		char *b;

		if (!c->body || c->pid != pid || c->at != at || c->allocs != allocs)
			continue;
		if (!(b = malloc(c->len ? c->len : 1)))
			return NULL;
		memcpy(b, c->body, c->len);
		c->used = ++heap_pages_tick;
		*len = c->len;
		return b;
	}
	return NULL;
}

/* Keep a copy of body as the page of (pid, at, allocs), in place of the least recently used. */
static void heap_page_put(pid_t pid, double at, bool allocs, const char *body, size_t len)
{
	struct heap_page *c = &heap_pages[0];
	char *b = malloc(len ? len : 1);

	if (!b)
		return;
	memcpy(b, body, len);
	for (int i = 1; i < HEAP_CACHE && c->body; i++)
		if (!heap_pages[i].body || heap_pages[i].used < c->used)
			c = &heap_pages[i];
	free(c->body);
	*c = (struct heap_page){ pid, at, allocs, b, len, ++heap_pages_tick };
}

void serve_heap(const struct serve_query *q, struct serve_page *pg)
{
	struct hc_prof *a = NULL, *b = NULL;
	struct hc_report_opts ro = { 0 };
	struct hc_write_opts wo = { .go_heap = true, .go_allocs = q->allocs };
	struct hc_report *r = NULL;
	struct hc_err err = { 0 };
	double at1 = 0, at2 = 0, now = now_s();
	int fa = -1, fb = -1;
	pid_t pid = 0;
	char *body = NULL;
	size_t n = 0;
	FILE *f;

	/* a profile from the last interval will do */
	fa = get_profile(q, now - S.interval, &pid, &at1, &err);
	if (fa < 0)
		goto fail;
	if (q->seconds) {
		/* then one at least seconds later: the worker keeps to --min-interval */
		fb = get_profile(q, at1 + q->seconds, &pid, &at2, &err);
		if (fb < 0)
			goto fail;
		if (!(b = load_fd(fb, "later", &err)))
			goto fail;
	} else {
		pthread_mutex_lock(&S.report_lock);
		body = heap_page_get(pid, at1, q->allocs, &n);
		pthread_mutex_unlock(&S.report_lock);
		if (body) {
			page_text(pg, 200, "application/octet-stream", body, n);
			goto out;
		}
	}
	if (!(a = load_fd(fa, "profile", &err)))
		goto fail;
	ro.pid = pid;
	pthread_mutex_lock(&S.report_lock);
	/* another page may have written it while this one waited for the lock */
	if (!b && (body = heap_page_get(pid, at1, q->allocs, &n))) {
		pthread_mutex_unlock(&S.report_lock);
		page_text(pg, 200, "application/octet-stream", body, n);
		goto out;
	}
	r = b ? hc_report_build(b, a, &ro, &err) : hc_report_build(a, NULL, &ro, &err);
	f = r ? open_memstream(&body, &n) : NULL;
	if (r && f && !hc_report_write(r, HC_FMT_PPROF, &wo, f, &err) && !fclose(f)) {
		f = NULL;
	} else {
		if (f)
			fclose(f);
		free(body);
		body = NULL;
		if (!err.code) {
			err.code = HC_E_NOMEM;
			snprintf(err.msg, sizeof(err.msg), "out of memory writing the profile");
		}
	}
	if (body && !b)
		heap_page_put(pid, at1, q->allocs, body, n);
	pthread_mutex_unlock(&S.report_lock);
	if (!body)
		goto fail;
	page_text(pg, 200, "application/octet-stream", body, n);
	cli_log(HC_LOG_INFO, "pid %d: profile served%s", (int)pid, b ? " (growth)" : "");
	goto out;
fail:
	if (!err.code)
		err.code = HC_E_INTERNAL;
	serve_error_page(pg, 0, &err);
out:
	hc_report_free(r);
	hc_prof_free(a);
	hc_prof_free(b);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

/* ---- the command --------------------------------------------------------- */

/* The token: the file's first line, at least 16 bytes. */
static int read_token(const char *path, char *out, size_t len, struct hc_err *err)
{
	ssize_t n = cli_read_small(path, out, len);
	size_t l;

	if (n < 0) {
		err->code = HC_E_IO;
		err->sys_errno = errno;
		snprintf(err->msg, sizeof(err->msg), "cannot read --token-file %.200s: %s", path,
			 strerror(errno));
		snprintf(err->hint, sizeof(err->hint), "check the path and its permissions");
		return -1;
	}
	l = strcspn(out, "\r\n");
	out[l] = '\0';
	if (l < 16) {
		err->code = HC_E_USAGE;
		snprintf(err->msg, sizeof(err->msg), "the token in %.200s is shorter than 16 bytes",
			 path);
		snprintf(err->hint, sizeof(err->hint), "make one: head -c 32 /dev/urandom | "
			 "base64 > %.200s", path);
		return -1;
	}
	return 0;
}

int cmd_serve(struct cli_env *env)
{
	struct serve_http_opts ho = { .listen = env->listen ? env->listen : DEFAULT_LISTEN };
	struct hc_err err = { 0 };
	char tok[512];
	sigset_t set;
	int sfd = -1, rc = CLI_EXIT_FAIL, loop;

	S.env = env;
	S.interval = (env->min_interval_ms ? env->min_interval_ms : DEFAULT_INTERVAL_MS) / 1000.0;
	ho.allow_control = env->allow_control;
	for (int i = 0; i < env->nselect; i++) {
		unsigned long v;

		if (!strncmp(env->select[i], "uid=", 4) &&
		    cli_parse_uint(env->select[i] + 4, UINT_MAX, &v))
			return cli_usage(env, "invalid --select '%s' (uid=N takes a number)",
					 env->select[i]);
		if (!strcmp(env->select[i], "cgroup="))
			return cli_usage(env, "invalid --select 'cgroup=' (give a part of the path)");
	}
	loop = serve_listen_loopback(ho.listen);
	if (loop < 0)
		return cli_usage(env, "invalid --listen '%s' (expected ADDR:PORT, e.g. "
				 "127.0.0.1:6061 or [::1]:6061)", ho.listen);
	if (!loop && !env->token_file)
		return cli_usage(env, "--listen %s is not a loopback address: give --token-file F "
				 "(requests must then carry 'Authorization: Bearer TOKEN')",
				 ho.listen);
	if (env->token_file) {
		if (read_token(env->token_file, tok, sizeof(tok), &err))
			return cli_fail(env, &err);
		ho.token = tok;
	}

	/*
	 * The signals that end serve, and SIGCHLD, blocked before any thread
	 * starts: every thread inherits the mask.  SIGCHLD tells the worker of
	 * its tracees' stops (borrow/ptrace.c waits for it in sigtimedwait());
	 * an HTTP thread that did not block it would take it, and discard it
	 * (its default action), and each stop would then wait out the 100 ms
	 * poll: a borrow paused 50 to 100 ms instead of one.
	 */
	sigemptyset(&set);
	cli_term_sigaddset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTSTP);
	sigaddset(&set, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigemptyset(&set);
	cli_term_sigaddset(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	S.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	S.t = calloc(MAX_TARGETS, sizeof(*S.t));
	S.rej = calloc(MAX_REJECTS, sizeof(*S.rej));
	snprintf(S.dir, sizeof(S.dir), "%.4000s/heapctl-serve.XXXXXX", cli_tmpdir());
	if (sfd < 0 || S.evfd < 0 || !S.t || !S.rej || !mkdtemp(S.dir)) {
		err.code = HC_E_IO;
		err.sys_errno = errno;
		snprintf(err.msg, sizeof(err.msg), "cannot set up: %s", strerror(errno));
		snprintf(err.hint, sizeof(err.hint), "set TMPDIR to a writable directory");
		S.dir[0] = '\0';
		goto out;
	}
	for (size_t i = 0; i < MAX_TARGETS; i++)
		S.t[i].prof_fd = -1;

	scan();
	if (serve_http_start(&ho, &err))
		goto out;
	fprintf(stderr, "heapctl: serving on http://%s/ (/metrics, /debug/pprof/heap?pid=N), "
		"%s, every target borrowed at most once per %.1f s%s\n", ho.listen,
		ho.token ? "bearer token required" : "no token (loopback only)", S.interval,
		env->nprofile ? "; profiling what --profile names" : "");
	if (!loop)
		fprintf(stderr, "heapctl: warning: listening beyond loopback on %s: only requests "
			"with the token are answered\n", ho.listen);

	pthread_mutex_lock(&S.lock);
	for (;;) {
		double now = now_s(), wait = S.last_scan + S.interval - now;
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN },
					 { .fd = S.evfd, .events = POLLIN } };
		struct tgt *t;
		uint64_t v;

		if (now >= S.last_scan + S.interval) {
			pthread_mutex_unlock(&S.lock);
			scan();
			pthread_mutex_lock(&S.lock);
			continue;
		}
		t = due(now, &wait);
		if (t) {
			borrow(t);
		} else {
			pthread_mutex_unlock(&S.lock);
			poll(pfd, 2, wait > 0 ? (int)(wait * 1000) + 1 : 0);
			if (read(S.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				cli_log(HC_LOG_DEBUG, "eventfd: %s", strerror(errno));
			pthread_mutex_lock(&S.lock);
		}
		/* a borrow cancelled by the signal left it pending: it is taken here */
		{
			struct signalfd_siginfo si;

			pthread_mutex_unlock(&S.lock);
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				fprintf(stderr, "heapctl: stopping on SIG%s\n",
					sigabbrev_np((int)si.ssi_signo));
				pthread_mutex_lock(&S.lock);
				break;
			}
			pthread_mutex_lock(&S.lock);
		}
	}
	S.stopping = true;
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
	serve_http_stop();
	rc = CLI_EXIT_OK;
out:
	if (rc != CLI_EXIT_OK)
		cli_fail(env, &err);
	if (S.t) {
		profiling_off();
		for (size_t i = 0; i < MAX_TARGETS; i++)
			if (S.t[i].used)
				drop(&S.t[i]);
	}
	if (S.dir[0] && rmdir(S.dir))
		cli_log(HC_LOG_WARN, "%s left behind: %s", S.dir, strerror(errno));
	free(S.t);
	free(S.rej);
	if (sfd >= 0)
		close(sfd);
	if (S.evfd >= 0)
		close(S.evfd);
	return rc;
}
