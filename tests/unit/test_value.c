// SPDX-License-Identifier: MIT
/*
 * Unit test: hc_value_parse() takes plain decimal numbers within each
 * type's range and the usual bool words, and nothing else; jemalloc's
 * namespace patterns match what jemalloc(3) names.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/heapctl.h>

#include "unit.h"

bool je_name_match(const char *pat, const char *name);

static bool parses(enum hc_type type, const char *s, struct hc_value *v)
{
	struct hc_err err = { 0 };

	if (hc_value_parse("x", type, s, v, &err) == 0)
		return true;
	CHECK(err.code == HC_E_TYPE && err.msg[0] && err.hint[0],
	      "'%s' refused without HC_E_TYPE, message and hint", s);
	return false;
}

static void numbers(void)
{
	static const char *const bad[] = { "010", "0x10", "+5", " 7", "7 ", "1e3", "", "-",
					   "--1", "1_000", "٣", "0b1", "08", "00" };
	struct hc_value v;

	begin("value.numbers");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!parses(HC_T_SSIZE, bad[i], &v), "ssize_t took '%s'", bad[i]);
		CHECK(!parses(HC_T_SIZE, bad[i], &v), "size_t took '%s'", bad[i]);
	}
	CHECK(parses(HC_T_SSIZE, "10", &v) && v.i == 10, "ssize_t 10");
	CHECK(parses(HC_T_SSIZE, "0", &v) && v.i == 0, "ssize_t 0");
	CHECK(parses(HC_T_SSIZE, "-1", &v) && v.i == -1, "ssize_t -1");
	CHECK(parses(HC_T_SSIZE, "-9223372036854775808", &v) && v.i == INT64_MIN, "ssize_t min");
	CHECK(parses(HC_T_SSIZE, "9223372036854775807", &v) && v.i == INT64_MAX, "ssize_t max");
	CHECK(!parses(HC_T_SSIZE, "9223372036854775808", &v), "ssize_t max + 1");
	CHECK(!parses(HC_T_SSIZE, "-9223372036854775809", &v), "ssize_t min - 1");
	CHECK(!parses(HC_T_SIZE, "-1", &v), "size_t took -1");
	CHECK(parses(HC_T_SIZE, "18446744073709551615", &v) && v.u == UINT64_MAX, "size_t max");
	CHECK(!parses(HC_T_SIZE, "18446744073709551616", &v), "size_t max + 1");
	CHECK(!parses(HC_T_U64, "99999999999999999999999", &v), "u64 overflow");
	CHECK(parses(HC_T_UNSIGNED, "4294967295", &v) && v.u == UINT32_MAX, "unsigned max");
	CHECK(!parses(HC_T_UNSIGNED, "4294967296", &v), "unsigned max + 1");
	CHECK(!parses(HC_T_U32, "-0", &v), "uint32_t took -0");
	CHECK(parses(HC_T_INT, "-2147483648", &v) && v.i == INT32_MIN, "int min");
	CHECK(!parses(HC_T_INT, "2147483648", &v), "int max + 1");
	CHECK(parses(HC_T_I64, "-0", &v) && v.i == 0, "int64_t -0");
	end();
}

static void bools(void)
{
	static const char *const yes[] = { "true", "TRUE", "1", "yes", "Yes", "on", "ON" };
	static const char *const no[] = { "false", "False", "0", "no", "NO", "off", "Off" };
	static const char *const bad[] = { "", "2", "y", "n", "truee", " true", "01", "-1" };
	struct hc_value v;

	begin("value.bools");
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		CHECK(parses(HC_T_BOOL, yes[i], &v) && v.b, "'%s' is not true", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		CHECK(parses(HC_T_BOOL, no[i], &v) && !v.b, "'%s' is not false", no[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(HC_T_BOOL, bad[i], &v), "bool took '%s'", bad[i]);
	end();
}

static void format_back(void)
{
	struct hc_value v;
	char out[64];

	begin("value.format");
	CHECK(parses(HC_T_SSIZE, "-1", &v), "parse -1");
	hc_value_format(&v, out, sizeof(out));
	CHECK(!strcmp(out, "-1"), "ssize_t -1 formats as %s", out);
	CHECK(parses(HC_T_INT, "-5", &v), "parse -5");
	hc_value_format(&v, out, sizeof(out));
	CHECK(!strcmp(out, "-5"), "int -5 formats as %s", out);
	CHECK(parses(HC_T_BOOL, "on", &v), "parse on");
	hc_value_format(&v, out, sizeof(out));
	CHECK(!strcmp(out, "true"), "bool on formats as %s", out);
	CHECK(parses(HC_T_STRING, " a b ", &v) && !strcmp(v.str, " a b "), "strings as typed");
	end();
}

static void names(void)
{
	begin("jemalloc.names");
	CHECK(je_name_match("arena.#.purge", "arena.4096.purge"), "arena.4096.purge");
	CHECK(!je_name_match("arena.#.purge", "arena.x.purge"), "arena.x.purge");
	CHECK(!je_name_match("arena.#.purge", "arena.0"), "arena.0 is a group");
	CHECK(je_name_match("prof.(dump|prefix)", "prof.prefix"), "alternatives");
	CHECK(!je_name_match("prof.(dump|prefix)", "prof.dum"), "a part of an alternative");
	CHECK(!je_name_match("prof.(dump|prefix)", "prof.dumpprefix"), "two alternatives");
	CHECK(je_name_match("stats.arenas.#.bins.#.mutex.(num_ops|num_wait)",
			    "stats.arenas.3.bins.12.mutex.num_wait"),
	      "a bin mutex counter");
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);

	numbers();
	bools();
	format_back();
	names();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
