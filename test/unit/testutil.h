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

/* a fresh, empty scratch directory test/tmp/unit-st/NAME (static
 * buffer, valid until the next call); asserts on failure */
const char *tu_scratch(const char *name);
/* DIR/NAME in one of four rotating static buffers (borrowed) */
char *tu_pathf(const char *dir, const char *name);
/* write TEXT to PATH; asserts on failure */
void tu_put_text(const char *path, const char *text);

/* pseudo-random floats, uniform in [-1, 1), the same sequence every run */
float tu_frand(void);
/* n of them times SCALE in a new array (free()); asserts on failure */
float *tu_rand_vec(size_t n, float scale);
struct emb_kernels;
/* the SIMD float kernel tables this machine runs, and with AVX-512 the
 * float variant whose fp32 GEMM the avx512 table does not take,
 * NULL-terminated (out has room for 5); returns how many */
int tu_simd_variants(const struct emb_kernels **out);
/* the portable table first, then those */
int tu_all_variants(const struct emb_kernels **out);
/* /proc/cpuinfo's first line that starts with KEY contains WORD (as a
 * whole word); -1: no such line or no /proc/cpuinfo */
int tu_cpuinfo_has(const char *key, const char *word);

#endif
