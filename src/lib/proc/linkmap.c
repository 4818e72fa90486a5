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
	bool tag = false, end = false;
	int32_t state = 0;

	/*
	 * In runs of up to 32 entries that stay within a page (one read
	 * each, not one per entry); a run that cannot be read is read an
	 * entry at a time, up to the first that cannot.
	 */
	for (uint64_t at = s->dynamic;;) {
		Elf64_Dyn run[32];
		size_t n = (4096 - (at & 4095)) / sizeof(Elf64_Dyn), got = 0;

		if (n > 32)
			n = 32;
		if (n && s->read(s->arg, at, run, n * sizeof(Elf64_Dyn)) == 0)
			got = n;
		else if (s->read(s->arg, at, run, sizeof(Elf64_Dyn)) == 0)
			got = 1;
		for (size_t i = 0; i < got && !end; i++, at += sizeof(Elf64_Dyn)) {
			if (run[i].d_tag == DT_NULL) {
				end = true;
				break;
			}
			if (run[i].d_tag == DT_DEBUG) {
				rdebug = run[i].d_un.d_ptr;
				tag = true;
			}
			end = at - s->dynamic > LINKMAP_MAX_DYN;
		}
		if (!got || end)
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
		s->entry(s->arg, lm, f[2], idx);
		idx++;
		lm = f[3];
	}
	return 0;
}
