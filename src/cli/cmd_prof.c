// SPDX-License-Identifier: MIT
/*
 * cmd_prof.c: heapctl prof on|off|reset|status — the heap profiler's
 * switches: jemalloc's opt.prof (fixed at start) and prof.active (sampling
 * now or not); gperftools' HeapProfilerStart/Stop (full libtcmalloc only);
 * heapctl's sampler.  "off" stops sampling and keeps what was sampled, as
 * jemalloc's prof.active does; "reset" forgets it (and takes heapctl's
 * hooks out when sampling is off).  Where there is no profiler (glibc,
 * tcmalloc_minimal), "status" says so and "off" holds already; only "on"
 * fails.
 */
#include <string.h>

#include "cli.h"

enum prof_op { PROF_STATUS, PROF_ON, PROF_OFF, PROF_RESET };

struct prof_state {
	enum cli_prof_kind kind;
	const char *allocator;
	bool enabled, active, changed, prev, reset;
	bool was_kept; /* heapctl's sampler was off with its samples kept */
	char why[256]; /* no profiler: the library's hint, or "" */
	struct hc_sampler smp; /* heapctl's sampler, if it is loaded */
};

/*
 * heapctl's sampler answers once it is on, or was just switched, or is
 * loaded where the allocator has no profiler.
 */
static bool sampler_answers(const struct prof_state *p)
{
	return p->smp.installed && (p->smp.enabled || p->smp.switched || p->kind == CLI_PROF_NONE ||
				    p->kind == CLI_PROF_MINIMAL);
}

/* Which profiler answers: the sampler, else the allocator's. */
static const char *profiler(const struct prof_state *p)
{
	if (sampler_answers(p))
		return "heapctl-sampler";
	switch (p->kind) {
	case CLI_PROF_JEMALLOC:
		return p->enabled ? "jemalloc" : "none";
	case CLI_PROF_GPERF:
		return "gperftools";
	default:
		return "none";
	}
}

static void sampler_text(const struct cli_env *env, const struct prof_state *p)
{
	const struct hc_sampler *s = &p->smp;
	int pid = (int)env->pid;
	char iv[32], why[200];
	const char *now = s->enabled ? "sampling" : s->kept ? "off, samples kept" : "off, hooks removed";

	cli_size(s->interval, iv, sizeof(iv));
	/*
	 * A bare prof on starts the sampler at the default interval; one that
	 * sampled already keeps its own, and what it sampled: said, with why.
	 */
	why[0] = '\0';
	if (s->enabled && (p->prev || p->was_kept) && !env->topts.sample_bytes &&
	    s->interval != HC_SAMPLE_BYTES_DEFAULT)
		snprintf(why, sizeof(why), " (it had sampled already: its interval and its "
			 "samples are kept; 'heapctl prof reset' first starts a new profile at the "
			 "default)");
	if (p->reset)
		printf("heapctl's sampler: samples discarded%s\n",
		       s->enabled ? "; a new profile starts now" : ", hooks removed");
	else if (p->changed)
		printf("heapctl's sampler: %s -> %s%s\n", p->prev ? "sampling" : p->was_kept ?
		       "off, samples kept" : "off", now, s->loaded_now ? " (loaded into the process now)" : "");
	printf("profiling: heapctl's sampler (the allocator has no profiler running): %s, one "
	       "sample per %s on average%s\n", now, iv, why);
	if (s->enabled || s->kept) {
		printf("sampler: %llu samples, %llu live, %llu stacks; %u %s in %u objects\n",
		       (unsigned long long)s->samples, (unsigned long long)s->live,
		       (unsigned long long)s->stacks, s->hooks,
		       s->inlined ? "functions hooked inline" : "GOT slots hooked", s->nobjs);
		for (unsigned i = 0; i < s->nobjs; i++)
			printf("  %3u  %s\n", s->objs[i].hooks, s->objs[i].path);
	}
	if (s->dropped)
		printf("warning: %llu samples lost: the sampler's tables are full\n",
		       (unsigned long long)s->dropped);
	if (s->lost)
		printf("warning: %u hooked %s were changed by the process since; left as they are\n",
		       s->lost, s->inlined ? "functions" : "GOT slots");
	if (s->kept)
		printf("note: the hooks stay and see the frees, so 'heapctl dump -p %d' still shows what "
		       "was sampled and is live; 'heapctl prof reset -p %d' discards it and removes "
		       "them\n", pid, pid);
	if (p->changed && s->enabled && !p->prev && !p->was_kept && !p->reset)
		printf("note: allocations made before now are not seen; 'heapctl dump -p %d' shows what "
		       "is allocated from here on and still live\n", pid);
}

static void print_state(const struct cli_env *env, const struct prof_state *p)
{
	if (env->json) {
		printf("{\"pid\":%d,\"allocator\":", (int)env->pid);
		hc_json_str(stdout, p->allocator ? p->allocator : "");
		printf(",\"available\":%s,\"enabled\":%s,\"active\":%s,\"profiler\":\"%s\"",
		       cli_bool(p->enabled), cli_bool(p->enabled), cli_bool(p->active), profiler(p));
		if (p->changed)
			printf(",\"previous_active\":%s", cli_bool(p->prev));
		cli_sampler_json(&p->smp);
		fputs("}\n", stdout);
		return;
	}
	if (!strcmp(profiler(p), "heapctl-sampler")) {
		sampler_text(env, p);
		return;
	}
	switch (p->kind) {
	case CLI_PROF_JEMALLOC:
		if (p->reset)
			printf("prof.reset: the samples were discarded; a new profile starts now\n");
		else if (p->changed)
			printf("prof.active: %s -> %s\n", cli_yesno(p->prev), cli_yesno(p->active));
		printf("profiling: enabled at start (opt.prof): %s; active (prof.active): %s\n",
		       cli_yesno(p->enabled), cli_yesno(p->active));
		if (!p->enabled && p->smp.cannot_load)
			printf("note: restart with MALLOC_CONF=prof:true,prof_active:false for "
			       "jemalloc's own profiler (%s)\n", p->smp.why);
		else if (!p->enabled)
			printf("note: 'heapctl prof on' loads heapctl's sampler instead (or restart with "
			       "MALLOC_CONF=prof:true,prof_active:false for jemalloc's own)\n");
		break;
	case CLI_PROF_GPERF:
		if (p->changed)
			printf("heap profiler: %s -> %s\n", p->prev ? "running" : "stopped",
			       p->active ? "running" : "stopped");
		printf("profiling: gperftools heap profiler: available; running: %s\n",
		       cli_yesno(p->active));
		/* its exit-time dump would go to heapctl's prefix, which is gone */
		if (p->changed && p->active && !p->prev)
			printf("note: run 'heapctl prof off -p %d' before the process exits\n",
			       (int)env->pid);
		break;
	case CLI_PROF_MINIMAL:
	case CLI_PROF_NONE:
		printf("profiling: %s has no heap profiler\n",
		       p->kind == CLI_PROF_MINIMAL ? "tcmalloc_minimal" :
		       p->allocator ? p->allocator : "the allocator");
		/* the one place that knows whether the sampler can be loaded has said so */
		if (p->smp.cannot_load)
			printf("note: %s\nhint: %s\n", p->smp.why, p->smp.hint);
		else
			printf("note: 'heapctl prof on' loads heapctl's sampler\n");
		break;
	}
}

/*
 * err says there is no profiler to switch (glibc), or none enabled at start:
 * then ps says so, with the library's hint, and err is cleared.
 */
static bool no_profiler(struct hc_err *err, struct prof_state *ps)
{
	if (err->code != HC_E_UNSUPPORTED && err->code != HC_E_PROF_OFF)
		return false;
	if (err->code == HC_E_UNSUPPORTED) {
		snprintf(ps->why, sizeof(ps->why), "%s", err->hint);
		ps->kind = CLI_PROF_NONE;
	}
	memset(err, 0, sizeof(*err));
	ps->enabled = ps->active = ps->prev = false;
	return true;
}

int cmd_prof(struct cli_env *env)
{
	const char *word = env->args[0];
	struct prof_state ps = { 0 };
	struct hc_target *t;
	struct hc_where w;
	struct hc_err err;
	enum prof_op op;

	if (!strcmp(word, "status"))
		op = PROF_STATUS;
	else if (!strcmp(word, "on"))
		op = PROF_ON;
	else if (!strcmp(word, "off"))
		op = PROF_OFF;
	else if (!strcmp(word, "reset"))
		op = PROF_RESET;
	else
		return cli_usage(env, "unknown prof action '%s' (expected on, off, reset or status)",
				 word);

	memset(&err, 0, sizeof(err));
	memset(&w, 0, sizeof(w));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	hc_target_where(t, &w);
	ps.allocator = w.allocator;
	ps.kind = cli_prof_kind(w.allocator);
	/*
	 * "on" and "off" change the switch and read its old value in one step;
	 * "status" only reads.  Without a profiler that can run, "off" already
	 * holds: it succeeds, so that scripts can always run "prof off" to
	 * clean up.  "on" fails with the library's hint for this allocator.
	 */
	if (op != PROF_STATUS) {
		if (hc_sampler_get(t, &ps.smp, &err))
			goto fail;
		ps.was_kept = ps.smp.kept;
	}
	if (op == PROF_RESET) {
		/* gperftools' profiler has no reset: that is an error, not "no profiler" */
		if (hc_prof_reset(t, &err) || hc_prof_get(t, &ps.enabled, &ps.active, &err)) {
			if (ps.kind == CLI_PROF_GPERF || !no_profiler(&err, &ps))
				goto fail;
		}
		ps.reset = true;
	} else if (op == PROF_STATUS ? hc_prof_get(t, &ps.enabled, &ps.active, &err) :
				       hc_prof_set(t, op == PROF_ON, &ps.prev, &err)) {
		if (op == PROF_ON || !no_profiler(&err, &ps))
			goto fail;
	} else if (op != PROF_STATUS) {
		ps.enabled = true;
		ps.active = op == PROF_ON;
	}
	if (hc_sampler_get(t, &ps.smp, &err))
		goto fail;
	if (sampler_answers(&ps)) {
		ps.enabled = true;
		ps.active = ps.smp.enabled;
	}
	cli_timing(env, t);
	ps.changed = op != PROF_STATUS;
	/* The where strings belong to t: print before closing. */
	print_state(env, &ps);
	cli_close(t);
	return CLI_EXIT_OK;

fail:
	cli_close(t);
	return cli_fail(env, &err);
}
