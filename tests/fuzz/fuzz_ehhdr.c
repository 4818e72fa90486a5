// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: ehhdr_build() (src/lib/proc/ehhdr.c), the .eh_frame_hdr
 * heapctl makes for a static executable from its .eh_frame, a section the
 * target's file chooses.
 *
 * The input is a 12-byte header and the section:
 *
 *   u64 eh_addr  the section's runtime address
 *   u32 delta    the table's address: eh_addr + (s32)delta
 *
 * The section is copied to a buffer of exactly its size (ASan sees a read
 * past it).  Checks: no crash; a failure returns NULL with an error; a
 * table has the GNU ld header, points back at eh_addr, is as long as its
 * count says, sorted strictly by location, and names FDEs inside the
 * section; ehhdr_rebase() moves it to eh_addr and back to the same bytes,
 * or refuses with HC_E_UNSUPPORTED.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ehhdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 12

static int64_t s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_err err;
	uint64_t eh_addr, hdr, prev = 0;
	uint32_t delta, n;
	size_t len, out_len = 0;
	uint8_t *eh, *h;

	if (size < HDR)
		return 0;
	memcpy(&eh_addr, data, 8);
	memcpy(&delta, data + 8, 4);
	hdr = eh_addr + (uint64_t)(int64_t)(int32_t)delta;
	len = size - HDR;
	eh = malloc(len ? len : 1);
	if (!eh)
		return 0;
	memcpy(eh, data + HDR, len);
	memset(&err, 0, sizeof(err));
	h = ehhdr_build(eh, len, eh_addr, hdr, &out_len, &err);
	if (!h) {
		if (err.code == HC_OK || !err.msg[0])
			__builtin_trap();
		free(eh);
		return 0;
	}
	memcpy(&n, h + 8, 4);
	if (out_len < 12 || out_len != 12 + 8 * (size_t)n || n > EHHDR_MAX_FDES || h[0] != 1 ||
	    h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b || hdr + 4 + s32(h + 4) != eh_addr)
		__builtin_trap();
	for (uint32_t i = 0; i < n; i++) {
		uint64_t loc = hdr + s32(h + 12 + 8 * (size_t)i);
		uint64_t fde = hdr + s32(h + 16 + 8 * (size_t)i);

		if ((i && loc <= prev) || !loc || fde - eh_addr >= len)
			__builtin_trap();
		prev = loc;
	}
	/* moved by -delta (to eh_addr), then back: either refused, or the same bytes again */
	{
		uint8_t *c = malloc(out_len);

		if (c) {
			memcpy(c, h, out_len);
			memset(&err, 0, sizeof(err));
			if (!ehhdr_rebase(c, out_len, hdr, eh_addr, &err)) {
				if (eh_addr + 4 + s32(c + 4) != eh_addr ||
				    ehhdr_rebase(c, out_len, eh_addr, hdr, &err) || memcmp(c, h, out_len))
					__builtin_trap();
			} else if (err.code != HC_E_UNSUPPORTED) {
				__builtin_trap();
			}
			free(c);
		}
	}
	free(h);
	free(eh);
	return 0;
}
