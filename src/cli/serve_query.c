// SPDX-License-Identifier: MIT
/*
 * serve_query.c: the query string of a heapctl serve request, checked.
 *
 * Pure: no I/O, no allocation.  What a request may say is small (a pid, a
 * process name, a number of seconds) and each value is checked for being
 * exactly that; everything else is a 400 with the reason.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "serve.h"

static int __attribute__((format(printf, 3, 4)))
fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* Plain decimal digits, no sign or blank, 1..max. */
static int number(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (!s || !s[0] || s[0] == '0' || strlen(s) > 10)
		return -1;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int serve_query_arg(struct serve_query *q, const char *key, const char *val, char *why,
		    size_t len)
{
	unsigned long v;
	size_t i;

	if (++q->nargs > SERVE_MAX_ARGS)
		return fail(why, len, "too many query arguments (%s)", "pid, name, seconds");
	if (!key || !key[0])
		return fail(why, len, "an empty query argument%s", "");
	if (strlen(key) > SERVE_MAX_ARG_LEN || (val && strlen(val) > SERVE_MAX_ARG_LEN))
		return fail(why, len, "query argument too long (at most %s bytes)", "64");
	if (!strcmp(key, "pid")) {
		if (q->pid)
			return fail(why, len, "'%s' given twice", key);
		/* pid_max is at most 2^22 (include/linux/threads.h, PID_MAX_LIMIT) */
		if (number(val, 4194304, &v))
			return fail(why, len, "invalid pid '%.64s' (expected a number)",
				    val ? val : "");
		q->pid = (pid_t)v;
		return 0;
	}
	if (!strcmp(key, "name")) {
		if (q->name[0])
			return fail(why, len, "'%s' given twice", key);
		/* a comm: at most 15 bytes (TASK_COMM_LEN), no control characters or '/' */
		if (!val || !val[0] || strlen(val) > 15)
			return fail(why, len, "invalid name '%.64s' (expected a process name of 1 "
				    "to 15 bytes, as ps -o comm shows it)", val ? val : "");
		for (i = 0; val[i]; i++)
			if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f || val[i] == '/')
				return fail(why, len, "invalid name: control character or '/' in "
					    "it%s", "");
		memcpy(q->name, val, strlen(val) + 1);
		return 0;
	}
	if (!strcmp(key, "seconds")) {
		if (q->have_seconds)
			return fail(why, len, "'%s' given twice", key);
		if (number(val, SERVE_MAX_SECONDS, &v))
			return fail(why, len, "invalid seconds '%.64s' (expected 1 to 3600)",
				    val ? val : "");
		q->seconds = (unsigned)v;
		q->have_seconds = true;
		return 0;
	}
	/* Go's handler takes gc= and debug=; neither means anything here */
	if (!strcmp(key, "gc") || !strcmp(key, "debug")) {
		if (val && strcmp(val, "0") && strcmp(val, "1") && strcmp(val, ""))
			return fail(why, len, "invalid '%s' (0 or 1; ignored by heapctl)", key);
		return 0;
	}
	return fail(why, len, "unknown query argument '%.64s' (pid, name, seconds)", key);
}

int serve_query_done(const struct serve_query *q, char *why, size_t len)
{
	if (q->pid && q->name[0])
		return fail(why, len, "give pid or name, not both%s", "");
	if (!q->pid && !q->name[0])
		return fail(why, len, "which process? add ?pid=N or ?name=COMM%s", "");
	return 0;
}

/* %XX and '+' decoded in place, as libmicrohttpd does; -1 on a bad escape or a NUL. */
static int decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '+') {
			*o++ = ' ';
		} else if (*s == '%') {
			int v = 0;

			for (int k = 1; k <= 2; k++) {
				char c = s[k];

				v <<= 4;
				if (c >= '0' && c <= '9')
					v |= c - '0';
				else if (c >= 'a' && c <= 'f')
					v |= c - 'a' + 10;
				else if (c >= 'A' && c <= 'F')
					v |= c - 'A' + 10;
				else
					return -1;
			}
			if (!v)
				return -1;
			*o++ = (char)v;
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return 0;
}

int serve_query_parse(struct serve_query *q, const char *s, size_t n, char *why, size_t len)
{
	char buf[SERVE_MAX_ARG_LEN * 2 + 2];
	size_t i = 0;

	memset(q, 0, sizeof(*q));
	while (i < n) {
		size_t j = i, k;
		char *eq;

		while (j < n && s[j] != '&')
			j++;
		k = j - i;
		if (k >= sizeof(buf))
			return fail(why, len, "query argument too long (at most %s bytes)", "64");
		memcpy(buf, s + i, k);
		buf[k] = '\0';
		if (memchr(buf, '\0', k))
			return fail(why, len, "a NUL byte in the query%s", "");
		eq = strchr(buf, '=');
		if (eq)
			*eq++ = '\0';
		if (decode(buf) || (eq && decode(eq)))
			return fail(why, len, "a bad %%-escape in the query%s", "");
		if (k && serve_query_arg(q, buf, eq, why, len))
			return -1;
		i = j + 1;
	}
	return serve_query_done(q, why, len);
}
