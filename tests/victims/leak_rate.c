// SPDX-License-Identifier: MIT
/*
 * leak_rate: a process with a leak of known rate beside a steady churn,
 * for the accuracy of heapctl leak (tests and bench/accuracy.sh).
 *
 * Usage: leak_rate [LEAK_BPS [CHURN_BPS [RING_BYTES [SEED]]]]
 *   defaults 102400 (100 KiB/s), 33554432 (32 MiB/s), 1048576 (1 MiB), 1
 *
 * - leak_here() leaks LEAK_BPS bytes per second of the monotonic clock,
 *   in sizes drawn uniformly from 64 to 8192, and never frees them.
 * - churn() allocates CHURN_BPS bytes per second in the same sizes and
 *   keeps a ring of the most recent blocks, about RING_BYTES of them,
 *   alive: a steady live set that turns over every RING_BYTES/CHURN_BPS
 *   seconds, which is not a leak.
 * Both are paced every millisecond by the clock, so a window of T seconds
 * holds LEAK_BPS * T leaked bytes whatever the load on the machine.
 *
 * stdout: "ready PID" once the loop runs.  stdin: "count" answers
 * "leaked BYTES churned BYTES"; end of file exits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIN_SIZE 64
#define MAX_SIZE 8192

static uint64_t rng;
static uint64_t leaked, churned; /* bytes, read by the stdin thread */
static void **leaks;
static size_t nleaks, capleaks;
static void **ring;
static size_t nring, ring_at;

static size_t draw_size(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return MIN_SIZE + (size_t)(rng % (MAX_SIZE - MIN_SIZE + 1));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Kept for good: the list holds them, so nothing is "unreachable" either. */
static __attribute__((noinline)) size_t leak_here(void)
{
	size_t n = draw_size();
	void *p = malloc(n);

	if (!p)
		abort();
	memset(p, 0x5a, 16);
	if (nleaks == capleaks) {
		capleaks = capleaks ? capleaks * 2 : 4096;
		leaks = realloc(leaks, capleaks * sizeof(*leaks));
		if (!leaks)
			abort();
	}
	leaks[nleaks++] = p;
	return n;
}

/* The ring's oldest block goes, a new one takes its place. */
static __attribute__((noinline)) size_t churn(void)
{
	size_t n = draw_size();
	void *p = malloc(n);

	if (!p)
		abort();
	memset(p, 0xa5, 16);
	free(ring[ring_at]);
	ring[ring_at] = p;
	ring_at = (ring_at + 1) % nring;
	return n;
}

static void *reader(void *arg)
{
	char line[64];

	(void)arg;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "count", 5))
			printf("leaked %llu churned %llu\n",
			       (unsigned long long)__atomic_load_n(&leaked, __ATOMIC_RELAXED),
			       (unsigned long long)__atomic_load_n(&churned, __ATOMIC_RELAXED));
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	double leak_bps = argc > 1 ? strtod(argv[1], NULL) : 102400;
	double churn_bps = argc > 2 ? strtod(argv[2], NULL) : 33554432;
	double ring_bytes = argc > 3 ? strtod(argv[3], NULL) : 1048576;
	double t0;
	pthread_t th;
	uint64_t lk = 0, ch = 0;

	rng = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
	rng = rng * 0x9e3779b97f4a7c15ull + 1;
	nring = (size_t)(ring_bytes / ((MIN_SIZE + MAX_SIZE) / 2)) + 1;
	ring = calloc(nring, sizeof(*ring));
	if (!ring)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&th, NULL, reader, NULL))
		return 1;
	t0 = now_s();
	printf("ready %d\n", (int)getpid());
	for (;;) {
		double t = now_s() - t0;
		struct timespec ms = { 0, 1000000 };

		while ((double)lk < leak_bps * t)
			lk += leak_here();
		while ((double)ch < churn_bps * t)
			ch += churn();
		__atomic_store_n(&leaked, lk, __ATOMIC_RELAXED);
		__atomic_store_n(&churned, ch, __ATOMIC_RELAXED);
		nanosleep(&ms, NULL);
	}
}
