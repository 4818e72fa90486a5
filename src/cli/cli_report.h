/* SPDX-License-Identifier: MIT */
/* cli_report.h: what cmd_report.c and cmd_leak.c share. */
#ifndef HEAPCTL_CLI_REPORT_H
#define HEAPCTL_CLI_REPORT_H

#include <heapctl/prof.h>

#include "cli.h"

/* Report and writer options from the command line. */
void cli_report_opts(const struct cli_env *env, pid_t pid, struct hc_report_opts *ro,
		     struct hc_write_opts *wo);
/* Write r as fmt to f; EPIPE on stdout is no error (main.c's finish()). */
int cli_report_to(struct hc_report *r, int fmt, const struct hc_write_opts *wo, FILE *f,
		  struct hc_err *err);
/* Write r as fmt into the output o (commit it afterwards). */
int cli_report_out(struct hc_report *r, int fmt, const struct hc_write_opts *wo,
		   struct cli_out *o, struct hc_err *err);
/* "wrote PATH (svg, 12.0 KiB, 17 stacks, +1.2 MiB change)" on to; nothing for "-". */
void cli_report_wrote(FILE *to, const char *path, int fmt, const struct hc_report *r,
		      bool objects);
/*
 * dump --svg/--folded: render the profile at heap_path (shown as name)
 * into the outputs, not committed yet.  *prof and *r (the report, for
 * cli_report_wrote()) are the caller's to free, also on failure.
 */
int cli_dump_render(struct cli_env *env, const char *heap_path, const char *name,
		    struct cli_out *svg, struct cli_out *folded, struct hc_prof **prof,
		    struct hc_report **r);

#endif
