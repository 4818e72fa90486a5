// SPDX-License-Identifier: MIT
/*
 * a64-exit CODE: end the QEMU run with exit status CODE, through Arm
 * semihosting (SYS_EXIT, extended form: reason ADP_Stopped_ApplicationExit
 * and the status in the second word).  QEMU must run with
 * -semihosting-config enable=on,target=native,userspace=on, or the hlt
 * traps as an undefined instruction (SIGILL) and nothing else happens.
 * See "Semihosting for AArch32 and AArch64", SYS_EXIT (0x18).
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define SYS_EXIT			0x18
#define ADP_Stopped_ApplicationExit	0x20026

/* A function of its own, so nothing runs between loading x0/x1 and the hlt. */
static __attribute__((noinline, noreturn)) void semihost_exit(uint64_t code)
{
	uint64_t block[2] = { ADP_Stopped_ApplicationExit, code };
	register uint64_t op __asm__("x0") = SYS_EXIT;
	register uint64_t arg __asm__("x1") = (uint64_t)(uintptr_t)block;

	__asm__ volatile("hlt #0xf000" : "+r"(op) : "r"(arg) : "memory");
	/* Not reached under QEMU with semihosting. */
	_exit(127);
}

int main(int argc, char **argv)
{
	sync();
	semihost_exit(argc > 1 ? strtoul(argv[1], NULL, 0) : 0);
}
