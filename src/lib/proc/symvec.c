// SPDX-License-Identifier: MIT
/*
 * The symbol list being loaded (struct symvec), below sym.c and
 * sym_mem.c, which fill it from a file and from a loaded image.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "symvec.h"

/* Room for nsyms symbols and slen bytes of names in all. */
int symvec_reserve(struct symvec *sv, size_t nsyms, size_t slen)
{
	if (nsyms > sv->cap) {
		struct sym *nv = realloc(sv->v, nsyms * sizeof(*nv));

		if (!nv)
			return -1;
		sv->v = nv;
		sv->cap = nsyms;
	}
	if (slen > sv->scap) {
		char *ns = realloc(sv->strs, slen);

		if (!ns)
			return -1;
		sv->strs = ns;
		sv->scap = slen;
	}
	return 0;
}

/* A symbol whose name is already in sv->strs at offset name_at (room for it reserved). */
void symvec_put(struct symvec *sv, uint64_t raddr, uint64_t size, size_t name_at, bool global,
		bool data)
{
	size_t at = sv->n;

	if (!data && sv->nf < sv->n) {
		sv->v[sv->n] = sv->v[sv->nf]; /* the first data symbol moves to the end */
		at = sv->nf;
	}
	/* store the offset now; pointers are fixed up once strs stops moving */
	sv->v[at] = (struct sym){ .raddr = raddr,
				  .name = (const char *)(uintptr_t)name_at,
				  .size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
				  .global = global };
	sv->n++;
	sv->nf += !data;
}

int symvec_add(struct symvec *sv, uint64_t raddr, uint64_t size, const char *name, bool global,
	       bool data)
{
	size_t l = strlen(name) + 1;

	if ((sv->n == sv->cap || sv->slen + l > sv->scap) &&
	    symvec_reserve(sv, sv->n == sv->cap ? (sv->cap ? sv->cap * 2 : 1024) : sv->cap,
			   sv->slen + l > sv->scap ? (sv->scap + l) * 2 : sv->scap) < 0)
		return -1;
	memcpy(sv->strs + sv->slen, name, l);
	symvec_put(sv, raddr, size, sv->slen, global, data);
	sv->slen += l;
	return 0;
}

/* The symbols loaded into sv become o's (sv keeps nothing). */
void syms_take(struct obj *o, struct symvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		sv->v[i].name = sv->strs + (uintptr_t)sv->v[i].name;
	o->sorted = false; /* sorted on first address lookup: detection only needs names */
	free(o->verdict); /* where.c's, about the symbols these replace */
	o->verdict = NULL;
	o->syms = sv->v;
	o->nsyms = sv->nf;
	o->ndata = sv->n - sv->nf;
	o->strs = sv->strs;
	sv->v = NULL;
	sv->strs = NULL;
	pr_debug("%s: %zu function symbols from %s", o->path, o->nsyms, o->symsrc);
}
