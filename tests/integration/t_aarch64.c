// SPDX-License-Identifier: MIT
/*
 * arm64-only cases (registered in itest.c on aarch64 builds only; the
 * arm64 lane runs them inside a real arm64 kernel, see docs/aarch64.md):
 *
 *   a64-sve-live              a thread with live SVE state (z0-z31, p0-p15,
 *                             ffr) is borrowed and gets all of it back
 *   a64-unwind-truncated      libunwind 1.6.2 stops after three frames in
 *                             pac-ret code; heapctl must still see a
 *                             malloc-family frame five frames up
 *   a64-jemalloc-prof-build   the prof tests ran on a jemalloc with profiling
 *   a64-jemalloc-without-prof Debian's arm64 libjemalloc2 has no profiling:
 *                             heapctl says so, and everything else works
 *
 * tests/aarch64/a64_victim.c is the victim of the first two.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

/* "sve" until at least want rounds are done; 0 ok, -1 (t_fail) otherwise. */
static int sve_rounds_ok(struct victim *v, long want, long *rounds, const char *after)
{
	long end = now_ms() + 20000;
	char reply[512];

	for (;;) {
		if (victim_cmd(v, "sve", reply, sizeof(reply), 15000) || strncmp(reply, "sve ok", 6)) {
			t_fail("SVE sentinel after %s: %s", after, reply);
			return -1;
		}
		*rounds = kv_long(reply, "rounds", 0);
		if (*rounds >= want)
			return 0;
		if (now_ms() > end) {
			t_fail("SVE sentinel after %s: stuck at %ld rounds", after, *rounds);
			return -1;
		}
		sleep_ms(20);
	}
}

static void test_sve_live(void)
{
	static const char *const calls[][3] = {
		{ "stats", "--full", NULL }, { "get", "version", NULL }, { "stats", "--json", NULL },
		{ "info", NULL, NULL }, { "purge", NULL, NULL },
	};
	struct victim vv, *v = &vv;
	char why[512], reply[256], stid[24];
	long rounds = 0, tid;
	size_t i;

	if (victim_start(v, "a64_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_cmd(v, "svestart", reply, sizeof(reply), 15000)) {
		t_fail("svestart: %s", reply);
		goto out;
	}
	if (!strncmp(reply, "svestart none", 13)) {
		t_skip(false, "no SVE on this CPU (%s)", reply);
		goto out;
	}
	tid = kv_long(reply, "tid", 0);
	if (strncmp(reply, "svestart ok", 11) || tid <= 0) {
		t_fail("svestart: %s", reply);
		goto out;
	}
	snprintf(stid, sizeof(stid), "%ld", tid);
	/* The new thread's stack and guard page are the victim's own. */
	victim_baseline(v);
	/* The sentinel holds on its own first. */
	if (sve_rounds_ok(v, 2, &rounds, "start"))
		goto out;
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]) && !t_failed(); i++) {
		const char *args[8];
		struct hres r = { 0 };
		int n = 0;

		args[n++] = calls[i][0];
		if (calls[i][1] && strcmp(calls[i][0], "get"))
			args[n++] = calls[i][1];
		args[n++] = "-p";
		args[n++] = v->spid;
		args[n++] = "--tid";
		args[n++] = stid;
		if (calls[i][1] && !strcmp(calls[i][0], "get"))
			args[n++] = calls[i][1];
		args[n] = NULL;
		hc_runv(&r, NULL, args);
		if (hres_crash(&r) || hres_exit(&r) != 0)
			t_fail("%s --tid %s (live SVE): %s", calls[i][0], stid, hres_desc(&r));
		hres_free(&r);
		/* The round the borrow landed in, and one more, must check out. */
		if (!t_failed())
			sve_rounds_ok(v, rounds + 2, &rounds, calls[i][0]);
	}
	if (!t_failed()) {
		t_note("%zu borrows of a thread spinning with live SVE state (%s), %ld rounds clean",
		       i, strstr(reply, "vl=") ? strstr(reply, "vl=") : "vl ?", rounds);
		victim_check(v, 0);
	}
out:
	victim_kill(v);
}

static void test_unwind_truncated(void)
{
	struct victim vv, *v = &vv;
	char why[512], reply[512], ok[24], bad[24];
	const char *p;
	struct hres r = { 0 };

	if (victim_start(v, "a64_victim", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (victim_cmd(v, "tids", reply, sizeof(reply), 15000) || kv_long(reply, "pacok", 0) <= 0 ||
	    kv_long(reply, "pacbad", 0) <= 0) {
		t_fail("tids: %s", reply);
		goto out;
	}
	snprintf(ok, sizeof(ok), "%ld", kv_long(reply, "pacok", 0));
	snprintf(bad, sizeof(bad), "%ld", kv_long(reply, "pacbad", 0));

	/* Six pac-ret frames over read(), none in the allocator: safe. */
	hc_run(&r, NULL, "-vv", "stats", "--json", "-p", v->spid, "--tid", ok, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("--tid %s (pac-ret chain, no allocator frame): %s", ok, hres_desc(&r));
		goto out;
	}
	p = strstr(r.err, "libunwind stopped after");
	if (p)
		t_note("%.*s", (int)strcspn(p, "\n"), p);
	else
		t_note("libunwind walked the whole pac-ret stack");
	hres_free(&r);

	/* victim_malloc_hold() five frames above read(): never safe. */
	hc_run(&r, NULL, "stats", "-p", v->spid, "--tid", bad, "--timeout", "3", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1) {
		t_fail("--tid %s with victim_malloc_hold() on the stack: %s (wanted exit 1)", bad,
		       hres_desc(&r));
		goto out;
	}
	if (!strstr(r.err, "hint:") || !strstr(r.err, "victim_malloc_hold")) {
		t_fail("--tid %s refused, but without naming victim_malloc_hold() and a hint: %.300s",
		       bad, r.err);
		goto out;
	}
	hres_free(&r);

	/* Left to choose, heapctl must never pick that thread. */
	hc_run(&r, NULL, "-v", "stats", "-p", v->spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("stats without --tid: %s", hres_desc(&r));
		goto out;
	}
	p = strstr(r.err, "borrowed tid ");
	if (p && strtol(p + 13, NULL, 10) == atol(bad)) {
		t_fail("heapctl borrowed tid %s, which is inside victim_malloc_hold()", bad);
		goto out;
	}
	/* Both threads were stopped and inspected: they must read on as before. */
	if (victim_expect(v, "pacpoke", "pacpoke ok", reply, sizeof(reply)))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
	victim_kill(v);
}

static void test_prof_build(void)
{
	struct victim *v = shared_victim();
	char val[64];

	if (!v || victim_ctl(v, "config.prof", val, sizeof(val)))
		return;
	if (strcmp(val, "true"))
		t_fail("the shared victim's jemalloc has config.prof %s: the prof tests did not run"
		       " on a profiling build (LD_LIBRARY_PATH=%s)", val,
		       getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
}

static void test_without_prof(void)
{
	const char *llp = getenv("LD_LIBRARY_PATH");
	char *saved = llp ? strdup(llp) : NULL;
	struct victim vv, *v = &vv;
	char why[512], val[64], path[512];
	struct hres r = { 0 };
	bool enabled;
	int rc;

	/* Debian's own libjemalloc2: drop the profiling build from the search path. */
	unsetenv("LD_LIBRARY_PATH");
	rc = victim_start(v, "jemalloc_victim", "prof:true,prof_active:false", why, sizeof(why));
	if (saved)
		setenv("LD_LIBRARY_PATH", saved, 1);
	free(saved);
	if (rc) {
		t_fail("%s", why);
		return;
	}
	if (victim_ctl(v, "config.prof", val, sizeof(val)))
		goto out;
	if (strcmp(val, "false")) {
		t_skip(false, "the system's jemalloc has profiling (config.prof %s)", val);
		goto out;
	}
	/* jemalloc's own profiler: refused with the reason (plain "prof on" loads heapctl's sampler) */
	hc_run(&r, NULL, "prof", "on", "-p", v->spid, "--sampler", "native", NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "error:") ||
	    !strstr(r.err, "hint:")) {
		t_fail("prof on, jemalloc without profiling: %s (wanted exit 1, error and hint)",
		       hres_desc(&r));
		goto out;
	}
	if (!strcasestr_(r.err, "built without profiling")) {
		t_fail("prof on: does not say the jemalloc was built without profiling: %.300s", r.err);
		goto out;
	}
	if (strstr(r.err, "MALLOC_CONF=prof:true")) {
		t_fail("prof on: suggests MALLOC_CONF=prof:true, which cannot help: %.300s", r.err);
		goto out;
	}
	hres_free(&r);

	snprintf(path, sizeof(path), "%s/a64-noprof.heap", cfg.tmpdir);
	hc_run(&r, NULL, "dump", "-p", v->spid, "-o", path, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strcasestr_(r.err, "built without profiling")) {
		t_fail("dump, jemalloc without profiling: %s", hres_desc(&r));
		goto out;
	}
	if (!access(path, F_OK)) {
		t_fail("dump failed but left %s", path);
		goto out;
	}
	hres_free(&r);

	/* status may succeed, but must then say disabled. */
	hc_run(&r, NULL, "prof", "status", "-p", v->spid, "--json", NULL);
	if (hres_crash(&r) || (hres_exit(&r) != 0 && hres_exit(&r) != 1) ||
	    (hres_exit(&r) == 0 && (json_get_bool(r.out, "enabled", &enabled) || enabled))) {
		t_fail("prof status --json, jemalloc without profiling: %s %.200s", hres_desc(&r),
		       r.out);
		goto out;
	}
	hres_free(&r);

	if (hc_expect(&r, 0, "stats", "-p", v->spid, "--json", NULL))
		goto out;
	victim_check(v, 0);
out:
	hres_free(&r);
	victim_kill(v);
}

const struct itest t_aarch64_tests[] = {
	{ "a64-jemalloc-prof-build", test_prof_build, 0 },
	{ "a64-sve-live", test_sve_live, 0 },
	{ "a64-unwind-truncated", test_unwind_truncated, 0 },
	{ "a64-jemalloc-without-prof", test_without_prof, 0 },
	{ NULL, NULL, 0 },
};
