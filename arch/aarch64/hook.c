// SPDX-License-Identifier: MIT
/*
 * arch/aarch64/hook.c: plan an inline hook at a function's entry.
 *
 * One instruction is patched, into "b stub" (+-128 MiB).  An entry that is
 * a landing pad stays: "bti c" or "bti jc" (an indirect call into a page
 * mapped PROT_BTI must land on one, and b is not one), or paciasp/pacibsp
 * (landing pads too, and they sign the return address).  The patch then
 * goes at entry + 4.  The trampoline, written at in->tramp:
 *
 *   stub:        autiasp / autibsp     only after paciasp / pacibsp: the
 *                                      hook is entered as if called, with
 *                                      the caller's plain return address;
 *                                      same sp as the signing, so it verifies
 *                ldr x16, hook ; br x16  (x16: the one register, with x17,
 *                                      a call may clobber, and what "bti c"
 *                                      accepts a br from)
 *   tramp_orig:  paciasp / pacibsp     re-sign what the hook's blr left in
 *                                      lr, as the function's epilogue
 *                                      (autiasp; ret) expects
 *                or "bti c"            a landing pad for the hook's blr
 *                                      either way, should the trampoline's
 *                                      page ever be mapped PROT_BTI (it is
 *                                      not: the caller maps it plain)
 *                the displaced instruction, moved
 *                b patch_addr + 4      direct: a br would need a landing
 *                                      pad there, and the page may be guarded
 *
 * Moved: adr/adrp become a load of their value; a literal load (ldr,
 * ldrsw, prfm, ldr s/d/q) loads its address into x17 and then through it;
 * b stays a b; b.cond, cbz, cbnz, tbz, tbnz take the inverted condition
 * over a b to their target.  Every branch the trampoline makes to the
 * function is direct, so each target must be within reach of a b: the
 * planner refuses one that is not rather than use a br that BTI would
 * fault.  Refused: bl and blr (a thread inside the callee would return
 * into the changed instruction), ret, br and the other branches through a
 * register, exception-generating instructions (svc, brk...), words
 * Capstone cannot decode outside the load/store and data-processing
 * classes, and, when the patch is past a landing pad, a
 * function with a direct branch to the patched instruction (a loop back
 * to it would run the hook again).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "hook_int.h"

#define A64_ORIG_OFF 32          /* tramp_orig, after the stub */
#define A64_SCAN_MAX (64 * 1024) /* the largest function scanned for branches */
#define A64_REACH    (128ll << 20)

#define A64_NOP	    0xd503201fu
#define A64_BTI_C   0xd503245fu
#define A64_PACIASP 0xd503233fu
#define A64_PACIBSP 0xd503237fu
#define A64_AUTIASP 0xd50323bfu
#define A64_AUTIBSP 0xd50323ffu
#define A64_BR_X16  0xd61f0200u
#define A64_BRK0    0xd4200000u

struct emit {
	uint8_t *b;
	size_t len, cap;
	uint64_t addr; /* of b[0] in the target */
};

static void put32(struct emit *e, uint32_t w)
{
	if (e->len + 4 <= e->cap)
		memcpy(e->b + e->len, &w, 4);
	e->len += 4; /* past cap: checked once at the end */
}

static uint64_t here(const struct emit *e)
{
	return e->addr + e->len;
}

static int64_t sext(uint64_t v, unsigned int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static bool b_reaches(uint64_t to, uint64_t from)
{
	int64_t d = (int64_t)(to - from);

	return d >= -A64_REACH && d < A64_REACH;
}

static uint32_t b_to(uint64_t to, uint64_t from)
{
	return 0x14000000u | ((uint32_t)((to - from) >> 2) & 0x3ffffffu);
}

/* ldr xd, #8; b #12; .quad v, with the literal 8-aligned */
static void put_lit64(struct emit *e, unsigned int rd, uint64_t v)
{
	if (here(e) & 7)
		put32(e, A64_NOP);
	put32(e, 0x58000040u | rd);
	put32(e, 0x14000003u);
	put32(e, (uint32_t)v);
	put32(e, (uint32_t)(v >> 32));
}

static uint32_t word(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

/* HINT #imm: bti (32..38), paciasp (25), pacibsp (27)... or -1 */
static int hint_imm(uint32_t w)
{
	return (w & 0xfffff01fu) == 0xd503201fu ? (int)((w >> 5) & 0x7f) : -1;
}

/* The target of a direct branch (b, bl, b.cond, cbz, cbnz, tbz, tbnz) at pc. */
static bool branch_target(uint32_t w, uint64_t pc, uint64_t *to)
{
	if ((w & 0x7c000000u) == 0x14000000u) /* b, bl */
		*to = pc + (uint64_t)(sext(w & 0x3ffffffu, 26) * 4);
	else if ((w & 0xff000000u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u)
		*to = pc + (uint64_t)(sext((w >> 5) & 0x7ffffu, 19) * 4); /* b.cond, cbz, cbnz */
	else if ((w & 0x7e000000u) == 0x36000000u)
		*to = pc + (uint64_t)(sext((w >> 5) & 0x3fffu, 14) * 4); /* tbz, tbnz */
	else
		return false;
	return true;
}

/* Capstone's text for the instruction, for messages; false if it cannot decode it. */
static bool insn_text(csh h, cs_insn *insn, uint32_t w, uint64_t pc, char *buf, size_t len)
{
	uint8_t b[4];
	const uint8_t *p = b;
	size_t left = 4;

	memcpy(b, &w, 4);
	if (!cs_disasm_iter(h, &p, &left, &pc, insn)) {
		snprintf(buf, len, ".inst 0x%08" PRIx32, w);
		return false;
	}
	snprintf(buf, len, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "", insn->op_str);
	return true;
}

/* Move the instruction w at pc into e.  1: a b (no branch back needed), 0: moved, -1: refused. */
static int relocate(uint32_t w, uint64_t pc, const char *text, const struct hc_hook_in *in,
		    size_t off, struct emit *e, char *why, size_t whylen)
{
	const char *what = "cannot be moved";
	uint64_t to;

	if ((w & 0x1f000000u) == 0x10000000u) { /* adr, adrp */
		int64_t imm = sext(((w >> 5) & 0x7ffffu) << 2 | ((w >> 29) & 3), 21);

		to = w >> 31 ? (pc & ~0xfffull) + (uint64_t)(imm * 4096) : pc + (uint64_t)imm;
		put_lit64(e, w & 31, to);
		return 0;
	}
	if ((w & 0x3b000000u) == 0x18000000u) { /* ldr (literal) and kin */
		static const uint32_t gp[4] = {
			0xb9400000u, /* ldr wt, [x17] */
			0xf9400000u, /* ldr xt, [x17] */
			0xb9800000u, /* ldrsw xt, [x17] */
			0xf9800000u, /* prfm op, [x17] */
		};
		static const uint32_t fp[3] = {
			0xbd400000u, /* ldr st, [x17] */
			0xfd400000u, /* ldr dt, [x17] */
			0x3dc00000u, /* ldr qt, [x17] */
		};
		unsigned int opc = w >> 30;

		if ((w >> 26 & 1) && opc == 3)
			goto no;
		put_lit64(e, 17, pc + (uint64_t)(sext((w >> 5) & 0x7ffffu, 19) * 4));
		put32(e, ((w >> 26 & 1) ? fp[opc] : gp[opc]) | 17u << 5 | (w & 31));
		return 0;
	}
	if ((w & 0xfc000000u) == 0x94000000u || (w & 0xfe000000u) == 0xd6000000u) {
		/* bl, and the branches through a register: blr, br, ret, eret... */
		if ((w & 0xfc000000u) == 0x94000000u || (w & 0xfe600000u) == 0xd6200000u)
			what = "cannot be moved: a thread inside the callee would return into the patch";
		goto no;
	}
	if ((w & 0xff000000u) == 0xd4000000u) /* svc, hvc, smc, brk, hlt, dcps */
		goto no;
	if ((w & 0xff000010u) == 0x54000010u) /* bc.cond (FEAT_HBC) */
		goto no;
	if (!branch_target(w, pc, &to)) {
		put32(e, w);
		return 0;
	}
	if ((w & 0xff000000u) == 0x54000000u && (w & 0xe) != 0xe) /* b.cond: b.!cond #8 */
		put32(e, 0x54000040u | ((w & 0xf) ^ 1));
	else if ((w & 0x7e000000u) == 0x34000000u) /* cbz <-> cbnz, #8 */
		put32(e, ((w ^ 1u << 24) & ~(0x7ffffu << 5)) | 2u << 5);
	else if ((w & 0x7e000000u) == 0x36000000u) /* tbz <-> tbnz, #8 */
		put32(e, ((w ^ 1u << 24) & ~(0x3fffu << 5)) | 2u << 5);
	if (!b_reaches(to, here(e))) {
		refuse(why, whylen, in, off,
		       "'%s' targets 0x%" PRIx64 ", out of reach of a b from the trampoline", text,
		       to);
		return -1;
	}
	put32(e, b_to(to, here(e)));
	/* b, or b.al / b.nv: always taken */
	return (w & 0xfc000000u) == 0x14000000u || (w & 0xff00000eu) == 0x5400000eu;
no:
	refuse(why, whylen, in, off, "'%s' %s", text, what);
	return -1;
}

int hc_aarch64_hook_plan(const struct hc_hook_in *in, struct hc_hook_plan *out, char *why,
			 size_t whylen)
{
	struct emit e = { out->tramp, 0, sizeof(out->tramp), in->tramp };
	uint32_t first, w, pac = 0;
	size_t off = 0;
	cs_insn *insn = NULL;
	char text[200];
	int rc = -1, r, hint;
	csh h;

	memset(out, 0, sizeof(*out));
	if (!in->func_size) {
		refuse(why, whylen, in, 0, "size unknown");
		return -1;
	}
	if ((in->entry | in->tramp) & 3 || in->tramp & 7) {
		refuse(why, whylen, in, 0, "entry 0x%" PRIx64 " or trampoline 0x%" PRIx64
		       " misaligned", in->entry, in->tramp);
		return -1;
	}
	if (in->func_size > A64_SCAN_MAX) {
		refuse(why, whylen, in, 0, "the function is %zu bytes, too large to scan for branches",
		       in->func_size);
		return -1;
	}
	if (in->code_len < in->func_size || in->code_len < 4) {
		refuse(why, whylen, in, 0, "only %zu of the function's %zu bytes given", in->code_len,
		       in->func_size);
		return -1;
	}
	first = word(in->code);
	hint = hint_imm(first);
	if (hint == 25 || hint == 27 || (hint >= 32 && hint <= 38 && !(hint & 1))) {
		off = 4;
		if (hint == 25)
			pac = A64_AUTIASP;
		else if (hint == 27)
			pac = A64_AUTIBSP;
	}
	if (in->func_size < off + 4 || in->code_len < off + 4) {
		refuse(why, whylen, in, off, "the function is %zu bytes, the patch needs %zu",
		       in->func_size, off + 4);
		return -1;
	}
	if (cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &h) != CS_ERR_OK) {
		refuse(why, whylen, in, 0, "Capstone: cannot open aarch64");
		return -1;
	}
	insn = cs_malloc(h);
	if (!insn) {
		refuse(why, whylen, in, 0, "Capstone: out of memory");
		goto out;
	}

	/* the stub; its literal 8-aligned */
	if (pac) {
		put32(&e, pac);
		put32(&e, 0x58000060u | 16); /* ldr x16, #12 */
		put32(&e, A64_BR_X16);
		put32(&e, A64_BRK0);
	} else {
		put32(&e, 0x58000040u | 16); /* ldr x16, #8 */
		put32(&e, A64_BR_X16);
	}
	put32(&e, (uint32_t)in->hook);
	put32(&e, (uint32_t)(in->hook >> 32));
	while (e.len < A64_ORIG_OFF)
		put32(&e, A64_BRK0);

	/* tramp_orig */
	w = word(in->code + off);
	put32(&e, pac == A64_AUTIASP ? A64_PACIASP : pac == A64_AUTIBSP ? A64_PACIBSP : A64_BTI_C);
	/*
	 * Capstone 4 knows neither LSE atomics nor SVE.  A word it cannot
	 * decode still moves as it is in the load/store and data-processing
	 * classes, where nothing reads the pc but what relocate() takes by
	 * its encoding (adr, adrp, literal loads); not in the branch,
	 * exception and system class, nor in the reserved and SVE/SME space.
	 */
	if (!insn_text(h, insn, w, in->entry + off, text, sizeof(text)) &&
	    ((w & 0x1c000000u) == 0x14000000u || !(w & 0x18000000u))) {
		refuse(why, whylen, in, off, "'%s' cannot be decoded", text);
		goto out;
	}
	r = relocate(w, in->entry + off, text, in, off, &e, why, whylen);
	if (r < 0)
		goto out;
	if (!r) {
		if (!b_reaches(in->entry + off + 4, here(&e))) {
			refuse(why, whylen, in, off, "trampoline at 0x%" PRIx64 " out of reach of a b",
			       in->tramp);
			goto out;
		}
		put32(&e, b_to(in->entry + off + 4, here(&e)));
	}
	if (e.len > e.cap) {
		refuse(why, whylen, in, off, "the trampoline needs %zu bytes, more than %zu", e.len,
		       e.cap);
		goto out;
	}
	if (!b_reaches(in->tramp, in->entry + off)) {
		refuse(why, whylen, in, off, "trampoline at 0x%" PRIx64 " out of reach of a b",
		       in->tramp);
		goto out;
	}
	/* past a landing pad, a branch to the patch would take a loop iteration into the hook */
	for (size_t i = 0; off && i + 4 <= in->func_size; i += 4) {
		uint32_t v = word(in->code + i);
		uint64_t to;

		if (branch_target(v, in->entry + i, &to) && to == in->entry + off) {
			insn_text(h, insn, v, in->entry + i, text, sizeof(text));
			refuse(why, whylen, in, i, "'%s' branches to the patched instruction (+%zu)",
			       text, off);
			goto out;
		}
	}

	out->patch_addr = in->entry + off;
	out->patch_len = 4;
	memcpy(out->orig, in->code + off, 4);
	w = b_to(in->tramp, in->entry + off);
	memcpy(out->patch, &w, 4);
	out->tramp_len = e.len;
	out->stub = in->tramp;
	out->tramp_orig = in->tramp + A64_ORIG_OFF;
	rc = 0;
out:
	if (insn)
		cs_free(insn, 1);
	cs_close(&h);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}
