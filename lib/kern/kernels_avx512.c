/*
 * kernels_avx512.c - AVX-512 (F/BW/VL/DQ) kernels; compiled with
 * $(AVX512_CFLAGS) and only called after a CPU check (cpu.c).
 */
#include "kern/bkernels.h"
#include "kern/kernels.h"

#ifdef EMB_HAVE_AVX512
#include <immintrin.h>
#include <math.h>
#include "kern/round512.h"

#define INLINE static inline __attribute__((always_inline))

/*
 * The GEMM's tile is inlined into each of its call sites with its shape
 * constants.  Under clang's AddressSanitizer those 48 copies take
 * minutes to compile, so sanitizer builds leave the inlining to the
 * compiler: the same operations in the same order, the same bits.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TILE_INLINE static inline
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILE_INLINE static inline
#endif
#endif
#ifndef TILE_INLINE
#define TILE_INLINE INLINE
#endif

/* mask of the first n (0..16) lanes */
INLINE __mmask16 lanes(int n)
{
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* exp(x), Cephes polynomial, about 1 ulp; inputs clamped to [-87.3, 88.3] */
INLINE __m512 exp512(__m512 x)
{
	const __m512 c1 = _mm512_set1_ps(0.693359375f);
	const __m512 c2 = _mm512_set1_ps(-2.12194440e-4f);
	__m512 fx, r, y, r2;

	x = _mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f));
	x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
	fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
	                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_fnmadd_ps(fx, c1, x);
	r = _mm512_fnmadd_ps(fx, c2, r);
	r2 = _mm512_mul_ps(r, r);
	y = _mm512_set1_ps(1.9875691500E-4f);
	y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507E-3f));
	y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073E-3f));
	y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894E-2f));
	y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459E-1f));
	y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201E-1f));
	y = _mm512_fmadd_ps(y, r2, r);
	y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
	/* y 2^fx: one correctly rounded scaling, the same bits as y times
	 * the float 2^fx built from its exponent (fx in [-126, 127]) */
	return _mm512_scalef_ps(y, fx);
}

/*
 * GELU's half-erf, g(z) = erf(z / sqrt 2) / 2 for z >= 0, piecewise: on
 * [(i - 1/2) / 2, (i + 1/2) / 2), i = 0..11, a degree-5 polynomial in
 * f = 2z - i (|f| <= 1/2) within 3e-8 of g (interpolation at Chebyshev
 * points: scripts/fit-gelu prints this table); 1/2 exactly from z =
 * 5.75 on (g is within 4.5e-9 of it there).  gelu_c[d][i]: coefficient
 * of f^d on piece i, 16 pieces so that one vpermps picks each lane's
 * coefficient.  No division and no exponential: 17 vector operations.
 */
static const float gelu_c[6][16] __attribute__((aligned(64))) = {
	{ -1.387778781e-17, 1.914624423e-01, 3.413447440e-01, 4.331927896e-01,
	  4.772498906e-01, 4.937903285e-01, 4.986501038e-01, 4.997673631e-01,
	  4.999683201e-01, 4.999966025e-01, 4.999997020e-01, 4.999999702e-01,
	  5.000000000e-01, 5.000000000e-01, 5.000000000e-01, 5.000000000e-01 },
	{ 1.994711310e-01, 1.760326624e-01, 1.209853664e-01, 6.475879997e-02,
	  2.699548192e-02, 8.764149621e-03, 2.215923974e-03, 4.363414191e-04,
	  6.691520684e-05, 7.991907296e-06, 7.433681617e-07, 5.385007285e-08,
	  0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00 },
	{ 4.821178128e-16, -2.200241387e-02, -3.024523892e-02, -2.428490110e-02,
	  -1.349847764e-02, -5.477877334e-03, -1.661884482e-03, -3.816999961e-04,
	  -6.686958659e-05, -8.978489859e-06, -9.269417092e-07, -7.375000877e-08,
	  0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00 },
	{ -8.310974576e-03, -5.500931293e-03, -2.088118976e-07, 3.372701583e-03,
	  3.374466905e-03, 1.917229616e-03, 7.386647630e-04, 2.045292786e-04,
	  4.181495387e-05, 6.407475666e-06, 7.427559012e-07, 6.553663212e-08,
	  0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00 },
	{ -1.928904085e-15, 1.242797240e-03, 1.248498564e-03, 3.832282091e-04,
	  -2.733414876e-04, -3.678588546e-04, -2.083742147e-04, -7.462960639e-05,
	  -1.860800512e-05, -3.362622692e-06, -4.498592716e-07, -4.512991225e-08,
	  0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00 },
	{ 3.082188196e-04, 1.423021895e-04, -1.237939869e-04, -1.817701414e-04,
	  -7.063837984e-05, 2.006023715e-05, 3.437521809e-05, 1.814292409e-05,
	  5.755419352e-06, 1.242059170e-06, 1.914887093e-07, 2.163057999e-08,
	  0.000000000e+00, 0.000000000e+00, 0.000000000e+00, 0.000000000e+00 },
};

/*
 * v Phi(v) = v / 2 + |v| g(|v|), the last step one fused multiply-add
 * (so a large negative v gives exactly 0, a large positive one v).  The
 * piece: m = min(2|v|, 14) rounded to the nearest integer by adding
 * 2^23, whose low 4 bits are then the vpermps index; f = m - that
 * integer.  NaN stays NaN (through |v|), inf gives inf (and -inf NaN, as
 * the scalar formula).  Within 4e-7 of the exact GELU over [-12, 12].
 */
INLINE __m512 gelu_v(__m512 v)
{
	const __m512 big = _mm512_set1_ps(8388608.0f);
	__m512 z = _mm512_abs_ps(v);
	__m512 m = _mm512_min_ps(_mm512_add_ps(z, z), _mm512_set1_ps(14.0f));
	__m512 t = _mm512_add_ps(m, big);
	__m512 f = _mm512_sub_ps(m, _mm512_sub_ps(t, big));
	__m512i ix = _mm512_castps_si512(t);
	__m512 g = _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[5]));

	g = _mm512_fmadd_ps(g, f, _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[4])));
	g = _mm512_fmadd_ps(g, f, _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[3])));
	g = _mm512_fmadd_ps(g, f, _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[2])));
	g = _mm512_fmadd_ps(g, f, _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[1])));
	g = _mm512_fmadd_ps(g, f, _mm512_permutexvar_ps(ix, _mm512_load_ps(gelu_c[0])));
	return _mm512_fmadd_ps(z, g, _mm512_mul_ps(_mm512_set1_ps(0.5f), v));
}

/* 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3) */
INLINE __m512 gelu_tanh_v(__m512 v)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	const __m512 c = _mm512_set1_ps(-2.0f * 0.7978845608028654f);
	const __m512 a = _mm512_set1_ps(0.044715f);
	__m512 u = _mm512_fmadd_ps(_mm512_mul_ps(a, v), _mm512_mul_ps(v, v), v);
	__m512 e = exp512(_mm512_mul_ps(c, u));

	return _mm512_div_ps(v, _mm512_add_ps(one, e));
}

/* act (EMB_KACT_*, a constant after inlining) of v */
INLINE __m512 act_v(__m512 v, int act)
{
	switch (act) {
	case EMB_KACT_GELU: return gelu_v(v);
	case EMB_KACT_GELU_TANH: return gelu_tanh_v(v);
	case EMB_KACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
	default: return v;
	}
}

/*
 * The GEMM's blocking.  x is packed a block of rows at a time into
 * strips of GEMM_MR rows, k-major (strip[kk][r]: a tile's broadcasts are
 * consecutive floats), in chunks of k of at most GEMM_KC (multiples of
 * 16 but the last); the block has GEMM_MC rows, fewer where its k does
 * not fit GEMM_XP floats (down to 8; a k past GEMM_XP / 8 goes in spans
 * that do).  For each group of three panels of W (16 columns each), for
 * each chunk, the chunk's piece of the panels (3 x GEMM_KC x 64 bytes,
 * 36 KiB) stays in L1 while the block's strips sweep down it; the
 * group's partial sums (block rows x 48 floats) stay close between
 * chunks.  The "long" fp32 GEMMs take chunks of up to GEMM_KC_LONG
 * instead: the piece (288 KiB) streams from L2, and fewer chunks mean
 * fewer passes over the partial sums and the strips; AMD's cores run
 * them faster (Zen 4 measured), Intel's the L1 ones (dispatch.c).  The
 * same bits either way: a chunk only stops and resumes each element's
 * one chain of fused multiply-adds.  With GEMM_DIRECT panels or fewer
 * (attention's P V at head width 64, say) the packing would not pay
 * for itself: the tiles then broadcast from x's rows in place.  A
 * tile: 8 rows (4 for a block's last 1..4) x 1..3 panels, up to 24
 * accumulators.
 */
#define GEMM_MC 96
#define GEMM_KC 192
#define GEMM_KC_LONG 1536
#define GEMM_MR 8
#define GEMM_XP (96 * 1536)
#define GEMM_DIRECT 4   /* up to this many panels, x is read in place */

/* x rounded to bf16 as the bf16 GEMMs round (emb_f32_to_bf16_ftz,
 * round512.h), as fp32 */
INLINE __m512 round_bf16(__m512 x)
{
	return _mm512_castsi512_ps(_mm512_and_si512(emb_round_bf16_hi512(
		_mm512_castps_si512(x)), _mm512_set1_epi32((int)0xffff0000u)));
}

/*
 * x (rows, ldx) columns k0..k0+kc -> strips (rows rounded up to 8, kc,
 * 8): strip s, row r, k t at xp[(s * kc + t) * 8 + r]; rows past `rows`
 * are 0.  Eight whole rows and 16 k at a time by a transpose in
 * registers; tails one float at a time.  BF (the bf16 GEMM; k0 even):
 * each value rounded to bf16, each pair's two swapped, 0 from k = kx on.
 */
static void pack_x(float *xp, const float *x, int ldx, int rows, int k0,
                   int kc, int kx, int BF)
{
	int s, t, r;
	/* the whole vectors stay inside the row's kx values */
	int kf = BF && kx - k0 < kc ? kx - k0 : kc;

	for (s = 0; s * GEMM_MR < rows; s++) {
		float *d = xp + (size_t)s * kc * GEMM_MR;
		const float *src = x + (size_t)s * GEMM_MR * ldx + k0;
		int nr = rows - s * GEMM_MR < GEMM_MR ? rows - s * GEMM_MR : GEMM_MR;

		t = 0;
		if (nr == GEMM_MR) {
			for (; t + 16 <= kf; t += 16) {
				__m512 a[8], u[8];
				for (r = 0; r < 8; r++) {
					a[r] = _mm512_loadu_ps(src + (size_t)r * ldx + t);
					if (BF)
						a[r] = _mm512_permute_ps(round_bf16(a[r]),
						                         _MM_SHUFFLE(2, 3, 0, 1));
				}
				/* pairs of rows, then quads: u[j] (j < 4) holds rows
				 * 0-3 of k 4l + j in lane l, u[4 + j] rows 4-7 */
				for (r = 0; r < 8; r += 2) {
					__m512 lo = _mm512_unpacklo_ps(a[r], a[r + 1]);
					__m512 hi = _mm512_unpackhi_ps(a[r], a[r + 1]);
					a[r] = lo;
					a[r + 1] = hi;
				}
				for (r = 0; r < 8; r += 4) {
					u[r] = _mm512_castpd_ps(_mm512_unpacklo_pd(
					        _mm512_castps_pd(a[r]), _mm512_castps_pd(a[r + 2])));
					u[r + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(
					        _mm512_castps_pd(a[r]), _mm512_castps_pd(a[r + 2])));
					u[r + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(
					        _mm512_castps_pd(a[r + 1]), _mm512_castps_pd(a[r + 3])));
					u[r + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(
					        _mm512_castps_pd(a[r + 1]), _mm512_castps_pd(a[r + 3])));
				}
				for (int j = 0; j < 4; j++) {
					/* lanes 0, 1 of rows 0-3 and of rows 4-7, then 2, 3 */
					__m512 v01 = _mm512_shuffle_f32x4(u[j], u[4 + j],
					                                  _MM_SHUFFLE(1, 0, 1, 0));
					__m512 v23 = _mm512_shuffle_f32x4(u[j], u[4 + j],
					                                  _MM_SHUFFLE(3, 2, 3, 2));
					/* -> k j, 4 + j (v01) and 8 + j, 12 + j (v23) */
					v01 = _mm512_shuffle_f32x4(v01, v01, _MM_SHUFFLE(3, 1, 2, 0));
					v23 = _mm512_shuffle_f32x4(v23, v23, _MM_SHUFFLE(3, 1, 2, 0));
					float *o = d + (size_t)t * GEMM_MR;
					_mm256_storeu_ps(o + j * 8, _mm512_castps512_ps256(v01));
					_mm256_storeu_ps(o + (4 + j) * 8,
					                 _mm512_extractf32x8_ps(v01, 1));
					_mm256_storeu_ps(o + (8 + j) * 8,
					                 _mm512_castps512_ps256(v23));
					_mm256_storeu_ps(o + (12 + j) * 8,
					                 _mm512_extractf32x8_ps(v23, 1));
				}
			}
		}
		for (; t < kc; t++)
			for (r = 0; r < GEMM_MR; r++) {
				int tt = BF ? t ^ 1 : t;        /* BF: the pair swapped */
				float v = r < nr && k0 + tt < kx ?
				          src[(size_t)r * ldx + tt] : 0.0f;
				if (BF)
					v = emb_bf16_to_f32(emb_f32_to_bf16_ftz(v));
				d[(size_t)t * GEMM_MR + r] = v;
			}
	}
}

/*
 * One register tile: MR rows (mr of them real) x NP panels of y, one
 * chunk of kn values of k.  xs: the rows' strip of the chunk, or with
 * DIRECT the first row's first float of the chunk in x itself (rows ldx
 * apart); wc: the chunk's first k of the first panel (16 floats a k),
 * the next panels ps floats apart; nlast: valid columns of the last
 * panel (1..16).  The first chunk starts from 0, the others from the
 * partial sums in y; the last adds the bias and applies act.
 */
TILE_INLINE void tile(float *y, int ldy, const float *xs, int ldx,
                 const float *wc, size_t ps, const float *b, int kn,
                 int first, int last, int MR, int mr, int NP, int nlast,
                 int act, int DIRECT)
{
	__m512 acc[GEMM_MR][3];
	const float *xr[GEMM_MR];
	const float *w0 = wc, *w1 = w0 + ps, *w2 = w1 + ps;

#pragma GCC unroll 8
	for (int r = 0; r < MR; r++)    /* DIRECT: rows past mr read row mr - 1 */
		xr[r] = xs + (size_t)(r < mr ? r : mr - 1) * ldx;
	/* the first chunk's output lines, for writing, while its k loop
	 * runs: y is often not in cache (a layer's whole output), and the
	 * stores would wait on each line */
	if (first)
#pragma GCC unroll 8
		for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
			for (int c = 0; c < NP; c++)
				if (r < mr)
					__asm__ volatile("prefetchw %0" : : "m"(*(const char *)
					                 (y + (size_t)r * ldy + c * EMB_PANEL)));
#pragma GCC unroll 8
	for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
		for (int c = 0; c < NP; c++) {
			__mmask16 mk = c == NP - 1 ? lanes(nlast) : (__mmask16)0xffff;
			acc[r][c] = first || r >= mr ? _mm512_setzero_ps() :
			            _mm512_maskz_loadu_ps(mk, y + (size_t)r * ldy +
			                                      c * EMB_PANEL);
		}
	for (int t = 0; t < kn; t++) {
		__m512 wv0 = _mm512_loadu_ps(w0 + (size_t)t * EMB_PANEL);
		__m512 wv1 = NP > 1 ? _mm512_loadu_ps(w1 + (size_t)t * EMB_PANEL) : wv0;
		__m512 wv2 = NP > 2 ? _mm512_loadu_ps(w2 + (size_t)t * EMB_PANEL) : wv0;
#pragma GCC unroll 8
		for (int r = 0; r < MR; r++) {
			__m512 xv = _mm512_set1_ps(DIRECT ? xr[r][t] :
			                           xs[(size_t)t * GEMM_MR + r]);
			acc[r][0] = _mm512_fmadd_ps(xv, wv0, acc[r][0]);
			if (NP > 1)
				acc[r][1] = _mm512_fmadd_ps(xv, wv1, acc[r][1]);
			if (NP > 2)
				acc[r][2] = _mm512_fmadd_ps(xv, wv2, acc[r][2]);
		}
	}
#pragma GCC unroll 3
	for (int c = 0; c < NP; c++) {
		__mmask16 mk = c == NP - 1 ? lanes(nlast) : (__mmask16)0xffff;
		__m512 bv = b && last ? _mm512_maskz_loadu_ps(mk, b + c * EMB_PANEL)
		                         : _mm512_setzero_ps();
#pragma GCC unroll 8
		for (int r = 0; r < MR; r++) {
			__m512 v = acc[r][c];
			if (r >= mr)
				break;
			if (last) {
				if (b)
					v = _mm512_add_ps(v, bv);
				v = act_v(v, act);
			}
			_mm512_mask_storeu_ps(y + (size_t)r * ldy + c * EMB_PANEL, mk, v);
		}
	}
}

#define TILE_CASES(NP, D) \
	do { \
		if (mr > 4) \
			tile(yy, ldy, xs, ldx, wc, ps, bb, k1 - k0, k0 == 0, \
			     k1 == k, 8, mr, NP, nlast, act, D); \
		else \
			tile(yy, ldy, xs, ldx, wc, ps, bb, k1 - k0, k0 == 0, \
			     k1 == k, 4, mr, NP, nlast, act, D); \
	} while (0)

/*
 * The bf16 GEMM (bkernels.h) on the same tiles: each pair of k taken odd
 * element first, so the formula's sum is one in-order sum over the
 * swapped sequence of k2 values, which the fp32 tile makes (a product
 * of two bf16 values is exact, so each fused multiply-add is the
 * formula's one rounding).  The rows of x are rounded to bf16 and
 * swapped as they are packed; each chunk of the group's panels is
 * widened from its pairs into wx (3 x GEMM_KC x 16 floats, in L1) before
 * the strips sweep it.
 */
/* wx (np, t1 - t0, 16) = the pairs [t0/2, t1/2) of np panels of wb (k2
 * values each), odd element first: the high half of a pair's 32 bits,
 * then the low half shifted up */
static void widen_bf16(float *wx, const uint16_t *wb, int np, int k2,
                       int t0, int t1)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);

	for (int c = 0; c < np; c++) {
		const uint16_t *w = wb + (size_t)c * EMB_PANEL * k2;
		float *o = wx + (size_t)c * (t1 - t0) * EMB_PANEL;
		for (int t = t0; t < t1; t += 2, o += 2 * EMB_PANEL) {
			__m512i v = _mm512_loadu_si512((const void *)(w + (size_t)t *
			                                              EMB_PANEL));
			_mm512_storeu_si512((void *)o, _mm512_and_si512(v, hi));
			_mm512_storeu_si512((void *)(o + EMB_PANEL),
			                    _mm512_slli_epi32(v, 16));
		}
	}
}

/*
 * act(x (m,k) @ W (n,k)^T + b (n)) -> y (m,n), W packed; act, BF and
 * KC (chunks of at most KC values of k: GEMM_KC, or GEMM_KC_LONG when
 * not BF) constants after inlining.  BF: W is bf16 (wb, bkernels.h), k
 * runs over k2 (k rounded up to even), as above; else W is wp.  The
 * blocking above; the packed block of x lives on the stack (GEMM_XP
 * floats, 576 KiB, and wx's 36 KiB: the thread pool's workers have 8
 * MiB stacks).
 */
INLINE void gemm_core(float *y, int ldy, const float *x, int ldx,
                      const float *wp, const uint16_t *wb, const float *b,
                      int m, int n, int kx, int act, int BF, int KC)
{
	float xp[GEMM_XP] __attribute__((aligned(64)));
	float wx[3 * GEMM_KC * EMB_PANEL] __attribute__((aligned(64)));  /* BF */
	int k = BF ? (kx + 1) / 2 * 2 : kx;
	int np = (n + EMB_PANEL - 1) / EMB_PANEL;
	int nkc = (k + KC - 1) / KC;
	int kc = ((k + nkc - 1) / nkc + 15) / 16 * 16;
	int span = k, mc;
	int direct = !BF && np <= GEMM_DIRECT;

	/* a span of k whose strips fit xp for 8 rows or more */
	if ((size_t)span * GEMM_MR > GEMM_XP)
		span = GEMM_XP / GEMM_MR / kc * kc;
	mc = GEMM_XP / span / GEMM_MR * GEMM_MR;
	if (mc > GEMM_MC)
		mc = GEMM_MC;
	for (int i0 = 0; i0 < m; i0 += mc) {
		int rows = m - i0 < mc ? m - i0 : mc;
		int rpad = (rows + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
		for (int s0 = 0; s0 < k; s0 += span) {
			int s1 = s0 + span < k ? s0 + span : k;
			for (int k0 = s0; k0 < s1 && !direct; k0 += kc) {
				int k1 = k0 + kc < s1 ? k0 + kc : s1;
				pack_x(xp + (size_t)(k0 - s0) * rpad, x + (size_t)i0 * ldx,
				       ldx, rows, k0, k1 - k0, kx, BF);
			}
			for (int p = 0, npp; p < np; p += npp) {
				/* threes, and two twos for a last four */
				npp = np - p == 4 ? 2 : np - p < 3 ? np - p : 3;
				int nlast = n - (p + npp - 1) * EMB_PANEL;
				const float *bb = b ? b + p * EMB_PANEL : NULL;
				for (int k0 = s0; k0 < s1; k0 += kc) {
					int k1 = k0 + kc < s1 ? k0 + kc : s1;
					/* the chunk's first k of panel p, the panels ps
					 * floats apart */
					const float *wc = BF ? wx : wp + (size_t)p * EMB_PANEL *
					                  k + (size_t)k0 * EMB_PANEL;
					size_t ps = BF ? (size_t)(k1 - k0) * EMB_PANEL :
					            (size_t)k * EMB_PANEL;
					if (BF)
						widen_bf16(wx, wb + (size_t)p * EMB_PANEL * k, npp, k,
						           k0, k1);
					for (int i = 0; i < rows; i += GEMM_MR) {
						int mr = rows - i < GEMM_MR ? rows - i : GEMM_MR;
						float *yy = y + (size_t)(i0 + i) * ldy +
						            p * EMB_PANEL;
						const float *xs = xp + (size_t)(k0 - s0) * rpad +
						                  (size_t)i * (k1 - k0);
						if (direct) {
							xs = x + (size_t)(i0 + i) * ldx + k0;
							if (npp == 3)
								TILE_CASES(3, 1);
							else if (npp == 2)
								TILE_CASES(2, 1);
							else
								TILE_CASES(1, 1);
						} else if (npp == 3) {
							TILE_CASES(3, 0);
						} else if (npp == 2) {
							TILE_CASES(2, 0);
						} else {
							TILE_CASES(1, 0);
						}
					}
				}
			}
		}
	}
}

/* the fp32 GEMMs with chunks of at most KC: NAME (gemm) and NAME_act
 * (gemm_act) */
#define GEMM_F32(NAME, KC) \
static void NAME(float *y, int ldy, const float *x, int ldx, \
                 const float *wp, const float *b, int m, int n, int k) \
{ \
	gemm_core(y, ldy, x, ldx, wp, NULL, b, m, n, k, EMB_KACT_NONE, 0, \
	          KC); \
} \
static void NAME##_act(float *y, int ldy, const float *x, int ldx, \
                       const float *wp, const float *b, int m, int n, \
                       int k, int act) \
{ \
	switch (act) { \
	case EMB_KACT_GELU: \
		gemm_core(y, ldy, x, ldx, wp, NULL, b, m, n, k, EMB_KACT_GELU, \
		          0, KC); \
		break; \
	case EMB_KACT_GELU_TANH: \
		gemm_core(y, ldy, x, ldx, wp, NULL, b, m, n, k, \
		          EMB_KACT_GELU_TANH, 0, KC); \
		break; \
	case EMB_KACT_RELU: \
		gemm_core(y, ldy, x, ldx, wp, NULL, b, m, n, k, EMB_KACT_RELU, \
		          0, KC); \
		break; \
	default: \
		gemm_core(y, ldy, x, ldx, wp, NULL, b, m, n, k, EMB_KACT_NONE, \
		          0, KC); \
		break; \
	} \
}

// act(x (m,k) @ W (n,k)^T + b (n)) -> y (m,n), W packed; both chunkings
GEMM_F32(gemm_avx512, GEMM_KC)
GEMM_F32(gemm_long_avx512, GEMM_KC_LONG)

// x (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16 (bkernels.h)
static void gemm_bf16_avx512(float *y, int ldy, const float *x, int ldx,
                             const uint16_t *wb, const float *b, int m,
                             int n, int k)
{
	gemm_core(y, ldy, x, ldx, NULL, wb, b, m, n, k, EMB_KACT_NONE, 1,
	          GEMM_KC);
}

INLINE float hsum(__m512 v)
{
	return _mm512_reduce_add_ps(v);
}

/* kernels.c's fold16 of the 16 lanes: hi 256 + lo 256 (i + i+8), then
 * i + i+4, i + i+2, i + i+1 */
INLINE float fold16(__m512 a)
{
	__m256 h = _mm256_add_ps(_mm512_castps512_ps256(a),
	                         _mm512_extractf32x8_ps(a, 1));
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(h),
	                      _mm256_extractf128_ps(h, 1));

	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}

/* emb_rmsnorm_scalar's bits: the 16 partial sums of squares in one
 * register, folded hi 256 + lo 256 (i + i+8), then i + i+4, i + i+2,
 * i + i+1 as the scalar tree; no fused multiply-add */
static void rmsnorm_avx512(float *y, const float *x, const float *g, int n,
                           float eps)
{
	__m512 a = _mm512_setzero_ps(), rv;
	float r;
	int i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i);
		a = _mm512_add_ps(a, _mm512_mul_ps(v, v));
	}
	if (i < n) {    /* lanes past n add 0 * 0 */
		__m512 v = _mm512_maskz_loadu_ps(lanes(n - i), x + i);
		a = _mm512_add_ps(a, _mm512_mul_ps(v, v));
	}
	r = 1.0f / sqrtf(fold16(a) / (float)n + eps);
	rv = _mm512_set1_ps(r);
	for (i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		_mm512_mask_storeu_ps(y + i, mk, _mm512_mul_ps(
			_mm512_maskz_loadu_ps(mk, g + i),
			_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + i), rv)));
	}
}

/* four partial sums (lanes i mod 64, in order), so that neither pass
 * waits on one add chain; masked lanes past n add 0 */
static void layernorm_avx512(float *y, const float *x, const float *g,
                             const float *b, int n, float eps)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, mv, rv;
	float mean, var, rstd;
	int i;

	for (i = 0; i + 64 <= n; i += 64) {
		s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
		s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
		s2 = _mm512_add_ps(s2, _mm512_loadu_ps(x + i + 32));
		s3 = _mm512_add_ps(s3, _mm512_loadu_ps(x + i + 48));
	}
	for (; i < n; i += 16)
		s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(lanes(n - i), x + i));
	mean = hsum(_mm512_add_ps(_mm512_add_ps(s0, s1),
	                          _mm512_add_ps(s2, s3))) / n;
	mv = _mm512_set1_ps(mean);
	s0 = s1 = s2 = s3 = _mm512_setzero_ps();
	for (i = 0; i + 64 <= n; i += 64) {
		__m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
		__m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mv);
		__m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), mv);
		__m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), mv);
		s0 = _mm512_fmadd_ps(d0, d0, s0);
		s1 = _mm512_fmadd_ps(d1, d1, s1);
		s2 = _mm512_fmadd_ps(d2, d2, s2);
		s3 = _mm512_fmadd_ps(d3, d3, s3);
	}
	for (; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 d = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, x + i), mv);
		s0 = _mm512_fmadd_ps(d, d, s0);
	}
	var = hsum(_mm512_add_ps(_mm512_add_ps(s0, s1),
	                         _mm512_add_ps(s2, s3))) / n;
	rstd = 1.0f / sqrtf(var + eps);
	rv = _mm512_set1_ps(rstd);
	for (i = 0; i + 16 <= n; i += 16) {
		__m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_mul_ps(d, rv),
			_mm512_loadu_ps(g + i), _mm512_loadu_ps(b + i)));
	}
	if (i < n) {
		__mmask16 mk = lanes(n - i);
		__m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + i), mv);
		__m512 v = _mm512_fmadd_ps(_mm512_mul_ps(d, rv),
		                           _mm512_maskz_loadu_ps(mk, g + i),
		                           _mm512_maskz_loadu_ps(mk, b + i));
		_mm512_mask_storeu_ps(y + i, mk, v);
	}
}

static void gelu_avx512(float *x, int n)
{
	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_maskz_loadu_ps(mk, x + i);
		_mm512_mask_storeu_ps(x + i, mk, gelu_v(v));
	}
}

static void gelu_tanh_avx512(float *x, int n)
{
	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_maskz_loadu_ps(mk, x + i);
		_mm512_mask_storeu_ps(x + i, mk, gelu_tanh_v(v));
	}
}

static void relu_avx512(float *x, int n)
{
	const __m512 z = _mm512_setzero_ps();

	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_maskz_loadu_ps(mk, x + i);
		_mm512_mask_storeu_ps(x + i, mk, _mm512_max_ps(v, z));
	}
}

static void silu_avx512(float *y, const float *x, const float *g, int n)
{
	const __m512 one = _mm512_set1_ps(1.0f);

	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_maskz_loadu_ps(mk, x + i);
		__m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), v));
		v = _mm512_mul_ps(v, _mm512_div_ps(one, _mm512_add_ps(one, e)));
		if (g)
			v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mk, g + i));
		_mm512_mask_storeu_ps(y + i, mk, v);
	}
}

/* 16 lanes of kernels.h's softmax exponential of v (m the row's max):
 * t = (v - m) a, then the quintic (softmax) or the cubic (softmax_bf16),
 * a constant after inlining; 2^n by one vscalefps (p in [0.7, 1.5] and
 * e normal: the exact product, as the exponent-bits add of the others) */
INLINE __m512 exp2_poly512(__m512 v, __m512 av, __m512 mv, int quintic)
{
	__m512 t = _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(v, mv), av),
	                         _mm512_set1_ps(-125.0f));
	__m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT |
	                                   _MM_FROUND_NO_EXC);
	__m512 f = _mm512_sub_ps(t, r), p;

	if (quintic) {
		p = _mm512_fmadd_ps(_mm512_set1_ps(EMB_EXP2_F5), f,
		                    _mm512_set1_ps(EMB_EXP2_F4));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_F3));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_F2));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_F1));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_F0));
	} else {
		p = _mm512_fmadd_ps(_mm512_set1_ps(EMB_EXP2_C3), f,
		                    _mm512_set1_ps(EMB_EXP2_C2));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_C1));
		p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EMB_EXP2_C0));
	}
	return _mm512_scalef_ps(p, r);
}

/* the max of row x (n) */
INLINE float row_max(const float *x, int n)
{
	__m512 mx = _mm512_set1_ps(-INFINITY);
	int i = 0;

	for (; i + 16 <= n; i += 16)
		mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
	if (i < n)
		mx = _mm512_mask_max_ps(mx, lanes(n - i), mx,
		                        _mm512_maskz_loadu_ps(lanes(n - i), x + i));
	return _mm512_reduce_max_ps(mx);
}

/*
 * kernels.h's softmax or softmax_bf16 of one row x (n) of max m
 * (quintic a constant after inlining), the scalar one's bits: lane i
 * holds partial sum i mod 16 (folded as the scalar tree); returns 1 /
 * the sum.  When there is a next row nx (n; nx NULL: none, a constant
 * after inlining), its max is taken in the same loop (*nmax), so that no
 * row of a block waits for its own max pass (kernels_avx2.c's scheme).
 */
INLINE float softmax_row(float *x, const float *nx, int n, float scale,
                         float m, int quintic, float *nmax)
{
	__m512 s = _mm512_setzero_ps(), nm = _mm512_set1_ps(-INFINITY);
	__m512 av = _mm512_set1_ps(scale * EMB_LOG2E_F), mv = _mm512_set1_ps(m);
	int i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 e = exp2_poly512(_mm512_loadu_ps(x + i), av, mv, quintic);
		if (nx)
			nm = _mm512_max_ps(nm, _mm512_loadu_ps(nx + i));
		_mm512_storeu_ps(x + i, e);
		s = _mm512_add_ps(s, e);
	}
	if (i < n) {            /* 1 to 15 left: masked */
		__mmask16 mk = lanes(n - i);
		__m512 e = _mm512_maskz_mov_ps(mk, exp2_poly512(
			_mm512_maskz_loadu_ps(mk, x + i), av, mv, quintic));
		if (nx)
			nm = _mm512_mask_max_ps(nm, mk, nm,
			                        _mm512_maskz_loadu_ps(mk, nx + i));
		_mm512_mask_storeu_ps(x + i, mk, e);
		s = _mm512_add_ps(s, e);
	}
	if (nx)
		*nmax = _mm512_reduce_max_ps(nm);
	return 1.0f / fold16(s);
}

/* softmax_row over rows (stride ld) of x */
INLINE void softmax_rows(float *x, int ld, int rows, int n, float scale,
                         float *inv, int quintic)
{
	float m = rows > 0 ? row_max(x, n) : 0.0f;

	for (int r = 0; r + 1 < rows; r++) {
		float *row = x + (size_t)r * ld;
		inv[r] = softmax_row(row, row + ld, n, scale, m, quintic, &m);
	}
	if (rows > 0)
		inv[rows - 1] = softmax_row(x + (size_t)(rows - 1) * ld, NULL, n,
		                            scale, m, quintic, &m);
}

static void softmax_avx512(float *x, int ld, int rows, int n, float scale,
                           float *inv)
{
	softmax_rows(x, ld, rows, n, scale, inv, 1);
}

static void softmax_bf16_avx512(float *x, int ld, int rows, int n,
                                float scale, float *inv)
{
	softmax_rows(x, ld, rows, n, scale, inv, 0);
}

static void add_avx512(float *y, const float *x, int n)
{
	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, y + i),
		                         _mm512_maskz_loadu_ps(mk, x + i));
		_mm512_mask_storeu_ps(y + i, mk, v);
	}
}

static float dot_avx512(const float *a, const float *b, int n)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	int i;

	for (i = 0; i + 32 <= n; i += 32) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16),
		                     _mm512_loadu_ps(b + i + 16), s1);
	}
	for (; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, a + i),
		                     _mm512_maskz_loadu_ps(mk, b + i), s0);
	}
	return hsum(_mm512_add_ps(s0, s1));
}

static void axpy_avx512(float *y, float a, const float *x, int n)
{
	__m512 av = _mm512_set1_ps(a);

	for (int i = 0; i < n; i += 16) {
		__mmask16 mk = lanes(n - i);
		__m512 v = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(mk, x + i),
		                           _mm512_maskz_loadu_ps(mk, y + i));
		_mm512_mask_storeu_ps(y + i, mk, v);
	}
}

/* ---- vector search kernels ---- */

/*
 * AVX-512 VPOPCNTDQ: one vector is one word of the 8 documents.  Not
 * every AVX-512 CPU has it: dispatch.c puts the AVX2 version in the
 * table where EMB_CPU_AVX512POPCNT is missing.
 */
__attribute__((target("avx512vpopcntdq")))
static void hamming8_avx512(int32_t *d, const uint64_t *pw,
                            const uint64_t *qw, int w, size_t np)
{
	for (size_t p = 0; p < np; p++, pw += (size_t)w * 8, d += 8) {
		__m512i acc = _mm512_setzero_si512();
		for (int i = 0; i < w; i++)
			acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(
				_mm512_xor_si512(_mm512_loadu_si512(
					(const void *)(pw + i * 8)),
				_mm512_set1_epi64((long long)qw[i]))));
		_mm256_storeu_si256((__m256i *)d, _mm512_cvtepi64_epi32(acc));
	}
}

// q (n) . x[c] (n, stride inc) -> y (4); the four chains fused, in order
static void dot4_avx512(float *y, const float *q, const float *const *x,
                        size_t inc, int n)
{
	float acc[4] = { 0, 0, 0, 0 };

	for (int i = 0; i < n; i++)
		for (int c = 0; c < 4; c++)
			acc[c] = fmaf(q[i], x[c][(size_t)i * inc], acc[c]);
	for (int c = 0; c < 4; c++)
		y[c] = acc[c];
}

/* ---- end of the vector search kernels ---- */

/* the AVX-512 float variant NAME whose fp32 GEMMs are GEMM and
 * GEMM_act */
#define TABLE_AVX512(GEMM, NAME) { \
	.name = NAME, \
	.gemm = GEMM, \
	.gemm_act = GEMM##_act, \
	.layernorm = layernorm_avx512, \
	.rmsnorm = rmsnorm_avx512, \
	.gelu = gelu_avx512, \
	.gelu_tanh = gelu_tanh_avx512, \
	.relu = relu_avx512, \
	.silu = silu_avx512, \
	.softmax = softmax_avx512, \
	.softmax_bf16 = softmax_bf16_avx512, \
	.add = add_avx512, \
	.dot = dot_avx512, \
	.axpy = axpy_avx512, \
	.hamming8 = hamming8_avx512, \
	.dot4 = dot4_avx512, \
	.gemm_bf16 = gemm_bf16_avx512, \
	.bf16_name = "avx512", \
}

const emb_kernels emb_kernels_avx512 = TABLE_AVX512(gemm_avx512, "avx512");
const emb_kernels emb_kernels_avx512_long = TABLE_AVX512(gemm_long_avx512,
                                                       "avx512-long");

#else
typedef int emb_kernels_avx512_unused; /* ISO C: no empty translation unit */
#endif
