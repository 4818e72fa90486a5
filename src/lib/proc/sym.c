// SPDX-License-Identifier: MIT
/*
 * Objects and symbols of a live process, from /proc/PID/maps and libelf.
 *
 * Files are opened the way the target sees them (/proc/PID/map_files, then
 * <path> resolved in /proc/PID/root), so processes in other mount namespaces
 * work, and only as regular files (obj_open(), file_open()).  The
 * load bias comes from the program headers found in the target's memory,
 * not from "start - offset", which is wrong when p_vaddr != p_offset.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "debuginfo.h"
#include "linkmap.h"
#include "log.h"
#include "mem.h"
#include "target.h"
#include "troot.h"

/* Up to 16 hex digits at *pp into *v, *pp moved past them; false if none. */
static bool hex_field(const char **pp, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	int n = 0;

	for (;; p++, n++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			*p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

		if (d < 0 || n == 16)
			break;
		x = x << 4 | (uint64_t)d;
	}
	*pp = p;
	*v = x;
	return n > 0 && (n < 16 || *p < '0' || (*p > '9' && *p < 'a') || *p > 'f');
}

/*
 * "lo-hi perms off dev inode   path" (proc(5)), by hand: a process with a
 * thousand threads has thousands of lines, read at every open, and
 * sscanf() made that a visible part of the round trip.
 */
int maps_parse_line(const char *line, struct mapline *m)
{
	const char *p = line;
	uint64_t lo, hi, off, inode = 0;
	size_t n;

	if (!hex_field(&p, &lo) || *p++ != '-' || !hex_field(&p, &hi) || *p++ != ' ')
		return -1;
	for (n = 0; n < 4 && p[n] && p[n] != ' ' && p[n] != '\n'; n++)
		m->perms[n] = p[n];
	if (n != 4 || p[4] != ' ')
		return -1;
	m->perms[4] = 0;
	p += 5;
	if (!hex_field(&p, &off) || *p++ != ' ')
		return -1;
	while (*p && *p != ' ' && *p != '\n') /* dev */
		p++;
	if (*p++ != ' ' || *p < '0' || *p > '9')
		return -1;
	for (n = 0; *p >= '0' && *p <= '9' && n < 20; p++, n++)
		inode = inode * 10 + (uint64_t)(*p - '0');
	if (*p && *p != ' ' && *p != '\n')
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, "\n");
	if (n >= sizeof(m->path))
		n = sizeof(m->path) - 1;
	memcpy(m->path, p, n);
	m->path[n] = 0;
	m->lo = lo;
	m->hi = hi;
	m->off = off;
	m->inode = (unsigned long)inode;
	return 0;
}

static struct obj *obj_find_path(struct image *t, const char *path)
{
	for (size_t i = 0; i < t->nobjs; i++)
		if (!strcmp(t->objs[i].path, path))
			return &t->objs[i];
	return NULL;
}

/* Read the ELF and program headers from the target at o->base. */
int obj_read_phdrs(struct image *t, struct obj *o, struct hc_err *err)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	long pagesz = sysconf(_SC_PAGESIZE);
	bool have_bias = false;

	if (mem_read(t->pid, t->memfd, o->base, &eh, sizeof(eh), err) < 0)
		return -1;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return 1; /* not ELF: a mapped data file */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != t->arch->e_machine) {
		if (o->is_exe)
			return err_sethint(err, HC_E_UNSUPPORTED, 0,
					   "use a heapctl built for the target's architecture",
					   "pid %d is not a 64-bit %s process", t->pid,
					   t->arch->name);
		return 1;
	}
	if (eh.e_phnum == 0 || eh.e_phnum > 64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return 1;
	if (mem_read(t->pid, t->memfd, o->base + eh.e_phoff, ph, eh.e_phnum * sizeof(ph[0]), err))
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_bias &&
		    (ph[i].p_offset & ~(uint64_t)(pagesz - 1)) == 0) {
			o->bias = o->base - (ph[i].p_vaddr & ~(uint64_t)(pagesz - 1));
			have_bias = true;
		}
	}
	if (!have_bias)
		return 1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			o->eh_hdr = ph[i].p_vaddr + o->bias;
			o->eh_hdr_len = ph[i].p_memsz;
		}
		if (ph[i].p_type == PT_DYNAMIC) {
			o->dynamic = ph[i].p_vaddr + o->bias;
			o->dynamic_len = ph[i].p_memsz;
		}
	}
	return 0;
}

int file_open(pid_t pid, const char *path, int nofollow, struct stat *st)
{
	struct stat sb;

	if (!st)
		st = &sb;
	/* in the target's root: with its rights, and the same checks (troot.h) */
	if (pid > 0)
		return troot_open(pid, path, nofollow, st);
	/* O_PATH first: a FIFO would block open(), a device's open() has effects */
	return troot_reopen_reg(open(path, O_PATH | O_CLOEXEC | nofollow), st);
}

int obj_open(const struct obj *o, struct stat *st)
{
	if (o->is_vdso) {
		errno = ENOENT;
		return -1;
	}
	if (o->open_path)
		return file_open(0, o->open_path, 0, st);
	/*
	 * /proc/PID/map_files/LO-HI is the very file mapped there, whatever its
	 * name became since; following it needs CAP_SYS_ADMIN
	 * (CAP_CHECKPOINT_RESTORE since Linux 5.9, fs/proc/base.c).  Tried when
	 * the file is wanted, not for every object mapped: without it, or once
	 * the mapping is gone, the name is looked up in the target's root.
	 * Never as a host path: the name is the target's.
	 */
	if (o->map_hi) {
		char p[128];
		int fd;

		snprintf(p, sizeof(p), "%s/map_files/%llx-%llx", o->proc,
			 (unsigned long long)o->map_lo, (unsigned long long)o->map_hi);
		fd = file_open(0, p, 0, st);
		if (fd >= 0)
			return fd;
	}
	if (o->is_exe) {
		/*
		 * The executable is the very file /proc/PID/exe links to, and
		 * following that link is a ptrace read check only, no
		 * CAP_SYS_ADMIN: it reaches an executable replaced or deleted
		 * since it started (a package upgrade), which its name no
		 * longer does.  Not there when the leader has exited.
		 */
		char exe[64];
		int fd;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)o->pid);
		fd = file_open(0, exe, 0, st);
		if (fd >= 0)
			return fd;
	}
	/* the name maps shows is the mapped file's own, never a link */
	return file_open(o->pid, o->path, O_NOFOLLOW, st);
}

Elf *sym_elf_open(int fd)
{
	Elf *elf;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	/* all of it in memory (mapped, or read if mmap failed): the fd is not needed again */
	if (elf && elf_cntl(elf, ELF_C_FDREAD) < 0) {
		elf_end(elf);
		elf = NULL;
	}
	close(fd);
	return elf;
}

static void link_order(struct image *t);

static void vma_set(struct vma *v, const struct mapline *m)
{
	v->lo = m->lo;
	v->hi = m->hi;
	v->flags = (m->perms[2] == 'x' ? VMA_X : 0) | (!m->inode && !m->path[0] ? VMA_ANON : 0) |
		   (!strcmp(m->path, "[stack]") ? VMA_STACK : 0);
}

static int vma_add(struct image *t, const struct mapline *m)
{
	static const size_t step = 256;
	struct vma *v;

	if (t->nvmas % step == 0) {
		v = realloc(t->vmas, (t->nvmas + step) * sizeof(*v));
		if (!v)
			return -1;
		t->vmas = v;
	}
	vma_set(&t->vmas[t->nvmas++], m);
	return 0;
}

static int maps_query(int fd, uint64_t addr, uint64_t flags, struct mapline *m);

const struct vma *vma_at(struct image *t, uint64_t raddr)
{
	size_t lo = 0, hi = t->nvmas;
	struct mapline m;
	struct vma *v;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (raddr < t->vmas[mid].lo)
			hi = mid;
		else if (raddr >= t->vmas[mid].hi)
			lo = mid + 1;
		else
			return &t->vmas[mid];
	}
	if (!t->vmas_partial)
		return NULL;
	/* read by PROCMAP_QUERY: a thread's stack, say, was not asked for yet */
	for (size_t i = 0; i < VMA_ASKED; i++)
		if (raddr >= t->vasked[i].lo && raddr < t->vasked[i].hi)
			return &t->vasked[i];
	if (maps_query(t->mapsfd, raddr, 0, &m) != 1)
		return NULL;
	v = &t->vasked[t->nasked++ % VMA_ASKED];
	vma_set(v, &m);
	return v;
}

/* One mapping maps_load() learnt of: a mapping, and an object's if it is a file's (or the vDSO). */
static int map_line(struct image *t, const struct mapline *m, const char *exe)
{
	struct obj *o;

	if (vma_add(t, m) < 0)
		return -1;
	if (!(m->inode && m->path[0] == '/') && strcmp(m->path, "[vdso]"))
		return 0;
	o = obj_find_path(t, m->path);
	if (!o) {
		struct obj *no = realloc(t->objs, (t->nobjs + 1) * sizeof(*no));

		if (!no)
			return -1;
		t->objs = no;
		o = &t->objs[t->nobjs++];
		memset(o, 0, sizeof(*o));
		o->path = strdup(m->path);
		if (!o->path)
			return -1;
		o->pid = t->pid;
		o->lo = m->lo;
		o->is_vdso = !strcmp(m->path, "[vdso]");
		o->is_exe = exe[0] && !strcmp(m->path, exe);
		o->is_ldso = strstr(m->path, "/ld-linux") || strstr(m->path, "/ld64.so");
		if (!o->is_vdso) {
			o->proc = t->proc;
			o->map_lo = m->lo;
			o->map_hi = m->hi;
		}
	}
	if (m->off == 0 && !o->base)
		o->base = m->lo;
	if (m->hi > o->hi)
		o->hi = m->hi;
	if (m->perms[2] == 'x') {
		if (!o->text_lo || m->lo < o->text_lo)
			o->text_lo = m->lo;
		if (m->hi > o->text_hi)
			o->text_hi = m->hi;
	}
	return 0;
}

/*
 * PROCMAP_QUERY (Linux 6.11, <linux/fs.h>): the mapping at an address, or
 * the next one with the flags asked for, without the kernel printing
 * every other mapping.  A process with a thousand threads has two
 * thousand of them, nearly all stacks, and printing /proc/PID/maps cost
 * most of a round trip there.
 */
struct procmap_q {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_Q _IOWR('f', 17, struct procmap_q)
#define PMQ_R 0x01
#define PMQ_W 0x02
#define PMQ_X 0x04
#define PMQ_SHARED 0x08
#define PMQ_NEXT 0x10 /* the mapping at the address, or the next one */
#define PMQ_FILE 0x20 /* file-backed mappings only */

/* The mapping at (or, with PMQ_NEXT, after) addr: 1, 0 for none, -1 with errno. */
static int maps_query(int fd, uint64_t addr, uint64_t flags, struct mapline *m)
{
	struct procmap_q q = { .size = sizeof(q), .query_flags = flags, .query_addr = addr,
			       .vma_name_size = sizeof(m->path),
			       .vma_name_addr = (uint64_t)(uintptr_t)m->path };

	if (ioctl(fd, PROCMAP_Q, &q) < 0)
		return errno == ENOENT ? 0 : -1;
	m->lo = q.vma_start;
	m->hi = q.vma_end;
	m->off = q.vma_offset;
	m->inode = (unsigned long)q.inode;
	m->perms[0] = q.vma_flags & PMQ_R ? 'r' : '-';
	m->perms[1] = q.vma_flags & PMQ_W ? 'w' : '-';
	m->perms[2] = q.vma_flags & PMQ_X ? 'x' : '-';
	m->perms[3] = q.vma_flags & PMQ_SHARED ? 's' : 'p';
	m->perms[4] = 0;
	if (!q.vma_name_size)
		m->path[0] = 0;
	m->path[sizeof(m->path) - 1] = 0;
	return 1;
}

static int vma_cmp(const void *a, const void *b)
{
	const struct vma *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The mappings maps_load() needs, by PROCMAP_QUERY: every file's (the
 * objects), every executable one (anonymous code, the vDSO) and the main
 * thread's stack.  Another thread's stack is asked for when first wanted
 * (vma_at()).  0, 1 when the kernel has no PROCMAP_QUERY or refused it
 * (nothing is kept then), -1 with err.
 */
static int maps_by_query(struct image *t, const char *exe, struct hc_err *err)
{
	struct mapline m;
	int r = 0;

	for (int pass = 0; pass < 2 && r >= 0; pass++)
		for (uint64_t at = 0;
		     (r = maps_query(t->mapsfd, at, PMQ_NEXT | (pass ? PMQ_X : PMQ_FILE), &m)) == 1;
		     at = m.hi) {
			if (pass && m.inode)
				continue; /* a file's: the first pass had it */
			if (map_line(t, &m, exe) < 0)
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		}
	if (r < 0) {
		/* before Linux 6.11 (ENOTTY), or refused, even half-way: the text says it all */
		objs_free(t);
		return 1;
	}
	if (t->start_stack && maps_query(t->mapsfd, t->start_stack, 0, &m) == 1 &&
	    !m.inode && map_line(t, &m, exe) < 0)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	/* in address order, as the text has them: the vDSO came with the second pass */
	qsort(t->vmas, t->nvmas, sizeof(*t->vmas), vma_cmp);
	qsort(t->objs, t->nobjs, sizeof(*t->objs), obj_cmp);
	t->vmas_partial = true;
	return 0;
}

/* /proc/PID/maps as text: every mapping. */
static int maps_by_text(struct image *t, const char *exe, struct hc_err *err)
{
	char line[PATH_MAX + 128];
	struct mapline m;
	FILE *f;

	snprintf(line, sizeof(line), "%s/maps", t->proc);
	f = fopen(line, "re");
	if (!f)
		return err_errno(err, errno, "open %s", line);
	while (fgets(line, sizeof(line), f))
		if (maps_parse_line(line, &m) == 0 && map_line(t, &m, exe) < 0) {
			fclose(f);
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		}
	fclose(f);
	t->vmas_partial = false;
	return 0;
}

int maps_load(struct image *t, struct hc_err *err)
{
	char path[96], exe[PATH_MAX] = "";
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "%s/exe", t->proc);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0)
		exe[n] = 0;
	if (t->mapsfd < 0) {
		snprintf(path, sizeof(path), "%s/maps", t->proc);
		t->mapsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->mapsfd < 0)
			return err_errno(err, errno, "open %s", path);
	}
	r = maps_by_query(t, exe, err);
	if (r > 0)
		r = maps_by_text(t, exe, err);
	if (r < 0)
		return -1;
	if (t->nobjs == 0)
		return err_set(err, HC_E_NO_PROC, 0, "pid %d has no mapped objects (zombie or kernel thread?)",
			       t->pid);
	for (size_t i = 0; i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];

		if (!o->base) {
			o->text_lo = o->text_hi = 0;
			continue;
		}
		if (o->is_exe) {
			r = obj_read_phdrs(t, o, err);
			if (r < 0)
				return -1;
		} else {
			/* an object that cannot be read is skipped, not fatal */
			r = obj_read_phdrs(t, o, &(struct hc_err){ 0 });
		}
		if (r != 0) {
			/* not an ELF object we can use: forget its text range */
			o->text_lo = o->text_hi = 0;
			o->base = 0;
		}
	}
	link_order(t);
	return 0;
}

static int lm_read(void *arg, uint64_t raddr, void *buf, size_t len)
{
	struct image *t = arg;

	return mem_read(t->pid, t->memfd, raddr, buf, len, &(struct hc_err){ 0 });
}

static void lm_entry(void *arg, uint64_t map, uint64_t l_ld, unsigned idx)
{
	struct obj *o = obj_at(arg, l_ld);

	if (o && o->link_idx == UINT32_MAX) {
		o->link_idx = idx;
		o->link_map = map;
	}
}

/*
 * Number the objects in the dynamic linker's search order: the link_map
 * list behind the executable's DT_DEBUG entry (linkmap.c).  Objects are
 * matched by their dynamic section's address, which is the same however
 * the path was spelled.  Unlisted objects keep UINT_MAX.
 *
 * The same entry tells whether the loader is done: until then a library's
 * functions may not be callable: t->loading.
 */
static void link_order(struct image *t)
{
	struct obj *exe = NULL;
	bool ldso = false;

	t->loading = false;
	for (size_t i = 0; i < t->nobjs; i++) {
		t->objs[i].link_idx = UINT32_MAX;
		t->objs[i].link_map = 0;
		if (t->objs[i].is_exe)
			exe = &t->objs[i];
		ldso |= t->objs[i].is_ldso;
	}
	/* static: nothing is searched; a static-pie has DT_DEBUG, but no loader to wait for */
	if (!exe || !exe->dynamic || !ldso)
		return;
	t->loading = linkmap_walk(&(struct linkmap_src){ .read = lm_read, .entry = lm_entry,
							 .arg = t, .dynamic = exe->dynamic }) > 0;
}

struct obj *obj_at(struct image *t, uint64_t raddr)
{
	for (size_t i = 0; i < t->nobjs; i++)
		if (raddr >= t->objs[i].lo && raddr < t->objs[i].hi && t->objs[i].base)
			return &t->objs[i];
	return NULL;
}

/* Growable symbol list while loading: nf function symbols, then the data symbols. */
struct symvec {
	struct sym *v;
	size_t n, nf, cap;
	char *strs;
	size_t slen, scap;
};

/* Room for nsyms symbols and slen bytes of names in all. */
static int symvec_reserve(struct symvec *sv, size_t nsyms, size_t slen)
{
	if (nsyms > sv->cap) {
		struct sym *nv = realloc(sv->v, nsyms * sizeof(*nv));

		if (!nv)
			return -1;
		sv->v = nv;
		sv->cap = nsyms;
	}
	if (slen > sv->scap) {
		char *ns = realloc(sv->strs, slen);

		if (!ns)
			return -1;
		sv->strs = ns;
		sv->scap = slen;
	}
	return 0;
}

/* A symbol whose name is already in sv->strs at offset name_at (room for it reserved). */
static void symvec_put(struct symvec *sv, uint64_t raddr, uint64_t size, size_t name_at,
		       bool global, bool data)
{
	size_t at = sv->n;

	if (!data && sv->nf < sv->n) {
		sv->v[sv->n] = sv->v[sv->nf]; /* the first data symbol moves to the end */
		at = sv->nf;
	}
	/* store the offset now; pointers are fixed up once strs stops moving */
	sv->v[at] = (struct sym){ .raddr = raddr,
				  .name = (const char *)(uintptr_t)name_at,
				  .size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
				  .global = global };
	sv->n++;
	sv->nf += !data;
}

static int symvec_add(struct symvec *sv, uint64_t raddr, uint64_t size, const char *name,
		      bool global, bool data)
{
	size_t l = strlen(name) + 1;

	if ((sv->n == sv->cap || sv->slen + l > sv->scap) &&
	    symvec_reserve(sv, sv->n == sv->cap ? (sv->cap ? sv->cap * 2 : 1024) : sv->cap,
			   sv->slen + l > sv->scap ? (sv->scap + l) * 2 : sv->scap) < 0)
		return -1;
	memcpy(sv->strs + sv->slen, name, l);
	symvec_put(sv, raddr, size, sv->slen, global, data);
	sv->slen += l;
	return 0;
}

/*
 * Add the FUNC and OBJECT symbols of one section type.  Returns how many
 * function symbols were added.
 */
static long add_syms(Elf *elf, Elf64_Word type, uint64_t bias, struct symvec *sv)
{
	Elf_Scn *scn = NULL;
	long added = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d, *sd;
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		sd = elf_getdata(elf_getscn(elf, sh.sh_link), NULL);
		/* heapctl drives 64-bit targets only: a 32-bit object's table is not read */
		if (!d || !sd || !sd->d_buf || d->d_type != ELF_T_SYM ||
		    gelf_getclass(elf) != ELFCLASS64)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		if (n > d->d_size / sizeof(Elf64_Sym))
			n = d->d_size / sizeof(Elf64_Sym);
		/* room for all of them at once: growing by doubling copies and faults pages again */
		if (symvec_reserve(sv, sv->n + n, sv->slen + sd->d_size) < 0)
			return -1;
		/*
		 * The table as elf_getdata() gives it, Elf64_Sym in the host's
		 * byte order, and the names straight from the string table:
		 * gelf_getsym() and elf_strptr() per symbol cost most of a large
		 * library's load.  A string table that ends in a NUL, as every
		 * linker writes it, is taken whole, each name where it is; else
		 * each name is checked to end inside it and copied.
		 */
		const char *strtab = sd->d_buf;
		bool whole = sd->d_size && strtab[sd->d_size - 1] == '\0';
		size_t base = sv->slen;

		if (whole) {
			memcpy(sv->strs + base, strtab, sd->d_size);
			sv->slen += sd->d_size;
		}
		for (size_t i = 0; i < n; i++) {
			const Elf64_Sym *s = (const Elf64_Sym *)d->d_buf + i;
			const char *name = strtab + s->st_name;
			int st = ELF64_ST_TYPE(s->st_info);
			bool global = ELF64_ST_BIND(s->st_info) != STB_LOCAL, data = st == STT_OBJECT;

			if ((st != STT_FUNC && st != STT_GNU_IFUNC && st != STT_OBJECT) ||
			    s->st_shndx == SHN_UNDEF || !s->st_value || !s->st_name ||
			    s->st_name >= sd->d_size || !*name)
				continue;
			if (whole)
				symvec_put(sv, s->st_value + bias, s->st_size, base + s->st_name, global,
					   data);
			else if (!memchr(name, '\0', sd->d_size - s->st_name))
				continue;
			else if (symvec_add(sv, s->st_value + bias, s->st_size, name, global, data) < 0)
				return -1;
			added += !data;
		}
	}
	return added;
}

static const char *build_id_hex(Elf *elf, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz >= 2 &&
			    nh.n_descsz * 2 + 1 < outlen) {
				const uint8_t *id = (const uint8_t *)d->d_buf + doff;

				for (size_t i = 0; i < nh.n_descsz; i++)
					sprintf(out + 2 * i, "%02x", id[i]);
				return out;
			}
		}
	}
	return NULL;
}

static const char *debuglink(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		/* a SHT_NOBITS section has a size but no bytes: d_buf is NULL */
		if (n && !strcmp(n, ".gnu_debuglink") && (d = elf_getdata(scn, NULL)) &&
		    d->d_buf && d->d_size > 4 && memchr(d->d_buf, 0, d->d_size))
			return d->d_buf;
	}
	return NULL;
}

/*
 * Separate debug file: by build-id on the host (a path of hex digits from
 * the object's note: nothing the target can steer elsewhere), then by
 * build-id and .gnu_debuglink in the target's root, with its rights
 * (file_open()).  The debuglink's directories come from the object's
 * mapped name, which is the target's to choose: they are never looked up
 * on the host.
 */
static int open_debug(struct image *t, struct obj *o, Elf *elf, char **pathp)
{
	static const char *const mids[] = { "/usr/lib/debug", "", "" };
	static const char *const subs[] = { "", "", "/.debug" };
	const char *id = o->build_id;
	char p[PATH_MAX + 64], dir[PATH_MAX];
	const char *link = debuglink(elf), *slash = strrchr(o->path, '/');
	pid_t in = 0;
	int fd = -1;

	if (link && strchr(link, '/'))
		link = NULL;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash ? slash - o->path : 0), o->path);
	for (int r = 0; r < 2 && fd < 0; r++) {
		in = r ? t->pid : 0;

		if (id[0]) {
			snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug", id,
				 id + 2);
			fd = file_open(in, p, 0, NULL);
		}
		for (int k = 0; in && link && k < 3 && fd < 0; k++) {
			snprintf(p, sizeof(p), "%s%s%s/%s", mids[k], dir, subs[k], link);
			if (strcmp(p, o->path))
				fd = file_open(in, p, 0, NULL);
		}
	}
	if (fd >= 0 && asprintf(pathp, "%s%s%s", in ? t->proc : "", in ? "/root" : "", p) < 0)
		*pathp = NULL;
	return fd;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->raddr < y->raddr ? -1 : x->raddr > y->raddr;
}

/*
 * A stable sort by address, as glibc's qsort() (a merge sort) is: with
 * qsort() it was a tenth of a round trip.  A radix sort of one key per
 * symbol, its offset from the lowest address above its index in whole
 * bytes (so equal addresses keep their order), one counting pass per
 * byte of the offset (three for libc); the symbols then move along the
 * cycles of that order.  The scratch is 16 bytes a symbol, not a second
 * copy of the table: fewer fresh pages (2 us each under a hypervisor)
 * than the random moves cost; for libc's 2,900 functions 28 us against
 * 43 for passes over copies, on fresh memory.  Keys that cannot hold the
 * offsets (a span past 2^48 or so): qsort().
 */
void syms_sort(struct sym *v, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0, *key, *src, *dst, mask;
	unsigned int ib = 1, top;

	for (size_t i = 0; i < n; i++) {
		lo = v[i].raddr < lo ? v[i].raddr : lo;
		hi = v[i].raddr > hi ? v[i].raddr : hi;
	}
	if (n < 2 || hi == lo)
		return;
	while (ib < 64 && (n - 1) >> ib)
		ib++;
	ib = (ib + 7) / 8 * 8; /* whole bytes: the passes then sort the offset's bytes only */
	top = 64 - (unsigned int)__builtin_clzll(hi - lo) + ib; /* bits of a key */
	mask = (1ull << ib) - 1;
	key = top <= 64 ? malloc(2 * n * sizeof(*key)) : NULL;
	if (!key) {
		qsort(v, n, sizeof(*v), cmp_sym);
		return;
	}
	for (size_t i = 0; i < n; i++)
		key[i] = (v[i].raddr - lo) << ib | i;
	/* the index bytes below the offset's are in order already */
	src = key;
	dst = key + n;
	for (unsigned int shift = ib; shift < top; shift += 8) {
		size_t at[256] = { 0 }, sum = 0;

		for (size_t i = 0; i < n; i++)
			at[src[i] >> shift & 0xff]++;
		for (unsigned int k = 0; k < 256; k++) {
			size_t c = at[k];

			at[k] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[at[src[i] >> shift & 0xff]++] = src[i];
		dst = src;
		src = src == key ? key + n : key;
	}
	/* src[j]'s index: the symbol that goes to j; each cycle moves once */
	for (size_t i = 0; i < n; i++) {
		struct sym x;
		size_t j = i;

		if ((src[i] & mask) == i)
			continue;
		x = v[i];
		for (;;) {
			size_t k = src[j] & mask;

			src[j] = (src[j] & ~mask) | j; /* done */
			if (k == i) {
				v[j] = x;
				break;
			}
			v[j] = v[k];
			j = k;
		}
	}
	free(key);
}

/* o->symsrc: what the info command shows, "KIND PATH" */
static void set_src(struct obj *o, const char *kind, const char *path)
{
	char *d = NULL;

	if (asprintf(&d, "%s %s", kind, path) < 0)
		return;
	free(o->debug_path);
	o->debug_path = d;
	o->symsrc = d;
}

/* .symtab of e (which is ended here; NULL: none); >0 if it had function symbols. */
static long symtab_of(Elf *e, uint64_t bias, struct symvec *sv)
{
	long n = e ? add_syms(e, SHT_SYMTAB, bias, sv) : 0;

	if (e)
		elf_end(e);
	return n;
}

/*
 * de if it may be o's debug file: of o's build-id, when both have one.  A
 * debug link names a file, not a build: a stale one would put every symbol,
 * and so the functions heapctl calls, in the wrong place.  Else NULL (de is
 * ended).
 */
static Elf *same_build(const struct obj *o, Elf *de, const char *path)
{
	char id[128];

	if (!de || !o->build_id[0] || !build_id_hex(de, id, sizeof(id)) || !strcmp(id, o->build_id))
		return de;
	pr_info("%s: %s is the debug file of another build (%s): not used", o->path,
		path ? path : "its debug file", id);
	elf_end(de);
	return NULL;
}

/*
 * An object without .symtab: its symbols from elsewhere, in this order.
 * --debug-file (the executable only, checked by sym_debug_file_check()),
 * then with debug, for an object that names an allocator or shows its
 * signs (evidence_likely()): MiniDebugInfo, a debug file on the host or in
 * the target's root, and debuginfod (the executable only: it is where a
 * stripped program hides a static allocator, and each query may cost a
 * download).
 */
static long syms_elsewhere(struct image *t, struct obj *o, Elf *elf, bool debug,
			   struct symvec *sv)
{
	char *path = NULL;
	void *mdi;
	size_t len;
	long n;
	int fd;

	if (o->is_exe && t->debug_elf) {
		n = add_syms(t->debug_elf, SHT_SYMTAB, o->bias, sv);
		if (n > 0)
			set_src(o, "--debug-file", t->opts.debug_file);
		if (n != 0)
			return n;
	}
	if (!debug || !t->judge || !t->judge->likely(o))
		return 0;
	pr_debug("%s: no .symtab: looking for its symbols elsewhere", o->path);
	mdi = mdi_decompress(elf, &len);
	if (mdi) {
		/* not ELF: libelf finds no section in it */
		n = symtab_of(elf_memory(mdi, len), o->bias, sv);
		free(mdi);
		if (n > 0)
			o->symsrc = ".gnu_debugdata";
		if (n != 0)
			return n;
	}
	fd = open_debug(t, o, elf, &path);
	if (fd >= 0) {
		n = symtab_of(same_build(o, sym_elf_open(fd), path), o->bias, sv);
		if (n > 0)
			set_src(o, "debug file", path);
		if (n != 0) {
			free(path);
			return n;
		}
	}
	free(path);
	path = NULL;
	if (!o->is_exe || t->opts.no_debuginfod || !o->build_id[0])
		return 0;
	/* half of --timeout at most: the operation itself needs the rest */
	fd = dbgd_find(o->build_id, o->path, now_ns() + (uint64_t)t->opts.timeout_ms * 500000,
		       &path);
	if (fd < 0)
		return 0;
	n = symtab_of(sym_elf_open(fd), o->bias, sv);
	if (n > 0)
		set_src(o, "debuginfod", path);
	free(path);
	return n;
}

int sym_debug_file_check(struct image *t, struct hc_err *err)
{
	static const char keep[] = "give the unstripped executable or its debug file (objcopy "
				   "--only-keep-debug)";
	char got[128];
	const char *df = t->opts.debug_file, *gid;
	struct obj *exe = NULL;
	bool symtab = false;
	int fd;

	if (!df)
		return 0;
	for (size_t i = 0; i < t->nobjs; i++)
		if (t->objs[i].is_exe)
			exe = &t->objs[i];
	fd = file_open(0, df, 0, NULL);
	if (fd < 0)
		return err_sethint(err, HC_E_IO, errno,
				   "give the path of the unstripped executable or its debug file",
				   "cannot open --debug-file %s: %s", df, strerror(errno));
	/* opened once: the executable's symbols come from here (syms_elsewhere()) */
	t->debug_elf = sym_elf_open(fd);
	if (!t->debug_elf)
		return err_sethint(err, HC_E_NO_SYM, 0, keep, "--debug-file %s is not an ELF file",
				   df);
	for (Elf_Scn *s = NULL; (s = elf_nextscn(t->debug_elf, s));) {
		GElf_Shdr sh;

		if (gelf_getshdr(s, &sh) && sh.sh_type == SHT_SYMTAB)
			symtab = true;
	}
	if (!symtab)
		return err_sethint(err, HC_E_NO_SYM, 0, keep,
				   "--debug-file %s has no symbol table (.symtab)", df);
	if (!exe || sym_load(t, exe, false, &(struct hc_err){ 0 }) < 0) {
		pr_warn("--debug-file %s: the executable of pid %d cannot be read to check it",
			df, t->pid);
		return 0;
	}
	gid = build_id_hex(t->debug_elf, got, sizeof(got));
	if (exe->build_id[0] && gid && strcmp(exe->build_id, gid))
		/* symbols of another build would put every address in the wrong place */
		return err_sethint(err, HC_E_NO_SYM, 0,
				   "give the debug file of this very build (readelf -n shows "
				   "build-ids)",
				   "--debug-file %s is for build-id %s, but %s is build-id %s", df,
				   gid, exe->path, exe->build_id);
	if (!exe->build_id[0] || !gid)
		pr_warn("--debug-file %s: %s has no build-id: it cannot be checked to match %s", df,
			exe->build_id[0] ? "it" : "the executable", exe->path);
	return 0;
}

int sym_load(struct image *t, struct obj *o, bool debug, struct hc_err *err)
{
	struct stat st;
	Elf *elf;
	int fd, e;

	/*
	 * Symbols from elsewhere cost milliseconds or a download: only when
	 * asked to, and only where an allocator may be (syms_elsewhere()).
	 */
	if (o->syms_loaded && o->unreadable)
		return err_set(err, HC_E_NO_SYM, 0, "%s: its symbols cannot be read", o->path);
	if (o->syms_loaded && (!debug || o->debug_tried || !o->symsrc ||
			       strcmp(o->symsrc, ".dynsym") || !t->judge || !t->judge->likely(o)))
		return 0;
	if (o->syms_loaded) {
		free(o->syms);
		free(o->strs);
		o->syms = NULL;
		o->strs = NULL;
		o->nsyms = o->ndata = 0;
	}
	o->syms_loaded = true;
	o->debug_tried = debug;
	if (o->is_vdso)
		return 0;
	fd = obj_open(o, &st);
	e = fd < 0 ? errno : 0;
	elf = sym_elf_open(fd);
	if (!elf) {
		/* not there, or no longer ELF under that name: what is mapped still is */
		struct hc_err me = { 0 };
		const char *why = e ? strerror(e) : "not an ELF file";

		if (sym_load_mem(t, o, &me) == 0) {
			pr_info("%s cannot be read (%s): its symbols come from its loaded image",
				o->path, why);
			return 0;
		}
		o->unreadable = true;
		return err_set(err, me.code == HC_E_NOMEM ? HC_E_NOMEM : HC_E_NO_SYM, e,
			       "%s cannot be read (%s), nor its symbols in memory (%s)", o->path,
			       why, me.msg);
	}
	sym_load_elf(t, o, elf, debug, err);
	/*
	 * The signs evidence_check() reads next, while the file is open; not
	 * for a library the malloc search passed on its way (judge->sure()).
	 */
	if (t->judge && !t->ev_scanned && !o->ev_known && t->judge->sure(o)) {
		o->ev_r = t->judge->signs(&st, elf, &o->ev);
		o->ev_known = true;
	}
	elf_end(elf);
	return err_isset(err) ? -1 : 0;
}

/* The symbols loaded into sv become o's (sv keeps nothing). */
static void syms_take(struct obj *o, struct symvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		sv->v[i].name = sv->strs + (uintptr_t)sv->v[i].name;
	o->sorted = false; /* sorted on first address lookup: detection only needs names */
	free(o->verdict); /* where.c's, about the symbols these replace */
	o->verdict = NULL;
	o->syms = sv->v;
	o->nsyms = sv->nf;
	o->ndata = sv->n - sv->nf;
	o->strs = sv->strs;
	sv->v = NULL;
	sv->strs = NULL;
	pr_debug("%s: %zu function symbols from %s", o->path, o->nsyms, o->symsrc);
}

int sym_load_elf(struct image *t, struct obj *o, Elf *elf, bool debug, struct hc_err *err)
{
	struct symvec sv = { 0 };
	long nd, ns = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err_set(err, HC_E_NO_SYM, 0, "%s: not an ELF file: %s", o->path, elf_errmsg(-1));
		goto out;
	}
	if (!build_id_hex(elf, o->build_id, sizeof(o->build_id)))
		o->build_id[0] = 0;
	nd = add_syms(elf, SHT_DYNSYM, o->bias, &sv);
	if (nd >= 0)
		ns = add_syms(elf, SHT_SYMTAB, o->bias, &sv);
	o->symsrc = ns > 0 ? ".symtab" : ".dynsym";
	if (nd >= 0 && ns == 0)
		ns = syms_elsewhere(t, o, elf, debug, &sv);
	if (nd < 0 || ns < 0) {
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory reading symbols of %s", o->path);
		goto out;
	}
	syms_take(o, &sv);
out:
	free(sv.v);
	free(sv.strs);
	return err_isset(err) ? -1 : 0;
}

/* ---- symbols from the loaded image -------------------------------------------------- */

/* The most a target's own dynamic section may make heapctl read. */
#define MEM_MAX_SYMS (1u << 20)
#define MEM_MAX_STRS (64u << 20)
#define MEM_MAX_DYN 1024
#define MEM_MAX_CHAIN (1u << 16)

/*
 * An address from o's dynamic section in memory.  glibc's loader
 * relocates the pointer entries in place when the section is writable, as
 * it is on x86_64 and arm64 (elf/get-dynamic-info.h, dl_relocate_ld());
 * musl's, or a read-only section, keep the link-time address.  A
 * relocated one already lies within o's mappings.
 */
static uint64_t dyn_ptr(const struct obj *o, uint64_t p)
{
	return p >= o->lo && p < o->hi ? p : p + o->bias;
}

/*
 * len bytes of o's image at raddr.  The tables the dynamic section names
 * are in o's own mappings (its first segment): past them lies another
 * object's memory, or nothing, and a size the target wrote (2^20 symbols,
 * 64 MiB of strings) would have heapctl read and sift that much in vain.
 */
static bool in_img(const struct obj *o, uint64_t raddr, uint64_t len)
{
	return !o->hi || (raddr >= o->lo && raddr <= o->hi && len <= o->hi - raddr);
}

static int img_read(struct image *t, const struct obj *o, uint64_t raddr, void *buf,
		    size_t len, struct hc_err *err)
{
	if (!in_img(o, raddr, len))
		return err_set(err, HC_E_NO_SYM, 0, "%zu bytes at 0x%llx: outside %s", len,
			       (unsigned long long)raddr, o->path);
	return mem_read(t->pid, t->memfd, raddr, buf, len, err);
}

/*
 * How many entries .dynsym has.  DT_HASH says it (nchain).  DT_GNU_HASH
 * does not: the symbols past symoffset are the hashed ones, in bucket
 * order, so the last is at the end of the chain of the highest bucket
 * start, the entry whose low bit is set (the format of glibc's
 * elf/dl-lookup.c, do_lookup_x()).
 */
static int dyn_count(struct image *t, const struct obj *o, uint64_t hash, uint64_t gnu,
		     uint32_t *n, struct hc_err *err)
{
	uint32_t h[4], *b, top = 0, w[64];
	uint64_t chain;

	if (hash) {
		if (img_read(t, o, hash, h, 8, err) < 0)
			return -1;
		*n = h[1];
		return 0;
	}
	/* nbuckets, symoffset, bloom size (in 64-bit words), bloom shift */
	if (img_read(t, o, gnu, h, 16, err) < 0)
		return -1;
	if (!h[0] || h[0] > MEM_MAX_SYMS || h[1] > MEM_MAX_SYMS || h[2] > MEM_MAX_SYMS)
		return err_set(err, HC_E_NO_SYM, 0, "a DT_GNU_HASH table of %u buckets", h[0]);
	b = malloc(h[0] * sizeof(*b));
	if (!b)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	if (img_read(t, o, gnu + 16 + (uint64_t)h[2] * 8, b, h[0] * sizeof(*b),
		     err) < 0) {
		free(b);
		return -1;
	}
	for (uint32_t i = 0; i < h[0]; i++)
		if (b[i] > top)
			top = b[i];
	free(b);
	if (top < h[1]) {
		*n = h[1]; /* no symbol is hashed: only the unhashed ones below symoffset */
		return 0;
	}
	chain = gnu + 16 + (uint64_t)h[2] * 8 + (uint64_t)h[0] * 4;
	/*
	 * A chain holds the few symbols of one bucket: read 64 entries at a
	 * time, one at a time only where the mapping ends within them.
	 */
	for (uint32_t i = top; i - top < MEM_MAX_CHAIN && i < MEM_MAX_SYMS;) {
		size_t k = sizeof(w) / sizeof(w[0]);

		if (img_read(t, o, chain + (uint64_t)(i - h[1]) * 4, w, sizeof(w),
			     &(struct hc_err){ 0 }) < 0) {
			k = 1;
			if (img_read(t, o, chain + (uint64_t)(i - h[1]) * 4, w, 4,
				     err) < 0)
				return -1;
		}
		for (size_t j = 0; j < k; j++, i++)
			if (w[j] & 1) {
				*n = i + 1;
				return 0;
			}
	}
	return err_set(err, HC_E_NO_SYM, 0, "a DT_GNU_HASH chain without an end");
}

/*
 * .dynsym from o's loaded image, for an object whose file cannot be
 * opened: deleted or replaced since it was mapped (an allocator library
 * upgraded under a running process, or unpacked and unlinked on purpose)
 * when /proc/PID/map_files cannot be followed without CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE.  The dynamic linker itself looks symbols up
 * there, so .dynsym and .dynstr are always loaded, and PT_DYNAMIC says
 * where; every malloc that can replace another's is among them.  What the
 * target's memory says is bounded and checked like a file's contents.
 */
int sym_load_mem(struct image *t, struct obj *o, struct hc_err *err)
{
	uint64_t symtab = 0, strtab = 0, strsz = 0, syment = sizeof(Elf64_Sym), hash = 0, gnu = 0;
	size_t ndyn = o->dynamic_len / sizeof(Elf64_Dyn);
	struct symvec sv = { 0 };
	Elf64_Dyn *dyn = NULL;
	Elf64_Sym *es = NULL;
	char *str = NULL;
	uint32_t n = 0;

	if (!o->dynamic || !ndyn)
		return err_set(err, HC_E_NO_SYM, 0, "no PT_DYNAMIC");
	if (ndyn > MEM_MAX_DYN)
		ndyn = MEM_MAX_DYN;
	dyn = calloc(ndyn, sizeof(*dyn));
	if (!dyn)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	if (img_read(t, o, o->dynamic, dyn, ndyn * sizeof(*dyn), err) < 0)
		goto out;
	for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		uint64_t v = dyn[i].d_un.d_val;

		switch (dyn[i].d_tag) {
		case DT_SYMTAB:
			symtab = dyn_ptr(o, v);
			break;
		case DT_STRTAB:
			strtab = dyn_ptr(o, v);
			break;
		case DT_HASH:
			hash = dyn_ptr(o, v);
			break;
		case DT_GNU_HASH:
			gnu = dyn_ptr(o, v);
			break;
		case DT_STRSZ:
			strsz = v;
			break;
		case DT_SYMENT:
			syment = v;
			break;
		default:
			break;
		}
	}
	if (!symtab || !strtab || !strsz || (!hash && !gnu) || syment != sizeof(Elf64_Sym)) {
		err_set(err, HC_E_NO_SYM, 0, "its dynamic section names no symbol table");
		goto out;
	}
	if (strsz > MEM_MAX_STRS) {
		err_set(err, HC_E_NO_SYM, 0, "a dynamic string table of %llu bytes",
			(unsigned long long)strsz);
		goto out;
	}
	if (dyn_count(t, o, hash, gnu, &n, err) < 0)
		goto out;
	if (n > MEM_MAX_SYMS) {
		err_set(err, HC_E_NO_SYM, 0, "a dynamic symbol table of %u entries", n);
		goto out;
	}
	if (!in_img(o, symtab, (uint64_t)n * sizeof(*es)) || !in_img(o, strtab, strsz)) {
		err_set(err, HC_E_NO_SYM, 0, "its symbol table or strings lie outside it");
		goto out;
	}
	es = calloc(n ? n : 1, sizeof(*es));
	str = malloc(strsz + 1);
	if (!es || !str) {
		err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		goto out;
	}
	if (img_read(t, o, symtab, es, n * sizeof(*es), err) < 0 ||
	    img_read(t, o, strtab, str, strsz, err) < 0)
		goto out;
	str[strsz] = 0;
	for (uint32_t i = 1; i < n; i++) {
		int st = ELF64_ST_TYPE(es[i].st_info);

		if ((st != STT_FUNC && st != STT_GNU_IFUNC && st != STT_OBJECT) ||
		    es[i].st_shndx == SHN_UNDEF || !es[i].st_value || es[i].st_name >= strsz ||
		    !str[es[i].st_name])
			continue;
		if (symvec_add(&sv, es[i].st_value + o->bias, es[i].st_size, str + es[i].st_name,
			       ELF64_ST_BIND(es[i].st_info) != STB_LOCAL, st == STT_OBJECT) < 0) {
			err_set(err, HC_E_NOMEM, ENOMEM, "out of memory reading symbols of %s",
				o->path);
			goto out;
		}
	}
	o->symsrc = ".dynsym in memory";
	o->build_id[0] = 0;
	syms_take(o, &sv);
out:
	free(dyn);
	free(es);
	free(str);
	free(sv.v);
	free(sv.strs);
	return err_isset(err) ? -1 : 0;
}

const struct sym *sym_by_name(const struct obj *o, const char *name)
{
	for (size_t i = 0; i < o->nsyms; i++)
		if (!strcmp(o->syms[i].name, name))
			return &o->syms[i];
	return NULL;
}

/*
 * The runtime address of a data symbol (STT_OBJECT), or 0: from wherever
 * o's function symbols came (.dynsym and .symtab, or the debug symbols).
 */
uint64_t sym_data(const struct obj *o, const char *name)
{
	for (size_t i = o->nsyms; i < o->nsyms + o->ndata; i++)
		if (!strcmp(o->syms[i].name, name))
			return o->syms[i].raddr;
	return 0;
}

static int sym_ready(struct image *t, struct obj *o)
{
	struct hc_err e = { 0 };

	if (sym_load(t, o, false, &e) < 0)
		return -1;
	/* no symbols (the vDSO, a stripped file): nothing to sort, and qsort() wants an array */
	if (!o->sorted && o->nsyms)
		syms_sort(o->syms, o->nsyms);
	o->sorted = true;
	return 0;
}

void sym_prepare(struct image *t, uint64_t also_at)
{
	/*
	 * The objects nearly every stack runs through: the executable, libc
	 * (where the syscall gadget is, also_at: a blocked thread waits in it)
	 * and the allocator's.  Reading every library's table would cost the round
	 * trip more than it saves the pause; the rare others load when met.
	 */
	for (size_t i = 0; i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];

		if (o->text_hi > o->text_lo &&
		    (o->is_exe || o == t->malloc_obj ||
		     (also_at >= o->text_lo && also_at < o->text_hi)))
			sym_ready(t, o);
	}
}

const struct sym *obj_sym_at(const struct obj *o, uint64_t raddr)
{
	size_t lo = 0, hi = o->nsyms;

	if (!o->sorted || !hi)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (o->syms[mid].raddr <= raddr)
			lo = mid;
		else
			hi = mid;
	}
	if (o->syms[lo].raddr > raddr)
		return NULL;
	/* prefer a sized symbol that covers raddr among equal addresses */
	if (o->syms[lo].size && raddr >= o->syms[lo].raddr + o->syms[lo].size)
		return NULL;
	return &o->syms[lo];
}

const struct sym *sym_at(struct image *t, uint64_t raddr, struct obj **op)
{
	struct obj *o = obj_at(t, raddr);

	if (op)
		*op = o;
	if (!o || sym_ready(t, o) < 0)
		return NULL;
	return obj_sym_at(o, raddr);
}

struct obj *obj_malloc_owner(struct image *t)
{
	struct obj *best = NULL;

	if (t->malloc_obj)
		return t->malloc_obj;
	/*
	 * The executable binds to its own definition; otherwise the linker's
	 * lookup scope decides: link_map order (preloads come right after the
	 * executable).  Objects missing from the list (dlopen'ed with
	 * RTLD_LOCAL) keep UINT32_MAX and lose.  Walk the objects in that order
	 * and read symbols only until the first malloc: each table costs time.
	 */
	for (;;) {
		struct obj *next = NULL;
		uint64_t rank = UINT64_MAX;
		struct hc_err e = { 0 };

		for (size_t i = 0; i < t->nobjs; i++) {
			struct obj *o = &t->objs[i];
			uint64_t r = o->is_exe ? 0 : (uint64_t)o->link_idx + 1;

			if (!o->base || o->is_vdso || o->is_ldso || o->malloc_checked)
				continue;
			if (r < rank) {
				rank = r;
				next = o;
			}
		}
		if (!next)
			break;
		next->malloc_checked = true;
		if (sym_load(t, next, false, &e) < 0) {
			/*
			 * Not a silent skip: this object may be the very one that
			 * serves malloc, and the next definition (libc's) would
			 * then be the wrong allocator to call.  alloc_detect()
			 * refuses; an object unknown to the linker's list (rank
			 * UINT32_MAX + 1) is searched last and cannot hide it.
			 */
			if (rank <= UINT32_MAX && !t->malloc_unread) {
				t->malloc_unread = next;
				t->malloc_unread_err = e;
			}
			continue;
		}
		if (sym_by_name(next, "malloc")) {
			best = next;
			break;
		}
	}
	t->malloc_obj = best;
	return best;
}

const struct sym *sym_global_near(const struct obj *o, const struct sym *s, int dir)
{
	for (const struct sym *p = s + dir; p >= o->syms && p < o->syms + o->nsyms; p += dir)
		if (p->global && p->raddr != s->raddr)
			return p;
	return NULL;
}

void objs_free(struct image *t)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		free(t->objs[i].path);
		free(t->objs[i].open_path);
		free(t->objs[i].syms);
		free(t->objs[i].verdict);
		free(t->objs[i].strs);
		free(t->objs[i].debug_path);
	}
	free(t->objs);
	t->objs = NULL;
	t->nobjs = 0;
	free(t->vmas);
	t->vmas = NULL;
	t->nvmas = 0;
	t->nasked = 0;
	memset(t->vasked, 0, sizeof(t->vasked));
	if (t->debug_elf)
		elf_end(t->debug_elf);
	t->debug_elf = NULL;
}
