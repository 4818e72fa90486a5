/* SPDX-License-Identifier: MIT */
/*
 * arch/arch.h: the whole per-architecture contract.
 *
 * Each backend (arch/<name>/arch.c) is a set of pure functions over the
 * register images the kernel hands out through PTRACE_GETREGSET.  They use
 * our own mirror structs, so every backend compiles and is unit-tested on
 * every host; a backend _Static_asserts its mirror against <sys/user.h> when
 * the host matches.  Nothing here calls ptrace(2): src/lib/call.c owns the
 * sequence, the backend only knows where things live.
 *
 * The remote stack frame built by prep_call() (x86_64 shown; aarch64 keeps
 * the return address in x30 and has no red zone):
 *
 *            original sp -> +--------------------------+
 *                           | red zone (128 bytes)     |  never touched
 *                           +--------------------------+
 *                           | padding to 16 bytes      |
 *   sp at function entry -> +--------------------------+
 *                           | return address = trap    |  c->slot_addr/val
 *                           +--------------------------+
 *                           | callee frames grow down  |
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
	uint64_t fn;                    /* in: function to call */
	uint64_t trap_addr;             /* in: where the callee must return */
	uint64_t sp;                    /* in: sp to build the frame below */
	uint64_t args[HC_ARCH_MAX_ARGS];/* in: integer/pointer arguments */
	unsigned int nargs;
	uint64_t slot_addr, slot_val;   /* out: one word call.c must write, or 0 */
};

struct hc_arch {
	const char *name;
	uint16_t e_machine;             /* matched against the target's ELF */
	size_t gregs_len;               /* NT_PRSTATUS size */
	const unsigned int *extra_regsets; /* saved/restored verbatim; 0-terminated */
	const uint8_t *trap;            /* return trap, lives in heapctl's page */
	size_t trap_len;
	const uint8_t *cb_stub;         /* callback stub: trap, then return */
	size_t cb_stub_len;
	const uint8_t *syscall_insn;    /* bytes of the syscall instruction */
	size_t syscall_insn_len;
	unsigned int max_args;
	long nr_mmap, nr_mprotect, nr_munmap;
	int cs_arch, cs_mode;           /* Capstone */

	uint64_t (*get_pc)(const void *gregs);
	uint64_t (*get_sp)(const void *gregs);
	/* i-th integer argument as seen at function entry (for callbacks). */
	uint64_t (*get_arg)(const void *gregs, unsigned int i);
	/*
	 * Turn gregs (a copy of the saved state) into a call of c->fn with
	 * c->args, returning to c->trap_addr.  Fails with HC_E_ARGS for more
	 * than max_args arguments.
	 */
	int (*prep_call)(void *gregs, struct hc_call *c, struct hc_err *err);
	uint64_t (*get_ret)(const void *gregs);
	/*
	 * Make gregs execute syscall nr(args) at pc, the address of a syscall
	 * instruction.  Used with PTRACE_SYSCALL stops; no trap is needed.
	 */
	void (*prep_syscall)(void *gregs, uint64_t pc, long nr, const uint64_t *args,
			     unsigned int nargs);
	int64_t (*get_syscall_ret)(const void *gregs);
	/* The stop is our trap at trap_addr, not anything else. */
	bool (*stopped_at_trap)(const void *gregs, const siginfo_t *si, uint64_t trap_addr);
	/*
	 * Keep the kernel's syscall-restart logic away from injected state.
	 * x86_64 decides after the ptrace stop, so this sets orig_rax = -1;
	 * arm64 has already rewound before the stop, so it is a no-op there.
	 */
	void (*no_restart)(void *gregs);
	/*
	 * Some syscalls fail with EINTR, instead of restarting, whenever the
	 * thread is stopped (signal(7): epoll_wait, semop, sigtimedwait,
	 * io_getevents...), and PTRACE_INTERRUPT is such a stop.  If gregs
	 * shows one of them returning -EINTR, rewind it so that it runs again,
	 * and return true.  The caller only does this when no signal is
	 * pending, i.e. when the EINTR was heapctl's own doing.
	 */
	bool (*undo_stop_eintr)(void *gregs);
	/* Syscall the thread was in at the stop (orig_rax / -1), for logs. */
	long (*syscall_nr)(const void *gregs);
	/*
	 * Put the floating-point/vector part of an NT_* extra regset into the
	 * state the ABI guarantees at a call (x87 empty, default MXCSR/FPCR),
	 * so a thread caught mid-computation cannot make the callee fault.
	 * Returns false if the buffer is not one this hook understands.
	 */
	bool (*call_fpstate)(unsigned int nt, void *buf, size_t len);
	/* Format the general registers for -vvv. */
	int (*dump_regs)(const void *gregs, char *out, size_t outlen);
};

extern const struct hc_arch hc_arch_x86_64;
extern const struct hc_arch hc_arch_aarch64;

/* The backend for this build's host, picked by linking arch/$(ARCH). */
const struct hc_arch *hc_arch_host(void);

#endif
