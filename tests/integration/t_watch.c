// SPDX-License-Identifier: MIT
/*
 * heapctl watch: its JSON lines, growth, Ctrl-C, profiles on growth, and
 * the node exporter's textfile.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "itest.h"

/* ---- watch --------------------------------------------------------------- */

/* One line of fd (a heapctl's stdout) into buf, within timeout_ms; false if none. */
static bool read_line(int fd, char *buf, size_t len, long timeout_ms)
{
	size_t have = 0;

	for (long end = now_ms() + timeout_ms; have + 1 < len && now_ms() < end;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) <= 0)
			continue;
		/* a byte at a time: what follows the newline is the next call's */
		if (read(fd, buf + have, 1) != 1)
			break;
		if (buf[have] == '\n') {
			buf[have] = '\0';
			return true;
		}
		have++;
	}
	buf[have] = '\0';
	return false;
}

/* --count samples, --json: one object per line, each with time, one borrow each. */
static void test_watch_json(void)
{
	struct victim *v = shared_victim();
	struct hres r = { 0 };
	const char *p;
	int lines = 0;

	if (!v)
		return;
	hc_run(&r, NULL, "-v", "watch", "-p", v->spid, "--every", "100ms", "--count", "3", "--json",
	       NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --json: %s", hres_desc(&r));
		goto out;
	}
	for (p = r.out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		lines++;
		if (strncmp(p, "{\"time\":", 8) || !strstr(p, "\"allocated\":") ||
		    (lines > 1) != (strstr(p, "\"rates\":{\"allocated\":") &&
				    strstr(p, "\"rates\":{\"allocated\":") < strchr(p, '\n')))
			t_fail("watch --json line %d: %.300s", lines, p);
	}
	if (!t_failed() && lines != 3)
		t_fail("watch --count 3 printed %d lines:\n%.500s", lines, r.out);
	else if (!t_failed() && count_str(r.err, "gave tid ") != 3)
		t_fail("watch --count 3 borrowed %d times (wanted one borrow per sample)",
		       count_str(r.err, "gave tid "));
	else if (!t_failed())
		victim_check(v, 0);
out:
	hres_free(&r);
}

/*
 * A steady leak shows as a steady positive rate: the victim leaks 16 MiB
 * right after each sample is printed (read from watch's own stdout), and
 * the next sample, a second later, must show it.
 */
static void test_watch_growth(void)
{
	const char *args[] = { "watch", "-p", NULL, "--every", NULL, "--count", "4", "--json",
			       NULL };
	char why[512], line[4096], reply[128], every[24];
	double first = -1, last = 0, now, prev = 0;
	struct victim v;
	struct hproc hp;
	struct hres r = { 0 };
	long t0, took;

	if (victim_start_env(&v, "jemalloc_victim", "prof:true,prof_active:false",
			     "VICTIM_NO_HAMMER=1", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	/*
	 * Each leak must land between two samples: a sample every second, or
	 * on a machine where one leak takes longer (an emulated CPU under
	 * load), four times as long as a first leak took.
	 */
	t0 = now_ms();
	if (victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
		goto out;
	took = now_ms() - t0;
	snprintf(every, sizeof(every), "%lds", took * 4 / 1000 + 1);
	args[2] = v.spid;
	args[4] = every;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		goto out;
	}
	for (int i = 0; i < 4 && !t_failed(); i++) {
		const char *a, *rate;

		if (!read_line(hp.out, line, sizeof(line), 10000)) {
			t_fail("watch printed no sample %d", i + 1);
			break;
		}
		a = strstr(line, "\"allocated\":");
		rate = strstr(line, "\"rates\":{\"allocated\":");
		if (!a) {
			t_fail("sample %d has no allocated: %.300s", i + 1, line);
			break;
		}
		last = strtod(a + 12, NULL);
		if (first < 0)
			first = last;
		/* half the leak over the time between the samples (more than 1 s on a slow machine) */
		now = strtod(line + 8, NULL);
		if (i && (!rate || strtod(rate + strlen("\"rates\":{\"allocated\":"), NULL) <
					   8.0 * MiB / (now - prev > 1 ? now - prev : 1)))
			t_fail("sample %d after a 16 MiB leak, %.1f s after the last: rate %.300s",
			       i + 1, now - prev, rate ? rate : "(none)");
		prev = now;
		if (i < 3 && victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
			break;
	}
	hc_finish(&hp, &r, 20);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0))
		t_fail("watch: %s", hres_desc(&r));
	else if (!t_failed() && last - first < 0.9 * 48 * MiB)
		t_fail("allocated grew by %.0f bytes over three 16 MiB leaks", last - first);
	else if (!t_failed())
		victim_check(&v, 0);
	hres_free(&r);
out:
	victim_stop(&v);
}

/*
 * --dump-on-growth: a baseline at the first sample, then a profile each
 * time allocated grew by SIZE; their --base diff names the leaking
 * function.  Without profiling on, a clear refusal before any sample.
 */
static void test_watch_dump_on_growth(void)
{
	const char *args[] = { "watch", "-p", NULL, "--every", "1s", "--count", "4",
			       "--dump-on-growth", "24MiB", "--dir", NULL, NULL };
	char why[512], line[4096], reply[128], dir[300], p0[400], p1[400], p2[400];
	struct victim v;
	struct hproc hp;
	struct hres r = { 0 };

	if (victim_start_env(&v, "jemalloc_victim", "prof:true,prof_active:false",
			     "VICTIM_NO_HAMMER=1", why, sizeof(why))) {
		t_fail("%s", why);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/growth.%s", cfg.tmpdir, v.spid);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		t_fail("mkdir %s: %s", dir, strerror(errno));
		goto out;
	}
	hc_run(&r, NULL, "watch", "-p", v.spid, "--count", "1", "--dump-on-growth", "1M", "--dir",
	       dir, NULL);
	if (hres_exit(&r) != 1 || !strstr(r.err, "heapctl prof on"))
		t_fail("--dump-on-growth with profiling off: %s (wanted a refusal naming "
		       "'heapctl prof on')", hres_desc(&r));
	hres_free(&r);
	if (t_failed() || hc_expect(&r, 0, "prof", "on", "-p", v.spid, NULL))
		goto out_r;
	hres_free(&r);
	args[2] = v.spid;
	args[10] = dir;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		goto out;
	}
	for (int i = 0; i < 4 && !t_failed(); i++) {
		if (!read_line(hp.out, line, sizeof(line), 10000)) {
			t_fail("watch printed no sample %d", i + 1);
			break;
		}
		if (i < 3 && victim_expect(&v, "leak 16777216 0", "leak ok", reply, sizeof(reply)))
			break;
	}
	hc_finish(&hp, &r, 20);
	snprintf(p0, sizeof(p0), "%s/heapctl.%s.0.heap", dir, v.spid);
	snprintf(p1, sizeof(p1), "%s/heapctl.%s.1.heap", dir, v.spid);
	snprintf(p2, sizeof(p2), "%s/heapctl.%s.2.heap", dir, v.spid);
	if (t_failed())
		goto out_r;
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --dump-on-growth: %s", hres_desc(&r));
		goto out_r;
	}
	/* 16 MiB after samples 1, 2, 3: 32 MiB by sample 3 (a profile), 16 more by 4 (none) */
	if (access(p0, F_OK) || access(p1, F_OK) || !access(p2, F_OK)) {
		t_fail("wanted a baseline and one growth profile in %s (%s)", dir, r.err);
		goto out_r;
	}
	hres_free(&r);
	hc_run(&r, NULL, "report", p1, "--base", p0, "--format", "folded", NULL);
	if (hres_exit(&r) != 0 || !strstr(r.out, "cmd_leak"))
		t_fail("report of the growth profile against the baseline does not name "
		       "cmd_leak: %s\n%.400s", hres_desc(&r), r.out);
	else
		victim_check(&v, 0);
out_r:
	hres_free(&r);
out:
	victim_stop(&v);
}

/* Ctrl-C between samples: a clean stop, at once, the target as it was. */
static void test_watch_sigint(void)
{
	struct victim *v = shared_victim();
	const char *args[] = { "-v", "watch", "-p", NULL, "--every", "30s", NULL };
	char buf[4096] = "";
	struct hproc hp;
	struct hres r = { 0 };
	long t0;

	if (!v)
		return;
	args[3] = v->spid;
	if (hc_startv(&hp, NULL, args) < 0) {
		t_fail("cannot start heapctl watch");
		return;
	}
	if (!hp_err_until(&hp, "borrowed tid", buf, sizeof(buf), 10000))
		t_fail("watch took no sample: %.300s", buf);
	t0 = now_ms();
	kill(hp.pid, SIGINT);
	hc_finish(&hp, &r, 10);
	if (!t_failed() && (hres_crash(&r) || hres_exit(&r) != 0))
		t_fail("watch after SIGINT: %s (wanted exit 0)", hres_desc(&r));
	else if (!t_failed() && now_ms() - t0 > 3000)
		t_fail("watch took %ld ms to stop on SIGINT", now_ms() - t0);
	else if (!t_failed())
		victim_check(v, 0);
	hres_free(&r);
}

/* A free TCP port on the loopback (bound, read, closed). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* GET path from 127.0.0.1:port (HTTP/1.0, the whole answer); NULL on failure. */
static char *http_get(int port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	size_t have = 0, cap = 1 << 20;
	char req[256], *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		free(buf);
		buf = NULL;
		goto out;
	}
	while (have + 1 < cap && (n = read(fd, buf + have, cap - 1 - have)) > 0)
		have += (size_t)n;
	buf[have] = '\0';
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

/* A line of page that begins with metric (its name and '{') and labels pid="pid". */
static bool metric_of(const char *page, const char *metric, const char *pid)
{
	char label[48];

	snprintf(label, sizeof(label), "pid=\"%s\"", pid);
	for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *nl = strchr(p, '\n'), *l;

		if (strncmp(p, metric, strlen(metric)))
			continue;
		l = strstr(p, label);
		if (l && (!nl || l < nl))
			return true;
	}
	return false;
}

/*
 * watch --textfile against Debian's node exporter with only its textfile
 * collector: the heapctl metrics and doctor's findings are served, and the file parsed cleanly
 * (node_textfile_scrape_error 0).  stats --format prometheus prints the
 * same metrics.
 */
static void test_watch_exporter(void)
{
	static const char exporter[] = "/usr/bin/prometheus-node-exporter";
	struct victim *v = shared_victim();
	char dir[300], dirarg[340], addr[64], buf[4096] = "";
	const char *args[] = { exporter, "--collector.disable-defaults", "--collector.textfile",
			       dirarg, addr, NULL };
	struct hproc ex;
	struct hres r = { 0 }, er = { 0 };
	char *page = NULL;
	int port;

	if (!v)
		return;
	if (access(exporter, X_OK)) {
		t_skip(true, "prometheus-node-exporter not installed (apt-get install "
			     "prometheus-node-exporter)");
		return;
	}
	hc_run(&r, NULL, "stats", "-p", v->spid, "--format", "prometheus", NULL);
	if (hres_exit(&r) != 0 || !metric_of(r.out, "heapctl_allocated_bytes{", v->spid) ||
	    !strstr(r.out, "# TYPE heapctl_rss_bytes gauge")) {
		t_fail("stats --format prometheus: %s\n%.400s", hres_desc(&r), r.out);
		goto out_r;
	}
	hres_free(&r);
	snprintf(dir, sizeof(dir), "%s/textfile.%s", cfg.tmpdir, v->spid);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		t_fail("mkdir %s: %s", dir, strerror(errno));
		return;
	}
	hc_run(&r, NULL, "watch", "-p", v->spid, "--count", "1", "--textfile", dir, NULL);
	if (hres_crash(&r) || hres_exit(&r) != 0) {
		t_fail("watch --textfile: %s", hres_desc(&r));
		goto out_r;
	}
	port = free_port();
	snprintf(dirarg, sizeof(dirarg), "--collector.textfile.directory=%s", dir);
	snprintf(addr, sizeof(addr), "--web.listen-address=127.0.0.1:%d", port);
	if (port < 0 || prog_start(&ex, args) < 0) {
		t_fail("cannot start %s", exporter);
		goto out_r;
	}
	if (!hp_err_until(&ex, "Listening on", buf, sizeof(buf), 10000))
		t_fail("the node exporter did not start listening: %.400s", buf);
	else if (!(page = http_get(port, "/metrics")))
		t_fail("no answer from the node exporter on port %d", port);
	else if (!metric_of(page, "heapctl_allocated_bytes{", v->spid) ||
		 !metric_of(page, "heapctl_finding_bytes{", v->spid))
		t_fail("the node exporter does not serve heapctl's metrics and findings:\n%.600s",
		       page);
	else if (!strstr(page, "node_textfile_scrape_error 0"))
		t_fail("the node exporter could not parse heapctl's file:\n%.600s",
		       strstr(page, "node_textfile_scrape_error") ?
			       strstr(page, "node_textfile_scrape_error") : page);
	kill(ex.pid, SIGTERM);
	hc_finish(&ex, &er, 10);
	hres_free(&er);
	free(page);
	if (!t_failed())
		victim_check(v, 0);
out_r:
	hres_free(&r);
}

const struct itest t_watch_tests[] = {
	{ "watch-json", test_watch_json, 0 },
	{ "watch-growth", test_watch_growth, 0 },
	{ "watch-sigint", test_watch_sigint, 0 },
	{ "watch-dump-on-growth", test_watch_dump_on_growth, 0 },
	{ "watch-exporter", test_watch_exporter, 0 },
	{ NULL, NULL, 0 },
};
