// SPDX-License-Identifier: MIT
/*
 * linkmap.c: the objects in the dynamic linker's search order.  The
 * executable's DT_DEBUG entry points at struct r_debug, which the loader
 * fills in before it maps the libraries and marks RT_CONSISTENT once they
 * are mapped and relocated (and again after each dlopen); its r_map is
 * the list of link_map entries, the executable first.  Every read is
 * bounded (linkmap.h): 4 KiB of dynamic section, 4096 entries.
 */
#include <elf.h>
#include <stdbool.h>

#include "linkmap.h"

int linkmap_walk(const struct linkmap_src *s)
{
	uint64_t rdebug = 0, lm;
	unsigned int idx = 0;
	bool tag = false;
	int32_t state = 0;

	for (uint64_t at = s->dynamic;; at += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;

		if (s->read(s->arg, at, &d, sizeof(d)) < 0 || d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_DEBUG) {
			rdebug = d.d_un.d_ptr;
			tag = true;
		}
		if (at - s->dynamic > LINKMAP_MAX_DYN)
			break;
	}
	/* a static-pie has DT_DEBUG too, but no loader to wait for: the caller knows */
	if (!tag)
		return 0;
	/* r_debug: int r_version; struct link_map *r_map; ElfW(Addr) r_brk; r_state */
	if (!rdebug || s->read(s->arg, rdebug + 24, &state, 4) < 0 || state != 0 /* RT_CONSISTENT */)
		return 1;
	if (s->read(s->arg, rdebug + 8, &lm, 8) < 0)
		return 0;
	while (lm && idx < LINKMAP_MAX_ENTRIES) {
		/* link_map: l_addr, l_name, l_ld, l_next, l_prev */
		uint64_t f[4];

		if (s->read(s->arg, lm, f, sizeof(f)) < 0)
			break;
		s->entry(s->arg, f[2], idx);
		idx++;
		lm = f[3];
	}
	return 0;
}
