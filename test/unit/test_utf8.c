/*
 * test_utf8.c - the UTF-8 encoder and sequence check (lib/base/utf8.c):
 * the boundaries of each length, the replacement of what is not a
 * scalar value, and every encoded scalar value read back as one valid
 * sequence of its own length (and a naive decoder's value).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/utf8.h"

static size_t put(char *o, uint32_t c)
{
	memset(o, 0x55, 8);
	return emb_utf8_put(o, c);
}

Test(utf8, put_boundaries)
{
	static const struct { uint32_t c; const char *u; } t[] = {
		{ 0x0, "\x00" }, { 0x7f, "\x7f" }, { 0x80, "\xc2\x80" },
		{ 0x7ff, "\xdf\xbf" }, { 0x800, "\xe0\xa0\x80" },
		{ 0xd7ff, "\xed\x9f\xbf" }, { 0xe000, "\xee\x80\x80" },
		{ 0xfffd, "\xef\xbf\xbd" }, { 0xffff, "\xef\xbf\xbf" },
		{ 0x10000, "\xf0\x90\x80\x80" }, { 0x1f600, "\xf0\x9f\x98\x80" },
		{ 0x10ffff, "\xf4\x8f\xbf\xbf" },
	};
	char o[8];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t n = t[i].c ? strlen(t[i].u) : 1;
		cr_assert_eq(put(o, t[i].c), n, "U+%04X", (unsigned)t[i].c);
		cr_assert_eq(memcmp(o, t[i].u, n), 0, "U+%04X", (unsigned)t[i].c);
		cr_assert_eq((unsigned char)o[n], 0x55, "U+%04X: no more bytes",
		             (unsigned)t[i].c);
	}
}

Test(utf8, put_replaces_non_scalars)
{
	static const uint32_t bad[] = { 0xd800, 0xdbff, 0xdc00, 0xdfff,
	                                0x110000, 0x1fffff, 0xffffffffu };
	char o[8];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(put(o, bad[i]), 3, "0x%X", (unsigned)bad[i]);
		cr_assert_eq(memcmp(o, "\xef\xbf\xbd", 3), 0, "0x%X: U+FFFD",
		             (unsigned)bad[i]);
	}
}

/* a decoder written the long way: the value of the sequence O (N bytes) */
static uint32_t naive_decode(const unsigned char *o, size_t n)
{
	uint32_t c = n == 1 ? o[0] : n == 2 ? o[0] & 0x1fu :
	             n == 3 ? o[0] & 0x0fu : o[0] & 0x07u;

	for (size_t k = 1; k < n; k++)
		c = c << 6 | (o[k] & 0x3fu);
	return c;
}

Test(utf8, every_scalar_round_trips)
{
	char o[8];

	for (uint32_t c = 0; c <= 0x10ffff; c++) {
		size_t n, want;
		if (c >= 0xd800 && c <= 0xdfff)
			continue;
		want = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
		n = put(o, c);
		if (n != want ||
		    emb_utf8_seq((const unsigned char *)o, n) != n ||
		    naive_decode((const unsigned char *)o, n) != c)
			cr_assert_fail("U+%04X: %zu bytes, seq %zu", (unsigned)c, n,
			         emb_utf8_seq((const unsigned char *)o, n));
		/* cut short, it is not a sequence */
		if (n > 1)
			cr_assert_eq(emb_utf8_seq((const unsigned char *)o, n - 1),
			             0, "U+%04X cut", (unsigned)c);
	}
}

Test(utf8, seq_refuses)
{
	static const char *bad[] = {
		"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xc2", "\xc2\x41",
		"\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
		"\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80", "\xff", "\xe2\x82", "\xe2\x28\xa1",
		"\xf0\x9f\x98\x28",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(emb_utf8_seq((const unsigned char *)bad[i],
		                          strlen(bad[i])), 0, "case %zu", i);
	/* only the first sequence counts */
	cr_assert_eq(emb_utf8_seq((const unsigned char *)"a\x80", 2), 1);
	cr_assert_eq(emb_utf8_seq((const unsigned char *)"\xc3\xa9\x80", 3), 2);
}
