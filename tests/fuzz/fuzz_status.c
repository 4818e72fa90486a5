// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: /proc/PID/status through api.c's read_status() (static,
 * hence the #include), with fopen() redirected to the fuzz input.  "Name:"
 * is the target's own comm (prctl(PR_SET_NAME)), so any bytes can follow it.
 * Checks: no crash, the name NUL-terminated and one line.
 */
#include <stdint.h>
#include <stdio.h>

static const uint8_t *fz_data;
static size_t fz_size;

/* Every fopen() of api.c reads the input instead of /proc. */
static FILE *fz_fopen(const char *path, const char *mode)
{
	(void)path;
	(void)mode;
	return fz_size ? fmemopen((void *)fz_data, fz_size, "r") : NULL;
}
#define fopen fz_fopen

#include "../../src/lib/api.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_status ps;
	struct hc_err err = { 0 };

	fz_data = data;
	fz_size = size;
	if (read_status(1, &ps, &err) == 0) {
		if (!memchr(ps.name, 0, sizeof(ps.name)) || strchr(ps.name, '\n'))
			__builtin_trap();
	}
	return 0;
}
