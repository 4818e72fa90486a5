// SPDX-License-Identifier: MIT
/*
 * mallocloop: the allocation fast path, for bench/sampler.sh.  Each "run N
 * SIZE" line on stdin makes N malloc/free pairs of SIZE bytes (through the
 * PLT, as any program's) and answers the nanoseconds per pair, best of 5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	void *volatile sink;
	char line[128];
	unsigned long n, size;

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		double best = 1e18;

		if (sscanf(line, "run %lu %lu", &n, &size) != 2)
			continue;
		for (int round = 0; round < 5; round++) {
			double t0 = now_ns();

			for (unsigned long i = 0; i < n; i++) {
				void *p = malloc(size);

				sink = p;
				free(sink);
			}
			if ((now_ns() - t0) / n < best)
				best = (now_ns() - t0) / n;
		}
		printf("%.2f\n", best);
	}
	return 0;
}
