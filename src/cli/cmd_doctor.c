// SPDX-License-Identifier: MIT
/*
 * cmd_doctor.c: heapctl doctor — why the process's RSS is what it is.  One
 * borrow reads the allocator's figures (and, for jemalloc, the decay
 * settings the advice depends on); /proc/PID/smaps is read once the thread
 * is given back; hc_doctor_run() does the reasoning.
 */
#include <string.h>

#include "cli.h"

/* Decay settings and background_thread, each best effort: the advice is vaguer without. */
static void jemalloc_settings(struct hc_target *t, struct hc_doctor_settings *s)
{
	struct hc_value v;
	struct hc_err e;

	memset(&e, 0, sizeof(e));
	if (!hc_ctl_get(t, "arena.0.dirty_decay_ms", &v, &e))
		s->dirty_decay_ms = v.i;
	memset(&e, 0, sizeof(e));
	if (!hc_ctl_get(t, "arena.0.muzzy_decay_ms", &v, &e))
		s->muzzy_decay_ms = v.i;
	memset(&e, 0, sizeof(e));
	if (!hc_ctl_get(t, "background_thread", &v, &e))
		s->background_thread = v.b;
}

static void json_ratio(const char *key, double r, bool first)
{
	printf("%s\"%s\":", first ? "" : ",", key);
	if (r > 0)
		printf("%.2f", r);
	else
		fputs("null", stdout);
}

static void json_findings(const struct hc_doctor *d, bool rss)
{
	bool first = true;

	for (unsigned i = 0; i < d->n; i++) {
		const struct hc_finding *f = &d->f[i];

		if (f->rss != rss)
			continue;
		printf("%s{\"cause\":\"%s\",\"bytes\":%llu,\"explanation\":", first ? "" : ",",
		       hc_cause_key(f->cause), (unsigned long long)f->bytes);
		hc_json_str(stdout, f->explanation);
		fputs(",\"advice\":", stdout);
		hc_json_str(stdout, f->advice);
		putchar('}');
		first = false;
	}
}

/* "key":N, or null where the allocator counts no live bytes */
static void json_live(const char *key, uint64_t v, const struct hc_stats *st)
{
	printf(",\"%s\":", key);
	if (st->live_unknown)
		fputs("null", stdout);
	else
		printf("%llu", (unsigned long long)v);
}

static void print_json(pid_t pid, const struct hc_stats *st, const struct hc_doctor *d)
{
	printf("{\"pid\":%d,\"allocator\":", (int)pid);
	hc_json_str(stdout, st->allocator);
	fputs(",\"version\":", stdout);
	hc_json_str(stdout, st->version);
	printf(",\"rss\":%llu", (unsigned long long)d->rss);
	json_live("allocated", d->allocated, st);
	json_live("live", d->live, st);
	json_live("active", d->active, st);
	printf(",\"resident\":%llu,\"threads\":%u,\"arenas\":%u,\"unexplained\":%llu,"
	       "\"ratios\":{",
	       (unsigned long long)d->resident, d->threads, d->narenas,
	       (unsigned long long)d->unexplained);
	json_ratio("fragmentation", d->frag_ratio, true);
	json_ratio("allocator_fragmentation", d->alloc_frag_ratio, false);
	json_ratio("allocator_rss", d->alloc_rss_ratio, false);
	json_ratio("rss_overhead", d->rss_overhead_ratio, false);
	fputs("},\"findings\":[", stdout);
	json_findings(d, true);
	fputs("],\"not_rss\":[", stdout);
	json_findings(d, false);
	fputs("]}\n", stdout);
}

/* Text wrapped at 76 columns, each line after the first indented by ind. */
static void wrap(const char *s, int col, int ind)
{
	while (*s) {
		int room = 78 - col, n = (int)strlen(s), cut = n;

		if (n > room) {
			for (cut = room; cut > 0 && s[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = room;
		}
		printf("%.*s\n", cut, s);
		s += cut;
		while (*s == ' ')
			s++;
		if (*s)
			printf("%*s", ind, "");
		col = ind;
	}
}

static void print_finding(const struct hc_finding *f)
{
	char b[32];

	printf("  %10s  %-13s ", cli_size(f->bytes, b, sizeof(b)), hc_cause_key(f->cause));
	wrap(f->explanation, 28, 28);
	printf("%28s", "-> ");
	wrap(f->advice, 28, 28);
}

static void print_ratio(const char *what, double r)
{
	if (r > 0)
		printf("  %-46s %6.2f\n", what, r);
	else
		printf("  %-46s %6s\n", what, "-");
}

static void print_human(pid_t pid, const struct hc_stats *st, const struct hc_doctor *d)
{
	char comm[64] = "?", a[32], b[32];
	bool any = false;

	if (cli_read_comm(pid, comm, sizeof(comm)))
		snprintf(comm, sizeof(comm), "?");
	if (st->live_unknown)
		printf("pid %d (%s), %s %s: RSS %s, of which %s %s has committed: its live "
		       "allocations and its free memory, which it does not count apart\n",
		       (int)pid, comm, st->allocator, st->version, cli_size(d->rss, a, sizeof(a)),
		       cli_size(d->resident, b, sizeof(b)), st->allocator);
	else
		printf("pid %d (%s), %s %s: RSS %s, live allocations %s\n", (int)pid, comm,
		       st->allocator, st->version, cli_size(d->rss, a, sizeof(a)),
		       cli_size(d->live, b, sizeof(b)));
	print_ratio("fragmentation (RSS / allocated)", d->frag_ratio);
	print_ratio("allocator fragmentation (active / allocated)", d->alloc_frag_ratio);
	print_ratio("allocator RSS (resident / active)", d->alloc_rss_ratio);
	print_ratio("RSS overhead (RSS / allocator resident)", d->rss_overhead_ratio);
	printf("\nThe rest of the RSS, largest first:\n");
	for (unsigned i = 0; i < d->n; i++) {
		if (!d->f[i].rss)
			continue;
		print_finding(&d->f[i]);
		any = true;
	}
	if (!any)
		printf("  nothing: %s are the whole RSS\n",
		       st->live_unknown ? "those" : "live allocations");
	if (d->unexplained)
		printf("  %10s  %-13s %s\n", cli_size(d->unexplained, a, sizeof(a)), "(unexplained)",
		       "what the figures above do not cover");
	for (unsigned i = 0; i < d->n; i++) {
		if (d->f[i].rss)
			continue;
		printf("\nNot RSS:\n");
		for (; i < d->n; i++)
			print_finding(&d->f[i]);
	}
}

int cmd_doctor(struct cli_env *env)
{
	struct hc_doctor_settings set = {
		.dirty_decay_ms = HC_DECAY_UNKNOWN,
		.muzzy_decay_ms = HC_DECAY_UNKNOWN,
		.background_thread = -1,
	};
	struct hc_target *t;
	struct hc_stats st;
	struct hc_maps m;
	struct hc_doctor d;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	memset(&st, 0, sizeof(st));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	/* the figures and the settings the advice needs: one borrow */
	hc_session_begin(t);
	if (hc_stats_get(t, &st, &err)) {
		(void)hc_session_end(t, &err);
		goto fail;
	}
	if (!strcmp(st.allocator, "jemalloc"))
		jemalloc_settings(t, &set);
	if (hc_session_end(t, &err))
		goto fail;
	cli_timing(env, t);
	cli_close(t);
	if (st.warning[0])
		cli_log(HC_LOG_WARN, "%s", st.warning);
	/* smaps right after, with the thread given back */
	if (hc_maps_read(env->pid, &m, &err))
		return cli_fail(env, &err);
	hc_doctor_run(env->pid, &st, &m, &set, &d);
	if (env->json)
		print_json(env->pid, &st, &d);
	else
		print_human(env->pid, &st, &d);
	return CLI_EXIT_OK;
fail:
	cli_close(t);
	return cli_fail(env, &err);
}
