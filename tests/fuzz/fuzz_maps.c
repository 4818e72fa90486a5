// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: /proc/PID/smaps and /proc/PID/maps text.  The kernel
 * writes these files, but the path at the end of a header line is whatever
 * name the target gave a file or a mapping (prctl(PR_SET_VMA_ANON_NAME),
 * memfd_create, a file named with spaces or newlines), and a stored smaps
 * file given to the library can hold anything.
 *
 * The whole input goes through hc_maps_parse() (maps.c: the `heapctl maps`
 * categories, arenas and stacks found by their neighbours) and
 * hc_maps_diagnose(); each line through maps_parse_line() (sym.c: the
 * objects heapctl symbolizes).  Checks: no crash; the categories add up to
 * the sum of the Rss lines; a parsed line has NUL-terminated perms and a
 * one-line path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_mem.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mapline ml;
	struct hc_err err = { 0 };
	struct hc_maps m;
	char *text = malloc(size + 1), *p, *nl;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	/*
	 * The parser takes a length: hand it exactly the input, no terminator,
	 * ending right before an unreadable page, so that reading past the end
	 * faults even inside libc, which ASan does not see.
	 */
	const uint8_t *mem = fz_copy_at_end(data, size);

	if (!mem) {
		free(text);
		return 0;
	}
	if (hc_maps_parse((const char *)mem, size, &m, &err) == 0) {
		uint64_t rss = 0, nmaps = 0;
		char diag[512];

		for (int c = 0; c < HC_MAP__COUNT; c++) {
			rss += m.cat[c].rss;
			nmaps += m.cat[c].nmaps;
		}
		if (rss != m.rss_sum || !nmaps)
			__builtin_trap();
		hc_maps_diagnose(&m, diag, sizeof(diag));
		if (!memchr(diag, 0, sizeof(diag)))
			__builtin_trap();
	}

	for (p = text; p && p < text + size; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (maps_parse_line(p, &ml) == 0) {
			if (!memchr(ml.perms, 0, sizeof(ml.perms)) || strchr(ml.path, '\n') ||
			    strlen(ml.path) >= sizeof(ml.path))
				__builtin_trap();
		}
	}
	free(text);
	return 0;
}
