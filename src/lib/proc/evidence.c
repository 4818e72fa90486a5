// SPDX-License-Identifier: MIT
/*
 * Signs of an allocator that need no symbols: the strings its own code
 * carries in read-only data.  A binary stripped with `strip --strip-all`
 * loses .symtab, and with it every name heapctl calls, but a statically
 * linked jemalloc still reads its conf variable ("MALLOC_CONF", or
 * "_RJEM_MALLOC_CONF" for a prefixed build) and still prints its errors
 * with "<jemalloc>: ".  Finding them stops heapctl from reporting another
 * allocator that happens to be mapped (glibc) as the process's own.
 *
 * A message sign must begin a longer string ("<jemalloc>: Error in ..."),
 * so that the bare sign texts below, each a whole string, are no sign.
 * Only sections that are loaded, read-only and not code are read
 * (SHT_PROGBITS: .rodata and friends), not .dynstr: a program that merely
 * imports MallocExtension_* from a shared tcmalloc names it there.  Each
 * sign must be a whole string, or the start of one, where a program that
 * only mentions an allocator (a help text quoting MALLOC_CONF=...) would
 * not match.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evidence.h"
#include "log.h"
#include "mem.h"
#include "image.h"

/* Read at most this much of one object: enough for any .rodata seen in practice. */
#define EV_MAX_BYTES (512ull << 20)

enum { AT_PREFIX, AT_WHOLE };

struct sign {
	const char *alloc;
	const char *text;
	int where;  /* AT_PREFIX: begins a longer string; AT_WHOLE: is a whole string */
	bool alone; /* enough by itself; otherwise needs another sign of the same allocator */
	const char *shown;
};

static const struct sign signs[] = {
	{ "jemalloc", "<jemalloc>: ", AT_PREFIX, true, "\"<jemalloc>: \" messages" },
	{ "tcmalloc", "tcmalloc: large alloc", AT_PREFIX, true, "\"tcmalloc: large alloc\" message" },
	{ "tcmalloc", "15MallocExtension", AT_WHOLE, false, "MallocExtension type" },
	{ "tcmalloc", "TCMALLOC_", AT_PREFIX, false, "the TCMALLOC_ variables" },
	{ "mimalloc", "mimalloc: warning: ", AT_PREFIX, true, "\"mimalloc: \" messages" },
	{ "mimalloc", "mimalloc: error: ", AT_PREFIX, true, "\"mimalloc: \" messages" },
	{ "mimalloc", "mimalloc_", AT_PREFIX, false, "the mimalloc_ options" },
	{ "mimalloc", "MIMALLOC_", AT_PREFIX, false, "the MIMALLOC_ variables" },
};
#define NSIGNS (sizeof(signs) / sizeof(signs[0]))

static bool conf_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

struct tally {
	bool hit[NSIGNS];
	char conf[48];
};

/*
 * One pass over the strings in buf (each ends at a NUL, the last perhaps
 * at the end of buf): every sign and the conf variable begin a string, so
 * only string starts are compared.  A sign AT_PREFIX begins a longer
 * string, or one cut by the end of buf; AT_WHOLE is a whole string.
 * jemalloc's conf variable is a whole string "<PREFIX>MALLOC_CONF", the
 * prefix (at most 32 characters) in capitals as JEMALLOC_CPREFIX makes it
 * ("_RJEM_", "JE_", "").
 */
static void scan_buf(const char *buf, size_t len, struct tally *ta)
{
	static const char k[] = "MALLOC_CONF";
	const size_t kl = sizeof(k) - 1;
	const char *s = buf, *end = buf + len;

	while (s < end) {
		const char *e = memchr(s, 0, (size_t)(end - s));
		size_t sl;

		if (!e)
			e = end;
		sl = (size_t)(e - s);
		if (sl) {
			for (size_t i = 0; i < NSIGNS; i++) {
				size_t tl;

				if (ta->hit[i] || *s != signs[i].text[0])
					continue;
				tl = strlen(signs[i].text);
				if (sl >= tl && !memcmp(s, signs[i].text, tl) &&
				    (signs[i].where == AT_WHOLE ? sl == tl && e < end :
								  sl > tl || e == end))
					ta->hit[i] = true;
			}
			if (!ta->conf[0] && e < end && sl >= kl && sl - kl <= 32 &&
			    !memcmp(e - kl, k, kl)) {
				const char *c = s;

				while (c < e - kl && conf_char(*c))
					c++;
				if (c == e - kl)
					snprintf(ta->conf, sizeof(ta->conf), "%.*s", (int)sl, s);
			}
		}
		s = e + 1;
	}
}

/* The verdict from what one object holds: 1 with ev filled, or 0. */
static int judge(const struct tally *ta, struct evidence *ev)
{
	for (size_t i = 0; i < NSIGNS; i++) {
		const char *a = signs[i].alloc;
		unsigned n = 0;
		bool alone = false;

		if (i && !strcmp(signs[i - 1].alloc, a))
			continue; /* each allocator once, from its first sign */
		for (size_t j = i; j < NSIGNS && !strcmp(signs[j].alloc, a); j++)
			if (ta->hit[j]) {
				n++;
				alone |= signs[j].alone;
			}
		if (!strcmp(a, "jemalloc") && ta->conf[0])
			n++;
		if (!alone && n < 2)
			continue;
		ev->alloc = a;
		ev->found[0] = 0;
		if (!strcmp(a, "jemalloc") && ta->conf[0])
			snprintf(ev->found, sizeof(ev->found), "%s string", ta->conf);
		for (size_t j = i; j < NSIGNS && !strcmp(signs[j].alloc, a); j++) {
			size_t u = strlen(ev->found);

			if (ta->hit[j] && !strstr(ev->found, signs[j].shown))
				snprintf(ev->found + u, sizeof(ev->found) - u, "%s%s", u ? ", " : "",
					 signs[j].shown);
		}
		return 1;
	}
	return 0;
}

int evidence_strings(const char *buf, size_t len, struct evidence *ev)
{
	struct tally ta;

	memset(&ta, 0, sizeof(ta));
	memset(ev, 0, sizeof(*ev));
	scan_buf(buf, len, &ta);
	return judge(&ta, ev);
}

/*
 * Verdicts by file, for the life of the process: `list` opens every
 * process, and most of them map the same libraries.
 */
#define EV_CACHE 512
static struct {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int r;
	struct evidence ev;
} cache[EV_CACHE];
static unsigned ncache;
/* targets may be opened from several threads at once */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_find(const struct stat *st, struct evidence *ev)
{
	int r = -2;

	pthread_mutex_lock(&cache_lock);
	for (unsigned i = 0; i < ncache && r == -2; i++)
		if (cache[i].dev == st->st_dev && cache[i].ino == st->st_ino &&
		    cache[i].size == st->st_size && cache[i].mtime.tv_sec == st->st_mtim.tv_sec &&
		    cache[i].mtime.tv_nsec == st->st_mtim.tv_nsec) {
			*ev = cache[i].ev;
			r = cache[i].r;
		}
	pthread_mutex_unlock(&cache_lock);
	return r;
}

static void cache_add(const struct stat *st, int r, const struct evidence *ev)
{
	unsigned i;

	pthread_mutex_lock(&cache_lock);
	i = ncache < EV_CACHE ? ncache++ : (unsigned)(st->st_ino % EV_CACHE);
	cache[i].dev = st->st_dev;
	cache[i].ino = st->st_ino;
	cache[i].size = st->st_size;
	cache[i].mtime = st->st_mtim;
	cache[i].r = r;
	cache[i].ev = *ev;
	pthread_mutex_unlock(&cache_lock);
}

/*
 * Read-only PROGBITS sections that hold tables, not strings: the unwind
 * and exception tables, most of a library's read-only data by size and
 * nearly all NULs, which only cost the scan a call per byte.
 */
static bool table_section(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	static const char *const tables[] = { ".eh_frame", ".eh_frame_hdr", ".gcc_except_table",
					      ".sframe", NULL };
	const char *n = shstrndx ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;

	for (const char *const *t = tables; n && *t; t++)
		if (!strcmp(n, *t))
			return true;
	return false;
}

int evidence_elf(Elf *elf, struct evidence *ev)
{
	struct tally ta;
	uint64_t budget = EV_MAX_BYTES;
	Elf_Scn *scn = NULL;
	size_t shstrndx = 0;
	bool scanned = false;

	memset(&ta, 0, sizeof(ta));
	memset(ev, 0, sizeof(*ev));
	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn)) && budget) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR)))
			continue;
		if (table_section(elf, shstrndx, &sh)) {
			scanned = true; /* passed over, not missing: no reason to read the segments */
			continue;
		}
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			continue;
		scan_buf(d->d_buf, d->d_size < budget ? d->d_size : budget, &ta);
		scanned = true;
		budget -= d->d_size < budget ? d->d_size : budget;
	}
	if (!scanned) {
		/*
		 * No section headers (removed by sstrip-like tools): the read-only
		 * PT_LOAD segments instead, code included, since without -z
		 * separate-code (arm64's ld default) .rodata shares the text's
		 * segment.  They hold .dynstr too, but no sign matches a mangled
		 * or imported name there, nor any run of machine code.
		 */
		size_t fsz = 0, nph = 0;
		const char *raw = elf_rawfile(elf, &fsz);

		if (raw && elf_getphdrnum(elf, &nph) == 0)
			for (size_t i = 0; i < nph && budget; i++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
				    (ph.p_flags & PF_W) || ph.p_offset >= fsz)
					continue;
				if (ph.p_filesz > fsz - ph.p_offset)
					ph.p_filesz = fsz - ph.p_offset;
				if (ph.p_filesz > budget)
					ph.p_filesz = budget;
				scan_buf(raw + ph.p_offset, ph.p_filesz, &ta);
				budget -= ph.p_filesz;
			}
	}
	return judge(&ta, ev);
}

/* evidence_elf(), kept in the cache for the file st describes (none if st is zeroed). */
static int judge_file(const struct stat *st, Elf *elf, struct evidence *ev)
{
	int r = evidence_elf(elf, ev);

	if (st->st_ino)
		cache_add(st, r, ev);
	return r;
}

int evidence_of(const struct stat *st, Elf *elf, struct evidence *ev)
{
	int r = st->st_ino ? cache_find(st, ev) : -2;

	return r != -2 ? r : judge_file(st, elf, ev);
}

int evidence_file(int fd, struct evidence *ev)
{
	struct stat st;
	Elf *elf;
	int r = 0;

	memset(ev, 0, sizeof(*ev));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		memset(&st, 0, sizeof(st));
	else if ((r = cache_find(&st, ev)) != -2) {
		close(fd);
		return r;
	}
	elf = sym_elf_open(fd);
	if (!elf)
		return -1;
	r = judge_file(&st, elf, ev);
	elf_end(elf);
	return r;
}

/* Does o's own symbol table name the allocator's entry points?  Then a driver can use them. */
static bool covered(struct image *t, struct obj *o, const char *alloc)
{
	struct hc_err e = { 0 };
	size_t k = strlen("mallctl");

	if (sym_load(t, o, false, &e) < 0)
		return false;
	for (size_t i = 0; i < o->nsyms; i++) {
		const char *n = o->syms[i].name;
		size_t l = strlen(n);

		if (!strcmp(alloc, "jemalloc") && l >= k && !strcmp(n + l - k, "mallctl"))
			return true;
		if (!strcmp(alloc, "tcmalloc") &&
		    (!strcmp(n, "MallocExtension_GetNumericProperty") || !strcmp(n, "tc_malloc")))
			return true;
		if (!strcmp(alloc, "mimalloc") && !strcmp(n, "mi_malloc"))
			return true;
	}
	return false;
}

/* glibc's own objects carry no other allocator: not worth reading. */
static bool out_of_scope(const struct obj *o)
{
	const char *b = strrchr(o->path, '/');

	b = b ? b + 1 : o->path;
	return !o->base || o->is_vdso || o->is_ldso ||
	       !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "libm.so", 7) ||
	       !strncmp(b, "libpthread", 10) || !strncmp(b, "libdl.so", 8) ||
	       !strncmp(b, "librt.so", 8);
}

/* o's file is named after an allocator (libjemalloc.so.2). */
static bool names_allocator(const struct obj *o)
{
	const char *b = strrchr(o->path, '/');

	b = b ? b + 1 : o->path;
	for (size_t i = 0; i < NSIGNS; i++)
		if (strstr(b, signs[i].alloc))
			return true;
	return false;
}

bool evidence_sure(const struct obj *o)
{
	return !out_of_scope(o) && (o->is_exe || names_allocator(o));
}

/* The most of one object's loaded image read when its file cannot be opened. */
#define EV_MAX_MEM (64ull << 20)

/*
 * The signs in o's loaded image, for an object whose file cannot be
 * opened: deleted since it was mapped (an allocator library upgraded or
 * unlinked under the process) while /proc/PID/map_files cannot be followed.
 * What a file without section headers gives (evidence_file()): its
 * read-only PT_LOAD segments, from the program headers in memory.  1, 0,
 * or -1 as evidence_file().
 */
int evidence_mem(const struct obj *o, struct evidence *ev)
{
	uint64_t budget = EV_MAX_MEM;
	struct tally ta;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	bool scanned = false;

	memset(&ta, 0, sizeof(ta));
	memset(ev, 0, sizeof(*ev));
	if (!o->base || mem_read(o->pid, -1, o->base, &eh, sizeof(eh), &(struct hc_err){ 0 }) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    !eh.e_phnum || eh.e_phnum > 64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    mem_read(o->pid, -1, o->base + eh.e_phoff, ph, eh.e_phnum * sizeof(ph[0]),
		     &(struct hc_err){ 0 }) < 0)
		return -1;
	for (unsigned i = 0; i < eh.e_phnum && budget; i++) {
		uint64_t len = ph[i].p_filesz < budget ? ph[i].p_filesz : budget;
		uint64_t at = ph[i].p_vaddr + o->bias;
		char *buf;

		/*
		 * Only within o's own mappings: past them is another object's
		 * memory, whose strings are not o's, or nothing, for which a
		 * buffer of the size the header claims (up to 64 MiB) would be
		 * allocated in vain.
		 */
		if (ph[i].p_type != PT_LOAD || (ph[i].p_flags & PF_W) || !len || at < o->lo ||
		    at >= o->hi)
			continue;
		if (len > o->hi - at)
			len = o->hi - at;
		buf = malloc(len);
		if (!buf)
			break;
		if (mem_read(o->pid, -1, at, buf, len, &(struct hc_err){ 0 }) == 0) {
			scan_buf(buf, len, &ta);
			scanned = true;
			budget -= len;
		}
		free(buf);
	}
	return scanned ? judge(&ta, ev) : -1;
}

static int scan_obj(const struct obj *o, struct evidence *ev)
{
	int r, fd;

	if (out_of_scope(o))
		return 0;
	if (o->ev_known) {
		/* read when sym_load() had the file open */
		*ev = o->ev;
		r = o->ev_r;
	} else {
		fd = obj_open(o, NULL);
		r = fd < 0 && !o->is_vdso ? evidence_mem(o, ev) : evidence_file(fd, ev);
	}
	if (r > 0)
		pr_debug("%s: %s (found: %s)", o->path, ev->alloc, ev->found);
	return r > 0;
}

static void evidence_note(struct image *t, struct obj *o, const struct evidence *ev,
			  struct hc_evidence *out)
{
	out->has_symbols = covered(t, o, ev->alloc);
	snprintf(out->allocator, sizeof(out->allocator), "%s", ev->alloc);
	snprintf(out->object, sizeof(out->object), "%s", o->path);
	snprintf(out->found, sizeof(out->found), "%s", ev->found);
}

bool evidence_likely(const struct obj *o)
{
	struct evidence ev;

	return names_allocator(o) || scan_obj(o, &ev);
}

/*
 * The objects to read, in the order their evidence counts: the executable
 * (where a program's own allocator is), then the others in the order of
 * their mappings: every one with all, else only drv_obj (the driver's).
 * NULL if out of memory.
 */
static struct obj **evidence_order(struct image *t, bool all, const char *drv_obj, size_t *n)
{
	struct obj **order = calloc(t->nobjs + 1, sizeof(*order));

	*n = 0;
	for (int pass = 0; order && pass < 2; pass++)
		for (size_t i = 0; i < t->nobjs; i++) {
			struct obj *o = &t->objs[i];

			if (o->is_exe == (pass == 0) &&
			    (o->is_exe || all || (drv_obj && !strcmp(o->path, drv_obj))))
				order[(*n)++] = o;
		}
	return order;
}

/* Note o's evidence in t->ev_*: only the first, unless it is the driver's own (force). */
static void note_ev(struct image *t, const struct obj *o, const struct evidence *ev, bool force)
{
	if (t->ev_alloc[0] && !force)
		return;
	snprintf(t->ev_alloc, sizeof(t->ev_alloc), "%s", ev->alloc);
	snprintf(t->ev_found, sizeof(t->ev_found), "%s", ev->found);
	t->ev_obj = o->path;
}

/* The first evidence in evidence_order(), as evidence_check() saw it if it ran. */
int evidence_first(struct image *t, struct hc_evidence *out)
{
	size_t n;
	struct obj **order;

	memset(out, 0, sizeof(*out));
	if (t->ev_scanned) {
		*out = t->ev_first;
		return out->allocator[0] ? 1 : 0;
	}
	order = evidence_order(t, true, NULL, &n);
	for (size_t i = 0; order && i < n && !out->allocator[0]; i++) {
		struct evidence ev;

		if (scan_obj(order[i], &ev))
			evidence_note(t, order[i], &ev, out);
	}
	free(order);
	return out->allocator[0] ? 1 : 0;
}

/*
 * only: the driver's object, always read to show its evidence in info;
 * all: every object too (the driver is glibc, or there is none).
 */
int evidence_check(struct image *t, const char *drv, const char *drv_obj, bool all,
		   struct hc_err *err)
{
	size_t n;
	struct obj **order = evidence_order(t, all, drv_obj, &n);
	int ret = 0;

	t->ev_scanned = true;

	if (!order)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct obj *o = order[i];
		struct evidence ev;
		bool mine, same;

		if (!scan_obj(o, &ev))
			continue;
		if (!t->ev_first.allocator[0])
			evidence_note(t, o, &ev, &t->ev_first);
		mine = drv_obj && !strcmp(drv_obj, o->path);
		same = mine && drv && !strncmp(drv, ev.alloc, strlen(ev.alloc));
		/*
		 * Shown, no more: the driver's own; a library's own allocator,
		 * which serves the library, not malloc (one that replaced malloc
		 * would export it in .dynsym, which no strip removes, and the
		 * link-order search would have found it: only the executable's
		 * can be the program's allocator unseen); or an allocator whose
		 * symbols are there.
		 */
		if (same || (!o->is_exe && !mine) || covered(t, o, ev.alloc)) {
			note_ev(t, o, &ev, same);
			continue;
		}
		ret = err_sethint(err, HC_E_NO_SYM, 0,
				  "give heapctl its symbols: --debug-file FILE (the unstripped binary "
				  "or its debug file), DEBUGINFOD_URLS (a debuginfod server), or a "
				  "build that keeps them",
				  "pid %d: %s has its own %s (found: %s) but no symbols for it",
				  t->pid, o->path, ev.alloc, ev.found);
		break;
	}
	free(order);
	return ret;
}

const struct sym_judge evidence_judge = { evidence_likely, evidence_sure, evidence_of };
