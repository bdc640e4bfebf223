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
	free(v->ent);
	free(v->slots);
	free((void *)v->by_id);
	memset(v, 0, sizeof(*v));
}

int tk_vocab_add(tk_vocab *v, const char *s, size_t len, int32_t id)
{
	if (id < 0 || id >= MAX_ID || len > UINT32_MAX / 2)
		return -1;
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1024;
		tk_vent *e = realloc(v->ent, cap * sizeof(*e));
		if (!e)
			return -1;
		v->ent = e;
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
	v->ent[v->n].off = (uint32_t)v->arena_len;
	v->ent[v->n].len = (uint32_t)len;
	v->ent[v->n].id = id;
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

uint64_t tk_vocab_hash(const char *prefix, size_t plen, const char *s,
                       size_t len)
{
	return hash2(prefix, plen, s, len);
}

#define TAG(h) ((h) >> 32 << 32)
#define SLOT_E(k) ((uint32_t)(k))

/* entry E is PREFIX + S */
static int entry_eq(const tk_vocab *v, size_t e, const char *p, size_t plen,
                    const char *s, size_t len)
{
	const char *t = v->arena + v->ent[e].off;

	return v->ent[e].len == plen + len && !memcmp(t, p, plen) &&
	       !memcmp(t + plen, s, len);
}

static int build(tk_vocab *v, int unique)
{
	size_t size = 16, i, e;
	int dup = 0;

	free(v->slots);
	free((void *)v->by_id);
	v->slots = NULL;
	v->by_id = NULL;
	v->n_ids = 0;
	v->maxlen = 0;
	while (size < 2 * v->n + 2)
		size *= 2;
	v->slots = calloc(size, sizeof(*v->slots));
	if (!v->slots)
		return -1;
	v->mask = size - 1;
	for (e = 0; e < v->n; e++) {
		if ((size_t)v->ent[e].id + 1 > v->n_ids)
			v->n_ids = (size_t)v->ent[e].id + 1;
		if (v->ent[e].len > v->maxlen)
			v->maxlen = v->ent[e].len;
	}
	v->by_id = calloc(v->n_ids + 1, sizeof(*v->by_id));
	if (!v->by_id)
		return -1;
	for (e = 0; e < v->n; e++) {
		const char *s = v->arena + v->ent[e].off;
		uint64_t h = hash2("", 0, s, v->ent[e].len);
		v->by_id[v->ent[e].id] = s;
		i = h & v->mask;
		for (;;) {
			uint64_t k = v->slots[i];
			if (!k) {
				v->slots[i] = TAG(h) | (e + 1);
				break;
			}
			if (TAG(k) == TAG(h) &&
			    entry_eq(v, SLOT_E(k) - 1, "", 0, s, v->ent[e].len)) {
				v->slots[i] = TAG(h) | (e + 1);  /* later wins */
				dup = 1;
				break;
			}
			i = (i + 1) & v->mask;
		}
	}
	return unique && dup;
}

int tk_vocab_build(tk_vocab *v)
{
	return build(v, 0) < 0 ? -1 : 0;
}

int tk_vocab_build_unique(tk_vocab *v)
{
	return build(v, 1);
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

int32_t tk_vocab_get_hashed(const tk_vocab *v, uint64_t h,
                            const char *prefix, size_t plen, const char *s,
                            size_t len)
{
	size_t i;

	if (!v->slots)
		return -1;
	for (i = h & v->mask;; i = (i + 1) & v->mask) {
		uint64_t k = v->slots[i];
		if (!k)
			return -1;
		if (TAG(k) == TAG(h) &&
		    entry_eq(v, SLOT_E(k) - 1, prefix, plen, s, len))
			return v->ent[SLOT_E(k) - 1].id;
	}
}

int32_t tk_vocab_get_prefixed(const tk_vocab *v, const char *prefix, size_t plen,
                      const char *s, size_t len)
{
	if (!v->slots)
		return -1;
	return tk_vocab_get_hashed(v, hash2(prefix, plen, s, len), prefix, plen,
	                           s, len);
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
	 * tag hit, and the hits are at most the longest one long */
	for (j = 0; j < nends && plen + ends[j] - from <= v->maxlen; j++) {
		uint64_t h;
		size_t i;
		st = fnv_add(st, s + at, ends[j] - at);
		at = ends[j];
		h = fnv_end(st);
		for (i = h & v->mask;; i = (i + 1) & v->mask) {
			uint64_t e = v->slots[i];
			if (!e)
				break;
			if (TAG(e) == TAG(h) &&
			    entry_eq(v, SLOT_E(e) - 1, prefix, plen, s + from,
			             at - from)) {
				best = v->ent[SLOT_E(e) - 1].id;
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
