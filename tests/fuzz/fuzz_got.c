// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the GOT slots heapctl's sampler patches, found through
 * a loaded object's dynamic section by got_slots_from_dynamic() (got.c):
 * DT_RELA and DT_JMPREL relocations, their symbols and names, all of it in
 * the target's memory and the target's to choose.
 *
 * The input is a 24-byte header and an object's image as the loader lays
 * it out (tests/data/got/gen.sh makes the seeds from real objects):
 *
 *   u32 dynamic    offset of PT_DYNAMIC in the image
 *   u32 relro_end  offset below which the image is read-only (text, RELRO)
 *   u64 vaddr      ELF address of the image's first byte (0: a shared object,
 *                  loaded at 0x7f1234560000; else a non-PIE executable, there)
 *   u8  flags      1: aarch64's relocation types, else x86_64's
 *                  2: the loader relocated the dynamic section's pointers
 *                  4: room for 4 slots only
 *   u8  pad[3]
 *   u32 dynamic_len  PT_DYNAMIC's p_memsz
 *
 * The image is read through the callback, from a copy of exactly its size
 * (ASan sees a read past it).  Checks: no crash; at most max slots, each
 * 8-aligned, inside the image, a hooked function's, with the protection
 * of its page.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "got.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 24
#define SO_BASE 0x7f1234560000ull

#define HOOK_NAME(id, name) name,
static const char *const hook_names[HCS_NHOOK] = { HCS_HOOKS(HOOK_NAME) };
#undef HOOK_NAME

struct image {
	const uint8_t *p;
	size_t len;
	uint64_t base, relro_end;
};

static int img_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	const struct image *m = arg;
	uint64_t off = raddr - m->base;

	if (raddr < m->base || off > m->len || len > m->len - off)
		return -1;
	memcpy(buf, m->p + off, len);
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

static int img_prot(void *arg, uint64_t raddr)
{
	const struct image *m = arg;

	if (raddr < m->base || raddr - m->base >= m->len)
		return -1;
	return raddr - m->base < m->relro_end ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* What glibc's loader does to a writable dynamic section (elf/get-dynamic-info.h). */
static void relocate_dynamic(uint8_t *img, size_t len, uint64_t dyn, uint64_t bias)
{
	for (uint64_t at = dyn; at <= len && len - at >= sizeof(Elf64_Dyn); at += 16) {
		Elf64_Dyn d;

		memcpy(&d, img + at, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_RELA || d.d_tag == DT_JMPREL || d.d_tag == DT_SYMTAB ||
		    d.d_tag == DT_STRTAB) {
			d.d_un.d_ptr += bias;
			memcpy(img + at, &d, sizeof(d));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hcs_slot out[HCS_MAXSLOTS];
	struct image m;
	struct got_src s;
	uint32_t dyn, relro_end, dyn_len;
	uint64_t vaddr;
	uint8_t flags, *img;
	unsigned n = 0, max;

	if (size < HDR)
		return 0;
	memcpy(&dyn, data, 4);
	memcpy(&relro_end, data + 4, 4);
	memcpy(&vaddr, data + 8, 8);
	flags = data[16];
	memcpy(&dyn_len, data + 20, 4);
	img = malloc(size - HDR ? size - HDR : 1);
	if (!img)
		return 0;
	memcpy(img, data + HDR, size - HDR);
	m.p = img;
	m.len = size - HDR;
	m.base = vaddr ? vaddr : SO_BASE;
	m.relro_end = relro_end;
	memset(&s, 0, sizeof(s));
	s.read = img_read;
	s.hook = img_hook;
	s.prot = img_prot;
	s.arg = &m;
	s.dynamic = m.base + dyn;
	s.dynamic_len = dyn_len;
	s.base = m.base;
	s.bias = m.base - vaddr;
	s.r_jump_slot = flags & 1 ? 1026 : 7; /* R_AARCH64_JUMP_SLOT, R_X86_64_JUMP_SLOT */
	s.r_glob_dat = flags & 1 ? 1025 : 6;  /* R_AARCH64_GLOB_DAT, R_X86_64_GLOB_DAT */
	if (flags & 2)
		relocate_dynamic(img, m.len, dyn, s.bias);
	max = flags & 4 ? 4 : HCS_MAXSLOTS;

	got_slots_from_dynamic(&s, out, &n, max);
	if (n > max)
		__builtin_trap();
	for (unsigned i = 0; i < n; i++)
		if ((out[i].addr & 7) || out[i].addr < m.base || out[i].addr - m.base >= m.len ||
		    out[i].id >= HCS_NHOOK || (int)out[i].prot != img_prot(&m, out[i].addr))
			__builtin_trap();
	free(img);
	return 0;
}
