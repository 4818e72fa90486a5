// SPDX-License-Identifier: MIT
/*
 * heapctl's injected sampler on processes started without a profiler:
 * glibc, jemalloc without prof:true, tcmalloc_minimal.  Each test checks
 * the profile against what the victim itself says it leaked, and that the
 * victim is unharmed (registers, syscalls, signals, fds) with its hooks in
 * and after they are taken out.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <unistd.h>

#include "harm.h"
#include "itest.h"

static double num(const char *json, const char *key)
{
	double d = -1;

	return json_get_num(json, key, &d) ? -1 : d;
}

/* "prof status --json" of v: the sampler's object as text, in out. */
static bool sampler_status(struct victim *v, char *out, size_t sz)
{
	struct hres r = { 0 };
	const char *val;
	size_t len;
	bool ok = false;

	if (hc_expect(&r, 0, "prof", "status", "-p", v->spid, "--json", NULL) == 0) {
		if (json_member(r.out, "sampler", &val, &len) || len + 1 > sz)
			t_fail("prof status --json has no sampler object: %.300s", r.out);
		else {
			memcpy(out, val, len);
			out[len] = '\0';
			ok = true;
		}
	}
	hres_free(&r);
	return ok;
}

/*
 * Dump, have the victim leak (cmd, bytes), dump again: the growth heapctl
 * reports from the two profiles must be within 20% of bytes and name site.
 */
static void growth(struct victim *v, const char *cmd, const char *want, double bytes, const char *site)
{
	char a[512], b[512], reply[256];
	struct hres r = { 0 };
	double got;

	snprintf(a, sizeof(a), "%s/smp-a.%s.heap", cfg.tmpdir, v->spid);
	snprintf(b, sizeof(b), "%s/smp-b.%s.heap", cfg.tmpdir, v->spid);
	if (hc_expect(&r, 0, "dump", "-p", v->spid, "-o", a, NULL))
		goto out;
	hres_free(&r);
	if (victim_expect(v, cmd, want, reply, sizeof(reply)))
		return;
	if (hc_expect(&r, 0, "dump", "-p", v->spid, "-o", b, NULL))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "report", b, "--base", a, "--json", "-p", v->spid, NULL))
		goto out;
	got = num(r.out, "bytes") - num(r.out, "base_bytes");
	t_note("growth: %.1f MiB sampled and un-biased, %.1f MiB leaked", got / 1048576, bytes / 1048576);
	if (got < 0.8 * bytes || got > 1.2 * bytes)
		t_fail("the profiles' growth is %.0f bytes; the victim leaked %.0f (more than 20%% apart)",
		       got, bytes);
	hres_free(&r);
	if (hc_expect(&r, 0, "report", b, "--base", a, "--format", "folded", "-p", v->spid, NULL))
		goto out;
	if (!strstr(r.out, site))
		t_fail("the growth's stacks do not name %s: %.400s", site, r.out);
out:
	hres_free(&r);
	remove(a);
	remove(b);
}

/* The live bytes of a dump of v, un-biased (report --json), or -1. */
static double dumped_bytes(struct victim *v, double *samples)
{
	char a[512];
	struct hres r = { 0 };
	double got = -1;

	snprintf(a, sizeof(a), "%s/smp-k.%s.heap", cfg.tmpdir, v->spid);
	if (hc_expect(&r, 0, "dump", "-p", v->spid, "-o", a, NULL) == 0) {
		hres_free(&r);
		if (hc_expect(&r, 0, "report", a, "--json", "-p", v->spid, NULL) == 0) {
			got = num(r.out, "bytes");
			*samples = num(r.out, "samples");
		}
	}
	hres_free(&r);
	remove(a);
	return got;
}

/*
 * After prof off: a dump still holds what grew while sampling; once the
 * victim frees it, the hooks (still in) saw the frees and the dump holds
 * none of it; prof status counts the samples kept.
 */
static void kept_after_off(struct victim *v, double bytes)
{
	char reply[128];
	double k = 0, got = dumped_bytes(v, &k);

	if (got < 0.8 * bytes)
		t_fail("a dump after prof off holds %.0f bytes in %.0f samples; the victim grew "
		       "%.0f while sampling", got, k, bytes);
	if (victim_expect(v, "free", "free ok", reply, sizeof(reply)))
		return;
	got = dumped_bytes(v, &k);
	if (got < 0 || got > 0.2 * bytes)
		t_fail("the victim freed the %.0f bytes it grew after prof off, but a dump still "
		       "holds %.0f bytes (%.0f samples): the frees were not seen", bytes, got, k);
}

/* The name the kernel gives the sampler's mappings, and the loader the sampler. */
#define SAMPLER_LOADED "/memfd:heapctl-sampler (deleted)"

/*
 * How the victim's loader names the sampler: as /proc/PID/maps does, and
 * never by the /proc/self/fd/N it was loaded through.  gdb, reading that
 * name from the link map, opened it in its own process, found a pipe of its
 * own and waited on it for ever, with the process stopped under it; and a
 * later dlopen() of that path would have been given the sampler.
 */
static void loader_names(struct victim *v, const char *name)
{
	char cmd[128], reply[256];

	snprintf(cmd, sizeof(cmd), "dlnames %s", name);
	if (victim_expect(v, cmd, "dlnames", reply, sizeof(reply)))
		return;
	if (kv_long(reply, "fdpaths", -1) != 0 || kv_long(reply, "named", -1) != 1 ||
	    kv_long(reply, "stale", -1) != 0)
		t_fail("the loader's names for the sampler: %s (want fdpaths=0: no /proc/self/fd "
		       "path, named=1: one object named %s, stale=0: no closed fd's path "
		       "answered by dlopen)", reply, name);
}

/*
 * prof on loads the sampler and says so; the growth is right; prof off
 * stops sampling and keeps what was sampled, its hooks in to see the frees:
 * a dump still holds the growth, and loses it once the victim frees it;
 * prof reset takes every hook out; prof on again reuses the loaded
 * sampler.  The victim is checked with the sampler in and out.
 */
static void sampler_cycle(struct victim *v, const char *cmd, const char *want, double bytes,
			  const char *site)
{
	struct hres r = { 0 };
	char st[2048];

	if (hc_expect(&r, 0, "prof", "on", "-p", v->spid, "--sample-bytes", "128K", NULL))
		goto out;
	if (!strstr(r.out, "heapctl's sampler") || !strstr(r.out, "128.0 KiB") ||
	    !strstr(r.out, "loaded into the process now") || !strstr(r.out, "not seen"))
		t_fail("prof on: does not say it loaded heapctl's sampler, its interval, and what "
		       "it cannot see: %.500s", r.out);
	/* libgcc_s, which the load brings in, by its name like the rest */
	if (strstr(r.out, "  ?\n"))
		t_fail("prof on: an object it hooked has no name: %.500s", r.out);
	hres_free(&r);
	/* the sampler stays loaded by design: its mappings are the new normal */
	victim_baseline(v);
	loader_names(v, SAMPLER_LOADED);
	if (!sampler_status(v, st, sizeof(st)))
		goto out;
	if (num(st, "hooks") < 1 || num(st, "interval") != 131072 || !strstr(st, "\"enabled\":true"))
		t_fail("prof status: the sampler should be on with hooks: %s", st);
	growth(v, cmd, want, bytes, site);
	victim_check(v, 0);
	if (t_failed())
		goto out;
	if (hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL))
		goto out;
	/* the sampler went off, whatever profiler the allocator has, and kept its samples */
	if (!strstr(r.out, "heapctl's sampler: sampling -> off, samples kept") ||
	    strstr(r.out, "prof.active") || !strstr(r.out, "prof reset"))
		t_fail("prof off: does not say the sampler went off with its samples kept: %.400s",
		       r.out);
	hres_free(&r);
	if (sampler_status(v, st, sizeof(st)) &&
	    (num(st, "hooks") < 1 || !strstr(st, "\"enabled\":false") || !strstr(st, "\"kept\":true")))
		t_fail("prof off: the hooks should stay, the samples kept: %s", st);
	kept_after_off(v, bytes);
	if (hc_expect(&r, 0, "prof", "reset", "-p", v->spid, NULL))
		goto out;
	if (!strstr(r.out, "samples discarded, hooks removed"))
		t_fail("prof reset: does not say the hooks went: %.300s", r.out);
	hres_free(&r);
	if (sampler_status(v, st, sizeof(st)) &&
	    (num(st, "hooks") != 0 || num(st, "hooks_lost") != 0 || !strstr(st, "\"kept\":false")))
		t_fail("prof reset: every hook should be out: %s", st);
	if (!hc_expect(&r, 1, "dump", "-p", v->spid, "-o", "/dev/null", NULL) &&
	    (!strstr(r.err, "is off") || !strstr(r.err, "hint: run 'heapctl prof on'")))
		t_fail("dump with the sampler reset: %.300s", r.err);
	hres_free(&r);
	victim_check(v, 0);
	if (hc_expect(&r, 0, "prof", "on", "-p", v->spid, NULL))
		goto out;
	if (strstr(r.out, "loaded into the process now"))
		t_fail("prof on after off loaded a second sampler: %.300s", r.out);
	hres_free(&r);
	/* a bare prof on means the default interval, not the 128 KiB of before */
	if (sampler_status(v, st, sizeof(st)) &&
	    (num(st, "hooks") < 1 || num(st, "interval") != 524288))
		t_fail("prof on again: no hooks, or not the default interval: %s", st);
	if (hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL) == 0)
		victim_check(v, 0);
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "reset", "-p", v->spid, NULL) == 0)
		victim_check(v, 0);
out:
	hres_free(&r);
}

/* sampler_cycle() on victim name started with env (or NULL); a missing fixture is skipped. */
static void cycle_on(const char *name, const char *env, bool fixture, const char *cmd, const char *want,
		     double bytes, const char *site)
{
	struct victim v;

	/* no MALLOC_CONF=prof:true: jemalloc's own profiler cannot run */
	if (!victim_up(&v, name, NULL, env, fixture))
		return;
	sampler_cycle(&v, cmd, want, bytes, site);
	victim_stop(&v);
}

static void test_glibc(void)
{
	cycle_on("alloc_victim", NULL, false, "grow 1024", "grow ok", 1024.0 * 65536, "victim_grow_site");
}

static void test_jemalloc(void)
{
	cycle_on("jemalloc_victim", NULL, false, "leak 67108864", "leak ok", 67108864.0, "cmd_leak");
}

static void test_tcmalloc_minimal(void)
{
	if (access(LIBDIR "libtcmalloc_minimal.so.4", R_OK)) {
		t_skip(true, "%s missing", LIBDIR "libtcmalloc_minimal.so.4");
		return;
	}
	cycle_on("alloc_victim", "LD_PRELOAD=" LIBDIR "libtcmalloc_minimal.so.4", false, "grow 1024",
		 "grow ok", 1024.0 * 65536, "victim_grow_site");
}

/*
 * heapctl leak on v, which runs cmd (growing by about bytes through site)
 * once the wait has begun; SIGINT ends the wait.  The growth is within 20%
 * of bytes and names site; profiling is off again after, as it was.
 */
static void leak_named(struct victim *v, const char *cmd, const char *want, double bytes,
		       const char *site)
{
	char out[512], err[4096] = "", reply[256], st[2048];
	const char *args[] = { "leak", "-p", v->spid, "--for", "1h", "--sample-bytes", "64K",
			       "-o", out, "--json", NULL };
	struct hproc hp;
	struct hres r = { 0 };
	char *folded;
	double got;

	snprintf(out, sizeof(out), "%s/leak.%s.folded", cfg.tmpdir, v->spid);
	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl leak");
		return;
	}
	if (!hp_err_until(&hp, "measuring growth", err, sizeof(err), HC_TIMEOUT_S * 1000L)) {
		kill(hp.pid, SIGKILL);
		hc_finish(&hp, &r, HC_TIMEOUT_S);
		t_fail("leak never said that the wait began: %.300s%.300s", err, r.err);
		goto out;
	}
	victim_expect(v, cmd, want, reply, sizeof(reply));
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, HC_TIMEOUT_S);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("leak: %s", hres_desc(&r));
		goto out;
	}
	got = num(r.out, "change");
	t_note("leak: grew %.1f MiB, the victim leaked %.1f MiB", got / 1048576, bytes / 1048576);
	if (got < 0.8 * bytes || got > 1.2 * bytes)
		t_fail("leak: the growth is %.0f bytes; the victim leaked %.0f (more than 20%% apart)",
		       got, bytes);
	else if (!strstr(r.out, site))
		t_fail("leak --json: the top functions do not name %s: %.400s", site, r.out);
	/* the samples behind it, and a 95% range around the rate */
	{
		const char *rg = strstr(r.out, "\"per_second_range\":[");
		double lo = -1, hi = -1, rate = num(r.out, "per_second");

		if (!rg || sscanf(rg, "\"per_second_range\":[%lf,%lf]", &lo, &hi) != 2 ||
		    num(r.out, "grew_samples") < 10 || !strstr(r.out, "\"reliable\":true") ||
		    !(lo <= rate && rate <= hi) || hi > 2 * lo)
			t_fail("leak --json: %.0f samples grew, rate %.0f, range [%.0f, %.0f] "
			       "(want at least 10 samples, reliable, a range around the rate "
			       "no wider than 2x): %.300s", num(r.out, "grew_samples"), rate, lo,
			       hi, r.out);
	}
	folded = read_file_str(out);
	if (!folded || !strstr(folded, site))
		t_fail("leak -o %s: the stacks do not name %s: %.300s", out, site,
		       folded ? folded : "(none)");
	free(folded);
	if (!t_failed() && sampler_status(v, st, sizeof(st)) && !strstr(st, "\"enabled\":false"))
		t_fail("after leak the sampler should be off again, as it was found: %s", st);
out:
	hres_free(&r);
	remove(out);
}

/*
 * mimalloc (LD_PRELOAD=libmimalloc.so.2) has no profiler of its own: prof on
 * loads heapctl's sampler, which sees the growth and names it, and so does
 * leak.
 */
static void test_mimalloc(void)
{
	struct victim v;

	if (!mimalloc_up(&v, false, NULL))
		return;
	sampler_cycle(&v, "grow 1024", "grow ok", 1024.0 * 65536, "victim_grow_site");
	if (!t_failed())
		leak_named(&v, "grow 512", "grow ok", 512.0 * 65536, "victim_grow_site");
	if (!t_failed())
		victim_check(&v, 0);
	victim_stop(&v);
}

/*
 * gdb attached after prof on reads the sampler's name from the link map:
 * it must finish, name the sampler as /proc/PID/maps does, and leave the
 * victim running.  While that name was the /proc/self/fd/N the sampler was
 * loaded through, gdb opened that path in its own process, found one of its
 * own pipes there and waited on it for ever, the victim stopped under it.
 */
static void test_gdb_after(void)
{
	char gdb[PATH_MAX], reply[64];
	struct hres r = { 0 };
	struct victim v;

	if (!find_in_path("gdb", gdb, sizeof(gdb))) {
		t_skip(true, "gdb is not installed");
		return;
	}
	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out;
	hres_free(&r);
	run_prog(&r, (const char *const[]){ gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off",
					    "-p", v.spid, "-ex", "info sharedlibrary", NULL }, 60);
	if (r.timed_out)
		t_fail("gdb -p %s did not finish in 60 s after prof on (killed): %.300s", v.spid, r.out);
	else if (hres_exit(&r) != 0 || !strstr(r.out, SAMPLER_LOADED))
		t_fail("gdb -p %s after prof on: %s, and its list of libraries does not name "
		       SAMPLER_LOADED ": %.400s %.300s", v.spid, hres_desc(&r), r.out, r.err);
	hres_free(&r);
	if (victim_expect(&v, "ping", "pong", reply, sizeof(reply)) == 0 &&
	    hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL) == 0)
		loader_names(&v, SAMPLER_LOADED);
out:
	hres_free(&r);
	victim_stop(&v);
}

/*
 * A sampler loaded the way heapctls loaded it before they renamed it, by
 * its /proc/self/fd path, the fd closed after (the victim loads heapctl's
 * own sampler so): the next heapctl that finds it renames it, by writing
 * memory alone, and uses it.
 */
static void test_stale_name(void)
{
	char so[PATH_MAX], cmd[PATH_MAX + 16], reply[256];
	const char *slash = strrchr(cfg.heapctl, '/');
	struct hres r = { 0 };
	struct victim v;

	snprintf(so, sizeof(so), "%.*s/sampler/heapctl-sampler.so", (int)(slash - cfg.heapctl),
		 cfg.heapctl);
	if (access(so, R_OK)) {
		t_skip(false, "%s is missing", so);
		return;
	}
	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	snprintf(cmd, sizeof(cmd), "fdload %s", so);
	if (victim_expect(&v, cmd, "fdload ok", reply, sizeof(reply)) ||
	    victim_expect(&v, "dlnames /memfd:heapctl", "dlnames", reply, sizeof(reply)))
		goto out;
	if (kv_long(reply, "fdpaths", -1) != 1 || kv_long(reply, "stale", -1) != 1) {
		t_fail("the victim's own load did not leave the name to repair: %s", reply);
		goto out;
	}
	victim_baseline(&v);
	if (hc_expect(&r, 0, "prof", "status", "-p", v.spid, NULL))
		goto out;
	hres_free(&r);
	loader_names(&v, "/memfd:heapctl");
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out;
	if (strstr(r.out, "loaded into the process now") || !strstr(r.out, "off -> sampling"))
		t_fail("prof on did not take the sampler already loaded: %.300s", r.out);
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL) == 0)
		victim_check(&v, 0);
out:
	hres_free(&r);
	victim_stop(&v);
}

/*
 * jemalloc linked into the executable with the _rjem_ prefix (a Rust
 * program's tikv-jemallocator), started without prof:true: no GOT slot
 * leads to it, so the sampler goes in through jemalloc's own
 * experimental.hooks.install, and comes out through .remove.
 */
static void test_rjem(void)
{
	cycle_on("fx_jemalloc_rjem", NULL, true, "leak 67108864", "leak ok", 67108864.0, "cmd_leak");
}

/*
 * A process under MemoryDenyWriteExecute (the kernel's PR_SET_MDWE, as
 * systemd's MemoryDenyWriteExecute= asks of a service): the sampler's
 * code comes from a file mapping, never from writable memory made
 * executable, so loading it works there too.
 */
static void test_mdwe(void)
{
	char reply[256];
	struct victim v;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	if (victim_cmd(&v, "mdwe", reply, sizeof(reply), 5000) || strncmp(reply, "mdwe ok", 7)) {
		t_skip(false, "this kernel has no PR_SET_MDWE (Linux 6.3): %s", reply);
		victim_stop(&v);
		return;
	}
	victim_baseline(&v);
	sampler_cycle(&v, "grow 1024", "grow ok", 1024.0 * 65536, "victim_grow_site");
	victim_stop(&v);
}

/*
 * fork() after prof on: the child inherits the hooks but never samples
 * (the sampler's fork handler), and still allocates; an exec leaves
 * nothing of the sampler.
 */
static void test_fork_exec(void)
{
	char reply[256], pid[16], st[2048];
	struct hres r = { 0 };
	struct victim v;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out;
	hres_free(&r);
	victim_baseline(&v);
	if (victim_expect(&v, "fork", "fork ok", reply, sizeof(reply)))
		goto out;
	snprintf(pid, sizeof(pid), "%s", strstr(reply, "pid=") + 4);
	if (hc_expect(&r, 0, "prof", "status", "-p", pid, "--json", NULL))
		goto out;
	if (!strstr(r.out, "\"installed\":true") || strstr(r.out, "\"enabled\":true,\"interval"))
		t_fail("a fork()ed child samples, or has no sampler: %.400s", r.out);
	hres_free(&r);
	if (victim_expect(&v, "forkexec", "forkexec ok", reply, sizeof(reply)))
		goto out;
	snprintf(pid, sizeof(pid), "%s", strstr(reply, "pid=") + 4);
	/* wait until it is sleep, then look: the new image has nothing of the sampler */
	if (!wait_exec((pid_t)atoi(pid), "/bin/sleep", 5000) &&
	    !wait_exec((pid_t)atoi(pid), "/usr/bin/sleep", 100))
		t_note("the exec'ed child did not become sleep in time");
	if (hc_expect(&r, 0, "maps", "-p", pid, NULL) == 0 && strstr(r.out, "heapctl-sampler"))
		t_fail("after exec the child still maps heapctl's sampler");
	hres_free(&r);
	if (victim_expect(&v, "reap", "reap ok status=0", reply, sizeof(reply)))
		goto out;
	if (sampler_status(&v, st, sizeof(st)) && !strstr(st, "\"enabled\":true"))
		t_fail("the parent's sampler stopped with the fork: %s", st);
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
out:
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);
}

/* A statically linked allocator has no GOT slot to hook: a clear refusal, nothing loaded. */
/*
 * A static binary with jemalloc linked in, started without profiling: the
 * freestanding sampler, mapped by heapctl, goes in through jemalloc's own
 * hooks, with the executable's unwind table heapctl made (it has no
 * .eh_frame_hdr); the growth is right and named; prof reset takes it out.
 */
static void test_static_jemalloc(void)
{
	struct hres r = { 0 };
	struct victim v;

	if (!victim_up(&v, "fx_jemalloc_static", NULL, NULL, true))
		return;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sampler", "inject", "--sample-bytes", "128K",
		      NULL))
		goto out;
	if (!strstr(r.out, "heapctl's sampler") || !strstr(r.out, "jemalloc's hooks"))
		t_fail("prof on --sampler inject, static jemalloc: %.400s", r.out);
	hres_free(&r);
	victim_baseline(&v);
	growth(&v, "leak 67108864", "leak ok", 67108864.0, "cmd_leak");
	if (!t_failed() && !hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL)) {
		hres_free(&r);
		if (!hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL) &&
		    !strstr(r.out, "hooks removed"))
			t_fail("prof reset: %.300s", r.out);
	}
	hres_free(&r);
	victim_check(&v, 0);
out:
	hres_free(&r);
	victim_stop(&v);
}

/*
 * Threads hammering malloc/free/realloc with signals while the sampler is
 * loaded, dumped from and taken out, many times: the hammers go on, the
 * registers hold, nothing is lost.
 */
static void test_hammer(void)
{
	char reply[512], out[512], why[768], *fds0;
	struct hres r = { 0 };
	struct victim v;

	if (!victim_up(&v, "glibc_torture", NULL, NULL, false))
		return;
	/* the hammers make glibc arenas as they go: the maps are theirs to change; the fds are not */
	fds0 = proc_fd_set(v.pid);
	snprintf(out, sizeof(out), "%s/smp-h.%s.heap", cfg.tmpdir, v.spid);
	for (int i = 0; i < 8 && !t_failed(); i++) {
		hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", i & 1 ? "4K" : "64K", NULL);
		hres_free(&r);
		hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL);
		hres_free(&r);
		hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
		hres_free(&r);
		if (victim_expect(&v, "check", "check ok", reply, sizeof(reply)))
			break;
	}
	remove(out);
	if (!fds0 || fds_settle(v.pid, fds0, 2000, why, sizeof(why)))
		t_fail("the victim's fds: %s", fds0 ? why : "unreadable before");
	free(fds0);
	victim_check(&v, VC_NO_PROC);
	victim_stop(&v);
}

/* "hammered": the hammers' operations so far and the blocks found corrupt. */
static bool hammered(struct victim *v, unsigned long *ops, unsigned long *bad)
{
	char reply[256];

	return victim_expect(v, "hammered", "hammered", reply, sizeof(reply)) == 0 &&
	       sscanf(reply, "hammered ops=%lu bad=%lu", ops, bad) == 2;
}

/*
 * 16 threads hammering malloc, calloc, realloc, posix_memalign and free,
 * each block checked for its pattern, through ten rounds of loading (once),
 * sampling at 4 KiB or 64 KiB, dumping and removal: no block corrupt or
 * lost, the hammers never stall, the sampler's counts hold together.
 */
static void test_threads(void)
{
	char reply[256], out[512], st[2048], why[768], *fds0;
	unsigned long ops0 = 0, ops, bad = 0;
	struct hres r = { 0 };
	struct victim v;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	fds0 = proc_fd_set(v.pid);
	if (victim_expect(&v, "hammer 16", "hammer ok", reply, sizeof(reply)))
		goto out;
	snprintf(out, sizeof(out), "%s/smp-t.%s.heap", cfg.tmpdir, v.spid);
	for (int i = 0; i < 10 && !t_failed(); i++) {
		if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", i & 1 ? "64K" : "4K",
			      NULL))
			break;
		hres_free(&r);
		if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", out, NULL))
			break;
		hres_free(&r);
		if (sampler_status(&v, st, sizeof(st)) &&
		    (num(st, "live_samples") > num(st, "samples") || num(st, "samples") < 1))
			t_fail("round %d: the sampler's counts do not hold together: %s", i, st);
		if (hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))
			break;
		hres_free(&r);
		if (!hammered(&v, &ops, &bad))
			break;
		if (bad)
			t_fail("round %d: %lu blocks lost their pattern", i, bad);
		if (ops <= ops0)
			t_fail("round %d: the hammers made no progress (%lu ops)", i, ops);
		ops0 = ops;
	}
	hres_free(&r);
	remove(out);
	if (!t_failed())
		t_note("16 hammers, %lu operations through 10 rounds, no block corrupt", ops0);
out:
	if (!fds0 || fds_settle(v.pid, fds0, 2000, why, sizeof(why)))
		t_fail("the victim's fds: %s", fds0 ? why : "unreadable before");
	free(fds0);
	victim_check(&v, VC_NO_PROC);
	victim_stop(&v);
}

/*
 * A library dlopen()ed after prof on: its GOT slot for malloc is hooked at
 * the next heapctl call on the process (here prof status), and from then
 * on its allocations are in the profile.
 */
static void late_library(const char *lib, const char *env)
{
	char reply[512], cmd[400], a[400], b[400], st[2048];
	struct hres r = { 0 };
	struct victim v;
	double hooks0;

	if (!victim_up(&v, "alloc_victim", NULL, env, false))
		return;
	snprintf(a, sizeof(a), "%s/smp-late-a.heap", cfg.tmpdir);
	snprintf(b, sizeof(b), "%s/smp-late-b.heap", cfg.tmpdir);
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", "128K", NULL))
		goto out;
	hres_free(&r);
	if (!sampler_status(&v, st, sizeof(st)))
		goto out;
	hooks0 = num(st, "hooks");
	snprintf(cmd, sizeof(cmd), "dlopen %s/%s", cfg.victim_dir, lib);
	if (victim_expect(&v, cmd, "dlopen ok", reply, sizeof(reply)))
		goto out;
	/* the next call: prof status hooks the new library */
	if (!sampler_status(&v, st, sizeof(st)))
		goto out;
	if (num(st, "hooks") <= hooks0 || !strstr(st, lib))
		t_fail("prof status after a dlopen did not hook the new library (%.0f hooks before): %s",
		       hooks0, st);
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", a, NULL))
		goto out;
	hres_free(&r);
	if (victim_expect(&v, "grow 512 late", "grow ok", reply, sizeof(reply)))
		goto out;
	if (hc_expect(&r, 0, "dump", "-p", v.spid, "-o", b, NULL))
		goto out;
	hres_free(&r);
	if (!hc_expect(&r, 0, "report", b, "--base", a, "--format", "folded", "-p", v.spid, NULL) &&
	    !strstr(r.out, "late_grow_site"))
		t_fail("the growth through the late library is not in the profile: %.300s", r.out);
	hres_free(&r);
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
	hres_free(&r);
	hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL);
	if (sampler_status(&v, st, sizeof(st)) && num(st, "hooks") != 0)
		t_fail("prof off and reset left hooks: %s", st);
out:
	hres_free(&r);
	remove(a);
	remove(b);
	victim_check(&v, VC_NO_PROC);
	victim_stop(&v);
}

static void test_dlopen_later(void)
{
	late_library("late_alloc.so", NULL);
}

/*
 * C++'s operator new[] under tcmalloc_minimal: tcmalloc defines it with
 * its own fast path, which never calls malloc, so the sampler hooks the
 * operator itself where the allocator's object defines it.
 */
static void test_cxx_new(void)
{
	if (access(LIBDIR "libtcmalloc_minimal.so.4", R_OK)) {
		t_skip(true, "%s missing", LIBDIR "libtcmalloc_minimal.so.4");
		return;
	}
	late_library("cxx_new.so", "LD_PRELOAD=" LIBDIR "libtcmalloc_minimal.so.4");
}

/*
 * Debian's MariaDB (glibc malloc, no profiler), started as it ships, under
 * a load that creates and fills tables: prof on loads the sampler, leak
 * names the server's own frames for what grew (the table cache), and the
 * server answers and keeps every row.
 */
static void test_mariadb(void)
{
	char server[256], client[256], installdb[256], dir[300], sock[340], datadir[340];
	char sql[400], svg[400], arg[512], why[256], *log;
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	struct hres r = { 0 };
	pid_t pid = -1, load = -1;
	FILE *f;

	if (!find_in_path("mariadbd", server, sizeof(server)) &&
	    access(strcpy(server, "/usr/sbin/mariadbd"), X_OK)) {
		t_skip(true, "mariadbd not installed (mariadb-server)");
		return;
	}
	if (!find_in_path("mariadb", client, sizeof(client)) ||
	    !find_in_path("mariadb-install-db", installdb, sizeof(installdb))) {
		t_skip(true, "mariadb or mariadb-install-db not installed (mariadb-client, mariadb-server)");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/mariadb", cfg.tmpdir);
	snprintf(datadir, sizeof(datadir), "%s/data", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	mkdir(dir, 0755);
	snprintf(arg, sizeof(arg), "--datadir=%s", datadir);
	{
		const char *argv[] = { installdb, "--no-defaults", arg, "--user=root", "--skip-test-db",
				       "--auth-root-authentication-method=normal", NULL };

		run_prog(&r, argv, 120);
		if (hres_exit(&r) != 0) {
			t_fail("mariadb-install-db: %s %.300s", hres_desc(&r), r.err);
			goto out;
		}
		hres_free(&r);
	}
	{
		char s_arg[400], l_arg[400];
		const char *argv[] = { server, "--no-defaults", arg, s_arg, "--skip-networking",
				       "--user=root", "--skip-grant-tables", l_arg,
				       "--innodb-buffer-pool-size=16M", "--table-open-cache=4000", NULL };

		snprintf(s_arg, sizeof(s_arg), "--socket=%s", sock);
		snprintf(l_arg, sizeof(l_arg), "--log-error=%s/err.log", dir);
		o.cwd = dir;
		pid = spawn(argv, &o, why, sizeof(why));
		if (pid < 0) {
			t_fail("mariadbd: %s", why);
			goto out;
		}
	}
	for (int i = 0; i < 300 && access(sock, F_OK); i++)
		sleep_ms(100);
	snprintf(arg, sizeof(arg), "--socket=%s", sock);
	{
		const char *argv[] = { client, "--no-defaults", arg, "-e", "CREATE DATABASE t", NULL };

		for (int i = 0; i < 50; i++) {
			hres_free(&r);
			run_prog(&r, argv, 20);
			if (hres_exit(&r) == 0)
				break;
			sleep_ms(100);
		}
		if (hres_exit(&r) != 0) {
			snprintf(sql, sizeof(sql), "%s/err.log", dir);
			log = read_file_str(sql);
			t_fail("mariadbd does not answer: %s %.200s; its log: %.300s", hres_desc(&r), r.err,
			       log ? log : "");
			free(log);
			goto out;
		}
		hres_free(&r);
	}
	/* the load: 300 tables created and filled, over and over */
	snprintf(sql, sizeof(sql), "%s/load.sql", dir);
	f = fopen(sql, "w");
	if (!f) {
		t_fail("cannot write %s", sql);
		goto out;
	}
	for (int i = 0; i < 300; i++)
		fprintf(f, "CREATE TABLE IF NOT EXISTS t.a%d (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(200));\n"
			   "INSERT INTO t.a%d (v) VALUES (REPEAT('x', 200)), (REPEAT('y', 200));\n", i, i);
	fclose(f);
	{
		char script[2048];
		const char *argv[] = { "/bin/sh", "-c", script, NULL };

		snprintf(script, sizeof(script), "for i in 1 2 3 4 5 6 7 8 9 10; do %s --no-defaults %s "
			 "< %s || exit 1; done", client, arg, sql);
		load = spawn(argv, &o, why, sizeof(why));
	}
	if (hc_expect(&r, 0, "prof", "on", "-p", (snprintf(why, sizeof(why), "%d", (int)pid), why),
		      NULL))
		goto out;
	if (!strstr(r.out, "heapctl's sampler"))
		t_fail("prof on, mariadbd: %.300s", r.out);
	hres_free(&r);
	snprintf(svg, sizeof(svg), "%s/leak.folded", dir);
	if (hc_expect(&r, 0, "leak", "-p", why, "--for", "3", "-o", svg, NULL))
		goto out;
	if (!strstr(r.out, "dispatch_command") && !strstr(r.out, "mysql_"))
		t_fail("leak on mariadbd names neither dispatch_command nor mysql_*: %.600s", r.out);
	hres_free(&r);
	hc_expect(&r, 0, "prof", "off", "-p", why, NULL);
	hres_free(&r);
	if (wait_pid(load, NULL, 120000) == 0)
		load = -1;
	{
		const char *argv[] = { client, "--no-defaults", arg, "-N", "-e",
				       "SELECT COUNT(*) FROM t.a299", NULL };

		run_prog(&r, argv, 20);
		if (hres_exit(&r) != 0 || atoi(r.out) != 20)
			t_fail("mariadbd after heapctl: t.a299 has %.20s rows, want 20 (%s)", r.out,
			       hres_desc(&r));
	}
out:
	hres_free(&r);
	if (load > 0)
		kill_wait(load);
	if (pid > 0) {
		kill(pid, SIGTERM);
		if (wait_pid(pid, NULL, 30000))
			kill_wait(pid);
	}
}

/* Lines of stderr a full "heapctl -vvv ARGS -p PID" prints. */
static long lines_of(struct victim *v, const char *a1, const char *a2)
{
	struct hres r = { 0 };
	long n = 0;

	hc_run(&r, NULL, "-vvv", a1, a2, "-p", v->spid, NULL);
	if (hres_exit(&r) == 0)
		n = count_str(r.err, "\n");
	else
		t_fail("%s %s: %s %.300s", a1, a2, hres_desc(&r), r.err);
	hres_free(&r);
	return n;
}

/*
 * The worker of a heapctl started as front (src/cli/keeper.c): the tracer,
 * a child of the front's; 0 if there is none (yet).
 */
static pid_t worker_of(pid_t front)
{
	struct dirent *d;
	pid_t w = 0;
	DIR *dp = opendir("/proc");

	while (dp && !w && (d = readdir(dp))) {
		char path[300], *st, *rp;
		int ppid;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		st = read_file_str(path);
		rp = st ? strrchr(st, ')') : NULL;
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == (int)front)
			w = (pid_t)atoi(d->d_name);
		free(st);
	}
	if (dp)
		closedir(dp);
	return w;
}

/*
 * SIGKILL heapctl: the front, which its worker takes as a request to stop
 * after the step it is on, or (tracer) the worker first, the tracer
 * itself, wherever it is.
 */
static void kill_heapctl(struct hproc *hp, pid_t worker)
{
	if (worker > 0)
		kill(worker, SIGKILL);
	kill(hp->pid, SIGKILL);
}

/* Runs "heapctl -vvv A1 A2 -p PID" and SIGKILLs it (tracer: its worker too) right after its line'th line of stderr. */
static void kill_at_line(struct victim *v, const char *a1, const char *a2, long line, bool tracer)
{
	const char *args[] = { "-vvv", a1, a2, "-p", v->spid, NULL };
	struct hproc hp;
	struct hres r = { 0 };
	pid_t worker = 0;
	long seen = 0;
	char c;

	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	while (seen < line && read(hp.err, &c, 1) == 1) {
		seen += c == '\n';
		/* the worker prints: it is there by the first byte */
		if (tracer && !worker)
			worker = worker_of(hp.pid);
	}
	kill_heapctl(&hp, worker);
	hc_finish(&hp, &r, 10);
	hres_free(&r);
}

/*
 * Runs "heapctl A1 A2 -p PID" and SIGKILLs it after us microseconds (or
 * when it ends); tracer: its worker too, us after the worker is there.
 */
static void kill_after_us(struct victim *v, const char *a1, const char *a2, long us, bool tracer)
{
	const char *args[] = { a1, a2, "-p", v->spid, NULL };
	struct hproc hp;
	struct hres r = { 0 };
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	long end = now_ms() + 2000;
	pid_t worker = 0;

	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	while (tracer && !(worker = worker_of(hp.pid)) && now_ms() < end)
		;
	nanosleep(&ts, NULL);
	kill_heapctl(&hp, worker);
	hc_finish(&hp, &r, 10);
	hres_free(&r);
}

/*
 * Runs "heapctl -vvv A1 A2 -p PID" and SIGKILLs it (tracer: its worker
 * too) us microseconds after the first line of its stderr that holds
 * needle (or when it ends).
 */
static void kill_after_text(struct victim *v, const char *a1, const char *a2, const char *needle,
			    long us, bool tracer)
{
	const char *args[] = { "-vvv", a1, a2, "-p", v->spid, NULL };
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	struct hproc hp;
	struct hres r = { 0 };
	char buf[8192];
	size_t n = 0, keep = strlen(needle);
	pid_t worker = 0;
	ssize_t got;

	if (hc_startv(&hp, NULL, args)) {
		t_fail("cannot start heapctl");
		return;
	}
	/* whole reads, not a byte at a time: the kill lags the line as little as can be */
	while ((got = read(hp.err, buf + n, sizeof(buf) - 1 - n)) > 0) {
		if (tracer && !worker)
			worker = worker_of(hp.pid);
		n += (size_t)got;
		buf[n] = '\0';
		if (strstr(buf, needle)) {
			if (us)
				nanosleep(&ts, NULL);
			break;
		}
		if (n > keep) {
			memmove(buf, buf + n - keep, keep);
			n = keep;
		}
	}
	kill_heapctl(&hp, worker);
	hc_finish(&hp, &r, 10);
	hres_free(&r);
}

/*
 * fds of pid that are a memfd of heapctl's (the sampler, the hooks'
 * trampolines, unwind tables): what a kill inside the load leaves.
 */
static int memfds_left(pid_t pid)
{
	char dir[64], path[320], link[256];
	struct dirent *d;
	int n = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	dp = opendir(dir);
	while (dp && (d = readdir(dp))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0 && (link[len] = '\0', strstr(link, "memfd:heapctl-")))
			n++;
	}
	if (dp)
		closedir(dp);
	return n;
}

/*
 * After a kill: the victim runs untraced, not stopped, its threads take
 * their wake-ups, it allocates (through hooks or not), and heapctl can
 * finish the job: prof on, a dump that names the growth, prof off.
 */
/* Within a second of a kill: untraced, not stopped and alive (or the test fails). */
static bool alive_after_kill(struct victim *v, const char *what, long at)
{
	char why[512];
	long end = now_ms() + 1000;
	int rc;

	while ((rc = proc_check_tasks(v->pid, false, why, sizeof(why))) && now_ms() < end)
		sleep_ms(2);
	if (rc || !victim_alive(v)) {
		t_fail("%s %ld: target harmed: %s", what, at, rc ? why : "died");
		return false;
	}
	return true;
}

static void after_kill(struct victim *v, const char *what, long line)
{
	char reply[256], out[512];
	struct hres r = { 0 };

	if (!alive_after_kill(v, what, line))
		return;
	if (victim_expect(v, "grow 16", "grow ok", reply, sizeof(reply)))
		return;
	snprintf(out, sizeof(out), "%s/smp-k.%s.heap", cfg.tmpdir, v->spid);
	/* 4 KiB: 64 blocks of 64 KiB are then sampled for sure (at 512 KiB, none with p = 3e-4) */
	if (!hc_expect(&r, 0, "prof", "on", "-p", v->spid, "--sample-bytes", "4K", NULL)) {
		hres_free(&r);
		victim_expect(v, "grow 64", "grow ok", reply, sizeof(reply));
		if (!hc_expect(&r, 0, "dump", "-p", v->spid, "-o", out, NULL)) {
			hres_free(&r);
			if (!hc_expect(&r, 0, "report", out, "--format", "folded", "-p", v->spid, NULL) &&
			    !strstr(r.out, "victim_grow_site")) {
				t_fail("%s killed at %ld: the next dump does not see the growth: %.300s",
				       what, line, r.out);
				/* what the sampler's state was then: seen once, under the full SAN suite */
				hres_free(&r);
				hc_run(&r, NULL, "prof", "status", "--json", "-p", v->spid, NULL);
				t_note("prof status then: %.900s", r.out);
			}
		}
	}
	hres_free(&r);
	remove(out);
	hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL);
	hres_free(&r);
}

/*
 * heapctl SIGKILLed at every step of loading and switching the sampler
 * (each line -vvv prints: every ptrace stop), each load on a fresh
 * process; then at every step of prof off and of prof on again.
 */
static void test_kill_sweep(void)
{
	struct victim v;
	long lines, fds = 0, runs = 0;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	lines = lines_of(&v, "prof", "on");
	victim_stop(&v);
	for (long l = 1; l < lines && !t_failed(); l += lines / 24 + 1, runs++) {
		if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
			return;
		kill_at_line(&v, "prof", "on", l, false);
		fds += memfds_left(v.pid);
		after_kill(&v, "prof on (loading), -vvv line", l);
		if (memfds_left(v.pid))
			t_fail("prof on killed at -vvv line %ld: the next heapctl left the sampler's memfd "
			       "open in the target", l);
		victim_check(&v, VC_NO_PROC);
		victim_stop(&v);
	}
	/* and at random moments of a load: uniform over how long a whole one took */
	{
		long span_ms;

		if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
			return;
		span_ms = now_ms();
		lines_of(&v, "prof", "on");
		span_ms = now_ms() - span_ms + 1;
		victim_stop(&v);
		srandom((unsigned)getpid());
		for (int i = 0; i < 12 && !t_failed(); i++, runs++) {
			long us = random() % (span_ms * 1000);

			if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
				return;
			kill_after_us(&v, "prof", "on", us, false);
			fds += memfds_left(v.pid);
			after_kill(&v, "prof on (loading), us", us);
			victim_check(&v, VC_NO_PROC);
			victim_stop(&v);
		}
	}
	if (t_failed() || !victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	{
		struct hres r = { 0 };

		hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL);
		hres_free(&r);
	}
	for (int pass = 0; pass < 2 && !t_failed(); pass++) {
		/* pass 0: prof off with the hooks in; pass 1: prof on again after an off */
		const char *word = pass ? "on" : "off";

		lines = lines_of(&v, "prof", word);
		if (pass == 0) {
			struct hres r = { 0 };

			hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL);
			hres_free(&r);
		}
		for (long l = 1; l < lines && !t_failed(); l += lines / 16 + 1, runs++) {
			struct hres r = { 0 };

			kill_at_line(&v, "prof", word, l, false);
			after_kill(&v, pass ? "prof on (again), -vvv line" : "prof off, -vvv line", l);
			if (pass == 0)
				hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL);
			hres_free(&r);
		}
	}
	fds += memfds_left(v.pid);
	victim_check(&v, VC_NO_PROC);
	victim_stop(&v);
	/* the worker (src/cli/keeper.c) finishes the load and closes the memfd itself */
	if (fds)
		t_fail("%ld of %ld kills left the sampler's memfd open in the target", fds, runs);
	else
		t_note("%ld kills: the targets lived on, nothing of heapctl's was left, and the next "
		       "heapctl finished each job", runs);
}

/*
 * The same on a static binary, where the sampler hooks malloc and the rest
 * inline: killed at any step of prof on or prof reset, each function must
 * be hooked or not, never half-patched, and the next heapctl must finish
 * the job and put back every byte.
 */
static const char *const inl_fns[] = { "free",		 "malloc",	  "calloc", "realloc",
				       "reallocarray",	 "posix_memalign", "aligned_alloc",
				       "memalign",	 "valloc",	  "pvalloc" };
#define INL_N (sizeof(inl_fns) / sizeof(inl_fns[0]))

/*
 * What a binary's functions look like unhooked and hooked: orig, and a
 * complete patch read after a prof on that succeeded (ref).  Only the
 * jump's operand depends on where the trampolines went: jo and jl say
 * where it is; jt is where in the trampolines' mapping it leads.
 */
struct inl_ref {
	const char *victim;
	bool have[INL_N];
	uint8_t orig[INL_N][16], ref[INL_N][16];
	int jo[INL_N], jl[INL_N];
	unsigned long long jt[INL_N];
	long lines, span_ms;
	unsigned long long at[INL_N]; /* where they are in the victim of the moment */
	int pages; /* heapctl-hooks and heapctl-unwind mappings after one prof on */
};

/* 16 bytes at addr in pid; 0, or -1. */
static int mem16(pid_t pid, unsigned long long addr, uint8_t out[16])
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = pread(fd, out, 16, (off_t)addr) == 16 ? 0 : -1;
	close(fd);
	return rc;
}

/* Where the arch's jump at p (at address pc) leads; false if p is not one. */
static bool inl_jump(const uint8_t *p, unsigned long long pc, int *len, unsigned long long *to)
{
#if defined(__x86_64__)
	int32_t rel;

	if (p[0] != 0xe9)
		return false;
	memcpy(&rel, p + 1, 4);
	*len = 5;
	*to = pc + 5 + (unsigned long long)(long long)rel;
	return true;
#elif defined(__aarch64__)
	uint32_t w;

	memcpy(&w, p, 4);
	if ((w & 0xfc000000u) != 0x14000000u)
		return false;
	*len = 4;
	*to = pc + (unsigned long long)((long long)((int32_t)(w << 6) >> 6) * 4);
	return true;
#else
	(void)p, (void)pc, (void)len, (void)to;
	return false;
#endif
}

/* How many mappings of pid are heapctl's trampolines or unwind tables. */
static int hook_pages(pid_t pid)
{
	char path[64], *maps, *l;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = read_file_str(path);
	for (l = maps; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *nl = strchr(l, '\n'), *h = strstr(l, "memfd:heapctl-hooks"),
			   *u = strstr(l, "memfd:heapctl-unwind");

		n += (h && (!nl || h < nl)) || (u && (!nl || u < nl));
	}
	free(maps);
	return n;
}

/* Offset of addr in a "memfd:heapctl-hooks" r-x mapping of pid, or -1 if in none. */
static long long in_hooks(pid_t pid, unsigned long long addr)
{
	char path[64], *maps, *l;
	long long off = -1;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = read_file_str(path);
	for (l = maps; l && *l && off < 0; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long lo, hi;
		char perm[8];
		const char *nl = strchr(l, '\n'), *m = strstr(l, "memfd:heapctl-hooks");

		if (m && (!nl || m < nl) && sscanf(l, "%llx-%llx %7s", &lo, &hi, perm) == 3 &&
		    !strncmp(perm, "r-x", 3) && addr >= lo && addr < hi)
			off = (long long)(addr - lo);
	}
	free(maps);
	return off;
}

enum { INL_ORIG, INL_HOOKED, INL_MIXED };
#define INL_EITHER (1u << INL_ORIG | 1u << INL_HOOKED)

/* What function i of v is now: its own bytes, heapctl's complete patch, or anything else. */
static int inl_state(struct victim *v, const struct inl_ref *ref, size_t i, uint8_t now[16],
		     char *why, size_t whysz)
{
	unsigned long long at = ref->at[i], to;
	int jl, jo = ref->jo[i];
	long long off;

	if (mem16(v->pid, at, now)) {
		snprintf(why, whysz, "cannot be read");
		return INL_MIXED;
	}
	if (!memcmp(now, ref->orig[i], 16))
		return INL_ORIG;
	for (int k = 0; k < 16; k++)
		if ((k < jo || k >= jo + ref->jl[i]) && now[k] != ref->ref[i][k]) {
			snprintf(why, whysz, "byte %d is 0x%02x: neither the original's nor the "
				 "patch's", k, now[k]);
			return INL_MIXED;
		}
	if (!inl_jump(now + jo, at + (unsigned long long)jo, &jl, &to) || jl != ref->jl[i]) {
		snprintf(why, whysz, "no jump at +%d", jo);
		return INL_MIXED;
	}
	off = in_hooks(v->pid, to);
	if (off < 0 || (unsigned long long)off != ref->jt[i]) {
		snprintf(why, whysz, "its jump leads to 0x%llx, %s (+0x%llx in heapctl-hooks "
			 "wanted)", to, off < 0 ? "outside heapctl's trampolines" : "the wrong trampoline",
			 ref->jt[i]);
		return INL_MIXED;
	}
	return INL_HOOKED;
}

static void hex16(const uint8_t *b, char *out)
{
	for (int k = 0; k < 16; k++)
		sprintf(out + 3 * k, "%02x ", b[k]);
	out[47] = '\0';
}

/*
 * Each function in one of the states of mask (1 << INL_ORIG, INL_HOOKED);
 * a mixed one never.  Returns how many are hooked, or -1 (t_fail()ed).
 */
static int inl_check(struct victim *v, const struct inl_ref *ref, unsigned mask, const char *what,
		     long at, const char *then)
{
	int hooked = 0;

	for (size_t i = 0; i < INL_N; i++) {
		uint8_t now[16];
		char why[160] = "", h[3][64];
		int st;

		if (!ref->have[i])
			continue;
		st = inl_state(v, ref, i, now, why, sizeof(why));
		hooked += st == INL_HOOKED;
		if (st != INL_MIXED && (mask & (1u << st)))
			continue;
		hex16(now, h[0]);
		hex16(ref->orig[i], h[1]);
		hex16(ref->ref[i], h[2]);
		t_fail("%s %ld%s: %s's first bytes are %s%s%s [%s], original [%s], a patch [%s]",
		       what, at, then, inl_fns[i],
		       st == INL_MIXED ? "half-patched" : st == INL_ORIG ? "unhooked" : "hooked",
		       why[0] ? ": " : "", why, h[0], h[1], h[2]);
		return -1;
	}
	return hooked;
}

/* The victim's churning threads: every block checked good, more operations than *ops. */
static int churn_ok(struct victim *v, unsigned long *ops, const char *what, long at)
{
	char reply[256];
	long n;

	for (int tries = 0; tries < 100; tries++) {
		if (victim_expect(v, "churned", "churned", reply, sizeof(reply)))
			return -1;
		n = kv_long(reply, "ops", 0);
		if (kv_long(reply, "bad", -1) != 0) {
			t_fail("%s %ld: the churning threads found a bad block: %s", what, at,
			       reply);
			return -1;
		}
		if ((unsigned long)n > *ops) {
			*ops = (unsigned long)n;
			return 0;
		}
		sleep_ms(10);
	}
	t_fail("%s %ld: the churning threads do not move on: %s", what, at, reply);
	return -1;
}

/* A fresh victim of ref's binary with two threads churning malloc and the rest. */
static bool inl_up(struct victim *v, struct inl_ref *ref, unsigned long *ops)
{
	char reply[128];
	uint8_t b[16];

	*ops = 0;
	if (!victim_up(v, ref->victim, NULL, NULL, false))
		return false;
	for (size_t i = 0; i < INL_N; i++)
		if (victim_fn_bytes(v, ref->victim, inl_fns[i], b, &ref->at[i]) < 0) {
			victim_stop(v);
			return false;
		}
	if (victim_expect(v, "churn 2", "churning", reply, sizeof(reply)) ||
	    churn_ok(v, ops, "start", 0)) {
		victim_stop(v);
		return false;
	}
	return true;
}

/*
 * ref from a run that succeeds on a fresh victim of binary name (its -vvv
 * lines of prof on and how long it took too); false when name is not
 * there (a musl one not built), or t_fail()ed.
 */
static bool inl_ref_take(struct inl_ref *ref, const char *name)
{
	char path[512], reply[128];
	struct victim v;
	struct hres r = { 0 };
	unsigned long ops;
	int n = 0;

	memset(ref, 0, sizeof(*ref));
	ref->victim = name;
	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, name);
	if (access(path, X_OK))
		return false;
	if (!inl_up(&v, ref, &ops))
		return false;
	for (size_t i = 0; i < INL_N && !t_failed(); i++)
		ref->have[i] = victim_fn_bytes(&v, name, inl_fns[i], ref->orig[i], NULL) > 0;
	ref->span_ms = now_ms();
	ref->lines = lines_of(&v, "prof", "on");
	ref->span_ms = now_ms() - ref->span_ms + 1;
	ref->pages = hook_pages(v.pid);
	for (size_t i = 0; i < INL_N && !t_failed(); i++) {
		unsigned long long at, to;
		long long off;
		int jo = 0;

		if (!ref->have[i] || victim_fn_bytes(&v, name, inl_fns[i], ref->ref[i], &at) <= 0)
			continue;
		/* the jump: at the entry, or after a landing pad (arm64's "bti c") */
		while (jo < 16 && ref->ref[i][jo] == ref->orig[i][jo])
			jo++;
#if defined(__aarch64__)
		jo &= ~3;
#else
		jo = jo < 16 ? 0 : jo; /* x86_64: always at the entry (which may be a jmp already) */
#endif
		if (jo >= 12 ||
		    !inl_jump(ref->ref[i] + jo, at + (unsigned long long)jo, &ref->jl[i], &to) ||
		    (off = in_hooks(v.pid, to)) < 0) {
			char h[2][64];

			hex16(ref->orig[i], h[0]);
			hex16(ref->ref[i], h[1]);
			t_fail("%s: after prof on, %s is not hooked as heapctl hooks: [%s], was [%s]",
			       name, inl_fns[i], h[1], h[0]);
			break;
		}
		ref->jo[i] = jo;
		ref->jt[i] = (unsigned long long)off;
		n++;
	}
	if (!t_failed() && n < 4)
		t_fail("%s: prof on hooked %d functions", name, n);
	if (!t_failed() && !hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL)) {
		hres_free(&r);
		hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL);
	}
	hres_free(&r);
	if (!t_failed())
		inl_check(&v, ref, 1u << INL_ORIG, "the reference run's prof reset", 0, "");
	if (!t_failed())
		churn_ok(&v, &ops, "the reference run", 0);
	if (!t_failed() && victim_expect(&v, "state", "", reply, sizeof(reply)) == 0 &&
	    kv_long(reply, "errors", -1) != 0)
		t_fail("%s: the victim counted errors: %s", name, reply);
	victim_stop(&v);
	return !t_failed();
}

/*
 * After a kill: the victim runs untraced, not stopped, its churners go on
 * with every block good, each function hooked or not; then the next
 * heapctl finishes the job (prof reset first when reset says so): prof on
 * hooks them all, a dump sees leak_here(), prof off, prof reset puts back
 * every byte, nothing of heapctl's is left open in the target, and of its
 * pages only those one prof on maps (the trampolines, the unwind tables).
 */
static void inline_after_kill(struct victim *v, const struct inl_ref *ref, unsigned long *ops,
			      bool reset, const char *what, long at)
{
	char reply[256], out[400];
	struct hres r = { 0 };
	int rc;

	if (!alive_after_kill(v, what, at))
		return;
	if (inl_check(v, ref, INL_EITHER, what, at, "") < 0 ||
	    churn_ok(v, ops, what, at))
		return;
	if (reset) {
		if (hc_expect(&r, 0, "prof", "reset", "-p", v->spid, NULL)) {
			t_note("%s %ld: the next prof reset failed: %.400s", what, at, r.err);
			goto out;
		}
		hres_free(&r);
		if (inl_check(v, ref, 1u << INL_ORIG, what, at, ", then prof reset") < 0)
			return;
	}
	snprintf(out, sizeof(out), "%s/inl-k.%s.heap", cfg.tmpdir, v->spid);
	if (hc_expect(&r, 0, "prof", "on", "-p", v->spid, "--sample-bytes", "4K", NULL)) {
		t_note("%s %ld: the next prof on failed: %.400s", what, at, r.err);
		goto out;
	}
	hres_free(&r);
	rc = inl_check(v, ref, 1u << INL_HOOKED, what, at, ", then prof on");
	if (rc < 0)
		goto out;
	if (victim_expect(v, "leak 1048576", "leaked", reply, sizeof(reply)) ||
	    hc_expect(&r, 0, "dump", "-p", v->spid, "-o", out, NULL))
		goto out;
	hres_free(&r);
	if (!hc_expect(&r, 0, "report", out, "--format", "folded", "-p", v->spid, NULL) &&
	    !strstr(r.out, "leak_here")) {
		t_fail("%s %ld: the next dump does not see leak_here(): %.300s", what, at, r.out);
		goto out;
	}
	hres_free(&r);
	if (churn_ok(v, ops, what, at) || hc_expect(&r, 0, "prof", "off", "-p", v->spid, NULL))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "reset", "-p", v->spid, NULL))
		goto out;
	if (!strstr(r.out, "hooks removed"))
		t_fail("%s %ld: prof reset: %.300s", what, at, r.out);
	hres_free(&r);
	if (inl_check(v, ref, 1u << INL_ORIG, what, at, ", then prof on, off, reset") < 0)
		goto out;
	if (memfds_left(v->pid))
		t_fail("%s %ld: a memfd:heapctl-* is left open in the target", what, at);
	/* the trampolines and unwind tables the state names, and no page a killed heapctl left */
	if (hook_pages(v->pid) != ref->pages)
		t_fail("%s %ld: %d heapctl-hooks and heapctl-unwind mappings in the target; one prof "
		       "on makes %d", what, at, hook_pages(v->pid), ref->pages);
	churn_ok(v, ops, what, at);
out:
	hres_free(&r);
	remove(out);
}

static void test_kill_sweep_inline(void)
{
	static struct inl_ref refs[3];
	static const char *const names[3] = { "glibc_leak_static", "glibc_leak_static_pie",
					      "musl_leak_static" };
	struct inl_ref *ref = &refs[0];
	unsigned nref = 0, kills[5] = { 0 }, hooked[2] = { 0 };
	unsigned long ops;
	struct victim v;
	long lines;

	for (int i = 0; i < 3 && !t_failed(); i++)
		if (inl_ref_take(&refs[nref], names[i]))
			nref++;
	if (t_failed() || !nref || strcmp(refs[0].victim, names[0]))
		return;
	/* prof on, at every k-th line -vvv prints, each on a fresh process */
	lines = ref->lines;
	for (long l = 1; l < lines && !t_failed(); l += lines / 14 + 1) {
		if (!inl_up(&v, ref, &ops))
			return;
		kill_at_line(&v, "prof", "on", l, true);
		hooked[0] += inl_check(&v, ref, INL_EITHER, "prof on killed at -vvv line", l, "") > 0;
		inline_after_kill(&v, ref, &ops, false, "prof on killed at -vvv line", l);
		victim_check(&v, VC_NO_PROC);
		victim_stop(&v);
		kills[0]++;
	}
	/* while every other thread is stopped: between the patches, at microseconds after it */
	for (int i = 0; i < 8 && !t_failed(); i++) {
		long us = i ? 10L << i : 0;

		if (!inl_up(&v, ref, &ops))
			return;
		kill_after_text(&v, "prof", "on", "froze", us, true);
		hooked[0] += inl_check(&v, ref, INL_EITHER, "prof on killed us after the freeze", us,
				       "") > 0;
		inline_after_kill(&v, ref, &ops, false, "prof on killed us after the freeze", us);
		victim_check(&v, VC_NO_PROC);
		victim_stop(&v);
		kills[1]++;
	}
	/* at random moments of a load, on each static binary there is */
	srandom((unsigned)getpid());
	for (int i = 0; i < 10 && !t_failed(); i++) {
		struct inl_ref *rf = &refs[i % nref];
		long us = random() % (rf->span_ms * 1000);

		if (!inl_up(&v, rf, &ops))
			return;
		kill_after_us(&v, "prof", "on", us, i & 1);
		hooked[0] += inl_check(&v, rf, INL_EITHER, "prof on killed at us", us, "") > 0;
		inline_after_kill(&v, rf, &ops, false, "prof on killed at us", us);
		victim_check(&v, VC_NO_PROC);
		victim_stop(&v);
		kills[2]++;
	}
	/* prof reset after prof on and prof off, at every k-th line; one process */
	if (t_failed() || !inl_up(&v, ref, &ops))
		return;
	{
		struct hres r = { 0 };

		if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL) ||
		    (hres_free(&r), hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL))) {
			hres_free(&r);
			victim_stop(&v);
			return;
		}
		hres_free(&r);
		lines = lines_of(&v, "prof", "reset");
		/*
		 * at every k-th line; then microseconds after a thread is
		 * borrowed, after the freeze, and after the bytes are back but
		 * before the sampler is told.  The next heapctl is prof on, or,
		 * every other time before the bytes are back, prof reset.
		 */
		static const char *const texts[] = { "borrowing tid", "froze", "inline hooks out" };

		for (long l = 1, j = 0; l < lines || j < 12;) {
			const char *text = texts[(j / 4) % 3];
			long us = l < lines ? l : j & 3 ? 50L << (j & 3) : 0;
			bool reset = l >= lines && j < 8 && (j & 1);
			char what[96];

			if (t_failed() || hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL) ||
			    (hres_free(&r), hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL)))
				break;
			hres_free(&r);
			if (l < lines) {
				snprintf(what, sizeof(what), "prof reset killed at -vvv line");
				kill_at_line(&v, "prof", "reset", l, true);
			} else {
				snprintf(what, sizeof(what), "prof reset killed after '%s', us",
					 text);
				kill_after_text(&v, "prof", "reset", text, us, true);
			}
			hooked[1] += inl_check(&v, ref, INL_EITHER, what, us, "") > 0;
			inline_after_kill(&v, ref, &ops, reset, what, us);
			kills[l < lines ? 3 : 4]++;
			if (l < lines)
				l += lines / 8 + 1;
			else
				j++;
		}
		hres_free(&r);
	}
	victim_check(&v, VC_NO_PROC);
	victim_stop(&v);
	t_note("prof on killed %u times at -vvv lines (of %ld), %u at us after the freeze, %u at "
	       "random us (%u static binaries); prof reset killed %u times at -vvv lines (of %ld), "
	       "%u at us after a borrow, the freeze or the bytes put back", kills[0], ref->lines, kills[1],
	       kills[2], nref, kills[3], lines, kills[4]);
	t_note("the kills left hooks in %u times in prof on, %u times in prof reset; never one "
	       "half-patched, the churners unharmed, the next heapctl finished each job and prof reset "
	       "put back every byte", hooked[0], hooked[1]);
}

/* Bad --sampler and --sample-bytes are usage errors that name the fix; nothing is attached. */
static void test_bad_options(void)
{
	static const struct {
		const char *args[6], *want;
	} cases[] = {
		{ { "prof", "on", "--sampler", "bogus" }, "invalid --sampler 'bogus'" },
		{ { "prof", "on", "--sample-bytes", "10" }, "invalid --sample-bytes '10'" },
		{ { "prof", "on", "--sample-bytes", "lots" }, "invalid --sample-bytes 'lots'" },
		{ { "stats", "--sampler", "inject" }, "does not apply to 'stats'" },
		{ { "leak", "--warm-up", "soon" }, "invalid --warm-up 'soon'" },
		{ { "prof", "restart", "--json" }, "unknown prof action 'restart'" },
	};
	struct hres r = { 0 };
	struct victim v;

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].args;

		if (!hc_expect(&r, 2, a[0], a[1], a[2], a[3] ? a[3] : "-p", a[3] ? "-p" : v.spid,
			       a[3] ? v.spid : NULL, NULL) &&
		    (!strstr(r.err, cases[i].want) || !strstr(r.err, "hint: see 'heapctl")))
			t_fail("%s %s %s: %.300s", a[0], a[1], a[2], r.err);
		hres_free(&r);
	}
	if (hc_expect(&r, 0, "maps", "-p", v.spid, NULL) == 0 && strstr(r.out, "heapctl-sampler"))
		t_fail("a refused command loaded the sampler");
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);
}

/* leak_rate (tests/victims/leak_rate.c) with its defaults, its stdin held by *in. */
static pid_t leak_rate_start(int *in, char *spid, size_t len)
{
	char path[PATH_MAX], why[256], line[64] = "";
	const char *argv[] = { path, NULL };
	int ip[2], op[2];
	struct spawn_opts so = { 0 };
	pid_t pid;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/leak_rate", cfg.victim_dir);
	if (pipe2(ip, O_CLOEXEC) || pipe2(op, O_CLOEXEC)) {
		t_fail("pipe: %s", strerror(errno));
		return -1;
	}
	so.in_fd = ip[0];
	so.out_fd = op[1];
	so.err_fd = -1;
	pid = spawn(argv, &so, why, sizeof(why));
	close(ip[0]);
	close(op[1]);
	/* "ready PID" once its loop runs */
	n = pid > 0 ? read(op[0], line, sizeof(line) - 1) : -1;
	close(op[0]);
	if (pid <= 0 || n <= 0 || strncmp(line, "ready", 5)) {
		t_fail("leak_rate did not start: %s %s", pid <= 0 ? why : "", line);
		close(ip[1]);
		if (pid > 0)
			kill_wait(pid);
		return -1;
	}
	*in = ip[1];
	snprintf(spid, len, "%d", (int)pid);
	return pid;
}

/* functions[] member key of the function name in leak --json's out, or -1 */
static double fn_num(const char *out, const char *name, const char *key)
{
	char pat[96];
	const char *f, *end, *k;

	snprintf(pat, sizeof(pat), "{\"name\":\"%s\"", name);
	f = strstr(out, pat);
	end = f ? strchr(f, '}') : NULL;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	k = f ? strstr(f, pat) : NULL;
	return k && k < end ? strtod(k + strlen(pat), NULL) : -1;
}

/*
 * leak at its defaults on a process started with no profiler: 100 KiB/s
 * leaked from leak_here() beside 32 MiB/s of churn that keeps 1 MiB live.
 * leak measures the allocation rate, picks the interval for the window,
 * warms up, and names leak_here first at about its rate, with the samples
 * and the range behind it; then the sampler is as leak found it (gone).
 * With the samples kept by an earlier prof off, leak uses their interval
 * and leaves them kept.  The bounds are wide (±40%: 4 standard deviations
 * at the interval leak picks here), so the test does not flake; the
 * accuracy itself is measured by bench/accuracy.sh.
 */
static void test_leak_defaults(void)
{
	struct hres r = { 0 };
	char spid[16], st[2048];
	struct victim v = { 0 };
	double rate, lo, hi, k;
	const char *pr;
	int in = -1;
	pid_t pid = leak_rate_start(&in, spid, sizeof(spid));

	if (pid < 0)
		return;
	snprintf(v.spid, sizeof(v.spid), "%s", spid);
	v.pid = pid;
	if (hc_expect(&r, 0, "leak", "-p", spid, "--for", "5", "--json", "-o", "/dev/null", "--format", "folded", NULL))
		goto out;
	rate = fn_num(r.out, "leak_here", "per_second");
	k = fn_num(r.out, "leak_here", "samples");
	if (!strstr(r.out, "\"functions\":[{\"name\":\"leak_here\""))
		t_fail("leak at its defaults does not name leak_here first: %.600s", r.out);
	else if (rate < 0.6 * 102400 || rate > 1.4 * 102400)
		t_fail("leak_here grows 100 KiB/s; leak says %.0f B/s from %.0f samples: %.600s",
		       rate, k, r.out);
	if (num(r.out, "period") >= 524288 || !strstr(r.out, "\"interval_chosen\":true") ||
	    num(r.out, "warm_up_seconds") < 1 || num(r.out, "allocation_rate") < 8e6)
		t_fail("leak did not pick its interval from the allocation rate, or did not warm "
		       "up: %.600s", r.out);
	/* the first range after the top level's is leak_here's */
	pr = strstr(r.out, "\"functions\":[");
	pr = pr ? strstr(pr, "\"per_second_range\":[") : NULL;
	if (!pr || sscanf(pr, "\"per_second_range\":[%lf,%lf]", &lo, &hi) != 2 || lo > rate ||
	    hi < rate || hi <= lo)
		t_fail("no 95%% range around leak_here's rate: %.600s", r.out);
	hres_free(&r);
	if (sampler_status(&v, st, sizeof(st)) &&
	    (num(st, "hooks") != 0 || !strstr(st, "\"enabled\":false") || strstr(st, "\"kept\":true")))
		t_fail("after leak the sampler should be as leak found it, gone: %s", st);
	/* samples kept by prof off: leak samples at their interval, and leaves them kept */
	if (hc_expect(&r, 0, "prof", "on", "-p", spid, "--sample-bytes", "8K", NULL))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "prof", "off", "-p", spid, NULL))
		goto out;
	hres_free(&r);
	if (hc_expect(&r, 0, "leak", "-p", spid, "--for", "1", "--json", "-o", "/dev/null", "--format", "folded", NULL))
		goto out;
	if (num(r.out, "period") != 8192 || !strstr(r.out, "\"interval_chosen\":false"))
		t_fail("leak on kept samples changed their interval: %.600s", r.out);
	hres_free(&r);
	if (sampler_status(&v, st, sizeof(st)) &&
	    (num(st, "hooks") < 1 || !strstr(st, "\"kept\":true") || num(st, "interval") != 8192))
		t_fail("after leak the kept samples should still be kept: %s", st);
	hc_expect(&r, 0, "prof", "reset", "-p", spid, NULL);
out:
	hres_free(&r);
	close(in);
	if (!wait_exited(pid, 5000))
		t_fail("leak_rate did not exit at the end of its stdin");
	kill_wait(pid);
}

/*
 * A new interval holds from the next allocation: every thread's countdown
 * belongs to one profile, and a thread whose countdown was drawn for a
 * 1 TiB interval draws again at 4 KiB at once, not after a terabyte.
 */
static void test_new_interval(void)
{
	struct hres r = { 0 };
	struct victim v;
	char st[2048];

	if (!victim_up(&v, "alloc_victim", NULL, NULL, false))
		return;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", "1T", NULL))
		goto out;
	hres_free(&r);
	/* every thread that allocates now draws a countdown of about a terabyte */
	if (victim_expect(&v, "grow 16", "grow ok", st, sizeof(st)))
		goto out;
	if (hc_expect(&r, 0, "prof", "on", "-p", v.spid, "--sample-bytes", "4K", NULL))
		goto out;
	hres_free(&r);
	if (victim_expect(&v, "grow 64", "grow ok", st, sizeof(st)))
		goto out;
	/* 64 blocks of 64 KiB at 4 KiB: each one sampled; a carried-over countdown gives none */
	if (sampler_status(&v, st, sizeof(st)) && (num(st, "interval") != 4096 || num(st, "samples") < 60))
		t_fail("4 MiB allocated after the interval went from 1 TiB to 4 KiB: %s", st);
	hc_expect(&r, 0, "prof", "off", "-p", v.spid, NULL);
	hres_free(&r);
	hc_expect(&r, 0, "prof", "reset", "-p", v.spid, NULL);
out:
	hres_free(&r);
	victim_check(&v, 0);
	victim_stop(&v);
}

const struct itest t_sampler_tests[] = {
	{ "sampler-bad-options", test_bad_options, 0 },
	{ "sampler-glibc", test_glibc, 0 },
	{ "sampler-jemalloc", test_jemalloc, 0 },
	{ "sampler-tcmalloc-minimal", test_tcmalloc_minimal, 0 },
	{ "sampler-mimalloc", test_mimalloc, 0 },
	{ "sampler-jemalloc-rjem", test_rjem, 0 },
	{ "sampler-static-jemalloc", test_static_jemalloc, 0 },
	{ "sampler-hammer", test_hammer, 0 },
	{ "sampler-threads", test_threads, 0 },
	{ "sampler-dlopen-later", test_dlopen_later, 0 },
	{ "sampler-gdb-after", test_gdb_after, 0 },
	{ "sampler-stale-name", test_stale_name, 0 },
	{ "sampler-cxx-new", test_cxx_new, 0 },
	{ "sampler-mdwe", test_mdwe, 0 },
	{ "sampler-fork-exec", test_fork_exec, 0 },
	{ "sampler-kill-sweep", test_kill_sweep, 600 },
	{ "sampler-kill-sweep-inline", test_kill_sweep_inline, 300 },
	{ "sampler-mariadb", test_mariadb, 300 },
	{ "sampler-new-interval", test_new_interval, 0 },
	{ "leak-defaults", test_leak_defaults, 120 },
	{ NULL, NULL, 0 },
};
