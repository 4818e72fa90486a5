// SPDX-License-Identifier: MIT
/*
 * Acting with the target's rights (cred.h).  Linux keeps credentials per
 * thread: setfsuid(2), setfsgid(2), setgroups(2) and capset(2) as raw
 * system calls change the calling thread alone (glibc's wrappers of the
 * last two broadcast to every thread, nptl's setxid; the raw calls do
 * not).  A thread made for one operation takes the target's, runs it and
 * ends, so the rest of heapctl never runs with them.  Leaving uid 0 for
 * another fsuid also drops the filesystem capabilities (CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH, CAP_FOWNER...) from the thread's effective set
 * (security/commoncap.c, cap_task_fix_setuid()); capset() then keeps only
 * what the target itself has, which matters when it runs as uid 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "cred.h"
#include "err.h"

/* Uid:, Gid:, Groups: and CapEff: of a status file. */
static int status_ids(const char *path, struct cred *c)
{
	char line[4096];
	unsigned long r, e, s, fs;
	int have = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4) &&
		    sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			c->fsuid = (uid_t)fs;
			have |= 1;
		} else if (!strncmp(line, "Gid:", 4) &&
			   sscanf(line, "Gid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			c->fsgid = (gid_t)fs;
			have |= 2;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;

			c->ngroups = 0;
			for (;;) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				if (c->ngroups == CRED_NGROUPS) {
					c->ngroups = -1; /* more than heapctl takes */
					break;
				}
				c->groups[c->ngroups++] = (gid_t)g;
				p = end;
			}
			have |= 4;
		} else if (!strncmp(line, "CapEff:", 7)) {
			c->capeff = strtoull(line + 7, NULL, 16);
			have |= 8;
		}
	}
	fclose(f);
	if (have != 15) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static bool same_userns(pid_t pid)
{
	char p[64];
	struct stat a, b;

	snprintf(p, sizeof(p), "/proc/%d/ns/user", pid);
	return stat(p, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

static bool in_groups(gid_t g, const struct cred *c)
{
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g)
			return true;
	return false;
}

int cred_of(pid_t pid, struct cred *c, struct hc_err *err)
{
	struct cred me;
	char p[64];

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	if (status_ids(p, c) < 0)
		return err_errno(err, errno, "read the credentials of pid %d", pid);
	if (c->ngroups < 0)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "heapctl acts with at most 256 supplementary groups of the "
				   "target's; run it as the target's user",
				   "pid %d has more supplementary groups than heapctl can take", pid);
	/* capabilities count only in the user namespace they were given in */
	if (!same_userns(pid))
		c->capeff = 0;
	if (status_ids("/proc/thread-self/status", &me) < 0 || me.ngroups < 0)
		return err_errno(err, errno ? errno : EINVAL, "read heapctl's own credentials");
	c->capeff &= me.capeff;
	c->self = me.fsuid == c->fsuid && me.fsgid == c->fsgid && (me.capeff & ~c->capeff) == 0;
	for (int i = 0; c->self && i < me.ngroups; i++)
		c->self = in_groups(me.groups[i], c);
	return 0;
}

int cred_apply(const struct cred *c)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	gid_t cur[CRED_NGROUPS];
	long n;

	if (c->self)
		return 0;
	/* the same groups need no CAP_SETGID: a heapctl that differs only by capabilities */
	n = syscall(SYS_getgroups, CRED_NGROUPS, cur);
	if ((n != c->ngroups || memcmp(cur, c->groups, (size_t)n * sizeof(gid_t))) &&
	    syscall(SYS_setgroups, (size_t)c->ngroups, c->groups) < 0)
		return -1;
	/* both return the previous id whatever happens: ask again to know */
	syscall(SYS_setfsgid, c->fsgid);
	syscall(SYS_setfsuid, c->fsuid);
	if ((gid_t)syscall(SYS_setfsgid, -1) != c->fsgid ||
	    (uid_t)syscall(SYS_setfsuid, -1) != c->fsuid) {
		errno = EPERM;
		return -1;
	}
	if (syscall(SYS_capget, &hdr, d) < 0)
		return -1;
	d[0].effective &= (uint32_t)c->capeff;
	d[1].effective &= (uint32_t)(c->capeff >> 32);
	return syscall(SYS_capset, &hdr, d) < 0 ? -1 : 0;
}

struct job {
	const struct cred *c;
	int (*fn)(void *);
	void *arg;
	int rc, err;
};

static void *as_target(void *p)
{
	struct job *j = p;

	if (cred_apply(j->c) < 0) {
		j->rc = -1;
		j->err = errno == EPERM || errno == EINVAL ? EPERM : errno;
		return NULL;
	}
	errno = 0;
	j->rc = j->fn(j->arg);
	j->err = errno;
	return NULL;
}

int cred_run(const struct cred *c, int (*fn)(void *), void *arg)
{
	struct job j = { .c = c, .fn = fn, .arg = arg };
	pthread_t th;
	int e;

	if (c->self)
		return fn(arg);
	e = pthread_create(&th, NULL, as_target, &j);
	if (e) {
		errno = e;
		return -1;
	}
	pthread_join(th, NULL);
	errno = j.err;
	return j.rc;
}

int cred_out_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	struct stat st;
	int e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		e = errno;
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid())
		e = EPERM;
	else if (ftruncate(fd, 0) < 0)
		e = errno;
	else
		return fd;
	close(fd);
	errno = e;
	return -1;
}

FILE *cred_out_fopen(const char *path)
{
	int fd = cred_out_open(path), e;
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		e = errno;
		close(fd);
		errno = e;
	}
	return f;
}
