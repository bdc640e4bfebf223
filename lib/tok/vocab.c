/*
 * vocab.c - vocabularies (string <-> id hash map), the token list a
 * model appends to (tk_toks) and the per-call work buffers of the
 * models (tk_model_work), shared by WordPiece, BPE and Unigram.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"

#define MAX_ID (1 << 26)

/* ------------------------------------------------------------------ */
/* vocabularies                                                        */

void tk_vocab_release(tk_vocab *v)
{
	free(v->arena);
	free(v->off);
	free(v->len);
	free(v->id);
	free(v->slots);
	free((void *)v->by_id);
	free(v->hash);
	memset(v, 0, sizeof(*v));
}

int tk_vocab_add(tk_vocab *v, const char *s, size_t len, int32_t id)
{
	if (id < 0 || id >= MAX_ID || len > UINT32_MAX / 2)
		return -1;
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1024;
		uint32_t *off = realloc(v->off, cap * sizeof(*off));
		if (!off)
			return -1;
		v->off = off;
		off = realloc(v->len, cap * sizeof(*off));
		if (!off)
			return -1;
		v->len = off;
		int32_t *ids = realloc(v->id, cap * sizeof(*ids));
		if (!ids)
			return -1;
		v->id = ids;
		v->cap = cap;
	}
	if (v->arena_len + len + 1 > v->arena_cap) {
		size_t cap = v->arena_cap ? v->arena_cap : 65536;
		char *a;
		while (cap < v->arena_len + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -1;
		a = realloc(v->arena, cap);
		if (!a)
			return -1;
		v->arena = a;
		v->arena_cap = cap;
	}
	memcpy(v->arena + v->arena_len, s, len);
	v->arena[v->arena_len + len] = 0;
	v->off[v->n] = (uint32_t)v->arena_len;
	v->len[v->n] = (uint32_t)len;
	v->id[v->n] = id;
	v->arena_len += len + 1;
	v->n++;
	return 0;
}

/* FNV-1a over prefix then s, in steps: start, add bytes, finish */
#define FNV_START 1469598103934665603ull
static uint64_t fnv_add(uint64_t h, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t fnv_end(uint64_t h)
{
	return h ^ (h >> 29);
}

static uint64_t hash2(const char *p, size_t plen, const char *s, size_t len)
{
	return fnv_end(fnv_add(fnv_add(FNV_START, p, plen), s, len));
}

/* entry E is PREFIX + S: the stored hash first, so that a long entry is
 * compared byte by byte only when it almost surely matches */
static int entry_eq_h(const tk_vocab *v, size_t e, uint64_t h, const char *p,
                      size_t plen, const char *s, size_t len)
{
	const char *t = v->arena + v->off[e];

	return (!v->hash || v->hash[e] == h) && v->len[e] == plen + len &&
	       !memcmp(t, p, plen) && !memcmp(t + plen, s, len);
}

static int entry_eq(const tk_vocab *v, size_t e, const char *p, size_t plen,
                    const char *s, size_t len)
{
	const char *t = v->arena + v->off[e];

	return v->len[e] == plen + len && !memcmp(t, p, plen) &&
	       !memcmp(t + plen, s, len);
}

int tk_vocab_build(tk_vocab *v)
{
	size_t size = 16, i, e;

	free(v->slots);
	free((void *)v->by_id);
	free(v->hash);
	v->slots = NULL;
	v->by_id = NULL;
	v->hash = NULL;
	v->n_ids = 0;
	v->maxlen = 0;
	while (size < 2 * v->n + 2)
		size *= 2;
	v->slots = calloc(size, sizeof(*v->slots));
	if (!v->slots)
		return -1;
	v->mask = size - 1;
	v->hash = malloc((v->n + 1) * sizeof(*v->hash));
	if (!v->hash)
		return -1;
	for (e = 0; e < v->n; e++) {
		if ((size_t)v->id[e] + 1 > v->n_ids)
			v->n_ids = (size_t)v->id[e] + 1;
		if (v->len[e] > v->maxlen)
			v->maxlen = v->len[e];
		v->hash[e] = hash2("", 0, v->arena + v->off[e], v->len[e]);
	}
	v->by_id = calloc(v->n_ids + 1, sizeof(*v->by_id));
	if (!v->by_id)
		return -1;
	for (e = 0; e < v->n; e++) {
		const char *s = v->arena + v->off[e];
		v->by_id[v->id[e]] = s;
		i = v->hash[e] & v->mask;
		for (;;) {
			uint32_t k = v->slots[i];
			if (!k) {
				v->slots[i] = (uint32_t)e + 1;
				break;
			}
			if (entry_eq(v, k - 1, "", 0, s, v->len[e])) {
				v->slots[i] = (uint32_t)e + 1;  /* later wins */
				break;
			}
			i = (i + 1) & v->mask;
		}
	}
	return 0;
}

int tk_vocab_from_json(tk_vocab *v, const json_t *obj, const char *file,
                       emb_err *err)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		json_int_t id;
		if (!json_is_integer(val))
			return emb_err_set(err, "%s: field 'model.vocab' entry "
			                   "'%.60s' must be an integer id", file,
			                   key);
		id = json_integer_value(val);
		if (id < 0 || id >= MAX_ID)
			return emb_err_set(err, "%s: field 'model.vocab' entry "
			                   "'%.60s' has id %lld out of range", file,
			                   key, (long long)id);
		if (tk_vocab_add(v, key, strlen(key), (int32_t)id) < 0)
			return emb_err_set(err, "out of memory");
	}
	if (tk_vocab_build(v) < 0)
		return emb_err_set(err, "out of memory");
	return 0;
}

int32_t tk_vocab_get_prefixed(const tk_vocab *v, const char *prefix, size_t plen,
                      const char *s, size_t len)
{
	size_t i;
	uint64_t h;

	if (!v->slots)
		return -1;
	h = hash2(prefix, plen, s, len);
	i = h & v->mask;
	for (;;) {
		uint32_t k = v->slots[i];
		if (!k)
			return -1;
		if (entry_eq_h(v, k - 1, h, prefix, plen, s, len))
			return v->id[k - 1];
		i = (i + 1) & v->mask;
	}
}

int32_t tk_vocab_longest(const tk_vocab *v, const char *prefix, size_t plen,
                         const char *s, size_t from, const size_t *ends,
                         size_t nends, size_t *k)
{
	uint64_t st;
	size_t at = from, j;
	int32_t best = -1;

	if (!v->slots)
		return -1;
	st = fnv_add(FNV_START, prefix, plen);
	/* forward, one hash step a byte; a byte-by-byte compare only on a
	 * full-hash hit, and the hits are at most the longest one long */
	for (j = 0; j < nends && plen + ends[j] - from <= v->maxlen; j++) {
		uint64_t h;
		size_t i;
		st = fnv_add(st, s + at, ends[j] - at);
		at = ends[j];
		h = fnv_end(st);
		for (i = h & v->mask;; i = (i + 1) & v->mask) {
			uint32_t e = v->slots[i];
			if (!e)
				break;
			if (entry_eq_h(v, e - 1, h, prefix, plen, s + from,
			               at - from)) {
				best = v->id[e - 1];
				*k = j;
				break;
			}
		}
	}
	return best;
}

const char *tk_vocab_str(const tk_vocab *v, int32_t id)
{
	if (id < 0 || (size_t)id >= v->n_ids)
		return NULL;
	return v->by_id[id];
}

/* ------------------------------------------------------------------ */
/* token lists                                                         */

int tk_toks_push(tk_toks *t, int32_t id, int32_t os, int32_t oe)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		int32_t *p = realloc(t->id, cap * sizeof(*p));
		if (!p)
			return -1;
		t->id = p;
		p = realloc(t->off, 2 * cap * sizeof(*p));
		if (!p)
			return -1;
		t->off = p;
		uint32_t *w = realloc(t->ws, cap * sizeof(*w));
		if (!w)
			return -1;
		t->ws = w;
		t->cap = cap;
	}
	t->id[t->n] = id;
	t->off[2 * t->n] = os;
	t->off[2 * t->n + 1] = oe;
	t->ws[t->n] = 0;
	t->n++;
	return 0;
}

void tk_toks_release(tk_toks *t)
{
	free(t->id);
	free(t->off);
	free(t->ws);
	memset(t, 0, sizeof(*t));
}

void tk_model_work_release(tk_model_work *w)
{
	free(w->u8);
	free(w->pos);
	free(w->sym);
	free(w->heap);
	memset(w, 0, sizeof(*w));
}

int tk_work_utf8(tk_model_work *w, const uint32_t *c, size_t n)
{
	size_t k;

	if (n + 1 > w->cap) {
		size_t cap = n + 64;
		char *u8;
		size_t *pos;
		if (cap > SIZE_MAX / 8)
			return -1;
		u8 = realloc(w->u8, 4 * cap + 16);
		if (!u8)
			return -1;
		w->u8 = u8;
		pos = realloc(w->pos, (cap + 1) * sizeof(*pos));
		if (!pos)
			return -1;
		w->pos = pos;
		w->cap = cap;
	}
	w->pos[0] = 0;
	for (k = 0; k < n; k++)
		w->pos[k + 1] = w->pos[k] + tk_utf8_put(w->u8 + w->pos[k], c[k]);
	return 0;
}
