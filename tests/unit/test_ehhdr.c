// SPDX-License-Identifier: MIT
/*
 * Unit test: ehhdr_build() (src/lib/proc/ehhdr.c).
 *
 *   ehhdr.synthetic   a hand-made .eh_frame: order, duplicates, empty and
 *                     discarded FDEs, the 64-bit length, every refusal
 *   ehhdr.linker.*    objects with a linker-made .eh_frame_hdr (this test,
 *                     libc.so.6): the same header and table, entry for entry
 *   ehhdr.static.*    static executables without one (a static fixture of
 *                     the build, busybox, bash-static): sorted, each entry's
 *                     FDE begins where the entry says, and the entry point
 *                     and the function symbols are found as the sampler's
 *                     unwinder looks them up (src/sampler/unwind.c, uw_find)
 *
 * Prints "PASS group", "FAIL group: detail" or "SKIP group: why"; exits 1 on
 * failure.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ehhdr.h"
#include "unit.h"

static uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ld64(const uint8_t *p)
{
	return ld32(p) | (uint64_t)ld32(p + 4) << 32;
}

/* ---- a hand-made section -------------------------------------------------------------- */

struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *s, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		s->b[s->n++] = (uint8_t)(v >> (8 * i));
}

/* A CIE with augmentation aug ("zR", "zPLR"...), FDE encoding enc; returns its offset. */
static size_t cie(struct buf *s, const char *aug, uint8_t enc)
{
	size_t at = s->n, len_at;

	put(s, 0, 4);
	len_at = s->n;
	put(s, 0, 4); /* id */
	put(s, 1, 1); /* version */
	memcpy(s->b + s->n, aug, strlen(aug) + 1);
	s->n += strlen(aug) + 1;
	put(s, 1, 1);    /* code alignment */
	put(s, 0x78, 1); /* data alignment -8 */
	put(s, 16, 1);   /* return address column */
	if (aug[0] == 'z') {
		size_t alen_at = s->n;

		put(s, 0, 1);
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R')
				put(s, enc, 1);
			if (*a == 'P') {
				put(s, 0x9b, 1); /* indirect pcrel sdata4 */
				put(s, 0x1234, 4);
			}
			if (*a == 'L')
				put(s, 0x1b, 1);
		}
		s->b[alen_at] = (uint8_t)(s->n - alen_at - 1);
	}
	while ((s->n - len_at) % 8)
		put(s, 0, 1); /* DW_CFA_nop */
	memcpy(s->b + at, &(uint32_t){ (uint32_t)(s->n - len_at) }, 4);
	return at;
}

/* An FDE of the CIE at cie_at, pc_begin/pc_range as 4 bytes each (with 'L': an empty LSDA). */
static size_t fde(struct buf *s, size_t cie_at, uint32_t begin, uint32_t range, bool ext,
		  bool lsda)
{
	size_t at = s->n, len_at;

	if (ext) {
		put(s, 0xffffffffu, 4);
		put(s, 0, 8);
	} else {
		put(s, 0, 4);
	}
	len_at = s->n;
	put(s, s->n - cie_at, 4);
	put(s, begin, 4);
	put(s, range, 4);
	if (lsda) {
		put(s, 4, 1);
		put(s, 0, 4);
	}
	while ((s->n - len_at) % 4)
		put(s, 0, 1);
	if (ext)
		memcpy(s->b + at + 4, &(uint64_t){ s->n - len_at }, 8);
	else
		memcpy(s->b + at, &(uint32_t){ (uint32_t)(s->n - len_at) }, 4);
	return at;
}

#define EH 0x500000ull  /* the section's address */
#define HDR 0x600000ull /* the table's */

static uint8_t *build(const struct buf *s, uint64_t hdr, size_t *n, struct hc_err *err)
{
	uint8_t *copy = malloc(s->n), *h; /* exactly its size: ASan sees an overread */

	memcpy(copy, s->b, s->n);
	memset(err, 0, sizeof(*err));
	h = ehhdr_build(copy, s->n, EH, hdr, n, err);
	free(copy);
	return h;
}

static void test_synthetic(void)
{
	struct buf s = { .n = 0 };
	struct hc_err err;
	size_t c1, c2, f[8], n;
	uint8_t *h;
	/* pcrel: pc_begin is relative to its own field, 8 bytes into the FDE (12 in the 64-bit form) */
#define PCREL(at, fn, ext) ((uint32_t)((fn) - (EH + (at) + ((ext) ? 16 : 8))))

	begin("ehhdr.synthetic");
	c1 = cie(&s, "zR", 0x1b);
	f[0] = s.n;
	fde(&s, c1, PCREL(f[0], 0x401300, false), 0x10, false, false);
	f[1] = s.n;
	fde(&s, c1, PCREL(f[1], 0x401100, true), 0x20, true, false); /* 64-bit length */
	f[2] = s.n;
	fde(&s, c1, PCREL(f[2], 0x401100, false), 0x30, false, false); /* duplicate: dropped */
	f[3] = s.n;
	fde(&s, c1, PCREL(f[3], 0x401400, false), 0, false, false); /* empty: dropped */
	f[4] = s.n;
	fde(&s, c1, 0, 0x10, false, false); /* discarded (pcrel 0): dropped */
	c2 = cie(&s, "zPLR", 0x03);         /* absolute udata4, a personality, LSDAs */
	f[5] = s.n;
	fde(&s, c2, 0x401200, 0x40, false, true);
	f[6] = s.n;
	fde(&s, c2, 0, 0x40, false, true); /* discarded (absolute 0): dropped */
	put(&s, 0, 4);                      /* terminator */
	put(&s, 0xdeadbeef, 4);             /* after it: never read */

	h = build(&s, HDR, &n, &err);
	CHECK(h && n == 12 + 3 * 8, "built %p, %zu bytes: %s", (void *)h, n, err.msg);
	if (h && n == 12 + 3 * 8) {
		static const uint8_t hd[4] = { 1, 0x1b, 0x03, 0x3b };
		static const uint64_t loc[3] = { 0x401100, 0x401200, 0x401300 };
		const size_t at[3] = { f[1], f[5], f[0] };

		CHECK(!memcmp(h, hd, 4), "header %02x %02x %02x %02x", h[0], h[1], h[2], h[3]);
		CHECK(HDR + 4 + (int64_t)(int32_t)ld32(h + 4) == EH, "eh_frame_ptr %#x", ld32(h + 4));
		CHECK(ld32(h + 8) == 3, "fde_count %u", ld32(h + 8));
		for (int i = 0; i < 3; i++) {
			CHECK(HDR + (int64_t)(int32_t)ld32(h + 12 + 8 * i) == loc[i],
			      "entry %d: location %#x", i, ld32(h + 12 + 8 * i));
			CHECK(HDR + (int64_t)(int32_t)ld32(h + 16 + 8 * i) == EH + at[i],
			      "entry %d: FDE %#x, want offset %#zx", i, ld32(h + 16 + 8 * i), at[i]);
		}
	}
	free(h);

	/* 2 GiB away: the offsets no longer fit */
	h = build(&s, EH + (3ull << 30), &n, &err);
	CHECK(!h && err.code == HC_E_UNSUPPORTED, "hdr 3 GiB away: %p, code %d", (void *)h, err.code);
	free(h);

	/* every prefix: refused or built, never read past its end (ASan in SAN=1) */
	for (size_t cut = 0; cut < f[6]; cut++) {
		struct buf t = s;

		t.n = cut;
		free(build(&t, HDR, &n, &err));
	}
	{ /* cut inside the second FDE: it overruns */
		struct buf t = s;

		t.n = f[1] + 10;
		h = build(&t, HDR, &n, &err);
		CHECK(!h && err.code == HC_E_FORMAT, "truncated: %p, code %d", (void *)h, err.code);
		free(h);
	}
	{ /* an empty section: an empty table */
		struct buf t = { .n = 0 };

		h = build(&t, HDR, &n, &err);
		CHECK(h && n == 12 && ld32(h + 8) == 0, "empty: %p %zu", (void *)h, n);
		free(h);
	}

	/* encodings an .eh_frame FDE may not use: datarel, textrel, funcrel, aligned, indirect */
	static const uint8_t bad_enc[] = { 0x3b, 0x2b, 0x4b, 0x5b, 0x9b, 0x05, 0xff };
	for (size_t i = 0; i < sizeof(bad_enc); i++) {
		struct buf t = { .n = 0 };
		size_t c = cie(&t, "zR", bad_enc[i]);

		fde(&t, c, 0x1000, 0x10, false, false);
		h = build(&t, HDR, &n, &err);
		CHECK(!h && err.code == HC_E_UNSUPPORTED, "encoding %#x: %p, code %d", bad_enc[i],
		      (void *)h, err.code);
		free(h);
	}
	{ /* a CIE pointer before the section, and one to an FDE */
		struct buf t = { .n = 0 };
		size_t c = cie(&t, "zR", 0x1b), g;

		g = fde(&t, c, 0x1000, 0x10, false, false);
		fde(&t, g, 0x1000, 0x10, false, false);
		h = build(&t, HDR, &n, &err);
		CHECK(!h && err.code == HC_E_FORMAT, "CIE pointer to an FDE: %p, code %d",
		      (void *)h, err.code);
		free(h);
		memcpy(t.b + g + 4, &(uint32_t){ 0x1000 }, 4);
		h = build(&t, HDR, &n, &err);
		CHECK(!h && err.code == HC_E_FORMAT, "CIE pointer before the section: %p, code %d",
		      (void *)h, err.code);
		free(h);
	}
	end();
}

/* ---- real objects --------------------------------------------------------------------- */

struct obj {
	int fd;
	Elf *elf;
	GElf_Ehdr eh;
	Elf_Data *eh_frame, *hdr;
	uint64_t eh_addr, hdr_addr, end; /* end: the highest PT_LOAD's */
	Elf_Scn *symtab;
	bool has_pt_eh;
};

static int obj_open(const char *path, struct obj *o)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph;

	memset(o, 0, sizeof(*o));
	elf_version(EV_CURRENT);
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0)
		return -1;
	o->elf = elf_begin(o->fd, ELF_C_READ, NULL);
	if (!o->elf || !gelf_getehdr(o->elf, &o->eh) || elf_getshdrstrndx(o->elf, &shstrndx) ||
	    elf_getphdrnum(o->elf, &nph))
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph))
			return -1;
		o->has_pt_eh |= ph.p_type == PT_GNU_EH_FRAME;
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > o->end)
			o->end = ph.p_vaddr + ph.p_memsz;
	}
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(o->elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame") && sh.sh_type == SHT_PROGBITS) {
			o->eh_frame = elf_rawdata(scn, NULL);
			o->eh_addr = sh.sh_addr;
		} else if (!strcmp(name, ".eh_frame_hdr") && sh.sh_type == SHT_PROGBITS) {
			o->hdr = elf_rawdata(scn, NULL);
			o->hdr_addr = sh.sh_addr;
		} else if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !o->symtab)) {
			o->symtab = scn;
		}
	}
	return o->eh_frame ? 0 : -1;
}

static void obj_close(struct obj *o)
{
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
}

static void test_linker(const char *name, const char *path)
{
	char g[128];
	struct obj o;
	struct hc_err err = { 0 };
	uint8_t *h;
	size_t n;

	snprintf(g, sizeof(g), "ehhdr.linker.%s", name);
	begin(g);
	if (obj_open(path, &o) < 0 || !o.hdr) {
		printf("SKIP %s: %s %s\n", g, path,
		       o.fd < 0 ? "is missing" : "has no .eh_frame and .eh_frame_hdr");
		obj_close(&o);
		return;
	}
	h = ehhdr_build(o.eh_frame->d_buf, o.eh_frame->d_size, o.eh_addr, o.hdr_addr, &n, &err);
	CHECK(h, "%s: %s", path, err.msg);
	if (h) {
		const uint8_t *l = o.hdr->d_buf;
		uint32_t cnt = ld32(h + 8), lcnt = ld32(l + 8);

		CHECK(o.hdr->d_size >= 12 && !memcmp(h, l, 8), "header or eh_frame_ptr differ");
		CHECK(cnt == lcnt, "fde_count %u, the linker's %u", cnt, lcnt);
		CHECK(n == 12 + 8 * (size_t)cnt && o.hdr->d_size >= 12 + 8 * (size_t)lcnt,
		      "sizes: %zu, the linker's %zu", n, o.hdr->d_size);
		for (uint32_t i = 0; i < cnt && i < lcnt; i++)
			CHECK(ld64(h + 12 + 8 * (size_t)i) == ld64(l + 12 + 8 * (size_t)i),
			      "entry %u: (%#x, %#x), the linker's (%#x, %#x)", i,
			      ld32(h + 12 + 8 * i), ld32(h + 16 + 8 * i), ld32(l + 12 + 8 * i),
			      ld32(l + 16 + 8 * i));
		printf("  %s: %u FDEs, as the linker's\n", name, cnt);
	}
	free(h);
	/* built for another address and moved to the linker's: the same bytes */
	h = ehhdr_build(o.eh_frame->d_buf, o.eh_frame->d_size, o.eh_addr, o.hdr_addr + 0x12345678,
			&n, &err);
	CHECK(h && !ehhdr_rebase(h, n, o.hdr_addr + 0x12345678, o.hdr_addr, &err) &&
		      n <= o.hdr->d_size && !memcmp(h, o.hdr->d_buf, n),
	      "rebased to the linker's address, the table differs from the linker's: %s", err.msg);
	/* moved beyond 2 GiB of its object, or not a table: refused */
	memset(&err, 0, sizeof(err));
	CHECK(h && ehhdr_rebase(h, n, o.hdr_addr, o.hdr_addr + (3ull << 30), &err) &&
		      err.code == HC_E_UNSUPPORTED,
	      "a table moved 3 GiB away was taken");
	memset(&err, 0, sizeof(err));
	CHECK(h && ehhdr_rebase(h, 11, o.hdr_addr, o.hdr_addr, &err) && err.code == HC_E_FORMAT &&
		      ehhdr_rebase(h, n - 1, o.hdr_addr, o.hdr_addr, &err),
	      "a cut table was taken");
	free(h);
	obj_close(&o);
	end();
}

/*
 * The FDE at off: its initial location and range, decoded here apart from
 * ehhdr.c (the encodings gcc and ld write: pcrel or absolute, sdata4,
 * udata4 or 8 bytes).  0 if it cannot be read.
 */
static int fde_at(const uint8_t *eh, size_t len, uint64_t eh_addr, size_t off, uint64_t *loc,
		  uint64_t *range)
{
	size_t body = off + 4, cie, p;
	uint8_t enc = 0;
	const char *aug;
	uint32_t id;

	if (off + 16 > len || ld32(eh + off) == 0xffffffffu)
		return 0;
	id = ld32(eh + body);
	if (!id || id > body)
		return 0;
	cie = body - id;
	p = cie + 9; /* length, id, version 1 */
	if (cie + 12 > len || eh[cie + 8] != 1 || eh[p] != 'z')
		return 0;
	aug = (const char *)eh + p + 1;
	p += strlen((const char *)eh + p) + 1;
	while (p < len && (eh[p++] & 0x80)) /* code alignment */
		;
	while (p < len && (eh[p++] & 0x80)) /* data alignment */
		;
	p += 2; /* return address column (< 128), augmentation length (< 128) */
	for (; *aug && p < len; aug++) {
		if (*aug == 'R')
			enc = eh[p++];
		else if (*aug == 'P') /* the personality: 4 bytes (sdata4/udata4) or absptr's 8 */
			p += (eh[p] & 0x0f) == 0 ? 9 : 5;
		else if (*aug == 'L')
			p++;
		else if (*aug != 'S' && *aug != 'B' && *aug != 'G') /* no data */
			return 0;
	}
	if (p >= len)
		return 0;
	p = body + 4;
	switch (enc) {
	case 0x1b: /* pcrel sdata4 */
		*loc = eh_addr + p + (int64_t)(int32_t)ld32(eh + p);
		*range = ld32(eh + p + 4);
		return 1;
	case 0x03: /* udata4 */
		*loc = ld32(eh + p);
		*range = ld32(eh + p + 4);
		return 1;
	case 0x00: /* absptr */
		if (p + 16 > len)
			return 0;
		*loc = ld64(eh + p);
		*range = ld64(eh + p + 8);
		return 1;
	}
	return 0;
}

/* As uw_find: the last entry at or below q, and whether its FDE covers q. */
static bool lookup(const uint8_t *h, uint64_t hdr, const uint8_t *eh, size_t len, uint64_t eh_addr,
		   uint64_t q)
{
	uint32_t lo = 0, hi = ld32(h + 8);
	uint64_t loc, range, fde;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (hdr + (int64_t)(int32_t)ld32(h + 12 + 8 * (size_t)mid) <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	fde = hdr + (int64_t)(int32_t)ld32(h + 16 + 8 * (size_t)(lo - 1));
	return fde >= eh_addr && fde_at(eh, len, eh_addr, fde - eh_addr, &loc, &range) &&
	       q >= loc && q - loc < range;
}

static void test_static(const char *name, const char *path)
{
	char g[128];
	struct obj o;
	struct hc_err err = { 0 };
	uint64_t hdr;
	uint8_t *h;
	size_t n;

	snprintf(g, sizeof(g), "ehhdr.static.%s", name);
	if (obj_open(path, &o) < 0 || o.has_pt_eh) {
		printf("SKIP %s: %s %s\n", g, path,
		       o.fd < 0      ? "is missing" :
		       o.has_pt_eh ? "has a PT_GNU_EH_FRAME" :
				     "has no .eh_frame");
		obj_close(&o);
		return;
	}
	begin(g);
	/* where heapctl would map it: the page after the object's last */
	hdr = (o.end + 0xfff) & ~0xfffull;
	h = ehhdr_build(o.eh_frame->d_buf, o.eh_frame->d_size, o.eh_addr, hdr, &n, &err);
	CHECK(h, "%s: %s", path, err.msg);
	if (h) {
		const uint8_t *eh = o.eh_frame->d_buf;
		size_t len = o.eh_frame->d_size;
		uint32_t cnt = ld32(h + 8), bad = 0;
		uint64_t prev = 0;

		CHECK(cnt > 100 && n == 12 + 8 * (size_t)cnt, "%u FDEs, %zu bytes", cnt, n);
		CHECK(hdr + 4 + (int64_t)(int32_t)ld32(h + 4) == o.eh_addr, "eh_frame_ptr");
		for (uint32_t i = 0; i < cnt; i++) {
			uint64_t at = hdr + (int64_t)(int32_t)ld32(h + 12 + 8 * (size_t)i);
			uint64_t fde = hdr + (int64_t)(int32_t)ld32(h + 16 + 8 * (size_t)i);
			uint64_t loc = 0, range = 0;

			CHECK(!i || at > prev, "entry %u at %#llx after %#llx", i,
			      (unsigned long long)at, (unsigned long long)prev);
			prev = at;
			bad += !(fde >= o.eh_addr && fde - o.eh_addr < len &&
				 fde_at(eh, len, o.eh_addr, fde - o.eh_addr, &loc, &range) &&
				 loc == at && range > 0);
		}
		CHECK(!bad, "%u of %u entries name an FDE that does not begin there", bad, cnt);
		/* glibc's _start has CFI (it marks the return address undefined) */
		CHECK(lookup(h, hdr, eh, len, o.eh_addr, o.eh.e_entry), "entry point %#llx not found",
		      (unsigned long long)o.eh.e_entry);
		if (o.symtab) {
			static const char *const known[] = { "main", "malloc", "free", "exit" };
			GElf_Shdr sh;
			Elf_Data *d = elf_getdata(o.symtab, NULL);
			size_t nsym = 0, found = 0, nknown = 0, nrec = 0, cap = 0;
			struct {
				uint64_t loc, range;
			} *all = NULL;

			/* every FDE, walked here: a function is found iff one covers it */
			for (size_t off = 0; off + 8 <= len && ld32(eh + off) &&
			     ld32(eh + off) != 0xffffffffu; off += 4 + (size_t)ld32(eh + off)) {
				uint64_t loc, range;

				if (!ld32(eh + off + 4) ||
				    !fde_at(eh, len, o.eh_addr, off, &loc, &range) || !loc || !range)
					continue;
				if (nrec == cap && !(all = realloc(all, (cap = cap * 2 + 64) * sizeof(*all))))
					break;
				all[nrec].loc = loc;
				all[nrec++].range = range;
			}
			gelf_getshdr(o.symtab, &sh);
			for (size_t i = 0; all && d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize;
			     i++) {
				GElf_Sym sym;
				const char *sn;
				bool want = false, got;

				if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
				    !sym.st_value || !sym.st_size)
					continue;
				sn = elf_strptr(o.elf, sh.sh_link, sym.st_name);
				for (size_t k = 0; k < nrec && !want; k++)
					want = sym.st_value >= all[k].loc &&
					       sym.st_value - all[k].loc < all[k].range;
				got = lookup(h, hdr, eh, len, o.eh_addr, sym.st_value);
				CHECK(got == want, "%s at %#llx: %s", sn ? sn : "?",
				      (unsigned long long)sym.st_value,
				      got ? "found, but no FDE covers it" : "not found");
				nsym++;
				found += got;
				for (size_t k = 0; k < sizeof(known) / sizeof(*known); k++)
					if (sn && !strcmp(sn, known[k])) {
						nknown++;
						CHECK(got, "%s not found", sn);
					}
			}
			free(all);
			CHECK(nknown >= 2, "only %zu of main, malloc, free, exit in .symtab", nknown);
			printf("  %s: %u FDEs; %zu of %zu functions found (the others have no CFI)\n",
			       name, cnt, found, nsym);
		} else {
			printf("  %s: %u FDEs; no .symtab or .dynsym: only the entry point looked up\n",
			       name, cnt);
		}
	}
	free(h);
	obj_close(&o);
	end();
}

int main(void)
{
	char fx[4096];
	const char *b = getenv("BUILD_DIR");

	test_synthetic();
	test_linker("self", "/proc/self/exe");
#if defined(__aarch64__)
	test_linker("libc", "/lib/aarch64-linux-gnu/libc.so.6");
#else
	test_linker("libc", "/lib/x86_64-linux-gnu/libc.so.6");
#endif
	snprintf(fx, sizeof(fx), "%s/victims/fx_jemalloc_static", b ? b : "build");
	test_static("fx_jemalloc_static", fx);
	test_static("busybox", "/bin/busybox");
	test_static("bash-static", "/usr/bin/bash-static");
	return nfailed != 0;
}
