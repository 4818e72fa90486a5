// SPDX-License-Identifier: MIT
/*
 * Unit test: the inline hook planners (hook_plan(), arch/<name>/hook.c) of
 * both backends, whatever the host, on a table of function entries: what
 * each moves and how (its trampoline decoded back with Capstone), what
 * each refuses and that the message names it.  Then, on the host's own
 * backend, a live hook: a real -O2 function of this program patched in
 * place, called through a pointer, its hook seen to run and its result
 * still right, and the original bytes put back.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "unit.h"

#define ENTRY ((uint64_t)0x401000)
#define TRAMP ((uint64_t)0x500000)
#define HOOK  ((uint64_t)0x7f0000001230)

static const struct hc_arch *const x86 = &hc_arch_x86_64;
static const struct hc_arch *const a64 = &hc_arch_aarch64;

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* ---- decoding the plans back ---- */

/* One instruction of the plan's bytes at addr, decoded with details; false if none. */
static bool dis1(const struct hc_arch *a, const uint8_t *b, size_t len, uint64_t addr, cs_insn *out,
		 cs_detail *det)
{
	cs_insn *insn;
	csh h;
	size_t n;

	if (cs_open(a->cs_arch, a->cs_mode, &h) != CS_ERR_OK)
		return false;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	n = cs_disasm(h, b, len, addr, 1, &insn);
	if (n) {
		*out = insn[0];
		*det = *insn[0].detail;
		out->detail = det;
		cs_free(insn, n);
	}
	cs_close(&h);
	return n == 1;
}

/* The plan's trampoline at target address addr: its bytes from there. */
static const uint8_t *tr(const struct hc_hook_plan *p, uint64_t addr)
{
	return p->tramp + (addr - TRAMP);
}

/* x86_64: "jmp *0(%rip); .quad to" at addr of the trampoline */
static bool x86_jmp_abs(const struct hc_hook_plan *p, uint64_t addr, uint64_t to)
{
	cs_insn i;
	cs_detail d;
	const uint8_t *b = tr(p, addr);

	if (!dis1(x86, b, 14, addr, &i, &d) || i.id != X86_INS_JMP || i.size != 6)
		return false;
	if (d.x86.operands[0].type != X86_OP_MEM || d.x86.operands[0].mem.base != X86_REG_RIP ||
	    d.x86.operands[0].mem.disp != 0)
		return false;
	return rd64(b + 6) == to;
}

/* x86_64: what every plan holds: jmp rel32 to the stub, the stub, orig */
static void x86_common(const struct hc_hook_plan *p, const uint8_t *code)
{
	cs_insn i;
	cs_detail d;

	CHECK(p->patch_addr == ENTRY, "patch at 0x%" PRIx64, p->patch_addr);
	CHECK(p->patch_len >= 5 && p->patch_len <= 16, "patch_len %zu", p->patch_len);
	CHECK(!memcmp(p->orig, code, p->patch_len), "orig is not the function's bytes");
	CHECK(dis1(x86, p->patch, p->patch_len, ENTRY, &i, &d) && i.id == X86_INS_JMP &&
	      i.size == 5 && (uint64_t)d.x86.operands[0].imm == p->stub,
	      "patch is not jmp rel32 to the stub");
	for (size_t k = 5; k < p->patch_len; k++)
		CHECK(p->patch[k] == 0xcc, "patch byte %zu is 0x%02x, not int3", k, p->patch[k]);
	CHECK(p->stub == TRAMP && x86_jmp_abs(p, TRAMP, HOOK), "stub is not jmp *0(%%rip) to the hook");
	CHECK(p->tramp_orig > p->stub && p->tramp_orig < TRAMP + p->tramp_len, "tramp_orig 0x%" PRIx64,
	      p->tramp_orig);
	CHECK(p->tramp_len <= sizeof(p->tramp), "tramp_len %zu", p->tramp_len);
}

/* x86_64: the instruction at *at of the trampoline, which must be id; *at moves past it */
static bool x86_next(const struct hc_hook_plan *p, uint64_t *at, unsigned int id, cs_insn *i,
		     cs_detail *d)
{
	size_t left = TRAMP + p->tramp_len - *at;

	if (!dis1(x86, tr(p, *at), left, *at, i, d) || i->id != id)
		return false;
	*at += i->size;
	return true;
}

/* ---- x86_64 cases ---- */

static void x86_endbr_push(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;

	x86_common(p, code);
	CHECK(p->patch_len == 5, "patch_len %zu, want 5 (endbr64 + push)", p->patch_len);
	CHECK(!memcmp(tr(p, at), code, 5), "endbr64; push %%rbp not copied as they were");
	CHECK(x86_jmp_abs(p, at + 5, ENTRY + 5), "no jump back to entry+5");
	CHECK(p->tramp_len == 16 + 5 + 14, "tramp_len %zu", p->tramp_len);
}

#define RIP_DATA (ENTRY + 7 + 0x1000)

static void x86_rip(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;
	cs_insn i;
	cs_detail d;

	x86_common(p, code);
	CHECK(p->patch_len == 7, "patch_len %zu, want 7", p->patch_len);
	CHECK(x86_next(p, &at, X86_INS_MOV, &i, &d), "no mov at tramp_orig");
	CHECK(d.x86.operands[1].type == X86_OP_MEM && d.x86.operands[1].mem.base == X86_REG_RIP &&
	      i.address + i.size + (uint64_t)d.x86.operands[1].mem.disp == RIP_DATA,
	      "moved mov does not read 0x%llx", (unsigned long long)RIP_DATA);
	CHECK(x86_jmp_abs(p, at, ENTRY + 7), "no jump back to entry+7");
}

static void x86_jcc(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;
	cs_insn i;
	cs_detail d;

	x86_common(p, code);
	CHECK(p->patch_len == 5, "patch_len %zu", p->patch_len);
	CHECK(x86_next(p, &at, X86_INS_TEST, &i, &d), "no test at tramp_orig");
	CHECK(x86_next(p, &at, X86_INS_JE, &i, &d) && i.size == 6 &&
	      (uint64_t)d.x86.operands[0].imm == ENTRY + 0x15, "je not moved to a rel32 je entry+0x15");
	CHECK(x86_jmp_abs(p, at, ENTRY + 5), "no jump back to entry+5");
}

static void x86_jmp_first(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;
	cs_insn i;
	cs_detail d;

	x86_common(p, code);
	CHECK(p->patch_len == 5, "patch_len %zu", p->patch_len);
	CHECK(x86_next(p, &at, X86_INS_JMP, &i, &d) && i.size == 5 &&
	      (uint64_t)d.x86.operands[0].imm == ENTRY + 2 + 0x30, "jmp not moved to jmp rel32");
	CHECK(at == TRAMP + p->tramp_len, "something follows the moved jmp");
}

static void x86_loop(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;
	cs_insn i;
	cs_detail d;

	x86_common(p, code);
	CHECK(x86_next(p, &at, X86_INS_MOV, &i, &d), "no mov");
	CHECK(x86_next(p, &at, X86_INS_LOOP, &i, &d) && (uint64_t)d.x86.operands[0].imm == at + 2,
	      "loop not pointed past the jmp");
	CHECK(x86_next(p, &at, X86_INS_JMP, &i, &d) && (uint64_t)d.x86.operands[0].imm == at + 14,
	      "no jmp over the absolute jump");
	CHECK(x86_jmp_abs(p, at, ENTRY + 0x40), "absolute jump not to the loop's target");
	CHECK(*tr(p, at + 14) == 0x90, "nop not copied after the loop");
	CHECK(x86_jmp_abs(p, at + 15, ENTRY + 5), "no jump back to entry+5");
}

/* ---- aarch64: encoders and checks ---- */

static uint32_t a_b(uint64_t pc, uint64_t to, bool link)
{
	return (link ? 0x94000000u : 0x14000000u) | ((uint32_t)((to - pc) >> 2) & 0x3ffffff);
}

static uint32_t a_adrp(unsigned int rd, uint64_t pc, uint64_t to)
{
	uint64_t imm = ((to & ~0xfffull) - (pc & ~0xfffull)) >> 12;

	return 0x90000000u | (uint32_t)(imm & 3) << 29 | (uint32_t)((imm >> 2) & 0x7ffff) << 5 | rd;
}

#define A_NOP	  0xd503201fu
#define A_BTI_C	  0xd503245fu
#define A_PACIASP 0xd503233fu
#define A_PACIBSP 0xd503237fu
#define A_AUTIASP 0xd50323bfu
#define A_AUTIBSP 0xd50323ffu
#define A_STP	  0xa9bf7bfdu /* stp x29, x30, [sp, #-16]! */
#define A_MOVFP	  0x910003fdu /* mov x29, sp */
#define A_RET	  0xd65f03c0u

static uint32_t a_w(const struct hc_hook_plan *p, uint64_t addr)
{
	return rd32(tr(p, addr));
}

/* The word at addr of the trampoline is Capstone's id; its first imm operand in *imm. */
static bool a_is(const struct hc_hook_plan *p, uint64_t addr, unsigned int id, int64_t *imm)
{
	cs_insn i;
	cs_detail d;

	if (!dis1(a64, tr(p, addr), 4, addr, &i, &d) || i.id != id)
		return false;
	for (unsigned int k = 0; imm && k < d.arm64.op_count; k++)
		if (d.arm64.operands[k].type == ARM64_OP_IMM) {
			*imm = d.arm64.operands[k].imm;
			break;
		}
	return true;
}

/* the stub: [auti?sp;] ldr x16, lit; br x16; lit = hook */
static void a64_common(const struct hc_hook_plan *p, const uint8_t *code, size_t off, uint32_t aut)
{
	uint64_t at = p->stub;
	int64_t lit = 0;

	CHECK(p->patch_addr == ENTRY + off, "patch at +%" PRIu64 ", want +%zu", (uint64_t)(p->patch_addr - ENTRY),
	      off);
	CHECK(p->patch_len == 4 && !memcmp(p->orig, code + off, 4), "orig is not the patched word");
	CHECK(rd32(p->patch) == a_b(p->patch_addr, p->stub, false), "patch is not b stub");
	CHECK(p->stub == TRAMP, "stub 0x%" PRIx64, p->stub);
	if (aut) {
		CHECK(a_w(p, at) == aut, "stub does not start with %s",
		      aut == A_AUTIASP ? "autiasp" : "autibsp");
		at += 4;
	}
	CHECK(a_is(p, at, ARM64_INS_LDR, &lit) && (a_w(p, at) & 31) == 16 && !((uint64_t)lit & 7) &&
	      rd64(tr(p, (uint64_t)lit)) == HOOK, "stub does not load the hook into x16");
	CHECK(a_w(p, at + 4) == 0xd61f0200u, "stub does not br x16");
	CHECK(p->tramp_len <= sizeof(p->tramp) && !(p->tramp_len & 3), "tramp_len %zu", p->tramp_len);
}

/* a "b to" at addr */
static bool a_b_at(const struct hc_hook_plan *p, uint64_t addr, uint64_t to)
{
	int64_t imm = 0;

	return a_is(p, addr, ARM64_INS_B, &imm) && (uint64_t)imm == to && (a_w(p, addr) >> 26) == 5;
}

static void a64_bti(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;

	a64_common(p, code, 4, 0);
	CHECK(a_w(p, at) == A_BTI_C, "tramp_orig does not start with bti c");
	CHECK(a_w(p, at + 4) == A_STP, "stp not copied");
	CHECK(a_b_at(p, at + 8, ENTRY + 8), "no b entry+8 after it");
}

static void a64_copied(const struct hc_hook_plan *p, const uint8_t *code)
{
	a64_common(p, code, 0, 0);
	CHECK(a_w(p, p->tramp_orig) == A_BTI_C, "tramp_orig does not start with bti c");
	CHECK(a_w(p, p->tramp_orig + 4) == rd32(code), "the word not copied as it was");
	CHECK(a_b_at(p, p->tramp_orig + 8, ENTRY + 4), "no b entry+4 after it");
	CHECK(p->tramp_len == 32 + 12, "tramp_len %zu", p->tramp_len);
}

static void a64_pac(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig;
	uint32_t sign = rd32(code) == A_PACIASP ? A_PACIASP : A_PACIBSP;

	a64_common(p, code, 4, sign == A_PACIASP ? A_AUTIASP : A_AUTIBSP);
	CHECK(a_w(p, at) == sign, "tramp_orig does not re-sign first");
	CHECK(a_w(p, at + 4) == A_STP, "stp not copied");
	CHECK(a_b_at(p, at + 8, ENTRY + 8), "no b entry+8 after it");
}

/* tramp_orig: bti c, then [nop] ldr xRD, lit; b over it; lit = v; then *after */
static uint64_t a64_lit(const struct hc_hook_plan *p, unsigned int rd, uint64_t v)
{
	uint64_t at = p->tramp_orig + 4;
	int64_t lit = 0;

	CHECK(a_w(p, p->tramp_orig) == A_BTI_C, "tramp_orig does not start with bti c");
	if (a_w(p, at) == A_NOP)
		at += 4;
	CHECK(a_is(p, at, ARM64_INS_LDR, &lit) && (a_w(p, at) & 31) == rd && !((uint64_t)lit & 7),
	      "no aligned ldr x%u, literal", rd);
	CHECK(rd64(tr(p, (uint64_t)lit)) == v, "literal 0x%" PRIx64 ", want 0x%" PRIx64,
	      rd64(tr(p, (uint64_t)lit)), v);
	CHECK(a_b_at(p, at + 4, at + 16), "no b over the literal");
	return at + 16;
}

#define ADRP_TO 0x12345678ull

static void a64_adrp(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at;

	a64_common(p, code, 0, 0);
	at = a64_lit(p, 3, ADRP_TO & ~0xfffull);
	CHECK(a_b_at(p, at, ENTRY + 4), "no b entry+4 after it");
}

static void a64_ldrlit(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at;

	a64_common(p, code, 0, 0);
	at = a64_lit(p, 17, ENTRY + 0x100);
	CHECK(a_is(p, at, ARM64_INS_LDR, NULL) && a_w(p, at) == (0xf9400000u | 17 << 5 | 1),
	      "no ldr x1, [x17]");
	CHECK(a_b_at(p, at + 4, ENTRY + 4), "no b entry+4 after it");
}

static void a64_cbz(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig + 4;
	int64_t imm = 0;

	a64_common(p, code, 0, 0);
	CHECK(a_is(p, at, ARM64_INS_CBNZ, &imm) && (uint64_t)imm == at + 8 && (a_w(p, at) & 31) == 0,
	      "no cbnz x0 over the b");
	CHECK(a_b_at(p, at + 4, ENTRY + 0x20), "no b to cbz's target");
	CHECK(a_b_at(p, at + 8, ENTRY + 4), "no b entry+4 after it");
}

static void a64_bcond(const struct hc_hook_plan *p, const uint8_t *code)
{
	uint64_t at = p->tramp_orig + 4;
	int64_t imm = 0;

	a64_common(p, code, 0, 0);
	/* b.eq (cond 0) becomes b.ne (1) over the b */
	CHECK(a_is(p, at, ARM64_INS_B, &imm) && (uint64_t)imm == at + 8 && (a_w(p, at) & 0xf) == 1,
	      "no b.ne over the b");
	CHECK(a_b_at(p, at + 4, ENTRY - 0x40), "no b to b.eq's target");
	CHECK(a_b_at(p, at + 8, ENTRY + 4), "no b entry+4 after it");
}

/* ---- the table ---- */

struct hcase {
	const char *name;
	const struct hc_arch *a;
	uint8_t code[64];
	size_t len, func_size;
	int64_t tramp_off;     /* tramp = TRAMP + this (TRAMP - ENTRY is 1 MiB) */
	const char *refused;   /* NULL: planned; else every ;-separated word in why */
	void (*check)(const struct hc_hook_plan *p, const uint8_t *code);
};

#define W(w) (uint8_t)(w), (uint8_t)((w) >> 8), (uint8_t)((w) >> 16), (uint8_t)((w) >> 24)

static const struct hcase cases[] = {
	{ "x86.endbr64-push", &hc_arch_x86_64,
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x5d, 0xc3 }, 12, 12, 0, NULL,
	  x86_endbr_push },
	/* mov 0x1000(%rip), %rax; ret */
	{ "x86.rip-relative", &hc_arch_x86_64, { 0x48, 0x8b, 0x05, 0x00, 0x10, 0, 0, 0xc3 }, 8, 8, 0,
	  NULL, x86_rip },
	/* the same, the data 1.75 GiB below (run_cases()), the trampoline 1.5 GiB above */
	{ "x86.rip-out-of-reach", &hc_arch_x86_64, { 0x48, 0x8b, 0x05, 0, 0, 0, 0x90, 0xc3 }, 8, 8,
	  0x60000000, "+0;mov;beyond", NULL },
	/* test %rdi,%rdi; je +0x10; nop...; ret */
	{ "x86.short-jcc", &hc_arch_x86_64,
	  { 0x48, 0x85, 0xff, 0x74, 0x10, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3 }, 22, 22, 0, NULL, x86_jcc },
	/* jmp +0x30 (a tail call) at entry, the function 8 bytes long */
	{ "x86.jmp-first", &hc_arch_x86_64, { 0xeb, 0x30, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3 }, 8, 8, 0,
	  NULL, x86_jmp_first },
	/* mov %edi,%ecx; loop entry+0x40; nop; ... */
	{ "x86.loop", &hc_arch_x86_64, { 0x89, 0xf9, 0xe2, 0x3c, 0x90, 0x90, 0x90, 0xc3 }, 8, 0x30, 0,
	  NULL, x86_loop },
	/* push %rbp; call +0x100 */
	{ "x86.call-refused", &hc_arch_x86_64, { 0x55, 0xe8, 0x00, 0x01, 0, 0, 0xc3 }, 7, 7, 0,
	  "x86_fn+1;call 0x401106;callee", NULL },
	/* push %rbp; mov %rsp,%rbp; ...; jmp back to entry+1 */
	{ "x86.branch-into-patch", &hc_arch_x86_64,
	  { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0xeb, 0xf9, 0xc3 }, 9, 9, 0,
	  "x86_fn+6;branches into;+1", NULL },
	{ "x86.too-short", &hc_arch_x86_64, { 0x31, 0xc0, 0xc3 }, 16, 3, 0, "3 bytes;needs 5", NULL },
	/* xor %eax,%eax; ret; int3... */
	{ "x86.ret-early", &hc_arch_x86_64, { 0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc }, 6, 6, 0,
	  "+2;ret;flow", NULL },
	{ "x86.size-unknown", &hc_arch_x86_64, { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 }, 6, 0, 0,
	  "size unknown", NULL },
	{ "x86.tramp-out-of-reach", &hc_arch_x86_64, { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 }, 6, 6,
	  0x90000000, "out of reach", NULL },

	{ "a64.bti-stp", &hc_arch_aarch64, { W(A_BTI_C), W(A_STP), W(A_MOVFP), W(A_RET) }, 16, 16, 0,
	  NULL, a64_bti },
	{ "a64.paciasp", &hc_arch_aarch64, { W(A_PACIASP), W(A_STP), W(A_MOVFP), W(A_RET) }, 16, 16, 0,
	  NULL, a64_pac },
	{ "a64.pacibsp", &hc_arch_aarch64, { W(A_PACIBSP), W(A_STP), W(A_MOVFP), W(A_RET) }, 16, 16, 0,
	  NULL, a64_pac },
	/* adrp x3, ADRP_TO; ret */
	{ "a64.adrp", &hc_arch_aarch64, { W(0x9008fa23u), W(A_RET) }, 8, 8, 0, NULL, a64_adrp },
	/* ldr x1, +0x100; ret */
	{ "a64.ldr-literal", &hc_arch_aarch64, { W(0x58000801u), W(A_RET) }, 8, 8, 0, NULL, a64_ldrlit },
	/* cbz x0, +0x20; ...; ret */
	{ "a64.cbz", &hc_arch_aarch64, { W(0xb4000100u), W(A_RET) }, 8, 0x24, 0, NULL, a64_cbz },
	/* b.eq -0x40 */
	{ "a64.b-cond", &hc_arch_aarch64, { W(0x54fffe00u), W(A_RET) }, 8, 8, 0, NULL, a64_bcond },
	/* bti c; bl +0x100 */
	{ "a64.bl-refused", &hc_arch_aarch64, { W(A_BTI_C), W(0x94000040u), W(A_RET) }, 12, 12, 0,
	  "a64_fn+4;bl;callee", NULL },
	/* ldaddal x0, x0, [x1] (LSE, unknown to Capstone 4): copied; udf #0: refused */
	{ "a64.lse-copied", &hc_arch_aarch64, { W(0xf8e00020u), W(A_RET) }, 8, 8, 0, NULL, a64_copied },
	{ "a64.udf-refused", &hc_arch_aarch64, { W(0x00000000u), W(A_RET) }, 8, 8, 0,
	  "a64_fn+0;.inst 0x00000000;cannot be decoded", NULL },
	/* ret at entry */
	{ "a64.ret-refused", &hc_arch_aarch64, { W(A_RET) }, 4, 4, 0, "a64_fn+0;ret", NULL },
	/* the trampoline 255 MiB away */
	{ "a64.out-of-reach", &hc_arch_aarch64, { W(A_STP), W(A_MOVFP), W(A_RET) }, 12, 12,
	  255ll << 20, "out of reach", NULL },
	/* bti c; stp; loop: b.ne back to entry+4 */
	{ "a64.loop-to-patch", &hc_arch_aarch64, { W(A_BTI_C), W(A_STP), W(0x54ffffe1u), W(A_RET) }, 16,
	  16, 0, "a64_fn+8;branches to the patched instruction", NULL },
	{ "a64.too-short", &hc_arch_aarch64, { W(A_BTI_C), W(A_RET) }, 8, 4, 0, "4 bytes;needs 8", NULL },
	{ "a64.size-unknown", &hc_arch_aarch64, { W(A_STP), W(A_RET) }, 8, 0, 0, "size unknown", NULL },
};

/* every ;-separated part of want is in why */
static bool has_all(const char *why, const char *want)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", want);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
		if (!strstr(why, t))
			return false;
	return true;
}

static void run_cases(void)
{
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct hcase *c = &cases[k];
		struct hc_hook_in in = {
			.name = c->a == x86 ? "x86_fn" : "a64_fn",
			.entry = ENTRY,
			.code = c->code,
			.code_len = c->len < c->func_size ? c->func_size : c->len,
			.func_size = c->func_size,
			.tramp = (uint64_t)((int64_t)TRAMP + c->tramp_off),
			.hook = HOOK,
		};
		struct hc_hook_plan p;
		char why[256] = "", name[64];
		uint8_t code[64];
		int rc;

		memcpy(code, c->code, sizeof(code));
		if (!strcmp(c->name, "x86.rip-out-of-reach")) {
			int32_t d = -0x70000000; /* the data 1.75 GiB below */

			memcpy(code + 3, &d, 4);
		}
		in.code = code;
		snprintf(name, sizeof(name), "hook.%s", c->name);
		begin(name);
		rc = c->a->hook_plan(&in, &p, why, sizeof(why));
		if (!c->refused) {
			CHECK(rc == 0, "refused: %s", why);
			if (!rc)
				c->check(&p, code);
		} else {
			CHECK(rc == -1, "planned, want refused (%s)", c->refused);
			CHECK(has_all(why, c->refused), "why '%s' lacks '%s'", why, c->refused);
			CHECK(p.patch_len == 0, "a refused plan has patch_len %zu", p.patch_len);
		}
		end();
	}
}

/* the arm64 words of the table decode as their comments say */
static void encoders(void)
{
	begin("hook.a64-encoders");
	CHECK(a_adrp(3, ENTRY, ADRP_TO) == 0x9008fa23u, "adrp 0x%08x", a_adrp(3, ENTRY, ADRP_TO));
	CHECK(a_b(ENTRY + 4, ENTRY + 0x104, true) == 0x94000040u, "bl");
	end();
}

static void contract(void)
{
	begin("hook.contract");
	CHECK(x86->hook_plan == hc_x86_64_hook_plan && a64->hook_plan == hc_aarch64_hook_plan,
	      "hook_plan not in the tables");
	CHECK(x86->hook_reach > (1ull << 30) && x86->hook_reach < (2ull << 30), "x86_64 hook_reach");
	CHECK(a64->hook_reach > (64ull << 20) && a64->hook_reach < (128ull << 20), "aarch64 hook_reach");
	end();
}

/* ---- live: hook this program's own functions ---- */

/* p's address, hidden from the compiler: it folds a function compared with a linker symbol */
static uintptr_t addr(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	__asm__("" : "+r"(v));
	return v;
}

/*
 * Each in a section of its own: __start_/__stop_ give its exact size, as
 * the symbol table gives heapctl a target's.
 */
#define LIVE(sec) __attribute__((noinline, used, section(sec)))

static volatile int live_g = 21;
static int live_ext_n;

LIVE("hc_live_sum") int live_sum(const int *v, int n);
int live_sum(const int *v, int n)
{
	int s = 0;

	if (!v)
		return -1;
	for (int i = 0; i < n; i++)
		s += v[i] * 3 + (i ^ 5);
	return s;
}

/* starts with a %rip-relative load, adrp on arm64 */
LIVE("hc_live_rip") int live_rip(int x);
int live_rip(int x)
{
	return live_g * 2 + x;
}

LIVE("hc_live_ext") int live_ext(int x);
int live_ext(int x)
{
	live_ext_n++;
	return x * 7;
}

#if defined(__aarch64__)
/* signs its return address: starts with paciasp (a landing pad) */
LIVE("hc_live_pac") __attribute__((target("branch-protection=pac-ret+bti"))) int live_pac(int x);
int live_pac(int x)
{
	return live_ext(x) + 1;
}

/* a leaf under BTI: starts with "bti c", then adrp */
LIVE("hc_live_bti") __attribute__((target("branch-protection=bti"))) int live_bti(int x);
int live_bti(int x)
{
	return live_g * 3 + x;
}
#endif

#define SEC(s) extern const uint8_t __start_##s[], __stop_##s[];
SEC(hc_live_sum)
SEC(hc_live_rip)
#if defined(__aarch64__)
SEC(hc_live_pac)
SEC(hc_live_bti)
#endif

static int hook_n;
static int (*orig_sum)(const int *, int);
static int (*orig_int)(int);

static int hook_sum(const int *v, int n)
{
	hook_n++;
	return orig_sum(v, n);
}

static int hook_int(int x)
{
	hook_n++;
	return orig_int(x);
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A page within reach of fn, nearest first. */
static void *tramp_near(uint64_t fn, uint64_t reach)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), base = fn & ~(pg - 1);

	for (uint64_t d = pg; d < reach - pg; d += d < (1u << 20) ? pg : 1u << 20) {
		for (int s = -1; s <= 1; s += 2) {
			uint64_t at = s < 0 ? base - d : base + d;
			void *p;

			if (s < 0 && d > base)
				continue;
			p = mmap((void *)at, pg, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == (void *)at)
				return p;
			if (p != MAP_FAILED)
				munmap(p, pg);
		}
	}
	return NULL;
}

/* Make [addr, addr+len) writable (and still executable), or back to r-x. */
static int text_prot(uint64_t addr, size_t len, bool w)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), lo = addr & ~(pg - 1);

	return mprotect((void *)lo, ((addr + len + pg - 1) & ~(pg - 1)) - lo,
			PROT_READ | PROT_EXEC | (w ? PROT_WRITE : 0));
}

static void poke(uint64_t addr, const uint8_t *b, size_t len)
{
	memcpy((void *)addr, b, len);
	__builtin___clear_cache((char *)addr, (char *)addr + len);
}

struct live {
	struct hc_hook_plan p;
	void *tramp;
};

static bool live_on(struct live *l, const char *name, const void *fn, size_t size, const void *hook)
{
	const struct hc_arch *a = hc_arch_host();
	struct hc_hook_in in = {
		.name = name,
		.entry = (uint64_t)fn,
		.code = fn,
		.code_len = size,
		.func_size = size,
		.hook = (uint64_t)hook,
	};
	char why[256];

	l->tramp = tramp_near(in.entry, a->hook_reach);
	CHECK(l->tramp, "no page within reach of %s", name);
	if (!l->tramp)
		return false;
	in.tramp = (uint64_t)l->tramp;
	if (a->hook_plan(&in, &l->p, why, sizeof(why))) {
		CHECK(0, "refused: %s", why);
		munmap(l->tramp, (size_t)sysconf(_SC_PAGESIZE));
		return false;
	}
	memcpy(l->tramp, l->p.tramp, l->p.tramp_len);
	__builtin___clear_cache((char *)l->tramp, (char *)l->tramp + l->p.tramp_len);
	if (mprotect(l->tramp, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC) ||
	    text_prot(l->p.patch_addr, l->p.patch_len, true)) {
		CHECK(0, "mprotect: %s", strerror(errno));
		return false;
	}
	CHECK(!memcmp((void *)l->p.patch_addr, l->p.orig, l->p.patch_len), "orig differs from %s",
	      name);
	poke(l->p.patch_addr, l->p.patch, l->p.patch_len);
	text_prot(l->p.patch_addr, l->p.patch_len, false);
	return true;
}

static void live_off(struct live *l)
{
	text_prot(l->p.patch_addr, l->p.patch_len, true);
	poke(l->p.patch_addr, l->p.orig, l->p.patch_len);
	text_prot(l->p.patch_addr, l->p.patch_len, false);
	munmap(l->tramp, (size_t)sysconf(_SC_PAGESIZE));
}

static int (*volatile call_sum)(const int *, int) = live_sum;
static int (*volatile call_int)(int);

static void live_int(const char *name, int (*fn)(int), const uint8_t *start, const uint8_t *stop,
		     size_t want_off)
{
	struct live l;
	int want, got;

	begin(name);
	CHECK(addr((const void *)fn) == addr(start) && stop > start, "section does not hold just the function");
	call_int = fn;
	want = call_int(5);
	if (live_on(&l, name, fn, (size_t)(stop - start), hook_int)) {
		CHECK(l.p.patch_addr == (uint64_t)fn + want_off, "patched at +%" PRIu64 ", want +%zu",
		      l.p.patch_addr - (uint64_t)fn, want_off);
		orig_int = (int (*)(int))l.p.tramp_orig;
		hook_n = 0;
		got = call_int(5);
		CHECK(hook_n == 1, "hook ran %d times, want 1", hook_n);
		CHECK(got == want, "hooked call returned %d, want %d", got, want);
		live_off(&l);
		hook_n = 0;
		CHECK(call_int(5) == want && hook_n == 0, "after restoring: hook ran or result differs");
		CHECK(!memcmp(start + want_off, l.p.orig, l.p.patch_len), "bytes not restored");
	}
	end();
}

static void live_sum_group(void)
{
	static const int v[5] = { 1, 2, 3, 4, 5 };
	struct live l;
	int want, got;

	begin("hook.live-sum");
	CHECK(addr((const void *)live_sum) == addr(__start_hc_live_sum),
	      "section does not start with live_sum");
	want = call_sum(v, 5);
	if (live_on(&l, "live_sum", live_sum, (size_t)(__stop_hc_live_sum - __start_hc_live_sum),
		    hook_sum)) {
		orig_sum = (int (*)(const int *, int))l.p.tramp_orig;
		hook_n = 0;
		got = call_sum(v, 5);
		CHECK(hook_n == 1 && got == want, "hook ran %d times, got %d, want %d", hook_n, got,
		      want);
		/* the branch at entry taken, in the trampoline */
		got = call_sum(NULL, 5);
		CHECK(hook_n == 2 && got == -1, "NULL: hook ran %d times, got %d", hook_n, got);
		live_off(&l);
		hook_n = 0;
		CHECK(call_sum(v, 5) == want && hook_n == 0, "after restoring");
		CHECK(!memcmp(__start_hc_live_sum, l.p.orig, l.p.patch_len), "bytes not restored");
	}
	end();
}

static void live_rip_group(void)
{
	live_int("hook.live-rip", live_rip, __start_hc_live_rip, __stop_hc_live_rip, 0);
}

#if defined(__aarch64__)
static void live_bti_group(void)
{
	live_int("hook.live-bti", live_bti, __start_hc_live_bti, __stop_hc_live_bti, 4);
}

static void live_pac_group(void)
{
	live_ext_n = 0;
	live_int("hook.live-pac", live_pac, __start_hc_live_pac, __stop_hc_live_pac, 4);
	begin("hook.live-pac-callee");
	CHECK(live_ext_n == 3, "live_ext ran %d times through live_pac, want 3", live_ext_n);
	end();
}
#endif

/* A group in a child of its own: a wrong trampoline crashes, and that must name the group. */
static void live(const char *name, void (*fn)(void))
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		fn();
		fflush(stdout);
		_exit(nfailed != 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		printf("FAIL %s: fork/wait: %s\n", name, strerror(errno));
		nfailed++;
	} else if (WIFSIGNALED(st)) {
		printf("FAIL %s: killed by signal %d\n", name, WTERMSIG(st));
		nfailed++;
	} else if (WEXITSTATUS(st)) {
		nfailed++;
	}
}

int main(void)
{
	contract();
	encoders();
	run_cases();
	live("hook.live-sum", live_sum_group);
	live("hook.live-rip", live_rip_group);
#if defined(__aarch64__)
	live("hook.live-bti", live_bti_group);
	live("hook.live-pac", live_pac_group);
#endif
	return nfailed != 0;
}
