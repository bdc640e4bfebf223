/* err.c - one-line error messages */
#include <stdarg.h>
#include <stdio.h>
#include "base/base.h"

int emb_err_set(emb_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}
