// SPDX-License-Identifier: MIT
/*
 * heapctl integration harness.
 *
 * Usage: itest [HEAPCTL]
 * Environment:
 *   HEAPCTL       heapctl binary (default build/heapctl; argv[1] wins)
 *   VICTIM_DIR    directory of the victim binaries (default build/victims)
 *   CI=true       a skip for a missing dependency counts as a failure
 *   ITEST_FILTER  run only tests whose name contains this string
 *   ITEST_EXCLUDE leave out tests named in this comma-separated list
 *   ITEST_VFLAG   verbosity flag put first in each heapctl call (default -v;
 *                 empty to pass none)
 *   ITEST_KEEP=1  keep the scratch directory
 *   ITEST_TEST_TIMEOUT  per-test watchdog in seconds (default 180, redis 600)
 *   ITEST_SERVE_ABUSE_SECS  serve-abuse-rate's storm at 1,000 scrapes a second
 *                       (default 8; make torture: 30)
 *   ITEST_MAXGAP_US     ticker gap limit (default 50000; 200000 when heapctl
 *                       is an ASan build); a longer gap is forgiven only if
 *                       the untouched control process had one of half the
 *                       limit in the same window (the machine stalled)
 *
 * Prints "PASS name", "FAIL name: reason" or "SKIP name: reason" per test
 * and ends with "N passed, N failed[, N skipped]". Exit status 1 if any
 * test failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "itest.h"

struct itest_cfg cfg;

static struct {
	char reason[1024];
	bool failed, skipped, skip_dep;
	char notes[4096];
} cur;

static unsigned int n_pass, n_fail, n_skip;

#define MAX_TRACKED 256
static pid_t tracked[MAX_TRACKED];

static sigjmp_buf watchdog_jb;
static volatile sig_atomic_t watchdog_armed;

static long borrow_n, borrow_max_us, borrow_sum_us;

void t_fail(const char *fmt, ...)
{
	va_list ap;

	if (cur.failed)
		return;
	cur.failed = true;
	va_start(ap, fmt);
	vsnprintf(cur.reason, sizeof(cur.reason), fmt, ap);
	va_end(ap);
}

void t_skip(bool missing_dep, const char *fmt, ...)
{
	va_list ap;

	if (cur.failed || cur.skipped)
		return;
	cur.skipped = true;
	cur.skip_dep = missing_dep;
	va_start(ap, fmt);
	vsnprintf(cur.reason, sizeof(cur.reason), fmt, ap);
	va_end(ap);
}

bool t_failed(void)
{
	return cur.failed;
}

void t_note(const char *fmt, ...)
{
	size_t len = strlen(cur.notes);
	va_list ap;

	if (len + 8 >= sizeof(cur.notes))
		return;
	memcpy(cur.notes + len, "# ", 2);
	len += 2;
	va_start(ap, fmt);
	vsnprintf(cur.notes + len, sizeof(cur.notes) - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(cur.notes);
	cur.notes[len] = '\n';
	cur.notes[len + 1] = '\0';
}

static long last_borrow_tid, last_borrow_us;

void t_borrow_seen(long tid, long us)
{
	last_borrow_tid = tid;
	last_borrow_us = us;
	borrow_n++;
	borrow_sum_us += us;
	if (us > borrow_max_us)
		borrow_max_us = us;
}

bool t_last_borrow(long *tid, long *us)
{
	*tid = last_borrow_tid;
	*us = last_borrow_us;
	return last_borrow_tid != 0;
}

void track_pid(pid_t pid)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (!tracked[i]) {
			tracked[i] = pid;
			return;
		}
	}
}

void untrack_pid(pid_t pid)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (tracked[i] == pid)
			tracked[i] = 0;
}

/* Async-signal-safe: used from the exit and signal paths too. */
void kill_tracked(void)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (tracked[i] > 0) {
			kill(-tracked[i], SIGKILL);
			kill(tracked[i], SIGKILL);
		}
	}
	for (i = 0; i < MAX_TRACKED; i++) {
		if (tracked[i] > 0) {
			waitpid(tracked[i], NULL, 0);
			tracked[i] = 0;
		}
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	if (watchdog_armed)
		siglongjmp(watchdog_jb, 1);
}

static void on_fatal(int sig)
{
	kill_tracked();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void print_result(const char *name)
{
	if (cur.failed) {
		printf("FAIL %s: %s\n", name, cur.reason);
		n_fail++;
	} else if (cur.skipped && cur.skip_dep && cfg.ci) {
		printf("FAIL %s: %s (missing dependency, CI=true)\n", name, cur.reason);
		n_fail++;
	} else if (cur.skipped) {
		printf("SKIP %s: %s\n", name, cur.reason);
		n_skip++;
	} else {
		printf("PASS %s\n", name);
		n_pass++;
	}
	fputs(cur.notes, stdout);
	fflush(stdout);
}

static int test_timeout(const struct itest *t)
{
	const char *e = getenv("ITEST_TEST_TIMEOUT");
	int v = e ? atoi(e) : 0;

	const char *m = getenv("ITEST_TIMEOUT_SCALE");
	int scale = m ? atoi(m) : 1;

	if (v > 0)
		return v;
	return (t->timeout_s ? t->timeout_s : TEST_TIMEOUT_S) * (scale > 0 ? scale : 1);
}

static void run_one(const struct itest *t)
{
	memset(&cur, 0, sizeof(cur));
	if (sigsetjmp(watchdog_jb, 1)) {
		watchdog_armed = 0;
		t_fail("watchdog: test did not finish within %d s", test_timeout(t));
		/* Whatever the test had running is suspect now. */
		kill_tracked();
		shared_victim_drop();
		control_victim_drop();
		print_result(t->name);
		return;
	}
	watchdog_armed = 1;
	alarm((unsigned int)test_timeout(t));
	t->fn();
	alarm(0);
	watchdog_armed = 0;
	print_result(t->name);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup(void)
{
	kill_tracked();
	/* Orphans re-parented to us (we are a subreaper). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (cfg.tmpdir[0] && !getenv("ITEST_KEEP"))
		nftw(cfg.tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Does the binary carry the ASan runtime (make SAN=1)? */
static bool is_sanitized(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ret = false;
	struct stat st;
	char *buf;

	if (fd < 0)
		return false;
	if (!fstat(fd, &st) && st.st_size > 0 && st.st_size < (1L << 30)) {
		buf = malloc((size_t)st.st_size);
		if (buf && read(fd, buf, (size_t)st.st_size) == st.st_size)
			ret = memmem(buf, (size_t)st.st_size, "__asan_init", 11) ||
			      memmem(buf, (size_t)st.st_size, "libasan.so", 10);
		free(buf);
	}
	close(fd);
	return ret;
}

static const char *abs_path(const char *p)
{
	char buf[PATH_MAX];

	if (realpath(p, buf))
		return strdup(buf);
	if (p[0] == '/')
		return p;
	/* Keep a clear name in the failure messages when it does not exist. */
	if (getcwd(buf, sizeof(buf) - strlen(p) - 2)) {
		strcat(buf, "/");
		strcat(buf, p);
		return strdup(buf);
	}
	return p;
}

/* Is name one of the comma-separated names in ITEST_EXCLUDE? */
static bool excluded(const char *name)
{
	const char *p = getenv("ITEST_EXCLUDE");
	size_t n = strlen(name);

	while (p && *p) {
		size_t l = strcspn(p, ",");

		if (l == n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/*
 * heapctl's private directories in the temporary directories this
 * machine's targets share.  Without live ones: those of a process still
 * running, which at the end of a run is another run's target (every
 * process this one started is gone by then), not a leftover.
 */
static char *heapctl_dirs(bool live)
{
	static const char *const pats[] = { "/tmp/.heapctl-*", "/var/tmp/.heapctl-*",
					    "/dev/shm/.heapctl-*" };
	size_t len = 0, cap = 1;
	char *all = calloc(1, 1);

	for (size_t i = 0; all && i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;

		if (glob(pats[i], 0, NULL, &g))
			continue;
		for (size_t k = 0; all && k < g.gl_pathc; k++) {
			size_t n = strlen(g.gl_pathv[k]) + 1;
			const char *base = strrchr(g.gl_pathv[k], '/');
			int pid = base ? atoi(base + sizeof("/.heapctl-") - 1) : 0;

			if (!live && pid > 0 && kill(pid, 0) == 0)
				continue;
			char *na = len + n + 1 > cap ? realloc(all, cap = 2 * (len + n + 1)) : all;

			if (!na) {
				free(all);
				all = NULL;
				break;
			}
			all = na;
			len += (size_t)sprintf(all + len, "%s\n", g.gl_pathv[k]);
		}
		globfree(&g);
	}
	return all;
}

/*
 * The whole run, as one more test: every heapctl directory a target of ours
 * got (even from a heapctl killed on purpose, or a target killed mid-dump)
 * is gone by the end.
 */
static void check_dirs_left(const char *before)
{
	char *after = heapctl_dirs(false);
	char *extra = before && after ? lines_missing(before, after) : NULL;

	if (!extra) {
		printf("SKIP no-heapctl-dirs-left: cannot list the temporary directories\n");
		n_skip++;
	} else if (*extra) {
		printf("FAIL no-heapctl-dirs-left: heapctl directories left by this run: %.600s\n",
		       extra);
		n_fail++;
	} else {
		printf("PASS no-heapctl-dirs-left\n");
		n_pass++;
	}
	free(extra);
	free(after);
}

int main(int argc, char **argv)
{
	static const struct itest *const groups[] = {
		t_basic_tests, t_cmds_tests, t_ctl_tests, t_cli_tests, t_watch_tests, t_tid_tests, t_err_tests, t_redis_tests, t_alloc_tests,
		t_hostile_tests, t_kill_tests, t_torture_tests, t_timers_tests,
		t_concurrent_tests, t_syms_tests, t_evidence_tests, t_ns_tests,
		t_attack_tests,
		t_deleted_tests, t_doctor_tests, t_sampler_tests, t_musl_tests, t_real_tests, t_serve_tests,
#if defined(__aarch64__)
		t_aarch64_tests,
#endif
	};
	const char *filter = getenv("ITEST_FILTER");
	const char *hc;

	if (argc > 1 && (!strcmp(argv[1], "--without-caps") || !strcmp(argv[1], "--uid")))
		return itest_exec_as(argv + 1);
	hc = argc > 1 ? argv[1] : getenv("HEAPCTL");
	const char *vd = getenv("VICTIM_DIR");
	const char *vf = getenv("ITEST_VFLAG");
	const char *ci = getenv("CI");
	struct sigaction sa;
	size_t gi;
	char *dirs_before;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: %s [HEAPCTL]\n(see the comment at the top of itest.c)\n", argv[0]);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg.heapctl = abs_path(hc && *hc ? hc : "build/heapctl");
	cfg.victim_dir = abs_path(vd && *vd ? vd : "build/victims");
	cfg.vflag = vf ? (*vf ? vf : NULL) : "-v";
	cfg.ci = ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
	cfg.heapctl_sanitized = is_sanitized(cfg.heapctl);
	/*
	 * The ticker is never borrowed; its gap measures how much heapctl
	 * disturbs the threads it leaves alone. A sanitized heapctl is several
	 * times slower and competes for the same CPUs, so allow more there.
	 */
	cfg.maxgap_us = getenv("ITEST_MAXGAP_US") ? atol(getenv("ITEST_MAXGAP_US")) :
		       cfg.heapctl_sanitized ? MAXGAP_SAN_US : MAXGAP_US;
	/* an emulated machine runs a victim's bulk work tens of times slower */
	cfg.reply_ms = getenv("ITEST_REPLY_MS") ? atoi(getenv("ITEST_REPLY_MS")) : 0;
	if (cfg.reply_ms <= 0)
		cfg.reply_ms = REPLY_DEF_MS;
	snprintf(cfg.tmpdir, sizeof(cfg.tmpdir), "/tmp/heapctl-itest.XXXXXX");
	if (!mkdtemp(cfg.tmpdir)) {
		perror("itest: mkdtemp");
		return 1;
	}
	chmod(cfg.tmpdir, 0755);

	/* Children we leave behind are re-parented to us, and reaped by us. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	atexit(cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_fatal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	dirs_before = heapctl_dirs(true);
	printf("# heapctl: %s%s\n# victims: %s\n# scratch: %s\n", cfg.heapctl,
	       cfg.heapctl_sanitized ? " (sanitized)" : "", cfg.victim_dir, cfg.tmpdir);
	for (gi = 0; gi < sizeof(groups) / sizeof(groups[0]); gi++) {
		const struct itest *t;

		for (t = groups[gi]; t->name; t++) {
			if ((filter && *filter && !strstr(t->name, filter)) || excluded(t->name))
				continue;
			run_one(t);
		}
	}
	shared_victim_drop();
	control_victim_drop();
	check_dirs_left(dirs_before);
	free(dirs_before);

	if (borrow_n)
		printf("# borrowed a thread %ld times: max %ld us, mean %ld us\n", borrow_n,
		       borrow_max_us, borrow_sum_us / borrow_n);
	if (n_skip)
		printf("%u passed, %u failed, %u skipped\n", n_pass, n_fail, n_skip);
	else
		printf("%u passed, %u failed\n", n_pass, n_fail);
	fflush(stdout);
	return n_fail ? 1 : 0;
}
