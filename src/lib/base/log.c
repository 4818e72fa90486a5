// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static hc_log_fn sink;
static enum hc_log_level max_level = HC_LOG_WARN;

void hc_log_set(hc_log_fn fn, enum hc_log_level level)
{
	sink = fn;
	max_level = level;
}

bool hc_log_on(enum hc_log_level level)
{
	return sink && level <= max_level;
}

void hc_log_print(enum hc_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int saved = errno;

	if (!hc_log_on(level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sink(level, buf);
	errno = saved;
}
