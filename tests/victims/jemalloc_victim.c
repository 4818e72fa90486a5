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
 * read, sleep, epoll, futex, ticker and sig, and the commands that wake
 * them, are vthreads.h's, shared with jemalloc_torture.
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
 *   gapsince NS          gapsince US: the longest ticker gap of 4 ms or more
 *                        that ended after CLOCK_MONOTONIC time NS (0: none)
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
#include <stddef.h>
#include <sys/types.h>
#include <jemalloc/jemalloc.h>

/*
 * The threads, as vthreads.h wants them named; the order is that of the
 * "tarena" reply.
 */
enum { K_MAIN, K_READ, K_SLEEP, K_EPOLL, K_FUTEX, K_REGS, K_HAMMER, K_TICKER, K_SIG, K_NR };
static const char *const kind_names[K_NR] = {
	"main", "read", "sleep", "epoll", "futex", "regs", "hammer", "ticker", "sig",
};

#include "vthreads.h"

#define SLEEP_NS	50000000ull
#define LEAK_CHUNK	((size_t)1 << 20)
#define LEAK_MAX	4096
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
 * This victim's own state; the shared threads' is vt (vthreads.h).
 */
static struct {
	unsigned int xarena;
	const struct regs_mode *rmode;

	int regs_pipe[2];
	unsigned int regs_seed;
	unsigned long regs_done;
	char regs_res[256];
	char regs_firstbad[256];	/* first bad round since the last "regs" */
} g;

static atomic_ulong hammer_ops, regs_bad, eintr_regs;

/*
 * The arena each thread saw bound to itself (mallctl thread.arena) the
 * last time it woke up. "heapctl set --tid T thread.arena N" acts on the
 * borrowed thread only, so this proves which thread heapctl borrowed.
 */
static atomic_uint seen_arena[K_NR];

static void note_arena(int kind)
{
	unsigned int a = ~0u;
	size_t sz = sizeof(a);

	if (mallctl("thread.arena", &a, &sz, NULL, 0))
		a = ~0u;
	atomic_store(&seen_arena[kind], a);
}

static const struct vconf conf = {
	.who = "victim",
	.sleep_ns = SLEEP_NS,
	.nsig_rt = 1,
	.woke = note_arena,
};

/* ---------------------------------------------------------------------
 * Threads of this victim's own.
 */
#if defined(__aarch64__)
#define sentinel_fill(io, round, buf, len) a64_regs_fill(io, round, buf, len, g.regs_pipe[0])
#define sentinel_check(io, m, len, buf, seed, res, ressz) \
	a64_regs_check(io, m, len, buf, seed, res, ressz, vpattern, &eintr_regs)
#else /* !__aarch64__ */
#define sentinel_fill(io, round, buf, len) regs_fill(io, round, g.regs_pipe[0], buf, len)
#define sentinel_check(io, m, len, buf, seed, res, ressz) \
	regs_check_read(io, m, len, buf, seed, res, ressz, vpattern, &eintr_regs)
#endif /* !__aarch64__ */

static void *regs_thread(void *arg)
{
	static struct regs_io io;
	static uint8_t buf[REGS_LEN];
	unsigned int round = 0;

	(void)arg;
	note_arena(K_REGS);
	vpublish(K_REGS);
	for (;;) {
		char res[256];
		unsigned int seed;

		sentinel_fill(&io, round, buf, REGS_LEN);
		g.rmode->block(&io);
		if (io.ret == 0)
			return NULL;
		note_arena(K_REGS);
		pthread_mutex_lock(&vt.mu);
		seed = g.regs_seed;
		pthread_mutex_unlock(&vt.mu);
		sentinel_check(&io, g.rmode, REGS_LEN, buf, seed, res, sizeof(res));
		if (strncmp(res, "ok", 2)) {
			atomic_fetch_add(&regs_bad, 1);
			verr("regs thread (%s): %s", g.rmode->name, res);
		}
		pthread_mutex_lock(&vt.mu);
		snprintf(g.regs_res, sizeof(g.regs_res), "%s", res);
		if (strncmp(res, "ok", 2) && !g.regs_firstbad[0])
			snprintf(g.regs_firstbad, sizeof(g.regs_firstbad), "%s", res);
		g.regs_done++;
		pthread_cond_broadcast(&vt.cv);
		pthread_mutex_unlock(&vt.mu);
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
	vpublish(K_HAMMER);
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

static void cmd_regs(int fd)
{
	uint8_t buf[REGS_LEN];
	unsigned long start;
	unsigned int seed;
	char res[512];
	size_t i;

	pthread_mutex_lock(&vt.mu);
	seed = ++g.regs_seed;
	start = g.regs_done;
	pthread_mutex_unlock(&vt.mu);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = vpattern(seed, i);
	if (vwrite_all(g.regs_pipe[1], buf, sizeof(buf)))
		vdie("write regs");
	pthread_mutex_lock(&vt.mu);
	if (!vwait_ctr(&g.regs_done, start))
		snprintf(res, sizeof(res), "bad timeout: thread did not wake");
	else if (g.regs_firstbad[0])
		snprintf(res, sizeof(res), "%s (earlier round)", g.regs_firstbad);
	else
		snprintf(res, sizeof(res), "%s", g.regs_res);
	g.regs_firstbad[0] = '\0';
	pthread_mutex_unlock(&vt.mu);
	if (!vparked(K_REGS, nr_read, 1))
		snprintf(res, sizeof(res), "bad thread did not block again");
	vreply(fd, "regs %s", res);
}

static void cmd_sigpoke(int fd)
{
	unsigned long start;
	char c = 'p';
	bool ok;

	pthread_mutex_lock(&vt.mu);
	start = vt.sig_done[0];
	pthread_mutex_unlock(&vt.mu);
	if (vwrite_all(vt.sig_pipe[0][1], &c, 1))
		vdie("write sigpoke");
	pthread_mutex_lock(&vt.mu);
	ok = vwait_ctr(&vt.sig_done[0], start);
	pthread_mutex_unlock(&vt.mu);
	if (!ok)
		vreply(fd, "sigpoke bad timeout: thread did not wake");
	else if (!vparked(K_SIG, nr_read, 1))
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

/* never inlined: a heap profile of the leak names this frame on both arches */
__attribute__((noinline)) static void cmd_leak(int fd, const char *arg)
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
	unsigned long reads, epolls, futexes, sleeps, regs_rounds, sig_count_now;
	char regs_last[16];
	long maps, anon_odd, sig_sum_now;

	epoch_bump();
	vcount_maps(&maps, &anon_odd);
	vsig_read(&sig_count_now, &sig_sum_now);
	pthread_mutex_lock(&vt.mu);
	snprintf(regs_last, sizeof(regs_last), "%s",
		 !g.regs_done ? "none" : strncmp(g.regs_res, "ok", 2) ? "bad" : "ok");
	reads = vt.read_done;
	epolls = vt.epoll_done;
	futexes = vt.futex_done;
	sleeps = vt.sleep_done;
	regs_rounds = g.regs_done;
	pthread_mutex_unlock(&vt.mu);
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
	       atomic_load(&n_errors), atomic_load(&eintr_main), atomic_load(&eintr_read),
	       atomic_load(&eintr_sleep), atomic_load(&eintr_epoll), atomic_load(&eintr_futex),
	       atomic_load(&eintr_regs), atomic_load(&eintr_tick), atomic_load(&eintr_sig),
	       reads, epolls, futexes, sleeps, regs_rounds, atomic_load(&regs_bad), regs_last,
	       atomic_load(&n_ticks), atomic_load(&maxgap_ns) / 1000, sig_count_now,
	       sig_sum_now,
	       atomic_load(&hammer_ops), vcount_fds(), maps, anon_odd);
}

/* This victim's own commands, for vserve(); false if cmd is not one of them. */
static bool own_cmd(int fd, const char *cmd, char *arg)
{
	if (!strcmp(cmd, "tids")) {
		vreply(fd,
		       "tids pid=%d main=%d read=%d sleep=%d epoll=%d futex=%d regs=%d"
		       " hammer=%d ticker=%d sig=%d xarena=%u regs_mode=%s",
		       (int)getpid(), vt.tid[K_MAIN], vt.tid[K_READ], vt.tid[K_SLEEP],
		       vt.tid[K_EPOLL], vt.tid[K_FUTEX], vt.tid[K_REGS], vt.tid[K_HAMMER],
		       vt.tid[K_TICKER], vt.tid[K_SIG], g.xarena, g.rmode->name);
	} else if (!strcmp(cmd, "state")) {
		cmd_state(fd);
	} else if (!strcmp(cmd, "regs")) {
		cmd_regs(fd);
	} else if (!strcmp(cmd, "sigpoke")) {
		cmd_sigpoke(fd);
	} else if (!strcmp(cmd, "tarena")) {
		cmd_tarena(fd);
	} else if (!strcmp(cmd, "leak")) {
		cmd_leak(fd, arg);
	} else if (!strcmp(cmd, "free")) {
		cmd_free(fd);
	} else if (!strcmp(cmd, "ctl")) {
		cmd_ctl(fd, arg);
	} else if (!strcmp(cmd, "fds")) {
		vreply(fd, "fds %ld", vcount_fds());
	} else if (!strcmp(cmd, "maps")) {
		long maps, anon_odd;

		vcount_maps(&maps, &anon_odd);
		vreply(fd, "maps %ld anon_odd=%ld", maps, anon_odd);
	} else {
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct vfds fds;
	size_t sz;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	/*
	 * Only main and the sig thread take SIGRTMIN+1: nanosleep, epoll_wait
	 * and clock_nanosleep fail with EINTR after a handler even with
	 * SA_RESTART (signal(7)), which would hide heapctl's own mistakes.
	 * vinit() blocks it until every thread has started.
	 */
	vinit(&conf);
	g.rmode = pick_regs_mode();
	note_arena(K_MAIN);

	sz = sizeof(g.xarena);
	if (mallctl("arenas.create", &g.xarena, &sz, NULL, 0))
		vdie("mallctl(arenas.create)");

	vpipe(vt.read_pipe, 0);
	vpipe(vt.epoll_pipe, O_NONBLOCK);
	vpipe(g.regs_pipe, 0);
	vpipe(vt.sig_pipe[0], 0);
	vepoll_init();

	vstart_thread(vread_thread, 0);
	vstart_thread(vsleep_thread, 0);
	vstart_thread(vepoll_thread, 0);
	vstart_thread(vfutex_thread, 0);
	vstart_thread(regs_thread, 0);
	if (!getenv("VICTIM_NO_HAMMER"))
		vstart_thread(hammer_thread, 0);
	else
		vpublish(K_HAMMER);	/* stands in; never borrowed */
	vstart_thread(vticker_thread, 0);
	vstart_thread(vsig_thread, 0);
	vrt_mask(SIG_UNBLOCK);

	/* Every thread runs; wait until each of those that park is parked. */
	vwait_tids();
	if (!vparked(K_READ, nr_read, 1) || !vparked(K_EPOLL, nr_epoll, 3) ||
	    !vparked(K_FUTEX, nr_futex, 1) || !vparked(K_REGS, nr_read, 1) ||
	    !vparked(K_SIG, nr_read, 1) || !vparked(K_SLEEP, nr_sleep, 2)) {
		fprintf(stderr, "victim: threads did not park\n");
		return 3;
	}
	vserve(&fds, own_cmd);
	return 0;
}
