// SPDX-License-Identifier: MIT
/*
 * heapctl usually runs as root against a less trusted process.  Paths
 * below /proc/PID/root are resolved by the kernel with RESOLVE_IN_ROOT, so
 * an absolute symlink the target planted ("/tmp/x -> /etc/shadow") stays
 * inside the target's root instead of escaping to heapctl's; and every
 * lookup, creation and removal there runs with the target's credentials
 * (cred.h), so a link, a swapped directory or a hard link inside its
 * root leads only where the target could go itself.  The root itself is
 * opened as heapctl (a non-dumpable target's /proc entries are root's):
 * only that descriptor crosses over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "err.h"
#include "log.h"
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

/*
 * openat2 confined to the target's root.  Before Linux 5.6 there is no
 * RESOLVE_IN_ROOT: a plain openat() would let an absolute link lead out
 * of the target's root, so it is used only when that root is heapctl's.
 */
static int open_in(int root, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
	struct stat a, b;

	if (fd < 0 && errno == ENOSYS) {
		if (fstat(root, &a) < 0 || stat("/", &b) < 0 || a.st_dev != b.st_dev ||
		    a.st_ino != b.st_ino) {
			errno = ENOSYS;
			return -1;
		}
		fd = openat(root, path[0] == '/' ? path + 1 : path, flags | O_CLOEXEC, mode);
	}
	return (int)fd;
}

struct op {
	int root, dfd, nofollow, flags;
	const char *path;
	mode_t mode;
	struct stat *st;
};

int troot_reopen_reg(int pathfd, struct stat *st)
{
	char self[64];
	int rfd;

	if (pathfd < 0)
		return -1;
	if (fstat(pathfd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(pathfd);
		errno = EINVAL;
		return -1;
	}
	/* the same inode, now for reading, with the same rights: nothing can be swapped in */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pathfd);
	return rfd;
}

/* As the target: the regular file path, for reading. */
static int open_reg(void *p)
{
	struct op *o = p;

	return troot_reopen_reg(open_in(o->root, o->path, O_PATH | o->nofollow, 0), o->st);
}

int troot_open(pid_t pid, const char *path, int nofollow, struct stat *st)
{
	struct stat sb;
	struct op o = { .path = path, .nofollow = nofollow, .st = st ? st : &sb };
	struct cred c;
	int fd, e;

	if (cred_of(pid, &c, &(struct hc_err){ 0 }) < 0)
		return -1;
	o.root = root_fd(pid);
	if (o.root < 0)
		return -1;
	fd = cred_run(&c, open_reg, &o);
	e = errno;
	close(o.root);
	errno = e;
	return fd;
}

/* As the target: openat(dfd, path) with flags, never through a link. */
static int open_at(void *p)
{
	struct op *o = p;

	return openat(o->dfd, o->path, o->flags | O_NOFOLLOW | O_CLOEXEC, o->mode);
}

int troot_create(const struct troot_dir *dir, const char *name, mode_t mode)
{
	struct op o = { .dfd = dir->fd, .path = name, .mode = mode,
			.flags = O_WRONLY | O_CREAT | O_EXCL };

	return cred_run(&dir->cred, open_at, &o);
}

/*
 * Empty the directory dfd (made by heapctl; may be -1, then parent/name
 * opened without following a link) and remove it from parent, as long
 * as name is still that directory.  What the target may have put there
 * itself (a subdirectory) is left, and so is a directory it renamed
 * away.  Runs with the target's credentials.  Returns 0, or -1 with errno
 * (ENOTEMPTY: an entry came in meanwhile).
 */
static int rm_private(int parent, const char *name, int dfd)
{
	int fd = dfd >= 0 ? openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) :
			    openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat a, b;
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
	if (dfd >= 0) {
		if (fstat(dfd, &a) < 0)
			return -1;
		if (fstatat(parent, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_dev != b.st_dev ||
		    a.st_ino != b.st_ino) {
			/* renamed by the target: the name is no longer heapctl's to remove */
			return a.st_nlink == 0 ? 0 : (errno = ESTALE, -1);
		}
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * The directory must go even if heapctl is SIGKILLed with it in place.  A
 * guardian process, detached (double fork, own session: a signal to
 * heapctl's process group does not reach it), waits for the end of a
 * socket whose only other end is heapctl's, then removes it: after
 * heapctl's removal that finds nothing, after heapctl's death it is the
 * cleanup.  It is forked by the thread that holds the target's
 * credentials, so it has them too.  It keeps only the socket and the
 * parent directory: another fd of heapctl's (its per-target lock above
 * all) must not outlive heapctl in it.  The directory's own descriptor
 * comes over the socket once made (SCM_RIGHTS), so a directory the
 * target renamed is not removed by name.  Returns heapctl's end of the
 * socket, or -1 (then only heapctl's own removal is left).  It is made
 * before the directory, whose 96 random bits no one else can have taken,
 * so that no moment of heapctl's life leaves one unguarded.
 */
/* the guardian's passes over a directory that keeps filling: 60 s in all */
#define GUARD_TRIES 6000

static int recv_fd(int sock, int *fd)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&m) : NULL;

	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && *fd < 0)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return (int)n;
}

static void send_fd(int sock, int fd)
{
	char c = 'd', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &m, MSG_NOSIGNAL) < 0)
		pr_debug("the guardian did not get the directory's fd: %s", strerror(errno));
}

static int guard(int parent, const char *name)
{
	int s[2], st;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		sigset_t all;
		int dfd = -1;

		if (fork() != 0)
			_exit(0);
		setsid();
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		if (dup2(s[1], 0) < 0 || dup2(parent, 1) < 0)
			_exit(1);
		if (syscall(SYS_close_range, 2, ~0U, 0) < 0)
			for (int fd = 2; fd < 1024; fd++)
				close(fd);
		for (;;) {
			int n = recv_fd(0, &dfd);

			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		/*
		 * A call heapctl left running when it died (or gave up on)
		 * may create its file just after the emptying: empty again.
		 * A dump makes one file, so a second pass normally ends it.
		 */
		for (int i = 0; i < GUARD_TRIES && rm_private(1, name, dfd) < 0 && errno == ENOTEMPTY;
		     i++)
			usleep(10000);
		_exit(0);
	}
	close(s[1]);
	if (pid < 0) {
		close(s[0]);
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return s[0];
}

struct mk {
	int root;
	pid_t pid;
	struct troot_dir *dir;
	int err;            /* the last mkdir's errno */
	bool ran;           /* the target's credentials were taken */
	const char *where;  /* its temporary directory */
};

/* As the target: a fresh directory in one of its temporary directories. */
static int mk_private(void *p)
{
	static const char *const tmps[] = { "/tmp", "/var/tmp", "/dev/shm" };
	struct mk *m = p;
	struct troot_dir *dir = m->dir;
	struct stat st;

	m->ran = true;
	for (size_t i = 0; i < sizeof(tmps) / sizeof(tmps[0]); i++) {
		uint8_t rnd[12];
		char *name = dir->name;
		int parent = open_in(m->root, tmps[i], O_PATH | O_DIRECTORY, 0), fd;

		if (parent < 0)
			continue;
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
			close(parent);
			break;
		}
		snprintf(name, sizeof(dir->name), ".heapctl-%d-", m->pid);
		for (size_t k = 0; k < sizeof(rnd); k++)
			snprintf(name + strlen(name), 3, "%02x", rnd[k]);
		/* the guardian first: from the mkdir on, heapctl's death leaves nothing */
		dir->guard = guard(parent, name);
		if (dir->guard < 0)
			pr_warn("no guardian for heapctl's directory in pid %d: a SIGKILL of "
				"heapctl could leave it", m->pid);
		/* mkdir fails if the name exists: nobody could have prepared it */
		if (mkdirat(parent, name, 0700) == 0) {
			/*
			 * The target may rename it at once and put another of its
			 * own in its place: then this is that other one, the
			 * target's, holding nothing it could not reach.  Either way
			 * every later step goes through this descriptor.
			 */
			fd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == dir->cred.fsuid) {
				if (dir->guard >= 0)
					send_fd(dir->guard, fd);
				snprintf(dir->path, sizeof(dir->path), "%s/%s", tmps[i], name);
				dir->parent = parent;
				dir->fd = fd;
				return 0;
			}
			m->err = fd < 0 ? errno : EPERM;
			if (fd >= 0)
				close(fd);
		} else {
			m->err = errno;
		}
		m->where = tmps[i];
		pr_debug("mkdir %s/%s in pid %d's root: %s", tmps[i], name, m->pid,
			 strerror(m->err));
		if (dir->guard >= 0)
			close(dir->guard); /* the guardian removes what may be there */
		dir->guard = -1;
		close(parent);
	}
	return -1;
}

int troot_mkdir(pid_t pid, struct troot_dir *dir, struct hc_err *err)
{
	struct mk m = { .pid = pid, .dir = dir, .where = "/tmp" };
	int rc;

	dir->parent = dir->fd = dir->guard = -1;
	if (cred_of(pid, &dir->cred, err) < 0)
		return -1;
	m.root = root_fd(pid);
	if (m.root < 0)
		return err_errno(err, errno, "open /proc/%d/root", pid);
	rc = cred_run(&dir->cred, mk_private, &m);
	if (rc < 0 && !m.err)
		m.err = errno;
	close(m.root);
	if (rc == 0) {
		pr_debug("pid %d: made the private directory %s as uid %u", pid, dir->path,
			 (unsigned)dir->cred.fsuid);
		return 0;
	}
	if (!m.ran)
		return err_sethint(err, HC_E_PERM, EPERM,
				   "run heapctl as root (CAP_SETUID and CAP_SETGID), or as the "
				   "target's user",
				   "heapctl cannot take the credentials of pid %d (uid %u) to make "
				   "its directory there", pid, (unsigned)dir->cred.fsuid);
	return err_sethint(err, HC_E_IO, m.err,
			   "the target's own user needs a writable /tmp, /var/tmp or /dev/shm",
			   "no temporary directory of pid %d takes a private directory as its "
			   "uid %u (%s: %s)", pid, (unsigned)dir->cred.fsuid, m.where,
			   strerror(m.err));
}

/* Does buf begin with one of the '|'-separated prefixes in magic? */
static bool begins_as(const char *buf, size_t n, const char *magic)
{
	for (const char *m = magic; *m;) {
		size_t len = strcspn(m, "|");

		if (n >= len && !memcmp(buf, m, len))
			return true;
		m += len + (m[len] == '|');
	}
	return false;
}

int troot_fetch(const struct troot_dir *dir, const char *name, const char *magic, const char *to,
		uint64_t max, struct hc_err *err)
{
	struct op o = { .dfd = dir->fd, .path = name, .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY };
	char buf[65536];
	int in, out;
	uint64_t total = 0;
	struct stat sb;
	ssize_t n = 0;

	in = cred_run(&dir->cred, open_at, &o);
	if (in < 0)
		return err_errno(err, errno, "open %s/%s in pid %d's view", dir->path, name,
				 dir->cred.pid);
	if (fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
	    sb.st_uid != dir->cred.fsuid) {
		close(in);
		return err_sethint(err, HC_E_IO, 0,
				   "the process changed heapctl's directory while it worked: "
				   "nothing of it was read",
				   "%s/%s in pid %d's view is not the file its allocator wrote (not a "
				   "regular file of uid %u with one link)", dir->path, name,
				   dir->cred.pid, (unsigned)dir->cred.fsuid);
	}
	if ((uint64_t)sb.st_size > max) {
		close(in);
		return err_set(err, HC_E_IO, 0, "%s/%s in pid %d's view has %llu bytes, past %llu",
			       dir->path, name, dir->cred.pid, (unsigned long long)sb.st_size,
			       (unsigned long long)max);
	}
	n = pread(in, buf, 64, 0);
	if (!begins_as(buf, n < 0 ? 0 : (size_t)n, magic)) {
		close(in);
		return err_sethint(err, HC_E_REMOTE, 0,
				   "the allocator of the process wrote something else than its "
				   "profile: see its log, or retry",
				   "%s/%s in pid %d's view does not begin as a profile (%s)",
				   dir->path, name, dir->cred.pid, magic);
	}
	out = cred_out_open(to);
	if (out < 0) {
		close(in);
		err_errno(err, errno, "create %s", to);
		err->local = true;
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		total += (uint64_t)n;
		if (total > max) {
			err_set(err, HC_E_IO, 0, "%s/%s in pid %d's view grew past %llu bytes",
				dir->path, name, dir->cred.pid, (unsigned long long)max);
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			err_errno(err, errno, "write %s", to);
			err->local = true;
			break;
		}
	}
	if (n < 0)
		err_errno(err, errno, "read %s/%s in pid %d's view", dir->path, name, dir->cred.pid);
	close(in);
	if (close(out) < 0 && !err_isset(err)) {
		err_errno(err, errno, "write %s", to);
		err->local = true;
	}
	return err_isset(err) ? -1 : 0;
}

static int rm_dir(void *p)
{
	struct troot_dir *dir = p;

	return rm_private(dir->parent, dir->name, dir->fd);
}

void troot_remove(struct troot_dir *dir)
{
	/* through the descriptors opened at creation: the target may be gone by now */
	if (dir->parent >= 0 && cred_run(&dir->cred, rm_dir, dir) < 0) {
		if (errno == ESTALE)
			pr_warn("pid %d renamed heapctl's directory %s: emptied, and left where the "
				"process put it", dir->cred.pid, dir->name);
		else if (errno != ENOTEMPTY || dir->guard < 0)
			pr_warn("could not remove heapctl's directory %s: %s", dir->name,
				strerror(errno));
	}
	if (dir->fd >= 0)
		close(dir->fd);
	if (dir->parent >= 0)
		close(dir->parent);
	if (dir->guard >= 0)
		close(dir->guard); /* the guardian finishes what is left, and exits */
	dir->parent = dir->fd = dir->guard = -1;
}
