/* SPDX-License-Identifier: MIT */
/*
 * Register sentinels for the torture victim, after jemalloc_victim.c's:
 * leaf functions in assembly load known values into the general, x87/SSE
 * control, vector and mask registers, and save what they hold afterwards.
 *
 *   block  a raw read syscall in between: heapctl borrows a thread parked
 *          in a syscall (only rax, rcx and r11 may change, entry_64.S);
 *   spin   a "dec rcx; jnz" loop in between: heapctl stops a running
 *          thread at an arbitrary instruction, flags included, and every
 *          register must come back (rcx, the loop count, too).
 */
#ifndef VREGS_H
#define VREGS_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RIO_FD		0
#define RIO_BUF		8
#define RIO_LEN		16
#define RIO_RET		24
#define RIO_GIN		32
#define RIO_GOUT	104
#define RIO_AOUT	176
#define RIO_RSP		200
#define RIO_MXCSR	216
#define RIO_FCW		224
#define RIO_KIN		256
#define RIO_KOUT	320
#define RIO_VIN		384
#define RIO_VOUT	2432

#define NGPR 9
static const char *const gpr_names[NGPR] = {
	"rbx", "rbp", "r8", "r9", "r10", "r12", "r13", "r14", "r15",
};

struct regs_io {
	uint64_t fd;
	uint64_t buf;
	uint64_t len;
	int64_t ret;
	uint64_t gin[NGPR];
	uint64_t gout[NGPR];
	uint64_t aout[3];	/* rdi, rsi, rdx after the syscall */
	uint64_t rsp[2];	/* before, after */
	uint32_t mxcsr[2];	/* in, out */
	uint16_t fcw[2];	/* in, out */
	uint8_t pad[28];
	uint64_t kin[8];
	uint64_t kout[8];
	uint8_t vin[32][64];
	uint8_t vout[32][64];
};

_Static_assert(offsetof(struct regs_io, ret) == RIO_RET, "layout");
_Static_assert(offsetof(struct regs_io, gin) == RIO_GIN, "layout");
_Static_assert(offsetof(struct regs_io, gout) == RIO_GOUT, "layout");
_Static_assert(offsetof(struct regs_io, aout) == RIO_AOUT, "layout");
_Static_assert(offsetof(struct regs_io, rsp) == RIO_RSP, "layout");
_Static_assert(offsetof(struct regs_io, mxcsr) == RIO_MXCSR, "layout");
_Static_assert(offsetof(struct regs_io, fcw) == RIO_FCW, "layout");
_Static_assert(offsetof(struct regs_io, kin) == RIO_KIN, "layout");
_Static_assert(offsetof(struct regs_io, kout) == RIO_KOUT, "layout");
_Static_assert(offsetof(struct regs_io, vin) == RIO_VIN, "layout");
_Static_assert(offsetof(struct regs_io, vout) == RIO_VOUT, "layout");

struct regs_mode {
	const char *name;
	void (*block)(struct regs_io *io);
	void (*spin)(struct regs_io *io);
	unsigned int nvec;	/* vector registers checked */
	unsigned int vlen;	/* bytes of each */
	unsigned int nk;	/* mask registers k1..k(nk) */
	uint64_t kmask;		/* bits of k that are architectural */
};

#if defined(__x86_64__)
#define S_(x) #x
#define S(x) S_(x)

#define IRP16 "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
#define IRP32 IRP16 ",16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"

/* Stack while blocked: 6 saved GPRs, then [io][mxcsr,fcw][syscall ret]. */
#define REGS_HEAD(fn)							\
	".text\n"							\
	".globl " fn "\n"						\
	".hidden " fn "\n"						\
	".type " fn ",@function\n"					\
	".p2align 4\n"							\
	fn ":\n"							\
	"	push %rbx\n"						\
	"	push %rbp\n"						\
	"	push %r12\n"						\
	"	push %r13\n"						\
	"	push %r14\n"						\
	"	push %r15\n"						\
	"	sub $24, %rsp\n"					\
	"	mov %rdi, (%rsp)\n"					\
	"	mov %rdi, %rax\n"					\
	"	stmxcsr 8(%rsp)\n"					\
	"	fnstcw 12(%rsp)\n"					\
	"	ldmxcsr " S(RIO_MXCSR) "(%rax)\n"			\
	"	fldcw " S(RIO_FCW) "(%rax)\n"

#define REGS_SYSCALL							\
	"	mov %rsp, " S(RIO_RSP) "(%rax)\n"			\
	"	mov " S(RIO_GIN) "+0(%rax), %rbx\n"			\
	"	mov " S(RIO_GIN) "+8(%rax), %rbp\n"			\
	"	mov " S(RIO_GIN) "+16(%rax), %r8\n"			\
	"	mov " S(RIO_GIN) "+24(%rax), %r9\n"			\
	"	mov " S(RIO_GIN) "+32(%rax), %r10\n"			\
	"	mov " S(RIO_GIN) "+40(%rax), %r12\n"			\
	"	mov " S(RIO_GIN) "+48(%rax), %r13\n"			\
	"	mov " S(RIO_GIN) "+56(%rax), %r14\n"			\
	"	mov " S(RIO_GIN) "+64(%rax), %r15\n"			\
	"	mov " S(RIO_FD) "(%rax), %rdi\n"			\
	"	mov " S(RIO_BUF) "(%rax), %rsi\n"			\
	"	mov " S(RIO_LEN) "(%rax), %rdx\n"			\
	"	xor %eax, %eax\n"	/* __NR_read */			\
	"	syscall\n"						\
	"	mov %rax, 16(%rsp)\n"					\
	"	mov (%rsp), %rax\n"					\
	"	mov %rbx, " S(RIO_GOUT) "+0(%rax)\n"			\
	"	mov %rbp, " S(RIO_GOUT) "+8(%rax)\n"			\
	"	mov %r8, " S(RIO_GOUT) "+16(%rax)\n"			\
	"	mov %r9, " S(RIO_GOUT) "+24(%rax)\n"			\
	"	mov %r10, " S(RIO_GOUT) "+32(%rax)\n"			\
	"	mov %r12, " S(RIO_GOUT) "+40(%rax)\n"			\
	"	mov %r13, " S(RIO_GOUT) "+48(%rax)\n"			\
	"	mov %r14, " S(RIO_GOUT) "+56(%rax)\n"			\
	"	mov %r15, " S(RIO_GOUT) "+64(%rax)\n"			\
	"	mov %rdi, " S(RIO_AOUT) "+0(%rax)\n"			\
	"	mov %rsi, " S(RIO_AOUT) "+8(%rax)\n"			\
	"	mov %rdx, " S(RIO_AOUT) "+16(%rax)\n"			\
	"	mov %rsp, " S(RIO_RSP) "+8(%rax)\n"

/* As REGS_SYSCALL, but spins io->len times instead; "ret" gets rax (io). */
#define REGS_SPIN							\
	"	mov %rsp, " S(RIO_RSP) "(%rax)\n"			\
	"	mov " S(RIO_GIN) "+0(%rax), %rbx\n"			\
	"	mov " S(RIO_GIN) "+8(%rax), %rbp\n"			\
	"	mov " S(RIO_GIN) "+16(%rax), %r8\n"			\
	"	mov " S(RIO_GIN) "+24(%rax), %r9\n"			\
	"	mov " S(RIO_GIN) "+32(%rax), %r10\n"			\
	"	mov " S(RIO_GIN) "+40(%rax), %r12\n"			\
	"	mov " S(RIO_GIN) "+48(%rax), %r13\n"			\
	"	mov " S(RIO_GIN) "+56(%rax), %r14\n"			\
	"	mov " S(RIO_GIN) "+64(%rax), %r15\n"			\
	"	mov " S(RIO_FD) "(%rax), %rdi\n"			\
	"	mov " S(RIO_BUF) "(%rax), %rsi\n"			\
	"	mov " S(RIO_LEN) "(%rax), %rdx\n"			\
	"	mov %rdx, %rcx\n"					\
	"1:	dec %rcx\n"						\
	"	jnz 1b\n"						\
	"	mov %rax, 16(%rsp)\n"					\
	"	mov (%rsp), %rax\n"					\
	"	mov %rbx, " S(RIO_GOUT) "+0(%rax)\n"			\
	"	mov %rbp, " S(RIO_GOUT) "+8(%rax)\n"			\
	"	mov %r8, " S(RIO_GOUT) "+16(%rax)\n"			\
	"	mov %r9, " S(RIO_GOUT) "+24(%rax)\n"			\
	"	mov %r10, " S(RIO_GOUT) "+32(%rax)\n"			\
	"	mov %r12, " S(RIO_GOUT) "+40(%rax)\n"			\
	"	mov %r13, " S(RIO_GOUT) "+48(%rax)\n"			\
	"	mov %r14, " S(RIO_GOUT) "+56(%rax)\n"			\
	"	mov %r15, " S(RIO_GOUT) "+64(%rax)\n"			\
	"	mov %rdi, " S(RIO_AOUT) "+0(%rax)\n"			\
	"	mov %rsi, " S(RIO_AOUT) "+8(%rax)\n"			\
	"	mov %rdx, " S(RIO_AOUT) "+16(%rax)\n"			\
	"	mov %rsp, " S(RIO_RSP) "+8(%rax)\n"

#define REGS_TAIL(fn)							\
	"	stmxcsr " S(RIO_MXCSR) "+4(%rax)\n"			\
	"	fnstcw " S(RIO_FCW) "+2(%rax)\n"			\
	"	ldmxcsr 8(%rsp)\n"					\
	"	fldcw 12(%rsp)\n"					\
	"	mov 16(%rsp), %rcx\n"					\
	"	mov %rcx, " S(RIO_RET) "(%rax)\n"			\
	"	add $24, %rsp\n"					\
	"	pop %r15\n"						\
	"	pop %r14\n"						\
	"	pop %r13\n"						\
	"	pop %r12\n"						\
	"	pop %rbp\n"						\
	"	pop %rbx\n"						\
	"	ret\n"							\
	".size " fn ", .-" fn "\n"

/* In .irp bodies "\\n" is the GAS loop variable, "\n" a line break. */
#define VEC_IO(insn, list, reg, stride)					\
	".irp n," list "\n"						\
	"	" insn " " S(RIO_VIN) "+\\n*" S(stride) "(%rax), %" reg "\\n\n" \
	".endr\n"
#define VEC_OUT(insn, list, reg, stride)				\
	".irp n," list "\n"						\
	"	" insn " %" reg "\\n, " S(RIO_VOUT) "+\\n*" S(stride) "(%rax)\n" \
	".endr\n"
#define K_IN(insn)							\
	".irp n,1,2,3,4,5,6,7\n"					\
	"	" insn " " S(RIO_KIN) "+\\n*8(%rax), %k\\n\n"		\
	".endr\n"
#define K_OUT(insn)							\
	".irp n,1,2,3,4,5,6,7\n"					\
	"	" insn " %k\\n, " S(RIO_KOUT) "+\\n*8(%rax)\n"		\
	".endr\n"

__asm__(
	REGS_HEAD("regs_block_sse")
	VEC_IO("movdqu", IRP16, "xmm", 64)
	REGS_SYSCALL
	VEC_OUT("movdqu", IRP16, "xmm", 64)
	REGS_TAIL("regs_block_sse")

	REGS_HEAD("regs_block_avx")
	VEC_IO("vmovdqu", IRP16, "ymm", 64)
	REGS_SYSCALL
	VEC_OUT("vmovdqu", IRP16, "ymm", 64)
	"	vzeroupper\n"
	REGS_TAIL("regs_block_avx")

	REGS_HEAD("regs_block_avx512f")
	VEC_IO("vmovdqu64", IRP32, "zmm", 64)
	K_IN("kmovw")
	REGS_SYSCALL
	VEC_OUT("vmovdqu64", IRP32, "zmm", 64)
	K_OUT("kmovw")
	"	vzeroupper\n"
	REGS_TAIL("regs_block_avx512f")

	REGS_HEAD("regs_block_avx512bw")
	VEC_IO("vmovdqu64", IRP32, "zmm", 64)
	K_IN("kmovq")
	REGS_SYSCALL
	VEC_OUT("vmovdqu64", IRP32, "zmm", 64)
	K_OUT("kmovq")
	"	vzeroupper\n"
	REGS_TAIL("regs_block_avx512bw")

	REGS_HEAD("spin_block_sse")
	VEC_IO("movdqu", IRP16, "xmm", 64)
	REGS_SPIN
	VEC_OUT("movdqu", IRP16, "xmm", 64)
	REGS_TAIL("spin_block_sse")

	REGS_HEAD("spin_block_avx")
	VEC_IO("vmovdqu", IRP16, "ymm", 64)
	REGS_SPIN
	VEC_OUT("vmovdqu", IRP16, "ymm", 64)
	"	vzeroupper\n"
	REGS_TAIL("spin_block_avx")

	REGS_HEAD("spin_block_avx512f")
	VEC_IO("vmovdqu64", IRP32, "zmm", 64)
	K_IN("kmovw")
	REGS_SPIN
	VEC_OUT("vmovdqu64", IRP32, "zmm", 64)
	K_OUT("kmovw")
	"	vzeroupper\n"
	REGS_TAIL("spin_block_avx512f")

	REGS_HEAD("spin_block_avx512bw")
	VEC_IO("vmovdqu64", IRP32, "zmm", 64)
	K_IN("kmovq")
	REGS_SPIN
	VEC_OUT("vmovdqu64", IRP32, "zmm", 64)
	K_OUT("kmovq")
	"	vzeroupper\n"
	REGS_TAIL("spin_block_avx512bw")
);

__attribute__((visibility("hidden"))) void regs_block_sse(struct regs_io *io);
__attribute__((visibility("hidden"))) void regs_block_avx(struct regs_io *io);
__attribute__((visibility("hidden"))) void regs_block_avx512f(struct regs_io *io);
__attribute__((visibility("hidden"))) void regs_block_avx512bw(struct regs_io *io);
__attribute__((visibility("hidden"))) void spin_block_sse(struct regs_io *io);
__attribute__((visibility("hidden"))) void spin_block_avx(struct regs_io *io);
__attribute__((visibility("hidden"))) void spin_block_avx512f(struct regs_io *io);
__attribute__((visibility("hidden"))) void spin_block_avx512bw(struct regs_io *io);

static const struct regs_mode regs_modes[] = {
	{ "sse", regs_block_sse, spin_block_sse, 16, 16, 0, 0 },
	{ "avx", regs_block_avx, spin_block_avx, 16, 32, 0, 0 },
	{ "avx512f", regs_block_avx512f, spin_block_avx512f, 32, 64, 7, 0xffff },
	{ "avx512bw", regs_block_avx512bw, spin_block_avx512bw, 32, 64, 7, ~0ull },
};

static const struct regs_mode *pick_regs_mode(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return __builtin_cpu_supports("avx512bw") ? &regs_modes[3] : &regs_modes[2];
	if (__builtin_cpu_supports("avx"))
		return &regs_modes[1];
	return &regs_modes[0];
}

#else /* !__x86_64__ */

/*
 * No register sentinel for this architecture yet: a plain read() that
 * reports every register as unchanged, so only the data is checked.
 */
static void regs_block_generic(struct regs_io *io)
{
	ssize_t n = read((int)io->fd, (void *)(uintptr_t)io->buf, io->len);

	io->ret = n < 0 ? -errno : n;
	memcpy(io->gout, io->gin, sizeof(io->gout));
	io->aout[0] = io->fd;
	io->aout[1] = io->buf;
	io->aout[2] = io->len;
	io->mxcsr[1] = io->mxcsr[0];
	io->fcw[1] = io->fcw[0];
}

static const struct regs_mode regs_modes[] = {
	{ "generic", regs_block_generic, NULL, 0, 0, 0, 0 },
};

static const struct regs_mode *pick_regs_mode(void)
{
	return &regs_modes[0];
}

#endif /* __x86_64__ */
static inline void regs_fill(struct regs_io *io, unsigned int round, int fd, void *buf, size_t len)
{
	unsigned int i, j;

	memset(io, 0, sizeof(*io));
	io->fd = (uint64_t)fd;
	io->buf = (uint64_t)(uintptr_t)buf;
	io->len = len;
	for (i = 0; i < NGPR; i++)
		io->gin[i] = 0xc0de000000000000ull ^ ((uint64_t)(i + 1) << 40) ^
			     ((uint64_t)round * 0x9e3779b9ull) ^ (0x1111ull * (i + 1));
	/* Round towards zero, DAZ, all exceptions masked; x87 likewise. */
	io->mxcsr[0] = 0x7fc0;
	io->fcw[0] = 0x0f7f;
	for (i = 1; i < 8; i++)
		io->kin[i] = 0x5a5a5a5a00000000ull | ((uint64_t)(i * 0x1111u) ^ (round & 0xff) ^
						      ((uint64_t)i << 20));
	for (i = 0; i < 32; i++)
		for (j = 0; j < 64; j++)
			io->vin[i][j] = (uint8_t)(i * 53u + j * 7u + round * 13u + 1u);
}

/* Every register but the syscall's result; 0 if all came back, else res says which. */
static inline int regs_check(const struct regs_io *io, const struct regs_mode *m, char *res,
			     size_t ressz)
{
	unsigned int i, j;

	for (i = 0; i < NGPR; i++) {
		if (io->gout[i] != io->gin[i]) {
			snprintf(res, ressz, "%s=0x%llx want 0x%llx", gpr_names[i],
				 (unsigned long long)io->gout[i], (unsigned long long)io->gin[i]);
			return -1;
		}
	}
	if (io->aout[0] != io->fd || io->aout[1] != io->buf || io->aout[2] != io->len) {
		snprintf(res, ressz, "rdi=0x%llx rsi=0x%llx rdx=0x%llx",
			 (unsigned long long)io->aout[0], (unsigned long long)io->aout[1],
			 (unsigned long long)io->aout[2]);
		return -1;
	}
	if (io->rsp[0] != io->rsp[1]) {
		snprintf(res, ressz, "rsp=0x%llx want 0x%llx", (unsigned long long)io->rsp[1],
			 (unsigned long long)io->rsp[0]);
		return -1;
	}
	if (io->mxcsr[1] != io->mxcsr[0]) {
		snprintf(res, ressz, "mxcsr=0x%x want 0x%x", io->mxcsr[1], io->mxcsr[0]);
		return -1;
	}
	if (io->fcw[1] != io->fcw[0]) {
		snprintf(res, ressz, "x87 cw=0x%x want 0x%x", io->fcw[1], io->fcw[0]);
		return -1;
	}
	for (i = 1; i <= m->nk; i++) {
		if ((io->kout[i] & m->kmask) != (io->kin[i] & m->kmask)) {
			snprintf(res, ressz, "k%u=0x%llx want 0x%llx", i,
				 (unsigned long long)(io->kout[i] & m->kmask),
				 (unsigned long long)(io->kin[i] & m->kmask));
			return -1;
		}
	}
	for (i = 0; i < m->nvec; i++) {
		for (j = 0; j < m->vlen; j++) {
			if (io->vout[i][j] != io->vin[i][j]) {
				const char *r = m->vlen == 64 ? "zmm" :
						m->vlen == 32 ? "ymm" : "xmm";

				snprintf(res, ressz, "%s%u byte %u=0x%02x want 0x%02x", r, i, j,
					 io->vout[i][j], io->vin[i][j]);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * One round of the block sentinel: the read's result and data (byte k must
 * be pat(seed, k)), then every register.  res gets "ok" or "bad WHAT"; a
 * read that failed with EINTR is counted in *eintr as well.  On arm64,
 * jemalloc_victim has tests/aarch64/regs_a64.h's a64_regs_check() instead.
 */
static inline void regs_check_read(const struct regs_io *io, const struct regs_mode *m,
				   size_t len, const uint8_t *buf, unsigned int seed, char *res,
				   size_t ressz, uint8_t (*pat)(unsigned int, size_t),
				   atomic_ulong *eintr)
{
	size_t k;

	if (io->ret < 0) {
		snprintf(res, ressz, "bad read syscall returned %lld%s", (long long)io->ret,
			 io->ret == -EINTR ? " (EINTR)" : "");
		if (io->ret == -EINTR)
			atomic_fetch_add(eintr, 1);
		return;
	}
	if ((uint64_t)io->ret != len) {
		snprintf(res, ressz, "bad read syscall returned %lld, wanted %zu", (long long)io->ret,
			 len);
		return;
	}
	for (k = 0; k < len; k++) {
		if (buf[k] != pat(seed, k)) {
			snprintf(res, ressz, "bad data byte %zu", k);
			return;
		}
	}
	if (regs_check(io, m, res + 4, ressz - 4) == 0)
		snprintf(res, ressz, "ok");
	else
		memcpy(res, "bad ", 4);
}

#endif /* VREGS_H */
