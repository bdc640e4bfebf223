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
#include <math.h>
#include <string.h>

#include "st/st.h"

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

void emb_normalize(float *v, int d)
{
	double ss = 0.0;
	float norm;
	int j;

	for (j = 0; j < d; j++)
		ss += (double)v[j] * v[j];
	norm = (float)sqrt(ss);
	if (norm < 1e-12f)
		norm = 1e-12f;
	for (j = 0; j < d; j++)
		v[j] = v[j] / norm;
}
