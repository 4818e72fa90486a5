/* SPDX-License-Identifier: MIT */
/*
 * heapctl integration harness: shared declarations.
 *
 * itest.c     runner, watchdog, reporting, child bookkeeping
 * proc.c      spawning and waiting, running heapctl, /proc inspection
 * victim.c    victim start/stop, the line protocol, the "unharmed" check
 * json.c      a small validating JSON reader
 * callers.c   who calls ptrace(2) in heapctl: a tracer that unwinds it
 * t_*.c       the tests
 */
#ifndef ITEST_H
#define ITEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where Debian puts this architecture's shared libraries. */
#if defined(__aarch64__)
#define LIBDIR "/usr/lib/aarch64-linux-gnu/"
#else
#define LIBDIR "/usr/lib/x86_64-linux-gnu/"
#endif

#define HC_TIMEOUT_S	20	/* one heapctl call */
#define TEST_TIMEOUT_S	180	/* one test, alarm() watchdog */
#define MAXGAP_US	50000	/* largest ticker gap tolerated */
#define MAXGAP_SAN_US	200000	/* ... when heapctl itself is sanitized */
#define REPLY_DEF_MS	15000	/* a victim's reply to one command */

struct itest_cfg {
	const char *heapctl;	/* absolute path */
	const char *victim_dir;	/* absolute path */
	char tmpdir[256];
	const char *vflag;	/* first argument of every heapctl call, or NULL */
	bool ci;
	bool heapctl_sanitized;	/* built with SAN=1: slower, and loads the CPUs */
	long maxgap_us;		/* ticker gap limit in force */
	int reply_ms;		/* victim reply limit in force (ITEST_REPLY_MS) */
};
extern struct itest_cfg cfg;

/* ---- itest.c: reporting ------------------------------------------- */

/* Records why the current test failed; the first reason wins. */
__attribute__((format(printf, 1, 2))) void t_fail(const char *fmt, ...);
/* Marks the current test skipped; missing_dep makes it a failure under CI=true. */
__attribute__((format(printf, 2, 3))) void t_skip(bool missing_dep, const char *fmt, ...);
bool t_failed(void);
/* A "# ..." note printed under the test's result line. */
__attribute__((format(printf, 1, 2))) void t_note(const char *fmt, ...);
/* Collects the "borrowed tid T for N us" lines for the summary. */
void t_borrow_seen(long tid, long us);
/* The last such line seen, for failure messages only. */
bool t_last_borrow(long *tid, long *us);

/* Child bookkeeping: every child is its own process group leader. */
void track_pid(pid_t pid);
void untrack_pid(pid_t pid);
void kill_tracked(void);

/* ---- proc.c --------------------------------------------------------- */

struct spawn_opts {
	const char *cwd;	/* chdir() in the child, or NULL */
	const char *const *setenv_kv;	/* "NAME=VALUE" to set, NULL-terminated */
	const char *const *unsetenv_names;	/* NULL-terminated */
	int in_fd, out_fd, err_fd;	/* -1: /dev/null */
	const int *pass_fds;	/* become fds 3, 4, ... in the child */
	int npass;
	int ignore_sig;		/* 0, or a signal the child execs with ignored */
};

/* fork+exec; returns the pid (tracked) or -1 with why filled in. */
pid_t spawn(const char *const argv[], const struct spawn_opts *o, char *why, size_t whysz);

/* Waits for pid up to timeout_ms; returns 0 and the status, or -1 on timeout. */
int wait_pid(pid_t pid, int *status, int timeout_ms);
/* SIGKILLs pid's process group, reaps it. */
void kill_wait(pid_t pid);

struct hres {
	int status;		/* raw wait status */
	bool timed_out, exec_failed;
	bool crash_noted;	/* sanitizer report already copied to the notes */
	char *out, *err;	/* NUL-terminated, never NULL after a run */
	size_t outlen, errlen;
	long ms;
	char cmdline[512];
};

struct hproc {
	pid_t pid;
	int out, err;
	long t0_ms;
	char cmdline[512];
};

/* Starts heapctl with argv (NULL-terminated, without argv[0]). */
int hc_startv(struct hproc *hp, const char *cwd, const char *const args[]);
/* Collects output and status; kills it after timeout_s. */
void hc_finish(struct hproc *hp, struct hres *r, int timeout_s);
/*
 * Reads hp's stderr into buf (NUL-terminated, initially "" or what was read
 * before) until it holds needle; true if it did within timeout_ms.
 */
bool hp_err_until(struct hproc *hp, const char *needle, char *buf, size_t len, long timeout_ms);
/*
 * The process that does hp's work: a heapctl command that may borrow a
 * thread runs in a child, the worker, of the process started
 * (src/cli/keeper.c).  hp's own pid when there is none (yet).
 */
pid_t hp_worker(const struct hproc *hp);
/* Live heapctl processes whose parent is parent; the first one's pid in *first. */
unsigned int heapctl_children(pid_t parent, pid_t *first);
/* Runs heapctl to completion. */
void hc_runv(struct hres *r, const char *cwd, const char *const args[]);
__attribute__((sentinel)) void hc_run(struct hres *r, const char *cwd, ...);
/* Runs any program to completion, capturing stdout/stderr. */
void run_prog(struct hres *r, const char *const argv[], int timeout_s);
/* Starts any program with captured output; finish with hc_finish(). */
int prog_start(struct hproc *hp, const char *const argv[]);
/*
 * Waits until pid (a child just forked) runs path, as /proc/PID/exe says:
 * until then it is a copy of the harness.  False on timeout or exit.
 */
bool wait_exec(pid_t pid, const char *path, long timeout_ms);
/*
 * A child (tracked) that PTRACE_SEIZEs tid and holds it until *hold is
 * closed; its pid, or -1 if the seize failed.
 */
pid_t tracer_start(pid_t tid, int *hold);
/* Closes hold, so the tracer lets go and exits, and reaps it. */
void tracer_stop(pid_t pid, int hold);
/* A child that has exited and is not reaped (a zombie of ours), or -1 (t_fail()ed). */
pid_t fork_exited(void);
/* Has pid exited (without reaping it)? */
bool pid_exited(pid_t pid);
/* Waits up to ms for pid_exited(pid); its answer then. */
bool wait_exited(pid_t pid, long ms);
void hres_free(struct hres *r);

int hres_exit(const struct hres *r);	/* exit code, or -1 */
/* "exit 1; stderr: ..." for failure messages. */
const char *hres_desc(const struct hres *r);
/*
 * Sanitizer report or crash in the run: returns a reason, else NULL. The
 * first time it finds one, it copies the report's head into the notes.
 */
const char *hres_crash(struct hres *r);

/*
 * Runs heapctl and checks the exit code (want) and that it did not crash;
 * calls t_fail() and returns -1 otherwise.
 */
__attribute__((sentinel)) int hc_expect(struct hres *r, int want, ...);

/* Per-task facts from /proc/PID/task/TID/status. */
/* State letter and TracerPid of task tid of pid; -1 if it is gone. */
int task_status(pid_t pid, pid_t tid, char *state, long *tracer);
/*
 * Checks every task of pid: TracerPid must be 0 and the state must not be
 * tracing-stop ('t'); when stopped is true every task must be in 'T',
 * otherwise none may be. Returns 0 or -1 with why.
 */
int proc_check_tasks(pid_t pid, bool stopped, char *why, size_t whysz);
/* All tasks of pid in state 'T' (group stop)? */
bool proc_all_stopped(pid_t pid);
/* First field of /proc/PID/task/TID/syscall, -1 if running/unknown. */
long proc_task_syscall(pid_t pid, pid_t tid);
/*
 * Syscalls a thread parked in each kind of wait may be seen in (the ones
 * this architecture has); NR_END ends a set.
 */
#define NR_END (-2L)
extern const long nrs_read[], nrs_sleep[], nrs_epoll[], nrs_poll[], nrs_futex[];
bool nr_in(long nr, const long *set);
/*
 * Waits up to timeout_ms until tid of pid sits in a syscall of set (the
 * kernel's view); 0, or -1.  *last_nr (if not NULL) gets the last one seen.
 */
int proc_wait_syscall(pid_t pid, pid_t tid, const long *set, long timeout_ms, long *last_nr);
/* "fd -> target" lines, sorted, one per line; malloc'ed. */
char *proc_fd_set(pid_t pid);
/* Anonymous mappings that are executable (and PROT_NONE if with_none); malloc'ed. */
char *proc_odd_maps(pid_t pid, bool with_none);
/* Lines of now that are absent from base; malloc'ed, "" if none. */
char *lines_missing(const char *base, const char *now);

/* CLOCK_MONOTONIC, in ns and in ms */
unsigned long long mono_ns(void);
long now_ms(void);
/* Occurrences of needle in s (NULL: 0). */
int count_str(const char *s, const char *needle);
void sleep_ms(long ms);
bool file_starts_with(const char *path, const char *prefix, char *why, size_t whysz);
bool find_in_path(const char *prog, char *out, size_t outsz);
char *read_file_str(const char *path);
/*
 * "ASAN_OPTIONS=..." with LeakSanitizer off, for a sanitized heapctl run
 * under a tracer: the leak check stops threads with ptrace(2) itself,
 * which a traced process cannot.  In a static buffer.
 */
const char *asan_no_leak_check(void);
const char *strcasestr_(const char *hay, const char *needle);

/* ---- callers.c ------------------------------------------------------- */

/*
 * Runs heapctl with args (argv after the program) under a tracer that
 * unwinds every ptrace(2) it makes.  *calls counts them; bad gets the
 * stack of the first whose first frame in heapctl's executable is not one
 * of ptrace.c's ptrace_* wrappers ("" if none).  0; 1 with why when this
 * kernel cannot tell (skip); -1 with why when heapctl could not be traced
 * or failed.
 */
int ptrace_callers(const char *const args[], unsigned int *calls, char *bad, size_t badlen,
		   char *why, size_t whylen);

/* ---- json.c ---------------------------------------------------------- */

/* 0 if s is exactly one valid JSON value (plus whitespace). */
int json_valid(const char *s, char *why, size_t whysz);
/* Raw text of member key of the top-level object, or -1. */
int json_member(const char *s, const char *key, const char **val, size_t *len);
int json_get_bool(const char *s, const char *key, bool *out);
int json_get_num(const char *s, const char *key, double *out);
int json_get_str(const char *s, const char *key, char *out, size_t outsz);

/* ---- victim.c -------------------------------------------------------- */

#define MiB (1024L * 1024L)

enum {
	VC_EPOLL_EINTR_OK = 1 << 0,	/* SIGSTOP/SIGCONT makes epoll_wait fail with EINTR */
	VC_NO_PROC = 1 << 1,		/* skip the /proc fd/maps comparison */
};

struct victim {
	pid_t pid;
	char spid[16];
	int ctl, rep;
	char rbuf[8192];
	size_t rlen;
	char errpath[320];
	char cwd[300];
	bool jemalloc;
	/* from "tids" */
	pid_t t_main, t_read, t_sleep, t_epoll, t_futex, t_regs, t_hammer, t_ticker, t_sig;
	unsigned int xarena;
	char regs_mode[16];
	/* baselines for the unharmed check */
	char *base_fds, *base_maps;
	unsigned long sig_sent;
	long sig_sum;
	unsigned int feed_seq;
	long base_eintr[8], base_errors;	/* counters already accounted for */
	bool tainted;	/* a check failed: re-baseline before the next test */
	unsigned long long tick_from_ns;	/* CLOCK_MONOTONIC: since when maxgap_us counts */
};

enum {
	VS_TIDS = 1 << 0,	/* victim_adopt() once it is ready */
	VS_JEMALLOC = 1 << 1,	/* the jemalloc_victim protocol: victim_check() wakes every thread */
};

/*
 * Starts argv (fds 3, 4, 5: ready, ctl, reply; stdout and stderr to
 * errpath, in a directory of its own) with MALLOC_CONF=malloc_conf (NULL:
 * unset) and extra_env (NULL, or "NAME=VALUE" lines), and waits for its
 * 'R'.  0, or -1 with why (and nothing left running).
 */
int victim_start_argv(struct victim *v, const char *const *argv, const char *malloc_conf,
		      const char *extra_env, unsigned int flags, char *why, size_t whysz);
/*
 * Starts build/victims/NAME (fds as victim_start_env()) through prefix, a
 * NULL-terminated command that gets the victim's path and "3 4 5" as its
 * last arguments and must end by exec'ing it, never forking: a namespace
 * maker (unshare ... sh -c '... exec "$0" "$@"'), so that the victim's
 * pid is the one spawned.
 */
int victim_start_wrapped(struct victim *v, const char *const *prefix, const char *name,
			 const char *malloc_conf, const char *extra_env, char *why, size_t whysz);
/* Asks a started victim for its "tids" and takes the fd and mapping baselines. */
int victim_adopt(struct victim *v, char *why, size_t whysz);
/* Starts build/victims/NAME with MALLOC_CONF=malloc_conf (NULL: unset). */
int victim_start(struct victim *v, const char *name, const char *malloc_conf, char *why,
		 size_t whysz);
/* victim_start() with one more "NAME=VALUE" (e.g. LD_PRELOAD=...) in the environment, or NULL. */
int victim_start_env(struct victim *v, const char *name, const char *malloc_conf,
		     const char *extra_env, char *why, size_t whysz);
/*
 * victim_start_env() that t_fail()s with the reason; a fixture (built by
 * make fixtures) that is missing is skipped instead.  true when started.
 */
bool victim_up(struct victim *v, const char *name, const char *malloc_conf, const char *extra_env,
	       bool fixture);
/*
 * mimalloc_victim under LD_PRELOAD=libmimalloc.so.2, or (linked)
 * mimalloc_linked, which has it in DT_NEEDED; victim_up() otherwise, and a
 * missing libmimalloc2.0 is skipped.  true when started.
 */
/* mimalloc_victim under LD_PRELOAD, or mimalloc_linked; env: more NAME=VALUE lines, or NULL */
bool mimalloc_up(struct victim *v, bool linked, const char *env);
/* Sends one command, reads one reply line (timeout_ms). 0, or -1 with reply = reason. */
int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t sz, int timeout_ms);
/* victim_cmd() that t_fail()s unless the reply starts with want. */
int victim_expect(struct victim *v, const char *cmd, const char *want, char *reply, size_t sz);
/* "quit" and reap; returns the exit status or -1; kills it if needed. */
int victim_stop(struct victim *v);
void victim_kill(struct victim *v);
bool victim_alive(struct victim *v);
/* Takes fd and mapping baselines now. */
void victim_baseline(struct victim *v);
/*
 * Resets the ticker maximum of v, and starts the control process (an
 * untouched victim that tells machine-wide stalls from heapctl's own) if it
 * is not running; v NULL: opens a window for victim_control_gap(NULL).
 */
void victim_ticker_reset(struct victim *v);
/*
 * The control's largest ticker gap (us; 0 if none reached 4 ms) in the
 * window v's maximum covers (v NULL: since victim_ticker_reset(NULL)), or -1.
 */
long victim_control_gap(const struct victim *v);
/*
 * The one excuse for a ticker gap of v over limit_us: the untouched
 * control saw at least half of that limit in the same window, so the
 * machine stalled, not heapctl.  *cgap_us (may be NULL): the control's gap.
 */
bool victim_machine_stalled(const struct victim *v, long limit_us, long *cgap_us);
/* The control's pid, started if need be; -1 if it cannot start. */
pid_t victim_control_pid(void);
void control_victim_drop(void);
/* Accepts the current EINTR/error counters as the new zero. */
void victim_rebase_counters(struct victim *v);
/* The full "target unharmed" check; calls t_fail() and returns -1 on a problem. */
int victim_check(struct victim *v, unsigned int flags);
/* A TCP port on 127.0.0.1 nobody listens on right now (for servers we start), or -1. */
int loopback_free_port(void);
/* Value of key=NUMBER in a reply line; dflt if absent. */
long kv_long(const char *line, const char *key, long dflt);
/* Value of key=WORD in a reply line, copied to out; false if absent. */
bool kv_str(const char *line, const char *key, char *out, size_t outsz);
/* Reads one mallctl from inside: "ctl NAME VALUE" -> VALUE. */
int victim_ctl(struct victim *v, const char *name, char *val, size_t sz);

/* The shared prof-enabled victim; started on demand, NULL (and t_fail) if it cannot be. */
struct victim *shared_victim(void);
void shared_victim_drop(void);

/* ---- tests ----------------------------------------------------------- */

struct itest {
	const char *name;
	void (*fn)(void);
	int timeout_s;	/* 0: TEST_TIMEOUT_S */
};

extern const struct itest t_basic_tests[];
extern const struct itest t_serve_tests[];
extern const struct itest t_cmds_tests[];
extern const struct itest t_tid_tests[];
extern const struct itest t_err_tests[];
extern const struct itest t_redis_tests[];
extern const struct itest t_alloc_tests[];	/* glibc, tcmalloc, maps, memcached */
/* hardening: harm.h, t_hostile.c, t_kill.c, t_torture.c */
extern const struct itest t_hostile_tests[];
extern const struct itest t_evidence_tests[];
extern const struct itest t_kill_tests[];
extern const struct itest t_torture_tests[];
extern const struct itest t_timers_tests[];	/* timed waits are never made late */
extern const struct itest t_concurrent_tests[];	/* t_concurrent.c */
extern const struct itest t_syms_tests[];	/* symbols elsewhere: MiniDebugInfo, debuginfod */
extern const struct itest t_doctor_tests[];	/* heapctl doctor: causes, advice, measured */
extern const struct itest t_attack_tests[];	/* a hostile target gains nothing on the host */
extern const struct itest t_ns_tests[];	/* heapctl and its target in other mount namespaces */
extern const struct itest t_deleted_tests[];
/*
 * itest --without-caps N,N -- PROG ARGS, or itest --uid N -- PROG ARGS
 * (t_deleted.c): PROG without those capabilities, or as another user.
 */
int itest_exec_as(char **argv);	/* objects deleted since mapped, without map_files */
/* CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE: without them map_files cannot be followed */
#define NOCAP_MAPFILES "21,40"
/* This harness's own path, to run itest --without-caps or --uid. */
const char *itest_self(void);
/* argv[0..3] for run_prog(): this harness with how (--without-caps, --uid), arg and --; 4 */
int exec_as(const char **argv, const char *how, const char *arg);
/*
 * Can a map_files link of pid be opened without NOCAP_MAPFILES, run after
 * prefix (e.g. an nsenter; or NULL)?  Then a test that drops them proves
 * nothing.
 */
bool map_files_open_nocap(pid_t pid, const char *const *prefix);
extern const struct itest t_aarch64_tests[];	/* aarch64 builds only */
extern const struct itest t_sampler_tests[];	/* heapctl's injected sampler */
extern const struct itest t_musl_tests[];	/* musl and static glibc: named, refused well */
extern const struct itest t_real_tests[];	/* t_real.c: tests/real/static-programs.sh, programs built apart */
/*
 * t_musl.c: the first 16 bytes of function name in victim v (built from
 * file in VICTIM_DIR) as it runs, and its address; 1, 0 if file defines no
 * such function, -1 (t_fail()ed) if they cannot be read.
 */
int victim_fn_bytes(struct victim *v, const char *file, const char *name, uint8_t out[16],
		    unsigned long long *where);

/* victim.c: v's control name reads want after what (or the test fails); 0 or -1 */
int expect_ctl(struct victim *v, const char *name, const char *want, const char *after);
/* a run's stdout without the whitespace around it, for "get" */
void trimmed(const struct hres *r, char *out, size_t sz);
extern const struct itest t_ctl_tests[], t_cli_tests[], t_watch_tests[];

#endif /* ITEST_H */
