// SPDX-License-Identifier: MIT
/* The monotonic clock, and where a borrow's stopped window goes (pclock). */
#include <string.h>
#include <time.h>

#include "clock.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Time spent in each kind of call since pclock_reset(): where a pause goes. */
static uint64_t pclock[PCLK_N];

void pclock_reset(void)
{
	memset(pclock, 0, sizeof(pclock));
}

void pclock_read(uint64_t ns[PCLK_N])
{
	memcpy(ns, pclock, sizeof(pclock));
}

void pclock_add(enum pclock k, uint64_t since)
{
	pclock[k] += now_ns() - since;
}
