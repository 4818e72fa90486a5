// SPDX-License-Identifier: MIT
/*
 * The glibc and tcmalloc drivers and `heapctl maps`, on real processes whose
 * own view of their heap is the reference: alloc_victim (glibc malloc, or
 * another allocator through LD_PRELOAD), tcmalloc_victim (linked with
 * gperftools' full libtcmalloc) and Debian's memcached (glibc malloc).
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "harm.h"
#include "itest.h"

#define FRAG_MIB 128

static bool start(struct victim *v, const char *name, const char *env)
{
	char why[512];

	if (victim_start_env(v, name, NULL, env, why, sizeof(why))) {
		t_fail("%s", why);
		return false;
	}
	return true;
}

/* A member of a nested JSON object: obj.key, copied into out. */
static bool json_sub(const char *s, const char *key, char *out, size_t sz)
{
	const char *val;
	size_t len;

	if (json_member(s, key, &val, &len) || len + 1 > sz)
		return false;
	memcpy(out, val, len);
	out[len] = '\0';
	return true;
}

static double json_num(const char *s, const char *key)
{
	double d = -1;

	if (json_get_num(s, key, &d))
		t_fail("no number '%s' in %.200s", key, s);
	return d;
}

static bool near(double a, double b, double rel, double abs_)
{
	double d = a > b ? a - b : b - a;

	return d <= abs_ || d <= rel * (a > b ? a : b);
}

/*
 * heapctl maps --json on pid: the categories add up to the reported RSS,
 * which is within 1% of smaps_rollup.  Returns the arena count, or -1.
 */
static int check_maps(const char *spid, double *rss_out)
{
	static const char *const cats[] = { "heap", "arena", "stack", "alloc", "file", "anon",
					    "shm" };
	char why[256], catobj[2048], one[256];
	double sum = 0, rss, rollup, narenas = -1;
	struct hres r = { 0 };
	size_t i;

	if (hc_expect(&r, 0, "maps", "-p", spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("maps --json: %s: %.200s", why, r.out);
		goto out;
	}
	rss = json_num(r.out, "rss");
	rollup = json_num(r.out, "rss_rollup");
	narenas = json_num(r.out, "glibc_arenas");
	if (!json_sub(r.out, "categories", catobj, sizeof(catobj))) {
		t_fail("maps --json: no categories: %.200s", r.out);
		goto out;
	}
	for (i = 0; i < sizeof(cats) / sizeof(cats[0]); i++) {
		if (!json_sub(catobj, cats[i], one, sizeof(one))) {
			t_fail("maps --json: no category %s", cats[i]);
			goto out;
		}
		sum += json_num(one, "rss");
	}
	t_note("maps: categories sum %.0f KiB, rss %.0f KiB, smaps_rollup %.0f KiB, %.0f arena heaps",
	       sum / 1024, rss / 1024, rollup / 1024, narenas);
	if (sum != rss)
		t_fail("maps: categories add up to %.0f, rss says %.0f", sum, rss);
	else if (!near(sum, rollup, 0.01, 0))
		t_fail("maps: categories add up to %.0f KiB, smaps_rollup says %.0f KiB", sum / 1024,
		       rollup / 1024);
	if (rss_out)
		*rss_out = rss;
	/* the human form too */
	hres_free(&r);
	if (!hc_expect(&r, 0, "maps", "-p", spid, NULL) &&
	    (!strstr(r.out, "glibc thread arenas") || !strstr(r.out, "RSS")))
		t_fail("maps: unexpected output %.300s", r.out);
out:
	hres_free(&r);
	return t_failed() ? -1 : (int)narenas;
}

static void test_glibc_frag(void)
{
	struct victim v;
	char reply[512], arg[32], why[256];
	long rss0, rss_frag, rss_after;
	struct hres r = { 0 };
	int narenas;

	if (!start(&v, "alloc_victim", NULL))
		return;
	victim_cmd(&v, "mi", reply, sizeof(reply), 5000);
	rss0 = kv_long(reply, "rss", -1);
	snprintf(arg, sizeof(arg), "frag %d", FRAG_MIB);
	if (victim_expect(&v, arg, "frag ok", reply, sizeof(reply)))
		goto out;
	rss_frag = kv_long(reply, "rss", -1);
	if (rss_frag - rss0 < FRAG_MIB * 1024 / 2) {
		t_fail("frag did not raise RSS: %ld -> %ld KiB", rss0, rss_frag);
		goto out;
	}
	/* the new arena's ---p tail and the thread's guard are the victim's own */
	victim_baseline(&v);

	/* stats against the victim's own mallinfo2() */
	if (hc_expect(&r, 0, "stats", "-p", v.spid, "--json", NULL))
		goto out_r;
	if (victim_expect(&v, "mi", "mi ", reply, sizeof(reply)))
		goto out_r;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("stats --json: %s", why);
		goto out_r;
	}
	{
		static const char *const keys[] = { "arena", "uordblks", "fordblks", "hblkhd" };
		char s[32];

		if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "glibc"))
			t_fail("stats: allocator is not glibc: %.200s", r.out);
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			double mine = json_num(r.out, keys[i]), theirs = (double)kv_long(reply,
											    keys[i], -1);

			/* the victim's reply itself allocates a little in between */
			if (!near(mine, theirs, 0.02, 256 * 1024))
				t_fail("stats %s=%.0f but mallinfo2 in the victim says %.0f", keys[i],
				       mine, theirs);
		}
		t_note("stats: fordblks %.1f MiB free in the arenas", json_num(r.out, "fordblks") /
									       1048576);
	}
	hres_free(&r);
	if (t_failed())
		goto out;

	/* stats --full: malloc_info's XML, parsed into a per-arena table */
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, "--full", NULL) &&
	    !strstr(r.out, "free-in-heap"))
		t_fail("stats --full: no per-arena table: %.300s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, "--raw", NULL) && !strstr(r.out, "<malloc"))
		t_fail("stats --raw: no XML: %.200s", r.out);
	hres_free(&r);

	narenas = check_maps(v.spid, NULL);
	if (narenas >= 0 && narenas < 1)
		t_fail("maps counted no glibc thread arena after frag in a thread");

	if (hc_expect(&r, 0, "purge", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	if (victim_expect(&v, "mi", "mi ", reply, sizeof(reply)))
		goto out;
	rss_after = kv_long(reply, "rss", -1);
	t_note("glibc purge: victim RSS %ld KiB -> %ld KiB (frag %d MiB)", rss_frag, rss_after,
	       FRAG_MIB);
	if (rss_frag - rss_after < FRAG_MIB * 1024 / 2)
		t_fail("purge: victim RSS went %ld -> %ld KiB, expected to drop by more than %d MiB",
		       rss_frag, rss_after, FRAG_MIB / 2);
	check_maps(v.spid, NULL);
	victim_check(&v, 0);
	goto out;
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/* Address range [lo, hi) of sym in the running exe of pid (PIE-aware). */
static bool sym_range(struct victim *v, const char *sym, unsigned long *lo, unsigned long *hi)
{
	char path[512], maps[64], line[1024];
	const char *argv[] = { "nm", "-S", "--defined-only", path, NULL };
	unsigned long base = 0, val, size;
	struct hres r = { 0 };
	const char *p;
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tcmalloc_victim", cfg.victim_dir);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)v->pid);
	f = fopen(maps, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, off;

		if (strstr(line, "/tcmalloc_victim") && sscanf(line, "%lx-%*x %*s %lx", &s, &off) == 2 &&
		    off == 0) {
			base = s;
			break;
		}
	}
	if (f)
		fclose(f);
	run_prog(&r, argv, 20);
	for (p = r.out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char name[128];

		if (sscanf(p, "%lx %lx %*s %127s", &val, &size, name) == 3 && !strcmp(name, sym)) {
			*lo = base + val;
			*hi = base + val + size;
			ok = base != 0;
			break;
		}
	}
	hres_free(&r);
	return ok;
}

/* Does any "@ 0x..." stack address of the gperftools profile text fall in [lo, hi)? */
static bool profile_has(const char *text, unsigned long lo, unsigned long hi)
{
	const char *p;

	for (p = strchr(text, '@'); p; p = strchr(p + 1, '@')) {
		const char *q = p + 1;

		while (*q && *q != '\n') {
			char *end;
			unsigned long a;

			while (*q == ' ')
				q++;
			a = strtoul(q, &end, 16);
			if (end == q)
				break;
			/* return addresses point after the call, still inside */
			if (a > lo && a <= hi)
				return true;
			q = end;
		}
	}
	return false;
}

static void test_tcmalloc(void)
{
	struct victim v;
	char reply[512], why[256], out[400];
	long rss_before, rss_after, tc_free;
	unsigned long lo = 0, hi = 0;
	struct hres r = { 0 };
	char *prof;

	if (!start(&v, "tcmalloc_victim", NULL))
		return;
	if (victim_expect(&v, "frag 128", "frag ok", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	if (hc_expect(&r, 0, "stats", "-p", v.spid, "--json", NULL))
		goto out_r;
	if (victim_expect(&v, "mi", "mi ", reply, sizeof(reply)))
		goto out_r;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("stats --json: %s", why);
		goto out_r;
	}
	{
		double mine = json_num(r.out, "generic.current_allocated_bytes");
		double theirs = (double)kv_long(reply, "tc_alloc", -1);
		char s[32];

		if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "tcmalloc"))
			t_fail("stats: allocator is not tcmalloc: %.200s", r.out);
		if (!near(mine, theirs, 0.05, 512 * 1024))
			t_fail("stats current_allocated_bytes=%.0f, the victim says %.0f", mine, theirs);
	}
	hres_free(&r);
	rss_before = kv_long(reply, "rss", -1);
	tc_free = kv_long(reply, "tc_free", -1);
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, "--full", NULL) && !strstr(r.out, "MALLOC"))
		t_fail("stats --full: no MallocExtension text: %.200s", r.out);
	hres_free(&r);
	if (hc_expect(&r, 0, "purge", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	if (victim_expect(&v, "mi", "mi ", reply, sizeof(reply)))
		goto out;
	rss_after = kv_long(reply, "rss", -1);
	t_note("tcmalloc purge: victim RSS %ld KiB -> %ld KiB (pageheap free %ld KiB -> %ld KiB)",
	       rss_before, rss_after, tc_free / 1024, kv_long(reply, "tc_free", -1) / 1024);
	if (rss_before - rss_after < 128 * 1024 / 4)
		t_fail("purge: victim RSS went %ld -> %ld KiB, expected a drop of 32 MiB or more",
		       rss_before, rss_after);
	if (t_failed())
		goto out;

	/* set: the old value and what tcmalloc holds now; an unknown name is refused */
	if (hc_expect(&r, 0, "get", "-p", v.spid, "tcmalloc.max_total_thread_cache_bytes", NULL))
		goto out_r;
	snprintf(reply, sizeof(reply), "tcmalloc.max_total_thread_cache_bytes: %.*s -> 67108864",
		 (int)strcspn(r.out, "\n"), r.out);
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v.spid, "tcmalloc.max_total_thread_cache_bytes",
		      "67108864", NULL))
		goto out_r;
	if (!strstr(r.out, reply))
		t_fail("set: want '%s', got: %.200s", reply, r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "get", "-p", v.spid, "tcmalloc.max_total_thread_cache_bytes", NULL) &&
	    strtoull(r.out, NULL, 10) != 67108864)
		t_fail("get after set: %.100s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 1, "set", "-p", v.spid, "tcmalloc.no_such_property", "1", NULL) &&
	    (!strstr(r.err, "no property") || !strstr(r.err, "hint: names: generic.")))
		t_fail("set of an unknown property: %.300s", r.err);
	hres_free(&r);
	if (t_failed())
		goto out;

	/* heap profiling, started at runtime */
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	if (victim_expect(&v, "grow 64", "grow ok", reply, sizeof(reply)))
		goto out;
	snprintf(out, sizeof(out), "%s/tc.%s.heap", cfg.tmpdir, v.spid);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL))
		goto out_r;
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	prof = read_file_str(out);
	if (!prof || strncmp(prof, "heap profile:", 13))
		t_fail("dump: %s is not a gperftools heap profile: %.80s", out, prof ? prof : "");
	else if (!sym_range(&v, "victim_grow_site", &lo, &hi))
		t_fail("no victim_grow_site in nm of tcmalloc_victim");
	else if (!profile_has(prof, lo, hi))
		t_fail("dump has no stack through victim_grow_site [%#lx, %#lx)", lo, hi);
	else
		t_note("dump names victim_grow_site (%#lx..%#lx)", lo, hi);
	free(prof);
	/* and heapctl report names it too: gperftools profiles read like jemalloc's */
	if (!t_failed()) {
		if (hc_expect(&r, 0, "report", out, "--format", "folded", "-p", v.spid, NULL))
			goto out_r;
		if (!r.out || !strstr(r.out, "victim_grow_site"))
			t_fail("heapctl report of the tcmalloc dump does not name victim_grow_site: "
			       "%.200s", r.out ? r.out : "");
		hres_free(&r);
	}
	victim_check(&v, 0);
	goto out;
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/*
 * Promise: heapctl writes nothing into the target's stderr and leaves no
 * file or directory in the target's temporary directories.  One command:
 * the exit code is want (-1: 0 or 1), then both are checked.
 */
static bool clean_step(struct victim *v, const char *errs0, int want, struct hres *r,
		       const char *what, const char *a1, const char *a2, const char *a3)
{
	unsigned int left;
	char *errs;

	hc_run(r, NULL, a1, "-p", v->spid, a2, a3, NULL);
	if (hres_crash(r) || (want >= 0 && hres_exit(r) != want) ||
	    (want < 0 && hres_exit(r) != 0 && hres_exit(r) != 1)) {
		t_fail("%s: %s", what, hres_desc(r));
		return false;
	}
	left = dump_leftovers(v->pid, false, NULL);
	if (left)
		t_fail("%s left %u file(s)/directorie(s) .heapctl-%s-* in the target's /tmp", what,
		       left, v->spid);
	errs = read_file_str(v->errpath);
	if (!errs || strcmp(errs, errs0))
		t_fail("%s wrote into the target's stderr: %.200s", what,
		       errs ? errs + strlen(errs0) * (strlen(errs) >= strlen(errs0)) : "(unreadable)");
	free(errs);
	return !t_failed();
}

/* prof on, dump, prof off, stats --full, dump --json: no leftovers, no stderr. */
static void clean_cycle(struct victim *v, int on_want)
{
	char out[400], *errs0 = read_file_str(v->errpath);
	struct hres r = { 0 };

	snprintf(out, sizeof(out), "%s/clean.%s.heap", cfg.tmpdir, v->spid);
	if (!errs0) {
		t_fail("cannot read the victim's stderr %s", v->errpath);
		return;
	}
	clean_step(v, errs0, on_want, &r, "prof on", "prof", "on", NULL);
	hres_free(&r);
	if (clean_step(v, errs0, on_want, &r, "dump", "dump", "-o", out))
		unlink(out);
	hres_free(&r);
	clean_step(v, errs0, 0, &r, "prof off", "prof", "off", NULL);
	hres_free(&r);
	clean_step(v, errs0, 0, &r, "stats --full", "stats", "--full", NULL);
	hres_free(&r);
	clean_step(v, errs0, 0, &r, "prof status", "prof", "status", NULL);
	hres_free(&r);
	clean_step(v, errs0, -1, &r, "dump (profiling off)", "dump", "-o", out);
	unlink(out);
	hres_free(&r);
	free(errs0);
}

/*
 * tcmalloc: also, gperftools' flags that heapctl lowers for its profiling
 * (verbosity during the start, automatic dumps while it runs) come back as
 * the environment set them.
 */
static void test_clean_tcmalloc(void)
{
	char f0[256], f1[256], f2[256];
	struct victim v;
	struct hres r = { 0 };

	if (!start(&v, "tcmalloc_victim", "HEAP_PROFILE_INUSE_INTERVAL=12345678"))
		return;
	clean_cycle(&v, 0);
	if (victim_expect(&v, "tcflags", "tcflags", f0, sizeof(f0)))
		goto out;
	if (kv_long(f0, "verbose", -1) != 0 || kv_long(f0, "inuse", -1) != 12345678 ||
	    kv_long(f0, "alloc", -1) != 1 << 30) {
		t_fail("gperftools' flags after prof on/off: %s", f0);
		goto out;
	}
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	if (victim_expect(&v, "tcflags", "tcflags", f1, sizeof(f1)))
		goto out;
	if (kv_long(f1, "verbose", -1) != 0 || kv_long(f1, "inuse", -1) != 0 ||
	    kv_long(f1, "alloc", -1) != 0)
		t_fail("gperftools' flags while heapctl profiles: %s", f1);
	if (hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))
		goto out_r;
	if (victim_expect(&v, "tcflags", "tcflags", f2, sizeof(f2)))
		goto out_r;
	if (strcmp(f0, f2))
		t_fail("gperftools' flags after prof off: %s, before prof on: %s", f2, f0);
	if (!t_failed())
		victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/*
 * Every command borrows a thread at most once (-v prints "gave tid ... back"
 * per borrow): prof on/off read the old state in the same step, purge
 * reads its before and after figures in the same borrow as the purge.  A
 * refusal may borrow none.  want: the exit status each command must have.
 */
struct once_cmd {
	const char *a[5]; /* "@OUT": a profile path in the scratch directory */
	int want;         /* exit status: 0, 1 (refused) */
	int borrows;      /* 1; 0: none, answered without a thread; -1: 0 or 1 (a refusal) */
};

static void borrow_once(struct victim *v, const struct once_cmd *cmds, size_t n)
{
	char out[400];

	snprintf(out, sizeof(out), "%s/once.%s.heap", cfg.tmpdir, v->spid);
	for (size_t i = 0; i < n && !t_failed(); i++) {
		const char *a[5];
		struct hres r = { 0 };
		int borrows, want = cmds[i].borrows;

		for (size_t k = 0; k < 5; k++)
			a[k] = cmds[i].a[k] && !strcmp(cmds[i].a[k], "@OUT") ? out : cmds[i].a[k];
		hc_run(&r, NULL, "-v", a[0], "-p", v->spid, a[1], a[2], a[3], NULL);
		if (hres_crash(&r) || hres_exit(&r) != cmds[i].want)
			t_fail("%s %s: %s", a[0], a[1] ? a[1] : "", hres_desc(&r));
		borrows = count_str(r.err, "gave tid ");
		if (want >= 0 ? borrows != want : borrows > 1)
			t_fail("%s %s %s: borrowed %d times, wanted %s", a[0], a[1] ? a[1] : "",
			       a[2] ? a[2] : "", borrows,
			       want < 0 ? "at most once" : want ? "once" : "never");
		hres_free(&r);
	}
	unlink(out);
	if (!t_failed())
		victim_check(v, 0);
}

#define ONCE_COMMON                                                                \
	{ { "stats" }, 0, 1 }, { { "stats", "--full" }, 0, 1 },                     \
		{ { "stats", "--json" }, 0, 1 }, { { "purge" }, 0, 1 },                      \
		{ { "doctor" }, 0, 1 }, { { "doctor", "--json" }, 0, 1 },                   \
		{ { "stats", "--format", "prometheus" }, 0, 1 }

/*
 * The pause at its floor: on a thread blocked in read(), a command that
 * makes one call stops the thread twice, once to take it and once where
 * the call returns into the target's restorer, and a command of two calls
 * four times; nothing is mapped in the target, ever.  -v says the stops.
 */
static void test_borrow_stops(void)
{
	static const struct {
		const char *a[3];
		unsigned int stops;
	} cmds[] = {
		{ { "get", "opt.narenas" }, 2 },
		{ { "prof", "on" }, 2 },
		{ { "prof", "off" }, 2 },
		{ { "prof", "status" }, 4 },
	};
	struct victim *v = shared_victim();
	struct leftovers lo;
	char *maps, stid[16], want[64];

	if (!v)
		return;
	maps = maps_snap(v->pid);
	snprintf(stid, sizeof(stid), "%d", (int)v->t_read);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		struct hres r = { 0 };

		hc_run(&r, NULL, "-v", cmds[i].a[0], "-p", v->spid, "--tid", stid, cmds[i].a[1],
		       cmds[i].a[2], NULL);
		snprintf(want, sizeof(want), "(%u ptrace stops)", cmds[i].stops);
		if (hres_crash(&r) || hres_exit(&r) != 0)
			t_fail("%s %s: %s", cmds[i].a[0], cmds[i].a[1], hres_desc(&r));
		else if (!strstr(r.err, want))
			t_fail("%s %s: wanted %s: %.400s", cmds[i].a[0], cmds[i].a[1], want,
			       strstr(r.err, "borrowed tid") ? strstr(r.err, "borrowed tid") : r.err);
		hres_free(&r);
	}
	if (!t_failed() && maps && maps_classify(v->pid, maps, &lo) == 0 && lo.odd)
		t_fail("new executable mappings in the victim: %s", lo.odd_desc);
	free(maps);
	if (!t_failed())
		victim_check(v, 0);
}

static void test_once_jemalloc(void)
{
	static const struct once_cmd cmds[] = {
		ONCE_COMMON,
		{ { "info" }, 0, 1 },
		{ { "prof", "status" }, 0, 1 },
		{ { "prof", "on" }, 0, 1 },
		{ { "dump", "-o", "@OUT" }, 0, 1 },
		{ { "prof", "off" }, 0, 1 },
		{ { "get", "opt.narenas" }, 0, 1 },
		{ { "get", "stats.allocated" }, 0, 1 },
		{ { "set", "prof.active", "false" }, 0, 1 },
		{ { "set", "no.such.control", "1" }, 1, -1 },
	};
	struct victim v;
	char why[512];

	if (victim_start(&v, "jemalloc_victim", "prof:true,prof_active:false", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	borrow_once(&v, cmds, sizeof(cmds) / sizeof(cmds[0]));
	victim_stop(&v);
}

static void test_once_tcmalloc(void)
{
	static const struct once_cmd cmds[] = {
		ONCE_COMMON,
		{ { "info" }, 0, 1 },
		{ { "prof", "status" }, 0, 1 },
		{ { "prof", "on" }, 0, 1 },
		{ { "dump", "-o", "@OUT" }, 0, 1 },
		{ { "prof", "off" }, 0, 1 },
		{ { "dump", "-o", "@OUT" }, 1, -1 }, /* the profiler is stopped */
		{ { "get", "generic.current_allocated_bytes" }, 0, 1 },
		{ { "set", "tcmalloc.max_total_thread_cache_bytes", "33554432" }, 0, 1 },
	};
	struct victim v;

	if (!start(&v, "tcmalloc_victim", NULL))
		return;
	borrow_once(&v, cmds, sizeof(cmds) / sizeof(cmds[0]));
	victim_stop(&v);
}

static void test_once_glibc(void)
{
	static const struct once_cmd cmds[] = {
		ONCE_COMMON,
		{ { "info" }, 0, 0 }, /* its version and settings are read, not asked */
		{ { "prof", "status" }, 0, 0 }, /* glibc has no profiler to ask */
		{ { "prof", "on", "--sampler", "native" }, 1, 0 },
		{ { "prof", "on" }, 0, 1 }, /* heapctl's sampler: loaded, hooked, on */
		{ { "prof", "status" }, 0, 0 },
		{ { "prof", "off" }, 0, 1 },
		{ { "get", "uordblks" }, 0, 1 },
		{ { "set", "M_TRIM_THRESHOLD", "262144" }, 0, 1 },
	};
	struct victim v;

	if (!start(&v, "alloc_victim", NULL))
		return;
	borrow_once(&v, cmds, sizeof(cmds) / sizeof(cmds[0]));
	victim_stop(&v);
}

static void test_clean_jemalloc(void)
{
	struct victim v;
	char why[512];

	if (victim_start(&v, "jemalloc_victim", "prof:true,prof_active:false", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	clean_cycle(&v, 0);
	if (!t_failed())
		victim_check(&v, 0);
	victim_stop(&v);
}

static void test_clean_glibc(void)
{
	struct victim v;

	if (!start(&v, "alloc_victim", NULL))
		return;
	clean_cycle(&v, 0); /* prof on loads heapctl's sampler */
	if (!t_failed())
		victim_check(&v, 0);
	victim_stop(&v);
}

/*
 * A gperftools profile: each bucket "A: B [C: D] @ 0x..", the header's
 * totals their sums.  heapctl's own GetHeapProfile() buffers (1 MiB each)
 * are in no bucket and no total.
 */
static void check_tc_profile(const char *prof)
{
	long long h[4], b[4], sum[4] = { 0, 0, 0, 0 };
	const char *p = strchr(prof, '\n');
	int n;

	if (sscanf(prof, "heap profile: %lld: %lld [%lld: %lld] @ heapprofile", &h[0], &h[1],
		   &h[2], &h[3]) != 4) {
		t_fail("profile header: %.80s", prof);
		return;
	}
	for (; p && p[1] && sscanf(p + 1, "%lld: %lld [%lld: %lld] @%n", &b[0], &b[1], &b[2], &b[3],
				   &n) == 4;
	     p = strchr(p + 1, '\n')) {
		for (int i = 0; i < 4; i++)
			sum[i] += b[i];
		if ((b[0] && b[1] == b[0] * 1048576) || (b[2] && b[3] == b[2] * 1048576))
			t_fail("the profile holds 1 MiB buffers (heapctl's own): %.*s",
			       (int)strcspn(p + 1, "\n"), p + 1);
	}
	for (int i = 0; i < 4; i++)
		if (sum[i] != h[i])
			t_fail("profile header total %d is %lld, its buckets add up to %lld", i, h[i],
			       sum[i]);
}

/* tcmalloc speaks its own language: name, profiler, hints, next step. */
static void test_tcmalloc_words(void)
{
	char out[400], reply[256], s[64];
	struct victim v;
	struct hres r = { 0 };
	char *prof;

	if (!start(&v, "tcmalloc_victim", NULL))
		return;
	if (!hc_expect(&r, 0, "info", "-p", v.spid, NULL) &&
	    (strstr(r.out, "opt.prof") || strstr(r.out, "MALLOC_CONF") || !strstr(r.out, "HEAPPROFILE")))
		t_fail("info speaks jemalloc to tcmalloc: %.400s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "prof", "status", "-p", v.spid, NULL) &&
	    (strstr(r.out, "opt.prof") || strstr(r.out, "MALLOC_CONF")))
		t_fail("prof status speaks jemalloc to tcmalloc: %.400s", r.out);
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	/* something to see, and an earlier buffer in the cumulative counts */
	victim_expect(&v, "grow 32", "grow ok", reply, sizeof(reply));
	snprintf(out, sizeof(out), "%s/words.%s.heap", cfg.tmpdir, v.spid);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL))
		goto out_r;
	hres_free(&r);
	if (hc_expect(&r, 0, "stats", "-p", v.spid, "--full", NULL))
		goto out_r;
	hres_free(&r);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL))
		goto out_r;
	if (!strstr(r.out, "next: pprof") || strstr(r.out, "jeprof"))
		t_fail("dump of a tcmalloc profile suggests: %.300s", r.out);
	hres_free(&r);
	prof = read_file_str(out);
	if (!prof)
		t_fail("no profile at %s", out);
	else
		check_tc_profile(prof);
	free(prof);
	if (!hc_expect(&r, 0, "report", out, "-p", v.spid, NULL) &&
	    (strstr(r.out, "sampled every 0") || strstr(r.out, "jemalloc")))
		t_fail("report of a tcmalloc profile: %.300s", r.out);
	hres_free(&r);
	unlink(out);
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);

	/* tcmalloc_minimal: the name whole, and the right fix */
	if (access(LIBDIR "libtcmalloc_minimal.so.4", R_OK)) {
		t_note("%s missing: tcmalloc_minimal not checked", LIBDIR "libtcmalloc_minimal.so.4");
		return;
	}
	snprintf(out, sizeof(out), "LD_PRELOAD=" LIBDIR "libtcmalloc_minimal.so.4");
	if (!start(&v, "alloc_victim", out))
		return;
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, "--json", NULL) &&
	    (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "tcmalloc_minimal")))
		t_fail("stats --json allocator of tcmalloc_minimal: %.200s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, NULL) && !strstr(r.out, "tcmalloc_minimal"))
		t_fail("stats of tcmalloc_minimal: %.200s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 1, "prof", "on", "-p", v.spid, "--sampler", "native", NULL) &&
	    (strstr(r.err, "MALLOC_CONF") || !strstr(r.err, "libtcmalloc")))
		t_fail("prof on, tcmalloc_minimal: the hint should name libtcmalloc: %.300s", r.err);
	hres_free(&r);
	if (!hc_expect(&r, 0, "prof", "status", "-p", v.spid, "--json", NULL) &&
	    (json_get_bool(r.out, "available", &(bool){ true }) || !strstr(r.out, "\"available\":false")))
		t_fail("prof status --json, tcmalloc_minimal: %.200s", r.out);
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);
	return;
out_r:
	hres_free(&r);
	victim_stop(&v);
}

/* dump --json, and the warning when profiling is off (jemalloc can dump then). */
static void test_dump_json(void)
{
	char out[400], why[256], s[64];
	struct victim v;
	struct hres r = { 0 };
	double bytes = -1;
	bool active = true;

	if (victim_start(&v, "jemalloc_victim", "prof:true,prof_active:false", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(out, sizeof(out), "%s/dj.%s.heap", cfg.tmpdir, v.spid);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, "--json", NULL))
		goto out_r;
	if (json_valid(r.out, why, sizeof(why)))
		t_fail("dump --json: %s: %.200s", why, r.out);
	else if (json_get_str(r.out, "path", s, sizeof(s)) || !strstr(out, s) ||
		 json_get_num(r.out, "bytes", &bytes) || bytes < 10 ||
		 json_get_bool(r.out, "active", &active) || active ||
		 json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "jemalloc") ||
		 json_get_str(r.out, "format", s, sizeof(s)) || strcmp(s, "jemalloc"))
		t_fail("dump --json: %.300s", r.out);
	if (!strstr(r.err, "warning: profiling is not active"))
		t_fail("dump with prof.active off did not warn: %.300s", r.err);
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, "--json", NULL))
		goto out_r;
	if (json_get_bool(r.out, "active", &active) || !active ||
	    json_get_num(r.out, "period", &bytes) || bytes != 524288 ||
	    json_get_num(r.out, "samples", &bytes) || bytes < 0)
		t_fail("dump --json with profiling on: active, the period (jemalloc's 512 KiB) and "
		       "the samples: %.300s", r.out);
	if (strstr(r.err, "warning"))
		t_fail("dump with profiling on warned: %.300s", r.err);
	hres_free(&r);
	if (!hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL) &&
	    !strstr(r.out, "next: jeprof"))
		t_fail("dump of a jemalloc profile suggests: %.300s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "prof", "status", "-p", v.spid, "--json", NULL) &&
	    !strstr(r.out, "\"available\":true"))
		t_fail("prof status --json, jemalloc with opt.prof: %.200s", r.out);
	hres_free(&r);
	/* jemalloc's own prof.reset: the samples go, prof.active stays on */
	if (!hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL) &&
	    !strstr(r.out, "prof.reset: the samples were discarded"))
		t_fail("prof reset, jemalloc with opt.prof: %.200s", r.out);
	hres_free(&r);
	expect_ctl(&v, "prof.active", "true", "prof reset");
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
	unlink(out);
	victim_check(&v, 0);
out_r:
	hres_free(&r);
	victim_stop(&v);
}

/* glibc: no profiler is a state, not an error; only "prof on" fails. */
static void test_prof_glibc(void)
{
	struct victim v;
	struct hres r = { 0 };
	char why[256], path[320];

	if (!start(&v, "alloc_victim", NULL))
		return;
	if (!hc_expect(&r, 0, "prof", "status", "-p", v.spid, NULL) &&
	    (!strstr(r.out, "has no heap profiler") || !strstr(r.out, "loads heapctl's sampler")))
		t_fail("prof status, glibc: %.200s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "prof", "status", "-p", v.spid, "--json", NULL) &&
	    (json_valid(r.out, why, sizeof(why)) || !strstr(r.out, "\"available\":false")))
		t_fail("prof status --json, glibc: %.200s", r.out);
	hres_free(&r);
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
	hres_free(&r);
	if (!hc_expect(&r, 1, "prof", "on", "-p", v.spid, "--sampler", "native", NULL) &&
	    (!strstr(r.err, "hint:") || !strstr(r.err, "jemalloc") || !strstr(r.err, "tcmalloc")))
		t_fail("prof on, glibc: the hint should name the allocators that can: %.300s", r.err);
	hres_free(&r);
	/* a dump before any "prof on": heapctl's sampler is not there yet, and it says so */
	snprintf(path, sizeof(path), "%s/glibc-noprof.heap", cfg.tmpdir);
	if (!hc_expect(&r, 1, "dump", "-p", v.spid, "-o", path, NULL) &&
	    (!strstr(r.err, "heapctl: error:") || !strstr(r.err, "sampler is not loaded") ||
	     !strstr(r.err, "hint: run 'heapctl prof on")))
		t_fail("dump before prof on, glibc: %.300s", r.err);
	else if (!access(path, F_OK))
		t_fail("a refused dump wrote %s", path);
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);
}

/* Shared memory is shared memory, not code (a database's buffer pool). */
static void test_maps_shm(void)
{
	char reply[256], catobj[2048], one[256], diag[512];
	struct victim v;
	struct hres r = { 0 };
	double shm, file;

	if (!start(&v, "alloc_victim", NULL))
		return;
	if (victim_expect(&v, "shm 96", "shm ok", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	if (check_maps(v.spid, NULL) < 0)
		goto out;
	if (hc_expect(&r, 0, "maps", "-p", v.spid, "--json", NULL))
		goto out_r;
	if (!json_sub(r.out, "categories", catobj, sizeof(catobj)) ||
	    !json_sub(catobj, "shm", one, sizeof(one))) {
		t_fail("maps --json: no categories.shm: %.300s", r.out);
		goto out_r;
	}
	shm = json_num(one, "rss");
	if (!json_sub(catobj, "file", one, sizeof(one)))
		goto out_r;
	file = json_num(one, "rss");
	t_note("maps: shm %.0f KiB, file %.0f KiB", shm / 1024, file / 1024);
	if (shm < 0.9 * 192 * 1048576)
		t_fail("maps: 192 MiB of shared memory touched, categories.shm.rss is %.0f KiB",
		       shm / 1024);
	if (file > 64 * 1048576)
		t_fail("maps: shared memory counted as file-backed (%.0f KiB)", file / 1024);
	if (json_get_str(r.out, "diagnosis", diag, sizeof(diag)) || strstr(diag, "code") ||
	    !strstr(diag, "shared memory"))
		t_fail("maps: the diagnosis blames code for shared memory: %s", diag);
	hres_free(&r);
	if (!hc_expect(&r, 0, "maps", "-p", v.spid, NULL) && !strstr(r.out, "shared memory"))
		t_fail("maps: no shared memory line: %.400s", r.out);
	victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

static void preload_info(const char *lib, const char *alloc)
{
	char env[300], path[256];
	struct victim v;
	struct hres r = { 0 };

	snprintf(path, sizeof(path), LIBDIR "%s", lib);
	if (access(path, R_OK)) {
		t_skip(true, "%s missing", path);
		return;
	}
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", path);
	if (!start(&v, "alloc_victim", env))
		return;
	if (!hc_expect(&r, 0, "info", "-p", v.spid, NULL)) {
		const char *a = strstr(r.out, "allocator"), *m = strstr(r.out, "malloc from");

		if (!a || strncmp(a + strspn(a + 9, " ") + 9, alloc, strlen(alloc)))
			t_fail("info: allocator is not %s: %.300s", alloc, r.out);
		else if (!m || !strstr(m, lib))
			t_fail("info: malloc is not served by %s: %.300s", lib, r.out);
		else
			victim_check(&v, 0);
	}
	hres_free(&r);
	victim_stop(&v);
}

static void test_preload_jemalloc(void)
{
	preload_info("libjemalloc.so.2", "jemalloc");
}

static void test_preload_tcmalloc(void)
{
	preload_info("libtcmalloc.so.4", "tcmalloc");
}

/* ---- mimalloc -------------------------------------------------------- */

/* The victim's "mimi" reply: mimalloc's own figures.  false (t_fail) without them. */
static bool mimi(struct victim *v, char *reply, size_t sz)
{
	if (victim_expect(v, "mimi", "mimi ", reply, sz))
		return false;
	if (kv_long(reply, "version", -1) <= 0) {
		t_fail("the victim does not run mimalloc: %s", reply);
		return false;
	}
	return true;
}

/* mi_version()'s number as heapctl prints it: 209 is 2.0.9 */
static void mi_words(long ver, char *out, size_t sz)
{
	snprintf(out, sz, "%ld.%ld.%ld", ver / 100, ver / 10 % 10, ver % 10);
}

/*
 * info names mimalloc with the version the victim's mi_version() gives, the
 * library, and how it came (LD_PRELOAD, or linked: the search order);
 * --json the same, with the options as the victim's mi_option_get() reads
 * them; list shows it, with no profiler of its own.
 */
static void mi_info_of(bool linked)
{
	char reply[512], want[128], s[256], ver[32], conf[2048];
	struct victim v;
	struct hres r = { 0 };
	double d = -1;

	if (!mimalloc_up(&v, linked, NULL))
		return;
	if (!mimi(&v, reply, sizeof(reply)))
		goto out;
	mi_words(kv_long(reply, "version", -1), ver, sizeof(ver));
	snprintf(want, sizeof(want), "allocator     mimalloc %s\n", ver);
	if (!hc_expect(&r, 0, "info", "-p", v.spid, NULL) &&
	    (!strstr(r.out, want) || !strstr(r.out, "libmimalloc.so.2") ||
	     !strstr(r.out, linked ? "(first in the dynamic linker's search order)" :
				     "(LD_PRELOAD)") ||
	     !strstr(r.out, "decommit_delay")))
		t_fail("info: want '%.*s', libmimalloc, how it came and the options: %.600s",
		       (int)strlen(want) - 1, want, r.out);
	hres_free(&r);
	if (hc_expect(&r, 0, "info", "-p", v.spid, "--json", NULL))
		goto out_r;
	if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "mimalloc") ||
	    json_get_str(r.out, "object", s, sizeof(s)) || !strstr(s, "libmimalloc.so.2") ||
	    json_get_str(r.out, "malloc_via", s, sizeof(s)) ||
	    strcmp(s, linked ? "search order" : "LD_PRELOAD")) {
		t_fail("info --json: %.400s", r.out);
		goto out_r;
	}
	if (!json_sub(r.out, "conf", conf, sizeof(conf)) || json_get_num(conf, "decommit_delay", &d) ||
	    victim_expect(&v, "miopt 15", "miopt value=", reply, sizeof(reply)) ||
	    d != (double)kv_long(reply, "value", -2))
		t_fail("info --json: decommit_delay %.0f, the victim's mi_option_get(15): %s", d, reply);
	hres_free(&r);
	if (hc_expect(&r, 0, "list", "--json", NULL))
		goto out_r;
	snprintf(want, sizeof(want), "\"pid\":%s,", v.spid);
	{
		const char *row = strstr(r.out, want);
		const char *eol = row ? strchr(row, '}') : NULL;

		if (!row || !eol || !memmem(row, (size_t)(eol - row), "\"allocator\":\"mimalloc\"", 22) ||
		    !memmem(row, (size_t)(eol - row), "\"prof\":\"n/a\"", 12))
			t_fail("list --json: pid %s is not shown as mimalloc without a profiler: %.300s",
			       v.spid, row ? row : r.out);
	}
	if (!t_failed())
		victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

static void test_mimalloc_info(void)
{
	mi_info_of(false);
}

static void test_mimalloc_linked(void)
{
	mi_info_of(true);
}

/*
 * stats against the victim's own mi_process_info() and statistics text, as
 * JSON, for humans and for Prometheus (no allocated or dirty series: it
 * counts no live bytes).
 */
static void test_mimalloc_stats(void)
{
	char reply[512], why[256], s[64];
	struct victim v;
	struct hres r = { 0 };

	if (!mimalloc_up(&v, false, NULL))
		return;
	if (victim_expect(&v, "frag 64", "frag ok", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	if (hc_expect(&r, 0, "stats", "-p", v.spid, "--json", NULL))
		goto out_r;
	if (!mimi(&v, reply, sizeof(reply)))
		goto out_r;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("stats --json: %s: %.200s", why, r.out);
		goto out_r;
	}
	mi_words(kv_long(reply, "version", -1), why, sizeof(why));
	if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "mimalloc") ||
	    json_get_str(r.out, "version", s, sizeof(s)) || strcmp(s, why) ||
	    strstr(r.out, "\"allocated\"") || strstr(r.out, "\"dirty\""))
		t_fail("stats --json: want mimalloc %s, no allocated or dirty: %.300s", why, r.out);
	{
		static const char *const keys[][2] = { { "committed", "commit" },
						       { "peak_committed", "peak_commit" },
						       { "reserved", "reserved" },
						       { "peak_rss", "peak_rss" } };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			double mine = json_num(r.out, keys[i][0]);
			double theirs = (double)kv_long(reply, keys[i][1], -1);

			/* the victim's reply and heapctl's borrow allocate a little in between */
			if (theirs < 32 * 1048576 || !near(mine, theirs, 0.02, 1024 * 1024))
				t_fail("stats %s=%.0f but the victim says %s=%.0f", keys[i][0], mine,
				       keys[i][1], theirs);
		}
	}
	hres_free(&r);
	if (t_failed())
		goto out;
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, NULL) &&
	    (!strstr(r.out, "mimalloc ") || !strstr(r.out, "committed") || !strstr(r.out, "rss")))
		t_fail("stats: %.400s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "stats", "-p", v.spid, "--format", "prometheus", NULL) &&
	    (!strstr(r.out, "heapctl_committed_bytes{") || !strstr(r.out, "heapctl_reserved_bytes{") ||
	     !strstr(r.out, "allocator=\"mimalloc\"") || strstr(r.out, "heapctl_allocated_bytes") ||
	     strstr(r.out, "heapctl_dirty_bytes") || !strstr(r.out, "heapctl_finding_bytes{")))
		t_fail("stats --format prometheus: %.600s", r.out);
	hres_free(&r);
	victim_check(&v, 0);
	goto out;
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/*
 * stats --full brings mi_stats_print_out()'s text here and writes nothing
 * into the victim's stderr; then prof on (the sampler), dump, prof off and
 * the rest of the clean cycle.
 */
static void test_clean_mimalloc(void)
{
	char *errs0 = NULL;
	struct victim v;
	struct hres r = { 0 };

	if (!mimalloc_up(&v, false, NULL))
		return;
	errs0 = read_file_str(v.errpath);
	if (!errs0) {
		t_fail("cannot read the victim's stderr %s", v.errpath);
		goto out;
	}
	if (clean_step(&v, errs0, 0, &r, "stats --full", "stats", "--full", NULL) &&
	    (!strstr(r.out, "heap stats") || !strstr(r.out, "reserved:") ||
	     !strstr(r.out, "committed:") || !strstr(r.out, "process:")))
		t_fail("stats --full: not mimalloc's statistics: %.400s", r.out);
	hres_free(&r);
	if (!t_failed())
		clean_cycle(&v, 0);
	if (!t_failed())
		victim_check(&v, 0);
out:
	free(errs0);
	victim_stop(&v);
}

/*
 * purge (mi_collect(true)) after a thread freed 128 MiB and exited: the
 * victim's RSS and mimalloc's commit drop.  Borrowing the main thread,
 * then the reader, which never allocated and so has no heap of mimalloc's
 * to collect from until heapctl gives it one.
 */
static void mi_purge_on(struct victim *v, const char *tid)
{
	char before[512], after[512];
	struct hres r = { 0 };
	long rss0, rss1, c0, c1;

	if (victim_expect(v, "frag 128", "frag ok", before, sizeof(before)) ||
	    !mimi(v, before, sizeof(before)))
		return;
	victim_baseline(v);
	rss0 = kv_long(before, "rss", -1);
	c0 = kv_long(before, "commit", -1);
	if (rss0 < 100 * 1024) {
		t_fail("setup: 128 MiB freed by a thread that exited, but the victim's RSS is %ld KiB",
		       rss0);
		return;
	}
	if (hc_expect(&r, 0, "purge", "-p", v->spid, tid ? "--tid" : NULL, tid, NULL))
		goto out;
	if (!strstr(r.out, "committed") || !strstr(r.out, "released"))
		t_fail("purge: %.400s", r.out);
	hres_free(&r);
	if (!mimi(v, after, sizeof(after)))
		return;
	rss1 = kv_long(after, "rss", -1);
	c1 = kv_long(after, "commit", -1);
	t_note("mimalloc purge%s%s: victim RSS %ld KiB -> %ld KiB, committed %ld KiB -> %ld KiB",
	       tid ? " --tid " : "", tid ? tid : "", rss0, rss1, c0 / 1024, c1 / 1024);
	if (rss0 - rss1 < 64 * 1024 || c0 - c1 < 64 * 1048576L)
		t_fail("purge%s%s: the victim's RSS went %ld -> %ld KiB and mimalloc's commit %ld -> "
		       "%ld; wanted both down by 64 MiB or more",
		       tid ? " --tid " : "", tid ? tid : "", rss0, rss1, c0, c1);
out:
	hres_free(&r);
}

static void test_mimalloc_purge(void)
{
	struct victim v;
	struct hres r = { 0 };
	char tid[16];

	/*
	 * mimalloc decommits what a segment freed 25 ms later by itself, at
	 * the next allocation that looks (decommit_delay): on a slow machine
	 * before the test could see it.  Here it waits for heapctl's purge.
	 */
	if (!mimalloc_up(&v, false, "MIMALLOC_DECOMMIT_DELAY=3600000"))
		return;
	mi_purge_on(&v, NULL);
	snprintf(tid, sizeof(tid), "%d", (int)v.t_read);
	if (!t_failed())
		mi_purge_on(&v, tid);
	if (t_failed())
		goto out;
	if (!hc_expect(&r, 2, "purge", "-p", v.spid, "--arena", "0", NULL) &&
	    (!strstr(r.err, "heapctl: error:") || !strstr(r.err, "hint: run 'heapctl purge' without")))
		t_fail("purge --arena 0: %.300s", r.err);
	hres_free(&r);
	victim_check(&v, 0);
out:
	victim_stop(&v);
}

/* One option, get and set by name, against the victim's mi_option_get(id). */
static long victim_opt(struct victim *v, int id)
{
	char cmd[32], reply[128];

	snprintf(cmd, sizeof(cmd), "miopt %d", id);
	if (victim_expect(v, cmd, "miopt value=", reply, sizeof(reply)))
		return -12345;
	return kv_long(reply, "value", -12345);
}

static void test_mimalloc_getset(void)
{
	struct victim v;
	struct hres r = { 0 };
	char want[128];
	long d0;
	double n = -1;

	if (!mimalloc_up(&v, false, NULL))
		return;
	/* decommit_delay is mi_option_t 15 in 2.0.9 */
	d0 = victim_opt(&v, 15);
	if (hc_expect(&r, 0, "get", "-p", v.spid, "decommit_delay", NULL))
		goto out_r;
	if (strtol(r.out, NULL, 10) != d0)
		t_fail("get decommit_delay: %.50s, the victim's mi_option_get: %ld", r.out, d0);
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v.spid, "decommit_delay", "77", NULL))
		goto out_r;
	snprintf(want, sizeof(want), "decommit_delay: %ld -> 77\n", d0);
	if (strcmp(r.out, want))
		t_fail("set: want '%s', got '%.100s'", want, r.out);
	hres_free(&r);
	if (victim_opt(&v, 15) != 77)
		t_fail("after set decommit_delay 77 the victim's mi_option_get(15) is %ld",
		       victim_opt(&v, 15));
	if (!hc_expect(&r, 0, "get", "-p", v.spid, "mi_option_decommit_delay", "--json", NULL) &&
	    (json_get_num(r.out, "value", &n) || n != 77))
		t_fail("get mi_option_decommit_delay --json after set: %.200s", r.out);
	hres_free(&r);
	/* a prefix: eager_commit (3) and eager_commit_delay (14), with the victim's values */
	if (hc_expect(&r, 0, "get", "-p", v.spid, "eager_", NULL))
		goto out_r;
	snprintf(want, sizeof(want), "eager_commit %ld\neager_commit_delay %ld\n", victim_opt(&v, 3),
		 victim_opt(&v, 14));
	if (strcmp(r.out, want))
		t_fail("get eager_: want '%s', got '%.200s'", want, r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "get", "-p", v.spid, "mi_option_", NULL) && count_str(r.out, "\n") != 22)
		t_fail("get mi_option_: %d lines, 2.0.9 has 22 options: %.300s",
		       count_str(r.out, "\n"), r.out);
	hres_free(&r);
	/* read at start only: the value changes, and a note says it does nothing */
	if (!hc_expect(&r, 0, "set", "-p", v.spid, "max_warnings", "8", NULL) &&
	    (!strstr(r.out, "max_warnings: 16 -> 8") || !strstr(r.err, "at start only")))
		t_fail("set max_warnings: %.200s / %.200s", r.out, r.err);
	hres_free(&r);
	snprintf(want, sizeof(want), "%ld", d0);
	if (hc_expect(&r, 0, "set", "-p", v.spid, "decommit_delay", want, NULL) ||
	    victim_opt(&v, 15) != d0)
		t_fail("decommit_delay not set back to %ld", d0);
	victim_check(&v, 0);
out_r:
	hres_free(&r);
	victim_stop(&v);
}

/*
 * What mimalloc refuses is refused before anything is stopped, with the
 * fix: an unknown name (2.1's purge_delay), a bad value, a missing one, an
 * arena; --sampler native names heapctl's sampler.
 */
static void test_mimalloc_refused(void)
{
	static const struct {
		const char *a[4];
		const char *hint;
	} cases[] = {
		{ { "get", "purge_delay" }, "hint: mimalloc 2.0.9's options: decommit_delay" },
		{ { "set", "no_such_option", "1" }, "'heapctl get -p PID mi_option_' lists" },
		{ { "get", "nothing_" }, "'heapctl get -p PID mi_option_' lists" },
		{ { "set", "decommit_delay", "ten" }, "hint: numbers are plain decimal" },
		{ { "set", "decommit_delay" }, "hint: give VALUE after NAME" },
		{ { "prof", "on", "--sampler", "native" }, "without --sampler native" },
	};
	struct victim v;

	if (!mimalloc_up(&v, false, NULL))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && !t_failed(); i++) {
		struct hres r = { 0 };

		hc_run(&r, NULL, "-v", cases[i].a[0], "-p", v.spid, cases[i].a[1], cases[i].a[2],
		       cases[i].a[3], NULL);
		if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "heapctl: error: ") ||
		    !strstr(r.err, cases[i].hint) || r.out[0])
			t_fail("%s %s: want exit 1, an error and '%s': %s", cases[i].a[0],
			       cases[i].a[1], cases[i].hint, hres_desc(&r));
		else if (count_str(r.err, "gave tid "))
			t_fail("%s %s was refused after stopping a thread", cases[i].a[0],
			       cases[i].a[1]);
		hres_free(&r);
	}
	if (!t_failed())
		victim_check(&v, 0);
	victim_stop(&v);
}

static void test_once_mimalloc(void)
{
	static const struct once_cmd cmds[] = {
		ONCE_COMMON,
		{ { "info" }, 0, 1 },
		{ { "prof", "status" }, 0, 0 }, /* mimalloc has no profiler to ask */
		{ { "prof", "on", "--sampler", "native" }, 1, 0 },
		{ { "prof", "on" }, 0, 1 }, /* heapctl's sampler: loaded, hooked, on */
		{ { "dump", "-o", "@OUT" }, 0, -1 },
		{ { "prof", "off" }, 0, 1 },
		{ { "get", "decommit_delay" }, 0, 1 },
		{ { "get", "eager_" }, 0, 1 },
		{ { "set", "decommit_delay", "30" }, 0, 1 },
		{ { "get", "purge_delay" }, 1, 0 },
	};
	struct victim v;

	if (!mimalloc_up(&v, false, NULL))
		return;
	borrow_once(&v, cmds, sizeof(cmds) / sizeof(cmds[0]));
	victim_stop(&v);
}

/* ---- memcached ------------------------------------------------------- */

static int mc_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 10 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads until the reply ends with end (e.g. "\r\n" or "END\r\n"). */
static bool recv_until(int fd, char *buf, size_t sz, const char *end)
{
	size_t len = 0, el = strlen(end);

	while (len + 1 < sz) {
		ssize_t n = recv(fd, buf + len, sz - 1 - len, 0);

		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		if (len >= el && !strcmp(buf + len - el, end))
			return true;
	}
	return false;
}

static void mc_value(char *v, size_t len, int i)
{
	for (size_t j = 0; j < len; j++)
		v[j] = (char)('a' + (i * 7 + (int)j) % 26);
}

#define MC_KEYS 4000
#define MC_VLEN 8000

static bool mc_set(int fd, int i)
{
	static char buf[MC_VLEN + 128];
	char rep[64];
	int n = snprintf(buf, sizeof(buf), "set hk%d 0 0 %d\r\n", i, MC_VLEN);

	mc_value(buf + n, MC_VLEN, i);
	memcpy(buf + n + MC_VLEN, "\r\n", 2);
	return send_all(fd, buf, (size_t)n + MC_VLEN + 2) && recv_until(fd, rep, sizeof(rep), "\r\n") &&
	       !strcmp(rep, "STORED\r\n");
}

static bool mc_del(int fd, int i)
{
	char buf[64], rep[64];
	int n = snprintf(buf, sizeof(buf), "delete hk%d\r\n", i);

	return send_all(fd, buf, (size_t)n) && recv_until(fd, rep, sizeof(rep), "\r\n") &&
	       !strcmp(rep, "DELETED\r\n");
}

static bool mc_check(int fd, int i)
{
	static char buf[MC_VLEN + 256];
	char want[MC_VLEN], head[64];
	int n = snprintf(head, sizeof(head), "get hk%d\r\n", i);
	const char *p;

	if (!send_all(fd, head, (size_t)n) || !recv_until(fd, buf, sizeof(buf), "END\r\n"))
		return false;
	p = strstr(buf, "\r\n");
	mc_value(want, MC_VLEN, i);
	return p && !memcmp(p + 2, want, MC_VLEN);
}

static void test_memcached(void)
{
	char bin[256], port[16], spid[16], mem[16] = "256";
	const char *argv[] = { bin, "-U", "0", "-l", "127.0.0.1", "-p", port, "-m", mem, "-t", "4",
			       "-u", "root", NULL };
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	char why[256];
	pid_t pid;
	int fd = -1, i, tries, p;
	struct hres r = { 0 };

	if (!find_in_path("memcached", bin, sizeof(bin))) {
		t_skip(true, "memcached not installed (apt-get install memcached)");
		return;
	}
	p = loopback_free_port();
	snprintf(port, sizeof(port), "%d", p);
	pid = spawn(argv, &o, why, sizeof(why));
	if (pid < 0) {
		t_fail("memcached: %s", why);
		return;
	}
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	for (tries = 0; tries < 100 && (fd = mc_connect(p)) < 0; tries++)
		sleep_ms(50);
	if (fd < 0) {
		t_fail("memcached on port %s never accepted a connection", port);
		goto out;
	}
	for (i = 0; i < MC_KEYS; i++)
		if (!mc_set(fd, i)) {
			t_fail("memcached: set hk%d failed", i);
			goto out;
		}
	/* keep one key in ten */
	for (i = 0; i < MC_KEYS; i++)
		if (i % 10 && !mc_del(fd, i)) {
			t_fail("memcached: delete hk%d failed", i);
			goto out;
		}

	if (!hc_expect(&r, 0, "stats", "-p", spid, NULL) && !strstr(r.out, "glibc"))
		t_fail("stats: memcached's allocator is not glibc: %.200s", r.out);
	hres_free(&r);
	if (!hc_expect(&r, 0, "purge", "-p", spid, NULL))
		t_note("memcached purge: %.*s", (int)strcspn(strstr(r.out, "rss") ? strstr(r.out, "rss") : "",
							    "\n"),
		       strstr(r.out, "rss") ? strstr(r.out, "rss") : "");
	hres_free(&r);
	check_maps(spid, NULL);
	/* still serving, data intact, on the old connection and on a new one */
	for (i = 0; i < MC_KEYS; i += 10)
		if (!mc_check(fd, i)) {
			t_fail("memcached: hk%d lost or changed after heapctl", i);
			goto out;
		}
	close(fd);
	fd = mc_connect(p);
	if (fd < 0 || !mc_set(fd, MC_KEYS) || !mc_check(fd, MC_KEYS) || !mc_check(fd, 0))
		t_fail("memcached: a new connection does not work after heapctl");
out:
	if (fd >= 0)
		close(fd);
	kill(pid, SIGTERM);
	if (wait_pid(pid, NULL, 15000)) {
		t_fail("memcached ignored SIGTERM for 15 s");
		kill_wait(pid);
	}
}

const struct itest t_alloc_tests[] = {
	{ "alloc-glibc-frag", test_glibc_frag, 0 },
	{ "alloc-tcmalloc", test_tcmalloc, 0 },
	{ "alloc-memcached", test_memcached, 0 },
	{ "alloc-preload-jemalloc", test_preload_jemalloc, 0 },
	{ "alloc-preload-tcmalloc", test_preload_tcmalloc, 0 },
	{ "alloc-clean-tcmalloc", test_clean_tcmalloc, 0 },
	{ "alloc-clean-jemalloc", test_clean_jemalloc, 0 },
	{ "alloc-clean-glibc", test_clean_glibc, 0 },
	{ "borrow-once-jemalloc", test_once_jemalloc, 0 },
	{ "borrow-stops", test_borrow_stops, 0 },
	{ "borrow-once-tcmalloc", test_once_tcmalloc, 0 },
	{ "borrow-once-glibc", test_once_glibc, 0 },
	{ "alloc-tcmalloc-words", test_tcmalloc_words, 0 },
	{ "alloc-dump-json", test_dump_json, 0 },
	{ "alloc-prof-glibc", test_prof_glibc, 0 },
	{ "alloc-maps-shm", test_maps_shm, 0 },
	{ "alloc-mimalloc-info", test_mimalloc_info, 0 },
	{ "alloc-mimalloc-linked", test_mimalloc_linked, 0 },
	{ "alloc-mimalloc-stats", test_mimalloc_stats, 0 },
	{ "alloc-clean-mimalloc", test_clean_mimalloc, 0 },
	{ "alloc-mimalloc-purge", test_mimalloc_purge, 0 },
	{ "alloc-mimalloc-getset", test_mimalloc_getset, 0 },
	{ "alloc-mimalloc-refused", test_mimalloc_refused, 0 },
	{ "borrow-once-mimalloc", test_once_mimalloc, 0 },
	{ NULL, NULL, 0 },
};
