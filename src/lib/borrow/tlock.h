/* SPDX-License-Identifier: MIT */
/*
 * One heapctl at a time per target process: a lock that the kernel drops
 * with its holder (an abstract unix socket, see tlock.c and docs/design.md),
 * and the "traced by whom" lookups that turn a refused PTRACE_SEIZE into the
 * right message.
 */
#ifndef HC_TLOCK_H
#define HC_TLOCK_H

#include <stdint.h>
#include <sys/types.h>

struct engine;
struct hc_err;

/*
 * Take the target's lock, waiting for another heapctl up to t->deadline_ns.
 * A no-op if already held.  Fails with HC_E_TIMEOUT naming the holder,
 * HC_E_CANCELLED on a pending termination signal, HC_E_NO_PROC if the
 * process is gone.
 */
int tlock_acquire(struct engine *t, struct hc_err *err);
/* Drop it (also done by the kernel if heapctl dies). */
void tlock_release(struct engine *t);
/* Another heapctl holds pid's lock: its pid, -1 if unknown; 0 if free. */
pid_t tlock_busy(pid_t pid);
/* The heapctl command behind holder (a worker's parent, src/cli/keeper.c), else holder. */
pid_t tlock_front(pid_t holder);
/* TracerPid of /proc/PID/task/TID (of pid itself if tid is 0), 0 if none or unreadable. */
pid_t tlock_tracer(pid_t pid, pid_t tid);
/*
 * The seize of tid failed with EPERM: if the thread is traced by another
 * process, set err to say so (naming it) and return -1; else return 0 and
 * leave err alone (a permission problem after all).
 */
int tlock_traced_error(pid_t pid, pid_t tid, struct hc_err *err);

#endif
