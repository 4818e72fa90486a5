/* SPDX-License-Identifier: MIT */
/*
 * heapctl: make a live process call its own allocator's control functions.
 *
 * Model: hc_target_open() inspects a process without stopping it (maps,
 * symbols, allocator).  Every operation below then borrows exactly one
 * thread at a safe point, runs the allocator's functions on it, restores the
 * thread bit for bit and detaches.  Other threads keep running throughout.
 *
 * Errors: every function takes a caller-owned struct hc_err as its last
 * parameter and returns 0 on success, -1 on failure (NULL for pointers).
 * The first failure recorded wins; outer layers only add context.
 *
 * The library never prints: install a sink with hc_log_set().
 *
 * Thread safety: a struct hc_target is used by one thread at a time.  The
 * library blocks SIGCHLD in the calling thread while it waits for the
 * target; a multi-threaded host must not consume SIGCHLD elsewhere.
 *
 * Cancellation: if the caller blocks SIGINT, SIGTERM, SIGHUP or SIGQUIT, their arrival
 * cancels the operation: a call already running in the target is finished
 * (abandoning it could leave an allocator lock held), the target is restored,
 * and the operation fails with HC_E_CANCELLED.  The signal stays pending for
 * the caller to act on.
 */
#ifndef HEAPCTL_HEAPCTL_H
#define HEAPCTL_HEAPCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HC_API __attribute__((visibility("default")))
#define HC_MUST_CHECK __attribute__((warn_unused_result))

#define HC_VERSION "0.1.0"

/* X-macro: code, default hint.  The single source of codes and hints. */
#define HC_ERRORS(X)                                                                         \
	X(HC_OK, "")                                                                         \
	X(HC_E_USAGE, "see heapctl --help")                                                  \
	X(HC_E_NO_PROC, "check the pid with ps; the process may have exited")               \
	X(HC_E_PERM, "run as the target's user or as root (CAP_SYS_PTRACE); with Yama, "    \
		     "/proc/sys/kernel/yama/ptrace_scope must be 0 or 1")                   \
	X(HC_E_TRACED, "detach the other tracer (gdb, strace) first")                       \
	X(HC_E_NO_ALLOC, "heapctl drives jemalloc, tcmalloc, mimalloc, glibc malloc and "    \
			 "musl's; the target uses none of them")                            \
	X(HC_E_NO_SYM, "the symbol may be stripped; install the debug package")             \
	X(HC_E_UNSAFE, "every thread was inside the allocator; retry, or raise --timeout")   \
	X(HC_E_TIMEOUT, "raise --timeout, or retry when the process is less busy")           \
	X(HC_E_GONE, "the process exited while heapctl worked on it")                       \
	X(HC_E_CANCELLED, "the call in flight was finished and the target restored")            \
	X(HC_E_FAULT, "the call faulted inside the target; the thread was restored")         \
	X(HC_E_REMOTE, "the allocator refused the request")                                 \
	X(HC_E_PROF_OFF, "restart the process with MALLOC_CONF=prof:true,prof_active:false " \
			 "(no cost while inactive)")                                        \
	X(HC_E_NO_CTL, "list names in jemalloc(3), section MALLCTL NAMESPACE")               \
	X(HC_E_TYPE, "check the value's type in jemalloc(3)")                               \
	X(HC_E_ARGS, "too many arguments for this architecture's calling convention")        \
	X(HC_E_UNSUPPORTED, "heapctl cannot act safely on this target")                     \
	X(HC_E_IO, "check the path and free space")                                         \
	X(HC_E_NOMEM, "free some memory and retry")                                         \
	X(HC_E_INTERNAL, "please report this as a bug with -vvv output")                    \
	X(HC_E_FORMAT, "not a jemalloc heap profile; make one with 'heapctl dump'")

#define HC_ERR_ENUM(code, hint) code,
enum hc_errc { HC_ERRORS(HC_ERR_ENUM) HC_E__COUNT };
#undef HC_ERR_ENUM

struct hc_err {
	enum hc_errc code;
	int sys_errno;  /* local errno behind the failure, or 0 */
	char msg[256];  /* what failed, naming the pid/tid/symbol */
	char hint[256]; /* what the user can do about it */
	/* the failure is the caller's own file's (hc_prof_dump()'s out_path), not the target's */
	bool local;
};

/* Name of a code ("HC_E_PERM") and its default hint. */
HC_API const char *hc_err_name(enum hc_errc code);
HC_API const char *hc_err_default_hint(enum hc_errc code);

enum hc_log_level { HC_LOG_ERR, HC_LOG_WARN, HC_LOG_INFO, HC_LOG_DEBUG, HC_LOG_TRACE };
typedef void (*hc_log_fn)(enum hc_log_level level, const char *msg);
/* Install the log sink; messages above level are dropped.  NULL silences. */
HC_API void hc_log_set(hc_log_fn fn, enum hc_log_level level);

struct hc_target;
struct hc_evidence;

/* heapctl's sampler: the mean bytes between samples unless told otherwise. */
#define HC_SAMPLE_BYTES_DEFAULT (512u * 1024)

struct hc_target_opts {
	pid_t tid;          /* 0: pick a thread at a safe point; else force this one */
	unsigned timeout_ms; /* whole-operation budget; 0 means 30 s */
	/*
	 * The executable's symbols, from this file (the unstripped binary or its
	 * debug file), or NULL.  Its build-id must match the executable's.
	 */
	const char *debug_file;
	/*
	 * Never ask debuginfod (DEBUGINFOD_URLS), e.g. when opening every
	 * process of the machine in turn.
	 */
	bool no_debuginfod;
	/*
	 * If not NULL: when hc_target_open() fails with HC_E_NO_SYM or
	 * HC_E_NO_ALLOC, what hc_evidence_read() would say, from the objects
	 * it has just read (zeroed otherwise).  Used by hc_target_open() only.
	 */
	struct hc_evidence *evidence;
	/*
	 * Which profiler hc_prof_set(t, true) starts (enum hc_sampler_mode):
	 * auto is the allocator's own when it has one that can run, else
	 * heapctl's injected sampler; an installed sampler is always used.
	 */
	int sampler;
	/*
	 * The sampler's mean interval; 0: the default (HC_SAMPLE_BYTES_DEFAULT)
	 * when it starts, or the interval it samples with already
	 */
	uint64_t sample_bytes;
};
enum hc_sampler_mode { HC_SAMPLER_AUTO, HC_SAMPLER_NATIVE, HC_SAMPLER_INJECT };

/*
 * Inspect pid: maps, objects, symbols, allocator.  Does not stop anything.
 * Fails with HC_E_NO_PROC, HC_E_PERM, HC_E_NO_ALLOC, and whatever
 * hc_pid_check() refuses (o->tid is checked too).  Free with
 * hc_target_close().
 */
HC_API HC_MUST_CHECK struct hc_target *hc_target_open(pid_t pid, const struct hc_target_opts *o,
						      struct hc_err *err);
HC_API void hc_target_close(struct hc_target *t);

/*
 * Each operation below borrows a thread of t for as long as it needs one
 * (its first remote call to its last) and gives it back.  Between
 * hc_session_begin() and hc_session_end() the operations share one borrow:
 * the thread is stopped once, at the first that needs it, and given back
 * at the end.  Nothing is stopped by a session that makes no call.
 * hc_session_end() keeps the first error (and returns -1 if err is set).
 */
HC_API void hc_session_begin(struct hc_target *t);
HC_API int hc_session_end(struct hc_target *t, struct hc_err *err);

/*
 * Whether pid (and tid, unless 0) can be inspected at all, from /proc alone
 * (nothing is stopped).  Fails, each with its own message and hint, for no
 * such process (HC_E_NO_PROC), a thread id given as a pid (HC_E_USAGE), a
 * kernel thread (HC_E_UNSUPPORTED), a zombie, naming its parent
 * (HC_E_NO_PROC), a tid of another process, naming it (HC_E_USAGE).
 * hc_target_open() makes the same checks; this is for callers that only
 * read /proc (hc_maps_read()).
 */
HC_API HC_MUST_CHECK int hc_pid_check(pid_t pid, pid_t tid, struct hc_err *err);

/* What /proc/PID/status and stat say of a process; nothing is stopped. */
struct hc_proc {
	char name[64]; /* comm */
	char state;    /* R, S, D, T, t, Z, X */
	pid_t tgid;    /* the process a thread id belongs to */
	pid_t ppid;
	long euid;     /* effective uid (not the owner of /proc/PID), -1 if unknown */
	uint64_t rss;  /* VmRSS in bytes */
	bool kthread;  /* a kernel thread (PF_KTHREAD): no user memory */
};
/* Fills p; fails with HC_E_NO_PROC if there is no such pid. */
HC_API HC_MUST_CHECK int hc_proc_read(pid_t pid, struct hc_proc *p, struct hc_err *err);

/* Where things were found: for `heapctl info`. */
struct hc_where {
	const char *allocator;  /* "jemalloc" */
	const char *object;     /* path of the object that holds it */
	const char *prefix;     /* symbol prefix, e.g. "" or "je_" or "_rjem_" */
	/*
	 * Where the symbols came from: ".dynsym", ".symtab", ".gnu_debugdata",
	 * "debug file PATH", "debuginfod PATH" or "--debug-file PATH".
	 */
	const char *symtab;
	uint64_t ctl_raddr;     /* address of <prefix>mallctl in the target */
	uint64_t stats_raddr;   /* address of <prefix>malloc_stats_print */
	unsigned ncandidates;   /* allocators found in the process */
	const char *others;     /* other allocator-looking objects, or "" */
	/*
	 * The object whose malloc() the program's calls bind to: the executable
	 * if it defines malloc, else the first definition in the dynamic
	 * linker's search order (LD_PRELOAD, then DT_NEEDED breadth-first).
	 */
	const char *malloc_object;
	/*
	 * How it came first: "executable" (its own), "LD_PRELOAD" (named in the
	 * process's environment), "search order" (DT_NEEDED, ld.so.preload), or "".
	 */
	const char *malloc_via;
	/*
	 * Signs of an allocator found in an object's read-only data, symbols
	 * or not (its conf-variable and message strings): the allocator, the
	 * object and what was found, or "" when nothing was.
	 */
	const char *evidence;
	const char *evidence_object;
	const char *evidence_found;
};
HC_API void hc_target_where(struct hc_target *t, struct hc_where *w);

/*
 * The allocator a process carries by the signs in its objects' read-only
 * data (evidence), without stopping it: reads only /proc and ELF files.
 * Returns 1 with ev filled, 0 when no object shows one, -1 on failure.
 * has_symbols: the object also names the allocator's entry points.
 */
struct hc_evidence {
	char allocator[16]; /* "jemalloc", "tcmalloc", "mimalloc" */
	char object[512];
	char found[192];
	bool has_symbols;
};
HC_API int hc_evidence_read(pid_t pid, struct hc_evidence *ev, struct hc_err *err);

/* Values of allocator controls, typed.  HC_T_INT is a C int (glibc's mallopt). */
enum hc_type { HC_T_VOID, HC_T_BOOL, HC_T_UNSIGNED, HC_T_SIZE, HC_T_SSIZE, HC_T_U64,
	       HC_T_I64, HC_T_U32, HC_T_STRING, HC_T_INT };

struct hc_value {
	enum hc_type type;
	union {
		bool b;
		uint64_t u; /* unsigned types */
		int64_t i;  /* HC_T_SSIZE, HC_T_I64, HC_T_INT */
	};
	char str[512];  /* HC_T_STRING */
	char note[160]; /* a caveat about the value for humans, or "" */
};

/* Format v for humans and scripts ("true", "4096", "abc"). */
HC_API void hc_value_format(const struct hc_value *v, char *out, size_t len);
/* The C spelling of a type: "size_t", "const char *". */
HC_API const char *hc_type_name(enum hc_type type);
/*
 * Parse text as a value of type, strictly: numbers are plain decimal digits
 * (a leading '-' only for signed types; no blanks, '+', leading zeros or
 * 0x) within the type's range; booleans are true/false, 1/0, yes/no, on/off
 * in any case; strings are taken as they are.  name is for the message.
 * Fails with HC_E_TYPE and a hint.
 */
HC_API HC_MUST_CHECK int hc_value_parse(const char *name, enum hc_type type, const char *text,
					struct hc_value *v, struct hc_err *err);

/* Allocator facts for `heapctl info`. */
struct hc_info {
	char version[64];
	bool prof_built;   /* config.prof */
	bool prof_enabled; /* opt.prof */
	bool prof_active;  /* prof.active */
	char conf[32][96]; /* "name=value" for key opt.* settings */
	unsigned nconf;
};
HC_API HC_MUST_CHECK int hc_info_get(struct hc_target *t, struct hc_info *info,
				     struct hc_err *err);

HC_API HC_MUST_CHECK int hc_prof_get(struct hc_target *t, bool *enabled, bool *active,
				     struct hc_err *err);

/*
 * heapctl's sampling heap profiler, injected by hc_prof_set() into a
 * process whose allocator cannot profile: it hooks the allocation
 * functions in the GOT of every loaded object and samples one allocation
 * per `interval` bytes on average.  Allocations made before it started are
 * not seen.
 */
#define HC_SAMPLER_MAX_OBJS 24
struct hc_sampler {
	bool installed;   /* loaded in the process (stays loaded for good) */
	bool enabled;     /* sampling now */
	bool kept;        /* off, with what it sampled kept: its hooks still see the frees */
	bool loaded_now;  /* the last hc_prof_set() loaded it */
	bool switched;    /* the last hc_prof_set() turned it on or off, not the allocator's profiler */
	uint64_t interval; /* mean bytes between samples */
	uint64_t samples;  /* allocations sampled since the profile started */
	uint64_t live;     /* of them, not freed yet */
	uint64_t stacks;   /* distinct stacks */
	uint64_t dropped;  /* samples lost to full tables */
	uint64_t no_stack; /* samples whose stack could not be walked */
	unsigned hooks;    /* GOT slots pointing at the hooks, or functions hooked inline */
	unsigned inlined;  /* of hooks: inline, at the entries of the functions (a static binary) */
	bool freestanding; /* the sampler heapctl maps itself (no dlopen, or not glibc's) */
	unsigned lost;     /* slots changed by someone else: not restored */
	unsigned nobjs;
	struct {
		char path[192];
		unsigned hooks;
	} objs[HC_SAMPLER_MAX_OBJS]; /* hooks per object */
	/*
	 * Not installed, and heapctl cannot load it into this process (musl, a
	 * static executable, a libc without dlopen): why, and what can work.
	 */
	bool cannot_load;
	char why[160];
	char hint[256];
};
/* Fills s (zeroed when no sampler is loaded); stops nothing. */
HC_API HC_MUST_CHECK int hc_sampler_get(struct hc_target *t, struct hc_sampler *s,
					struct hc_err *err);
/*
 * Fails with HC_E_PROF_OFF (and the right MALLOC_CONF hint) if opt.prof is
 * false.  *was (may be NULL): whether sampling was active before, read in
 * the same step that changed it (one mallctl for jemalloc).
 */
HC_API HC_MUST_CHECK int hc_prof_set(struct hc_target *t, bool active, bool *was,
				     struct hc_err *err);
/*
 * Make the allocator write a heap profile inside the target (its mount
 * namespace, its permissions), copy it to out_path on this side, and remove
 * the target-side file.  *active (may be NULL): whether sampling was on.
 */
/* hc_target_opts.sample_bytes for the next hc_prof_set(t, true). */
HC_API void hc_target_set_sample_bytes(struct hc_target *t, uint64_t bytes);
/*
 * Forget what the profiler sampled: jemalloc's prof.reset, or heapctl's
 * sampler's tables.  Sampling goes on if it was on; heapctl's sampler,
 * off, also takes its hooks out.  HC_E_UNSUPPORTED for gperftools.
 */
HC_API HC_MUST_CHECK int hc_prof_reset(struct hc_target *t, struct hc_err *err);
HC_API HC_MUST_CHECK int hc_prof_dump(struct hc_target *t, const char *out_path, bool *active,
				      struct hc_err *err);

/* One allocator-specific figure: glibc's mallinfo2 fields, tcmalloc's properties. */
struct hc_figure {
	char name[48];  /* JSON key, e.g. "fordblks" or "tcmalloc.pageheap_free_bytes" */
	uint64_t value; /* bytes unless what says otherwise */
	char what[80];  /* one line for humans */
};
#define HC_MAX_FIGURES 16

struct hc_stats {
	char allocator[32]; /* "tcmalloc_minimal" and room to spare */
	char version[64];
	uint64_t allocated, active, metadata, resident, mapped, retained, dirty, muzzy;
	uint64_t rss; /* from /proc/PID/status */
	/*
	 * jemalloc: free objects held in thread caches (stats.arenas.<i>.tcache_bytes),
	 * counted in allocated; 0 elsewhere (tcmalloc's are a figure).
	 */
	uint64_t tcache;
	unsigned narenas;
	/*
	 * Drivers other than jemalloc describe themselves with figures; the
	 * jemalloc fields above then stay 0, except allocated and dirty (the
	 * allocator's free memory that purge can give back), which every driver
	 * fills unless live_unknown says it cannot, and mapped and retained
	 * where the allocator has them.
	 */
	struct hc_figure fig[HC_MAX_FIGURES];
	unsigned nfig;
	char warning[160]; /* e.g. "mallinfo() fields wrap past 2 GiB", or "" */
	/*
	 * The allocator counts no live bytes (mimalloc as Debian builds it,
	 * without MI_STAT): allocated and dirty are unknown, and stay 0.
	 */
	bool live_unknown;
	/*
	 * Why purge has nothing to do for this allocator (musl returns freed
	 * memory itself: hc_purge() calls nothing and succeeds), or "".
	 */
	char purge_note[160];
};
HC_API HC_MUST_CHECK int hc_stats_get(struct hc_target *t, struct hc_stats *st,
				      struct hc_err *err);

/*
 * Full text statistics, streamed to sink as the allocator produces them;
 * nothing is written to the target's own fds.  opts: the allocator's option
 * string (jemalloc: malloc_stats_print's opts) or NULL.
 */
typedef int (*hc_sink_fn)(void *arg, const char *buf, size_t len);
HC_API HC_MUST_CHECK int hc_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink,
					void *arg, struct hc_err *err);

/* Return dirty pages to the OS.  arena < 0: all arenas. */
HC_API HC_MUST_CHECK int hc_purge(struct hc_target *t, int arena, struct hc_err *err);

/*
 * Read or write a control by name, in one borrow.  jemalloc's stats.* names
 * are read after a write to epoch, so they are current.
 *
 * hc_ctl_set: value is text, parsed with hc_value_parse() per the name's
 * type (NULL for a control that takes nothing).  *old is the value before
 * the write and *now the value read back after it, both in the same borrow;
 * either is HC_T_VOID when the control cannot be read (write-only and void
 * controls).  When no read-back exists (glibc's mallopt has no getter) *now
 * is the value written and now->note says so.
 */
HC_API HC_MUST_CHECK int hc_ctl_get(struct hc_target *t, const char *name, struct hc_value *v,
				    struct hc_err *err);
HC_API HC_MUST_CHECK int hc_ctl_set(struct hc_target *t, const char *name, const char *value,
				    struct hc_value *old, struct hc_value *now,
				    struct hc_err *err);

/*
 * Every readable control under prefix ("arenas.", "opt.", glibc "M_"), with
 * its value, read in one borrow.  Indexed names (arena.<i>, arenas.bin.<i>,
 * stats.arenas.<i>.bins.<j>) are expanded over the indices that exist, one
 * index level beyond the prefix; *skipped names the deeper groups left out
 * ("stats.arenas.<i>.bins.<j>. ..."), or is "".  Free *out with free().
 */
struct hc_ctl_entry {
	char name[96];
	struct hc_value v;
};
HC_API HC_MUST_CHECK int hc_ctl_list(struct hc_target *t, const char *prefix,
				     struct hc_ctl_entry **out, size_t *n, char *skipped,
				     size_t skipped_len, struct hc_err *err);

/*
 * Where a process's RSS is, from /proc/PID/smaps: no ptrace, nothing stopped.
 * Every mapping falls in exactly one category, so the categories' rss add
 * up to the sum of smaps' Rss lines.
 */
enum hc_map_cat {
	HC_MAP_HEAP,   /* the main [heap] (brk) */
	HC_MAP_ARENA,  /* glibc thread arenas: 64 MiB-aligned rw-p head + ---p tail */
	HC_MAP_STACK,  /* [stack] and thread stacks (rw-p above a ---p guard) */
	HC_MAP_ALLOC,  /* anonymous mappings an allocator named ([anon:...malloc...]) */
	HC_MAP_FILE,   /* file-backed code and data, [vdso], [vvar] */
	HC_MAP_ANON,   /* every other anonymous mapping */
	HC_MAP_SHM,    /* shared memory: SysV, POSIX (/dev/shm), memfd, shared anonymous */
	HC_MAP__COUNT
};

struct hc_map_sum {
	uint64_t rss;  /* bytes resident (smaps Rss) */
	uint64_t size; /* bytes reserved (address space) */
	unsigned nmaps;
};

struct hc_maps {
	struct hc_map_sum cat[HC_MAP__COUNT];
	unsigned narenas;     /* glibc thread arenas (heaps) counted */
	uint64_t rss_sum;     /* sum of every mapping's Rss */
	uint64_t rss_rollup;  /* smaps_rollup Rss, 0 if unknown */
	uint64_t vmrss;       /* /proc/PID/status VmRSS, 0 if unknown */
	unsigned threads;     /* /proc/PID/status Threads, 0 if unknown */
	/* hc_maps_read(): the C library, by evidence: "glibc", "musl", or "" if unknown */
	char libc[8];
	bool libc_static;     /* linked statically: no loader, libc in the executable */
};

/* "heap", "arena", "stack", "alloc", "file", "anon", "shm" (JSON keys). */
HC_API const char *hc_map_cat_key(enum hc_map_cat c);
/* A title for humans: "glibc thread arenas". */
HC_API const char *hc_map_cat_title(enum hc_map_cat c);
/* Pure: classify the text of an smaps file (len bytes) into m. */
HC_API HC_MUST_CHECK int hc_maps_parse(const char *text, size_t len, struct hc_maps *m,
				       struct hc_err *err);
/* Read /proc/PID/smaps (and smaps_rollup, status) and classify. */
HC_API HC_MUST_CHECK int hc_maps_read(pid_t pid, struct hc_maps *m, struct hc_err *err);
/* One-line diagnosis of m, e.g. "37 glibc arenas hold 1.9 GiB resident of 2.3 GiB ...". */
HC_API void hc_maps_diagnose(const struct hc_maps *m, char *out, size_t len);

/*
 * heapctl doctor: the process's RSS explained, cause by cause, from the
 * allocator's figures (hc_stats_get()) and /proc/PID/smaps (hc_maps_read())
 * taken one after the other.  Pure: nothing is read or stopped.
 */
enum hc_cause {
	HC_CAUSE_DIRTY,         /* freed pages the allocator keeps mapped; purge returns them */
	HC_CAUSE_MUZZY,         /* jemalloc: lazily released pages (MADV_FREE) */
	HC_CAUSE_FRAGMENTATION, /* free space among live objects; purge cannot return it */
	HC_CAUSE_ARENA_FREE,    /* glibc: whole free pages in the arenas; malloc_trim returns them */
	HC_CAUSE_ARENAS,        /* glibc: free memory stranded in many thread arenas */
	HC_CAUSE_METADATA,      /* the allocator's bookkeeping */
	HC_CAUSE_TCACHE,        /* free objects in per-thread caches */
	HC_CAUSE_STACKS,        /* thread stacks */
	HC_CAUSE_SHARED,        /* shared memory */
	HC_CAUSE_FILE,          /* file-backed pages */
	HC_CAUSE_ANON,          /* anonymous memory the allocator does not account for */
	HC_CAUSE_RETAINED,      /* address space kept for reuse: not RSS */
	HC_CAUSE__COUNT
};

/* "dirty", "muzzy", "fragmentation", "arena_free", ... (the JSON and Prometheus words). */
HC_API const char *hc_cause_key(enum hc_cause c);

struct hc_finding {
	enum hc_cause cause;
	uint64_t bytes;
	bool rss;              /* false: address space only (retained), not part of the RSS */
	char explanation[400]; /* what it is, for this process */
	char advice[400];      /* the command or setting that addresses it, or why none does */
};

/* Settings that only shape the advice, read in the same borrow; unknown as below. */
#define HC_DECAY_UNKNOWN INT64_MIN
struct hc_doctor_settings {
	int64_t dirty_decay_ms;  /* jemalloc arena 0's; -1 never, HC_DECAY_UNKNOWN */
	int64_t muzzy_decay_ms;
	int background_thread;   /* 1, 0, or -1 unknown */
};

struct hc_doctor {
	uint64_t rss;         /* smaps' Rss sum: the total the findings explain */
	uint64_t allocated;   /* the allocator's own figure (jemalloc: tcache included) */
	/*
	 * allocated, less what thread caches hold.  0 when the allocator counts
	 * no live bytes (hc_stats.live_unknown): resident then stands for them
	 * and its free memory together.
	 */
	uint64_t live;
	uint64_t active;      /* jemalloc's active; an estimate elsewhere (live + fragmentation) */
	uint64_t resident;    /* the allocator's pages in RAM (an estimate outside jemalloc) */
	/* as Redis' INFO memory prints them; 0 when a figure is missing */
	double frag_ratio;         /* rss / allocated (mem_fragmentation_ratio) */
	double alloc_frag_ratio;   /* active / allocated (allocator_frag_ratio) */
	double alloc_rss_ratio;    /* resident / active (allocator_rss_ratio) */
	double rss_overhead_ratio; /* rss / resident (rss_overhead_ratio) */
	uint64_t unexplained; /* rss less live (or resident) and every RSS finding, if any is left */
	unsigned threads, narenas;
	/* RSS findings by bytes, largest first, then those that are not RSS */
	struct hc_finding f[HC_CAUSE__COUNT];
	unsigned n;
};

/* s may be NULL (advice without the settings); pid only goes into the advice's commands. */
HC_API void hc_doctor_run(pid_t pid, const struct hc_stats *st, const struct hc_maps *m,
			  const struct hc_doctor_settings *s, struct hc_doctor *d);

/* Timing of the last operation, for -v and benchmarks. */
struct hc_timing {
	pid_t tid;          /* thread borrowed */
	uint64_t paused_us; /* how long it was stopped */
	unsigned attempts;  /* threads/tries until a safe point was found */
	unsigned stops;     /* ptrace stops heapctl waited for, on every thread it tried */
	/* where paused_us went: */
	uint64_t stop_us;   /* resuming the thread and waiting for its stops */
	uint64_t regs_us;   /* reading and writing registers and signal masks, detaching */
	uint64_t mem_us;    /* reading and writing the target's memory */
	uint64_t check_us;  /* proving the thread at a safe point (where_safe()) */
	/* inline hooks in or out: every other thread stopped this long (0: none was) */
	uint64_t freeze_us;
};
HC_API void hc_target_timing(const struct hc_target *t, struct hc_timing *tm);

/*
 * Write s as a JSON string, quotes included, as all of heapctl's JSON is
 * written: '"' and '\\' escaped, control characters as \n, \t, ... or \u00XX (DEL too),
 * valid UTF-8 as it is, and each byte of anything else (a stray
 * continuation byte, a truncated or overlong sequence, a surrogate) as
 * \ufffd, so the document is valid whatever bytes s holds.  NULL is "".
 */
HC_API void hc_json_str(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
