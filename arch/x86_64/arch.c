// SPDX-License-Identifier: MIT
/*
 * x86_64 backend: System V AMD64 calls over the NT_PRSTATUS image.
 * Pure functions; compiled and unit-tested on every host.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <capstone/capstone.h>

#include "arch.h"
#include "err.h"

#if defined(__x86_64__)
#include <stddef.h>
#include <sys/user.h>
#endif

/* Mirror of struct user_regs_struct (arch/x86/include/asm/user_64.h). */
struct x64_gregs {
	uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	uint64_t rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss;
	uint64_t fs_base, gs_base, ds, es, fs, gs;
};

#if defined(__x86_64__)
_Static_assert(sizeof(struct x64_gregs) == sizeof(struct user_regs_struct), "gregs size");
_Static_assert(offsetof(struct x64_gregs, orig_rax) ==
		       offsetof(struct user_regs_struct, orig_rax), "orig_rax");
_Static_assert(offsetof(struct x64_gregs, fs_base) ==
		       offsetof(struct user_regs_struct, fs_base), "fs_base");
#endif

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

#define X86_RED_ZONE 128
#define X86_EFLAGS_TF (1u << 8)
#define X86_EFLAGS_DF (1u << 10)
#define X86_SI_KERNEL 0x80 /* int3 is reported as SI_KERNEL, not TRAP_BRKPT */

static const uint8_t x64_trap[] = {
	0xcc, /* int3 */
};
static const uint8_t x64_cb_stub[] = {
	0xcc, /* int3: heapctl reads the callback's arguments here */
	0xc3, /* ret */
};
static const uint8_t x64_syscall[] = {
	0x0f, 0x05, /* syscall */
};
/* Saved and restored verbatim: the whole XSAVE image, whatever its size. */
static const unsigned int x64_extra[] = { NT_X86_XSTATE, 0 };

static uint64_t get_pc(const void *g)
{
	return ((const struct x64_gregs *)g)->rip;
}

static uint64_t get_sp(const void *g)
{
	return ((const struct x64_gregs *)g)->rsp;
}

static uint64_t get_arg(const void *gv, unsigned int i)
{
	const struct x64_gregs *g = gv;
	const uint64_t a[] = { g->rdi, g->rsi, g->rdx, g->rcx, g->r8, g->r9 };

	return i < 6 ? a[i] : 0;
}

static void set_args(struct x64_gregs *g, const uint64_t *args, unsigned int n)
{
	uint64_t *slot[] = { &g->rdi, &g->rsi, &g->rdx, &g->rcx, &g->r8, &g->r9 };

	for (unsigned int i = 0; i < n && i < 6; i++)
		*slot[i] = args[i];
}

static int prep_call(void *gv, struct hc_call *c, struct hc_err *err)
{
	struct x64_gregs *g = gv;
	uint64_t sp;

	if (c->nargs > 6)
		return err_set(err, HC_E_ARGS, 0, "%u arguments; x86_64 passes at most 6 in registers",
			       c->nargs);
	set_args(g, c->args, c->nargs);
	/* Below the red zone, 16-aligned, then the return address: rsp % 16 == 8. */
	sp = ((c->sp - X86_RED_ZONE) & ~15ull) - 8;
	g->rsp = sp;
	g->rip = c->fn;
	g->rax = 0; /* varargs: no vector registers used */
	g->eflags &= ~(uint64_t)(X86_EFLAGS_TF | X86_EFLAGS_DF);
	g->orig_rax = (uint64_t)-1;
	c->slot_addr = sp;
	c->slot_val = c->trap_addr;
	return 0;
}

static uint64_t get_ret(const void *g)
{
	return ((const struct x64_gregs *)g)->rax;
}

static void prep_syscall(void *gv, uint64_t pc, long nr, const uint64_t *args, unsigned int n)
{
	struct x64_gregs *g = gv;
	uint64_t *slot[] = { &g->rdi, &g->rsi, &g->rdx, &g->r10, &g->r8, &g->r9 };

	for (unsigned int i = 0; i < n && i < 6; i++)
		*slot[i] = args[i];
	g->rax = (uint64_t)nr;
	g->orig_rax = (uint64_t)-1;
	g->rip = pc;
	g->eflags &= ~(uint64_t)(X86_EFLAGS_TF | X86_EFLAGS_DF);
}

static int64_t get_syscall_ret(const void *g)
{
	return (int64_t)((const struct x64_gregs *)g)->rax;
}

static bool stopped_at_trap(const void *g, const siginfo_t *si, uint64_t trap_addr)
{
	/* int3 leaves rip after the instruction. */
	return si->si_signo == SIGTRAP && si->si_code == X86_SI_KERNEL &&
	       get_pc(g) == trap_addr + sizeof(x64_trap);
}

/*
 * x86 decides whether to restart an interrupted syscall after the ptrace
 * stop, in arch_do_signal_or_restart() (arch/x86/kernel/signal.c), from
 * orig_ax and ax.  orig_rax = -1 keeps it away from injected state; the
 * saved original registers, restored at a stop inside signal delivery,
 * re-arm the restart exactly as it would have happened.
 */
static void no_restart(void *g)
{
	((struct x64_gregs *)g)->orig_rax = (uint64_t)-1;
}

/* x86_64 numbers of the syscalls that fail with EINTR on a mere stop. */
static const long stop_eintr_nrs[] = {
	232, /* epoll_wait */
	281, /* epoll_pwait */
	441, /* epoll_pwait2 */
	65,  /* semop */
	220, /* semtimedop */
	128, /* rt_sigtimedwait */
	208, /* io_getevents */
	333, /* io_pgetevents */
};

static bool undo_stop_eintr(void *gv)
{
	struct x64_gregs *g = gv;

	if ((int64_t)g->rax != -4 /* -EINTR */)
		return false;
	for (size_t i = 0; i < sizeof(stop_eintr_nrs) / sizeof(stop_eintr_nrs[0]); i++) {
		if ((long)g->orig_rax != stop_eintr_nrs[i])
			continue;
		/* back onto the 2-byte syscall instruction, with the number in rax */
		g->rax = g->orig_rax;
		g->rip -= sizeof(x64_syscall);
		g->orig_rax = (uint64_t)-1;
		return true;
	}
	return false;
}

static long syscall_nr(const void *g)
{
	return (long)((const struct x64_gregs *)g)->orig_rax;
}

/*
 * XSAVE layout (SDM vol. 1, 13.4): legacy FXSAVE area, then the 64-byte
 * header whose first word is XSTATE_BV.
 */
#define XS_FCW 0

#define XS_MXCSR 24

#define XS_HDR 512
#define XFEAT_X87 (1ull << 0)
#define XFEAT_SSE (1ull << 1)
#define XFEAT_AVX_UPPER ((1ull << 2) | (1ull << 5) | (1ull << 6) | (1ull << 7))

static bool call_fpstate(unsigned int nt, void *buf, size_t len)
{
	uint8_t *x = buf;
	uint16_t fcw = 0x037f; /* default control word: all exceptions masked */
	uint32_t mxcsr = 0x1f80, mxcsr_mask;
	uint64_t bv;

	if (nt != NT_X86_XSTATE || len < XS_HDR + 64)
		return false;
	/*
	 * The ABI promises the callee an empty x87 stack and default control
	 * words.  A thread stopped mid-computation may have neither, so give
	 * the call a clean FPU; the saved image is restored afterwards.
	 * Registers are written as init values with their bits kept in
	 * XSTATE_BV so that MXCSR is really loaded; the AVX/AVX-512 upper
	 * parts go to their init state.  PKRU, AMX and the rest are kept.
	 */
	memcpy(&mxcsr_mask, x + XS_MXCSR + 4, 4); /* read-only CPU fact: keep */
	memset(x, 0, 512 - 48); /* FXSAVE area up to the software-reserved bytes */
	memcpy(x + XS_MXCSR + 4, &mxcsr_mask, 4);
	memcpy(x + XS_FCW, &fcw, 2);
	memcpy(x + XS_MXCSR, &mxcsr, 4);
	/* abridged tag word 0: every x87 register empty; FSW, FOP 0 */
	memcpy(&bv, x + XS_HDR, 8);
	bv |= XFEAT_X87 | XFEAT_SSE;
	bv &= ~XFEAT_AVX_UPPER;
	memcpy(x + XS_HDR, &bv, 8);
	return true;
}

static int dump_regs(const void *gv, char *out, size_t n)
{
	const struct x64_gregs *g = gv;

	return snprintf(out, n,
			"rip %016" PRIx64 " rsp %016" PRIx64 " rbp %016" PRIx64 " eflags %08" PRIx64 "\n"
			"rax %016" PRIx64 " orig_rax %016" PRIx64 " rdi %016" PRIx64 " rsi %016" PRIx64 "\n"
			"rdx %016" PRIx64 " rcx %016" PRIx64 " r8  %016" PRIx64 " r9  %016" PRIx64 "\n"
			"r10 %016" PRIx64 " r11 %016" PRIx64 " rbx %016" PRIx64 " r12 %016" PRIx64 "\n"
			"r13 %016" PRIx64 " r14 %016" PRIx64 " r15 %016" PRIx64 " fs_base %016" PRIx64,
			g->rip, g->rsp, g->rbp, g->eflags, g->rax, g->orig_rax, g->rdi, g->rsi,
			g->rdx, g->rcx, g->r8, g->r9, g->r10, g->r11, g->rbx, g->r12, g->r13, g->r14,
			g->r15, g->fs_base);
}

const struct hc_arch hc_arch_x86_64 = {
	.name = "x86_64",
	.e_machine = EM_X86_64,
	.gregs_len = sizeof(struct x64_gregs),
	.extra_regsets = x64_extra,
	.trap = x64_trap,
	.trap_len = sizeof(x64_trap),
	.cb_stub = x64_cb_stub,
	.cb_stub_len = sizeof(x64_cb_stub),
	.syscall_insn = x64_syscall,
	.syscall_insn_len = sizeof(x64_syscall),
	.max_args = 6,
	.nr_mmap = 9,
	.nr_mprotect = 10,
	.nr_munmap = 11,
	.cs_arch = CS_ARCH_X86,
	.cs_mode = CS_MODE_64,
	.get_pc = get_pc,
	.get_sp = get_sp,
	.get_arg = get_arg,
	.prep_call = prep_call,
	.get_ret = get_ret,
	.prep_syscall = prep_syscall,
	.get_syscall_ret = get_syscall_ret,
	.stopped_at_trap = stopped_at_trap,
	.no_restart = no_restart,
	.undo_stop_eintr = undo_stop_eintr,
	.syscall_nr = syscall_nr,
	.call_fpstate = call_fpstate,
	.dump_regs = dump_regs,
};
