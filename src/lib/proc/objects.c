// SPDX-License-Identifier: MIT
/*
 * The mappings and objects of a live process: /proc/PID/maps (or
 * PROCMAP_QUERY where the kernel has it), the ELF files behind them and
 * their program headers, and the dynamic loader's search order.
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

#include "err.h"
#include "linkmap.h"
#include "mem.h"
#include "image.h"
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
		if (ph[i].p_type == PT_INTERP) {
			o->interp = ph[i].p_vaddr + o->bias;
			o->interp_len = ph[i].p_filesz;
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
	if (t->nvmas) /* none: vmas may be NULL, which qsort() may not be given */
		qsort(t->vmas, t->nvmas, sizeof(*t->vmas), vma_cmp);
	if (t->nobjs)
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
	memset(&t->libc, 0, sizeof(t->libc)); /* its obj was one of them */
	if (t->debug_elf)
		elf_end(t->debug_elf);
	t->debug_elf = NULL;
}
