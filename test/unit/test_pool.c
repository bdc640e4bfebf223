/* test_pool.c - sentence-transformers Pooling and Normalize */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"

/* tok (4, 3) */
static const float T[4][3] = {
	{ 1.0f, -2.0f, 0.5f },
	{ 3.0f, 0.0f, -1.0f },
	{ -1.0f, 4.0f, 2.0f },
	{ 0.25f, 1.0f, -3.0f },
};

Test(pool, dims)
{
	cr_expect_eq(emb_pool_dim(EMB_POOL_MEAN, 384), 384);
	cr_expect_eq(emb_pool_dim(EMB_POOL_CLS | EMB_POOL_MAX | EMB_POOL_MEAN, 64), 192);
	cr_expect_eq(emb_pool_dim(0x3f, 10), 60);
	cr_expect_eq(emb_pool_dim(0, 10), 0);
	cr_expect_eq(emb_pool_dim(1u << 9, 10), 0);
	cr_expect_eq(emb_pool_dim(EMB_POOL_MEAN, 0), 0);
}

Test(pool, each_mode)
{
	float o[3];
	emb_err e;
	int j;

	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_CLS, 0, &e), 0);
	for (j = 0; j < 3; j++)
		cr_expect_eq(o[j], T[0][j]);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_LAST, 0, &e), 0);
	for (j = 0; j < 3; j++)
		cr_expect_eq(o[j], T[3][j]);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MAX, 0, &e), 0);
	cr_expect_eq(o[0], 3.0f);
	cr_expect_eq(o[1], 4.0f);
	cr_expect_eq(o[2], 2.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MEAN, 0, &e), 0);
	cr_expect_eq(o[0], (((1.0f + 3.0f) + -1.0f) + 0.25f) / 4.0f);
	cr_expect_eq(o[1], 3.0f / 4.0f);
	cr_expect_eq(o[2], -1.5f / 4.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MEAN_SQRT_LEN, 0, &e), 0);
	cr_expect_eq(o[0], 3.25f / 2.0f);
	cr_expect_eq(o[1], 3.0f / 2.0f);
	/* weights 1, 2, 3, 4 */
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_WEIGHTED_MEAN, 0, &e), 0);
	cr_expect_eq(o[0], (1.0f * 1 + 3.0f * 2 + -1.0f * 3 + 0.25f * 4) / 10.0f);
	cr_expect_eq(o[1], (-2.0f * 1 + 0.0f + 4.0f * 3 + 1.0f * 4) / 10.0f);
	cr_expect_eq(o[2], (0.5f * 1 + -1.0f * 2 + 2.0f * 3 + -3.0f * 4) / 10.0f);
}

Test(pool, concatenation_order)
{
	float all[18], one[3];
	unsigned order[] = { EMB_POOL_CLS, EMB_POOL_MAX, EMB_POOL_MEAN,
	                     EMB_POOL_MEAN_SQRT_LEN, EMB_POOL_WEIGHTED_MEAN,
	                     EMB_POOL_LAST };
	emb_err e;
	int i;

	cr_assert_eq(emb_pool(all, &T[0][0], 4, 3, 0x3f, 0, &e), 0);
	for (i = 0; i < 6; i++) {
		emb_pool(one, &T[0][0], 4, 3, order[i], 0, &e);
		cr_expect(!memcmp(all + 3 * i, one, sizeof(one)), "mode %d", i);
	}
	/* mean before cls? no: cls always first */
	cr_assert_eq(emb_pool(all, &T[0][0], 4, 3, EMB_POOL_MEAN | EMB_POOL_CLS, 0, &e), 0);
	cr_expect_eq(all[0], 1.0f);
	cr_expect_eq(all[3], 3.25f / 4.0f);
}

Test(pool, skip_prompt)
{
	float o[3];
	emb_err e;

	/* first 2 rows masked: mean of rows 2, 3 */
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MEAN, 2, &e), 0);
	cr_expect_eq(o[0], (-1.0f + 0.25f) / 2.0f);
	cr_expect_eq(o[1], 5.0f / 2.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MAX, 2, &e), 0);
	cr_expect_eq(o[0], 0.25f);
	cr_expect_eq(o[2], 2.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_WEIGHTED_MEAN, 2, &e), 0);
	cr_expect_eq(o[0], (-1.0f * 3 + 0.25f * 4) / 7.0f);
	/* cls and last ignore the mask */
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_CLS, 2, &e), 0);
	cr_expect_eq(o[0], 1.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_LAST, 3, &e), 0);
	cr_expect_eq(o[2], -3.0f);
	/* everything masked: as ST, mean 0 and max -1e9 */
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MEAN, 4, &e), 0);
	cr_expect_eq(o[0], 0.0f);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_MAX, 9, &e), 0);
	cr_expect_eq(o[1], -1e9f);
	/* lasttoken with every row masked: ST's flip/argmax gives row 0 */
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_LAST, 4, &e), 0);
	cr_expect_eq(o[0], T[0][0]);
	cr_expect_eq(o[2], T[0][2]);
	cr_assert_eq(emb_pool(o, &T[0][0], 4, 3, EMB_POOL_LAST, 9, &e), 0);
	cr_expect_eq(o[1], T[0][1]);
}

Test(pool, errors)
{
	float o[3];
	emb_err e;

	cr_expect_eq(emb_pool(o, &T[0][0], 0, 3, EMB_POOL_MEAN, 0, &e), -1);
	cr_expect(strstr(e.msg, "empty") != NULL, "%s", e.msg);
	cr_expect_eq(emb_pool(o, &T[0][0], 4, 3, 0, 0, &e), -1);
}

Test(pool, normalize)
{
	float v[4] = { 3.0f, 0.0f, -4.0f, 0.0f }, z[3] = { 0, 0, 0 };
	float tiny[2] = { 1e-13f, 0.0f };
	double ss = 0;
	float r[97];
	int i;

	emb_normalize(v, 4);
	cr_expect_eq(v[0], 0.6f);
	cr_expect_eq(v[2], -0.8f);
	emb_normalize(z, 3);
	cr_expect_eq(z[0], 0.0f);
	emb_normalize(tiny, 2);         /* eps 1e-12: 1e-13 / 1e-12 */
	cr_expect_float_eq(tiny[0], 0.1f, 1e-7);
	for (i = 0; i < 97; i++)
		r[i] = sinf((float)i * 1.7f) * (float)(i + 1);
	emb_normalize(r, 97);
	for (i = 0; i < 97; i++)
		ss += (double)r[i] * r[i];
	cr_expect(fabs(ss - 1.0) < 1e-6, "%g", ss);
}

/* a Dense module (in, out) of deterministic weights, w new */
static emb_dense dense_make(int in, int out, int bias, int tanh_act,
                            unsigned seed)
{
	emb_dense d = { in, out, tanh_act, NULL, NULL, NULL };

	d.w = malloc((size_t)in * out * sizeof(float));
	cr_assert(d.w != NULL);
	for (int i = 0; i < in * out; i++) {
		seed = seed * 1103515245u + 12345u;
		d.w[i] = (float)((seed >> 16) % 2001) / 4000.0f - 0.25f;
	}
	if (bias) {
		d.b = malloc((size_t)out * sizeof(float));
		cr_assert(d.b != NULL);
		for (int o = 0; o < out; o++)
			d.b[o] = 0.01f * (float)(o % 7) - 0.03f;
	}
	return d;
}

/* the Dense modules: packed once (w replaced), a batch of rows gives
 * each row the bits it has alone, and the values of the formula */
Test(pool, dense_rows)
{
	enum { IN = 37, MID = 70, OUT = 19, ROWS = 41 };
	emb_dense d[2] = { dense_make(IN, MID, 1, 1, 3),
	                   dense_make(MID, OUT, 0, 0, 5) };
	float *w0 = malloc(sizeof(float) * IN * MID), *w1 = malloc(sizeof(float) * MID * OUT);
	float *x = malloc(sizeof(float) * ROWS * IN);
	emb_err err = { "" };
	int pd = IN;

	cr_assert(w0 && w1 && x);
	memcpy(w0, d[0].w, sizeof(float) * IN * MID);
	memcpy(w1, d[1].w, sizeof(float) * MID * OUT);
	for (int i = 0; i < ROWS * IN; i++)
		x[i] = sinf((float)i * 0.37f) * (float)(1 + i % 5);
	/* not packed yet: refused */
	{
		float *v = malloc(sizeof(float) * IN);
		int vn = IN;
		cr_assert(v != NULL);
		memcpy(v, x, sizeof(float) * IN);
		cr_expect_eq(emb_dense_apply(&v, &vn, d, 2, &err), -1);
		cr_expect(strstr(err.msg, "not packed") != NULL, "%s", err.msg);
		cr_expect(v == NULL);
	}
	cr_assert_eq(emb_dense_pack(d, 2, &err), 0, "%s", err.msg);
	cr_expect(d[0].w == NULL && d[0].wp != NULL && d[1].wp != NULL);
	cr_assert_eq(emb_dense_pack(d, 2, &err), 0, "a second pack: %s", err.msg);
	float *y = malloc(sizeof(float) * ROWS * IN);
	cr_assert(y != NULL);
	memcpy(y, x, sizeof(float) * ROWS * IN);
	cr_assert_eq(emb_dense_rows(&y, &pd, ROWS, d, 2, NULL, &err), 0, "%s",
	             err.msg);
	cr_assert_eq(pd, OUT);
	for (int r = 0; r < ROWS; r++) {
		float *v = malloc(sizeof(float) * IN);
		double h[MID];
		int vn = IN;
		cr_assert(v != NULL);
		memcpy(v, x + r * IN, sizeof(float) * IN);
		cr_assert_eq(emb_dense_apply(&v, &vn, d, 2, &err), 0, "%s", err.msg);
		cr_assert_eq(vn, OUT);
		cr_expect_eq(memcmp(v, y + r * OUT, sizeof(float) * OUT), 0,
		             "row %d: alone and in the batch differ", r);
		// the formula in double: tanh(W0 x + b0), then W1 h
		for (int o = 0; o < MID; o++) {
			double a = d[0].b[o];
			for (int k = 0; k < IN; k++)
				a += (double)w0[o * IN + k] * x[r * IN + k];
			h[o] = tanh(a);
		}
		for (int o = 0; o < OUT; o++) {
			double a = 0;
			for (int k = 0; k < MID; k++)
				a += (double)w1[o * MID + k] * h[k];
			cr_expect(fabs(a - v[o]) < 1e-5, "row %d, %d: %g, want %g", r,
			          o, v[o], a);
		}
		free(v);
	}
	free(y);
	free(x);
	free(w0);
	free(w1);
	for (int i = 0; i < 2; i++) {
		free(d[i].wp);
		free(d[i].b);
	}
}

/* how many vectors go through the Dense modules at a time: 256, fewer
 * for a module so wide that they would take more than 4 Mi floats */
Test(pool, dense_chunk)
{
	emb_dense d[2] = { { 768, 3072, 0, NULL, NULL, NULL },
	                   { 3072, 768, 0, NULL, NULL, NULL } };

	cr_expect_eq(emb_dense_chunk(d, 2, 768), 256);
	cr_expect_eq(emb_dense_chunk(NULL, 0, 768), 256);
	d[1].out = 1 << 20;     /* 4 Mi floats for 4 vectors */
	cr_expect_eq(emb_dense_chunk(d, 2, 768), 4);
	d[1].out = 1 << 24;
	cr_expect_eq(emb_dense_chunk(d, 2, 768), 1);
	cr_expect_eq(emb_dense_chunk(NULL, 0, 1 << 16), 64);
}
