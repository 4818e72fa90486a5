// SPDX-License-Identifier: MIT
/*
 * writers.c: the report formats by name, each with its writer.
 *
 * The one file that knows every writer.  report.c builds the merged stacks
 * and calls none of them; each out_*.c reads a built report through
 * prof_int.h.  So the writers depend on the report, never the other way
 * round, and a new format is one line here plus its out_*.c.
 */
#include <errno.h>
#include <string.h>

#include "prof_int.h"

static const struct writer {
	const char *name;
	out_fn *write;
} writers[] = {
	[HC_FMT_FOLDED] = { "folded", out_folded },
	[HC_FMT_SVG] = { "svg", out_svg },
	[HC_FMT_PPROF] = { "pprof", out_pprof },
	[HC_FMT_TEXT] = { "text", out_text },
	[HC_FMT_JSON] = { "json", out_json },
};

#define NWRITERS (sizeof(writers) / sizeof(writers[0]))

/* Other spellings --format accepts: jeprof's --collapsed, pprof's file suffix. */
static const struct {
	const char *name;
	enum hc_report_format fmt;
} aliases[] = {
	{ "collapsed", HC_FMT_FOLDED }, { "collapse", HC_FMT_FOLDED }, { "pb", HC_FMT_PPROF },
	{ "pb.gz", HC_FMT_PPROF },	{ "proto", HC_FMT_PPROF },
};

const char *hc_report_format_name(int fmt)
{
	if (fmt < 0 || (size_t)fmt >= NWRITERS || !writers[fmt].name)
		return "?";
	return writers[fmt].name;
}

int hc_report_format_parse(const char *name)
{
	size_t i;

	if (!name)
		return -1;
	for (i = 0; i < NWRITERS; i++)
		if (writers[i].name && !strcmp(name, writers[i].name))
			return (int)i;
	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(name, aliases[i].name))
			return aliases[i].fmt;
	return -1;
}

/* A writer's 0, -1 (write error) or -2 (out of memory) as heapctl's error. */
static int write_result(int rc, FILE *out, struct hc_err *err)
{
	if (rc == -2)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory writing the report");
	if (rc || ferror(out))
		return err_set(err, HC_E_IO, errno, "writing the report: %s",
			       errno ? strerror(errno) : "write error");
	return 0;
}

int hc_report_write(struct hc_report *r, enum hc_report_format fmt, const struct hc_write_opts *w,
		    FILE *out, struct hc_err *err)
{
	struct hc_write_opts dflt;
	int rc;

	if (!w) {
		memset(&dflt, 0, sizeof(dflt));
		w = &dflt;
	}
	if ((unsigned)fmt >= NWRITERS || !writers[fmt].write)
		return err_set(err, HC_E_USAGE, 0, "unknown report format %d", (int)fmt);
	rc = writers[fmt].write(r, w, out, err);
	if (!rc && fflush(out) == EOF)
		rc = -1;
	return write_result(rc, out, err);
}

int hc_report_write_top_json(struct hc_report *r, const struct hc_write_opts *w, FILE *out,
			     struct hc_err *err)
{
	struct hc_write_opts dflt;

	if (!w) {
		memset(&dflt, 0, sizeof(dflt));
		w = &dflt;
	}
	return write_result(out_json_top(r, w, out), out, err);
}
