// SPDX-License-Identifier: MIT
/*
 * timer_victim: threads that time their own timed waits, for the "a timer
 * is never made late" promise.  glibc malloc only.
 *
 * Usage: timer_victim TIMEOUT_MS   (commands on stdin, one reply line each on stdout)
 *
 * Four threads each wait TIMEOUT_MS in their own syscall, the way event
 * loops do: on EINTR they wait again for what is left (nanosleep with its
 * rem, the others from a deadline).  epoll_wait on an empty epoll set,
 * poll on a silent pipe, FUTEX_WAIT with a relative timeout on a word
 * nobody wakes, nanosleep (clock_nanosleep on CLOCK_MONOTONIC).
 *
 * Commands:
 *   tids    tids epoll=T poll=T futex=T sleep=T
 *   go [MS] starts one wait in every thread, of MS (default TIMEOUT_MS);
 *           replies "started"
 *   result  once every wait is over:
 *           result epoll=ELAPSED_US,EINTRS,EARLY,ERRNO poll=... futex=... sleep=...
 *           EARLY counts returns before the deadline without EINTR;
 *           ERRNO is the first unexpected error, 0 if none.
 *   corrupt puts a bad pointer into a fastbin of glibc's main arena, so
 *           that the next mallinfo2() (heapctl stats) faults; replies
 *           "corrupted".  Nothing here allocates afterwards.
 *   quit    bye, then exit(0); EOF on stdin also exits
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>

#include "vcommon.h"

enum { K_EPOLL, K_POLL, K_FUTEX, K_SLEEP, K_N };
static const char *const kname[K_N] = { "epoll", "poll", "futex", "sleep" };

struct wres {
	long elapsed_us, eintr, early;
	int err;
};

static long timeout_ms;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long gen;        /* bumped by "go" */
static unsigned int nstarted, ndone;
static pid_t tids[K_N];
static struct wres res[K_N];
static int epfd, pipefd[2];
static uint32_t futex_word;

static long left_ns(uint64_t deadline)
{
	uint64_t now = vnow_ns();

	return now >= deadline ? 0 : (long)(deadline - now);
}

/* One wait of timeout_ms, retried on EINTR for the time left. */
static void one_wait(int k, struct wres *r)
{
	uint64_t t0 = vnow_ns(), deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	struct timespec req = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L }, rem;

	memset(r, 0, sizeof(*r));
	for (;;) {
		long ns = left_ns(deadline);
		int rc, e;

		if (k == K_EPOLL || k == K_POLL) {
			struct epoll_event ev;
			struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
			int ms = (int)((ns + 999999) / 1000000);

			rc = k == K_EPOLL ? epoll_wait(epfd, &ev, 1, ms) : poll(&p, 1, ms);
			e = errno;
			if (rc > 0) {
				r->err = r->err ? r->err : EPROTO; /* nothing may be ready */
				break;
			}
		} else if (k == K_FUTEX) {
			struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

			rc = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
			e = errno;
			if (rc < 0 && e == ETIMEDOUT)
				rc = 0;
		} else {
			rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem);
			e = rc;
			rc = rc ? -1 : 0;
		}
		if (rc < 0 && e == EINTR) {
			r->eintr++;
			if (k == K_SLEEP)
				req = rem;
			continue;
		}
		if (rc < 0) {
			r->err = r->err ? r->err : e;
			break;
		}
		/* the syscall says the time is up: it must be */
		if (vnow_ns() < deadline - 1000000ull)
			r->early++;
		if (k != K_EPOLL && k != K_POLL)
			break;
		/* epoll/poll round up to the millisecond; loop only if truly early */
		if (left_ns(deadline) == 0)
			break;
	}
	r->elapsed_us = (long)((vnow_ns() - t0) / 1000);
}

static void *waiter(void *arg)
{
	int k = (int)(intptr_t)arg;
	unsigned long seen = 0;

	pthread_mutex_lock(&mu);
	tids[k] = vgettid();
	pthread_cond_broadcast(&cv);
	for (;;) {
		struct wres r;

		while (gen == seen)
			pthread_cond_wait(&cv, &mu);
		seen = gen;
		nstarted++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		one_wait(k, &r);
		pthread_mutex_lock(&mu);
		res[k] = r;
		ndone++;
		pthread_cond_broadcast(&cv);
	}
	return NULL;
}

/*
 * Fill the tcache of one size (7 entries) so that the 8th free goes to a
 * fastbin, then overwrite that chunk's safe-linked fd so that it reveals
 * 0x10: aligned (no malloc_printerr), unmapped (int_mallinfo() faults
 * reading its size).
 */
static void corrupt_fastbin(void)
{
	static volatile uintptr_t last;
	void *p[8];

	for (int i = 0; i < 8; i++)
		p[i] = malloc(0x28);
	last = (uintptr_t)p[7];
	for (int i = 0; i < 8; i++)
		free(p[i]);
	*(volatile uintptr_t *)last = (last >> 12) ^ 0x10;
}

int main(int argc, char **argv)
{
	struct vline l = { .len = 0 };
	char cmd[256];
	pthread_t th;

	if (argc != 2 || (timeout_ms = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: %s TIMEOUT_MS\n", argv[0]);
		return 2;
	}
	vallow_ptrace();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0 || pipe(pipefd))
		vdie("epoll_create1/pipe");
	for (int k = 0; k < K_N; k++)
		if (pthread_create(&th, NULL, waiter, (void *)(intptr_t)k))
			vdie("pthread_create");
	pthread_mutex_lock(&mu);
	for (int k = 0; k < K_N; k++)
		while (!tids[k])
			pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	while (vline_read(&l, 0, cmd, sizeof(cmd), NULL) >= 0) {
		if (!strcmp(cmd, "tids")) {
			vreply(1, "tids epoll=%d poll=%d futex=%d sleep=%d", (int)tids[K_EPOLL],
			      (int)tids[K_POLL], (int)tids[K_FUTEX], (int)tids[K_SLEEP]);
		} else if (!strncmp(cmd, "go", 2) && (!cmd[2] || cmd[2] == ' ')) {
			long ms = cmd[2] ? strtol(cmd + 3, NULL, 10) : 0;

			pthread_mutex_lock(&mu);
			if (ms > 0)
				timeout_ms = ms;
			nstarted = ndone = 0;
			gen++;
			pthread_cond_broadcast(&cv);
			while (nstarted < K_N)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
			vreply(1, "started");
		} else if (!strcmp(cmd, "result")) {
			char out[768];
			size_t o = 0;

			pthread_mutex_lock(&mu);
			while (ndone < K_N)
				pthread_cond_wait(&cv, &mu);
			o += (size_t)snprintf(out + o, sizeof(out) - o, "result");
			for (int k = 0; k < K_N; k++)
				o += (size_t)snprintf(out + o, sizeof(out) - o, " %s=%ld,%ld,%ld,%d",
						      kname[k], res[k].elapsed_us, res[k].eintr,
						      res[k].early, res[k].err);
			pthread_mutex_unlock(&mu);
			vreply(1, "%s", out);
		} else if (!strcmp(cmd, "corrupt")) {
			corrupt_fastbin();
			vreply(1, "corrupted");
		} else if (!strcmp(cmd, "quit")) {
			vreply(1, "bye");
			return 0;
		} else {
			vreply(1, "error unknown command");
		}
	}
	return 0;
}
