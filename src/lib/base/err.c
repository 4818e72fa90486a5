// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

#define HC_ERR_NAME(code, hint) [code] = #code,
static const char *const names[] = { HC_ERRORS(HC_ERR_NAME) };
#undef HC_ERR_NAME
#define HC_ERR_HINT(code, hint) [code] = hint,
static const char *const hints[] = { HC_ERRORS(HC_ERR_HINT) };
#undef HC_ERR_HINT

const char *hc_err_name(enum hc_errc code)
{
	return (unsigned)code < HC_E__COUNT ? names[code] : NULL;
}

const char *hc_err_default_hint(enum hc_errc code)
{
	return (unsigned)code < HC_E__COUNT ? hints[code] : NULL;
}

static int vset(struct hc_err *err, enum hc_errc code, int sys_errno, const char *hint,
		const char *fmt, va_list ap)
{
	/* Prevent the first message from being overwritten by later ones. */
	if (!err || err->code != HC_OK)
		return -1;
	err->code = code;
	err->sys_errno = sys_errno;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	snprintf(err->hint, sizeof(err->hint), "%s", hint ? hint : hc_err_default_hint(code));
	return -1;
}

int err_set(struct hc_err *err, enum hc_errc code, int sys_errno, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(err, code, sys_errno, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int err_sethint(struct hc_err *err, enum hc_errc code, int sys_errno, const char *hint,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(err, code, sys_errno, hint, fmt, ap);
	va_end(ap);
	return -1;
}

enum hc_errc err_code_of_errno(int e)
{
	switch (e) {
	case EPERM:
	case EACCES:
		return HC_E_PERM;
	case ESRCH:
	case ENOENT:
		return HC_E_NO_PROC;
	case ENOMEM:
		return HC_E_NOMEM;
	case EBUSY:
		return HC_E_TRACED;
	case ETIMEDOUT:
		return HC_E_TIMEOUT;
	case EIO:
	case EFAULT:
	case ENOSPC:
	case EROFS:
		return HC_E_IO;
	default:
		return HC_E_INTERNAL;
	}
}

int err_errno(struct hc_err *err, int e, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return err_set(err, err_code_of_errno(e), e, "%s: %s", buf, strerror(e));
}

void err_context(struct hc_err *err, const char *fmt, ...)
{
	char ctx[128], old[sizeof(err->msg)];
	va_list ap;
	int n;

	if (!err || err->code == HC_OK)
		return;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* truncation is fine here: the context is what matters most */
	n = snprintf(err->msg, sizeof(err->msg), "%s: ", ctx);
	if (n > 0 && (size_t)n < sizeof(err->msg)) {
		size_t room = sizeof(err->msg) - (size_t)n - 1, l = strlen(old);

		memcpy(err->msg + n, old, l < room ? l : room);
		err->msg[n + (l < room ? l : room)] = 0;
	}
}
