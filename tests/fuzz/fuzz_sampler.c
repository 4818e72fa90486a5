// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the tables of heapctl's injected sampler as a dump
 * reads them from the target (its writable .bss, so anything the target
 * writes there), through inj_sites() and inj_write_sites(), then the
 * heap_v2 text they make through heapctl's own profile parser.  The input:
 *
 *   u64 interval
 *   u8  nstacks, then each stack: u32 nframes, and min(nframes, 48) u64 frames
 *   the rest: live entries, 16 bytes each (ptr, size << 24 | stack id)
 *
 * Stack 0 is the table's unused first entry, as in the sampler.  Checks: no
 * crash; the totals are the sum of the sites; what is written parses (with
 * a non-zero interval) into as many stacks as there are sites.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/prof.h>

#include "inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hcs_stack st[256];
	struct hcs_live *live;
	struct inj_site *sites, tot;
	uint64_t interval, objs = 0;
	size_t at = 9, nst, nlive, n;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (size < 9)
		return 0;
	memcpy(&interval, data, 8);
	nst = 1 + data[8];
	memset(st, 0, nst * sizeof(st[0]));
	for (size_t i = 1; i < nst; i++) {
		uint32_t nf;

		if (size - at < 4)
			return 0;
		memcpy(&nf, data + at, 4);
		at += 4;
		st[i].nframes = nf;
		nf = nf < HCS_MAXFRAMES ? nf : HCS_MAXFRAMES;
		if ((size - at) / 8 < nf)
			return 0;
		memcpy(st[i].frames, data + at, nf * 8);
		at += nf * 8;
	}
	nlive = (size - at) / sizeof(*live);
	live = malloc(nlive ? nlive * sizeof(*live) : 1);
	sites = malloc((nlive + nst) * sizeof(*sites));
	if (!live || !sites) {
		free(live);
		free(sites);
		return 0;
	}
	memcpy(live, data + at, nlive * sizeof(*live));

	n = inj_sites(live, nlive, st, nst, sites, &tot);
	for (size_t i = 0; i < n; i++) {
		if (!sites[i].id || sites[i].id >= nst || !st[sites[i].id].nframes ||
		    st[sites[i].id].nframes > HCS_MAXFRAMES || (i && sites[i].bytes > sites[i - 1].bytes))
			__builtin_trap();
		objs += sites[i].objs;
	}
	if (n > nlive + nst || objs != tot.objs)
		__builtin_trap();

	f = open_memstream(&text, &len);
	if (f) {
		inj_write_sites(f, interval, sites, n, &tot, st);
		fputs("\nMAPPED_LIBRARIES:\n", f);
		if (fclose(f) == 0 && interval) {
			struct hc_err err = { 0 };
			struct hc_prof *p = hc_prof_parse(text, len, "sampler", &err);
			struct hc_prof_info info;

			if (!p)
				__builtin_trap(); /* heapctl cannot read back its own dump */
			hc_prof_info(p, &info);
			if (info.nstacks != n)
				__builtin_trap();
			hc_prof_free(p);
		}
	}
	free(text);
	free(live);
	free(sites);
	return 0;
}
