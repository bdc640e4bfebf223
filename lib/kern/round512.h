/*
 * round512.h - the bf16 rounding of bkernels.h (emb_f32_to_bf16_ftz) on
 * 16 lanes in AVX-512 integer steps, for the AVX-512 files of lib/kern/
 * that round without vcvtne2ps2bf16 (kernels_bf16_avx512.c's packers,
 * kernels_avx512.c's bf16 GEMM); private to lib/kern/.
 */
#ifndef EMB_ROUND512_H
#define EMB_ROUND512_H

#include <immintrin.h>

/* 16 floats (as bits) rounded as emb_f32_to_bf16_ftz rounds:
 * subnormals to signed zero, NaN quieted, else nearest even; each
 * lane's bf16 in its high 16 bits, the low 16 bits left as they fall */
static inline __attribute__((always_inline,
                             target("avx512f,avx512bw,avx512vl")))
__m512i emb_round_bf16_hi512(__m512i u)
{
	const __m512i abs = _mm512_set1_epi32(0x7fffffff);
	const __m512i inf = _mm512_set1_epi32(0x7f800000);
	__mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
	__mmask16 den = _mm512_testn_epi32_mask(u, inf);
	__m512i v = _mm512_add_epi32(u, _mm512_add_epi32(
		_mm512_set1_epi32(0x7fff),
		_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));

	v = _mm512_mask_mov_epi32(v, nan,
	                          _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
	return _mm512_mask_mov_epi32(v, den, _mm512_and_si512(u,
	                             _mm512_set1_epi32((int)0x80000000u)));
}

#endif /* EMB_ROUND512_H */
