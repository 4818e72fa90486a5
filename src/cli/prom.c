// SPDX-License-Identifier: MIT
/*
 * prom.c: Prometheus' text exposition format, gathered before it is written.
 *
 * The format wants every sample of a metric family together, under one
 * HELP and one TYPE line (promtool check metrics refuses a family split in
 * two).  `stats --format prometheus` prints one process, where that holds
 * by itself; `serve` prints every process it drives, so samples are added
 * per process and written per family at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_prom_fam {
	char name[96];
	char help[160];
	const char *type;
	char *text; /* the samples' lines */
	size_t len, cap;
};

struct cli_prom {
	struct cli_prom_fam *fam;
	size_t n, cap;
	bool oom;
};

struct cli_prom *cli_prom_new(void)
{
	return calloc(1, sizeof(struct cli_prom));
}

void cli_prom_free(struct cli_prom *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->fam[i].text);
	free(p->fam);
	free(p);
}

/* heapctl_NAME: [a-zA-Z0-9_] kept, anything else '_'; _bytes added for a size. */
void cli_prom_name(char *out, size_t len, const char *name, bool bytes)
{
	size_t i, n = (size_t)snprintf(out, len, "heapctl_%s", name);

	if (n >= len)
		n = len - 1;
	for (i = 8; i < n; i++)
		if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= 'A' && out[i] <= 'Z') ||
		      (out[i] >= '0' && out[i] <= '9')))
			out[i] = '_';
	if (bytes && (n < 6 || strcmp(out + n - 6, "_bytes")))
		snprintf(out + n, len - n, "_bytes");
}

static struct cli_prom_fam *family(struct cli_prom *p, const char *name, const char *type,
				   const char *help)
{
	struct cli_prom_fam *f;

	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->fam[i].name, name))
			return &p->fam[i];
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		void *m = realloc(p->fam, cap * sizeof(*p->fam));

		if (!m) {
			p->oom = true;
			return NULL;
		}
		p->fam = m;
		p->cap = cap;
	}
	f = &p->fam[p->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	/* HELP text: backslash and newline escaped */
	for (size_t i = 0, o = 0; help[i] && o + 3 < sizeof(f->help); i++) {
		if (help[i] == '\\' || help[i] == '\n')
			f->help[o++] = '\\';
		f->help[o++] = help[i] == '\n' ? 'n' : help[i];
		f->help[o] = '\0';
	}
	f->type = type;
	return f;
}

static void append(struct cli_prom *p, struct cli_prom_fam *f, const char *s, size_t n)
{
	if (f->len + n + 1 > f->cap) {
		size_t cap = (f->len + n + 1) * 2;
		char *m = realloc(f->text, cap);

		if (!m) {
			p->oom = true;
			return;
		}
		f->text = m;
		f->cap = cap;
	}
	memcpy(f->text + f->len, s, n);
	f->len += n;
	f->text[f->len] = '\0';
}

/* A label value: backslash, double quote and newline escaped, as the format wants. */
static void label_value(struct cli_prom *p, struct cli_prom_fam *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			append(p, f, "\\", 1);
		if (*s == '\n')
			append(p, f, "\\n", 2);
		else
			append(p, f, s, 1);
	}
}

static void add(struct cli_prom *p, const char *name, const char *type, const char *help,
		const struct cli_prom_labels *l, const char *key, const char *val, const char *value)
{
	struct cli_prom_fam *f = family(p, name, type, help);
	char buf[32];
	int n;

	if (!f)
		return;
	append(p, f, name, strlen(name));
	/* no label at all: no braces (serve's own figures) */
	if (l->pid <= 0 && !l->comm && !l->allocator && !l->container && !key) {
		append(p, f, " ", 1);
		goto value;
	}
	if (l->pid > 0)
		n = snprintf(buf, sizeof(buf), "{pid=\"%d\"", (int)l->pid);
	else
		n = snprintf(buf, sizeof(buf), "{");
	append(p, f, buf, (size_t)n);
	if (l->comm) {
		append(p, f, l->pid > 0 ? ",comm=\"" : "comm=\"", l->pid > 0 ? 7 : 6);
		label_value(p, f, l->comm);
		append(p, f, "\"", 1);
	}
	if (l->allocator) {
		append(p, f, ",allocator=\"", 12);
		label_value(p, f, l->allocator);
		append(p, f, "\"", 1);
	}
	if (l->container) {
		append(p, f, ",container=\"", 12);
		label_value(p, f, l->container);
		append(p, f, "\"", 1);
	}
	if (key) {
		if (l->pid > 0 || l->comm || l->allocator || l->container)
			append(p, f, ",", 1);
		append(p, f, key, strlen(key));
		append(p, f, "=\"", 2);
		label_value(p, f, val);
		append(p, f, "\"", 1);
	}
	append(p, f, "} ", 2);
value:
	append(p, f, value, strlen(value));
	append(p, f, "\n", 1);
}

void cli_prom_u64(struct cli_prom *p, const char *name, const char *type, const char *help,
		  const struct cli_prom_labels *l, const char *key, const char *val, uint64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	add(p, name, type, help, l, key, val, num);
}

void cli_prom_f64(struct cli_prom *p, const char *name, const char *type, const char *help,
		  const struct cli_prom_labels *l, const char *key, const char *val, double v)
{
	char num[40];

	snprintf(num, sizeof(num), "%.9g", v);
	add(p, name, type, help, l, key, val, num);
}

int cli_prom_write(const struct cli_prom *p, FILE *f)
{
	if (p->oom)
		return -1;
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s", p->fam[i].name, p->fam[i].help,
			p->fam[i].name, p->fam[i].type, p->fam[i].text ? p->fam[i].text : "");
	return 0;
}
