/*
 * topk.c - the result order of search.h (score descending, ties by the
 * lower document index), the bounded heap the first stage keeps per
 * query, and emb_search_naive, the reference the tests hold the fast
 * path to.
 */
#include <math.h>
#include <stdlib.h>

#include "st/search-internal.h"

void emb_topk_push(emb_hit *h, int *n, int cap, float s,
                             uint32_t doc)
{
	int i;

	if (*n < cap) {
		i = (*n)++;
		while (i > 0) {
			int p = (i - 1) / 2;
			if (!emb_hit_before(h[p].score, h[p].doc, s, doc))
				break;
			h[i] = h[p];
			i = p;
		}
		h[i].score = s;
		h[i].doc = doc;
		return;
	}
	if (!emb_hit_before(s, doc, h[0].score, h[0].doc))
		return;
	i = 0;
	for (;;) {
		int l = 2 * i + 1, r = l + 1, w = i;
		float ws = s;
		uint32_t wd = doc;
		if (l < *n && emb_hit_before(ws, wd, h[l].score, h[l].doc)) {
			w = l;
			ws = h[l].score;
			wd = h[l].doc;
		}
		if (r < *n && emb_hit_before(ws, wd, h[r].score, h[r].doc))
			w = r;
		if (w == i)
			break;
		h[i] = h[w];
		i = w;
	}
	h[i].score = s;
	h[i].doc = doc;
}

int emb_hit_cmp(const void *a, const void *b)
{
	const emb_hit *x = a, *y = b;

	if (emb_hit_before(x->score, x->doc, y->score, y->doc))
		return -1;
	return emb_hit_before(y->score, y->doc, x->score, x->doc) ? 1 : 0;
}

void emb_search_naive(emb_hit *hits, int *nhits, const emb_index *ix,
                      unsigned prec, int score, const float *q, int k)
{
	emb_hit *all = malloc((ix->n + 1) * sizeof(emb_hit));
	int dim = ix->dim;
	double qq = 0;

	*nhits = 0;
	if (!all)
		return;
	for (int kk = 0; kk < dim; kk++)
		qq += (double)q[kk] * q[kk];
	qq = sqrt(qq);
	for (size_t j = 0; j < ix->n; j++) {
		double s = 0, dd = 0;
		if (prec == EMB_IX_BINARY) {
			for (int kk = 0; kk < dim; kk++) {
				size_t w = j / 8 * (size_t)ix->words * 8 +
				           (size_t)(kk / 64) * 8 + j % 8;
				const unsigned char *b = (const unsigned char *)(ix->bin + w);
				int bit = b[(kk % 64) / 8] & (0x80 >> (kk % 8)) ? 1 : -1;
				s += q[kk] > 0 ? bit : -bit;
			}
			if (score == EMB_SCORE_COSINE)
				s /= dim;
		} else {
			for (int kk = 0; kk < dim; kk++) {
				double x = emb_ix_value(ix, prec, j, kk);
				s += q[kk] * x;
				dd += x * x;
			}
			if (score == EMB_SCORE_COSINE)
				s /= (qq > 1e-12 ? qq : 1e-12) *
				     (sqrt(dd) > 1e-12 ? sqrt(dd) : 1e-12);
		}
		all[j].score = (float)s;
		all[j].doc = (uint32_t)j;
	}
	qsort(all, ix->n, sizeof(emb_hit), emb_hit_cmp);
	for (size_t j = 0; j < ix->n && (int)j < k; j++)
		hits[(*nhits)++] = all[j];
	free(all);
}

