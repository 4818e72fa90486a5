// SPDX-License-Identifier: MIT
/*
 * cmd_stats.c: heapctl stats — where the heap memory is, in words.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	size_t off;
	const char *what;
} figures[] = {
	{ "allocated", offsetof(struct hc_stats, allocated), "live bytes the program holds" },
	{ "active", offsetof(struct hc_stats, active), "pages backing live allocations" },
	{ "metadata", offsetof(struct hc_stats, metadata), "allocator bookkeeping" },
	{ "resident", offsetof(struct hc_stats, resident), "allocator pages in RAM" },
	{ "mapped", offsetof(struct hc_stats, mapped), "mapped by the allocator (active extents)" },
	{ "retained", offsetof(struct hc_stats, retained),
	  "virtual memory kept for reuse (not RSS)" },
	{ "dirty", offsetof(struct hc_stats, dirty),
	  "freed pages not yet returned to the OS (heapctl purge)" },
	{ "muzzy", offsetof(struct hc_stats, muzzy), "lazily purged pages" },
	{ "rss", offsetof(struct hc_stats, rss), "process resident set (all memory, from /proc)" },
};

static uint64_t figure(const struct hc_stats *st, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)st + figures[i].off, sizeof(v));
	return v;
}

static void print_human(pid_t pid, const struct hc_stats *st)
{
	const char *unit;
	char num[32];
	size_t i;

	/* 0: the allocator has none to count (musl), or they could not be counted */
	if (st->narenas)
		printf("%s %s, pid %d, %u arena%s\n", st->allocator, st->version, (int)pid,
		       st->narenas, st->narenas == 1 ? "" : "s");
	else
		printf("%s %s, pid %d\n", st->allocator, st->version, (int)pid);
	if (st->nfig) {
		int w = 12;

		for (i = 0; i < st->nfig; i++)
			if ((int)strlen(st->fig[i].name) > w)
				w = (int)strlen(st->fig[i].name);
		/* counts (ordblks) read better as plain numbers */
		for (i = 0; i < st->nfig; i++) {
			if (strstr(st->fig[i].what, "(count)") || strstr(st->fig[i].what, "(0/1)")) {
				printf("%-*s %9llu       %s\n", w, st->fig[i].name,
				       (unsigned long long)st->fig[i].value, st->fig[i].what);
			} else {
				cli_size_parts(st->fig[i].value, num, sizeof(num), &unit);
				printf("%-*s %9s %-3s   %s\n", w, st->fig[i].name, num, unit,
				       st->fig[i].what);
			}
		}
		cli_size_parts(st->rss, num, sizeof(num), &unit);
		printf("%-*s %9s %-3s   %s\n", w, "rss", num, unit, figures[8].what);
		return;
	}
	for (i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		cli_size_parts(figure(st, i), num, sizeof(num), &unit);
		printf("%-12s%6s %-3s   %s\n", figures[i].name, num, unit, figures[i].what);
	}
}

void cli_stats_json(FILE *f, pid_t pid, const struct hc_stats *st, double time,
		    const char *extra)
{
	size_t i;

	fputc('{', f);
	if (time >= 0)
		fprintf(f, "\"time\":%.3f,", time);
	fprintf(f, "\"pid\":%d,\"allocator\":", (int)pid);
	hc_json_str(f, st->allocator);
	fputs(",\"version\":", f);
	hc_json_str(f, st->version);
	if (st->nfig) {
		/* what every driver fills, as --format prometheus gives them too */
		if (!st->live_unknown)
			fprintf(f, ",\"allocated\":%llu,\"dirty\":%llu",
				(unsigned long long)st->allocated, (unsigned long long)st->dirty);
		for (i = 0; i < st->nfig; i++) {
			fputc(',', f);
			hc_json_str(f, st->fig[i].name);
			fprintf(f, ":%llu", (unsigned long long)st->fig[i].value);
		}
		fprintf(f, ",\"rss\":%llu", (unsigned long long)st->rss);
		if (st->warning[0]) {
			fputs(",\"warning\":", f);
			hc_json_str(f, st->warning);
		}
	} else {
		for (i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
			fprintf(f, ",\"%s\":%llu", figures[i].name, (unsigned long long)figure(st, i));
	}
	fprintf(f, ",\"narenas\":%u%s}", st->narenas, extra ? extra : "");
}

static void prom_metric(struct cli_prom *p, const char *name, bool bytes, const char *help,
			uint64_t v, const struct cli_prom_labels *l)
{
	char m[96];

	cli_prom_name(m, sizeof(m), name, bytes);
	cli_prom_u64(p, m, "gauge", help, l, NULL, NULL, v);
}

/*
 * heapctl doctor's findings, one series per cause: from the figures of the
 * same borrow and smaps, read now that the thread is given back.  Nothing
 * when smaps cannot be read (the process has just exited).
 */
struct hc_doctor *cli_stats_findings(pid_t pid, const struct hc_stats *st)
{
	struct hc_doctor *d = malloc(sizeof(*d));
	struct hc_maps m;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	if (!d || hc_maps_read(pid, &m, &err)) {
		free(d);
		return NULL;
	}
	hc_doctor_run(pid, st, &m, NULL, d);
	return d;
}

/* given: what cli_stats_findings() found, or NULL to look now */
static void prom_findings(struct cli_prom *p, const struct cli_prom_labels *l,
			  const struct hc_stats *st, const struct hc_doctor *given)
{
	struct hc_doctor *mine = given ? NULL : cli_stats_findings(l->pid, st);
	const struct hc_doctor *d = given ? given : mine;

	if (!d)
		return;
	for (unsigned i = 0; i < d->n; i++)
		cli_prom_u64(p, "heapctl_finding_bytes", "gauge",
			     "what heapctl doctor finds behind the RSS, by cause "
			     "(retained: address space, not RSS)",
			     l, "cause", hc_cause_key(d->f[i].cause), d->f[i].bytes);
	free(mine);
}

void cli_stats_prom_add(struct cli_prom *p, const struct cli_prom_labels *l,
			const struct hc_stats *st, const struct hc_doctor *d)
{
	size_t i;

	if (!st->nfig) {
		for (i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
			prom_metric(p, figures[i].name, true, figures[i].what, figure(st, i), l);
		prom_findings(p, l, st, d);
		return;
	}
	/* what every driver fills but one that counts no live bytes, then its own figures */
	if (!st->live_unknown) {
		prom_metric(p, "allocated", true, figures[0].what, st->allocated, l);
		prom_metric(p, "dirty", true, "free memory the allocator can return (heapctl purge)",
			    st->dirty, l);
	}
	for (i = 0; i < st->nfig; i++)
		prom_metric(p, st->fig[i].name,
			    !strstr(st->fig[i].what, "(count)") && !strstr(st->fig[i].what, "(0/1)"),
			    st->fig[i].what, st->fig[i].value, l);
	prom_metric(p, "rss", true, figures[8].what, st->rss, l);
	prom_findings(p, l, st, d);
}

void cli_stats_prom(FILE *f, pid_t pid, const char *comm, const struct hc_stats *st)
{
	struct cli_prom_labels l = { .pid = pid, .comm = comm, .allocator = st->allocator };
	struct cli_prom *p = cli_prom_new();

	if (!p)
		return;
	cli_stats_prom_add(p, &l, st, NULL);
	cli_prom_write(p, f);
	cli_prom_free(p);
}

/*
 * The report is gathered in memory and written only once the thread is
 * given back: stdout may be a pipe nobody reads yet ("| less"), and a
 * write blocked on it must never keep the target's thread stopped.
 */
static int out_sink(void *arg, const char *buf, size_t len)
{
	/*
	 * Never ask the library to stop: the allocator is mid-report in the
	 * target.  A failure to hold it shows in ferror() at the end.
	 */
	fwrite(buf, 1, len, arg);
	return 0;
}

/* Closes t once the report is in hand. */
static int print_full(struct cli_env *env, struct hc_target *t, struct hc_err *err)
{
	char *data = NULL;
	size_t len = 0;
	bool lost;
	FILE *mem;
	const char *opts = env->stats_opts;
	struct hc_where w;

	hc_target_where(t, &w);
	if (env->raw) {
		if (!w.allocator || strcmp(w.allocator, "glibc")) {
			snprintf(err->msg, sizeof(err->msg),
				 "--raw is for glibc's malloc_info XML; pid %d uses %s", (int)env->pid,
				 w.allocator ? w.allocator : "another allocator");
			snprintf(err->hint, sizeof(err->hint), "use --full%s",
				 w.allocator && !strcmp(w.allocator, "jemalloc") ? " --opts J for JSON" :
										   "");
			err->code = HC_E_USAGE;
			cli_close(t);
			return -1;
		}
		opts = "raw";
	}
	mem = open_memstream(&data, &len);
	if (!mem) {
		cli_close(t);
		goto nomem;
	}
	if (hc_stats_print(t, opts, out_sink, mem, err)) {
		cli_close(t);
		fclose(mem);
		free(data);
		return -1;
	}
	cli_timing(env, t);
	cli_close(t);
	lost = ferror(mem);
	if (fclose(mem) || lost) {
		free(data);
		goto nomem;
	}
	errno = 0;
	if (len && fwrite(data, 1, len, stdout) != len)
		cli_stdout_failed(errno);
	free(data);
	return 0;
nomem:
	err->code = HC_E_NOMEM;
	snprintf(err->msg, sizeof(err->msg), "out of memory holding the report");
	snprintf(err->hint, sizeof(err->hint), "leave out parts with --opts (jemalloc(3))");
	return -1;
}

int cmd_stats(struct cli_env *env)
{
	struct hc_target *t;
	struct hc_stats st;
	struct hc_err err;

	memset(&err, 0, sizeof(err));
	memset(&st, 0, sizeof(st));
	t = cli_open(env, env->pid, &err);
	if (!t)
		return cli_fail(env, &err);
	if (env->full)
		return print_full(env, t, &err) ? cli_fail(env, &err) : CLI_EXIT_OK;
	if (hc_stats_get(t, &st, &err))
		goto fail;
	cli_timing(env, t);
	cli_close(t);
	if (st.warning[0])
		cli_log(HC_LOG_WARN, "%s", st.warning);
	if (env->json) {
		cli_stats_json(stdout, env->pid, &st, -1, NULL);
		putchar('\n');
	} else if (env->format) {
		char comm[64];

		cli_read_comm(env->pid, comm, sizeof(comm));
		cli_stats_prom(stdout, env->pid, comm, &st);
	} else {
		print_human(env->pid, &st);
	}
	return CLI_EXIT_OK;

fail:
	cli_close(t);
	return cli_fail(env, &err);
}
