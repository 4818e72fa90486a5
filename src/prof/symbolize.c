// SPDX-License-Identifier: MIT
/*
 * symbolize.c: runtime address -> object, ELF address, function names with
 * inlined frames and optional file:line, using the profile's own
 * MAPPED_LIBRARIES and libdw (elfutils).
 *
 * For an address A in a mapping [start, end) at file offset off:
 *   file offset  F = A - start + off
 *   ELF address  V = F - p_offset + p_vaddr   of the PT_LOAD that holds F
 * jeprof uses "start - off" as the bias, which is wrong whenever a
 * segment's p_vaddr differs from its p_offset (lld, -z separate-code, some
 * prelinked or hand-linked objects).
 *
 * Every address in a heap profile is a return address, so V - 1 is looked
 * up: a call that ends a function or an inline range would otherwise be
 * blamed on what follows it.
 *
 * Files are looked for, in order: /proc/PID/map_files/START-END (the very
 * file the process maps, even deleted or in a container, with --pid),
 * /proc/PID/root/PATH, SYSROOT/PATH, PATH.  Debug files: by build-id under
 * SYSROOT, /proc/PID/root and / (usr/lib/debug/.build-id/xx/yyyy.debug),
 * then .gnu_debuglink through libdwfl's standard search.
 *
 * Each object is opened once, its symbol table sorted once, and every
 * (object, address) resolved once.
 *
 * Cost: a distribution's debug files carry compressed DWARF, and libelf
 * inflates a whole .debug_info on first use (libc6-dbg's: tens of ms, most
 * of a report's time).  Frames in system shared libraries (/lib, /usr/lib)
 * are near the root of heap stacks and rarely inlined into anything of
 * interest, so there their names come from the symbol table (the debug
 * file's .symtab included) and DWARF is read only with --lines.  The
 * program's own objects, and any object with DWARF built in, always get
 * inlined frames.
 */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dwarf.h>
#include <linux/openat2.h>

#include "prof_int.h"
#include "troot.h"

struct sym_ent {
	uint64_t addr, size;
	const char *name; /* raw, in the ELF's string table */
	unsigned char bind;
};

struct pobj {
	const char *path; /* interned: as the profile names it */
	const char *found;
	char build_id[2 * 64 + 1];
	uint64_t start, limit, offset; /* first mapping seen */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwfl_Callbacks cb;
	char *debug_path; /* libdwfl's debuginfo_path for this object */
	struct psym *owner;
	GElf_Phdr *ph;
	size_t nph;
	struct sym_ent *syms;
	size_t nsyms;
	struct u64map cache; /* ELF address -> index in psym.ranges */
	bool loaded, failed, exe, is_alloc, has_dwarf, warned_mismatch;
	bool system;      /* a shared library in a system directory */
	bool local_dwarf; /* .debug_info in the object itself, not a debug file */
};

/* Frames of one (object, ELF address), shared by every location there. */
struct frange {
	uint32_t first, n;
	bool resolved;
};

struct psym {
	struct hc_report_opts o;
	struct strtab *strs;
	struct pobj *objs;
	size_t nobjs, objs_cap;
	struct psym_frame *frames;
	size_t nframes, frames_cap;
	struct frange *ranges;
	size_t nranges, ranges_cap;
	struct psym_loc *locs;
	size_t nlocs, locs_cap;
	/* runtime address -> location, one map per profile seen (new, base) */
	const struct hc_prof *prof_of[2];
	struct u64map addr_map[2];
	struct u64map obj_of_path; /* interned path id -> object index */
	size_t nmissing;
	bool oom;
};

static const char *intern(struct psym *s, const char *str)
{
	uint32_t id;

	if (!str)
		return NULL;
	id = strtab_intern(s->strs, str, strlen(str));
	if (id == UINT32_MAX) {
		s->oom = true;
		return NULL;
	}
	return s->strs->str[id];
}

struct psym *psym_new(const struct hc_report_opts *o, struct strtab *strs)
{
	struct psym *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (o)
		s->o = *o;
	s->strs = strs;
	elf_version(EV_CURRENT);
	return s;
}

void psym_free(struct psym *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nobjs; i++) {
		struct pobj *ob = &s->objs[i];

		if (ob->dwfl)
			dwfl_end(ob->dwfl);
		free(ob->debug_path);
		free(ob->ph);
		free(ob->syms);
		u64map_free(&ob->cache);
	}
	free(s->objs);
	free(s->frames);
	free(s->ranges);
	free(s->locs);
	u64map_free(&s->addr_map[0]);
	u64map_free(&s->addr_map[1]);
	u64map_free(&s->obj_of_path);
	free(s);
}

/* ---- finding files --------------------------------------------------- */

/*
 * A file a profile names.  With --pid, a name is the process's, looked up
 * in its root with its rights (troot_open(): a link it planted there
 * leads nowhere it could not go itself), never on the host; the kernel's
 * /proc/PID/map_files link is the very file it maps.  Without --pid the
 * names are the user's to vouch for (docs/security.md): host paths, or
 * under --sysroot.  A regular file only, opened for reading; -1 if none.
 */
struct cand {
	char path[PATH_MAX]; /* as shown; a host path unless in_root */
	const char *name;    /* in_root, in_sysroot: the name under that root */
	bool in_root, in_sysroot;
};

static int cand_open(const struct psym *s, const struct cand *c)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	struct stat st;
	int fd = -1, root;

	if (c->in_root)
		return troot_open(s->o.pid, c->name, 0, NULL);
	/* a profile's name stays inside --sysroot, ".." and absolute links included */
	if (c->in_sysroot) {
		root = open(s->o.sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root >= 0)
			fd = (int)syscall(SYS_openat2, root, c->name, &how, sizeof(how));
		if (root >= 0)
			close(root);
		if (fd < 0 && errno != ENOSYS)
			return -1;
	}
	/* O_PATH first, a regular file only: a device named in a profile is never opened */
	if (fd < 0)
		fd = open(c->path, O_PATH | O_CLOEXEC);
	return troot_reopen_reg(fd, &st);
}

/* Build-id of an ELF file open on fd, as hex, or "" (cheap: reads the notes only); closes fd. */
static void file_build_id(int fd, char *hex, size_t len)
{
	const void *bits;
	Elf *elf;
	int n, i;

	hex[0] = '\0';
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		n = dwelf_elf_gnu_build_id(elf, &bits);
		for (i = 0; n > 0 && i < n && (size_t)(2 * i + 2) < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)bits)[i]);
		elf_end(elf);
	}
	close(fd);
}

/*
 * A .gnu_debuglink name in the process's root, where GDB looks for it:
 * beside the object, in .debug there, under /usr/lib/debug.
 */
static int debuglink_in_root(const struct psym *s, const char *obj, const char *link,
			     char **found)
{
	static const char *const mids[] = { "", "", "/usr/lib/debug" };
	static const char *const subs[] = { "", "/.debug", "" };
	const char *slash = strrchr(obj, '/');
	char path[PATH_MAX];
	int fd = -1;

	if (!link || !link[0] || strchr(link, '/') || !slash)
		return -1;
	for (size_t k = 0; k < sizeof(mids) / sizeof(mids[0]) && fd < 0; k++) {
		snprintf(path, sizeof(path), "%s%.*s%s/%s", mids[k], (int)(slash - obj), obj,
			 subs[k], link);
		if (strcmp(path, obj))
			fd = troot_open(s->o.pid, path, 0, NULL);
	}
	if (fd >= 0 && asprintf(found, "/proc/%d/root%s", (int)s->o.pid, path) < 0)
		*found = NULL;
	return fd;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct pobj *ob = *userdata;
	const unsigned char *bits;
	GElf_Addr vaddr;
	char roots[3][PATH_MAX];
	bool root_of_pid[3] = { false, false, false };
	int n, nroots = 0, i, fd;

	if (ob && ob->owner) {
		const struct psym *s = ob->owner;

		if (s->o.sysroot)
			snprintf(roots[nroots++], PATH_MAX, "%s", s->o.sysroot);
		if (s->o.pid > 0) {
			root_of_pid[nroots] = true;
			snprintf(roots[nroots++], PATH_MAX, "/proc/%d/root", (int)s->o.pid);
		}
	}
	roots[nroots++][0] = '\0';
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n > 1 && ob && ob->owner && ob->owner->o.debug_file) {
		/* --debug-file: for the one object whose build-id it carries */
		const char *df = ob->owner->o.debug_file;
		const void *id = NULL;
		Elf *e;

		fd = open(df, O_RDONLY | O_CLOEXEC);
		e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		if (e && dwelf_elf_gnu_build_id(e, &id) == n && !memcmp(id, bits, (size_t)n)) {
			elf_end(e);
			*debuginfo_file_name = strdup(df);
			pr_debug("%s: debug file %s (--debug-file)", modname, df);
			return fd;
		}
		if (e)
			elf_end(e);
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; n > 1 && i < nroots; i++) {
		char path[PATH_MAX * 2];
		int k, o;

		o = snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%02x/", roots[i],
			     bits[0]);
		for (k = 1; k < n && o < (int)sizeof(path) - 8; k++)
			o += snprintf(path + o, sizeof(path) - (size_t)o, "%02x", bits[k]);
		snprintf(path + o, sizeof(path) - (size_t)o, ".debug");
		/* the process's root: its rights, never a link out of it (cand_open()) */
		if (root_of_pid[i])
			fd = troot_open(ob->owner->o.pid, strstr(path, "/usr/lib/debug/"), 0, NULL);
		else
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*debuginfo_file_name = strdup(path);
			pr_debug("%s: debug file %s", modname, path);
			return fd;
		}
	}
	/*
	 * With --pid, the object's name is the process's: its debug link is
	 * looked for in its root only.  libdwfl's own search would take the
	 * name's directories on the host.
	 */
	if (ob && ob->owner && ob->owner->o.pid > 0) {
		fd = debuglink_in_root(ob->owner, ob->path, debuglink_file, debuginfo_file_name);
		if (fd >= 0)
			pr_debug("%s: debug file %s", modname, *debuginfo_file_name);
		return fd;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					    debuglink_file, debuglink_crc, debuginfo_file_name);
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;

	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	/* Aliases: the global name first, then the one with fewer leading '_'. */
	if (x->bind != y->bind) {
		int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
		int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;

		if (rx != ry)
			return rx - ry;
	}
	if (x->size != y->size)
		return (x->size < y->size) - (x->size > y->size);
	return (int)strspn(x->name, "_") - (int)strspn(y->name, "_");
}

static void load_symbols(struct psym *s, struct pobj *ob)
{
	size_t cap = 0;
	int n, i;

	n = dwfl_module_getsymtab(ob->mod);
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name;
		int type;

		name = dwfl_module_getsym_info(ob->mod, i, &sym, &addr, &shndx, NULL, NULL);
		if (!name || !name[0] || shndx == SHN_UNDEF || !addr)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    !(type == STT_NOTYPE && shndx != SHN_ABS && sym.st_size))
			continue;
		if (!strcmp(name, "mallctl") || !strcmp(name, "je_mallctl") ||
		    !strcmp(name, "_rjem_mallctl"))
			ob->is_alloc = true;
		if (prof_grow(&ob->syms, &cap, ob->nsyms + 1, sizeof(*ob->syms))) {
			s->oom = true;
			return;
		}
		/* Raw names point into the ELF's string table, alive as long as ob->dwfl. */
		ob->syms[ob->nsyms].addr = addr;
		ob->syms[ob->nsyms].size = sym.st_size;
		ob->syms[ob->nsyms].bind = (unsigned char)GELF_ST_BIND(sym.st_info);
		ob->syms[ob->nsyms].name = name;
		ob->nsyms++;
	}
	if (ob->nsyms)
		qsort(ob->syms, ob->nsyms, sizeof(*ob->syms), sym_cmp);
	/* Keep the preferred name of each address. */
	if (ob->nsyms) {
		size_t w = 1, r;

		for (r = 1; r < ob->nsyms; r++)
			if (ob->syms[r].addr != ob->syms[w - 1].addr)
				ob->syms[w++] = ob->syms[r];
		ob->nsyms = w;
	}
}

/*
 * The name to show for a raw symbol name: without its version
 * ("memcpy@@GLIBC_2.14"), demangled.  Demangling happens here, per resolved
 * address, not for every symbol of every object: a C++ library has tens of
 * thousands, and loading the demangler costs more than a whole report.
 */
static const char *sym_display(struct psym *s, const char *name)
{
	const char *at, *r;
	char *base = NULL, *dm;

	if (!name)
		return NULL;
	at = strchr(name, '@');
	if (at && at != name) {
		base = strndup(name, (size_t)(at - name));
		if (!base) {
			s->oom = true;
			return NULL;
		}
		name = base;
	}
	dm = prof_demangle(name);
	r = intern(s, dm ? dm : name);
	free(dm);
	free(base);
	return r;
}

static const char *sym_lookup(const struct pobj *ob, uint64_t addr)
{
	size_t lo = 0, hi = ob->nsyms;
	const struct sym_ent *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ob->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &ob->syms[lo - 1];
	if (e->size)
		return addr < e->addr + e->size ? e->name : NULL;
	/* Sizeless (assembly) symbols: up to the next symbol, within reason. */
	if (addr - e->addr < 65536 && (lo == ob->nsyms || addr < ob->syms[lo].addr))
		return e->name;
	return NULL;
}

/* Candidate files for path, best first. */
static int candidates(const struct psym *s, const struct pobj *ob, const struct prof_map *m,
		      struct cand out[4])
{
	int n = 0;

	if (s->o.pid > 0 && m)
		snprintf(out[n++].path, PATH_MAX, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)s->o.pid, m->start, m->end);
	if (s->o.pid > 0) {
		snprintf(out[n].path, PATH_MAX, "/proc/%d/root%s", (int)s->o.pid, ob->path);
		out[n].name = ob->path;
		out[n++].in_root = true;
	}
	if (s->o.sysroot && s->o.sysroot[0]) {
		snprintf(out[n].path, PATH_MAX, "%s%s", s->o.sysroot, ob->path);
		out[n].name = ob->path;
		out[n++].in_sysroot = true;
	}
	/* a name of the process's is never a host path */
	if (s->o.pid <= 0)
		snprintf(out[n++].path, PATH_MAX, "%s", ob->path);
	return n;
}

/* Does the ELF's segment layout fit the mapping the profile recorded? */
static bool layout_fits(const struct pobj *ob, const struct prof_map *m)
{
	size_t i;

	if (!m || m->perm[2] != 'x')
		return true;
	for (i = 0; i < ob->nph; i++) {
		const GElf_Phdr *ph = &ob->ph[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		/* Mapped at the page that holds the segment's start. */
		if ((ph->p_offset & ~(uint64_t)0xfff) == (m->offset & ~(uint64_t)0xfff))
			return true;
	}
	return false;
}

static void obj_load(struct psym *s, struct pobj *ob, const struct prof_map *m)
{
	struct cand cand[4] = { 0 };
	int nc, i, fd = -1;
	Elf *elf;
	GElf_Addr bias;
	GElf_Ehdr eh;
	size_t k;

	ob->loaded = true;
	nc = candidates(s, ob, m, cand);
	for (i = 0; i < nc && fd < 0; i++)
		fd = cand_open(s, &cand[i]);
	i--;
	if (fd < 0) {
		ob->failed = true;
		s->nmissing++;
		pr_warn("%s: not found%s; its frames are shown as %s+0xOFFSET", ob->path,
			s->o.pid > 0 ? " (also looked in the process's root)" :
				       " (use --sysroot DIR or --pid PID to point at it)",
			strrchr(ob->path, '/') ? strrchr(ob->path, '/') + 1 : ob->path);
		return;
	}
	ob->found = intern(s, cand[i].path);
	ob->cb.find_elf = NULL;
	ob->cb.find_debuginfo = find_debuginfo;
	ob->cb.section_address = dwfl_offline_section_address;
	if (s->o.sysroot) {
		size_t len = strlen(s->o.sysroot) + 64;

		ob->debug_path = malloc(len);
		if (ob->debug_path) {
			snprintf(ob->debug_path, len, ":.debug:/usr/lib/debug:%s/usr/lib/debug",
				 s->o.sysroot);
			ob->cb.debuginfo_path = &ob->debug_path;
		}
	}
	ob->dwfl = dwfl_begin(&ob->cb);
	if (!ob->dwfl) {
		close(fd);
		goto fail;
	}
	dwfl_report_begin(ob->dwfl);
	/* the file found, as opened: libdwfl takes the fd and opens nothing by name */
	ob->mod = dwfl_report_elf(ob->dwfl, ob->path, ob->found, fd, 0, true);
	dwfl_report_end(ob->dwfl, NULL, NULL);
	if (!ob->mod)
		goto fail;
	{
		void **ud;

		dwfl_module_info(ob->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (ud)
			*ud = ob;
	}
	elf = dwfl_module_getelf(ob->mod, &bias);
	if (!elf || !gelf_getehdr(elf, &eh))
		goto fail;
	if (elf_getphdrnum(elf, &ob->nph) == 0 && ob->nph) {
		ob->ph = calloc(ob->nph, sizeof(*ob->ph));
		if (!ob->ph) {
			s->oom = true;
			ob->nph = 0;
		}
		for (k = 0; k < ob->nph; k++)
			gelf_getphdr(elf, (int)k, &ob->ph[k]);
	}
	if (eh.e_type == ET_EXEC)
		ob->exe = true;
	{
		size_t shstrndx;
		Elf_Scn *scn = NULL;

		if (elf_getshdrstrndx(elf, &shstrndx) == 0)
			while ((scn = elf_nextscn(elf, scn))) {
				GElf_Shdr sh;
				const char *nm;

				if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
					continue;
				nm = elf_strptr(elf, shstrndx, sh.sh_name);
				if (nm && !strcmp(nm, ".debug_info"))
					ob->local_dwarf = true;
				/*
				 * A PIE program, not a library: DF_1_PIE.  (PT_INTERP is no
				 * test: libc.so.6 has one, to run as a program.)
				 */
				if (sh.sh_type == SHT_DYNAMIC) {
					Elf_Data *d = elf_getdata(scn, NULL);
					size_t j;

					for (j = 0; d && sh.sh_entsize &&
						    j < sh.sh_size / sh.sh_entsize; j++) {
						GElf_Dyn dyn;

						if (gelf_getdyn(d, (int)j, &dyn) &&
						    dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
							ob->exe = true;
					}
				}
			}
	}
	ob->system = !ob->exe && strstr(ob->path, ".so") != NULL &&
		     (!strncmp(ob->path, "/lib/", 5) || !strncmp(ob->path, "/lib64/", 7) ||
		      !strncmp(ob->path, "/usr/lib/", 9) || !strncmp(ob->path, "/usr/lib64/", 11));
	{
		const unsigned char *bits;
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(ob->mod, &bits, &vaddr), j;

		for (j = 0; j < n && (size_t)(2 * j + 2) < sizeof(ob->build_id); j++)
			snprintf(ob->build_id + 2 * j, 3, "%02x", bits[j]);
	}
	/* The copy on disk may have been replaced since the process mapped it. */
	if (s->o.pid > 0 && i == 0 && m && cand[1].in_root) {
		char other[sizeof(ob->build_id)];

		file_build_id(cand_open(s, &cand[1]), other, sizeof(other));
		if (other[0] && ob->build_id[0] && strcmp(other, ob->build_id))
			pr_warn("%s: build-id differs from the file the process maps (%s on disk, "
				"%s mapped): replaced since it started; using the mapped copy",
				ob->path, other, ob->build_id);
	}
	if (!layout_fits(ob, m)) {
		pr_warn("%s: build-id or layout differs from the profile's mapping (rebuilt "
			"since the dump?); names from it may be wrong", ob->found);
		ob->warned_mismatch = true;
	}
	load_symbols(s, ob);
	if (!ob->is_alloc) {
		const char *b = strrchr(ob->path, '/');

		ob->is_alloc = strstr(b ? b : ob->path, "jemalloc") != NULL;
	}
	if (ob->exe)
		ob->is_alloc = false;
	pr_debug("%s: using %s, %zu symbols%s%s", ob->path, ob->found, ob->nsyms,
		 ob->build_id[0] ? ", build-id " : "", ob->build_id);
	return;
fail:
	pr_warn("%s: cannot read as ELF: %s", ob->found,
		dwfl_errmsg(-1) ? dwfl_errmsg(-1) : "unknown error");
	ob->failed = true;
	s->nmissing++;
}

/* ---- resolving ------------------------------------------------------- */

static uint64_t elf_addr(const struct pobj *ob, uint64_t foff, bool *ok)
{
	size_t i;

	*ok = false;
	for (i = 0; i < ob->nph; i++) {
		const GElf_Phdr *ph = &ob->ph[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (foff >= ph->p_offset && foff - ph->p_offset < (ph->p_filesz ? ph->p_filesz : 1)) {
			*ok = true;
			return foff - ph->p_offset + ph->p_vaddr;
		}
	}
	return foff;
}

static void add_frame(struct psym *s, const char *func, const char *file, unsigned line)
{
	struct psym_frame *f;

	if (prof_grow(&s->frames, &s->frames_cap, s->nframes + 1, sizeof(*s->frames))) {
		s->oom = true;
		return;
	}
	f = &s->frames[s->nframes++];
	f->func = func;
	f->file = file;
	f->line = line;
}

static const char *die_name(struct psym *s, Dwarf_Die *die)
{
	Dwarf_Attribute at;
	const char *n = NULL;
	char *dm;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		n = dwarf_formstring(&at);
	if (n) {
		dm = prof_demangle(n);
		if (dm) {
			const char *r = intern(s, dm);

			free(dm);
			return r;
		}
	}
	n = dwarf_diename(die);
	return n ? intern(s, n) : NULL;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die, unsigned *line)
{
	Dwarf_Attribute at;
	Dwarf_Word fidx = 0, ln = 0;
	Dwarf_Files *files;
	size_t nfiles;

	*line = 0;
	if (!dwarf_attr(die, DW_AT_call_file, &at) || dwarf_formudata(&at, &fidx))
		return NULL;
	if (dwarf_attr(die, DW_AT_call_line, &at) && !dwarf_formudata(&at, &ln))
		*line = (unsigned)ln;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) || fidx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, fidx, NULL, NULL);
}

/* The frames of ELF address v (already minus one) of ob, innermost first. */
static void resolve_frames(struct psym *s, struct pobj *ob, uint64_t v, struct frange *fr)
{
	Dwarf_Die *cu = NULL, *scopes = NULL;
	Dwarf_Addr bias = 0;
	const char *file = NULL, *symname;
	unsigned line = 0;
	int nsc = 0, i;

	fr->first = (uint32_t)s->nframes;
	fr->n = 0;
	symname = sym_display(s, sym_lookup(ob, v));
	if (ob->mod && (ob->local_dwarf || !ob->system || s->o.lines))
		cu = dwfl_module_addrdie(ob->mod, v, &bias);
	if (cu) {
		ob->has_dwarf = true;
		if (s->o.lines) {
			Dwfl_Line *dl = dwfl_module_getsrc(ob->mod, v);
			int ln = 0;

			if (dl) {
				file = dwfl_lineinfo(dl, NULL, &ln, NULL, NULL, NULL);
				line = ln > 0 ? (unsigned)ln : 0;
			}
		}
		nsc = dwarf_getscopes(cu, v - bias, &scopes);
	}
	/*
	 * dwarf_getscopes() follows an inlined instance into its abstract
	 * definition; the callers it was inlined into come from the concrete
	 * tree: take the innermost function-like scope and walk its parents
	 * (what eu-addr2line -i does).
	 */
	for (i = 0; i < nsc; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			break;
	}
	if (i < nsc) {
		Dwarf_Die *chain = NULL;
		int nch = dwarf_getscopes_die(&scopes[i], &chain), k;

		for (k = 0; k < nch; k++) {
			Dwarf_Die *d = &chain[k];
			int tag = dwarf_tag(d);
			const char *name;

			if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
				continue;
			name = die_name(s, d);
			if (tag == DW_TAG_subprogram) {
				/* C++ without a linkage name: the symbol has the scope. */
				if (symname && (!name || (strstr(symname, "::") && !strstr(name, "::"))))
					name = symname;
				add_frame(s, name ? name : symname,
					  s->o.lines ? intern(s, file) : NULL, line);
				break;
			}
			if (!s->o.no_inline) {
				add_frame(s, name, s->o.lines ? intern(s, file) : NULL, line);
				file = call_file(cu, d, &line);
			}
		}
		free(chain);
	}
	free(scopes);
	if (s->nframes == fr->first && symname)
		add_frame(s, symname, s->o.lines ? intern(s, file) : NULL, line);
	fr->n = (uint32_t)(s->nframes - fr->first);
	fr->resolved = fr->n > 0;
	if (!fr->n) {
		add_frame(s, NULL, NULL, 0);
		fr->n = 1;
	}
}

static int32_t obj_index(struct psym *s, const struct prof_map *m)
{
	struct pobj *ob;
	uint32_t pid, idx;

	pid = strtab_intern(s->strs, m->path, strlen(m->path));
	if (pid == UINT32_MAX)
		return -1;
	if (u64map_get(&s->obj_of_path, pid, &idx))
		return (int32_t)idx;
	if (prof_grow(&s->objs, &s->objs_cap, s->nobjs + 1, sizeof(*s->objs)))
		return -1;
	ob = &s->objs[s->nobjs];
	memset(ob, 0, sizeof(*ob));
	ob->owner = s;
	ob->path = s->strs->str[pid];
	ob->start = m->start;
	ob->limit = m->end;
	ob->offset = m->offset;
	if (u64map_put(&s->obj_of_path, pid, (uint32_t)s->nobjs))
		return -1;
	return (int32_t)s->nobjs++;
}

int32_t psym_resolve(struct psym *s, const struct hc_prof *p, uint64_t addr)
{
	const struct prof_map *m;
	struct psym_loc *l;
	struct u64map *amap;
	uint32_t idx;
	int k;

	for (k = 0; k < 2; k++) {
		if (!s->prof_of[k])
			s->prof_of[k] = p;
		if (s->prof_of[k] == p)
			break;
	}
	if (k == 2)
		return -1;
	amap = &s->addr_map[k];
	if (u64map_get(amap, addr, &idx))
		return (int32_t)idx;
	if (prof_grow(&s->locs, &s->locs_cap, s->nlocs + 1, sizeof(*s->locs)))
		return -1;
	l = &s->locs[s->nlocs];
	memset(l, 0, sizeof(*l));
	l->addr = addr;
	l->obj = -1;
	l->rel = addr;
	m = prof_map_find(p, addr);
	if (m) {
		struct pobj *ob;
		uint64_t foff = addr - m->start + m->offset, v;
		struct frange *fr;
		uint32_t ridx;
		bool ok;

		l->obj = obj_index(s, m);
		if (l->obj < 0)
			return -1;
		ob = &s->objs[l->obj];
		if (!ob->loaded)
			obj_load(s, ob, m);
		v = elf_addr(ob, foff, &ok);
		l->rel = v;
		if (!ob->failed && ok) {
			if (!u64map_get(&ob->cache, v, &ridx)) {
				if (prof_grow(&s->ranges, &s->ranges_cap, s->nranges + 1,
					      sizeof(*s->ranges)))
					return -1;
				ridx = (uint32_t)s->nranges++;
				fr = &s->ranges[ridx];
				resolve_frames(s, ob, v - 1, fr);
				if (u64map_put(&ob->cache, v, ridx))
					return -1;
			}
			fr = &s->ranges[ridx];
			l->first = fr->first;
			l->n = fr->n;
			l->resolved = fr->resolved;
		}
	}
	if (!l->n) {
		l->first = (uint32_t)s->nframes;
		add_frame(s, NULL, NULL, 0);
		l->n = 1;
	}
	if (s->oom || u64map_put(amap, addr, (uint32_t)s->nlocs))
		return -1;
	return (int32_t)s->nlocs++;
}

const struct psym_loc *psym_loc(const struct psym *s, int32_t idx)
{
	return &s->locs[idx];
}

const struct psym_frame *psym_frames(const struct psym *s, const struct psym_loc *l)
{
	return &s->frames[l->first];
}

size_t psym_nobjs(const struct psym *s)
{
	return s->nobjs;
}

size_t psym_nlocs(const struct psym *s)
{
	return s->nlocs;
}

size_t psym_nmissing(const struct psym *s)
{
	return s->nmissing;
}

void psym_obj(const struct psym *s, int32_t idx, struct psym_obj_info *info)
{
	const struct pobj *ob = &s->objs[idx];

	memset(info, 0, sizeof(*info));
	info->path = ob->path;
	info->found = ob->found;
	info->build_id = ob->build_id[0] ? ob->build_id : NULL;
	info->start = ob->start;
	info->limit = ob->limit;
	info->offset = ob->offset;
	info->is_alloc = ob->is_alloc;
	info->has_dwarf = ob->has_dwarf;
}
