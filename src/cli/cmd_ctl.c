// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c: heapctl get / set — one allocator control by name.
 */
#include <string.h>

#include "cli.h"

int cmd_get(struct cli_env *env)
{
	const char *name = env->args[0];
	char out[sizeof(((struct hc_value *)0)->str) + 64];
	struct hc_target *t;
	struct hc_value v;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	memset(&v, 0, sizeof(v));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (hc_ctl_get(t, name, &v, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);
	/* The value alone: scripts do $(heapctl get -p PID NAME). */
	hc_value_format(&v, out, sizeof(out));
	puts(out);
	return CLI_EXIT_OK;
}

int cmd_set(struct cli_env *env)
{
	const char *name = env->args[0];
	const char *value = env->nargs > 1 ? env->args[1] : NULL;
	char out[sizeof(((struct hc_value *)0)->str) + 64];
	struct hc_target *t;
	struct hc_value old;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	memset(&old, 0, sizeof(old));
	old.type = HC_T_VOID;
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	/* No VALUE: a void control such as arena.0.decay; the library checks. */
	if (hc_ctl_set(t, name, value, &old, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);

	if (old.type != HC_T_VOID) {
		hc_value_format(&old, out, sizeof(out));
		printf("%s: %s -> %s\n", name, out, value ? value : "");
	} else if (value) {
		printf("%s: -> %s\n", name, value);
	} else {
		printf("%s: done\n", name);
	}
	return CLI_EXIT_OK;
}
