// SPDX-License-Identifier: MIT
/*
 * Unit test: got_slots_from_dynamic() finds in real objects
 * (tests/data/got/, made by gen.sh) exactly the slots `readelf -rW` lists
 * (NAME.relocs, stored beside them) as JUMP_SLOT or GLOB_DAT relocations
 * of the functions the sampler hooks, in the same order.  Each object is
 * laid out here as the loader would (its PT_LOAD segments at their
 * addresses, .bss zeroed, nothing mapped past its last page), with the
 * dynamic section's pointers as the file has them and relocated as
 * glibc's loader leaves them; the slots under RELRO are read-only, the
 * others writable.  Prints "PASS group" or "FAIL group: detail" per group;
 * exits 1 on failure.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "got.h"
#include "unit.h"

#define SO_BASE 0x7f1234560000ull

#define HOOK_NAME(id, name) name,
static const char *const hook_names[HCS_NHOOK] = { HCS_HOOKS(HOOK_NAME) };
#undef HOOK_NAME

/* An object as loaded: its image at base, and what the mappings allow. */
struct loaded {
	uint8_t *img;
	size_t len;
	uint64_t base, bias;
	uint64_t dynamic, dynamic_len; /* in the image's addresses */
	Elf64_Phdr ph[16];
	unsigned nph;
};

static const char *data_dir(void)
{
	return getenv("GOT_DATA") ? getenv("GOT_DATA") : "tests/data/got";
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n + 1)) && fread(b, 1, (size_t)n, f) == (size_t)n) {
		b[n] = 0;
		*len = (size_t)n;
	} else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static int load(const char *name, struct loaded *l)
{
	char path[512];
	size_t flen = 0;
	uint8_t *f;
	Elf64_Ehdr eh;
	uint64_t v0 = UINT64_MAX, end = 0;

	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "%s/%s", data_dir(), name);
	f = slurp(path, &flen);
	if (!f || flen < sizeof(eh)) {
		free(f);
		return -1;
	}
	memcpy(&eh, f, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phnum > 16 ||
	    eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > flen) {
		free(f);
		return -1;
	}
	l->nph = eh.e_phnum;
	memcpy(l->ph, f + eh.e_phoff, l->nph * sizeof(Elf64_Phdr));
	for (unsigned i = 0; i < l->nph; i++)
		if (l->ph[i].p_type == PT_LOAD) {
			if ((l->ph[i].p_vaddr & ~0xfffull) < v0)
				v0 = l->ph[i].p_vaddr & ~0xfffull;
			if (l->ph[i].p_vaddr + l->ph[i].p_memsz > end)
				end = l->ph[i].p_vaddr + l->ph[i].p_memsz;
		}
	/* the last page is whole, and nothing follows it */
	l->len = ((end + 0xfff) & ~0xfffull) - v0;
	l->img = calloc(1, l->len);
	l->base = eh.e_type == ET_EXEC ? v0 : SO_BASE;
	l->bias = l->base - v0;
	for (unsigned i = 0; l->img && i < l->nph; i++) {
		const Elf64_Phdr *p = &l->ph[i];

		if (p->p_type == PT_LOAD && p->p_offset + p->p_filesz <= flen)
			memcpy(l->img + (p->p_vaddr - v0), f + p->p_offset, p->p_filesz);
		if (p->p_type == PT_DYNAMIC) {
			l->dynamic = p->p_vaddr + l->bias;
			l->dynamic_len = p->p_memsz;
		}
	}
	free(f);
	return l->img && l->dynamic ? 0 : -1;
}

static int img_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	const struct loaded *l = arg;
	uint64_t off = raddr - l->base;

	if (raddr < l->base || off > l->len || len > l->len - off)
		return -1;
	memcpy(buf, l->img + off, len);
	return 0;
}

static int img_hook(void *arg, const char *name)
{
	(void)arg;
	for (int id = 0; id < HCS_NHOOK; id++)
		if (!strcmp(name, hook_names[id]))
			return id;
	return -1;
}

/* The PT_LOAD segment's flags, read-only where PT_GNU_RELRO is. */
static int img_prot(void *arg, uint64_t raddr)
{
	const struct loaded *l = arg;
	uint64_t v = raddr - l->bias;
	int prot = -1;

	for (unsigned i = 0; i < l->nph; i++) {
		const Elf64_Phdr *p = &l->ph[i];
		uint64_t lo = p->p_vaddr & ~0xfffull, hi = (p->p_vaddr + p->p_memsz + 0xfff) & ~0xfffull;

		if (p->p_type == PT_LOAD && v >= lo && v < hi)
			prot = ((p->p_flags & PF_R) ? PROT_READ : 0) |
			       ((p->p_flags & PF_W) ? PROT_WRITE : 0) |
			       ((p->p_flags & PF_X) ? PROT_EXEC : 0);
	}
	for (unsigned i = 0; prot >= 0 && i < l->nph; i++)
		if (l->ph[i].p_type == PT_GNU_RELRO && v >= l->ph[i].p_vaddr &&
		    v < l->ph[i].p_vaddr + l->ph[i].p_memsz)
			prot = PROT_READ;
	return prot;
}

/* What glibc's loader does to a writable dynamic section (elf/get-dynamic-info.h). */
static void relocate_dynamic(struct loaded *l)
{
	for (uint64_t at = l->dynamic - l->base; at + sizeof(Elf64_Dyn) <= l->len; at += 16) {
		Elf64_Dyn d;

		memcpy(&d, l->img + at, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_RELA || d.d_tag == DT_JMPREL || d.d_tag == DT_SYMTAB ||
		    d.d_tag == DT_STRTAB) {
			d.d_un.d_ptr += l->bias;
			memcpy(l->img + at, &d, sizeof(d));
		}
	}
}

/* readelf's JUMP_SLOT and GLOB_DAT lines of hooked names, as slots (addr, id). */
static unsigned golden(const char *name, const struct loaded *l, uint32_t js, uint32_t gd,
		       struct hcs_slot *out, unsigned max)
{
	char path[512];
	size_t len = 0;
	char *text, *line, *save = NULL;
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s/%s.relocs", data_dir(), name);
	text = (char *)slurp(path, &len);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long off, info, val;
		char type[64], sym[256], *at;
		int id;

		/* "0000000000003fd8  0000000300000007 R_X86_64_JUMP_SLOT  0000000000000000 calloc + 0" */
		if (sscanf(line, "%llx %llx %63s %llx %255s", &off, &info, type, &val, sym) != 5)
			continue;
		if ((uint32_t)info != js && (uint32_t)info != gd)
			continue;
		at = strchr(sym, '@'); /* malloc@GLIBC_2.2.5 */
		if (at)
			*at = 0;
		id = img_hook(NULL, sym);
		if (id < 0)
			continue;
		out[n].addr = off + l->bias;
		out[n].id = (uint32_t)id;
		out[n].prot = (uint32_t)img_prot((void *)l, out[n].addr);
		n++;
	}
	free(text);
	return n;
}

static void object(const char *name, bool a64, bool relocated, int want_prot, unsigned want_n)
{
	static struct hcs_slot got[HCS_MAXSLOTS], want[HCS_MAXSLOTS];
	uint32_t js = a64 ? 1026 : 7, gd = a64 ? 1025 : 6;
	struct loaded l;
	struct got_src s;
	unsigned n = 0, nw;
	char title[128];

	snprintf(title, sizeof(title), "got: %s%s matches readelf -r", name,
		 relocated ? " (pointers relocated)" : "");
	begin(title);
	if (load(name, &l) < 0) {
		CHECK(0, "cannot load %s/%s", data_dir(), name);
		end();
		return;
	}
	if (relocated)
		relocate_dynamic(&l);
	nw = golden(name, &l, js, gd, want, HCS_MAXSLOTS);
	s = (struct got_src){ .read = img_read, .hook = img_hook, .prot = img_prot, .arg = &l,
			      .dynamic = l.dynamic, .dynamic_len = l.dynamic_len,
			      .base = l.base, .bias = l.bias, .r_jump_slot = js, .r_glob_dat = gd };
	got_slots_from_dynamic(&s, got, &n, HCS_MAXSLOTS);
	CHECK(nw == want_n, "readelf lists %u hooked slots, not %u", nw, want_n);
	CHECK(n == nw, "%u slots found, readelf lists %u", n, nw);
	for (unsigned i = 0; i < n && i < nw; i++) {
		CHECK(got[i].addr == want[i].addr && got[i].id == want[i].id,
		      "slot %u: 0x%llx %s, readelf: 0x%llx %s", i, (unsigned long long)got[i].addr,
		      hook_names[got[i].id % HCS_NHOOK], (unsigned long long)want[i].addr,
		      hook_names[want[i].id % HCS_NHOOK]);
		CHECK((int)got[i].prot == want_prot, "slot %u (%s): prot %u, not %d", i,
		      hook_names[got[i].id % HCS_NHOOK], got[i].prot, want_prot);
	}
	/* room for 3: the first 3, in the same order */
	n = 0;
	got_slots_from_dynamic(&s, got, &n, 3);
	CHECK(n == (nw < 3 ? nw : 3) && (n < 1 || got[0].addr == want[0].addr) &&
	      (n < 3 || got[2].addr == want[2].addr), "with room for 3: %u slots", n);
	free(l.img);
	end();
}

int main(void)
{
	int rw = PROT_READ | PROT_WRITE;

	/* malloc, free (GLOB_DAT); _Znwm, calloc, _ZdlPvm, realloc, posix_memalign (JUMP_SLOT) */
	object("lazy.so", false, false, rw, 7);
	object("lazy.so", false, true, rw, 7);
	object("relro.so", false, false, PROT_READ, 7);
	/* aarch64: malloc and free by GLOB_DAT and JUMP_SLOT both */
	object("a64.so", true, false, PROT_READ, 9);
	object("a64.so", true, true, PROT_READ, 9);
	/* glibc's crt: __libc_start_main and __gmon_start__ are not hooked */
	object("nopie", false, false, rw, 2);
	return nfailed != 0;
}
