// SPDX-License-Identifier: MIT
/*
 * cmd_maps.c: heapctl maps — where the RSS is, by kind of mapping, read from
 * /proc/PID/smaps.  Nothing is injected and nothing is stopped.
 */
#include <string.h>

#include "cli.h"

static void print_json(pid_t pid, const struct hc_maps *m, const char *diag)
{
	unsigned c;

	printf("{\"pid\":%d,\"libc\":", (int)pid);
	hc_json_str(stdout, m->libc);
	printf(",\"libc_static\":%s,\"rss\":%llu,\"rss_rollup\":%llu,\"vmrss\":%llu,"
	       "\"glibc_arenas\":%u,\"categories\":{",
	       cli_bool(m->libc_static), (unsigned long long)m->rss_sum,
	       (unsigned long long)m->rss_rollup, (unsigned long long)m->vmrss, m->narenas);
	for (c = 0; c < HC_MAP__COUNT; c++)
		printf("%s\"%s\":{\"rss\":%llu,\"reserved\":%llu,\"maps\":%u}", c ? "," : "",
		       hc_map_cat_key(c), (unsigned long long)m->cat[c].rss,
		       (unsigned long long)m->cat[c].size, m->cat[c].nmaps);
	printf("},\"diagnosis\":");
	hc_json_str(stdout, diag);
	printf("}\n");
}

static void print_human(pid_t pid, const struct hc_maps *m, const char *diag)
{
	char comm[64] = "?", r[32], s[32];
	unsigned c;

	if (cli_read_comm(pid, comm, sizeof(comm)))
		snprintf(comm, sizeof(comm), "?");
	printf("pid %d (%s)", (int)pid, comm);
	if (m->libc[0])
		printf(", %s%s", m->libc, m->libc_static ? " (static)" : "");
	printf(": RSS %s", cli_size(m->rss_sum, r, sizeof(r)));
	if (m->rss_rollup)
		printf(" (smaps_rollup %s)", cli_size(m->rss_rollup, r, sizeof(r)));
	printf("\n%-24s %6s %12s %12s\n", "CATEGORY", "MAPS", "RSS", "RESERVED");
	for (c = 0; c < HC_MAP__COUNT; c++) {
		/* musl's malloc has no arenas: a row of zeros named after glibc's would mislead */
		if (c == HC_MAP_ARENA && !strcmp(m->libc, "musl") && !m->cat[c].nmaps)
			continue;
		printf("%-24s %6u %12s %12s", hc_map_cat_title(c), m->cat[c].nmaps,
		       cli_size(m->cat[c].rss, r, sizeof(r)),
		       cli_size(m->cat[c].size, s, sizeof(s)));
		if (c == HC_MAP_ARENA)
			printf("   %u arena heap%s", m->narenas, m->narenas == 1 ? "" : "s");
		putchar('\n');
	}
	printf("%s\n", diag);
}

int cmd_maps(struct cli_env *env)
{
	struct hc_maps m;
	struct hc_err err;
	char diag[320];

	memset(&err, 0, sizeof(err));
	/* nothing is opened: the library's checks of the pid are made here */
	if (hc_pid_check(env->pid, 0, &err) || hc_maps_read(env->pid, &m, &err))
		return cli_fail(env, &err);
	hc_maps_diagnose(&m, diag, sizeof(diag));
	if (env->json)
		print_json(env->pid, &m, diag);
	else
		print_human(env->pid, &m, diag);
	return CLI_EXIT_OK;
}
