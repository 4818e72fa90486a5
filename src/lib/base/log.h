/* SPDX-License-Identifier: MIT */
/* The library never prints: everything goes through the sink set by hc_log_set(). */
#ifndef HC_LOG_H
#define HC_LOG_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <heapctl/heapctl.h>

#include "err.h"

void hc_log_print(enum hc_log_level level, const char *fmt, ...) __printf(2, 3);
bool hc_log_on(enum hc_log_level level);

#define pr_err(fmt, ...) hc_log_print(HC_LOG_ERR, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) hc_log_print(HC_LOG_WARN, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) hc_log_print(HC_LOG_INFO, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) hc_log_print(HC_LOG_DEBUG, fmt, ##__VA_ARGS__)
#define pr_trace(fmt, ...) hc_log_print(HC_LOG_TRACE, fmt, ##__VA_ARGS__)
#define pr_perror(fmt, ...) pr_err(fmt ": %s", ##__VA_ARGS__, strerror(errno))

#endif
