// SPDX-License-Identifier: MIT
/*
 * A static allocator without symbols is refused by name, never reported as
 * the glibc that happens to be mapped (docs/design.md, "Allocator
 * detection").  Fixtures built by `make fixtures` into the victim
 * directory, all jemalloc_victim against Debian's jemalloc archive:
 *   fx_jemalloc_rjem    every jemalloc symbol renamed _rjem_ (tikv-jemallocator's
 *                       way); libc still serves plain malloc
 *   fx_jemalloc_plain   jemalloc linked in unprefixed: the executable serves malloc
 *   fx_jemalloc_static  -static, unprefixed
 * and fx_tcmalloc_static (tcmalloc_victim with gperftools' libtcmalloc_minimal.a);
 * fx_tcmalloc_prof_stripped (the full libtcmalloc.a, stripped, with a debug file);
 * and each of them as fx_..._stripped (strip --strip-all, no debug file);
 * fx_jemalloc_rjem_noshdr is the stripped one without section headers.
 * Unstripped: info names jemalloc and its evidence, stats agrees with the
 * program's own mallctl, purge returns the dirty pages, prof on works where
 * the build can profile.  Stripped: every command but maps is refused with
 * the allocator and the object named and the three ways out in the hint;
 * list shows "jemalloc (no symbols)".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

#define PCONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define NCONF "dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define MIB (1024.0 * 1024.0)

static double json_num(const char *s, const char *key)
{
	double d = -1;

	if (json_get_num(s, key, &d))
		return -1;
	return d;
}

static int start(struct victim *v, const char *name, bool prof)
{
	char path[512], why[512];

	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, name);
	if (access(path, X_OK)) {
		t_skip(true, "%s missing (make fixtures)", path);
		return -1;
	}
	/* a static binary cannot profile: prof_boot2() unwinds before libc is up */
	if (victim_start(v, name, prof ? PCONF : NCONF, why, sizeof(why))) {
		t_fail("%s", why);
		return -1;
	}
	/* gaps while a static binary starts up are not heapctl's doing */
	victim_ticker_reset(v);
	return 0;
}

/*
 * Neither the output nor the error may name glibc.  Progress lines of -v
 * ("heapctl: info: glibc: malloc_trim at ...", the drivers looking
 * around) are not answers and are left out.
 */
static void no_glibc(const struct hres *r, const char *what)
{
	const char *l = r->err;

	if (strstr(r->out, "glibc"))
		t_fail("%s mentions glibc: %.300s", what, r->out);
	while (l && *l && !t_failed()) {
		size_t n = strcspn(l, "\n");

		if (strncmp(l, "heapctl: info: ", 15) && strncmp(l, "heapctl: debug: ", 16) &&
		    memmem(l, n, "glibc", 5))
			t_fail("%s mentions glibc: %.*s", what, (int)n, l);
		l += n + (l[n] == '\n');
	}
}

static void unstripped(const char *name, bool prof)
{
	struct victim vv, *v = &vv;
	char reply[256], val[64], want[600], s[512];
	double mine, theirs, dirty;
	struct hres r = { 0 };

	if (start(v, name, prof))
		return;
	/*
	 * The messages are always there; the conf variable's name only when the
	 * compiler kept it a string of its own (clang on arm64 merges it into
	 * the tail of "... the environment variable MALLOC_CONF").
	 */
	snprintf(want, sizeof(want), "evidence      jemalloc in %s/%s (found: ", cfg.victim_dir,
		 name);
	if (hc_expect(&r, 0, "info", "-p", v->spid, "--timeout", "10", NULL) == 0) {
		if (!strstr(r.out, "allocator     jemalloc "))
			t_fail("info: not jemalloc: %.300s", r.out);
		else if (!strstr(r.out, want) ||
			 !strstr(strstr(r.out, want), "\"<jemalloc>: \" messages)"))
			t_fail("info: no '%s... \"<jemalloc>: \" messages)' in %.600s", want, r.out);
		no_glibc(&r, "info");
	}
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "info", "--json", "-p", v->spid, NULL) == 0) {
		snprintf(want, sizeof(want), "%s/%s", cfg.victim_dir, name);
		if (json_get_str(r.out, "evidence", s, sizeof(s)) || strcmp(s, "jemalloc"))
			t_fail("info --json: evidence '%s'", s);
		else if (json_get_str(r.out, "evidence_object", s, sizeof(s)) || strcmp(s, want))
			t_fail("info --json: evidence_object '%s', not %s", s, want);
	}
	hres_free(&r);

	/* stats against the program's own figures, with 64 MiB it holds */
	if (!t_failed())
		victim_expect(v, "leak 67108864", "leak ok", reply, sizeof(reply));
	if (!t_failed() && hc_expect(&r, 0, "stats", "--json", "-p", v->spid, NULL) == 0) {
		mine = json_num(r.out, "allocated");
		if (victim_ctl(v, "stats.allocated", val, sizeof(val)))
			t_fail("ctl stats.allocated: %s", val);
		theirs = strtod(val, NULL);
		if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "jemalloc"))
			t_fail("stats --json: allocator '%s'", s);
		else if (mine < 64 * MIB || theirs < 64 * MIB || mine > theirs + 16 * MIB ||
			 theirs > mine + 16 * MIB)
			t_fail("stats: allocated %.1f MiB, the program says %.1f MiB", mine / MIB,
			       theirs / MIB);
	}
	hres_free(&r);
	/* freed with dirty_decay_ms:-1, the pages stay dirty until purged */
	if (!t_failed())
		victim_expect(v, "free", "free ok", reply, sizeof(reply));
	if (!t_failed() && hc_expect(&r, 0, "stats", "--json", "-p", v->spid, NULL) == 0 &&
	    (dirty = json_num(r.out, "dirty")) < 32 * MIB)
		t_fail("only %.1f MiB dirty after freeing 64 MiB", dirty / MIB);
	hres_free(&r);
	if (!t_failed())
		hc_expect(&r, 0, "purge", "-p", v->spid, NULL);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "stats", "--json", "-p", v->spid, NULL) == 0 &&
	    (dirty = json_num(r.out, "dirty")) > 16 * MIB)
		t_fail("still %.1f MiB dirty after purge", dirty / MIB);
	hres_free(&r);

	if (!t_failed() && prof) {
		hc_expect(&r, 0, "prof", "on", "-p", v->spid, NULL);
		hres_free(&r);
		if (!t_failed() && (victim_ctl(v, "prof.active", val, sizeof(val)) ||
				    strcmp(val, "true")))
			t_fail("prof on: the program says prof.active %s", val);
		if (!t_failed())
			hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL);
		hres_free(&r);
	}
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

/* exit 1, the allocator and the object named, the three ways out, and no glibc. */
static void refused(struct hres *r, const char *what, pid_t pid, const char *path,
		    const char *alloc)
{
	char want[600];

	if (hres_crash(r) || r->timed_out || hres_exit(r) != 1) {
		t_fail("%s: %s (want exit 1)", what, hres_desc(r));
		return;
	}
	snprintf(want, sizeof(want), "heapctl: error: pid %d: %s has its own %s (found: ",
		 (int)pid, path, alloc);
	if (!strstr(r->err, want) || !strstr(r->err, "but no symbols for it"))
		t_fail("%s: no '%s... but no symbols for it' in: %.400s", what, want, r->err);
	else if (!strstr(r->err, "hint: ") || !strstr(r->err, "--debug-file") ||
		 !strstr(r->err, "DEBUGINFOD_URLS") || !strstr(r->err, "build that keeps"))
		t_fail("%s: the hint lacks a way out: %.400s", what, r->err);
	no_glibc(r, what);
}

static void stripped(const char *name, const char *alloc)
{
	struct victim vv, *v = &vv;
	char path[512], dump[400], line[600], nosym[64], *p;
	struct hres r = { 0 };
	static const char *const cmds[][6] = {
		{ "info" },
		{ "info", "--json" },
		{ "stats" },
		{ "stats", "--json" },
		{ "purge" },
		{ "prof", "on" },
		{ "get", "opt.narenas" },
		{ "set", "arenas.dirty_decay_ms", "1000" },
		{ "dump", "-o", "@DUMP" },
		{ "leak", "--for", "1" },
	};

	if (start(v, name, false))
		return;
	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, name);
	snprintf(nosym, sizeof(nosym), " %s (no symbols) ", alloc);
	snprintf(dump, sizeof(dump), "%s/ev-%d.heap", cfg.tmpdir, (int)v->pid);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !t_failed(); i++) {
		const char *a[12];
		size_t n = 0;
		char what[96];

		for (size_t k = 0; k < 6 && cmds[i][k]; k++)
			a[n++] = strcmp(cmds[i][k], "@DUMP") ? cmds[i][k] : dump;
		a[n++] = "-p";
		a[n++] = v->spid;
		a[n++] = "--timeout";
		a[n++] = "10";
		a[n] = NULL;
		snprintf(what, sizeof(what), "%s%s%s", cmds[i][0], cmds[i][1] ? " " : "",
			 cmds[i][1] ? cmds[i][1] : "");
		hc_runv(&r, NULL, a);
		refused(&r, what, v->pid, path, alloc);
		hres_free(&r);
	}
	if (!t_failed() && access(dump, F_OK) == 0)
		t_fail("dump wrote %s although it was refused", dump);
	/* maps needs no symbols */
	if (!t_failed())
		hc_expect(&r, 0, "maps", "-p", v->spid, NULL);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "list", NULL) == 0) {
		snprintf(line, sizeof(line), "\n%7d ", (int)v->pid);
		p = strstr(r.out, line);
		if (!p)
			t_fail("list has no row for pid %d: %.400s", (int)v->pid, r.out);
		else {
			char *end = strchr(p + 1, '\n');

			snprintf(line, sizeof(line), "%.*s", end ? (int)(end - p - 1) : 200, p + 1);
			if (!strstr(line, nosym) || strstr(line, "glibc"))
				t_fail("list: '%s', want%s", line, nosym);
		}
	}
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "list", "--json", NULL) == 0) {
		snprintf(line, sizeof(line), "{\"pid\":%d,", (int)v->pid);
		p = strstr(r.out, line);
		snprintf(nosym, sizeof(nosym), "\"allocator\":\"%s (no symbols)\"", alloc);
		if (!p || !strstr(p, nosym) || strstr(p, nosym) > strchr(p, '}'))
			t_fail("list --json: %.300s", p ? p : r.out);
	}
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

static void test_rjem(void)
{
	unstripped("fx_jemalloc_rjem", true);
}

static void test_rjem_stripped(void)
{
	stripped("fx_jemalloc_rjem_stripped", "jemalloc");
}

/* Without section headers: the read-only segments are read instead. */
static void test_noshdr(void)
{
	stripped("fx_jemalloc_rjem_noshdr", "jemalloc");
}

static void test_plain(void)
{
	unstripped("fx_jemalloc_plain", true);
}

static void test_plain_stripped(void)
{
	stripped("fx_jemalloc_plain_stripped", "jemalloc");
}

static void test_static(void)
{
	unstripped("fx_jemalloc_static", false);
}

static void test_static_stripped(void)
{
	stripped("fx_jemalloc_static_stripped", "jemalloc");
}

/* tcmalloc_minimal linked in: the executable's .symtab names MallocExtension_*. */
static void test_tcmalloc(void)
{
	struct victim vv, *v = &vv;
	char reply[256], want[600], s[64];
	double mine;
	struct hres r = { 0 };

	if (start(v, "fx_tcmalloc_static", false))
		return;
	snprintf(want, sizeof(want),
		 "evidence      tcmalloc in %s/fx_tcmalloc_static (found: MallocExtension type",
		 cfg.victim_dir);
	if (hc_expect(&r, 0, "info", "-p", v->spid, NULL) == 0 &&
	    (!strstr(r.out, "allocator     tcmalloc_minimal ") || !strstr(r.out, want)))
		t_fail("info: no tcmalloc_minimal or no '%s' in %.500s", want, r.out);
	hres_free(&r);
	/* the program holds 32 MiB more than at start: 512 blocks of 64 KiB */
	if (!t_failed())
		victim_expect(v, "grow 512", "grow ok", reply, sizeof(reply));
	if (!t_failed() && hc_expect(&r, 0, "stats", "--json", "-p", v->spid, NULL) == 0) {
		mine = json_num(r.out, "generic.current_allocated_bytes");
		if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "tcmalloc_minimal"))
			t_fail("stats --json: allocator '%s'", s);
		else if (mine < 32 * MIB || mine > 48 * MIB)
			t_fail("stats: %.1f MiB allocated, the program holds 32 MiB and little else",
			       mine / MIB);
	}
	hres_free(&r);
	if (!t_failed())
		hc_expect(&r, 0, "purge", "-p", v->spid, NULL);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

static void test_tcmalloc_stripped(void)
{
	stripped("fx_tcmalloc_static_stripped", "tcmalloc");
}

/*
 * The full tcmalloc linked in and stripped, its symbols given with
 * --debug-file: the profiler's flags (data symbols) come from there too, so
 * prof on, dump and prof off work as with the shared library.
 */
static void test_tcmalloc_prof_debug_file(void)
{
	struct victim vv, *v = &vv;
	char dbg[512], heap[512], want[600];
	bool active = false;
	struct hres r = { 0 };

	snprintf(dbg, sizeof(dbg), "%s/fx_tcmalloc_prof_stripped.debug", cfg.victim_dir);
	snprintf(heap, sizeof(heap), "%s/tcprof-%d.heap", cfg.tmpdir, (int)getpid());
	if (start(v, "fx_tcmalloc_prof_stripped", false))
		return;
	snprintf(want, sizeof(want), "symbols       --debug-file %s", dbg);
	if (hc_expect(&r, 0, "info", "-p", v->spid, "--debug-file", dbg, NULL) == 0 &&
	    (!strstr(r.out, "allocator     tcmalloc gperftools") || !strstr(r.out, want)))
		t_fail("info: not the full tcmalloc, or no '%s': %.500s", want, r.out);
	hres_free(&r);
	if (!t_failed())
		hc_expect(&r, 0, "prof", "on", "-p", v->spid, "--debug-file", dbg, NULL);
	hres_free(&r);
	if (!t_failed() &&
	    hc_expect(&r, 0, "prof", "status", "--json", "-p", v->spid, "--debug-file", dbg,
		      NULL) == 0 &&
	    (json_get_bool(r.out, "active", &active) || !active))
		t_fail("prof status after prof on: not active: %.300s", r.out);
	hres_free(&r);
	if (!t_failed())
		hc_expect(&r, 0, "dump", "-o", heap, "-p", v->spid, "--debug-file", dbg, NULL);
	hres_free(&r);
	unlink(heap);
	hc_expect(&r, 0, "prof", "off", "-p", v->spid, "--debug-file", dbg, NULL);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

/* A program that only mentions MALLOC_CONF (a glibc one) is still glibc's. */
static void test_glibc_plain(void)
{
	struct victim vv, *v = &vv;
	char why[512], s[64];
	struct hres r = { 0 };

	if (victim_start(v, "alloc_victim", NCONF, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (hc_expect(&r, 0, "info", "--json", "-p", v->spid, NULL) == 0 &&
	    (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "glibc") ||
	     json_get_str(r.out, "evidence", s, sizeof(s)) || s[0]))
		t_fail("info --json on a glibc program: %.400s", r.out);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
	victim_kill(v);
}

const struct itest t_evidence_tests[] = {
	{ "evidence-rjem", test_rjem, 0 },
	{ "evidence-rjem-stripped", test_rjem_stripped, 0 },
	{ "evidence-rjem-noshdr", test_noshdr, 0 },
	{ "evidence-plain", test_plain, 0 },
	{ "evidence-plain-stripped", test_plain_stripped, 0 },
	{ "evidence-static", test_static, 0 },
	{ "evidence-static-stripped", test_static_stripped, 0 },
	{ "evidence-tcmalloc-static", test_tcmalloc, 0 },
	{ "evidence-tcmalloc-static-stripped", test_tcmalloc_stripped, 0 },
	{ "evidence-tcmalloc-prof-debug-file", test_tcmalloc_prof_debug_file, 0 },
	{ "evidence-glibc", test_glibc_plain, 0 },
	{ NULL, NULL, 0 },
};
