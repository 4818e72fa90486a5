// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the inline hook planners (hook_plan(),
 * arch/<name>/hook.c) on a function's bytes, which the target chooses.
 *
 * The input is a 4-byte header and the code:
 *
 *   u8  flags     1: aarch64, else x86_64
 *                 6: the trampoline 1 MiB above entry, 64 MiB below, 2 GiB
 *                    - 1 MiB above, or 200 MiB above
 *                 8: a why buffer of 8 bytes (truncated), else 256
 *                 16: func_size is the code's length, whatever the next field says
 *   u8  pad
 *   u16 func_size the symbol's size, 0 unknown (may exceed the code given)
 *
 * The code is read from a copy of exactly its size (ASan sees a read past
 * it).  Checks: no crash; a plan has a patch of 1 to 16 bytes at entry or
 * entry + 4, within the code, whose orig is the code's bytes there, and a
 * trampoline of at most 128 bytes holding its stub and tramp_orig; a
 * refusal says why, terminated, and leaves patch_len 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR   4
#define ENTRY 0x00007f1234567000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t tramps[4] = { 1 << 20, -(64ll << 20), (2ll << 30) - (1 << 20),
					   200ll << 20 };
	const struct hc_arch *a;
	struct hc_hook_in in = { 0 };
	struct hc_hook_plan p;
	char why[256];
	size_t whylen, off;
	uint8_t *code;
	int rc;

	if (size < HDR)
		return 0;
	a = data[0] & 1 ? &hc_arch_aarch64 : &hc_arch_x86_64;
	whylen = data[0] & 8 ? 8 : sizeof(why);
	code = malloc(size - HDR ? size - HDR : 1);
	if (!code)
		return 0;
	memcpy(code, data + HDR, size - HDR);
	in.name = "fn";
	in.entry = ENTRY;
	in.code = code;
	in.code_len = size - HDR;
	in.func_size = data[0] & 16 ? in.code_len : ((size_t)data[2] | (size_t)data[3] << 8);
	in.tramp = (uint64_t)((int64_t)ENTRY + tramps[(data[0] >> 1) & 3]);
	in.hook = 0x0000555555550000ull;
	memset(why, 0x5a, sizeof(why));

	rc = a->hook_plan(&in, &p, why, whylen);
	if (rc) {
		if (rc != -1 || !memchr(why, '\0', whylen) || !why[0] || p.patch_len)
			abort();
		free(code);
		return 0;
	}
	off = (size_t)(p.patch_addr - in.entry);
	if (p.patch_addr < in.entry || off > 4 || !p.patch_len || p.patch_len > sizeof(p.patch) ||
	    off + p.patch_len > in.code_len || memcmp(p.orig, code + off, p.patch_len))
		abort();
	if (!p.tramp_len || p.tramp_len > sizeof(p.tramp) || p.stub < in.tramp ||
	    p.stub >= in.tramp + p.tramp_len || p.tramp_orig <= p.stub ||
	    p.tramp_orig >= in.tramp + p.tramp_len)
		abort();
	if (a == &hc_arch_x86_64) {
		int32_t rel;

		memcpy(&rel, p.patch + 1, 4);
		if (off || p.patch[0] != 0xe9 || in.entry + 5 + (uint64_t)(int64_t)rel != p.stub)
			abort();
	} else {
		uint32_t w;

		memcpy(&w, p.patch, 4);
		if (p.patch_len != 4 || (w >> 26) != 5 ||
		    p.patch_addr + (uint64_t)((int64_t)((uint64_t)w << 38) >> 36) != p.stub)
			abort();
	}
	free(code);
	return 0;
}
