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

/* The command that reads it: jeprof for jemalloc's profiles, pprof for gperftools'. */
static void print_next(const struct cli_env *env, const char *allocator, const char *path)
{
	char exe[PATH_MAX];
	bool gperf = allocator && !strncmp(allocator, "tcmalloc", 8);

	/*
	 * Both want the binary for symbols.  If it was replaced on disk since
	 * the process started (an upgrade), only /proc/PID/exe still reaches it.
	 */
	fputs(gperf ? "next: pprof --text " : "next: jeprof --text ", stdout);
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
	if (gperf)
		printf("      (pprof is google-pprof in Debian's google-perftools; or: heapctl report "
		       "%s -p %d)\n", path, (int)env->pid);
}

int cmd_dump(struct cli_env *env)
{
	char path[PATH_MAX], size[32], allocator[32];
	bool enabled = false, active = false;
	struct hc_target *t;
	struct hc_where w;
	struct hc_err err;
	struct stat st;
	int have;

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
	memset(&w, 0, sizeof(w));
	hc_target_where(t, &w);
	snprintf(allocator, sizeof(allocator), "%s", w.allocator ? w.allocator : "");
	/*
	 * A profile taken while sampling is off holds nothing allocated since
	 * it was turned off: say so.  Only jemalloc dumps then; tcmalloc
	 * refuses when its profiler is stopped, glibc has none.
	 */
	if (strcmp(allocator, "jemalloc")) {
		active = true; /* if the dump below succeeds */
	} else if (hc_prof_get(t, &enabled, &active, &err) == 0) {
		cli_timing(env, t);
		if (enabled && !active)
			fprintf(stderr,
				"heapctl: warning: profiling is not active in pid %d: the profile "
				"holds nothing allocated since it was turned off\n"
				"hint: 'heapctl prof on -p %d' samples from now on\n",
				(int)env->pid, (int)env->pid);
	}
	memset(&err, 0, sizeof(err));
	if (hc_prof_dump(t, path, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);

	have = stat(path, &st);
	if (env->json) {
		fputs("{\"pid\":", stdout);
		printf("%d,\"path\":", (int)env->pid);
		cli_json_str(stdout, path);
		if (have == 0)
			printf(",\"bytes\":%llu", (unsigned long long)st.st_size);
		else
			fputs(",\"bytes\":null", stdout);
		fputs(",\"allocator\":", stdout);
		cli_json_str(stdout, allocator);
		printf(",\"format\":\"%s\",\"active\":%s}\n",
		       strncmp(allocator, "tcmalloc", 8) ? "jemalloc" : "gperftools",
		       cli_bool(active));
	} else if (have == 0) {
		printf("wrote %s (%s)\n", path, cli_size((uint64_t)st.st_size, size, sizeof(size)));
	} else {
		printf("wrote %s\n", path);
	}

	/* Render it now, symbolized against the live process's own files. */
	if (env->svg || env->folded)
		return cli_dump_render(env, path);
	if (!env->json)
		print_next(env, allocator, path);
	return CLI_EXIT_OK;
}
