// SPDX-License-Identifier: MIT
/*
 * jemalloc driver: everything goes through <prefix>mallctl and
 * <prefix>malloc_stats_print, found by symbol with any prefix ("", "je_"
 * in Redis' bundled copy, "_rjem_" in Rust's tikv-jemalloc-sys).
 *
 * mallctl(name, oldp, oldlenp, newp, newlen) returns an errno value of its
 * own; it is decoded as the target's answer, never as a local errno.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "call.h"
#include "log.h"
#include "target.h"
#include "troot.h"

#define MALLCTL_ARENAS_ALL 4096

struct je {
	struct obj *obj;
	char prefix[32];
	uint64_t ctl, stats_print;
	uint64_t lo, hi; /* allocator code range, for the safe-point check */
};

static struct je *je_of(const struct hc_target *t)
{
	return t->alloc_priv;
}

/* ---- the namespace --------------------------------------------------------------- */

/*
 * How a name may be used, as jemalloc(3) marks it: r- read only, rw, -w
 * write only, -- (void) an action.  C_MAKE is read-only but every read
 * creates something (arenas.create, tcache.create): `get` refuses it and
 * `set NAME` runs it.  C_RXW is "r- or -w" (thread.prof.name): one call may
 * not do both.  C_PTR trades pointers into the process: not supported.
 */
enum ctl_access { C_R, C_RW, C_W, C_VOID, C_MAKE, C_RXW, C_PTR };

struct ctl_def {
	/*
	 * Dotted name; a component '#' is an index (arena.#.purge), and
	 * "(a|b|c)" any one of the names listed (the mutexes and counters).
	 */
	const char *pat;
	enum hc_type type;
	enum ctl_access acc;
};

/* The counters of every mutex in stats.mutexes and stats.arenas.<i>.mutexes. */
#define MUTEX_U64 ".(num_ops|num_spin_acq|num_wait|max_wait_time|total_wait_time|num_owner_switch)"
#define MUTEX_U32 ".max_num_thds"
#define GLOBAL_MUTEXES                                                                  \
	"stats.mutexes.(background_thread|max_per_bg_thd|ctl|prof|prof_thds_data|prof_dump|" \
	"prof_recent_alloc|prof_recent_dump|prof_stats)"
#define ARENA_MUTEXES                                                                 \
	"stats.arenas.#.mutexes.(large|extent_avail|extents_dirty|extents_muzzy|"     \
	"extents_retained|decay_dirty|decay_muzzy|base|tcache_list|hpa_shard|hpa_shard_grow|" \
	"hpa_sec)"

/*
 * jemalloc 5.3's MALLCTL NAMESPACE (jemalloc(3)), plus the few names 5.3
 * has beyond the manual (hpa, prof_recent, nshards).  A name this build
 * lacks answers ENOENT, which a listing skips.
 */
static const struct ctl_def ctl_defs[] = {
	{ "version", HC_T_STRING, C_R },
	{ "epoch", HC_T_U64, C_RW },
	{ "background_thread", HC_T_BOOL, C_RW },
	{ "max_background_threads", HC_T_SIZE, C_RW },
	{ "config.(cache_oblivious|debug|fill|lazy_lock|prof|prof_libgcc|prof_libunwind|stats|"
	  "utrace|xmalloc)",
	  HC_T_BOOL, C_R },
	{ "config.malloc_conf", HC_T_STRING, C_R },
	{ "opt.(abort|confirm_conf|abort_conf|cache_oblivious|trust_madvise|retain|"
	  "background_thread|stats_print|zero|utrace|xmalloc|tcache|prof|prof_active|"
	  "prof_thread_active_init|prof_accum|prof_gdump|prof_final|prof_leak|prof_leak_error|"
	  "prof_stats|prof_sys_thread_name|hpa)",
	  HC_T_BOOL, C_R },
	{ "opt.(metadata_thp|dss|percpu_arena|stats_print_opts|stats_interval_opts|junk|thp|"
	  "prof_prefix|zero_realloc|prof_time_resolution)",
	  HC_T_STRING, C_R },
	{ "opt.narenas", HC_T_UNSIGNED, C_R },
	{ "opt.(oversize_threshold|max_background_threads|lg_extent_max_active_fit|tcache_max|"
	  "lg_tcache_max|lg_prof_sample|hpa_slab_max_alloc)",
	  HC_T_SIZE, C_R },
	{ "opt.(dirty_decay_ms|muzzy_decay_ms|lg_prof_interval|prof_recent_alloc_max|"
	  "mutex_max_spin)",
	  HC_T_SSIZE, C_R },
	{ "opt.stats_interval", HC_T_I64, C_R },
	{ "thread.arena", HC_T_UNSIGNED, C_RW },
	{ "thread.(allocated|deallocated)", HC_T_U64, C_R },
	{ "thread.(allocatedp|deallocatedp)", HC_T_U64, C_PTR },
	{ "thread.peak.read", HC_T_U64, C_R },
	{ "thread.peak.reset", HC_T_VOID, C_VOID },
	{ "thread.tcache.enabled", HC_T_BOOL, C_RW },
	{ "thread.tcache.flush", HC_T_VOID, C_VOID },
	{ "thread.prof.name", HC_T_STRING, C_RXW },
	{ "thread.prof.active", HC_T_BOOL, C_RW },
	{ "thread.idle", HC_T_VOID, C_VOID },
	{ "tcache.create", HC_T_UNSIGNED, C_MAKE },
	{ "tcache.(flush|destroy)", HC_T_UNSIGNED, C_W },
	{ "arena.#.initialized", HC_T_BOOL, C_R },
	{ "arena.#.(decay|purge|reset|destroy)", HC_T_VOID, C_VOID },
	{ "arena.#.dss", HC_T_STRING, C_RW },
	{ "arena.#.(dirty_decay_ms|muzzy_decay_ms)", HC_T_SSIZE, C_RW },
	{ "arena.#.retain_grow_limit", HC_T_SIZE, C_RW },
	{ "arena.#.extent_hooks", HC_T_U64, C_PTR },
	{ "arenas.narenas", HC_T_UNSIGNED, C_R },
	{ "arenas.(dirty_decay_ms|muzzy_decay_ms)", HC_T_SSIZE, C_RW },
	{ "arenas.(quantum|page|tcache_max)", HC_T_SIZE, C_R },
	{ "arenas.(nbins|nhbins|nlextents)", HC_T_UNSIGNED, C_R },
	{ "arenas.bin.#.(size|slab_size)", HC_T_SIZE, C_R },
	{ "arenas.bin.#.(nregs|nshards)", HC_T_U32, C_R },
	{ "arenas.lextent.#.size", HC_T_SIZE, C_R },
	{ "arenas.create", HC_T_UNSIGNED, C_MAKE },
	{ "arenas.lookup", HC_T_UNSIGNED, C_PTR },
	{ "prof.(thread_active_init|active|gdump)", HC_T_BOOL, C_RW },
	{ "prof.(dump|prefix)", HC_T_STRING, C_W },
	{ "prof.reset", HC_T_SIZE, C_W },
	{ "prof.lg_sample", HC_T_SIZE, C_R },
	{ "prof.interval", HC_T_U64, C_R },
	{ "stats.(allocated|active|metadata|metadata_thp|resident|mapped|retained|zero_reallocs)",
	  HC_T_SIZE, C_R },
	{ "stats.background_thread.num_threads", HC_T_SIZE, C_R },
	{ "stats.background_thread.(num_runs|run_interval)", HC_T_U64, C_R },
	{ "stats.mutexes.reset", HC_T_VOID, C_VOID },
	{ GLOBAL_MUTEXES MUTEX_U64, HC_T_U64, C_R },
	{ GLOBAL_MUTEXES MUTEX_U32, HC_T_U32, C_R },
	{ "stats.arenas.#.dss", HC_T_STRING, C_R },
	{ "stats.arenas.#.(dirty_decay_ms|muzzy_decay_ms)", HC_T_SSIZE, C_R },
	{ "stats.arenas.#.nthreads", HC_T_UNSIGNED, C_R },
	{ "stats.arenas.#.uptime", HC_T_U64, C_R },
	{ "stats.arenas.#.(pactive|pdirty|pmuzzy|mapped|retained|extent_avail|base|internal|"
	  "metadata_thp|tcache_bytes|tcache_stashed_bytes|resident|abandoned_vm|hpa_sec_bytes)",
	  HC_T_SIZE, C_R },
	{ "stats.arenas.#.(dirty_npurge|dirty_nmadvise|dirty_purged|muzzy_npurge|muzzy_nmadvise|"
	  "muzzy_purged)",
	  HC_T_U64, C_R },
	{ "stats.arenas.#.(small|large).allocated", HC_T_SIZE, C_R },
	{ "stats.arenas.#.(small|large).(nmalloc|ndalloc|nrequests|nfills|nflushes)", HC_T_U64,
	  C_R },
	{ "stats.arenas.#.bins.#.(nmalloc|ndalloc|nrequests|nfills|nflushes|nslabs|nreslabs)",
	  HC_T_U64, C_R },
	{ "stats.arenas.#.bins.#.(curregs|curslabs|nonfull_slabs)", HC_T_SIZE, C_R },
	{ "stats.arenas.#.bins.#.mutex" MUTEX_U64, HC_T_U64, C_R },
	{ "stats.arenas.#.bins.#.mutex" MUTEX_U32, HC_T_U32, C_R },
	{ "stats.arenas.#.lextents.#.(nmalloc|ndalloc|nrequests)", HC_T_U64, C_R },
	{ "stats.arenas.#.lextents.#.curlextents", HC_T_SIZE, C_R },
	{ "stats.arenas.#.extents.#.(ndirty|nmuzzy|nretained|dirty_bytes|muzzy_bytes|"
	  "retained_bytes)",
	  HC_T_SIZE, C_R },
	{ ARENA_MUTEXES MUTEX_U64, HC_T_U64, C_R },
	{ ARENA_MUTEXES MUTEX_U32, HC_T_U32, C_R },
};
#define NDEFS (sizeof(ctl_defs) / sizeof(ctl_defs[0]))

/* Length of the pattern component at p: up to '.' outside parentheses. */
static size_t pat_comp_len(const char *p)
{
	size_t n = 0;

	if (*p == '(')
		return strcspn(p, ")") + (p[strcspn(p, ")")] ? 1 : 0);
	while (p[n] && p[n] != '.')
		n++;
	return n;
}

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool comp_match(const char *pat, size_t pl, const char *s, size_t sl)
{
	if (pl == 1 && *pat == '#')
		return all_digits(s, sl);
	if (*pat == '(') {
		/* (a|b|c): one of the alternatives */
		const char *p = pat + 1, *end = pat + pl - 1;

		while (p < end) {
			size_t al = strcspn(p, "|)");

			if (al == sl && !memcmp(p, s, sl))
				return true;
			p += al + 1;
		}
		return false;
	}
	return pl == sl && !memcmp(pat, s, pl);
}

/*
 * Component-by-component match of name against pat.  prefix: name may stop
 * short of pat (a group such as "arenas.bin.0"); returns the number of
 * components matched, or -1.
 */
static int pat_match(const char *pat, const char *name, bool prefix)
{
	int n = 0;

	for (;;) {
		size_t pl = pat_comp_len(pat), nl = strcspn(name, ".");

		if (!comp_match(pat, pl, name, nl))
			return -1;
		n++;
		pat += pl;
		name += nl;
		if (!*name)
			return !*pat || (prefix && *pat) ? n : -1;
		if (!*pat)
			return -1;
		pat++;
		name++;
	}
}

/* Dotted-name match, component by component.  Exposed for unit tests. */
bool je_name_match(const char *pat, const char *name);
bool je_name_match(const char *pat, const char *name)
{
	return pat_match(pat, name, false) >= 0;
}

static const struct ctl_def *ctl_def_of(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (pat_match(ctl_defs[i].pat, name, false) >= 0)
			return &ctl_defs[i];
	return NULL;
}

/* Is name a group of names ("arenas", "stats.arenas.0"), not a control? */
static bool ctl_is_group(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (pat_match(ctl_defs[i].pat, name, true) >= 0 &&
		    pat_match(ctl_defs[i].pat, name, false) < 0)
			return true;
	return false;
}

static int ctl_type_of(const char *name, enum hc_type *type)
{
	const struct ctl_def *d = ctl_def_of(name);

	if (!d)
		return -1;
	*type = d->type;
	return 0;
}

static size_t type_size(enum hc_type type)
{
	switch (type) {
	case HC_T_VOID:
		return 0;
	case HC_T_BOOL:
		return 1;
	case HC_T_UNSIGNED:
	case HC_T_U32:
	case HC_T_INT:
		return 4;
	default:
		return 8; /* size_t, ssize_t, 64-bit ints, pointers on LP64 */
	}
}

/* The bytes mallctl takes for v, and back: type_size() of them (strings are pointers). */
static void value_bytes(const struct hc_value *v, uint8_t *buf, size_t *len)
{
	*len = type_size(v->type);
	memset(buf, 0, 8);
	if (v->type == HC_T_BOOL) {
		buf[0] = v->b;
	} else if (*len == 4) {
		uint32_t u = (uint32_t)v->u;

		memcpy(buf, &u, 4);
	} else {
		memcpy(buf, &v->u, 8);
	}
}

static void value_from_bytes(enum hc_type type, const uint8_t *buf, struct hc_value *v)
{
	v->type = type;
	if (type == HC_T_BOOL) {
		v->b = buf[0] != 0;
	} else if (type_size(type) == 4) {
		uint32_t u;

		memcpy(&u, buf, 4);
		if (type == HC_T_INT)
			v->i = (int32_t)u;
		else
			v->u = u;
	} else {
		memcpy(&v->u, buf, 8);
	}
}

/* ---- remote mallctl -------------------------------------------------------------- */

static const char *mallctl_strerror(int rc)
{
	switch (rc) {
	case ENOENT:
		return "no such name (ENOENT)";
	case EINVAL:
		return "invalid value or size (EINVAL)";
	case EPERM:
		return "not writable (EPERM)";
	case EAGAIN:
		return "temporarily unavailable (EAGAIN)";
	case EFAULT:
		return "failed inside the allocator (EFAULT)";
	case ENOMEM:
		return "out of memory in the target (ENOMEM)";
	default:
		return strerror(rc);
	}
}

/*
 * One mallctl call inside an open session.  Returns 0 and *rc (mallctl's
 * own result), or -1 if the call itself could not be made.
 */
static int je_call(struct hc_target *t, const char *name, void *old, size_t *oldlen,
		   const void *newv, size_t newlen, int *rc, struct hc_err *err)
{
	struct je *je = je_of(t);
	uint64_t a[5] = { 0 }, ret;
	uint64_t len = oldlen ? *oldlen : 0;

	/* Each call's scratch is given back after it: a listing makes thousands. */
	size_t mark = call_scratch_mark(t);
	int r = -1;

	a[0] = call_strdup(t, name, err);
	if (!a[0])
		goto out;
	if (old) {
		a[1] = call_scratch(t, len, err);
		a[2] = call_scratch(t, sizeof(len), err);
		if (!a[1] || !a[2] || call_write(t, a[2], &len, sizeof(len), err) < 0) {
			err_set(err, HC_E_ARGS, 0, "value of %s too large", name);
			goto out;
		}
	}
	if (newv) {
		a[3] = call_scratch(t, newlen, err);
		a[4] = newlen;
		if (!a[3] || call_write(t, a[3], newv, newlen, err) < 0) {
			err_set(err, HC_E_ARGS, 0, "value for %s too large", name);
			goto out;
		}
	}
	if (call_fn(t, je->ctl, a, 5, &ret, NULL, NULL, err) < 0) {
		err_context(err, "%smallctl(\"%s\")", je->prefix, name);
		goto out;
	}
	*rc = (int)ret;
	pr_debug("%smallctl(\"%s\") = %d", je->prefix, name, *rc);
	if (*rc == 0 && old) {
		if (call_read(t, a[2], &len, sizeof(len), err) < 0)
			goto out;
		if (len > *oldlen)
			len = *oldlen;
		*oldlen = len;
		if (call_read(t, a[1], old, len, err) < 0)
			goto out;
	}
	r = 0;
out:
	call_scratch_release(t, mark);
	return r;
}

static int ctl_fail(struct hc_target *t, const char *name, int rc, struct hc_err *err)
{
	if (rc == ENOENT)
		return err_set(err, HC_E_NO_CTL, rc, "jemalloc in pid %d has no control named '%s'",
			       t->img.pid, name);
	return err_set(err, HC_E_REMOTE, rc, "mallctl(\"%s\") in pid %d: %s", name, t->img.pid,
		       mallctl_strerror(rc));
}

/* Read a typed value inside a session. */
static int je_read(struct hc_target *t, const char *name, enum hc_type type, struct hc_value *v,
		   int *rcp, struct hc_err *err)
{
	uint8_t buf[8] = { 0 };
	size_t len = type_size(type);
	int rc;

	memset(v, 0, sizeof(*v));
	v->type = type;
	if (type == HC_T_VOID)
		return err_set(err, HC_E_TYPE, 0, "'%s' is an action, not a value: use set", name);
	if (je_call(t, name, buf, &len, NULL, 0, &rc, err) < 0)
		return -1;
	if (rcp)
		*rcp = rc;
	if (rc)
		return rcp ? 0 : ctl_fail(t, name, rc, err);
	if (type != HC_T_STRING) {
		value_from_bytes(type, buf, v);
		return 0;
	}
	{
		uint64_t p;

		/* a const char *: the string is the target's */
		memcpy(&p, buf, 8);
		if (!p)
			snprintf(v->str, sizeof(v->str), "(null)");
		else if (call_read_str(t, p, v->str, sizeof(v->str), err) < 0)
			return -1;
	}
	return 0;
}

static int je_read_u64(struct hc_target *t, const char *name, uint64_t *out, struct hc_err *err)
{
	struct hc_value v;
	enum hc_type type = HC_T_SIZE;

	ctl_type_of(name, &type);
	if (je_read(t, name, type, &v, NULL, err) < 0)
		return -1;
	*out = v.u;
	return 0;
}

/* ---- detection ------------------------------------------------------------------- */

static int find_in(struct hc_target *t, struct obj *o, struct je *je)
{
	static const char suffix[] = "mallctl";
	const size_t sl = sizeof(suffix) - 1;

	for (size_t i = 0; i < o->nsyms; i++) {
		const char *n = o->syms[i].name;
		size_t nl = strlen(n);
		char want[96];
		const struct sym *sp;

		if (nl < sl || nl - sl >= sizeof(je->prefix) || strcmp(n + nl - sl, suffix))
			continue;
		snprintf(want, sizeof(want), "%.*smalloc_stats_print", (int)(nl - sl), n);
		sp = sym_by_name(o, want);
		if (!sp)
			continue;
		memset(je, 0, sizeof(*je));
		je->obj = o;
		snprintf(je->prefix, sizeof(je->prefix), "%.*s", (int)(nl - sl), n);
		je->ctl = o->syms[i].raddr;
		je->stats_print = sp->raddr;
		(void)t;
		return 1;
	}
	return 0;
}

static void code_range(struct je *je)
{
	struct obj *o = je->obj;

	/* A DSO of its own: all of its code is the allocator. */
	if (!o->is_exe) {
		je->lo = o->text_lo;
		je->hi = o->text_hi;
	}
}

static bool je_named(const struct je *je, const char *name)
{
	return (je->prefix[0] && !strncmp(name, je->prefix, strlen(je->prefix))) ||
	       !strncmp(name, "je_", 3);
}

static int je_detect(struct hc_target *t, struct hc_err *err)
{
	struct je found[8], *best = NULL;
	unsigned n = 0;
	size_t used = 0;

	/*
	 * The likely homes first: the executable (jemalloc linked in) and
	 * objects named like jemalloc; only if they have nothing, every object.
	 * Symbol tables before separate debug files, which cost milliseconds.
	 */
	for (int pass = 0; pass < 3 && !n; pass++) {
		bool debug = pass == 2;

		for (size_t i = 0; i < t->img.nobjs && n < 8; i++) {
			struct obj *o = &t->img.objs[i];
			bool likely = o->is_exe || strstr(o->path, "jemalloc");

			if (!o->base || o->is_vdso || (pass == 0 && !likely))
				continue;
			if (sym_load(&t->img, o, debug, err) < 0) {
				/* an unreadable object is not fatal: note it and go on */
				pr_debug("skipping %s: %s", o->path, err->msg);
				memset(err, 0, sizeof(*err));
				continue;
			}
			if (find_in(t, o, &found[n]))
				n++;
		}
	}
	if (!n)
		return 0;
	/*
	 * Prefer the copy linked into the executable (it is what the program
	 * calls), then the first in the dynamic linker's search order
	 * (preloads before DT_NEEDED), which is what malloc binds to.
	 */
	for (unsigned i = 0; i < n; i++)
		if (!best || found[i].obj->is_exe ||
		    (!best->obj->is_exe && found[i].obj->link_idx < best->obj->link_idx))
			best = &found[i];
	t->alloc_priv = malloc(sizeof(*best));
	if (!t->alloc_priv)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memcpy(t->alloc_priv, best, sizeof(*best));
	best = t->alloc_priv;
	code_range(best);
	t->where.allocator = "jemalloc";
	t->where.object = best->obj->path;
	t->where.prefix = best->prefix;
	t->where.symtab = best->obj->symsrc;
	t->where.ctl_raddr = best->ctl;
	t->where.stats_raddr = best->stats_print;
	t->where.ncandidates = n;
	t->where_others[0] = 0;
	for (unsigned i = 0; i < n; i++) {
		if (found[i].obj == best->obj && !strcmp(found[i].prefix, best->prefix))
			continue;
		used += (size_t)snprintf(t->where_others + used, sizeof(t->where_others) - used,
					 "%s%s (prefix '%s')", used ? ", " : "", found[i].obj->path,
					 found[i].prefix);
		if (used >= sizeof(t->where_others))
			break;
	}
	t->where.others = t->where_others;
	pr_info("jemalloc: %smallctl at 0x%llx in %s (%s)", best->prefix,
		(unsigned long long)best->ctl, best->obj->path, best->obj->symsrc);
	return 1;
}

static void je_release(struct hc_target *t)
{
	free(t->alloc_priv);
	t->alloc_priv = NULL;
}

static bool je_contains(struct hc_target *t, uint64_t raddr)
{
	const struct je *je = je_of(t);
	const struct sym *sy, *below, *above;
	struct obj *o;

	if (!je)
		return false;
	if (je->hi)
		return raddr >= je->lo && raddr < je->hi;
	/*
	 * Linked into the executable: a function in jemalloc's namespace (the
	 * prefix, or je_ for its private names), or a static function that
	 * sits between two of them, where the archive's members were laid out.
	 */
	sy = sym_at(&t->img, raddr, &o);
	if (!sy || o != je->obj)
		return false;
	if (je_named(je, sy->name))
		return true;
	if (sy->global)
		return false;
	below = sym_global_near(o, sy, -1);
	above = sym_global_near(o, sy, 1);
	return below && above && je_named(je, below->name) && je_named(je, above->name);
}

/* ---- operations -------------------------------------------------------------------- */

static void conf_hint(struct hc_target *t, char *hint, size_t len)
{
	char var[48];
	size_t i;
	const char *p = je_of(t)->prefix;

	for (i = 0; p[i] && i < sizeof(var) - 16; i++)
		var[i] = (char)toupper((unsigned char)p[i]);
	snprintf(var + i, sizeof(var) - i, "MALLOC_CONF");
	snprintf(hint, len,
		 "jemalloc reads this only at start: restart with %s=prof:true,prof_active:false "
		 "(no cost while inactive), then use 'heapctl prof on'",
		 var);
}

/* opt.prof must be true; config.prof must exist.  Inside a session. */
static int need_prof(struct hc_target *t, bool *active, struct hc_err *err)
{
	struct hc_value v;
	char hint[256];
	int rc;

	if (je_read(t, "opt.prof", HC_T_BOOL, &v, &rc, err) < 0)
		return -1;
	if (rc == ENOENT)
		return err_sethint(err, HC_E_PROF_OFF, 0,
				   "use a jemalloc built with --enable-prof (Debian's amd64 and i386 packages are)",
				   "jemalloc in pid %d was built without profiling support", t->img.pid);
	if (rc)
		return ctl_fail(t, "opt.prof", rc, err);
	if (!v.b) {
		conf_hint(t, hint, sizeof(hint));
		return err_sethint(err, HC_E_PROF_OFF, 0, hint,
				   "heap profiling was not enabled when pid %d started (opt.prof is false)",
				   t->img.pid);
	}
	if (active) {
		if (je_read(t, "prof.active", HC_T_BOOL, &v, NULL, err) < 0)
			return -1;
		*active = v.b;
	}
	return 0;
}

static int je_prof_get(struct hc_target *t, bool *enabled, bool *active, struct hc_err *err)
{
	struct hc_value v;
	int rc;

	*enabled = *active = false;
	if (je_read(t, "opt.prof", HC_T_BOOL, &v, &rc, err) == 0 && rc == 0) {
		*enabled = v.b;
		if (v.b && je_read(t, "prof.active", HC_T_BOOL, &v, NULL, err) == 0)
			*active = v.b;
	}
	return err_isset(err) ? -1 : 0;
}

static int je_prof_set(struct hc_target *t, bool active, bool *was, struct hc_err *err)
{
	uint8_t nv = active, old = 0;
	size_t oldlen = sizeof(old);
	int rc = 0;

	/*
	 * One mallctl reads the old value and writes the new one.  Where the
	 * profiler cannot run (opt.prof false, or no config.prof) it fails with
	 * ENOENT, and only then does a second one find out which.
	 */
	if (je_call(t, "prof.active", &old, &oldlen, &nv, 1, &rc, err) == 0 && rc &&
	    (rc != ENOENT || need_prof(t, NULL, err) == 0))
		ctl_fail(t, "prof.active", rc, err);
	*was = !rc && old != 0;
	return err_isset(err) ? -1 : 0;
}

/* prof.reset: the samples go, prof.active and the interval stay. */
static int je_prof_reset(struct hc_target *t, struct hc_err *err)
{
	int rc = 0;

	if (need_prof(t, NULL, err) == 0 && je_call(t, "prof.reset", NULL, NULL, NULL, 0, &rc, err) == 0 &&
	    rc)
		ctl_fail(t, "prof.reset", rc, err);
	return err_isset(err) ? -1 : 0;
}

/* A heap profile is text of a size that follows the heap; refuse anything absurd. */
#define MAX_PROFILE (4ull << 30)

static int je_prof_dump(struct hc_target *t, const char *out, bool *active, struct hc_err *err)
{
	char path[PATH_MAX + 32];
	struct troot_dir dir = TROOT_DIR_INIT;
	uint64_t p;
	int rc = 0;

	/*
	 * jemalloc writes the file itself, as the target, in the target's
	 * mount namespace: into a fresh 0700 directory of the target's own,
	 * with an unpredictable name, so no one can plant a file or link there.
	 */
	if (troot_mkdir(t->img.pid, &dir, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/prof.heap", dir.path);
	if (need_prof(t, active, err) == 0 && (p = call_strdup(t, path, err)) &&
	    je_call(t, "prof.dump", NULL, NULL, &p, sizeof(p), &rc, err) == 0 && rc)
		ctl_fail(t, "prof.dump", rc, err);
	pr_debug("prof.dump to %s: %d", path, rc);
	call_done(t, err);
	if (!err_isset(err))
		troot_fetch(&dir, "prof.heap", "heap_v2/|heap profile:", out, MAX_PROFILE, err);
	troot_remove(&dir);
	return err_isset(err) ? -1 : 0;
}

static int je_stats(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "stats.allocated", offsetof(struct hc_stats, allocated) },
		{ "stats.active", offsetof(struct hc_stats, active) },
		{ "stats.metadata", offsetof(struct hc_stats, metadata) },
		{ "stats.resident", offsetof(struct hc_stats, resident) },
		{ "stats.mapped", offsetof(struct hc_stats, mapped) },
		{ "stats.retained", offsetof(struct hc_stats, retained) },
	};
	uint64_t epoch = 1, page = 0, pdirty = 0, pmuzzy = 0, narenas = 0;
	struct hc_value v;
	int rc;

	snprintf(st->allocator, sizeof(st->allocator), "jemalloc");
	/* Stats are a snapshot refreshed by writing epoch. */
	if (je_call(t, "epoch", NULL, NULL, &epoch, sizeof(epoch), &rc, err) < 0)
		goto end;
	if (rc) {
		ctl_fail(t, "epoch", rc, err);
		goto end;
	}
	if (je_read(t, "version", HC_T_STRING, &v, NULL, err) < 0)
		goto end;
	snprintf(st->version, sizeof(st->version), "%.63s", v.str);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (je_read(t, fields[i].name, HC_T_SIZE, &v, &rc, err) < 0)
			goto end;
		if (rc == ENOENT) {
			err_sethint(err, HC_E_UNSUPPORTED, 0, "use a jemalloc built with --enable-stats",
				    "jemalloc in pid %d was built without statistics", t->img.pid);
			goto end;
		}
		memcpy((char *)st + fields[i].off, &v.u, sizeof(v.u));
	}
	if (je_read_u64(t, "arenas.page", &page, err) < 0 ||
	    je_read_u64(t, "stats.arenas.4096.pdirty", &pdirty, err) < 0 ||
	    je_read_u64(t, "stats.arenas.4096.pmuzzy", &pmuzzy, err) < 0 ||
	    je_read_u64(t, "arenas.narenas", &narenas, err) < 0)
		goto end;
	st->dirty = pdirty * page;
	st->muzzy = pmuzzy * page;
	st->narenas = (unsigned)narenas;
	/* older jemallocs have no tcache_bytes: the figure stays 0 */
	if (je_read(t, "stats.arenas.4096.tcache_bytes", HC_T_SIZE, &v, &rc, err) < 0)
		goto end;
	if (!rc)
		st->tcache = v.u;
end:
	return err_isset(err) ? -1 : 0;
}

static int je_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	struct print_ctx pc = { sink, arg };
	uint64_t a[3], ret;

	a[0] = call_cb_raddr(t, err);
	a[1] = 0;
	a[2] = opts ? call_strdup(t, opts, err) : 0;
	if (!opts || a[2])
		call_fn(t, je_of(t)->stats_print, a, 3, &ret, je_print_cb, &pc, err);
	return err_isset(err) ? -1 : 0;
}

static int je_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	char name[64];
	uint64_t narenas = 0;
	int rc;

	if (arena >= 0) {
		if (je_read_u64(t, "arenas.narenas", &narenas, err) < 0)
			goto end;
		if ((uint64_t)arena >= narenas) {
			err_set(err, HC_E_USAGE, 0, "arena %d does not exist: pid %d has %llu arenas (0..%llu)",
				arena, t->img.pid, (unsigned long long)narenas,
				(unsigned long long)narenas - 1);
			goto end;
		}
	}
	snprintf(name, sizeof(name), "arena.%d.purge", arena >= 0 ? arena : MALLCTL_ARENAS_ALL);
	if (je_call(t, name, NULL, NULL, NULL, 0, &rc, err) == 0 && rc)
		ctl_fail(t, name, rc, err);
end:
	return err_isset(err) ? -1 : 0;
}

/* ---- get / set / list ------------------------------------------------------------- */

static int lookup_def(struct hc_target *t, const char *name, const struct ctl_def **d,
		      struct hc_err *err)
{
	char hint[256];

	if (!name[0] || strlen(name) > 200)
		return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl name", name);
	*d = ctl_def_of(name);
	if (*d && (*d)->acc == C_PTR)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "it exchanges pointers into the process; use it from the program",
				   "heapctl does not drive '%s'", name);
	if (*d)
		return 0;
	if (ctl_is_group(name)) {
		snprintf(hint, sizeof(hint), "list what it holds: heapctl get -p %d %s.", t->img.pid,
			 name);
		return err_sethint(err, HC_E_NO_CTL, 0, hint,
				   "'%s' is a group of controls, not a control", name);
	}
	/* the deepest group the name starts with says where to look */
	{
		char grp[208];
		size_t gl = 0;

		snprintf(grp, sizeof(grp), "%s", name);
		for (char *dot = strchr(grp, '.'); dot; dot = strchr(dot + 1, '.')) {
			*dot = 0;
			if (ctl_is_group(grp))
				gl = strlen(grp);
			*dot = '.';
		}
		if (gl)
			snprintf(hint, sizeof(hint), "see the names there: heapctl get -p %d %.*s.",
				 t->img.pid, (int)gl, name);
		else
			snprintf(hint, sizeof(hint),
				 "names start with version epoch background_thread config. opt. "
				 "thread. tcache. arena.<i>. arenas. prof. stats.");
	}
	return err_sethint(err, HC_E_NO_CTL, 0, hint, "unknown mallctl name '%s'", name);
}

/* Stats are a snapshot that a write to epoch refreshes.  Inside a session. */
static int je_refresh(struct hc_target *t, struct hc_err *err)
{
	uint64_t epoch = 1;
	int rc;

	if (je_call(t, "epoch", NULL, NULL, &epoch, sizeof(epoch), &rc, err) < 0)
		return -1;
	return rc ? ctl_fail(t, "epoch", rc, err) : 0;
}

static bool is_stats(const char *name)
{
	return !strncmp(name, "stats.", 6) || !strcmp(name, "stats");
}

static int je_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	const struct ctl_def *d;
	char hint[256];

	if (lookup_def(t, name, &d, err) < 0)
		return -1;
	switch (d->acc) {
	case C_VOID:
		snprintf(hint, sizeof(hint), "run it with: heapctl set -p %d %s", t->img.pid, name);
		return err_sethint(err, HC_E_TYPE, 0, hint, "'%s' is an action, not a value", name);
	case C_W:
		snprintf(hint, sizeof(hint), "write it with: heapctl set -p %d %s VALUE", t->img.pid,
			 name);
		return err_sethint(err, HC_E_TYPE, 0, hint, "'%s' is write-only (%s)", name,
				   hc_type_name(d->type));
	case C_MAKE:
		snprintf(hint, sizeof(hint), "to create one, run: heapctl set -p %d %s", t->img.pid,
			 name);
		return err_sethint(err, HC_E_TYPE, 0, hint,
				   "reading '%s' creates a new %s each time", name,
				   name[0] == 'a' ? "arena" : "tcache");
	default:
		break;
	}
	/* In the same borrow: no other thread can see a stale snapshot in between. */
	if (!is_stats(name) || je_refresh(t, err) == 0)
		je_read(t, name, d->type, v, NULL, err);
	return err_isset(err) ? -1 : 0;
}

static int set_refused(struct hc_target *t, const char *name, int rc, struct hc_err *err)
{
	char hint[256];

	if (rc == EFAULT || rc == EINVAL)
		return err_sethint(err, HC_E_REMOTE, rc,
				   "jemalloc refused the value: see its range in jemalloc(3) "
				   "(decay times are -1, or 0 and up)",
				   "mallctl(\"%s\") in pid %d: %s", name, t->img.pid, mallctl_strerror(rc));
	if (rc != EPERM)
		return ctl_fail(t, name, rc, err);
	if (!strncmp(name, "opt.", 4))
		snprintf(hint, sizeof(hint),
			 "opt.* are fixed at start: restart with MALLOC_CONF=%s:VALUE", name + 4);
	else
		snprintf(hint, sizeof(hint), "jemalloc(3) marks it read-only (r-)");
	return err_sethint(err, HC_E_REMOTE, rc, hint, "'%s' cannot be written in pid %d", name,
			   t->img.pid);
}

static int je_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_value *now, struct hc_err *err)
{
	const struct ctl_def *d;
	struct hc_value nv;
	uint8_t nb[8], ob[8] = { 0 };
	size_t len, olen;
	int rc = 0;

	if (lookup_def(t, name, &d, err) < 0)
		return -1;
	if (d->acc == C_R)
		return set_refused(t, name, EPERM, err);
	if ((d->acc == C_VOID || d->acc == C_MAKE) && value)
		return err_sethint(err, HC_E_TYPE, 0, "leave out VALUE",
				   "'%s' is an action and takes no value", name);
	if (d->acc != C_VOID && d->acc != C_MAKE &&
	    hc_value_parse(name, d->type, value, &nv, err) < 0)
		return -1;
	if (d->acc == C_VOID) {
		if (je_call(t, name, NULL, NULL, NULL, 0, &rc, err) < 0)
			goto end;
	} else if (d->acc == C_MAKE) {
		/* the read is the action: its value is what was made */
		if (je_read(t, name, d->type, now, &rc, err) < 0)
			goto end;
	} else if (d->type == HC_T_STRING) {
		uint64_t p;

		/* the old string first: mallctl cannot hand back a string it replaces */
		if ((d->acc == C_RXW || d->acc == C_RW) &&
		    je_read(t, name, d->type, old, &rc, err) < 0)
			goto end;
		if (rc)
			goto end;
		p = call_strdup(t, nv.str, err);
		if (!p || je_call(t, name, NULL, NULL, &p, sizeof(p), &rc, err) < 0)
			goto end;
	} else {
		value_bytes(&nv, nb, &len);
		olen = len;
		/* read-write: the old value comes back from the very write that replaced it */
		if (je_call(t, name, d->acc == C_RW ? ob : NULL, d->acc == C_RW ? &olen : NULL, nb,
			    len, &rc, err) < 0)
			goto end;
		if (rc == 0 && d->acc == C_RW)
			value_from_bytes(d->type, ob, old);
	}
	if (rc)
		goto end;
	/* What is stored now, read back in the same borrow. */
	if (d->acc == C_RW || d->acc == C_RXW) {
		if (je_read(t, name, d->type, now, &rc, err) < 0)
			goto end;
		if (rc) {
			/* the write stands: say that only the read-back failed */
			memset(now, 0, sizeof(*now));
			snprintf(now->note, sizeof(now->note), "written, but reading it back failed: %s",
				 mallctl_strerror(rc));
			rc = 0;
		}
	} else if (!strcmp(name, "prof.reset")) {
		/* prof.reset's value is the new lg_sample, readable there */
		if (je_read(t, "prof.lg_sample", HC_T_SIZE, now, &rc, err) < 0)
			goto end;
	} else if (d->acc == C_W) {
		*now = nv;
		snprintf(now->note, sizeof(now->note),
			 "'%s' is write-only: this is the value written, it cannot be read back",
			 name);
	}
end:
	if (rc && !err_isset(err))
		set_refused(t, name, rc, err);
	return err_isset(err) ? -1 : 0;
}

/* ---- listing a prefix ------------------------------------------------------------------ */

/* A listing borrows one thread for all its reads: ~0.1-0.3 ms each. */
#define LIST_MAX 4096

struct lister {
	struct hc_target *t;
	struct hc_ctl_entry *ents;
	size_t n, cap;
	bool ranges_read, init_read, counting;
	bool stats, fresh; /* a listing with stats.* names; epoch was written */
	size_t counted;
	uint64_t narenas, nbins, nlextents, npsizes;
	bool arena_init[1024];
	int failed;
	struct hc_err *err;
};

/* How many extents buckets (page size classes): the first index that is ENOENT. */
static int count_psizes(struct lister *l, const char *arena, uint64_t *out)
{
	uint64_t lo = 0, hi = 1024;
	char name[96];
	struct hc_value v;
	int rc;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		snprintf(name, sizeof(name), "stats.arenas.%s.extents.%llu.ndirty", arena,
			 (unsigned long long)mid);
		if (je_read(l->t, name, HC_T_SIZE, &v, &rc, l->err) < 0)
			return -1;
		if (rc)
			hi = mid;
		else
			lo = mid + 1;
	}
	*out = lo;
	return 0;
}

/*
 * The stats are a snapshot, and so is ctl's idea of which arenas exist: a
 * listing with stats.* names writes epoch once, before the first read that
 * depends on it (arena indices, extents buckets, or the names themselves).
 */
static int refresh(struct lister *l)
{
	if (!l->stats || l->fresh)
		return 0;
	l->fresh = true;
	return je_refresh(l->t, l->err);
}

static int read_ranges(struct lister *l)
{
	if (l->ranges_read)
		return 0;
	l->ranges_read = true;
	if (je_read_u64(l->t, "arenas.narenas", &l->narenas, l->err) < 0 ||
	    je_read_u64(l->t, "arenas.nbins", &l->nbins, l->err) < 0 ||
	    je_read_u64(l->t, "arenas.nlextents", &l->nlextents, l->err) < 0)
		return -1;
	return 0;
}

/*
 * Which arenas were ever used (one never used has no stats): read once, and
 * only by a listing that expands arena indices.
 */
static int read_arena_init(struct lister *l)
{
	char name[64];
	struct hc_value v;
	int rc;

	if (l->init_read)
		return 0;
	l->init_read = true;
	if (refresh(l) < 0)
		return -1;
	for (uint64_t i = 0; i < l->narenas && i < 1024; i++) {
		snprintf(name, sizeof(name), "arena.%llu.initialized", (unsigned long long)i);
		if (je_read(l->t, name, HC_T_BOOL, &v, &rc, l->err) < 0)
			return -1;
		l->arena_init[i] = rc == 0 && v.b;
	}
	return 0;
}

/*
 * Emit every name of pattern pat under the components fixed[] (NULL: not
 * fixed by the prefix).  at: the name built so far.
 */
static int expand(struct lister *l, const struct ctl_def *d, const char *pat, char *at,
		  size_t used, const char *const *fixed, unsigned ci, const char *prev)
{
	size_t pl = pat_comp_len(pat);
	char comp[512];
	char *name = at;
	int rc;

	if (!*pat) {
		struct hc_value v;

		if (l->counting) {
			l->counted++;
			return 0;
		}
		name[used - 1] = 0; /* the trailing '.' */
		if (je_read(l->t, name, d->type, &v, &rc, l->err) < 0)
			return -1;
		name[used - 1] = '.';
		if (rc) {
			pr_debug("list: %.*s: %s", (int)used - 1, name, mallctl_strerror(rc));
			return 0;
		}
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct hc_ctl_entry *e = realloc(l->ents, cap * sizeof(*e));

			if (!e)
				return err_set(l->err, HC_E_NOMEM, ENOMEM, "out of memory");
			l->ents = e;
			l->cap = cap;
		}
		snprintf(l->ents[l->n].name, sizeof(l->ents[l->n].name), "%.*s", (int)used - 1,
			 name);
		l->ents[l->n++].v = v;
		return 0;
	}
	/* every step below appends at most 64 bytes to at[256] */
	if (used > 180)
		return err_set(l->err, HC_E_NO_CTL, 0, "mallctl name too long: %.60s...", at);
	snprintf(comp, sizeof(comp), "%.*s", (int)pl, pat);
	pat += pl;
	if (*pat == '.')
		pat++;
	if (fixed[ci]) {
		int w = snprintf(at + used, 256 - used, "%s.", fixed[ci]);

		return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, fixed[ci]);
	}
	if (comp[0] == '(') {
		const char *p = comp + 1;

		while (*p && *p != ')') {
			size_t al = strcspn(p, "|)");
			int w = snprintf(at + used, 256 - used, "%.*s.", (int)al, p);

			if (expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, NULL) < 0)
				return -1;
			p += al + (p[al] == '|');
			if (*p == ')')
				break;
		}
		return 0;
	}
	if (comp[0] == '#') {
		uint64_t count;
		bool arenas = !strcmp(prev, "arena") || !strcmp(prev, "arenas");

		if (read_ranges(l) < 0 || (arenas && read_arena_init(l) < 0))
			return -1;
		if (arenas)
			count = l->narenas;
		else if (!strcmp(prev, "bin") || !strcmp(prev, "bins"))
			count = l->nbins;
		else if (!strcmp(prev, "lextent") || !strcmp(prev, "lextents"))
			count = l->nlextents;
		else {
			/* stats.arenas.<i>.extents.<j>: the arena index is two back */
			char arena[24];
			const char *e = at + used - strlen("extents.") - 1;
			const char *b = e;

			while (b > at && b[-1] != '.')
				b--;
			snprintf(arena, sizeof(arena), "%.*s", (int)(e - b), b);
			if (!l->npsizes && (refresh(l) < 0 || count_psizes(l, arena, &l->npsizes) < 0))
				return -1;
			count = l->npsizes;
		}
		for (uint64_t i = 0; i < count; i++) {
			int w;

			if (arenas && i < 1024 && !l->arena_init[i])
				continue; /* an arena never used has no stats */
			w = snprintf(at + used, 256 - used, "%llu.", (unsigned long long)i);
			if (expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, "#") < 0)
				return -1;
		}
		/* stats.arenas.4096: every arena merged */
		if (arenas && !strcmp(prev, "arenas")) {
			int w = snprintf(at + used, 256 - used, "%d.", MALLCTL_ARENAS_ALL);

			return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, "#");
		}
		return 0;
	}
	{
		int w = snprintf(at + used, 256 - used, "%s.", comp);

		return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, comp);
	}
}

/* Is pat strictly below the group pre ("" is the root)? */
static bool under(const char *pat, const char *pre)
{
	return !*pre || (pat_match(pat, pre, true) >= 0 && pat_match(pat, pre, false) < 0);
}

static int je_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out,
		       size_t *n, char *skipped, size_t skipped_len, struct hc_err *err)
{
	struct lister *l;
	char pre[208], parts[16][64];
	const char *fixed[24];
	unsigned np = 0;
	bool any = false;
	size_t sk = 0;

	snprintf(pre, sizeof(pre), "%s", prefix);
	if (strlen(prefix) >= sizeof(pre) - 8)
		return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl prefix", prefix);
	while (*pre && pre[strlen(pre) - 1] == '.')
		pre[strlen(pre) - 1] = 0;
	for (char *p = pre, *tok; *p; p = tok) {
		tok = p + strcspn(p, ".");
		if (np == 16 || (size_t)(tok - p) >= sizeof(parts[0]))
			return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl prefix", prefix);
		snprintf(parts[np++], sizeof(parts[0]), "%.*s", (int)(tok - p), p);
		if (*tok)
			tok++;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	l->t = t;
	l->err = err;
	/* Which entries fall under the prefix, and which of them one borrow can expand. */
	for (size_t i = 0; i < NDEFS; i++) {
		const struct ctl_def *d = &ctl_defs[i];

		if (d->acc != C_R && d->acc != C_RW && d->acc != C_RXW)
			continue;
		if (!under(d->pat, pre))
			continue;
		any = true;
		if (is_stats(d->pat))
			l->stats = true;
	}
	if (!any) {
		free(l);
		if (ctl_def_of(pre))
			return err_sethint(err, HC_E_NO_CTL, 0, "drop the trailing '.'",
					   "'%s' is a control, not a group", pre);
		return err_sethint(err, HC_E_NO_CTL, 0,
				   "groups: version epoch config. opt. thread. arena.0. arenas. "
				   "prof. stats. (see jemalloc(3), MALLCTL NAMESPACE)",
				   "no mallctl names under '%s'", prefix);
	}
	/*
	 * Two walks: the first counts (reading only the index ranges), so an
	 * oversized listing is refused before thousands of reads.
	 */
	for (int pass = 0; pass < 2; pass++) {
		l->counting = pass == 0;
		if (!l->counting && refresh(l) < 0)
			goto end;
		for (size_t i = 0; i < NDEFS; i++) {
			const struct ctl_def *d = &ctl_defs[i];
			const char *p = d->pat;
			unsigned ci = 0, open = 0;
			char at[256];

			if (d->acc != C_R && d->acc != C_RW && d->acc != C_RXW)
				continue;
			if (!under(d->pat, pre))
				continue;
			memset(fixed, 0, sizeof(fixed));
			for (; *p && ci < 24; ci++) {
				size_t pl = pat_comp_len(p);

				if (ci < np)
					fixed[ci] = parts[ci];
				else if (pl == 1 && *p == '#')
					open++;
				p += pl;
				if (*p == '.')
					p++;
			}
			if (open > 1) {
				/* "stats.arenas.<i>.bins.<j>.": name the group once */
				char grp[128];
				size_t gl = 0;
				unsigned seen = 0;

				p = d->pat;
				for (ci = 0; *p && seen < 2 && gl < sizeof(grp) - 64; ci++) {
					size_t pl = pat_comp_len(p);

					if (ci < np)
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%s.",
								       parts[ci]);
					else if (pl == 1 && *p == '#')
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%s.",
								       seen++ ? "<j>" : "<i>");
					else
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%.*s.",
								       (int)(pl < 40 ? pl : 40), p);
					p += pl;
					if (*p == '.')
						p++;
				}
				if (!l->counting)
					continue;
				if (skipped_len && !strstr(skipped, grp) &&
				    sk + strlen(grp) + 2 < skipped_len)
					sk += (size_t)snprintf(skipped + sk, skipped_len - sk, "%s%s",
							       sk ? " " : "", grp);
				continue;
			}
			if (expand(l, d, d->pat, at, 0, fixed, 0, "") < 0)
				goto end;
		}
		if (l->counting && l->counted > LIST_MAX) {
			err_sethint(err, HC_E_USAGE, 0,
				    "give a longer prefix, e.g. stats.arenas.0. or arenas.bin.",
				    "'%s' holds %zu names; heapctl reads at most %d in one borrow",
				    prefix, l->counted, LIST_MAX);
			goto end;
		}
	}
end:
	call_done(t, err);
	if (err_isset(err)) {
		free(l->ents);
		free(l);
		return -1;
	}
	*out = l->ents;
	*n = l->n;
	free(l);
	return 0;
}

static int je_info(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	static const char *const keys[] = {
		"opt.narenas",	      "opt.dirty_decay_ms", "opt.muzzy_decay_ms",
		"opt.background_thread", "background_thread", "opt.tcache",
		"opt.thp",	      "opt.percpu_arena",   "opt.retain",
		"opt.metadata_thp",   "opt.lg_prof_sample", "opt.prof_prefix",
		"opt.prof_accum",     "opt.prof_final",	    "opt.prof_leak",
		"opt.lg_prof_interval", "prof.lg_sample",   "arenas.narenas",
		"arenas.page",	      "config.malloc_conf", "config.stats",
		"config.debug",
	};
	struct hc_value v;
	int rc;

	memset(info, 0, sizeof(*info));
	if (je_read(t, "version", HC_T_STRING, &v, NULL, err) < 0)
		goto end;
	snprintf(info->version, sizeof(info->version), "%.63s", v.str);
	if (je_read(t, "config.prof", HC_T_BOOL, &v, &rc, err) < 0)
		goto end;
	info->prof_built = rc == 0 && v.b;
	if (info->prof_built) {
		if (je_read(t, "opt.prof", HC_T_BOOL, &v, NULL, err) < 0)
			goto end;
		info->prof_enabled = v.b;
		if (v.b && je_read(t, "prof.active", HC_T_BOOL, &v, NULL, err) < 0)
			goto end;
		info->prof_active = info->prof_enabled && v.b;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && info->nconf < 32; i++) {
		enum hc_type type = HC_T_SIZE;
		char val[80];

		ctl_type_of(keys[i], &type);
		if (je_read(t, keys[i], type, &v, &rc, err) < 0)
			goto end;
		if (rc)
			continue; /* not in this build or version */
		hc_value_format(&v, val, sizeof(val));
		snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "%s=%s", keys[i], val);
	}
end:
	return err_isset(err) ? -1 : 0;
}

const struct alloc_ops alloc_jemalloc = {
	.name = "jemalloc",
	.detect = je_detect,
	.release = je_release,
	.contains = je_contains,
	.info = je_info,
	.prof_get = je_prof_get,
	.prof_set = je_prof_set,
	.prof_dump = je_prof_dump,
	.prof_reset = je_prof_reset,
	.stats = je_stats,
	.stats_print = je_stats_print,
	.purge = je_purge,
	.ctl_get = je_ctl_get,
	.ctl_set = je_ctl_set,
	.ctl_list = je_ctl_list,
};
