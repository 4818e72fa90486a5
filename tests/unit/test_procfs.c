// SPDX-License-Identifier: MIT
/*
 * Unit test: procfs_environ() reads a whole environ file (longer than its
 * first buffer) into one NUL-terminated buffer, and procfs_env_get() finds
 * NAME=value as getenv() does: the first one, the whole name only.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "unit.h"

static void env_get(void)
{
	static const char env[] = "HOME=/root\0HEAP=\0HEAP_PROFILE_INUSE_INTERVAL=7\0"
				  "HEAP_PROFILE_INUSE_INTERVAL=9\0=odd\0TAIL=end";
	const char *v;

	begin("procfs_env_get");
	v = procfs_env_get(env, sizeof(env) - 1, "HEAP_PROFILE_INUSE_INTERVAL");
	CHECK(v && !strcmp(v, "7"), "first match: %s", v ? v : "(null)");
	v = procfs_env_get(env, sizeof(env) - 1, "HEAP");
	CHECK(v && !*v, "empty value: %s", v ? v : "(null)");
	CHECK(!procfs_env_get(env, sizeof(env) - 1, "HOM"), "a prefix of a name matched");
	CHECK(!procfs_env_get(env, sizeof(env) - 1, "HEAP_PROFILE"), "a prefix of a name matched");
	v = procfs_env_get(env, sizeof(env) - 1, "TAIL");
	CHECK(v && !strcmp(v, "end"), "last entry: %s", v ? v : "(null)");
	CHECK(!procfs_env_get(NULL, 0, "HOME"), "no environment");
	end();
}

static void environ_read(void)
{
	char dir[] = "/tmp/hc-procfs-XXXXXX", path[64], *buf;
	size_t len = 0, want = 0;
	FILE *f;

	begin("procfs_environ");
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp failed");
		end();
		return;
	}
	snprintf(path, sizeof(path), "%s/environ", dir);
	f = fopen(path, "w");
	CHECK(f != NULL, "cannot write %s", path);
	for (int i = 0; f && i < 2000; i++) {
		want += (size_t)fprintf(f, "VAR%d=%d", i, i * 3) + 1;
		fputc(0, f);
	}
	if (f)
		fclose(f);
	buf = procfs_environ(dir, &len);
	CHECK(buf && len == want, "read %zu bytes, want %zu", len, want);
	if (buf) {
		const char *v = procfs_env_get(buf, len, "VAR1999");

		CHECK(buf[len] == 0, "no final NUL");
		CHECK(v && !strcmp(v, "5997"), "VAR1999 is %s", v ? v : "(null)");
	}
	free(buf);
	unlink(path);
	buf = procfs_environ(dir, &len);
	CHECK(!buf && len == 0, "a missing file read as %zu bytes", len);
	rmdir(dir);
	end();
}

int main(void)
{
	env_get();
	environ_read();
	return nfailed != 0;
}
