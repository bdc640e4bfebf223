/*
 * kernels_bf16_avx2.c - the bf16 GEMM of bkernels.h with AVX2 + FMA,
 * built with $(AVX2_CFLAGS) and only run after a CPU check.  The bf16
 * pairs of the packed weights widen to fp32 with a 16-bit shift (even
 * element) or a mask (odd element); the activations are rounded to bf16
 * (as fp32 values) into a small stack block per row tile.  One fused
 * multiply-add per product gives the scalar kernel's bits (bkernels.h).
 *
 * Blocks of MC rows, k in blocks of KB: the block's rows of x are
 * rounded once into a stack buffer, then each panel's KB x 16 weights
 * (in L1) serve every tile of 4 rows x 16 columns (8 accumulators).  The
 * partial sums wait in y (or, for a last panel narrower than 16, in a
 * stack block) between k blocks: storing and reloading an fp32 partial
 * sum does not change it.
 */
#include <stddef.h>
#include <stdint.h>
#include "base/cpu.h"
#include "kern/bkernels.h"

#ifdef EMB_HAVE_AVX2
#include <immintrin.h>

#define INL static inline __attribute__((always_inline))
#define MR 4            /* rows per tile */
#define KB 256          /* k per block (even) */
#define MC 48           /* rows per block (the rounded block: 48 KiB) */

/* x[0..n) -> r[0..KB): bf16-rounded fp32 (emb_f32_to_bf16_ftz), 0 past n */
INL void round_block(float *r, const float *x, int n)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	const __m256i inf = _mm256_set1_epi32(0x7f800000);
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
	const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
	const __m256i bias = _mm256_set1_epi32(0x7fff);
	const __m256i one = _mm256_set1_epi32(1);
	const __m256i quiet = _mm256_set1_epi32(0x00400000);
	int i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
		__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
		__m256i den = _mm256_cmpeq_epi32(_mm256_and_si256(u, inf),
		                                 _mm256_setzero_si256());
		__m256i rnd = _mm256_add_epi32(u, _mm256_add_epi32(bias,
			_mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
		__m256i v = _mm256_and_si256(rnd, hi);
		v = _mm256_blendv_epi8(v, _mm256_and_si256(_mm256_or_si256(u, quiet),
		                                           hi), nan);
		v = _mm256_blendv_epi8(v, _mm256_and_si256(u, sign), den);
		_mm256_storeu_si256((__m256i *)(r + i), v);
	}
	for (; i < n; i++)
		r[i] = emb_bf16_to_f32(emb_f32_to_bf16_ftz(x[i]));
	for (; i < KB; i++)
		r[i] = 0.0f;
}

/*
 * One tile: rows [0,mr) (xr: their rounded block, KB apart) x one panel
 * (w: its pairs of this block), np pairs.  The partial sums: from part
 * (unless first: from 0), to part (unless last: + b, to y).  The
 * accumulators are named variables (an array of them is not kept in
 * registers by GCC 12); mr is a constant after inlining.
 */
#define LD(r) do { if (mr > r) { \
	a##r##0 = first ? z : _mm256_loadu_ps(part + (size_t)r * ldp); \
	a##r##1 = first ? z : _mm256_loadu_ps(part + (size_t)r * ldp + 8); } \
} while (0)
#define FMA(r) do { if (mr > r) { \
	__m256 xo = _mm256_broadcast_ss(xr + (size_t)r * KB + 2 * g + 1); \
	__m256 xe = _mm256_broadcast_ss(xr + (size_t)r * KB + 2 * g); \
	a##r##0 = _mm256_fmadd_ps(xo, o0, a##r##0); \
	a##r##1 = _mm256_fmadd_ps(xo, o1, a##r##1); \
	a##r##0 = _mm256_fmadd_ps(xe, e0, a##r##0); \
	a##r##1 = _mm256_fmadd_ps(xe, e1, a##r##1); } \
} while (0)
#define ST(r) do { if (mr > r) \
	store(y + (size_t)r * ldy, part + (size_t)r * ldp, a##r##0, a##r##1, b, \
	      last, nc); \
} while (0)

/* one row's 16 sums: partial (to part) or final (+ b, nc columns to y) */
INL void store(float *y, float *part, __m256 v0, __m256 v1, const float *b,
               int last, int nc)
{
	float out[16];

	if (!last) {
		_mm256_storeu_ps(part, v0);
		_mm256_storeu_ps(part + 8, v1);
		return;
	}
	if (b) {
		v0 = _mm256_add_ps(v0, _mm256_loadu_ps(b));
		v1 = _mm256_add_ps(v1, _mm256_loadu_ps(b + 8));
	}
	if (nc == 16) {
		_mm256_storeu_ps(y, v0);
		_mm256_storeu_ps(y + 8, v1);
		return;
	}
	_mm256_storeu_ps(out, v0);
	_mm256_storeu_ps(out + 8, v1);
	for (int c = 0; c < nc; c++)
		y[c] = out[c];
}

INL void tile(float *y, int ldy, float *part, int ldp, const float *xr,
              const uint16_t *w, const float *b, int np, int mr, int first,
              int last, int nc)
{
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
	const __m256 z = _mm256_setzero_ps();
	__m256 a00 = z, a01 = z, a10 = z, a11 = z, a20 = z, a21 = z, a30 = z,
	       a31 = z;

	LD(0); LD(1); LD(2); LD(3);
	for (int g = 0; g < np; g++) {
		__m256i p0 = _mm256_loadu_si256((const __m256i *)(w + 32 * (size_t)g));
		__m256i p1 = _mm256_loadu_si256((const __m256i *)(w + 32 * (size_t)g + 16));
		__m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(p0, hi));
		__m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(p1, hi));
		__m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(p0, 16));
		__m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(p1, 16));
		/* odd element first, then even */
		FMA(0); FMA(1); FMA(2); FMA(3);
	}
	ST(0); ST(1); ST(2); ST(3);
}
#undef LD
#undef FMA
#undef ST

/* a tile of mr (1..MR, a constant after inlining) rows at row r of the
 * block */
#define TILE(R) tile(yp + (size_t)r * ldy, ldy, part + (size_t)r * ldp, ldp, \
	xr + (size_t)r * KB, w, bp, kl / 2, R, first, last, nc)

// X (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16
__attribute__((target("avx2,fma")))
static void gemm_bf16_avx2(float *y, int ldy, const float *x, int ldx,
                           const uint16_t *wb, const float *b, int m, int n,
                           int k)
{
	int k2 = (k + 1) / 2 * 2, npan = (n + 15) / 16;
	int tn = n - 16 * (npan - 1);   /* columns of the last panel */
	float xr[MC * KB], tail[MC * 16], bt[16];
	const float *btail = NULL;

	if (b && tn < 16) {
		for (int c = 0; c < 16; c++)
			bt[c] = c < tn ? b[16 * (npan - 1) + c] : 0.0f;
		btail = bt;
	}
	/* blocks of MC rows; in each, k blocks of KB: the block's rows of x
	 * rounded once, then every panel (its KB x 16 weights stay in L1)
	 * over every row tile */
	for (int i0 = 0; i0 < m; i0 += MC) {
		int mc = m - i0 < MC ? m - i0 : MC;
		float *yb = y + (size_t)i0 * ldy;
		for (int k0 = 0; k0 < k2; k0 += KB) {
			int kl = k2 - k0 < KB ? k2 - k0 : KB;
			int kx = k - k0 < kl ? k - k0 : kl; /* real k in this block */
			int first = k0 == 0, last = k0 + KB >= k2;
			for (int r = 0; r < mc; r++)
				round_block(xr + (size_t)r * KB,
				            x + (size_t)(i0 + r) * ldx + k0, kx);
			for (int p = 0; p < npan; p++) {
				const uint16_t *w = wb + (size_t)p * 16 * k2 +
				                    (size_t)k0 * 16;
				int nc = p == npan - 1 ? tn : 16;
				float *yp = yb + 16 * p, *part = yp;
				int ldp = ldy, r = 0;
				const float *bp = b ? (nc < 16 ? btail : b + 16 * p)
				                    : NULL;
				if (nc < 16) {
					part = tail;
					ldp = 16;
				}
				for (; r + MR <= mc; r += MR)
					TILE(MR);
				switch (mc - r) {
				case 3: TILE(3); break;
				case 2: TILE(2); break;
				case 1: TILE(1); break;
				default: break;
				}
			}
		}
	}
}
#undef TILE

emb_gemm_bf16_fn emb_gemm_bf16_avx2(void)
{
	return emb_cpu_features() & EMB_CPU_AVX2 ? gemm_bf16_avx2 : NULL;
}
#else
emb_gemm_bf16_fn emb_gemm_bf16_avx2(void)
{
	return NULL;
}
#endif
