// SPDX-License-Identifier: MIT
/*
 * heapctl's side of the injected sampler (src/sampler): probe for it, and
 * switch it on, off and reset; find.c finds it in a target, hooks.c works
 * out what to hook, load.c loads it, read.c reads its tables back.
 *
 * Loading, in one borrow: memfd_create() by remote syscall, the object
 * written into it from here through the target's own fd (pidfd_getfd()),
 * dlopen("/proc/self/fd/N") by remote call, the fd closed again.  Nothing touches the target's
 * filesystem, and the code is mapped from a file: nothing writable is ever
 * made executable (MemoryDenyWriteExecute holds).
 *
 * Everything that needs no stopped thread is done before the borrow: the
 * slots to hook are found in each object's dynamic section (got.c), read
 * from the target's memory (a deleted or unreadable file is no obstacle).
 * A dump reads the tables with process_vm_readv and runs nothing in the
 * target.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../sampler/hcs.h"
#include "call.h"
#include "cred.h"
#include "got.h"
#include "inject_int.h"
#include "inject.h"
#include "libc.h"
#include "log.h"
#include "mem.h"
#include "engine.h"
#include "image.h"
#include "troot.h"

int inj_probe(struct engine *t, struct inj *in, struct hc_err *err)
{
	/* what outlives a probe: the prepared slots, and what this heapctl did to it */
	struct inj_prep prep = in->prep;
	bool loaded_now = in->loaded_now, switched = in->switched;
	const struct hc_where *where = in->where;
	struct range *r;
	size_t n;

	memset(in, 0, sizeof(*in));
	in->prep = prep;
	in->loaded_now = loaded_now;
	in->switched = switched;
	in->where = where;
	/*
	 * Not among the objects the target's maps showed when it was opened,
	 * nor loaded by this heapctl since: nothing to read.  (Another
	 * heapctl loading it meanwhile is a race a fresh read could lose too.)
	 */
	if (!loaded_now) {
		bool seen = false;

		for (size_t i = 0; i < t->img->nobjs && !seen; i++)
			seen = is_sampler(t->img->objs[i].path);
		if (!seen)
			return 0;
	}
	r = read_maps(t, &n, in, err);
	if (!r)
		return -1;
	free_maps(r, n);
	if (!in->base)
		return 0;
	if (!loaded_now)
		rename_stale(t);
	if (find_state(t, in, err) < 0)
		return -1;
	if (!in->state)
		return 0; /* mapped but not initialised by dlopen yet: not usable */
	return read_state(t, in, err) < 0 ? -1 : 1;
}

/* ---- switching ------------------------------------------------------------------------- */

static int write_field(struct engine *t, struct inj *in, size_t off, const void *v, size_t len,
		       struct hc_err *err)
{
	return call_write(t, in->state + off, v, len, err);
}

/*
 * jemalloc's experimental.hooks.install with the sampler's hooks_t, its
 * handle kept in the sampler's state; or .remove with that handle.
 */
static int je_hooks(struct engine *t, struct inj *in, uint64_t mallctl, bool install,
		    struct hc_err *err)
{
	uint64_t a[5], ret, len = 8, zero = 0;
	uint64_t handle = in->state + offsetof(struct hcs_state, je_handle);

	a[0] = call_strdup(t, install ? "experimental.hooks.install" : "experimental.hooks.remove", err);
	a[2] = call_scratch(t, 8, err);
	if (!a[0] || !a[2] || call_write(t, a[2], &len, 8, err) < 0)
		return -1;
	if (install) {
		a[1] = handle;
		a[3] = in->state + offsetof(struct hcs_state, je_hooks);
		a[4] = 32; /* sizeof(hooks_t): four pointers */
	} else {
		a[1] = a[2] = 0;
		a[3] = handle;
		a[4] = 8;
	}
	if (call_fn(t, mallctl, a, 5, &ret, NULL, NULL, err) < 0)
		return -1;
	if ((int)ret)
		return err_sethint(err, HC_E_UNSUPPORTED, (int)ret,
				   (int)ret == ENOENT ? "jemalloc 5.2 and later have it; or start the "
							"process with MALLOC_CONF=prof:true" :
							"start the process with MALLOC_CONF=prof:true",
				   "jemalloc in pid %d refused experimental.hooks.%s: %s", t->img->pid,
				   install ? "install" : "remove", strerror((int)ret));
	if (!install && call_write(t, handle, &zero, 8, err) < 0)
		return -1;
	return read_state(t, in, err);
}

/*
 * The glibc-built sampler loads with glibc's dlopen; anywhere else (musl,
 * a static executable, a glibc before 2.34 without libdl) heapctl maps its
 * freestanding twin itself (map.c).
 */
static bool needs_mapping(struct engine *t)
{
	const struct libc_id *id = libc_identify(t->img);

	return id->kind == LIBC_MUSL || id->is_static || !libc_fn(t, "dlopen") ||
	       !libc_fn(t, "gnu_get_libc_version");
}

/* A static executable's malloc with no symbol: said once, for sampler_loadable() and inj_prepare() */
static const char stripped_why[] =
	"its executable is stripped: malloc and free have no symbols to hook them by, and "
	"heapctl never hooks by guesswork";
static const char stripped_hint[] =
	"give heapctl the program's debug file (--debug-file FILE), or install its -dbgsym package";

bool sampler_loadable(struct engine *t, const char **why, const char **hint)
{
	struct obj *own = obj_malloc_owner(t->img);
	uint64_t orig[HCS_NHOOK], size[HCS_NHOOK];

	/*
	 * An allocator in the executable is hooked at its functions' entries,
	 * which only its symbols can name: never by guesswork.  (jemalloc
	 * there goes in through its own hooks, found by its mallctl.)
	 */
	*why = *hint = "";
	if (!own || !own->is_exe || !needs_mapping(t))
		return true;
	find_originals(t, own, orig, size);
	if (orig[HCS_H_MALLOC] && orig[HCS_H_FREE])
		return true;
	if (sym_by_name(own, "mallctl") || sym_by_name(own, "_rjem_mallctl") || sym_by_name(own, "je_mallctl"))
		return true;
	*why = stripped_why;
	*hint = stripped_hint;
	return false;
}

/* rescan: only hook what is new, and make no remote call if nothing is */
void inj_prep_clear(struct inj_prep *p)
{
	for (unsigned i = 0; i < p->ntabs; i++)
		free(p->tabs[i].buf);
	p->ntabs = 0;
}

void inj_free(struct inj *in)
{
	if (in) {
		inj_prep_clear(&in->prep);
		free(in->prep.slots);
	}
	free(in);
}

int inj_prepare(struct engine *t, struct inj *in, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(t->img);
	struct inj_prep *p = &in->prep;

	p->ready = false;
	p->je_mallctl = 0;
	p->n = 0;
	p->inl = false;
	p->mapped = needs_mapping(t);
	inj_prep_clear(p);
	/* the freestanding sampler's unwind tables, where it is yet to be set up */
	if (p->mapped && !(in->state && in->s.initialised) && unwind_prepare(t, p, err) < 0)
		return -1;
	if (!p->slots && !(p->slots = calloc(HCS_MAXSLOTS, sizeof(*p->slots))))
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	/*
	 * No GOT slot leads to an allocator linked into the executable (a Rust
	 * program's _rjem_ jemalloc, or one that exports malloc itself); a
	 * jemalloc's own hooks (5.2 and later) do.  Slots elsewhere stay as
	 * they are: they may bind to it too, and would count twice.
	 */
	if (in->where->allocator && !strcmp(in->where->allocator, "jemalloc") && in->where->ctl_raddr &&
	    obj_at(t->img, in->where->ctl_raddr) && obj_at(t->img, in->where->ctl_raddr)->is_exe) {
		p->je_mallctl = in->where->ctl_raddr;
		p->ready = true;
		return 0;
	}
	/* otherwise inline hooks, in a process the freestanding sampler serves */
	if (own && own->is_exe && !p->mapped)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "start the process with the allocator's own profiler",
				   "the allocator is linked into %s: heapctl's sampler hooks allocators "
				   "in shared libraries, and jemalloc through its own hooks, only",
				   own->path);
	if (!own)
		return err_set(err, HC_E_NO_ALLOC, 0, "no object in pid %d defines malloc", t->img->pid);
	find_originals(t, own, p->orig, p->size);
	if ((!p->orig[HCS_H_MALLOC] || !p->orig[HCS_H_FREE]) && own->is_exe)
		return err_sethint(err, HC_E_NO_SYM, 0, stripped_hint, "pid %d: %s", t->img->pid,
				   stripped_why);
	if (!p->orig[HCS_H_MALLOC] || !p->orig[HCS_H_FREE])
		return err_set(err, HC_E_NO_SYM, 0, "malloc or free has no definition in pid %d", t->img->pid);
	p->n = 0;
	if (own->is_exe) {
		p->inl = true;
		p->ready = true;
		return 0;
	}
	if (new_slots(t, in, p->orig, p->slots, &p->n, false, err) < 0)
		return -1;
	p->ready = true;
	return 0;
}

/*
 * The objects the freestanding sampler's unwinder walks through: every one
 * with code and an .eh_frame_hdr, and the sampler itself.  The entries
 * first, their count after.
 */
static int write_objs(struct engine *t, struct inj *in, struct hc_err *err)
{
	struct hcs_obj o[HCS_MAXOBJS];
	uint64_t own = map_eh_frame_hdr(t->img->arch->e_machine);
	uint32_t n = 0;

	if (own)
		o[n++] = (struct hcs_obj){ in->text_lo, in->text_hi, in->base + own };
	{
		unsigned k;

		if (unwind_map(t, &in->prep, o + n, &k, err) < 0)
			return -1;
		n += k;
	}
	for (size_t i = 0; i < t->img->nobjs && n < HCS_MAXOBJS; i++) {
		const struct obj *ob = &t->img->objs[i];

		if (ob->eh_hdr && ob->text_hi > ob->text_lo && !is_sampler(ob->path))
			o[n++] = (struct hcs_obj){ ob->text_lo, ob->text_hi, ob->eh_hdr };
	}
	return write_field(t, in, offsetof(struct hcs_state, objs), o, n * sizeof(o[0]), err) < 0 ||
			       write_field(t, in, offsetof(struct hcs_state, nobjs), &n, 4, err) < 0 ?
		       -1 :
		       0;
}

/* Load the sampler, and find it where it was loaded. */
static int load_found(struct engine *t, struct inj *in, struct hc_err *err)
{
	if ((in->prep.mapped ? map_sampler(t, in, err) : load(t, in, err)) < 0)
		return -1;
	if (inj_probe(t, in, err) <= 0)
		return err_isset(err) ? -1 :
		       err_set(err, HC_E_INTERNAL, 0, "the sampler is loaded in pid %d but cannot be found",
			       t->img->pid);
	pr_info("sampler: loaded at 0x%" PRIx64 ", state at 0x%" PRIx64, in->base, in->state);
	return 0;
}

/*
 * Hook what is not hooked yet, then start sampling at interval (0: the
 * last one); with rescan, only hook what was loaded since, and leave
 * sampling as it is.
 */
static int turn_on(struct engine *t, struct inj *in, uint64_t interval, bool rescan,
		   struct hc_err *err)
{
	struct inj_prep *p = &in->prep;
	struct hcs_slot *slots;
	uint64_t *orig = p->orig, ret, pagesz = (uint64_t)sysconf(_SC_PAGESIZE), a[2];
	unsigned n;

	/* before the borrow, unless the caller did it already: only reads */
	if (!p->ready && inj_prepare(t, in, err) < 0)
		return -1;
	p->ready = false; /* used once: the next operation works it out again */
	slots = p->slots;
	n = p->n;
	if (rescan && !n)
		return 0;
	if (reclaim_memfds(t, err) < 0)
		return -1;
	if (!in->state && load_found(t, in, err) < 0)
		return -1;
	if (!in->s.initialised) {
		uint64_t text[2] = { in->text_lo, in->text_hi };

		if (write_field(t, in, offsetof(struct hcs_state, orig), orig, sizeof(p->orig), err) < 0 ||
		    write_field(t, in, offsetof(struct hcs_state, text_lo), text, sizeof(text), err) < 0 ||
		    write_field(t, in, offsetof(struct hcs_state, pagesize), &pagesz, 8, err) < 0 ||
		    (in->s.flavour == HCS_FLAVOUR_FREE && write_objs(t, in, err) < 0) ||
		    call_fn(t, in->s.fn_init, NULL, 0, &ret, NULL, NULL, err) < 0)
			return -1;
		if ((int)ret == HCS_ERR_UNWIND) {
			return err_sethint(err, HC_E_UNSUPPORTED, 0,
					   "install libgcc-s1 in the process's root",
					   "heapctl's sampler found no stack unwinder in pid %d "
					   "(libgcc_s.so.1)", t->img->pid);
		}
		/* loading may have brought libgcc_s: its slots too, on top of the rest */
		if (!p->je_mallctl && !p->inl && new_slots(t, in, orig, slots, &n, true, err) < 0)
			return -1;
	}
	if (p->inl) {
		if (!in->s.hooked &&
		    (in->s.ninline ? inline_repatch(t, in, err) : inline_install(t, in, orig, err)) < 0)
			return -1;
		goto enable;
	}
	if (p->je_mallctl && !in->s.je_handle && je_hooks(t, in, p->je_mallctl, true, err) < 0)
		return -1;
	if (in->s.nslots + n > HCS_MAXSLOTS)
		n = HCS_MAXSLOTS - in->s.nslots;
	if (n) {
		uint32_t total = in->s.nslots + n;

		if (call_write(t, in->s.slots + (uint64_t)in->s.nslots * sizeof(*slots), slots,
			       n * sizeof(*slots), err) < 0 ||
		    write_field(t, in, offsetof(struct hcs_state, nslots), &total, 4, err) < 0)
			return -1;
	}
	/* the slots first, sampling next: each state in between passes everything through */
	if (call_fn(t, in->s.fn_patch, NULL, 0, &ret, NULL, NULL, err) < 0)
		return -1;
enable:
	if (rescan)
		return read_state(t, in, err);
	a[0] = interval;
	a[1] = 1;
	if (call_fn(t, in->s.fn_enable, a, 2, &ret, NULL, NULL, err) < 0 || read_state(t, in, err) < 0)
		return -1;
	pr_info("sampler: %u new slots, sampling with a mean interval of %" PRIu64 " bytes", n,
		in->s.interval);
	return 0;
}

int inj_on(struct engine *t, struct inj *in, uint64_t interval, struct hc_err *err)
{
	if (turn_on(t, in, interval, false, err) < 0)
		return -1;
	in->switched = true;
	/* once the state names what it uses: what a killed heapctl left */
	inline_take_out_strays(t, in);
	return 0;
}

bool inj_watching(const struct inj *in)
{
	return in->state && (in->s.hooked || in->s.je_handle);
}

int inj_rescan(struct engine *t, struct inj *in, struct hc_err *err)
{
	if (!inj_watching(in))
		return 0;
	return turn_on(t, in, 0, true, err);
}

/* Sampling stops; the hooks stay, so what was sampled stays right. */
int inj_off(struct engine *t, struct inj *in, struct hc_err *err)
{
	uint64_t ret, a[2] = { 0, 0 };

	if (!in->state)
		return 0;
	if (call_fn(t, in->s.fn_enable, a, 2, &ret, NULL, NULL, err) < 0 || read_state(t, in, err) < 0)
		return -1;
	in->switched = true;
	return 0;
}

/*
 * Forget what was sampled.  While sampling, a new profile starts at once;
 * while off, the hooks come out too: the process runs as before the
 * sampler came, whose code alone stays loaded.
 */
int inj_reset(struct engine *t, struct inj *in, struct hc_err *err)
{
	uint64_t ret;

	if (!in->state)
		return 0;
	if (in->s.enabled)
		return call_fn(t, in->s.fn_reset, NULL, 0, &ret, NULL, NULL, err) < 0 ? -1 :
										   read_state(t, in, err);
	if (reclaim_memfds(t, err) < 0)
		return -1;
	if (in->s.je_handle && je_hooks(t, in, in->where->ctl_raddr, false, err) < 0)
		return -1;
	if (in->s.ninline) {
		unsigned left;

		if (inline_remove(t, in, &left, err) < 0)
			return -1;
		if (left)
			pr_warn("sampler: %u inline hooks were changed by the process since: left as "
				"they are", left);
	}
	if (call_fn(t, in->s.fn_unpatch, NULL, 0, &ret, NULL, NULL, err) < 0 || read_state(t, in, err) < 0)
		return -1;
	if (ret)
		pr_warn("sampler: %u GOT slots were changed by the process since: left as they are",
			(unsigned)ret);
	in->switched = true;
	inline_take_out_strays(t, in);
	return 0;
}
