// SPDX-License-Identifier: MIT
/*
 * parse.c: jemalloc heap profiles.
 *
 * The format (jemalloc(3), HEAP PROFILE FORMAT; unchanged from 4.x to 5.3):
 *
 *   heap_v2/524288                        sample period, bytes
 *     t*: 28106: 56637512 [0: 0]          totals: live objects: bytes [accum: since
 *                                         the profile started, freed or not; jemalloc
 *                                         writes it with opt.prof_accum, else 0: 0]
 *     t3: 352: 16777344 [0: 0] name       per thread, optionally named
 *   @ 0x7f..630 0x7f..d21 0x55..3a2       a backtrace, innermost frame first
 *     t*: 13: 6688 [0: 0]                 its counts, then per thread
 *     t3: 12: 6496 [0: 0]
 *
 *   MAPPED_LIBRARIES:
 *   555a7a10a000-555a7a10b000 r--p 00000000 fe:00 5308791  /usr/bin/x
 *
 * jemalloc 3.x wrote the older gperftools form, which is read too:
 *
 *   heap profile: 1: 4096 [ 1: 4096] @ heap_v2/524288
 *   1: 4096 [1: 4096] @ 0x4005d3 0x400612
 *
 * Counts are of sampled allocations.  jeprof un-biases each stack with
 * scale = 1 / (1 - exp(-(bytes/objects) / period)) applied to both numbers;
 * jemalloc 5.3 (opt.prof_unbias, on by default) writes numbers "re-biased"
 * so that this very formula yields its exact per-size-class estimate
 * (prof_do_unbias() in jemalloc's src/prof_data.c).  So one formula serves
 * every version, and heapctl's totals match jeprof's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prof_int.h"

/* jemalloc's PROF_BT_MAX is 128; be generous with other writers. */
#define MAX_FRAMES 4096
/* Larger files are refused rather than read: 1 GiB is ~10M stacks. */
#define MAX_FILE (1ull << 30)

enum algo { ALGO_NONE, ALGO_V1, ALGO_V2 };

struct parser {
	struct hc_prof *p;
	const char *name;
	unsigned lineno;
	enum algo algo;
	double adjust; /* v1: the mean interval (period / 2) */
	struct hc_err *err;
	bool warned_maps;
};

static int __printf(2, 3) perr(struct parser *ps, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(ps->err, HC_E_FORMAT, 0, "%s:%u: %s", ps->name, ps->lineno, msg);
}

static void pwarn(struct parser *ps, const char *what)
{
	ps->p->nwarnings++;
	pr_warn("%s:%u: %s", ps->name, ps->lineno, what);
}

void prof_unbias(uint64_t period, uint64_t objs, uint64_t bytes, double *o_objs, double *o_bytes)
{
	double scale = 1.0;

	/* jeprof leaves a stack alone when objects is 0; bytes 0 would divide by 0. */
	if (objs && bytes && period) {
		double ratio = ((double)bytes / (double)objs) / (double)period;

		scale = 1.0 / -prof_expm1(-ratio);
	}
	*o_objs = (double)objs * scale;
	*o_bytes = (double)bytes * scale;
}

/* jeprof's "remote-heap version 1": scale up when the mean size is under the interval. */
static void unbias_v1(double adjust, uint64_t objs, uint64_t bytes, double *o, double *b)
{
	double ratio;

	*o = (double)objs;
	*b = (double)bytes;
	if (!objs || !bytes || adjust <= 0)
		return;
	ratio = ((double)bytes / (double)objs) / adjust;
	if (ratio < 1) {
		*o /= ratio;
		*b /= ratio;
	}
}

static void unbias(struct parser *ps, uint64_t objs, uint64_t bytes, double *o, double *b)
{
	switch (ps->algo) {
	case ALGO_V2:
		prof_unbias(ps->p->period, objs, bytes, o, b);
		return;
	case ALGO_V1:
		unbias_v1(ps->adjust, objs, bytes, o, b);
		return;
	case ALGO_NONE:
		break;
	}
	*o = (double)objs;
	*b = (double)bytes;
}

/* ---- lexing ---------------------------------------------------------- */

static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* Decimal uint64; no sign, no overflow.  Returns the end, or NULL. */
static const char *parse_u64(struct parser *ps, const char *s, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = s;

	if (s < end && *s == '-') {
		perr(ps, "negative count%s", "");
		return NULL;
	}
	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10) {
			perr(ps, "number too large (over 2^64 - 1)%s", "");
			return NULL;
		}
		v = v * 10 + d;
		s++;
	}
	if (s == start) {
		perr(ps, "expected a number%s", "");
		return NULL;
	}
	*out = v;
	return s;
}

static const char *parse_hex(const char *s, const char *end, uint64_t *out, bool prefix)
{
	uint64_t v = 0;
	const char *start;

	if (prefix) {
		if (end - s < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
			return NULL;
		s += 2;
	}
	start = s;
	while (s < end) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (v >> 60)
			return NULL;
		v = v << 4 | d;
		s++;
	}
	if (s == start || s - start > 16)
		return NULL;
	*out = v;
	return s;
}

static const char *expect(const char *s, const char *end, char c)
{
	s = skip_blank(s, end);
	if (s >= end || *s != c)
		return NULL;
	return skip_blank(s + 1, end);
}

/* "A: B [C: D]" -> a, b, and the accumulated pair c, d (where not NULL). */
static const char *parse_counts4(struct parser *ps, const char *s, const char *end, uint64_t *a,
				 uint64_t *b, uint64_t *pc, uint64_t *pd)
{
	uint64_t c, d;

	s = skip_blank(s, end);
	if (!(s = parse_u64(ps, s, end, a)))
		return NULL;
	if (!(s = expect(s, end, ':'))) {
		perr(ps, "expected 'objects: bytes [objects: bytes]'%s", "");
		return NULL;
	}
	if (!(s = parse_u64(ps, s, end, b)))
		return NULL;
	if (!(s = expect(s, end, '['))) {
		perr(ps, "expected '[' after the byte count%s", "");
		return NULL;
	}
	if (!(s = parse_u64(ps, s, end, &c)))
		return NULL;
	if (!(s = expect(s, end, ':'))) {
		perr(ps, "expected ':' in the bracketed counts%s", "");
		return NULL;
	}
	if (!(s = parse_u64(ps, s, end, &d)))
		return NULL;
	s = skip_blank(s, end);
	if (s >= end || *s != ']') {
		perr(ps, "expected ']'%s", "");
		return NULL;
	}
	if (pc)
		*pc = c;
	if (pd)
		*pd = d;
	return s + 1;
}

static const char *parse_counts(struct parser *ps, const char *s, const char *end, uint64_t *a,
				uint64_t *b)
{
	return parse_counts4(ps, s, end, a, b, NULL, NULL);
}

/* ---- building -------------------------------------------------------- */

static int oom(struct parser *ps)
{
	return err_set(ps->err, HC_E_NOMEM, ENOMEM, "%s: out of memory reading the profile",
		       ps->name);
}

/* " 0x1 0x2 ..." up to end -> a new sample with zero counts. */
static int add_stack(struct parser *ps, const char *s, const char *end)
{
	struct hc_prof *p = ps->p;
	struct prof_sample *smp;
	size_t first = p->naddrs;

	for (;;) {
		uint64_t a;

		s = skip_blank(s, end);
		if (s >= end)
			break;
		if (!(s = parse_hex(s, end, &a, true)) || (s < end && *s != ' ' && *s != '\t'))
			return perr(ps, "bad address in backtrace (want 0x<hex> words)%s", "");
		if (p->naddrs - first >= MAX_FRAMES)
			return perr(ps, "backtrace longer than %s frames", "4096");
		if (prof_grow(&p->addrs, &p->addrs_cap, p->naddrs + 1, sizeof(*p->addrs)))
			return oom(ps);
		p->addrs[p->naddrs++] = a;
	}
	if (prof_grow(&p->samples, &p->samples_cap, p->nsamples + 1, sizeof(*p->samples)))
		return oom(ps);
	smp = &p->samples[p->nsamples++];
	memset(smp, 0, sizeof(*smp));
	smp->first = first;
	smp->naddrs = (uint32_t)(p->naddrs - first);
	return 0;
}

static void set_counts(struct parser *ps, struct prof_sample *smp, uint64_t objs, uint64_t bytes,
		       uint64_t aobjs, uint64_t abytes)
{
	smp->raw_objs = objs;
	smp->raw_bytes = bytes;
	unbias(ps, objs, bytes, &smp->objs, &smp->bytes);
	/* un-biased on its own, as jeprof does the accumulated pair */
	unbias(ps, aobjs, abytes, &smp->accum_objs, &smp->accum_bytes);
	if (aobjs || abytes)
		ps->p->has_accum = true;
}

/* "tN: A: B [C: D] name" or "t*: ..." (s points after the 't'). */
static int thread_line(struct parser *ps, const char *s, const char *end, bool in_stack,
		       bool *star)
{
	struct hc_prof *p = ps->p;
	uint64_t uid = 0, objs, bytes, aobjs, abytes;
	bool is_star = s < end && *s == '*';

	if (is_star)
		s++;
	else if (!(s = parse_u64(ps, s, end, &uid)))
		return -1;
	if (s >= end || *s != ':')
		return perr(ps, "expected ':' after the thread id%s", "");
	if (!(s = parse_counts4(ps, s + 1, end, &objs, &bytes, &aobjs, &abytes)))
		return -1;
	*star = is_star;
	if (in_stack) {
		if (is_star)
			set_counts(ps, &p->samples[p->nsamples - 1], objs, bytes, aobjs, abytes);
		s = skip_blank(s, end);
		if (s < end)
			return perr(ps, "unexpected text after the counts%s", "");
		return 0;
	}
	if (!is_star) {
		struct prof_thread *t;

		if (prof_grow(&p->threads, &p->threads_cap, p->nthreads + 1, sizeof(*p->threads)))
			return oom(ps);
		t = &p->threads[p->nthreads++];
		memset(t, 0, sizeof(*t));
		t->uid = uid;
		unbias(ps, objs, bytes, &t->objs, &t->bytes);
		s = skip_blank(s, end);
		if (s < end) {
			uint32_t id = strtab_intern(&p->strs, s, (size_t)(end - s));

			if (id == UINT32_MAX)
				return oom(ps);
			t->name = p->strs.str[id];
		}
	}
	return 0;
}

/* One /proc/PID/maps line.  Unparsable lines are skipped with one warning. */
static int maps_line(struct parser *ps, const char *s, const char *end)
{
	struct hc_prof *p = ps->p;
	struct prof_map m;
	uint64_t ino;
	const char *path;
	size_t plen;
	uint32_t id;

	memset(&m, 0, sizeof(m));
	s = skip_blank(s, end);
	if (s >= end)
		return 0;
	if (!(s = parse_hex(s, end, &m.start, false)) || s >= end || *s != '-' ||
	    !(s = parse_hex(s + 1, end, &m.end, false)) || m.end < m.start)
		goto bad;
	s = skip_blank(s, end);
	if (end - s < 4)
		goto bad;
	memcpy(m.perm, s, 4);
	s = skip_blank(s + 4, end);
	if (!(s = parse_hex(s, end, &m.offset, false)))
		goto bad;
	s = skip_blank(s, end);
	while (s < end && *s != ' ' && *s != '\t') /* dev */
		s++;
	s = skip_blank(s, end);
	if (!(s = parse_hex(s, end, &ino, false)))
		goto bad;
	path = skip_blank(s, end);
	plen = (size_t)(end - path);
	while (plen && (path[plen - 1] == ' ' || path[plen - 1] == '\t'))
		plen--;
	if (plen > 10 && !memcmp(path + plen - 10, " (deleted)", 10)) {
		m.deleted = true;
		plen -= 10;
	}
	/* Only file-backed mappings name code; [vdso], [stack] and anon are kept out. */
	if (!plen || path[0] != '/')
		return 0;
	id = strtab_intern(&p->strs, path, plen);
	if (id == UINT32_MAX)
		return oom(ps);
	m.path = p->strs.str[id];
	if (prof_grow(&p->maps, &p->maps_cap, p->nmaps + 1, sizeof(*p->maps)))
		return oom(ps);
	p->maps[p->nmaps++] = m;
	return 0;
bad:
	if (!ps->warned_maps) {
		ps->warned_maps = true;
		pwarn(ps, "unreadable line in MAPPED_LIBRARIES, skipped (and any like it)");
	}
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct prof_map *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

const struct prof_map *prof_map_find(const struct hc_prof *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	/* Last map with start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

/* "heap_v2/N" or "heap profile: ... @ heap_v2/N" (and the other legacy tags). */
static int header(struct parser *ps, const char *s, const char *end)
{
	struct hc_prof *p = ps->p;
	uint64_t period = 0, a, b;
	const char *tag;

	if (end - s >= 8 && !memcmp(s, "heap_v2/", 8)) {
		if (!(s = parse_u64(ps, s + 8, end, &period)))
			return -1;
		if (skip_blank(s, end) != end)
			return perr(ps, "unexpected text after the sample period%s", "");
		if (!period)
			return perr(ps, "sample period 0%s", "");
		p->version = 2;
		p->period = period;
		ps->algo = ALGO_V2;
		return 0;
	}
	if (end - s < 13 || memcmp(s, "heap profile:", 13))
		return err_sethint(ps->err, HC_E_FORMAT, 0,
				   "a jemalloc profile starts with 'heap_v2/PERIOD'; see jemalloc(3),"
				   " HEAP PROFILE FORMAT",
				   "%s: not a jemalloc heap profile", ps->name);
	if (!(s = parse_counts(ps, s + 13, end, &a, &b)))
		return -1;
	p->version = 1;
	s = skip_blank(s, end);
	if (s < end && *s == '@') {
		size_t tlen;

		tag = skip_blank(s + 1, end);
		s = tag;
		while (s < end && *s != '/' && *s != ' ' && *s != '\t')
			s++;
		tlen = (size_t)(s - tag);
		if (s < end && *s == '/' && !(s = parse_u64(ps, s + 1, end, &period)))
			return -1;
		/* jeprof: "_v2" is Poisson sampling, "heapprofile" or no "heap" is exact. */
		if (memmem(tag, tlen, "_v2", 3)) {
			ps->algo = ALGO_V2;
			p->period = period ? period : 524288;
		} else if ((tlen == 11 && !memcmp(tag, "heapprofile", 11)) ||
			   !memmem(tag, tlen, "heap", 4)) {
			ps->algo = ALGO_NONE;
			p->period = period;
		} else {
			ps->algo = ALGO_V1;
			p->period = period ? period : 262144;
			ps->adjust = (double)p->period / 2;
		}
	} else if (a == b) {
		/* No tag: jeprof's guess for remote-heap v1 when inuse == total. */
		ps->algo = ALGO_V1;
		p->period = 262144;
		ps->adjust = 131072;
	}
	return 0;
}

/* "A: B [C: D] @ 0x.. 0x.." (legacy form). */
static int legacy_line(struct parser *ps, const char *s, const char *end)
{
	struct hc_prof *p = ps->p;
	uint64_t objs, bytes, aobjs, abytes;

	if (!(s = parse_counts4(ps, s, end, &objs, &bytes, &aobjs, &abytes)))
		return -1;
	s = skip_blank(s, end);
	if (s >= end || *s != '@')
		return perr(ps, "expected '@' and a backtrace%s", "");
	if (add_stack(ps, s + 1, end))
		return -1;
	set_counts(ps, &p->samples[p->nsamples - 1], objs, bytes, aobjs, abytes);
	return 0;
}

enum state { S_HEADER, S_STACK_COUNTS, S_STACK_THREADS, S_MAPS };

static int parse(struct parser *ps, const char *buf, size_t len)
{
	struct hc_prof *p = ps->p;
	const char *s = buf, *end = buf + len;
	enum state st = S_HEADER;

	if (memchr(buf, '\0', len))
		return err_sethint(ps->err, HC_E_FORMAT, 0,
				   "heap profiles are text; make one with 'heapctl dump'",
				   "%s: binary data, not a heap profile", ps->name);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end, *t;
		bool star = false;

		ps->lineno++;
		if (!nl && ps->lineno > 1) {
			/* A last line without its newline: the writer stopped mid-line. */
			p->truncated = true;
			pwarn(ps, "the file ends mid-line (truncated?); the last line is ignored");
			break;
		}
		while (le > s && (le[-1] == '\r'))
			le--;
		if (ps->lineno == 1) {
			if (header(ps, s, le))
				return -1;
			goto next;
		}
		if (st == S_MAPS) {
			if (maps_line(ps, s, le))
				return -1;
			goto next;
		}
		t = skip_blank(s, le);
		if (t == le)
			goto next;
		if (le - t >= 17 && !memcmp(t, "MAPPED_LIBRARIES:", 17)) {
			if (st == S_STACK_COUNTS)
				return perr(ps, "backtrace without a 't*:' line before %s",
					    "MAPPED_LIBRARIES");
			p->has_maps = true;
			st = S_MAPS;
			goto next;
		}
		if (le - t >= 21 && !memcmp(t, "--- Memory map: ---", 19)) {
			p->has_maps = true;
			st = S_MAPS;
			goto next;
		}
		if (p->version == 1) {
			if (legacy_line(ps, t, le))
				return -1;
			goto next;
		}
		if (*t == '@') {
			if (st == S_STACK_COUNTS)
				return perr(ps, "backtrace without a 't*:' line%s", "");
			if (add_stack(ps, t + 1, le))
				return -1;
			st = S_STACK_COUNTS;
			goto next;
		}
		if (*t == 't') {
			bool in_stack = st != S_HEADER;

			if (thread_line(ps, t + 1, le, in_stack, &star))
				return -1;
			if (st == S_STACK_COUNTS && !star)
				return perr(ps, "expected the 't*:' line first%s", "");
			if (st == S_STACK_COUNTS)
				st = S_STACK_THREADS;
			goto next;
		}
		return perr(ps, "unexpected line (want '@ 0x...', 't*: ...' or %s)",
			    "'MAPPED_LIBRARIES:'");
next:
		if (!nl)
			break;
		s = nl + 1;
	}
	if (ps->lineno == 0 || p->version == 0)
		return err_set(ps->err, HC_E_FORMAT, 0, "%s: empty file", ps->name);
	if (st == S_STACK_COUNTS) {
		/* The dump stopped right after an "@" line: drop that stack. */
		p->nsamples--;
		p->naddrs = p->samples[p->nsamples].first;
		if (!p->truncated) {
			p->truncated = true;
			pwarn(ps, "the last backtrace has no counts (truncated?); it is ignored");
		}
	}
	if (!p->has_maps) {
		p->truncated = true;
		pwarn(ps, "no MAPPED_LIBRARIES section (truncated file?): frames are shown as "
			  "raw addresses");
	}
	if (p->nmaps)
		qsort(p->maps, p->nmaps, sizeof(*p->maps), cmp_map);
	return 0;
}

struct hc_prof *hc_prof_parse(const char *buf, size_t len, const char *name, struct hc_err *err)
{
	struct parser ps;
	struct hc_prof *p;
	uint32_t id;

	p = calloc(1, sizeof(*p));
	if (!p) {
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		return NULL;
	}
	memset(&ps, 0, sizeof(ps));
	ps.p = p;
	ps.name = name ? name : "profile";
	ps.err = err;
	id = strtab_intern(&p->strs, ps.name, strlen(ps.name));
	if (id == UINT32_MAX) {
		oom(&ps);
		hc_prof_free(p);
		return NULL;
	}
	p->name = p->strs.str[id];
	ps.name = p->name;
	if (parse(&ps, buf ? buf : "", buf ? len : 0)) {
		hc_prof_free(p);
		return NULL;
	}
	return p;
}

static char *read_all(const char *path, size_t *len, struct hc_err *err)
{
	bool is_stdin = !strcmp(path, "-");
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL;
	int fd;

	fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_sethint(err, errno == ENOENT ? HC_E_IO : err_code_of_errno(errno), errno,
			    "check the path; 'heapctl dump -p PID -o FILE' writes one",
			    "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (!is_stdin) {
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			err_set(err, HC_E_IO, EISDIR, "%s is a directory", path);
			goto fail;
		}
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > MAX_FILE) {
			err_set(err, HC_E_FORMAT, 0, "%s is larger than 1 GiB; not a heap profile?",
				path);
			goto fail;
		}
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			cap = (size_t)st.st_size + 1;
	}
	for (;;) {
		ssize_t r;

		if (prof_grow(&buf, &cap, n + 4096, 1) || (!buf && !(buf = malloc(cap)))) {
			err_set(err, HC_E_NOMEM, ENOMEM, "out of memory reading %s", path);
			goto fail;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_set(err, HC_E_IO, errno, "reading %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > MAX_FILE) {
			err_set(err, HC_E_FORMAT, 0, "%s is larger than 1 GiB; not a heap profile?",
				path);
			goto fail;
		}
	}
	if (!is_stdin)
		close(fd);
	*len = n;
	return buf;
fail:
	free(buf);
	if (!is_stdin)
		close(fd);
	return NULL;
}

struct hc_prof *hc_prof_load(const char *path, struct hc_err *err)
{
	struct hc_prof *p;
	size_t len = 0;
	char *buf;

	buf = read_all(path, &len, err);
	if (!buf)
		return NULL;
	p = hc_prof_parse(buf, len, strcmp(path, "-") ? path : "<stdin>", err);
	free(buf);
	return p;
}

void hc_prof_free(struct hc_prof *p)
{
	if (!p)
		return;
	free(p->addrs);
	free(p->samples);
	free(p->maps);
	free(p->threads);
	strtab_free(&p->strs);
	free(p);
}

void hc_prof_info(const struct hc_prof *p, struct hc_prof_info *info)
{
	size_t i;

	memset(info, 0, sizeof(*info));
	info->period = p->period;
	info->nstacks = p->nsamples;
	info->nmaps = p->nmaps;
	info->nthreads = p->nthreads;
	info->has_maps = p->has_maps;
	info->truncated = p->truncated;
	info->nwarnings = p->nwarnings;
	for (i = 0; i < p->nsamples; i++) {
		info->objects += p->samples[i].objs;
		info->bytes += p->samples[i].bytes;
		info->samples += (double)p->samples[i].raw_objs;
	}
}
