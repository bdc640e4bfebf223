/*
 * st/chunk.c - late chunking: one vector per window from the token
 * embeddings of one forward pass over the whole document.  A window's
 * vector is the mean of the last hidden state over its token positions
 * (float32 sums in token order, as emb_pool's mean), then the model's
 * Dense modules in order (y = act(W x + b)), then Normalize when the
 * model has one.  The pooling mode of the model (cls, max, ...) takes no
 * part: a window has no CLS token of its own.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "st/st.h"

int emb_chunk_pool_dim(int d, const emb_dense *dense, size_t n_dense)
{
	return n_dense ? dense[n_dense - 1].out : d;
}

int emb_chunk_pool_windows(float **out, int *outn, const float *tok, int n,
                           int d, const size_t *start, const size_t *end,
                           size_t nw, const emb_dense *dense, size_t n_dense,
                           int normalize, emb_err *err)
{
	float *v;
	int pd = d;
	size_t i;

	*out = NULL;
	*outn = 0;
	if (d <= 0 || n <= 0)
		return emb_err_set(err, "cannot pool an empty sequence (%d tokens of %d values)",
		                   n, d);
	if (nw < 1 || nw > (size_t)INT_MAX)
		return emb_err_set(err, "%zu windows to pool", nw);
	for (i = 0; i < nw; i++)
		if (start[i] >= end[i] || end[i] > (size_t)n)
			return emb_err_set(err, "window [%zu, %zu) is empty or outside the %d token embeddings",
			                   start[i], end[i], n);
	if (n_dense && dense[0].in != d)
		return emb_err_set(err, "the window's mean has %d values, the Dense module takes %d",
		                   d, dense[0].in);
	for (i = 1; i < n_dense; i++)
		if (dense[i].in != dense[i - 1].out)
			return emb_err_set(err, "Dense module %zu takes %d values, the one before gives %d",
			                   i, dense[i].in, dense[i - 1].out);
	if (nw > SIZE_MAX / sizeof(float) / (size_t)d ||
	    !(v = malloc(nw * (size_t)d * sizeof(float))))
		return emb_err_set(err, "out of memory");
	// mean over rows start[i]..end[i]-1 of tok (n, d) -> v row i (d)
	for (i = 0; i < nw; i++) {
		if (emb_pool(v + i * (size_t)d, tok + start[i] * (size_t)d,
		             (int)(end[i] - start[i]), d, EMB_POOL_MEAN, 0,
		             err) < 0) {
			free(v);
			return -1;
		}
	}
	// v (nw, d) -> v (nw, pd): the Dense modules, all windows at once
	if (emb_dense_rows(&v, &pd, (int)nw, dense, n_dense, NULL, err) < 0)
		return -1;
	if (normalize)
		for (i = 0; i < nw; i++)
			emb_normalize(v + i * (size_t)pd, pd);
	*out = v;
	*outn = pd;
	return 0;
}
