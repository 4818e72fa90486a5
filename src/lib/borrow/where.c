// SPDX-License-Identifier: MIT
/*
 * Safe points.  A thread may be borrowed only if none of its frames is
 * inside the allocator: running the allocator's control functions on top of
 * a thread that holds an allocator lock deadlocks it.
 *
 * Two ways to tell, the cheap one first.  The stack scan reads the live
 * stack once, from sp up to where the thread's stack ends, and looks at
 * every word: a frame inside the allocator has its return address there
 * (or, on arm64, in a register), so a stack with no word that returns into
 * the allocator, a malloc-family function, the dynamic linker or anonymous
 * code proves the thread safe without unwinding it.  A word that does may
 * be a stale slot of a live frame, and a stack the scan cannot bound (a
 * signal handler's, a coroutine's) proves nothing: then the thread is
 * unwound.
 *
 * Unwinding uses libunwind with our own accessors: the .eh_frame_hdr
 * tables are read from the target's memory at the addresses sym.c found,
 * so no file is opened while the thread is stopped and objects inside
 * other mount namespaces unwind the same way; registers come from the
 * image thread.c saved at the stop, so libunwind makes no ptrace call of its
 * own.  libunwind-ptrace's lookup is kept only for an .eh_frame_hdr in an
 * encoding no linker writes.  An object linked without one (a static
 * executable, anything musl-gcc links) is unwound through a table heapctl
 * builds from its .eh_frame before any stop (ehhdr.c).
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <capstone/capstone.h>
#include <libunwind-ptrace.h>

#include "allocfn.h"
#include "ehhdr.h"
#include "log.h"
#include "mem.h"
#include "ptrace.h"
#include "engine.h"
#include "image.h"
#include "where.h"

/* Not in the public headers, but exported: the lookup _UPT itself uses. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

#define MAX_FRAMES 128
#define CACHE_PAGES 16
#define CPAGE 4096
#define SCAN_MAX (64 * 1024) /* bytes of stack the scan reads at most */

/* Executable memory, for the scan: an object's text, or anonymous (o NULL). */
struct xrange {
	uint64_t lo, hi;
	struct obj *o;
};

/*
 * Which 64 KiB granules hold code: most words on a stack are data, and one
 * probe of this open-addressed set dismisses them (0 marks a free slot).
 */
#define GRAN_SHIFT 16
#define GRAN_SLOTS 1024

/*
 * The tables heapctl built, read by libunwind at TAB_BASE + (k << 32): an
 * address no process can map (non-canonical on x86_64; on arm64 beyond any
 * user address once its top byte is ignored), so no read of the target's
 * memory is ever answered from one.  Their entries count from the
 * object's .eh_frame (segbase).  buf is padded to whole words: libunwind
 * reads words.
 */
#define TAB_BASE 0x80f0000000000000ull
#define MAX_TABS 8
struct utab {
	uint64_t lo, hi, segbase, eh_len; /* the object's text; its .eh_frame */
	uint8_t *buf;                     /* NULL: none could be made, for why */
	size_t len, tlen;                 /* padded; the table's own */
	char why[128];
};

struct uw_arg {
	struct engine *t;
	pid_t tid;
	const void *gregs; /* the registers thread.c saved at the stop */
	void *upt;         /* _UPT's, made only for its fallback find_proc_info */
	/* the unwinder's page cache, made at its first use: the scan needs none */
	struct cpage {
		uint64_t addr;
		bool valid;
		uint8_t data[CPAGE];
	} *cache;
	unsigned next;
	/* the stack scan: executable ranges by address, and the stack as read */
	struct xrange *xr;
	size_t nxr;
	uint64_t gran[GRAN_SLOTS];
	bool gran_all; /* too much code for the set: every word is searched */
	uint64_t *stack;
	/* what stack holds of the thread stopped now: have_len bytes from have_sp (where_prefetch()) */
	uint64_t have_sp;
	size_t have_len;
	/*
	 * where_warm_up()'s read before the stop: warm_n words, and whether
	 * the scan's rules found every one of them safe; and the pc it found
	 * safe, if it did (0 if not).
	 */
	uint64_t *warm;
	size_t warm_n;
	bool warm_safe;
	uint64_t warm_pc;
	struct utab tabs[MAX_TABS];
	unsigned ntabs;
	bool tabs_built; /* once, before the first borrow (or prof on's asking) */
};

static int tab_read(const struct uw_arg *a, uint64_t addr, void *out, size_t len)
{
	uint64_t k = (addr - TAB_BASE) >> 32, off = (addr - TAB_BASE) & 0xffffffffull;

	if (k >= a->ntabs || !a->tabs[k].buf || off > a->tabs[k].len || len > a->tabs[k].len - off)
		return -1;
	memcpy(out, a->tabs[k].buf + off, len);
	return 0;
}

static int uw_read(struct uw_arg *a, uint64_t addr, void *out, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(CPAGE - 1);
	struct hc_err e = { 0 };
	unsigned i;

	if (addr >= TAB_BASE)
		return tab_read(a, addr, out, len);
	if ((addr & (CPAGE - 1)) + len > CPAGE ||
	    (!a->cache && !(a->cache = calloc(CACHE_PAGES, sizeof(*a->cache)))))
		return mem_read(a->t->img->pid, a->t->img->memfd, addr, out, len, &e);
	for (i = 0; i < CACHE_PAGES; i++)
		if (a->cache[i].valid && a->cache[i].addr == page)
			goto hit;
	i = a->next++ % CACHE_PAGES;
	if (mem_read(a->t->img->pid, a->t->img->memfd, page, a->cache[i].data, CPAGE, &e) < 0) {
		a->cache[i].valid = false;
		e.code = HC_OK;
		return mem_read(a->t->img->pid, a->t->img->memfd, addr, out, len, &e);
	}
	a->cache[i].valid = true;
	a->cache[i].addr = page;
hit:
	memcpy(out, a->cache[i].data + (addr - page), len);
	return 0;
}

static int uw_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			 void *arg)
{
	(void)as;
	if (write)
		return -UNW_EINVAL;
	return uw_read(arg, addr, val, sizeof(*val)) < 0 ? -UNW_EINVAL : 0;
}

static int uw_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need, void *arg)
{
	struct uw_arg *a = arg;
	struct obj *o = obj_at(a->t->img, ip);
	uint8_t hdr[4];
	int32_t fde_count;
	unw_dyn_info_t di;

	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	for (unsigned k = 0; o && !o->eh_hdr && k < a->ntabs; k++) {
		const struct utab *u = &a->tabs[k];
		uint32_t n;

		if (ip < u->lo || ip >= u->hi || !u->buf)
			continue;
		memcpy(&n, u->buf + 8, 4);
		di.start_ip = u->lo;
		di.end_ip = u->hi;
		di.u.rti.segbase = u->segbase;
		di.u.rti.table_data = TAB_BASE + ((uint64_t)k << 32) + 12;
		di.u.rti.table_len = (unw_word_t)n * 8 / sizeof(unw_word_t);
		return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need, arg);
	}
	if (!o || !o->eh_hdr || uw_read(a, o->eh_hdr, hdr, sizeof(hdr)) < 0)
		return -UNW_ENOINFO;
	/*
	 * .eh_frame_hdr: version 1, eh_frame_ptr enc, fde_count enc, table enc.
	 * The binary-search table is usable only as datarel|sdata4 (0x3b),
	 * which is what every linker writes; anything else goes to _UPT.
	 */
	if (hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b ||
	    (hdr[1] & 0x0f) != 0x0b /* sdata4 */) {
		if (!a->upt)
			a->upt = _UPT_create(a->tid);
		return a->upt ? _UPT_find_proc_info(as, ip, pi, need, a->upt) : -UNW_ENOINFO;
	}
	if (uw_read(a, o->eh_hdr + 8, &fde_count, sizeof(fde_count)) < 0 || fde_count <= 0)
		return -UNW_ENOINFO;
	di.start_ip = o->text_lo;
	di.end_ip = o->text_hi;
	di.u.rti.segbase = o->eh_hdr;
	di.u.rti.table_data = o->eh_hdr + 12;
	di.u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need, arg);
}

static void uw_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)arg;
	free(pi->unwind_info);
	pi->unwind_info = NULL;
}

static int uw_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil, void *arg)
{
	(void)as;
	(void)dil;
	(void)arg;
	return -UNW_ENOINFO;
}

/* Registers come from the saved image: no PTRACE_GETREGSET of libunwind's own. */
static int uw_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
			 void *arg)
{
	struct uw_arg *a = arg;
	uint64_t v;

	(void)as;
	if (write || reg < 0 || a->t->img->arch->unwind_reg(a->gregs, (unsigned int)reg, &v) < 0)
		return -UNW_EBADREG;
	*val = v;
	return 0;
}

/* A walk for return addresses needs no floating-point register. */
static int uw_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			   int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static unw_accessors_t uw_accessors = {
	.find_proc_info = uw_find_proc_info,
	.put_unwind_info = uw_put_unwind_info,
	.get_dyn_info_list_addr = uw_get_dyn_info_list_addr,
	.access_mem = uw_access_mem,
	.access_reg = uw_access_reg,
	.access_fpreg = uw_access_fpreg,
};

/*
 * libunwind takes its memory pool's lock around every allocation, and
 * blocks every signal while it holds it: two rt_sigprocmask calls per
 * lock, four per frame, about half of the safe-point check's time in the
 * stopped window.  The blocking only protects an unwind run from a signal
 * handler; heapctl never unwinds in one, so the static libunwind's calls
 * (linked with --wrap=sigprocmask; heapctl's own code uses
 * pthread_sigmask) change nothing.
 */
int __wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int __wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	(void)how;
	(void)set;
	if (old)
		sigemptyset(old);
	return 0;
}

/*
 * libunwind's address space, made when an unwind is first needed: the
 * stack scan vouches for nearly every thread, and making one touches
 * about 14 fresh pages (libunwind's own tables), 2 µs each under a
 * hypervisor, on every round trip.  No cache: one unwind per thread
 * tried, and each frame has another ip.
 */
static unw_addr_space_t unw_space(struct engine *t)
{
	if (!t->unw && (t->unw = unw_create_addr_space(&uw_accessors, 0)))
		unw_set_caching_policy(t->unw, UNW_CACHE_NONE);
	return t->unw;
}

/*
 * The tables of the objects with code and no .eh_frame_hdr, built once,
 * before the first stop and only by a command that borrows: reading
 * .eh_frame and sorting its FDEs takes milliseconds.  One that cannot be
 * built is only said: the walk ends there, and a walk that ends early
 * proves nothing (where_safe()).
 */
static void tabs_build(struct engine *t, struct uw_arg *a)
{
	if (a->tabs_built)
		return;
	a->tabs_built = true;
	for (size_t i = 0; i < t->img->nobjs && a->ntabs < MAX_TABS; i++) {
		const struct obj *o = &t->img->objs[i];
		struct hc_err e = { 0 };
		uint64_t eh, len;
		uint8_t *bytes, *tab = NULL, *buf = NULL;
		size_t tlen = 0;

		if (o->eh_hdr || o->is_vdso || o->text_hi <= o->text_lo ||
		    obj_eh_frame(o, &eh, &len) < 0 || len > (64u << 20))
			continue;
		bytes = malloc(len);
		if (bytes && mem_read(t->img->pid, t->img->memfd, eh, bytes, len, &e) == 0)
			tab = ehhdr_build(bytes, len, eh, eh, &tlen, &e);
		free(bytes);
		if (tab && (buf = calloc(1, (tlen + 15) & ~(size_t)7)))
			memcpy(buf, tab, tlen);
		free(tab);
		a->tabs[a->ntabs] = (struct utab){ o->text_lo, o->text_hi, eh, len, buf,
						   (tlen + 15) & ~(size_t)7, tlen, "" };
		if (!buf) {
			snprintf(a->tabs[a->ntabs].why, sizeof(a->tabs[0].why), "%.120s",
				 e.msg[0] ? e.msg : "out of memory");
			pr_debug("%s has no .eh_frame_hdr and no table could be made (%s): unwinding "
				 "stops there", o->path, a->tabs[a->ntabs].why);
		} else {
			pr_debug("%s: an unwind table of %zu bytes made from its .eh_frame", o->path,
				 tlen);
		}
		a->ntabs++;
	}
}

const uint8_t *where_eh_table(struct engine *t, uint64_t text_lo, size_t *len, uint64_t *eh,
			      uint64_t *eh_len, char *why, size_t whylen)
{
	struct uw_arg *a = t->uw;

	snprintf(why, whylen, "%s", "");
	if (a)
		tabs_build(t, a);
	for (unsigned k = 0; a && k < a->ntabs; k++) {
		const struct utab *u = &a->tabs[k];

		if (u->lo != text_lo)
			continue;
		if (!u->buf) {
			snprintf(why, whylen, "%s", u->why);
			return NULL;
		}
		*len = u->tlen;
		*eh = u->segbase;
		*eh_len = u->eh_len;
		return u->buf;
	}
	return NULL;
}

int where_init(struct engine *t, struct hc_err *err)
{
	t->uw = calloc(1, sizeof(struct uw_arg));
	if (t->uw) {
		t->uw->stack = malloc(SCAN_MAX);
		t->uw->warm = malloc(SCAN_MAX); /* touched by its reads, before any stop */
	}
	if (!t->uw || !t->uw->stack || !t->uw->warm) {
		if (t->uw) {
			free(t->uw->stack);
			free(t->uw->warm);
		}
		free(t->uw);
		t->uw = NULL;
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	}
	/*
	 * Its first 16 KiB touched now, what most stacks need: no page fault
	 * while a thread is stopped (page faults cost microseconds each under
	 * a hypervisor).  A deeper stack, or an unwind, takes a few.
	 */
	memset(t->uw->stack, 0, 16 * 1024);
	return 0;
}

static int cmp_xrange(const void *a, const void *b)
{
	const struct xrange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static size_t gran_slot(uint64_t g)
{
	return (size_t)((g * 0x9e3779b97f4a7c15ull) >> 52) % GRAN_SLOTS;
}

static void gran_add(struct uw_arg *a, uint64_t g)
{
	size_t i = gran_slot(g);

	while (a->gran[i] && a->gran[i] != g)
		i = (i + 1) % GRAN_SLOTS;
	a->gran[i] = g;
}

/* May raddr be code?  False for nearly every data word, at the cost of a probe or two. */
static bool gran_has(const struct uw_arg *a, uint64_t raddr)
{
	uint64_t g = (raddr >> GRAN_SHIFT) + 1;

	if (a->gran_all)
		return true;
	for (size_t i = gran_slot(g); a->gran[i]; i = (i + 1) % GRAN_SLOTS)
		if (a->gran[i] == g)
			return true;
	return false;
}

int where_prepare(struct engine *t)
{
	struct uw_arg *a = t->uw;
	size_t n = 0, cap = t->img->nobjs + t->img->nvmas, ngran = 0;
	struct xrange *xr;

	if (!a)
		return -1;
	tabs_build(t, a);
	/* judged against the ranges rebuilt here */
	a->warm_safe = false;
	a->warm_pc = 0;
	xr = realloc(a->xr, (cap ? cap : 1) * sizeof(*xr));
	if (!xr)
		return -1;
	a->xr = xr;
	for (size_t i = 0; i < t->img->nobjs; i++) {
		struct obj *o = &t->img->objs[i];

		if (!o->base || o->text_hi <= o->text_lo)
			continue;
		xr[n++] = (struct xrange){ o->text_lo, o->text_hi, o };
		/* the verdicts' room, now rather than in the stopped window */
		if (o->sorted && o->nsyms && !o->verdict && !(o->verdict = calloc(o->nsyms, 1)))
			return -1;
	}
	for (size_t i = 0; i < t->img->nvmas; i++)
		if ((t->img->vmas[i].flags & (VMA_X | VMA_ANON)) == (VMA_X | VMA_ANON))
			xr[n++] = (struct xrange){ t->img->vmas[i].lo, t->img->vmas[i].hi, NULL };
	qsort(xr, n, sizeof(*xr), cmp_xrange);
	a->nxr = n;
	a->gran_all = false;
	memset(a->gran, 0, sizeof(a->gran));
	for (size_t i = 0; i < n; i++)
		for (uint64_t g = xr[i].lo >> GRAN_SHIFT; g <= (xr[i].hi - 1) >> GRAN_SHIFT; g++) {
			/* a set over half full probes long: then every word takes the search */
			if (++ngran > GRAN_SLOTS / 2) {
				a->gran_all = true;
				return 0;
			}
			gran_add(a, g + 1);
		}
	return 0;
}

void where_fini(struct engine *t)
{
	if (t->unw)
		unw_destroy_addr_space(t->unw);
	t->unw = NULL;
	if (t->uw) {
		free(t->uw->xr);
		free(t->uw->stack);
		free(t->uw->warm);
		free(t->uw->cache);
		for (unsigned k = 0; k < t->uw->ntabs; k++)
			free(t->uw->tabs[k].buf);
	}
	free(t->uw);
	t->uw = NULL;
}

bool where_malloc_family(const char *name, const char *prefix)
{
	size_t pl = prefix ? strlen(prefix) : 0;

	if (pl && !strncmp(name, prefix, pl))
		return true; /* the allocator's own namespace, e.g. je_ */
	/*
	 * glibc internals the entry point list does not name (_int_free,
	 * malloc_consolidate, __libc_alloc_buffer_*).  Substrings also take
	 * a program's own xmalloc(): here that costs a short wait, in the
	 * report it would hide the frame that allocated, so this rule is
	 * where.c's only.
	 */
	if (strstr(name, "malloc") || !strncmp(name, "_int_", 5) ||
	    (!strncmp(name, "__libc_", 7) &&
	     (strstr(name, "alloc") || strstr(name, "free") || strstr(name, "memalign"))))
		return true;
	return allocfn_is_entry(name);
}

/* 0 if the frame at ip is fine, else 1 with reason. */
static int frame_unsafe(struct engine *t, uint64_t ip, unsigned depth, char *reason,
			size_t len)
{
	struct obj *o = NULL;
	const struct sym *s = sym_at(t->img, ip, &o);
	const char *fn = s ? s->name : "?";

	if (!o) {
		snprintf(reason, len, "frame #%u at 0x%llx is in anonymous memory", depth,
			 (unsigned long long)ip);
		return 1;
	}
	if (t->in_allocator && t->in_allocator(t, ip)) {
		snprintf(reason, len, "frame #%u is inside the allocator (%s in %s)", depth, fn,
			 o->path);
		return 1;
	}
	if (o->is_ldso) {
		snprintf(reason, len, "frame #%u is inside the dynamic linker (%s)", depth, fn);
		return 1;
	}
	if (s && where_malloc_family(s->name, t->alloc_prefix)) {
		snprintf(reason, len, "frame #%u is inside %s() in %s", depth, s->name, o->path);
		return 1;
	}
	return 0;
}

/*
 * arm64: a second opinion from the frame records.
 *
 * libunwind 1.6.2 does not know DW_CFA_AARCH64_negate_ra_state (0x2d, the
 * number of DW_CFA_GNU_window_save, which it rejects with -UNW_EINVAL off
 * SPARC), and every function built with -mbranch-protection=standard
 * (pac-ret) has one in its CFI.  Its aarch64 unw_step() then takes the
 * link register once and reports the end of the stack: the unwind stops
 * *cleanly* after about three frames, and a thread four frames deep in
 * the allocator would look safe.  So on arm64 the chain of frame records
 * is walked as well (the arch's frame_walk), and a thread is safe only if
 * that chain reaches the outermost frame (a saved x29 of 0: _start and
 * clone's thread_start clear x29) and no address on it, nor pc, nor a
 * live-looking lr, is unsafe.  Return addresses may carry a pointer
 * authentication code; the arch's pac_regset says which bits to clear.
 */
static int read_record(void *arg, uint64_t addr, uint64_t rec[2])
{
	return uw_read(arg, addr, rec, 2 * sizeof(uint64_t));
}

/* The PAC bits of return addresses: one read per target, the same for every thread. */
static uint64_t pac_mask(struct engine *t, pid_t tid)
{
	uint64_t m[2];
	size_t mlen = sizeof(m);
	struct hc_err e = { 0 };

	if (!t->pac_known && t->img->arch->pac_regset) {
		/* No pointer authentication on this CPU or kernel: nothing to strip. */
		t->pac_mask = ptrace_regset_get(tid, t->img->arch->pac_regset, m, &mlen, &e) < 0 ? 0 : m[1];
		t->pac_known = true;
	}
	return t->pac_mask;
}

/*
 * 1 if the frame records of tid prove it safe, 0 with reason if not.
 * lu_depth is how far libunwind got, for the log.
 */
static int frame_records_safe(struct engine *t, pid_t tid, struct uw_arg *a,
			      unsigned int lu_depth, char *reason, size_t len)
{
	uint64_t pc = t->img->arch->get_pc(a->gregs), lr = 0, mask = pac_mask(t, tid);
	uint64_t rets[MAX_FRAMES];
	struct obj *o;
	char why[160];
	int n;

	if (t->img->arch->unwind_reg(a->gregs, 30, &lr) < 0) /* x30 */
		lr = 0;
	if (frame_unsafe(t, pc, 0, reason, len))
		return 0;
	/*
	 * lr is the return address of a leaf function, or scratch: it counts
	 * only if it points into code, and then like a caller's frame.
	 */
	lr &= ~mask;
	if (obj_at(t->img, lr) && frame_unsafe(t, lr - 1, 1, reason, len))
		return 0;
	n = t->img->arch->frame_walk(a->gregs, mask, read_record, a, rets, MAX_FRAMES, why, sizeof(why));
	if (n < 0) {
		snprintf(reason, len, "incomplete stack: %s", why);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		o = obj_at(t->img, rets[i]);
		/*
		 * A return into the vDSO is a signal frame (__kernel_rt_sigreturn):
		 * the interrupted pc lives in the sigcontext, not in a frame record,
		 * so this walk cannot vouch for it.
		 */
		if (o && o->is_vdso) {
			snprintf(reason, len, "frame #%d is a signal frame; the interrupted code is unknown",
				 i + 1);
			return 0;
		}
		if (frame_unsafe(t, rets[i] - 1, (unsigned int)i + 1, reason, len))
			return 0;
	}
	if ((unsigned int)n + 1 > lu_depth)
		pr_debug("tid %d: libunwind stopped after %u frames, the frame records go %d deep",
			 tid, lu_depth, n + 1);
	return 1;
}

/* The executable range holding raddr, or NULL. */
static const struct xrange *xrange_at(const struct uw_arg *a, uint64_t raddr)
{
	size_t lo = 0, hi = a->nxr;

	if (!hi || raddr < a->xr[0].lo || raddr >= a->xr[hi - 1].hi)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (raddr < a->xr[mid].lo)
			hi = mid;
		else if (raddr >= a->xr[mid].hi)
			lo = mid + 1;
		else
			return &a->xr[mid];
	}
	return NULL;
}

/*
 * Would code at raddr, found on the stack or in a register, make a call
 * unsafe?  frame_unsafe()'s rules, without loading a symbol table in the
 * stopped window: an object whose symbols sym_prepare() did not read holds
 * no malloc-family function that matters here (its calls into the
 * allocator leave return addresses of their own).  Each function's verdict
 * is kept, so a stack is judged at the cost of a lookup per return.
 */
static bool code_unsafe(struct engine *t, uint64_t raddr, const char *what, char *why,
			size_t len)
{
	const struct xrange *x;
	const struct sym *s;
	struct obj *o;

	if (!gran_has(t->uw, raddr) || !(x = xrange_at(t->uw, raddr)))
		return false;
	o = x->o;
	if (!o) {
		snprintf(why, len, "%s 0x%llx is in anonymous code", what, (unsigned long long)raddr);
	} else if (t->in_allocator && t->in_allocator(t, raddr)) {
		snprintf(why, len, "%s 0x%llx is in the allocator", what, (unsigned long long)raddr);
	} else if (o->is_ldso) {
		snprintf(why, len, "%s 0x%llx is in the dynamic linker", what,
			 (unsigned long long)raddr);
	} else if (o->verdict && (s = obj_sym_at(o, raddr))) {
		uint8_t *v = &o->verdict[s - o->syms];

		if (!*v)
			*v = where_malloc_family(s->name, t->alloc_prefix) ? 2 : 1;
		if (*v == 1)
			return false;
		snprintf(why, len, "%s 0x%llx is in %s()", what, (unsigned long long)raddr, s->name);
	} else {
		return false;
	}
	return true;
}

/* The thread pointer, where glibc and musl put a thread's descriptor, at its stack's top. */
static uint64_t thread_pointer(struct engine *t, pid_t tid, const void *gregs)
{
	uint64_t tls[2] = { 0, 0 };
	size_t n = sizeof(tls);
	struct hc_err e = { 0 };

	if (t->img->arch->get_tp)
		return t->img->arch->get_tp(gregs);
	if (!t->img->arch->tp_regset || ptrace_regset_get(tid, t->img->arch->tp_regset, tls, &n, &e) < 0)
		return 0;
	return tls[0];
}

/*
 * The live stack, for the scan: from sp to where the main thread's stack
 * began (argc, /proc/PID/stat's startstack; else the top of its [stack]),
 * or for another thread to its thread pointer (tp; 0: unknown,
 * then the end of sp's mapping, for warm_up()): glibc and musl put the
 * thread descriptor and the static TLS at the top of a thread's stack
 * mapping.  A sp anywhere else (a signal handler on its sigaltstack, a
 * coroutine's stack) leaves the scan nothing it can vouch for.  0, or the
 * end with why.
 */
static uint64_t stack_top(struct engine *t, uint64_t sp, uint64_t tp, char *why, size_t len)
{
	const struct vma *v = vma_at(t->img, sp);
	uint64_t hi;

	if (!v) {
		snprintf(why, len, "sp 0x%llx is in no mapping heapctl knows",
			 (unsigned long long)sp);
		return 0;
	}
	hi = v->flags & VMA_STACK ? v->hi : tp;
	/* the main thread's frames all lie below argc: above it, arguments and environment */
	if ((v->flags & VMA_STACK) && t->img->start_stack > sp && t->img->start_stack <= v->hi)
		hi = t->img->start_stack;
	if (!tp && !(v->flags & VMA_STACK))
		hi = v->hi - sp > SCAN_MAX ? sp + SCAN_MAX : v->hi;
	if (hi <= sp || hi > v->hi) {
		snprintf(why, len, "sp 0x%llx is not on a stack whose top heapctl knows",
			 (unsigned long long)sp);
		return 0;
	}
	if (hi - sp > SCAN_MAX) {
		snprintf(why, len, "%llu KiB of stack", (unsigned long long)(hi - sp) / 1024);
		return 0;
	}
	return hi;
}

/*
 * The scan's rule for one stack word w, at address at: is it a return into
 * unsafe code, or a signal frame's (the restorer: the code it interrupted
 * may sit on another stack)?  It depends on w alone, which is what lets
 * the scan pass over words where_warm_up() already found safe.
 */
static bool word_unsafe(struct engine *t, uint64_t w, uint64_t at, char *why, size_t len)
{
	if (w < 4096)
		return false;
	if (w == t->restorer) {
		snprintf(why, len, "a signal frame at 0x%llx", (unsigned long long)at);
		return true;
	}
	return code_unsafe(t, w - 1, "a return into", why, len);
}

/*
 * The stack scan: 1 if the stack proves tid safe, 0 if it does not (why:
 * a suspicious word, or a stack the scan cannot bound), and the unwind
 * decides.
 */
static int scan_safe(struct engine *t, pid_t tid, const void *gregs, size_t *bytes, uint64_t *slot,
		     char *why, size_t len)
{
	const struct hc_arch *ar = t->img->arch;
	struct uw_arg *a = t->uw;
	uint64_t sp = ar->get_sp(gregs) & ~7ull, hi, mask = 0;
	struct hc_err e = { 0 };
	size_t n;
	bool warm;

	hi = stack_top(t, sp, t->img->vmas && vma_at(t->img, sp) && (vma_at(t->img, sp)->flags & VMA_STACK) ?
				      0 : thread_pointer(t, tid, gregs), why, len);
	if (!hi)
		return 0;
	n = (size_t)(hi - sp) / 8;
	if ((a->have_sp != sp || a->have_len < n * 8) &&
	    mem_read(t->img->pid, t->img->memfd, sp, a->stack, n * 8, &e) < 0) {
		snprintf(why, len, "the stack is unreadable (%.100s)", e.msg);
		return 0;
	}
	a->have_len = 0;
	*bytes = n * 8;
	/* a pc's verdict depends on its value alone, as a word's does */
	if (ar->get_pc(gregs) != a->warm_pc && code_unsafe(t, ar->get_pc(gregs), "pc", why, len))
		return 0;
	if (ar->frame_walk)
		mask = pac_mask(t, tid);
	/*
	 * A return address may still be in a register where the link register
	 * holds it (arm64): any register that returns into unsafe code counts.
	 */
	for (unsigned int r = 0; ar->regs_hold_returns && r <= ar->regs_hold_returns; r++) {
		uint64_t val;

		if (ar->unwind_reg(gregs, r, &val) == 0 && val > 4 &&
		    code_unsafe(t, (val & ~mask) - 1, "a register, at", why, len))
			return 0;
	}
	warm = a->warm_safe && !mask;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = a->stack[i] & ~mask;

		/* as the scan ahead read it (the same sp nearly always), which found every word safe */
		if (warm && i < a->warm_n && w == a->warm[i])
			continue;
		if (word_unsafe(t, w, sp + 8 * i, why, len)) {
			*slot = sp + 8 * i;
			return 0;
		}
	}
	return 1;
}

/* Read [sp, its stack's top) into buf (at most PREFETCH past sp on a thread's own stack); its size. */
#define PREFETCH (16 * 1024)
static size_t read_stack(struct engine *t, uint64_t sp, uint64_t *buf)
{
	uint64_t hi;
	char why[160];
	struct hc_err e = { 0 };

	hi = sp ? stack_top(t, sp, 0, why, sizeof(why)) : 0;
	if (!hi)
		return 0;
	/* stack_top() found sp's mapping */
	if (hi - sp > PREFETCH && !(vma_at(t->img, sp)->flags & VMA_STACK))
		hi = sp + PREFETCH;
	if (mem_read(t->img->pid, -1, sp, buf, hi - sp, &e) < 0)
		return 0;
	return hi - sp;
}

/*
 * Before the stop: judge the stack as it is now by scan_safe()'s rules,
 * which warms the verdicts the scan will look up.  If every word is
 * safe, the scan after the stop passes over the words still the same:
 * a word's verdict depends on its value alone.
 */
void where_warm_up(struct engine *t, uint64_t sp, uint64_t pc)
{
	struct uw_arg *a = t->uw;
	char why[160];

	if (!a)
		return;
	a->warm_pc = pc && !code_unsafe(t, pc, "pc", why, sizeof(why)) ? pc : 0;
	sp &= ~7ull;
	a->have_len = 0; /* what a->stack holds is another stop's */
	a->warm_n = read_stack(t, sp, a->warm) / 8;
	a->warm_safe = true;
	/* every word, not only up to the first unsafe one: each warms its verdict */
	for (size_t i = 0; i < a->warm_n; i++)
		if (word_unsafe(t, a->warm[i], sp + 8 * i, why, sizeof(why)))
			a->warm_safe = false;
}

void where_prefetch(struct engine *t, uint64_t sp)
{
	struct uw_arg *a = t->uw;

	if (!a)
		return;
	sp &= ~7ull;
	a->have_len = read_stack(t, sp, a->stack);
	a->have_sp = sp;
}

int where_safe(struct engine *t, pid_t tid, const void *gregs, char *reason, size_t len)
{
	struct uw_arg *a = t->uw;
	bool records = t->img->arch->frame_walk != NULL;
	uint64_t pac = 0;
	unw_cursor_t c;
	unsigned depth = 0;
	int ret = 0, r;
	size_t bytes = 0;
	uint64_t slot = 0;
	unw_word_t last_sp = 0;
	char why[160];

	if (scan_safe(t, tid, gregs, &bytes, &slot, why, sizeof(why)) == 1) {
		pr_debug("tid %d: %zu bytes of stack scanned, none returns into the allocator", tid,
			 bytes);
		return 1;
	}
	pr_debug("tid %d: the stack scan cannot vouch for it (%s): unwinding", tid, why);
	for (unsigned int i = 0; a->cache && i < CACHE_PAGES; i++)
		a->cache[i].valid = false;
	a->next = 0;
	a->t = t;
	a->tid = tid;
	a->gregs = gregs;
	a->upt = NULL;
	if (!unw_space(t) || unw_init_remote(&c, t->unw, a) < 0) {
		snprintf(reason, len, "cannot start unwinding thread %d", tid);
		goto out;
	}
	if (records)
		pac = pac_mask(t, tid);
	for (;;) {
		unw_word_t ip;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
			snprintf(reason, len, "unwind failed at frame #%u", depth);
			goto out;
		}
		ip &= ~pac; /* libunwind 1.6.2 does not strip PAC bits */
		/* Return addresses point after the call: look at the call itself. */
		if (frame_unsafe(t, depth && !unw_is_signal_frame(&c) ? ip - 1 : ip, depth, reason,
				 len))
			goto out;
		if (++depth >= MAX_FRAMES) {
			snprintf(reason, len, "stack deeper than %u frames", MAX_FRAMES);
			goto out;
		}
		/* the last frame found: once a step ends the walk, the cursor says nothing */
		if (unw_get_reg(&c, UNW_REG_SP, &last_sp) < 0)
			last_sp = 0;
		r = unw_step(&c);
		if (r == 0)
			break;
		if (r < 0 && records) {
			/* The frame records decide below. */
			pr_debug("tid %d: libunwind stopped after frame #%u (%s)", tid, depth - 1,
				 unw_strerror(r));
			break;
		}
		if (r < 0) {
			snprintf(reason, len, "incomplete unwind after frame #%u (%s)", depth - 1,
				 unw_strerror(r));
			goto out;
		}
	}
	/* On arm64 a clean end of libunwind's walk proves nothing (see above). */
	if (records && !frame_records_safe(t, tid, a, depth, reason, len))
		goto out;
	/*
	 * Nor does a walk that ended below the word the scan found returning
	 * into the allocator: an object without unwind tables (a static
	 * executable has no .eh_frame_hdr) ends it early, and cleanly.
	 */
	if (slot && r == 0 && last_sp <= slot) {
		snprintf(reason, len, "the unwind ended (frame #%u, sp 0x%llx) below the stack word at "
			 "0x%llx that returns into the allocator", depth - 1, (unsigned long long)last_sp,
			 (unsigned long long)slot);
		goto out;
	}
	pr_debug("tid %d: %u frames, none in the allocator", tid, depth);
	ret = 1;
out:
	if (a->upt)
		_UPT_destroy(a->upt);
	return ret;
}

void where_disasm(struct engine *t, uint64_t pc, enum hc_log_level level)
{
	uint8_t buf[48];
	struct hc_err e = { 0 };
	csh cs;
	cs_insn *insn;
	size_t n;
	uint64_t start = pc >= 16 ? pc - 16 : pc;

	if (!hc_log_on(level) || mem_read(t->img->pid, t->img->memfd, start, buf, sizeof(buf), &e) < 0)
		return;
	if (cs_open(t->img->arch->cs_arch, t->img->arch->cs_mode, &cs) != CS_ERR_OK)
		return;
	/* x86 is variable-length: decode from pc, and show the syscall before it if any */
	if (pc >= 16 && !memcmp(buf + 16 - t->img->arch->syscall_insn.len, t->img->arch->syscall_insn.b, t->img->arch->syscall_insn.len))
		hc_log_print(level, "  0x%llx: (previous) syscall",
			     (unsigned long long)(pc - t->img->arch->syscall_insn.len));
	n = cs_disasm(cs, buf + (pc - start), sizeof(buf) - (pc - start), pc, 4, &insn);
	for (size_t i = 0; i < n; i++)
		hc_log_print(level, "  0x%llx: %s %s%s", (unsigned long long)insn[i].address,
			     insn[i].mnemonic, insn[i].op_str, i ? "" : "   <- pc");
	if (n)
		cs_free(insn, n);
	cs_close(&cs);
}
