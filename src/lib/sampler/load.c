// SPDX-License-Identifier: MIT
/*
 * Loading heapctl's sampler into a target, in one borrow: memfd_create()
 * by remote syscall, the object written into it from here through the
 * target's own fd (pidfd_getfd()), dlopen("/proc/self/fd/N") by remote
 * call, the fd closed again; or a file in the target's root where it
 * cannot.  Memfds a killed heapctl left are reclaimed first.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../sampler/hcs.h"
#include "call.h"
#include "cred.h"
#include "got.h"
#include "inject_int.h"
#include "inject.h"
#include "log.h"
#include "mem.h"
#include "engine.h"
#include "image.h"
#include "troot.h"

/* the sampler itself, built into heapctl (the Makefile's sampler_blob.o) */
extern const unsigned char hc_sampler_so[], hc_sampler_so_end[];

/* ---- loading --------------------------------------------------------------------------- */

/*
 * The target's fds that are a sampler's memfd: a heapctl killed between
 * its memfd_create and its close (the load's one window) left them.  Up
 * to max of them into fds; returns how many.
 */
static unsigned memfds(const struct engine *t, int *fds, unsigned max)
{
	char dir[96], path[160], link[128];
	struct dirent *d;
	unsigned n = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/fd", t->img->proc);
	dp = opendir(dir);
	while (dp && n < max && (d = readdir(dp))) {
		ssize_t len;

		if (d->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) < 0)
			continue;
		len = readlink(path, link, sizeof(link) - 1);
		/* the sampler's, and the hooks' and unwind tables' (inline.c): "/memfd:heapctl-..." */
		if (len > 0 && (link[len] = '\0', !strncmp(link, "/memfd:heapctl-", 15)))
			fds[n++] = atoi(d->d_name);
	}
	if (dp)
		closedir(dp);
	return n;
}

/*
 * Close what memfds() finds, once the thread is borrowed: the per-target
 * lock is held then, so no other heapctl is inside a load, and the program
 * never knew these fds.  Looked for again under the lock before closing.
 */
int reclaim_memfds(struct engine *t, struct hc_err *err)
{
	int fds[16];
	unsigned n = memfds(t, fds, 16);

	if (!n || !call_scratch(t, 8, err))
		return err_isset(err) ? -1 : 0;
	n = memfds(t, fds, 16);
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = (uint64_t)fds[i];
		int64_t ret;

		if (call_syscall(t, t->img->arch->nr_close, &a, 1, &ret, err) < 0)
			return -1;
		pr_info("sampler: closed fd %d, left by a heapctl killed while loading", fds[i]);
	}
	return 0;
}

uint64_t libc_fn(struct engine *t, const char *name)
{
	for (size_t i = 0; i < t->img->nobjs; i++) {
		struct obj *o = &t->img->objs[i];
		struct hc_err e = { 0 };
		const struct sym *s;

		if (!o->base || !strstr(o->path, "/libc.so") || sym_load(t->img, o, false, &e) < 0)
			continue;
		s = sym_by_name(o, name);
		if (s)
			return s->raddr;
	}
	return 0;
}

/* Write the sampler's bytes to fd, which is closed. */
static int write_sampler(struct engine *t, int fd, struct hc_err *err)
{
	size_t len = (size_t)(hc_sampler_so_end - hc_sampler_so), done = 0;

	while (done < len) {
		ssize_t w = write(fd, hc_sampler_so + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;

			close(fd);
			return err_set(err, HC_E_IO, e, "cannot write the sampler for pid %d: %s", t->img->pid,
				       strerror(e));
		}
		done += (size_t)w;
	}
	close(fd);
	return 0;
}

/* dlopen(path) in the target; 1 loaded (*handle set), 0 refused (why filled), -1 error. */
static int remote_dlopen(struct engine *t, const char *path, uint64_t *handle, char *why,
			 size_t whylen, struct hc_err *err)
{
	uint64_t f_dlopen = libc_fn(t, "dlopen"), f_dlerror = libc_fn(t, "dlerror");
	uint64_t a[2], msg = 0;

	*handle = 0;
	a[0] = call_strdup(t, path, err);
	a[1] = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
	if (!a[0] || call_fn(t, f_dlopen, a, 2, handle, NULL, NULL, err) < 0)
		return -1;
	if (*handle)
		return 1;
	why[0] = '\0';
	if (f_dlerror && call_fn(t, f_dlerror, NULL, 0, &msg, NULL, NULL, err) == 0 && msg)
		(void)call_read_str(t, msg, why, whylen, err);
	return err_isset(err) ? -1 : 0;
}

/*
 * The target's fd, which must still be the memfd it has just made for
 * heapctl.  pidfd_getfd() hands over the target's own open file, with the
 * access it was opened with: a descriptor that another thread of the
 * target dup2()ed over it (an O_PATH or read-only one of a file it may not
 * write) cannot be written through.  Opening /proc/PID/fd/N instead would
 * open whatever file is there afresh, with heapctl's rights.  It must
 * also be what heapctl made: a memfd (only shmem answers F_GET_SEALS),
 * unlinked, empty, under heapctl's name, open for writing; otherwise the
 * load is refused, with no fallback.  An fd; -1 with err set, or with err
 * clear and why filled when this kernel has no pidfd_getfd() (5.6).
 */
static int take_memfd(struct engine *t, int64_t fd, const char *name, char *why, size_t whylen,
		      struct hc_err *err)
{
	char self[64], link[64], want[64];
	int pidfd = (int)syscall(SYS_pidfd_open, t->img->pid, 0), lfd = -1, e;
	struct stat st;
	ssize_t n;

	if (pidfd >= 0) {
		lfd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
		e = errno;
		close(pidfd);
		errno = e;
	}
	if (lfd < 0) {
		if (errno == ENOSYS) {
			snprintf(why, whylen, "pidfd_getfd: not in this kernel");
			return -1;
		}
		return err_set(err, HC_E_PERM, errno, "cannot take the sampler's memfd (fd %" PRId64
			       ") from pid %d: %s", fd, t->img->pid, strerror(errno));
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", lfd);
	n = readlink(self, link, sizeof(link) - 1);
	if (n > 0)
		link[n] = '\0';
	if (fstat(lfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0 ||
	    fcntl(lfd, F_GET_SEALS) < 0 || (fcntl(lfd, F_GETFL) & O_ACCMODE) != O_RDWR || n <= 0 ||
	    (snprintf(want, sizeof(want), "/memfd:%s (deleted)", name), strcmp(link, want))) {
		close(lfd);
		return err_sethint(err, HC_E_UNSAFE, 0,
				   "the process replaces its descriptors while heapctl loads the "
				   "sampler; heapctl wrote nothing: use --sampler native where the "
				   "allocator can profile",
				   "fd %" PRId64 " of pid %d is no longer the memfd heapctl made for its "
				   "sampler: another thread replaced it", fd, t->img->pid);
	}
	return lfd;
}

/*
 * A memfd made in the target under name, and heapctl's own descriptor of
 * it (take_memfd()).  1 made (*rfd the target's fd, *lfd ours), 0 not
 * possible here (why), -1 error; the target's fd is closed on failure.
 */
int make_memfd(struct engine *t, const char *name, int64_t *rfd, int *lfd, char *why,
	       size_t whylen, struct hc_err *err)
{
	uint64_t a[2], rname = call_strdup(t, name, err);
	int64_t fd;

	if (!rname)
		return -1;
	a[0] = rname;
	a[1] = MFD_CLOEXEC | 0x0010u; /* MFD_EXEC: with vm.memfd_noexec, ask for it */
	if (call_syscall(t, t->img->arch->nr_memfd_create, a, 2, &fd, err) < 0)
		return -1;
	if (fd == -EINVAL) { /* before Linux 6.3, no MFD_EXEC */
		a[1] = MFD_CLOEXEC;
		if (call_syscall(t, t->img->arch->nr_memfd_create, a, 2, &fd, err) < 0)
			return -1;
	}
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create: %s", strerror((int)-fd));
		return 0;
	}
	*rfd = fd;
	*lfd = take_memfd(t, fd, name, why, whylen, err);
	if (*lfd >= 0)
		return 1;
	close_memfd(t, fd, err);
	return err_isset(err) ? -1 : 0;
}

/* The target's fd closed, whatever happened: a request to stop included. */
int close_memfd(struct engine *t, int64_t fd, struct hc_err *err)
{
	uint64_t a = (uint64_t)fd;
	int64_t ret;
	int rc;

	t->cancel_hold++;
	rc = call_syscall(t, t->img->arch->nr_close, &a, 1, &ret, err_isset(err) ? &(struct hc_err){ 0 } : err);
	t->cancel_hold--;
	return rc;
}

/*
 * From a memfd made in the target: nothing touches its filesystem.  1
 * loaded, 0 not possible here (memfd_create refused, /proc not mounted in
 * its namespace, memfds not executable), -1 error.
 */
static int load_memfd(struct engine *t, char *why, size_t whylen, struct hc_err *err)
{
	uint64_t handle;
	int64_t fd;
	char path[96];
	int lfd, rc;

	rc = make_memfd(t, HCS_NAME, &fd, &lfd, why, whylen, err);
	if (rc <= 0)
		return rc;
	if (write_sampler(t, lfd, err) < 0)
		rc = -1;
	else {
		fd_path(path, sizeof(path), fd);
		rc = remote_dlopen(t, path, &handle, why, whylen, err);
		if (rc > 0)
			rename_loaded(t, handle, path);
	}
	if (close_memfd(t, fd, err) < 0)
		rc = -1;
	return rc;
}

/*
 * From a file in a private directory in the target's root (its mount
 * namespace), removed again at once; the guardian removes it should
 * heapctl die meanwhile.  The file is 0444 in the target's 0700 directory.
 */
static int load_file(struct engine *t, char *why, size_t whylen, struct hc_err *err)
{
	struct troot_dir d = TROOT_DIR_INIT;
	char path[PATH_MAX + 32];
	int fd, rc;

	if (troot_mkdir(t->img->pid, &d, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.so", d.path, HCS_NAME);
	fd = troot_create(&d, HCS_NAME ".so", 0444);
	if (fd < 0)
		rc = err_set(err, HC_E_IO, errno, "cannot write the sampler into pid %d's %s: %s",
			     t->img->pid, d.path, strerror(errno));
	else if (write_sampler(t, fd, err) < 0)
		rc = -1;
	else
		rc = remote_dlopen(t, path, &(uint64_t){ 0 }, why, whylen, err);
	troot_remove(&d);
	return rc;
}

int load(struct engine *t, struct inj *in, struct hc_err *err)
{
	char why[256] = "", why2[256] = "";
	int r;

	r = load_memfd(t, why, sizeof(why), err);
	if (r == 0) {
		pr_info("sampler: no memfd (%s): a file in the process's root instead", why);
		r = load_file(t, why2, sizeof(why2), err);
	}
	if (r < 0)
		return -1;
	if (r == 0)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "a process with little static TLS left, or whose temporary "
				   "directories are all noexec, cannot load it; use --sampler native "
				   "where the allocator can profile",
				   "pid %d could not load heapctl's sampler: %s; %s", t->img->pid, why, why2);
	in->loaded_now = true; /* and the caller's inj_probe() reads the maps again to find it */
	return 0;
}
