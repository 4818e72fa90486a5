// SPDX-License-Identifier: MIT
/*
 * jemalloc driver: everything goes through <prefix>mallctl and
 * <prefix>malloc_stats_print, found by symbol with any prefix ("", "je_"
 * in Redis' bundled copy, "_rjem_" in Rust's tikv-jemalloc-sys).
 *
 * mallctl(name, oldp, oldlenp, newp, newlen) returns an errno value of its
 * own; it is decoded as the target's answer, never as a local errno.
 * This file detects jemalloc and drives it; je_ctl.c knows its namespace
 * and calls mallctl, je_list.c lists a prefix.
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
	t->drv.alloc_priv = malloc(sizeof(*best));
	if (!t->drv.alloc_priv)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memcpy(t->drv.alloc_priv, best, sizeof(*best));
	best = t->drv.alloc_priv;
	code_range(best);
	t->drv.where.allocator = "jemalloc";
	t->drv.where.object = best->obj->path;
	t->drv.where.prefix = best->prefix;
	t->drv.where.symtab = best->obj->symsrc;
	t->drv.where.ctl_raddr = best->ctl;
	t->drv.where.stats_raddr = best->stats_print;
	t->drv.where.ncandidates = n;
	t->drv.where_others[0] = 0;
	for (unsigned i = 0; i < n; i++) {
		if (found[i].obj == best->obj && !strcmp(found[i].prefix, best->prefix))
			continue;
		used += (size_t)snprintf(t->drv.where_others + used, sizeof(t->drv.where_others) - used,
					 "%s%s (prefix '%s')", used ? ", " : "", found[i].obj->path,
					 found[i].prefix);
		if (used >= sizeof(t->drv.where_others))
			break;
	}
	t->drv.where.others = t->drv.where_others;
	pr_info("jemalloc: %smallctl at 0x%llx in %s (%s)", best->prefix,
		(unsigned long long)best->ctl, best->obj->path, best->obj->symsrc);
	return 1;
}

static void je_release(struct hc_target *t)
{
	free(t->drv.alloc_priv);
	t->drv.alloc_priv = NULL;
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
	if (need_prof(t, active, err) == 0 && (p = call_strdup(&t->eng, path, err)) &&
	    je_call(t, "prof.dump", NULL, NULL, &p, sizeof(p), &rc, err) == 0 && rc)
		ctl_fail(t, "prof.dump", rc, err);
	pr_debug("prof.dump to %s: %d", path, rc);
	call_done(&t->eng, err);
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

	a[0] = call_cb_raddr(&t->eng, err);
	a[1] = 0;
	a[2] = opts ? call_strdup(&t->eng, opts, err) : 0;
	if (!opts || a[2])
		call_fn(&t->eng, je_of(t)->stats_print, a, 3, &ret, je_print_cb, &pc, err);
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
		p = call_strdup(&t->eng, nv.str, err);
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
