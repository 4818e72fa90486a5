// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: ELF symbol reading on malformed files.  The input is
 * written to a temporary file and read with sym_load() (.dynsym, .symtab,
 * .gnu_debuglink and build-id lookups included), then looked up with
 * sym_by_name(); the same bytes, placed in this process's memory, go
 * through obj_read_phdrs(), which reads the ELF and program headers from
 * the target's memory.  A target controls both its files and its memory.
 */
#include <sys/mman.h>

#include "../../src/lib/sym.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int memfd = -2;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_target t;
	struct obj o;
	struct hc_err err = { 0 };
	int fd;

	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/heapctl-fuzz-elf.%d", (int)getpid());
		memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	close(fd);

	memset(&t, 0, sizeof(t));
	memset(&o, 0, sizeof(o));
	t.pid = getpid();
	t.memfd = memfd;
	t.arch = hc_arch_host();
	o.path = path;
	o.open_path = path;
	o.bias = 0x1000;
	if (sym_load(&t, &o, true, &err) == 0) {
		sym_by_name(&o, "mallctl");
		for (size_t i = 0; i < o.nsyms; i++)
			if (!o.syms[i].name || !memchr(o.syms[i].name, 0, 4096))
				__builtin_trap();
	}
	free(o.syms);
	free(o.strs);
	free(o.debug_path);

	/* The headers read from "target" memory: a page-aligned copy of the input. */
	if (size >= sizeof(Elf64_Ehdr)) {
		size_t len = (size + 4095) & ~(size_t)4095;
		uint8_t *mem = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (mem != MAP_FAILED) {
			memcpy(mem, data, size);
			munmap(mem + len, 4096); /* whatever follows is unmapped */
			memset(&o, 0, sizeof(o));
			memset(&err, 0, sizeof(err));
			o.base = (uint64_t)(uintptr_t)mem;
			o.is_exe = data[0] & 1;
			obj_read_phdrs(&t, &o, &err);
			munmap(mem, len);
		}
	}
	return 0;
}
