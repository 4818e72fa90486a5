// SPDX-License-Identifier: MIT
/*
 * The driver table and the allocator guess: which driver drives a target,
 * and what malloc looks like when none does.  api.c asks; the drivers
 * (alloc_*.c) answer; nothing here stops a thread.  What the drivers
 * share is in alloc_common.c, below them all.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "image.h"
#include "libc.h"

/*
 * Tried in this order; the first that detects its allocator drives the
 * target.  jemalloc comes first because a program may call a prefixed copy
 * (redis' je_malloc) while libc still serves plain malloc.  tcmalloc,
 * mimalloc, glibc and musl detect only when they really serve malloc (musl
 * by evidence of the libc, libc.c: its libc.so has glibc's name).  When the
 * object serving malloc is tcmalloc or mimalloc, that driver is tried
 * first (see pick_order()).
 */
static const struct alloc_ops *const drivers[] = { &alloc_jemalloc, &alloc_tcmalloc,
						   &alloc_mimalloc, &alloc_glibc, &alloc_musl };
#define NDRIVERS (sizeof(drivers) / sizeof(drivers[0]))

/* The engine's safe-point policy: the driver's contains(), on the target around the engine. */
static bool in_allocator(struct engine *e, uint64_t raddr)
{
	struct hc_target *t = (struct hc_target *)((char *)e - offsetof(struct hc_target, eng));

	return t->drv.alloc->contains(t, raddr);
}

/* A tcmalloc or mimalloc that serves malloc goes before any jemalloc copy merely mapped. */
static void pick_order(struct hc_target *t, const struct alloc_ops **order)
{
	struct obj *own = obj_malloc_owner(&t->img);
	size_t n = 0;

	if (own && sym_by_name(own, "MallocExtension_GetNumericProperty"))
		order[n++] = &alloc_tcmalloc;
	else if (own && sym_by_name(own, "mi_version"))
		order[n++] = &alloc_mimalloc;
	for (size_t i = 0; i < NDRIVERS; i++)
		if (!n || drivers[i] != order[0])
			order[n++] = drivers[i];
}

/* The driver whose allocator t uses, into t->drv.alloc (NULL: none); the engine's policy from it. */
int alloc_detect(struct hc_target *t, struct hc_err *err)
{
	const struct alloc_ops *order[NDRIVERS];

	pick_order(t, order);
	if (t->img.malloc_unread) {
		/*
		 * Whatever serves malloc after it may not be what the process
		 * calls: taking libc's for a preloaded jemalloc's has its
		 * functions free jemalloc's pointers (free(): invalid pointer).
		 */
		const char *own = t->img.malloc_obj ? strrchr(t->img.malloc_obj->path, '/') : NULL;

		return err_sethint(err, HC_E_NO_SYM, t->img.malloc_unread_err.sys_errno,
				   "give heapctl CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, so that it "
				   "reads the very file mapped through /proc/PID/map_files, or "
				   "restart the process",
				   "pid %d: %s; it may define malloc (it comes before %s)", t->img.pid,
				   t->img.malloc_unread_err.msg, own ? own + 1 : "any other definition");
	}
	for (size_t i = 0; i < NDRIVERS; i++) {
		int r = order[i]->detect(t, err);

		if (r < 0)
			return -1;
		if (r > 0) {
			t->drv.alloc = order[i];
			t->eng.in_allocator = order[i]->contains ? in_allocator : NULL;
			t->eng.alloc_prefix = t->drv.where.prefix;
			break;
		}
	}
	return 0;
}

const char *alloc_guess(struct hc_target *t)
{
	static char buf[320];

	/* The executable first, then objects in load order: the linker's lookup scope. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < t->img.nobjs; i++) {
			struct obj *o = &t->img.objs[i];
			struct hc_err e = { 0 };

			if (o->is_exe != (pass == 0) || !o->base || o->is_vdso)
				continue;
			if (sym_load(&t->img, o, false, &e) < 0 || !sym_by_name(o, "malloc"))
				continue;
			/* musl's libc is libc.so too, and a static one is the executable */
			if (libc_identify(&t->img)->kind == LIBC_MUSL && o == libc_identify(&t->img)->obj)
				snprintf(buf, sizeof(buf), "musl (%s)", o->path);
			else if (strstr(o->path, "/libc.so"))
				snprintf(buf, sizeof(buf), "glibc (%s)", o->path);
			else if (strstr(o->path, "tcmalloc"))
				snprintf(buf, sizeof(buf), "tcmalloc (%s)", o->path);
			else if (strstr(o->path, "mimalloc"))
				snprintf(buf, sizeof(buf), "mimalloc (%s)", o->path);
			else
				snprintf(buf, sizeof(buf), "%s", o->path);
			return buf;
		}
	/* a static executable with no symbols: nothing can name what it linked in */
	if (libc_identify(&t->img)->is_static && libc_identify(&t->img)->kind == LIBC_UNKNOWN)
		return "an allocator linked into a stripped static executable, which no symbol names";
	return "an unknown allocator";
}
