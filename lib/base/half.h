/*
 * base/half.h - the one home of the 16-bit float conversions: IEEE half
 * (f16) and bfloat16 (bf16) to and from fp32.  Every layer converts
 * through these (checkpoint reading and writing, vector indexes,
 * synthetic checkpoints, the bf16 kernels); inline, so that kernels
 * call nothing.
 *
 * The rounding rule, the same for both formats: round to nearest, ties
 * to even (as numpy's astype and PyTorch's .to() do); values past the
 * largest finite one round to infinity of the same sign; subnormal
 * results are kept (f16: a half subnormal, rounded the same way; bf16:
 * the fp32 subnormal's top bits, rounded); a NaN stays a NaN, quieted
 * (the quiet bit set, the top bits of its payload and its sign kept).
 * Widening (f16/bf16 -> fp32) is exact, subnormals, infinities and NaN
 * payloads included.  The bf16 GEMMs round their activations by this
 * rule after flushing subnormal inputs to zero, as vcvtneps2bf16 does
 * (kern/bkernels.h, emb_f32_to_bf16_ftz).
 */
#ifndef EMB_HALF_H
#define EMB_HALF_H

#include <stdint.h>
#include <string.h>

/* IEEE half bits -> fp32 (exact) */
static inline float emb_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t ex = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
	float f;

	if (ex == 0x1f) {
		u = sign | 0x7f800000u | (man << 13);
	} else if (ex) {
		u = sign | ((ex + 112) << 23) | (man << 13);
	} else if (!man) {
		u = sign;
	} else {        /* subnormal: man * 2^-24, renormalized */
		uint32_t e = 113;
		while (!(man & 0x400u)) {
			man <<= 1;
			e--;
		}
		u = sign | (e << 23) | ((man & 0x3ffu) << 13);
	}
	memcpy(&f, &u, 4);
	return f;
}

/* fp32 -> IEEE half bits (the rule above) */
static inline uint16_t emb_f32_to_f16(float f)
{
	uint32_t u, sign, ex, man, r, rem, half;
	int e, shift;

	memcpy(&u, &f, 4);
	sign = (u >> 16) & 0x8000u;
	ex = (u >> 23) & 0xffu;
	man = u & 0x7fffffu;
	if (ex == 0xff)         /* infinity, or NaN quieted */
		return (uint16_t)(sign | 0x7c00u |
		                  (man ? 0x200u | (man >> 13) : 0));
	e = (int)ex - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {           /* a half subnormal, or zero */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		shift = 14 - e;
		r = man >> shift;
		rem = man & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	r = ((uint32_t)e << 10) | (man >> 13);
	rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
		r++;            /* a carry into the exponent is still right */
	return (uint16_t)(sign | r);
}

/* bf16 bits -> fp32 (exact) */
static inline float emb_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* fp32 -> bf16 bits (the rule above) */
static inline uint16_t emb_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

#endif /* EMB_HALF_H */
