// SPDX-License-Identifier: MIT
/*
 * mimalloc_victim: alloc_victim, started with LD_PRELOAD=libmimalloc.so.2,
 * that also says what mimalloc says of itself.  It is built without
 * mimalloc (its functions are found with dlsym), so that every build,
 * arm64's too, has it.
 *
 * Extra commands (one reply line each):
 *   mimi        mimi version=N commit=B peak_commit=B peak_rss=B reserved=B rss=KIB:
 *               mi_version(), mi_process_info(), and the current column of
 *               the "reserved" row of mi_stats_print_out()'s text; or
 *               "mimi none" without mimalloc
 *   miopt N     miopt value=V: mi_option_get(N), or "miopt none"
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>

static bool mimalloc_cmd(int fd, const char *cmd, const char *arg);
#define ALLOC_VICTIM_MORE mimalloc_cmd
#include "alloc_victim.c"

struct text {
	char buf[8192];
	size_t len;
};

static void text_out(const char *msg, void *arg)
{
	struct text *t = arg;
	size_t n = strlen(msg);

	if (t->len + n < sizeof(t->buf)) {
		memcpy(t->buf + t->len, msg, n + 1);
		t->len += n;
	}
}

/*
 * The amount in column col (0: peak ... 3: current) of row "name:" of
 * mimalloc's statistics: "288.0 MiB", "512 B" or "0" (mi_printf_amount()
 * in its stats.c); -1 if absent.
 */
static double stats_amount(const char *text, const char *name, int col)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB" };
	const char *p = strstr(text, name);
	double v = -1;

	if (!p)
		return -1;
	p += strlen(name);
	for (int i = 0; i <= col; i++) {
		char unit[8] = "";
		int n = 0;

		if (sscanf(p, "%lf%n", &v, &n) != 1)
			return -1;
		p += n;
		/* a unit follows, unless the amount is a bare 0 */
		if (sscanf(p, " %7[A-Za-z]%n", unit, &n) == 1)
			p += n;
		for (int u = 0; u < 4 && unit[0]; u++)
			if (!strcmp(unit, units[u]))
				for (int k = 0; k < u; k++)
					v *= 1024;
	}
	return v;
}

static bool mimalloc_cmd(int fd, const char *cmd, const char *arg)
{
	int (*version)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mi_version");
	void (*info)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
		     size_t *) = (void (*)(size_t *, size_t *, size_t *, size_t *, size_t *,
					   size_t *, size_t *, size_t *))dlsym(RTLD_DEFAULT,
									       "mi_process_info");
	void (*print)(void (*)(const char *, void *), void *) =
		(void (*)(void (*)(const char *, void *), void *))dlsym(RTLD_DEFAULT,
									"mi_stats_print_out");
	long (*opt_get)(int) = (long (*)(int))dlsym(RTLD_DEFAULT, "mi_option_get");

	if (!strcmp(cmd, "mimi")) {
		static struct text t;
		size_t e, u, s, rss, peak_rss, commit, peak_commit, faults;

		if (!version || !info || !print) {
			vreply(fd, "mimi none");
			return true;
		}
		info(&e, &u, &s, &rss, &peak_rss, &commit, &peak_commit, &faults);
		t.len = 0;
		t.buf[0] = 0;
		print(text_out, &t);
		vreply(fd, "mimi version=%d commit=%zu peak_commit=%zu peak_rss=%zu reserved=%.0f rss=%ld",
		       version(), commit, peak_commit, peak_rss, stats_amount(t.buf, "reserved:", 3),
		       rss_kib());
	} else if (!strcmp(cmd, "miopt")) {
		if (opt_get)
			vreply(fd, "miopt value=%ld", opt_get((int)strtol(arg, NULL, 10)));
		else
			vreply(fd, "miopt none");
	} else {
		return false;
	}
	return true;
}
