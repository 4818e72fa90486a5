// SPDX-License-Identifier: MIT
/*
 * Unit test: maps_load() by PROCMAP_QUERY (Linux 6.11) knows what it does
 * from /proc/PID/maps as text.  This process, with thread stacks, anonymous
 * code and a memfd mapped, is read both ways: the same objects (path,
 * range, base, text), and every mapping of the text is what vma_at() of
 * the other answers, thread stacks asked for lazily included.  The text
 * way is forced with a maps fd that refuses the ioctl (/dev/null), as an
 * older kernel would; a kernel that refuses it half-way (this test's own
 * ioctl() fails one query) must leave what the text says, nothing of the
 * queries before.  Prints "PASS group" or "FAIL group: detail" (or
 * "SKIP group: why"); exits 1 on failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image.h"
#include "unit.h"

/*
 * The library's ioctl() calls come here (this executable's definition
 * wins the link): the query_fail_at-th PROCMAP_QUERY ('f', 17) fails with
 * EIO, as a kernel refusing it half-way would; 0 fails none.
 */
static int query_fail_at, queries;

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(req) == 'f' && _IOC_NR(req) == 17 && query_fail_at &&
	    ++queries == query_fail_at) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

static int block[2], ready[2];
static uint64_t stack_of[3]; /* an address on each parked thread's stack */

static void *parked(void *arg)
{
	char c;

	*(uint64_t *)arg = (uint64_t)(uintptr_t)&c;
	if (write(ready[1], "r", 1) != 1)
		return NULL;
	return read(block[0], &c, 1) < 0 ? NULL : arg;
}

/* A fresh image of pid, as api.c's target_new() makes one (image_init()). */
static struct image *new_image(pid_t pid)
{
	struct image *im = calloc(1, sizeof(*im));

	if (im)
		image_init(im, pid);
	return im;
}

static void free_image(struct image *im)
{
	if (im)
		image_fini(im);
	free(im);
}

static struct image *load(bool text)
{
	struct image *t = new_image(getpid());
	struct hc_err e = { 0 };

	if (!t)
		return NULL;
	t->memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (text)
		t->mapsfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (maps_load(t, &e) < 0) {
		printf("# maps_load: %s\n", e.msg);
		free_image(t);
		return NULL;
	}
	return t;
}

static void same_objects(const char *name, const struct image *q,
			 const struct image *x)
{
	begin(name);
	CHECK(q->nobjs == x->nobjs, "%zu objects by query, %zu by text", q->nobjs, x->nobjs);
	for (size_t i = 0; i < q->nobjs && i < x->nobjs; i++) {
		const struct obj *a = &q->objs[i], *b = &x->objs[i];

		CHECK(!strcmp(a->path, b->path), "object %zu: %s, %s", i, a->path, b->path);
		CHECK(a->lo == b->lo && a->hi == b->hi && a->base == b->base &&
			      a->text_lo == b->text_lo && a->text_hi == b->text_hi,
		      "%s: %llx-%llx base %llx text %llx-%llx by query, %llx-%llx base %llx text "
		      "%llx-%llx by text", a->path, (unsigned long long)a->lo,
		      (unsigned long long)a->hi, (unsigned long long)a->base,
		      (unsigned long long)a->text_lo, (unsigned long long)a->text_hi,
		      (unsigned long long)b->lo, (unsigned long long)b->hi,
		      (unsigned long long)b->base, (unsigned long long)b->text_lo,
		      (unsigned long long)b->text_hi);
		CHECK(a->is_exe == b->is_exe && a->is_vdso == b->is_vdso && a->is_ldso == b->is_ldso,
		      "%s: kinds differ", a->path);
	}
	end();
}

/* x's mapping at lo as it was read, or NULL. */
static const struct vma *text_vma(const struct image *x, uint64_t lo)
{
	for (size_t i = 0; i < x->nvmas; i++)
		if (x->vmas[i].lo == lo)
			return &x->vmas[i];
	return NULL;
}

/*
 * Every mapping of the text, asked for by address: those the queries did
 * not read are asked for now (vma_at()).  This process allocates as it
 * goes (more so under ASan, whose allocator grows its regions), so a
 * mapping that a second reading of the text, after the asking, no longer
 * shows the same is its own doing and is passed over.
 */
static void same_mappings(struct image *q, const struct image *x)
{
	struct vma *got = calloc(x->nvmas + 1, sizeof(*got));
	struct image *x2;

	begin("maps_load.query.vma_at");
	if (!got) {
		CHECK(0, "out of memory");
		end();
		return;
	}
	for (size_t i = 0; i < x->nvmas; i++) {
		const struct vma *a = vma_at(q, x->vmas[i].lo);

		if (a)
			got[i] = *a;
	}
	x2 = load(true);
	CHECK(x2, "the text could not be read again");
	for (size_t i = 0; x2 && i < x->nvmas; i++) {
		const struct vma *a = &got[i], *b = &x->vmas[i], *b2 = text_vma(x2, b->lo);

		/* x86_64's [vsyscall] page is the kernel's, in no process's list of mappings */
		if (b->lo >= 0xffff800000000000ull ||
		    !(b2 && b2->hi == b->hi && b2->flags == b->flags))
			continue;
		CHECK(a->hi && a->lo == b->lo && a->hi == b->hi && a->flags == b->flags,
		      "%llx-%llx flags %u by text, %llx-%llx flags %u by query",
		      (unsigned long long)b->lo, (unsigned long long)b->hi, b->flags,
		      (unsigned long long)a->lo, (unsigned long long)a->hi, a->flags);
	}
	CHECK(!vma_at(q, 4096), "page 1 is mapped?");
	end();
	free_image(x2);
	free(got);
}

/*
 * What this process knows of itself, whichever way the maps were read:
 * its executable is an object, the anonymous code page is an executable
 * anonymous mapping, the memfd's is a file's, every parked thread's stack
 * and main()'s own are mapped, and page 1 is not.
 */
static void knows_itself(struct image *t, const char *how, uint64_t code, uint64_t mem,
			 uint64_t main_sp)
{
	char name[64];
	const struct vma *v;
	bool exe = false;

	snprintf(name, sizeof name, "maps_load.%s", how);
	begin(name);
	for (size_t i = 0; i < t->nobjs; i++)
		exe |= t->objs[i].is_exe && strstr(t->objs[i].path, "test_mapsload");
	CHECK(exe, "no object is this executable (%zu objects)", t->nobjs);
	v = vma_at(t, code);
	CHECK(v && (v->flags & (VMA_X | VMA_ANON)) == (VMA_X | VMA_ANON),
	      "anonymous code at %llx: %s", (unsigned long long)code,
	      v ? "not anonymous and executable" : "no mapping");
	if (mem) {
		v = vma_at(t, mem);
		CHECK(v && !(v->flags & (VMA_X | VMA_ANON)), "memfd's mapping at %llx: %s",
		      (unsigned long long)mem, v ? "wrong kind" : "no mapping");
	}
	v = vma_at(t, main_sp);
	CHECK(v && (v->flags & VMA_STACK), "main()'s stack at %llx: %s",
	      (unsigned long long)main_sp, v ? "not [stack]" : "no mapping");
	for (int i = 0; i < 3; i++)
		CHECK(vma_at(t, stack_of[i]), "thread %d's stack at %llx: no mapping", i,
		      (unsigned long long)stack_of[i]);
	CHECK(!vma_at(t, 4096), "page 1 is mapped?");
	end();
}

int main(void)
{
	pthread_t th[3];
	struct image *q, *x;
	void *code, *mem = NULL;
	int mfd;
	char c;

	if (pipe(block) < 0 || pipe(ready) < 0)
		return 1;
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, parked, &stack_of[i]);
	/* each thread has said where its stack is before it parks */
	for (int i = 0; i < 3; i++)
		if (read(ready[0], &c, 1) != 1)
			return 1;
	/* anonymous code, where a JIT's would be, and a memfd's mapping */
	code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mfd = memfd_create("heapctl-unit", MFD_CLOEXEC);
	if (mfd >= 0 && ftruncate(mfd, 8192) == 0)
		mem = mmap(NULL, 8192, PROT_READ, MAP_SHARED, mfd, 0);
	if (mem == MAP_FAILED)
		mem = NULL;
	q = load(false);
	x = load(true);
	if (!q || !x) {
		printf("FAIL maps_load.query: the maps could not be read\n");
		return 1;
	}
	knows_itself(x, "text", (uintptr_t)code, (uintptr_t)mem, (uintptr_t)&c);
	if (!q->vmas_partial) {
		printf("SKIP maps_load.query: this kernel has no PROCMAP_QUERY (Linux 6.11); "
		       "both reads were the text's\n");
	} else {
		struct image *h;

		knows_itself(q, "query", (uintptr_t)code, (uintptr_t)mem, (uintptr_t)&c);
		same_objects("maps_load.query.objects", q, x);
		same_mappings(q, x);
		/* the fifth query refused: the text's objects and mappings, all of them */
		query_fail_at = 5;
		h = load(false);
		query_fail_at = 0;
		if (!h || queries < 5) {
			printf("FAIL maps_load.query.refused_half_way: %s\n",
			       h ? "the fifth query never came" : "the maps could not be read");
			nfailed++;
		} else {
			begin("maps_load.query.refused_half_way");
			CHECK(!h->vmas_partial, "the mappings are the queries', not the text's");
			CHECK(h->nvmas == x->nvmas, "%zu mappings, the text has %zu", h->nvmas,
			      x->nvmas);
			end();
			same_objects("maps_load.query.refused_half_way.objects", h, x);
		}
		free_image(h);
	}
	free_image(q);
	free_image(x);
	return nfailed != 0;
}
