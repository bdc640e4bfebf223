/*
 * st/chunk.c - late chunking: one vector per window from the token
 * embeddings of one forward pass over the whole document.  A window's
 * vector is the mean of the last hidden state over its token positions
 * (float32 sums in token order, as emb_pool's mean), then the model's
 * Dense modules in order (y = act(W x + b)), then Normalize when the
 * model has one.  The pooling mode of the model (cls, max, ...) takes no
 * part: a window has no CLS token of its own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "st/st.h"

int emb_chunk_pool_dim(int d, const emb_dense *dense, size_t n_dense)
{
	return n_dense ? dense[n_dense - 1].out : d;
}

int emb_chunk_pool(float **out, int *outn, const float *tok, int n, int d,
                   size_t start, size_t end, const emb_dense *dense,
                   size_t n_dense, int normalize, emb_err *err)
{
	float *v;
	int pd = d;
	size_t i;

	*out = NULL;
	*outn = 0;
	if (d <= 0 || n <= 0)
		return emb_err_set(err, "cannot pool an empty sequence (%d tokens of %d values)",
		                   n, d);
	if (start >= end || end > (size_t)n)
		return emb_err_set(err, "window [%zu, %zu) is empty or outside the %d token embeddings",
		                   start, end, n);
	if (n_dense && dense[0].in != d)
		return emb_err_set(err, "the window's mean has %d values, the Dense module takes %d",
		                   d, dense[0].in);
	for (i = 1; i < n_dense; i++)
		if (dense[i].in != dense[i - 1].out)
			return emb_err_set(err, "Dense module %zu takes %d values, the one before gives %d",
			                   i, dense[i].in, dense[i - 1].out);
	v = malloc((size_t)d * sizeof(float));
	if (!v)
		return emb_err_set(err, "out of memory");
	// mean over rows start..end-1 of tok (n, d) -> v (d)
	if (emb_pool(v, tok + start * (size_t)d, (int)(end - start), d,
	             EMB_POOL_MEAN, 0, err) < 0) {
		free(v);
		return -1;
	}
	if (emb_dense_apply(&v, &pd, dense, n_dense, err) < 0)
		return -1;
	if (normalize)
		emb_normalize(v, pd);
	*out = v;
	*outn = pd;
	return 0;
}
