// SPDX-License-Identifier: MIT
/*
 * report.c: symbolized, merged stacks of a profile, or of new minus base.
 *
 * Each sample's addresses are resolved (symbolize.c), the allocator's own
 * frames are dropped, and the stack becomes a list of frame labels, root
 * first.  Samples with the same labels merge; a base profile's samples
 * merge into the same stacks on the other side, which is what matches
 * stacks across two dumps whatever their address-space layout.
 *
 * Allocator frames: like jeprof's RemoveUninterestingFrames, everything up
 * to the outermost allocation entry point (malloc, calloc, ..., operator
 * new, the je_/_rjem_ prefixed forms, Rust's __rust_alloc: allocfn.c, the
 * list the safe-point check uses too) is dropped, so the leaf is the
 * caller that allocated.  jemalloc 5.3's malloc tail-calls
 * its slow path, so the entry point itself is often not on the stack: the
 * innermost run of frames inside the allocator's own shared object (one
 * that defines mallctl, or is named *jemalloc*) is dropped too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allocfn.h"
#include "prof_int.h"

/* Longest frame label: a C++ name can be long, but not this long. */
#define PATH_MAX_LABEL 2048

/*
 * Namespaces whose every function is the allocator's, in demangled names
 * (where.c, which sees ELF symbols, has no use for them); the entry points
 * themselves are allocfn.c's.
 */
static const char *const alloc_scopes[] = {
	"alloc::alloc::", "<alloc::alloc::Global as core::alloc::",
	"<tikv_jemallocator::Jemalloc as core::alloc::", "<jemallocator::Jemalloc as core::alloc::",
	"TCMalloc", "tcmalloc::",
};

bool report_alloc_frame(const char *name)
{
	size_t i;

	if (!name)
		return false;
	for (i = 0; i < sizeof(alloc_scopes) / sizeof(alloc_scopes[0]); i++)
		if (!strncmp(name, alloc_scopes[i], strlen(alloc_scopes[i])))
			return true;
	return allocfn_is_entry(name);
}

const char *report_label(const struct hc_report *r, uint32_t id)
{
	return id < r->strs.n ? r->strs.str[id] : "?";
}

struct merge {
	uint32_t *slots; /* stack index + 1 */
	uint32_t *hash;  /* per stack */
	size_t nslots, hcap;
};

static uint32_t label_of(struct hc_report *r, const struct psym_loc *l, const struct psym_frame *f)
{
	char buf[PATH_MAX_LABEL];
	const char *name = f->func;
	int n;

	if (!name) {
		struct psym_obj_info oi;

		if (l->obj >= 0) {
			const char *b;

			psym_obj(r->sym, l->obj, &oi);
			b = strrchr(oi.path, '/');
			n = snprintf(buf, sizeof(buf), "%s+0x%llx", b ? b + 1 : oi.path,
				     (unsigned long long)l->rel);
		} else {
			n = snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)l->addr);
		}
	} else if (r->o.lines && f->file) {
		const char *b = strrchr(f->file, '/');

		n = snprintf(buf, sizeof(buf), "%s %s:%u", name, b ? b + 1 : f->file, f->line);
	} else {
		return strtab_intern(&r->strs, name, strlen(name));
	}
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	return strtab_intern(&r->strs, buf, (size_t)n);
}

static int merge_rehash(struct hc_report *r, struct merge *m, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return -1;
	for (i = 0; i < r->nstacks; i++) {
		size_t j = m->hash[i] & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

/* The stack whose labels are lab[0..n), created if new; -1 on oom. */
static int32_t stack_of(struct hc_report *r, struct merge *m, const uint32_t *lab, uint32_t n)
{
	uint32_t h = prof_hash(lab, n * sizeof(*lab), n);
	struct rstack *st;
	size_t j;

	if ((r->nstacks + 1) * 2 > m->nslots &&
	    merge_rehash(r, m, m->nslots ? m->nslots * 2 : 1024))
		return -1;
	for (j = h & (m->nslots - 1); m->slots[j]; j = (j + 1) & (m->nslots - 1)) {
		st = &r->stacks[m->slots[j] - 1];
		if (m->hash[m->slots[j] - 1] == h && st->n == n &&
		    (!n || !memcmp(&r->frames[st->first], lab, n * sizeof(*lab))))
			return (int32_t)(m->slots[j] - 1);
	}
	if (prof_grow(&r->stacks, &r->stacks_cap, r->nstacks + 1, sizeof(*r->stacks)) ||
	    prof_grow(&m->hash, &m->hcap, r->nstacks + 1, sizeof(*m->hash)) ||
	    prof_grow(&r->frames, &r->frames_cap, r->nframes + n, sizeof(*r->frames)))
		return -1;
	st = &r->stacks[r->nstacks];
	memset(st, 0, sizeof(*st));
	st->first = r->nframes;
	st->n = n;
	st->rep = -1;
	if (n)
		memcpy(&r->frames[r->nframes], lab, n * sizeof(*lab));
	r->nframes += n;
	m->hash[r->nstacks] = h;
	m->slots[j] = (uint32_t)r->nstacks + 1;
	return (int32_t)r->nstacks++;
}

/*
 * Per resolved location, computed once however many samples share it: is
 * it an allocator frame, and its labels (outermost frame first).
 */
struct loc_cache {
	int8_t *alloc;     /* -1 unknown, 0, 1 */
	uint32_t *first;   /* into pool; UINT32_MAX unknown */
	size_t cap;
	uint32_t *pool;
	size_t npool, pool_cap;
};

static int loc_cache_fill(struct hc_report *r, struct loc_cache *c, int32_t idx)
{
	const struct psym_loc *l = psym_loc(r->sym, idx);
	const struct psym_frame *f = psym_frames(r->sym, l);
	size_t old = c->cap, i;
	uint32_t k;

	if ((size_t)idx >= c->cap) {
		size_t cap2 = c->cap;

		if (prof_grow(&c->alloc, &cap2, (size_t)idx + 1, sizeof(*c->alloc)) ||
		    prof_grow(&c->first, &c->cap, (size_t)idx + 1, sizeof(*c->first)))
			return -1;
		if (cap2 != c->cap)
			return -1;
		for (i = old; i < c->cap; i++) {
			c->alloc[i] = -1;
			c->first[i] = UINT32_MAX;
		}
	}
	if (c->first[idx] != UINT32_MAX)
		return 0;
	if (prof_grow(&c->pool, &c->pool_cap, c->npool + l->n, sizeof(*c->pool)))
		return -1;
	c->alloc[idx] = 0;
	for (k = 0; k < l->n; k++)
		if (report_alloc_frame(f[k].func))
			c->alloc[idx] = 1;
	c->first[idx] = (uint32_t)c->npool;
	for (k = l->n; k-- > 0;) {
		uint32_t lab = label_of(r, l, &f[k]);

		if (lab == UINT32_MAX)
			return -1;
		c->pool[c->npool++] = lab;
	}
	return 0;
}

static int add_profile(struct hc_report *r, struct merge *m, const struct hc_prof *p, bool base,
		       struct loc_cache *lc)
{
	int32_t *locs = NULL;
	uint32_t *lab = NULL;
	size_t loc_cap = 0, lab_cap = 0, i;
	int rc = -1;

	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *smp = &p->samples[i];
		uint32_t n = smp->naddrs, cut = 0, j, nl = 0;
		struct rsample *rs;
		int32_t st;

		if (prof_grow(&locs, &loc_cap, n + 1, sizeof(*locs)))
			goto out;
		for (j = 0; j < n; j++) {
			locs[j] = psym_resolve(r->sym, p, p->addrs[smp->first + j]);
			if (locs[j] < 0 || loc_cache_fill(r, lc, locs[j]))
				goto out;
		}
		if (!r->o.keep_alloc && n) {
			const struct psym_loc *l0 = psym_loc(r->sym, locs[0]);
			struct psym_obj_info oi;

			for (j = 0; j < n; j++)
				if (lc->alloc[locs[j]] == 1)
					cut = j + 1;
			if (l0->obj >= 0) {
				psym_obj(r->sym, l0->obj, &oi);
				if (oi.is_alloc) {
					for (j = 0; j < n && psym_loc(r->sym, locs[j])->obj == l0->obj;
					     j++)
						;
					if (j > cut)
						cut = j;
				}
			}
			/* An allocation by the allocator itself: keep its outermost frame. */
			if (cut >= n)
				cut = n - 1;
		}
		/* Root first: locations outermost first, each one's inline chain reversed. */
		for (j = n; j-- > cut;) {
			uint32_t ln = psym_loc(r->sym, locs[j])->n;

			if (prof_grow(&lab, &lab_cap, nl + ln, sizeof(*lab)))
				goto out;
			memcpy(&lab[nl], &lc->pool[lc->first[locs[j]]], ln * sizeof(*lab));
			nl += ln;
		}
		st = stack_of(r, m, lab, nl);
		if (st < 0)
			goto out;
		r->stacks[st].v[base][0] += smp->objs;
		r->stacks[st].v[base][1] += smp->bytes;
		r->stacks[st].acc[base][0] += smp->accum_objs;
		r->stacks[st].acc[base][1] += smp->accum_bytes;
		r->stacks[st].raw[base] += (double)smp->raw_objs;
		/* The raw sample, locations root first, for pprof. */
		if (prof_grow(&r->samples, &r->samples_cap, r->nsamples + 1, sizeof(*r->samples)) ||
		    prof_grow(&r->locs, &r->locs_cap, r->nlocs + n - cut, sizeof(*r->locs)))
			goto out;
		rs = &r->samples[r->nsamples];
		rs->first = r->nlocs;
		rs->n = n - cut;
		rs->objs = smp->objs;
		rs->bytes = smp->bytes;
		rs->accum_objs = smp->accum_objs;
		rs->accum_bytes = smp->accum_bytes;
		rs->base = base;
		for (j = n; j-- > cut;)
			r->locs[r->nlocs++] = locs[j];
		if (!base && r->stacks[st].rep < 0)
			r->stacks[st].rep = (int32_t)r->nsamples;
		r->nsamples++;
	}
	rc = 0;
out:
	free(locs);
	free(lab);
	return rc;
}

struct hc_report *hc_report_build(const struct hc_prof *prof, const struct hc_prof *base,
				  const struct hc_report_opts *o, struct hc_err *err)
{
	struct hc_report_totals *t;
	struct hc_report *r;
	struct loc_cache lc;
	struct merge m;
	size_t i;

	memset(&m, 0, sizeof(m));
	memset(&lc, 0, sizeof(lc));
	r = calloc(1, sizeof(*r));
	if (!r)
		goto oom;
	if (o)
		r->o = *o;
	r->prof = prof;
	r->base = base;
	r->sym = psym_new(&r->o, &r->strs);
	if (!r->sym)
		goto oom;
	if (add_profile(r, &m, prof, false, &lc) || (base && add_profile(r, &m, base, true, &lc)) ||
	    r->strs.oom)
		goto oom;
	free(lc.alloc);
	free(lc.first);
	free(lc.pool);
	memset(&lc, 0, sizeof(lc));
	free(m.slots);
	free(m.hash);
	memset(&m, 0, sizeof(m));

	t = &r->tot;
	t->period = prof->period;
	t->diff = base != NULL;
	t->nstacks = r->nstacks;
	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[i];
		double d = s->v[0][1] - s->v[1][1];

		t->objects += s->v[0][0];
		t->bytes += s->v[0][1];
		t->base_objects += s->v[1][0];
		t->base_bytes += s->v[1][1];
		t->samples += s->raw[0];
		t->base_samples += s->raw[1];
		if (d > 0) {
			t->grew_bytes += d;
			if (s->raw[0] > s->raw[1])
				t->grew_samples += s->raw[0] - s->raw[1];
		} else {
			t->shrank_bytes -= d;
		}
	}
	/* Addresses that are shown (the allocator's dropped frames do not count). */
	{
		size_t nl = psym_nlocs(r->sym);
		bool *seen = calloc(nl ? nl : 1, sizeof(*seen));

		if (!seen)
			goto oom;
		for (i = 0; i < r->nlocs; i++) {
			if (seen[r->locs[i]])
				continue;
			seen[r->locs[i]] = true;
			t->naddrs++;
			if (!psym_loc(r->sym, r->locs[i])->resolved)
				t->nunresolved++;
		}
		free(seen);
	}
	t->nobjects = psym_nobjs(r->sym);
	t->nmissing = psym_nmissing(r->sym);
	return r;
oom:
	free(m.slots);
	free(m.hash);
	free(lc.alloc);
	free(lc.first);
	free(lc.pool);
	hc_report_free(r);
	err_set(err, HC_E_NOMEM, ENOMEM, "out of memory building the report");
	return NULL;
}

void hc_report_free(struct hc_report *r)
{
	if (!r)
		return;
	psym_free(r->sym);
	strtab_free(&r->strs);
	free(r->frames);
	free(r->stacks);
	free(r->locs);
	free(r->samples);
	free(r);
}

void hc_report_totals(const struct hc_report *r, struct hc_report_totals *t)
{
	*t = r->tot;
}

/* P(X <= k) for X ~ Poisson(l); l below a few hundred (e^-l as (e^(-l/64))^64). */
static double pois_cdf(double k, double l)
{
	double e = prof_expm1(-l / 64) + 1, term = 1, sum;

	for (int i = 0; i < 6; i++)
		e *= e;
	term = e;
	sum = term;
	for (double i = 1; i <= k; i++) {
		term *= l / i;
		sum += term;
	}
	return sum;
}

/* The l at which pois_cdf(k, l) falls to p: it falls as l grows. */
static double pois_solve(double k, double p)
{
	double a = 0, b = k + 10 * prof_sqrt(k + 1) + 10;

	for (int i = 0; i < 100; i++) {
		double m = (a + b) / 2;

		if (pois_cdf(k, m) > p)
			a = m;
		else
			b = m;
	}
	return (a + b) / 2;
}

/*
 * Garwood's exact interval for a Poisson mean from k events: the mean
 * below which k or more would come only 2.5% of the time, and the one
 * above which k or fewer would.  Solved on the Poisson distribution itself
 * up to k = 100; above, its chi-square quantiles by Wilson and
 * Hilferty's cube-root approximation, within 0.1% there.  The samplers of
 * jemalloc and heapctl take a sample every exponentially distributed
 * number of bytes, so the samples that fall in a stretch of allocations
 * are a Poisson count.
 */
void hc_poisson_range(double k, double *lo, double *hi)
{
	const double z = 1.959964; /* 95%, two-sided */
	double c;

	k = k > 0 ? (double)(uint64_t)(k + 0.5) : 0;
	if (k <= 100) {
		*lo = k > 0 ? pois_solve(k - 1, 0.975) : 0;
		*hi = pois_solve(k, 0.025);
		return;
	}
	c = 1.0 - 1.0 / (9.0 * k) - z / (3.0 * prof_sqrt(k));
	*lo = k * c * c * c;
	c = 1.0 - 1.0 / (9.0 * (k + 1)) + z / (3.0 * prof_sqrt(k + 1));
	*hi = (k + 1) * c * c * c;
}

void hc_growth_range(double growth, double k, uint64_t period, bool objects, double *lo,
		     double *hi)
{
	double l, h;

	/* period 0: gperftools recorded every allocation, nothing was sampled */
	if (!period) {
		*lo = *hi = growth;
		return;
	}
	hc_poisson_range(k, &l, &h);
	if (k > 0 && growth > 0) {
		*lo = l * growth / k;
		*hi = h * growth / k;
	} else {
		/* none seen: up to about h samples of the mean interval could have been missed */
		*lo = 0;
		*hi = objects ? 0 : h * (double)period;
	}
}

double report_delta(const struct hc_report *r, const struct rstack *s, bool objects)
{
	int k = objects ? 0 : 1;

	(void)r;
	return s->v[0][k] - s->v[1][k];
}

uint64_t *report_weights(const struct hc_report *r, const struct hc_write_opts *w)
{
	uint64_t *v = calloc(r->nstacks ? r->nstacks : 1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < r->nstacks; i++) {
		double d = report_delta(r, &r->stacks[i], w && w->objects);
		int64_t x;

		if (r->base && w && w->shrink)
			d = -d;
		x = prof_round(d);
		v[i] = x > 0 ? (uint64_t)x : 0;
	}
	return v;
}

/*
 * Stack order for folded and svg: by labels, frame by frame (deterministic,
 * prefix-grouped).  Labels are ranked once by strcmp, so the stack sort
 * compares integers.
 */
struct label_order {
	const struct hc_report *r;
	const uint32_t *rank;
};

static int cmp_label_ids(const void *a, const void *b, void *arg)
{
	const struct label_order *c = arg;

	return strcmp(report_label(c->r, *(const uint32_t *)a),
		      report_label(c->r, *(const uint32_t *)b));
}

static int cmp_stack_labels(const void *a, const void *b, void *arg)
{
	const struct label_order *c = arg;
	const struct rstack *x = &c->r->stacks[*(const uint32_t *)a];
	const struct rstack *y = &c->r->stacks[*(const uint32_t *)b];
	uint32_t i, n = x->n < y->n ? x->n : y->n;

	for (i = 0; i < n; i++) {
		uint32_t rx = c->rank[c->r->frames[x->first + i]];
		uint32_t ry = c->rank[c->r->frames[y->first + i]];

		if (rx != ry)
			return rx < ry ? -1 : 1;
	}
	return (x->n > y->n) - (x->n < y->n);
}

uint32_t *report_sorted_stacks(const struct hc_report *r)
{
	size_t nl = r->strs.n, i;
	uint32_t *idx = malloc((r->nstacks ? r->nstacks : 1) * sizeof(*idx));
	uint32_t *ids = malloc((nl ? nl : 1) * sizeof(*ids));
	uint32_t *rank = malloc((nl ? nl : 1) * sizeof(*rank));
	struct label_order c = { .r = r, .rank = rank };

	if (!idx || !ids || !rank) {
		free(idx);
		free(ids);
		free(rank);
		return NULL;
	}
	for (i = 0; i < nl; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, nl, sizeof(*ids), cmp_label_ids, &c);
	for (i = 0; i < nl; i++)
		rank[ids[i]] = (uint32_t)i;
	for (i = 0; i < r->nstacks; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, r->nstacks, sizeof(*idx), cmp_stack_labels, &c);
	free(ids);
	free(rank);
	return idx;
}
