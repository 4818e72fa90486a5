// SPDX-License-Identifier: MIT
/*
 * What the allocator drivers (alloc_*.c) share, below them all and below
 * the driver table (alloc.c): symbol lookups in the allocator's object,
 * what a driver found, figures for stats, and the output callbacks run
 * while a call a driver made is in flight.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "call.h"
#include "err.h"
#include "image.h"

uint64_t alloc_sym(const struct obj *o, const char *name)
{
	const struct sym *s = sym_by_name(o, name);

	return s ? s->raddr : 0;
}

int alloc_found(struct hc_target *t, const struct obj *own, const char *allocator, const void *priv,
		size_t len, uint64_t ctl_raddr, uint64_t stats_raddr, struct hc_err *err)
{
	t->drv.alloc_priv = malloc(len);
	if (!t->drv.alloc_priv)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memcpy(t->drv.alloc_priv, priv, len);
	t->drv.where.allocator = allocator;
	t->drv.where.object = own->path;
	t->drv.where.prefix = "";
	t->drv.where.symtab = own->symsrc;
	t->drv.where.ctl_raddr = ctl_raddr;
	t->drv.where.stats_raddr = stats_raddr;
	t->drv.where.ncandidates = 1;
	t->drv.where.others = "";
	return 1;
}

void alloc_fig(struct hc_stats *st, const char *name, uint64_t v, const char *what)
{
	struct hc_figure *f;

	if (st->nfig >= HC_MAX_FIGURES)
		return;
	f = &st->fig[st->nfig++];
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->value = v;
	snprintf(f->what, sizeof(f->what), "%s", what);
}

void alloc_free_priv(struct hc_target *t)
{
	free(t->drv.alloc_priv);
	t->drv.alloc_priv = NULL;
}

/* The target's string at at, to pc's sink a page at a time: never past the NUL, of any length. */
static int print_str(const struct print_ctx *pc, struct engine *e, uint64_t at,
		     struct hc_err *err)
{
	char buf[4096];

	for (;;) {
		size_t chunk = sizeof(buf) - (at & (sizeof(buf) - 1));
		char *nul;

		if (call_read(e, at, buf, chunk, err) < 0)
			return -1;
		nul = memchr(buf, 0, chunk);
		if (pc->sink(pc->arg, buf, nul ? (size_t)(nul - buf) : chunk) < 0)
			return err_set(err, HC_E_IO, errno, "writing the statistics failed");
		if (nul)
			return 0;
		at += chunk;
	}
}

/* write_cb(void *cbopaque, const char *s) */
int je_print_cb(void *arg, struct engine *e, const uint64_t *a, struct hc_err *err)
{
	return print_str(arg, e, a[1], err);
}

/* mi_output_fun(const char *msg, void *arg) */
int mi_print_cb(void *arg, struct engine *e, const uint64_t *a, struct hc_err *err)
{
	return print_str(arg, e, a[0], err);
}
