// SPDX-License-Identifier: MIT
/*
 * cxx_new.so: late_alloc.so's late_grow_site(), through C++'s operator
 * new[] (_Znam) instead of malloc, for alloc_victim's "dlopen" and
 * "grow N late".  Under tcmalloc or jemalloc, operator new is the
 * allocator's own (its fast path inlined, never calling malloc): heapctl's
 * sampler must hook it by name.  Loading it needs an operator new in the
 * process (the allocator's, or libstdc++).
 */
#include <stddef.h>
#include <string.h>

void *_Znam(size_t len);

__attribute__((noinline)) void *late_grow_site(size_t len);
__attribute__((noinline)) void *late_grow_site(size_t len)
{
	void *p = _Znam(len);

	memset(p, 0x6e, len);
	return p;
}
