/* testutil.h - helpers shared by the Criterion unit tests */
#ifndef EMB_TESTUTIL_H
#define EMB_TESTUTIL_H

#include <stddef.h>

/* the repository root: $EMB_TOP, else "." (borrowed) */
const char *tu_top(void);
/* printf into a new string (free()); asserts on failure */
char *tu_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* remove DIR and everything below it; no error if absent */
void tu_rm_rf(const char *dir);
/* the whole file as a new NUL-terminated string (free()), NULL if unreadable */
char *tu_slurp(const char *path, size_t *len);
/*
 * Materialize test/data/fixtures/NAME once into test/tmp/units/NAME and
 * return that directory (new string): reused while its recipe is
 * unchanged, safe when several test processes race.
 */
char *tu_fixture(const char *name);

#endif
