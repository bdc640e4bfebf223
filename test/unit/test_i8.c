/*
 * test_i8.c - the int8 (W8A8) kernels of qkernels.h.
 *
 * 1. The row quantizer: the AVX-512 and AVX2 versions give the same
 *    bytes, scales and zero points as the scalar one (emb_u8_quantize_rows)
 *    on random rows of every length class, constant rows, one-signed rows,
 *    NaN and huge values; the scalar one dequantizes to within half a step.
 * 2. The scalar GEMM is exact: its integer sums equal a plain triple loop
 *    over the unpacked operands, and extreme operands (u = 255,
 *    q = +-127, k = 4096) do not overflow.
 * 3. The VNNI (AVX-512), AVX-VNNI, plain AVX2 and AMX-INT8 GEMMs equal
 *    the scalar one bit for bit on every tile tail (m 1..13 and past a
 *    96-row block, n across panel and 4-panel boundaries, k not a
 *    multiple of 4), with and without bias, with strides wider than the
 *    matrices, starting at a panel offset, and leave the memory around y
 *    untouched; the AMX one also on row counts around its 16-row tiles
 *    and 32-row blocks and k tails shorter than its 64-byte tiles.
 * 4. A W8A8 linear layer of a loaded model (splade-tiny, 2 threads) with
 *    a fused activation (emb_linear_act_fwd: gelu, gelu_tanh, relu) gives
 *    bit for bit emb_linear_fwd followed by the kernel's activation over
 *    whole rows, for row counts that split into column groups and into
 *    several row blocks, and for an output stride wider than the layer;
 *    emb_linear_i8_rows (one thread, a row block) gives the same.
 * 5. The smoothed row quantizer (x * cs): the portable one equals the
 *    naive reference (x * cs written out, then the plain quantizer) and
 *    the plain one when cs is all ones; the AVX2 and AVX-512 ones equal
 *    it on every length class, outlier rows, NaN, huge values and zero
 *    scales; every table has one.  A smoothed W8A8 model
 *    (bert-outlier-tiny): QKV and up carry power-of-two scales (small on
 *    the outlier channels), o and down none; the smoothed layer is much
 *    closer to fp32 than plain W8A8 on inputs with outlier channels, and
 *    emb_linear_i8_rows equals it bit for bit.
 * The SIMD parts are skipped (with a log line) where the CPU lacks them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/cpu.h"
#include "tool/emb-tool.h"
#include "nn/nn-internal.h"
#include "kern/qkernels.h"
#include "testutil.h"

static uint32_t rng = 12345;

static float frand(void)        /* [-1, 1) */
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

/* the quantizers' outputs for x (rows, k) stride ldx must agree */
static void check_quant(emb_u8_quant_fn f, const float *x, int ldx, int rows,
                        int k, const char *what)
{
	int kp = (k + 3) / 4 * 4, ldu = kp + 8;
	uint8_t *u1 = malloc((size_t)rows * ldu), *u2 = malloc((size_t)rows * ldu);
	float *s1 = malloc((size_t)rows * 4), *s2 = malloc((size_t)rows * 4);
	int32_t *z1 = malloc((size_t)rows * 4), *z2 = malloc((size_t)rows * 4);

	memset(u1, 0xa5, (size_t)rows * ldu);
	memset(u2, 0xa5, (size_t)rows * ldu);
	emb_u8_quantize_rows(u1, ldu, s1, z1, x, ldx, rows, k);
	f(u2, ldu, s2, z2, x, ldx, rows, k);
	for (int i = 0; i < rows; i++) {
		cr_expect_eq(memcmp(&s1[i], &s2[i], 4), 0, "%s k %d row %d: scale %g vs %g",
		             what, k, i, s1[i], s2[i]);
		cr_expect_eq(z1[i], z2[i], "%s k %d row %d: zero point", what, k, i);
		cr_expect_eq(memcmp(u1 + (size_t)i * ldu, u2 + (size_t)i * ldu, (size_t)kp),
		             0, "%s k %d row %d: bytes differ", what, k, i);
		/* past kp: untouched */
		for (int c = kp; c < ldu; c++)
			cr_expect_eq(u2[(size_t)i * ldu + c], 0xa5, "%s: wrote past kp", what);
		for (int c = k; c < kp; c++)
			cr_expect_eq(u2[(size_t)i * ldu + c], 0, "%s: padding not zero", what);
	}
	free(u1); free(u2); free(s1); free(s2); free(z1); free(z2);
}

Test(i8, quantize_rows_scalar_semantics)
{
	float x[37];
	uint8_t u[40];
	float s;
	int32_t z;

	for (int i = 0; i < 37; i++)
		x[i] = frand() * 5 + 1;
	emb_u8_quantize_rows(u, 40, &s, &z, x, 37, 1, 37);
	cr_assert(s > 0);
	cr_assert(z >= 0 && z <= 255);
	for (int i = 0; i < 37; i++)
		cr_expect(fabsf(s * (float)(u[i] - z) - x[i]) <= 0.5001f * s,
		          "x[%d] %g -> %d", i, x[i], u[i]);
	for (int i = 37; i < 40; i++)
		cr_expect_eq(u[i], 0);
	/* an all-zero row: scale 1, zero point 0, bytes 0 */
	memset(x, 0, sizeof(x));
	emb_u8_quantize_rows(u, 40, &s, &z, x, 37, 1, 37);
	cr_expect_eq(s, 1.0f);
	cr_expect_eq(z, 0);
	for (int i = 0; i < 37; i++)
		cr_expect_eq(u[i], 0);
	/* all positive: the range still includes 0, so 0 maps to zero point 0
	 * and the maximum to 255 */
	for (int i = 0; i < 37; i++)
		x[i] = 1.0f + (float)i;
	emb_u8_quantize_rows(u, 40, &s, &z, x, 37, 1, 37);
	cr_expect_eq(z, 0);
	cr_expect_eq(u[36], 255);
	/* all negative: the minimum maps to 0, zero point 255 */
	for (int i = 0; i < 37; i++)
		x[i] = -1.0f - (float)i;
	emb_u8_quantize_rows(u, 40, &s, &z, x, 37, 1, 37);
	cr_expect_eq(z, 255);
	cr_expect_eq(u[36], 0);
	cr_expect_eq(u[0], 255 - (int)nearbyintf(1.0f / s));
}

/* two rows (stride ldx, k) whose ranges underflow the scale: subnormal
 * values (the scale rounds to 0, its inverse is inf) and values near
 * FLT_MIN (a subnormal scale, so x * inv is far above 255) */
static void tiny_rows(float *x, int ldx, int k)
{
	for (int c = 0; c < k; c++) {
		x[c] = (float)(c % 5) * 1.4e-45f;
		x[ldx + c] = (float)((c % 7) - 3) * 1.2e-38f * (c % 2 ? 1 : 0.37f);
	}
}

/* f == the scalar quantizer on rows of every length class and kind */
static void check_quant_all(emb_u8_quant_fn f, const char *what)
{
	int ks[] = { 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 384, 1536, 1537 };

	for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
		int k = ks[t], rows = 9, ldx = k + 5;
		float *x = malloc((size_t)rows * ldx * sizeof(float));
		for (int i = 0; i < rows * ldx; i++)
			x[i] = frand() * (1 + i % 7) + (i % 11 == 0 ? 3.0f : 0.0f);
		tiny_rows(x + 7 * ldx, ldx, k);
		/* row 1 all positive, row 2 all negative, row 3 zero, row 4
		 * exact ties (x * inv on .5), row 5 one NaN and one huge value */
		for (int c = 0; c < k; c++) {
			x[1 * ldx + c] = fabsf(x[1 * ldx + c]) + 0.25f;
			x[2 * ldx + c] = -fabsf(x[2 * ldx + c]) - 0.25f;
			x[3 * ldx + c] = 0;
			x[4 * ldx + c] = (float)((c % 511) - 255) * 0.5f;
		}
		x[5 * ldx + k / 2] = NAN;
		if (k > 2)
			x[5 * ldx + k - 1] = 3e38f;
		check_quant(f, x, ldx, rows, k, what);
		free(x);
	}
}

Test(i8, quantize_rows_avx512_equals_scalar)
{
	emb_u8_quant_fn f = emb_u8_quantize_avx512();

	if (!f)
		cr_skip_test("no AVX-512 quantizer in this build or CPU");
	if (emb_kernels_get("vnni"))
		cr_expect_eq(emb_kernels_get("vnni")->u8_quantize, f);
	check_quant_all(f, "avx512");
}

/* every table pairs its int8 GEMM with a quantizer; the scalar one is
 * all scalar (the oracle) */
Test(i8, tables_pair_gemm_and_quantizer)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };
	const emb_kernels *s = emb_kernels_get("scalar");

	cr_assert(s);
	cr_assert_eq(s->gemm_i8, emb_gemm_i8_scalar);
	cr_assert_eq(s->u8_quantize, emb_u8_quantize_rows);
	cr_assert_str_eq(s->i8_name, "scalar");
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		if (!k)
			continue;
		cr_assert_str_eq(k->name, isas[i]);
		cr_assert(k->gemm && k->gemm_i8 && k->u8_quantize && k->i8_name);
	}
	if (emb_kernels_get("avxvnni"))
		cr_assert_eq(emb_kernels_get("avxvnni")->gemm_i8,
		             emb_gemm_i8_avxvnni());
	if (emb_kernels_get("vnni"))
		cr_assert_eq(emb_kernels_get("vnni")->gemm_i8, emb_gemm_i8_vnni());
	/* no int8 table of a SIMD build falls back to the scalar GEMM */
	if (emb_kernels_get("avx2")) {
		cr_assert_eq(emb_kernels_get("avx2")->gemm_i8, emb_gemm_i8_avx2());
		cr_assert_str_eq(emb_kernels_get("avx2")->i8_name, "avx2");
	}
	if (emb_kernels_get("avx512"))
		cr_assert_eq(emb_kernels_get("avx512")->gemm_i8, emb_gemm_i8_avx2());
}

Test(i8, quantize_rows_avx2_equals_scalar)
{
	emb_u8_quant_fn f = emb_u8_quantize_avx2();

	if (!f)
		cr_skip_test("no AVX2 quantizer in this build or CPU");
	check_quant_all(f, "avx2");
}

/* random operands for a GEMM of (m, n, k); everything the caller frees */
typedef struct prob {
	int m, n, k, kp, ldu;
	float *x, *w, *b, *ws, *xs;
	int8_t *q, *wp;
	uint8_t *u;
	int32_t *xz, *wsum;
} prob;

static void prob_make(prob *p, int m, int n, int k, int extreme)
{
	p->m = m;
	p->n = n;
	p->k = k;
	p->kp = (k + 3) / 4 * 4;
	p->ldu = p->kp + 12;
	p->x = malloc((size_t)m * k * 4);
	p->w = malloc((size_t)n * k * 4);
	p->b = malloc((size_t)n * 4);
	p->ws = malloc((size_t)n * 4);
	p->xs = malloc((size_t)m * 4);
	p->q = malloc((size_t)n * k);
	p->wp = malloc(emb_i8_pack_size(n, k));
	p->u = malloc((size_t)m * p->ldu);
	p->xz = malloc((size_t)m * 4);
	p->wsum = malloc((size_t)n * 4);
	for (int i = 0; i < m * k; i++)
		p->x[i] = extreme ? 1.0f : frand() * 3 + (i % 5 == 0 ? 1 : 0);
	for (int i = 0; i < n * k; i++)
		p->w[i] = extreme ? ((i / k) % 2 ? -1.0f : 1.0f) : frand() * 0.2f;
	for (int j = 0; j < n; j++)
		p->b[j] = frand();
	emb_i8_quantize_rows(p->q, p->ws, p->w, n, k);
	for (int j = 0; j < n; j++) {
		p->wsum[j] = 0;
		for (int kk = 0; kk < k; kk++)
			p->wsum[j] += p->q[(size_t)j * k + kk];
	}
	emb_i8_pack(p->wp, p->q, n, k);
	emb_u8_quantize_rows(p->u, p->ldu, p->xs, p->xz, p->x, k, m, k);
}

static void prob_free(prob *p)
{
	free(p->x); free(p->w); free(p->b); free(p->ws); free(p->xs);
	free(p->q); free(p->wp); free(p->u); free(p->xz); free(p->wsum);
}

/* the scalar kernel against the formula on unpacked operands */
static void check_scalar_exact(const prob *p)
{
	int m = p->m, n = p->n, k = p->k, ldy = n + 3;
	float *y = malloc((size_t)m * ldy * 4);

	emb_gemm_i8_scalar(y, ldy, p->u, p->ldu, p->xs, p->xz, p->wp, p->ws,
	                   p->wsum, p->b, m, n, p->kp);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			int64_t acc = 0;
			for (int kk = 0; kk < k; kk++)
				acc += (int64_t)p->u[(size_t)i * p->ldu + kk] *
				       p->q[(size_t)j * k + kk];
			acc -= (int64_t)p->xz[i] * p->wsum[j];
			cr_assert(acc >= INT32_MIN && acc <= INT32_MAX);
			float sc = p->xs[i] * p->ws[j];
			float want = sc * (float)acc + p->b[j];
			cr_expect_eq(y[(size_t)i * ldy + j], want, "%dx%dx%d [%d,%d]: %g vs %g",
			             m, n, k, i, j, y[(size_t)i * ldy + j], want);
		}
	free(y);
}

Test(i8, scalar_gemm_exact)
{
	int shapes[][3] = { { 1, 1, 1 }, { 3, 17, 5 }, { 7, 33, 64 }, { 2, 16, 7 } };
	prob p;

	for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		prob_make(&p, shapes[t][0], shapes[t][1], shapes[t][2], 0);
		check_scalar_exact(&p);
		prob_free(&p);
	}
	/* u = 255 everywhere, q = +-127, long k: the int32 sums hold */
	prob_make(&p, 2, 3, 4096, 1);
	for (int i = 0; i < 2 * p.ldu; i++)
		cr_assert(i % p.ldu >= 4096 || p.u[i] == 255);
	check_scalar_exact(&p);
	prob_free(&p);
}

/* kernel f == scalar, bit for bit, over (m, n) at panel offset p0 */
static void check_same(emb_gemm_i8_fn f, const prob *p, int m, int n, int p0,
                       int bias, const char *what)
{
	int ldy = n + 19, guard = 16, kp = p->kp;
	size_t sz = (size_t)m * ldy + 2 * guard;
	float *y1 = malloc(sz * 4), *y2 = malloc(sz * 4);
	const float *b = bias ? p->b + 16 * p0 : NULL;

	for (size_t i = 0; i < sz; i++)
		y1[i] = y2[i] = -7.5f;
	emb_gemm_i8_scalar(y1 + guard, ldy, p->u, p->ldu, p->xs, p->xz,
	                   p->wp + (size_t)16 * p0 * kp, p->ws + 16 * p0,
	                   p->wsum + 16 * p0, b, m, n, kp);
	f(y2 + guard, ldy, p->u, p->ldu, p->xs, p->xz,
	  p->wp + (size_t)16 * p0 * kp, p->ws + 16 * p0, p->wsum + 16 * p0, b,
	  m, n, kp);
	/* one assertion per call (per element would be slow): the first
	 * difference, and nothing written outside the m x n block */
	long bad = -1, out = -1;
	for (size_t i = 0; i < sz; i++) {
		size_t o = i - guard;
		int inside = i >= (size_t)guard && o < (size_t)m * ldy &&
		             (int)(o % ldy) < n;
		if (inside && bad < 0 && memcmp(&y1[i], &y2[i], 4))
			bad = (long)o;
		if (!inside && out < 0 && y2[i] != -7.5f)
			out = (long)i;
	}
	cr_expect(bad < 0, "%s %dx%dx%d (panel %d, bias %d) [%ld,%ld]: %g vs %g",
	          what, m, n, p->k, p0, bias, bad / ldy, bad % ldy,
	          bad < 0 ? 0 : y1[guard + bad], bad < 0 ? 0 : y2[guard + bad]);
	cr_expect(out < 0, "%s %dx%d: wrote outside y at %ld", what, m, n, out);
	free(y1);
	free(y2);
}

static void check_kernel(emb_gemm_i8_fn f, const char *what)
{
	int ms[] = { 1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 96, 97 };
	int ns[] = { 1, 15, 16, 17, 33, 48, 63, 64, 65, 80, 130 };
	int ks[] = { 1, 5, 64, 387 };
	prob p;

	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		prob_make(&p, 97, 130, ks[a], 0);
		for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
			for (size_t r = 0; r < sizeof(ms) / sizeof(ms[0]); r++)
				check_same(f, &p, ms[r], ns[c], 0, (int)(r + c) % 2, what);
		/* column blocks that start past panel 0 (a task's share) */
		check_same(f, &p, 13, 130 - 16, 1, 1, what);
		check_same(f, &p, 6, 130 - 48, 3, 0, what);
		prob_free(&p);
	}
	prob_make(&p, 8, 70, 4096, 1);
	check_same(f, &p, 8, 70, 0, 1, what);
	prob_free(&p);
}

Test(i8, vnni_equals_scalar)
{
	emb_gemm_i8_fn f = emb_gemm_i8_vnni();

	if (!f)
		cr_skip_test("no AVX-512 VNNI kernel in this build or CPU");
	check_kernel(f, "vnni");
}

/* the plain AVX2 kernel (16-bit products): the extreme operands of
 * check_kernel's last problem (u 255, q +-127) are where vpmaddubsw
 * would saturate */
Test(i8, avx2_equals_scalar)
{
	emb_gemm_i8_fn f = emb_gemm_i8_avx2();
	prob p;

	if (!f)
		cr_skip_test("no AVX2 int8 kernel in this build or CPU");
	check_kernel(f, "avx2");
	/* every row tail (1..3 rows past a 3-row tile) at odd k */
	prob_make(&p, 9, 37, 23, 0);
	for (int m = 1; m <= 9; m++)
		check_same(f, &p, m, 37, 0, m % 2, "avx2 odd");
	prob_free(&p);
	prob_make(&p, 5, 19, 1001, 1);
	check_same(f, &p, 5, 19, 0, 1, "avx2 extreme");
	check_same(f, &p, 4, 3, 1, 0, "avx2 extreme panel 1");
	prob_free(&p);
}

Test(i8, avxvnni_equals_scalar)
{
	emb_gemm_i8_fn f = emb_gemm_i8_avxvnni();

	if (!f)
		cr_skip_test("no AVX-VNNI kernel in this build or CPU");
	check_kernel(f, "avxvnni");
}

/* AMX-INT8: check_kernel's shapes, then every row count around its
 * 16-row tiles and 32-row blocks, k tails of every length below a tile
 * (kp % 64 = 4 .. 60) and none, odd panel counts */
Test(i8, amx_equals_scalar)
{
	emb_gemm_i8_fn f = emb_gemm_i8_amx();
	int ms[] = { 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 95 };
	int ks[] = { 60, 63, 128, 129, 191, 384 };
	prob p;

	if (!f)
		cr_skip_test("no AMX-INT8 kernel in this build, CPU or OS (%s)",
		             emb_cpu_amx_why() ? emb_cpu_amx_why() : "build");
	check_kernel(f, "amx");
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		prob_make(&p, 95, 81, ks[a], 0);
		for (size_t r = 0; r < sizeof(ms) / sizeof(ms[0]); r++) {
			check_same(f, &p, ms[r], 81, 0, (int)r % 2, "amx");
			check_same(f, &p, ms[r], 33, 1, 1, "amx panel 1");
		}
		prob_free(&p);
	}
	prob_make(&p, 40, 50, 2000, 1);
	check_same(f, &p, 40, 50, 0, 1, "amx extreme");
	prob_free(&p);
	if (emb_kernels_get("amx")) {
		cr_expect_eq(emb_kernels_get("amx")->gemm_i8, f);
		cr_expect_str_eq(emb_kernels_get("amx")->i8_name, "amx");
	}
}

/* the row quantizer then the GEMM, as a W8A8 linear layer runs them, stays
 * close to the float product */
Test(i8, close_to_float)
{
	const emb_kernels *k = NULL;
	emb_err err;
	emb_gemm_i8_fn f;
	const char *name;
	prob p;

	cr_assert_eq(emb_kernels_select(&k, &err), 0, "%s", err.msg);
	f = k->gemm_i8;
	name = k->i8_name;
	cr_assert(f && name && k->u8_quantize);
	prob_make(&p, 9, 40, 384, 0);
	{
		float *y = malloc((size_t)9 * 40 * 4);
		uint8_t *u = malloc((size_t)9 * p.kp);
		k->u8_quantize(u, p.kp, p.xs, p.xz, p.x, p.k, 9, p.k);
		f(y, 40, u, p.kp, p.xs, p.xz, p.wp, p.ws, p.wsum, p.b, 9, 40, p.kp);
		for (int i = 0; i < 9; i++)
			for (int j = 0; j < 40; j++) {
				double ref = p.b[j];
				for (int kk = 0; kk < p.k; kk++)
					ref += (double)p.x[i * p.k + kk] * p.w[j * p.k + kk];
				cr_expect(fabs(y[i * 40 + j] - ref) <= 0.02 * sqrt(p.k),
				          "%s [%d,%d]: %g vs float %g", name, i, j,
				          y[i * 40 + j], ref);
			}
		free(y);
		free(u);
	}
	prob_free(&p);
}

Test(i8, linear_act_fused_equals_two_passes)
{
	char *dir = tu_fixture("splade-tiny");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 2, .prec = { .w8 = 1, .a8 = 1 } };
	emb_linear L;
	const char *wn[1] = { "encoder.layer.1.intermediate.dense.weight" };
	const char *bn[1] = { "encoder.layer.1.intermediate.dense.bias" };
	int outs[1] = { 512 }, H = 128, I = 512, ldy = 512 + 24;
	int acts[3] = { EMB_ACT_GELU, EMB_ACT_GELU_TANH, EMB_ACT_RELU };
	int nrows[3] = { 3, 96, 203 };
	float *x = malloc((size_t)203 * H * 4);
	float *y1 = malloc((size_t)203 * ldy * 4), *y2 = malloc((size_t)203 * ldy * 4);

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_linear_cat(&L, m, 1, wn, bn, outs, H, NULL, &err), 0,
	             "%s", err.msg);
	cr_assert(L.wq, "the layer has int8 panels (W8A8)");
	cr_assert(!L.wp && !L.wb, "W8A8 keeps no float panels beside them");
	for (int i = 0; i < 203 * H; i++)
		x[i] = frand() * 2;
	for (int a = 0; a < 3; a++)
		for (int r = 0; r < 3; r++) {
			int rows = nrows[r];
			long bad = -1, changed = 0;
			for (int i = 0; i < 203 * ldy; i++)
				y1[i] = y2[i] = 1.5f;
			emb_linear_act_fwd(m, y1, ldy, x, H, rows, &L, acts[a]);
			emb_linear_fwd(m, y2, ldy, x, H, rows, &L);
			for (int i = 0; i < rows; i++) {
				float *row = y2 + (size_t)i * ldy;
				float before = row[0];
				if (acts[a] == EMB_ACT_GELU)
					m->k->gelu(row, I);
				else if (acts[a] == EMB_ACT_GELU_TANH)
					m->k->gelu_tanh(row, I);
				else
					m->k->relu(row, I);
				changed += row[0] != before;
			}
			for (long i = 0; i < 203L * ldy && bad < 0; i++)
				if (memcmp(&y1[i], &y2[i], 4))
					bad = i;
			cr_expect(bad < 0, "act %d, %d rows: [%ld,%ld] %g vs %g", acts[a],
			          rows, bad / ldy, bad % ldy, bad < 0 ? 0 : y1[bad],
			          bad < 0 ? 0 : y2[bad]);
			cr_expect(changed > 0, "act %d, %d rows: the activation did nothing",
			          acts[a], rows);
		}
	/* the single-thread row-block form, with and without activation */
	for (int r = 0; r < 2; r++) {
		int rows = r ? 96 : 7, kact = r ? EMB_KACT_GELU : EMB_KACT_NONE;
		size_t need = emb_linear_i8_scratch(&L, rows);
		uint8_t *sc = malloc(need);
		cr_assert(need >= (size_t)rows * (H + 8));
		for (int i = 0; i < 203 * ldy; i++)
			y1[i] = y2[i] = 1.5f;
		emb_linear_act_fwd(m, y1, ldy, x + H, H, rows, &L,
		                   r ? EMB_ACT_GELU : EMB_ACT_NONE);
		emb_linear_i8_rows(m, y2, ldy, x + H, H, rows, &L, kact, sc);
		cr_expect_eq(memcmp(y1, y2, (size_t)203 * ldy * 4), 0,
		             "emb_linear_i8_rows (%d rows) != emb_linear_act_fwd", rows);
		free(sc);
	}
	emb_model_free(m);
	free(x); free(y1); free(y2);
	free(dir);
}

/* ---- the smoothed row quantizer (x * cs) ---- */

/* the naive reference: x * cs written out, then emb_u8_quantize_rows */
static void quant_scaled_ref(uint8_t *u, int ldu, float *xs, int32_t *xz,
                             const float *x, int ldx, int rows, int k,
                             const float *cs)
{
	float *t = malloc((size_t)rows * (size_t)(k ? k : 1) * sizeof(float));

	for (int i = 0; i < rows; i++)
		for (int c = 0; c < k; c++)
			t[(size_t)i * k + c] = x[(size_t)i * ldx + c] * cs[c];
	emb_u8_quantize_rows(u, ldu, xs, xz, t, k, rows, k);
	free(t);
}

/* f == the reference on x (rows, k) stride ldx with scales cs (k) */
static void check_quant_scaled(emb_u8_quant_scaled_fn f, const float *x,
                               int ldx, int rows, int k, const float *cs,
                               const char *what)
{
	int kp = (k + 3) / 4 * 4, ldu = kp + 8;
	uint8_t *u1 = malloc((size_t)rows * ldu), *u2 = malloc((size_t)rows * ldu);
	float *s1 = malloc((size_t)rows * 4), *s2 = malloc((size_t)rows * 4);
	int32_t *z1 = malloc((size_t)rows * 4), *z2 = malloc((size_t)rows * 4);

	memset(u1, 0xa5, (size_t)rows * ldu);
	memset(u2, 0xa5, (size_t)rows * ldu);
	quant_scaled_ref(u1, ldu, s1, z1, x, ldx, rows, k, cs);
	f(u2, ldu, s2, z2, x, ldx, rows, k, cs);
	for (int i = 0; i < rows; i++) {
		cr_expect_eq(memcmp(&s1[i], &s2[i], 4), 0, "%s k %d row %d: scale %g "
		             "vs %g", what, k, i, s1[i], s2[i]);
		cr_expect_eq(z1[i], z2[i], "%s k %d row %d: zero point", what, k, i);
		cr_expect_eq(memcmp(u1 + (size_t)i * ldu, u2 + (size_t)i * ldu,
		                    (size_t)kp), 0, "%s k %d row %d: bytes differ",
		             what, k, i);
		for (int c = kp; c < ldu; c++)
			cr_expect_eq(u2[(size_t)i * ldu + c], 0xa5, "%s: wrote past kp",
			             what);
	}
	free(u1); free(u2); free(s1); free(s2); free(z1); free(z2);
}

/* every length class; outlier rows (a few columns 64x the rest, and
 * scales that undo them), NaN, huge values, zero scales */
static void check_quant_scaled_all(emb_u8_quant_scaled_fn f, const char *what)
{
	int ks[] = { 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 384, 1537 };

	for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
		int k = ks[t], rows = 9, ldx = k + 5;
		float *x = malloc((size_t)rows * ldx * sizeof(float));
		float *cs = malloc((size_t)k * sizeof(float));
		for (int i = 0; i < rows * ldx; i++)
			x[i] = frand() * (1 + i % 7);
		tiny_rows(x + 7 * ldx, ldx, k);
		for (int c = 0; c < k; c++) {
			int out = c % 29 == 5;
			cs[c] = out ? 0.015625f : c % 3 ? 1.0f : frand() + 1.5f;
			x[0 * ldx + c] *= out ? 64.0f : 1.0f;
			x[1 * ldx + c] = fabsf(x[1 * ldx + c]) + 0.25f;
			x[2 * ldx + c] = -fabsf(x[2 * ldx + c]) - 0.25f;
			x[3 * ldx + c] = 0;
			x[4 * ldx + c] = (float)((c % 511) - 255) * 0.5f;
		}
		x[5 * ldx + k / 2] = NAN;
		if (k > 2)
			x[5 * ldx + k - 1] = 3e38f;
		check_quant_scaled(f, x, ldx, rows, k, cs, what);
		for (int c = 0; c < k; c++)     /* all-zero scales: zero rows */
			cs[c] = 0;
		check_quant_scaled(f, x, ldx, rows, k, cs, what);
		free(x);
		free(cs);
	}
}

Test(i8, quantize_scaled_scalar_equals_reference)
{
	float x[2 * 21], cs[21];
	uint8_t u[2 * 24];
	float s[2];
	int32_t z[2];

	check_quant_scaled_all(emb_u8_quantize_rows_scaled, "scalar");
	/* scales 1: the plain quantizer, bit for bit */
	for (int c = 0; c < 21; c++)
		cs[c] = 1;
	for (int i = 0; i < 2 * 21; i++)
		x[i] = frand() * 3;
	check_quant_scaled(emb_u8_quantize_rows_scaled, x, 21, 2, 21, cs, "ones");
	{
		uint8_t u1[2 * 24];
		float s1[2];
		int32_t z1[2];
		emb_u8_quantize_rows(u1, 24, s1, z1, x, 21, 2, 21);
		emb_u8_quantize_rows_scaled(u, 24, s, z, x, 21, 2, 21, cs);
		cr_expect_eq(memcmp(u, u1, sizeof(u)), 0);
		cr_expect_eq(memcmp(s, s1, sizeof(s)), 0);
		cr_expect_eq(memcmp(z, z1, sizeof(z)), 0);
	}
	/* an outlier column scaled back: the other columns keep their
	 * resolution (within half a step of a range set by them) */
	for (int c = 0; c < 21; c++) {
		x[c] = frand();
		cs[c] = 1;
	}
	x[7] = 64.0f;
	cs[7] = 1.0f / 64;
	emb_u8_quantize_rows_scaled(u, 24, s, z, x, 21, 1, 21, cs);
	cr_expect(s[0] < 2.01f / 255, "scale %g: the outlier set the range", s[0]);
	for (int c = 0; c < 21; c++)
		cr_expect(fabsf(s[0] * (float)(u[c] - z[0]) - x[c] * cs[c]) <=
		          0.5001f * s[0], "x[%d] %g -> %d", c, x[c] * cs[c], u[c]);
}

Test(i8, quantize_scaled_avx2_equals_scalar)
{
	emb_u8_quant_scaled_fn f = emb_u8_quantize_scaled_avx2();

	if (!f)
		cr_skip_test("no AVX2 quantizer in this build or CPU");
	if (emb_kernels_get("avx2"))
		cr_expect_eq(emb_kernels_get("avx2")->u8_quantize_scaled, f);
	check_quant_scaled_all(f, "avx2");
}

Test(i8, quantize_scaled_avx512_equals_scalar)
{
	emb_u8_quant_scaled_fn f = emb_u8_quantize_scaled_avx512();

	if (!f)
		cr_skip_test("no AVX-512 quantizer in this build or CPU");
	if (emb_kernels_get("vnni"))
		cr_expect_eq(emb_kernels_get("vnni")->u8_quantize_scaled, f);
	check_quant_scaled_all(f, "avx512");
}

/*
 * The AVX-512 weight quantizer: emb_i8_quantize_rows' bytes and scales
 * for rows of every tail length (k 1-70, 384, 1537), a row of zeros,
 * ties at .5 steps (w a multiple of ws / 2), the largest |w| negative;
 * the tables from avx512 up use it.
 */
Test(i8, weight_quantizer_avx512_equals_scalar)
{
	emb_i8_quant_fn f = emb_i8_quantize_rows_avx512();
	int ks[] = { 1, 2, 15, 16, 17, 31, 33, 64, 70, 384, 1537 };

	if (!f)
		cr_skip_test("no AVX-512 weight quantizer in this build or CPU");
	if (emb_kernels_get("vnni"))
		cr_expect_eq(emb_kernels_get("vnni")->i8_quantize_rows, f);
	cr_expect_eq(emb_kernels_get("scalar")->i8_quantize_rows,
	             emb_i8_quantize_rows);
	for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
		int n = 5, k = ks[t];
		float *w = tu_rand_vec((size_t)n * k, 2.0f), ws0[5], ws1[5];
		int8_t *q0 = malloc((size_t)n * k), *q1 = malloc((size_t)n * k);

		cr_assert(w && q0 && q1);
		for (int i = 0; i < k; i++) {
			w[k + i] = 0.0f;                        /* row 1: zeros */
			/* ties: ws 0.5 (w[0] 63.5), w / ws = j + 1/2 */
			w[2 * k + i] = ((float)(i % 254 - 127) + 0.5f) * 0.5f;
		}
		w[2 * k] = 63.5f;
		w[3 * k + k / 2] = -9.0f;               /* the max negative */
		emb_i8_quantize_rows(q0, ws0, w, n, k);
		f(q1, ws1, w, n, k);
		cr_assert(!memcmp(ws0, ws1, sizeof ws0), "k=%d: scales differ", k);
		cr_assert(!memcmp(q0, q1, (size_t)n * k), "k=%d: bytes differ", k);
		free(w); free(q0); free(q1);
	}
}

Test(i8, tables_have_scaled_quantizer)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };

	cr_assert_eq(emb_kernels_get("scalar")->u8_quantize_scaled,
	             emb_u8_quantize_rows_scaled);
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		if (k)
			cr_expect(k->u8_quantize_scaled, "%s: no smoothed quantizer",
			          isas[i]);
	}
}

/*
 * A smoothed W8A8 model (bert-outlier-tiny, prec.a8 2): the linears
 * that read a norm's output (QKV, up) have power-of-two scales, the
 * outlier channels' ones small; o and down have none; the row-block form
 * equals the threaded one bit for bit; on an input with the outlier
 * channels the smoothed layer is closer to the float layer than the
 * plain W8A8 one.
 */
Test(i8, smoothed_linear)
{
	char *dir = tu_fixture("bert-outlier-tiny");
	emb_model *ms, *mp, *mf;
	emb_err err = { "" };
	emb_model_opts os = { .threads = 2, .prec = { .w8 = 1, .a8 = 2 } };
	emb_model_opts op = { .threads = 2, .prec = { .w8 = 1, .a8 = 1 } };
	emb_model_opts of = { .threads = 2 };
	const int H = 128, I = 512, rows = 100, outl[4] = { 5, 47, 90, 121 };
	const emb_layer *Ls, *Lp, *Lf;
	float *x = malloc((size_t)rows * H * 4), *ys = malloc((size_t)rows * I * 4);
	float *yp = malloc((size_t)rows * I * 4), *yf = malloc((size_t)rows * I * 4);
	float *y2 = malloc((size_t)rows * I * 4);
	double es = 0, ep = 0;

	cr_assert_eq(emb_model_load(&ms, dir, &os, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_load(&mp, dir, &op, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_load(&mf, dir, &of, &err), 0, "%s", err.msg);
	for (int l = 0; l < 2; l++) {
		const emb_layer *L = &ms->net.layer[l];
		cr_expect(L->qkv.xcs && L->up.xcs, "layer %d: QKV and up smoothed", l);
		cr_expect(!L->o.xcs && !L->down.xcs, "layer %d: o, down not", l);
		cr_expect(!mp->net.layer[l].qkv.xcs && !mp->net.layer[l].up.xcs);
		for (int c = 0; c < H; c++) {
			int e;
			float f = frexpf(L->up.xcs[c], &e);
			cr_expect(f == 0.5f, "layer %d column %d: %g not a power of 2",
			          l, c, L->up.xcs[c]);
		}
		for (int o = 0; o < 4; o++)
			cr_expect(L->up.xcs[outl[o]] < 0.5f * L->up.xcs[0] &&
			          L->up.xcs[outl[o]] < 0.5f * L->up.xcs[1],
			          "layer %d: outlier column %d scale %g", l, outl[o],
			          L->up.xcs[outl[o]]);
	}
	/* inputs like attn_norm's output: the outlier channels 16-64x */
	for (int i = 0; i < rows * H; i++)
		x[i] = frand();
	for (int i = 0; i < rows; i++)
		for (int o = 0; o < 4; o++)
			x[(size_t)i * H + outl[o]] *= 16 << (o % 3);
	Ls = &ms->net.layer[0];
	Lp = &mp->net.layer[0];
	Lf = &mf->net.layer[0];
	emb_linear_fwd(ms, ys, I, x, H, rows, &Ls->up);
	emb_linear_fwd(mp, yp, I, x, H, rows, &Lp->up);
	emb_linear_fwd(mf, yf, I, x, H, rows, &Lf->up);
	for (int i = 0; i < rows * I; i++) {
		es += (double)(ys[i] - yf[i]) * (ys[i] - yf[i]);
		ep += (double)(yp[i] - yf[i]) * (yp[i] - yf[i]);
	}
	cr_expect(es * 4 < ep, "smoothed error %g, plain %g", sqrt(es), sqrt(ep));
	{
		size_t need = emb_linear_i8_scratch(&Ls->up, rows);
		uint8_t *sc = malloc(need);
		emb_linear_i8_rows(ms, y2, I, x, H, rows, &Ls->up, EMB_KACT_NONE, sc);
		cr_expect_eq(memcmp(y2, ys, (size_t)rows * I * 4), 0,
		             "emb_linear_i8_rows != emb_linear_fwd (smoothed)");
		free(sc);
	}
	emb_model_free(ms);
	emb_model_free(mp);
	emb_model_free(mf);
	free(x); free(ys); free(yp); free(yf); free(y2);
	free(dir);
}

/* every family's QKV and FFN up read a norm and are smoothed (pre-norm:
 * the layer's norms; post-norm: the previous layer's output norm or the
 * embedding norm; ModernBERT's first layer, without attention norm: the
 * embedding norm); o and down are not */
Test(i8, smoothing_covers_every_family, .timeout = 120)
{
	static const char *const fx[] = { "qwen3-outlier-tiny", "roberta-tiny",
	                                  "distilbert-tiny", "mpnet-tiny",
	                                  "coderank-tiny", "modernbert-tiny",
	                                  "gemma-embed-tiny" };

	for (size_t f = 0; f < sizeof(fx) / sizeof(fx[0]); f++) {
		char *dir = tu_fixture(fx[f]);
		emb_model *m;
		emb_err err = { "" };
		emb_model_opts o = { .threads = 1, .prec = { .w8 = 1, .a8 = 2 } };
		cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s: %s", fx[f],
		             err.msg);
		for (int l = 0; l < m->layers; l++) {
			const emb_layer *L = &m->net.layer[l];
			cr_expect(L->qkv.xcs && L->up.xcs, "%s layer %d: QKV %p, up %p",
			          fx[f], l, (void *)L->qkv.xcs, (void *)L->up.xcs);
			cr_expect(!L->o.xcs && !L->down.xcs, "%s layer %d: o or down",
			          fx[f], l);
		}
		emb_model_free(m);
		free(dir);
	}
}
