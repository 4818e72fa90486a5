// SPDX-License-Identifier: MIT
/*
 * a64_victim: arm64-only cases for heapctl's integration tests
 * (tests/integration/t_aarch64.c).  Built with -mbranch-protection=standard,
 * as much arm64 distribution code is, and linked with jemalloc.
 *
 * Usage: a64_victim READY_FD CTL_FD REPLY_FD   (see tests/victims/vcommon.h)
 *
 * Threads:
 *   main    reads commands on CTL_FD
 *   pacok   read() on a pipe, six PAC-signed frames deep
 *   pacbad  the same, but one of those frames is victim_malloc_hold(), a
 *           malloc-family name, four frames above read(): libunwind 1.6.2
 *           stops at the first DW_CFA_AARCH64_negate_ra_state and reports
 *           the end of the stack after three frames, so only a complete
 *           walk finds it.  heapctl must refuse to borrow this thread.
 *   sve     started by "svestart": holds known values in z0-z31, p0-p15,
 *           ffr, x19-x28 and fpcr while spinning in user space (no
 *           syscall, so the SVE state stays live), then checks them;
 *           round after round.  A thread borrowed there has its whole SVE
 *           state in NT_ARM_SVE, not only the FPSIMD view.
 *
 * Commands (one reply line each):
 *   ping       pong
 *   tids       tids pid=P main=T pacok=T pacbad=T sve=T sve_vl=BYTES jemalloc=VERSION
 *   pacpoke    pacpoke ok | pacpoke bad WHY   (both pac threads read a byte
 *              and are back in read())
 *   svestart   svestart ok tid=T vl=BYTES | svestart none (no SVE)
 *   sve        sve ok rounds=N | sve bad WHAT  (first bad round since the
 *              previous "sve")
 *   quit       bye, then exit(0)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/auxv.h>
#include <jemalloc/jemalloc.h>

#include "../victims/vcommon.h"

#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif

#define WAIT_MS 10000
#define VL_MAX 256

static struct {
	pid_t main, pacok, pacbad, sve;
	int ok_pipe[2], bad_pipe[2];
	atomic_ulong ok_reads, bad_reads;
} g;

/* ---------------------------------------------------------------------
 * PAC-signed call chains.  Every level is a real frame (noinline, and
 * no sibling calls: -fno-optimize-sibling-calls), signs its return
 * address (paciasp) and keeps a frame record.
 */
#define LEVEL __attribute__((noinline, used))

static LEVEL int pac_l5(int fd)
{
	char c;
	ssize_t n;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	__asm__ volatile("" ::: "memory");
	return (int)n;
}

static LEVEL int pac_l4(int fd)
{
	int r = pac_l5(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

static LEVEL int pac_l3(int fd)
{
	int r = pac_l4(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

/* Named like an allocator entry point: heapctl treats it as one. */
static LEVEL int victim_malloc_hold(int fd)
{
	int r = pac_l3(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

static LEVEL int pac_middle(int fd)
{
	int r = pac_l3(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

static LEVEL int pac_l2(int fd, int bad)
{
	int r = bad ? victim_malloc_hold(fd) : pac_middle(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

static LEVEL int pac_l1(int fd, int bad)
{
	int r = pac_l2(fd, bad);

	__asm__ volatile("" ::: "memory");
	return r;
}

static void *pac_thread(void *arg)
{
	int bad = arg != NULL;

	__atomic_store_n(bad ? &g.pacbad : &g.pacok, vgettid(), __ATOMIC_RELEASE);
	while (pac_l1(bad ? g.bad_pipe[0] : g.ok_pipe[0], bad) == 1)
		atomic_fetch_add(bad ? &g.bad_reads : &g.ok_reads, 1);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Live SVE sentinel.
 */
struct sve_io {
	uint64_t zin, zout;	/* 32 vectors of VL bytes */
	uint64_t pin, pout;	/* 17 predicates of VL/8 bytes: p0-p15, ffr */
	uint64_t xin[10], xout[10];	/* x19-x28 */
	uint64_t fpcr[2];	/* in, out */
	uint64_t until;		/* cntvct_el0 value to spin until */
};

#define SIO_ZIN		0
#define SIO_ZOUT	8
#define SIO_PIN		16
#define SIO_POUT	24
#define SIO_XIN		32
#define SIO_XOUT	112
#define SIO_FPCR	192
#define SIO_UNTIL	208

_Static_assert(offsetof(struct sve_io, xin) == SIO_XIN, "layout");
_Static_assert(offsetof(struct sve_io, xout) == SIO_XOUT, "layout");
_Static_assert(offsetof(struct sve_io, fpcr) == SIO_FPCR, "layout");
_Static_assert(offsetof(struct sve_io, until) == SIO_UNTIL, "layout");

#define S_(x) #x
#define S(x) S_(x)
#define Z32 "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"
#define P16 "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
#define X10 "19,20,21,22,23,24,25,26,27,28"

/*
 * Frame (160 bytes): [0] x29,x30 [16] x19-x28 [96] d8-d15 [160] -
 * x8 holds io throughout; x9/x10 are the only scratch registers.
 */
__asm__(
	".arch_extension sve\n"
	".text\n"
	".globl sve_spin\n"
	".hidden sve_spin\n"
	".type sve_spin,%function\n"
	".p2align 4\n"
	"sve_spin:\n"
	"	.cfi_startproc\n"
	"	hint 25\n"	/* paciasp, as the compiled code around it */
	"	.cfi_negate_ra_state\n"
	"	stp x29, x30, [sp, #-176]!\n"
	"	.cfi_def_cfa_offset 176\n"
	"	.cfi_offset 29, -176\n"
	"	.cfi_offset 30, -168\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n"
	"	stp x21, x22, [sp, #32]\n"
	"	stp x23, x24, [sp, #48]\n"
	"	stp x25, x26, [sp, #64]\n"
	"	stp x27, x28, [sp, #80]\n"
	"	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n"
	"	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n"
	"	mrs x9, fpcr\n"
	"	str x9, [sp, #160]\n"
	"	mov x8, x0\n"
	"	ldr x9, [x8, #" S(SIO_FPCR) "]\n"
	"	msr fpcr, x9\n"
	"	ldr x9, [x8, #" S(SIO_PIN) "]\n"
	"	ldr p0, [x9, #16, mul vl]\n"
	"	wrffr p0.b\n"
	".irp n," P16 "\n"
	"	ldr p\\n, [x9, #\\n, mul vl]\n"
	".endr\n"
	"	ldr x9, [x8, #" S(SIO_ZIN) "]\n"
	".irp n," Z32 "\n"
	"	ldr z\\n, [x9, #\\n, mul vl]\n"
	".endr\n"
	".irp n," X10 "\n"
	"	ldr x\\n, [x8, #" S(SIO_XIN) " + (\\n - 19) * 8]\n"
	".endr\n"
	"	ldr x10, [x8, #" S(SIO_UNTIL) "]\n"
	"1:	isb\n"
	"	mrs x9, cntvct_el0\n"
	"	cmp x9, x10\n"
	"	b.lo 1b\n"
	".irp n," X10 "\n"
	"	str x\\n, [x8, #" S(SIO_XOUT) " + (\\n - 19) * 8]\n"
	".endr\n"
	"	mrs x9, fpcr\n"
	"	str x9, [x8, #" S(SIO_FPCR) " + 8]\n"
	"	ldr x9, [x8, #" S(SIO_ZOUT) "]\n"
	".irp n," Z32 "\n"
	"	str z\\n, [x9, #\\n, mul vl]\n"
	".endr\n"
	"	ldr x9, [x8, #" S(SIO_POUT) "]\n"
	".irp n," P16 "\n"
	"	str p\\n, [x9, #\\n, mul vl]\n"
	".endr\n"
	"	rdffr p0.b\n"
	"	str p0, [x9, #16, mul vl]\n"
	"	ldr x9, [sp, #160]\n"
	"	msr fpcr, x9\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x21, x22, [sp, #32]\n"
	"	ldp x23, x24, [sp, #48]\n"
	"	ldp x25, x26, [sp, #64]\n"
	"	ldp x27, x28, [sp, #80]\n"
	"	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n"
	"	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	ldp x29, x30, [sp], #176\n"
	"	.cfi_def_cfa_offset 0\n"
	"	.cfi_restore 29\n"
	"	.cfi_restore 30\n"
	"	hint 29\n"	/* autiasp */
	"	.cfi_negate_ra_state\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sve_spin, .-sve_spin\n");

__attribute__((visibility("hidden"))) void sve_spin(struct sve_io *io);

static unsigned int sve_vl;
static atomic_ulong sve_rounds;
static pthread_mutex_t sve_mu = PTHREAD_MUTEX_INITIALIZER;
static char sve_firstbad[320];

static uint64_t cntvct(void)
{
	uint64_t v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static uint64_t cntfrq(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}

static void sve_round(struct sve_io *io, unsigned int round, char *res, size_t ressz)
{
	static uint8_t zin[32 * VL_MAX], zout[32 * VL_MAX];
	static uint8_t pin[17 * VL_MAX / 8], pout[17 * VL_MAX / 8];
	unsigned int vl = sve_vl, pl = sve_vl / 8, i;

	memset(io, 0, sizeof(*io));
	for (i = 0; i < 32 * vl; i++)
		zin[i] = (uint8_t)(i * 7u + round * 31u + 3u);
	for (i = 0; i < 16 * pl; i++)
		pin[i] = (uint8_t)(0x3cu ^ (i * 11u) ^ round);
	/* ffr: a prefix of active elements, as a first-fault load leaves it */
	for (i = 0; i < pl; i++)
		pin[16 * pl + i] = i < (round % pl) ? 0xff : 0;
	for (i = 0; i < 10; i++)
		io->xin[i] = 0x5e5e000000000000ull ^ ((uint64_t)(i + 19) << 32) ^ round;
	io->fpcr[0] = (3u << 22) | (1u << 24); /* round to zero, flush to zero */
	memset(zout, 0xee, sizeof(zout));
	memset(pout, 0xee, sizeof(pout));
	io->zin = (uint64_t)(uintptr_t)zin;
	io->zout = (uint64_t)(uintptr_t)zout;
	io->pin = (uint64_t)(uintptr_t)pin;
	io->pout = (uint64_t)(uintptr_t)pout;
	io->until = cntvct() + cntfrq() / 50; /* 20 ms */
	sve_spin(io);

	for (i = 0; i < 32 * vl; i++) {
		if (zout[i] != zin[i]) {
			snprintf(res, ressz, "bad z%u byte %u=0x%02x want 0x%02x (vl %u)", i / vl,
				 i % vl, zout[i], zin[i], vl);
			return;
		}
	}
	for (i = 0; i < 17 * pl; i++) {
		if (pout[i] != pin[i]) {
			if (i / pl == 16)
				snprintf(res, ressz, "bad ffr byte %u=0x%02x want 0x%02x", i % pl,
					 pout[i], pin[i]);
			else
				snprintf(res, ressz, "bad p%u byte %u=0x%02x want 0x%02x", i / pl,
					 i % pl, pout[i], pin[i]);
			return;
		}
	}
	for (i = 0; i < 10; i++) {
		if (io->xout[i] != io->xin[i]) {
			snprintf(res, ressz, "bad x%u=0x%llx want 0x%llx", i + 19,
				 (unsigned long long)io->xout[i], (unsigned long long)io->xin[i]);
			return;
		}
	}
	if (io->fpcr[1] != io->fpcr[0]) {
		snprintf(res, ressz, "bad fpcr=0x%llx want 0x%llx", (unsigned long long)io->fpcr[1],
			 (unsigned long long)io->fpcr[0]);
		return;
	}
	snprintf(res, ressz, "ok");
}

static void *sve_thread(void *arg)
{
	static struct sve_io io;
	unsigned int round = 0;

	(void)arg;
	__atomic_store_n(&g.sve, vgettid(), __ATOMIC_RELEASE);
	for (;; round++) {
		char res[256];

		sve_round(&io, round, res, sizeof(res));
		if (strcmp(res, "ok")) {
			pthread_mutex_lock(&sve_mu);
			if (!sve_firstbad[0])
				snprintf(sve_firstbad, sizeof(sve_firstbad), "%s (round %u)", res,
					 round);
			pthread_mutex_unlock(&sve_mu);
		}
		atomic_fetch_add(&sve_rounds, 1);
	}
	return NULL;
}

/* ---------------------------------------------------------------------
 * Commands.
 */
static const long nr_read[] = { SYS_read };

static void start_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, arg);

	if (r) {
		errno = r;
		vdie("pthread_create");
	}
	pthread_detach(t);
}

static void cmd_pacpoke(int fd)
{
	unsigned long ok0 = atomic_load(&g.ok_reads), bad0 = atomic_load(&g.bad_reads);
	uint64_t end = vnow_ns() + WAIT_MS * 1000000ull;
	char c = 'p';

	if (vwrite_all(g.ok_pipe[1], &c, 1) || vwrite_all(g.bad_pipe[1], &c, 1))
		vdie("write pac pipes");
	while (atomic_load(&g.ok_reads) == ok0 || atomic_load(&g.bad_reads) == bad0) {
		struct timespec ts = { 0, 1000000 };

		if (vnow_ns() > end) {
			vreply(fd, "pacpoke bad a pac thread did not wake");
			return;
		}
		nanosleep(&ts, NULL);
	}
	if (!vwait_in_syscall(g.pacok, nr_read, 1, WAIT_MS) ||
	    !vwait_in_syscall(g.pacbad, nr_read, 1, WAIT_MS))
		vreply(fd, "pacpoke bad a pac thread did not block again");
	else
		vreply(fd, "pacpoke ok");
}

static void cmd_svestart(int fd)
{
	long vl;

	if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) {
		vreply(fd, "svestart none");
		return;
	}
	vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
	if (vl < 0 || (vl & 0xffff) < 16 || (vl & 0xffff) > VL_MAX) {
		vreply(fd, "svestart none (vl %ld)", vl);
		return;
	}
	if (!__atomic_load_n(&g.sve, __ATOMIC_ACQUIRE)) {
		sve_vl = (unsigned int)(vl & 0xffff);
		start_thread(sve_thread, NULL);
		while (!__atomic_load_n(&g.sve, __ATOMIC_ACQUIRE) || !atomic_load(&sve_rounds))
			sched_yield();
	}
	vreply(fd, "svestart ok tid=%d vl=%u", g.sve, sve_vl);
}

static void cmd_sve(int fd)
{
	pthread_mutex_lock(&sve_mu);
	if (sve_firstbad[0])
		vreply(fd, "sve bad %s", sve_firstbad);
	else
		vreply(fd, "sve ok rounds=%lu", atomic_load(&sve_rounds));
	sve_firstbad[0] = '\0';
	pthread_mutex_unlock(&sve_mu);
}

int main(int argc, char **argv)
{
	struct vline line = { .len = 0 };
	unsigned long eintr = 0;
	const char *je_version = NULL;
	struct vfds fds;
	char cmd[256];
	char c = 'R';
	size_t sz;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	g.main = vgettid();
	if (pipe2(g.ok_pipe, O_CLOEXEC) || pipe2(g.bad_pipe, O_CLOEXEC))
		vdie("pipe2");
	/* jemalloc by name, so the link keeps it (--as-needed), and initialised. */
	sz = sizeof(je_version);
	if (mallctl("version", &je_version, &sz, NULL, 0))
		vdie("mallctl(version)");
	free(malloc(100));
	start_thread(pac_thread, NULL);
	start_thread(pac_thread, (void *)1);
	while (!__atomic_load_n(&g.pacok, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&g.pacbad, __ATOMIC_ACQUIRE))
		sched_yield();
	if (!vwait_in_syscall(g.pacok, nr_read, 1, WAIT_MS) ||
	    !vwait_in_syscall(g.pacbad, nr_read, 1, WAIT_MS)) {
		fprintf(stderr, "victim: pac threads did not park\n");
		return 3;
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	close(fds.ready);

	for (;;) {
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), &eintr);

		if (n < 0)
			return 0;
		if (!strcmp(cmd, "ping"))
			vreply(fds.reply, "pong");
		else if (!strcmp(cmd, "tids"))
			vreply(fds.reply,
			       "tids pid=%d main=%d pacok=%d pacbad=%d sve=%d sve_vl=%u jemalloc=%s",
			       (int)getpid(), g.main, g.pacok, g.pacbad, g.sve, sve_vl, je_version);
		else if (!strcmp(cmd, "pacpoke"))
			cmd_pacpoke(fds.reply);
		else if (!strcmp(cmd, "svestart"))
			cmd_svestart(fds.reply);
		else if (!strcmp(cmd, "sve"))
			cmd_sve(fds.reply);
		else if (!strcmp(cmd, "quit")) {
			vreply(fds.reply, "bye");
			return 0;
		} else
			vreply(fds.reply, "error unknown command '%s'", cmd);
	}
}
