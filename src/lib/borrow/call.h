/* SPDX-License-Identifier: MIT */
/*
 * Remote calls: borrow one thread at a safe point, call functions on it,
 * give it back bit for bit.  Arch-neutral; the arch backend says where
 * things live.
 *
 * The engine is four files: call.c (sessions: borrow, calls, scratch, the
 * restore), step.c (the thread from stop to stop, remote syscalls),
 * thread.c (which thread to borrow) and gadget.c (what the target's text
 * lends heapctl).  What they share is in call_int.h; the rest of heapctl
 * sees only this header.
 *
 * Memory heapctl uses inside the target during a session, all of it on the
 * borrowed thread's stack, below the red zone (arch/arch.h draws it): the
 * signal frame that gives the thread back, below it on x86_64 the words a
 * call's return pops, and above it 16 KiB of scratch for strings and
 * out-values, bump-allocated per session.  Nothing is mapped; the code the
 * thread runs is the target's own.
 */
#ifndef HC_CALL_H
#define HC_CALL_H

#include <stddef.h>
#include <stdint.h>

struct engine;
struct hc_err;

/* Called at each stop in the callback function (getpid()); args are the callee's arguments. */
typedef int (*call_cb_fn)(void *arg, struct engine *t, const uint64_t *args,
			  struct hc_err *err);

/*
 * Sessions.  A thread is borrowed at the first call, write or scratch
 * request, and given back by call_done() (or call_end()).  Between
 * call_hold() and call_release() a call_done() keeps it: the operations in
 * between share one borrow (the API's hc_session_begin/end).  Drivers
 * never open or close anything; they call call_done() only to let the
 * thread go before work of their own that needs it no more (copying a
 * profile, printing).
 */
void call_hold(struct engine *t);
/* The last release gives the thread back; keeps the first error. */
int call_release(struct engine *t, struct hc_err *err);
/* Give the thread back unless a hold keeps it; keeps the first error. */
int call_done(struct engine *t, struct hc_err *err);
/* Unmap, restore everything, detach, hold or not.  Safe on any path; keeps the first error. */
int call_end(struct engine *t, struct hc_err *err);
/* Call fn(args...) in the target; *ret is its integer return value. */
int call_fn(struct engine *t, uint64_t fn, const uint64_t *args, unsigned int nargs,
	    uint64_t *ret, call_cb_fn cb, void *cb_arg, struct hc_err *err);
/*
 * Call a function that returns a struct by value (an indirect result):
 * the callee writes it at sret_raddr, which the arch layer passes the way
 * the psABI says (rdi on x86_64, x8 on aarch64).
 */
int call_fn_sret(struct engine *t, uint64_t fn, uint64_t sret_raddr, const uint64_t *args,
		 unsigned int nargs, uint64_t *ret, struct hc_err *err);
/*
 * Where heapctl's calls return, as a callee's caller: the ret gadget, or
 * the restorer (arch/arch.h); 0 before the first borrow.
 */
uint64_t call_ret_raddr(const struct engine *t);
/* Where the borrowed thread was when it was stopped (its saved pc), or 0. */
uint64_t call_saved_pc(const struct engine *t);
/* The callback function, to pass as a function pointer; 0 on failure (err set). */
uint64_t call_cb_raddr(struct engine *t, struct hc_err *err);
/*
 * Bump-allocate len bytes (16-aligned) of scratch; 0 when it is full, or
 * (err set) when no thread could be borrowed.
 */
uint64_t call_scratch(struct engine *t, size_t len, struct hc_err *err);
/*
 * How much scratch is in use, and a way back to it: a loop of many calls
 * (listing a few thousand mallctl names) gives back each call's strings.
 */
size_t call_scratch_mark(const struct engine *t);
void call_scratch_release(struct engine *t, size_t mark);
/* Copy a string into the data area; 0 on failure (err set). */
uint64_t call_strdup(struct engine *t, const char *s, struct hc_err *err);
/*
 * One system call in the target (borrowing a thread first); *ret is its raw
 * result, -errno on failure.
 */
int call_syscall(struct engine *t, long nr, const uint64_t *args, unsigned int n, int64_t *ret,
		 struct hc_err *err);
/* Writes borrow the thread first, as calls do: nothing is changed before it is stopped. */
int call_write(struct engine *t, uint64_t raddr, const void *buf, size_t len,
	       struct hc_err *err);
int call_read(struct engine *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err);
/* Read a NUL-terminated string of at most len-1 bytes. */
int call_read_str(struct engine *t, uint64_t raddr, char *buf, size_t len,
		  struct hc_err *err);

#endif
