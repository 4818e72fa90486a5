/* SPDX-License-Identifier: MIT */
/*
 * heapctl's injected sampler, heapctl's side (inject.c): the API's
 * hc_prof_* use it when the allocator cannot profile.  inj_on() and
 * inj_off() make remote calls (inside the caller's session); the rest only
 * read the target's memory.
 */
#ifndef HC_INJECT_H
#define HC_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../sampler/hcs.h"

struct engine;
struct hc_err;
struct hc_where;
struct hc_sampler;

#define INJ_MAXEXTRA 8 /* objects without .eh_frame_hdr given a table */

struct inj {
	uint64_t base;             /* the sampler's ELF header, or 0: not loaded */
	uint64_t text_lo, text_hi; /* its code */
	struct {
		uint64_t lo, hi;
	} data[4];                 /* its writable mappings */
	unsigned ndata;
	uint64_t state;            /* its struct hcs_state, or 0 */
	struct hcs_state s;        /* as last read */
	bool loaded_now;
	bool switched; /* inj_on() or inj_off() turned it on or off */
	/* what the driver found (its allocator, object, mallctl), as the API gives it; never NULL */
	const struct hc_where *where;
	/* inj_prepare(): what inj_on() will do, worked out while nothing is stopped */
	struct inj_prep {
		bool ready;
		uint64_t orig[HCS_NHOOK];
		uint64_t size[HCS_NHOOK]; /* their symbols' sizes */
		/* no dlopen, or not glibc's: the freestanding sampler, mapped by heapctl (map.c) */
		bool mapped;
		/* the allocator is in the executable, with no jemalloc hooks: inline hooks (inline.c) */
		bool inl;
		struct hcs_slot *slots;
		unsigned n;
		/* the allocator is in the executable: jemalloc's own hooks instead of GOT slots */
		uint64_t je_mallctl;
		/*
		 * Unwind tables for objects without .eh_frame_hdr (inline.c), built
		 * before the borrow, where each will be mapped: the borrow only maps.
		 */
		struct unw_tab {
			struct hcs_obj obj; /* the object's code, and where its table goes */
			uint8_t *buf;
			size_t len; /* whole pages */
			const char *path;
		} tabs[INJ_MAXEXTRA];
		unsigned ntabs;
	} prep;
};

/*
 * Can heapctl's sampler go into t's process at all?  What the API asks for
 * prof on, dump, info and prof status (inj_prepare() refuses the same case
 * in the same words): false only for a static executable whose malloc has
 * no symbol to hook it by (musl, static binaries and a libc without
 * dlopen() take the freestanding sampler, mapped by heapctl).  Then *why says
 * what stands in the way (a phrase without the pid) and *hint what can
 * work for this very process; both are static strings, "" when true.
 * Reads only: nothing is stopped.
 */
bool sampler_loadable(struct engine *t, const char **why, const char **hint);
/* What inj_prepare() built for the next inj_on(), freed. */
void inj_prep_clear(struct inj_prep *p);

/* Fills in: 1 loaded (in->s read), 0 not loaded, -1 error. */
int inj_probe(struct engine *t, struct inj *in, struct hc_err *err);
/*
 * Reads only (no thread is stopped): the real definitions and the slots to
 * hook, for the next inj_on().  Refuses a target the sampler cannot hook.
 */
int inj_prepare(struct engine *t, struct inj *in, struct hc_err *err);
void inj_free(struct inj *in);
/* Load if needed, hook every slot not hooked yet, and sample with this mean interval. */
int inj_on(struct engine *t, struct inj *in, uint64_t interval, struct hc_err *err);
/* Hooks in: hook the objects loaded since (nothing if none). */
int inj_rescan(struct engine *t, struct inj *in, struct hc_err *err);
/* Stop sampling; the hooks stay and see the frees of what was sampled. */
int inj_off(struct engine *t, struct inj *in, struct hc_err *err);
/* Forget what was sampled; while off, put every slot back too. */
int inj_reset(struct engine *t, struct inj *in, struct hc_err *err);
/* Loaded with its hooks in: sampling, or off with what it sampled kept. */
bool inj_watching(const struct inj *in);
int inj_status(struct engine *t, struct inj *in, struct hc_sampler *out, struct hc_err *err);
/* Write the sampled live heap to out (heapctl's side), as jemalloc's heap_v2. */
int inj_dump(struct engine *t, struct inj *in, const char *out, struct hc_err *err);

/*
 * One allocation site of a dump: a stack of the sampler's, what is live
 * there, and what was sampled there since the profile started (accum).
 */
struct inj_site {
	uint32_t id; /* into the stack table */
	uint64_t objs, bytes;
	uint64_t accum_objs, accum_bytes;
};
/*
 * inj_dump()'s reading of the sampler's tables as read from the target
 * (its writable memory, so fuzzed): the live entries that name a stack
 * below nst with 1..HCS_MAXFRAMES frames, summed per stack into out (room
 * for nlive + nst), with each such stack's accumulated counts, and the
 * stacks with none live but some accumulated; the most live bytes first,
 * then the most accumulated bytes, and over all of them into *tot.
 * Returns how many sites.
 */
size_t inj_sites(const struct hcs_live *live, size_t nlive, const struct hcs_stack *st,
		 size_t nst, struct inj_site *out, struct inj_site *tot);
/* Them as heap_v2 text, its header and one stack each (st: the table they index). */
void inj_write_sites(FILE *f, uint64_t interval, const struct inj_site *sites, size_t n,
		     const struct inj_site *tot, const struct hcs_stack *st);

#endif
