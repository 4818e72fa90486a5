// SPDX-License-Identifier: MIT
/*
 * out_pprof.c: gzipped profile.proto (github.com/google/pprof,
 * proto/profile.proto), the format `pprof`, `go tool pprof` and most
 * profile viewers read.
 *
 *   sample_type   inuse_objects/count, inuse_space/bytes (default); with
 *                 go_heap, or a profile with an accumulated pair (jemalloc's
 *                 opt.prof_accum, heapctl's sampler), alloc_objects/count
 *                 and alloc_space/bytes first,
 *                 as Go's /debug/pprof/heap writes them: the profile's
 *                 accumulated pair (jemalloc with opt.prof_accum, heapctl's
 *                 sampler), un-biased like the live one; 0 where it has none;
 *                 with go_allocs, alloc_space the default, as /allocs has it
 *   period_type   space/bytes, period = the profile's sample period
 *   mapping       one per object: address range, file offset, path, build-id
 *   location      one per address (address = return address - 1, the call),
 *                 lines innermost first (inlined frames before their caller)
 *   function      one per (name, file)
 *   string_table  [0] is ""
 *
 * With a base profile the samples are new minus base per symbolized stack,
 * signed, like `pprof -diff_base`; their locations carry no address, since
 * the two dumps need not share one layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

/* profile.proto field numbers */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5,
	P_STRING_TABLE = 6, P_PERIOD_TYPE = 11, P_PERIOD = 12, P_COMMENT = 13,
	P_DEFAULT_SAMPLE_TYPE = 14,
};

struct pp {
	struct pbuf out;
	struct strtab strs; /* string_table: id = index */
	struct u64map fn_of;  /* (name id << 32 | file id) -> function id */
	uint64_t nfuncs;
	bool oom;
	bool go_heap; /* two zero values lead each sample */
};

static int64_t sid(struct pp *pp, const char *s)
{
	uint32_t id = strtab_intern(&pp->strs, s ? s : "", s ? strlen(s) : 0);

	if (id == UINT32_MAX)
		pp->oom = true;
	return id == UINT32_MAX ? 0 : id;
}

static void value_type(struct pp *pp, unsigned field, const char *type, const char *unit)
{
	struct pbuf m = { 0 };

	pb_int(&m, 1, sid(pp, type));
	pb_int(&m, 2, sid(pp, unit));
	pb_bytes(&pp->out, field, m.p ? m.p : "", m.len);
	pp->oom |= m.oom;
	pbuf_free(&m);
}

static uint64_t function_id(struct pp *pp, const char *name, const char *file)
{
	int64_t n = sid(pp, name), f = sid(pp, file);
	uint64_t key = (uint64_t)n << 32 | (uint64_t)f;
	struct pbuf m = { 0 };
	uint32_t id;

	if (u64map_get(&pp->fn_of, key, &id))
		return id;
	id = (uint32_t)++pp->nfuncs;
	if (u64map_put(&pp->fn_of, key, id))
		pp->oom = true;
	pb_uint(&m, 1, id);
	pb_int(&m, 2, n);
	pb_int(&m, 3, n);
	pb_int(&m, 4, f);
	pb_bytes(&pp->out, P_FUNCTION, m.p ? m.p : "", m.len);
	pp->oom |= m.oom;
	pbuf_free(&m);
	return id;
}

static void line(struct pbuf *m, uint64_t fn, unsigned ln)
{
	struct pbuf l = { 0 };

	pb_uint(&l, 1, fn);
	pb_int(&l, 2, ln);
	pb_bytes(m, 4, l.p ? l.p : "", l.len);
	m->oom |= l.oom;
	pbuf_free(&l);
}

static void sample(struct pp *pp, const uint64_t *locs, size_t n, int64_t aobjs, int64_t abytes,
		   int64_t objs, int64_t bytes)
{
	struct pbuf m = { 0 };
	uint64_t v[4] = { (uint64_t)aobjs, (uint64_t)abytes, (uint64_t)objs, (uint64_t)bytes };

	pb_packed(&m, 1, locs, n);
	pb_packed(&m, 2, pp->go_heap ? v : v + 2, pp->go_heap ? 4 : 2);
	pb_bytes(&pp->out, P_SAMPLE, m.p ? m.p : "", m.len);
	pp->oom |= m.oom;
	pbuf_free(&m);
}

static const char *frame_name(struct hc_report *r, const struct psym_loc *l,
			      const struct psym_frame *f, char *buf, size_t len)
{
	struct psym_obj_info oi;
	const char *b;

	if (f->func)
		return f->func;
	if (l->obj < 0) {
		snprintf(buf, len, "0x%llx", (unsigned long long)l->addr);
		return buf;
	}
	psym_obj(r->sym, l->obj, &oi);
	b = strrchr(oi.path, '/');
	snprintf(buf, len, "%s+0x%llx", b ? b + 1 : oi.path, (unsigned long long)l->rel);
	return buf;
}

/* Samples as recorded, with real addresses and mappings. */
static int emit_plain(struct pp *pp, struct hc_report *r)
{
	uint64_t *ids = NULL;
	size_t ids_cap = 0, i, nl = psym_nlocs(r->sym), nobj = psym_nobjs(r->sym);
	bool *used = calloc(nl ? nl : 1, sizeof(*used));
	bool *obj_used = calloc(nobj ? nobj : 1, sizeof(*obj_used));
	char buf[256];

	if (!used || !obj_used)
		goto oom;
	for (i = 0; i < r->nlocs; i++) {
		const struct psym_loc *l = psym_loc(r->sym, r->locs[i]);

		used[r->locs[i]] = true;
		if (l->obj >= 0)
			obj_used[l->obj] = true;
	}
	for (i = 0; i < nobj; i++) {
		struct psym_obj_info oi;
		struct pbuf m = { 0 };

		if (!obj_used[i])
			continue;
		psym_obj(r->sym, (int32_t)i, &oi);
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, oi.start);
		pb_uint(&m, 3, oi.limit);
		pb_uint(&m, 4, oi.offset);
		pb_int(&m, 5, sid(pp, oi.path));
		pb_int(&m, 6, sid(pp, oi.build_id));
		pb_uint(&m, 7, oi.found != NULL);
		pb_uint(&m, 8, oi.found != NULL && r->o.lines && oi.has_dwarf);
		pb_uint(&m, 9, oi.found != NULL && r->o.lines && oi.has_dwarf);
		pb_uint(&m, 10, oi.found != NULL && !r->o.no_inline && oi.has_dwarf);
		pb_bytes(&pp->out, P_MAPPING, m.p ? m.p : "", m.len);
		pp->oom |= m.oom;
		pbuf_free(&m);
	}
	for (i = 0; i < nl; i++) {
		const struct psym_loc *l = psym_loc(r->sym, (int32_t)i);
		const struct psym_frame *f = psym_frames(r->sym, l);
		struct pbuf m = { 0 };
		uint32_t k;

		if (!used[i])
			continue;
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, l->obj >= 0 ? (uint64_t)l->obj + 1 : 0);
		pb_uint(&m, 3, l->addr ? l->addr - 1 : 0);
		for (k = 0; k < l->n; k++)
			line(&m, function_id(pp, frame_name(r, l, &f[k], buf, sizeof(buf)), f[k].file),
			     f[k].line);
		pb_bytes(&pp->out, P_LOCATION, m.p ? m.p : "", m.len);
		pp->oom |= m.oom;
		pbuf_free(&m);
	}
	for (i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->samples[i];
		uint32_t k;

		if (s->base)
			continue;
		if (prof_grow(&ids, &ids_cap, s->n + 1, sizeof(*ids)))
			goto oom;
		/* Leaf first in profile.proto; r->locs holds root first. */
		for (k = 0; k < s->n; k++)
			ids[k] = (uint64_t)r->locs[s->first + s->n - 1 - k] + 1;
		sample(pp, ids, s->n, prof_round(s->accum_objs), prof_round(s->accum_bytes),
		       prof_round(s->objs), prof_round(s->bytes));
	}
	free(ids);
	free(used);
	free(obj_used);
	return 0;
oom:
	free(ids);
	free(used);
	free(obj_used);
	return -1;
}

/* new - base per merged stack; one address-less location per frame label. */
static int emit_diff(struct pp *pp, struct hc_report *r)
{
	struct u64map loc_of = { 0 };
	uint64_t *ids = NULL, nlocs = 0;
	size_t ids_cap = 0, i;

	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[i];
		int64_t dobj = prof_round(s->v[0][0] - s->v[1][0]);
		int64_t dbytes = prof_round(s->v[0][1] - s->v[1][1]);
		int64_t daobj = pp->go_heap ? prof_round(s->acc[0][0] - s->acc[1][0]) : 0;
		int64_t dabytes = pp->go_heap ? prof_round(s->acc[0][1] - s->acc[1][1]) : 0;
		uint32_t k;

		if (!dobj && !dbytes && !daobj && !dabytes)
			continue;
		if (prof_grow(&ids, &ids_cap, s->n + 1, sizeof(*ids)))
			goto oom;
		for (k = 0; k < s->n; k++) {
			uint32_t lab = r->frames[s->first + s->n - 1 - k], id;

			if (!u64map_get(&loc_of, lab, &id)) {
				struct pbuf m = { 0 };

				id = (uint32_t)++nlocs;
				if (u64map_put(&loc_of, lab, id))
					goto oom;
				pb_uint(&m, 1, id);
				line(&m, function_id(pp, report_label(r, lab), NULL), 0);
				pb_bytes(&pp->out, P_LOCATION, m.p ? m.p : "", m.len);
				pp->oom |= m.oom;
				pbuf_free(&m);
			}
			ids[k] = id;
		}
		sample(pp, ids, s->n, daobj, dabytes, dobj, dbytes);
	}
	free(ids);
	u64map_free(&loc_of);
	return 0;
oom:
	free(ids);
	u64map_free(&loc_of);
	return -1;
}

int out_pprof(struct hc_report *r, const struct hc_write_opts *w, FILE *f, struct hc_err *err)
{
	struct pbuf gz = { 0 };
	struct pp pp;
	size_t i;
	int rc = -2;

	memset(&pp, 0, sizeof(pp));
	sid(&pp, ""); /* string_table[0] must be "" */
	/* Go's four types wherever asked, or the profile has an accumulated pair to put in them */
	pp.go_heap = w->go_heap || r->prof->has_accum || (r->base && r->base->has_accum);
	if (pp.go_heap) {
		value_type(&pp, P_SAMPLE_TYPE, "alloc_objects", "count");
		value_type(&pp, P_SAMPLE_TYPE, "alloc_space", "bytes");
	}
	value_type(&pp, P_SAMPLE_TYPE, "inuse_objects", "count");
	value_type(&pp, P_SAMPLE_TYPE, "inuse_space", "bytes");
	if ((r->base ? emit_diff(&pp, r) : emit_plain(&pp, r)) || pp.oom || pp.out.oom)
		goto out;
	value_type(&pp, P_PERIOD_TYPE, "space", "bytes");
	pb_int(&pp.out, P_PERIOD, (int64_t)r->tot.period);
	{
		char c[128];

		snprintf(c, sizeof(c), "jemalloc heap profile%s, un-biased; written by heapctl %s",
			 r->base ? " difference (new - base)" : "", HC_VERSION);
		pb_int(&pp.out, P_COMMENT, sid(&pp, c));
	}
	pb_int(&pp.out, P_DEFAULT_SAMPLE_TYPE,
	       sid(&pp, w->go_heap && w->go_allocs ? (w->objects ? "alloc_objects" : "alloc_space") :
		   w->objects ? "inuse_objects" : "inuse_space"));
	/* The string table last: every id above is now allocated. */
	for (i = 0; i < pp.strs.n; i++)
		pb_str(&pp.out, P_STRING_TABLE, pp.strs.str[i]);
	if (pp.oom || pp.out.oom || pp.strs.oom || pb_gzip(pp.out.p, pp.out.len, &gz))
		goto out;
	rc = fwrite(gz.p, 1, gz.len, f) == gz.len ? 0 : -1;
	if (rc)
		err_set(err, HC_E_IO, errno, "writing the pprof profile: %s", strerror(errno));
out:
	pbuf_free(&pp.out);
	pbuf_free(&gz);
	strtab_free(&pp.strs);
	u64map_free(&pp.fn_of);
	return rc;
}
