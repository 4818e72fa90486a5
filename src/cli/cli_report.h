/* SPDX-License-Identifier: MIT */
/* cli_report.h: what cmd_report.c and cmd_leak.c share. */
#ifndef HEAPCTL_CLI_REPORT_H
#define HEAPCTL_CLI_REPORT_H

#include <heapctl/prof.h>

#include "cli.h"

/* The format a file name asks for (".svg", ".folded", ".pb.gz"...), or -1. */
int cli_format_of_path(const char *path);
/* Report and writer options from the command line. */
void cli_report_opts(const struct cli_env *env, pid_t pid, struct hc_report_opts *ro,
		     struct hc_write_opts *wo);
/* Write r as fmt to path (NULL or "-": stdout), atomically for files. */
int cli_report_to(struct hc_report *r, int fmt, const struct hc_write_opts *wo,
		  const char *path, struct hc_err *err);
/* "wrote PATH (svg, 12.0 KiB, 17 stacks, +1.2 MiB change)" on stdout. */
void cli_report_wrote(const char *path, int fmt, const struct hc_report *r, bool objects);

#endif
