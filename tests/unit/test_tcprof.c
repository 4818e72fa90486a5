// SPDX-License-Identifier: MIT
/*
 * Unit test: tc_profile_filter() drops the buckets of a gperftools heap
 * profile whose stacks are heapctl's own (a frame in GetHeapProfile(), a
 * first frame where heapctl's calls return, or a page-aligned first frame in
 * no object's code, as older versions' page was) and takes their counts out
 * of the header; a bucket with an empty stack stays, even when the next
 * bucket's count is 0 (which, read as an address, looks like heapctl's page).
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_tcmalloc.h"
#include "unit.h"

/* The program's code: 0x400000..0x500000. */
static bool in_text(void *arg, uint64_t raddr)
{
	(void)arg;
	return raddr >= 0x400000 && raddr < 0x500000;
}

static const struct tc_frames frames = { 0x401000, 0x401100, 0x7f12345678f0, in_text, NULL };

static char *filter(const char *in, size_t *len)
{
	char *text = strdup(in);

	*len = strlen(in);
	return text ? tc_profile_filter(text, len, &frames) : NULL;
}

static void drops(void)
{
	static const char in[] =
		"heap profile:      5:  1054720 [    10:  2105320] @ heapprofile\n"
		"     1:  1048576 [     2:  2097152] @ 0x7f0000001000 0x401f00\n" /* heapctl's page */
		"     1:     1024 [     1:     1024] @ 0x401050 0x402000\n"       /* GetHeapProfile */
		"     1:      512 [     3:     1536] @ 0x402000 0x403000\n"
		"     1:      512 [     3:     1512] @ 0x7f0000002010\n"
		"     1:     4096 [     1:     4096] @ 0x7f12345678f0 0x404000\n" /* heapctl's call */
		"\n"
		"MAPPED_LIBRARIES:\n"
		"00400000-00500000 r-xp 00000000 08:01 1 /usr/bin/prog\n";
	size_t len;
	char *out = filter(in, &len);

	begin("tc_profile_filter drops heapctl's buckets");
	CHECK(out && len == strlen(out), "length %zu", len);
	CHECK(out && !strncmp(out, "heap profile:      2:     1024 [     6:     3048] @ heapprofile\n",
			      63),
	      "header: %.70s", out ? out : "");
	CHECK(out && !strstr(out, "1048576") && !strstr(out, "0x401050"), "kept heapctl's: %s",
	      out ? out : "");
	CHECK(out && strstr(out, "@ 0x402000 0x403000\n") && strstr(out, "@ 0x7f0000002010\n"),
	      "dropped the program's: %s", out ? out : "");
	CHECK(out && strstr(out, "\nMAPPED_LIBRARIES:\n00400000-00500000"), "tail: %s",
	      out ? out : "");
	free(out);
	end();
}

static void empty_stack(void)
{
	/* "@ " and "@": no frames; the next line's "0" is a count, not an address */
	static const char in[] = "heap profile:      2:     2048 [     4:     4096] @ heapprofile\n"
				 "     1:     1024 [     1:     1024] @ \n"
				 "     0:        0 [     1:     1024] @ 0x402000\n"
				 "     1:     1024 [     1:     1024] @\n"
				 "     0:        0 [     1:     1024] @ 0x402000\n";
	size_t len;
	char *out = filter(in, &len);

	begin("tc_profile_filter keeps empty stacks");
	CHECK(out && len == strlen(in) && !strcmp(out, in), "changed: %s", out ? out : "");
	free(out);
	end();
}

static void odd_shape(void)
{
	static const char in[] = "not a heap profile\n     1:  1048576 [     1:  1048576] @ 0x1000\n";
	size_t len;
	char *out = filter(in, &len);

	begin("tc_profile_filter passes other text through");
	CHECK(out && !strcmp(out, in), "changed: %s", out ? out : "");
	free(out);
	end();
}

int main(void)
{
	drops();
	empty_stack();
	odd_shape();
	return nfailed != 0;
}
