// SPDX-License-Identifier: MIT
/*
 * The shadow: heapctl's copy of the borrowed thread's stack area (the
 * signal frame, the call chain, the scratch), so that the many small
 * writes and reads of a call are one write before the thread runs and
 * one read after.  Below both call.c, which fills it, and step.c, which
 * flushes it before each run and reads results back through it.
 */
#include <string.h>

#include "call_int.h"
#include "mem.h"
#include "engine.h"
#include "image.h"

static bool in_shadow(const struct sess *s, uint64_t raddr, size_t len)
{
	return s && s->shadow_len && raddr >= s->shadow_lo && len <= s->shadow_len &&
	       raddr - s->shadow_lo <= s->shadow_len - len;
}

int shadow_write(struct engine *t, uint64_t raddr, const void *buf, size_t len,
		 struct hc_err *err)
{
	struct sess *s = t->sess;

	if (!in_shadow(s, raddr, len))
		return mem_write(t->img->memfd, raddr, buf, len, err);
	memcpy(t->shadow + (raddr - s->shadow_lo), buf, len);
	if (s->dirty_hi <= s->dirty_lo) {
		s->dirty_lo = raddr;
		s->dirty_hi = raddr + len;
	} else {
		if (raddr < s->dirty_lo)
			s->dirty_lo = raddr;
		if (raddr + len > s->dirty_hi)
			s->dirty_hi = raddr + len;
	}
	return 0;
}

int shadow_flush(struct engine *t, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (!s || s->dirty_hi <= s->dirty_lo)
		return 0;
	if (mem_write(t->img->memfd, s->dirty_lo, t->shadow + (s->dirty_lo - s->shadow_lo),
		      s->dirty_hi - s->dirty_lo, err) < 0)
		return -1;
	s->dirty_lo = s->dirty_hi = 0;
	return 0;
}

int shadow_read(struct engine *t, uint64_t raddr, void *buf, size_t len, struct hc_err *err)
{
	struct sess *s = t->sess;

	if (!in_shadow(s, raddr, len))
		return mem_read(t->img->pid, t->img->memfd, raddr, buf, len, err);
	if (!s->shadow_fresh) {
		/* what the thread may have written: the scratch in use, in one read */
		uint64_t lo = raddr < s->scratch ? raddr : s->scratch;
		uint64_t hi = s->scratch + s->scratch_used > raddr + len ? s->scratch + s->scratch_used :
									   raddr + len;

		if (shadow_flush(t, err) < 0 ||
		    mem_read(t->img->pid, t->img->memfd, lo, t->shadow + (lo - s->shadow_lo), hi - lo, err) < 0)
			return -1;
		s->shadow_fresh = lo <= s->scratch;
	}
	memcpy(buf, t->shadow + (raddr - s->shadow_lo), len);
	return 0;
}
