// SPDX-License-Identifier: MIT
/*
 * CLI basics that need no target: --version, --help, usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <unistd.h>

#include "itest.h"

static void test_binary(void)
{
	if (access(cfg.heapctl, X_OK))
		t_fail("%s is missing or not executable", cfg.heapctl);
}

static void test_version(void)
{
	struct hres r = { 0 };

	if (!hc_expect(&r, 0, "--version", NULL) && !strpbrk(r.out, "0123456789"))
		t_fail("--version printed no version number: '%.80s'", r.out);
	hres_free(&r);
}

static void test_help(void)
{
	static const char *const cmds[] = {
		"info", "prof", "dump", "stats", "purge", "get", "set",
	};
	struct hres r = { 0 };
	size_t i;

	if (!hc_expect(&r, 0, "--help", NULL)) {
		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (!strstr(r.out, cmds[i])) {
				t_fail("--help does not mention '%s'", cmds[i]);
				break;
			}
		}
	}
	hres_free(&r);
}

static void test_usage_no_command(void)
{
	struct hres r = { 0 };

	hc_expect(&r, 2, NULL);
	hres_free(&r);
}

static void test_usage_bad_command(void)
{
	struct hres r = { 0 };

	hc_expect(&r, 2, "frobnicate", "-p", "1", NULL);
	hres_free(&r);
}

static void test_usage_missing_pid(void)
{
	struct hres r = { 0 };

	hc_expect(&r, 2, "stats", NULL);
	hres_free(&r);
}

static void test_usage_bad_prof_action(void)
{
	struct hres r = { 0 };

	hc_expect(&r, 2, "prof", "sideways", "-p", "1", NULL);
	hres_free(&r);
}

const struct itest t_basic_tests[] = {
	{ "heapctl-binary", test_binary, 0 },
	{ "version", test_version, 0 },
	{ "help", test_help, 0 },
	{ "usage-no-command", test_usage_no_command, 0 },
	{ "usage-unknown-command", test_usage_bad_command, 0 },
	{ "usage-missing-pid", test_usage_missing_pid, 0 },
	{ "usage-bad-prof-action", test_usage_bad_prof_action, 0 },
	{ NULL, NULL, 0 },
};
