// SPDX-License-Identifier: MIT
/*
 * out_text.c: folded stacks, the jeprof-like text table and JSON.
 *
 * Folded: "root;caller;leaf WEIGHT", one line per merged stack, sorted, with
 * integer weights > 0 only (flamegraph.pl drops negative and zero lines
 * silently, inferno rejects them).  ';' inside a name would split a frame,
 * so it is written as ':'; control characters become '?'.
 */
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

/* Sort order of the text and JSON tables. */
struct sort_ctx {
	const struct hc_report *r;
	int sign;     /* +1 largest first, -1 smallest first */
	bool objects;
};

static void put_frame(FILE *f, const char *s)
{
	const char *p = s;

	/* Fast path: most names need no change. */
	while ((unsigned char)*p >= 0x20 && *p != ';' && *p != 0x7f)
		p++;
	fwrite(s, 1, (size_t)(p - s), f);
	for (s = p; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		putc(c, f);
	}
}

int out_folded(struct hc_report *r, const struct hc_write_opts *w, FILE *f, struct hc_err *err)
{
	uint64_t *wt = report_weights(r, w);
	uint32_t *idx = report_sorted_stacks(r);
	size_t i;

	(void)err;
	if (!wt || !idx) {
		free(wt);
		free(idx);
		return -2;
	}
	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[idx[i]];
		uint32_t k;

		if (!wt[idx[i]])
			continue;
		if (!s->n)
			fputs("[unknown]", f);
		for (k = 0; k < s->n; k++) {
			if (k)
				putc(';', f);
			put_frame(f, report_label(r, r->frames[s->first + k]));
		}
		fprintf(f, " %llu\n", (unsigned long long)wt[idx[i]]);
	}
	free(wt);
	free(idx);
	return ferror(f) ? -1 : 0;
}

/* ---- per-function flat/cum ----------------------------------------- */

struct fn_row {
	uint32_t label;
	double flat[2], cum[2]; /* [new, base] */
	double samples[2];      /* [new, base]: sampled objects of its own allocations */
};

struct fn_table {
	struct fn_row *rows;
	size_t n, cap;
	struct u64map by_label;
};

static struct fn_row *fn_get(struct fn_table *t, uint32_t label)
{
	uint32_t i;

	if (u64map_get(&t->by_label, label, &i))
		return &t->rows[i];
	if (prof_grow(&t->rows, &t->cap, t->n + 1, sizeof(*t->rows)) ||
	    u64map_put(&t->by_label, label, (uint32_t)t->n))
		return NULL;
	memset(&t->rows[t->n], 0, sizeof(t->rows[0]));
	t->rows[t->n].label = label;
	return &t->rows[t->n++];
}

static int fn_build(const struct hc_report *r, bool objects, struct fn_table *t)
{
	int k = objects ? 0 : 1;
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[i];
		uint32_t j, m;
		struct fn_row *row;

		if (!s->n)
			continue;
		row = fn_get(t, r->frames[s->first + s->n - 1]);
		if (!row)
			return -1;
		row->flat[0] += s->v[0][k];
		row->flat[1] += s->v[1][k];
		row->samples[0] += s->raw[0];
		row->samples[1] += s->raw[1];
		for (j = 0; j < s->n; j++) {
			uint32_t lab = r->frames[s->first + j];
			bool dup = false;

			/* Recursion: count a function once per stack. */
			for (m = 0; m < j && !dup; m++)
				dup = r->frames[s->first + m] == lab;
			if (dup)
				continue;
			row = fn_get(t, lab);
			if (!row)
				return -1;
			row->cum[0] += s->v[0][k];
			row->cum[1] += s->v[1][k];
		}
	}
	return 0;
}

static void fn_free(struct fn_table *t)
{
	free(t->rows);
	u64map_free(&t->by_label);
}

static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct fn_row *x = a, *y = b;
	int sg = ((const struct sort_ctx *)arg)->sign;
	double dx = (x->flat[0] - x->flat[1]) * sg, dy = (y->flat[0] - y->flat[1]) * sg;
	double cx = (x->cum[0] - x->cum[1]) * sg, cy = (y->cum[0] - y->cum[1]) * sg;

	if (dx != dy)
		return dx < dy ? 1 : -1;
	if (cx != cy)
		return cx < cy ? 1 : -1;
	return (x->label > y->label) - (x->label < y->label);
}

/* 1234567 -> "1.2 MiB"; objects: plain count.  Signed if sign. */
static void fmt_val(char *buf, size_t len, double v, bool objects, bool sign)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	const char *sg = sign ? (v < 0 ? "-" : "+") : (v < 0 ? "-" : "");
	double a = v < 0 ? -v : v;
	unsigned u = 0;

	if (objects) {
		snprintf(buf, len, "%s%lld", sg, (long long)prof_round(a));
		return;
	}
	if (a < 1024) {
		snprintf(buf, len, "%s%lld B", sg, (long long)prof_round(a));
		return;
	}
	while (a >= 1023.95 && u + 1 < sizeof(units) / sizeof(units[0])) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, "%s%.1f %s", sg, a, units[u]);
}

static double pct(double v, double total)
{
	return total > 0 ? 100.0 * v / total : 0.0;
}

/*
 * A growing function's rate and its 95% range, over secs: "100.0 KiB
 * 80.2-124.7 KiB"-like cells, empty where there is no rate to give.
 */
static void rate_cells(char *rate, char *range, size_t len, double fl, double k, uint64_t period,
		       bool objects, double secs)
{
	char lo[32], hi[32];
	double l, h;

	rate[0] = range[0] = '\0';
	if (secs <= 0 || fl <= 0)
		return;
	hc_growth_range(fl, k, period, objects, &l, &h);
	fmt_val(rate, len, fl / secs, objects, false);
	fmt_val(lo, sizeof(lo), l / secs, objects, false);
	fmt_val(hi, sizeof(hi), h / secs, objects, false);
	snprintf(range, len, "%.15s-%.15s", lo, hi);
}

static void table(FILE *f, const struct hc_report *r, struct fn_row *rows, size_t n, int k,
		  bool objects, bool diff, double total, unsigned top, double secs)
{
	double sum = 0;
	size_t i;

	if (k < 0 || !diff)
		secs = 0; /* a rate only for what grew */

	if (diff && (!n || (rows[0].flat[0] - rows[0].flat[1]) * k <= 0) &&
	    (!n || (rows[0].cum[0] - rows[0].cum[1]) * k <= 0)) {
		fputs("  (nothing)\n", f);
		return;
	}
	fprintf(f, "%12s %7s %7s %12s %7s %8s", diff ? "flat-delta" : "flat", "flat%", "sum%",
		diff ? "cum-delta" : "cum", "cum%", "samples");
	if (secs > 0)
		fprintf(f, " %12s %21s", "flat/s", "95% range /s");
	fputs("  function\n", f);
	for (i = 0; i < n && i < top; i++) {
		const struct fn_row *row = &rows[i];
		double fl = row->flat[0] - (diff ? row->flat[1] : 0);
		double cu = row->cum[0] - (diff ? row->cum[1] : 0);
		char a[32], b[32];
		double ns;

		if (diff && fl * k <= 0 && cu * k <= 0)
			break;
		if (!diff && fl <= 0 && cu <= 0 && i)
			break;
		sum += fl;
		fmt_val(a, sizeof(a), fl, objects, diff);
		fmt_val(b, sizeof(b), cu, objects, diff);
		/* the samples its own figure stands on: those that grew, with a base */
		ns = diff ? (row->samples[0] - row->samples[1]) * k : row->samples[0];
		fprintf(f, "%12s %6.1f%% %6.1f%% %12s %6.1f%% %8.0f", a, pct(fl * k, total),
			pct(sum * k, total), b, pct(cu * k, total), ns);
		if (secs > 0) {
			char rate[40], range[40];

			rate_cells(rate, range, sizeof(rate), fl, ns, r->tot.period, objects, secs);
			fprintf(f, " %12s %21s", rate, range);
		}
		fprintf(f, "  %s\n", report_label(r, row->label));
	}
}

static int cmp_stack_delta(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct rstack *x = &c->r->stacks[*(const uint32_t *)a];
	const struct rstack *y = &c->r->stacks[*(const uint32_t *)b];
	double dx = report_delta(c->r, x, c->objects), dy = report_delta(c->r, y, c->objects);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return (x->first > y->first) - (x->first < y->first);
}

static void top_stacks(FILE *f, const struct hc_report *r, bool objects, unsigned top)
{
	uint32_t *idx = malloc((r->nstacks ? r->nstacks : 1) * sizeof(*idx));
	struct sort_ctx c = { .r = r, .sign = 1, .objects = objects };
	size_t i;

	if (!idx)
		return;
	for (i = 0; i < r->nstacks; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, r->nstacks, sizeof(*idx), cmp_stack_delta, &c);
	fprintf(f, "\nTop %sstacks (leaf first):\n", r->base ? "growing " : "");
	for (i = 0; i < r->nstacks && i < top; i++) {
		const struct rstack *s = &r->stacks[idx[i]];
		double d = report_delta(r, s, objects);
		char a[32];
		uint32_t k;

		if (d <= 0)
			break;
		fmt_val(a, sizeof(a), d, objects, r->base != NULL);
		fprintf(f, "%12s  ", a);
		for (k = s->n; k-- > 0;)
			fprintf(f, "%s%s", report_label(r, r->frames[s->first + k]), k ? " <- " : "");
		if (!s->n)
			fputs("[unknown]", f);
		putc('\n', f);
	}
	free(idx);
}

int out_text(struct hc_report *r, const struct hc_write_opts *w, FILE *f, struct hc_err *err)
{
	const struct hc_report_totals *t = &r->tot;
	struct sort_ctx sc = { .r = r, .sign = 1, .objects = w->objects };
	bool objects = w->objects;
	unsigned top = w->top ? w->top : 25;
	struct fn_table ft;
	char a[32], b[32], c[32], per[32];

	(void)err;
	if (fn_build(r, objects, &ft)) {
		fn_free(&ft);
		return -2;
	}
	fmt_val(per, sizeof(per), (double)t->period, false, false);
	if (!r->base) {
		fmt_val(a, sizeof(a), objects ? t->objects : t->bytes, objects, false);
		/* period 0: gperftools' heap profiler records every allocation, no sampling */
		if (t->period)
			fprintf(f, "Total: %s%s in %zu stacks (sampled every %s on average, un-biased; "
				"%.0f samples)\n", a, objects ? " objects" : "", t->nstacks, per,
				t->samples);
		else
			fprintf(f, "Total: %s%s in %zu stacks (every allocation recorded)\n", a,
				objects ? " objects" : "", t->nstacks);
		sc.sign = 1;
		if (ft.n)
			qsort_r(ft.rows, ft.n, sizeof(*ft.rows), cmp_row, &sc);
		table(f, r, ft.rows, ft.n, 1, objects, false, objects ? t->objects : t->bytes, top, 0);
	} else {
		double nv = objects ? t->objects : t->bytes;
		double bv = objects ? t->base_objects : t->base_bytes;
		double grew = 0, shrank = 0;
		size_t i;

		for (i = 0; i < r->nstacks; i++) {
			double d = report_delta(r, &r->stacks[i], objects);

			if (d > 0)
				grew += d;
			else
				shrank -= d;
		}
		fmt_val(a, sizeof(a), nv - bv, objects, true);
		fmt_val(b, sizeof(b), bv, objects, false);
		fmt_val(c, sizeof(c), nv, objects, false);
		fprintf(f, "Change: %s%s (base %s -> %s, %zu stacks, %s%s", a,
			objects ? " objects" : "", b, c, t->nstacks,
			t->period ? "sampled every " : "every allocation recorded",
			t->period ? per : "");
		if (t->period)
			fprintf(f, "; %.0f -> %.0f samples, %.0f of them grew", t->base_samples,
				t->samples, t->grew_samples);
		fputs(")\n", f);
		fmt_val(a, sizeof(a), grew, objects, true);
		fprintf(f, "\nGrew: %s", a);
		if (t->period && grew > 0) {
			double lo, hi;

			/* what grew stands on the samples that grew (docs/report.md, "How sure") */
			hc_growth_range(grew, t->grew_samples, t->period, objects, &lo, &hi);
			fmt_val(b, sizeof(b), lo, objects, false);
			fmt_val(c, sizeof(c), hi, objects, false);
			fprintf(f, " (95%% range %s to %s, from %.0f samples)", b, c, t->grew_samples);
		}
		fputc('\n', f);
		sc.sign = 1;
		if (ft.n)
			qsort_r(ft.rows, ft.n, sizeof(*ft.rows), cmp_row, &sc);
		table(f, r, ft.rows, ft.n, 1, objects, true, grew, top, w->seconds);
		if (!w->grow_only) {
			fmt_val(a, sizeof(a), -shrank, objects, shrank > 0);
			fprintf(f, "\nShrank: %s\n", a);
			sc.sign = -1;
			if (ft.n)
				qsort_r(ft.rows, ft.n, sizeof(*ft.rows), cmp_row, &sc);
			table(f, r, ft.rows, ft.n, -1, objects, true, shrank, top, 0);
		}
	}
	top_stacks(f, r, objects, top < 10 ? top : 10);
	if (t->nunresolved || t->nmissing)
		fprintf(f, "\n%zu of %zu addresses have no name; %zu of %zu objects not found\n",
			t->nunresolved, t->naddrs, t->nmissing, t->nobjects);
	fn_free(&ft);
	return ferror(f) ? -1 : 0;
}

/* ---- JSON: strings through hc_json_str() (src/lib/base/json.c) ---------------- */

int out_json(struct hc_report *r, const struct hc_write_opts *w, FILE *f, struct hc_err *err)
{
	const struct hc_report_totals *t = &r->tot;
	struct sort_ctx c = { .r = r, .sign = 1 };
	uint32_t *idx;
	size_t i;

	(void)err;
	(void)w;
	idx = malloc((r->nstacks ? r->nstacks : 1) * sizeof(*idx));
	if (!idx)
		return -2;
	for (i = 0; i < r->nstacks; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, r->nstacks, sizeof(*idx), cmp_stack_delta, &c);
	fprintf(f, "{\"format\":\"heapctl-report-1\",\"period\":%llu,",
		(unsigned long long)t->period);
	fprintf(f, "\"bytes\":%lld,\"objects\":%lld,\"samples\":%lld,",
		(long long)prof_round(t->bytes), (long long)prof_round(t->objects),
		(long long)prof_round(t->samples));
	if (r->base)
		fprintf(f, "\"base_bytes\":%lld,\"base_objects\":%lld,\"base_samples\":%lld,"
			"\"grew_samples\":%lld,", (long long)prof_round(t->base_bytes),
			(long long)prof_round(t->base_objects), (long long)prof_round(t->base_samples),
			(long long)prof_round(t->grew_samples));
	fprintf(f, "\"addresses\":%zu,\"unresolved\":%zu,\"stacks\":[", t->naddrs,
		t->nunresolved);
	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[idx[i]];
		uint32_t k;

		fputs(i ? ",\n{\"frames\":[" : "\n{\"frames\":[", f);
		for (k = 0; k < s->n; k++) {
			if (k)
				putc(',', f);
			hc_json_str(f, report_label(r, r->frames[s->first + k]));
		}
		fprintf(f, "],\"bytes\":%lld,\"objects\":%lld", (long long)prof_round(s->v[0][1]),
			(long long)prof_round(s->v[0][0]));
		if (r->base)
			fprintf(f, ",\"base_bytes\":%lld,\"base_objects\":%lld,\"delta_bytes\":%lld",
				(long long)prof_round(s->v[1][1]), (long long)prof_round(s->v[1][0]),
				(long long)prof_round(s->v[0][1] - s->v[1][1]));
		putc('}', f);
	}
	fputs("]}\n", f);
	free(idx);
	return ferror(f) ? -1 : 0;
}

/*
 * The heads of the text tables as JSON members, for a caller's own object
 * (leak --json): "functions" by flat change, "stacks" by change, root first
 * like "stacks" of the full JSON.  With a base only what grew is listed.
 */
int out_json_top(struct hc_report *r, const struct hc_write_opts *w, FILE *f)
{
	struct sort_ctx c = { .r = r, .sign = 1, .objects = w->objects };
	unsigned top = w->top ? w->top : 10;
	struct fn_table ft;
	uint32_t *idx;
	size_t i, n;

	if (fn_build(r, w->objects, &ft)) {
		fn_free(&ft);
		return -2;
	}
	idx = malloc((r->nstacks ? r->nstacks : 1) * sizeof(*idx));
	if (!idx) {
		fn_free(&ft);
		return -2;
	}
	if (ft.n)
		qsort_r(ft.rows, ft.n, sizeof(*ft.rows), cmp_row, &c);
	fputs("\"functions\":[", f);
	for (i = n = 0; i < ft.n && n < top; i++) {
		const struct fn_row *row = &ft.rows[i];
		double fl = row->flat[0] - row->flat[1], cu = row->cum[0] - row->cum[1], ns;

		if (fl <= 0 && cu <= 0)
			break;
		fputs(n++ ? ",{\"name\":" : "{\"name\":", f);
		hc_json_str(f, report_label(r, row->label));
		ns = row->samples[0] - row->samples[1];
		fprintf(f, ",\"flat\":%lld,\"cum\":%lld,\"samples\":%lld", (long long)prof_round(fl),
			(long long)prof_round(cu), (long long)prof_round(ns));
		if (w->seconds > 0 && r->base) {
			double lo, hi;

			hc_growth_range(fl > 0 ? fl : 0, ns, r->tot.period, w->objects, &lo, &hi);
			fprintf(f, ",\"per_second\":%.0f,\"per_second_range\":[%.0f,%.0f]",
				fl / w->seconds, lo / w->seconds, hi / w->seconds);
		}
		putc('}', f);
	}
	fputs("],\"stacks\":[", f);
	for (i = 0; i < r->nstacks; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, r->nstacks, sizeof(*idx), cmp_stack_delta, &c);
	for (i = 0; i < r->nstacks && i < top; i++) {
		const struct rstack *s = &r->stacks[idx[i]];
		double d = report_delta(r, s, w->objects);
		uint32_t k;

		if (d <= 0)
			break;
		fputs(i ? ",{\"frames\":[" : "{\"frames\":[", f);
		for (k = 0; k < s->n; k++) {
			if (k)
				putc(',', f);
			hc_json_str(f, report_label(r, r->frames[s->first + k]));
		}
		fprintf(f, "],\"change\":%lld}", (long long)prof_round(d));
	}
	putc(']', f);
	free(idx);
	fn_free(&ft);
	return ferror(f) ? -1 : 0;
}
