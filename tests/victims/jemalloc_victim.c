// SPDX-License-Identifier: MIT
/*
 * jemalloc_victim: a jemalloc-linked process for heapctl's integration
 * tests. Every thread parks in a different kind of blocking syscall, so a
 * test can borrow each of them with --tid and then check, from inside,
 * that the interrupted syscall completed as if nothing had happened.
 *
 * Usage: jemalloc_victim READY_FD CTL_FD REPLY_FD   (or see vcommon.h)
 * Start it with MALLOC_CONF=prof:true,prof_active:false,dirty_decay_ms:-1,
 * muzzy_decay_ms:-1 for the full test set. VICTIM_NO_HAMMER=1 leaves out
 * the hammer thread (a quiet control process; "hammer" is main's tid then).
 *
 * Threads:
 *   main    reads commands on CTL_FD (read, SA_RESTART)
 *   read    read() on a pipe that main feeds on "feed N"
 *   sleep   nanosleep(50 ms) loop; any early or failed wake-up is an error
 *   epoll   epoll_wait() on a pipe that main feeds on "epoll N"
 *   futex   FUTEX_WAIT on a word that main bumps on "futex"
 *   regs    x86_64: loads sentinels into rbx, rbp, r8-r10, r12-r15, MXCSR,
 *           the x87 control word, and xmm0-15, ymm0-15 or zmm0-31 + k1-k7
 *           (as the CPU has them), then a raw read syscall on a pipe that
 *           main feeds on "regs"; on wake checks all of them plus rdi, rsi,
 *           rdx, rsp and the data, then re-arms
 *   hammer  malloc/free of random sizes, forever
 *   ticker  1 ms clock_nanosleep loop, records the largest gap
 *   sig     read() on a pipe main writes on "sigpoke"; with main, the only
 *           thread that takes SIGRTMIN+1 (SA_SIGINFO | SA_RESTART; the
 *           handler counts deliveries and sums si_value)
 *
 * Each thread also notes, whenever it wakes, which arena it is bound to
 * (mallctl thread.arena): "heapctl set --tid T thread.arena N" changes
 * only the borrowed thread, which proves that --tid was honoured.
 *
 * Commands (one reply line each):
 *   ping                 pong
 *   tids                 tids pid=P main=T read=T sleep=T epoll=T futex=T regs=T
 *                        hammer=T ticker=T sig=T xarena=N regs_mode=M
 *   state                state key=value ... (see cmd_state())
 *   feed N               read ok N | read bad WHY      (1 <= N <= 4096)
 *   epoll N              epoll ok N | epoll bad WHY    (1 <= N <= 4096)
 *   futex                futex ok | futex bad WHY
 *   sleepwait K          sleep ok COUNT | sleep bad WHY (K more sleeps done)
 *   regs                 regs ok | regs bad WHAT  (any bad round since the
 *                        previous "regs" is reported, not only this one)
 *   sigpoke              sigpoke ok: wakes the sig thread once
 *   tarena               tarena main=A read=A ... sig=A: the arena each thread
 *                        saw bound to itself when it last woke (-1: none);
 *                        main reads its own now
 *   tickreset            tickreset ok
 *   leak BYTES [A|x]     leak ok BYTES: 1 MiB chunks from arena A (0 by
 *                        default), or from the arena created at start (x)
 *   free                 free ok BYTES: frees every leaked chunk
 *   ctl NAME             ctl NAME VALUE | ctl NAME err ERRNO
 *   lasterr              lasterr TEXT: first error recorded since the last
 *                        "lasterr", or "none"
 *   fds                  fds N
 *   maps                 maps N anon_odd=M
 *   quit                 bye, then exit(0); EOF on CTL_FD also exits
 *
 * After every reply all parked threads are back inside their syscalls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <linux/futex.h>
#include <jemalloc/jemalloc.h>

#include "vcommon.h"

#define SLEEP_NS	50000000ull
#define TICK_NS		1000000ull
#define LEAK_CHUNK	((size_t)1 << 20)
#define LEAK_MAX	4096
#define WAIT_MS		10000
#define FEED_MAX	4096
#define REGS_LEN	64

#if defined(__aarch64__)
/* The arm64 register sentinel lives in tests/aarch64/regs_a64.h. */
#include "../aarch64/regs_a64.h"
#else /* !__aarch64__ */
/*
 * The register sentinel (vregs.h, shared with the torture victim): leaf
 * functions in assembly load known values into the general, x87/SSE
 * control, vector and mask registers around a raw read syscall.
 */
#include "vregs.h"
#endif /* !__aarch64__ */

/* ---------------------------------------------------------------------
 * Shared state.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;

	pid_t tid_main, tid_read, tid_sleep, tid_epoll, tid_futex, tid_regs;
	pid_t tid_hammer, tid_ticker, tid_sig;
	unsigned int xarena;
	const struct regs_mode *rmode;

	int read_pipe[2], epoll_pipe[2], regs_pipe[2], sig_pipe[2];
	int epfd;

	/* feed/epoll: what main wrote, and what the reader made of it */
	size_t read_len, epoll_len;
	unsigned int read_seed, epoll_seed, regs_seed;
	unsigned long read_done, epoll_done, futex_done, regs_done, sleep_done, sig_done;
	char read_res[256], epoll_res[256], regs_res[256];
	char regs_firstbad[256];	/* first bad round since the last "regs" */

	char lasterr[512];
} g = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static atomic_ulong n_errors;
static unsigned long eintr_main;	/* main thread only */
static atomic_ulong eintr_read, eintr_sleep, eintr_epoll, eintr_futex;
static atomic_ulong eintr_regs, eintr_tick, eintr_sig;
static atomic_ulong n_ticks, maxgap_ns, hammer_ops, regs_bad;
static atomic_uint futex_word;

/*
 * The arena each thread saw bound to itself (mallctl thread.arena) the
 * last time it woke up. "heapctl set --tid T thread.arena N" acts on the
 * borrowed thread only, so this proves which thread heapctl borrowed.
 */
enum { K_MAIN, K_READ, K_SLEEP, K_EPOLL, K_FUTEX, K_REGS, K_HAMMER, K_TICKER, K_SIG, K_NR };
static const char *const kind_names[K_NR] = {
	"main", "read", "sleep", "epoll", "futex", "regs", "hammer", "ticker", "sig",
};
static atomic_uint seen_arena[K_NR];
static atomic_ulong sig_count;
static atomic_long sig_sum;

__attribute__((format(printf, 1, 2)))
static void verr(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&n_errors, 1);
	fprintf(stderr, "victim: error: %s\n", buf);
	pthread_mutex_lock(&g.mu);
	if (!g.lasterr[0])
		snprintf(g.lasterr, sizeof(g.lasterr), "%s", buf);
	pthread_mutex_unlock(&g.mu);
}

/* Threads publish their own tid; main waits for all of them. */
static void publish_tid(pid_t *slot)
{
	__atomic_store_n(slot, vgettid(), __ATOMIC_RELEASE);
}

static pid_t tid_of(pid_t *slot)
{
	return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static uint8_t pattern(unsigned int seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

/* Check n bytes received against what main wrote; fills res. */
static void check_data(const char *who, const uint8_t *buf, ssize_t n, size_t want,
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
		if (buf[i] != pattern(seed, i)) {
			snprintf(res, ressz, "bad byte %zu is 0x%02x, wanted 0x%02x", i, buf[i],
				 pattern(seed, i));
			return;
		}
	}
	snprintf(res, ressz, "ok %zu", want);
}

static void block_rt(int how)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1);
	pthread_sigmask(how, &s, NULL);
}

static void note_arena(int kind)
{
	unsigned int a = ~0u;
	size_t sz = sizeof(a);

	if (mallctl("thread.arena", &a, &sz, NULL, 0))
		a = ~0u;
	atomic_store(&seen_arena[kind], a);
}

/* ---------------------------------------------------------------------
 * Threads.
 */
static void *read_thread(void *arg)
{
	static uint8_t buf[65536];

	(void)arg;
	note_arena(K_READ);
	publish_tid(&g.tid_read);
	for (;;) {
		ssize_t n = read(g.read_pipe[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_read, 1);
			verr("read thread: read() failed with EINTR");
			continue;
		}
		if (n == 0)
			return NULL;
		note_arena(K_READ);
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
	note_arena(K_SLEEP);
	publish_tid(&g.tid_sleep);
	for (;;) {
		struct timespec ts = { 0, (long)SLEEP_NS }, rem;
		uint64_t t0 = vnow_ns(), dt;
		int r = nanosleep(&ts, &rem);

		dt = vnow_ns() - t0;
		if (r) {
			if (errno == EINTR)
				atomic_fetch_add(&eintr_sleep, 1);
			verr("sleep thread: nanosleep() failed: %s (after %llu us)", strerror(errno),
			     (unsigned long long)(dt / 1000));
		} else if (dt < SLEEP_NS) {
			verr("sleep thread: nanosleep() returned after %llu us, asked %llu us",
			     (unsigned long long)(dt / 1000), SLEEP_NS / 1000);
		}
		note_arena(K_SLEEP);
		pthread_mutex_lock(&g.mu);
		g.sleep_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
	}
	return NULL;
}

static void *epoll_thread(void *arg)
{
	static uint8_t buf[65536];

	(void)arg;
	note_arena(K_EPOLL);
	publish_tid(&g.tid_epoll);
	for (;;) {
		struct epoll_event ev;
		int r = epoll_wait(g.epfd, &ev, 1, -1);
		ssize_t n;

		if (r < 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintr_epoll, 1);
				fprintf(stderr, "victim: epoll thread: epoll_wait() failed with EINTR\n");
			} else {
				verr("epoll thread: epoll_wait() failed: %s", strerror(errno));
			}
			continue;
		}
		if (r != 1 || ev.data.fd != g.epoll_pipe[0]) {
			verr("epoll thread: epoll_wait() returned %d, fd %d", r, ev.data.fd);
			continue;
		}
		n = read(g.epoll_pipe[0], buf, sizeof(buf));
		if (n == 0)
			return NULL;
		note_arena(K_EPOLL);
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
	note_arena(K_FUTEX);
	publish_tid(&g.tid_futex);
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
		note_arena(K_FUTEX);
		pthread_mutex_lock(&g.mu);
		g.futex_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
	}
	return NULL;
}

#if defined(__aarch64__)
#define sentinel_fill(io, round, buf, len) a64_regs_fill(io, round, buf, len, g.regs_pipe[0])
#define sentinel_check(io, m, len, buf, seed, res, ressz) \
	a64_regs_check(io, m, len, buf, seed, res, ressz, pattern, &eintr_regs)
#else /* !__aarch64__ */
#define sentinel_fill(io, round, buf, len) regs_fill(io, round, g.regs_pipe[0], buf, len)

/* The read's result and data first, then every register (vregs.h). */
static void sentinel_check(const struct regs_io *io, const struct regs_mode *m, size_t len,
			   const uint8_t *buf, unsigned int seed, char *res, size_t ressz)
{
	size_t k;

	if (io->ret < 0) {
		snprintf(res, ressz, "bad read syscall returned %lld%s", (long long)io->ret,
			 io->ret == -EINTR ? " (EINTR)" : "");
		if (io->ret == -EINTR)
			atomic_fetch_add(&eintr_regs, 1);
		return;
	}
	if ((uint64_t)io->ret != len) {
		snprintf(res, ressz, "bad read syscall returned %lld, wanted %zu", (long long)io->ret,
			 len);
		return;
	}
	for (k = 0; k < len; k++) {
		if (buf[k] != pattern(seed, k)) {
			snprintf(res, ressz, "bad data byte %zu", k);
			return;
		}
	}
	if (regs_check(io, m, res + 4, ressz - 4) == 0)
		snprintf(res, ressz, "ok");
	else
		memcpy(res, "bad ", 4);
}
#endif /* !__aarch64__ */

static void *regs_thread(void *arg)
{
	static struct regs_io io;
	static uint8_t buf[REGS_LEN];
	unsigned int round = 0;

	(void)arg;
	note_arena(K_REGS);
	publish_tid(&g.tid_regs);
	for (;;) {
		char res[256];
		unsigned int seed;

		sentinel_fill(&io, round, buf, REGS_LEN);
		g.rmode->block(&io);
		if (io.ret == 0)
			return NULL;
		note_arena(K_REGS);
		pthread_mutex_lock(&g.mu);
		seed = g.regs_seed;
		pthread_mutex_unlock(&g.mu);
		sentinel_check(&io, g.rmode, REGS_LEN, buf, seed, res, sizeof(res));
		if (strncmp(res, "ok", 2)) {
			atomic_fetch_add(&regs_bad, 1);
			verr("regs thread (%s): %s", g.rmode->name, res);
		}
		pthread_mutex_lock(&g.mu);
		snprintf(g.regs_res, sizeof(g.regs_res), "%s", res);
		if (strncmp(res, "ok", 2) && !g.regs_firstbad[0])
			snprintf(g.regs_firstbad, sizeof(g.regs_firstbad), "%s", res);
		g.regs_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
		round++;
	}
}

static void *hammer_thread(void *arg)
{
	enum { SLOTS = 512 };
	static void *slot[SLOTS];
	uint64_t x = 0x2545f4914f6cdd1dull ^ (uint64_t)vnow_ns();
	unsigned long ops = 0;

	(void)arg;
	note_arena(K_HAMMER);
	publish_tid(&g.tid_hammer);
	for (;;) {
		unsigned int i;
		size_t sz;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = (unsigned int)(x % SLOTS);
		/* mostly small, some large */
		sz = (x >> 20) % 16 ? 1 + (x >> 32) % 4096 : 1 + (x >> 32) % (256 * 1024);
		free(slot[i]);
		slot[i] = malloc(sz);
		if (slot[i])
			((volatile char *)slot[i])[0] = (char)x;
		ops++;
		if (!(ops % 1024)) {
			struct timespec ts = { 0, 200000 };

			atomic_store(&hammer_ops, ops);
			note_arena(K_HAMMER);
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void *ticker_thread(void *arg)
{
	struct timespec ts = { 0, (long)TICK_NS };
	uint64_t prev;

	(void)arg;
	note_arena(K_TICKER);
	publish_tid(&g.tid_ticker);
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
		if (!(atomic_fetch_add(&n_ticks, 1) % 16))
			note_arena(K_TICKER);
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

static void *sig_thread(void *arg)
{
	char c;

	(void)arg;
	note_arena(K_SIG);
	publish_tid(&g.tid_sig);
	block_rt(SIG_UNBLOCK);
	for (;;) {
		ssize_t n = read(g.sig_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR) {
			/* SA_RESTART is set: a handler run must not surface here. */
			atomic_fetch_add(&eintr_sig, 1);
			verr("sig thread: read() failed with EINTR");
			continue;
		}
		if (n <= 0)
			return NULL;
		note_arena(K_SIG);
		pthread_mutex_lock(&g.mu);
		g.sig_done++;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
	}
}

/* ---------------------------------------------------------------------
 * mallctl helpers.
 */
static int ctl_read(const char *name, void *v, size_t sz)
{
	size_t len = sz;
	int r = mallctl(name, v, &len, NULL, 0);

	if (!r && len != sz)
		return EINVAL;
	return r;
}

static void epoch_bump(void)
{
	uint64_t e = 1;
	size_t sz = sizeof(e);

	if (mallctl("epoch", &e, &sz, &e, sz))
		verr("mallctl(epoch) failed");
}

static int ctl_bool(const char *name)
{
	bool b;

	if (ctl_read(name, &b, sizeof(b)))
		return -1;
	return b;
}

/* Dirty bytes of arena idx (4096 = MALLCTL_ARENAS_ALL); call epoch_bump() first. */
static size_t dirty_bytes(unsigned int idx)
{
	char name[64];
	size_t pages = 0, page = 0;

	snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", idx);
	if (ctl_read(name, &pages, sizeof(pages)))
		return (size_t)-1;
	if (ctl_read("arenas.page", &page, sizeof(page)))
		return (size_t)-1;
	return pages * page;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcmp(s + a - b, suf);
}

/* Reads a mallctl of any of the usual types and formats it like heapctl get. */
static void cmd_ctl(int fd, const char *name)
{
	static const char *const bools[] = {
		"prof.active", "opt.prof", "opt.prof_active", "background_thread",
		"prof.thread_active_init", "config.prof", "config.stats", "opt.retain",
		"opt.abort", "thread.tcache.enabled", "prof.gdump", "opt.prof_leak",
	};
	static const char *const strs[] = {
		"version", "opt.dss", "opt.metadata_thp", "opt.thp", "opt.prof_prefix",
		"thread.prof.name", "config.malloc_conf", "opt.percpu_arena",
	};
	size_t i;
	int r;

	if (!strncmp(name, "stats.", 6))
		epoch_bump();
	for (i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		if (!strcmp(name, bools[i])) {
			bool b;

			r = ctl_read(name, &b, sizeof(b));
			if (r)
				vreply(fd, "ctl %s err %d", name, r);
			else
				vreply(fd, "ctl %s %s", name, b ? "true" : "false");
			return;
		}
	}
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		if (!strcmp(name, strs[i])) {
			const char *s = NULL;

			r = ctl_read(name, &s, sizeof(s));
			if (r)
				vreply(fd, "ctl %s err %d", name, r);
			else
				vreply(fd, "ctl %s %s", name, s ? s : "");
			return;
		}
	}
	if (has_suffix(name, "decay_ms") || !strcmp(name, "opt.lg_prof_interval")) {
		ssize_t v;

		r = ctl_read(name, &v, sizeof(v));
		if (r)
			vreply(fd, "ctl %s err %d", name, r);
		else
			vreply(fd, "ctl %s %zd", name, v);
		return;
	}
	{
		/* Unknown: let the size decide (size_t/uint64_t, unsigned, bool). */
		uint64_t v8;
		unsigned int v4;
		bool v1;

		r = ctl_read(name, &v8, sizeof(v8));
		if (!r) {
			vreply(fd, "ctl %s %llu", name, (unsigned long long)v8);
			return;
		}
		if (r == EINVAL && !ctl_read(name, &v4, sizeof(v4))) {
			vreply(fd, "ctl %s %u", name, v4);
			return;
		}
		if (r == EINVAL && !ctl_read(name, &v1, sizeof(v1))) {
			vreply(fd, "ctl %s %s", name, v1 ? "true" : "false");
			return;
		}
		vreply(fd, "ctl %s err %d", name, r);
	}
}

/* ---------------------------------------------------------------------
 * Commands.
 */
static void *leaked[LEAK_MAX];
static size_t n_leaked;

/* Wait until *ctr moves past start; returns false on timeout. Locked. */
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
static const long nr_epoll[] = { VSYS_EPOLL_WAIT, SYS_epoll_pwait, 441 /* epoll_pwait2 */ };
static const long nr_futex[] = { SYS_futex };

static bool parked(pid_t tid, const long *nrs, int n)
{
	return vwait_in_syscall(tid, nrs, n, WAIT_MS);
}

static void cmd_feed(int fd, const char *arg, bool use_epoll)
{
	static uint8_t buf[FEED_MAX];
	const char *what = use_epoll ? "epoll" : "read";
	char *end;
	long n = strtol(arg, &end, 10);
	unsigned long start;
	char res[256];
	unsigned int seed;
	long i;

	if (*arg == '\0' || *end || n < 1 || n > FEED_MAX) {
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
	for (i = 0; i < n; i++)
		buf[i] = pattern(seed, (size_t)i);
	/* n <= PIPE_BUF: one atomic write, so one read() must take it all. */
	if (vwrite_all(use_epoll ? g.epoll_pipe[1] : g.read_pipe[1], buf, (size_t)n))
		vdie("write feed");
	pthread_mutex_lock(&g.mu);
	if (!wait_ctr(use_epoll ? &g.epoll_done : &g.read_done, start))
		snprintf(res, sizeof(res), "bad timeout: thread did not wake");
	else
		snprintf(res, sizeof(res), "%s", use_epoll ? g.epoll_res : g.read_res);
	pthread_mutex_unlock(&g.mu);
	if (use_epoll ? !parked(g.tid_epoll, nr_epoll, 3) : !parked(g.tid_read, nr_read, 1))
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
	else if (!parked(g.tid_futex, nr_futex, 1))
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
	unsigned long start;
	unsigned int seed;
	char res[512];
	size_t i;

	pthread_mutex_lock(&g.mu);
	seed = ++g.regs_seed;
	start = g.regs_done;
	pthread_mutex_unlock(&g.mu);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(seed, i);
	if (vwrite_all(g.regs_pipe[1], buf, sizeof(buf)))
		vdie("write regs");
	pthread_mutex_lock(&g.mu);
	if (!wait_ctr(&g.regs_done, start))
		snprintf(res, sizeof(res), "bad timeout: thread did not wake");
	else if (g.regs_firstbad[0])
		snprintf(res, sizeof(res), "%s (earlier round)", g.regs_firstbad);
	else
		snprintf(res, sizeof(res), "%s", g.regs_res);
	g.regs_firstbad[0] = '\0';
	pthread_mutex_unlock(&g.mu);
	if (!parked(g.tid_regs, nr_read, 1))
		snprintf(res, sizeof(res), "bad thread did not block again");
	vreply(fd, "regs %s", res);
}

static void cmd_sigpoke(int fd)
{
	unsigned long start;
	char c = 'p';
	bool ok;

	pthread_mutex_lock(&g.mu);
	start = g.sig_done;
	pthread_mutex_unlock(&g.mu);
	if (vwrite_all(g.sig_pipe[1], &c, 1))
		vdie("write sigpoke");
	pthread_mutex_lock(&g.mu);
	ok = wait_ctr(&g.sig_done, start);
	pthread_mutex_unlock(&g.mu);
	if (!ok)
		vreply(fd, "sigpoke bad timeout: thread did not wake");
	else if (!parked(g.tid_sig, nr_read, 1))
		vreply(fd, "sigpoke bad thread did not block again");
	else
		vreply(fd, "sigpoke ok");
}

static void cmd_tarena(int fd)
{
	char buf[512];
	size_t len = 0;
	int k;

	note_arena(K_MAIN);
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "tarena");
	for (k = 0; k < K_NR && len < sizeof(buf); k++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s=%d", kind_names[k],
					(int)atomic_load(&seen_arena[k]));
	vreply(fd, "%s", buf);
}

static void cmd_leak(int fd, const char *arg)
{
	char *end;
	unsigned long long bytes = strtoull(arg, &end, 10);
	unsigned int arena = 0;
	size_t done = 0;

	while (*end == ' ')
		end++;
	if (*end == 'x')
		arena = g.xarena;
	else if (*end)
		arena = (unsigned int)strtoul(end, NULL, 10);
	while (done < bytes && n_leaked < LEAK_MAX) {
		void *p = mallocx(LEAK_CHUNK, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);

		if (!p) {
			vreply(fd, "leak bad mallocx failed after %zu bytes", done);
			return;
		}
		memset(p, 0xa5, LEAK_CHUNK);
		leaked[n_leaked++] = p;
		done += LEAK_CHUNK;
	}
	vreply(fd, "leak ok %zu", done);
}

static void cmd_free(int fd)
{
	size_t bytes = n_leaked * LEAK_CHUNK;

	while (n_leaked)
		dallocx(leaked[--n_leaked], MALLOCX_TCACHE_NONE);
	vreply(fd, "free ok %zu", bytes);
}

static void cmd_state(int fd)
{
	unsigned long reads, epolls, futexes, sleeps, regs_rounds;
	char regs_last[16];
	long maps, anon_odd;

	epoch_bump();
	vcount_maps(&maps, &anon_odd);
	pthread_mutex_lock(&g.mu);
	snprintf(regs_last, sizeof(regs_last), "%s",
		 !g.regs_done ? "none" : strncmp(g.regs_res, "ok", 2) ? "bad" : "ok");
	reads = g.read_done;
	epolls = g.epoll_done;
	futexes = g.futex_done;
	sleeps = g.sleep_done;
	regs_rounds = g.regs_done;
	pthread_mutex_unlock(&g.mu);
	vreply(fd,
	       "state pid=%d prof_active=%d opt_prof=%d dirty=%zd dirty0=%zd dirtyx=%zd xarena=%u"
	       " leak=%zu errors=%lu eintr_main=%lu eintr_read=%lu eintr_sleep=%lu"
	       " eintr_epoll=%lu eintr_futex=%lu eintr_regs=%lu eintr_tick=%lu eintr_sig=%lu"
	       " reads=%lu epolls=%lu futexes=%lu sleeps=%lu regs_rounds=%lu regs_bad=%lu"
	       " regs_last=%s ticks=%lu maxgap_us=%lu sig_count=%lu sig_sum=%ld hammer_ops=%lu"
	       " fds=%ld maps=%ld anon_odd=%ld",
	       (int)getpid(), ctl_bool("prof.active"), ctl_bool("opt.prof"),
	       (ssize_t)dirty_bytes(4096), (ssize_t)dirty_bytes(0),
	       (ssize_t)dirty_bytes(g.xarena), g.xarena, n_leaked * LEAK_CHUNK,
	       atomic_load(&n_errors), eintr_main, atomic_load(&eintr_read),
	       atomic_load(&eintr_sleep), atomic_load(&eintr_epoll), atomic_load(&eintr_futex),
	       atomic_load(&eintr_regs), atomic_load(&eintr_tick), atomic_load(&eintr_sig),
	       reads, epolls, futexes, sleeps, regs_rounds, atomic_load(&regs_bad), regs_last,
	       atomic_load(&n_ticks), atomic_load(&maxgap_ns) / 1000, atomic_load(&sig_count),
	       atomic_load(&sig_sum),
	       atomic_load(&hammer_ops), vcount_fds(), maps, anon_odd);
}

static void start_thread(void *(*fn)(void *))
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, NULL);

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

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct epoll_event ev;
	struct vline line = { .len = 0 };
	struct vfds fds;
	char cmd[1024];
	size_t sz;
	char c = 'R';

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	g.tid_main = vgettid();
	g.rmode = pick_regs_mode();
	note_arena(K_MAIN);

	sz = sizeof(g.xarena);
	if (mallctl("arenas.create", &g.xarena, &sz, NULL, 0))
		vdie("mallctl(arenas.create)");

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGRTMIN + 1, &sa, NULL))
		vdie("sigaction");
	/* Only main and the sig thread take SIGRTMIN+1: nanosleep, epoll_wait
	 * and clock_nanosleep fail with EINTR after a handler even with
	 * SA_RESTART (signal(7)), which would hide heapctl's own mistakes. */
	block_rt(SIG_BLOCK);

	xpipe(g.read_pipe, 0);
	xpipe(g.epoll_pipe, O_NONBLOCK);
	xpipe(g.regs_pipe, 0);
	xpipe(g.sig_pipe, 0);
	g.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g.epfd < 0)
		vdie("epoll_create1");
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = g.epoll_pipe[0];
	if (epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.epoll_pipe[0], &ev))
		vdie("epoll_ctl");

	start_thread(read_thread);
	start_thread(sleep_thread);
	start_thread(epoll_thread);
	start_thread(futex_thread);
	start_thread(regs_thread);
	if (!getenv("VICTIM_NO_HAMMER"))
		start_thread(hammer_thread);
	else
		publish_tid(&g.tid_hammer);	/* stands in; never borrowed */
	start_thread(ticker_thread);
	start_thread(sig_thread);
	block_rt(SIG_UNBLOCK);

	/* The tids are written by the threads themselves; wait until each is parked. */
	while (!tid_of(&g.tid_read) || !tid_of(&g.tid_sleep) || !tid_of(&g.tid_epoll) ||
	       !tid_of(&g.tid_futex) || !tid_of(&g.tid_regs) || !tid_of(&g.tid_hammer) ||
	       !tid_of(&g.tid_ticker) || !tid_of(&g.tid_sig))
		sched_yield();
	if (!parked(g.tid_read, nr_read, 1) || !parked(g.tid_epoll, nr_epoll, 3) ||
	    !parked(g.tid_futex, nr_futex, 1) || !parked(g.tid_regs, nr_read, 1) ||
	    !parked(g.tid_sig, nr_read, 1) || !parked(g.tid_sleep, nr_sleep, 2)) {
		fprintf(stderr, "victim: threads did not park\n");
		return 3;
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	close(fds.ready);

	for (;;) {
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), &eintr_main);
		char *arg;

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
			vreply(fds.reply,
			       "tids pid=%d main=%d read=%d sleep=%d epoll=%d futex=%d regs=%d"
			       " hammer=%d ticker=%d sig=%d xarena=%u regs_mode=%s",
			       (int)getpid(), g.tid_main, g.tid_read, g.tid_sleep, g.tid_epoll,
			       g.tid_futex, g.tid_regs, g.tid_hammer, g.tid_ticker, g.tid_sig,
			       g.xarena, g.rmode->name);
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
		} else if (!strcmp(cmd, "sigpoke")) {
			cmd_sigpoke(fds.reply);
		} else if (!strcmp(cmd, "tarena")) {
			cmd_tarena(fds.reply);
		} else if (!strcmp(cmd, "tickreset")) {
			atomic_store(&maxgap_ns, 0);
			vreply(fds.reply, "tickreset ok");
		} else if (!strcmp(cmd, "leak")) {
			cmd_leak(fds.reply, arg);
		} else if (!strcmp(cmd, "free")) {
			cmd_free(fds.reply);
		} else if (!strcmp(cmd, "ctl")) {
			cmd_ctl(fds.reply, arg);
		} else if (!strcmp(cmd, "lasterr")) {
			pthread_mutex_lock(&g.mu);
			vreply(fds.reply, "lasterr %s", g.lasterr[0] ? g.lasterr : "none");
			g.lasterr[0] = '\0';
			pthread_mutex_unlock(&g.mu);
		} else if (!strcmp(cmd, "fds")) {
			vreply(fds.reply, "fds %ld", vcount_fds());
		} else if (!strcmp(cmd, "maps")) {
			long maps, anon_odd;

			vcount_maps(&maps, &anon_odd);
			vreply(fds.reply, "maps %ld anon_odd=%ld", maps, anon_odd);
		} else if (!strcmp(cmd, "quit")) {
			vreply(fds.reply, "bye");
			return 0;
		} else {
			vreply(fds.reply, "error unknown command '%s'", cmd);
		}
	}
}
