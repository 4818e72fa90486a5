/* SPDX-License-Identifier: MIT */
/* mimalloc driver internals shared with the unit tests: versions, options, the statistics text. */
#ifndef HC_ALLOC_MIMALLOC_H
#define HC_ALLOC_MIMALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hc_err;

/* mi_version()'s number (209) as mimalloc's releases are named: "2.0.9". */
void mi_version_str(int v, char *out, size_t len);

/* One mi_option_t of mimalloc 2.0.9 (its mimalloc.h); the deprecated ones are left out. */
struct mi_opt {
	const char *name; /* as in MIMALLOC_<NAME>, lower case */
	int id;           /* its mi_option_t value */
	/* what a change made while the process runs does, when not what one expects; or NULL */
	const char *later;
};
extern const struct mi_opt mi_opts[];
extern const size_t mi_nopts;

/* name, with or without "mi_option_", in any case; NULL if 2.0.9 has no such option. */
const struct mi_opt *mi_opt_find(const char *name);
/*
 * Whether version (mi_version()) numbers its options as mimalloc 2.0.9
 * does: 0, or -1 with HC_E_UNSUPPORTED, naming the version, and the
 * environment variable (MIMALLOC_<NAME>, for name, or NULL) as the fix.
 */
int mi_opts_check(int version, pid_t pid, const char *name, struct hc_err *err);

/*
 * An amount of mi_stats_print_out()'s text: column col (0 peak, 1 total,
 * 2 freed, 3 current) of the row whose label is name ("reserved"), in
 * bytes.  mimalloc prints "288.0 MiB", "512 B" or "0", cut (not rounded)
 * to a tenth of the unit.  false if the row or the column is not there,
 * or the amount is negative.
 */
bool mi_stats_amount(const char *text, const char *name, int col, uint64_t *out);

#endif
