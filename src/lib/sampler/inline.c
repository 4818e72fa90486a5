// SPDX-License-Identifier: MIT
/*
 * Inline hooks, for an allocator linked into the executable (a static
 * binary calls malloc directly: there is no GOT slot to take).
 *
 * The arch layer plans each hook (arch/<arch>/hook.c, with Capstone): the
 * bytes that replace the function's first instruction(s) with a jump to a
 * stub, and a trampoline that runs the displaced instructions, relocated,
 * and jumps back.  Anything it cannot move safely is refused by name.
 *
 * Installing, in one borrow:
 *   1. the trampolines, written here into a memfd made in the target and
 *      mapped read-and-execute within a jump's reach of the functions,
 *      below the executable (never where brk() grows);
 *   2. a record of every hook in the sampler's state, the original bytes
 *      with it, before anything is patched: whoever finds the sampler
 *      next, a heapctl killed meanwhile included, can put them back;
 *   3. every other thread stopped (freeze.c), none of them with its pc
 *      inside bytes about to change (else they run on and it is tried
 *      again), each patch written through /proc/PID/mem (the kernel
 *      synchronises the instruction cache on arm64), and read back.
 * A patch never crosses a page, so each is written whole or not at all:
 * killed at any step, the target is hooked or not, function by function,
 * never half-patched.  free() is hooked first and unhooked last, so no
 * sampled block is ever freed unseen.
 *
 * Removal first marks the sampler not hooked (a next prof on then patches
 * again whatever was put back), then puts back the original bytes where
 * heapctl's patch still is, under the same freeze, and reads them back;
 * the trampolines stay mapped
 * (a thread may still be in one), as the sampler's code does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../sampler/hcs.h"
#include "call.h"
#include "clock.h"
#include "engine.h"
#include "freeze.h"
#include "image.h"
#include "inject_int.h"
#include "log.h"
#include "ehhdr.h"
#include "mem.h"
#include "where.h"

#define TRAMP_NAME "heapctl-hooks" /* maps shows "/memfd:heapctl-hooks (deleted)" */
#define UNWIND_NAME "heapctl-unwind"
#define FREEZE_TRIES 20

/*
 * The hooks in the order they go in: free first (see above).  The C
 * functions only: C++'s operators new and delete in a static binary call
 * malloc and free, which are hooked, and the sampler counts the outermost
 * call (sampler.c, OUTER()).
 */
static const int order[] = { HCS_H_FREE, HCS_H_MALLOC, HCS_H_CALLOC, HCS_H_REALLOC,
			     HCS_H_REALLOCARRAY, HCS_H_POSIX_MEMALIGN, HCS_H_ALIGNED_ALLOC,
			     HCS_H_MEMALIGN, HCS_H_VALLOC, HCS_H_PVALLOC };

static uint64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static uint64_t min_addr(void)
{
	unsigned long long v = 65536;
	FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "re");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 65536;
		fclose(f);
	}
	return v;
}

/*
 * A free place for len bytes within reach of [lo, hi): the nearest below
 * the executable, where nothing grows; only if there is none, above it,
 * past the gap right after it (where brk() grows).  0: none.
 */
static uint64_t place(struct engine *t, const struct obj *exe, uint64_t lo, uint64_t hi, uint64_t len,
		      uint64_t reach, struct hc_err *err)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), floor = (min_addr() + pg - 1) & ~(pg - 1);
	uint64_t best = 0;
	struct range *r;
	size_t n;

	r = read_maps(t, &n, NULL, err);
	if (!r)
		return 0;
	for (int above = 0; above < 2 && !best; above++)
		for (size_t i = 0; i <= n; i++) {
			uint64_t glo = i ? r[i - 1].hi : floor, ghi = i < n ? r[i].lo : 0x800000000000ull, a;

			if (glo < floor)
				glo = floor;
			if (ghi <= glo || ghi - glo < len)
				continue;
			if (!above && ghi <= exe->lo)
				a = (ghi - len) & ~(pg - 1);
			else if (above && glo > exe->hi && i && r[i - 1].hi != exe->hi)
				a = glo;
			else
				continue;
			if (a < glo || dist(a, lo) >= reach || dist(a + len, hi) >= reach ||
			    dist(a, hi) >= reach || dist(a + len, lo) >= reach)
				continue;
			if (!best || dist(a, lo) < dist(best, lo))
				best = a;
		}
	free_maps(r, n);
	return best;
}

/* Plans for every function to hook; their trampolines laid out from tramp. */
struct plan {
	int id;
	struct hc_hook_plan p;
};

static int plan_all(struct engine *t, struct inj *in, uint64_t tramp, struct plan *pl, unsigned *npl,
		    uint64_t *used, struct hc_err *err)
{
	const struct hc_arch *a = t->img->arch;
	uint64_t at = tramp;

	*npl = 0;
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		int id = order[k];
		uint64_t entry = in->prep.orig[id], size = in->prep.size[id];
		struct hc_hook_in hin;
		uint8_t *code;
		char why[256];
		bool dup = false;

		if (!entry)
			continue;
		/* an alias (aligned_alloc and memalign, in some glibcs) is hooked once */
		for (unsigned i = 0; i < *npl; i++)
			dup |= in->prep.orig[pl[i].id] == entry;
		if (dup)
			continue;
		code = malloc(size < 64 ? 64 : size);
		if (!code)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (mem_read(t->img->pid, t->img->memfd, entry, code, size < 64 ? 64 : size, err) < 0) {
			free(code);
			return -1;
		}
		hin = (struct hc_hook_in){ .name = hook_names[id], .entry = entry, .code = code, .code_len = size < 64 ? 64 : size,
					   .func_size = size, .tramp = at, .hook = in->s.hook[id] };
		if (a->hook_plan(&hin, &pl[*npl].p, why, sizeof(why)) < 0) {
			free(code);
			return err_sethint(err, HC_E_UNSUPPORTED, 0,
					   "heapctl never hooks what it cannot move safely; start the "
					   "program with the allocator's own profiler",
					   "pid %d: %s cannot be hooked: %s", t->img->pid, hook_names[id], why);
		}
		free(code);
		if (((pl[*npl].p.patch_addr ^ (pl[*npl].p.patch_addr + pl[*npl].p.patch_len - 1)) & ~4095ull))
			return err_sethint(err, HC_E_UNSUPPORTED, 0,
					   "start the program with the allocator's own profiler",
					   "pid %d: %s's entry crosses a page: its patch could not be "
					   "written in one piece", t->img->pid, hook_names[id]);
		pl[*npl].id = id;
		at += (pl[*npl].p.tramp_len + 15) & ~15ull;
		(*npl)++;
	}
	*used = at - tramp;
	return 0;
}

/* Map len bytes of buf at addr, read-only or read-and-execute, from a memfd named name. */
static int map_near(struct engine *t, const char *name, uint64_t addr, const uint8_t *buf, uint64_t len,
		    int prot, struct hc_err *err)
{
	uint64_t a[6] = { addr, len, (uint64_t)prot, MAP_PRIVATE | MAP_FIXED_NOREPLACE, 0, 0 };
	char why[160] = "";
	int64_t rfd, ret;
	int lfd, rc;

	rc = make_memfd(t, name, &rfd, &lfd, why, sizeof(why), err);
	if (rc <= 0)
		return rc < 0 ? -1 :
		       err_set(err, HC_E_UNSUPPORTED, 0, "pid %d: no memfd for heapctl's %s: %s",
			       t->img->pid, name, why);
	rc = pwrite(lfd, buf, len, 0) == (ssize_t)len ? 0 :
	     err_set(err, HC_E_IO, errno, "cannot write heapctl's %s for pid %d", name, t->img->pid);
	close(lfd);
	a[4] = (uint64_t)rfd;
	if (rc == 0 && call_syscall(t, t->img->arch->nr_mmap, a, 6, &ret, err) < 0)
		rc = -1;
	else if (rc == 0 && (uint64_t)ret != addr)
		rc = err_set(err, HC_E_UNSUPPORTED, ret < 0 && ret > -4096 ? (int)-ret : 0,
			     "pid %d: cannot map heapctl's %s at 0x%" PRIx64, t->img->pid, name, addr);
	if (close_memfd(t, rfd, err) < 0)
		rc = -1;
	return rc;
}

/*
 * Unwind tables for the objects linked without .eh_frame_hdr (a static
 * executable; anything musl-gcc links): the ones the safe-point check
 * built from their .eh_frame (where_eh_table()), moved to a place within reach
 * of it (the table's entries are 32-bit offsets from its own address),
 * before the borrow; unwind_map() maps them in it.  An object whose table
 * could not be made is only unwound through no further: its frames end
 * the stacks.
 */
int unwind_prepare(struct engine *t, struct inj_prep *p, struct hc_err *err)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < t->img->nobjs && p->ntabs < INJ_MAXEXTRA; i++) {
		struct obj *o = &t->img->objs[i];
		uint64_t eh, eh_len, lo, hi, at = 0, span;
		const uint8_t *tab;
		uint8_t *bytes = NULL;
		size_t tlen;
		struct hc_err e = { 0 };
		char why[128];

		if (o->eh_hdr || is_sampler(o->path))
			continue;
		tab = where_eh_table(t, o->text_lo, &tlen, &eh, &eh_len, why, sizeof(why));
		if (!tab) {
			if (why[0])
				pr_warn("sampler: %s has no .eh_frame_hdr and none could be made (%s): "
					"its frames end the stacks", o->path, why);
			continue;
		}
		lo = eh < o->text_lo ? eh : o->text_lo;
		hi = eh + eh_len > o->text_hi ? eh + eh_len : o->text_hi;
		span = (tlen + pg - 1) & ~(pg - 1);
		at = place(t, o, lo, hi, span, (1ull << 31) - (16ull << 20), &e);
		/* whole pages, zero after the table, as they will be mapped */
		if (at && !(bytes = calloc(1, span)))
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (bytes && (memcpy(bytes, tab, tlen), ehhdr_rebase(bytes, tlen, eh, at, &e) < 0)) {
			free(bytes);
			bytes = NULL;
		}
		if (!bytes) {
			pr_warn("sampler: %s has no .eh_frame_hdr, and its table has no place within "
				"reach (%s): its frames end the stacks", o->path,
				e.msg[0] ? e.msg : "no free address");
			continue;
		}
		p->tabs[p->ntabs++] = (struct unw_tab){ { o->text_lo, o->text_hi, at }, bytes, span, o->path };
	}
	return 0;
}

/* Map the tables unwind_prepare() made; the objects they serve into out (room for p->ntabs). */
int unwind_map(struct engine *t, struct inj_prep *p, struct hcs_obj *out, unsigned *n,
	       struct hc_err *err)
{
	*n = 0;
	for (unsigned i = 0; i < p->ntabs; i++) {
		struct unw_tab *u = &p->tabs[i];

		if (map_near(t, UNWIND_NAME, u->obj.eh_frame_hdr, u->buf, u->len, PROT_READ, err) < 0)
			return -1;
		out[(*n)++] = u->obj;
		pr_info("sampler: an unwind table for %s (no .eh_frame_hdr) at 0x%" PRIx64, u->path,
			u->obj.eh_frame_hdr);
	}
	return 0;
}

/*
 * Stop every other thread with none inside the bytes of recs[0..n) (nor
 * the borrowed thread, as it was), trying again a while if one is.
 */
static int freeze_clear(struct engine *t, const struct hcs_inline *recs, unsigned n,
			struct freeze *f, struct hc_err *err)
{
	uint64_t self_pc;

	/*
	 * A thread borrowed first: that takes the per-target lock, so another
	 * heapctl waits its turn rather than meeting the frozen threads.
	 */
	if (!call_scratch(t, 8, err))
		return err_isset(err) ? -1 : err_set(err, HC_E_INTERNAL, 0, "no scratch in pid %d", t->img->pid);
	self_pc = call_saved_pc(t);
	for (int tries = 0;; tries++) {
		pid_t tid = 0;
		bool busy = false;

		for (unsigned i = 0; i < n && !busy; i++)
			busy = self_pc > recs[i].addr && self_pc < recs[i].addr + recs[i].len;
		if (busy)
			return err_set(err, HC_E_UNSAFE, 0, "pid %d: the borrowed thread is inside %s's "
				       "first bytes", t->img->pid, hook_names[recs[0].id]);
		if (freeze_all(t, f, err) < 0)
			return -1;
		for (unsigned i = 0; i < n && !busy; i++)
			busy = freeze_pc_in(f, recs[i].addr, recs[i].addr + recs[i].len, &tid);
		if (!busy)
			return 0;
		if (thaw_all(t, f, err) < 0)
			return -1;
		if (tries == FREEZE_TRIES)
			return err_set(err, HC_E_UNSAFE, 0, "pid %d: thread %d stays inside the bytes "
				       "heapctl would change", t->img->pid, tid);
		pr_debug("thread %d is inside a hooked function's first bytes: again", tid);
		usleep(200);
	}
}

/* Write recs' patch (install) or original bytes (!install) where the other is; under the freeze. */
static unsigned swap_bytes(struct engine *t, struct hcs_inline *recs, unsigned n, bool install,
			   unsigned *changed)
{
	unsigned done = 0;

	*changed = 0;
	for (unsigned k = 0; k < n; k++) {
		/* installing, in order (free first); removing, the other way round */
		struct hcs_inline *r = &recs[install ? k : n - 1 - k];
		const uint8_t *from = install ? r->orig : r->patch, *to = install ? r->patch : r->orig;
		uint8_t cur[16];
		struct hc_err e = { 0 };

		if (mem_read(t->img->pid, t->img->memfd, r->addr, cur, r->len, &e) < 0)
			continue;
		if (!memcmp(cur, to, r->len)) {
			r->state = install ? HCS_SLOT_PATCHED : HCS_SLOT_PENDING;
			continue;
		}
		if (memcmp(cur, from, r->len)) {
			r->state = HCS_SLOT_CHANGED; /* the program's own change: left alone */
			(*changed)++;
			continue;
		}
		if (mem_write(t->img->memfd, r->addr, to, r->len, &e) < 0 ||
		    mem_read(t->img->pid, t->img->memfd, r->addr, cur, r->len, &e) < 0 ||
		    memcmp(cur, to, r->len)) {
			pr_warn("sampler: %s at 0x%" PRIx64 " could not be %s: %s", hook_names[r->id], r->addr,
				install ? "patched" : "put back", e.msg[0] ? e.msg : "read back differs");
			continue;
		}
		r->state = install ? HCS_SLOT_PATCHED : HCS_SLOT_PENDING;
		done++;
	}
	return done;
}

static int write_recs(struct engine *t, struct inj *in, const struct hcs_inline *recs, unsigned n,
		      struct hc_err *err)
{
	uint32_t cnt = n;

	return call_write(t, in->state + offsetof(struct hcs_state, inl), recs, n * sizeof(*recs), err) < 0 ||
			       call_write(t, in->state + offsetof(struct hcs_state, ninline), &cnt, 4, err) < 0 ?
		       -1 :
		       0;
}

static int set_hooked(struct engine *t, struct inj *in, uint32_t v, struct hc_err *err)
{
	return call_write(t, in->state + offsetof(struct hcs_state, hooked), &v, 4, err);
}

int inline_install(struct engine *t, struct inj *in, uint64_t *orig, struct hc_err *err)
{
	const struct hc_arch *a = t->img->arch;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), lo = UINT64_MAX, hi = 0, tramp, used = 0, len;
	struct obj *exe = obj_malloc_owner(t->img);
	struct plan pl[HCS_NHOOK];
	struct hcs_inline recs[HCS_MAXINLINE];
	struct freeze f;
	unsigned npl, done, changed;
	uint8_t *buf;
	int rc;

	if (!a->hook_plan || !exe)
		return err_set(err, HC_E_UNSUPPORTED, 0, "pid %d: no inline hooks on %s", t->img->pid,
			       a->name);
	for (int id = 0; id < HCS_NHOOK; id++)
		if (in->prep.orig[id]) {
			lo = in->prep.orig[id] < lo ? in->prep.orig[id] : lo;
			hi = in->prep.orig[id] + 64 > hi ? in->prep.orig[id] + 64 : hi;
		}
	/* a first plan sizes the trampolines; the place is then chosen and they are planned for it */
	len = pg;
	tramp = place(t, exe, lo, hi, len, a->hook_reach, err);
	if (!tramp)
		return err_isset(err) ? -1 :
		       err_set(err, HC_E_UNSUPPORTED, 0, "pid %d: no free address within %" PRIu64
			       " MiB of its allocator for the hooks' trampolines", t->img->pid,
			       a->hook_reach >> 20);
	if (plan_all(t, in, tramp, pl, &npl, &used, err) < 0)
		return -1;
	if (used > len || npl > HCS_MAXINLINE)
		return err_set(err, HC_E_INTERNAL, 0, "the hooks' trampolines need more than a page");
	buf = calloc(1, len);
	if (!buf)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memset(recs, 0, sizeof(recs));
	for (unsigned i = 0; i < npl; i++) {
		memcpy(buf + (pl[i].p.stub < pl[i].p.tramp_orig ? pl[i].p.stub : pl[i].p.tramp_orig) - tramp,
		       pl[i].p.tramp, pl[i].p.tramp_len);
		recs[i].addr = pl[i].p.patch_addr;
		recs[i].len = (uint32_t)pl[i].p.patch_len;
		recs[i].id = (uint32_t)pl[i].id;
		memcpy(recs[i].orig, pl[i].p.orig, pl[i].p.patch_len);
		memcpy(recs[i].patch, pl[i].p.patch, pl[i].p.patch_len);
		orig[pl[i].id] = pl[i].p.tramp_orig;
	}
	/* aliases call the hook of the one they share an entry with: through its trampoline */
	for (int id = 0; id < HCS_NHOOK; id++)
		for (unsigned i = 0; i < npl; i++)
			if (in->prep.orig[id] && in->prep.orig[id] == in->prep.orig[pl[i].id])
				orig[id] = pl[i].p.tramp_orig;
	rc = map_near(t, TRAMP_NAME, tramp, buf, len, PROT_READ | PROT_EXEC, err);
	free(buf);
	if (rc < 0)
		return -1;
	if (call_write(t, in->state + offsetof(struct hcs_state, orig), orig, HCS_NHOOK * 8, err) < 0 ||
	    call_write(t, in->state + offsetof(struct hcs_state, tramp), &tramp, 8, err) < 0 ||
	    write_recs(t, in, recs, npl, err) < 0)
		return -1;
	if (freeze_clear(t, recs, npl, &f, err) < 0)
		return -1;
	done = swap_bytes(t, recs, npl, true, &changed);
	rc = thaw_all(t, &f, err);
	t->timing.freeze_us = f.held_ns / 1000;
	pr_info("sampler: %u inline hooks in, every thread stopped for %" PRIu64 " us", done,
		f.held_ns / 1000);
	if (write_recs(t, in, recs, npl, err) < 0 || set_hooked(t, in, done > 0, err) < 0 || rc < 0)
		return -1;
	return read_state(t, in, err);
}

/*
 * The pages of trampolines and unwind tables a heapctl killed between
 * mapping them and recording them in the state left.  Nothing of the
 * sampler's leads into one: patches are written only after the records
 * that name their trampolines, and the sampler reads only the tables its
 * state lists (entries first, their count after).  So no thread runs or
 * reads there, and, under the per-target lock, they are taken out.  Pages
 * the state names stay, even once the hooks are out: a thread may still
 * be in a trampoline, as in the sampler's own code.
 */
void inline_take_out_strays(struct engine *t, struct inj *in)
{
	struct hc_err e = { 0 };
	struct range *r;
	size_t n;

	if (!in->state || in->s.flavour != HCS_FLAVOUR_FREE || !(r = read_maps(t, &n, NULL, &e))) {
		if (e.msg[0])
			pr_info("sampler: no look for pages a killed heapctl left: %s", e.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		bool named;

		if (!r[i].path || (!strstr(r[i].path, "/memfd:" TRAMP_NAME " ") &&
				   !strstr(r[i].path, "/memfd:" UNWIND_NAME " ")))
			continue;
		named = r[i].lo == in->s.tramp;
		for (unsigned k = 0; k < in->s.nobjs && k < HCS_MAXOBJS && !named; k++)
			named = r[i].lo == in->s.objs[k].eh_frame_hdr;
		if (named)
			continue;
		remote_munmap(t, r[i].lo, r[i].hi - r[i].lo);
		pr_info("sampler: took out 0x%" PRIx64 "-0x%" PRIx64 " (%s), left by a heapctl killed "
			"before it was recorded", r[i].lo, r[i].hi, r[i].path);
	}
	free_maps(r, n);
}

/* Patch again, under one freeze, what inline_remove() put back. */
int inline_repatch(struct engine *t, struct inj *in, struct hc_err *err)
{
	struct hcs_inline recs[HCS_MAXINLINE];
	unsigned n = in->s.ninline < HCS_MAXINLINE ? in->s.ninline : HCS_MAXINLINE, done, changed;
	struct freeze f;
	int rc;

	memcpy(recs, in->s.inl, n * sizeof(*recs));
	if (freeze_clear(t, recs, n, &f, err) < 0)
		return -1;
	done = swap_bytes(t, recs, n, true, &changed);
	rc = thaw_all(t, &f, err);
	t->timing.freeze_us = f.held_ns / 1000;
	(void)done;
	if (write_recs(t, in, recs, n, err) < 0 || set_hooked(t, in, 1, err) < 0 || rc < 0)
		return -1;
	return read_state(t, in, err);
}

/* Put back every patch of heapctl's still there; how many the program changed since. */
int inline_remove(struct engine *t, struct inj *in, unsigned *left, struct hc_err *err)
{
	struct hcs_inline recs[HCS_MAXINLINE];
	unsigned n = in->s.ninline < HCS_MAXINLINE ? in->s.ninline : HCS_MAXINLINE, done;
	struct freeze f;
	int rc;

	*left = 0;
	if (!n)
		return 0;
	memcpy(recs, in->s.inl, n * sizeof(*recs));
	/*
	 * Not hooked, before any byte goes back: a heapctl killed after the
	 * swap, before the sampler is told (fn_unpatch), would leave it saying
	 * hooked over functions that are not, and the next prof on would take
	 * its word and sample nothing.  Killed before the swap instead, the
	 * next prof on patches again and finds each patch in place.
	 */
	if (set_hooked(t, in, 0, err) < 0)
		return -1;
	if (freeze_clear(t, recs, n, &f, err) < 0) {
		/* nothing was put back: hooked, as it was */
		set_hooked(t, in, 1, &(struct hc_err){ 0 });
		return -1;
	}
	done = swap_bytes(t, recs, n, false, left);
	rc = thaw_all(t, &f, err);
	t->timing.freeze_us = f.held_ns / 1000;
	pr_info("sampler: %u inline hooks out, every thread stopped for %" PRIu64 " us", done,
		f.held_ns / 1000);
	if (write_recs(t, in, recs, n, err) < 0 || rc < 0)
		return -1;
	return 0;
}
