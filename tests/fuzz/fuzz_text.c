// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: text read back from the target.  The input sits in
 * this process's memory, right before an unmapped page (the worst case a
 * target can set up), and is read the way heapctl reads a target's
 * strings: the allocators' output callbacks' text through alloc.c's
 * je_print_cb() (malloc_stats_print's write_cb, the string second) and
 * mi_print_cb() (mimalloc's output function, the string first), and
 * mallctl string values through call_read_str(); and what the callbacks
 * brought, as mimalloc's statistics text, through mi_stats_amount().
 * Checks: no crash, what reaches the sink is exactly the bytes up to the
 * first NUL, call_read_str() always terminates its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "alloc_mimalloc.h"
#include "call.h"
#include "fuzz_mem.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sinkbuf {
	char *b;
	size_t len, cap;
};

static int sink(void *arg, const char *s, size_t n)
{
	struct sinkbuf *sb = arg;

	if (!n)
		return 0;
	if (sb->len + n > sb->cap) {
		size_t cap = (sb->len + n) * 2 + 64;
		char *nb = realloc(sb->b, cap);

		if (!nb)
			return -1;
		sb->b = nb;
		sb->cap = cap;
	}
	memcpy(sb->b + sb->len, s, n);
	sb->len += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int (*const cbs[2])(void *, struct engine *, const uint64_t *, struct hc_err *) = {
		je_print_cb, mi_print_cb
	};
	struct sinkbuf sb = { 0 };
	struct print_ctx pc = { sink, &sb };
	struct hc_target t;
	struct hc_err err = { 0 };
	uint64_t a[6] = { 0 };
	uint8_t *mem;
	char out[300];
	int which;

	if (!size)
		return 0;
	mem = fz_copy_at_end(data, size); /* the input ends where readable memory ends */
	if (!mem)
		return 0;
	memset(&t, 0, sizeof(t));
	t.img.pid = getpid();
	t.img.memfd = -1;
	t.img.arch = hc_arch_host();
	t.eng.img = &t.img;

	/* each input goes to one of them: je_print_cb reads a[1], mi_print_cb a[0] */
	which = data[size - 1] & 1;
	a[which ? 0 : 1] = (uint64_t)(uintptr_t)mem;
	if (cbs[which](&pc, &t.eng, a, &err) == 0) {
		const uint8_t *nul = memchr(data, 0, size);

		/* success means a NUL was found, and only what precedes it was passed on */
		if (!nul || sb.len != (size_t)(nul - data) || (sb.len && memcmp(sb.b, data, sb.len)))
			__builtin_trap();
	} else if (memchr(data, 0, size)) {
		__builtin_trap(); /* a terminated string must be read */
	}
	if (sb.len) {
		char *text = strndup(sb.b, sb.len);
		uint64_t v;

		if (text)
			mi_stats_amount(text, "reserved", data[0] % 6, &v);
		free(text);
	}
	free(sb.b);

	memset(&err, 0, sizeof(err));
	memset(out, 0x55, sizeof(out));
	if (call_read_str(&t.eng, (uint64_t)(uintptr_t)mem, out, 1 + data[0] % sizeof(out), &err) == 0 &&
	    !memchr(out, 0, 1 + data[0] % sizeof(out)))
		__builtin_trap();
	return 0;
}
