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

void cli_report_opts(const struct cli_env *env, pid_t pid, struct hc_report_opts *ro,
		     struct hc_write_opts *wo)
{
	memset(ro, 0, sizeof(*ro));
	memset(wo, 0, sizeof(*wo));
	ro->pid = pid;
	ro->sysroot = env->sysroot;
	ro->debug_file = env->topts.debug_file;
	ro->lines = env->lines;
	ro->no_inline = env->no_inline;
	wo->objects = env->objects;
	wo->shrink = env->shrink;
	wo->top = (unsigned)env->top;
}

int cli_report_to(struct hc_report *r, int fmt, const struct hc_write_opts *wo, FILE *f,
		  struct hc_err *err)
{
	int rc = hc_report_write(r, (enum hc_report_format)fmt, wo, f, err);

	/* "| head" went away: not an error worth a message (main.c's finish()). */
	if (rc && f == stdout && err->code == HC_E_IO) {
		cli_stdout_failed(err->sys_errno);
		if (err->sys_errno == EPIPE)
			return 0;
	}
	return rc;
}

int cli_report_out(struct hc_report *r, int fmt, const struct hc_write_opts *wo,
		   struct cli_out *o, struct hc_err *err)
{
	FILE *f = cli_out_stream(o, err);

	return f ? cli_report_to(r, fmt, wo, f, err) : -1;
}

void cli_report_wrote(FILE *to, const char *path, int fmt, const struct hc_report *r,
		      bool objects)
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
	if (cli_out_is_stdout(path))
		return;
	fprintf(to, "wrote %s (%s", path, hc_report_format_name(fmt));
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		fprintf(to, ", %s", cli_size((uint64_t)st.st_size, size, sizeof(size)));
	if (t.diff)
		fprintf(to, ", %zu stacks, %s%s change)\n", t.nstacks, v < 0 ? "-" : "+", tot);
	else
		fprintf(to, ", %zu stacks, %s live)\n", t.nstacks, tot);
}

int cmd_report(struct cli_env *env)
{
	struct hc_prof *prof = NULL, *base = NULL;
	struct hc_report_opts ro;
	struct hc_write_opts wo;
	struct hc_report *r = NULL;
	struct cli_out out;
	struct hc_err err;
	bool to_file = env->output && !cli_out_is_stdout(env->output);
	int fmt, rc;

	memset(&err, 0, sizeof(err));
	memset(&out, 0, sizeof(out));
	out.fd = -1;
	rc = cli_output_format(env, env->output, HC_FMT_TEXT, &fmt);
	if (rc)
		return rc;
	if (env->shrink && !env->base)
		return cli_usage(env, "--shrink needs --base FILE");
	if (fmt == HC_FMT_PPROF && !to_file && isatty(STDOUT_FILENO))
		return cli_usage(env, "pprof output is binary; name a file with -o FILE.pb.gz");
	/* Before the work: a path that cannot be written is refused at once. */
	if (to_file && cli_out_open(&out, env->output, "-o", fmt, &err))
		return cli_fail(env, &err);

	rc = CLI_EXIT_FAIL;
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
	if (to_file) {
		if (cli_report_out(r, fmt, &wo, &out, &err) || cli_out_commit(&out, &err))
			goto fail;
		cli_report_wrote(stdout, env->output, fmt, r, env->objects);
	} else if (cli_report_to(r, fmt, &wo, stdout, &err)) {
		goto fail;
	}
	rc = CLI_EXIT_OK;
	goto out;
fail:
	rc = cli_fail(env, &err);
out:
	cli_out_discard(&out);
	hc_report_free(r);
	hc_prof_free(prof);
	hc_prof_free(base);
	return rc;
}

int cli_dump_render(struct cli_env *env, const char *heap_path, const char *name,
		    struct cli_out *svg, struct cli_out *folded, struct hc_prof **pp,
		    struct hc_report **rp)
{
	struct hc_report_opts ro;
	struct hc_write_opts wo;
	struct hc_report *r = NULL;
	struct hc_prof *prof;
	struct hc_err err;
	char title[512];

	memset(&err, 0, sizeof(err));
	*rp = NULL;
	*pp = NULL;
	cli_report_opts(env, env->pid, &ro, &wo);
	/* The profile is still in its temporary file: title it by its final name. */
	snprintf(title, sizeof(title), "Heap in use: %s", name);
	wo.title = title;
	prof = hc_prof_load(heap_path, &err);
	if (!prof)
		return cli_fail(env, &err);
	r = hc_report_build(prof, NULL, &ro, &err);
	if (!r) {
		hc_prof_free(prof);
		return cli_fail(env, &err);
	}
	/* the report refers to the profile: both live until the caller frees them */
	*rp = r;
	*pp = prof;
	if ((env->svg && cli_report_out(r, HC_FMT_SVG, &wo, svg, &err)) ||
	    (env->folded && cli_report_out(r, HC_FMT_FOLDED, &wo, folded, &err)))
		return cli_fail(env, &err);
	return CLI_EXIT_OK;
}
