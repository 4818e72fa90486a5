// SPDX-License-Identifier: MIT
/*
 * Seccomp filters decide per syscall; a filter that kills on mmap would kill
 * the target the moment heapctl asks it to map its page.  So before the
 * first remote syscall heapctl reads the thread's filters
 * (PTRACE_SECCOMP_GET_FILTER, root only) and runs them here on exactly the
 * syscalls it is about to make.  The interpreter follows the kernel's
 * classic BPF semantics (net/core/filter.c, seccomp_check_filter()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "ptrace.h"
#include "seccomp.h"
#include "engine.h"
#include "image.h"

#define MAX_PROG 4096 /* BPF_MAXINSNS */

/*
 * The program is read back from the target, so it is untrusted input even
 * though the kernel validated it once: every offset, scratch index, jump
 * and divisor is checked here, with comparisons that cannot wrap, and
 * anything the kernel would refuse makes the result -1 ("cannot tell").
 * Jumps only go forward, so the loop ends.
 */

int seccomp_eval(const struct sock_filter *prog, size_t n, const struct seccomp_data *d,
		 uint32_t *action)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };

	if (!n || n > MAX_PROG)
		return -1;
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			switch (BPF_MODE(f->code)) {
			case BPF_ABS:
				/*
				 * Only aligned 32-bit words of struct seccomp_data.  The
				 * kernel refuses other offsets when the filter is loaded,
				 * but what is checked here is a copy read back from the
				 * target: test k without arithmetic that can wrap
				 * (k + 4 does, for k >= 0xfffffffc).
				 */
				if (BPF_SIZE(f->code) != BPF_W || k % 4 || k > sizeof(*d) - 4)
					return -1;
				memcpy(&a, (const uint8_t *)d + k, 4);
				break;
			case BPF_LEN:
				a = sizeof(*d);
				break;
			case BPF_IMM:
				a = k;
				break;
			case BPF_MEM:
				if (k >= BPF_MEMWORDS)
					return -1;
				a = mem[k];
				break;
			default:
				return -1;
			}
			break;
		case BPF_LDX:
			switch (BPF_MODE(f->code)) {
			case BPF_LEN:
				x = sizeof(*d);
				break;
			case BPF_IMM:
				x = k;
				break;
			case BPF_MEM:
				if (k >= BPF_MEMWORDS)
					return -1;
				x = mem[k];
				break;
			default:
				return -1;
			}
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -1;
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV:
				if (!src)
					return -1;
				a /= src;
				break;
			case BPF_MOD:
				if (!src)
					return -1;
				a %= src;
				break;
			case BPF_OR: a |= src; break;
			case BPF_AND: a &= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default:
				return -1;
			}
			break;
		case BPF_JMP: {
			bool taken;
			size_t to;

			if (BPF_OP(f->code) == BPF_JA) {
				if (k >= n - pc - 1)
					return -1;
				pc += k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: taken = a == src; break;
			case BPF_JGT: taken = a > src; break;
			case BPF_JGE: taken = a >= src; break;
			case BPF_JSET: taken = (a & src) != 0; break;
			default:
				return -1;
			}
			to = taken ? f->jt : f->jf;
			if (to >= n - pc - 1)
				return -1;
			pc += to;
			break;
		}
		case BPF_RET:
			/* RET K and RET A only, as seccomp_check_filter() allows */
			if (BPF_RVAL(f->code) != BPF_K && BPF_RVAL(f->code) != BPF_A)
				return -1;
			*action = BPF_RVAL(f->code) == BPF_A ? a : k;
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else if (BPF_MISCOP(f->code) == BPF_TXA)
				a = x;
			else
				return -1;
			break;
		default:
			return -1;
		}
	}
	return -1; /* fell off the end: the kernel rejects such programs */
}

uint32_t seccomp_stricter(uint32_t a, uint32_t b)
{
	return (int32_t)(a & SECCOMP_RET_ACTION_FULL) < (int32_t)(b & SECCOMP_RET_ACTION_FULL) ? a : b;
}

static const char *action_name(uint32_t act)
{
	switch (act & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "kill the process";
	case SECCOMP_RET_KILL_THREAD: return "kill the thread";
	case SECCOMP_RET_TRAP: return "raise SIGSYS";
	case SECCOMP_RET_ERRNO: return "fail with an errno";
	case SECCOMP_RET_USER_NOTIF: return "wait for a supervisor";
	case SECCOMP_RET_TRACE: return "stop for a tracer";
	case SECCOMP_RET_LOG: return "log";
	default: return "allow";
	}
}

int seccomp_check(struct engine *t, pid_t tid, struct hc_err *err)
{
	/* heapctl's own syscalls, with the arguments it passes */
	const struct {
		const char *name;
		long nr;
		uint64_t args[6];
		bool errno_ok; /* failing with an errno harms nothing */
	} calls[] = {
		/* every borrow ends in it, or can: it must run */
		{ "rt_sigreturn", t->img->arch->nr_rt_sigreturn, { 0 }, false },
		/* callbacks stop at it; its result goes nowhere */
		{ "getpid", t->img->arch->nr_getpid, { 0 }, true },
		/*
		 * A syscall heapctl skips (the restorer's rt_sigreturn between
		 * calls, an interrupted sleep's restart) has its number set to
		 * -1 at the entry stop, and seccomp runs after that stop on -1
		 * like on any number (syscall_trace_enter(), kernel/entry/common.c):
		 * an allowlist filter, systemd's SystemCallFilter= for one,
		 * kills for it.  An errno it returns lands in the return register,
		 * which heapctl then writes again at the syscall's exit stop.
		 */
		{ "a skipped syscall (number -1)", -1, { 0 }, true },
	};
	uint32_t verdict[sizeof(calls) / sizeof(calls[0])];
	struct sock_filter *prog = malloc(MAX_PROG * sizeof(*prog));
	unsigned int nfilters = 0;
	int ret = 0;

	if (!prog)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
		verdict[c] = SECCOMP_RET_ALLOW;
	for (unsigned long idx = 0;; idx++) {
		struct hc_err e = { 0 };
		long n = ptrace_seccomp_filter(tid, idx, prog, MAX_PROG, &e);

		if (n < 0 && e.sys_errno == ENOENT)
			break; /* past the last filter */
		if (n < 0) {
			ret = err_sethint(err, HC_E_UNSUPPORTED, e.sys_errno,
					  "run heapctl as root: reading a seccomp filter needs CAP_SYS_ADMIN",
					  "pid %d runs under a seccomp filter heapctl cannot read (%s)",
					  t->img->pid, strerror(e.sys_errno));
			goto out;
		}
		nfilters++;
		for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
			struct seccomp_data d = { .nr = (int)calls[c].nr, .arch = t->img->arch->audit_arch,
						  .instruction_pointer = t->gadget };
			uint32_t act;

			memcpy(d.args, calls[c].args, sizeof(d.args));
			if (seccomp_eval(prog, (size_t)n, &d, &act) < 0)
				act = SECCOMP_RET_KILL_PROCESS; /* cannot tell: assume the worst */
			verdict[c] = seccomp_stricter(verdict[c], act);
		}
	}
	t->skip_errno = false;
	for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
		uint32_t act = verdict[c] & SECCOMP_RET_ACTION_FULL;

		pr_debug("seccomp: %s would %s", calls[c].name, action_name(verdict[c]));
		if (act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG)
			continue;
		/* without a tracer for it, SECCOMP_RET_TRACE fails the syscall with ENOSYS */
		if (calls[c].errno_ok && (act == SECCOMP_RET_ERRNO || act == SECCOMP_RET_TRACE)) {
			if (calls[c].nr == -1)
				t->skip_errno = true;
			continue;
		}
		ret = err_sethint(err, HC_E_UNSUPPORTED, 0,
				  "allow rt_sigreturn and getpid in the service's filter, and give "
				  "unknown syscall numbers an errno rather than a kill",
				  "pid %d's seccomp filter would %s on %s, which heapctl needs",
				  t->img->pid, action_name(verdict[c]), calls[c].name);
		break;
	}
	pr_debug("seccomp: %u filter(s) checked", nfilters);
out:
	free(prog);
	return ret;
}
