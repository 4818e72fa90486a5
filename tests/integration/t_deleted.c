// SPDX-License-Identifier: MIT
/*
 * Objects deleted since they were mapped, read by a heapctl that cannot
 * follow /proc/PID/map_files (no CAP_SYS_ADMIN nor CAP_CHECKPOINT_RESTORE:
 * a non-root operator, kubectl debug's general profile, a unit with a
 * bounding set).  An allocator library upgraded under a running process, or
 * unpacked and unlinked on purpose, has a "(deleted)" name that opens
 * nothing: its symbols and its allocator's strings come from its loaded
 * image.  A deleted executable is read through /proc/PID/exe.  The allocator must be the right one (the
 * wrong one's functions free the other's pointers: free(): invalid
 * pointer), its figures must be its own, and the target must go on
 * allocating and freeing afterwards.
 *
 *   deleted-preload-nocap  LD_PRELOAD=a copy of libjemalloc, deleted
 *   deleted-exe-nocap      fx_jemalloc_plain (jemalloc linked in), its copy deleted
 *   mem-dac-override       /proc/PID/mem of another user without CAP_DAC_OVERRIDE is
 *                          refused for what it is, not as a ptrace problem
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "itest.h"

#define NOCAP_BOUND "--bounding-set=-sys_admin,-checkpoint_restore"
#define NOCAP_INH "--inh-caps=-sys_admin,-checkpoint_restore"
#define NODAC_BOUND "--bounding-set=-dac_override,-dac_read_search"
#define NODAC_INH "--inh-caps=-dac_override,-dac_read_search"

/* Root, and a setpriv (util-linux's: busybox's has no --bounding-set) that drops these. */
static bool have_setpriv(const char *bound, const char *inh)
{
	const char *argv[] = { "setpriv", bound, inh, "--", "true", NULL };
	char path[PATH_MAX];
	struct hres r;
	bool ok;

	if (getuid() != 0 || !find_in_path("setpriv", path, sizeof(path))) {
		t_skip(false, "needs root and setpriv (util-linux) to drop a capability");
		return false;
	}
	run_prog(&r, argv, 10);
	ok = hres_exit(&r) == 0;
	if (!ok)
		t_skip(false, "setpriv %s %s fails here: %s", bound, inh, hres_desc(&r));
	hres_free(&r);
	return ok;
}

/* cp src dst, mode 0755; false with t_fail() */
static bool copy_file(const char *src, const char *dst)
{
	char buf[65536];
	ssize_t n = 0;
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1;

	if (in >= 0)
		out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (in < 0 || out < 0 || n < 0) {
		t_fail("copy %s to %s: %s", src, dst, strerror(errno));
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
		return false;
	}
	close(in);
	return close(out) == 0;
}

/* The libjemalloc jemalloc_victim links (ldd); false if it links none (a static build). */
static bool jemalloc_so(char *out, size_t sz)
{
	char victim[PATH_MAX];
	const char *argv[] = { "ldd", victim, NULL };
	const char *p, *arrow;
	struct hres r;
	size_t n = 0;

	snprintf(victim, sizeof(victim), "%s/jemalloc_victim", cfg.victim_dir);
	run_prog(&r, argv, 10);
	p = hres_exit(&r) == 0 ? strstr(r.out, "libjemalloc") : NULL;
	arrow = p ? strstr(p, " => /") : NULL;
	if (arrow && arrow < strchr(p, '\n')) {
		n = strcspn(arrow + 4, " \n");
		snprintf(out, sz, "%.*s", (int)n, arrow + 4);
	}
	hres_free(&r);
	return n > 0;
}

/* heapctl ARGS without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE */
__attribute__((sentinel)) static void run_nocap(struct hres *r, ...)
{
	const char *argv[40], *a;
	va_list ap;
	int n = 0;

	argv[n++] = "setpriv";
	argv[n++] = NOCAP_BOUND;
	argv[n++] = NOCAP_INH;
	argv[n++] = "--";
	argv[n++] = cfg.heapctl;
	if (cfg.vflag)
		argv[n++] = cfg.vflag;
	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && n < 39)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	run_prog(r, argv, HC_TIMEOUT_S);
}

/*
 * Can a map_files link of pid be opened without the capabilities?  Then
 * the runs below would not test what they are for.
 */
static bool map_files_open_nocap(pid_t pid)
{
	char dir[64], link[PATH_MAX];
	const char *argv[] = { "setpriv", NOCAP_BOUND, NOCAP_INH, "--", "head", "-c", "4", link,
			       NULL };
	struct dirent *de = NULL;
	struct hres r;
	bool ok;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/map_files", (int)pid);
	d = opendir(dir);
	while (d && (de = readdir(d)) && de->d_name[0] == '.')
		;
	if (!d || !de) {
		if (d)
			closedir(d);
		return false;
	}
	snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
	closedir(d);
	run_prog(&r, argv, 10);
	ok = hres_exit(&r) == 0;
	hres_free(&r);
	return ok;
}

/* pid maps an object whose name ends in "(deleted)" and holds what. */
static bool maps_deleted(pid_t pid, const char *what)
{
	char path[64];
	char *maps, *line;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = read_file_str(path);
	for (line = maps; line && *line && !found;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		found = strstr(line, what) && strstr(line, "(deleted)");
		line = nl ? nl + 1 : line + strlen(line);
	}
	free(maps);
	return found;
}

static double json_num(const char *s, const char *key)
{
	double d = -1;

	return json_get_num(s, key, &d) ? -1 : d;
}

/*
 * info and stats without map_files on v, whose allocator (jemalloc) lives
 * in an object named obj: info names jemalloc and the object as malloc's
 * home, stats' allocated grows by what grow_cmd then keeps (at least grown:
 * its figures are jemalloc's, not glibc's), purge works, and the target
 * goes on allocating and freeing.
 */
static void drive_nocap(struct victim *v, const char *obj, const char *grow_cmd,
			const char *grow_ok, double grown)
{
	char reply[256], want[PATH_MAX + 32];
	struct hres r = { 0 };
	double before, after;

	run_nocap(&r, "info", "-p", v->spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("info: %s", hres_desc(&r));
		goto out;
	}
	snprintf(want, sizeof(want), "malloc from   %s", obj);
	if (!strstr(r.out, "allocator     jemalloc") || !strstr(r.out, want)) {
		t_fail("info does not show jemalloc from %s:\n%.500s", obj, r.out);
		goto out;
	}
	/* its strings, read from the file or the loaded image */
	snprintf(want, sizeof(want), "evidence      jemalloc in %s", obj);
	if (!strstr(r.out, want)) {
		t_fail("info shows no jemalloc evidence in %s:\n%.500s", obj, r.out);
		goto out;
	}
	hres_free(&r);
	run_nocap(&r, "stats", "-p", v->spid, "--json", NULL);
	before = json_num(r.out, "allocated");
	if (hres_crash(&r) || hres_exit(&r) != 0 || !strstr(r.out, "\"jemalloc\"") ||
	    before <= 0) {
		t_fail("stats: %s\n%.400s", hres_desc(&r), r.out);
		goto out;
	}
	if (victim_expect(v, grow_cmd, grow_ok, reply, sizeof(reply)))
		goto out;
	hres_free(&r);
	run_nocap(&r, "stats", "-p", v->spid, "--json", NULL);
	after = json_num(r.out, "allocated");
	if (hres_crash(&r) || hres_exit(&r) != 0 || after - before < grown ||
	    json_num(r.out, "resident") < after) {
		t_fail("stats after %s: allocated %.0f -> %.0f (want +%.0f): %s\n%.400s", grow_cmd,
		       before, after, grown, hres_desc(&r), r.out);
		goto out;
	}
	hres_free(&r);
	run_nocap(&r, "purge", "-p", v->spid, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("purge: %s", hres_desc(&r));
		goto out;
	}
	victim_check(v, 0);
out:
	hres_free(&r);
}

static void test_deleted_preload_nocap(void)
{
	char lib[PATH_MAX], dir[PATH_MAX], copy[PATH_MAX + 32], env[PATH_MAX + 64], reply[256];
	struct victim v;
	char why[512];
	int st;

	if (!have_setpriv(NOCAP_BOUND, NOCAP_INH))
		return;
	if (!jemalloc_so(lib, sizeof(lib))) {
		t_skip(false, "ldd names no shared libjemalloc of jemalloc_victim (a static build, "
			      "or no ldd): nothing to preload");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/deleted-preload", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(copy, sizeof(copy), "%s/libjemalloc.so.2", dir);
	if (!copy_file(lib, copy))
		return;
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", copy);
	if (victim_start_env(&v, "alloc_victim", NULL, env, why, sizeof(why))) {
		t_fail("%s", why);
		unlink(copy);
		return;
	}
	unlink(copy);
	if (!maps_deleted(v.pid, copy)) {
		t_fail("pid %s does not map %s (deleted)", v.spid, copy);
		goto out;
	}
	if (map_files_open_nocap(v.pid)) {
		t_skip(false, "/proc/PID/map_files can be followed without CAP_SYS_ADMIN here");
		goto out;
	}
	drive_nocap(&v, copy, "grow 160", "grow ok", 9.5 * 1048576);
	if (t_failed())
		goto out;
	/* frees in another thread: jemalloc's pointers to jemalloc */
	if (victim_expect(&v, "frag 16", "frag ok", reply, sizeof(reply)))
		goto out;
	st = victim_stop(&v);
	if (st != 0) {
		char *err = read_file_str(v.errpath);

		t_fail("the target exited with %d after heapctl: %.300s", st, err ? err : "");
		free(err);
	}
	return;
out:
	victim_kill(&v);
}

/* jemalloc linked into the executable, whose file was deleted since it started */
static void test_deleted_exe_nocap(void)
{
	char src[PATH_MAX], dir[PATH_MAX], copy[PATH_MAX + 32], why[512], reply[256];
	const char *argv[] = { copy, "3", "4", "5", NULL };
	struct victim v;

	if (!have_setpriv(NOCAP_BOUND, NOCAP_INH))
		return;
	snprintf(src, sizeof(src), "%s/fx_jemalloc_plain", cfg.victim_dir);
	if (access(src, X_OK)) {
		t_skip(true, "%s missing (make fixtures)", src);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/deleted-exe", cfg.tmpdir);
	mkdir(dir, 0755);
	snprintf(copy, sizeof(copy), "%s/fx_jemalloc_plain", dir);
	if (!copy_file(src, copy))
		return;
	if (victim_start_argv(&v, argv, "dirty_decay_ms:-1", NULL, VS_TIDS | VS_JEMALLOC, why,
			      sizeof(why))) {
		t_fail("%s", why);
		unlink(copy);
		return;
	}
	unlink(copy);
	if (!maps_deleted(v.pid, copy)) {
		t_fail("pid %s does not map %s (deleted)", v.spid, copy);
		goto out;
	}
	if (map_files_open_nocap(v.pid)) {
		t_skip(false, "/proc/PID/map_files can be followed without CAP_SYS_ADMIN here");
		goto out;
	}
	/* 64 MiB: the hammer thread's own heap comes and goes by a few */
	drive_nocap(&v, copy, "leak 67108864 0", "leak ok", 48 * 1048576.0);
	if (!t_failed())
		victim_expect(&v, "free", "free ok", reply, sizeof(reply));
out:
	victim_kill(&v);
}

/*
 * /proc/PID/mem is mode 0600 and belongs to the target's user: root
 * without CAP_DAC_OVERRIDE cannot open another user's, though it may trace
 * it (CAP_SYS_PTRACE).  The refusal must say so, not blame ptrace.
 */
static void test_mem_dac_override(void)
{
	static const char *const as_nobody[] = { "setpriv", "--reuid=65534", "--regid=65534",
						  "--clear-groups", NULL };
	char path[64], why[512], reply[64];
	struct hres r = { 0 };
	struct victim v;
	struct stat st;

	if (!have_setpriv(NODAC_BOUND, NODAC_INH))
		return;
	if (victim_start_wrapped(&v, as_nobody, "plain_victim", NULL, NULL, why, sizeof(why))) {
		t_skip(false, "the victim cannot run as uid 65534 here: %s", why);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%s/mem", v.spid);
	if (stat(path, &st) || st.st_uid != 65534) {
		/* not dumpable (its executable unreadable to it): root's, then */
		t_skip(false, "%s belongs to uid %d, not the target's 65534", path,
		       stat(path, &st) ? -1 : (int)st.st_uid);
		goto out;
	}
	{
		const char *argv[] = { "setpriv", NODAC_BOUND, NODAC_INH, "--", cfg.heapctl,
				       "stats", "-p", v.spid, NULL };

		run_prog(&r, argv, HC_TIMEOUT_S);
	}
	if (hres_crash(&r) || hres_exit(&r) != 1 || !strstr(r.err, "heapctl: error: ") ||
	    !strstr(r.err, "/mem") || strstr(r.err, "not permitted to trace") ||
	    !strstr(r.err, "hint: ") || !strstr(strstr(r.err, "hint: "), "CAP_DAC_OVERRIDE"))
		t_fail("without CAP_DAC_OVERRIDE: %s", hres_desc(&r));
	else if (!victim_expect(&v, "ping", "pong", reply, sizeof(reply)))
		victim_check(&v, 0);
out:
	hres_free(&r);
	victim_kill(&v);
}

const struct itest t_deleted_tests[] = {
	{ "deleted-preload-nocap", test_deleted_preload_nocap, 0 },
	{ "deleted-exe-nocap", test_deleted_exe_nocap, 0 },
	{ "mem-dac-override", test_mem_dac_override, 0 },
	{ NULL, NULL, 0 },
};
