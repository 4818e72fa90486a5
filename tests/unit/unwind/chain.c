// SPDX-License-Identifier: MIT
/*
 * test_unwind's callers, built -O2 -fomit-frame-pointer (Makefile): their
 * frames can only be walked through CFI.  Every call is followed by work
 * on its result, so none becomes a tail call and each frame stays.
 */
#include <string.h>

#include "chain.h"

static volatile int sink;

static __attribute__((noinline)) int c5(int n, probe_fn probe, void *arg)
{
	probe(arg);
	return n + sink;
}

static __attribute__((noinline)) int c4(int n, probe_fn probe, void *arg)
{
	volatile long buf[24];

	for (int i = 0; i < 24; i++)
		buf[i] = n * i;
	return c5(n + (int)buf[7], probe, arg) * 3 + (int)buf[11];
}

static __attribute__((noinline)) int c3(int n, probe_fn probe, void *arg)
{
	int a = n * 7, b = n ^ 0x55, c = n + sink;
	int r = c4(a + b, probe, arg);

	return r + a * b - c;
}

static __attribute__((noinline)) int c2(int n, probe_fn probe, void *arg)
{
	volatile char big[3000];

	big[n & 1023] = (char)n;
	return c3(n + big[n & 1023], probe, arg) + 1;
}

int chain_plain(int n, probe_fn probe, void *arg)
{
	return c2(n + 1, probe, arg) - 1;
}

int chain_alloca(int n, probe_fn probe, void *arg)
{
	char *p = __builtin_alloca((size_t)n + 16);

	memset(p, n, (size_t)n + 16);
	return c4(p[n] + n, probe, arg) + p[3];
}

/* called through a volatile pointer: the compiler may not turn the recursion into a loop */
static int (*volatile recurse)(int, probe_fn, void *) = chain_recurse;

int chain_recurse(int depth, probe_fn probe, void *arg)
{
	int r;

	if (depth <= 0)
		return c5(depth, probe, arg);
	r = recurse(depth - 1, probe, arg);
	return r + (depth & 3) + sink;
}
