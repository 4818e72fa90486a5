// SPDX-License-Identifier: MIT
/*
 * Torture: thousands of mixed heapctl operations against the 16-thread
 * jemalloc_torture victim (threads blocked in read, nanosleep, epoll_wait,
 * futex, accept and poll, three malloc hammers, two register sentinels
 * parked in a syscall and one spinning, a ticker) while a storm of queued
 * real-time signals (four numbers, to the process and to single threads)
 * runs the whole time.
 *
 * After every operation the victim's counters are read (errors, EINTR,
 * register changes); every CHECK_EVERY operations and at the end, every
 * parked thread is woken and checked, the storm is paused and every signal
 * accounted for, and the fd set and the executable/PROT_NONE anonymous
 * mappings are compared with the start.  Pass means all of these stay at
 * zero: crashes, hangs, EINTR, register changes, lost or duplicated
 * signals, leaked fds or mappings, failed operations.
 *
 * The same program runs on each allocator driver: jemalloc_torture,
 * glibc_torture and tcmalloc_torture (tests "torture", "torture-glibc",
 * "torture-tcmalloc"), each with the operations its driver has; on glibc
 * "prof on", "prof off" and "dump" load, hook, unhook and read heapctl's
 * injected sampler.  glibc_torture_static ("torture-glibc-static") is
 * glibc_torture linked -static: the freestanding sampler, its hooks
 * written inline into malloc and the rest while every thread runs, and
 * "prof reset" taking them out again.  Two
 * heapctls started at once must both succeed: they take turns.
 *
 * ITEST_TORTURE_OPS sets the number of operations per driver (default 400
 * for jemalloc, 150 for the others; `make torture` runs TORTURE_OPS,
 * 100,000 unless told), ITEST_SEED the random seed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "harm.h"

#define VCONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define CHECK_EVERY 50
#define NTIDS 16
#define GAP_LIMIT_US 250000

static unsigned int nproblems;

/* the drivers an operation applies to; S: glibc linked -static, hooked inline */
enum { J = 1, G = 2, T = 4, S = 8 };

struct top {
	const char *name;
	const char *args[6];
	unsigned int weight;
	unsigned int drv;
};

#define DUMP "\x01"

static const struct top tops[] = {
	/* glibc: heapctl's sampler, loaded by the first "prof on", hooked and unhooked */
	{ "prof on", { "prof", "on" }, 3, J | G | T | S },
	{ "prof off", { "prof", "off" }, 3, J | G | T | S },
	/* static: while off, the inline hooks come out; the next prof on puts them back */
	{ "prof reset", { "prof", "reset" }, 2, S },
	{ "prof status", { "prof", "status", "--json" }, 1, J | G | T | S },
	{ "dump", { "dump", "-o", DUMP }, 3, J | G | S },
	{ "stats", { "stats" }, 2, J | G | T | S },
	{ "stats --json", { "stats", "--json" }, 2, J | G | T | S },
	{ "stats --full", { "stats", "--full" }, 2, J | G | T },
	{ "purge", { "purge" }, 2, J | G | T | S },
	{ "purge --arena", { "purge", "--arena", "0" }, 1, J },
	{ "get", { "get", "stats.allocated" }, 2, J },
	{ "get opt", { "get", "opt.narenas" }, 1, J },
	{ "set prof.active", { "set", "prof.active", "false" }, 1, J },
	{ "set decay", { "set", "--", "arena.0.dirty_decay_ms", "-1" }, 1, J },
	{ "info", { "info", "--json" }, 1, J | G | T | S },
	{ "get mallopt", { "get", "M_MMAP_THRESHOLD" }, 2, G },
	{ "set mallopt", { "set", "M_TRIM_THRESHOLD", "131072" }, 1, G },
	{ "get property", { "get", "generic.current_allocated_bytes" }, 2, T },
	{ "get pageheap", { "get", "tcmalloc.pageheap_free_bytes" }, 1, T },
};
#define NTOPS (sizeof(tops) / sizeof(tops[0]))

static const char *const kind_names[NTIDS] = {
	"main", "read", "sleep", "epoll", "futex", "accept", "poll", "hammer", "hammer2",
	"hammer3", "regs", "regs2", "spin", "sig", "sig2", "ticker",
};

static bool is_hammer(int k)
{
	return k >= 7 && k <= 9;
}

struct counts {
	unsigned long ops, ok, refused, sampler_off, per_op[NTOPS], with_tid, pairs, checks;
	unsigned long crashes, hangs, failed, eintr, regs, errors, traced;
	unsigned long sig_sent, sig_lost, sig_dup, fd_leaks, map_leaks, dump_leaks;
	long sig_sum, maxgap_us;
};

struct tstate {
	struct victim v;
	pid_t tids[NTIDS];
	struct vcount base;
	char *base_fds, *base_maps;
	struct sigstorm storm;
	bool storming;
	bool with_none; /* PROT_NONE anonymous mappings count as leaks too */
	char dump[320];
};

static size_t pick(unsigned int drv)
{
	unsigned int total = 0, x;

	for (size_t i = 0; i < NTOPS; i++)
		if (tops[i].drv & drv)
			total += tops[i].weight;
	x = (unsigned int)rnd_below(total);
	for (size_t i = 0; i < NTOPS; i++) {
		if (!(tops[i].drv & drv))
			continue;
		if (x < tops[i].weight)
			return i;
		x -= tops[i].weight;
	}
	return 0;
}

static void args_of(const char **a, size_t oi, struct tstate *s, const char *tid)
{
	const struct top *op = &tops[oi];
	int n = 0, i;

	for (i = 0; i < 6 && op->args[i] && strcmp(op->args[i], "--"); i++)
		a[n++] = !strcmp(op->args[i], DUMP) ? s->dump : op->args[i];
	a[n++] = "-p";
	a[n++] = s->v.spid;
	if (tid) {
		a[n++] = "--tid";
		a[n++] = tid;
	}
	a[n++] = "--timeout";
	a[n++] = "10";
	for (; i < 6 && op->args[i]; i++)
		a[n++] = op->args[i];
	a[n] = NULL;
}

static void storm_on(struct tstate *s)
{
	/* main, sig, sig2, the hammers and the spinner take the signals */
	const pid_t to[] = { s->tids[0], s->tids[13], s->tids[14], s->tids[7], s->tids[8],
			     s->tids[9], s->tids[12] };

	if (s->storming)
		return;
	s->storming = !sigstorm_start(&s->storm, s->v.pid, to, 7, 4, 4, 500);
	if (!s->storming)
		problem("cannot start the signal storm");
}

/* Pauses the storm and accounts for every signal it sent. */
static void storm_tally(struct tstate *s, struct counts *c)
{
	char why[512];
	long got = 0;

	if (!s->storming)
		return;
	s->storming = false;
	if (sigstorm_stop(&s->storm, &c->sig_sent, &c->sig_sum)) {
		problem("signal storm failed");
		return;
	}
	if (sig_tally(&s->v, c->sig_sent, c->sig_sum, 5000, &got, why, sizeof(why))) {
		if ((unsigned long)got > c->sig_sent)
			c->sig_dup += (unsigned long)got - c->sig_sent;
		else
			c->sig_lost += c->sig_sent - (unsigned long)got;
		problem("after %lu ops: target harmed: %s", c->ops, why);
		c->sig_sent = (unsigned long)got;
		{
			char st[4096];

			if (!victim_cmd(&s->v, "state", st, sizeof(st), 5000))
				c->sig_sum = kv_long(st, "sig_sum", 0);
		}
	}
}

/* Counters after one operation: 0, or -1 if the victim is gone. */
static int quick_check(struct tstate *s, struct counts *c, const char *what)
{
	struct vcount now;
	char why[512], le[600];

	if (pid_exited(s->v.pid)) {
		c->crashes++;
		problem("after op %lu (%s): the victim died", c->ops, what);
		return -1;
	}
	if (vcount_get(&s->v, &now, why, sizeof(why))) {
		c->crashes++;
		problem("after op %lu (%s): %s", c->ops, what, why);
		return -1;
	}
	if (now.errors != s->base.errors || now.eintr != s->base.eintr ||
	    now.regs_bad != s->base.regs_bad) {
		if (victim_cmd(&s->v, "lasterr", le, sizeof(le), 5000))
			le[0] = '\0';
		c->eintr += (unsigned long)(now.eintr - s->base.eintr);
		c->regs += (unsigned long)(now.regs_bad - s->base.regs_bad);
		c->errors += (unsigned long)(now.errors - s->base.errors);
		problem("after op %lu (%s): target harmed: %ld error(s), %ld EINTR, %ld register "
			"change(s): %.300s", c->ops, what, now.errors - s->base.errors,
			now.eintr - s->base.eintr, now.regs_bad - s->base.regs_bad, le);
		s->base = now;
	}
	return 0;
}

static int full_check(struct tstate *s, struct counts *c)
{
	char why[1024], st[4096];
	char *maps, *extra;
	unsigned int d;

	c->checks++;
	if (proc_check_tasks(s->v.pid, false, why, sizeof(why))) {
		c->traced++;
		problem("after %lu ops: target harmed: %s", c->ops, why);
	}
	storm_tally(s, c);
	if (wake_check(&s->v, &s->base, true, why, sizeof(why))) {
		struct vcount now;

		c->failed++;
		problem("after %lu ops: target harmed: %s", c->ops, why);
		if (!vcount_get(&s->v, &now, why, sizeof(why)))
			s->base = now;
	}
	if (fds_settle(s->v.pid, s->base_fds, 2000, why, sizeof(why))) {
		c->fd_leaks++;
		problem("after %lu ops: target harmed: %s", c->ops, why);
		free(s->base_fds);
		s->base_fds = proc_fd_set(s->v.pid);
	}
	maps = proc_odd_maps(s->v.pid, s->with_none);
	extra = maps ? lines_missing(s->base_maps, maps) : NULL;
	if (extra && *extra) {
		c->map_leaks++;
		problem("after %lu ops: new executable/PROT_NONE anonymous mapping: %.300s", c->ops,
			extra);
		free(s->base_maps);
		s->base_maps = maps;
		maps = NULL;
	}
	free(extra);
	free(maps);
	d = dump_leftovers(s->v.pid, true, NULL);
	if (d) {
		c->dump_leaks += d;
		problem("after %lu ops: %u profile(s) left in the target's temporary directory",
			c->ops, d);
	}
	if (!victim_cmd(&s->v, "state", st, sizeof(st), 5000)) {
		long gap = kv_long(st, "maxgap_us", 0);

		if (gap > c->maxgap_us)
			c->maxgap_us = gap;
		if (gap > GAP_LIMIT_US && !victim_machine_stalled(&s->v, GAP_LIMIT_US, NULL))
			problem("after %lu ops: ticker thread stalled for %ld us", c->ops, gap);
		victim_ticker_reset(&s->v);
	}
	storm_on(s);
	return 0;
}

static void classify(struct counts *c, struct hres *r, const char *what, int kind)
{
	if (r->timed_out) {
		c->hangs++;
		problem("op %lu (%s): %s", c->ops, what, hres_desc(r));
	} else if (hres_crash(r)) {
		c->failed++;
		problem("op %lu (%s): %s [%s]", c->ops, what, hres_desc(r), hres_crash(r));
	} else if (hres_exit(r) == 0) {
		c->ok++;
	} else if (hres_exit(r) == 1 && strstr(r->err, "hint:") && is_hammer(kind)) {
		/* --tid on a thread that lives in malloc; two at once must both succeed */
		c->refused++;
	} else if (hres_exit(r) == 1 && strstr(r->err, "heapctl's sampler") &&
		   strstr(r->err, "hint: run 'heapctl prof on")) {
		/* glibc: a dump before the first "prof on", or while "prof off" has it unhooked */
		c->sampler_off++;
	} else {
		c->failed++;
		problem("op %lu (%s): %s", c->ops, what, hres_desc(r));
	}
}

/*
 * The storm against one allocator driver: victim is jemalloc_torture or the
 * same program on glibc or tcmalloc; drv picks the operations that apply.
 */
static void torture(const char *victim, const char *conf, unsigned int drv, long dflt_ops)
{
	struct tstate s = { 0 };
	struct counts c = { 0 };
	long nops = env_long("TORTURE_OPS", dflt_ops), t0 = now_ms(), next_check = CHECK_EVERY;
	char why[512], line[1024];
	const char *p;

	nproblems = 0;
	snprintf(s.dump, sizeof(s.dump), "%s/torture.heap", cfg.tmpdir);
	if (victim_start(&s.v, victim, conf, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_cmd(&s.v, "alltids", line, sizeof(line), 5000) || strncmp(line, "alltids ", 8)) {
		t_fail("alltids: %s", line);
		goto out;
	}
	p = line + 8;
	for (int i = 0; i < NTIDS; i++)
		s.tids[i] = (pid_t)strtol(p, (char **)&p, 10);
	victim_ticker_reset(&s.v);
	s.base_fds = proc_fd_set(s.v.pid);
	/*
	 * glibc's thread arenas reserve 64 MiB and grow and shrink inside it with
	 * mprotect (malloc_trim: purge): their PROT_NONE parts are its own, so
	 * only new executable mappings count there.
	 */
	s.with_none = !(drv & (G | S));
	s.base_maps = proc_odd_maps(s.v.pid, s.with_none);
	if (vcount_get(&s.v, &s.base, why, sizeof(why))) {
		t_fail("%s", why);
		goto out;
	}
	t_note("%s: seed %llu (ITEST_SEED), %ld operations (ITEST_TORTURE_OPS), regs mode %s",
	       victim, rnd_seed(), nops, s.v.regs_mode);
	storm_on(&s);
	while ((long)c.ops < nops) {
		const char *a[16], *b[16];
		char what[128], stid[16];
		size_t oi = pick(drv);
		int kind = -1;
		struct hres r = { 0 };

		if (rnd_below(20) == 0) {
			/* two at once, each picking its own thread: they take turns, both succeed */
			size_t oj = pick(drv);
			struct hproc h1, h2;
			struct hres r2;

			args_of(a, oi, &s, NULL);
			args_of(b, oj, &s, NULL);
			snprintf(what, sizeof(what), "%s + %s at once", tops[oi].name, tops[oj].name);
			hc_startv(&h1, NULL, a);
			hc_startv(&h2, NULL, b);
			hc_finish(&h1, &r, HC_TIMEOUT_S);
			hc_finish(&h2, &r2, HC_TIMEOUT_S);
			c.ops += 2;
			c.pairs++;
			c.per_op[oi]++;
			c.per_op[oj]++;
			classify(&c, &r, what, -2);
			classify(&c, &r2, what, -2);
			hres_free(&r2);
		} else {
			if (rnd_below(5) < 2) {
				/* not the ticker: its gap measures the threads left alone */
				kind = (int)rnd_below(NTIDS - 1);
				snprintf(stid, sizeof(stid), "%d", (int)s.tids[kind]);
				snprintf(what, sizeof(what), "%s --tid %s(%s)", tops[oi].name, stid,
					 kind_names[kind]);
				c.with_tid++;
			} else {
				snprintf(what, sizeof(what), "%s", tops[oi].name);
			}
			args_of(a, oi, &s, kind >= 0 ? stid : NULL);
			hc_runv(&r, NULL, a);
			c.ops++;
			c.per_op[oi]++;
			classify(&c, &r, what, kind);
		}
		hres_free(&r);
		if (quick_check(&s, &c, what))
			break;
		if ((long)c.ops >= next_check) {
			full_check(&s, &c);
			next_check += CHECK_EVERY;
		}
	}
	if (!pid_exited(s.v.pid))
		full_check(&s, &c);
	storm_tally(&s, &c);
	t_note("%lu operations in %ld s: %lu ok, %lu refused with a hint (--tid on a hammer), "
	       "%lu dumps refused while the sampler was off or not loaded, %lu with --tid, %lu pairs at once, "
	       "%lu full checks",
	       c.ops, (now_ms() - t0) / 1000, c.ok, c.refused, c.sampler_off, c.with_tid, c.pairs,
	       c.checks);
	{
		char per[600];
		size_t len = 0;

		for (size_t i = 0; i < NTOPS; i++)
			if (tops[i].drv & drv)
				len += (size_t)snprintf(per + len, sizeof(per) - len, "%s%s %lu",
							len ? ", " : "", tops[i].name,
							c.per_op[i]);
		t_note("operations: %s", per);
	}
	t_note("crashes %lu, hangs %lu, failed ops %lu, EINTR %lu, register changes %lu, "
	       "other victim errors %lu, left traced/stopped %lu", c.crashes, c.hangs, c.failed,
	       c.eintr, c.regs, c.errors, c.traced);
	t_note("signals: %lu queued (SIGRTMIN+1..+4), %lu lost, %lu duplicated; leaked fds %lu, "
	       "leaked mappings %lu, leftover profiles %lu; ticker max gap %ld us",
	       c.sig_sent, c.sig_lost, c.sig_dup, c.fd_leaks, c.map_leaks, c.dump_leaks,
	       c.maxgap_us);
out:
	if (s.storming) {
		unsigned long x = 0;
		long y = 0;

		sigstorm_stop(&s.storm, &x, &y);
	}
	victim_kill(&s.v);
	free(s.base_fds);
	free(s.base_maps);
}

/* `make test` runs the shorter default counts; `make torture` sets ITEST_TORTURE_OPS. */
static void test_torture(void)
{
	torture("jemalloc_torture", VCONF, J, 400);
}

static void test_torture_glibc(void)
{
	torture("glibc_torture", NULL, G, 150);
}

static void test_torture_tcmalloc(void)
{
	torture("tcmalloc_torture", NULL, T, 150);
}

static void test_torture_glibc_static(void)
{
	torture("glibc_torture_static", NULL, S, 150);
}

const struct itest t_torture_tests[] = {
	{ "torture", test_torture, 1800 },
	{ "torture-glibc", test_torture_glibc, 1800 },
	{ "torture-tcmalloc", test_torture_tcmalloc, 1800 },
	{ "torture-glibc-static", test_torture_glibc_static, 1800 },
	{ NULL, NULL, 0 },
};
