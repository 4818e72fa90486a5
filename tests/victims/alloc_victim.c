// SPDX-License-Identifier: MIT
/*
 * alloc_victim: plain_victim's protocol plus commands that shape the heap,
 * for the glibc, tcmalloc and mimalloc drivers.  Built as is (glibc malloc,
 * or under LD_PRELOAD=libjemalloc/libtcmalloc), as tcmalloc_victim, linked
 * with -ltcmalloc, and as mimalloc_victim, with commands of its own
 * (ALLOC_VICTIM_MORE).  It reads its allocator's own figures: mallinfo2()
 * for glibc, MallocExtension_GetNumericProperty() (found with dlsym) for
 * tcmalloc.
 *
 * Extra commands (one reply line each):
 *   frag MIB    a new thread allocates MIB MiB in 512-byte blocks, then frees
 *               all but the last one: a thread arena full of free pages
 *               that its top cannot give back.  Reply: frag ok rss=KIB
 *   mi          mi rss=KIB arena=.. uordblks=.. fordblks=.. keepcost=..
 *               hblkhd=.. tc_free=.. tc_alloc=.. (tc_*: -1 without tcmalloc)
 *   grow N      victim_grow_site() keeps N blocks of 64 KiB: grow ok
 *   grow N late the same through late_grow_site() of a dlopen()ed library
 *   free        frees every block grow kept: free ok n=N
 *   dlopen PATH dlopen(PATH, RTLD_NOW): dlopen ok, or dlopen bad ERROR
 *   hammer N    N threads malloc, calloc, realloc, posix_memalign and free
 *               forever, each block filled with a pattern checked before it
 *               is resized or freed: hammer ok
 *   hammered    hammered ops=N bad=N (bad: a block that lost its pattern)
 *   mdwe        prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN): no memory may
 *               become writable and executable from now on: mdwe ok, or
 *               mdwe unsupported ERRNO
 *   fork        a child that allocates 16 blocks of 64 KiB, then waits for
 *               "reap": fork ok pid=N
 *   forkexec    a child that execs sleep: forkexec ok pid=N
 *   reap        both children go and are reaped: reap ok
 *   tcflags     gperftools' FLAGS_verbose and heap profile dump intervals:
 *               tcflags verbose=N alloc=N dealloc=N inuse=N time=N (-1: absent)
 *   shm MIB     maps and touches MIB MiB of shared anonymous memory and MIB MiB
 *               of POSIX shm (unlinked at once, nothing stays in /dev/shm):
 *               shm ok rss=KIB
 *   holes MIB   main (the main arena) allocates 2 x MIB MiB in 1000-byte blocks and
 *               frees every other one: MIB MiB free in holes smaller than a page,
 *               which malloc_trim cannot return.  Reply: holes ok rss=KIB
 *   arenas N MIB
 *               N threads, started one after the other, each make MIB MiB of
 *               holes (as "holes") in the arena glibc gives it, then wait until
 *               the victim exits: arenas ok rss=KIB
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/mman.h>

#include "vcommon.h"

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long tc_prop(const char *name)
{
	int (*get)(const char *, size_t *) =
		(int (*)(const char *, size_t *))dlsym(RTLD_DEFAULT,
							"MallocExtension_GetNumericProperty");
	size_t v = 0;

	if (!get || !get(name, &v))
		return -1;
	return (long)v;
}

static void *frag_thread(void *arg)
{
	size_t n = (size_t)arg * 2048, i;
	void **blocks = calloc(n, sizeof(*blocks));

	if (!blocks)
		return NULL;
	for (i = 0; i < n; i++) {
		blocks[i] = malloc(512);
		if (blocks[i])
			memset(blocks[i], 0x5a, 512);
	}
	/* the last block stays: it pins the top of the heap */
	for (i = 0; i + 1 < n; i++)
		free(blocks[i]);
	free(blocks);
	return NULL;
}

/*
 * 2 x mib MiB of 1000-byte blocks, every other one freed: each hole sits
 * between two live blocks, so none merge.  The live ones are kept.
 */
static bool make_holes(long mib)
{
	size_t n = (size_t)mib * 2 * 1048576 / 1000, i;
	void **b = malloc(n * sizeof(*b));

	if (!b)
		return false;
	for (i = 0; i < n; i++) {
		b[i] = malloc(1000);
		if (!b[i])
			return false;
		memset(b[i], 0x3c, 1000);
	}
	for (i = 0; i < n; i += 2)
		free(b[i]);
	/* the array itself would be one more hole: a large block, returned whole */
	free(b);
	return true;
}

static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int parked_ok, parked_done;

static void *holes_thread(void *arg)
{
	bool ok = make_holes((long)arg);

	pthread_mutex_lock(&park_mu);
	parked_ok += ok;
	parked_done++;
	pthread_cond_broadcast(&park_cv);
	/* parked for good: the arena stays this thread's */
	for (;;)
		pthread_cond_wait(&park_cv, &park_mu);
	return NULL;
}

static bool start_arenas(long n, long mib)
{
	for (long i = 0; i < n; i++) {
		pthread_attr_t at;
		pthread_t t;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &at, holes_thread, (void *)mib))
			return false;
		pthread_attr_destroy(&at);
		/* one after the other, as a server's workers start */
		pthread_mutex_lock(&park_mu);
		while (parked_done <= i)
			pthread_cond_wait(&park_cv, &park_mu);
		pthread_mutex_unlock(&park_mu);
	}
	return parked_ok == parked_done;
}

static atomic_ulong hammer_ops, hammer_bad;

/* One byte pattern per block, from its thread and slot; checked before each resize and free. */
static bool pattern_ok(const unsigned char *p, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i += 61)
		if (p[i] != c)
			return false;
	return true;
}

static void *hammer_thread(void *arg)
{
	enum { SLOTS = 64 };
	unsigned char *blk[SLOTS] = { 0 };
	size_t len[SLOTS] = { 0 };
	unsigned long seed = (unsigned long)arg * 2654435761u + 1;

	for (;;) {
		for (int k = 0; k < 256; k++) {
			unsigned i, op;
			unsigned char c;
			size_t n;

			seed = seed * 6364136223846793005ul + 1442695040888963407ul;
			i = (unsigned)(seed >> 33) % SLOTS;
			op = (unsigned)(seed >> 40) % 5;
			n = 16 + (seed >> 45) % 8192;
			c = (unsigned char)(i * 7 + (unsigned long)arg);
			if (blk[i] && !pattern_ok(blk[i], len[i], c))
				atomic_fetch_add(&hammer_bad, 1);
			if (op == 0 && blk[i]) {
				unsigned char *q = realloc(blk[i], n);

				if (q) {
					blk[i] = q;
					memset(q, c, n);
					len[i] = n;
				}
				continue;
			}
			free(blk[i]);
			blk[i] = NULL;
			if (op == 1)
				blk[i] = calloc(1, n);
			else if (op == 2 && posix_memalign((void **)&blk[i], 64, n))
				blk[i] = NULL;
			else if (op >= 3)
				blk[i] = malloc(n);
			if (blk[i]) {
				memset(blk[i], c, n);
				len[i] = n;
			}
		}
		atomic_fetch_add(&hammer_ops, 256);
	}
	return NULL;
}

static int fork_w = -1;
static pid_t fork_pid = -1, exec_pid = -1;

static void **grown;
static void *late; /* "dlopen" */
static size_t ngrown;

__attribute__((noinline)) void *victim_grow_site(size_t len);
__attribute__((noinline)) void *victim_grow_site(size_t len)
{
	void *p = malloc(len);

	if (p)
		memset(p, 1, len);
	__asm__ volatile("" ::: "memory");
	return p;
}

/* Handles the extra commands; false if cmd is not one of them. */
static bool extra_cmd(int fd, const char *cmd, const char *arg)
{
	if (!strcmp(cmd, "frag")) {
		pthread_t t;
		long mib = strtol(arg, NULL, 10);

		if (mib < 1 || mib > 4096 || pthread_create(&t, NULL, frag_thread, (void *)mib) ||
		    pthread_join(t, NULL))
			vreply(fd, "frag bad");
		else
			vreply(fd, "frag ok rss=%ld", rss_kib());
	} else if (!strcmp(cmd, "mi")) {
		struct mallinfo2 mi = mallinfo2();

		vreply(fd, "mi rss=%ld arena=%zu uordblks=%zu fordblks=%zu keepcost=%zu hblkhd=%zu "
			   "tc_free=%ld tc_alloc=%ld",
		       rss_kib(), mi.arena, mi.uordblks, mi.fordblks, mi.keepcost, mi.hblkhd,
		       tc_prop("tcmalloc.pageheap_free_bytes"),
		       tc_prop("generic.current_allocated_bytes"));
	} else if (!strcmp(cmd, "grow")) {
		char *rest;
		long n = strtol(arg, &rest, 10);
		void **nb = n > 0 && n < 100000 ? realloc(grown, (ngrown + (size_t)n) * sizeof(*nb)) :
						  NULL;
		void *(*site)(size_t) = victim_grow_site;

		if (strstr(rest, "late"))
			site = late ? (void *(*)(size_t))dlsym(late, "late_grow_site") : NULL;
		if (!nb || !site) {
			vreply(fd, "grow bad");
			return true;
		}
		grown = nb;
		for (long i = 0; i < n; i++)
			grown[ngrown++] = site(65536);
		vreply(fd, "grow ok");
	} else if (!strcmp(cmd, "free")) {
		size_t n = ngrown;

		while (ngrown)
			free(grown[--ngrown]);
		vreply(fd, "free ok n=%zu", n);
	} else if (!strcmp(cmd, "hammer")) {
		long n = strtol(arg, NULL, 10);

		for (long i = 0; i < n && i < 64; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, hammer_thread, (void *)(i + 1))) {
				vreply(fd, "hammer bad");
				return true;
			}
			pthread_detach(t);
		}
		vreply(fd, "hammer ok");
	} else if (!strcmp(cmd, "hammered")) {
		vreply(fd, "hammered ops=%lu bad=%lu", atomic_load(&hammer_ops), atomic_load(&hammer_bad));
	} else if (!strcmp(cmd, "mdwe")) {
		/* PR_SET_MDWE = 65, PR_MDWE_REFUSE_EXEC_GAIN = 1 (Linux 6.3) */
		if (prctl(65, 1UL, 0UL, 0UL, 0UL) == 0)
			vreply(fd, "mdwe ok");
		else
			vreply(fd, "mdwe unsupported %d", errno);
	} else if (!strcmp(cmd, "fork")) {
		int p[2];

		if (fork_pid > 0 || pipe(p)) {
			vreply(fd, "fork bad");
			return true;
		}
		fork_pid = fork();
		if (fork_pid == 0) {
			char c;

			close(p[1]);
			for (int i = 0; i < 16; i++)
				memset(malloc(65536), 1, 65536);
			while (read(p[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		close(p[0]);
		fork_w = p[1];
		vreply(fd, "fork ok pid=%d", (int)fork_pid);
	} else if (!strcmp(cmd, "forkexec")) {
		exec_pid = fork();
		if (exec_pid == 0) {
			execl("/bin/sleep", "sleep", "1000", (char *)NULL);
			_exit(127);
		}
		vreply(fd, "forkexec ok pid=%d", (int)exec_pid);
	} else if (!strcmp(cmd, "reap")) {
		int st = 0;

		if (fork_w >= 0)
			close(fork_w);
		if (exec_pid > 0)
			kill(exec_pid, SIGKILL);
		if (fork_pid > 0)
			waitpid(fork_pid, &st, 0);
		if (exec_pid > 0)
			waitpid(exec_pid, NULL, 0);
		fork_w = fork_pid = exec_pid = -1;
		vreply(fd, "reap ok status=%d", st);
	} else if (!strcmp(cmd, "dlopen")) {
		late = dlopen(arg, RTLD_NOW);
		if (late)
			vreply(fd, "dlopen ok");
		else
			vreply(fd, "dlopen bad %s", dlerror());
	} else if (!strcmp(cmd, "fdload")) {
		/*
		 * An object loaded as heapctl loaded its sampler before it
		 * renamed it: from a memfd named as heapctl names it, by its
		 * /proc/self/fd path, the fd closed after.
		 */
		char path[64], buf[65536];
		int in = open(arg, O_RDONLY | O_CLOEXEC), mfd = memfd_create("heapctl-sampler", MFD_CLOEXEC);
		ssize_t n = 0;
		void *h = NULL;

		while (in >= 0 && mfd >= 0 && (n = read(in, buf, sizeof(buf))) > 0 &&
		       vwrite_all(mfd, buf, (size_t)n) == 0)
			;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
		if (in >= 0 && mfd >= 0 && n == 0)
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (in >= 0)
			close(in);
		if (mfd >= 0)
			close(mfd);
		if (h)
			vreply(fd, "fdload ok %s", path);
		else
			vreply(fd, "fdload bad %s", in < 0 || mfd < 0 || n ? strerror(errno) : dlerror());
	} else if (!strcmp(cmd, "tcflags")) {
#define TCF(t, n) "_ZN61FLAG__namespace_do_not_use_directly_use_DECLARE_" t "_instead" n "E"
		int32_t *vb = dlsym(RTLD_DEFAULT, TCF("int32", "13FLAGS_verbose"));
		static const char *const iv[] = {
			TCF("int64", "38FLAGS_heap_profile_allocation_interval"),
			TCF("int64", "40FLAGS_heap_profile_deallocation_interval"),
			TCF("int64", "33FLAGS_heap_profile_inuse_interval"),
			TCF("int64", "32FLAGS_heap_profile_time_interval"),
		};
		long long v[4];

		for (int i = 0; i < 4; i++) {
			int64_t *p = dlsym(RTLD_DEFAULT, iv[i]);

			v[i] = p ? (long long)*p : -1;
		}
		vreply(fd, "tcflags verbose=%d alloc=%lld dealloc=%lld inuse=%lld time=%lld",
		       vb ? *vb : -1, v[0], v[1], v[2], v[3]);
	} else if (!strcmp(cmd, "holes")) {
		long mib = strtol(arg, NULL, 10);

		if (mib < 1 || mib > 1024 || !make_holes(mib))
			vreply(fd, "holes bad");
		else
			vreply(fd, "holes ok rss=%ld", rss_kib());
	} else if (!strcmp(cmd, "arenas")) {
		char *end;
		long n = strtol(arg, &end, 10), mib = strtol(end, NULL, 10);

		if (n < 1 || n > 200 || mib < 1 || mib > 64 || !start_arenas(n, mib))
			vreply(fd, "arenas bad");
		else
			vreply(fd, "arenas ok rss=%ld", rss_kib());
	} else if (!strcmp(cmd, "shm")) {
		long mib = strtol(arg, NULL, 10);
		size_t len = (size_t)mib << 20;
		char name[64];
		void *a = MAP_FAILED, *b = MAP_FAILED;
		int sfd;

		snprintf(name, sizeof(name), "/hcv-shm-%d", (int)getpid());
		sfd = mib > 0 && mib <= 1024 ? shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600) : -1;
		if (sfd >= 0) {
			shm_unlink(name);
			if (!ftruncate(sfd, (off_t)len))
				b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
			close(sfd);
			a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		}
		if (a == MAP_FAILED || b == MAP_FAILED) {
			vreply(fd, "shm bad");
			return true;
		}
		memset(a, 1, len);
		memset(b, 2, len);
		vreply(fd, "shm ok rss=%ld", rss_kib());
	} else {
#ifdef ALLOC_VICTIM_MORE
		return ALLOC_VICTIM_MORE(fd, cmd, arg);
#else
		return false;
#endif
	}
	return true;
}

#define VICTIM_EXTRA_CMD extra_cmd
#include "plain_victim.c"
