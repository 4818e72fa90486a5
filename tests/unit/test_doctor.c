// SPDX-License-Identifier: MIT
/*
 * hc_doctor_run() on figures made up here, and what malloc_trim can return
 * as read from malloc_info's XML: no process, no ptrace.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <heapctl/heapctl.h>

#include "alloc_glibc.h"
#include "unit.h"

#define MiB (1024ull * 1024)

static const struct hc_finding *find(const struct hc_doctor *d, enum hc_cause c)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->f[i].cause == c)
			return &d->f[i];
	return NULL;
}

static void fig(struct hc_stats *st, const char *name, uint64_t v)
{
	struct hc_figure *f = &st->fig[st->nfig++];

	snprintf(f->name, sizeof(f->name), "%s", name);
	f->value = v;
}

/* Sorted largest first, RSS before not-RSS, purge advised only where it returns the bytes. */
static void check_shape(const struct hc_doctor *d)
{
	for (unsigned i = 0; i < d->n; i++) {
		const struct hc_finding *f = &d->f[i];
		bool purges = f->cause == HC_CAUSE_DIRTY || f->cause == HC_CAUSE_MUZZY ||
			      f->cause == HC_CAUSE_ARENA_FREE;

		CHECK(f->bytes > 0 && f->explanation[0] && f->advice[0], "%s empty",
		      hc_cause_key(f->cause));
		CHECK(f->rss == (f->cause != HC_CAUSE_RETAINED), "%s rss flag", hc_cause_key(f->cause));
		if (i) {
			const struct hc_finding *p = &d->f[i - 1];

			CHECK(p->rss > f->rss || (p->rss == f->rss && p->bytes >= f->bytes),
			      "%s after %s: not sorted", hc_cause_key(f->cause), hc_cause_key(p->cause));
		}
		CHECK(purges || !strstr(f->advice, "heapctl purge -p"),
		      "the advice for %s promises purge: %s", hc_cause_key(f->cause), f->advice);
	}
}

static void jemalloc_dirty(void)
{
	struct hc_stats st = { .allocator = "jemalloc" };
	struct hc_maps m = { .threads = 9 };
	struct hc_doctor_settings s = { .dirty_decay_ms = -1, .muzzy_decay_ms = 0,
					.background_thread = 0 };
	struct hc_doctor d;
	const struct hc_finding *f;

	begin("doctor.jemalloc");
	st.allocated = 6 * MiB;
	st.tcache = 1 * MiB;
	st.active = 7 * MiB;
	st.dirty = 64 * MiB;
	st.metadata = 3 * MiB;
	st.resident = 7 * MiB + 64 * MiB + 3 * MiB;
	st.retained = 200 * MiB;
	m.cat[HC_MAP_ANON].rss = 80 * MiB;
	m.cat[HC_MAP_FILE].rss = 4 * MiB;
	m.cat[HC_MAP_STACK].rss = 1 * MiB;
	m.rss_sum = 85 * MiB;
	hc_doctor_run(42, &st, &m, &s, &d);
	check_shape(&d);
	CHECK(d.n && d.f[0].cause == HC_CAUSE_DIRTY && d.f[0].bytes == 64 * MiB, "first: %s",
	      d.n ? hc_cause_key(d.f[0].cause) : "none");
	CHECK(d.n && strstr(d.f[0].advice, "heapctl purge -p 42") &&
		      strstr(d.f[0].advice, "dirty_decay_ms is -1"),
	      "dirty advice: %s", d.n ? d.f[0].advice : "");
	f = find(&d, HC_CAUSE_FRAGMENTATION);
	CHECK(f && f->bytes == 1 * MiB, "fragmentation = active - allocated");
	f = find(&d, HC_CAUSE_TCACHE);
	CHECK(f && f->bytes == 1 * MiB && d.live == 5 * MiB, "tcache out of live");
	/* allocator resident 74 MiB of the 80 in anonymous mappings */
	f = find(&d, HC_CAUSE_ANON);
	CHECK(f && f->bytes == 6 * MiB, "anon %llu", f ? (unsigned long long)f->bytes : 0);
	CHECK(d.n && d.f[d.n - 1].cause == HC_CAUSE_RETAINED && !d.f[d.n - 1].rss,
	      "retained last, not RSS");
	CHECK(d.frag_ratio > 14.1 && d.frag_ratio < 14.2, "rss/allocated %f", d.frag_ratio);
	CHECK(d.unexplained == 0, "unexplained %llu", (unsigned long long)d.unexplained);
	/* background_thread off with a decay: that is the advice, not the decay setting */
	s.dirty_decay_ms = 10000;
	hc_doctor_run(42, &st, &m, &s, &d);
	CHECK(d.n && strstr(d.f[0].advice, "background_thread true"), "advice: %s",
	      d.n ? d.f[0].advice : "");
	end();
}

/*
 * glibc after malloc_trim: fordblks still counts the returned pages, smaps
 * does not.  Only the resident free memory is explained: the sub-page holes
 * first, the trimmable pages with what is left.
 */
static void glibc_trimmed(void)
{
	struct hc_stats st = { .allocator = "glibc", .narenas = 2 };
	struct hc_maps m = { .threads = 2 };
	struct hc_doctor d;
	const struct hc_finding *f;

	begin("doctor.glibc");
	fig(&st, "uordblks", 16 * MiB);
	fig(&st, "fordblks", 82 * MiB);
	fig(&st, "hblkhd", 0);
	fig(&st, "trimmable", 66 * MiB);
	fig(&st, "thread_arenas_free", 66 * MiB);
	fig(&st, "thread_arenas_trimmable", 66 * MiB);
	st.allocated = 16 * MiB;
	/* before: everything resident */
	m.cat[HC_MAP_HEAP].rss = 32 * MiB;
	m.cat[HC_MAP_ARENA].rss = 66 * MiB;
	m.rss_sum = 100 * MiB;
	hc_doctor_run(7, &st, &m, NULL, &d);
	check_shape(&d);
	f = find(&d, HC_CAUSE_ARENA_FREE);
	CHECK(f && f->bytes == 66 * MiB && strstr(f->advice, "heapctl purge -p 7"), "arena_free");
	f = find(&d, HC_CAUSE_FRAGMENTATION);
	CHECK(f && f->bytes == 16 * MiB && !strstr(f->advice, "heapctl purge -p"), "frag");
	CHECK(!find(&d, HC_CAUSE_ARENAS), "2 arenas: no arenas finding");
	/* after: the thread arena's pages are gone, glibc still counts them free */
	m.cat[HC_MAP_ARENA].rss = 256 * 1024;
	m.rss_sum = 34 * MiB;
	hc_doctor_run(7, &st, &m, NULL, &d);
	check_shape(&d);
	f = find(&d, HC_CAUSE_ARENA_FREE);
	/* the arena's header pages are all that is left to explain */
	CHECK(!f || f->bytes <= 256 * 1024, "purge offered again for pages already returned");
	f = find(&d, HC_CAUSE_FRAGMENTATION);
	CHECK(f && f->bytes == 16 * MiB, "frag after");
	/* many arenas: the thread arenas' holes become the arenas finding */
	st.narenas = 16;
	st.fig[4].value = 30 * MiB; /* thread_arenas_free */
	st.fig[5].value = 0;	    /* thread_arenas_trimmable */
	st.fig[3].value = 0;	    /* trimmable */
	st.fig[1].value = 32 * MiB; /* fordblks */
	m.threads = 42;
	m.cat[HC_MAP_HEAP].rss = 18 * MiB;
	m.cat[HC_MAP_ARENA].rss = 60 * MiB;
	hc_doctor_run(7, &st, &m, NULL, &d);
	check_shape(&d);
	f = find(&d, HC_CAUSE_ARENAS);
	CHECK(f && f->bytes == 30 * MiB && strstr(f->explanation, "16 glibc arenas for 42 threads") &&
		      strstr(f->advice, "MALLOC_ARENA_MAX=2"),
	      "arenas: %s", f ? f->explanation : "none");
	f = find(&d, HC_CAUSE_FRAGMENTATION);
	CHECK(f && f->bytes == 2 * MiB, "frag in the main arena");
	/* no malloc_info (a static binary): one finding, no promise either way */
	st.nfig = 3;
	hc_doctor_run(7, &st, &m, NULL, &d);
	check_shape(&d);
	f = find(&d, HC_CAUSE_FRAGMENTATION);
	CHECK(f && f->bytes == 32 * MiB && strstr(f->advice, "cannot tell") &&
		      !find(&d, HC_CAUSE_ARENA_FREE) && !find(&d, HC_CAUSE_ARENAS),
	      "without malloc_info: %s", f ? f->advice : "none");
	end();
}

static void glibc_xml(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t page = ps > 0 ? (uint64_t)ps : 4096;
	/* a main heap with a 1 MiB top and one thread arena with a 64 MiB free chunk */
	char xml[2048];
	struct gl_xml *x = calloc(1, sizeof(*x));
	struct hc_err err = { 0 };
	uint64_t big = 64 * MiB, small = 10000 * 1008ull;

	begin("doctor.glibc_xml");
	snprintf(xml, sizeof(xml),
		 "<malloc version=\"1\">\n"
		 "<heap nr=\"0\">\n<sizes>\n"
		 "  <size from=\"993\" to=\"1008\" total=\"%llu\" count=\"10000\"/>\n"
		 "</sizes>\n"
		 "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		 "<total type=\"rest\" count=\"10001\" size=\"%llu\"/>\n"
		 "<system type=\"current\" size=\"40000000\"/>\n"
		 "</heap>\n"
		 "<heap nr=\"1\">\n<sizes>\n"
		 "  <unsorted from=\"1\" to=\"%llu\" total=\"%llu\" count=\"1\"/>\n"
		 "</sizes>\n"
		 "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		 "<total type=\"rest\" count=\"2\" size=\"%llu\"/>\n"
		 "</heap>\n"
		 "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		 "</malloc>\n",
		 (unsigned long long)small, (unsigned long long)(small + MiB),
		 (unsigned long long)big, (unsigned long long)big,
		 (unsigned long long)(big + 4096));
	CHECK(x && gl_xml_parse(xml, strlen(xml), x, &err) == 0, "parse: %s", err.msg);
	if (x && !err.msg[0]) {
		/* sub-page chunks give nothing; the 64 MiB chunk all but its first page */
		CHECK(x->arena[0].trim == gl_trim_estimate(MiB, page), "main: top only, %llu",
		      (unsigned long long)x->arena[0].trim);
		CHECK(x->trim_threads == big - page, "thread arena %llu",
		      (unsigned long long)x->trim_threads);
		CHECK(x->free_threads == big + 4096, "free_threads %llu",
		      (unsigned long long)x->free_threads);
		CHECK(x->trim == x->trim_threads + x->arena[0].trim, "trim sum");
		CHECK(x->narenas_total == 2 && x->arena[1].nr == 1 && x->arena[1].rest == big + 4096,
		      "heaps");
	}
	CHECK(gl_trim_estimate(1008, 4096) == 0, "1008");
	CHECK(gl_trim_estimate(8192, 4096) == 4096, "8192");
	CHECK(gl_trim_estimate(2 * 4096 + 2096, 4096) == 2 * 4096, "2 pages");
	free(x);
	end();
}

int main(void)
{
	jemalloc_dirty();
	glibc_trimmed();
	glibc_xml();
	return nfailed != 0;
}
