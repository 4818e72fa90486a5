/* SPDX-License-Identifier: MIT */
/*
 * Fuzz inputs placed right before a PROT_NONE page, so that reading one byte
 * past them faults even in code ASan does not see (libc, libelf).  One
 * mapping is kept and reused: an mmap and munmap per input cost more than
 * most parsers (page faults on every copy, a TLB shootdown on every unmap).
 */
#ifndef FUZZ_MEM_H
#define FUZZ_MEM_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define FZ_PAGE 4096u

/* len bytes of read-write memory followed by a PROT_NONE page, or NULL. */
static inline uint8_t *fz_before_guard(size_t len)
{
	static uint8_t *base;
	static size_t cap;

	if (!base || len > cap) {
		size_t ncap = (len + 0xffff) & ~(size_t)0xffff;
		uint8_t *nb = mmap(NULL, ncap + FZ_PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (nb == MAP_FAILED)
			return NULL;
		if (mprotect(nb + ncap, FZ_PAGE, PROT_NONE)) {
			munmap(nb, ncap + FZ_PAGE);
			return NULL;
		}
		if (base)
			munmap(base, cap + FZ_PAGE);
		base = nb;
		cap = ncap;
	}
	return base + cap - len;
}

/* A copy of the input that ends where the readable memory ends. */
static inline uint8_t *fz_copy_at_end(const uint8_t *data, size_t size)
{
	uint8_t *p = fz_before_guard(size);

	if (p && size)
		memcpy(p, data, size);
	return p;
}

/*
 * A copy of the input at the start of a page, zero-filled to the end of its
 * last page, after which nothing is readable: how a file's first pages look
 * once mapped.  *lenp gets the page-rounded length.
 */
static inline uint8_t *fz_copy_paged(const uint8_t *data, size_t size, size_t *lenp)
{
	size_t len = (size + FZ_PAGE - 1) & ~(size_t)(FZ_PAGE - 1);
	uint8_t *p = fz_before_guard(len);

	if (!p)
		return NULL;
	memcpy(p, data, size);
	memset(p + size, 0, len - size);
	*lenp = len;
	return p;
}

#endif
