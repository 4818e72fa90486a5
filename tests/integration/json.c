// SPDX-License-Identifier: MIT
/*
 * Just enough JSON for the harness: validate a document (RFC 8259
 * grammar), and pull scalar members out of the top-level object.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

struct jp {
	const char *p;
	const char *err;
	int depth;
};

static void ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int value(struct jp *j);

static int string(struct jp *j)
{
	if (*j->p != '"') {
		j->err = "expected a string";
		return -1;
	}
	j->p++;
	while (*j->p != '"') {
		unsigned char c = (unsigned char)*j->p;

		if (c == '\0' || c < 0x20) {
			j->err = "bad character in string";
			return -1;
		}
		if (c == '\\') {
			j->p++;
			if (*j->p == 'u') {
				int i;

				for (i = 1; i <= 4; i++) {
					if (!isxdigit((unsigned char)j->p[i])) {
						j->err = "bad \\u escape";
						return -1;
					}
				}
				j->p += 4;
			} else if (!strchr("\"\\/bfnrt", *j->p) || !*j->p) {
				j->err = "bad escape";
				return -1;
			}
		}
		j->p++;
	}
	j->p++;
	return 0;
}

static int number(struct jp *j)
{
	const char *s = j->p;

	if (*j->p == '-')
		j->p++;
	if (*j->p == '0') {
		j->p++;
	} else if (isdigit((unsigned char)*j->p)) {
		while (isdigit((unsigned char)*j->p))
			j->p++;
	} else {
		j->err = "bad number";
		return -1;
	}
	if (*j->p == '.') {
		j->p++;
		if (!isdigit((unsigned char)*j->p)) {
			j->err = "bad fraction";
			return -1;
		}
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!isdigit((unsigned char)*j->p)) {
			j->err = "bad exponent";
			return -1;
		}
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	return j->p > s ? 0 : -1;
}

static int composite(struct jp *j, char close, bool obj)
{
	if (++j->depth > 64) {
		j->err = "nested too deep";
		return -1;
	}
	j->p++;
	ws(j);
	if (*j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		ws(j);
		if (obj) {
			if (string(j))
				return -1;
			ws(j);
			if (*j->p != ':') {
				j->err = "expected ':'";
				return -1;
			}
			j->p++;
		}
		if (value(j))
			return -1;
		ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == close) {
			j->p++;
			j->depth--;
			return 0;
		}
		j->err = obj ? "expected ',' or '}'" : "expected ',' or ']'";
		return -1;
	}
}

static int value(struct jp *j)
{
	ws(j);
	switch (*j->p) {
	case '{':
		return composite(j, '}', true);
	case '[':
		return composite(j, ']', false);
	case '"':
		return string(j);
	case 't':
		if (!strncmp(j->p, "true", 4)) {
			j->p += 4;
			return 0;
		}
		break;
	case 'f':
		if (!strncmp(j->p, "false", 5)) {
			j->p += 5;
			return 0;
		}
		break;
	case 'n':
		if (!strncmp(j->p, "null", 4)) {
			j->p += 4;
			return 0;
		}
		break;
	default:
		if (*j->p == '-' || isdigit((unsigned char)*j->p))
			return number(j);
	}
	j->err = "unexpected token";
	return -1;
}

int json_valid(const char *s, char *why, size_t whysz)
{
	struct jp j = { .p = s };

	if (value(&j) == 0) {
		ws(&j);
		if (*j.p == '\0')
			return 0;
		j.err = "trailing text";
	}
	snprintf(why, whysz, "invalid JSON at offset %ld: %s", (long)(j.p - s),
		 j.err ? j.err : "?");
	return -1;
}

int json_member(const char *s, const char *key, const char **val, size_t *len)
{
	struct jp j = { .p = s };
	size_t klen = strlen(key);

	ws(&j);
	if (*j.p != '{')
		return -1;
	j.p++;
	for (;;) {
		const char *k, *v;
		size_t kl;

		ws(&j);
		if (*j.p != '"')
			return -1;
		k = j.p + 1;
		if (string(&j))
			return -1;
		kl = (size_t)(j.p - k - 1);
		ws(&j);
		if (*j.p != ':')
			return -1;
		j.p++;
		ws(&j);
		v = j.p;
		if (value(&j))
			return -1;
		if (kl == klen && !strncmp(k, key, klen)) {
			*val = v;
			*len = (size_t)(j.p - v);
			return 0;
		}
		ws(&j);
		if (*j.p != ',')
			return -1;
		j.p++;
	}
}

int json_get_bool(const char *s, const char *key, bool *out)
{
	const char *v;
	size_t n;

	if (json_member(s, key, &v, &n))
		return -1;
	if (n == 4 && !strncmp(v, "true", 4))
		*out = true;
	else if (n == 5 && !strncmp(v, "false", 5))
		*out = false;
	else
		return -1;
	return 0;
}

int json_get_num(const char *s, const char *key, double *out)
{
	const char *v;
	size_t n;
	char *end;

	if (json_member(s, key, &v, &n))
		return -1;
	if (*v != '-' && !isdigit((unsigned char)*v))
		return -1;
	*out = strtod(v, &end);
	return end == v + n ? 0 : -1;
}

int json_get_str(const char *s, const char *key, char *out, size_t outsz)
{
	const char *v;
	size_t n, i, o = 0;

	if (json_member(s, key, &v, &n) || *v != '"' || n < 2)
		return -1;
	/* Escapes are kept as written; fine for comparing plain strings. */
	for (i = 1; i + 1 < n && o + 1 < outsz; i++)
		out[o++] = v[i];
	out[o] = '\0';
	return 0;
}
