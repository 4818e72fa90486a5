// SPDX-License-Identifier: MIT
/*
 * floor: the least a borrow can cost, for bench/run.sh to divide by.
 *
 * Usage: floor TID RUNS
 *
 * RUNS times, on thread TID: PTRACE_SEIZE, PTRACE_INTERRUPT, wait for the
 * stop, read NT_PRSTATUS and the whole extended register state (x86_64:
 * NT_X86_XSTATE; arm64: NT_PRFPREG and, where the CPU has it, NT_ARM_SVE),
 * write them all back, PTRACE_DETACH.  Nothing is called in the thread: no
 * tool that gives a thread back bit for bit can do less.
 *
 * Prints one line per run: "STOPPED_US TOTAL_US", where STOPPED_US is
 * counted the way heapctl counts its pause (from the moment the stop is
 * seen to the detach) and TOTAL_US from the seize.  This is a benchmark
 * tool, not part of heapctl: it calls ptrace(2) directly on purpose.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#if defined(__x86_64__)
static const unsigned int sets[] = { NT_PRSTATUS, NT_X86_XSTATE };
#elif defined(__aarch64__)
static const unsigned int sets[] = { NT_PRSTATUS, NT_PRFPREG, NT_ARM_SVE };
#else
#error "x86_64 and aarch64 only"
#endif
#define NSETS (sizeof(sets) / sizeof(sets[0]))
#define SET_MAX (1u << 20) /* AMX tile data makes xstate about 11 KiB; SVE can be more */

static uint8_t buf[NSETS][SET_MAX];

static int one(pid_t tid, uint64_t *stopped, uint64_t *total)
{
	uint64_t t0 = now_us(), t1;
	struct iovec iov[NSETS];
	int status;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		perror("floor: seize");
		return -1;
	}
	if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status)) {
		fprintf(stderr, "floor: thread %d did not stop\n", tid);
		return -1;
	}
	t1 = now_us();
	for (size_t i = 0; i < NSETS; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = SET_MAX;
		/* a regset this CPU lacks (SVE) is skipped, as heapctl does */
		if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)sets[i], &iov[i]) < 0)
			iov[i].iov_len = 0;
	}
	for (size_t i = 0; i < NSETS; i++)
		if (iov[i].iov_len &&
		    ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)sets[i], &iov[i]) < 0) {
			perror("floor: SETREGSET");
			ptrace(PTRACE_DETACH, tid, 0, 0);
			return -1;
		}
	if (ptrace(PTRACE_DETACH, tid, 0, 0) < 0) {
		perror("floor: detach");
		return -1;
	}
	*total = now_us() - t0;
	*stopped = now_us() - t1;
	return 0;
}

int main(int argc, char **argv)
{
	pid_t tid;
	int runs;

	if (argc != 3 || (tid = atoi(argv[1])) <= 0 || (runs = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: floor TID RUNS\n");
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		uint64_t stopped, total;

		if (one(tid, &stopped, &total) < 0)
			return 1;
		printf("%llu %llu\n", (unsigned long long)stopped, (unsigned long long)total);
	}
	return 0;
}
