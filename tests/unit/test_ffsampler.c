// SPDX-License-Identifier: MIT
/*
 * Unit test: the freestanding sampler (heapctl-sampler-ff.so, carried in
 * libheapctl.a as hc_sampler_ff_so) mapped into this process the way
 * heapctl maps it into a musl or static target: its PT_LOAD segments at a
 * base of our choosing, its R_*_RELATIVE relocations applied, no loader.
 * Then: hcs_init() and the flavour, samples taken through its hooks with
 * stacks from its own unwinder (its frames left out, the caller's as
 * _Unwind_Backtrace sees them), threads on their own countdowns, and a
 * fork()ed child that notices it is one, a new profile's first allocation
 * sampled as any other.  HC_FF_BENCH=1 also prints the
 * cost of an unsampled malloc/free pair through the hooks.
 *
 * Built twice: against glibc (test_ffsampler, its stacks also compared
 * with libgcc's) and, where musl-gcc is installed, as a static musl
 * program (test_ffsampler_musl: musl's thread pointer, fork and
 * dl_iterate_phdr, an executable with no loader).
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <unwind.h>
#endif

#include "../../src/sampler/hcs.h"
#include "unit.h"
#include "unwind/chain.h"

extern const unsigned char hc_sampler_ff_so[], hc_sampler_ff_so_end[];

static struct hcs_state *st;
static uint64_t so_lo, so_hi, so_hdr;

/* heapctl's loader in miniature: segments, relative relocations, protections. */
static int map_sampler(void)
{
	const unsigned char *img = hc_sampler_ff_so;
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Phdr *ph = (const void *)(img + eh->e_phoff);
	uint64_t span = 0, rela = 0, relasz = 0;
	unsigned char *map, *base;

	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > span)
			span = ph[i].p_vaddr + ph[i].p_memsz;
	map = mmap(NULL, span + 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	base = (unsigned char *)(((uintptr_t)map + 65535) & ~(uintptr_t)65535);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD)
			memcpy(base + ph[i].p_vaddr, img + ph[i].p_offset, ph[i].p_filesz);
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			so_hdr = (uint64_t)(uintptr_t)base + ph[i].p_vaddr;
		if (ph[i].p_type == PT_DYNAMIC)
			for (const Elf64_Dyn *d = (const void *)(img + ph[i].p_offset); d->d_tag != DT_NULL; d++) {
				if (d->d_tag == DT_RELA)
					rela = d->d_un.d_ptr;
				if (d->d_tag == DT_RELASZ)
					relasz = d->d_un.d_val;
			}
	}
	for (uint64_t off = 0; off < relasz; off += sizeof(Elf64_Rela)) {
		const Elf64_Rela *r = (const void *)(base + rela + off);

		if (ELF64_R_TYPE(r->r_info) != (eh->e_machine == EM_AARCH64 ? 1027u : 8u)) /* RELATIVE */
			return -1;
		*(uint64_t *)(base + r->r_offset) = (uint64_t)(uintptr_t)base + (uint64_t)r->r_addend;
	}
	for (int i = 0; i < eh->e_phnum; i++) {
		uint64_t lo = ph[i].p_vaddr & ~4095ull, hi = (ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~4095ull;

		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_flags & PF_X) {
			so_lo = (uint64_t)(uintptr_t)base + ph[i].p_vaddr;
			so_hi = so_lo + ph[i].p_memsz;
			if (mprotect(base + lo, hi - lo, PROT_READ | PROT_EXEC))
				return -1;
		}
		for (uint64_t at = ph[i].p_vaddr & ~7ull; !st && at + sizeof(*st) <= ph[i].p_vaddr + ph[i].p_filesz;
		     at += 8)
			if (*(const uint64_t *)(base + at) == HCS_MAGIC && (ph[i].p_flags & PF_W))
				st = (struct hcs_state *)(base + at);
	}
	return st ? 0 : -1;
}

static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t lo = ~0ull, hi = 0, hdr = 0;

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t at = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			lo = at < lo ? at : lo;
			hi = at + ph->p_memsz > hi ? at + ph->p_memsz : hi;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = at;
		}
	}
	if (hdr && hi > lo && st->nobjs < HCS_MAXOBJS)
		st->objs[st->nobjs++] = (struct hcs_obj){ lo, hi, hdr };
	return 0;
}

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
#define HOOK(id, type) ((type)(uintptr_t)st->hook[HCS_H_##id])

/* allocations through the hooks, from the bottom of a chain; ra: its caller */
struct work {
	unsigned n;
	size_t size;
	uint64_t ra, self;
	uint64_t gcc[64]; /* libgcc's stack, from glibc's build */
	unsigned ngcc;
};

#ifdef __GLIBC__
static _Unwind_Reason_Code gcc_cb(struct _Unwind_Context *c, void *arg)
{
	struct work *w = arg;

	/* libgcc ends with the outermost frame's caller, ip 0, as the sampler's bt_cb() drops it */
	if (!_Unwind_GetIP(c))
		return _URC_END_OF_STACK;
	if (w->ngcc == 64)
		return _URC_END_OF_STACK;
	w->gcc[w->ngcc++] = _Unwind_GetIP(c);
	return _URC_NO_REASON;
}
#endif

static __attribute__((noinline)) void allocate(void *arg)
{
	struct work *w = arg;

	w->ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	w->self = (uint64_t)(uintptr_t)allocate;
	for (unsigned i = 0; i < w->n; i++)
		HOOK(FREE, free_fn)(HOOK(MALLOC, malloc_fn)(w->size));
#ifdef __GLIBC__
	_Unwind_Backtrace(gcc_cb, w);
#endif
	__asm__ volatile("" : : : "memory");
}

static void *thread_main(void *arg)
{
	struct work w = { .n = 20000, .size = 256 };

	(void)arg;
	chain_plain(3, allocate, &w);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(void)
{
	const unsigned n = 20000000;
	double t0, t1, t2;

	((int (*)(uint64_t, uint32_t))(uintptr_t)st->fn_enable)(512 * 1024, 1);
	t0 = now();
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(64);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	t1 = now();
	for (unsigned i = 0; i < n; i++)
		HOOK(FREE, free_fn)(HOOK(MALLOC, malloc_fn)(64));
	t2 = now();
	fprintf(stderr, "ff sampler: malloc+free %.1f ns, through the hooks %.1f ns (+%.1f ns)\n",
		(t1 - t0) * 1e9 / n, (t2 - t1) * 1e9 / n, ((t2 - t1) - (t1 - t0)) * 1e9 / n);
}

/* The stacks' accumulated counts, summed. */
static uint64_t accum(uint64_t *bytes)
{
	const struct hcs_stack *stacks = (const struct hcs_stack *)(uintptr_t)st->stacks;
	uint64_t objs = 0;

	*bytes = 0;
	for (uint64_t id = 1; id <= st->nstacks && id < HCS_STACKS; id++) {
		objs += stacks[id].accum_objs;
		*bytes += stacks[id].accum_bytes;
	}
	return objs;
}

int main(void)
{
	const struct hcs_stack *stacks;
	uint64_t abytes;
	struct work w = { .n = 100000, .size = 100 };
	pthread_t th[8];
	uint64_t samples;
	pid_t pid;
	int status, found = 0;

	begin("ffsampler.map");
	CHECK(map_sampler() == 0, "cannot map the sampler as heapctl would");
	end();
	if (!st)
		return 1;

	begin("ffsampler.init");
	st->orig[HCS_H_MALLOC] = (uint64_t)(uintptr_t)malloc;
	st->orig[HCS_H_FREE] = (uint64_t)(uintptr_t)free;
	st->pagesize = (uint64_t)sysconf(_SC_PAGESIZE);
	st->text_lo = so_lo;
	st->text_hi = so_hi;
	dl_iterate_phdr(add_obj, NULL);
	st->objs[st->nobjs++] = (struct hcs_obj){ so_lo, so_hi, so_hdr };
	CHECK(st->version == HCS_VERSION && st->size == sizeof(*st), "version %u size %u", st->version,
	      st->size);
	CHECK(st->flavour == HCS_FLAVOUR_FREE, "flavour %u", st->flavour);
	CHECK(((int (*)(void))(uintptr_t)st->fn_init)() == 0 && st->initialised, "hcs_init() failed");
	end();

	begin("ffsampler.samples");
	((int (*)(uint64_t, uint32_t))(uintptr_t)st->fn_enable)(4096, 1);
	chain_plain(5, allocate, &w);
	stacks = (const struct hcs_stack *)(uintptr_t)st->stacks;
	CHECK(st->samples > 100, "%llu samples of 10 MB at a mean of 4 KiB", (unsigned long long)st->samples);
	CHECK(st->unwind_short == 0, "%llu stacks short", (unsigned long long)st->unwind_short);
	CHECK(st->nstacks >= 1, "no stack recorded");
	for (uint64_t id = 1; id <= st->nstacks && id < HCS_STACKS; id++) {
		const struct hcs_stack *s = &stacks[id];
		int in_chain = 0, in_main = 0;

		/* frame 0 in allocate(), then its caller, chain_plain() and main() */
		if (s->nframes < 2 || s->frames[1] != w.ra)
			continue;
		found = 1;
		CHECK(s->frames[0] > w.self && s->frames[0] < w.self + 512, "frame 0 at 0x%llx, not in allocate()",
		      (unsigned long long)s->frames[0]);
		for (uint32_t k = 2; k < s->nframes; k++) {
			in_chain |= s->frames[k] - (uint64_t)(uintptr_t)chain_plain < 256;
			in_main |= in_chain && s->frames[k] - (uint64_t)(uintptr_t)main < 4096;
		}
		CHECK(in_chain && in_main, "%u frames, not through chain_plain() and main()", s->nframes);
#ifdef __GLIBC__
		{
			uint32_t j = 0;

			/* and as libgcc has them */
			while (j < w.ngcc && w.gcc[j] != w.ra)
				j++;
			CHECK(j < w.ngcc && w.ngcc - j == s->nframes - 1, "%u frames, libgcc %u after allocate()",
			      s->nframes, w.ngcc - j);
			for (uint32_t k = 1; k < s->nframes && j + k - 1 < w.ngcc; k++)
				CHECK(s->frames[k] == w.gcc[j + k - 1], "frame %u differs from libgcc's", k);
		}
#endif
	}
	CHECK(found, "no stack through allocate()'s caller 0x%llx", (unsigned long long)w.ra);
	end();

	begin("ffsampler.threads");
	samples = st->samples;
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, thread_main, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	CHECK(st->samples > samples + 100, "%llu samples from 8 threads",
	      (unsigned long long)(st->samples - samples));
	CHECK(!st->tls_full, "the thread table is full after 9 threads");
	end();

	/* every sample counted at its stack, freed or not (these are all freed) */
	begin("ffsampler.accum");
	CHECK(accum(&abytes) == st->samples - st->dropped_stacks && st->live_count < st->samples,
	      "%llu accumulated, %llu samples, %llu live", (unsigned long long)accum(&abytes),
	      (unsigned long long)st->samples, (unsigned long long)st->live_count);
	CHECK(abytes >= 100 * (st->samples - st->dropped_stacks), "%llu bytes accumulated",
	      (unsigned long long)abytes);
	end();

	begin("ffsampler.fork");
	pid = fork();
	if (pid == 0) {
		w.n = 10000;
		chain_plain(1, allocate, &w);
		_exit(st->in_child == 1 && st->enabled == 0 && st->samples == 0 && !accum(&abytes) ?
			      0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child did not stop sampling and forget the parent's samples");
	CHECK(!st->in_child && st->enabled, "the parent stopped sampling");
	end();

	/* a thread's first allocation in a new profile counts like any other */
	begin("ffsampler.first");
	{
		void *big;

		((int (*)(uint64_t, uint32_t))(uintptr_t)st->fn_enable)(256, 1);
		CHECK(st->samples == 0, "a new interval kept %llu samples", (unsigned long long)st->samples);
		CHECK(accum(&abytes) == 0 && abytes == 0, "a new interval kept %llu accumulated",
		      (unsigned long long)accum(&abytes));
		big = HOOK(MALLOC, malloc_fn)(1 << 20);
		CHECK(st->samples == 1 && st->live_count == 1,
		      "1 MiB, the first allocation at a mean of 256 bytes: %llu samples, %llu live",
		      (unsigned long long)st->samples, (unsigned long long)st->live_count);
		HOOK(FREE, free_fn)(big);
		CHECK(st->live_count == 0, "freed, still %llu live", (unsigned long long)st->live_count);
		CHECK(accum(&abytes) == 1 && abytes == 1 << 20, "freed: %llu accumulated, %llu bytes",
		      (unsigned long long)accum(&abytes), (unsigned long long)abytes);
	}
	end();

	if (getenv("HC_FF_BENCH"))
		bench();
	return nfailed != 0;
}
