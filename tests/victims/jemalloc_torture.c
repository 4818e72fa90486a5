// SPDX-License-Identifier: MIT
/*
 * jemalloc_torture: the 16-thread victim of the torture suite
 * (tests/integration/t_torture.c).  glibc_torture and tcmalloc_torture are
 * the same program on glibc malloc and on gperftools' tcmalloc.  Same line protocol as jemalloc_victim
 * (vcommon.h), and the same meaning for the commands they share, so the
 * harness's checks work on both.
 *
 * Usage: jemalloc_torture READY_FD CTL_FD REPLY_FD
 *
 * Threads (16):
 *   main     reads commands (read, SA_RESTART); takes the RT signals
 *   read     read() on a pipe fed by "feed N"
 *   sleep    nanosleep(20 ms) loop; an early or failed wake-up is an error
 *   epoll    epoll_wait() on a pipe fed by "epoll N"
 *   futex    FUTEX_WAIT on a word bumped by "futex"
 *   accept   accept() on a listening loopback socket; "check" connects
 *   poll     poll() on a pipe, no timeout; "check" writes one byte
 *   hammer1-3  malloc/free/realloc of random sizes, forever (signals too)
 *   regs, regs2  sentinel registers across a raw read syscall ("regs")
 *   spin     sentinel registers across a busy loop, round after round
 *   sig, sig2  read() on a pipe; take the RT signals (with main, hammers)
 *   ticker   1 ms clock_nanosleep loop, records the largest gap
 *
 * Signals SIGRTMIN+1..SIGRTMIN+4: SA_SIGINFO | SA_RESTART; the handler
 * counts deliveries and sums si_value.  Threads whose syscall fails with
 * EINTR after a handler even with SA_RESTART (nanosleep, epoll_wait, poll,
 * accept with a timeout...: signal(7)) block them, so every EINTR seen is
 * an error.
 *
 * Commands (one reply line each):
 *   ping, tids, state, feed N, epoll N, futex, sleepwait K, tickreset,
 *   lasterr, quit          as in jemalloc_victim
 *   regs                   regs ok | regs bad WHAT: both sentinel threads
 *   check                  check ok | check bad WHY: accept, poll, spin and
 *                          the hammers make progress
 *   alltids                alltids T T ...: the 16 thread ids
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <linux/futex.h>
/* glibc_torture and tcmalloc_torture are this file under another allocator */
#ifndef TORTURE_OTHER_ALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "vcommon.h"
#include "vregs.h"

#define SLEEP_NS	20000000ull
#define TICK_NS		1000000ull
#define WAIT_MS		10000
#define FEED_MAX	4096
#define REGS_LEN	64
#define NSIG_RT		4
#define SPIN_LOOPS	200000

enum {
	K_MAIN, K_READ, K_SLEEP, K_EPOLL, K_FUTEX, K_ACCEPT, K_POLL, K_HAMMER1, K_HAMMER2,
	K_HAMMER3, K_REGS, K_REGS2, K_SPIN, K_SIG, K_SIG2, K_TICKER, K_NR
};
static const char *const kind_names[K_NR] = {
	"main", "read", "sleep", "epoll", "futex", "accept", "poll", "hammer", "hammer2",
	"hammer3", "regs", "regs2", "spin", "sig", "sig2", "ticker",
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pid_t tid[K_NR];
	const struct regs_mode *rmode;
	int read_pipe[2], epoll_pipe[2], regs_pipe[2][2], sig_pipe[2][2], poll_pipe[2];
	int epfd, lsock;
	unsigned short port;
	size_t read_len, epoll_len;
	unsigned int read_seed, epoll_seed, regs_seed;
	unsigned long read_done, epoll_done, futex_done, regs_done[2], sleep_done, accept_done,
		poll_done;
	char read_res[256], epoll_res[256], regs_res[2][256], regs_firstbad[256];
	char lasterr[512];
} g = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static atomic_ulong n_errors, regs_bad, n_ticks, maxgap_ns, spin_rounds, hammer_ops;
static atomic_ulong eintr_main, eintr_read, eintr_sleep, eintr_epoll, eintr_futex;
static atomic_ulong eintr_accept, eintr_poll, eintr_regs, eintr_tick, eintr_sig;
static atomic_ulong sig_count;
static atomic_long sig_sum;
static atomic_uint futex_word;

__attribute__((format(printf, 1, 2))) static void verr(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&n_errors, 1);
	fprintf(stderr, "torture: error: %s\n", buf);
	pthread_mutex_lock(&g.mu);
	if (!g.lasterr[0])
		snprintf(g.lasterr, sizeof(g.lasterr), "%s", buf);
	pthread_mutex_unlock(&g.mu);
}

static void publish(int k)
{
	__atomic_store_n(&g.tid[k], vgettid(), __ATOMIC_RELEASE);
}

static uint8_t pattern(unsigned int seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

static void check_data(const char *who, const uint8_t *buf, ssize_t n, size_t want,
		       unsigned int seed, char *res, size_t ressz)
{
	if (n < 0) {
		snprintf(res, ressz, "bad %s failed: %s", who, strerror(errno));
		return;
	}
	if ((size_t)n != want) {
		snprintf(res, ressz, "bad %s returned %zd, wanted %zu", who, n, want);
		return;
	}
	for (size_t i = 0; i < want; i++)
		if (buf[i] != pattern(seed, i)) {
			snprintf(res, ressz, "bad byte %zu", i);
			return;
		}
	snprintf(res, ressz, "ok %zu", want);
}

static void rt_mask(int how)
{
	sigset_t s;

	sigemptyset(&s);
	for (int i = 1; i <= NSIG_RT; i++)
		sigaddset(&s, SIGRTMIN + i);
	pthread_sigmask(how, &s, NULL);
}

static void done(unsigned long *ctr)
{
	pthread_mutex_lock(&g.mu);
	(*ctr)++;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
}

/* ---- threads ---------------------------------------------------------- */

static void *read_thread(void *arg)
{
	static uint8_t buf[65536];

	(void)arg;
	publish(K_READ);
	for (;;) {
		ssize_t n = read(g.read_pipe[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_read, 1);
			verr("read thread: EINTR");
			continue;
		}
		if (n == 0)
			return NULL;
		pthread_mutex_lock(&g.mu);
		check_data("read()", buf, n, g.read_len, g.read_seed, g.read_res,
			   sizeof(g.read_res));
		if (strncmp(g.read_res, "ok", 2))
			verr("read thread: %s", g.read_res);
		g.read_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
	}
}

static void *sleep_thread(void *arg)
{
	(void)arg;
	publish(K_SLEEP);
	for (;;) {
		struct timespec ts = { 0, (long)SLEEP_NS }, rem;
		uint64_t t0 = vnow_ns(), dt;
		int r = nanosleep(&ts, &rem);

		dt = vnow_ns() - t0;
		if (r) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_sleep, 1);
			verr("sleep thread: nanosleep() failed: %s", strerror(errno));
		} else if (dt < SLEEP_NS) {
			verr("sleep thread: nanosleep() returned after %llu us",
			     (unsigned long long)(dt / 1000));
		}
		done(&g.sleep_done);
	}
	return NULL;
}

static void *epoll_thread(void *arg)
{
	static uint8_t buf[65536];

	(void)arg;
	publish(K_EPOLL);
	for (;;) {
		struct epoll_event ev;
		int r = epoll_wait(g.epfd, &ev, 1, -1);
		ssize_t n;

		if (r < 0) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_epoll, 1);
			verr("epoll thread: epoll_wait() failed: %s", strerror(errno));
			continue;
		}
		n = read(g.epoll_pipe[0], buf, sizeof(buf));
		if (n == 0)
			return NULL;
		pthread_mutex_lock(&g.mu);
		check_data("read() after epoll_wait()", buf, n, g.epoll_len, g.epoll_seed,
			   g.epoll_res, sizeof(g.epoll_res));
		if (strncmp(g.epoll_res, "ok", 2))
			verr("epoll thread: %s", g.epoll_res);
		g.epoll_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
	}
}

static void *futex_thread(void *arg)
{
	unsigned int seen = 0;

	(void)arg;
	publish(K_FUTEX);
	for (;;) {
		while (atomic_load(&futex_word) == seen) {
			long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, seen, NULL,
					 NULL, 0);

			if (r < 0 && errno == EINTR) {
				atomic_fetch_add(&eintr_futex, 1);
				verr("futex thread: EINTR");
			} else if (r < 0 && errno != EAGAIN) {
				verr("futex thread: %s", strerror(errno));
			} else if (r == 0 && atomic_load(&futex_word) == seen) {
				verr("futex thread: FUTEX_WAIT returned 0 without a wake-up");
			}
		}
		seen = atomic_load(&futex_word);
		done(&g.futex_done);
	}
	return NULL;
}

static void *accept_thread(void *arg)
{
	(void)arg;
	publish(K_ACCEPT);
	for (;;) {
		int c = accept4(g.lsock, NULL, NULL, SOCK_CLOEXEC);
		char b = 0;

		if (c < 0) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_accept, 1);
			verr("accept thread: accept() failed: %s", strerror(errno));
			continue;
		}
		if (read(c, &b, 1) != 1 || b != 'a')
			verr("accept thread: bad data from the connection");
		close(c);
		done(&g.accept_done);
	}
	return NULL;
}

static void *poll_thread(void *arg)
{
	(void)arg;
	publish(K_POLL);
	for (;;) {
		struct pollfd p = { .fd = g.poll_pipe[0], .events = POLLIN };
		int r = poll(&p, 1, -1);
		char b;

		if (r < 0) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_poll, 1);
			verr("poll thread: poll() failed: %s", strerror(errno));
			continue;
		}
		if (r != 1 || read(g.poll_pipe[0], &b, 1) != 1) {
			verr("poll thread: poll() returned %d without data", r);
			continue;
		}
		done(&g.poll_done);
	}
	return NULL;
}

static void *hammer_thread(void *arg)
{
	enum { SLOTS = 256 };
	void *slot[SLOTS] = { 0 };
	int k = (int)(intptr_t)arg;
	uint64_t x = 0x2545f4914f6cdd1dull ^ (uint64_t)vnow_ns() ^ (uint64_t)k;
	unsigned long ops = 0;

	publish(k);
	for (;;) {
		unsigned int i;
		size_t sz;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = (unsigned int)(x % SLOTS);
		sz = (x >> 20) % 16 ? 1 + (x >> 32) % 4096 : 1 + (x >> 32) % (512 * 1024);
		if ((x >> 40) % 4 == 0 && slot[i]) {
			void *p = realloc(slot[i], sz);

			if (p)
				slot[i] = p;
		} else {
			free(slot[i]);
			slot[i] = (x >> 44) % 8 ? malloc(sz) : calloc(1, sz);
		}
		if (slot[i])
			((volatile char *)slot[i])[0] = (char)x;
		if (!(++ops % 512)) {
			struct timespec ts = { 0, 300000 };

			atomic_fetch_add(&hammer_ops, 512);
			/* the RT signals reach this thread: an EINTR here is fine */
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	return NULL;
}

static void *regs_thread(void *arg)
{
	static struct regs_io io[2];
	static uint8_t buf[2][REGS_LEN];
	int which = (int)(intptr_t)arg;
	unsigned int round = (unsigned int)which * 1000u;

	publish(which ? K_REGS2 : K_REGS);
	for (;;) {
		char res[256] = "ok";
		unsigned int seed;

		regs_fill(&io[which], round, g.regs_pipe[which][0], buf[which], REGS_LEN);
		g.rmode->block(&io[which]);
		if (io[which].ret == 0)
			return NULL;
		pthread_mutex_lock(&g.mu);
		seed = g.regs_seed;
		pthread_mutex_unlock(&g.mu);
		if (io[which].ret < 0) {
			snprintf(res, sizeof(res), "bad read syscall returned %lld",
				 (long long)io[which].ret);
			if (io[which].ret == -EINTR)
				atomic_fetch_add(&eintr_regs, 1);
		} else if ((uint64_t)io[which].ret != REGS_LEN) {
			snprintf(res, sizeof(res), "bad read syscall returned %lld",
				 (long long)io[which].ret);
		} else {
			char why[200];

			for (size_t k = 0; k < REGS_LEN; k++)
				if (buf[which][k] != pattern(seed, k)) {
					snprintf(res, sizeof(res), "bad data byte %zu", k);
					break;
				}
			if (!strcmp(res, "ok") && regs_check(&io[which], g.rmode, why, sizeof(why)))
				snprintf(res, sizeof(res), "bad %s", why);
		}
		if (strncmp(res, "ok", 2)) {
			atomic_fetch_add(&regs_bad, 1);
			verr("%s thread (%s): %s", which ? "regs2" : "regs", g.rmode->name, res);
		}
		pthread_mutex_lock(&g.mu);
		snprintf(g.regs_res[which], sizeof(g.regs_res[which]), "%s", res);
		if (strncmp(res, "ok", 2) && !g.regs_firstbad[0])
			snprintf(g.regs_firstbad, sizeof(g.regs_firstbad), "%s", res);
		g.regs_done[which]++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
		round++;
	}
}

static void *spin_thread(void *arg)
{
	static struct regs_io io;
	static uint8_t dummy[8];
	unsigned int round = 7777;

	(void)arg;
	publish(K_SPIN);
	for (;;) {
		char why[200];

		regs_fill(&io, round++, 3, dummy, SPIN_LOOPS);
		if (!g.rmode->spin) {
			atomic_fetch_add(&spin_rounds, 1);
			sched_yield();
			continue;
		}
		g.rmode->spin(&io);
		if ((uint64_t)io.ret != (uint64_t)(uintptr_t)&io) {
			atomic_fetch_add(&regs_bad, 1);
			verr("spin thread (%s): rax=0x%llx want 0x%llx", g.rmode->name,
			     (unsigned long long)io.ret, (unsigned long long)(uintptr_t)&io);
		} else if (regs_check(&io, g.rmode, why, sizeof(why))) {
			atomic_fetch_add(&regs_bad, 1);
			verr("spin thread (%s): %s", g.rmode->name, why);
		}
		atomic_fetch_add(&spin_rounds, 1);
		/* half a core at most: the machine has two */
		if (!(round % 4)) {
			struct timespec ts = { 0, 500000 };

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	return NULL;
}

static void *sig_thread(void *arg)
{
	int which = (int)(intptr_t)arg;
	char c;

	publish(which ? K_SIG2 : K_SIG);
	rt_mask(SIG_UNBLOCK);
	for (;;) {
		ssize_t n = read(g.sig_pipe[which][0], &c, 1);

		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_sig, 1);
			verr("sig thread: read() failed with EINTR");
			continue;
		}
		if (n <= 0)
			return NULL;
	}
}

static void *ticker_thread(void *arg)
{
	struct timespec ts = { 0, (long)TICK_NS };
	uint64_t prev;

	(void)arg;
	publish(K_TICKER);
	prev = vnow_ns();
	for (;;) {
		int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		uint64_t now = vnow_ns(), gap = now - prev;

		if (r == EINTR) {
			atomic_fetch_add(&eintr_tick, 1);
			verr("ticker thread: clock_nanosleep() failed with EINTR");
		}
		prev = now;
		if (gap > atomic_load(&maxgap_ns))
			atomic_store(&maxgap_ns, gap);
		atomic_fetch_add(&n_ticks, 1);
	}
	return NULL;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	atomic_fetch_add(&sig_count, 1);
	atomic_fetch_add(&sig_sum, (long)si->si_value.sival_int);
}

/* ---- commands ----------------------------------------------------------- */

static bool wait_ctr(unsigned long *ctr, unsigned long start)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_MS / 1000;
	while (*ctr == start)
		if (pthread_cond_timedwait(&g.cv, &g.mu, &dl) == ETIMEDOUT)
			return *ctr != start;
	return true;
}

static const long nr_read[] = { SYS_read };
static const long nr_sleep[] = { VSYS_NANOSLEEP, SYS_clock_nanosleep };
static const long nr_epoll[] = { VSYS_EPOLL_WAIT, SYS_epoll_pwait, 441 };
static const long nr_futex[] = { SYS_futex };
static const long nr_accept[] = { SYS_accept, SYS_accept4 };
static const long nr_poll[] = { VSYS_POLL, SYS_ppoll };

static bool parked(int k, const long *nrs, int n)
{
	return vwait_in_syscall(g.tid[k], nrs, n, WAIT_MS);
}

static void cmd_feed(int fd, const char *arg, bool use_epoll)
{
	static uint8_t buf[FEED_MAX];
	const char *what = use_epoll ? "epoll" : "read";
	long n = strtol(arg, NULL, 10);
	unsigned long start;
	unsigned int seed;
	char res[256];

	if (n < 1 || n > FEED_MAX) {
		vreply(fd, "%s bad usage", what);
		return;
	}
	pthread_mutex_lock(&g.mu);
	if (use_epoll) {
		seed = ++g.epoll_seed;
		g.epoll_len = (size_t)n;
		start = g.epoll_done;
	} else {
		seed = ++g.read_seed;
		g.read_len = (size_t)n;
		start = g.read_done;
	}
	pthread_mutex_unlock(&g.mu);
	for (long i = 0; i < n; i++)
		buf[i] = pattern(seed, (size_t)i);
	if (vwrite_all(use_epoll ? g.epoll_pipe[1] : g.read_pipe[1], buf, (size_t)n))
		vdie("write feed");
	pthread_mutex_lock(&g.mu);
	if (!wait_ctr(use_epoll ? &g.epoll_done : &g.read_done, start))
		snprintf(res, sizeof(res), "bad timeout: thread did not wake");
	else
		snprintf(res, sizeof(res), "%s", use_epoll ? g.epoll_res : g.read_res);
	pthread_mutex_unlock(&g.mu);
	if (use_epoll ? !parked(K_EPOLL, nr_epoll, 3) : !parked(K_READ, nr_read, 1))
		snprintf(res, sizeof(res), "bad thread did not block again");
	vreply(fd, "%s %s", what, res);
}

static void cmd_futex(int fd)
{
	unsigned long start;
	bool ok;

	pthread_mutex_lock(&g.mu);
	start = g.futex_done;
	pthread_mutex_unlock(&g.mu);
	atomic_fetch_add(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_mutex_lock(&g.mu);
	ok = wait_ctr(&g.futex_done, start);
	pthread_mutex_unlock(&g.mu);
	if (!ok)
		vreply(fd, "futex bad timeout: thread did not wake");
	else if (!parked(K_FUTEX, nr_futex, 1))
		vreply(fd, "futex bad thread did not block again");
	else
		vreply(fd, "futex ok");
}

static void cmd_sleepwait(int fd, const char *arg)
{
	long k = strtol(arg, NULL, 10);
	unsigned long target;
	struct timespec dl;
	bool ok = true;

	if (k < 1 || k > 100)
		k = 1;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&g.mu);
	target = g.sleep_done + (unsigned long)k;
	while (g.sleep_done < target && ok)
		if (pthread_cond_timedwait(&g.cv, &g.mu, &dl) == ETIMEDOUT)
			ok = g.sleep_done >= target;
	target = g.sleep_done;
	pthread_mutex_unlock(&g.mu);
	if (ok)
		vreply(fd, "sleep ok %lu", target);
	else
		vreply(fd, "sleep bad timeout after %lu sleeps", target);
}

static void cmd_regs(int fd)
{
	uint8_t buf[REGS_LEN];
	unsigned long start[2];
	unsigned int seed;
	char res[512] = "ok";

	pthread_mutex_lock(&g.mu);
	seed = ++g.regs_seed;
	start[0] = g.regs_done[0];
	start[1] = g.regs_done[1];
	pthread_mutex_unlock(&g.mu);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(seed, i);
	for (int w = 0; w < 2; w++)
		if (vwrite_all(g.regs_pipe[w][1], buf, sizeof(buf)))
			vdie("write regs");
	pthread_mutex_lock(&g.mu);
	for (int w = 0; w < 2; w++) {
		if (!wait_ctr(&g.regs_done[w], start[w]))
			snprintf(res, sizeof(res), "bad timeout: regs thread %d did not wake", w);
		else if (strncmp(g.regs_res[w], "ok", 2) && !strcmp(res, "ok"))
			snprintf(res, sizeof(res), "%s", g.regs_res[w]);
	}
	if (g.regs_firstbad[0] && !strcmp(res, "ok"))
		snprintf(res, sizeof(res), "%s (earlier round)", g.regs_firstbad);
	g.regs_firstbad[0] = '\0';
	pthread_mutex_unlock(&g.mu);
	if (!parked(K_REGS, nr_read, 1) || !parked(K_REGS2, nr_read, 1))
		snprintf(res, sizeof(res), "bad thread did not block again");
	vreply(fd, "regs %s", res);
}

/* accept, poll, spin and the hammers: each must make progress. */
static void cmd_check(int fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(g.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned long start, spins = atomic_load(&spin_rounds), hops = atomic_load(&hammer_ops);
	uint64_t end = vnow_ns() + WAIT_MS * 1000000ull;
	char b = 'a';
	int c;
	bool ok;

	pthread_mutex_lock(&g.mu);
	start = g.accept_done;
	pthread_mutex_unlock(&g.mu);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) || write(c, &b, 1) != 1) {
		vreply(fd, "check bad connect: %s", strerror(errno));
		if (c >= 0)
			close(c);
		return;
	}
	pthread_mutex_lock(&g.mu);
	ok = wait_ctr(&g.accept_done, start);
	pthread_mutex_unlock(&g.mu);
	close(c);
	if (!ok || !parked(K_ACCEPT, nr_accept, 2)) {
		vreply(fd, "check bad accept thread did not %s", ok ? "block again" : "wake");
		return;
	}
	pthread_mutex_lock(&g.mu);
	start = g.poll_done;
	pthread_mutex_unlock(&g.mu);
	if (vwrite_all(g.poll_pipe[1], &b, 1))
		vdie("write poll");
	pthread_mutex_lock(&g.mu);
	ok = wait_ctr(&g.poll_done, start);
	pthread_mutex_unlock(&g.mu);
	if (!ok || !parked(K_POLL, nr_poll, 2)) {
		vreply(fd, "check bad poll thread did not %s", ok ? "block again" : "wake");
		return;
	}
	while ((atomic_load(&spin_rounds) == spins || atomic_load(&hammer_ops) == hops) &&
	       vnow_ns() < end) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	if (atomic_load(&spin_rounds) == spins)
		vreply(fd, "check bad spin thread made no progress");
	else if (atomic_load(&hammer_ops) == hops)
		vreply(fd, "check bad hammers made no progress");
	else
		vreply(fd, "check ok");
}

static void cmd_state(int fd)
{
	long maps, anon_odd;

	vcount_maps(&maps, &anon_odd);
	vreply(fd,
	       "state pid=%d errors=%lu eintr_main=%lu eintr_read=%lu eintr_sleep=%lu"
	       " eintr_epoll=%lu eintr_futex=%lu eintr_accept=%lu eintr_poll=%lu eintr_regs=%lu"
	       " eintr_tick=%lu eintr_sig=%lu regs_bad=%lu spin_rounds=%lu hammer_ops=%lu"
	       " ticks=%lu maxgap_us=%lu sig_count=%lu sig_sum=%ld fds=%ld maps=%ld anon_odd=%ld",
	       (int)getpid(), atomic_load(&n_errors), atomic_load(&eintr_main),
	       atomic_load(&eintr_read), atomic_load(&eintr_sleep), atomic_load(&eintr_epoll),
	       atomic_load(&eintr_futex), atomic_load(&eintr_accept), atomic_load(&eintr_poll),
	       atomic_load(&eintr_regs), atomic_load(&eintr_tick), atomic_load(&eintr_sig),
	       atomic_load(&regs_bad), atomic_load(&spin_rounds), atomic_load(&hammer_ops),
	       atomic_load(&n_ticks), atomic_load(&maxgap_ns) / 1000, atomic_load(&sig_count),
	       atomic_load(&sig_sum), vcount_fds(), maps, anon_odd);
}

static void start_thread(void *(*fn)(void *), intptr_t arg)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, (void *)arg);

	if (r) {
		errno = r;
		vdie("pthread_create");
	}
	pthread_detach(t);
}

static void xpipe(int p[2], int flags)
{
	if (pipe2(p, O_CLOEXEC | flags))
		vdie("pipe2");
}

static void setup_socket(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	g.lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (g.lsock < 0 || bind(g.lsock, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(g.lsock, 16) || getsockname(g.lsock, (struct sockaddr *)&a, &al))
		vdie("listening socket");
	g.port = ntohs(a.sin_port);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct epoll_event ev;
	struct vline line = { .len = 0 };
	struct vfds fds;
	char cmd[1024];
	char c = 'R';
	bool all;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	g.tid[K_MAIN] = vgettid();
	g.rmode = pick_regs_mode();

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 1; i <= NSIG_RT; i++)
		if (sigaction(SIGRTMIN + i, &sa, NULL))
			vdie("sigaction");
	rt_mask(SIG_BLOCK); /* inherited by every thread; unblocked where wanted */

	xpipe(g.read_pipe, 0);
	xpipe(g.epoll_pipe, O_NONBLOCK);
	xpipe(g.regs_pipe[0], 0);
	xpipe(g.regs_pipe[1], 0);
	xpipe(g.sig_pipe[0], 0);
	xpipe(g.sig_pipe[1], 0);
	xpipe(g.poll_pipe, 0);
	setup_socket();
	g.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g.epfd < 0)
		vdie("epoll_create1");
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = g.epoll_pipe[0];
	if (epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.epoll_pipe[0], &ev))
		vdie("epoll_ctl");

	start_thread(read_thread, 0);
	start_thread(sleep_thread, 0);
	start_thread(epoll_thread, 0);
	start_thread(futex_thread, 0);
	start_thread(accept_thread, 0);
	start_thread(poll_thread, 0);
	start_thread(regs_thread, 0);
	start_thread(regs_thread, 1);
	start_thread(sig_thread, 0);
	start_thread(sig_thread, 1);
	start_thread(ticker_thread, 0);
	/* The hammers and the spinner take the signals as well. */
	rt_mask(SIG_UNBLOCK);
	start_thread(hammer_thread, K_HAMMER1);
	start_thread(hammer_thread, K_HAMMER2);
	start_thread(hammer_thread, K_HAMMER3);
	start_thread(spin_thread, 0);

	do {
		all = true;
		for (int k = 0; k < K_NR; k++)
			if (!__atomic_load_n(&g.tid[k], __ATOMIC_ACQUIRE))
				all = false;
		if (!all)
			sched_yield();
	} while (!all);
	if (!parked(K_READ, nr_read, 1) || !parked(K_EPOLL, nr_epoll, 3) ||
	    !parked(K_FUTEX, nr_futex, 1) || !parked(K_REGS, nr_read, 1) ||
	    !parked(K_REGS2, nr_read, 1) || !parked(K_SIG, nr_read, 1) ||
	    !parked(K_SIG2, nr_read, 1) || !parked(K_SLEEP, nr_sleep, 2) ||
	    !parked(K_ACCEPT, nr_accept, 2) || !parked(K_POLL, nr_poll, 2)) {
		fprintf(stderr, "torture: threads did not park\n");
		return 3;
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	close(fds.ready);

	for (;;) {
		unsigned long ei = 0;
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), &ei);
		char *arg;

		if (ei) {
			atomic_fetch_add(&eintr_main, ei);
			verr("main thread: read() failed with EINTR");
		}
		if (n < 0)
			return 0;
		arg = strchr(cmd, ' ');
		if (arg)
			*arg++ = '\0';
		else
			arg = cmd + n;
		if (!strcmp(cmd, "ping")) {
			vreply(fds.reply, "pong");
		} else if (!strcmp(cmd, "tids")) {
			char buf[1024];
			size_t len = (size_t)snprintf(buf, sizeof(buf), "tids pid=%d", (int)getpid());

			for (int k = 0; k < K_NR; k++)
				len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s=%d",
							kind_names[k], (int)g.tid[k]);
			vreply(fds.reply, "%s xarena=0 regs_mode=%s", buf, g.rmode->name);
		} else if (!strcmp(cmd, "alltids")) {
			char buf[1024];
			size_t len = (size_t)snprintf(buf, sizeof(buf), "alltids");

			for (int k = 0; k < K_NR; k++)
				len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %d",
							(int)g.tid[k]);
			vreply(fds.reply, "%s", buf);
		} else if (!strcmp(cmd, "state")) {
			cmd_state(fds.reply);
		} else if (!strcmp(cmd, "feed")) {
			cmd_feed(fds.reply, arg, false);
		} else if (!strcmp(cmd, "epoll")) {
			cmd_feed(fds.reply, arg, true);
		} else if (!strcmp(cmd, "futex")) {
			cmd_futex(fds.reply);
		} else if (!strcmp(cmd, "sleepwait")) {
			cmd_sleepwait(fds.reply, arg);
		} else if (!strcmp(cmd, "regs")) {
			cmd_regs(fds.reply);
		} else if (!strcmp(cmd, "check")) {
			cmd_check(fds.reply);
		} else if (!strcmp(cmd, "tickreset")) {
			atomic_store(&maxgap_ns, 0);
			vreply(fds.reply, "tickreset ok");
		} else if (!strcmp(cmd, "lasterr")) {
			pthread_mutex_lock(&g.mu);
			vreply(fds.reply, "lasterr %s", g.lasterr[0] ? g.lasterr : "none");
			g.lasterr[0] = '\0';
			pthread_mutex_unlock(&g.mu);
		} else if (!strcmp(cmd, "quit")) {
			vreply(fds.reply, "bye");
			return 0;
		} else {
			vreply(fds.reply, "error unknown command '%s'", cmd);
		}
	}
}
