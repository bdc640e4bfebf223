/* err.c - one-line error messages */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/base.h"

int emb_err_set(emb_err *err, const char *fmt, ...)
{
	char msg[EMB_ERR_MAX];
	va_list ap;

	if (!err)
		return -1;
	/* a new string first: an argument may be err->msg itself */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(err->msg, msg, sizeof(msg));
	return -1;
}
