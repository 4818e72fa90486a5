// SPDX-License-Identifier: MIT
/*
 * Unit test: syms_sort() against a reference stable sort (insertion), on
 * tables shaped like a library's (many aliases at one address, sizes of
 * all kinds), one too small to sort, one whose addresses are all equal,
 * and one spanning so much of the address space that the keys cannot
 * hold the offsets (the fallback).
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "unit.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Insertion sort, stable: what syms_sort() must agree with. */
static void ref_sort(struct sym *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct sym x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1].raddr > x.raddr; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* n symbols in [base, base + span), about one in aliases sharing the previous one's address. */
static void fill(struct sym *v, size_t n, uint64_t base, uint64_t span, unsigned aliases)
{
	for (size_t i = 0; i < n; i++) {
		v[i].raddr = i && aliases && rnd() % aliases == 0 ? v[i - 1].raddr :
								       base + (span ? rnd() % span : 0);
		v[i].size = rnd() % 512;
		v[i].name = (const char *)(uintptr_t)(i + 1); /* identity, to check stability */
		v[i].global = rnd() & 1;
	}
}

static void same_as_ref(const char *name, size_t n, uint64_t base, uint64_t span, unsigned aliases)
{
	struct sym *a = calloc(n ? n : 1, sizeof(*a)), *b = calloc(n ? n : 1, sizeof(*b));
	size_t bad = n;

	begin(name);
	if (!a || !b) {
		CHECK(0, "out of memory");
		goto out;
	}
	fill(a, n, base, span, aliases);
	memcpy(b, a, n * sizeof(*a));
	syms_sort(a, n);
	ref_sort(b, n);
	for (size_t i = 0; i < n && bad == n; i++)
		if (memcmp(&a[i], &b[i], sizeof(*a)))
			bad = i;
	CHECK(bad == n, "entry %zu: 0x%llx (symbol %zu), the stable order has 0x%llx (symbol %zu)",
	      bad, bad < n ? (unsigned long long)a[bad].raddr : 0ull,
	      bad < n ? (size_t)(uintptr_t)a[bad].name : 0,
	      bad < n ? (unsigned long long)b[bad].raddr : 0ull,
	      bad < n ? (size_t)(uintptr_t)b[bad].name : 0);
out:
	end();
	free(a);
	free(b);
}

int main(void)
{
	/* libc's shape: 3,000 functions over 1.4 MiB, one in four an alias */
	same_as_ref("symsort.libc-like", 3000, 0x7f0000026000ull, 0x160000, 4);
	same_as_ref("symsort.few", 5, 0x400000, 64, 2);
	same_as_ref("symsort.one", 1, 0x400000, 0, 0);
	same_as_ref("symsort.none", 0, 0x400000, 0, 0);
	same_as_ref("symsort.all-equal", 100, 0x400000, 0, 0);
	same_as_ref("symsort.no-aliases", 70000, 0x1000, 1ull << 26, 0);
	/* offsets of 60 bits and 12 bits of index do not fit a key: qsort() then, not stable */
	{
		struct sym v[4096];

		begin("symsort.wide-span-sorted");
		fill(v, 4096, 0, 1ull << 60, 0);
		syms_sort(v, 4096);
		for (size_t i = 1; i < 4096; i++)
			CHECK(v[i - 1].raddr <= v[i].raddr, "entry %zu out of order", i);
		end();
	}
	return nfailed != 0;
}
