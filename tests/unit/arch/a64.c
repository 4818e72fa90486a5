// SPDX-License-Identifier: MIT
/*
 * test_arch, aarch64's backend: struct user_pt_regs by word index, the
 * rt_sigframe and its FP/SIMD and SVE records by byte offset, checked on
 * fabricated images whatever the host.
 */
#include "test_arch.h"

/* ---- aarch64: struct user_pt_regs, word indices ---- */


#define A_BTYPE 0x0c00ull /* PSTATE bits 11:10 */

/*
 * The arm64 rt_sigframe (arch/arm64/kernel/signal.c): struct siginfo, then
 * struct ucontext (uapi asm/ucontext.h) whose uc_mcontext.__reserved holds
 * the records.  aarch64.sigframe.uapi checks these on an arm64 host.
 */
#define AF_UC_FLAGS	(AF_UC + 0)
#define AF_UC_LINK	(AF_UC + 8)
#define AF_SS_SP	(AF_UC + 16)
#define AF_SS_FLAGS	(AF_UC + 24)
#define AF_SS_SIZE	(AF_UC + 32)
#define AF_MCONTEXT	(AF_UC + 176)	/* struct sigcontext: fault_address first */
#define AF_REGS		(AF_UC + 184)	/* x0..x30, sp, pc, pstate */
#define AF_RESERVED	(AF_UC + 464)	/* __reserved[4096], 16-byte aligned */
/* struct fpsimd_context, from its record */
#define FPS_MAGIC	0x46508001u
#define FPS_SIZE	528
#define FPS_FPSR	8
#define FPS_FPCR	12
#define FPS_VREGS	16

/* NT_PRFPREG: struct user_fpsimd_state */
#define FP_FPSR 512
#define FP_FPCR 516
#define FP_LEN	528


const uint8_t a64_sysc[] = { 0x01, 0x00, 0x00, 0xd4 }; /* svc #0 */
const uint8_t a64_sysret[] = { 0x01, 0x00, 0x00, 0xd4,  /* svc #0 */
				      0xc0, 0x03, 0x5f, 0xd6 }; /* ret */
/* the vDSO's __kernel_rt_sigreturn: mov x8, #139; svc #0 */
const uint8_t a64_vdso_rt[] = { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 };

/* aarch64.table beyond what arch_table() checks on both backends */
void a64_table_own(void)
{
	static const uint8_t ret[] = { 0xc0, 0x03, 0x5f, 0xd6 };
	static const uint8_t bti_c[] = { 0x5f, 0x24, 0x03, 0xd5 };
	const struct hc_bytes *n = &a64->notify;

	/* FPSIMD first, then SVE: see a64_extra_regsets in arch/aarch64/arch.c. */
	CHECK(a64->extra_regsets && a64->extra_regsets[0] == NT_PRFPREG_ &&
		      a64->extra_regsets[1] == 0x405 /* NT_ARM_SVE */ && a64->extra_regsets[2] == 0,
	      "extra_regsets");
	/* the syscall number is not in NT_PRSTATUS: skipping needs its own regset */
	CHECK(a64->skip_regset == 0x404 /* NT_ARM_SYSTEM_CALL */, "skip_regset %#x",
	      a64->skip_regset);
	/* callbacks: the C library's getpid(), mov x8, #172; svc #0; ret */
	CHECK(n->b && n->len == 12 && !memcmp(n->b, (const uint8_t[]){ 0x88, 0x15, 0x80, 0xd2 }, 4),
	      "notify is not getpid()");
	CHECK(n->b && n->len % 4 == 0 && a64->notify_sys_end >= 4 &&
		      a64->notify_sys_end + 4 <= n->len && a64->notify_sys_end % 4 == 0,
	      "notify_sys_end %zu outside notify (%zu bytes)", a64->notify_sys_end, n->len);
	if (n->b && a64->notify_sys_end >= 4 && a64->notify_sys_end + 4 <= n->len) {
		CHECK(!memcmp(n->b + a64->notify_sys_end - 4, a64_sysc, 4),
		      "no svc before notify_sys_end");
		CHECK(!memcmp(n->b + a64->notify_sys_end, ret, 4), "no ret at notify_sys_end");
	}
	CHECK(a64->entry_pads && bytes_eq(&a64->entry_pads[0], bti_c, sizeof(bti_c)) &&
		      a64->entry_pads[1].len == 4 && !a64->entry_pads[2].len,
	      "entry_pads are not bti c and nop");
	/* x0 survives into the restorer's svc: no ret gadget */
	CHECK(!a64->ret_gadget && a64->get_ret, "ret_gadget %p, get_ret %p: want get_ret only",
	      (void *)a64->ret_gadget, (void *)a64->get_ret);
	CHECK(!a64->get_tp && a64->tp_regset == 0x401 /* NT_ARM_TLS */ && a64->regs_hold_returns == 30,
	      "thread pointer from NT_ARM_TLS, x0-x30 may hold a return address");
}

void a64_prep_call_args(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, 6, 7, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("aarch64.prep_call.args");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, frame, 7);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed: %s", err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	for (unsigned int i = 0; i < 7; i++)
		CHECK(g[i] == c.args[i], "x%u %#" PRIx64, i, g[i]);
	CHECK(g[A_PC] == FN, "pc %#" PRIx64, g[A_PC]);
	CHECK(g[A_LR] == RETG, "x30 %#" PRIx64 ", want ret_addr", g[A_LR]);
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(g[A_X8] == orig[A_X8], "x8 changed");
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	CHECK(c.slot_addr == 0 && c.slot_val == 0,
	      "slot (%#" PRIx64 ", %#" PRIx64 "), want none: the return address is in x30",
	      c.slot_addr, c.slot_val);

	fill(g, GWORDS);
	call_init(&c, frame, 3);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call(3 args) failed");
	CHECK(g[0] == c.args[0] && g[1] == c.args[1] && g[2] == c.args[2], "3 args");
	CHECK(g[3] == orig[3] && g[7] == orig[7], "unused arg regs changed");
	end();
}

/*
 * An 8th argument goes in x7, as AAPCS64 says.  The kernel puts x7 back as
 * it was after a syscall stop, so call.c starts such a call from another
 * stop; the backend just sets it.
 */
void a64_prep_call_x7(void)
{
	static const int touched[] = { 0, 1, 2, 3, 4, 5, 6, 7, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	int d;

	begin("aarch64.prep_call.x7");
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, frame, 8);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call(8 args) failed: %s", err.msg);
	for (unsigned int i = 0; i < 8; i++)
		CHECK(g[i] == c.args[i], "x%u %#" PRIx64, i, g[i]);
	CHECK(g[A_PC] == FN, "pc %#" PRIx64 ", want the function", g[A_PC]);
	CHECK(g[A_LR] == RETG && g[A_SP] == frame, "x30 %#" PRIx64 ", sp %#" PRIx64, g[A_LR],
	      g[A_SP]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	end();
}

void a64_prep_call_stack(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;

	begin("aarch64.prep_call.stack");
	for (uint64_t off = 0; off < 32; off++) {
		uint64_t osp = SP + off, fr = a64->frame_place(osp, AF_END + 16);

		fill(g, GWORDS);
		g[A_SP] = osp;
		call_init(&c, fr, 0);
		CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
		CHECK(g[A_SP] == fr, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], fr);
		CHECK(g[A_SP] % 16 == 0, "sp %% 16 == %" PRIu64 " (orig sp %#" PRIx64 ")",
		      g[A_SP] % 16, osp);
		CHECK(g[A_SP] < osp, "sp %#" PRIx64 " not below the original %#" PRIx64, g[A_SP],
		      osp);
		CHECK(a64->get_sp(g) == fr, "get_sp after prep_call");
		CHECK(g[A_LR] == RETG, "x30 %#" PRIx64, g[A_LR]);
	}
	end();
}

void a64_prep_call_btype(void)
{
	uint64_t g[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	/* NZCV = 0b1010, SSBS (bit 12), BTYPE = 0b11 */
	const uint64_t pstate = 0xa0000000ull | 0x1000ull | A_BTYPE;

	begin("aarch64.prep_call.btype");
	fill(g, GWORDS);
	g[A_PSTATE] = pstate;
	call_init(&c, a64->frame_place(SP, AF_END + 16), 1);
	CHECK(a64->prep_call(g, &c, &err) == 0, "prep_call failed");
	CHECK(!(g[A_PSTATE] & A_BTYPE), "BTYPE not cleared: pstate %#" PRIx64, g[A_PSTATE]);
	CHECK(g[A_PSTATE] == (pstate & ~A_BTYPE), "other PSTATE bits changed: %#" PRIx64,
	      g[A_PSTATE]);
	end();
}

void a64_prep_syscall(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { 0, 1, 2, 3, 4, 5, A_X8, A_LR, A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	struct hc_call c;
	int d;

	begin("aarch64.prep_syscall");
	fill(g, GWORDS);
	g[A_PSTATE] = 0x60000000ull | A_BTYPE;
	memcpy(orig, g, sizeof(g));
	sys_init(&c, frame, 222 /* mmap */);
	a64->prep_syscall(g, &c);
	CHECK(g[A_X8] == 222, "x8 %#" PRIx64 ", want __NR_mmap", g[A_X8]);
	CHECK(g[A_PC] == GADGET, "pc %#" PRIx64 ", want the gadget", g[A_PC]);
	for (unsigned int i = 0; i < 6; i++)
		CHECK(g[i] == c.args[i], "x%u", i);
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(g[A_LR] == RESTORER, "x30 %#" PRIx64 ", want the restorer", g[A_LR]);
	CHECK(c.slot_addr == 0 && c.slot_val == 0, "slot (%#" PRIx64 ", %#" PRIx64 "), want none",
	      c.slot_addr, c.slot_val);
	CHECK(g[6] == orig[6] && g[7] == orig[7], "x6/x7 changed: syscalls take six arguments");
	CHECK(g[A_PSTATE] == 0x60000000ull, "pstate %#" PRIx64 ", want BTYPE cleared only",
	      g[A_PSTATE]);
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);

	memcpy(g, orig, sizeof(g));
	sys_init(&c, frame, 215 /* munmap */);
	c.nargs = 2;
	a64->prep_syscall(g, &c);
	CHECK(g[A_X8] == 215 && g[0] == c.args[0] && g[1] == c.args[1], "munmap");
	CHECK(g[2] == orig[2] && g[5] == orig[5], "unused syscall arg regs changed");

	g[A_X0] = (uint64_t)-12;
	CHECK(a64->get_syscall_ret(g) == -12, "get_syscall_ret");
	g[A_X0] = 0xffff8000ull;
	CHECK(a64->get_syscall_ret(g) == 0xffff8000ll, "get_syscall_ret address");
	end();
}

void a64_prep_restore(void)
{
	uint64_t g[GWORDS], orig[GWORDS];
	static const int touched[] = { A_SP, A_PC, A_PSTATE };
	const uint64_t frame = a64->frame_place(SP, AF_END + 16);
	int d;

	begin("aarch64.prep_restore");
	fill(g, GWORDS);
	g[A_PSTATE] = 0x80000000ull;
	memcpy(orig, g, sizeof(g));
	a64->prep_restore(g, RESTORER, frame);
	CHECK(g[A_PC] == RESTORER, "pc %#" PRIx64 ", want the restorer", g[A_PC]);
	/* arm64 rt_sigreturn reads the frame at sp itself */
	CHECK(g[A_SP] == frame, "sp %#" PRIx64 ", want the frame %#" PRIx64, g[A_SP], frame);
	CHECK(!(g[A_PSTATE] & A_BTYPE), "BTYPE set");
	d = first_diff(g, orig, GWORDS, touched, ARRAY_SIZE(touched));
	CHECK(d < 0, "word %d changed", d);
	CHECK(g[A_PSTATE] == orig[A_PSTATE], "pstate changed");
	end();
}

void a64_get_ret(void)
{
	uint64_t g[GWORDS];

	begin("aarch64.get_ret");
	fill(g, GWORDS);
	/* at the restorer's rt_sigreturn stop: the result still in x0, x8 = 139 */
	g[A_X0] = 0x1122334455667788ull;
	g[A_X8] = 139;
	CHECK(a64->get_ret(g) == 0x1122334455667788ull, "get_ret %#" PRIx64 ", want x0",
	      a64->get_ret(g));
	end();
}

/* The frame carries FP/SIMD: a thread with live SVE registers is given back by heapctl instead. */
void a64_frame_restores(void)
{
	uint8_t sve[64] = { 0 }, fp[528] = { 0 };
	struct hc_regset x[2] = { { NT_PRFPREG_, fp, sizeof(fp) }, { NT_ARM_SVE_, sve, sizeof(sve) } };
	uint64_t g[GWORDS];

	begin("aarch64.frame_restores");
	fill(g, GWORDS);
	CHECK(a64->frame_restores(g, x, 1), "FP/SIMD alone refused");
	sve[12] = 0; /* SVE_PT_REGS_FPSIMD: only the FPSIMD view, as in a syscall */
	CHECK(a64->frame_restores(g, x, 2), "an FPSIMD-only SVE regset refused");
	sve[12] = 1; /* SVE_PT_REGS_SVE: live z, p and ffr registers */
	CHECK(!a64->frame_restores(g, x, 2), "live SVE state taken");
	/* on the svc of restart_syscall: it needs the restart block the frame resets */
	g[A_X8] = 128;
	CHECK(!a64->frame_restores(g, x, 1), "restart_syscall taken");
	end();
}

void a64_no_restart(void)
{
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.no_restart");
	fill(g, GWORDS);
	g[A_X0] = (uint64_t)-512; /* -ERESTARTSYS, as if the kernel had not rewound */
	memcpy(orig, g, sizeof(g));
	a64->no_restart(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "image changed: the arm64 kernel rewinds before "
	      "the stop, nothing must be fixed up");
	end();
}

const struct wait_case a64_waits[] = {
	/* signal(7): EINTR on any stop; re-issued only when untimed */
	{ 22, { 5, 0x1000, 64, (uint64_t)-1, 0, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait(-1)" },
	{ 22, { 5, 0x1000, 64, 0xa5a50000ffffffffull, 0, 8 }, HC_WAIT_EINTR_REDO,
	  "epoll_pwait(int -1, garbage above bit 31)" },
	{ 22, { 5, 0x1000, 64, 5000, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait(5000)" },
	{ 22, { 5, 0x1000, 64, 0, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait(0)" },
	{ 441, { 5, 0x1000, 64, 0, 0, 8 }, HC_WAIT_EINTR_REDO, "epoll_pwait2(NULL)" },
	{ 441, { 5, 0x1000, 64, TS_PTR, 0, 8 }, HC_WAIT_EINTR_KEEP, "epoll_pwait2(ts)" },
	{ 193, { 3, 0x1000, 1 }, HC_WAIT_EINTR_REDO, "semop" },
	{ 192, { 3, 0x1000, 1, 0 }, HC_WAIT_EINTR_REDO, "semtimedop(NULL)" },
	{ 192, { 3, 0x1000, 1, TS_PTR }, HC_WAIT_EINTR_KEEP, "semtimedop(ts)" },
	{ 137, { 0x1000, 0, 0, 8 }, HC_WAIT_EINTR_REDO, "rt_sigtimedwait(NULL)" },
	{ 137, { 0x1000, 0, TS_PTR, 8 }, HC_WAIT_EINTR_KEEP, "rt_sigtimedwait(ts)" },
	{ 4, { 0x7000, 1, 8, 0x1000, 0 }, HC_WAIT_EINTR_REDO, "io_getevents(NULL)" },
	{ 4, { 0x7000, 1, 8, 0x1000, TS_PTR }, HC_WAIT_EINTR_KEEP, "io_getevents(ts)" },
	{ 292, { 0x7000, 1, 8, 0x1000, 0, 0 }, HC_WAIT_EINTR_REDO, "io_pgetevents(NULL)" },
	{ 292, { 0x7000, 1, 8, 0x1000, TS_PTR, 0 }, HC_WAIT_EINTR_KEEP, "io_pgetevents(ts)" },
	/* rewound before the stop: a relative timeout starts over */
	{ 101, { TS_PTR, 0 }, HC_WAIT_RESTART_FULL, "nanosleep" },
	{ 115, { 1, 0, TS_PTR, 0 }, HC_WAIT_RESTART_FULL, "clock_nanosleep(relative)" },
	{ 115, { 1, 1, TS_PTR, 0 }, HC_WAIT_UNDISTURBED, "clock_nanosleep(TIMER_ABSTIME)" },
	{ 98, { 0x1000, 0x80, 1, TS_PTR }, HC_WAIT_RESTART_FULL, "futex(FUTEX_WAIT_PRIVATE, ts)" },
	{ 98, { 0x1000, 0x180, 1, TS_PTR }, HC_WAIT_RESTART_FULL,
	  "futex(FUTEX_WAIT_PRIVATE|FUTEX_CLOCK_REALTIME, ts)" },
	{ 98, { 0x1000, 0x80, 1, 0 }, HC_WAIT_UNDISTURBED, "futex(FUTEX_WAIT_PRIVATE, NULL)" },
	{ 98, { 0x1000, 0x89, 1, TS_PTR, 0, ~0u }, HC_WAIT_UNDISTURBED,
	  "futex(FUTEX_WAIT_BITSET_PRIVATE, absolute ts)" },
	/* timeouts updated in place, or none */
	{ 73, { 0x1000, 1, TS_PTR, 0x2000, 8 }, HC_WAIT_UNDISTURBED, "ppoll(ts)" },
	{ 72, { 4, 0x1000, 0, 0, TS_PTR, 0x2000 }, HC_WAIT_UNDISTURBED, "pselect6(ts)" },
	{ 63, { 3, 0x1000, 16 }, HC_WAIT_UNDISTURBED, "read" },
	{ -1, { 0 }, HC_WAIT_UNDISTURBED, "not in a syscall" },
	{ 0, { 0 }, HC_WAIT_UNDISTURBED, NULL }, /* the end */
};

void a64_undo_stop_eintr(void)
{
	static const int64_t x0s[] = { -4 /* -EINTR */, -512, 0, 3 };
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.undo_stop_eintr");
	for (unsigned int i = 0; i < ARRAY_SIZE(x0s); i++) {
		fill(g, GWORDS);
		g[A_X0] = (uint64_t)x0s[i];
		g[A_X8] = 22; /* epoll_pwait */
		memcpy(orig, g, sizeof(g));
		/* orig_x0 is not in any regset: without /proc's view it cannot be re-issued */
		CHECK(!a64->undo_stop_eintr(g, NULL), "x0 %" PRId64 ": undone", x0s[i]);
		CHECK(!memcmp(g, orig, sizeof(g)), "x0 %" PRId64 ": image changed", x0s[i]);
	}
	{
		struct hc_presys pre = { .valid = true, .nr = 22 /* epoll_pwait */ };

		fill(g, GWORDS);
		g[A_X0] = (uint64_t)-4;
		g[A_X8] = 22;
		g[A_X0 + 3] = (uint64_t)-1; /* no timeout */
		pre.args[0] = 7; /* the epoll fd the EINTR overwrote */
		for (unsigned int i = 1; i < 6; i++)
			pre.args[i] = g[A_X0 + i];
		pre.sp = g[A_SP];
		pre.pc = g[A_PC];
		memcpy(orig, g, sizeof(g));
		CHECK(a64->undo_stop_eintr(g, &pre), "epoll_pwait EINTR with /proc's view not undone");
		CHECK(g[A_X0] == 7 && g[A_PC] == orig[A_PC] - 4, "x0/pc not rewound");
		memcpy(g, orig, sizeof(g));
		pre.sp ^= 16; /* another moment: must not match */
		CHECK(!a64->undo_stop_eintr(g, &pre), "stale /proc view accepted");
		pre.sp ^= 16;
		/* a timed wait keeps the EINTR any signal would give it */
		memcpy(g, orig, sizeof(g));
		g[A_X0 + 3] = pre.args[3] = 5000;
		memcpy(orig, g, sizeof(g));
		CHECK(!a64->undo_stop_eintr(g, &pre), "epoll_pwait(5000): EINTR undone");
		CHECK(!memcmp(g, orig, sizeof(g)), "epoll_pwait(5000): image changed");
		for (size_t i = 0; i < ARRAY_SIZE(a64_waits); i++) {
			const struct wait_case *c = &a64_waits[i];

			fill(g, GWORDS);
			g[A_X0] = (uint64_t)-4;
			g[A_X8] = (uint64_t)c->nr;
			pre.nr = c->nr;
			memcpy(pre.args, c->args, sizeof(pre.args));
			for (unsigned int k = 1; k < 6; k++)
				g[A_X0 + k] = c->args[k];
			pre.sp = g[A_SP];
			pre.pc = g[A_PC];
			CHECK(a64->undo_stop_eintr(g, &pre) == (c->want == HC_WAIT_EINTR_REDO),
			      "%s: undone is not %d", c->what, c->want == HC_WAIT_EINTR_REDO);
		}
		pre.nr = 63; /* read: restarts on its own, never EINTR from a stop */
		g[A_X8] = 63;
		CHECK(!a64->undo_stop_eintr(g, &pre), "read undone");
	}
	end();
}

void a64_restart_probe(void)
{
	struct hc_presys pre = { .valid = true, .nr = 101 /* nanosleep */ };
	uint64_t g[GWORDS], e[GWORDS], orig[GWORDS];

	begin("aarch64.restart_probe");
	CHECK(!x86->restart_probe && !x86->restart_probed, "x86_64 needs no probe");
	/* rewound by do_signal(): pc on the svc, x0 = orig_x0, x8 = nanosleep */
	fill(g, GWORDS);
	g[A_X8] = 101;
	g[A_PC] = 0x0000ffff80001004ull;
	pre.args[0] = g[A_X0] = 0x0000ffffc0000100ull; /* req */
	pre.args[1] = g[A_X0 + 1] = 0;                 /* rem */
	for (unsigned int i = 2; i < 6; i++)
		pre.args[i] = g[A_X0 + i];
	pre.sp = g[A_SP];
	pre.pc = g[A_PC] + 4; /* /proc shows the pc after the svc */
	CHECK(a64->restart_probe(g, &pre), "rewound nanosleep not probed");
	CHECK(!a64->restart_probe(g, NULL), "probed without /proc's view");
	pre.pc += 4;
	CHECK(!a64->restart_probe(g, &pre), "probed at another pc");
	pre.pc -= 4;
	g[A_X0] = (uint64_t)-4;
	CHECK(!a64->restart_probe(g, &pre), "probed with x0 not the argument");
	g[A_X0] = pre.args[0];
	pre.nr = 22; /* epoll_pwait: its EINTR is handled elsewhere */
	g[A_X8] = 22;
	CHECK(!a64->restart_probe(g, &pre), "epoll_pwait probed");
	pre.nr = 98; /* futex */
	g[A_X8] = 98;
	pre.args[1] = g[A_X0 + 1] = 0x80; /* FUTEX_WAIT_PRIVATE */
	pre.args[3] = g[A_X0 + 3] = 0x0000ffffc0000200ull;
	CHECK(a64->restart_probe(g, &pre), "timed FUTEX_WAIT not probed");
	pre.args[3] = g[A_X0 + 3] = 0;
	CHECK(!a64->restart_probe(g, &pre), "untimed FUTEX_WAIT probed");

	/* the kernel's answer at the svc's entry stop: restart_syscall */
	fill(g, GWORDS);
	g[A_X8] = 101;
	g[A_PC] = 0x0000ffff80001004ull;
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	e[A_X8] = 128;
	memcpy(orig, g, sizeof(g));
	CHECK(a64->restart_probed(g, e), "restart_syscall entry refused");
	CHECK(g[A_X8] == 128, "saved x8 %" PRIu64 ", want restart_syscall", g[A_X8]);
	g[A_X8] = orig[A_X8];
	CHECK(!memcmp(g, orig, sizeof(g)), "saved state changed beyond x8");
	/* ... or the syscall itself: it was about to start, nothing to change */
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	CHECK(a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)),
	      "the syscall's own entry changed the saved state");
	/* any other svc */
	memcpy(e, g, sizeof(e));
	e[A_PC] += 8;
	e[A_X8] = 128;
	CHECK(!a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)), "another svc accepted");
	memcpy(e, g, sizeof(e));
	e[A_PC] += 4;
	e[A_X8] = 63;
	CHECK(!a64->restart_probed(g, e) && !memcmp(g, orig, sizeof(g)), "another syscall accepted");
	end();
}

void a64_skip_restart(void)
{
	uint64_t g[GWORDS], orig[GWORDS];

	begin("aarch64.skip_syscall.restart_now");
	fill(g, GWORDS);
	g[A_X8] = 139;
	g[A_X0] = (uint64_t)-38;
	memcpy(orig, g, sizeof(g));
	/* skipping goes through NT_ARM_SYSTEM_CALL; gregs have nothing for it */
	a64->skip_syscall(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "skip_syscall changed the image");
	/* arm64 rewound before the stop: x0 = orig_x0, pc on the svc, x8 the syscall itself */
	g[A_X0] = (uint64_t)-516;
	memcpy(orig, g, sizeof(g));
	a64->restart_now(g);
	CHECK(!memcmp(g, orig, sizeof(g)), "restart_now changed the image");
	end();
}

struct a64_state {
	uint64_t g[GWORDS];
	uint8_t fp[FP_LEN];
	uint8_t sve[16 + FP_LEN]; /* NT_ARM_SVE in FPSIMD mode: header + user_fpsimd_state */
	struct hc_regset rs[2];
	struct hc_sigframe f;
};

static void a64_state_init(struct a64_state *s)
{
	fill(s->g, GWORDS);
	s->g[A_PSTATE] = 0x60001000ull;
	for (size_t i = 0; i < sizeof(s->fp); i++)
		s->fp[i] = (uint8_t)(i * 13 + 1);
	wr32(s->fp + FP_FPSR, 0x0800009f);
	wr32(s->fp + FP_FPCR, 0x03c00000);
	memset(s->sve, 0x5e, sizeof(s->sve));
	/* in call.c's order; the frame must come from NT_PRFPREG, not the last big regset */
	s->rs[0].nt = NT_PRFPREG_;
	s->rs[0].buf = s->fp;
	s->rs[0].len = sizeof(s->fp);
	s->rs[1].nt = NT_ARM_SVE_;
	s->rs[1].buf = s->sve;
	s->rs[1].len = sizeof(s->sve);
	memset(&s->f, 0, sizeof(s->f));
	s->f.gregs = s->g;
	s->f.extra = s->rs;
	s->f.nextra = 2;
	s->f.mask = MASK;
}

static size_t a64_state_place(struct a64_state *s, uint64_t sp)
{
	size_t len;

	s->f.raddr = 0;
	len = a64->sigframe_len(&s->f);
	s->f.raddr = a64->frame_place(sp, len);
	return len;
}

void a64_sigframe_layout(void)
{
	static struct a64_state s;
	uint64_t gcopy[GWORDS];
	struct hc_err err = { 0 };
	const uint8_t *rec, *term;
	size_t len;
	uint8_t *out;

	begin("aarch64.sigframe.layout");
	a64_state_init(&s);
	/* arm64 rewound an interrupted syscall before the stop: copied as it is */
	s.g[A_X0] = (uint64_t)-4;
	len = a64_state_place(&s, SP + 0x28);
	memcpy(gcopy, s.g, sizeof(gcopy));
	out = frame_buf(len);
	CHECK(len >= AF_END && len < AF_END + 4096, "sigframe_len %zu", len);
	CHECK(s.f.raddr % 16 == 0, "frame %#" PRIx64 " not 16-byte aligned", s.f.raddr);
	CHECK(a64->sigframe_build(&s.f, out, len, &err) == 0, "sigframe_build failed: %s",
	      err.msg);
	CHECK(err.code == HC_OK, "err set on success");
	CHECK(all_byte(out + len, CANARY, POISON), "wrote past outlen");
	CHECK(!memcmp(s.g, gcopy, sizeof(gcopy)), "gregs changed");

	CHECK(all_zero(out, AF_UC), "siginfo not zero");
	CHECK(rd64(out + AF_UC_FLAGS) == 0 && rd64(out + AF_UC_LINK) == 0, "uc_flags/uc_link");
	CHECK(rd32s(out + AF_SS_FLAGS) == 3, "uc_stack.ss_flags %d, want 3 (invalid)",
	      rd32s(out + AF_SS_FLAGS));
	CHECK(rd64(out + AF_SS_SP) == 0 && rd64(out + AF_SS_SIZE) == 0, "uc_stack sp/size set");
	CHECK(rd64(out + AF_MASK) == MASK, "uc_sigmask %#" PRIx64 ", want %#" PRIx64,
	      rd64(out + AF_MASK), (uint64_t)MASK);
	CHECK(rd64(out + a64->sigframe_mask_off) == MASK, "mask not at sigframe_mask_off");
	CHECK(all_zero(out + AF_MASK + 8, AF_MCONTEXT - AF_MASK - 8),
	      "glibc's sigset tail not zero");
	CHECK(rd64(out + AF_MCONTEXT) == 0, "fault_address %#" PRIx64, rd64(out + AF_MCONTEXT));
	for (unsigned int i = 0; i < A_NWORDS; i++)
		CHECK(rd64(out + AF_REGS + 8 * i) == s.g[i],
		      "sigcontext word %u (x0..x30, sp, pc, pstate) %#" PRIx64 ", want %#" PRIx64,
		      i, rd64(out + AF_REGS + 8 * i), s.g[i]);
	CHECK(all_zero(out + AF_REGS + 8 * A_NWORDS, AF_RESERVED - AF_REGS - 8 * A_NWORDS),
	      "padding before __reserved not zero");

	rec = out + AF_RESERVED;
	CHECK(AF_RESERVED % 16 == 0, "__reserved not 16-byte aligned");
	CHECK(rd32(rec) == FPS_MAGIC, "first record magic %#x, want FPSIMD_MAGIC", rd32(rec));
	CHECK(rd32(rec + 4) == FPS_SIZE, "fpsimd_context size %u, want 528", rd32(rec + 4));
	CHECK(rd32(rec + FPS_FPSR) == 0x0800009f, "fpsr %#x", rd32(rec + FPS_FPSR));
	CHECK(rd32(rec + FPS_FPCR) == 0x03c00000, "fpcr %#x", rd32(rec + FPS_FPCR));
	CHECK(!memcmp(rec + FPS_VREGS, s.fp, 32 * 16), "v0..v31 not copied from NT_PRFPREG");
	term = rec + FPS_SIZE;
	CHECK(rd32(term) == 0 && rd32(term + 4) == 0, "no terminator record after fpsimd_context");
	CHECK(all_zero(term, out + AF_END - term), "__reserved after the records not zero");
	free(out);
	end();
}

void a64_sigframe_errors(void)
{
	static struct a64_state s;
	struct hc_err err = { 0 };
	size_t len;
	uint8_t *out;

	begin("aarch64.sigframe.errors");
	a64_state_init(&s);
	len = a64_state_place(&s, SP);
	out = frame_buf(len);

	CHECK(a64->sigframe_build(&s.f, out, AF_END, &err) == 0, "exact size %d refused: %s",
	      AF_END, err.msg);
	CHECK(all_byte(out + AF_END, len + CANARY - AF_END, POISON), "wrote past %d bytes",
	      AF_END);

	memset(out, POISON, len + CANARY);
	CHECK(a64->sigframe_build(&s.f, out, AF_END - 1, &err) == -1, "%d bytes accepted",
	      AF_END - 1);
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded for a short buffer");
	CHECK(all_byte(out, len + CANARY, POISON), "short buffer written to");

	/* no NT_PRFPREG: the frame would have no fpsimd_context, which is mandatory */
	s.f.extra = &s.rs[1]; /* NT_ARM_SVE only */
	s.f.nextra = 1;
	memset(&err, 0, sizeof(err));
	CHECK(a64->sigframe_build(&s.f, out, len, &err) == -1, "NT_ARM_SVE alone accepted");
	CHECK(err.code != HC_OK && err.msg[0], "no error recorded without NT_PRFPREG");
	s.f.nextra = 0;
	CHECK(a64->sigframe_build(&s.f, out, len, NULL) == -1, "no regsets accepted");
	s.f.extra = s.rs;
	s.f.nextra = 2;
	s.rs[0].len = FP_LEN - 16;
	CHECK(a64->sigframe_build(&s.f, out, len, NULL) == -1, "short NT_PRFPREG accepted");
	CHECK(all_byte(out, len + CANARY, POISON), "buffer written to on failure");
	free(out);
	end();
}

void a64_call_fpstate(void)
{
	uint8_t fp[FP_LEN + 16], orig[FP_LEN + 16];

	begin("aarch64.call_fpstate");
	for (size_t i = 0; i < sizeof(fp); i++)
		fp[i] = (uint8_t)(i * 13 + 1);
	/* FPCR: FZ (24), DN (25), RMode = towards zero (23:22), IOE (8) */
	memcpy(fp + FP_FPCR, &(uint32_t){ 0x03c00100 }, 4);
	memcpy(fp + FP_FPSR, &(uint32_t){ 0x0800009f }, 4);
	memcpy(orig, fp, sizeof(fp));

	CHECK(a64->call_fpstate(NT_PRFPREG_, fp, FP_LEN), "NT_PRFPREG not handled");
	CHECK(rd32(fp + FP_FPCR) == 0, "fpcr %#x, want 0", rd32(fp + FP_FPCR));
	CHECK(rd32(fp + FP_FPSR) == 0, "fpsr %#x, want 0", rd32(fp + FP_FPSR));
	CHECK(!memcmp(fp, orig, FP_FPSR), "vregs changed");
	CHECK(!memcmp(fp + FP_FPCR + 4, orig + FP_FPCR + 4, sizeof(fp) - FP_FPCR - 4),
	      "bytes after fpcr changed");

	memcpy(fp, orig, sizeof(fp));
	CHECK(!a64->call_fpstate(NT_X86_XSTATE_, fp, FP_LEN), "NT_X86_XSTATE accepted");
	CHECK(!a64->call_fpstate(NT_ARM_SVE_, fp, FP_LEN), "NT_ARM_SVE accepted");
	CHECK(!a64->call_fpstate(NT_PRFPREG_, fp, FP_LEN - 8), "short NT_PRFPREG buffer accepted");
	CHECK(!memcmp(fp, orig, sizeof(fp)), "buffer changed when refused");
	end();
}

void a64_dump_regs(void)
{
	uint64_t g[GWORDS];
	char buf[2048], want[32];
	int n;

	begin("aarch64.dump_regs");
	fill(g, GWORDS);
	g[A_PC] = 0x0000aaaa12345678ull;
	g[A_LR] = 0x0000aaaa87654321ull;
	n = a64->dump_regs(g, buf, sizeof(buf));
	CHECK(n > 0 && (size_t)n == strlen(buf), "returned %d for %zu chars", n, strlen(buf));
	snprintf(want, sizeof(want), "%016" PRIx64, g[A_PC]);
	CHECK(strstr(buf, "pc") && strstr(buf, want), "pc not in dump");
	snprintf(want, sizeof(want), "x30 %016" PRIx64, g[A_LR]);
	CHECK(strstr(buf, want), "'%s' not in dump", want);
	CHECK(strstr(buf, "x0 ") && strstr(buf, "sp ") && strstr(buf, "pstate"),
	      "x0/sp/pstate missing");

	n = dump_truncated(a64, g);
	CHECK(n == (int)strlen(buf), "truncated call returned %d, full length is %zu", n,
	      strlen(buf));
	end();
}

/* The arm64 offsets against the host's uapi headers, on an arm64 host. */
void a64_sigframe_uapi(void)
{
#if defined(__aarch64__)
	struct k_rt_sigframe { /* arch/arm64/kernel/signal.c */
		siginfo_t info;
		struct ucontext uc; /* <asm/ucontext.h>: the kernel's */
	};

	begin("aarch64.sigframe.uapi");
	CHECK(offsetof(struct k_rt_sigframe, uc) == AF_UC, "uc");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_flags) == AF_UC_FLAGS, "uc_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_link) == AF_UC_LINK, "uc_link");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_sp) == AF_SS_SP, "ss_sp");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_flags) == AF_SS_FLAGS, "ss_flags");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_stack.ss_size) == AF_SS_SIZE, "ss_size");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_sigmask) == AF_MASK, "uc_sigmask");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext) == AF_MCONTEXT, "uc_mcontext");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.regs) == AF_REGS, "regs");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.sp) == AF_REGS + 31 * 8, "sp");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.pc) == AF_REGS + 32 * 8, "pc");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.pstate) == AF_REGS + 33 * 8, "pstate");
	CHECK(offsetof(struct k_rt_sigframe, uc.uc_mcontext.__reserved) == AF_RESERVED,
	      "__reserved");
	CHECK(sizeof(struct k_rt_sigframe) == AF_END, "sizeof(rt_sigframe) %zu",
	      sizeof(struct k_rt_sigframe));
	CHECK(FPSIMD_MAGIC == FPS_MAGIC && sizeof(struct fpsimd_context) == FPS_SIZE,
	      "fpsimd_context");
	CHECK(offsetof(struct fpsimd_context, fpsr) == FPS_FPSR &&
		      offsetof(struct fpsimd_context, fpcr) == FPS_FPCR &&
		      offsetof(struct fpsimd_context, vregs) == FPS_VREGS,
	      "fpsimd_context fields");
	CHECK(sizeof(struct _aarch64_ctx) == 8, "struct _aarch64_ctx");
	end();
#else
	printf("SKIP aarch64.sigframe.uapi: the host's headers are not arm64's\n");
#endif
}
