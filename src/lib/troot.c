// SPDX-License-Identifier: MIT
/*
 * heapctl usually runs as root against a less trusted process.  Paths
 * below /proc/PID/root are resolved by the kernel with RESOLVE_IN_ROOT, so
 * an absolute symlink the target planted ("/tmp/x -> /etc/shadow") stays
 * inside the target's root instead of escaping to heapctl's, and the file
 * fetched back must be a regular file of bounded size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "log.h"
#include "procfs.h"
#include "troot.h"

static int root_fd(pid_t pid)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/root", pid);
	fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* the leader exited: a live thread's root is the process's root */
		char task[64];
		DIR *d;
		struct dirent *de;

		snprintf(task, sizeof(task), "/proc/%d/task", pid);
		d = opendir(task);
		while (d && fd < 0 && (de = readdir(d))) {
			char tp[128];
			int tid = atoi(de->d_name);

			if (tid <= 0)
				continue;
			snprintf(tp, sizeof(tp), "/proc/%d/task/%d/root", pid, tid);
			fd = open(tp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
		if (d)
			closedir(d);
	}
	return fd;
}

/* openat2 confined to the target's root; plain openat on kernels before 5.6. */
static int open_in(int root, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root, path, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(root, path[0] == '/' ? path + 1 : path, flags | O_CLOEXEC, mode);
	return (int)fd;
}

int troot_open(pid_t pid, const char *path, int flags)
{
	int root = root_fd(pid), fd, e;

	if (root < 0)
		return -1;
	fd = open_in(root, path, flags, 0);
	e = errno;
	close(root);
	errno = e;
	return fd;
}

int troot_create(pid_t pid, const char *path, mode_t mode)
{
	int root = root_fd(pid), fd, e;

	if (root < 0)
		return -1;
	fd = open_in(root, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	e = errno;
	close(root);
	errno = e;
	return fd;
}

static void fs_ids(pid_t pid, uid_t *uid, gid_t *gid)
{
	struct procfs_status st;
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	procfs_status(p, &st); /* -1 ids if it cannot be read: chown then changes nothing */
	*uid = st.fsuid;
	*gid = st.fsgid;
}

/*
 * Empty and remove parent/name, never following a link: unlinkat() does not
 * follow one, and the directory is opened with O_NOFOLLOW.  What the target
 * may have put there itself (a subdirectory) is left, and so is the name.
 * Returns 0, or -1 with errno (ENOTEMPTY: an entry came in meanwhile).
 */
static int rm_private(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd >= 0) {
		d = fdopendir(fd);
		if (!d) {
			close(fd);
		} else {
			while ((de = readdir(d)))
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					unlinkat(dirfd(d), de->d_name, 0);
			closedir(d);
		}
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * The directory must go even if heapctl is SIGKILLed with it in place.  A
 * guardian process, detached (double fork, own session: a signal to
 * heapctl's process group does not reach it), waits for the end of a pipe
 * whose only writer is heapctl, then removes it: after heapctl's removal
 * that finds nothing, after heapctl's death it is the cleanup.  It keeps
 * only the pipe and the parent directory: another fd of heapctl's (its
 * per-target lock above all) must not outlive heapctl in it.  Returns the
 * pipe's write end, or -1 (then only heapctl's own removal is left).  It
 * is made before the directory, whose 96 random bits no one else can have
 * taken, so that no moment of heapctl's life leaves one unguarded.
 */
/* the guardian's passes over a directory that keeps filling: 60 s in all */
#define GUARD_TRIES 6000

static int guard(int parent, const char *name)
{
	int p[2], st;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		sigset_t all;
		char c;

		if (fork() != 0)
			_exit(0);
		setsid();
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		if (dup2(p[0], 0) < 0 || dup2(parent, 1) < 0)
			_exit(1);
		if (syscall(SYS_close_range, 2, ~0U, 0) < 0)
			for (int fd = 2; fd < 1024; fd++)
				close(fd);
		for (;;) {
			ssize_t n = read(0, &c, 1);

			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		/*
		 * A call heapctl left running when it died (or gave up on)
		 * may create its file just after the emptying: empty again.
		 * A dump makes one file, so a second pass normally ends it.
		 */
		for (int i = 0; i < GUARD_TRIES && rm_private(1, name) < 0 && errno == ENOTEMPTY; i++)
			usleep(10000);
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return p[1];
}

int troot_mkdir(pid_t pid, struct troot_dir *dir, struct hc_err *err)
{
	static const char *const tmps[] = { "/tmp", "/var/tmp", "/dev/shm" };
	int root = root_fd(pid);
	uid_t uid;
	gid_t gid;

	dir->parent = dir->guard = -1;
	if (root < 0)
		return err_errno(err, errno, "open /proc/%d/root", pid);
	fs_ids(pid, &uid, &gid);
	for (size_t i = 0; i < sizeof(tmps) / sizeof(tmps[0]); i++) {
		uint8_t rnd[12];
		char *name = dir->name;
		int parent = open_in(root, tmps[i], O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);

		if (parent < 0)
			continue;
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
			close(parent);
			break;
		}
		snprintf(name, sizeof(dir->name), ".heapctl-%d-", pid);
		for (size_t k = 0; k < sizeof(rnd); k++)
			snprintf(name + strlen(name), 3, "%02x", rnd[k]);
		/* the guardian first: from the mkdir on, heapctl's death leaves nothing */
		dir->guard = guard(parent, name);
		if (dir->guard < 0)
			pr_warn("no guardian for heapctl's directory in pid %d: a SIGKILL of "
				"heapctl could leave it", pid);
		/* mkdir fails if the name exists: nobody could have prepared it */
		if (mkdirat(parent, name, 0700) == 0) {
			if (fchownat(parent, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
				pr_debug("chown %s/%s: %s", tmps[i], name, strerror(errno));
			snprintf(dir->path, sizeof(dir->path), "%s/%s", tmps[i], name);
			dir->parent = parent;
			pr_debug("pid %d: made the private directory %s", pid, dir->path);
			close(root);
			return 0;
		}
		pr_debug("mkdir %s/%s in pid %d's root: %s", tmps[i], name, pid, strerror(errno));
		if (dir->guard >= 0)
			close(dir->guard);
		dir->guard = -1;
		close(parent);
	}
	close(root);
	return err_sethint(err, HC_E_IO, 0, "the target needs a writable /tmp, /var/tmp or /dev/shm",
			   "no temporary directory of pid %d could take a private directory", pid);
}

int troot_fetch(pid_t pid, const char *path, const char *to, uint64_t max, struct hc_err *err)
{
	char buf[65536];
	int root = root_fd(pid), in = -1, out = -1;
	uint64_t total = 0;
	struct stat sb;
	ssize_t n = 0;

	if (root < 0)
		return err_errno(err, errno, "open /proc/%d/root", pid);
	/* O_NONBLOCK: a FIFO the target put in place of the profile must not block heapctl */
	in = open_in(root, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	close(root);
	if (in < 0)
		return err_errno(err, errno, "open %s in pid %d's view", path, pid);
	if (fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(in);
		return err_set(err, HC_E_IO, 0, "%s in pid %d's view is not a regular file", path, pid);
	}
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		err_errno(err, errno, "create %s", to);
		err->local = true;
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		total += (uint64_t)n;
		if (total > max) {
			err_set(err, HC_E_IO, 0, "%s in pid %d's view grew past %llu bytes", path, pid,
				(unsigned long long)max);
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			err_errno(err, errno, "write %s", to);
			err->local = true;
			break;
		}
	}
	if (n < 0)
		err_errno(err, errno, "read %s in pid %d's view", path, pid);
	close(in);
	if (close(out) < 0 && !err_isset(err)) {
		err_errno(err, errno, "write %s", to);
		err->local = true;
	}
	return err_isset(err) ? -1 : 0;
}

void troot_remove(struct troot_dir *dir)
{
	/* through the parent opened at creation: the target may be gone by now */
	if (dir->parent >= 0 && rm_private(dir->parent, dir->name) < 0 &&
	    (errno != ENOTEMPTY || dir->guard < 0))
		pr_warn("could not remove heapctl's directory %s: %s", dir->name, strerror(errno));
	if (dir->parent >= 0)
		close(dir->parent);
	if (dir->guard >= 0)
		close(dir->guard); /* the guardian finishes what is left, and exits */
	dir->parent = dir->guard = -1;
}
