// SPDX-License-Identifier: MIT
/*
 * serve_http.c: heapctl serve's HTTP side, on libmicrohttpd.
 *
 * libmicrohttpd is loaded when serve starts (dlopen), not linked: Debian
 * builds it with GnuTLS, whose archive needs p11-kit's, which Debian does
 * not ship, so a static link is out; and a dynamic one would make every
 * heapctl command load GnuTLS and a dozen libraries at start, which is the
 * cold start the static link exists to save.  Only serve pays for it.
 *
 * Threads: one per connection (MHD_USE_THREAD_PER_CONNECTION), at most
 * MAX_CONNS.  They never touch a target: they ask cmd_serve.c for a page,
 * which waits for the worker, the one thread that borrows.  Every signal
 * heapctl acts on is blocked in them (they inherit the worker's mask).
 *
 * Read-only: GET and HEAD only.  A request's query is checked by
 * serve_query.c; nothing it says becomes a path.  A URL longer than
 * MAX_URI is refused here (414, with the error and hint every refusal
 * carries); one past MEM_LIMIT, or a header, by libmicrohttpd itself.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "cli.h"
#include "serve.h"

#define MAX_CONNS 64
#define MEM_LIMIT (64 * 1024)
#define MAX_URI 4096
#define CONN_TIMEOUT_S 30

static struct {
	void *lib;
	struct MHD_Daemon *(*start)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
				    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop)(struct MHD_Daemon *d);
	int (*get_values)(struct MHD_Connection *c, enum MHD_ValueKind kind,
			  MHD_KeyValueIterator it, void *cls);
	const char *(*lookup)(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key);
	struct MHD_Response *(*from_buffer)(size_t size, void *buffer,
					    enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_header)(struct MHD_Response *r, const char *h, const char *v);
	enum MHD_Result (*queue)(struct MHD_Connection *c, unsigned int status,
				 struct MHD_Response *r);
	void (*destroy)(struct MHD_Response *r);
} mhd;

static struct MHD_Daemon *daemon_;
static char *token;
static size_t token_len;

static int load(struct hc_err *err)
{
	static const char *const names[] = { "libmicrohttpd.so.12", "libmicrohttpd.so" };

	for (size_t i = 0; i < 2 && !mhd.lib; i++)
		mhd.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!mhd.lib) {
		err->code = HC_E_UNSUPPORTED;
		snprintf(err->msg, sizeof(err->msg), "cannot load libmicrohttpd: %s", dlerror());
		snprintf(err->hint, sizeof(err->hint),
			 "install libmicrohttpd12 (apt-get install libmicrohttpd12)");
		return -1;
	}
	*(void **)&mhd.start = dlsym(mhd.lib, "MHD_start_daemon");
	*(void **)&mhd.stop = dlsym(mhd.lib, "MHD_stop_daemon");
	*(void **)&mhd.get_values = dlsym(mhd.lib, "MHD_get_connection_values");
	*(void **)&mhd.lookup = dlsym(mhd.lib, "MHD_lookup_connection_value");
	*(void **)&mhd.from_buffer = dlsym(mhd.lib, "MHD_create_response_from_buffer");
	*(void **)&mhd.add_header = dlsym(mhd.lib, "MHD_add_response_header");
	*(void **)&mhd.queue = dlsym(mhd.lib, "MHD_queue_response");
	*(void **)&mhd.destroy = dlsym(mhd.lib, "MHD_destroy_response");
	if (!mhd.start || !mhd.stop || !mhd.get_values || !mhd.lookup || !mhd.from_buffer ||
	    !mhd.add_header || !mhd.queue || !mhd.destroy) {
		err->code = HC_E_UNSUPPORTED;
		snprintf(err->msg, sizeof(err->msg), "libmicrohttpd lacks a function serve calls");
		snprintf(err->hint, sizeof(err->hint), "install Debian's libmicrohttpd12 (0.9.x)");
		return -1;
	}
	return 0;
}

static enum MHD_Result send_page(struct MHD_Connection *c, struct serve_page *pg)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!pg->body) {
		static char oom[] = "heapctl: error: out of memory\n";

		pg->status = 503;
		pg->type = "text/plain; charset=utf-8";
		r = mhd.from_buffer(sizeof(oom) - 1, oom, MHD_RESPMEM_PERSISTENT);
	} else {
		r = mhd.from_buffer(pg->len, pg->body, MHD_RESPMEM_MUST_FREE);
	}
	if (!r) {
		free(pg->body);
		return MHD_NO;
	}
	mhd.add_header(r, "Content-Type", pg->type ? pg->type : "text/plain; charset=utf-8");
	mhd.add_header(r, "Cache-Control", "no-store");
	mhd.add_header(r, "X-Content-Type-Options", "nosniff");
	if (pg->status == 401)
		mhd.add_header(r, "WWW-Authenticate", "Bearer realm=\"heapctl\"");
	ret = mhd.queue(c, pg->status, r);
	mhd.destroy(r);
	return ret;
}

static void usage_page(struct serve_page *pg, unsigned status, const char *msg, const char *hint)
{
	struct hc_err e;

	memset(&e, 0, sizeof(e));
	e.code = HC_E_USAGE;
	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	snprintf(e.hint, sizeof(e.hint), "%s", hint);
	serve_count_refused();
	serve_error_page(pg, status, &e);
}

struct qstate {
	struct serve_query q;
	char why[200];
	bool bad;
};

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct qstate *s = cls;

	(void)kind;
	if (s->bad)
		return MHD_NO;
	if (serve_query_arg(&s->q, key, value, s->why, sizeof(s->why)))
		s->bad = true;
	return s->bad ? MHD_NO : MHD_YES;
}

/* Constant time in the token's length: a timing must not tell how much was right. */
static bool authorized(struct MHD_Connection *c)
{
	const char *h;
	unsigned char diff = 0;
	size_t n;

	if (!token)
		return true;
	h = mhd.lookup(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7))
		return false;
	h += 7;
	n = strlen(h);
	for (size_t i = 0; i < token_len; i++)
		diff |= (unsigned char)(token[i] ^ (i < n ? h[i] : 0));
	return !diff && n == token_len;
}

/*
 * The connection's state, in the pointer libmicrohttpd keeps for it
 * (*con_cls): the request line's URI length, shifted, with CONN_SEEN (the
 * headers were seen: the first call is over) and CONN_URI (length known).
 * Nothing to allocate, so nothing to free when a client goes away.
 */
#define CONN_URI 1u
#define CONN_SEEN 2u

static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
	size_t n = strnlen(uri, (size_t)MAX_URI + 1);

	(void)cls;
	(void)c;
	return (void *)(uintptr_t)((n << 2) | CONN_URI);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	static const char *const routes = "/, /metrics, /debug/pprof/heap?pid=N|name=COMM"
					  "[&seconds=N], /debug/pprof/allocs?(the same)";
	struct serve_page pg = { 0 };
	struct qstate qs;

	(void)cls;
	(void)version;
	(void)upload_data;
	/* the first call carries the headers only; a body, if any, is never read */
	if (!((uintptr_t)*con_cls & CONN_SEEN)) {
		*con_cls = (void *)((uintptr_t)*con_cls | CONN_SEEN);
		if (((uintptr_t)*con_cls >> 2) > MAX_URI) {
			char msg[80];

			snprintf(msg, sizeof(msg), "the URL is longer than %d bytes", MAX_URI);
			usage_page(&pg, 414, msg, routes);
			return send_page(c, &pg);
		}
		if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
			usage_page(&pg, 405, "only GET and HEAD are served",
				   "heapctl serve is read-only");
			return send_page(c, &pg);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!authorized(c)) {
		usage_page(&pg, 401, "missing or wrong bearer token",
			   "send 'Authorization: Bearer TOKEN' with the token of --token-file");
		return send_page(c, &pg);
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		usage_page(&pg, 405, "only GET and HEAD are served", "heapctl serve is read-only");
		return send_page(c, &pg);
	}
	memset(&qs, 0, sizeof(qs));
	if (mhd.get_values(c, MHD_GET_ARGUMENT_KIND, query_arg, &qs) < 0 || qs.bad) {
		usage_page(&pg, 400, qs.why[0] ? qs.why : "a malformed query", routes);
		return send_page(c, &pg);
	}
	if (!strcmp(url, "/metrics")) {
		if (qs.q.nargs) {
			usage_page(&pg, 400, "/metrics takes no query", routes);
			return send_page(c, &pg);
		}
		serve_metrics(&pg);
	} else if (!strcmp(url, "/debug/pprof/heap") || !strcmp(url, "/debug/pprof/allocs")) {
		qs.q.allocs = !strcmp(url, "/debug/pprof/allocs");
		if (serve_query_done(&qs.q, qs.why, sizeof(qs.why))) {
			usage_page(&pg, 400, qs.why, routes);
			return send_page(c, &pg);
		}
		serve_heap(&qs.q, &pg);
	} else if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/")) {
		serve_index(&pg);
	} else {
		char msg[160];

		snprintf(msg, sizeof(msg), "no page %.100s", url);
		usage_page(&pg, 404, msg, routes);
	}
	return send_page(c, &pg);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	cli_log(HC_LOG_DEBUG, "libmicrohttpd: %s", buf);
}

/* ADDR:PORT or [ADDR]:PORT into ss; -1 if it does not parse. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[64];
	const char *colon, *h = s;
	unsigned long port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (!e || e[1] != ':')
			return -1;
		h = s + 1;
		hl = (size_t)(e - h);
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hl = (size_t)(colon - s);
	}
	if (hl >= sizeof(host) || cli_parse_uint(colon + 1, 65535, &port))
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (s[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		if (!hl)
			in->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -1;
		*sl = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -1;
		*sl = sizeof(*in6);
	}
	return 0;
}

int serve_listen_loopback(const char *listen)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (parse_listen(listen, &ss, &sl))
		return -1;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
}

int serve_http_start(const struct serve_http_opts *o, struct hc_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG;

	if (parse_listen(o->listen, &ss, &sl)) {
		err->code = HC_E_USAGE;
		snprintf(err->msg, sizeof(err->msg), "invalid --listen '%.100s'", o->listen);
		snprintf(err->hint, sizeof(err->hint),
			 "give ADDR:PORT, e.g. 127.0.0.1:6061 or [::1]:6061");
		return -1;
	}
	if (load(err))
		return -1;
	if (o->token) {
		token = strdup(o->token);
		token_len = strlen(o->token);
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	daemon_ = mhd.start(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR,
			    (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNS,
			    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
			    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEM_LIMIT,
			    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_URI_LOG_CALLBACK,
			    uri_seen, NULL, MHD_OPTION_END);
	if (!daemon_) {
		int e = errno;

		err->code = HC_E_IO;
		err->sys_errno = e;
		snprintf(err->msg, sizeof(err->msg), "cannot listen on %.100s: %s", o->listen,
			 e ? strerror(e) : "libmicrohttpd refused");
		snprintf(err->hint, sizeof(err->hint),
			 "is the port in use (ss -ltnp)? choose another with --listen");
		return -1;
	}
	(void)sl;
	return 0;
}

void serve_http_stop(void)
{
	if (daemon_)
		mhd.stop(daemon_);
	daemon_ = NULL;
	if (token)
		explicit_bzero(token, token_len);
	free(token);
	token = NULL;
}
