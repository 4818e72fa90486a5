// SPDX-License-Identifier: MIT
/*
 * glibc malloc (ptmalloc2) driver.  glibc has no control namespace: stats
 * come from mallinfo2() (glibc >= 2.33; mallinfo() before, whose int fields
 * wrap past 2 GiB), the per-arena view from malloc_info()'s XML, purge is
 * malloc_trim(0), and the tunables are mallopt() parameters.
 *
 * malloc_info() writes to a FILE *.  heapctl opens no fd in the target, so
 * the FILE is an open_memstream() in the target's own memory: the XML is
 * read back through /proc/PID/mem and the buffer freed with the target's
 * free() before the thread is handed back.
 *
 * The driver detects only when libc's malloc is the one the program binds
 * to; a preloaded allocator that shadows it is not glibc's business.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <expat.h>

#include "alloc.h"
#include "alloc_glibc.h"
#include "call.h"
#include "libc.h"
#include "log.h"
#include "mem.h"
#include "procfs.h"
#include "image.h"

struct gl {
	struct obj *obj;
	uint64_t mallinfo2, mallinfo, malloc_trim, malloc_info, mallopt;
	uint64_t open_memstream, fclose, free, version;
	uint64_t main_arena; /* a static executable's own symbol (.symtab), or 0 */
};

static struct gl *gl_of(const struct hc_target *t)
{
	return t->drv.alloc_priv;
}

/* ---- mallopt parameters ------------------------------------------------------------ */

/*
 * <malloc.h> numbers, the environment variables and tunables glibc reads at
 * start, and the defaults documented in mallopt(3) for 64-bit targets.
 * glibc keeps the values in a private struct with no getter, so `get`
 * reports what the process started with.
 */
static const struct gl_param {
	const char *name;
	int param;
	const char *env, *tunable;
	const char *dflt;
	const char *what;
} params[] = {
	{ "M_ARENA_MAX", -8, "MALLOC_ARENA_MAX", "glibc.malloc.arena_max", "0",
	  "most arenas ever created (0: 8 per CPU); limits arena bloat" },
	{ "M_ARENA_TEST", -7, "MALLOC_ARENA_TEST", "glibc.malloc.arena_test", "8",
	  "arenas created before M_ARENA_MAX is checked" },
	{ "M_TRIM_THRESHOLD", -1, "MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold", "131072",
	  "free top of the main heap above this goes back to the OS (dynamic unless set)" },
	{ "M_TOP_PAD", -2, "MALLOC_TOP_PAD_", "glibc.malloc.top_pad", "131072",
	  "extra bytes asked of sbrk/mmap at each heap growth" },
	{ "M_MMAP_THRESHOLD", -3, "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold", "131072",
	  "requests at least this big get their own mmap (dynamic unless set)" },
	{ "M_MMAP_MAX", -4, "MALLOC_MMAP_MAX_", "glibc.malloc.mmap_max", "65536",
	  "most chunks served by mmap at once (0: never mmap)" },
	{ "M_MXFAST", 1, NULL, "glibc.malloc.mxfast", "128", "largest request served from fastbins" },
	{ "M_PERTURB", -6, "MALLOC_PERTURB_", "glibc.malloc.perturb", "0",
	  "fill freed/allocated memory with this byte (debugging)" },
	{ "M_CHECK_ACTION", -5, "MALLOC_CHECK_", "glibc.malloc.check", "3",
	  "what to do on heap corruption (only with the malloc debug library)" },
};

static const struct gl_param *param_of(const char *name)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (!strcasecmp(name, params[i].name) || !strcasecmp(name, params[i].name + 2))
			return &params[i];
	return NULL;
}

/*
 * NAME=VALUE in the target's initial environment env (procfs_environ()),
 * or in GLIBC_TUNABLES, which wins over the old variables.
 */
static bool env_value(const char *env, size_t envlen, const struct gl_param *p, char *out,
		      size_t len, const char **src)
{
	const char *tv = procfs_env_get(env, envlen, "GLIBC_TUNABLES");
	const char *v = p->env ? procfs_env_get(env, envlen, p->env) : NULL;

	if (tv && p->tunable && (tv = strstr(tv, p->tunable)) && tv[strlen(p->tunable)] == '=') {
		tv += strlen(p->tunable) + 1;
		snprintf(out, len, "%.*s", (int)strcspn(tv, ":"), tv);
		*src = "GLIBC_TUNABLES";
		return true;
	}
	if (!v)
		return false;
	snprintf(out, len, "%s", v);
	*src = p->env;
	return true;
}

/* ---- detection -------------------------------------------------------------------- */

/* libc's own free, open_memstream, fclose: from libc even when the executable is static. */
static uint64_t libc_fn(struct hc_target *t, struct obj *own, const char *name)
{
	uint64_t a = alloc_sym(own, name);

	for (size_t i = 0; !a && i < t->img.nobjs; i++) {
		struct obj *o = &t->img.objs[i];

		if (o->base && strstr(o->path, "/libc.so") && o->syms_loaded)
			a = alloc_sym(o, name);
	}
	return a;
}

static int gl_detect(struct hc_target *t, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	struct gl g = { 0 };

	(void)err;
	if (!own)
		return 0;
	g.obj = own;
	g.malloc_trim = alloc_sym(own, "malloc_trim");
	g.malloc_info = alloc_sym(own, "malloc_info");
	g.mallopt = alloc_sym(own, "mallopt");
	g.mallinfo2 = alloc_sym(own, "mallinfo2");
	g.mallinfo = alloc_sym(own, "mallinfo");
	/* tcmalloc and jemalloc export mallopt/mallinfo too, but never malloc_trim/malloc_info */
	if (!g.malloc_trim || !g.malloc_info || !g.mallopt || (!g.mallinfo2 && !g.mallinfo))
		return 0;
	g.open_memstream = libc_fn(t, own, "open_memstream");
	g.fclose = libc_fn(t, own, "fclose");
	g.free = alloc_sym(own, "free");
	g.version = libc_fn(t, own, "gnu_get_libc_version");
	g.main_arena = sym_data(own, "main_arena");
	if (alloc_found(t, own, "glibc", &g, sizeof(g), g.mallopt, g.malloc_info, err) < 0)
		return -1;
	pr_info("glibc: malloc_trim at 0x%" PRIx64 " in %s", g.malloc_trim, own->path);
	return 1;
}

/* ---- remote helpers (inside a session) ------------------------------------------- */

struct mi {
	uint64_t f[10]; /* arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost */
	bool legacy;    /* from mallinfo(): 32-bit fields */
};

static int remote_mallinfo(struct hc_target *t, struct mi *m, struct hc_err *err)
{
	struct gl *g = gl_of(t);
	uint64_t buf = call_scratch(&t->eng, 80, err), ret;

	memset(m, 0, sizeof(*m));
	if (!buf)
		return err_set(err, HC_E_INTERNAL, 0, "no scratch space for mallinfo");
	if (g->mallinfo2) {
		/* struct mallinfo2 (80 bytes) comes back through a hidden result pointer */
		if (call_fn_sret(&t->eng, g->mallinfo2, buf, NULL, 0, &ret, err) < 0 ||
		    call_read(&t->eng, buf, m->f, sizeof(m->f), err) < 0)
			return -1;
		return 0;
	}
	{
		int32_t f[10];

		if (call_fn_sret(&t->eng, g->mallinfo, buf, NULL, 0, &ret, err) < 0 ||
		    call_read(&t->eng, buf, f, sizeof(f), err) < 0)
			return -1;
		for (int i = 0; i < 10; i++)
			m->f[i] = (uint32_t)f[i];
		m->legacy = true;
	}
	return 0;
}

#define MAX_XML (64u << 20)

/* malloc_info(0, memstream) in the target; *xml is ours (malloc'ed, NUL-terminated). */
static int remote_malloc_info(struct hc_target *t, char **xml, size_t *len, struct hc_err *err)
{
	struct gl *g = gl_of(t);
	uint64_t cell, fp, ret, a[2], bufp = 0, size = 0;
	char *out;

	*xml = NULL;
	if (!g->open_memstream || !g->fclose || !g->free)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "'heapctl stats -p PID' gives mallinfo2's figures and the arena count",
				   "pid %d: %s has no open_memstream()%s, which malloc_info() needs to "
				   "write its XML into the target's memory (heapctl never has it write "
				   "to a file)", t->img.pid,
				   g->obj->is_exe ? "this static executable" : "its libc",
				   g->fclose && g->free ? "" : " (nor fclose() and free())");
	cell = call_scratch(&t->eng, 16, err);
	if (!cell)
		return err_set(err, HC_E_INTERNAL, 0, "no scratch space for malloc_info");
	a[0] = cell;
	a[1] = cell + 8;
	if (call_fn(&t->eng, g->open_memstream, a, 2, &fp, NULL, NULL, err) < 0)
		return -1;
	if (!fp)
		return err_set(err, HC_E_REMOTE, 0, "open_memstream() failed in pid %d", t->img.pid);
	a[0] = 0;
	a[1] = fp;
	if (call_fn(&t->eng, g->malloc_info, a, 2, &ret, NULL, NULL, err) < 0)
		return -1; /* the FILE leaks in the target, a few hundred bytes */
	a[0] = fp;
	if (call_fn(&t->eng, g->fclose, a, 1, &ret, NULL, NULL, err) < 0)
		return -1;
	if (call_read(&t->eng, cell, &bufp, 8, err) < 0 || call_read(&t->eng, cell + 8, &size, 8, err) < 0)
		return -1;
	if (!bufp)
		return err_set(err, HC_E_REMOTE, 0, "malloc_info() produced nothing in pid %d", t->img.pid);
	out = size <= MAX_XML ? malloc(size + 1) : NULL;
	if (out && call_read(&t->eng, bufp, out, size, err) < 0) {
		free(out);
		out = NULL;
	}
	/* the buffer is the target's own malloc'ed memory: give it back whatever happened */
	a[0] = bufp;
	call_fn(&t->eng, g->free, a, 1, &ret, NULL, NULL, err);
	if (!out) {
		if (!err_isset(err))
			err_set(err, HC_E_NOMEM, 0, "malloc_info() XML of %" PRIu64 " bytes", size);
		return -1;
	}
	if (err_isset(err)) {
		free(out);
		return -1;
	}
	out[size] = 0;
	*xml = out;
	*len = size;
	return 0;
}

/* ---- malloc_info XML -------------------------------------------------------------- */

struct xml_ctx {
	struct gl_xml *x;
	int depth;
	int heap; /* index into x->arena while inside <heap>, else -1 */
	bool in_heap;
	bool in_sizes;
	struct gl_arena cur; /* the <heap> being read, whether arena[] has room or not */
	uint64_t page;
};

uint64_t gl_trim_estimate(uint64_t size, uint64_t page)
{
	/*
	 * mtrim() frees from the first page boundary past the chunk header
	 * plus a struct malloc_chunk (48 bytes on 64-bit): half a page in on
	 * average.
	 */
	uint64_t skip = 48 + page / 2;

	return size > skip ? (size - skip) & ~(page - 1) : 0;
}

static uint64_t attr_u64(const XML_Char **at, const char *name)
{
	for (; at && at[0]; at += 2)
		if (!strcmp(at[0], name))
			return strtoull(at[1], NULL, 10);
	return 0;
}

static const char *attr_str(const XML_Char **at, const char *name)
{
	for (; at && at[0]; at += 2)
		if (!strcmp(at[0], name))
			return at[1];
	return "";
}

static void XMLCALL on_start(void *arg, const XML_Char *el, const XML_Char **at)
{
	struct xml_ctx *c = arg;
	struct gl_xml *x = c->x;
	struct gl_arena *a;
	const char *type;

	c->depth++;
	if (!strcmp(el, "malloc")) {
		x->seen_root = true;
		return;
	}
	if (!strcmp(el, "heap") && c->depth == 2) {
		c->heap = -1;
		if (x->narenas < GL_MAX_ARENAS)
			c->heap = (int)x->narenas;
		memset(&c->cur, 0, sizeof(c->cur));
		c->cur.nr = (unsigned)attr_u64(at, "nr");
		c->in_heap = true;
		x->narenas_total++;
		x->narenas = x->narenas < GL_MAX_ARENAS ? x->narenas + 1 : x->narenas;
		return;
	}
	if (!strcmp(el, "sizes")) {
		c->in_sizes = true;
		return;
	}
	if (c->in_sizes) {
		/* <size from to total count/> and <unsorted .../>: the free chunks, by size */
		uint64_t total = attr_u64(at, "total"), count = attr_u64(at, "count");

		if (c->in_heap && c->depth == 4 && count &&
		    (!strcmp(el, "size") || !strcmp(el, "unsorted"))) {
			c->cur.binned += total;
			c->cur.trim += count * gl_trim_estimate(total / count, c->page);
		}
		return;
	}
	/* <total>, <system>, <aspace>: in a heap (depth 3) or for the process (depth 2) */
	a = c->depth == 3 && c->in_heap ? &c->cur : c->depth == 2 ? &x->all : NULL;
	if (!a)
		return;
	type = attr_str(at, "type");
	if (!strcmp(el, "total")) {
		if (!strcmp(type, "fast"))
			a->fast = attr_u64(at, "size"), a->fast_n = attr_u64(at, "count");
		else if (!strcmp(type, "rest"))
			a->rest = attr_u64(at, "size"), a->rest_n = attr_u64(at, "count");
		else if (!strcmp(type, "mmap"))
			a->mmap = attr_u64(at, "size"), a->mmap_n = attr_u64(at, "count");
	} else if (!strcmp(el, "system")) {
		if (!strcmp(type, "current"))
			a->system = attr_u64(at, "size");
		else if (!strcmp(type, "max"))
			a->system_max = attr_u64(at, "size");
	} else if (!strcmp(el, "aspace")) {
		if (!strcmp(type, "total"))
			a->aspace = attr_u64(at, "size");
		else if (!strcmp(type, "mprotect"))
			a->aspace_mprotect = attr_u64(at, "size");
	}
}

static void XMLCALL on_end(void *arg, const XML_Char *el)
{
	struct xml_ctx *c = arg;

	if (!strcmp(el, "sizes")) {
		c->in_sizes = false;
	} else if (!strcmp(el, "heap") && c->depth == 2) {
		struct gl_xml *x = c->x;
		struct gl_arena *a = &c->cur;

		/* "rest" is the top chunk plus the binned chunks that are not fastbins' */
		if (a->nr == 0 && a->rest + a->fast > a->binned)
			a->trim += gl_trim_estimate(a->rest + a->fast - a->binned, c->page);
		x->trim += a->trim;
		if (a->nr != 0) {
			x->free_threads += a->rest + a->fast;
			x->trim_threads += a->trim;
		}
		if (c->heap >= 0)
			x->arena[c->heap] = *a;
		c->heap = -1;
		c->in_heap = false;
	}
	c->depth--;
}

int gl_xml_parse(const char *xml, size_t len, struct gl_xml *x, struct hc_err *err)
{
	long page = sysconf(_SC_PAGESIZE);
	struct xml_ctx c = { .x = x, .heap = -1, .page = page > 0 ? (uint64_t)page : 4096 };
	XML_Parser p;
	int ok;

	memset(x, 0, sizeof(*x));
	if (len > INT_MAX)
		return err_set(err, HC_E_FORMAT, 0, "malloc_info XML too large");
	p = XML_ParserCreate(NULL);
	if (!p)
		return err_set(err, HC_E_NOMEM, ENOMEM, "XML_ParserCreate");
	XML_SetUserData(p, &c);
	XML_SetElementHandler(p, on_start, on_end);
	ok = XML_Parse(p, xml, (int)len, 1) == XML_STATUS_OK;
	if (!ok)
		err_sethint(err, HC_E_FORMAT, 0, "see the XML with 'heapctl stats --full --raw'",
			    "malloc_info XML: %s at line %lu",
			    XML_ErrorString(XML_GetErrorCode(p)),
			    (unsigned long)XML_GetCurrentLineNumber(p));
	XML_ParserFree(p);
	if (ok && !x->seen_root)
		return err_set(err, HC_E_FORMAT, 0, "malloc_info XML has no <malloc> element");
	return ok ? 0 : -1;
}

/* ---- operations ------------------------------------------------------------------ */

static void version_of(struct hc_target *t, char *out, size_t len)
{
	struct gl *g = gl_of(t);
	struct hc_err e = { 0 };
	uint64_t p = 0;
	char v[32] = "";

	/* read, not called, when the process carries it: a static glibc has no gnu_get_libc_version() */
	if (libc_identify(&t->img)->kind == LIBC_GLIBC && libc_identify(&t->img)->version[0]) {
		snprintf(out, len, "%s", libc_identify(&t->img)->version);
		return;
	}
	snprintf(out, len, "(unknown version)");
	if (g->version && call_fn(&t->eng, g->version, NULL, 0, &p, NULL, NULL, &e) == 0 && p &&
	    call_read_str(&t->eng, p, v, sizeof(v), &e) == 0)
		snprintf(out, len, "%s", v);
}

/*
 * glibc's struct malloc_state (malloc/malloc.c, 2.27 and later, 64-bit):
 * mutex, flags, have_fastchunks (ints), fastbinsY[10], top, last_remainder,
 * bins[254], binmap[4], then next: the ring of arenas, main_arena first.
 */
#define GL_ARENA_NEXT 2160
#define GL_MAX_WALK 4096

/*
 * The number of arenas, read from the ring through next, for a process
 * without open_memstream() for malloc_info() (a static executable, whose
 * .symtab names main_arena).  Nothing is called: the ring lives in the
 * target's memory, read as it is; it must close on main_arena within
 * GL_MAX_WALK steps, or the count is not known (0).
 */
static unsigned arenas_walk(struct hc_target *t)
{
	uint64_t main = gl_of(t)->main_arena, a = main;
	unsigned n = 0;

	if (!main)
		return 0;
	do {
		struct hc_err e = { 0 };

		if (mem_read(t->img.pid, t->img.memfd, a + GL_ARENA_NEXT, &a, sizeof(a), &e) < 0 ||
		    !a || (a & 7))
			return 0;
		n++;
	} while (a != main && n < GL_MAX_WALK);
	return a == main ? n : 0;
}

static int gl_stats(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	struct gl_xml *x = NULL;
	char *xml = NULL;
	struct mi m;
	size_t len = 0;
	uint64_t trim = 0, free_threads = 0, trim_threads = 0;
	bool have_xml = false;

	snprintf(st->allocator, sizeof(st->allocator), "glibc");
	version_of(t, st->version, sizeof(st->version));
	if (remote_mallinfo(t, &m, err) < 0)
		goto end;
	/* the arena count needs malloc_info; without it (static binary) stats still work */
	if (gl_of(t)->open_memstream && remote_malloc_info(t, &xml, &len, err) < 0)
		goto end;
end:
	call_done(&t->eng, err);
	if (err_isset(err)) {
		free(xml);
		return -1;
	}
	if (xml) {
		struct hc_err e = { 0 };

		x = malloc(sizeof(*x));
		if (x && gl_xml_parse(xml, len, x, &e) == 0) {
			st->narenas = x->narenas_total;
			trim = x->trim;
			free_threads = x->free_threads;
			trim_threads = x->trim_threads;
			have_xml = true;
		} else {
			pr_warn("pid %d: %s", t->img.pid, e.msg);
		}
		free(x);
		free(xml);
	}
	if (!have_xml)
		st->narenas = arenas_walk(t);
	if (m.legacy)
		snprintf(st->warning, sizeof(st->warning),
			 "this glibc has no mallinfo2(): mallinfo()'s int fields wrap past 2 GiB");
	alloc_fig(st, "arena", m.f[0], "non-mmapped space from the OS (sbrk + arena heaps)");
	alloc_fig(st, "ordblks", m.f[1], "free chunks (count)");
	alloc_fig(st, "hblkhd", m.f[4], "space in mmapped chunks");
	alloc_fig(st, "uordblks", m.f[7], "in use: live bytes the program holds");
	alloc_fig(st, "fordblks", m.f[8], "free in the arenas (malloc_trim returns whole pages only)");
	alloc_fig(st, "keepcost", m.f[9], "releasable top of the main heap");
	alloc_fig(st, "fsmblks", m.f[6], "free in fastbins");
	if (have_xml) {
		alloc_fig(st, "trimmable", trim, "whole free pages malloc_trim can return (estimate)");
		alloc_fig(st, "thread_arenas_free", free_threads, "free in the thread arenas");
		alloc_fig(st, "thread_arenas_trimmable", trim_threads,
		    "of which malloc_trim can return (estimate)");
	}
	st->allocated = m.f[7] + m.f[4];
	st->mapped = m.f[0] + m.f[4];
	st->dirty = m.f[8];
	return 0;
}

static int gl_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			  struct hc_err *err)
{
	struct gl_xml *x;
	char *xml = NULL, line[256];
	size_t len = 0;
	bool raw = opts && strstr(opts, "raw");

	if (opts && !raw && *opts)
		return err_sethint(err, HC_E_USAGE, 0, "use --raw for malloc_info's XML",
				   "glibc takes no --opts '%s'", opts);
	remote_malloc_info(t, &xml, &len, err);
	call_done(&t->eng, err);
	if (err_isset(err)) {
		free(xml);
		return -1;
	}
	if (raw) {
		int r = sink(arg, xml, len);

		free(xml);
		return r < 0 ? err_set(err, HC_E_IO, errno, "writing the XML failed") : 0;
	}
	x = malloc(sizeof(*x));
	if (!x || gl_xml_parse(xml, len, x, err) < 0) {
		if (!x)
			err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		free(x);
		free(xml);
		return -1;
	}
	free(xml);
#define EMIT(...)                                                       \
	do {                                                            \
		snprintf(line, sizeof(line), __VA_ARGS__);              \
		if (sink(arg, line, strlen(line)) < 0)                  \
			goto io;                                        \
	} while (0)
	EMIT("glibc malloc_info, pid %d: %u arena%s\n", t->img.pid, x->narenas_total,
	     x->narenas_total == 1 ? "" : "s");
	EMIT("%-6s %14s %14s %14s %14s %14s\n", "arena", "free-in-heap", "free-fastbins", "system",
	     "system-max", "aspace");
	for (unsigned i = 0; i < x->narenas; i++) {
		const struct gl_arena *a = &x->arena[i];

		EMIT("%-6u %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
		     a->nr, a->rest, a->fast, a->system, a->system_max, a->aspace);
	}
	if (x->narenas < x->narenas_total)
		EMIT("(%u more arenas not listed)\n", x->narenas_total - x->narenas);
	EMIT("%-6s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", "total",
	     x->all.rest, x->all.fast, x->all.system, x->all.system_max, x->all.aspace);
	EMIT("mmap   %" PRIu64 " chunks, %" PRIu64 " bytes (outside the arenas)\n", x->all.mmap_n,
	     x->all.mmap);
#undef EMIT
	free(x);
	return 0;
io:
	free(x);
	return err_set(err, HC_E_IO, errno, "writing the statistics failed");
}

static int gl_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	uint64_t a = 0, ret;

	if (arena >= 0)
		return err_sethint(err, HC_E_USAGE, 0, "run 'heapctl purge' without --arena",
				   "glibc's malloc_trim() works on every arena at once");
	call_fn(&t->eng, gl_of(t)->malloc_trim, &a, 1, &ret, NULL, NULL, err);
	pr_info("malloc_trim(0) = %" PRIu64 " (1: memory was released)", ret);
	return err_isset(err) ? -1 : 0;
}

static const char *const mi_names[] = { "arena",  "ordblks", "smblks",   "hblks",    "hblkhd",
					"usmblks", "fsmblks", "uordblks", "fordblks", "keepcost" };

static int unknown_name(struct hc_target *t, const char *name, struct hc_err *err)
{
	return err_sethint(err, HC_E_NO_CTL, 0,
			   "glibc names: M_ARENA_MAX M_ARENA_TEST M_TRIM_THRESHOLD M_TOP_PAD "
			   "M_MMAP_THRESHOLD M_MMAP_MAX M_MXFAST M_PERTURB, or a mallinfo2 field "
			   "(arena uordblks fordblks keepcost ...)",
			   "'%s' is not a glibc malloc parameter (pid %d uses glibc malloc)", name,
			   t->img.pid);
}

/*
 * A parameter's value as the process started with it (env: its initial
 * environment); the caveat goes in v->note.
 */
static void param_value(const char *env, size_t envlen, const struct gl_param *p,
			struct hc_value *v)
{
	const char *src = NULL;
	char val[64], *end;
	long long n;

	memset(v, 0, sizeof(*v));
	/* glibc keeps these in a private struct with no getter: report the start value */
	if (env_value(env, envlen, p, val, sizeof(val), &src))
		snprintf(v->note, sizeof(v->note),
			 "from %s at start; a later mallopt() is not seen", src);
	else {
		snprintf(val, sizeof(val), "%s", p->dflt);
		snprintf(v->note, sizeof(v->note), "glibc's default; a later mallopt() is not seen");
	}
	errno = 0;
	n = strtoll(val, &end, 10);
	if (!errno && end != val && !*end && n >= INT_MIN && n <= INT_MAX) {
		v->type = HC_T_INT;
		v->i = n;
	} else {
		v->type = HC_T_STRING; /* as the environment spells it */
		snprintf(v->str, sizeof(v->str), "%s", val);
	}
}

static int gl_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
		      struct hc_err *err)
{
	const struct gl_param *p = param_of(name);

	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < sizeof(mi_names) / sizeof(mi_names[0]); i++) {
		struct mi m;

		if (strcmp(name, mi_names[i]))
			continue;
		if (remote_mallinfo(t, &m, err) == 0) {
			v->type = HC_T_SIZE;
			v->u = m.f[i];
		}
		return err_isset(err) ? -1 : 0;
	}
	if (!p)
		return unknown_name(t, name, err);
	{
		size_t len;
		char *env = procfs_environ(t->img.proc, &len);

		param_value(env, len, p, v);
		free(env);
	}
	return 0;
}

static int gl_ctl_set(struct hc_target *t, const char *name, const char *value,
		      struct hc_value *old, struct hc_value *now, struct hc_err *err)
{
	const struct gl_param *p = param_of(name);
	uint64_t a[2], ret = 0;
	struct hc_value v;

	(void)old; /* glibc has no getter: no old value */
	if (!p)
		return unknown_name(t, name, err);
	if (hc_value_parse(p->name, HC_T_INT, value, &v, err) < 0)
		return -1;
	a[0] = (uint64_t)(int64_t)p->param;
	a[1] = (uint64_t)v.i;
	if (call_fn(&t->eng, gl_of(t)->mallopt, a, 2, &ret, NULL, NULL, err) == 0 && (int)ret != 1)
		err_sethint(err, HC_E_REMOTE, 0, "see mallopt(3) for the range of each parameter",
			    "mallopt(%s, %lld) was refused by pid %d", p->name, (long long)v.i,
			    t->img.pid);
	if (err_isset(err))
		return -1;
	/* glibc has no getter: the value mallopt() accepted is the best there is */
	*now = v;
	snprintf(now->note, sizeof(now->note),
		 "glibc cannot be asked: this is the value mallopt() accepted");
	return 0;
}

/* "M_" or "" or "M_MMAP_": the mallopt parameters, as the process started with them. */
static int gl_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out,
		       size_t *n, char *skipped, size_t skipped_len, struct hc_err *err)
{
	const size_t np = sizeof(params) / sizeof(params[0]);
	size_t pl = strlen(prefix), len;
	char *env;

	(void)skipped;
	(void)skipped_len;
	*out = calloc(np, sizeof(**out));
	if (!*out)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	*n = 0;
	env = procfs_environ(t->img.proc, &len);
	for (size_t i = 0; i < np; i++) {
		if (strncasecmp(params[i].name, prefix, pl) &&
		    strncasecmp(params[i].name + 2, prefix, pl))
			continue;
		snprintf((*out)[*n].name, sizeof((*out)[*n].name), "%s", params[i].name);
		param_value(env, len, &params[i], &(*out)[(*n)++].v);
	}
	free(env);
	if (!*n) {
		free(*out);
		*out = NULL;
		return unknown_name(t, prefix, err);
	}
	return 0;
}

static int gl_info(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	size_t len;
	char *env;

	memset(info, 0, sizeof(*info));
	version_of(t, info->version, sizeof(info->version));
	if (call_done(&t->eng, err) < 0)
		return -1;
	env = procfs_environ(t->img.proc, &len);
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]) && info->nconf < 32; i++) {
		const char *src = NULL;
		char val[64];

		if (!env_value(env, len, &params[i], val, sizeof(val), &src))
			snprintf(val, sizeof(val), "%s", params[i].dflt);
		snprintf(info->conf[info->nconf++], sizeof(info->conf[0]), "%s=%s", params[i].name,
			 val);
	}
	free(env);
	return 0;
}

const struct alloc_ops alloc_glibc = {
	.name = "glibc",
	.detect = gl_detect,
	.release = alloc_free_priv,
	.info = gl_info,
	/* no profiler of its own: heapctl's sampler, or this hint */
	.no_prof_hint = "heapctl's sampler profiles it: 'heapctl prof on -p PID' without "
			"--sampler native; an allocator's own profiler needs a restart with jemalloc "
			"(MALLOC_CONF=prof:true) or tcmalloc (LD_PRELOAD=libtcmalloc.so.4)",
	.stats = gl_stats,
	.stats_print = gl_stats_print,
	.purge = gl_purge,
	.ctl_get = gl_ctl_get,
	.ctl_set = gl_ctl_set,
	.ctl_list = gl_ctl_list,
};
