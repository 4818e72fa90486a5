/* SPDX-License-Identifier: MIT */
/*
 * The dynamic linker's list of loaded objects, struct r_debug and its
 * link_map entries (<link.h>), found through the executable's DT_DEBUG
 * (linkmap.c).  Pure: the target's memory is read through a callback
 * (sym.c reads the target's, tests/fuzz/fuzz_linkmap.c its input), since
 * the list lives in the target's writable memory.
 */
#ifndef HC_LINKMAP_H
#define HC_LINKMAP_H

#include <stddef.h>
#include <stdint.h>

/* The most a target's list may make linkmap.c read. */
#define LINKMAP_MAX_DYN 4096     /* bytes of the executable's dynamic section */
#define LINKMAP_MAX_ENTRIES 4096 /* link_map entries (the list may be a cycle) */

struct linkmap_src {
	/* len bytes at raddr into buf: 0, or -1 if they cannot be read */
	int (*read)(void *arg, uint64_t raddr, void *buf, size_t len);
	/* each entry in list order: its address, its l_ld (the object's dynamic section), its place */
	void (*entry)(void *arg, uint64_t map, uint64_t l_ld, unsigned idx);
	void *arg;
	uint64_t dynamic; /* the executable's PT_DYNAMIC in the target */
};

/*
 * Walk the list: entry() for each link_map in the dynamic linker's search
 * order.  Returns 1 if the loader is not done (r_debug not there yet, or
 * its r_state not RT_CONSISTENT: nothing is walked), else 0 (also when
 * there is no DT_DEBUG: a static-pie's loader is not one to wait for).
 */
int linkmap_walk(const struct linkmap_src *s);

#endif
