// SPDX-License-Identifier: MIT
/*
 * Every other thread of the target stopped for an instant: what changing
 * code that threads may be running needs (the sampler's inline hooks).
 *
 * Each thread is seized and interrupted as thread_try() does, with the
 * same care and no more: a signal arriving before the stop is delivered
 * first; an EINTR that only the stop caused (an epoll_wait with no
 * timeout) is undone in its registers at once, so even heapctl's death
 * leaves none; nothing else of the thread is changed.  The list
 * of threads is read again until no new one appears: a stopped thread
 * makes none.  Should heapctl die, the kernel detaches every thread and
 * each goes on where it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_int.h"
#include "clock.h"
#include "freeze.h"
#include "log.h"
#include "ptrace.h"
#include "engine.h"
#include "image.h"

struct frozen {
	pid_t tid;
	uint64_t pc;
};

static bool have(const struct freeze *f, pid_t tid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->th[i].tid == tid)
			return true;
	return false;
}

/* Seize and stop tid; 1 stopped, 0 gone, -1 error. */
static int stop_one(struct engine *t, pid_t tid, struct frozen *fz, struct hc_err *err)
{
	uint8_t g[512] __attribute__((aligned(16))), u[512] __attribute__((aligned(16)));
	const struct hc_arch *a = t->img->arch;
	struct hc_presys pre;
	struct hc_err e = { 0 };
	size_t len = a->gregs_len;
	enum stop st;
	int sig, r;

	if (ptrace_seize(tid, &e) < 0) {
		if (e.code == HC_E_GONE || thread_gone(t->img->pid, tid))
			return 0;
		*err = e;
		return -1;
	}
	thread_presys(t->img->pid, tid, &pre);
	if (ptrace_interrupt(tid, err) < 0)
		return -1;
	for (;;) {
		r = step_wait(t, tid, &st, &sig, err);
		if (r != 0 || st != ST_SIGNAL)
			break;
		if (ptrace_resume(tid, false, sig, err) < 0)
			return -1;
	}
	if (r < 0)
		return -1;
	if (r > 0)
		return err_set(err, HC_E_TIMEOUT, 0, "thread %d did not stop (uninterruptible sleep?)", tid);
	if (st == ST_EXITED)
		return 0;
	if (ptrace_regset_get(tid, NT_PRSTATUS_, g, &len, err) < 0)
		return -1;
	fz->tid = tid;
	fz->pc = a->get_pc(g);
	/* our EINTR, as thread_try() undoes it; a pending signal explains it otherwise */
	memcpy(u, g, a->gregs_len);
	if (pre.valid && a->undo_stop_eintr(u, &pre) && !thread_signal_pending(t->img->pid, tid) &&
	    ptrace_regset_set(tid, NT_PRSTATUS_, u, a->gregs_len, &e) == 0)
		pr_debug("tid %d: syscall %ld got EINTR from the freeze; it will run again", tid,
			 a->syscall_nr(u));
	return 1;
}

int freeze_all(struct engine *t, struct freeze *f, struct hc_err *err)
{
	pid_t self = t->sess ? t->sess->tid : 0;
	bool added = true;

	memset(f, 0, sizeof(*f));
	f->t0_ns = now_ns();
	while (added) {
		pid_t *tids = NULL;
		size_t n = 0;

		added = false;
		if (thread_list(t, 0, &tids, &n, err) < 0)
			return thaw_all(t, f, err), -1;
		for (size_t i = 0; i < n; i++) {
			struct frozen *nth;
			int r;

			if (tids[i] == self || have(f, tids[i]))
				continue;
			nth = realloc(f->th, (f->n + 1) * sizeof(*f->th));
			if (!nth) {
				free(tids);
				err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
				return thaw_all(t, f, err), -1;
			}
			f->th = nth;
			r = stop_one(t, tids[i], &f->th[f->n], err);
			if (r < 0) {
				/* seized but not counted: let it go too */
				ptrace_detach(tids[i], 0, &(struct hc_err){ 0 });
				free(tids);
				return thaw_all(t, f, err), -1;
			}
			if (r > 0) {
				f->n++;
				added = true;
			}
		}
		free(tids);
	}
	f->frozen_ns = now_ns();
	pr_debug("froze %zu threads in %llu us", f->n,
		 (unsigned long long)((f->frozen_ns - f->t0_ns) / 1000));
	return 0;
}

bool freeze_pc_in(const struct freeze *f, uint64_t lo, uint64_t hi, pid_t *tid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->th[i].pc > lo && f->th[i].pc < hi) {
			*tid = f->th[i].tid;
			return true;
		}
	return false;
}

int thaw_all(struct engine *t, struct freeze *f, struct hc_err *err)
{
	int ret = 0;

	(void)t;
	for (size_t i = 0; i < f->n; i++) {
		struct hc_err e = { 0 };

		/*
		 * A signal sent meanwhile stays pending (a stopped thread dequeues
		 * nothing): it is delivered as the thread runs.  One that exited
		 * cannot be detached: nothing to give back.
		 */
		if (ptrace_detach(f->th[i].tid, 0, &e) < 0 && e.code != HC_E_GONE && !ret) {
			*err = e;
			ret = -1;
		}
	}
	if (f->frozen_ns)
		f->held_ns = now_ns() - f->frozen_ns;
	free(f->th);
	f->th = NULL;
	f->n = 0;
	return ret;
}
