// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the dynamic linker's list of loaded objects, walked by
 * linkmap_walk() from the executable's DT_DEBUG through struct r_debug and
 * its link_map entries, all of it in the target's writable memory.  The
 * input is a 4-byte offset of the executable's dynamic section and the
 * memory it points into, at address 0x10000 (the pointers in it are
 * absolute: tests/fuzz/gen-seeds.sh makes the seeds), read through the
 * callback from a copy of exactly its size.  Checks: no crash or hang; the
 * entries come numbered 0, 1, 2... and at most LINKMAP_MAX_ENTRIES; a
 * loader not done yet walks none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linkmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x10000ull

struct mem {
	const uint8_t *p;
	size_t len;
	unsigned n; /* entries seen */
};

static int mem_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	const struct mem *m = arg;
	uint64_t off = raddr - BASE;

	if (raddr < BASE || off > m->len || len > m->len - off)
		return -1;
	memcpy(buf, m->p + off, len);
	return 0;
}

static void entry(void *arg, uint64_t map, uint64_t l_ld, unsigned idx)
{
	struct mem *m = arg;

	(void)map;
	(void)l_ld;
	if (idx != m->n++ || idx >= LINKMAP_MAX_ENTRIES)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m;
	uint32_t dyn;
	uint8_t *copy;

	if (size < 4)
		return 0;
	memcpy(&dyn, data, 4);
	copy = malloc(size - 4 ? size - 4 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 4, size - 4);
	m.p = copy;
	m.len = size - 4;
	m.n = 0;
	if (linkmap_walk(&(struct linkmap_src){ .read = mem_read, .entry = entry, .arg = &m,
						 .dynamic = BASE + dyn }) > 0 &&
	    m.n)
		__builtin_trap();
	free(copy);
	return 0;
}
