/*
 * kernels_i8_avx2.c - the int8 GEMM of qkernels.h with AVX-VNNI (the
 * 256-bit VEX vpdpbusd of CPUs without AVX-512 VNNI, built with a
 * function target attribute: GCC 11+, clang 12+) and the AVX2
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

/* 16 columns of one row: acc lo/hi (8 + 8 lanes) -> y, same epilogue */
AVXVNNI static void avx_epilogue(float *y, __m256i lo, __m256i hi, float xs,
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
		_mm256_storeu_ps(out + 8 * h, v);
	}
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
			avx_epilogue(yi, l0, h0, xs[i], xz[i], wsp, sump, bq, nc);
			avx_epilogue(yi + ldy, l1, h1, xs[i + 1], xz[i + 1], wsp, sump,
			             bq, nc);
			avx_epilogue(yi + 2 * (size_t)ldy, l2, h2, xs[i + 2], xz[i + 2],
			             wsp, sump, bq, nc);
			avx_epilogue(yi + 3 * (size_t)ldy, l3, h3, xs[i + 3], xz[i + 3],
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
			avx_epilogue(y + (size_t)i * ldy + 16 * p, lo, hi, xs[i], xz[i],
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

#define AVX2Q __attribute__((target("avx2")))

/* the AVX2 row quantizer: emb_u8_quantize_rows's bytes, scales and zero
 * points (vminps / vmaxps return the second operand for NaN, as the
 * scalar comparisons skip it; the tails run the scalar formula) */
AVX2Q static void u8_quantize_avx2(uint8_t *u, int ldu, float *xs,
                                   int32_t *xz, const float *x, int ldx,
                                   int rows, int k)
{
	int kp = (k + 3) / 4 * 4;

	for (int i = 0; i < rows; i++) {
		const float *r = x + (size_t)i * ldx;
		uint8_t *o = u + (size_t)i * ldu;
		__m256 vlo = _mm256_setzero_ps(), vhi = vlo;
		float lo, hi, inv, t[8];
		int32_t z;
		int kk = 0;
		for (; kk + 8 <= k; kk += 8) {
			__m256 v = _mm256_loadu_ps(r + kk);
			vlo = _mm256_min_ps(v, vlo);
			vhi = _mm256_max_ps(v, vhi);
		}
		_mm256_storeu_ps(t, vlo);
		lo = 0;
		for (int c = 0; c < 8; c++)
			if (t[c] < lo)
				lo = t[c];
		_mm256_storeu_ps(t, vhi);
		hi = 0;
		for (int c = 0; c < 8; c++)
			if (t[c] > hi)
				hi = t[c];
		for (int c = kk; c < k; c++) {
			if (r[c] < lo)
				lo = r[c];
			if (r[c] > hi)
				hi = r[c];
		}
		emb_u8_row_params(&xs[i], &inv, &z, lo, hi);
		xz[i] = z;
		__m256 vinv = _mm256_set1_ps(inv), vz = _mm256_set1_ps((float)z);
		__m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
		for (kk = 0; kk + 8 <= k; kk += 8) {
			__m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(r + kk),
			                                         vinv),
			                           _MM_FROUND_TO_NEAREST_INT |
			                           _MM_FROUND_NO_EXC);
			v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vz), zero), top);
			__m256i q = _mm256_cvttps_epi32(v);
			__m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q),
			                             _mm256_extracti128_si256(q, 1));
			_mm_storel_epi64((__m128i *)(o + kk), _mm_packus_epi16(w, w));
		}
		for (; kk < k; kk++) {
			float v = nearbyintf(r[kk] * inv) + (float)z;
			v = v > 0 ? v : 0;
			v = v < 255 ? v : 255;
			o[kk] = (uint8_t)v;
		}
		for (kk = k; kk < kp; kk++)
			o[kk] = 0;
	}
}

emb_u8_quant_fn emb_u8_quantize_avx2(void)
{
	return emb_cpu_features() & EMB_CPU_AVX2 ? u8_quantize_avx2 : NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_avxvnni(void)
{
	return NULL;
}

emb_u8_quant_fn emb_u8_quantize_avx2(void)
{
	return NULL;
}
#endif
