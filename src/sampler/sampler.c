// SPDX-License-Identifier: MIT
/*
 * heapctl's sampling heap profiler, injected into a running process whose
 * allocator cannot profile (glibc, tcmalloc_minimal, jemalloc started
 * without prof:true).  heapctl loads it with dlopen() on a borrowed thread,
 * points the GOT slots of the target's objects at the hooks below, and
 * reads the tables back with process_vm_readv.
 *
 * The rules that keep the target safe:
 *   - No constructor does anything; heapctl calls hcs_init() explicitly.
 *   - The hooks call the real allocator first and never change what it
 *     returns.  Memory is never tagged or given a header: a sampled pointer
 *     is only remembered in a side table, so free(), realloc() and
 *     malloc_usable_size() inside libc, or after removal, see exactly what
 *     the allocator gave.
 *   - The path that does not sample takes no lock and calls nothing: a
 *     thread-local countdown (initial-exec TLS: no __tls_get_addr; or a
 *     table entry keyed by the thread pointer) on allocation, a prefilter
 *     counter on free.
 *   - The sampled path is lock-free too (compare-and-swap into open
 *     addressing tables of fixed size) and guarded against reentry: what
 *     the unwinder allocates passes straight through.
 *   - Removal puts back each GOT slot it changed, if it still holds the
 *     hook.  The code stays (RTLD_NODELETE): threads may be inside it.
 *
 * Built twice.  The glibc flavour is dlopen()ed and uses libc, TLS,
 * libgcc_s's unwinder and pthread_atfork().  The freestanding one
 * (HCS_FREESTANDING: musl and static processes, where heapctl maps it
 * itself) has none of them: system calls of its own (sys.h), a table of
 * per-thread state keyed by the thread pointer, a fork() noticed by the
 * pid changing, and its own CFI unwinder (unwind.c) over the objects
 * heapctl lists in hcs_state.objs.
 */
#include <stddef.h>
#include <stdint.h>
#ifndef HCS_FREESTANDING
#include <dlfcn.h>
#include <pthread.h>
#include <unwind.h>
#endif

#include "hcs.h"
#include "sys.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CAS(p, o, n) \
	__atomic_compare_exchange_n((p), (o), (n), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)

/* ---- tables: .bss, untouched (and so not resident) until used ---------------------- */

/* Aligned to any page size: emptied with MADV_DONTNEED, which also gives their memory back. */
static struct hcs_live live_tab[1u << HCS_LIVE_BITS] __attribute__((aligned(65536)));
static uint8_t filter_tab[1u << HCS_FILTER_BITS] __attribute__((aligned(65536)));
static struct hcs_stack stack_tab[HCS_STACKS];
static uint32_t stack_hash[1u << HCS_STACK_HASH_BITS];
static struct hcs_slot slot_tab[HCS_MAXSLOTS];

static int init(void);
static int patch(void);
static int unpatch(void);
static int enable(uint64_t interval, uint32_t on);
static int reset(void);
static void clear(void);

HIDDEN struct hcs_state hcs_state;

/* ---- per thread: reached from the thread pointer ------------------------------------ */

struct tls {
	int64_t left;  /* bytes until the next sample */
	uint64_t rng;  /* xorshift state; 0 until the thread's first allocation */
	uint32_t busy; /* inside the sampled path: do not recurse */
	uint32_t gen;  /* the profile (state.enabled) this countdown was drawn for; 0 none */
	uint32_t depth; /* freestanding: inside a hooked call (see OUTER()) */
};

#ifndef HCS_FREESTANDING
/* initial-exec TLS: no __tls_get_addr */
static __thread struct tls tls __attribute__((tls_model("initial-exec")));

static inline struct tls *my_tls(void)
{
	return &tls;
}

#define SHARED(t) 0
#else
/*
 * No TLS in an object no loader knows of: a table keyed by the thread
 * pointer, an entry claimed by compare-and-swap at a thread's first
 * allocation; the first probe finds it in the common case.  A thread that
 * exits leaves its entry, and a new thread given the same thread pointer
 * takes over its countdown: harmless, the gaps are memoryless.  When the
 * table is full the other threads share one countdown, updated atomically:
 * still a Poisson process on bytes, with no bias, only contended.
 */
#define TLS_BITS 12
#define TLS_PROBES 32
struct tls_slot {
	uint64_t tp; /* the owner's thread pointer; 0 free */
	struct tls t;
};
static struct tls_slot tls_tab[1u << TLS_BITS];
static struct tls tls_shared;

static uint32_t tls_hash(uint64_t tp)
{
	return (uint32_t)((tp * 0x9e3779b97f4a7c15ull) >> (64 - TLS_BITS));
}

static __attribute__((noinline)) struct tls *tls_claim(uint64_t tp)
{
	uint32_t mask = (1u << TLS_BITS) - 1, at = tls_hash(tp);

	for (unsigned i = 0; i < TLS_PROBES; i++, at = (at + 1) & mask) {
		uint64_t cur = LOAD(&tls_tab[at].tp);

		/* only the thread itself claims its tp: a lost CAS means another thread's entry */
		if (cur == tp || (cur == 0 && CAS(&tls_tab[at].tp, &cur, tp)))
			return &tls_tab[at].t;
	}
	if (!LOAD(&hcs_state.tls_full))
		STORE(&hcs_state.tls_full, 1);
	return &tls_shared;
}

static inline struct tls *my_tls(void)
{
	uint64_t tp = thread_pointer();
	struct tls_slot *s = &tls_tab[tls_hash(tp)];

	if (likely(__atomic_load_n(&s->tp, __ATOMIC_RELAXED) == tp))
		return &s->t;
	return tls_claim(tp);
}

#define SHARED(t) unlikely((t) == &tls_shared)
#endif

#ifdef HCS_FREESTANDING
/*
 * Inline hooks see the C library's calls to itself too: musl's calloc()
 * calls malloc(), its realloc() may call malloc() and free().  Only the
 * outermost call is the program's: what the allocator does inside it
 * passes through.  The slot found here is the one note_alloc() then
 * uses: one lookup per call.  None while nothing samples, which is what
 * the hooks left in after prof off cost.  (A call under way when sampling
 * starts, and a thread that got no slot of its own, may count an inner
 * call too.)
 */
#define OUTER(t, call)                                                 \
	({                                                             \
		int own_;                                              \
		(t) = LOAD(&hcs_state.enabled) ? my_tls() : NULL;      \
		own_ = (t) && !SHARED(t);                              \
		if (own_)                                              \
			(t)->depth++;                                  \
		__typeof__(call) r_ = (call);                          \
		if (own_)                                              \
			(t)->depth--;                                  \
		r_;                                                    \
	})
#define NESTED(t) unlikely((t)->depth != 0)
#else
#define OUTER(t, call) ((t) = NULL, (call))
#define NESTED(t) 0
#endif

/* ---- the exponential countdown ------------------------------------------------------ */

static uint64_t rnd(struct tls *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ln(u) for u in (0, 1], without libm: exponent, then 2 atanh((m-1)/(m+1)). */
static double ln(double u)
{
	union {
		double d;
		uint64_t u;
	} v = { .d = u };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double z, z2, s;

	v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
	z = (v.d - 1) / (v.d + 1);
	z2 = z * z;
	s = z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 + z2 / 11)))));
	return e * 0.6931471805599453 + 2 * s;
}

/* Bytes to the next sample: exponential with mean state.interval (a Poisson process on bytes). */
static int64_t draw(struct tls *t)
{
	double u = (double)((rnd(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double n = -ln(u) * (double)hcs_state.interval;

	return n > 4e18 ? (int64_t)4e18 : (int64_t)n + 1;
}

/* ---- stacks -------------------------------------------------------------------------- */

#ifdef HCS_FREESTANDING
#include "unwind.c"

/* The objects heapctl listed: it appends an entry, then publishes the count. */
static uint32_t backtrace(uint64_t *frames, int *bad)
{
	uint32_t nobjs = LOAD(&hcs_state.nobjs);

	return uw_backtrace(hcs_state.objs, nobjs < HCS_MAXOBJS ? nobjs : HCS_MAXOBJS,
			    hcs_state.text_lo, hcs_state.text_hi, frames, HCS_MAXFRAMES, bad);
}
#else
typedef _Unwind_Reason_Code (*bt_fn)(_Unwind_Trace_Fn, void *);
typedef uintptr_t (*getip_fn)(struct _Unwind_Context *);
static bt_fn unwind_backtrace;
static getip_fn unwind_getip;

struct bt {
	uint64_t *f;
	uint32_t n;
};

static _Unwind_Reason_Code bt_cb(struct _Unwind_Context *c, void *arg)
{
	struct bt *b = arg;
	uint64_t ip = unwind_getip(c);

	if (!ip)
		return _URC_END_OF_STACK;
	if (ip >= hcs_state.text_lo && ip < hcs_state.text_hi)
		return _URC_NO_REASON; /* the hook and this file: not the program's */
	if (b->n >= HCS_MAXFRAMES)
		return _URC_END_OF_STACK;
	b->f[b->n++] = ip;
	return _URC_NO_REASON;
}

static uint32_t backtrace(uint64_t *frames, int *bad)
{
	struct bt b = { frames, 0 };

	unwind_backtrace(bt_cb, &b);
	*bad = 0;
	return b.n;
}
#endif

static uint32_t hash_frames(const uint64_t *f, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ f[i]) * 0xff51afd7ed558ccdull;
	return (uint32_t)(h ^ h >> 32) | 1;
}

static int same(const struct hcs_stack *s, const uint64_t *f, uint32_t n, uint32_t h)
{
	if (s->hash != h || s->nframes != n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (s->frames[i] != f[i])
			return 0;
	return 1;
}

/* The id of this stack, added if new; 0 when the table is full. */
static uint32_t stack_id(const uint64_t *f, uint32_t n)
{
	uint32_t h = hash_frames(f, n), mask = (1u << HCS_STACK_HASH_BITS) - 1;
	uint32_t mine = 0;

	for (uint32_t i = 0, at = h & mask; i < (1u << HCS_STACK_HASH_BITS); i++, at = (at + 1) & mask) {
		uint32_t id = LOAD(&stack_hash[at]);

		if (id) {
			if (same(&stack_tab[id], f, n, h))
				return id;
			continue;
		}
		if (!mine) {
			uint64_t next = ADD(&hcs_state.nstacks, 1) + 1;

			if (next >= HCS_STACKS) {
				ADD(&hcs_state.dropped_stacks, 1);
				return 0;
			}
			mine = (uint32_t)next;
			stack_tab[mine].nframes = n;
			stack_tab[mine].hash = h;
			for (uint32_t k = 0; k < n; k++)
				stack_tab[mine].frames[k] = f[k];
		}
		/* Publish: the entry is complete before its id can be seen. */
		if (CAS(&stack_hash[at], &id, mine))
			return mine;
		if (same(&stack_tab[id], f, n, h))
			return id; /* another thread added the same stack; ours is wasted */
	}
	return 0;
}

/* ---- the live table -------------------------------------------------------------- */

static uint32_t ptr_hash(uint64_t p, unsigned bits)
{
	p ^= p >> 33;
	p *= 0xff51afd7ed558ccdull;
	p ^= p >> 33;
	return (uint32_t)(p >> (64 - bits));
}

static void remember(uint64_t p, uint64_t size, uint32_t id)
{
	uint32_t mask = (1u << HCS_LIVE_BITS) - 1, at = ptr_hash(p, HCS_LIVE_BITS);
	uint8_t *fc = &filter_tab[ptr_hash(p ^ 0x5bd1e995, HCS_FILTER_BITS)];

	if (LOAD(&hcs_state.live_count) >= (3u << HCS_LIVE_BITS) / 4)
		goto full;
	for (unsigned i = 0; i < HCS_PROBES; i++, at = (at + 1) & mask) {
		uint64_t cur = LOAD(&live_tab[at].ptr);

		if ((cur == 0 || cur == HCS_TOMB) && CAS(&live_tab[at].ptr, &cur, p)) {
			STORE(&live_tab[at].meta, size << 24 | id);
			/* Saturates at 255: such a counter is never decremented again. */
			if (LOAD(fc) != 255)
				ADD(fc, 1);
			ADD(&hcs_state.live_count, 1);
			return;
		}
	}
full:
	ADD(&hcs_state.dropped_live, 1);
}

/* Forget p if it was sampled: before the real free, as another thread may get p next. */
static int forget(uint64_t p, struct hcs_live *was)
{
	uint32_t mask = (1u << HCS_LIVE_BITS) - 1, at = ptr_hash(p, HCS_LIVE_BITS);
	uint8_t *fc = &filter_tab[ptr_hash(p ^ 0x5bd1e995, HCS_FILTER_BITS)];

	if (likely(!LOAD(fc)))
		return 0;
	for (unsigned i = 0; i < HCS_PROBES; i++, at = (at + 1) & mask) {
		uint64_t cur = LOAD(&live_tab[at].ptr);

		if (cur == 0)
			return 0;
		if (cur != p)
			continue;
		if (was)
			was->meta = LOAD(&live_tab[at].meta);
		STORE(&live_tab[at].meta, 0);
		if (!CAS(&live_tab[at].ptr, &cur, HCS_TOMB))
			return 0; /* a double free raced us: the program's bug, not ours to judge */
		if (LOAD(fc) != 255)
			__atomic_fetch_sub(fc, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&hcs_state.live_count, 1, __ATOMIC_RELAXED);
		return 1;
	}
	return 0;
}

/* ---- the hooks' two paths ------------------------------------------------------------ */

/*
 * A countdown belongs to one profile (state.enabled names it): a thread
 * whose countdown was drawn for another, or never, draws a new one, and
 * the allocation at hand counts against it like any other (the gaps are
 * memoryless; skipping it would never sample a thread's first allocation
 * of a profile: a forked server's child that makes one big one shows
 * nothing).  Checked on every allocation, so a new interval holds from
 * this one, however long the old countdown had to run.
 */
static __attribute__((noinline)) void new_countdown(struct tls *t, uint32_t profile, uint64_t p)
{
	if (!t->rng) {
		t->rng = ((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull) ^
			 (ADD(&hcs_state.samples, 0) << 17) ^ p;
		if (!t->rng)
			t->rng = 1;
	}
	t->gen = profile;
	__atomic_store_n(&t->left, draw(t), __ATOMIC_RELAXED);
}

#ifdef HCS_FREESTANDING
static int32_t hcs_pid; /* the process init() ran in: another one is a fork()ed child */
static void in_child(void);

/* No pthread_atfork() here: a child notices the pid is not its own (the sampled path only). */
static int forked(void)
{
	int32_t pid = (int32_t)sys_getpid();

	if (likely(pid == LOAD(&hcs_pid)))
		return 0;
	in_child();
	STORE(&hcs_pid, pid);
	return 1;
}
#endif

static __attribute__((noinline)) void sampled(struct tls *t, uint64_t p, uint64_t size)
{
	uint64_t frames[HCS_MAXFRAMES];
	uint32_t n, id;
	int bad;

#ifdef HCS_FREESTANDING
	if (forked())
		return;
#endif
	t->busy = 1;
	__atomic_store_n(&t->left, draw(t), __ATOMIC_RELAXED);
	n = backtrace(frames, &bad);
	if (n == 0 || bad)
		ADD(&hcs_state.unwind_short, 1);
	ADD(&hcs_state.samples, 1);
	id = stack_id(frames, n);
	if (id) {
		ADD(&stack_tab[id].accum_objs, 1);
		ADD(&stack_tab[id].accum_bytes, size);
	}
	remember(p, size, id);
	t->busy = 0;
}

/* t: the slot OUTER() found, or NULL (looked up here). */
static inline void note_alloc(struct tls *t, void *p, uint64_t size)
{
	uint32_t profile = LOAD(&hcs_state.enabled);

	if (unlikely(!p) || !profile)
		return;
	if (!t)
		t = my_tls();
	if (NESTED(t))
		return;
	if (unlikely(t->gen != profile))
		new_countdown(t, profile, (uint64_t)(uintptr_t)p);
	if (SHARED(t)) {
		/* the one thread that takes it across zero samples, and draws anew */
		int64_t was = __atomic_fetch_sub(&t->left, (int64_t)size, __ATOMIC_RELAXED);

		if (was >= 0 && was - (int64_t)size < 0)
			sampled(t, (uint64_t)(uintptr_t)p, size);
		return;
	}
	t->left -= (int64_t)size;
	if (likely(t->left >= 0) || t->busy)
		return;
	sampled(t, (uint64_t)(uintptr_t)p, size);
}

static inline void note_free(void *p)
{
	if (p)
		forget((uint64_t)(uintptr_t)p, NULL);
}

/* ---- hooks ------------------------------------------------------------------------ */

#define ORIG(id, type) ((type)(uintptr_t)hcs_state.orig[HCS_H_##id])

static void *hk_malloc(size_t n)
{
	struct tls *t;
	void *p = OUTER(t, ORIG(MALLOC, void *(*)(size_t))(n));

	note_alloc(t, p, n);
	return p;
}

static void hk_free(void *p)
{
	note_free(p);
	ORIG(FREE, void (*)(void *))(p);
}

static void *hk_calloc(size_t n, size_t m)
{
	struct tls *t;
	void *p = OUTER(t, ORIG(CALLOC, void *(*)(size_t, size_t))(n, m));

	note_alloc(t, p, (uint64_t)n * m);
	return p;
}

/* Forget the old block first; if the real call fails the old block lives on: remember it again. */
#define REALLOC_BODY(call, newsize)                                                  \
	struct hcs_live was = { 0 };                                                 \
	int had = p ? forget((uint64_t)(uintptr_t)p, &was) : 0;                      \
	struct tls *t;                                                               \
	void *q = OUTER(t, call);                                                    \
	if (q)                                                                       \
		note_alloc(t, q, newsize);                                           \
	else if (had && was.meta && (newsize) != 0)                                  \
		remember((uint64_t)(uintptr_t)p, was.meta >> 24, (uint32_t)(was.meta & 0xffffff)); \
	return q

static void *hk_realloc(void *p, size_t n)
{
	REALLOC_BODY(ORIG(REALLOC, void *(*)(void *, size_t))(p, n), n);
}

static void *hk_reallocarray(void *p, size_t n, size_t m)
{
	REALLOC_BODY(ORIG(REALLOCARRAY, void *(*)(void *, size_t, size_t))(p, n, m), (uint64_t)n * m);
}

static int hk_posix_memalign(void **out, size_t al, size_t n)
{
	struct tls *t;
	int r = OUTER(t, ORIG(POSIX_MEMALIGN, int (*)(void **, size_t, size_t))(out, al, n));

	if (r == 0)
		note_alloc(t, *out, n);
	return r;
}

#define ALIGNED_HOOK(id, fn)                                          \
	static void *fn(size_t al, size_t n)                          \
	{                                                             \
		struct tls *t;                                        \
		void *p = OUTER(t, ORIG(id, void *(*)(size_t, size_t))(al, n)); \
		note_alloc(t, p, n);                                  \
		return p;                                             \
	}
ALIGNED_HOOK(ALIGNED_ALLOC, hk_aligned_alloc)
ALIGNED_HOOK(MEMALIGN, hk_memalign)

/* wrap: OUTER for the C functions; C++'s operator new may throw through it */
#define SIZE_HOOK(id, fn, wrap)                               \
	static void *fn(size_t n)                             \
	{                                                     \
		struct tls *t;                                \
		void *p = wrap(t, ORIG(id, void *(*)(size_t))(n)); \
		note_alloc(t, p, n);                          \
		return p;                                     \
	}
#define PLAIN(t, call) ((t) = NULL, (call))
SIZE_HOOK(VALLOC, hk_valloc, OUTER)
SIZE_HOOK(PVALLOC, hk_pvalloc, OUTER)
SIZE_HOOK(NEW, hk_new, PLAIN)
SIZE_HOOK(NEW_ARR, hk_new_arr, PLAIN)

/* jemalloc's non-standard API */
static void *hk_mallocx(size_t n, int fl)
{
	void *p = ORIG(MALLOCX, void *(*)(size_t, int))(n, fl);

	note_alloc(NULL, p, n);
	return p;
}

static void *hk_rallocx(void *p, size_t n, int fl)
{
	/* rallocx never fails with p freed: on failure p lives on */
	REALLOC_BODY(ORIG(RALLOCX, void *(*)(void *, size_t, int))(p, n, fl), n);
}

/* In place: the block stays where it is; its sampled size is what it was. */
static size_t hk_xallocx(void *p, size_t n, size_t extra, int fl)
{
	return ORIG(XALLOCX, size_t (*)(void *, size_t, size_t, int))(p, n, extra, fl);
}

static void hk_sdallocx(void *p, size_t n, int fl)
{
	note_free(p);
	ORIG(SDALLOCX, void (*)(void *, size_t, int))(p, n, fl);
}

static void hk_dallocx(void *p, int fl)
{
	note_free(p);
	ORIG(DALLOCX, void (*)(void *, int))(p, fl);
}

/* C++: a throwing operator new unwinds through these frames (they have CFI). */
struct nothrow;
static void *hk_new_nt(size_t n, const struct nothrow *nt)
{
	void *p = ORIG(NEW_NT, void *(*)(size_t, const struct nothrow *))(n, nt);

	note_alloc(NULL, p, n);
	return p;
}

static void *hk_new_arr_nt(size_t n, const struct nothrow *nt)
{
	void *p = ORIG(NEW_ARR_NT, void *(*)(size_t, const struct nothrow *))(n, nt);

	note_alloc(NULL, p, n);
	return p;
}

static void *hk_new_al(size_t n, size_t al)
{
	void *p = ORIG(NEW_AL, void *(*)(size_t, size_t))(n, al);

	note_alloc(NULL, p, n);
	return p;
}

static void *hk_new_arr_al(size_t n, size_t al)
{
	void *p = ORIG(NEW_ARR_AL, void *(*)(size_t, size_t))(n, al);

	note_alloc(NULL, p, n);
	return p;
}

#define DEL1(id, fn)                                  \
	static void fn(void *p)                       \
	{                                             \
		note_free(p);                         \
		ORIG(id, void (*)(void *))(p);        \
	}
#define DEL2(id, fn)                                    \
	static void fn(void *p, size_t a)               \
	{                                               \
		note_free(p);                           \
		ORIG(id, void (*)(void *, size_t))(p, a); \
	}
DEL1(DEL, hk_del)
DEL1(DEL_ARR, hk_del_arr)
DEL2(DEL_SZ, hk_del_sz)
DEL2(DEL_ARR_SZ, hk_del_arr_sz)
DEL2(DEL_AL, hk_del_al)
DEL2(DEL_ARR_AL, hk_del_arr_al)

static void hk_del_sz_al(void *p, size_t n, size_t al)
{
	note_free(p);
	ORIG(DEL_SZ_AL, void (*)(void *, size_t, size_t))(p, n, al);
}

static void hk_del_arr_sz_al(void *p, size_t n, size_t al)
{
	note_free(p);
	ORIG(DEL_ARR_SZ_AL, void (*)(void *, size_t, size_t))(p, n, al);
}

/*
 * jemalloc's experimental hooks (5.2 and later), for an allocator with no
 * GOT slot to hook: called after each allocation and before each free,
 * with the arguments as integers (jemalloc's hook.h gives their order).
 */
enum { JE_MALLOC, JE_POSIX_MEMALIGN, JE_ALIGNED_ALLOC, JE_CALLOC, JE_MEMALIGN, JE_VALLOC,
       JE_MALLOCX, JE_REALLOC, JE_RALLOCX };

static void je_alloc_hook(void *extra, int type, void *result, uintptr_t raw, uintptr_t args[3])
{
	uint64_t size;

	(void)extra;
	(void)raw;
	switch (type) {
	case JE_MALLOC:
	case JE_VALLOC:
	case JE_MALLOCX:
		size = args[0];
		break;
	case JE_POSIX_MEMALIGN:
		size = args[2];
		break;
	case JE_CALLOC:
		size = (uint64_t)args[0] * args[1];
		break;
	case JE_ALIGNED_ALLOC:
	case JE_MEMALIGN:
	case JE_REALLOC:
	case JE_RALLOCX:
		size = args[1];
		break;
	default:
		return;
	}
	note_alloc(NULL, result, size);
}

static void je_dalloc_hook(void *extra, int type, void *address, uintptr_t args[3])
{
	(void)extra;
	(void)type;
	(void)args;
	note_free(address);
}

/* In place: the block stays where it is, with the size it was sampled at. */
static void je_expand_hook(void *extra, int type, void *address, size_t old_usize, size_t new_usize,
			   uintptr_t raw, uintptr_t args[4])
{
	(void)extra;
	(void)type;
	(void)address;
	(void)old_usize;
	(void)new_usize;
	(void)raw;
	(void)args;
}

/* ---- the state heapctl finds --------------------------------------------------------- */

HIDDEN struct hcs_state hcs_state = {
	.magic = HCS_MAGIC,
	.version = HCS_VERSION,
	.size = sizeof(struct hcs_state),
	.fn_init = (uint64_t)(uintptr_t)init,
	.fn_patch = (uint64_t)(uintptr_t)patch,
	.fn_unpatch = (uint64_t)(uintptr_t)unpatch,
	.fn_enable = (uint64_t)(uintptr_t)enable,
	.fn_reset = (uint64_t)(uintptr_t)reset,
	.hook = {
		[HCS_H_MALLOC] = (uint64_t)(uintptr_t)hk_malloc,
		[HCS_H_FREE] = (uint64_t)(uintptr_t)hk_free,
		[HCS_H_CALLOC] = (uint64_t)(uintptr_t)hk_calloc,
		[HCS_H_REALLOC] = (uint64_t)(uintptr_t)hk_realloc,
		[HCS_H_REALLOCARRAY] = (uint64_t)(uintptr_t)hk_reallocarray,
		[HCS_H_POSIX_MEMALIGN] = (uint64_t)(uintptr_t)hk_posix_memalign,
		[HCS_H_ALIGNED_ALLOC] = (uint64_t)(uintptr_t)hk_aligned_alloc,
		[HCS_H_MEMALIGN] = (uint64_t)(uintptr_t)hk_memalign,
		[HCS_H_VALLOC] = (uint64_t)(uintptr_t)hk_valloc,
		[HCS_H_PVALLOC] = (uint64_t)(uintptr_t)hk_pvalloc,
		[HCS_H_MALLOCX] = (uint64_t)(uintptr_t)hk_mallocx,
		[HCS_H_RALLOCX] = (uint64_t)(uintptr_t)hk_rallocx,
		[HCS_H_XALLOCX] = (uint64_t)(uintptr_t)hk_xallocx,
		[HCS_H_SDALLOCX] = (uint64_t)(uintptr_t)hk_sdallocx,
		[HCS_H_DALLOCX] = (uint64_t)(uintptr_t)hk_dallocx,
		[HCS_H_NEW] = (uint64_t)(uintptr_t)hk_new,
		[HCS_H_NEW_ARR] = (uint64_t)(uintptr_t)hk_new_arr,
		[HCS_H_NEW_NT] = (uint64_t)(uintptr_t)hk_new_nt,
		[HCS_H_NEW_ARR_NT] = (uint64_t)(uintptr_t)hk_new_arr_nt,
		[HCS_H_NEW_AL] = (uint64_t)(uintptr_t)hk_new_al,
		[HCS_H_NEW_ARR_AL] = (uint64_t)(uintptr_t)hk_new_arr_al,
		[HCS_H_DEL] = (uint64_t)(uintptr_t)hk_del,
		[HCS_H_DEL_ARR] = (uint64_t)(uintptr_t)hk_del_arr,
		[HCS_H_DEL_SZ] = (uint64_t)(uintptr_t)hk_del_sz,
		[HCS_H_DEL_ARR_SZ] = (uint64_t)(uintptr_t)hk_del_arr_sz,
		[HCS_H_DEL_AL] = (uint64_t)(uintptr_t)hk_del_al,
		[HCS_H_DEL_ARR_AL] = (uint64_t)(uintptr_t)hk_del_arr_al,
		[HCS_H_DEL_SZ_AL] = (uint64_t)(uintptr_t)hk_del_sz_al,
		[HCS_H_DEL_ARR_SZ_AL] = (uint64_t)(uintptr_t)hk_del_arr_sz_al,
	},
	.live = (uint64_t)(uintptr_t)live_tab,
	.filter = (uint64_t)(uintptr_t)filter_tab,
	.stacks = (uint64_t)(uintptr_t)stack_tab,
	.slots = (uint64_t)(uintptr_t)slot_tab,
	.je_hooks = { (uint64_t)(uintptr_t)je_alloc_hook, (uint64_t)(uintptr_t)je_dalloc_hook,
		      (uint64_t)(uintptr_t)je_expand_hook, 0 },
#ifdef HCS_FREESTANDING
	.flavour = HCS_FLAVOUR_FREE,
#else
	.flavour = HCS_FLAVOUR_GLIBC,
#endif
};

/* ---- called by heapctl, on a borrowed thread at a safe point ------------------------- */

/*
 * A fork()ed child inherits the hooks and the tables: it stops sampling,
 * and forgets the parent's samples.  Called in the child alone, before
 * fork() returns.
 */
static void in_child(void)
{
	STORE(&hcs_state.enabled, 0);
	clear();
	STORE(&hcs_state.in_child, 1);
}

/*
 * Empty the tables of sampled pointers; the stacks stay (ids are only
 * names), their accumulated counts zeroed.  The pages go back to the
 * kernel, zero when next touched.  A hook that races this finds an empty
 * slot, or writes one the next profile holds: a sample more or less.
 */
static void clear(void)
{
	uint64_t nst = LOAD(&hcs_state.nstacks) + 1;

	if (nst > HCS_STACKS)
		nst = HCS_STACKS;
	for (uint64_t i = 1; i < nst; i++) {
		if (LOAD(&stack_tab[i].accum_objs))
			STORE(&stack_tab[i].accum_objs, 0);
		if (LOAD(&stack_tab[i].accum_bytes))
			STORE(&stack_tab[i].accum_bytes, 0);
	}
	if (sys_madvise(live_tab, sizeof(live_tab), MADV_DONTNEED))
		for (size_t i = 0; i < sizeof(live_tab) / sizeof(live_tab[0]); i++)
			STORE(&live_tab[i].ptr, 0);
	if (sys_madvise(filter_tab, sizeof(filter_tab), MADV_DONTNEED))
		for (size_t i = 0; i < sizeof(filter_tab); i++)
			STORE(&filter_tab[i], 0);
	STORE(&hcs_state.live_count, 0);
	STORE(&hcs_state.samples, 0);
}

#ifdef HCS_FREESTANDING
/* Nothing to load: the unwinder is this file's, the objects heapctl's (hcs_state.objs). */
static int init(void)
{
	if (hcs_state.initialised)
		return 0;
	STORE(&hcs_pid, (int32_t)sys_getpid());
	STORE(&hcs_state.initialised, 1);
	return 0;
}
#else
static int prime_cb_depth;
static _Unwind_Reason_Code prime_cb(struct _Unwind_Context *c, void *arg)
{
	(void)c;
	(void)arg;
	prime_cb_depth++;
	return _URC_NO_REASON;
}

/*
 * Find libgcc's unwinder (loading libgcc_s if the program has not) and run
 * it once here, so that nothing it does on first use happens inside a hook.
 */
static int init(void)
{
	void *h;

	if (hcs_state.initialised)
		return 0;
	h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NODELETE);
	if (!h)
		return HCS_ERR_UNWIND;
	unwind_backtrace = (bt_fn)(uintptr_t)dlsym(h, "_Unwind_Backtrace");
	unwind_getip = (getip_fn)(uintptr_t)dlsym(h, "_Unwind_GetIP");
	if (!unwind_backtrace || !unwind_getip)
		return HCS_ERR_UNWIND;
	unwind_backtrace(prime_cb, NULL);
	pthread_atfork(NULL, NULL, in_child);
	STORE(&hcs_state.initialised, 1);
	return 0;
}
#endif

/*
 * Slots [i, end) that share slot i's page, made writable for the moment
 * where RELRO made them read-only: one mprotect() pair per page, not per
 * slot (each system call is two stops of the borrowed thread).
 */
static uint32_t page_end(uint32_t i)
{
	uint64_t page = slot_tab[i].addr & ~(hcs_state.pagesize - 1);
	uint32_t j = i + 1;

	while (j < hcs_state.nslots && j < HCS_MAXSLOTS &&
	       (slot_tab[j].addr & ~(hcs_state.pagesize - 1)) == page)
		j++;
	return j;
}

static int page_open(uint32_t i, uint32_t end)
{
	void *page = (void *)(uintptr_t)(slot_tab[i].addr & ~(hcs_state.pagesize - 1));
	long r;

	if ((slot_tab[i].prot & PROT_WRITE) ||
	    !(r = sys_mprotect(page, hcs_state.pagesize, PROT_READ | PROT_WRITE)))
		return 0;
	for (uint32_t k = i; k < end; k++)
		slot_tab[k].err = (uint32_t)-r;
	return -1;
}

static void page_close(uint32_t i)
{
	void *page = (void *)(uintptr_t)(slot_tab[i].addr & ~(hcs_state.pagesize - 1));

	if (!(slot_tab[i].prot & PROT_WRITE))
		sys_mprotect(page, hcs_state.pagesize, (int)slot_tab[i].prot);
}

static int any_in(uint32_t i, uint32_t end, uint32_t state)
{
	for (uint32_t k = i; k < end; k++)
		if (slot_tab[k].state == state)
			return 1;
	return 0;
}

/*
 * Point the pending slots at the hooks (heapctl appends them sorted by
 * address); returns how many are hooked now.
 */
static int patch(void)
{
	int n = 0;

	for (uint32_t i = 0, end; i < hcs_state.nslots && i < HCS_MAXSLOTS; i = end) {
		end = page_end(i);
		if (!any_in(i, end, HCS_SLOT_PENDING))
			continue;
		if (page_open(i, end) < 0) {
			for (uint32_t k = i; k < end; k++)
				if (slot_tab[k].state == HCS_SLOT_PENDING)
					slot_tab[k].state = HCS_SLOT_FAILED;
			continue;
		}
		for (uint32_t k = i; k < end; k++) {
			struct hcs_slot *s = &slot_tab[k];
			uint64_t *slot = (uint64_t *)(uintptr_t)s->addr, hook = hcs_state.hook[s->id], cur;

			if (s->state != HCS_SLOT_PENDING)
				continue;
			/* the loader may resolve a lazy slot meanwhile: read again and retry */
			do {
				cur = LOAD(slot);
			} while (cur != hook && !CAS(slot, &cur, hook));
			/* a hook already there is someone else's copy of ours: leave it */
			s->state = cur == hook ? HCS_SLOT_FAILED : HCS_SLOT_PATCHED;
			s->saved = cur;
		}
		page_close(i);
	}
	for (uint32_t i = 0; i < hcs_state.nslots && i < HCS_MAXSLOTS; i++)
		n += slot_tab[i].state == HCS_SLOT_PATCHED;
	STORE(&hcs_state.hooked, n > 0);
	return n;
}

/*
 * Put back what patch() changed, where the slot still holds the hook;
 * returns how many could not be.  Restored slots become pending: a later
 * "prof on" hooks them again.  What was sampled goes too: with the hooks
 * out, its frees are no longer seen.
 */
static int unpatch(void)
{
	int left = 0;

	STORE(&hcs_state.enabled, 0);
	for (uint32_t i = 0, end; i < hcs_state.nslots && i < HCS_MAXSLOTS; i = end) {
		end = page_end(i);
		if (!any_in(i, end, HCS_SLOT_PATCHED))
			continue;
		if (page_open(i, end) < 0) {
			/* still hooked, still passing every call through */
			for (uint32_t k = i; k < end; k++)
				left += slot_tab[k].state == HCS_SLOT_PATCHED;
			continue;
		}
		for (uint32_t k = i; k < end; k++) {
			struct hcs_slot *s = &slot_tab[k];
			uint64_t hook = hcs_state.hook[s->id];

			if (s->state != HCS_SLOT_PATCHED)
				continue;
			if (CAS((uint64_t *)(uintptr_t)s->addr, &hook, s->saved)) {
				s->state = HCS_SLOT_PENDING;
			} else {
				s->state = HCS_SLOT_CHANGED;
				left++;
			}
		}
		page_close(i);
	}
	STORE(&hcs_state.hooked, 0);
	clear();
	return left;
}

/* The number state.enabled gives the profile: the generation, never 0. */
static uint32_t profile_no(void)
{
	uint32_t g = (uint32_t)hcs_state.generation;

	return g ? g : 1;
}

/*
 * Stop sampling (on 0), or start it (on 1) with a mean interval (0: the
 * last one, 512 KiB at first).  A stop keeps what was sampled, and the
 * hooks go on seeing its frees: a start at the same interval goes on with
 * the same profile.  A new interval starts a new one (one profile has one
 * period), as does the first start in a fork()ed child (its tables are
 * the parent's).
 */
static int enable(uint64_t interval, uint32_t on)
{
	uint64_t want = interval ? interval : hcs_state.interval ? hcs_state.interval : 512 * 1024;

#ifdef HCS_FREESTANDING
	forked(); /* a child that sampled nothing yet: its tables are still the parent's */
#endif
	if (!on) {
		STORE(&hcs_state.enabled, 0);
		return 0;
	}
	if (want != hcs_state.interval || !hcs_state.generation || hcs_state.in_child) {
		STORE(&hcs_state.enabled, 0);
		hcs_state.interval = want;
		reset();
	}
	STORE(&hcs_state.enabled, profile_no());
	return 0;
}

/*
 * Forget what was sampled and start a new profile (prof reset), sampling
 * or not.  Every thread draws a new countdown at its next allocation.
 */
static int reset(void)
{
	uint32_t was;

#ifdef HCS_FREESTANDING
	forked(); /* before was: a child's state.enabled is still the parent's */
#endif
	was = LOAD(&hcs_state.enabled);
	STORE(&hcs_state.enabled, 0);
	clear();
	STORE(&hcs_state.in_child, 0);
	ADD(&hcs_state.generation, 1);
	STORE(&hcs_state.enabled, was ? profile_no() : 0);
	return 0;
}
