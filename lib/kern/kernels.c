/*
 * kernels.c - weight packing and the scalar kernels (the portable path
 * and the oracle the SIMD variants are tested against).
 */
#include <math.h>
#include <string.h>
#include "base/half.h"
#include "kern/kernels.h"

size_t emb_pack_size(int n, int k)
{
	size_t panels;

	if (n <= 0 || k <= 0)
		return 0;
	panels = ((size_t)n + EMB_PANEL - 1) / EMB_PANEL;
	if ((size_t)k > SIZE_MAX / EMB_PANEL / panels / sizeof(float))
		return 0;
	return panels * EMB_PANEL * (size_t)k;
}

// W (n,k) row-major -> panels [n/16][k][16], zero padded
// W (n,k) row stride ldw -> wp, packed (kernels.h)
static void pack_scalar(float *wp, const float *w, int ldw, int n, int k)
{
	int np = (n + EMB_PANEL - 1) / EMB_PANEL;

	for (int p = 0; p < np; p++) {
		float *dst = wp + (size_t)p * EMB_PANEL * k;
		for (int kk = 0; kk < k; kk++)
			for (int j = 0; j < EMB_PANEL; j++) {
				int col = p * EMB_PANEL + j;
				dst[(size_t)kk * EMB_PANEL + j] =
					col < n ? w[(size_t)col * ldw + kk] : 0.0f;
			}
	}
}

void emb_pack_weights(float *wp, const float *w, int n, int k)
{
	pack_scalar(wp, w, k, n, k);
}

// x (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed
static void gemm_scalar(float *y, int ldy, const float *x, int ldx,
                        const float *wp, const float *b, int m, int n, int k)
{
	for (int i = 0; i < m; i++) {
		const float *xi = x + (size_t)i * ldx;
		float *yi = y + (size_t)i * ldy;
		for (int p = 0; p * EMB_PANEL < n; p++) {
			const float *w = wp + (size_t)p * EMB_PANEL * k;
			float acc[EMB_PANEL] = {0};
			int nj = n - p * EMB_PANEL;
			if (nj > EMB_PANEL)
				nj = EMB_PANEL;
			for (int kk = 0; kk < k; kk++) {
				float xv = xi[kk];
				const float *wk = w + (size_t)kk * EMB_PANEL;
				for (int j = 0; j < EMB_PANEL; j++)
					acc[j] += xv * wk[j];
			}
			for (int j = 0; j < nj; j++)
				yi[p * EMB_PANEL + j] = b ? acc[j] + b[p * EMB_PANEL + j]
				                          : acc[j];
		}
	}
}

static void gelu_scalar(float *x, int n);
static void gelu_tanh_scalar(float *x, int n);
static void relu_scalar(float *x, int n);

// act(x (m,k) @ W (n,k)^T + b (n)) -> y (m,n): the gemm, then each row
static void gemm_act_scalar(float *y, int ldy, const float *x, int ldx,
                            const float *wp, const float *b, int m, int n,
                            int k, int act)
{
	gemm_scalar(y, ldy, x, ldx, wp, b, m, n, k);
	for (int i = 0; i < m; i++) {
		float *yi = y + (size_t)i * ldy;
		switch (act) {
		case EMB_KACT_GELU: gelu_scalar(yi, n); break;
		case EMB_KACT_GELU_TANH: gelu_tanh_scalar(yi, n); break;
		case EMB_KACT_RELU: relu_scalar(yi, n); break;
		default: break;
		}
	}
}

static void layernorm_scalar(float *y, const float *x, const float *g,
                             const float *b, int n, float eps)
{
	double sum = 0, var = 0;
	float mean, rstd;

	for (int i = 0; i < n; i++)
		sum += x[i];
	mean = (float)(sum / n);
	for (int i = 0; i < n; i++) {
		double d = (double)x[i] - mean;
		var += d * d;
	}
	rstd = (float)(1.0 / sqrt(var / n + eps));
	for (int i = 0; i < n; i++)
		y[i] = (x[i] - mean) * rstd * g[i] + b[i];
}

static void gelu_scalar(float *x, int n)
{
	for (int i = 0; i < n; i++)
		x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

static void gelu_tanh_scalar(float *x, int n)
{
	for (int i = 0; i < n; i++) {
		float v = x[i];
		float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
		x[i] = 0.5f * v * (1.0f + tanhf(u));
	}
}

static void relu_scalar(float *x, int n)
{
	for (int i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void silu_scalar(float *y, const float *x, const float *g, int n)
{
	for (int i = 0; i < n; i++) {
		float v = x[i] * (1.0f / (1.0f + expf(-x[i])));
		y[i] = g ? v * g[i] : v;
	}
}

/* acc[0..16) folded i + i+8, i + i+4, i + i+2, i + i+1 (in place) */
static float fold16(float acc[16])
{
	for (int w = 8; w >= 1; w /= 2)
		for (int i = 0; i < w; i++)
			acc[i] += acc[i + w];
	return acc[0];
}

/* kernels.h's softmax (quintic) or softmax_bf16 (cubic) of one row:
 * the oracle of the formula there; returns 1 / the sum */
static float softmax_row(float *x, int n, float scale, int quintic)
{
	float mx = -INFINITY, a = scale * EMB_LOG2E_F, acc[16] = { 0 };

	for (int i = 0; i < n; i++)
		if (x[i] > mx)
			mx = x[i];
	for (int i = 0; i < n; i++) {
		float t = (x[i] - mx) * a, r, f, p;
		t = t > -125.0f ? t : -125.0f;
		r = nearbyintf(t);
		f = t - r;
		if (quintic)
			p = fmaf(fmaf(fmaf(fmaf(fmaf(EMB_EXP2_F5, f, EMB_EXP2_F4), f,
			     EMB_EXP2_F3), f, EMB_EXP2_F2), f, EMB_EXP2_F1), f,
			     EMB_EXP2_F0);
		else
			p = fmaf(fmaf(fmaf(EMB_EXP2_C3, f, EMB_EXP2_C2), f,
			     EMB_EXP2_C1), f, EMB_EXP2_C0);
		x[i] = ldexpf(p, (int)r);
		acc[i % 16] += x[i];
	}
	return 1.0f / fold16(acc);
}

static void softmax_scalar(float *x, int ld, int rows, int n, float scale,
                           float *inv)
{
	for (int r = 0; r < rows; r++)
		inv[r] = softmax_row(x + (size_t)r * ld, n, scale, 1);
}

static void softmax_bf16_scalar(float *x, int ld, int rows, int n,
                                float scale, float *inv)
{
	for (int r = 0; r < rows; r++)
		inv[r] = softmax_row(x + (size_t)r * ld, n, scale, 0);
}

static void add_scalar(float *y, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += x[i];
}

static float dot_scalar(const float *a, const float *b, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return (float)s;
}

static void axpy_scalar(float *y, float a, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void f16_to_f32_scalar(float *y, const uint16_t *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] = emb_f16_to_f32(x[i]);
}

static void add_f16_scalar(float *y, const uint16_t *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += emb_f16_to_f32(x[i]);
}

/* ---- vector search kernels ---- */

static void hamming8_scalar(int32_t *d, const uint64_t *pw, const uint64_t *qw,
                            int w, size_t np)
{
	for (size_t p = 0; p < np; p++, pw += (size_t)w * 8, d += 8) {
		for (int c = 0; c < 8; c++)
			d[c] = 0;
		for (int i = 0; i < w; i++)
			for (int c = 0; c < 8; c++)
				d[c] += __builtin_popcountll(pw[i * 8 + c] ^ qw[i]);
	}
}

// q (n) . x[c] (n, stride inc) -> y (4); multiply, then add (no fusing)
static void dot4_scalar(float *y, const float *q, const float *const *x,
                        size_t inc, int n)
{
	float acc[4] = { 0, 0, 0, 0 };

	for (int i = 0; i < n; i++)
		for (int c = 0; c < 4; c++)
			acc[c] = acc[c] + q[i] * x[c][(size_t)i * inc];
	for (int c = 0; c < 4; c++)
		y[c] = acc[c];
}

// row (n) [* inv (n)] -> the first index of a value >= bar or not finite
static int find_ge_scalar(const float *row, const float *inv, int n, float bar)
{
	for (int i = 0; i < n; i++) {
		float x = inv ? row[i] * inv[i] : row[i];
		if (x >= bar || !isfinite(x))
			return i;
	}
	return n;
}

/* ---- end of the vector search kernels ---- */

// y (n) = g (n) * x (n) / sqrt(mean(x^2) + eps)
/*
 * The sum of squares every table's RMSNorm takes, in one order: 16
 * partial sums (element i into sum i mod 16, each square rounded, then
 * added), folded as a tree: sum i + sum i+8, then i + i+4, i + i+2,
 * i + i+1.  The AVX2 and AVX-512 versions keep the 16 sums in lanes and
 * fold them in the same steps, so all give the same bits.
 */
float emb_rmsnorm_sumsq(const float *x, int n)
{
	float acc[16] = { 0 };

	for (int i = 0; i < n; i++) {
		float sq = x[i] * x[i];
		acc[i % 16] += sq;
	}
	return fold16(acc);
}

void emb_rmsnorm_scalar(float *y, const float *x, const float *g, int n,
                        float eps)
{
	float r = 1.0f / sqrtf(emb_rmsnorm_sumsq(x, n) / (float)n + eps);

	for (int i = 0; i < n; i++)
		y[i] = g[i] * (x[i] * r);
}

const emb_kernels emb_kernels_scalar = {
	.name = "scalar",
	.gemm = gemm_scalar,
	.gemm_act = gemm_act_scalar,
	.layernorm = layernorm_scalar,
	.rmsnorm = emb_rmsnorm_scalar,
	.gelu = gelu_scalar,
	.gelu_tanh = gelu_tanh_scalar,
	.relu = relu_scalar,
	.silu = silu_scalar,
	.softmax = softmax_scalar,
	.pack = pack_scalar,
	.softmax_bf16 = softmax_bf16_scalar,
	.add = add_scalar,
	.dot = dot_scalar,
	.axpy = axpy_scalar,
	.f16_to_f32 = f16_to_f32_scalar,
	.add_f16 = add_f16_scalar,
	.hamming8 = hamming8_scalar,
	.dot4 = dot4_scalar,
	.find_ge = find_ge_scalar,
};
