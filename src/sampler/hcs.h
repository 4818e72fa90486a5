/* SPDX-License-Identifier: MIT */
/*
 * heapctl's injected sampler: the layout heapctl and the sampler share.
 *
 * The sampler (sampler.c, built as heapctl-sampler.so and carried inside
 * heapctl) is loaded into a target whose allocator cannot profile.  Its
 * state is one struct hcs_state in its .data, found by heapctl by the
 * magic at its start; its tables are in its .bss, which heapctl reads with
 * process_vm_readv: a dump runs no code in the target.
 *
 * Addresses are uint64_t on both sides: heapctl and the target have the
 * same word size (x86_64, aarch64).
 */
#ifndef HC_HCS_H
#define HC_HCS_H

#include <stdint.h>

#define HCS_MAGIC 0x314c504d41534348ull /* "HCSAMPL1" */
#define HCS_VERSION 6
/* The memfd's name: maps shows "/memfd:heapctl-sampler (deleted)". */
#define HCS_NAME "heapctl-sampler"

#define HCS_MAXFRAMES 48
#define HCS_LIVE_BITS 16   /* sampled pointers live at once: at most 3/4 of 2^16 */
#define HCS_FILTER_BITS 16 /* free()'s prefilter: 2^16 counters */
#define HCS_STACKS 16384   /* distinct stacks */
#define HCS_STACK_HASH_BITS 15
#define HCS_MAXSLOTS 2048  /* GOT slots patched */
#define HCS_PROBES 32      /* open addressing: probes per insert or lookup */
#define HCS_MAXOBJS 64     /* objects the freestanding flavour's unwinder knows */

/*
 * The functions hooked, as X(id, symbol).  The C++ ones are hooked only
 * where the allocator's own object defines them (libstdc++'s operator new
 * calls malloc through its own GOT, which is hooked already).
 */
#define HCS_HOOKS(X)                                                        \
	X(MALLOC, "malloc") X(FREE, "free") X(CALLOC, "calloc")                 \
	X(REALLOC, "realloc") X(REALLOCARRAY, "reallocarray")                   \
	X(POSIX_MEMALIGN, "posix_memalign") X(ALIGNED_ALLOC, "aligned_alloc")   \
	X(MEMALIGN, "memalign") X(VALLOC, "valloc") X(PVALLOC, "pvalloc")       \
	X(MALLOCX, "mallocx") X(RALLOCX, "rallocx") X(XALLOCX, "xallocx")       \
	X(SDALLOCX, "sdallocx") X(DALLOCX, "dallocx")                           \
	X(NEW, "_Znwm") X(NEW_ARR, "_Znam") X(NEW_NT, "_ZnwmRKSt9nothrow_t")    \
	X(NEW_ARR_NT, "_ZnamRKSt9nothrow_t") X(NEW_AL, "_ZnwmSt11align_val_t")  \
	X(NEW_ARR_AL, "_ZnamSt11align_val_t") X(DEL, "_ZdlPv")                  \
	X(DEL_ARR, "_ZdaPv") X(DEL_SZ, "_ZdlPvm") X(DEL_ARR_SZ, "_ZdaPvm")      \
	X(DEL_AL, "_ZdlPvSt11align_val_t") X(DEL_ARR_AL, "_ZdaPvSt11align_val_t") \
	X(DEL_SZ_AL, "_ZdlPvmSt11align_val_t") X(DEL_ARR_SZ_AL, "_ZdaPvmSt11align_val_t")

#define HCS_ID(id, name) HCS_H_##id,
enum hcs_hook { HCS_HOOKS(HCS_ID) HCS_NHOOK };
#undef HCS_ID
/* The first C++ one: hooked only next to the allocator's malloc. */
#define HCS_FIRST_CXX HCS_H_NEW

/* A sampled allocation: ptr 0 empty, 1 freed (a tombstone). */
struct hcs_live {
	uint64_t ptr;
	/* size << 24 | stack id; 0 while being written */
	uint64_t meta;
};
#define HCS_TOMB 1ull

struct hcs_stack {
	uint32_t nframes;
	uint32_t hash;
	uint64_t frames[HCS_MAXFRAMES]; /* return addresses, innermost first */
	/*
	 * Allocations sampled here since the profile started, freed or not,
	 * and their bytes (heap_v2's accumulated pair): added to atomically on
	 * the sampled path, zeroed with the live table (clear()).
	 */
	uint64_t accum_objs, accum_bytes;
};

/* pending: not hooked (or put back); changed: the process wrote it since, left alone */
enum hcs_slot_state { HCS_SLOT_PENDING, HCS_SLOT_PATCHED, HCS_SLOT_CHANGED, HCS_SLOT_FAILED };

/* One GOT slot: heapctl fills addr, id and prot; the sampler the rest. */
struct hcs_slot {
	uint64_t addr;
	uint64_t saved; /* the value before the hook */
	uint32_t id;    /* enum hcs_hook */
	uint32_t prot;  /* the page's protection, PROT_* */
	uint32_t state; /* enum hcs_slot_state */
	uint32_t err;   /* errno of a failed mprotect */
};

/*
 * An object the freestanding flavour unwinds through: its code and its
 * PT_GNU_EH_FRAME, as mapped.  heapctl fills the table (the sampler's own
 * object among them) before hcs_init() and may append to it later: the
 * entry first, nobjs after it, in separate writes.
 */
struct hcs_obj {
	uint64_t lo, hi; /* text range */
	/*
	 * Runtime address of PT_GNU_EH_FRAME.  The unwinder reads only the
	 * format GNU ld and lld write (version 1; eh_frame_ptr pcrel|sdata4,
	 * fde_count udata4, table datarel|sdata4), and only its sorted table:
	 * for an object linked without one (gcc leaves it out of -static
	 * links) heapctl may build one from .eh_frame, mapped within 2 GiB
	 * of the FDEs, whose offsets from it are 32 bits.
	 */
	uint64_t eh_frame_hdr;
};

/* struct hcs_state.flavour: how the sampler was built, hence how heapctl loads it */
#define HCS_FLAVOUR_GLIBC 1 /* dlopen()ed; TLS, libgcc_s's unwinder, pthread_atfork() */
#define HCS_FLAVOUR_FREE 2  /* mapped by heapctl; no libc, no TLS, its own unwinder */

/*
 * An inline hook (a static binary: no GOT slot leads to its malloc),
 * recorded by heapctl before it patches: whoever finds the sampler can
 * undo it.  state: HCS_SLOT_PENDING (not patched, or put back),
 * HCS_SLOT_PATCHED, HCS_SLOT_CHANGED (the program rewrote the bytes).
 */
#define HCS_MAXINLINE 32
struct hcs_inline {
	uint64_t addr;      /* the patched bytes */
	uint8_t orig[16];   /* what they were */
	uint8_t patch[16];  /* what heapctl wrote */
	uint32_t len;       /* of both */
	uint32_t id;        /* enum hcs_hook */
	uint32_t state;
	uint32_t pad;
};

/* hcs_init() results */
#define HCS_ERR_UNWIND 1 /* no _Unwind_Backtrace: libgcc_s.so.1 could not be loaded */

struct hcs_state {
	uint64_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct hcs_state) */
	/* The sampler's own addresses (relocated at load). */
	uint64_t fn_init, fn_patch, fn_unpatch, fn_enable, fn_reset;
	uint64_t hook[HCS_NHOOK];
	uint64_t live, filter, stacks, slots; /* the tables in .bss */
	/*
	 * jemalloc's hooks_t for experimental.hooks.install (alloc, dalloc,
	 * expand, extra): an allocator linked into the executable has no GOT
	 * slot; its own hooks tell the sampler instead.
	 */
	uint64_t je_hooks[4];
	uint64_t je_handle; /* what the install returned; 0: not installed */
	uint64_t text_lo, text_hi;            /* frames to leave out of stacks */
	/* Written by heapctl before hcs_init(). */
	uint64_t orig[HCS_NHOOK]; /* the real definitions; 0: not hooked */
	uint64_t pagesize;
	/* State. */
	uint64_t interval; /* mean bytes between samples */
	/*
	 * 0: not sampling; else sampling for the profile numbered so (the
	 * generation, never 0): a thread whose countdown was drawn for another
	 * draws a new one at its next allocation.
	 */
	uint32_t enabled;
	uint32_t initialised;
	uint32_t nslots;   /* slots in use (heapctl appends, then hcs_patch()) */
	uint32_t in_child; /* a fork()ed copy: never samples */
	/*
	 * GOT slots hooked now: the hooks see every free, so what was sampled
	 * stays right while sampling is off (enabled 0).  unpatch() clears it,
	 * and the tables with it.
	 */
	uint32_t hooked;
	uint32_t pad;
	uint64_t generation; /* profiles started: a new interval, or a reset */
	/* Counters, updated atomically. */
	uint64_t samples;        /* allocations sampled since the profile started */
	uint64_t live_count;     /* sampled and not freed */
	uint64_t dropped_live;   /* no room in the live table */
	uint64_t dropped_stacks; /* no room in the stack table */
	uint64_t nstacks;        /* stack ids handed out (from 1) */
	uint64_t unwind_short;   /* stacks the unwinder could not walk */
	uint32_t flavour;        /* HCS_FLAVOUR_*, set at build time */
	/* freestanding: 1 once a thread found the thread table full (it shares one countdown) */
	uint32_t tls_full;
	/* Freestanding: objects to unwind through, written by heapctl (struct hcs_obj). */
	uint32_t nobjs;
	uint32_t pad2;
	struct hcs_obj objs[HCS_MAXOBJS];
	/* Inline hooks (inline.c): their trampolines' page, and each hook. */
	uint64_t tramp;
	uint32_t ninline;
	uint32_t pad3;
	struct hcs_inline inl[HCS_MAXINLINE];
};

#endif
