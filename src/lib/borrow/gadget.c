// SPDX-License-Identifier: MIT
/*
 * What heapctl takes from the target's text, used as it is, never patched:
 * the "syscall; ret" sequence remote syscalls run on, a sigreturn
 * restorer, the function callbacks point at (getpid()), and on x86_64 the
 * ret gadget calls return through (arch.h).  All of it is found before
 * anything is stopped.  gadget_program() tells a failed search from an
 * execve, and both from an exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "call_int.h"
#include "log.h"
#include "mem.h"
#include "procfs.h"
#include "engine.h"
#include "image.h"

static bool is_libc(const struct obj *o)
{
	return strstr(o->path, "/libc.so") || strstr(o->path, "/libc.musl");
}

/*
 * The first place in buf[0, len) at a multiple of step where pat is, or
 * -1: its first byte by memchr(), the rest compared there, not a memcmp()
 * at every offset of 8 or 64 KiB of text.
 */
static long pat_in(const uint8_t *buf, size_t len, const struct hc_bytes *pat, size_t step)
{
	for (size_t k = 0; k + pat->len <= len;) {
		const uint8_t *p = memchr(buf + k, pat->b[0], len - pat->len + 1 - k);

		if (!p)
			return -1;
		k = (size_t)(p - buf);
		if (k % step == 0 && !memcmp(p, pat->b, pat->len))
			return (long)k;
		k++;
	}
	return -1;
}

/* Find pat in the executable text of the vDSO, libc, then the executable. */
static uint64_t find_text(struct engine *t, const struct hc_bytes *pat)
{
	size_t step = t->img->arch->syscall_insn.len == 4 ? 4 : 1; /* arm64 code is 4-aligned */

	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < t->img->nobjs; i++) {
			struct obj *o = &t->img->objs[i];
			bool want = pass == 0 ? o->is_vdso : pass == 1 ? is_libc(o) : o->is_exe;
			uint8_t buf[65536];

			if (!want || !o->text_lo)
				continue;
			for (uint64_t at = o->text_lo; at < o->text_hi; at += sizeof(buf) - 16) {
				size_t len = o->text_hi - at < sizeof(buf) ? o->text_hi - at : sizeof(buf);
				struct hc_err e = { 0 };
				long k;

				if (mem_read(t->img->pid, t->img->memfd, at, buf, len, &e) < 0)
					break;
				k = pat_in(buf, len, pat, step);
				if (k >= 0) {
					pr_debug("found %zu-byte pattern at 0x%llx in %s", pat->len,
						 (unsigned long long)(at + (uint64_t)k), o->path);
					return at + (uint64_t)k;
				}
			}
		}
	}
	return 0;
}

/* Look for pat within a few KiB of functions that are known to hold it. */
static uint64_t find_near(struct engine *t, const struct hc_bytes *pat,
			  const char *const *names)
{
	size_t step = t->img->arch->syscall_insn.len == 4 ? 4 : 1;

	for (size_t i = 0; i < t->img->nobjs; i++) {
		struct obj *o = &t->img->objs[i];
		struct hc_err e = { 0 };

		if (!o->text_lo || !is_libc(o) || sym_load(t->img, o, false, &e) < 0)
			continue;
		for (const char *const *n = names; *n; n++) {
			const struct sym *sy = sym_by_name(o, *n);
			uint8_t buf[8192];
			uint64_t at;
			long k;

			if (!sy || sy->raddr < o->text_lo + 4096 || sy->raddr + 4096 > o->text_hi)
				continue;
			at = sy->raddr - 4096;
			if (mem_read(t->img->pid, t->img->memfd, at, buf, sizeof(buf), &e) < 0)
				continue;
			k = pat_in(buf, sizeof(buf), pat, step);
			if (k >= 0)
				return at + (uint64_t)k;
		}
	}
	return 0;
}

/*
 * x86_64's ret gadgets (arch.h): one whose pops leave the stack aligned
 * (pop % 16 == 8), and of those, one that also pops room for two stack
 * arguments.  In window (len bytes of the target's text at at).  The
 * backend's decoder takes a few exact encodings only; the unit tests have
 * Capstone read every sequence it takes the same way (test_capstone.c).
 */
static void ret_gadgets_in(struct engine *t, const uint8_t *window, size_t len, uint64_t at,
			   const char *path)
{
	for (size_t k = 0; k + 4 <= len && !(t->retg.addr && t->retg8.addr); k++) {
		struct hc_ret_gadget g;
		bool room;

		if ((window[k] != 0x48 && window[k] != 0x49) || window[k + 1] != 0x89 ||
		    !t->img->arch->ret_gadget(window + k, len - k, &g) || g.pop % 16 != 8)
			continue;
		room = g.pop >= 24;
		if (t->retg.addr && (!room || t->retg8.addr))
			continue;
		g.addr = at + k;
		if (!t->retg.addr)
			t->retg = g;
		if (room && !t->retg8.addr)
			t->retg8 = g;
		pr_debug("ret gadget at 0x%llx in %s: base register %u%+d, pops %u bytes",
			 (unsigned long long)g.addr, path, g.reg, g.disp, g.pop);
	}
}

static void find_ret_gadgets(struct engine *t)
{
	/* glibc's dl*_doit() helpers end "mov %rax, disp(%rbx); pop %rbx; ret" */
	static const char *const near[] = { "dlsym", "dlvsym", "dlopen", "dlmopen", "dlinfo",
					     NULL };
	uint8_t buf[65536];

	if (!t->img->arch->ret_gadget)
		return;
	for (size_t i = 0; i < t->img->nobjs && !t->retg8.addr; i++) {
		struct obj *o = &t->img->objs[i];

		if (!o->text_lo || !is_libc(o) || sym_load(t->img, o, false, &(struct hc_err){ 0 }) < 0)
			continue;
		for (const char *const *n = near; *n && !t->retg8.addr; n++) {
			const struct sym *sy = sym_by_name(o, *n);
			uint64_t at;

			if (!sy || sy->raddr < o->text_lo + 4096 || sy->raddr + 4096 > o->text_hi)
				continue;
			at = sy->raddr - 4096;
			if (mem_read(t->img->pid, t->img->memfd, at, buf, 8192, &(struct hc_err){ 0 }) == 0)
				ret_gadgets_in(t, buf, 8192, at, o->path);
		}
	}
	/* elsewhere: all of the C library's text, the dynamic linker's, the program's */
	for (int pass = 0; pass < 3 && !t->retg8.addr; pass++) {
		for (size_t i = 0; i < t->img->nobjs && !t->retg8.addr; i++) {
			struct obj *o = &t->img->objs[i];
			bool want = pass == 0 ? is_libc(o) : pass == 1 ? o->is_ldso : o->is_exe;

			if (!want || !o->text_lo)
				continue;
			for (uint64_t at = o->text_lo; at < o->text_hi && !t->retg8.addr;
			     at += sizeof(buf) - 64) {
				size_t len = o->text_hi - at < sizeof(buf) ? o->text_hi - at : sizeof(buf);

				if (mem_read(t->img->pid, t->img->memfd, at, buf, len, &(struct hc_err){ 0 }) < 0)
					break;
				ret_gadgets_in(t, buf, len, at, o->path);
				if (len < sizeof(buf))
					break;
			}
		}
	}
}

/*
 * The function callbacks point at: the C library's getpid() (arch.h,
 * notify), entered at its landing pad if it has one; in a static program,
 * the executable's own.
 */
static void find_notify(struct engine *t)
{
	static const char *const names[] = { "getpid", "__getpid", NULL };
	const struct hc_bytes *pat = &t->img->arch->notify;

	for (int pass = 0; pass < 2 && !t->notify_fn; pass++) {
		for (size_t i = 0; i < t->img->nobjs && !t->notify_fn; i++) {
			struct obj *o = &t->img->objs[i];
			uint8_t buf[32];

			if (!o->text_lo || !(pass ? o->is_exe : is_libc(o)) ||
			    sym_load(t->img, o, false, &(struct hc_err){ 0 }) < 0)
				continue;
			for (const char *const *n = names; *n && !t->notify_fn; n++) {
				const struct sym *sy = sym_by_name(o, *n);
				size_t off;

				if (!sy || sy->raddr < o->text_lo ||
				    sy->raddr + sizeof(buf) > o->text_hi ||
				    mem_read(t->img->pid, t->img->memfd, sy->raddr, buf, sizeof(buf),
					     &(struct hc_err){ 0 }) < 0)
					continue;
				off = 0;
				for (const struct hc_bytes *pad = t->img->arch->entry_pads; pad && pad->len;
				     pad++)
					if (!memcmp(buf, pad->b, pad->len))
						off = pad->len;
				if (memcmp(buf + off, pat->b, pat->len))
					continue;
				t->notify_fn = sy->raddr;
				t->notify_end = sy->raddr + off + t->img->arch->notify_sys_end;
			}
		}
	}
}

int gadget_find(struct engine *t, struct hc_err *err)
{
	/* small syscall wrappers end in "syscall; ret"; __restore_rt sits by sigaction */
	static const char *const wrappers[] = { "getpid", "getuid", "getppid", "sched_yield", NULL };
	static const char *const sigaction_fns[] = { "sigaction", "__sigaction", NULL };

	t->gadget = find_near(t, &t->img->arch->syscall_ret, wrappers);
	if (!t->gadget)
		t->gadget = find_text(t, &t->img->arch->syscall_ret);
	for (const struct hc_bytes *r = t->img->arch->restorers; r->len && !t->restorer; r++) {
		t->restorer = find_near(t, r, sigaction_fns);
		if (!t->restorer)
			t->restorer = find_text(t, r);
		t->restorer_end = t->restorer + r->len;
	}
	find_ret_gadgets(t);
	find_notify(t);
	if (t->gadget && !t->restorer)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "a program links its C library's signal return only when it "
				   "installs a signal handler; heapctl needs it to give the thread "
				   "back, and never writes code of its own to do so",
				   "pid %d has no sigreturn restorer in its text (a static program "
				   "that never calls sigaction())", t->img->pid);
	if (!t->gadget || (t->img->arch->ret_gadget && !t->retg.addr))
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "heapctl runs on the C library's own code in the target: a "
				   "\"syscall; ret\", its signal return and, on x86_64, a plain "
				   "function tail that stores %%rax",
				   "pid %d has no %s in its text", t->img->pid,
				   !t->gadget ? "\"syscall; ret\" sequence" :
						"function tail that keeps a call's result");
	pr_debug("syscall gadget at 0x%llx, sigreturn restorer at 0x%llx, callbacks at 0x%llx",
		 (unsigned long long)t->gadget, (unsigned long long)t->restorer,
		 (unsigned long long)t->notify_fn);
	return 0;
}

/*
 * Read len bytes at raddr in the memory the process has now.  1: read;
 * -1: that memory has nothing at raddr; 0: the process has no memory
 * left, it exited.  process_vm_readv() fails with ESRCH for a task with
 * no mm (mm_access() in kernel/fork.c, from process_vm_rw_core() in
 * mm/process_vm_access.c): a task reaped, or past exit_mm() in do_exit().
 * A leader that exited alone (pthread_exit()) has none either while its
 * threads go on, so a live thread answers for the process then.  An
 * execve always leaves one thread with memory: exec_mmap() swaps the old
 * mm for the new under task_lock(), and while de_thread() waits for the
 * old leader to die, the thread in execve still has the old mm.
 */
static int read_now(struct engine *t, uint64_t raddr, void *buf, size_t len,
		    struct hc_err *e)
{
	char proc[96];
	int tid;

	if (mem_read(t->img->pid, -1, raddr, buf, len, e) == 0)
		return 1;
	if (e->sys_errno != ESRCH)
		return -1;
	if (!procfs_live_task(t->img->pid, proc, sizeof(proc)) ||
	    sscanf(proc, "/proc/%*d/task/%d", &tid) != 1)
		return 0;
	memset(e, 0, sizeof(*e));
	if (mem_read(tid, -1, raddr, buf, len, e) == 0)
		return 1;
	return e->sys_errno == ESRCH ? 0 : -1;
}

/*
 * Is the program heapctl inspected still the one running?  After an execve
 * the executable's ELF header is no longer where maps_load() found it, and
 * the /proc/PID/mem heapctl opened, if it was opened before, reads nothing:
 * it belongs to the memory the execve threw away, while process_vm_readv()
 * reads the new one.  Both must still show the header.  An exit throws
 * the memory away too, with nothing after it: that is PROG_GONE, never an
 * execve.
 */
enum prog gadget_program(struct engine *t)
{
	for (size_t i = 0; i < t->img->nobjs; i++) {
		const struct obj *o = &t->img->objs[i];
		struct hc_err e = { 0 };
		uint8_t magic[4], fmagic[4];
		int r;

		if (!o->is_exe || !o->base)
			continue;
		/* what decided it, for -v: a refusal that says execve had better say why */
		r = read_now(t, o->base, magic, 4, &e);
		if (r == 0) {
			pr_info("pid %d has no memory left (%s): it exited", t->img->pid, e.msg);
			return PROG_GONE;
		}
		if (r < 0 || memcmp(magic, "\177ELF", 4)) {
			pr_info("%s: no ELF header at 0x%llx now (%s)", o->path,
				(unsigned long long)o->base, e.msg[0] ? e.msg : "other bytes");
			return PROG_OTHER;
		}
		errno = 0;
		if (t->img->memfd >= 0 && (mem_read_fd(t->img->memfd, o->base, fmagic, 4) < 0 ||
				      memcmp(fmagic, magic, 4))) {
			int err = errno;

			/* the memory it opened is gone: execve, or an exit since the read above */
			memset(&e, 0, sizeof(e));
			if (read_now(t, o->base, magic, 4, &e) == 0) {
				pr_info("pid %d has no memory left (%s): it exited", t->img->pid, e.msg);
				return PROG_GONE;
			}
			pr_info("%s/mem no longer reads %s's ELF header (%s)", t->img->proc, o->path,
				err ? strerror(err) : "nothing, or other bytes");
			return PROG_OTHER;
		}
		return PROG_SAME;
	}
	return PROG_SAME;
}
