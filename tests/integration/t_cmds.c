// SPDX-License-Identifier: MIT
/*
 * Every command against the shared jemalloc victim. Each test checks the
 * effect from inside the target (the victim reads its own mallctls), then
 * that the target was left unharmed (victim_check()).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "itest.h"

#define MiB (1024L * 1024L)

/* One number from the victim's state line; LONG_MIN (and t_fail) on error. */
static long vstate(struct victim *v, const char *key)
{
	char st[2048];
	long val;

	if (victim_cmd(v, "state", st, sizeof(st), 15000)) {
		t_fail("victim state: %s", st);
		return LONG_MIN;
	}
	val = kv_long(st, key, LONG_MIN);
	if (val == LONG_MIN)
		t_fail("victim state has no %s: %.200s", key, st);
	return val;
}

/* The victim's own view of a mallctl must equal want. */
static int expect_ctl(struct victim *v, const char *name, const char *want, const char *after)
{
	char val[256];

	if (victim_ctl(v, name, val, sizeof(val)))
		return -1;
	if (strcmp(val, want)) {
		t_fail("after %s the target reads %s=%s, expected %s", after, name, val, want);
		return -1;
	}
	return 0;
}

/* Trimmed stdout of a run, for "get". */
static void trimmed(const struct hres *r, char *out, size_t sz)
{
	const char *s = r->out;
	size_t n;

	while (*s == ' ' || *s == '\n' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	if (n >= sz)
		n = sz - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

static void test_list(void)
{
	struct victim *v = shared_victim();
	struct hres r;
	const char *p;
	bool found = false;

	if (!v)
		return;
	if (hc_expect(&r, 0, "list", NULL))
		goto out;
	/* A line that starts with (or holds) our pid and says jemalloc. */
	for (p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t l = strcspn(p, "\n");
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)(l < 511 ? l : 511), p);
		if (strstr(line, v->spid) && strcasestr_(line, "jemalloc")) {
			found = true;
			break;
		}
	}
	if (!found)
		t_fail("list has no line with pid %s and jemalloc:\n%.400s", v->spid, r.out);
	else
		victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_info(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "info", "-p", v->spid, NULL)) {
		if (!strcasestr_(r.out, "jemalloc"))
			t_fail("info does not say jemalloc: %.200s", r.out);
		else
			victim_check(v, 0);
	}
	hres_free(&r);
}

static void test_info_json(void)
{
	struct victim *v = shared_victim();
	char why[256];
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "info", "-p", v->spid, "--json", NULL)) {
		if (json_valid(r.out, why, sizeof(why)))
			t_fail("info --json: %s: %.200s", why, r.out);
		else if (!strcasestr_(r.out, "jemalloc"))
			t_fail("info --json does not say jemalloc: %.200s", r.out);
		else if (!strstr(r.out, v->spid))
			t_fail("info --json does not hold the pid %s: %.200s", v->spid, r.out);
		else
			victim_check(v, 0);
	}
	hres_free(&r);
}

static void test_prof_status(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "prof", "status", "-p", v->spid, NULL)) {
		if (!r.outlen)
			t_fail("prof status printed nothing");
		else if (!expect_ctl(v, "prof.active", "false", "prof status"))
			victim_check(v, 0);
	}
	hres_free(&r);
}

/* prof status --json must agree with what the target reads itself. */
static int check_status_json(struct victim *v, bool want_active)
{
	bool enabled, active;
	char why[256];
	struct hres r;
	int ret = -1;

	if (hc_expect(&r, 0, "prof", "status", "-p", v->spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("prof status --json: %s: %.200s", why, r.out);
		goto out;
	}
	if (json_get_bool(r.out, "enabled", &enabled) || json_get_bool(r.out, "active", &active)) {
		t_fail("prof status --json lacks boolean enabled/active: %.200s", r.out);
		goto out;
	}
	if (!enabled || active != want_active) {
		t_fail("prof status --json says enabled=%d active=%d, target has opt.prof=1"
		       " prof.active=%d", enabled, active, want_active);
		goto out;
	}
	ret = 0;
out:
	hres_free(&r);
	return ret;
}

static void test_prof_status_json(void)
{
	struct victim *v = shared_victim();

	if (!v)
		return;
	if (!check_status_json(v, false))
		victim_check(v, 0);
}

static void test_prof_on(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "prof", "on", "-p", v->spid, NULL) &&
	    !expect_ctl(v, "prof.active", "true", "prof on") && !check_status_json(v, true))
		victim_check(v, 0);
	hres_free(&r);
}

static void test_prof_off(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL) &&
	    !expect_ctl(v, "prof.active", "false", "prof off") && !check_status_json(v, false))
		victim_check(v, 0);
	hres_free(&r);
}

static void test_dump_o(void)
{
	struct victim *v = shared_victim();
	char path[512], why[600];
	struct stat stt;
	struct hres r;

	if (!v)
		return;
	snprintf(path, sizeof(path), "%s/dump-o.heap", cfg.tmpdir);
	unlink(path);
	if (hc_expect(&r, 0, "dump", "-p", v->spid, "-o", path, NULL))
		goto out;
	if (stat(path, &stt)) {
		t_fail("dump -o %s: no file (%s)", path, strerror(errno));
		goto out;
	}
	if (!file_starts_with(path, "heap_v2/", why, sizeof(why))) {
		t_fail("%s", why);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* Finds heapctl.<pid>.*.heap in dir; returns true and the name. */
static bool find_dump(const char *dir, const char *spid, char *name, size_t sz)
{
	char prefix[64];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	snprintf(prefix, sizeof(prefix), "heapctl.%s.", spid);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (!strncmp(de->d_name, prefix, strlen(prefix)) && l > 5 &&
		    !strcmp(de->d_name + l - 5, ".heap")) {
			snprintf(name, sz, "%s/%s", dir, de->d_name);
			found = true;
			break;
		}
	}
	closedir(d);
	return found;
}

static void test_dump_default(void)
{
	const char *args[] = { "dump", "-p", NULL, NULL };
	struct victim *v = shared_victim();
	char dir[300], name[600], why[800];
	struct hres r;

	if (!v)
		return;
	args[2] = v->spid;
	snprintf(dir, sizeof(dir), "%s/dumpcwd", cfg.tmpdir);
	mkdir(dir, 0755);
	hc_runv(&r, dir, args);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("%s (wanted exit 0)", hres_desc(&r));
		goto out;
	}
	if (!find_dump(dir, v->spid, name, sizeof(name))) {
		if (find_dump(v->cwd, v->spid, name, sizeof(name)))
			t_fail("default dump went to the target's cwd (%s), not ./ of heapctl", name);
		else
			t_fail("no ./heapctl.%s.<n>.heap in heapctl's cwd %s", v->spid, dir);
		goto out;
	}
	if (!file_starts_with(name, "heap_v2/", why, sizeof(why))) {
		t_fail("%s", why);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_stats(void)
{
	struct victim *v = shared_victim();
	struct hres r;

	if (!v)
		return;
	if (!hc_expect(&r, 0, "stats", "-p", v->spid, NULL)) {
		if (!strpbrk(r.out, "0123456789"))
			t_fail("stats printed no numbers: %.200s", r.out);
		else
			victim_check(v, 0);
	}
	hres_free(&r);
}

static void test_stats_json(void)
{
	static const char *const keys[] = {
		"allocated", "active", "metadata", "resident", "mapped", "retained", "dirty", "rss",
	};
	struct victim *v = shared_victim();
	char why[256], s[128], ver[128], alloc_in[64];
	double val[8];
	struct hres r;
	double inside;
	size_t i;

	if (!v)
		return;
	if (victim_ctl(v, "version", ver, sizeof(ver)) ||
	    victim_ctl(v, "stats.allocated", alloc_in, sizeof(alloc_in)))
		return;
	if (hc_expect(&r, 0, "stats", "-p", v->spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("stats --json: %s: %.200s", why, r.out);
		goto out;
	}
	if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "jemalloc")) {
		t_fail("stats --json: \"allocator\" is not \"jemalloc\": %.200s", r.out);
		goto out;
	}
	if (json_get_str(r.out, "version", s, sizeof(s)) || !strstr(ver, s) || !*s) {
		t_fail("stats --json: \"version\" is '%s', the target says '%s'", s, ver);
		goto out;
	}
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (json_get_num(r.out, keys[i], &val[i]) || val[i] < 0) {
			t_fail("stats --json: no byte count \"%s\": %.300s", keys[i], r.out);
			goto out;
		}
	}
	/* allocated <= active <= mapped, all non-zero; rss is the kernel's. */
	if (val[0] <= 0 || val[0] > val[1] || val[1] > val[4] || val[7] <= 0) {
		t_fail("stats --json: implausible allocated=%.0f active=%.0f mapped=%.0f rss=%.0f",
		       val[0], val[1], val[4], val[7]);
		goto out;
	}
	inside = strtod(alloc_in, NULL);
	if (val[0] < inside / 3 || val[0] > inside * 3) {
		t_fail("stats --json: allocated=%.0f but the target reads stats.allocated=%.0f",
		       val[0], inside);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_stats_full(void)
{
	struct victim *v = shared_victim();
	char *before = NULL, *after = NULL;
	struct hres r;

	if (!v)
		return;
	before = read_file_str(v->errpath);
	if (hc_expect(&r, 0, "stats", "-p", v->spid, "--full", NULL))
		goto out;
	if (!strstr(r.out, "Allocated") && !strstr(r.out, "jemalloc statistics")) {
		t_fail("stats --full output is not jemalloc's statistics: %.200s", r.out);
		goto out;
	}
	after = read_file_str(v->errpath);
	if (after && (strstr(after + (before ? strlen(before) : 0), "Allocated") ||
		      strstr(after + (before ? strlen(before) : 0), "jemalloc statistics"))) {
		t_fail("the statistics were also written to the target's stderr (%s)", v->errpath);
		goto out;
	}
	victim_check(v, 0);
out:
	free(before);
	free(after);
	hres_free(&r);
}

/* Leaks and frees bytes in arena (a number, or "x"), leaving dirty pages. */
static int make_dirty(struct victim *v, long bytes, const char *arena)
{
	char cmd[64], reply[256];

	snprintf(cmd, sizeof(cmd), "leak %ld %s", bytes, arena);
	if (victim_expect(v, cmd, "leak ok", reply, sizeof(reply)))
		return -1;
	return victim_expect(v, "free", "free ok", reply, sizeof(reply));
}

static void test_purge(void)
{
	struct victim *v = shared_victim();
	long before, after;
	struct hres r = { 0 };

	if (!v || make_dirty(v, 64 * MiB, "0"))
		return;
	before = vstate(v, "dirty");
	if (before == LONG_MIN)
		return;
	if (before < 60 * MiB) {
		t_fail("setup: only %ld dirty bytes after freeing 64 MiB (decay not disabled?)",
		       before);
		return;
	}
	if (hc_expect(&r, 0, "purge", "-p", v->spid, NULL))
		goto out;
	after = vstate(v, "dirty");
	if (after == LONG_MIN)
		goto out;
	if (before - after < 48 * MiB) {
		t_fail("purge: dirty went from %ld to %ld bytes, expected a drop of >= 48 MiB",
		       before, after);
		goto out;
	}
	t_note("dirty %ld -> %ld bytes", before, after);
	victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_purge_arena(void)
{
	struct victim *v = shared_victim();
	long b0, bx, a0, ax, ax2;
	char xs[16];
	struct hres r = { 0 };

	if (!v || make_dirty(v, 32 * MiB, "0") || make_dirty(v, 32 * MiB, "x"))
		return;
	b0 = vstate(v, "dirty0");
	bx = vstate(v, "dirtyx");
	if (b0 == LONG_MIN || bx == LONG_MIN)
		return;
	if (b0 < 30 * MiB || bx < 30 * MiB) {
		t_fail("setup: dirty0=%ld dirtyx=%ld after freeing 32 MiB in each", b0, bx);
		return;
	}
	if (hc_expect(&r, 0, "purge", "-p", v->spid, "--arena", "0", NULL))
		goto out;
	a0 = vstate(v, "dirty0");
	ax = vstate(v, "dirtyx");
	if (a0 == LONG_MIN || ax == LONG_MIN)
		goto out;
	if (b0 - a0 < 28 * MiB) {
		t_fail("purge --arena 0: arena 0 dirty went from %ld to %ld bytes", b0, a0);
		goto out;
	}
	if (ax < bx - 2 * MiB) {
		t_fail("purge --arena 0 also purged arena %u (%ld -> %ld bytes)", v->xarena, bx, ax);
		goto out;
	}
	hres_free(&r);
	/* And the other arena, by its number. */
	snprintf(xs, sizeof(xs), "%u", v->xarena);
	if (hc_expect(&r, 0, "purge", "-p", v->spid, "--arena", xs, NULL))
		goto out;
	ax2 = vstate(v, "dirtyx");
	if (ax2 == LONG_MIN)
		goto out;
	if (ax - ax2 < 28 * MiB) {
		t_fail("purge --arena %u: dirty went from %ld to %ld bytes", v->xarena, ax, ax2);
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

/* heapctl get NAME must print what the target reads itself. */
static void get_matches(const char *name, const char *fixed)
{
	struct victim *v = shared_victim();
	char inside[256], got[256];
	struct hres r;

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
	struct hres r;

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
	struct hres r;

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

/*
 * "-" is stdout for every option that names a file: dump -o/--svg/--folded,
 * report -o, leak -o.  No file named "-" appears, and stdout holds the data
 * alone (what was written is said on stderr).
 */
static void test_output_stdout(void)
{
	struct victim *v = shared_victim();
	char dir[400], dash[480], heap[480];
	struct stat st;
	struct hres r;
	FILE *f;

	if (!v)
		return;
	snprintf(dir, sizeof(dir), "%s/stdout", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(dash, sizeof(dash), "%s/-", dir);
	snprintf(heap, sizeof(heap), "%s/saved.heap", dir);

	{
		const char *const args[] = { "dump", "-p", v->spid, "-o", "-", NULL };

		hc_runv(&r, dir, args);
	}
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("dump -o -: %s", hres_desc(&r));
		goto out;
	}
	if (strncmp(r.out, "heap_v2/", 8)) {
		t_fail("dump -o -: stdout is not the profile: %.100s", r.out);
		goto out;
	}
	if (strstr(r.out, "wrote ") || strstr(r.out, "next:")) {
		t_fail("dump -o -: messages mixed into the profile on stdout");
		goto out;
	}
	/* keep it: report reads it below */
	f = fopen(heap, "we");
	if (!f || fwrite(r.out, 1, r.outlen, f) != r.outlen || fclose(f)) {
		t_fail("saving the profile: %s", strerror(errno));
		goto out;
	}
	hres_free(&r);

	{
		const char *const args[] = { "dump", "-p", v->spid, "-o", "x.heap", "--svg", "-",
					     NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("dump --svg -: %s", hres_desc(&r));
			goto out;
		}
		if (!strstr(r.out, "<svg") || strstr(r.out, "wrote ")) {
			t_fail("dump --svg -: stdout is not the SVG alone: %.200s", r.out);
			goto out;
		}
		hres_free(&r);
	}
	{
		const char *const args[] = { "report", heap, "--format", "folded", "-o", "-", NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("report -o -: %s", hres_desc(&r));
			goto out;
		}
		hres_free(&r);
	}
	{
		const char *const args[] = { "leak", "-p", v->spid, "--for", "0.2", "-o", "-", NULL };

		hc_runv(&r, dir, args);
		if (hres_crash(&r) || hres_exit(&r) != 0) {
			t_fail("leak -o -: %s", hres_desc(&r));
			goto out;
		}
		if (!strstr(r.out, "<svg") || strstr(r.out, "pid ")) {
			t_fail("leak -o -: stdout is not the SVG alone: %.200s", r.out);
			goto out;
		}
		if (!strstr(r.err, "pid ") || !strstr(r.err, " in "))
			t_fail("leak -o -: the summary is not on stderr: %.200s", r.err);
		hres_free(&r);
	}
	if (!t_failed() && lstat(dash, &st) == 0)
		t_fail("a file named '-' was created in heapctl's cwd %s", dir);
	if (!t_failed())
		victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * Ctrl-C during leak's wait ends the wait, not the measurement: the second
 * profile is taken at once, the growth so far is reported and written, and
 * prof.active is put back as it was found.  The signal is sent once heapctl
 * has said on stderr that the wait began.
 */
static void test_leak_sigint(void)
{
	struct victim *v = shared_victim();
	char svg[400], err[4096] = "", val[64], why[512];
	const char *args[10];
	size_t elen = 0;
	struct hproc hp;
	struct hres r;
	bool begun = false;

	if (!v)
		return;
	if (victim_ctl(v, "prof.active", val, sizeof(val)) || strcmp(val, "false")) {
		t_fail("the shared victim should start with prof.active=false, reads %s", val);
		return;
	}
	snprintf(svg, sizeof(svg), "%s/leak-int.svg", cfg.tmpdir);
	unlink(svg);
	args[0] = "leak";
	args[1] = "-p";
	args[2] = v->spid;
	args[3] = "--for";
	args[4] = "1h";
	args[5] = "-o";
	args[6] = svg;
	args[7] = NULL;
	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	/* Read stderr up to the line that announces the wait. */
	for (long end = now_ms() + HC_TIMEOUT_S * 1000L; !begun && now_ms() < end;) {
		struct pollfd p = { .fd = hp.err, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(hp.err, err + elen, sizeof(err) - 1 - elen);
		if (n <= 0)
			break;
		elen += (size_t)n;
		err[elen] = '\0';
		begun = strstr(err, "measuring growth") != NULL;
	}
	if (!begun) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		t_fail("leak never said that the wait began: %.300s%.300s", err, r.err);
		hres_free(&r);
		return;
	}
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("leak after SIGINT: %s (wanted exit 0); before: %.200s", hres_desc(&r), err);
		goto out;
	}
	if (!strstr(r.out, "pid ") || !strstr(r.out, " in ")) {
		t_fail("leak after SIGINT reported nothing: %.300s", r.out);
		goto out;
	}
	if (!strstr(r.err, "SIGINT")) {
		t_fail("leak after SIGINT did not say it ended early: %.300s", r.err);
		goto out;
	}
	if (!file_starts_with(svg, "<?xml", why, sizeof(why)) &&
	    !file_starts_with(svg, "<svg", why, sizeof(why))) {
		t_fail("leak after SIGINT: %s", why);
		goto out;
	}
	if (!expect_ctl(v, "prof.active", "false", "leak ended by SIGINT"))
		victim_check(v, 0);
out:
	hres_free(&r);
}

/* -p NAME, like pidof: one match drives it, several are listed and refused. */
static void test_pid_by_name(void)
{
	char name[64], link[600], target[600], bad[512];
	struct victim a, b;
	struct hres r;
	bool a_up = false, b_up = false;

	/* A name no other process has: a symlink to the victim, so argv[0] and comm carry it. */
	snprintf(name, sizeof(name), "jemalloc-%d", (int)getpid() % 100000);
	snprintf(link, sizeof(link), "%s/%s", cfg.victim_dir, name);
	snprintf(target, sizeof(target), "%s/jemalloc_victim", cfg.victim_dir);
	unlink(link);
	if (symlink(target, link)) {
		t_skip(false, "cannot make %s: %s", link, strerror(errno));
		return;
	}
	if (victim_start(&a, name, "prof:true,prof_active:false", bad, sizeof(bad))) {
		t_fail("%s", bad);
		goto out;
	}
	a_up = true;
	if (hc_expect(&r, 0, "stats", "-p", name, "--json", NULL))
		goto out_r;
	if (!strstr(r.out, a.spid)) {
		t_fail("stats -p %s did not drive pid %s: %.200s", name, a.spid, r.out);
		goto out_r;
	}
	hres_free(&r);
	if (victim_check(&a, 0))
		goto out;

	if (victim_start(&b, name, "prof:true,prof_active:false", bad, sizeof(bad))) {
		t_fail("%s", bad);
		goto out;
	}
	b_up = true;
	hc_run(&r, NULL, "stats", "-p", name, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 2) {
		t_fail("stats -p NAME with two matches: %s (wanted exit 2)", hres_desc(&r));
		goto out_r;
	}
	if (!strstr(r.err, "2 processes are named") || !strstr(r.err, a.spid) ||
	    !strstr(r.err, b.spid) || !strstr(r.err, "-p PID")) {
		t_fail("two matches: not both listed with a hint to pick one: %.400s", r.err);
		goto out_r;
	}
	hres_free(&r);

	snprintf(bad, sizeof(bad), "no-such-%s", name);
	hc_run(&r, NULL, "stats", "-p", bad, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "no process named") ||
	    !strstr(r.err, "heapctl list"))
		t_fail("stats -p %s: %s: %.300s", bad, hres_desc(&r), r.err);
	hres_free(&r);
	/* report's optional -p goes through the same lookup */
	if (!t_failed()) {
		hc_run(&r, NULL, "report", "/dev/null", "-p", name, NULL);
		if (hres_crash(&r) || hres_exit(&r) != 2 || !strstr(r.err, "2 processes are named"))
			t_fail("report -p NAME with two matches: %s: %.300s", hres_desc(&r), r.err);
		hres_free(&r);
	}
	if (!t_failed() && !victim_check(&a, 0))
		victim_check(&b, 0);
	goto out;
out_r:
	hres_free(&r);
out:
	if (a_up)
		victim_stop(&a);
	if (b_up)
		victim_stop(&b);
	unlink(link);
}

const struct itest t_cmds_tests[] = {
	{ "list", test_list, 0 },
	{ "info", test_info, 0 },
	{ "info-json", test_info_json, 0 },
	{ "prof-status", test_prof_status, 0 },
	{ "prof-status-json", test_prof_status_json, 0 },
	{ "prof-on", test_prof_on, 0 },
	{ "prof-off", test_prof_off, 0 },
	{ "dump-o", test_dump_o, 0 },
	{ "dump-default-file", test_dump_default, 0 },
	{ "stats", test_stats, 0 },
	{ "stats-json", test_stats_json, 0 },
	{ "stats-full", test_stats_full, 0 },
	{ "purge", test_purge, 0 },
	{ "purge-arena", test_purge_arena, 0 },
	{ "get-bool", test_get_bool, 0 },
	{ "get-size_t", test_get_size_t, 0 },
	{ "get-unsigned", test_get_unsigned, 0 },
	{ "get-ssize_t", test_get_ssize_t, 0 },
	{ "get-string", test_get_string, 0 },
	{ "set-bool", test_set_bool, 0 },
	{ "set-ssize_t", test_set_ssize_t, 0 },
	{ "output-stdout", test_output_stdout, 0 },
	{ "leak-sigint", test_leak_sigint, 0 },
	{ "pid-by-name", test_pid_by_name, 0 },
	{ NULL, NULL, 0 },
};
