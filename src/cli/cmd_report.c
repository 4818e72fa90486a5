// SPDX-License-Identifier: MIT
/*
 * cmd_report.c: heapctl report — name the code in a heap profile and write
 * it as folded stacks, an SVG flamegraph, pprof, text or JSON; and the
 * rendering half of "heapctl dump --svg/--folded".
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"
#include "cli_report.h"

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

int cli_format_of_path(const char *path)
{
	if (ends_with(path, ".folded") || ends_with(path, ".collapsed") ||
	    ends_with(path, ".folded.txt"))
		return HC_FMT_FOLDED;
	if (ends_with(path, ".svg"))
		return HC_FMT_SVG;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pb") || ends_with(path, ".pprof") ||
	    ends_with(path, ".proto.gz"))
		return HC_FMT_PPROF;
	if (ends_with(path, ".txt") || ends_with(path, ".text"))
		return HC_FMT_TEXT;
	if (ends_with(path, ".json"))
		return HC_FMT_JSON;
	return -1;
}

void cli_report_opts(const struct cli_env *env, pid_t pid, struct hc_report_opts *ro,
		     struct hc_write_opts *wo)
{
	memset(ro, 0, sizeof(*ro));
	memset(wo, 0, sizeof(*wo));
	ro->pid = pid;
	ro->sysroot = env->sysroot;
	ro->lines = env->lines;
	ro->no_inline = env->no_inline;
	wo->objects = env->objects;
	wo->shrink = env->shrink;
	wo->top = (unsigned)env->top;
}

/*
 * Write r as fmt to path ("-" or NULL: stdout).  Files are written beside
 * their final name and renamed, so a failed run never leaves half an SVG.
 */
int cli_report_to(struct hc_report *r, int fmt, const struct hc_write_opts *wo,
		  const char *path, struct hc_err *err)
{
	char tmp[4096];
	struct stat st;
	FILE *f;
	int rc;

	if (!path || !strcmp(path, "-")) {
		rc = hc_report_write(r, (enum hc_report_format)fmt, wo, stdout, err);
		/* "| head" went away: not an error worth a message (main.c's finish()). */
		if (rc && err->code == HC_E_IO) {
			cli_stdout_failed(err->sys_errno);
			if (err->sys_errno == EPIPE)
				return 0;
		}
		return rc;
	}
	/* /dev/null, a FIFO, /dev/stdout: write in place, never rename over them. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		f = fopen(path, "we");
		if (!f) {
			err->code = HC_E_IO;
			err->sys_errno = errno;
			snprintf(err->msg, sizeof(err->msg), "cannot write %s: %s", path,
				 strerror(errno));
			return -1;
		}
		rc = hc_report_write(r, (enum hc_report_format)fmt, wo, f, err);
		if (fclose(f) && !rc) {
			err->code = HC_E_IO;
			err->sys_errno = errno;
			snprintf(err->msg, sizeof(err->msg), "writing %s: %s", path, strerror(errno));
			rc = -1;
		}
		return rc;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= sizeof(tmp)) {
		err->code = HC_E_IO;
		snprintf(err->msg, sizeof(err->msg), "output path too long");
		return -1;
	}
	f = fopen(tmp, "we");
	if (!f) {
		err->code = HC_E_IO;
		err->sys_errno = errno;
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: %s", path, strerror(errno));
		snprintf(err->hint, sizeof(err->hint), "check the directory exists and is writable");
		return -1;
	}
	rc = hc_report_write(r, (enum hc_report_format)fmt, wo, f, err);
	if (fclose(f) && !rc) {
		err->code = HC_E_IO;
		err->sys_errno = errno;
		snprintf(err->msg, sizeof(err->msg), "writing %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (!rc && rename(tmp, path)) {
		err->code = HC_E_IO;
		err->sys_errno = errno;
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc)
		unlink(tmp);
	return rc;
}

static const char *const fmt_names[] = { "folded", "svg", "pprof", "text", "json" };

void cli_report_wrote(const char *path, int fmt, const struct hc_report *r, bool objects)
{
	struct hc_report_totals t;
	struct stat st;
	char size[32], tot[32];
	double v;

	hc_report_totals(r, &t);
	v = objects ? t.objects - t.base_objects : t.bytes - t.base_bytes;
	if (objects)
		snprintf(tot, sizeof(tot), "%.0f objects", v);
	else
		cli_size(v > 0 ? (uint64_t)v : (uint64_t)-v, tot, sizeof(tot));
	printf("wrote %s (%s", path, fmt_names[fmt]);
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		printf(", %s", cli_size((uint64_t)st.st_size, size, sizeof(size)));
	if (t.diff)
		printf(", %zu stacks, %s%s change)\n", t.nstacks, v < 0 ? "-" : "+", tot);
	else
		printf(", %zu stacks, %s live)\n", t.nstacks, tot);
}

int cmd_report(struct cli_env *env)
{
	struct hc_prof *prof = NULL, *base = NULL;
	struct hc_report_opts ro;
	struct hc_write_opts wo;
	struct hc_report *r = NULL;
	struct hc_err err;
	int fmt, rc = CLI_EXIT_FAIL;

	memset(&err, 0, sizeof(err));
	if (env->format) {
		fmt = hc_report_format_parse(env->format);
		if (fmt < 0)
			return cli_usage(env, "unknown format '%s' (folded, svg, pprof, text, json)",
					 env->format);
	} else if (env->output && strcmp(env->output, "-")) {
		fmt = cli_format_of_path(env->output);
		if (fmt < 0)
			return cli_usage(env, "cannot tell the format from '%s'; add --format "
					 "folded|svg|pprof|text|json", env->output);
	} else {
		fmt = HC_FMT_TEXT;
	}
	if (env->shrink && !env->base)
		return cli_usage(env, "--shrink needs --base FILE");
	if (fmt == HC_FMT_PPROF && (!env->output || !strcmp(env->output, "-")) &&
	    isatty(STDOUT_FILENO))
		return cli_usage(env, "pprof output is binary; name a file with -o FILE.pb.gz");

	cli_report_opts(env, env->pid, &ro, &wo);
	prof = hc_prof_load(env->args[0], &err);
	if (!prof)
		goto fail;
	if (env->base) {
		base = hc_prof_load(env->base, &err);
		if (!base)
			goto fail;
	}
	r = hc_report_build(prof, base, &ro, &err);
	if (!r)
		goto fail;
	if (cli_report_to(r, fmt, &wo, env->output, &err))
		goto fail;
	if (env->output && strcmp(env->output, "-"))
		cli_report_wrote(env->output, fmt, r, env->objects);
	rc = CLI_EXIT_OK;
	goto out;
fail:
	rc = cli_fail(env, &err);
out:
	hc_report_free(r);
	hc_prof_free(prof);
	hc_prof_free(base);
	return rc;
}

int cli_dump_render(struct cli_env *env, const char *heap_path)
{
	struct hc_report_opts ro;
	struct hc_write_opts wo;
	struct hc_report *r = NULL;
	struct hc_prof *prof;
	struct hc_err err;
	int rc = CLI_EXIT_FAIL;

	memset(&err, 0, sizeof(err));
	cli_report_opts(env, env->pid, &ro, &wo);
	prof = hc_prof_load(heap_path, &err);
	if (!prof)
		return cli_fail(env, &err);
	r = hc_report_build(prof, NULL, &ro, &err);
	if (!r)
		goto fail;
	if (env->svg) {
		if (cli_report_to(r, HC_FMT_SVG, &wo, env->svg, &err))
			goto fail;
		cli_report_wrote(env->svg, HC_FMT_SVG, r, env->objects);
	}
	if (env->folded) {
		if (cli_report_to(r, HC_FMT_FOLDED, &wo, env->folded, &err))
			goto fail;
		cli_report_wrote(env->folded, HC_FMT_FOLDED, r, env->objects);
	}
	rc = CLI_EXIT_OK;
	goto out;
fail:
	rc = cli_fail(env, &err);
out:
	hc_report_free(r);
	hc_prof_free(prof);
	return rc;
}
