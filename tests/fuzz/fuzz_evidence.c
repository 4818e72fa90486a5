// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the signs of an allocator heapctl looks for in an
 * object's read-only data when it has no symbols (evidence.c): a target
 * controls both its files and its memory.  The input is handed to libelf
 * from memory and read with evidence_elf(), the part of evidence_file()
 * after the file is open (read-only sections, or without section headers
 * the read-only PT_LOAD segments); the same bytes, placed in this
 * process's memory right before an unmapped page, go through
 * evidence_mem(), which reads the ELF and program headers and the
 * segments there.  Checks: no crash; a verdict names an allocator and
 * says, NUL-terminated, what was found.
 */
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence.h"
#include "fuzz_mem.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct evidence *ev)
{
	if (r > 0 && (!ev->alloc || !memchr(ev->found, 0, sizeof(ev->found)) || !ev->found[0]))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	struct evidence ev;
	char *img;
	Elf *elf;

	if (!init) {
		elf_version(EV_CURRENT);
		init = true;
	}
	/* libelf may write into the image it is given: a copy of exactly the input */
	img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	elf = elf_memory(img, size);
	if (elf) {
		check(evidence_elf(elf, &ev), &ev);
		elf_end(elf);
	}
	free(img);

	/* the loaded image: a page-aligned copy, its ELF address 0 at its start */
	if (size >= 64) {
		size_t len;
		uint8_t *mem = fz_copy_paged(data, size, &len);
		struct obj o;

		if (mem) {
			memset(&o, 0, sizeof(o));
			o.pid = getpid();
			o.base = (uint64_t)(uintptr_t)mem;
			o.bias = o.base;
			o.lo = o.base;
			o.hi = o.base + len;
			check(evidence_mem(&o, &ev), &ev);
		}
	}
	return 0;
}
