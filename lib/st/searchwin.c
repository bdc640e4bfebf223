/*
 * searchwin.c - top-k documents over an index of their windows
 * (emb-search --best-per id): each document ranked by its best window.
 *
 * The windows' top-k' (k' = 4k to start with) is walked best first and
 * the first window of each id kept, until k distinct ids; a query whose
 * k' windows hold fewer ids (and that did not see every window) is
 * searched again with k' four times larger.  A document's best window is
 * its first in that order, and a document absent from the top k' has
 * every window at or below the last one taken, so the result is the
 * exact top-k of the documents by max(window score), ties by the index
 * order of their best windows.
 */
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "st/search.h"

struct emb_best_per {
	const emb_index *ix;
	emb_search_opts o;      /* o.k: documents per query */
	emb_search *s;          /* over kw windows per query */
	int kw;
	emb_hit *hits;          /* (QB, kw) */
	int *nhits;
	emb_search *deep;       /* one query over dkw windows (deeper) */
	int dkw;
	emb_hit *dhits;         /* (dkw) */
	uint64_t *set;          /* hashes seen (2^bits slots) */
	size_t setcap;
};

#define QB 256
#define DEEP_MAX (1 << 24)      /* windows of one deeper search at most */

void emb_best_per_free(emb_best_per *b)
{
	if (!b)
		return;
	emb_search_free(b->s);
	emb_search_free(b->deep);
	free(b->dhits);
	free(b->hits);
	free(b->nhits);
	free(b->set);
	free(b);
}

/* a searcher over kw windows per query */
static int resize(emb_best_per *b, int kw, emb_err *err)
{
	emb_search_opts o = b->o;
	emb_hit *h;

	emb_search_free(b->s);
	b->s = NULL;
	o.k = kw;
	if (emb_search_new(&b->s, b->ix, &o, err) < 0)
		return -1;
	if (!(h = realloc(b->hits, (size_t)QB * (size_t)kw * sizeof(*h))))
		return emb_err_set(err, "out of memory");
	b->hits = h;
	b->kw = kw;
	return 0;
}

int emb_best_per_new(emb_best_per **out, const emb_index *ix,
                     const emb_search_opts *o, emb_err *err)
{
	emb_best_per *b = calloc(1, sizeof(*b));
	size_t n = emb_index_count(ix);
	long long kw = 4LL * o->k;

	*out = NULL;
	if (!b || !(b->nhits = malloc(QB * sizeof(int)))) {
		free(b);
		return emb_err_set(err, "out of memory");
	}
	b->ix = ix;
	b->o = *o;
	if (kw > (long long)n)
		kw = n ? (long long)n : 1;
	if (resize(b, (int)kw, err) < 0) {
		emb_best_per_free(b);
		return -1;
	}
	*out = b;
	return 0;
}

/* an id's hash in the set: FNV-1a, never 0 (an empty slot) */
static uint64_t hash(const char *s, size_t n)
{
	return emb_mem_hash(s, n) | 1;
}

/* the first window of each id among h (n, of a search for kw), at most
 * k into out; 1 when the k are found or h holds every window there is
 * to find (fewer than kw hits: the index or the threshold ran out) */
static int fold(emb_best_per *b, emb_hit *out, int *nout, const emb_hit *h,
                int n, int kw, int k)
{
	size_t cap = 1;
	int found = 0;

	while (cap < 2 * (size_t)n + 2)
		cap *= 2;
	if (cap > b->setcap) {
		uint64_t *s = realloc(b->set, cap * sizeof(*s));
		if (!s)
			return -1;
		b->set = s;
		b->setcap = cap;
	}
	memset(b->set, 0, cap * sizeof(*b->set));
	for (int i = 0; i < n && found < k; i++) {
		size_t len, slot, ol;
		const char *id = emb_index_id(b->ix, h[i].doc, &len);
		uint64_t hv = hash(id, len);
		int dup = 0;
		for (slot = hv & (cap - 1); b->set[slot];
		     slot = (slot + 1) & (cap - 1)) {
			if (b->set[slot] != hv)
				continue;
			/* the same hash: compare with the ids kept */
			for (int j = 0; j < found && !dup; j++) {
				const char *o = emb_index_id(b->ix, out[j].doc, &ol);
				dup = ol == len && !memcmp(o, id, len);
			}
			if (dup)
				break;
		}
		if (dup)
			continue;
		b->set[slot] = hv;
		out[found++] = h[i];
	}
	*nout = found;
	return found == k || n < kw || (size_t)kw >= emb_index_count(b->ix);
}

/* one query q whose first kw windows held too few ids: searched alone
 * with four times as many, until k ids or every window */
static int deeper(emb_best_per *b, emb_hit *out, int *nout, const float *q,
                  emb_err *err)
{
	long long n = (long long)emb_index_count(b->ix), kw = b->kw;
	int nd, rc;

	for (;;) {
		kw = 4 * kw < n ? 4 * kw : n;
		if (kw > DEEP_MAX)
			kw = DEEP_MAX;
		if (kw > b->dkw) {
			emb_search_opts o = b->o;
			emb_hit *h;
			emb_search_free(b->deep);
			b->deep = NULL;
			b->dkw = 0;
			o.k = (int)kw;
			if (emb_search_new(&b->deep, b->ix, &o, err) < 0)
				return -1;
			if (!(h = realloc(b->dhits, (size_t)kw * sizeof(*h))))
				return emb_err_set(err, "out of memory");
			b->dhits = h;
			b->dkw = (int)kw;
		}
		emb_search_run(b->deep, b->dhits, &nd, q, 1);
		if (nd < 0) {   /* a score past float32's range: the error */
			*nout = -1;
			return 0;
		}
		rc = fold(b, out, nout, b->dhits, nd, (int)kw, b->o.k);
		if (rc < 0)
			return emb_err_set(err, "out of memory");
		if (rc || kw >= n || kw >= DEEP_MAX)
			return 0;
	}
}

int emb_best_per_run(emb_best_per *b, emb_hit *hits, int *nhits,
                     const float *q, int m, emb_err *err)
{
	int dim = emb_index_dim(b->ix), k = b->o.k;

	for (int i0 = 0; i0 < m; i0 += QB) {
		int mm = m - i0 < QB ? m - i0 : QB;
		emb_search_run(b->s, b->hits, b->nhits, q + (size_t)i0 * dim, mm);
		for (int i = 0; i < mm; i++) {
			emb_hit *out = hits + (size_t)(i0 + i) * k;
			int rc;
			if (b->nhits[i] < 0) {  /* as emb_search_run says */
				nhits[i0 + i] = -1;
				continue;
			}
			rc = fold(b, out, &nhits[i0 + i],
			              b->hits + (size_t)i * b->kw, b->nhits[i], b->kw,
			              k);
			if (rc < 0)
				return emb_err_set(err, "out of memory");
			if (!rc && deeper(b, out, &nhits[i0 + i],
			                  q + (size_t)(i0 + i) * dim, err) < 0)
				return -1;
		}
	}
	return 0;
}
