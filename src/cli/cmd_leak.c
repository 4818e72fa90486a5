// SPDX-License-Identifier: MIT
/*
 * cmd_leak.c: heapctl leak — what grows in a live process, in one command.
 *
 *   1. make sure heap profiling is active (prof.active), remembering how it was;
 *      where leak starts heapctl's sampler itself, it measures how fast the
 *      process allocates and picks the interval for the window, then warms
 *      up: the steady live set is sampled before the first profile, so its
 *      turnover does not count as growth (docs/design.md, "leak's interval
 *      and warm-up");
 *   2. dump a profile, wait --for SEC (progress on a terminal), dump again;
 *   3. put profiling back as it was found;
 *   4. subtract the two, symbolizing against the live process's own files;
 *   5. print the growth with the samples behind it and its 95% range, the
 *      top growing functions and stacks, and write the flamegraph.
 *
 * The target is attached only for each step, never during the wait.  A
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT during the wait ends it early: the second profile
 * is taken at once, prof.active restored, and the growth so far reported.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"
#include "cli_report.h"

int cli_parse_duration(const char *s, unsigned int *ms)
{
	static const struct {
		const char *suf;
		double mul;
	} units[] = { { "ms", 0.001 }, { "s", 1 }, { "m", 60 }, { "h", 3600 } };
	char num[64];
	size_t n, i;
	unsigned int v;

	if (!s)
		return -1;
	n = strlen(s);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t l = strlen(units[i].suf);
		double ms_d;

		if (n <= l || strcmp(s + n - l, units[i].suf) || n - l >= sizeof(num))
			continue;
		/* "5ms" must not be read as 5 minutes and "s": try the longest suffix first. */
		memcpy(num, s, n - l);
		num[n - l] = '\0';
		if (cli_parse_seconds(num, &v))
			return -1;
		ms_d = (double)v * units[i].mul;
		if (ms_d < 1 || ms_d > (double)UINT_MAX)
			return -1;
		*ms = (unsigned int)ms_d;
		return 0;
	}
	return cli_parse_seconds(s, ms);
}

/*
 * The signals that end the wait early.  They are caught from before the
 * first profile to the end: a signal is then never the end of heapctl
 * with prof.active left on.  While a thread is borrowed they are held
 * (cli_open), and the library finishes its call and restores the target.
 */
static volatile sig_atomic_t stop_sig;
static struct sigaction old_sa[CLI_NTERM];

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void catch_stops(void)
{
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < CLI_NTERM; i++)
		sigaction(cli_term_sigs[i], &sa, &old_sa[i]);
}

static void release_stops(void)
{
	int i;

	for (i = 0; i < CLI_NTERM; i++)
		sigaction(cli_term_sigs[i], &old_sa[i], NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep ms, showing progress on a terminal, as what; false if a signal ended the wait. */
static bool wait_ms(unsigned int ms, const char *what)
{
	bool tty = isatty(STDERR_FILENO);
	double start = now_s(), end = start + ms / 1000.0;
	int shown = -1;

	/* Said once without a terminal too: scripts and supervisors see the wait begin. */
	if (!tty)
		fprintf(stderr, "heapctl: %s for %.1f s (SIGINT or SIGTERM ends early)\n", what,
			ms / 1000.0);
	while (!stop_sig) {
		double t = now_s(), left = end - t;
		struct timespec ts;

		if (left <= 0)
			break;
		if (tty && (int)(t - start) != shown) {
			shown = (int)(t - start);
			fprintf(stderr, "\rheapctl: %s: %d/%u s (Ctrl-C ends early) ", what, shown,
				(ms + 999) / 1000);
		}
		if (left > 0.2)
			left = 0.2;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e9);
		nanosleep(&ts, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	return !stop_sig;
}

/* What leak found and changed, to put back as it was. */
struct leak_run {
	bool activated;   /* leak turned profiling on, and turns it off */
	bool sampler;     /* heapctl's sampler is the profiler */
	bool kept_before; /* heapctl's sampler was off with samples kept: they stay */
	bool chose;       /* leak picks the sampler's interval */
	uint64_t interval; /* the one leak picked */
	double alloc_rate; /* bytes per second, measured by the probe; 0 if not */
	unsigned int warm_ms;
};

/*
 * How leak picks heapctl's sampler interval when it starts the sampler
 * itself (docs/design.md, "leak's interval and warm-up").  The sampler is
 * first started at PROBE_BYTES for PROBE_MS: its sample count times the
 * interval is the bytes allocated meanwhile (a Poisson count, like any
 * other).  The window then gets about WINDOW_SAMPLES samples of the whole
 * allocation stream, so a leak that is a share f of what is allocated gets
 * f * WINDOW_SAMPLES samples whatever --for is: 200 for the 0.3% of a
 * 100 KiB/s leak beside 32 MiB/s of churn, a rate within 14% (95%).  The
 * interval stays at least what keeps the cost under MAX_PER_S samples a
 * second (one sample costs about a microsecond: bench/sampler.sh), and
 * at least RSS / LIVE_ROOM, so the live table (3/4 of 2^16 entries) holds
 * a live set the size of the whole process twice over.
 */
#define PROBE_BYTES (256u << 10)
#define PROBE_MS 500
#define WINDOW_SAMPLES 65536.0
#define MAX_PER_S 20000.0
#define LIVE_ROOM 24576.0
#define MIN_INTERVAL 1024.0
#define MAX_INTERVAL (8.0 * 1024 * 1024)

static uint64_t pick_interval(double alloc_rate, double secs, uint64_t rss)
{
	double want = alloc_rate * secs / WINDOW_SAMPLES, floor = alloc_rate / MAX_PER_S;
	uint64_t p = 1024;

	if (floor < (double)rss / LIVE_ROOM)
		floor = (double)rss / LIVE_ROOM;
	if (floor < MIN_INTERVAL)
		floor = MIN_INTERVAL;
	if (want > MAX_INTERVAL)
		want = MAX_INTERVAL;
	if (want < floor)
		want = floor;
	/* the nearest power of two, not below the floor: "one per 4.0 KiB" */
	while ((double)p * 1.4142 < want && p < (1ull << 40))
		p <<= 1;
	if ((double)p < floor)
		p <<= 1;
	return p;
}

/*
 * Profiling on, and how it was found.  Where leak starts heapctl's sampler
 * itself with no --sample-bytes, it starts it at PROBE_BYTES: the probe.
 */
static int turn_on(struct cli_env *env, struct leak_run *lr, struct hc_err *err)
{
	struct hc_sampler s;
	struct hc_target *t;
	bool was = false;

	t = cli_open(env, env->pid, err);
	if (!t)
		return -1;
	if (hc_sampler_get(t, &s, err))
		goto fail;
	lr->kept_before = s.kept;
	lr->chose = !env->topts.sample_bytes && !s.enabled && !s.kept &&
		    env->topts.sampler != HC_SAMPLER_NATIVE;
	if (lr->chose)
		hc_target_set_sample_bytes(t, PROBE_BYTES);
	/* on, and whether it was on already, in one step */
	if (hc_prof_set(t, true, &was, err))
		goto fail;
	lr->activated = !was;
	if (lr->activated)
		cli_log(HC_LOG_INFO, "profiling turned on for the measurement");
	if (hc_sampler_get(t, &s, err))
		goto fail;
	lr->sampler = s.enabled;
	lr->chose = lr->chose && lr->activated && lr->sampler;
	cli_timing(env, t);
	cli_close(t);
	return 0;
fail:
	cli_close(t);
	return -1;
}

/* After the probe: the allocation rate, and the sampler restarted at the interval for the window. */
static int set_interval(struct cli_env *env, struct leak_run *lr, double probe_s,
			unsigned int for_ms, struct hc_err *err)
{
	struct hc_sampler s;
	struct hc_proc pr;
	struct hc_target *t;
	uint64_t rss = hc_proc_read(env->pid, &pr, &(struct hc_err){ 0 }) == 0 ? pr.rss : 0;

	t = cli_open(env, env->pid, err);
	if (!t)
		return -1;
	if (hc_sampler_get(t, &s, err))
		goto fail;
	lr->alloc_rate = (double)s.samples * (double)s.interval / probe_s;
	lr->interval = pick_interval(lr->alloc_rate, for_ms / 1000.0, rss);
	hc_target_set_sample_bytes(t, lr->interval);
	if (hc_prof_set(t, true, NULL, err))
		goto fail;
	cli_timing(env, t);
	cli_close(t);
	return 0;
fail:
	cli_close(t);
	return -1;
}

/*
 * Turn profiling back off as it was found: jemalloc's prof.active false;
 * heapctl's sampler off, and its hooks out unless it kept samples before.
 */
static int turn_off(struct hc_target *t, struct leak_run *lr, struct hc_err *err)
{
	if (hc_prof_set(t, false, NULL, err) || (lr->sampler && !lr->kept_before &&
						 hc_prof_reset(t, err)))
		return -1;
	lr->activated = false;
	cli_log(HC_LOG_INFO, "profiling put back off");
	return 0;
}

/* Put profiling back off on a fresh attach. */
static void restore_inactive(struct cli_env *env, struct leak_run *lr)
{
	struct hc_target *t;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	t = cli_open(env, env->pid, &err);
	if (!t || turn_off(t, lr, &err)) {
		fprintf(stderr, "heapctl: warning: could not turn profiling back off: %s\n"
				"hint: heapctl prof off -p %d", err.msg, (int)env->pid);
		if (lr->sampler && !lr->kept_before)
			fprintf(stderr, " && heapctl prof reset -p %d", (int)env->pid);
		fputc('\n', stderr);
	}
	cli_close(t);
}

/* One dump into path; with restore, profiling goes back off in the same attach. */
static int dump_once(struct cli_env *env, const char *path, struct leak_run *lr, bool restore,
		     struct hc_err *err)
{
	struct hc_target *t;

	t = cli_open(env, env->pid, err);
	if (!t)
		return -1;
	if (hc_prof_dump(t, path, NULL, err))
		goto fail;
	if (restore && lr->activated) {
		struct hc_err e2;

		memset(&e2, 0, sizeof(e2));
		(void)turn_off(t, lr, &e2); /* else one more try on a fresh attach */
	}
	cli_timing(env, t);
	cli_close(t);
	return 0;
fail:
	cli_close(t);
	return -1;
}

/* Ended by a signal before the first profile: nothing was measured. */
static void stopped_early(struct hc_err *err, const char *when)
{
	memset(err, 0, sizeof(*err));
	err->code = HC_E_CANCELLED;
	snprintf(err->msg, sizeof(err->msg), "SIG%s during the %s, before the first profile: "
		 "nothing was measured", sigabbrev_np(stop_sig), when);
	snprintf(err->hint, sizeof(err->hint), "--warm-up 0 takes the first profile at once");
}

/*
 * Below this many samples behind the growth, its rate is not a figure to
 * act on: the 95% range is then wider than the figure itself on one side
 * (Poisson: 10 samples span 0.48 to 1.84 times what they show).
 */
#define MIN_SAMPLES 10

/* The 95% range of the growth rate (docs/report.md, "How sure"). */
static void rate_range(const struct hc_report_totals *t, double grew, double secs, bool objects,
		       double *lo, double *hi)
{
	hc_growth_range(grew, t->grew_samples, t->period, objects, lo, hi);
	*lo /= secs;
	*hi /= secs;
}

/*
 * leak --json: the summary as one object on stdout, the tables' heads as
 * "functions" and "stacks".  The -o file is written as without --json.
 * Schema in docs/cli.md.
 */
static int print_json(const struct cli_env *env, struct hc_report *r,
		      const struct hc_write_opts *wo, const struct hc_report_totals *tot,
		      double change, double secs, bool was_active, const struct leak_run *lr,
		      const char *out, int fmt, struct hc_err *err)
{
	double lo, hi;

	rate_range(tot, change, secs, env->objects, &lo, &hi);
	printf("{\"pid\":%d,\"seconds\":%.3f,\"weight\":\"%s\",\"bytes\":%.0f,"
	       "\"base_bytes\":%.0f,\"objects\":%.0f,\"base_objects\":%.0f,\"change\":%.0f,"
	       "\"per_second\":%.0f,\"samples\":%.0f,\"base_samples\":%.0f,"
	       "\"grew_samples\":%.0f,\"per_second_range\":[%.0f,%.0f],\"reliable\":%s,"
	       "\"period\":%llu,\"interval_chosen\":%s,\"allocation_rate\":%.0f,"
	       "\"warm_up_seconds\":%.3f,\"profiling_was_active\":%s,\"output\":{\"path\":",
	       (int)env->pid, secs, env->objects ? "objects" : "bytes", tot->bytes,
	       tot->base_bytes, tot->objects, tot->base_objects, change, change / secs,
	       tot->samples, tot->base_samples, tot->grew_samples, lo, hi,
	       cli_bool(!tot->period || tot->grew_samples >= MIN_SAMPLES),
	       (unsigned long long)tot->period, cli_bool(lr->chose), lr->alloc_rate,
	       lr->warm_ms / 1000.0, cli_bool(was_active));
	hc_json_str(stdout, out);
	printf(",\"format\":\"%s\"},", hc_report_format_name(fmt));
	if (hc_report_write_top_json(r, wo, stdout, err))
		return -1;
	fputs("}\n", stdout);
	return 0;
}

int cmd_leak(struct cli_env *env)
{
	unsigned int for_ms = env->for_ms ? env->for_ms : 30000;
	char dir[PATH_MAX], a[PATH_MAX + 16], b[PATH_MAX + 16], outbuf[64];
	const char *path = env->output;
	struct hc_prof *pa = NULL, *pb = NULL;
	struct hc_report *r = NULL;
	struct hc_report_opts ro;
	struct hc_write_opts wo, all;
	struct hc_report_totals tot;
	struct cli_out out;
	struct hc_err err;
	struct leak_run lr = { 0 };
	bool was_off, to_stdout = cli_out_is_stdout(env->output);
	double t0, t1, secs, grew, lo, hi;
	int fmt, rc;
	char gb[32], nb[32], lb[32], hb[32], iv[32];
	FILE *msg = to_stdout ? stderr : stdout;

	/*
	 * Every argument is checked before the first profile, let alone the
	 * wait: a mistake found after --for would throw the measurement away.
	 */
	memset(&err, 0, sizeof(err));
	rc = cli_output_format(env, env->output, HC_FMT_SVG, &fmt);
	if (rc)
		return rc;
	if (fmt == HC_FMT_PPROF && to_stdout && isatty(STDOUT_FILENO))
		return cli_usage(env, "pprof output is binary; name a file with -o FILE.pb.gz");
	if (!path) {
		snprintf(outbuf, sizeof(outbuf), "./heapctl-leak.%d%s", (int)env->pid,
			 cli_format_suffix(fmt));
		path = outbuf;
	}
	if (cli_out_open(&out, path, env->output ? "-o" : NULL, fmt, &err))
		return cli_fail(env, &err);
	/* the two profiles: where out.c puts its scratch files too */
	snprintf(dir, sizeof(dir), "%.4000s/heapctl-leak.XXXXXX", cli_tmpdir());
	if (!mkdtemp(dir)) {
		cli_out_discard(&out);
		err.code = HC_E_IO;
		err.sys_errno = errno;
		snprintf(err.msg, sizeof(err.msg), "cannot create a directory in %.200s: %s",
			 cli_tmpdir(), strerror(errno));
		snprintf(err.hint, sizeof(err.hint), "set TMPDIR to a writable directory");
		return cli_fail(env, &err);
	}
	snprintf(a, sizeof(a), "%s/base.heap", dir);
	snprintf(b, sizeof(b), "%s/new.heap", dir);

	rc = CLI_EXIT_FAIL;
	stop_sig = 0;
	catch_stops();
	if (turn_on(env, &lr, &err))
		goto fail;
	was_off = lr.activated;
	if (lr.chose) {
		double p0 = now_s();

		if (!wait_ms(PROBE_MS, "measuring the allocation rate"))
			goto stopped;
		if (set_interval(env, &lr, now_s() - p0, for_ms, &err))
			goto fail;
		cli_size((uint64_t)lr.alloc_rate, gb, sizeof(gb));
		cli_size(lr.interval, iv, sizeof(iv));
		fprintf(stderr, "heapctl: pid %d allocates %s/s: heapctl's sampler takes one sample "
			"per %s for this window\n", (int)env->pid, gb, iv);
	}
	/*
	 * Profiling started now sees no allocation from before: warm up, so
	 * the first profile holds the steady live set and its turnover is not
	 * taken for growth.
	 */
	if (lr.activated) {
		lr.warm_ms = env->warm_ms >= 0 ? (unsigned)env->warm_ms :
			     for_ms / 5 < 1000 ? 1000 : for_ms / 5 > 10000 ? 10000 : for_ms / 5;
		if (lr.warm_ms && !wait_ms(lr.warm_ms, "warming up (the live set is sampled first)"))
			goto stopped;
	}
	if (dump_once(env, a, &lr, false, &err))
		goto fail;
	t0 = now_s();
	/*
	 * Ctrl-C ends the wait, not the command: what grew so far is measured
	 * and reported like a full run.
	 */
	if (!wait_ms(for_ms, "measuring growth"))
		fprintf(stderr, "heapctl: SIG%s after %.1f s: taking the second profile now\n",
			sigabbrev_np(stop_sig), now_s() - t0);
	if (dump_once(env, b, &lr, true, &err))
		goto fail;
	t1 = now_s();
	if (lr.activated) /* the second attach could not turn it off: one more try */
		restore_inactive(env, &lr);

	cli_report_opts(env, env->pid, &ro, &wo);
	wo.top = env->top ? (unsigned)env->top : 10;
	wo.grow_only = true;
	pa = hc_prof_load(a, &err);
	if (!pa)
		goto fail;
	pb = hc_prof_load(b, &err);
	if (!pb)
		goto fail;
	r = hc_report_build(pb, pa, &ro, &err);
	if (!r)
		goto fail;
	hc_report_totals(r, &tot);
	grew = env->objects ? tot.objects - tot.base_objects : tot.bytes - tot.base_bytes;
	secs = t1 - t0 > 0.001 ? t1 - t0 : 0.001;
	wo.seconds = secs;
	all = wo;
	all.top = 0; /* the output holds every stack; the summary only the top */
	if (env->json) {
		if (cli_report_out(r, fmt, &all, &out, &err) || cli_out_commit(&out, &err) ||
		    print_json(env, r, &wo, &tot, grew, secs, !was_off, &lr, path, fmt, &err))
			goto fail;
		rc = CLI_EXIT_OK;
		goto out;
	}
	rate_range(&tot, grew, secs, env->objects, &lo, &hi);
	if (env->objects) {
		fprintf(msg, "pid %d: %+.0f objects in %.1f s (%.1f objects/s)%s\n", (int)env->pid,
			grew, secs, grew / secs, was_off ? "; profiling was off before" : "");
		if (tot.period)
			fprintf(msg, "  from %.0f sampled objects that grew: 95%% range %.1f to "
				"%.1f objects/s\n", tot.grew_samples, lo, hi);
	} else {
		cli_size(grew > 0 ? (uint64_t)grew : (uint64_t)-grew, gb, sizeof(gb));
		cli_size(grew > 0 ? (uint64_t)(grew / secs) : (uint64_t)(-grew / secs), nb,
			 sizeof(nb));
		fprintf(msg, "pid %d: heap %s by %s in %.1f s (%s/s)%s\n", (int)env->pid,
			grew >= 0 ? "grew" : "shrank", gb, secs, nb,
			was_off ? "; profiling was off before" : "");
		cli_size((uint64_t)lo, lb, sizeof(lb));
		cli_size((uint64_t)hi, hb, sizeof(hb));
		cli_size(tot.period, iv, sizeof(iv));
		if (tot.period)
			fprintf(msg, "  from %.0f samples that grew (one per %s on average): 95%% "
				"range %s/s to %s/s\n", tot.grew_samples, iv, lb, hb);
	}
	if (!tot.period)
		fprintf(msg, "  every allocation was recorded: no sampling error\n");
	else if (tot.grew_samples < MIN_SAMPLES)
		fprintf(msg, "  only %.0f samples grew: the rate is not reliable; measure longer "
			"(--for) or sample finer (heapctl's sampler: --sample-bytes%s)\n",
			tot.grew_samples, tot.period > 16384 ? " 16K" : "");
	fputc('\n', msg);
	if (cli_report_to(r, HC_FMT_TEXT, &wo, msg, &err))
		goto fail;
	fputc('\n', msg);
	if (cli_report_out(r, fmt, &all, &out, &err) || cli_out_commit(&out, &err))
		goto fail;
	cli_report_wrote(msg, path, fmt, r, env->objects);
	rc = CLI_EXIT_OK;
	goto out;
stopped:
	stopped_early(&err, lr.chose && !lr.warm_ms ? "rate measurement" : "warm-up");
fail:
	if (lr.activated)
		restore_inactive(env, &lr);
	rc = cli_fail(env, &err);
out:
	release_stops();
	cli_out_discard(&out);
	hc_report_free(r);
	hc_prof_free(pa);
	hc_prof_free(pb);
	if (env->verbose) {
		cli_log(HC_LOG_INFO, "profiles kept in %s", dir);
	} else {
		unlink(a);
		unlink(b);
		rmdir(dir);
	}
	return rc;
}
