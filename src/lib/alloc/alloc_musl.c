// SPDX-License-Identifier: MIT
/*
 * musl's malloc: mallocng (musl 1.2.1 and later) or oldmalloc (before,
 * or a build that chose it).  musl gives a program no interface to its
 * allocator: no mallinfo, no malloc_info, no malloc_trim, no mallopt, no
 * profiler.  So this driver makes no remote call at all, and stops no
 * thread: what it says comes from /proc/PID (the brk heap and the
 * anonymous mappings) and from libc.c (musl, its version, its malloc).
 *
 * It detects by evidence, never by path: musl's libc is called libc.so
 * like glibc's, and a static executable has it under its own name
 * (libc.c says how each is told).
 *
 * Purge: mallocng returns freed memory itself (it unmaps a freed group, or
 * madvises its pages away, as the free happens) and keeps no cache to trim;
 * oldmalloc, too, gives back whole free pages as it coalesces.  There is
 * nothing for heapctl to call, so purge calls nothing and says so; that is
 * success, since the memory is already where purge would have put it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "libc.h"
#include "log.h"
#include "image.h"

struct mu {
	char name[32];    /* "musl mallocng": where.allocator points here */
	char version[64]; /* for info and stats */
	bool is_static;
};

static struct mu *mu_of(const struct hc_target *t)
{
	return t->drv.alloc_priv;
}

static int mu_detect(struct hc_target *t, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	const struct libc_id *id = libc_identify(&t->img);
	struct mu m = { 0 };

	/* musl's own malloc only: a musl program linked with mimalloc is mimalloc's */
	if (!own || id->kind != LIBC_MUSL || own != id->obj)
		return 0;
	snprintf(m.name, sizeof(m.name), "musl %s", id->malloc_impl ? id->malloc_impl : "malloc");
	if (id->version[0])
		snprintf(m.version, sizeof(m.version), "%s", id->version);
	else
		snprintf(m.version, sizeof(m.version), "(version unknown%s)",
			 id->is_static ? ": a static executable does not carry it" : "");
	m.is_static = id->is_static;
	if (alloc_found(t, own, "musl", &m, sizeof(m), 0, 0, err) < 0)
		return -1;
	t->drv.where.allocator = mu_of(t)->name;
	pr_info("musl: %s %s in %s (%s)", m.name, m.version, own->path, id->found);
	return 1;
}

static int mu_info(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	const struct libc_id *id = libc_identify(&t->img);

	(void)err;
	memset(info, 0, sizeof(*info));
	snprintf(info->version, sizeof(info->version), "%s", mu_of(t)->version);
	snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "libc=musl%s",
		 id->is_static ? " (linked statically)" : "");
	snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "evidence=%.80s", id->found);
	return 0;
}

static int mu_stats(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	struct hc_maps m;
	const struct hc_map_sum *heap;
	uint64_t anon_rss, anon_size;

	snprintf(st->allocator, sizeof(st->allocator), "%s", mu_of(t)->name);
	snprintf(st->version, sizeof(st->version), "%s", mu_of(t)->version);
	if (hc_maps_read(t->img.pid, &m, err) < 0)
		return -1;
	heap = &m.cat[HC_MAP_HEAP];
	/*
	 * mallocng maps its larger groups with mmap, and the kernel merges
	 * such a mapping with a thread stack's next to it: smaps cannot tell
	 * them apart, so every private anonymous mapping counts here.
	 */
	anon_rss = m.cat[HC_MAP_ANON].rss + m.cat[HC_MAP_STACK].rss + m.cat[HC_MAP_ALLOC].rss;
	anon_size = m.cat[HC_MAP_ANON].size + m.cat[HC_MAP_STACK].size + m.cat[HC_MAP_ALLOC].size;
	alloc_fig(st, "brk_heap", heap->size, "the brk heap ([heap]): address space");
	alloc_fig(st, "brk_heap_rss", heap->rss, "the brk heap: resident");
	alloc_fig(st, "anon_rss", anon_rss,
		  "other anonymous memory, resident: malloc's groups, thread stacks, the rest");
	/* nothing in musl counts live bytes: allocated and dirty cannot be known */
	st->live_unknown = true;
	st->mapped = heap->size + anon_size;
	st->resident = heap->rss + anon_rss;
	snprintf(st->warning, sizeof(st->warning),
		 "musl's malloc exposes no statistics (no per-arena figures, no allocated-bytes "
		 "counter): these are /proc/PID/smaps'");
	snprintf(st->purge_note, sizeof(st->purge_note),
		 "musl's malloc returns freed memory to the system itself and keeps nothing to "
		 "trim: there is no call to make");
	return 0;
}

static int mu_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	(void)opts;
	(void)sink;
	(void)arg;
	return err_sethint(err, HC_E_UNSUPPORTED, 0,
			   "'heapctl stats -p PID' shows what /proc tells of its heap, "
			   "'heapctl maps -p PID' where its RSS is",
			   "%s in pid %d has no statistics to print: musl has no malloc_info() or "
			   "malloc_stats()", mu_of(t)->name, t->img.pid);
}

static int mu_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	if (arena >= 0)
		return err_sethint(err, HC_E_USAGE, 0, "run 'heapctl purge' without --arena",
				   "%s has no arenas to name", mu_of(t)->name);
	pr_info("pid %d: %s returns freed memory itself; nothing to call", t->img.pid,
		mu_of(t)->name);
	return 0;
}

static int mu_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	(void)v;
	return err_sethint(err, HC_E_NO_CTL, 0,
			   "musl's malloc has no settings; 'heapctl stats' shows its heap",
			   "'%s': %s in pid %d has no control names (musl has no mallctl or mallopt)",
			   name, mu_of(t)->name, t->img.pid);
}

static int mu_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_value *now, struct hc_err *err)
{
	(void)value;
	(void)old;
	return mu_ctl_get(t, name, now, err);
}

const struct alloc_ops alloc_musl = {
	.name = "musl",
	.detect = mu_detect,
	.release = alloc_free_priv,
	/* no remote calls: no thread is ever stopped, so there is no safe point to check */
	.contains = NULL,
	.info = mu_info,
	/* no profiler of its own; whether heapctl's sampler can be loaded is sampler_loadable()'s */
	.no_prof_hint = "heapctl's sampler profiles it: 'heapctl prof on -p PID'",
	.stats = mu_stats,
	.stats_print = mu_stats_print,
	.purge = mu_purge,
	.ctl_get = mu_ctl_get,
	.ctl_set = mu_ctl_set,
};
