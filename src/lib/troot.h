/* SPDX-License-Identifier: MIT */
/*
 * Files in the target's own view of the filesystem (its mount namespace and
 * root), reached through /proc/PID/root without ever following a link the
 * target planted out of it.
 */
#ifndef HC_TROOT_H
#define HC_TROOT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hc_err;

/* A private directory of heapctl's in the target's view. */
struct troot_dir {
	char path[PATH_MAX]; /* as the target sees it */
	char name[64];       /* its last component */
	int parent;          /* its parent, open: removal needs no live target */
	int guard;           /* the guardian's pipe (see troot.c), or -1 */
};

/*
 * Make a fresh directory, mode 0700, owned by the target's fs uid/gid, under
 * one of the target's temporary directories, and a guardian that removes it
 * should heapctl die before troot_remove().  Returns 0, or -1 when no
 * temporary directory took it.
 */
int troot_mkdir(pid_t pid, struct troot_dir *dir, struct hc_err *err);
/*
 * Open path in pid's root (a live thread's when the leader has exited) with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): an absolute link the
 * target planted resolves inside its root, never in heapctl's.  flags as
 * for open(2), O_CLOEXEC added.  Returns an fd, or -1 with errno.
 */
int troot_open(pid_t pid, const char *path, int flags);
/* Create path (O_EXCL, never through a link) in pid's root, writable, with mode; an fd or -1, errno. */
int troot_create(pid_t pid, const char *path, mode_t mode);
/* Copy the target's regular file path (at most max bytes) to our file to. */
int troot_fetch(pid_t pid, const char *path, const char *to, uint64_t max, struct hc_err *err);
/* Remove the directory and everything heapctl or the allocator put in it. */
void troot_remove(struct troot_dir *dir);

#endif
