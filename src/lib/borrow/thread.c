// SPDX-License-Identifier: MIT
/*
 * Which thread to borrow, and stopping it (call.c's step 1).
 *
 * thread_list() orders the candidates by what they are doing, from
 * /proc alone; thread_try() seizes and stops one, undoes an EINTR that
 * only its stop caused (undo_our_eintr()), lets arm64 settle a rewound
 * sleep first (probe_restart()), and keeps it only at a safe point.
 * thread_check_stopped() looks at every thread of a process that job
 * control has stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "call_int.h"
#include "clock.h"
#include "log.h"
#include "mem.h"
#include "procfs.h"
#include "ptrace.h"
#include "engine.h"
#include "image.h"
#include "tlock.h"
#include "where.h"

#define MAX_RANKED 16 /* threads whose state is read to order the choice */

/* Is a signal pending that tid does not block?  Then it will be delivered anyway. */
bool thread_signal_pending(pid_t pid, pid_t tid)
{
	struct procfs_status st;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (procfs_status(path, &st) < 0)
		return true;
	return ((st.sigpnd | st.shdpnd) & ~st.sigblk) != 0;
}

/*
 * epoll_wait and friends return EINTR for a mere stop, ours included.  When
 * the wait has no timeout and no signal explains the EINTR, it was
 * heapctl's: make the saved state re-issue the syscall, so the program
 * never sees it.  A timed wait keeps the EINTR: re-issued with its
 * original timeout it would wait that long again, while an EINTR is what
 * any signal (or SIGSTOP/SIGCONT) gives it, and event loops recompute the
 * time left (docs/design.md, "Blocked syscalls").
 */
static void undo_our_eintr(struct engine *t, struct sess *s)
{
	uint8_t g[sizeof(s->gregs)] __attribute__((aligned(16)));
	uint8_t insn[8];
	struct hc_err e = { 0 };

	memcpy(g, s->gregs, t->img->arch->gregs_len);
	if (!t->img->arch->undo_stop_eintr(g, &s->presys) ||
	    mem_read(t->img->pid, t->img->memfd, t->img->arch->get_pc(g), insn, t->img->arch->syscall_insn.len, &e) < 0 ||
	    memcmp(insn, t->img->arch->syscall_insn.b, t->img->arch->syscall_insn.len))
		return;
	/*
	 * Into the thread at once, before anything slower: from here even
	 * heapctl's death leaves no EINTR.  Take it back if a pending signal
	 * explains the EINTR after all.  (The kernel says the thread was in
	 * that syscall, so the syscall instruction's bytes before its pc are
	 * that instruction.)
	 */
	if (step_set_gregs(t, g, &e) < 0)
		return;
	if (thread_signal_pending(t->img->pid, s->tid)) {
		step_set_gregs(t, s->gregs, &e);
		return;
	}
	memcpy(s->gregs, g, t->img->arch->gregs_len);
	s->eintr_undone = true;
	pr_debug("tid %d: syscall %ld got EINTR from heapctl's stop; it will run again", s->tid,
		 t->img->arch->syscall_nr(s->gregs));
}

/* /proc/PID/task/TID/syscall of a blocked thread: "nr a0 .. a5 sp pc". */
void thread_presys(pid_t pid, pid_t tid, struct hc_presys *pre)
{
	char path[96], buf[256];
	unsigned long long v[9];
	FILE *f;

	memset(pre, 0, sizeof(*pre));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9' &&
	    sscanf(buf, "%llu %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
		pre->nr = (long)v[0];
		for (int i = 0; i < 6; i++)
			pre->args[i] = v[i + 1];
		pre->sp = v[7];
		pre->pc = v[8];
		pre->valid = true;
	}
	fclose(f);
}

/*
 * arm64: the thread sits rewound on the svc of a relative sleep (nanosleep,
 * FUTEX_WAIT with a timeout), and only do_signal(), after this stop, picks
 * restart_syscall to go on with the time left; restored later, at another
 * stop, the sleep would start over in full.  So let do_signal() decide
 * with the original registers and stop the thread at the syscall-entry
 * stop of that svc (PTRACE_SYSCALL): the saved state takes the kernel's
 * choice, the syscall is skipped, and the thread is put back on the svc.
 * 1: done (or nothing to learn), 0: handed back (why says so), -1: error.
 */
static int probe_restart(struct engine *t, struct sess *s, char *why, size_t whylen,
			 struct hc_err *err)
{
	uint8_t g[sizeof(s->gregs)] __attribute__((aligned(16)));
	enum stop st;
	int sig, r;
	bool ok;

	if (ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	r = step_wait(t, s->tid, &st, &sig, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop", s->tid);
	if (st == ST_EXITED) {
		if (s->exec_seen)
			return step_gone(t, err);
		snprintf(why, whylen, "thread %d exited", s->tid);
		s->tid = 0;
		s->stopped = s->saved = false;
		return 0;
	}
	if (st == ST_SIGNAL) {
		/* A signal came first: deliver it right there, as without heapctl. */
		snprintf(why, whylen, "thread %d took a signal", s->tid);
		s->pending_sig = sig;
		return step_give_back_pending(t, err) < 0 ? -1 : 0;
	}
	s->at = st;
	if (st != ST_SYSCALL)
		return 1; /* a group stop, still in get_signal(): registers as saved */
	if (step_get_gregs(t, g, err) < 0)
		return -1;
	/*
	 * The kernel's answer into the saved state, and the saved state into
	 * the thread, back on the svc, before the syscall is skipped: should
	 * heapctl die at any point from here, the thread runs that svc again.
	 * (Dying between these two writes lets the syscall run once first and
	 * return onto the svc: restart_syscall then finds its sleep over.  An
	 * entry at any other svc cannot happen without a signal stop first;
	 * the saved state is then put back unchanged.)
	 */
	memcpy(s->fgregs, s->gregs, t->img->arch->gregs_len);
	ok = t->img->arch->restart_probed(s->gregs, g);
	s->probed = ok;
	if (step_set_gregs(t, s->gregs, err) < 0 || step_skip_syscall(t, err) < 0 ||
	    ptrace_resume(s->tid, true, 0, err) < 0)
		return -1;
	r = step_wait(t, s->tid, &st, &sig, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop", s->tid);
	if (st == ST_EXITED)
		return step_gone(t, err);
	s->at = st;
	pr_debug("tid %d: %s", s->tid,
		 ok ? "the kernel's restart decision for its sleep is in the saved state" :
		      "unexpected syscall entry after the stop; saved state unchanged");
	return 1;
}

/* State letter of a thread (R, S, D, T, t, Z, X), or 0 if gone. */
static char task_state(pid_t pid, pid_t tid)
{
	struct procfs_stat st;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	procfs_stat(path, &st);
	return st.state;
}

bool thread_gone(pid_t pid, pid_t tid)
{
	char c = task_state(pid, tid);

	return !c || c == 'Z' || c == 'X';
}

/* Seize tid and stop it.  1: stopped and safe, 0: not usable now, -1: error. */
int thread_try(struct engine *t, pid_t tid, bool picky, char *why, size_t whylen,
	       struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_err e = { 0 };
	uint64_t saved_deadline;
	enum stop st;
	int sig, r;

	if (ptrace_seize(tid, &e) < 0) {
		/* an exiting thread refuses with EPERM too: not a permission problem */
		if (e.code == HC_E_GONE || (e.code == HC_E_PERM && thread_gone(t->img->pid, tid))) {
			snprintf(why, whylen, "thread %d exited", tid);
			return 0;
		}
		/* nor is a thread that another tracer (gdb, strace) holds: name it */
		if (e.code == HC_E_PERM && tlock_traced_error(t->img->pid, tid, err) < 0)
			return -1;
		*err = e;
		return -1;
	}
	s->tid = tid;
	s->probed = false;
	/* a blocked thread's stack, scanned ahead (where_warm_up()), and arm64's EINTR undo */
	thread_presys(t->img->pid, tid, &s->presys);
	if (s->presys.valid)
		where_warm_up(t, s->presys.sp, s->presys.pc);
	if (ptrace_interrupt(tid, err) < 0)
		return -1;
	/*
	 * A stop takes microseconds; do not let a spent retry budget cut it
	 * short, nor a request to stop (SIGINT, SIGTERM, the front's death):
	 * the stop may already have cost an epoll_wait its EINTR, which only
	 * heapctl, once the thread has stopped, can take back.
	 */
	saved_deadline = t->deadline_ns;
	if (t->deadline_ns < now_ns() + 2000000000ull)
		t->deadline_ns = now_ns() + 2000000000ull;
	for (;;) {
		r = step_wait_ex(t, tid, false, &st, &sig, err);
		if (r != 0 || st != ST_SIGNAL)
			break;
		/* A signal on its way: deliver it as the kernel would, then stop. */
		if (ptrace_resume(tid, false, sig, err) < 0) {
			r = -1;
			break;
		}
		pr_trace("tid %d: signal %d delivered before the stop", tid, sig);
	}
	/* whatever happened: a retry must not find the budget stretched */
	t->deadline_ns = saved_deadline;
	if (r < 0)
		return -1;
	if (r > 0)
		return err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop (uninterruptible sleep?)",
			       tid);
	if (st == ST_EXITED) {
		if (s->exec_seen)
			return step_gone(t, err);
		snprintf(why, whylen, "thread %d exited", tid);
		return 0;
	}
	s->at = st;
	s->stopped = true;
	s->stopped_ns = now_ns();
	pclock_reset();
	if (s->presys.valid)
		where_prefetch(t, s->presys.sp);
	if (step_get_gregs(t, s->gregs, err) < 0)
		return -1;
	s->saved = true;
	undo_our_eintr(t, s);
	/*
	 * Not under seccomp filters: the probe skips a syscall (number -1)
	 * before seccomp_check() has looked at the filters.
	 */
	if (t->img->arch->restart_probe && st == ST_EVENT && t->seccomp == 0 &&
	    t->img->arch->restart_probe(s->gregs, &s->presys)) {
		r = probe_restart(t, s, why, whylen, err);
		if (r <= 0)
			return r;
	}
	pr_debug("tid %d stopped (%s) at pc 0x%llx, in syscall %ld", tid, step_stop_name(st),
		 (unsigned long long)t->img->arch->get_pc(s->gregs), t->img->arch->syscall_nr(s->gregs));
	where_disasm(t, t->img->arch->get_pc(s->gregs), HC_LOG_TRACE);
	if (hc_log_on(HC_LOG_TRACE)) {
		char buf[1024];

		t->img->arch->dump_regs(s->gregs, buf, sizeof(buf));
		pr_trace("registers of tid %d:\n%s", tid, buf);
	}
	/*
	 * A thread resuming an interrupted sleep through restart_syscall
	 * depends on its restart block; should heapctl die, the rt_sigreturn
	 * that gives the thread back resets that block and the sleep would end
	 * with EINTR.  So prefer other threads, and wait up to a second for a
	 * --tid thread to start its next syscall; only then, or in a process
	 * with no other thread, is that small, death-only risk taken.
	 */
	if (picky && (t->img->arch->syscall_nr(s->gregs) == t->img->arch->nr_restart_syscall ||
		      (s->presys.valid && s->presys.nr == t->img->arch->nr_restart_syscall))) {
		snprintf(why, whylen, "thread %d is resuming an interrupted sleep", tid);
	} else {
		uint64_t t0 = now_ns();

		r = where_safe(t, tid, s->gregs, why, whylen);
		t->timing.check_us = (now_ns() - t0) / 1000;
		if (r == 1)
			return 1;
	}
	pr_debug("tid %d is not at a safe point: %s", tid, why);
	if (ptrace_detach(tid, 0, err) < 0) /* an undone EINTR is already in its registers */
		return -1;
	s->eintr_undone = false;
	s->tid = 0;
	s->stopped = s->saved = false;
	return 0;
}

/*
 * Threads in the order we try them: sleeping ones first, then running, then
 * the rest.  At most max of them (0: all): listing a thousand threads costs
 * a round trip milliseconds, and the first few nearly always do.
 */
int thread_list(struct engine *t, size_t max, pid_t **out, size_t *n, struct hc_err *err)
{
	/* small reads: the kernel looks up every entry it returns (proc_fill_cache()) */
	char path[64], buf[2048];
	struct dirent64 *de;
	pid_t *v = NULL;
	int *rank = NULL;
	size_t cnt = 0, cap = 0;
	long got = 0, at = 0;
	bool best = false;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task", t->img->pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, HC_E_GONE, ENOENT, "pid %d exited", t->img->pid);
		return err_errno(err, errno, "open %s", path);
	}
	while (!max || cnt < max) {
		pid_t tid;
		int rk = 3;

		if (at >= got) {
			got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
			at = 0;
			if (got <= 0)
				break;
		}
		de = (struct dirent64 *)(buf + at);
		at += de->d_reclen;
		tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		/*
		 * Rank the first threads only: reading a thousand stat files
		 * costs ms.  Once one is a sleeper no stop disturbs, the best
		 * kind, it goes first and the rest are not read.
		 */
		if (cnt < MAX_RANKED && !best) {
			char c = task_state(t->img->pid, tid);
			struct hc_presys pre;

			rk = c == 'S' ? 0 : c == 'R' ? 1 : (c == 'T' || c == 't') ? 2 : c == 'Z' ? 9 : 3;
			/*
			 * A sleeper whose syscall our stop would disturb comes
			 * after the running threads: epoll_wait and friends get
			 * EINTR (a timed one keeps it), arm64 needs extra stops
			 * to keep a relative sleep's time left (probe_restart()),
			 * restart_syscall loses its restart block if heapctl dies.
			 */
			if (rk == 0) {
				thread_presys(t->img->pid, tid, &pre);
				if (pre.valid && (pre.nr == t->img->arch->nr_restart_syscall ||
						  t->img->arch->wait_kind(pre.nr, pre.args) !=
							  HC_WAIT_UNDISTURBED))
					rk = 2;
			}
		}
		if (rk == 9)
			continue;
		best |= rk == 0;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			pid_t *nv = realloc(v, ncap * sizeof(*v));
			int *nr = nv ? realloc(rank, ncap * sizeof(*rank)) : NULL;

			if (nv)
				v = nv;
			if (!nv || !nr) {
				close(fd);
				free(v);
				free(rank);
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
			}
			rank = nr;
			cap = ncap;
		}
		v[cnt] = tid;
		rank[cnt++] = rk;
	}
	close(fd);
	/* stable insertion sort by rank: thread lists are short */
	for (size_t i = 1; i < cnt; i++)
		for (size_t j = i; j > 0 && rank[j - 1] > rank[j]; j--) {
			int rk = rank[j];
			pid_t tv = v[j];

			rank[j] = rank[j - 1];
			v[j] = v[j - 1];
			rank[j - 1] = rk;
			v[j - 1] = tv;
		}
	free(rank);
	*out = v;
	*n = cnt;
	return 0;
}

/*
 * The process is stopped by job control, so its other threads cannot run
 * out of the allocator: if one of them stopped inside it, holding a lock,
 * the call would wait for it forever.  They are stopped anyway, so look at
 * each of them (seize, unwind, detach: they stay stopped).
 */
int thread_check_stopped(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess, saved = *s;
	pid_t *tids = NULL;
	size_t n = 0;
	char why[256];
	int ret = 0;

	/* every thread, even with --tid: any of them may hold the lock */
	if (thread_list(t, 0, &tids, &n, err) < 0)
		return -1;

	for (size_t i = 0; i < n && !ret; i++) {
		if (tids[i] == saved.tid)
			continue;
		memset(s, 0, sizeof(*s));
		/* thread_try() detaches an unsafe thread itself and says why */
		int r = thread_try(t, tids[i], false, why, sizeof(why), err);

		if (r < 0)
			ret = -1;
		else if (r == 0 && !strstr(why, "exited"))
			ret = err_sethint(err, HC_E_UNSAFE, 0,
					  "resume it (kill -CONT) and retry, or retry when it is stopped elsewhere",
					  "pid %d is stopped by job control and %s: a call would wait for it forever",
					  t->img->pid, why);
		else if (r > 0 && ptrace_detach(tids[i], 0, err) < 0)
			ret = -1;
	}
	*s = saved;
	free(tids);
	return ret;
}
