// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: /proc/PID/status text through procfs_status_parse(),
 * the parser procfs_status() runs on the open file, and the same bytes as
 * /proc/PID/stat text through procfs_stat_parse().  "Name:" and stat's
 * field 2 are the target's own comm (prctl(PR_SET_NAME)), so any bytes can
 * follow.  Checks: no crash, the name NUL-terminated and one line.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procfs_status ps;
	struct procfs_stat st;
	char text[2048];
	FILE *f;

	if (!size)
		return 0;
	memcpy(text, data, size < sizeof(text) ? size : sizeof(text) - 1);
	text[size < sizeof(text) ? size : sizeof(text) - 1] = '\0';
	procfs_stat_parse(text, &st);
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	procfs_status_parse(f, &ps);
	fclose(f);
	if (!memchr(ps.name, 0, sizeof(ps.name)) || strchr(ps.name, '\n'))
		__builtin_trap();
	return 0;
}
