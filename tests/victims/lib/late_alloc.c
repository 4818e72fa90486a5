// SPDX-License-Identifier: MIT
/*
 * late_alloc.so: a library alloc_victim dlopen()s on command ("dlopen"),
 * after heapctl's sampler was loaded: its own GOT slot for malloc is hooked
 * only by the next heapctl call on the process.
 */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *late_grow_site(size_t len);
__attribute__((noinline)) void *late_grow_site(size_t len)
{
	void *p = malloc(len);

	if (p)
		memset(p, 0x6c, len);
	return p;
}
