/* SPDX-License-Identifier: MIT */
/*
 * serve.h: heapctl serve, shared between its files.
 *
 *   cmd_serve.c    options, the worker (the one thread that borrows: it is
 *                  the tracer), targets, their cache and back-off, --profile
 *   serve_http.c   libmicrohttpd (loaded at run time), routing, tokens, pages
 *   serve_query.c  a request's query string, checked (pure: tests/fuzz/fuzz_query.c)
 */
#ifndef HEAPCTL_SERVE_H
#define HEAPCTL_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- serve_query.c ---------------------------------------------------- */

/*
 * What /debug/pprof/heap (or /allocs) is asked: ?pid=N or ?name=COMM, and
 * &seconds=N.
 */
struct serve_query {
	pid_t pid;          /* 0: not given */
	char name[16];      /* comm, "" if not given */
	unsigned seconds;   /* 0: the profile now, else the growth over that many */
	bool have_seconds;
	unsigned nargs;
	bool allocs;        /* the page is /debug/pprof/allocs (set by the router, not the query) */
};
#define SERVE_MAX_SECONDS 3600u
#define SERVE_MAX_ARGS 8
#define SERVE_MAX_ARG_LEN 64

/*
 * One argument of the query (as libmicrohttpd decoded it: val may be NULL
 * for "?pid").  Returns 0, or -1 with why (for a 400) filled in.  Unknown
 * keys, repeats, and values that are not exactly what is expected are
 * refused: nothing in a request is ever used as a path or passed on.
 */
int serve_query_arg(struct serve_query *q, const char *key, const char *val, char *why,
		    size_t len);
/* After the last argument: the combination makes sense (pid or name, not both). */
int serve_query_done(const struct serve_query *q, char *why, size_t len);
/* A raw query string ("pid=1&seconds=5", no '?', no decoding): the fuzzer's way in. */
int serve_query_parse(struct serve_query *q, const char *s, size_t n, char *why, size_t len);

/* ---- cmd_serve.c: what the pages are made of ------------------------- */

struct hc_err;

/* A response body, malloc()ed; status an HTTP code, type its Content-Type. */
struct serve_page {
	char *body;
	size_t len;
	unsigned status;
	const char *type;
};

/* /metrics: every target's figures, no older than --min-interval. */
void serve_metrics(struct serve_page *pg);
/* /: the processes, with links. */
void serve_index(struct serve_page *pg);
/*
 * /debug/pprof/heap: the profile (or growth) of the process q names;
 * /debug/pprof/allocs the same, its default sample type alloc_space, as Go's.
 */
void serve_heap(const struct serve_query *q, struct serve_page *pg);
/* A page saying err as the CLI says it ("heapctl: error: ...\nhint: ..."). */
void serve_error_page(struct serve_page *pg, unsigned status, const struct hc_err *err);
/* Counts a request refused before it reached the pages (bad query, token). */
void serve_count_refused(void);

/* ---- serve_http.c ----------------------------------------------------- */

struct serve_http_opts {
	const char *listen;    /* ADDR:PORT, [V6ADDR]:PORT */
	const char *token;     /* the bearer token, or NULL: none asked */
	bool allow_control;
};
/* Starts the server's threads; -1 with err filled if the address or libmicrohttpd fails. */
int serve_http_start(const struct serve_http_opts *o, struct hc_err *err);
void serve_http_stop(void);
/* Whether ADDR:PORT names a loopback address; -1 if it does not parse. */
int serve_listen_loopback(const char *listen);

#endif /* HEAPCTL_SERVE_H */
