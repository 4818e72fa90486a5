// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: ELF symbol reading on malformed files.  A target
 * controls both its files and its memory.  The input is handed to libelf
 * from memory (elf_memory(), no file per input) and read with
 * sym_load_elf(), the part of sym_load() after the file is open: .dynsym,
 * .symtab, .gnu_debugdata, and the .gnu_debuglink and build-id lookups of a
 * separate debug file; then looked up with sym_by_name() and sorted by
 * address (syms_sort()).  The same bytes, placed in this process's memory
 * right before an unmapped page, go through
 * obj_read_phdrs(), which reads the ELF and program headers from the
 * target's memory, and sym_load_mem(), which reads .dynsym there through
 * PT_DYNAMIC (pointers relocated or not, DT_HASH or DT_GNU_HASH).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_mem.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd = -2;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/*
	 * Nothing under this path exists: the debug file lookups find nothing.
	 * Its name names an allocator, so they and MiniDebugInfo are tried.
	 */
	static char path[] = "/nonexistent-heapctl-fuzz/libjemalloc.so";
	struct image t;
	struct obj o;
	struct hc_err err = { 0 };
	char *img;
	Elf *elf;

	if (memfd == -2) {
		memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
		elf_version(EV_CURRENT);
	}
	memset(&t, 0, sizeof(t));
	t.pid = getpid();
	t.memfd = memfd;
	t.arch = hc_arch_host();
	snprintf(t.proc, sizeof(t.proc), "/nonexistent-heapctl-fuzz");

	/* libelf may write into the image it is given: a copy of exactly the input */
	img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	elf = elf_memory(img, size);
	memset(&o, 0, sizeof(o));
	o.path = path;
	o.open_path = path;
	o.bias = 0x1000;
	if (sym_load_elf(&t, &o, elf, true, &err) == 0) {
		sym_by_name(&o, "mallctl");
		for (size_t i = 0; i < o.nsyms + o.ndata; i++)
			if (!o.syms[i].name || !memchr(o.syms[i].name, 0, 4096))
				__builtin_trap();
		/* the addresses are the input's, any 64 bits: sorted, names kept with them */
		syms_sort(o.syms, o.nsyms);
		for (size_t i = 1; i < o.nsyms; i++)
			if (o.syms[i - 1].raddr > o.syms[i].raddr || !o.syms[i].name)
				__builtin_trap();
	}
	if (elf)
		elf_end(elf);
	free(img);
	free(o.syms);
	free(o.strs);
	free(o.debug_path);

	/* The headers read from "target" memory: a page-aligned copy of the input. */
	if (size >= sizeof(Elf64_Ehdr)) {
		size_t len;
		uint8_t *mem = fz_copy_paged(data, size, &len); /* whatever follows is unmapped */

		if (mem) {
			memset(&o, 0, sizeof(o));
			memset(&err, 0, sizeof(err));
			o.base = (uint64_t)(uintptr_t)mem;
			o.lo = o.base;
			o.hi = o.base + len;
			o.path = path;
			o.is_exe = data[0] & 1;
			/* then .dynsym through PT_DYNAMIC, as for an object deleted since mapped */
			if (obj_read_phdrs(&t, &o, &err) == 0 &&
			    sym_load_mem(&t, &o, &err) == 0) {
				sym_by_name(&o, "mallctl");
				for (size_t i = 0; i < o.nsyms + o.ndata; i++)
					if (!o.syms[i].name || !memchr(o.syms[i].name, 0, 4096))
						__builtin_trap();
			}
			free(o.syms);
			free(o.strs);
		}
	}
	return 0;
}
