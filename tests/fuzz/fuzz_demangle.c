// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: symbol names from a profile's ELF files reach the
 * demangler unchecked.  The input is a name; it goes through the Rust v0
 * decoder (as "_R" + input too, so the fuzzer need not find the prefix)
 * and through prof_demangle(), which also strips C++ parameter lists and
 * decodes Rust legacy escapes.  Checks: no crash, no hang, and a decoded
 * v0 name is bounded (64 KiB).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(char *d)
{
	if (d && strlen(d) > 64 * 1024)
		abort();
	free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 3);

	if (!s)
		return 0;
	s[0] = '_';
	s[1] = 'R';
	memcpy(s + 2, data, size);
	s[size + 2] = '\0';
	check(prof_demangle_rust_v0(s));
	check(prof_demangle(s));
	check(prof_demangle(s + 2));
	free(s);
	return 0;
}
