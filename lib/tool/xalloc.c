/*
 * xalloc.c - allocation that aborts when out of memory (xalloc.h)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/xalloc.h"

static void oom(void)
{
	fputs("emb: out of memory\n", stderr);
	abort();
}

void *emb_xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		oom();
	return p;
}

int emb_xok(int rc)
{
	if (rc < 0)
		oom();
	return rc;
}

char *emb_xstrndup(const char *s, size_t n)
{
	char *p = emb_xcalloc(n + 1, 1);

	memcpy(p, s, n);
	return p;
}

char *emb_xstrdup(const char *s)
{
	return emb_xstrndup(s, strlen(s));
}

char *emb_xasprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	p = emb_xcalloc((size_t)n + 1, 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
