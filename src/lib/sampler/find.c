// SPDX-License-Identifier: MIT
/*
 * heapctl's injected sampler, found in a target: its mappings, its state
 * (struct hcs_state, by its magic), and the names the loader gives it.
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
#include "log.h"
#include "mem.h"
#include "engine.h"
#include "image.h"
#include "troot.h"

/* ---- finding a loaded sampler ------------------------------------------------------ */

#define HOOK_NAME(id, name) name,
const char *const hook_names[HCS_NHOOK] = { HCS_HOOKS(HOOK_NAME) };
#undef HOOK_NAME

/* Its mappings: from the memfd, or from the file load_file() made (both deleted by then). */
bool is_sampler(const char *path)
{
	return strstr(path, "/memfd:" HCS_NAME) || strstr(path, "/" HCS_NAME ".so");
}


void free_maps(struct range *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		free(r[i].path);
	free(r);
}

/* The target's mappings; NULL on failure (err set). */
struct range *read_maps(struct engine *t, size_t *n, struct inj *in, struct hc_err *err)
{
	char path[96], line[PATH_MAX + 128];
	struct range *r = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps", t->img->proc);
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

int prot_at(const struct range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return r[i].prot;
	return -1;
}

/* The state in the sampler's writable data, found by its magic. */
int find_state(struct engine *t, struct inj *in, struct hc_err *err)
{
	for (unsigned i = 0; i < in->ndata && !in->state; i++) {
		size_t len = in->data[i].hi - in->data[i].lo;
		uint64_t *buf;

		if (len > (1u << 20))
			continue;
		buf = malloc(len);
		if (!buf)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (mem_read(t->img->pid, t->img->memfd, in->data[i].lo, buf, len, err) < 0) {
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
						   "pid %d holds a sampler of another heapctl version", t->img->pid);
			}
		}
		free(buf);
	}
	return 0;
}

int read_state(struct engine *t, struct inj *in, struct hc_err *err)
{
	return mem_read(t->img->pid, t->img->memfd, in->state, &in->s, sizeof(in->s), err) < 0 ? -1 : 0;
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

void fd_path(char *out, size_t outlen, int64_t fd)
{
	char num[24];
	int pad = (int)(sizeof(LOADED_NAME) - sizeof(FD_PREFIX)) -
		  snprintf(num, sizeof(num), "%" PRId64, fd);

	snprintf(out, outlen, FD_PREFIX "%.*s%s", pad > 0 ? pad : 0,
		 "////////////////////////////////", num);
}

/* Overwrite the bytes at raddr that hold given (NUL included) with name, no longer. */
static bool rename_at(struct engine *t, uint64_t raddr, const char *given, const char *name)
{
	size_t len = strlen(given) + 1;
	char buf[64];

	return raddr && len <= sizeof(buf) && strlen(name) < len &&
	       mem_read(t->img->pid, t->img->memfd, raddr, buf, len, &(struct hc_err){ 0 }) == 0 &&
	       !memcmp(buf, given, len) &&
	       mem_write(t->img->memfd, raddr, name, strlen(name) + 1, &(struct hc_err){ 0 }) == 0;
}

/* l_name of link map entry map: its second word (glibc's <link.h>, musl's struct dso) */
static uint64_t l_name_of(struct engine *t, uint64_t map)
{
	uint64_t p = 0;

	return mem_read(t->img->pid, t->img->memfd, map + 8, &p, 8, &(struct hc_err){ 0 }) ? 0 : p;
}

/* Rename the object at link map entry map, which the loader calls given. */
void rename_loaded(struct engine *t, uint64_t map, const char *given)
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
	while (have < sizeof(w) && mem_read(t->img->pid, t->img->memfd, map + have, (char *)w + have, chunk,
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
void rename_stale(struct engine *t)
{
	for (size_t i = 0; i < t->img->nobjs; i++) {
		const struct obj *o = &t->img->objs[i];
		uint64_t l_name;
		char name[64];

		if (!o->link_map || !is_sampler(o->path) || !(l_name = l_name_of(t, o->link_map)) ||
		    mem_read(t->img->pid, t->img->memfd, l_name, name, sizeof(FD_PREFIX) + 32,
			     &(struct hc_err){ 0 }))
			continue;
		name[sizeof(FD_PREFIX) + 32] = '\0';
		if (!strncmp(name, FD_PREFIX, strlen(FD_PREFIX)))
			rename_loaded(t, o->link_map, name);
	}
}
