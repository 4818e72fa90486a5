/* SPDX-License-Identifier: MIT */
/*
 * Which C library a process runs on (libc.c), by evidence only: the loader
 * the executable names in PT_INTERP, the libc's own symbols, strings and
 * version.  Nothing is stopped, nothing is called.
 */
#ifndef HC_LIBC_H
#define HC_LIBC_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/types.h>

/* No image.h here: maps.c, which keeps its own struct vma, asks libc_of_pid() too. */
struct image;
struct libc_id; /* image.h */

/*
 * im's C library, read once (maps_load() done) and kept in im->libc: a
 * dynamic musl by its loader (ld-musl-ARCH.so.1) or its libc.so's banner,
 * a static one by symbols only musl's malloc has (__libc_malloc_impl,
 * __malloc_context, __malloc_donate); glibc likewise.  Never fails: what
 * cannot be told stays LIBC_UNKNOWN, or "" for the version.
 */
const struct libc_id *libc_identify(struct image *im);
/*
 * libc_identify() for a pid nothing else has opened (heapctl maps): its
 * mappings and executable read once, then let go: "musl", "glibc", or ""
 * if they cannot be told or read.
 */
const char *libc_of_pid(pid_t pid, bool *is_static);
/*
 * Pure: the version in musl's read-only data (buf, len bytes of NUL-ended
 * strings), which holds the loader's banner "musl libc (ARCH)" and, as a
 * string of its own, __libc_version ("1.2.3").  false if the banner or the
 * version is missing.
 */
bool libc_musl_version(const char *buf, size_t len, char *out, size_t outlen);

#endif
