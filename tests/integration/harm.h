/* SPDX-License-Identifier: MIT */
/*
 * "Was the target harmed?" checks for the hardening suites (t_kill.c,
 * t_torture.c, t_hostile.c): the victim's threads woken and checked from
 * the inside, mappings heapctl may leave behind when it is killed, and a
 * storm of queued real-time signals whose every delivery is counted.
 */
#ifndef HARM_H
#define HARM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "itest.h"


/* The victim's counters that must never move: errors and every eintr_* key. */
/*
 * For suites of many runs: t_fail() keeps the first reason, the next ones go
 * to the notes, up to a limit.  The including file has a counter
 * "static unsigned int nproblems".
 */
#define HARM_MAX_NOTES 20
#define problem(...)                                   \
	do {                                           \
		t_fail(__VA_ARGS__);                   \
		if (nproblems++ < HARM_MAX_NOTES)      \
			t_note(__VA_ARGS__);           \
	} while (0)

struct vcount {
	long errors, eintr, regs_bad;
	long eintr_epoll; /* part of eintr: the epoll_wait thread's */
};

/* Reads errors, the sum of all eintr_* keys and regs_bad from a "state" line. */
void vcount_parse(struct vcount *c, const char *state);
/* Sends "state" and parses it; -1 with why if the victim does not answer. */
int vcount_get(struct victim *v, struct vcount *c, char *why, size_t whysz);

/*
 * Wakes every parked thread of a jemalloc_victim-protocol victim (feed,
 * epoll, futex, regs, sleepwait; plus "check" when extra is true, which
 * the torture victim understands) and compares the counters with base.
 * No signal tally: that is sig_tally()'s job.  0, or -1 with why.
 */
int wake_check(struct victim *v, const struct vcount *base, bool extra, char *why, size_t whysz);

/* Full /proc/PID/maps, one "lo-hi perms inode path" line per mapping; malloc'ed. */
char *maps_snap(pid_t pid);

struct leftovers {
	/*
	 * new executable or PROT_NONE anonymous mappings: heapctl maps
	 * nothing in a target, so any is harm (the glibc arena's rest aside)
	 */
	unsigned int odd;
	char odd_desc[512];
};

/*
 * New mappings of pid since base (a maps_snap()), classified.  rw-
 * anonymous mappings, and the PROT_NONE rest of a glibc arena's heap, are
 * the allocator's own churn and are ignored.  Returns 0, or -1 if
 * /proc/PID/maps is unreadable.
 */
int maps_classify(pid_t pid, const char *base, struct leftovers *lo);

/*
 * What heapctl's dump left in the target's /tmp, /var/tmp or /dev/shm, once
 * any has had 2 s to go (heapctl's guardian removes it after a SIGKILL):
 * returns the number of .heapctl-PID-* entries (its private directories),
 * *profiles the number of files in them; all removed when rm.
 */
unsigned int dump_leftovers(pid_t pid, bool rm, unsigned int *profiles);
/* The same, at once, without waiting for anything to go. */
unsigned int dump_dirs_now(pid_t pid, bool rm, unsigned int *profiles);

/*
 * Waits (up to ms) until the fd set of pid equals base; returns 0, or -1
 * with the difference in why.
 */
int fds_settle(pid_t pid, const char *base, long ms, char *why, size_t whysz);

/* A child that sigqueue()s real-time signals to a victim until stopped. */
struct sigstorm {
	pid_t pid;
	int stop_fd, res_fd;
};

/*
 * Starts the storm: every period_us, burst signals SIGRTMIN+1..+nsig
 * (round-robin) with counting si_value; to the process, and to each of
 * tids (rt_tgsigqueueinfo) in turn when ntids > 0.  EAGAIN (queue full) is
 * not counted as sent.
 */
int sigstorm_start(struct sigstorm *s, pid_t target, const pid_t *tids, int ntids, int nsig,
		   int burst, long period_us);
/* Stops it and adds what it sent to *count and *sum; -1 if it failed. */
int sigstorm_stop(struct sigstorm *s, unsigned long *count, long *sum);

/*
 * Waits up to ms until the victim's sig_count and sig_sum equal the given
 * totals: more is a duplicate, fewer after ms a loss.  0, or -1 with why;
 * *got gets the victim's count.
 */
int sig_tally(struct victim *v, unsigned long count, long sum, long ms, long *got, char *why,
	      size_t whysz);

/* Random numbers for the suites: seeded from ITEST_SEED or the clock, and printed. */
unsigned long long rnd_next(void);
unsigned long rnd_below(unsigned long n);
unsigned long long rnd_seed(void);

/* ITEST_<name> as a positive number, or dflt. */
long env_long(const char *name, long dflt);

#endif /* HARM_H */
