// SPDX-License-Identifier: MIT
/*
 * A real program: Debian's redis-server (linked with the system jemalloc),
 * under redis-benchmark load while heapctl works on it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "itest.h"

#define NKEYS 100

struct redis {
	char server[256], cli[256], bench[256];
	char port[16], dir[300], log[340];
	pid_t pid;
	char spid[16];
	bool no_prof; /* started without MALLOC_CONF=prof:true: heapctl's sampler profiles it */
};

/* redis-cli -p PORT args...; output in r. */
static void cli(struct redis *rd, struct hres *r, const char *const *args)
{
	const char *argv[2 * NKEYS + 16];
	int n = 0, i;

	argv[n++] = rd->cli;
	argv[n++] = "-h";
	argv[n++] = "127.0.0.1";
	argv[n++] = "-p";
	argv[n++] = rd->port;
	for (i = 0; args[i] && n < (int)(sizeof(argv) / sizeof(argv[0])) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	run_prog(r, argv, 20);
}

/* 0: up; 1: exited at startup (port taken?); -1: failed. */
static int redis_try(struct redis *rd)
{
	const char *argv[] = {
		rd->server, "--port", rd->port, "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--dir", rd->dir, NULL,
	};
	static const char *const env[] = { "MALLOC_CONF=prof:true,prof_active:false", NULL };
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	static const char *const ping[] = { "ping", NULL };
	char why[256];
	int logfd, port = loopback_free_port(), i;

	if (port < 0) {
		t_fail("no free loopback port");
		return -1;
	}
	snprintf(rd->port, sizeof(rd->port), "%d", port);
	snprintf(rd->dir, sizeof(rd->dir), "%s/redis", cfg.tmpdir);
	mkdir(rd->dir, 0755);
	snprintf(rd->log, sizeof(rd->log), "%s/redis.log", rd->dir);
	logfd = open(rd->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	o.out_fd = o.err_fd = logfd;
	o.cwd = rd->dir;
	o.setenv_kv = rd->no_prof ? NULL : env;
	rd->pid = spawn(argv, &o, why, sizeof(why));
	if (logfd >= 0)
		close(logfd);
	if (rd->pid < 0) {
		t_fail("redis-server: %s", why);
		return -1;
	}
	snprintf(rd->spid, sizeof(rd->spid), "%d", (int)rd->pid);
	/* Bounded poll until it answers. */
	for (i = 0; i < 200; i++) {
		struct hres r = { 0 };
		bool up;

		if (waitpid(rd->pid, NULL, WNOHANG) == rd->pid) {
			untrack_pid(rd->pid);
			rd->pid = -1;
			return 1;
		}
		cli(rd, &r, ping);
		up = hres_exit(&r) == 0 && strstr(r.out, "PONG");
		hres_free(&r);
		if (up)
			return 0;
		sleep_ms(50);
	}
	t_fail("redis-server on port %s never answered PING", rd->port);
	return -1;
}

static int redis_start(struct redis *rd)
{
	char *log;
	int i, r = 1;

	/* The free port we picked may be taken before redis binds it. */
	for (i = 0; i < 3 && r == 1; i++)
		r = redis_try(rd);
	if (r == 1) {
		log = read_file_str(rd->log);
		t_fail("redis-server exited at startup: %.300s", log ? log : "");
		free(log);
		return -1;
	}
	return r;
}

static void redis_stop(struct redis *rd)
{
	int st;

	if (rd->pid <= 0)
		return;
	kill(rd->pid, SIGTERM);
	if (wait_pid(rd->pid, &st, 15000)) {
		t_fail("redis-server ignored SIGTERM for 15 s");
		kill_wait(rd->pid);
	}
	rd->pid = -1;
}

static int set_keys(struct redis *rd)
{
	static char kv[2 * NKEYS][24];
	const char *args[2 * NKEYS + 2];
	struct hres r = { 0 };
	int i, n = 0, ret = 0;

	args[n++] = "MSET";
	for (i = 0; i < NKEYS; i++) {
		snprintf(kv[2 * i], sizeof(kv[0]), "heapctl:k%d", i);
		snprintf(kv[2 * i + 1], sizeof(kv[0]), "value-%d-%d", i, i * i);
		args[n++] = kv[2 * i];
		args[n++] = kv[2 * i + 1];
	}
	args[n] = NULL;
	cli(rd, &r, args);
	if (hres_exit(&r) != 0 || !strstr(r.out, "OK")) {
		t_fail("redis MSET: %s %.100s", hres_desc(&r), r.out);
		ret = -1;
	}
	hres_free(&r);
	return ret;
}

static int check_keys(struct redis *rd)
{
	static char keys[NKEYS][24];
	const char *args[NKEYS + 2];
	const char *p;
	struct hres r = { 0 };
	int i, n = 0, ret = -1;

	args[n++] = "MGET";
	for (i = 0; i < NKEYS; i++) {
		snprintf(keys[i], sizeof(keys[0]), "heapctl:k%d", i);
		args[n++] = keys[i];
	}
	args[n] = NULL;
	cli(rd, &r, args);
	if (hres_exit(&r) != 0) {
		t_fail("redis MGET: %s", hres_desc(&r));
		goto out;
	}
	p = r.out;
	for (i = 0; i < NKEYS; i++) {
		char want[32];
		size_t l = strcspn(p, "\n");

		snprintf(want, sizeof(want), "value-%d-%d", i, i * i);
		if (l != strlen(want) || strncmp(p, want, l)) {
			t_fail("redis key heapctl:k%d is '%.*s', expected '%s'", i, (int)l, p, want);
			goto out;
		}
		p += l + (p[l] ? 1 : 0);
	}
	ret = 0;
out:
	hres_free(&r);
	return ret;
}

static bool redis_found(struct redis *rd)
{
	if (find_in_path("redis-server", rd->server, sizeof(rd->server)) &&
	    find_in_path("redis-cli", rd->cli, sizeof(rd->cli)) &&
	    find_in_path("redis-benchmark", rd->bench, sizeof(rd->bench)))
		return true;
	t_skip(true, "redis-server, redis-cli or redis-benchmark not installed");
	return false;
}

/* redis-benchmark -n N -t TESTS -P PIPELINE against rd, in the background. */
static bool bench_start(struct redis *rd, struct hproc *bp, const char *n, const char *tests,
			const char *pipeline)
{
	const char *argv[] = {
		rd->bench, "-h", "127.0.0.1", "-p", rd->port, "-q", "-n", n, "-t", tests, "-P", pipeline, NULL,
	};

	if (prog_start(bp, argv) == 0)
		return true;
	t_fail("cannot start redis-benchmark");
	return false;
}

static void test_redis(void)
{
	static const char *const ping[] = { "ping", NULL };
	char *base_maps = NULL, *extra = NULL, why[512], dump[400];
	struct redis rd = { .pid = -1 };
	struct hproc bp;
	struct hres r = { 0 }, br = { 0 };
	int rounds = 0;
	bool bench_running = false;

	if (!redis_found(&rd))
		return;
	if (redis_start(&rd) || set_keys(&rd))
		goto out;
	base_maps = proc_odd_maps(rd.pid, false);

	if (!bench_start(&rd, &bp, "20000", "set,get", "1"))
		goto out;
	bench_running = true;

	/* Keep heapctl busy on redis for as long as the benchmark runs. */
	do {
		snprintf(dump, sizeof(dump), "%s/redis.%d.heap", rd.dir, rounds);
		if (hc_expect(&r, 0, "prof", "on", "-p", rd.spid, NULL))
			goto out;
		hres_free(&r);
		if (hc_expect(&r, 0, "dump", "-p", rd.spid, "-o", dump, NULL))
			goto out;
		hres_free(&r);
		if (!file_starts_with(dump, "heap_v2/", why, sizeof(why))) {
			t_fail("redis dump: %s", why);
			goto out;
		}
		if (hc_expect(&r, 0, "stats", "-p", rd.spid, "--json", NULL))
			goto out;
		if (json_valid(r.out, why, sizeof(why))) {
			t_fail("redis stats --json: %s", why);
			goto out;
		}
		hres_free(&r);
		if (hc_expect(&r, 0, "purge", "-p", rd.spid, NULL))
			goto out;
		hres_free(&r);
		if (hc_expect(&r, 0, "prof", "off", "-p", rd.spid, NULL))
			goto out;
		hres_free(&r);
		if (proc_check_tasks(rd.pid, false, why, sizeof(why))) {
			t_fail("redis: %s", why);
			goto out;
		}
		rounds++;
	} while (rounds < 50 && !pid_exited(bp.pid));

	hc_finish(&bp, &br, 180);
	bench_running = false;
	if (hres_exit(&br) != 0 || strcasestr_(br.out, "error") || strcasestr_(br.err, "error")) {
		t_fail("redis-benchmark: %s %.200s", hres_desc(&br), br.out);
		goto out;
	}
	t_note("%d rounds of prof on/dump/stats/purge/prof off during redis-benchmark", rounds);

	if (check_keys(&rd))
		goto out;
	if (hc_expect(&r, 0, "get", "-p", rd.spid, "prof.active", NULL))
		goto out;
	if (strncmp(r.out, "false", 5)) {
		t_fail("redis: prof.active reads '%.20s' after prof off", r.out);
		goto out;
	}
	hres_free(&r);
	cli(&rd, &r, ping);
	if (hres_exit(&r) != 0 || !strstr(r.out, "PONG")) {
		t_fail("redis no longer answers PING: %s", hres_desc(&r));
		goto out;
	}
	if (proc_check_tasks(rd.pid, false, why, sizeof(why))) {
		t_fail("redis: %s", why);
		goto out;
	}
	if (base_maps) {
		char *now = proc_odd_maps(rd.pid, false);

		extra = lines_missing(base_maps, now ? now : "");
		free(now);
		if (*extra) {
			t_fail("redis: new executable anonymous mapping left: %.300s", extra);
			goto out;
		}
	}
out:
	if (bench_running) {
		hc_finish(&bp, &br, 1);
		kill_wait(bp.pid);
	}
	hres_free(&br);
	hres_free(&r);
	free(base_maps);
	free(extra);
	redis_stop(&rd);
}

/*
 * Debian's redis-server started the usual way, without prof:true, under
 * redis-benchmark: heapctl's sampler is loaded, dumped from and taken out
 * again and again, leak runs on it, and every key is intact.
 */
static void test_redis_sampler(void)
{
	static const char *const ping[] = { "ping", NULL };
	char why[512], dump[400], svg[400];
	struct redis rd = { .pid = -1, .no_prof = true };
	struct hproc bp;
	struct hres r = { 0 }, br = { 0 };
	int rounds = 0;
	bool bench_running = false;

	if (!redis_found(&rd))
		return;
	if (redis_start(&rd) || set_keys(&rd))
		goto out;
	if (!bench_start(&rd, &bp, "100000", "set,get,lpush,lpop", "8"))
		goto out;
	bench_running = true;
	do {
		snprintf(dump, sizeof(dump), "%s/redis-smp.%d.heap", rd.dir, rounds);
		if (hc_expect(&r, 0, "prof", "on", "-p", rd.spid, NULL))
			goto out;
		if (!rounds && !strstr(r.out, "heapctl's sampler")) {
			t_fail("prof on, redis without prof:true: %.300s", r.out);
			goto out;
		}
		hres_free(&r);
		if (hc_expect(&r, 0, "dump", "-p", rd.spid, "-o", dump, NULL))
			goto out;
		hres_free(&r);
		if (!file_starts_with(dump, "heap_v2/", why, sizeof(why))) {
			t_fail("redis dump: %s", why);
			goto out;
		}
		unlink(dump);
		if (hc_expect(&r, 0, "prof", "off", "-p", rd.spid, NULL))
			goto out;
		hres_free(&r);
		if (proc_check_tasks(rd.pid, false, why, sizeof(why))) {
			t_fail("redis: %s", why);
			goto out;
		}
		rounds++;
	} while (rounds < 30 && !pid_exited(bp.pid));
	snprintf(svg, sizeof(svg), "%s/redis-leak.svg", rd.dir);
	if (hc_expect(&r, 0, "leak", "-p", rd.spid, "--for", "1", "-o", svg, NULL))
		goto out;
	hres_free(&r);
	hc_finish(&bp, &br, 180);
	bench_running = false;
	if (hres_exit(&br) != 0 || strcasestr_(br.out, "error") || strcasestr_(br.err, "error")) {
		t_fail("redis-benchmark: %s %.200s", hres_desc(&br), br.out);
		goto out;
	}
	t_note("%d rounds of prof on/dump/prof off with heapctl's sampler during redis-benchmark",
	       rounds);
	if (check_keys(&rd))
		goto out;
	cli(&rd, &r, ping);
	if (hres_exit(&r) != 0 || !strstr(r.out, "PONG"))
		t_fail("redis no longer answers PING: %s", hres_desc(&r));
	else if (proc_check_tasks(rd.pid, false, why, sizeof(why)))
		t_fail("redis: %s", why);
out:
	if (bench_running) {
		hc_finish(&bp, &br, 1);
		kill_wait(bp.pid);
	}
	hres_free(&br);
	hres_free(&r);
	redis_stop(&rd);
}

/* The number after "key:" in redis' INFO text, or -1. */
static double info_num(const char *info, const char *key)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\n%s:", key);
	p = info ? strstr(info, want) : NULL;
	return p ? strtod(p + strlen(want), NULL) : -1;
}

/* doctor --json's rss and the bytes of one finding (0 if absent); -1 on failure. */
static double doctor_bytes(const char *spid, const char *cause, double *rss, char *advice,
			   size_t advsz)
{
	struct hres r = { 0 };
	char want[64];
	const char *p;
	double b = -1;

	if (hc_expect(&r, 0, "doctor", "-p", spid, "--json", NULL) ||
	    json_get_num(r.out, "rss", rss)) {
		hres_free(&r);
		return -1;
	}
	snprintf(want, sizeof(want), "{\"cause\":\"%s\",\"bytes\":", cause);
	p = strstr(r.out, want);
	b = p ? strtod(p + strlen(want), NULL) : 0;
	if (p && advice && (p = strstr(p, "\"advice\":\"")))
		snprintf(advice, advsz, "%.*s", (int)strcspn(p + 10, "\""), p + 10);
	hres_free(&r);
	return b;
}

/*
 * redis after deleting half its keys: doctor names the fragmentation
 * redis' own INFO memory shows (allocator_active - allocator_allocated),
 * does not promise that purge returns it, and indeed purge does not.
 */
static void test_redis_doctor(void)
{
	static const char *const fill[] = {
		"eval", "for i = 1, ARGV[1] do redis.call('SET', 'k:' .. i, string.rep('x', 300)) "
			"end return 1", "0", "200000", NULL };
	static const char *const del[] = {
		"eval", "for i = 2, ARGV[1], 2 do redis.call('DEL', 'k:' .. i) end return 1", "0",
		"200000", NULL };
	static const char *const info[] = { "info", "memory", NULL };
	struct redis rd = { .pid = -1 };
	struct hres r = { 0 };
	double want, frag, frag1, rss0, rss1;
	char advice[512] = "", purge[64];

	if (!find_in_path("redis-server", rd.server, sizeof(rd.server)) ||
	    !find_in_path("redis-cli", rd.cli, sizeof(rd.cli))) {
		t_skip(true, "redis-server or redis-cli not installed");
		return;
	}
	if (redis_start(&rd))
		goto out;
	cli(&rd, &r, fill);
	if (hres_exit(&r) != 0 || !strstr(r.out, "1")) {
		t_fail("redis: filling 200000 keys: %s %.100s", hres_desc(&r), r.out);
		goto out;
	}
	hres_free(&r);
	cli(&rd, &r, del);
	hres_free(&r);
	/*
	 * INFO's allocator_* figures are what redis' cron last read from
	 * jemalloc (every 100 ms at hz 10): ask again until they show the
	 * deletion, for up to 5 s.
	 */
	for (long t0 = now_ms();;) {
		cli(&rd, &r, info);
		want = info_num(r.out, "allocator_active") - info_num(r.out, "allocator_allocated");
		hres_free(&r);
		if (want >= 16.0 * 1048576 || now_ms() - t0 > 5000)
			break;
		sleep_ms(50);
	}
	frag = doctor_bytes(rd.spid, "fragmentation", &rss0, advice, sizeof(advice));
	t_note("redis, half its keys deleted: INFO says active - allocated = %.1f MiB; doctor: "
	       "fragmentation %.1f MiB of RSS %.1f MiB",
	       want / 1048576, frag / 1048576, rss0 / 1048576);
	if (want < 16.0 * 1048576 || frag < want * 0.8 || frag > want * 1.2) {
		t_fail("doctor: fragmentation %.0f, redis says %.0f", frag, want);
		goto out;
	}
	snprintf(purge, sizeof(purge), "heapctl purge -p %s", rd.spid);
	if (strstr(advice, purge) || !strstr(advice, "cannot return"))
		t_fail("doctor: the fragmentation advice promises purge: %s", advice);
	/* and rightly: purge gives back next to none of it */
	if (hc_expect(&r, 0, "purge", "-p", rd.spid, NULL))
		goto out;
	hres_free(&r);
	frag1 = doctor_bytes(rd.spid, "fragmentation", &rss1, NULL, 0);
	t_note("after purge: fragmentation %.1f MiB, RSS %.1f MiB", frag1 / 1048576,
	       rss1 / 1048576);
	if (rss0 - rss1 > frag / 4 || frag1 < frag * 0.9)
		t_fail("purge took RSS %.0f -> %.0f and fragmentation %.0f -> %.0f", rss0, rss1,
		       frag, frag1);
out:
	hres_free(&r);
	redis_stop(&rd);
}

const struct itest t_redis_tests[] = {
	{ "redis-under-load", test_redis, 600 },
	{ "redis-sampler", test_redis_sampler, 600 },
	{ "redis-doctor", test_redis_doctor, 120 },
	{ NULL, NULL, 0 },
};
