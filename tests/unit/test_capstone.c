// SPDX-License-Identifier: MIT
/*
 * Unit test: Capstone decodes the instruction bytes heapctl relies on, for
 * both architectures, and each backend's own trap, callback stub and
 * syscall bytes decode to the mnemonics its comments claim.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"

static const char *group;
static int group_nfail, nfailed;
static char group_msg[512];

static void begin(const char *name)
{
	group = name;
	group_nfail = 0;
	group_msg[0] = '\0';
}

static void __attribute__((format(printf, 2, 3))) fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (group_nfail++)
		return;
	n = snprintf(group_msg, sizeof(group_msg), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(group_msg + n, sizeof(group_msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond))                              \
			fail_at(__LINE__, __VA_ARGS__);   \
	} while (0)

static void end(void)
{
	if (!group_nfail) {
		printf("PASS %s\n", group);
		return;
	}
	nfailed++;
	if (group_nfail > 1)
		printf("FAIL %s: %s (and %d more)\n", group, group_msg, group_nfail - 1);
	else
		printf("FAIL %s: %s\n", group, group_msg);
}

#define BASE 0x1000

/*
 * Disassemble code and compare the mnemonics, in order, with want[]
 * (NULL-terminated).  Every byte must be consumed.
 */
static void expect(int arch, int mode, const uint8_t *code, size_t len, const char *const *want)
{
	cs_insn *insn = NULL;
	csh h;
	size_t n, i, used = 0, nwant = 0;
	cs_err e;

	while (want[nwant])
		nwant++;
	e = cs_open((cs_arch)arch, (cs_mode)mode, &h);
	if (e != CS_ERR_OK) {
		CHECK(0, "cs_open(%d, %d): %s", arch, mode, cs_strerror(e));
		return;
	}
	n = cs_disasm(h, code, len, BASE, 0, &insn);
	CHECK(n == nwant, "%zu instructions decoded, want %zu (%s)", n, nwant,
	      cs_strerror(cs_errno(h)));
	for (i = 0; i < n; i++) {
		used += insn[i].size;
		if (i < nwant)
			CHECK(!strcmp(insn[i].mnemonic, want[i]), "insn %zu: '%s %s', want '%s'", i,
			      insn[i].mnemonic, insn[i].op_str, want[i]);
	}
	CHECK(used == len, "%zu of %zu bytes decoded", used, len);
	if (n)
		cs_free(insn, n);
	cs_close(&h);
}

#define WANT(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void x86_known(void)
{
	static const uint8_t sysc[] = { 0x0f, 0x05 }; /* syscall */
	static const uint8_t int3[] = { 0xcc };       /* int3 */
	static const uint8_t ret[] = { 0xc3 };        /* ret */

	begin("capstone.x86_64.known_bytes");
	CHECK(cs_support(CS_ARCH_X86), "Capstone built without x86");
	expect(CS_ARCH_X86, CS_MODE_64, sysc, sizeof(sysc), WANT("syscall"));
	expect(CS_ARCH_X86, CS_MODE_64, int3, sizeof(int3), WANT("int3"));
	expect(CS_ARCH_X86, CS_MODE_64, ret, sizeof(ret), WANT("ret"));
	end();
}

static void a64_known(void)
{
	static const uint8_t svc[] = { 0x01, 0x00, 0x00, 0xd4 }; /* svc #0 */
	static const uint8_t brk[] = { 0x00, 0x00, 0x20, 0xd4 }; /* brk #0 */
	static const uint8_t ret[] = { 0xc0, 0x03, 0x5f, 0xd6 }; /* ret */

	begin("capstone.aarch64.known_bytes");
	CHECK(cs_support(CS_ARCH_ARM64), "Capstone built without arm64");
	expect(CS_ARCH_ARM64, CS_MODE_ARM, svc, sizeof(svc), WANT("svc"));
	expect(CS_ARCH_ARM64, CS_MODE_ARM, brk, sizeof(brk), WANT("brk"));
	expect(CS_ARCH_ARM64, CS_MODE_ARM, ret, sizeof(ret), WANT("ret"));
	end();
}

static void backend(const char *name, const struct hc_arch *a, int cs_arch, int cs_mode,
		    const char *trap, const char *sysc)
{
	begin(name);
	CHECK(a->cs_arch == cs_arch, "cs_arch %d, want %d", a->cs_arch, cs_arch);
	CHECK(a->cs_mode == cs_mode, "cs_mode %d, want %d", a->cs_mode, cs_mode);
	expect(a->cs_arch, a->cs_mode, a->trap, a->trap_len, WANT(trap));
	expect(a->cs_arch, a->cs_mode, a->syscall_insn, a->syscall_insn_len, WANT(sysc));
	expect(a->cs_arch, a->cs_mode, a->cb_stub, a->cb_stub_len, WANT(trap, "ret"));
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);

	x86_known();
	a64_known();
	backend("capstone.x86_64.backend_bytes", &hc_arch_x86_64, CS_ARCH_X86, CS_MODE_64, "int3",
		"syscall");
	backend("capstone.aarch64.backend_bytes", &hc_arch_aarch64, CS_ARCH_ARM64, CS_MODE_ARM,
		"brk", "svc");
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
