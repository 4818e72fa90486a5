// SPDX-License-Identifier: MIT
/*
 * libc.c: which C library a process runs on, and its version, by evidence.
 *
 * The path of an object is no evidence: musl's libc is called libc.so like
 * glibc's (/usr/lib/x86_64-linux-musl/libc.so), and a static executable
 * carries its libc under its own name.  What tells them apart:
 *
 *  - the loader the executable asks for (PT_INTERP): /lib/ld-musl-ARCH.so.1
 *    is musl's (a link to its libc.so, the loader and the libc in one
 *    file), /lib64/ld-linux-x86-64.so.2 or /lib/ld-linux-aarch64.so.1
 *    glibc's;
 *  - without one (static, static-pie), the symbols linked in: only musl's
 *    malloc has __libc_malloc_impl, __malloc_donate, __malloc_context
 *    (mallocng's ctx) or __simple_malloc; only glibc has main_arena,
 *    _IO_2_1_stdout_ or _nl_C_locobj.
 *
 * The version: musl's libc.so holds the banner its loader prints when run
 * by itself ("musl libc (x86_64)\nVersion %s") and __libc_version, "1.2.3",
 * a string of its own in .rodata; a static musl executable links neither
 * (nothing refers to them), so its version is not known.  glibc's static
 * executables carry __libc_version only if gnu_get_libc_version() is
 * linked, and __nptl_version (the same "2.36", for libthread_db) whenever
 * threads are; the dynamic libc.so.6 has gnu_get_libc_version(), which the
 * glibc driver calls.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>

#include "image.h"
#include "libc.h"
#include "log.h"
#include "mem.h"

static const char *libc_name(enum libc_kind k)
{
	return k == LIBC_MUSL ? "musl" : k == LIBC_GLIBC ? "glibc" : "";
}

/* s (l bytes) is a release number: "1.2.3", or one with a suffix ("1.2.3-git-5-gabc"). */
static bool is_version(const char *s, size_t l)
{
	size_t i = 0;

	for (int part = 0; part < 3; part++) {
		size_t d = i;

		while (i < l && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d || i - d > 4)
			return false;
		if (part < 2 && (i >= l || s[i++] != '.'))
			return false;
	}
	if (i == l)
		return true;
	if (s[i] != '-')
		return false;
	for (; i < l; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '-' || s[i] == '.'))
			return false;
	return l < 32;
}

bool libc_musl_version(const char *buf, size_t len, char *out, size_t outlen)
{
	static const char banner[] = "musl libc (";
	const char *s = buf, *end = buf + len;
	bool seen = false;

	out[0] = 0;
	while (s < end) {
		const char *e = memchr(s, 0, (size_t)(end - s));
		size_t l;

		if (!e)
			break; /* a string cut by the end of buf is no whole string */
		l = (size_t)(e - s);
		if (l > sizeof(banner) - 1 && !memcmp(s, banner, sizeof(banner) - 1))
			seen = true;
		else if (!out[0] && is_version(s, l))
			snprintf(out, outlen, "%.*s", (int)l, s);
		s = e + 1;
	}
	if (!seen)
		out[0] = 0;
	return seen && out[0];
}

/* A NUL-terminated string at raddr in the target, at most len - 1 bytes; false if unreadable. */
static bool read_str(struct image *im, uint64_t raddr, char *out, size_t len)
{
	struct hc_err e = { 0 };

	if (!raddr || mem_read(im->pid, im->memfd, raddr, out, len - 1, &e) < 0)
		return false;
	out[len - 1] = 0;
	return out[0] != 0;
}

/* The executable's PT_INTERP, into id->interp ("" if it has none: static). */
static void interp_of(struct image *im, struct obj *exe, struct libc_id *id)
{
	size_t l = exe->interp_len < sizeof(id->interp) ? exe->interp_len : sizeof(id->interp);

	id->interp[0] = 0;
	if (exe->interp && l > 1 && !read_str(im, exe->interp, id->interp, l))
		id->interp[0] = 0;
}

/* musl's version from its libc.so file's read-only data, into id->version. */
static void musl_version_file(const struct obj *o, struct libc_id *id)
{
	int fd = obj_open(o, NULL);
	Elf *elf = sym_elf_open(fd);
	Elf_Scn *scn = NULL;

	if (!elf)
		return;
	while ((scn = elf_nextscn(elf, scn)) && !id->version[0]) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR)))
			continue;
		d = elf_rawdata(scn, NULL);
		if (d && d->d_buf && d->d_size)
			libc_musl_version(d->d_buf, d->d_size, id->version, sizeof(id->version));
	}
	elf_end(elf);
}

static bool has(const struct obj *o, const char *name)
{
	return sym_by_name(o, name) || sym_data(o, name);
}

/* Symbols only musl's malloc defines (internal, so .symtab: a static executable, unstripped). */
static bool musl_syms(const struct obj *o)
{
	return has(o, "__libc_malloc_impl") || has(o, "__malloc_context") ||
	       has(o, "__malloc_donate") || has(o, "__simple_malloc");
}

static bool glibc_syms(const struct obj *o)
{
	return has(o, "main_arena") || has(o, "_IO_2_1_stdout_") || has(o, "_nl_C_locobj") ||
	       has(o, "gnu_get_libc_version");
}

/* The mapped object that is the libc of a dynamic process of kind k, or NULL. */
static struct obj *dyn_libc(struct image *im, enum libc_kind k)
{
	for (size_t i = 0; i < im->nobjs; i++) {
		struct obj *o = &im->objs[i];
		const char *b = strrchr(o->path, '/');

		b = b ? b + 1 : o->path;
		if (!o->base || o->is_vdso || o->is_exe)
			continue;
		if (k == LIBC_MUSL && (!strncmp(b, "ld-musl-", 8) ||
				       (!strcmp(b, "libc.so") && strstr(o->path, "musl"))))
			return o;
		if (k == LIBC_GLIBC && !strncmp(b, "libc.so.6", 9))
			return o;
	}
	/* musl's libc.so under another path: the one libc.so mapped */
	for (size_t i = 0; k == LIBC_MUSL && i < im->nobjs; i++) {
		struct obj *o = &im->objs[i];
		const char *b = strrchr(o->path, '/');

		if (o->base && b && !strcmp(b, "/libc.so"))
			return o;
	}
	return NULL;
}

static void identify(struct image *im, struct libc_id *id)
{
	struct obj *exe = NULL;
	struct hc_err e = { 0 };

	for (size_t i = 0; i < im->nobjs; i++)
		if (im->objs[i].is_exe && im->objs[i].base)
			exe = &im->objs[i];
	if (!exe)
		return;
	interp_of(im, exe, id);
	if (!id->interp[0]) {
		id->is_static = true;
		id->obj = exe;
		if (sym_load(im, exe, false, &e) < 0)
			return;
		if (musl_syms(exe))
			id->kind = LIBC_MUSL;
		else if (glibc_syms(exe))
			id->kind = LIBC_GLIBC;
		snprintf(id->found, sizeof(id->found), "no loader (static); %s",
			 id->kind == LIBC_MUSL ?  "musl's malloc symbols in the executable" :
			 id->kind == LIBC_GLIBC ? "glibc's symbols in the executable" :
						  "neither libc's symbols in the executable");
	} else {
		const char *b = strrchr(id->interp, '/');

		b = b ? b + 1 : id->interp;
		if (!strncmp(b, "ld-musl-", 8))
			id->kind = LIBC_MUSL;
		else if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7))
			id->kind = LIBC_GLIBC;
		snprintf(id->found, sizeof(id->found), "loader %s", id->interp);
		id->obj = id->kind ? dyn_libc(im, id->kind) : NULL;
		if (id->obj && sym_load(im, id->obj, false, &e) < 0)
			memset(&e, 0, sizeof(e));
	}
	if (id->kind == LIBC_MUSL) {
		if (id->obj && !id->is_static)
			musl_version_file(id->obj, id);
		if (!id->version[0] && id->obj)
			read_str(im, sym_data(id->obj, "__libc_version"), id->version,
				 sizeof(id->version));
		/*
		 * mallocng replaced oldmalloc as the default in 1.2.1; a build
		 * may still choose oldmalloc, which its symbols show when they
		 * are there (static, unstripped).
		 */
		if (id->obj && (has(id->obj, "__malloc_context") || has(id->obj, "__malloc_alloc_meta")))
			id->malloc_impl = "mallocng";
		else if (id->obj && (has(id->obj, "__bin_chunk") || has(id->obj, "__expand_heap")))
			id->malloc_impl = "oldmalloc";
		else if (id->version[0]) {
			unsigned a = 0, b = 0, c = 0;

			sscanf(id->version, "%u.%u.%u", &a, &b, &c);
			id->malloc_impl = a > 1 || (a == 1 && (b > 2 || (b == 2 && c >= 1))) ?
						  "mallocng" : "oldmalloc";
		}
	} else if (id->kind == LIBC_GLIBC && id->obj) {
		if (!read_str(im, sym_data(id->obj, "__libc_version"), id->version, sizeof(id->version)))
			read_str(im, sym_data(id->obj, "__nptl_version"), id->version,
				 sizeof(id->version));
		if (!is_version(id->version, strlen(id->version)) &&
		    strspn(id->version, "0123456789.") != strlen(id->version))
			id->version[0] = 0;
	}
	pr_debug("libc: %s%s %s (%s)", libc_name(id->kind), id->is_static ? " static" : "",
		 id->version[0] ? id->version : "(version unknown)", id->found);
}

const struct libc_id *libc_identify(struct image *im)
{
	if (!im->libc.known) {
		memset(&im->libc, 0, sizeof(im->libc));
		identify(im, &im->libc);
		im->libc.known = true;
	}
	return &im->libc;
}

const char *libc_of_pid(pid_t pid, bool *is_static)
{
	struct image im;
	struct hc_err e = { 0 };
	enum libc_kind k = LIBC_UNKNOWN;

	*is_static = false;
	if (image_init(&im, pid) < 0)
		return "";
	if (maps_load(&im, &e) == 0) {
		const struct libc_id *id = libc_identify(&im);

		k = id->kind;
		*is_static = id->is_static;
	}
	image_fini(&im);
	return libc_name(k);
}
