// SPDX-License-Identifier: MIT
/*
 * test_arch, x86_64's backend: struct user_regs_struct by word index, the
 * rt_sigframe and XSAVE layouts by byte offset, checked on fabricated
 * images whatever the host.
 */
#include "test_arch.h"

/* ---- x86_64: struct user_regs_struct, word indices ---- */


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


const uint8_t x86_sysc[] = { 0x0f, 0x05 };         /* syscall */
const uint8_t x86_sysret[] = { 0x0f, 0x05, 0xc3 }; /* syscall; ret */
/* glibc's and musl's __restore_rt: mov $15,%rax; syscall */
const uint8_t x86_restore_rt[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
/* x86_64.table beyond what arch_table() checks on both backends */
void x86_table_own(void)
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
void x86_ret_gadget(void)
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

void x86_prep_call_args(void)
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

void x86_prep_call_stack(void)
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
void x86_prep_call_stack_args(void)
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

void x86_prep_syscall(void)
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

void x86_prep_restore(void)
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
void x86_frame_restores(void)
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

void x86_no_restart(void)
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


const struct wait_case x86_waits[] = {
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
	{ 0, { 0 }, HC_WAIT_UNDISTURBED, NULL }, /* the end */
};

void x86_undo_stop_eintr(void)
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

void x86_sigframe_layout(void)
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

void x86_sigframe_xstate(void)
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

void x86_sigframe_restart(void)
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

void x86_skip_syscall(void)
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

void x86_restart_now(void)
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
void x86_restart_here(void)
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

void x86_sigframe_errors(void)
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

void x86_call_fpstate(void)
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

void x86_dump_regs(void)
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
void x86_sigframe_uapi(void)
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
