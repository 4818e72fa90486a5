// SPDX-License-Identifier: MIT
/*
 * cmd_prof.c: heapctl prof on|off|status — the heap profiler's two switches:
 * opt.prof (fixed at start) and prof.active (sampling now or not).
 */
#include <string.h>

#include "cli.h"

enum prof_op { PROF_STATUS, PROF_ON, PROF_OFF };

static void print_state(const struct cli_env *env, bool enabled, bool active, bool changed,
			bool prev)
{
	if (env->json) {
		printf("{\"pid\":%d,\"enabled\":%s,\"active\":%s", (int)env->pid, cli_bool(enabled),
		       cli_bool(active));
		if (changed)
			printf(",\"previous_active\":%s", cli_bool(prev));
		fputs("}\n", stdout);
		return;
	}
	if (changed)
		printf("prof.active: %s -> %s\n", cli_yesno(prev), cli_yesno(active));
	printf("profiling: enabled at start (opt.prof): %s; active (prof.active): %s\n",
	       cli_yesno(enabled), cli_yesno(active));
	if (!enabled)
		printf("note: restart with MALLOC_CONF=prof:true,prof_active:false to allow "
		       "'heapctl prof on'\n");
}

int cmd_prof(struct cli_env *env)
{
	const char *word = env->args[0];
	bool enabled, active, prev;
	struct hc_target *t;
	struct hc_err err;
	enum prof_op op;

	if (!strcmp(word, "status"))
		op = PROF_STATUS;
	else if (!strcmp(word, "on"))
		op = PROF_ON;
	else if (!strcmp(word, "off"))
		op = PROF_OFF;
	else
		return cli_usage(env, "unknown prof action '%s' (expected on, off or status)",
				 word);

	memset(&err, 0, sizeof(err));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (hc_prof_get(t, &enabled, &active, &err))
		goto fail;
	cli_timing(env, t);
	prev = active;

	/*
	 * Without opt.prof, prof.active cannot be written, but "off" already
	 * holds: succeed so that scripts can always run "prof off" to clean up.
	 * "on" goes to the library, whose error carries the MALLOC_CONF hint.
	 */
	if (op != PROF_STATUS && (enabled || op == PROF_ON)) {
		if (hc_prof_set(t, op == PROF_ON, &err))
			goto fail;
		cli_timing(env, t);
		active = op == PROF_ON;
	}
	cli_close(t);
	print_state(env, enabled, active, op != PROF_STATUS, prev);
	return CLI_EXIT_OK;

fail:
	cli_close(t);
	return cli_fail(env, &err);
}
