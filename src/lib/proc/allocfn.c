// SPDX-License-Identifier: MIT
/*
 * allocfn.c: the allocators' entry points by name.
 *
 * One list serves both users, so a name added for one is known to the
 * other: a thread stopped in mallctl() is not at a safe point, and a heap
 * profile stack through mallctl() is the allocator's own from there on.
 * Being generous costs little either way: where.c then waits for another
 * thread or a later moment, report.c drops one more allocator frame.
 */
#include <string.h>

#include "allocfn.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const names[] = {
	/* C, POSIX and their common extensions */
	"malloc", "calloc", "realloc", "reallocarray", "free", "cfree", "memalign",
	"posix_memalign", "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
	/* glibc: its control functions and the internals seen on a stack */
	"malloc_trim", "mallinfo", "mallinfo2", "malloc_stats", "malloc_info", "mallopt",
	"sysmalloc", "tcache_init", "arena_get2",
	/* jemalloc's own API, and the functions its malloc and new go through */
	"mallocx", "rallocx", "xallocx", "sallocx", "dallocx", "sdallocx", "sdallocx_noflags",
	"nallocx", "mallctl", "mallctlnametomib", "mallctlbymib", "malloc_stats_print",
	"malloc_default", "newImpl",
	/* gperftools' tcmalloc */
	"tc_malloc", "tc_calloc", "tc_realloc", "tc_new", "tc_newarray", "tc_memalign",
	"tc_posix_memalign", "do_malloc", "do_malloc_or_cpp_alloc", "DoSampledAllocation",
	/* C++, demangled (ELF symbols: mangled[] below), and old libstdc++/g++ */
	"operator new", "operator new[]", "operator delete", "operator delete[]",
	"__builtin_new", "__builtin_vec_new", "simple_alloc::allocate",
	"__malloc_alloc_template::allocate",
	/* Rust's global allocator shims */
	"__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rdl_alloc",
	"__rdl_alloc_zeroed", "__rdl_realloc", "__rg_alloc", "__rg_alloc_zeroed", "__rg_realloc",
};

/* What allocators export those names under: jemalloc's je_ and Rust's _rjem_, glibc's aliases (__libc_malloc, and __realloc in a static glibc). */
static const char *const prefixes[] = {
	"_rjem_je_", "_rjem_", "__je_", "je_", "__libc_", "__", "_",
};

/* operator new, new[], delete and delete[] as symbols, every overload (_Znwm, _ZdlPvm, ...). */
static const char *const mangled[] = {
	"_Znw", "_Zna", "_Zdl", "_Zda",
};

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* n is one of names[], whole or with a template argument list: "newImpl<false>". */
static bool is_name(const char *n)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(names); i++) {
		size_t l = strlen(names[i]);

		if (!strncmp(n, names[i], l) && (n[l] == '\0' || n[l] == '<'))
			return true;
	}
	return false;
}

bool allocfn_is_entry(const char *name)
{
	size_t i;

	if (!name)
		return false;
	if (is_name(name))
		return true;
	for (i = 0; i < ARRAY_LEN(prefixes); i++)
		if (starts(name, prefixes[i]) && is_name(name + strlen(prefixes[i])))
			return true;
	for (i = 0; i < ARRAY_LEN(mangled); i++)
		if (starts(name, mangled[i]))
			return true;
	return false;
}
