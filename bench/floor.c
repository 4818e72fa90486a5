// SPDX-License-Identifier: MIT
/*
 * floor: the least a borrow can cost, for bench/run.sh to divide by.
 *
 * Usage: floor TID RUNS [--run | --paired PID]
 *
 * RUNS times, on thread TID: PTRACE_SEIZE, PTRACE_INTERRUPT, wait for the
 * stop, read NT_PRSTATUS and the whole extended register state (x86_64:
 * NT_X86_XSTATE; arm64: NT_PRFPREG and, where the CPU has it, NT_ARM_SVE),
 * write them all back, PTRACE_DETACH.  Nothing is called in the thread: no
 * tool that gives a thread back bit for bit can do less.
 *
 * With --run (x86_64), the least a borrow that runs the thread can cost:
 * two stops.  After the registers are read, the thread is sent, under
 * PTRACE_SYSCALL, to the "syscall" instruction it is blocked behind with
 * getpid()'s number, and stops at that syscall's entry; there the saved
 * registers and extended state are written back, and the detach lets the
 * kernel run the interrupted syscall again, as it would have restarted it.
 * No frame, no signal mask, no function: heapctl's borrow does all of that
 * and this does not, so it is a floor for any borrow with two stops.  The
 * thread must be blocked in a syscall the kernel restarts (read(), say).
 *
 * With --paired PID, each run is a floor borrow followed by a prof on or
 * off (in turn) made by heapctl's library on the same thread of process
 * PID, from this one process: both warm, at the same moment, so that a
 * pause can be divided by its own floor.  Prints "FLOOR_US PAUSE_US".
 *
 * Prints one line per run: "STOPPED_US TOTAL_US", where STOPPED_US is
 * counted the way heapctl counts its pause (from the moment the stop is
 * seen to the detach) and TOTAL_US from the seize.  This is a benchmark
 * tool, not part of heapctl: it calls ptrace(2) directly on purpose.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include <heapctl/heapctl.h>

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

#if defined(__x86_64__)
#include <sys/user.h>

/* Where thread tid's "syscall" instruction is: behind the pc it is blocked at. */
static uint64_t syscall_insn(pid_t tid)
{
	char path[64], line[512];
	unsigned long long pc = 0;
	unsigned char b[2];
	struct iovec local = { b, 2 }, remote;
	const char *last;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	last = strrchr(line, ' ');
	if (line[0] == '-' || !last || sscanf(last, " %llx", &pc) != 1 || pc < 2)
		return 0;
	remote.iov_base = (void *)(uintptr_t)(pc - 2);
	remote.iov_len = 2;
	if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != 2 || b[0] != 0x0f || b[1] != 0x05)
		return 0;
	return pc - 2;
}

/*
 * The second stop: run getpid() at insn, stop at its entry, where the
 * saved registers go back (the kernel then runs orig_rax's syscall again).
 */
static int run_once(pid_t tid, uint64_t insn, struct iovec *saved)
{
	struct user_regs_struct r;
	struct iovec iov = { &r, sizeof(r) };
	long rc;
	int status;

	memcpy(&r, saved[0].iov_base, sizeof(r));
	rc = (long)r.rax;
	if ((long)r.orig_rax < 0 || (rc != -512 && rc != -513 && rc != -514)) {
		fprintf(stderr, "floor: thread %d is not in a syscall the kernel restarts\n", tid);
		return -1;
	}
	r.rip = insn;
	r.rax = SYS_getpid;
	r.orig_rax = (unsigned long long)-1;
	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0 ||
	    ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0 || waitpid(tid, &status, __WALL) != tid ||
	    !WIFSTOPPED(status) || WSTOPSIG(status) != (SIGTRAP | 0x80)) {
		fprintf(stderr, "floor: thread %d did not stop at getpid()\n", tid);
		return -1;
	}
	return 0;
}
#else
static uint64_t syscall_insn(pid_t tid)
{
	(void)tid;
	return 0;
}

static int run_once(pid_t tid, uint64_t insn, struct iovec *saved)
{
	(void)tid, (void)insn, (void)saved;
	return -1;
}
#endif

static int one(pid_t tid, uint64_t insn, uint64_t *stopped, uint64_t *total)
{
	uint64_t t0 = now_us(), t1;
	struct iovec iov[NSETS];
	int status;
	bool ran;

	if (ptrace(PTRACE_SEIZE, tid, 0, insn ? PTRACE_O_TRACESYSGOOD : 0) < 0 ||
	    ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
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
	/* whatever run_once() did, the registers go back before the detach */
	ran = !insn || run_once(tid, insn, iov) == 0;
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
	return ran ? 0 : -1;
}

/* Each run: a floor borrow, then heapctl's prof on or off, on the same thread. */
static int paired(pid_t pid, pid_t tid, int runs)
{
	struct hc_target_opts o = { .tid = tid };
	struct hc_err err = { 0 };
	struct hc_target *t = hc_target_open(pid, &o, &err);
	bool on = false, found = false, was;
	int i;

	if (!t) {
		fprintf(stderr, "floor: pid %d: %s\n", pid, err.msg);
		return 1;
	}
	for (i = 0; i < runs; i++) {
		uint64_t stopped, total;
		struct hc_timing tm;

		if (one(tid, 0, &stopped, &total) < 0 || hc_prof_set(t, !on, &was, &err) < 0)
			break;
		if (!i)
			found = was; /* profiling as it was found, put back at the end */
		on = !on;
		hc_target_timing(t, &tm);
		printf("%llu %llu\n", (unsigned long long)stopped, (unsigned long long)tm.paused_us);
	}
	if (i && on != found && hc_prof_set(t, found, NULL, &err) < 0)
		i = 0;
	if (err.msg[0])
		fprintf(stderr, "floor: prof on/off in thread %d: %s\n", tid, err.msg);
	hc_target_close(t);
	return i < runs;
}

int main(int argc, char **argv)
{
	pid_t tid, pid = 0;
	int runs;
	uint64_t insn = 0;

	if (argc == 5 && !strcmp(argv[3], "--paired"))
		pid = atoi(argv[4]);
	if (argc < 3 || argc > 5 || (argc == 4 && strcmp(argv[3], "--run")) ||
	    (argc == 5 && pid <= 0) || (tid = atoi(argv[1])) <= 0 || (runs = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: floor TID RUNS [--run | --paired PID]\n");
		return 2;
	}
	if (argc == 4 && !(insn = syscall_insn(tid))) {
		fprintf(stderr, "floor: thread %d is not blocked behind a syscall instruction "
				"(--run is for x86_64)\n", tid);
		return 3;
	}
	/* as heapctl does: no page fault of the tool's own while the thread is stopped */
	memset(buf, 0, sizeof(buf));
	if (pid)
		return paired(pid, tid, runs);
	for (int i = 0; i < runs; i++) {
		uint64_t stopped, total;

		if (one(tid, insn, &stopped, &total) < 0)
			return 1;
		printf("%llu %llu\n", (unsigned long long)stopped, (unsigned long long)total);
	}
	return 0;
}
