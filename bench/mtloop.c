// SPDX-License-Identifier: MIT
/*
 * mtloop: a malloc-bound loop on 2 threads, for bench/sampler.sh.  Each
 * thread keeps 256 live blocks; a step frees one of them (picked at random)
 * and mallocs a new one of 16..4096 bytes (a per-thread xorshift), through
 * the PLT, as any program's.  Each "run N" line on stdin makes both threads
 * do N such steps at once and answers the total pairs per second (both
 * threads together), the median of 3.  EOF exits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 2
#define SLOTS 256

static pthread_barrier_t start, done;
static unsigned long steps;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	void *slot[SLOTS] = { 0 };
	unsigned long x = 88172645463325252ul + (unsigned long)arg;

	for (;;) {
		pthread_barrier_wait(&start);
		if (!steps)
			break;
		for (unsigned long i = 0; i < steps; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			free(slot[x % SLOTS]);
			slot[x % SLOTS] = malloc(16 + (x >> 32) % 4081);
		}
		pthread_barrier_wait(&done);
	}
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A handler, as most long-running programs have one: a static build then
 * links its C library's signal return, which heapctl needs to give a
 * borrowed thread back (bench/libc.sh profiles the static builds).
 */
static void on_usr2(int sig)
{
	(void)sig;
}

int main(void)
{
	pthread_t tid[THREADS];
	char line[128];
	unsigned long n;
	struct sigaction sa = { .sa_handler = on_usr2, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL))
		return 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_barrier_init(&start, NULL, THREADS + 1);
	pthread_barrier_init(&done, NULL, THREADS + 1);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)i))
			return 1;
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		double rate[3];

		if (sscanf(line, "run %lu", &n) != 1 || !n)
			continue;
		for (int r = 0; r < 3; r++) {
			double t0 = now_s();

			steps = n;
			pthread_barrier_wait(&start);
			pthread_barrier_wait(&done);
			rate[r] = THREADS * n / (now_s() - t0);
		}
		qsort(rate, 3, sizeof(rate[0]), cmp);
		printf("%.0f\n", rate[1]);
	}
	steps = 0;
	pthread_barrier_wait(&start);
	for (int i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	return 0;
}
