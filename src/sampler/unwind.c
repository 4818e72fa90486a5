// SPDX-License-Identifier: MIT
/*
 * The freestanding sampler's stack unwinder: DWARF call frame information
 * from .eh_frame, found through each object's .eh_frame_hdr, as libgcc
 * finds it, but with no loader to ask: heapctl lists the objects (struct
 * hcs_obj).  #included by sampler.c (HCS_FREESTANDING) and by its unit
 * test; it calls nothing and allocates nothing, so it may run inside
 * malloc.
 *
 * Only the three registers a walk needs are followed: the stack pointer,
 * the frame pointer and the return address.  CFI is read where the
 * objects have it, as libgcc does; the stack only at addresses the CFI
 * derives, within [sp0, sp0 + UW_SPAN).  Each step must move the CFA up,
 * so a walk ends: at an address outside every object, a return address
 * that is 0 or undefined (the outermost frame), a frame without CFI, or
 * max frames.  What cannot be followed (a DWARF expression that a tracked
 * register or the CFA needs, an encoding not handled, a CFA that does not
 * move up) ends it too, and is reported as short.
 */
#include <stddef.h>
#include <stdint.h>

#include "hcs.h"

#define UW_SPAN (64ull << 20) /* the stack a walk may read, above its own sp */
#define UW_STATES 8           /* DW_CFA_remember_state depth */

/* The registers followed; DWARF numbers them per architecture. */
enum { UW_FP, UW_SP, UW_RA, UW_NREG };
#if defined(__x86_64__)
#define DW_FP 6  /* rbp */
#define DW_SP 7  /* rsp */
#define DW_RA 16 /* the return address column: no register of its own */
#elif defined(__aarch64__)
#define DW_FP 29 /* x29 */
#define DW_SP 31 /* sp */
#define DW_RA 30 /* x30, the link register, which holds it */
#else
#error "the unwinder knows x86_64 and aarch64 only"
#endif

/* A register's rule: how its value in the caller is found. */
enum { R_SAME, R_UNDEF, R_OFFSET, R_VAL_OFFSET, R_REG, R_BAD };

struct uw_rule {
	uint8_t how;
	uint8_t reg; /* R_REG: the register (UW_*) holding it */
	int64_t off; /* R_OFFSET, R_VAL_OFFSET: from the CFA */
};

struct uw_row {
	uint64_t cfa_reg; /* DWARF number; ~0: an expression */
	int64_t cfa_off;
	struct uw_rule r[UW_NREG];
};

struct uw_cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	uint8_t has_z; /* FDEs carry augmentation data */
	const uint8_t *insns, *end; /* the initial instructions */
};

/* A bounded reader of CFI; bad once it ran past its end or met what it cannot read. */
struct uw_cur {
	const uint8_t *p, *end;
	int bad;
};

static inline uint64_t uw_ld(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	/* little-endian on both architectures */
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint64_t uw_fixed(struct uw_cur *c, unsigned n)
{
	uint64_t v;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	v = uw_ld(c->p, n);
	c->p += n;
	return v;
}

static uint64_t uw_uleb(struct uw_cur *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; !c->bad; shift += 7) {
		uint8_t b;

		if (c->p >= c->end || shift > 63) {
			c->bad = 1;
			break;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t uw_sleb(struct uw_cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	do {
		if (c->bad || c->p >= c->end || shift > 63) {
			c->bad = 1;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* DW_EH_PE_* */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_PCREL 0x10
#define PE_DATAREL 0x30
#define PE_APPL 0x70

/*
 * A pointer in encoding enc: the formats, and the pc-relative and
 * data-relative (datarel: the .eh_frame_hdr's address) bases GNU ld and
 * lld emit.  The indirect bit is only the personality's, which is skipped.
 */
static uint64_t uw_enc(struct uw_cur *c, uint8_t enc, uint64_t datarel)
{
	uint64_t at = (uint64_t)(uintptr_t)c->p, v;

	if (enc == PE_OMIT)
		return 0;
	switch (enc & PE_FORMAT) {
	case 0x00: v = uw_fixed(c, 8); break;                       /* absptr */
	case 0x01: v = uw_uleb(c); break;                           /* uleb128 */
	case 0x02: v = uw_fixed(c, 2); break;                       /* udata2 */
	case 0x03: v = uw_fixed(c, 4); break;                       /* udata4 */
	case 0x04: v = uw_fixed(c, 8); break;                       /* udata8 */
	case 0x09: v = (uint64_t)uw_sleb(c); break;                 /* sleb128 */
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)uw_fixed(c, 2); break; /* sdata2 */
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)uw_fixed(c, 4); break; /* sdata4 */
	case 0x0c: v = uw_fixed(c, 8); break;                       /* sdata8 */
	default: c->bad = 1; return 0;
	}
	if ((enc & PE_APPL) == 0)
		return v;
	if ((enc & PE_APPL) == PE_PCREL)
		return v + at;
	if ((enc & PE_APPL) == PE_DATAREL && datarel)
		return v + datarel;
	c->bad = 1; /* textrel, funcrel, aligned: no base known here */
	return 0;
}

/* An .eh_frame record's length: where its body starts (*body) and ends; NULL for a terminator. */
static const uint8_t *uw_record(const uint8_t *rec, const uint8_t **body)
{
	uint64_t len = uw_ld(rec, 4);

	*body = rec + 4;
	if (len == 0xffffffffu) { /* the 64-bit format: only the length is wider */
		len = uw_ld(rec + 4, 8);
		*body = rec + 12;
	}
	return len && len < (1ull << 32) ? *body + len : NULL;
}

static int uw_parse_cie(const uint8_t *rec, struct uw_cie *cie)
{
	const uint8_t *body, *aug, *aug_end = NULL;
	const uint8_t *end = uw_record(rec, &body);
	struct uw_cur c = { body, end, 0 };
	uint8_t version;
	uint64_t ra;

	if (!end || uw_fixed(&c, 4) != 0) /* CIE id: 0 in .eh_frame, 4 bytes in either format */
		return -1;
	version = (uint8_t)uw_fixed(&c, 1);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	aug = c.p;
	while (c.p < c.end && *c.p)
		c.p++;
	if (uw_fixed(&c, 1) != 0) /* the augmentation's NUL */
		return -1;
	if (version == 4 && (uw_fixed(&c, 1) != 8 || uw_fixed(&c, 1) != 0)) /* address, segment size */
		return -1;
	cie->code_align = uw_uleb(&c);
	cie->data_align = uw_sleb(&c);
	ra = version == 1 ? uw_fixed(&c, 1) : uw_uleb(&c);
	if (ra != DW_RA)
		return -1;
	cie->fde_enc = 0; /* absptr */
	cie->has_z = *aug == 'z';
	if (cie->has_z) {
		uint64_t len = uw_uleb(&c);

		if (c.bad || len > (uint64_t)(c.end - c.p))
			return -1;
		aug_end = c.p + len;
		for (aug++; *aug && !c.bad; aug++) {
			switch (*aug) {
			case 'R':
				cie->fde_enc = (uint8_t)uw_fixed(&c, 1);
				break;
			case 'P': {
				uint8_t enc = (uint8_t)uw_fixed(&c, 1);

				uw_enc(&c, enc & PE_FORMAT, 0); /* the personality: only its size matters */
				break;
			}
			case 'L':
				uw_fixed(&c, 1);
				break;
			case 'S': /* a signal frame: the walk stops at its CFI expressions */
			case 'B': /* aarch64: return addresses signed with the B key; stripped alike */
			case 'G': /* aarch64: MTE-tagged stack */
				break;
			default:
				goto skip; /* the length says where the rest ends */
			}
		}
	skip:
		c.p = aug_end;
	} else if (*aug) {
		return -1; /* pre-"z" augmentations ("eh"): not emitted these days */
	}
	if (c.bad || c.p > c.end)
		return -1;
	cie->insns = c.p;
	cie->end = c.end;
	return 0;
}

static int uw_col(uint64_t dw)
{
	return dw == DW_FP ? UW_FP : dw == DW_SP ? UW_SP : dw == DW_RA ? UW_RA : -1;
}

/*
 * Run CFA instructions [c) from location loc, while the location stays at
 * or below q: row ends as the row for q.  init is the CIE's row, which
 * DW_CFA_restore returns to.  0, or -1 on what cannot be followed.
 */
static int uw_run(struct uw_cur c, const struct uw_cie *cie, uint64_t loc, uint64_t q,
		  struct uw_row *row, const struct uw_row *init, uint64_t datarel)
{
	struct uw_row saved[UW_STATES];
	unsigned nsaved = 0;

	while (c.p < c.end && !c.bad) {
		uint8_t op = *c.p++, low = op & 0x3f;
		uint64_t reg = 0, delta = 0;
		int64_t off = 0;
		uint8_t how = 0xff;
		int col;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			delta = low;
			goto advance;
		case 2: /* DW_CFA_offset */
			reg = low;
			off = (int64_t)uw_uleb(&c) * cie->data_align;
			how = R_OFFSET;
			goto rule;
		case 3: /* DW_CFA_restore */
			reg = low;
			goto restore;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x01: /* set_loc */
			loc = uw_enc(&c, cie->fde_enc, datarel);
			if (loc > q)
				return c.bad ? -1 : 0;
			continue;
		case 0x02: /* advance_loc1 */
			delta = uw_fixed(&c, 1);
			goto advance;
		case 0x03: /* advance_loc2 */
			delta = uw_fixed(&c, 2);
			goto advance;
		case 0x04: /* advance_loc4 */
			delta = uw_fixed(&c, 4);
			goto advance;
		case 0x05: /* offset_extended */
			reg = uw_uleb(&c);
			off = (int64_t)uw_uleb(&c) * cie->data_align;
			how = R_OFFSET;
			goto rule;
		case 0x06: /* restore_extended */
			reg = uw_uleb(&c);
			goto restore;
		case 0x07: /* undefined */
			reg = uw_uleb(&c);
			how = R_UNDEF;
			goto rule;
		case 0x08: /* same_value */
			reg = uw_uleb(&c);
			how = R_SAME;
			goto rule;
		case 0x09: { /* register */
			uint64_t from;

			reg = uw_uleb(&c);
			from = uw_uleb(&c);
			col = uw_col(reg);
			if (col >= 0) {
				int src = uw_col(from);

				row->r[col].how = src >= 0 ? R_REG : R_BAD;
				row->r[col].reg = (uint8_t)(src >= 0 ? src : 0);
			}
			continue;
		}
		case 0x0a: /* remember_state */
			if (nsaved == UW_STATES)
				return -1;
			saved[nsaved++] = *row;
			continue;
		case 0x0b: /* restore_state */
			if (!nsaved)
				return -1;
			*row = saved[--nsaved];
			continue;
		case 0x0c: /* def_cfa */
			row->cfa_reg = uw_uleb(&c);
			row->cfa_off = (int64_t)uw_uleb(&c);
			continue;
		case 0x0d: /* def_cfa_register */
			row->cfa_reg = uw_uleb(&c);
			continue;
		case 0x0e: /* def_cfa_offset */
			row->cfa_off = (int64_t)uw_uleb(&c);
			continue;
		case 0x0f: { /* def_cfa_expression: not followed */
			uint64_t len = uw_uleb(&c);

			row->cfa_reg = ~0ull;
			if (c.bad || len > (uint64_t)(c.end - c.p))
				return -1;
			c.p += len;
			continue;
		}
		case 0x10:   /* expression */
		case 0x16: { /* val_expression: not followed; a register the walk needs fails it */
			uint64_t len;

			reg = uw_uleb(&c);
			len = uw_uleb(&c);
			if (c.bad || len > (uint64_t)(c.end - c.p))
				return -1;
			c.p += len;
			how = R_BAD;
			goto rule;
		}
		case 0x11: /* offset_extended_sf */
			reg = uw_uleb(&c);
			off = uw_sleb(&c) * cie->data_align;
			how = R_OFFSET;
			goto rule;
		case 0x12: /* def_cfa_sf */
			row->cfa_reg = uw_uleb(&c);
			row->cfa_off = uw_sleb(&c) * cie->data_align;
			continue;
		case 0x13: /* def_cfa_offset_sf */
			row->cfa_off = uw_sleb(&c) * cie->data_align;
			continue;
		case 0x14: /* val_offset */
			reg = uw_uleb(&c);
			off = (int64_t)uw_uleb(&c) * cie->data_align;
			how = R_VAL_OFFSET;
			goto rule;
		case 0x15: /* val_offset_sf */
			reg = uw_uleb(&c);
			off = uw_sleb(&c) * cie->data_align;
			how = R_VAL_OFFSET;
			goto rule;
		case 0x2e: /* GNU_args_size */
			uw_uleb(&c);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = uw_uleb(&c);
			off = -(int64_t)uw_uleb(&c) * cie->data_align;
			how = R_OFFSET;
			goto rule;
#if defined(__aarch64__)
		case 0x2d: /* AARCH64_negate_ra_state: return addresses are stripped whatever it says */
			continue;
#endif
		default:
			return -1;
		}
	advance:
		loc += delta * cie->code_align;
		if (loc > q)
			return c.bad ? -1 : 0;
		continue;
	rule:
		col = uw_col(reg);
		if (col >= 0 && !c.bad) {
			row->r[col].how = how;
			row->r[col].off = off;
		}
		continue;
	restore:
		col = uw_col(reg);
		if (col >= 0 && init)
			row->r[col] = init->r[col];
		continue;
	}
	return c.bad ? -1 : 0;
}

/* The FDE for q in the object whose .eh_frame_hdr is at hdr: 1 found, 0 none, -1 unreadable. */
static int uw_find(uint64_t hdr, uint64_t q, struct uw_row *row)
{
	const uint8_t *h = (const uint8_t *)(uintptr_t)hdr, *fde, *body, *end, *cie_at;
	uint32_t lo = 0, hi, n;
	uint64_t begin, range, cie_off;
	struct uw_cie cie;
	struct uw_row init;
	struct uw_cur c;

	/* version 1; eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
	if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		return -1;
	n = (uint32_t)uw_ld(h + 8, 4);
	hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (hdr + (uint64_t)(int64_t)(int32_t)uw_ld(h + 12 + 8 * (size_t)mid, 4) <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	fde = h + (int64_t)(int32_t)uw_ld(h + 12 + 8 * (size_t)(lo - 1) + 4, 4);
	end = uw_record(fde, &body);
	if (!end)
		return -1;
	c = (struct uw_cur){ body, end, 0 };
	cie_off = uw_fixed(&c, 4); /* 4 bytes in either format (LSB's .eh_frame) */
	cie_at = body - cie_off;
	if (!cie_off || uw_parse_cie(cie_at, &cie) < 0)
		return -1;
	begin = uw_enc(&c, cie.fde_enc, hdr);
	range = uw_enc(&c, cie.fde_enc & PE_FORMAT, 0);
	if (c.bad)
		return -1;
	if (q < begin || q - begin >= range)
		return 0; /* between functions: no CFI for q */
	if (cie.has_z) { /* the FDE's augmentation data (the LSDA): skipped by its length */
		uint64_t len = uw_uleb(&c);

		if (c.bad || len > (uint64_t)(c.end - c.p))
			return -1;
		c.p += len;
	}
	*row = (struct uw_row){ .cfa_reg = DW_SP, .cfa_off = 0 };
	row->r[UW_RA].how = R_SAME;
	if (uw_run((struct uw_cur){ cie.insns, cie.end, 0 }, &cie, begin, ~0ull, row, NULL, hdr) < 0)
		return -1;
	init = *row;
	return uw_run(c, &cie, begin, q, row, &init, hdr) < 0 ? -1 : 1;
}

static inline uint64_t uw_strip(uint64_t ra)
{
#if defined(__aarch64__)
	/* xpaclri (hint #7): strips a pointer authentication code from x30; a NOP without PAC */
	register uint64_t x30 __asm__("x30") = ra;

	__asm__("hint #7" : "+r"(x30));
	return x30;
#else
	return ra;
#endif
}

/* The .eh_frame_hdr of the object whose code holds pc, or 0. */
static uint64_t uw_obj(const struct hcs_obj *objs, uint32_t nobjs, uint64_t pc)
{
	for (uint32_t i = 0; i < nobjs; i++)
		if (pc >= __atomic_load_n(&objs[i].lo, __ATOMIC_RELAXED) &&
		    pc < __atomic_load_n(&objs[i].hi, __ATOMIC_RELAXED))
			return __atomic_load_n(&objs[i].eh_frame_hdr, __ATOMIC_RELAXED);
	return 0;
}

/* A walk: where it is, and the stack it may read. */
struct uw_frame {
	uint64_t pc;
	uint64_t reg[UW_NREG];
	uint64_t cfa; /* the last one: the next must be above */
	uint64_t lo, hi;
	int exact; /* pc is where the frame is, not a return address */
};

/* The caller's frame from row: 1 stepped, 0 the outermost frame, -1 cannot. */
static int uw_step(struct uw_frame *f, const struct uw_row *row)
{
	uint64_t v[UW_NREG], cfa;
	int ci = row->cfa_reg == ~0ull ? -1 : uw_col(row->cfa_reg);

	/* the outermost frame (_start): its CFA need not be above its callee's */
	if (row->r[UW_RA].how == R_UNDEF)
		return 0;
	if (ci < 0 || ci == UW_RA)
		return -1;
	cfa = f->reg[ci] + (uint64_t)row->cfa_off;
	if (cfa <= f->cfa || cfa <= f->reg[UW_SP] || cfa < f->lo || cfa >= f->hi)
		return -1;
	for (int r = 0; r < UW_NREG; r++) {
		const struct uw_rule *u = &row->r[r];
		uint64_t at = cfa + (uint64_t)u->off;

		if (r == UW_SP)
			continue; /* the CFA is the caller's sp, on both architectures */
		switch (u->how) {
		case R_SAME:
			v[r] = f->reg[r];
			break;
		case R_UNDEF:
			v[r] = 0;
			break;
		case R_OFFSET:
			if (at < f->lo || at > f->hi - 8)
				return -1;
			v[r] = *(const uint64_t *)(uintptr_t)at;
			break;
		case R_VAL_OFFSET:
			v[r] = at;
			break;
		case R_REG:
			v[r] = f->reg[u->reg];
			break;
		default:
			return -1;
		}
	}
	v[UW_SP] = cfa;
	for (int r = 0; r < UW_NREG; r++)
		f->reg[r] = v[r];
	f->cfa = cfa;
	f->pc = uw_strip(v[UW_RA]);
	f->exact = 0;
	return f->pc ? 1 : 0;
}

/*
 * The walk from f: return addresses outside [skip_lo, skip_hi) into
 * out[max], innermost first; *bad set if it ended on what it could not
 * follow.  Returns how many.
 */
static uint32_t uw_walk(struct uw_frame *f, const struct hcs_obj *objs, uint32_t nobjs,
			uint64_t skip_lo, uint64_t skip_hi, uint64_t *out, uint32_t max, int *bad)
{
	uint32_t n = 0;

	*bad = 0;
	/* a frame per step, each with a CFA above the last: ends within 64 MiB / 8 steps */
	while (n < max) {
		struct uw_row row;
		uint64_t hdr = uw_obj(objs, nobjs, f->pc), q = f->exact ? f->pc : f->pc - 1;
		int r;

		if (!hdr)
			break; /* code no object holds: not CFI we know */
		r = uw_find(hdr, q, &row);
		if (r <= 0) {
			*bad = r < 0;
			break;
		}
		r = uw_step(f, &row);
		if (r <= 0) {
			*bad = r < 0;
			break;
		}
		if (f->pc < skip_lo || f->pc >= skip_hi)
			out[n++] = f->pc;
	}
	return n;
}

/*
 * Unwind from here: the return addresses of the callers of this function
 * and up, as uw_walk() gives them.  The start is taken in one asm block,
 * so the CFI row at its pc describes the sp, fp (and lr) it reads.
 */
static __attribute__((noinline)) uint32_t uw_backtrace(const struct hcs_obj *objs, uint32_t nobjs,
						       uint64_t skip_lo, uint64_t skip_hi,
						       uint64_t *out, uint32_t max, int *bad)
{
	struct uw_frame f = { .exact = 1 };
	uint32_t n;

#if defined(__x86_64__)
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(f.pc), "=r"(f.reg[UW_SP]), "=r"(f.reg[UW_FP]));
	f.reg[UW_RA] = 0; /* a column, no register: its rule always says where */
#else
	__asm__ volatile("adr %0, .\n\t"
			 "mov %1, sp\n\t"
			 "mov %2, x29\n\t"
			 "mov %3, x30"
			 : "=r"(f.pc), "=r"(f.reg[UW_SP]), "=r"(f.reg[UW_FP]), "=r"(f.reg[UW_RA]));
#endif
	f.lo = f.reg[UW_SP];
	f.hi = f.lo + UW_SPAN < f.lo ? ~0ull : f.lo + UW_SPAN;
	f.cfa = f.lo - 1;
	n = uw_walk(&f, objs, nobjs, skip_lo, skip_hi, out, max, bad);
	/* no tail call: this frame, which the walk reads, must outlive it */
	__asm__ volatile("" : : "r"(n) : "memory");
	return n;
}
