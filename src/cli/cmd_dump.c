// SPDX-License-Identifier: MIT
/*
 * cmd_dump.c: heapctl dump — have the allocator write a heap profile and
 * bring it here.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* ./heapctl.<pid>.<n>.heap with the first n that is free, as jeprof.<pid>.<seq> counts. */
static int default_path(pid_t pid, char *buf, size_t len)
{
	struct stat st;
	unsigned int n;

	for (n = 0; n < 100000; n++) {
		snprintf(buf, len, "./heapctl.%d.%u.heap", (int)pid, n);
		if (lstat(buf, &st) && errno == ENOENT)
			return 0;
	}
	return -1;
}

int cmd_dump(struct cli_env *env)
{
	char path[PATH_MAX], exe[PATH_MAX], size[32];
	struct hc_target *t;
	struct hc_err err;
	struct stat st;

	memset(&err, 0, sizeof(err));
	if (env->output) {
		snprintf(path, sizeof(path), "%s", env->output);
	} else if (default_path(env->pid, path, sizeof(path))) {
		err.code = HC_E_IO;
		snprintf(err.msg, sizeof(err.msg),
			 "no free name ./heapctl.%d.N.heap in this directory", (int)env->pid);
		snprintf(err.hint, sizeof(err.hint), "name the file with -o FILE");
		return cli_fail(env, &err);
	}

	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (hc_prof_dump(t, path, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);

	if (stat(path, &st) == 0)
		printf("wrote %s (%s)\n", path, cli_size((uint64_t)st.st_size, size, sizeof(size)));
	else
		printf("wrote %s\n", path);

	/* Render it now, symbolized against the live process's own files. */
	if (env->svg || env->folded)
		return cli_dump_render(env, path);

	/*
	 * jeprof wants the binary for symbols.  If it was replaced on disk since
	 * the process started (an upgrade), only /proc/PID/exe still reaches it.
	 */
	fputs("next: jeprof --text ", stdout);
	if (cli_read_exe(env->pid, exe, sizeof(exe)) == 0) {
		size_t n = strlen(exe);

		if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
			snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)env->pid);
		cli_shell_quote(stdout, exe);
	} else {
		fputs("BINARY", stdout);
	}
	putchar(' ');
	cli_shell_quote(stdout, path);
	putchar('\n');
	return CLI_EXIT_OK;
}
