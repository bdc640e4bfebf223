/*
 * test_bf16.c - the bf16 compute kernels of bkernels.h.
 *
 * 1. The rounding emb_f32_to_bf16_ftz: nearest even (ties both ways), NaN
 *    stays a (quiet) NaN, subnormals and zeros become signed zero, huge
 *    values round to infinity; bf16 -> fp32 -> bf16 is the identity.
 * 2. The packing: every element lands where bkernels.h says, zero past
 *    n and k.
 * 3. The scalar GEMM is the documented formula: equal, bit for bit, to a
 *    plain loop over the unpacked, rounded operands in the documented
 *    order, and within bf16 rounding of the fp32 product.
 * 4. The AVX2, AVX-512 and AVX-512 BF16 GEMMs equal the scalar one bit
 *    for bit on every tile tail (m around the 4- and 8-row tiles), n
 *    across panel boundaries, k odd, even and across the 192- and 256-k
 *    chunks (and, for AVX-512, past a span of its packed block), with
 *    and without bias, wider strides, a panel offset, and write nothing
 *    outside y's block.  Skipped where the CPU lacks them (the AVX-512
 *    BF16 one needs avx512_bf16).
 * 5. The AMX-BF16 GEMM is within a few fp32 roundings of the scalar one
 *    (its sums are the tile unit's, not the formula's order), equal to
 *    it for a single pair, on every row count around its 16-row tiles
 *    and 32-row blocks, k tails and 512-k blocks, n across panels, and
 *    writes nothing outside y's block.  Skipped where the CPU or OS
 *    does not allow AMX.
 * 6. Every kernel table has a bf16 GEMM and its name, and packers of
 *    run-time operands (attention's K and V) that give emb_bf16_pack's
 *    bits from strided rows and from columns, NaN, infinities,
 *    subnormals and ties included (the AVX-512 ones skipped where the
 *    CPU lacks AVX-512).
 * 7. A model loaded with prec.bf16 (splade-tiny, 2 threads) packs its
 *    linear layers as bf16 only, and emb_linear_act_fwd (column groups,
 *    row blocks, fused gelu / gelu_tanh / relu, a wide output stride)
 *    gives bit for bit its table's bf16 GEMM over whole rows followed by
 *    the table's activation; bf16 with int8 activations is refused.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/cpu.h"
#include "kern/kernels.h"
#include "nn/nn-internal.h"
#include "testutil.h"

static uint32_t rng = 777;

static float frand(void)        /* [-1, 1) */
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static uint16_t bits_bf(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return emb_f32_to_bf16_ftz(f);
}

Test(bf16, rounding)
{
	cr_expect_eq(bits_bf(0x3f800000u), 0x3f80);       /* 1.0 */
	cr_expect_eq(bits_bf(0x3f808000u), 0x3f80);       /* tie, to even */
	cr_expect_eq(bits_bf(0x3f818000u), 0x3f82);       /* tie, to even */
	cr_expect_eq(bits_bf(0x3f808001u), 0x3f81);       /* above the tie */
	cr_expect_eq(bits_bf(0x3f807fffu), 0x3f80);       /* below */
	cr_expect_eq(bits_bf(0xbf818000u), 0xbf82);       /* negative */
	cr_expect_eq(bits_bf(0x7f800000u), 0x7f80);       /* +inf */
	cr_expect_eq(bits_bf(0xff800000u), 0xff80);       /* -inf */
	cr_expect_eq(bits_bf(0x7f7fffffu), 0x7f80);       /* FLT_MAX -> inf */
	cr_expect_eq(bits_bf(0x7f800001u), 0x7fc0);       /* sNaN -> qNaN */
	cr_expect_eq(bits_bf(0xffc00000u), 0xffc0);
	cr_expect_eq(bits_bf(0x00000001u), 0x0000);       /* subnormal -> 0 */
	cr_expect_eq(bits_bf(0x807fffffu), 0x8000);       /* -subnormal -> -0 */
	cr_expect_eq(bits_bf(0x80000000u), 0x8000);
	cr_expect_eq(bits_bf(0x00800000u), 0x0080);       /* FLT_MIN kept */
	for (uint32_t h = 0; h < 0x10000; h++) {
		uint16_t v = (uint16_t)h;
		int nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
		int sub = !(h & 0x7f80) && (h & 0x7f);
		if (nan || sub)
			continue;
		cr_assert_eq(emb_f32_to_bf16_ftz(emb_bf16_to_f32(v)), v, "%04x", h);
	}
}

Test(bf16, packing)
{
	int n = 19, k = 7, k2 = 8;
	float w[19 * 7];
	uint16_t *wb = malloc(emb_bf16_pack_size(n, k) * 2);

	cr_assert_eq(emb_bf16_pack_size(n, k), (size_t)2 * 16 * k2);
	cr_assert_eq(emb_bf16_pack_size(0, k), 0);
	for (int i = 0; i < n * k; i++)
		w[i] = (float)(i + 1);
	emb_bf16_pack(wb, w, n, k);
	for (int p = 0; p < 2; p++)
		for (int g = 0; g < k2 / 2; g++)
			for (int c = 0; c < 16; c++)
				for (int t = 0; t < 2; t++) {
					int j = 16 * p + c, kk = 2 * g + t;
					float want = j < n && kk < k ? w[j * k + kk] : 0.0f;
					float got = emb_bf16_to_f32(wb[(size_t)p * 16 * k2 +
					                               (size_t)g * 32 + 2 * c + t]);
					cr_assert_eq(got, want, "p %d g %d c %d t %d", p, g, c, t);
				}
	free(wb);
}

/* a value for the run-time packers: mostly random, some of every kind
 * the rounding treats apart (ties, NaN, infinities, subnormals, -0) */
static float pack_val(int i)
{
	static const uint32_t odd[] = { 0x3f808000u, 0x3f818000u, 0x7f800001u,
	                                0xffc00000u, 0x7f800000u, 0x00000001u,
	                                0x807fffffu, 0x80000000u, 0x7f7fffffu };
	uint32_t u;
	float f;

	if (i % 7)
		return frand() * 3;
	u = odd[(i / 7) % (sizeof(odd) / sizeof(odd[0]))];
	memcpy(&f, &u, 4);
	return f;
}

/* got (emb_bf16_pack_size(n,k) + 64, set to 0xa5 bytes before packing)
 * holds emb_bf16_pack of wc (n,k), want its scratch, and nothing past */
static void check_packed(const uint16_t *got, const float *wc, int n, int k,
                         uint16_t *want, const char *what, const char *how)
{
	size_t sz = emb_bf16_pack_size(n, k);

	emb_bf16_pack(want, wc, n, k);
	cr_assert(!memcmp(got, want, sz * 2), "%s %s n %d k %d", what, how, n, k);
	for (size_t i = sz; i < sz + 64; i++)
		cr_assert_eq(got[i], 0xa5a5, "%s %s n %d k %d: wrote past", what,
		             how, n, k);
}

/*
 * The packers of run-time operands: rows ldw apart (W as it is) and
 * columns (W = X^T), against emb_bf16_pack of a contiguous copy, and
 * each version given against the scalar one bit for bit; nothing
 * written past the packed size.
 */
static void check_pack_rt(emb_bf16_pack_rows_fn pr, emb_bf16_pack_cols_fn pc,
                          const char *what)
{
	static const int shapes[][2] = { { 1, 1 }, { 19, 7 }, { 16, 32 },
	                                 { 37, 33 }, { 5, 64 }, { 32, 2 },
	                                 { 17, 300 }, { 48, 64 }, { 21, 256 },
	                                 { 16, 31 }, { 7, 62 } };

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int n = shapes[s][0], k = shapes[s][1], ldw = k + 3, ldx = n + 5;
		size_t sz = emb_bf16_pack_size(n, k);
		float *w = malloc((size_t)n * ldw * 4), *x = malloc((size_t)k * ldx * 4);
		float *wc = malloc((size_t)n * k * 4);
		uint16_t *want = malloc(sz * 2), *got = malloc((sz + 64) * 2);

		cr_assert(w && x && wc && want && got);
		for (int i = 0; i < n * ldw; i++)
			w[i] = pack_val(i);
		for (int i = 0; i < k * ldx; i++)
			x[i] = pack_val(i + 3);
		// rows: W (n,k) with stride ldw
		for (int j = 0; j < n; j++)
			memcpy(wc + (size_t)j * k, w + (size_t)j * ldw, (size_t)k * 4);
		memset(got, 0xa5, (sz + 64) * 2);
		pr(got, w, ldw, n, k);
		check_packed(got, wc, n, k, want, what, "rows");
		// columns: W = X^T, X (k,n) with stride ldx
		for (int j = 0; j < n; j++)
			for (int kk = 0; kk < k; kk++)
				wc[(size_t)j * k + kk] = x[(size_t)kk * ldx + j];
		memset(got, 0xa5, (sz + 64) * 2);
		pc(got, x, ldx, n, k);
		check_packed(got, wc, n, k, want, what, "cols");
		free(w); free(x); free(wc); free(want); free(got);
	}
}

Test(bf16, packing_run_time_operands)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };

	check_pack_rt(emb_bf16_pack_rows, emb_bf16_pack_cols, "portable");
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		if (k)
			check_pack_rt(k->bf16_pack_rows, k->bf16_pack_cols, isas[i]);
	}
}

Test(bf16, avx512_packing_equals_scalar)
{
	if (!emb_bf16_pack_rows_avx512() || !emb_bf16_pack_cols_avx512())
		cr_skip_test("no AVX-512 in this build or CPU");
	check_pack_rt(emb_bf16_pack_rows_avx512(), emb_bf16_pack_cols_avx512(),
	              "avx512");
}

Test(bf16, avx512bf16_packing_equals_scalar)
{
	if (!emb_bf16_pack_rows_avx512bf16() || !emb_bf16_pack_cols_avx512bf16())
		cr_skip_test("no AVX-512 BF16 in this build or CPU");
	check_pack_rt(emb_bf16_pack_rows_avx512bf16(),
	              emb_bf16_pack_cols_avx512bf16(), "avx512bf16");
}

typedef struct prob {
	int m, n, k, ldx;
	float *x, *w, *b;
	uint16_t *wb;
} prob;

static void prob_make(prob *p, int m, int n, int k)
{
	p->m = m;
	p->n = n;
	p->k = k;
	p->ldx = k + 5;
	p->x = malloc((size_t)m * p->ldx * 4);
	p->w = malloc((size_t)n * k * 4);
	p->b = malloc((size_t)n * 4);
	p->wb = malloc(emb_bf16_pack_size(n, k) * 2);
	for (int i = 0; i < m * p->ldx; i++)
		p->x[i] = frand() * 4;
	for (int i = 0; i < n * k; i++)
		p->w[i] = frand() * 0.1f;
	for (int j = 0; j < n; j++)
		p->b[j] = frand();
	emb_bf16_pack(p->wb, p->w, n, k);
}

static void prob_free(prob *p)
{
	free(p->x);
	free(p->w);
	free(p->b);
	free(p->wb);
}

static float rb(float v)
{
	return emb_bf16_to_f32(emb_f32_to_bf16_ftz(v));
}

Test(bf16, scalar_is_the_formula)
{
	int shapes[][3] = { { 1, 1, 1 }, { 3, 17, 5 }, { 5, 33, 64 }, { 2, 16, 257 } };

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		prob p;
		prob_make(&p, shapes[s][0], shapes[s][1], shapes[s][2]);
		float *y = malloc((size_t)p.m * p.n * 4);
		emb_gemm_bf16_scalar(y, p.n, p.x, p.ldx, p.wb, p.b, p.m, p.n, p.k);
		for (int i = 0; i < p.m; i++)
			for (int j = 0; j < p.n; j++) {
				float acc = 0;
				double ref = 0, mag = 0;
				for (int g = 0; g < (p.k + 1) / 2; g++) {
					int k1 = 2 * g + 1, k0 = 2 * g;
					float x1 = k1 < p.k ? rb(p.x[i * p.ldx + k1]) : 0;
					float w1 = k1 < p.k ? rb(p.w[j * p.k + k1]) : 0;
					float x0 = rb(p.x[i * p.ldx + k0]);
					float w0 = rb(p.w[j * p.k + k0]);
					acc = acc + x1 * w1;
					acc = acc + x0 * w0;
				}
				acc = acc + p.b[j];
				cr_assert_eq(memcmp(&acc, &y[i * p.n + j], 4), 0,
				             "%dx%dx%d [%d,%d]: %g vs %g", p.m, p.n, p.k, i,
				             j, acc, y[i * p.n + j]);
				for (int kk = 0; kk < p.k; kk++) {
					ref += (double)p.x[i * p.ldx + kk] * p.w[j * p.k + kk];
					mag += fabs((double)p.x[i * p.ldx + kk] * p.w[j * p.k + kk]);
				}
				ref += p.b[j];
				/* two roundings of 2^-9 relative each, per product */
				cr_assert(fabs(y[i * p.n + j] - ref) <= mag * 8e-3 + 1e-6,
				          "[%d,%d] %g vs fp32 %g", i, j, y[i * p.n + j], ref);
			}
		free(y);
		prob_free(&p);
	}
}

/* y1 (the scalar kernel) and y2 (f) over (m, n) from panel p0, each
 * with guard floats of -7.5 around them, row stride n + 13; free both */
enum { GUARD = 16 };
static void run_both(float **y1, float **y2, emb_gemm_bf16_fn f,
                     const prob *p, int m, int n, int p0, int bias)
{
	int ldy = n + 13, k2 = (p->k + 1) / 2 * 2;
	size_t sz = (size_t)m * ldy + 2 * GUARD;
	const float *b = bias ? p->b + 16 * p0 : NULL;
	const uint16_t *w = p->wb + (size_t)16 * p0 * k2;

	*y1 = malloc(sz * 4);
	*y2 = malloc(sz * 4);
	for (size_t i = 0; i < sz; i++)
		(*y1)[i] = (*y2)[i] = -7.5f;
	emb_gemm_bf16_scalar(*y1 + GUARD, ldy, p->x, p->ldx, w, b, m, n, p->k);
	f(*y2 + GUARD, ldy, p->x, p->ldx, w, b, m, n, p->k);
}

/* kernel f == scalar, bit for bit, over (m, n) from panel p0 */
static void check_same(emb_gemm_bf16_fn f, const prob *p, int m, int n,
                       int p0, int bias, const char *what)
{
	int ldy = n + 13, guard = GUARD;
	size_t sz = (size_t)m * ldy + 2 * guard;
	float *y1, *y2;
	long bad = -1, out = -1;

	run_both(&y1, &y2, f, p, m, n, p0, bias);
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

static void check_kernel(emb_gemm_bf16_fn f, const char *what)
{
	int ms[] = { 1, 2, 3, 4, 5, 7, 8, 9, 13, 17 };
	int ns[] = { 1, 15, 16, 17, 33, 64, 130 };
	/* k across the kernels' k blocks (256 in AVX2's, 1024 in AVX-512
	 * BF16's) */
	int ks[] = { 1, 2, 3, 64, 255, 256, 257, 600, 1023, 1024, 1025, 2100 };
	int mbig[] = { 47, 48, 49, 95, 96, 97, 150, 193 };
	prob p;

	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		prob_make(&p, 17, 130, ks[a]);
		for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
			for (size_t r = 0; r < sizeof(ms) / sizeof(ms[0]); r++)
				check_same(f, &p, ms[r], ns[c], 0, (int)(r + c) % 2, what);
		check_same(f, &p, 13, 130 - 16, 1, 1, what);
		check_same(f, &p, 6, 130 - 48, 3, 0, what);
		prob_free(&p);
	}
	/* m across the kernels' row blocks (48 rows, 96) */
	for (int k = 300; k <= 1100; k += 800) {
		prob_make(&p, 193, 40, k);
		for (size_t r = 0; r < sizeof(mbig) / sizeof(mbig[0]); r++)
			check_same(f, &p, mbig[r], 40, 0, (int)r % 2, what);
		prob_free(&p);
	}
	/* special values in x: NaN, infinities, subnormals, exact zeros */
	prob_make(&p, 5, 20, 40);
	p.x[3] = NAN;
	p.x[p.ldx + 1] = INFINITY;
	p.x[2 * p.ldx + 7] = 1e-40f;
	p.x[3 * p.ldx + 2] = -0.0f;
	for (int kk = 0; kk < 40; kk++)
		p.x[4 * p.ldx + kk] = 0.0f;
	check_same(f, &p, 5, 20, 0, 1, what);
	prob_free(&p);
	/* NaN in the columns between k and ldx: never read (an element
	 * past k is zero, whatever memory holds there) */
	for (int k = 33; k <= 40; k += 7) {
		prob_make(&p, 5, 20, k);
		for (int r = 0; r < 5; r++)
			for (int kk = k; kk < p.ldx; kk++)
				p.x[(size_t)r * p.ldx + kk] = NAN;
		check_same(f, &p, 5, 20, 0, 0, what);
		prob_free(&p);
	}
}

Test(bf16, avx2_equals_scalar)
{
	emb_gemm_bf16_fn f = emb_gemm_bf16_avx2();

	if (!f)
		cr_skip_test("no AVX2 bf16 kernel in this build or CPU");
	check_kernel(f, "avx2");
}

Test(bf16, avx512bf16_equals_scalar)
{
	emb_gemm_bf16_fn f = emb_gemm_bf16_avx512();

	if (!f)
		cr_skip_test("no AVX-512 BF16 kernel in this build or CPU "
		             "(needs avx512_bf16)");
	check_kernel(f, "avx512bf16");
}

/* the AVX-512 (F) one, the products by FMA on the fp32 GEMM's tiles:
 * the float table's own bf16 GEMM, tested whether or not the CPU has
 * avx512_bf16 (where it has, the tables take the vdpbf16ps one) */
Test(bf16, avx512_equals_scalar)
{
#ifdef EMB_HAVE_AVX512
	emb_gemm_bf16_fn f = emb_kernels_avx512.gemm_bf16;
	prob p;

	if (!(emb_cpu_features() & EMB_CPU_AVX512))
		cr_skip_test("no AVX-512 on this CPU");
	cr_assert(f);
	check_kernel(f, "avx512");
	/* k past the 18432 of one span of the packed block of x, odd */
	prob_make(&p, 9, 20, 18437);
	check_same(f, &p, 9, 20, 0, 1, "avx512 long k");
	check_same(f, &p, 3, 17, 0, 0, "avx512 long k");
	prob_free(&p);
	if (!emb_gemm_bf16_avx512() && emb_kernels_get("avx512"))
		cr_expect_eq(emb_kernels_get("avx512")->gemm_bf16, f);
#else
	cr_skip_test("this build has no AVX-512 kernels");
#endif
}

/*
 * AMX-BF16 against the scalar GEMM.  Not bit for bit: tdpbf16ps rounds
 * each pair's two products as one sum and adds 16 pairs per step in an
 * order of its own (bkernels.h).  Both are sums of the same exact
 * products (and the bias) with at most one fp32 rounding per addition,
 * so each is within (k + 1) * 2^-24 * sum |terms| of the exact sum, and
 * they are within twice that of each other.  With one pair (k <= 2)
 * both are the one rounding of p0 + p1, then + b: equal bits, which
 * also checks the activation rounding.  NaN where the scalar one has
 * NaN, the same infinities.
 */
static void check_amx(emb_gemm_bf16_fn f, const prob *p, int m, int n,
                      int p0, int bias, const char *what)
{
	int ldy = n + 13, guard = GUARD;
	size_t sz = (size_t)m * ldy + 2 * guard;
	const float *b = bias ? p->b + 16 * p0 : NULL;
	float *y1, *y2;
	long bad = -1, out = -1;
	double worst = 0;

	run_both(&y1, &y2, f, p, m, n, p0, bias);
	for (size_t i = 0; i < sz; i++) {
		size_t o = i - guard;
		int inside = i >= (size_t)guard && o < (size_t)m * ldy &&
		             (int)(o % ldy) < n;
		if (!inside) {
			if (out < 0 && y2[i] != -7.5f)
				out = (long)i;
			continue;
		}
		int r = (int)(o / ldy), j = (int)(o % ldy) + 16 * p0;
		double mag = b ? fabs(b[j - 16 * p0]) : 0, tol;
		for (int kk = 0; kk < p->k; kk++)
			mag += fabs((double)rb(p->x[(size_t)r * p->ldx + kk]) *
			            rb(p->w[(size_t)j * p->k + kk]));
		tol = p->k <= 2 ? 0 : 2.0 * (p->k + 1) * mag / 16777216.0;
		if (isnan(y1[i]) || isinf(y1[i]) || isnan(y2[i]) || isinf(y2[i])) {
			if (bad < 0 && !(isnan(y1[i]) && isnan(y2[i])) &&
			    y1[i] != y2[i])
				bad = (long)o;
			continue;
		}
		if (bad < 0 && fabs((double)y1[i] - y2[i]) > tol)
			bad = (long)o;
		if (mag > 0 && fabs((double)y1[i] - y2[i]) / mag > worst)
			worst = fabs((double)y1[i] - y2[i]) / mag;
	}
	cr_expect(bad < 0, "%s %dx%dx%d (panel %d, bias %d) [%ld,%ld]: %a vs %a",
	          what, m, n, p->k, p0, bias, bad / ldy, bad % ldy,
	          bad < 0 ? 0 : y1[guard + bad], bad < 0 ? 0 : y2[guard + bad]);
	cr_expect(out < 0, "%s %dx%d: wrote outside y at %ld", what, m, n, out);
	/* the tolerance is loose; the differences are much smaller */
	cr_expect(worst * 16777216.0 <= 8, "%s k %d: worst difference %g ulps "
	          "of the magnitude", what, p->k, worst * 16777216.0);
	free(y1);
	free(y2);
}

Test(bf16, amx_close_to_scalar)
{
	emb_gemm_bf16_fn f = emb_gemm_bf16_amx();
	int ms[] = { 1, 2, 15, 16, 17, 31, 32, 33, 50 };
	int ns[] = { 1, 15, 16, 17, 33, 64, 130 };
	int ks[] = { 1, 2, 3, 31, 32, 33, 64, 384, 511, 512, 513, 1100 };
	prob p;

	if (!f)
		cr_skip_test("no AMX-BF16 kernel in this build, CPU or OS (%s)",
		             emb_cpu_amx_why() ? emb_cpu_amx_why() : "build");
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		prob_make(&p, 50, 130, ks[a]);
		for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
			for (size_t r = 0; r < sizeof(ms) / sizeof(ms[0]); r++)
				check_amx(f, &p, ms[r], ns[c], 0, (int)(r + c) % 2, "amx");
		check_amx(f, &p, 33, 130 - 16, 1, 1, "amx");
		check_amx(f, &p, 6, 130 - 48, 3, 0, "amx");
		prob_free(&p);
	}
	/* NaN, infinities, exact zeros in x */
	prob_make(&p, 5, 20, 40);
	p.x[3] = NAN;
	p.x[p.ldx + 1] = INFINITY;
	p.x[3 * p.ldx + 2] = -0.0f;
	for (int kk = 0; kk < 40; kk++)
		p.x[4 * p.ldx + kk] = 0.0f;
	check_amx(f, &p, 5, 20, 0, 1, "amx special");
	prob_free(&p);
	if (emb_kernels_get("amx")) {
		cr_expect_eq(emb_kernels_get("amx")->gemm_bf16, f);
		cr_expect_str_eq(emb_kernels_get("amx")->bf16_name, "amx");
	}
}

Test(bf16, tables_have_a_bf16_gemm)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };
	const emb_kernels *s = emb_kernels_get("scalar");

	cr_assert(s);
	cr_assert_eq(s->gemm_bf16, emb_gemm_bf16_scalar);
	cr_assert_str_eq(s->bf16_name, "scalar");
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		if (!k)
			continue;
		cr_assert(k->gemm_bf16 && k->bf16_name, "%s", isas[i]);
		cr_assert(k->bf16_pack_rows && k->bf16_pack_cols, "%s", isas[i]);
		if (!strcmp(isas[i], "avx2"))
			cr_assert_str_eq(k->bf16_name, "avx2");
	}
#ifdef EMB_HAVE_AVX512
	/* vdpbf16ps only where it runs at the FMA's rate; elsewhere the
	 * FMA GEMM on the widened pairs (the same bits, twice the rate on
	 * Intel's AVX-512 BF16) */
	for (size_t i = 3; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		if (!k || !strcmp(k->bf16_name, "amx"))
			continue;
		if (emb_gemm_bf16_avx512() &&
		    (emb_cpu_features() & EMB_CPU_BF16_FAST)) {
			cr_assert_str_eq(k->bf16_name, "avx512bf16", "%s", isas[i]);
			cr_assert_eq(k->gemm_bf16, emb_gemm_bf16_avx512(), "%s",
			             isas[i]);
		} else {
			cr_assert_str_eq(k->bf16_name, "avx512", "%s", isas[i]);
			cr_assert_eq(k->gemm_bf16, emb_kernels_avx512.gemm_bf16,
			             "%s", isas[i]);
		}
	}
#endif
}

/* attention in the int8 modes runs in bf16 exactly where the table's
 * bf16 GEMM is the AMX one, or the AVX-512 BF16 one on a CPU whose
 * vdpbf16ps runs at the FMA's rate (AMD's): never over the portable or
 * AVX2 GEMMs */
Test(bf16, attention_in_bf16_for_int8_where_fast)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };
	unsigned cpu = emb_cpu_features();
	int amd = tu_cpuinfo_has("vendor_id", "AuthenticAMD");
	int bf = tu_cpuinfo_has("flags", "avx512_bf16");
	int taken = 0;

	/* the vendor test against the kernel's own account */
	if (amd >= 0 && bf >= 0 && (cpu & EMB_CPU_AVX512))
		cr_assert_eq(!!(cpu & EMB_CPU_BF16_FAST), amd == 1 && bf == 1,
		             "BF16_FAST %d, AMD %d, avx512_bf16 %d",
		             !!(cpu & EMB_CPU_BF16_FAST), amd, bf);
	if (cpu & EMB_CPU_BF16_FAST)
		cr_assert(cpu & EMB_CPU_AVX512BF16);
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		int want;
		if (!k)
			continue;
		want = !strcmp(k->bf16_name, "amx") ||
		       (!strcmp(k->bf16_name, "avx512bf16") &&
		        (cpu & EMB_CPU_BF16_FAST));
		taken += want;
		cr_assert_eq(k->bf16_attn, want, "%s (bf16 GEMM %s)", isas[i],
		             k->bf16_name);
	}
	if (!taken)
		cr_skip_test("no AMX tiles here, and vdpbf16ps runs at half the "
		             "FMA rate or is missing: every table keeps fp32 "
		             "attention in the int8 modes (checked)");
}

Test(bf16, model_linear_layers)
{
	char *dir = tu_fixture("splade-tiny");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { 0 };
	emb_linear L;
	const char *wn[1] = { "encoder.layer.1.intermediate.dense.weight" };
	const char *bn[1] = { "encoder.layer.1.intermediate.dense.bias" };
	int outs[1] = { 512 }, H = 128, I = 512, ldy = 512 + 24;
	int acts[4] = { EMB_ACT_NONE, EMB_ACT_GELU, EMB_ACT_GELU_TANH,
	                EMB_ACT_RELU };
	int nrows[3] = { 3, 96, 203 };
	float *x = malloc((size_t)203 * H * 4);
	float *y1 = malloc((size_t)203 * ldy * 4), *y2 = malloc((size_t)203 * ldy * 4);

	o.threads = 2;
	o.prec.bf16 = 1;
	o.prec.a8 = 1;
	o.prec.w8 = 1;
	cr_assert_neq(emb_model_load(&m, dir, &o, &err), 0);
	cr_assert(strstr(err.msg, "bf16"), "%s", err.msg);
	o.prec.a8 = 0;
	o.prec.w8 = 0;
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_linear_cat(&L, m, 1, wn, bn, outs, H, NULL, &err), 0,
	             "%s", err.msg);
	cr_assert(L.wb && !L.wp && !L.wq, "bf16 panels only");
	for (int i = 0; i < 203 * H; i++)
		x[i] = frand() * 2;
	for (int a = 0; a < 4; a++)
		for (int r = 0; r < 3; r++) {
			int rows = nrows[r];
			long bad = -1;
			for (int i = 0; i < 203 * ldy; i++)
				y1[i] = y2[i] = 1.5f;
			emb_linear_act_fwd(m, y1, ldy, x, H, rows, &L, acts[a]);
			m->k->gemm_bf16(y2, ldy, x, H, L.wb, L.b, rows, I, H);
			for (int i = 0; i < rows; i++) {
				float *row = y2 + (size_t)i * ldy;
				if (acts[a] == EMB_ACT_GELU)
					m->k->gelu(row, I);
				else if (acts[a] == EMB_ACT_GELU_TANH)
					m->k->gelu_tanh(row, I);
				else if (acts[a] == EMB_ACT_RELU)
					m->k->relu(row, I);
			}
			for (long i = 0; i < 203L * ldy && bad < 0; i++)
				if (memcmp(&y1[i], &y2[i], 4))
					bad = i;
			cr_expect(bad < 0, "act %d, %d rows: [%ld,%ld] %g vs %g", acts[a],
			          rows, bad / ldy, bad % ldy, bad < 0 ? 0 : y1[bad],
			          bad < 0 ? 0 : y2[bad]);
		}
	emb_model_free(m);
	free(x); free(y1); free(y2);
	free(dir);
}
