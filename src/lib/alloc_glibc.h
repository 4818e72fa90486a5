/* SPDX-License-Identifier: MIT */
/* glibc driver internals shared with the unit tests: the malloc_info() XML reader. */
#ifndef HC_ALLOC_GLIBC_H
#define HC_ALLOC_GLIBC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hc_err;

/* One <heap nr=N> of malloc_info(), or the process-wide totals. */
struct gl_arena {
	unsigned nr;
	uint64_t fast, fast_n; /* free in fastbins */
	uint64_t rest, rest_n; /* free in the other bins */
	uint64_t mmap, mmap_n; /* process-wide only: chunks mmapped on their own */
	uint64_t system, system_max;
	uint64_t aspace, aspace_mprotect;
};

#define GL_MAX_ARENAS 1024

struct gl_xml {
	bool seen_root;
	unsigned narenas;       /* listed in arena[] */
	unsigned narenas_total; /* seen in the XML */
	struct gl_arena all;
	struct gl_arena arena[GL_MAX_ARENAS];
};

/* Parse malloc_info(0, fp)'s XML (expat).  0, or -1 with HC_E_FORMAT. */
int gl_xml_parse(const char *xml, size_t len, struct gl_xml *x, struct hc_err *err);

#endif
