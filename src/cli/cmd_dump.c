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
#include "cli_report.h"

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
static void print_next(const struct cli_env *env, FILE *msg, const char *allocator,
		       const char *path)
{
	char exe[PATH_MAX];
	bool gperf = cli_prof_kind(allocator) == CLI_PROF_GPERF;

	/*
	 * Both want the binary for symbols.  If it was replaced on disk since
	 * the process started (an upgrade), only /proc/PID/exe still reaches it.
	 */
	fputs(gperf ? "next: pprof --text " : "next: jeprof --text ", msg);
	if (cli_read_exe(env->pid, exe, sizeof(exe)) == 0) {
		size_t n = strlen(exe);

		if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
			snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)env->pid);
		cli_shell_quote(msg, exe);
	} else {
		fputs("BINARY", msg);
	}
	fputc(' ', msg);
	cli_shell_quote(msg, path);
	fputc('\n', msg);
	if (gperf)
		fprintf(msg, "      (pprof is google-pprof in Debian's google-perftools; or: heapctl report "
		       "%s -p %d)\n", path, (int)env->pid);
}

int cmd_dump(struct cli_env *env)
{
	char path[PATH_MAX], size[32], allocator[32], said[96];
	bool active = false;
	struct cli_out heap, svg, folded;
	struct hc_report *r = NULL;
	struct hc_prof *prof = NULL;
	const char *tmp;
	struct hc_target *t;
	struct hc_where w;
	struct hc_err err;
	struct stat st;
	FILE *msg;
	int rc = CLI_EXIT_FAIL, nstdout;

	memset(&err, 0, sizeof(err));
	nstdout = cli_out_is_stdout(env->output) + cli_out_is_stdout(env->svg) +
		  cli_out_is_stdout(env->folded);
	if (nstdout > 1)
		return cli_usage(env, "only one of -o, --svg and --folded can be '-' (stdout)");
	/* Whatever goes to stdout is the data alone; what was written is said on stderr. */
	msg = nstdout || env->json ? stderr : stdout;
	if (env->output) {
		snprintf(path, sizeof(path), "%s", env->output);
	} else if (default_path(env->pid, path, sizeof(path))) {
		err.code = HC_E_IO;
		snprintf(err.msg, sizeof(err.msg),
			 "no free name ./heapctl.%d.N.heap in this directory", (int)env->pid);
		snprintf(err.hint, sizeof(err.hint), "name the file with -o FILE");
		return cli_fail(env, &err);
	}

	/*
	 * Every output is checked and created before a thread is borrowed: a
	 * path that cannot be written costs the target nothing.
	 */
	memset(&svg, 0, sizeof(svg));
	memset(&folded, 0, sizeof(folded));
	svg.fd = folded.fd = -1;
	if (cli_out_open(&heap, path, env->output ? "-o" : NULL, -1, &err))
		return cli_fail(env, &err);
	if ((env->svg && cli_out_open(&svg, env->svg, "--svg", HC_FMT_SVG, &err)) ||
	    (env->folded && cli_out_open(&folded, env->folded, "--folded", HC_FMT_FOLDED, &err)))
		goto fail;
	tmp = cli_out_path(&heap, &err);
	if (!tmp)
		goto fail;

	t = cli_open(env, env->pid, &err);
	if (!t)
		goto fail;
	memset(&w, 0, sizeof(w));
	hc_target_where(t, &w);
	snprintf(allocator, sizeof(allocator), "%s", w.allocator ? w.allocator : "");
	if (hc_prof_dump(t, tmp, &active, &err)) {
		cli_close(t);
		/* Writing the local copy failed (a full disk): say it of the file asked for. */
		if (err.local)
			cli_out_fail(&heap, err.sys_errno, &err);
		goto fail;
	}
	/*
	 * A profile taken while sampling is off holds nothing allocated since
	 * it was turned off: say so.  Only jemalloc dumps then; tcmalloc
	 * refuses when its profiler is stopped, glibc has none.
	 */
	if (!active)
		fprintf(stderr,
			"heapctl: warning: profiling is not active in pid %d: the profile "
			"holds nothing allocated since it was turned off\n"
			"hint: 'heapctl prof on -p %d' samples from now on\n",
			(int)env->pid, (int)env->pid);
	cli_timing(env, t);
	cli_close(t);

	/* Render it now, symbolized against the live process's own files. */
	if (env->svg || env->folded) {
		char name[64];

		if (cli_out_is_stdout(path))
			snprintf(name, sizeof(name), "pid %d", (int)env->pid);
		rc = cli_dump_render(env, tmp, cli_out_is_stdout(path) ? name : path, &svg,
				     &folded, &prof, &r);
		if (rc)
			goto keep; /* the profile itself is still worth keeping */
	}
	/* Every output is in place before anything is said about any of them. */
	if (cli_out_commit(&heap, &err))
		goto fail;
	if ((env->svg && cli_out_commit(&svg, &err)) ||
	    (env->folded && cli_out_commit(&folded, &err))) {
		rc = cli_fail(env, &err);
		goto kept;
	}
	if (env->json) {
		bool have = !cli_out_is_stdout(path) && stat(path, &st) == 0;

		printf("{\"pid\":%d,\"path\":", (int)env->pid);
		hc_json_str(stdout, path);
		if (have)
			printf(",\"bytes\":%llu", (unsigned long long)st.st_size);
		else
			fputs(",\"bytes\":null", stdout);
		fputs(",\"allocator\":", stdout);
		hc_json_str(stdout, allocator);
		printf(",\"format\":\"%s\",\"active\":%s",
		       cli_prof_kind(allocator) == CLI_PROF_GPERF ? "gperftools" : "jemalloc",
		       cli_bool(active));
		/* the samples behind it, and one per how many bytes (0: every allocation) */
		if (have && S_ISREG(st.st_mode)) {
			struct hc_prof_info in;

			cli_samples_said(path, said, sizeof(said), &in);
			printf(",\"samples\":%.0f,\"period\":%llu", in.samples,
			       (unsigned long long)in.period);
		}
		fputs("}\n", stdout);
	} else if (!cli_out_is_stdout(path)) {
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			fprintf(msg, "wrote %s (%s%s)\n", path,
				cli_size((uint64_t)st.st_size, size, sizeof(size)),
				cli_samples_said(path, said, sizeof(said), NULL));
		else
			fprintf(msg, "wrote %s\n", path);
	}
	if (env->svg)
		cli_report_wrote(msg, env->svg, HC_FMT_SVG, r, env->objects);
	if (env->folded)
		cli_report_wrote(msg, env->folded, HC_FMT_FOLDED, r, env->objects);
	hc_report_free(r);
	hc_prof_free(prof);
	if (env->svg || env->folded)
		return CLI_EXIT_OK;
	if (!env->json)
		print_next(env, msg, allocator, cli_out_is_stdout(path) ? "FILE" : path);
	return CLI_EXIT_OK;
keep:
	if (cli_out_commit(&heap, &err)) {
		cli_fail(env, &err);
		goto out;
	}
kept:
	if (!cli_out_is_stdout(path))
		fprintf(stderr, "heapctl: the profile itself was written to %s\n", path);
out:
	cli_out_discard(&svg);
	cli_out_discard(&folded);
	hc_report_free(r);
	hc_prof_free(prof);
	return rc;
fail:
	cli_out_discard(&heap);
	cli_out_discard(&svg);
	cli_out_discard(&folded);
	hc_report_free(r);
	hc_prof_free(prof);
	return cli_fail(env, &err);
}
