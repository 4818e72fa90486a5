// SPDX-License-Identifier: MIT
/*
 * Unit test: hc_json_str(), the JSON string writer of the CLI and the
 * report.  Whatever bytes go in, what comes out is one valid JSON string:
 * valid UTF-8 unchanged, each byte of an invalid sequence U+FFFD, control
 * characters \u00XX, quote and backslash escaped.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/heapctl.h>

#include "unit.h"

/* hc_json_str(in) as a malloc'ed string, or NULL. */
static char *json(const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	hc_json_str(f, in);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void expect(const char *what, const char *in, const char *want)
{
	char *got = json(in);

	CHECK(got && !strcmp(got, want), "%s: got %s, want %s", what, got ? got : "(null)", want);
	free(got);
}

static void escapes(void)
{
	begin("json.escapes");
	expect("plain", "abc", "\"abc\"");
	expect("empty", "", "\"\"");
	expect("NULL", NULL, "\"\"");
	expect("quote and backslash", "a\"b\\c", "\"a\\\"b\\\\c\"");
	expect("slash stays", "/usr/lib", "\"/usr/lib\"");
	expect("control characters", "\x01\b\t\n\f\r\x1f", "\"\\u0001\\b\\t\\n"
							    "\\f\\r\\u001f\"");
	expect("DEL", "a\x7f" "b", "\"a\\u007fb\"");
	end();
}

static void utf8(void)
{
	begin("json.utf8");
	/* é, €, U+1F600: two, three and four bytes, passed through */
	expect("valid multibyte", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	expect("highest code point", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");
	expect("invalid byte", "a\xff" "b", "\"a\\ufffdb\"");
	expect("stray continuation", "\x80x", "\"\\ufffdx\"");
	expect("truncated at the end", "ab\xe2\x82", "\"ab\\ufffd\\ufffd\"");
	expect("truncated before ASCII", "\xf0\x9f\x98" "x", "\"\\ufffd\\ufffd\\ufffdx\"");
	expect("truncated before a quote", "\xc3\"", "\"\\ufffd\\\"\"");
	expect("overlong", "\xc0\xaf", "\"\\ufffd\\ufffd\"");
	expect("surrogate", "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	expect("past U+10FFFF", "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	expect("five-byte form", "\xf8\x88\x80\x80\x80",
	       "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	end();
}

int main(void)
{
	escapes();
	utf8();
	return nfailed ? 1 : 0;
}
