// SPDX-License-Identifier: MIT
/*
 * The remote-call engine: the arch-neutral sequence.
 *
 *  1. Seize ONE thread (PTRACE_SEIZE + PTRACE_INTERRUPT); the others run on.
 *     Keep it only if where_safe() finds no frame inside the allocator.
 *  2. Save NT_PRSTATUS, every extra regset at the size the kernel reports
 *     (11008 bytes of XSTATE on AMX machines), and the signal mask.
 *  3. Write a real signal frame below the red zone: rt_sigreturn on it gives
 *     the thread back exactly.  From here on, every state the thread is left
 *     in ends in that rt_sigreturn if heapctl dies (see arch/arch.h), so
 *     there is no moment at which killing heapctl harms the target.
 *  4. mmap heapctl's pages with remote syscalls on a "syscall; ret" gadget of
 *     the target's own text, returning into its own sigreturn restorer; run
 *     under PTRACE_SYSCALL, nothing in the target is ever patched.  The real
 *     signal mask is read at the first syscall-entry stop: by then the kernel
 *     has put back a mask that ppoll/pselect/epoll_pwait/sigsuspend had
 *     swapped in.  Then every asynchronous signal is blocked; they stay
 *     pending and are delivered after the restore, none lost or doubled.
 *  5. Calls return into a trampoline in heapctl's page that issues a
 *     getpid; heapctl reads the result at that syscall-entry stop.  Should
 *     heapctl die, the trampoline goes on to unmap its own page and
 *     rt_sigreturn (arch/arch.h): nothing of heapctl's is left behind.
 *     Callbacks are a getpid syscall heapctl watches for.
 *  6. Restore: put back registers, regsets and mask at the syscall-exit stop
 *     of the page's munmap, with the restart decision the kernel would make
 *     (arch restart_here()), and detach there, so a blocked read/nanosleep/
 *     futex resumes exactly as if nothing happened.  Where that cannot be
 *     done (arm64), at a stop inside signal delivery (PTRACE_INTERRUPT),
 *     where the kernel's own restart logic sees the original registers.
 *
 * This file holds the session: borrow() with the frame and heapctl's page,
 * the calls, scratch space, and the restore in call_end().  step.c runs
 * the thread from stop to stop, thread.c picks and stops it, gadget.c
 * finds what the target's text lends heapctl; call_int.h is what the four
 * share.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "call.h"
#include "call_int.h"
#include "log.h"
#include "procfs.h"
#include "ptrace.h"
#include "seccomp.h"
#include "target.h"
#include "tlock.h"

static void sess_free(struct sess *s)
{
	for (unsigned int i = 0; i < s->nextra; i++)
		free(s->extra[i].buf);
	free(s);
}

static int save_extra(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	for (const unsigned int *nt = t->arch->extra_regsets; *nt && s->nextra < MAX_EXTRA; nt++) {
		/* Ask with a generous buffer; the kernel says how much is real. */
		size_t len = 64 * 1024;
		uint8_t *buf = malloc(len);
		struct hc_err e = { 0 };

		if (!buf)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		if (ptrace_regset_get(s->tid, *nt, buf, &len, &e) < 0) {
			free(buf);
			/* A regset this CPU or kernel does not have (e.g. no SVE): nothing to save. */
			if (e.sys_errno == EINVAL || e.sys_errno == ENODEV) {
				pr_debug("tid %d: no regset 0x%x here", s->tid, *nt);
				continue;
			}
			*err = e;
			return -1;
		}
		s->extra[s->nextra].nt = *nt;
		s->extra[s->nextra].buf = buf;
		s->extra[s->nextra].len = len;
		s->nextra++;
		pr_debug("tid %d: saved regset 0x%x, %zu bytes", s->tid, *nt, len);
	}
	return 0;
}

/*
 * Write the signal frame that gives the thread back, below its red zone.
 * Returns 1 if the stack has no room there (the thread is not usable).
 */
static int write_frame(struct hc_target *t, char *why, size_t whylen, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_sigframe f = { .gregs = s->probed ? s->fgregs : s->gregs, .extra = s->extra,
				 .nextra = s->nextra };
	struct hc_err e = { 0 };
	uint8_t *buf;
	size_t len;
	int r = 0;

	/* A mask swapped in by ppoll & co is replaced by the real one at the first stop. */
	if (s->mask_known)
		f.mask = s->mask;
	else if (ptrace_sigmask_get(s->tid, &f.mask, err) < 0)
		return -1;
	len = (t->arch->sigframe_len(&f) + 15) & ~(size_t)15;
	f.raddr = s->frame = t->arch->frame_place(t->arch->get_sp(s->gregs), len + SCRATCH_LEN);
	s->scratch = s->frame + len;
	s->scratch_used = 0;
	buf = calloc(1, len);
	if (!buf)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	if (t->arch->sigframe_build(&f, buf, len, err) < 0) {
		r = -1;
	} else if (mem_write(t->memfd, s->frame, buf, len, &e) < 0 ||
		   mem_write(t->memfd, s->scratch + SCRATCH_LEN - 8, buf, 8, &e) < 0) {
		snprintf(why, whylen, "thread %d has no stack room below 0x%llx", s->tid,
			 (unsigned long long)t->arch->get_sp(s->gregs));
		r = 1;
	}
	free(buf);
	return r;
}

/* Lines of /proc/PID/maps, i.e. mappings; 0 if unreadable. */
static unsigned long count_maps(pid_t pid)
{
	char path[64], buf[4096];
	unsigned long n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/*
 * The target's mmap of heapctl's page failed with error e.  ENOMEM there is
 * rarely "out of memory": name the limit the page ran into.  RLIMIT_AS is
 * checked by the kernel against VmSize (may_expand_vm()); the margin
 * covers what the target's other threads map and unmap meanwhile.
 */
static int map_failed(struct hc_target *t, int e, struct hc_err *err)
{
	const char *what = "mmap of heapctl's code page";
	struct procfs_status st;
	char path[64], hint[256];
	uint64_t as, hard;
	unsigned long nmaps, maxmaps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", t->pid);
	if (e == ENOMEM && procfs_limit(t->pid, "Max address space", &as, &hard) == 0 &&
	    as != UINT64_MAX && procfs_status(path, &st) == 0 && st.vmsize + (1 << 20) > as) {
		/* some room above what it maps now, within the hard limit if it has one */
		uint64_t want = as + (64 << 20) < hard ? as + (64 << 20) : hard;

		if (want > as)
			snprintf(hint, sizeof(hint),
				 "raise the target's limit, e.g. `prlimit --pid %d --as=%llu:`, or "
				 "make it free address space: heapctl maps one page (%u bytes) in it",
				 t->pid, (unsigned long long)want, CODE_LEN);
		else
			snprintf(hint, sizeof(hint),
				 "its hard limit is reached too: raise both as root, e.g. `prlimit "
				 "--pid %d --as=%llu`, or make it free address space: heapctl maps "
				 "one page (%u bytes) in it",
				 t->pid, (unsigned long long)(as + (64 << 20)), CODE_LEN);
		return err_sethint(err, HC_E_NOMEM, e, hint,
				   "%s in pid %d failed: the process is at its address-space limit "
				   "(RLIMIT_AS, \"Max address space\" %llu bytes; VmSize %llu bytes)",
				   what, t->pid, (unsigned long long)as,
				   (unsigned long long)st.vmsize);
	}
	f = e == ENOMEM ? fopen("/proc/sys/vm/max_map_count", "re") : NULL;
	if (f) {
		if (fscanf(f, "%lu", &maxmaps) != 1)
			maxmaps = 0;
		fclose(f);
	}
	if (maxmaps && (nmaps = count_maps(t->pid)) + 16 > maxmaps)
		return err_sethint(err, HC_E_NOMEM, e,
				   "raise vm.max_map_count (sysctl -w vm.max_map_count=...)",
				   "%s in pid %d failed: the process has %lu mappings, at the "
				   "system's limit (vm.max_map_count %lu)",
				   what, t->pid, nmaps, maxmaps);
	if (e == ENOMEM)
		return err_sethint(err, HC_E_NOMEM, e,
				   "free memory on the system (or check vm.overcommit_memory) and "
				   "retry",
				   "%s in pid %d failed: %s", what, t->pid, strerror(e));
	return err_sethint(err, HC_E_REMOTE, e,
			   "a seccomp filter or a security policy of the target may forbid "
			   "executable anonymous memory",
			   "%s in pid %d failed: %s", what, t->pid, strerror(e));
}

/* Point the gadget's "ret" at ret_addr with the stack at the frame (from the mmap's exit stop). */
static int aim_gadget_ret(struct hc_target *t, uint64_t ret_addr, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_call c = { .pc = t->gadget + t->arch->syscall_insn.len, .ret_addr = ret_addr,
			     .frame = s->frame };

	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	t->arch->prep_syscall(s->cur, &c);
	if (c.slot_addr && mem_write(t->memfd, c.slot_addr, &c.slot_val, 8, err) < 0)
		return -1;
	return step_set_gregs(t, s->cur, err);
}

/*
 * Map heapctl's code page, write it, and arm its cleanup.
 *
 * The mmap returns into the C library's munmap(), which unmaps the page
 * again, and from there into the restorer: should heapctl die before the
 * page is written and its own cleanup armed, the page goes and the thread
 * restores itself.  On x86_64 (arch.h's page_exit) returns pop the stack:
 * the page goes at an address picked before the stop (t->page_hint,
 * MAP_FIXED_NOREPLACE), still in munmap()'s first argument register, and
 * two stack words make the chain.  On arm64 "ret" takes x30: the mmap
 * returns into a link of the C library's (t->link: "blr xN" into munmap(),
 * whose first argument is the mmap's result, then an epilogue that loads
 * the restorer from the stack into x30).  Without either, or if the
 * address was taken after all, the page is mapped where the kernel likes
 * and a SIGKILL in the few microseconds before its cleanup is armed leaves
 * it behind.
 */
static int map_pages(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	uint8_t code[MAGIC_OFF + 16];
	uint32_t owner = (uint32_t)getpid();
	bool chain = t->munmap_fn && t->page_hint && t->arch->page_exit.len;
	bool link = t->munmap_fn && t->link;
	uint64_t a[6];
	int64_t ret;
	int r;

	/* the kill tests' marks: a SIGKILL from here to "code page at" may leave the page */
	if (chain)
		pr_debug("pid %d: mapping heapctl's self-cleaning code page at 0x%llx", t->pid,
			 (unsigned long long)t->page_hint);
	else if (link)
		pr_debug("pid %d: mapping heapctl's self-cleaning code page through 0x%llx", t->pid,
			 (unsigned long long)t->link);
	else
		pr_debug("pid %d: mapping heapctl's code page", t->pid);
	/* r-x from the start; written through /proc/PID/mem, never writable */
	a[0] = chain ? t->page_hint : 0;
	a[1] = CODE_LEN;
	a[2] = PROT_READ | PROT_EXEC;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS | (chain ? MAP_FIXED_NOREPLACE : 0);
	a[4] = (uint64_t)-1;
	a[5] = 0;
	if (chain)
		r = mem_write(t->memfd, s->frame, &t->restorer, 8, err) < 0 ?
			    -1 :
			    step_rsys_to(t, t->arch->nr_mmap, a, 6, s->frame - 8, t->munmap_fn, 0, 0,
					 &ret, err);
	else if (link)
		r = mem_write(t->memfd, s->frame - t->link_pop + t->link_lr_off, &t->restorer, 8,
			      err) < 0 ?
			    -1 :
			    step_rsys_to(t, t->arch->nr_mmap, a, 6, s->frame - t->link_pop, t->link,
					 t->link_reg, t->munmap_fn, &ret, err);
	else
		r = step_rsys(t, t->arch->nr_mmap, a, 6, &ret, err);
	if (r != 0)
		return r;
	if (chain && (uint64_t)ret != t->page_hint) {
		/*
		 * Before anything else, away from munmap(), in one write: the
		 * page is not where it points.  The gadget's "ret" returns onto
		 * itself and then into the restorer.
		 */
		uint64_t sled = t->gadget + t->arch->syscall_insn.len;

		if (mem_write(t->memfd, s->frame - 8, &sled, 8, err) < 0)
			return -1;
		chain = false;
		t->page_hint = 0;
		if (ret == -EEXIST) {
			/* mapped there meanwhile: where the kernel likes, as without a hint */
			pr_debug("pid %d: 0x%llx was taken meanwhile; mapping heapctl's code page",
				 t->pid, (unsigned long long)a[0]);
			a[0] = 0;
			a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
			r = step_rsys(t, t->arch->nr_mmap, a, 6, &ret, err);
			if (r != 0)
				return r;
		} else if (ret >= 0 || ret <= -4096) {
			/* a kernel before 4.17 took the flag for a hint */
			pr_debug("pid %d: mapping heapctl's code page", t->pid);
		}
	}
	if (ret < 0 && ret > -4096)
		return map_failed(t, (int)-ret, err); /* the target's errno, not ours */
	s->code = (uint64_t)ret; /* from here, call_end() unmaps it whatever fails */
	memset(code, 0, sizeof(code));
	memcpy(code, t->arch->ret_tramp.b, t->arch->ret_tramp.len);
	t->arch->ret_tramp_fill(code, t->gadget, t->restorer);
	memcpy(code + HC_STUB_OFF, t->arch->stub.b, t->arch->stub.len);
	memcpy(code + NOTIFY_OFF, t->arch->notify.b, t->arch->notify.len);
	if (chain) {
		memcpy(code + CHAIN_OFF, t->arch->page_exit.b, t->arch->page_exit.len);
		t->arch->page_exit_fill(code + CHAIN_OFF, s->code, t->gadget, t->restorer);
	}
	/* The mark lets a later heapctl reclaim a page that outlived its owner. */
	memcpy(code + MAGIC_OFF, MAGIC, 8);
	memcpy(code + MAGIC_OFF + 8, &owner, 4);
	if (mem_write(t->memfd, s->code, code, sizeof(code), err) < 0)
		return -1;
	/*
	 * Then hand the way out to the page's own code: from now on a SIGKILL
	 * leaves no page behind through the page's cleanup.  After the chain,
	 * in one write of its first link (the page's exit writes the frame's
	 * pretcode itself, which the calls' set-up changes); otherwise by
	 * aiming the gadget's ret at the cleanup.
	 */
	if (chain) {
		uint64_t exit = s->code + CHAIN_OFF;

		if (mem_write(t->memfd, s->frame - 8, &exit, 8, err) < 0)
			return -1;
	} else if (aim_gadget_ret(t, s->code + t->arch->ret_tramp_stop, err) < 0) {
		return -1;
	}
	pr_debug("pid %d: code page at 0x%llx, frame at 0x%llx", t->pid,
		 (unsigned long long)s->code, (unsigned long long)s->frame);
	return 0;
}

/* Threads the first look at a process lists; all of them after that. */
#define FIRST_LISTED 64

/* Pick and stop a thread at a safe point, save it, map heapctl's pages. */
static int borrow(struct hc_target *t, struct hc_err *err)
{
	char why[256] = "no thread found";
	pid_t *tids = NULL;
	size_t ntids = 0;
	unsigned int attempts = 0;
	useconds_t backoff = 200;
	int r;

	uint64_t leftovers[32];
	size_t nleft;

	/* how long a --tid thread may be waited for to leave restart_syscall */
	uint64_t picky_until = now_ns() + 1000000000ull;

	/* one heapctl at a time: before any seize, and before leftovers are judged */
	if (tlock_acquire(t, err) < 0)
		return -1;
	if (!t->gadget && gadget_find(t, err) < 0) {
		if (!gadget_same_program(t)) {
			memset(err, 0, sizeof(*err));
			return err_set(err, HC_E_GONE, 0, "pid %d ran execve while heapctl looked at it",
				       t->pid);
		}
		return -1;
	}
	nleft = gadget_find_leftovers(t, leftovers, 32);
	/* what the safe-point check reads, ready before anything stops */
	sym_prepare(t);
	t->sess = calloc(1, sizeof(*t->sess));
	if (!t->sess)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	memset(&t->timing, 0, sizeof(t->timing));
	for (;;) {
		free(tids);
		tids = NULL;
		if (t->opts.tid) {
			tids = malloc(sizeof(*tids));
			if (!tids)
				return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
			tids[0] = t->opts.tid;
			ntids = 1;
		} else if (thread_list(t, attempts ? 0 : FIRST_LISTED, &tids, &ntids, err) < 0) {
			goto fail;
		}
		/* two passes over the threads: the first one picky (see thread_try()) */
		for (size_t k = 0; k < 2 * ntids && (k == 0 || now_ns() < t->deadline_ns); k++) {
			size_t i = k % ntids;

			attempts++;
			r = thread_try(t, tids[i],
				       t->opts.tid ? now_ns() < picky_until : k < ntids && ntids > 1,
				       why, sizeof(why), err);
			if (r < 0)
				goto fail;
			if (r == 0)
				continue;
			if ((t->seccomp == 2 && seccomp_check(t, t->sess->tid, err) < 0) ||
			    (t->sess->at == ST_GROUP && thread_check_stopped(t, err) < 0) ||
			    save_extra(t, err) < 0)
				goto fail;
			/*
			 * Unless the thread sits in a syscall that swapped in a
			 * temporary mask (ppoll & co), its mask is the real one:
			 * take it now, so no signal is ever dequeued before
			 * heapctl blocks it.
			 */
			if (t->arch->swaps_mask(t->sess->gregs) == 0) {
				if (ptrace_sigmask_get(t->sess->tid, &t->sess->mask, err) < 0)
					goto fail;
				t->sess->mask_known = true;
			}
			r = write_frame(t, why, sizeof(why), err);
			if (r < 0)
				goto fail;
			if (r > 0) {
				if (ptrace_detach(tids[i], 0, err) < 0)
					goto fail;
				step_forget_extra(t->sess);
				t->sess->tid = 0;
				t->sess->stopped = t->sess->saved = false;
				continue;
			}
			r = map_pages(t, err);
			if (r < 0)
				goto fail;
			if (r > 0) {
				/* step_run() already gave it back to take its signal */
				snprintf(why, sizeof(why), "thread %d took a signal", tids[i]);
				k--; /* same thread again */
				continue;
			}
			gadget_reclaim_leftovers(t, leftovers, nleft);
			free(tids);
			t->timing.tid = t->sess->tid;
			t->timing.attempts = attempts;
			pr_info("borrowing tid %d of pid %d", t->sess->tid, t->pid);
			return 0;
		}
		if (!ntids || !gadget_same_program(t)) {
			/* every thread is a zombie (killed, not yet reaped), or execve ran */
			if (ntids)
				t->sess->exec_seen = true;
			step_gone(t, err);
			goto fail;
		}
		if (t->opts.tid && ntids == 1 && strstr(why, "exited")) {
			err_set(err, HC_E_NO_PROC, 0, "thread %d is not in pid %d", t->opts.tid, t->pid);
			goto fail;
		}
		if (now_ns() + backoff * 1000ull >= t->deadline_ns) {
			if (t->opts.tid)
				err_sethint(err, HC_E_UNSAFE, 0,
					    "retry later, raise --timeout, or drop --tid to let heapctl pick a thread",
					    "thread %d never reached a safe point: %s", t->opts.tid, why);
			else
				err_set(err, HC_E_UNSAFE, 0,
					"no thread of pid %d reached a safe point (last: %s)", t->pid, why);
			goto fail;
		}
		t->cancel_sig = term_pending();
		if (t->cancel_sig) {
			step_cancelled(t, err);
			goto fail;
		}
		/* Let the threads run on out of the allocator, then look again. */
		usleep(backoff);
		if (backoff < 20000)
			backoff *= 2;
	}
fail:
	free(tids);
	call_end(t, err);
	return -1;
}

/*
 * The thread is borrowed at the first thing that needs it (a call, a
 * write, scratch space), not when a session opens: an operation that
 * refuses before that never stops anything.  After a failed borrow the
 * error stands; nothing tries again within the same error.
 */
static int need(struct hc_target *t, struct hc_err *err)
{
	if (t->sess)
		return 0;
	if (err_isset(err))
		return -1;
	return borrow(t, err);
}

void call_hold(struct hc_target *t)
{
	t->held++;
}

int call_release(struct hc_target *t, struct hc_err *err)
{
	if (t->held)
		t->held--;
	return call_done(t, err);
}

int call_done(struct hc_target *t, struct hc_err *err)
{
	if (!t->held)
		return call_end(t, err);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_cb_raddr(struct hc_target *t, struct hc_err *err)
{
	return need(t, err) == 0 ? t->sess->code + NOTIFY_OFF : 0;
}

/*
 * Give the callee the FP state the ABI promises; rt_sigreturn brings the
 * real one back.  Once a borrow: a function returns the control words as
 * it found them and the x87 stack empty (none heapctl calls returns a long
 * double), so the next call finds the state the ABI promises already.
 */
static int prepare_fp(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (s->fp_ready)
		return 0;
	s->fp_ready = true;
	for (unsigned int i = 0; i < s->nextra; i++) {
		uint8_t *copy = malloc(s->extra[i].len);
		int r = 0;

		if (!copy)
			return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
		memcpy(copy, s->extra[i].buf, s->extra[i].len);
		if (t->arch->call_fpstate(s->extra[i].nt, copy, s->extra[i].len))
			r = ptrace_regset_set(s->tid, s->extra[i].nt, copy, s->extra[i].len, err);
		free(copy);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The words the backend wants on the stack: a return address, and stack arguments above it. */
static int write_slot(struct hc_target *t, const struct hc_call *c, struct hc_err *err)
{
	uint64_t w[1 + sizeof(c->stack) / sizeof(c->stack[0])];

	if (!c->slot_addr)
		return 0;
	if (c->nstack > sizeof(c->stack) / sizeof(c->stack[0]))
		return err_set(err, HC_E_INTERNAL, 0, "%u stack words from the backend", c->nstack);
	w[0] = c->slot_val;
	memcpy(w + 1, c->stack, c->nstack * sizeof(c->stack[0]));
	return mem_write(t->memfd, c->slot_addr, w, (1 + c->nstack) * sizeof(w[0]), err);
}

static int call_any(struct hc_target *t, uint64_t fn, uint64_t sret, const uint64_t *args,
		    unsigned int nargs, uint64_t *ret, call_cb_fn cb, void *cb_arg,
		    struct hc_err *err)
{
	struct sess *s;
	struct hc_call c = { .pc = fn, .nargs = nargs, .sret = sret };

	if (nargs > HC_ARCH_MAX_ARGS)
		return err_set(err, HC_E_ARGS, 0, "%u arguments", nargs);
	if (need(t, err) < 0)
		return -1;
	s = t->sess;
	c.ret_addr = s->code;
	c.frame = s->frame;
	if (!t->cancel_sig)
		t->cancel_sig = term_pending();
	if (t->cancel_sig)
		return step_cancelled(t, err);
	if (nargs)
		memcpy(c.args, args, nargs * sizeof(*args));
	memcpy(s->cur, s->gregs, t->arch->gregs_len);
	if (t->arch->prep_call(s->cur, &c, err) < 0)
		return -1;
	/* registers first, then FP state and mask: each step restores itself */
	if (write_slot(t, &c, err) < 0 || step_set_gregs(t, s->cur, err) < 0 ||
	    prepare_fp(t, err) < 0 || step_block_signals(t, err) < 0)
		return -1;
	return step_run(t, STEP_CALL, ret, cb, cb_arg, err) == 0 ? 0 : -1;
}

int call_syscall(struct hc_target *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
		 struct hc_err *err)
{
	if (need(t, err) < 0)
		return -1;
	if (!t->cancel_sig)
		t->cancel_sig = term_pending();
	if (t->cancel_sig)
		return step_cancelled(t, err);
	return step_rsys(t, nr, args, n, ret, err) == 0 ? 0 : -1;
}

int call_fn(struct hc_target *t, uint64_t fn, const uint64_t *args, unsigned int nargs,
	    uint64_t *ret, call_cb_fn cb, void *cb_arg, struct hc_err *err)
{
	return call_any(t, fn, 0, args, nargs, ret, cb, cb_arg, err);
}

int call_fn_sret(struct hc_target *t, uint64_t fn, uint64_t sret_raddr, const uint64_t *args,
		 unsigned int nargs, uint64_t *ret, struct hc_err *err)
{
	if (!sret_raddr)
		return err_set(err, HC_E_INTERNAL, 0, "no address for the returned struct");
	return call_any(t, fn, sret_raddr, args, nargs, ret, NULL, NULL, err);
}

int call_end(struct hc_target *t, struct hc_err *err)
{
	struct sess *s = t->sess;
	struct hc_err e = { 0 };
	uint64_t a[2];
	int64_t ret;
	enum stop st;
	int sig = 0, r;
	bool keep_lock = false;

	if (!s)
		return 0;
	t->sess = NULL;
	if (!s->tid || s->gone)
		goto out;
	if (!s->stopped) {
		/* Seized but never stopped: heapctl's exit detaches it (exit_ptrace()). */
		pr_warn("tid %d never stopped; it is released when heapctl exits", s->tid);
		keep_lock = true; /* still ours: the next heapctl must wait for our exit */
		goto out;
	}
	t->sess = s;
	/* Give cleanup its own budget: restoring must not fail for lack of time. */
	t->deadline_ns = now_ns() + 5000000000ull;
	if (!s->saved || !s->touched) {
		/* Only stopped: hand it back as it was (with our EINTR undone, if any). */
		if (ptrace_detach(s->tid, 0, &e) < 0)
			goto fail;
		goto done;
	}
	if (s->code) {
		a[0] = s->code;
		a[1] = CODE_LEN;
		s->code = 0; /* this munmap returns into the target's restorer, not the page */
		if (step_rsys_ok(t, t->arch->nr_munmap, a, 2, &ret, "munmap", &e) != 0 && s->gone)
			goto out;
	}
	if (err_isset(&e)) {
		pr_warn("pid %d: could not unmap heapctl's code page (%s)", t->pid, e.msg);
		memset(&e, 0, sizeof(e));
	}
	/*
	 * The thread now sits at a syscall-exit stop from which it would
	 * restore itself.  The kernel runs no restart logic after such a
	 * stop unless a signal is pending, so heapctl makes the decision it
	 * would make (restart_here()) and puts everything back right here;
	 * the restart block is untouched, a nanosleep goes on with the time
	 * left.  Where registers cannot all be written at a syscall stop
	 * (arm64), or an rt_sigreturn already reset the restart block, stop
	 * the thread once more inside get_signal() instead, where the
	 * kernel's own restart logic sees the registers put back.
	 */
	if (t->arch->restart_here && s->at == ST_SYSCALL && !s->real_sigreturn) {
		t->arch->restart_here(s->gregs);
		goto put_back;
	}
	if (ptrace_interrupt(s->tid, &e) < 0 || ptrace_resume(s->tid, false, 0, &e) < 0)
		goto fail;
	for (;;) {
		r = step_wait(t, s->tid, &st, &sig, &e);
		if (r != 0) {
			err_set(&e, HC_E_TIMEOUT, 0, "thread %d did not stop for the restore", s->tid);
			goto fail;
		}
		if (st == ST_EXITED) {
			s->gone = true;
			goto out;
		}
		if (st == ST_EVENT || st == ST_GROUP) {
			sig = 0;
			break;
		}
		if (st == ST_SIGNAL)
			break; /* in get_signal too: deliver it on detach */
		if (ptrace_resume(s->tid, false, 0, &e) < 0)
			goto fail;
	}
put_back:
	/* Mask first, registers last: until then the thread would still restore itself. */
	if (ptrace_sigmask_set(s->tid, s->mask, &e) < 0)
		goto fail;
	for (unsigned int i = 0; i < s->nextra; i++)
		if (ptrace_regset_set(s->tid, s->extra[i].nt, s->extra[i].buf, s->extra[i].len, &e))
			goto fail;
	if (s->real_sigreturn) {
		/* the restart block is gone: as the frame would have it */
		if (s->probed)
			memcpy(s->gregs, s->fgregs, t->arch->gregs_len);
		t->arch->restart_now(s->gregs);
	}
	if (step_set_gregs(t, s->gregs, &e) < 0 || ptrace_detach(s->tid, sig, &e) < 0)
		goto fail;
done:
	t->timing.paused_us = (now_ns() - s->stopped_ns) / 1000;
	pr_info("gave tid %d of pid %d back after %llu us", s->tid, t->pid,
		(unsigned long long)t->timing.paused_us);
	step_redeliver(t, s);
	goto out;
fail:
	if (e.code == HC_E_GONE)
		s->gone = true;
	else
		pr_err("pid %d tid %d: restore failed: %s", t->pid, s->tid, e.msg);
	if (!err_isset(err))
		*err = e;
out:
	if (s->gone && !err_isset(err))
		step_gone(t, err);
	t->sess = NULL;
	sess_free(s);
	/* the thread is given back: the next heapctl may come (even while we print) */
	if (!keep_lock)
		tlock_release(t);
	return err_isset(err) ? -1 : 0;
}

uint64_t call_scratch(struct hc_target *t, size_t len, struct hc_err *err)
{
	struct sess *s;
	uint64_t at;

	if (need(t, err) < 0)
		return 0;
	s = t->sess;
	len = (len + 15) & ~(size_t)15;
	if (s->scratch_used + len > SCRATCH_LEN)
		return 0;
	at = s->scratch + s->scratch_used;
	s->scratch_used += len;
	return at;
}

size_t call_scratch_mark(const struct hc_target *t)
{
	return t->sess ? t->sess->scratch_used : 0;
}

void call_scratch_release(struct hc_target *t, size_t mark)
{
	if (t->sess && mark <= t->sess->scratch_used)
		t->sess->scratch_used = mark;
}

uint64_t call_strdup(struct hc_target *t, const char *str, struct hc_err *err)
{
	size_t len = strlen(str) + 1;
	uint64_t at = call_scratch(t, len, err);

	if (!at) {
		err_set(err, HC_E_ARGS, 0, "string of %zu bytes does not fit heapctl's scratch space", len);
		return 0;
	}
	if (mem_write(t->memfd, at, str, len, err) < 0)
		return 0;
	return at;
}

int call_write(struct hc_target *t, uint64_t raddr, const void *buf, size_t len,
	       struct hc_err *err)
{
	if (need(t, err) < 0)
		return -1;
	return mem_write(t->memfd, raddr, buf, len, err);
}

int call_read(struct hc_target *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err)
{
	return mem_read(t->pid, t->memfd, raddr, buf, len, err);
}

int call_read_str(struct hc_target *t, uint64_t raddr, char *buf, size_t len,
		  struct hc_err *err)
{
	size_t got = 0;

	/* Read in chunks that never cross a page, so a short string near an unmapped page works. */
	while (got + 1 < len) {
		uint64_t at = raddr + got;
		size_t chunk = 4096 - (at & 4095);
		char *nul;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		if (mem_read(t->pid, t->memfd, at, buf + got, chunk, err) < 0)
			return -1;
		nul = memchr(buf + got, 0, chunk);
		if (nul)
			return 0;
		got += chunk;
	}
	buf[len - 1] = 0;
	return 0;
}
