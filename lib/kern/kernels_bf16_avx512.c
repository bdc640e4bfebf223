/*
 * kernels_bf16_avx512.c - the bf16 GEMM of bkernels.h with AVX-512 BF16
 * (vdpbf16ps: per fp32 lane, the two products of a bf16 pair added in
 * turn, odd element first), built with a function target attribute
 * (avx512bf16: GCC 10+, clang 9+) so that it needs no flags of its own
 * from configure; only run when cpuid says the CPU has AVX512_BF16
 * (base/cpu.c).  The structure is kernels_bf16_avx2.c's: tiles of 8 rows
 * x 16 columns (one zmm accumulator per row), k in blocks of KB with the
 * tile's activations rounded once per block into bf16 pairs (the same
 * integer rounding as emb_f32_to_bf16), partial sums waiting in y.
 */
#include <stddef.h>
#include <stdint.h>
#include "base/cpu.h"
#include "kern/bkernels.h"

#if defined(EMB_HAVE_AVX2) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 9) || \
     (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10))
#include <immintrin.h>

#define BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define INL static inline __attribute__((always_inline))
#define MR 8            /* rows per tile */
#define KB 256          /* k per block (even) */

/* x[0..n) -> r[0..KB/2): bf16 pairs (even element low), 0 past n */
BF16 INL void round_block(uint32_t *r, const float *x, int n)
{
	const __m512i abs = _mm512_set1_epi32(0x7fffffff);
	const __m512i inf = _mm512_set1_epi32(0x7f800000);
	const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
	const __m512i bias = _mm512_set1_epi32(0x7fff);
	const __m512i one = _mm512_set1_epi32(1);
	const __m512i quiet = _mm512_set1_epi32(0x00400000);
	uint16_t *h = (uint16_t *)r;
	int i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512i u = _mm512_loadu_si512((const void *)(x + i));
		__mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
		__mmask16 den = _mm512_testn_epi32_mask(u, inf);
		__m512i v = _mm512_add_epi32(u, _mm512_add_epi32(bias,
			_mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
		v = _mm512_mask_mov_epi32(v, nan, _mm512_or_si512(u, quiet));
		v = _mm512_mask_mov_epi32(v, den, _mm512_and_si512(u, sign));
		_mm256_storeu_si256((__m256i *)(h + i),
		                    _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
	}
	for (; i < n; i++)
		h[i] = emb_f32_to_bf16(x[i]);
	for (; i < KB; i++)
		h[i] = 0;
}

/* one tile: rows [0,mr) x one panel, np pairs (see kernels_bf16_avx2.c) */
BF16 INL void tile(float *y, int ldy, float *part, int ldp, const uint32_t *xr,
                   const uint16_t *w, const float *b, int np, int mr,
                   int first, int last, int nc)
{
	__m512 a[MR];
	__mmask16 mk = (__mmask16)((1u << nc) - 1);

	for (int r = 0; r < MR; r++)
		a[r] = r < mr && !first ? _mm512_loadu_ps(part + (size_t)r * ldp)
		                        : _mm512_setzero_ps();
	for (int g = 0; g < np; g++) {
		__m512i wv = _mm512_loadu_si512((const void *)(w + 32 * (size_t)g));
		for (int r = 0; r < MR; r++) {
			if (r >= mr)
				break;
			__m512i xb = _mm512_set1_epi32((int)xr[(size_t)r * (KB / 2) + g]);
			a[r] = _mm512_dpbf16_ps(a[r], (__m512bh)xb, (__m512bh)wv);
		}
	}
	for (int r = 0; r < MR && r < mr; r++) {
		if (!last) {
			_mm512_storeu_ps(part + (size_t)r * ldp, a[r]);
			continue;
		}
		__m512 v = a[r];
		if (b)
			v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, b));
		_mm512_mask_storeu_ps(y + (size_t)r * ldy, mk, v);
	}
}

BF16 INL void rows(float *y, int ldy, const float *x, int ldx,
                   const uint16_t *wb, const float *b, int mr, int n, int k)
{
	int k2 = (k + 1) / 2 * 2, npan = (n + 15) / 16;
	uint32_t xr[MR * KB / 2];
	float tail[MR * 16] = { 0 };
	int tn = n - 16 * (npan - 1);

	for (int k0 = 0; k0 < k2; k0 += KB) {
		int kl = k2 - k0 < KB ? k2 - k0 : KB;
		int kx = k - k0 < kl ? k - k0 : kl;
		for (int r = 0; r < mr; r++)
			round_block(xr + (size_t)r * (KB / 2), x + (size_t)r * ldx + k0,
			            kx);
		for (int p = 0; p < npan; p++) {
			const uint16_t *w = wb + (size_t)p * 16 * k2 + (size_t)k0 * 16;
			int nc = p == npan - 1 ? tn : 16;
			float *yp = y + 16 * p;
			const float *bp = b ? b + 16 * p : NULL;
			int first = k0 == 0, last = k0 + KB >= k2;
			if (nc < 16)
				tile(yp, ldy, tail, 16, xr, w, bp, kl / 2, mr, first, last,
				     nc);
			else
				tile(yp, ldy, yp, ldy, xr, w, bp, kl / 2, mr, first, last,
				     nc);
		}
	}
}

// X (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16
BF16 static void gemm_bf16_avx512(float *y, int ldy, const float *x, int ldx,
                                  const uint16_t *wb, const float *b, int m,
                                  int n, int k)
{
	int i = 0;

	for (; i + MR <= m; i += MR)
		rows(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, ldx, wb, b, MR,
		     n, k);
	switch (m - i) {
#define CASE(r) case r: rows(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, \
	                          ldx, wb, b, r, n, k); break;
	CASE(7) CASE(6) CASE(5) CASE(4) CASE(3) CASE(2) CASE(1)
#undef CASE
	default:
		break;
	}
}

emb_gemm_bf16_fn emb_gemm_bf16_avx512(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AVX512) && (f & EMB_CPU_AVX512BF16) ?
	       gemm_bf16_avx512 : NULL;
}
#else
emb_gemm_bf16_fn emb_gemm_bf16_avx512(void)
{
	return NULL;
}
#endif
