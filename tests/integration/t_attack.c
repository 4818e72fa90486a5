// SPDX-License-Identifier: MIT
/*
 * A hostile target never turns heapctl against the host.
 *
 * heapctl runs as root; attack_victim runs as uid 65534 in a mount
 * namespace and root of its own (pivot_root), and races heapctl with everything it
 * can do to its names and descriptors (see its header).  Root-only
 * canaries sit inside its root (/secret, /rootonly/prof.heap, the
 * directory /rootonly) and outside it on the host (a directory with
 * attack.debug and attack_victim_dl in it, at the very path the
 * target's executable has inside its root, so that its mapped name and
 * its .gnu_debuglink name them).  After each step:
 *  - every canary is byte for byte what it was, each directory holds the
 *    same names, and inotify saw no open, access, change or new entry;
 *  - no canary byte is in heapctl's output (stdout, stderr, -o files);
 *  - heapctl succeeded on the real target, or refused with error: and
 *    hint:, and the target still answers.
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
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "itest.h"

#define NCANARY 8
/* by name: the arm64 lane's LD_LIBRARY_PATH leads to its jemalloc with a profiler */
#define JE_PRELOAD "LD_PRELOAD=libjemalloc.so.2"
#define JE_CONF "prof:true,prof_active:true,lg_prof_sample:12"

struct canary {
	char path[PATH_MAX];
	char *data; /* a file's bytes, or a directory's sorted names */
	bool dir;
};

struct attack {
	char base[256];  /* the test's own directory */
	char root[300];  /* the target's root */
	char host[300];  /* root-only, outside it; its path mirrored inside */
	char exe[360];   /* the target's executable, as it sees it */
	char mark[48];        /* in every canary */
	struct canary c[NCANARY];
	int nc;
	int in; /* inotify */
};

static int serial;

/* A directory's names, sorted, one per line. */
static char *listing(const char *dir)
{
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);
	size_t len = 1;
	char *s;

	if (n < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		len += strlen(v[i]->d_name) + 1;
	s = calloc(1, len);
	for (int i = 0; i < n; i++) {
		if (s) {
			strcat(s, v[i]->d_name);
			strcat(s, "\n");
		}
		free(v[i]);
	}
	free(v);
	return s;
}

static int put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	size_t n = strlen(text);

	if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
		t_fail("create %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int mkdirs(const char *path, mode_t mode)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, mode) < 0 && errno != EEXIST ? -1 : chmod(p, mode);
}

static int copy(const char *from, const char *to, mode_t mode)
{
	struct hres r = { 0 };
	const char *argv[] = { "cp", from, to, NULL };
	int rc;

	run_prog(&r, argv, 30);
	rc = hres_exit(&r) == 0 && chmod(to, mode) == 0 ? 0 : -1;
	if (rc)
		t_fail("cp %s %s: %s", from, to, hres_desc(&r));
	hres_free(&r);
	return rc;
}

static void watch(struct attack *a, const char *path, bool dir)
{
	struct canary *c = &a->c[a->nc++];
	uint32_t mask = dir ? IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
				      IN_DELETE_SELF | IN_MOVE_SELF :
			      IN_OPEN | IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE |
				      IN_DELETE_SELF | IN_MOVE_SELF;

	snprintf(c->path, sizeof(c->path), "%s", path);
	c->dir = dir;
	c->data = dir ? listing(path) : read_file_str(path);
	if (!c->data || inotify_add_watch(a->in, path, mask) < 0)
		t_fail("canary %s: %s", path, strerror(errno));
}

/*
 * The target's root and the canaries.  0, or -1 having t_fail()ed or
 * t_skip()ped.
 */
static int setup(struct attack *a)
{
	char p[PATH_MAX + 64], q[PATH_MAX + 64], text[256];
	uint8_t rnd[8];

	memset(a, 0, sizeof(*a));
	a->in = -1;
	if (geteuid() != 0) {
		t_skip(false, "the hostile target is made by root (a mount namespace, chroot, "
			      "uid 65534)");
		return -1;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return t_fail("getrandom: %s", strerror(errno)), -1;
	snprintf(a->mark, sizeof(a->mark), "CANARY-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	snprintf(a->base, sizeof(a->base), "%.200s/attack-%d", cfg.tmpdir, serial++);
	snprintf(a->root, sizeof(a->root), "%s/root", a->base);
	snprintf(a->host, sizeof(a->host), "%s/host", a->base);
	if (mkdirs(a->base, 0755) || mkdirs(a->root, 0755) || mkdirs(a->host, 0700))
		return t_fail("mkdir %s: %s", a->base, strerror(errno)), -1;
	snprintf(q, sizeof(q), "%s/proc", a->root);
	if (mkdirs(q, 0555))
		return t_fail("mkdir in %s: %s", a->root, strerror(errno)), -1;
	snprintf(p, sizeof(p), "%s/oldroot", a->root);
	if (mkdirs(p, 0755))
		return t_fail("mkdir in %s: %s", a->root, strerror(errno)), -1;
	snprintf(p, sizeof(p), "%s/tmp", a->root);
	if (mkdirs(p, 01777))
		return t_fail("mkdir %s: %s", p, strerror(errno)), -1;
	/*
	 * The system's directories as the host has them: a link stays a link
	 * (Debian's merged /usr), a directory is bound there by the target
	 * (the arm64 lane's image keeps /lib apart, and its jemalloc in /opt)
	 */
	for (const char *const *l = (const char *const[]){ "usr", "lib", "lib64", "bin", "opt",
							   NULL };
	     *l; l++) {
		char host[64], link[256];
		struct stat st;
		ssize_t n;

		snprintf(host, sizeof(host), "/%s", *l);
		snprintf(p, sizeof(p), "%s/%s", a->root, *l);
		if (lstat(host, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(host, link, sizeof(link) - 1);
			if (n <= 0 || (link[n] = '\0', symlink(link, p) < 0))
				return t_fail("symlink %s: %s", p, strerror(errno)), -1;
		} else if (S_ISDIR(st.st_mode) && mkdirs(p, 0755)) {
			return t_fail("mkdir %s: %s", p, strerror(errno)), -1;
		}
	}
	snprintf(text, sizeof(text), "%s secret: root only\n", a->mark);
	snprintf(p, sizeof(p), "%s/secret", a->root);
	if (put(p, text, 0600))
		return -1;
	snprintf(p, sizeof(p), "%s/rootonly", a->root);
	if (mkdirs(p, 0700))
		return t_fail("mkdir %s: %s", p, strerror(errno)), -1;
	/* shaped like a profile: a heapctl that read it would hand it on */
	snprintf(text, sizeof(text), "heap_v2/524288\n  t*: 1: 64 [0: 0]\n# %s\n", a->mark);
	snprintf(p, sizeof(p), "%s/rootonly/prof.heap", a->root);
	if (put(p, text, 0600))
		return -1;
	/* on the host, at the path the target's executable has inside its root */
	snprintf(text, sizeof(text), "%s debug file of the host: root only\n", a->mark);
	snprintf(p, sizeof(p), "%s/attack.debug", a->host);
	if (put(p, text, 0600))
		return -1;
	snprintf(text, sizeof(text), "%s executable of the host: root only\n", a->mark);
	snprintf(p, sizeof(p), "%s/attack_victim_dl", a->host);
	if (put(p, text, 0600))
		return -1;
	snprintf(p, sizeof(p), "%s%s", a->root, a->host);
	if (mkdirs(p, 0755))
		return t_fail("mkdir %s: %s", p, strerror(errno)), -1;
	for (const char *const *e = (const char *const[]){ "attack_victim", "attack_victim_dl", NULL };
	     *e; e++) {
		snprintf(p, sizeof(p), "%s/%s", cfg.victim_dir, *e);
		snprintf(q, sizeof(q), "%s%s/%s", a->root, a->host, *e);
		if (copy(p, q, 0755))
			return -1;
	}
	a->in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (a->in < 0)
		return t_fail("inotify_init1: %s", strerror(errno)), -1;
	return 0;
}

/* Watch the canaries, from now on (the victim is in place). */
static void arm(struct attack *a)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/secret", a->root);
	watch(a, p, false);
	snprintf(p, sizeof(p), "%s/rootonly/prof.heap", a->root);
	watch(a, p, false);
	snprintf(p, sizeof(p), "%s/rootonly", a->root);
	watch(a, p, true);
	snprintf(p, sizeof(p), "%s/attack.debug", a->host);
	watch(a, p, false);
	snprintf(p, sizeof(p), "%s/attack_victim_dl", a->host);
	watch(a, p, false);
	watch(a, a->host, true);
	watch(a, a->root, true);
}

static const char *canary_of(const struct attack *a, int wd)
{
	/* watch descriptors are handed out in order, from 1 */
	return wd >= 1 && wd <= a->nc ? a->c[wd - 1].path : "?";
}

/* Every canary untouched since arm(); 0, or -1 having t_fail()ed. */
static int canaries_intact(struct attack *a, const char *what)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	int rc = 0;

	while ((n = read(a->in, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_IGNORED)
				continue;
			if (!rc)
				t_fail("%s: a root-only canary was touched: %s%s%s, inotify mask 0x%x",
				       what, canary_of(a, ev->wd), ev->len ? "/" : "",
				       ev->len ? ev->name : "", ev->mask);
			rc = -1;
		}
	}
	for (int i = 0; i < a->nc; i++) {
		struct canary *c = &a->c[i];
		char *now = c->dir ? listing(c->path) : read_file_str(c->path);

		if (!now || strcmp(now, c->data)) {
			if (!rc)
				t_fail("%s: the canary %s changed: was '%.80s', now '%.80s'", what,
				       c->path, c->data, now ? now : strerror(errno));
			rc = -1;
		}
		free(now);
	}
	/* the comparison's own reads */
	while (read(a->in, buf, sizeof(buf)) > 0)
		;
	return rc;
}

/* No canary byte in what heapctl printed or wrote (file: or NULL). */
static int no_leak(const struct attack *a, const struct hres *r, const char *file,
		   const char *what)
{
	char *f = file ? read_file_str(file) : NULL;
	int rc = 0;

	if (strstr(r->out, a->mark) || strstr(r->err, a->mark) || (f && strstr(f, a->mark))) {
		t_fail("%s: a root-only canary's bytes are in heapctl's %s", what,
		       f && strstr(f, a->mark) ? file : "output");
		rc = -1;
	}
	free(f);
	return rc;
}

/* Exit 0, or 1 with error: and hint:.  The exit code, or -1 having t_fail()ed. */
static int done_or_refused(const struct hres *r, const char *what)
{
	if (r->timed_out || hres_exit(r) < 0) {
		t_fail("%s: %s", what, hres_desc(r));
		return -1;
	}
	if (hres_exit(r) == 0)
		return 0;
	if (hres_exit(r) == 1 && strstr(r->err, "error:") && strstr(r->err, "hint:"))
		return 1;
	t_fail("%s: %s (wanted exit 0, or 1 with a hint):\n%.600s", what, hres_desc(r), r->err);
	return -1;
}

/* exe: attack_victim, or attack_victim_dl (stripped, with the debug link) */
static int start(struct attack *a, struct victim *v, const char *mode, bool jemalloc,
		 const char *exe)
{
	char why[512], path[PATH_MAX];
	const char *argv[] = { path, "3", "4", "5", a->root, a->exe, mode, NULL };

	snprintf(a->exe, sizeof(a->exe), "%s/%s", a->host, exe);

	snprintf(path, sizeof(path), "%s/attack_victim", cfg.victim_dir);
	if (victim_start_argv(v, argv, jemalloc ? JE_CONF : NULL, jemalloc ? JE_PRELOAD : NULL, 0,
			      why, sizeof(why))) {
		t_fail("attack_victim %s: %s", mode, why);
		return -1;
	}
	arm(a);
	return 0;
}

static unsigned long swaps(struct victim *v)
{
	char reply[128];

	if (victim_cmd(v, "swaps", reply, sizeof(reply), 10000) || strncmp(reply, "swaps ", 6))
		return 0;
	return strtoul(reply + 6, NULL, 10);
}

static int alive(struct victim *v, const char *what)
{
	char reply[64];

	if (victim_cmd(v, "ping", reply, sizeof(reply), 10000) || strcmp(reply, "pong")) {
		t_fail("%s: the target does not answer (%s)", what, reply);
		return -1;
	}
	return 0;
}

/* One heapctl step against the target, and everything checked after it. */
static int step(struct attack *a, struct victim *v, struct hres *r, const char *out,
		const char *what, const char *const args[])
{
	int e;

	hres_free(r);
	hc_runv(r, NULL, args);
	e = done_or_refused(r, what);
	if (e < 0 || canaries_intact(a, what) || no_leak(a, r, out, what) || alive(v, what))
		return -1;
	return e;
}

static void finish(struct attack *a, struct victim *v, struct hres *r)
{
	char ents[512] = "", p[PATH_MAX + 16];
	DIR *d;
	struct dirent *de;

	hres_free(r);
	if (v->pid > 0) {
		/*
		 * No directory of heapctl's left in the target's /tmp (the
		 * target's own symlink in its place is the target's), and the
		 * ones the target moved away emptied
		 */
		snprintf(p, sizeof(p), "%s/tmp", a->root);
		d = opendir(p);
		while (d && (de = readdir(d))) {
			struct stat st;
			char *in;

			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
			if (!strncmp(de->d_name, "moved-", 6)) {
				snprintf(p, sizeof(p), "%s/tmp/%s", a->root, de->d_name);
				in = listing(p);
				if (in && strcmp(in, ".\n..\n") &&
				    strlen(ents) + strlen(de->d_name) + 2 < sizeof(ents))
					strcat(strcat(ents, " "), de->d_name);
				free(in);
			} else if (!strncmp(de->d_name, ".heapctl-", 9) &&
				   strlen(ents) + strlen(de->d_name) + 2 < sizeof(ents)) {
				strcat(strcat(ents, " "), de->d_name);
			}
		}
		if (d)
			closedir(d);
		if (ents[0] && !t_failed())
			t_fail("heapctl left in the target's /tmp:%s", ents);
		victim_stop(v);
	}
	if (a->in >= 0)
		close(a->in);
	a->in = -1;
	for (int i = 0; i < a->nc; i++)
		free(a->c[i].data);
	a->nc = 0;
}

/*
 * prof on with heapctl's sampler: a thread of the target dup2()s an O_PATH
 * descriptor of /secret over the sampler's memfd the moment it appears.
 * heapctl once opened /proc/PID/fd/N for writing as root and wrote the
 * sampler over /secret.
 */
static void test_memfd_swap(void)
{
	struct attack a;
	struct victim v = { .pid = -1 };
	struct hres r = { 0 };
	unsigned long s = 0;

	if (setup(&a) || start(&a, &v, "memfd", false, "attack_victim"))
		goto out;
	for (int i = 0; i < 5 && !s; i++) {
		const char *const on[] = { "prof", "on", "-p", v.spid, "--sampler", "inject", NULL };
		const char *const off[] = { "prof", "off", "-p", v.spid, NULL };

		if (step(&a, &v, &r, NULL, "prof on (memfd swapped)", on) < 0)
			goto out;
		s = swaps(&v);
		if (s && hres_exit(&r) == 0 && !strstr(r.out, "heapctl's sampler")) {
			t_fail("prof on exited 0 without the sampler after the memfd was swapped:"
			       "\n%.400s", r.out);
			goto out;
		}
		if (step(&a, &v, &r, NULL, "prof off", off) < 0)
			goto out;
	}
	if (!s)
		t_note("the target never struck in 5 tries: heapctl took the memfd first");
out:
	finish(&a, &v, &r);
}

/*
 * prof on with memfd_create refused (seccomp): the sampler comes from a
 * file in heapctl's private directory, which the target swaps for a
 * symlink to /rootonly as soon as it appears.  heapctl once created the
 * file there by name, as root.
 */
static void test_file_fallback_swap(void)
{
	const char *const on[] = { "prof", "on", "-p", NULL, "--sampler", "inject", NULL };
	struct attack a;
	struct victim v = { .pid = -1 };
	struct hres r = { 0 };
	const char *args[7];

	if (setup(&a) || start(&a, &v, "nomemfd,early", false, "attack_victim"))
		goto out;
	memcpy(args, on, sizeof(on));
	args[3] = v.spid;
	/* a race: the directory is swapped sooner or later after its mkdir */
	for (int i = 0; i < 3; i++) {
		const char *const off[] = { "prof", "off", "-p", v.spid, NULL };

		if (step(&a, &v, &r, NULL, "prof on (file fallback, directory swapped)", args) < 0 ||
		    (hres_exit(&r) == 0 &&
		     step(&a, &v, &r, NULL, "prof off (file fallback)", off) < 0))
			goto out;
	}
	if (!swaps(&v))
		t_note("the target never swapped the directory");
out:
	finish(&a, &v, &r);
}

/*
 * dump of jemalloc's profile, which the target replaces once written: its
 * directory by a symlink to /rootonly (whose prof.heap is a root-only
 * file shaped like a profile: absolute, relative, or through the magic
 * /proc/1/root), or the file by a FIFO, a symlink, a hard link, a 5 GiB
 * sparse file, a unix socket or a file of its own that is no profile.  heapctl once read /rootonly/prof.heap as
 * root and wrote it to -o.
 */
static void test_dump_swap(void)
{
	static const char *const modes[] = { "late",	 "late,rel", "late,proc", "early",
					     "early,proc", "fifo",	"symlink",   "hardlink",
					     "huge",	 "socket",   "garbage" };
	struct attack a;
	struct victim v = { .pid = -1 };
	struct hres r = { 0 };
	char out[PATH_MAX], what[128];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		unsigned long s;
		int e;

		if (setup(&a) || start(&a, &v, modes[i], true, "attack_victim"))
			goto out;
		snprintf(out, sizeof(out), "%s/out.heap", a.base);
		snprintf(what, sizeof(what), "dump (%s)", modes[i]);
		/*
		 * The target's inotify watch on the new directory may come after
		 * the profile, on a loaded machine: then the dump is clean, and
		 * another is made until it strikes.
		 */
		s = 0;
		for (int k = 0; k < 8 && !s; k++) {
			e = step(&a, &v, &r, out, what,
				 (const char *const[]){ "dump", "-p", v.spid, "-o", out, NULL });
			if (e < 0)
				goto out;
			s = swaps(&v);
		}
		if (!s) {
			t_fail("%s: the target never struck in 8 dumps", what);
			goto out;
		}
		/*
		 * The directory renamed away still holds the real profile; the rest is
		 * refused.  But a planted file the target made before jemalloc opened
		 * the name (huge, garbage) is truncated and written over by jemalloc's
		 * own creat(): what comes back is then the target's real profile,
		 * which the checks below hold to (a profile, and not 4 GiB).
		 */
		if (strncmp(modes[i], "late", 4) && strncmp(modes[i], "early", 5) && e == 0 &&
		    strcmp(modes[i], "huge") && strcmp(modes[i], "garbage")) {
			t_fail("%s: exit 0 with a profile the target replaced:\n%.300s", what,
			       r.err);
			goto out;
		}
		if (e == 0 && !file_starts_with(out, "heap_v2/", what, sizeof(what))) {
			t_fail("dump (%s) exited 0 but wrote no profile: %s", modes[i], what);
			goto out;
		}
		if (e == 0) {
			struct stat st;

			if (!stat(out, &st) && st.st_size >= (4ll << 30)) {
				t_fail("dump (%s): %s is %lld bytes: the target's planted file came back",
				       modes[i], out, (long long)st.st_size);
				goto out;
			}
			if (stat(out, &st) || (st.st_mode & 077)) {
				t_fail("dump (%s): %s is mode %o: a profile of another user's process "
				       "must not be readable by others", modes[i], out,
				       (unsigned)(st.st_mode & 07777));
				goto out;
			}
		}
		finish(&a, &v, &r);
		v.pid = -1;
	}
out:
	finish(&a, &v, &r);
}

/*
 * The target's executable has, inside its root, the path of a root-only
 * host directory, and its .gnu_debuglink names a root-only host file
 * there.  Nothing heapctl does may open them on the host: heapctl once
 * looked up a debug link next to the mapped name as a host path.
 */
static void test_names(void)
{
	struct attack a;
	struct victim v = { .pid = -1 };
	struct hres r = { 0 };
	char out[PATH_MAX], leak[PATH_MAX];

	if (setup(&a) || start(&a, &v, "none", false, "attack_victim_dl"))
		goto out;
	snprintf(out, sizeof(out), "%s/names.heap", a.base);
	snprintf(leak, sizeof(leak), "%s/names.folded", a.base);
	{
		const char *const steps[][9] = {
			{ "info", "-p", v.spid, NULL },
			{ "stats", "--full", "-p", v.spid, NULL },
			{ "prof", "on", "-p", v.spid, "--sampler", "inject", "--sample-bytes", "4K",
			  NULL },
			{ "dump", "-p", v.spid, "-o", out, NULL },
			{ "report", out, "-p", v.spid, "--format", "folded", NULL },
			{ "leak", "-p", v.spid, "--for", "300ms", "-o", leak, NULL },
			{ "prof", "off", "-p", v.spid, NULL },
		};

		char reply[64];

		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			/* frames of the executable in the profile: its symbols are wanted */
			if (!strcmp(steps[i][0], "dump") &&
			    victim_expect(&v, "alloc 4194304", "alloc ok", reply, sizeof(reply)))
				goto out;
			if (step(&a, &v, &r,
				 !strcmp(steps[i][0], "dump") ? out :
				 !strcmp(steps[i][0], "leak") ? leak : NULL, steps[i][0], steps[i]) < 0)
				goto out;
		}
	}
	/*
	 * The executable is refused (a sign of jemalloc, no symbols), so its
	 * frames come in a profile made here, from its maps: report -p must
	 * look for its file and debug link in its root only.
	 */
	{
		char maps[64], *m, *line, prof[PATH_MAX], *text = NULL;
		unsigned long lo = 0;
		const char *args[] = { "report", prof, "-p", v.spid, "--format", "folded", NULL };
		FILE *f;

		snprintf(maps, sizeof(maps), "/proc/%s/maps", v.spid);
		m = read_file_str(maps);
		for (line = m; line && *line && !lo; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
			if (strstr(line, " r-xp ") && strstr(line, "/attack_victim_dl") &&
			    strstr(line, "/attack_victim_dl") < strchr(line, '\n'))
				lo = strtoul(line, NULL, 16);
		snprintf(prof, sizeof(prof), "%s/crafted.heap", a.base);
		f = fopen(prof, "we");
		if (!m || !lo || !f ||
		    asprintf(&text, "heap_v2/524288\n  t*: 1: 4096 [0: 0]\n@ 0x%lx\n"
			     "  t*: 1: 4096 [0: 0]\n\nMAPPED_LIBRARIES:\n%s", lo + 0x40, m) < 0 ||
		    fputs(text, f) < 0) {
			t_fail("cannot make a profile of %s's executable: %s", maps, strerror(errno));
			if (f)
				fclose(f);
			free(m);
			free(text);
			goto out;
		}
		fclose(f);
		free(m);
		free(text);
		if (step(&a, &v, &r, NULL, "report -p (the executable's frames)", args) < 0)
			goto out;
		if (!strstr(r.out, "attack_victim_dl"))
			t_fail("report -p did not name the executable's frame:\n%.300s\n%.300s", r.out,
			       r.err);
	}
out:
	finish(&a, &v, &r);
}

/*
 * -o names a file in a directory of the target's user, where that user
 * put a link to a root-only host file (or a FIFO) in advance.  The
 * kernel's protected_symlinks guards only sticky, world-writable
 * directories: heapctl once truncated the link's target as root.
 */
static void test_output_link(void)
{
	struct attack a;
	struct victim v = { .pid = -1 };
	struct hres r = { 0 };
	char dir[PATH_MAX], out[PATH_MAX + 16], to[PATH_MAX + 16];
	pid_t pid;
	int st;

	if (setup(&a) || start(&a, &v, "none", true, "attack_victim"))
		goto out;
	snprintf(dir, sizeof(dir), "%s/theirs", a.base);
	snprintf(out, sizeof(out), "%s/out.heap", dir);
	snprintf(to, sizeof(to), "%s/attack.debug", a.host);
	if (mkdir(dir, 0755) || chown(dir, 65534, 65534)) {
		t_fail("mkdir %s: %s", dir, strerror(errno));
		goto out;
	}
	for (int k = 0; k < 2; k++) {
		const char *what = k ? "dump -o (their FIFO)" : "dump -o (their link)";

		/* made by uid 65534 itself */
		pid = fork();
		if (pid == 0) {
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(1);
			unlink(out);
			_exit(k ? mkfifo(out, 0666) != 0 : symlink(to, out) != 0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			t_fail("uid 65534 cannot make %s", out);
			goto out;
		}
		if (step(&a, &v, &r, NULL, what,
			 (const char *const[]){ "dump", "-p", v.spid, "-o", out, NULL }) < 0)
			goto out;
		if (hres_exit(&r) == 0) {
			t_fail("%s: heapctl wrote through it:\n%.300s", what, r.err);
			goto out;
		}
	}
out:
	finish(&a, &v, &r);
}

const struct itest t_attack_tests[] = {
	{ "attack-memfd-swap", test_memfd_swap, 0 },
	{ "attack-file-fallback-swap", test_file_fallback_swap, 0 },
	{ "attack-dump-swap", test_dump_swap, 0 },
	{ "attack-names", test_names, 0 },
	{ "attack-output-link", test_output_link, 0 },
	{ NULL, NULL, 0 },
};
