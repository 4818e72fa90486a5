// SPDX-License-Identifier: MIT
/*
 * jemalloc_leaker: a process that leaks from known stacks, for the report
 * tests (tests/report/run.sh).  Start it with
 * MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:12.
 *
 * Stacks (all noinline except the always_inline one, so they show as an
 * inlined frame):
 *   leak N:   main -> serve -> cache_put -> make_entry (inlined) -> malloc
 *   drip:     drip_main -> drip_once -> drip_alloc -> malloc
 *   steady:   main -> steady_init -> malloc   (1 MiB at start, never freed)
 *   churn:    main -> churn -> malloc/free    (nothing stays)
 *
 * Commands on stdin, one reply line each on stdout:
 *   leak N    leak N bytes in 4 KiB entries     -> "ok N"  (total leaked so far)
 *   rate N    drip N bytes/s from a thread      -> "ok"
 *   churn     allocate and free 64 MiB          -> "ok"
 *   quit      exit                              -> "bye"
 * The first line is "ready PID".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define ENTRY 4096

struct entry {
	struct entry *next;
	char data[ENTRY - sizeof(struct entry *)];
};

static struct entry *cache;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong drip_rate;
static void *steady;

static inline __attribute__((always_inline)) struct entry *make_entry(int fill)
{
	struct entry *e = malloc(sizeof(*e));

	if (e)
		memset(e->data, fill, sizeof(e->data));
	return e;
}

static __attribute__((noinline)) int cache_put(int fill)
{
	struct entry *e = make_entry(fill);

	if (!e)
		return -1;
	pthread_mutex_lock(&lock);
	e->next = cache;
	cache = e;
	pthread_mutex_unlock(&lock);
	return 0;
}

static __attribute__((noinline)) unsigned long serve(unsigned long bytes)
{
	unsigned long done = 0;

	while (done < bytes && cache_put((int)done) == 0)
		done += ENTRY;
	return done;
}

static __attribute__((noinline)) void *drip_alloc(void)
{
	struct entry *e = malloc(sizeof(*e));

	if (e)
		memset(e, 1, sizeof(*e));
	return e;
}

static __attribute__((noinline)) void drip_once(void)
{
	struct entry *e = drip_alloc();

	if (!e)
		return;
	pthread_mutex_lock(&lock);
	e->next = cache;
	cache = e;
	pthread_mutex_unlock(&lock);
}

static void *drip_main(void *arg)
{
	double owed = 0;

	(void)arg;
	for (;;) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		owed += (double)atomic_load(&drip_rate) / 100.0;
		while (owed >= ENTRY) {
			drip_once();
			owed -= ENTRY;
		}
	}
	return NULL;
}

static __attribute__((noinline)) void steady_init(void)
{
	steady = malloc(1 << 20);
	if (steady)
		memset(steady, 2, 1 << 20);
}

static __attribute__((noinline)) void churn(void)
{
	int i;

	for (i = 0; i < 16384; i++) {
		char *p = malloc(ENTRY);

		if (p)
			p[0] = (char)i;
		free(p);
	}
}

int main(void)
{
	unsigned long total = 0;
	char line[128];
	pthread_t th;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	steady_init();
	if (pthread_create(&th, NULL, drip_main, NULL))
		return 1;
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long n;

		if (sscanf(line, "leak %lu", &n) == 1) {
			total += serve(n);
			printf("ok %lu\n", total);
		} else if (sscanf(line, "rate %lu", &n) == 1) {
			atomic_store(&drip_rate, n);
			printf("ok\n");
		} else if (!strncmp(line, "churn", 5)) {
			churn();
			printf("ok\n");
		} else if (!strncmp(line, "quit", 4)) {
			printf("bye\n");
			break;
		} else {
			printf("error unknown command\n");
		}
	}
	return 0;
}
