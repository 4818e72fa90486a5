/* SPDX-License-Identifier: MIT */
/*
 * Every thread of the target but the borrowed one, stopped for an instant
 * (freeze.c): for changing code that a thread may be running.
 */
#ifndef HC_FREEZE_H
#define HC_FREEZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct engine;
struct hc_err;
struct frozen;

struct freeze {
	struct frozen *th;
	size_t n;
	uint64_t t0_ns;     /* the first stop asked */
	uint64_t frozen_ns; /* the last thread stopped */
	uint64_t held_ns;   /* from then to the thaw: every thread stopped */
};

/* Stop every other thread; on failure none is left stopped. */
int freeze_all(struct engine *t, struct freeze *f, struct hc_err *err);
/* Is a stopped thread's pc strictly inside (lo, hi)?  Its tid, if so. */
bool freeze_pc_in(const struct freeze *f, uint64_t lo, uint64_t hi, pid_t *tid);
/* Let them all go; keeps the first error. */
int thaw_all(struct engine *t, struct freeze *f, struct hc_err *err);

#endif
