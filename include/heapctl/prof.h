/* SPDX-License-Identifier: MIT */
/*
 * heapctl/prof.h: read jemalloc heap profiles, name their code, render them.
 *
 * Pure code: nothing here touches a process.  A profile is parsed into a
 * struct hc_prof (hc_prof_load, hc_prof_parse), symbolized and merged into
 * a struct hc_report (hc_report_build), optionally against a base profile
 * (--base: what grew), and written as folded stacks, an SVG flamegraph, a
 * gzipped pprof profile.proto, a jeprof-like text table or JSON
 * (hc_report_write).
 *
 * Errors follow heapctl.h: caller-owned struct hc_err last, 0/-1 or NULL,
 * the first failure wins.  Problems that still leave a usable answer (a
 * truncated file, a missing or mismatched binary) are logged as warnings
 * through hc_log_set()'s sink and counted in the report.
 *
 * Thread safety: objects are used by one thread at a time; distinct
 * objects may be used concurrently, except that the C++ demangler is
 * loaded once per process (dlopen of libstdc++, if present).
 */
#ifndef HEAPCTL_PROF_H
#define HEAPCTL_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <heapctl/heapctl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed heap profile (jemalloc heap_v2, 4.x to 5.3, or the older "heap profile:" form). */
struct hc_prof;

/*
 * Parse len bytes of profile text.  name is used in messages only.  The
 * counts are un-biased the way jeprof does (see docs/report.md).  Fails with
 * HC_E_FORMAT on anything that is not a heap profile, HC_E_NOMEM.  Free with
 * hc_prof_free().
 */
HC_API HC_MUST_CHECK struct hc_prof *hc_prof_parse(const char *buf, size_t len, const char *name,
						   struct hc_err *err);
/* Read and parse a file ("-" is stdin). */
HC_API HC_MUST_CHECK struct hc_prof *hc_prof_load(const char *path, struct hc_err *err);
HC_API void hc_prof_free(struct hc_prof *p);

/* Facts about a parsed profile. */
struct hc_prof_info {
	uint64_t period;      /* mean bytes between samples (2^lg_prof_sample) */
	size_t nstacks;       /* "@" backtraces */
	size_t nmaps;         /* MAPPED_LIBRARIES lines with a file */
	size_t nthreads;      /* per-thread summary lines */
	double objects;       /* un-biased live objects, summed over the stacks */
	double bytes;         /* un-biased live bytes, summed over the stacks */
	double samples;       /* sampled objects as written, before un-biasing */
	bool has_maps;        /* a MAPPED_LIBRARIES section was found */
	bool truncated;       /* the file ended early; what was read is kept */
	unsigned nwarnings;
};
HC_API void hc_prof_info(const struct hc_prof *p, struct hc_prof_info *info);

enum hc_report_format {
	HC_FMT_FOLDED, /* "root;...;leaf WEIGHT" lines (flamegraph.pl, inferno, speedscope) */
	HC_FMT_SVG,    /* self-contained interactive flamegraph */
	HC_FMT_PPROF,  /* gzipped profile.proto */
	HC_FMT_TEXT,   /* top-N table like jeprof --text */
	HC_FMT_JSON,
};

struct hc_report_opts {
	pid_t pid;           /* > 0: also find files through /proc/PID/{map_files,root} */
	const char *sysroot; /* or NULL: look for files (and debug files) under it first */
	/* or NULL: a debug file (or unstripped build), used for the object of its build-id */
	const char *debug_file;
	bool lines;          /* frames carry file:line */
	bool no_inline;      /* do not expand inlined frames */
	bool keep_alloc;     /* keep the allocator's own frames (default: drop them) */
};

/* Symbolized, merged stacks of one profile, or of new minus base. */
struct hc_report;

/*
 * Symbolize prof (and base, if not NULL) and merge their stacks.  With a
 * base, stacks are matched by their symbolized frames, so address-space
 * layout changes between the two dumps do not matter.  The profiles must
 * outlive the report.  Fails with HC_E_NOMEM only: missing files and
 * unresolvable addresses degrade to "object+0xoffset" frames with a warning.
 */
HC_API HC_MUST_CHECK struct hc_report *hc_report_build(const struct hc_prof *prof,
						       const struct hc_prof *base,
						       const struct hc_report_opts *o,
						       struct hc_err *err);
HC_API void hc_report_free(struct hc_report *r);

struct hc_write_opts {
	bool objects;      /* weigh by live objects instead of bytes */
	bool shrink;       /* with a base: folded/svg show what shrank, not what grew */
	unsigned top;      /* text: rows per table (0: 25) */
	const char *title; /* svg: title line (NULL: a default) */
	unsigned width;    /* svg: image width in pixels (0: 1200) */
	bool grow_only;    /* text with a base: leave out the "Shrank" table */
	/*
	 * With a base: the seconds between the two profiles.  Text and the
	 * JSON summary then give each growing function's rate and its 95%
	 * range (hc_growth_range()).
	 */
	double seconds;
	/*
	 * pprof: lay the profile out as Go's /debug/pprof/heap does, sample
	 * types alloc_objects, alloc_space, inuse_objects, inuse_space (the
	 * alloc pair: what was sampled since the profile started, freed or
	 * not, where the profile has it: jemalloc with opt.prof_accum,
	 * heapctl's sampler; else 0), so that tools made for Go's endpoint
	 * (Parca, Pyroscope) read it as a heap; a profile that has the alloc
	 * pair is always written so
	 */
	bool go_heap;
	/* with go_heap: alloc_space the default sample type, as in Go's /debug/pprof/allocs */
	bool go_allocs;
};

/*
 * Write the report to out.  Folded and SVG never carry negative weights:
 * with a base they show growth (or shrinkage with shrink); text shows both;
 * pprof and JSON carry the signed difference.  Fails with HC_E_IO if a
 * write fails.
 */
HC_API HC_MUST_CHECK int hc_report_write(struct hc_report *r, enum hc_report_format fmt,
					 const struct hc_write_opts *w, FILE *out,
					 struct hc_err *err);

/*
 * The top w->top (0: 10) functions and stacks as the JSON members
 * "functions":[{"name","flat","cum"}] and "stacks":[{"frames":[root..leaf],
 * "change"}], without braces, for the caller's own object.  Weights are
 * bytes, or objects with w->objects; with a base they are the change and
 * only what grew is listed.
 */
HC_API HC_MUST_CHECK int hc_report_write_top_json(struct hc_report *r,
						  const struct hc_write_opts *w, FILE *out,
						  struct hc_err *err);

/* Totals for a summary line: new and base (0 without one), un-biased. */
struct hc_report_totals {
	double bytes, objects;
	double base_bytes, base_objects;
	double grew_bytes, shrank_bytes; /* sums of positive and negative per-stack deltas */
	size_t nstacks;                  /* merged stacks */
	size_t naddrs, nunresolved;      /* distinct addresses, those with no name */
	size_t nobjects, nmissing;       /* objects seen, objects whose file was not found */
	uint64_t period;
	bool diff;                       /* built with a base profile */
	/*
	 * Samples behind the figures: sampled objects as the profiles wrote
	 * them, in the profile and its base, and those that grew (the excess
	 * of the profile's over the base's, summed over the stacks that grew).
	 */
	double samples, base_samples, grew_samples;
};
HC_API void hc_report_totals(const struct hc_report *r, struct hc_report_totals *t);
/*
 * The 95% range [*lo, *hi] of a Poisson mean from a count of k samples
 * (docs/report.md, "How sure").  A figure estimated from k samples spans
 * figure * lo / k to figure * hi / k.
 */
HC_API void hc_poisson_range(double k, double *lo, double *hi);
/*
 * The 95% range of a growth estimated from k samples that grew, in
 * profiles sampled every period bytes on average (0: every allocation
 * recorded, an exact figure).  With no sample that grew, a growth of up
 * to about hc_poisson_range(0)'s hi intervals could have gone unseen (in
 * bytes; objects cannot say).
 */
HC_API void hc_growth_range(double growth, double k, uint64_t period, bool objects, double *lo,
			    double *hi);

/* "folded" -> HC_FMT_FOLDED ...; -1 if unknown. */
HC_API int hc_report_format_parse(const char *name);
/* HC_FMT_FOLDED -> "folded" ...; "?" if unknown. */
HC_API const char *hc_report_format_name(int fmt);

#ifdef __cplusplus
}
#endif
#endif
