// SPDX-License-Identifier: MIT
/*
 * mimalloc driver: its public API (mimalloc.h) for statistics, purging and
 * options.  mimalloc has no heap profiler: "prof on" loads heapctl's
 * sampler (api.c), as for glibc.
 *
 * Statistics: mi_process_info() (8 pointers) gives what mimalloc has
 * committed, now and at its peak; mi_stats_print_out(out, arg) writes its
 * report through out(msg, arg), here mi_print_cb() on heapctl's side, so
 * nothing reaches the target's stdout or stderr.  Of that text only the
 * "reserved" row is read: as Debian builds it (MI_STAT=0) mimalloc counts
 * no live bytes, and its page and segment rows are not kept up to date.
 *
 * Purge is mi_collect(true): the borrowed thread's own heap, the segments
 * of threads that exited and mimalloc's segment cache.  Pages other live
 * threads hold stay theirs.
 *
 * Options are mi_option_get()/mi_option_set() on mi_option_t, whose
 * numbers change between releases: heapctl knows 2.0.9's (Debian 12's
 * libmimalloc2.0) and refuses any other version rather than set the
 * wrong option.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "alloc_mimalloc.h"
#include "call.h"
#include "log.h"
#include "image.h"

struct mi {
	struct obj *obj;
	uint64_t lo, hi; /* allocator code, when it is a DSO of its own */
	uint64_t version, collect, thread_init, stats_print, process_info, opt_get, opt_set;
};

static struct mi *mi_of(const struct hc_target *t)
{
	return t->drv.alloc_priv;
}

/* ---- pure: versions, options, the statistics text ---------------------------------- */

void mi_version_str(int v, char *out, size_t len)
{
	/* MI_MALLOC_VERSION: major, then the minor's two digits: 209 is 2.0.9, 212 is 2.1.2 */
	snprintf(out, len, "%d.%d.%d", v / 100, v / 10 % 10, v % 10);
}

#define START_ONLY "mimalloc reads it at start only: the new value changes nothing in this process"
#define TO_STDERR "while it is on, mimalloc writes to the process's stderr"

/* mimalloc 2.0.9's mi_option_t (include/mimalloc.h) and where its src/ reads each. */
const struct mi_opt mi_opts[] = {
	{ "show_errors", 0, TO_STDERR },
	{ "show_stats", 1, "mimalloc prints its statistics to the process's stderr at exit" },
	{ "verbose", 2, TO_STDERR },
	{ "eager_commit", 3, NULL },
	{ "large_os_pages", 6, "mimalloc sets up large pages at start: turning them on now "
			       "changes nothing" },
	{ "reserve_huge_os_pages", 7, START_ONLY },
	{ "reserve_huge_os_pages_at", 8, START_ONLY },
	{ "reserve_os_memory", 9, START_ONLY },
	{ "page_reset", 11, NULL },
	{ "abandoned_page_decommit", 12, NULL },
	{ "eager_commit_delay", 14, NULL },
	{ "decommit_delay", 15, NULL },
	{ "use_numa_nodes", 16, "mimalloc counts the NUMA nodes once, at its first use" },
	{ "limit_os_alloc", 17, NULL },
	{ "os_tag", 18, "mimalloc uses it on macOS only" },
	{ "max_errors", 19, START_ONLY },
	{ "max_warnings", 20, START_ONLY },
	{ "max_segment_reclaim", 21, NULL },
	{ "allow_decommit", 22, NULL },
	{ "segment_decommit_delay", 23, NULL },
	{ "decommit_extend_delay", 24, NULL },
	{ "destroy_on_exit", 25, NULL },
};
const size_t mi_nopts = sizeof(mi_opts) / sizeof(mi_opts[0]);

#define MI_KNOWN_VERSION 209

static const char *bare(const char *name)
{
	return strncasecmp(name, "mi_option_", 10) ? name : name + 10;
}

const struct mi_opt *mi_opt_find(const char *name)
{
	for (size_t i = 0; i < mi_nopts; i++)
		if (!strcasecmp(bare(name), mi_opts[i].name))
			return &mi_opts[i];
	return NULL;
}

int mi_opts_check(int version, pid_t pid, const char *name, struct hc_err *err)
{
	char v[32], hint[256], env[48];
	size_t i;

	if (version == MI_KNOWN_VERSION)
		return 0;
	for (i = 0; name && name[i] && i + 1 < sizeof(env); i++)
		env[i] = (char)toupper((unsigned char)name[i]);
	env[i] = 0;
	mi_version_str(version, v, sizeof(v));
	snprintf(hint, sizeof(hint),
		 "set it when the process starts: MIMALLOC_%s=VALUE in its environment",
		 name ? env : "NAME");
	return err_sethint(err, HC_E_UNSUPPORTED, 0, hint,
			   "pid %d uses mimalloc %s: heapctl knows the option numbers of mimalloc "
			   "2.0.9 only, and they change between releases",
			   pid, v);
}

bool mi_stats_amount(const char *text, const char *name, int col, uint64_t *out)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB" };
	size_t nl = strlen(name);
	const char *p = text;

	/* the row: its label, right-aligned, then ':' */
	for (;;) {
		p += strspn(p, " ");
		if (!strncmp(p, name, nl) && p[nl] == ':')
			break;
		p = strchr(p, '\n');
		if (!p)
			return false;
		p++;
	}
	p += nl + 1;
	for (int i = 0; i <= col; i++) {
		char unit[8] = "";
		double v;
		int n = 0;

		if (sscanf(p, "%lf%n", &v, &n) != 1 || memchr(p, '\n', (size_t)n))
			return false;
		p += n;
		/* a unit follows, unless the amount is a bare 0 */
		if (sscanf(p, "%*[ ]%7[A-Za-z]%n", unit, &n) == 1)
			p += n;
		if (i < col)
			continue;
		for (size_t u = 1; u < sizeof(units) / sizeof(units[0]); u++)
			if (!strcmp(unit, units[u]))
				v *= (double)(1ull << (10 * u));
		if (v < 0 || v > 1e19)
			return false;
		*out = (uint64_t)v;
		return true;
	}
	return false;
}

/* ---- detection -------------------------------------------------------------------- */

static int mi_detect(struct hc_target *t, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	struct mi m = { 0 };

	/* only a mimalloc that serves malloc: one merely mapped manages nothing */
	if (!own || !(m.version = alloc_sym(own, "mi_version")))
		return 0;
	m.collect = alloc_sym(own, "mi_collect");
	m.stats_print = alloc_sym(own, "mi_stats_print_out");
	if (!m.collect || !m.stats_print)
		return 0;
	m.obj = own;
	m.thread_init = alloc_sym(own, "mi_thread_init");
	m.process_info = alloc_sym(own, "mi_process_info");
	m.opt_get = alloc_sym(own, "mi_option_get");
	m.opt_set = alloc_sym(own, "mi_option_set");
	if (!own->is_exe) {
		m.lo = own->text_lo;
		m.hi = own->text_hi;
	}
	if (alloc_found(t, own, "mimalloc", &m, sizeof(m), m.opt_set, m.stats_print, err) < 0)
		return -1;
	pr_info("mimalloc: mi_version at 0x%" PRIx64 " in %s", m.version, own->path);
	return 1;
}

static bool mi_contains(struct hc_target *t, uint64_t raddr)
{
	const struct mi *m = mi_of(t);

	return m && m->hi && raddr >= m->lo && raddr < m->hi;
}

/* ---- remote helpers (inside a session) ------------------------------------------- */

/* mi_version(), or -1 (err set). */
static int version_of(struct hc_target *t, struct hc_err *err)
{
	uint64_t ret = 0;

	if (call_fn(&t->eng, mi_of(t)->version, NULL, 0, &ret, NULL, NULL, err) < 0)
		return -1;
	return (int)(ret & 0x7fffffff);
}

/* The text of mi_stats_print_out(), whole, into a buffer of heapctl's. */
struct text {
	char *b;
	size_t len, cap;
};

#define MAX_TEXT (1u << 20)

static int text_sink(void *arg, const char *s, size_t n)
{
	struct text *x = arg;

	if (x->len + n + 1 > x->cap) {
		size_t cap = (x->len + n + 1) * 2;
		char *nb = cap <= MAX_TEXT ? realloc(x->b, cap) : NULL;

		if (!nb)
			return -1;
		x->b = nb;
		x->cap = cap;
	}
	memcpy(x->b + x->len, s, n);
	x->len += n;
	x->b[x->len] = 0;
	return 0;
}

/* mi_stats_print_out(mi_print_cb): out(msg, arg) brings each line to sink. */
static int print_out(struct hc_target *t, hc_sink_fn sink, void *arg, struct hc_err *err)
{
	struct print_ctx pc = { sink, arg };
	uint64_t a[2], ret;

	a[0] = call_cb_raddr(&t->eng, err);
	a[1] = 0;
	if (!a[0])
		return -1;
	return call_fn(&t->eng, mi_of(t)->stats_print, a, 2, &ret, mi_print_cb, &pc, err);
}

/* ---- operations ------------------------------------------------------------------- */

static int mi_stats(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	struct mi *m = mi_of(t);
	struct text x = { 0 };
	uint64_t info[3] = { 0, 0, 0 }, reserved = 0, a[8], cell, ret;
	bool have_info = false, have_reserved;
	int v;

	snprintf(st->allocator, sizeof(st->allocator), "mimalloc");
	st->live_unknown = true;
	v = version_of(t, err);
	if (v < 0)
		goto end;
	mi_version_str(v, st->version, sizeof(st->version));
	if (m->process_info) {
		/* (elapsed, user, system, current_rss, peak_rss, current_commit, peak_commit, faults) */
		cell = call_scratch(&t->eng, sizeof(info), err);
		if (!cell) {
			if (!err_isset(err))
				err_set(err, HC_E_INTERNAL, 0, "scratch space is full");
			goto end;
		}
		memset(a, 0, sizeof(a)); /* NULL: not wanted (current_rss is current_commit on Linux) */
		a[4] = cell;
		a[5] = cell + 8;
		a[6] = cell + 16;
		if (call_write(&t->eng, cell, info, sizeof(info), err) < 0 ||
		    call_fn(&t->eng, m->process_info, a, 8, &ret, NULL, NULL, err) < 0 ||
		    call_read(&t->eng, cell, info, sizeof(info), err) < 0)
			goto end;
		have_info = true;
	}
	print_out(t, text_sink, &x, err);
end:
	call_done(&t->eng, err);
	if (err_isset(err)) {
		free(x.b);
		return -1;
	}
	have_reserved = x.b && mi_stats_amount(x.b, "reserved", 3, &reserved);
	free(x.b);
	if (have_info) {
		alloc_fig(st, "committed", info[1], "memory it committed: live, free and cached alike");
		alloc_fig(st, "peak_committed", info[2], "the most it ever had committed");
		alloc_fig(st, "peak_rss", info[0], "the process's peak RSS (getrusage)");
		st->mapped = info[1];
	}
	if (have_reserved)
		alloc_fig(st, "reserved", reserved, "address space it reserved (its statistics, to 0.1 unit)");
	if (have_reserved && have_info)
		st->retained = reserved > info[1] ? reserved - info[1] : 0;
	return 0;
}

static int mi_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	if (opts && *opts)
		return err_sethint(err, HC_E_USAGE, 0, "use --full alone",
				   "mimalloc takes no --opts ('%s')", opts);
	print_out(t, sink, arg, err);
	return err_isset(err) ? -1 : 0;
}

static int mi_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	uint64_t force = 1, ret;

	if (arena >= 0)
		return err_sethint(err, HC_E_USAGE, 0, "run 'heapctl purge' without --arena",
				   "mimalloc has no arenas to choose: mi_collect() works on them all");
	/*
	 * A thread that never allocated has no heap, and mi_collect() then does
	 * nothing at all (mi_heap_collect_ex() returns at once): give it one.
	 * (mi_stats_print_out() would, but hc_purge() may come without stats.)
	 */
	if (mi_of(t)->thread_init &&
	    call_fn(&t->eng, mi_of(t)->thread_init, NULL, 0, &ret, NULL, NULL, err) < 0)
		return -1;
	call_fn(&t->eng, mi_of(t)->collect, &force, 1, &ret, NULL, NULL, err);
	return err_isset(err) ? -1 : 0;
}

static int unknown_name(struct hc_target *t, const char *name, struct hc_err *err)
{
	return err_sethint(err, HC_E_NO_CTL, 0,
			   "mimalloc 2.0.9's options: decommit_delay, eager_commit, allow_decommit, "
			   "page_reset, ... ('heapctl get -p PID mi_option_' lists them all with "
			   "their values)",
			   "'%s' is not an option of mimalloc 2.0.9 (pid %d uses mimalloc)", name,
			   t->img.pid);
}

/* The options' numbers hold in this process: mi_version() asked in the same borrow. */
static int opts_usable(struct hc_target *t, const char *name, struct hc_err *err)
{
	int v;

	if (!mi_of(t)->opt_get || !mi_of(t)->opt_set)
		return err_set(err, HC_E_NO_SYM, 0, "mi_option_get/mi_option_set not found in %s",
			       mi_of(t)->obj->path);
	v = version_of(t, err);
	return v < 0 ? -1 : mi_opts_check(v, t->img.pid, name, err);
}

static int opt_read(struct hc_target *t, const struct mi_opt *o, struct hc_value *v,
		    struct hc_err *err)
{
	uint64_t a = (uint64_t)o->id, ret = 0;

	memset(v, 0, sizeof(*v));
	if (call_fn(&t->eng, mi_of(t)->opt_get, &a, 1, &ret, NULL, NULL, err) < 0)
		return -1;
	v->type = HC_T_I64;
	v->i = (int64_t)ret; /* long */
	return 0;
}

static int mi_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	const struct mi_opt *o = mi_opt_find(name);

	memset(v, 0, sizeof(*v));
	if (!o)
		return unknown_name(t, name, err);
	if (opts_usable(t, o->name, err) == 0)
		opt_read(t, o, v, err);
	return err_isset(err) ? -1 : 0;
}

static int mi_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_value *now, struct hc_err *err)
{
	const struct mi_opt *o = mi_opt_find(name);
	struct hc_value nv;
	uint64_t a[2], ret;

	if (!o)
		return unknown_name(t, name, err);
	if (hc_value_parse(o->name, HC_T_I64, value, &nv, err) < 0)
		return -1;
	if (opts_usable(t, o->name, err) < 0 || opt_read(t, o, old, err) < 0)
		return -1;
	a[0] = (uint64_t)o->id;
	a[1] = (uint64_t)nv.i;
	/* what mimalloc holds now, read back in the same borrow */
	if (call_fn(&t->eng, mi_of(t)->opt_set, a, 2, &ret, NULL, NULL, err) < 0 ||
	    opt_read(t, o, now, err) < 0)
		return -1;
	if (o->later)
		snprintf(now->note, sizeof(now->note), "%s", o->later);
	return 0;
}

/* Every option whose name starts with prefix ("mi_option_": all), read in one borrow. */
static int mi_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out,
		       size_t *n, char *skipped, size_t skipped_len, struct hc_err *err)
{
	const char *p = bare(prefix);
	size_t pl = strlen(p);

	(void)skipped;
	(void)skipped_len;
	*n = 0;
	*out = calloc(mi_nopts, sizeof(**out));
	if (!*out)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	for (size_t i = 0; i < mi_nopts; i++)
		if (!strncasecmp(mi_opts[i].name, p, pl))
			snprintf((*out)[(*n)++].name, sizeof((*out)[0].name), "%s", mi_opts[i].name);
	if (!*n) {
		free(*out);
		*out = NULL;
		return unknown_name(t, prefix, err);
	}
	if (opts_usable(t, NULL, err) == 0)
		for (size_t i = 0; i < *n && !err_isset(err); i++)
			opt_read(t, mi_opt_find((*out)[i].name), &(*out)[i].v, err);
	if (err_isset(err)) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

static int mi_info(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	struct hc_err e = { 0 };
	int v;

	memset(info, 0, sizeof(*info));
	v = version_of(t, err);
	if (v < 0)
		return -1;
	mi_version_str(v, info->version, sizeof(info->version));
	/* the options only where their numbers are known; info works on any version */
	if (!mi_of(t)->opt_get || mi_opts_check(v, t->img.pid, NULL, &e) < 0)
		return 0;
	for (size_t i = 0; i < mi_nopts && info->nconf < 32; i++) {
		struct hc_value val;

		if (opt_read(t, &mi_opts[i], &val, err) < 0)
			return -1;
		snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "%s=%" PRId64,
			 mi_opts[i].name, val.i);
	}
	return 0;
}

const struct alloc_ops alloc_mimalloc = {
	.name = "mimalloc",
	.detect = mi_detect,
	.release = alloc_free_priv,
	.contains = mi_contains,
	.info = mi_info,
	/* no profiler of its own: heapctl's sampler, or this hint */
	.no_prof_hint = "heapctl's sampler profiles it: 'heapctl prof on -p PID' without "
			"--sampler native",
	.stats = mi_stats,
	.stats_print = mi_stats_print,
	.purge = mi_purge,
	.ctl_get = mi_ctl_get,
	.ctl_set = mi_ctl_set,
	.ctl_list = mi_ctl_list,
};
