/* SPDX-License-Identifier: MIT */
/* What sym.c and sym_mem.c share: the symbol list being loaded. */
#ifndef HC_SYM_INT_H
#define HC_SYM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target.h"

/* Growable symbol list while loading: nf function symbols, then the data symbols. */
struct symvec {
	struct sym *v;
	size_t n, nf, cap;
	char *strs;
	size_t slen, scap;
};

/* Add one symbol (a function, or with data a data object); -1 out of memory. */
int symvec_add(struct symvec *sv, uint64_t raddr, uint64_t size, const char *name, bool global,
	       bool data);
/* The symbols loaded into sv become o's (sv keeps nothing). */
void syms_take(struct obj *o, struct symvec *sv);

#endif
