// SPDX-License-Identifier: MIT
/*
 * libc_leak: a process whose heap is its C library's own malloc, with a
 * leak of known size from a named function, built against each libc
 * heapctl must name (Makefile): glibc dynamic (libc_leak), glibc -static
 * and -static-pie (glibc_leak_static, glibc_leak_static_pie), musl dynamic
 * and -static (musl_leak, musl_leak_static).  It uses nothing glibc-only
 * (no mallinfo2, no malloc.h), so that musl-gcc builds the same source.
 *
 * Usage: libc_leak READY_FD CTL_FD REPLY_FD   (or see vcommon.h)
 *
 * Threads: main reads commands; "read" blocks in read() on a pipe that
 * main feeds on "feed N"; "sleep" blocks in nanosleep() for good.
 * leak_here() leaks LEAK_START bytes at start, in 4 KiB blocks that are
 * never freed (a list keeps them, so they are live, not unreachable).
 * A SIGUSR1 handler counts what it is sent (as servers install handlers,
 * which is also what links a static program's signal return).
 *
 * Commands (one reply line each):
 *   ping        pong
 *   tids        tids pid=P main=T read=T sleep=T
 *   leak N      leaked TOTAL (N more bytes from leak_here())
 *   feed N      read ok N | read bad WHY
 *   state       state pid=P errors=N eintr_main=N eintr_read=N eintr_sleep=N eintr_epoll=N
 *               leaked=BYTES usr1=N
 *   fds         fds N
 *   maps        maps N anon_odd=M
 *   churn N     churning T (N more threads in malloc/calloc/realloc/free for good: hooks go in
 *               and out while they run; each block's bytes are checked before its free)
 *   churned     churned ops=N bad=M
 *   quit        bye, then exit(0); EOF on CTL_FD also exits
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>

#include "vcommon.h"

#define LEAK_BLOCK 4096
#define LEAK_START (256 * 1024)

static int feed_pipe[2];
static pid_t tid_read, tid_sleep, tid_epoll;
static unsigned long eintr_main, eintr_read, eintr_sleep, eintr_epoll, n_errors;
static size_t feed_len;
static unsigned long feed_done;
static char feed_res[128];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long usr1, churners, churn_ops, churn_bad;

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_fetch_add(&usr1, 1, __ATOMIC_RELAXED);
}

/* Allocation calls of every kind, for good; each block's bytes are checked before it goes. */
static __attribute__((noinline)) void churn_site(unsigned *seed)
{
	unsigned char *p = malloc(16 + rand_r(seed) % 2000), *q = calloc(1 + rand_r(seed) % 64, 8);
	void *a = NULL;

	if (!p || !q || posix_memalign(&a, 64, 256))
		vdie("churn");
	memset(p, 0xa5, 16);
	q = realloc(q, 4096);
	if (!q)
		vdie("churn realloc");
	q[4095] = 7;
	if (p[0] != 0xa5 || p[15] != 0xa5 || q[4095] != 7 || ((uintptr_t)a & 63))
		__atomic_fetch_add(&churn_bad, 1, __ATOMIC_RELAXED);
	free(p);
	free(q);
	free(a);
	__atomic_fetch_add(&churn_ops, 1, __ATOMIC_RELAXED);
}

static void *churn_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (;;)
		churn_site(&seed);
	return NULL;
}

struct block {
	struct block *next;
	char data[LEAK_BLOCK - sizeof(struct block *)];
};
static struct block *leaked_list;
static size_t leaked;

/* The leak, under a name a heap profile shows: bytes in LEAK_BLOCK blocks, kept for good. */
static __attribute__((noinline)) void leak_here(size_t bytes)
{
	for (size_t done = 0; done < bytes; done += LEAK_BLOCK) {
		struct block *b = malloc(sizeof(*b));

		if (!b)
			vdie("malloc");
		memset(b->data, 0x5a, sizeof(b->data));
		b->next = leaked_list;
		leaked_list = b;
		leaked += sizeof(*b);
	}
}

static void *read_thread(void *arg)
{
	static char buf[65536];

	(void)arg;
	__atomic_store_n(&tid_read, vgettid(), __ATOMIC_RELEASE);
	for (;;) {
		ssize_t n = read(feed_pipe[0], buf, sizeof(buf));
		ssize_t i;

		if (n < 0 && errno == EINTR) {
			pthread_mutex_lock(&mu);
			eintr_read++;
			n_errors++;
			pthread_mutex_unlock(&mu);
			continue;
		}
		if (n <= 0)
			return NULL;
		pthread_mutex_lock(&mu);
		snprintf(feed_res, sizeof(feed_res), "ok %zd", n);
		if ((size_t)n != feed_len)
			snprintf(feed_res, sizeof(feed_res), "bad got %zd wanted %zu", n, feed_len);
		for (i = 0; i < n; i++) {
			if (buf[i] != (char)('a' + i % 26)) {
				snprintf(feed_res, sizeof(feed_res), "bad byte %zd", i);
				break;
			}
		}
		if (strncmp(feed_res, "ok", 2))
			n_errors++;
		feed_done++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

/* Asleep for good: an interrupted nanosleep() that returns EINTR is counted. */
/*
 * In epoll_wait() with no timeout on an epoll set nothing ever fires: a
 * stop of heapctl's (the freeze of inline hooks) must not give it EINTR.
 */
static void *epoll_thread(void *arg)
{
	struct epoll_event ev;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	(void)arg;
	if (ep < 0)
		vdie("epoll_create1");
	__atomic_store_n(&tid_epoll, vgettid(), __ATOMIC_RELEASE);
	for (;;)
		if (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR) {
			pthread_mutex_lock(&mu);
			eintr_epoll++;
			n_errors++;
			pthread_mutex_unlock(&mu);
		}
	return NULL;
}

static void *sleep_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&tid_sleep, vgettid(), __ATOMIC_RELEASE);
	for (;;) {
		struct timespec ts = { 1000000, 0 };

		while (nanosleep(&ts, &ts) && errno == EINTR) {
			pthread_mutex_lock(&mu);
			eintr_sleep++;
			n_errors++;
			pthread_mutex_unlock(&mu);
		}
	}
	return NULL;
}

static void cmd_feed(int fd, const char *arg)
{
	static char buf[4096];
	long n = strtol(arg, NULL, 10), i;
	const long nr_read[] = { SYS_read };
	struct timespec dl;
	unsigned long start;
	bool ok = true;

	if (n < 1 || n > (long)sizeof(buf)) {
		vreply(fd, "read bad usage");
		return;
	}
	for (i = 0; i < n; i++)
		buf[i] = (char)('a' + i % 26);
	pthread_mutex_lock(&mu);
	feed_len = (size_t)n;
	start = feed_done;
	pthread_mutex_unlock(&mu);
	if (vwrite_all(feed_pipe[1], buf, (size_t)n))
		vdie("write feed");
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&mu);
	while (feed_done == start && ok)
		if (pthread_cond_timedwait(&cv, &mu, &dl) == ETIMEDOUT)
			ok = feed_done != start;
	pthread_mutex_unlock(&mu);
	if (!ok)
		vreply(fd, "read bad timeout");
	else if (!vwait_in_syscall(tid_read, nr_read, 1, 10000))
		vreply(fd, "read bad thread did not block again");
	else
		vreply(fd, "read %s", feed_res);
}

int main(int argc, char **argv)
{
	const long nr_read[] = { SYS_read };
	/* arm64 has no nanosleep syscall: libcs sleep in clock_nanosleep there */
	const long nr_sleep[] = { VSYS_NANOSLEEP, SYS_clock_nanosleep };
#ifdef SYS_epoll_wait
	const long nr_epoll[] = { SYS_epoll_pwait, SYS_epoll_wait };
#else
	const long nr_epoll[] = { SYS_epoll_pwait };
#endif
	struct vline line = { .len = 0 };
	struct vfds fds;
	pthread_t t;
	char cmd[1024];
	char c = 'R';

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	{
		struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL))
			vdie("sigaction");
	}
	leak_here(LEAK_START);
	if (pipe2(feed_pipe, O_CLOEXEC))
		vdie("pipe2");
	if (pthread_create(&t, NULL, read_thread, NULL) ||
	    pthread_create(&t, NULL, sleep_thread, NULL) ||
	    pthread_create(&t, NULL, epoll_thread, NULL))
		vdie("pthread_create");
	while (!__atomic_load_n(&tid_read, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&tid_sleep, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&tid_epoll, __ATOMIC_ACQUIRE))
		sched_yield();
	if (!vwait_in_syscall(tid_read, nr_read, 1, 10000) ||
	    !vwait_in_syscall(tid_sleep, nr_sleep, 2, 10000) ||
	    !vwait_in_syscall(tid_epoll, nr_epoll, sizeof(nr_epoll) / sizeof(nr_epoll[0]), 10000)) {
		fprintf(stderr, "victim: a thread did not park\n");
		return 3;
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	close(fds.ready);

	for (;;) {
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), &eintr_main);
		char *arg;

		if (n < 0)
			break;
		arg = strchr(cmd, ' ');
		if (arg)
			*arg++ = '\0';
		else
			arg = cmd + n;

		if (!strcmp(cmd, "ping")) {
			vreply(fds.reply, "pong");
		} else if (!strcmp(cmd, "tids")) {
			vreply(fds.reply, "tids pid=%d main=%d read=%d sleep=%d", (int)getpid(),
			       (int)getpid(), tid_read, tid_sleep);
		} else if (!strcmp(cmd, "leak")) {
			long b = strtol(arg, NULL, 10);

			if (b > 0 && b <= (1L << 30))
				leak_here((size_t)b);
			vreply(fds.reply, "leaked %zu", leaked);
		} else if (!strcmp(cmd, "feed")) {
			cmd_feed(fds.reply, arg);
		} else if (!strcmp(cmd, "state")) {
			pthread_mutex_lock(&mu);
			vreply(fds.reply,
			       "state pid=%d errors=%lu eintr_main=%lu eintr_read=%lu eintr_sleep=%lu eintr_epoll=%lu "
			       "leaked=%zu usr1=%lu",
			       (int)getpid(), n_errors, eintr_main, eintr_read, eintr_sleep, eintr_epoll, leaked,
			       __atomic_load_n(&usr1, __ATOMIC_RELAXED));
			pthread_mutex_unlock(&mu);
		} else if (!strcmp(cmd, "fds")) {
			vreply(fds.reply, "fds %ld", vcount_fds());
		} else if (!strcmp(cmd, "maps")) {
			long maps, anon_odd;

			vcount_maps(&maps, &anon_odd);
			vreply(fds.reply, "maps %ld anon_odd=%ld", maps, anon_odd);
		} else if (!strcmp(cmd, "churn")) {
			long k = strtol(arg, NULL, 10);

			for (long i = 0; i < k && i < 16; i++, churners++)
				if (pthread_create(&t, NULL, churn_thread, (void *)(uintptr_t)(churners + 1)))
					vdie("pthread_create");
			vreply(fds.reply, "churning %lu", churners);
		} else if (!strcmp(cmd, "churned")) {
			vreply(fds.reply, "churned ops=%lu bad=%lu", __atomic_load_n(&churn_ops, __ATOMIC_RELAXED),
			       __atomic_load_n(&churn_bad, __ATOMIC_RELAXED));
		} else if (!strcmp(cmd, "quit")) {
			vreply(fds.reply, "bye");
			break;
		} else {
			vreply(fds.reply, "error unknown command '%s'", cmd);
		}
	}
	return 0;
}
