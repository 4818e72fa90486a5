// SPDX-License-Identifier: MIT
/*
 * arch/x86_64/hook.c: plan an inline hook at a function's entry.
 *
 * The patch is "jmp rel32" (5 bytes) at entry, then int3 up to the end of
 * the instructions it displaced; Capstone tells where those end.  The
 * trampoline, written at in->tramp:
 *
 *   stub:        jmp *0(%rip); .quad hook        (14 bytes, int3 to 16)
 *   tramp_orig:  the displaced instructions, moved
 *                jmp *0(%rip); .quad entry + displaced
 *
 * Moved: %rip-relative operands re-based (within +-2 GiB of their new
 * place), jmp and jcc turned into their rel32 forms (or an absolute jump,
 * jcc inverted over it, when out of reach), loop/jrcxz pointed at an
 * absolute jump beside them; endbr64 and everything position-independent
 * copied.  Refused: a call (a thread inside the callee would return into
 * the changed bytes), anything that ends the flow before 5 bytes other
 * than a direct jmp (ret, indirect jmp, int3, ud2, hlt, syscall...), xbegin,
 * and a function with a direct branch into the displaced bytes past entry
 * (it would land mid-patch).  Jump tables' targets cannot be seen: a
 * switch whose case sits in the first 5 bytes of a function is not one a
 * compiler makes.
 *
 * The patch overwrites endbr64: an indirect call under user-space IBT
 * would fault.  Linux does not enable IBT for user space; if it ever
 * does, keep endbr64 in place and patch after it, as arm64 keeps "bti c".
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "hook_int.h"

#define X64_PATCH    5           /* jmp rel32 */
#define X64_ORIG_OFF 16          /* tramp_orig, after the stub */
#define X64_SCAN_MAX (64 * 1024) /* the largest function scanned for branches */

struct emit {
	uint8_t *b;
	size_t len, cap;
	uint64_t addr; /* of b[0] in the target */
};

static void put(struct emit *e, const void *p, size_t n)
{
	if (e->len + n <= e->cap)
		memcpy(e->b + e->len, p, n);
	e->len += n; /* past cap: checked once at the end */
}

static void put8(struct emit *e, uint8_t v)
{
	put(e, &v, 1);
}

static void put32(struct emit *e, uint32_t v)
{
	put(e, &v, 4);
}

/* jmp *0(%rip); .quad to */
static void put_jmp_abs(struct emit *e, uint64_t to)
{
	static const uint8_t op[6] = { 0xff, 0x25, 0, 0, 0, 0 };

	put(e, op, sizeof(op));
	put(e, &to, 8);
}

static uint64_t here(const struct emit *e)
{
	return e->addr + e->len;
}

/* to - from fits a rel32 */
static bool rel32_ok(uint64_t to, uint64_t from)
{
	int64_t d = (int64_t)(to - from);

	return d >= INT32_MIN && d <= INT32_MAX;
}

/* The direct branch target of insn, if it has one. */
static bool branch_target(csh h, const cs_insn *insn, uint64_t *to)
{
	const cs_x86 *x = &insn->detail->x86;

	/* Capstone 4 puts loop and jrcxz in no group but the relative branches' */
	if (!cs_insn_group(h, insn, CS_GRP_JUMP) && !cs_insn_group(h, insn, CS_GRP_CALL) &&
	    !cs_insn_group(h, insn, CS_GRP_BRANCH_RELATIVE))
		return false;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*to = (uint64_t)x->operands[0].imm;
	return true;
}

/* Where the condition code of a jcc is: 7x rel8 or 0f 8x rel32. */
static int jcc_cond(const cs_x86 *x)
{
	if (x->opcode[0] >= 0x70 && x->opcode[0] <= 0x7f)
		return x->opcode[0] & 0xf;
	if (x->opcode[0] == 0x0f && x->opcode[1] >= 0x80 && x->opcode[1] <= 0x8f)
		return x->opcode[1] & 0xf;
	return -1;
}

/*
 * Move one displaced instruction into e.  1: it was a direct jmp (no jump
 * back needed), 0: moved, -1: refused.
 */
static int relocate(csh h, const cs_insn *insn, const struct hc_hook_in *in, size_t off,
		    struct emit *e, char *why, size_t whylen)
{
	const cs_x86 *x = &insn->detail->x86;
	const char *what = "cannot be moved";
	uint64_t to;
	int cc;

	switch (insn->id) {
	case X86_INS_HLT: case X86_INS_UD2: case X86_INS_UD0: case X86_INS_SYSCALL:
	case X86_INS_SYSENTER: case X86_INS_SYSEXIT: case X86_INS_SYSRET: case X86_INS_XBEGIN:
	case X86_INS_XABORT: case X86_INS_XEND: case X86_INS_LJMP: case X86_INS_LCALL:
		goto no;
	}
	if (cs_insn_group(h, insn, CS_GRP_CALL)) {
		what = "cannot be moved: a thread inside the callee would return into the patch";
		goto no;
	}
	if (cs_insn_group(h, insn, CS_GRP_RET) || cs_insn_group(h, insn, CS_GRP_IRET) ||
	    cs_insn_group(h, insn, CS_GRP_INT)) {
		what = "ends the function's flow before the 5 bytes of the patch";
		goto no;
	}
	if (cs_insn_group(h, insn, CS_GRP_JUMP) || cs_insn_group(h, insn, CS_GRP_BRANCH_RELATIVE)) {
		if (!branch_target(h, insn, &to)) {
			what = "ends the function's flow before the 5 bytes of the patch";
			goto no;
		}
		switch (insn->id) {
		case X86_INS_JMP:
			if (rel32_ok(to, here(e) + 5)) {
				put8(e, 0xe9);
				put32(e, (uint32_t)(to - (here(e) + 4)));
			} else {
				put_jmp_abs(e, to);
			}
			return 1;
		case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
		case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
			/* rel8 only: "op +2; jmp +14; jmp *0(%rip); .quad to" */
			put(e, insn->bytes, insn->size - 1u);
			put8(e, 2);
			put8(e, 0xeb);
			put8(e, 14);
			put_jmp_abs(e, to);
			return 0;
		}
		cc = jcc_cond(x);
		if (cc < 0)
			goto no;
		if (rel32_ok(to, here(e) + 6)) {
			put8(e, 0x0f);
			put8(e, (uint8_t)(0x80 | cc));
			put32(e, (uint32_t)(to - (here(e) + 4)));
		} else {
			put8(e, (uint8_t)(0x70 | (cc ^ 1)));
			put8(e, 14);
			put_jmp_abs(e, to);
		}
		return 0;
	}
	for (unsigned int i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		uint64_t at = here(e), target = insn->address + insn->size + (uint64_t)x->disp;
		uint8_t b[16];
		int32_t disp;

		if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RIP)
			continue;
		if (x->encoding.disp_size != 4 || !x->encoding.disp_offset ||
		    x->encoding.disp_offset + 4u > insn->size)
			goto no;
		if (!rel32_ok(target, at + insn->size)) {
			refuse(why, whylen, in, off,
			       "'%s %s' addresses 0x%" PRIx64 ", beyond +-2 GiB of the trampoline",
			       insn->mnemonic, insn->op_str, target);
			return -1;
		}
		disp = (int32_t)(target - (at + insn->size));
		memcpy(b, insn->bytes, insn->size);
		memcpy(b + x->encoding.disp_offset, &disp, 4);
		put(e, b, insn->size);
		return 0;
	}
	put(e, insn->bytes, insn->size);
	return 0;
no:
	refuse(why, whylen, in, off, "'%s%s%s' %s", insn->mnemonic, insn->op_str[0] ? " " : "",
	       insn->op_str, what);
	return -1;
}

/* A direct branch anywhere in the function into (entry, entry + covered): refuse. */
static int scan_branches(csh h, cs_insn *insn, const struct hc_hook_in *in, size_t covered,
			 char *why, size_t whylen)
{
	const uint8_t *p = in->code;
	size_t left = in->func_size;
	uint64_t addr = in->entry, to;

	while (left) {
		if (!cs_disasm_iter(h, &p, &left, &addr, insn)) {
			/* data or an instruction Capstone does not know: step over a byte */
			p++, left--, addr++;
			continue;
		}
		if (branch_target(h, insn, &to) && to > in->entry && to < in->entry + covered) {
			refuse(why, whylen, in, (size_t)(insn->address - in->entry),
			       "'%s %s' branches into the patched bytes (+%" PRIu64 ")",
			       insn->mnemonic, insn->op_str, to - in->entry);
			return -1;
		}
	}
	return 0;
}

int hc_x86_64_hook_plan(const struct hc_hook_in *in, struct hc_hook_plan *out, char *why,
			size_t whylen)
{
	struct emit e = { out->tramp, 0, sizeof(out->tramp), in->tramp };
	size_t off = 0, covered;
	bool jumped = false;
	cs_insn *insn;
	uint32_t rel;
	csh h;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!in->func_size) {
		refuse(why, whylen, in, 0, "size unknown");
		return -1;
	}
	if (in->func_size < X64_PATCH) {
		refuse(why, whylen, in, 0, "the function is %zu bytes, the patch needs %d",
		       in->func_size, X64_PATCH);
		return -1;
	}
	if (in->func_size > X64_SCAN_MAX) {
		refuse(why, whylen, in, 0, "the function is %zu bytes, too large to scan for branches",
		       in->func_size);
		return -1;
	}
	if (in->code_len < in->func_size) {
		refuse(why, whylen, in, 0, "only %zu of the function's %zu bytes given", in->code_len,
		       in->func_size);
		return -1;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		refuse(why, whylen, in, 0, "Capstone: cannot open x86_64");
		return -1;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(h);
	if (!insn) {
		refuse(why, whylen, in, 0, "Capstone: out of memory");
		goto out;
	}

	put_jmp_abs(&e, in->hook);
	while (e.len < X64_ORIG_OFF)
		put8(&e, 0xcc);
	while (off < X64_PATCH) {
		const uint8_t *p = in->code + off;
		size_t left = in->code_len - off;
		uint64_t addr = in->entry + off;
		int r;

		if (!cs_disasm_iter(h, &p, &left, &addr, insn)) {
			refuse(why, whylen, in, off, "cannot decode the instruction");
			goto out;
		}
		if (off + insn->size > in->func_size) {
			refuse(why, whylen, in, off, "'%s %s' crosses the function's end (%zu bytes)",
			       insn->mnemonic, insn->op_str, in->func_size);
			goto out;
		}
		r = relocate(h, insn, in, off, &e, why, whylen);
		if (r < 0)
			goto out;
		off += insn->size;
		if (r > 0) {
			jumped = true;
			break;
		}
	}
	/* after a jmp shorter than the patch, the rest of the 5 bytes is the function's too */
	covered = off < X64_PATCH ? X64_PATCH : off;
	if (covered > sizeof(out->orig)) {
		refuse(why, whylen, in, 0, "the displaced instructions take %zu bytes, more than %zu",
		       covered, sizeof(out->orig));
		goto out;
	}
	if (!jumped)
		put_jmp_abs(&e, in->entry + off);
	if (e.len > e.cap) {
		refuse(why, whylen, in, 0, "the trampoline needs %zu bytes, more than %zu", e.len,
		       e.cap);
		goto out;
	}
	if (!rel32_ok(in->tramp, in->entry + X64_PATCH)) {
		refuse(why, whylen, in, 0, "trampoline at 0x%" PRIx64 " out of reach of a jmp rel32",
		       in->tramp);
		goto out;
	}
	if (scan_branches(h, insn, in, covered, why, whylen))
		goto out;

	out->patch_addr = in->entry;
	out->patch_len = covered;
	memcpy(out->orig, in->code, covered);
	memset(out->patch, 0xcc, covered);
	out->patch[0] = 0xe9;
	rel = (uint32_t)(in->tramp - (in->entry + X64_PATCH));
	memcpy(out->patch + 1, &rel, 4);
	out->tramp_len = e.len;
	out->stub = in->tramp;
	out->tramp_orig = in->tramp + X64_ORIG_OFF;
	rc = 0;
out:
	if (insn)
		cs_free(insn, 1);
	cs_close(&h);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}
