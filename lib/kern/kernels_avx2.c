/*
 * kernels_avx2.c - AVX2 + FMA kernels; compiled with $(AVX2_CFLAGS) and
 * only called after a CPU check (cpu.c).
 */
#include "base/half.h"
#include "kern/kernels.h"

#ifdef EMB_HAVE_AVX2
#include <immintrin.h>
#include <math.h>

#define INLINE static inline __attribute__((always_inline))

static const int32_t mask_tab[16] = {
	-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* lane mask of the first n lanes (n clamped to 0..8) */
INLINE __m256i lanes(int n)
{
	if (n > 8)
		n = 8;
	if (n < 0)
		n = 0;
	return _mm256_loadu_si256((const __m256i *)(mask_tab + 8 - n));
}

INLINE __m256 ld(const float *p, int n)
{
	return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(n));
}

INLINE void st(float *p, __m256 v, int n)
{
	if (n >= 8)
		_mm256_storeu_ps(p, v);
	else
		_mm256_maskstore_ps(p, lanes(n), v);
}

/* exp(x), Cephes polynomial, about 1 ulp; inputs clamped to [-87.3, 88.3] */
INLINE __m256 exp256(__m256 x)
{
	const __m256 c1 = _mm256_set1_ps(0.693359375f);
	const __m256 c2 = _mm256_set1_ps(-2.12194440e-4f);
	__m256 fx, r, y, r2;
	__m256i e;

	x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
	x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
	fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
	                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm256_fnmadd_ps(fx, c1, x);
	r = _mm256_fnmadd_ps(fx, c2, r);
	r2 = _mm256_mul_ps(r, r);
	y = _mm256_set1_ps(1.9875691500E-4f);
	y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507E-3f));
	y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073E-3f));
	y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894E-2f));
	y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459E-1f));
	y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201E-1f));
	y = _mm256_fmadd_ps(y, r2, r);
	y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx),
	                                       _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

/* erf(x): rational approximation on [-4, 4], |error| < 4e-7 */
INLINE __m256 erf256(__m256 x)
{
	__m256 x2, p, q;

	x = _mm256_min_ps(x, _mm256_set1_ps(4.0f));
	x = _mm256_max_ps(x, _mm256_set1_ps(-4.0f));
	x2 = _mm256_mul_ps(x, x);
	p = _mm256_set1_ps(-2.72614225801306e-10f);
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.77068142495902e-08f));
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.10102402082508e-06f));
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-5.69250639462346e-05f));
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-7.34990630326855e-04f));
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.95459980854025e-03f));
	p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.60960333262415e-02f));
	p = _mm256_mul_ps(p, x);
	q = _mm256_set1_ps(-1.45660718464996e-05f);
	q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-2.13374055278905e-04f));
	q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.68282697438203e-03f));
	q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-7.37332916720468e-03f));
	q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.42647390514189e-02f));
	return _mm256_div_ps(p, q);
}

INLINE float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

INLINE float hmax(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* 0.5 v (1 + erf(v / sqrt 2)), per lane */
INLINE __m256 gelu_v(__m256 v)
{
	const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
	const __m256 rs2 = _mm256_set1_ps(0.70710678118654752f);
	__m256 e = erf256(_mm256_mul_ps(v, rs2));

	return _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, e));
}

/* 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3) */
INLINE __m256 gelu_tanh_v(__m256 v)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	const __m256 c = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
	const __m256 a = _mm256_set1_ps(0.044715f);
	__m256 u = _mm256_fmadd_ps(_mm256_mul_ps(a, v), _mm256_mul_ps(v, v), v);
	__m256 e = exp256(_mm256_mul_ps(c, u));

	return _mm256_div_ps(v, _mm256_add_ps(one, e));
}

/* act (EMB_KACT_*, a constant after inlining) of v */
INLINE __m256 act_v(__m256 v, int act)
{
	switch (act) {
	case EMB_KACT_GELU: return gelu_v(v);
	case EMB_KACT_GELU_TANH: return gelu_tanh_v(v);
	case EMB_KACT_RELU: return _mm256_max_ps(v, _mm256_setzero_ps());
	default: return v;
	}
}

/*
 * One register tile: MR rows x one panel (16 columns = 2 vectors); ncols:
 * valid columns (1..16).  Every element: acc = 0, one FMA per k in order,
 * then + bias, then act: independent of MR and of its position.
 */
INLINE void tile(float *y, int ldy, const float *x, int ldx,
                 const float *wp, const float *b, int k, int MR, int ncols,
                 int act)
{
	__m256 acc[6][2];
	__m256 b0, b1;

#pragma GCC unroll 6
	for (int r = 0; r < MR; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_ps();
	for (int kk = 0; kk < k; kk++) {
		__m256 w0 = _mm256_loadu_ps(wp + (size_t)kk * EMB_PANEL);
		__m256 w1 = _mm256_loadu_ps(wp + (size_t)kk * EMB_PANEL + 8);
#pragma GCC unroll 6
		for (int r = 0; r < MR; r++) {
			__m256 xv = _mm256_broadcast_ss(x + (size_t)r * ldx + kk);
			acc[r][0] = _mm256_fmadd_ps(xv, w0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(xv, w1, acc[r][1]);
		}
	}
	b0 = b ? ld(b, ncols) : _mm256_setzero_ps();
	b1 = b && ncols > 8 ? ld(b + 8, ncols - 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
	for (int r = 0; r < MR; r++) {
		float *yr = y + (size_t)r * ldy;
		__m256 v0 = b ? _mm256_add_ps(acc[r][0], b0) : acc[r][0];
		__m256 v1 = b ? _mm256_add_ps(acc[r][1], b1) : acc[r][1];
		st(yr, act_v(v0, act), ncols);
		if (ncols > 8)
			st(yr + 8, act_v(v1, act), ncols - 8);
	}
}

/*
 * Rows of the next register tile when left rows remain: 6, except that
 * 7 to 9 left go as two tiles of 4 or 5 (the 32-query blocks of
 * attention: 6 6 6 6 4 4).  A tile of 1 to 3 rows has 2 to 6
 * accumulators, too few to cover the FMA latency (8 in flight on two
 * FMA pipes of 4 cycles), so it costs about what a whole tile does.
 */
INLINE int tile_rows(int left)
{
	if (left > 6 && left < 10)
		return (left + 1) / 2;
	return left < 6 ? left : 6;
}

/*
 * Rows this short (attention's Q K^T: k = head dim) are too short for
 * the hardware's stream prefetch to pick them up before the first panel
 * has walked them; their lines are asked for at once instead.
 */
#define SHORT_K 128

/* x (rows, k) stride ldx: every cache line of it into L1 */
INLINE void prefetch_rows(const float *x, int ldx, int rows, int k)
{
	for (int r = 0; r < rows; r++)
		for (int kk = 0; kk < k; kk += 16)
			_mm_prefetch((const char *)(x + (size_t)r * ldx + kk), _MM_HINT_T0);
}

/* act(x (m,k) @ W (n,k)^T + b (n)) -> y (m,n), W packed; act a constant
 * after inlining */
INLINE void gemm_core(float *y, int ldy, const float *x, int ldx,
                      const float *wp, const float *b, int m, int n, int k,
                      int act)
{
	int np = (n + EMB_PANEL - 1) / EMB_PANEL;
	const int MC = 96;

	for (int i0 = 0; i0 < m; i0 += MC) {
		int i1 = i0 + MC < m ? i0 + MC : m;
		if (k <= SHORT_K)
			prefetch_rows(x + (size_t)i0 * ldx, ldx, i1 - i0, k);
		for (int p = 0; p < np; p++) {
			int ncols = n - p * EMB_PANEL;
			const float *w = wp + (size_t)p * EMB_PANEL * k;
			const float *bb = b ? b + p * EMB_PANEL : NULL;
			if (ncols > EMB_PANEL)
				ncols = EMB_PANEL;
			for (int i = i0, mr; i < i1; i += mr) {
				float *yy = y + (size_t)i * ldy + p * EMB_PANEL;
				const float *xx = x + (size_t)i * ldx;
				mr = tile_rows(i1 - i);
				switch (mr) {
				case 6: tile(yy, ldy, xx, ldx, w, bb, k, 6, ncols, act); break;
				case 5: tile(yy, ldy, xx, ldx, w, bb, k, 5, ncols, act); break;
				case 4: tile(yy, ldy, xx, ldx, w, bb, k, 4, ncols, act); break;
				case 3: tile(yy, ldy, xx, ldx, w, bb, k, 3, ncols, act); break;
				case 2: tile(yy, ldy, xx, ldx, w, bb, k, 2, ncols, act); break;
				default: tile(yy, ldy, xx, ldx, w, bb, k, 1, ncols, act); break;
				}
			}
		}
	}
}

// x (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed
static void gemm_avx2(float *y, int ldy, const float *x, int ldx,
                      const float *wp, const float *b, int m, int n, int k)
{
	gemm_core(y, ldy, x, ldx, wp, b, m, n, k, EMB_KACT_NONE);
}

// act(x (m,k) @ W (n,k)^T + b (n)) -> y (m,n), W packed
static void gemm_act_avx2(float *y, int ldy, const float *x, int ldx,
                          const float *wp, const float *b, int m, int n, int k,
                          int act)
{
	switch (act) {
	case EMB_KACT_GELU:
		gemm_core(y, ldy, x, ldx, wp, b, m, n, k, EMB_KACT_GELU);
		break;
	case EMB_KACT_GELU_TANH:
		gemm_core(y, ldy, x, ldx, wp, b, m, n, k, EMB_KACT_GELU_TANH);
		break;
	case EMB_KACT_RELU:
		gemm_core(y, ldy, x, ldx, wp, b, m, n, k, EMB_KACT_RELU);
		break;
	default:
		gemm_core(y, ldy, x, ldx, wp, b, m, n, k, EMB_KACT_NONE);
		break;
	}
}

/* emb_rmsnorm_scalar's bits: the 16 partial sums of squares in two
 * registers (elements i mod 16 < 8 and >= 8), folded lo + hi, then as
 * hsum folds (i + i+4, i + i+2, i + i+1); no fused multiply-add */
static void rmsnorm_avx2(float *y, const float *x, const float *g, int n,
                         float eps)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, rv;
	float r;
	int i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		a0 = _mm256_add_ps(a0, _mm256_mul_ps(v0, v0));
		a1 = _mm256_add_ps(a1, _mm256_mul_ps(v1, v1));
	}
	if (i < n) {    /* lanes past n add 0 * 0 */
		__m256 v0 = ld(x + i, n - i), v1 = ld(x + i + 8, n - i - 8);
		a0 = _mm256_add_ps(a0, _mm256_mul_ps(v0, v0));
		a1 = _mm256_add_ps(a1, _mm256_mul_ps(v1, v1));
	}
	r = 1.0f / sqrtf(hsum(_mm256_add_ps(a0, a1)) / (float)n + eps);
	rv = _mm256_set1_ps(r);
	for (i = 0; i < n; i += 8)
		st(y + i, _mm256_mul_ps(ld(g + i, n - i),
		                        _mm256_mul_ps(ld(x + i, n - i), rv)), n - i);
}

static void layernorm_avx2(float *y, const float *x, const float *g,
                           const float *b, int n, float eps)
{
	__m256 s = _mm256_setzero_ps(), mv, rv;
	float mean, var;

	for (int i = 0; i < n; i += 8)
		s = _mm256_add_ps(s, ld(x + i, n - i));
	mean = hsum(s) / n;
	mv = _mm256_set1_ps(mean);
	s = _mm256_setzero_ps();
	for (int i = 0; i < n; i += 8) {
		__m256 d = _mm256_sub_ps(ld(x + i, n - i), mv);
		if (n - i < 8)
			d = _mm256_and_ps(d, _mm256_castsi256_ps(lanes(n - i)));
		s = _mm256_fmadd_ps(d, d, s);
	}
	var = hsum(s) / n;
	rv = _mm256_set1_ps(1.0f / sqrtf(var + eps));
	for (int i = 0; i < n; i += 8) {
		__m256 d = _mm256_sub_ps(ld(x + i, n - i), mv);
		__m256 v = _mm256_fmadd_ps(_mm256_mul_ps(d, rv), ld(g + i, n - i),
		                           ld(b + i, n - i));
		st(y + i, v, n - i);
	}
}

static void gelu_avx2(float *x, int n)
{
	for (int i = 0; i < n; i += 8)
		st(x + i, gelu_v(ld(x + i, n - i)), n - i);
}

static void gelu_tanh_avx2(float *x, int n)
{
	for (int i = 0; i < n; i += 8)
		st(x + i, gelu_tanh_v(ld(x + i, n - i)), n - i);
}

static void relu_avx2(float *x, int n)
{
	const __m256 z = _mm256_setzero_ps();

	for (int i = 0; i < n; i += 8)
		st(x + i, _mm256_max_ps(ld(x + i, n - i), z), n - i);
}

static void silu_avx2(float *y, const float *x, const float *g, int n)
{
	const __m256 one = _mm256_set1_ps(1.0f);

	for (int i = 0; i < n; i += 8) {
		__m256 v = ld(x + i, n - i);
		__m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), v));
		v = _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, e)));
		if (g)
			v = _mm256_mul_ps(v, ld(g + i, n - i));
		st(y + i, v, n - i);
	}
}

/* 8 lanes of kernels.h's softmax exponential of v (m the row's max):
 * t = (v - m) a, then the quintic (softmax) or the cubic (softmax_bf16),
 * a constant after inlining; 2^n goes into the exponent bits (p in
 * [0.7, 1.5] and e normal: the exact product) */
INLINE __m256 exp2_poly256(__m256 v, __m256 av, __m256 mv, int quintic)
{
	__m256 t = _mm256_max_ps(_mm256_mul_ps(_mm256_sub_ps(v, mv), av),
	                         _mm256_set1_ps(-125.0f));
	__m256 r = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT |
	                              _MM_FROUND_NO_EXC);
	__m256 f = _mm256_sub_ps(t, r), p;
	__m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(r), 23);

	if (quintic) {
		p = _mm256_fmadd_ps(_mm256_set1_ps(EMB_EXP2_F5), f,
		                    _mm256_set1_ps(EMB_EXP2_F4));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_F3));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_F2));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_F1));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_F0));
	} else {
		p = _mm256_fmadd_ps(_mm256_set1_ps(EMB_EXP2_C3), f,
		                    _mm256_set1_ps(EMB_EXP2_C2));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_C1));
		p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(EMB_EXP2_C0));
	}
	return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

/* lanes [n, 8) of v set to -inf (n < 8) */
INLINE __m256 neg_inf_past(__m256 v, int n)
{
	return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), v,
	                        _mm256_castsi256_ps(lanes(n)));
}

/* the max of row x (n) */
INLINE float row_max(const float *x, int n)
{
	__m256 mx = _mm256_set1_ps(-INFINITY);

	for (int i = 0; i < n; i += 8) {
		__m256 v = ld(x + i, n - i);
		mx = _mm256_max_ps(mx, n - i < 8 ? neg_inf_past(v, n - i) : v);
	}
	return hmax(mx);
}

/*
 * kernels.h's softmax or softmax_bf16 of one row x (n) of max m
 * (quintic a constant after inlining), the scalar one's bits: partial
 * sums i mod 16 in two registers (as rmsnorm_avx2's); returns 1 / the
 * sum.  When there is a next row nx (n; nx NULL: none, a constant after
 * inlining), its max is taken in the same loop (*nmax), so that no row
 * of a block waits for its own max pass: the exponentials' chains keep
 * the pipes busy meanwhile.
 */
INLINE float softmax_row(float *x, const float *nx, int n, float scale,
                         float m, int quintic, float *nmax)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0;
	__m256 n0 = _mm256_set1_ps(-INFINITY), n1 = n0;
	__m256 av = _mm256_set1_ps(scale * EMB_LOG2E_F);
	__m256 mv = _mm256_set1_ps(m);
	int i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256 e0 = exp2_poly256(_mm256_loadu_ps(x + i), av, mv,
		                         quintic);
		__m256 e1 = exp2_poly256(_mm256_loadu_ps(x + i + 8), av, mv,
		                         quintic);
		if (nx) {
			n0 = _mm256_max_ps(n0, _mm256_loadu_ps(nx + i));
			n1 = _mm256_max_ps(n1, _mm256_loadu_ps(nx + i + 8));
		}
		_mm256_storeu_ps(x + i, e0);
		_mm256_storeu_ps(x + i + 8, e1);
		s0 = _mm256_add_ps(s0, e0);
		s1 = _mm256_add_ps(s1, e1);
	}
	if (i < n) {            /* 1 to 15 left: masked */
		__m256 e0 = exp2_poly256(ld(x + i, n - i), av, mv, quintic);
		__m256 e1 = exp2_poly256(ld(x + i + 8, n - i - 8), av, mv,
		                         quintic);
		if (nx) {
			__m256 v0 = ld(nx + i, n - i), v1 = ld(nx + i + 8, n - i - 8);
			n0 = _mm256_max_ps(n0, n - i < 8 ? neg_inf_past(v0, n - i) : v0);
			n1 = _mm256_max_ps(n1, neg_inf_past(v1, n - i - 8));
		}
		e0 = _mm256_and_ps(e0, _mm256_castsi256_ps(lanes(n - i)));
		e1 = _mm256_and_ps(e1, _mm256_castsi256_ps(lanes(n - i - 8)));
		st(x + i, e0, n - i);
		if (n - i > 8)
			st(x + i + 8, e1, n - i - 8);
		s0 = _mm256_add_ps(s0, e0);
		s1 = _mm256_add_ps(s1, e1);
	}
	if (nx)
		*nmax = hmax(_mm256_max_ps(n0, n1));
	return 1.0f / hsum(_mm256_add_ps(s0, s1));
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

static void softmax_avx2(float *x, int ld, int rows, int n, float scale,
                         float *inv)
{
	softmax_rows(x, ld, rows, n, scale, inv, 1);
}

static void softmax_bf16_avx2(float *x, int ld, int rows, int n, float scale,
                              float *inv)
{
	softmax_rows(x, ld, rows, n, scale, inv, 0);
}

/* r (8 rows of 8) transposed in place: r[i] becomes column i, its
 * lanes the rows */
INLINE void transpose8(__m256 r[8])
{
	__m256 t[8], u[8];

	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
	}
	for (int i = 0; i < 2; i++) {
		u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
		u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
		u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
		u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
	}
	for (int i = 0; i < 4; i++) {
		r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
		r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
	}
}

// W (n,k) row stride ldw -> wp, packed (kernels.h): each panel's two
// halves of 8 rows, 8 k at a time by an 8 x 8 transpose (rows past n
// read as zeros), the k left over one by one
static void pack_avx2(float *wp, const float *w, int ldw, int n, int k)
{
	for (int p = 0; p * EMB_PANEL < n; p++) {
		float *dst = wp + (size_t)p * EMB_PANEL * k;
		for (int h = 0; h < EMB_PANEL; h += 8) {
			int rows = n - p * EMB_PANEL - h, kk = 0;
			const float *src = rows > 0 ?
			                   w + (size_t)(p * EMB_PANEL + h) * ldw : w;
			rows = rows < 0 ? 0 : rows > 8 ? 8 : rows;
			for (; kk + 8 <= k; kk += 8) {
				__m256 r[8];
				for (int i = 0; i < 8; i++)
					r[i] = i < rows ? _mm256_loadu_ps(src + (size_t)i * ldw +
					                                  kk) :
					       _mm256_setzero_ps();
				transpose8(r);
				for (int i = 0; i < 8; i++)
					_mm256_storeu_ps(dst + (size_t)(kk + i) * EMB_PANEL + h,
					                 r[i]);
			}
			for (; kk < k; kk++)
				for (int i = 0; i < 8; i++)
					dst[(size_t)kk * EMB_PANEL + h + i] =
						i < rows ? src[(size_t)i * ldw + kk] : 0.0f;
		}
	}
}

static void add_avx2(float *y, const float *x, int n)
{
	for (int i = 0; i < n; i += 8)
		st(y + i, _mm256_add_ps(ld(y + i, n - i), ld(x + i, n - i)), n - i);
}

static float dot_avx2(const float *a, const float *b, int n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	int i;

	for (i = 0; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
		                     _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i < n; i += 8)
		s0 = _mm256_fmadd_ps(ld(a + i, n - i), ld(b + i, n - i), s0);
	return hsum(_mm256_add_ps(s0, s1));
}

static void axpy_avx2(float *y, float a, const float *x, int n)
{
	__m256 av = _mm256_set1_ps(a);

	for (int i = 0; i < n; i += 8)
		st(y + i, _mm256_fmadd_ps(av, ld(x + i, n - i), ld(y + i, n - i)),
		   n - i);
}

/* eight halves to floats at once (vcvtph2ps, exact), the tail one by one */
static void f16_to_f32_avx2(float *y, const uint16_t *x, int n)
{
	int i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(x + i))));
	for (; i < n; i++)
		y[i] = emb_f16_to_f32(x[i]);
}

static void add_f16_avx2(float *y, const uint16_t *x, int n)
{
	int i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 h = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), h));
	}
	for (; i < n; i++)
		y[i] += emb_f16_to_f32(x[i]);
}

/* ---- vector search kernels ---- */

/* per panel, bytes counted by nibble lookups, summed per word by vpsadbw */
static void hamming8_avx2(int32_t *d, const uint64_t *pw, const uint64_t *qw,
                          int w, size_t np)
{
	const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3,
		2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i low = _mm256_set1_epi8(0x0f);

	for (size_t p = 0; p < np; p++, pw += (size_t)w * 8, d += 8) {
		__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
		for (int w0 = 0; w0 < w; w0 += 31) {
			/* byte counts reach at most 8 per word: 31 words fit a byte */
			__m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
			int w1 = w0 + 31 < w ? w0 + 31 : w;
			for (int i = w0; i < w1; i++) {
				__m256i qv = _mm256_set1_epi64x((long long)qw[i]);
				__m256i x0 = _mm256_xor_si256(_mm256_loadu_si256(
					(const __m256i *)(pw + i * 8)), qv);
				__m256i x1 = _mm256_xor_si256(_mm256_loadu_si256(
					(const __m256i *)(pw + i * 8 + 4)), qv);
				a0 = _mm256_add_epi8(a0, _mm256_add_epi8(
					_mm256_shuffle_epi8(lut, _mm256_and_si256(x0, low)),
					_mm256_shuffle_epi8(lut, _mm256_and_si256(
						_mm256_srli_epi16(x0, 4), low))));
				a1 = _mm256_add_epi8(a1, _mm256_add_epi8(
					_mm256_shuffle_epi8(lut, _mm256_and_si256(x1, low)),
					_mm256_shuffle_epi8(lut, _mm256_and_si256(
						_mm256_srli_epi16(x1, 4), low))));
			}
			s0 = _mm256_add_epi64(s0, _mm256_sad_epu8(a0,
			                      _mm256_setzero_si256()));
			s1 = _mm256_add_epi64(s1, _mm256_sad_epu8(a1,
			                      _mm256_setzero_si256()));
		}
		/* the 64-bit sums fit 32 bits: gather the low halves */
		{
			const __m256i lo = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
			__m128i l0 = _mm256_castsi256_si128(
				_mm256_permutevar8x32_epi32(s0, lo));
			__m128i l1 = _mm256_castsi256_si128(
				_mm256_permutevar8x32_epi32(s1, lo));
			_mm_storeu_si128((__m128i *)d, l0);
			_mm_storeu_si128((__m128i *)(d + 4), l1);
		}
	}
}

// q (n) . x[c] (n, stride inc) -> y (4); the four chains fused, in order
static void dot4_fma(float *y, const float *q, const float *const *x,
                     size_t inc, int n)
{
	__m128 acc = _mm_setzero_ps();

	for (int i = 0; i < n; i++) {
		size_t at = (size_t)i * inc;
		acc = _mm_fmadd_ps(_mm_set1_ps(q[i]), _mm_setr_ps(x[0][at],
		                   x[1][at], x[2][at], x[3][at]), acc);
	}
	_mm_storeu_ps(y, acc);
}

// row (n) [* inv (n)] -> the first index of a value >= bar or not finite;
// eight lanes at a time: x >= bar (ordered), or |x| not below infinity
// (infinite, or unordered: NaN)
static int find_ge_avx2(const float *row, const float *inv, int n, float bar)
{
	const __m256 b = _mm256_set1_ps(bar), inf = _mm256_set1_ps(INFINITY);
	const __m256 mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	int i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(row + i);
		if (inv)
			x = _mm256_mul_ps(x, _mm256_loadu_ps(inv + i));
		int m = _mm256_movemask_ps(_mm256_or_ps(
			_mm256_cmp_ps(x, b, _CMP_GE_OQ),
			_mm256_cmp_ps(_mm256_and_ps(x, mag), inf, _CMP_NLT_UQ)));
		if (m)
			return i + __builtin_ctz((unsigned)m);
	}
	for (; i < n; i++) {
		float x = inv ? row[i] * inv[i] : row[i];
		if (x >= bar || !isfinite(x))
			return i;
	}
	return n;
}

/* ---- end of the vector search kernels ---- */

const emb_kernels emb_kernels_avx2 = {
	.name = "avx2",
	.gemm = gemm_avx2,
	.gemm_act = gemm_act_avx2,
	.layernorm = layernorm_avx2,
	.rmsnorm = rmsnorm_avx2,
	.gelu = gelu_avx2,
	.gelu_tanh = gelu_tanh_avx2,
	.relu = relu_avx2,
	.silu = silu_avx2,
	.softmax = softmax_avx2,
	.pack = pack_avx2,
	.softmax_bf16 = softmax_bf16_avx2,
	.add = add_avx2,
	.dot = dot_avx2,
	.axpy = axpy_avx2,
	.f16_to_f32 = f16_to_f32_avx2,
	.add_f16 = add_f16_avx2,
	.hamming8 = hamming8_avx2,
	.dot4 = dot4_fma,
	.find_ge = find_ge_avx2,
};

#else
typedef int emb_kernels_avx2_unused; /* ISO C: no empty translation unit */
#endif
