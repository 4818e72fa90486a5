// SPDX-License-Identifier: MIT
/*
 * mallocloop: the allocation fast path, for bench/sampler.sh.  Each "run N
 * SIZE" line on stdin makes N malloc/free pairs of SIZE bytes (through the
 * PLT, as any program's) and answers the nanoseconds per pair, best of 5.
 * "run N SIZE cpu" counts the thread's CPU time instead of the wall clock's:
 * on a machine shared with other work, a round the thread spent preempted
 * does not count against it.
 * Built for glibc and musl, dynamic and static (bench/libc.sh).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
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
	void *volatile sink, *volatile keep;
	char line[128];
	unsigned long n, size;
	char how[8];
	struct sigaction sa = { .sa_handler = on_usr2, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL))
		return 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		double best = 1e18;
		clockid_t clk = CLOCK_MONOTONIC;
		int got = sscanf(line, "run %lu %lu %7s", &n, &size, how);

		if (got < 2)
			continue;
		if (got == 3 && !strcmp(how, "cpu"))
			clk = CLOCK_THREAD_CPUTIME_ID;
		/*
		 * One block of the size stays live meanwhile, as in any program that
		 * has run for a while: musl's mallocng unmaps a group whose slots are
		 * all free, which here would be one mmap and munmap every hundred pairs.
		 */
		keep = malloc(size);
		for (int round = 0; round < 5; round++) {
			double t0 = now_ns(clk);

			for (unsigned long i = 0; i < n; i++) {
				void *p = malloc(size);

				sink = p;
				free(sink);
			}
			double t = (now_ns(clk) - t0) / n;

			if (t < best)
				best = t;
		}
		free(keep);
		printf("%.2f\n", best);
	}
	return 0;
}
