// SPDX-License-Identifier: MIT
/*
 * Unit test: Capstone decodes the instruction bytes heapctl relies on, for
 * both architectures, and each backend's own code (ret_tramp, notify) and
 * the patterns it looks for in the target (syscall, "syscall; ret", the
 * sigreturn restorers) decode to what its comments claim.
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
	const char *ret_move;      /* ret_tramp's move of the result to get_ret's register */
	const char *ret_keep;      /* or the register ret_tramp must not write */
	const char *stub[2];       /* the backend's stub (calls with 8 arguments) */
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

static void backend_ret_tramp(const struct want *w)
{
	const struct hc_arch *a = w->a;
	uint8_t filled[128];
	struct hc_bytes b = { filled, a->ret_tramp.len };
	char name[64], ops[2048] = "";
	struct dec d;

	snprintf(name, sizeof(name), "capstone.%s.ret_tramp", w->name);
	begin(name);
	CHECK(a->ret_tramp.len <= sizeof(filled), "ret_tramp is %zu bytes", a->ret_tramp.len);
	if (a->ret_tramp.len > sizeof(filled))
		goto out;
	memcpy(filled, a->ret_tramp.b, a->ret_tramp.len);
	a->ret_tramp_fill(filled, 0x1111222233334444ull, 0x5555666677778888ull);
	if (decode(a, &b, &d)) {
		size_t last = d.n - 1, stop;
		bool moved = false, kept = true, unmaps = false;

		/* the getpid heapctl stops at and skips */
		for (stop = 0; stop < d.n && d.end[stop] != a->ret_tramp_stop; stop++)
			;
		CHECK(stop < last, "no instruction ends at ret_tramp_stop %zu before the last",
		      a->ret_tramp_stop);
		if (stop < last) {
			CHECK(!strcmp(d.mn[stop], w->sysc),
			      "'%s %s' ends at ret_tramp_stop, want %s", d.mn[stop], d.op[stop],
			      w->sysc);
			CHECK(stop >= 1 && loads_nr(w, &d, stop - 1, a->nr_getpid),
			      "the syscall at ret_tramp_stop is not getpid");
		}
		for (size_t i = 0; i < d.n; i++) {
			/* saved before the syscall number overwrites the result */
			if (w->ret_move && i + 1 < stop && !strcmp(d.op[i], w->ret_move))
				moved = true;
			if (w->ret_keep && i < stop &&
			    !strncmp(d.op[i], w->ret_keep, strlen(w->ret_keep)))
				kept = false;
			/* the cleanup: munmap, no syscall of its own (the gadget's) */
			if (i > stop && loads_nr(w, &d, i, a->nr_munmap))
				unmaps = true;
			CHECK(i <= stop || strcmp(d.mn[i], w->sysc),
			      "a syscall of its own in the cleanup, at +%zu", d.end[i]);
			snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s;", d.op[i]);
		}
		if (w->ret_move)
			CHECK(moved, "no '%s' saving the result for get_ret before ret_tramp_stop",
			      w->ret_move);
		CHECK(kept, "writes %s, where get_ret reads the result", w->ret_keep);
		CHECK(unmaps, "the cleanup does not load munmap (%ld)", a->nr_munmap);
		/* then leaves for the gadget with a ret, which needs no landing pad */
		CHECK(!strcmp(d.mn[last], "ret"), "ends with '%s %s', want ret", d.mn[last],
		      d.op[last]);
		CHECK(strstr(ops, "1111") && strstr(ops, "4444"),
		      "the gadget's address is not in it: %s", ops);
		CHECK(strstr(ops, "5555") && strstr(ops, "8888"),
		      "the restorer's address is not in it: %s", ops);
	}
out:
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

/*
 * The chain from the page's mmap: munmap_entry loads munmap and reaches a
 * syscall touching neither argument register; page_exit (x86_64) unmaps the page
 * with no syscall of its own, writes the frame's pretcode, ends in a ret.
 */
static void backend_page_exit(const struct want *w)
{
	const struct hc_arch *a = w->a;
	uint8_t filled[128];
	struct hc_bytes b = { filled, a->page_exit.len };
	char name[64], ops[2048] = "";
	struct dec d;

	snprintf(name, sizeof(name), "capstone.%s.page_exit", w->name);
	begin(name);
	CHECK(a->munmap_entry.len, "no munmap_entry: the page's mmap cannot clean up");
	CHECK(!a->page_exit.len != !a->link_epilogue,
	      "the chain goes through the stack (page_exit) or a link (link_epilogue): one of them");
	if (decode(a, &a->munmap_entry, &d)) {
		CHECK(d.n == 2 && loads_nr(w, &d, 0, a->nr_munmap) && !strcmp(d.mn[1], w->sysc),
		      "munmap_entry is not 'load munmap; %s'", w->sysc);
	}
	if (!a->page_exit.len)
		goto out; /* a return takes a register: the chain goes through a link */
	/* 48 bytes between the chain's offset in the page (80) and the mark (128) */
	CHECK(a->page_exit.len <= 48, "page_exit is %zu bytes", a->page_exit.len);
	if (a->page_exit.len > 48)
		goto out;
	memcpy(filled, a->page_exit.b, a->page_exit.len);
	a->page_exit_fill(filled, 0x99990000aaaa0000ull, 0x1111222233334444ull,
			  0x5555666677778888ull);
	if (decode(a, &b, &d)) {
		bool unmaps = false;

		for (size_t i = 0; i < d.n; i++) {
			if (loads_nr(w, &d, i, a->nr_munmap))
				unmaps = true;
			CHECK(strcmp(d.mn[i], w->sysc), "a syscall of its own at +%zu", d.end[i]);
			snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s;", d.op[i]);
		}
		CHECK(unmaps, "page_exit does not load munmap (%ld)", a->nr_munmap);
		CHECK(!strcmp(d.mn[d.n - 1], "ret"), "ends with '%s', want ret", d.mn[d.n - 1]);
		CHECK(strstr(ops, "0x99990000aaaa0000"), "the page's address is not in it: %s", ops);
		CHECK(strstr(ops, "0x1111222233334444"), "the gadget's address is not in it: %s", ops);
		CHECK(strstr(ops, "0x5555666677778888") && strstr(ops, "[rsp]"),
		      "the restorer is not written to the frame's pretcode: %s", ops);
	}
out:
	end();
}

/* The stub: x86_64 pops two stack arguments and jumps to ret_tramp, arm64 puts x16 in x7. */
static void backend_stub(const struct want *w)
{
	struct dec d;
	char name[64];

	snprintf(name, sizeof(name), "capstone.%s.stub", w->name);
	begin(name);
	expect(w->a->cs_arch, w->a->cs_mode, w->a->stub.b, w->a->stub.len,
	       WANT(w->stub[0], w->stub[1]));
	if (decode(w->a, &w->a->stub, &d) && d.n == 2)
		CHECK(strstr(d.op[0], w->a == &hc_arch_x86_64 ? "rsp, 0x20" : "x7, x16") &&
			      strstr(d.op[1], w->a == &hc_arch_x86_64 ? "0x" : "x17"),
		      "'%s %s; %s %s'", d.mn[0], d.op[0], d.mn[1], d.op[1]);
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
		  { "eax", "rax" }, "", "rdi, rax", NULL, { "add", "jmp" },
		  "x86", x86_known, sizeof(x86_known) / sizeof(x86_known[0]) },
		{ "aarch64", &hc_arch_aarch64, CS_ARCH_ARM64, CS_MODE_ARM, "svc",
		  { "x8", "w8" }, "#", NULL, "x0", { "mov", "br" },
		  "arm64", a64_known, sizeof(a64_known) / sizeof(a64_known[0]) },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);

	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		backend_known(&wants[i]);
		backend_table(&wants[i]);
		backend_ret_tramp(&wants[i]);
		backend_notify(&wants[i]);
		backend_page_exit(&wants[i]);
		backend_stub(&wants[i]);
		backend_restorers(&wants[i]);
	}
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
