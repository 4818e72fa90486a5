// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c: heapctl get / set — allocator controls by name.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A value as JSON: true/false, a number, a string, or null (nothing to show). */
static void json_value(FILE *f, const struct hc_value *v)
{
	char buf[sizeof(v->str) + 32];

	switch (v->type) {
	case HC_T_VOID:
		fputs("null", f);
		break;
	case HC_T_STRING:
		hc_json_str(f, v->str);
		break;
	default:
		hc_value_format(v, buf, sizeof(buf));
		fputs(buf, f);
	}
}

/* Notes are for humans and never part of the value: stderr. */
static void print_note(const struct hc_value *v)
{
	if (v->note[0])
		cli_log(HC_LOG_WARN, "%s", v->note);
}

/*
 * One entry as JSON: {"name":..,"value":..} for get, {"name":..,"old":..,
 * "new":..} for set (old given); "note" when the value has one.
 */
static void json_entry(const char *name, const struct hc_value *old, const struct hc_value *v)
{
	fputs("{\"name\":", stdout);
	hc_json_str(stdout, name);
	if (old) {
		fputs(",\"old\":", stdout);
		json_value(stdout, old);
	}
	fputs(old ? ",\"new\":" : ",\"value\":", stdout);
	json_value(stdout, v);
	if (v->note[0]) {
		fputs(",\"note\":", stdout);
		hc_json_str(stdout, v->note);
	}
	fputc('}', stdout);
}

/* "arenas." (jemalloc) or "M_" (glibc): every name under it. */
static bool is_prefix(const char *name)
{
	size_t n = strlen(name);

	return n && (name[n - 1] == '.' || name[n - 1] == '_');
}

static int get_list(struct cli_env *env, const char *prefix)
{
	struct hc_ctl_entry *ents = NULL;
	char out[sizeof(ents->v.str) + 64], skipped[512];
	struct hc_target *t;
	struct hc_err err;
	size_t n = 0, j;

	memset(&err, 0, sizeof(err));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (hc_ctl_list(t, prefix, &ents, &n, skipped, sizeof(skipped), &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);
	if (env->json)
		fputs("[", stdout);
	for (size_t i = 0; i < n; i++) {
		if (env->json) {
			if (i)
				fputs(",\n ", stdout);
			json_entry(ents[i].name, NULL, &ents[i].v);
		} else {
			hc_value_format(&ents[i].v, out, sizeof(out));
			printf("%s %s\n", ents[i].name, out);
			/* each distinct note once */
			for (j = 0; j < i && strcmp(ents[j].v.note, ents[i].v.note); j++)
				;
			if (j == i)
				print_note(&ents[i].v);
		}
	}
	if (env->json)
		fputs("]\n", stdout);
	if (!n)
		cli_log(HC_LOG_WARN, "nothing under '%s' can be read in pid %d (not in this build?)",
			prefix, env->pid);
	if (skipped[0])
		cli_log(HC_LOG_WARN, "not expanded (give the first index in the prefix): %s",
			skipped);
	free(ents);
	return CLI_EXIT_OK;
}

int cmd_get(struct cli_env *env)
{
	const char *name = env->args[0];
	char out[sizeof(((struct hc_value *)0)->str) + 64];
	struct hc_target *t;
	struct hc_value v;
	struct hc_err err;

	if (is_prefix(name))
		return get_list(env, name);
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
	if (env->json) {
		json_entry(name, NULL, &v);
		putchar('\n');
	} else {
		/* The value alone: scripts do $(heapctl get -p PID NAME). */
		hc_value_format(&v, out, sizeof(out));
		puts(out);
		print_note(&v);
	}
	return CLI_EXIT_OK;
}

int cmd_set(struct cli_env *env)
{
	const char *name = env->args[0];
	const char *value = env->nargs > 1 ? env->args[1] : NULL;
	char o[sizeof(((struct hc_value *)0)->str) + 64], n[sizeof(o)];
	struct hc_target *t;
	struct hc_value old, now;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	/* No VALUE: a void control such as arena.0.decay; the library checks. */
	if (hc_ctl_set(t, name, value, &old, &now, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	cli_timing(env, t);
	cli_close(t);

	if (env->json) {
		json_entry(name, &old, &now);
		putchar('\n');
		return CLI_EXIT_OK;
	}
	/* NEW is what the allocator holds after the write, not what was typed. */
	hc_value_format(&old, o, sizeof(o));
	hc_value_format(&now, n, sizeof(n));
	if (old.type != HC_T_VOID)
		printf("%s: %s -> %s\n", name, o, n);
	else if (now.type != HC_T_VOID)
		printf("%s: -> %s\n", name, n);
	else
		printf("%s: done\n", name);
	print_note(&now);
	return CLI_EXIT_OK;
}
