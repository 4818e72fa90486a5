/* SPDX-License-Identifier: MIT */
/*
 * Files in the target's own view of the filesystem (its mount namespace and
 * root), reached through /proc/PID/root without ever following a link the
 * target planted out of it.
 */
#ifndef HC_TROOT_H
#define HC_TROOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hc_err;

/*
 * Make a fresh directory, mode 0700, owned by the target's fs uid/gid, under
 * one of the target's temporary directories; *dir gets its path as the
 * target sees it.  Returns 0, or -1 when no temporary directory took it.
 */
int troot_mkdir(pid_t pid, char *dir, size_t len, struct hc_err *err);
/* Copy the target's regular file path (at most max bytes) to our file to. */
int troot_fetch(pid_t pid, const char *path, const char *to, uint64_t max, struct hc_err *err);
/* Remove path (a file) if given, then the directory dir. */
void troot_remove(pid_t pid, const char *dir, const char *path);

#endif
