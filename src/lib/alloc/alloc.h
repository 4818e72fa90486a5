/* SPDX-License-Identifier: MIT */
/*
 * Allocator drivers.  The engine (call.c) knows nothing of any allocator;
 * a driver turns the public operations into remote calls: jemalloc,
 * tcmalloc, mimalloc, glibc and musl are the entries of alloc.c's drivers[].
 *
 * Drivers never open or close a session: the API does (api.c).  The first
 * remote call, write or scratch request of an operation borrows the
 * thread; a refusal before that stops nothing.  call_done() lets the
 * thread go before work that needs it no more.
 */
#ifndef HC_ALLOC_H
#define HC_ALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <heapctl/heapctl.h>

#include "engine.h"
#include "image.h"

struct hc_target;
struct engine;
struct obj;

struct alloc_ops {
	const char *name;
	/*
	 * Look for this allocator among t's objects (symbols only, nothing is
	 * stopped).  Returns 1 found (fills t->drv.where, t->drv.alloc_priv), 0 not
	 * found, -1 error.
	 */
	int (*detect)(struct hc_target *t, struct hc_err *err);
	void (*release)(struct hc_target *t);
	/* Is raddr inside the allocator's code? (safe-point check) */
	bool (*contains)(struct hc_target *t, uint64_t raddr);
	int (*info)(struct hc_target *t, struct hc_info *info, struct hc_err *err);
	/* NULL prof_get, prof_set and prof_dump: no profiler of its own (no_prof_hint says what helps) */
	int (*prof_get)(struct hc_target *t, bool *enabled, bool *active, struct hc_err *err);
	/* *was: whether it was active before, read in the same step */
	int (*prof_set)(struct hc_target *t, bool active, bool *was, struct hc_err *err);
	/* *active: whether sampling is on at the dump */
	int (*prof_dump)(struct hc_target *t, const char *out, bool *active, struct hc_err *err);
	/* forget what was sampled (NULL: the profiler cannot) */
	int (*prof_reset)(struct hc_target *t, struct hc_err *err);
	const char *no_prof_hint;
	int (*stats)(struct hc_target *t, struct hc_stats *st, struct hc_err *err);
	int (*stats_print)(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
			   struct hc_err *err);
	int (*purge)(struct hc_target *t, int arena, struct hc_err *err);
	int (*ctl_get)(struct hc_target *t, const char *name, struct hc_value *v,
		       struct hc_err *err);
	/* old and now come zeroed (HC_T_VOID: no value) from hc_ctl_set() */
	int (*ctl_set)(struct hc_target *t, const char *name, const char *value,
		       struct hc_value *old, struct hc_value *now, struct hc_err *err);
	/* NULL: the allocator has no names to list. */
	int (*ctl_list)(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out,
			size_t *n, char *skipped, size_t skipped_len, struct hc_err *err);
};

extern const struct alloc_ops alloc_jemalloc;
extern const struct alloc_ops alloc_tcmalloc;
extern const struct alloc_ops alloc_mimalloc;
extern const struct alloc_ops alloc_glibc;
extern const struct alloc_ops alloc_musl;


/*
 * Try the drivers in order (alloc.c); the first that finds its allocator
 * becomes t->drv.alloc, and its contains() the engine's t->eng.in_allocator (with
 * its symbol prefix, t->eng.alloc_prefix).
 * t->drv.alloc stays NULL if none does.  -1 on error.
 */
int alloc_detect(struct hc_target *t, struct hc_err *err);

/*
 * An allocator's output callback, run on heapctl's side of a remote call
 * (arg: a struct print_ctx): reads the target's string up to its NUL and
 * hands it to sink, so that nothing reaches the target's own fds.  The
 * string is the target's memory, hence untrusted (fuzzed).  jemalloc's
 * malloc_stats_print write_cb(cbopaque, s) has it in a[1], mimalloc's
 * mi_output_fun(msg, arg) in a[0].
 */
struct print_ctx {
	hc_sink_fn sink;
	void *arg;
};
int je_print_cb(void *arg, struct engine *e, const uint64_t *a, struct hc_err *err);
int mi_print_cb(void *arg, struct engine *e, const uint64_t *a, struct hc_err *err);
/* The address of name in o, 0 if o does not define it. */
uint64_t alloc_sym(const struct obj *o, const char *name);
/*
 * A driver's detect() found its allocator in own: keep a copy of its
 * private state (len bytes of priv) and say where it is, for one candidate.
 * Returns 1 (found) or -1.  alloc_free_priv() is the release() that goes
 * with it.
 */
int alloc_found(struct hc_target *t, const struct obj *own, const char *allocator, const void *priv,
		size_t len, uint64_t ctl_raddr, uint64_t stats_raddr, struct hc_err *err);
void alloc_free_priv(struct hc_target *t);
/* One more row of st's figures, if there is room. */
void alloc_fig(struct hc_stats *st, const char *name, uint64_t v, const char *what);
/* What malloc looks like in t when no driver matched, for the error message. */
const char *alloc_guess(struct hc_target *t);

/* What the allocator driver keeps (alloc/): which driver, its state, where it found it. */
struct drv {
	/* the allocator driver and its private state */
	const struct alloc_ops *alloc;
	void *alloc_priv;
	struct hc_where where;
	char where_others[256];
};

/*
 * A target: the image, and what the layers above keep beside it (the
 * driver's, the borrow's, the sampler's); api.c holds them together.
 * A proc/ function takes only the image, a borrow/ or sampler/ one only
 * the engine; a driver takes the whole target.
 */
struct hc_target {
	struct image img; /* proc/ */
	struct drv drv;   /* alloc/ */
	struct engine eng; /* borrow/ */
	/* heapctl's injected sampler, as last probed (inject.c), or NULL: sampler/ */
	struct inj *inj;
};

#endif
