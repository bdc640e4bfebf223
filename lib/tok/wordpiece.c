/*
 * wordpiece.c - vocabularies (string <-> id hash map) and the WordPiece
 * model, as Hugging Face tokenizers' models::wordpiece: greedy longest
 * match first from the start of each word, continuing pieces looked up
 * with continuing_subword_prefix, a word longer than
 * max_input_chars_per_word or with no full segmentation becomes unk.
 */
#include <errno.h>
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

/* FNV-1a over prefix then s */
static uint64_t hash2(const char *p, size_t plen, const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < plen; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h ^ (h >> 29);
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
	v->slots = NULL;
	v->by_id = NULL;
	v->n_ids = 0;
	while (size < 2 * v->n + 2)
		size *= 2;
	v->slots = calloc(size, sizeof(*v->slots));
	if (!v->slots)
		return -1;
	v->mask = size - 1;
	for (e = 0; e < v->n; e++)
		if ((size_t)v->id[e] + 1 > v->n_ids)
			v->n_ids = (size_t)v->id[e] + 1;
	v->by_id = calloc(v->n_ids + 1, sizeof(*v->by_id));
	if (!v->by_id)
		return -1;
	for (e = 0; e < v->n; e++) {
		const char *s = v->arena + v->off[e];
		v->by_id[v->id[e]] = s;
		i = hash2("", 0, s, v->len[e]) & v->mask;
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

int32_t tk_vocab_get2(const tk_vocab *v, const char *prefix, size_t plen,
                      const char *s, size_t len)
{
	size_t i;

	if (!v->slots)
		return -1;
	i = hash2(prefix, plen, s, len) & v->mask;
	for (;;) {
		uint32_t k = v->slots[i];
		if (!k)
			return -1;
		if (entry_eq(v, k - 1, prefix, plen, s, len))
			return v->id[k - 1];
		i = (i + 1) & v->mask;
	}
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

/* ------------------------------------------------------------------ */
/* WordPiece                                                           */

static int wp_init(tk_wordpiece *wp, const char *unk, const char *prefix,
                   size_t max_chars)
{
	wp->unk = strdup(unk);
	wp->prefix = strdup(prefix);
	if (!wp->unk || !wp->prefix)
		return -1;
	wp->prefix_len = strlen(prefix);
	wp->max_chars = max_chars;
	wp->unk_id = -1;
	return 0;
}

static int wp_tokenize(const tk_wordpiece *wp, tk_toks *out, const tk_str *s,
                       tk_span sp, tk_model_work *w, emb_err *err)
{
	size_t n = sp.b - sp.a, k, start, end, first = out->n;
	int32_t os = s->o[2 * sp.a], oe = s->o[2 * (sp.b - 1) + 1];

	if (!n)
		return 0;
	if (n > wp->max_chars)
		goto unk;
	if (n + 1 > w->cap) {
		size_t cap = n + 64;
		char *u8 = realloc(w->u8, 4 * cap);
		size_t *pos;
		if (!u8)
			return emb_err_set(err, "out of memory");
		w->u8 = u8;
		pos = realloc(w->pos, (cap + 1) * sizeof(*pos));
		if (!pos)
			return emb_err_set(err, "out of memory");
		w->pos = pos;
		w->cap = cap;
	}
	w->pos[0] = 0;
	for (k = 0; k < n; k++)
		w->pos[k + 1] = w->pos[k] +
		                tk_utf8_put(w->u8 + w->pos[k], s->c[sp.a + k]);
	for (start = 0; start < n; start = end) {
		int32_t id = -1;
		for (end = n; end > start; end--) {
			const char *p = start ? wp->prefix : "";
			size_t plen = start ? wp->prefix_len : 0;
			id = tk_vocab_get2(&wp->vocab, p, plen,
			                   w->u8 + w->pos[start],
			                   w->pos[end] - w->pos[start]);
			if (id >= 0)
				break;
		}
		if (id < 0) {
			out->n = first;
			goto unk;
		}
		if (tk_toks_push(out, id, s->o[2 * (sp.a + start)],
		                 s->o[2 * (sp.a + end - 1) + 1]) < 0)
			return emb_err_set(err, "out of memory");
	}
	return 0;
unk:
	if (wp->unk_id < 0)
		return emb_err_set(err, "unk token '%s' is not in the "
		                   "vocabulary", wp->unk);
	if (tk_toks_push(out, wp->unk_id, os, oe) < 0)
		return emb_err_set(err, "out of memory");
	return 0;
}

static int wp_parse(tk_wordpiece *wp, const json_t *j, const char *file,
                    emb_err *err)
{
	json_t *vocab = json_object_get(j, "vocab");
	json_t *unk = json_object_get(j, "unk_token");
	json_t *pre = json_object_get(j, "continuing_subword_prefix");
	json_t *mx = json_object_get(j, "max_input_chars_per_word");
	const char *key;
	json_t *val;
	size_t max_chars = 100;

	if (!vocab)
		return emb_err_set(err, "%s: missing field 'model.vocab'", file);
	if (!json_is_object(vocab))
		return emb_err_set(err, "%s: field 'model.vocab' must be an "
		                   "object of token ids", file);
	if (unk && !json_is_null(unk) && !json_is_string(unk))
		return emb_err_set(err, "%s: field 'model.unk_token' must be a "
		                   "string", file);
	if (pre && !json_is_null(pre) && !json_is_string(pre))
		return emb_err_set(err, "%s: field "
		                   "'model.continuing_subword_prefix' must be a "
		                   "string", file);
	if (mx && !json_is_null(mx)) {
		if (!json_is_integer(mx) || json_integer_value(mx) < 0)
			return emb_err_set(err, "%s: field "
			                   "'model.max_input_chars_per_word' must "
			                   "be a non-negative integer", file);
		max_chars = (size_t)json_integer_value(mx);
	}
	if (wp_init(wp, json_is_string(unk) ? json_string_value(unk) : "[UNK]",
	            json_is_string(pre) ? json_string_value(pre) : "##",
	            max_chars) < 0)
		return emb_err_set(err, "out of memory");
	json_object_foreach(vocab, key, val) {
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
		if (tk_vocab_add(&wp->vocab, key, strlen(key), (int32_t)id) < 0)
			return emb_err_set(err, "out of memory");
	}
	if (tk_vocab_build(&wp->vocab) < 0)
		return emb_err_set(err, "out of memory");
	wp->unk_id = tk_vocab_get(&wp->vocab, wp->unk, strlen(wp->unk));
	return 0;
}

int tk_wordpiece_from_vocab_txt(tk_model *out, const char *path,
                                const char *unk, emb_err *err)
{
	FILE *f = fopen(path, "rb");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int32_t id = 0;
	tk_wordpiece *wp = &out->u.wp;

	memset(out, 0, sizeof(*out));
	out->type = TK_MODEL_WORDPIECE;
	if (!f)
		return emb_err_set(err, "%s: %s", path, strerror(errno));
	if (wp_init(wp, unk, "##", 100) < 0) {
		fclose(f);
		return emb_err_set(err, "out of memory");
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (memchr(line, 0, (size_t)n)) {
			free(line);
			fclose(f);
			return emb_err_set(err, "%s: line %d holds a NUL byte",
			                   path, id + 1);
		}
		if (tk_vocab_add(&wp->vocab, line, (size_t)n, id) < 0) {
			free(line);
			fclose(f);
			return emb_err_set(err, "%s: too many tokens or out of "
			                   "memory", path);
		}
		id++;
	}
	free(line);
	if (ferror(f)) {
		fclose(f);
		return emb_err_set(err, "%s: read error", path);
	}
	fclose(f);
	if (!id)
		return emb_err_set(err, "%s: the vocabulary is empty", path);
	if (tk_vocab_build(&wp->vocab) < 0)
		return emb_err_set(err, "out of memory");
	wp->unk_id = tk_vocab_get(&wp->vocab, wp->unk, strlen(wp->unk));
	return 0;
}

/* ------------------------------------------------------------------ */
/* the model switch                                                    */

int tk_model_parse(tk_model *out, const json_t *j, const char *file,
                   emb_err *err)
{
	json_t *t;
	const char *type;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(j))
		return emb_err_set(err, "%s: field 'model' must be an object",
		                   file);
	t = json_object_get(j, "type");
	if (t && !json_is_string(t))
		return emb_err_set(err, "%s: field 'model.type' must be a "
		                   "string", file);
	if (t) {
		type = json_string_value(t);
	} else if (json_object_get(j, "continuing_subword_prefix") ||
	           json_object_get(j, "max_input_chars_per_word")) {
		type = "WordPiece";   /* old files without a type */
	} else {
		return emb_err_set(err, "%s: missing field 'model.type'", file);
	}
	if (!strcmp(type, "WordPiece")) {
		out->type = TK_MODEL_WORDPIECE;
		return wp_parse(&out->u.wp, j, file, err);
	}
	if (!strcmp(type, "BPE")) {
		out->type = TK_MODEL_BPE;
		return tk_bpe_parse(&out->u.bpe, j, file, err);
	}
	if (!strcmp(type, "Unigram")) {
		out->type = TK_MODEL_UNIGRAM;
		return tk_unigram_parse(&out->u.uni, j, file, err);
	}
	return emb_err_set(err, "%s: model type '%s' is not supported", file,
	                   type);
}

void tk_model_release(tk_model *m)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		tk_vocab_release(&m->u.wp.vocab);
		free(m->u.wp.unk);
		free(m->u.wp.prefix);
		break;
	case TK_MODEL_BPE:
		tk_bpe_release(&m->u.bpe);
		break;
	case TK_MODEL_UNIGRAM:
		tk_unigram_release(&m->u.uni);
		break;
	}
	memset(m, 0, sizeof(*m));
}

int tk_model_tokenize(const tk_model *m, tk_toks *out, const tk_str *s,
                      tk_span sp, tk_model_work *w, emb_err *err)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		return wp_tokenize(&m->u.wp, out, s, sp, w, err);
	case TK_MODEL_BPE:
		return tk_bpe_tokenize(&m->u.bpe, out, s, sp, w, err);
	case TK_MODEL_UNIGRAM:
		return tk_unigram_tokenize(&m->u.uni, out, s, sp, w, err);
	}
	return emb_err_set(err, "no model");
}

const tk_vocab *tk_model_vocab(const tk_model *m)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		return &m->u.wp.vocab;
	case TK_MODEL_BPE:
		return &m->u.bpe.vocab;
	case TK_MODEL_UNIGRAM:
		return &m->u.uni.vocab;
	}
	return NULL;
}
