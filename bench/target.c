// SPDX-License-Identifier: MIT
/*
 * target: the process bench/run.sh points heapctl and gdb at.
 *
 * Usage: target NTHREADS NTICKERS CMD_FIFO OUT_FIFO
 *
 * Starts NTHREADS threads.  The first NTICKERS of them tick every 1 ms on
 * an absolute CLOCK_MONOTONIC deadline, allocate and free a small buffer
 * on each tick, and record the largest gap they saw between two wake-ups:
 * a stopped process shows up as a large gap.  The others park in
 * pthread_cond_wait() like the idle part of a thread pool, so the thread
 * count can grow without the tickers competing for CPUs.
 *
 * The main thread serves one-line commands read from CMD_FIFO and answers
 * on OUT_FIFO:
 *
 *   (start-up)  -> "ready PID"   once every thread runs
 *   "reset"     -> "ok"          forget the gaps seen so far
 *   "gap"       -> "MAX_US"      largest gap since the last reset/gap, in us
 *   "quit"      -> exits
 *
 * End of file on CMD_FIFO also exits, so the target never outlives the
 * script that drives it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 1000000L
#define THREAD_STACK (128 << 10)

struct ticker {
	_Atomic uint64_t max_gap_ns;
	char pad[64 - sizeof(uint64_t)];	/* one cache line each */
};

static struct ticker *tickers;
static long nr_tickers;
static atomic_bool stopping;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static long nr_ready;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void ns_to_ts(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

static void mark_ready(void)
{
	pthread_mutex_lock(&ready_lock);
	nr_ready++;
	pthread_cond_signal(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
}

static void record_gap(struct ticker *t, uint64_t gap)
{
	uint64_t cur = atomic_load_explicit(&t->max_gap_ns, memory_order_relaxed);

	while (gap > cur &&
	       !atomic_compare_exchange_weak_explicit(&t->max_gap_ns, &cur, gap,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	uint64_t last, next, now;
	struct timespec ts;
	volatile char *buf;

	mark_ready();
	last = now_ns();
	next = last + TICK_NS;
	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		ns_to_ts(next, &ts);
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			continue;
		now = now_ns();
		record_gap(t, now - last);
		last = now;

		/* A little allocator traffic, as a real service would have. */
		buf = malloc(64 + (now & 1023));
		if (buf)
			buf[0] = 1;
		free((void *)buf);

		/* After a stall, resume the cadence instead of catching up in a burst. */
		next += TICK_NS;
		if (next <= now)
			next = now + TICK_NS;
	}
	return NULL;
}

static void *idle_main(void *arg)
{
	(void)arg;
	mark_ready();
	pthread_mutex_lock(&idle_lock);
	while (!atomic_load(&stopping))
		pthread_cond_wait(&idle_cond, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return NULL;
}

static uint64_t take_max_gap(void)
{
	uint64_t max = 0, g;
	long i;

	for (i = 0; i < nr_tickers; i++) {
		g = atomic_exchange(&tickers[i].max_gap_ns, 0);
		if (g > max)
			max = g;
	}
	return max;
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 100000) {
		fprintf(stderr, "target: bad %s: %s\n", what, s);
		exit(64);
	}
	return v;
}

static void serve(FILE *in, FILE *out)
{
	char line[64];

	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "reset")) {
			take_max_gap();
			fprintf(out, "ok\n");
		} else if (!strcmp(line, "gap")) {
			fprintf(out, "%llu\n", (unsigned long long)(take_max_gap() / 1000));
		} else if (!strcmp(line, "quit")) {
			return;
		} else {
			fprintf(out, "error unknown command\n");
		}
		fflush(out);
	}
}

int main(int argc, char **argv)
{
	long nr_threads, i;
	pthread_attr_t attr;
	FILE *in, *out = NULL;
	pthread_t tid;
	int err, ret = 1;
	size_t size;

	if (argc != 5) {
		fprintf(stderr, "usage: target NTHREADS NTICKERS CMD_FIFO OUT_FIFO\n");
		return 64;
	}
	nr_threads = parse_long(argv[1], "thread count");
	nr_tickers = parse_long(argv[2], "ticker count");
	if (nr_tickers > nr_threads)
		nr_tickers = nr_threads;

	/* Let a separately started tracer attach under Yama ptrace_scope=1. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

	/* Both opens block until bench/run.sh opens its side of each fifo. */
	in = fopen(argv[3], "r");
	if (!in) {
		fprintf(stderr, "target: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	out = fopen(argv[4], "w");
	if (!out) {
		fprintf(stderr, "target: %s: %s\n", argv[4], strerror(errno));
		goto err_in;
	}

	size = (size_t)(nr_tickers ? nr_tickers : 1) * sizeof(*tickers);
	tickers = aligned_alloc(64, size);
	if (!tickers)
		goto err_out;
	memset(tickers, 0, size);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < nr_threads; i++) {
		err = pthread_create(&tid, &attr, i < nr_tickers ? ticker_main : idle_main,
				     i < nr_tickers ? (void *)&tickers[i] : NULL);
		if (err) {
			fprintf(stderr, "target: pthread_create %ld: %s\n", i, strerror(err));
			pthread_attr_destroy(&attr);
			goto err_stop;
		}
	}
	pthread_attr_destroy(&attr);

	pthread_mutex_lock(&ready_lock);
	while (nr_ready < nr_threads)
		pthread_cond_wait(&ready_cond, &ready_lock);
	pthread_mutex_unlock(&ready_lock);

	fprintf(out, "ready %d\n", (int)getpid());
	fflush(out);
	serve(in, out);
	ret = 0;

	/*
	 * Threads are detached and exit() ends them; tickers stays allocated
	 * because they may still touch it until then.
	 */
err_stop:
	atomic_store(&stopping, true);
err_out:
	fclose(out);
err_in:
	fclose(in);
	return ret;
}
