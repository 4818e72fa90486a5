/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the test victims.
 *
 * A victim is started with three descriptors, given either as argv[1..3]
 * or as the environment variables VICTIM_READY_FD, VICTIM_CTL_FD and
 * VICTIM_REPLY_FD:
 *
 *   ready  the victim writes one byte 'R' once every thread is in place
 *   ctl    the harness writes one command per line
 *   reply  the victim answers every command with exactly one line
 *
 * Nothing here sleeps to synchronise: the victim tells the harness when
 * it is ready, and it decides that a thread is parked by asking the kernel
 * (/proc/self/task/TID/syscall) rather than by waiting a while.
 */
#ifndef VCOMMON_H
#define VCOMMON_H

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif

/* Syscalls some architectures lack (arm64 has no epoll_wait, nanosleep). */
#ifdef SYS_epoll_wait
#define VSYS_EPOLL_WAIT SYS_epoll_wait
#else
#define VSYS_EPOLL_WAIT (-3L)
#endif
#ifdef SYS_nanosleep
#define VSYS_NANOSLEEP SYS_nanosleep
#else
#define VSYS_NANOSLEEP (-3L)
#endif
#ifdef SYS_poll
#define VSYS_POLL SYS_poll	/* arm64 has only ppoll */
#else
#define VSYS_POLL (-3L)
#endif

struct vfds {
	int ready;
	int ctl;
	int reply;
};

static inline void vdie(const char *what)
{
	fprintf(stderr, "victim: %s: %s\n", what, strerror(errno));
	exit(3);
}

static inline int vparse_fd(const char *s)
{
	char *end;
	long v;

	if (!s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

/* argv[1..3] win over the environment. */
static inline void vfds_get(struct vfds *f, int argc, char **argv)
{
	if (argc >= 4) {
		f->ready = vparse_fd(argv[1]);
		f->ctl = vparse_fd(argv[2]);
		f->reply = vparse_fd(argv[3]);
	} else {
		f->ready = vparse_fd(getenv("VICTIM_READY_FD"));
		f->ctl = vparse_fd(getenv("VICTIM_CTL_FD"));
		f->reply = vparse_fd(getenv("VICTIM_REPLY_FD"));
	}
	if (f->ready < 0 || f->ctl < 0 || f->reply < 0) {
		fprintf(stderr, "usage: %s READY_FD CTL_FD REPLY_FD\n"
				"   or: VICTIM_READY_FD=.. VICTIM_CTL_FD=.. VICTIM_REPLY_FD=.. %s\n",
			argv[0], argv[0]);
		exit(2);
	}
}

/*
 * Let a separately exec'd heapctl attach under Yama ptrace_scope=1.
 * Fails with EINVAL when Yama is not built in, which is fine.
 */
static inline void vallow_ptrace(void)
{
	if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) && errno != EINVAL)
		perror("victim: PR_SET_PTRACER");
}

static inline pid_t vgettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline uint64_t vnow_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Write all of buf, retrying on EINTR and short writes. */
static inline int vwrite_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

__attribute__((format(printf, 2, 3)))
static inline void vreply(int fd, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (vwrite_all(fd, buf, (size_t)n))
		vdie("write reply");
}

/*
 * Line reader for the control pipe. *eintr counts reads that failed with
 * EINTR: every victim handler uses SA_RESTART, so there must be none.
 * Returns the line length without the newline, or -1 on EOF.
 */
struct vline {
	char buf[4096];
	size_t len;
};

static inline ssize_t vline_read(struct vline *l, int fd, char *out, size_t outsz,
				 unsigned long *eintr)
{
	for (;;) {
		char *nl = memchr(l->buf, '\n', l->len);
		ssize_t n;

		if (nl) {
			size_t ll = (size_t)(nl - l->buf);
			size_t cp = ll < outsz - 1 ? ll : outsz - 1;

			memcpy(out, l->buf, cp);
			out[cp] = '\0';
			memmove(l->buf, nl + 1, l->len - ll - 1);
			l->len -= ll + 1;
			return (ssize_t)cp;
		}
		if (l->len == sizeof(l->buf))
			l->len = 0; /* overlong line: drop it */
		n = read(fd, l->buf + l->len, sizeof(l->buf) - l->len);
		if (n < 0) {
			if (errno == EINTR) {
				if (eintr)
					(*eintr)++;
				continue;
			}
			return -1;
		}
		if (n == 0)
			return -1;
		l->len += (size_t)n;
	}
}

/* Number of open descriptors, not counting the one used to list them. */
static inline long vcount_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	long n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

struct vdl_names {
	long fdpaths, named;
	const char *name;
};

static inline int vdl_name(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct vdl_names *c = arg;

	(void)size;
	if (info->dlpi_name && !strncmp(info->dlpi_name, "/proc/self/fd/", 14))
		c->fdpaths++;
	if (info->dlpi_name && !strcmp(info->dlpi_name, c->name))
		c->named++;
	return 0;
}

/*
 * "dlnames NAME": how the loader names what it loaded.  fdpaths: objects
 * it calls /proc/self/fd/..., a path that is no file's once the fd is
 * closed; named: objects it calls NAME; stale: paths /proc/self/fd/N of
 * closed fds (N < 64, the path padded with slashes before N to up to 32
 * characters, as heapctl pads it) that dlopen(RTLD_NOLOAD) still answers
 * with a loaded object, by name alone.
 */
static inline void vcmd_dlnames(int fd, const char *name)
{
	struct vdl_names c = { .name = name };
	long stale = 0;

	dl_iterate_phdr(vdl_name, &c);
	for (int n = 0; n < 64; n++) {
		char path[64];

		if (fcntl(n, F_GETFD) >= 0)
			continue; /* open: dlopen() would read it */
		for (int pad = 0; pad <= 32 - 14; pad++) {
			void *h;

			snprintf(path, sizeof(path), "/proc/self/fd/%.*s%d", pad,
				 "//////////////////////////////////", n);
			h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
			if (h) {
				stale++;
				dlclose(h);
			}
		}
	}
	vreply(fd, "dlnames fdpaths=%ld named=%ld stale=%ld", c.fdpaths, c.named, stale);
}

/*
 * Count the lines of /proc/self/maps, and separately the anonymous ones
 * that are executable or PROT_NONE (what an injector might leave behind).
 */
static inline void vcount_maps(long *total, long *anon_odd)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];

	*total = 0;
	*anon_odd = 0;
	if (!f) {
		*total = -1;
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char perms[8] = "";
		unsigned long inode = 1;
		int path_off = 0;

		(*total)++;
		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %lu %n", perms, &inode, &path_off) < 2)
			continue;
		if (inode != 0)
			continue;
		if (path_off && line[path_off] == '[')
			continue; /* [stack], [vdso], [vsyscall] ... */
		if (perms[2] == 'x' || !strcmp(perms, "---p"))
			(*anon_odd)++;
	}
	fclose(f);
}

/*
 * Is thread tid parked inside syscall nr (any of nrs[0..n-1])?
 * /proc/PID/task/TID/syscall only reports a number once the task is
 * blocked (proc_pid_syscall() waits for it to be inactive), and says
 * "running" otherwise.
 */
static inline bool vthread_in_syscall(pid_t tid, const long *nrs, int n)
{
	char path[64], buf[256];
	ssize_t len;
	long nr;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	len = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[0]))
		return false;
	nr = strtol(buf, NULL, 10);
	for (i = 0; i < n; i++)
		if (nr == nrs[i])
			return true;
	return false;
}

/* Poll the kernel's view until tid is parked, for at most timeout_ms. */
static inline bool vwait_in_syscall(pid_t tid, const long *nrs, int n, unsigned int timeout_ms)
{
	uint64_t end = vnow_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (!vthread_in_syscall(tid, nrs, n)) {
		struct timespec ts = { 0, 100000 };

		if (vnow_ns() > end)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

#endif /* VCOMMON_H */
