/* SPDX-License-Identifier: MIT */
/*
 * What test_arch.c and its two backends' files (x86.c, a64.c) share: the
 * fixtures, the syscall cases of wait_kind(), and each backend's tables
 * and checks.
 */
#ifndef HC_TEST_ARCH_H
#define HC_TEST_ARCH_H

#include <elf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/ucontext.h> /* the kernel's struct ucontext and UC_* flags */
#endif

#include <heapctl/heapctl.h>

#include "arch.h"
#include "../unit.h"

/* ---- fixtures: what both backends' checks use ---- */

#define FN	 0x00005555deadbee0ull /* function to call */
#define RETG	 0x00007f1234561000ull /* a ret gadget in the target's text */
#define RETG_POP 24                    /* the bytes it pops */
#define SLOT	 0x00007ffcffffe000ull /* where it stores the result */
#define GADGET	 0x00007f12345678f0ull /* "syscall; ret" in the target's text */
#define RESTORER 0x00007f1234560800ull /* the target's sigreturn restorer */
#define SP	 0x00007ffcfffff000ull
/* SIGHUP, SIGUSR1, SIGPIPE and the last realtime signal */
#define MASK	 0x8000000000001201ull
#define GWORDS	 34 /* enough for both images */

#define NT_PRFPREG_	0x002
#define NT_X86_XSTATE_	0x202
#define NT_ARM_SVE_	0x405

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void fill(uint64_t *g, unsigned int nwords)
{
	for (unsigned int i = 0; i < nwords; i++)
		g[i] = 0xa5a5000000000000ull | ((uint64_t)i << 8) | i;
}

static inline void call_init(struct hc_call *c, uint64_t frame, unsigned int nargs)
{
	memset(c, 0, sizeof(*c));
	c->pc = FN;
	c->ret_addr = RETG;
	c->ret_reg = 3; /* rbx */
	c->ret_pop = RETG_POP;
	c->ret_base = SLOT - 0x18;
	c->frame = frame;
	c->nargs = nargs;
	for (unsigned int i = 0; i < HC_ARCH_MAX_ARGS; i++)
		c->args[i] = 0x1000 + i;
	c->slot_addr = 0xdeadull; /* must be overwritten */
	c->slot_val = 0xbeefull;
}

static inline void sys_init(struct hc_call *c, uint64_t frame, long nr)
{
	static const uint64_t args[6] = { 0, 4096, 3, 0x22, (uint64_t)-1, 0 }; /* mmap */

	memset(c, 0, sizeof(*c));
	c->pc = GADGET;
	c->ret_addr = RESTORER;
	c->frame = frame;
	c->nr = nr;
	c->nargs = 6;
	memcpy(c->args, args, sizeof(args));
	c->args[6] = 0x6666; /* never passed: syscalls take six */
	c->args[7] = 0x7777;
	c->slot_addr = 0xdeadull;
	c->slot_val = 0xbeefull;
}

/* Index of the first differing word outside the allowed set, or -1. */
static inline int first_diff(const uint64_t *a, const uint64_t *b, unsigned int nwords,
		      const int *allowed, unsigned int nallowed)
{
	for (unsigned int i = 0; i < nwords; i++) {
		bool ok = false;

		for (unsigned int j = 0; j < nallowed; j++)
			ok |= allowed[j] == (int)i;
		if (!ok && a[i] != b[i])
			return (int)i;
	}
	return -1;
}

static inline bool bytes_eq(const struct hc_bytes *b, const uint8_t *want, size_t wlen)
{
	return b->b && b->len == wlen && !memcmp(b->b, want, wlen);
}

/* b ends with the bytes of tail */
static inline bool ends_with(const struct hc_bytes *b, const struct hc_bytes *tail)
{
	return b->b && tail->b && b->len >= tail->len &&
	       !memcmp(b->b + b->len - tail->len, tail->b, tail->len);
}

/* The restorer list holds want (a restorer found in the wild). */
static inline bool has_restorer(const struct hc_bytes *list, const uint8_t *want, size_t wlen)
{
	for (unsigned int i = 0; list && i < 16 && list[i].len; i++)
		if (bytes_eq(&list[i], want, wlen))
			return true;
	return false;
}

static inline bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static inline bool all_byte(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t rd32s(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* An output buffer for sigframe_build() with a canary area after outlen. */
#define CANARY 64
#define POISON 0xee

static inline uint8_t *frame_buf(size_t outlen)
{
	uint8_t *p = malloc(outlen + CANARY);

	if (!p) {
		perror("malloc");
		exit(EXIT_FAILURE);
	}
	memset(p, POISON, outlen + CANARY);
	return p;
}

/* dump_regs() into 16 bytes: terminated, nothing written past them, truncation reported */
static inline int dump_truncated(const struct hc_arch *a, const uint64_t *g)
{
	char small[32];
	int n;

	memset(small, 'Z', sizeof(small));
	n = a->dump_regs(g, small, 16);
	CHECK(memchr(small, '\0', 16) != NULL, "truncated dump not terminated");
	CHECK(small[16] == 'Z', "dump overran a 16-byte buffer");
	CHECK(n < 0 || n >= 16, "truncation not reported (%d)", n);
	return n;
}

/* A syscall a thread waits in, and what the backend must say of it. */
struct wait_case {
	long nr;
	uint64_t args[6];
	enum hc_wait want;
	const char *what;
};
#define TS_PTR 0x00007ffc12345670ull /* a struct timespec * */

/* x86_64: struct user_regs_struct, word indices */
enum {
	X_R15, X_R14, X_R13, X_R12, X_RBP, X_RBX, X_R11, X_R10, X_R9, X_R8,
	X_RAX, X_RCX, X_RDX, X_RSI, X_RDI, X_ORIG_RAX, X_RIP, X_CS, X_EFLAGS, X_RSP,
	X_SS, X_FS_BASE, X_GS_BASE, X_DS, X_ES, X_FS, X_GS, X_NWORDS
};
static const struct hc_arch *const x86 = &hc_arch_x86_64;

/* aarch64: struct user_pt_regs, word indices */
enum { A_X0 = 0, A_X8 = 8, A_LR = 30, A_SP = 31, A_PC = 32, A_PSTATE = 33, A_NWORDS = 34 };
static const struct hc_arch *const a64 = &hc_arch_aarch64;

/* x86.c */
#define XF_MASK		304
extern const uint8_t x86_sysc[2], x86_sysret[3], x86_restore_rt[9];
extern const struct wait_case x86_waits[]; /* up to one whose what is NULL */
void x86_table_own(void);
void x86_ret_gadget(void);
void x86_prep_call_args(void);
void x86_prep_call_stack(void);
void x86_prep_call_stack_args(void);
void x86_prep_syscall(void);
void x86_prep_restore(void);
void x86_frame_restores(void);
void x86_no_restart(void);
void x86_undo_stop_eintr(void);
void x86_sigframe_layout(void);
void x86_sigframe_xstate(void);
void x86_sigframe_restart(void);
void x86_skip_syscall(void);
void x86_restart_now(void);
void x86_restart_here(void);
void x86_sigframe_errors(void);
void x86_call_fpstate(void);
void x86_dump_regs(void);
void x86_sigframe_uapi(void);

/* a64.c */
#define AF_UC		128
#define AF_MASK		(AF_UC + 40)
#define AF_END		(AF_UC + 4560)
extern const uint8_t a64_sysc[4], a64_sysret[8], a64_vdso_rt[8];
extern const struct wait_case a64_waits[]; /* up to one whose what is NULL */
void a64_table_own(void);
void a64_prep_call_args(void);
void a64_prep_call_x7(void);
void a64_prep_call_stack(void);
void a64_prep_call_btype(void);
void a64_prep_syscall(void);
void a64_prep_restore(void);
void a64_get_ret(void);
void a64_frame_restores(void);
void a64_no_restart(void);
void a64_undo_stop_eintr(void);
void a64_restart_probe(void);
void a64_skip_restart(void);
void a64_sigframe_layout(void);
void a64_sigframe_errors(void);
void a64_call_fpstate(void);
void a64_dump_regs(void);
void a64_sigframe_uapi(void);

#endif
