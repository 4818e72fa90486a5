// SPDX-License-Identifier: MIT
/*
 * attack_victim: a hostile target for heapctl's adversarial tests
 * (tests/integration/t_attack.c).  It races heapctl, as a compromised
 * service could, to make heapctl (root) read, write, create or remove
 * files the service itself cannot touch.
 *
 * Usage: attack_victim READY CTL REPLY ROOT EXE MODE
 *
 * Started as root, it first shuts itself in: a private mount namespace,
 * /usr (and /lib, /opt... where ROOT has a directory for them) bound and a
 * fresh /proc in ROOT, pivot_root(ROOT) (or, out of an initramfs, ROOT
 * moved over /), uid and gid 65534
 * with no groups, then execs EXE (its own copy, a path inside ROOT) with
 * ROOT "-".  ROOT holds root-only canaries heapctl must never touch:
 * /secret (0600) and /rootonly (0700) with /rootonly/prof.heap (0600).
 *
 * MODE: comma-separated racers, each in a thread of its own:
 *   memfd      dup2() an O_PATH descriptor of /secret over the fd of
 *              heapctl's sampler memfd, the moment it appears
 *   nomemfd    a seccomp filter fails memfd_create (EPERM): the sampler
 *              must come from a file in heapctl's private directory
 *   early      when heapctl's private directory appears in /tmp, rename
 *              it away and put a symlink to /rootonly in its place
 *   late       the same, once the allocator has written prof.heap in it
 *   rel, proc  with early or late: the symlink is ../rootonly (relative),
 *              or /proc/1/root/rootonly (a magic link to the host's root)
 *   fifo, symlink, hardlink, huge, socket, garbage
 *              once prof.heap is written, replace it with a FIFO, a
 *              symlink to /secret, a hard link (to /secret if the kernel
 *              allows it, else to a file of its own), a sparse 5 GiB
 *              file, a bound unix socket, or a file of its own that is no
 *              profile
 *   none       no racer (the executable's own name and debug link are
 *              the attack: see t_attack.c)
 *
 * Commands (one reply line each):
 *   ping       pong
 *   swaps      swaps N: how many times a racer struck
 *   alloc N    alloc ok: N bytes kept, in 4 KiB blocks, from its own code
 *   quit       bye, then exit(0); EOF on CTL also exits
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "vcommon.h"

#define NOBODY 65534

static unsigned long swaps;
static char mode[256];
static int secret_path = -1; /* O_PATH /secret: needs no read permission */

static bool has(const char *what)
{
	char buf[256], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", mode);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, what))
			return true;
	return false;
}

static void struck(void)
{
	__atomic_add_fetch(&swaps, 1, __ATOMIC_RELAXED);
}

/* Mount namespace, /usr and /proc in root, chroot, uid 65534, exec exe. */
static void shut_in(char **argv)
{
	const char *root = argv[4], *exe = argv[5];
	char p[PATH_MAX];
	char *nargv[] = { argv[0], argv[1], argv[2], argv[3], (char *)"-", (char *)"-", argv[6],
			  NULL };

	if (unshare(CLONE_NEWNS) < 0)
		vdie("unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		vdie("make / private");
	/*
	 * A root of its own, as a container's: /proc/PID/maps then names its
	 * files as it sees them (/tmp/...), not by the host's path to them
	 */
	if (mount(root, root, NULL, MS_BIND | MS_REC, NULL) < 0)
		vdie("bind the new root");
	/* the system's directories, where ROOT has a directory for them (not a link) */
	for (const char *const *d = (const char *const[]){ "usr", "lib", "lib64", "bin", "opt",
							   NULL };
	     *d; d++) {
		struct stat in, out;
		char host[64];

		snprintf(p, sizeof(p), "%s/%s", root, *d);
		snprintf(host, sizeof(host), "/%s", *d);
		if (lstat(p, &in) == 0 && S_ISDIR(in.st_mode) && lstat(host, &out) == 0 &&
		    S_ISDIR(out.st_mode) && mount(host, p, NULL, MS_BIND | MS_REC, NULL) < 0)
			vdie("bind a system directory");
	}
	snprintf(p, sizeof(p), "%s/proc", root);
	if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		vdie("mount /proc");
	if (chdir(root) < 0)
		vdie("chdir to the new root");
	if (syscall(SYS_pivot_root, ".", "oldroot") == 0) {
		if (umount2("/oldroot", MNT_DETACH) < 0)
			vdie("umount the old root");
	} else if (errno != EINVAL || mount(".", "/", NULL, MS_MOVE, NULL) < 0) {
		/* an initramfs cannot be pivoted out of: the new root moved over it instead */
		vdie("pivot_root");
	}
	if (chroot(".") < 0 || chdir("/") < 0)
		vdie("chroot");
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0)
		vdie("become uid 65534");
	execv(exe, nargv);
	vdie("exec in the new root");
}

/* memfd_create fails with EPERM; everything else is allowed. */
static void no_memfd(void)
{
#if defined(__x86_64__)
	const unsigned int arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned int arch = AUDIT_ARCH_AARCH64;
#endif
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		vdie("seccomp");
}

/*
 * The sampler's memfd: the lowest free fd is where memfd_create() puts it,
 * and nothing else makes fds here.  fcntl() and fstat() are fast enough
 * to strike within a microsecond of its return, long before heapctl,
 * woken by the thread's stop, can use it.
 */
static void *memfd_racer(void *arg)
{
	int lo = *(int *)arg;
	struct stat sec, st;

	if (fstat(secret_path, &sec) < 0)
		vdie("fstat /secret");
	for (;;) {
		if (fcntl(lo, F_GETFD) < 0 || fstat(lo, &st) < 0 ||
		    (st.st_dev == sec.st_dev && st.st_ino == sec.st_ino))
			continue;
		if (dup2(secret_path, lo) == lo)
			struck();
	}
	return NULL;
}

/* Replace /tmp/DIR/prof.heap, just written, the way MODE says. */
static void swap_profile(const char *dir)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "/tmp/%s/prof.heap", dir);
	if (unlink(p) < 0)
		return;
	if (has("fifo")) {
		if (mkfifo(p, 0600) == 0)
			struck();
	} else if (has("symlink")) {
		if (symlink("/secret", p) == 0)
			struck();
	} else if (has("hardlink")) {
		/* protected_hardlinks refuses /secret: then a file of its own, with two links */
		if (link("/secret", p) == 0 || link("/tmp/own", p) == 0)
			struck();
	} else if (has("socket")) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", p);
		if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			struck(); /* the fd stays open: the socket lives on */
	} else if (has("garbage")) {
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0 && write(fd, "not a profile\n", 14) == 14)
			struck();
		if (fd >= 0)
			close(fd);
	} else if (has("huge")) {
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, 5ll << 30) == 0)
			struck();
		if (fd >= 0)
			close(fd);
	}
}

/* Rename /tmp/DIR away and put a symlink to /rootonly in its place. */
static void swap_dir(const char *dir)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "/tmp/%s", dir);
	snprintf(to, sizeof(to), "/tmp/moved-%lu-%s", swaps, dir);
	const char *link = has("rel") ? "../rootonly" :
			   has("proc") ? "/proc/1/root/rootonly" : "/rootonly";

	if (rename(from, to) == 0 && symlink(link, from) == 0)
		struck();
}

/* heapctl's private directories in /tmp, and the files made in them. */
static void *dir_racer(void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int in = inotify_init1(IN_CLOEXEC), wd_tmp, wd_dir = -1;
	char dir[NAME_MAX + 1] = "";

	(void)arg;
	if (in < 0 || (wd_tmp = inotify_add_watch(in, "/tmp", IN_CREATE)) < 0)
		vdie("inotify /tmp");
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		for (char *p = buf; n > 0 && p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->wd == wd_tmp && (ev->mask & IN_ISDIR) && ev->len &&
			    !strncmp(ev->name, ".heapctl-", 9)) {
				char path[PATH_MAX];

				snprintf(dir, sizeof(dir), "%s", ev->name);
				if (has("early")) {
					swap_dir(dir);
					continue;
				}
				snprintf(path, sizeof(path), "/tmp/%s", dir);
				if (wd_dir >= 0)
					inotify_rm_watch(in, wd_dir);
				wd_dir = inotify_add_watch(in, path, IN_CLOSE_WRITE);
			} else if (ev->wd == wd_dir && (ev->mask & IN_CLOSE_WRITE) && ev->len &&
				   !strcmp(ev->name, "prof.heap")) {
				if (has("late"))
					swap_dir(dir);
				else
					swap_profile(dir);
				inotify_rm_watch(in, wd_dir);
				wd_dir = -1;
			}
		}
	}
	return NULL;
}

#ifdef ATTACK_SIGN
/*
 * attack_victim_dl: a sign of jemalloc (evidence.c) in a stripped
 * executable, so heapctl looks for its symbols in its debug file.
 */
__attribute__((used)) static const char sign[] = "<jemalloc>: attack_victim_dl";
#endif

/* Frames of the executable's own in a profile: its debug link is then wanted. */
__attribute__((noinline)) static void *attack_alloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 0x5a, n);
	return p;
}

int main(int argc, char **argv)
{
	static struct vline l;
	static int lo;
	unsigned long eintr = 0;
	struct vfds f;
	pthread_t th;
	char line[256];

	if (argc != 7) {
		fprintf(stderr, "usage: %s READY CTL REPLY ROOT EXE MODE\n", argv[0]);
		return 2;
	}
	vfds_get(&f, argc, argv);
	if (strcmp(argv[4], "-"))
		shut_in(argv);
	snprintf(mode, sizeof(mode), "%s", argv[6]);
	vallow_ptrace();
	secret_path = open("/secret", O_PATH | O_CLOEXEC);
	if (secret_path < 0)
		vdie("open /secret O_PATH");
	if (has("hardlink")) {
		int fd = open("/tmp/own", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || write(fd, "its own\n", 8) != 8)
			vdie("/tmp/own");
		close(fd);
	}
	if (has("nomemfd"))
		no_memfd();
	if (has("memfd")) {
		/* the lowest free fd now is where the next memfd_create() lands */
		lo = dup(0);
		if (lo < 0)
			vdie("dup");
		close(lo);
		if (pthread_create(&th, NULL, memfd_racer, &lo))
			vdie("pthread_create");
	}
	if (has("early") || has("late") || has("fifo") || has("symlink") || has("hardlink") ||
	    has("huge") || has("socket") || has("garbage")) {
		if (pthread_create(&th, NULL, dir_racer, NULL))
			vdie("pthread_create");
	}
	if (vwrite_all(f.ready, "R", 1))
		vdie("ready");
	for (;;) {
		ssize_t n = vline_read(&l, f.ctl, line, sizeof(line), &eintr);

		if (n < 0 || !strcmp(line, "quit")) {
			if (n >= 0)
				vreply(f.reply, "bye");
			return 0;
		}
		if (!strcmp(line, "ping"))
			vreply(f.reply, "pong");
		else if (!strncmp(line, "alloc ", 6)) {
			for (long left = atol(line + 6); left > 0; left -= 4096)
				if (!attack_alloc(4096))
					break;
			vreply(f.reply, "alloc ok");
		} else if (!strcmp(line, "swaps"))
			vreply(f.reply, "swaps %lu", __atomic_load_n(&swaps, __ATOMIC_RELAXED));
		else
			vreply(f.reply, "unknown %s", line);
	}
}
