// SPDX-License-Identifier: MIT
/*
 * What heapctl's sampler hooks in a target: the real definitions of the
 * allocation functions, and the GOT slots that bind to them, found in
 * each object's dynamic section while nothing is stopped (got.c).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../sampler/hcs.h"
#include "call.h"
#include "cred.h"
#include "got.h"
#include "inject_int.h"
#include "inject.h"
#include "log.h"
#include "mem.h"
#include "engine.h"
#include "image.h"
#include "troot.h"

/* ---- what to hook -------------------------------------------------------------------- */


/* Objects in the dynamic linker's search order: the executable first. */
static size_t link_order(struct engine *t, struct obj **out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->img->nobjs; i++)
		if (t->img->objs[i].base && !t->img->objs[i].is_vdso && !t->img->objs[i].is_ldso)
			out[n++] = &t->img->objs[i];
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			struct obj *a = out[j - 1], *b = out[j];
			uint64_t ra = a->is_exe ? 0 : (uint64_t)a->link_idx + 1;
			uint64_t rb = b->is_exe ? 0 : (uint64_t)b->link_idx + 1;

			if (ra <= rb)
				break;
			out[j - 1] = b;
			out[j] = a;
		}
	return n;
}

/*
 * The real definition of each hooked function: the first in search order
 * with a size (a PLT stub has none, and calling it would call the hook).
 * The C++ ones count only in the object that serves malloc.
 */
void find_originals(struct engine *t, struct obj *own, uint64_t *orig, uint64_t *size)
{
	struct obj **ord = calloc(t->img->nobjs + 1, sizeof(*ord));
	size_t n = ord ? link_order(t, ord) : 0;

	memset(orig, 0, HCS_NHOOK * sizeof(*orig));
	memset(size, 0, HCS_NHOOK * sizeof(*size));
	for (int id = 0; id < HCS_NHOOK; id++) {
		if (id >= HCS_FIRST_CXX) {
			const struct sym *s = sym_by_name(own, hook_names[id]);

			orig[id] = s && s->size ? s->raddr : 0;
			size[id] = orig[id] ? s->size : 0;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			struct hc_err e = { 0 };
			const struct sym *s;

			if (sym_load(t->img, ord[i], false, &e) < 0)
				continue;
			s = sym_by_name(ord[i], hook_names[id]);
			if (s && s->size) {
				orig[id] = s->raddr;
				size[id] = s->size;
				break;
			}
		}
	}
	free(ord);
}

static int hook_id(const char *name, const uint64_t *orig)
{
	for (int id = 0; id < HCS_NHOOK; id++)
		if (orig[id] && !strcmp(name, hook_names[id]))
			return id;
	return -1;
}

/* The target's side of got.c's reading: its memory, the hooks, its mappings. */
struct slot_ctx {
	struct engine *t;
	const uint64_t *orig;
	const struct range *maps;
	size_t nmaps;
};

static int slot_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	const struct slot_ctx *c = arg;

	return mem_read(c->t->img->pid, c->t->img->memfd, raddr, buf, len, &(struct hc_err){ 0 });
}

static int slot_hook(void *arg, const char *name)
{
	const struct slot_ctx *c = arg;

	return hook_id(name, c->orig);
}

static int slot_prot(void *arg, uint64_t raddr)
{
	const struct slot_ctx *c = arg;

	return prot_at(c->maps, c->nmaps, raddr);
}

/* Append o's GOT slots that bind to a hooked function. */
static void object_slots(struct engine *t, const struct obj *o, const uint64_t *orig,
			 const struct range *maps, size_t nmaps, struct hcs_slot *out, unsigned *n)
{
	struct slot_ctx c = { t, orig, maps, nmaps };
	struct got_src s = {
		.read = slot_read,
		.hook = slot_hook,
		.prot = slot_prot,
		.arg = &c,
		.dynamic = o->dynamic,
		.dynamic_len = o->dynamic_len,
		.base = o->base,
		.bias = o->bias,
		.r_jump_slot = t->img->arch->r_jump_slot,
		.r_glob_dat = t->img->arch->r_glob_dat,
	};

	got_slots_from_dynamic(&s, out, n, HCS_MAXSLOTS);
}

static int by_addr(const void *a, const void *b)
{
	const struct hcs_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The slots to hook now: those of every object but the dynamic loader, the
 * vDSO, the sampler and the allocator's own object (its calls to itself
 * stay inside it), less those the sampler holds already.
 */
int new_slots(struct engine *t, struct inj *in, const uint64_t *orig,
		     struct hcs_slot *out, unsigned *n, bool only_new_objects, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(t->img);
	struct hcs_slot *have = NULL;
	struct range *maps;
	size_t nmaps;
	unsigned k = 0;

	maps = read_maps(t, &nmaps, NULL, err);
	if (!maps)
		return -1;
	for (size_t i = 0; i < t->img->nobjs && !only_new_objects; i++) {
		struct obj *o = &t->img->objs[i];

		if (!o->base || o->is_vdso || o->is_ldso || is_sampler(o->path))
			continue;
		if (o == own && !strstr(o->path, "/libc.so"))
			continue;
		object_slots(t, o, orig, maps, nmaps, out, n);
	}
	/* objects loaded since heapctl read the maps (libgcc_s, loaded for the unwinder) */
	for (size_t i = 0; i < nmaps; i++) {
		struct obj o = { .base = maps[i].lo, .path = maps[i].path };
		struct hc_err e = { 0 };
		bool known = false;

		for (size_t j = 0; j < t->img->nobjs && !known; j++)
			known = t->img->objs[j].base == maps[i].lo;
		if (!maps[i].elf_start || known || strstr(o.path, "/ld-linux") ||
		    is_sampler(o.path) ||
		    obj_read_phdrs(t->img, &o, &e) != 0)
			continue;
		object_slots(t, &o, orig, maps, nmaps, out, n);
	}
	free_maps(maps, nmaps);
	if (in->state && in->s.nslots) {
		size_t len = (size_t)in->s.nslots * sizeof(*have);

		have = malloc(len);
		if (!have || mem_read(t->img->pid, t->img->memfd, in->s.slots, have, len, err) < 0) {
			free(have);
			return -1;
		}
	}
	for (unsigned i = 0; i < *n; i++) {
		bool dup = false;

		for (unsigned j = 0; have && j < in->s.nslots && !dup; j++)
			dup = have[j].addr == out[i].addr;
		if (!dup)
			out[k++] = out[i];
	}
	*n = k;
	free(have);
	/* by address: the sampler opens each read-only page once */
	qsort(out, *n, sizeof(*out), by_addr);
	return 0;
}
