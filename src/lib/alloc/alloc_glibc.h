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
	uint64_t binned; /* free chunks listed in <sizes> (fastbins and unsorted included) */
	/*
	 * Estimate of what malloc_trim(0) gives back here: the whole pages inside
	 * its free chunks (and, in the main arena, the top chunk).  Every chunk
	 * of a <sizes> line is taken as their average size, which never
	 * overstates it (the pages of a chunk grow no faster than its size).
	 */
	uint64_t trim;
};

#define GL_MAX_ARENAS 1024

struct gl_xml {
	bool seen_root;
	unsigned narenas;       /* listed in arena[] */
	unsigned narenas_total; /* seen in the XML */
	struct gl_arena all;
	/* over every heap, those past GL_MAX_ARENAS too */
	uint64_t trim;         /* what malloc_trim(0) gives back (estimate, see gl_arena) */
	uint64_t free_threads; /* free in arenas other than the main one (nr != 0) */
	uint64_t trim_threads; /* of which malloc_trim(0) gives back */
	struct gl_arena arena[GL_MAX_ARENAS];
};

/* Parse malloc_info(0, fp)'s XML (expat).  0, or -1 with HC_E_FORMAT. */
int gl_xml_parse(const char *xml, size_t len, struct gl_xml *x, struct hc_err *err);
/*
 * Bytes malloc_trim(0) can madvise away in a free chunk of size bytes, on
 * average over where the chunk starts in its page: the whole pages past its
 * header (glibc's mtrim()).  page: a power of two.
 */
uint64_t gl_trim_estimate(uint64_t size, uint64_t page);

#endif
