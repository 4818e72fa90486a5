// SPDX-License-Identifier: MIT
/*
 * Objects deleted since they were mapped, read by a heapctl that cannot
 * follow /proc/PID/map_files (no CAP_SYS_ADMIN nor CAP_CHECKPOINT_RESTORE:
 * a non-root operator, kubectl debug's general profile, a unit with a
 * bounding set).  An allocator library upgraded under a running process, or
 * unpacked and unlinked on purpose, has a "(deleted)" name that opens
 * nothing: its symbols and its allocator's strings come from its loaded
 * image.  A deleted executable is read through /proc/PID/exe.  The
 * allocator must be the right one (the wrong one's functions free the
 * other's pointers: free(): invalid pointer), its figures must be its own,
 * and the target must go on allocating and freeing afterwards.  Capabilities
 * are dropped by the harness itself (itest_exec_as()), as setpriv would.
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
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "itest.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40 /* Linux 5.9 */
#endif
/* the capabilities that let heapctl follow /proc/PID/map_files */
/* those that let it open another user's /proc/PID/mem */
#define NOCAP_DAC "1,2" /* CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH */

_Static_assert(CAP_SYS_ADMIN == 21 && CAP_CHECKPOINT_RESTORE == 40 && CAP_DAC_OVERRIDE == 1 &&
		       CAP_DAC_READ_SEARCH == 2,
	       "the capability numbers above");

/*
 * itest --without-caps N,N,... -- PROG ARGS: exec PROG with those
 * capabilities out of the bounding, inheritable and ambient sets, as
 * util-linux's setpriv --bounding-set=-... --inh-caps=-... does (busybox's
 * setpriv, all the arm64 lane has, cannot): root's exec then leaves them
 * out of the permitted and effective sets (capabilities(7)).  A capability
 * this kernel does not know is not there to drop.  itest --uid N -- PROG
 * ARGS: as uid and gid N, without supplementary groups.
 */
int itest_exec_as(char **argv)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	const char *what = argv[0], *arg = argv[1];
	char *end;

	if (!what || !arg || !argv[2] || strcmp(argv[2], "--") || !argv[3]) {
		fprintf(stderr, "usage: itest --without-caps N,N | --uid N -- PROG ARGS\n");
		return 2;
	}
	if (!strcmp(what, "--uid")) {
		long id = strtol(arg, NULL, 10);

		if (setgroups(0, NULL) || setgid((gid_t)id) || setuid((uid_t)id)) {
			perror("setuid");
			return 1;
		}
	} else if (syscall(SYS_capget, &hdr, data)) {
		perror("capget");
		return 1;
	} else {
		for (long c = strtol(arg, &end, 10);; c = strtol(end + 1, &end, 10)) {
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL) {
				perror("PR_CAPBSET_DROP");
				return 1;
			}
			prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, c, 0, 0);
			if (c >= 0 && c < 64)
				data[c / 32].inheritable &= ~(1u << (c % 32));
			if (*end != ',')
				break;
		}
		if (syscall(SYS_capset, &hdr, data)) {
			perror("capset");
			return 1;
		}
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}

const char *itest_self(void)
{
	static char self[PATH_MAX];
	ssize_t n;

	if (!self[0]) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
	}
	return self;
}

int exec_as(const char **argv, const char *how, const char *arg)
{
	argv[0] = itest_self();
	argv[1] = how;
	argv[2] = arg;
	argv[3] = "--";
	return 4;
}

static int without(const char **argv, const char *caps)
{
	return exec_as(argv, "--without-caps", caps);
}

/* Root, who may drop capabilities from its bounding set, and does here. */
static bool can_drop(const char *caps)
{
	const char *argv[8];
	struct hres r;
	bool ok;
	int n;

	if (getuid() != 0) {
		t_skip(false, "needs root to drop a capability");
		return false;
	}
	n = without(argv, caps);
	argv[n++] = "true";
	argv[n] = NULL;
	run_prog(&r, argv, 10);
	ok = hres_exit(&r) == 0;
	if (!ok)
		t_skip(false, "cannot drop capabilities %s here: %s", caps, hres_desc(&r));
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
	/* no ldd (the arm64 lane's busybox): where Debian puts it */
	if (!n) {
		snprintf(out, sz, LIBDIR "libjemalloc.so.2");
		if (!access(out, R_OK) && !access(victim, X_OK))
			n = strlen(out);
	}
	return n > 0;
}

/* heapctl ARGS without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE */
__attribute__((sentinel)) static void run_nocap(struct hres *r, ...)
{
	const char *argv[40], *a;
	va_list ap;
	int n;

	n = without(argv, NOCAP_MAPFILES);
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
 * Can a map_files link of pid be opened without NOCAP_MAPFILES (run after
 * prefix, e.g. an nsenter, or NULL)?  Then the runs that drop them would
 * not test what they are for.
 */
bool map_files_open_nocap(pid_t pid, const char *const *prefix)
{
	char dir[64], link[PATH_MAX];
	const char *argv[24];
	struct dirent *de = NULL;
	struct hres r;
	bool ok;
	DIR *d;
	int n = 0;

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
	for (; prefix && prefix[n] && n < 12; n++)
		argv[n] = prefix[n];
	n += without(argv + n, NOCAP_MAPFILES);
	argv[n++] = "head";
	argv[n++] = "-c";
	argv[n++] = "4";
	argv[n++] = link;
	argv[n] = NULL;
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

/*
 * Delete copy, which v maps, and check that this is the case the tests are
 * for: v maps it (deleted) and map_files cannot be followed without the
 * capabilities (else skipped).
 */
static bool deleted_and_unreachable(struct victim *v, const char *copy)
{
	unlink(copy);
	if (!maps_deleted(v->pid, copy)) {
		t_fail("pid %s does not map %s (deleted)", v->spid, copy);
		return false;
	}
	if (map_files_open_nocap(v->pid, NULL)) {
		t_skip(false, "/proc/PID/map_files can be followed without CAP_SYS_ADMIN here");
		return false;
	}
	return true;
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

	if (!can_drop(NOCAP_MAPFILES))
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
	if (!deleted_and_unreachable(&v, copy))
		goto out;
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

	if (!can_drop(NOCAP_MAPFILES))
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
	if (!deleted_and_unreachable(&v, copy))
		goto out;
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
	const char *as_nobody[5];
	char path[64], why[512], reply[64];
	struct hres r = { 0 };
	struct victim v;
	struct stat st;

	if (!can_drop(NOCAP_DAC))
		return;
	as_nobody[exec_as(as_nobody, "--uid", "65534")] = NULL;
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
		const char *argv[10];
		int n = without(argv, NOCAP_DAC);

		argv[n++] = cfg.heapctl;
		argv[n++] = "stats";
		argv[n++] = "-p";
		argv[n++] = v.spid;
		argv[n] = NULL;
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
