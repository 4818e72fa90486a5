// SPDX-License-Identifier: MIT
/*
 * tlock.c: one heapctl at a time per target.
 *
 * Two heapctls on one process would fight over its threads (the loser's
 * PTRACE_SEIZE fails with EPERM), and a second sampler load or unload could
 * race the first.  So a session takes a per-target lock before its first
 * seize and keeps it until the target is closed.
 *
 * The lock is an abstract unix socket named "heapctl-lock-<pid>-<start>",
 * <start> being the target's start time (field 22 of /proc/PID/stat), so a
 * reused pid is a new name.  bind() is the test-and-set; the kernel drops
 * the name when the socket is closed, by heapctl or by its death (SIGKILL
 * included): nothing on disk, no stale lock, no directory whose owner and
 * mode must be checked.  The holder also listen()s, so a waiter can connect
 * and learn who holds it (SO_PEERCRED) and sleep until the holder goes away
 * (the connection is reset when the listener closes).
 *
 * The name lives in the network namespace: heapctls in different ones do
 * not see each other's locks, and then the ptrace checks below still make
 * the loser fail cleanly, naming the tracer.  Any local user can bind any
 * name, so a lock is honoured only if its holder could trace the target
 * itself (root, our own uid, or the target's): a stranger's squat is
 * ignored, never waited on.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "procfs.h"
#include "engine.h"
#include "image.h"
#include "tlock.h"

/* The start time in clock ticks since boot; 0 if unreadable. */
static unsigned long long start_time(pid_t pid)
{
	struct procfs_stat st;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, pid);
	procfs_stat(path, &st);
	return st.start;
}

static socklen_t lock_addr(pid_t pid, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] == 0: the abstract namespace, the name is the bytes that follow */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "heapctl-lock-%d-%llu", pid,
		     start_time(pid));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Try once.  Returns the bound socket, -1 if held (errno EADDRINUSE) or on error. */
static int try_bind(const struct sockaddr_un *sa, socklen_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (const struct sockaddr *)sa, len) < 0 || listen(fd, 64) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * Connect to the holder.  Returns the connected socket and fills *cred, or -1
 * with errno: ECONNREFUSED (nobody holds it any more), EAGAIN (its backlog is
 * full: held, holder unknown).
 */
static int peek_holder(const struct sockaddr_un *sa, socklen_t len, struct ucred *cred)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	socklen_t cl = sizeof(*cred);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &cl) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Could a process of this uid trace the target (so that its lock is a real heapctl's)? */
static bool trusted(uid_t uid, pid_t pid)
{
	struct procfs_status ps;
	char path[64];

	if (uid == 0 || uid == geteuid())
		return true;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return procfs_status(path, &ps) == 0 && ps.fsuid == uid;
}

pid_t tlock_tracer(pid_t pid, pid_t tid)
{
	struct procfs_status ps;
	char path[96];

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return procfs_status(path, &ps) == 0 ? ps.tracer : 0;
}

/* Who works on pid when the lock did not say: the tracer of any of its threads, or -1. */
static pid_t any_tracer(pid_t pid)
{
	struct dirent *de;
	char path[64];
	pid_t tr = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while (!tr && (de = readdir(d))) {
		pid_t tid = atoi(de->d_name);

		if (tid > 0)
			tr = tlock_tracer(pid, tid);
		if (tr == getpid())
			tr = 0;
	}
	closedir(d);
	return tr ? tr : -1;
}

pid_t tlock_busy(pid_t pid)
{
	struct sockaddr_un sa;
	socklen_t len = lock_addr(pid, &sa);
	struct ucred cred;
	int fd = peek_holder(&sa, len, &cred);

	if (fd >= 0) {
		close(fd);
		if (cred.pid == getpid())
			return 0;
		return trusted(cred.uid, pid) ? cred.pid : 0;
	}
	return errno == EAGAIN ? any_tracer(pid) : 0;
}

/*
 * The heapctl a user started and can see: a command that borrows runs in
 * a worker, a child heapctl (src/cli/keeper.c), and the worker is what
 * holds the lock and traces.  Its parent, if that is a heapctl, is the
 * command to name (and to stop: it passes SIGINT and SIGTERM on).
 */
pid_t tlock_front(pid_t holder)
{
	struct procfs_status st;
	char path[64], comm[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)holder);
	if (holder <= 0 || procfs_status(path, &st) < 0 || st.ppid <= 1 ||
	    strcmp(st.name, "heapctl"))
		return holder;
	procfs_comm(st.ppid, comm, sizeof(comm));
	return strcmp(comm, "heapctl") ? holder : st.ppid;
}

static void say_waiting(struct engine *t, pid_t holder)
{
	char comm[64] = "?";

	if (holder > 0) {
		procfs_comm(holder, comm, sizeof(comm));
		pr_info("pid %d is busy: another heapctl (pid %d, %s) is working on it; waiting "
			"up to %u ms", t->img->pid, (int)holder, comm, t->img->opts.timeout_ms);
	} else {
		pr_info("pid %d is busy: another heapctl is working on it; waiting up to %u ms",
			t->img->pid, t->img->opts.timeout_ms);
	}
}

int tlock_acquire(struct engine *t, struct hc_err *err)
{
	struct sockaddr_un sa;
	socklen_t len;
	pid_t holder = 0;
	bool said = false;
	int fd = -1, ret = -1;

	if (t->lockfd >= 0)
		return 0;
	len = lock_addr(t->img->pid, &sa);
	for (;;) {
		struct pollfd pfd;
		uint64_t now;
		int ms;

		if (fd < 0) {
			struct ucred cred;

			t->lockfd = try_bind(&sa, len);
			if (t->lockfd >= 0) {
				pr_debug("holding the lock of pid %d", t->img->pid);
				ret = 0;
				break;
			}
			if (errno != EADDRINUSE) {
				err_errno(err, errno, "lock for pid %d", t->img->pid);
				break;
			}
			fd = peek_holder(&sa, len, &cred);
			if (fd < 0 && errno == ECONNREFUSED)
				continue; /* released between bind and connect */
			if (fd >= 0) {
				if (cred.pid == getpid()) {
					/* another hc_target of this process on the same pid: ours */
					ret = 0;
					break;
				}
				if (!trusted(cred.uid, t->img->pid)) {
					/* not a heapctl that could work on this process: a squat */
					pr_debug("lock of pid %d held by pid %d of uid %u: ignored",
						 t->img->pid, (int)cred.pid, (unsigned)cred.uid);
					ret = 0;
					break;
				}
				holder = tlock_front(cred.pid);
			} else if (errno == EAGAIN) {
				holder = tlock_front(any_tracer(t->img->pid)); /* its backlog is full */
			} else {
				err_errno(err, errno, "lock for pid %d", t->img->pid);
				break;
			}
			if (!said)
				say_waiting(t, holder);
			said = true;
		}
		now = now_ns();
		if (now >= t->deadline_ns) {
			char hint[160], who[48] = "";

			if (holder > 0)
				snprintf(who, sizeof(who), " (pid %d)", (int)holder);
			snprintf(hint, sizeof(hint),
				 "retry when it has finished, or raise --timeout (now %u.%03u s) to "
				 "wait longer", t->img->opts.timeout_ms / 1000, t->img->opts.timeout_ms % 1000);
			err_sethint(err, HC_E_TIMEOUT, 0, hint,
				    "another heapctl%s is working on pid %d; gave up waiting after "
				    "%u ms", who, t->img->pid, t->img->opts.timeout_ms);
			break;
		}
		t->cancel_sig = term_pending();
		if (t->cancel_sig) {
			err_sethint(err, HC_E_CANCELLED, 0,
				    "nothing was started: run it again once the other heapctl is done",
				    "interrupted by SIG%s while waiting for another heapctl; pid %d "
				    "was not touched", sigabbrev_np(t->cancel_sig), t->img->pid);
			break;
		}
		if (kill(t->img->pid, 0) < 0 && errno == ESRCH) {
			err_set(err, HC_E_NO_PROC, 0, "pid %d exited", t->img->pid);
			break;
		}
		/*
		 * Sleep until the holder's socket goes (our connection is reset),
		 * 100 ms at a time: termination signals are blocked, not caught,
		 * and are looked for between the naps.
		 */
		ms = (int)((t->deadline_ns - now) / 1000000ull) + 1;
		if (ms > 100)
			ms = 100;
		if (fd < 0) {
			poll(NULL, 0, ms < 10 ? ms : 10);
			continue;
		}
		pfd.fd = fd;
		pfd.events = POLLIN | POLLRDHUP;
		pfd.revents = 0;
		if (poll(&pfd, 1, ms) > 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

void tlock_release(struct engine *t)
{
	if (t->lockfd >= 0) {
		close(t->lockfd);
		t->lockfd = -1;
		pr_debug("released the lock of pid %d", t->img->pid);
	}
}

int tlock_traced_error(pid_t pid, pid_t tid, struct hc_err *err)
{
	pid_t tr = tlock_tracer(pid, tid);
	char comm[64];

	if (tr <= 0 || tr == getpid())
		return 0;
	procfs_comm(tr, comm, sizeof(comm));
	if (!strcmp(comm, "heapctl"))
		return err_sethint(err, HC_E_TRACED, EPERM,
				   "retry when it has finished, or raise --timeout",
				   "another heapctl (pid %d) is working on pid %d: it traces thread %d",
				   (int)tlock_front(tr), pid, tid);
	return err_sethint(err, HC_E_TRACED, EPERM,
			   "detach the other tracer (gdb, strace) first, or pick another thread",
			   "thread %d of pid %d is already traced by pid %d (%s)", tid, pid, (int)tr,
			   comm);
}
