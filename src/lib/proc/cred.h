/* SPDX-License-Identifier: MIT */
/*
 * The target's own rights, for every file heapctl touches on its behalf.
 *
 * heapctl usually runs as root; the target is less trusted.  Whatever is
 * opened, created or removed in the target's view of the filesystem (its
 * root under /proc/PID/root, its temporary directories) is done by a
 * thread of heapctl's that took the target's filesystem credentials
 * first: its fsuid, fsgid and supplementary groups, and no capability the
 * target does not have itself.  A link, a renamed directory or a hard
 * link the target planted then leads only where the target could have
 * gone on its own: root's CAP_DAC_OVERRIDE never decides an access there.
 */
#ifndef HC_CRED_H
#define HC_CRED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CRED_NGROUPS 256

struct hc_err;

struct cred {
	pid_t pid;
	uid_t fsuid;
	gid_t fsgid;
	int ngroups;
	gid_t groups[CRED_NGROUPS];
	uint64_t capeff; /* what of heapctl's own it keeps: none in another user namespace */
	bool self;       /* heapctl's own rights are no more than these: no switch needed */
};

/*
 * Read pid's credentials from /proc/PID/status (the kernel's ids as this
 * namespace sees them).  0, or -1 with err set (the process is gone, or
 * has more supplementary groups than heapctl takes: CRED_NGROUPS).
 */
int cred_of(pid_t pid, struct cred *c, struct hc_err *err);
/*
 * Run fn(arg) with c's filesystem credentials, in a thread of its own
 * that ends with the call (credentials are per thread in the kernel;
 * raw syscalls, not the C library's process-wide setxid).  Returns fn's
 * value with its errno, or -1 with errno EPERM when the credentials
 * cannot be taken (heapctl without CAP_SETUID/CAP_SETGID acting on a
 * process with fewer rights).  fn runs in the caller when c->self.
 */
int cred_run(const struct cred *c, int (*fn)(void *), void *arg);
/*
 * Take c's filesystem credentials in the calling thread for good: for a
 * process forked to act for the target (troot.c's guardian).  0 or -1.
 */
int cred_apply(const struct cred *c);

/*
 * heapctl's own output (a profile for the user, on the host): path opened
 * for writing and emptied, created 0600 and narrowed by the umask, since
 * it holds the data of a process that may be another user's.  Only a
 * regular file of heapctl's own user with one link is written: never
 * through a link, a FIFO or a hard link that someone who can write the
 * directory put there.  An fd, or -1 with errno.
 */
int cred_out_open(const char *path);
/* The same, as a stream: NULL with errno. */
FILE *cred_out_fopen(const char *path);

#endif
