// SPDX-License-Identifier: MIT
/*
 * ehhdr.c: the binary search table GNU ld's --eh-frame-hdr writes, made
 * from .eh_frame itself (the LSB's "Exception Frame" and ".eh_frame_hdr"
 * sections): walk the CIE and FDE records, decode each FDE's initial
 * location with its CIE's 'R' encoding, sort.  Every read is bounded by the
 * section's length; the section is the target's, so nothing in it is
 * trusted.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ehhdr.h"

/* DW_EH_PE_* */
#define PE_ABSPTR 0x00
#define PE_FORMAT 0x0f
#define PE_PCREL 0x10
#define PE_APPL 0x70
#define PE_INDIRECT 0x80
#define PE_OMIT 0xff

#define HINT_BAD "the object's .eh_frame is damaged: stacks through it cannot be unwound by CFI"
#define HINT_FAR "the table must be mapped within 2 GiB of the object's .eh_frame and code"

/* A cursor over eh[off..end): a read past end sets bad and yields 0. */
struct rd {
	const uint8_t *p;
	size_t off, end;
	bool bad;
};

static uint64_t rd_fixed(struct rd *r, unsigned int n)
{
	uint64_t v = 0;

	if (r->bad || r->off > r->end || r->end - r->off < n) {
		r->bad = true;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++) /* little-endian on both arches */
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	return v;
}

/* ULEB128/SLEB128; bits past the 64th are dropped (no shift by 64 or more: undefined in C). */
static uint64_t rd_leb(struct rd *r, bool sign)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = (uint8_t)rd_fixed(r, 1);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !r->bad);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

/* A value format DW_EH_PE_* names: absptr, uleb128, udata2/4/8, sleb128, sdata2/4/8. */
static bool fmt_ok(uint8_t enc)
{
	uint8_t f = enc & PE_FORMAT;

	return f <= 0x04 || (f >= 0x09 && f <= 0x0c);
}

/* An encoding an .eh_frame FDE's pc_begin may have: absolute or pcrel, never indirect. */
static bool fde_enc_ok(uint8_t enc)
{
	return fmt_ok(enc) && !(enc & PE_INDIRECT) &&
	       ((enc & PE_APPL) == PE_ABSPTR || (enc & PE_APPL) == PE_PCREL);
}

/*
 * A value in encoding enc (fde_enc_ok's, or a format alone); at is the
 * runtime address of the field, the base of pcrel.  *raw: the value as
 * stored.  64-bit targets only, so absptr is 8 bytes.
 */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t at, uint64_t *raw)
{
	uint64_t v;

	switch (enc & PE_FORMAT) {
	case 0x00: v = rd_fixed(r, 8); break;
	case 0x01: v = rd_leb(r, false); break;
	case 0x02: v = rd_fixed(r, 2); break;
	case 0x03: v = rd_fixed(r, 4); break;
	case 0x04: v = rd_fixed(r, 8); break;
	case 0x09: v = rd_leb(r, true); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
	case 0x0c: v = rd_fixed(r, 8); break;
	default: r->bad = true; return 0;
	}
	if (raw)
		*raw = v;
	return (enc & PE_APPL) == PE_PCREL ? v + at : v;
}

/*
 * The record at off: 1 with its body (after the length) and end, 0 for the
 * zero terminator, -1 if it overruns the section.  Only the length has a
 * 64-bit form (0xffffffff, then 8 bytes); CIE ids and pointers stay 4 bytes
 * in .eh_frame, as libgcc and the sampler's unwinder read them.
 */
static int record(const uint8_t *eh, size_t len, size_t off, size_t *body, size_t *end)
{
	struct rd r = { eh, off, len, false };
	uint64_t n = rd_fixed(&r, 4);

	if (n == 0 && !r.bad)
		return 0;
	if (n == 0xffffffffu)
		n = rd_fixed(&r, 8);
	if (r.bad || n < 4 || n > len - r.off)
		return -1;
	*body = r.off;
	*end = r.off + (size_t)n;
	return 1;
}

/*
 * The FDE pointer encoding of the CIE at off ("R", else absptr): NULL, or
 * why it has none, with *code HC_E_FORMAT or HC_E_UNSUPPORTED.
 */
static const char *cie_enc(const uint8_t *eh, size_t len, size_t off, uint8_t *enc,
			   enum hc_errc *code)
{
	size_t body, end, aug, aug_end;
	struct rd r;
	uint8_t version;

	*code = HC_E_FORMAT;
	*enc = PE_ABSPTR;
	if (record(eh, len, off, &body, &end) != 1)
		return "is not a record";
	r = (struct rd){ eh, body, end, false };
	if (rd_fixed(&r, 4) != 0)
		return "is not a CIE";
	version = (uint8_t)rd_fixed(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return "has an unknown version";
	aug = r.off;
	while (r.off < r.end && eh[r.off])
		r.off++;
	if (rd_fixed(&r, 1) != 0 || r.bad)
		return "has an unterminated augmentation string";
	if (version == 4 && (rd_fixed(&r, 1) != 8 || rd_fixed(&r, 1) != 0)) /* address, segment size */
		return "has an address size other than 8";
	rd_leb(&r, false); /* code alignment */
	rd_leb(&r, true);  /* data alignment */
	if (version == 1)
		rd_fixed(&r, 1); /* return address register */
	else
		rd_leb(&r, false);
	if (eh[aug] && eh[aug] != 'z')
		return "has a pre-\"z\" augmentation";
	if (eh[aug] == 'z') {
		uint64_t n = rd_leb(&r, false);

		if (r.bad || n > r.end - r.off)
			return "has augmentation data past its end";
		aug_end = r.off + (size_t)n;
		r.end = aug_end; /* the letters' data may not overrun its stated length */
		for (aug++; eh[aug] && !r.bad; aug++) {
			switch (eh[aug]) {
			case 'R':
				*enc = (uint8_t)rd_fixed(&r, 1);
				break;
			case 'P': { /* the personality: only its size matters */
				uint8_t penc = (uint8_t)rd_fixed(&r, 1);

				if (penc == PE_OMIT || !fmt_ok(penc))
					return "has a bad personality encoding";
				rd_ptr(&r, penc & PE_FORMAT, 0, NULL);
				break;
			}
			case 'L': /* the LSDA's encoding: the FDEs' augmentation data, not read here */
				rd_fixed(&r, 1);
				break;
			case 'S': /* a signal frame */
			case 'B': /* aarch64: return addresses signed with the B key */
			case 'G': /* aarch64: MTE-tagged stack frames */
				break;
			default: /* unknown from here on: the length says where the data ends */
				goto done;
			}
		}
	done:
		if (r.bad)
			return "has augmentation data past its end";
	} else if (r.bad) {
		return "is truncated";
	}
	if (!fde_enc_ok(*enc)) {
		*code = HC_E_UNSUPPORTED;
		return "has an FDE encoding .eh_frame may not use";
	}
	return NULL;
}

struct ent {
	uint64_t loc;
	size_t off; /* the FDE's offset in the section: its order there */
};

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->loc != y->loc)
		return x->loc < y->loc ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* v - base as a signed 32-bit offset, if it is one. */
static bool off32(uint64_t v, uint64_t base, int32_t *out)
{
	int64_t d = (int64_t)(v - base);

	*out = (int32_t)d;
	return d == (int64_t)*out;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A few CIEs serve all of an object's FDEs: a direct-mapped cache of their encodings. */
#define CIE_CACHE 64

uint8_t *ehhdr_build(const uint8_t *eh, size_t len, uint64_t eh_addr, uint64_t hdr_addr,
		     size_t *out_len, struct hc_err *err)
{
	struct {
		size_t off;
		uint8_t enc;
	} cache[CIE_CACHE];
	struct ent *v = NULL;
	size_t n = 0, cap = 0, off, body, end, keep, out_sz;
	uint8_t *out = NULL;
	int32_t d;
	int rc;

	for (int i = 0; i < CIE_CACHE; i++)
		cache[i].off = SIZE_MAX;
	for (off = 0; off < len; off = end) {
		struct rd r;
		uint64_t id, loc, raw, range;
		size_t cie;
		uint8_t enc;
		enum hc_errc code;
		const char *why;

		rc = record(eh, len, off, &body, &end);
		if (rc == 0)
			break; /* the terminator (crtend.o's) */
		if (rc < 0) {
			err_sethint(err, HC_E_FORMAT, 0, HINT_BAD,
				    ".eh_frame record at offset %#zx overruns the section (%zu bytes)",
				    off, len);
			goto fail;
		}
		r = (struct rd){ eh, body, end, false };
		id = rd_fixed(&r, 4);
		if (id == 0)
			continue; /* a CIE: read when an FDE names it */
		if (id > body) {
			err_sethint(err, HC_E_FORMAT, 0, HINT_BAD,
				    ".eh_frame FDE at offset %#zx points before the section", off);
			goto fail;
		}
		cie = body - (size_t)id; /* relative to the pointer's own position */
		if (cache[cie % CIE_CACHE].off == cie) {
			enc = cache[cie % CIE_CACHE].enc;
		} else if ((why = cie_enc(eh, len, cie, &enc, &code))) {
			err_sethint(err, code, 0, HINT_BAD, ".eh_frame FDE at offset %#zx: its CIE at %#zx %s", off,
				    cie, why);
			goto fail;
		} else {
			cache[cie % CIE_CACHE].off = cie;
			cache[cie % CIE_CACHE].enc = enc;
		}
		loc = rd_ptr(&r, enc, eh_addr + r.off, &raw);
		range = rd_ptr(&r, enc & PE_FORMAT, 0, NULL);
		if (r.bad) {
			err_sethint(err, HC_E_FORMAT, 0, HINT_BAD,
				    ".eh_frame FDE at offset %#zx is truncated", off);
			goto fail;
		}
		/*
		 * A zero location is a function in a discarded section (its
		 * relocation resolved to 0, or to the field itself under pcrel);
		 * an empty range covers nothing.
		 */
		if (!loc || !raw || !range)
			continue;
		if (n == cap) {
			struct ent *nv;

			if (cap >= EHHDR_MAX_FDES) {
				err_sethint(err, HC_E_UNSUPPORTED, 0, HINT_BAD,
					    ".eh_frame has more than %u FDEs", EHHDR_MAX_FDES);
				goto fail;
			}
			cap = cap ? cap * 2 : 256;
			if (cap > EHHDR_MAX_FDES)
				cap = EHHDR_MAX_FDES;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err_set(err, HC_E_NOMEM, 0, "no memory for %zu .eh_frame_hdr entries",
					cap);
				goto fail;
			}
			v = nv;
		}
		v[n++] = (struct ent){ loc, off };
	}

	/* sorted, ties in section order: the first FDE at an address wins, as in ld's */
	if (n)
		qsort(v, n, sizeof(*v), ent_cmp);
	for (size_t i = keep = 0; i < n; i++)
		if (!keep || v[i].loc != v[keep - 1].loc)
			v[keep++] = v[i];
	n = keep;

	out_sz = 12 + 8 * n;
	out = malloc(out_sz);
	if (!out) {
		err_set(err, HC_E_NOMEM, 0, "no memory for a %zu-byte .eh_frame_hdr", out_sz);
		goto fail;
	}
	out[0] = 1;    /* version */
	out[1] = 0x1b; /* eh_frame_ptr: pcrel | sdata4 */
	out[2] = 0x03; /* fde_count: udata4 */
	out[3] = 0x3b; /* table: datarel | sdata4 */
	if (!off32(eh_addr, hdr_addr + 4, &d)) {
		err_sethint(err, HC_E_UNSUPPORTED, 0, HINT_FAR,
			    ".eh_frame at %#llx is more than 2 GiB from an .eh_frame_hdr at %#llx",
			    (unsigned long long)eh_addr, (unsigned long long)hdr_addr);
		goto fail;
	}
	put32(out + 4, (uint32_t)d);
	put32(out + 8, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		int32_t dl, df;

		if (!off32(v[i].loc, hdr_addr, &dl) || !off32(eh_addr + v[i].off, hdr_addr, &df)) {
			err_sethint(err, HC_E_UNSUPPORTED, 0, HINT_FAR,
				    "function at %#llx (FDE at offset %#zx) is more than 2 GiB from an "
				    ".eh_frame_hdr at %#llx",
				    (unsigned long long)v[i].loc, v[i].off,
				    (unsigned long long)hdr_addr);
			goto fail;
		}
		put32(out + 12 + 8 * i, (uint32_t)dl);
		put32(out + 16 + 8 * i, (uint32_t)df);
	}
	free(v);
	*out_len = out_sz;
	return out;
fail:
	free(out);
	free(v);
	return NULL;
}

int ehhdr_rebase(uint8_t *tab, size_t len, uint64_t from, uint64_t to, struct hc_err *err)
{
	uint32_t n;

	if (len < 12 || tab[0] != 1 || tab[1] != 0x1b || tab[2] != 0x03 || tab[3] != 0x3b ||
	    (n = (uint32_t)tab[8] | (uint32_t)tab[9] << 8 | (uint32_t)tab[10] << 16 |
		 (uint32_t)tab[11] << 24,
	     (len - 12) / 8 < n))
		return err_set(err, HC_E_FORMAT, 0, "not a table ehhdr_build() made (%zu bytes)", len);
	/* eh_frame_ptr, then each entry's two offsets, all counted from the table's address */
	for (size_t i = 0; i < 1 + 2 * (size_t)n; i++) {
		uint8_t *p = tab + (i ? 8 + 4 * i : 4);
		int32_t v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				      (uint32_t)p[3] << 24), d;

		if (!off32(from + (uint64_t)(int64_t)v, to, &d))
			return err_sethint(err, HC_E_UNSUPPORTED, 0, HINT_FAR,
					   "an .eh_frame_hdr moved from %#llx to %#llx: an offset "
					   "no longer fits in 32 bits",
					   (unsigned long long)from, (unsigned long long)to);
		put32(p, (uint32_t)d);
	}
	return 0;
}
