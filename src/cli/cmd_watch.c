// SPDX-License-Identifier: MIT
/*
 * cmd_watch.c: heapctl watch — the heap figures over time.  One target is
 * opened for the whole run and each sample is one hc_stats_get(): one
 * borrow per interval.  The termination signals stay held from the open
 * (cli_open()); between samples they are waited for with sigtimedwait(),
 * so Ctrl-C ends the run between two samples, or cancels the one under
 * way, which the library finishes restoring first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"

#define WATCH_EVERY_MS 10000u

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "+1.2 MiB/s", "-300 KiB/s", "0 B/s" */
static void rate_str(double r, char *buf, size_t len)
{
	const char *unit;
	char num[24];
	double a = r < 0 ? -r : r;

	cli_size_parts((uint64_t)(a + 0.5), num, sizeof(num), &unit);
	snprintf(buf, len, "%s%s %s/s", r > 0.5 ? "+" : r < -0.5 ? "-" : "", num, unit);
}

static void size_str(uint64_t v, char *buf, size_t len)
{
	const char *unit;
	char num[24];

	cli_size_parts(v, num, sizeof(num), &unit);
	snprintf(buf, len, "%s %s", num, unit);
}

static uint64_t active_of(const struct hc_stats *st)
{
	/* glibc and tcmalloc have no "active": what they have mapped stands in */
	return st->nfig ? st->mapped : st->active;
}

static void print_line(const struct hc_stats *st, const struct hc_stats *prev, double dt,
		       bool header)
{
	const uint64_t now[4] = { st->allocated, active_of(st), st->dirty, st->rss };
	char t[16], cell[4][32], rate[2][32];
	time_t sec = time(NULL);
	struct tm tm;

	if (header)
		printf("%-8s  %10s %13s  %10s  %10s  %10s %13s\n", "time", "allocated", "rate",
		       st->nfig ? "mapped" : "active", "dirty", "rss", "rate");
	localtime_r(&sec, &tm);
	strftime(t, sizeof(t), "%H:%M:%S", &tm);
	for (int i = 0; i < 4; i++)
		size_str(now[i], cell[i], sizeof(cell[i]));
	/* an allocator that counts no live bytes (mimalloc) knows neither allocated nor dirty */
	if (st->live_unknown) {
		snprintf(cell[0], sizeof(cell[0]), "-");
		snprintf(cell[2], sizeof(cell[2]), "-");
	}
	if (prev && dt > 0 && st->live_unknown) {
		snprintf(rate[0], sizeof(rate[0]), "-");
		rate_str(((double)st->rss - (double)prev->rss) / dt, rate[1], sizeof(rate[1]));
	} else if (prev && dt > 0) {
		rate_str(((double)st->allocated - (double)prev->allocated) / dt, rate[0],
			 sizeof(rate[0]));
		rate_str(((double)st->rss - (double)prev->rss) / dt, rate[1], sizeof(rate[1]));
	} else {
		snprintf(rate[0], sizeof(rate[0]), "-");
		snprintf(rate[1], sizeof(rate[1]), "-");
	}
	printf("%-8s  %10s %13s  %10s  %10s  %10s %13s\n", t, cell[0], rate[0], cell[1], cell[2],
	       cell[3], rate[1]);
}

/* DIR/heapctl_PID.prom, written beside and renamed: a scrape never sees half a file. */
static int write_textfile(const char *dir, pid_t pid, const char *comm,
			  const struct hc_stats *st, struct hc_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	FILE *f;
	int fd, e;

	snprintf(path, sizeof(path), "%s/heapctl_%d.prom", dir, (int)pid);
	snprintf(tmp, sizeof(tmp), "%s/.heapctl_%d.prom.XXXXXX", dir, (int)pid);
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	/* the exporter runs as another user: the file must be world-readable */
	if (fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w"))) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		goto fail;
	}
	cli_stats_prom(f, pid, comm, st);
	if (ferror(f) | fclose(f) || rename(tmp, path) < 0) {
		e = errno;
		unlink(tmp);
		errno = e;
		goto fail;
	}
	return 0;
fail:
	err->code = HC_E_IO;
	err->sys_errno = errno;
	snprintf(err->msg, sizeof(err->msg), "cannot write %.200s: %s", path, strerror(errno));
	snprintf(err->hint, sizeof(err->hint),
		 "give --textfile a directory you can write (the node exporter's "
		 "--collector.textfile.directory)");
	return -1;
}

/*
 * The profile for this growth step: DIR/heapctl.PID.N.heap with the first
 * N not taken, and one session with the sample (one borrow).  *seq goes on
 * from the last N used.  Said with the samples behind it and, from the
 * second on, the sampled growth since the one before (*last) with its 95%
 * range (docs/report.md, "How sure").
 */
static int dump_growth(struct hc_target *t, const struct cli_env *env, unsigned int *seq,
		       const struct hc_stats *st, struct hc_prof_info *last, struct hc_err *err)
{
	char path[PATH_MAX], said[96], g[32], lo[32], hi[32];
	bool active = false;
	struct hc_prof_info in;
	struct stat sb;

	do
		snprintf(path, sizeof(path), "%s/heapctl.%d.%u.heap", env->dir, (int)env->pid,
			 (*seq)++);
	while (lstat(path, &sb) == 0 && *seq < 1000000);
	if (hc_prof_dump(t, path, &active, err))
		return -1;
	fprintf(stderr, "heapctl: allocated %llu bytes: wrote %s%s%s\n",
		(unsigned long long)st->allocated, path, cli_samples_said(path, said, sizeof(said), &in),
		active ? "" : " (profiling is off: it holds nothing since)");
	if (last->bytes > 0 && in.period && in.period == last->period && in.bytes > last->bytes) {
		double grew = in.bytes - last->bytes, k = in.samples - last->samples, l, h;

		hc_growth_range(grew, k > 0 ? k : 0, in.period, false, &l, &h);
		cli_size((uint64_t)grew, g, sizeof(g));
		cli_size((uint64_t)l, lo, sizeof(lo));
		cli_size((uint64_t)h, hi, sizeof(hi));
		fprintf(stderr, "  sampled heap grew %s since the last profile (%+.0f samples: 95%% "
			"range %s to %s)%s\n", g, k, lo, hi, k < 10 ? ", not reliable" : "");
	}
	*last = in;
	return 0;
}

/* Wait ms for a termination signal (held since cli_open()); true if one came. */
static bool stopped_within(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	sigset_t set;
	int r;

	sigemptyset(&set);
	cli_term_sigaddset(&set);
	do
		r = sigtimedwait(&set, NULL, &ts);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

int cmd_watch(struct cli_env *env)
{
	unsigned int every = env->every_ms ? env->every_ms : WATCH_EVERY_MS;
	struct hc_stats st, prev;
	struct hc_target *t;
	struct hc_err err;
	char comm[64];
	double t_prev = 0;
	unsigned long n;
	uint64_t mark = 0; /* allocated at the last profile, or at the start */
	unsigned int seq = 0;
	struct hc_prof_info last = { 0 };
	struct stat sb;

	memset(&err, 0, sizeof(err));
	/* a directory that cannot take the file costs the target nothing */
	if (env->textfile && (stat(env->textfile, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
			      access(env->textfile, W_OK | X_OK) < 0)) {
		err.code = HC_E_IO;
		err.sys_errno = errno;
		snprintf(err.msg, sizeof(err.msg), "--textfile %s is not a directory heapctl can write",
			 env->textfile);
		snprintf(err.hint, sizeof(err.hint),
			 "create it, or name the node exporter's --collector.textfile.directory");
		return cli_fail(env, &err);
	}
	if (env->dir && (stat(env->dir, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
			 access(env->dir, W_OK | X_OK) < 0)) {
		err.code = HC_E_IO;
		err.sys_errno = errno;
		snprintf(err.msg, sizeof(err.msg), "--dir %s is not a directory heapctl can write",
			 env->dir);
		snprintf(err.hint, sizeof(err.hint), "create it, or name another with --dir");
		return cli_fail(env, &err);
	}
	cli_read_comm(env->pid, comm, sizeof(comm));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (env->growth) {
		bool enabled = false, active = false;

		/* profiles of nothing would only look like an answer */
		if (hc_prof_get(t, &enabled, &active, &err))
			goto fail;
		if (!active) {
			err.code = HC_E_PROF_OFF;
			snprintf(err.msg, sizeof(err.msg),
				 "--dump-on-growth needs heap profiling, which is %s in pid %d",
				 enabled ? "off" : "not available", (int)env->pid);
			snprintf(err.hint, sizeof(err.hint), "%s",
				 enabled ? "turn it on first: heapctl prof on -p PID" :
					   "see 'heapctl prof status -p PID' for how to get it");
			goto fail;
		}
	}
	for (n = 0; !env->count || n < env->count; n++) {
		double mono, now;
		struct timespec ts;

		if (n && stopped_within(every))
			break;
		/* the sample, and the profile it may call for, in one borrow */
		hc_session_begin(t);
		if (hc_stats_get(t, &st, &err)) {
			(void)hc_session_end(t, &err);
			goto fail;
		}
		if (env->growth && st.live_unknown) {
			(void)hc_session_end(t, &err);
			err.code = HC_E_UNSUPPORTED;
			snprintf(err.msg, sizeof(err.msg),
				 "--dump-on-growth follows allocated, which %s in pid %d does not count",
				 st.allocator, (int)env->pid);
			snprintf(err.hint, sizeof(err.hint),
				 "take profiles when you choose with heapctl dump -p PID, or let heapctl "
				 "leak -p PID --for DUR take two and diff them");
			goto fail;
		}
		if (!n)
			mark = st.allocated;
		/* the first sample writes the baseline the later ones are diffed against */
		if (env->growth && (!n || st.allocated >= mark + env->growth)) {
			if (dump_growth(t, env, &seq, &st, &last, &err)) {
				(void)hc_session_end(t, &err);
				goto fail;
			}
			mark = st.allocated;
		}
		if (hc_session_end(t, &err))
			goto fail;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		mono = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		now = wall_s();
		cli_timing(env, t);
		if (env->json) {
			char rates[192] = "";
			double dt = mono - t_prev;

			if (n && dt > 0 && st.live_unknown)
				snprintf(rates, sizeof(rates), ",\"rates\":{\"active\":%.0f,\"rss\":%.0f}",
					 ((double)active_of(&st) - (double)active_of(&prev)) / dt,
					 ((double)st.rss - (double)prev.rss) / dt);
			else if (n && dt > 0)
				snprintf(rates, sizeof(rates),
					 ",\"rates\":{\"allocated\":%.0f,\"active\":%.0f,"
					 "\"dirty\":%.0f,\"rss\":%.0f}",
					 ((double)st.allocated - (double)prev.allocated) / dt,
					 ((double)active_of(&st) - (double)active_of(&prev)) / dt,
					 ((double)st.dirty - (double)prev.dirty) / dt,
					 ((double)st.rss - (double)prev.rss) / dt);
			cli_stats_json(stdout, env->pid, &st, now, rates);
			putchar('\n');
		} else {
			print_line(&st, n ? &prev : NULL, mono - t_prev, n == 0);
		}
		if (cli_flush() < 0)
			break; /* stdout is gone ("| head"): nothing left to show */
		if (env->textfile && write_textfile(env->textfile, env->pid, comm, &st, &err) < 0)
			goto fail;
		prev = st;
		t_prev = mono;
	}
	cli_close(t);
	return CLI_EXIT_OK;
fail:
	cli_close(t);
	/* Ctrl-C during a sample: the library restored the target; a clean stop */
	if (err.code == HC_E_CANCELLED)
		return CLI_EXIT_OK;
	return cli_fail(env, &err);
}
