// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: /proc/PID/status through procfs_status() (procfs.c is
 * included so that its fopen() reads the fuzz input).  "Name:"
 * is the target's own comm (prctl(PR_SET_NAME)), so any bytes can follow it.
 * Checks: no crash, the name NUL-terminated and one line.
 */
#include <stdint.h>
#include <stdio.h>

static const uint8_t *fz_data;
static size_t fz_size;

/* Every fopen() of procfs.c reads the input instead of /proc. */
static FILE *fz_fopen(const char *path, const char *mode)
{
	(void)path;
	(void)mode;
	return fz_size ? fmemopen((void *)fz_data, fz_size, "r") : NULL;
}
#define fopen fz_fopen

#include <string.h>

#include "../../src/lib/procfs.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procfs_status ps;

	fz_data = data;
	fz_size = size;
	if (procfs_status("/proc/1/status", &ps) == 0) {
		if (!memchr(ps.name, 0, sizeof(ps.name)) || strchr(ps.name, '\n'))
			__builtin_trap();
	}
	return 0;
}
