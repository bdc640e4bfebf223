/*
 * acmatch.c - the longest pattern starting at every position of a text,
 * for all positions in one pass: an Aho-Corasick automaton over the
 * reversed patterns, run over the text from its end.  The automaton's
 * state after reading s[i..n) backwards is the longest suffix of that
 * (reversed) that is a path of the trie; the longest pattern that is a
 * suffix of it (a pattern starting at i) is the first pattern on the
 * state's failure chain, kept per state.  Building is linear in the total
 * pattern length, a scan linear in the text (the failure walk is
 * amortized), whatever the patterns share: added-token matching used to
 * cost text x tokens sharing a first character x their length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tok/acmatch.h"

struct tk_acm {
	size_t nn;              /* nodes; 0 is the root */
	int32_t *fail;          /* per node */
	int32_t *best;          /* per node: longest pattern on its failure
	                           chain (itself included), -1 for none */
	uint64_t *keys;         /* edge hash: (node << 21 | cp) + 1; 0 empty */
	int32_t *vals;          /* child node */
	size_t mask;
	int32_t root[128];      /* the root's child by ASCII code point, -1:
	                           none (a text without added tokens is
	                           mostly these: no hash probe) */
};

static size_t slot_of(const tk_acm *a, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ (h >> 31)) & a->mask;
}

static int32_t child(const tk_acm *a, int32_t node, uint32_t c)
{
	uint64_t key = ((uint64_t)node << 21 | c) + 1;

	for (size_t i = slot_of(a, key);; i = (i + 1) & a->mask) {
		if (a->keys[i] == key)
			return a->vals[i];
		if (!a->keys[i])
			return -1;
	}
}

static void put_key(tk_acm *a, uint64_t key, int32_t to)
{
	size_t i = slot_of(a, key);

	while (a->keys[i])
		i = (i + 1) & a->mask;
	a->keys[i] = key;
	a->vals[i] = to;
}

/* the edge hash holds one edge per node but the root: kept at most half
 * full, doubled as nodes come (patterns that share prefixes make few) */
static int set_child(tk_acm *a, size_t edges, int32_t node, uint32_t c,
                     int32_t to)
{
	if (2 * (edges + 1) > a->mask + 1) {
		size_t size = 2 * (a->mask + 1), old = a->mask + 1;
		uint64_t *keys = a->keys;
		int32_t *vals = a->vals;
		a->keys = calloc(size, sizeof(*a->keys));
		a->vals = malloc(size * sizeof(*a->vals));
		if (!a->keys || !a->vals) {
			free(a->keys);
			free(a->vals);
			a->keys = keys;
			a->vals = vals;
			return -1;
		}
		a->mask = size - 1;
		for (size_t i = 0; i < old; i++)
			if (keys[i])
				put_key(a, keys[i], vals[i]);
		free(keys);
		free(vals);
	}
	put_key(a, ((uint64_t)node << 21 | c) + 1, to);
	return 0;
}

void tk_acm_free(tk_acm *a)
{
	if (!a)
		return;
	free(a->fail);
	free(a->best);
	free(a->keys);
	free(a->vals);
	free(a);
}

int tk_acm_build(tk_acm **out, const uint32_t *const *pat, const size_t *len,
                 size_t npat)
{
	tk_acm *a;
	size_t total = 1, size = 16, k, nn = 1, qh = 0, qt = 0;
	/* per node arrays: sized for the total length (the most nodes) */
	int32_t *first = NULL, *next = NULL, *queue = NULL;
	uint32_t *ch = NULL;
	int rc = -1;

	*out = NULL;
	for (k = 0; k < npat; k++) {
		if (len[k] > (size_t)INT32_MAX - total)
			return -1;
		total += len[k];
	}
	for (k = 0; k < npat; k++)
		for (size_t j = 0; j < len[k]; j++)
			if (pat[k][j] >= (1u << 21))
				return -1;  /* not a code point */
	if (!(a = calloc(1, sizeof(*a))))
		return -1;
	a->mask = size - 1;
	a->keys = calloc(size, sizeof(*a->keys));
	a->vals = malloc(size * sizeof(*a->vals));
	a->fail = calloc(total, sizeof(*a->fail));
	a->best = malloc(total * sizeof(*a->best));
	first = malloc(total * sizeof(*first));
	next = malloc(total * sizeof(*next));
	queue = malloc(total * sizeof(*queue));
	ch = malloc(total * sizeof(*ch));
	if (!a->keys || !a->vals || !a->fail || !a->best || !first || !next ||
	    !queue || !ch)
		goto out;
	first[0] = -1;
	a->best[0] = -1;
	/* the trie of the reversed patterns; the first of equal ones wins */
	for (k = 0; k < npat; k++) {
		int32_t node = 0;
		for (size_t j = len[k]; j-- > 0;) {
			uint32_t c = pat[k][j];
			int32_t v = child(a, node, c);
			if (v < 0) {
				v = (int32_t)nn;
				if (set_child(a, nn - 1, node, c, v) < 0)
					goto out;
				nn++;
				first[v] = -1;
				a->best[v] = -1;
				ch[v] = c;
				next[v] = first[node];
				first[node] = v;
			}
			node = v;
		}
		if (len[k] && a->best[node] < 0)
			a->best[node] = (int32_t)k;
	}
	/* failure links breadth first: a node's link is shallower, so its
	 * best is final when the node's is computed */
	for (int32_t v = first[0]; v >= 0; v = next[v])
		queue[qt++] = v;        /* fail = root, best = its own */
	while (qh < qt) {
		int32_t u = queue[qh++];
		for (int32_t v = first[u]; v >= 0; v = next[v]) {
			int32_t f = a->fail[u], g;
			while (f && child(a, f, ch[v]) < 0)
				f = a->fail[f];
			g = child(a, f, ch[v]);
			a->fail[v] = g >= 0 ? g : 0;
			if (a->best[v] < 0)
				a->best[v] = a->best[a->fail[v]];
			queue[qt++] = v;
		}
	}
	for (uint32_t c = 0; c < 128; c++)
		a->root[c] = child(a, 0, c);
	a->nn = nn;
	*out = a;
	a = NULL;
	rc = 0;
out:
	tk_acm_free(a);
	free(first);
	free(next);
	free(queue);
	free(ch);
	return rc;
}

int tk_acm_scan(const tk_acm *a, const uint32_t *s, size_t n, tk_acm_hits *h)
{
	int32_t state = 0;

	h->n = 0;
	if (!a || a->nn < 2)
		return 0;
	if (n > UINT32_MAX)
		return -1;
	for (size_t i = n; i-- > 0;) {
		uint32_t c = s[i];
		int32_t g = -1;
		if (!state && c < 128) {
			/* at the root no pattern ends: nothing to record */
			if ((state = a->root[c]) < 0) {
				state = 0;
				continue;
			}
		} else {
			if (c < (1u << 21)) {
				while (state && (g = child(a, state, c)) < 0)
					state = a->fail[state];
				if (!state)
					g = c < 128 ? a->root[c] : child(a, 0, c);
			}
			state = g >= 0 ? g : 0;
		}
		if (a->best[state] < 0)
			continue;
		if (h->n == h->cap) {
			size_t cap = h->cap ? 2 * h->cap : 64;
			uint32_t *v = realloc(h->v, 2 * cap * sizeof(*v));
			if (!v)
				return -1;
			h->v = v;
			h->cap = cap;
		}
		h->v[2 * h->n] = (uint32_t)i;
		h->v[2 * h->n + 1] = (uint32_t)a->best[state];
		h->n++;
	}
	return 0;
}

void tk_acm_hits_release(tk_acm_hits *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}
