// SPDX-License-Identifier: MIT
/*
 * Unit test: the allocator signs of src/lib/proc/evidence.c over made-up
 * read-only data.  A stripped program's strings must name its allocator,
 * with the conf variable's real prefix; a program that only quotes the
 * signs (a help text, heapctl itself) must not be taken for one.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "evidence.h"
#include "image.h"
#include "unit.h"

/* Judge a .rodata made of the given strings, each NUL-terminated. */
static int judge_strs(const char *const *strs, struct evidence *ev)
{
	char buf[4096];
	size_t n = 0;

	/* a string of other text first: the signs are not at the start of the data */
	memcpy(buf, "other", 6);
	n = 6;
	for (size_t i = 0; strs[i]; i++) {
		size_t l = strlen(strs[i]) + 1;

		memcpy(buf + n, strs[i], l);
		n += l;
	}
	return evidence_strings(buf, n, ev);
}

/*
 * evidence_mem() on an image in this process: an ELF header, one read-only
 * PT_LOAD at 0x100 of filesz bytes holding the signs, mapped [lo, hi) of it.
 */
#define img_signs "other\0<jemalloc>: Error in malloc\0_RJEM_MALLOC_CONF"

static int mem_image(uint64_t filesz, size_t lo, size_t hi, struct evidence *ev)
{
	static const char text[] = img_signs;
	static _Alignas(4096) uint8_t img[4096];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	struct obj o;

	memset(img, 0, sizeof(img));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_phoff = sizeof(*eh);
	eh->e_phnum = 1;
	eh->e_phentsize = sizeof(*ph);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R;
	ph->p_vaddr = 0x100;
	ph->p_filesz = filesz;
	memcpy(img + 0x100, text, sizeof(text));
	memset(&o, 0, sizeof(o));
	o.pid = getpid();
	o.base = o.bias = (uint64_t)(uintptr_t)img;
	o.lo = o.base + lo;
	o.hi = o.base + hi;
	return evidence_mem(&o, ev);
}

/*
 * evidence_elf() on an ELF file in memory with one read-only section,
 * named name, holding the signs (and .shstrtab): a table section's
 * contents are passed over, a string section's read.
 */
static int elf_one_section(const char *name, struct evidence *ev)
{
	static const char text[] = img_signs;
	static uint8_t img[4096];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + 1024);
	char *names = (char *)img + 512;
	size_t nl = strlen(name) + 1;
	Elf *elf;
	int r;

	memset(img, 0, sizeof(img));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = 1024;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	/* the names: "\0" name "\0" ".shstrtab\0" */
	memcpy(names + 1, name, nl);
	memcpy(names + 1 + nl, ".shstrtab", 10);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_offset = 256;
	sh[1].sh_size = sizeof(text);
	memcpy(img + 256, text, sizeof(text));
	sh[2].sh_name = (Elf64_Word)(1 + nl);
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = 512;
	sh[2].sh_size = 1 + nl + 10;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, sizeof(img));
	if (!elf)
		return -2;
	r = evidence_elf(elf, ev);
	elf_end(elf);
	return r;
}

int main(void)
{
	struct evidence ev;

	begin("evidence-rjem");
	{
		static const char *const s[] = { "opt.prof", "_RJEM_MALLOC_CONF",
						 "<jemalloc>: Invalid conf pair: %.*s:%.*s", NULL };

		CHECK(judge_strs(s, &ev) == 1, "no verdict");
		CHECK(ev.alloc && !strcmp(ev.alloc, "jemalloc"), "alloc %s", ev.alloc);
		CHECK(!strcmp(ev.found, "_RJEM_MALLOC_CONF string, \"<jemalloc>: \" messages"),
		      "found '%s'", ev.found);
	}
	end();

	begin("evidence-plain-jemalloc");
	{
		static const char *const s[] = { "MALLOC_CONF", "<jemalloc>: Error in atexit()",
						 NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "jemalloc") &&
			      !strncmp(ev.found, "MALLOC_CONF string", 18),
		      "found '%s'", ev.found);
	}
	end();

	begin("evidence-quoted-only");
	{
		/* heapctl's own kind of strings: hints that quote the signs */
		static const char *const s[] = {
			"restart the process with MALLOC_CONF=prof:true", "MALLOC_CONF",
			"<jemalloc>: ", "TCMALLOC_", "15MallocExtension", "mimalloc: warning: ",
			"tcmalloc: MallocExtension_GetNumericProperty at 0x%lx", NULL
		};

		CHECK(judge_strs(s, &ev) == 0, "taken for %s (%s)", ev.alloc, ev.found);
	}
	end();

	begin("evidence-tcmalloc");
	{
		static const char *const s[] = { "15MallocExtension",
						 "TCMALLOC_SAMPLE_PARAMETER", NULL };
		static const char *const one[] = { "TCMALLOC_SAMPLE_PARAMETER", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "tcmalloc"), "no tcmalloc");
		CHECK(judge_strs(one, &ev) == 0, "one weak sign is enough for %s", ev.alloc);
	}
	end();

	begin("evidence-mimalloc");
	{
		static const char *const s[] = { "mimalloc: warning: %s", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "mimalloc"), "no mimalloc");
	}
	end();

	begin("evidence-conf-not-a-string");
	{
		/* "...MALLOC_CONF" inside a longer string is no conf variable */
		static const char *const s[] = { "set JE_MALLOC_CONFIG", "XMALLOC_CONF=1",
						 "<jemalloc>: Conf string ends with key", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.found, "\"<jemalloc>: \" messages"),
		      "found '%s'", ev.found);
	}
	end();

	begin("evidence-mem-own-mappings");
	{
		/* the segment within the mappings; then claiming 64 MiB, of which 4 KiB are mapped */
		CHECK(mem_image(sizeof(img_signs), 0, 4096, &ev) == 1 &&
		      !strcmp(ev.alloc, "jemalloc"), "in its mappings: %s", ev.found);
		CHECK(mem_image(64 << 20, 0, 4096, &ev) == 1, "64 MiB claimed, 4 KiB mapped");
		/* a segment outside the object's mappings is another's memory: not read */
		CHECK(mem_image(sizeof(img_signs), 0, 0x100, &ev) == -1, "read past its mappings");
	}
	end();
	begin("evidence-tables-passed-over");
	{
		/* the same bytes: read in .rodata, passed over in the unwind and exception tables */
		CHECK(elf_one_section(".rodata", &ev) == 1 && !strcmp(ev.alloc, "jemalloc"),
		      ".rodata not read");
		CHECK(elf_one_section(".rodata.str1.1", &ev) == 1, ".rodata.str1.1 not read");
		CHECK(elf_one_section(".eh_frame", &ev) == 0, ".eh_frame read: %s", ev.found);
		CHECK(elf_one_section(".gcc_except_table", &ev) == 0, ".gcc_except_table read");
	}
	end();
	return nfailed != 0;
}
