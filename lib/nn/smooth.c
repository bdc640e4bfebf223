/*
 * smooth.c - SmoothQuant for W8A8 (README "Precision modes"): the
 * per-input-channel scales of a linear layer that reads a norm's output,
 * migrated into its weights at load (the activations are divided by them
 * inside the GEMM's row quantizer, layers.c).
 */
#include <math.h>
#include <stdlib.h>
#include "nn/nn-internal.h"

/*
 * SmoothQuant (alpha 0.5) for a linear W (n,k) that reads the output of
 * the norm NM: per input channel j,
 *   s_j = sqrt(amax_x_j) / sqrt(amax_w_j),  amax_w_j = max_i |W[i][j]|,
 * with amax_x_j estimated without calibration data from the norm as
 * |gain_j| + |bias_j| (the norm's output is gain * (a value of a few
 * units at most) + bias).  A factor common to every channel changes
 * nothing (the per-row scales absorb it), so s_j is taken relative to
 * the median channel's and rounded to a power of two: W[:, j] * s_j and
 * x_j / s_j are exact in float32 (the product is unchanged before the
 * int8 rounding), and a layer without outlier channels keeps s = 1 on
 * nearly every channel instead of a random split between two powers.
 * W becomes W * s (in place), out->xcs (k, model-owned) = 1 / s.
 * Channels with a zero estimate or a zero column keep s_j = 1.
 */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int emb_smooth_weights(emb_linear *out, emb_model *m, const emb_norm *nm,
                       float *w, int n, int k, emb_err *err)
{
	float *cs = emb_model_alloc(m, (size_t)k, err);
	double *l2 = malloc(2 * (size_t)k * sizeof(double)), *srt = l2 + k;
	double mid = 0;
	int nv = 0;

	if (!cs || !l2) {
		free(l2);
		return cs ? emb_err_set(err, "out of memory") : -1;
	}
	for (int j = 0; j < k; j++)
		cs[j] = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < k; j++) {
			float a = fabsf(w[(size_t)i * k + j]);
			cs[j] = a > cs[j] ? a : cs[j];
		}
	/* log2 s_j (NAN: keep 1), and their median */
	for (int j = 0; j < k; j++) {
		float ax = fabsf(nm->w[j]) + (nm->b ? fabsf(nm->b[j]) : 0.0f);
		l2[j] = NAN;
		if (ax > 0 && cs[j] > 0 && isfinite(ax))
			srt[nv++] = l2[j] = 0.5 * (log2((double)ax) - log2((double)cs[j]));
	}
	if (nv) {
		qsort(srt, (size_t)nv, sizeof(double), cmp_double);
		mid = srt[nv / 2];
	}
	for (int j = 0; j < k; j++) {
		/* relative to the median channel, rounded, within +-30 */
		double e = isnan(l2[j]) ? 0 : nearbyint(l2[j] - mid);
		e = e < -30 ? -30 : e > 30 ? 30 : e;
		cs[j] = ldexpf(1.0f, -(int)e);   /* 1 / s_j */
	}
	free(l2);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < k; j++)
			w[(size_t)i * k + j] /= cs[j];   /* exact: a power of two */
	out->xcs = cs;
	return 0;
}

