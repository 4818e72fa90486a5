// SPDX-License-Identifier: MIT
/*
 * gperftools tcmalloc driver: MallocExtension's C API for statistics and
 * purging, and the heap profiler's C API (full libtcmalloc only; the
 * _minimal flavour has none) for profiling.
 *
 * Unlike jemalloc, tcmalloc can start heap profiling at run time:
 * HeapProfilerStart(prefix).  A dump is GetHeapProfile()'s string, read
 * back from the target's memory and freed with its own free(): no file is
 * written in the target for it.
 *
 * gperftools' heap profiler talks on its own: HeapProfilerStart() logs
 * "Starting tracking the heap" to fd 2 (RAW_VLOG(0), shown while
 * FLAGS_verbose >= 0), and with the prefix it was given it dumps files by
 * itself every HEAP_PROFILE_ALLOCATION_INTERVAL / _INUSE_INTERVAL bytes.
 * Neither may reach the target: FLAGS_verbose is lowered to -1 for the
 * start call only (INFO and worse still print), and the automatic dump
 * intervals are set to 0 while heapctl's profiling runs, so the prefix
 * (in a private directory removed before the command ends) is never used.
 * "prof off" puts the intervals back as the target's environment set them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "alloc_tcmalloc.h"
#include "call.h"
#include "cred.h"
#include "log.h"
#include "procfs.h"
#include "image.h"
#include "troot.h"

struct tc {
	struct obj *obj;
	uint64_t lo, hi; /* allocator code, when it is a DSO of its own */
	uint64_t get_num, set_num, get_stats, release, version, malloc, free;
	uint64_t prof_start, prof_stop, prof_running, prof_get; /* 0 in tcmalloc_minimal */
	uint64_t prof_get_end; /* end of GetHeapProfile's code */
	uint64_t verbose;      /* int32 FLAGS_verbose, or 0 */
	uint64_t interval[4];  /* int64 FLAGS_heap_profile_*_interval, or 0 */
};

/* gperftools' flags, by their mangled names (namespace FLAG__namespace_...). */
#define TC_FLAG(type, len, name)                                                             \
	"_ZN" #len "FLAG__namespace_do_not_use_directly_use_DECLARE_" type "_instead" name "E"

static const struct {
	const char *sym, *env;
	int64_t dflt;
} intervals[4] = {
	{ TC_FLAG("int64", 61, "38FLAGS_heap_profile_allocation_interval"),
	  "HEAP_PROFILE_ALLOCATION_INTERVAL", 1 << 30 },
	{ TC_FLAG("int64", 61, "40FLAGS_heap_profile_deallocation_interval"),
	  "HEAP_PROFILE_DEALLOCATION_INTERVAL", 0 },
	{ TC_FLAG("int64", 61, "33FLAGS_heap_profile_inuse_interval"),
	  "HEAP_PROFILE_INUSE_INTERVAL", 100 << 20 },
	{ TC_FLAG("int64", 61, "32FLAGS_heap_profile_time_interval"), "HEAP_PROFILE_TIME_INTERVAL",
	  0 },
};

static struct tc *tc_of(const struct hc_target *t)
{
	return t->drv.alloc_priv;
}

static int tc_detect(struct hc_target *t, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	struct tc c = { 0 };

	/* only a tcmalloc that serves malloc: a merely mapped copy manages nothing */
	if (!own || !(c.get_num = alloc_sym(own, "MallocExtension_GetNumericProperty")))
		return 0;
	c.obj = own;
	c.set_num = alloc_sym(own, "MallocExtension_SetNumericProperty");
	c.get_stats = alloc_sym(own, "MallocExtension_GetStats");
	c.release = alloc_sym(own, "MallocExtension_ReleaseFreeMemory");
	c.version = alloc_sym(own, "tc_version");
	c.malloc = alloc_sym(own, "malloc");
	c.free = alloc_sym(own, "free");
	c.prof_start = alloc_sym(own, "HeapProfilerStart");
	c.prof_stop = alloc_sym(own, "HeapProfilerStop");
	c.prof_running = alloc_sym(own, "IsHeapProfilerRunning");
	c.prof_get = alloc_sym(own, "GetHeapProfile");
	if (!c.prof_start || !c.prof_stop || !c.prof_running || !c.prof_get)
		c.prof_start = c.prof_stop = c.prof_running = c.prof_get = 0;
	if (c.prof_start) {
		const struct sym *g = sym_by_name(own, "GetHeapProfile");

		c.prof_get_end = c.prof_get + (g && g->size ? g->size : 1);
		c.verbose = sym_data(own, TC_FLAG("int32", 61, "13FLAGS_verbose"));
		for (size_t i = 0; i < 4; i++)
			c.interval[i] = sym_data(own, intervals[i].sym);
	}
	if (!own->is_exe) {
		c.lo = own->text_lo;
		c.hi = own->text_hi;
	}
	if (alloc_found(t, own, c.prof_start ? "tcmalloc" : "tcmalloc_minimal", &c, sizeof(c), c.get_num, c.get_stats, err) < 0)
		return -1;
	pr_info("tcmalloc: MallocExtension_GetNumericProperty at 0x%" PRIx64 " in %s", c.get_num,
		own->path);
	return 1;
}

static bool tc_contains(struct hc_target *t, uint64_t raddr)
{
	const struct tc *c = tc_of(t);

	return c && c->hi && raddr >= c->lo && raddr < c->hi;
}

/* ---- remote helpers (inside a session) ------------------------------------------- */

/*
 * MallocExtension_GetNumericProperty(name, &value): 1 if the property
 * exists.  name_raddr: name already in the target, or 0 to copy it there.
 */
static int get_num(struct hc_target *t, const char *name, uint64_t name_raddr, uint64_t *v,
		   bool *found, struct hc_err *err)
{
	uint64_t a[2], ret = 0;

	*v = 0;
	a[0] = name_raddr ? name_raddr : call_strdup(&t->eng, name, err);
	a[1] = call_scratch(&t->eng, 8, err);
	if (!a[0] || !a[1])
		return err_isset(err) ? -1 : err_set(err, HC_E_INTERNAL, 0, "scratch space is full");
	if (call_write(&t->eng, a[1], v, 8, err) < 0 ||
	    call_fn(&t->eng, tc_of(t)->get_num, a, 2, &ret, NULL, NULL, err) < 0 ||
	    call_read(&t->eng, a[1], v, 8, err) < 0)
		return -1;
	if (found)
		*found = (ret & 0xff) != 0; /* C++ bool in al */
	else if (!(ret & 0xff))
		return err_sethint(err, HC_E_NO_CTL, 0,
				   "names: generic.current_allocated_bytes, generic.heap_size, "
				   "tcmalloc.pageheap_free_bytes, "
				   "tcmalloc.max_total_thread_cache_bytes ...",
				   "tcmalloc in pid %d has no property '%s'", t->img.pid, name);
	return 0;
}

/* A NUL-terminated string of the target's, of any length, into a malloc'ed buffer. */
static char *read_remote_str(struct hc_target *t, uint64_t at, size_t max, size_t *len,
			     struct hc_err *err)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t chunk = 4096 - (at & 4095);
		char *nul;

		if (n + chunk + 1 > cap) {
			char *nb = cap * 2 <= max ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				free(buf);
				err_set(err, HC_E_NOMEM, 0, "string in pid %d longer than %zu bytes",
					t->img.pid, max);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		if (call_read(&t->eng, at, buf + n, chunk, err) < 0)
			break;
		nul = memchr(buf + n, 0, chunk);
		if (nul) {
			*len = n + (size_t)(nul - (buf + n));
			return buf;
		}
		n += chunk;
		at += chunk;
	}
	free(buf);
	if (!err_isset(err))
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	return NULL;
}

static void version_of(struct hc_target *t, char *out, size_t len)
{
	struct hc_err e = { 0 };
	uint64_t p = 0, a[3] = { 0, 0, 0 };
	char v[64] = "";

	snprintf(out, len, "(unknown version)");
	if (tc_of(t)->version && call_fn(&t->eng, tc_of(t)->version, a, 3, &p, NULL, NULL, &e) == 0 &&
	    p && call_read_str(&t->eng, p, v, sizeof(v), &e) == 0)
		snprintf(out, len, "%s", v);
}

/* ---- operations ------------------------------------------------------------------- */

static const struct {
	const char *name, *what;
} props[] = {
	{ "generic.current_allocated_bytes", "live bytes the program holds" },
	{ "generic.heap_size", "bytes tcmalloc reserved from the OS (incl. unmapped)" },
	{ "tcmalloc.pageheap_free_bytes", "free pages still mapped (heapctl purge)" },
	{ "tcmalloc.pageheap_unmapped_bytes", "free pages already returned to the OS" },
	{ "tcmalloc.central_cache_free_bytes", "free in the central cache" },
	{ "tcmalloc.transfer_cache_free_bytes", "free in the transfer cache" },
	{ "tcmalloc.thread_cache_free_bytes", "free in the per-thread caches" },
	{ "tcmalloc.current_total_thread_cache_bytes", "per-thread caches, total" },
	{ "tcmalloc.max_total_thread_cache_bytes", "per-thread caches, limit" },
	{ "tcmalloc.aggressive_memory_decommit", "release freed pages at once (0/1)" },
};

static int tc_stats(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	snprintf(st->allocator, sizeof(st->allocator), "%s", t->drv.where.allocator);
	version_of(t, st->version, sizeof(st->version));
	for (size_t i = 0; i < sizeof(props) / sizeof(props[0]) && st->nfig < HC_MAX_FIGURES;
	     i++) {
		struct hc_figure *f = &st->fig[st->nfig];
		bool found;

		if (get_num(t, props[i].name, 0, &f->value, &found, err) < 0)
			break;
		if (!found)
			continue;
		snprintf(f->name, sizeof(f->name), "%s", props[i].name);
		snprintf(f->what, sizeof(f->what), "%s", props[i].what);
		st->nfig++;
		if (i == 0)
			st->allocated = f->value;
		else if (i == 1)
			st->mapped = f->value;
		else if (i == 2)
			st->dirty = f->value;
		else if (i == 3)
			st->retained = f->value;
	}
	return err_isset(err) ? -1 : 0;
}

#define STATS_BUF (1u << 20)

static int tc_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	struct tc *c = tc_of(t);
	uint64_t a[2], buf = 0, ret;
	char *text = NULL;
	size_t len = 0;

	if (opts && *opts)
		return err_set(err, HC_E_USAGE, 0, "tcmalloc takes no --opts");
	if (!c->get_stats || !c->malloc || !c->free)
		return err_set(err, HC_E_NO_SYM, 0, "MallocExtension_GetStats not found in %s",
			       c->obj->path);
	/* the text can exceed heapctl's scratch: a buffer of the target's own, freed below */
	a[0] = STATS_BUF;
	if (call_fn(&t->eng, c->malloc, a, 1, &buf, NULL, NULL, err) < 0)
		goto end;
	if (!buf) {
		err_set(err, HC_E_REMOTE, ENOMEM, "malloc(%u) failed in pid %d", STATS_BUF, t->img.pid);
		goto end;
	}
	a[0] = buf;
	a[1] = STATS_BUF;
	if (call_write(&t->eng, buf, "", 1, err) == 0 &&
	    call_fn(&t->eng, c->get_stats, a, 2, &ret, NULL, NULL, err) == 0)
		text = read_remote_str(t, buf, STATS_BUF, &len, err);
	a[0] = buf;
	call_fn(&t->eng, c->free, a, 1, &ret, NULL, NULL, err);
end:
	call_done(&t->eng, err);
	if (text && !err_isset(err) && sink(arg, text, len) < 0)
		err_set(err, HC_E_IO, errno, "writing the statistics failed");
	free(text);
	return err_isset(err) ? -1 : 0;
}

static int tc_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	uint64_t ret;

	if (arena >= 0)
		return err_sethint(err, HC_E_USAGE, 0, "run 'heapctl purge' without --arena",
				   "tcmalloc has one page heap: there are no arenas to choose");
	if (!tc_of(t)->release)
		return err_set(err, HC_E_NO_SYM, 0, "MallocExtension_ReleaseFreeMemory not found");
	call_fn(&t->eng, tc_of(t)->release, NULL, 0, &ret, NULL, NULL, err);
	return err_isset(err) ? -1 : 0;
}

static int need_profiler(struct hc_target *t, struct hc_err *err)
{
	if (tc_of(t)->prof_start)
		return 0;
	return err_sethint(err, HC_E_PROF_OFF, 0,
			   "tcmalloc_minimal has no heap profiler: start the process with the full "
			   "libtcmalloc (LD_PRELOAD=libtcmalloc.so.4, or link -ltcmalloc instead of "
			   "-ltcmalloc_minimal)",
			   "pid %d uses tcmalloc_minimal (%s)", t->img.pid, tc_of(t)->obj->path);
}

static int running(struct hc_target *t, bool *on, struct hc_err *err)
{
	uint64_t ret = 0;

	if (call_fn(&t->eng, tc_of(t)->prof_running, NULL, 0, &ret, NULL, NULL, err) < 0)
		return -1;
	*on = (ret & 0xffffffff) != 0;
	return 0;
}

static int tc_prof_get(struct hc_target *t, bool *enabled, bool *active, struct hc_err *err)
{
	*enabled = *active = false;
	if (!tc_of(t)->prof_start)
		return 0; /* nothing to ask: tcmalloc_minimal */
	*enabled = true;
	running(t, active, err);
	return err_isset(err) ? -1 : 0;
}

/*
 * The values gperftools gave the interval flags at start: EnvToInt64(NAME,
 * default), i.e. strtoll of the initial environment's NAME, else the
 * default.  Read before the thread is stopped.
 */
static void intervals_at_start(struct hc_target *t, int64_t v[4])
{
	size_t len;
	char *env = procfs_environ(t->img.proc, &len);

	for (size_t i = 0; i < 4; i++) {
		const char *s = procfs_env_get(env, len, intervals[i].env);

		v[i] = s ? strtoll(s, NULL, 10) : intervals[i].dflt;
	}
	free(env);
}

/* Is every automatic dump interval 0 (as heapctl's "prof on" leaves them)? */
static int intervals_zero(struct hc_target *t, bool *zero, struct hc_err *err)
{
	*zero = true;
	for (size_t i = 0; i < 4; i++) {
		int64_t v;

		if (call_read(&t->eng, tc_of(t)->interval[i], &v, sizeof(v), err) < 0)
			return -1;
		if (v)
			*zero = false;
	}
	return 0;
}

static int intervals_set(struct hc_target *t, const int64_t v[4], struct hc_err *err)
{
	for (size_t i = 0; i < 4; i++)
		if (call_write(&t->eng, tc_of(t)->interval[i], &v[i], sizeof(v[i]), err) < 0)
			return -1;
	return 0;
}

/*
 * HeapProfilerStart(prefix) with the automatic dumps off and FLAGS_verbose
 * lowered for the call; *on: whether the profiler runs now.  Unless it
 * does, on any path, the intervals go back to start[].
 */
static int start_quietly(struct hc_target *t, const char *prefix, const int64_t start[4],
			 bool *on, struct hc_err *err)
{
	static const int64_t zero[4];
	struct tc *c = tc_of(t);
	int32_t verbose = 0, quiet = -1;
	struct hc_err e = { 0 };
	bool called = false;
	uint64_t p, ret;

	if (call_read(&t->eng, c->verbose, &verbose, sizeof(verbose), err) < 0)
		return -1;
	/* no automatic dumps into a prefix that is gone when this command ends */
	if (intervals_set(t, zero, err) < 0)
		goto restore;
	/* RAW_VLOG(0) prints while FLAGS_verbose >= 0; a lower setting stays as it is */
	if (verbose >= 0 && call_write(&t->eng, c->verbose, &quiet, sizeof(quiet), err) < 0)
		goto restore;
	p = call_strdup(&t->eng, prefix, err);
	if (!p && !err_isset(err))
		err_set(err, HC_E_INTERNAL, 0, "scratch space is full");
	if (p) {
		pr_info("HeapProfilerStart(\"%s\")", prefix);
		called = call_fn(&t->eng, c->prof_start, &p, 1, &ret, NULL, NULL, err) == 0;
	}
	/* undone on every path, even after a failed call */
	if (verbose >= 0 && call_write(&t->eng, c->verbose, &verbose, sizeof(verbose), &e) < 0 &&
	    !err_isset(err))
		*err = e;
	/* it runs, or cannot be asked: the automatic dumps must stay off */
	if (called && (running(t, on, err) < 0 || *on))
		return err_isset(err) ? -1 : 0;
restore:
	intervals_set(t, start, &(struct hc_err){ 0 });
	return err_isset(err) ? -1 : 0;
}

static int tc_prof_set(struct hc_target *t, bool active, bool *was, struct hc_err *err)
{
	char prefix[PATH_MAX + 16];
	struct troot_dir dir = TROOT_DIR_INIT;
	struct tc *c = tc_of(t);
	bool flags = c->interval[0] && c->interval[1] && c->interval[2] && c->interval[3];
	int64_t start[4];
	uint64_t ret;
	bool on = false, zero = false;

	if (need_profiler(t, err) < 0)
		return -1;
	if (active && (!c->verbose || !flags))
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "give its symbols with --debug-file FILE, start the process with "
				   "HEAPPROFILE=PREFIX, or use gperftools' libtcmalloc.so.4",
				   "%s does not export the flags heapctl must set to start its heap "
				   "profiler without writing to the process's stderr or files",
				   c->obj->path);
	/*
	 * HeapProfilerStart() wants a prefix and keeps a copy; with the
	 * automatic dumps off it is used only by HeapProfilerDump() calls of
	 * the program's own and by the dump at exit.  It names a fresh 0700
	 * directory of the target's own, which is removed again below: those
	 * dumps then fail (tcmalloc logs that) rather than leave files behind.
	 */
	if (active && troot_mkdir(t->img.pid, &dir, err) < 0)
		return -1;
	if (flags)
		intervals_at_start(t, start);
	if (running(t, &on, err) < 0)
		goto end;
	*was = on;
	if (active && !on) {
		snprintf(prefix, sizeof(prefix), "%s/heapctl", dir.path);
		start_quietly(t, prefix, start, &on, err);
	} else if (!active) {
		if (on)
			call_fn(&t->eng, c->prof_stop, NULL, 0, &ret, NULL, NULL, err);
		/* heapctl's "prof on" zeroed the automatic dumps: give them back */
		if (!err_isset(err) && flags && intervals_zero(t, &zero, err) == 0 && zero)
			intervals_set(t, start, err);
		if (!err_isset(err))
			running(t, &on, err);
	}
	if (!err_isset(err) && on != active)
		err_set(err, HC_E_REMOTE, 0, "the heap profiler of pid %d is still %s", t->img.pid,
			on ? "running" : "stopped");
end:
	call_done(&t->eng, err);
	if (active)
		troot_remove(&dir);
	return err_isset(err) ? -1 : 0;
}

#define MAX_PROFILE (1ull << 30)

/* Is raddr inside some object's executable mappings? */
static bool in_text(void *arg, uint64_t raddr)
{
	const struct hc_target *t = arg;

	for (size_t i = 0; i < t->img.nobjs; i++)
		if (raddr >= t->img.objs[i].text_lo && raddr < t->img.objs[i].text_hi)
			return true;
	return false;
}

/* Is any frame of " 0x.. 0x.." (up to end, its line's end) heapctl's own? */
static bool heapctl_stack(const struct tc_frames *f, const char *s, const char *end)
{
	bool first = true;

	for (;;) {
		uint64_t a;
		char *e;

		/* strtoull() would skip the newline too, into the next bucket's counts */
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s >= end)
			break;
		a = strtoull(s, &e, 16);
		if (e == s || e > end)
			break;
		s = e;
		/* return addresses point after the call, so one past the start is inside */
		if (a > f->get_lo && a <= f->get_hi)
			return true;
		/*
		 * A call of heapctl's returns to ret_addr (a ret gadget or the
		 * restorer): a first caller there is heapctl's (stats --full's
		 * buffer, say).  Versions before 0.9 returned to offset 0 of a
		 * code page of their own, which a long-running process may still
		 * count: a page-aligned caller in no object's code.  Not "in no
		 * object": on arm64 the page could land in the hole a 64 KiB-aligned
		 * library leaves between its text and its data.
		 */
		if (first && (a == f->ret_addr || (!(a & 4095) && !f->in_text(f->arg, a))))
			return true;
		first = false;
	}
	return false;
}

/* to += b, unless a count is negative or the sum would overflow: not a profile of gperftools' */
static bool add_counts(int64_t to[4], const int64_t b[4])
{
	for (int i = 0; i < 4; i++)
		if (b[i] < 0 || to[i] > INT64_MAX - b[i])
			return false;
	for (int i = 0; i < 4; i++)
		to[i] += b[i];
	return true;
}

/*
 * GetHeapProfile() mallocs its 1 MiB buffer while the profiler's hooks are
 * on, so every dump would show heapctl's buffers (this one in use, the
 * earlier ones in the totals) as the top entry.  Drop the buckets whose
 * stacks are heapctl's, and take their counts out of the header's totals.
 * Anything not in the expected shape is passed through unchanged: a header
 * whose counts are not on its first line, a negative count, totals that
 * would overflow.
 */
char *tc_profile_filter(char *text, size_t *len, const struct tc_frames *f)
{
	int64_t tot[4], drop[4] = { 0, 0, 0, 0 };
	char *out, *o, *s = text, *end = text + *len, *hdr_at, *hdr_nl;
	int n = 0;

	if (sscanf(text, "heap profile: %" SCNd64 ": %" SCNd64 " [%" SCNd64 ": %" SCNd64 "] @%n",
		   &tot[0], &tot[1], &tot[2], &tot[3], &n) != 4 || !n ||
	    tot[0] < 0 || tot[1] < 0 || tot[2] < 0 || tot[3] < 0)
		return text;
	hdr_at = text + n;
	hdr_nl = memchr(text, '\n', *len);
	if (!hdr_nl || hdr_at > hdr_nl)
		return text;
	out = malloc(*len + 128);
	if (!out)
		return text;
	s = hdr_nl + 1;
	o = out;
	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		char *le = nl ? nl + 1 : end;
		int64_t b[4];
		int m = 0;

		/*
		 * The line goes where it is copied to first, and is read there
		 * NUL-terminated: sscanf() takes the length of whatever it is
		 * given, so each line read in place costs a pass over the rest
		 * of the profile.  A bucket that is dropped is not kept there.
		 */
		memcpy(o, s, (size_t)(le - s));
		o[le - s] = 0;
		if (sscanf(o, "%" SCNd64 ": %" SCNd64 " [%" SCNd64 ": %" SCNd64 "] @%n", &b[0], &b[1],
			   &b[2], &b[3], &m) == 4 && m &&
		    heapctl_stack(f, s + m, nl ? nl : end)) {
			if (!add_counts(drop, b)) {
				free(out);
				return text;
			}
			s = le;
			continue;
		}
		if (!nl || nl == s) {
			/* the blank line before MAPPED_LIBRARIES: the rest is copied as is */
			memcpy(o, s, (size_t)(end - s));
			o += end - s;
			break;
		}
		o += le - s;
		s = le;
	}
	if (!drop[0] && !drop[2]) {
		free(out);
		return text;
	}
	{
		size_t body = (size_t)(o - out), hl, hrest = (size_t)(hdr_nl - hdr_at) + 1;
		char hdr[128];
		char *res;

		hl = (size_t)snprintf(hdr, sizeof(hdr),
				      "heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
				      ": %8" PRId64 "] @",
				      tot[0] - drop[0], tot[1] - drop[1], tot[2] - drop[2],
				      tot[3] - drop[3]);
		res = malloc(hl + hrest + body + 1);
		if (!res || hl >= sizeof(hdr)) {
			free(res);
			free(out);
			return text;
		}
		memcpy(res, hdr, hl);
		memcpy(res + hl, hdr_at, hrest);
		memcpy(res + hl + hrest, out, body);
		*len = hl + hrest + body;
		res[*len] = 0;
		pr_info("left heapctl's own buffers out of the profile: %" PRId64 " in use, %" PRId64
			" allocated", drop[0], drop[2]);
		free(out);
		free(text);
		return res;
	}
}

static int tc_prof_dump(struct hc_target *t, const char *out, bool *active, struct hc_err *err)
{
	uint64_t p = 0, ret;
	char *text = NULL;
	size_t len = 0;
	bool on = false;
	FILE *f;

	if (need_profiler(t, err) < 0)
		return -1;
	if (running(t, &on, err) < 0)
		goto end;
	*active = on;
	if (!on) {
		err_sethint(err, HC_E_PROF_OFF, 0,
			    "tcmalloc can start profiling now: heapctl prof on -p PID",
			    "the heap profiler of pid %d is not running", t->img.pid);
		goto end;
	}
	/* GetHeapProfile(): the text of a HeapProfilerDump(), malloc'ed in the target */
	if (call_fn(&t->eng, tc_of(t)->prof_get, NULL, 0, &p, NULL, NULL, err) < 0)
		goto end;
	if (!p) {
		err_set(err, HC_E_REMOTE, 0, "GetHeapProfile() returned NULL in pid %d", t->img.pid);
		goto end;
	}
	text = read_remote_str(t, p, MAX_PROFILE, &len, err);
	call_fn(&t->eng, tc_of(t)->free, &p, 1, &ret, NULL, NULL, err);
end:
	call_done(&t->eng, err);
	if (text && !err_isset(err)) {
		struct tc_frames fr = { tc_of(t)->prof_get, tc_of(t)->prof_get_end, call_ret_raddr(&t->eng),
					in_text, t };

		text = tc_profile_filter(text, &len, &fr);
		f = cred_out_fopen(out);
		if (!f) {
			err_errno(err, errno, "write %s", out);
			err->local = true;
		} else {
			bool ok = fwrite(text, 1, len, f) == len;
			int e = errno;

			/* fclose() always closes, even when it fails: never twice */
			if (fclose(f) != 0 && ok) {
				ok = false;
				e = errno;
			}
			if (!ok) {
				err_errno(err, e, "write %s", out);
				err->local = true;
			}
		}
	}
	free(text);
	return err_isset(err) ? -1 : 0;
}

static int tc_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	memset(v, 0, sizeof(*v));
	v->type = HC_T_SIZE;
	if (!name[0] || strlen(name) > 200)
		return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a tcmalloc property", name);
	get_num(t, name, 0, &v->u, NULL, err);
	return err_isset(err) ? -1 : 0;
}

static int tc_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_value *now, struct hc_err *err)
{
	uint64_t a[2], ret = 0;
	struct hc_value nv;
	bool found = false;

	if (!tc_of(t)->set_num)
		return err_set(err, HC_E_NO_SYM, 0, "MallocExtension_SetNumericProperty not found in %s",
			       tc_of(t)->obj->path);
	if (hc_value_parse(name, HC_T_SIZE, value, &nv, err) < 0)
		return -1;
	a[0] = call_strdup(&t->eng, name, err);
	a[1] = nv.u;
	if (!a[0]) {
		if (!err_isset(err))
			err_set(err, HC_E_INTERNAL, 0, "scratch space is full");
		goto end;
	}
	if (get_num(t, name, a[0], &old->u, NULL, err) < 0)
		goto end;
	old->type = HC_T_SIZE;
	if (call_fn(&t->eng, tc_of(t)->set_num, a, 2, &ret, NULL, NULL, err) < 0)
		goto end;
	if (!(ret & 0xff)) {
		err_set(err, HC_E_REMOTE, 0, "tcmalloc in pid %d refused to set '%s'", t->img.pid, name);
		goto end;
	}
	/* what tcmalloc holds now (it may round or clamp), in the same borrow */
	if (get_num(t, name, a[0], &now->u, &found, err) == 0 && found)
		now->type = HC_T_SIZE;
	else if (!err_isset(err))
		snprintf(now->note, sizeof(now->note),
			 "written, but reading it back failed: tcmalloc has no getter for '%s'",
			 name);
end:
	return err_isset(err) ? -1 : 0;
}

static int tc_info(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	static const char *const keys[] = {
		"tcmalloc.max_total_thread_cache_bytes",
		"tcmalloc.aggressive_memory_decommit",
		"tcmalloc.release_rate",
		"tcmalloc.heap_limit_mb",
	};

	memset(info, 0, sizeof(*info));
	info->prof_built = tc_of(t)->prof_start != 0;
	info->prof_enabled = info->prof_built; /* it can start at any time */
	version_of(t, info->version, sizeof(info->version));
	if (info->prof_built)
		running(t, &info->prof_active, err);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !err_isset(err); i++) {
		uint64_t v;
		bool found;

		if (get_num(t, keys[i], 0, &v, &found, err) == 0 && found)
			snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "%s=%" PRIu64,
				 keys[i], v);
	}
	return err_isset(err) ? -1 : 0;
}

const struct alloc_ops alloc_tcmalloc = {
	.name = "tcmalloc",
	.detect = tc_detect,
	.release = alloc_free_priv,
	.contains = tc_contains,
	.info = tc_info,
	.prof_get = tc_prof_get,
	.prof_set = tc_prof_set,
	.prof_dump = tc_prof_dump,
	.stats = tc_stats,
	.stats_print = tc_stats_print,
	.purge = tc_purge,
	.ctl_get = tc_ctl_get,
	.ctl_set = tc_ctl_set,
};
