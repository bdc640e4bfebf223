/*
 * modcheck.c - module shapes checked at load (modcheck.h): an
 * inconsistent model is one error and exit 3, not the same error for
 * every record (exit 1), in emb-encode --pool and emb-pool -m alike.
 */
#include "tool/modcheck.h"

int emb_pool_spec_check(const emb_pool_spec *p, int hidden, int pool_dim,
                        const char *dir, emb_err *err)
{
	int d = hidden > 0 ? hidden : pool_dim, pd;

	if (hidden > 0 && pool_dim > 0 && hidden != pool_dim)
		return emb_err_set(err, "%s: the Pooling module's "
		                   "word_embedding_dimension %d does not match "
		                   "the model's hidden size %d (config.json)",
		                   dir, pool_dim, hidden);
	if (d <= 0)
		return 0;       /* known only from the records */
	pd = emb_pool_dim(p->modes, d);
	if (pd <= 0)
		return emb_err_set(err, "%s: invalid pooling for dimension %d",
		                   dir, d);
	for (size_t i = 0; i < p->n_dense; i++) {
		int in = i ? p->dense[i - 1].out : pd;
		if (p->dense[i].in != in)
			return emb_err_set(err, "%s: Dense module %zu has "
			                   "in_features %d, but %s %d values", dir,
			                   i + 1, p->dense[i].in,
			                   i ? "the module before it gives" :
			                   "pooling gives", in);
	}
	return 0;
}
