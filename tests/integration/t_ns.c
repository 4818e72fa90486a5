// SPDX-License-Identifier: MIT
/*
 * heapctl and its target in mount namespaces of their own, sharing only
 * the PID namespace: what kubectl debug --target gives (docs/fleet.md),
 * an ephemeral container beside the application's.  Each side has its own
 * tmpfs on /tmp, and the target's executable and libjemalloc exist only in
 * the target's, as they would in its image.  heapctl must find the
 * target's files through /proc/PID/map_files or /proc/PID/root, make its
 * private directory in the target's /tmp, and bring profiles back to its
 * own side.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "itest.h"

/* sh -c's script for a mount namespace with a tmpfs of its own on /tmp */
#define PRIVATE_TMP "mount -t tmpfs tmpfs /tmp"

/* heapctl's side: a process that holds its mount namespace, entered with nsenter */
struct hcns {
	struct hproc holder;
	char mnt[64];	/* nsenter's --mount=/proc/H/ns/mnt */
	char root[64];	/* /proc/H/root: heapctl's files, seen from here */
};

/* The mount namespace of pid, as its /proc link reads ("mnt:[4026531841]"). */
static bool mnt_ns(pid_t pid, char *out, size_t sz)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/ns/mnt", (int)pid);
	n = readlink(link, out, sz - 1);
	if (n <= 0)
		return false;
	out[n] = '\0';
	return true;
}

static int hcns_start(struct hcns *ns)
{
	static const char *const argv[] = {
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		PRIVATE_TMP " && echo ready >&2 && exec sleep 3600", NULL,
	};
	char buf[1024] = "";

	if (prog_start(&ns->holder, argv) < 0) {
		t_fail("cannot start unshare for heapctl's namespace");
		return -1;
	}
	if (!hp_err_until(&ns->holder, "ready", buf, sizeof(buf), 10000)) {
		t_fail("heapctl's mount namespace was not made: %.300s", buf);
		return -1;
	}
	snprintf(ns->mnt, sizeof(ns->mnt), "--mount=/proc/%d/ns/mnt", (int)ns->holder.pid);
	snprintf(ns->root, sizeof(ns->root), "/proc/%d/root", (int)ns->holder.pid);
	return 0;
}

static void hcns_stop(struct hcns *ns)
{
	struct hres r;

	if (ns->holder.pid <= 0)
		return;
	kill(ns->holder.pid, SIGKILL);
	hc_finish(&ns->holder, &r, 10);
	hres_free(&r);
}

/*
 * heapctl ARGS inside heapctl's namespace.  nocap drops CAP_SYS_ADMIN and
 * CAP_CHECKPOINT_RESTORE first, as kubectl debug's general profile leaves
 * them out: /proc/PID/map_files cannot be followed then, and the target's
 * files are reached by name under /proc/PID/root.  0 if heapctl exited 0
 * and did not crash; else t_fail() and -1.
 */
static int hcns_run(const struct hcns *ns, struct hres *r, bool nocap, const char *const args[])
{
	const char *argv[64], *crash;
	int n = 0;

	argv[n++] = "nsenter";
	argv[n++] = ns->mnt;
	argv[n++] = "--";
	if (nocap) {
		/* the harness itself drops them (itest_exec_as()): busybox's setpriv cannot */
		argv[n++] = itest_self();
		argv[n++] = "--without-caps";
		argv[n++] = NOCAP_MAPFILES;
		argv[n++] = "--";
	}
	argv[n++] = cfg.heapctl;
	if (cfg.vflag)
		argv[n++] = cfg.vflag;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	run_prog(r, argv, HC_TIMEOUT_S);
	crash = hres_crash(r);
	if (crash || hres_exit(r) != 0) {
		t_fail("%s%s%s", hres_desc(r), crash ? " " : "", crash ? crash : "");
		return -1;
	}
	return 0;
}

/* Can a map_files link of pid be opened with hcns_run()'s nocap, inside ns? */
static bool map_files_followed_without_caps(const struct hcns *ns, pid_t pid)
{
	const char *const nsenter[] = { "nsenter", ns->mnt, "--", NULL };

	return map_files_open_nocap(pid, nsenter);
}

/* hcns_run() with the arguments listed; nocap an int: va_start() after a bool is undefined */
__attribute__((sentinel)) static int hcns(const struct hcns *ns, struct hres *r, int nocap, ...)
{
	const char *args[48], *a;
	va_list ap;
	int n = 0;

	va_start(ap, nocap);
	while ((a = va_arg(ap, const char *)) && n < 47)
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	hres_free(r);
	return hcns_run(ns, r, nocap, args);
}

/*
 * The libjemalloc the victim links, from ldd's "libjemalloc.so.2 => PATH
 * (0x...)" line; false if it has none (a static build) or ldd is missing.
 */
static bool jemalloc_lib(const char *victim, char *out, size_t sz)
{
	const char *argv[] = { "ldd", victim, NULL };
	const char *p, *arrow;
	struct hres r;
	size_t n;

	run_prog(&r, argv, 10);
	p = hres_exit(&r) == 0 ? strstr(r.out, "libjemalloc") : NULL;
	arrow = p ? strstr(p, " => /") : NULL;
	if (!arrow || arrow > strchr(p, '\n')) {
		hres_free(&r);
		return false;
	}
	n = strcspn(arrow + 4, " \n");
	snprintf(out, sz, "%.*s", (int)n, arrow + 4);
	hres_free(&r);
	return n > 0;
}

/*
 * A profile heapctl wrote to path in its own view: there, a jemalloc heap
 * profile, and neither in the target's view nor in the harness's (where
 * path would be if the namespaces were not apart).
 */
static int profile_on_hc_side(const struct hcns *ns, const char *vroot, const char *path)
{
	char here[PATH_MAX], there[PATH_MAX], why[PATH_MAX + 128];

	snprintf(here, sizeof(here), "%s%s", ns->root, path);
	snprintf(there, sizeof(there), "%s%s", vroot, path);
	if (!file_starts_with(here, "heap_v2/", why, sizeof(why))) {
		t_fail("the profile did not come back to heapctl's side: %s", why);
		return -1;
	}
	if (!access(there, F_OK) || !access(path, F_OK)) {
		t_fail("%s is also in the %s's view", path,
		       !access(there, F_OK) ? "target" : "harness");
		return -1;
	}
	return 0;
}

/* dir's entries named .heapctl-*, as "a b "; "" if none; NULL if dir cannot be read */
static char *heapctl_entries(const char *dir, char *out, size_t sz)
{
	struct dirent *de;
	size_t len = 0;
	DIR *d = opendir(dir);

	if (!d)
		return NULL;
	out[0] = '\0';
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".heapctl-", 9) && len + strlen(de->d_name) + 2 < sz)
			len += (size_t)snprintf(out + len, sz - len, "%s ", de->d_name);
	closedir(d);
	return out;
}

/*
 * Every command, from a mount namespace other than the target's, the
 * target in one of its own: list, info, stats, prof, dump (to heapctl's
 * /tmp and to stdout), report, watch (samples, textfile, a growth
 * profile), leak, purge, get, set, maps.  info, dump and report also
 * without map_files.  Then the target is as it was, and nothing of
 * heapctl's is left in its /tmp.
 */
static void test_container_mount_ns(void)
{
	static const char *const probe[] = {
		"unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_TMP, NULL,
	};
	char lib[PATH_MAX];
	/*
	 * The executable and its libjemalloc are copied into the target's own
	 * /tmp: only its side has them, as only its image would.  sh gets the
	 * library as $0, then the victim and its arguments.
	 */
	const char *const vprefix[] = {
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		PRIVATE_TMP " && mkdir /tmp/lib && cp \"$0\" /tmp/lib/ && cp \"$1\" /tmp/ &&"
		" v=/tmp/\"${1##*/}\" && shift && LD_LIBRARY_PATH=/tmp/lib exec \"$v\" \"$@\"",
		lib, NULL,
	};
	/* without a shared libjemalloc (a static build), the executable alone */
	static const char *const vprefix_exe[] = {
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		PRIVATE_TMP " && cp \"$0\" /tmp/ && exec /tmp/\"${0##*/}\" \"$@\"", NULL,
	};
	static const char *const tools[] = { "unshare", "nsenter" };
	struct hcns ns = { .holder = { .pid = -1 } };
	char path[PATH_MAX], hpath[PATH_MAX], why[512], reply[256], vroot[64], dump[96];
	char nocap_dump[96], growth[PATH_MAX], val[64], ns_self[64], ns_v[64], ns_h[64];
	char ents[1024], pidkey[32];
	bool own_lib;
	struct stat st_self, st_v, st_h;
	struct hres r = { 0 };
	struct victim v;
	const char *p;

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		if (!find_in_path(tools[i], path, sizeof(path))) {
			t_skip(false, "%s not found (util-linux)", tools[i]);
			return;
		}
	}
	run_prog(&r, probe, 10);
	if (hres_exit(&r) != 0) {
		t_skip(false, "cannot make a mount namespace with its own /tmp here: %s",
		       hres_desc(&r));
		hres_free(&r);
		return;
	}
	hres_free(&r);
	if (hcns_start(&ns))
		goto out_ns;
	snprintf(path, sizeof(path), "%s%s", ns.root, cfg.heapctl);
	if (access(path, X_OK)) {
		t_skip(false, "%s is hidden under heapctl's own /tmp", cfg.heapctl);
		goto out_ns;
	}
	snprintf(path, sizeof(path), "%s/jemalloc_victim", cfg.victim_dir);
	own_lib = jemalloc_lib(path, lib, sizeof(lib));
	if (!own_lib)
		t_note("no shared libjemalloc (ldd): only the executable is the target's own");
	if (victim_start_wrapped(&v, own_lib ? vprefix : vprefix_exe, "jemalloc_victim",
				 "prof:true,prof_active:false", NULL, why, sizeof(why))) {
		t_fail("%s", why);
		goto out_ns;
	}
	victim_ticker_reset(&v);
	snprintf(vroot, sizeof(vroot), "/proc/%s/root", v.spid);

	/* three mount namespaces, three /tmp: the harness's, the target's, heapctl's */
	snprintf(path, sizeof(path), "%s/tmp", vroot);
	snprintf(hpath, sizeof(hpath), "%s/tmp", ns.root);
	if (!mnt_ns(getpid(), ns_self, sizeof(ns_self)) || !mnt_ns(v.pid, ns_v, sizeof(ns_v)) ||
	    !mnt_ns(ns.holder.pid, ns_h, sizeof(ns_h)) || stat("/tmp", &st_self) ||
	    stat(path, &st_v) || stat(hpath, &st_h)) {
		t_fail("cannot read the namespaces: %s", strerror(errno));
		goto out;
	}
	if (!strcmp(ns_self, ns_v) || !strcmp(ns_self, ns_h) || !strcmp(ns_v, ns_h) ||
	    st_self.st_dev == st_v.st_dev || st_self.st_dev == st_h.st_dev ||
	    st_v.st_dev == st_h.st_dev) {
		t_fail("the mount namespaces or /tmp are shared: harness %s, target %s, heapctl %s",
		       ns_self, ns_v, ns_h);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/tmp/jemalloc_victim", ns.root);
	snprintf(hpath, sizeof(hpath), "%s/tmp/lib", ns.root);
	if (!access(path, F_OK) || !access(hpath, F_OK)) {
		t_fail("the target's executable or libjemalloc is in heapctl's view too");
		goto out;
	}

	/* list reads /proc and the ELF files only */
	snprintf(pidkey, sizeof(pidkey), "{\"pid\":%s,", v.spid);
	if (hcns(&ns, &r, false, "list", "--json", NULL))
		goto out;
	p = strstr(r.out, pidkey);
	if (!p || !strstr(p, "\"allocator\":\"jemalloc\"") ||
	    strstr(p, "\"allocator\":\"jemalloc\"") > strchr(p, '}')) {
		t_fail("list --json has no jemalloc row for pid %s:\n%.600s", v.spid, r.out);
		goto out;
	}
	if (map_files_followed_without_caps(&ns, v.pid))
		t_note("/proc/PID/map_files could be followed without CAP_SYS_ADMIN here: the"
		       " 'no map_files' runs did not test the fallback to /proc/PID/root");
	/* the allocator and its symbols, from the target's side only */
	for (int nocap = 0; nocap < 2; nocap++) {
		if (hcns(&ns, &r, nocap, "info", "-p", v.spid, NULL))
			goto out;
		if (!strstr(r.out, own_lib ? "/tmp/lib/libjemalloc" : "jemalloc")) {
			t_fail("info%s does not name the target's libjemalloc:\n%.400s",
			       nocap ? " (no map_files)" : "", r.out);
			goto out;
		}
	}
	if (hcns(&ns, &r, false, "stats", "-p", v.spid, NULL) ||
	    hcns(&ns, &r, false, "stats", "-p", v.spid, "--json", NULL))
		goto out;
	if (json_valid(r.out, why, sizeof(why)) ||
	    json_get_str(r.out, "allocator", val, sizeof(val)) || strcmp(val, "jemalloc")) {
		t_fail("stats --json: %s\n%.400s", why, r.out);
		goto out;
	}
	if (hcns(&ns, &r, false, "stats", "-p", v.spid, "--format", "prometheus", NULL))
		goto out;
	snprintf(path, sizeof(path), "heapctl_allocated_bytes{pid=\"%s\"", v.spid);
	if (!strstr(r.out, path)) {
		t_fail("stats --format prometheus has no %s:\n%.400s", path, r.out);
		goto out;
	}

	/* jemalloc writes profiles in the target's /tmp; heapctl brings them to its own */
	if (hcns(&ns, &r, false, "prof", "on", "-p", v.spid, NULL) ||
	    victim_ctl(&v, "prof.active", val, sizeof(val)))
		goto out;
	if (strcmp(val, "true")) {
		t_fail("after prof on the target reads prof.active=%s", val);
		goto out;
	}
	if (victim_expect(&v, "leak 8388608 0", "leak ok", reply, sizeof(reply)))
		goto out;
	snprintf(dump, sizeof(dump), "/tmp/heapctl-ns.%s.heap", v.spid);
	if (hcns(&ns, &r, false, "dump", "-p", v.spid, "-o", dump, NULL) ||
	    profile_on_hc_side(&ns, vroot, dump))
		goto out;
	if (hcns(&ns, &r, false, "dump", "-p", v.spid, "-o", "-", NULL))
		goto out;
	if (strncmp(r.out, "heap_v2/", 8)) {
		t_fail("dump -o - printed no heap profile: '%.40s'", r.out);
		goto out;
	}
	snprintf(nocap_dump, sizeof(nocap_dump), "/tmp/heapctl-ns-nocap.%s.heap", v.spid);
	if (hcns(&ns, &r, true, "dump", "-p", v.spid, "-o", nocap_dump, NULL) ||
	    profile_on_hc_side(&ns, vroot, nocap_dump))
		goto out;
	/* the executable's frames are named from the target's side only */
	for (int nocap = 0; nocap < 2; nocap++) {
		if (hcns(&ns, &r, nocap, "report", nocap ? nocap_dump : dump, "-p", v.spid,
			 "--format", "folded", NULL))
			goto out;
		if (!strstr(r.out, "cmd_leak")) {
			t_fail("report%s -p %s does not name cmd_leak, the target's own function:"
			       "\n%.400s\n%.300s", nocap ? " (no map_files)" : "", v.spid, r.out,
			       r.err);
			goto out;
		}
	}
	/* watch's growth profiles go the same way, into a directory on heapctl's side */
	snprintf(path, sizeof(path), "%s/tmp/growth", ns.root);
	if (mkdir(path, 0755)) {
		t_fail("mkdir %s: %s", path, strerror(errno));
		goto out;
	}
	if (hcns(&ns, &r, false, "watch", "-p", v.spid, "--count", "1", "--dump-on-growth", "1G",
		 "--dir", "/tmp/growth", NULL))
		goto out;
	snprintf(growth, sizeof(growth), "/tmp/growth/heapctl.%s.0.heap", v.spid);
	if (profile_on_hc_side(&ns, vroot, growth))
		goto out;
	if (hcns(&ns, &r, false, "leak", "-p", v.spid, "--for", "500ms", "-o", "/tmp/leak.folded",
		 NULL))
		goto out;
	snprintf(path, sizeof(path), "%s/tmp/leak.folded", ns.root);
	if (access(path, R_OK)) {
		t_fail("leak -o /tmp/leak.folded: not on heapctl's side (%s)", strerror(errno));
		goto out;
	}
	if (hcns(&ns, &r, false, "prof", "off", "-p", v.spid, NULL) ||
	    victim_ctl(&v, "prof.active", val, sizeof(val)))
		goto out;
	if (strcmp(val, "false")) {
		t_fail("after prof off the target reads prof.active=%s", val);
		goto out;
	}

	/*
	 * heapctl's sampler across the namespaces: the target dlopen()s it from
	 * its own /proc/self/fd, and the dump comes from its tables to this side
	 */
	if (hcns(&ns, &r, false, "prof", "on", "-p", v.spid, "--sampler", "inject", "--sample-bytes",
		 "64K", NULL) ||
	    victim_expect(&v, "leak 8388608 0", "leak ok", reply, sizeof(reply)))
		goto out;
	if (!strstr(r.out, "heapctl's sampler")) {
		t_fail("prof on --sampler inject in a mount namespace: %.300s", r.out);
		goto out;
	}
	snprintf(dump, sizeof(dump), "/tmp/heapctl-ns-smp.%s.heap", v.spid);
	if (hcns(&ns, &r, false, "dump", "-p", v.spid, "-o", dump, NULL) ||
	    profile_on_hc_side(&ns, vroot, dump) ||
	    hcns(&ns, &r, false, "report", dump, "-p", v.spid, "--format", "folded", NULL))
		goto out;
	if (!strstr(r.out, "cmd_leak")) {
		t_fail("the sampler's profile from another mount namespace does not name cmd_leak:"
		       "\n%.400s", r.out);
		goto out;
	}
	if (hcns(&ns, &r, false, "prof", "off", "-p", v.spid, NULL))
		goto out;

	/* controls */
	if (hcns(&ns, &r, false, "purge", "-p", v.spid, NULL) ||
	    hcns(&ns, &r, false, "get", "-p", v.spid, "opt.narenas", NULL) ||
	    victim_ctl(&v, "opt.narenas", val, sizeof(val)))
		goto out;
	if (strtol(r.out, NULL, 10) != strtol(val, NULL, 10) || !strtol(val, NULL, 10)) {
		t_fail("get opt.narenas printed '%.40s'; the target reads %s", r.out, val);
		goto out;
	}
	if (hcns(&ns, &r, false, "set", "-p", v.spid, "prof.active", "false", NULL))
		goto out;
	if (!strstr(r.out, "prof.active") || victim_ctl(&v, "prof.active", val, sizeof(val)) ||
	    strcmp(val, "false")) {
		t_fail("set prof.active false printed '%.80s'; the target reads %s", r.out, val);
		goto out;
	}

	/* over time, and for the node exporter */
	if (hcns(&ns, &r, false, "watch", "-p", v.spid, "--count", "2", "--every", "100ms", NULL))
		goto out;
	if (count_str(r.out, "\n") != 3) {
		t_fail("watch --count 2 printed %d lines (wanted a header and 2 samples):\n%.400s",
		       count_str(r.out, "\n"), r.out);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/tmp/textfile", ns.root);
	if (mkdir(path, 0755)) {
		t_fail("mkdir %s: %s", path, strerror(errno));
		goto out;
	}
	if (hcns(&ns, &r, false, "watch", "-p", v.spid, "--count", "1", "--textfile",
		 "/tmp/textfile", NULL))
		goto out;
	snprintf(path, sizeof(path), "%s/tmp/textfile/heapctl_%s.prom", ns.root, v.spid);
	{
		char *prom = read_file_str(path);
		char metric[64];

		snprintf(metric, sizeof(metric), "heapctl_allocated_bytes{pid=\"%s\"", v.spid);
		if (!prom || !strstr(prom, metric)) {
			t_fail("--textfile /tmp/textfile: %s %s", path,
			       prom ? "has no heapctl_allocated_bytes" : "is missing");
			free(prom);
			goto out;
		}
		free(prom);
	}
	if (hcns(&ns, &r, false, "maps", "-p", v.spid, NULL))
		goto out;

	if (victim_check(&v, 0))
		goto out;
	snprintf(path, sizeof(path), "%s/tmp", vroot);
	if (!heapctl_entries(path, ents, sizeof(ents))) {
		t_fail("cannot list the target's /tmp (%s): %s", path, strerror(errno));
		goto out;
	}
	if (*ents) {
		t_fail("heapctl left in the target's /tmp: %s", ents);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/tmp", ns.root);
	if (heapctl_entries(path, ents, sizeof(ents)) && *ents)
		t_fail("heapctl's directory was made in its own /tmp, not the target's: %s", ents);
out:
	hres_free(&r);
	victim_stop(&v);
out_ns:
	hcns_stop(&ns);
}

const struct itest t_ns_tests[] = {
	{ "container-mount-ns", test_container_mount_ns, 0 },
	{ NULL, NULL, 0 },
};
