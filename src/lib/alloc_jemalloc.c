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

/* ---- the type table ------------------------------------------------------------ */

struct ctl_type {
	const char *pat; /* '#' matches a number component, '*' any component */
	enum hc_type type;
};

static const struct ctl_type ctl_types[] = {
	{ "version", HC_T_STRING },
	{ "epoch", HC_T_U64 },
	{ "background_thread", HC_T_BOOL },
	{ "max_background_threads", HC_T_SIZE },
	{ "config.malloc_conf", HC_T_STRING },
	{ "config.*", HC_T_BOOL },
	{ "opt.metadata_thp", HC_T_STRING },
	{ "opt.dss", HC_T_STRING },
	{ "opt.percpu_arena", HC_T_STRING },
	{ "opt.stats_print_opts", HC_T_STRING },
	{ "opt.stats_interval_opts", HC_T_STRING },
	{ "opt.junk", HC_T_STRING },
	{ "opt.thp", HC_T_STRING },
	{ "opt.prof_prefix", HC_T_STRING },
	{ "opt.zero_realloc", HC_T_STRING },
	{ "opt.prof_time_resolution", HC_T_STRING },
	{ "opt.narenas", HC_T_UNSIGNED },
	{ "opt.oversize_threshold", HC_T_SIZE },
	{ "opt.hpa_slab_max_alloc", HC_T_SIZE },
	{ "opt.max_background_threads", HC_T_SIZE },
	{ "opt.dirty_decay_ms", HC_T_SSIZE },
	{ "opt.muzzy_decay_ms", HC_T_SSIZE },
	{ "opt.lg_extent_max_active_fit", HC_T_SIZE },
	{ "opt.stats_interval", HC_T_I64 },
	{ "opt.tcache_max", HC_T_SIZE },
	{ "opt.lg_tcache_max", HC_T_SIZE },
	{ "opt.lg_prof_sample", HC_T_SIZE },
	{ "opt.lg_prof_interval", HC_T_SSIZE },
	{ "opt.prof_recent_alloc_max", HC_T_SSIZE },
	{ "opt.mutex_max_spin", HC_T_SSIZE },
	{ "opt.*", HC_T_BOOL },
	{ "thread.arena", HC_T_UNSIGNED },
	{ "thread.allocated", HC_T_U64 },
	{ "thread.deallocated", HC_T_U64 },
	{ "thread.tcache.enabled", HC_T_BOOL },
	{ "thread.tcache.flush", HC_T_VOID },
	{ "thread.prof.name", HC_T_STRING },
	{ "thread.prof.active", HC_T_BOOL },
	{ "thread.idle", HC_T_VOID },
	{ "tcache.create", HC_T_UNSIGNED },
	{ "tcache.flush", HC_T_UNSIGNED },
	{ "tcache.destroy", HC_T_UNSIGNED },
	{ "arena.#.initialized", HC_T_BOOL },
	{ "arena.#.decay", HC_T_VOID },
	{ "arena.#.purge", HC_T_VOID },
	{ "arena.#.reset", HC_T_VOID },
	{ "arena.#.destroy", HC_T_VOID },
	{ "arena.#.dss", HC_T_STRING },
	{ "arena.#.dirty_decay_ms", HC_T_SSIZE },
	{ "arena.#.muzzy_decay_ms", HC_T_SSIZE },
	{ "arena.#.retain_grow_limit", HC_T_SIZE },
	{ "arenas.narenas", HC_T_UNSIGNED },
	{ "arenas.dirty_decay_ms", HC_T_SSIZE },
	{ "arenas.muzzy_decay_ms", HC_T_SSIZE },
	{ "arenas.quantum", HC_T_SIZE },
	{ "arenas.page", HC_T_SIZE },
	{ "arenas.tcache_max", HC_T_SIZE },
	{ "arenas.nbins", HC_T_UNSIGNED },
	{ "arenas.nhbins", HC_T_UNSIGNED },
	{ "arenas.bin.#.size", HC_T_SIZE },
	{ "arenas.bin.#.nregs", HC_T_U32 },
	{ "arenas.bin.#.slab_size", HC_T_SIZE },
	{ "arenas.bin.#.nshards", HC_T_U32 },
	{ "arenas.nlextents", HC_T_UNSIGNED },
	{ "arenas.lextent.#.size", HC_T_SIZE },
	{ "arenas.create", HC_T_UNSIGNED },
	{ "prof.thread_active_init", HC_T_BOOL },
	{ "prof.active", HC_T_BOOL },
	{ "prof.dump", HC_T_STRING },
	{ "prof.gdump", HC_T_BOOL },
	{ "prof.prefix", HC_T_STRING },
	{ "prof.reset", HC_T_SIZE },
	{ "prof.interval", HC_T_U64 },
	{ "prof.lg_sample", HC_T_SIZE },
	{ "stats.background_thread.num_threads", HC_T_SIZE },
	{ "stats.background_thread.num_runs", HC_T_U64 },
	{ "stats.background_thread.run_interval", HC_T_U64 },
	{ "stats.mutexes.reset", HC_T_VOID },
	{ "stats.mutexes.*.max_num_thds", HC_T_U32 },
	{ "stats.mutexes.*.*", HC_T_U64 },
	{ "stats.arenas.#.mutexes.*.max_num_thds", HC_T_U32 },
	{ "stats.arenas.#.mutexes.*.*", HC_T_U64 },
	{ "stats.arenas.#.nthreads", HC_T_UNSIGNED },
	{ "stats.arenas.#.uptime", HC_T_U64 },
	{ "stats.arenas.#.dss", HC_T_STRING },
	{ "stats.arenas.#.dirty_decay_ms", HC_T_SSIZE },
	{ "stats.arenas.#.muzzy_decay_ms", HC_T_SSIZE },
	{ "stats.arenas.#.dirty_npurge", HC_T_U64 },
	{ "stats.arenas.#.dirty_nmadvise", HC_T_U64 },
	{ "stats.arenas.#.dirty_purged", HC_T_U64 },
	{ "stats.arenas.#.muzzy_npurge", HC_T_U64 },
	{ "stats.arenas.#.muzzy_nmadvise", HC_T_U64 },
	{ "stats.arenas.#.muzzy_purged", HC_T_U64 },
	{ "stats.arenas.#.small.allocated", HC_T_SIZE },
	{ "stats.arenas.#.small.*", HC_T_U64 },
	{ "stats.arenas.#.large.allocated", HC_T_SIZE },
	{ "stats.arenas.#.large.*", HC_T_U64 },
	{ "stats.arenas.#.bins.#.curregs", HC_T_SIZE },
	{ "stats.arenas.#.bins.#.curslabs", HC_T_SIZE },
	{ "stats.arenas.#.bins.#.nonfull_slabs", HC_T_SIZE },
	{ "stats.arenas.#.bins.#.*", HC_T_U64 },
	{ "stats.arenas.#.lextents.#.curlextents", HC_T_SIZE },
	{ "stats.arenas.#.lextents.#.*", HC_T_U64 },
	{ "stats.arenas.#.extents.#.*", HC_T_SIZE },
	{ "stats.arenas.#.*", HC_T_SIZE },
	{ "stats.*", HC_T_SIZE },
};

static bool comp_match(const char *pat, size_t pl, const char *s, size_t sl)
{
	if (pl == 1 && *pat == '*')
		return sl > 0;
	if (pl == 1 && *pat == '#') {
		if (!sl)
			return false;
		for (size_t i = 0; i < sl; i++)
			if (!isdigit((unsigned char)s[i]))
				return false;
		return true;
	}
	return pl == sl && !memcmp(pat, s, pl);
}

/* Dotted-name match, component by component.  Exposed for unit tests. */
bool je_name_match(const char *pat, const char *name);
bool je_name_match(const char *pat, const char *name)
{
	for (;;) {
		size_t pl = strcspn(pat, "."), nl = strcspn(name, ".");

		if (!comp_match(pat, pl, name, nl))
			return false;
		pat += pl;
		name += nl;
		if (!*pat || !*name)
			return !*pat && !*name;
		pat++;
		name++;
	}
}

static int ctl_type_of(const char *name, enum hc_type *type)
{
	for (size_t i = 0; i < sizeof(ctl_types) / sizeof(ctl_types[0]); i++)
		if (je_name_match(ctl_types[i].pat, name)) {
			*type = ctl_types[i].type;
			return 0;
		}
	return -1;
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
		return 4;
	default:
		return 8; /* size_t, ssize_t, 64-bit ints, pointers on LP64 */
	}
}

static const char *type_name(enum hc_type type)
{
	static const char *const n[] = { "void", "bool", "unsigned", "size_t", "ssize_t",
					 "uint64_t", "int64_t", "uint32_t", "const char *" };
	return n[type];
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

	/* Scratch is per session and large; a session makes a few dozen calls at most. */
	a[0] = call_strdup(t, name, err);
	if (!a[0])
		return -1;
	if (old) {
		a[1] = call_scratch(t, len);
		a[2] = call_scratch(t, sizeof(len));
		if (!a[1] || !a[2] || call_write(t, a[2], &len, sizeof(len), err) < 0)
			return err_set(err, HC_E_ARGS, 0, "value of %s too large", name);
	}
	if (newv) {
		a[3] = call_scratch(t, newlen);
		a[4] = newlen;
		if (!a[3] || call_write(t, a[3], newv, newlen, err) < 0)
			return err_set(err, HC_E_ARGS, 0, "value for %s too large", name);
	}
	if (call_fn(t, je->ctl, a, 5, &ret, NULL, NULL, err) < 0) {
		err_context(err, "%smallctl(\"%s\")", je->prefix, name);
		return -1;
	}
	*rc = (int)ret;
	pr_debug("%smallctl(\"%s\") = %d", je->prefix, name, *rc);
	if (*rc == 0 && old) {
		if (call_read(t, a[2], &len, sizeof(len), err) < 0)
			return -1;
		if (len > *oldlen)
			len = *oldlen;
		*oldlen = len;
		if (call_read(t, a[1], old, len, err) < 0)
			return -1;
	}
	return 0;
}

static int ctl_fail(struct hc_target *t, const char *name, int rc, struct hc_err *err)
{
	if (rc == ENOENT)
		return err_set(err, HC_E_NO_CTL, rc, "jemalloc in pid %d has no control named '%s'",
			       t->pid, name);
	return err_set(err, HC_E_REMOTE, rc, "mallctl(\"%s\") in pid %d: %s", name, t->pid,
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
	switch (type) {
	case HC_T_BOOL:
		v->b = buf[0] != 0;
		break;
	case HC_T_UNSIGNED:
	case HC_T_U32: {
		uint32_t u;

		memcpy(&u, buf, 4);
		v->u = u;
		break;
	}
	case HC_T_SSIZE:
	case HC_T_I64:
		memcpy(&v->i, buf, 8);
		break;
	case HC_T_STRING: {
		uint64_t p;

		memcpy(&p, buf, 8);
		if (!p)
			snprintf(v->str, sizeof(v->str), "(null)");
		else if (call_read_str(t, p, v->str, sizeof(v->str), err) < 0)
			return -1;
		break;
	}
	default:
		memcpy(&v->u, buf, 8);
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

		for (size_t i = 0; i < t->nobjs && n < 8; i++) {
			struct obj *o = &t->objs[i];
			bool likely = o->is_exe || strstr(o->path, "jemalloc");

			if (!o->base || o->is_vdso || (pass == 0 && !likely))
				continue;
			if (sym_load(t, o, debug, err) < 0) {
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
	sy = sym_at(t, raddr, &o);
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
				   "jemalloc in pid %d was built without profiling support", t->pid);
	if (rc)
		return ctl_fail(t, "opt.prof", rc, err);
	if (!v.b) {
		conf_hint(t, hint, sizeof(hint));
		return err_sethint(err, HC_E_PROF_OFF, 0, hint,
				   "heap profiling was not enabled when pid %d started (opt.prof is false)",
				   t->pid);
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

	if (call_begin(t, err) < 0)
		return -1;
	*enabled = *active = false;
	if (je_read(t, "opt.prof", HC_T_BOOL, &v, &rc, err) == 0 && rc == 0) {
		*enabled = v.b;
		if (v.b && je_read(t, "prof.active", HC_T_BOOL, &v, NULL, err) == 0)
			*active = v.b;
	}
	return call_end(t, err);
}

static int je_prof_set(struct hc_target *t, bool active, struct hc_err *err)
{
	uint8_t nv = active;
	int rc;

	if (call_begin(t, err) < 0)
		return -1;
	if (need_prof(t, NULL, err) == 0 &&
	    je_call(t, "prof.active", NULL, NULL, &nv, 1, &rc, err) == 0 && rc)
		ctl_fail(t, "prof.active", rc, err);
	return call_end(t, err);
}

/* A heap profile is text of a size that follows the heap; refuse anything absurd. */
#define MAX_PROFILE (4ull << 30)

static int je_prof_dump(struct hc_target *t, const char *out, struct hc_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	uint64_t p;
	int rc = 0;

	/*
	 * jemalloc writes the file itself, as the target, in the target's
	 * mount namespace: into a fresh 0700 directory of the target's own,
	 * with an unpredictable name, so no one can plant a file or link there.
	 */
	if (troot_mkdir(t->pid, dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/prof.heap", dir);
	if (call_begin(t, err) < 0)
		goto out;
	if (need_prof(t, NULL, err) == 0 && (p = call_strdup(t, path, err)) &&
	    je_call(t, "prof.dump", NULL, NULL, &p, sizeof(p), &rc, err) == 0 && rc)
		ctl_fail(t, "prof.dump", rc, err);
	pr_debug("prof.dump to %s: %d", path, rc);
	call_end(t, err);
	if (!err_isset(err))
		troot_fetch(t->pid, path, out, MAX_PROFILE, err);
out:
	troot_remove(t->pid, dir, path);
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
	if (call_begin(t, err) < 0)
		return -1;
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
				    "jemalloc in pid %d was built without statistics", t->pid);
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
end:
	return call_end(t, err);
}

/* write_cb(void *cbopaque, const char *s): bring s to heapctl, never to the target's fds. */
int je_print_cb(void *arg, struct hc_target *t, const uint64_t *a, struct hc_err *err)
{
	struct je_print_ctx *pc = arg;
	uint64_t at = a[1];
	char buf[4096];

	for (;;) {
		size_t chunk = sizeof(buf) - (at & (sizeof(buf) - 1));
		char *nul;

		if (call_read(t, at, buf, chunk, err) < 0)
			return -1;
		nul = memchr(buf, 0, chunk);
		if (pc->sink(pc->arg, buf, nul ? (size_t)(nul - buf) : chunk) < 0)
			return err_set(err, HC_E_IO, errno, "writing the statistics failed");
		if (nul)
			return 0;
		at += chunk;
	}
}

static int je_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	struct je_print_ctx pc = { sink, arg };
	uint64_t a[3], ret;

	if (call_begin(t, err) < 0)
		return -1;
	a[0] = call_cb_raddr(t);
	a[1] = 0;
	a[2] = opts ? call_strdup(t, opts, err) : 0;
	if (!opts || a[2])
		call_fn(t, je_of(t)->stats_print, a, 3, &ret, je_print_cb, &pc, err);
	return call_end(t, err);
}

static int je_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	char name[64];
	uint64_t narenas = 0;
	int rc;

	if (call_begin(t, err) < 0)
		return -1;
	if (arena >= 0) {
		if (je_read_u64(t, "arenas.narenas", &narenas, err) < 0)
			goto end;
		if ((uint64_t)arena >= narenas) {
			err_set(err, HC_E_USAGE, 0, "arena %d does not exist: pid %d has %llu arenas (0..%llu)",
				arena, t->pid, (unsigned long long)narenas,
				(unsigned long long)narenas - 1);
			goto end;
		}
	}
	snprintf(name, sizeof(name), "arena.%d.purge", arena >= 0 ? arena : MALLCTL_ARENAS_ALL);
	if (je_call(t, name, NULL, NULL, NULL, 0, &rc, err) == 0 && rc)
		ctl_fail(t, name, rc, err);
end:
	return call_end(t, err);
}

static int lookup_type(const char *name, enum hc_type *type, struct hc_err *err)
{
	if (!name[0] || strlen(name) > 200)
		return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl name", name);
	if (ctl_type_of(name, type) < 0)
		return err_set(err, HC_E_NO_CTL, 0, "unknown mallctl name '%s'", name);
	return 0;
}

static int je_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	enum hc_type type;

	if (lookup_type(name, &type, err) < 0)
		return -1;
	if (type == HC_T_VOID)
		return err_sethint(err, HC_E_TYPE, 0, "run it with: heapctl set -p PID NAME",
				   "'%s' is an action, not a value", name);
	if (call_begin(t, err) < 0)
		return -1;
	je_read(t, name, type, v, NULL, err);
	return call_end(t, err);
}

static int parse_value(const char *name, enum hc_type type, const char *s, uint8_t *buf,
		       size_t *len, struct hc_err *err)
{
	char *end;

	*len = type_size(type);
	if (type == HC_T_VOID) {
		if (s && *s)
			return err_set(err, HC_E_TYPE, 0, "'%s' is an action and takes no value", name);
		return 0;
	}
	if (!s)
		return err_set(err, HC_E_TYPE, 0, "'%s' needs a %s value", name, type_name(type));
	if (type == HC_T_BOOL) {
		if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "on") ||
		    !strcasecmp(s, "yes"))
			buf[0] = 1;
		else if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "off") ||
			 !strcasecmp(s, "no"))
			buf[0] = 0;
		else
			return err_sethint(err, HC_E_TYPE, 0, "use true or false",
					   "'%s' is a bool; '%s' is not true/false", name, s);
		return 0;
	}
	if (type == HC_T_STRING)
		return 0; /* placed by the caller */
	errno = 0;
	if (type == HC_T_SSIZE || type == HC_T_I64) {
		long long v = strtoll(s, &end, 0);

		if (errno || end == s || *end)
			return err_sethint(err, HC_E_TYPE, 0, "give an integer, e.g. -1 or 10000",
					   "'%s' is a %s; '%s' is not an integer", name,
					   type_name(type), s);
		memcpy(buf, &v, 8);
	} else {
		unsigned long long v;

		if (*s == '-' || (v = strtoull(s, &end, 0), errno) || end == s || *end ||
		    (*len == 4 && v > UINT32_MAX))
			return err_sethint(err, HC_E_TYPE, 0, "give a non-negative integer",
					   "'%s' is a %s; '%s' is not a valid one", name,
					   type_name(type), s);
		if (*len == 4) {
			uint32_t u = (uint32_t)v;

			memcpy(buf, &u, 4);
		} else {
			memcpy(buf, &v, 8);
		}
	}
	return 0;
}

static int je_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_err *err)
{
	enum hc_type type;
	uint8_t nv[8] = { 0 }, ov[8] = { 0 };
	size_t len, olen;
	int rc;

	if (lookup_type(name, &type, err) < 0 || parse_value(name, type, value, nv, &len, err) < 0)
		return -1;
	memset(old, 0, sizeof(*old));
	old->type = HC_T_VOID;
	if (call_begin(t, err) < 0)
		return -1;
	if (type == HC_T_STRING) {
		uint64_t p;

		p = call_strdup(t, value, err);
		if (!p)
			goto end;
		memcpy(nv, &p, 8);
		if (je_call(t, name, NULL, NULL, nv, 8, &rc, err) < 0)
			goto end;
	} else if (type == HC_T_VOID) {
		if (je_call(t, name, NULL, NULL, NULL, 0, &rc, err) < 0)
			goto end;
	} else {
		olen = len;
		if (je_call(t, name, ov, &olen, nv, len, &rc, err) < 0)
			goto end;
		if (rc == 0) {
			struct hc_value tmp = { .type = type };

			if (type == HC_T_BOOL)
				tmp.b = ov[0];
			else if (len == 4) {
				uint32_t u;

				memcpy(&u, ov, 4);
				tmp.u = u;
			} else {
				memcpy(&tmp.u, ov, 8);
			}
			*old = tmp;
		}
	}
	if (rc == EPERM)
		err_sethint(err, HC_E_REMOTE, rc, "this control is read-only; see jemalloc(3)",
			    "'%s' cannot be written in pid %d", name, t->pid);
	else if (rc)
		ctl_fail(t, name, rc, err);
end:
	return call_end(t, err);
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
	if (call_begin(t, err) < 0)
		return -1;
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
	return call_end(t, err);
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
	.stats = je_stats,
	.stats_print = je_stats_print,
	.purge = je_purge,
	.ctl_get = je_ctl_get,
	.ctl_set = je_ctl_set,
};
