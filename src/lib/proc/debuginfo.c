// SPDX-License-Identifier: MIT
/*
 * Symbols that are not in the object itself: MiniDebugInfo (.gnu_debugdata)
 * and debuginfod.
 *
 * MiniDebugInfo is what Fedora and RHEL ship: an xz-compressed ELF file
 * holding a .symtab of the functions .dynsym lacks, stored in the stripped
 * object's .gnu_debugdata section.  It is decompressed in memory with
 * liblzma and read with elf_memory(); nothing touches the disk.
 *
 * debuginfod is reached through elfutils' libdebuginfod, loaded with
 * dlopen() the way elfutils' own tools do it: the library pulls in libcurl
 * and its TLS stack, which heapctl must not need in order to run, and it
 * has no static archive to link.  The library brings its cache
 * (DEBUGINFOD_CACHE_PATH, default ~/.cache/debuginfod_client), its
 * DEBUGINFOD_TIMEOUT and DEBUGINFOD_URLS handling; heapctl adds its own
 * deadline (--timeout) through the progress callback.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "debuginfo.h"
#include "log.h"

/* Uncompressed MiniDebugInfo beyond this is not a symbol table we want. */
#define MDI_MAX (256u << 20)

void *mdi_decompress(Elf *elf, size_t *len)
{
	size_t shstrndx, cap, in_len;
	Elf_Scn *scn = NULL;
	Elf_Data *d = NULL;
	lzma_stream s = LZMA_STREAM_INIT;
	uint8_t *out = NULL;
	lzma_ret r;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, ".gnu_debugdata")) {
			d = elf_rawdata(scn, NULL);
			break;
		}
	}
	if (!d || !d->d_buf || d->d_size < 12)
		return NULL;
	in_len = d->d_size;
	if (lzma_stream_decoder(&s, MDI_MAX, 0) != LZMA_OK)
		return NULL;
	cap = in_len * 4 < 65536 ? 65536 : in_len * 4;
	s.next_in = d->d_buf;
	s.avail_in = in_len;
	for (;;) {
		if (!out || s.avail_out == 0) {
			size_t done = out ? (size_t)(s.next_out - out) : 0;
			uint8_t *no;

			if (out)
				cap *= 2;
			if (cap > MDI_MAX)
				goto fail;
			no = realloc(out, cap);
			if (!no)
				goto fail;
			out = no;
			s.next_out = out + done;
			s.avail_out = cap - done;
		}
		r = lzma_code(&s, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK) {
			pr_debug(".gnu_debugdata: xz error %d", (int)r);
			goto fail;
		}
	}
	*len = (size_t)(s.next_out - out);
	lzma_end(&s);
	return out;
fail:
	lzma_end(&s);
	free(out);
	return NULL;
}

/* The few entry points of libdebuginfod heapctl uses (elfutils/debuginfod.h). */
struct dbgd_client;
typedef int (*dbgd_progress_fn)(struct dbgd_client *, long, long);
static struct {
	void *lib;
	struct dbgd_client *(*begin)(void);
	void (*end)(struct dbgd_client *);
	int (*find_debuginfo)(struct dbgd_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(struct dbgd_client *, dbgd_progress_fn);
} dbgd;

/*
 * Progress of the transfer in flight: for the line on a terminal and the
 * deadline.  Targets may be opened from several threads at once: one
 * transfer at a time (dbgd_lock), and the library is loaded once.
 */
static pthread_mutex_t dbgd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t dbgd_once = PTHREAD_ONCE_INIT;
static struct {
	uint64_t deadline_ns;
	bool tty, shown, cancelled;
	const char *what;
} prog;

static int dbgd_progress(struct dbgd_client *c, long a, long b)
{
	(void)c;
	if (prog.deadline_ns && now_ns() > prog.deadline_ns) {
		prog.cancelled = true;
		return 1; /* nonzero cancels the transfer: its share of --timeout is spent */
	}
	if (prog.tty) {
		if (b > 0)
			fprintf(stderr, "\rheapctl: debuginfod: symbols of %s: %ld/%ld KiB\033[K",
				prog.what, a / 1024, b / 1024);
		else
			fprintf(stderr, "\rheapctl: debuginfod: symbols of %s: %ld KiB\033[K",
				prog.what, a / 1024);
		prog.shown = true;
	}
	return 0;
}

static void dbgd_load(void)
{
	dbgd.lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!dbgd.lib) {
		pr_info("debuginfod: DEBUGINFOD_URLS is set but libdebuginfod.so.1 cannot be "
			"loaded (%s): install libdebuginfod1", dlerror());
		return;
	}
	*(void **)&dbgd.begin = dlsym(dbgd.lib, "debuginfod_begin");
	*(void **)&dbgd.end = dlsym(dbgd.lib, "debuginfod_end");
	*(void **)&dbgd.find_debuginfo = dlsym(dbgd.lib, "debuginfod_find_debuginfo");
	*(void **)&dbgd.set_progressfn = dlsym(dbgd.lib, "debuginfod_set_progressfn");
	if (!dbgd.begin || !dbgd.end || !dbgd.find_debuginfo) {
		pr_info("debuginfod: libdebuginfod.so.1 lacks debuginfod_find_debuginfo");
		dlclose(dbgd.lib);
		dbgd.lib = NULL;
	}
}

/* dbgd_find() with dbgd_lock held. */
static int find_locked(const char *urls, const char *build_id_hex, const char *what,
		       uint64_t deadline_ns, char **path)
{
	struct dbgd_client *c;
	int fd;

	c = dbgd.begin();
	if (!c)
		return -1;
	prog.deadline_ns = deadline_ns;
	prog.tty = isatty(STDERR_FILENO);
	prog.shown = false;
	prog.cancelled = false;
	prog.what = what;
	if (dbgd.set_progressfn)
		dbgd.set_progressfn(c, dbgd_progress);
	pr_info("debuginfod: asking %s for build-id %s (%s)", urls, build_id_hex, what);
	/* A build-id length of 0 means: the id is given as a hex string. */
	fd = dbgd.find_debuginfo(c, (const unsigned char *)build_id_hex, 0, path);
	if (prog.shown)
		fputs("\r\033[K", stderr);
	dbgd.end(c);
	if (fd < 0) {
		if (prog.cancelled)
			pr_info("debuginfod: gave up on %s: half of --timeout spent", what);
		else
			pr_info("debuginfod: no debug file for %s: %s", what, strerror(-fd));
		free(*path);
		*path = NULL;
		return -1;
	}
	return fd;
}

int dbgd_find(const char *build_id_hex, const char *what, uint64_t deadline_ns, char **path)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	int fd;

	*path = NULL;
	if (!urls || !*urls || !build_id_hex)
		return -1;
	pthread_once(&dbgd_once, dbgd_load);
	if (!dbgd.lib)
		return -1;
	pthread_mutex_lock(&dbgd_lock);
	fd = find_locked(urls, build_id_hex, what, deadline_ns, path);
	pthread_mutex_unlock(&dbgd_lock);
	return fd;
}
