// SPDX-License-Identifier: MIT
/*
 * Harm checks shared by the kill, torture and hostile-target suites.
 * See harm.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harm.h"

#define REPLY_MS cfg.reply_ms

/* ---- counters ------------------------------------------------------- */

void vcount_parse(struct vcount *c, const char *st)
{
	const char *p = st;

	c->errors = kv_long(st, "errors", -1);
	c->regs_bad = kv_long(st, "regs_bad", 0);
	c->eintr_epoll = kv_long(st, "eintr_epoll", 0);
	c->eintr = 0;
	while ((p = strstr(p, " eintr_"))) {
		const char *eq = strchr(p, '=');

		if (!eq)
			break;
		c->eintr += strtol(eq + 1, NULL, 10);
		p = eq;
	}
}

int vcount_get(struct victim *v, struct vcount *c, char *why, size_t whysz)
{
	char st[4096];

	if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS) || strncmp(st, "state ", 6)) {
		snprintf(why, whysz, "state: %.300s", st);
		return -1;
	}
	vcount_parse(c, st);
	return 0;
}

static int expect(struct victim *v, const char *cmd, const char *want, char *why, size_t whysz)
{
	char reply[1024];

	if (victim_cmd(v, cmd, reply, sizeof(reply), REPLY_MS) ||
	    strncmp(reply, want, strlen(want))) {
		snprintf(why, whysz, "'%s' -> %.400s", cmd, reply);
		return -1;
	}
	return 0;
}

int wake_check(struct victim *v, const struct vcount *base, bool extra, char *why, size_t whysz)
{
	static unsigned int seq;
	char cmd[64], lasterr[600];
	struct vcount now;
	unsigned int n = 1 + (seq++ * 577u) % 4096u;

	snprintf(cmd, sizeof(cmd), "feed %u", n);
	if (expect(v, cmd, "read ok", why, whysz))
		return -1;
	snprintf(cmd, sizeof(cmd), "epoll %u", 4097u - n);
	if (expect(v, cmd, "epoll ok", why, whysz) || expect(v, "futex", "futex ok", why, whysz) ||
	    expect(v, "regs", "regs ok", why, whysz) ||
	    expect(v, "sleepwait 1", "sleep ok", why, whysz))
		return -1;
	if (extra && expect(v, "check", "check ok", why, whysz))
		return -1;
	if (vcount_get(v, &now, why, whysz))
		return -1;
	if (now.errors != base->errors || now.eintr != base->eintr ||
	    now.regs_bad != base->regs_bad) {
		if (victim_cmd(v, "lasterr", lasterr, sizeof(lasterr), REPLY_MS))
			lasterr[0] = '\0';
		snprintf(why, whysz, "victim counted %ld new error(s), %ld EINTR, %ld register "
			 "change(s): %.300s", now.errors - base->errors, now.eintr - base->eintr,
			 now.regs_bad - base->regs_bad, lasterr);
		return -1;
	}
	return 0;
}

/* ---- mappings --------------------------------------------------------- */

char *maps_snap(pid_t pid)
{
	char path[64], *s, *line, *save = NULL, *out;
	size_t cap, len = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	s = read_file_str(path);
	if (!s)
		return NULL;
	cap = strlen(s) + 1;
	out = malloc(cap);
	if (!out) {
		free(s);
		return NULL;
	}
	out[0] = '\0';
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char range[64], perms[8];
		unsigned long inode;
		int off = 0, n;

		if (sscanf(line, "%63s %7s %*x %*x:%*x %lu %n", range, perms, &inode, &off) < 3)
			continue;
		n = snprintf(out + len, cap - len, "%s %s %lu %s\n", range, perms, inode,
			     off ? line + off : "");
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
	free(s);
	return out;
}

struct map {
	unsigned long lo, hi, inode;
	char perms[8];
	char path[256];
};

static size_t parse_maps(const char *snap, struct map *m, size_t max)
{
	size_t n = 0;
	const char *p = snap;

	while (p && *p && n < max) {
		int off = 0;

		m[n].path[0] = '\0';
		if (sscanf(p, "%lx-%lx %7s %lu %n", &m[n].lo, &m[n].hi, m[n].perms, &m[n].inode,
			   &off) >= 4) {
			size_t l = strcspn(p + off, "\n");

			if (l >= sizeof(m[n].path))
				l = sizeof(m[n].path) - 1;
			memcpy(m[n].path, p + off, l);
			m[n].path[l] = '\0';
			n++;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static bool in_snap(const struct map *m, const struct map *base, size_t nb)
{
	for (size_t i = 0; i < nb; i++)
		if (base[i].lo == m->lo && base[i].hi == m->hi && !strcmp(base[i].perms, m->perms) &&
		    base[i].inode == m->inode)
			return true;
	return false;
}

/*
 * glibc's heap of a thread arena: HEAP_MAX_SIZE (64 MiB on 64-bit) mapped at
 * a multiple of itself, rw- from the start as far as it is in use and
 * PROT_NONE for the rest.  Is m[i] such a rest?
 */
#define GLIBC_HEAP_MAX (64UL << 20)
static bool glibc_heap_rest(const struct map *m, size_t i)
{
	const struct map *b = i ? &m[i - 1] : NULL;

	return !strcmp(m[i].perms, "---p") && m[i].hi % GLIBC_HEAP_MAX == 0 && b &&
	       b->inode == 0 && b->path[0] != '[' && !strcmp(b->perms, "rw-p") && b->hi == m[i].lo &&
	       b->lo <= m[i].hi - GLIBC_HEAP_MAX;
}

int maps_classify(pid_t pid, const char *base, struct leftovers *lo)
{
	enum { MAXM = 16384 };
	struct map *b = calloc(MAXM, sizeof(*b)), *m = calloc(MAXM, sizeof(*m));
	char *now = maps_snap(pid);
	size_t nb, nm, len = 0;

	memset(lo, 0, sizeof(*lo));
	if (!b || !m || !now) {
		free(b);
		free(m);
		free(now);
		return -1;
	}
	nb = parse_maps(base, b, MAXM);
	nm = parse_maps(now, m, MAXM);
	for (size_t i = 0; i < nm; i++) {
		bool anon = m[i].inode == 0 && m[i].path[0] != '[';

		if (!anon || in_snap(&m[i], b, nb))
			continue;
		if (glibc_heap_rest(m, i))
			continue;
		if (strchr(m[i].perms, 'x') || !strcmp(m[i].perms, "---p")) {
			int n;

			lo->odd++;
			n = snprintf(lo->odd_desc + len, sizeof(lo->odd_desc) - len, "%s%lx-%lx %s",
				     len ? "; " : "", m[i].lo, m[i].hi, m[i].perms);
			if (n > 0 && (size_t)n < sizeof(lo->odd_desc) - len)
				len += (size_t)n;
		}
	}
	free(b);
	free(m);
	free(now);
	return 0;
}

unsigned int dump_dirs_now(pid_t pid, bool rm, unsigned int *profiles)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
	unsigned int n = 0;

	if (profiles)
		*profiles = 0;
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		char pat[256];
		glob_t g;

		/* heapctl's private directory (or, before it had one, a bare file) */
		snprintf(pat, sizeof(pat), "/proc/%d/root%s/.heapctl-%d-*", (int)pid, dirs[d],
			 (int)pid);
		if (glob(pat, GLOB_MARK, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			size_t l = strlen(g.gl_pathv[i]);

			n++;
			if (l && g.gl_pathv[i][l - 1] == '/') {
				char in[320];
				glob_t h;

				snprintf(in, sizeof(in), "%s*", g.gl_pathv[i]);
				if (!glob(in, 0, NULL, &h)) {
					for (size_t k = 0; k < h.gl_pathc; k++) {
						if (profiles)
							(*profiles)++;
						if (rm)
							unlink(h.gl_pathv[k]);
					}
					globfree(&h);
				}
				if (rm)
					rmdir(g.gl_pathv[i]);
			} else {
				if (profiles)
					(*profiles)++;
				if (rm)
					unlink(g.gl_pathv[i]);
			}
		}
		globfree(&g);
	}
	return n;
}

unsigned int dump_leftovers(pid_t pid, bool rm, unsigned int *profiles)
{
	/* heapctl's guardian removes its directory just after heapctl's death */
	for (long end = now_ms() + 2000; dump_dirs_now(pid, false, NULL) && now_ms() < end;)
		sleep_ms(5);
	return dump_dirs_now(pid, rm, profiles);
}

int fds_settle(pid_t pid, const char *base, long ms, char *why, size_t whysz)
{
	long end = now_ms() + ms;

	for (;;) {
		char *fds = proc_fd_set(pid);

		if (fds && !strcmp(fds, base)) {
			free(fds);
			return 0;
		}
		if (now_ms() >= end) {
			char *extra = fds ? lines_missing(base, fds) : NULL;
			char *gone = fds ? lines_missing(fds, base) : NULL;

			snprintf(why, whysz, "fd set changed: new [%.300s] gone [%.300s]",
				 extra ? extra : "?", gone ? gone : "?");
			free(extra);
			free(gone);
			free(fds);
			return -1;
		}
		free(fds);
		sleep_ms(5);
	}
}

/* ---- the signal storm ------------------------------------------------- */

static void storm(pid_t target, const pid_t *tids, int ntids, int nsig, int burst,
		  long period_us, int stop_fd, int res_fd)
{
	unsigned long count = 0, full = 0;
	long sum = 0;
	unsigned int k = 0;
	char buf[96];
	int n;

	for (;;) {
		struct pollfd p = { .fd = stop_fd, .events = POLLIN };

		for (int b = 0; b < burst; b++, k++) {
			siginfo_t si;
			int sig = SIGRTMIN + 1 + (int)(k % (unsigned int)nsig);
			int val = (int)(count % 1000) + 1;
			long r;

			memset(&si, 0, sizeof(si));
			si.si_signo = sig;
			si.si_code = SI_QUEUE;
			si.si_pid = getpid();
			si.si_uid = getuid();
			si.si_value.sival_int = val;
			if (ntids > 0 && k % 2)
				r = syscall(SYS_rt_tgsigqueueinfo, target, tids[(k / 2) % (unsigned)ntids],
					    sig, &si);
			else
				r = syscall(SYS_rt_sigqueueinfo, target, sig, &si);
			if (r == 0) {
				count++;
				sum += val;
			} else if (errno == EAGAIN) {
				full++;
			} else if (errno != ESRCH) {
				n = snprintf(buf, sizeof(buf), "error %d\n", errno);
				if (write(res_fd, buf, (size_t)n) < 0)
					_exit(2);
				_exit(1);
			}
		}
		if (poll(&p, 1, (int)(period_us / 1000)) > 0)
			break;
		if (period_us < 1000) {
			struct timespec ts = { 0, period_us * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	n = snprintf(buf, sizeof(buf), "%lu %ld %lu\n", count, sum, full);
	if (write(res_fd, buf, (size_t)n) < 0)
		_exit(2);
	_exit(0);
}

int sigstorm_start(struct sigstorm *s, pid_t target, const pid_t *tids, int ntids, int nsig,
		   int burst, long period_us)
{
	int stop[2], res[2];

	s->pid = -1;
	if (pipe2(stop, O_CLOEXEC) || pipe2(res, O_CLOEXEC))
		return -1;
	fflush(stdout);
	s->pid = fork();
	if (s->pid == 0) {
		close(stop[1]);
		close(res[0]);
		storm(target, tids, ntids, nsig, burst, period_us, stop[0], res[1]);
		_exit(0);
	}
	close(stop[0]);
	close(res[1]);
	if (s->pid < 0) {
		close(stop[1]);
		close(res[0]);
		return -1;
	}
	track_pid(s->pid);
	s->stop_fd = stop[1];
	s->res_fd = res[0];
	return 0;
}

int sigstorm_stop(struct sigstorm *s, unsigned long *count, long *sum)
{
	unsigned long c = 0, full = 0;
	char buf[128];
	long su = 0;
	ssize_t n;
	int st = 0;

	if (s->pid <= 0)
		return -1;
	close(s->stop_fd);
	if (wait_pid(s->pid, &st, 10000)) {
		kill_wait(s->pid);
		close(s->res_fd);
		s->pid = -1;
		return -1;
	}
	n = read(s->res_fd, buf, sizeof(buf) - 1);
	close(s->res_fd);
	s->pid = -1;
	buf[n > 0 ? n : 0] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) || sscanf(buf, "%lu %ld %lu", &c, &su, &full) < 2)
		return -1;
	*count += c;
	*sum += su;
	return 0;
}

int sig_tally(struct victim *v, unsigned long count, long sum, long ms, long *got, char *why,
	      size_t whysz)
{
	long end = now_ms() + ms;
	char st[4096];

	for (;;) {
		long cnt, s;

		if (victim_cmd(v, "state", st, sizeof(st), REPLY_MS)) {
			snprintf(why, whysz, "state: %.200s", st);
			return -1;
		}
		cnt = kv_long(st, "sig_count", -1);
		s = kv_long(st, "sig_sum", -1);
		*got = cnt;
		if (cnt > (long)count) {
			snprintf(why, whysz, "signals duplicated: victim counted %ld, %lu were sent",
				 cnt, count);
			return -1;
		}
		if (cnt == (long)count) {
			if (s != sum) {
				snprintf(why, whysz, "signal si_value sum %ld, expected %ld", s, sum);
				return -1;
			}
			return 0;
		}
		if (now_ms() > end) {
			snprintf(why, whysz, "signals lost: victim counted %ld of %lu (sum %ld of %ld)",
				 cnt, count, s, sum);
			return -1;
		}
		sleep_ms(10);
	}
}

/* ---- randomness ------------------------------------------------------- */

static unsigned long long rstate, rseed;

unsigned long long rnd_seed(void)
{
	if (!rseed) {
		const char *e = getenv("ITEST_SEED");
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		rseed = e && *e ? strtoull(e, NULL, 0) :
				  (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20) ^
					  (unsigned long long)getpid();
		if (!rseed)
			rseed = 1;
		rstate = rseed;
	}
	return rseed;
}

unsigned long long rnd_next(void)
{
	rnd_seed();
	/* xorshift64* */
	rstate ^= rstate >> 12;
	rstate ^= rstate << 25;
	rstate ^= rstate >> 27;
	return rstate * 0x2545F4914F6CDD1DULL;
}

unsigned long rnd_below(unsigned long n)
{
	return n ? (unsigned long)(rnd_next() % n) : 0;
}

long env_long(const char *name, long dflt)
{
	char var[64];
	const char *e;
	long v;

	snprintf(var, sizeof(var), "ITEST_%s", name);
	e = getenv(var);
	v = e ? strtol(e, NULL, 10) : 0;
	return v > 0 ? v : dflt;
}
