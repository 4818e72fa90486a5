// SPDX-License-Identifier: MIT
/* seccomp_eval(): the classic-BPF interpreter heapctl runs on a target's filters. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "seccomp.h"
#include "unit.h"

/* one group per check, named seccomp.<name> */
#define CHECK1(name, cond)                          \
	do {                                        \
		begin("seccomp." name);             \
		CHECK(cond, "%s", #cond);           \
		end();                              \
	} while (0)

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))

static struct seccomp_data data(int nr, uint64_t a2, uint64_t a3)
{
	struct seccomp_data d = { .nr = nr, .arch = 0xc000003e };

	d.args[2] = a2;
	d.args[3] = a3;
	return d;
}

int main(void)
{
	/* what systemd's MemoryDenyWriteExecute= and a typical allow-list look like */
	struct sock_filter kill_exec_anon[] = {
		LD_ARCH,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 9 /* mmap */, 0, 5),
		LD_ARG_LO(2),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 3),
		LD_ARG_LO(3),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter errno_getpid[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
		BPF_STMT(BPF_LD | BPF_IMM, 5),
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LDX | BPF_MEM, 3),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 0x7fff0000 - 5),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter bad_jump[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 9, 7, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter no_ret[] = { LD_NR, BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1) };
	struct sock_filter div0[] = {
		LD_NR,
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter bad_load[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 62), /* past struct seccomp_data */
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	/* k + 4 wraps to 0 in 32 bits: once read 4 GiB away from the data */
	struct sock_filter wrap_load[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0xfffffffc),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter last_word[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data) - 4),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter ja_wrap[] = {
		BPF_STMT(BPF_JMP | BPF_JA, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter bad_mem[] = {
		BPF_STMT(BPF_LDX | BPF_MEM, BPF_MEMWORDS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter ret_x[] = { BPF_STMT(BPF_RET | BPF_X, SECCOMP_RET_ALLOW) };
	struct seccomp_data d;
	uint32_t act = 0;

	d = data(9, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK1("kill_exec_anon.mmap_exec_anon",
	      seccomp_eval(kill_exec_anon, 11, &d, &act) == 0 && act == SECCOMP_RET_KILL_PROCESS);
	d = data(9, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK1("kill_exec_anon.mmap_rw",
	      seccomp_eval(kill_exec_anon, 11, &d, &act) == 0 && act == SECCOMP_RET_ALLOW);
	d = data(11, 0, 0);
	CHECK1("kill_exec_anon.munmap",
	      seccomp_eval(kill_exec_anon, 11, &d, &act) == 0 && act == SECCOMP_RET_ALLOW);
	d = data(9, PROT_EXEC, 0);
	d.arch = 0x40000003; /* i386 */
	CHECK1("kill_exec_anon.foreign_arch",
	      seccomp_eval(kill_exec_anon, 11, &d, &act) == 0 && act == SECCOMP_RET_KILL_PROCESS);
	d = data(39, 0, 0);
	CHECK1("errno.getpid", seccomp_eval(errno_getpid, 9, &d, &act) == 0 &&
				      act == (SECCOMP_RET_ERRNO | 1));
	d = data(15, 0, 0);
	CHECK1("mem_alu_misc.allow",
	      seccomp_eval(errno_getpid, 9, &d, &act) == 0 && act == SECCOMP_RET_ALLOW);
	d = data(9, 0, 0);
	CHECK1("reject.jump_past_end", seccomp_eval(bad_jump, 3, &d, &act) < 0);
	CHECK1("reject.no_return", seccomp_eval(no_ret, 2, &d, &act) < 0);
	CHECK1("reject.division_by_zero", seccomp_eval(div0, 3, &d, &act) < 0);
	CHECK1("reject.load_out_of_range", seccomp_eval(bad_load, 2, &d, &act) < 0);
	CHECK1("reject.empty", seccomp_eval(bad_load, 0, &d, &act) < 0);
	CHECK1("reject.load_offset_wraps", seccomp_eval(wrap_load, 2, &d, &act) < 0);
	CHECK1("reject.ja_offset_wraps", seccomp_eval(ja_wrap, 2, &d, &act) < 0);
	CHECK1("reject.scratch_out_of_range", seccomp_eval(bad_mem, 2, &d, &act) < 0);
	CHECK1("reject.ret_x", seccomp_eval(ret_x, 1, &d, &act) < 0);
	d.args[5] = 0x1234567800000000ull; /* the last word: high half of args[5] (LE) */
	CHECK1("load_last_word", seccomp_eval(last_word, 2, &d, &act) == 0 && act == 0x12345678);
	CHECK1("stricter.kill_over_errno",
	      seccomp_stricter(SECCOMP_RET_ERRNO | 5, SECCOMP_RET_KILL_PROCESS) ==
		      SECCOMP_RET_KILL_PROCESS);
	CHECK1("stricter.errno_over_allow",
	      seccomp_stricter(SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | 5) == (SECCOMP_RET_ERRNO | 5));
	CHECK1("stricter.kill_thread_over_trap",
	      seccomp_stricter(SECCOMP_RET_TRAP, SECCOMP_RET_KILL_THREAD) == SECCOMP_RET_KILL_THREAD);
	return nfailed != 0;
}
