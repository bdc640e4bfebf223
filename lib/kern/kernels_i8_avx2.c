/*
 * kernels_i8_avx2.c - the int8 GEMM of qkernels.h with AVX-VNNI (the
 * 256-bit VEX vpdpbusd of CPUs without AVX-512 VNNI, built with a
 * function target attribute: GCC 11+, clang 12+), the same GEMM on
 * plain AVX2 (int16 vpmaddwd, for CPUs without any VNNI) and the AVX2
 * activation row quantizer, built with $(AVX2_CFLAGS).  Without them
 * (or on another CPU) they say they are not available.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "base/cpu.h"
#include "kern/qkernels.h"

/* EMB_HAVE_AVX2: configure found SIMD wanted (no --disable-simd) */
#if defined(EMB_HAVE_AVX2) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 12) || \
     (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11))
/* AVX-VNNI (target "avxvnni", _mm256_dpbusd_avx_epi32): gcc 11, clang 12 */
#include <immintrin.h>

#define AVXVNNI __attribute__((target("avx2,avxvnni")))

#define AVX2Q __attribute__((target("avx2")))

/* 16 sums of one row (lo: columns 0-7, hi: 8-15) -> y, the epilogue of
 * the scalar kernel (no fused multiply-add) */
AVX2Q static void avx2_epilogue(float *y, __m256i lo, __m256i hi, float xs,
                                int32_t xz, const float *ws,
                                const int32_t *wsum, const float *b, int nc)
{
	float out[16];
	__m256i z = _mm256_set1_epi32(xz);
	__m256 s = _mm256_set1_ps(xs);

	for (int h = 0; h < 2; h++) {
		__m256i acc = h ? hi : lo;
		__m256i d = _mm256_sub_epi32(acc, _mm256_mullo_epi32(z,
			_mm256_loadu_si256((const __m256i *)(wsum + 8 * h))));
		__m256 sc = _mm256_mul_ps(s, _mm256_loadu_ps(ws + 8 * h));
		__m256 v = _mm256_mul_ps(sc, _mm256_cvtepi32_ps(d));
		if (b)
			v = _mm256_add_ps(v, _mm256_loadu_ps(b + 8 * h));
		if (nc == 16)
			_mm256_storeu_ps(y + 8 * h, v);
		else
			_mm256_storeu_ps(out + 8 * h, v);
	}
	if (nc < 16)
		for (int c = 0; c < nc; c++)
			y[c] = out[c];
}


AVXVNNI static void gemm_i8_avxvnni(float *y, int ldy, const uint8_t *u,
                                    int ldu, const float *xs,
                                    const int32_t *xz, const int8_t *wp,
                                    const float *ws, const int32_t *wsum,
                                    const float *b, int m, int n, int kp)
{
	for (int p = 0; p < (n + 15) / 16; p++) {
		const int8_t *pw = wp + (size_t)p * 16 * kp;
		int nc = n - 16 * p < 16 ? n - 16 * p : 16;
		float wsp[16] = { 0 }, bp[16] = { 0 };
		int32_t sump[16] = { 0 };
		for (int c = 0; c < nc; c++) {
			wsp[c] = ws[16 * p + c];
			sump[c] = wsum[16 * p + c];
			if (b)
				bp[c] = b[16 * p + c];
		}
		int i = 0;
		/* 4 rows at a time: each weight vector loaded once for 4 rows */
		for (; i + 4 <= m; i += 4) {
			const uint8_t *u0 = u + (size_t)i * ldu;
			__m256i l0 = _mm256_setzero_si256(), h0 = l0, l1 = l0, h1 = l0;
			__m256i l2 = l0, h2 = l0, l3 = l0, h3 = l0;
			for (int g = 0; g < kp / 4; g++) {
				const int8_t *w = pw + (size_t)g * 64;
				__m256i wl = _mm256_loadu_si256((const __m256i *)w);
				__m256i wh = _mm256_loadu_si256((const __m256i *)(w + 32));
				int32_t x0, x1, x2, x3;
				__builtin_memcpy(&x0, u0 + 4 * g, 4);
				__builtin_memcpy(&x1, u0 + ldu + 4 * g, 4);
				__builtin_memcpy(&x2, u0 + 2 * (size_t)ldu + 4 * g, 4);
				__builtin_memcpy(&x3, u0 + 3 * (size_t)ldu + 4 * g, 4);
				__m256i b0 = _mm256_set1_epi32(x0), b1 = _mm256_set1_epi32(x1);
				__m256i b2 = _mm256_set1_epi32(x2), b3 = _mm256_set1_epi32(x3);
				l0 = _mm256_dpbusd_avx_epi32(l0, b0, wl);
				h0 = _mm256_dpbusd_avx_epi32(h0, b0, wh);
				l1 = _mm256_dpbusd_avx_epi32(l1, b1, wl);
				h1 = _mm256_dpbusd_avx_epi32(h1, b1, wh);
				l2 = _mm256_dpbusd_avx_epi32(l2, b2, wl);
				h2 = _mm256_dpbusd_avx_epi32(h2, b2, wh);
				l3 = _mm256_dpbusd_avx_epi32(l3, b3, wl);
				h3 = _mm256_dpbusd_avx_epi32(h3, b3, wh);
			}
			float *yi = y + (size_t)i * ldy + 16 * p;
			const float *bq = b ? bp : NULL;
			avx2_epilogue(yi, l0, h0, xs[i], xz[i], wsp, sump, bq, nc);
			avx2_epilogue(yi + ldy, l1, h1, xs[i + 1], xz[i + 1], wsp, sump,
			             bq, nc);
			avx2_epilogue(yi + 2 * (size_t)ldy, l2, h2, xs[i + 2], xz[i + 2],
			             wsp, sump, bq, nc);
			avx2_epilogue(yi + 3 * (size_t)ldy, l3, h3, xs[i + 3], xz[i + 3],
			             wsp, sump, bq, nc);
		}
		for (; i < m; i++) {
			const uint8_t *ui = u + (size_t)i * ldu;
			__m256i lo = _mm256_setzero_si256(), hi = lo;
			for (int g = 0; g < kp / 4; g++) {
				const int8_t *w = pw + (size_t)g * 64;
				int32_t x;
				__m256i xb;
				__builtin_memcpy(&x, ui + 4 * g, 4);
				xb = _mm256_set1_epi32(x);
				lo = _mm256_dpbusd_avx_epi32(lo, xb,
					_mm256_loadu_si256((const __m256i *)w));
				hi = _mm256_dpbusd_avx_epi32(hi, xb,
					_mm256_loadu_si256((const __m256i *)(w + 32)));
			}
			avx2_epilogue(y + (size_t)i * ldy + 16 * p, lo, hi, xs[i], xz[i],
			             wsp, sump, b ? bp : NULL, nc);
		}
	}
}

emb_gemm_i8_fn emb_gemm_i8_avxvnni(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AVX2) && (f & EMB_CPU_AVXVNNI) ? gemm_i8_avxvnni
	                                                   : NULL;
}


/*
 * The int8 GEMM on plain AVX2 (no VNNI), from the same packed panels.
 * vpmaddubsw (u8 x s8 -> s16 pairs) would saturate: 255 * 127 * 2 >
 * 32767.  So both operands are widened to int16 and multiplied with
 * vpmaddwd, whose pair sums (at most 2 * 255 * 127) are exact in int32:
 * a k group of one panel is 64 bytes, 4 columns of 4 k per 16-byte
 * piece; vpmovsxbw makes it 16 words, and vpmaddwd with the row's 4
 * activation words (broadcast) gives per column two int32 partial sums
 * (k 0+1 and k 2+3), kept apart until the end, where vphaddd adds them.
 * Integer sums are exact, so the order does not matter; the epilogue is
 * avx2_epilogue's (the scalar operations).  Tiles of 3 rows x 16 columns:
 * 12 accumulators, each widened weight piece used by 3 rows.
 */

/* 4 accumulators of 4 columns x 2 partial sums -> 16 column sums */
AVX2Q static inline __attribute__((always_inline)) void avx2_hsum(__m256i *lo, __m256i *hi, __m256i a,
                                   __m256i b, __m256i c, __m256i d)
{
	/* vphaddd works in 128-bit halves: [0 1 4 5 | 2 3 6 7], then
	 * vpermq puts the 64-bit pieces in column order */
	*lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xd8);
	*hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c, d), 0xd8);
}


/* one panel (16 columns, pw) x rows [0, MR) of u, MR 1..3 */
AVX2Q static inline __attribute__((always_inline)) void avx2_tile(float *y, int ldy, const uint8_t *u,
                                   int ldu, const float *xs,
                                   const int32_t *xz, const int8_t *pw,
                                   const float *ws, const int32_t *wsum,
                                   const float *b, int kp, int MR, int nc)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	__m256i b0 = a0, b1 = a0, b2 = a0, b3 = a0;
	__m256i c0 = a0, c1 = a0, c2 = a0, c3 = a0;
	const uint8_t *u1 = u + (MR > 1 ? ldu : 0);
	const uint8_t *u2 = u + (MR > 2 ? 2 * (size_t)ldu : 0);

	for (int g = 0; g < kp / 4; g++) {
		const int8_t *w = pw + (size_t)g * 64;
		int32_t x0, x1 = 0, x2 = 0;
		__m256i xa, xb = a0, xc = a0, wv;
		__builtin_memcpy(&x0, u + 4 * (size_t)g, 4);
		xa = _mm256_cvtepu8_epi16(_mm_set1_epi32(x0));
		if (MR > 1) {
			__builtin_memcpy(&x1, u1 + 4 * (size_t)g, 4);
			xb = _mm256_cvtepu8_epi16(_mm_set1_epi32(x1));
		}
		if (MR > 2) {
			__builtin_memcpy(&x2, u2 + 4 * (size_t)g, 4);
			xc = _mm256_cvtepu8_epi16(_mm_set1_epi32(x2));
		}
#define AVX2_PIECE(q, A, B, C) do { \
		wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 16 * q))); \
		A = _mm256_add_epi32(A, _mm256_madd_epi16(xa, wv)); \
		if (MR > 1) \
			B = _mm256_add_epi32(B, _mm256_madd_epi16(xb, wv)); \
		if (MR > 2) \
			C = _mm256_add_epi32(C, _mm256_madd_epi16(xc, wv)); \
	} while (0)
		AVX2_PIECE(0, a0, b0, c0);
		AVX2_PIECE(1, a1, b1, c1);
		AVX2_PIECE(2, a2, b2, c2);
		AVX2_PIECE(3, a3, b3, c3);
#undef AVX2_PIECE
	}
	__m256i lo, hi;
	avx2_hsum(&lo, &hi, a0, a1, a2, a3);
	avx2_epilogue(y, lo, hi, xs[0], xz[0], ws, wsum, b, nc);
	if (MR > 1) {
		avx2_hsum(&lo, &hi, b0, b1, b2, b3);
		avx2_epilogue(y + ldy, lo, hi, xs[1], xz[1], ws, wsum, b, nc);
	}
	if (MR > 2) {
		avx2_hsum(&lo, &hi, c0, c1, c2, c3);
		avx2_epilogue(y + 2 * (size_t)ldy, lo, hi, xs[2], xz[2], ws, wsum,
		              b, nc);
	}
}

AVX2Q static void gemm_i8_avx2(float *y, int ldy, const uint8_t *u, int ldu,
                               const float *xs, const int32_t *xz,
                               const int8_t *wp, const float *ws,
                               const int32_t *wsum, const float *b, int m,
                               int n, int kp)
{
	for (int p = 0; p < (n + 15) / 16; p++) {
		const int8_t *pw = wp + (size_t)p * 16 * kp;
		int nc = n - 16 * p < 16 ? n - 16 * p : 16;
		/* the last panel's scales, sums and bias padded to 16 */
		float wsp[16] = { 0 }, bp[16] = { 0 };
		int32_t sump[16] = { 0 };
		const float *wsq = ws + 16 * p, *bq = b ? b + 16 * p : NULL;
		const int32_t *sumq = wsum + 16 * p;
		if (nc < 16) {
			for (int c = 0; c < nc; c++) {
				wsp[c] = wsq[c];
				sump[c] = sumq[c];
				if (b)
					bp[c] = bq[c];
			}
			wsq = wsp;
			sumq = sump;
			bq = b ? bp : NULL;
		}
		int i = 0;
		for (; i + 3 <= m; i += 3)
			avx2_tile(y + (size_t)i * ldy + 16 * p, ldy, u + (size_t)i * ldu,
			          ldu, xs + i, xz + i, pw, wsq, sumq, bq, kp, 3, nc);
		if (m - i == 2)
			avx2_tile(y + (size_t)i * ldy + 16 * p, ldy, u + (size_t)i * ldu,
			          ldu, xs + i, xz + i, pw, wsq, sumq, bq, kp, 2, nc);
		else if (m - i == 1)
			avx2_tile(y + (size_t)i * ldy + 16 * p, ldy, u + (size_t)i * ldu,
			          ldu, xs + i, xz + i, pw, wsq, sumq, bq, kp, 1, nc);
	}
}

emb_gemm_i8_fn emb_gemm_i8_avx2(void)
{
	return emb_cpu_features() & EMB_CPU_AVX2 ? gemm_i8_avx2 : NULL;
}


/* x[c..c+8) times cs[c..c+8) when cs is not NULL */
AVX2Q static inline __attribute__((always_inline)) __m256
load8(const float *x, const float *cs, int c)
{
	__m256 v = _mm256_loadu_ps(x + c);

	return cs ? _mm256_mul_ps(v, _mm256_loadu_ps(cs + c)) : v;
}

/* round(v * inv) + z as int32 (vcvtps2dq rounds as MXCSR says, nearest
 * even by default, as nearbyintf); NaN gives INT_MIN, which the unsigned
 * saturation of the packs makes 0 */
AVX2Q static inline __attribute__((always_inline)) __m256i
q8(__m256 v, __m256 vinv, __m256i vz)
{
	return _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v, vinv)), vz);
}

/* the AVX2 row quantizer: emb_u8_quantize_rows's bytes, scales and zero
 * points of the rows x, or emb_u8_quantize_rows_scaled's of x * cs when
 * cs is not NULL (x * cs recomputed in the second pass, the same float32
 * products).  The range: four min/max chains (vminps / vmaxps return the
 * second operand for NaN, as the scalar comparisons skip it).  The
 * bytes: int32 saturated to u16 then u8 by two packs, 32 at a time (the
 * packs work per 128-bit lane; a dword permute restores the order),
 * exact while |x * inv| stays far inside int16, as it does whenever the
 * row's scale is a normal float; a row whose range underflows the scale
 * goes to the scalar quantizer.  The tails run the scalar formula. */
AVX2Q static inline __attribute__((always_inline)) void
u8_rows_avx2(uint8_t *u, int ldu, float *xs, int32_t *xz, const float *x,
             int ldx, int rows, int k, const float *cs)
{
	int kp = (k + 3) / 4 * 4;
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int i = 0; i < rows; i++) {
		const float *r = x + (size_t)i * ldx;
		uint8_t *o = u + (size_t)i * ldu;
		__m256 l0 = _mm256_setzero_ps(), l1 = l0, l2 = l0, l3 = l0;
		__m256 h0 = l0, h1 = l0, h2 = l0, h3 = l0;
		float lo, hi, inv, t[8];
		int32_t z;
		int kk = 0;
		for (; kk + 32 <= k; kk += 32) {
			__m256 v0 = load8(r, cs, kk), v1 = load8(r, cs, kk + 8);
			__m256 v2 = load8(r, cs, kk + 16), v3 = load8(r, cs, kk + 24);
			l0 = _mm256_min_ps(v0, l0); h0 = _mm256_max_ps(v0, h0);
			l1 = _mm256_min_ps(v1, l1); h1 = _mm256_max_ps(v1, h1);
			l2 = _mm256_min_ps(v2, l2); h2 = _mm256_max_ps(v2, h2);
			l3 = _mm256_min_ps(v3, l3); h3 = _mm256_max_ps(v3, h3);
		}
		for (; kk + 8 <= k; kk += 8) {
			__m256 v = load8(r, cs, kk);
			l0 = _mm256_min_ps(v, l0);
			h0 = _mm256_max_ps(v, h0);
		}
		_mm256_storeu_ps(t, _mm256_min_ps(_mm256_min_ps(l0, l1),
		                                  _mm256_min_ps(l2, l3)));
		lo = 0;
		for (int c = 0; c < 8; c++)
			if (t[c] < lo)
				lo = t[c];
		_mm256_storeu_ps(t, _mm256_max_ps(_mm256_max_ps(h0, h1),
		                                  _mm256_max_ps(h2, h3)));
		hi = 0;
		for (int c = 0; c < 8; c++)
			if (t[c] > hi)
				hi = t[c];
		for (int c = kk; c < k; c++) {
			float v = cs ? r[c] * cs[c] : r[c];
			if (v < lo)
				lo = v;
			if (v > hi)
				hi = v;
		}
		emb_u8_row_params(&xs[i], &inv, &z, lo, hi);
		if (!emb_u8_row_fits(lo, hi, inv)) {
			emb_u8_quantize_rows_scaled(o, ldu, &xs[i], &xz[i], r, ldx,
			                            1, k, cs);
			continue;
		}
		xz[i] = z;
		__m256 vinv = _mm256_set1_ps(inv);
		__m256i vz = _mm256_set1_epi32(z);
		for (kk = 0; kk + 32 <= k; kk += 32) {
			__m256i a = q8(load8(r, cs, kk), vinv, vz);
			__m256i b = q8(load8(r, cs, kk + 8), vinv, vz);
			__m256i c = q8(load8(r, cs, kk + 16), vinv, vz);
			__m256i d = q8(load8(r, cs, kk + 24), vinv, vz);
			__m256i p = _mm256_packus_epi16(_mm256_packus_epi32(a, b),
			                                _mm256_packus_epi32(c, d));
			_mm256_storeu_si256((__m256i *)(o + kk),
			                    _mm256_permutevar8x32_epi32(p, perm));
		}
		for (; kk + 8 <= k; kk += 8) {
			__m256i q = q8(load8(r, cs, kk), vinv, vz);
			__m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q),
			                             _mm256_extracti128_si256(q, 1));
			_mm_storel_epi64((__m128i *)(o + kk), _mm_packus_epi16(w, w));
		}
		for (; kk < k; kk++) {
			float v = nearbyintf((cs ? r[kk] * cs[kk] : r[kk]) * inv) +
			          (float)z;
			v = v > 0 ? v : 0;
			v = v < 255 ? v : 255;
			o[kk] = (uint8_t)v;
		}
		for (kk = k; kk < kp; kk++)
			o[kk] = 0;
	}
}

AVX2Q static void u8_quantize_avx2(uint8_t *u, int ldu, float *xs,
                                   int32_t *xz, const float *x, int ldx,
                                   int rows, int k)
{
	u8_rows_avx2(u, ldu, xs, xz, x, ldx, rows, k, NULL);
}

AVX2Q static void u8_quantize_scaled_avx2(uint8_t *u, int ldu, float *xs,
                                          int32_t *xz, const float *x,
                                          int ldx, int rows, int k,
                                          const float *cs)
{
	u8_rows_avx2(u, ldu, xs, xz, x, ldx, rows, k, cs);
}

emb_u8_quant_fn emb_u8_quantize_avx2(void)
{
	return emb_cpu_features() & EMB_CPU_AVX2 ? u8_quantize_avx2 : NULL;
}

emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx2(void)
{
	return emb_cpu_features() & EMB_CPU_AVX2 ? u8_quantize_scaled_avx2 : NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_avxvnni(void)
{
	return NULL;
}

emb_gemm_i8_fn emb_gemm_i8_avx2(void)
{
	return NULL;
}

emb_u8_quant_fn emb_u8_quantize_avx2(void)
{
	return NULL;
}

emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx2(void)
{
	return NULL;
}
#endif
