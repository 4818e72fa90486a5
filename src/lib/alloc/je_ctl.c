// SPDX-License-Identifier: MIT
/*
 * jemalloc's mallctl: the namespace heapctl knows (names, types, how
 * each may be used, as jemalloc(3) documents them), and the calls into
 * the target's <prefix>mallctl, whose errno values are the target's
 * answer, never a local errno.
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
#include "jemalloc_int.h"
#include "log.h"
#include "image.h"
#include "troot.h"

/* ---- the namespace --------------------------------------------------------------- */


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
const struct ctl_def ctl_defs[] = {
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
const size_t ctl_ndefs = sizeof(ctl_defs) / sizeof(ctl_defs[0]);

/* Length of the pattern component at p: up to '.' outside parentheses. */
size_t pat_comp_len(const char *p)
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
int pat_match(const char *pat, const char *name, bool prefix)
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

const struct ctl_def *ctl_def_of(const char *name)
{
	for (size_t i = 0; i < ctl_ndefs; i++)
		if (pat_match(ctl_defs[i].pat, name, false) >= 0)
			return &ctl_defs[i];
	return NULL;
}

/* Is name a group of names ("arenas", "stats.arenas.0"), not a control? */
bool ctl_is_group(const char *name)
{
	for (size_t i = 0; i < ctl_ndefs; i++)
		if (pat_match(ctl_defs[i].pat, name, true) >= 0 &&
		    pat_match(ctl_defs[i].pat, name, false) < 0)
			return true;
	return false;
}

int ctl_type_of(const char *name, enum hc_type *type)
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
void value_bytes(const struct hc_value *v, uint8_t *buf, size_t *len)
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

void value_from_bytes(enum hc_type type, const uint8_t *buf, struct hc_value *v)
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

const char *mallctl_strerror(int rc)
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
int je_call(struct hc_target *t, const char *name, void *old, size_t *oldlen,
		   const void *newv, size_t newlen, int *rc, struct hc_err *err)
{
	struct je *je = je_of(t);
	uint64_t a[5] = { 0 }, ret;
	uint64_t len = oldlen ? *oldlen : 0;

	/* Each call's scratch is given back after it: a listing makes thousands. */
	size_t mark = call_scratch_mark(&t->eng);
	int r = -1;

	a[0] = call_strdup(&t->eng, name, err);
	if (!a[0])
		goto out;
	if (old) {
		a[1] = call_scratch(&t->eng, len, err);
		a[2] = call_scratch(&t->eng, sizeof(len), err);
		if (!a[1] || !a[2] || call_write(&t->eng, a[2], &len, sizeof(len), err) < 0) {
			err_set(err, HC_E_ARGS, 0, "value of %s too large", name);
			goto out;
		}
	}
	if (newv) {
		a[3] = call_scratch(&t->eng, newlen, err);
		a[4] = newlen;
		if (!a[3] || call_write(&t->eng, a[3], newv, newlen, err) < 0) {
			err_set(err, HC_E_ARGS, 0, "value for %s too large", name);
			goto out;
		}
	}
	if (call_fn(&t->eng, je->ctl, a, 5, &ret, NULL, NULL, err) < 0) {
		err_context(err, "%smallctl(\"%s\")", je->prefix, name);
		goto out;
	}
	*rc = (int)ret;
	pr_debug("%smallctl(\"%s\") = %d", je->prefix, name, *rc);
	if (*rc == 0 && old) {
		if (call_read(&t->eng, a[2], &len, sizeof(len), err) < 0)
			goto out;
		if (len > *oldlen)
			len = *oldlen;
		*oldlen = len;
		if (call_read(&t->eng, a[1], old, len, err) < 0)
			goto out;
	}
	r = 0;
out:
	call_scratch_release(&t->eng, mark);
	return r;
}

int ctl_fail(struct hc_target *t, const char *name, int rc, struct hc_err *err)
{
	if (rc == ENOENT)
		return err_set(err, HC_E_NO_CTL, rc, "jemalloc in pid %d has no control named '%s'",
			       t->img.pid, name);
	return err_set(err, HC_E_REMOTE, rc, "mallctl(\"%s\") in pid %d: %s", name, t->img.pid,
		       mallctl_strerror(rc));
}

/* Read a typed value inside a session. */
int je_read(struct hc_target *t, const char *name, enum hc_type type, struct hc_value *v,
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
		else if (call_read_str(&t->eng, p, v->str, sizeof(v->str), err) < 0)
			return -1;
	}
	return 0;
}

int je_read_u64(struct hc_target *t, const char *name, uint64_t *out, struct hc_err *err)
{
	struct hc_value v;
	enum hc_type type = HC_T_SIZE;

	ctl_type_of(name, &type);
	if (je_read(t, name, type, &v, NULL, err) < 0)
		return -1;
	*out = v.u;
	return 0;
}

/* Stats are a snapshot that a write to epoch refreshes.  Inside a session. */
int je_refresh(struct hc_target *t, struct hc_err *err)
{
	uint64_t epoch = 1;
	int rc;

	if (je_call(t, "epoch", NULL, NULL, &epoch, sizeof(epoch), &rc, err) < 0)
		return -1;
	return rc ? ctl_fail(t, "epoch", rc, err) : 0;
}

bool is_stats(const char *name)
{
	return !strncmp(name, "stats.", 6) || !strcmp(name, "stats");
}
