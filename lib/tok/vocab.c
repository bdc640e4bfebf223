/*
 * vocab.c - vocabularies (string <-> id hash map), the token list a
 * model appends to (tk_toks) and the per-call work buffers of the
 * models (tk_model_work), shared by WordPiece, BPE and Unigram.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/bigmem.h"
#include "tok/vocab.h"

#define MAX_ID (1 << 26)

/* ------------------------------------------------------------------ */
/* big hash tables                                                     */

void *tk_table_calloc(size_t n, size_t size)
{
	size_t bytes, len;

	if (size && n > SIZE_MAX / size)
		return NULL;
	bytes = n * size;
	/* probed at random: on 2 MB pages, where the system lends them,
	 * most lookups spare a TLB miss */
	if (bytes >= EMB_BIG_ALIGN)
		return emb_big_alloc(bytes, &len, 1);
	return calloc(n, size);
}

void tk_table_free(void *p, size_t n, size_t size)
{
	if (n * size >= EMB_BIG_ALIGN)
		emb_big_free(p, n * size);
	else
		free(p);
}

/* ------------------------------------------------------------------ */
/* vocabularies                                                        */

void tk_vocab_release(tk_vocab *v)
{
	free(v->arena);
	free(v->ent);
	if (v->slots)
		tk_table_free(v->slots, v->mask + 1, sizeof(*v->slots));
	free((void *)v->by_id);
	memset(v, 0, sizeof(*v));
}

int tk_vocab_add(tk_vocab *v, const char *s, size_t len, int32_t id)
{
	size_t hdr;
	uint32_t l32;

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
	/* a header, then the string: int32 id, uint32 len, bytes, NUL, at
	 * 4-byte alignment, so that a lookup reads one place */
	hdr = (v->arena_len + 3) & ~(size_t)3;
	if (hdr + 8 + len + 1 > v->arena_cap) {
		size_t cap = v->arena_cap ? v->arena_cap : 65536;
		char *a;
		while (cap < hdr + 8 + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -1;
		a = realloc(v->arena, cap);
		if (!a)
			return -1;
		v->arena = a;
		v->arena_cap = cap;
	}
	l32 = (uint32_t)len;
	memcpy(v->arena + hdr, &id, 4);
	memcpy(v->arena + hdr + 4, &l32, 4);
	memcpy(v->arena + hdr + 8, s, len);
	v->arena[hdr + 8 + len] = 0;
	v->ent[v->n].off = (uint32_t)hdr + 8;
	v->ent[v->n].len = l32;
	v->ent[v->n].id = id;
	v->arena_len = hdr + 8 + len + 1;
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

/* a slot: the hash's high half, and the entry's header offset / 4 + 1 */
#define TAG(h) ((h) >> 32 << 32)
#define SLOT(h, e) (TAG(h) | ((v->ent[e].off - 8) / 4 + 1))
#define SLOT_HDR(v, k) ((v)->arena + ((size_t)(uint32_t)(k) - 1) * 4)

/* the header at H holds PREFIX + S: 1 and *ID */
static int hdr_eq(const char *h, const char *p, size_t plen, const char *s,
                  size_t len, int32_t *id)
{
	uint32_t n;

	memcpy(&n, h + 4, 4);
	if (n != plen + len || (plen && memcmp(h + 8, p, plen)))
		return 0;
	h += 8 + plen;
	if (len <= 16) {        /* most tokens: no call */
		for (size_t i = 0; i < len; i++)
			if (h[i] != s[i])
				return 0;
		h -= 8 + plen;
	} else if (memcmp(h, s, len)) {
		return 0;
	} else {
		h -= 8 + plen;
	}
	memcpy(id, h, 4);
	return 1;
}

void tk_vocab_prefetch2(const tk_vocab *v, uint64_t h)
{
	uint64_t k;

	if (!v->slots)
		return;
	k = v->slots[h & v->mask];
	if (k && TAG(k) == TAG(h))
		__builtin_prefetch(SLOT_HDR(v, k));
}

#define BUILD_BATCH 32

static int build(tk_vocab *v, int unique)
{
	size_t size = 16, i, e, e0, j;
	int dup = 0;

	if (v->slots)
		tk_table_free(v->slots, v->mask + 1, sizeof(*v->slots));
	free((void *)v->by_id);
	v->slots = NULL;
	v->by_id = NULL;
	v->n_ids = 0;
	v->maxlen = 0;
	while (size < 2 * v->n + 2)
		size *= 2;
	v->slots = tk_table_calloc(size, sizeof(*v->slots));
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
	/* in batches, the slots of a batch fetched together */
	for (e0 = 0; e0 < v->n; e0 += BUILD_BATCH) {
		size_t m = v->n - e0 < BUILD_BATCH ? v->n - e0 : BUILD_BATCH;
		uint64_t hs[BUILD_BATCH];
		for (j = 0; j < m; j++) {
			e = e0 + j;
			hs[j] = hash2("", 0, v->arena + v->ent[e].off,
			              v->ent[e].len);
			__builtin_prefetch(&v->slots[hs[j] & v->mask]);
		}
		for (j = 0; j < m; j++) {
			const char *s;
			uint64_t h = hs[j];
			e = e0 + j;
			s = v->arena + v->ent[e].off;
			v->by_id[v->ent[e].id] = s;
			for (i = h & v->mask;; i = (i + 1) & v->mask) {
				uint64_t k = v->slots[i];
				int32_t id;
				if (!k) {
					v->slots[i] = SLOT(h, e);
					break;
				}
				if (TAG(k) == TAG(h) &&
				    hdr_eq(SLOT_HDR(v, k), "", 0, s, v->ent[e].len,
				           &id)) {
					v->slots[i] = SLOT(h, e);  /* later wins */
					dup = 1;
					break;
				}
			}
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
		int32_t id;
		if (!k)
			return -1;
		if (TAG(k) == TAG(h) &&
		    hdr_eq(SLOT_HDR(v, k), prefix, plen, s, len, &id))
			return id;
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
			int32_t id;
			if (!e)
				break;
			if (TAG(e) == TAG(h) &&
			    hdr_eq(SLOT_HDR(v, e), prefix, plen, s + from,
			           at - from, &id)) {
				best = id;
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
		w->pos[k + 1] = w->pos[k] + emb_utf8_put(w->u8 + w->pos[k], c[k]);
	return 0;
}
