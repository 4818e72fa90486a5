// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: /proc/PID/status text through procfs_status_parse(),
 * the parser procfs_status() runs on the open file, and the same bytes as
 * /proc/PID/stat text through procfs_stat_parse().  "Name:" and stat's
 * field 2 are the target's own comm (prctl(PR_SET_NAME)), so any bytes can
 * follow.  The same bytes again as /proc/PID/environ, the target's own
 * initial environment, through procfs_env_get() as the drivers look up
 * GLIBC_TUNABLES and gperftools' variables in it.  Checks: no crash, the
 * name NUL-terminated and one line, a value found is inside the buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

	{
		/* procfs_environ()'s buffer: the bytes read and a final NUL */
		static const char *const names[] = { "GLIBC_TUNABLES", "MALLOC_ARENA_MAX",
						     "HEAP_PROFILE_ALLOCATION_INTERVAL" };
		char *env = malloc(size + 1);

		if (!env)
			return 0;
		memcpy(env, data, size);
		env[size] = 0;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			const char *v = procfs_env_get(env, size, names[i]);

			if (v && (v < env || v > env + size || v[-1] != '='))
				__builtin_trap();
		}
		free(env);
	}
	return 0;
}
