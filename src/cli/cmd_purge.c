// SPDX-License-Identifier: MIT
/*
 * cmd_purge.c: heapctl purge — return dirty pages to the OS, and show what
 * that bought: dirty and RSS before and after.
 */
#include <string.h>

#include "cli.h"

/* Only sizes go in "before" and "after": counts, flags and peaks are not what purge moves. */
static bool is_size(const struct hc_figure *f)
{
	return !strstr(f->what, "(count)") && !strstr(f->what, "(0/1)") &&
	       strncmp(f->name, "peak_", 5);
}

static void json_side(const char *key, const struct hc_stats *st)
{
	unsigned i;

	printf(",\"%s\":{\"dirty\":", key);
	/* an allocator that counts no live bytes (mimalloc) cannot tell what is dirty */
	if (st->live_unknown)
		fputs("null", stdout);
	else
		printf("%llu", (unsigned long long)st->dirty);
	printf(",\"muzzy\":%llu,\"rss\":%llu", (unsigned long long)st->muzzy,
	       (unsigned long long)st->rss);
	for (i = 0; i < st->nfig; i++) {
		if (!is_size(&st->fig[i]) || !strcmp(st->fig[i].name, "dirty"))
			continue;
		putchar(',');
		hc_json_str(stdout, st->fig[i].name);
		printf(":%llu", (unsigned long long)st->fig[i].value);
	}
	putchar('}');
}

/*
 * {"pid":N,"allocator":S,"narenas":N,"arena":N|null,"before":{...},
 *  "after":{...},"released":N}: sizes in bytes; docs/cli.md has the schema.
 */
static void print_json(const struct cli_env *env, const struct hc_stats *before,
		       const struct hc_stats *after)
{
	printf("{\"pid\":%d,\"allocator\":", (int)env->pid);
	hc_json_str(stdout, before->allocator);
	printf(",\"narenas\":%u,\"arena\":", before->narenas);
	if (env->arena < 0)
		fputs("null", stdout);
	else
		printf("%d", env->arena);
	json_side("before", before);
	json_side("after", after);
	printf(",\"released\":%llu}\n",
	       (unsigned long long)(after->rss < before->rss ? before->rss - after->rss : 0));
}

static void line(const char *name, uint64_t before, uint64_t after)
{
	char a[32], b[32];

	printf("%-10s%10s -> %s\n", name, cli_size(before, a, sizeof(a)),
	       cli_size(after, b, sizeof(b)));
}

int cmd_purge(struct cli_env *env)
{
	struct hc_stats before, after;
	struct hc_target *t;
	struct hc_err err;
	char size[32];

	memset(&err, 0, sizeof(err));
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	/* before, purge, after: one borrow */
	hc_session_begin(t);
	if (hc_stats_get(t, &before, &err) || hc_purge(t, env->arena, &err) ||
	    hc_stats_get(t, &after, &err) || hc_session_end(t, &err)) {
		(void)hc_session_end(t, &err);
		goto fail;
	}
	cli_timing(env, t);
	cli_close(t);

	/*
	 * musl: nothing was called, and that is the answer, not a failure:
	 * the memory is where purge would have put it (exit 0).
	 */
	if (before.purge_note[0] && env->json) {
		printf("{\"pid\":%d,\"allocator\":", (int)env->pid);
		hc_json_str(stdout, before.allocator);
		fputs(",\"purged\":false,\"note\":", stdout);
		hc_json_str(stdout, before.purge_note);
		printf(",\"rss\":%llu}\n", (unsigned long long)before.rss);
		return CLI_EXIT_OK;
	}
	if (before.purge_note[0]) {
		printf("nothing to purge in pid %d (%s): %s\n", (int)env->pid, before.allocator,
		       before.purge_note);
		line("rss", before.rss, after.rss);
		return CLI_EXIT_OK;
	}
	if (env->json) {
		print_json(env, &before, &after);
		return CLI_EXIT_OK;
	}
	if (before.nfig) {
		/* glibc, tcmalloc, mimalloc: their own figures, before and after */
		printf("purged pid %d (%s, %u arena%s)\n", (int)env->pid, before.allocator,
		       before.narenas, before.narenas == 1 ? "" : "s");
		for (unsigned i = 0; i < before.nfig && i < after.nfig; i++)
			if (is_size(&before.fig[i]))
				line(before.fig[i].name, before.fig[i].value, after.fig[i].value);
	} else if (env->arena < 0)
		printf("purged all %u arenas of pid %d\n", before.narenas, (int)env->pid);
	else
		printf("purged arena %d of pid %d\n", env->arena, (int)env->pid);
	if (!before.nfig)
		line("dirty", before.dirty, after.dirty);
	if (before.muzzy || after.muzzy)
		line("muzzy", before.muzzy, after.muzzy);
	line("rss", before.rss, after.rss);
	if (after.rss < before.rss)
		printf("%-10s%10s back to the OS\n", "released",
		       cli_size(before.rss - after.rss, size, sizeof(size)));
	else if (!before.dirty && !before.muzzy && !before.live_unknown)
		printf("%-10s%10s (there was nothing to purge)\n", "released", "0 B");
	else
		printf("%-10s%10s (RSS did not drop; the program may have allocated meanwhile)\n",
		       "released", "0 B");
	return CLI_EXIT_OK;

fail:
	cli_close(t);
	return cli_fail(env, &err);
}
