// SPDX-License-Identifier: MIT
/*
 * arch/aarch64/arch.c: the arm64 backend, pure functions over the
 * NT_PRSTATUS image (struct user_pt_regs) and the NT_PRFPREG image
 * (struct user_fpsimd_state).  It compiles on every host so that x86_64 CI
 * unit-tests it; the mirror structs are checked against the kernel's own
 * layout only when the host is arm64.
 *
 * The frame built by prep_call() (AAPCS64: no red zone, the return address
 * lives in x30, sp must be 16-byte aligned at every public interface):
 *
 *            original sp -> +--------------------------+
 *                           | margin (A64_CALL_MARGIN) |  never touched
 *   sp at function entry -> +--------------------------+  16-byte aligned
 *                           | callee frames grow down  |
 *
 *   x0..x7 = arguments, x30 (lr) = trap, pc = fn, PSTATE.BTYPE = 0
 *
 * but an 8th argument cannot be left in x7: see prep_call().
 */
#include <elf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "err.h"

#if defined(__aarch64__)
#include <asm/ptrace.h>
#endif

/* Mirror of struct user_pt_regs, arch/arm64/include/uapi/asm/ptrace.h. */
struct a64_gregs {
	uint64_t regs[31]; /* x0..x30; x30 is the link register */
	uint64_t sp;
	uint64_t pc;
	uint64_t pstate;
};

/* Mirror of struct user_fpsimd_state, the NT_PRFPREG payload. */
struct a64_fpsimd {
	uint8_t vregs[32][16]; /* q0..q31, left alone */
	uint32_t fpsr;
	uint32_t fpcr;
	uint32_t reserved[2];
};

_Static_assert(sizeof(struct a64_gregs) == 272, "NT_PRSTATUS image is 272 bytes on arm64");
_Static_assert(sizeof(struct a64_fpsimd) == 528, "NT_PRFPREG image is 528 bytes on arm64");

#if defined(__aarch64__)
_Static_assert(sizeof(struct a64_gregs) == sizeof(struct user_pt_regs),
	       "struct a64_gregs must mirror struct user_pt_regs");
_Static_assert(offsetof(struct a64_gregs, sp) == offsetof(struct user_pt_regs, sp),
	       "sp offset");
_Static_assert(offsetof(struct a64_gregs, pc) == offsetof(struct user_pt_regs, pc),
	       "pc offset");
_Static_assert(offsetof(struct a64_gregs, pstate) == offsetof(struct user_pt_regs, pstate),
	       "pstate offset");
_Static_assert(sizeof(struct a64_fpsimd) == sizeof(struct user_fpsimd_state),
	       "struct a64_fpsimd must mirror struct user_fpsimd_state");
_Static_assert(offsetof(struct a64_fpsimd, fpsr) == offsetof(struct user_fpsimd_state, fpsr),
	       "fpsr offset");
_Static_assert(offsetof(struct a64_fpsimd, fpcr) == offsetof(struct user_fpsimd_state, fpcr),
	       "fpcr offset");
#endif

#define A64_NARGS	8	/* x0..x7 carry integer arguments (AAPCS64) */
#define A64_SYS_NARGS	6	/* x0..x5 carry syscall arguments, x8 the number */
#define A64_LR		30

/*
 * AAPCS64 has no red zone: nothing below sp is live, and the frame could
 * start right at sp.  Leave a margin anyway; it costs nothing and protects
 * hand-written assembly or JIT code that keeps scratch data below sp
 * against the ABI.
 */
#define A64_CALL_MARGIN 256

/* PSTATE.BTYPE, bits 11:10 (PSR_BTYPE_MASK, arch/arm64/include/uapi/asm/ptrace.h). */
#define A64_PSR_BTYPE_MASK 0x00000c00ULL

#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif

/*
 * Saved in this order and restored in this order, verbatim.
 *
 * NT_ARM_SVE (struct user_sve_header, then the registers) exists only on
 * SVE hardware; elsewhere the kernel refuses it with EINVAL and call.c
 * skips it.  Its header carries the vector length and says whether the
 * payload is SVE_PT_REGS_SVE (z0-z31, p0-p15, ffr, fpsr, fpcr: live SVE
 * state, as in a thread stopped in SVE code) or SVE_PT_REGS_FPSIMD (only
 * the FPSIMD view: a thread stopped in a syscall, whose SVE state the
 * kernel has already discarded).  The regset is declared for the largest
 * vector length, so PTRACE_GETREGSET leaves iov_len at call.c's 64 KiB
 * although only header.size bytes are written; sve_set() reads the header
 * and the registers at their offsets and ignores the rest on the way back.
 *
 * SVE must come after FPSIMD.  Writing NT_PRFPREG to a thread with live
 * SVE state zero-pads z0-z31 and clears p0-p15 and ffr
 * (fpr_set() -> sve_sync_from_fpsimd_zeropad(), arch/arm64/kernel/ptrace.c),
 * which is exactly what heapctl's own call_fpstate() write does before a
 * call; sve_set() then puts back the whole SVE state (and TIF_SVE) or, for
 * an FPSIMD payload, the FPSIMD registers with TIF_SVE cleared, at the same
 * vector length (vec_set_vector_length() is a no-op for the current VL).
 * The other order would zero the upper halves just restored.
 */
static const unsigned int a64_extra_regsets[] = {
	NT_PRFPREG, /* struct user_fpsimd_state: q0..q31, fpsr, fpcr */
	NT_ARM_SVE,
	0,
};

static const uint8_t a64_notify[] = {
	0x88, 0x15, 0x80, 0xd2, /* mov x8, #172: getpid, harmless */
	0x01, 0x00, 0x00, 0xd4, /* svc #0: heapctl reads x0/x1 here */
	0xc0, 0x03, 0x5f, 0xd6, /* ret */
};
static const uint8_t a64_syscall_insn[] = {
	0x01, 0x00, 0x00, 0xd4, /* svc #0 */
};
static const uint8_t a64_syscall_ret[] = {
	0x01, 0x00, 0x00, 0xd4, /* svc #0 */
	0xc0, 0x03, 0x5f, 0xd6, /* ret */
};
static const uint8_t a64_restorer[] = {
	0x68, 0x11, 0x80, 0xd2, /* mov x8, #139: the vDSO's __kernel_rt_sigreturn */
	0x01, 0x00, 0x00, 0xd4, /* svc #0 */
};
static const uint8_t a64_bti_c[] = { 0x5f, 0x24, 0x03, 0xd5 }; /* bti c */
static const uint8_t a64_nop[] = { 0x1f, 0x20, 0x03, 0xd5 };   /* nop: glibc 2.36's getpid() */
static const struct hc_bytes a64_entry_pads[] = {
	{ a64_bti_c, sizeof(a64_bti_c) },
	{ a64_nop, sizeof(a64_nop) },
	{ NULL, 0 },
};

static const struct hc_bytes a64_restorers[] = {
	{ a64_restorer, sizeof(a64_restorer) },
	{ NULL, 0 },
};

static uint64_t get_pc(const void *gregs)
{
	const struct a64_gregs *r = gregs;

	return r->pc;
}

static uint64_t get_sp(const void *gregs)
{
	const struct a64_gregs *r = gregs;

	return r->sp;
}

static uint64_t get_arg(const void *gregs, unsigned int i)
{
	const struct a64_gregs *r = gregs;

	if (i >= A64_NARGS)
		return 0;
	return r->regs[i];
}

static uint64_t get_ret(const void *gregs)
{
	const struct a64_gregs *r = gregs;

	return r->regs[0];
}

static int prep_call(void *gregs, struct hc_call *c, struct hc_err *err)
{
	struct a64_gregs *r = gregs;
	unsigned int i;

	if (c->nargs > A64_NARGS)
		return err_set(err, HC_E_ARGS, 0,
			       "%u arguments for a call on aarch64, at most %u fit in x0-x7",
			       c->nargs, A64_NARGS);

	/*
	 * x7, the 8th, is no argument the kernel takes from a syscall stop
	 * (report_syscall() puts it back as it was once the tracer is done, see
	 * prep_syscall()): call.c starts such a call from another stop.
	 */
	for (i = 0; i < c->nargs; i++)
		r->regs[i] = c->args[i];
	/* AAPCS64 6.9: an indirect result's address goes in x8 (XR), not in x0-x7 */
	if (c->sret)
		r->regs[8] = c->sret;

	r->sp = c->frame; /* 16-aligned by frame_place(); rt_sigreturn takes the frame at sp */
	r->regs[A64_LR] = c->ret_addr; /* the vDSO's restorer: x0 survives into its svc */
	r->pc = c->pc;
	/*
	 * A thread stopped right after an indirect branch has PSTATE.BTYPE
	 * set; moving pc to a function whose first instruction is not the
	 * matching BTI landing pad would then raise a Branch Target exception
	 * in a BTI-enabled binary.  A pc written by the tracer is not a
	 * branch, so start the call with BTYPE = 0.
	 */
	r->pstate &= ~A64_PSR_BTYPE_MASK;

	/* The return address is in x30: nothing for call.c to write. */
	c->slot_addr = 0;
	c->slot_val = 0;
	c->nstack = 0;
	return 0;
}

/*
 * Used with PTRACE_SYSCALL.  At syscall-entry/exit stops the kernel
 * clobbers x7 to tell the tracer which one it is and puts the old value
 * back on resume (report_syscall(), arch/arm64/kernel/ptrace.c), so only
 * x0..x5 and x8 may be relied on here.
 */
static void prep_syscall(void *gregs, struct hc_call *c)
{
	struct a64_gregs *r = gregs;
	unsigned int i;

	for (i = 0; i < c->nargs && i < A64_SYS_NARGS; i++)
		r->regs[i] = c->args[i];
	r->regs[8] = (uint64_t)c->nr;
	r->pc = c->pc;
	r->sp = c->frame;
	r->regs[A64_LR] = c->ret_addr; /* "ret" goes to the restorer */
	r->pstate &= ~A64_PSR_BTYPE_MASK;
	c->slot_addr = 0;
	c->slot_val = 0;
}

static void prep_restore(void *gregs, uint64_t restorer, uint64_t frame)
{
	struct a64_gregs *r = gregs;

	/* arm64 rt_sigreturn takes the frame at sp (arch/arm64/kernel/signal.c) */
	r->pc = restorer;
	r->sp = frame;
	r->pstate &= ~A64_PSR_BTYPE_MASK;
}

static int64_t get_syscall_ret(const void *gregs)
{
	const struct a64_gregs *r = gregs;

	return (int64_t)r->regs[0];
}

/*
 * The arm64 signal frame (arch/arm64/kernel/signal.c, uapi asm/sigcontext.h):
 * struct siginfo, then struct ucontext whose uc_mcontext.__reserved holds
 * records: an fpsimd_context (mandatory), then a null terminator.
 * TODO: an sve_context record, so live SVE state survives heapctl's death.
 */
#define A64_SF_UC 128
#define A64_SF_SS_FLAGS (A64_SF_UC + 24)
#define A64_SF_MASK (A64_SF_UC + 40)
#define A64_SF_REGS (A64_SF_UC + 184)
#define A64_SF_RESERVED (A64_SF_UC + 464)
#define A64_SF_SIZE (A64_SF_UC + 4560)
#define A64_FPSIMD_MAGIC 0x46508001u
#define A64_FPSIMD_SIZE 528u

static size_t sigframe_len(const struct hc_sigframe *f)
{
	(void)f;
	return A64_SF_SIZE + 16;
}

static uint64_t frame_place(uint64_t sp, size_t len)
{
	return (sp - A64_CALL_MARGIN - len) & ~(uint64_t)15;
}

static int sigframe_build(const struct hc_sigframe *f, uint8_t *out, size_t outlen,
			  struct hc_err *err)
{
	const struct a64_gregs *r = f->gregs;
	const struct a64_fpsimd *fp = NULL;
	uint32_t magic = A64_FPSIMD_MAGIC, size = A64_FPSIMD_SIZE;
	int32_t bad_ss_flags = 3; /* invalid mode: rt_sigreturn leaves sigaltstack alone */

	for (unsigned int i = 0; i < f->nextra; i++)
		if (f->extra[i].nt == NT_PRFPREG && f->extra[i].len >= sizeof(*fp))
			fp = f->extra[i].buf;
	if (!fp)
		return err_set(err, HC_E_UNSUPPORTED, 0, "no FP/SIMD state to build a signal frame from");
	if (outlen < A64_SF_SIZE)
		return err_set(err, HC_E_INTERNAL, 0, "signal frame does not fit (%zu bytes)", outlen);
	memset(out, 0, A64_SF_SIZE);
	memcpy(out + A64_SF_SS_FLAGS, &bad_ss_flags, 4);
	memcpy(out + A64_SF_MASK, &f->mask, 8);
	/*
	 * regs, sp, pc, pstate as at the stop: arm64 already rewound an
	 * interrupted syscall before the stop (see no_restart()), so the frame
	 * re-runs it; an -ERESTART_RESTARTBLOCK one restarts from scratch.
	 */
	memcpy(out + A64_SF_REGS, r->regs, sizeof(r->regs) + 3 * 8);
	memcpy(out + A64_SF_RESERVED, &magic, 4);
	memcpy(out + A64_SF_RESERVED + 4, &size, 4);
	memcpy(out + A64_SF_RESERVED + 8, &fp->fpsr, 4);
	memcpy(out + A64_SF_RESERVED + 12, &fp->fpcr, 4);
	memcpy(out + A64_SF_RESERVED + 16, fp->vregs, sizeof(fp->vregs));
	/* the null record after it ends the list: already zero */
	return 0;
}

static enum hc_wait wait_kind(long nr, const uint64_t args[6]);

/*
 * On arm64 the EINTR overwrote x0, the syscall's first argument, and
 * orig_x0 is in no regset.  /proc/PID/task/TID/syscall read just before
 * the stop (pre) still has it: when pc, sp, x8 and x1-x5 agree with it,
 * put x0 back and move pc onto the svc, so the syscall runs again.  Only
 * an untimed wait: a timed one keeps its EINTR (see arch.h).
 */
static bool undo_stop_eintr(void *gregs, const struct hc_presys *pre)
{
	struct a64_gregs *r = gregs;

	if (!pre || !pre->valid || (int64_t)r->regs[0] != -4 /* -EINTR */ ||
	    wait_kind(pre->nr, pre->args) != HC_WAIT_EINTR_REDO ||
	    r->regs[8] != (uint64_t)pre->nr || r->sp != pre->sp || r->pc != pre->pc)
		return false;
	for (unsigned int i = 1; i < 6; i++)
		if (r->regs[i] != pre->args[i])
			return false;
	r->regs[0] = pre->args[0];
	r->pc -= 4; /* back onto svc #0 */
	return true;
}

/* arm64 numbers (include/uapi/asm-generic/unistd.h) of the syscalls any stop makes fail with EINTR (arch.h). */
static const struct hc_stop_eintr stop_eintr[] = {
	{ 22, HC_TMO_MS, 3 },   /* epoll_pwait(epfd, events, maxevents, timeout, ...) */
	{ 441, HC_TMO_PTR, 3 }, /* epoll_pwait2(..., const struct timespec *, ...) */
	{ 193, HC_TMO_NONE, 0 }, /* semop: never timed */
	{ 192, HC_TMO_PTR, 3 }, /* semtimedop(semid, sops, nsops, timeout) */
	{ 137, HC_TMO_PTR, 2 }, /* rt_sigtimedwait(set, info, timeout, sigsetsize) */
	{ 4, HC_TMO_PTR, 4 },   /* io_getevents(ctx, min_nr, nr, events, timeout) */
	{ 292, HC_TMO_PTR, 4 }, /* io_pgetevents(..., timeout, usig) */
};

#define A64_NR_NANOSLEEP 101
#define A64_NR_CLOCK_NANOSLEEP 115
#define A64_NR_FUTEX 98
#define A64_TIMER_ABSTIME 1
#define A64_FUTEX_WAIT 0
#define A64_FUTEX_CMD_MASK (~(128 | 256)) /* FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME */

/*
 * -ERESTART_RESTARTBLOCK waits (nanosleep, relative clock_nanosleep,
 * FUTEX_WAIT with a timeout) would come back from heapctl with their full
 * relative timeout on arm64: do_signal() rewound them to their own svc
 * before the stop, and decides on restart_syscall only after get_signal()
 * by comparing pc with the svc of the syscall it interrupted, which is
 * heapctl's own by the time it restores.  From the registers alone a
 * thread rewound out of its nanosleep cannot be told from one about to
 * enter it, so heapctl asks the kernel instead (restart_probe() and
 * restart_probed(), docs/aarch64.md).  ppoll and pselect6 (-ERESTARTNOHAND)
 * have their timeout updated in place and resume with what is left;
 * absolute timeouts restart unharmed.
 */
static enum hc_wait wait_kind(long nr, const uint64_t args[6])
{
	enum hc_wait w = hc_stop_eintr_kind(stop_eintr, sizeof(stop_eintr) / sizeof(stop_eintr[0]),
					    nr, args);

	if (w != HC_WAIT_UNDISTURBED)
		return w;
	switch (nr) {
	case A64_NR_NANOSLEEP:
		return HC_WAIT_RESTART_FULL;
	case A64_NR_CLOCK_NANOSLEEP:
		return args[1] & A64_TIMER_ABSTIME ? HC_WAIT_UNDISTURBED : HC_WAIT_RESTART_FULL;
	case A64_NR_FUTEX:
		return ((int)args[1] & A64_FUTEX_CMD_MASK) == A64_FUTEX_WAIT && args[3] ?
			       HC_WAIT_RESTART_FULL :
			       HC_WAIT_UNDISTURBED;
	default:
		return HC_WAIT_UNDISTURBED;
	}
}

static bool restart_probe(const void *gregs, const struct hc_presys *pre)
{
	const struct a64_gregs *r = gregs;

	if (!pre || !pre->valid || wait_kind(pre->nr, pre->args) != HC_WAIT_RESTART_FULL ||
	    r->regs[8] != (uint64_t)pre->nr || r->sp != pre->sp || r->pc != pre->pc - 4)
		return false;
	for (unsigned int i = 0; i < 6; i++)
		if (r->regs[i] != pre->args[i])
			return false;
	return true;
}

#define A64_NR_RESTART_SYSCALL 128

/*
 * do_signal() after get_signal(): pc still on the svc it rewound and the
 * syscall returned -ERESTART_RESTARTBLOCK, so setup_restart_syscall() put
 * __NR_restart_syscall in x8; otherwise x8 is the syscall's own number.
 */
static bool restart_probed(void *saved, const void *entry)
{
	struct a64_gregs *s = saved;
	const struct a64_gregs *e = entry;

	if (e->pc != s->pc + 4 || e->sp != s->sp ||
	    (e->regs[8] != A64_NR_RESTART_SYSCALL && e->regs[8] != s->regs[8]))
		return false;
	s->regs[8] = e->regs[8];
	return true;
}

/*
 * Nothing to do.  arm64's do_signal() (arch/arm64/kernel/signal.c) decides
 * on a syscall restart *before* get_signal() reports the ptrace stop: it
 * already rewound pc to the svc and restored x0 from orig_x0.  The x86
 * fix-up (orig_rax = -1, needed because arch_do_signal_or_restart() looks
 * at orig_ax after the stop) must not be ported: the image we save is
 * already the restart state, and restoring it verbatim re-arms the call.
 */
static void no_restart(void *gregs)
{
	(void)gregs;
}

/*
 * The interrupted syscall number is not part of NT_PRSTATUS on arm64
 * (orig_x0 and syscallno are kernel-only fields of struct pt_regs); it is
 * exposed through the separate NT_ARM_SYSTEM_CALL regset.  Logs only.
 */
/*
 * The syscall number is not in NT_PRSTATUS on arm64 (see syscall_nr()),
 * but x8 is the number the thread last made a syscall with, which the
 * kernel leaves alone: a temporary mask is in place only inside one of
 * these syscalls, entered with its number in x8.  A stale x8 only costs a
 * remote getpid().
 */
static int swaps_mask(const void *gregs)
{
	/* pselect6, ppoll, rt_sigsuspend, epoll_pwait, io_pgetevents, epoll_pwait2 */
	static const uint64_t nrs[] = { 72, 73, 133, 22, 292, 441 };
	const struct a64_gregs *r = gregs;

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		if (r->regs[8] == nrs[i])
			return 1;
	return 0;
}

/* arm64 skips a syscall through NT_ARM_SYSTEM_CALL (skip_regset), not gregs. */
static void skip_syscall(void *gregs)
{
	(void)gregs;
}

/* Nothing to decide: arm64 rewound the syscall before the stop (see no_restart()). */
static void restart_now(void *gregs)
{
	(void)gregs;
}

/*
 * The frame carries FP/SIMD only (sigframe_build()): a thread stopped with
 * live SVE state (NT_ARM_SVE's header flags say SVE_PT_REGS_SVE) has its
 * registers written back by heapctl instead.  So has a thread about to run
 * restart_syscall (x8, on the svc do_signal() rewound it to): that goes on
 * from the restart block, which the frame's rt_sigreturn resets.  An x8 of
 * 128 left over from an earlier restart only costs the longer restore.
 */
static bool frame_restores(const void *gregs, const struct hc_regset *extra, unsigned int n)
{
	const struct a64_gregs *r = gregs;

	if (r->regs[8] == A64_NR_RESTART_SYSCALL)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		uint16_t flags;

		if (extra[i].nt != NT_ARM_SVE || extra[i].len < 16)
			continue;
		/* struct user_sve_header: size (u32), max_size (u32), vl, max_vl, flags (u16s) */
		memcpy(&flags, (const uint8_t *)extra[i].buf + 12, 2);
		if (flags & 1 /* SVE_PT_REGS_SVE */)
			return false;
	}
	return true;
}

static long syscall_nr(const void *gregs)
{
	(void)gregs;
	return -1;
}

/*
 * AAPCS64 guarantees the callee FPCR in its default state: round to
 * nearest, no trapped exceptions, no flush-to-zero, no default NaN.  FPSR
 * only carries sticky flags and saturation; clear it too.  The vector
 * registers are caller-saved scratch for the callee (except d8-d15, which
 * it preserves), so leave them.
 */
static bool call_fpstate(unsigned int nt, void *buf, size_t len)
{
	struct a64_fpsimd *fp = buf;

	if (nt != NT_PRFPREG || len < sizeof(*fp))
		return false;
	fp->fpsr = 0;
	fp->fpcr = 0;
	return true;
}

/*
 * snprintf() semantics, like the x86_64 backend: returns the length the
 * whole dump needs; out is always terminated, and truncated if short.
 * Four registers per line, no trailing newline.
 */
static int dump_regs(const void *gregs, char *out, size_t outlen)
{
	const struct a64_gregs *r = gregs;
	static const char *const special[] = { "sp ", "pc ", "pstate" };
	const uint64_t sval[] = { r->sp, r->pc, r->pstate };
	const char *sep;
	size_t total = 0;
	unsigned int i;
	int n;

	if (outlen)
		out[0] = '\0';
	for (i = 0; i < 34; i++) {
		char *dst = total < outlen ? out + total : NULL;
		size_t room = total < outlen ? outlen - total : 0;

		sep = !i ? "" : i % 4 ? " " : "\n";
		if (i < 31)
			n = snprintf(dst, room, "%sx%-2u %016" PRIx64, sep, i, r->regs[i]);
		else
			n = snprintf(dst, room, "%s%s %016" PRIx64, sep, special[i - 31],
				     sval[i - 31]);
		if (n < 0)
			return n;
		total += (size_t)n;
	}
	return (int)total;
}

/* libunwind's aarch64 numbers: x0-x30 and sp as DWARF has them, then 32 for the pc. */
static int unwind_reg(const void *gregs, unsigned int regnum, uint64_t *val)
{
	const struct a64_gregs *r = gregs;

	if (regnum < 31)
		*val = r->regs[regnum];
	else if (regnum == 31)
		*val = r->sp;
	else if (regnum == 32)
		*val = r->pc;
	else
		return -1;
	return 0;
}

#define A64_MAX_FRAME (16u << 20) /* a larger step between records is no frame */

static int frame_walk(const void *gregs, uint64_t pac_mask, hc_rec_read_fn rd, void *arg,
		      uint64_t *rets, unsigned int max, char *why, size_t whylen)
{
	const struct a64_gregs *r = gregs;
	uint64_t fp = r->regs[29], sp = r->sp;
	unsigned int n = 0;

	while (fp) {
		uint64_t rec[2];

		if ((fp & 7) || fp < sp) {
			snprintf(why, whylen, "frame record #%u at 0x%llx is not on the stack", n,
				 (unsigned long long)fp);
			return -1;
		}
		if (rd(arg, fp, rec) < 0) {
			snprintf(why, whylen, "frame record #%u at 0x%llx is unreadable", n,
				 (unsigned long long)fp);
			return -1;
		}
		if (rec[1] && n >= max) {
			snprintf(why, whylen, "more than %u frame records", max);
			return -1;
		}
		if (rec[1])
			rets[n++] = rec[1] & ~pac_mask;
		if (rec[0] && (rec[0] <= fp || rec[0] - fp > A64_MAX_FRAME)) {
			snprintf(why, whylen, "frame record #%u at 0x%llx links to 0x%llx", n,
				 (unsigned long long)fp, (unsigned long long)rec[0]);
			return -1;
		}
		fp = rec[0];
	}
	return (int)n;
}

const struct hc_arch hc_arch_aarch64 = {
	.name = "aarch64",
	.e_machine = EM_AARCH64,
	.gregs_len = sizeof(struct a64_gregs),
	.extra_regsets = a64_extra_regsets,
	.max_args = A64_NARGS,
	.nr_rt_sigreturn = 139,	/* __NR_rt_sigreturn */
	.nr_getpid = 172,	/* __NR_getpid */
	.nr_restart_syscall = 128, /* __NR_restart_syscall */
	.nr_memfd_create = 279,
	.nr_close = 57,
	.nr_mmap = 222,
	.nr_munmap = 215,
	.r_jump_slot = 1026, /* R_AARCH64_JUMP_SLOT */
	.r_glob_dat = 1025,  /* R_AARCH64_GLOB_DAT */
	.audit_arch = 0xc00000b7, /* AUDIT_ARCH_AARCH64 */
	.cs_arch = CS_ARCH_ARM64,
	.cs_mode = CS_MODE_ARM,
	.notify = { a64_notify, sizeof(a64_notify) },
	.notify_sys_end = 8,
	.entry_pads = a64_entry_pads,
	.syscall_insn = { a64_syscall_insn, sizeof(a64_syscall_insn) },
	.syscall_ret = { a64_syscall_ret, sizeof(a64_syscall_ret) },
	.restorers = a64_restorers,

	.get_pc = get_pc,
	.get_sp = get_sp,
	.get_arg = get_arg,
	.sigframe_len = sigframe_len,
	.frame_place = frame_place,
	.sigframe_build = sigframe_build,
	.sigframe_mask_off = A64_SF_MASK,
	.prep_call = prep_call,
	.prep_syscall = prep_syscall,
	.prep_restore = prep_restore,
	.skip_syscall = skip_syscall,
	.skip_regset = 0x404, /* NT_ARM_SYSTEM_CALL */
	.restart_now = restart_now,
	.get_ret = get_ret,
	.get_syscall_ret = get_syscall_ret,
	.no_restart = no_restart,
	.undo_stop_eintr = undo_stop_eintr,
	.needs_presys = true,
	.restart_probe = restart_probe,
	.restart_probed = restart_probed,
	.wait_kind = wait_kind,
	.swaps_mask = swaps_mask,
	.frame_restores = frame_restores,
	.syscall_nr = syscall_nr,
	.call_fpstate = call_fpstate,
	.dump_regs = dump_regs,
	.unwind_reg = unwind_reg,
	.frame_walk = frame_walk,
	.pac_regset = 0x406, /* NT_ARM_PAC_MASK: struct user_pac_mask { data_mask, insn_mask } */
	.tp_regset = 0x401,  /* NT_ARM_TLS: tpidr_el0 first */
	.regs_hold_returns = 30, /* x0-x30 */
	.hook_plan = hc_aarch64_hook_plan,
	/* b reaches +-128 MiB: a margin for the trampoline's own length */
	.hook_reach = (128ull << 20) - (1ull << 20),
};
