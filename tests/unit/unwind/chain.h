/* SPDX-License-Identifier: MIT */
/*
 * test_unwind's callers: chains of functions built -O2 -fomit-frame-pointer
 * (chain.c), each ending in probe(arg), where both unwinders run.
 */
#ifndef HC_TEST_UNWIND_CHAIN_H
#define HC_TEST_UNWIND_CHAIN_H

typedef void (*probe_fn)(void *arg);

/* five frames, each with a stack frame of its own and callee-saved registers */
int chain_plain(int n, probe_fn probe, void *arg);
/* a frame with alloca(n): its CFA is the frame pointer's */
int chain_alloca(int n, probe_fn probe, void *arg);
/* depth frames of one recursive function, none a tail call */
int chain_recurse(int depth, probe_fn probe, void *arg);

#endif
