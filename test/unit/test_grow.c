/*
 * test_grow.c - the growable array (lib/base/grow.c): capacities as
 * grow.h says (64 at first, then doubling, nothing when it holds
 * enough), the contents kept through each realloc, and an overflowing
 * request refused with the array unchanged.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/grow.h"

Test(grow, capacities_and_contents)
{
	int32_t *a = NULL;
	size_t cap = 0;

	cr_assert_eq(emb_grow(&a, &cap, 1, sizeof(*a)), 0);
	cr_assert_not_null(a);
	cr_assert_eq(cap, 64);
	for (size_t n = 0; n < 10000; n++) {
		size_t before = cap;
		cr_assert_eq(emb_grow(&a, &cap, n + 1, sizeof(*a)), 0);
		cr_assert_geq(cap, n + 1);
		/* doubled only when it had to be */
		cr_assert_eq(cap, n + 1 <= before ? before : 2 * before,
		             "n %zu: cap %zu from %zu", n, cap, before);
		a[n] = (int32_t)(n * 7 + 1);
	}
	for (size_t n = 0; n < 10000; n++)
		cr_assert_eq(a[n], (int32_t)(n * 7 + 1), "element %zu", n);
	/* a request below the capacity: nothing moves */
	{
		int32_t *p = a;
		size_t c = cap;
		cr_assert_eq(emb_grow(&a, &cap, 5, sizeof(*a)), 0);
		cr_assert_eq(a, p);
		cr_assert_eq(cap, c);
	}
	free(a);
}

Test(grow, a_large_need_at_once)
{
	char *b = NULL;
	size_t cap = 0;

	cr_assert_eq(emb_grow(&b, &cap, 1000, 1), 0);
	cr_assert_eq(cap, 1024);
	cr_assert_eq(emb_grow(&b, &cap, 1025, 1), 0);
	cr_assert_eq(cap, 2048);
	free(b);
}

Test(grow, overflow_refused)
{
	double *d = NULL;
	size_t cap = 0;

	cr_assert_eq(emb_grow(&d, &cap, 10, sizeof(*d)), 0);
	double *keep = d;
	d[9] = 2.5;
	/* need * size past SIZE_MAX */
	cr_assert_eq(emb_grow(&d, &cap, SIZE_MAX / 4, sizeof(*d)), -1);
	cr_assert_eq(d, keep);
	cr_assert_eq(cap, 64);
	cr_assert_eq(d[9], 2.5);
	/* a size of zero is no array */
	cr_assert_eq(emb_grow(&d, &cap, 100, 0), -1);
	cr_assert_eq(d, keep);
	cr_assert_eq(cap, 64);
	free(d);
}
