// SPDX-License-Identifier: MIT
/*
 * Unit test: the safe-point stack scan (src/lib/borrow/where.c) and the scan ahead
 * that where_warm_up() makes before a thread is stopped.  The scan after
 * the stop may pass over a word the scan ahead read and judged, but only
 * while that word is unchanged and the scan ahead found every word safe:
 * a return into the allocator that appears, or stays, between the two must
 * be seen.  The "stack" is a mapping of this process's own, read through
 * process_vm_readv() as a target's would be; the allocator is one function
 * of this program (the target's in_allocator policy).  Whether the scan
 * vouched for the stack is what where_safe() logs at debug level.
 * Prints "PASS group" or "FAIL group: detail"; exits 1 on failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/user.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/ptrace.h>
#endif

#include "engine.h"
#include "image.h"
#include "unit.h"
#include "where.h"

#define STACK_LEN (64 * 1024)
#define WORDS (STACK_LEN / 8)

static uint64_t *stack; /* its own mapping: the scan reads to the mapping's end */
static bool vouched;    /* the scan's debug line came: it found the stack safe */

/* The allocator, as far as the target's policy says (a name no malloc-family rule takes). */
static __attribute__((noinline)) int guarded_code(int x)
{
	return x * 3 + 1;
}

static bool in_guarded(struct engine *t, uint64_t raddr)
{
	uint64_t lo = (uint64_t)(uintptr_t)guarded_code;

	(void)t;
	return raddr >= lo && raddr < lo + 16;
}

static void sink(enum hc_log_level level, const char *msg)
{
	(void)level;
	if (strstr(msg, "none returns into the allocator"))
		vouched = true;
}

/* Put pc into the register set. */
static void set_pc(uint64_t *gregs, uint64_t pc)
{
#if defined(__x86_64__)
	((struct user_regs_struct *)gregs)->rip = pc;
#elif defined(__aarch64__)
	((struct user_pt_regs *)gregs)->pc = pc;
#endif
}

/* where_safe()'s scan of the stack as it is now, after a scan ahead of it as it was then. */
static bool scan_vouches(struct engine *t, const void *gregs)
{
	char why[256];

	vouched = false;
	where_safe(t, getpid(), gregs, why, sizeof(why));
	return vouched;
}

int main(void)
{
	uint64_t gregs[64] = { 0 }, ret_into = (uint64_t)(uintptr_t)guarded_code + 1;
	uint64_t pc = (uint64_t)(uintptr_t)main;
	struct image *img;
	struct engine *t;
	struct hc_err e = { 0 };
	uint8_t *m;

	/* the stack, a guard page above it so that the mapping ends there */
	m = mmap(NULL, STACK_LEN + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + STACK_LEN, 4096, PROT_NONE) < 0) {
		printf("FAIL setup: mmap\n");
		return 1;
	}
	stack = (uint64_t *)m;
	/* a target as api.c makes one: the image, no lock */
	/* a bare image, and the engine on it: what borrow/ is given */
	img = calloc(1, sizeof(*img));
	t = calloc(1, sizeof(*t));
	if (!img || !t) {
		printf("FAIL setup: out of memory\n");
		return 1;
	}
	image_init(img, getpid());
	t->img = img;
	t->lockfd = -1;
	t->img->memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (maps_load(t->img, &e) < 0 || where_init(t, &e) < 0) {
		printf("FAIL setup: %s\n", e.msg);
		return 1;
	}
	t->in_allocator = in_guarded;
	if (where_prepare(t) < 0) {
		printf("FAIL setup: where_prepare\n");
		return 1;
	}
	hc_log_set(sink, HC_LOG_DEBUG);
	/*
	 * A thread blocked at the top of main(), its stack pointer at the
	 * mapping's start; on x86_64 its thread pointer at the mapping's end,
	 * where the scan of a stack that is not the main one stops.
	 */
#if defined(__x86_64__)
	struct user_regs_struct r = { .rip = (uintptr_t)main, .rsp = (uintptr_t)stack,
				      .fs_base = (uintptr_t)(m + STACK_LEN) };
#elif defined(__aarch64__)
	struct user_pt_regs r = { .pc = (uintptr_t)main, .sp = (uintptr_t)stack };
#endif
	_Static_assert(sizeof(r) <= sizeof(gregs), "register set");
	memcpy(gregs, &r, sizeof(r));
	if (t->img->arch->get_sp(gregs) != (uint64_t)(uintptr_t)stack ||
	    t->img->arch->get_pc(gregs) != (uint64_t)(uintptr_t)main) {
		printf("FAIL setup: this test's register layout is not the arch's\n");
		return 1;
	}
	for (size_t i = 0; i < WORDS; i += 7)
		stack[i] = i * 1000; /* numbers, not code */

	begin("scan_unchanged");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	CHECK(scan_vouches(t, gregs), "a stack of numbers not vouched for");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	CHECK(scan_vouches(t, gregs), "the same stack not vouched for the second time");
	end();

	begin("scan_return_appears");
	/* safe when read ahead, a return into the allocator when stopped: deep and shallow */
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	stack[WORDS - 3] = ret_into;
	CHECK(!scan_vouches(t, gregs), "a return into the allocator near the top was passed over");
	stack[WORDS - 3] = (WORDS - 3) * 1000;
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	stack[1] = ret_into;
	CHECK(!scan_vouches(t, gregs), "a return into the allocator at sp was passed over");
	stack[1] = 1000;
	end();

	begin("scan_return_stays");
	/* there when read ahead and still there: the scan ahead's "unsafe" holds */
	stack[100] = ret_into;
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	CHECK(!scan_vouches(t, gregs), "a return into the allocator read ahead was passed over");
	end();

	begin("scan_return_gone");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	stack[100] = 0;
	CHECK(scan_vouches(t, gregs), "a stack whose return into the allocator left not vouched for");
	end();

	begin("scan_other_sp");
	/* read ahead at another stack pointer: a word that differs is judged again */
	where_warm_up(t, (uint64_t)(uintptr_t)(stack + 8), pc);
	stack[4] = ret_into;
	CHECK(!scan_vouches(t, gregs), "a scan ahead from another sp vouched for this one");
	stack[4] = 0;
	end();

	begin("scan_after_prepare");
	/*
	 * Judged ahead under another policy (no allocator), then the policy and
	 * ranges made again (where_prepare()): the word unchanged, but its
	 * verdict is not the scan ahead's.
	 */
	t->in_allocator = NULL;
	where_prepare(t);
	stack[2000] = ret_into;
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	CHECK(scan_vouches(t, gregs), "with no allocator, a stack of one return not vouched for");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	t->in_allocator = in_guarded;
	where_prepare(t);
	CHECK(!scan_vouches(t, gregs), "a return into the allocator passed over after where_prepare()");
	stack[2000] = 0;
	end();

	begin("scan_pc");
	/* the pc judged ahead is passed over only while it is the same pc */
	where_warm_up(t, (uint64_t)(uintptr_t)stack, pc);
	set_pc(gregs, (uint64_t)(uintptr_t)guarded_code + 4);
	CHECK(!scan_vouches(t, gregs), "a pc in the allocator passed over: another pc was read ahead");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, (uint64_t)(uintptr_t)guarded_code + 4);
	CHECK(!scan_vouches(t, gregs), "a pc in the allocator passed over: it was read ahead");
	/* judged safe ahead with no allocator, then the policy made again */
	t->in_allocator = NULL;
	where_prepare(t);
	where_warm_up(t, (uint64_t)(uintptr_t)stack, (uint64_t)(uintptr_t)guarded_code + 4);
	CHECK(scan_vouches(t, gregs), "with no allocator, a pc in guarded_code() not vouched for");
	where_warm_up(t, (uint64_t)(uintptr_t)stack, (uint64_t)(uintptr_t)guarded_code + 4);
	t->in_allocator = in_guarded;
	where_prepare(t);
	CHECK(!scan_vouches(t, gregs), "a pc in the allocator passed over after where_prepare()");
	set_pc(gregs, pc);
	end();

	hc_log_set(NULL, HC_LOG_ERR);
	where_fini(t);
	image_fini(img);
	free(img);
	free(t);
	return nfailed != 0;
}
