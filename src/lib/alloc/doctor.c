// SPDX-License-Identifier: MIT
/*
 * doctor.c: the process's RSS explained, cause by cause.  A pure function
 * of the allocator's figures (struct hc_stats) and /proc/PID/smaps (struct
 * hc_maps): `heapctl doctor` and the Prometheus writer (stats --format
 * prometheus, watch --textfile) both call it, so the two never disagree,
 * and neither needs a second borrow.
 *
 * The findings split what the live allocations do not explain, so that
 * live + findings + unexplained = RSS:
 *   - inside the allocator's mappings: dirty, muzzy, fragmentation,
 *     arena_free, arenas, metadata, tcache (what the allocator says of its
 *     own memory, capped by what smaps says is resident there);
 *   - outside them: stacks, shared, file, and anon (the anonymous memory
 *     the allocator does not account for).
 * retained is address space, not RSS: it comes after the RSS findings.
 *
 * Advice names a command only where that command returns the bytes:
 * purge (jemalloc arena.<i>.purge, tcmalloc ReleaseFreeMemory) returns
 * dirty and muzzy pages, glibc's malloc_trim(0) only whole free pages
 * (arena_free); fragmentation is never promised to anything.  An allocator
 * that counts no live bytes (mimalloc) cannot tell its free memory from
 * its live objects: its resident memory then takes the place of live.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/heapctl.h>

/* A glibc process with this many arenas or more is told about MALLOC_ARENA_MAX. */
#define GL_MANY_ARENAS 4

static const char *const cause_keys[HC_CAUSE__COUNT] = {
	[HC_CAUSE_DIRTY] = "dirty",	    [HC_CAUSE_MUZZY] = "muzzy",
	[HC_CAUSE_FRAGMENTATION] = "fragmentation", [HC_CAUSE_ARENA_FREE] = "arena_free",
	[HC_CAUSE_ARENAS] = "arenas",	    [HC_CAUSE_METADATA] = "metadata",
	[HC_CAUSE_TCACHE] = "tcache",	    [HC_CAUSE_STACKS] = "stacks",
	[HC_CAUSE_SHARED] = "shared",	    [HC_CAUSE_FILE] = "file",
	[HC_CAUSE_ANON] = "anon",	    [HC_CAUSE_RETAINED] = "retained",
};

const char *hc_cause_key(enum hc_cause c)
{
	return (unsigned)c < HC_CAUSE__COUNT ? cause_keys[c] : "?";
}

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static double ratio(uint64_t a, uint64_t b)
{
	return a && b ? (double)a / (double)b : 0;
}

/* "12.3 MiB" */
static const char *sz(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)n;
	unsigned i = 0;

	while (d >= 1023.95 && i + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024.0;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", d, units[i]);
	return buf;
}

/* An allocator figure by name (glibc's mallinfo2 fields, tcmalloc's properties). */
static bool fig(const struct hc_stats *st, const char *name, uint64_t *v)
{
	for (unsigned i = 0; i < st->nfig && i < HC_MAX_FIGURES; i++)
		if (!strcmp(st->fig[i].name, name)) {
			*v = st->fig[i].value;
			return true;
		}
	*v = 0;
	return false;
}

static uint64_t fig0(const struct hc_stats *st, const char *name)
{
	uint64_t v;

	fig(st, name, &v);
	return v;
}

__attribute__((format(printf, 5, 6))) static struct hc_finding *
add(struct hc_doctor *d, enum hc_cause c, uint64_t bytes, const char *advice, const char *fmt,
    ...)
{
	struct hc_finding *f;
	va_list ap;

	if (!bytes || d->n >= HC_CAUSE__COUNT)
		return NULL;
	f = &d->f[d->n++];
	f->cause = c;
	f->bytes = bytes;
	f->rss = c != HC_CAUSE_RETAINED;
	va_start(ap, fmt);
	vsnprintf(f->explanation, sizeof(f->explanation), fmt, ap);
	va_end(ap);
	snprintf(f->advice, sizeof(f->advice), "%s", advice);
	return f;
}

static int by_bytes(const void *a, const void *b)
{
	const struct hc_finding *x = a, *y = b;

	if (x->rss != y->rss)
		return x->rss ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (int)x->cause - (int)y->cause;
}

static void jemalloc(pid_t pid, const struct hc_stats *st, const struct hc_maps *m,
		     const struct hc_doctor_settings *s, struct hc_doctor *d, uint64_t *inside)
{
	const uint64_t region = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ANON].rss +
				m->cat[HC_MAP_ALLOC].rss;
	uint64_t resident = min64(st->resident + st->muzzy, region);
	uint64_t frag = sub(st->active, st->allocated);
	uint64_t meta = min64(st->metadata, sub(st->resident, st->active + st->dirty));
	char adv[400], a[32], b[32];
	int n;

	d->active = st->active;
	d->resident = st->resident;
	d->live = sub(st->allocated, st->tcache);
	n = snprintf(adv, sizeof(adv), "heapctl purge -p %d returns them now", (int)pid);
	if (s->dirty_decay_ms == -1)
		snprintf(adv + n, sizeof(adv) - (size_t)n,
			 "; dirty_decay_ms is -1, so jemalloc never returns them on its own: "
			 "restart with MALLOC_CONF=dirty_decay_ms:10000, or now, arena by arena: "
			 "heapctl set -p %d arena.0.dirty_decay_ms 10000",
			 (int)pid);
	else if (s->dirty_decay_ms > 0 && s->background_thread == 0)
		snprintf(adv + n, sizeof(adv) - (size_t)n,
			 "; they decay over dirty_decay_ms (%" PRId64 " ms), but only while the "
			 "program calls malloc and free: heapctl set -p %d background_thread true "
			 "returns them on time even when it is idle",
			 s->dirty_decay_ms, (int)pid);
	else if (s->dirty_decay_ms > 0)
		snprintf(adv + n, sizeof(adv) - (size_t)n,
			 "; to keep fewer, lower dirty_decay_ms (%" PRId64
			 " ms now): MALLOC_CONF=dirty_decay_ms:1000 at start",
			 s->dirty_decay_ms);
	add(d, HC_CAUSE_DIRTY, st->dirty, adv,
	    "pages the program freed that jemalloc keeps mapped for reuse; they count in RSS "
	    "until they decay or are purged");
	snprintf(adv, sizeof(adv),
		 "nothing is needed: the kernel reclaims them when memory runs short; heapctl "
		 "purge -p %d returns them at once, and MALLOC_CONF=muzzy_decay_ms:0 releases "
		 "pages for good instead",
		 (int)pid);
	add(d, HC_CAUSE_MUZZY, st->muzzy, adv,
	    "pages jemalloc released lazily (MADV_FREE): still counted in RSS until the kernel "
	    "takes them back");
	add(d, HC_CAUSE_FRAGMENTATION, frag,
	    "heapctl purge cannot return this: jemalloc gives back only wholly free pages.  It "
	    "shrinks as the live objects beside the holes are freed or reallocated; a program "
	    "that moves its objects can compact it (Redis built with its bundled jemalloc: "
	    "CONFIG SET activedefrag yes)",
	    "free space inside pages that also hold live objects (active %s less allocated %s)",
	    sz(st->active, a, sizeof(a)), sz(st->allocated, b, sizeof(b)));
	add(d, HC_CAUSE_METADATA, meta,
	    "none needed unless it is large: it grows with arenas and with the address space "
	    "jemalloc manages; fewer arenas (MALLOC_CONF=narenas:N) at start",
	    "jemalloc's own bookkeeping (extent headers, bitmaps, base allocations)");
	add(d, HC_CAUSE_TCACHE, st->tcache,
	    "bounded per thread, and purge does not return them; smaller caches at start: "
	    "MALLOC_CONF=tcache_max:4096 (or tcache:false)",
	    "free objects each thread keeps cached for fast reuse (jemalloc counts them as "
	    "allocated)");
	add(d, HC_CAUSE_RETAINED, st->retained,
	    "nothing to do; MALLOC_CONF=retain:false unmaps it instead (more mmap calls, more "
	    "mappings)",
	    "address space jemalloc keeps for reuse after returning its pages: virtual memory, "
	    "not RSS");
	*inside = resident;
}

static void glibc(pid_t pid, const struct hc_stats *st, const struct hc_maps *m,
		  struct hc_doctor *d, uint64_t *inside)
{
	const uint64_t region = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ARENA].rss;
	const uint64_t anon = m->cat[HC_MAP_ANON].rss + m->cat[HC_MAP_ALLOC].rss;
	uint64_t uord = fig0(st, "uordblks"), ford = fig0(st, "fordblks");
	uint64_t hblkhd = min64(fig0(st, "hblkhd"), anon);
	uint64_t trim, untrim, res_free, frag, tfree, arenas = 0;
	char adv[400], a[32];

	/*
	 * Free chunks whose pages are gone (a malloc_trim already ran) still
	 * count in fordblks: only what smaps says is resident is free memory
	 * in RSS.  The sub-page holes between live chunks are resident, so
	 * they are counted first; whole free pages get what is left.
	 */
	if (!fig(st, "trimmable", &trim)) {
		/* no malloc_info (a static binary): no sizes to split the free chunks by */
		frag = min64(ford, sub(region, uord));
		d->live = st->allocated;
		d->active = st->allocated + frag;
		d->resident = region + hblkhd;
		add(d, HC_CAUSE_FRAGMENTATION, frag,
		    "heapctl purge (malloc_trim) returns only the whole free pages of this, and "
		    "without malloc_info() heapctl cannot tell how many there are: measure with "
		    "heapctl purge --json",
		    "free chunks in glibc's arenas, resident (malloc_info() is missing, so what "
		    "malloc_trim can return of them is unknown)");
		*inside = region + hblkhd;
		return;
	}
	untrim = sub(ford, trim);
	res_free = sub(region, uord);
	frag = min64(untrim, res_free);
	trim = min64(trim, res_free - frag);
	if (st->narenas >= GL_MANY_ARENAS && untrim) {
		uint64_t tu = sub(fig0(st, "thread_arenas_free"), fig0(st, "thread_arenas_trimmable"));

		/* the thread arenas' share of the holes */
		arenas = (uint64_t)((double)frag * (double)min64(tu, untrim) / (double)untrim);
		frag -= arenas;
	}
	d->live = st->allocated;
	d->active = st->allocated + frag + arenas;
	d->resident = region + hblkhd;
	snprintf(adv, sizeof(adv),
		 "heapctl purge -p %d (malloc_trim(0)) returns them now; on its own glibc trims "
		 "only the top of the main heap (M_TRIM_THRESHOLD)",
		 (int)pid);
	add(d, HC_CAUSE_ARENA_FREE, trim, adv,
	    "whole free pages inside free chunks of glibc's %u arena%s, which malloc_trim can "
	    "give back (estimated from malloc_info's free chunk sizes)",
	    st->narenas, st->narenas == 1 ? "" : "s");
	add(d, HC_CAUSE_FRAGMENTATION, frag,
	    "heapctl purge (malloc_trim) cannot return this: it gives back only whole free "
	    "pages.  It shrinks as the live chunks around the holes are freed; another "
	    "allocator (LD_PRELOAD=libjemalloc.so.2) often fragments less",
	    "free chunks smaller than a page, or the parts of pages, between live chunks in "
	    "glibc's arenas (free in the arenas %s)",
	    sz(ford, a, sizeof(a)));
	tfree = fig0(st, "thread_arenas_free");
	snprintf(adv, sizeof(adv),
		 "restart with MALLOC_ARENA_MAX=2 in the environment (at most 8 per CPU core by "
		 "default): threads then share arenas and reuse each other's free memory; "
		 "heapctl set -p %d M_ARENA_MAX 2 only stops new arenas, the existing stay",
		 (int)pid);
	add(d, HC_CAUSE_ARENAS, arenas, adv,
	    "%u glibc arenas for %u threads: each arena keeps its own free memory (%s free in "
	    "the thread arenas), which threads of another arena cannot reuse and malloc_trim "
	    "cannot return",
	    st->narenas, m->threads, sz(tfree, a, sizeof(a)));
	*inside = region + hblkhd;
}

static void tcmalloc(pid_t pid, const struct hc_stats *st, const struct hc_maps *m,
		     struct hc_doctor *d, uint64_t *inside)
{
	const uint64_t region = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ANON].rss +
				m->cat[HC_MAP_ALLOC].rss;
	uint64_t heap = fig0(st, "generic.heap_size");
	uint64_t unmapped = fig0(st, "tcmalloc.pageheap_unmapped_bytes");
	uint64_t pfree = fig0(st, "tcmalloc.pageheap_free_bytes");
	uint64_t frag = fig0(st, "tcmalloc.central_cache_free_bytes") +
			fig0(st, "tcmalloc.transfer_cache_free_bytes");
	uint64_t tc = fig0(st, "tcmalloc.thread_cache_free_bytes");
	uint64_t limit = fig0(st, "tcmalloc.max_total_thread_cache_bytes");
	char adv[400], a[32];

	d->live = st->allocated;
	d->resident = sub(heap, unmapped);
	d->active = sub(d->resident, pfree);
	snprintf(adv, sizeof(adv),
		 "heapctl purge -p %d (ReleaseFreeMemory) returns them now; to return them "
		 "sooner on its own: TCMALLOC_RELEASE_RATE=10 at start, or heapctl set -p %d "
		 "tcmalloc.aggressive_memory_decommit 1",
		 (int)pid, (int)pid);
	add(d, HC_CAUSE_DIRTY, pfree, adv,
	    "free pages in tcmalloc's page heap, still mapped: they count in RSS until "
	    "released");
	add(d, HC_CAUSE_FRAGMENTATION, frag,
	    "heapctl purge cannot return this: it holds spans that still have live objects.  "
	    "It shrinks as those are freed",
	    "free objects in tcmalloc's central and transfer caches, in spans shared with live "
	    "objects");
	snprintf(adv, sizeof(adv),
		 "purge does not return them; heapctl set -p %d "
		 "tcmalloc.max_total_thread_cache_bytes N lowers the limit (now %s), which the "
		 "caches shrink to as threads next free memory; "
		 "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES at start",
		 (int)pid, sz(limit, a, sizeof(a)));
	add(d, HC_CAUSE_TCACHE, tc, adv,
	    "free objects each thread keeps cached for fast reuse");
	add(d, HC_CAUSE_RETAINED, unmapped,
	    "nothing to do: the pages are already returned",
	    "address space tcmalloc returned to the OS and keeps for reuse: virtual memory, not "
	    "RSS");
	*inside = min64(d->resident, region);
}

/*
 * musl counts nothing (hc_stats.live_unknown): its malloc's memory is the
 * brk heap and the anonymous mappings, which its larger groups share with
 * whatever else the program maps.  They stand for the allocator's resident
 * memory; there is nothing to purge, so no finding of free memory.
 */
static void musl(const struct hc_maps *m, struct hc_doctor *d, uint64_t *inside)
{
	*inside = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ANON].rss + m->cat[HC_MAP_ALLOC].rss;
	d->resident = *inside;
}

/*
 * mimalloc as Debian builds it counts no live bytes (st->live_unknown):
 * what it has committed, as far as smaps holds it resident, is its live
 * objects and the free memory it keeps together, and stands for both in
 * the sum (hc_doctor_run()).  Its reserved address space is the one
 * finding of its own it measures.
 */
static void mimalloc(const struct hc_stats *st, const struct hc_maps *m, struct hc_doctor *d,
		     uint64_t *inside)
{
	/* its segments, 64 MiB-aligned reservations, look like glibc arenas to smaps */
	const uint64_t region = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ARENA].rss +
				m->cat[HC_MAP_ANON].rss + m->cat[HC_MAP_ALLOC].rss;

	d->resident = min64(fig0(st, "committed"), region);
	add(d, HC_CAUSE_RETAINED, st->retained, "nothing to do: mimalloc commits it as it needs it",
	    "address space mimalloc reserved and has not committed, or has decommitted: virtual "
	    "memory, not RSS");
	*inside = d->resident;
}

void hc_doctor_run(pid_t pid, const struct hc_stats *st, const struct hc_maps *m,
		   const struct hc_doctor_settings *s, struct hc_doctor *d)
{
	static const struct hc_doctor_settings unknown = {
		.dirty_decay_ms = HC_DECAY_UNKNOWN,
		.muzzy_decay_ms = HC_DECAY_UNKNOWN,
		.background_thread = -1,
	};
	uint64_t inside = 0, explained, anon;

	if (!s)
		s = &unknown;
	memset(d, 0, sizeof(*d));
	d->rss = m->rss_sum;
	d->allocated = st->allocated;
	d->live = st->allocated;
	d->threads = m->threads;
	d->narenas = st->narenas;
	if (!strcmp(st->allocator, "jemalloc"))
		jemalloc(pid, st, m, s, d, &inside);
	else if (!strcmp(st->allocator, "glibc"))
		glibc(pid, st, m, d, &inside);
	else if (!strncmp(st->allocator, "tcmalloc", 8))
		tcmalloc(pid, st, m, d, &inside);
	else if (!strcmp(st->allocator, "mimalloc"))
		mimalloc(st, m, d, &inside);
	else if (!strncmp(st->allocator, "musl", 4))
		musl(m, d, &inside);

	/* outside the allocator */
	add(d, HC_CAUSE_STACKS, m->cat[HC_MAP_STACK].rss,
	    "a stack's RSS goes only when its thread exits: fewer threads, or smaller stacks "
	    "(ulimit -s, pthread_attr_setstacksize) where threads recurse deeply",
	    "thread stacks (%u thread%s): the pages each has touched", m->threads,
	    m->threads == 1 ? "" : "s");
	add(d, HC_CAUSE_SHARED, m->cat[HC_MAP_SHM].rss,
	    "not the allocator's: find the segments with heapctl maps, ipcs -m and ls "
	    "/dev/shm; they are freed once removed and unmapped by every process",
	    "shared memory (System V, POSIX /dev/shm, memfd, shared anonymous), counted in the "
	    "RSS of every process that maps it");
	add(d, HC_CAUSE_FILE, m->cat[HC_MAP_FILE].rss,
	    "nothing to do for code; the kernel drops clean pages when memory runs short, and "
	    "a large figure means the program maps data files",
	    "pages of mapped files: the program, its libraries, files it maps");
	anon = m->cat[HC_MAP_HEAP].rss + m->cat[HC_MAP_ARENA].rss + m->cat[HC_MAP_ANON].rss +
	       m->cat[HC_MAP_ALLOC].rss;
	add(d, HC_CAUSE_ANON, sub(anon, inside),
	    "see which mappings with heapctl maps; a second allocator in the process shows in "
	    "heapctl info",
	    "anonymous memory %s does not account for: mmap() by the program or its "
	    "libraries, another allocator%s",
	    st->allocator[0] ? st->allocator : "the allocator",
	    !strncmp(st->allocator, "tcmalloc", 8) ? ", tcmalloc's own metadata" : "");

	/* without a count of live bytes, the allocator's resident memory stands for them */
	explained = st->live_unknown ? d->resident : d->live;
	for (unsigned i = 0; i < d->n; i++)
		if (d->f[i].rss)
			explained += d->f[i].bytes;
	d->unexplained = sub(d->rss, explained);
	qsort(d->f, d->n, sizeof(d->f[0]), by_bytes);
	d->frag_ratio = ratio(d->rss, d->allocated);
	d->alloc_frag_ratio = ratio(d->active, d->allocated);
	d->alloc_rss_ratio = ratio(d->resident, d->active);
	d->rss_overhead_ratio = ratio(d->rss, d->resident);
}
