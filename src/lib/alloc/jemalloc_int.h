/* SPDX-License-Identifier: MIT */
/*
 * What the jemalloc driver's files share: its state (struct je), the
 * mallctl namespace (je_ctl.c), the remote mallctl calls (je_ctl.c), and
 * the listing of a prefix (je_list.c) that alloc_jemalloc.c serves.
 */
#ifndef HC_JEMALLOC_INT_H
#define HC_JEMALLOC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <heapctl/heapctl.h>

#include "image.h"

#define MALLCTL_ARENAS_ALL 4096

struct je {
	struct obj *obj;
	char prefix[32];
	uint64_t ctl, stats_print;
	uint64_t lo, hi; /* allocator code range, for the safe-point check */
};

static inline struct je *je_of(const struct hc_target *t)
{
	return t->drv.alloc_priv;
}

/*
 * How a name may be used, as jemalloc(3) marks it: r- read only, rw, -w
 * write only, -- (void) an action.  C_MAKE is read-only but every read
 * creates something (arenas.create, tcache.create): `get` refuses it and
 * `set NAME` runs it.  C_RXW is "r- or -w" (thread.prof.name): one call may
 * not do both.  C_PTR trades pointers into the process: not supported.
 */
enum ctl_access { C_R, C_RW, C_W, C_VOID, C_MAKE, C_RXW, C_PTR };

struct ctl_def {
	/*
	 * Dotted name; a component '#' is an index (arena.#.purge), and
	 * "(a|b|c)" any one of the names listed (the mutexes and counters).
	 */
	const char *pat;
	enum hc_type type;
	enum ctl_access acc;
};

/* je_ctl.c: the namespace, as jemalloc(3) documents it */
extern const struct ctl_def ctl_defs[];
extern const size_t ctl_ndefs;
/* The definition name matches, or NULL. */
const struct ctl_def *ctl_def_of(const char *name);
/* A name with names below it (arena.0, stats.arenas.0), not a control. */
bool ctl_is_group(const char *name);
/* Its type; -1 if heapctl does not know it. */
int ctl_type_of(const char *name, enum hc_type *type);
/* The length of pattern p's first component. */
size_t pat_comp_len(const char *p);
/* Does name match pat (with prefix: is it under pat)? 1, 0. */
int pat_match(const char *pat, const char *name, bool prefix);
/* A value as the bytes mallctl takes, and back. */
void value_bytes(const struct hc_value *v, uint8_t *buf, size_t *len);
void value_from_bytes(enum hc_type type, const uint8_t *buf, struct hc_value *v);
bool is_stats(const char *name);
/* je_ctl.c: mallctl in the target */
const char *mallctl_strerror(int rc);
int je_call(struct hc_target *t, const char *name, void *old, size_t *oldlen, const void *newv,
	    size_t newlen, int *rc, struct hc_err *err);
/* err from mallctl's own errno rc for name */
int ctl_fail(struct hc_target *t, const char *name, int rc, struct hc_err *err);
int je_read(struct hc_target *t, const char *name, enum hc_type type, struct hc_value *v,
	    int *rcp, struct hc_err *err);
int je_read_u64(struct hc_target *t, const char *name, uint64_t *out, struct hc_err *err);
/* Stats are a snapshot that a write to epoch refreshes.  Inside a session. */
int je_refresh(struct hc_target *t, struct hc_err *err);
/* je_list.c: every control under prefix (alloc_ops.ctl_list) */
int je_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out, size_t *n,
		char *skipped, size_t skipped_len, struct hc_err *err);

#endif
