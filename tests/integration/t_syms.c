// SPDX-License-Identifier: MIT
/*
 * Symbols where they are: a stripped program whose jemalloc is linked in
 * statically under the _rjem_ prefix, with its symbols elsewhere.
 *
 * Fixtures (`make fixtures`, from fx_jemalloc_rjem):
 *   fx_jemalloc_mdi    stripped; a .symtab only in .gnu_debugdata (MiniDebugInfo)
 *   fx_jemalloc_nodbg  stripped, no debug link; its debug file sits in
 *                      fixtures/debugroot/.build-id/xx/yyyy.debug and in
 *                      fixtures/debuginfod/ (what a local debuginfod serves)
 * For each way in, heapctl must name jemalloc and the source of its
 * symbols, agree with the program's own stats, purge, turn profiling on,
 * and leave the program unharmed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
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

#include "itest.h"

#define SYMS_CONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
#define SYMS_REPLY_MS 10000

/* Starts argv (a victim_start_argv() one), its tickers reset: start-up is not under test. */
static int syms_start(struct victim *v, const char *const *argv, char *why, size_t whysz)
{
	if (victim_start_argv(v, argv, SYMS_CONF, NULL, VS_TIDS | VS_JEMALLOC, why, whysz))
		return -1;
	victim_ticker_reset(v); /* and starts the control, which tells machine-wide stalls apart */
	return 0;
}

static void syms_path(char *out, size_t sz, const char *rel)
{
	snprintf(out, sz, "%s/%s", cfg.victim_dir, rel);
}

/* The fixture exists, else the test is skipped (a missing `make fixtures`). */
static bool have(const char *path)
{
	if (access(path, R_OK) == 0)
		return true;
	t_skip(true, "%s missing (make fixtures)", path);
	return false;
}

/* heapctl ARGS... -p PID [--debug-file F] --timeout 20; exit code want. */
static int run(struct hres *r, int want, struct victim *v, const char *debug_file,
	       const char *const *args)
{
	const char *a[24];
	size_t n = 0;

	for (; *args && n < 16; args++)
		a[n++] = *args;
	a[n++] = "-p";
	a[n++] = v->spid;
	if (debug_file) {
		a[n++] = "--debug-file";
		a[n++] = debug_file;
	}
	a[n++] = "--timeout";
	a[n++] = "20";
	a[n] = NULL;
	hc_runv(r, NULL, a);
	if (hres_crash(r)) {
		t_fail("%s [%s]", hres_desc(r), hres_crash(r));
		return -1;
	}
	if (hres_exit(r) != want) {
		t_fail("%s (wanted exit %d)", hres_desc(r), want);
		return -1;
	}
	return 0;
}

/*
 * info (text and --json) names jemalloc, the _rjem_ prefix and where the
 * symbols came from (src_kind, and src_path in it if given); stats --json
 * agrees with the program's own stats.allocated and version; purge; prof
 * on, status, off; then the program is unharmed.
 */
static void drive(struct victim *v, const char *debug_file, const char *src_kind,
		  const char *src_path)
{
	static const char *const info[] = { "info", NULL }, *const info_j[] = { "info", "--json", NULL },
				  *const stats_j[] = { "stats", "--json", NULL },
				  *const purge[] = { "purge", NULL },
				  *const prof_on[] = { "prof", "on", NULL },
				  *const prof_st[] = { "prof", "status", "--json", NULL },
				  *const prof_off[] = { "prof", "off", NULL };
	char why[256], s[1024], ver[128], alloc_in[64], line[1100];
	double allocated, inside;
	bool active = false;
	struct hres r = { 0 };

	if (run(&r, 0, v, debug_file, info) == 0) {
		snprintf(line, sizeof(line), "symbols       %s", src_kind);
		if (!strstr(r.out, "allocator     jemalloc") || !strstr(r.out, "_rjem_"))
			t_fail("info does not name jemalloc with prefix _rjem_: %.400s", r.out);
		else if (!strstr(r.out, line) || (src_path && !strstr(r.out, src_path)))
			t_fail("info does not say the symbols came from %s%s%s: %.500s", src_kind,
			       src_path ? " " : "", src_path ? src_path : "", r.out);
	}
	hres_free(&r);
	if (!t_failed() && run(&r, 0, v, debug_file, info_j) == 0) {
		if (json_valid(r.out, why, sizeof(why)))
			t_fail("info --json: %s: %.200s", why, r.out);
		else if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "jemalloc"))
			t_fail("info --json: allocator is not jemalloc: %.300s", r.out);
		else if (json_get_str(r.out, "symtab", s, sizeof(s)) ||
			 strncmp(s, src_kind, strlen(src_kind)))
			t_fail("info --json: \"symtab\" is not %s...: %.400s", src_kind, r.out);
	}
	hres_free(&r);
	if (t_failed())
		return;
	if (victim_ctl(v, "version", ver, sizeof(ver)) ||
	    victim_ctl(v, "stats.allocated", alloc_in, sizeof(alloc_in)))
		return;
	if (run(&r, 0, v, debug_file, stats_j) == 0) {
		inside = strtod(alloc_in, NULL);
		if (json_valid(r.out, why, sizeof(why)))
			t_fail("stats --json: %s: %.200s", why, r.out);
		else if (json_get_str(r.out, "allocator", s, sizeof(s)) || strcmp(s, "jemalloc"))
			t_fail("stats --json: allocator is not jemalloc: %.300s", r.out);
		else if (json_get_str(r.out, "version", s, sizeof(s)) || !*s || !strstr(ver, s))
			t_fail("stats --json: version '%s', the program says '%s'", s, ver);
		else if (json_get_num(r.out, "allocated", &allocated) || allocated < inside / 3 ||
			 allocated > inside * 3)
			t_fail("stats --json: allocated %.0f, the program's stats.allocated %.0f: %.300s",
			       allocated, inside, r.out);
	}
	hres_free(&r);
	if (!t_failed() && run(&r, 0, v, debug_file, purge) == 0 && !strstr(r.out, "purged"))
		t_fail("purge: %.300s", r.out);
	hres_free(&r);
	if (!t_failed())
		run(&r, 0, v, debug_file, prof_on);
	hres_free(&r);
	if (!t_failed() && run(&r, 0, v, debug_file, prof_st) == 0 &&
	    (json_get_bool(r.out, "active", &active) || !active))
		t_fail("prof status after prof on: not active: %.300s", r.out);
	hres_free(&r);
	if (!t_failed())
		run(&r, 0, v, debug_file, prof_off);
	hres_free(&r);
	if (!t_failed())
		victim_check(v, 0);
}

/*
 * A profile of the stripped program names its functions with --debug-file
 * (report and the reports of dump/leak match it to the object by build-id),
 * and shows "fx_jemalloc_nodbg+0xOFFSET" frames without it.
 */
static void report_names(struct victim *v, const char *dbg)
{
	static const char *const prof_on[] = { "prof", "on", NULL },
			  *const prof_off[] = { "prof", "off", NULL };
	const char *dump[] = { "dump", "-o", NULL, NULL };
	char heap[400], reply[256];
	struct hres r = { 0 };

	snprintf(heap, sizeof(heap), "%s/syms-%d.heap", cfg.tmpdir, (int)v->pid);
	dump[2] = heap;
	if (run(&r, 0, v, dbg, prof_on) == 0) {
		hres_free(&r);
		/* 1 MiB allocations: each is sampled at jemalloc's default 512 KiB rate */
		if (victim_expect(v, "leak 16777216 0", "leak ok", reply, sizeof(reply)) == 0)
			run(&r, 0, v, dbg, dump);
	}
	hres_free(&r);
	run(&r, 0, v, dbg, prof_off);
	hres_free(&r);
	victim_cmd(v, "free", reply, sizeof(reply), SYMS_REPLY_MS);
	if (t_failed())
		return;
	if (hc_expect(&r, 0, "report", heap, "--format", "folded", "-p", v->spid, NULL) == 0 &&
	    !strstr(r.out, "fx_jemalloc_nodbg+0x"))
		t_fail("report without --debug-file: no fx_jemalloc_nodbg+0x frame: %.300s", r.out);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 0, "report", heap, "--format", "folded", "-p", v->spid,
				     "--debug-file", dbg, NULL) == 0 &&
	    (strstr(r.out, "fx_jemalloc_nodbg+0x") || !strstr(r.out, "main")))
		t_fail("report --debug-file: the program's frames are not named: %.400s", r.out);
	hres_free(&r);
}

/* MiniDebugInfo: the symbols only in .gnu_debugdata. */
static void test_minidebuginfo(void)
{
	char path[512], why[512];
	const char *argv[] = { path, "3", "4", "5", NULL };
	struct victim v;

	syms_path(path, sizeof(path), "fx_jemalloc_mdi");
	if (!have(path))
		return;
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	drive(&v, NULL, ".gnu_debugdata", NULL);
	victim_kill(&v);
}

/* --debug-file: used when it matches, refused with a hint when it does not. */
static void test_debug_file(void)
{
	static const char *const info[] = { "info", NULL };
	char path[512], dbg[512], other[512], why[512];
	const char *argv[] = { path, "3", "4", "5", NULL };
	struct victim v;
	struct hres r = { 0 };

	syms_path(path, sizeof(path), "fx_jemalloc_nodbg");
	syms_path(dbg, sizeof(dbg), "../fixtures/debuginfod/fx_jemalloc_nodbg.debug");
	syms_path(other, sizeof(other), "jemalloc_victim");
	if (!have(path) || !have(dbg) || !have(other))
		return;
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	drive(&v, dbg, "--debug-file", dbg);
	if (!t_failed())
		report_names(&v, dbg);
	/* another build's symbols would put every address in the wrong place */
	if (!t_failed() && run(&r, 1, &v, other, info) == 0 &&
	    (!strstr(r.err, "build-id") || !strstr(r.err, "hint:") || strstr(r.out, "allocator")))
		t_fail("a --debug-file of another build is not refused clearly: %.400s%.300s", r.out,
		       r.err);
	hres_free(&r);
	if (!t_failed() && run(&r, 1, &v, "/nonexistent/x.debug", info) == 0 &&
	    (!strstr(r.err, "--debug-file") || !strstr(r.err, "hint:")))
		t_fail("a missing --debug-file is not refused clearly: %.300s", r.err);
	hres_free(&r);
	/* list, maps and report inject nothing into the executable: a usage error there */
	if (!t_failed() && hc_expect(&r, 2, "list", "--debug-file", dbg, NULL) == 0 &&
	    !strstr(r.err, "does not apply"))
		t_fail("list --debug-file: %.300s", r.err);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 2, "maps", "-p", v.spid, "--debug-file", dbg, NULL) == 0 &&
	    !strstr(r.err, "does not apply"))
		t_fail("maps --debug-file: %.300s", r.err);
	hres_free(&r);
	if (!t_failed() && hc_expect(&r, 2, "info", "-p", v.spid, "--debug-file", dbg,
				     "--debug-file", other, NULL) == 0 &&
	    !strstr(r.err, "twice"))
		t_fail("--debug-file given twice: %.300s", r.err);
	hres_free(&r);
	if (!t_failed())
		victim_check(&v, 0);
	victim_kill(&v);
}

/*
 * By build-id under the target's root: the program runs in its own mount
 * namespace where fixtures/debugroot is mounted over /usr/lib/debug, so
 * nothing is written to the host's /usr/lib/debug.
 */
static void test_build_id(void)
{
	char path[512], root[512], why[512];
	const char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c",
			       "mount --bind \"$0\" /usr/lib/debug && exec \"$1\" 3 4 5", root, path,
			       NULL };
	char unshare[512];
	struct victim v;

	syms_path(path, sizeof(path), "fx_jemalloc_nodbg");
	syms_path(root, sizeof(root), "../fixtures/debugroot");
	if (!have(path) || !have(root))
		return;
	if (geteuid() != 0 || !find_in_path("unshare", unshare, sizeof(unshare)) ||
	    access("/usr/lib/debug", F_OK)) {
		t_skip(false, "needs root, unshare(1) and /usr/lib/debug for a private mount");
		return;
	}
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	drive(&v, NULL, "debug file", "/usr/lib/debug/.build-id/");
	victim_kill(&v);
}

/*
 * debuginfod: a server of our own on loopback, serving fixtures/debuginfod,
 * and a private client cache.  heapctl must get the symbols through it.
 */
static void test_debuginfod(void)
{
	char path[512], dir[512], db[320], cache[320], pollc[320], portstr[16], url[64];
	char id[96] = "", bin[512], why[512], dbgfind[512];
	const char *argv[] = { path, "3", "4", "5", NULL };
	const char *srv[] = { bin, "-p", portstr, "-F", dir, "-d", db, "-t", "0", "-g", "0", NULL };
	struct hproc hp = { .pid = -1 };
	struct hres r = { 0 }, sr = { 0 };
	struct victim v = { .pid = -1 };
	bool found = false;
	int port;

	syms_path(path, sizeof(path), "fx_jemalloc_nodbg");
	syms_path(dir, sizeof(dir), "../fixtures/debuginfod");
	if (!have(path) || !have(dir))
		return;
	if (!find_in_path("debuginfod", bin, sizeof(bin)) ||
	    !find_in_path("debuginfod-find", dbgfind, sizeof(dbgfind))) {
		t_skip(true, "debuginfod not installed (Debian package debuginfod; make deps)");
		return;
	}
	if (access(LIBDIR "libdebuginfod.so.1", R_OK)) {
		t_skip(true, "libdebuginfod.so.1 not installed (Debian package libdebuginfod1)");
		return;
	}
	{
		/* the build-id, as readelf prints it */
		const char *re[] = { "readelf", "-n", path, NULL };
		const char *p;

		run_prog(&r, re, 20);
		p = strstr(r.out, "Build ID: ");
		if (p)
			sscanf(p + 10, "%64[0-9a-f]", id);
		hres_free(&r);
		if (!id[0]) {
			t_fail("no build-id in %s", path);
			return;
		}
	}
	port = loopback_free_port();
	if (port < 0) {
		t_fail("no free loopback port");
		return;
	}
	snprintf(portstr, sizeof(portstr), "%d", port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(db, sizeof(db), "%s/dbgd-%d.sqlite", cfg.tmpdir, port);
	snprintf(cache, sizeof(cache), "%s/dbgd-cache", cfg.tmpdir);
	snprintf(pollc, sizeof(pollc), "%s/dbgd-poll", cfg.tmpdir);
	unsetenv("DEBUGINFOD_URLS"); /* the server federates nowhere */
	if (prog_start(&hp, srv) < 0) {
		t_fail("cannot start %s", bin);
		return;
	}
	/*
	 * Ready when it serves the file: ask with debuginfod-find until it does
	 * (bounded).  Its cache is apart from heapctl's, and misses are not
	 * remembered (cache_miss_s 0), so each try asks the server.
	 */
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", pollc, 1);
	mkdir(pollc, 0700);
	{
		char f[400];
		FILE *m;

		snprintf(f, sizeof(f), "%s/cache_miss_s", pollc);
		m = fopen(f, "w");
		if (m) {
			fputs("0\n", m);
			fclose(m);
		}
	}
	for (int i = 0; i < 300 && !found; i++) {
		const char *q[] = { dbgfind, "debuginfo", id, NULL };

		if (pid_exited(hp.pid))
			break;
		run_prog(&sr, q, 20);
		found = sr.status == 0 && strstr(sr.out, "/debuginfo");
		hres_free(&sr);
		if (!found)
			sleep_ms(100); /* the poll interval, not a wait for an event */
	}
	if (!found) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, 10);
		t_fail("debuginfod on port %d never served build-id %s: %.300s", port, id, r.err);
		hres_free(&r);
		goto out;
	}
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		goto stop;
	}
	{
		/* list opens every process: it must not send one query per stripped program */
		char f[520];

		hc_run(&r, NULL, "list", NULL);
		hres_free(&r);
		snprintf(f, sizeof(f), "%s/%s", cache, id);
		if (access(f, F_OK) == 0)
			t_fail("list asked debuginfod for build-id %s (%s exists)", id, f);
	}
	if (!t_failed())
		drive(&v, NULL, "debuginfod", cache);
	victim_kill(&v);
stop:
	kill(hp.pid, SIGKILL);
	hc_finish(&hp, &r, 10);
	hres_free(&r);
out:
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
}

/*
 * A stripped program on glibc's malloc, idle: Debian's bash, reading a
 * line from a pipe whose write end (*hold) the test keeps; close it and
 * kill_wait() the pid, also in spid.  bash rather than sleep: in the arm64
 * lane's guest sleep is busybox, linked statically.  so (or NULL) gives
 * more to spawn(); wait: return once bash runs, not while it is still
 * exec'ing.  -1 (the test failed) if it cannot be started.
 */
static pid_t glibc_idle(struct spawn_opts *so, bool wait, int *hold, char spid[16])
{
	static const char *const argv[] = { "/bin/bash", "-c", "read -r line", NULL };
	struct spawn_opts plain = { .out_fd = -1, .err_fd = -1 };
	char why[256];
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		t_fail("pipe: %s", strerror(errno));
		return -1;
	}
	if (!so)
		so = &plain;
	so->in_fd = p[0];
	pid = spawn(argv, so, why, sizeof(why));
	close(p[0]);
	if (pid >= 0 && wait && !wait_exec(pid, argv[0], 5000)) {
		snprintf(why, sizeof(why), "%s did not start", argv[0]);
		kill_wait(pid);
		pid = -1;
	}
	if (pid < 0) {
		t_fail("%s", why);
		close(p[1]);
		return -1;
	}
	*hold = p[1];
	snprintf(spid, 16, "%d", (int)pid);
	return pid;
}

/*
 * A stripped program on glibc's malloc (Debian's bash) shows no
 * allocator of its own: debuginfod, set for the whole machine, is not asked
 * for its debug file, which would be a download for nothing.
 */
static void stripped_glibc_asks_nothing(const char *url, const char *cache)
{
	char spid[16];
	struct hres r = { 0 };
	int hold;
	pid_t pid;

	pid = glibc_idle(NULL, true, &hold, spid);
	if (pid < 0)
		return;
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	hc_run(&r, NULL, "-v", "info", "-p", spid, "--timeout", "4", NULL);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	if (hres_crash(&r) || hres_exit(&r) != 0)
		t_fail("info on a stripped glibc program: %s", hres_desc(&r));
	else if (strstr(r.err, "debuginfod:"))
		t_fail("a stripped program on glibc's malloc made heapctl ask debuginfod: %.300s",
		       r.err);
	else if (!strstr(r.out, "glibc"))
		t_fail("info on bash does not name glibc: %.300s", r.out);
	hres_free(&r);
	close(hold);
	kill_wait(pid);
}

/*
 * A debug link names a file, not a build: a stale debug file next to the
 * program (here another build's, with je_ symbols where this one has none)
 * must not be taken, or heapctl would call whatever sits at its addresses.
 * Refused as a jemalloc without symbols, and the program is unharmed.
 */
static void test_stale_debuglink(void)
{
	static const char *const info[] = { "-v", "info", NULL };
	char dir[400], src[512], other[512], path[512], dbg[512], why[512];
	const char *argv[] = { path, "3", "4", "5", NULL };
	const char *cp1[] = { "cp", src, path, NULL }, *cp2[] = { "cp", other, dbg, NULL };
	struct victim v;
	struct hres r = { 0 };

	syms_path(src, sizeof(src), "fx_jemalloc_dbg");
	syms_path(other, sizeof(other), "fx_jemalloc_je");
	if (!have(src) || !have(other))
		return;
	snprintf(dir, sizeof(dir), "%s/stale", cfg.tmpdir);
	snprintf(path, sizeof(path), "%s/fx_jemalloc_dbg", dir);
	snprintf(dbg, sizeof(dbg), "%s/fx_jemalloc_dbg.debug", dir);
	mkdir(dir, 0755);
	run_prog(&r, cp1, 20);
	if (r.status != 0)
		t_fail("cp %s %s: %.200s", src, path, r.err);
	hres_free(&r);
	run_prog(&r, cp2, 20);
	if (r.status != 0)
		t_fail("cp %s %s: %.200s", other, dbg, r.err);
	hres_free(&r);
	if (t_failed())
		return;
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	if (run(&r, 1, &v, NULL, info) == 0 &&
	    (!strstr(r.err, "of another build") || !strstr(r.err, "hint:") ||
	     strstr(r.out, "allocator")))
		t_fail("a stale debug file is not refused: %.300s%.500s", r.out, r.err);
	hres_free(&r);
	if (!t_failed())
		victim_check(&v, 0);
	victim_kill(&v);
}

/* How many "PATH: N function symbols from" lines name an object ending in name. */
static int loads_of(const char *err, const char *name)
{
	int n = 0;

	for (const char *p = err; (p = strstr(p, name)); p++) {
		const char *eol = strchr(p, '\n'), *f = strstr(p, " function symbols from ");

		if (p[strlen(name)] == ':' && f && (!eol || f < eol))
			n++;
	}
	return n;
}

/*
 * A stripped program on glibc's malloc (Debian's bash, on a stripped
 * libc): no object of it shows an allocator of its own, so none has its
 * MiniDebugInfo decompressed or its debug files looked for, nor its
 * symbols read a second time to do so.  The fixture with MiniDebugInfo
 * shows the line this test looks for.
 */
static void test_glibc_no_lookup(void)
{
	static const char elsewhere[] = "looking for its symbols elsewhere";
	char why[256], spid[16], path[512];
	const char *mdi_argv[] = { path, "3", "4", "5", NULL };
	struct victim v;
	struct hres r = { 0 };
	int hold;
	pid_t pid;

	pid = glibc_idle(NULL, true, &hold, spid);
	if (pid < 0)
		return;
	hc_run(&r, NULL, "-vv", "info", "-p", spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0)
		t_fail("info on a stripped glibc program: %s", hres_desc(&r));
	else if (!strstr(r.out, "glibc"))
		t_fail("info on bash does not name glibc: %.300s", r.out);
	else if (strstr(r.err, elsewhere))
		t_fail("info on a glibc program looked for debug data: %.400s",
		       strstr(r.err, elsewhere));
	else if (loads_of(r.err, "/libc.so.6") != 1)
		t_fail("libc's symbols were read %d times, not once: %.600s",
		       loads_of(r.err, "/libc.so.6"), r.err);
	hres_free(&r);
	close(hold);
	kill_wait(pid);
	syms_path(path, sizeof(path), "fx_jemalloc_mdi");
	if (t_failed() || !have(path))
		return;
	if (syms_start(&v, mdi_argv, why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	hc_run(&r, NULL, "-vv", "info", "-p", v.spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0)
		t_fail("info on %s: %s", path, hres_desc(&r));
	else if (!strstr(r.err, elsewhere) || !strstr(r.out, ".gnu_debugdata"))
		t_fail("-vv info on %s does not say it looked elsewhere: %.600s", path, r.err);
	else if (loads_of(r.err, "/libc.so.6") != 1)
		t_fail("libc's symbols were read %d times next to a stripped jemalloc program",
		       loads_of(r.err, "/libc.so.6"));
	hres_free(&r);
	if (!t_failed())
		victim_check(&v, 0);
	victim_kill(&v);
}

/*
 * A process caught inside its dynamic loader (bash, held there by an
 * LD_AUDIT module, through pipes) has a libc mapped whose code cannot be called yet.
 * heapctl must not call it and must not name an allocator from half a
 * process: it waits for the loader, says so, and refuses clearly when
 * --timeout runs out or at SIGINT.  Let go while heapctl waits, it goes on
 * and succeeds.
 */
static void test_loader_wait(void)
{
	char hold_so[512], why[256], spid[16], err[4096] = "", c = 'g';
	const char *env[] = { hold_so, NULL };
	int go[2], ready[2], pass[2], hold = -1;
	struct spawn_opts so = { .out_fd = -1, .err_fd = -1, .setenv_kv = env, .pass_fds = pass,
				 .npass = 2 };
	struct hproc hp;
	struct hres r = { 0 };
	struct pollfd p;
	pid_t pid;

	syms_path(why, sizeof(why), "loader_hold.so");
	if (!have(why))
		return;
	snprintf(hold_so, sizeof(hold_so), "LD_AUDIT=%s", why);
	if (pipe2(go, O_CLOEXEC) || pipe2(ready, O_CLOEXEC)) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pass[0] = go[0];
	pass[1] = ready[1];
	pid = glibc_idle(&so, false, &hold, spid);
	close(go[0]);
	close(ready[1]);
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	if (pid < 0)
		goto out;
	if (poll(&p, 1, 20000) != 1 || read(ready[0], &c, 1) != 1) {
		t_fail("bash under LD_AUDIT did not reach its loader: no byte");
		goto out;
	}
	hc_run(&r, NULL, "--timeout", "0.3", "info", "-p", spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) == 0 || !strstr(r.err, "still loading its libraries") ||
	    !strstr(r.err, "hint: retry once the process has started"))
		t_fail("info on a process inside its loader: %s", hres_desc(&r));
	hres_free(&r);
	/* SIGINT while it waits: it stops at once, not at --timeout (30 s) */
	if (hc_startv(&hp, NULL, (const char *const[]){ "-v", "info", "-p", spid, NULL })) {
		t_fail("cannot start heapctl");
		goto out;
	}
	if (!hp_err_until(&hp, "waiting for its dynamic loader", err, sizeof(err), 20000))
		t_fail("no 'waiting for its dynamic loader' line at -v: %.300s", err);
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	/* the CLI's own "stopping on", or the library's "interrupted by" */
	if (!t_failed() && (hres_exit(&r) == 0 || r.ms > 10000 ||
			    !(strstr(r.err, "stopping on SIGINT; the target was left as it was") ||
			      strstr(r.err, "interrupted by SIGINT"))))
		t_fail("SIGINT while heapctl waits for the loader: %s, after %ld ms", hres_desc(&r),
		       r.ms);
	hres_free(&r);
	why[0] = 0;
	if (pid_exited(pid) || proc_check_tasks(pid, false, why, sizeof(why)) ||
	    !nr_in(proc_task_syscall(pid, pid), nrs_read)) {
		t_fail("the held process is no longer waiting in its loader: %s", why);
		goto out;
	}
	err[0] = '\0';
	if (hc_startv(&hp, NULL, (const char *const[]){ "-v", "info", "-p", spid, NULL })) {
		t_fail("cannot start heapctl");
		goto out;
	}
	if (!hp_err_until(&hp, "waiting for its dynamic loader", err, sizeof(err), 20000))
		t_fail("no 'waiting for its dynamic loader' line at -v: %.300s", err);
	if (write(go[1], &c, 1) != 1)
		t_fail("cannot let the loader go: %s", strerror(errno));
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0 || !strstr(r.out, "glibc")))
		t_fail("info once the loader was let go: %s", hres_desc(&r));
	hres_free(&r);
	why[0] = 0;
	/* then bash runs on, to its read of the line that never comes */
	if (!t_failed() && (proc_check_tasks(pid, false, why, sizeof(why)) ||
			    proc_wait_syscall(pid, pid, nrs_read, 5000, NULL)))
		t_fail("bash did not go on after heapctl: %s", why);
out:
	close(go[1]);
	close(ready[0]);
	if (hold >= 0)
		close(hold);
	if (pid > 0)
		kill_wait(pid);
}

/*
 * A debuginfod that never answers (a socket that listens and never
 * accepts) costs at most half of --timeout, then heapctl goes on.  The
 * bound is generous: without heapctl's own deadline libdebuginfod waits
 * DEBUGINFOD_TIMEOUT, 90 s by default.
 */
static void test_debuginfod_timeout(void)
{
	char path[512], why[512], url[64], cache[320];
	const char *argv[] = { path, "3", "4", "5", NULL };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct victim v;
	struct hres r = { 0 };
	int s;

	syms_path(path, sizeof(path), "fx_jemalloc_nodbg");
	if (!have(path))
		return;
	if (access(LIBDIR "libdebuginfod.so.1", R_OK)) {
		t_skip(true, "libdebuginfod.so.1 not installed (Debian package libdebuginfod1)");
		return;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16) ||
	    getsockname(s, (struct sockaddr *)&sa, &sl)) {
		t_fail("a listening loopback socket: %s", strerror(errno));
		if (s >= 0)
			close(s);
		return;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	snprintf(cache, sizeof(cache), "%s/dbgd-silent", cfg.tmpdir);
	if (syms_start(&v, argv, why, sizeof(why))) {
		t_fail("%s", why);
		close(s);
		return;
	}
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	hc_run(&r, NULL, "-v", "info", "-p", v.spid, "--timeout", "4", NULL);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	if (hres_crash(&r) || r.timed_out || (hres_exit(&r) != 0 && hres_exit(&r) != 1))
		t_fail("info against a silent debuginfod: %s", hres_desc(&r));
	else if (!strstr(r.err, "debuginfod: gave up"))
		t_fail("info did not give up on a silent debuginfod: %.400s", r.err);
	else if (r.ms > 15000)
		t_fail("info took %ld ms with --timeout 4 against a silent debuginfod", r.ms);
	hres_free(&r);
	if (!t_failed())
		victim_check(&v, 0);
	victim_kill(&v);
	if (!t_failed())
		stripped_glibc_asks_nothing(url, cache);
	close(s);
}

const struct itest t_syms_tests[] = {
	{ "syms-minidebuginfo", test_minidebuginfo, 0 },
	{ "syms-debug-file", test_debug_file, 0 },
	{ "syms-build-id", test_build_id, 0 },
	{ "syms-debuginfod", test_debuginfod, 0 },
	{ "syms-debuginfod-timeout", test_debuginfod_timeout, 0 },
	{ "syms-glibc-no-lookup", test_glibc_no_lookup, 0 },
	{ "loader-wait", test_loader_wait, 0 },
	{ "syms-stale-debuglink", test_stale_debuglink, 0 },
	{ NULL, NULL, 0 },
};
