// SPDX-License-Identifier: MIT
/*
 * What heapctl takes from the target's text, and the pages killed heapctl
 * runs left behind.
 *
 * gadget_find() finds the "syscall; ret" sequence remote syscalls run on
 * and a sigreturn restorer, both used as they are, never patched;
 * gadget_same_program() tells a failed search from an execve.  gadget_find_leftovers()
 * finds the code pages of heapctl runs that were killed mid-operation by
 * the mark map_pages() writes, and gadget_reclaim_leftovers() unmaps them once a
 * thread is borrowed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "call_int.h"
#include "log.h"
#include "ptrace.h"
#include "target.h"
#include "where.h"

/*
 * Code pages of heapctl runs that were killed mid-operation: anonymous r-x
 * pages carrying heapctl's mark whose owner is gone.  Found before the
 * thread is stopped, unmapped during the session.
 */
size_t gadget_find_leftovers(struct hc_target *t, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (unsigned int i = 0; i < t->nanon_rx && n < max; i++) {
		uint64_t lo = t->anon_rx[i].lo, hi = t->anon_rx[i].hi;

		/* adjacent leftovers merge into one mapping: look at every page */
		if (hi - lo > 256 * CODE_LEN)
			continue;
		for (uint64_t pg = lo; pg < hi && n < max; pg += CODE_LEN) {
			char mark[12];
			uint32_t owner;
			struct hc_err e = { 0 };

			if (mem_read(t->pid, t->memfd, pg + MAGIC_OFF, mark, sizeof(mark), &e) < 0 ||
			    memcmp(mark, MAGIC, 8))
				continue;
			memcpy(&owner, mark + 8, 4);
			/* a heapctl still running on this process owns it: leave it */
			if (owner && (kill((pid_t)owner, 0) == 0 || errno != ESRCH))
				continue;
			out[n++] = pg;
		}
	}
	return n;
}

void gadget_reclaim_leftovers(struct hc_target *t, const uint64_t *pages, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t a[2] = { pages[i], CODE_LEN };
		struct hc_err e = { 0 };
		int64_t ret;

		if (step_rsys_ok(t, t->arch->nr_munmap, a, 2, &ret, "munmap", &e) == 0)
			pr_info("pid %d: reclaimed a page left by a killed heapctl at 0x%llx", t->pid,
				(unsigned long long)pages[i]);
	}
}

/* Find pat in the executable text of the vDSO, libc, then the executable. */
static uint64_t find_text(struct hc_target *t, const struct hc_bytes *pat, bool want_syscall)
{
	size_t step = t->arch->syscall_insn.len == 4 ? 4 : 1; /* arm64 code is 4-aligned */

	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < t->nobjs; i++) {
			struct obj *o = &t->objs[i];
			bool want = pass == 0 ? o->is_vdso :
				    pass == 1 ? strstr(o->path, "/libc.so") || strstr(o->path, "/libc.musl") :
						o->is_exe;
			uint8_t buf[65536];

			if (!want || !o->text_lo)
				continue;
			for (uint64_t at = o->text_lo; at < o->text_hi; at += sizeof(buf) - 16) {
				size_t len = o->text_hi - at < sizeof(buf) ? o->text_hi - at : sizeof(buf);
				struct hc_err e = { 0 };

				if (mem_read(t->pid, t->memfd, at, buf, len, &e) < 0)
					break;
				for (size_t k = 0; k + pat->len <= len; k += step) {
					if (memcmp(buf + k, pat->b, pat->len))
						continue;
					if (want_syscall && !where_is_syscall(t, at + k))
						continue;
					pr_debug("found %zu-byte pattern at 0x%llx in %s", pat->len,
						 (unsigned long long)(at + k), o->path);
					return at + k;
				}
			}
		}
	}
	return 0;
}

/* Look for pat within a few KiB of functions that are known to hold it. */
static uint64_t find_near(struct hc_target *t, const struct hc_bytes *pat, bool want_syscall,
			  const char *const *names)
{
	size_t step = t->arch->syscall_insn.len == 4 ? 4 : 1;

	for (size_t i = 0; i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];
		struct hc_err e = { 0 };

		if (!o->text_lo || !(strstr(o->path, "/libc.so") || strstr(o->path, "/libc.musl")) ||
		    sym_load(t, o, false, &e) < 0)
			continue;
		for (const char *const *n = names; *n; n++) {
			const struct sym *sy = sym_by_name(o, *n);
			uint8_t buf[8192];
			uint64_t at;

			if (!sy || sy->raddr < o->text_lo + 4096 || sy->raddr + 4096 > o->text_hi)
				continue;
			at = sy->raddr - 4096;
			if (mem_read(t->pid, t->memfd, at, buf, sizeof(buf), &e) < 0)
				continue;
			for (size_t k = 0; k + pat->len <= sizeof(buf); k += step)
				if (!memcmp(buf + k, pat->b, pat->len) &&
				    (!want_syscall || where_is_syscall(t, at + k)))
					return at + k;
		}
	}
	return 0;
}

/*
 * The C library's munmap(), if it starts as the arch says (see arch.h,
 * munmap_entry), perhaps after one munmap_skip instruction.
 */
static uint64_t find_munmap(struct hc_target *t)
{
	const struct hc_bytes *e = &t->arch->munmap_entry, *sk = &t->arch->munmap_skip;

	for (size_t i = 0; e->len && i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];
		const struct sym *sy;
		uint8_t buf[32];
		size_t off;

		if (!o->text_lo || !strstr(o->path, "/libc.so"))
			continue;
		sy = sym_by_name(o, "munmap");
		if (!sy || sy->raddr < o->text_lo || sy->raddr + sk->len + e->len > o->text_hi ||
		    mem_read(t->pid, t->memfd, sy->raddr, buf, sk->len + e->len, &(struct hc_err){ 0 }) < 0)
			continue;
		off = sk->len && !memcmp(buf, sk->b, sk->len) ? sk->len : 0;
		if (!memcmp(buf + off, e->b, e->len) &&
		    where_is_syscall(t, sy->raddr + off + e->len - t->arch->syscall_insn.len))
			return sy->raddr;
	}
	return 0;
}

/*
 * Where returns take a register (arm64): the C library's first "link" in
 * its text, an indirect call whose return lands in a plain epilogue (see
 * arch.h, link_epilogue).  Read before anything is stopped.
 */
static void find_link(struct hc_target *t)
{
	for (size_t i = 0; t->arch->link_epilogue && i < t->nobjs; i++) {
		struct obj *o = &t->objs[i];
		uint8_t buf[65536];

		if (!o->text_lo || !strstr(o->path, "/libc.so"))
			continue;
		for (uint64_t at = o->text_lo; at < o->text_hi; at += sizeof(buf) - 64) {
			size_t len = o->text_hi - at < sizeof(buf) ? o->text_hi - at : sizeof(buf);

			if (mem_read(t->pid, t->memfd, at, buf, len, &(struct hc_err){ 0 }) < 0)
				break;
			for (size_t k = 0; k + 4 <= len; k += 4) {
				unsigned int reg, lr_off;
				unsigned int pop = t->arch->link_epilogue(
					buf + k, len - k < 64 ? len - k : 64, &reg, &lr_off);

				if (!pop)
					continue;
				t->link = at + k;
				t->link_reg = reg;
				t->link_pop = pop;
				t->link_lr_off = lr_off;
				pr_debug("chain link at 0x%llx in %s: blr x%u, pops %u bytes",
					 (unsigned long long)t->link, o->path, reg, pop);
				return;
			}
			if (len < sizeof(buf))
				break;
		}
		return;
	}
}

int gadget_find(struct hc_target *t, struct hc_err *err)
{
	/* small syscall wrappers end in "syscall; ret"; __restore_rt sits by sigaction */
	static const char *const wrappers[] = { "getpid", "getuid", "getppid", "sched_yield", NULL };
	static const char *const sigaction_fns[] = { "sigaction", "__sigaction", NULL };

	t->gadget = find_near(t, &t->arch->syscall_ret, true, wrappers);
	if (!t->gadget)
		t->gadget = find_text(t, &t->arch->syscall_ret, true);
	for (const struct hc_bytes *r = t->arch->restorers; r->len && !t->restorer; r++) {
		t->restorer = find_near(t, r, false, sigaction_fns);
		if (!t->restorer)
			t->restorer = find_text(t, r, false);
		t->restorer_end = t->restorer + r->len;
	}
	t->munmap_fn = find_munmap(t);
	if (t->munmap_fn)
		find_link(t);
	if (!t->gadget || !t->restorer)
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "heapctl needs the C library's signal return code in the target",
				   "pid %d has no %s in its text", t->pid,
				   t->gadget ? "sigreturn restorer" : "\"syscall; ret\" sequence");
	pr_debug("syscall gadget at 0x%llx, sigreturn restorer at 0x%llx",
		 (unsigned long long)t->gadget, (unsigned long long)t->restorer);
	return 0;
}

/*
 * Is the program heapctl inspected still the one running?  After an execve
 * the executable's ELF header is no longer where maps_load() found it, and
 * the /proc/PID/mem heapctl opened, if it was opened before, reads nothing:
 * it belongs to the memory the execve threw away, while process_vm_readv()
 * reads the new one.  Both must still show the header.
 */
bool gadget_same_program(struct hc_target *t)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		uint8_t magic[4], fmagic[4];

		if (!t->objs[i].is_exe || !t->objs[i].base)
			continue;
		return mem_read(t->pid, -1, t->objs[i].base, magic, 4, &(struct hc_err){ 0 }) == 0 &&
		       !memcmp(magic, "\177ELF", 4) &&
		       (t->memfd < 0 ||
			(mem_read_fd(t->memfd, t->objs[i].base, fmagic, 4) == 0 &&
			 !memcmp(fmagic, magic, 4)));
	}
	return true;
}
