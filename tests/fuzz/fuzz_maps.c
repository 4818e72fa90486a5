// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: one /proc/PID/maps line through sym.c's parse_mapline()
 * (static, hence the #include).  The kernel writes these lines, but the path
 * at their end is whatever name the target gave a file or a mapping
 * (prctl(PR_SET_VMA_ANON_NAME), memfd_create, a file named with spaces or
 * newlines).  Checks: no crash, perms NUL-terminated, the path one line.
 */
#include "../../src/lib/sym.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mapline m;
	char *line = malloc(size + 1);

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (parse_mapline(line, &m) == 0) {
		if (memchr(m.perms, 0, sizeof(m.perms)) == NULL || strchr(m.path, '\n'))
			__builtin_trap();
		if (strlen(m.path) >= sizeof(m.path))
			__builtin_trap();
	}
	free(line);
	return 0;
}
