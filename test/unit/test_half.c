/*
 * test_half.c - the 16-bit float conversions of lib/base/half.h.
 *
 * 1. Widening is exact: every f16 and bf16 bit pattern gives the value
 *    its fields say (sign * 2^e * mantissa, computed with ldexp),
 *    infinities and NaN payloads kept.
 * 2. Narrowing rounds to nearest even with subnormals kept: fp32 -> f16
 *    equals the compiler's _Float16 conversion (an independent software
 *    rounding; skipped where the compiler has no _Float16) on a sweep of
 *    all fp32 exponents; fp32 -> bf16 equals a reference that picks the
 *    nearer of the two neighbouring bf16 values in double, ties to the
 *    even one; every non-NaN 16-bit value survives the round trip.
 * 3. NaN stays NaN, quieted, sign and top payload bits kept; overflow
 *    goes to infinity of the same sign.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/half.h"

static float fbits(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t ubits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

Test(half, f16_widen_exact)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		int ex = (h >> 10) & 0x1f, man = h & 0x3ff;
		double want = ex ? ldexp(1024 + man, ex - 25) : ldexp(man, -24);
		float got = emb_f16_to_f32((uint16_t)h);
		if (h & 0x8000)
			want = -want;
		if (ex == 0x1f) {
			cr_assert_eq(ubits(got), ((h & 0x8000u) << 16) |
			             0x7f800000u | ((uint32_t)man << 13), "%04x", h);
			continue;
		}
		cr_assert_eq((double)got, want, "%04x", h);
		cr_assert_eq(signbit(got) != 0, (h & 0x8000) != 0, "%04x", h);
		cr_assert_eq(emb_f32_to_f16(got), h, "%04x round trip", h);
	}
}

Test(half, bf16_widen_exact)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		cr_assert_eq(ubits(emb_bf16_to_f32((uint16_t)h)), h << 16);
		if ((h & 0x7f80) == 0x7f80 && (h & 0x7f))
			continue;
		cr_assert_eq(emb_f32_to_bf16(emb_bf16_to_f32((uint16_t)h)), h,
		             "%04x round trip", h);
	}
}

/* every 4099th fp32 bit pattern: all exponents, both signs */
#define SWEEP(u) for (uint64_t u = 0; u < 0x100000000ull; u += 4099)

Test(half, f16_round_nearest_even)
{
#ifdef __FLT16_MAX__
	SWEEP(u) {
		float f = fbits((uint32_t)u);
		_Float16 r;
		uint16_t want;
		if (isnan(f))
			continue;
		r = (_Float16)f;
		memcpy(&want, &r, 2);
		cr_assert_eq(emb_f32_to_f16(f), want, "%08x", (unsigned)u);
	}
	/* ties both ways, and the subnormal range */
	cr_assert_eq(emb_f32_to_f16(fbits(0x3f801000u)), 0x3c00);
	cr_assert_eq(emb_f32_to_f16(fbits(0x3f803000u)), 0x3c02);
	cr_assert_eq(emb_f32_to_f16(ldexpf(1, -24)), 0x0001);
	cr_assert_eq(emb_f32_to_f16(ldexpf(1, -25)), 0x0000);
	cr_assert_eq(emb_f32_to_f16(ldexpf(3, -26)), 0x0001);
#else
	cr_skip_test("the compiler has no _Float16");
#endif
}

static uint16_t bf16_ref(float f)
{
	uint32_t u = ubits(f), lo = u >> 16, hi = lo + 1;
	double dl = fabs((double)fbits(lo << 16) - f);
	double dh;

	if ((u & 0xffff) == 0)
		return (uint16_t)lo;
	if ((hi & 0x7f80) == 0x7f80 && (lo & 0x7f80) != 0x7f80)
		/* the next value up is infinity: halfway to 2^128 decides */
		dh = fabs(ldexp((lo & 0x8000) ? -1 : 1, 128) - f);
	else
		dh = fabs((double)fbits(hi << 16) - f);
	if (dl < dh || (dl == dh && !(lo & 1)))
		return (uint16_t)lo;
	return (uint16_t)hi;
}

Test(half, bf16_round_nearest_even)
{
	SWEEP(u) {
		float f = fbits((uint32_t)u);
		if (isnan(f))
			continue;
		cr_assert_eq(emb_f32_to_bf16(f), bf16_ref(f), "%08x", (unsigned)u);
	}
	cr_assert_eq(emb_f32_to_bf16(fbits(0x3f808000u)), 0x3f80); /* tie */
	cr_assert_eq(emb_f32_to_bf16(fbits(0x3f818000u)), 0x3f82); /* tie */
	/* subnormals are kept (not flushed), rounded the same way */
	cr_assert_eq(emb_f32_to_bf16(fbits(0x00400000u)), 0x0040);
	cr_assert_eq(emb_f32_to_bf16(fbits(0x80018000u)), 0x8002);
	cr_assert_eq(emb_f32_to_bf16(fbits(0x00008000u)), 0x0000);
}

Test(half, nan_and_overflow)
{
	cr_assert_eq(emb_f32_to_bf16(fbits(0x7f800001u)), 0x7fc0);
	cr_assert_eq(emb_f32_to_bf16(fbits(0xffa50000u)), 0xffe5);
	cr_assert_eq(emb_f32_to_bf16(fbits(0x7f7fffffu)), 0x7f80);
	cr_assert_eq(emb_f32_to_bf16(fbits(0xff800000u)), 0xff80);
	cr_assert_eq(emb_f32_to_f16(fbits(0x7f800001u)), 0x7e00);
	cr_assert_eq(emb_f32_to_f16(fbits(0xffa00000u)), 0xff00);
	cr_assert_eq(emb_f32_to_f16(65520.0f), 0x7c00);   /* rounds past 65504 */
	cr_assert_eq(emb_f32_to_f16(65519.0f), 0x7bff);
	cr_assert_eq(emb_f32_to_f16(-1e10f), 0xfc00);
	cr_assert_eq(emb_f32_to_f16(fbits(0xff800000u)), 0xfc00);
}
