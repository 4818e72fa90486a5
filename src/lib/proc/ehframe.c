// SPDX-License-Identifier: MIT
/*
 * Where an object's .eh_frame is, for one linked without .eh_frame_hdr
 * (gcc leaves it out of -static links; musl-gcc out of every link): the
 * freestanding sampler's unwinder needs the table heapctl then builds
 * (ehhdr.c).  Read from the file's section headers, as mapped.
 */
#include <gelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"

int obj_eh_frame(const struct obj *o, uint64_t *raddr, uint64_t *len)
{
	struct stat st;
	Elf *elf = sym_elf_open(obj_open(o, &st));
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int rc = -1;

	if (!elf)
		return -1;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0)
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
			    strcmp(name, ".eh_frame") || sh.sh_type != SHT_PROGBITS || !sh.sh_addr ||
			    !sh.sh_size)
				continue;
			*raddr = sh.sh_addr + o->bias;
			*len = sh.sh_size;
			rc = 0;
			break;
		}
	elf_end(elf);
	return rc;
}
