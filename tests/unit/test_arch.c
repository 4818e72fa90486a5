// SPDX-License-Identifier: MIT
/*
 * Unit test for both arch backends, whatever the host: the contract of
 * arch/arch.h checked on fabricated NT_PRSTATUS and FP images.  No ptrace.
 *
 * The register images are indexed by word here, independently of the
 * backends' mirror structs, so a layout slip in a backend shows up.  The
 * signal frames are read by byte offset, with the offsets written out here
 * and checked against the host's uapi headers when the host matches.
 * Prints "PASS group" or "FAIL group: detail" per check group; exits 1 if
 * any group failed.
 */
#include <elf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/ucontext.h> /* the kernel's struct ucontext and UC_* flags */
#endif

#include <heapctl/heapctl.h>

#include "arch.h"
#include "unit.h"

/* ---- fixtures ---- */

#define FN	 0x00005555deadbee0ull /* function to call */
#define RETG	 0x00007f1234561000ull /* a ret gadget in the target's text */
#define RETG_POP 24                    /* the bytes it pops */
#define SLOT	 0x00007ffcffffe000ull /* where it stores the result */
#define GADGET	 0x00007f12345678f0ull /* "syscall; ret" in the target's text */
#define RESTORER 0x00007f1234560800ull /* the target's sigreturn restorer */
#define SP	 0x00007ffcfffff000ull
/* SIGHUP, SIGUSR1, SIGPIPE and the last realtime signal */
#define MASK	 0x8000000000001201ull
#define GWORDS	 34 /* enough for both images */

#define NT_PRFPREG_	0x002
#define NT_X86_XSTATE_	0x202
#define NT_ARM_SVE_	0x405

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void fill(uint64_t *g, unsigned int nwords)
{
	for (unsigned int i = 0; i < nwords; i++)
		g[i] = 0xa5a5000000000000ull | ((uint64_t)i << 8) | i;
}

static void call_init(struct hc_call *c, uint64_t frame, unsigned int nargs)
{
	memset(c, 0, sizeof(*c));
	c->pc = FN;
	c->ret_addr = RETG;
	c->ret_reg = 3; /* rbx */
	c->ret_pop = RETG_POP;
	c->ret_base = SLOT - 0x18;
	c->frame = frame;
	c->nargs = nargs;
	for (unsigned int i = 0; i < HC_ARCH_MAX_ARGS; i++)
		c->args[i] = 0x1000 + i;
	c->slot_addr = 0xdeadull; /* must be overwritten */
	c->slot_val = 0xbeefull;
}

static void sys_init(struct hc_call *c, uint64_t frame, long nr)
{
	static const uint64_t args[6] = { 0, 4096, 3, 0x22, (uint64_t)-1, 0 }; /* mmap */

	memset(c, 0, sizeof(*c));
	c->pc = GADGET;
	c->ret_addr = RESTORER;
	c->frame = frame;
	c->nr = nr;
	c->nargs = 6;
	memcpy(c->args, args, sizeof(args));
	c->args[6] = 0x6666; /* never passed: syscalls take six */
	c->args[7] = 0x7777;
	c->slot_addr = 0xdeadull;
	c->slot_val = 0xbeefull;
}

/* Index of the first differing word outside the allowed set, or -1. */
static int first_diff(const uint64_t *a, const uint64_t *b, unsigned int nwords,
		      const int *allowed, unsigned int nallowed)
{
	for (unsigned int i = 0; i < nwords; i++) {
		bool ok = false;

		for (unsigned int j = 0; j < nallowed; j++)
			ok |= allowed[j] == (int)i;
		if (!ok && a[i] != b[i])
			return (int)i;
	}
	return -1;
}

static bool bytes_eq(const struct hc_bytes *b, const uint8_t *want, size_t wlen)
{
	return b->b && b->len == wlen && !memcmp(b->b, want, wlen);
}

/* b ends with the bytes of tail */
static bool ends_with(const struct hc_bytes *b, const struct hc_bytes *tail)
{
	return b->b && tail->b && b->len >= tail->len &&
	       !memcmp(b->b + b->len - tail->len, tail->b, tail->len);
}

/* The restorer list holds want (a restorer found in the wild). */
static bool has_restorer(const struct hc_bytes *list, const uint8_t *want, size_t wlen)
{
	for (unsigned int i = 0; list && i < 16 && list[i].len; i++)
		if (bytes_eq(&list[i], want, wlen))
			return true;
	return false;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static bool all_byte(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int32_t rd32s(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* An output buffer for sigframe_build() with a canary area after outlen. */
#define CANARY 64
#define POISON 0xee

static uint8_t *frame_buf(size_t outlen)
{
	uint8_t *p = malloc(outlen + CANARY);

	if (!p) {
		perror("malloc");
		exit(EXIT_FAILURE);
	}
	memset(p, POISON, outlen + CANARY);
	return p;
}

/* dump_regs() into 16 bytes: terminated, nothing written past them, truncation reported */
static int dump_truncated(const struct hc_arch *a, const uint64_t *g)
{
	char small[32];
	int n;

	memset(small, 'Z', sizeof(small));
	n = a->dump_regs(g, small, 16);
	CHECK(memchr(small, '\0', 16) != NULL, "truncated dump not terminated");
	CHECK(small[16] == 'Z', "dump overran a 16-byte buffer");
	CHECK(n < 0 || n >= 16, "truncation not reported (%d)", n);
	return n;
}

/* ---- x86_64: struct user_regs_struct, word indices ---- */

enum {
	X_R15, X_R14, X_R13, X_R12, X_RBP, X_RBX, X_R11, X_R10, X_R9, X_R8,
	X_RAX, X_RCX, X_RDX, X_RSI, X_RDI, X_ORIG_RAX, X_RIP, X_CS, X_EFLAGS, X_RSP,
	X_SS, X_FS_BASE, X_GS_BASE, X_DS, X_ES, X_FS, X_GS, X_NWORDS
};

#define X_TF (1ull << 8)
#define X_DF (1ull << 10)

/*
 * The x86_64 rt_sigframe (arch/x86/include/asm/sigframe.h): pretcode, then
 * struct ucontext (include/uapi/asm-generic/ucontext.h), then struct
 * siginfo.  x86_64.sigframe.uapi checks these against the host's headers.
 */
#define XF_PRETCODE	0
#define XF_UC_FLAGS	8
#define XF_UC_LINK	16
#define XF_SS_SP	24
#define XF_SS_FLAGS	32
#define XF_SS_SIZE	40
#define XF_SC		48	/* struct sigcontext */
#define XF_MASK		304
#define XF_INFO		312
#define XF_END		440

/* struct sigcontext (uapi asm/sigcontext.h), offsets from XF_SC */
#define SC_RAX		(13 * 8)
#define SC_RIP		(16 * 8)
#define SC_CS		144
#define SC_GS		146
#define SC_FS		148
#define SC_SS		150
#define SC_ERR		152
#define SC_TRAPNO	160
#define SC_OLDMASK	168
#define SC_CR2		176
#define SC_FPSTATE	184
#define SC_RESERVED	192
#define SC_SIZE		256

/* The 18 general registers at the start of struct sigcontext, in order. */
static const int sc_order[] = {
	X_R8, X_R9, X_R10, X_R11, X_R12, X_R13, X_R14, X_R15,
	X_RDI, X_RSI, X_RBP, X_RBX, X_RDX, X_RAX, X_RCX, X_RSP, X_RIP, X_EFLAGS,
};

#define UC_FP_XSTATE_		0x1
#define UC_SIGCONTEXT_SS_	0x2
#define UC_STRICT_RESTORE_SS_	0x4

/* XSAVE standard format (Intel SDM vol. 1, 13.4) */
#define XS_FCW		0
#define XS_FSW		2
#define XS_FTW		4	/* abridged tag: one bit per register, 0 = empty */
#define XS_MXCSR	24
#define XS_MXCSR_MASK	28
#define XS_SW		464	/* software-reserved: struct _fpx_sw_bytes */
#define XS_XSTATE_BV	512
#define XS_MIN		(512 + 64) /* legacy area and XSAVE header */

/* struct _fpx_sw_bytes, from XS_SW */
#define SW_MAGIC1	0
#define SW_EXT_SIZE	4
#define SW_XFEATURES	8
#define SW_XSTATE_SIZE	16

#define FP_XSTATE_MAGIC1_ 0x46505853u
#define FP_XSTATE_MAGIC2_ 0x46505845u

/* NT_X86_XSTATE sizes: AVX-512 + PKRU, a 2432-byte layout, and AMX's */
#define XS_BIG		2696
#define XS_SMALL	2432
#define XS_AMX		11008

static const struct hc_arch *const x86 = &hc_arch_x86_64;

static const uint8_t x86_sysc[] = { 0x0f, 0x05 };         /* syscall */
static const uint8_t x86_sysret[] = { 0x0f, 0x05, 0xc3 }; /* syscall; ret */
/* glibc's and musl's __restore_rt: mov $15,%rax; syscall */
static const uint8_t x86_restore_rt[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
/* x86_64.table beyond what arch_table() checks on both backends */
static void x86_table_own(void)
{
	static const uint8_t getpid[] = { 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	const struct hc_bytes *n = &x86->notify;

	CHECK(x86->extra_regsets && x86->extra_regsets[0] == NT_X86_XSTATE_ &&
		      x86->extra_regsets[1] == 0,
	      "extra_regsets");
	CHECK(x86->skip_regset == 0, "skip_regset %#x: x86 skips a syscall through orig_rax",
	      x86->skip_regset);
	/* callbacks: the C library's getpid(), its syscall ending at notify_sys_end */
	CHECK(bytes_eq(n, getpid, sizeof(getpid)), "notify is not mov $39,%%eax; syscall; ret");
	CHECK(x86->notify_sys_end == 7 && n->b && !memcmp(n->b + 5, x86_sysc, sizeof(x86_sysc)),
	      "notify_sys_end %zu, want 7 (after the syscall)", x86->notify_sys_end);
	CHECK(x86->entry_pads && bytes_eq(&x86->entry_pads[0], endbr64, sizeof(endbr64)) &&
		      !x86->entry_pads[1].len,
	      "entry_pads are not endbr64 alone");
	/* the result goes through memory: the restorer loads rax */
	CHECK(x86->ret_gadget && !x86->get_ret, "ret_gadget %p, get_ret %p: want a gadget only",
	      (void *)x86->ret_gadget, (void *)x86->get_ret);
	CHECK(x86->get_tp && !x86->regs_hold_returns, "get_tp, regs_hold_returns %u",
	      x86->regs_hold_returns);
}

/*
 * Ret gadgets: tails of real C library functions are taken with their
 * base register, displacement and pops; a change that would let the
 * gadget write elsewhere, move the stack pointer otherwise or leave
 * through anything but a plain ret is refused.
 */
static void x86_ret_gadget(void)
{
	static const struct {
		const char *what;
		uint8_t b[24];
		size_t len;
		unsigned int reg, pop;
		int32_t disp;
	} good[] = {
		{ "mov %rax,0x18(%rbx); pop %rbx; ret", { 0x48, 0x89, 0x43, 0x18, 0x5b, 0xc3 }, 6, 3,
		  8, 0x18 },
		{ "mov %rax,(%rbx); pop %rbx; ret", { 0x48, 0x89, 0x03, 0x5b, 0xc3 }, 5, 3, 8, 0 },
		{ "mov %rax,0x8(%r12); pop %rbx; pop %rbp; pop %r12; ret",
		  { 0x49, 0x89, 0x44, 0x24, 0x08, 0x5b, 0x5d, 0x41, 0x5c, 0xc3 }, 10, 12, 24, 8 },
		{ "mov %rax,(%r12); pop %rbx; ret", { 0x49, 0x89, 0x04, 0x24, 0x5b, 0xc3 }, 6, 12, 8, 0 },
		{ "mov %rax,0x0(%rbp); xor %eax,%eax; add $8,%rsp; pop %rbx; pop %rbp; ret",
		  { 0x48, 0x89, 0x45, 0x00, 0x31, 0xc0, 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x5d, 0xc3 }, 13,
		  5, 24, 0 },
		{ "mov %rax,0x90(%rbx); add $0x18,%rsp; pop %rbx; pop %rbp; ret",
		  { 0x48, 0x89, 0x83, 0x90, 0, 0, 0, 0x48, 0x83, 0xc4, 0x18, 0x5b, 0x5d, 0xc3 }, 14, 3,
		  40, 0x90 },
		{ "mov %rax,-0x8(%r13); mov $1,%eax; pop %r13; ret",
		  { 0x49, 0x89, 0x45, 0xf8, 0xb8, 1, 0, 0, 0, 0x41, 0x5d, 0xc3 }, 12, 13, 8, -8 },
		{ "mov %rax,(%r15); ret", { 0x49, 0x89, 0x07, 0xc3 }, 4, 15, 0, 0 },
	};
	static const struct {
		const char *why;
		uint8_t b[16];
		size_t len;
	} bad[] = {
		{ "based on %rsp", { 0x48, 0x89, 0x04, 0x24, 0xc3 }, 5 },
		{ "based on %rdi, which the callee may change", { 0x48, 0x89, 0x07, 0xc3 }, 4 },
		{ "based on %r11", { 0x49, 0x89, 0x03, 0xc3 }, 4 },
		{ "%rip-relative", { 0x48, 0x89, 0x05, 1, 2, 3, 4, 0xc3 }, 8 },
		{ "into a register", { 0x48, 0x89, 0xc3, 0xc3 }, 4 },
		{ "from %rcx", { 0x48, 0x89, 0x4b, 0x18, 0x5b, 0xc3 }, 6 },
		{ "32 bits", { 0x89, 0x43, 0x18, 0x5b, 0xc3 }, 5 },
		{ "with an index", { 0x48, 0x89, 0x04, 0x8b, 0xc3 }, 5 },
		{ "pop %rsp", { 0x48, 0x89, 0x43, 0x18, 0x5c, 0xc3 }, 6 },
		{ "add $7,%rsp", { 0x48, 0x89, 0x43, 0x18, 0x48, 0x83, 0xc4, 0x07, 0xc3 }, 9 },
		{ "sub from %rsp", { 0x48, 0x89, 0x43, 0x18, 0x48, 0x83, 0xec, 0x08, 0xc3 }, 9 },
		{ "mov $0,%esp", { 0x48, 0x89, 0x43, 0x18, 0xbc, 0, 0, 0, 0, 0xc3 }, 10 },
		{ "xor %esp,%esp", { 0x48, 0x89, 0x43, 0x18, 0x31, 0xe4, 0xc3 }, 7 },
		{ "a call", { 0x48, 0x89, 0x43, 0x18, 0xe8, 0, 0, 0, 0, 0xc3 }, 10 },
		{ "ret $8", { 0x48, 0x89, 0x43, 0x18, 0xc2, 0x08, 0x00 }, 7 },
		{ "a store after it", { 0x48, 0x89, 0x43, 0x18, 0x48, 0x89, 0x03, 0xc3 }, 8 },
		{ "no ret in reach", { 0x48, 0x89, 0x43, 0x18, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b,
				       0xc3 }, 12 },
		{ "cut before its ret", { 0x48, 0x89, 0x43, 0x18, 0x5b }, 5 },
		{ "cut in its displacement", { 0x48, 0x89, 0x83, 0x90, 0 }, 5 },
	};
	struct hc_ret_gadget g;

	begin("x86_64.ret_gadget");
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		memset(&g, 0xa5, sizeof(g));
		CHECK(x86->ret_gadget(good[i].b, good[i].len, &g) == good[i].len,
		      "%s: not taken, or not whole", good[i].what);
		CHECK(g.len == good[i].len && g.reg == good[i].reg && g.pop == good[i].pop &&
			      g.disp == good[i].disp,
		      "%s: len %zu, register %u, pops %u, disp %d", good[i].what, g.len, g.reg, g.pop,
		      g.disp);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!x86->ret_gadget(bad[i].b, bad[i].len, &g), "taken: %s", bad[i].why);
	end();
}

static void x86_prep_call_args(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 };
	/* what prep_call may touch; everything else must survive */
	static const int touched[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9, X_RAX,
				       X_RIP, X_RSP, X_EFLAGS, X_ORIG_RAX, X_RBX };
	const uint64_t frame = x86->frame_place(SP, 3300);
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("x86_64.prep_call.args");
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 0; /* stopped in read(2) */
	memcpy(orig, g, sizeof(g));
	call_init(&c, frame, 6);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call failed: %s", err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[argreg[i]] == c.args[i], "arg %u: %#" PRIx64, i, g[argreg[i]]);
	CHECK(g[X_RAX] == 0, "rax %#" PRIx64 ", want 0 (no vector args)", g[X_RAX]);
	CHECK(g[X_RIP] == FN, "rip %#" PRIx64, g[X_RIP]);
	CHECK(g[X_RSP] == frame - 8 - RETG_POP, "rsp %#" PRIx64 ", want frame - 8 - the gadget's pops",
	      g[X_RSP]);
	CHECK(g[X_RBX] == SLOT - 0x18, "rbx %#" PRIx64 ": the gadget would not store at the slot",
	      g[X_RBX]);
	CHECK(g[X_ORIG_RAX] == UINT64_MAX, "orig_rax %#" PRIx64 ", want -1 (no restart)",
	      g[X_ORIG_RAX]);
	CHECK(c.slot_addr == g[X_RSP] && c.slot_val == RETG && c.nstack == RETG_POP / 8,
	      "slot (%#" PRIx64 ", %#" PRIx64 ", %u more), want (rsp, the gadget, its pops)",
	      c.slot_addr, c.slot_val, c.nstack);
	for (unsigned int i = 0; i < c.nstack && i < HC_ARCH_MAX_ARGS; i++)
		CHECK(c.stack[i] == 0, "stack word %u %#" PRIx64 " without stack arguments", i,
		      c.stack[i]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);

	/* fewer arguments: the unused argument registers are left alone */
	fill(g, GWORDS);
	call_init(&c, frame, 2);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call(2 args) failed");
	CHECK(g[X_RDI] == c.args[0] && g[X_RSI] == c.args[1], "2 args");
	CHECK(g[X_RDX] == orig[X_RDX] && g[X_R9] == orig[X_R9], "unused arg regs changed");

	/* flags the callee must not start with: TF (bit 8), DF (bit 10) */
	fill(g, GWORDS);
	g[X_EFLAGS] = 0x246 | X_TF | X_DF;
	call_init(&c, frame, 0);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call(0 args) failed");
	CHECK(g[X_EFLAGS] == 0x246, "eflags %#" PRIx64 ", want 0x246", g[X_EFLAGS]);

	/* a gadget based on r12, 8 bytes of pops */
	fill(g, GWORDS);
	call_init(&c, frame, 1);
	c.ret_reg = 12;
	c.ret_pop = 8;
	CHECK(x86->prep_call(g, &c, &err) == 0 && g[X_R12] == SLOT - 0x18 && g[X_RBX] == orig[X_RBX] &&
		      g[X_RSP] == frame - 16 && c.nstack == 1,
	      "r12-based gadget: r12 %#" PRIx64 ", rsp %#" PRIx64, g[X_R12], g[X_RSP]);
	/* no usable gadget: a register the callee may change, or pops that misalign */
	c.ret_reg = 7;
	CHECK(x86->prep_call(g, &c, &err) == -1 && err.code == HC_E_INTERNAL, "rdi-based gadget");
	memset(&err, 0, sizeof(err));
	c.ret_reg = 3;
	c.ret_pop = 16;
	CHECK(x86->prep_call(g, &c, &err) == -1 && err.code == HC_E_INTERNAL, "16 bytes of pops");
	end();
}

static void x86_prep_call_stack(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("x86_64.prep_call.stack");
	for (uint64_t off = 0; off < 32; off++) {
		uint64_t osp = SP + off, fr = x86->frame_place(osp, 3300);

		fill(g, GWORDS);
		g[X_RSP] = osp;
		call_init(&c, fr, 1);
		CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call failed");
		CHECK(g[X_RSP] == fr - 8 - RETG_POP, "rsp %#" PRIx64 ", want below the frame %#" PRIx64,
		      g[X_RSP], fr);
		/* what a callee sees right after "call": the return address on top */
		CHECK(g[X_RSP] % 16 == 8, "rsp %% 16 == %" PRIu64 " at entry (sp %#" PRIx64 ")",
		      g[X_RSP] % 16, osp);
		CHECK(g[X_RSP] <= osp - 128 - 8,
		      "rsp %#" PRIx64 " intrudes on the red zone of %#" PRIx64, g[X_RSP], osp);
		CHECK(x86->get_sp(g) == g[X_RSP], "get_sp after prep_call");
		/* the return address, the gadget's pops, then the frame's pretcode */
		CHECK(c.slot_addr + 8 * (1 + c.nstack) == fr,
		      "slot_addr %#" PRIx64 " and %u words do not reach the frame %#" PRIx64,
		      c.slot_addr, c.nstack, fr);
		CHECK(c.slot_val == RETG, "slot_val %#" PRIx64 ", want ret_addr", c.slot_val);
	}
	end();
}

/*
 * The 7th and 8th arguments on the stack, right above the return address
 * (SysV psABI 3.2.3): the ret gadget's pops take them, and its ret finds
 * the restorer at the frame.  A gadget that pops less has no room for them.
 */
static void x86_prep_call_stack_args(void)
{
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 };
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("x86_64.prep_call.stack_args");
	for (unsigned int n = 7; n <= 8; n++) {
		uint64_t fr = x86->frame_place(SP, 3300);

		fill(g, GWORDS);
		call_init(&c, fr, n);
		CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call(%u args) failed: %s", n, err.msg);
		for (unsigned int i = 0; i < 6; i++)
			CHECK(g[argreg[i]] == c.args[i], "%u args: arg %u", n, i);
		CHECK(g[X_RSP] == fr - 8 - RETG_POP && g[X_RSP] % 16 == 8,
		      "%u args: rsp %#" PRIx64 ", want frame - 32", n, g[X_RSP]);
		CHECK(c.slot_addr == g[X_RSP] && c.slot_val == RETG,
		      "%u args: slot (%#" PRIx64 ", %#" PRIx64 "), want (rsp, gadget)", n,
		      c.slot_addr, c.slot_val);
		CHECK(c.nstack == RETG_POP / 8, "%u args: %u stack words", n, c.nstack);
		for (unsigned int i = 6; i < n; i++)
			CHECK(c.stack[i - 6] == c.args[i], "%u args: arg %u is %#" PRIx64, n, i,
			      c.stack[i - 6]);
		for (unsigned int i = n - 6; i < c.nstack && i < HC_ARCH_MAX_ARGS; i++)
			CHECK(c.stack[i] == 0, "%u args: word %u after them %#" PRIx64, n, i, c.stack[i]);
		/* below the frame's pretcode, which stays the restorer */
		CHECK(c.slot_addr + 8 * (1 + c.nstack) == fr, "%u args: stack words reach past the frame",
		      n);
	}
	/* a gadget popping 8 bytes takes a 7th argument, not an 8th */
	fill(g, GWORDS);
	call_init(&c, x86->frame_place(SP, 3300), 7);
	c.ret_pop = 8;
	CHECK(x86->prep_call(g, &c, &err) == 0 && c.stack[0] == c.args[6], "7 args, 8 bytes of pops");
	call_init(&c, x86->frame_place(SP, 3300), 8);
	c.ret_pop = 8;
	CHECK(x86->prep_call(g, &c, &err) == -1 && err.code == HC_E_UNSUPPORTED,
	      "8 args with 8 bytes of pops accepted");
	memset(&err, 0, sizeof(err));
	/* a struct result's hidden pointer takes a register: 5 arguments left */
	fill(g, GWORDS);
	call_init(&c, x86->frame_place(SP, 3300), 5);
	c.sret = 0x7ffc00001000ull;
	CHECK(x86->prep_call(g, &c, &err) == 0 && g[X_RDI] == c.sret && g[X_R9] == c.args[4],
	      "sret with 5 arguments");
	call_init(&c, x86->frame_place(SP, 3300), 6);
	c.sret = 0x7ffc00001000ull;
	CHECK(x86->prep_call(g, &c, &err) == -1 && err.code == HC_E_ARGS,
	      "sret with 6 arguments accepted");
	end();
}

static void x86_prep_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_R10, X_R8, X_R9 };
	static const int touched[] = { X_RDI, X_RSI, X_RDX, X_R10, X_R8, X_R9, X_RAX,
				       X_RIP, X_RSP, X_EFLAGS, X_ORIG_RAX };
	const uint64_t frame = x86->frame_place(SP, 3300);
	struct hc_call c;
	int d;

	begin("x86_64.prep_syscall");
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 0;
	g[X_EFLAGS] = 0x246 | X_TF | X_DF;
	memcpy(orig, g, sizeof(g));
	sys_init(&c, frame, 9 /* mmap */);
	x86->prep_syscall(g, &c);
	CHECK(g[X_RAX] == 9, "rax %#" PRIx64 ", want __NR_mmap", g[X_RAX]);
	CHECK(g[X_RIP] == GADGET, "rip %#" PRIx64 ", want the gadget", g[X_RIP]);
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[argreg[i]] == c.args[i], "arg %u", i);
	CHECK(g[X_RSP] == frame, "rsp %#" PRIx64 ", want the frame %#" PRIx64, g[X_RSP], frame);
	/* "ret" after the syscall pops the restorer from the frame's pretcode */
	CHECK(c.slot_addr == frame && c.slot_val == RESTORER,
	      "slot (%#" PRIx64 ", %#" PRIx64 "), want (frame, restorer)", c.slot_addr,
	      c.slot_val);
	CHECK(g[X_ORIG_RAX] == UINT64_MAX, "orig_rax %#" PRIx64 ", want -1", g[X_ORIG_RAX]);
	CHECK(!(g[X_EFLAGS] & (X_TF | X_DF)), "eflags %#" PRIx64 ": TF/DF kept", g[X_EFLAGS]);
	CHECK(g[X_RCX] == orig[X_RCX], "rcx used for a syscall argument (must be r10)");
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);

	/* fewer arguments: the rest are left alone */
	memcpy(g, orig, sizeof(g));
	sys_init(&c, frame, 11 /* munmap */);
	c.nargs = 2;
	x86->prep_syscall(g, &c);
	CHECK(g[X_RAX] == 11 && g[X_RDI] == c.args[0] && g[X_RSI] == c.args[1], "munmap");
	CHECK(g[X_RDX] == orig[X_RDX] && g[X_R10] == orig[X_R10] && g[X_R9] == orig[X_R9],
	      "unused syscall arg regs changed");

	/* the result as the kernel leaves it */
	g[X_RAX] = (uint64_t)-12; /* -ENOMEM */
	CHECK(x86->get_syscall_ret(g) == -12, "get_syscall_ret");
	g[X_RAX] = 0x7f1234560000ull;
	CHECK(x86->get_syscall_ret(g) == 0x7f1234560000ll, "get_syscall_ret address");
	end();
}

static void x86_prep_restore(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { X_RIP, X_RSP, X_EFLAGS, X_ORIG_RAX };
	const uint64_t frame = x86->frame_place(SP, 3300);
	int d;

	begin("x86_64.prep_restore");
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 0;
	g[X_RAX] = (uint64_t)-512; /* must not be restarted at the restorer */
	memcpy(orig, g, sizeof(g));
	x86->prep_restore(g, RESTORER, frame);
	CHECK(g[X_RIP] == RESTORER, "rip %#" PRIx64 ", want the restorer", g[X_RIP]);
	/* rt_sigreturn reads the frame at rsp - 8, past the popped pretcode */
	CHECK(g[X_RSP] == frame + 8, "rsp %#" PRIx64 ", want frame + 8 = %#" PRIx64, g[X_RSP],
	      frame + 8);
	CHECK(g[X_ORIG_RAX] == UINT64_MAX, "orig_rax %#" PRIx64 ", want -1", g[X_ORIG_RAX]);
	CHECK(!(g[X_EFLAGS] & (X_TF | X_DF)), "eflags %#" PRIx64 ": TF/DF kept", g[X_EFLAGS]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	end();
}

/* Not a restart the kernel makes through restart_syscall: the frame may give the thread back. */
static void x86_frame_restores(void)
{
	uint64_t g[GWORDS];

	begin("x86_64.frame_restores");
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 0;
	g[X_RAX] = (uint64_t)-512; /* read(2), -ERESTARTSYS: the frame re-runs it, as the kernel */
	CHECK(x86->frame_restores(g, NULL, 0), "an -ERESTARTSYS read refused");
	g[X_ORIG_RAX] = 35;
	g[X_RAX] = (uint64_t)-516; /* nanosleep: the frame would start it over in full */
	CHECK(!x86->frame_restores(g, NULL, 0), "an -ERESTART_RESTARTBLOCK nanosleep taken");
	g[X_ORIG_RAX] = UINT64_MAX; /* not in a syscall: rax is the program's */
	CHECK(x86->frame_restores(g, NULL, 0), "a running thread with rax = -516 refused");
	/* rewound onto restart_syscall (a poll stopped again before it ran): needs its block */
	g[X_RAX] = 219;
	CHECK(!x86->frame_restores(g, NULL, 0), "restart_syscall taken");
	g[X_ORIG_RAX] = 7;
	CHECK(!x86->frame_restores(g, NULL, 0), "restart_syscall after a kernel rewind taken");
	end();
}

static void x86_no_restart(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { X_ORIG_RAX };
	int d;

	begin("x86_64.no_restart");
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 0;               /* stopped in read(2) */
	g[X_RAX] = (uint64_t)-512;       /* -ERESTARTSYS */
	memcpy(orig, g, sizeof(g));
	CHECK(x86->syscall_nr(g) == 0, "syscall_nr before %ld", x86->syscall_nr(g));
	x86->no_restart(g);
	CHECK(g[X_ORIG_RAX] == UINT64_MAX, "orig_rax (word 15) %#" PRIx64 ", want -1",
	      g[X_ORIG_RAX]);
	CHECK(x86->syscall_nr(g) == -1, "syscall_nr after %ld", x86->syscall_nr(g));
	d = first_diff(g, orig, GWORDS, touched, 1);
	CHECK(d < 0, "word %d changed", d);
	end();
}

/* syscall argument registers, in order: r10 carries the fourth */
static const int x86_sysarg[] = { X_RDI, X_RSI, X_RDX, X_R10, X_R8, X_R9 };

/* One syscall with its arguments and what a stop does to it. */
struct wait_case {
	long nr;
	uint64_t args[6];
	enum hc_wait want;
	const char *what;
};

#define TS_PTR 0x00007ffc12345670ull /* a struct timespec * */

static const struct wait_case x86_waits[] = {
	/* signal(7): EINTR on any stop; re-issued only when untimed */
	{ 232, { 5, 0x1000, 64, (uint64_t)-1 }, HC_WAIT_EINTR_REDO, "epoll_wait(-1)" },
	{ 232, { 5, 0x1000, 64, 0xa5a50000ffffffffull }, HC_WAIT_EINTR_REDO,
	  "epoll_wait(int -1, garbage above bit 31)" },
	{ 232, { 5, 0x1000, 64, (uint64_t)-7 }, HC_WAIT_EINTR_REDO, "epoll_wait(-7)" },
	{ 232, { 5, 0x1000, 64, 5000 }, HC_WAIT_EINTR_KEEP, "epoll_wait(5000)" },
	{ 232, { 5, 0x1000, 64, 0xffffffff00001388ull }, HC_WAIT_EINTR_KEEP,
	  "epoll_wait(int 5000, garbage above bit 31)" },
	{ 232, { 5, 0x1000, 64, 0 }, HC_WAIT_EINTR_KEEP, "epoll_wait(0)" },
	{ 281, { 5, 0x1000, 64, (uint64_t)-1, 0x2000, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait(-1)" },
	{ 281, { 5, 0x1000, 64, 100, 0x2000, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait(100)" },
	{ 441, { 5, 0x1000, 64, 0, 0x2000, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait2(NULL)" },
	{ 441, { 5, 0x1000, 64, TS_PTR, 0x2000, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait2(ts)" },
	{ 65, { 3, 0x1000, 1 }, HC_WAIT_EINTR_REDO, "semop" },
	{ 220, { 3, 0x1000, 1, 0 }, HC_WAIT_EINTR_REDO, "semtimedop(NULL)" },
	{ 220, { 3, 0x1000, 1, TS_PTR }, HC_WAIT_EINTR_KEEP, "semtimedop(ts)" },
	{ 128, { 0x1000, 0, 0, 8 }, HC_WAIT_EINTR_REDO, "rt_sigtimedwait(NULL)" },
	{ 128, { 0x1000, 0, TS_PTR, 8 }, HC_WAIT_EINTR_KEEP, "rt_sigtimedwait(ts)" },
	{ 208, { 0x7000, 1, 8, 0x1000, 0 }, HC_WAIT_EINTR_REDO, "io_getevents(NULL)" },
	{ 208, { 0x7000, 1, 8, 0x1000, TS_PTR }, HC_WAIT_EINTR_KEEP, "io_getevents(ts)" },
	{ 333, { 0x7000, 1, 8, 0x1000, 0, 0 }, HC_WAIT_EINTR_REDO, "io_pgetevents(NULL)" },
	{ 333, { 0x7000, 1, 8, 0x1000, TS_PTR, 0 }, HC_WAIT_EINTR_KEEP, "io_pgetevents(ts)" },
	/* restart_syscall goes on with the time left; updated timeouts restart */
	{ 35, { TS_PTR, 0 }, HC_WAIT_UNDISTURBED, "nanosleep" },
	{ 230, { 1, 0, TS_PTR, 0 }, HC_WAIT_UNDISTURBED, "clock_nanosleep" },
	{ 7, { 0x1000, 1, 5000 }, HC_WAIT_UNDISTURBED, "poll(5000)" },
	{ 7, { 0x1000, 1, (uint64_t)-1 }, HC_WAIT_UNDISTURBED, "poll(-1)" },
	{ 271, { 0x1000, 1, TS_PTR, 0x2000, 8 }, HC_WAIT_UNDISTURBED, "ppoll(ts)" },
	{ 23, { 4, 0x1000, 0, 0, TS_PTR }, HC_WAIT_UNDISTURBED, "select(tv)" },
	{ 270, { 4, 0x1000, 0, 0, TS_PTR, 0x2000 }, HC_WAIT_UNDISTURBED, "pselect6(ts)" },
	{ 202, { 0x1000, 0x80, 1, TS_PTR }, HC_WAIT_UNDISTURBED, "futex(FUTEX_WAIT, ts)" },
	{ 0, { 3, 0x1000, 16 }, HC_WAIT_UNDISTURBED, "read" },
	{ -1, { 0 }, HC_WAIT_UNDISTURBED, "not in a syscall" },
};

static void x86_undo_stop_eintr(void)
{
	static const int touched[] = { X_RAX, X_RIP, X_ORIG_RAX };
	static const struct {
		long nr;
		int64_t rax;
	} keep[] = {
		{ 0, -4 },      /* read: restarted by the kernel itself, never EINTR here */
		{ 35, -4 },     /* nanosleep */
		{ 232, -512 },  /* epoll_wait, -ERESTARTSYS: the kernel restarts it */
		{ 232, -514 },  /* -ERESTARTNOHAND */
		{ 232, -11 },   /* -EAGAIN */
		{ 232, 3 },     /* three events */
		{ 232, 0 },     /* timeout */
		{ -1, -4 },     /* not in a syscall */
	};
	uint64_t g[GWORDS], orig[GWORDS];
	const uint64_t rip = 0x00007f00aaaa0102ull; /* just after the syscall */
	int d;

	begin("x86_64.undo_stop_eintr");
	for (unsigned int i = 0; i < ARRAY_SIZE(x86_waits); i++) {
		const struct wait_case *c = &x86_waits[i];
		bool redo = c->want == HC_WAIT_EINTR_REDO;

		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)c->nr;
		for (unsigned int k = 0; k < 6; k++)
			g[x86_sysarg[k]] = c->args[k];
		g[X_RAX] = (uint64_t)-4; /* -EINTR */
		g[X_RIP] = rip;
		memcpy(orig, g, sizeof(g));
		if (!redo) {
			/* a timed wait keeps the EINTR any signal would give it */
			CHECK(!x86->undo_stop_eintr(g, NULL), "%s: -EINTR undone", c->what);
			CHECK(!memcmp(g, orig, sizeof(g)), "%s: image changed", c->what);
			continue;
		}
		CHECK(x86->undo_stop_eintr(g, NULL), "%s with -EINTR not undone", c->what);
		CHECK(g[X_RAX] == (uint64_t)c->nr, "%s: rax %#" PRIx64 ", want the number", c->what,
		      g[X_RAX]);
		CHECK(g[X_RIP] == rip - 2, "%s: rip %#" PRIx64 ", want rip - 2", c->what, g[X_RIP]);
		CHECK(g[X_ORIG_RAX] == UINT64_MAX, "%s: orig_rax %#" PRIx64 ", want -1", c->what,
		      g[X_ORIG_RAX]);
		d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
		CHECK(d < 0, "%s: word %d changed", c->what, d);
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(keep); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)keep[i].nr;
		g[X_R10] = (uint64_t)-1; /* an untimed epoll_wait */
		g[X_RAX] = (uint64_t)keep[i].rax;
		g[X_RIP] = rip;
		memcpy(orig, g, sizeof(g));
		CHECK(!x86->undo_stop_eintr(g, NULL), "syscall %ld returning %" PRId64 " undone",
		      keep[i].nr, keep[i].rax);
		CHECK(!memcmp(g, orig, sizeof(g)),
		      "syscall %ld returning %" PRId64 ": image changed", keep[i].nr, keep[i].rax);
	}
	end();
}

/* A thread's saved state, as call.c hands it to sigframe_build(). */
struct x86_state {
	uint64_t g[GWORDS];
	uint8_t xs[XS_AMX];
	struct hc_regset rs;
	struct hc_sigframe f;
};

static void x86_state_init(struct x86_state *s, size_t xlen, uint64_t bv)
{
	fill(s->g, GWORDS);
	s->g[X_CS] = 0x33;
	s->g[X_SS] = 0x2b;
	s->g[X_EFLAGS] = 0x246;
	s->g[X_ORIG_RAX] = (uint64_t)-1;
	s->g[X_RAX] = 0x0123456789abcdefull;
	for (size_t i = 0; i < sizeof(s->xs); i++)
		s->xs[i] = (uint8_t)(i * 11 + 5);
	memset(s->xs + XS_XSTATE_BV, 0, 64); /* XSTATE_BV, XCOMP_BV (standard format) */
	wr64(s->xs + XS_XSTATE_BV, bv);
	s->rs.nt = NT_X86_XSTATE_;
	s->rs.buf = s->xs;
	s->rs.len = xlen;
	memset(&s->f, 0, sizeof(s->f));
	s->f.gregs = s->g;
	s->f.extra = &s->rs;
	s->f.nextra = 1;
	s->f.mask = MASK;
}

/* Size and place the frame below sp as call.c does; returns its length. */
static size_t x86_state_place(struct x86_state *s, uint64_t sp)
{
	size_t len;

	s->f.raddr = 0;
	len = x86->sigframe_len(&s->f);
	s->f.raddr = x86->frame_place(sp, len);
	return len;
}

/* End of XSAVE component i in the standard format, or 0 if the CPU lacks it. */
static __attribute__((unused)) size_t xfeature_end(unsigned int i) /* x86_64 hosts only */
{
#if defined(__x86_64__)
	unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;

	if (__get_cpuid_max(0, NULL) < 0xd)
		return 0;
	__cpuid_count(0xd, i, eax, ebx, ecx, edx);
	(void)ecx;
	(void)edx;
	return eax ? (size_t)ebx + eax : 0;
#else
	(void)i;
	return 0;
#endif
}

/*
 * The XSAVE size the frame must carry: a small image whole, as the kernel
 * writes its own frames; a large one (AMX) to the end of every component
 * in use, capped by the image.
 */
static size_t xsave_want(uint64_t bv, size_t have)
{
#if defined(__x86_64__)
	size_t want = XS_MIN;

	if (have <= 4096)
		return have;
	for (unsigned int i = 2; i < 63; i++)
		if ((bv & (1ull << i)) && xfeature_end(i) > want)
			want = xfeature_end(i);
	return want < have ? want : have;
#else
	(void)bv;
	return have; /* no CPUID to ask: the whole image */
#endif
}

static void x86_sigframe_layout(void)
{
	static struct x86_state s;
	uint64_t gcopy[GWORDS];
	struct hc_err err = { 0 };
	size_t len;
	uint8_t *out;
	const uint8_t *sc;

	begin("x86_64.sigframe.layout");
	x86_state_init(&s, XS_BIG, 0x7);
	len = x86_state_place(&s, SP + 0x38);
	memcpy(gcopy, s.g, sizeof(gcopy));
	out = frame_buf(len);
	CHECK(len >= XF_END + XS_MIN + 4, "sigframe_len %zu too small for any frame", len);
	CHECK(len < XF_END + 64 + XS_BIG + 4 + 4096, "sigframe_len %zu implausibly large", len);
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed: %s",
	      err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	CHECK(all_byte(out + len, CANARY, POISON), "wrote past outlen");
	CHECK(!memcmp(s.g, gcopy, sizeof(gcopy)), "gregs changed");

	/* pretcode: call.c writes the return address there, via the slot */
	CHECK(rd64(out + XF_PRETCODE) == 0, "pretcode %#" PRIx64 ", want 0",
	      rd64(out + XF_PRETCODE));
	CHECK(rd64(out + XF_UC_FLAGS) ==
		      (UC_FP_XSTATE_ | UC_SIGCONTEXT_SS_ | UC_STRICT_RESTORE_SS_),
	      "uc_flags %#" PRIx64 ", want 7", rd64(out + XF_UC_FLAGS));
	CHECK(rd64(out + XF_UC_LINK) == 0, "uc_link %#" PRIx64, rd64(out + XF_UC_LINK));
	/* neither 0, SS_ONSTACK nor SS_DISABLE: rt_sigreturn keeps the sigaltstack */
	CHECK(rd32s(out + XF_SS_FLAGS) == 3, "uc_stack.ss_flags %d, want 3 (invalid)",
	      rd32s(out + XF_SS_FLAGS));
	CHECK(rd64(out + XF_SS_SP) == 0 && rd64(out + XF_SS_SIZE) == 0, "uc_stack sp/size set");

	sc = out + XF_SC;
	for (unsigned int i = 0; i < ARRAY_SIZE(sc_order); i++)
		CHECK(rd64(sc + 8 * i) == s.g[sc_order[i]],
		      "sigcontext word %u is %#" PRIx64 ", want gregs word %d (%#" PRIx64 ")", i,
		      rd64(sc + 8 * i), sc_order[i], s.g[sc_order[i]]);
	CHECK(rd16(sc + SC_CS) == 0x33, "cs %#x", rd16(sc + SC_CS));
	CHECK(rd16(sc + SC_SS) == 0x2b, "ss %#x (UC_SIGCONTEXT_SS)", rd16(sc + SC_SS));
	CHECK(rd64(sc + SC_ERR) == 0 && rd64(sc + SC_TRAPNO) == 0 && rd64(sc + SC_OLDMASK) == 0 &&
		      rd64(sc + SC_CR2) == 0,
	      "err/trapno/oldmask/cr2 not zero");
	CHECK(all_zero(sc + SC_RESERVED, SC_SIZE - SC_RESERVED), "sigcontext reserved1 not zero");
	CHECK(rd64(sc + SC_FPSTATE) != 0, "no fpstate pointer");

	CHECK(rd64(out + XF_MASK) == MASK, "uc_sigmask %#" PRIx64 ", want %#" PRIx64,
	      rd64(out + XF_MASK), (uint64_t)MASK);
	CHECK(rd64(out + x86->sigframe_mask_off) == MASK, "mask not at sigframe_mask_off");
	CHECK(all_zero(out + XF_INFO, XF_END - XF_INFO), "siginfo not zero");
	free(out);

	/* a different mask lands at the same place */
	x86_state_init(&s, XS_BIG, 0x7);
	s.f.mask = 0;
	len = x86_state_place(&s, SP);
	out = frame_buf(len);
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build(mask 0) failed");
	CHECK(rd64(out + XF_MASK) == 0, "uc_sigmask %#" PRIx64 ", want 0", rd64(out + XF_MASK));
	free(out);
	end();
}

/* One frame from an xlen-byte XSAVE image with XSTATE_BV = bv, below sp. */
static void x86_xstate_case(size_t xlen, uint64_t bv, uint64_t sp)
{
	static struct x86_state s;
	struct hc_err err = { 0 };
	uint64_t fp, fpoff, feat;
	uint32_t xsize, ext;
	size_t len, want;
	const uint8_t *xo;
	uint8_t *out;

	x86_state_init(&s, xlen, bv);
	len = x86_state_place(&s, sp);
	out = frame_buf(len);
	if (x86->sigframe_build(&s.f, out, len, &err) < 0) {
		CHECK(0, "sigframe_build(xlen %zu, bv %#" PRIx64 ") failed: %s", xlen, bv, err.msg);
		goto out;
	}
	CHECK(rd64(out + XF_UC_FLAGS) & UC_FP_XSTATE_, "UC_FP_XSTATE missing");
	fp = rd64(out + XF_SC + SC_FPSTATE);
	fpoff = fp - s.f.raddr;
	CHECK(fp % 64 == 0, "fpstate %#" PRIx64 " not 64-byte aligned (XRSTOR faults)", fp);
	if (fp < s.f.raddr + XF_END || fpoff + XS_MIN + 4 > len) {
		CHECK(0, "fpstate at frame + %" PRIu64 ", outside [%d, %zu)", fpoff, XF_END, len);
		goto out;
	}
	xo = out + fpoff;
	xsize = rd32(xo + XS_SW + SW_XSTATE_SIZE);
	ext = rd32(xo + XS_SW + SW_EXT_SIZE);
	feat = rd64(xo + XS_SW + SW_XFEATURES);
	want = xsave_want(bv, xlen);
	CHECK(rd32(xo + XS_SW + SW_MAGIC1) == FP_XSTATE_MAGIC1_, "magic1 %#x",
	      rd32(xo + XS_SW + SW_MAGIC1));
	CHECK(xsize == want, "xstate_size %u, want %zu (xlen %zu, bv %#" PRIx64 ")", xsize, want,
	      xlen, bv);
	CHECK(ext == xsize + 4, "extended_size %u, want xstate_size + 4 = %u", ext, xsize + 4);
	CHECK((feat & (bv | 3)) == (bv | 3), "xfeatures %#" PRIx64 " lacks %#" PRIx64, feat,
	      bv | 3);
	if (xsize < XS_MIN || xsize > xlen || fpoff + xsize + 4 > len) {
		CHECK(0, "XSAVE image (%" PRIu64 " + %u + 4) outside a %zu-byte frame of xlen %zu",
		      fpoff, xsize, len, xlen);
		goto out;
	}
	CHECK(rd32(xo + xsize) == FP_XSTATE_MAGIC2_, "magic2 %#x at fpstate + %u",
	      rd32(xo + xsize), xsize);
	/* the image itself, except the software bytes the kernel reads */
	CHECK(!memcmp(xo, s.xs, XS_SW), "legacy area not copied");
	CHECK(!memcmp(xo + XS_XSTATE_BV, s.xs + XS_XSTATE_BV, xsize - XS_XSTATE_BV),
	      "XSAVE header/components not copied");
	CHECK(all_byte(out + len, CANARY, POISON), "wrote past outlen");
out:
	free(out);
}

static void x86_sigframe_xstate(void)
{
	static const size_t xlens[] = { XS_SMALL, XS_BIG, XS_AMX };
	/* x87+SSE; +AVX; +AVX-512 and PKRU */
	static const uint64_t bvs[] = { 0x3, 0x7, 0x2e7 };

	begin("x86_64.sigframe.xstate");
	for (unsigned int li = 0; li < ARRAY_SIZE(xlens); li++) {
		for (unsigned int bi = 0; bi < ARRAY_SIZE(bvs); bi++) {
			/* frame % 16 == 8: the frame's end moves across 64-byte boundaries */
			for (uint64_t off = 0; off < 128; off += 16)
				x86_xstate_case(xlens[li], bvs[bi], SP + off);
		}
	}
	end();
}

static void x86_sigframe_restart(void)
{
	/* -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK */
	static const int64_t restart[] = { -512, -513, -514, -516 };
	static struct x86_state s;
	const uint64_t rip = 0x00007f00bbbb0202ull; /* just after the syscall */
	struct hc_err err = { 0 };
	size_t len;
	uint8_t *out;

	begin("x86_64.sigframe.restart");
	x86_state_init(&s, XS_BIG, 0x7);
	len = x86_state_place(&s, SP);
	out = frame_buf(len);
	for (unsigned int i = 0; i < ARRAY_SIZE(restart); i++) {
		s.g[X_ORIG_RAX] = 0; /* read */
		s.g[X_RAX] = (uint64_t)restart[i];
		s.g[X_RIP] = rip;
		CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
		CHECK(rd64(out + XF_SC + SC_RIP) == rip - 2,
		      "rax %" PRId64 ": frame rip %#" PRIx64 ", want rip - 2", restart[i],
		      rd64(out + XF_SC + SC_RIP));
		CHECK(rd64(out + XF_SC + SC_RAX) == 0,
		      "rax %" PRId64 ": frame rax %#" PRIx64 ", want orig_rax 0", restart[i],
		      rd64(out + XF_SC + SC_RAX));
		/* gregs themselves untouched */
		CHECK(s.g[X_RIP] == rip && s.g[X_RAX] == (uint64_t)restart[i], "gregs changed");
	}
	/* another syscall number, to tell rax = orig_rax from rax = 0 */
	s.g[X_ORIG_RAX] = 232; /* epoll_wait */
	s.g[X_RAX] = (uint64_t)-514;
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
	CHECK(rd64(out + XF_SC + SC_RAX) == 232, "frame rax %" PRIu64 ", want 232",
	      rd64(out + XF_SC + SC_RAX));

	/* not a restart: registers as they are */
	s.g[X_ORIG_RAX] = 0;
	s.g[X_RAX] = (uint64_t)-4; /* -EINTR */
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
	CHECK(rd64(out + XF_SC + SC_RIP) == rip && rd64(out + XF_SC + SC_RAX) == (uint64_t)-4,
	      "-EINTR: rip %#" PRIx64 " rax %#" PRIx64 ", want them unchanged",
	      rd64(out + XF_SC + SC_RIP), rd64(out + XF_SC + SC_RAX));
	s.g[X_RAX] = 5; /* read returned 5 bytes */
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
	CHECK(rd64(out + XF_SC + SC_RIP) == rip && rd64(out + XF_SC + SC_RAX) == 5,
	      "success: registers changed");
	s.g[X_ORIG_RAX] = (uint64_t)-1; /* not in a syscall: rax is just a register */
	s.g[X_RAX] = (uint64_t)-512;
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
	CHECK(rd64(out + XF_SC + SC_RIP) == rip && rd64(out + XF_SC + SC_RAX) == (uint64_t)-512,
	      "orig_rax -1: rip %#" PRIx64 " rax %#" PRIx64 ", want them unchanged",
	      rd64(out + XF_SC + SC_RIP), rd64(out + XF_SC + SC_RAX));
	free(out);
	end();
}

static void x86_skip_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { X_ORIG_RAX };
	int d;

	begin("x86_64.skip_syscall");
	/* at the restorer's rt_sigreturn entry stop, between two calls */
	fill(g, GWORDS);
	g[X_ORIG_RAX] = 15;
	g[X_RAX] = (uint64_t)-38; /* -ENOSYS, as at every syscall-entry stop */
	memcpy(orig, g, sizeof(g));
	x86->skip_syscall(g);
	CHECK(g[X_ORIG_RAX] == UINT64_MAX, "orig_rax %#" PRIx64 ", want -1", g[X_ORIG_RAX]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	end();
}

static void x86_restart_now(void)
{
	/* -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK */
	static const int64_t restart[] = { -512, -513, -514, -516 };
	static const struct {
		long nr;
		int64_t rax;
	} keep[] = {
		{ 0, -4 },     /* -EINTR: reported, not restarted */
		{ 0, 5 },      /* read returned 5 */
		{ 35, 0 },     /* nanosleep done */
		{ -1, -512 },  /* not in a syscall: rax is just a register */
	};
	static const int touched[] = { X_RAX, X_RIP, X_ORIG_RAX };
	static struct x86_state s;
	const uint64_t rip = 0x00007f00cccc0302ull;
	uint64_t g[GWORDS], orig[GWORDS];
	size_t len;
	uint8_t *out;
	int d;

	begin("x86_64.restart_now");
	x86_state_init(&s, XS_BIG, 0x7);
	len = x86_state_place(&s, SP);
	out = frame_buf(len);
	for (unsigned int i = 0; i < ARRAY_SIZE(restart); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = 35; /* nanosleep */
		g[X_RAX] = (uint64_t)restart[i];
		g[X_RIP] = rip;
		memcpy(orig, g, sizeof(g));
		x86->restart_now(g);
		/* -516 too: the restart block may be gone, so the syscall itself runs again */
		CHECK(g[X_RAX] == 35, "rax %" PRId64 ": rax %#" PRIx64 ", want orig_rax",
		      restart[i], g[X_RAX]);
		CHECK(g[X_RIP] == rip - 2, "rax %" PRId64 ": rip %#" PRIx64 ", want rip - 2",
		      restart[i], g[X_RIP]);
		CHECK(g[X_ORIG_RAX] == UINT64_MAX,
		      "rax %" PRId64 ": orig_rax %#" PRIx64 ", want -1 (decided once)", restart[i],
		      g[X_ORIG_RAX]);
		d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
		CHECK(d < 0, "rax %" PRId64 ": word %d changed", restart[i], d);
		/* deciding twice must not rewind twice */
		memcpy(orig, g, sizeof(g));
		x86->restart_now(g);
		CHECK(!memcmp(g, orig, sizeof(g)), "rax %" PRId64 ": second call changed the image",
		      restart[i]);

		/* sigframe_build makes the same decision */
		memcpy(s.g, orig, sizeof(s.g));
		s.g[X_ORIG_RAX] = 35;
		s.g[X_RAX] = (uint64_t)restart[i];
		s.g[X_RIP] = rip;
		CHECK(x86->sigframe_build(&s.f, out, len, NULL) == 0, "sigframe_build failed");
		CHECK(rd64(out + XF_SC + SC_RAX) == g[X_RAX] &&
			      rd64(out + XF_SC + SC_RIP) == g[X_RIP],
		      "rax %" PRId64 ": sigframe_build and restart_now disagree", restart[i]);
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(keep); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)keep[i].nr;
		g[X_RAX] = (uint64_t)keep[i].rax;
		g[X_RIP] = rip;
		memcpy(orig, g, sizeof(g));
		x86->restart_now(g);
		CHECK(!memcmp(g, orig, sizeof(g)),
		      "syscall %ld returning %" PRId64 ": image changed", keep[i].nr, keep[i].rax);
	}
	free(out);
	end();
}

/* The restore at a syscall-exit stop: the kernel's decision, the restart block kept. */
static void x86_restart_here(void)
{
	static const struct {
		long nr;
		int64_t rax;
		uint64_t want_rax;
		bool rewound;
	} cases[] = {
		{ 0, -512, 0, true },     /* read, -ERESTARTSYS: read again */
		{ 202, -513, 202, true }, /* futex, -ERESTARTNOINTR */
		{ 7, -514, 7, true },     /* poll, -ERESTARTNOHAND */
		{ 35, -516, 219, true },  /* nanosleep: restart_syscall, with the time left */
		{ 0, -4, (uint64_t)-4, false }, /* -EINTR: reported, not restarted */
		{ 0, 5, 5, false },       /* read returned 5 */
		{ -1, -512, (uint64_t)-512, false }, /* not in a syscall: rax is just a register */
	};
	static const int touched[] = { X_RAX, X_RIP, X_ORIG_RAX };
	const uint64_t rip = 0x00007f00cccc0302ull;
	uint64_t g[GWORDS], orig[GWORDS];
	int d;

	begin("x86_64.restart_here");
	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)cases[i].nr;
		g[X_RAX] = (uint64_t)cases[i].rax;
		g[X_RIP] = rip;
		memcpy(orig, g, sizeof(g));
		x86->restart_here(g);
		CHECK(g[X_RAX] == cases[i].want_rax, "case %u: rax %#" PRIx64 ", want %#" PRIx64, i,
		      g[X_RAX], cases[i].want_rax);
		CHECK(g[X_RIP] == (cases[i].rewound ? rip - 2 : rip), "case %u: rip %#" PRIx64, i,
		      g[X_RIP]);
		CHECK(g[X_ORIG_RAX] == UINT64_MAX, "case %u: orig_rax %#" PRIx64 ", want -1", i,
		      g[X_ORIG_RAX]);
		d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
		CHECK(d < 0, "case %u: word %d changed", i, d);
		/* deciding twice must not rewind twice */
		memcpy(orig, g, sizeof(g));
		x86->restart_here(g);
		CHECK(!memcmp(g, orig, sizeof(g)), "case %u: second call changed the image", i);
	}
	CHECK(!hc_arch_aarch64.restart_here,
	      "arm64 cannot write x7 at a syscall stop: it restores inside signal delivery");
	end();
}

static void x86_sigframe_errors(void)
{
	static struct x86_state s;
	struct hc_regset fprs = { NT_PRFPREG_, NULL, 512 };
	struct hc_err err = { 0 };
	size_t len, need;
	uint64_t fpoff;
	uint8_t *out;

	begin("x86_64.sigframe.errors");
	x86_state_init(&s, XS_BIG, 0x7);
	len = x86_state_place(&s, SP);
	out = frame_buf(len);

	/* the exact size needed: fpstate offset + xstate_size + magic2 */
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed");
	fpoff = rd64(out + XF_SC + SC_FPSTATE) - s.f.raddr;
	need = (size_t)fpoff + rd32(out + fpoff + XS_SW + SW_XSTATE_SIZE) + 4;
	CHECK(need <= len, "needs %zu bytes, sigframe_len says %zu", need, len);
	memset(out, POISON, len + CANARY);
	CHECK(x86->sigframe_build(&s.f, out, need, &err) == 0, "exact size %zu refused", need);
	CHECK(all_byte(out + need, len + CANARY - need, POISON), "wrote past %zu bytes", need);

	memset(out, POISON, len + CANARY);
	memset(&err, 0, sizeof(err));
	CHECK(x86->sigframe_build(&s.f, out, need - 1, &err) == -1, "%zu bytes accepted",
	      need - 1);
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded for a short buffer");
	CHECK(all_byte(out, len + CANARY, POISON), "short buffer written to");
	CHECK(x86->sigframe_build(&s.f, out, XF_END, NULL) == -1, "%d bytes accepted", XF_END);

	/* no XSTATE: rt_sigreturn would load a garbage FPU */
	s.f.nextra = 0;
	memset(&err, 0, sizeof(err));
	CHECK(x86->sigframe_build(&s.f, out, len, &err) == -1, "no regsets accepted");
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded without XSTATE");
	fprs.buf = s.xs;
	s.f.extra = &fprs;
	s.f.nextra = 1;
	CHECK(x86->sigframe_build(&s.f, out, len, NULL) == -1, "NT_PRFPREG taken for XSTATE");
	s.f.extra = &s.rs;
	s.rs.len = 512; /* FXSAVE area only, no XSAVE header */
	CHECK(x86->sigframe_build(&s.f, out, len, NULL) == -1, "512-byte XSTATE accepted");
	CHECK(all_byte(out, len + CANARY, POISON), "buffer written to on failure");
	free(out);
	end();
}

static void x86_call_fpstate(void)
{
	static uint8_t xs[4096], orig[4096];
	uint64_t bv;

	begin("x86_64.call_fpstate");
	for (size_t i = 0; i < sizeof(xs); i++)
		xs[i] = (uint8_t)(i * 7 + 3);
	/* garbage FCW: round up, single precision, x87 exceptions unmasked */
	memcpy(xs + XS_FCW, &(uint16_t){ 0x0840 }, 2);
	/* garbage MXCSR: FZ, round toward zero, DAZ, SSE exceptions unmasked */
	memcpy(xs + XS_MXCSR, &(uint32_t){ 0xe040 }, 4);
	memcpy(xs + XS_MXCSR_MASK, &(uint32_t){ 0x0002ffff }, 4);
	xs[XS_FTW] = 0xff; /* all eight x87 registers in use */
	/* x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM, PKRU */
	wr64(xs + XS_XSTATE_BV, 0x2e7);
	memcpy(orig, xs, sizeof(xs));

	CHECK(x86->call_fpstate(NT_X86_XSTATE_, xs, sizeof(xs)), "NT_X86_XSTATE not handled");
	CHECK(rd16(xs + XS_FCW) == 0x037f, "FCW %#x, want 0x037f", rd16(xs + XS_FCW));
	CHECK(rd32(xs + XS_MXCSR) == 0x1f80, "MXCSR %#x, want 0x1f80", rd32(xs + XS_MXCSR));
	CHECK(xs[XS_FTW] == 0, "abridged tag word %#x, want 0 (all empty)", xs[XS_FTW]);
	CHECK(rd16(xs + XS_FSW) == 0, "FSW %#x, want 0 (TOP 0, no exceptions)",
	      rd16(xs + XS_FSW));
	CHECK(rd32(xs + XS_MXCSR_MASK) == 0x0002ffff, "MXCSR_MASK must be kept, got %#x",
	      rd32(xs + XS_MXCSR_MASK));
	CHECK(!memcmp(xs + XS_SW, orig + XS_SW, 48), "software-reserved bytes changed");
	bv = rd64(xs + XS_XSTATE_BV);
	CHECK((bv & 3) == 3, "XSTATE_BV %#" PRIx64 ": x87/SSE bits must stay set so FCW and "
	      "MXCSR are loaded", bv);
	CHECK(bv == 0x2e7, "XSTATE_BV %#" PRIx64 ": AVX, AVX-512 or PKRU state changed", bv);
	/* the registers themselves stay: x87 ST0-7 and XMM0-15 */
	CHECK(!memcmp(xs + 32, orig + 32, 416 - 32), "x87 or XMM registers changed");
	CHECK(!memcmp(xs + XS_XSTATE_BV + 8, orig + XS_XSTATE_BV + 8,
		      sizeof(xs) - XS_XSTATE_BV - 8),
	      "bytes after XSTATE_BV changed");

	/* already the ABI's, sticky flags and all: nothing to write */
	memcpy(xs, orig, sizeof(xs));
	memcpy(xs + XS_FCW, &(uint16_t){ 0x037f }, 2);
	memcpy(xs + XS_FSW, &(uint16_t){ 0x0020 }, 2); /* PE, sticky */
	xs[XS_FTW] = 0;
	memcpy(xs + XS_MXCSR, &(uint32_t){ 0x1fa0 }, 4); /* PE, sticky */
	wr64(xs + XS_XSTATE_BV, 0x204); /* x87 and SSE in their init state */
	memcpy(orig, xs, sizeof(xs));
	CHECK(x86->call_fpstate(NT_X86_XSTATE_, xs, sizeof(xs)) && !memcmp(xs, orig, sizeof(xs)),
	      "a thread already in the ABI's state was changed");

	/* not ours: untouched */
	memcpy(xs, orig, sizeof(xs));
	CHECK(!x86->call_fpstate(NT_PRFPREG_, xs, sizeof(xs)), "NT_PRFPREG accepted");
	CHECK(!x86->call_fpstate(NT_X86_XSTATE_, xs, 512),
	      "512-byte buffer (no XSAVE header) accepted");
	CHECK(!memcmp(xs, orig, sizeof(xs)), "buffer changed when refused");
	end();
}

static void x86_dump_regs(void)
{
	uint64_t g[GWORDS];
	char buf[2048], want[32];
	int n;

	begin("x86_64.dump_regs");
	fill(g, GWORDS);
	g[X_RIP] = 0x0000555512345678ull;
	n = x86->dump_regs(g, buf, sizeof(buf));
	CHECK(n > 0 && (size_t)n < sizeof(buf), "returned %d", n);
	snprintf(want, sizeof(want), "%016" PRIx64, g[X_RIP]);
	CHECK(strstr(buf, "rip") && strstr(buf, want), "rip not in '%.60s...'", buf);
	CHECK(strstr(buf, "rsp") && strstr(buf, "rax"), "rsp/rax missing");
	dump_truncated(x86, g);
	end();
}

/*
 * The test's own offsets against the host's uapi headers.  The kernel's
 * struct rt_sigframe is not exported; it is mirrored from
 * arch/x86/include/asm/sigframe.h with the exported parts.
 */
static void x86_sigframe_uapi(void)
{
#if defined(__x86_64__)
	struct k_rt_sigframe {
		char *pretcode;
		struct ucontext uc; /* <asm/ucontext.h>: the kernel's, not glibc's ucontext_t */
		siginfo_t info;
	};
	static const size_t sc_off[] = {
		offsetof(struct sigcontext, r8),  offsetof(struct sigcontext, r9),
		offsetof(struct sigcontext, r10), offsetof(struct sigcontext, r11),
		offsetof(struct sigcontext, r12), offsetof(struct sigcontext, r13),
		offsetof(struct sigcontext, r14), offsetof(struct sigcontext, r15),
		offsetof(struct sigcontext, rdi), offsetof(struct sigcontext, rsi),
		offsetof(struct sigcontext, rbp), offsetof(struct sigcontext, rbx),
		offsetof(struct sigcontext, rdx), offsetof(struct sigcontext, rax),
		offsetof(struct sigcontext, rcx), offsetof(struct sigcontext, rsp),
		offsetof(struct sigcontext, rip), offsetof(struct sigcontext, eflags),
	};

	begin("x86_64.sigframe.uapi");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_flags) == XF_UC_FLAGS, "uc_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_link) == XF_UC_LINK, "uc_link");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_sp) == XF_SS_SP, "ss_sp");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_flags) == XF_SS_FLAGS, "ss_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_size) == XF_SS_SIZE, "ss_size");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext) == XF_SC, "uc_mcontext");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_sigmask) == XF_MASK, "uc_sigmask");
	/* the kernel's sigset_t is one word; glibc's is 128 bytes */
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_sigmask) + 8 == XF_INFO, "siginfo");
	CHECK(XF_INFO + sizeof(siginfo_t) == XF_END, "siginfo size %zu", sizeof(siginfo_t));
	CHECK(sizeof(struct sigcontext) == SC_SIZE, "sizeof(struct sigcontext) %zu",
	      sizeof(struct sigcontext));
	for (unsigned int i = 0; i < ARRAY_SIZE(sc_off); i++)
		CHECK(sc_off[i] == 8 * i, "sigcontext register %u at %zu", i, sc_off[i]);
	CHECK(offsetof(struct sigcontext, cs) == SC_CS &&
		      offsetof(struct sigcontext, gs) == SC_GS &&
		      offsetof(struct sigcontext, fs) == SC_FS &&
		      offsetof(struct sigcontext, __pad0) == SC_SS,
	      "cs/gs/fs/ss");
	CHECK(offsetof(struct sigcontext, err) == SC_ERR &&
		      offsetof(struct sigcontext, trapno) == SC_TRAPNO &&
		      offsetof(struct sigcontext, oldmask) == SC_OLDMASK &&
		      offsetof(struct sigcontext, cr2) == SC_CR2 &&
		      offsetof(struct sigcontext, fpstate) == SC_FPSTATE &&
		      offsetof(struct sigcontext, __reserved1) == SC_RESERVED,
	      "err/trapno/oldmask/cr2/fpstate/reserved1");
	CHECK(UC_FP_XSTATE == UC_FP_XSTATE_ && UC_SIGCONTEXT_SS == UC_SIGCONTEXT_SS_ &&
		      UC_STRICT_RESTORE_SS == UC_STRICT_RESTORE_SS_,
	      "UC_* flags");
	CHECK(FP_XSTATE_MAGIC1 == FP_XSTATE_MAGIC1_ && FP_XSTATE_MAGIC2 == FP_XSTATE_MAGIC2_,
	      "FP_XSTATE_MAGIC*");
	/* struct _fpx_sw_bytes fills the last 48 bytes of the 512-byte FXSAVE area */
	CHECK(sizeof(struct _fpstate) == 512 && 512 - 48 == XS_SW, "FXSAVE area size");
	CHECK(offsetof(struct _fpx_sw_bytes, magic1) == SW_MAGIC1 &&
		      offsetof(struct _fpx_sw_bytes, extended_size) == SW_EXT_SIZE &&
		      offsetof(struct _fpx_sw_bytes, xstate_bv) == SW_XFEATURES &&
		      offsetof(struct _fpx_sw_bytes, xstate_size) == SW_XSTATE_SIZE,
	      "struct _fpx_sw_bytes");
	CHECK(offsetof(struct _xstate, xstate_hdr) == XS_XSTATE_BV, "XSAVE header");
	end();
#else
	printf("SKIP x86_64.sigframe.uapi: the host's headers are not x86_64's\n");
#endif
}

/* ---- aarch64: struct user_pt_regs, word indices ---- */

enum { A_X0 = 0, A_X8 = 8, A_LR = 30, A_SP = 31, A_PC = 32, A_PSTATE = 33, A_NWORDS = 34 };

#define A_BTYPE 0x0c00ull /* PSTATE bits 11:10 */

/*
 * The arm64 rt_sigframe (arch/arm64/kernel/signal.c): struct siginfo, then
 * struct ucontext (uapi asm/ucontext.h) whose uc_mcontext.__reserved holds
 * the records.  aarch64.sigframe.uapi checks these on an arm64 host.
 */
#define AF_UC		128
#define AF_UC_FLAGS	(AF_UC + 0)
#define AF_UC_LINK	(AF_UC + 8)
#define AF_SS_SP	(AF_UC + 16)
#define AF_SS_FLAGS	(AF_UC + 24)
#define AF_SS_SIZE	(AF_UC + 32)
#define AF_MASK		(AF_UC + 40)
#define AF_MCONTEXT	(AF_UC + 176)	/* struct sigcontext: fault_address first */
#define AF_REGS		(AF_UC + 184)	/* x0..x30, sp, pc, pstate */
#define AF_RESERVED	(AF_UC + 464)	/* __reserved[4096], 16-byte aligned */
#define AF_END		(AF_UC + 4560)
/* struct fpsimd_context, from its record */
#define FPS_MAGIC	0x46508001u
#define FPS_SIZE	528
#define FPS_FPSR	8
#define FPS_FPCR	12
#define FPS_VREGS	16

/* NT_PRFPREG: struct user_fpsimd_state */
#define FP_FPSR 512
#define FP_FPCR 516
#define FP_LEN	528

static const struct hc_arch *const a64 = &hc_arch_aarch64;

static const uint8_t a64_sysc[] = { 0x01, 0x00, 0x00, 0xd4 }; /* svc #0 */
static const uint8_t a64_sysret[] = { 0x01, 0x00, 0x00, 0xd4,  /* svc #0 */
				      0xc0, 0x03, 0x5f, 0xd6 }; /* ret */
/* the vDSO's __kernel_rt_sigreturn: mov x8, #139; svc #0 */
static const uint8_t a64_vdso_rt[] = { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 };

/* aarch64.table beyond what arch_table() checks on both backends */
static void a64_table_own(void)
{
	static const uint8_t ret[] = { 0xc0, 0x03, 0x5f, 0xd6 };
	static const uint8_t bti_c[] = { 0x5f, 0x24, 0x03, 0xd5 };
	const struct hc_bytes *n = &a64->notify;

	/* FPSIMD first, then SVE: see a64_extra_regsets in arch/aarch64/arch.c. */
	CHECK(a64->extra_regsets && a64->extra_regsets[0] == NT_PRFPREG_ &&
		      a64->extra_regsets[1] == 0x405 /* NT_ARM_SVE */ && a64->extra_regsets[2] == 0,
	      "extra_regsets");
	/* the syscall number is not in NT_PRSTATUS: skipping needs its own regset */
	CHECK(a64->skip_regset == 0x404 /* NT_ARM_SYSTEM_CALL */, "skip_regset %#x",
	      a64->skip_regset);
	/* callbacks: the C library's getpid(), mov x8, #172; svc #0; ret */
	CHECK(n->b && n->len == 12 && !memcmp(n->b, (const uint8_t[]){ 0x88, 0x15, 0x80, 0xd2 }, 4),
	      "notify is not getpid()");
	CHECK(n->b && n->len % 4 == 0 && a64->notify_sys_end >= 4 &&
		      a64->notify_sys_end + 4 <= n->len && a64->notify_sys_end % 4 == 0,
	      "notify_sys_end %zu outside notify (%zu bytes)", a64->notify_sys_end, n->len);
	if (n->b && a64->notify_sys_end >= 4 && a64->notify_sys_end + 4 <= n->len) {
		CHECK(!memcmp(n->b + a64->notify_sys_end - 4, a64_sysc, 4),
		      "no svc before notify_sys_end");
		CHECK(!memcmp(n->b + a64->notify_sys_end, ret, 4), "no ret at notify_sys_end");
	}
	CHECK(a64->entry_pads && bytes_eq(&a64->entry_pads[0], bti_c, sizeof(bti_c)) &&
		      a64->entry_pads[1].len == 4 && !a64->entry_pads[2].len,
	      "entry_pads are not bti c and nop");
	/* x0 survives into the restorer's svc: no ret gadget */
	CHECK(!a64->ret_gadget && a64->get_ret, "ret_gadget %p, get_ret %p: want get_ret only",
	      (void *)a64->ret_gadget, (void *)a64->get_ret);
	CHECK(!a64->get_tp && a64->tp_regset == 0x401 /* NT_ARM_TLS */ && a64->regs_hold_returns == 30,
	      "thread pointer from NT_ARM_TLS, x0-x30 may hold a return address");
}

static void a64_prep_call_args(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, 6, 7, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("aarch64.prep_call.args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, frame, 7);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed: %s", err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	for (unsigned int i = 0; i < 7; i++)
		CHECK(g[i] == c.args[i], "x%u %#" PRIx64, i, g[i]);
	CHECK(g[A_PC] == FN, "pc %#" PRIx64, g[A_PC]);
	CHECK(g[A_LR] == RETG, "x30 %#" PRIx64 ", want ret_addr", g[A_LR]);
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(g[A_X8] == orig[A_X8], "x8 changed");
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	CHECK(c.slot_addr == 0 && c.slot_val == 0,
	      "slot (%#" PRIx64 ", %#" PRIx64 "), want none: the return address is in x30",
	      c.slot_addr, c.slot_val);

	fill(g, GWORDS);
	call_init(&c, frame, 3);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call(3 args) failed");
	CHECK(g[0] == c.args[0] && g[1] == c.args[1] && g[2] == c.args[2], "3 args");
	CHECK(g[3] == orig[3] && g[7] == orig[7], "unused arg regs changed");
	end();
}

/*
 * An 8th argument goes in x7, as AAPCS64 says.  The kernel puts x7 back as
 * it was after a syscall stop, so call.c starts such a call from another
 * stop; the backend just sets it.
 */
static void a64_prep_call_x7(void)
{
	static const int touched[] = { 0, 1, 2, 3, 4, 5, 6, 7, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("aarch64.prep_call.x7");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, frame, 8);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call(8 args) failed: %s", err.msg);
	for (unsigned int i = 0; i < 8; i++)
		CHECK(g[i] == c.args[i], "x%u %#" PRIx64, i, g[i]);
	CHECK(g[A_PC] == FN, "pc %#" PRIx64 ", want the function", g[A_PC]);
	CHECK(g[A_LR] == RETG && g[A_SP] == frame, "x30 %#" PRIx64 ", sp %#" PRIx64, g[A_LR],
	      g[A_SP]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	end();
}

static void a64_prep_call_stack(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("aarch64.prep_call.stack");
	for (uint64_t off = 0; off < 32; off++) {
		uint64_t osp = SP + off, fr = a64->frame_place(osp, AF_END + 16);

		fill(g, GWORDS);
		g[A_SP] = osp;
		call_init(&c, fr, 0);
		CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
		CHECK(g[A_SP] == fr, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], fr);
		CHECK(g[A_SP] % 16 == 0, "sp %% 16 == %" PRIu64 " (orig sp %#" PRIx64 ")",
		      g[A_SP] % 16, osp);
		CHECK(g[A_SP] < osp, "sp %#" PRIx64 " not below the original %#" PRIx64, g[A_SP],
		      osp);
		CHECK(a64->get_sp(g) == fr, "get_sp after prep_call");
		CHECK(g[A_LR] == RETG, "x30 %#" PRIx64, g[A_LR]);
	}
	end();
}

static void a64_prep_call_btype(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	/* NZCV = 0b1010, SSBS (bit 12), BTYPE = 0b11 */
	const uint64_t pstate = 0xa0000000ull | 0x1000ull | A_BTYPE;

	begin("aarch64.prep_call.btype");
	fill(g, GWORDS);
	g[A_PSTATE] = pstate;
	call_init(&c, a64->frame_place(SP, AF_END + 16), 1);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
	CHECK(!(g[A_PSTATE] & A_BTYPE), "BTYPE not cleared: pstate %#" PRIx64, g[A_PSTATE]);
	CHECK(g[A_PSTATE] == (pstate & ~A_BTYPE), "other PSTATE bits changed: %#" PRIx64,
	      g[A_PSTATE]);
	end();
}

static void a64_prep_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, A_X8, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	struct hc_call c;
	int d;

	begin("aarch64.prep_syscall");
	fill(g, GWORDS);
	g[A_PSTATE] = 0x60000000ull | A_BTYPE;
	memcpy(orig, g, sizeof(g));
	sys_init(&c, frame, 222 /* mmap */);
	a64->prep_syscall(g, &c);
	CHECK(g[A_X8] == 222, "x8 %#" PRIx64 ", want __NR_mmap", g[A_X8]);
	CHECK(g[A_PC] == GADGET, "pc %#" PRIx64 ", want the gadget", g[A_PC]);
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[i] == c.args[i], "x%u", i);
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(g[A_LR] == RESTORER, "x30 %#" PRIx64 ", want the restorer", g[A_LR]);
	CHECK(c.slot_addr == 0 && c.slot_val == 0, "slot (%#" PRIx64 ", %#" PRIx64 "), want none",
	      c.slot_addr, c.slot_val);
	CHECK(g[6] == orig[6] && g[7] == orig[7], "x6/x7 changed: syscalls take six arguments");
	CHECK(g[A_PSTATE] == 0x60000000ull, "pstate %#" PRIx64 ", want BTYPE cleared only",
	      g[A_PSTATE]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);

	memcpy(g, orig, sizeof(g));
	sys_init(&c, frame, 215 /* munmap */);
	c.nargs = 2;
	a64->prep_syscall(g, &c);
	CHECK(g[A_X8] == 215 && g[0] == c.args[0] && g[1] == c.args[1], "munmap");
	CHECK(g[2] == orig[2] && g[5] == orig[5], "unused syscall arg regs changed");

	g[A_X0] = (uint64_t)-12;
	CHECK(a64->get_syscall_ret(g) == -12, "get_syscall_ret");
	g[A_X0] = 0xffff8000ull;
	CHECK(a64->get_syscall_ret(g) == 0xffff8000ll, "get_syscall_ret address");
	end();
}

static void a64_prep_restore(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	int d;

	begin("aarch64.prep_restore");
	fill(g, GWORDS);
	g[A_PSTATE] = 0x80000000ull;
	memcpy(orig, g, sizeof(g));
	a64->prep_restore(g, RESTORER, frame);
	CHECK(g[A_PC] == RESTORER, "pc %#" PRIx64 ", want the restorer", g[A_PC]);
	/* arm64 rt_sigreturn reads the frame at sp itself */
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(!(g[A_PSTATE] & A_BTYPE), "BTYPE set");
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	CHECK(g[A_PSTATE] == orig[A_PSTATE], "pstate changed");
	end();
}

static void a64_get_ret(void)
{
	uint64_t g[GWORDS];

	begin("aarch64.get_ret");
	fill(g, GWORDS);
	/* at the restorer's rt_sigreturn stop: the result still in x0, x8 = 139 */
	g[A_X0] = 0x1122334455667788ull;
	g[A_X8] = 139;
	CHECK(a64->get_ret(g) == 0x1122334455667788ull, "get_ret %#" PRIx64 ", want x0",
	      a64->get_ret(g));
	end();
}

/* The frame carries FP/SIMD: a thread with live SVE registers is given back by heapctl instead. */
static void a64_frame_restores(void)
{
	uint8_t sve[64] = { 0 }, fp[528] = { 0 };
	struct hc_regset x[2] = { { NT_PRFPREG_, fp, sizeof(fp) }, { NT_ARM_SVE_, sve, sizeof(sve) } };
	uint64_t g[GWORDS];

	begin("aarch64.frame_restores");
	fill(g, GWORDS);
	CHECK(a64->frame_restores(g, x, 1), "FP/SIMD alone refused");
	sve[12] = 0; /* SVE_PT_REGS_FPSIMD: only the FPSIMD view, as in a syscall */
	CHECK(a64->frame_restores(g, x, 2), "an FPSIMD-only SVE regset refused");
	sve[12] = 1; /* SVE_PT_REGS_SVE: live z, p and ffr registers */
	CHECK(!a64->frame_restores(g, x, 2), "live SVE state taken");
	/* on the svc of restart_syscall: it needs the restart block the frame resets */
	g[A_X8] = 128;
	CHECK(!a64->frame_restores(g, x, 1), "restart_syscall taken");
	end();
}

static void a64_no_restart(void)
{
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.no_restart");
	fill(g, GWORDS);
	g[A_X0] = (uint64_t)-512; /* -ERESTARTSYS, as if the kernel had not rewound */
	memcpy(orig, g, sizeof(g));
	a64->no_restart(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "image changed: the arm64 kernel rewinds before "
	      "the stop, nothing must be fixed up");
	end();
}

static const struct wait_case a64_waits[] = {
	/* signal(7): EINTR on any stop; re-issued only when untimed */
	{ 22, { 5, 0x1000, 64, (uint64_t)-1, 0, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait(-1)" },
	{ 22, { 5, 0x1000, 64, 0xa5a50000ffffffffull, 0, 8 }, HC_WAIT_EINTR_REDO,
	  "epoll_pwait(int -1, garbage above bit 31)" },
	{ 22, { 5, 0x1000, 64, 5000, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait(5000)" },
	{ 22, { 5, 0x1000, 64, 0, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait(0)" },
	{ 441, { 5, 0x1000, 64, 0, 0, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait2(NULL)" },
	{ 441, { 5, 0x1000, 64, TS_PTR, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait2(ts)" },
	{ 193, { 3, 0x1000, 1 }, HC_WAIT_EINTR_REDO, "semop" },
	{ 192, { 3, 0x1000, 1, 0 }, HC_WAIT_EINTR_REDO, "semtimedop(NULL)" },
	{ 192, { 3, 0x1000, 1, TS_PTR }, HC_WAIT_EINTR_KEEP, "semtimedop(ts)" },
	{ 137, { 0x1000, 0, 0, 8 }, HC_WAIT_EINTR_REDO, "rt_sigtimedwait(NULL)" },
	{ 137, { 0x1000, 0, TS_PTR, 8 }, HC_WAIT_EINTR_KEEP, "rt_sigtimedwait(ts)" },
	{ 4, { 0x7000, 1, 8, 0x1000, 0 }, HC_WAIT_EINTR_REDO, "io_getevents(NULL)" },
	{ 4, { 0x7000, 1, 8, 0x1000, TS_PTR }, HC_WAIT_EINTR_KEEP, "io_getevents(ts)" },
	{ 292, { 0x7000, 1, 8, 0x1000, 0, 0 }, HC_WAIT_EINTR_REDO, "io_pgetevents(NULL)" },
	{ 292, { 0x7000, 1, 8, 0x1000, TS_PTR, 0 }, HC_WAIT_EINTR_KEEP, "io_pgetevents(ts)" },
	/* rewound before the stop: a relative timeout starts over */
	{ 101, { TS_PTR, 0 }, HC_WAIT_RESTART_FULL, "nanosleep" },
	{ 115, { 1, 0, TS_PTR, 0 }, HC_WAIT_RESTART_FULL, "clock_nanosleep(relative)" },
	{ 115, { 1, 1, TS_PTR, 0 }, HC_WAIT_UNDISTURBED, "clock_nanosleep(TIMER_ABSTIME)" },
	{ 98, { 0x1000, 0x80, 1, TS_PTR }, HC_WAIT_RESTART_FULL, "futex(FUTEX_WAIT_PRIVATE, ts)" },
	{ 98, { 0x1000, 0x180, 1, TS_PTR }, HC_WAIT_RESTART_FULL,
	  "futex(FUTEX_WAIT_PRIVATE|FUTEX_CLOCK_REALTIME, ts)" },
	{ 98, { 0x1000, 0x80, 1, 0 }, HC_WAIT_UNDISTURBED, "futex(FUTEX_WAIT_PRIVATE, NULL)" },
	{ 98, { 0x1000, 0x89, 1, TS_PTR, 0, ~0u }, HC_WAIT_UNDISTURBED,
	  "futex(FUTEX_WAIT_BITSET_PRIVATE, absolute ts)" },
	/* timeouts updated in place, or none */
	{ 73, { 0x1000, 1, TS_PTR, 0x2000, 8 }, HC_WAIT_UNDISTURBED, "ppoll(ts)" },
	{ 72, { 4, 0x1000, 0, 0, TS_PTR, 0x2000 }, HC_WAIT_UNDISTURBED, "pselect6(ts)" },
	{ 63, { 3, 0x1000, 16 }, HC_WAIT_UNDISTURBED, "read" },
	{ -1, { 0 }, HC_WAIT_UNDISTURBED, "not in a syscall" },
};

static void a64_undo_stop_eintr(void)
{
	static const int64_t x0s[] = { -4 /* -EINTR */, -512, 0, 3 };
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.undo_stop_eintr");
	for (unsigned int i = 0; i < ARRAY_SIZE(x0s); i++) {
		fill(g, GWORDS);
		g[A_X0] = (uint64_t)x0s[i];
		g[A_X8] = 22; /* epoll_pwait */
		memcpy(orig, g, sizeof(g));
		/* orig_x0 is not in any regset: without /proc's view it cannot be re-issued */
		CHECK(!a64->undo_stop_eintr(g, NULL), "x0 %" PRId64 ": undone", x0s[i]);
		CHECK(!memcmp(g, orig, sizeof(g)), "x0 %" PRId64 ": image changed", x0s[i]);
	}
	{
		struct hc_presys pre = { .valid = true, .nr = 22 /* epoll_pwait */ };

		fill(g, GWORDS);
		g[A_X0] = (uint64_t)-4;
		g[A_X8] = 22;
		g[A_X0 + 3] = (uint64_t)-1; /* no timeout */
		pre.args[0] = 7; /* the epoll fd the EINTR overwrote */
		for (unsigned int i = 1; i < 6; i++)
			pre.args[i] = g[A_X0 + i];
		pre.sp = g[A_SP];
		pre.pc = g[A_PC];
		memcpy(orig, g, sizeof(g));
		CHECK(a64->undo_stop_eintr(g, &pre), "epoll_pwait EINTR with /proc's view not undone");
		CHECK(g[A_X0] == 7 && g[A_PC] == orig[A_PC] - 4, "x0/pc not rewound");
		memcpy(g, orig, sizeof(g));
		pre.sp ^= 16; /* another moment: must not match */
		CHECK(!a64->undo_stop_eintr(g, &pre), "stale /proc view accepted");
		pre.sp ^= 16;
		/* a timed wait keeps the EINTR any signal would give it */
		memcpy(g, orig, sizeof(g));
		g[A_X0 + 3] = pre.args[3] = 5000;
		memcpy(orig, g, sizeof(g));
		CHECK(!a64->undo_stop_eintr(g, &pre), "epoll_pwait(5000): EINTR undone");
		CHECK(!memcmp(g, orig, sizeof(g)), "epoll_pwait(5000): image changed");
		for (size_t i = 0; i < ARRAY_SIZE(a64_waits); i++) {
			const struct wait_case *c = &a64_waits[i];

			fill(g, GWORDS);
			g[A_X0] = (uint64_t)-4;
			g[A_X8] = (uint64_t)c->nr;
			pre.nr = c->nr;
			memcpy(pre.args, c->args, sizeof(pre.args));
			for (unsigned int k = 1; k < 6; k++)
				g[A_X0 + k] = c->args[k];
			pre.sp = g[A_SP];
			pre.pc = g[A_PC];
			CHECK(a64->undo_stop_eintr(g, &pre) == (c->want == HC_WAIT_EINTR_REDO),
			      "%s: undone is not %d", c->what, c->want == HC_WAIT_EINTR_REDO);
		}
		pre.nr = 63; /* read: restarts on its own, never EINTR from a stop */
		g[A_X8] = 63;
		CHECK(!a64->undo_stop_eintr(g, &pre), "read undone");
	}
	end();
}

static void a64_restart_probe(void)
{
	struct hc_presys pre = { .valid = true, .nr = 101 /* nanosleep */ };
	uint64_t g[GWORDS], e[GWORDS], orig[GWORDS];

	begin("aarch64.restart_probe");
	CHECK(!x86->restart_probe && !x86->restart_probed, "x86_64 needs no probe");
	/* rewound by do_signal(): pc on the svc, x0 = orig_x0, x8 = nanosleep */
	fill(g, GWORDS);
	g[A_X8] = 101;
	g[A_PC] = 0x0000ffff80001004ull;
	pre.args[0] = g[A_X0] = 0x0000ffffc0000100ull; /* req */
	pre.args[1] = g[A_X0 + 1] = 0;                 /* rem */
	for (unsigned int i = 2; i < 6; i++)
		pre.args[i] = g[A_X0 + i];
	pre.sp = g[A_SP];
	pre.pc = g[A_PC] + 4; /* /proc shows the pc after the svc */
	CHECK(a64->restart_probe(g, &pre), "rewound nanosleep not probed");
	CHECK(!a64->restart_probe(g, NULL), "probed without /proc's view");
	pre.pc += 4;
	CHECK(!a64->restart_probe(g, &pre), "probed at another pc");
	pre.pc -= 4;
	g[A_X0] = (uint64_t)-4;
	CHECK(!a64->restart_probe(g, &pre), "probed with x0 not the argument");
	g[A_X0] = pre.args[0];
	pre.nr = 22; /* epoll_pwait: its EINTR is handled elsewhere */
	g[A_X8] = 22;
	CHECK(!a64->restart_probe(g, &pre), "epoll_pwait probed");
	pre.nr = 98; /* futex */
	g[A_X8] = 98;
	pre.args[1] = g[A_X0 + 1] = 0x80; /* FUTEX_WAIT_PRIVATE */
	pre.args[3] = g[A_X0 + 3] = 0x0000ffffc0000200ull;
	CHECK(a64->restart_probe(g, &pre), "timed FUTEX_WAIT not probed");
	pre.args[3] = g[A_X0 + 3] = 0;
	CHECK(!a64->restart_probe(g, &pre), "untimed FUTEX_WAIT probed");

	/* the kernel's answer at the svc's entry stop: restart_syscall */
	fill(g, GWORDS);
	g[A_X8] = 101;
	g[A_PC] = 0x0000ffff80001004ull;
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	e[A_X8] = 128;
	memcpy(orig, g, sizeof(g));
	CHECK(a64->restart_probed(g, e), "restart_syscall entry refused");
	CHECK(g[A_X8] == 128, "saved x8 %" PRIu64 ", want restart_syscall", g[A_X8]);
	g[A_X8] = orig[A_X8];
	CHECK(!memcmp(g, orig, sizeof(g)), "saved state changed beyond x8");
	/* ... or the syscall itself: it was about to start, nothing to change */
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	CHECK(a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)),
	      "the syscall's own entry changed the saved state");
	/* any other svc */
	memcpy(e, g, sizeof(e));
	e[A_PC] += 8;
	e[A_X8] = 128;
	CHECK(!a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)), "another svc accepted");
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	e[A_X8] = 63;
	CHECK(!a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)), "another syscall accepted");
	end();
}

static void a64_skip_restart(void)
{
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.skip_syscall.restart_now");
	fill(g, GWORDS);
	g[A_X8] = 139;
	g[A_X0] = (uint64_t)-38;
	memcpy(orig, g, sizeof(g));
	/* skipping goes through NT_ARM_SYSTEM_CALL; gregs have nothing for it */
	a64->skip_syscall(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "skip_syscall changed the image");
	/* arm64 rewound before the stop: x0 = orig_x0, pc on the svc, x8 the syscall itself */
	g[A_X0] = (uint64_t)-516;
	memcpy(orig, g, sizeof(g));
	a64->restart_now(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "restart_now changed the image");
	end();
}

struct a64_state {
	uint64_t g[GWORDS];
	uint8_t fp[FP_LEN];
	uint8_t sve[16 + FP_LEN]; /* NT_ARM_SVE in FPSIMD mode: header + user_fpsimd_state */
	struct hc_regset rs[2];
	struct hc_sigframe f;
};

static void a64_state_init(struct a64_state *s)
{
	fill(s->g, GWORDS);
	s->g[A_PSTATE] = 0x60001000ull;
	for (size_t i = 0; i < sizeof(s->fp); i++)
		s->fp[i] = (uint8_t)(i * 13 + 1);
	wr32(s->fp + FP_FPSR, 0x0800009f);
	wr32(s->fp + FP_FPCR, 0x03c00000);
	memset(s->sve, 0x5e, sizeof(s->sve));
	/* in call.c's order; the frame must come from NT_PRFPREG, not the last big regset */
	s->rs[0].nt = NT_PRFPREG_;
	s->rs[0].buf = s->fp;
	s->rs[0].len = sizeof(s->fp);
	s->rs[1].nt = NT_ARM_SVE_;
	s->rs[1].buf = s->sve;
	s->rs[1].len = sizeof(s->sve);
	memset(&s->f, 0, sizeof(s->f));
	s->f.gregs = s->g;
	s->f.extra = s->rs;
	s->f.nextra = 2;
	s->f.mask = MASK;
}

static size_t a64_state_place(struct a64_state *s, uint64_t sp)
{
	size_t len;

	s->f.raddr = 0;
	len = a64->sigframe_len(&s->f);
	s->f.raddr = a64->frame_place(sp, len);
	return len;
}

static void a64_sigframe_layout(void)
{
	static struct a64_state s;
	uint64_t gcopy[GWORDS];
	struct hc_err err = { 0 };
	const uint8_t *rec, *term;
	size_t len;
	uint8_t *out;

	begin("aarch64.sigframe.layout");
	a64_state_init(&s);
	/* arm64 rewound an interrupted syscall before the stop: copied as it is */
	s.g[A_X0] = (uint64_t)-4;
	len = a64_state_place(&s, SP + 0x28);
	memcpy(gcopy, s.g, sizeof(gcopy));
	out = frame_buf(len);
	CHECK(len >= AF_END && len < AF_END + 4096, "sigframe_len %zu", len);
	CHECK(s.f.raddr % 16 == 0, "frame %#" PRIx64 " not 16-byte aligned", s.f.raddr);
	CHECK(a64->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed: %s",
	      err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	CHECK(all_byte(out + len, CANARY, POISON), "wrote past outlen");
	CHECK(!memcmp(s.g, gcopy, sizeof(gcopy)), "gregs changed");

	CHECK(all_zero(out, AF_UC), "siginfo not zero");
	CHECK(rd64(out + AF_UC_FLAGS) == 0 && rd64(out + AF_UC_LINK) == 0, "uc_flags/uc_link");
	CHECK(rd32s(out + AF_SS_FLAGS) == 3, "uc_stack.ss_flags %d, want 3 (invalid)",
	      rd32s(out + AF_SS_FLAGS));
	CHECK(rd64(out + AF_SS_SP) == 0 && rd64(out + AF_SS_SIZE) == 0, "uc_stack sp/size set");
	CHECK(rd64(out + AF_MASK) == MASK, "uc_sigmask %#" PRIx64 ", want %#" PRIx64,
	      rd64(out + AF_MASK), (uint64_t)MASK);
	CHECK(rd64(out + a64->sigframe_mask_off) == MASK, "mask not at sigframe_mask_off");
	CHECK(all_zero(out + AF_MASK + 8, AF_MCONTEXT - AF_MASK - 8),
	      "glibc's sigset tail not zero");
	CHECK(rd64(out + AF_MCONTEXT) == 0, "fault_address %#" PRIx64, rd64(out + AF_MCONTEXT));
	for (unsigned int i = 0; i < A_NWORDS; i++)
		CHECK(rd64(out + AF_REGS + 8 * i) == s.g[i],
		      "sigcontext word %u (x0..x30, sp, pc, pstate) %#" PRIx64 ", want %#" PRIx64,
		      i, rd64(out + AF_REGS + 8 * i), s.g[i]);
	CHECK(all_zero(out + AF_REGS + 8 * A_NWORDS, AF_RESERVED - AF_REGS - 8 * A_NWORDS),
	      "padding before __reserved not zero");

	rec = out + AF_RESERVED;
	CHECK(AF_RESERVED % 16 == 0, "__reserved not 16-byte aligned");
	CHECK(rd32(rec) == FPS_MAGIC, "first record magic %#x, want FPSIMD_MAGIC", rd32(rec));
	CHECK(rd32(rec + 4) == FPS_SIZE, "fpsimd_context size %u, want 528", rd32(rec + 4));
	CHECK(rd32(rec + FPS_FPSR) == 0x0800009f, "fpsr %#x", rd32(rec + FPS_FPSR));
	CHECK(rd32(rec + FPS_FPCR) == 0x03c00000, "fpcr %#x", rd32(rec + FPS_FPCR));
	CHECK(!memcmp(rec + FPS_VREGS, s.fp, 32 * 16), "v0..v31 not copied from NT_PRFPREG");
	term = rec + FPS_SIZE;
	CHECK(rd32(term) == 0 && rd32(term + 4) == 0, "no terminator record after fpsimd_context");
	CHECK(all_zero(term, out + AF_END - term), "__reserved after the records not zero");
	free(out);
	end();
}

static void a64_sigframe_errors(void)
{
	static struct a64_state s;
	struct hc_err err = { 0 };
	size_t len;
	uint8_t *out;

	begin("aarch64.sigframe.errors");
	a64_state_init(&s);
	len = a64_state_place(&s, SP);
	out = frame_buf(len);

	CHECK(a64->sigframe_build(&s.f, out, AF_END, &err) == 0, "exact size %d refused: %s",
	      AF_END, err.msg);
	CHECK(all_byte(out + AF_END, len + CANARY - AF_END, POISON), "wrote past %d bytes",
	      AF_END);

	memset(out, POISON, len + CANARY);
	CHECK(a64->sigframe_build(&s.f, out, AF_END - 1, &err) == -1, "%d bytes accepted",
	      AF_END - 1);
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded for a short buffer");
	CHECK(all_byte(out, len + CANARY, POISON), "short buffer written to");

	/* no NT_PRFPREG: the frame would have no fpsimd_context, which is mandatory */
	s.f.extra = &s.rs[1]; /* NT_ARM_SVE only */
	s.f.nextra = 1;
	memset(&err, 0, sizeof(err));
	CHECK(a64->sigframe_build(&s.f, out, len, &err) == -1, "NT_ARM_SVE alone accepted");
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded without NT_PRFPREG");
	s.f.nextra = 0;
	CHECK(a64->sigframe_build(&s.f, out, len, NULL) == -1, "no regsets accepted");
	s.f.extra = s.rs;
	s.f.nextra = 2;
	s.rs[0].len = FP_LEN - 16;
	CHECK(a64->sigframe_build(&s.f, out, len, NULL) == -1, "short NT_PRFPREG accepted");
	CHECK(all_byte(out, len + CANARY, POISON), "buffer written to on failure");
	free(out);
	end();
}

static void a64_call_fpstate(void)
{
	uint8_t fp[FP_LEN + 16], orig[FP_LEN + 16];

	begin("aarch64.call_fpstate");
	for (size_t i = 0; i < sizeof(fp); i++)
		fp[i] = (uint8_t)(i * 13 + 1);
	/* FPCR: FZ (24), DN (25), RMode = towards zero (23:22), IOE (8) */
	memcpy(fp + FP_FPCR, &(uint32_t){ 0x03c00100 }, 4);
	memcpy(fp + FP_FPSR, &(uint32_t){ 0x0800009f }, 4);
	memcpy(orig, fp, sizeof(fp));

	CHECK(a64->call_fpstate(NT_PRFPREG_, fp, FP_LEN), "NT_PRFPREG not handled");
	CHECK(rd32(fp + FP_FPCR) == 0, "fpcr %#x, want 0", rd32(fp + FP_FPCR));
	CHECK(rd32(fp + FP_FPSR) == 0, "fpsr %#x, want 0", rd32(fp + FP_FPSR));
	CHECK(!memcmp(fp, orig, FP_FPSR), "vregs changed");
	CHECK(!memcmp(fp + FP_FPCR + 4, orig + FP_FPCR + 4, sizeof(fp) - FP_FPCR - 4),
	      "bytes after fpcr changed");

	memcpy(fp, orig, sizeof(fp));
	CHECK(!a64->call_fpstate(NT_X86_XSTATE_, fp, FP_LEN), "NT_X86_XSTATE accepted");
	CHECK(!a64->call_fpstate(NT_ARM_SVE_, fp, FP_LEN), "NT_ARM_SVE accepted");
	CHECK(!a64->call_fpstate(NT_PRFPREG_, fp, FP_LEN - 8), "short NT_PRFPREG buffer accepted");
	CHECK(!memcmp(fp, orig, sizeof(fp)), "buffer changed when refused");
	end();
}

static void a64_dump_regs(void)
{
	uint64_t g[GWORDS];
	char buf[2048], want[32];
	int n;

	begin("aarch64.dump_regs");
	fill(g, GWORDS);
	g[A_PC] = 0x0000aaaa12345678ull;
	g[A_LR] = 0x0000aaaa87654321ull;
	n = a64->dump_regs(g, buf, sizeof(buf));
	CHECK(n > 0 && (size_t)n == strlen(buf), "returned %d for %zu chars", n, strlen(buf));
	snprintf(want, sizeof(want), "%016" PRIx64, g[A_PC]);
	CHECK(strstr(buf, "pc") && strstr(buf, want), "pc not in dump");
	snprintf(want, sizeof(want), "x30 %016" PRIx64, g[A_LR]);
	CHECK(strstr(buf, want), "'%s' not in dump", want);
	CHECK(strstr(buf, "x0 ") && strstr(buf, "sp ") && strstr(buf, "pstate"),
	      "x0/sp/pstate missing");

	n = dump_truncated(a64, g);
	CHECK(n == (int)strlen(buf), "truncated call returned %d, full length is %zu", n,
	      strlen(buf));
	end();
}

/* The arm64 offsets against the host's uapi headers, on an arm64 host. */
static void a64_sigframe_uapi(void)
{
#if defined(__aarch64__)
	struct k_rt_sigframe { /* arch/arm64/kernel/signal.c */
		siginfo_t info;
		struct ucontext uc; /* <asm/ucontext.h>: the kernel's */
	};

	begin("aarch64.sigframe.uapi");
	CHECK(offsetof(struct k_rt_sigframe, uc) == AF_UC, "uc");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_flags) == AF_UC_FLAGS, "uc_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_link) == AF_UC_LINK, "uc_link");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_sp) == AF_SS_SP, "ss_sp");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_flags) == AF_SS_FLAGS, "ss_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_size) == AF_SS_SIZE, "ss_size");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_sigmask) == AF_MASK, "uc_sigmask");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext) == AF_MCONTEXT, "uc_mcontext");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.regs) == AF_REGS, "regs");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.sp) == AF_REGS + 31 * 8, "sp");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.pc) == AF_REGS + 32 * 8, "pc");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.pstate) == AF_REGS + 33 * 8, "pstate");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.__reserved) == AF_RESERVED,
	      "__reserved");
	CHECK(sizeof(struct k_rt_sigframe) == AF_END, "sizeof(rt_sigframe) %zu",
	      sizeof(struct k_rt_sigframe));
	CHECK(FPSIMD_MAGIC == FPS_MAGIC && sizeof(struct fpsimd_context) == FPS_SIZE,
	      "fpsimd_context");
	CHECK(offsetof(struct fpsimd_context, fpsr) == FPS_FPSR &&
		      offsetof(struct fpsimd_context, fpcr) == FPS_FPCR &&
		      offsetof(struct fpsimd_context, vregs) == FPS_VREGS,
	      "fpsimd_context fields");
	CHECK(sizeof(struct _aarch64_ctx) == 8, "struct _aarch64_ctx");
	end();
#else
	printf("SKIP aarch64.sigframe.uapi: the host's headers are not arm64's\n");
#endif
}

/* ---- checks alike on both backends: one table, one loop ---- */

/* What each backend must say where both are asked the same. */
struct arch_want {
	const struct hc_arch *a;
	const char *name;
	unsigned int e_machine, nwords, max_args;
	long nr_rt_sigreturn, nr_getpid;
	bool host;			/* the host's backend: <sys/syscall.h> has its numbers */
	size_t mask_off;		/* of the signal mask in the rt_sigframe */
	struct hc_bytes sysc, sysret;	/* the syscall instruction, and "syscall; ret" */
	const char *sysc_name;
	struct hc_bytes restorer;	/* a restorer found in the wild, which the list holds */
	const char *restorer_name;
	void (*table_own)(void);	/* the rest of the backend's table checks */

	int pc, sp, ret;		/* words of pc, sp and a syscall's result */
	int argreg[HC_ARCH_MAX_ARGS];	/* a call's argument registers, nargreg of them */
	unsigned int nargreg;		/* the rest of max_args go on the stack */
	int nr_word;			/* the syscall number's word, -1: not in NT_PRSTATUS */

	int frame_mod;			/* frame_place(): frame % 16 */
	uint64_t frame_gap;		/* bytes it keeps free below sp */
	uint64_t frame_slack;		/* and it wastes fewer than these below them */
	const size_t *lens;		/* sigframe lengths to place */
	size_t nlens;

	size_t call_len;		/* the sigframe length a call's frame is placed for */
	unsigned int too_many[2];	/* argument counts prep_call() must refuse */

	const struct wait_case *waits;
	size_t nwaits;
};

#if defined(__x86_64__)
#define HOST_X86 true
#else
#define HOST_X86 false
#endif
#if defined(__aarch64__)
#define HOST_A64 true
#else
#define HOST_A64 false
#endif

#define BYTES(a) { (a), sizeof(a) }

static const size_t x86_lens[] = { 0, 1, 8, 440, 3220, 3221, 3227, 5000 };
static const size_t a64_lens[] = { 0, 1, 8, AF_END, AF_END + 16, 5000 };

static const struct arch_want wants[] = {
	{
		.a = &hc_arch_x86_64, .name = "x86_64", .e_machine = EM_X86_64,
		.nwords = X_NWORDS, .max_args = 8, .nargreg = 6,
		.nr_rt_sigreturn = 15, .nr_getpid = 39, .host = HOST_X86,
		.mask_off = XF_MASK,
		.sysc = BYTES(x86_sysc), .sysret = BYTES(x86_sysret), .sysc_name = "syscall",
		.restorer = BYTES(x86_restore_rt), .restorer_name = "glibc's __restore_rt",
		.table_own = x86_table_own,
		.pc = X_RIP, .sp = X_RSP, .ret = X_RAX,
		.argreg = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 },
		.nr_word = X_ORIG_RAX,
		/* what a callee sees right after "call", below the 128-byte red zone */
		.frame_mod = 8, .frame_gap = 128, .frame_slack = 32,
		.lens = x86_lens, .nlens = ARRAY_SIZE(x86_lens),
		.call_len = 3300, .too_many = { 9, 9 },
		.waits = x86_waits, .nwaits = ARRAY_SIZE(x86_waits),
	},
	{
		.a = &hc_arch_aarch64, .name = "aarch64", .e_machine = 183 /* EM_AARCH64 */,
		.nwords = A_NWORDS, .max_args = 8, .nargreg = 8,
		/* include/uapi/asm-generic/unistd.h */
		.nr_rt_sigreturn = 139, .nr_getpid = 172, .host = HOST_A64,
		.mask_off = AF_MASK,
		.sysc = BYTES(a64_sysc), .sysret = BYTES(a64_sysret), .sysc_name = "svc",
		.restorer = BYTES(a64_vdso_rt),
		.restorer_name = "the vDSO's __kernel_rt_sigreturn",
		.table_own = a64_table_own,
		.pc = A_PC, .sp = A_SP, .ret = A_X0,
		.argreg = { 0, 1, 2, 3, 4, 5, 6, 7 },
		/* the syscall number is not in NT_PRSTATUS on arm64 */
		.nr_word = -1,
		/* rt_sigreturn rejects a frame (sp) that is not 16-byte aligned */
		.frame_mod = 0, .frame_gap = 256, .frame_slack = 16,
		.lens = a64_lens, .nlens = ARRAY_SIZE(a64_lens),
		.call_len = AF_END + 16, .too_many = { 9, 9 },
		.waits = a64_waits, .nwaits = ARRAY_SIZE(a64_waits),
	},
};

static void arch_table(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	unsigned int nrest = 0;
	char name[64];

	snprintf(name, sizeof(name), "%s.table", w->name);
	begin(name);
	CHECK(a->name && !strcmp(a->name, w->name), "name %s", a->name);
	CHECK(a->e_machine == w->e_machine, "e_machine %u", a->e_machine);
	CHECK(a->gregs_len == w->nwords * 8, "gregs_len %zu", a->gregs_len);
	CHECK(a->max_args == w->max_args, "max_args %u", a->max_args);
	CHECK(a->max_args <= HC_ARCH_MAX_ARGS, "max_args above HC_ARCH_MAX_ARGS");
	CHECK(a->nr_rt_sigreturn == w->nr_rt_sigreturn && a->nr_getpid == w->nr_getpid,
	      "syscall numbers %ld %ld", a->nr_rt_sigreturn, a->nr_getpid);
	if (w->host)
		CHECK(a->nr_rt_sigreturn == SYS_rt_sigreturn && a->nr_getpid == SYS_getpid &&
			      a->nr_restart_syscall == SYS_restart_syscall,
		      "syscall numbers differ from <sys/syscall.h>");
	CHECK(a->sigframe_mask_off == w->mask_off, "sigframe_mask_off %zu, want %zu",
	      a->sigframe_mask_off, w->mask_off);

	CHECK(bytes_eq(&a->syscall_insn, w->sysc.b, w->sysc.len), "syscall_insn bytes");
	CHECK(bytes_eq(&a->syscall_ret, w->sysret.b, w->sysret.len), "syscall_ret bytes");
	w->table_own();

	CHECK(a->restorers != NULL, "no restorer list");
	for (; a->restorers && nrest < 16 && a->restorers[nrest].len; nrest++)
		CHECK(ends_with(&a->restorers[nrest], &a->syscall_insn),
		      "restorer %u does not end with %s", nrest, w->sysc_name);
	CHECK(nrest >= 1 && nrest < 16, "%u restorers, or the list is not terminated", nrest);
	CHECK(has_restorer(a->restorers, w->restorer.b, w->restorer.len),
	      "%s is not in the list", w->restorer_name);

	CHECK(a->get_pc && a->get_sp && a->get_arg && a->sigframe_len && a->frame_place &&
		      a->sigframe_build && a->prep_call && a->prep_syscall && a->prep_restore &&
		      a->skip_syscall && a->restart_now && a->get_syscall_ret && a->frame_restores &&
		      a->no_restart && a->undo_stop_eintr && a->wait_kind && a->syscall_nr &&
		      a->call_fpstate && a->dump_regs,
	      "missing hook");
	end();
}

static void arch_accessors(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	uint64_t g[GWORDS];
	char name[64];

	snprintf(name, sizeof(name), "%s.accessors", w->name);
	begin(name);
	fill(g, GWORDS);
	CHECK(a->get_pc(g) == g[w->pc], "get_pc");
	CHECK(a->get_sp(g) == g[w->sp], "get_sp");
	for (unsigned int i = 0; i < w->nargreg; i++)
		CHECK(a->get_arg(g, i) == g[w->argreg[i]], "get_arg(%u)", i);
	CHECK(a->get_arg(g, w->nargreg) == 0, "get_arg(%u) should be 0", w->nargreg);
	g[w->ret] = (uint64_t)-4; /* -EINTR */
	CHECK(a->get_syscall_ret(g) == -4, "get_syscall_ret %" PRId64, a->get_syscall_ret(g));
	if (w->nr_word >= 0) {
		g[w->nr_word] = 0; /* read */
		CHECK(a->syscall_nr(g) == 0, "syscall_nr %ld", a->syscall_nr(g));
	} else {
		CHECK(a->syscall_nr(g) == -1, "syscall_nr %ld, want -1", a->syscall_nr(g));
	}
	end();
}

static void arch_frame_place(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	char name[64];

	snprintf(name, sizeof(name), "%s.frame_place", w->name);
	begin(name);
	for (uint64_t off = 0; off < 64; off++) {
		for (unsigned int i = 0; i < w->nlens; i++) {
			size_t len = w->lens[i];
			uint64_t sp = SP + off, fr = a->frame_place(sp, len);

			CHECK(fr % 16 == (uint64_t)w->frame_mod,
			      "frame %% 16 == %" PRIu64 " (sp %#" PRIx64 ", len %zu)", fr % 16, sp,
			      len);
			CHECK(fr + len <= sp - w->frame_gap,
			      "frame %#" PRIx64 " + %zu less than %" PRIu64
			      " bytes below sp %#" PRIx64,
			      fr, len, w->frame_gap, sp);
			CHECK(sp - w->frame_gap - (fr + len) < w->frame_slack,
			      "%" PRIu64 " bytes wasted below the %" PRIu64 " kept free",
			      sp - w->frame_gap - (fr + len), w->frame_gap);
		}
	}
	end();
}

static void arch_prep_call_too_many(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	char name[64];

	snprintf(name, sizeof(name), "%s.prep_call.too_many_args", w->name);
	begin(name);
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, a->frame_place(SP, w->call_len), w->too_many[0]);
	CHECK(a->prep_call(g, &c, &err) == -1, "%u args accepted", w->too_many[0]);
	CHECK(err.code == HC_E_ARGS, "code %s, want HC_E_ARGS", hc_err_name(err.code));
	CHECK(err.msg[0], "empty message");
	CHECK(!strcmp(err.hint, hc_err_default_hint(HC_E_ARGS)), "hint '%s'", err.hint);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");
	CHECK(c.slot_addr == 0xdead && c.slot_val == 0xbeef, "slot written on failure");

	/* the first error wins */
	memset(&err, 0, sizeof(err));
	err.code = HC_E_PERM;
	snprintf(err.msg, sizeof(err.msg), "earlier");
	call_init(&c, a->frame_place(SP, w->call_len), w->too_many[1]);
	CHECK(a->prep_call(g, &c, &err) == -1, "%u args accepted", w->too_many[1]);
	CHECK(err.code == HC_E_PERM && !strcmp(err.msg, "earlier"), "earlier error overwritten");

	/* a NULL err is allowed by err_set() */
	CHECK(a->prep_call(g, &c, NULL) == -1, "%u args accepted with err == NULL",
	      w->too_many[1]);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");
	end();
}

static void arch_wait_kind(const struct arch_want *w)
{
	static const char *const kn[] = { "undisturbed", "EINTR, re-issued", "EINTR, kept",
					  "full restart" };
	char name[64];

	snprintf(name, sizeof(name), "%s.wait_kind", w->name);
	begin(name);
	for (size_t i = 0; i < w->nwaits; i++) {
		const struct wait_case *c = &w->waits[i];
		enum hc_wait got = w->a->wait_kind(c->nr, c->args);

		CHECK(got == c->want, "%s (%ld): %s, want %s", c->what, c->nr, kn[got],
		      kn[c->want]);
	}
	end();
}

/*
 * Threads inside a syscall that swaps in a temporary signal mask (ppoll &
 * co) give their real mask only at a later syscall stop: both backends
 * tell them from the number of the syscall they were in (orig_rax; x8).
 */
static void swaps_mask(void)
{
	static const struct {
		long nr;
		int want;
	} x86c[] = { { 271, 1 }, { 270, 1 }, { 130, 1 }, { 281, 1 }, { 441, 1 }, { 0, 0 },
		     { 232, 0 }, { -1, 0 } },
	  a64c[] = { { 73, 1 }, { 72, 1 }, { 133, 1 }, { 22, 1 }, { 441, 1 }, { 63, 0 },
		     { 98, 0 } };
	uint64_t g[GWORDS];

	begin("arch.swaps_mask");
	for (size_t i = 0; i < ARRAY_SIZE(x86c); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)x86c[i].nr;
		CHECK(x86->swaps_mask(g) == x86c[i].want, "x86_64 syscall %ld: %d", x86c[i].nr,
		      x86->swaps_mask(g));
	}
	for (size_t i = 0; i < ARRAY_SIZE(a64c); i++) {
		fill(g, GWORDS);
		g[A_X8] = (uint64_t)a64c[i].nr;
		CHECK(a64->swaps_mask(g) == a64c[i].want, "aarch64 x8 %ld: %d", a64c[i].nr,
		      a64->swaps_mask(g));
	}
	end();
}

static void host(void)
{
	begin("arch.host");
#if defined(__x86_64__)
	CHECK(hc_arch_host() == &hc_arch_x86_64, "host backend is %s", hc_arch_host()->name);
#elif defined(__aarch64__)
	CHECK(hc_arch_host() == &hc_arch_aarch64, "host backend is %s", hc_arch_host()->name);
#else
	CHECK(hc_arch_host() != NULL, "no host backend");
#endif
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (size_t i = 0; i < ARRAY_SIZE(wants); i++) {
		arch_table(&wants[i]);
		arch_accessors(&wants[i]);
		arch_frame_place(&wants[i]);
		arch_prep_call_too_many(&wants[i]);
		arch_wait_kind(&wants[i]);
	}

	x86_prep_call_args();
	x86_prep_call_stack();
	x86_prep_call_stack_args();
	a64_prep_call_x7();
	x86_prep_syscall();
	x86_prep_restore();
	x86_ret_gadget();
	x86_frame_restores();
	x86_no_restart();
	x86_undo_stop_eintr();
	x86_sigframe_uapi();
	x86_sigframe_layout();
	x86_sigframe_xstate();
	x86_sigframe_restart();
	x86_skip_syscall();
	x86_restart_now();
	x86_restart_here();
	x86_sigframe_errors();
	x86_call_fpstate();
	x86_dump_regs();

	a64_prep_call_args();
	a64_prep_call_stack();
	a64_frame_restores();
	a64_prep_call_btype();
	a64_prep_syscall();
	a64_prep_restore();
	a64_get_ret();
	a64_no_restart();
	a64_undo_stop_eintr();
	a64_restart_probe();
	a64_skip_restart();
	a64_sigframe_uapi();
	a64_sigframe_layout();
	a64_sigframe_errors();
	a64_call_fpstate();
	a64_dump_regs();

	swaps_mask();
	host();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
