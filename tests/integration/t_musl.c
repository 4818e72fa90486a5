// SPDX-License-Identifier: MIT
/*
 * The C libraries heapctl names, on real running processes: musl (dynamic
 * and static) and glibc linked statically (-static, -static-pie), all
 * built from tests/victims/libc_leak.c (a leak from leak_here(), a thread
 * in read(), one in nanosleep()).
 *
 * Every command says which libc and malloc it found, in musl's own terms
 * for musl; stats, purge, maps and doctor give what can be known; the
 * sampler is refused in one voice (sampler_loadable()) with hints that
 * fit: no LD_PRELOAD and no MALLOC_CONF anywhere for these targets.
 * After each test the victim must be unharmed: running, untraced, not
 * stopped, its fds and mappings as they were, nothing on its stdout or
 * stderr, and its threads back where they were parked.
 *
 * The musl victims exist only where musl-gcc (or the arm64 sysroot's musl)
 * was there when they were built: otherwise these tests skip, saying so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

struct libc_case {
	const char *victim;
	bool musl, is_static;
};

static const struct libc_case musl_dyn = { "musl_leak", true, false };
static const struct libc_case musl_static = { "musl_leak_static", true, true };
static const struct libc_case glibc_static = { "glibc_leak_static", false, true };
static const struct libc_case glibc_static_pie = { "glibc_leak_static_pie", false, true };

/* Started, or skipped (a musl victim that was not built) or failed; true when started. */
static bool up(struct victim *v, const struct libc_case *c)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, c->victim);
	if (c->musl && access(path, X_OK)) {
		t_skip(false, "no %s victim: musl-gcc (musl-tools), or the arm64 sysroot's musl-dev, "
			      "was missing when it was built", c->victim);
		return false;
	}
	return victim_up(v, c->victim, NULL, NULL, false);
}

/* Output that must never advise what cannot apply to these targets. */
static void no_wrong_hints(const struct hres *r, const char *what)
{
	static const char *const bad[] = { "LD_PRELOAD", "MALLOC_CONF", "cannot be loaded" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strstr(r->out, bad[i]) || strstr(r->err, bad[i])) {
			t_fail("%s mentions %s: %s%.300s", what, bad[i], r->out, r->err);
			return;
		}
}

/* The harm checks: victim_check(), its stderr and stdout empty, the sleeper still asleep. */
static void unharmed(struct victim *v)
{
	char *errs;
	char st[512];

	if (t_failed() || victim_check(v, 0))
		return;
	if (v->t_sleep && proc_wait_syscall(v->pid, v->t_sleep, nrs_sleep, 5000, NULL))
		t_fail("the victim's sleeping thread %d is not back in its sleep", (int)v->t_sleep);
	if (!victim_cmd(v, "state", st, sizeof(st), REPLY_DEF_MS) &&
	    (kv_long(st, "errors", -1) != 0 || kv_long(st, "eintr_sleep", -1) != 0 ||
	     kv_long(st, "eintr_read", -1) != 0 || kv_long(st, "eintr_epoll", -1) != 0))
		t_fail("the victim counted errors: %s", st);
	errs = read_file_str(v->errpath);
	if (errs && *errs)
		t_fail("the victim's stdout/stderr got: %.300s", errs);
	free(errs);
}

/* The version heapctl should find in a static glibc victim: this harness's own glibc's. */
static const char *want_version(const struct libc_case *c)
{
	return c->musl ? NULL : gnu_get_libc_version();
}

static void check_info(const struct libc_case *c)
{
	struct victim v;
	struct hres r = { 0 };
	char s[128];

	if (!up(&v, c))
		return;
	if (!hc_expect(&r, 0, "info", "-p", v.spid, NULL)) {
		if (c->musl && !strstr(r.out, "allocator     musl mallocng"))
			t_fail("info does not name musl mallocng: %.400s", r.out);
		if (c->musl && !c->is_static && !strpbrk(strstr(r.out, "mallocng") ?: "", "0123456789"))
			t_fail("info gives no musl version: %.400s", r.out);
		if (c->musl && c->is_static && !strstr(r.out, "version unknown"))
			t_fail("info does not say a static musl's version is unknown: %.400s", r.out);
		if (!c->musl) {
			snprintf(s, sizeof(s), "allocator     glibc %s\n", want_version(c));
			if (!strstr(r.out, s))
				t_fail("info does not say '%.40s': %.400s", s, r.out);
		}
		if (!strstr(r.out, "'heapctl prof on' loads"))
			t_fail("info does not say prof on loads heapctl's sampler: %.500s", r.out);
		no_wrong_hints(&r, "info");
	}
	hres_free(&r);
	if (!t_failed() && !hc_expect(&r, 0, "info", "--json", "-p", v.spid, NULL)) {
		if (json_valid(r.out, s, sizeof(s)))
			t_fail("info --json is not JSON (%s): %.300s", s, r.out);
		else if (json_get_str(r.out, "allocator", s, sizeof(s)) ||
			 strcmp(s, c->musl ? "musl mallocng" : "glibc"))
			t_fail("info --json allocator '%s': %.300s", s, r.out);
		else if (!strstr(r.out, "\"loadable\":true"))
			t_fail("info --json does not say the sampler can be loaded: %.500s", r.out);
		if (!c->musl && (json_get_str(r.out, "version", s, sizeof(s)) ||
				 strcmp(s, want_version(c))))
			t_fail("info --json version '%s', not %s", s, want_version(c));
	}
	hres_free(&r);
	unharmed(&v);
	victim_stop(&v);
}

static void check_stats(const struct libc_case *c)
{
	struct victim v;
	struct hres r = { 0 };
	char s[128];
	double n;

	if (!up(&v, c))
		return;
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, NULL)) {
		if (c->musl && (!strstr(r.out, "musl mallocng") || !strstr(r.out, "brk_heap") ||
				strstr(r.out, "arena")))
			t_fail("stats on musl: %.400s", r.out);
		if (c->musl && !strstr(r.err, "no per-arena figures, no allocated-bytes counter"))
			t_fail("stats does not say what musl does not expose: %.300s", r.err);
		if (!c->musl) {
			snprintf(s, sizeof(s), "glibc %s, pid %d, ", want_version(c), (int)v.pid);
			if (!strstr(r.out, s) || strstr(r.out, " 0 arenas") || !strstr(r.out, " arena"))
				t_fail("stats header is not '%s<N> arenas': %.300s", s, r.out);
		}
	}
	hres_free(&r);
	if (!t_failed() && !hc_expect(&r, 0, "stats", "--json", "-p", v.spid, NULL)) {
		if (json_valid(r.out, s, sizeof(s)))
			t_fail("stats --json is not JSON (%s): %.300s", s, r.out);
		else if (!c->musl && (json_get_num(r.out, "narenas", &n) || n < 1))
			t_fail("stats --json narenas: %.300s", r.out);
	}
	hres_free(&r);
	/*
	 * The main thread, blocked in read(), with words on its stack that
	 * returned into malloc at start-up: where the stack scan cannot vouch
	 * for it, the unwind must, through the table heapctl builds where the
	 * linker made none.  A thread outside the allocator is never refused.
	 * On arm64 the frame records decide (where.c: libunwind 1.6.2 stops
	 * early on pac-ret CFI), and a program built without frame pointers,
	 * as the static glibc victim is, breaks their chain: refused there,
	 * which is said, not failed.
	 */
	if (!t_failed()) {
		char tid[16];

		snprintf(tid, sizeof(tid), "%d", (int)v.t_main);
		hc_run(&r, NULL, "-vv", "stats", "-p", v.spid, "--tid", tid, "--timeout", "10", NULL);
#if defined(__aarch64__)
		if (hres_exit(&r) != 0 && strstr(r.err, "never reached a safe point: incomplete stack: "
						     "frame record"))
			t_note("the main thread: refused, its frame records broken (built without "
			       "frame pointers), which decide on arm64");
		else
#endif
		if (hres_exit(&r) != 0)
			t_fail("stats --tid %s (the main thread, in read()): %s %.400s", tid,
			       hres_desc(&r), r.err);
		else
			t_note("the main thread: %s", strstr(r.err, "cannot vouch") ?
				       "the stack scan could not vouch for it, the unwind did" :
				       "the stack scan vouched for it");
		hres_free(&r);
	}
	/* --full: musl has nothing to print, a static glibc no open_memstream(); said so */
	if (!t_failed()) {
		hc_run(&r, NULL, "stats", "--full", "-p", v.spid, NULL);
		if (hres_exit(&r) == 0 || hres_crash(&r))
			t_fail("stats --full: %s", hres_desc(&r));
		else if (!strstr(r.err, c->musl ? "no statistics to print" : "no open_memstream()"))
			t_fail("stats --full does not say why: %.300s", r.err);
		no_wrong_hints(&r, "stats --full");
		hres_free(&r);
	}
	unharmed(&v);
	victim_stop(&v);
}

static void check_purge(const struct libc_case *c)
{
	struct victim v;
	struct hres r = { 0 };
	char s[128];
	bool b = true;

	if (!up(&v, c))
		return;
	/* musl: nothing to trim, said plainly, and success (the memory is where purge puts it) */
	if (!hc_expect(&r, 0, "purge", "-p", v.spid, NULL) && c->musl &&
	    !strstr(r.out, "nothing to purge") && !strstr(r.out, "returns freed memory"))
		t_fail("purge on musl: %.300s", r.out);
	hres_free(&r);
	if (!t_failed() && c->musl && !hc_expect(&r, 0, "purge", "--json", "-p", v.spid, NULL)) {
		if (json_valid(r.out, s, sizeof(s)) || json_get_bool(r.out, "purged", &b) || b)
			t_fail("purge --json on musl: %.300s", r.out);
	}
	hres_free(&r);
	unharmed(&v);
	victim_stop(&v);
}

static void check_maps_doctor(const struct libc_case *c)
{
	struct victim v;
	struct hres r = { 0 };
	char s[128];

	if (!up(&v, c))
		return;
	if (!hc_expect(&r, 0, "maps", "-p", v.spid, NULL)) {
		snprintf(s, sizeof(s), "), %s%s: RSS", c->musl ? "musl" : "glibc",
			 c->is_static ? " (static)" : "");
		if (!strstr(r.out, s))
			t_fail("maps does not say '%s': %.300s", s, r.out);
		if (c->musl && (strstr(r.out, "glibc thread arenas") || strstr(r.out, "glibc's heaps")))
			t_fail("maps speaks of glibc on musl: %.600s", r.out);
	}
	hres_free(&r);
	if (!t_failed() && !hc_expect(&r, 0, "maps", "--json", "-p", v.spid, NULL) &&
	    (json_get_str(r.out, "libc", s, sizeof(s)) || strcmp(s, c->musl ? "musl" : "glibc")))
		t_fail("maps --json libc: %.300s", r.out);
	hres_free(&r);
	if (!t_failed() && !hc_expect(&r, 0, "doctor", "-p", v.spid, NULL)) {
		if (!strstr(r.out, c->musl ? "musl mallocng" : "glibc 2."))
			t_fail("doctor does not name the allocator: %.300s", r.out);
		no_wrong_hints(&r, "doctor");
	}
	hres_free(&r);
	unharmed(&v);
	victim_stop(&v);
}

/* list shows the process, named after its allocator, not left out */
static void check_list(const struct libc_case *c)
{
	struct victim v;
	struct hres r = { 0 };
	char want[96];

	if (!up(&v, c))
		return;
	if (!hc_expect(&r, 0, "list", "--json", NULL)) {
		snprintf(want, sizeof(want), "{\"pid\":%d,", (int)v.pid);
		const char *row = strstr(r.out, want);
		const char *al = c->musl ? "\"allocator\":\"musl mallocng\"" : "\"allocator\":\"glibc\"";
		const char *end = row ? strchr(row, '}') : NULL;

		if (!row || !end)
			t_fail("list leaves pid %d out: %.300s", (int)v.pid, r.out);
		else if (!memmem(row, (size_t)(end - row), al, strlen(al)))
			t_fail("list: %.*s", (int)(end - row), row);
	}
	hres_free(&r);
	unharmed(&v);
	victim_stop(&v);
}

/*
 * The first bytes of the victim's function name, as it runs (its symbol
 * from nm, moved by the load bias of a static-pie): what a hook changes.
 * 1 and its address in *at, 0 if file defines no such function, -1
 * (t_fail()ed) if its bytes cannot be read.
 */
int victim_fn_bytes(struct victim *v, const char *file, const char *name, uint8_t out[16],
		    unsigned long long *where)
{
	char path[512], mem[64], line[512], *maps;
	const char *argv[] = { "nm", "--defined-only", path, NULL };
	unsigned long long addr = 0, base = 0;
	struct hres r = { 0 };
	unsigned char eh[18];
	bool ok = false;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, file);
	run_prog(&r, argv, 10);
	for (char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char sym[128], type;

		if (sscanf(l, "%llx %c %127s", &addr, &type, sym) == 3 && !strcmp(sym, name) &&
		    strchr("TtWw", type))
			break;
		addr = 0;
	}
	hres_free(&r);
	if (!addr)
		return 0;
	f = fopen(path, "rb");
	if (!f || fread(eh, 1, sizeof(eh), f) != sizeof(eh))
		addr = 0;
	if (f)
		fclose(f);
	snprintf(mem, sizeof(mem), "/proc/%d/maps", (int)v->pid);
	maps = read_file_str(mem);
	/* ET_DYN: the first mapping of the file is its base */
	if (addr && eh[16] == 3 && maps) {
		const char *at = strstr(maps, path);

		while (at && at > maps && at[-1] != '\n')
			at--;
		if (at && sscanf(at, "%llx-", &base) == 1)
			addr += base;
	}
	free(maps);
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)v->pid);
	fd = open(mem, O_RDONLY | O_CLOEXEC);
	if (addr && fd >= 0)
		ok = pread(fd, out, 16, (off_t)addr) == 16;
	if (fd >= 0)
		close(fd);
	if (where)
		*where = addr;
	if (!ok) {
		snprintf(line, sizeof(line), "cannot read %s's first bytes in pid %d (at 0x%llx, base 0x%llx)",
			 name, (int)v->pid, addr, base);
		t_fail("%s", line);
	}
	return ok ? 1 : -1;
}

static bool fn_bytes(struct victim *v, const char *file, const char *name, uint8_t out[16])
{
	int rc = victim_fn_bytes(v, file, name, out, NULL);

	if (rc == 0)
		t_fail("%s defines no function %s", file, name);
	return rc > 0;
}

/* Bytes leak_here() holds in a dump, summed over its stacks (report's folded output). */
static double leak_bytes(struct victim *v, const char *out)
{
	struct hres r = { 0 };
	double sum = 0;

	if (hc_expect(&r, 0, "report", out, "--format", "folded", "-p", v->spid, NULL))
		return -1;
	for (char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *sp = strchr(l, ' '), *nl = strchr(l, '\n');

		if (sp && (!nl || sp < nl) && strstr(l, "leak_here") && strstr(l, "leak_here") < sp)
			sum += strtod(sp + 1, NULL);
	}
	if (sum == 0)
		t_note("report: %.600s", r.out);
	hres_free(&r);
	return sum;
}

/*
 * The whole cycle on a running process heapctl maps its freestanding
 * sampler into: prof on with threads inside malloc all along, a leak of
 * known size found under leak_here() with its stack, prof off keeping it,
 * prof reset taking every hook out (a static binary's functions are then
 * byte for byte what they were), prof on and reset again.  The victim's
 * churning threads check every block they free; the harm checks hold.
 */
static void check_profile(const struct libc_case *c)
{
	const char *const fns[] = { "malloc", "free", "calloc", "realloc" };
	uint8_t before[4][16], now[16];
	struct victim v;
	struct hres r = { 0 };
	char out[400], reply[256];
	double got, want = 16.0 * 1048576;
	long ops;

	if (!up(&v, c))
		return;
	snprintf(out, sizeof(out), "%s/libc-%d.heap", cfg.tmpdir, (int)v.pid);
	for (int i = 0; i < 4 && c->is_static; i++)
		if (!fn_bytes(&v, c->victim, fns[i], before[i]))
			goto out;
	if (victim_expect(&v, "churn 2", "churning", reply, sizeof(reply)))
		goto out;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", "64K", NULL))
		goto out;
	if (!strstr(r.out, "loaded into the process now") ||
	    (c->is_static && !strstr(r.out, "functions hooked inline")) ||
	    (!c->is_static && !strstr(r.out, "GOT slots hooked")))
		t_fail("prof on: does not say it loaded the sampler and how it hooked: %.600s", r.out);
	no_wrong_hints(&r, "prof on");
	hres_free(&r);
	/* its mappings stay, by design: the new normal for the harm checks */
	victim_baseline(&v);
	if (victim_expect(&v, "leak 16777216", "leaked", reply, sizeof(reply)) ||
	    hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL))
		goto out;
	hres_free(&r);
	got = leak_bytes(&v, out);
	/* 256 samples expected: a 4-sigma band is about +-25% */
	if (got < want * 0.7 || got > want * 1.45)
		t_fail("the dump gives leak_here() %.0f bytes, not about %.0f", got, want);
	else
		t_note("leak_here(): %.1f MiB sampled and un-biased, 16 MiB leaked", got / 1048576);
	remove(out);
	if (victim_expect(&v, "churned", "churned", reply, sizeof(reply)))
		goto out;
	ops = kv_long(reply, "ops", 0);
	if (kv_long(reply, "bad", -1) != 0 || ops <= 0)
		t_fail("the churning threads: %s", reply);
	if (hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))
		goto out;
	if (!strstr(r.out, "samples kept"))
		t_fail("prof off: %.300s", r.out);
	hres_free(&r);
	for (int round = 0; round < 2 && !t_failed(); round++) {
		if (hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL))
			goto out;
		if (!strstr(r.out, "hooks removed"))
			t_fail("prof reset: %.300s", r.out);
		hres_free(&r);
		if (!hc_expect(&r, 0, "prof", "status", "--json", "-p", v.spid, NULL) &&
		    !strstr(r.out, "\"hooks\":0,"))
			t_fail("prof reset left hooks: %.400s", r.out);
		hres_free(&r);
		for (int i = 0; i < 4 && c->is_static; i++)
			if (fn_bytes(&v, c->victim, fns[i], now) && memcmp(now, before[i], 16))
				t_fail("after prof reset %s's first bytes are not what they were", fns[i]);
		if (round == 0 && (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL) ||
				   strstr(r.out, "loaded into the process now")))
			t_fail("prof on again: %s %.300s", hres_desc(&r), r.out);
		hres_free(&r);
		if (round == 0 && hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))
			goto out;
		hres_free(&r);
	}
	if (!victim_expect(&v, "churned", "churned", reply, sizeof(reply)) &&
	    (kv_long(reply, "bad", -1) != 0 || kv_long(reply, "ops", 0) <= ops))
		t_fail("the churning threads after: %s", reply);
	unharmed(&v);
out:
	hres_free(&r);
	remove(out);
	victim_stop(&v);
}

/* A static binary with no symbols at all: never hooked by guesswork, and said so. */
static void test_stripped(void)
{
	struct victim v;
	struct hres r = { 0 };

	if (!victim_up(&v, "glibc_leak_static_stripped", NULL, NULL, false))
		return;
	hc_run(&r, NULL, "prof", "on", "-p", v.spid, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, "stripped") || !strstr(r.err, "hint:") ||
	    !strstr(r.err, "debug file"))
		t_fail("prof on, a stripped static binary: want a refusal naming what is missing: "
		       "%s %.400s", hres_desc(&r), r.err);
	hres_free(&r);
	if (hc_expect(&r, 0, "maps", "-p", v.spid, NULL) == 0 && strstr(r.out, "heapctl-"))
		t_fail("the refused sampler is mapped in the process anyway");
	hres_free(&r);
	unharmed(&v);
	victim_stop(&v);
}

#define CASES(prefix, c)                                                       \
	static void prefix##_info(void) { check_info(&c); }                    \
	static void prefix##_stats(void) { check_stats(&c); }                  \
	static void prefix##_purge(void) { check_purge(&c); }                  \
	static void prefix##_maps(void) { check_maps_doctor(&c); }             \
	static void prefix##_list(void) { check_list(&c); }                    \
	static void prefix##_profile(void) { check_profile(&c); }

CASES(md, musl_dyn)
CASES(ms, musl_static)
CASES(gs, glibc_static)
CASES(gp, glibc_static_pie)

#define ROWS(name, prefix)                                                      \
	{ name "-info", prefix##_info, 0 }, { name "-stats", prefix##_stats, 0 },  \
	{ name "-purge", prefix##_purge, 0 }, { name "-maps-doctor", prefix##_maps, 0 }, \
	{ name "-list", prefix##_list, 0 }, { name "-profile", prefix##_profile, 0 }

const struct itest t_musl_tests[] = {
	ROWS("libcs-musl", md),
	ROWS("libcs-musl-static", ms),
	ROWS("libcs-glibc-static", gs),
	ROWS("libcs-glibc-static-pie", gp),
	{ "libcs-glibc-static-stripped", test_stripped, 0 },
	{ NULL, NULL, 0 },
};
