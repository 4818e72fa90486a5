// SPDX-License-Identifier: MIT
/*
 * cmd_prof.c: heapctl prof on|off|status — the heap profiler's switches:
 * jemalloc's opt.prof (fixed at start) and prof.active (sampling now or
 * not); gperftools' HeapProfilerStart/Stop (full libtcmalloc only).  Where
 * there is no profiler (glibc, tcmalloc_minimal), "status" says so and
 * "off" holds already; only "on" fails.
 */
#include <string.h>

#include "cli.h"

enum prof_op { PROF_STATUS, PROF_ON, PROF_OFF };

struct prof_state {
	enum cli_prof_kind kind;
	const char *allocator;
	bool enabled, active, changed, prev;
	char why[256]; /* no profiler: the library's hint, or "" */
};

static void print_state(const struct cli_env *env, const struct prof_state *p)
{
	if (env->json) {
		printf("{\"pid\":%d,\"allocator\":", (int)env->pid);
		hc_json_str(stdout, p->allocator ? p->allocator : "");
		printf(",\"available\":%s,\"enabled\":%s,\"active\":%s", cli_bool(p->enabled),
		       cli_bool(p->enabled), cli_bool(p->active));
		if (p->changed)
			printf(",\"previous_active\":%s", cli_bool(p->prev));
		fputs("}\n", stdout);
		return;
	}
	switch (p->kind) {
	case CLI_PROF_JEMALLOC:
		if (p->changed)
			printf("prof.active: %s -> %s\n", cli_yesno(p->prev), cli_yesno(p->active));
		printf("profiling: enabled at start (opt.prof): %s; active (prof.active): %s\n",
		       cli_yesno(p->enabled), cli_yesno(p->active));
		if (!p->enabled)
			printf("note: restart with MALLOC_CONF=prof:true,prof_active:false to allow "
			       "'heapctl prof on'\n");
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
		printf("profiling: unavailable (tcmalloc_minimal has no heap profiler)\n");
		printf("note: start the process with the full libtcmalloc (LD_PRELOAD=libtcmalloc.so.4, "
		       "or link -ltcmalloc instead of -ltcmalloc_minimal) to allow 'heapctl prof on'\n");
		break;
	case CLI_PROF_NONE:
		printf("profiling: unavailable (%s has no heap profiler)\n",
		       p->allocator ? p->allocator : "the allocator");
		if (p->why[0])
			printf("note: %s\n", p->why);
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
	else
		return cli_usage(env, "unknown prof action '%s' (expected on, off or status)",
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
	if (op == PROF_STATUS ? hc_prof_get(t, &ps.enabled, &ps.active, &err) :
				hc_prof_set(t, op == PROF_ON, &ps.prev, &err)) {
		if (op == PROF_ON || !no_profiler(&err, &ps))
			goto fail;
	} else if (op != PROF_STATUS) {
		ps.enabled = true;
		ps.active = op == PROF_ON;
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
