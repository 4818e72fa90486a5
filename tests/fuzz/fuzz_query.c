// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the query string of a heapctl serve request through
 * serve_query_parse() (src/cli/serve_query.c), which splits it, decodes
 * %XX and checks each argument with serve_query_arg(), the function serve
 * runs on what libmicrohttpd decoded.  Anyone who can reach serve's port
 * writes these bytes.  Checks: no crash; an accepted query names exactly
 * one process, by a pid in range or a comm of 1 to 15 bytes with no '/'
 * or control character, and seconds within bounds.
 */
#include <stdint.h>
#include <string.h>

#include "serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_query q;
	char why[200];
	size_t n;

	if (serve_query_parse(&q, (const char *)data, size, why, sizeof(why))) {
		if (!memchr(why, 0, sizeof(why)) || !why[0])
			__builtin_trap();
		return 0;
	}
	if (!q.pid == !q.name[0])
		__builtin_trap();
	if (q.pid && (q.pid < 1 || q.pid > 4194304))
		__builtin_trap();
	n = strnlen(q.name, sizeof(q.name));
	if (n >= sizeof(q.name) || strchr(q.name, '/'))
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)q.name[i] < 0x20 || q.name[i] == 0x7f)
			__builtin_trap();
	if (q.have_seconds ? q.seconds < 1 || q.seconds > SERVE_MAX_SECONDS : q.seconds != 0)
		__builtin_trap();
	return 0;
}
