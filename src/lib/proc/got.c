// SPDX-License-Identifier: MIT
/*
 * got.c: where a loaded object calls the hooked functions through its GOT.
 * The dynamic section names the relocation tables (DT_RELA, and DT_JMPREL
 * when DT_PLTREL says RELA), the symbols (DT_SYMTAB) and their names
 * (DT_STRTAB, DT_STRSZ); a JUMP_SLOT or GLOB_DAT relocation of a hooked
 * name is a slot to patch.  Every read is bounded (got.h): PT_DYNAMIC's
 * size and at most 128 dynamic entries, tables under 64 MiB, symbol
 * indices under 2^20, names within DT_STRSZ.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "got.h"

/* A dynamic-section address: relocated by ld.so or not, depending on the arch and version. */
static uint64_t dyn_addr(const struct got_src *s, uint64_t v)
{
	return v < s->base ? v + s->bias : v;
}

struct dyn {
	uint64_t rela, relasz, jmprel, pltrelsz, symtab, strtab, strsz;
	int pltrel;
};

/*
 * The entries PT_DYNAMIC holds, no more: a small object's dynamic section
 * may end within 2 KiB of its last page, with nothing mapped after it
 * (.dynamic and .got alone in a RELRO segment).
 */
static int read_dyn(const struct got_src *s, struct dyn *d)
{
	Elf64_Dyn ents[GOT_MAX_DYN];
	size_t nents = s->dynamic_len / sizeof(Elf64_Dyn);

	memset(d, 0, sizeof(*d));
	if (nents > GOT_MAX_DYN)
		nents = GOT_MAX_DYN;
	if (!s->dynamic || !nents || s->read(s->arg, s->dynamic, ents, nents * sizeof(ents[0])) < 0)
		return -1;
	for (size_t i = 0; i < nents && ents[i].d_tag != DT_NULL; i++) {
		uint64_t v = ents[i].d_un.d_val;

		switch (ents[i].d_tag) {
		case DT_RELA: d->rela = dyn_addr(s, v); break;
		case DT_RELASZ: d->relasz = v; break;
		case DT_JMPREL: d->jmprel = dyn_addr(s, v); break;
		case DT_PLTRELSZ: d->pltrelsz = v; break;
		case DT_PLTREL: d->pltrel = (int)v; break;
		case DT_SYMTAB: d->symtab = dyn_addr(s, v); break;
		case DT_STRTAB: d->strtab = dyn_addr(s, v); break;
		case DT_STRSZ: d->strsz = v; break;
		default: break;
		}
	}
	/* x86_64 and aarch64 use RELA only; a REL table would be another arch's. */
	return d->symtab && d->strtab && d->strsz && d->strsz < GOT_MAX_TABLE ? 0 : -1;
}

void got_slots_from_dynamic(const struct got_src *s, struct hcs_slot *out, unsigned *n,
			    unsigned max)
{
	struct dyn d;
	char *strs = NULL;
	Elf64_Rela *rel = NULL;
	Elf64_Sym *syms = NULL;
	uint64_t tab_at[2], tab_len[2];

	if (read_dyn(s, &d) < 0)
		return;
	tab_at[0] = d.rela;
	tab_len[0] = d.relasz;
	tab_at[1] = d.pltrel == DT_RELA ? d.jmprel : 0;
	tab_len[1] = d.pltrelsz;
	strs = malloc(d.strsz + 1);
	if (!strs || s->read(s->arg, d.strtab, strs, d.strsz) < 0)
		goto out;
	strs[d.strsz] = 0;
	for (int k = 0; k < 2; k++) {
		size_t nrel = tab_len[k] / sizeof(Elf64_Rela);

		if (!tab_at[k] || !nrel || tab_len[k] > GOT_MAX_TABLE)
			continue;
		free(rel);
		rel = malloc(nrel * sizeof(*rel));
		if (!rel || s->read(s->arg, tab_at[k], rel, nrel * sizeof(*rel)) < 0)
			goto out;
		{
			/*
			 * The symbols the relocations name, in one read (no DT_ entry
			 * counts them).  64 bits: index 0xffffffff + 1 must not wrap
			 * to 0, or a smaller index after it would size the table.
			 */
			uint64_t nsym = 0;

			for (size_t i = 0; i < nrel; i++)
				if (ELF64_R_SYM(rel[i].r_info) >= nsym)
					nsym = ELF64_R_SYM(rel[i].r_info) + 1;
			free(syms);
			syms = nsym && nsym < GOT_MAX_SYMS ? malloc(nsym * sizeof(*syms)) : NULL;
			if (!syms || s->read(s->arg, d.symtab, syms, nsym * sizeof(*syms)) < 0)
				continue;
		}
		for (size_t i = 0; i < nrel && *n < max; i++) {
			uint32_t type = ELF64_R_TYPE(rel[i].r_info);
			uint32_t si = ELF64_R_SYM(rel[i].r_info);
			uint64_t slot = rel[i].r_offset + s->bias;
			int id, prot;

			if (!si || (type != s->r_jump_slot && type != s->r_glob_dat))
				continue;
			if (syms[si].st_name >= d.strsz ||
			    (id = s->hook(s->arg, strs + syms[si].st_name)) < 0)
				continue;
			prot = s->prot(s->arg, slot);
			if (prot < 0 || (slot & 7))
				continue;
			out[*n] = (struct hcs_slot){ .addr = slot, .id = (uint32_t)id,
						     .prot = (uint32_t)prot };
			(*n)++;
		}
	}
out:
	free(syms);
	free(rel);
	free(strs);
}
