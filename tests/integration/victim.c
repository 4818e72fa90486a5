// SPDX-License-Identifier: MIT
/*
 * Victim handling: start one with its three pipes, talk to it, and check
 * after every heapctl call that it was left exactly as it was.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "itest.h"

#define REPLY_MS cfg.reply_ms

static unsigned int victim_seq;

long kv_long(const char *line, const char *key, long dflt)
{
	size_t kl = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=')
			return strtol(p + kl + 1, NULL, 10);
		p += kl;
	}
	return dflt;
}

bool kv_str(const char *line, const char *key, char *out, size_t outsz)
{
	size_t kl = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " ");

			if (n >= outsz)
				n = outsz - 1;
			memcpy(out, p + kl + 1, n);
			out[n] = '\0';
			return true;
		}
		p += kl;
	}
	return false;
}

static int read_line(struct victim *v, char *out, size_t sz, int timeout_ms)
{
	long end = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(v->rbuf, '\n', v->rlen);
		struct pollfd p = { .fd = v->rep, .events = POLLIN };
		long left;
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - v->rbuf);
			size_t cp = l < sz - 1 ? l : sz - 1;

			memcpy(out, v->rbuf, cp);
			out[cp] = '\0';
			memmove(v->rbuf, nl + 1, v->rlen - l - 1);
			v->rlen -= l + 1;
			return 0;
		}
		left = end - now_ms();
		if (left <= 0) {
			snprintf(out, sz, "no reply within %d ms", timeout_ms);
			return -1;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (v->rlen == sizeof(v->rbuf))
			v->rlen = 0;
		n = read(v->rep, v->rbuf + v->rlen, sizeof(v->rbuf) - v->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(out, sz, "reply pipe closed (victim died?)");
			return -1;
		}
		v->rlen += (size_t)n;
	}
}

int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t sz, int timeout_ms)
{
	char buf[512];
	int n;

	if (v->pid <= 0) {
		snprintf(reply, sz, "victim not running");
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%s\n", cmd);
	if (write(v->ctl, buf, (size_t)n) != n) {
		snprintf(reply, sz, "cannot send '%s': %s", cmd, strerror(errno));
		return -1;
	}
	return read_line(v, reply, sz, timeout_ms);
}

int victim_expect(struct victim *v, const char *cmd, const char *want, char *reply, size_t sz)
{
	if (victim_cmd(v, cmd, reply, sz, REPLY_MS)) {
		t_fail("victim '%s': %s", cmd, reply);
		return -1;
	}
	if (strncmp(reply, want, strlen(want))) {
		t_fail("victim '%s' replied '%s'", cmd, reply);
		return -1;
	}
	return 0;
}

int victim_ctl(struct victim *v, const char *name, char *val, size_t sz)
{
	char cmd[256], reply[512];
	size_t pl;

	snprintf(cmd, sizeof(cmd), "ctl %s", name);
	if (victim_cmd(v, cmd, reply, sizeof(reply), REPLY_MS)) {
		t_fail("victim '%s': %s", cmd, reply);
		return -1;
	}
	pl = strlen(cmd);
	if (strncmp(reply, cmd, pl) || reply[pl] != ' ') {
		t_fail("victim '%s' replied '%s'", cmd, reply);
		return -1;
	}
	snprintf(val, sz, "%s", reply + pl + 1);
	return 0;
}

static void parse_tids(struct victim *v, const char *l)
{
	v->t_main = (pid_t)kv_long(l, "main", 0);
	v->t_read = (pid_t)kv_long(l, "read", 0);
	v->t_sleep = (pid_t)kv_long(l, "sleep", 0);
	v->t_epoll = (pid_t)kv_long(l, "epoll", 0);
	v->t_futex = (pid_t)kv_long(l, "futex", 0);
	v->t_regs = (pid_t)kv_long(l, "regs", 0);
	v->t_hammer = (pid_t)kv_long(l, "hammer", 0);
	v->t_ticker = (pid_t)kv_long(l, "ticker", 0);
	v->t_sig = (pid_t)kv_long(l, "sig", 0);
	v->xarena = (unsigned int)kv_long(l, "xarena", 0);
	if (!kv_str(l, "regs_mode", v->regs_mode, sizeof(v->regs_mode)))
		v->regs_mode[0] = '\0';
}

int victim_adopt(struct victim *v, char *why, size_t whysz)
{
	char line[1024];

	if (victim_cmd(v, "tids", line, sizeof(line), REPLY_MS) || strncmp(line, "tids ", 5)) {
		snprintf(why, whysz, "victim %d: 'tids' failed: %s", (int)v->pid, line);
		return -1;
	}
	parse_tids(v, line);
	victim_baseline(v);
	return 0;
}

/* victim_start_argv(), its directory named after name rather than argv[0] */
static int start_named(struct victim *v, const char *name, const char *const *argv,
		       const char *malloc_conf, const char *extra_env, unsigned int flags,
		       char *why, size_t whysz)
{
	char conf[256], env[512];
	const char *setenv_kv[8] = { NULL };
	int nenv = 0;
	static const char *const unset[] = { "MALLOC_CONF", "LD_PRELOAD", NULL };
	struct spawn_opts o = { .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	int ready[2], ctl[2], rep[2], pass[3], errfd;
	struct pollfd p;
	char c = 0;

	memset(v, 0, sizeof(*v));
	v->pid = -1;
	v->ctl = v->rep = -1;
	v->jemalloc = flags & VS_JEMALLOC;
	v->tick_from_ns = mono_ns(); /* its ticker's maximum covers its whole life */
	victim_seq++;
	snprintf(v->cwd, sizeof(v->cwd), "%s/v%u-%.40s", cfg.tmpdir, victim_seq, name);
	mkdir(v->cwd, 0755);
	snprintf(v->errpath, sizeof(v->errpath), "%s/stderr", v->cwd);
	errfd = open(v->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (errfd < 0) {
		snprintf(why, whysz, "%s: %s", v->errpath, strerror(errno));
		return -1;
	}
	if (pipe2(ready, O_CLOEXEC) || pipe2(ctl, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
		snprintf(why, whysz, "pipe: %s", strerror(errno));
		close(errfd);
		return -1;
	}
	pass[0] = ready[1];
	pass[1] = ctl[0];
	pass[2] = rep[1];
	o.pass_fds = pass;
	o.npass = 3;
	o.err_fd = errfd;
	o.out_fd = errfd;
	o.cwd = v->cwd;
	o.unsetenv_names = unset;
	if (malloc_conf) {
		snprintf(conf, sizeof(conf), "MALLOC_CONF=%s", malloc_conf);
		setenv_kv[nenv++] = conf;
	}
	if (extra_env) {
		/* several NAME=VALUE, one per line */
		snprintf(env, sizeof(env), "%s", extra_env);
		for (char *sv = NULL, *kv = strtok_r(env, "\n", &sv); kv && nenv < 7;
		     kv = strtok_r(NULL, "\n", &sv))
			setenv_kv[nenv++] = kv;
	}
	if (nenv)
		o.setenv_kv = setenv_kv;
	v->pid = spawn(argv, &o, why, whysz);
	close(errfd);
	close(ready[1]);
	close(ctl[0]);
	close(rep[1]);
	v->ctl = ctl[1];
	v->rep = rep[0];
	if (v->pid < 0) {
		close(ready[0]);
		victim_kill(v);
		return -1;
	}
	snprintf(v->spid, sizeof(v->spid), "%d", (int)v->pid);

	p.fd = ready[0];
	p.events = POLLIN;
	if (poll(&p, 1, 15000) <= 0 || read(ready[0], &c, 1) != 1 || c != 'R') {
		char *err = read_file_str(v->errpath);

		snprintf(why, whysz, "victim %s did not get ready%s%.200s", name,
			 err && *err ? ": " : "", err ? err : "");
		free(err);
		close(ready[0]);
		victim_kill(v);
		return -1;
	}
	close(ready[0]);
	if ((flags & VS_TIDS) && victim_adopt(v, why, whysz)) {
		victim_kill(v);
		return -1;
	}
	return 0;
}

bool victim_up(struct victim *v, const char *name, const char *malloc_conf, const char *extra_env,
	       bool fixture)
{
	char why[512];

	snprintf(why, sizeof(why), "%s/%s", cfg.victim_dir, name);
	if (fixture && access(why, X_OK)) {
		t_skip(false, "no %s fixture (make fixtures; A64_FIXTURES= leaves them out)", name);
		return false;
	}
	if (victim_start_env(v, name, malloc_conf, extra_env, why, sizeof(why))) {
		t_fail("%s", why);
		return false;
	}
	return true;
}

#define MI_LIB LIBDIR "libmimalloc.so.2"

bool mimalloc_up(struct victim *v, bool linked, const char *env)
{
	char pre[256];

	if (access(MI_LIB, R_OK)) {
		t_skip(true, "%s missing (apt-get install libmimalloc2.0)", MI_LIB);
		return false;
	}
	/* the name alone, as a user writes it: the dynamic linker finds the file */
	snprintf(pre, sizeof(pre), "LD_PRELOAD=libmimalloc.so.2%s%s", env ? "\n" : "", env ? env : "");
	return linked ? victim_up(v, "mimalloc_linked", NULL, env, false) :
			victim_up(v, "mimalloc_victim", NULL, pre, false);
}

int victim_start_argv(struct victim *v, const char *const *argv, const char *malloc_conf,
		      const char *extra_env, unsigned int flags, char *why, size_t whysz)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	return start_named(v, name, argv, malloc_conf, extra_env, flags, why, whysz);
}

int victim_start_wrapped(struct victim *v, const char *const *prefix, const char *name,
			 const char *malloc_conf, const char *extra_env, char *why, size_t whysz)
{
	const char *argv[40];
	char path[512];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", cfg.victim_dir, name);
	if (access(path, X_OK)) {
		snprintf(why, whysz, "victim %s: %s", path, strerror(errno));
		return -1;
	}
	while (prefix[n] && n < 35) {
		argv[n] = prefix[n];
		n++;
	}
	argv[n++] = path;
	argv[n++] = "3";
	argv[n++] = "4";
	argv[n++] = "5";
	argv[n] = NULL;
	return start_named(v, name, argv, malloc_conf, extra_env,
			   VS_TIDS | (strstr(name, "jemalloc") ? VS_JEMALLOC : 0), why, whysz);
}

int victim_start_env(struct victim *v, const char *name, const char *malloc_conf,
		     const char *extra_env, char *why, size_t whysz)
{
	static const char *const none[] = { NULL };

	return victim_start_wrapped(v, none, name, malloc_conf, extra_env, why, whysz);
}

int victim_start(struct victim *v, const char *name, const char *malloc_conf, char *why,
		 size_t whysz)
{
	return victim_start_env(v, name, malloc_conf, NULL, why, whysz);
}

/*
 * The control: a quiet victim heapctl never touches. Its ticker runs on the
 * same CPUs as the target's, so when both see a long gap in the same window
 * the machine stalled (load from elsewhere, a noisy host), not heapctl.
 * The control logs its long gaps with the time each ended, and is asked
 * about exactly the window the target's maximum covers, however many other
 * victims were checked in between.
 */
static struct victim control;
static bool control_up;
static unsigned long long control_from_ns;	/* victim_ticker_reset(NULL) */

static struct victim *control_victim(void)
{
	char why[512];

	if (control_up && control.pid > 0 && waitpid(control.pid, NULL, WNOHANG) == 0)
		return &control;
	if (control_up)
		victim_kill(&control);
	control_up = false;
	if (victim_start_env(&control, "jemalloc_victim", NULL, "VICTIM_NO_HAMMER=1", why,
			     sizeof(why)))
		return NULL;
	control_up = true;
	return &control;
}

void victim_ticker_reset(struct victim *v)
{
	char reply[64];

	control_victim(); /* up before the window opens */
	if (v) {
		v->tick_from_ns = mono_ns();
		victim_cmd(v, "tickreset", reply, sizeof(reply), REPLY_MS);
	} else {
		control_from_ns = mono_ns();
	}
}

/* The control's longest gap (of 4 ms or more; else 0) since since_ns, in us; -1: no control. */
static long control_gap(unsigned long long since_ns)
{
	char cmd[64], reply[64];
	long us;

	if (!control_up)
		return -1;
	snprintf(cmd, sizeof(cmd), "gapsince %llu", since_ns);
	if (victim_cmd(&control, cmd, reply, sizeof(reply), REPLY_MS) ||
	    sscanf(reply, "gapsince %ld", &us) != 1)
		return -1;
	return us;
}

long victim_control_gap(const struct victim *v)
{
	return control_gap(v ? v->tick_from_ns : control_from_ns);
}

bool victim_machine_stalled(const struct victim *v, long limit_us, long *cgap_us)
{
	long cgap = victim_control_gap(v);

	if (cgap_us)
		*cgap_us = cgap;
	return cgap >= limit_us / 2;
}

pid_t victim_control_pid(void)
{
	return control_victim() ? control.pid : -1;
}

void control_victim_drop(void)
{
	if (control_up)
		victim_kill(&control);
	control_up = false;
}

void victim_baseline(struct victim *v)
{
	free(v->base_fds);
	free(v->base_maps);
	v->base_fds = proc_fd_set(v->pid);
	v->base_maps = proc_odd_maps(v->pid, true);
}

bool victim_alive(struct victim *v)
{
	char reply[64];

	if (v->pid <= 0)
		return false;
	if (waitpid(v->pid, NULL, WNOHANG) == v->pid) {
		untrack_pid(v->pid);
		v->pid = -1;
		return false;
	}
	return !victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS) && !strcmp(reply, "pong");
}

static void victim_release(struct victim *v)
{
	if (v->ctl >= 0)
		close(v->ctl);
	if (v->rep >= 0)
		close(v->rep);
	v->ctl = v->rep = -1;
	free(v->base_fds);
	free(v->base_maps);
	v->base_fds = v->base_maps = NULL;
	v->pid = -1;
}

void victim_kill(struct victim *v)
{
	if (v->pid > 0)
		kill_wait(v->pid);
	victim_release(v);
}

int victim_stop(struct victim *v)
{
	char reply[64];
	int st = -1;

	if (v->pid <= 0)
		return -1;
	if (!victim_cmd(v, "quit", reply, sizeof(reply), REPLY_MS) &&
	    !wait_pid(v->pid, &st, 10000)) {
		victim_release(v);
		return st;
	}
	victim_kill(v);
	return -1;
}

/* Compares the fd set and the odd anonymous mappings with the baseline. */
static int check_proc(struct victim *v, char *why, size_t whysz)
{
	char *fds = proc_fd_set(v->pid);
	char *maps = proc_odd_maps(v->pid, true);
	char *extra = NULL;
	int ret = -1;

	if (!fds || !maps) {
		snprintf(why, whysz, "cannot read /proc/%d", (int)v->pid);
		goto out;
	}
	if (v->base_fds && strcmp(fds, v->base_fds)) {
		char *gone = lines_missing(fds, v->base_fds);

		extra = lines_missing(v->base_fds, fds);
		snprintf(why, whysz, "fd set changed: new [%.300s] gone [%.300s]", extra, gone);
		free(gone);
		goto out;
	}
	if (v->base_maps) {
		extra = lines_missing(v->base_maps, maps);
		if (*extra) {
			snprintf(why, whysz, "new executable/PROT_NONE anonymous mapping left: %.400s",
				 extra);
			goto out;
		}
	}
	ret = 0;
out:
	free(extra);
	free(fds);
	free(maps);
	return ret;
}

static const char *const eintr_keys[] = {
	"eintr_main", "eintr_read", "eintr_sleep", "eintr_epoll", "eintr_futex",
	"eintr_regs", "eintr_tick", "eintr_sig",
};

void victim_rebase_counters(struct victim *v)
{
	char st[2048], reply[600];
	size_t i;

	if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS))
		return;
	for (i = 0; i < sizeof(eintr_keys) / sizeof(eintr_keys[0]); i++)
		v->base_eintr[i] = kv_long(st, eintr_keys[i], 0);
	v->base_errors = kv_long(st, "errors", 0);
	v->sig_sent = (unsigned long)kv_long(st, "sig_count", 0);
	v->sig_sum = kv_long(st, "sig_sum", 0);
	/* lasterr clears the victim's record, so the next one is fresh. */
	victim_cmd(v, "lasterr", reply, sizeof(reply), REPLY_MS);
}

/* Counters in a state line that must not move. */
static int check_counters(struct victim *v, const char *st, unsigned int flags, char *why,
			  size_t whysz)
{
	char reply[600];
	size_t i;

	for (i = 0; i < sizeof(eintr_keys) / sizeof(eintr_keys[0]); i++) {
		long n = kv_long(st, eintr_keys[i], -1) - v->base_eintr[i];

		if ((flags & VC_EPOLL_EINTR_OK) && !strcmp(eintr_keys[i], "eintr_epoll"))
			continue;
		if (n != 0) {
			if (!strcmp(eintr_keys[i], "eintr_epoll"))
				snprintf(why, whysz,
					 "epoll_wait() in thread %d failed with EINTR %ld time(s)"
					 " (the kernel returns -EINTR, not a restart code, to a"
					 " PTRACE_INTERRUPTed epoll_wait)",
					 (int)v->t_epoll, n);
			else
				snprintf(why, whysz, "%s=%ld in the victim", eintr_keys[i], n);
			return -1;
		}
	}
	if (kv_long(st, "errors", -1) != v->base_errors) {
		if (victim_cmd(v, "lasterr", reply, sizeof(reply), REPLY_MS))
			reply[0] = '\0';
		snprintf(why, whysz, "victim recorded %ld error(s): %s",
			 kv_long(st, "errors", -1) - v->base_errors, reply);
		return -1;
	}
	return 0;
}

/* Signal count and sum must match what the harness queued, exactly. */
static int check_signals(struct victim *v, char *why, size_t whysz)
{
	long end = now_ms() + 5000;
	char st[2048];

	for (;;) {
		long cnt, sum;

		if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS)) {
			snprintf(why, whysz, "state: %.200s", st);
			return -1;
		}
		cnt = kv_long(st, "sig_count", -1);
		sum = kv_long(st, "sig_sum", -1);
		if (cnt > (long)v->sig_sent) {
			snprintf(why, whysz, "signals doubled: victim counted %ld, %lu were sent", cnt,
				 v->sig_sent);
			return -1;
		}
		if (cnt == (long)v->sig_sent) {
			if (sum != v->sig_sum) {
				snprintf(why, whysz, "signal si_value sum %ld, expected %ld", sum,
					 v->sig_sum);
				return -1;
			}
			return 0;
		}
		if (now_ms() > end) {
			snprintf(why, whysz, "signals lost: victim counted %ld of %lu (sum %ld of %ld)",
				 cnt, v->sig_sent, sum, v->sig_sum);
			return -1;
		}
		sleep_ms(10);
	}
}

static int check_all(struct victim *v, unsigned int flags)
{
	char why[1024], st[2048], reply[1024], cmd[64];
	unsigned int n;

	if (v->pid <= 0) {
		t_fail("victim is not running");
		return -1;
	}
	/* The kernel's view first, before we wake anything up. */
	if (proc_check_tasks(v->pid, false, why, sizeof(why))) {
		t_fail("target harmed: %s", why);
		return -1;
	}
	if (!(flags & VC_NO_PROC) && check_proc(v, why, sizeof(why))) {
		t_fail("target harmed: %s", why);
		return -1;
	}
	if (victim_cmd(v, "ping", reply, sizeof(reply), REPLY_MS) || strcmp(reply, "pong")) {
		t_fail("target harmed: no answer to ping (%s)", reply);
		return -1;
	}
	if (!v->jemalloc)
		return 0;
	if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS)) {
		t_fail("target harmed: state: %s", st);
		return -1;
	}
	if (check_counters(v, st, flags, why, sizeof(why))) {
		t_fail("target harmed: %s", why);
		return -1;
	}
	if (kv_long(st, "maxgap_us", 0) >= cfg.maxgap_us) {
		long gap = kv_long(st, "maxgap_us", 0), cgap, btid, bus;
		long window_ms = (long)((mono_ns() - v->tick_from_ns) / 1000000ull);
		char extra[160] = "", task[64] = "";

		if (victim_machine_stalled(v, cfg.maxgap_us, &cgap)) {
			t_note("ticker gap %ld us, but the untouched control process saw %ld us in"
			       " the same %ld ms: the machine stalled; not counted", gap, cgap,
			       window_ms);
		} else {
			/* the last borrow is named only when the thread it held is v's */
			if (t_last_borrow(&btid, &bus))
				snprintf(task, sizeof(task), "/proc/%d/task/%ld", (int)v->pid, btid);
			if (task[0] && !access(task, F_OK))
				snprintf(extra, sizeof(extra),
					 "; the last call that borrowed one of its threads held tid"
					 " %ld for %ld us", btid, bus);
			t_fail("target harmed: ticker thread %d saw a %ld us gap in %ld ms (limit"
			       " %ld us; the control's longest in that window: %ld us%s)",
			       (int)v->t_ticker, gap, window_ms, cfg.maxgap_us, cgap, extra);
			return -1;
		}
	}

	/* Every parked thread must take its next wake-up normally. */
	n = 1 + (v->feed_seq++ * 577u) % 4096u;
	snprintf(cmd, sizeof(cmd), "feed %u", n);
	if (victim_cmd(v, cmd, reply, sizeof(reply), REPLY_MS) || strncmp(reply, "read ok", 7)) {
		t_fail("target harmed: read thread: '%s' -> %s", cmd, reply);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "epoll %u", 4097u - n);
	if (victim_cmd(v, cmd, reply, sizeof(reply), REPLY_MS) || strncmp(reply, "epoll ok", 8)) {
		t_fail("target harmed: epoll thread: '%s' -> %s", cmd, reply);
		return -1;
	}
	if (victim_cmd(v, "futex", reply, sizeof(reply), REPLY_MS) || strcmp(reply, "futex ok")) {
		t_fail("target harmed: futex thread: %s", reply);
		return -1;
	}
	if (victim_cmd(v, "regs", reply, sizeof(reply), REPLY_MS) || strcmp(reply, "regs ok")) {
		t_fail("target harmed: register sentinel (%s): %s", v->regs_mode, reply);
		return -1;
	}
	if (victim_cmd(v, "sleepwait 1", reply, sizeof(reply), REPLY_MS) ||
	    strncmp(reply, "sleep ok", 8)) {
		t_fail("target harmed: sleep thread: %s", reply);
		return -1;
	}
	if (check_signals(v, why, sizeof(why))) {
		t_fail("target harmed: %s", why);
		return -1;
	}
	/* And nothing recorded a problem while we were poking it. */
	if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS)) {
		t_fail("target harmed: state: %s", st);
		return -1;
	}
	if (check_counters(v, st, flags, why, sizeof(why))) {
		t_fail("target harmed: %s", why);
		return -1;
	}
	victim_ticker_reset(v);
	return 0;
}

int victim_check(struct victim *v, unsigned int flags)
{
	int ret = check_all(v, flags);

	if (ret)
		v->tainted = true;
	return ret;
}

/* ---- the shared victim --------------------------------------------- */

static struct victim shared;
static bool shared_up;

#define SHARED_CONF "prof:true,prof_active:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"

struct victim *shared_victim(void)
{
	char why[512], reply[64];

	if (shared_up) {
		if (shared.pid > 0 && waitpid(shared.pid, NULL, WNOHANG) == 0 &&
		    !victim_cmd(&shared, "ping", reply, sizeof(reply), REPLY_MS) &&
		    !strcmp(reply, "pong")) {
			/* Do not blame this test for what an earlier one did. */
			if (shared.tainted) {
				victim_baseline(&shared);
				victim_rebase_counters(&shared);
				victim_ticker_reset(&shared);
				shared.tainted = false;
			}
			return &shared;
		}
		victim_kill(&shared);
		shared_up = false;
		t_note("shared victim was gone; started a new one");
	}
	if (victim_start(&shared, "jemalloc_victim", SHARED_CONF, why, sizeof(why))) {
		t_fail("%s", why);
		return NULL;
	}
	shared_up = true;
	/* Start from a clean ticker maximum: startup is not under test. */
	victim_ticker_reset(&shared);
	return &shared;
}

void shared_victim_drop(void)
{
	if (!shared_up)
		return;
	victim_kill(&shared);
	shared_up = false;
}

/* The victim's own view of a mallctl must equal want. */
int expect_ctl(struct victim *v, const char *name, const char *want, const char *after)
{
	char val[256];

	if (victim_ctl(v, name, val, sizeof(val)))
		return -1;
	if (strcmp(val, want)) {
		t_fail("after %s the target reads %s=%s, expected %s", after, name, val, want);
		return -1;
	}
	return 0;
}

/* Trimmed stdout of a run, for "get". */
void trimmed(const struct hres *r, char *out, size_t sz)
{
	const char *s = r->out;
	size_t n;

	while (*s == ' ' || *s == '\n' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	if (n >= sz)
		n = sz - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}
