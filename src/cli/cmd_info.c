// SPDX-License-Identifier: MIT
/*
 * cmd_info.c: heapctl info — which allocator, where heapctl found it, and
 * how it is configured.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char *or_none(const char *s)
{
	return s && s[0] ? s : "(none)";
}

/* A JSON number as jemalloc prints integers: -?(0|[1-9][0-9]*). */
static bool is_json_int(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		return s[1] == '\0';
	if (*s < '1' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9')
		s++;
	return *s == '\0';
}

/* "name=value" -> JSON member, the value typed as the allocator printed it. */
static void json_conf(const char *kv)
{
	const char *eq = strchr(kv, '=');
	const char *val = eq ? eq + 1 : "";
	char key[96];

	snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - kv) : (int)strlen(kv), kv);
	hc_json_str(stdout, key);
	putchar(':');
	if (!strcmp(val, "true") || !strcmp(val, "false") || is_json_int(val))
		fputs(val, stdout);
	else
		hc_json_str(stdout, val);
}

static void print_json(pid_t pid, const char *name, const struct hc_where *w,
		       const struct hc_sampler *smp, const struct hc_info *in)
{
	unsigned int i;

	printf("{\"pid\":%d,\"name\":", (int)pid);
	hc_json_str(stdout, name);
	fputs(",\"allocator\":", stdout);
	hc_json_str(stdout, w->allocator);
	fputs(",\"version\":", stdout);
	hc_json_str(stdout, in->version);
	fputs(",\"object\":", stdout);
	hc_json_str(stdout, w->object);
	fputs(",\"prefix\":", stdout);
	hc_json_str(stdout, w->prefix);
	fputs(",\"symtab\":", stdout);
	hc_json_str(stdout, w->symtab);
	printf(",\"mallctl\":\"0x%" PRIx64 "\",\"malloc_stats_print\":\"0x%" PRIx64 "\"",
	       w->ctl_raddr, w->stats_raddr);
	fputs(",\"malloc_object\":", stdout);
	hc_json_str(stdout, w->malloc_object ? w->malloc_object : "");
	fputs(",\"malloc_via\":", stdout);
	hc_json_str(stdout, w->malloc_via ? w->malloc_via : "");
	fputs(",\"evidence\":", stdout);
	hc_json_str(stdout, w->evidence ? w->evidence : "");
	fputs(",\"evidence_object\":", stdout);
	hc_json_str(stdout, w->evidence_object ? w->evidence_object : "");
	fputs(",\"evidence_found\":", stdout);
	hc_json_str(stdout, w->evidence_found ? w->evidence_found : "");
	printf(",\"candidates\":%u,\"others\":", w->ncandidates);
	hc_json_str(stdout, w->others);
	printf(",\"prof_built\":%s,\"prof_enabled\":%s,\"prof_active\":%s,\"conf\":{",
	       cli_bool(in->prof_built), cli_bool(in->prof_enabled), cli_bool(in->prof_active));
	for (i = 0; i < in->nconf && i < 32; i++) {
		if (i)
			putchar(',');
		json_conf(in->conf[i]);
	}
	putchar('}');
	cli_sampler_json(smp);
	fputs("}\n", stdout);
}

/* The heap profiler in the allocator's own terms. */
static void print_prof(const char *allocator, const struct hc_info *in)
{
	switch (cli_prof_kind(allocator)) {
	case CLI_PROF_GPERF:
		printf("profiling     gperftools heap profiler: available; running: %s\n",
		       cli_yesno(in->prof_active));
		printf("              start it with 'heapctl prof on', or at start with "
		       "HEAPPROFILE=PREFIX\n");
		break;
	case CLI_PROF_MINIMAL:
		printf("profiling     unavailable: tcmalloc_minimal has no heap profiler\n");
		printf("              use the full libtcmalloc (LD_PRELOAD=libtcmalloc.so.4, or link "
		       "-ltcmalloc instead of -ltcmalloc_minimal)\n");
		break;
	case CLI_PROF_NONE:
		printf("profiling     unavailable: %s%s has no heap profiler "
		       "('heapctl maps' shows where the RSS is)\n",
		       allocator ? allocator : "the allocator",
		       allocator && !strcmp(allocator, "glibc") ? " malloc" : "");
		break;
	case CLI_PROF_JEMALLOC:
		printf("profiling     built: %s; enabled at start (opt.prof): %s; "
		       "active (prof.active): %s\n",
		       cli_yesno(in->prof_built), cli_yesno(in->prof_enabled),
		       cli_yesno(in->prof_active));
		break;
	}
}

/* heapctl's own sampler: loaded or not, and what it hooks. */
static void print_sampler(const struct hc_sampler *s)
{
	char iv[32];

	if (!s->installed && s->cannot_load) {
		printf("sampler       not loaded: %s\n", s->why);
		return;
	}
	if (!s->installed) {
		printf("sampler       heapctl's: not loaded ('heapctl prof on' loads it where the "
		       "allocator cannot profile)\n");
		return;
	}
	printf("sampler       heapctl's%s: loaded, %s, one sample per %s; %u %s in %u "
	       "objects; %llu samples, %llu live\n", s->freestanding ? " (freestanding, mapped by heapctl)" : "",
	       s->enabled ? "sampling" : "off",
	       cli_size(s->interval, iv, sizeof(iv)), s->hooks,
	       s->inlined ? "functions hooked inline" : "GOT slots hooked", s->nobjs,
	       (unsigned long long)s->samples, (unsigned long long)s->live);
}

static void print_human(pid_t pid, const char *name, const struct hc_where *w,
			const struct hc_info *in, const struct hc_sampler *smp)
{
	const char *prefix = w->prefix ? w->prefix : "";
	unsigned int i;

	printf("pid           %d (%s)\n", (int)pid, name);
	printf("allocator     %s %s\n", or_none(w->allocator), or_none(in->version));
	printf("object        %s\n", or_none(w->object));
	printf("malloc from   %s", or_none(w->malloc_object));
	if (w->malloc_via && !strcmp(w->malloc_via, "LD_PRELOAD"))
		printf(" (LD_PRELOAD)");
	else if (w->malloc_via && !strcmp(w->malloc_via, "executable"))
		printf(" (the executable's own)");
	else if (w->malloc_via && w->malloc_via[0])
		printf(" (first in the dynamic linker's search order)");
	putchar('\n');
	printf("symbols       %s\n", or_none(w->symtab));
	if (w->evidence && w->evidence[0])
		printf("evidence      %s in %s (found: %s)\n", w->evidence, w->evidence_object,
		       w->evidence_found);
	else
		printf("evidence      (none)\n");
	if (!w->allocator || strcmp(w->allocator, "jemalloc"))
		goto rest;
	printf("prefix        %s\n", or_none(prefix));
	printf("mallctl       0x%" PRIx64 "%s%s%s\n", w->ctl_raddr, prefix[0] ? " (" : "",
	       prefix[0] ? prefix : "", prefix[0] ? "mallctl)" : "");
	printf("stats_print   0x%" PRIx64 "%s%s%s\n", w->stats_raddr, prefix[0] ? " (" : "",
	       prefix[0] ? prefix : "", prefix[0] ? "malloc_stats_print)" : "");
	printf("candidates    %u\n", w->ncandidates);
	printf("others        %s\n", or_none(w->others));
rest:
	print_prof(w->allocator, in);
	print_sampler(smp);
	if (!in->nconf)
		return;
	puts("settings");
	for (i = 0; i < in->nconf && i < 32; i++) {
		const char *eq = strchr(in->conf[i], '=');

		if (eq)
			printf("  %-26.*s %s\n", (int)(eq - in->conf[i]), in->conf[i],
			       eq[1] ? eq + 1 : "\"\"");
		else
			printf("  %s\n", in->conf[i]);
	}
}

int cmd_info(struct cli_env *env)
{
	struct hc_target *t;
	struct hc_where w;
	struct hc_info in;
	struct hc_sampler smp;
	struct hc_err err;
	char name[64];

	memset(&err, 0, sizeof(err));
	memset(&w, 0, sizeof(w));
	memset(&in, 0, sizeof(in));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	hc_target_where(t, &w);
	if (hc_info_get(t, &in, &err)) {
		cli_close(t);
		return cli_fail(env, &err);
	}
	/* a sampler heapctl cannot read (another version's) is worth a warning, not a failure */
	if (hc_sampler_get(t, &smp, &err)) {
		fprintf(stderr, "heapctl: warning: %s\n", err.msg);
		memset(&err, 0, sizeof(err));
	}
	cli_timing(env, t);
	cli_read_comm(env->pid, name, sizeof(name));
	if (env->json)
		print_json(env->pid, name, &w, &smp, &in);
	else
		print_human(env->pid, name, &w, &in, &smp);
	/* The where strings belong to t: print before closing. */
	cli_close(t);
	return CLI_EXIT_OK;
}
