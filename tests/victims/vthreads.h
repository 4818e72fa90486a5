/* SPDX-License-Identifier: MIT */
/*
 * The parked threads jemalloc_victim and jemalloc_torture (glibc_torture,
 * tcmalloc_torture) share, with the commands that wake them and the
 * command loop around them:
 *
 *   read    read() on a pipe that main feeds on "feed N"
 *   sleep   nanosleep() loop; any early or failed wake-up is an error
 *   epoll   epoll_wait() on a pipe that main feeds on "epoll N"
 *   futex   FUTEX_WAIT on a word that main bumps on "futex"
 *   ticker  1 ms clock_nanosleep loop, records the largest gap, and
 *           every gap of GAPLOG_MIN_NS or more with the time it ended
 *   sig     read() on a pipe; the thread that takes the RT signals
 *           (SA_SIGINFO | SA_RESTART: the handler counts deliveries and
 *           sums si_value)
 *
 * and the commands ping, feed N, epoll N, futex, sleepwait K, dlnames NAME,
 * tickreset, gapsince NS, lasterr and quit (see jemalloc_victim.c).  Each victim adds its own
 * threads and commands, and its own "tids" and "state".
 *
 * Include once, after an enum of the victim's threads that names at least
 * K_MAIN, K_READ, K_SLEEP, K_EPOLL, K_FUTEX, K_TICKER and K_SIG (a second
 * sig thread is K_SIG + 1), and K_NR.  Every thread publishes its tid in
 * vt.tid[kind] once it runs.
 */
#ifndef VTHREADS_H
#define VTHREADS_H

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <linux/futex.h>

#include "vcommon.h"

#define TICK_NS		1000000ull
#define GAPLOG_MIN_NS	4000000ull	/* gaps this long go into the log */
#define GAPLOG_LEN	1024
#define WAIT_MS		10000
#define FEED_MAX	4096
#define VSIG_THREADS	2

/*
 * What the victims that share these threads differ in.  The flags keep
 * jemalloc_victim's and jemalloc_torture's own, older, behaviour.
 */
struct vconf {
	const char *who;	/* names the victim on stderr */
	uint64_t sleep_ns;	/* the sleep thread's nanosleep */
	int nsig_rt;		/* SIGRTMIN+1..SIGRTMIN+nsig_rt have the counting handler */
	/*
	 * An EINTR of epoll_wait, or of main's read, is an error as well
	 * (errors=, lasterr), not only counted in eintr_epoll / eintr_main.
	 * t_kill tells the epoll EINTR a killed heapctl leaves from harm by
	 * errors= staying put.
	 */
	bool epoll_eintr_err, main_eintr_err;
	bool feed_lax;		/* "feed N" takes N as strtol() does, trailing junk and all */
	void (*woke)(int kind);	/* called by each shared thread when it starts and wakes */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const struct vconf *conf;

	pid_t tid[K_NR];
	int read_pipe[2], epoll_pipe[2], sig_pipe[VSIG_THREADS][2];
	int epfd;

	/* feed/epoll: what main wrote, and what the reader made of it */
	size_t read_len, epoll_len;
	unsigned int read_seed, epoll_seed;
	unsigned long read_done, epoll_done, futex_done, sleep_done, sig_done[VSIG_THREADS];
	char read_res[256], epoll_res[256];

	char lasterr[512];
} vt = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static atomic_ulong n_errors;
static atomic_ulong eintr_main, eintr_read, eintr_sleep, eintr_epoll, eintr_futex;
static atomic_ulong eintr_tick, eintr_sig;
static atomic_ulong n_ticks, maxgap_ns, sig_count;
/* the ticker's long gaps: when each ended (CLOCK_MONOTONIC ns) and how long */
static struct {
	atomic_ullong end_ns, gap_ns;
} gaplog[GAPLOG_LEN];
static atomic_uint gaplog_next;
static atomic_long sig_sum;
static atomic_uint futex_word;

static const long nr_read[] = { SYS_read };
static const long nr_sleep[] = { VSYS_NANOSLEEP, SYS_clock_nanosleep };
static const long nr_epoll[] = { VSYS_EPOLL_WAIT, SYS_epoll_pwait, 441 /* epoll_pwait2 */ };
static const long nr_futex[] = { SYS_futex };

__attribute__((format(printf, 1, 2)))
static void verr(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&n_errors, 1);
	fprintf(stderr, "%s: error: %s\n", vt.conf->who, buf);
	pthread_mutex_lock(&vt.mu);
	if (!vt.lasterr[0])
		snprintf(vt.lasterr, sizeof(vt.lasterr), "%s", buf);
	pthread_mutex_unlock(&vt.mu);
}

/* Threads publish their own tid; main waits for all of them (vwait_tids()). */
static void vpublish(int kind)
{
	__atomic_store_n(&vt.tid[kind], vgettid(), __ATOMIC_RELEASE);
}

static void vwoke(int kind)
{
	if (vt.conf->woke)
		vt.conf->woke(kind);
}

/* One more round of a thread done: wake main if it waits for it. */
static void vdone(unsigned long *ctr)
{
	pthread_mutex_lock(&vt.mu);
	(*ctr)++;
	pthread_cond_broadcast(&vt.cv);
	pthread_mutex_unlock(&vt.mu);
}

static uint8_t vpattern(unsigned int seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

/* Check n bytes received against what main wrote; fills res. */
static void vcheck_data(const char *who, const uint8_t *buf, ssize_t n, size_t want,
			unsigned int seed, char *res, size_t ressz)
{
	size_t i;

	if (n < 0) {
		snprintf(res, ressz, "bad %s failed: %s", who, strerror(errno));
		return;
	}
	if ((size_t)n != want) {
		snprintf(res, ressz, "bad %s returned %zd, wanted %zu", who, n, want);
		return;
	}
	for (i = 0; i < want; i++) {
		if (buf[i] != vpattern(seed, i)) {
			snprintf(res, ressz, "bad byte %zu is 0x%02x, wanted 0x%02x", i, buf[i],
				 vpattern(seed, i));
			return;
		}
	}
	snprintf(res, ressz, "ok %zu", want);
}

static void vrt_mask(int how)
{
	sigset_t s;
	int i;

	sigemptyset(&s);
	for (i = 1; i <= vt.conf->nsig_rt; i++)
		sigaddset(&s, SIGRTMIN + i);
	pthread_sigmask(how, &s, NULL);
}

static void von_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* the value before the count: see vsig_read() */
	atomic_fetch_add(&sig_sum, (long)si->si_value.sival_int);
	atomic_fetch_add(&sig_count, 1);
}

/*
 * The count, then the sum: every signal counted has its value in the sum,
 * even with a handler stopped between its two adds (heapctl may borrow a
 * thread right there).  Read the other way round, a tally could find every
 * signal counted and one value missing.
 */
static void vsig_read(unsigned long *count, long *sum)
{
	*count = atomic_load(&sig_count);
	*sum = atomic_load(&sig_sum);
}

/* ---------------------------------------------------------------------
 * Threads.
 */
static void *vread_thread(void *arg)
{
	static uint8_t buf[65536];
	char bad[256];

	(void)arg;
	vwoke(K_READ);
	vpublish(K_READ);
	for (;;) {
		ssize_t n = read(vt.read_pipe[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_read, 1);
			verr("read thread: read() failed with EINTR");
			continue;
		}
		if (n == 0)
			return NULL;
		vwoke(K_READ);
		pthread_mutex_lock(&vt.mu);
		vcheck_data("read()", buf, n, vt.read_len, vt.read_seed, vt.read_res,
			    sizeof(vt.read_res));
		/* verr() takes vt.mu itself: report after letting it go */
		snprintf(bad, sizeof(bad), "%s", strncmp(vt.read_res, "ok", 2) ? vt.read_res : "");
		vt.read_done++;
		pthread_cond_broadcast(&vt.cv);
		pthread_mutex_unlock(&vt.mu);
		if (bad[0])
			verr("read thread: %s", bad);
	}
}

static void *vsleep_thread(void *arg)
{
	uint64_t sleep_ns = vt.conf->sleep_ns;

	(void)arg;
	vwoke(K_SLEEP);
	vpublish(K_SLEEP);
	for (;;) {
		struct timespec ts = { 0, (long)sleep_ns }, rem;
		uint64_t t0 = vnow_ns(), dt;
		int r = nanosleep(&ts, &rem);

		dt = vnow_ns() - t0;
		if (r) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_sleep, 1);
			verr("sleep thread: nanosleep() failed: %s (after %llu us)",
			     strerror(errno), (unsigned long long)(dt / 1000));
		} else if (dt < sleep_ns) {
			verr("sleep thread: nanosleep() returned after %llu us, asked %llu us",
			     (unsigned long long)(dt / 1000),
			     (unsigned long long)(sleep_ns / 1000));
		}
		vwoke(K_SLEEP);
		vdone(&vt.sleep_done);
	}
	return NULL;
}

static void *vepoll_thread(void *arg)
{
	static uint8_t buf[65536];
	char bad[256];

	(void)arg;
	vwoke(K_EPOLL);
	vpublish(K_EPOLL);
	for (;;) {
		struct epoll_event ev;
		int r = epoll_wait(vt.epfd, &ev, 1, -1);
		ssize_t n;

		if (r < 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintr_epoll, 1);
				if (vt.conf->epoll_eintr_err)
					verr("epoll thread: epoll_wait() failed with EINTR");
				else
					fprintf(stderr, "%s: epoll thread: epoll_wait() failed"
						" with EINTR\n", vt.conf->who);
			} else {
				verr("epoll thread: epoll_wait() failed: %s", strerror(errno));
			}
			continue;
		}
		if (r != 1 || ev.data.fd != vt.epoll_pipe[0]) {
			verr("epoll thread: epoll_wait() returned %d, fd %d", r, ev.data.fd);
			continue;
		}
		n = read(vt.epoll_pipe[0], buf, sizeof(buf));
		if (n == 0)
			return NULL;
		vwoke(K_EPOLL);
		pthread_mutex_lock(&vt.mu);
		vcheck_data("read() after epoll_wait()", buf, n, vt.epoll_len, vt.epoll_seed,
			    vt.epoll_res, sizeof(vt.epoll_res));
		/* verr() takes vt.mu itself: report after letting it go */
		snprintf(bad, sizeof(bad), "%s", strncmp(vt.epoll_res, "ok", 2) ? vt.epoll_res : "");
		vt.epoll_done++;
		pthread_cond_broadcast(&vt.cv);
		pthread_mutex_unlock(&vt.mu);
		if (bad[0])
			verr("epoll thread: %s", bad);
	}
}

static void *vfutex_thread(void *arg)
{
	unsigned int seen = 0;

	(void)arg;
	vwoke(K_FUTEX);
	vpublish(K_FUTEX);
	for (;;) {
		while (atomic_load(&futex_word) == seen) {
			long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, seen, NULL,
					 NULL, 0);

			if (r < 0 && errno == EINTR) {
				atomic_fetch_add(&eintr_futex, 1);
				verr("futex thread: FUTEX_WAIT failed with EINTR");
			} else if (r < 0 && errno != EAGAIN) {
				verr("futex thread: FUTEX_WAIT failed: %s", strerror(errno));
			} else if (r == 0 && atomic_load(&futex_word) == seen) {
				/* Nobody woke us: the syscall was cut short. */
				verr("futex thread: FUTEX_WAIT returned 0 without a wake-up");
			}
		}
		seen = atomic_load(&futex_word);
		vwoke(K_FUTEX);
		vdone(&vt.futex_done);
	}
	return NULL;
}

static void *vticker_thread(void *arg)
{
	struct timespec ts = { 0, (long)TICK_NS };
	uint64_t prev;

	(void)arg;
	vwoke(K_TICKER);
	vpublish(K_TICKER);
	prev = vnow_ns();
	for (;;) {
		int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		uint64_t now = vnow_ns(), gap = now - prev;

		if (r == EINTR) {
			atomic_fetch_add(&eintr_tick, 1);
			verr("ticker thread: clock_nanosleep() failed with EINTR");
		} else if (r) {
			verr("ticker thread: clock_nanosleep() failed: %s", strerror(r));
		}
		prev = now;
		if (gap > atomic_load(&maxgap_ns))
			atomic_store(&maxgap_ns, gap);
		if (gap >= GAPLOG_MIN_NS) {
			unsigned int i = atomic_fetch_add(&gaplog_next, 1) % GAPLOG_LEN;

			atomic_store(&gaplog[i].gap_ns, gap);
			atomic_store(&gaplog[i].end_ns, now);
		}
		if (!(atomic_fetch_add(&n_ticks, 1) % 16))
			vwoke(K_TICKER);
	}
	return NULL;
}

/* arg: which sig thread, 0 or 1; it is kind K_SIG + arg. */
static void *vsig_thread(void *arg)
{
	int which = (int)(intptr_t)arg;
	char c;

	vwoke(K_SIG + which);
	vpublish(K_SIG + which);
	vrt_mask(SIG_UNBLOCK);
	for (;;) {
		ssize_t n = read(vt.sig_pipe[which][0], &c, 1);

		if (n < 0 && errno == EINTR) {
			/* SA_RESTART is set: a handler run must not surface here. */
			atomic_fetch_add(&eintr_sig, 1);
			verr("sig thread: read() failed with EINTR");
			continue;
		}
		if (n <= 0)
			return NULL;
		vwoke(K_SIG + which);
		vdone(&vt.sig_done[which]);
	}
}

/* ---------------------------------------------------------------------
 * Setting up.
 */

/* Main's part: its tid, and the RT signals' handler, blocked until vrt_mask(SIG_UNBLOCK). */
static void vinit(const struct vconf *conf)
{
	struct sigaction sa;
	int i;

	vt.conf = conf;
	vt.tid[K_MAIN] = vgettid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = von_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 1; i <= conf->nsig_rt; i++)
		if (sigaction(SIGRTMIN + i, &sa, NULL))
			vdie("sigaction");
	/* inherited by every thread started from here; unblocked where wanted */
	vrt_mask(SIG_BLOCK);
}

static void vpipe(int p[2], int flags)
{
	if (pipe2(p, O_CLOEXEC | flags))
		vdie("pipe2");
}

/* The epoll thread's set: the read end of vt.epoll_pipe. */
static void vepoll_init(void)
{
	struct epoll_event ev;

	vt.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (vt.epfd < 0)
		vdie("epoll_create1");
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = vt.epoll_pipe[0];
	if (epoll_ctl(vt.epfd, EPOLL_CTL_ADD, vt.epoll_pipe[0], &ev))
		vdie("epoll_ctl");
}

static void vstart_thread(void *(*fn)(void *), intptr_t arg)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, (void *)arg);

	if (r) {
		errno = r;
		vdie("pthread_create");
	}
	pthread_detach(t);
}

/* The tids are written by the threads themselves. */
static void vwait_tids(void)
{
	bool all;
	int k;

	do {
		all = true;
		for (k = 0; k < K_NR; k++)
			if (!__atomic_load_n(&vt.tid[k], __ATOMIC_ACQUIRE))
				all = false;
		if (!all)
			sched_yield();
	} while (!all);
}

static bool vparked(int kind, const long *nrs, int n)
{
	return vwait_in_syscall(vt.tid[kind], nrs, n, WAIT_MS);
}

/* ---------------------------------------------------------------------
 * Commands.
 */

/* Wait until *ctr moves past start; returns false on timeout. Locked. */
static bool vwait_ctr(unsigned long *ctr, unsigned long start)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_MS / 1000;
	while (*ctr == start)
		if (pthread_cond_timedwait(&vt.cv, &vt.mu, &dl) == ETIMEDOUT)
			return *ctr != start;
	return true;
}

static void vcmd_feed(int fd, const char *arg, bool use_epoll)
{
	static uint8_t buf[FEED_MAX];
	const char *what = use_epoll ? "epoll" : "read";
	char *end;
	long n = strtol(arg, &end, 10);
	unsigned long start;
	char res[256];
	unsigned int seed;
	long i;

	if ((!vt.conf->feed_lax && (*arg == '\0' || *end)) || n < 1 || n > FEED_MAX) {
		vreply(fd, "%s bad usage", what);
		return;
	}
	pthread_mutex_lock(&vt.mu);
	if (use_epoll) {
		seed = ++vt.epoll_seed;
		vt.epoll_len = (size_t)n;
		start = vt.epoll_done;
	} else {
		seed = ++vt.read_seed;
		vt.read_len = (size_t)n;
		start = vt.read_done;
	}
	pthread_mutex_unlock(&vt.mu);
	for (i = 0; i < n; i++)
		buf[i] = vpattern(seed, (size_t)i);
	/* n <= PIPE_BUF: one atomic write, so one read() must take it all. */
	if (vwrite_all(use_epoll ? vt.epoll_pipe[1] : vt.read_pipe[1], buf, (size_t)n))
		vdie("write feed");
	pthread_mutex_lock(&vt.mu);
	if (!vwait_ctr(use_epoll ? &vt.epoll_done : &vt.read_done, start))
		snprintf(res, sizeof(res), "bad timeout: thread did not wake");
	else
		snprintf(res, sizeof(res), "%s", use_epoll ? vt.epoll_res : vt.read_res);
	pthread_mutex_unlock(&vt.mu);
	if (use_epoll ? !vparked(K_EPOLL, nr_epoll, 3) : !vparked(K_READ, nr_read, 1))
		snprintf(res, sizeof(res), "bad thread did not block again");
	vreply(fd, "%s %s", what, res);
}

static void vcmd_futex(int fd)
{
	unsigned long start;
	bool ok;

	pthread_mutex_lock(&vt.mu);
	start = vt.futex_done;
	pthread_mutex_unlock(&vt.mu);
	atomic_fetch_add(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_mutex_lock(&vt.mu);
	ok = vwait_ctr(&vt.futex_done, start);
	pthread_mutex_unlock(&vt.mu);
	if (!ok)
		vreply(fd, "futex bad timeout: thread did not wake");
	else if (!vparked(K_FUTEX, nr_futex, 1))
		vreply(fd, "futex bad thread did not block again");
	else
		vreply(fd, "futex ok");
}

static void vcmd_sleepwait(int fd, const char *arg)
{
	long k = strtol(arg, NULL, 10);
	unsigned long target;
	struct timespec dl;
	bool ok = true;

	if (k < 1 || k > 100)
		k = 1;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&vt.mu);
	target = vt.sleep_done + (unsigned long)k;
	while (vt.sleep_done < target && ok)
		if (pthread_cond_timedwait(&vt.cv, &vt.mu, &dl) == ETIMEDOUT)
			ok = vt.sleep_done >= target;
	target = vt.sleep_done;
	pthread_mutex_unlock(&vt.mu);
	if (ok)
		vreply(fd, "sleep ok %lu", target);
	else
		vreply(fd, "sleep bad timeout after %lu sleeps", target);
}

/*
 * The longest logged gap that ended after since_ns, in us; 0 when none
 * of GAPLOG_MIN_NS or more did.  It lets the harness ask about exactly
 * the window it watched another victim in.
 */
static unsigned long long vgap_since(unsigned long long since_ns)
{
	unsigned long long max = 0;

	for (unsigned int i = 0; i < GAPLOG_LEN; i++)
		if (atomic_load(&gaplog[i].end_ns) > since_ns &&
		    atomic_load(&gaplog[i].gap_ns) > max)
			max = atomic_load(&gaplog[i].gap_ns);
	return max / 1000;
}

/*
 * Tells the harness the victim is ready, then answers commands until
 * "quit" or EOF on the control pipe: the shared ones here, the victim's
 * own through own(), which returns false for a command it does not know.
 */
static void vserve(const struct vfds *fds, bool (*own)(int fd, const char *cmd, char *arg))
{
	struct vline line = { .len = 0 };
	char cmd[1024];
	char c = 'R';

	if (vwrite_all(fds->ready, &c, 1))
		vdie("write ready");
	close(fds->ready);

	for (;;) {
		unsigned long ei = 0;
		ssize_t n = vline_read(&line, fds->ctl, cmd, sizeof(cmd), &ei);
		char *arg;

		if (ei) {
			atomic_fetch_add(&eintr_main, ei);
			if (vt.conf->main_eintr_err)
				verr("main thread: read() failed with EINTR");
		}
		if (n < 0)
			return;
		arg = strchr(cmd, ' ');
		if (arg)
			*arg++ = '\0';
		else
			arg = cmd + n;

		if (!strcmp(cmd, "ping")) {
			vreply(fds->reply, "pong");
		} else if (!strcmp(cmd, "feed")) {
			vcmd_feed(fds->reply, arg, false);
		} else if (!strcmp(cmd, "epoll")) {
			vcmd_feed(fds->reply, arg, true);
		} else if (!strcmp(cmd, "futex")) {
			vcmd_futex(fds->reply);
		} else if (!strcmp(cmd, "sleepwait")) {
			vcmd_sleepwait(fds->reply, arg);
		} else if (!strcmp(cmd, "dlnames")) {
			vcmd_dlnames(fds->reply, arg);
		} else if (!strcmp(cmd, "tickreset")) {
			atomic_store(&maxgap_ns, 0);
			vreply(fds->reply, "tickreset ok");
		} else if (!strcmp(cmd, "gapsince")) {
			vreply(fds->reply, "gapsince %llu", vgap_since(strtoull(arg, NULL, 10)));
		} else if (!strcmp(cmd, "lasterr")) {
			pthread_mutex_lock(&vt.mu);
			vreply(fds->reply, "lasterr %s", vt.lasterr[0] ? vt.lasterr : "none");
			vt.lasterr[0] = '\0';
			pthread_mutex_unlock(&vt.mu);
		} else if (!strcmp(cmd, "quit")) {
			vreply(fds->reply, "bye");
			return;
		} else if (!own(fds->reply, cmd, arg)) {
			vreply(fds->reply, "error unknown command '%s'", cmd);
		}
	}
}

#endif /* VTHREADS_H */
