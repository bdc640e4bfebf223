/*
 * xalloc.h - allocation that cannot fail for the test harness (manifest
 * runner, validation; xalloc.c): out of memory prints "emb: out of
 * memory" and aborts, which only tool/ may do.
 */
#ifndef EMB_XALLOC_H
#define EMB_XALLOC_H

#include <stddef.h>

/* calloc of N (0: 1) items of SZ bytes, new (free()) */
void *emb_xcalloc(size_t n, size_t sz);
/* a copy of S, new */
char *emb_xstrdup(const char *s);
/* a copy of the N bytes at S with a NUL after them, new */
char *emb_xstrndup(const char *s, size_t n);
/* RC of a call that fails (-1) only when out of memory: a failure is
 * out of memory as above */
int emb_xok(int rc);
/* printf's FMT into a string, new */
char *emb_xasprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#endif /* EMB_XALLOC_H */
