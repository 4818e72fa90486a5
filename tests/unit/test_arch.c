// SPDX-License-Identifier: MIT
/*
 * Unit test for both arch backends, whatever the host: the contract of
 * arch/arch.h checked on fabricated NT_PRSTATUS and FP images.  No ptrace.
 *
 * The register images are indexed by word here, independently of the
 * backends' mirror structs, so a layout slip in a backend shows up.
 * Prints "PASS group" or "FAIL group: detail" per check group; exits 1 if
 * any group failed.
 */
#include <elf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/heapctl.h>

#include "arch.h"

/* ---- tiny check harness ---- */

static const char *group;
static int group_nfail, nfailed;
static char group_msg[512];

static void begin(const char *name)
{
	group = name;
	group_nfail = 0;
	group_msg[0] = '\0';
}

static void __attribute__((format(printf, 2, 3))) fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (group_nfail++)
		return;
	n = snprintf(group_msg, sizeof(group_msg), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(group_msg + n, sizeof(group_msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond))                              \
			fail_at(__LINE__, __VA_ARGS__);   \
	} while (0)

static void end(void)
{
	if (!group_nfail) {
		printf("PASS %s\n", group);
		return;
	}
	nfailed++;
	if (group_nfail > 1)
		printf("FAIL %s: %s (and %d more)\n", group, group_msg, group_nfail - 1);
	else
		printf("FAIL %s: %s\n", group, group_msg);
}

/* ---- fixtures ---- */

#define TRAP	0x00007f0000001000ull
#define FN	0x00005555deadbee0ull
#define SP	0x00007ffcfffff000ull
#define GWORDS	34 /* enough for both images */

static void fill(uint64_t *g, unsigned int nwords)
{
	for (unsigned int i = 0; i < nwords; i++)
		g[i] = 0xa5a5000000000000ull | ((uint64_t)i << 8) | i;
}

static void siginfo(siginfo_t *si, int signo, int code)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = signo;
	si->si_code = code;
}

static void call_init(struct hc_call *c, uint64_t sp, unsigned int nargs)
{
	memset(c, 0, sizeof(*c));
	c->fn = FN;
	c->trap_addr = TRAP;
	c->sp = sp;
	c->nargs = nargs;
	for (unsigned int i = 0; i < HC_ARCH_MAX_ARGS; i++)
		c->args[i] = 0x1000 + i;
	c->slot_addr = 0xdeadull; /* must be overwritten */
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

static bool bytes_eq(const uint8_t *p, size_t len, const uint8_t *want, size_t wlen)
{
	return p && len == wlen && !memcmp(p, want, wlen);
}

/* ---- x86_64: struct user_regs_struct, word indices ---- */

enum {
	X_R15, X_R14, X_R13, X_R12, X_RBP, X_RBX, X_R11, X_R10, X_R9, X_R8,
	X_RAX, X_RCX, X_RDX, X_RSI, X_RDI, X_ORIG_RAX, X_RIP, X_CS, X_EFLAGS, X_RSP,
	X_SS, X_FS_BASE, X_GS_BASE, X_DS, X_ES, X_FS, X_GS, X_NWORDS
};

static const struct hc_arch *const x86 = &hc_arch_x86_64;

static void x86_table(void)
{
	static const uint8_t trap[] = { 0xcc };              /* int3 */
	static const uint8_t stub[] = { 0xcc, 0xc3 };        /* int3; ret */
	static const uint8_t sysc[] = { 0x0f, 0x05 };        /* syscall */

	begin("x86_64.table");
	CHECK(x86->name && !strcmp(x86->name, "x86_64"), "name %s", x86->name);
	CHECK(x86->e_machine == EM_X86_64, "e_machine %u", x86->e_machine);
	CHECK(x86->gregs_len == X_NWORDS * 8, "gregs_len %zu", x86->gregs_len);
	CHECK(x86->extra_regsets && x86->extra_regsets[0] == 0x202 /* NT_X86_XSTATE */ &&
		      x86->extra_regsets[1] == 0,
	      "extra_regsets");
	CHECK(bytes_eq(x86->trap, x86->trap_len, trap, sizeof(trap)), "trap bytes");
	CHECK(bytes_eq(x86->cb_stub, x86->cb_stub_len, stub, sizeof(stub)), "cb_stub bytes");
	CHECK(bytes_eq(x86->syscall_insn, x86->syscall_insn_len, sysc, sizeof(sysc)),
	      "syscall bytes");
	CHECK(x86->max_args == 6, "max_args %u", x86->max_args);
	CHECK(x86->max_args <= HC_ARCH_MAX_ARGS, "max_args above HC_ARCH_MAX_ARGS");
	CHECK(x86->nr_mmap == 9 && x86->nr_mprotect == 10 && x86->nr_munmap == 11,
	      "syscall numbers %ld %ld %ld", x86->nr_mmap, x86->nr_mprotect, x86->nr_munmap);
	CHECK(x86->get_pc && x86->get_sp && x86->get_arg && x86->prep_call && x86->get_ret &&
		      x86->prep_syscall && x86->get_syscall_ret && x86->stopped_at_trap &&
		      x86->no_restart && x86->syscall_nr && x86->call_fpstate && x86->dump_regs,
	      "missing hook");
	end();
}

static void x86_accessors(void)
{
	uint64_t g[GWORDS];
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 };

	begin("x86_64.accessors");
	fill(g, GWORDS);
	CHECK(x86->get_pc(g) == g[X_RIP], "get_pc");
	CHECK(x86->get_sp(g) == g[X_RSP], "get_sp");
	CHECK(x86->get_ret(g) == g[X_RAX], "get_ret");
	for (unsigned int i = 0; i < 6; i++)
		CHECK(x86->get_arg(g, i) == g[argreg[i]], "get_arg(%u)", i);
	CHECK(x86->get_arg(g, 6) == 0, "get_arg(6) should be 0");
	g[X_RAX] = (uint64_t)-4; /* -EINTR */
	CHECK(x86->get_syscall_ret(g) == -4, "get_syscall_ret %" PRId64, x86->get_syscall_ret(g));
	g[X_ORIG_RAX] = 0; /* read */
	CHECK(x86->syscall_nr(g) == 0, "syscall_nr %ld", x86->syscall_nr(g));
	end();
}

static void x86_prep_call_args(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 };
	/* what prep_call may touch; everything else must survive */
	static const int touched[] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9, X_RAX,
				       X_RIP, X_RSP, X_EFLAGS, X_ORIG_RAX };
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("x86_64.prep_call.args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, SP, 6);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call failed: %s", err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[argreg[i]] == c.args[i], "arg %u: %#" PRIx64, i, g[argreg[i]]);
	CHECK(g[X_RAX] == 0, "rax %#" PRIx64 ", want 0 (no vector args)", g[X_RAX]);
	CHECK(g[X_RIP] == FN, "rip %#" PRIx64, g[X_RIP]);
	d = first_diff(g, orig, GWORDS, touched, sizeof(touched) / sizeof(touched[0]));
	CHECK(d < 0, "word %d changed", d);

	/* fewer arguments: the unused argument registers are left alone */
	fill(g, GWORDS);
	call_init(&c, SP, 2);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call(2 args) failed");
	CHECK(g[X_RDI] == c.args[0] && g[X_RSI] == c.args[1], "2 args");
	CHECK(g[X_RDX] == orig[X_RDX] && g[X_R9] == orig[X_R9], "unused arg regs changed");

	/* flags the callee must not start with: TF (bit 8), DF (bit 10) */
	fill(g, GWORDS);
	g[X_EFLAGS] = 0x246 | (1u << 8) | (1u << 10);
	call_init(&c, SP, 0);
	CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call(0 args) failed");
	CHECK(g[X_EFLAGS] == 0x246, "eflags %#" PRIx64 ", want 0x246", g[X_EFLAGS]);
	end();
}

static void x86_prep_call_stack(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("x86_64.prep_call.stack");
	for (uint64_t off = 0; off < 32; off++) {
		uint64_t osp = SP + off, sp;

		fill(g, GWORDS);
		g[X_RSP] = osp;
		call_init(&c, osp, 1);
		CHECK(x86->prep_call(g, &c, &err) == 0, "prep_call failed");
		sp = g[X_RSP];
		CHECK(sp % 16 == 8, "sp %% 16 == %" PRIu64 " at entry (sp %#" PRIx64 ")", sp % 16,
		      osp);
		CHECK(sp <= osp - 128 - 8, "sp %#" PRIx64 " intrudes on the red zone of %#" PRIx64,
		      sp, osp);
		CHECK(osp - sp < 4096, "frame of %" PRIu64 " bytes is implausibly large", osp - sp);
		CHECK(x86->get_sp(g) == sp, "get_sp after prep_call");
		CHECK(c.slot_addr == sp, "slot_addr %#" PRIx64 ", want sp %#" PRIx64, c.slot_addr,
		      sp);
		CHECK(c.slot_val == TRAP, "slot_val %#" PRIx64 ", want trap", c.slot_val);
	}
	end();
}

static void x86_prep_call_too_many(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("x86_64.prep_call.too_many_args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, SP, x86->max_args + 1);
	CHECK(x86->prep_call(g, &c, &err) == -1, "7 args accepted");
	CHECK(err.code == HC_E_ARGS, "code %s, want HC_E_ARGS", hc_err_name(err.code));
	CHECK(err.msg[0], "empty message");
	CHECK(!strcmp(err.hint, hc_err_default_hint(HC_E_ARGS)), "hint '%s'", err.hint);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");

	/* the first error wins */
	memset(&err, 0, sizeof(err));
	err.code = HC_E_PERM;
	snprintf(err.msg, sizeof(err.msg), "earlier");
	call_init(&c, SP, HC_ARCH_MAX_ARGS);
	CHECK(x86->prep_call(g, &c, &err) == -1, "8 args accepted");
	CHECK(err.code == HC_E_PERM && !strcmp(err.msg, "earlier"), "earlier error overwritten");

	/* a NULL err is allowed by err_set() */
	call_init(&c, SP, HC_ARCH_MAX_ARGS);
	CHECK(x86->prep_call(g, &c, NULL) == -1, "8 args accepted with err == NULL");
	end();
}

static void x86_prep_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int argreg[] = { X_RDI, X_RSI, X_RDX, X_R10, X_R8, X_R9 };
	static const int touched[] = { X_RDI, X_RSI, X_RDX, X_R10, X_R8, X_R9, X_RAX,
				       X_RIP, X_EFLAGS, X_ORIG_RAX };
	const uint64_t args[6] = { 0, 4096, 3, 0x22, (uint64_t)-1, 0 };
	int d;

	begin("x86_64.prep_syscall");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	x86->prep_syscall(g, TRAP + 0x10, x86->nr_mmap, args, 6);
	CHECK(g[X_RAX] == 9, "rax %#" PRIx64 ", want __NR_mmap", g[X_RAX]);
	CHECK(g[X_RIP] == TRAP + 0x10, "rip %#" PRIx64, g[X_RIP]);
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[argreg[i]] == args[i], "arg %u", i);
	CHECK(g[X_RSP] == orig[X_RSP], "rsp changed");
	CHECK(g[X_RCX] == orig[X_RCX], "rcx used for a syscall argument (must be r10)");
	d = first_diff(g, orig, GWORDS, touched, sizeof(touched) / sizeof(touched[0]));
	CHECK(d < 0, "word %d changed", d);

	/* the result as the kernel leaves it */
	g[X_RAX] = (uint64_t)-12; /* -ENOMEM */
	CHECK(x86->get_syscall_ret(g) == -12, "get_syscall_ret");
	g[X_RAX] = 0x7f1234560000ull;
	CHECK(x86->get_syscall_ret(g) == 0x7f1234560000ll, "get_syscall_ret address");
	end();
}

static void x86_get_ret(void)
{
	uint64_t g[GWORDS];

	begin("x86_64.get_ret");
	fill(g, GWORDS);
	g[X_RAX] = 0x1122334455667788ull;
	CHECK(x86->get_ret(g) == 0x1122334455667788ull, "get_ret %#" PRIx64, x86->get_ret(g));
	g[X_RAX] = (uint64_t)-1;
	CHECK(x86->get_ret(g) == UINT64_MAX, "get_ret(-1)");
	end();
}

static void x86_stopped_at_trap(void)
{
	uint64_t g[GWORDS];
	siginfo_t si;

	begin("x86_64.stopped_at_trap");
	fill(g, GWORDS);
	/* int3 traps with rip after the instruction, si_code SI_KERNEL */
	g[X_RIP] = TRAP + 1;
	siginfo(&si, SIGTRAP, 0x80);
	CHECK(x86->stopped_at_trap(g, &si, TRAP), "our int3 not recognised");

	g[X_RIP] = TRAP;
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "rip == trap accepted");
	g[X_RIP] = TRAP + 2;
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "rip == trap + 2 accepted");
	g[X_RIP] = FN;
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "unrelated rip accepted");

	g[X_RIP] = TRAP + 1;
	siginfo(&si, SIGSEGV, 0x80);
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "SIGSEGV accepted");
	siginfo(&si, SIGTRAP, 1); /* TRAP_BRKPT: a hardware breakpoint, not int3 */
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "TRAP_BRKPT accepted");
	siginfo(&si, SIGTRAP, 0); /* SI_USER: kill(SIGTRAP) from someone */
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "SI_USER accepted");
	siginfo(&si, SIGTRAP, 2); /* TRAP_TRACE: single-step */
	CHECK(!x86->stopped_at_trap(g, &si, TRAP), "TRAP_TRACE accepted");
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

/* XSAVE standard format (Intel SDM vol. 1, 13.4) */
#define XS_FCW		0
#define XS_FSW		2
#define XS_FTW		4	/* abridged tag: one bit per register, 0 = empty */
#define XS_MXCSR	24
#define XS_MXCSR_MASK	28
#define XS_SW		464	/* software-reserved: the kernel's xstate info */
#define XS_XSTATE_BV	512

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

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
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

	CHECK(x86->call_fpstate(0x202, xs, sizeof(xs)), "NT_X86_XSTATE not handled");
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
	CHECK(!(bv & 0xe4), "XSTATE_BV %#" PRIx64 ": AVX/AVX-512 state not reset", bv);
	CHECK(bv & 0x200, "XSTATE_BV %#" PRIx64 ": PKRU dropped", bv);
	CHECK(!memcmp(xs + XS_XSTATE_BV + 8, orig + XS_XSTATE_BV + 8,
		      sizeof(xs) - XS_XSTATE_BV - 8),
	      "bytes after XSTATE_BV changed");

	/* not ours: untouched */
	memcpy(xs, orig, sizeof(xs));
	CHECK(!x86->call_fpstate(2 /* NT_PRFPREG */, xs, sizeof(xs)), "NT_PRFPREG accepted");
	CHECK(!x86->call_fpstate(0x202, xs, 512), "512-byte buffer (no XSAVE header) accepted");
	CHECK(!memcmp(xs, orig, sizeof(xs)), "buffer changed when refused");
	end();
}

static void x86_dump_regs(void)
{
	uint64_t g[GWORDS];
	char buf[2048], small[32];
	char want[32];
	int n;

	begin("x86_64.dump_regs");
	fill(g, GWORDS);
	g[X_RIP] = 0x0000555512345678ull;
	n = x86->dump_regs(g, buf, sizeof(buf));
	CHECK(n > 0 && (size_t)n < sizeof(buf), "returned %d", n);
	snprintf(want, sizeof(want), "%016" PRIx64, g[X_RIP]);
	CHECK(strstr(buf, "rip") && strstr(buf, want), "rip not in '%.60s...'", buf);
	CHECK(strstr(buf, "rsp") && strstr(buf, "rax"), "rsp/rax missing");

	memset(small, 'Z', sizeof(small));
	n = x86->dump_regs(g, small, 16);
	CHECK(memchr(small, '\0', 16) != NULL, "truncated dump not terminated");
	CHECK(small[16] == 'Z', "dump overran a 16-byte buffer");
	CHECK(n < 0 || n >= 16, "truncation not reported (%d)", n);
	end();
}

/* ---- aarch64: struct user_pt_regs, word indices ---- */

enum { A_X0 = 0, A_X8 = 8, A_LR = 30, A_SP = 31, A_PC = 32, A_PSTATE = 33, A_NWORDS = 34 };

#define A_BTYPE 0x0c00ull /* PSTATE bits 11:10 */

static const struct hc_arch *const a64 = &hc_arch_aarch64;

static void a64_table(void)
{
	static const uint8_t trap[] = { 0x00, 0x00, 0x20, 0xd4 };             /* brk #0 */
	static const uint8_t stub[] = { 0x00, 0x00, 0x20, 0xd4,                /* brk #0 */
					0xc0, 0x03, 0x5f, 0xd6 };              /* ret */
	static const uint8_t sysc[] = { 0x01, 0x00, 0x00, 0xd4 };             /* svc #0 */

	begin("aarch64.table");
	CHECK(a64->name && !strcmp(a64->name, "aarch64"), "name %s", a64->name);
	CHECK(a64->e_machine == 183 /* EM_AARCH64 */, "e_machine %u", a64->e_machine);
	CHECK(a64->gregs_len == 272, "gregs_len %zu", a64->gregs_len);
	CHECK(a64->extra_regsets && a64->extra_regsets[0] == 2 /* NT_PRFPREG */ &&
		      a64->extra_regsets[1] == 0,
	      "extra_regsets");
	CHECK(bytes_eq(a64->trap, a64->trap_len, trap, sizeof(trap)), "trap bytes");
	CHECK(bytes_eq(a64->cb_stub, a64->cb_stub_len, stub, sizeof(stub)), "cb_stub bytes");
	CHECK(bytes_eq(a64->syscall_insn, a64->syscall_insn_len, sysc, sizeof(sysc)),
	      "syscall bytes");
	CHECK(a64->max_args == 8, "max_args %u", a64->max_args);
	CHECK(a64->max_args <= HC_ARCH_MAX_ARGS, "max_args above HC_ARCH_MAX_ARGS");
	CHECK(a64->nr_mmap == 222 && a64->nr_mprotect == 226 && a64->nr_munmap == 215,
	      "syscall numbers %ld %ld %ld", a64->nr_mmap, a64->nr_mprotect, a64->nr_munmap);
	CHECK(a64->get_pc && a64->get_sp && a64->get_arg && a64->prep_call && a64->get_ret &&
		      a64->prep_syscall && a64->get_syscall_ret && a64->stopped_at_trap &&
		      a64->no_restart && a64->syscall_nr && a64->call_fpstate && a64->dump_regs,
	      "missing hook");
	end();
}

static void a64_accessors(void)
{
	uint64_t g[GWORDS];

	begin("aarch64.accessors");
	fill(g, GWORDS);
	CHECK(a64->get_pc(g) == g[A_PC], "get_pc");
	CHECK(a64->get_sp(g) == g[A_SP], "get_sp");
	CHECK(a64->get_ret(g) == g[A_X0], "get_ret");
	for (unsigned int i = 0; i < 8; i++)
		CHECK(a64->get_arg(g, i) == g[i], "get_arg(%u)", i);
	CHECK(a64->get_arg(g, 8) == 0, "get_arg(8) should be 0");
	g[A_X0] = (uint64_t)-4;
	CHECK(a64->get_syscall_ret(g) == -4, "get_syscall_ret %" PRId64, a64->get_syscall_ret(g));
	/* the syscall number is not in NT_PRSTATUS on arm64 */
	CHECK(a64->syscall_nr(g) == -1, "syscall_nr %ld, want -1", a64->syscall_nr(g));
	end();
}

static void a64_prep_call_args(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, 6, 7, A_LR, A_SP, A_PC, A_PSTATE };
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("aarch64.prep_call.args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, SP, 8);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed: %s", err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	for (unsigned int i = 0; i < 8; i++)
		CHECK(g[i] == c.args[i], "x%u %#" PRIx64, i, g[i]);
	CHECK(g[A_PC] == FN, "pc %#" PRIx64, g[A_PC]);
	CHECK(g[A_LR] == TRAP, "x30 %#" PRIx64 ", want trap", g[A_LR]);
	CHECK(g[A_X8] == orig[A_X8], "x8 changed");
	d = first_diff(g, orig, GWORDS, touched, sizeof(touched) / sizeof(touched[0]));
	CHECK(d < 0, "word %d changed", d);
	CHECK(c.slot_addr == 0, "slot_addr %#" PRIx64 ", want 0: nothing to write on arm64",
	      c.slot_addr);

	fill(g, GWORDS);
	call_init(&c, SP, 3);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call(3 args) failed");
	CHECK(g[0] == c.args[0] && g[1] == c.args[1] && g[2] == c.args[2], "3 args");
	CHECK(g[3] == orig[3] && g[7] == orig[7], "unused arg regs changed");
	end();
}

static void a64_prep_call_stack(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("aarch64.prep_call.stack");
	for (uint64_t off = 0; off < 32; off++) {
		uint64_t osp = SP + off, sp;

		fill(g, GWORDS);
		g[A_SP] = osp;
		call_init(&c, osp, 0);
		CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
		sp = g[A_SP];
		CHECK(sp % 16 == 0, "sp %% 16 == %" PRIu64 " (orig sp %#" PRIx64 ")", sp % 16, osp);
		CHECK(sp < osp, "sp %#" PRIx64 " not below the original %#" PRIx64, sp, osp);
		CHECK(osp - sp < 4096, "frame of %" PRIu64 " bytes is implausibly large", osp - sp);
		CHECK(a64->get_sp(g) == sp, "get_sp after prep_call");
		CHECK(g[A_LR] == TRAP, "x30 %#" PRIx64, g[A_LR]);
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
	call_init(&c, SP, 1);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
	CHECK(!(g[A_PSTATE] & A_BTYPE), "BTYPE not cleared: pstate %#" PRIx64, g[A_PSTATE]);
	CHECK(g[A_PSTATE] == (pstate & ~A_BTYPE), "other PSTATE bits changed: %#" PRIx64,
	      g[A_PSTATE]);
	end();
}

static void a64_prep_call_too_many(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("aarch64.prep_call.too_many_args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, SP, 9);
	CHECK(a64->prep_call(g, &c, &err) == -1, "9 args accepted");
	CHECK(err.code == HC_E_ARGS, "code %s, want HC_E_ARGS", hc_err_name(err.code));
	CHECK(err.msg[0], "empty message");
	CHECK(!strcmp(err.hint, hc_err_default_hint(HC_E_ARGS)), "hint '%s'", err.hint);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");

	memset(&err, 0, sizeof(err));
	err.code = HC_E_PERM;
	snprintf(err.msg, sizeof(err.msg), "earlier");
	CHECK(a64->prep_call(g, &c, &err) == -1, "9 args accepted");
	CHECK(err.code == HC_E_PERM && !strcmp(err.msg, "earlier"), "earlier error overwritten");
	CHECK(a64->prep_call(g, &c, NULL) == -1, "9 args accepted with err == NULL");
	end();
}

static void a64_prep_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, A_X8, A_PC, A_PSTATE };
	const uint64_t args[6] = { 0, 4096, 3, 0x22, (uint64_t)-1, 0 };
	int d;

	begin("aarch64.prep_syscall");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	a64->prep_syscall(g, TRAP + 0x10, a64->nr_mmap, args, 6);
	CHECK(g[A_X8] == 222, "x8 %#" PRIx64 ", want __NR_mmap", g[A_X8]);
	CHECK(g[A_PC] == TRAP + 0x10, "pc %#" PRIx64, g[A_PC]);
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[i] == args[i], "x%u", i);
	CHECK(g[A_SP] == orig[A_SP], "sp changed");
	d = first_diff(g, orig, GWORDS, touched, sizeof(touched) / sizeof(touched[0]));
	CHECK(d < 0, "word %d changed", d);

	g[A_X0] = (uint64_t)-12;
	CHECK(a64->get_syscall_ret(g) == -12, "get_syscall_ret");
	g[A_X0] = 0xffff8000ull;
	CHECK(a64->get_syscall_ret(g) == 0xffff8000ll, "get_syscall_ret address");
	end();
}

static void a64_get_ret(void)
{
	uint64_t g[GWORDS];

	begin("aarch64.get_ret");
	fill(g, GWORDS);
	g[A_X0] = 0x1122334455667788ull;
	CHECK(a64->get_ret(g) == 0x1122334455667788ull, "get_ret %#" PRIx64, a64->get_ret(g));
	end();
}

static void a64_stopped_at_trap(void)
{
	uint64_t g[GWORDS];
	siginfo_t si;

	begin("aarch64.stopped_at_trap");
	fill(g, GWORDS);
	/* brk reports pc at the brk itself, si_code TRAP_BRKPT */
	g[A_PC] = TRAP;
	siginfo(&si, SIGTRAP, 1);
	CHECK(a64->stopped_at_trap(g, &si, TRAP), "our brk not recognised");

	g[A_PC] = TRAP + 4;
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "pc == trap + 4 accepted");
	g[A_PC] = TRAP - 4;
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "pc == trap - 4 accepted");

	g[A_PC] = TRAP;
	siginfo(&si, SIGTRAP, 0x80);
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "SI_KERNEL accepted");
	siginfo(&si, SIGTRAP, 0);
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "SI_USER accepted");
	siginfo(&si, SIGTRAP, 2);
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "TRAP_TRACE accepted");
	siginfo(&si, SIGILL, 1);
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "SIGILL accepted");
	siginfo(&si, SIGSEGV, 1);
	CHECK(!a64->stopped_at_trap(g, &si, TRAP), "SIGSEGV accepted");
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

#define FP_FPSR 512
#define FP_FPCR 516
#define FP_LEN	528

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

	CHECK(a64->call_fpstate(2 /* NT_PRFPREG */, fp, FP_LEN), "NT_PRFPREG not handled");
	CHECK(rd32(fp + FP_FPCR) == 0, "fpcr %#x, want 0", rd32(fp + FP_FPCR));
	CHECK(rd32(fp + FP_FPSR) == 0, "fpsr %#x, want 0", rd32(fp + FP_FPSR));
	CHECK(!memcmp(fp, orig, FP_FPSR), "vregs changed");
	CHECK(!memcmp(fp + FP_FPCR + 4, orig + FP_FPCR + 4, sizeof(fp) - FP_FPCR - 4),
	      "bytes after fpcr changed");

	memcpy(fp, orig, sizeof(fp));
	CHECK(!a64->call_fpstate(0x202 /* NT_X86_XSTATE */, fp, FP_LEN), "NT_X86_XSTATE accepted");
	CHECK(!a64->call_fpstate(0x405 /* NT_ARM_SVE */, fp, FP_LEN), "NT_ARM_SVE accepted");
	CHECK(!a64->call_fpstate(2, fp, FP_LEN - 8), "short NT_PRFPREG buffer accepted");
	CHECK(!memcmp(fp, orig, sizeof(fp)), "buffer changed when refused");
	end();
}

static void a64_dump_regs(void)
{
	uint64_t g[GWORDS];
	char buf[2048], small[32], want[32];
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

	memset(small, 'Z', sizeof(small));
	n = a64->dump_regs(g, small, 16);
	CHECK(memchr(small, '\0', 16) != NULL, "truncated dump not terminated");
	CHECK(small[16] == 'Z', "dump overran a 16-byte buffer");
	CHECK(n < 0 || n >= 16, "truncation not reported (%d)", n);
	CHECK(n == (int)strlen(buf), "truncated call returned %d, full length is %zu", n,
	      strlen(buf));
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

	x86_table();
	x86_accessors();
	x86_prep_call_args();
	x86_prep_call_stack();
	x86_prep_call_too_many();
	x86_prep_syscall();
	x86_get_ret();
	x86_stopped_at_trap();
	x86_no_restart();
	x86_call_fpstate();
	x86_dump_regs();

	a64_table();
	a64_accessors();
	a64_prep_call_args();
	a64_prep_call_stack();
	a64_prep_call_btype();
	a64_prep_call_too_many();
	a64_prep_syscall();
	a64_get_ret();
	a64_stopped_at_trap();
	a64_no_restart();
	a64_call_fpstate();
	a64_dump_regs();

	host();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
