// SPDX-License-Identifier: MIT
/*
 * Reading heapctl's sampler: its state for prof status, and its tables,
 * with process_vm_readv and nothing run in the target, into a jemalloc
 * heap_v2 profile.
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

/* ---- reading ------------------------------------------------------------------------------ */

/*
 * The file mapped at a, from the maps read now: the last object start at
 * or below a's mapping.  For an object loaded after the target was opened
 * (libgcc_s, which the sampler's own start loads), or NULL.
 */
static const char *path_now(const struct range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi) {
			for (size_t j = i + 1; j-- > 0;)
				if (r[j].path)
					return r[j].path;
			break;
		}
	return NULL;
}

int inj_status(struct engine *t, struct inj *in, struct hc_sampler *out, struct hc_err *err)
{
	struct hcs_slot *sl = NULL;
	struct range *now = NULL;
	size_t nnow = 0;

	memset(out, 0, sizeof(*out));
	if (!in->state)
		return 0;
	out->installed = true;
	out->enabled = in->s.enabled;
	out->kept = !in->s.enabled && inj_watching(in);
	out->loaded_now = in->loaded_now;
	out->switched = in->switched;
	out->interval = in->s.interval;
	out->samples = in->s.samples;
	out->live = in->s.live_count;
	out->stacks = in->s.nstacks;
	out->dropped = in->s.dropped_live + in->s.dropped_stacks;
	out->no_stack = in->s.unwind_short;
	if (in->s.je_handle) {
		out->hooks++;
		out->nobjs = 1;
		out->objs[0].hooks = 1;
		snprintf(out->objs[0].path, sizeof(out->objs[0].path), "jemalloc's hooks in %s",
			 in->where->object ? in->where->object : "?");
	}
	out->freestanding = in->s.flavour == HCS_FLAVOUR_FREE;
	for (unsigned i = 0; i < in->s.ninline && i < HCS_MAXINLINE; i++) {
		const struct hcs_inline *r = &in->s.inl[i];
		struct obj *o = obj_at(t->img, r->addr);

		out->lost += r->state == HCS_SLOT_CHANGED;
		if (r->state != HCS_SLOT_PATCHED)
			continue;
		out->hooks++;
		out->inlined++;
		if (!out->nobjs) {
			snprintf(out->objs[0].path, sizeof(out->objs[0].path), "%s",
				 o ? o->path : "the executable");
			out->nobjs = 1;
		}
		out->objs[0].hooks++;
	}
	if (!in->s.nslots)
		return 0;
	sl = malloc(in->s.nslots * sizeof(*sl));
	if (!sl || mem_read(t->img->pid, t->img->memfd, in->s.slots, sl, in->s.nslots * sizeof(*sl), err) < 0) {
		free(sl);
		return err_isset(err) ? -1 : err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < in->s.nslots && i < HCS_MAXSLOTS; i++) {
		const char *path;
		struct obj *o;
		unsigned k;

		if (sl[i].state == HCS_SLOT_CHANGED)
			out->lost++;
		if (sl[i].state != HCS_SLOT_PATCHED)
			continue;
		out->hooks++;
		o = obj_at(t->img, sl[i].addr);
		path = o ? o->path : NULL;
		if (!path && !now)
			now = read_maps(t, &nnow, NULL, &(struct hc_err){ 0 });
		if (!path && now)
			path = path_now(now, nnow, sl[i].addr);
		if (!path)
			path = "?";
		for (k = 0; k < out->nobjs; k++)
			if (!strncmp(out->objs[k].path, path, sizeof(out->objs[k].path) - 1))
				break;
		if (k == out->nobjs) {
			if (k == HC_SAMPLER_MAX_OBJS)
				continue;
			snprintf(out->objs[k].path, sizeof(out->objs[k].path), "%s", path);
			out->nobjs++;
		}
		out->objs[k].hooks++;
	}
	if (now)
		free_maps(now, nnow);
	free(sl);
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct inj_site *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_bytes(const void *a, const void *b)
{
	const struct inj_site *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->accum_bytes > y->accum_bytes ? -1 : x->accum_bytes < y->accum_bytes;
}

static bool stack_ok(const struct hcs_stack *st, size_t nst, uint32_t id)
{
	return id && id < nst && st[id].nframes && st[id].nframes <= HCS_MAXFRAMES;
}

size_t inj_sites(const struct hcs_live *live, size_t nlive, const struct hcs_stack *st,
		 size_t nst, struct inj_site *out, struct inj_site *tot)
{
	size_t na = 0, k = 0;

	memset(tot, 0, sizeof(*tot));
	for (size_t i = 0; i < nlive; i++) {
		uint32_t id = (uint32_t)(live[i].meta & 0xffffff);

		if (live[i].ptr <= HCS_TOMB || !live[i].meta || !stack_ok(st, nst, id))
			continue;
		out[na++] = (struct inj_site){ id, 1, live[i].meta >> 24, 0, 0 };
	}
	qsort(out, na, sizeof(*out), by_id);
	for (size_t i = 0; i < na; i++) {
		if (k && out[k - 1].id == out[i].id) {
			out[k - 1].objs++;
			out[k - 1].bytes += out[i].bytes;
		} else {
			out[k++] = out[i];
		}
		tot->objs++;
		tot->bytes += out[i].bytes;
	}
	/* Every stack's accumulated counts: out[0, k) is by id, the stacks with none live go after. */
	na = k;
	for (size_t id = 1, j = 0; id < nst; id++) {
		const struct hcs_stack *s = &st[id];

		if (!stack_ok(st, nst, (uint32_t)id))
			continue;
		while (j < k && out[j].id < id)
			j++;
		if (j < k && out[j].id == id) {
			out[j].accum_objs = s->accum_objs;
			out[j].accum_bytes = s->accum_bytes;
		} else if (s->accum_objs) {
			out[na++] = (struct inj_site){ (uint32_t)id, 0, 0, s->accum_objs, s->accum_bytes };
		} else {
			continue;
		}
		tot->accum_objs += s->accum_objs;
		tot->accum_bytes += s->accum_bytes;
	}
	qsort(out, na, sizeof(*out), by_bytes);
	return na;
}

void inj_write_sites(FILE *f, uint64_t interval, const struct inj_site *sites, size_t n,
		     const struct inj_site *tot, const struct hcs_stack *st)
{
	fprintf(f, "heap_v2/%" PRIu64 "\n  t*: %" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64 "]\n",
		interval, tot->objs, tot->bytes, tot->accum_objs, tot->accum_bytes);
	for (size_t i = 0; i < n; i++) {
		const struct hcs_stack *s = &st[sites[i].id];

		fputc('@', f);
		for (uint32_t k = 0; k < s->nframes; k++)
			fprintf(f, " 0x%" PRIx64, s->frames[k]);
		fprintf(f, "\n  t*: %" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64 "]\n", sites[i].objs,
			sites[i].bytes, sites[i].accum_objs, sites[i].accum_bytes);
	}
}

/*
 * jemalloc's heap_v2: the sampled counts and sizes per stack, which
 * readers un-bias with the period in the header (as jeprof does), then the
 * target's maps.
 */
int inj_dump(struct engine *t, struct inj *in, const char *out, struct hc_err *err)
{
	size_t nlive = 1u << HCS_LIVE_BITS, nst, na;
	struct hcs_live *live = malloc(nlive * sizeof(*live));
	struct hcs_stack *st = NULL;
	struct inj_site *ag = NULL, tot;
	char path[96], buf[8192];
	FILE *f = NULL, *maps = NULL;
	int rc = -1;

	if (read_state(t, in, err) < 0)
		goto done;
	nst = in->s.nstacks + 1 < HCS_STACKS ? in->s.nstacks + 1 : HCS_STACKS;
	st = malloc(nst * sizeof(*st));
	ag = malloc((nlive + nst) * sizeof(*ag));
	if (!live || !st || !ag) {
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		goto done;
	}
	if (mem_read(t->img->pid, t->img->memfd, in->s.live, live, nlive * sizeof(*live), err) < 0 ||
	    mem_read(t->img->pid, t->img->memfd, in->s.stacks, st, nst * sizeof(*st), err) < 0)
		goto done;
	na = inj_sites(live, nlive, st, nst, ag, &tot);
	f = cred_out_fopen(out);
	if (!f) {
		err_set(err, HC_E_IO, errno, "cannot write %s: %s", out, strerror(errno));
		err->local = true;
		goto done;
	}
	inj_write_sites(f, in->s.interval, ag, na, &tot, st);
	fputs("\nMAPPED_LIBRARIES:\n", f);
	snprintf(path, sizeof(path), "%s/maps", t->img->proc);
	maps = fopen(path, "re");
	if (maps) {
		size_t r;

		while ((r = fread(buf, 1, sizeof(buf), maps)) > 0)
			fwrite(buf, 1, r, f);
		fclose(maps);
	}
	if (ferror(f) | (fclose(f) != 0)) {
		f = NULL;
		err_set(err, HC_E_IO, errno, "cannot write %s: %s", out, strerror(errno));
		err->local = true;
		goto done;
	}
	f = NULL;
	rc = 0;
done:
	if (f)
		fclose(f);
	free(live);
	free(st);
	free(ag);
	return rc;
}
