// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the heap profile gperftools' GetHeapProfile() returns,
 * read from the target's memory (a NUL-terminated string: the input up to
 * its first NUL), through tc_profile_filter(), which drops the buckets
 * whose stacks are heapctl's own and takes their counts out of the header.
 * GetHeapProfile's code is at 0x401000..0x401100, the program's at
 * 0x400000..0x500000 (as in tests/unit/test_tcprof.c).  Checks: no crash;
 * the result is NUL-terminated at its length, and is the input itself
 * unless it begins with a rewritten header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_tcmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool in_text(void *arg, uint64_t raddr)
{
	(void)arg;
	return raddr >= 0x400000 && raddr < 0x500000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tc_frames frames = { 0x401000, 0x401100, 0x7f12345678f0, in_text, NULL };
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size, len0 = len;
	char *text = malloc(len + 1), *out;

	if (!text)
		return 0;
	memcpy(text, data, len);
	text[len] = 0;
	out = tc_profile_filter(text, &len, &frames);
	if (out == text) {
		if (len != len0 || memcmp(out, data, len))
			__builtin_trap();
	} else if (!out || strlen(out) != len || strncmp(out, "heap profile: ", 14)) {
		__builtin_trap();
	}
	free(out);
	return 0;
}
