// SPDX-License-Identifier: MIT
/*
 * heapctl's side of the injected sampler (src/sampler): load it, hook the
 * GOT slots, switch it, read its tables.
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
#include "inject.h"
#include "log.h"
#include "mem.h"
#include "target.h"
#include "troot.h"

extern const unsigned char hc_sampler_so[], hc_sampler_so_end[];

#define HOOK_NAME(id, name) name,
static const char *const hook_names[HCS_NHOOK] = { HCS_HOOKS(HOOK_NAME) };
#undef HOOK_NAME

/* ---- finding a loaded sampler ------------------------------------------------------ */

/* Its mappings: from the memfd, or from the file load_file() made (both deleted by then). */
static bool is_sampler(const char *path)
{
	return strstr(path, "/memfd:" HCS_NAME) || strstr(path, "/" HCS_NAME ".so");
}

struct range {
	uint64_t lo, hi;
	int prot;
	bool elf_start; /* a file's first page: maybe an object heapctl has not read */
	char *path;
};

static void free_maps(struct range *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		free(r[i].path);
	free(r);
}

/* The target's mappings; NULL on failure (err set). */
static struct range *read_maps(struct hc_target *t, size_t *n, struct inj *in, struct hc_err *err)
{
	char path[96], line[PATH_MAX + 128];
	struct range *r = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps", t->img.proc);
	f = fopen(path, "re");
	if (!f)
		return err_set(err, HC_E_NO_PROC, errno, "cannot read %s: %s", path, strerror(errno)),
		       NULL;
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		struct mapline m;

		if (maps_parse_line(line, &m) < 0)
			continue;
		if (*n == cap) {
			struct range *nr = realloc(r, (cap = cap ? 2 * cap : 256) * sizeof(*r));

			if (!nr) {
				free(r);
				fclose(f);
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory"), NULL;
			}
			r = nr;
		}
		r[*n].lo = m.lo;
		r[*n].hi = m.hi;
		r[*n].prot = (m.perms[0] == 'r' ? PROT_READ : 0) | (m.perms[1] == 'w' ? PROT_WRITE : 0) |
			     (m.perms[2] == 'x' ? PROT_EXEC : 0);
		r[*n].elf_start = m.off == 0 && m.path[0] == '/' && m.inode;
		r[*n].path = r[*n].elf_start ? strdup(m.path) : NULL;
		(*n)++;
		if (in && is_sampler(m.path)) {
			if (m.off == 0 && !in->base)
				in->base = m.lo;
			if (m.perms[2] == 'x') {
				in->text_lo = in->text_lo ? in->text_lo : m.lo;
				in->text_hi = m.hi;
			}
			if (m.perms[1] == 'w' && in->ndata < 4) {
				in->data[in->ndata].lo = m.lo;
				in->data[in->ndata++].hi = m.hi;
			}
		}
	}
	fclose(f);
	return r;
}

static int prot_at(const struct range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return r[i].prot;
	return -1;
}

/* The state in the sampler's writable data, found by its magic. */
static int find_state(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	for (unsigned i = 0; i < in->ndata && !in->state; i++) {
		size_t len = in->data[i].hi - in->data[i].lo;
		uint64_t *buf;

		if (len > (1u << 20))
			continue;
		buf = malloc(len);
		if (!buf)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (mem_read(t->img.pid, t->img.memfd, in->data[i].lo, buf, len, err) < 0) {
			free(buf);
			return -1;
		}
		for (size_t k = 0; k + sizeof(struct hcs_state) / 8 <= len / 8; k++) {
			const struct hcs_state *s = (const void *)&buf[k];

			if (s->magic == HCS_MAGIC && s->version == HCS_VERSION &&
			    s->size == sizeof(struct hcs_state)) {
				in->state = in->data[i].lo + k * 8;
				break;
			}
			if (buf[k] == HCS_MAGIC) {
				free(buf);
				return err_sethint(err, HC_E_UNSUPPORTED, 0,
						   "use the heapctl that loaded it, or restart the process",
						   "pid %d holds a sampler of another heapctl version", t->img.pid);
			}
		}
		free(buf);
	}
	return 0;
}

static int read_state(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	return mem_read(t->img.pid, t->img.memfd, in->state, &in->s, sizeof(in->s), err) < 0 ? -1 : 0;
}

/*
 * The name the loader keeps for a sampler loaded from its memfd.  dlopen()
 * keeps the path it was given, /proc/self/fd/N: as the link map's l_name,
 * the path dl_iterate_phdr(), dladdr() and debuggers reading r_debug take
 * (gdb, heaptrack's injector), and in glibc also in the list of names new
 * dlopen() requests are matched with.  Once the memfd is closed that path
 * is wrong for everyone.  gdb opened it in its own process, found a pipe of
 * its own there and waited on it for ever, the target stopped under it; and
 * the target's own dlopen("/proc/self/fd/N") of another file would have
 * been given the sampler.  So the path is padded with slashes to the length
 * of the name the kernel gives the mappings in /proc/PID/maps, and right
 * after the load both copies are overwritten with that name, which nothing
 * can open.  A name still under /proc/self/fd (a heapctl killed just after
 * the load, or one from before this) is put right when the sampler is
 * next found, by a write to memory alone.
 */
#define LOADED_NAME "/memfd:" HCS_NAME " (deleted)"
#define LOADED_SHORT "/memfd:heapctl" /* fits any /proc/self/fd/N */
#define FD_PREFIX "/proc/self/fd/"
#define LIBNAME_WINDOW 4096 /* glibc's link_map is 1.2 KiB; the name list follows it */

static void fd_path(char *out, size_t outlen, int64_t fd)
{
	char num[24];
	int pad = (int)(sizeof(LOADED_NAME) - sizeof(FD_PREFIX)) -
		  snprintf(num, sizeof(num), "%" PRId64, fd);

	snprintf(out, outlen, FD_PREFIX "%.*s%s", pad > 0 ? pad : 0,
		 "////////////////////////////////", num);
}

/* Overwrite the bytes at raddr that hold given (NUL included) with name, no longer. */
static bool rename_at(struct hc_target *t, uint64_t raddr, const char *given, const char *name)
{
	size_t len = strlen(given) + 1;
	char buf[64];

	return raddr && len <= sizeof(buf) && strlen(name) < len &&
	       mem_read(t->img.pid, t->img.memfd, raddr, buf, len, &(struct hc_err){ 0 }) == 0 &&
	       !memcmp(buf, given, len) &&
	       mem_write(t->img.memfd, raddr, name, strlen(name) + 1, &(struct hc_err){ 0 }) == 0;
}

/* l_name of link map entry map: its second word (glibc's <link.h>, musl's struct dso) */
static uint64_t l_name_of(struct hc_target *t, uint64_t map)
{
	uint64_t p = 0;

	return mem_read(t->img.pid, t->img.memfd, map + 8, &p, 8, &(struct hc_err){ 0 }) ? 0 : p;
}

/* Rename the object at link map entry map, which the loader calls given. */
static void rename_loaded(struct hc_target *t, uint64_t map, const char *given)
{
	const char *name = strlen(given) >= strlen(LOADED_NAME) ? LOADED_NAME : LOADED_SHORT;
	size_t len = strlen(given) + 1, have = 0, chunk = 512;
	uint64_t w[LIBNAME_WINDOW / 8];
	bool named = rename_at(t, l_name_of(t, map), given, name), listed = false;

	/*
	 * glibc allocates the map with the first entry of its name list right
	 * behind it (elf/dl-object.c): { name, next, dont_free }, the name
	 * pointing just past the entry.  Such a word is looked for in the
	 * window after the map, as far as it can be read.
	 */
	while (have < sizeof(w) && mem_read(t->img.pid, t->img.memfd, map + have, (char *)w + have, chunk,
					    &(struct hc_err){ 0 }) == 0)
		have += chunk;
	for (size_t i = 0; !listed && (i + 3) * 8 + len <= have; i++)
		if (w[i] == map + (i + 3) * 8 && !memcmp((char *)w + (i + 3) * 8, given, len))
			listed = rename_at(t, w[i], given, name);
	if (named || listed)
		pr_info("sampler: the loader's name for it, %s, is now %s%s", given, name,
			named && listed ? " (also in glibc's list of its names)" : "");
	else
		pr_warn("sampler: the loader keeps the name %s for it, a path a debugger would "
			"open in its own process", given);
}

/* The sampler found loaded with a name under /proc/self/fd: see above. */
static void rename_stale(struct hc_target *t)
{
	for (size_t i = 0; i < t->img.nobjs; i++) {
		const struct obj *o = &t->img.objs[i];
		uint64_t l_name;
		char name[64];

		if (!o->link_map || !is_sampler(o->path) || !(l_name = l_name_of(t, o->link_map)) ||
		    mem_read(t->img.pid, t->img.memfd, l_name, name, sizeof(FD_PREFIX) + 32,
			     &(struct hc_err){ 0 }))
			continue;
		name[sizeof(FD_PREFIX) + 32] = '\0';
		if (!strncmp(name, FD_PREFIX, strlen(FD_PREFIX)))
			rename_loaded(t, o->link_map, name);
	}
}

int inj_probe(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	/* what outlives a probe: the prepared slots, and what this heapctl did to it */
	struct inj_prep prep = in->prep;
	bool loaded_now = in->loaded_now, switched = in->switched;
	struct range *r;
	size_t n;

	memset(in, 0, sizeof(*in));
	in->prep = prep;
	in->loaded_now = loaded_now;
	in->switched = switched;
	/*
	 * Not among the objects the target's maps showed when it was opened,
	 * nor loaded by this heapctl since: nothing to read.  (Another
	 * heapctl loading it meanwhile is a race a fresh read could lose too.)
	 */
	if (!loaded_now) {
		bool seen = false;

		for (size_t i = 0; i < t->img.nobjs && !seen; i++)
			seen = is_sampler(t->img.objs[i].path);
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

/* ---- what to hook -------------------------------------------------------------------- */

static uint64_t libc_fn(struct hc_target *t, const char *name);

/* Objects in the dynamic linker's search order: the executable first. */
static size_t link_order(struct hc_target *t, struct obj **out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->img.nobjs; i++)
		if (t->img.objs[i].base && !t->img.objs[i].is_vdso && !t->img.objs[i].is_ldso)
			out[n++] = &t->img.objs[i];
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			struct obj *a = out[j - 1], *b = out[j];
			uint64_t ra = a->is_exe ? 0 : (uint64_t)a->link_idx + 1;
			uint64_t rb = b->is_exe ? 0 : (uint64_t)b->link_idx + 1;

			if (ra <= rb)
				break;
			out[j - 1] = b;
			out[j] = a;
		}
	return n;
}

/*
 * The real definition of each hooked function: the first in search order
 * with a size (a PLT stub has none, and calling it would call the hook).
 * The C++ ones count only in the object that serves malloc.
 */
static void find_originals(struct hc_target *t, struct obj *own, uint64_t *orig)
{
	struct obj **ord = calloc(t->img.nobjs + 1, sizeof(*ord));
	size_t n = ord ? link_order(t, ord) : 0;

	memset(orig, 0, HCS_NHOOK * sizeof(*orig));
	for (int id = 0; id < HCS_NHOOK; id++) {
		if (id >= HCS_FIRST_CXX) {
			const struct sym *s = sym_by_name(own, hook_names[id]);

			orig[id] = s && s->size ? s->raddr : 0;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			struct hc_err e = { 0 };
			const struct sym *s;

			if (sym_load(&t->img, ord[i], false, &e) < 0)
				continue;
			s = sym_by_name(ord[i], hook_names[id]);
			if (s && s->size) {
				orig[id] = s->raddr;
				break;
			}
		}
	}
	free(ord);
}

static int hook_id(const char *name, const uint64_t *orig)
{
	for (int id = 0; id < HCS_NHOOK; id++)
		if (orig[id] && !strcmp(name, hook_names[id]))
			return id;
	return -1;
}

/* The target's side of got.c's reading: its memory, the hooks, its mappings. */
struct slot_ctx {
	struct hc_target *t;
	const uint64_t *orig;
	const struct range *maps;
	size_t nmaps;
};

static int slot_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	const struct slot_ctx *c = arg;

	return mem_read(c->t->img.pid, c->t->img.memfd, raddr, buf, len, &(struct hc_err){ 0 });
}

static int slot_hook(void *arg, const char *name)
{
	const struct slot_ctx *c = arg;

	return hook_id(name, c->orig);
}

static int slot_prot(void *arg, uint64_t raddr)
{
	const struct slot_ctx *c = arg;

	return prot_at(c->maps, c->nmaps, raddr);
}

/* Append o's GOT slots that bind to a hooked function. */
static void object_slots(struct hc_target *t, const struct obj *o, const uint64_t *orig,
			 const struct range *maps, size_t nmaps, struct hcs_slot *out, unsigned *n)
{
	struct slot_ctx c = { t, orig, maps, nmaps };
	struct got_src s = {
		.read = slot_read,
		.hook = slot_hook,
		.prot = slot_prot,
		.arg = &c,
		.dynamic = o->dynamic,
		.dynamic_len = o->dynamic_len,
		.base = o->base,
		.bias = o->bias,
		.r_jump_slot = t->img.arch->r_jump_slot,
		.r_glob_dat = t->img.arch->r_glob_dat,
	};

	got_slots_from_dynamic(&s, out, n, HCS_MAXSLOTS);
}

static int by_addr(const void *a, const void *b)
{
	const struct hcs_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The slots to hook now: those of every object but the dynamic loader, the
 * vDSO, the sampler and the allocator's own object (its calls to itself
 * stay inside it), less those the sampler holds already.
 */
static int new_slots(struct hc_target *t, struct inj *in, const uint64_t *orig,
		     struct hcs_slot *out, unsigned *n, bool only_new_objects, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	struct hcs_slot *have = NULL;
	struct range *maps;
	size_t nmaps;
	unsigned k = 0;

	maps = read_maps(t, &nmaps, NULL, err);
	if (!maps)
		return -1;
	for (size_t i = 0; i < t->img.nobjs && !only_new_objects; i++) {
		struct obj *o = &t->img.objs[i];

		if (!o->base || o->is_vdso || o->is_ldso || is_sampler(o->path))
			continue;
		if (o == own && !strstr(o->path, "/libc.so"))
			continue;
		object_slots(t, o, orig, maps, nmaps, out, n);
	}
	/* objects loaded since heapctl read the maps (libgcc_s, loaded for the unwinder) */
	for (size_t i = 0; i < nmaps; i++) {
		struct obj o = { .base = maps[i].lo, .path = maps[i].path };
		struct hc_err e = { 0 };
		bool known = false;

		for (size_t j = 0; j < t->img.nobjs && !known; j++)
			known = t->img.objs[j].base == maps[i].lo;
		if (!maps[i].elf_start || known || strstr(o.path, "/ld-linux") ||
		    is_sampler(o.path) ||
		    obj_read_phdrs(&t->img, &o, &e) != 0)
			continue;
		object_slots(t, &o, orig, maps, nmaps, out, n);
	}
	free_maps(maps, nmaps);
	if (in->state && in->s.nslots) {
		size_t len = (size_t)in->s.nslots * sizeof(*have);

		have = malloc(len);
		if (!have || mem_read(t->img.pid, t->img.memfd, in->s.slots, have, len, err) < 0) {
			free(have);
			return -1;
		}
	}
	for (unsigned i = 0; i < *n; i++) {
		bool dup = false;

		for (unsigned j = 0; have && j < in->s.nslots && !dup; j++)
			dup = have[j].addr == out[i].addr;
		if (!dup)
			out[k++] = out[i];
	}
	*n = k;
	free(have);
	/* by address: the sampler opens each read-only page once */
	qsort(out, *n, sizeof(*out), by_addr);
	return 0;
}

/* ---- loading --------------------------------------------------------------------------- */

/*
 * The target's fds that are a sampler's memfd: a heapctl killed between
 * its memfd_create and its close (the load's one window) left them.  Up
 * to max of them into fds; returns how many.
 */
static unsigned memfds(const struct hc_target *t, int *fds, unsigned max)
{
	char dir[96], path[160], link[128];
	struct dirent *d;
	unsigned n = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/fd", t->img.proc);
	dp = opendir(dir);
	while (dp && n < max && (d = readdir(dp))) {
		ssize_t len;

		if (d->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) < 0)
			continue;
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0 && (link[len] = '\0', !strncmp(link, "/memfd:" HCS_NAME, 7 + strlen(HCS_NAME))))
			fds[n++] = atoi(d->d_name);
	}
	if (dp)
		closedir(dp);
	return n;
}

/*
 * Close what memfds() finds, once the thread is borrowed: the per-target
 * lock is held then, so no other heapctl is inside a load, and the program
 * never knew these fds.  Looked for again under the lock before closing.
 */
static int reclaim_memfds(struct hc_target *t, struct hc_err *err)
{
	int fds[16];
	unsigned n = memfds(t, fds, 16);

	if (!n || !call_scratch(t, 8, err))
		return err_isset(err) ? -1 : 0;
	n = memfds(t, fds, 16);
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = (uint64_t)fds[i];
		int64_t ret;

		if (call_syscall(t, t->img.arch->nr_close, &a, 1, &ret, err) < 0)
			return -1;
		pr_info("sampler: closed fd %d, left by a heapctl killed while loading", fds[i]);
	}
	return 0;
}

static uint64_t libc_fn(struct hc_target *t, const char *name)
{
	for (size_t i = 0; i < t->img.nobjs; i++) {
		struct obj *o = &t->img.objs[i];
		struct hc_err e = { 0 };
		const struct sym *s;

		if (!o->base || !strstr(o->path, "/libc.so") || sym_load(&t->img, o, false, &e) < 0)
			continue;
		s = sym_by_name(o, name);
		if (s)
			return s->raddr;
	}
	return 0;
}

/* Write the sampler's bytes to fd, which is closed. */
static int write_sampler(struct hc_target *t, int fd, struct hc_err *err)
{
	size_t len = (size_t)(hc_sampler_so_end - hc_sampler_so), done = 0;

	while (done < len) {
		ssize_t w = write(fd, hc_sampler_so + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;

			close(fd);
			return err_set(err, HC_E_IO, e, "cannot write the sampler for pid %d: %s", t->img.pid,
				       strerror(e));
		}
		done += (size_t)w;
	}
	close(fd);
	return 0;
}

/* dlopen(path) in the target; 1 loaded (*handle set), 0 refused (why filled), -1 error. */
static int remote_dlopen(struct hc_target *t, const char *path, uint64_t *handle, char *why,
			 size_t whylen, struct hc_err *err)
{
	uint64_t f_dlopen = libc_fn(t, "dlopen"), f_dlerror = libc_fn(t, "dlerror");
	uint64_t a[2], msg = 0;

	*handle = 0;
	a[0] = call_strdup(t, path, err);
	a[1] = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
	if (!a[0] || call_fn(t, f_dlopen, a, 2, handle, NULL, NULL, err) < 0)
		return -1;
	if (*handle)
		return 1;
	why[0] = '\0';
	if (f_dlerror && call_fn(t, f_dlerror, NULL, 0, &msg, NULL, NULL, err) == 0 && msg)
		(void)call_read_str(t, msg, why, whylen, err);
	return err_isset(err) ? -1 : 0;
}

/*
 * The target's fd, which must still be the memfd it has just made for
 * heapctl.  pidfd_getfd() hands over the target's own open file, with the
 * access it was opened with: a descriptor that another thread of the
 * target dup2()ed over it (an O_PATH or read-only one of a file it may not
 * write) cannot be written through.  Opening /proc/PID/fd/N instead would
 * open whatever file is there afresh, with heapctl's rights.  It must
 * also be what heapctl made: a memfd (only shmem answers F_GET_SEALS),
 * unlinked, empty, under heapctl's name, open for writing; otherwise the
 * load is refused, with no fallback.  An fd; -1 with err set, or with err
 * clear and why filled when this kernel has no pidfd_getfd() (5.6).
 */
static int take_memfd(struct hc_target *t, int64_t fd, char *why, size_t whylen,
		      struct hc_err *err)
{
	char self[64], link[64];
	int pidfd = (int)syscall(SYS_pidfd_open, t->img.pid, 0), lfd = -1, e;
	struct stat st;
	ssize_t n;

	if (pidfd >= 0) {
		lfd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
		e = errno;
		close(pidfd);
		errno = e;
	}
	if (lfd < 0) {
		if (errno == ENOSYS) {
			snprintf(why, whylen, "pidfd_getfd: not in this kernel");
			return -1;
		}
		return err_set(err, HC_E_PERM, errno, "cannot take the sampler's memfd (fd %" PRId64
			       ") from pid %d: %s", fd, t->img.pid, strerror(errno));
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", lfd);
	n = readlink(self, link, sizeof(link) - 1);
	if (n > 0)
		link[n] = '\0';
	if (fstat(lfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0 ||
	    fcntl(lfd, F_GET_SEALS) < 0 || (fcntl(lfd, F_GETFL) & O_ACCMODE) != O_RDWR || n <= 0 ||
	    strcmp(link, "/memfd:" HCS_NAME " (deleted)")) {
		close(lfd);
		return err_sethint(err, HC_E_UNSAFE, 0,
				   "the process replaces its descriptors while heapctl loads the "
				   "sampler; heapctl wrote nothing: use --sampler native where the "
				   "allocator can profile",
				   "fd %" PRId64 " of pid %d is no longer the memfd heapctl made for its "
				   "sampler: another thread replaced it", fd, t->img.pid);
	}
	return lfd;
}

/*
 * From a memfd made in the target: nothing touches its filesystem.  1
 * loaded, 0 not possible here (memfd_create refused, /proc not mounted in
 * its namespace, memfds not executable), -1 error.
 */
static int load_memfd(struct hc_target *t, char *why, size_t whylen, struct hc_err *err)
{
	uint64_t a[2], handle, name = call_strdup(t, HCS_NAME, err);
	int64_t fd, ret;
	char path[96];
	int lfd, rc;

	if (!name)
		return -1;
	a[0] = name;
	a[1] = MFD_CLOEXEC | 0x0010u; /* MFD_EXEC: with vm.memfd_noexec, ask for it */
	if (call_syscall(t, t->img.arch->nr_memfd_create, a, 2, &fd, err) < 0)
		return -1;
	if (fd == -EINVAL) { /* before Linux 6.3, no MFD_EXEC */
		a[1] = MFD_CLOEXEC;
		if (call_syscall(t, t->img.arch->nr_memfd_create, a, 2, &fd, err) < 0)
			return -1;
	}
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create: %s", strerror((int)-fd));
		return 0;
	}
	lfd = take_memfd(t, fd, why, whylen, err);
	if (lfd < 0)
		rc = err_isset(err) ? -1 : 0;
	else if (write_sampler(t, lfd, err) < 0)
		rc = -1;
	else {
		fd_path(path, sizeof(path), fd);
		rc = remote_dlopen(t, path, &handle, why, whylen, err);
		if (rc > 0)
			rename_loaded(t, handle, path);
	}
	/* the memfd goes whatever happened, a request to stop included */
	a[0] = (uint64_t)fd;
	t->cancel_hold++;
	if (call_syscall(t, t->img.arch->nr_close, a, 1, &ret, rc < 0 ? &(struct hc_err){ 0 } : err) < 0)
		rc = -1;
	t->cancel_hold--;
	return rc;
}

/*
 * From a file in a private directory in the target's root (its mount
 * namespace), removed again at once; the guardian removes it should
 * heapctl die meanwhile.  The file is 0444 in the target's 0700 directory.
 */
static int load_file(struct hc_target *t, char *why, size_t whylen, struct hc_err *err)
{
	struct troot_dir d = TROOT_DIR_INIT;
	char path[PATH_MAX + 32];
	int fd, rc;

	if (troot_mkdir(t->img.pid, &d, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.so", d.path, HCS_NAME);
	fd = troot_create(&d, HCS_NAME ".so", 0444);
	if (fd < 0)
		rc = err_set(err, HC_E_IO, errno, "cannot write the sampler into pid %d's %s: %s",
			     t->img.pid, d.path, strerror(errno));
	else if (write_sampler(t, fd, err) < 0)
		rc = -1;
	else
		rc = remote_dlopen(t, path, &(uint64_t){ 0 }, why, whylen, err);
	troot_remove(&d);
	return rc;
}

static int load(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	char why[256] = "", why2[256] = "";
	int r;

	r = load_memfd(t, why, sizeof(why), err);
	if (r == 0) {
		pr_info("sampler: no memfd (%s): a file in the process's root instead", why);
		r = load_file(t, why2, sizeof(why2), err);
	}
	if (r < 0)
		return -1;
	if (r == 0)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "a process with little static TLS left, or whose temporary "
				   "directories are all noexec, cannot load it; use --sampler native "
				   "where the allocator can profile",
				   "pid %d could not load heapctl's sampler: %s; %s", t->img.pid, why, why2);
	in->loaded_now = true; /* and inj_probe() reads the maps again to find it */
	if (inj_probe(t, in, err) <= 0)
		return err_isset(err) ? -1 :
		       err_set(err, HC_E_INTERNAL, 0, "the sampler is loaded in pid %d but cannot be found",
			       t->img.pid);
	pr_info("sampler: loaded at 0x%" PRIx64 ", state at 0x%" PRIx64, in->base, in->state);
	return 0;
}

/* ---- switching ------------------------------------------------------------------------- */

static int write_field(struct hc_target *t, struct inj *in, size_t off, const void *v, size_t len,
		       struct hc_err *err)
{
	return call_write(t, in->state + off, v, len, err);
}

/*
 * jemalloc's experimental.hooks.install with the sampler's hooks_t, its
 * handle kept in the sampler's state; or .remove with that handle.
 */
static int je_hooks(struct hc_target *t, struct inj *in, uint64_t mallctl, bool install,
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
				   "jemalloc in pid %d refused experimental.hooks.%s: %s", t->img.pid,
				   install ? "install" : "remove", strerror((int)ret));
	if (!install && call_write(t, handle, &zero, 8, err) < 0)
		return -1;
	return read_state(t, in, err);
}

/* rescan: only hook what is new, and make no remote call if nothing is */
void inj_free(struct inj *in)
{
	if (in)
		free(in->prep.slots);
	free(in);
}

int inj_prepare(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	struct obj *own = obj_malloc_owner(&t->img);
	struct inj_prep *p = &in->prep;

	p->ready = false;
	p->je_mallctl = 0;
	p->n = 0;
	if (!libc_fn(t, "dlopen"))
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "start it with the allocator's own profiler "
				   "(jemalloc: MALLOC_CONF=prof:true,prof_active:false)",
				   "pid %d has no dynamic loader or no dlopen in its libc (static, or glibc "
				   "before 2.34): heapctl's sampler cannot be loaded into it", t->img.pid);
	if (!p->slots && !(p->slots = calloc(HCS_MAXSLOTS, sizeof(*p->slots))))
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	/*
	 * No GOT slot leads to an allocator linked into the executable (a Rust
	 * program's _rjem_ jemalloc, or one that exports malloc itself); a
	 * jemalloc's own hooks (5.2 and later) do.  Slots elsewhere stay as
	 * they are: they may bind to it too, and would count twice.
	 */
	if (t->where.allocator && !strcmp(t->where.allocator, "jemalloc") && t->where.ctl_raddr &&
	    obj_at(&t->img, t->where.ctl_raddr) && obj_at(&t->img, t->where.ctl_raddr)->is_exe) {
		p->je_mallctl = t->where.ctl_raddr;
		p->ready = true;
		return 0;
	}
	if (own && own->is_exe)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "start the process with the allocator's own profiler",
				   "the allocator is linked into %s: heapctl's sampler hooks allocators "
				   "in shared libraries, and jemalloc through its own hooks, only",
				   own->path);
	if (!own)
		return err_set(err, HC_E_NO_ALLOC, 0, "no object in pid %d defines malloc", t->img.pid);
	find_originals(t, own, p->orig);
	if (!p->orig[HCS_H_MALLOC] || !p->orig[HCS_H_FREE])
		return err_set(err, HC_E_NO_SYM, 0, "malloc or free has no definition in pid %d", t->img.pid);
	p->n = 0;
	if (new_slots(t, in, p->orig, p->slots, &p->n, false, err) < 0)
		return -1;
	p->ready = true;
	return 0;
}

/*
 * Hook what is not hooked yet, then start sampling at interval (0: the
 * last one); with rescan, only hook what was loaded since, and leave
 * sampling as it is.
 */
static int turn_on(struct hc_target *t, struct inj *in, uint64_t interval, bool rescan,
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
	if (!in->state && load(t, in, err) < 0)
		return -1;
	if (!in->s.initialised) {
		uint64_t text[2] = { in->text_lo, in->text_hi };

		if (write_field(t, in, offsetof(struct hcs_state, orig), orig, sizeof(p->orig), err) < 0 ||
		    write_field(t, in, offsetof(struct hcs_state, text_lo), text, sizeof(text), err) < 0 ||
		    write_field(t, in, offsetof(struct hcs_state, pagesize), &pagesz, 8, err) < 0 ||
		    call_fn(t, in->s.fn_init, NULL, 0, &ret, NULL, NULL, err) < 0)
			return -1;
		if ((int)ret == HCS_ERR_UNWIND) {
			return err_sethint(err, HC_E_UNSUPPORTED, 0,
					   "install libgcc-s1 in the process's root",
					   "heapctl's sampler found no stack unwinder in pid %d "
					   "(libgcc_s.so.1)", t->img.pid);
		}
		/* loading may have brought libgcc_s: its slots too, on top of the rest */
		if (!p->je_mallctl && new_slots(t, in, orig, slots, &n, true, err) < 0)
			return -1;
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

int inj_on(struct hc_target *t, struct inj *in, uint64_t interval, struct hc_err *err)
{
	if (turn_on(t, in, interval, false, err) < 0)
		return -1;
	in->switched = true;
	return 0;
}

bool inj_watching(const struct inj *in)
{
	return in->state && (in->s.hooked || in->s.je_handle);
}

int inj_rescan(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	if (!inj_watching(in))
		return 0;
	return turn_on(t, in, 0, true, err);
}

/* Sampling stops; the hooks stay, so what was sampled stays right. */
int inj_off(struct hc_target *t, struct inj *in, struct hc_err *err)
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
int inj_reset(struct hc_target *t, struct inj *in, struct hc_err *err)
{
	uint64_t ret;

	if (!in->state)
		return 0;
	if (in->s.enabled)
		return call_fn(t, in->s.fn_reset, NULL, 0, &ret, NULL, NULL, err) < 0 ? -1 :
										   read_state(t, in, err);
	if (reclaim_memfds(t, err) < 0)
		return -1;
	if (in->s.je_handle && je_hooks(t, in, t->where.ctl_raddr, false, err) < 0)
		return -1;
	if (call_fn(t, in->s.fn_unpatch, NULL, 0, &ret, NULL, NULL, err) < 0 || read_state(t, in, err) < 0)
		return -1;
	if (ret)
		pr_warn("sampler: %u GOT slots were changed by the process since: left as they are",
			(unsigned)ret);
	in->switched = true;
	return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

/*
 * The file mapped at a, from the maps read now: the last object start at
 * or below a's mapping.  For an object loaded after the target was opened
 * (libgcc_s, which the sampler's own start loads), or NULL.
 */
static const char *path_now(const struct range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi) {
			for (size_t j = i + 1; j-- > 0;)
				if (r[j].path)
					return r[j].path;
			break;
		}
	return NULL;
}

int inj_status(struct hc_target *t, struct inj *in, struct hc_sampler *out, struct hc_err *err)
{
	struct hcs_slot *sl = NULL;
	struct range *now = NULL;
	size_t nnow = 0;

	memset(out, 0, sizeof(*out));
	if (!in->state)
		return 0;
	out->installed = true;
	out->enabled = in->s.enabled;
	out->kept = !in->s.enabled && inj_watching(in);
	out->loaded_now = in->loaded_now;
	out->switched = in->switched;
	out->interval = in->s.interval;
	out->samples = in->s.samples;
	out->live = in->s.live_count;
	out->stacks = in->s.nstacks;
	out->dropped = in->s.dropped_live + in->s.dropped_stacks;
	out->no_stack = in->s.unwind_short;
	if (in->s.je_handle) {
		out->hooks++;
		out->nobjs = 1;
		out->objs[0].hooks = 1;
		snprintf(out->objs[0].path, sizeof(out->objs[0].path), "jemalloc's hooks in %s",
			 t->where.object ? t->where.object : "?");
	}
	if (!in->s.nslots)
		return 0;
	sl = malloc(in->s.nslots * sizeof(*sl));
	if (!sl || mem_read(t->img.pid, t->img.memfd, in->s.slots, sl, in->s.nslots * sizeof(*sl), err) < 0) {
		free(sl);
		return err_isset(err) ? -1 : err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < in->s.nslots && i < HCS_MAXSLOTS; i++) {
		const char *path;
		struct obj *o;
		unsigned k;

		if (sl[i].state == HCS_SLOT_CHANGED)
			out->lost++;
		if (sl[i].state != HCS_SLOT_PATCHED)
			continue;
		out->hooks++;
		o = obj_at(&t->img, sl[i].addr);
		path = o ? o->path : NULL;
		if (!path && !now)
			now = read_maps(t, &nnow, NULL, &(struct hc_err){ 0 });
		if (!path && now)
			path = path_now(now, nnow, sl[i].addr);
		if (!path)
			path = "?";
		for (k = 0; k < out->nobjs; k++)
			if (!strncmp(out->objs[k].path, path, sizeof(out->objs[k].path) - 1))
				break;
		if (k == out->nobjs) {
			if (k == HC_SAMPLER_MAX_OBJS)
				continue;
			snprintf(out->objs[k].path, sizeof(out->objs[k].path), "%s", path);
			out->nobjs++;
		}
		out->objs[k].hooks++;
	}
	if (now)
		free_maps(now, nnow);
	free(sl);
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct inj_site *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_bytes(const void *a, const void *b)
{
	const struct inj_site *x = a, *y = b;

	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

size_t inj_sites(const struct hcs_live *live, size_t nlive, const struct hcs_stack *st,
		 size_t nst, struct inj_site *out, struct inj_site *tot)
{
	size_t na = 0, k = 0;

	memset(tot, 0, sizeof(*tot));
	for (size_t i = 0; i < nlive; i++) {
		uint32_t id = (uint32_t)(live[i].meta & 0xffffff);

		if (live[i].ptr <= HCS_TOMB || !live[i].meta || !id || id >= nst || !st[id].nframes ||
		    st[id].nframes > HCS_MAXFRAMES)
			continue;
		out[na++] = (struct inj_site){ id, 1, live[i].meta >> 24 };
	}
	qsort(out, na, sizeof(*out), by_id);
	for (size_t i = 0; i < na; i++) {
		if (k && out[k - 1].id == out[i].id) {
			out[k - 1].objs++;
			out[k - 1].bytes += out[i].bytes;
		} else {
			out[k++] = out[i];
		}
		tot->objs++;
		tot->bytes += out[i].bytes;
	}
	qsort(out, k, sizeof(*out), by_bytes);
	return k;
}

void inj_write_sites(FILE *f, uint64_t interval, const struct inj_site *sites, size_t n,
		     const struct inj_site *tot, const struct hcs_stack *st)
{
	fprintf(f, "heap_v2/%" PRIu64 "\n  t*: %" PRIu64 ": %" PRIu64 " [0: 0]\n", interval,
		tot->objs, tot->bytes);
	for (size_t i = 0; i < n; i++) {
		const struct hcs_stack *s = &st[sites[i].id];

		fputc('@', f);
		for (uint32_t k = 0; k < s->nframes; k++)
			fprintf(f, " 0x%" PRIx64, s->frames[k]);
		fprintf(f, "\n  t*: %" PRIu64 ": %" PRIu64 " [0: 0]\n", sites[i].objs, sites[i].bytes);
	}
}

/*
 * jemalloc's heap_v2: the sampled counts and sizes per stack, which
 * readers un-bias with the period in the header (as jeprof does), then the
 * target's maps.
 */
int inj_dump(struct hc_target *t, struct inj *in, const char *out, struct hc_err *err)
{
	size_t nlive = 1u << HCS_LIVE_BITS, nst, na;
	struct hcs_live *live = malloc(nlive * sizeof(*live));
	struct hcs_stack *st = NULL;
	struct inj_site *ag = NULL, tot;
	char path[96], buf[8192];
	FILE *f = NULL, *maps = NULL;
	int rc = -1;

	if (read_state(t, in, err) < 0)
		goto done;
	nst = in->s.nstacks + 1 < HCS_STACKS ? in->s.nstacks + 1 : HCS_STACKS;
	st = malloc(nst * sizeof(*st));
	ag = malloc(nlive * sizeof(*ag));
	if (!live || !st || !ag) {
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		goto done;
	}
	if (mem_read(t->img.pid, t->img.memfd, in->s.live, live, nlive * sizeof(*live), err) < 0 ||
	    mem_read(t->img.pid, t->img.memfd, in->s.stacks, st, nst * sizeof(*st), err) < 0)
		goto done;
	na = inj_sites(live, nlive, st, nst, ag, &tot);
	f = cred_out_fopen(out);
	if (!f) {
		err_set(err, HC_E_IO, errno, "cannot write %s: %s", out, strerror(errno));
		err->local = true;
		goto done;
	}
	inj_write_sites(f, in->s.interval, ag, na, &tot, st);
	fputs("\nMAPPED_LIBRARIES:\n", f);
	snprintf(path, sizeof(path), "%s/maps", t->img.proc);
	maps = fopen(path, "re");
	if (maps) {
		size_t r;

		while ((r = fread(buf, 1, sizeof(buf), maps)) > 0)
			fwrite(buf, 1, r, f);
		fclose(maps);
	}
	if (ferror(f) | (fclose(f) != 0)) {
		f = NULL;
		err_set(err, HC_E_IO, errno, "cannot write %s: %s", out, strerror(errno));
		err->local = true;
		goto done;
	}
	f = NULL;
	rc = 0;
done:
	if (f)
		fclose(f);
	free(live);
	free(st);
	free(ag);
	return rc;
}
