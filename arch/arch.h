/* SPDX-License-Identifier: MIT */
/*
 * arch/arch.h: the whole per-architecture contract.
 *
 * Each backend (arch/<name>/arch.c) is a set of pure functions over the
 * register images the kernel hands out through PTRACE_GETREGSET.  They use
 * our own mirror structs, so every backend compiles and is unit-tested on
 * every host; a backend _Static_asserts its mirror against <sys/user.h> when
 * the host matches.  Nothing here calls ptrace(2): src/lib/borrow/call.c owns the
 * sequence, the backend only knows where things live.
 *
 * Every state heapctl leaves a borrowed thread in restores itself if
 * heapctl dies: below the red zone sits a real signal frame holding the
 * thread's original registers, FP state and signal mask, and whatever the
 * thread runs next ends in rt_sigreturn on that frame.  heapctl, while
 * alive, watches with PTRACE_SYSCALL and steps in at those syscalls.
 * Nothing of heapctl's is ever mapped in the target: every instruction
 * the thread runs is the target's own.
 *
 * The remote stack (x86_64 shown; aarch64 puts the return address in x30
 * and has no red zone):
 *
 *            original sp -> +------------------------------+
 *                           | red zone (128 bytes)         |  never touched
 *                           +------------------------------+
 *                           | scratch: strings, out-values |
 *                           | FP/vector state (64-aligned) |  restored by
 *                           | ucontext, siginfo            |  rt_sigreturn
 *                  frame -> | pretcode = the restorer      |
 *                           +------------------------------+
 *                           | words the ret gadget pops    |  x86_64 only:
 *   sp at function entry -> | return address = ret gadget  |  c->slot_*
 *                           +------------------------------+
 *                           | callee frames grow down      |
 *
 * A call returns into the target's own sigreturn restorer (glibc's
 * __restore_rt, the vDSO's on arm64), whose rt_sigreturn gives the thread
 * back.  heapctl stops the thread at that syscall's entry, takes the result
 * and either sets up the next call (the syscall skipped) or lets the
 * rt_sigreturn run and detaches: the thread restores itself.  On arm64 the
 * result is still in x0 there.  On x86_64 the restorer loads its syscall
 * number into rax, so the call first returns into a "ret gadget" of the
 * target's text (ret_gadget(): "mov %rax, disp(%rbx)" and the like, then
 * pops and "ret"), which stores the result in heapctl's scratch through a
 * register the callee preserved, and returns on into the restorer.
 * Callbacks (malloc_stats_print's write_cb) are the C library's own
 * getpid(): a syscall heapctl stops at, harmless without it.
 */
#ifndef HC_ARCH_H
#define HC_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>

struct hc_err;

#define HC_ARCH_MAX_ARGS 8

struct hc_call {
	uint64_t pc;       /* in: function to call, or the syscall gadget */
	uint64_t ret_addr; /* in: where control goes next: the ret gadget or the restorer */
	uint64_t frame;    /* in: the signal frame's address, from frame_place() */
	long nr;           /* in: syscall number, for prep_syscall() */
	uint64_t args[HC_ARCH_MAX_ARGS];
	unsigned int nargs;
	/*
	 * in: where a struct returned by value goes (mallinfo2()), or 0.  The
	 * psABIs differ: x86_64 passes this hidden pointer as the first
	 * integer argument (rdi, the others shift right) and returns it in
	 * rax; AAPCS64 passes it in x8 and leaves x0-x7 to the arguments.
	 */
	uint64_t sret;
	/*
	 * in, prep_call() with a ret gadget (x86_64): the gadget's base
	 * register (ret_reg) gets ret_base, and it pops ret_pop bytes before
	 * its ret, which must find the restorer at the frame.
	 */
	unsigned int ret_reg, ret_pop;
	uint64_t ret_base;
	uint64_t slot_addr, slot_val; /* out: one word call.c must write, or 0 */
	/*
	 * out: nstack more words call.c writes right above slot_val: what the
	 * ret gadget pops, the arguments a psABI passes on the stack first
	 * (x86_64: past the sixth)
	 */
	uint64_t stack[HC_ARCH_MAX_ARGS];
	unsigned int nstack;
};

/*
 * A ret gadget (x86_64): "mov %rax, disp(%reg)" with reg one a callee
 * preserves, then only pops and other moves that touch no memory and not
 * the stack pointer otherwise, then "ret" (ret_gadget()).
 */
struct hc_ret_gadget {
	uint64_t addr;
	unsigned int reg; /* the base register, by its x86 number (rbx 3, rbp 5, r12-r15) */
	int32_t disp;
	unsigned int pop; /* bytes its pops and "add $n, %rsp" take off the stack */
	size_t len;
};

/* A regset saved from the thread. */
struct hc_regset {
	unsigned int nt;
	void *buf;
	size_t len;
};

/* What rt_sigreturn must bring back. */
struct hc_sigframe {
	const void *gregs;              /* NT_PRSTATUS image at the stop */
	const struct hc_regset *extra;  /* extra regsets as saved */
	unsigned int nextra;
	uint64_t mask;                  /* the thread's real signal mask */
	uint64_t raddr;                 /* where the frame will live */
	uint64_t restorer;              /* its pretcode, where returns pop the stack (x86_64) */
};

/*
 * What /proc/PID/task/TID/syscall showed just before heapctl stopped the
 * thread: the syscall it was blocked in, its arguments, sp and pc.  arm64
 * needs it to re-issue a syscall whose first argument the EINTR overwrote.
 */
struct hc_presys {
	bool valid;
	long nr;
	uint64_t args[6], sp, pc;
};

/* What a ptrace stop does to a thread blocked in a syscall (arch->wait_kind). */
enum hc_wait {
	HC_WAIT_UNDISTURBED = 0, /* resumes as if nothing happened, or not a wait at all */
	HC_WAIT_EINTR_REDO,      /* EINTR on any stop, no timeout: heapctl re-issues it */
	HC_WAIT_EINTR_KEEP,      /* EINTR on any stop, with a timeout: the EINTR stays */
	HC_WAIT_RESTART_FULL,    /* restored as saved, re-runs its whole timeout (arm64): probed */
};

/*
 * A syscall that fails with EINTR after any stop, PTRACE_INTERRUPT included,
 * and is never restarted (signal(7)), and where its timeout is: an int in
 * milliseconds (negative: none) or a pointer (NULL: none).
 */
enum hc_tmo { HC_TMO_NONE, HC_TMO_MS, HC_TMO_PTR };
struct hc_stop_eintr {
	long nr;
	enum hc_tmo kind;
	unsigned int arg;
};

/* tab's rule for nr: re-issue an untimed wait, keep a timed one's EINTR; else undisturbed. */
static inline enum hc_wait hc_stop_eintr_kind(const struct hc_stop_eintr *tab, size_t n, long nr,
					      const uint64_t args[6])
{
	for (size_t i = 0; i < n; i++) {
		uint64_t a = args[tab[i].arg];

		if (nr != tab[i].nr)
			continue;
		switch (tab[i].kind) {
		case HC_TMO_MS:
			/* the kernel reads an int; any negative value waits forever */
			return (int32_t)(uint32_t)a < 0 ? HC_WAIT_EINTR_REDO : HC_WAIT_EINTR_KEEP;
		case HC_TMO_PTR:
			return a ? HC_WAIT_EINTR_KEEP : HC_WAIT_EINTR_REDO;
		default:
			return HC_WAIT_EINTR_REDO;
		}
	}
	return HC_WAIT_UNDISTURBED;
}

/* Reads the 16 bytes at addr of the target (a frame record); 0 or -1. */
typedef int (*hc_rec_read_fn)(void *arg, uint64_t addr, uint64_t rec[2]);

/* A byte pattern in the target's text. */
struct hc_bytes {
	const uint8_t *b;
	size_t len;
};

/*
 * An inline hook at a function's entry (static binaries call malloc
 * directly, with no GOT slot to swap): what hook_plan() is given.  The
 * planner is pure; stopping the threads, checking that no pc sits in the
 * bytes it changes, mapping the trampoline and writing both belong to the
 * caller.
 */
struct hc_hook_in {
	const char *name;      /* the function's name for messages, or NULL */
	uint64_t entry;        /* the function's address in the target */
	const uint8_t *code;   /* its bytes from entry: at least func_size of them, and 16 */
	size_t code_len;
	size_t func_size;      /* its symbol's size; 0 (unknown) is refused */
	uint64_t tramp;        /* where the trampoline goes, within hook_reach of entry */
	uint64_t hook;         /* the hook function the patch diverts to */
};

#define HC_HOOK_PATCH_MAX 16
#define HC_HOOK_TRAMP_MAX 128

/*
 * The plan: patch_len bytes at patch_addr go from orig to patch, and
 * tramp_len bytes of tramp go to in->tramp first.  The patch jumps to stub,
 * which jumps to the hook; the hook calls tramp_orig as "the original
 * function": the displaced instructions, moved, then a jump back past the
 * patch.  A thread may be anywhere but inside [patch_addr, patch_addr +
 * patch_len) while the patch is written.
 */
struct hc_hook_plan {
	uint64_t patch_addr;   /* entry, or past the landing pad kept there (arm64) */
	uint8_t orig[HC_HOOK_PATCH_MAX], patch[HC_HOOK_PATCH_MAX];
	size_t patch_len;
	uint8_t tramp[HC_HOOK_TRAMP_MAX];
	size_t tramp_len;
	uint64_t stub;         /* in the trampoline: where the patch jumps */
	uint64_t tramp_orig;   /* in the trampoline: the original function, for the hook */
};

struct hc_arch {
	const char *name;
	uint16_t e_machine;             /* matched against the target's ELF */
	size_t gregs_len;               /* NT_PRSTATUS size */
	const unsigned int *extra_regsets; /* saved/restored verbatim, in order; 0-terminated */
	unsigned int max_args;
	long nr_rt_sigreturn, nr_getpid, nr_restart_syscall;
	long nr_memfd_create, nr_close; /* loading the sampler (inject.c) */
	long nr_mmap, nr_munmap;        /* mapping it where there is no dlopen (map.c) */
	/* the relocations that fill GOT slots: the sampler hooks those */
	uint32_t r_jump_slot, r_glob_dat;
	uint32_t audit_arch;             /* AUDIT_ARCH_*, as seccomp filters see it */
	int cs_arch, cs_mode;           /* Capstone */

	/* Code heapctl looks for in the target's own text. */
	struct hc_bytes syscall_insn;   /* the syscall instruction */
	struct hc_bytes syscall_ret;    /* "syscall; ret": remote syscalls run here */
	const struct hc_bytes *restorers; /* sigreturn restorers; len 0 ends the list */
	/*
	 * Callbacks: a C library function that makes a harmless syscall and
	 * returns (getpid()); notify_sys_end is the pc at its syscall stops,
	 * from its start.  The function may start with one of entry_pads first
	 * (a landing pad, endbr64 or "bti c", where an indirect call must
	 * enter, or the nop a build leaves in its place); len 0 ends the list.
	 */
	struct hc_bytes notify;
	size_t notify_sys_end;
	const struct hc_bytes *entry_pads;
	/*
	 * x86_64: does code (len bytes) start a ret gadget (struct
	 * hc_ret_gadget; addr is left to the caller)?  Its length, or 0.
	 * NULL where a call's result survives into the restorer's syscall
	 * stop in a register (arm64: x0, get_ret()).
	 */
	size_t (*ret_gadget)(const uint8_t *code, size_t len, struct hc_ret_gadget *g);

	uint64_t (*get_pc)(const void *gregs);
	uint64_t (*get_sp)(const void *gregs);
	/* i-th integer argument as seen at function entry (for callbacks). */
	uint64_t (*get_arg)(const void *gregs, unsigned int i);

	/* Upper bound of a signal frame's size for a given set of regsets. */
	size_t (*sigframe_len)(const struct hc_sigframe *f);
	/* Frame address below the red zone of sp, aligned as the ABI wants. */
	uint64_t (*frame_place)(uint64_t sp, size_t frame_len);
	/*
	 * Write into out the signal frame for f.  The registers in it carry the
	 * kernel's syscall-restart decision already made (rt_sigreturn turns
	 * restarting off), so an interrupted syscall runs again.
	 */
	int (*sigframe_build)(const struct hc_sigframe *f, uint8_t *out, size_t outlen,
			      struct hc_err *err);
	size_t sigframe_mask_off;       /* where the mask sits in the frame */

	/*
	 * Turn gregs (a copy of the saved state) into a call of c->pc with
	 * c->args, returning to c->ret_addr, and from there into the restorer
	 * at c->frame.  Fails with HC_E_ARGS for more than max_args arguments,
	 * or more stack arguments than the ret gadget pops.  arm64 writes x7
	 * for an 8th argument, which a syscall stop does not take: call.c
	 * moves the thread to another stop first.
	 */
	int (*prep_call)(void *gregs, struct hc_call *c, struct hc_err *err);
	/* Run syscall c->nr on the gadget at c->pc, then return into c->ret_addr. */
	void (*prep_syscall)(void *gregs, struct hc_call *c);
	/* Jump to restorer so that its rt_sigreturn finds the frame. */
	void (*prep_restore)(void *gregs, uint64_t restorer, uint64_t frame);
	/*
	 * At a syscall-entry stop, make the kernel skip the syscall: x86 takes
	 * orig_rax = -1 in gregs; arm64 needs NT_ARM_SYSTEM_CALL = -1, named
	 * by skip_regset (0 when gregs suffice).
	 */
	void (*skip_syscall)(void *gregs);
	unsigned int skip_regset;
	/*
	 * Make now the restart decision the kernel makes after a stop, with a
	 * restart-block syscall (nanosleep...) re-issued from scratch: for when
	 * an rt_sigreturn has reset the thread's restart block (restart_syscall
	 * would fail with EINTR, which no signal gives a thread without a
	 * handler).
	 */
	void (*restart_now)(void *gregs);
	/*
	 * Make in gregs the restart decision the kernel makes after a stop
	 * when no signal is delivered, the restart block kept: for a restore
	 * at a syscall-exit stop, where the kernel makes no such decision.
	 * NULL where registers cannot all be written there (arm64: x7 is the
	 * syscall stop's entry/exit flag, ptrace_syscall_enter()): the restore
	 * then takes a stop inside signal delivery.
	 */
	void (*restart_here)(void *gregs);
	/*
	 * A call's result at the restorer's rt_sigreturn stop, where the return
	 * leaves it in a register (arm64); NULL where a ret gadget keeps it.
	 */
	uint64_t (*get_ret)(const void *gregs);
	int64_t (*get_syscall_ret)(const void *gregs);
	/*
	 * Keep the kernel's syscall-restart logic away from injected state.
	 * x86_64 decides after the ptrace stop, so this sets orig_rax = -1;
	 * arm64 has already rewound before the stop, so it is a no-op there.
	 */
	void (*no_restart)(void *gregs);
	/*
	 * What heapctl's stop (PTRACE_INTERRUPT) does to a thread blocked in
	 * syscall nr with args, by the kernel's own restart rules; the table
	 * is in docs/design.md.  Pure: the caller gets nr and args from the
	 * registers (x86_64) or from /proc/PID/task/TID/syscall (arm64).
	 */
	enum hc_wait (*wait_kind)(long nr, const uint64_t args[6]);
	/*
	 * If gregs shows a HC_WAIT_EINTR_REDO syscall returning -EINTR, rewind
	 * it so that it runs again, and return true.  A timed one
	 * (HC_WAIT_EINTR_KEEP) keeps its EINTR: re-issuing it would restart its
	 * whole timeout, while any signal gives the same EINTR and callers
	 * recompute what is left.  The caller only does this when no signal is
	 * pending, i.e. when the EINTR was heapctl's own doing.  pre may be
	 * NULL or invalid; a backend that needs it then returns false.
	 */
	bool (*undo_stop_eintr)(void *gregs, const struct hc_presys *pre);
	/* undo_stop_eintr() needs /proc/PID/task/TID/syscall from before the stop */
	bool needs_presys;
	/*
	 * arm64 only (NULL elsewhere).  Does gregs, at the first stop, sit on
	 * the svc of a HC_WAIT_RESTART_FULL syscall that pre saw blocked?
	 * do_signal() rewound it there, and picks restart_syscall only after
	 * the stop; the registers cannot tell a rewound sleep from one about
	 * to start.  Then thread.c (probe_restart()) lets do_signal() finish
	 * with the original registers and stops the thread at the
	 * syscall-entry stop of that svc: the kernel's own answer.
	 */
	bool (*restart_probe)(const void *gregs, const struct hc_presys *pre);
	/*
	 * At that syscall-entry stop (entry): take the kernel's choice
	 * (restart_syscall or the syscall itself) into saved.  False if entry
	 * is not that svc (saved is left alone).
	 */
	bool (*restart_probed)(void *saved, const void *entry);
	/*
	 * Is the thread inside a syscall that swaps in a temporary signal mask
	 * (ppoll, pselect6, epoll_pwait, sigsuspend...)?  1 yes, 0 no, -1
	 * cannot tell (treated as yes).
	 */
	int (*swaps_mask)(const void *gregs);
	/*
	 * Does rt_sigreturn on the frame give the thread back as exactly as
	 * heapctl writing its registers would?  Not a relative sleep, which the
	 * frame re-runs in full (restart_now()) where the kernel goes on with
	 * the time left, nor state the frame does not carry.  NULL: always.
	 */
	bool (*frame_restores)(const void *gregs, const struct hc_regset *extra, unsigned int n);
	/* Syscall the thread was in at the stop (orig_rax / -1), for logs. */
	long (*syscall_nr)(const void *gregs);
	/*
	 * Put the floating-point/vector part of an NT_* extra regset into the
	 * state the ABI guarantees at a call (x87 empty, default MXCSR/FPCR),
	 * so a thread caught mid-computation cannot make the callee fault.
	 * Returns false if the buffer is not one this hook understands.
	 */
	bool (*call_fpstate)(unsigned int nt, void *buf, size_t len);
	/* What the backend asks of the CPU, asked before anything stops (x86_64: CPUID), or NULL. */
	void (*prepare)(void);
	/* Format the general registers for -vvv. */
	int (*dump_regs)(const void *gregs, char *out, size_t outlen);

	/*
	 * The unwinder's view of the saved registers, so that it never asks
	 * the kernel again: libunwind's register number (DWARF's for both
	 * arches, with the pc as 16 on x86_64 and 32 on arm64) to its value in
	 * gregs.  -1 for a number the image does not hold.
	 */
	int (*unwind_reg)(const void *gregs, unsigned int regnum, uint64_t *val);
	/*
	 * arm64 only (NULL elsewhere): the chain of frame records (AAPCS64
	 * 6.4.6: x29 points at {caller's x29, return address}) from gregs' x29
	 * upwards, a second opinion for libunwind (src/lib/borrow/where.c says why).
	 * rd reads one 16-byte record.  Fills rets[] with the return addresses,
	 * pointer authentication bits cleared with pac_mask.  Returns how many,
	 * once a record with a saved x29 of 0 ends the chain (the outermost
	 * frame), or -1 with why if the chain breaks first (unreadable,
	 * misaligned, below sp, not increasing, a step of more than 16 MiB,
	 * more than max frames).
	 */
	int (*frame_walk)(const void *gregs, uint64_t pac_mask, hc_rec_read_fn rd, void *arg,
			  uint64_t *rets, unsigned int max, char *why, size_t whylen);
	/* The regset whose second word masks the PAC bits of return addresses, or 0. */
	unsigned int pac_regset;
	/*
	 * The thread pointer (TLS base) from gregs where the image holds it
	 * (x86_64's fs_base), or NULL: then the first word of tp_regset
	 * (arm64's NT_ARM_TLS, tpidr_el0).  The stack scan (src/lib/borrow/where.c)
	 * ends a thread's stack there.
	 */
	uint64_t (*get_tp)(const void *gregs);
	unsigned int tp_regset;
	/*
	 * Where a call leaves its return address in a register (arm64's link
	 * register), a callee may still hold one in any register: the stack
	 * scan checks unwind_reg() numbers 0..regs_hold_returns (0: none).
	 */
	unsigned int regs_hold_returns;

	/*
	 * Plan an inline hook (struct hc_hook_plan): 0, or -1 with why naming
	 * the function, the offset and the reason ("malloc+3: 'call 0x1234'
	 * cannot be moved...").  Refuses whatever it cannot move exactly:
	 * arch/<name>/hook.c lists what and why.
	 */
	int (*hook_plan)(const struct hc_hook_in *in, struct hc_hook_plan *out, char *why,
			 size_t whylen);
	/*
	 * How far in->tramp may be from entry, either way, for the planner's
	 * branches between the two to reach (x86_64: jmp rel32, arm64: b).
	 * Take the nearest free spot: what the moved instructions address
	 * (x86_64's %rip-relative data) must be in reach of the trampoline
	 * too, and the planner refuses what is not.
	 */
	uint64_t hook_reach;
};

extern const struct hc_arch hc_arch_x86_64;
extern const struct hc_arch hc_arch_aarch64;

/* The backends' hook_plan() (arch/<name>/hook.c). */
int hc_x86_64_hook_plan(const struct hc_hook_in *in, struct hc_hook_plan *out, char *why,
			size_t whylen);
int hc_aarch64_hook_plan(const struct hc_hook_in *in, struct hc_hook_plan *out, char *why,
			 size_t whylen);

/* The backend for this build's host, picked by linking arch/$(ARCH). */
const struct hc_arch *hc_arch_host(void);

#endif
