// SPDX-License-Identifier: MIT
/*
 * Unit test: the error table generated from HC_ERRORS is complete, and
 * err_set() keeps the first failure.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/heapctl.h>

#include "err.h"
#include "unit.h"

/* The names as the X-macro spells them, to compare with the table. */
#define NAME_STR(code, hint) [code] = #code,
static const char *const want_names[] = { HC_ERRORS(NAME_STR) };
#undef NAME_STR

static void names(void)
{
	begin("errtable.names");
	CHECK(HC_OK == 0, "HC_OK is %d, want 0", (int)HC_OK);
	CHECK(sizeof(want_names) / sizeof(want_names[0]) == HC_E__COUNT, "table size");
	for (int c = 0; c < HC_E__COUNT; c++) {
		const char *n = hc_err_name((enum hc_errc)c);

		CHECK(n != NULL, "code %d has no name", c);
		if (!n)
			continue;
		CHECK(!strncmp(n, "HC_", 3), "code %d: name '%s' lacks the HC_ prefix", c, n);
		CHECK(!strcmp(n, want_names[c]), "code %d: name '%s', want '%s'", c, n,
		      want_names[c]);
		for (int d = 0; d < c; d++) {
			const char *m = hc_err_name((enum hc_errc)d);

			CHECK(!m || strcmp(m, n), "codes %d and %d share the name %s", d, c, n);
		}
	}
	CHECK(!strcmp(hc_err_name(HC_OK), "HC_OK"), "HC_OK name");
	CHECK(!strcmp(hc_err_name(HC_E_ARGS), "HC_E_ARGS"), "HC_E_ARGS name");
	CHECK(hc_err_name(HC_E__COUNT) == NULL, "HC_E__COUNT has a name");
	CHECK(hc_err_name((enum hc_errc)-1) == NULL, "code -1 has a name");
	end();
}

static void hints(void)
{
	begin("errtable.hints");
	for (int c = 0; c < HC_E__COUNT; c++) {
		const char *h = hc_err_default_hint((enum hc_errc)c);

		CHECK(h != NULL, "%s has a NULL hint", hc_err_name((enum hc_errc)c));
		if (!h || c == HC_OK)
			continue;
		CHECK(h[0] != '\0', "%s has an empty hint", hc_err_name((enum hc_errc)c));
		CHECK(strlen(h) < sizeof(((struct hc_err *)0)->hint),
		      "%s: hint does not fit struct hc_err", hc_err_name((enum hc_errc)c));
	}
	CHECK(hc_err_default_hint(HC_E__COUNT) == NULL, "HC_E__COUNT has a hint");
	end();
}

static void first_wins(void)
{
	struct hc_err err = { 0 };

	begin("errtable.err_set_first_wins");
	CHECK(err_set(&err, HC_E_NO_SYM, 0, "no symbol %s", "mallctl") == -1, "err_set != -1");
	CHECK(err.code == HC_E_NO_SYM, "code %s", hc_err_name(err.code));
	CHECK(!strcmp(err.msg, "no symbol mallctl"), "msg '%s'", err.msg);
	CHECK(!strcmp(err.hint, hc_err_default_hint(HC_E_NO_SYM)), "hint '%s'", err.hint);

	CHECK(err_set(&err, HC_E_PERM, EPERM, "later") == -1, "second err_set != -1");
	CHECK(err.code == HC_E_NO_SYM && !strcmp(err.msg, "no symbol mallctl") &&
		      err.sys_errno == 0,
	      "the second error overwrote the first");
	CHECK(err_set(NULL, HC_E_PERM, 0, "no err") == -1, "err_set(NULL) != -1");
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);

	names();
	hints();
	first_wins();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
