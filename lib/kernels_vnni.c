/*
 * kernels_vnni.c - the int8 GEMM of qkernels.h with AVX-512 VNNI
 * (vpdpbusd: u8 x s8, 4 products summed into each int32 lane), built
 * with $(VNNI_CFLAGS), and with AVX-VNNI (the 256-bit VEX form, for CPUs
 * without AVX-512), built with a function target attribute (GCC 11+).
 * Without them (or on another CPU family) they say they are not
 * available.
 */
#include <stddef.h>
#include <stdint.h>
#include "qkernels.h"

#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

static void gemm_i8_vnni(float *y, int ldy, const uint8_t *u, int ldu,
                         const float *xs, const int32_t *xz,
                         const int8_t *wp, const float *ws,
                         const int32_t *wsum, const float *b,
                         int m, int n, int kp)
{
	for (int p = 0; p < (n + 15) / 16; p++) {
		const int8_t *pw = wp + (size_t)p * 16 * kp;
		int nc = n - 16 * p < 16 ? n - 16 * p : 16;
		__mmask16 mask = (__mmask16)((1u << nc) - 1);
		__m512 wsv = _mm512_maskz_loadu_ps(mask, ws + 16 * p);
		__m512i sumv = _mm512_maskz_loadu_epi32(mask, wsum + 16 * p);
		__m512 bv = b ? _mm512_maskz_loadu_ps(mask, b + 16 * p) :
		            _mm512_setzero_ps();
		int i = 0;
		for (; i + 4 <= m; i += 4) {
			const uint8_t *u0 = u + (size_t)i * ldu;
			__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
			for (int g = 0; g < kp / 4; g++) {
				__m512i w = _mm512_loadu_si512((const void *)(pw + (size_t)g * 64));
				int32_t x0, x1, x2, x3;
				__builtin_memcpy(&x0, u0 + 4 * g, 4);
				__builtin_memcpy(&x1, u0 + ldu + 4 * g, 4);
				__builtin_memcpy(&x2, u0 + 2 * (size_t)ldu + 4 * g, 4);
				__builtin_memcpy(&x3, u0 + 3 * (size_t)ldu + 4 * g, 4);
				a0 = _mm512_dpbusd_epi32(a0, _mm512_set1_epi32(x0), w);
				a1 = _mm512_dpbusd_epi32(a1, _mm512_set1_epi32(x1), w);
				a2 = _mm512_dpbusd_epi32(a2, _mm512_set1_epi32(x2), w);
				a3 = _mm512_dpbusd_epi32(a3, _mm512_set1_epi32(x3), w);
			}
			__m512i acc[4] = { a0, a1, a2, a3 };
			for (int r = 0; r < 4; r++) {
				__m512i d = _mm512_sub_epi32(acc[r], _mm512_mullo_epi32(
					_mm512_set1_epi32(xz[i + r]), sumv));
				__m512 sc = _mm512_mul_ps(_mm512_set1_ps(xs[i + r]), wsv);
				__m512 v = _mm512_mul_ps(sc, _mm512_cvtepi32_ps(d));
				if (b)
					v = _mm512_add_ps(v, bv);
				_mm512_mask_storeu_ps(y + (size_t)(i + r) * ldy + 16 * p,
				                      mask, v);
			}
		}
		for (; i < m; i++) {
			const uint8_t *ui = u + (size_t)i * ldu;
			__m512i a = _mm512_setzero_si512();
			for (int g = 0; g < kp / 4; g++) {
				__m512i w = _mm512_loadu_si512((const void *)(pw + (size_t)g * 64));
				int32_t x;
				__builtin_memcpy(&x, ui + 4 * g, 4);
				a = _mm512_dpbusd_epi32(a, _mm512_set1_epi32(x), w);
			}
			__m512i d = _mm512_sub_epi32(a, _mm512_mullo_epi32(
				_mm512_set1_epi32(xz[i]), sumv));
			__m512 sc = _mm512_mul_ps(_mm512_set1_ps(xs[i]), wsv);
			__m512 v = _mm512_mul_ps(sc, _mm512_cvtepi32_ps(d));
			if (b)
				v = _mm512_add_ps(v, bv);
			_mm512_mask_storeu_ps(y + (size_t)i * ldy + 16 * p, mask, v);
		}
	}
}

emb_gemm_i8_fn emb_gemm_i8_vnni(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vnni"))
		return gemm_i8_vnni;
	return NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_vnni(void)
{
	return NULL;
}
#endif

/* EMB_HAVE_AVX2: configure found SIMD wanted (no --disable-simd) */
#if defined(EMB_HAVE_AVX2) && (defined(__x86_64__) || defined(__i386__)) && \
    defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
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
		for (int i = 0; i < m; i++) {
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
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni"))
		return gemm_i8_avxvnni;
	return NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_avxvnni(void)
{
	return NULL;
}
#endif
