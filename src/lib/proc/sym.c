// SPDX-License-Identifier: MIT
/*
 * The symbols of a live process's objects, from their files with libelf:
 * .symtab or .dynsym, MiniDebugInfo, debug files on the host or in the
 * target's root, debuginfod; and the lookups by name and by address.
 * The objects themselves come from objects.c; symbols read from an
 * object's loaded image when its file cannot be read, from sym_mem.c.
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
#include "log.h"
#include "symvec.h"
#include "image.h"
#include "troot.h"

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
