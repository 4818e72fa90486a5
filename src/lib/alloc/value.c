// SPDX-License-Identifier: MIT
/* Control values: their types' names, parsing what a user typed, formatting. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include <heapctl/heapctl.h>

const char *hc_type_name(enum hc_type type)
{
	static const char *const n[] = { "void",     "bool",    "unsigned",	    "size_t",
					 "ssize_t",  "uint64_t", "int64_t",	    "uint32_t",
					 "const char *", "int" };

	return (unsigned)type < sizeof(n) / sizeof(n[0]) ? n[type] : "?";
}

static bool type_signed(enum hc_type type)
{
	return type == HC_T_SSIZE || type == HC_T_I64 || type == HC_T_INT;
}

static const char *range_hint(enum hc_type type)
{
	switch (type) {
	case HC_T_UNSIGNED:
	case HC_T_U32:
		return "give a number from 0 to 4294967295";
	case HC_T_INT:
		return "give a number from -2147483648 to 2147483647";
	case HC_T_SSIZE:
	case HC_T_I64:
		return "give a number from -9223372036854775808 to 9223372036854775807";
	default:
		return "give a number from 0 to 18446744073709551615";
	}
}

/*
 * Plain decimal only: strtoull() alone would take " 7", "+5", "0x10" and
 * "010" (octal 8), and write a number the user did not type.
 */
int hc_value_parse(const char *name, enum hc_type type, const char *s, struct hc_value *v,
		   struct hc_err *err)
{
	const char *d = s;
	bool neg = false;
	uint64_t mag = 0, max;

	memset(v, 0, sizeof(*v));
	v->type = type;
	if (type == HC_T_VOID)
		return 0;
	if (!s)
		return err_sethint(err, HC_E_TYPE, 0, "give VALUE after NAME",
				   "'%s' needs a value (%s)", name, hc_type_name(type));
	if (type == HC_T_STRING) {
		if (strlen(s) >= sizeof(v->str))
			return err_set(err, HC_E_TYPE, 0, "value for '%s' is longer than %zu bytes",
				       name, sizeof(v->str) - 1);
		snprintf(v->str, sizeof(v->str), "%s", s);
		return 0;
	}
	if (type == HC_T_BOOL) {
		static const char *const yes[] = { "true", "1", "yes", "on" };
		static const char *const no[] = { "false", "0", "no", "off" };

		for (size_t i = 0; i < 4; i++) {
			if (!strcasecmp(s, yes[i])) {
				v->b = true;
				return 0;
			}
			if (!strcasecmp(s, no[i])) {
				v->b = false;
				return 0;
			}
		}
		return err_sethint(err, HC_E_TYPE, 0,
				   "a bool is true or false (also 1/0, yes/no, on/off)",
				   "'%s' (bool): '%s' is not a bool", name, s);
	}
	if (*d == '-' && type_signed(type)) {
		neg = true;
		d++;
	}
	for (const char *p = d; *p; p++)
		if (*p < '0' || *p > '9')
			goto bad;
	if (!*d)
		goto bad;
	if (d[0] == '0' && d[1])
		return err_sethint(err, HC_E_TYPE, 0,
				   "numbers are plain decimal: leave out the leading zeros",
				   "'%s' (%s): '%s' has a leading zero (heapctl reads no octal)",
				   name, hc_type_name(type), s);
	switch (type) {
	case HC_T_UNSIGNED:
	case HC_T_U32:
		max = UINT32_MAX;
		break;
	case HC_T_INT:
		max = neg ? (uint64_t)INT_MAX + 1 : INT_MAX;
		break;
	case HC_T_SSIZE:
	case HC_T_I64:
		max = neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
		break;
	default:
		max = UINT64_MAX;
	}
	for (const char *p = d; *p; p++) {
		unsigned dig = (unsigned)(*p - '0');

		if (mag > (max - dig) / 10)
			return err_sethint(err, HC_E_TYPE, 0, range_hint(type),
					   "'%s' (%s): %s is out of range", name,
					   hc_type_name(type), s);
		mag = mag * 10 + dig;
	}
	if (type_signed(type))
		v->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	else
		v->u = mag;
	return 0;
bad:
	return err_sethint(err, HC_E_TYPE, 0,
			   type_signed(type) ?
				   "numbers are plain decimal, e.g. 10 or -1: no blanks, '+' or 0x" :
				   "numbers are plain decimal, e.g. 4096: no sign, blanks or 0x",
			   "'%s' (%s): '%s' is not a %sdecimal number", name, hc_type_name(type), s,
			   type_signed(type) ? "" : "non-negative ");
}

void hc_value_format(const struct hc_value *v, char *out, size_t len)
{
	switch (v->type) {
	case HC_T_VOID:
		snprintf(out, len, "%s", "");
		break;
	case HC_T_BOOL:
		snprintf(out, len, "%s", v->b ? "true" : "false");
		break;
	case HC_T_SSIZE:
	case HC_T_I64:
	case HC_T_INT:
		snprintf(out, len, "%" PRId64, v->i);
		break;
	case HC_T_STRING:
		snprintf(out, len, "%s", v->str);
		break;
	default:
		snprintf(out, len, "%" PRIu64, v->u);
	}
}
