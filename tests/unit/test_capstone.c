// SPDX-License-Identifier: MIT
/*
 * Unit test: Capstone decodes the instruction bytes heapctl relies on, for
 * both architectures, and the patterns each backend looks for in the
 * target (syscall, "syscall; ret", the sigreturn restorers, getpid() for
 * callbacks) decode to what its comments claim; x86_64's hand-written ret
 * gadget decoder agrees with Capstone on every sequence it takes.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "unit.h"

#define BASE 0x1000

/* "mov*" matches any mnemonic starting with "mov" (Capstone 4 says movz, 5 says mov). */
static bool mn_match(const char *mn, const char *want)
{
	size_t n = strlen(want);

	if (n && want[n - 1] == '*')
		return !strncmp(mn, want, n - 1);
	return !strcmp(mn, want);
}

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
			CHECK(mn_match(insn[i].mnemonic, want[i]), "insn %zu: '%s %s', want '%s'",
			      i, insn[i].mnemonic, insn[i].op_str, want[i]);
	}
	CHECK(used == len, "%zu of %zu bytes decoded", used, len);
	if (n)
		cs_free(insn, n);
	cs_close(&h);
}

#define WANT(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* A decoded byte pattern: mnemonic, operands and end offset of each instruction. */
#define MAX_INSN 16

struct dec {
	size_t n, used;
	char mn[MAX_INSN][32];
	char op[MAX_INSN][160];
	size_t end[MAX_INSN];
};

static bool decode(const struct hc_arch *a, const struct hc_bytes *b, struct dec *d)
{
	cs_insn *insn = NULL;
	csh h;
	size_t n;
	cs_err e;

	memset(d, 0, sizeof(*d));
	if (!b->b || !b->len) {
		CHECK(0, "empty byte pattern");
		return false;
	}
	e = cs_open((cs_arch)a->cs_arch, (cs_mode)a->cs_mode, &h);
	if (e != CS_ERR_OK) {
		CHECK(0, "cs_open(%d, %d): %s", a->cs_arch, a->cs_mode, cs_strerror(e));
		return false;
	}
	n = cs_disasm(h, b->b, b->len, BASE, 0, &insn);
	for (size_t i = 0; i < n && i < MAX_INSN; i++) {
		d->used += insn[i].size;
		d->end[i] = d->used;
		snprintf(d->mn[i], sizeof(d->mn[i]), "%s", insn[i].mnemonic);
		snprintf(d->op[i], sizeof(d->op[i]), "%s", insn[i].op_str);
	}
	d->n = n < MAX_INSN ? n : MAX_INSN;
	if (n)
		cs_free(insn, n);
	cs_close(&h);
	CHECK(n > 0 && n <= MAX_INSN, "%zu instructions decoded", n);
	CHECK(d->used == b->len, "%zu of %zu bytes decoded", d->used, b->len);
	return n > 0 && n <= MAX_INSN && d->used == b->len;
}

/* Bytes Capstone must decode to one instruction, whatever the backends say. */
struct known {
	const uint8_t *b;
	size_t len;
	const char *mn;
};

#define KNOWN(mn, ...) \
	{ (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }), mn }

static const struct known x86_known[] = {
	KNOWN("syscall", 0x0f, 0x05),
	KNOWN("ret", 0xc3),
	KNOWN("mov", 0x48, 0x89, 0xc7),                         /* mov %rax,%rdi */
	KNOWN("mov", 0xb8, 0x0f, 0x00, 0x00, 0x00),             /* mov $15,%eax */
	KNOWN("mov", 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00), /* mov $15,%rax */
};

static const struct known a64_known[] = {
	KNOWN("svc", 0x01, 0x00, 0x00, 0xd4),  /* svc #0 */
	KNOWN("ret", 0xc0, 0x03, 0x5f, 0xd6),
	KNOWN("mov*", 0x68, 0x11, 0x80, 0xd2), /* mov x8, #139 (movz) */
};

/* What each backend's bytes must decode to. */
struct want {
	const char *name;
	const struct hc_arch *a;
	int cs_arch, cs_mode;
	const char *sysc;          /* the syscall mnemonic */
	const char *nr_reg[2];     /* where the syscall number goes */
	const char *imm;           /* what precedes an immediate: "" or "#" */
	const char *cs_name;       /* the architecture, as Capstone's build names it */
	const struct known *known; /* bytes it must decode */
	size_t nknown;
};

static void backend_known(const struct want *w)
{
	char name[64];

	snprintf(name, sizeof(name), "capstone.%s.known_bytes", w->name);
	begin(name);
	CHECK(cs_support(w->cs_arch), "Capstone built without %s", w->cs_name);
	for (size_t i = 0; i < w->nknown; i++)
		expect(w->cs_arch, w->cs_mode, w->known[i].b, w->known[i].len,
		       WANT(w->known[i].mn));
	end();
}

/* Instruction i loads nr into the syscall-number register. */
static bool loads_nr(const struct want *w, const struct dec *d, size_t i, long nr)
{
	char imm[32], op[64];

	if (i >= d->n || !mn_match(d->mn[i], "mov*"))
		return false;
	snprintf(imm, sizeof(imm), "%s0x%lx", w->imm, nr);
	for (unsigned int r = 0; r < 2; r++) {
		snprintf(op, sizeof(op), "%s, %s", w->nr_reg[r], imm);
		if (!strcmp(d->op[i], op))
			return true;
	}
	return false;
}

static void backend_table(const struct want *w)
{
	char name[64];

	snprintf(name, sizeof(name), "capstone.%s.backend", w->name);
	begin(name);
	CHECK(w->a->cs_arch == w->cs_arch, "cs_arch %d, want %d", w->a->cs_arch, w->cs_arch);
	CHECK(w->a->cs_mode == w->cs_mode, "cs_mode %d, want %d", w->a->cs_mode, w->cs_mode);
	expect(w->a->cs_arch, w->a->cs_mode, w->a->syscall_insn.b, w->a->syscall_insn.len,
	       WANT(w->sysc));
	/* remote syscalls run on this gadget, then "ret" into the restorer */
	expect(w->a->cs_arch, w->a->cs_mode, w->a->syscall_ret.b, w->a->syscall_ret.len,
	       WANT(w->sysc, "ret"));
	end();
}

static void backend_notify(const struct want *w)
{
	const struct hc_arch *a = w->a;
	char name[64];
	struct dec d;

	snprintf(name, sizeof(name), "capstone.%s.notify", w->name);
	begin(name);
	if (decode(a, &a->notify, &d)) {
		size_t s = d.n;

		for (size_t i = 0; i < d.n; i++)
			if (!strcmp(d.mn[i], w->sysc)) {
				s = i;
				break;
			}
		CHECK(s < d.n, "no %s in notify", w->sysc);
		if (s < d.n) {
			/* the pc heapctl expects at the syscall's entry and exit stops */
			CHECK(d.end[s] == a->notify_sys_end,
			      "the syscall ends at +%zu, notify_sys_end is %zu", d.end[s],
			      a->notify_sys_end);
			CHECK(s + 1 < d.n && !strcmp(d.mn[s + 1], "ret"),
			      "'%s' after the syscall, want ret",
			      s + 1 < d.n ? d.mn[s + 1] : "(end)");
			CHECK(s + 2 == d.n, "%zu instructions after the ret", d.n - s - 2);
		}
		expect(a->cs_arch, a->cs_mode, a->notify.b, a->notify.len,
		       WANT("mov*", w->sysc, "ret"));
	}
	end();
}

/* Register numbers as the ret gadget decoder gives them, named as Capstone prints them. */
static const char *const x86_reg64[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
					    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };

/*
 * Does Capstone read bytes (len of them) as ret_gadget() said: a store of
 * rax at disp(reg), then only register-only moves, pops and adds to rsp
 * that take pop bytes in all, then a plain ret?  Empty why if so.
 */
static void gadget_agrees(csh h, const uint8_t *b, size_t len, const struct hc_ret_gadget *g,
			  char *why, size_t whylen)
{
	cs_insn *insn = NULL;
	size_t n = cs_disasm(h, b, len, BASE, 0, &insn), used = 0;
	unsigned int pop = 0;
	char want[64];

	why[0] = 0;
	for (size_t i = 0; i < n; i++)
		used += insn[i].size;
	if (n < 2 || used != len) {
		snprintf(why, whylen, "%zu instructions, %zu of %zu bytes", n, used, len);
		goto out;
	}
	/* Capstone writes displacements below 10 in decimal */
	if (g->disp)
		snprintf(want, sizeof(want),
			 (g->disp < 0 ? -g->disp : g->disp) < 10 ? "qword ptr [%s %c %u], rax" :
								     "qword ptr [%s %c 0x%x], rax",
			 x86_reg64[g->reg], g->disp < 0 ? '-' : '+',
			 (unsigned int)(g->disp < 0 ? -g->disp : g->disp));
	else
		snprintf(want, sizeof(want), "qword ptr [%s], rax", x86_reg64[g->reg]);
	if (strcmp(insn[0].mnemonic, "mov") || strcmp(insn[0].op_str, want)) {
		snprintf(why, whylen, "'%s %.60s', want 'mov %s'", insn[0].mnemonic,
			 insn[0].op_str, want);
		goto out;
	}
	for (size_t i = 1; i + 1 < n; i++) {
		const char *mn = insn[i].mnemonic, *op = insn[i].op_str;

		if (!strcmp(mn, "pop") && strcmp(op, "rsp"))
			pop += 8;
		else if (!strcmp(mn, "add") && !strncmp(op, "rsp, ", 5))
			pop += (unsigned int)strtoul(op + 5, NULL, 0);
		else if ((strcmp(mn, "xor") && strcmp(mn, "mov")) || strchr(op, '[') ||
			 strstr(op, "sp,") || !strncmp(op, "esp", 3))
			snprintf(why, whylen, "'%s %.60s' in the tail", mn, op);
	}
	if (!why[0] && (strcmp(insn[n - 1].mnemonic, "ret") || insn[n - 1].op_str[0]))
		snprintf(why, whylen, "ends '%s %.60s'", insn[n - 1].mnemonic, insn[n - 1].op_str);
	else if (!why[0] && pop != g->pop)
		snprintf(why, whylen, "pops %u, the decoder says %u", pop, g->pop);
out:
	if (n)
		cs_free(insn, n);
}

/*
 * x86_64's ret gadgets: every sequence the hand decoder takes, from real
 * C library tails and from a million random ones built to look like them,
 * is what Capstone reads.
 */
static void x86_ret_gadgets(void)
{
	static const uint8_t tail[] = { 0x5b, 0x5d, 0x41, 0x5c, 0x5f, 0x31, 0xc0, 0xb8, 0x48,
					0x83, 0xc4, 0x08, 0x18, 0xc3, 0xc2, 0x5c, 0xe4, 0x90 };
	static const uint8_t real[][16] = {
		{ 0x48, 0x89, 0x43, 0x28, 0x5b, 0xc3 }, /* glibc 2.36 dlsym_doit */
		{ 0x48, 0x89, 0x43, 0x18, 0x58, 0x5a, 0x5b, 0xc3 },
		{ 0x48, 0x89, 0x45, 0x00, 0x31, 0xc0, 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x5d, 0xc3 },
		{ 0x49, 0x89, 0x44, 0x24, 0x08, 0x5b, 0x5d, 0x41, 0x5c, 0x41, 0x5d, 0x41, 0x5e, 0xc3 },
	};
	const struct hc_arch *a = &hc_arch_x86_64;
	unsigned long taken = 0, seed = 12345;
	struct hc_ret_gadget g;
	char why[256];
	csh h;

	begin("capstone.x86_64.ret_gadget");
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		CHECK(0, "cs_open");
		goto out;
	}
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		size_t len = a->ret_gadget(real[i], sizeof(real[i]), &g);

		CHECK(len, "real tail %zu not taken", i);
		if (len) {
			gadget_agrees(h, real[i], len, &g, why, sizeof(why));
			CHECK(!why[0], "real tail %zu: %s", i, why);
		}
	}
	for (unsigned long r = 0; r < 1000000 && !nfailed; r++) {
		uint8_t b[24];
		size_t len;

		for (size_t i = 0; i < sizeof(b); i++) {
			seed = seed * 6364136223846793005ul + 1442695040888963407ul;
			b[i] = i >= 3 && (seed >> 60) < 12 ? tail[(seed >> 33) % sizeof(tail)] :
							     (uint8_t)(seed >> 33);
		}
		b[0] = seed >> 62 ? 0x48 : 0x49;
		b[1] = 0x89;
		len = a->ret_gadget(b, sizeof(b), &g);
		if (!len)
			continue;
		taken++;
		gadget_agrees(h, b, len, &g, why, sizeof(why));
		CHECK(!why[0], "random sequence %lu (%02x %02x %02x %02x ...): %s", r, b[0], b[1],
		      b[2], b[3], why);
	}
	CHECK(taken > 100, "only %lu random sequences taken: the test generates too few", taken);
	cs_close(&h);
out:
	end();
}

static void backend_restorers(const struct want *w)
{
	const struct hc_arch *a = w->a;
	char name[64];
	unsigned int i;
	struct dec d;

	snprintf(name, sizeof(name), "capstone.%s.restorers", w->name);
	begin(name);
	for (i = 0; a->restorers && i < 16 && a->restorers[i].len; i++) {
		if (!decode(a, &a->restorers[i], &d))
			continue;
		CHECK(d.n == 2, "restorer %u: %zu instructions, want mov + %s", i, d.n, w->sysc);
		if (d.n != 2)
			continue;
		CHECK(loads_nr(w, &d, 0, a->nr_rt_sigreturn),
		      "restorer %u: '%s %s' does not load rt_sigreturn (%ld)", i, d.mn[0], d.op[0],
		      a->nr_rt_sigreturn);
		CHECK(!strcmp(d.mn[1], w->sysc), "restorer %u: '%s', want %s", i, d.mn[1],
		      w->sysc);
	}
	CHECK(i >= 1, "no restorers");
	end();
}

int main(void)
{
	static const struct want wants[] = {
		{ "x86_64", &hc_arch_x86_64, CS_ARCH_X86, CS_MODE_64, "syscall",
		  { "eax", "rax" }, "", "x86", x86_known, sizeof(x86_known) / sizeof(x86_known[0]) },
		{ "aarch64", &hc_arch_aarch64, CS_ARCH_ARM64, CS_MODE_ARM, "svc",
		  { "x8", "w8" }, "#", "arm64", a64_known, sizeof(a64_known) / sizeof(a64_known[0]) },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);

	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		backend_known(&wants[i]);
		backend_table(&wants[i]);
		backend_notify(&wants[i]);
		backend_restorers(&wants[i]);
	}
	x86_ret_gadgets();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
