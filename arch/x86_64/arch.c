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
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>
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

static const uint8_t x64_notify[] = {
	0xb8, 0x27, 0x00, 0x00, 0x00, /* mov $39,%eax: getpid, harmless */
	0x0f, 0x05,                   /* syscall: heapctl reads rdi/rsi here */
	0xc3,                         /* ret */
};
static const uint8_t x64_endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
static const struct hc_bytes x64_entry_pads[] = {
	{ x64_endbr64, sizeof(x64_endbr64) },
	{ NULL, 0 },
};
static const uint8_t x64_syscall[] = {
	0x0f, 0x05, /* syscall */
};
static const uint8_t x64_syscall_ret[] = {
	0x0f, 0x05, /* syscall */
	0xc3,       /* ret */
};
static const uint8_t x64_restore_rt[] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, /* mov $15,%rax (glibc, musl __restore_rt) */
	0x0f, 0x05,                               /* syscall */
};
static const uint8_t x64_restore_rt2[] = {
	0xb8, 0x0f, 0x00, 0x00, 0x00, /* mov $15,%eax (Go's runtime.sigreturn) */
	0x0f, 0x05,                   /* syscall */
};
static const struct hc_bytes x64_restorers[] = {
	{ x64_restore_rt, sizeof(x64_restore_rt) },
	{ x64_restore_rt2, sizeof(x64_restore_rt2) },
	{ NULL, 0 },
};
/*
 * A ret gadget (arch.h): "mov %rax, disp(%B)" (REX.W 89 /0) with B one of
 * the registers a callee preserves, then at most X64_GADGET_TAIL of:
 * "pop %r" (not %rsp), "add $imm8, %rsp" (a multiple of 8), "xor %r32, %r32"
 * and "mov $imm32, %r32" (neither into %esp), and then "ret".  Hand-decoded
 * on purpose: the search reads a C library's text before any stop, and
 * Capstone, byte by byte, would take milliseconds; call.c's caller has
 * Capstone confirm the one it picks.
 */
#define X64_GADGET_TAIL 6

static size_t ret_gadget(const uint8_t *c, size_t len, struct hc_ret_gadget *g)
{
	unsigned int mod, rm, reg, pop = 0;
	size_t i = 3;

	if (len < 4 || (c[0] != 0x48 && c[0] != 0x49) || c[1] != 0x89)
		return 0;
	mod = c[2] >> 6;
	rm = c[2] & 7;
	if ((c[2] >> 3 & 7) != 0 || mod == 3)
		return 0; /* not from %rax, or not into memory */
	reg = rm | (c[0] == 0x49 ? 8 : 0);
	if (rm == 4) {
		/* a SIB byte: only plain (%rsp) or (%r12), and %rsp is no base here */
		if (c[3] != 0x24 || reg != 12)
			return 0;
		i++;
	} else if (rm == 5 && mod == 0) {
		return 0; /* %rip-relative */
	} else if (reg != 3 && reg != 5 && reg != 13 && reg != 14 && reg != 15) {
		return 0; /* not a register the callee preserves */
	}
	g->reg = reg;
	g->disp = 0;
	if (mod == 1) {
		if (i + 1 > len)
			return 0;
		g->disp = (int8_t)c[i++];
	} else if (mod == 2) {
		if (i + 4 > len)
			return 0;
		memcpy(&g->disp, c + i, 4);
		i += 4;
	}
	for (unsigned int n = 0; n <= X64_GADGET_TAIL && i < len; n++) {
		uint8_t b = c[i];

		if (b == 0xc3) { /* ret */
			g->pop = pop;
			g->len = i + 1;
			return g->len;
		}
		if (b >= 0x58 && b <= 0x5f && b != 0x5c) { /* pop %r, not %rsp */
			pop += 8;
			i += 1;
		} else if (b == 0x41 && i + 1 < len && c[i + 1] >= 0x58 && c[i + 1] <= 0x5f) {
			pop += 8; /* pop %r8-%r15 */
			i += 2;
		} else if (b == 0x48 && i + 3 < len && c[i + 1] == 0x83 && c[i + 2] == 0xc4 &&
			   c[i + 3] < 0x80 && !(c[i + 3] & 7)) {
			pop += c[i + 3]; /* add $imm8, %rsp */
			i += 4;
		} else if (b == 0x31 && i + 1 < len && (c[i + 1] >> 6) == 3 &&
			   (c[i + 1] & 7) == (c[i + 1] >> 3 & 7) && (c[i + 1] & 7) != 4) {
			i += 2; /* xor %r32, %r32: zeroes one register */
		} else if (b >= 0xb8 && b <= 0xbf && b != 0xbc && i + 5 <= len) {
			i += 5; /* mov $imm32, %r32 */
		} else {
			return 0;
		}
	}
	return 0;
}

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

/* The gregs field of x86 register number n, for the ones ret gadgets use as a base. */
static uint64_t *base_reg(struct x64_gregs *g, unsigned int n)
{
	switch (n) {
	case 3:
		return &g->rbx;
	case 5:
		return &g->rbp;
	case 12:
		return &g->r12;
	case 13:
		return &g->r13;
	case 14:
		return &g->r14;
	case 15:
		return &g->r15;
	default:
		return NULL;
	}
}

static uint64_t get_arg(const void *gv, unsigned int i)
{
	const struct x64_gregs *g = gv;
	const uint64_t a[] = { g->rdi, g->rsi, g->rdx, g->rcx, g->r8, g->r9 };

	return i < 6 ? a[i] : 0;
}

static void no_restart(void *g);

static void set_args(struct x64_gregs *g, const uint64_t *args, unsigned int n)
{
	uint64_t *slot[] = { &g->rdi, &g->rsi, &g->rdx, &g->rcx, &g->r8, &g->r9 };

	for (unsigned int i = 0; i < n && i < 6; i++)
		*slot[i] = args[i];
}

/*
 * SysV psABI 3.2.3: the callee finds its return address at rsp (rsp % 16
 * == 8) and a 7th and 8th integer argument right above it.  The return
 * address is the ret gadget, whose pops take those words and whatever lies
 * between them and the frame; its "ret" then finds the restorer at the
 * frame (the pretcode), and the restorer's rt_sigreturn finds the frame:
 *
 *   rsp = frame - 8 - ret_pop:  ret gadget
 *   rsp + 8 ...                 7th, 8th argument, then zeros (ret_pop bytes)
 *   frame:                      the restorer
 *
 * The gadget's base register is set so that it stores rax into heapctl's
 * slot; the callee preserves it (psABI 3.2.1).
 */
static int prep_call(void *gv, struct hc_call *c, struct hc_err *err)
{
	struct x64_gregs *g = gv;
	uint64_t *base = base_reg(g, c->ret_reg);
	unsigned int nstack = c->nargs > 6 ? c->nargs - 6 : 0;

	if (c->nargs > 8 || (c->sret && c->nargs > 5))
		return err_set(err, HC_E_ARGS, 0,
			       "%u arguments%s; x86_64 passes 6 in registers and 2 more on the stack",
			       c->nargs, c->sret ? " and a struct result" : "");
	if (!base || c->ret_pop % 16 != 8 || c->ret_pop / 8 > HC_ARCH_MAX_ARGS)
		return err_set(err, HC_E_INTERNAL, 0, "no usable ret gadget (register %u, pops %u)",
			       c->ret_reg, c->ret_pop);
	if (nstack * 8 > c->ret_pop)
		return err_set(err, HC_E_UNSUPPORTED, 0,
			       "%u arguments: the target's ret gadget leaves room for %u on the stack",
			       c->nargs, 6 + c->ret_pop / 8);
	if (c->sret) {
		/* SysV psABI 3.2.3: a MEMORY-class result's address is a hidden first argument */
		uint64_t a[6] = { c->sret };

		memcpy(a + 1, c->args, c->nargs * sizeof(*a));
		set_args(g, a, c->nargs + 1);
	} else {
		set_args(g, c->args, c->nargs);
	}
	/* frame_place() made frame % 16 == 8, and ret_pop % 16 == 8: rsp % 16 == 8 */
	g->rsp = c->frame - 8 - c->ret_pop;
	g->rip = c->pc;
	g->rax = 0; /* varargs: no vector registers used */
	*base = c->ret_base;
	g->eflags &= ~(uint64_t)(X86_EFLAGS_TF | X86_EFLAGS_DF);
	no_restart(g);
	c->slot_addr = g->rsp;
	c->slot_val = c->ret_addr;
	c->nstack = c->ret_pop / 8;
	memset(c->stack, 0, sizeof(c->stack));
	memcpy(c->stack, c->args + 6, nstack * sizeof(*c->stack));
	return 0;
}

static void prep_syscall(void *gv, struct hc_call *c)
{
	struct x64_gregs *g = gv;
	uint64_t *slot[] = { &g->rdi, &g->rsi, &g->rdx, &g->r10, &g->r8, &g->r9 };

	for (unsigned int i = 0; i < c->nargs && i < 6; i++)
		*slot[i] = c->args[i];
	g->rax = (uint64_t)c->nr;
	g->rip = c->pc;
	g->rsp = c->frame; /* "ret" pops the restorer, leaving rsp = frame + 8 */
	g->eflags &= ~(uint64_t)(X86_EFLAGS_TF | X86_EFLAGS_DF);
	no_restart(g);
	c->slot_addr = c->frame;
	c->slot_val = c->ret_addr;
}

static void prep_restore(void *gv, uint64_t restorer, uint64_t frame)
{
	struct x64_gregs *g = gv;

	/* x86_64 rt_sigreturn takes the frame at rsp - 8 (after the popped pretcode) */
	g->rip = restorer;
	g->rsp = frame + 8;
	g->eflags &= ~(uint64_t)(X86_EFLAGS_TF | X86_EFLAGS_DF);
	no_restart(g);
}

static int64_t get_syscall_ret(const void *g)
{
	return (int64_t)((const struct x64_gregs *)g)->rax;
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

/* x86_64 numbers of the syscalls any stop makes fail with EINTR (arch.h). */
static const struct hc_stop_eintr stop_eintr[] = {
	{ 232, HC_TMO_MS, 3 },   /* epoll_wait(epfd, events, maxevents, timeout) */
	{ 281, HC_TMO_MS, 3 },   /* epoll_pwait(..., timeout, sigmask, sigsetsize) */
	{ 441, HC_TMO_PTR, 3 },  /* epoll_pwait2(..., const struct timespec *, ...) */
	{ 65, HC_TMO_NONE, 0 },  /* semop: never timed */
	{ 220, HC_TMO_PTR, 3 },  /* semtimedop(semid, sops, nsops, timeout) */
	{ 128, HC_TMO_PTR, 2 },  /* rt_sigtimedwait(set, info, timeout, sigsetsize) */
	{ 208, HC_TMO_PTR, 4 },  /* io_getevents(ctx, min_nr, nr, events, timeout) */
	{ 333, HC_TMO_PTR, 4 },  /* io_pgetevents(..., timeout, usig) */
};

/*
 * Everything else is undisturbed on x86_64: heapctl restores at a stop
 * inside signal delivery, where the kernel restarts -ERESTARTSYS/NOHAND/
 * NOINTR syscalls with their own arguments (select, ppoll and pselect6
 * have had their timeout updated in place) and sends -ERESTART_RESTARTBLOCK
 * ones (nanosleep, poll and timed futex) to restart_syscall, which goes on
 * with the time that is left.
 */
static enum hc_wait wait_kind(long nr, const uint64_t args[6])
{
	return hc_stop_eintr_kind(stop_eintr, sizeof(stop_eintr) / sizeof(stop_eintr[0]), nr, args);
}

static bool undo_stop_eintr(void *gv, const struct hc_presys *pre)
{
	struct x64_gregs *g = gv;
	/* syscall argument registers: r10, not rcx, carries the fourth */
	const uint64_t args[6] = { g->rdi, g->rsi, g->rdx, g->r10, g->r8, g->r9 };

	(void)pre; /* orig_rax and the argument registers still say it all */

	if ((int64_t)g->rax != -4 /* -EINTR */ ||
	    wait_kind((long)g->orig_rax, args) != HC_WAIT_EINTR_REDO)
		return false;
	/* back onto the 2-byte syscall instruction, with the number in rax */
	g->rax = g->orig_rax;
	g->rip -= sizeof(x64_syscall);
	g->orig_rax = (uint64_t)-1;
	return true;
}

static void skip_syscall(void *g)
{
	((struct x64_gregs *)g)->orig_rax = (uint64_t)-1;
}

/*
 * What arch_do_signal_or_restart() does when no handler runs, except that
 * -ERESTART_RESTARTBLOCK re-issues the syscall itself: this runs when an
 * rt_sigreturn has reset (or will reset) the restart block, and
 * restart_syscall would then fail with EINTR, which a thread without a
 * handler never sees from a signal.  A relative sleep starts over in full
 * instead: the one case where heapctl makes a timer late, and only when it
 * dies (or leaves a call to finish on its own) while holding the thread
 * (docs/design.md, "Blocked syscalls").
 */
static void restart_now(void *gv)
{
	struct x64_gregs *g = gv;
	int64_t rv = (int64_t)g->rax;

	if ((int64_t)g->orig_rax < 0)
		return;
	if (rv == -512 || rv == -513 || rv == -514 || rv == -516) {
		g->rax = g->orig_rax;
		g->rip -= sizeof(x64_syscall);
		g->orig_rax = (uint64_t)-1;
	}
}

/*
 * What arch_do_signal_or_restart() does when no handler runs: the -ERESTART*
 * syscalls go back to their syscall instruction, a restart-block one
 * (nanosleep, poll and timed futex) to restart_syscall, which goes on with
 * the time that is left.
 */
static void restart_here(void *gv)
{
	struct x64_gregs *g = gv;
	int64_t rv = (int64_t)g->rax;

	if ((int64_t)g->orig_rax < 0)
		return;
	if (rv == -512 || rv == -513 || rv == -514 || rv == -516) {
		g->rax = rv == -516 ? 219 /* __NR_restart_syscall */ : g->orig_rax;
		g->rip -= sizeof(x64_syscall);
	}
	g->orig_rax = (uint64_t)-1;
}

/*
 * Not a syscall the kernel resumes through restart_syscall: the frame
 * re-runs it from scratch.  Nor a thread about to run restart_syscall
 * itself (rax = 219 on its syscall instruction, rewound by the kernel or
 * by an earlier heapctl's restore, its poll or nanosleep still in the
 * restart block): the frame's rt_sigreturn resets that block, and the
 * restart would fail with EINTR.
 */
static bool frame_restores(const void *gv, const struct hc_regset *extra, unsigned int n)
{
	const struct x64_gregs *g = gv;

	(void)extra;
	(void)n;
	if (g->rax == 219 /* __NR_restart_syscall */)
		return false;
	return (int64_t)g->orig_rax < 0 || (int64_t)g->rax != -516 /* -ERESTART_RESTARTBLOCK */;
}

static int swaps_mask(const void *gv)
{
	/* x86_64: pselect6, ppoll, rt_sigsuspend, epoll_pwait, io_pgetevents, epoll_pwait2 */
	static const long nrs[] = { 270, 271, 130, 281, 333, 441 };
	long nr = (long)((const struct x64_gregs *)gv)->orig_rax;

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		if (nr == nrs[i])
			return 1;
	return 0;
}

static long syscall_nr(const void *g)
{
	return (long)((const struct x64_gregs *)g)->orig_rax;
}

/*
 * The x86_64 signal frame (arch/x86/include/asm/sigframe.h, uapi
 * asm/sigcontext.h): pretcode, struct ucontext, struct siginfo, then the
 * XSAVE image, 64-byte aligned, with X64_XSTATE_MAGIC1 in its software
 * bytes and X64_XSTATE_MAGIC2 after it, or the kernel restores only x87/SSE.
 */
#define SF_UC_FLAGS 8
#define SF_SS_FLAGS 32
#define SF_MCONTEXT 48
#define SF_MASK 304
#define SF_SIZE 440
#define X64_UC_FP_XSTATE 0x1
#define X64_UC_SIGCONTEXT_SS 0x2
#define X64_UC_STRICT_RESTORE_SS 0x4
#define X64_XSTATE_MAGIC1 0x46505853u
#define X64_XSTATE_MAGIC2 0x46505845u
#define XS_SW 464

/* struct sigcontext (64-bit), in the kernel's order. */
struct x64_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
};
_Static_assert(sizeof(struct x64_sigcontext) == 256, "struct sigcontext is 256 bytes");

static const struct hc_regset *find_regset(const struct hc_sigframe *f, unsigned int nt)
{
	for (unsigned int i = 0; i < f->nextra; i++)
		if (f->extra[i].nt == nt)
			return &f->extra[i];
	return NULL;
}

static size_t sigframe_len(const struct hc_sigframe *f)
{
	const struct hc_regset *x = find_regset(f, NT_X86_XSTATE);

	return SF_SIZE + 64 + (x ? x->len : 0) + 4 + 16;
}

static uint64_t frame_place(uint64_t sp, size_t len)
{
	/* below the red zone, and % 16 == 8 as after a "call" */
	return ((sp - X86_RED_ZONE - len) & ~15ull) - 8;
}

/*
 * Where each XSAVE component ends (offset + size, CPUID leaf 0xD), once
 * asked; 1: not in use on this CPU.  The answers are the CPU's and do not
 * change.  A CPUID under a hypervisor is a trap (5 us each on an EPYC VM),
 * so prepare() asks before anything stops, and only where the answers
 * are used: an image larger than XS_WHOLE_MAX.
 */
#define XS_WHOLE_MAX 4096 /* AVX-512 and PKRU end by 2.7 KiB; AMX's tiles make 11 KiB */
#define ARCH_GET_XCOMP_SUPP_ 0x1021 /* <asm/prctl.h>, Linux 5.16 */
#define XFEATURE_XTILECFG 17      /* the first of AMX's, and of the large ones */

#if defined(__x86_64__)
static uint32_t comp_end[63];

static uint32_t xsave_comp_end(unsigned int i)
{
	if (!comp_end[i]) {
		unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;

		__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0xd), "c"(i));
		comp_end[i] = eax ? ebx + eax : 1;
	}
	return comp_end[i];
}
#endif

static void prepare(void)
{
#if defined(__x86_64__)
	unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
	uint64_t have = 0;

	/*
	 * The components the kernel lets a process use, without a CPUID.  A
	 * kernel that cannot say (before 5.16) has no AMX: every image is
	 * small, and written whole.
	 */
	if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_SUPP_, &have) < 0 ||
	    !(have >> XFEATURE_XTILECFG))
		return;
	__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0), "c"(0));
	if (eax < 0xd)
		return;
	__asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0xd), "c"(0));
	have = (uint64_t)edx << 32 | eax; /* the user components this CPU can save */
	for (unsigned int i = 2; i < 63; i++)
		if (have & (1ull << i))
			xsave_comp_end(i);
#endif
}

/*
 * Size of the XSAVE image the frame carries: a small one whole, as the
 * kernel writes its own signal frames; a large one (AMX) up to the end of
 * the last component in use, so that 8 KiB of tiles not in use take no
 * room on the thread's stack.
 */
static size_t xsave_used_size(uint64_t bv, size_t have)
{
	size_t end = 512 + 64; /* legacy area and header */

	if (have <= XS_WHOLE_MAX)
		return have;
#if defined(__x86_64__)
	for (unsigned int i = 2; i < 63; i++)
		if ((bv & (1ull << i)) && xsave_comp_end(i) > end)
			end = xsave_comp_end(i);
#else
	(void)bv;
	end = have;
#endif
	return end < have ? end : have;
}

static int sigframe_build(const struct hc_sigframe *f, uint8_t *out, size_t outlen,
			  struct hc_err *err)
{
	const struct x64_gregs *g = f->gregs;
	const struct hc_regset *x = find_regset(f, NT_X86_XSTATE);
	struct x64_sigcontext sc;
	uint64_t flags = X64_UC_FP_XSTATE | X64_UC_SIGCONTEXT_SS | X64_UC_STRICT_RESTORE_SS, bv, feat;
	uint32_t magic1 = X64_XSTATE_MAGIC1, magic2 = X64_XSTATE_MAGIC2, xsize, ext;
	int32_t bad_ss_flags = 3; /* neither 0, SS_ONSTACK nor SS_DISABLE: see below */
	size_t fpoff;

	if (!x || x->len < 512 + 64)
		return err_set(err, HC_E_UNSUPPORTED, 0, "no XSAVE state to build a signal frame from");
	fpoff = (size_t)(((f->raddr + SF_SIZE + 63) & ~63ull) - f->raddr);
	memcpy(&bv, (const uint8_t *)x->buf + 512, 8);
	xsize = (uint32_t)xsave_used_size(bv, x->len);
	if (fpoff + xsize + 4 > outlen)
		return err_set(err, HC_E_INTERNAL, 0, "signal frame does not fit (%zu bytes)", outlen);
	memset(out, 0, fpoff + xsize + 4);
	/* the ret that reaches the restorer pops this; rt_sigreturn reads the frame after it */
	memcpy(out, &f->restorer, 8);
	memcpy(out + SF_UC_FLAGS, &flags, 8);
	/*
	 * rt_sigreturn calls restore_altstack() on uc_stack.  An invalid mode
	 * makes do_sigaltstack() fail with EINVAL, which the kernel ignores,
	 * so the thread's own sigaltstack is left as it is.
	 */
	memcpy(out + SF_SS_FLAGS, &bad_ss_flags, 4);
	memset(&sc, 0, sizeof(sc));
	sc.r8 = g->r8, sc.r9 = g->r9, sc.r10 = g->r10, sc.r11 = g->r11;
	sc.r12 = g->r12, sc.r13 = g->r13, sc.r14 = g->r14, sc.r15 = g->r15;
	sc.rdi = g->rdi, sc.rsi = g->rsi, sc.rbp = g->rbp, sc.rbx = g->rbx;
	sc.rdx = g->rdx, sc.rax = g->rax, sc.rcx = g->rcx, sc.rsp = g->rsp, sc.rip = g->rip;
	sc.eflags = g->eflags;
	sc.cs = (uint16_t)g->cs;
	sc.ss = (uint16_t)g->ss;
	/*
	 * rt_sigreturn sets orig_rax = -1 and resets the restart block, so the
	 * restart decision the kernel would make after the stop is made here;
	 * a restart-block syscall (nanosleep) starts over (see restart_now()).
	 */
	{
		struct x64_gregs r = *g;

		restart_now(&r);
		sc.rax = r.rax;
		sc.rip = r.rip;
	}
	sc.fpstate = f->raddr + fpoff;
	memcpy(out + SF_MCONTEXT, &sc, sizeof(sc));
	memcpy(out + SF_MASK, &f->mask, 8);
	memcpy(out + fpoff, x->buf, xsize);
	/* the software bytes tell rt_sigreturn this is a full XSAVE image */
	feat = bv | 3; /* x87 and SSE are always described */
	ext = xsize + 4;
	memcpy(out + fpoff + XS_SW, &magic1, 4);
	memcpy(out + fpoff + XS_SW + 4, &ext, 4);
	memcpy(out + fpoff + XS_SW + 8, &feat, 8);
	memcpy(out + fpoff + XS_SW + 16, &xsize, 4);
	memcpy(out + fpoff + xsize, &magic2, 4);
	return 0;
}

/*
 * XSAVE layout (SDM vol. 1, 13.4): legacy FXSAVE area, then the 64-byte
 * header whose first word is XSTATE_BV.
 */
#define XS_FCW 0
#define XS_FSW 2
#define XS_FTW 4 /* the abridged tag word, one byte */
#define XS_FOP 6

#define XS_MXCSR 24

#define XS_HDR 512
#define XFEAT_X87 (1ull << 0)
#define XFEAT_SSE (1ull << 1)

static bool call_fpstate(unsigned int nt, void *buf, size_t len)
{
	uint8_t *x = buf;
	uint16_t fcw = 0x037f; /* default control word: all exceptions masked */
	uint32_t mxcsr = 0x1f80, cur_mxcsr;
	uint64_t bv;

	if (nt != NT_X86_XSTATE || len < XS_HDR + 64)
		return false;
	/*
	 * The ABI promises the callee an empty x87 stack and default control
	 * words (psABI 3.2.3).  A thread stopped mid-computation may have
	 * neither, so give the call a clean FPU; the saved image is restored
	 * afterwards.  The control words are written with their bits kept in
	 * XSTATE_BV so that they are really loaded.  The registers themselves
	 * (x87, XMM, AVX and up), PKRU, AMX and the rest are left as they are:
	 * they are scratch or no callee's business, and a thread whose
	 * control state is already the ABI's, nearly every one, needs no
	 * write at all (call.c compares).
	 */
	/*
	 * Sticky exception flags (MXCSR's low six bits, FSW's) trap nothing
	 * while the masks are the default ones; an empty tag word makes TOP moot.
	 */
	memcpy(&cur_mxcsr, x + XS_MXCSR, 4);
	if (!memcmp(x + XS_FCW, &fcw, 2) && !x[XS_FTW] && (cur_mxcsr & ~0x3fu) == mxcsr)
		return true;
	memcpy(x + XS_FCW, &fcw, 2);
	memset(x + XS_FSW, 0, 2);
	x[XS_FTW] = 0; /* the abridged tag word: every x87 register empty */
	memset(x + XS_FOP, 0, 2);
	memcpy(x + XS_MXCSR, &mxcsr, 4);
	memcpy(&bv, x + XS_HDR, 8);
	bv |= XFEAT_X87 | XFEAT_SSE;
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

/* libunwind's x86_64 numbers: DWARF's rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, then rip. */
static int unwind_reg(const void *gregs, unsigned int regnum, uint64_t *val)
{
	const struct x64_gregs *r = gregs;
	const uint64_t v[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
				 r->r8,  r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
				 r->rip };

	if (regnum >= 17)
		return -1;
	*val = v[regnum];
	return 0;
}

static uint64_t get_tp(const void *g)
{
	return ((const struct x64_gregs *)g)->fs_base;
}

const struct hc_arch hc_arch_x86_64 = {
	.name = "x86_64",
	.e_machine = EM_X86_64,
	.gregs_len = sizeof(struct x64_gregs),
	.extra_regsets = x64_extra,
	.max_args = 8,
	.nr_rt_sigreturn = 15,
	.nr_getpid = 39,
	.nr_restart_syscall = 219,
	.nr_memfd_create = 319,
	.nr_close = 3,
	.nr_mmap = 9,
	.nr_munmap = 11,
	.r_jump_slot = 7, /* R_X86_64_JUMP_SLOT */
	.r_glob_dat = 6,  /* R_X86_64_GLOB_DAT */
	.audit_arch = 0xc000003e, /* AUDIT_ARCH_X86_64 */
	.cs_arch = CS_ARCH_X86,
	.cs_mode = CS_MODE_64,
	.syscall_insn = { x64_syscall, sizeof(x64_syscall) },
	.syscall_ret = { x64_syscall_ret, sizeof(x64_syscall_ret) },
	.restorers = x64_restorers,
	.notify = { x64_notify, sizeof(x64_notify) },
	.notify_sys_end = 7,
	.entry_pads = x64_entry_pads,
	.ret_gadget = ret_gadget,
	.get_pc = get_pc,
	.get_sp = get_sp,
	.get_arg = get_arg,
	.sigframe_len = sigframe_len,
	.frame_place = frame_place,
	.sigframe_build = sigframe_build,
	.sigframe_mask_off = SF_MASK,
	.prep_call = prep_call,
	.prep_syscall = prep_syscall,
	.prep_restore = prep_restore,
	.skip_syscall = skip_syscall,
	.restart_now = restart_now,
	.restart_here = restart_here,
	.get_syscall_ret = get_syscall_ret,
	.no_restart = no_restart,
	.undo_stop_eintr = undo_stop_eintr,
	.wait_kind = wait_kind,
	.swaps_mask = swaps_mask,
	.frame_restores = frame_restores,
	.syscall_nr = syscall_nr,
	.call_fpstate = call_fpstate,
	.dump_regs = dump_regs,
	.unwind_reg = unwind_reg,
	.get_tp = get_tp,
	.prepare = prepare,
	.hook_plan = hc_x86_64_hook_plan,
	/* jmp rel32 reaches +-2 GiB: a margin for the trampoline's own length */
	.hook_reach = (2ull << 30) - (16ull << 20),
};
