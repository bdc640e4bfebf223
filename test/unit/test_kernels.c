/*
 * test_kernels.c - every SIMD kernel against the scalar reference on odd
 * shapes, GEMM row/column independence (what makes results independent
 * of batching and threads), ISA selection and the thread pool.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/cpu.h"
#include "base/half.h"
#include "tool/emb-tool.h"
#include "kern/kernels.h"
#include "nn/nn-internal.h"
#include "testutil.h"

static const int gemm_shapes[][3] = {     /* m, n, k */
	{ 1, 1, 1 }, { 1, 17, 3 }, { 2, 16, 16 }, { 7, 33, 65 }, { 13, 31, 5 },
	{ 6, 32, 384 }, { 97, 50, 1536 }, { 5, 1, 1000 }, { 12, 48, 7 },
	{ 103, 100, 37 }, { 3, 15, 4099 },
};

/* GEMM with a packed W against a plain double-precision product */
static void check_gemm(const emb_kernels *k, int m, int n, int kk, int bias)
{
	int ldx = kk + 3, ldy = n + 5;
	float *x = tu_rand_vec((size_t)m * ldx, 1.0f);
	float *w = tu_rand_vec((size_t)n * kk, 0.5f);
	float *b = tu_rand_vec((size_t)n, 0.25f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *y = malloc((size_t)m * ldy * sizeof(float));

	cr_assert(wp && y);
	emb_pack_weights(wp, w, n, kk);
	for (size_t i = 0; i < (size_t)m * ldy; i++)
		y[i] = 12345.0f;
	k->gemm(y, ldy, x, ldx, wp, bias ? b : NULL, m, n, kk);
	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			double ref = bias ? b[j] : 0, mag = fabs(ref);
			for (int t = 0; t < kk; t++) {
				ref += (double)x[(size_t)i * ldx + t] * w[(size_t)j * kk + t];
				mag += fabs((double)x[(size_t)i * ldx + t] * w[(size_t)j * kk + t]);
			}
			cr_assert(fabs(y[(size_t)i * ldy + j] - ref) <= 2e-6 * mag + 1e-7,
			          "%s gemm m=%d n=%d k=%d: y[%d][%d] = %.9g, want %.9g",
			          k->name, m, n, kk, i, j, y[(size_t)i * ldy + j], ref);
		}
		for (int j = n; j < ldy; j++)
			cr_assert_eq(y[(size_t)i * ldy + j], 12345.0f,
			             "%s gemm wrote past n (row %d col %d)", k->name, i, j);
	}
	free(x); free(w); free(b); free(wp); free(y);
}

Test(kernels, gemm_all_variants_odd_shapes)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);

	for (int i = 0; i < nv; i++)
		for (size_t s = 0; s < sizeof(gemm_shapes) / sizeof(gemm_shapes[0]); s++) {
			check_gemm(v[i], gemm_shapes[s][0], gemm_shapes[s][1],
			           gemm_shapes[s][2], 1);
			check_gemm(v[i], gemm_shapes[s][0], gemm_shapes[s][1],
			           gemm_shapes[s][2], 0);
		}
}

/* SIMD GEMM vs the scalar kernel itself */
/*
 * every table's pack: W (n, k) with a row stride past k packed into the
 * bits emb_pack_weights gives the same rows stored densely, NaN payloads,
 * -0 and infinities included; whole and partial panels (n across 8 and
 * 16), k across 8; nothing written past the packed size
 */
Test(kernels, pack_as_the_oracle)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	const int ns[] = { 1, 5, 8, 9, 15, 16, 17, 24, 31, 40 };
	const int ks[] = { 1, 3, 7, 8, 9, 16, 31, 64, 67 };

	for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
		for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
			int n = ns[a], k = ks[b], ldw = k + 5;
			size_t sz = emb_pack_size(n, k);
			float *w = tu_rand_vec((size_t)n * ldw, 3.0f);
			float *dense = malloc((size_t)n * k * sizeof(float));
			float *want = malloc(sz * sizeof(float));
			float *got = malloc((sz + 16) * sizeof(float));
			uint32_t nan = 0x7fc01234u, neg0 = 0x80000000u;

			cr_assert(dense && want && got);
			memcpy(&w[0], &nan, 4);
			memcpy(&w[(size_t)(n - 1) * ldw + k - 1], &neg0, 4);
			w[(size_t)(n / 2) * ldw + k / 2] = -INFINITY;
			for (int r = 0; r < n; r++)
				memcpy(dense + (size_t)r * k, w + (size_t)r * ldw,
				       (size_t)k * sizeof(float));
			emb_pack_weights(want, dense, n, k);
			for (int i = 0; i < nv; i++) {
				for (size_t e = 0; e < sz + 16; e++)
					got[e] = 777.0f;
				v[i]->pack(got, w, ldw, n, k);
				cr_assert(!memcmp(got, want, sz * sizeof(float)),
				          "%s pack n=%d k=%d: not the oracle's bits",
				          v[i]->name, n, k);
				for (size_t e = sz; e < sz + 16; e++)
					cr_assert(got[e] == 777.0f, "%s pack n=%d k=%d: "
					          "written past the packed size",
					          v[i]->name, n, k);
			}
			free(w); free(dense); free(want); free(got);
		}
}

Test(kernels, gemm_simd_matches_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");

	for (int i = 0; i < nv; i++)
		for (size_t s = 0; s < sizeof(gemm_shapes) / sizeof(gemm_shapes[0]); s++) {
			int m = gemm_shapes[s][0], n = gemm_shapes[s][1], kk = gemm_shapes[s][2];
			float *x = tu_rand_vec((size_t)m * kk, 1.0f);
			float *w = tu_rand_vec((size_t)n * kk, 1.0f);
			float *b = tu_rand_vec((size_t)n, 1.0f);
			float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
			float *y0 = malloc((size_t)m * n * sizeof(float));
			float *y1 = malloc((size_t)m * n * sizeof(float));
			emb_pack_weights(wp, w, n, kk);
			emb_kernels_scalar.gemm(y0, n, x, kk, wp, b, m, n, kk);
			v[i]->gemm(y1, n, x, kk, wp, b, m, n, kk);
			for (int e = 0; e < m * n; e++)
				cr_assert(fabsf(y0[e] - y1[e]) <= 1e-5f * sqrtf((float)kk) *
				          (1.0f + fabsf(y0[e])), "%s vs scalar m=%d n=%d k=%d "
				          "at %d: %g vs %g", v[i]->name, m, n, kk, e, y1[e], y0[e]);
			free(x); free(w); free(b); free(wp); free(y0); free(y1);
		}
}

/*
 * A row or column block computed alone equals the same block of the whole
 * product bit for bit, for every variant: batching and thread splits
 * cannot change results.
 */
Test(kernels, gemm_blocks_bitwise_independent)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	int m = 29, n = 83, kk = 71;
	float *x = tu_rand_vec((size_t)m * kk, 1.0f);
	float *w = tu_rand_vec((size_t)n * kk, 1.0f);
	float *b = tu_rand_vec((size_t)n, 1.0f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *full = malloc((size_t)m * n * sizeof(float));
	float *part = malloc((size_t)m * n * sizeof(float));

	emb_pack_weights(wp, w, n, kk);
	for (int i = 0; i < nv; i++) {
		v[i]->gemm(full, n, x, kk, wp, b, m, n, kk);
		for (int r0 = 0; r0 < m; r0 += 5) {
			for (int p = 0; p * EMB_PANEL < n; p++) {
				int rows = m - r0 < 5 ? m - r0 : 5;
				int n0 = p * EMB_PANEL;
				int cols = n - n0 < EMB_PANEL ? n - n0 : EMB_PANEL;
				v[i]->gemm(part + (size_t)r0 * n + n0, n, x + (size_t)r0 * kk,
				           kk, wp + (size_t)p * EMB_PANEL * kk, b + n0,
				           rows, cols, kk);
			}
		}
		cr_assert(!memcmp(full, part, (size_t)m * n * sizeof(float)),
		          "%s: blocks differ from the whole product", v[i]->name);
		/* one row alone */
		v[i]->gemm(part, n, x + (size_t)17 * kk, kk, wp, b, 1, n, kk);
		cr_assert(!memcmp(full + (size_t)17 * n, part, (size_t)n * sizeof(float)),
		          "%s: a single row differs", v[i]->name);
	}
	free(x); free(w); free(b); free(wp); free(full); free(part);
}

/*
 * Shapes at every edge of the SIMD kernels' blocking: rows around the
 * register tiles (AVX2 6; AVX-512 8, a last 1..4 as a 4-row tile; 7 to
 * 9 left as two smaller tiles, attention's 32) and the row block (96),
 * columns around the panels (16), the AVX-512 groups of three (48, 96)
 * and its in-place x (4 panels or fewer: 64 and under), k around the
 * AVX-512 packing's 16-k transposes, the short-row prefetch (128), the
 * AVX-512 chunks (192; 1536 in the long variant) and the AVX2 k blocks
 * (256, the last one taking up to 384).  14 row counts, prime to the 5
 * that walks them; 16 column counts, prime to the 3.
 */
static const int edge_m[] = { 1, 5, 6, 7, 8, 9, 12, 13, 32, 95, 96, 97, 101,
                              193 };
static const int edge_n[] = { 1, 8, 15, 16, 17, 31, 33, 48, 9, 64, 47, 49,
                              80, 95, 97, 112 };
static const int edge_k[] = { 1, 7, 15, 16, 17, 64, 128, 129, 191, 192, 193,
                              255, 256, 257, 383, 384,
                              385, 511, 512, 513, 639, 640, 641, 768, 769,
                              1025, 1535, 1536, 1537, 3073 };

/*
 * Every SIMD GEMM against the FMA-order oracle bit for bit, as the
 * header's contract says: acc = 0; acc = fma(x, w, acc) for k in order;
 * y = acc + b.  Shapes at every blocking edge, ldx != k, ldy != n, with
 * and without bias; nothing written past n.  Any change of the order of
 * operations inside the kernels (k blocks, tiles) shows here.  One
 * shape, every variant of v:
 */
static void check_fma_order(const emb_kernels *const *v, int nv, int m,
                            int n, int kk, int bias)
{
	int ldx = kk + 3, ldy = n + 2;
	float *x = tu_rand_vec((size_t)m * ldx, 1.0f);
	float *w = tu_rand_vec((size_t)n * kk, 1.0f);
	float *b = tu_rand_vec((size_t)n, 1.0f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *want = malloc((size_t)m * ldy * sizeof(float));
	float *y = malloc((size_t)m * ldy * sizeof(float));

	cr_assert(wp && want && y);
	emb_pack_weights(wp, w, n, kk);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < ldy; j++) {
			float acc = 0.0f;
			for (int t = 0; j < n && t < kk; t++)
				acc = fmaf(x[(size_t)i * ldx + t], w[(size_t)j * kk + t],
				           acc);
			want[(size_t)i * ldy + j] = j >= n ? -777.0f :
			                            bias ? acc + b[j] : acc;
		}
	for (int i = 0; i < nv; i++) {
		for (size_t e = 0; e < (size_t)m * ldy; e++)
			y[e] = -777.0f;
		v[i]->gemm(y, ldy, x, ldx, wp, bias ? b : NULL, m, n, kk);
		for (size_t e = 0; e < (size_t)m * ldy; e++)
			cr_assert(!memcmp(&y[e], &want[e], sizeof(float)),
			          "%s gemm m=%d n=%d k=%d bias=%d: y[%zu][%zu] = "
			          "%.9g, the FMA order gives %.9g", v[i]->name, m, n,
			          kk, bias, e / (size_t)ldy, e % (size_t)ldy, y[e],
			          want[e]);
	}
	free(x); free(w); free(b); free(wp); free(want); free(y);
}

Test(kernels, gemm_simd_bitwise_fma_order)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);
	int nm = (int)(sizeof edge_m / sizeof edge_m[0]);
	int nn = (int)(sizeof edge_n / sizeof edge_n[0]);
	int nk = (int)(sizeof edge_k / sizeof edge_k[0]);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");
	for (int s = 0; s < nk * 3; s++)
		check_fma_order(v, nv, edge_m[(s * 5) % nm], edge_n[(s * 3) % nn],
		                edge_k[s % nk], s & 1);
}

/*
 * A k too long for one packed block of x (the AVX-512 GEMM packs at most
 * 147456 floats of x at a time: past k = 18432 even 8 rows take spans of
 * k), with rows that take several blocks: still the FMA order; and the
 * same k where x is read in place (4 panels or fewer).
 */
Test(kernels, gemm_simd_bitwise_long_k)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");
	check_fma_order(v, nv, 11, 100, 40000, 1);
	check_fma_order(v, nv, 20, 33, 18433, 0);
}

/* the row kernel of variant k for act (EMB_KACT_*), NULL for none */
static void (*act_kernel(const emb_kernels *k, int act))(float *, int)
{
	switch (act) {
	case EMB_KACT_GELU: return k->gelu;
	case EMB_KACT_GELU_TANH: return k->gelu_tanh;
	case EMB_KACT_RELU: return k->relu;
	default: return NULL;
	}
}

/*
 * gemm_act (fused epilogue) = gemm then the same variant's activation over
 * each row, bit for bit; odd shapes, ldx != k, ldy != n, with and without
 * bias; nothing written past n.  Values around +-4 so that every branch of
 * the activations (both signs, the erf clamp) is taken.
 */
/* one shape of gemm_act_equals_gemm_then_act */
static void check_act(const emb_kernels *k, int m, int n, int kk, int act,
                      int bias)
{
	int ldx = kk + 1, ldy = n + 3;
	float sc = 4.0f / sqrtf((float)kk);
	float *x = tu_rand_vec((size_t)m * ldx, 2.0f);
	float *w = tu_rand_vec((size_t)n * kk, sc);
	float *b = tu_rand_vec((size_t)n, 2.0f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *y0 = malloc((size_t)m * ldy * sizeof(float));
	float *y1 = malloc((size_t)m * ldy * sizeof(float));
	void (*f)(float *, int) = act_kernel(k, act);

	cr_assert(wp && y0 && y1);
	emb_pack_weights(wp, w, n, kk);
	for (size_t e = 0; e < (size_t)m * ldy; e++)
		y0[e] = y1[e] = -777.0f;
	k->gemm(y0, ldy, x, ldx, wp, bias ? b : NULL, m, n, kk);
	for (int r = 0; f && r < m; r++)
		f(y0 + (size_t)r * ldy, n);
	k->gemm_act(y1, ldy, x, ldx, wp, bias ? b : NULL, m, n, kk, act);
	cr_assert(!memcmp(y0, y1, (size_t)m * ldy * sizeof(float)),
	          "%s gemm_act act=%d m=%d n=%d k=%d bias=%d differs "
	          "from gemm + act", k->name, act, m, n, kk, bias);
	for (int r = 0; r < m; r++)
		for (int j = n; j < ldy; j++)
			cr_assert_eq(y1[(size_t)r * ldy + j], -777.0f,
			             "%s gemm_act wrote past n", k->name);
	free(x); free(w); free(b); free(wp); free(y0); free(y1);
}

Test(kernels, gemm_act_equals_gemm_then_act)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	const int acts[] = { EMB_KACT_NONE, EMB_KACT_GELU, EMB_KACT_GELU_TANH,
	                     EMB_KACT_RELU, 99 /* unknown: none */ };
	int na = (int)(sizeof acts / sizeof acts[0]);
	int nk = (int)(sizeof edge_k / sizeof edge_k[0]);

	for (int i = 0; i < nv; i++) {
		for (size_t s = 0; s < sizeof(gemm_shapes) / sizeof(gemm_shapes[0]); s++)
			for (int a = 0; a < na; a++)
				for (int bias = 0; bias < 2; bias++)
					check_act(v[i], gemm_shapes[s][0], gemm_shapes[s][1],
					          gemm_shapes[s][2], acts[a], bias);
		/* the epilogue runs on the last k block only: every k block
		 * edge, each activation in turn */
		for (int s = 0; s < nk; s++)
			check_act(v[i], edge_m[(s * 5) % (int)(sizeof edge_m / sizeof edge_m[0])],
			          edge_n[(s * 3) % (int)(sizeof edge_n / sizeof edge_n[0])],
			          edge_k[s], acts[s % na], s & 1);
	}
}

/* the fused SIMD epilogues against the scalar oracle (erff, tanhf) */
Test(kernels, gemm_act_simd_matches_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);
	const int acts[] = { EMB_KACT_GELU, EMB_KACT_GELU_TANH, EMB_KACT_RELU };

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");
	int m = 23, n = 70, kk = 97;
	float *x = tu_rand_vec((size_t)m * kk, 2.0f);
	float *w = tu_rand_vec((size_t)n * kk, 4.0f / sqrtf((float)kk));
	float *b = tu_rand_vec((size_t)n, 2.0f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *y0 = malloc((size_t)m * n * sizeof(float));
	float *y1 = malloc((size_t)m * n * sizeof(float));
	int neg = 0, big = 0;

	cr_assert(wp && y0 && y1);
	emb_pack_weights(wp, w, n, kk);
	emb_kernels_scalar.gemm(y0, n, x, kk, wp, b, m, n, kk);
	for (int e = 0; e < m * n; e++) {
		neg += y0[e] < -0.5f;
		big += fabsf(y0[e]) > 4.0f;
	}
	cr_assert(neg > 50 && big > 10, "test data must cover the activations");
	for (int i = 0; i < nv; i++)
		for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++) {
			emb_kernels_scalar.gemm_act(y0, n, x, kk, wp, b, m, n, kk, acts[a]);
			v[i]->gemm_act(y1, n, x, kk, wp, b, m, n, kk, acts[a]);
			for (int e = 0; e < m * n; e++)
				cr_assert(fabsf(y0[e] - y1[e]) <= 1e-5f * sqrtf((float)kk) *
				          (1.0f + fabsf(y0[e])), "%s gemm_act %d vs scalar at "
				          "%d: %.9g vs %.9g", v[i]->name, acts[a], e, y1[e], y0[e]);
		}
	free(x); free(w); free(b); free(wp); free(y0); free(y1);
}

/* a block of gemm_act computed alone equals the same block of the whole */
Test(kernels, gemm_act_blocks_bitwise_independent)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	int m = 31, n = 83, kk = 45;
	float *x = tu_rand_vec((size_t)m * kk, 2.0f);
	float *w = tu_rand_vec((size_t)n * kk, 0.6f);
	float *b = tu_rand_vec((size_t)n, 1.0f);
	float *wp = malloc(emb_pack_size(n, kk) * sizeof(float));
	float *full = malloc((size_t)m * n * sizeof(float));
	float *part = malloc((size_t)m * n * sizeof(float));

	cr_assert(wp && full && part);
	emb_pack_weights(wp, w, n, kk);
	for (int i = 0; i < nv; i++)
		for (int act = EMB_KACT_GELU; act <= EMB_KACT_RELU; act++) {
			v[i]->gemm_act(full, n, x, kk, wp, b, m, n, kk, act);
			for (int r0 = 0; r0 < m; r0 += 7)
				for (int p = 0; p * EMB_PANEL < n; p += 3) {
					int rows = m - r0 < 7 ? m - r0 : 7;
					int n0 = p * EMB_PANEL;
					int cols = n - n0 < 3 * EMB_PANEL ? n - n0 : 3 * EMB_PANEL;
					v[i]->gemm_act(part + (size_t)r0 * n + n0, n,
					               x + (size_t)r0 * kk, kk,
					               wp + (size_t)p * EMB_PANEL * kk, b + n0,
					               rows, cols, kk, act);
				}
			cr_assert(!memcmp(full, part, (size_t)m * n * sizeof(float)),
			          "%s act %d: blocks differ from the whole product",
			          v[i]->name, act);
		}
	free(x); free(w); free(b); free(wp); free(full); free(part);
}

/*
 * emb_linear_act_fwd = emb_linear_fwd then emb_act_fwd, bit for bit, for
 * every activation (fused: gelu, gelu_tanh, relu; two passes: tanh, silu),
 * with ldy == out and ldy > out, on enough rows for several row blocks and
 * both threads; columns past out untouched.
 */
Test(kernels, linear_act_fwd_equals_linear_then_act)
{
	char *dir = tu_fixture("minilm-l6");
	emb_model *m = NULL;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 2 };
	const int acts[] = { EMB_ACT_NONE, EMB_ACT_GELU, EMB_ACT_GELU_TANH,
	                     EMB_ACT_RELU, EMB_ACT_TANH, EMB_ACT_SILU };
	int rows = 203, in = 40, out = 75;
	float *x = tu_rand_vec((size_t)rows * in, 2.0f);
	float *w = tu_rand_vec((size_t)out * in, 0.6f);
	float *b = tu_rand_vec((size_t)out, 1.0f);
	float *wp = malloc(emb_pack_size(out, in) * sizeof(float));
	float *y0 = malloc((size_t)rows * out * sizeof(float));
	float *y1 = malloc((size_t)rows * (out + 6) * sizeof(float));
	emb_linear l = { .wp = wp, .b = b, .in = in, .out = out };

	cr_assert(wp && y0 && y1);
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "load: %s", err.msg);
	emb_pack_weights(wp, w, out, in);
	for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++)
		for (int pad = 0; pad <= 6; pad += 6) {
			int ldy = out + pad;
			emb_linear_fwd(m, y0, out, x, in, rows, &l);
			emb_act_fwd(m, y0, rows, out, acts[a]);
			for (size_t e = 0; e < (size_t)rows * ldy; e++)
				y1[e] = -555.0f;
			emb_linear_act_fwd(m, y1, ldy, x, in, rows, &l, acts[a]);
			for (int r = 0; r < rows; r++) {
				cr_assert(!memcmp(y0 + (size_t)r * out, y1 + (size_t)r * ldy,
				                  (size_t)out * sizeof(float)),
				          "act %d ldy %d: row %d differs", acts[a], ldy, r);
				for (int j = out; j < ldy; j++)
					cr_assert_eq(y1[(size_t)r * ldy + j], -555.0f);
			}
		}
	emb_model_free(m);
	free(dir); free(x); free(w); free(b); free(wp); free(y0); free(y1);
}

Test(kernels, pack_layout_and_overflow)
{
	float w[3 * 2] = { 1, 2, 3, 4, 5, 6 };  /* W (3,2) */
	float wp[16 * 2];

	cr_assert_eq(emb_pack_size(3, 2), 32);
	cr_assert_eq(emb_pack_size(17, 5), 32 * 5);
	cr_assert_eq(emb_pack_size(0, 5), 0);
	cr_assert_eq(emb_pack_size(-3, 5), 0);
	cr_assert_eq(emb_pack_size(5, 0), 0);
	emb_pack_weights(wp, w, 3, 2);
	cr_assert_eq(wp[0], 1); cr_assert_eq(wp[1], 3); cr_assert_eq(wp[2], 5);
	cr_assert_eq(wp[3], 0); cr_assert_eq(wp[16], 2); cr_assert_eq(wp[17], 4);
	cr_assert_eq(wp[18], 6); cr_assert_eq(wp[31], 0);
}

static const int vec_sizes[] = { 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 384, 1000 };
#define NSIZES (sizeof(vec_sizes) / sizeof(vec_sizes[0]))

Test(kernels, layernorm_matches_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");

	for (int i = 0; i < nv; i++)
		for (size_t s = 0; s < NSIZES; s++) {
			int n = vec_sizes[s];
			float *x = tu_rand_vec(n, 3.0f), *g = tu_rand_vec(n, 1.0f);
			float *b = tu_rand_vec(n, 1.0f), *y0 = malloc(n * sizeof(float));
			float *y1 = malloc(n * sizeof(float));
			for (int e = 0; e < n; e++)
				x[e] += 2.5f;   /* a mean far from 0 */
			emb_kernels_scalar.layernorm(y0, x, g, b, n, 1e-12f);
			v[i]->layernorm(y1, x, g, b, n, 1e-12f);
			for (int e = 0; e < n; e++)
				cr_assert(fabsf(y0[e] - y1[e]) <= 2e-6f * (1 + fabsf(y0[e])),
				          "%s layernorm n=%d at %d: %g vs %g", v[i]->name, n,
				          e, y1[e], y0[e]);
			/* in place */
			v[i]->layernorm(x, x, g, b, n, 1e-12f);
			cr_assert(!memcmp(x, y1, n * sizeof(float)));
			free(x); free(g); free(b); free(y0); free(y1);
		}
}

/* RMSNorm: every table has one and gives the scalar one's bits (they
 * all point at it), in place too; the scalar one is within float
 * rounding of the formula in double */
Test(kernels, rmsnorm_every_table)
{
	const char *isas[] = { "scalar", "avx2", "avxvnni", "avx512", "vnni",
	                       "amx" };

	for (size_t t = 0; t < sizeof(isas) / sizeof(isas[0]); t++) {
		const emb_kernels *k = emb_kernels_get(isas[t]);
		if (!k)
			continue;
		cr_assert(k->rmsnorm, "%s: rmsnorm", isas[t]);
		for (size_t s = 0; s < NSIZES; s++) {
			int n = vec_sizes[s];
			float *x = tu_rand_vec(n, 3.0f), *g = tu_rand_vec(n, 1.0f);
			float *y0 = malloc(n * sizeof(float));
			float *y1 = malloc(n * sizeof(float));
			double ss = 0;
			for (int e = 0; e < n; e++)
				ss += (double)x[e] * x[e];
			emb_kernels_scalar.rmsnorm(y0, x, g, n, 1e-6f);
			k->rmsnorm(y1, x, g, n, 1e-6f);
			cr_assert(!memcmp(y0, y1, n * sizeof(float)), "%s n=%d",
			          isas[t], n);
			for (int e = 0; e < n; e++) {
				double want = g[e] * (x[e] / sqrt(ss / n + 1e-6));
				cr_assert(fabs(y0[e] - want) <= 1e-5 * (1 + fabs(want)),
				          "n=%d at %d: %g vs %g", n, e, y0[e], want);
			}
			k->rmsnorm(x, x, g, n, 1e-6f);
			cr_assert(!memcmp(x, y1, n * sizeof(float)), "in place");
			free(x); free(g); free(y0); free(y1);
		}
	}
}

/* the documented order of the sum of squares: 16 partial sums (i mod
 * 16), folded i + i+8, i + i+4, i + i+2, i + i+1; and every table's
 * RMSNorm bit for bit the scalar one on rows of every length class with
 * zeros, huge values (squares overflowing to inf), subnormals and NaN */
Test(kernels, rmsnorm_order_and_special_values)
{
	static const int ns[] = { 1, 5, 15, 16, 17, 24, 31, 32, 33, 48, 128,
	                          256, 384, 768, 1024, 1537 };
	const char *isas[] = { "avx2", "avxvnni", "avx512", "vnni", "amx" };

	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
		int n = ns[t];
		float *x = tu_rand_vec(n, 3.0f), *g = tu_rand_vec(n, 1.0f);
		float *y0 = malloc(n * sizeof(float)), *y1 = malloc(n * sizeof(float));
		float p[16] = { 0 }, q[8], r4[4], r2[2];

		for (int i = 0; i < n; i++) {
			float sq = x[i] * x[i];
			p[i % 16] = p[i % 16] + sq;
		}
		for (int i = 0; i < 8; i++)
			q[i] = p[i] + p[i + 8];
		for (int i = 0; i < 4; i++)
			r4[i] = q[i] + q[i + 4];
		r2[0] = r4[0] + r4[2];
		r2[1] = r4[1] + r4[3];
		cr_assert_eq(emb_rmsnorm_sumsq(x, n), r2[0] + r2[1], "n=%d", n);
		for (int kind = 0; kind < 5; kind++) {
			float *z = malloc(n * sizeof(float));
			memcpy(z, x, n * sizeof(float));
			if (kind == 1)
				memset(z, 0, n * sizeof(float));
			if (kind == 2)
				z[n / 2] = 3e30f;       /* its square is inf */
			if (kind == 3)
				for (int i = 0; i < n; i++)
					z[i] = (float)(i % 5) * 1.4e-45f;
			if (kind == 4)
				z[n - 1] = NAN;
			emb_kernels_scalar.rmsnorm(y0, z, g, n, 1e-6f);
			for (size_t v = 0; v < sizeof(isas) / sizeof(isas[0]); v++) {
				const emb_kernels *k = emb_kernels_get(isas[v]);
				if (!k)
					continue;
				k->rmsnorm(y1, z, g, n, 1e-6f);
				for (int i = 0; i < n; i++)
					cr_assert(!memcmp(&y0[i], &y1[i], sizeof(float)) ||
					          (isnan(y0[i]) && isnan(y1[i])),
					          "%s n=%d kind %d at %d: %a vs %a", isas[v],
					          n, kind, i, y1[i], y0[i]);
			}
			free(z);
		}
		free(x); free(g); free(y0); free(y1);
	}
}

Test(kernels, layernorm_scalar_values)
{
	float x[4] = { 1, 2, 3, 4 }, g[4] = { 1, 1, 2, 1 }, b[4] = { 0, 0, 0, 1 }, y[4];
	/* mean 2.5, var 1.25 */
	emb_kernels_scalar.layernorm(y, x, g, b, 4, 0.0f);
	cr_assert_float_eq(y[0], -1.5f / sqrtf(1.25f), 1e-6);
	cr_assert_float_eq(y[2], 2 * 0.5f / sqrtf(1.25f), 1e-6);
	cr_assert_float_eq(y[3], 1 + 1.5f / sqrtf(1.25f), 1e-6);
}

Test(kernels, activations_scalar_values)
{
	float g[3] = { 1.0f, -1.0f, 3.0f }, t[2] = { 1.0f, -2.0f }, r[3] = { -1, 0, 2 };

	emb_kernels_scalar.gelu(g, 3);
	cr_assert_float_eq(g[0], 0.8413447460685429f, 1e-7);
	cr_assert_float_eq(g[1], -0.15865525393145707f, 1e-7);
	cr_assert_float_eq(g[2], 2.9959502001665753f, 1e-6);
	emb_kernels_scalar.gelu_tanh(t, 2);
	cr_assert_float_eq(t[0], 0.8411919906082768f, 1e-7);
	cr_assert_float_eq(t[1], -0.04540230591222932f, 1e-7);
	emb_kernels_scalar.relu(r, 3);
	cr_assert(r[0] == 0 && r[1] == 0 && r[2] == 2);
}

Test(kernels, activations_match_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");
	int n = 4099;
	float *x = malloc(n * sizeof(float)), *a = malloc(n * sizeof(float));
	float *b = malloc(n * sizeof(float));

	for (int e = 0; e < n; e++)   /* -12 .. 12 and a few extremes */
		x[e] = -12.0f + 24.0f * e / (n - 1);
	x[0] = -100.0f; x[1] = 100.0f; x[2] = 0.0f; x[3] = -1e-8f;
	for (int i = 0; i < nv; i++) {
		for (int which = 0; which < 3; which++) {
			for (size_t s = 0; s < NSIZES; s++) {
				int m = vec_sizes[s];
				memcpy(a, x, n * sizeof(float));
				memcpy(b, x, n * sizeof(float));
				if (which == 0) {
					emb_kernels_scalar.gelu(a, m); v[i]->gelu(b, m);
				} else if (which == 1) {
					emb_kernels_scalar.gelu_tanh(a, m); v[i]->gelu_tanh(b, m);
				} else {
					emb_kernels_scalar.relu(a, m); v[i]->relu(b, m);
				}
				for (int e = 0; e < n; e++)
					cr_assert(fabsf(a[e] - b[e]) <= 1e-6f + 2e-6f * fabsf(a[e]),
					          "%s act %d m=%d at %d (x=%g): %.9g vs %.9g",
					          v[i]->name, which, m, e, x[e], b[e], a[e]);
			}
			/* the whole range */
			memcpy(a, x, n * sizeof(float));
			memcpy(b, x, n * sizeof(float));
			if (which == 0) {
				emb_kernels_scalar.gelu(a, n); v[i]->gelu(b, n);
			} else if (which == 1) {
				emb_kernels_scalar.gelu_tanh(a, n); v[i]->gelu_tanh(b, n);
			} else {
				emb_kernels_scalar.relu(a, n); v[i]->relu(b, n);
			}
			for (int e = 0; e < n; e++)
				cr_assert(fabsf(a[e] - b[e]) <= 1e-6f + 2e-6f * fabsf(a[e]),
				          "%s act %d at x=%g: %.9g vs %.9g", v[i]->name,
				          which, x[e], b[e], a[e]);
		}
	}
	free(x); free(a); free(b);
}

typedef void (*softmax_fn)(float *x, int ld, int rows, int n, float scale,
                           float *inv);

/* table k's softmax (quintic) or softmax_bf16 (cubic) */
static softmax_fn softmax_of(const emb_kernels *k, int quintic)
{
	return quintic ? k->softmax : k->softmax_bf16;
}

/*
 * softmax and softmax_bf16: kernels.h's formula.  Every element within
 * its polynomial's error (softmax: 2.5e-7 relative, softmax_bf16: 8e-5;
 * plus the rounding of t, 2^-23 |t| ln 2) of 2^t for the exact
 * t = (x - m) a (a as a float) and the returned value within 1e-6
 * of 1 / their sum; the normalized result within the same of
 * softmax(x scale) (softmax_bf16: 1.6e-4); every table's elements and
 * sum the scalar one's bits (rows up to 1000, tails of every length,
 * scores that underflow).
 */
Test(kernels, softmax_formula_and_bits)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	float a = 0.125f * EMB_LOG2E_F;

	for (int q = 0; q < 2; q++)
	for (size_t s = 0; s < NSIZES; s++)
		for (int big = 0; big < 2; big++) {
			const char *what = q ? "softmax" : "softmax_bf16";
			int n = vec_sizes[s];
			float *x = tu_rand_vec(n, big ? 2000.0f : 40.0f);
			float *e = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
			float ie, ib, mxf = -INFINITY;
			double mx = -INFINITY, sum = 0, tsum = 0;

			cr_assert(e && b);
			for (int t = 0; t < n; t++) {
				mx = fmax(mx, x[t] * 0.125);
				mxf = fmaxf(mxf, x[t]);
			}
			for (int t = 0; t < n; t++)
				tsum += exp(x[t] * 0.125 - mx);
			memcpy(e, x, n * sizeof(float));
			softmax_of(&emb_kernels_scalar, q)(e, n, 1, n, 0.125f, &ie);
			for (int i = 0; i < n; i++) {
				double t = fmax(((double)x[i] - mxf) * a, -125);
				double ref = exp2(t);
				double tol = (q ? 2.5e-7 : 8e-5) + fabs(t) * 0x1p-23 * M_LN2;
				cr_assert(fabs(e[i] - ref) <= tol * ref,
				          "%s n=%d at %d: %g vs %g", what, n, i, e[i], ref);
				sum += e[i];
			}
			cr_assert(fabs(ie * sum - 1.0) < 1e-6, "%s: 1/sum %g, sum %g",
			          what, ie, sum);
			for (int i = 0; i < n; i++) {
				double p = exp(x[i] * 0.125 - mx) / tsum;
				double t = x[i] * 0.125 * M_LOG2E - mx * M_LOG2E;
				double tol = (q ? 1.3e-6 : 1.6e-4) + fabs(t) * 0x1p-24 * M_LN2;
				cr_assert(fabs(e[i] * ie - p) <= tol * p + 1e-30,
				          "%s n=%d at %d: %g vs %g", what, n, i, e[i] * ie, p);
			}
			for (int i = 0; i < nv; i++) {
				memcpy(b, x, n * sizeof(float));
				softmax_of(v[i], q)(b, n, 1, n, 0.125f, &ib);
				cr_assert(!memcmp(e, b, n * sizeof(float)),
				          "%s %s n=%d: not the scalar bits", v[i]->name,
				          what, n);
				cr_assert(!memcmp(&ie, &ib, sizeof(float)),
				          "%s %s n=%d: 1/sum %a vs %a", v[i]->name, what,
				          n, ib, ie);
			}
			free(x); free(e); free(b);
		}
}

/*
 * softmax and softmax_bf16 on scores of any finite magnitude (a model's
 * weights can make them 1e9 or 1e30): the max's exponential exactly
 * p(0) (F0, 1 + 2^-23; C0 for the cubic), every other one in [0, p(0)],
 * 1 / sum finite, in every table the scalar bits; a row of equal scores
 * is uniform
 */
Test(kernels, softmax_huge_scores)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);
	const float mags[] = { 3e9f, 1e20f, 3e38f };

	for (int q = 0; q < 2; q++)
	for (size_t k = 0; k < sizeof mags / sizeof mags[0]; k++)
		for (int same = 0; same < 2; same++) {
			enum { N = 37 };
			const char *what = q ? "softmax" : "softmax_bf16";
			float x[N], e[N], b[N], ie, ib;
			float p0 = q ? EMB_EXP2_F0 : EMB_EXP2_C0;

			for (int i = 0; i < N; i++)
				x[i] = same ? mags[k] :
				       mags[k] * (float)((i * 7) % N - 18) / 18;
			memcpy(e, x, sizeof x);
			softmax_of(&emb_kernels_scalar, q)(e, N, 1, N, 1.0f, &ie);
			cr_assert(isfinite(ie) && ie > 0, "%s: 1/sum %g at %g", what,
			          ie, mags[k]);
			for (int i = 0; i < N; i++) {
				cr_assert(e[i] >= 0 && e[i] <= p0, "%s: e %a at %g", what,
				          e[i], mags[k]);
				if (same || x[i] == mags[k])
					cr_assert(e[i] == p0, "%s: the max's e %a at %g",
					          what, e[i], mags[k]);
			}
			if (same)
				cr_assert(fabsf(ie * N * p0 - 1) < 1e-6,
				          "%s uniform: 1/sum %g", what, ie);
			for (int i = 0; i < nv; i++) {
				memcpy(b, x, sizeof x);
				softmax_of(v[i], q)(b, N, 1, N, 1.0f, &ib);
				cr_assert(!memcmp(e, b, sizeof e) && ie == ib,
				          "%s %s at %g: not the scalar bits",
				          v[i]->name, what, mags[k]);
			}
		}
}

/*
 * softmax and softmax_bf16 over a block of rows (row stride past n):
 * each row the bits of that row alone in the scalar table, its 1/sum
 * too, and the columns between n and the stride left as they were;
 * blocks of 1 to 5 rows (pairs and a last odd row), rows of every tail
 * length.
 */
Test(kernels, softmax_rows_as_alone)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v), ns[] = { 1, 15, 16, 17, 33, 222, 256 };

	for (int q = 0; q < 2; q++)
	for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++)
		for (int rows = 1; rows <= 5; rows++) {
			int n = ns[s], ld = n + 3;
			float *x = tu_rand_vec(rows * ld, 60.0f);
			float *e = malloc((size_t)rows * ld * sizeof(float));
			float *b = malloc((size_t)rows * ld * sizeof(float));
			float ie[5], ib[5];

			cr_assert(x && e && b);
			memcpy(e, x, (size_t)rows * ld * sizeof(float));
			for (int r = 0; r < rows; r++)
				softmax_of(&emb_kernels_scalar, q)(e + r * ld, n, 1, n,
				                                   0.125f, &ie[r]);
			for (int i = 0; i < nv; i++) {
				memcpy(b, x, (size_t)rows * ld * sizeof(float));
				softmax_of(v[i], q)(b, ld, rows, n, 0.125f, ib);
				cr_assert(!memcmp(e, b, (size_t)rows * ld * sizeof(float)),
				          "%s softmax%s rows=%d n=%d: not each row's bits "
				          "alone", v[i]->name, q ? "" : "_bf16", rows, n);
				cr_assert(!memcmp(ie, ib, (size_t)rows * sizeof(float)),
				          "%s softmax%s rows=%d n=%d: 1/sum", v[i]->name,
				          q ? "" : "_bf16", rows, n);
				for (int r = 0; r < rows; r++)
					cr_assert(!memcmp(b + r * ld + n, x + r * ld + n,
					                  3 * sizeof(float)),
					          "%s: row %d written past n", v[i]->name, r);
			}
			free(x); free(e); free(b);
		}
}

/*
 * silu: every table within 2 ulp-ish (3e-7 relative, 1e-30 absolute)
 * of the scalar one, alone and times g, in place and not; large
 * arguments of both signs saturate as the scalar one does
 */
Test(kernels, silu_matches_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_all_variants(v);

	for (size_t s = 0; s < NSIZES; s++) {
		int n = vec_sizes[s];
		float *x = tu_rand_vec(n, 12.0f), *g = tu_rand_vec(n, 2.0f);
		float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));

		cr_assert(a && b);
		x[0] = n > 1 ? 100.0f : -100.0f;
		x[n - 1] = n > 2 ? -100.0f : x[n - 1];
		for (int withg = 0; withg < 2; withg++)
			for (int i = 0; i < nv; i++) {
				const float *gg = withg ? g : NULL;
				emb_kernels_scalar.silu(a, x, gg, n);
				memcpy(b, x, n * sizeof(float));
				v[i]->silu(b, b, gg, n);        /* in place */
				for (int e = 0; e < n; e++) {
					double ref = x[e] / (1.0 + exp(-(double)x[e])) *
					             (gg ? gg[e] : 1.0);
					cr_assert(fabsf(a[e] - b[e]) <= 3e-7f * fabsf(a[e]) +
					          1e-30f, "%s silu n=%d at %d: %g vs %g",
					          v[i]->name, n, e, b[e], a[e]);
					cr_assert(fabs(b[e] - ref) <= 1e-6 * fabs(ref) + 1e-30,
					          "%s silu n=%d at %d: %g vs %g", v[i]->name,
					          n, e, b[e], ref);
				}
			}
		free(x); free(g); free(a); free(b);
	}
}

Test(kernels, add_dot_axpy_match_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);

	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");

	for (int i = 0; i < nv; i++)
		for (size_t s = 0; s < NSIZES; s++) {
			int n = vec_sizes[s];
			float *x = tu_rand_vec(n + 1, 1.0f), *y = tu_rand_vec(n + 1, 1.0f);
			float *a = malloc((n + 1) * sizeof(float));
			float *b = malloc((n + 1) * sizeof(float));
			double ref = 0, mag = 0;
			float d;
			for (int e = 0; e < n; e++) {
				ref += (double)x[e] * y[e];
				mag += fabs((double)x[e] * y[e]);
			}
			d = v[i]->dot(x, y, n);
			cr_assert(fabs(d - ref) <= 1e-6 * mag + 1e-7, "%s dot n=%d: %g vs %g",
			          v[i]->name, n, d, ref);
			cr_assert(fabsf(emb_kernels_scalar.dot(x, y, n) - (float)ref) <= 1e-6 * mag);
			memcpy(a, y, (n + 1) * sizeof(float));
			memcpy(b, y, (n + 1) * sizeof(float));
			emb_kernels_scalar.add(a, x, n);
			v[i]->add(b, x, n);
			cr_assert(!memcmp(a, b, (n + 1) * sizeof(float)), "%s add n=%d",
			          v[i]->name, n);
			memcpy(a, y, (n + 1) * sizeof(float));
			memcpy(b, y, (n + 1) * sizeof(float));
			emb_kernels_scalar.axpy(a, 0.37f, x, n);
			v[i]->axpy(b, 0.37f, x, n);
			for (int e = 0; e <= n; e++)
				cr_assert(fabsf(a[e] - b[e]) <= 1e-6f, "%s axpy n=%d at %d",
				          v[i]->name, n, e);
			cr_assert_eq(b[n], y[n], "%s axpy wrote past n", v[i]->name);
			free(x); free(y); free(a); free(b);
		}
}

/* the half kernels against the scalar ones, which widen each half as
 * base/half.h does: every half but the NaNs, odd lengths, and a sum of
 * rows added in turn (the static model's mean) bit for bit */
Test(kernels, f16_widen_and_add_match_scalar)
{
	const emb_kernels *v[5];
	int nv = tu_simd_variants(v);
	enum { N = 65536 };
	uint16_t *h = malloc(N * sizeof(*h));
	float *a = malloc((N + 1) * sizeof(float));
	float *b = malloc((N + 1) * sizeof(float));
	int n = 0;

	cr_assert(h && a && b);
	for (uint32_t u = 0; u < N; u++)
		if ((u & 0x7c00) != 0x7c00 || !(u & 0x3ff))
			h[n++] = (uint16_t)u;
	emb_kernels_scalar.f16_to_f32(a, h, n);
	for (int e = 0; e < n; e++)
		cr_assert_eq(a[e], emb_f16_to_f32(h[e]));
	cr_assert_eq(a[0x3c00], 1.0f);
	if (!nv)
		cr_skip_test("no SIMD kernels in this build or CPU");
	for (int i = 0; i < nv; i++) {
		for (size_t s = 0; s < NSIZES; s++) {
			int m = vec_sizes[s];
			a[m] = b[m] = 7.0f;
			emb_kernels_scalar.f16_to_f32(a, h + 1000 + s, m);
			v[i]->f16_to_f32(b, h + 1000 + s, m);
			cr_assert(!memcmp(a, b, (m + 1) * sizeof(float)), "%s f16_to_f32 n=%d",
			          v[i]->name, m);
			for (int r = 1; r < 9; r++) {
				const uint16_t *row = h + (size_t)r * 4099 % (size_t)(n - m);
				emb_kernels_scalar.add_f16(a, row, m);
				v[i]->add_f16(b, row, m);
			}
			cr_assert(!memcmp(a, b, (m + 1) * sizeof(float)), "%s add_f16 n=%d",
			          v[i]->name, m);
		}
		v[i]->f16_to_f32(b, h, n);
		emb_kernels_scalar.f16_to_f32(a, h, n);
		cr_assert(!memcmp(a, b, (size_t)n * sizeof(float)), "%s: every half",
		          v[i]->name);
	}
	free(h); free(a); free(b);
}

/*
 * The AVX-512 tables' fp32 GEMMs: the long chunks of k on AMD's cores,
 * the L1 ones elsewhere (the vendor read from /proc/cpuinfo against
 * cpuid's account where AVX-512 shows: an emulator such as valgrind
 * shows none, and a vendor of its own); the bf16 GEMM untouched by the
 * choice.
 */
Test(kernels, avx512_chunks_by_the_core)
{
	static const char *const isas[] = { "avx512", "vnni", "amx" };
	unsigned cpu = emb_cpu_features();
	int amd = tu_cpuinfo_has("vendor_id", "AuthenticAMD"), seen = 0;

	if (amd >= 0 && (cpu & EMB_CPU_AVX512))
		cr_assert_eq(!!(cpu & EMB_CPU_AMD), amd, "cpuid AMD %d, "
		             "/proc/cpuinfo %d", !!(cpu & EMB_CPU_AMD), amd);
#ifdef EMB_HAVE_AVX512
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		const emb_kernels *f = cpu & EMB_CPU_AMD ?
		                       &emb_kernels_avx512_long :
		                       &emb_kernels_avx512;
		if (!k)
			continue;
		seen++;
		cr_assert_eq(k->gemm, f->gemm, "%s: gemm not %s's", isas[i],
		             f->name);
		cr_assert_eq(k->gemm_act, f->gemm_act, "%s: gemm_act not %s's",
		             isas[i], f->name);
		cr_assert_eq(k->softmax, f->softmax, "%s", isas[i]);
	}
	cr_assert_neq(emb_kernels_avx512.gemm, emb_kernels_avx512_long.gemm);
	cr_assert_eq(emb_kernels_avx512.gemm_bf16,
	             emb_kernels_avx512_long.gemm_bf16);
#endif
	if (!seen)
		cr_skip_test("no AVX-512 table on this CPU or build");
}

Test(kernels, isa_selection_by_env)
{
	const emb_kernels *k = NULL;
	emb_err err = { "" };

	setenv("EMB_ISA", "scalar", 1);
	cr_assert_eq(emb_kernels_select(&k, &err), 0);
	cr_assert_eq(k, emb_kernels_get("scalar"));
	cr_assert_str_eq(k->name, "scalar");
	cr_assert_eq(k->gemm, emb_kernels_scalar.gemm);
	setenv("EMB_ISA", "sse9", 1);
	cr_assert_eq(emb_kernels_select(&k, &err), -1);
	cr_assert(strstr(err.msg, "EMB_ISA: unknown value 'sse9'"), "%s", err.msg);
	setenv("EMB_ISA", "avx512", 1);
	if (emb_kernels_get("avx512")) {
		cr_assert_eq(emb_kernels_select(&k, &err), 0);
		cr_assert_str_eq(k->name, "avx512");
	} else {
		cr_assert_eq(emb_kernels_select(&k, &err), -1);
		cr_assert(strstr(err.msg, "not supported"), "%s", err.msg);
	}
	/* amx: chosen where usable, else refused with the reason */
	setenv("EMB_ISA", "amx", 1);
	if (emb_kernels_get("amx")) {
		cr_assert_eq(emb_kernels_select(&k, &err), 0);
		cr_assert_str_eq(k->name, "amx");
	} else {
		cr_assert_eq(emb_kernels_select(&k, &err), -1);
		cr_assert(strstr(err.msg, "EMB_ISA: amx is not usable here: "),
		          "%s", err.msg);
	}
	unsetenv("EMB_ISA");
	cr_assert_eq(emb_kernels_select(&k, &err), 0);
	/* auto: the best table this CPU runs */
	if (emb_kernels_get("amx"))
		cr_assert_str_eq(k->name, "amx");
	else if (emb_kernels_get("vnni"))
		cr_assert_str_eq(k->name, "vnni");
	else if (emb_kernels_get("avx512"))
		cr_assert_str_eq(k->name, "avx512");
	else if (emb_kernels_get("avxvnni"))
		cr_assert_str_eq(k->name, "avxvnni");
	else if (emb_kernels_get("avx2"))
		cr_assert_str_eq(k->name, "avx2");
	else
		cr_assert_str_eq(k->name, "scalar");
	cr_assert_null(emb_kernels_get("neon"));
}
