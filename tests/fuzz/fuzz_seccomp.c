// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the target's seccomp filter, read with
 * PTRACE_SECCOMP_GET_FILTER, through seccomp.c's classic-BPF interpreter.
 * The first 64 bytes are the struct seccomp_data to evaluate, the rest the
 * program.  Checks: no crash or hang, and the verdict of a program is the
 * same on a second run.
 */
#include <string.h>

#include "seccomp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seccomp_data d;
	struct sock_filter prog[512];
	size_t n;
	uint32_t act1 = 0, act2 = 0;
	int r1, r2;

	if (size < sizeof(d))
		return 0;
	memcpy(&d, data, sizeof(d));
	n = (size - sizeof(d)) / sizeof(prog[0]);
	if (n > 512)
		n = 512;
	memcpy(prog, data + sizeof(d), n * sizeof(prog[0]));
	r1 = seccomp_eval(prog, n, &d, &act1);
	r2 = seccomp_eval(prog, n, &d, &act2);
	if (r1 != r2 || (r1 == 0 && act1 != act2))
		__builtin_trap();
	seccomp_stricter(act1, act2);
	return 0;
}
