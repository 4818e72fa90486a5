/* SPDX-License-Identifier: MIT */
/* Error recording: the first failure wins, outer layers may only add context. */
#ifndef HC_ERR_H
#define HC_ERR_H

#include <heapctl/heapctl.h>

#define __printf(a, b) __attribute__((format(printf, a, b)))

/* Record code + message with the code's default hint.  Returns -1. */
int err_set(struct hc_err *err, enum hc_errc code, int sys_errno, const char *fmt, ...)
	__printf(4, 5);
/* Same, with an explicit hint (printf-style after the message's arguments). */
int err_sethint(struct hc_err *err, enum hc_errc code, int sys_errno, const char *hint,
		const char *fmt, ...) __printf(5, 6);
/* Map a local errno (EPERM, ESRCH, ENOMEM...) to a code, as one table. */
enum hc_errc err_code_of_errno(int e);
/* err_set with the code chosen from errno and strerror appended. */
int err_errno(struct hc_err *err, int e, const char *fmt, ...) __printf(3, 4);
/* Prefix context to an already-recorded message: "ctx: msg". */
void err_context(struct hc_err *err, const char *fmt, ...) __printf(2, 3);
static inline bool err_isset(const struct hc_err *err)
{
	return err && err->code != HC_OK;
}

#endif
