// SPDX-License-Identifier: MIT
/*
 * leaky: a small request-serving "service" for the heapctl demo.
 *
 * A few worker threads handle fake requests: each request allocates a
 * request buffer, a header table and a response buffer of realistic sizes,
 * keeps a handful of recent responses around and frees the rest.  A report
 * thread periodically builds and drops a large report, which leaves dirty
 * pages behind for "heapctl purge" to return to the kernel.
 *
 * One request in LEAK_EVERY also inserts a session into a cache that is
 * never evicted:
 *
 *   worker_main() -> handle_request() -> session_cache_insert()
 *                                     -> session_cache_leak()
 *
 * so the heap grows by a few hundred KiB per second, all of it allocated
 * from session_cache_leak().  Built with -g -O1 -fno-omit-frame-pointer
 * so that heapctl and jeprof can walk and name those frames, three ways
 * (demo/run.sh): leaky on glibc's malloc, leaky-jemalloc linked with
 * jemalloc, leaky-static with gcc -static.
 *
 * Usage: leaky [PIDFILE]
 * The pid is written to PIDFILE (or printed) once every thread runs.
 * SIGTERM or SIGINT stops the service cleanly.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NR_WORKERS 3
#define RECENT_RESPONSES 4	/* responses each worker keeps for "retries" */
#define LEAK_EVERY 6		/* one request in LEAK_EVERY leaks a session */
#define SESSION_SIZE 1024
#define LEAK_CAP (256UL << 20)	/* stop leaking after 256 MiB, to stay polite */
#define REPORT_CHUNK (256 << 10)
#define REPORT_CHUNKS 48	/* 12 MiB report, built and dropped every REPORT_PERIOD_MS */
#define REPORT_PERIOD_MS 2000

struct session {
	struct session *next;
	uint64_t id;
	char blob[SESSION_SIZE - 2 * sizeof(uint64_t)];
};

static atomic_bool stopping;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *session_cache;
static size_t session_cache_bytes;

/* Per-thread xorshift: cheap and reproducible, no shared state. */
static uint32_t rnd(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR && !atomic_load(&stopping))
		;
}

/* Kept out of line, and its result used, so it appears in heap profiles. */
static __attribute__((noinline)) struct session *session_cache_leak(uint64_t id)
{
	struct session *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	s->id = id;
	memset(s->blob, (int)(id & 0xff), sizeof(s->blob));
	return s;
}

static __attribute__((noinline)) void session_cache_insert(uint64_t id)
{
	struct session *s;

	pthread_mutex_lock(&cache_lock);
	if (session_cache_bytes >= LEAK_CAP) {
		pthread_mutex_unlock(&cache_lock);
		return;
	}
	pthread_mutex_unlock(&cache_lock);

	s = session_cache_leak(id);
	if (!s)
		return;

	/* Sessions are inserted but never evicted: this is the leak. */
	pthread_mutex_lock(&cache_lock);
	s->next = session_cache;
	session_cache = s;
	session_cache_bytes += sizeof(*s);
	pthread_mutex_unlock(&cache_lock);
}

static __attribute__((noinline)) char *parse_headers(const char *req, size_t len, uint32_t *seed)
{
	size_t n = 16 + rnd(seed) % 48;
	char *tab = calloc(n, 32);
	size_t i;

	if (!tab)
		return NULL;
	for (i = 0; i < n && i < len; i++)
		tab[i * 32] = req[i];
	return tab;
}

static __attribute__((noinline)) char *build_response(const char *hdrs, uint32_t *seed)
{
	size_t len = 512 + rnd(seed) % (12 << 10);
	char *resp = malloc(len);

	if (!resp)
		return NULL;
	memset(resp, hdrs ? hdrs[0] : 'x', len);
	return resp;
}

static __attribute__((noinline)) char *handle_request(uint64_t id, uint32_t *seed)
{
	size_t len = 256 + rnd(seed) % (4 << 10);
	char *req = malloc(len);
	char *hdrs, *resp;

	if (!req)
		return NULL;
	memset(req, 'a' + (int)(id % 26), len);
	hdrs = parse_headers(req, len, seed);
	resp = build_response(hdrs, seed);
	if (id % LEAK_EVERY == 0)
		session_cache_insert(id);
	free(hdrs);
	free(req);
	return resp;
}

static void *worker_main(void *arg)
{
	uint32_t seed = 0x9e3779b9u * (uint32_t)((uintptr_t)arg + 1);
	char *recent[RECENT_RESPONSES] = { NULL };
	uint64_t id = (uintptr_t)arg;
	unsigned int slot = 0, i;

	while (!atomic_load(&stopping)) {
		free(recent[slot]);
		recent[slot] = handle_request(id, &seed);
		slot = (slot + 1) % RECENT_RESPONSES;
		id += NR_WORKERS;
		sleep_ms(1);
	}
	for (i = 0; i < RECENT_RESPONSES; i++)
		free(recent[i]);
	return NULL;
}

static __attribute__((noinline)) void build_report(char **chunks)
{
	int i;

	for (i = 0; i < REPORT_CHUNKS; i++) {
		chunks[i] = malloc(REPORT_CHUNK);
		if (chunks[i])
			memset(chunks[i], i, REPORT_CHUNK);
	}
}

/* Large, short-lived allocations: freed pages stay dirty until decay or purge. */
static void *report_main(void *arg)
{
	char *chunks[REPORT_CHUNKS];
	int i;

	(void)arg;
	while (!atomic_load(&stopping)) {
		build_report(chunks);
		for (i = 0; i < REPORT_CHUNKS; i++)
			free(chunks[i]);
		sleep_ms(REPORT_PERIOD_MS);
	}
	return NULL;
}

static int write_pidfile(const char *path)
{
	char tmp[4096];
	FILE *f;

	/* Write then rename, so a reader never sees a partial pid. */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t tids[NR_WORKERS + 1];
	sigset_t set;
	int i, sig, err;

	/* Let heapctl attach under Yama ptrace_scope=1; EINVAL without Yama. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

	/* Block the stop signals everywhere; the main thread waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	for (i = 0; i < NR_WORKERS; i++) {
		err = pthread_create(&tids[i], NULL, worker_main, (void *)(uintptr_t)i);
		if (err) {
			fprintf(stderr, "leaky: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	err = pthread_create(&tids[NR_WORKERS], NULL, report_main, NULL);
	if (err) {
		fprintf(stderr, "leaky: pthread_create: %s\n", strerror(err));
		return 1;
	}

	if (argc > 1) {
		if (write_pidfile(argv[1])) {
			fprintf(stderr, "leaky: cannot write %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
	} else {
		printf("%d\n", (int)getpid());
		fflush(stdout);
	}

	while (sigwait(&set, &sig))
		;

	atomic_store(&stopping, true);
	for (i = 0; i <= NR_WORKERS; i++)
		pthread_join(tids[i], NULL);
	if (argc > 1)
		unlink(argv[1]);
	return 0;
}
