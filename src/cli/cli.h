/* SPDX-License-Identifier: MIT */
/*
 * cli.h: what the heapctl front end shares between main.c and cmd_*.c.
 *
 * main.c parses the command line into a struct cli_env and dispatches on the
 * action word through a table of struct cli_cmd.  Each handler returns the
 * process exit status (CLI_EXIT_*); it prints its own results on stdout and
 * reports failures with cli_fail() or cli_usage(), which write to stderr.
 */
#ifndef HEAPCTL_CLI_H
#define HEAPCTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include <heapctl/heapctl.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* Default whole-operation budget, and the per-process one for `list`. */
#define CLI_TIMEOUT_MS 30000u
#define CLI_LIST_TIMEOUT_MS 2000u

/* Options a command may accept: a bit each, checked against cli_cmd.opts. */
enum cli_opt {
	CLI_O_PID = 1u << 0,
	CLI_O_TID = 1u << 1,
	CLI_O_TIMEOUT = 1u << 2,
	CLI_O_JSON = 1u << 3,
	CLI_O_FULL = 1u << 4,
	CLI_O_OPTS = 1u << 5,
	CLI_O_OUTPUT = 1u << 6,
	CLI_O_ARENA = 1u << 7,
	CLI_O_BASE = 1u << 8,    /* report --base */
	CLI_O_REPORT = 1u << 9,  /* --format --objects --shrink --top --lines --sysroot --no-inline */
	CLI_O_RENDER = 1u << 10, /* dump --svg/--folded */
	CLI_O_FOR = 1u << 11,    /* leak --for */
	CLI_O_PIDOPT = 1u << 12, /* -p accepted but optional */
	CLI_O_PROBE = 1u << 13,  /* list --probe */
	CLI_O_DEBUGFILE = 1u << 14, /* --debug-file */
	CLI_O_FORMAT = 1u << 15,    /* --format: report's, or stats' prometheus */
	CLI_O_WATCH = 1u << 16,     /* watch --every --count --textfile */
	CLI_O_SAMPLER = 1u << 17,   /* --sampler --sample-bytes */
	CLI_O_SERVE = 1u << 18,     /* serve --listen --select --profile --min-interval ... */
};

struct cli_env;

struct cli_cmd {
	const char *name;
	int (*fn)(struct cli_env *env);
	unsigned int opts;    /* CLI_O_* this command accepts besides -v/-h */
	int min_args;         /* positional words after the command */
	int max_args;
	const char *usage;    /* one synopsis line per form, '\n'-separated */
	const char *summary;  /* one line for `heapctl --help` */
	const char *help;     /* what it does, in a few lines */
	const char *options;  /* option lines besides -p and the common ones, or NULL */
	const char *examples; /* the EXAMPLES section body */
};

/* cmds.c: the commands (main.c dispatches on the table) and their help */
#define CLI_MAX_CMDS 32
extern const struct cli_cmd cli_cmds[];
extern const size_t cli_ncmds;
const struct cli_cmd *cli_find_cmd(const char *name);
void cli_main_help(FILE *f);
void cli_cmd_help(FILE *f, const struct cli_cmd *c);

struct cli_env {
	const struct cli_cmd *cmd;
	pid_t pid;                 /* 0 until -p is resolved (pid.c) */
	const char *pid_arg;       /* -p as given: a pid or a process name */
	struct hc_target_opts topts;
	unsigned int seen;         /* CLI_O_* given on the command line */
	int verbose;               /* number of -v */
	bool json;
	bool full;
	bool raw;                  /* stats --raw: glibc's malloc_info XML */
	const char *output;        /* dump -o */
	const char *stats_opts;    /* stats --opts */
	int arena;                 /* purge --arena, -1 for all */
	const char *base;          /* report --base */
	const char *format;        /* report --format */
	const char *sysroot;       /* report --sysroot */
	const char *svg, *folded;  /* dump --svg/--folded */
	unsigned long top;         /* report/leak --top */
	unsigned int for_ms;       /* leak --for */
	int warm_ms;               /* leak --warm-up (-1: leak's own choice) */
	bool objects, shrink, lines, no_inline;
	bool probe;                /* list --probe: borrow a thread for PROF */
	unsigned int every_ms;     /* watch --every (0: the default) */
	unsigned long count;       /* watch --count (0: until stopped) */
	const char *textfile;      /* watch --textfile DIR */
	uint64_t growth;           /* watch --dump-on-growth SIZE (0: none) */
	const char *dir;           /* watch --dir DIR, for those profiles */
	/* serve */
#define CLI_SERVE_MAX_SEL 16
	const char *listen;        /* --listen ADDR:PORT */
	const char *select[CLI_SERVE_MAX_SEL]; /* --select NAME|uid=N|cgroup=SUBSTR */
	int nselect;
	const char *profile[CLI_SERVE_MAX_SEL]; /* --profile NAME|PID */
	int nprofile;
	unsigned int min_interval_ms; /* --min-interval (0: the default) */
	const char *token_file;    /* --token-file F */
	bool allow_control;        /* --allow-control */
	char **args;               /* positional words after the command */
	int nargs;
};

/* keeper.c: the rest of the command runs in a child that outlives a kill of heapctl */
void cli_keeper(void);

/* util.c: reporting */
void cli_log_init(int verbose);
void cli_log(enum hc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_fail(const struct cli_env *env, const struct hc_err *err);
int cli_usage(const struct cli_env *env, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with a hint of the caller's instead of "see 'heapctl CMD --help'". */
int cli_usage_hint(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The standard hint, "see 'heapctl CMD --help'" (cmd NULL: the main help), after pre if any. */
const char *cli_help_hint(const struct cli_cmd *cmd, const char *pre, char *buf, size_t len);
void cli_timing(const struct cli_env *env, const struct hc_target *t);

/* util.c: stdout, whose first write error is kept for the exit status */
int cli_flush(void);
void cli_stdout_failed(int err);
int cli_stdout_errno(void);

/*
 * util.c: the signals that end heapctl (a terminal's, a supervisor's): INT,
 * TERM, HUP, QUIT.  The one list that holding, catching and cleaning up use.
 */
#define CLI_NTERM 4
extern const int cli_term_sigs[CLI_NTERM];
void cli_term_sigaddset(sigset_t *set);

/* util.c: target lifetime; signals that would kill heapctl are held meanwhile */
struct hc_target *cli_open(const struct cli_env *env, pid_t pid, struct hc_err *err);
void cli_close(struct hc_target *t);

/*
 * out.c: a file heapctl writes (-o, --svg, --folded), checked and created
 * (as a temporary file beside it) before the target is touched, renamed
 * into place by cli_out_commit().  "-" is stdout.
 */
enum cli_out_how {
	CLI_OUT_RENAME, /* a regular file: temporary beside it, renamed over it */
	CLI_OUT_COPY,   /* an existing non-regular file (/dev/null, a FIFO): written in place */
	CLI_OUT_STDOUT, /* "-" */
};

struct cli_out {
	const char *path;    /* as given */
	const char *opt;     /* "-o", "--svg"...: named in messages */
	const char *suffix;  /* for the "give a file name" hint */
	bool defaulted;      /* heapctl chose the name: hints mention -o */
	enum cli_out_how how;
	char dir[4096];      /* the directory the file goes into */
	char tmp[4096];      /* the temporary file, "" if none (yet) */
	int fd;
	FILE *f;
};

bool cli_out_is_stdout(const char *path);
/* Where heapctl's own scratch files go: $TMPDIR, else /tmp. */
const char *cli_tmpdir(void);
/*
 * opt: the option that named path ("-o"), NULL if heapctl chose the name;
 * fmt: an HC_FMT_* for the hint's example suffix, or -1 for a heap profile.
 */
int cli_out_open(struct cli_out *o, const char *path, const char *opt, int fmt,
		 struct hc_err *err);
/* A path the data can be written to (the library's dump), or NULL. */
const char *cli_out_path(struct cli_out *o, struct hc_err *err);
/* A stream for the data (stdout itself for "-"), or NULL. */
FILE *cli_out_stream(struct cli_out *o, struct hc_err *err);
/* Puts the data in place; the temporary file is gone either way. */
int cli_out_commit(struct cli_out *o, struct hc_err *err);
/* err: writing o failed with errno e, said about o's path (not the temporary file). */
int cli_out_fail(const struct cli_out *o, int e, struct hc_err *err);
/* Drops the data: nothing is left behind. */
void cli_out_discard(struct cli_out *o);
/* ".svg" for HC_FMT_SVG... (out.c's suffix -> format table) */
const char *cli_format_suffix(int fmt);
/* The format a file name asks for (".svg", ".folded", ".pb.gz"...), or -1. */
int cli_format_of_path(const char *path);
/*
 * The format of an output: --format, else the suffix of path, else dflt
 * for stdout (path NULL or "-").  An unknown suffix is a usage error:
 * returns CLI_EXIT_USAGE after saying so, else CLI_EXIT_OK.
 */
int cli_output_format(const struct cli_env *env, const char *path, int dflt, int *fmt);

/*
 * pid.c: -p PID or -p NAME (like pidof) into env->pid.  Whether the process
 * can be inspected is hc_target_open()'s (or hc_pid_check()'s) to say; an
 * optional -p (CLI_O_PIDOPT) that names no live process is dropped with a
 * warning.  Returns CLI_EXIT_OK, or the exit status after saying why.
 */
int cli_resolve_pid(struct cli_env *env);
/* A pid or tid: digits, 1 to pid_max - 1; else -1 with why ("what" names it). */
int cli_parse_id(const char *s, const char *what, pid_t *out, char *why, size_t len);
/* pid.c: the numeric entries of /proc, sorted; NULL with errno set on failure. */
pid_t *cli_scan_proc(size_t *count);
/* pid.c: the user name of uid (struct hc_proc's euid), its number if unnamed, "?" if < 0. */
const char *cli_uid_name(long uid, char *buf, size_t len);

/*
 * util.c: the heap profiler an allocator (struct hc_where's name) has:
 * jemalloc's, gperftools' (the full libtcmalloc), none in tcmalloc_minimal
 * (the full library has one), none at all (glibc).  The one table of it.
 */
enum cli_prof_kind { CLI_PROF_JEMALLOC, CLI_PROF_GPERF, CLI_PROF_MINIMAL, CLI_PROF_NONE };
enum cli_prof_kind cli_prof_kind(const char *allocator);

/* util.c: parsing and formatting */
int cli_parse_uint(const char *s, unsigned long max, unsigned long *out);
int cli_parse_seconds(const char *s, unsigned int *ms);
/* cmd_leak.c: "30", "1.5", "500ms", "30s", "2m", "1h" -> ms */
int cli_parse_duration(const char *s, unsigned int *ms);
/* A size: a number, fractions allowed, with B, K/KiB/KB, M/MiB/MB or G/GiB/GB (all 1024-based). */
int cli_parse_size(const char *s, uint64_t *out);
void cli_size_parts(uint64_t n, char *num, size_t len, const char **unit);
/* ,"sampler":{...} of prof status --json and info --json (docs/cli.md) */
void cli_sampler_json(const struct hc_sampler *s);
const char *cli_size(uint64_t n, char *buf, size_t len);
struct hc_prof_info;
const char *cli_samples_said(const char *path, char *out, size_t len, struct hc_prof_info *info);
/* A small file (/proc) read whole, NUL-terminated; -1 on error. */
ssize_t cli_read_small(const char *path, char *buf, size_t len);
int cli_read_comm(pid_t pid, char *buf, size_t len);
int cli_read_exe(pid_t pid, char *buf, size_t len);
void cli_shell_quote(FILE *f, const char *s);
const char *cli_yesno(bool b);
const char *cli_bool(bool b);

/* cmd_*.c: one handler per action word */
int cmd_list(struct cli_env *env);
int cmd_info(struct cli_env *env);
int cmd_prof(struct cli_env *env);
int cmd_dump(struct cli_env *env);
int cmd_stats(struct cli_env *env);
int cmd_purge(struct cli_env *env);
int cmd_get(struct cli_env *env);
int cmd_set(struct cli_env *env);
int cmd_report(struct cli_env *env);
int cmd_leak(struct cli_env *env);
int cmd_maps(struct cli_env *env);
int cmd_watch(struct cli_env *env);
int cmd_doctor(struct cli_env *env);
int cmd_serve(struct cli_env *env);

/*
 * cmd_stats.c: the figures of stats --json as one JSON object on f; time
 * (seconds since the epoch) leads it when >= 0 (watch --json), extra (",..."
 * members, or NULL) ends it.  The same
 * figures in Prometheus' text exposition format, labelled pid, comm and
 * allocator (stats --format prometheus, watch --textfile).
 */
void cli_stats_json(FILE *f, pid_t pid, const struct hc_stats *st, double time,
		    const char *extra);
void cli_stats_prom(FILE *f, pid_t pid, const char *comm, const struct hc_stats *st);

/*
 * prom.c: Prometheus text, gathered per metric family so that many
 * processes' samples share one HELP and TYPE (serve).  Labels NULL are
 * left out; key/val is one more label, or NULL.
 */
struct cli_prom;
struct cli_prom_labels {
	pid_t pid;
	const char *comm, *allocator, *container;
};
struct cli_prom *cli_prom_new(void);
void cli_prom_free(struct cli_prom *p);
/* heapctl_NAME, anything but [a-zA-Z0-9_] as '_', with _bytes for a size */
void cli_prom_name(char *out, size_t len, const char *name, bool bytes);
void cli_prom_u64(struct cli_prom *p, const char *name, const char *type, const char *help,
		  const struct cli_prom_labels *l, const char *key, const char *val, uint64_t v);
void cli_prom_f64(struct cli_prom *p, const char *name, const char *type, const char *help,
		  const struct cli_prom_labels *l, const char *key, const char *val, double v);
/* Every family, in the order first added; -1 if memory ran out on the way. */
int cli_prom_write(const struct cli_prom *p, FILE *f);
/*
 * cmd_stats.c: what stats --format prometheus prints of st, into p; its
 * findings d from cli_stats_findings(), or NULL to look now (smaps).
 */
void cli_stats_prom_add(struct cli_prom *p, const struct cli_prom_labels *l,
			const struct hc_stats *st, const struct hc_doctor *d);
/* What doctor finds behind pid's RSS (reads /proc/PID/smaps); malloc'ed, or NULL. */
struct hc_doctor *cli_stats_findings(pid_t pid, const struct hc_stats *st);

#endif /* HEAPCTL_CLI_H */
