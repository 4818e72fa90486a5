// SPDX-License-Identifier: MIT
/*
 * Symbols from an object's loaded image, for an object whose file cannot
 * be read (deleted, replaced, in a namespace heapctl cannot enter): its
 * dynamic section, hash tables, .dynsym and .dynstr as the target has
 * them mapped, every size and count bounded (the target's data).
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mem.h"
#include "symvec.h"
#include "image.h"

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
