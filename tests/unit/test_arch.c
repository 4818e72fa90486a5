// SPDX-License-Identifier: MIT
/*
 * Unit test for both arch backends, whatever the host: the contract of
 * arch/arch.h checked on fabricated NT_PRSTATUS and FP images.  No ptrace.
 *
 * The register images are indexed by word here, independently of the
 * backends' mirror structs, so a layout slip in a backend shows up.  The
 * signal frames are read by byte offset, with the offsets written out here
 * and checked against the host's uapi headers when the host matches.
 * Prints "PASS group" or "FAIL group: detail" per check group; exits 1 if
 * any group failed.  This file holds what both backends are asked alike;
 * arch/x86.c and arch/a64.c each backend's own checks.
 */
#include "arch/test_arch.h"

/* ---- checks alike on both backends: one table, one loop ---- */

/* What each backend must say where both are asked the same. */
struct arch_want {
	const struct hc_arch *a;
	const char *name;
	unsigned int e_machine, nwords, max_args;
	long nr_rt_sigreturn, nr_getpid;
	bool host;			/* the host's backend: <sys/syscall.h> has its numbers */
	size_t mask_off;		/* of the signal mask in the rt_sigframe */
	struct hc_bytes sysc, sysret;	/* the syscall instruction, and "syscall; ret" */
	const char *sysc_name;
	struct hc_bytes restorer;	/* a restorer found in the wild, which the list holds */
	const char *restorer_name;
	void (*table_own)(void);	/* the rest of the backend's table checks */

	int pc, sp, ret;		/* words of pc, sp and a syscall's result */
	int argreg[HC_ARCH_MAX_ARGS];	/* a call's argument registers, nargreg of them */
	unsigned int nargreg;		/* the rest of max_args go on the stack */
	int nr_word;			/* the syscall number's word, -1: not in NT_PRSTATUS */

	int frame_mod;			/* frame_place(): frame % 16 */
	uint64_t frame_gap;		/* bytes it keeps free below sp */
	uint64_t frame_slack;		/* and it wastes fewer than these below them */
	const size_t *lens;		/* sigframe lengths to place */
	size_t nlens;

	size_t call_len;		/* the sigframe length a call's frame is placed for */
	unsigned int too_many[2];	/* argument counts prep_call() must refuse */

	const struct wait_case *waits; /* up to one whose what is NULL */
};

#if defined(__x86_64__)
#define HOST_X86 true
#else
#define HOST_X86 false
#endif
#if defined(__aarch64__)
#define HOST_A64 true
#else
#define HOST_A64 false
#endif

#define BYTES(a) { (a), sizeof(a) }

static const size_t x86_lens[] = { 0, 1, 8, 440, 3220, 3221, 3227, 5000 };
static const size_t a64_lens[] = { 0, 1, 8, AF_END, AF_END + 16, 5000 };

static const struct arch_want wants[] = {
	{
		.a = &hc_arch_x86_64, .name = "x86_64", .e_machine = EM_X86_64,
		.nwords = X_NWORDS, .max_args = 8, .nargreg = 6,
		.nr_rt_sigreturn = 15, .nr_getpid = 39, .host = HOST_X86,
		.mask_off = XF_MASK,
		.sysc = BYTES(x86_sysc), .sysret = BYTES(x86_sysret), .sysc_name = "syscall",
		.restorer = BYTES(x86_restore_rt), .restorer_name = "glibc's __restore_rt",
		.table_own = x86_table_own,
		.pc = X_RIP, .sp = X_RSP, .ret = X_RAX,
		.argreg = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_R9 },
		.nr_word = X_ORIG_RAX,
		/* what a callee sees right after "call", below the 128-byte red zone */
		.frame_mod = 8, .frame_gap = 128, .frame_slack = 32,
		.lens = x86_lens, .nlens = ARRAY_SIZE(x86_lens),
		.call_len = 3300, .too_many = { 9, 9 },
		.waits = x86_waits,
	},
	{
		.a = &hc_arch_aarch64, .name = "aarch64", .e_machine = 183 /* EM_AARCH64 */,
		.nwords = A_NWORDS, .max_args = 8, .nargreg = 8,
		/* include/uapi/asm-generic/unistd.h */
		.nr_rt_sigreturn = 139, .nr_getpid = 172, .host = HOST_A64,
		.mask_off = AF_MASK,
		.sysc = BYTES(a64_sysc), .sysret = BYTES(a64_sysret), .sysc_name = "svc",
		.restorer = BYTES(a64_vdso_rt),
		.restorer_name = "the vDSO's __kernel_rt_sigreturn",
		.table_own = a64_table_own,
		.pc = A_PC, .sp = A_SP, .ret = A_X0,
		.argreg = { 0, 1, 2, 3, 4, 5, 6, 7 },
		/* the syscall number is not in NT_PRSTATUS on arm64 */
		.nr_word = -1,
		/* rt_sigreturn rejects a frame (sp) that is not 16-byte aligned */
		.frame_mod = 0, .frame_gap = 256, .frame_slack = 16,
		.lens = a64_lens, .nlens = ARRAY_SIZE(a64_lens),
		.call_len = AF_END + 16, .too_many = { 9, 9 },
		.waits = a64_waits,
	},
};

static void arch_table(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	unsigned int nrest = 0;
	char name[64];

	snprintf(name, sizeof(name), "%s.table", w->name);
	begin(name);
	CHECK(a->name && !strcmp(a->name, w->name), "name %s", a->name);
	CHECK(a->e_machine == w->e_machine, "e_machine %u", a->e_machine);
	CHECK(a->gregs_len == w->nwords * 8, "gregs_len %zu", a->gregs_len);
	CHECK(a->max_args == w->max_args, "max_args %u", a->max_args);
	CHECK(a->max_args <= HC_ARCH_MAX_ARGS, "max_args above HC_ARCH_MAX_ARGS");
	CHECK(a->nr_rt_sigreturn == w->nr_rt_sigreturn && a->nr_getpid == w->nr_getpid,
	      "syscall numbers %ld %ld", a->nr_rt_sigreturn, a->nr_getpid);
	if (w->host)
		CHECK(a->nr_rt_sigreturn == SYS_rt_sigreturn && a->nr_getpid == SYS_getpid &&
			      a->nr_restart_syscall == SYS_restart_syscall,
		      "syscall numbers differ from <sys/syscall.h>");
	CHECK(a->sigframe_mask_off == w->mask_off, "sigframe_mask_off %zu, want %zu",
	      a->sigframe_mask_off, w->mask_off);

	CHECK(bytes_eq(&a->syscall_insn, w->sysc.b, w->sysc.len), "syscall_insn bytes");
	CHECK(bytes_eq(&a->syscall_ret, w->sysret.b, w->sysret.len), "syscall_ret bytes");
	w->table_own();

	CHECK(a->restorers != NULL, "no restorer list");
	for (; a->restorers && nrest < 16 && a->restorers[nrest].len; nrest++)
		CHECK(ends_with(&a->restorers[nrest], &a->syscall_insn),
		      "restorer %u does not end with %s", nrest, w->sysc_name);
	CHECK(nrest >= 1 && nrest < 16, "%u restorers, or the list is not terminated", nrest);
	CHECK(has_restorer(a->restorers, w->restorer.b, w->restorer.len),
	      "%s is not in the list", w->restorer_name);

	CHECK(a->get_pc && a->get_sp && a->get_arg && a->sigframe_len && a->frame_place &&
		      a->sigframe_build && a->prep_call && a->prep_syscall && a->prep_restore &&
		      a->skip_syscall && a->restart_now && a->get_syscall_ret && a->frame_restores &&
		      a->no_restart && a->undo_stop_eintr && a->wait_kind && a->syscall_nr &&
		      a->call_fpstate && a->dump_regs,
	      "missing hook");
	end();
}

static void arch_accessors(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	uint64_t g[GWORDS];
	char name[64];

	snprintf(name, sizeof(name), "%s.accessors", w->name);
	begin(name);
	fill(g, GWORDS);
	CHECK(a->get_pc(g) == g[w->pc], "get_pc");
	CHECK(a->get_sp(g) == g[w->sp], "get_sp");
	for (unsigned int i = 0; i < w->nargreg; i++)
		CHECK(a->get_arg(g, i) == g[w->argreg[i]], "get_arg(%u)", i);
	CHECK(a->get_arg(g, w->nargreg) == 0, "get_arg(%u) should be 0", w->nargreg);
	g[w->ret] = (uint64_t)-4; /* -EINTR */
	CHECK(a->get_syscall_ret(g) == -4, "get_syscall_ret %" PRId64, a->get_syscall_ret(g));
	if (w->nr_word >= 0) {
		g[w->nr_word] = 0; /* read */
		CHECK(a->syscall_nr(g) == 0, "syscall_nr %ld", a->syscall_nr(g));
	} else {
		CHECK(a->syscall_nr(g) == -1, "syscall_nr %ld, want -1", a->syscall_nr(g));
	}
	end();
}

static void arch_frame_place(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	char name[64];

	snprintf(name, sizeof(name), "%s.frame_place", w->name);
	begin(name);
	for (uint64_t off = 0; off < 64; off++) {
		for (unsigned int i = 0; i < w->nlens; i++) {
			size_t len = w->lens[i];
			uint64_t sp = SP + off, fr = a->frame_place(sp, len);

			CHECK(fr % 16 == (uint64_t)w->frame_mod,
			      "frame %% 16 == %" PRIu64 " (sp %#" PRIx64 ", len %zu)", fr % 16, sp,
			      len);
			CHECK(fr + len <= sp - w->frame_gap,
			      "frame %#" PRIx64 " + %zu less than %" PRIu64
			      " bytes below sp %#" PRIx64,
			      fr, len, w->frame_gap, sp);
			CHECK(sp - w->frame_gap - (fr + len) < w->frame_slack,
			      "%" PRIu64 " bytes wasted below the %" PRIu64 " kept free",
			      sp - w->frame_gap - (fr + len), w->frame_gap);
		}
	}
	end();
}

static void arch_prep_call_too_many(const struct arch_want *w)
{
	const struct hc_arch *a = w->a;
	uint64_t g[GWORDS], orig[GWORDS];
	struct hc_err err = { 0 };
	struct hc_call c;
	char name[64];

	snprintf(name, sizeof(name), "%s.prep_call.too_many_args", w->name);
	begin(name);
	fill(g, GWORDS);
	memcpy(orig, g, sizeof(g));
	call_init(&c, a->frame_place(SP, w->call_len), w->too_many[0]);
	CHECK(a->prep_call(g, &c, &err) == -1, "%u args accepted", w->too_many[0]);
	CHECK(err.code == HC_E_ARGS, "code %s, want HC_E_ARGS", hc_err_name(err.code));
	CHECK(err.msg[0], "empty message");
	CHECK(!strcmp(err.hint, hc_err_default_hint(HC_E_ARGS)), "hint '%s'", err.hint);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");
	CHECK(c.slot_addr == 0xdead && c.slot_val == 0xbeef, "slot written on failure");

	/* the first error wins */
	memset(&err, 0, sizeof(err));
	err.code = HC_E_PERM;
	snprintf(err.msg, sizeof(err.msg), "earlier");
	call_init(&c, a->frame_place(SP, w->call_len), w->too_many[1]);
	CHECK(a->prep_call(g, &c, &err) == -1, "%u args accepted", w->too_many[1]);
	CHECK(err.code == HC_E_PERM && !strcmp(err.msg, "earlier"), "earlier error overwritten");

	/* a NULL err is allowed by err_set() */
	CHECK(a->prep_call(g, &c, NULL) == -1, "%u args accepted with err == NULL",
	      w->too_many[1]);
	CHECK(!memcmp(g, orig, sizeof(g)), "gregs changed on failure");
	end();
}

static void arch_wait_kind(const struct arch_want *w)
{
	static const char *const kn[] = { "undisturbed", "EINTR, re-issued", "EINTR, kept",
					  "full restart" };
	char name[64];

	snprintf(name, sizeof(name), "%s.wait_kind", w->name);
	begin(name);
	for (const struct wait_case *c = w->waits; c->what; c++) {
		enum hc_wait got = w->a->wait_kind(c->nr, c->args);

		CHECK(got == c->want, "%s (%ld): %s, want %s", c->what, c->nr, kn[got],
		      kn[c->want]);
	}
	end();
}

/*
 * Threads inside a syscall that swaps in a temporary signal mask (ppoll &
 * co) give their real mask only at a later syscall stop: both backends
 * tell them from the number of the syscall they were in (orig_rax; x8).
 */
static void swaps_mask(void)
{
	static const struct {
		long nr;
		int want;
	} x86c[] = { { 271, 1 }, { 270, 1 }, { 130, 1 }, { 281, 1 }, { 441, 1 }, { 0, 0 },
		     { 232, 0 }, { -1, 0 } },
	  a64c[] = { { 73, 1 }, { 72, 1 }, { 133, 1 }, { 22, 1 }, { 441, 1 }, { 63, 0 },
		     { 98, 0 } };
	uint64_t g[GWORDS];

	begin("arch.swaps_mask");
	for (size_t i = 0; i < ARRAY_SIZE(x86c); i++) {
		fill(g, GWORDS);
		g[X_ORIG_RAX] = (uint64_t)x86c[i].nr;
		CHECK(x86->swaps_mask(g) == x86c[i].want, "x86_64 syscall %ld: %d", x86c[i].nr,
		      x86->swaps_mask(g));
	}
	for (size_t i = 0; i < ARRAY_SIZE(a64c); i++) {
		fill(g, GWORDS);
		g[A_X8] = (uint64_t)a64c[i].nr;
		CHECK(a64->swaps_mask(g) == a64c[i].want, "aarch64 x8 %ld: %d", a64c[i].nr,
		      a64->swaps_mask(g));
	}
	end();
}

static void host(void)
{
	begin("arch.host");
#if defined(__x86_64__)
	CHECK(hc_arch_host() == &hc_arch_x86_64, "host backend is %s", hc_arch_host()->name);
#elif defined(__aarch64__)
	CHECK(hc_arch_host() == &hc_arch_aarch64, "host backend is %s", hc_arch_host()->name);
#else
	CHECK(hc_arch_host() != NULL, "no host backend");
#endif
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (size_t i = 0; i < ARRAY_SIZE(wants); i++) {
		arch_table(&wants[i]);
		arch_accessors(&wants[i]);
		arch_frame_place(&wants[i]);
		arch_prep_call_too_many(&wants[i]);
		arch_wait_kind(&wants[i]);
	}

	x86_prep_call_args();
	x86_prep_call_stack();
	x86_prep_call_stack_args();
	a64_prep_call_x7();
	x86_prep_syscall();
	x86_prep_restore();
	x86_ret_gadget();
	x86_frame_restores();
	x86_no_restart();
	x86_undo_stop_eintr();
	x86_sigframe_uapi();
	x86_sigframe_layout();
	x86_sigframe_xstate();
	x86_sigframe_restart();
	x86_skip_syscall();
	x86_restart_now();
	x86_restart_here();
	x86_sigframe_errors();
	x86_call_fpstate();
	x86_dump_regs();

	a64_prep_call_args();
	a64_prep_call_stack();
	a64_frame_restores();
	a64_prep_call_btype();
	a64_prep_syscall();
	a64_prep_restore();
	a64_get_ret();
	a64_no_restart();
	a64_undo_stop_eintr();
	a64_restart_probe();
	a64_skip_restart();
	a64_sigframe_uapi();
	a64_sigframe_layout();
	a64_sigframe_errors();
	a64_call_fpstate();
	a64_dump_regs();

	swaps_mask();
	host();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
