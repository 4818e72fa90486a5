/* SPDX-License-Identifier: MIT */
/* What the files of sampler/ share (find.c, hooks.c, load.c, inject.c, read.c). */
#ifndef HC_INJECT_INT_H
#define HC_INJECT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject.h"

struct engine;
struct hc_err;
struct obj;

/* find.c */
extern const char *const hook_names[HCS_NHOOK];
/* One mapping of the target, as read_maps() saw it. */
struct range {
	uint64_t lo, hi;
	int prot;
	bool elf_start; /* a file's first page: maybe an object heapctl has not read */
	char *path;
};
/* Its mappings: from the memfd, or from the file load_file() made (both deleted by then). */
bool is_sampler(const char *path);
/* The target's mappings; NULL on failure (err set).  Fills in's mappings when it finds it. */
struct range *read_maps(struct engine *t, size_t *n, struct inj *in, struct hc_err *err);
void free_maps(struct range *r, size_t n);
/* The protection of the mapping holding a, or -1. */
int prot_at(const struct range *r, size_t n, uint64_t a);
/* in->state from the sampler's writable mappings; 0 with none found. */
int find_state(struct engine *t, struct inj *in, struct hc_err *err);
/* in->s read again from the target. */
int read_state(struct engine *t, struct inj *in, struct hc_err *err);
/* "/proc/self/fd/N", padded so the loader's copy of the name can take the memfd's. */
void fd_path(char *out, size_t outlen, int64_t fd);
/* The loader's name for the object at link map entry map, given, made the memfd's. */
void rename_loaded(struct engine *t, uint64_t map, const char *given);
/* The same for a sampler found loaded under a /proc/self/fd name. */
void rename_stale(struct engine *t);

/* hooks.c */
void find_originals(struct engine *t, struct obj *own, uint64_t *orig, uint64_t *size);
int new_slots(struct engine *t, struct inj *in, const uint64_t *orig, struct hcs_slot *out,
	      unsigned *n, bool only_new_objects, struct hc_err *err);

/* load.c */
uint64_t libc_fn(struct engine *t, const char *name);
int reclaim_memfds(struct engine *t, struct hc_err *err);
int load(struct engine *t, struct inj *in, struct hc_err *err);
int make_memfd(struct engine *t, const char *name, int64_t *rfd, int *lfd, char *why,
	       size_t whylen, struct hc_err *err);
int close_memfd(struct engine *t, int64_t fd, struct hc_err *err);

/* map.c: the freestanding sampler, mapped by heapctl where there is no dlopen */
int map_sampler(struct engine *t, struct inj *in, struct hc_err *err);
/* Its .eh_frame_hdr's address relative to where it is mapped; 0 none. */
uint64_t map_eh_frame_hdr(uint16_t machine);
/* munmap in the borrowed thread, even while heapctl is being cancelled; errors ignored. */
void remote_munmap(struct engine *t, uint64_t addr, uint64_t len);

/* inline.c: inline hooks, where no GOT slot leads to the allocator */
int unwind_prepare(struct engine *t, struct inj_prep *p, struct hc_err *err);
int unwind_map(struct engine *t, struct inj_prep *p, struct hcs_obj *out, unsigned *n,
	       struct hc_err *err);
int inline_install(struct engine *t, struct inj *in, uint64_t *orig, struct hc_err *err);
int inline_repatch(struct engine *t, struct inj *in, struct hc_err *err);
int inline_remove(struct engine *t, struct inj *in, unsigned *left, struct hc_err *err);
/*
 * Take out the hooks' and unwind tables' pages the state does not name (a
 * killed heapctl's), in->s as just read; what cannot be done is only said
 * (-v).
 */
void inline_take_out_strays(struct engine *t, struct inj *in);

#endif
