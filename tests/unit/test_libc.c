// SPDX-License-Identifier: MIT
/*
 * Unit test: musl's version as src/lib/proc/libc.c reads it from musl's
 * read-only data: __libc_version ("1.2.3"), a string of its own, counted
 * only beside the loader's banner "musl libc (ARCH)", so that a glibc or
 * any other library's version-looking strings are never taken for musl's.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdbool.h>
#include <string.h>

#include "libc.h"
#include "unit.h"

/* s holds NUL-separated strings; its length includes the last NUL. */
#define RODATA(s) s, sizeof(s)

int main(void)
{
	char v[32];

	begin("libc-musl-version");
	{
		/* as in Debian's libc.so: the version far from the banner, an address beside it */
		static const char ro[] = "x\0/proc/self/fd/\0001.2.3\0Unsupported request %d\0"
					 "127.0.0.1\0musl libc (x86_64)\nVersion %s\nDynamic Program Loader\n";

		CHECK(libc_musl_version(RODATA(ro), v, sizeof(v)) && !strcmp(v, "1.2.3"),
		      "got '%s'", v);
	}
	{
		static const char ro[] = "x\0musl libc (aarch64)\nVersion %s\n\0001.2.4-git-12-gabc\0";

		CHECK(libc_musl_version(RODATA(ro), v, sizeof(v)) && !strcmp(v, "1.2.4-git-12-gabc"),
		      "a git build: got '%s'", v);
	}
	end();

	begin("libc-musl-version-needs-banner");
	{
		/* a version-looking string without musl's banner is nobody's musl */
		static const char ro[] = "x\0002.36\0001.2.3\0GNU C Library\0";

		CHECK(!libc_musl_version(RODATA(ro), v, sizeof(v)) && !v[0], "got '%s'", v);
	}
	end();

	begin("libc-musl-version-not-addresses");
	{
		/* dotted quads, two-part numbers and a version cut by the data's end are no version */
		static const char ro[] = "x\0127.0.0.1\0003.4\0musl libc (x86_64)\0001.2";

		CHECK(!libc_musl_version(ro, sizeof(ro) - 1, v, sizeof(v)) && !v[0], "got '%s'", v);
	}
	end();
	return nfailed != 0;
}
