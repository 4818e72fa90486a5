// SPDX-License-Identifier: MIT
/*
 * Unit test: the arm64 frame-record walk that backs up libunwind
 * (hc_arch_aarch64.frame_walk, used by src/lib/borrow/where.c), over a fake stack.  A chain
 * that does not reach the outermost frame must never pass as complete.
 * Also which frame names are inside the allocator (where_malloc_family()).
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "unit.h"
#include "where.h"

/* A fake thread stack: 64 KiB at STACK_LO, as 64-bit words. */
#define STACK_LO 0x0000fffff0000000ull
#define STACK_WORDS 8192
static uint64_t stack[STACK_WORDS];
static unsigned int nreads;

static int rd(void *arg, uint64_t addr, uint64_t rec[2])
{
	(void)arg;
	nreads++;
	if (addr < STACK_LO || addr + 16 > STACK_LO + sizeof(stack))
		return -1;
	memcpy(rec, &stack[(addr - STACK_LO) / 8], 16);
	return 0;
}

static uint64_t at(unsigned int word)
{
	return STACK_LO + word * 8ull;
}

/* The walk from a thread whose x29 is fp and sp is sp (struct user_pt_regs). */
static int walk(uint64_t fp, uint64_t sp, uint64_t mask, uint64_t *rets, unsigned int max,
		char *why, size_t whylen)
{
	uint64_t gregs[34] = { 0 };

	gregs[29] = fp;
	gregs[31] = sp;
	return hc_arch_aarch64.frame_walk(gregs, mask, rd, NULL, rets, max, why, whylen);
}

/* A record at word w: {saved x29, return address}. */
static void rec(unsigned int w, uint64_t fp, uint64_t lr)
{
	stack[w] = fp;
	stack[w + 1] = lr;
}

/* pc in a leaf; four callers; the outermost record has x29 = 0. */
static void build_chain(void)
{
	memset(stack, 0, sizeof(stack));
	rec(100, at(200), 0x400100);
	rec(200, at(340), 0x400200);
	rec(340, at(1000), 0x400300);
	rec(1000, 0, 0x400400); /* __libc_start_main's record: caller _start */
}

static void complete_chain(void)
{
	uint64_t rets[16];
	char why[160] = "";
	int n;

	begin("where.frame_walk.complete");
	build_chain();
	n = walk(at(100), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n == 4, "n %d (%s)", n, why);
	CHECK(n == 4 && rets[0] == 0x400100 && rets[1] == 0x400200 && rets[2] == 0x400300 &&
		      rets[3] == 0x400400,
	      "return addresses");
	/* x29 = 0 at the stop (in _start or thread_start): nothing to walk. */
	n = walk(0, at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n == 0, "empty chain: %d", n);
	end();
}

static void pac_bits(void)
{
	/* VA_BITS 48: PAC in bits 54..48, what NT_ARM_PAC_MASK reports as insn_mask. */
	const uint64_t mask = 0x007f000000000000ull;
	uint64_t rets[16];
	char why[160] = "";
	int n;

	begin("where.frame_walk.pac");
	build_chain();
	stack[201] = 0x0023000000400200ull; /* signed by paciasp */
	stack[341] = 0x0051000000400300ull;
	n = walk(at(100), at(90), mask, rets, 16, why, sizeof(why));
	CHECK(n == 4, "n %d (%s)", n, why);
	CHECK(n == 4 && rets[1] == 0x400200 && rets[2] == 0x400300, "PAC bits not cleared: 0x%llx",
	      (unsigned long long)rets[1]);
	end();
}

static void broken_chains(void)
{
	uint64_t rets[16];
	char why[160];
	int n;

	begin("where.frame_walk.broken");
	/* Unreadable: the chain leaves the stack. */
	build_chain();
	stack[340] = STACK_LO + sizeof(stack) + 0x1000;
	why[0] = '\0';
	n = walk(at(100), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0 && strstr(why, "unreadable"), "left the stack: n %d (%s)", n, why);

	/* A loop, and a link downwards. */
	build_chain();
	rec(340, at(200), 0x400300);
	n = walk(at(100), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0 && strstr(why, "links"), "loop: n %d (%s)", n, why);
	build_chain();
	rec(340, at(340), 0x400300);
	n = walk(at(100), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0, "self link: n %d", n);

	/* x29 used as a scratch register: misaligned, or below sp. */
	build_chain();
	n = walk(at(100) + 4, at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0 && strstr(why, "not on the stack"), "misaligned: n %d (%s)", n, why);
	n = walk(at(80), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0 && strstr(why, "not on the stack"), "below sp: n %d (%s)", n, why);

	/* A step larger than any frame. */
	build_chain();
	rec(340, at(340) + (32u << 20), 0x400300);
	n = walk(at(100), at(90), 0, rets, 16, why, sizeof(why));
	CHECK(n < 0, "huge step: n %d", n);

	/* Deeper than the caller allows: never complete. */
	build_chain();
	n = walk(at(100), at(90), 0, rets, 3, why, sizeof(why));
	CHECK(n < 0 && strstr(why, "more than 3"), "max: n %d (%s)", n, why);
	end();
}

/* Bounded work on a long chain: one read per record. */
static void long_chain(void)
{
	uint64_t rets[128];
	char why[160] = "";
	unsigned int i;
	int n;

	begin("where.frame_walk.long");
	memset(stack, 0, sizeof(stack));
	for (i = 0; i < 100; i++)
		rec(10 + i * 40, i == 99 ? 0 : at(10 + (i + 1) * 40), 0x500000 + i * 4);
	nreads = 0;
	n = walk(at(10), at(0), 0, rets, 128, why, sizeof(why));
	CHECK(n == 100, "n %d (%s)", n, why);
	CHECK(nreads == 100, "%u reads for 100 records", nreads);
	CHECK(n == 100 && rets[99] == 0x500000 + 99 * 4, "last return address");
	end();
}

/*
 * The unwinder's registers come from the saved image: libunwind's numbers
 * against each arch's NT_PRSTATUS layout (word index in the image).
 */
static void unwind_regs(void)
{
	/* x86_64: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip, in struct user_regs_struct */
	static const unsigned int x64[] = { 10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16 };
	static const struct {
		const struct hc_arch *arch;
		const unsigned int *word; /* NULL: regnum is the word index */
		unsigned int n, nwords;
	} tab[] = {
		{ &hc_arch_x86_64, x64, 17, 27 },
		{ &hc_arch_aarch64, NULL, 33, 34 },
	};

	for (size_t k = 0; k < sizeof(tab) / sizeof(tab[0]); k++) {
		uint64_t gregs[34], v = 0;

		begin(tab[k].arch == &hc_arch_x86_64 ? "x86_64.unwind_reg" : "aarch64.unwind_reg");
		for (unsigned int i = 0; i < tab[k].nwords; i++)
			gregs[i] = 0x1000 + i;
		for (unsigned int r = 0; r < tab[k].n; r++) {
			unsigned int w = tab[k].word ? tab[k].word[r] : r;

			CHECK(tab[k].arch->unwind_reg(gregs, r, &v) == 0 && v == 0x1000 + w,
			      "register %u read 0x%llx, want word %u", r, (unsigned long long)v, w);
		}
		CHECK(tab[k].arch->unwind_reg(gregs, tab[k].n, &v) < 0,
		      "register %u is not in the image", tab[k].n);
		CHECK((tab[k].arch->frame_walk != NULL) == (tab[k].arch == &hc_arch_aarch64),
		      "frame records are arm64's alone");
		end();
	}
}

/*
 * Names from both former lists (the report's frames to drop, the safe-point
 * check's own), now one in allocfn.c: each user knows them all.
 */
static void malloc_family(void)
{
	static const char *const unsafe[] = {
		/* the report's list */
		"newImpl", "_rjem_mallocx", "__rust_alloc", "__rg_alloc_zeroed", "tc_newarray",
		"DoSampledAllocation", "je_sdallocx_noflags", "__libc_calloc",
		/* the safe-point check's list */
		"mallctl", "malloc_usable_size", "mallinfo2", "sysmalloc", "arena_get2", "sallocx",
		"_rjem_malloc_stats_print",
		/* operator new and delete as ELF symbols */
		"_Znwm", "_ZnamRKSt9nothrow_t", "_ZdlPvm",
		/* where.c's own: glibc internals by substring */
		"_int_free", "malloc_consolidate", "xmalloc",
	};
	static const char *const fine[] = {
		"main", "free_list", "callocate", "make_entry", "_ZN5cache3putEv", "je_arena_choose",
	};
	size_t i;

	begin("where.malloc_family");
	for (i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++)
		CHECK(where_malloc_family(unsafe[i], ""), "%s not taken as the allocator's", unsafe[i]);
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		CHECK(!where_malloc_family(fine[i], NULL), "%s taken as the allocator's", fine[i]);
	/* The allocator's own prefix takes its whole namespace. */
	CHECK(where_malloc_family("je_arena_choose", "je_"), "je_arena_choose with prefix je_");
	end();
}

int main(void)
{
	unwind_regs();
	complete_chain();
	pac_bits();
	broken_chains();
	long_chain();
	malloc_family();
	return nfailed ? 1 : 0;
}
