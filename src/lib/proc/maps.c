// SPDX-License-Identifier: MIT
/*
 * maps.c: where a process's RSS is, read from /proc/PID/smaps.  No ptrace:
 * the parser is a pure function over the file's text (hc_maps_parse), so it
 * can be unit-tested and fuzzed on stored files.
 *
 * Each mapping lands in exactly one category, so the categories add up to
 * the sum of the Rss lines, which is what smaps_rollup reports (up to pages
 * that come and go between the two reads).
 *
 * Recognising glibc's thread arenas: ptmalloc's new_heap() reserves
 * HEAP_MAX_SIZE (64 MiB on 64-bit: 2 * DEFAULT_MMAP_THRESHOLD_MAX) aligned
 * to its own size, PROT_NONE, and mprotect()s the front read-write as the
 * heap grows; shrink_heap() gives pages back with MADV_DONTNEED or a fresh
 * PROT_NONE mmap.  In smaps that is an anonymous rw-p mapping starting on a
 * 64 MiB boundary followed by an anonymous ---p one ending on the next
 * boundary (or a rw-p mapping of a multiple of 64 MiB once heaps are full:
 * the kernel merges neighbours).  What is counted is heaps: an arena that
 * grew past 64 MiB chains several, and smaps cannot tell an arena's second
 * heap from a new arena.
 *
 * Thread stacks: glibc's allocate_stack() maps a stack and mprotect()s a
 * guard at its low end, so a small anonymous ---p mapping directly below an
 * anonymous rw-p one.  The main thread's stack is [stack].
 *
 * Shared memory is its own category: SysV segments (/SYSV%08x (deleted)),
 * POSIX shm (/dev/shm/...), memfd (/memfd:...), shared anonymous mappings
 * (/dev/zero (deleted), [anon_shmem:...]): a database's buffer pool or a
 * shared log, not code.  Its pages are counted in every process that
 * touches them, and no allocator can return them.  Shared mappings of
 * ordinary files stay file-backed.
 *
 * Allocators' own mappings are recognised only when named with
 * PR_SET_VMA_ANON_NAME ([anon:...]) after an allocator; jemalloc's extents
 * and tcmalloc's spans are plain anonymous memory and stay in "other
 * anonymous" (`heapctl stats` tells how much of that the allocator holds).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "libc.h"

#define ARENA_SIZE (64ull << 20)  /* glibc HEAP_MAX_SIZE on 64-bit */
#define GUARD_MAX (1ull << 20)    /* pthread guards are a page or a few */

struct vma {
	uint64_t start, end, rss;
	char perms[5];
	bool anon;   /* no file behind it */
	bool named;  /* [anon:NAME] naming an allocator */
	enum hc_map_cat cat;
	bool cat_set;
};

static const struct {
	const char *key, *title;
} cat_names[HC_MAP__COUNT] = {
	[HC_MAP_HEAP] = { "heap", "main heap [heap]" },
	[HC_MAP_ARENA] = { "arena", "glibc thread arenas" },
	[HC_MAP_STACK] = { "stack", "thread stacks" },
	[HC_MAP_ALLOC] = { "alloc", "allocator (named)" },
	[HC_MAP_FILE] = { "file", "file-backed code/data" },
	[HC_MAP_ANON] = { "anon", "other anonymous" },
	[HC_MAP_SHM] = { "shm", "shared memory" },
};

const char *hc_map_cat_key(enum hc_map_cat c)
{
	return c < HC_MAP__COUNT ? cat_names[c].key : "?";
}

const char *hc_map_cat_title(enum hc_map_cat c)
{
	return c < HC_MAP__COUNT ? cat_names[c].title : "?";
}

static bool names_allocator(const char *name)
{
	static const char *const words[] = { "malloc", "jemalloc", "tcmalloc", "arena", "scudo",
					     "mimalloc", "heap" };
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(name, words[i]))
			return true;
	return false;
}

/* Shared memory rather than a shared file: see the top of this file. */
static bool is_shm(const char *path, const char *perms)
{
	if (perms[3] != 's')
		return false;
	return !path[0] || !strncmp(path, "/SYSV", 5) || !strncmp(path, "/dev/shm/", 9) ||
	       !strncmp(path, "/dev/zero", 9) || !strncmp(path, "/memfd:", 7) ||
	       !strncmp(path, "[anon_shmem:", 12) || !strncmp(path, "[anon:", 6);
}

/*
 * "start-end perms offset dev inode [path]".  Returns 1 for a header line,
 * 0 for anything else (a "Key: value" line).
 */
static int parse_header(const char *line, size_t len, struct vma *v, enum hc_map_cat *cat)
{
	char buf[512], perms[8] = "", path[400] = "";
	unsigned long long start, end, off, inode;
	size_t i = 0;
	int n = 0;

	/*
	 * Most lines are "Key: value kB", some twenty per mapping: no hex
	 * number for sscanf()'s first %llx (after blanks and a sign), so no
	 * header, told without copying the line and running sscanf() on it.
	 */
	while (i < len && isspace((unsigned char)line[i]))
		i++;
	if (i < len && (line[i] == '+' || line[i] == '-'))
		i++;
	if (i >= len || !isxdigit((unsigned char)line[i]))
		return 0;
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off, &inode, &n) <
		    5 ||
	    strlen(perms) != 4 || end < start)
		return 0;
	snprintf(path, sizeof(path), "%s", buf + n);
	memset(v, 0, sizeof(*v));
	v->start = start;
	v->end = end;
	memcpy(v->perms, perms, 5);
	v->anon = !path[0] || !strncmp(path, "[anon:", 6);
	if (is_shm(path, perms)) {
		*cat = HC_MAP_SHM;
		v->cat_set = true;
		return 1;
	}
	v->named = !strncmp(path, "[anon:", 6) && names_allocator(path + 6);
	if (!strcmp(path, "[heap]")) {
		*cat = HC_MAP_HEAP;
		v->cat_set = true;
	} else if (!strcmp(path, "[stack]") || !strncmp(path, "[stack:", 7) ||
		   !strncmp(path, "[anon:stack", 11)) {
		*cat = HC_MAP_STACK;
		v->cat_set = true;
	} else if (v->named) {
		*cat = HC_MAP_ALLOC;
		v->cat_set = true;
	} else if (!v->anon) {
		*cat = HC_MAP_FILE; /* files, [vdso], [vvar], [vsyscall] */
		v->cat_set = true;
	}
	return 1;
}

static bool is_rw(const struct vma *v)
{
	return v->perms[0] == 'r' && v->perms[1] == 'w' && v->perms[3] == 'p';
}

static bool is_none(const struct vma *v)
{
	return !strncmp(v->perms, "---", 3);
}

/* The second pass: arenas and thread stacks need their neighbours. */
static void classify(struct vma *v, size_t n, struct hc_maps *m)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct vma *a = &v[i], *b = i + 1 < n ? &v[i + 1] : NULL;

		if (a->cat_set || !a->anon)
			continue;
		if (is_rw(a) && a->start % ARENA_SIZE == 0) {
			/*
			 * Full heaps next to each other merge into one rw-p
			 * mapping: count one heap per 64 MiB.
			 */
			uint64_t bound = (a->end + ARENA_SIZE - 1) / ARENA_SIZE * ARENA_SIZE;
			bool tail = b && !b->cat_set && b->anon && is_none(b) && b->start == a->end &&
				    b->end >= bound;

			if (tail || a->end == bound) {
				a->cat = HC_MAP_ARENA;
				a->cat_set = true;
				if (tail) {
					b->cat = HC_MAP_ARENA;
					b->cat_set = true;
				}
				m->narenas += (unsigned)((bound - a->start) / ARENA_SIZE);
				continue;
			}
		}
		if (is_none(a) && a->end - a->start <= GUARD_MAX && b && !b->cat_set && b->anon &&
		    is_rw(b) && b->start == a->end) {
			a->cat = b->cat = HC_MAP_STACK;
			a->cat_set = b->cat_set = true;
		}
	}
	for (i = 0; i < n; i++) {
		if (!v[i].cat_set)
			v[i].cat = HC_MAP_ANON;
		m->cat[v[i].cat].rss += v[i].rss;
		m->cat[v[i].cat].size += v[i].end - v[i].start;
		m->cat[v[i].cat].nmaps++;
		m->rss_sum += v[i].rss;
	}
}

int hc_maps_parse(const char *text, size_t len, struct hc_maps *m, struct hc_err *err)
{
	struct vma *v = NULL, *cur = NULL;
	size_t n = 0, cap = 0;
	const char *p = text, *end = text + len;

	memset(m, 0, sizeof(*m));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		enum hc_map_cat cat = HC_MAP_ANON;
		struct vma tmp;

		if (parse_header(p, l, &tmp, &cat)) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct vma *nv = realloc(v, ncap * sizeof(*v));

				if (!nv) {
					free(v);
					return err_set(err, HC_E_NOMEM, ENOMEM,
						       "out of memory reading smaps");
				}
				v = nv;
				cap = ncap;
			}
			tmp.cat = cat;
			v[n] = tmp;
			cur = &v[n++];
		} else if (cur && l > 4 && !strncmp(p, "Rss:", 4)) {
			/* text need not end in a NUL: strtoull() gets a bounded copy */
			char num[32];
			size_t nd = l - 4 < sizeof(num) - 1 ? l - 4 : sizeof(num) - 1;

			memcpy(num, p + 4, nd);
			num[nd] = '\0';
			cur->rss = strtoull(num, NULL, 10) * 1024;
		}
		p += l + 1;
	}
	classify(v, n, m);
	free(v);
	if (!n)
		return err_set(err, HC_E_FORMAT, 0, "no mappings found in smaps text");
	return 0;
}

/* Whole file into a malloc'ed buffer; -1 with errno. */
static char *slurp(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), *nb;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	for (;;) {
		if (len + 4096 > cap) {
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (!r)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

/* "Key:   N kB" in a /proc file, in bytes; 0 if absent. */
static uint64_t proc_kb(const char *path, const char *key)
{
	size_t len, kl = strlen(key);
	char *buf = slurp(path, &len), *p;
	uint64_t v = 0;

	if (!buf)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			v = strtoull(p + kl + 1, NULL, 10) * 1024;
			break;
		}
	free(buf);
	return v;
}

int hc_maps_read(pid_t pid, struct hc_maps *m, struct hc_err *err)
{
	char path[64];
	size_t len;
	char *text;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	text = slurp(path, &len);
	if (!text)
		return err_errno(err, errno, "reading %s", path);
	rc = hc_maps_parse(text, len, m, err);
	free(text);
	if (rc) {
		/* a zombie or a kernel thread has no mappings: not a profile's problem */
		err_context(err, "pid %d", (int)pid);
		if (err && err->code == HC_E_FORMAT)
			snprintf(err->hint, sizeof(err->hint),
				 "pid %d maps nothing: a zombie or a kernel thread has no user memory",
				 (int)pid);
		return rc;
	}
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	m->rss_rollup = proc_kb(path, "Rss");
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	m->vmrss = proc_kb(path, "VmRSS");
	/* a count, not kB: proc_kb() scaled it */
	m->threads = (unsigned)(proc_kb(path, "Threads") / 1024);
	/* whose heaps: musl has no arenas, and its malloc's groups are anonymous mappings */
	snprintf(m->libc, sizeof(m->libc), "%s", libc_of_pid(pid, &m->libc_static));
	return 0;
}

static const char *size_str(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double d = (double)n / 1024.0;
	unsigned i = 0;

	while (d >= 1023.95 && i + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024.0;
		i++;
	}
	snprintf(buf, len, "%.1f %s", d, units[i]);
	return buf;
}

void hc_maps_diagnose(const struct hc_maps *m, char *out, size_t len)
{
	const struct hc_map_sum *c = m->cat;
	uint64_t total = m->rss_sum ? m->rss_sum : 1;
	char a[32], b[32];

	if (m->narenas && c[HC_MAP_ARENA].rss * 4 >= total) {
		snprintf(out, len,
			 "%u glibc arena%s hold%s %s resident of %s reserved; `heapctl purge` "
			 "can return free pages, `heapctl set M_ARENA_MAX` limits new arenas",
			 m->narenas, m->narenas == 1 ? "" : "s", m->narenas == 1 ? "s" : "",
			 size_str(c[HC_MAP_ARENA].rss, a, sizeof(a)),
			 size_str(c[HC_MAP_ARENA].size, b, sizeof(b)));
	} else if (c[HC_MAP_HEAP].rss * 4 >= total) {
		snprintf(out, len,
			 "the main heap holds %s of %s RSS; `heapctl purge` can return its free "
			 "pages",
			 size_str(c[HC_MAP_HEAP].rss, a, sizeof(a)), size_str(m->rss_sum, b, sizeof(b)));
	} else if ((c[HC_MAP_ANON].rss + c[HC_MAP_ALLOC].rss) * 2 >= total && !strcmp(m->libc, "musl")) {
		snprintf(out, len,
			 "%s of %s RSS is anonymous memory outside musl's brk heap (musl's malloc "
			 "groups, large mmaps); musl returns freed memory itself",
			 size_str(c[HC_MAP_ANON].rss + c[HC_MAP_ALLOC].rss, a, sizeof(a)),
			 size_str(m->rss_sum, b, sizeof(b)));
	} else if ((c[HC_MAP_ANON].rss + c[HC_MAP_ALLOC].rss) * 2 >= total) {
		snprintf(out, len,
			 "%s of %s RSS is anonymous memory outside glibc's heaps (allocator "
			 "chunks, large mmaps); `heapctl stats` shows what the allocator keeps",
			 size_str(c[HC_MAP_ANON].rss + c[HC_MAP_ALLOC].rss, a, sizeof(a)),
			 size_str(m->rss_sum, b, sizeof(b)));
	} else if (c[HC_MAP_STACK].rss * 2 >= total) {
		snprintf(out, len, "thread stacks hold %s of %s RSS; fewer threads would help",
			 size_str(c[HC_MAP_STACK].rss, a, sizeof(a)),
			 size_str(m->rss_sum, b, sizeof(b)));
	} else if (c[HC_MAP_SHM].rss * 4 >= total && c[HC_MAP_SHM].rss >= c[HC_MAP_FILE].rss) {
		snprintf(out, len,
			 "shared memory holds %s of %s RSS (SysV/POSIX shm, shared anonymous: "
			 "e.g. a database's buffers); it is counted in every process that touches "
			 "it and no allocator can return it",
			 size_str(c[HC_MAP_SHM].rss, a, sizeof(a)),
			 size_str(m->rss_sum, b, sizeof(b)));
	} else {
		snprintf(out, len,
			 "most of the %s RSS is file-backed code and data; the heap is small "
			 "(%s), nothing much for an allocator to return",
			 size_str(m->rss_sum, a, sizeof(a)),
			 size_str(c[HC_MAP_HEAP].rss + c[HC_MAP_ARENA].rss + c[HC_MAP_ANON].rss +
					  c[HC_MAP_ALLOC].rss,
				  b, sizeof(b)));
	}
}
