// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the XML glibc's malloc_info() writes in the target,
 * read back by heapctl, through gl_xml_parse() (expat): the per-heap free
 * chunks, totals and what malloc_trim(0) would give back.  Seeds: glibc
 * 2.36's own output, one arena and four.  Checks: no crash or hang; the
 * arenas kept are at most GL_MAX_ARENAS and no more than were seen; an
 * error has a message.
 */
#include <stdint.h>
#include <string.h>

#include "alloc_glibc.h"
#include "err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gl_xml x;
	struct hc_err err = { 0 };

	if (gl_xml_parse((const char *)data, size, &x, &err) < 0) {
		if (!err.msg[0] || !memchr(err.msg, 0, sizeof(err.msg)))
			__builtin_trap();
		return 0;
	}
	if (!x.seen_root || x.narenas > GL_MAX_ARENAS || x.narenas > x.narenas_total)
		__builtin_trap();
	return 0;
}
