/* SPDX-License-Identifier: MIT */
/*
 * The arm64 register sentinel of tests/victims/jemalloc_victim.c, which
 * includes this file instead of its x86_64 assembly.
 *
 * regs_block_a64*() load known values, then make a raw read syscall that
 * blocks until the harness feeds the pipe; heapctl borrows the thread
 * while it sits there.  On arm64 a syscall returns its result in x0 and
 * preserves every other general register, sp, v0-v31, fpcr and fpsr
 * (arch/arm64/kernel/entry-common.c, el0_svc()).  With SVE, bits [127:0]
 * of z0-z31 are v0-v31 and survive too; all other bits of z0-z31, p0-p15
 * and ffr are zero after the syscall (Documentation/arm64/sve.rst,
 * "System call behaviour": sve_flush_live() at syscall entry).  After
 * heapctl restored the thread and the kernel re-ran the read, all of that
 * must still hold:
 *
 *   x3-x7, x9-x28, x30   sentinels (x0-x2 carry the arguments, x8 the
 *                        number, x29 stays the frame pointer and is
 *                        compared with itself)
 *   v0-v31               sentinels, all 128 bits
 *   fpcr, fpsr           non-default (round to zero, flush to zero, default
 *                        NaN; QC, IXC and IOC set)
 *   sp                   unchanged
 *   z0-z31 (SVE)         low 128 bits as v; upper bits zero
 *   p0-p15, ffr (SVE)    zero
 *
 * The functions carry CFI so that the unwinder in heapctl sees a normal
 * frame, and keep x29 a valid frame pointer for the frame-record walk.
 */
#ifndef REGS_A64_H
#define REGS_A64_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#define A64_VL_MAX	256	/* bytes; SVE allows up to 2048-bit vectors */

#define RIO_FD		0
#define RIO_BUF		8
#define RIO_LEN		16
#define RIO_RET		24
#define RIO_XIN		32
#define RIO_XOUT	280
#define RIO_SP		528
#define RIO_FPCR	544
#define RIO_FPSR	560
#define RIO_ZIN		576
#define RIO_ZOUT	584
#define RIO_PIN		592
#define RIO_POUT	600
#define RIO_VIN		608
#define RIO_VOUT	1120

struct regs_io {
	uint64_t fd;
	uint64_t buf;
	uint64_t len;
	int64_t ret;
	uint64_t xin[31];	/* x0..x30; only the sentinel ones are loaded */
	uint64_t xout[31];
	uint64_t sp[2];		/* before, after */
	uint64_t fpcr[2];	/* in, out */
	uint64_t fpsr[2];	/* in, out */
	uint64_t zin, zout;	/* SVE: 32 vectors of VL bytes */
	uint64_t pin, pout;	/* SVE: 16 (in) or 17 (out: p0-p15, ffr) of VL/8 bytes */
	uint8_t vin[32][16];
	uint8_t vout[32][16];
};

_Static_assert(offsetof(struct regs_io, ret) == RIO_RET, "layout");
_Static_assert(offsetof(struct regs_io, xin) == RIO_XIN, "layout");
_Static_assert(offsetof(struct regs_io, xout) == RIO_XOUT, "layout");
_Static_assert(offsetof(struct regs_io, sp) == RIO_SP, "layout");
_Static_assert(offsetof(struct regs_io, fpcr) == RIO_FPCR, "layout");
_Static_assert(offsetof(struct regs_io, fpsr) == RIO_FPSR, "layout");
_Static_assert(offsetof(struct regs_io, zin) == RIO_ZIN, "layout");
_Static_assert(offsetof(struct regs_io, pout) == RIO_POUT, "layout");
_Static_assert(offsetof(struct regs_io, vin) == RIO_VIN, "layout");
_Static_assert(offsetof(struct regs_io, vout) == RIO_VOUT, "layout");

#define A64_S_(x) #x
#define A64_S(x) A64_S_(x)

/* Registers holding sentinels: all but x0-x2 (arguments), x8 (number), x29 (fp). */
#define A64_XSENT "3,4,5,6,7,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,30"
#define A64_V32 "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"
#define A64_P16 "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"

/*
 * Frame (192 bytes): [0] x29,x30  [16] x19-x28  [96] d8-d15  [160] io
 * [168] syscall result  [176] caller's fpcr  [184] caller's fpsr
 */
#define A64_HEAD(fn)							\
	".text\n"							\
	".globl " fn "\n"						\
	".hidden " fn "\n"						\
	".type " fn ",%function\n"					\
	".p2align 4\n"							\
	fn ":\n"							\
	"	.cfi_startproc\n"					\
	"	stp x29, x30, [sp, #-192]!\n"				\
	"	.cfi_def_cfa_offset 192\n"				\
	"	.cfi_offset 29, -192\n"					\
	"	.cfi_offset 30, -184\n"					\
	"	mov x29, sp\n"						\
	"	.cfi_def_cfa_register 29\n"				\
	"	stp x19, x20, [sp, #16]\n"				\
	"	stp x21, x22, [sp, #32]\n"				\
	"	stp x23, x24, [sp, #48]\n"				\
	"	stp x25, x26, [sp, #64]\n"				\
	"	stp x27, x28, [sp, #80]\n"				\
	"	stp d8, d9, [sp, #96]\n"				\
	"	stp d10, d11, [sp, #112]\n"				\
	"	stp d12, d13, [sp, #128]\n"				\
	"	stp d14, d15, [sp, #144]\n"				\
	"	str x0, [sp, #160]\n"					\
	"	mrs x9, fpcr\n"						\
	"	mrs x10, fpsr\n"					\
	"	stp x9, x10, [sp, #176]\n"				\
	"	mov x8, x0\n"						\
	"	ldr x9, [x8, #" A64_S(RIO_FPCR) "]\n"			\
	"	msr fpcr, x9\n"						\
	"	ldr x9, [x8, #" A64_S(RIO_FPSR) "]\n"			\
	"	msr fpsr, x9\n"

#define A64_LOAD_V							\
	".irp n," A64_V32 "\n"						\
	"	ldr q\\n, [x8, #" A64_S(RIO_VIN) " + \\n * 16]\n"		\
	".endr\n"

/* z0-z31 and p0-p15 from the SVE buffers, ffr from p0's slot 16 first. */
#define A64_LOAD_SVE							\
	"	ldr x9, [x8, #" A64_S(RIO_PIN) "]\n"			\
	"	ldr p0, [x9, #16, mul vl]\n"				\
	"	wrffr p0.b\n"						\
	".irp n," A64_P16 "\n"						\
	"	ldr p\\n, [x9, #\\n, mul vl]\n"				\
	".endr\n"							\
	"	ldr x9, [x8, #" A64_S(RIO_ZIN) "]\n"			\
	".irp n," A64_V32 "\n"						\
	"	ldr z\\n, [x9, #\\n, mul vl]\n"				\
	".endr\n"

#define A64_SYSCALL							\
	"	mov x9, sp\n"						\
	"	str x9, [x8, #" A64_S(RIO_SP) "]\n"			\
	"	str x29, [x8, #" A64_S(RIO_XIN) " + 29 * 8]\n"		\
	".irp n," A64_XSENT "\n"					\
	"	ldr x\\n, [x8, #" A64_S(RIO_XIN) " + \\n * 8]\n"		\
	".endr\n"							\
	"	ldr x0, [x8, #" A64_S(RIO_FD) "]\n"			\
	"	ldr x1, [x8, #" A64_S(RIO_BUF) "]\n"			\
	"	ldr x2, [x8, #" A64_S(RIO_LEN) "]\n"			\
	"	mov x8, #63\n"	/* __NR_read */				\
	"	svc #0\n"						\
	"	str x0, [sp, #168]\n"					\
	"	ldr x0, [sp, #160]\n"					\
	".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30\n" \
	"	str x\\n, [x0, #" A64_S(RIO_XOUT) " + \\n * 8]\n"		\
	".endr\n"							\
	"	mov x1, sp\n"						\
	"	str x1, [x0, #" A64_S(RIO_SP) " + 8]\n"			\
	"	ldr x1, [sp, #168]\n"					\
	"	str x1, [x0, #" A64_S(RIO_RET) "]\n"			\
	"	mrs x1, fpcr\n"						\
	"	str x1, [x0, #" A64_S(RIO_FPCR) " + 8]\n"			\
	"	mrs x1, fpsr\n"						\
	"	str x1, [x0, #" A64_S(RIO_FPSR) " + 8]\n"

#define A64_STORE_V							\
	".irp n," A64_V32 "\n"						\
	"	str q\\n, [x0, #" A64_S(RIO_VOUT) " + \\n * 16]\n"		\
	".endr\n"

#define A64_STORE_SVE							\
	"	ldr x1, [x0, #" A64_S(RIO_ZOUT) "]\n"			\
	".irp n," A64_V32 "\n"						\
	"	str z\\n, [x1, #\\n, mul vl]\n"				\
	".endr\n"							\
	"	ldr x1, [x0, #" A64_S(RIO_POUT) "]\n"			\
	".irp n," A64_P16 "\n"						\
	"	str p\\n, [x1, #\\n, mul vl]\n"				\
	".endr\n"							\
	"	rdffr p0.b\n"						\
	"	str p0, [x1, #16, mul vl]\n"

#define A64_TAIL(fn)							\
	"	ldp x9, x10, [sp, #176]\n"				\
	"	msr fpcr, x9\n"						\
	"	msr fpsr, x10\n"					\
	"	ldp x19, x20, [sp, #16]\n"				\
	"	ldp x21, x22, [sp, #32]\n"				\
	"	ldp x23, x24, [sp, #48]\n"				\
	"	ldp x25, x26, [sp, #64]\n"				\
	"	ldp x27, x28, [sp, #80]\n"				\
	"	ldp d8, d9, [sp, #96]\n"				\
	"	ldp d10, d11, [sp, #112]\n"				\
	"	ldp d12, d13, [sp, #128]\n"				\
	"	ldp d14, d15, [sp, #144]\n"				\
	"	ldp x29, x30, [sp], #192\n"				\
	"	.cfi_def_cfa 31, 0\n"					\
	"	.cfi_restore 29\n"					\
	"	.cfi_restore 30\n"					\
	"	ret\n"							\
	"	.cfi_endproc\n"						\
	".size " fn ", .-" fn "\n"

__asm__(
	A64_HEAD("regs_block_a64")
	A64_LOAD_V
	A64_SYSCALL
	A64_STORE_V
	A64_TAIL("regs_block_a64")

	".arch_extension sve\n"
	A64_HEAD("regs_block_a64_sve")
	A64_LOAD_SVE
	A64_SYSCALL
	A64_STORE_V
	A64_STORE_SVE
	A64_TAIL("regs_block_a64_sve")
);

__attribute__((visibility("hidden"))) void regs_block_a64(struct regs_io *io);
__attribute__((visibility("hidden"))) void regs_block_a64_sve(struct regs_io *io);

struct regs_mode {
	const char *name;
	void (*block)(struct regs_io *io);
	unsigned int vl;	/* SVE vector length in bytes, 0 without SVE */
};

static struct regs_mode regs_modes[] = {
	{ "a64", regs_block_a64, 0 },
	{ "a64+sve", regs_block_a64_sve, 0 },
};

/* Flat, as the hardware lays them out: vector i at i * VL, predicate i at i * VL / 8. */
static uint8_t a64_zin[32 * A64_VL_MAX], a64_zout[32 * A64_VL_MAX];
static uint8_t a64_pin[17 * A64_VL_MAX / 8], a64_pout[17 * A64_VL_MAX / 8];
static unsigned int a64_vl;

static const struct regs_mode *pick_regs_mode(void)
{
	long vl;

	if (!(getauxval(AT_HWCAP) & HWCAP_SVE))
		return &regs_modes[0];
	vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
	if (vl < 0 || (vl & 0xffff) < 16 || (vl & 0xffff) > A64_VL_MAX)
		return &regs_modes[0];
	regs_modes[1].vl = a64_vl = (unsigned int)(vl & 0xffff);
	return &regs_modes[1];
}

static void a64_regs_fill(struct regs_io *io, unsigned int round, void *buf, size_t len, int fd)
{
	unsigned int i, j, vl = a64_vl, pl = a64_vl / 8;

	memset(io, 0, sizeof(*io));
	io->fd = (uint64_t)fd;
	io->buf = (uint64_t)(uintptr_t)buf;
	io->len = len;
	for (i = 0; i < 31; i++)
		io->xin[i] = 0xc0de000000000000ull ^ ((uint64_t)(i + 1) << 40) ^
			     ((uint64_t)round * 0x9e3779b9ull) ^ (0x1111ull * (i + 1));
	/* RMode = round towards zero, FZ, DN; QC, IXC, IOC set. */
	io->fpcr[0] = (3u << 22) | (1u << 24) | (1u << 25);
	io->fpsr[0] = (1u << 27) | (1u << 4) | (1u << 0);
	for (i = 0; i < 32; i++)
		for (j = 0; j < 16; j++)
			io->vin[i][j] = (uint8_t)(i * 53u + j * 7u + round * 13u + 1u);
	/* z: v in the low 16 bytes, another pattern above; p: bytes; ffr: a prefix. */
	for (i = 0; i < 32; i++)
		for (j = 0; j < vl; j++)
			a64_zin[i * vl + j] = j < 16 ? io->vin[i][j] : (uint8_t)(i * 29u + j * 3u + round);
	for (i = 0; i < 16; i++)
		for (j = 0; j < pl; j++)
			a64_pin[i * pl + j] = (uint8_t)(0xa5u ^ (i * 17u) ^ (j * 5u) ^ round);
	/* ffr holds what a first-fault load can leave: a prefix of active elements */
	for (j = 0; j < pl; j++)
		a64_pin[16 * pl + j] = j < pl / 2 ? 0xff : 0;
	io->zin = (uint64_t)(uintptr_t)a64_zin;
	io->zout = (uint64_t)(uintptr_t)a64_zout;
	io->pin = (uint64_t)(uintptr_t)a64_pin;
	io->pout = (uint64_t)(uintptr_t)a64_pout;
	memset(a64_zout, 0x5a, sizeof(a64_zout));
	memset(a64_pout, 0x5a, sizeof(a64_pout));
}

static void a64_regs_check(const struct regs_io *io, const struct regs_mode *m, size_t len,
			   const uint8_t *buf, unsigned int seed, char *res, size_t ressz,
			   uint8_t (*pat)(unsigned int, size_t), atomic_ulong *eintr)
{
	unsigned int i, j;
	size_t k;

	if (io->ret < 0) {
		snprintf(res, ressz, "bad read syscall returned %lld%s", (long long)io->ret,
			 io->ret == -4 ? " (EINTR)" : "");
		if (io->ret == -4)
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
	for (i = 1; i < 31; i++) {
		uint64_t want = i == 1 ? io->buf : i == 2 ? io->len : i == 8 ? 63 : io->xin[i];

		if (io->xout[i] != want) {
			snprintf(res, ressz, "bad x%u=0x%llx want 0x%llx", i,
				 (unsigned long long)io->xout[i], (unsigned long long)want);
			return;
		}
	}
	if (io->sp[0] != io->sp[1]) {
		snprintf(res, ressz, "bad sp=0x%llx want 0x%llx", (unsigned long long)io->sp[1],
			 (unsigned long long)io->sp[0]);
		return;
	}
	if (io->fpcr[1] != io->fpcr[0] || io->fpsr[1] != io->fpsr[0]) {
		snprintf(res, ressz, "bad fpcr=0x%llx fpsr=0x%llx want 0x%llx 0x%llx",
			 (unsigned long long)io->fpcr[1], (unsigned long long)io->fpsr[1],
			 (unsigned long long)io->fpcr[0], (unsigned long long)io->fpsr[0]);
		return;
	}
	for (i = 0; i < 32; i++) {
		for (j = 0; j < 16; j++) {
			if (io->vout[i][j] != io->vin[i][j]) {
				snprintf(res, ressz, "bad v%u byte %u=0x%02x want 0x%02x", i, j,
					 io->vout[i][j], io->vin[i][j]);
				return;
			}
		}
	}
	for (i = 0; m->vl && i < 32; i++) {
		for (j = 0; j < m->vl; j++) {
			uint8_t want = j < 16 ? io->vin[i][j] : 0;
			uint8_t got = a64_zout[i * m->vl + j];

			if (got != want) {
				snprintf(res, ressz, "bad z%u byte %u=0x%02x want 0x%02x (vl %u)", i, j,
					 got, want, m->vl);
				return;
			}
		}
	}
	for (i = 0; m->vl && i < 17; i++) {
		for (j = 0; j < m->vl / 8; j++) {
			uint8_t got = a64_pout[i * (m->vl / 8) + j];

			if (got) {
				if (i == 16)
					snprintf(res, ressz, "bad ffr byte %u=0x%02x want 0", j, got);
				else
					snprintf(res, ressz, "bad p%u byte %u=0x%02x want 0", i, j, got);
				return;
			}
		}
	}
	snprintf(res, ressz, "ok");
}

#endif /* REGS_A64_H */
