/* SPDX-License-Identifier: MIT */
/* The monotonic clock, and where a borrow's stopped window goes (clock.c). */
#ifndef HC_CLOCK_H
#define HC_CLOCK_H

#include <stdint.h>

uint64_t now_ns(void);

/*
 * Where a borrow's stopped window goes: the time spent in heapctl's calls
 * of each kind since pclock_reset() (thread.c resets it at each stop).
 */
enum pclock {
	PCLK_STOP, /* resuming the thread and waiting for its next stop */
	PCLK_REGS, /* registers, signal masks, interrupt and detach */
	PCLK_MEM,  /* target memory */
	PCLK_N
};
void pclock_reset(void);
void pclock_read(uint64_t ns[PCLK_N]);
/* Add the time from since (now_ns()) to now to k. */
void pclock_add(enum pclock k, uint64_t since);

#endif
