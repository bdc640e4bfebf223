/*
 * pool.c - sentence-transformers Pooling and Normalize.
 *
 * Pooling concatenates, in this order, the outputs of the enabled modes:
 * cls, max, mean, mean_sqrt_len, weightedmean, lasttoken (as
 * sentence_transformers.models.Pooling.forward appends them).  One
 * unpadded sequence: the attention mask is all ones except for the first
 * SKIP rows (prompt tokens when include_prompt is false), which ST masks
 * out of max/mean/weighted pooling; cls is row 0 and lasttoken row n-1
 * regardless.  Sums are float32 in token order; divisors as ST computes
 * them (mask sums clamped to 1e-9; max over an all-masked column is -1e9).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st/st.h"
#include "kern/kernels.h"

static const unsigned pool_order[] = {
	EMB_POOL_CLS, EMB_POOL_MAX, EMB_POOL_MEAN, EMB_POOL_MEAN_SQRT_LEN,
	EMB_POOL_WEIGHTED_MEAN, EMB_POOL_LAST,
};
#define NMODES (sizeof(pool_order) / sizeof(pool_order[0]))
#define ALL_MODES (EMB_POOL_CLS | EMB_POOL_MAX | EMB_POOL_MEAN | \
	EMB_POOL_MEAN_SQRT_LEN | EMB_POOL_WEIGHTED_MEAN | EMB_POOL_LAST)

int emb_pool_dim(unsigned modes, int d)
{
	int k = 0;
	size_t i;

	if (d <= 0 || (modes & ~(unsigned)ALL_MODES))
		return 0;
	for (i = 0; i < NMODES; i++)
		if (modes & pool_order[i])
			k++;
	if (k > 0 && d > (1 << 30) / k)
		return 0;
	return k * d;
}

/* tok (n, d), rows >= skip take part -> out (d): sum in token order */
static void masked_sum(float *out, const float *tok, int n, int d, int skip)
{
	int i, j;

	for (j = 0; j < d; j++)
		out[j] = 0.0f;
	for (i = skip; i < n; i++) {
		const float *row = tok + (size_t)i * d;
		for (j = 0; j < d; j++)
			out[j] += row[j];
	}
}

int emb_pool(float *out, const float *tok, int n, int d, unsigned modes,
             int skip, emb_err *err)
{
	float *o = out;
	int i, j;

	if (n <= 0)
		return emb_err_set(err, "cannot pool an empty sequence (0 tokens)");
	if (d <= 0 || !emb_pool_dim(modes, d))
		return emb_err_set(err, "invalid pooling (modes 0x%x, dimension %d)",
		                   modes, d);
	if (skip < 0)
		skip = 0;
	if (skip > n)
		skip = n;
	if (modes & EMB_POOL_CLS) {
		// tok row 0 (d) -> o (d)
		memcpy(o, tok, (size_t)d * sizeof(float));
		o += d;
	}
	if (modes & EMB_POOL_MAX) {
		// max over rows skip..n-1 of tok (n, d) -> o (d); masked: -1e9
		for (j = 0; j < d; j++)
			o[j] = skip > 0 ? -1e9f : tok[j];
		for (i = skip; i < n; i++) {
			const float *row = tok + (size_t)i * d;
			for (j = 0; j < d; j++)
				if (row[j] > o[j] || isnan(row[j]))
					o[j] = row[j];
		}
		o += d;
	}
	if (modes & (EMB_POOL_MEAN | EMB_POOL_MEAN_SQRT_LEN)) {
		/* sum_mask = clamp(count, 1e-9) */
		float cnt = (float)(n - skip), den;
		if (cnt < 1e-9f)
			cnt = 1e-9f;
		if (modes & EMB_POOL_MEAN) {
			masked_sum(o, tok, n, d, skip);
			for (j = 0; j < d; j++)
				o[j] = o[j] / cnt;
			o += d;
		}
		if (modes & EMB_POOL_MEAN_SQRT_LEN) {
			masked_sum(o, tok, n, d, skip);
			den = sqrtf(cnt);
			for (j = 0; j < d; j++)
				o[j] = o[j] / den;
			o += d;
		}
	}
	if (modes & EMB_POOL_WEIGHTED_MEAN) {
		/* weights 1..n by position; the mask zeroes the first skip */
		float wsum = 0.0f;
		for (j = 0; j < d; j++)
			o[j] = 0.0f;
		for (i = skip; i < n; i++) {
			const float *row = tok + (size_t)i * d;
			float w = (float)(i + 1);
			for (j = 0; j < d; j++)
				o[j] += row[j] * w;
			wsum += w;
		}
		if (wsum < 1e-9f)
			wsum = 1e-9f;
		for (j = 0; j < d; j++)
			o[j] = o[j] / wsum;
		o += d;
	}
	if (modes & EMB_POOL_LAST) {
		/* the last unmasked row: n-1; ST takes row 0 when every row
		 * is masked (a prompt that fills the whole sequence) */
		// tok row n-1 (or 0) (d) -> o (d)
		memcpy(o, tok + (size_t)(skip >= n ? 0 : n - 1) * d,
		       (size_t)d * sizeof(float));
		o += d;
	}
	return 0;
}

int emb_dense_pack(emb_dense *dense, size_t n, emb_err *err)
{
	const emb_kernels *k = NULL;

	if (n && emb_kernels_select(&k, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		emb_dense *dn = &dense[i];
		size_t sz = emb_pack_size(dn->out, dn->in);
		if (dn->wp)
			continue;
		if (!dn->w || !sz)
			return emb_err_set(err, "Dense module %zu has no weights",
			                   i + 1);
		if (!(dn->wp = malloc(sz * sizeof(float))))
			return emb_err_set(err, "out of memory");
		// W (out, in) row-major -> panels (kern/kernels.h)
		k->pack(dn->wp, dn->w, dn->in, dn->out, dn->in);
		free(dn->w);
		dn->w = NULL;
	}
	return 0;
}

/* x (rows, dn->in) -> y (rows, dn->out): the Dense module's GEMM on the
 * model's threads (M set) or with the table K in this thread, then its
 * Tanh */
static void dense_rows(float *y, const float *x, int rows,
                       const emb_dense *dn, emb_model *m,
                       const emb_kernels *k)
{
	// act(x (rows, in) @ W (out, in)^T + b (out)) -> y (rows, out)
	if (m)
		emb_model_matmul(m, y, x, rows, dn->wp, dn->b, dn->out, dn->in);
	else
		k->gemm(y, dn->out, x, dn->in, dn->wp, dn->b, rows, dn->out,
		        dn->in);
	if (dn->tanh)
		for (size_t i = 0; i < (size_t)rows * (size_t)dn->out; i++)
			y[i] = tanhf(y[i]);
}

int emb_dense_rows(float **x, int *pd, int rows, const emb_dense *dense,
                   size_t n, emb_model *m, emb_err *err)
{
	const emb_kernels *k = NULL;

	if (n && !m && emb_kernels_select(&k, err) < 0) {
		free(*x);
		*x = NULL;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const emb_dense *dn = &dense[i];
		float *y = NULL;
		if (!dn->wp)
			emb_err_set(err, "Dense module %zu is not packed", i + 1);
		else if (!(y = malloc((size_t)rows * (size_t)dn->out *
		                      sizeof(float))))
			emb_err_set(err, "out of memory");
		if (!y) {
			free(*x);
			*x = NULL;
			return -1;
		}
		dense_rows(y, *x, rows, dn, m, k);
		free(*x);
		*x = y;
		*pd = dn->out;
	}
	return 0;
}

/* rows of vectors that go through the Dense modules together: 256, or
 * fewer where a module is so wide that they would take more than
 * DENSE_FLOATS floats (memory in proportion to the files) */
#define DENSE_ROWS 256
#define DENSE_FLOATS ((size_t)1 << 22)

int emb_dense_chunk(const emb_dense *dense, size_t n, int width)
{
	size_t wide = width > 0 ? (size_t)width : 1;
	int rows = DENSE_ROWS;

	for (size_t i = 0; i < n; i++)
		if ((size_t)dense[i].out > wide)
			wide = (size_t)dense[i].out;
	while (rows > 1 && (size_t)rows * wide > DENSE_FLOATS)
		rows /= 2;
	return rows;
}

int emb_dense_apply(float **v, int *pd, const emb_dense *dense, size_t n,
                    emb_err *err)
{
	return emb_dense_rows(v, pd, 1, dense, n, NULL, err);
}

void emb_normalize(float *v, int d)
{
	double ss = 0.0;
	float norm;
	int j;

	for (j = 0; j < d; j++)
		ss += (double)v[j] * v[j];
	if (sqrt(ss) > FLT_MAX) {
		/* finite values whose norm is past float's range: divide in
		 * double (a float norm would be infinite, the vector 0) */
		double dn = sqrt(ss);
		for (j = 0; j < d; j++)
			v[j] = (float)(v[j] / dn);
		return;
	}
	norm = (float)sqrt(ss);
	if (norm < 1e-12f)
		norm = 1e-12f;
	for (j = 0; j < d; j++)
		v[j] = v[j] / norm;
}

/* larger value first, then lower index (qsort_r is not in C11: the
 * values come through a file-static pointer; one call at a time per
 * thread is all emb needs, so it is thread-local) */
static _Thread_local const float *sp_vals;

static int sp_cmp(const void *a, const void *b)
{
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;

	if (sp_vals[i] != sp_vals[j])
		return sp_vals[i] > sp_vals[j] ? -1 : 1;
	return (i > j) - (i < j);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;

	return (i > j) - (i < j);
}

size_t emb_sparse_select(int32_t *idx, float *val, const float *w, int n,
                         size_t top_k)
{
	size_t k = 0;

	for (int i = 0; i < n; i++)
		if (w[i] != 0)
			idx[k++] = i;
	if (top_k > 0 && k > top_k) {
		sp_vals = w;
		qsort(idx, k, sizeof(int32_t), sp_cmp);
		k = top_k;
		qsort(idx, k, sizeof(int32_t), cmp_i32);
	}
	for (size_t i = 0; i < k; i++)
		val[i] = w[idx[i]];
	return k;
}

int emb_out_sparse(emb_buf *b, const char *key, const int32_t *idx,
                   const float *val, size_t n, const emb_tokenizer *terms)
{
	emb_buf j;
	char num[32];
	int rc = 0;

	emb_buf_init(&j);
	emb_buf_add(&j, terms ? "{\"terms\":[" : "{\"indices\":[",
	            terms ? 10 : 12);
	for (size_t i = 0; i < n; i++) {
		if (i)
			emb_buf_add(&j, ",", 1);
		if (terms) {
			const char *t = emb_tokenizer_id_to_token(terms, idx[i]);
			emb_buf_add_jstr(&j, t ? t : "", t ? strlen(t) : 0);
		} else {
			int len = snprintf(num, sizeof(num), "%d", (int)idx[i]);
			emb_buf_add(&j, num, (size_t)len);
		}
	}
	emb_buf_add(&j, "],\"values\":[", 12);
	for (size_t i = 0; i < n; i++) {
		if (i)
			emb_buf_add(&j, ",", 1);
		emb_buf_add(&j, num, emb_fmt_f32(num, val[i]));
	}
	emb_buf_add(&j, "]}", 2);
	if (emb_buf_failed(&j))
		rc = -1;
	else
		emb_out_json(b, key, j.p, j.len);
	emb_buf_release(&j);
	return rc;
}
