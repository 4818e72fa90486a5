// SPDX-License-Identifier: MIT
/*
 * get and set against the shared jemalloc victim, glibc and tcmalloc:
 * every type of control, prefixes, write-only controls, JSON.  Each
 * checks the value from inside the target (the victim reads its own
 * mallctls), then that the target was left unharmed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "itest.h"

/* heapctl get NAME must print what the target reads itself. */
static void get_matches(const char *name, const char *fixed)
{
	struct victim *v = shared_victim();
	char inside[256], got[256];
	struct hres r = { 0 };

	if (!v)
		return;
	if (victim_ctl(v, name, inside, sizeof(inside)))
		return;
	if (fixed && strcmp(inside, fixed)) {
		t_fail("setup: target reads %s=%s, expected %s", name, inside, fixed);
		return;
	}
	if (!hc_expect(&r, 0, "get", "-p", v->spid, name, NULL)) {
		trimmed(&r, got, sizeof(got));
		if (strcmp(got, inside))
			t_fail("get %s printed '%s', the target reads '%s'", name, got, inside);
		else
			victim_check(v, 0);
	}
	hres_free(&r);
}

static void test_get_bool(void)
{
	get_matches("opt.prof", "true");
}

static void test_get_size_t(void)
{
	get_matches("arenas.page", NULL);
}

static void test_get_unsigned(void)
{
	get_matches("arenas.narenas", NULL);
}

static void test_get_ssize_t(void)
{
	get_matches("arena.0.dirty_decay_ms", "-1");
}

static void test_get_string(void)
{
	get_matches("version", NULL);
}

static void test_set_bool(void)
{
	struct victim *v = shared_victim();
	struct hres r = { 0 };

	if (!v)
		return;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "prof.active", "true", NULL) ||
	    expect_ctl(v, "prof.active", "true", "set prof.active true"))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "prof.active", "false", NULL) ||
	    expect_ctl(v, "prof.active", "false", "set prof.active false"))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * A signed value. "-1" looks like an option to getopt; accept it either
 * as is or after "--", and say which worked.
 */
static void test_set_ssize_t(void)
{
	struct victim *v = shared_victim();
	struct hres r = { 0 };

	if (!v)
		return;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "arena.0.dirty_decay_ms", "30000", NULL) ||
	    expect_ctl(v, "arena.0.dirty_decay_ms", "30000", "set arena.0.dirty_decay_ms 30000"))
		goto out;
	hres_free(&r);
	hc_run(&r, NULL, "set", "-p", v->spid, "arena.0.dirty_decay_ms", "-1", NULL);
	if (hres_exit(&r) == 2 && !hres_crash(&r)) {
		t_note("'set NAME -1' is a usage error; retried as 'set -p PID -- NAME -1'");
		hres_free(&r);
		if (hc_expect(&r, 0, "set", "-p", v->spid, "--", "arena.0.dirty_decay_ms", "-1",
			      NULL))
			goto out;
	} else if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("%s (wanted exit 0)", hres_desc(&r));
		goto out;
	}
	if (expect_ctl(v, "arena.0.dirty_decay_ms", "-1", "set arena.0.dirty_decay_ms -1"))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* The stdout of a heapctl run must be exactly want (one line). */
static int expect_out(const struct hres *r, const char *what, const char *want)
{
	char got[1024];

	trimmed(r, got, sizeof(got));
	if (strcmp(got, want)) {
		t_fail("%s printed '%s', expected '%s'", what, got, want);
		return -1;
	}
	return 0;
}

/* A refused VALUE: exit 1, error and hint on stderr, nothing on stdout. */
static int expect_refused(struct victim *v, const char *name, const char *value)
{
	struct hres r = { 0 };
	int ret = -1;

	hc_run(&r, NULL, "set", "-p", v->spid, "--", name, value, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1)
		t_fail("set %s '%s': %s (wanted exit 1: refused)", name, value,
		       hres_desc(&r));
	else if (!strstr(r.err, "heapctl: error:") || !strstr(r.err, "hint:"))
		t_fail("set %s '%s': no error and hint on stderr: %.300s", name, value, r.err);
	else if (r.outlen)
		t_fail("set %s '%s' printed on stdout: %.200s", name, value, r.out);
	else
		ret = 0;
	hres_free(&r);
	return ret;
}

/*
 * Numbers are plain decimal: "010" once stored 8 (octal), "0x10" 16, and
 * "+5" and " 7" were taken.  Each is refused and the control left alone;
 * values out of the type's range too.  A good one prints the value read
 * back.
 */
static void test_set_decimal(void)
{
	static const char *const bad[] = { "010", "0x10", "+5", " 7", "7 ", "1e3", "", "-",
					   "--1", "9223372036854775808", "-9223372036854775809" };
	struct victim *v = shared_victim();
	struct hres r = { 0 };

	if (!v || expect_ctl(v, "arena.0.dirty_decay_ms", "-1", "setup"))
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (expect_refused(v, "arena.0.dirty_decay_ms", bad[i]) ||
		    expect_ctl(v, "arena.0.dirty_decay_ms", "-1", "a refused value"))
			return;
	/* unsigned: no sign at all, and within 32 bits; size_t: no sign */
	if (expect_refused(v, "thread.arena", "-1") ||
	    expect_refused(v, "thread.arena", "4294967296") ||
	    expect_refused(v, "arena.0.retain_grow_limit", "-1"))
		return;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "arena.0.dirty_decay_ms", "10", NULL) ||
	    expect_out(&r, "set arena.0.dirty_decay_ms 10", "arena.0.dirty_decay_ms: -1 -> 10") ||
	    expect_ctl(v, "arena.0.dirty_decay_ms", "10", "set arena.0.dirty_decay_ms 10"))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "--", "arena.0.dirty_decay_ms", "-1", NULL) ||
	    expect_out(&r, "set arena.0.dirty_decay_ms -1", "arena.0.dirty_decay_ms: 10 -> -1") ||
	    expect_ctl(v, "arena.0.dirty_decay_ms", "-1", "set arena.0.dirty_decay_ms -1"))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* yes/no/on/off/1/0 in any case; the confirmation says true/false as stored. */
static void test_set_bool_words(void)
{
	static const struct {
		const char *in, *out, *stored;
	} cases[] = {
		{ "yes", "prof.active: false -> true", "true" },
		{ "OFF", "prof.active: true -> false", "false" },
		{ "1", "prof.active: false -> true", "true" },
		{ "no", "prof.active: true -> false", "false" },
		{ "On", "prof.active: false -> true", "true" },
		{ "0", "prof.active: true -> false", "false" },
	};
	struct victim *v = shared_victim();
	struct hres r = { 0 };

	if (!v || expect_ctl(v, "prof.active", "false", "setup"))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (hc_expect(&r, 0, "set", "-p", v->spid, "prof.active", cases[i].in, NULL) ||
		    expect_out(&r, cases[i].in, cases[i].out) ||
		    expect_ctl(v, "prof.active", cases[i].stored, cases[i].in))
			goto out;
		hres_free(&r);
	}
	if (expect_refused(v, "prof.active", "maybe") || expect_refused(v, "prof.active", "2") ||
	    expect_ctl(v, "prof.active", "false", "a refused bool"))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * NEW is read back, not echoed: writing epoch refreshes the statistics and
 * stores the next epoch number, never the 1 that was written.
 */
static void test_set_readback(void)
{
	struct victim *v = shared_victim();
	char want[128], inside[64];
	const char *arrow;
	struct hres r = { 0 };

	if (!v)
		return;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "epoch", "1", NULL))
		goto out;
	if (victim_ctl(v, "epoch", inside, sizeof(inside)))
		goto out;
	arrow = strstr(r.out, " -> ");
	snprintf(want, sizeof(want), "%s", arrow ? arrow + 4 : "");
	want[strcspn(want, "\n")] = 0;
	if (strncmp(r.out, "epoch: ", 7) || !arrow || strcmp(want, inside) || !strcmp(want, "1")) {
		t_fail("set epoch 1 printed '%.100s'; the target's epoch is now %s", r.out, inside);
		goto out;
	}
	t_note("set epoch 1: %.60s", r.out);
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* A stats.* get after the process allocated 100 MiB must show it. */
static void test_get_stats_fresh(void)
{
	static const char *const names[] = { "stats.allocated", "stats.arenas.0.large.allocated" };
	struct victim *v = shared_victim();
	char reply[256], got[64];
	double before[2], after[2];
	struct hres r = { 0 };

	if (!v)
		return;
	for (int i = 0; i < 2; i++) {
		if (hc_expect(&r, 0, "get", "-p", v->spid, names[i], NULL))
			goto out;
		trimmed(&r, got, sizeof(got));
		before[i] = strtod(got, NULL);
		hres_free(&r);
	}
	/* nothing in between refreshes jemalloc's snapshot but heapctl itself */
	if (victim_expect(v, "leak 104857600 0", "leak ok", reply, sizeof(reply)))
		goto out;
	for (int i = 0; i < 2; i++) {
		if (hc_expect(&r, 0, "get", "-p", v->spid, names[i], NULL))
			goto free;
		trimmed(&r, got, sizeof(got));
		after[i] = strtod(got, NULL);
		hres_free(&r);
		/* the hammer thread frees a little meanwhile */
		if (after[i] - before[i] < 90.0 * MiB) {
			t_fail("get %s went from %.0f to %.0f after the target allocated 100 MiB: "
			       "a stale snapshot (epoch not refreshed)",
			       names[i], before[i], after[i]);
			goto free;
		}
	}
	t_note("stats.allocated %.0f -> %.0f", before[0], after[0]);
free:
	if (victim_expect(v, "free", "free ok", reply, sizeof(reply)))
		goto out;
	if (!t_failed())
		victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * Write-only and void controls by their documented types: prof.reset
 * (size_t, -w) takes a value and is read back through prof.lg_sample;
 * arenas.create makes an arena and says which; get refuses what it cannot
 * read, and what a read would change.
 */
static void test_set_write_only(void)
{
	struct victim *v = shared_victim();
	char lg0[64], n0[64], n1[64], want[160];
	struct hres r = { 0 };

	if (!v || victim_ctl(v, "opt.lg_prof_sample", lg0, sizeof(lg0)))
		return;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "prof.reset", "12", NULL) ||
	    expect_out(&r, "set prof.reset 12", "prof.reset: -> 12") ||
	    expect_ctl(v, "prof.lg_sample", "12", "set prof.reset 12"))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "prof.reset", lg0, NULL) ||
	    expect_ctl(v, "prof.lg_sample", lg0, "set prof.reset back"))
		goto out;
	hres_free(&r);
	/* reading a write-only control is refused with how to write it */
	if (hc_expect(&r, 1, "get", "-p", v->spid, "prof.reset", NULL))
		goto out;
	if (!strstr(r.err, "write-only") || !strstr(r.err, "hint:") ||
	    !strstr(r.err, "set -p")) {
		t_fail("get prof.reset: %.300s", r.err);
		goto out;
	}
	hres_free(&r);
	/* arenas.create: no value, prints the new arena's index */
	if (victim_ctl(v, "arenas.narenas", n0, sizeof(n0)))
		goto out;
	if (hc_expect(&r, 1, "get", "-p", v->spid, "arenas.create", NULL) ||
	    expect_ctl(v, "arenas.narenas", n0, "get arenas.create (must not create one)"))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "arenas.create", NULL) ||
	    victim_ctl(v, "arenas.narenas", n1, sizeof(n1)))
		goto out;
	snprintf(want, sizeof(want), "arenas.create: -> %ld", strtol(n1, NULL, 10) - 1);
	if (strtol(n1, NULL, 10) != strtol(n0, NULL, 10) + 1 ||
	    expect_out(&r, "set arenas.create", want))
		goto out;
	hres_free(&r);
	/* void controls: a value is refused, none runs them */
	if (expect_refused(v, "thread.tcache.flush", "1"))
		goto out;
	if (hc_expect(&r, 0, "set", "-p", v->spid, "thread.tcache.flush", NULL) ||
	    expect_out(&r, "set thread.tcache.flush", "thread.tcache.flush: done"))
		goto out;
	hres_free(&r);
	/* read-only: refused with the way to change it */
	if (hc_expect(&r, 1, "set", "-p", v->spid, "opt.narenas", "3", NULL))
		goto out;
	if (!strstr(r.err, "MALLOC_CONF=narenas:")) {
		t_fail("set opt.narenas: hint does not say MALLOC_CONF: %.300s", r.err);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* One "name value" line, or NULL. */
static const char *line_of(const char *out, const char *name, char *val, size_t sz)
{
	size_t nl = strlen(name);

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, name, nl) && p[nl] == ' ') {
			size_t l = strcspn(p + nl + 1, "\n");

			snprintf(val, sz, "%.*s", (int)(l < sz ? l : sz - 1), p + nl + 1);
			return p;
		}
	}
	return NULL;
}

/* get PREFIX. lists every readable name under it with its value, in one borrow. */
static void test_get_prefix(void)
{
	static const char *const names[] = { "arenas.narenas", "arenas.page", "arenas.nbins",
					     "arenas.bin.0.size", "arenas.lextent.0.size" };
	struct victim *v = shared_victim();
	char n0[64], inside[256], got[256], nb[64], last[64], why[256];
	struct hres r = { 0 };

	if (!v || victim_ctl(v, "arenas.narenas", n0, sizeof(n0)) ||
	    victim_ctl(v, "arenas.nbins", nb, sizeof(nb)))
		return;
	if (hc_expect(&r, 0, "-v", "get", "-p", v->spid, "arenas.", NULL))
		goto out;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (victim_ctl(v, names[i], inside, sizeof(inside)))
			goto out;
		if (!line_of(r.out, names[i], got, sizeof(got)) || strcmp(got, inside)) {
			t_fail("get arenas.: no line '%s %s' in:\n%.400s", names[i], inside, r.out);
			goto out;
		}
	}
	/* every bin, by arenas.nbins */
	snprintf(last, sizeof(last), "arenas.bin.%ld.size", strtol(nb, NULL, 10) - 1);
	if (!line_of(r.out, last, got, sizeof(got))) {
		t_fail("get arenas.: no %s (nbins %s)", last, nb);
		goto out;
	}
	/* reading arenas.create would have made an arena */
	if (strstr(r.out, "arenas.create") || expect_ctl(v, "arenas.narenas", n0, "get arenas."))
		goto out;
	if (count_str(r.err, "borrowed tid") != 1) {
		t_fail("get arenas. borrowed a thread %d times, wanted once", count_str(r.err, "borrowed tid"));
		goto out;
	}
	hres_free(&r);
	/* no arena index in arenas.: no arena.<i>.initialized read, and no stats: no epoch */
	if (hc_expect(&r, 0, "-vv", "get", "-p", v->spid, "arenas.", NULL))
		goto out;
	if (strstr(r.err, ".initialized\")") || strstr(r.err, "mallctl(\"epoch\")")) {
		t_fail("get arenas. read arena.<i>.initialized or wrote epoch");
		goto out;
	}
	hres_free(&r);
	/* opt. with --json: an array of {"name","value"} */
	if (hc_expect(&r, 0, "get", "-p", v->spid, "opt.", "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || r.out[0] != '[') {
		t_fail("get opt. --json: %s: %.200s", why, r.out);
		goto out;
	}
	if (!strstr(r.out, "{\"name\":\"opt.prof\",\"value\":true}") ||
	    !strstr(r.out, "{\"name\":\"opt.dirty_decay_ms\",\"value\":-1}")) {
		t_fail("get opt. --json lacks opt.prof true / opt.dirty_decay_ms -1: %.400s", r.out);
		goto out;
	}
	hres_free(&r);
	/* a prefix that names nothing is an error with a hint */
	if (hc_expect(&r, 1, "get", "-p", v->spid, "nosuch.", NULL))
		goto out;
	if (!strstr(r.err, "hint:")) {
		t_fail("get nosuch.: no hint: %.200s", r.err);
		goto out;
	}
	hres_free(&r);
	/* an unknown name points at its group */
	if (hc_expect(&r, 1, "get", "-p", v->spid, "opt.nosuch", NULL))
		goto out;
	if (!strstr(r.err, "hint: see the names there: heapctl get -p ") ||
	    !strstr(r.err, " opt.\n")) {
		t_fail("get opt.nosuch: hint does not point at opt.: %.200s", r.err);
		goto out;
	}
	hres_free(&r);
	/* stats.: current values; the groups two indices deep are named on stderr */
	if (hc_expect(&r, 0, "get", "-p", v->spid, "stats.", NULL))
		goto out;
	if (!line_of(r.out, "stats.allocated", got, sizeof(got)) ||
	    !line_of(r.out, "stats.arenas.0.pactive", got, sizeof(got)) ||
	    !strstr(r.err, "stats.arenas.<i>.bins.<j>.") ||
	    strstr(r.out, "stats.arenas.0.bins.0.")) {
		t_fail("get stats.: stdout %.200s\nstderr %.300s", r.out, r.err);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* get --json and set --json, as docs/cli.md describes them. */
static void test_get_set_json(void)
{
	struct victim *v = shared_victim();
	char why[256], s[160], ver[160];
	double d;
	bool b;
	struct hres r = { 0 };

	if (!v || victim_ctl(v, "version", ver, sizeof(ver)))
		return;
	if (hc_expect(&r, 0, "get", "-p", v->spid, "version", "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || json_get_str(r.out, "name", s, sizeof(s)) ||
	    strcmp(s, "version") || json_get_str(r.out, "value", s, sizeof(s)) || strcmp(s, ver)) {
		t_fail("get version --json: %.200s", r.out);
		goto out;
	}
	hres_free(&r);
	if (hc_expect(&r, 0, "get", "-p", v->spid, "opt.prof", "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || json_get_bool(r.out, "value", &b) || !b) {
		t_fail("get opt.prof --json: %.200s", r.out);
		goto out;
	}
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "arena.0.dirty_decay_ms", "30000", "--json",
		      NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || json_get_str(r.out, "name", s, sizeof(s)) ||
	    strcmp(s, "arena.0.dirty_decay_ms") || json_get_num(r.out, "old", &d) || d != -1 ||
	    json_get_num(r.out, "new", &d) || d != 30000) {
		t_fail("set --json: %.200s", r.out);
		goto out;
	}
	hres_free(&r);
	if (hc_expect(&r, 0, "set", "-p", v->spid, "--json", "--", "arena.0.dirty_decay_ms", "-1",
		      NULL) ||
	    expect_ctl(v, "arena.0.dirty_decay_ms", "-1", "set back to -1"))
		goto out;
	hres_free(&r);
	/* a void control: both null */
	if (hc_expect(&r, 0, "set", "-p", v->spid, "thread.tcache.flush", "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || !strstr(r.out, "\"old\":null") ||
	    !strstr(r.out, "\"new\":null")) {
		t_fail("set thread.tcache.flush --json: %.200s", r.out);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * glibc: get prints the value alone on stdout (the caveat that glibc has no
 * getter goes to stderr), set takes plain decimal ints, M_ lists them all.
 */
static void test_glibc_get_set(void)
{
	struct victim v;
	char why[512], got[256];
	struct hres r = { 0 };

	if (victim_start_env(&v, "alloc_victim", NULL, "MALLOC_ARENA_MAX=3", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (hc_expect(&r, 0, "get", "-p", v.spid, "M_ARENA_MAX", NULL) ||
	    expect_out(&r, "glibc get M_ARENA_MAX", "3"))
		goto out;
	if (!strstr(r.err, "MALLOC_ARENA_MAX")) {
		t_fail("glibc get M_ARENA_MAX: the note on where it came from is not on stderr: %.200s",
		       r.err);
		goto out;
	}
	hres_free(&r);
	if (hc_expect(&r, 0, "get", "-p", v.spid, "M_MMAP_THRESHOLD", NULL) ||
	    expect_out(&r, "glibc get M_MMAP_THRESHOLD", "131072"))
		goto out;
	hres_free(&r);
	if (expect_refused(&v, "M_TOP_PAD", "010") || expect_refused(&v, "M_TOP_PAD", "0x10") ||
	    expect_refused(&v, "M_TOP_PAD", "2147483648"))
		goto out;
	if (hc_expect(&r, 0, "set", "-p", v.spid, "M_TOP_PAD", "65536", NULL) ||
	    expect_out(&r, "glibc set M_TOP_PAD 65536", "M_TOP_PAD: -> 65536"))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "get", "-p", v.spid, "M_", NULL))
		goto out;
	if (!line_of(r.out, "M_ARENA_MAX", got, sizeof(got)) || strcmp(got, "3") ||
	    !line_of(r.out, "M_TRIM_THRESHOLD", got, sizeof(got)) || strcmp(got, "131072") ||
	    strstr(r.out, "mallopt")) {
		t_fail("glibc get M_: %.400s", r.out);
		goto out;
	}
	hres_free(&r);
	if (hc_expect(&r, 0, "get", "-p", v.spid, "M_ARENA_MAX", "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) || !strstr(r.out, "\"value\":3")) {
		t_fail("glibc get --json: %.200s", r.out);
		goto out;
	}
	victim_check(&v, 0);
out:
	hres_free(&r);
	victim_stop(&v);
}

/* tcmalloc's numeric properties take plain decimal too, and show the value read back. */
static void test_tcmalloc_set(void)
{
	static const char *const name = "tcmalloc.max_total_thread_cache_bytes";
	struct victim v;
	char why[512], old[64], want[160];
	struct hres r = { 0 };

	if (victim_start_env(&v, "tcmalloc_victim", NULL, NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (hc_expect(&r, 0, "get", "-p", v.spid, name, NULL))
		goto out;
	trimmed(&r, old, sizeof(old));
	hres_free(&r);
	if (expect_refused(&v, name, "0x2000000") || expect_refused(&v, name, "010") ||
	    expect_refused(&v, name, "-1"))
		goto out;
	/* nothing was written by the refused ones */
	if (hc_expect(&r, 0, "get", "-p", v.spid, name, NULL) || expect_out(&r, "get", old))
		goto out;
	hres_free(&r);
	snprintf(want, sizeof(want), "%s: %s -> 33554432", name, old);
	if (hc_expect(&r, 0, "set", "-p", v.spid, name, "33554432", NULL) ||
	    expect_out(&r, "tcmalloc set", want))
		goto out;
	victim_check(&v, 0);
out:
	hres_free(&r);
	victim_stop(&v);
}

/*
 * "-" is stdout for every option that names a file: dump -o/--svg/--folded,
 * report -o, leak -o.  No file named "-" appears, and stdout holds the data
 * alone (what was written is said on stderr).
 */

const struct itest t_ctl_tests[] = {
	{ "get-bool", test_get_bool, 0 },
	{ "get-size_t", test_get_size_t, 0 },
	{ "get-unsigned", test_get_unsigned, 0 },
	{ "get-ssize_t", test_get_ssize_t, 0 },
	{ "get-string", test_get_string, 0 },
	{ "set-bool", test_set_bool, 0 },
	{ "set-ssize_t", test_set_ssize_t, 0 },
	{ "set-decimal", test_set_decimal, 0 },
	{ "set-bool-words", test_set_bool_words, 0 },
	{ "set-readback", test_set_readback, 0 },
	{ "get-stats-fresh", test_get_stats_fresh, 0 },
	{ "set-write-only", test_set_write_only, 0 },
	{ "get-prefix", test_get_prefix, 0 },
	{ "get-set-json", test_get_set_json, 0 },
	{ "glibc-get-set", test_glibc_get_set, 0 },
	{ "tcmalloc-set", test_tcmalloc_set, 0 },
	{ NULL, NULL, 0 },
};
