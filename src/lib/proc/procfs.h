/* SPDX-License-Identifier: MIT */
/* The fields heapctl reads from /proc/PID/status and /proc/PID/task/TID/status. */
#ifndef HC_PROCFS_H
#define HC_PROCFS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct procfs_status {
	char name[64];
	char state;      /* R, S, D, T, t, Z, X */
	pid_t tgid;      /* Tgid: the process a thread belongs to */
	pid_t ppid;      /* PPid */
	pid_t tracer;    /* TracerPid */
	int seccomp;     /* Seccomp: 0, 1 strict, 2 filters; -1 if absent */
	bool shstk;      /* x86_Thread_features has shstk (CET user shadow stack) */
	uint64_t sigpnd, shdpnd, sigblk;
	uid_t euid;      /* effective uid (Uid: field 2); (uid_t)-1 if absent */
	uid_t fsuid;
	gid_t fsgid;
	uint64_t capeff; /* CapEff: effective capabilities, bit CAP_* (linux/capability.h) */
	uint64_t rss;    /* VmRSS in bytes */
	uint64_t vmsize; /* VmSize in bytes: what RLIMIT_AS is checked against */
};

/*
 * The leader of pid exited but other threads live on: its /proc entries
 * have lost the memory map, so use a live thread's.  True with proc
 * ("/proc/PID/task/TID").
 */
bool procfs_live_task(pid_t pid, char *proc, size_t len);
/* Parse a status file.  Returns 0, or -1 with errno if it cannot be opened. */
int procfs_status(const char *path, struct procfs_status *st);
/* The parser alone, over an open stream (the status text is the target's: fuzzed). */
void procfs_status_parse(FILE *f, struct procfs_status *st);
/*
 * The limit named name ("Max address space") in /proc/PID/limits: 0 and
 * *soft, *hard in its unit (UINT64_MAX if unlimited), or -1.
 */
int procfs_limit(pid_t pid, const char *name, uint64_t *soft, uint64_t *hard);
/* The fields heapctl reads from /proc/PID/stat (or task/TID/stat). */
struct procfs_stat {
	char state;                /* R, S, D, T, t, Z, X; 0 if unreadable */
	unsigned long flags;       /* PF_* (field 9): PF_KTHREAD for a kernel thread */
	/* (a kernel thread's flags, include/linux/sched.h; not exported to user space) */
	unsigned long long start;  /* start time in clock ticks since boot (field 22) */
	uint64_t start_stack;      /* where the main thread's stack began (field 28); 0: unknown */
};

#define PF_KTHREAD 0x00200000ul

/* Parse a stat file.  Returns 0, or -1 (st zeroed) if it cannot be read or parsed. */
int procfs_stat(const char *path, struct procfs_stat *st);
/* The parser alone: comm (field 2) may hold spaces and ')', fields follow the last ')'. */
int procfs_stat_parse(const char *text, struct procfs_stat *st);
/*
 * The initial environment, proc/environ (proc: /proc/PID or /proc/PID/task/TID):
 * "NAME=value" strings, each NUL-terminated, in a malloc'ed buffer of *len
 * bytes plus a final NUL; at most 1 MiB.  NULL (and *len 0) if unreadable.
 */
char *procfs_environ(const char *proc, size_t *len);
/* NAME's value in such a buffer, the first one as getenv() finds it, or NULL. */
const char *procfs_env_get(const char *env, size_t len, const char *name);
/* /proc/PID/comm without its newline, or "?". */
void procfs_comm(pid_t pid, char *out, size_t len);
/* The signals that cancel an operation when the caller blocks them (heapctl.h). */
#define NTERM_SIGS 4
extern const int term_sigs[NTERM_SIGS];
/* One of them, blocked by the caller, is pending: returns it, or 0. */
int term_pending(void);

#endif
