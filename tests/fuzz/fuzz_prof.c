// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: heap profile text -> parser -> symbolizer -> every
 * writer, with the input as its own base (the --base path).  Built and run
 * by `make fuzz` (clang); seeds in tests/data/prof/.
 *
 * The first input byte picks report options, the rest is the profile, so
 * the fuzzer also explores --lines, --no-inline, --objects and --shrink.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <heapctl/prof.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct hc_report_opts ro;
	struct hc_write_opts wo;
	struct hc_err err;
	struct hc_report *r;
	struct hc_prof *p;
	uint8_t flags;
	int f;

	if (!size)
		return 0;
	if (!sink)
		sink = fopen("/dev/null", "w");
	flags = data[0];
	memset(&ro, 0, sizeof(ro));
	memset(&wo, 0, sizeof(wo));
	memset(&err, 0, sizeof(err));
	ro.lines = flags & 1;
	ro.no_inline = flags & 2;
	ro.keep_alloc = flags & 4;
	wo.objects = flags & 8;
	wo.shrink = flags & 16;
	wo.top = flags >> 5;
	p = hc_prof_parse((const char *)data + 1, size - 1, "fuzz", &err);
	if (!p)
		return 0;
	r = hc_report_build(p, (flags & 32) ? p : NULL, &ro, &err);
	for (f = 0; r && sink && f <= HC_FMT_JSON; f++) {
		memset(&err, 0, sizeof(err));
		if (hc_report_write(r, (enum hc_report_format)f, &wo, sink, &err) < 0)
			continue; /* a failed writer leaves the others to run */
	}
	hc_report_free(r);
	hc_prof_free(p);
	return 0;
}
