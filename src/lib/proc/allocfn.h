/* SPDX-License-Identifier: MIT */
/*
 * The allocators' entry points by name: one list (allocfn.c) for the two
 * places that must recognise them.  where.c does not borrow a thread
 * stopped inside one (it may hold an allocator lock); report.c drops them,
 * and the frames they called, from heap profile stacks.  Pure code.
 */
#ifndef HC_ALLOCFN_H
#define HC_ALLOCFN_H

#include <stdbool.h>

/*
 * Is name an allocator entry point: malloc, free, mallocx, mallctl,
 * operator new, __rust_alloc, tc_malloc, ...?  As an ELF symbol (je_malloc,
 * _Znwm) or demangled ("operator new", "newImpl<false>").  Names are
 * matched whole: "free_list" is not free.
 */
bool allocfn_is_entry(const char *name);

#endif
