/*
 * test_attention.c - the attention layer (lib/nn/attention.c) against a
 * double-precision reference, with the options the families use:
 * grouped-query heads, causal and sliding-window masks, batching; the
 * fused one-job path against the two-phase one, bit for bit; the bf16
 * attention (both GEMMs in bf16) in every kernel table against a
 * reference over the operands rounded as the mode rounds them; and which
 * modes take it over which tables.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tool/emb-tool.h"
#include "kern/kernels.h"
#include "nn/nn-internal.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* attention layer (model.c) with the options later families use:      */
/* grouped-query heads, causal and sliding-window masks                */

static double rbf(double v)    /* v as float, rounded to bf16 */
{
	return emb_bf16_to_f32(emb_f32_to_bf16_ftz((float)v));
}

/* bf: Q, K and V rounded to bf16, and the softmax as the bf16 path
 * computes it: the scalar table's softmax_bf16 over the row's allowed
 * scores (as floats), its exponentials rounded to bf16, the sum scaled
 * by the 1 / sum it returns */
static void ref_attention(double *ctx, const emb_attn *a, int r0, int len,
                          int bf)
{
	int dh = a->head_dim, ldc = a->heads * dh, group = a->heads / a->kv_heads;
	double *p = malloc(sizeof(double) * len);
	float *e = malloc(sizeof(float) * len), inv = 1.0f;
	int j0;

	for (int h = 0; h < a->heads; h++)
		for (int i = 0; i < len; i++) {
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < len; j++) {
				int ok = (!a->causal || j <= i) &&
				         (a->window <= 0 || abs(i - j) < a->window);
				double s = 0;
				for (int e = 0; e < dh; e++) {
					double q = a->q[(size_t)(r0 + i) * a->ldq + h * dh + e];
					double k = a->k[(size_t)(r0 + j) * a->ldk +
					                (h / group) * dh + e];
					s += bf ? rbf(q) * rbf(k) : q * k;
				}
				p[j] = ok ? s * a->scale : -INFINITY;
				mx = fmax(mx, p[j]);
			}
			if (bf) {   /* the allowed keys: j0 .. j0 + n - 1 */
				int n = 0;
				for (j0 = 0; j0 < len && p[j0] == -INFINITY; j0++)
					;
				for (int j = j0; j < len && p[j] != -INFINITY; j++)
					e[n++] = (float)(p[j] / a->scale);
				emb_kernels_scalar.softmax_bf16(e, n, 1, n, a->scale, &inv);
				for (int j = 0; j < len; j++)
					p[j] = j >= j0 && j < j0 + n ? rbf(e[j - j0]) : 0;
			} else {
				for (int j = 0; j < len; j++)
					sum += (p[j] = exp(p[j] - mx));
			}
			for (int d = 0; d < dh; d++) {
				double c = 0;
				for (int j = 0; j < len; j++) {
					double v = a->v[(size_t)(r0 + j) * a->ldv +
					                (h / group) * dh + d];
					c += bf ? p[j] * rbf(v) : p[j] / sum * v;
				}
				ctx[(size_t)i * ldc + h * dh + d] = bf ? c * inv : c;
			}
		}
	free(p);
	free(e);
}

/* *k with bf16_attn set: the bf16 attention of a table that does not
 * take it in the forward (its code is tested all the same) */
static emb_kernels with_bf16_attn(const emb_kernels *k)
{
	emb_kernels c = *k;

	c.bf16_attn = 1;
	return c;
}

static emb_model *fake_model(const emb_kernels *k, int threads, int maxlen,
                             int bf16)
{
	emb_model *m = calloc(1, sizeof(*m));
	emb_err err;

	cr_assert(m);
	m->k = k;
	m->prec.bf16 = (unsigned char)bf16;
	cr_assert_eq(emb_threads_new(&m->tp, threads, &err), 0);
	m->tscratch_each = 32 * (size_t)((maxlen + 15) / 16 * 16);
	cr_assert(m->tscratch = malloc(threads * m->tscratch_each * sizeof(float)));
	return m;
}

static void free_fake(emb_model *m)
{
	emb_threads_free(m->tp);
	free(m->tscratch);
	free(m->kv);
	emb_big_free(m->kvt, m->kvt_len);
	free(m);
}

/*
 * every kernel variant, the four masks (none, causal, window, both), the
 * batch against the oracle, each sequence alone against the batch, and
 * the two-phase path ($EMB_NO_FUSE) against the one the batch took, bit
 * for bit.  bf16: the bf16 mode in every full kernel table (bf16_attn
 * set in a copy where the table leaves it 0), against the
 * reference over bf16 operands: all but one in a hundred elements
 * within 1e-5 and every one within TOL_BF (where the fp32 and the
 * double P fall on two sides of a bf16 rounding, that product moves by a
 * bf16 step, p 2^-8 |v|: here 0.1% of the elements, at most 1.2e-3),
 * their mean within 1e-5, and away from the fp32 result (the mode is
 * taken).
 */
#define TOL_BF 1e-2

/* the context written over Q (ldc = ldq, as the forward runs it) is
 * want (T, ldc), bit for bit, on the fused and the two-phase path; the
 * K and V columns are left as they were */
static void check_in_place(emb_model *m, const emb_attn *a, const emb_batch *b,
                           const float *want, int ld, int ldc)
{
	size_t T = (size_t)b->ntok;
	float *q = malloc(T * ld * sizeof(float));
	emb_attn ai = *a;
	emb_err err;

	cr_assert(q);
	ai.q = q;
	ai.k = q + (a->k - a->q);
	ai.v = q + (a->v - a->q);
	ai.ldc = ld;
	for (int pass = 0; pass < 2; pass++) {
		memcpy(q, a->q, T * ld * sizeof(float));
		m->no_fuse = pass;
		cr_assert_eq(emb_attention(m, q, &ai, b, &err), 0, "%s", err.msg);
		for (size_t r = 0; r < T; r++) {
			cr_assert(!memcmp(q + r * ld, want + r * ldc,
			                  (size_t)ldc * sizeof(float)),
			          "%s: the context over Q differs at row %zu (%s path)",
			          m->k->name, r, pass ? "two-phase" : "fused");
			cr_assert(!memcmp(q + r * ld + ldc, a->q + r * ld + ldc,
			                  (size_t)(ld - ldc) * sizeof(float)),
			          "%s: K or V changed at row %zu", m->k->name, r);
		}
	}
	m->no_fuse = 0;
	free(q);
}
static void check_attention_mode(int heads, int kvh, int dh, const int *lens,
                                 int NS, int maxlen, int bf16)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };
	const int ldc = heads * dh;
	const int ld = ldc + 2 * kvh * dh;     /* packed q|k|v rows */
	const emb_kernels *v[8];
	emb_kernels kc;
	int nv = 0, start[12] = { 0 }, T;
	emb_seq seqs[12];

	cr_assert(NS <= 11);
	if (bf16) {
		for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++)
			if (emb_kernels_get(isas[i]))
				v[nv++] = emb_kernels_get(isas[i]);
	} else {
		nv = tu_all_variants(v);
	}

	for (int s = 0; s < NS; s++) {
		start[s + 1] = start[s] + lens[s];
		seqs[s] = (emb_seq){ NULL, NULL, lens[s] };
	}
	T = start[NS];
	float *qkv = tu_rand_vec((size_t)T * ld, 1.5f);
	float *ctx = malloc((size_t)T * ldc * sizeof(float));
	float *one = malloc((size_t)T * ldc * sizeof(float));
	float *two = malloc((size_t)T * ldc * sizeof(float));
	double *ref = malloc(sizeof(double) * T * ldc);
	double *ref32 = malloc(sizeof(double) * T * ldc);
	for (int vi = 0; vi < nv; vi++)
		for (int mode = 0; mode < 4; mode++) {
			emb_attn a = {
				.heads = heads, .kv_heads = kvh, .head_dim = dh,
				.q = qkv, .k = qkv + ldc, .v = qkv + ldc + kvh * dh,
				.ldq = ld, .ldk = ld, .ldv = ld, .scale = 0.2f,
				.causal = mode & 1, .window = mode & 2 ? 9 : 0,
			};
			emb_batch b = { seqs, NS, start, T, maxlen };
			emb_model *m;
			double far = 0, sum = 0, maxe = 0;
			size_t nfar = 0;
			emb_err err;
			kc = with_bf16_attn(v[vi]);
			m = fake_model(bf16 ? &kc : v[vi], 2, maxlen, bf16);
			cr_assert_eq(emb_attention_bf16(m), bf16);
			cr_assert_eq(emb_attention(m, ctx, &a, &b, &err), 0, "%s", err.msg);
			m->no_fuse = 1;
			cr_assert_eq(emb_attention(m, two, &a, &b, &err), 0, "%s", err.msg);
			m->no_fuse = 0;
			cr_assert(!memcmp(two, ctx, (size_t)T * ldc * sizeof(float)),
			          "%s mode %d: the two-phase path differs", v[vi]->name,
			          mode);
			check_in_place(m, &a, &b, ctx, ld, ldc);
			for (int s = 0; s < NS; s++) {
				emb_batch b1 = { seqs + s, 1, start, lens[s], lens[s] };
				emb_attn a1 = a;
				a1.q += (size_t)start[s] * ld;
				a1.k += (size_t)start[s] * ld;
				a1.v += (size_t)start[s] * ld;
				ref_attention(ref, &a, start[s], lens[s], bf16);
				ref_attention(ref32, &a, start[s], lens[s], 0);
				for (int e = 0; e < lens[s] * ldc; e++) {
					double got = ctx[(size_t)start[s] * ldc + e];
					cr_assert(fabs(got - ref[e]) < (bf16 ? TOL_BF : 2e-5),
					          "%s%s mode %d seq %d elem %d: %g vs %g",
					          v[vi]->name, bf16 ? " bf16" : "", mode, s, e,
					          got, ref[e]);
					sum += fabs(got - ref[e]);
					maxe = fmax(maxe, fabs(got - ref[e]));
					nfar += bf16 && fabs(got - ref[e]) > 1e-5;
					far = fmax(far, fabs(got - ref32[e]));
				}
				/* alone (start[0] == 0 offsets) == in the batch, bitwise */
				cr_assert_eq(emb_attention(m, one, &a1, &b1, &err), 0);
				cr_assert(!memcmp(one, ctx + (size_t)start[s] * ldc,
				                  (size_t)lens[s] * ldc * sizeof(float)),
				          "%s mode %d: sequence %d alone differs", v[vi]->name,
				          mode, s);
			}
			cr_assert(sum / ((double)T * ldc) < (bf16 ? 1e-5 : 2e-6),
			          "%s mode %d: mean error %g", v[vi]->name, mode,
			          sum / ((double)T * ldc));
			cr_assert(nfar * 100 <= (size_t)T * ldc, "%s mode %d: %zu of %d "
			          "elements off by more than 1e-5 (largest %g)",
			          v[vi]->name, mode, nfar, T * ldc, maxe);
			if (bf16)
				cr_assert(far > 1e-4, "%s mode %d: bf16 gives the fp32 "
				          "result (%g apart)", v[vi]->name, mode, far);
			free_fake(m);
		}
	free(qkv); free(ctx); free(one); free(two); free(ref); free(ref32);
}

static void check_attention(int heads, int kvh, int dh, const int *lens,
                            int NS, int maxlen)
{
	check_attention_mode(heads, kvh, dh, lens, NS, maxlen, 0);
	check_attention_mode(heads, kvh, dh, lens, NS, maxlen, 1);
}

Test(attention, masks_gqa_and_batching)
{
	static const int lens[] = { 5, 70, 1, 17, 33 };

	check_attention(4, 2, 24, lens, 5, 70);
}

/* 3 query heads on 1 kv head; one long odd sequence alone (split over
 * heads and query blocks), one token alone, and a short pair */
Test(attention, gqa_three_heads_one_kv)
{
	static const int one_long[] = { 131 }, one[] = { 1 }, pair[] = { 2, 9 };

	check_attention(3, 1, 16, one_long, 1, 131);
	check_attention(3, 1, 16, one, 1, 1);
	check_attention(3, 1, 20, pair, 2, 9);
}

/* enough sequences (4 per thread) for the fused one-job path, odd head
 * dims (a bf16 pair past the end), and lengths across 16-key panels */
Test(attention, fused_path_many_sequences)
{
	static const int lens[] = { 3, 16, 17, 40, 1, 33, 64, 9, 2, 31, 15 };

	check_attention(4, 2, 17, lens, 11, 64);
	check_attention(2, 2, 40, lens, 9, 64);
}

/* the bf16 mode and the int8 activation modes (W8A8, smoothed or not)
 * run attention in bf16 over a table with bf16_attn, the bits of the
 * table's bf16 attention, and in fp32 elsewhere, fp32's bits; W8 (int8
 * weights, fp32 compute) and fp32 in fp32 everywhere */
Test(attention, reduced_modes_take_bf16_where_the_table_says)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni",
	                                    "avx512", "vnni", "amx" };
	static const int lens[] = { 7, 40, 19 };
	emb_seq seqs[3];
	int start[4] = { 0 }, heads = 4, kvh = 2, dh = 24, T, taken = 0;
	const int ldc = heads * dh, ld = ldc + 2 * kvh * dh;

	for (int s = 0; s < 3; s++) {
		seqs[s] = (emb_seq){ NULL, NULL, lens[s] };
		start[s + 1] = start[s] + lens[s];
	}
	T = start[3];
	float *qkv = tu_rand_vec((size_t)T * ld, 1.5f);
	float *want[2], *got = malloc((size_t)T * ldc * sizeof(float));
	want[0] = malloc((size_t)T * ldc * sizeof(float));
	want[1] = malloc((size_t)T * ldc * sizeof(float));
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		const emb_kernels *k = emb_kernels_get(isas[i]);
		emb_attn a = {
			.heads = heads, .kv_heads = kvh, .head_dim = dh,
			.q = qkv, .k = qkv + ldc, .v = qkv + ldc + kvh * dh,
			.ldq = ld, .ldk = ld, .ldv = ld, .scale = 0.2f,
		};
		emb_batch b = { seqs, 3, start, T, 40 };
		emb_err err;
		emb_kernels kc;
		if (!k)
			continue;
		kc = with_bf16_attn(k);
		for (int bf = 0; bf < 2; bf++) {
			emb_model *m = fake_model(bf ? &kc : k, 2, 40, bf);
			cr_assert_eq(emb_attention_bf16(m), bf);
			cr_assert_eq(emb_attention(m, want[bf], &a, &b, &err), 0, "%s",
			             err.msg);
			free_fake(m);
		}
		cr_assert(memcmp(want[0], want[1], (size_t)T * ldc * sizeof(float)),
		          "%s: bf16 gives the fp32 bits", k->name);
		/* W8, W8A8, W8A8 smoothed, bf16, fp32 */
		for (int mode = 0; mode < 5; mode++) {
			static const char *const names[] = { "w8", "w8a8",
				"w8a8-smooth", "bf16", "fp32" };
			emb_model *m = fake_model(k, 2, 40, mode == 3);
			int bf = mode >= 1 && mode <= 3 ? k->bf16_attn : 0;
			m->prec.w8 = mode < 3;
			m->prec.a8 = (unsigned char)(mode < 3 ? mode : 0);
			cr_assert_eq(emb_attention_bf16(m), bf, "%s %s", k->name,
			             names[mode]);
			cr_assert_eq(emb_attention(m, got, &a, &b, &err), 0, "%s",
			             err.msg);
			cr_assert(!memcmp(got, want[bf], (size_t)T * ldc *
			                  sizeof(float)), "%s %s: not the %s bits",
			          k->name, names[mode], bf ? "bf16" : "fp32");
			taken += bf;
			free_fake(m);
		}
	}
	free(qkv); free(got); free(want[0]); free(want[1]);
	if (!taken)
		cr_skip_test("no kernel table here runs the reduced modes' "
		             "attention in bf16 (fp32 checked in each)");
}

/* bf16 attention over a table without the bf16 GEMM (bf16_attn set in
 * a copy) is refused, not run in fp32 */
Test(attention, bf16_needs_the_bf16_gemm)
{
	static const int lens[] = { 5 };
	emb_seq seqs[1] = { { NULL, NULL, 5 } };
	int start[2] = { 0, 5 };
	float *qkv = tu_rand_vec(5 * 12, 1.0f), ctx[5 * 4];
	emb_attn a = { .heads = 1, .kv_heads = 1, .head_dim = 4, .q = qkv,
	               .k = qkv + 4, .v = qkv + 8, .ldq = 12, .ldk = 12,
	               .ldv = 12, .scale = 0.5f };
	emb_batch b = { seqs, 1, start, 5, 5 };
	emb_kernels kc = with_bf16_attn(&emb_kernels_scalar);
	emb_model *m = fake_model(&kc, 1, lens[0], 1);
	emb_err err;

	cr_assert_lt(emb_attention(m, ctx, &a, &b, &err), 0);
	cr_assert(strstr(err.msg, "no bf16 GEMM"), "%s", err.msg);
	free_fake(m);
	free(qkv);
}

/* ------------------------------------------------------------------ */
/* rotary embeddings: the batch's cos/sin table gives the bits of the   */
/* angles computed per sequence, and both rotate as the formula says    */

static void rope_run(float *x, int ld, const emb_batch *b, const float *inv,
                     const float *cs, int threads)
{
	emb_model *m = fake_model(&emb_kernels_scalar, threads, 64, 0);
	emb_rope r = {
		.q = x, .k = x + 3 * 20, .ldq = ld, .ldk = ld, .heads = 3,
		.kv_heads = 1, .head_dim = 20, .dim = 20, .inv_freq = inv,
		.cs = cs,
	};
	emb_err err;

	cr_assert_eq(emb_rope_fwd(m, &r, b, &err), 0, "%s", err.msg);
	free_fake(m);
}

Test(attention, rope_table_gives_the_computed_bits)
{
	static const int lens[] = { 5, 61, 1, 33 };
	emb_seq seqs[4];
	int start[5] = { 0 }, T, ld = 5 * 20, maxlen = 61;
	float inv[10], *cs;
	emb_err err;

	for (int s = 0; s < 4; s++) {
		seqs[s] = (emb_seq){ NULL, NULL, lens[s] };
		start[s + 1] = start[s] + lens[s];
	}
	T = start[4];
	emb_batch b = { seqs, 4, start, T, maxlen };
	emb_rope_inv_freq(inv, 20, 10000.0);
	emb_model *m = fake_model(&emb_kernels_scalar, 2, 64, 0);
	cr_assert(!emb_rope_table(m, inv, 21, maxlen, &err));
	cr_assert(strstr(err.msg, "rotary dimension 21"), "%s", err.msg);
	cs = emb_rope_table(m, inv, 20, maxlen, &err);
	cr_assert(cs, "%s", err.msg);
	free_fake(m);

	float *x0 = tu_rand_vec((size_t)T * ld, 2.0f);
	float *with = malloc((size_t)T * ld * sizeof(float));
	float *without = malloc((size_t)T * ld * sizeof(float));
	cr_assert(with && without);
	memcpy(with, x0, (size_t)T * ld * sizeof(float));
	memcpy(without, x0, (size_t)T * ld * sizeof(float));
	rope_run(with, ld, &b, inv, cs, 2);
	rope_run(without, ld, &b, inv, NULL, 1);
	cr_assert(!memcmp(with, without, (size_t)T * ld * sizeof(float)),
	          "the table's rotation differs from the computed one");
	/* position i of each sequence, head 1 of Q, pair d: the rotation by
	 * i inv[d], in double; columns 80..99 (not Q or K) untouched */
	for (int s = 0; s < 4; s++)
		for (int i = 0; i < lens[s]; i++) {
			size_t row = (size_t)(start[s] + i) * ld;
			for (int d = 0; d < 10; d++) {
				double a = (double)((float)i * inv[d]);
				double x1 = x0[row + 20 + d], x2 = x0[row + 30 + d];
				cr_assert(fabs(with[row + 20 + d] -
				               (x1 * cos(a) - x2 * sin(a))) < 1e-5);
				cr_assert(fabs(with[row + 30 + d] -
				               (x2 * cos(a) + x1 * sin(a))) < 1e-5);
			}
			cr_assert(!memcmp(with + row + 80, x0 + row + 80,
			                  20 * sizeof(float)));
		}
	/* the table is what is read: cos 1, sin 0 everywhere turns nothing */
	for (int i = 0; i < maxlen; i++)
		for (int d = 0; d < 20; d++)
			cs[i * 20 + d] = d < 10 ? 1.0f : 0.0f;
	memcpy(with, x0, (size_t)T * ld * sizeof(float));
	rope_run(with, ld, &b, inv, cs, 2);
	cr_assert(!memcmp(with, x0, (size_t)T * ld * sizeof(float)),
	          "the rotation did not come from the table");
	free(cs); free(x0); free(with); free(without);
}
