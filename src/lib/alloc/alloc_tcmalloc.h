/* SPDX-License-Identifier: MIT */
/* tcmalloc driver internals shared with the unit tests: the profile filter. */
#ifndef HC_ALLOC_TCMALLOC_H
#define HC_ALLOC_TCMALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which frames are heapctl's own in a profile of the target's. */
struct tc_frames {
	uint64_t get_lo, get_hi; /* GetHeapProfile()'s code */
	uint64_t ret_addr;       /* where heapctl's calls return (call.h, call_ret_raddr()) */
	/* is raddr in some object's executable mappings? */
	bool (*in_text)(void *arg, uint64_t raddr);
	void *arg;
};

/*
 * A gperftools heap profile (text, *len bytes, malloc'ed, NUL-terminated)
 * without the buckets whose stacks are heapctl's, their counts taken out of
 * the header's totals.  Returns text itself if nothing is dropped or it is
 * not in the expected shape, else a new buffer (text is freed; *len set).
 */
char *tc_profile_filter(char *text, size_t *len, const struct tc_frames *f);

#endif
