// SPDX-License-Identifier: MIT
/*
 * Every command against the shared jemalloc victim: list, info, prof,
 * dump, stats and purge.  Each test checks the effect from inside the
 * target (the victim reads its own mallctls), then that the target was
 * left unharmed (victim_check()).  get and set are t_ctl.c's, watch
 * t_watch.c's, the command line as a whole t_cli.c's.
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

const struct itest t_cmds_tests[] = {
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
	{ NULL, NULL, 0 },
};
