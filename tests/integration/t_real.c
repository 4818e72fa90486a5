// SPDX-License-Identifier: MIT
/*
 * Real programs written elsewhere, profiled by heapctl while they serve
 * (tests/real/static-programs.sh, one case per test): redis-server linked
 * with musl, dynamic and static, under redis-benchmark; busybox httpd and
 * bash, static, from Debian's sources; Debian's stripped busybox-static,
 * bash-static and dar_static, refused.  The programs are built apart
 * ('make real-programs', a few minutes: never by 'make test') into the
 * build directory's real/: a test whose program is not there skips,
 * saying how to build it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

static void run_case(const char *name)
{
	char root[PATH_MAX], script[PATH_MAX + 64], hc[PATH_MAX + 16], real[PATH_MAX + 16];
	char tmp[300];
	const char *argv[] = { "env", hc, real, tmp, script, name, NULL };
	struct hres r = { 0 };
	char *slash, *line, *fail_line = NULL, *skip_line = NULL;
	size_t n;

	/* heapctl is ROOT/BUILD/heapctl: the script is ROOT/tests/real/, the programs BUILD/real/ */
	snprintf(root, sizeof(root), "%s", cfg.heapctl);
	slash = strrchr(root, '/');
	if (!slash) {
		t_fail("heapctl's path %s", cfg.heapctl);
		return;
	}
	*slash = 0;
	snprintf(real, sizeof(real), "REAL_DIR=%s/real", root);
	slash = strrchr(root, '/');
	if (slash)
		*slash = 0;
	snprintf(script, sizeof(script), "%s/tests/real/static-programs.sh", root);
	snprintf(hc, sizeof(hc), "HEAPCTL=%s", cfg.heapctl);
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s", cfg.tmpdir);
	if (access(script, X_OK)) {
		t_skip(false, "no %s next to heapctl's build directory", script);
		return;
	}
	run_prog(&r, argv, 150);
	for (line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		n = strcspn(line, "\n");
		if (!strncmp(line, "FAIL ", 5) && !fail_line)
			fail_line = line;
		else if (!strncmp(line, "SKIP ", 5))
			skip_line = line;
		else if (!strncmp(line, "  [", 3) || !strncmp(line, "      ", 6))
			t_note("%.*s", (int)(n < 300 ? n : 300), line);
	}
	/* the first "[case] FAIL: reason", else the "FAIL case" line */
	if (hres_exit(&r) != 0) {
		const char *why = strstr(r.out, "] FAIL: ");

		if (why) {
			why += 8;
			t_fail("%.*s", (int)strcspn(why, "\n"), why);
		} else if (fail_line) {
			t_fail("%.*s", (int)strcspn(fail_line, "\n"), fail_line);
		} else {
			t_fail("%s: %s %.400s", script, hres_desc(&r), r.out);
		}
	} else if (skip_line) {
		t_skip(false, "%.*s", (int)strcspn(skip_line + 5, "\n"), skip_line + 5);
	} else if (!strstr(r.out, "1 passed")) {
		t_fail("%s %s: no result: %.400s", script, name, r.out);
	}
	hres_free(&r);
}

#define CASE(fn, name) \
	static void fn(void) { run_case(name); }

CASE(redis_dyn, "redis-musl-dyn")
CASE(redis_static, "redis-musl-static")
CASE(busybox_httpd, "busybox-httpd")
CASE(bash_static, "bash-static")
CASE(debian_busybox, "debian-busybox")
CASE(debian_bash, "debian-bash")
CASE(debian_dar, "debian-dar")

const struct itest t_real_tests[] = {
	{ "real-static-redis-musl-dyn", redis_dyn, 0 },
	{ "real-static-redis-musl-static", redis_static, 0 },
	{ "real-static-busybox-httpd", busybox_httpd, 0 },
	{ "real-static-bash", bash_static, 0 },
	{ "real-static-debian-busybox", debian_busybox, 0 },
	{ "real-static-debian-bash", debian_bash, 0 },
	{ "real-static-debian-dar", debian_dar, 0 },
	{ NULL, NULL, 0 },
};
