/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' check harness: begin() a named group, CHECK() inside it,
 * end() prints "PASS group" or "FAIL group: first failure (and N more)".
 * main() returns nfailed != 0.  One header, included once per test program.
 */
#ifndef HC_UNIT_H
#define HC_UNIT_H

#include <stdarg.h>
#include <stdio.h>

static const char *group;
static int group_nfail, nfailed;
static char group_msg[512];

static void begin(const char *name)
{
	group = name;
	group_nfail = 0;
	group_msg[0] = '\0';
}

static void __attribute__((format(printf, 2, 3))) fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (group_nfail++)
		return;
	n = snprintf(group_msg, sizeof(group_msg), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(group_msg + n, sizeof(group_msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

#define CHECK(cond, ...)                                \
	do {                                            \
		if (!(cond))                            \
			fail_at(__LINE__, __VA_ARGS__); \
	} while (0)

static void end(void)
{
	if (!group_nfail) {
		printf("PASS %s\n", group);
		return;
	}
	nfailed++;
	if (group_nfail > 1)
		printf("FAIL %s: %s (and %d more)\n", group, group_msg, group_nfail - 1);
	else
		printf("FAIL %s: %s\n", group, group_msg);
}

#endif
