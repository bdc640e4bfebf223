/*
 * test_strmap.c - the string hash map (lib/base/strmap.c) against a
 * plain array scanned by hand: the same answers for puts, lookups and
 * takes of many keys, through growth, with the latest of equal keys
 * taken (and got) first; the FNV-1a hash of strings and of bytes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

#define N 3000

Test(strmap, empty)
{
	emb_strmap m = { 0 };

	cr_assert_not(emb_strmap_has(&m, "a"));
	cr_assert_null(emb_strmap_take(&m, "a"));
	emb_strmap_release(&m);
	cr_assert_eq(m.n, 0);
	cr_assert_null(m.tab);
}

Test(strmap, fnv1a)
{
	/* the published FNV-1a 64 values */
	cr_assert_eq(emb_str_hash(""), 0xcbf29ce484222325ULL);
	cr_assert_eq(emb_str_hash("a"), 0xaf63dc4c8601ec8cULL);
	cr_assert_eq(emb_str_hash("foobar"), 0x85944171f73967e8ULL);
	/* the same over bytes that are not a string */
	cr_assert_eq(emb_mem_hash("", 0), 0xcbf29ce484222325ULL);
	cr_assert_eq(emb_mem_hash("foobarbaz", 6), 0x85944171f73967e8ULL);
	cr_assert_eq(emb_mem_hash("a\0b", 3) == emb_str_hash("a"), 0);
}

/* the oracle: value i of key "k<i>" while present[i] */
Test(strmap, against_a_scan)
{
	static int vals[N], present[N];
	emb_strmap m = { 0 };
	char key[32];

	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(emb_strmap_put(&m, key, &vals[i]), 0);
		present[i] = 1;
	}
	cr_assert_eq(m.n, N);
	cr_assert_geq(m.cap, 2 * (size_t)N, "grown to stay half empty");
	/* take every third key, then look every key up */
	for (int i = 0; i < N; i += 3) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(emb_strmap_take(&m, key), &vals[i]);
		present[i] = 0;
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(emb_strmap_has(&m, key), present[i], "%s", key);
		cr_assert_eq(emb_strmap_get(&m, key), present[i] ? &vals[i] : NULL,
		             "%s", key);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(emb_strmap_take(&m, key),
		             present[i] ? &vals[i] : NULL, "%s", key);
	}
	cr_assert_eq(m.n, 0);
	cr_assert_not(emb_strmap_has(&m, "k1"));
	emb_strmap_release(&m);
}

Test(strmap, equal_keys_latest_first)
{
	int a, b;
	emb_strmap m = { 0 };
	char key[8] = "dup";

	cr_assert_eq(emb_strmap_put(&m, key, &a), 0);
	cr_assert_eq(emb_strmap_put(&m, key, &b), 0);
	key[0] = 'x';           /* the map holds its own copy */
	cr_assert(emb_strmap_has(&m, "dup"));
	cr_assert_eq(emb_strmap_get(&m, "dup"), &b);
	cr_assert_null(emb_strmap_get(&m, "du"));
	cr_assert_eq(emb_strmap_take(&m, "dup"), &b);
	cr_assert_eq(emb_strmap_get(&m, "dup"), &a);
	cr_assert_eq(emb_strmap_take(&m, "dup"), &a);
	cr_assert_null(emb_strmap_take(&m, "dup"));
	/* entries left at release are freed (the sanitizer build checks) */
	cr_assert_eq(emb_strmap_put(&m, "left", &a), 0);
	emb_strmap_release(&m);
	cr_assert_eq(m.n, 0);
}
