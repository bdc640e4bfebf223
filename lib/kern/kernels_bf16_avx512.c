/*
 * kernels_bf16_avx512.c - the bf16 GEMM of bkernels.h with AVX-512 BF16
 * (vdpbf16ps: per fp32 lane, the two products of a bf16 pair added in
 * turn, odd element first), built with a function target attribute
 * (avx512bf16: GCC 10+, clang 9+) so that it needs no flags of its own
 * from configure; only run when cpuid says the CPU has AVX512_BF16
 * (base/cpu.c).  The structure is kernels_bf16_avx2.c's: blocks of MC
 * rows, k in blocks of KB with the block's activations rounded once into
 * bf16 pairs (vcvtne2ps2bf16, whose rounding is emb_f32_to_bf16_ftz's),
 * tiles of 8 rows x 32 columns (two panels: two zmm accumulators per row) and of 8 x
 * 16 for a last odd or partial panel, partial sums waiting in y.  Also
 * bkernels.h's packing of run-time operands two ways: with that
 * rounding done in integer steps (AVX-512 F/BW/VL only, so any AVX-512
 * CPU runs it), and with vcvtne2ps2bf16 where the CPU has AVX512_BF16
 * (the same bits, a fifth of the instructions).
 */
#include <stddef.h>
#include <stdint.h>
#include "base/cpu.h"
#include "kern/bkernels.h"

#if defined(EMB_HAVE_AVX2) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 9) || \
     (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10))
#include <immintrin.h>
#include "kern/round512.h"

#define BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define INL static inline __attribute__((always_inline))
#define MR 8            /* rows per tile */
/* k per block (even) and rows per block (the rounded block: 192 KiB, in
 * L2): the linear layers' calls (96 rows, k up to 1024 for most widths)
 * in one block, so that the partial sums never make a pass through y
 * (a 96 x 6144 block of y is 2.4 MB, past L2) and the weights stream
 * once a call; against 256 and 48: Qwen3-0.6B-wide layers 0.87-0.95x
 * the time (bench/RESULTS.md, "AVX-512 on a Zen 5") */
#define KB 1024
#define MC 96

#define R512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* the bf16 pairs (e, o) of 16 lanes: e's bf16 low, o's high (one
 * vdpbf16ps operand when e and o are a pair's two elements) */
R512 INL __m512i pairs(__m512i e, __m512i o)
{
	return _mm512_or_si512(_mm512_srli_epi32(emb_round_bf16_hi512(e), 16),
	                       _mm512_and_si512(emb_round_bf16_hi512(o),
	                                        _mm512_set1_epi32((int)0xffff0000u)));
}

/* r[0..16): 16 rows of 16 lanes -> their transpose, in place (r[j]
 * lane i = r[i] lane j before) */
R512 INL void transpose16(__m512i r[16])
{
	__m512i t[16];

	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	// now block q (128 bits) of r[4b + d] is column 4q + d of rows
	// 4b .. 4b+3: a 4 x 4 transpose of blocks puts them in place
	for (int i = 0; i < 4; i++) {
		t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
		t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
		t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
		t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
	}
	for (int i = 0; i < 4; i++) {
		r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
		r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
		r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
		r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
	}
}

/* a row's 16 pairs from its 32 floats at src (lanes past masks m0, m1
 * read as 0), pair g in lane g (element 2g low): rounded in integer
 * steps, any AVX-512 CPU (the high halves of the rounded lanes, in
 * order) ... */
R512 INL __m512i row_pairs_int(const float *src, __mmask16 m0, __mmask16 m1)
{
	static const uint16_t odd[32] = { 1, 3, 5, 7, 9, 11, 13, 15, 17, 19,
		21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51,
		53, 55, 57, 59, 61, 63 };

	return _mm512_permutex2var_epi16(
		emb_round_bf16_hi512(_mm512_maskz_loadu_epi32(m0, src)),
		_mm512_loadu_si512((const void *)odd),
		emb_round_bf16_hi512(_mm512_maskz_loadu_epi32(m1, src + 16)));
}

/* ... or by one vcvtne2ps2bf16 (AVX512_BF16), whose rounding is
 * emb_f32_to_bf16_ftz's and whose output is already in pair order */
BF16 INL __m512i row_pairs_cvt(const float *src, __mmask16 m0, __mmask16 m1)
{
	return (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, src + 16),
	                                    _mm512_maskz_loadu_ps(m0, src));
}

/* bkernels.h's emb_bf16_pack_rows: W (n,k) rows ldw apart; 16 rows x
 * 32 elements at a time: each row's 16 pairs rounded (ROW, one of the
 * above), then the 16 x 16 pairs transposed so that each pair's 16 rows
 * are one 64-byte line; NAME, of target TGT: one function per ROW */
#define PACK_ROWS(NAME, TGT, ROW) \
TGT static void NAME(uint16_t *wb, const float *w, int ldw, int n, int k) \
{ \
	int k2 = (k + 1) / 2 * 2; \
	for (int p = 0; p < n; p += 16, wb += (size_t)16 * k2) { \
		int nr = n - p < 16 ? n - p : 16; \
		for (int kk = 0; kk < k; kk += 32) { \
			__mmask16 m0 = (__mmask16)(k - kk >= 16 ? 0xffff : \
			                           (1u << (k - kk)) - 1); \
			__mmask16 m1 = (__mmask16)(k - kk >= 32 ? 0xffff : \
			                           k - kk <= 16 ? 0 : \
			                           (1u << (k - kk - 16)) - 1); \
			int np = (k2 - kk) / 2 < 16 ? (k2 - kk) / 2 : 16; \
			__m512i r[16]; \
			for (int c = 0; c < 16; c++) \
				r[c] = c >= nr ? _mm512_setzero_si512() : \
				       ROW(w + (size_t)(p + c) * ldw + kk, m0, m1); \
			transpose16(r); \
			for (int g = 0; g < np; g++) \
				_mm512_storeu_si512((void *)(wb + (size_t)(kk + 2 * g) * \
				                             16), r[g]); \
		} \
	} \
}
PACK_ROWS(pack_rows_avx512, R512, row_pairs_int)
PACK_ROWS(pack_rows_bf16, BF16, row_pairs_cvt)
#undef PACK_ROWS

/* the bf16 pairs of two rows' 16 lanes, e's element low and o's high:
 * rounded in integer steps (any AVX-512 CPU) ... */
R512 INL __m512i col_pairs_int(__m512 e, __m512 o)
{
	return pairs(_mm512_castps_si512(e), _mm512_castps_si512(o));
}

/* ... or by one vcvtne2ps2bf16 ([e0..e15, o0..o15]) and one vpermw that
 * interleaves them (AVX512_BF16) */
BF16 INL __m512i col_pairs_cvt(__m512 e, __m512 o)
{
	static const uint16_t mix[32] = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20,
		5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
		29, 14, 30, 15, 31 };

	return _mm512_permutexvar_epi16(_mm512_loadu_si512((const void *)mix),
	                                (__m512i)_mm512_cvtne2ps_pbh(o, e));
}

/* bkernels.h's emb_bf16_pack_cols: W = X^T, X (k,n) rows ldx apart; a
 * pair of X rows per 64 bytes written (PAIRS, one of the above); NAME,
 * of target TGT: one function per PAIRS */
#define PACK_COLS(NAME, TGT, PAIRS) \
TGT static void NAME(uint16_t *wb, const float *x, int ldx, int n, int k) \
{ \
	for (int p = 0; p < n; p += 16) { \
		__mmask16 mk = (__mmask16)(n - p >= 16 ? 0xffff : \
		                           (1u << (n - p)) - 1); \
		for (int kk = 0; kk < k; kk += 2, wb += 32) { \
			const float *x0 = x + (size_t)kk * ldx + p; \
			__m512 e = _mm512_maskz_loadu_ps(mk, x0); \
			__m512 o = kk + 1 < k ? _mm512_maskz_loadu_ps(mk, x0 + ldx) : \
			           _mm512_setzero_ps(); \
			_mm512_storeu_si512((void *)wb, PAIRS(e, o)); \
		} \
	} \
}
PACK_COLS(pack_cols_avx512, R512, col_pairs_int)
PACK_COLS(pack_cols_bf16, BF16, col_pairs_cvt)
#undef PACK_COLS

/* x[0..n) -> r[0..kl/2): bf16 pairs (even element low), 0 past n;
 * vcvtne2ps2bf16 rounds as emb_f32_to_bf16_ftz (bkernels.h), 32 at a
 * time (writes up to kl rounded up to 32: r's rows are KB long) */
BF16 INL void round_block(uint32_t *r, const float *x, int n, int kl)
{
	for (int i = 0; i < kl; i += 32) {
		int a = n - i < 0 ? 0 : n - i < 16 ? n - i : 16;
		int c = n - i - 16 < 0 ? 0 : n - i - 16 < 16 ? n - i - 16 : 16;
		__m512 lo = _mm512_maskz_loadu_ps((__mmask16)((1u << a) - 1), x + i);
		__m512 hi = _mm512_maskz_loadu_ps((__mmask16)((1u << c) - 1),
		                                  x + i + 16);
		_mm512_storeu_si512((void *)(r + i / 2),
		                    (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
	}
}

/* one tile: rows [0,mr) x one panel, np pairs (see kernels_bf16_avx2.c);
 * the accumulators are named variables so that GCC keeps them in
 * registers; mr is a constant after inlining */
#define LD(r) do { if (mr > r) \
	a##r = first ? _mm512_setzero_ps() : \
	               _mm512_loadu_ps(part + (size_t)r * ldp); } while (0)
#define DP(r) do { if (mr > r) { \
	__m512i xb = _mm512_set1_epi32((int)xr[(size_t)r * (KB / 2) + g]); \
	a##r = _mm512_dpbf16_ps(a##r, (__m512bh)xb, (__m512bh)wv); } } while (0)
#define ST(r) do { if (mr > r) { \
	if (!last) \
		_mm512_storeu_ps(part + (size_t)r * ldp, a##r); \
	else \
		_mm512_mask_storeu_ps(y + (size_t)r * ldy, mk, b ? \
			_mm512_add_ps(a##r, _mm512_maskz_loadu_ps(mk, b)) : a##r); \
	} } while (0)

BF16 INL void tile(float *y, int ldy, float *part, int ldp, const uint32_t *xr,
                   const uint16_t *w, const float *b, int np, int mr,
                   int first, int last, int nc)
{
	__m512 a0, a1, a2, a3, a4, a5, a6, a7;
	__mmask16 mk = (__mmask16)((1u << nc) - 1);

	a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm512_setzero_ps();
	LD(0); LD(1); LD(2); LD(3); LD(4); LD(5); LD(6); LD(7);
	for (int g = 0; g < np; g++) {
		__m512i wv = _mm512_loadu_si512((const void *)(w + 32 * (size_t)g));
		DP(0); DP(1); DP(2); DP(3); DP(4); DP(5); DP(6); DP(7);
	}
	ST(0); ST(1); ST(2); ST(3); ST(4); ST(5); ST(6); ST(7);
}
#undef LD
#undef DP
#undef ST

/* two whole panels side by side: rows [0,mr) x 32 columns, np pairs;
 * each broadcast pair of x feeds two products, and 16 accumulators keep
 * vdpbf16ps's latency covered.  The same products in the same order per
 * element as tile() (so the same bits) */
#define LD(r) do { if (mr > r) { \
	a##r = first ? _mm512_setzero_ps() : \
	               _mm512_loadu_ps(y + (size_t)r * ldy); \
	c##r = first ? _mm512_setzero_ps() : \
	               _mm512_loadu_ps(y + (size_t)r * ldy + 16); } } while (0)
#define DP(r) do { if (mr > r) { \
	__m512i xb = _mm512_set1_epi32((int)xr[(size_t)r * (KB / 2) + g]); \
	a##r = _mm512_dpbf16_ps(a##r, (__m512bh)xb, (__m512bh)wv); \
	c##r = _mm512_dpbf16_ps(c##r, (__m512bh)xb, (__m512bh)wu); } } while (0)
#define ST(r) do { if (mr > r) { \
	if (last && b) { \
		a##r = _mm512_add_ps(a##r, _mm512_loadu_ps(b)); \
		c##r = _mm512_add_ps(c##r, _mm512_loadu_ps(b + 16)); \
	} \
	_mm512_storeu_ps(y + (size_t)r * ldy, a##r); \
	_mm512_storeu_ps(y + (size_t)r * ldy + 16, c##r); } } while (0)

BF16 INL void tile2(float *y, int ldy, const uint32_t *xr, const uint16_t *w,
                    const uint16_t *u, const float *b, int np, int mr,
                    int first, int last)
{
	__m512 a0, a1, a2, a3, a4, a5, a6, a7;
	__m512 c0, c1, c2, c3, c4, c5, c6, c7;

	a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm512_setzero_ps();
	c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = _mm512_setzero_ps();
	LD(0); LD(1); LD(2); LD(3); LD(4); LD(5); LD(6); LD(7);
	for (int g = 0; g < np; g++) {
		__m512i wv = _mm512_loadu_si512((const void *)(w + 32 * (size_t)g));
		__m512i wu = _mm512_loadu_si512((const void *)(u + 32 * (size_t)g));
		DP(0); DP(1); DP(2); DP(3); DP(4); DP(5); DP(6); DP(7);
	}
	ST(0); ST(1); ST(2); ST(3); ST(4); ST(5); ST(6); ST(7);
}
#undef LD
#undef DP
#undef ST

#define TILE(R) tile(yp + (size_t)r * ldy, ldy, part + (size_t)r * ldp, ldp, \
	xr + (size_t)r * (KB / 2), w, bp, kl / 2, R, first, last, nc)
/* every row tile of the block: whole ones of MR rows, then the rest
 * (the row count a constant in each call) */
#define ROWS(T) do { \
	for (; r + MR <= mc; r += MR) \
		T(MR); \
	switch (mc - r) { \
	case 7: T(7); break; case 6: T(6); break; case 5: T(5); break; \
	case 4: T(4); break; case 3: T(3); break; case 2: T(2); break; \
	case 1: T(1); break; default: break; \
	} } while (0)
#define TILE2(R) tile2(yp + (size_t)r * ldy, ldy, xr + (size_t)r * (KB / 2), \
	w, w + (size_t)16 * k2, bp, kl / 2, R, first, last)

// X (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16
BF16 static void gemm_bf16_avx512(float *y, int ldy, const float *x, int ldx,
                                  const uint16_t *wb, const float *b, int m,
                                  int n, int k)
{
	int k2 = (k + 1) / 2 * 2, npan = (n + 15) / 16;
	int tn = n - 16 * (npan - 1);
	uint32_t xr[MC * KB / 2];
	float tail[MC * 16];

	/* as kernels_bf16_avx2.c: blocks of MC rows, k blocks of KB rounded
	 * once, each panel's weights over every row tile */
	for (int i0 = 0; i0 < m; i0 += MC) {
		int mc = m - i0 < MC ? m - i0 : MC;
		float *yb = y + (size_t)i0 * ldy;
		for (int k0 = 0; k0 < k2; k0 += KB) {
			int kl = k2 - k0 < KB ? k2 - k0 : KB;
			int kx = k - k0 < kl ? k - k0 : kl;
			int first = k0 == 0, last = k0 + KB >= k2;
			for (int r = 0; r < mc; r++)
				round_block(xr + (size_t)r * (KB / 2),
				            x + (size_t)(i0 + r) * ldx + k0, kx, kl);
			for (int p = 0; p < npan; p++) {
				const uint16_t *w = wb + (size_t)p * 16 * k2 +
				                    (size_t)k0 * 16;
				int nc = p == npan - 1 ? tn : 16;
				float *yp = yb + 16 * p, *part = yp;
				int ldp = ldy, r = 0;
				const float *bp = b ? b + 16 * p : NULL;
				if (p + 1 < npan - 1 || (p + 1 == npan - 1 && tn == 16)) {
					/* panels p and p + 1, both whole */
					ROWS(TILE2);
					p++;
					continue;
				}
				if (nc < 16) {
					part = tail;
					ldp = 16;
				}
				ROWS(TILE);
			}
		}
	}
}
#undef TILE
#undef TILE2
#undef ROWS

emb_gemm_bf16_fn emb_gemm_bf16_avx512(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AVX512) && (f & EMB_CPU_AVX512BF16) ?
	       gemm_bf16_avx512 : NULL;
}
emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512 ? pack_rows_avx512 : NULL;
}

emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512(void)
{
	return emb_cpu_features() & EMB_CPU_AVX512 ? pack_cols_avx512 : NULL;
}

emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512bf16(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AVX512) && (f & EMB_CPU_AVX512BF16) ?
	       pack_rows_bf16 : NULL;
}

emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512bf16(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AVX512) && (f & EMB_CPU_AVX512BF16) ?
	       pack_cols_bf16 : NULL;
}

#else
emb_gemm_bf16_fn emb_gemm_bf16_avx512(void)
{
	return NULL;
}

emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512(void)
{
	return NULL;
}

emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512(void)
{
	return NULL;
}

emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512bf16(void)
{
	return NULL;
}

emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512bf16(void)
{
	return NULL;
}
#endif
