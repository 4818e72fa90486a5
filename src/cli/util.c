// SPDX-License-Identifier: MIT
/*
 * util.c: reporting, target lifetime, number parsing and output helpers
 * shared by the heapctl commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"

/* ---- logging ---------------------------------------------------------- */

static enum hc_log_level log_level = HC_LOG_WARN;

static const char *level_name(enum hc_log_level level)
{
	switch (level) {
	case HC_LOG_ERR:
		return "error";
	case HC_LOG_WARN:
		return "warning";
	case HC_LOG_INFO:
		return "info";
	case HC_LOG_DEBUG:
		return "debug";
	case HC_LOG_TRACE:
		return "trace";
	}
	return "log";
}

/*
 * The library's sink.  Multi-line messages (register dumps at -vvv) get the
 * prefix on every line so `grep 'heapctl: debug'` keeps working.
 */
static void log_sink(enum hc_log_level level, const char *msg)
{
	const char *p = msg, *nl;
	const char *name = level_name(level);

	if (level > log_level)
		return;
	do {
		int n;

		nl = strchr(p, '\n');
		n = nl ? (int)(nl - p) : (int)strlen(p);
		if (n || !nl)
			fprintf(stderr, "heapctl: %s: %.*s\n", name, n, p);
		p = nl ? nl + 1 : NULL;
	} while (p && *p);
}

void cli_log_init(int verbose)
{
	static const enum hc_log_level levels[] = { HC_LOG_WARN, HC_LOG_INFO, HC_LOG_DEBUG,
						    HC_LOG_TRACE };

	if (verbose < 0)
		verbose = 0;
	if (verbose > 3)
		verbose = 3;
	log_level = levels[verbose];
	hc_log_set(log_sink, log_level);
}

void cli_log(enum hc_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_sink(level, buf);
}

int cli_fail(const struct cli_env *env, const struct hc_err *err)
{
	const char *msg = err->msg[0] ? err->msg : hc_err_name(err->code);
	const char *hint = err->hint[0] ? err->hint : hc_err_default_hint(err->code);
	bool usage = err->code == HC_E_USAGE;

	cli_flush();
	fprintf(stderr, "heapctl: error: %s\n", msg);
	/* The library refusing what the user typed is a usage error: point at the command. */
	if (usage && env && env->cmd && (!hint || !strcmp(hint, hc_err_default_hint(err->code)))) {
		char buf[96];

		fprintf(stderr, "hint: %s\n", cli_help_hint(env->cmd, NULL, buf, sizeof(buf)));
	} else if (hint && hint[0])
		fprintf(stderr, "hint: %s\n", hint);
	cli_log(HC_LOG_DEBUG, "error code %s, errno %d%s%s", hc_err_name(err->code),
		err->sys_errno, err->sys_errno ? " " : "",
		err->sys_errno ? strerror(err->sys_errno) : "");
	return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

static int vusage(const char *hint, const char *fmt, va_list ap)
{
	cli_flush();
	fputs("heapctl: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nhint: %s\n", hint);
	return CLI_EXIT_USAGE;
}

const char *cli_help_hint(const struct cli_cmd *cmd, const char *pre, char *buf, size_t len)
{
	snprintf(buf, len, "%s%ssee 'heapctl %s%s--help'", pre ? pre : "", pre ? " " : "",
		 cmd ? cmd->name : "", cmd ? " " : "");
	return buf;
}

int cli_usage(const struct cli_env *env, const char *fmt, ...)
{
	char hint[96];
	va_list ap;
	int rc;

	cli_help_hint(env ? env->cmd : NULL, NULL, hint, sizeof(hint));
	va_start(ap, fmt);
	rc = vusage(hint, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_usage_hint(const char *hint, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vusage(hint, fmt, ap);
	va_end(ap);
	return rc;
}

/* Benchmarks parse this exact line; keep the format stable. */
void cli_timing(const struct cli_env *env, const struct hc_target *t)
{
	struct hc_timing tm;

	if (env->verbose < 1)
		return;
	memset(&tm, 0, sizeof(tm));
	hc_target_timing(t, &tm);
	if (!tm.tid)
		return;
	fprintf(stderr, "heapctl: info: borrowed tid %d for %llu us (%u ptrace stops)\n",
		(int)tm.tid, (unsigned long long)tm.paused_us, tm.stops);
	if (tm.attempts > 1)
		cli_log(HC_LOG_DEBUG, "safe point found after %u attempts", tm.attempts);
	{
		uint64_t known = tm.stop_us + tm.regs_us + tm.mem_us + tm.check_us;

		cli_log(HC_LOG_INFO,
			"the pause: %llu us in stops, %llu us registers, %llu us memory, %llu us "
			"safe-point check, %llu us heapctl's own work",
			(unsigned long long)tm.stop_us, (unsigned long long)tm.regs_us,
			(unsigned long long)tm.mem_us, (unsigned long long)tm.check_us,
			(unsigned long long)(tm.paused_us > known ? tm.paused_us - known : 0));
	}
}

/* ---- stdout ------------------------------------------------------------ */

/*
 * stdio forgets why a write failed once the error flag is set, and EPIPE
 * ("| head" went away) must not be reported like a full disk: keep the
 * first errno here.
 */
static int stdout_err;

void cli_stdout_failed(int err)
{
	if (!stdout_err)
		stdout_err = err ? err : EIO;
}

int cli_flush(void)
{
	errno = 0;
	if (fflush(stdout) == EOF || ferror(stdout)) {
		cli_stdout_failed(errno);
		return -1;
	}
	return 0;
}

int cli_stdout_errno(void)
{
	return stdout_err;
}

/* ---- target lifetime -------------------------------------------------- */

/*
 * The signals a terminal or a supervisor sends are held from open to close:
 * the library sees them (it waits for them alongside the target's stops),
 * finishes the call in flight, restores the target and fails with
 * HC_E_CANCELLED; then heapctl says so and dies of the signal.  Blocking
 * (not catching) keeps the library's waits free of EINTR.  SIGTTOU is held
 * too, so heapctl is not stopped mid-call.  A SIGKILL of the process the
 * user started reaches this one as SIGTERM (keeper.c); even a SIGKILL of
 * this one leaves the target whole (see arch/arch.h).
 */
static sigset_t saved_mask;
static int held;

const int cli_term_sigs[CLI_NTERM] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

void cli_term_sigaddset(sigset_t *set)
{
	for (int i = 0; i < CLI_NTERM; i++)
		sigaddset(set, cli_term_sigs[i]);
}

static void hold_signals(void)
{
	sigset_t set;

	if (held++)
		return;
	sigemptyset(&set);
	cli_term_sigaddset(&set);
	sigaddset(&set, SIGTSTP);
	sigaddset(&set, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &set, &saved_mask);
}

static void release_signals(void)
{
	sigset_t pending;

	if (held <= 0 || --held)
		return;
	if (sigpending(&pending) == 0)
		for (int i = 0; i < CLI_NTERM; i++)
			if (sigismember(&pending, cli_term_sigs[i]) == 1) {
				fflush(stdout);
				fprintf(stderr, "heapctl: stopping on SIG%s; the target was left as it was\n",
					sigabbrev_np(cli_term_sigs[i]));
				break;
			}
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}

struct hc_target *cli_open(const struct cli_env *env, pid_t pid, struct hc_err *err)
{
	struct hc_target *t;

	hold_signals();
	t = hc_target_open(pid, &env->topts, err);
	if (!t)
		release_signals();
	return t;
}

void cli_close(struct hc_target *t)
{
	if (!t)
		return;
	hc_target_close(t);
	release_signals();
}

enum cli_prof_kind cli_prof_kind(const char *allocator)
{
	if (!allocator)
		return CLI_PROF_NONE;
	if (!strcmp(allocator, "jemalloc"))
		return CLI_PROF_JEMALLOC;
	if (!strcmp(allocator, "tcmalloc"))
		return CLI_PROF_GPERF;
	if (!strcmp(allocator, "tcmalloc_minimal"))
		return CLI_PROF_MINIMAL;
	return CLI_PROF_NONE;
}

/* ---- parsing ---------------------------------------------------------- */

/* Plain decimal only: no sign, no blanks, no 0x; strtoul would take all three. */
int cli_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t mul;
	} units[] = {
		{ "", 1 },	     { "B", 1 },	     { "K", 1ull << 10 }, { "KiB", 1ull << 10 },
		{ "KB", 1ull << 10 }, { "M", 1ull << 20 }, { "MiB", 1ull << 20 },
		{ "MB", 1ull << 20 }, { "G", 1ull << 30 }, { "GiB", 1ull << 30 },
		{ "GB", 1ull << 30 }, { "T", 1ull << 40 }, { "TiB", 1ull << 40 },
		{ "TB", 1ull << 40 },
	};
	double v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(end, units[i].unit)) {
			double b = v * (double)units[i].mul;

			if (b < 1 || b > 1e18)
				return -1;
			*out = (uint64_t)b;
			return 0;
		}
	return -1;
}

/* Seconds, fractions allowed ("0.5"); at least 1 ms, at most UINT_MAX ms. */
int cli_parse_seconds(const char *s, unsigned int *ms)
{
	double v, whole;
	char *end;

	/* A leading digit or dot rules out "nan", "inf", signs and blanks. */
	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v > 0) || v * 1000.0 > (double)UINT_MAX)
		return -1;
	/* Round up by hand: libm is not linked. */
	v *= 1000.0;
	whole = (double)(unsigned int)v;
	*ms = (unsigned int)whole + (whole < v);
	if (!*ms)
		*ms = 1;
	return 0;
}

/* ---- formatting ------------------------------------------------------- */

void cli_size_parts(uint64_t n, char *num, size_t len, const char **unit)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n / 1024.0;
	unsigned int i = 0;

	if (n < 1024) {
		snprintf(num, len, "%llu", (unsigned long long)n);
		*unit = "B";
		return;
	}
	/* 1023.97 would print as "1024.0"; move up a unit instead. */
	while (v >= 1023.95 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		i++;
	}
	snprintf(num, len, "%.1f", v);
	*unit = units[i];
}

const char *cli_size(uint64_t n, char *buf, size_t len)
{
	const char *unit;
	char num[32];

	cli_size_parts(n, num, sizeof(num), &unit);
	snprintf(buf, len, "%s %s", num, unit);
	return buf;
}

ssize_t cli_read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int cli_read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = cli_read_small(path, buf, len);
	if (n < 0) {
		snprintf(buf, len, "?");
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int cli_read_exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, len - 1);
	if (n < 0) {
		buf[0] = '\0';
		return -1;
	}
	buf[n] = '\0';
	return 0;
}

/* Quote s for a POSIX shell, only if it needs it, so hints can be pasted. */
void cli_shell_quote(FILE *f, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789_./-+:,@%=";

	if (*s && strspn(s, safe) == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

const char *cli_yesno(bool b)
{
	return b ? "yes" : "no";
}

const char *cli_bool(bool b)
{
	return b ? "true" : "false";
}

/* ,"sampler":{...}: heapctl's sampler as prof status --json and info --json show it */
void cli_sampler_json(const struct hc_sampler *s)
{
	printf(",\"sampler\":{\"installed\":%s,\"enabled\":%s,\"kept\":%s,\"interval\":%llu,"
	       "\"samples\":%llu,\"live_samples\":%llu,\"stacks\":%llu,\"dropped\":%llu,"
	       "\"no_stack\":%llu,\"hooks\":%u,\"inline_hooks\":%u,\"freestanding\":%s,"
	       "\"hooks_lost\":%u,\"objects\":[",
	       cli_bool(s->installed), cli_bool(s->enabled), cli_bool(s->kept),
	       (unsigned long long)s->interval,
	       (unsigned long long)s->samples, (unsigned long long)s->live,
	       (unsigned long long)s->stacks, (unsigned long long)s->dropped,
	       (unsigned long long)s->no_stack, s->hooks, s->inlined, cli_bool(s->freestanding), s->lost);
	for (unsigned i = 0; i < s->nobjs; i++) {
		printf("%s{\"path\":", i ? "," : "");
		hc_json_str(stdout, s->objs[i].path);
		printf(",\"hooks\":%u}", s->objs[i].hooks);
	}
	printf("],\"loadable\":%s", cli_bool(!s->cannot_load));
	if (s->cannot_load) {
		fputs(",\"why\":", stdout);
		hc_json_str(stdout, s->why);
		fputs(",\"hint\":", stdout);
		hc_json_str(stdout, s->hint);
	}
	putchar('}');
}

/*
 * "; N samples, one per P on average" for the profile at path, or "" (not
 * one heapctl can read, or gperftools' record of every allocation): how
 * much stands behind its figures (docs/report.md, "How sure").  *info
 * (may be NULL) gets the profile's summary, zeroed if it cannot be read.
 */
const char *cli_samples_said(const char *path, char *out, size_t len, struct hc_prof_info *info)
{
	struct hc_err err = { 0 };
	struct hc_prof *p = hc_prof_load(path, &err);
	struct hc_prof_info in;
	char per[48];

	out[0] = '\0';
	memset(&in, 0, sizeof(in));
	if (p) {
		hc_prof_info(p, &in);
		hc_prof_free(p);
	}
	if (in.period)
		snprintf(out, len, "; %.0f samples, one per %s on average", in.samples,
			 cli_size(in.period, per, sizeof(per)));
	if (info)
		*info = in;
	return out;
}
