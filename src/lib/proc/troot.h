/* SPDX-License-Identifier: MIT */
/*
 * Files in the target's own view of the filesystem (its mount namespace and
 * root), reached through /proc/PID/root, always with the target's own
 * rights (cred.h): a link, a renamed directory or a hard link it planted
 * leads nowhere it could not go itself.  Inside heapctl's private
 * directory, every file is reached through the directory's descriptor,
 * never by its name again.
 */
#ifndef HC_TROOT_H
#define HC_TROOT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cred.h"

struct hc_err;

/* A private directory of heapctl's in the target's view. */
struct troot_dir {
	char path[PATH_MAX]; /* as the target sees it: for the target's own calls only */
	char name[64];       /* its last component */
	int parent;          /* its parent, open (O_PATH): removal needs no live target */
	int fd;              /* the directory made, open (O_PATH) from its mkdir on */
	int guard;           /* the guardian's socket (see troot.c), or -1 */
	struct cred cred;    /* the target's, taken for everything done in it */
};

/* An empty troot_dir, safe to troot_remove(). */
#define TROOT_DIR_INIT { .parent = -1, .fd = -1, .guard = -1 }

/*
 * Make a fresh directory, mode 0700, as the target (so owned by its fs
 * uid/gid), under one of the target's temporary directories, and a
 * guardian that removes it should heapctl die before troot_remove().
 * Returns 0, or -1 when no temporary directory took it.
 */
int troot_mkdir(pid_t pid, struct troot_dir *dir, struct hc_err *err);
/*
 * Open path in pid's root (a live thread's when the leader has exited)
 * for reading, as the target, with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS): an absolute link the target planted resolves
 * inside its root, never in heapctl's.  It must be a regular file: it is
 * looked up O_PATH first (a FIFO would block, a device's open() has
 * effects), checked, then opened.  nofollow: O_NOFOLLOW for the last
 * component, or 0.  st gets its stat.  An fd, or -1 with errno.
 */
int troot_open(pid_t pid, const char *path, int nofollow, struct stat *st);
/*
 * pathfd (O_PATH, closed here, -1 passed through) reopened for reading,
 * with the caller's rights, if it is a regular file (st gets its stat):
 * the one way heapctl opens a file it looked up by name.  An fd, or -1.
 */
int troot_reopen_reg(int pathfd, struct stat *st);
/* Create name in the directory (O_EXCL, never through a link), writable, as the target. */
int troot_create(const struct troot_dir *dir, const char *name, mode_t mode);
/*
 * Copy name, a file the target wrote in the directory, to our file to
 * (cred_out_open()).  It must be a regular file of the target's own, with
 * one link, of at most max bytes, beginning with one of the '|'-separated
 * prefixes in magic (the allocator's format): a FIFO, a device, a link, a hard link to another file, or
 * anything else is refused before a byte of it is written.
 */
int troot_fetch(const struct troot_dir *dir, const char *name, const char *magic, const char *to,
		uint64_t max, struct hc_err *err);
/*
 * Remove the directory and what heapctl or the allocator put in it,
 * through the descriptors kept, as the target.  A directory the target
 * renamed away is emptied where it is, and its name not touched.
 */
void troot_remove(struct troot_dir *dir);

#endif
