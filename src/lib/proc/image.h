/* SPDX-License-Identifier: MIT */
/* The image of a process (struct image): its objects, symbols and mappings.  Private to the library. */
#ifndef HC_IMAGE_H
#define HC_IMAGE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <heapctl/heapctl.h>

#include "arch.h"

/* 24 bytes: libc has 3,000, each table's pages are fresh (2 us each under a hypervisor) */
struct sym {
	uint64_t raddr;   /* runtime address in the target */
	const char *name; /* into obj->strs */
	uint32_t size;    /* st_size, at most 4 GiB - 1 */
	bool global;      /* not STB_LOCAL */
};

/* Signs of an allocator in an object's read-only data (evidence.c). */
struct evidence {
	const char *alloc; /* "jemalloc", "tcmalloc", "mimalloc" */
	char found[192];   /* what was found, for people: "_RJEM_MALLOC_CONF string, ..." */
};

/*
 * Which C library a process runs on, by evidence (libc.c): the loader the
 * executable names, the libc's own strings and symbols.  Read once, when
 * first asked.
 */
enum libc_kind { LIBC_UNKNOWN, LIBC_GLIBC, LIBC_MUSL };
struct libc_id {
	bool known;              /* libc_identify() ran */
	enum libc_kind kind;
	/* no PT_INTERP: nothing is loaded at run time, libc is in the executable */
	bool is_static;
	char version[32];        /* "1.2.3", "2.36", or "" when the process carries none */
	char interp[128];        /* the executable's PT_INTERP, or "" */
	/* musl's malloc: "mallocng" (1.2.1 and later), "oldmalloc", or NULL if unknown */
	const char *malloc_impl;
	char found[160];         /* what told, for people: "loader /lib/ld-musl-x86_64.so.1" */
	struct obj *obj;         /* the object libc is in (the executable when static), or NULL */
};

/* One mapped ELF object (executable, DSO or the vDSO). */
struct obj {
	char *path;      /* as /proc/PID/maps names it */
	char *open_path; /* the file to open instead of the mapping's (a test's), or NULL */
	const char *proc;        /* the target's /proc/PID (or its live task's) */
	uint64_t map_lo, map_hi; /* the mapping that named it: PROC/map_files/LO-HI */
	pid_t pid;       /* the target */
	uint64_t lo, hi; /* whole mapped range */
	uint64_t base;   /* lowest mapping with file offset 0 (ELF header) */
	uint64_t bias;   /* runtime address - ELF address */
	uint64_t text_lo, text_hi;  /* hull of executable mappings */
	uint64_t eh_hdr, eh_hdr_len; /* .eh_frame_hdr in the target, or 0 */
	uint64_t dynamic;            /* PT_DYNAMIC in the target, or 0 */
	uint64_t dynamic_len;        /* its p_memsz */
	uint64_t interp, interp_len; /* PT_INTERP in the target (the loader's path), or 0 */
	uint32_t link_idx;           /* place in the dynamic linker's search order */
	uint64_t link_map;           /* its entry in that list, or 0 */
	bool is_exe, is_vdso, is_ldso;
	bool syms_loaded;
	bool unreadable;     /* sym_load() could read its symbols from nowhere */
	bool malloc_checked; /* obj_malloc_owner() looked for malloc here */
	bool debug_tried;
	struct sym *syms; /* nsyms functions, sorted by raddr once sorted is set */
	bool sorted;
	/* where.c's verdict on each function once asked: 0 not yet, 1 fine, 2 a call must wait */
	uint8_t *verdict;
	size_t nsyms;
	size_t ndata;     /* data symbols (STT_OBJECT), after them: syms[nsyms + i] */
	char *strs;
	/* ".dynsym", ".symtab", ".gnu_debugdata", or "debug file PATH",
	 * "debuginfod PATH", "--debug-file PATH" (then it is debug_path) */
	const char *symsrc;
	char *debug_path;
	char build_id[66]; /* hex, from the file (sym_load()), or "" */
	/* its allocator signs, read by sym_load() while the file was open (evidence.c) */
	struct evidence ev;
	int ev_r;
	bool ev_known;
};

/* One line of /proc/PID/maps as maps_load() last read it; t->vmas is sorted by address. */
struct vma {
	uint64_t lo, hi;
	unsigned int flags; /* VMA_* */
};
#define VMA_X 1u     /* executable */
#define VMA_ANON 2u  /* no file and no name */
#define VMA_STACK 4u /* "[stack]": the main thread's stack */

struct Elf;

/*
 * The image: what proc/ reads of a live process with nothing stopped, and
 * all a proc/ function may touch (it takes a struct image *, never the
 * whole target).
 */
struct image {
	pid_t pid;
	/* /proc/PID, or /proc/PID/task/TID of a live thread when the leader has exited */
	char proc[64];
	struct hc_target_opts opts;
	const struct hc_arch *arch;
	int memfd;
	struct obj *objs;
	size_t nobjs;
	struct Elf *debug_elf; /* --debug-file, opened and checked once (sym_debug_file_check()) */
	/*
	 * The mappings maps_load() saw, in address order: every one, or with
	 * PROCMAP_QUERY (vmas_partial) every file's and executable one and the
	 * main stack, and those vma_at() asked for since in vasked.
	 */
	struct vma *vmas;
	size_t nvmas;
	bool vmas_partial;
#define VMA_ASKED 8
	struct vma vasked[VMA_ASKED];
	unsigned int nasked;
	int mapsfd; /* /proc/PID/maps, open for the target's life */
	uint64_t start_stack; /* where the main thread's stack began (argc), or 0 (image_init()) */
	/* the object that serves malloc() (obj_malloc_owner()), or NULL */
	struct obj *malloc_obj;
	/*
	 * An object searched before malloc was found whose symbols could be
	 * read neither from its file nor from its loaded image: it may define
	 * malloc itself (obj_malloc_owner()), so no allocator can be trusted.
	 */
	struct obj *malloc_unread;
	struct hc_err malloc_unread_err;
	/* evidence_check(): the allocator's signs and where they are, or "" */
	char ev_alloc[16];
	char ev_found[192];
	const char *ev_obj;
	/* the first object evidence_check() found signs in, or allocator "" */
	struct hc_evidence ev_first;
	bool ev_scanned;
	/* maps_load(): the dynamic loader has not finished (r_debug not RT_CONSISTENT) */
	bool loading;
	/* what sym_load() asks of an object's allocator signs, or NULL (struct sym_judge) */
	const struct sym_judge *judge;
	/* the C library, as libc_identify() found it */
	struct libc_id libc;
};


/*
 * The judgement sym_load() asks for, passed in by whoever opened the image
 * (api.c gives evidence.c's): whether an object may hold an allocator, so
 * its symbols are worth looking for elsewhere (likely); whether its signs
 * will be read whichever driver is chosen (sure), and reading them while
 * the file is open (signs).  With none, sym_load() reads the object's own
 * symbols and nothing else.
 */
struct stat;
struct sym_judge {
	bool (*likely)(const struct obj *o);
	bool (*sure)(const struct obj *o);
	int (*signs)(const struct stat *st, struct Elf *elf, struct evidence *ev);
};

/*
 * An image with nothing open yet (memfd and mapsfd -1) whose proc is
 * /proc/PID, or a live thread's directory when the leader has exited.
 * image_fini() closes what it opened and frees the objects.
 */
int image_init(struct image *im, pid_t pid);
void image_fini(struct image *im);

/* maps + symbols (sym.c) */
int maps_load(struct image *t, struct hc_err *err);
/* One /proc/PID/maps line; its path is whatever name the target gave a mapping. */
struct mapline {
	uint64_t lo, hi, off;
	char perms[5];
	unsigned long inode;
	char path[PATH_MAX];
};
int maps_parse_line(const char *line, struct mapline *m);
struct obj *obj_at(struct image *t, uint64_t raddr);
/*
 * The mapping holding raddr when maps_load() looked, or NULL.  One asked of
 * the kernel since lives in a slot of vasked that the 8th later such
 * lookup reuses: use the result at once, do not keep the pointer.
 */
const struct vma *vma_at(struct image *t, uint64_t raddr);
/*
 * .dynsym and .symtab, and --debug-file for the executable; with debug, if
 * there is no .symtab: .gnu_debugdata, a separate debug file, debuginfod.
 */
int sym_load(struct image *t, struct obj *o, bool debug, struct hc_err *err);
/*
 * The part of sym_load() after the file is open: symbols of an ELF image
 * already handed to libelf (the file's contents are the target's: fuzzed
 * from memory).  elf may be NULL (then: not an ELF file).
 */
int sym_load_elf(struct image *t, struct obj *o, struct Elf *elf, bool debug, struct hc_err *err);
/*
 * .dynsym of o from its loaded image (PT_DYNAMIC's DT_SYMTAB, DT_STRTAB and
 * hash table), for an object whose file cannot be read; sym_load() falls
 * back to it.  Needs obj_read_phdrs() done; the target's bytes are bounded
 * and checked (fuzzed).  o->symsrc becomes ".dynsym in memory".
 */
int sym_load_mem(struct image *t, struct obj *o, struct hc_err *err);
/* The ELF and program headers read from the target's memory at o->base. */
int obj_read_phdrs(struct image *t, struct obj *o, struct hc_err *err);
/* --debug-file: an ELF file with .symtab, of the executable's build-id. */
int sym_debug_file_check(struct image *t, struct hc_err *err);
/*
 * A regular file opened for reading (O_NONBLOCK, O_CLOEXEC): path resolved in
 * pid's root with RESOLVE_IN_ROOT (troot_open()), or in heapctl's when pid is
 * 0; nofollow is 0 or O_NOFOLLOW.  A FIFO, device or dangling link is never
 * opened (EINVAL).  Fills st if given.  Returns an fd, or -1 with errno.
 */
struct stat;
int file_open(pid_t pid, const char *path, int nofollow, struct stat *st);
/* o's file, the one mapped: through map_files, else its name in the target's root. */
int obj_open(const struct obj *o, struct stat *st);
/* Where o's .eh_frame is mapped, from its file's section headers (ehframe.c); -1 none. */
int obj_eh_frame(const struct obj *o, uint64_t *raddr, uint64_t *len);
/*
 * libelf's view of the ELF file open at fd (fd < 0: none), all of it in
 * memory; fd is closed.  NULL if it is not an ELF file.  elf_end() ends it.
 */
struct Elf *sym_elf_open(int fd);
/* Exact name; returns the symbol or NULL. */
const struct sym *sym_by_name(const struct obj *o, const char *name);
/* Runtime address of data symbol name in o (from o's symbol source), or 0. */
uint64_t sym_data(const struct obj *o, const char *name);
/*
 * Load and sort the symbols of the objects most stacks go through (the
 * executable, the one that holds also_at, libc's syscall gadget as a rule,
 * the allocator's), so that sym_at() mostly reads no file and sorts nothing
 * while a thread is stopped.
 */
void sym_prepare(struct image *t, uint64_t also_at);
/* Function containing raddr, or NULL. */
const struct sym *sym_at(struct image *t, uint64_t raddr, struct obj **op);
/* The same in o, whose symbols are sorted already; reads and sorts nothing. */
const struct sym *obj_sym_at(const struct obj *o, uint64_t raddr);
/* v by address, equal addresses kept in their order (stable). */
void syms_sort(struct sym *v, size_t n);
/*
 * The object that serves malloc() in t: the executable if it defines malloc,
 * else the first definition in the dynamic linker's search order.  Cached in
 * t->malloc_obj; NULL if nothing defines malloc.
 */
struct obj *obj_malloc_owner(struct image *t);
/* The nearest global function below (dir < 0) or above (dir > 0) s in its object, or NULL. */
const struct sym *sym_global_near(const struct obj *o, const struct sym *s, int dir);
void objs_free(struct image *t);

#endif
