// SPDX-License-Identifier: MIT
/*
 * heapctl doctor: victims with known causes, each finding checked against
 * the victim's own figures, and each piece of advice run and measured:
 *   - jemalloc with 64 MiB of dirty pages: dirty comes first, sized within
 *     20%, and the advised purge returns it;
 *   - glibc with a trimmable thread arena and sub-page holes in the main
 *     one: arena_free is what malloc_trim returns (measured), fragmentation
 *     what it cannot (still there after it);
 *   - glibc with 40 threads in arenas of their own: the arenas finding, and
 *     the same program under the advised MALLOC_ARENA_MAX=2 is smaller;
 *   - tcmalloc with free page-heap pages: dirty, returned by purge;
 *   - 64 MiB of shared memory: shared, not file;
 *   - the JSON schema (fields, sorted), a bad pid, the Prometheus findings.
 * Every --json answer goes through check_doc(): fields present, findings
 * sorted largest first, and no advice promises "heapctl purge" for a cause
 * purge does not return.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"


struct finding {
	char cause[32];
	double bytes;
	char explanation[512];
	char advice[512];
};

struct doc {
	double rss, allocated, threads, arenas; /* allocated -1: null, no count of live bytes */
	double resident, unexplained;
	char allocator[32];
	struct finding f[16], nr[4]; /* findings, not_rss */
	int n, nnr;
};

/* The next {...} of an array at *p (strings and escapes respected); false at its end. */
static bool next_obj(const char **p, char *out, size_t sz)
{
	const char *s = strchr(*p, '{'), *q;
	int depth = 0;
	bool str = false;

	if (!s)
		return false;
	for (q = s; *q; q++) {
		if (str) {
			if (*q == '\\' && q[1])
				q++;
			else if (*q == '"')
				str = false;
		} else if (*q == '"') {
			str = true;
		} else if (*q == '{') {
			depth++;
		} else if (*q == '}' && --depth == 0) {
			size_t len = (size_t)(q - s + 1);

			if (len >= sz)
				return false;
			memcpy(out, s, len);
			out[len] = '\0';
			*p = q + 1;
			return true;
		}
	}
	return false;
}

static bool cause_known(const char *c)
{
	static const char *const known[] = { "dirty",	 "muzzy", "fragmentation", "arena_free",
					     "arenas",	 "metadata", "tcache",	   "stacks",
					     "shared",	 "file",  "anon",	   "retained" };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(c, known[i]))
			return true;
	return false;
}

/* The array member key of s into f[]; -1 (and t_fail) on a malformed element. */
static int read_findings(const char *s, const char *key, struct finding *f, int max)
{
	const char *val, *p;
	char *arr, el[2048];
	size_t len;
	int n = 0;

	if (json_member(s, key, &val, &len) || *val != '[') {
		t_fail("doctor --json: no array '%s': %.300s", key, s);
		return -1;
	}
	arr = strndup(val, len);
	for (p = arr; arr && n < max && next_obj(&p, el, sizeof(el)); n++) {
		if (json_get_str(el, "cause", f[n].cause, sizeof(f[n].cause)) ||
		    json_get_num(el, "bytes", &f[n].bytes) ||
		    json_get_str(el, "explanation", f[n].explanation, sizeof(f[n].explanation)) ||
		    json_get_str(el, "advice", f[n].advice, sizeof(f[n].advice))) {
			t_fail("doctor --json: a %s element lacks cause, bytes, explanation or advice: "
			       "%.300s",
			       key, el);
			n = -1;
			break;
		}
	}
	free(arr);
	return n;
}

/* Runs doctor --json on pid and checks the schema; 0 with d filled, or -1 (t_fail). */
static int doctor(const char *spid, struct doc *d)
{
	struct hres r = { 0 };
	char why[256];
	double pid;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	if (hc_expect(&r, 0, "doctor", "-p", spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("doctor --json: %s: %.300s", why, r.out);
		goto out;
	}
	/* null (-1 here) where the allocator counts no live bytes: live and active with it */
	d->allocated = -1;
	if (json_get_num(r.out, "pid", &pid) || pid != atof(spid) ||
	    json_get_str(r.out, "allocator", d->allocator, sizeof(d->allocator)) ||
	    json_get_num(r.out, "rss", &d->rss) ||
	    (!strstr(r.out, "\"allocated\":null,\"live\":null,\"active\":null,") &&
	     json_get_num(r.out, "allocated", &d->allocated)) ||
	    json_get_num(r.out, "threads", &d->threads) ||
	    json_get_num(r.out, "resident", &d->resident) ||
	    json_get_num(r.out, "unexplained", &d->unexplained) ||
	    json_get_num(r.out, "arenas", &d->arenas) || d->rss <= 0) {
		t_fail("doctor --json: pid, allocator, rss, allocated or threads missing: %.300s",
		       r.out);
		goto out;
	}
	d->n = read_findings(r.out, "findings", d->f, 16);
	d->nnr = read_findings(r.out, "not_rss", d->nr, 4);
	if (d->n < 0 || d->nnr < 0)
		goto out;
	for (int i = 0; i < d->n; i++) {
		const struct finding *f = &d->f[i];

		if (!cause_known(f->cause) || !strcmp(f->cause, "retained") || f->bytes <= 0 ||
		    !f->explanation[0] || !f->advice[0])
			t_fail("doctor --json: finding %d is odd: %s %.0f '%s'", i, f->cause, f->bytes,
			       f->advice);
		if (i && f->bytes > d->f[i - 1].bytes)
			t_fail("doctor --json: findings not sorted: %s %.0f after %s %.0f", f->cause,
			       f->bytes, d->f[i - 1].cause, d->f[i - 1].bytes);
		/* purge returns only dirty and muzzy pages, and glibc's whole free pages */
		if (strstr(f->advice, "heapctl purge -p") && strcmp(f->cause, "dirty") &&
		    strcmp(f->cause, "muzzy") && strcmp(f->cause, "arena_free"))
			t_fail("doctor: the advice for %s promises purge: %s", f->cause, f->advice);
	}
	for (int i = 0; i < d->nnr; i++)
		if (strcmp(d->nr[i].cause, "retained") || !strstr(d->nr[i].explanation, "not RSS"))
			t_fail("doctor --json: not_rss holds %s: %s", d->nr[i].cause,
			       d->nr[i].explanation);
	rc = t_failed() ? -1 : 0;
out:
	hres_free(&r);
	return rc;
}

static const struct finding *find(const struct doc *d, const char *cause)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->f[i].cause, cause))
			return &d->f[i];
	return NULL;
}

static double bytes_of(const struct doc *d, const char *cause)
{
	const struct finding *f = find(d, cause);

	return f ? f->bytes : 0;
}

static bool within(double got, double want, double rel)
{
	return got >= want * (1 - rel) && got <= want * (1 + rel);
}

/* The advice of f names "heapctl purge -p PID": that is what the test runs. */
static int run_advised_purge(const struct finding *f, const char *spid)
{
	char want[64];
	struct hres r = { 0 };
	int rc;

	snprintf(want, sizeof(want), "heapctl purge -p %s", spid);
	if (!strstr(f->advice, want)) {
		t_fail("doctor: the advice for %s does not say '%s': %s", f->cause, want, f->advice);
		return -1;
	}
	rc = hc_expect(&r, 0, "purge", "-p", spid, NULL);
	hres_free(&r);
	return rc;
}

static void test_jemalloc_dirty(void)
{
	struct victim v;
	struct doc d0, d1;
	char reply[2048];
	const struct finding *f;
	struct hres r = { 0 };
	long dirty;

	if (!victim_up(&v, "jemalloc_victim", "dirty_decay_ms:-1,muzzy_decay_ms:-1", NULL, false))
		return;
	if (victim_expect(&v, "leak 67108864", "leak ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "free", "free ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "state", "state", reply, sizeof(reply)))
		goto out;
	/* the 64 MiB of page faults above are the victim's own pause, not heapctl's */
	victim_ticker_reset(&v);
	dirty = kv_long(reply, "dirty", -1);
	if (dirty < 60 * MiB) {
		t_fail("setup: the victim has %ld dirty bytes after freeing 64 MiB", dirty);
		goto out;
	}
	if (doctor(v.spid, &d0))
		goto out;
	f = d0.n ? &d0.f[0] : NULL;
	if (!f || strcmp(f->cause, "dirty") || !within(f->bytes, (double)dirty, 0.2)) {
		t_fail("doctor: the first finding is %s %.0f, the victim has %ld dirty bytes",
		       f ? f->cause : "none", f ? f->bytes : 0, dirty);
		goto out;
	}
	/* decay is off: the advice says so, with the setting that turns it on */
	if (!strstr(f->advice, "dirty_decay_ms is -1") || !strstr(f->advice, "arena.0.dirty_decay_ms"))
		t_fail("doctor: the dirty advice ignores dirty_decay_ms:-1: %s", f->advice);
	if (run_advised_purge(f, v.spid) || doctor(v.spid, &d1))
		goto out;
	t_note("jemalloc: dirty %.1f MiB, RSS %.1f MiB; after the advised purge: dirty %.1f MiB, "
	       "RSS %.1f MiB",
	       f->bytes / MiB, d0.rss / MiB, bytes_of(&d1, "dirty") / MiB, d1.rss / MiB);
	/* the hammer thread dirties a little meanwhile */
	if (bytes_of(&d1, "dirty") > f->bytes / 4 || d0.rss - d1.rss < f->bytes * 0.75)
		t_fail("after the advised purge dirty is %.0f (was %.0f) and RSS %.0f (was %.0f)",
		       bytes_of(&d1, "dirty"), f->bytes, d1.rss, d0.rss);
	if (!d1.nnr || strcmp(d1.nr[0].cause, "retained"))
		t_fail("doctor: no retained address space after a purge with retain on");

	/* the human form: the same first cause, with its advice */
	if (!hc_expect(&r, 0, "doctor", "-p", v.spid, NULL) &&
	    (!strstr(r.out, "RSS") || !strstr(r.out, "largest first") || !strstr(r.out, "Not RSS")))
		t_fail("doctor: unexpected human output: %.400s", r.out);
	hres_free(&r);
	victim_check(&v, 0);
out:
	victim_stop(&v);
}

/* The victim's own RSS in bytes, from its "mi" reply. */
static double victim_rss(struct victim *v)
{
	char reply[512];

	if (victim_expect(v, "mi", "mi ", reply, sizeof(reply)))
		return -1;
	return (double)kv_long(reply, "rss", -1) * 1024;
}

static void test_glibc_trim(void)
{
	struct victim v;
	struct doc d0, d1;
	char reply[512];
	const struct finding *af, *fr;
	double rss0, rss1, af1, fr1;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	/* 16 MiB of sub-page holes in the main arena, then a 64 MiB free run in a thread arena */
	if (victim_expect(&v, "holes 16", "holes ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "frag 64", "frag ok", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	if (doctor(v.spid, &d0))
		goto out;
	af = find(&d0, "arena_free");
	fr = find(&d0, "fragmentation");
	if (strcmp(d0.allocator, "glibc") || !af || !fr || !within(af->bytes, 64.0 * MiB, 0.2) ||
	    !within(fr->bytes, 16.0 * MiB, 0.2)) {
		t_fail("doctor: arena_free %.0f (want 64 MiB), fragmentation %.0f (want 16 MiB)",
		       af ? af->bytes : 0, fr ? fr->bytes : 0);
		goto out;
	}
	if (strcmp(d0.f[0].cause, "arena_free"))
		t_fail("doctor: the first finding is %s, not arena_free", d0.f[0].cause);
	rss0 = victim_rss(&v);
	if (run_advised_purge(af, v.spid))
		goto out;
	rss1 = victim_rss(&v);
	if (doctor(v.spid, &d1))
		goto out;
	af1 = bytes_of(&d1, "arena_free");
	fr1 = bytes_of(&d1, "fragmentation");
	t_note("glibc: arena_free %.1f MiB, fragmentation %.1f MiB; malloc_trim took RSS %.1f -> "
	       "%.1f MiB; after: arena_free %.1f MiB, fragmentation %.1f MiB",
	       af->bytes / MiB, fr->bytes / MiB, rss0 / MiB, rss1 / MiB, af1 / MiB, fr1 / MiB);
	/* what malloc_trim returned is what arena_free said, and the holes stayed */
	if (!within(rss0 - rss1, af->bytes, 0.2))
		t_fail("malloc_trim returned %.0f bytes of RSS; doctor said %.0f", rss0 - rss1,
		       af->bytes);
	if (af1 > af->bytes / 10)
		t_fail("after malloc_trim doctor still finds %.0f bytes it can return", af1);
	if (!within(fr1, fr->bytes, 0.1))
		t_fail("fragmentation went %.0f -> %.0f through a malloc_trim that cannot return it",
		       fr->bytes, fr1);
	victim_check(&v, 0);
out:
	victim_stop(&v);
}

/* 40 threads started in turn, 2 MiB of holes each; rss of the victim after, or -1. */
static double arenas_victim(struct victim *v, const char *env, struct doc *d)
{
	char reply[512];

	if (!victim_up(v, "alloc_victim", NULL, env, false))
		return -1;
	if (victim_expect(v, "arenas 40 2", "arenas ok", reply, sizeof(reply)))
		return -1;
	victim_baseline(v);
	if (doctor(v->spid, d))
		return -1;
	return (double)kv_long(reply, "rss", -1) * 1024;
}

static void test_glibc_arenas(void)
{
	struct victim v = { .pid = 0 }, w = { .pid = 0 };
	struct doc d, dw;
	const struct finding *f;
	double rss, rss_w;
	char want[64];

	rss = arenas_victim(&v, NULL, &d);
	if (rss < 0)
		goto out_v;
	f = find(&d, "arenas");
	/* glibc makes up to 8 arenas per core: each thread arena past them holds 2 MiB of holes */
	if (!f || d.arenas < 4 || f->bytes < (d.arenas - 1) * 2.0 * MiB * 0.8 ||
	    strcmp(d.f[0].cause, "arenas")) {
		t_fail("doctor: 40 threads with 2 MiB of holes each: arenas finding %.0f bytes, "
		       "first finding %s",
		       f ? f->bytes : 0, d.n ? d.f[0].cause : "none");
		goto out_v;
	}
	snprintf(want, sizeof(want), "for %.0f threads", d.threads);
	if (d.threads < 40 || !strstr(f->explanation, want) ||
	    !strstr(f->advice, "MALLOC_ARENA_MAX=2"))
		t_fail("doctor: the arenas finding should count %.0f threads and advise "
		       "MALLOC_ARENA_MAX=2: %s / %s",
		       d.threads, f->explanation, f->advice);
	victim_check(&v, 0);
	if (t_failed())
		goto out_v;
	/* the advice, taken: the same program with MALLOC_ARENA_MAX=2 */
	rss_w = arenas_victim(&w, "MALLOC_ARENA_MAX=2", &dw);
	if (rss_w >= 0) {
		t_note("glibc: 40 threads: arenas finding %.1f MiB, RSS %.1f MiB; with "
		       "MALLOC_ARENA_MAX=2: RSS %.1f MiB, arenas finding %.1f MiB",
		       f->bytes / MiB, rss / MiB, rss_w / MiB, bytes_of(&dw, "arenas") / MiB);
		if (find(&dw, "arenas"))
			t_fail("doctor: MALLOC_ARENA_MAX=2 still gets the arenas finding");
		if (rss - rss_w < f->bytes * 0.6)
			t_fail("MALLOC_ARENA_MAX=2 saved %.0f bytes of RSS; doctor promised %.0f",
			       rss - rss_w, f->bytes);
		victim_check(&w, 0);
	}
	victim_stop(&w);
out_v:
	victim_stop(&v);
}

static void test_tcmalloc(void)
{
	struct victim v;
	struct doc d0, d1;
	char reply[512];
	const struct finding *f;
	long tc_free;

	if (!victim_up(&v, "tcmalloc_victim", NULL, NULL, false))
		return;
	if (victim_expect(&v, "frag 128", "frag ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "mi", "mi ", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	tc_free = kv_long(reply, "tc_free", -1);
	if (doctor(v.spid, &d0))
		goto out;
	f = d0.n ? &d0.f[0] : NULL;
	if (strncmp(d0.allocator, "tcmalloc", 8) || !f || strcmp(f->cause, "dirty") ||
	    !within(f->bytes, (double)tc_free, 0.2)) {
		t_fail("doctor: first finding %s %.0f; the victim's page heap has %ld free bytes",
		       f ? f->cause : "none", f ? f->bytes : 0, tc_free);
		goto out;
	}
	if (run_advised_purge(f, v.spid) || doctor(v.spid, &d1))
		goto out;
	t_note("tcmalloc: dirty %.1f MiB, RSS %.1f MiB; after the advised purge: dirty %.1f MiB, "
	       "RSS %.1f MiB, retained %.1f MiB",
	       f->bytes / MiB, d0.rss / MiB, bytes_of(&d1, "dirty") / MiB, d1.rss / MiB,
	       d1.nnr ? d1.nr[0].bytes / MiB : 0);
	if (bytes_of(&d1, "dirty") > f->bytes / 10 || d0.rss - d1.rss < f->bytes * 0.8)
		t_fail("after the advised purge dirty is %.0f (was %.0f), RSS %.0f (was %.0f)",
		       bytes_of(&d1, "dirty"), f->bytes, d1.rss, d0.rss);
	if (!d1.nnr || d1.nr[0].bytes < f->bytes * 0.8)
		t_fail("doctor: the released pages are not reported as retained (not RSS)");
	victim_check(&v, 0);
out:
	victim_stop(&v);
}

/*
 * mimalloc counts no live bytes: doctor says so (null) and takes what it has
 * committed, as far as it is resident, for its live and free memory
 * together, within the victim's own commit; none of that is blamed on other
 * anonymous memory; the RSS adds up.  The purge that returns its free part
 * shrinks that share as much as the RSS.
 */
static void test_mimalloc(void)
{
	struct victim v;
	struct doc d0, d1;
	char reply[512];
	struct hres r = { 0 };
	double commit, reserved, sum, want, got;

	/* what the thread freed stays committed until the purge (alloc-mimalloc-purge) */
	if (!mimalloc_up(&v, false, "MIMALLOC_DECOMMIT_DELAY=3600000"))
		return;
	if (victim_expect(&v, "frag 64", "frag ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "mimi", "mimi ", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	commit = (double)kv_long(reply, "commit", -1);
	reserved = (double)kv_long(reply, "reserved", -1);
	if (doctor(v.spid, &d0))
		goto out;
	sum = d0.resident + d0.unexplained;
	for (int i = 0; i < d0.n; i++)
		sum += d0.f[i].bytes;
	t_note("mimalloc: RSS %.1f MiB, resident %.1f MiB (committed %.1f MiB), anon %.1f MiB",
	       d0.rss / MiB, d0.resident / MiB, commit / MiB, bytes_of(&d0, "anon") / MiB);
	if (strcmp(d0.allocator, "mimalloc") || d0.allocated != -1)
		t_fail("doctor: allocator %s, allocated %.0f: want mimalloc and null", d0.allocator,
		       d0.allocated);
	else if (d0.resident < 60.0 * MiB || d0.resident > commit)
		t_fail("doctor: mimalloc's resident share is %.0f; it has %.0f committed and 64 MiB "
		       "of pages freed by a thread in RAM",
		       d0.resident, commit);
	else if (bytes_of(&d0, "anon") > 8.0 * MiB)
		t_fail("doctor: %.0f bytes of anonymous memory not mimalloc's", bytes_of(&d0, "anon"));
	else if (sum != d0.rss)
		t_fail("doctor: resident, findings and unexplained add up to %.0f, the RSS is %.0f",
		       sum, d0.rss);
	/* retained: reserved less committed, where mimalloc has reserved more */
	want = reserved > commit ? reserved - commit : 0;
	got = d0.nnr ? d0.nr[0].bytes : 0;
	if (got > want + MiB || got + MiB < want)
		t_fail("doctor: retained %.0f, the victim has %.0f reserved and %.0f committed", got,
		       reserved, commit);
	if (t_failed())
		goto out;
	if (hc_expect(&r, 0, "purge", "-p", v.spid, NULL) || doctor(v.spid, &d1))
		goto out_r;
	t_note("after purge: RSS %.1f MiB, resident %.1f MiB", d1.rss / MiB, d1.resident / MiB);
	if (d0.rss - d1.rss < 48.0 * MiB || d0.resident - d1.resident < 0.75 * (d0.rss - d1.rss))
		t_fail("purge: RSS %.0f -> %.0f, mimalloc's share %.0f -> %.0f", d0.rss, d1.rss,
		       d0.resident, d1.resident);
	hres_free(&r);
	if (!hc_expect(&r, 0, "doctor", "-p", v.spid, NULL) &&
	    (!strstr(r.out, "mimalloc has committed") || !strstr(r.out, "does not count") ||
	     strstr(r.out, "live allocations 0 B")))
		t_fail("doctor: unexpected human output: %.400s", r.out);
	victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

static void test_shared(void)
{
	struct victim v;
	struct doc d;
	char reply[512];

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	if (victim_expect(&v, "shm 32", "shm ok", reply, sizeof(reply)))
		goto out;
	victim_baseline(&v);
	if (doctor(v.spid, &d))
		goto out;
	if (!d.n || strcmp(d.f[0].cause, "shared") || !within(d.f[0].bytes, 64.0 * MiB, 0.1) ||
	    bytes_of(&d, "file") > 16.0 * MiB)
		t_fail("doctor: 64 MiB of shared memory: first finding %s %.0f, file %.0f",
		       d.n ? d.f[0].cause : "none", d.n ? d.f[0].bytes : 0, bytes_of(&d, "file"));
	victim_check(&v, 0);
out:
	victim_stop(&v);
}

static void test_bad_pid(void)
{
	struct hres r = { 0 };
	char spid[16];
	pid_t z = fork_exited();

	if (z < 0)
		return;
	waitpid(z, NULL, 0);
	/* reaped: that pid is gone */
	snprintf(spid, sizeof(spid), "%d", (int)z);
	hc_run(&r, NULL, "doctor", "-p", spid, "--json", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "heapctl: error:") ||
	    !strstr(r.err, "hint:") || r.out[0])
		t_fail("doctor on a pid that is gone: %s; stdout %.100s", hres_desc(&r), r.out);
	hres_free(&r);
	hc_run(&r, NULL, "doctor", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 2 || !strstr(r.err, "hint:"))
		t_fail("doctor without -p: %s", hres_desc(&r));
	hres_free(&r);
}

/* The findings as Prometheus metrics, from stats' one borrow. */
static void test_prometheus(void)
{
	struct victim v;
	char reply[512], line[160];
	struct hres r = { 0 };

	if (!victim_up(&v, "jemalloc_victim", "dirty_decay_ms:-1,muzzy_decay_ms:-1", NULL, false))
		return;
	if (victim_expect(&v, "leak 33554432", "leak ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "free", "free ok", reply, sizeof(reply)))
		goto out;
	victim_ticker_reset(&v);
	hc_run(&r, NULL, "-v", "stats", "-p", v.spid, "--format", "prometheus", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("stats --format prometheus: %s", hres_desc(&r));
		goto out_r;
	}
	snprintf(line, sizeof(line), "heapctl_finding_bytes{pid=\"%s\",", v.spid);
	if (count_str(r.out, "# TYPE heapctl_finding_bytes gauge") != 1 ||
	    !strstr(r.out, line) || !strstr(r.out, "cause=\"dirty\"} ") ||
	    !strstr(r.out, "cause=\"file\"} "))
		t_fail("stats --format prometheus: no heapctl_finding_bytes for dirty: %.600s", r.out);
	if (count_str(r.err, "gave tid ") != 1)
		t_fail("stats --format prometheus borrowed %d times", count_str(r.err, "gave tid "));
	victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

const struct itest t_doctor_tests[] = {
	{ "doctor-jemalloc-dirty", test_jemalloc_dirty, 0 },
	{ "doctor-glibc-trim", test_glibc_trim, 0 },
	{ "doctor-glibc-arenas", test_glibc_arenas, 0 },
	{ "doctor-tcmalloc", test_tcmalloc, 0 },
	{ "doctor-shared", test_shared, 0 },
	{ "doctor-mimalloc", test_mimalloc, 0 },
	{ "doctor-bad-pid", test_bad_pid, 0 },
	{ "doctor-prometheus", test_prometheus, 0 },
	{ NULL, NULL, 0 },
};
