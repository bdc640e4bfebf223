/*
 * test_attention.c - the attention layer (lib/nn/attention.c) against a
 * double-precision reference, with the options the families use:
 * grouped-query heads, causal and sliding-window masks, batching.
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

static void ref_attention(double *ctx, const emb_attn *a, int r0, int len)
{
	int dh = a->head_dim, ldc = a->heads * dh, group = a->heads / a->kv_heads;
	double *p = malloc(sizeof(double) * len);

	for (int h = 0; h < a->heads; h++)
		for (int i = 0; i < len; i++) {
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < len; j++) {
				int ok = (!a->causal || j <= i) &&
				         (a->window <= 0 || abs(i - j) < a->window);
				double s = 0;
				for (int e = 0; e < dh; e++)
					s += (double)a->q[(size_t)(r0 + i) * a->ldq + h * dh + e] *
					     a->k[(size_t)(r0 + j) * a->ldk + (h / group) * dh + e];
				p[j] = ok ? s * a->scale : -INFINITY;
				mx = fmax(mx, p[j]);
			}
			for (int j = 0; j < len; j++)
				sum += (p[j] = exp(p[j] - mx));
			for (int e = 0; e < dh; e++) {
				double c = 0;
				for (int j = 0; j < len; j++)
					c += p[j] / sum * a->v[(size_t)(r0 + j) * a->ldv + (h / group) * dh + e];
				ctx[(size_t)i * ldc + h * dh + e] = c;
			}
		}
	free(p);
}

static emb_model *fake_model(const emb_kernels *k, int threads, int maxlen)
{
	emb_model *m = calloc(1, sizeof(*m));
	emb_err err;

	cr_assert(m);
	m->k = k;
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
	free(m);
}

/* every kernel variant, the four masks (none, causal, window, both), the
 * batch against the oracle and each sequence alone against the batch */
static void check_attention(int heads, int kvh, int dh, const int *lens,
                            int NS, int maxlen)
{
	const int ldc = heads * dh;
	const int ld = ldc + 2 * kvh * dh;     /* packed q|k|v rows */
	const emb_kernels *v[4];
	int nv = tu_all_variants(v), start[8] = { 0 }, T;
	emb_seq seqs[8];

	cr_assert(NS <= 7);

	for (int s = 0; s < NS; s++) {
		start[s + 1] = start[s] + lens[s];
		seqs[s] = (emb_seq){ NULL, NULL, lens[s] };
	}
	T = start[NS];
	float *qkv = tu_rand_vec((size_t)T * ld, 1.5f);
	float *ctx = malloc((size_t)T * ldc * sizeof(float));
	float *one = malloc((size_t)T * ldc * sizeof(float));
	double *ref = malloc(sizeof(double) * T * ldc);
	for (int vi = 0; vi < nv; vi++)
		for (int mode = 0; mode < 4; mode++) {
			emb_attn a = {
				.heads = heads, .kv_heads = kvh, .head_dim = dh,
				.q = qkv, .k = qkv + ldc, .v = qkv + ldc + kvh * dh,
				.ldq = ld, .ldk = ld, .ldv = ld, .scale = 0.2f,
				.causal = mode & 1, .window = mode & 2 ? 9 : 0,
			};
			emb_batch b = { seqs, NS, start, T, maxlen };
			emb_model *m = fake_model(v[vi], 2, maxlen);
			emb_err err;
			cr_assert_eq(emb_attention(m, ctx, &a, &b, &err), 0, "%s", err.msg);
			for (int s = 0; s < NS; s++) {
				emb_batch b1 = { seqs + s, 1, start, lens[s], lens[s] };
				emb_attn a1 = a;
				a1.q += (size_t)start[s] * ld;
				a1.k += (size_t)start[s] * ld;
				a1.v += (size_t)start[s] * ld;
				ref_attention(ref, &a, start[s], lens[s]);
				for (int e = 0; e < lens[s] * ldc; e++)
					cr_assert(fabs(ctx[(size_t)start[s] * ldc + e] - ref[e]) < 2e-5,
					          "%s mode %d seq %d elem %d: %g vs %g", v[vi]->name,
					          mode, s, e, ctx[(size_t)start[s] * ldc + e], ref[e]);
				/* alone (start[0] == 0 offsets) == in the batch, bitwise */
				cr_assert_eq(emb_attention(m, one, &a1, &b1, &err), 0);
				cr_assert(!memcmp(one, ctx + (size_t)start[s] * ldc,
				                  (size_t)lens[s] * ldc * sizeof(float)),
				          "%s mode %d: sequence %d alone differs", v[vi]->name,
				          mode, s);
			}
			free_fake(m);
		}
	free(qkv); free(ctx); free(one); free(ref);
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
