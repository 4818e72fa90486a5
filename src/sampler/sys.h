/* SPDX-License-Identifier: MIT */
/*
 * What the sampler asks of the system, in both flavours: the glibc one
 * calls libc, the freestanding one (HCS_FREESTANDING: no libc, mapped by
 * heapctl into musl and static processes) makes the system calls itself.
 * Errors are negative errno values in both, as the kernel returns them.
 */
#ifndef HCS_SYS_H
#define HCS_SYS_H

#include <stddef.h>
#include <stdint.h>

#ifndef HCS_FREESTANDING

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

static inline long sys_mprotect(void *a, size_t len, int prot)
{
	return mprotect(a, len, prot) ? -errno : 0;
}

static inline long sys_madvise(void *a, size_t len, int advice)
{
	return madvise(a, len, advice) ? -errno : 0;
}

#else

/* The same values on x86_64 and aarch64 (asm-generic/mman-common.h). */
#define PROT_READ 1
#define PROT_WRITE 2
#define MADV_DONTNEED 4

#if defined(__x86_64__)
#define NR_mprotect 10
#define NR_madvise 28
#define NR_getpid 39

static inline long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The TCB's self pointer (glibc's and musl's alike): one per thread, never 0. */
static inline uint64_t thread_pointer(void)
{
	uint64_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}
#elif defined(__aarch64__)
#define NR_mprotect 226
#define NR_madvise 233
#define NR_getpid 172

static inline long raw_syscall3(long nr, long a, long b, long c)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
}

static inline uint64_t thread_pointer(void)
{
	uint64_t tp;

	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}
#else
#error "the freestanding sampler knows x86_64 and aarch64 only"
#endif

static inline long sys_mprotect(void *a, size_t len, int prot)
{
	return raw_syscall3(NR_mprotect, (long)a, (long)len, prot);
}

static inline long sys_madvise(void *a, size_t len, int advice)
{
	return raw_syscall3(NR_madvise, (long)a, (long)len, advice);
}

static inline long sys_getpid(void)
{
	return raw_syscall3(NR_getpid, 0, 0, 0);
}

/*
 * A compiler may call these for a struct copy or a zeroed array even when
 * freestanding.  The empty asm keeps the loops from being recognised as
 * the very calls they implement.
 */
__attribute__((visibility("hidden"))) void *memcpy(void *d, const void *s, size_t n);
__attribute__((visibility("hidden"))) void *memset(void *d, int c, size_t n);

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *o = d;
	const unsigned char *i = s;

	while (n--) {
		*o++ = *i++;
		__asm__("" : "+r"(o));
	}
	return d;
}

void *memset(void *d, int c, size_t n)
{
	unsigned char *o = d;

	while (n--) {
		*o++ = (unsigned char)c;
		__asm__("" : "+r"(o));
	}
	return d;
}

#endif /* HCS_FREESTANDING */
#endif
