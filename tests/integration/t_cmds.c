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

/* The line of a list table whose PID column is pid, copied to line; false if none. */
static bool list_line(const char *out, const char *spid, char *line, size_t sz)
{
	const char *p;

	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t l = strcspn(p, "\n");
		char first[32];

		snprintf(line, sz, "%.*s", (int)(l < sz - 1 ? l : sz - 1), p);
		if (sscanf(line, "%31s", first) == 1 && !strcmp(first, spid))
			return true;
	}
	return false;
}

/* The last word of a line (list's PROF column). */
static const char *last_word(const char *line)
{
	const char *sp = strrchr(line, ' ');

	return sp ? sp + 1 : line;
}

/*
 * A plain list reads /proc and ELF files only: the jemalloc victim is shown
 * with its user and RSS, PROF is '-', and no thread of any process was
 * borrowed (-v prints a "borrowed tid" line for each borrow).
 */
static void test_list(void)
{
	struct victim *v = shared_victim();
	char line[512];
	struct hres r = { 0 };

	if (!v)
		return;
	if (cfg.vflag)
		hc_run(&r, NULL, "list", NULL);
	else
		hc_run(&r, NULL, "-v", "list", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("list: %s (wanted exit 0)", hres_desc(&r));
		goto out;
	}
	if (!list_line(r.out, v->spid, line, sizeof(line)) || !strcasestr_(line, "jemalloc"))
		t_fail("list has no line with pid %s and jemalloc:\n%.400s", v->spid, r.out);
	else if (strcmp(last_word(line), "-"))
		t_fail("list without --probe shows PROF '%s' for the victim (wanted '-'): %s",
		       last_word(line), line);
	else if (!strstr(line, "MiB") && !strstr(line, "KiB"))
		t_fail("list shows no RSS for the victim: %s", line);
	else if (strstr(r.err, "borrowed tid "))
		t_fail("a plain list borrowed a thread: %.300s", strstr(r.err, "borrowed tid "));
	else
		victim_check(v, 0);
out:
	hres_free(&r);
}

/* list --probe asks each jemalloc process: the victim lends a thread and PROF is known. */
static void test_list_probe(void)
{
	struct victim *v = shared_victim();
	const char *p;
	char line[512], task[96];
	bool ours = false;
	struct hres r = { 0 };

	if (!v)
		return;
	if (cfg.vflag)
		hc_run(&r, NULL, "list", "--probe", NULL);
	else
		hc_run(&r, NULL, "-v", "list", "--probe", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("list --probe: %s (wanted exit 0)", hres_desc(&r));
		goto out;
	}
	if (!list_line(r.out, v->spid, line, sizeof(line))) {
		t_fail("list --probe has no line with pid %s:\n%.400s", v->spid, r.out);
		goto out;
	}
	if (strcmp(last_word(line), "enabled") && strcmp(last_word(line), "active")) {
		t_fail("list --probe shows PROF '%s' for a prof:true victim: %s", last_word(line),
		       line);
		goto out;
	}
	/* One of the borrow lines names a thread of the victim. */
	for (p = r.err; (p = strstr(p, "borrowed tid ")); p++) {
		long tid = strtol(p + strlen("borrowed tid "), NULL, 10);

		snprintf(task, sizeof(task), "/proc/%d/task/%ld", (int)v->pid, tid);
		if (tid > 0 && access(task, F_OK) == 0)
			ours = true;
	}
	if (!ours)
		t_fail("list --probe borrowed no thread of the victim: %.300s", r.err);
	else
		victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_list_json(void)
{
	struct victim *v = shared_victim();
	char why[256], pidkey[48], uidkey[48];
	struct hres r = { 0 };

	if (!v)
		return;
	if (hc_expect(&r, 0, "list", "--json", NULL))
		goto out;
	snprintf(pidkey, sizeof(pidkey), "{\"pid\":%s,", v->spid);
	snprintf(uidkey, sizeof(uidkey), "\"uid\":%d,", (int)geteuid());
	if (json_valid(r.out, why, sizeof(why)))
		t_fail("list --json: %s: %.200s", why, r.out);
	else if (!strstr(r.out, pidkey))
		t_fail("list --json has no object for pid %s", v->spid);
	else if (!strstr(strstr(r.out, pidkey), "\"rss\":") ||
		 !strstr(strstr(r.out, pidkey), "\"user\":"))
		t_fail("list --json lacks rss or user: %.300s", strstr(r.out, pidkey));
	else if (!strstr(strstr(r.out, pidkey), uidkey) ||
		 strstr(strstr(r.out, pidkey), uidkey) > strchr(strstr(r.out, pidkey), '}'))
		t_fail("list --json: the victim's uid is not %s: %.300s", uidkey,
		       strstr(r.out, pidkey));
	else if (!strstr(strstr(r.out, pidkey), "\"prof\":") ||
		 strncmp(strstr(strstr(r.out, pidkey), "\"prof\":"), "\"prof\":null", 11))
		t_fail("list --json without --probe gives prof: %.40s",
		       strstr(strstr(r.out, pidkey), "\"prof\":"));
	else
		victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_info(void)
{
	struct victim *v = shared_victim();
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };
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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };

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
	struct hres r = { 0 };
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
	struct hres r = { 0 };

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

/*
 * "stats --full | less": a reader that does not read yet must not keep the
 * target's thread stopped.  The pipe is cut to one page, so heapctl blocks
 * in write(2) on the report; by then the victim must be neither traced nor
 * stopped.
 */
static void test_stats_full_blocked_pipe(void)
{
	const char *const args[] = { "stats", "-p", NULL, "--full", NULL };
	const char *a[5];
	struct victim *v = shared_victim();
	struct hproc hp;
	struct hres r = { 0 };
	char why[512];
	long end;
	bool blocked = false;

	if (!v)
		return;
	memcpy(a, args, sizeof(a));
	a[2] = v->spid;
	if (hc_startv(&hp, NULL, a)) {
		t_fail("could not start heapctl");
		return;
	}
	if (fcntl(hp.out, F_SETPIPE_SZ, 4096) < 0)
		t_note("F_SETPIPE_SZ: %s (the default pipe size is used)", strerror(errno));
	for (end = now_ms() + 15000; now_ms() < end && !pid_exited(hp.pid); sleep_ms(5)) {
		pid_t w = hp_worker(&hp);

		if (proc_task_syscall(w, w) == SYS_write) {
			blocked = true;
			break;
		}
	}
	if (blocked && proc_check_tasks(v->pid, false, why, sizeof(why)))
		t_fail("heapctl blocked writing its report while the target was held: %s", why);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0))
		t_fail("stats --full: %s", hres_desc(&r));
	else if (!t_failed() && !blocked)
		t_skip(false, "heapctl never blocked writing its report: nothing was checked");
	hres_free(&r);
	victim_check(v, 0);
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

/* Number key of the object member obj of the top-level object s; -1 if absent. */
static double json_sub_num(const char *s, const char *obj, const char *key)
{
	const char *val;
	char buf[2048];
	size_t len;
	double d;

	if (json_member(s, obj, &val, &len) || len >= sizeof(buf))
		return -1;
	memcpy(buf, val, len);
	buf[len] = '\0';
	return json_get_num(buf, key, &d) ? -1 : d;
}

/* purge --json: the same purge, its before/after figures as one object. */
static void test_purge_json(void)
{
	struct victim *v = shared_victim();
	double b, a, rel;
	char why[256];
	long after;
	struct hres r = { 0 };

	if (!v || make_dirty(v, 64 * MiB, "0"))
		return;
	if (hc_expect(&r, 0, "purge", "-p", v->spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why))) {
		t_fail("purge --json: %s: %.300s", why, r.out);
		goto out;
	}
	b = json_sub_num(r.out, "before", "dirty");
	a = json_sub_num(r.out, "after", "dirty");
	if (b < 60.0 * MiB || a < 0 || b - a < 48.0 * MiB || json_get_num(r.out, "released", &rel) ||
	    json_sub_num(r.out, "before", "rss") <= 0) {
		t_fail("purge --json: dirty %.0f -> %.0f, or no released/rss: %.300s", b, a, r.out);
		goto out;
	}
	after = vstate(v, "dirty");
	if (after == LONG_MIN)
		goto out;
	if ((double)after > a + 8.0 * MiB) {
		t_fail("purge --json says dirty %.0f after, the target reads %ld", a, after);
		goto out;
	}
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
static void test_output_stdout(void)
{
	struct victim *v = shared_victim();
	char dir[400], dash[480], heap[480];
	struct stat st;
	struct hres r = { 0 };
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
/*
 * A termination signal during the wait ends it early: the second profile is
 * taken, prof.active restored, the growth reported.  SIGQUIT too: it once
 * killed heapctl with prof.active left on.
 */
static void leak_signal(int sig)
{
	struct victim *v = shared_victim();
	char svg[400], err[4096] = "", val[64], why[512];
	const char *args[10];
	struct hproc hp;
	struct hres r = { 0 };
	bool begun = false;

	if (!v)
		return;
	if (victim_ctl(v, "prof.active", val, sizeof(val)) || strcmp(val, "false")) {
		t_fail("the shared victim should start with prof.active=false, reads %s", val);
		return;
	}
	snprintf(svg, sizeof(svg), "%s/leak-%s.svg", cfg.tmpdir, sigabbrev_np(sig));
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
	begun = hp_err_until(&hp, "measuring growth", err, sizeof(err), HC_TIMEOUT_S * 1000L);
	if (!begun) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		t_fail("leak never said that the wait began: %.300s%.300s", err, r.err);
		hres_free(&r);
		return;
	}
	kill(hp.pid, sig);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("leak after SIG%s: %s (wanted exit 0); before: %.200s", sigabbrev_np(sig),
		       hres_desc(&r), err);
		goto out;
	}
	if (!strstr(r.out, "pid ") || !strstr(r.out, " in ")) {
		t_fail("leak after SIG%s reported nothing: %.300s", sigabbrev_np(sig), r.out);
		goto out;
	}
	snprintf(why, sizeof(why), "SIG%s", sigabbrev_np(sig));
	if (!strstr(r.err, why)) {
		t_fail("leak after %s did not say it ended early: %.300s", why, r.err);
		goto out;
	}
	if (!file_starts_with(svg, "<?xml", why, sizeof(why)) &&
	    !file_starts_with(svg, "<svg", why, sizeof(why))) {
		t_fail("leak after SIG%s: %s", sigabbrev_np(sig), why);
		goto out;
	}
	snprintf(why, sizeof(why), "leak ended by SIG%s", sigabbrev_np(sig));
	if (!expect_ctl(v, "prof.active", "false", why))
		victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_leak_sigint(void)
{
	leak_signal(SIGINT);
}

static void test_leak_sigquit(void)
{
	leak_signal(SIGQUIT);
}

/* leak's two profiles go under $TMPDIR, as every scratch file of heapctl does. */
static void test_leak_tmpdir(void)
{
	struct victim *v = shared_victim();
	char tmp[400], svg[480], want[480], cmd[1000];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct hres r = { 0 };

	if (!v)
		goto out_env;
	snprintf(tmp, sizeof(tmp), "%s/leak-tmpdir", cfg.tmpdir);
	mkdir(tmp, 0700);
	snprintf(svg, sizeof(svg), "%s/leak-tmpdir.svg", cfg.tmpdir);
	setenv("TMPDIR", tmp, 1);
	/* -v keeps the profiles and says where */
	hc_run(&r, NULL, "-v", "leak", "-p", v->spid, "--for", "0.2", "-o", svg, NULL);
	if (old)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	snprintf(want, sizeof(want), "profiles kept in %s/heapctl-leak.", tmp);
	if (hres_crash(&r) || hres_exit(&r) != 0)
		t_fail("leak with TMPDIR=%s: %s", tmp, hres_desc(&r));
	else if (!strstr(r.err, want))
		t_fail("leak did not keep its profiles under TMPDIR (%s): %.400s", want, r.err);
	hres_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", tmp, svg);
	if (system(cmd))
		t_note("could not remove %s", tmp);
	if (!t_failed())
		expect_ctl(v, "prof.active", "false", "leak with TMPDIR");
out_env:
	free(saved);
}

/* -p NAME, like pidof: one match drives it, several are listed and refused. */
static void test_pid_by_name(void)
{
	char name[64], link[600], target[600], bad[512];
	struct victim a, b;
	struct hres r = { 0 };
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

/*
 * Run heapctl ARGS (NULL-terminated) under "strace -f -qq -e trace=TRACE"
 * into log, and open the log.  NULL with the test failed or skipped.
 */
static FILE *strace_heapctl(const char *log, const char *trace, const char *const args[])
{
	const char *argv[32];
	struct hres r = { 0 };
	size_t n = 0;
	FILE *f = NULL;

	if (access("/usr/bin/strace", X_OK)) {
		t_skip(false, "strace is not installed");
		return NULL;
	}
	argv[n++] = "/usr/bin/strace";
	argv[n++] = "-f";
	argv[n++] = "-qq";
	argv[n++] = "-e";
	argv[n++] = trace;
	argv[n++] = "-o";
	argv[n++] = log;
	argv[n++] = "/usr/bin/env";
	argv[n++] = asan_no_leak_check();
	argv[n++] = cfg.heapctl;
	for (size_t i = 0; args[i] && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	run_prog(&r, argv, 60);
	if (hres_exit(&r) != 0)
		t_fail("strace heapctl %s: %s", args[0], hres_desc(&r));
	else if (!(f = fopen(log, "re")))
		t_fail("no strace log %s", log);
	hres_free(&r);
	return f;
}

/*
 * Only src/lib/borrow/ptrace.c calls ptrace(2), libraries included (libunwind's
 * ptrace accessors once read registers on their own): heapctl unwound at
 * every ptrace(2) it makes (callers.c), the first frame of its own is one
 * of ptrace.c's ptrace_* wrappers.
 */
static void test_ptrace_one_wrapper(void)
{
	static const char *const cmds[][3] = {
		{ "prof", "status", NULL }, { "stats", "--full", NULL }, { "purge", NULL, NULL },
	};
	struct victim *v = shared_victim();
	unsigned int calls = 0;

	if (!v)
		return;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *const args[] = { cmds[i][0], "-p", v->spid, cmds[i][1], NULL };
		char bad[1024], why[600];
		unsigned int n;
		int r = ptrace_callers(args, &n, bad, sizeof(bad), why, sizeof(why));

		if (r > 0) {
			t_skip(false, "%s", why);
			return;
		}
		if (r < 0)
			t_fail("%s", why);
		else if (bad[0])
			t_fail("heapctl %s: ptrace(2) not from ptrace.c: %s", args[0], bad);
		calls += n;
	}
	if (!t_failed() && calls < 10)
		t_fail("the tracer saw %u ptrace calls (wanted a borrow's worth each)", calls);
	else if (!t_failed())
		t_note("%u ptrace calls, each from ptrace.c", calls);
}

/*
 * What a one-call command does while its thread is stopped, between the
 * interrupt and the detach: the registers are read once, at the stop.  On
 * x86_64 the restorer's stop is known from the scratch the result is read
 * from anyway (the ret gadget's slot), with no register read; arm64 reads
 * x0 there.  And no termination signal is looked for: borrow() looked
 * just before the seize.
 */
static void test_borrow_requests(void)
{
#if defined(__x86_64__)
	const unsigned int want_regs = 1;
#else
	const unsigned int want_regs = 2;
#endif
	static const char *const cmds[] = { "on", "off" };
	struct victim *v = shared_victim();
	char log[400], line[1024], stid[16];

	if (!v)
		return;
	snprintf(log, sizeof(log), "%s/borrow-requests.%s", cfg.tmpdir, v->spid);
	snprintf(stid, sizeof(stid), "%d", (int)v->t_read);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *const args[] = { "prof", "-p", v->spid, "--tid", stid, cmds[i], NULL };
		unsigned int regs = 0, pending = 0, borrows = 0;
		bool stopped = false;
		FILE *f;

		f = strace_heapctl(log, "trace=ptrace,rt_sigpending", args);
		if (!f)
			return;
		while (fgets(line, sizeof(line), f)) {
			if (strstr(line, "PTRACE_INTERRUPT")) {
				stopped = true;
				borrows++;
			} else if (strstr(line, "PTRACE_DETACH")) {
				stopped = false;
			} else if (stopped && strstr(line, "PTRACE_GETREGSET") &&
				   strstr(line, "NT_PRSTATUS")) {
				regs++;
			} else if (stopped && strstr(line, "rt_sigpending(")) {
				pending++;
			}
		}
		fclose(f);
		unlink(log);
		if (borrows != 1)
			t_fail("prof %s: %u borrows under strace (wanted 1)", cmds[i], borrows);
		else if (regs != want_regs || pending)
			t_fail("prof %s: %u register reads (wanted %u) and %u signal checks (wanted "
			       "none) while the thread was stopped", cmds[i], regs, want_regs,
			       pending);
	}
	if (!t_failed())
		victim_check(v, 0);
}

/* ---- watch --------------------------------------------------------------- */

/* One line of fd (a heapctl's stdout) into buf, within timeout_ms; false if none. */
static bool read_line(int fd, char *buf, size_t len, long timeout_ms)
{
	size_t have = 0;

	for (long end = now_ms() + timeout_ms; have + 1 < len && now_ms() < end;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) <= 0)
			continue;
		/* a byte at a time: what follows the newline is the next call's */
		if (read(fd, buf + have, 1) != 1)
			break;
		if (buf[have] == '\n') {
			buf[have] = '\0';
			return true;
		}
		have++;
	}
	buf[have] = '\0';
	return false;
}

/* --count samples, --json: one object per line, each with time, one borrow each. */
static void test_watch_json(void)
{
	struct victim *v = shared_victim();
	struct hres r = { 0 };
	const char *p;
	int lines = 0;

	if (!v)
		return;
	hc_run(&r, NULL, "-v", "watch", "-p", v->spid, "--every", "100ms", "--count", "3", "--json",
	       NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --json: %s", hres_desc(&r));
		goto out;
	}
	for (p = r.out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		lines++;
		if (strncmp(p, "{\"time\":", 8) || !strstr(p, "\"allocated\":") ||
		    (lines > 1) != (strstr(p, "\"rates\":{\"allocated\":") &&
				    strstr(p, "\"rates\":{\"allocated\":") < strchr(p, '\n')))
			t_fail("watch --json line %d: %.300s", lines, p);
	}
	if (!t_failed() && lines != 3)
		t_fail("watch --count 3 printed %d lines:\n%.500s", lines, r.out);
	else if (!t_failed() && count_str(r.err, "gave tid ") != 3)
		t_fail("watch --count 3 borrowed %d times (wanted one borrow per sample)",
		       count_str(r.err, "gave tid "));
	else if (!t_failed())
		victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * A steady leak shows as a steady positive rate: the victim leaks 16 MiB
 * right after each sample is printed (read from watch's own stdout), and
 * the next sample, a second later, must show it.
 */
static void test_watch_growth(void)
{
	const char *args[] = { "watch", "-p", NULL, "--every", NULL, "--count", "4", "--json",
			       NULL };
	char why[512], line[4096], reply[128], every[24];
	double first = -1, last = 0, now, prev = 0;
	struct victim v;
	struct hproc hp;
	struct hres r = { 0 };
	long t0, took;

	if (victim_start_env(&v, "jemalloc_victim", "prof:true,prof_active:false",
			     "VICTIM_NO_HAMMER=1", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	/*
	 * Each leak must land between two samples: a sample every second, or
	 * on a machine where one leak takes longer (an emulated CPU under
	 * load), four times as long as a first leak took.
	 */
	t0 = now_ms();
	if (victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
		goto out;
	took = now_ms() - t0;
	snprintf(every, sizeof(every), "%lds", took * 4 / 1000 + 1);
	args[2] = v.spid;
	args[4] = every;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		goto out;
	}
	for (int i = 0; i < 4 && !t_failed(); i++) {
		const char *a, *rate;

		if (!read_line(hp.out, line, sizeof(line), 10000)) {
			t_fail("watch printed no sample %d", i + 1);
			break;
		}
		a = strstr(line, "\"allocated\":");
		rate = strstr(line, "\"rates\":{\"allocated\":");
		if (!a) {
			t_fail("sample %d has no allocated: %.300s", i + 1, line);
			break;
		}
		last = strtod(a + 12, NULL);
		if (first < 0)
			first = last;
		/* half the leak over the time between the samples (more than 1 s on a slow machine) */
		now = strtod(line + 8, NULL);
		if (i && (!rate || strtod(rate + strlen("\"rates\":{\"allocated\":"), NULL) <
					   8.0 * MiB / (now - prev > 1 ? now - prev : 1)))
			t_fail("sample %d after a 16 MiB leak, %.1f s after the last: rate %.300s",
			       i + 1, now - prev, rate ? rate : "(none)");
		prev = now;
		if (i < 3 && victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
			break;
	}
	hc_finish(&hp, &r, 20);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0))
		t_fail("watch: %s", hres_desc(&r));
	else if (!t_failed() && last - first < 0.9 * 48 * MiB)
		t_fail("allocated grew by %.0f bytes over three 16 MiB leaks", last - first);
	else if (!t_failed())
		victim_check(&v, 0);
	hres_free(&r);
out:
	victim_stop(&v);
}

/*
 * --dump-on-growth: a baseline at the first sample, then a profile each
 * time allocated grew by SIZE; their --base diff names the leaking
 * function.  Without profiling on, a clear refusal before any sample.
 */
static void test_watch_dump_on_growth(void)
{
	const char *args[] = { "watch", "-p", NULL, "--every", "1s", "--count", "4",
			       "--dump-on-growth", "24MiB", "--dir", NULL, NULL };
	char why[512], line[4096], reply[128], dir[300], p0[400], p1[400], p2[400];
	struct victim v;
	struct hproc hp;
	struct hres r = { 0 };

	if (victim_start_env(&v, "jemalloc_victim", "prof:true,prof_active:false",
			     "VICTIM_NO_HAMMER=1", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/growth.%s", cfg.tmpdir, v.spid);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		t_fail("mkdir %s: %s", dir, strerror(errno));
		goto out;
	}
	hc_run(&r, NULL, "watch", "-p", v.spid, "--count", "1", "--dump-on-growth", "1M", "--dir",
	       dir, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, "heapctl prof on"))
		t_fail("--dump-on-growth with profiling off: %s (wanted a refusal naming "
		       "'heapctl prof on')", hres_desc(&r));
	hres_free(&r);
	if (t_failed() || hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	args[2] = v.spid;
	args[10] = dir;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		goto out;
	}
	for (int i = 0; i < 4 && !t_failed(); i++) {
		if (!read_line(hp.out, line, sizeof(line), 10000)) {
			t_fail("watch printed no sample %d", i + 1);
			break;
		}
		if (i < 3 && victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
			break;
	}
	hc_finish(&hp, &r, 20);
	snprintf(p0, sizeof(p0), "%s/heapctl.%s.0.heap", dir, v.spid);
	snprintf(p1, sizeof(p1), "%s/heapctl.%s.1.heap", dir, v.spid);
	snprintf(p2, sizeof(p2), "%s/heapctl.%s.2.heap", dir, v.spid);
	if (t_failed())
		goto out_r;
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --dump-on-growth: %s", hres_desc(&r));
		goto out_r;
	}
	/* 16 MiB after samples 1, 2, 3: 32 MiB by sample 3 (a profile), 16 more by 4 (none) */
	if (access(p0, F_OK) || access(p1, F_OK) || !access(p2, F_OK)) {
		t_fail("wanted a baseline and one growth profile in %s (%s)", dir, r.err);
		goto out_r;
	}
	hres_free(&r);
	hc_run(&r, NULL, "report", p1, "--base", p0, "--format", "folded", NULL);
	if (hres_exit(&r) != 0 || !strstr(r.out, "cmd_leak"))
		t_fail("report of the growth profile against the baseline does not name "
		       "cmd_leak: %s\n%.400s", hres_desc(&r), r.out);
	else
		victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/* Ctrl-C between samples: a clean stop, at once, the target as it was. */
static void test_watch_sigint(void)
{
	struct victim *v = shared_victim();
	const char *args[] = { "-v", "watch", "-p", NULL, "--every", "30s", NULL };
	char buf[4096] = "";
	struct hproc hp;
	struct hres r = { 0 };
	long t0;

	if (!v)
		return;
	args[3] = v->spid;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		return;
	}
	if (!hp_err_until(&hp, "borrowed tid", buf, sizeof(buf), 10000))
		t_fail("watch took no sample: %.300s", buf);
	t0 = now_ms();
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, 10);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0))
		t_fail("watch after SIGINT: %s (wanted exit 0)", hres_desc(&r));
	else if (!t_failed() && now_ms() - t0 > 3000)
		t_fail("watch took %ld ms to stop on SIGINT", now_ms() - t0);
	else if (!t_failed())
		victim_check(v, 0);
	hres_free(&r);
}

/* A free TCP port on the loopback (bound, read, closed). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* GET path from 127.0.0.1:port (HTTP/1.0, the whole answer); NULL on failure. */
static char *http_get(int port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	size_t have = 0, cap = 1 << 20;
	char req[256], *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		free(buf);
		buf = NULL;
		goto out;
	}
	while (have + 1 < cap && (n = read(fd, buf + have, cap - 1 - have)) > 0)
		have += (size_t)n;
	buf[have] = '\0';
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

/* A line of page that begins with metric (its name and '{') and labels pid="pid". */
static bool metric_of(const char *page, const char *metric, const char *pid)
{
	char label[48];

	snprintf(label, sizeof(label), "pid=\"%s\"", pid);
	for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *nl = strchr(p, '\n'), *l;

		if (strncmp(p, metric, strlen(metric)))
			continue;
		l = strstr(p, label);
		if (l && (!nl || l < nl))
			return true;
	}
	return false;
}

/*
 * watch --textfile against Debian's node exporter with only its textfile
 * collector: the heapctl metrics and doctor's findings are served, and the file parsed cleanly
 * (node_textfile_scrape_error 0).  stats --format prometheus prints the
 * same metrics.
 */
static void test_watch_exporter(void)
{
	static const char exporter[] = "/usr/bin/prometheus-node-exporter";
	struct victim *v = shared_victim();
	char dir[300], dirarg[340], addr[64], buf[4096] = "";
	const char *args[] = { exporter, "--collector.disable-defaults", "--collector.textfile",
			       dirarg, addr, NULL };
	struct hproc ex;
	struct hres r = { 0 }, er = { 0 };
	char *page = NULL;
	int port;

	if (!v)
		return;
	if (access(exporter, X_OK)) {
		t_skip(true, "prometheus-node-exporter not installed (apt-get install "
			     "prometheus-node-exporter)");
		return;
	}
	hc_run(&r, NULL, "stats", "-p", v->spid, "--format", "prometheus", NULL);
	if (hres_exit(&r) != 0 || !metric_of(r.out, "heapctl_allocated_bytes{", v->spid) ||
	    !strstr(r.out, "# TYPE heapctl_rss_bytes gauge")) {
		t_fail("stats --format prometheus: %s\n%.400s", hres_desc(&r), r.out);
		goto out_r;
	}
	hres_free(&r);
	snprintf(dir, sizeof(dir), "%s/textfile.%s", cfg.tmpdir, v->spid);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		t_fail("mkdir %s: %s", dir, strerror(errno));
		return;
	}
	hc_run(&r, NULL, "watch", "-p", v->spid, "--count", "1", "--textfile", dir, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --textfile: %s", hres_desc(&r));
		goto out_r;
	}
	port = free_port();
	snprintf(dirarg, sizeof(dirarg), "--collector.textfile.directory=%s", dir);
	snprintf(addr, sizeof(addr), "--web.listen-address=127.0.0.1:%d", port);
	if (port < 0 || prog_start(&ex, args) < 0) {
		t_fail("cannot start %s", exporter);
		goto out_r;
	}
	if (!hp_err_until(&ex, "Listening on", buf, sizeof(buf), 10000))
		t_fail("the node exporter did not start listening: %.400s", buf);
	else if (!(page = http_get(port, "/metrics")))
		t_fail("no answer from the node exporter on port %d", port);
	else if (!metric_of(page, "heapctl_allocated_bytes{", v->spid) ||
		 !metric_of(page, "heapctl_finding_bytes{", v->spid))
		t_fail("the node exporter does not serve heapctl's metrics and findings:\n%.600s",
		       page);
	else if (!strstr(page, "node_textfile_scrape_error 0"))
		t_fail("the node exporter could not parse heapctl's file:\n%.600s",
		       strstr(page, "node_textfile_scrape_error") ?
			       strstr(page, "node_textfile_scrape_error") : page);
	kill(ex.pid, SIGTERM);
	hc_finish(&ex, &er, 10);
	hres_free(&er);
	free(page);
	if (!t_failed())
		victim_check(v, 0);
out_r:
	hres_free(&r);
}

const struct itest t_cmds_tests[] = {
	{ "ptrace-one-wrapper", test_ptrace_one_wrapper, 0 },
	{ "borrow-requests", test_borrow_requests, 0 },
	{ "watch-json", test_watch_json, 0 },
	{ "watch-growth", test_watch_growth, 0 },
	{ "watch-sigint", test_watch_sigint, 0 },
	{ "watch-dump-on-growth", test_watch_dump_on_growth, 0 },
	{ "watch-exporter", test_watch_exporter, 0 },
	{ "list", test_list, 0 },
	{ "list-probe", test_list_probe, 0 },
	{ "list-json", test_list_json, 0 },
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
	{ "stats-full-blocked-pipe", test_stats_full_blocked_pipe, 0 },
	{ "purge", test_purge, 0 },
	{ "purge-arena", test_purge_arena, 0 },
	{ "purge-json", test_purge_json, 0 },
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
	{ "output-stdout", test_output_stdout, 0 },
	{ "leak-sigint", test_leak_sigint, 0 },
	{ "leak-sigquit", test_leak_sigquit, 0 },
	{ "leak-tmpdir", test_leak_tmpdir, 0 },
	{ "pid-by-name", test_pid_by_name, 0 },
	{ NULL, NULL, 0 },
};
