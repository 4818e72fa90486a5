// SPDX-License-Identifier: MIT
/*
 * Listing every jemalloc control under a prefix ("heapctl get -p PID
 * stats.arenas."): the namespace expanded over the target's arenas, bins
 * and extents, all read in one borrow.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "call.h"
#include "jemalloc_int.h"
#include "log.h"
#include "image.h"
#include "troot.h"

/* ---- listing a prefix ------------------------------------------------------------------ */

/* A listing borrows one thread for all its reads: ~0.1-0.3 ms each. */
#define LIST_MAX 4096

struct lister {
	struct hc_target *t;
	struct hc_ctl_entry *ents;
	size_t n, cap;
	bool ranges_read, init_read, counting;
	bool stats, fresh; /* a listing with stats.* names; epoch was written */
	size_t counted;
	uint64_t narenas, nbins, nlextents, npsizes;
	bool arena_init[1024];
	int failed;
	struct hc_err *err;
};

/* How many extents buckets (page size classes): the first index that is ENOENT. */
static int count_psizes(struct lister *l, const char *arena, uint64_t *out)
{
	uint64_t lo = 0, hi = 1024;
	char name[96];
	struct hc_value v;
	int rc;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		snprintf(name, sizeof(name), "stats.arenas.%s.extents.%llu.ndirty", arena,
			 (unsigned long long)mid);
		if (je_read(l->t, name, HC_T_SIZE, &v, &rc, l->err) < 0)
			return -1;
		if (rc)
			hi = mid;
		else
			lo = mid + 1;
	}
	*out = lo;
	return 0;
}

/*
 * The stats are a snapshot, and so is ctl's idea of which arenas exist: a
 * listing with stats.* names writes epoch once, before the first read that
 * depends on it (arena indices, extents buckets, or the names themselves).
 */
static int refresh(struct lister *l)
{
	if (!l->stats || l->fresh)
		return 0;
	l->fresh = true;
	return je_refresh(l->t, l->err);
}

static int read_ranges(struct lister *l)
{
	if (l->ranges_read)
		return 0;
	l->ranges_read = true;
	if (je_read_u64(l->t, "arenas.narenas", &l->narenas, l->err) < 0 ||
	    je_read_u64(l->t, "arenas.nbins", &l->nbins, l->err) < 0 ||
	    je_read_u64(l->t, "arenas.nlextents", &l->nlextents, l->err) < 0)
		return -1;
	return 0;
}

/*
 * Which arenas were ever used (one never used has no stats): read once, and
 * only by a listing that expands arena indices.
 */
static int read_arena_init(struct lister *l)
{
	char name[64];
	struct hc_value v;
	int rc;

	if (l->init_read)
		return 0;
	l->init_read = true;
	if (refresh(l) < 0)
		return -1;
	for (uint64_t i = 0; i < l->narenas && i < 1024; i++) {
		snprintf(name, sizeof(name), "arena.%llu.initialized", (unsigned long long)i);
		if (je_read(l->t, name, HC_T_BOOL, &v, &rc, l->err) < 0)
			return -1;
		l->arena_init[i] = rc == 0 && v.b;
	}
	return 0;
}

/*
 * Emit every name of pattern pat under the components fixed[] (NULL: not
 * fixed by the prefix).  at: the name built so far.
 */
static int expand(struct lister *l, const struct ctl_def *d, const char *pat, char *at,
		  size_t used, const char *const *fixed, unsigned ci, const char *prev)
{
	size_t pl = pat_comp_len(pat);
	char comp[512];
	char *name = at;
	int rc;

	if (!*pat) {
		struct hc_value v;

		if (l->counting) {
			l->counted++;
			return 0;
		}
		name[used - 1] = 0; /* the trailing '.' */
		if (je_read(l->t, name, d->type, &v, &rc, l->err) < 0)
			return -1;
		name[used - 1] = '.';
		if (rc) {
			pr_debug("list: %.*s: %s", (int)used - 1, name, mallctl_strerror(rc));
			return 0;
		}
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct hc_ctl_entry *e = realloc(l->ents, cap * sizeof(*e));

			if (!e)
				return err_set(l->err, HC_E_NOMEM, ENOMEM, "out of memory");
			l->ents = e;
			l->cap = cap;
		}
		snprintf(l->ents[l->n].name, sizeof(l->ents[l->n].name), "%.*s", (int)used - 1,
			 name);
		l->ents[l->n++].v = v;
		return 0;
	}
	/* every step below appends at most 64 bytes to at[256] */
	if (used > 180)
		return err_set(l->err, HC_E_NO_CTL, 0, "mallctl name too long: %.60s...", at);
	snprintf(comp, sizeof(comp), "%.*s", (int)pl, pat);
	pat += pl;
	if (*pat == '.')
		pat++;
	if (fixed[ci]) {
		int w = snprintf(at + used, 256 - used, "%s.", fixed[ci]);

		return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, fixed[ci]);
	}
	if (comp[0] == '(') {
		const char *p = comp + 1;

		while (*p && *p != ')') {
			size_t al = strcspn(p, "|)");
			int w = snprintf(at + used, 256 - used, "%.*s.", (int)al, p);

			if (expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, NULL) < 0)
				return -1;
			p += al + (p[al] == '|');
			if (*p == ')')
				break;
		}
		return 0;
	}
	if (comp[0] == '#') {
		uint64_t count;
		bool arenas = !strcmp(prev, "arena") || !strcmp(prev, "arenas");

		if (read_ranges(l) < 0 || (arenas && read_arena_init(l) < 0))
			return -1;
		if (arenas)
			count = l->narenas;
		else if (!strcmp(prev, "bin") || !strcmp(prev, "bins"))
			count = l->nbins;
		else if (!strcmp(prev, "lextent") || !strcmp(prev, "lextents"))
			count = l->nlextents;
		else {
			/* stats.arenas.<i>.extents.<j>: the arena index is two back */
			char arena[24];
			const char *e = at + used - strlen("extents.") - 1;
			const char *b = e;

			while (b > at && b[-1] != '.')
				b--;
			snprintf(arena, sizeof(arena), "%.*s", (int)(e - b), b);
			if (!l->npsizes && (refresh(l) < 0 || count_psizes(l, arena, &l->npsizes) < 0))
				return -1;
			count = l->npsizes;
		}
		for (uint64_t i = 0; i < count; i++) {
			int w;

			if (arenas && i < 1024 && !l->arena_init[i])
				continue; /* an arena never used has no stats */
			w = snprintf(at + used, 256 - used, "%llu.", (unsigned long long)i);
			if (expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, "#") < 0)
				return -1;
		}
		/* stats.arenas.4096: every arena merged */
		if (arenas && !strcmp(prev, "arenas")) {
			int w = snprintf(at + used, 256 - used, "%d.", MALLCTL_ARENAS_ALL);

			return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, "#");
		}
		return 0;
	}
	{
		int w = snprintf(at + used, 256 - used, "%s.", comp);

		return expand(l, d, pat, at, used + (size_t)w, fixed, ci + 1, comp);
	}
}

/* Is pat strictly below the group pre ("" is the root)? */
static bool under(const char *pat, const char *pre)
{
	return !*pre || (pat_match(pat, pre, true) >= 0 && pat_match(pat, pre, false) < 0);
}

int je_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out,
		       size_t *n, char *skipped, size_t skipped_len, struct hc_err *err)
{
	struct lister *l;
	char pre[208], parts[16][64];
	const char *fixed[24];
	unsigned np = 0;
	bool any = false;
	size_t sk = 0;

	snprintf(pre, sizeof(pre), "%s", prefix);
	if (strlen(prefix) >= sizeof(pre) - 8)
		return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl prefix", prefix);
	while (*pre && pre[strlen(pre) - 1] == '.')
		pre[strlen(pre) - 1] = 0;
	for (char *p = pre, *tok; *p; p = tok) {
		tok = p + strcspn(p, ".");
		if (np == 16 || (size_t)(tok - p) >= sizeof(parts[0]))
			return err_set(err, HC_E_NO_CTL, 0, "'%s' is not a mallctl prefix", prefix);
		snprintf(parts[np++], sizeof(parts[0]), "%.*s", (int)(tok - p), p);
		if (*tok)
			tok++;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	l->t = t;
	l->err = err;
	/* Which entries fall under the prefix, and which of them one borrow can expand. */
	for (size_t i = 0; i < ctl_ndefs; i++) {
		const struct ctl_def *d = &ctl_defs[i];

		if (d->acc != C_R && d->acc != C_RW && d->acc != C_RXW)
			continue;
		if (!under(d->pat, pre))
			continue;
		any = true;
		if (is_stats(d->pat))
			l->stats = true;
	}
	if (!any) {
		free(l);
		if (ctl_def_of(pre))
			return err_sethint(err, HC_E_NO_CTL, 0, "drop the trailing '.'",
					   "'%s' is a control, not a group", pre);
		return err_sethint(err, HC_E_NO_CTL, 0,
				   "groups: version epoch config. opt. thread. arena.0. arenas. "
				   "prof. stats. (see jemalloc(3), MALLCTL NAMESPACE)",
				   "no mallctl names under '%s'", prefix);
	}
	/*
	 * Two walks: the first counts (reading only the index ranges), so an
	 * oversized listing is refused before thousands of reads.
	 */
	for (int pass = 0; pass < 2; pass++) {
		l->counting = pass == 0;
		if (!l->counting && refresh(l) < 0)
			goto end;
		for (size_t i = 0; i < ctl_ndefs; i++) {
			const struct ctl_def *d = &ctl_defs[i];
			const char *p = d->pat;
			unsigned ci = 0, open = 0;
			char at[256];

			if (d->acc != C_R && d->acc != C_RW && d->acc != C_RXW)
				continue;
			if (!under(d->pat, pre))
				continue;
			memset(fixed, 0, sizeof(fixed));
			for (; *p && ci < 24; ci++) {
				size_t pl = pat_comp_len(p);

				if (ci < np)
					fixed[ci] = parts[ci];
				else if (pl == 1 && *p == '#')
					open++;
				p += pl;
				if (*p == '.')
					p++;
			}
			if (open > 1) {
				/* "stats.arenas.<i>.bins.<j>.": name the group once */
				char grp[128];
				size_t gl = 0;
				unsigned seen = 0;

				p = d->pat;
				for (ci = 0; *p && seen < 2 && gl < sizeof(grp) - 64; ci++) {
					size_t pl = pat_comp_len(p);

					if (ci < np)
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%s.",
								       parts[ci]);
					else if (pl == 1 && *p == '#')
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%s.",
								       seen++ ? "<j>" : "<i>");
					else
						gl += (size_t)snprintf(grp + gl, sizeof(grp) - gl, "%.*s.",
								       (int)(pl < 40 ? pl : 40), p);
					p += pl;
					if (*p == '.')
						p++;
				}
				if (!l->counting)
					continue;
				if (skipped_len && !strstr(skipped, grp) &&
				    sk + strlen(grp) + 2 < skipped_len)
					sk += (size_t)snprintf(skipped + sk, skipped_len - sk, "%s%s",
							       sk ? " " : "", grp);
				continue;
			}
			if (expand(l, d, d->pat, at, 0, fixed, 0, "") < 0)
				goto end;
		}
		if (l->counting && l->counted > LIST_MAX) {
			err_sethint(err, HC_E_USAGE, 0,
				    "give a longer prefix, e.g. stats.arenas.0. or arenas.bin.",
				    "'%s' holds %zu names; heapctl reads at most %d in one borrow",
				    prefix, l->counted, LIST_MAX);
			goto end;
		}
	}
end:
	call_done(&t->eng, err);
	if (err_isset(err)) {
		free(l->ents);
		free(l);
		return -1;
	}
	*out = l->ents;
	*n = l->n;
	free(l);
	return 0;
}
