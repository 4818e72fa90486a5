/* SPDX-License-Identifier: MIT */
/*
 * prof_int.h: what the profile modules share.  Pure code: no ptrace here.
 *
 *   parse.c      heap_v2 text -> struct hc_prof (samples, maps, threads)
 *   symbolize.c  address -> object, ELF address, inline chain of names (libdw)
 *   demangle.c   C++ (libstdc++'s demangler, loaded at run time) and Rust
 *   report.c     samples -> merged symbolized stacks, --base differences
 *   out_*.c      folded, svg, pprof (+ pb.c, a protobuf wire encoder), text, json
 *   writers.c    format names -> writers: hc_report_write(), the only caller of out_*()
 *   util.c       buffers, interning, hash maps, exp without libm
 */
#ifndef HC_PROF_INT_H
#define HC_PROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <heapctl/prof.h>

#include "err.h"
#include "log.h"

/* ---- util.c ------------------------------------------------------------ */

/* A growable byte buffer; oom is sticky so callers check once at the end. */
struct pbuf {
	char *p;
	size_t len, cap;
	bool oom;
};
void pbuf_add(struct pbuf *b, const void *data, size_t len);
void pbuf_puts(struct pbuf *b, const char *s);
void pbuf_printf(struct pbuf *b, const char *fmt, ...) __printf(2, 3);
void pbuf_free(struct pbuf *b);

/* Grow *arr (of elem-sized items) to hold at least n; 0 or -1 on overflow/oom. */
int prof_grow(void *arr, size_t *cap, size_t n, size_t elem);

/* Interned strings: equal strings get the same id and pointer. */
struct strtab {
	char **str;      /* id -> string */
	uint32_t *hash;  /* id -> hash */
	size_t n, cap, hcap;
	uint32_t *slots; /* open addressing, id + 1, 0 empty */
	size_t nslots;
	bool oom;
};
/* Returns the id, or UINT32_MAX (and oom set) on failure. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t len);
uint32_t strtab_find(const struct strtab *t, const char *s, size_t len);
void strtab_free(struct strtab *t);

/* uint64 key -> uint32 value. */
struct u64map {
	uint64_t *keys;
	uint32_t *vals; /* value + 1, 0 empty */
	size_t n, nslots;
};
int u64map_put(struct u64map *m, uint64_t key, uint32_t val);
bool u64map_get(const struct u64map *m, uint64_t key, uint32_t *val);
void u64map_free(struct u64map *m);

uint32_t prof_hash(const void *data, size_t len, uint32_t seed);
/* sqrt(x), 0 for x <= 0; heapctl does not link libm. */
double prof_sqrt(double x);
/* exp(x) - 1 to ~1 ulp; heapctl does not link libm. */
double prof_expm1(double x);
/* Round to the nearest integer, halves away from zero; clamped to int64. */
int64_t prof_round(double v);

/* ---- parse.c --------------------------------------------------------- */

struct prof_map {
	uint64_t start, end, offset;
	char perm[5];
	const char *path; /* interned in hc_prof.strs; "" for anonymous */
	bool deleted;     /* " (deleted)" was stripped from the path */
};

struct prof_sample {
	size_t first;      /* into hc_prof.addrs, innermost frame first */
	uint32_t naddrs;
	uint64_t raw_objs, raw_bytes; /* as written */
	double objs, bytes;           /* un-biased */
	double accum_objs, accum_bytes; /* the accumulated pair, un-biased (0 if not kept) */
};

struct prof_thread {
	uint64_t uid;
	const char *name; /* or NULL */
	double objs, bytes;
};

struct hc_prof {
	const char *name;
	uint64_t period;
	int version; /* 2: heap_v2 with t*: lines; 1: "heap profile:" lines */
	uint64_t *addrs;
	size_t naddrs, addrs_cap;
	struct prof_sample *samples;
	size_t nsamples, samples_cap;
	struct prof_map *maps; /* sorted by start */
	size_t nmaps, maps_cap;
	struct prof_thread *threads;
	size_t nthreads, threads_cap;
	struct strtab strs;
	bool has_maps, truncated;
	bool has_accum; /* some stack's accumulated pair is not 0: 0 */
	unsigned nwarnings;
};

/* Un-bias one (objects, bytes) pair the way jeprof does (heap_v2). */
void prof_unbias(uint64_t period, uint64_t objs, uint64_t bytes, double *o_objs,
		 double *o_bytes);
/* The mapping that holds addr, or NULL. */
const struct prof_map *prof_map_find(const struct hc_prof *p, uint64_t addr);

/* ---- demangle.c ------------------------------------------------------ */

/*
 * Demangle a C++ (_Z...) or Rust (legacy _ZN...17h<hash>E, v0 _R...) name,
 * without the parameter list.  Returns a malloc'ed string, or NULL if name
 * is not mangled (or the demangler is unavailable).
 */
char *prof_demangle(const char *name);
/* rust_v0.c: "_R..." names; malloc'ed, or NULL if not valid v0. */
char *prof_demangle_rust_v0(const char *name);

/* ---- symbolize.c ----------------------------------------------------- */

struct psym;

struct psym_frame {
	const char *func; /* interned; NULL if unknown */
	const char *file; /* interned; NULL if unknown */
	unsigned line;
};

/* One resolved address. */
struct psym_loc {
	uint64_t addr;      /* as in the profile */
	int32_t obj;        /* index in psym objects, or -1 */
	uint64_t rel;       /* ELF address of addr (not minus one) */
	uint32_t first, n;  /* frames, innermost first */
	bool resolved;      /* at least one name */
};

struct psym_obj_info {
	const char *path;     /* as the profile names it */
	const char *found;    /* the file used, or NULL */
	const char *build_id; /* hex, or NULL */
	uint64_t start, limit, offset; /* first mapping of this object */
	bool is_alloc;        /* the allocator's shared object */
	bool has_dwarf;
};

struct psym *psym_new(const struct hc_report_opts *o, struct strtab *strs);
void psym_free(struct psym *s);
/* Resolve addr of profile p; returns the location index or -1 (oom). */
int32_t psym_resolve(struct psym *s, const struct hc_prof *p, uint64_t addr);
const struct psym_loc *psym_loc(const struct psym *s, int32_t idx);
const struct psym_frame *psym_frames(const struct psym *s, const struct psym_loc *l);
size_t psym_nobjs(const struct psym *s);
void psym_obj(const struct psym *s, int32_t idx, struct psym_obj_info *info);
size_t psym_nlocs(const struct psym *s);
size_t psym_nmissing(const struct psym *s);

/* ---- report.c -------------------------------------------------------- */

/* A merged stack: frames root first as ids in hc_report.strs (labels). */
struct rstack {
	size_t first;   /* into hc_report.frames */
	uint32_t n;
	double v[2][2]; /* [new, base][objects, bytes] */
	double acc[2][2]; /* the same of the accumulated pair */
	double raw[2];  /* [new, base]: sampled objects, as the profile wrote them */
	int32_t rep;    /* a raw sample standing for it (pprof without base), or -1 */
};

/* A raw sample after symbolization: locations root first. */
struct rsample {
	size_t first;   /* into hc_report.locs */
	uint32_t n;
	double objs, bytes;
	double accum_objs, accum_bytes;
	bool base;
};

struct hc_report {
	const struct hc_prof *prof, *base;
	struct hc_report_opts o;
	struct strtab strs; /* names, files, labels */
	struct psym *sym;
	uint32_t *frames; /* label ids */
	size_t nframes, frames_cap;
	struct rstack *stacks;
	size_t nstacks, stacks_cap;
	int32_t *locs;    /* psym location indices */
	size_t nlocs, locs_cap;
	struct rsample *samples;
	size_t nsamples, samples_cap;
	struct hc_report_totals tot;
};

/* The weight a writer shows for stack s: new - base, objects or bytes. */
double report_delta(const struct hc_report *r, const struct rstack *s, bool objects);
const char *report_label(const struct hc_report *r, uint32_t id);
/* Is a frame of this (demangled) name the allocator's, to be dropped? */
bool report_alloc_frame(const char *name);
/*
 * The weights folded/svg show, as non-negative integers: new (no base),
 * growth, or shrinkage.  Returns a malloc'ed array of nstacks, or NULL.
 */
uint64_t *report_weights(const struct hc_report *r, const struct hc_write_opts *w);
/* Stack indices in label order (root first, frame by frame); malloc'ed, or NULL. */
uint32_t *report_sorted_stacks(const struct hc_report *r);

/* ---- out_*.c: called from writers.c only ----------------------------- */

/*
 * A writer: the built report r to f as one format.  Returns 0, -1 if a
 * write failed (err may already say why) or -2 out of memory.
 */
typedef int out_fn(struct hc_report *r, const struct hc_write_opts *w, FILE *f,
		   struct hc_err *err);
out_fn out_folded, out_svg, out_pprof, out_text, out_json;
int out_json_top(struct hc_report *r, const struct hc_write_opts *w, FILE *f);

/* ---- pb.c: protobuf wire format ---------------------------------------- */

void pb_varint(struct pbuf *b, uint64_t v);
void pb_key(struct pbuf *b, unsigned field, unsigned wiretype);
void pb_uint(struct pbuf *b, unsigned field, uint64_t v);  /* skipped if 0 */
void pb_int(struct pbuf *b, unsigned field, int64_t v);    /* skipped if 0 */
void pb_bytes(struct pbuf *b, unsigned field, const void *data, size_t len);
void pb_str(struct pbuf *b, unsigned field, const char *s); /* always written */
/* Packed repeated varints (int64 values as two's complement). */
void pb_packed(struct pbuf *b, unsigned field, const uint64_t *v, size_t n);
/* gzip (RFC 1952) in -> out; 0 or -1. */
int pb_gzip(const void *in, size_t len, struct pbuf *out);

#endif
