// SPDX-License-Identifier: MIT
/*
 * Unit test: the freestanding sampler's unwinder (src/sampler/unwind.c)
 * against libgcc's _Unwind_Backtrace from the same point, through chains
 * of callers without frame pointers (unwind/chain.c): five frames, one
 * with alloca() (its CFA the frame pointer's), a recursion 200 deep.  The
 * object table is filled from dl_iterate_phdr(), as heapctl fills it from
 * the target's maps.  Also: frames left out by range, an empty table,
 * and an .eh_frame_hdr it cannot read (a short stack, no crash).
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "../../src/sampler/unwind.c"
#include "unit.h"
#include "unwind/chain.h"

#define MAX 320

static struct hcs_obj objs[HCS_MAXOBJS];
static uint32_t nobjs;

static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t lo = ~0ull, hi = 0, hdr = 0;

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t at = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			lo = at < lo ? at : lo;
			hi = at + ph->p_memsz > hi ? at + ph->p_memsz : hi;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = at;
		}
	}
	if (hdr && hi > lo && nobjs < HCS_MAXOBJS)
		objs[nobjs++] = (struct hcs_obj){ lo, hi, hdr };
	return 0;
}

struct run {
	const struct hcs_obj *objs;
	uint32_t nobjs;
	uint64_t skip_lo, skip_hi;
	uint32_t max;
	uint64_t mine[MAX];
	uint32_t nmine;
	int bad;
	uint64_t gcc[MAX];
	uint32_t ngcc;
};

static _Unwind_Reason_Code gcc_cb(struct _Unwind_Context *c, void *arg)
{
	struct run *r = arg;

	/* libgcc ends with the outermost frame's caller, ip 0, as the sampler's bt_cb() drops it */
	if (!_Unwind_GetIP(c))
		return _URC_END_OF_STACK;
	if (r->ngcc == MAX)
		return _URC_END_OF_STACK;
	r->gcc[r->ngcc++] = _Unwind_GetIP(c);
	return _URC_NO_REASON;
}

static __attribute__((noinline)) void probe(void *arg)
{
	struct run *r = arg;

	r->nmine = uw_backtrace(r->objs, r->nobjs, r->skip_lo, r->skip_hi, r->mine, r->max, &r->bad);
	_Unwind_Backtrace(gcc_cb, r);
	__asm__ volatile("" : : : "memory"); /* no tail call: probe's frame is in both */
}

/* "symbol+offset" for a failure's message (two buffers: two in one message) */
static const char *name(uint64_t pc, int which)
{
	static char buf[2][128];
	Dl_info di;

	if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname)
		snprintf(buf[which], sizeof(buf[which]), "%s+0x%llx", di.dli_sname,
			 (unsigned long long)(pc - (uint64_t)(uintptr_t)di.dli_saddr));
	else
		snprintf(buf[which], sizeof(buf[which]), "0x%llx in %s", (unsigned long long)pc,
			 dladdr((void *)(uintptr_t)pc, &di) && di.dli_fname ? di.dli_fname : "?");
	return buf[which];
}

/*
 * Both walks from probe(): ours starts at the return into probe, libgcc's
 * at its own frame, then probe's other call.  From probe's caller on they
 * must be the same, to the same outermost frame.
 */
static void same_as_libgcc(const struct run *r, uint32_t want_min)
{
	uint32_t j = 0;

	CHECK(!r->bad, "the walk ended short after %u frames", r->nmine);
	CHECK(r->nmine >= want_min, "%u frames, want at least %u", r->nmine, want_min);
	if (r->nmine < 2)
		return;
	while (j < r->ngcc && r->gcc[j] != r->mine[1])
		j++;
	CHECK(j < 4, "libgcc's walk never reaches probe's caller 0x%llx", (unsigned long long)r->mine[1]);
	if (j >= 4)
		return;
	CHECK(r->ngcc - j == r->nmine - 1, "%u frames after probe, libgcc %u; the last %s, libgcc's %s",
	      r->nmine - 1, r->ngcc - j, name(r->mine[r->nmine - 1], 0), name(r->gcc[r->ngcc - 1], 1));
	for (uint32_t k = 1; k < r->nmine && j + k - 1 < r->ngcc; k++)
		CHECK(r->mine[k] == r->gcc[j + k - 1], "frame %u: 0x%llx, libgcc 0x%llx", k,
		      (unsigned long long)r->mine[k], (unsigned long long)r->gcc[j + k - 1]);
}

static struct run run;

static void reset_run(void)
{
	memset(&run, 0, sizeof(run));
	run.objs = objs;
	run.nobjs = nobjs;
	run.max = MAX;
}

int main(void)
{
	uint8_t junk[64] = { 2, 0x1b, 0x03, 0x3b };
	struct hcs_obj bad_objs[HCS_MAXOBJS];
	uint32_t n;

	dl_iterate_phdr(add_obj, NULL);

	begin("unwind.objects");
	CHECK(nobjs >= 2, "dl_iterate_phdr() gave %u objects with .eh_frame_hdr", nobjs);
	end();

	begin("unwind.plain");
	reset_run();
	chain_plain(5, probe, &run);
	same_as_libgcc(&run, 6);
	end();

	begin("unwind.alloca");
	reset_run();
	chain_alloca(100, probe, &run);
	same_as_libgcc(&run, 4);
	reset_run();
	chain_alloca(5000, probe, &run);
	same_as_libgcc(&run, 4);
	end();

	begin("unwind.recursion");
	reset_run();
	chain_recurse(200, probe, &run);
	same_as_libgcc(&run, 202);
	end();

	begin("unwind.max");
	reset_run();
	run.max = 10;
	chain_recurse(50, probe, &run);
	CHECK(run.nmine == 10 && !run.bad, "%u frames of at most 10 (bad %d)", run.nmine, run.bad);
	end();

	begin("unwind.skip");
	reset_run();
	chain_plain(5, probe, &run);
	n = run.nmine;
	/* the return into probe left out, as the sampler leaves out its own frames */
	run.skip_lo = run.mine[0];
	run.skip_hi = run.skip_lo + 1;
	run.nmine = 0;
	chain_plain(5, probe, &run);
	CHECK(run.nmine + 1 == n && run.mine[0] != run.skip_lo, "%u frames with probe's left out, %u without",
	      run.nmine, n);
	end();

	begin("unwind.no-objects");
	reset_run();
	run.nobjs = 0;
	chain_plain(5, probe, &run);
	CHECK(run.nmine == 0 && !run.bad, "%u frames (bad %d) with no object known", run.nmine, run.bad);
	end();

	/* every object's .eh_frame_hdr a version 2 header: nothing read past it, the walk short */
	begin("unwind.bad-header");
	for (uint32_t i = 0; i < nobjs; i++)
		bad_objs[i] = (struct hcs_obj){ objs[i].lo, objs[i].hi, (uint64_t)(uintptr_t)junk };
	reset_run();
	run.objs = bad_objs;
	chain_plain(5, probe, &run);
	CHECK(run.nmine == 0 && run.bad, "%u frames (bad %d) from an unreadable header", run.nmine, run.bad);
	end();

	return nfailed != 0;
}
