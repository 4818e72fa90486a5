/* SPDX-License-Identifier: MIT */
/* What the two hook planners (arch/<name>/hook.c) share. */
#ifndef HC_HOOK_INT_H
#define HC_HOOK_INT_H

#include <stdarg.h>
#include <stdio.h>

#include "arch.h"

/* why = "NAME+OFF: " and the reason, as the planners' refusals all read. */
static inline void __attribute__((format(printf, 5, 6)))
refuse(char *why, size_t whylen, const struct hc_hook_in *in, size_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!why || !whylen)
		return;
	n = snprintf(why, whylen, "%s+%zu: ", in->name ? in->name : "entry", off);
	if (n < 0 || (size_t)n >= whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
	va_end(ap);
}

#endif
