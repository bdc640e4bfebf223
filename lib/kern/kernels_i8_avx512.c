/*
 * kernels_i8_avx512.c - the int8 GEMM of qkernels.h with AVX-512 VNNI
 * (vpdpbusd: u8 x s8, 4 products summed into each int32 lane) and the
 * AVX-512 activation row quantizer, built with $(VNNI_CFLAGS).  Without
 * them (or on another CPU) they say they are not available.
 *
 * The AVX-512 kernel is register blocked: a tile of up to 6 rows x 4
 * panels (64 columns) keeps its 24 int32 accumulators in registers for
 * the whole k loop; per group of 4 k it loads the 4 panels' 64-byte
 * weight vectors once and broadcasts each row's 4 activation bytes once
 * (10 loads for 24 vpdpbusd).  The float epilogue (zero-point
 * correction, scale, bias) runs on the tile before it is stored.  The
 * activation row quantizer (emb_u8_quantize_rows) has an AVX-512 twin
 * here that gives the same bytes, scales and zero points.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "base/cpu.h"
#include "kern/qkernels.h"

#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

#define INL static inline __attribute__((always_inline))

/* acc += u8 x s8 dot products of 4; inline asm ties acc to its register
 * (the intrinsic makes GCC 12 copy every accumulator twice per use) */
#define DPBUSD(acc, a, w) \
	__asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w))

#define PREFETCHW(p) \
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p)))

/* the 24 accumulators of a tile, as named variables (an array of them
 * is not kept in registers by GCC 12) */
#define ACC_ROW(r) __m512i c##r##0 = _mm512_setzero_si512(), \
	c##r##1 = c##r##0, c##r##2 = c##r##0, c##r##3 = c##r##0
/* row r of the tile, k group g: broadcast its 4 bytes, NP vpdpbusd */
#define DP_ROW(r) do { \
	if (MR > r) { \
		int32_t x4; \
		__builtin_memcpy(&x4, u + (size_t)r * ldu + 4 * (size_t)g, 4); \
		__m512i xb = _mm512_set1_epi32(x4); \
		DPBUSD(c##r##0, xb, w0); \
		if (NP > 1) DPBUSD(c##r##1, xb, w1); \
		if (NP > 2) DPBUSD(c##r##2, xb, w2); \
		if (NP > 3) DPBUSD(c##r##3, xb, w3); \
	} \
} while (0)
/* epilogue of row r, panel p: y = (xs * ws) * (float)(acc - xz * wsum)
 * + b, the scalar kernel's operations in its order */
#define EPI(r, p) do { \
	if (MR > r && NP > p) { \
		__mmask16 mask = p == NP - 1 ? last : (__mmask16)0xffff; \
		__m512i d = _mm512_sub_epi32(c##r##p, _mm512_mullo_epi32( \
			_mm512_set1_epi32(xz[r]), sumv)); \
		__m512 sc = _mm512_mul_ps(_mm512_set1_ps(xs[r]), wsv); \
		__m512 v = _mm512_mul_ps(sc, _mm512_cvtepi32_ps(d)); \
		if (b) \
			v = _mm512_add_ps(v, bv); \
		_mm512_mask_storeu_ps(y + (size_t)r * ldy + 16 * p, mask, v); \
	} \
} while (0)
#define EPI_PANEL(p) do { \
	if (NP > p) { \
		__mmask16 mk = p == NP - 1 ? last : (__mmask16)0xffff; \
		__m512 wsv = _mm512_maskz_loadu_ps(mk, ws + 16 * p); \
		__m512i sumv = _mm512_maskz_loadu_epi32(mk, wsum + 16 * p); \
		__m512 bv = b ? _mm512_maskz_loadu_ps(mk, b + 16 * p) : \
		            _mm512_setzero_ps(); \
		EPI(0, p); EPI(1, p); EPI(2, p); EPI(3, p); EPI(4, p); EPI(5, p); \
	} \
} while (0)

/*
 * One tile: rows [0,MR) of u x panels [0,NP) of pw -> y.  MR <= 6 and
 * NP <= 4 are constants at every call site, so the accumulators live in
 * registers.  nc: valid columns of the last panel (1..16).
 */
INL void tile_i8(float *y, int ldy, const uint8_t *u, int ldu,
                 const float *xs, const int32_t *xz, const int8_t *pw,
                 size_t pstride, const float *ws, const int32_t *wsum,
                 const float *b, int kp, int MR, int NP, int nc)
{
	ACC_ROW(0); ACC_ROW(1); ACC_ROW(2); ACC_ROW(3); ACC_ROW(4); ACC_ROW(5);
	const int8_t *p0 = pw, *p1 = pw + pstride, *p2 = pw + 2 * pstride;
	const int8_t *p3 = pw + 3 * pstride;
	__mmask16 last = (__mmask16)((1u << nc) - 1);

	/* the output lines, for writing, while the k loop runs (y is
	 * usually not in cache: without this the stores stall on it) */
#pragma GCC unroll 6
	for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
		for (int p = 0; p < NP; p++)
			PREFETCHW(y + (size_t)r * ldy + 16 * p);
	for (int g = 0; g < kp / 4; g++) {
		__m512i w0 = _mm512_loadu_si512((const void *)(p0 + 64 * (size_t)g));
		__m512i w1 = w0, w2 = w0, w3 = w0;
		if (NP > 1)
			w1 = _mm512_loadu_si512((const void *)(p1 + 64 * (size_t)g));
		if (NP > 2)
			w2 = _mm512_loadu_si512((const void *)(p2 + 64 * (size_t)g));
		if (NP > 3)
			w3 = _mm512_loadu_si512((const void *)(p3 + 64 * (size_t)g));
		DP_ROW(0); DP_ROW(1); DP_ROW(2); DP_ROW(3); DP_ROW(4); DP_ROW(5);
	}
	EPI_PANEL(0); EPI_PANEL(1); EPI_PANEL(2); EPI_PANEL(3);
}

/* rows [0,m) of one column block of NP panels, in tiles of 6 rows */
INL void rows_i8(float *y, int ldy, const uint8_t *u, int ldu,
                 const float *xs, const int32_t *xz, const int8_t *pw,
                 size_t pstride, const float *ws, const int32_t *wsum,
                 const float *b, int m, int kp, int NP, int nc)
{
	int i = 0;

	for (; i + 6 <= m; i += 6)
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 6, NP, nc);
	switch (m - i) {
	case 5:
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 5, NP, nc);
		break;
	case 4:
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 4, NP, nc);
		break;
	case 3:
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 3, NP, nc);
		break;
	case 2:
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 2, NP, nc);
		break;
	case 1:
		tile_i8(y + (size_t)i * ldy, ldy, u + (size_t)i * ldu, ldu, xs + i,
		        xz + i, pw, pstride, ws, wsum, b, kp, 1, NP, nc);
		break;
	default:
		break;
	}
}

static void gemm_i8_vnni(float *y, int ldy, const uint8_t *u, int ldu,
                         const float *xs, const int32_t *xz,
                         const int8_t *wp, const float *ws,
                         const int32_t *wsum, const float *b,
                         int m, int n, int kp)
{
	int np = (n + 15) / 16;
	size_t ps = (size_t)16 * kp;    /* bytes per panel */

	/* column blocks of 4 panels; each block's weights stay in cache
	 * while every row tile passes over them */
	for (int p = 0; p < np; p += 4) {
		int bp = np - p < 4 ? np - p : 4;
		int nc = n - 16 * (p + bp - 1) < 16 ? n - 16 * (p + bp - 1) : 16;
		const int8_t *pw = wp + (size_t)p * ps;
		float *yp = y + 16 * p;
		const float *bb = b ? b + 16 * p : NULL;
		switch (bp) {
		case 4:
			rows_i8(yp, ldy, u, ldu, xs, xz, pw, ps, ws + 16 * p,
			        wsum + 16 * p, bb, m, kp, 4, nc);
			break;
		case 3:
			rows_i8(yp, ldy, u, ldu, xs, xz, pw, ps, ws + 16 * p,
			        wsum + 16 * p, bb, m, kp, 3, nc);
			break;
		case 2:
			rows_i8(yp, ldy, u, ldu, xs, xz, pw, ps, ws + 16 * p,
			        wsum + 16 * p, bb, m, kp, 2, nc);
			break;
		default:
			rows_i8(yp, ldy, u, ldu, xs, xz, pw, ps, ws + 16 * p,
			        wsum + 16 * p, bb, m, kp, 1, nc);
			break;
		}
	}
}

emb_gemm_i8_fn emb_gemm_i8_vnni(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512VNNI ? gemm_i8_vnni : NULL;
}

/* x[kk..kk+16) times cs[kk..kk+16) when cs is not NULL; lanes outside
 * mk load 0, which cannot move a range past 0 */
INL __m512 load16(const float *x, const float *cs, int kk, __mmask16 mk)
{
	__m512 v = _mm512_maskz_loadu_ps(mk, x + kk);

	return cs ? _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mk, cs + kk)) : v;
}

/* the row the min/max pass prefetches, this many rows ahead: the
 * forward's activations come from L3 and the pass is the first to touch
 * them (W8A8 on real MiniLM, one thread: 0.97x the time, paired) */
#define PF_ROWS 2
/* the min/max of x[0..k) (times cs) with 0, as the scalar loop: NaN is
 * skipped (vminps returns the second operand when either is NaN); four
 * accumulators, so the min/max chains do not serialize; the lines of pf
 * (a later row, or NULL) prefetched on the way */
INL void row_range(float *lo, float *hi, const float *x, const float *cs,
                   int k, const float *pf)
{
	__m512 l0 = _mm512_setzero_ps(), l1 = l0, l2 = l0, l3 = l0;
	__m512 h0 = l0, h1 = l0, h2 = l0, h3 = l0;
	int kk = 0;

	for (; kk + 64 <= k; kk += 64) {
		if (pf) {
			_mm_prefetch((const char *)(pf + kk), _MM_HINT_T0);
			_mm_prefetch((const char *)(pf + kk + 16), _MM_HINT_T0);
			_mm_prefetch((const char *)(pf + kk + 32), _MM_HINT_T0);
			_mm_prefetch((const char *)(pf + kk + 48), _MM_HINT_T0);
		}
		__m512 v0 = load16(x, cs, kk, 0xffff);
		__m512 v1 = load16(x, cs, kk + 16, 0xffff);
		__m512 v2 = load16(x, cs, kk + 32, 0xffff);
		__m512 v3 = load16(x, cs, kk + 48, 0xffff);
		l0 = _mm512_min_ps(v0, l0); h0 = _mm512_max_ps(v0, h0);
		l1 = _mm512_min_ps(v1, l1); h1 = _mm512_max_ps(v1, h1);
		l2 = _mm512_min_ps(v2, l2); h2 = _mm512_max_ps(v2, h2);
		l3 = _mm512_min_ps(v3, l3); h3 = _mm512_max_ps(v3, h3);
	}
	for (; kk < k; kk += 16) {
		__mmask16 mk = k - kk >= 16 ? 0xffff :
		               (__mmask16)((1u << (k - kk)) - 1);
		__m512 v = load16(x, cs, kk, mk);
		l0 = _mm512_min_ps(v, l0);
		h0 = _mm512_max_ps(v, h0);
	}
	*lo = _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(l0, l1),
	                                         _mm512_min_ps(l2, l3)));
	*hi = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(h0, h1),
	                                         _mm512_max_ps(h2, h3)));
}

/* round(v * inv) + z as int32, rounded to nearest even (nearbyintf's
 * default); NaN gives INT_MIN, which the saturations below make 0 */
INL __m512i q16(__m512 v, __m512 vinv, __m512i vz)
{
	return _mm512_add_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(v, vinv),
		_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
}

/* the bytes of one row (k) of x (times cs) with the row's inv and z:
 * 64 at a time, the int32 saturated to u16 then u8 by two packs (per
 * 128-bit lane, so a dword permute puts them back in order) */
INL void row_bytes(uint8_t *o, const float *x, const float *cs, int k,
                   float inv, int32_t z)
{
	const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13,
	                                       2, 6, 10, 14, 3, 7, 11, 15);
	__m512 vinv = _mm512_set1_ps(inv);
	__m512i vz = _mm512_set1_epi32(z), zero = _mm512_setzero_si512();
	int kk = 0;

	for (; kk + 64 <= k; kk += 64) {
		__m512i a = q16(load16(x, cs, kk, 0xffff), vinv, vz);
		__m512i b = q16(load16(x, cs, kk + 16, 0xffff), vinv, vz);
		__m512i c = q16(load16(x, cs, kk + 32, 0xffff), vinv, vz);
		__m512i d = q16(load16(x, cs, kk + 48, 0xffff), vinv, vz);
		__m512i p = _mm512_packus_epi16(_mm512_packus_epi32(a, b),
		                                _mm512_packus_epi32(c, d));
		_mm512_storeu_si512(o + kk, _mm512_permutexvar_epi32(perm, p));
	}
	for (; kk < k; kk += 16) {
		__mmask16 mk = k - kk >= 16 ? 0xffff :
		               (__mmask16)((1u << (k - kk)) - 1);
		__m512i q = _mm512_max_epi32(q16(load16(x, cs, kk, mk), vinv, vz),
		                             zero);
		_mm512_mask_cvtusepi32_storeu_epi8(o + kk, mk, q);
	}
}

/* emb_u8_quantize_rows (cs NULL) or emb_u8_quantize_rows_scaled: the same
 * bytes, scales and zero points.  The integer path is exact while
 * |x * inv| stays far inside int16 (the packs saturate signed values),
 * which it does for every row whose scale is a normal float (|x * inv|
 * <= 255 then); a row whose range underflows the scale goes to the
 * scalar quantizer. */
INL void u8_rows_avx512(uint8_t *u, int ldu, float *xs, int32_t *xz,
                        const float *x, int ldx, int rows, int k,
                        const float *cs)
{
	int kp = (k + 3) / 4 * 4;

	for (int i = 0; i < rows; i++) {
		const float *r = x + (size_t)i * ldx;
		uint8_t *o = u + (size_t)i * ldu;
		float lo, hi, inv;
		int32_t z;
		row_range(&lo, &hi, r, cs, k,
		          i + PF_ROWS < rows ? r + PF_ROWS * (size_t)ldx : NULL);
		emb_u8_row_params(&xs[i], &inv, &z, lo, hi);
		if (!emb_u8_row_fits(lo, hi, inv)) {
			emb_u8_quantize_rows_scaled(o, ldu, &xs[i], &xz[i], r, ldx,
			                            1, k, cs);
			continue;
		}
		xz[i] = z;
		row_bytes(o, r, cs, k, inv, z);
		for (int kk = k; kk < kp; kk++)
			o[kk] = 0;
	}
}

static void u8_quantize_avx512(uint8_t *u, int ldu, float *xs, int32_t *xz,
                               const float *x, int ldx, int rows, int k)
{
	u8_rows_avx512(u, ldu, xs, xz, x, ldx, rows, k, NULL);
}

emb_u8_quant_fn emb_u8_quantize_avx512(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512 ? u8_quantize_avx512 : NULL;
}

/* the smoothed AVX-512 row quantizer: emb_u8_quantize_rows_scaled's
 * bytes, scales and zero points (x * cs recomputed in the second pass) */
static void u8_quantize_scaled_avx512(uint8_t *u, int ldu, float *xs,
                                      int32_t *xz, const float *x, int ldx,
                                      int rows, int k, const float *cs)
{
	u8_rows_avx512(u, ldu, xs, xz, x, ldx, rows, k, cs);
}

emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx512(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512 ? u8_quantize_scaled_avx512
	                                           : NULL;
}

/* emb_i8_quantize_rows, 16 at a time: the row's max |w| (a NaN lane
 * left out, as the scalar compare does), ws = max / 127, then each
 * w / ws (the same division) rounded to nearest even and clamped */
static void i8_quantize_rows_avx512(int8_t *q, float *ws, const float *w,
                                    int n, int k)
{
	for (int j = 0; j < n; j++) {
		const float *r = w + (size_t)j * k;
		int8_t *o = q + (size_t)j * k;
		__m512 mx = _mm512_setzero_ps(), sv;
		float m, s;
		for (int kk = 0; kk < k; kk += 16) {
			__mmask16 mk = k - kk >= 16 ? 0xffff :
			               (__mmask16)((1u << (k - kk)) - 1);
			mx = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(mk,
			                                                       r + kk)), mx);
		}
		m = _mm512_reduce_max_ps(mx);
		s = m > 0 ? m / 127.0f : 1.0f;
		ws[j] = s;
		sv = _mm512_set1_ps(s);
		for (int kk = 0; kk < k; kk += 16) {
			__mmask16 mk = k - kk >= 16 ? 0xffff :
			               (__mmask16)((1u << (k - kk)) - 1);
			__m512 v = _mm512_roundscale_ps(_mm512_div_ps(
				_mm512_maskz_loadu_ps(mk, r + kk), sv),
				_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)),
			                  _mm512_set1_ps(127.0f));
			_mm_mask_storeu_epi8(o + kk, mk, _mm512_cvtsepi32_epi8(
				_mm512_cvtps_epi32(v)));
		}
	}
}

emb_i8_quant_fn emb_i8_quantize_rows_avx512(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512 ? i8_quantize_rows_avx512
	                                           : NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_vnni(void)
{
	return NULL;
}

emb_u8_quant_fn emb_u8_quantize_avx512(void)
{
	return NULL;
}

emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx512(void)
{
	return NULL;
}

emb_i8_quant_fn emb_i8_quantize_rows_avx512(void)
{
	return NULL;
}
#endif
