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
 * read, sleep, epoll, futex, sig, sig2 and ticker, and the commands
 * shared with jemalloc_victim, are vthreads.h's.
 *
 * Signals SIGRTMIN+1..SIGRTMIN+4: SA_SIGINFO | SA_RESTART; the handler
 * counts deliveries and sums si_value.  Threads whose syscall fails with
 * EINTR after a handler even with SA_RESTART (nanosleep, epoll_wait, poll,
 * accept with a timeout...: signal(7)) block them, so every EINTR seen is
 * an error.
 *
 * Commands (one reply line each):
 *   ping, tids, state, feed N, epoll N, futex, sleepwait K, tickreset, gapsince NS,
 *   lasterr, quit          as in jemalloc_victim
 *   regs                   regs ok | regs bad WHAT: both sentinel threads
 *   check                  check ok | check bad WHY: accept, poll, spin and
 *                          the hammers make progress
 *   alltids                alltids T T ...: the 16 thread ids
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
/* glibc_torture and tcmalloc_torture are this file under another allocator */
#ifndef TORTURE_OTHER_ALLOC
#include <jemalloc/jemalloc.h>
#endif

/* The threads, as vthreads.h wants them named; the order is that of "tids" and "alltids". */
enum {
	K_MAIN, K_READ, K_SLEEP, K_EPOLL, K_FUTEX, K_ACCEPT, K_POLL, K_HAMMER1, K_HAMMER2,
	K_HAMMER3, K_REGS, K_REGS2, K_SPIN, K_SIG, K_SIG2, K_TICKER, K_NR
};
static const char *const kind_names[K_NR] = {
	"main", "read", "sleep", "epoll", "futex", "accept", "poll", "hammer", "hammer2",
	"hammer3", "regs", "regs2", "spin", "sig", "sig2", "ticker",
};

#include "vthreads.h"
#include "vregs.h"

#define SLEEP_NS	20000000ull
#define REGS_LEN	64
#define NSIG_RT		4
#define SPIN_LOOPS	200000

/* This victim's own state; the shared threads' is vt (vthreads.h). */
static struct {
	const struct regs_mode *rmode;
	int regs_pipe[2][2], poll_pipe[2];
	int lsock;
	unsigned short port;
	unsigned int regs_seed;
	unsigned long regs_done[2], accept_done, poll_done;
	char regs_res[2][256], regs_firstbad[256];
} g;

static atomic_ulong regs_bad, spin_rounds, hammer_ops;
static atomic_ulong eintr_accept, eintr_poll, eintr_regs;

static const struct vconf conf = {
	.who = "torture",
	.sleep_ns = SLEEP_NS,
	.nsig_rt = NSIG_RT,
	.epoll_eintr_err = true,
	.main_eintr_err = true,
	.feed_lax = true,
};

/* ---- threads of this victim's own --------------------------------------- */

static void *accept_thread(void *arg)
{
	(void)arg;
	vpublish(K_ACCEPT);
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
		vdone(&g.accept_done);
	}
	return NULL;
}

static void *poll_thread(void *arg)
{
	(void)arg;
	vpublish(K_POLL);
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
		vdone(&g.poll_done);
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

	vpublish(k);
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

	vpublish(which ? K_REGS2 : K_REGS);
	for (;;) {
		char res[256];
		unsigned int seed;

		regs_fill(&io[which], round, g.regs_pipe[which][0], buf[which], REGS_LEN);
		g.rmode->block(&io[which]);
		if (io[which].ret == 0)
			return NULL;
		pthread_mutex_lock(&vt.mu);
		seed = g.regs_seed;
		pthread_mutex_unlock(&vt.mu);
		regs_check_read(&io[which], g.rmode, REGS_LEN, buf[which], seed, res, sizeof(res),
				vpattern, &eintr_regs);
		if (strncmp(res, "ok", 2)) {
			atomic_fetch_add(&regs_bad, 1);
			verr("%s thread (%s): %s", which ? "regs2" : "regs", g.rmode->name, res);
		}
		pthread_mutex_lock(&vt.mu);
		snprintf(g.regs_res[which], sizeof(g.regs_res[which]), "%s", res);
		if (strncmp(res, "ok", 2) && !g.regs_firstbad[0])
			snprintf(g.regs_firstbad, sizeof(g.regs_firstbad), "%s", res);
		g.regs_done[which]++;
		pthread_cond_broadcast(&vt.cv);
		pthread_mutex_unlock(&vt.mu);
		round++;
	}
}

static void *spin_thread(void *arg)
{
	static struct regs_io io;
	static uint8_t dummy[8];
	unsigned int round = 7777;

	(void)arg;
	vpublish(K_SPIN);
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

/* ---- commands of this victim's own -------------------------------------- */

static const long nr_accept[] = { SYS_accept, SYS_accept4 };
static const long nr_poll[] = { VSYS_POLL, SYS_ppoll };

static void cmd_regs(int fd)
{
	uint8_t buf[REGS_LEN];
	unsigned long start[2];
	unsigned int seed;
	char res[512] = "ok";

	pthread_mutex_lock(&vt.mu);
	seed = ++g.regs_seed;
	start[0] = g.regs_done[0];
	start[1] = g.regs_done[1];
	pthread_mutex_unlock(&vt.mu);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = vpattern(seed, i);
	for (int w = 0; w < 2; w++)
		if (vwrite_all(g.regs_pipe[w][1], buf, sizeof(buf)))
			vdie("write regs");
	pthread_mutex_lock(&vt.mu);
	for (int w = 0; w < 2; w++) {
		if (!vwait_ctr(&g.regs_done[w], start[w]))
			snprintf(res, sizeof(res), "bad timeout: regs thread %d did not wake", w);
		else if (strncmp(g.regs_res[w], "ok", 2) && !strcmp(res, "ok"))
			snprintf(res, sizeof(res), "%s", g.regs_res[w]);
	}
	if (g.regs_firstbad[0] && !strcmp(res, "ok"))
		snprintf(res, sizeof(res), "%s (earlier round)", g.regs_firstbad);
	g.regs_firstbad[0] = '\0';
	pthread_mutex_unlock(&vt.mu);
	if (!vparked(K_REGS, nr_read, 1) || !vparked(K_REGS2, nr_read, 1))
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

	pthread_mutex_lock(&vt.mu);
	start = g.accept_done;
	pthread_mutex_unlock(&vt.mu);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) || write(c, &b, 1) != 1) {
		vreply(fd, "check bad connect: %s", strerror(errno));
		if (c >= 0)
			close(c);
		return;
	}
	pthread_mutex_lock(&vt.mu);
	ok = vwait_ctr(&g.accept_done, start);
	pthread_mutex_unlock(&vt.mu);
	close(c);
	if (!ok || !vparked(K_ACCEPT, nr_accept, 2)) {
		vreply(fd, "check bad accept thread did not %s", ok ? "block again" : "wake");
		return;
	}
	pthread_mutex_lock(&vt.mu);
	start = g.poll_done;
	pthread_mutex_unlock(&vt.mu);
	if (vwrite_all(g.poll_pipe[1], &b, 1))
		vdie("write poll");
	pthread_mutex_lock(&vt.mu);
	ok = vwait_ctr(&g.poll_done, start);
	pthread_mutex_unlock(&vt.mu);
	if (!ok || !vparked(K_POLL, nr_poll, 2)) {
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
	unsigned long sig_count_now;
	long maps, anon_odd, sig_sum_now;

	vcount_maps(&maps, &anon_odd);
	vsig_read(&sig_count_now, &sig_sum_now);
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
	       atomic_load(&n_ticks), atomic_load(&maxgap_ns) / 1000, sig_count_now,
	       sig_sum_now, vcount_fds(), maps, anon_odd);
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

/* This victim's own commands, for vserve(); false if cmd is not one of them. */
static bool own_cmd(int fd, const char *cmd, char *arg)
{
	char buf[1024];
	size_t len;
	int k;

	(void)arg;
	if (!strcmp(cmd, "tids")) {
		len = (size_t)snprintf(buf, sizeof(buf), "tids pid=%d", (int)getpid());
		for (k = 0; k < K_NR; k++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s=%d",
						kind_names[k], (int)vt.tid[k]);
		vreply(fd, "%s xarena=0 regs_mode=%s", buf, g.rmode->name);
	} else if (!strcmp(cmd, "alltids")) {
		len = (size_t)snprintf(buf, sizeof(buf), "alltids");
		for (k = 0; k < K_NR; k++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %d",
						(int)vt.tid[k]);
		vreply(fd, "%s", buf);
	} else if (!strcmp(cmd, "state")) {
		cmd_state(fd);
	} else if (!strcmp(cmd, "regs")) {
		cmd_regs(fd);
	} else if (!strcmp(cmd, "check")) {
		cmd_check(fd);
	} else {
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct vfds fds;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	vinit(&conf);
	g.rmode = pick_regs_mode();

	vpipe(vt.read_pipe, 0);
	vpipe(vt.epoll_pipe, O_NONBLOCK);
	vpipe(g.regs_pipe[0], 0);
	vpipe(g.regs_pipe[1], 0);
	vpipe(vt.sig_pipe[0], 0);
	vpipe(vt.sig_pipe[1], 0);
	vpipe(g.poll_pipe, 0);
	setup_socket();
	vepoll_init();

	vstart_thread(vread_thread, 0);
	vstart_thread(vsleep_thread, 0);
	vstart_thread(vepoll_thread, 0);
	vstart_thread(vfutex_thread, 0);
	vstart_thread(accept_thread, 0);
	vstart_thread(poll_thread, 0);
	vstart_thread(regs_thread, 0);
	vstart_thread(regs_thread, 1);
	vstart_thread(vsig_thread, 0);
	vstart_thread(vsig_thread, 1);
	vstart_thread(vticker_thread, 0);
	/* The hammers and the spinner take the signals as well. */
	vrt_mask(SIG_UNBLOCK);
	vstart_thread(hammer_thread, K_HAMMER1);
	vstart_thread(hammer_thread, K_HAMMER2);
	vstart_thread(hammer_thread, K_HAMMER3);
	vstart_thread(spin_thread, 0);

	vwait_tids();
	if (!vparked(K_READ, nr_read, 1) || !vparked(K_EPOLL, nr_epoll, 3) ||
	    !vparked(K_FUTEX, nr_futex, 1) || !vparked(K_REGS, nr_read, 1) ||
	    !vparked(K_REGS2, nr_read, 1) || !vparked(K_SIG, nr_read, 1) ||
	    !vparked(K_SIG2, nr_read, 1) || !vparked(K_SLEEP, nr_sleep, 2) ||
	    !vparked(K_ACCEPT, nr_accept, 2) || !vparked(K_POLL, nr_poll, 2)) {
		fprintf(stderr, "torture: threads did not park\n");
		return 3;
	}
	vserve(&fds, own_cmd);
	return 0;
}
