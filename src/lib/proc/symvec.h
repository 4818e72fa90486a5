/* SPDX-License-Identifier: MIT */
/* The symbol list being loaded (symvec.c): what sym.c and sym_mem.c fill. */
#ifndef HC_SYMVEC_H
#define HC_SYMVEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Growable symbol list while loading: nf function symbols, then the data symbols. */
struct symvec {
	struct sym *v;
	size_t n, nf, cap;
	char *strs;
	size_t slen, scap;
};

/* Room for nsyms symbols and slen bytes of names in all; -1 out of memory. */
int symvec_reserve(struct symvec *sv, size_t nsyms, size_t slen);
/* A symbol whose name is already in sv->strs at offset name_at (room for it reserved). */
void symvec_put(struct symvec *sv, uint64_t raddr, uint64_t size, size_t name_at, bool global,
		bool data);
/* Add one symbol (a function, or with data a data object); -1 out of memory. */
int symvec_add(struct symvec *sv, uint64_t raddr, uint64_t size, const char *name, bool global,
	       bool data);
/* The symbols loaded into sv become o's (sv keeps nothing). */
void syms_take(struct obj *o, struct symvec *sv);

#endif
