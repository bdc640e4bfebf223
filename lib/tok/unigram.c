/*
 * unigram.c - the Unigram model (SentencePiece), as Hugging Face
 * tokenizers' models::unigram encode_optimized (0.23): a Viterbi pass
 * over the character positions of a piece, where every vocabulary
 * piece that starts at a position is an edge scored by its log
 * probability (f64 sums, in the same order, so ties break the same
 * way: the first candidate found for an end position is kept unless a
 * later one is strictly better); a character that no piece of exactly
 * one character covers also gets an unk edge scored min score - 10.
 * Backtracking fuses runs of unk edges into one token; a token string
 * not in the vocabulary becomes <0xXX> byte tokens with byte_fallback
 * (when all exist), else the unk id.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"

#define MAX_ID (1 << 26)
#define UNK_PENALTY 10.0

typedef struct node {
	double score;
	int32_t start;          /* -1: not reached */
	int32_t id;
} node;

void tk_unigram_release(tk_unigram *u)
{
	tk_vocab_release(&u->vocab);
	free(u->score);
	memset(u, 0, sizeof(*u));
}

int tk_unigram_parse(tk_unigram *u, const json_t *j, const char *file,
                     emb_err *err)
{
	json_t *vocab = json_object_get(j, "vocab");
	json_t *unk = json_object_get(j, "unk_id");
	json_t *bf = json_object_get(j, "byte_fallback");
	size_t i, n;
	double min = 0;
	int k;

	memset(u, 0, sizeof(*u));
	u->unk_id = -1;
	if (!json_is_array(vocab))
		return emb_err_set(err, "%s: field 'model.vocab' must be an "
		                   "array of [piece, score]", file);
	n = json_array_size(vocab);
	if (n >= MAX_ID)
		return emb_err_set(err, "%s: field 'model.vocab' has too many "
		                   "entries", file);
	if (bf && !json_is_null(bf)) {
		if (!json_is_boolean(bf))
			return emb_err_set(err, "%s: field 'model.byte_fallback' "
			                   "must be a boolean", file);
		u->byte_fallback = json_is_true(bf);
	}
	if (unk && !json_is_null(unk)) {
		if (!json_is_integer(unk) || json_integer_value(unk) < 0 ||
		    (size_t)json_integer_value(unk) >= n)
			return emb_err_set(err, "%s: field 'model.unk_id' must be "
			                   "an index into 'model.vocab'", file);
		u->unk_id = (int32_t)json_integer_value(unk);
	}
	if (!n)
		return emb_err_set(err, "%s: field 'model.vocab' is empty",
		                   file);
	u->score = malloc(n * sizeof(*u->score));
	if (!u->score)
		return emb_err_set(err, "out of memory");
	u->n = n;
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(vocab, i);
		json_t *p = json_array_get(e, 0), *s = json_array_get(e, 1);
		size_t len;
		if (!json_is_array(e) || json_array_size(e) != 2 ||
		    !json_is_string(p) || !json_is_number(s))
			return emb_err_set(err, "%s: field 'model.vocab[%zu]' must "
			                   "be [piece, score]", file, i);
		len = json_string_length(p);
		if (memchr(json_string_value(p), 0, len))
			return emb_err_set(err, "%s: field 'model.vocab[%zu]' "
			                   "holds a NUL character", file, i);
		if (tk_vocab_add(&u->vocab, json_string_value(p), len,
		                 (int32_t)i) < 0)
			return emb_err_set(err, "out of memory");
		u->score[i] = json_number_value(s);
		if (i == 0 || u->score[i] < min)
			min = u->score[i];
		if (len > u->max_len)
			u->max_len = len;
	}
	if (tk_vocab_build(&u->vocab) < 0)
		return emb_err_set(err, "out of memory");
	u->unk_score = min - UNK_PENALTY;
	for (k = 0; k < 256; k++) {
		char hex[8];
		snprintf(hex, sizeof(hex), "<0x%02X>", k);
		u->byte_id[k] = tk_vocab_get(&u->vocab, hex, 6);
	}
	return 0;
}

/* one token for code points [a, b) of the piece */
static int emit(const tk_unigram *u, tk_toks *out, tk_model_work *w,
                const int32_t *o, size_t a, size_t b, emb_err *err)
{
	const char *p = w->u8 + w->pos[a];
	size_t len = w->pos[b] - w->pos[a], k;
	int32_t id = tk_vocab_get(&u->vocab, p, len);
	int32_t os = o[2 * a], oe = o[2 * (b - 1) + 1];

	if (id < 0 && u->byte_fallback) {
		for (k = 0; k < len; k++)
			if (u->byte_id[(unsigned char)p[k]] < 0)
				break;
		if (k == len) {
			for (k = 0; k < len; k++)
				if (tk_toks_push(out, u->byte_id[(unsigned char)p[k]],
				                 os, oe) < 0)
					return emb_err_set(err, "out of memory");
			return 0;
		}
	}
	if (id < 0)
		id = u->unk_id;
	if (id < 0)
		return emb_err_set(err, "the Unigram model has no unk_id for "
		                   "an unknown piece");
	if (tk_toks_push(out, id, os, oe) < 0)
		return emb_err_set(err, "out of memory");
	return 0;
}

int tk_unigram_tokenize(const tk_unigram *u, tk_toks *out, const tk_str *s,
                        tk_span sp, tk_model_work *w, emb_err *err)
{
	size_t n = sp.b - sp.a, i, e, lo, hi, ns = 0, *seg;
	const int32_t *o = s->o + 2 * sp.a;
	node *lat;

	if (!n)
		return 0;
	if (tk_work_utf8(w, s->c + sp.a, n) < 0)
		return emb_err_set(err, "out of memory");
	if (n + 1 > SIZE_MAX / sizeof(node) / 2)
		return emb_err_set(err, "out of memory");
	if (w->sym_cap < n + 1) {
		void *p = realloc(w->sym, (n + 64) * sizeof(node));
		if (!p)
			return emb_err_set(err, "out of memory");
		w->sym = p;
		w->sym_cap = n + 64;
	}
	lat = w->sym;
	for (i = 0; i <= n; i++) {
		lat[i].score = 0;
		lat[i].start = -1;
		lat[i].id = 0;
	}
	for (i = 0; i < n; i++) {
		double base = lat[i].score;
		int single = 0;
		for (e = i + 1; e <= n && w->pos[e] - w->pos[i] <= u->max_len;
		     e++) {
			int32_t id = tk_vocab_get(&u->vocab, w->u8 + w->pos[i],
			                          w->pos[e] - w->pos[i]);
			double cand;
			if (id < 0)
				continue;
			cand = base + u->score[id];
			if (lat[e].start < 0 || cand > lat[e].score) {
				lat[e].score = cand;
				lat[e].start = (int32_t)i;
				lat[e].id = id;
			}
			if (e == i + 1)
				single = 1;
		}
		if (!single) {
			double cand = base + u->unk_score;
			if (lat[i + 1].start < 0 || cand > lat[i + 1].score) {
				lat[i + 1].score = cand;
				lat[i + 1].start = (int32_t)i;
				lat[i + 1].id = u->unk_id;
			}
		}
	}
	/* backtrack from the end, collecting [a, b) pieces (runs of unk
	 * edges fused) into w->heap, then emit them first to last */
	if (w->heap_cap < 2 * n + 2) {
		void *p = realloc(w->heap, (2 * n + 64) * sizeof(size_t));
		if (!p)
			return emb_err_set(err, "out of memory");
		w->heap = p;
		w->heap_cap = 2 * n + 64;
	}
	seg = w->heap;
	e = n;
	hi = lo = n;    /* a pending fused unk run [lo, hi) */
	while (e > 0) {
		size_t st = (size_t)lat[e].start;
		if (u->unk_id >= 0 && lat[e].id == u->unk_id) {
			lo = st;
		} else {
			if (lo != hi) {
				seg[2 * ns] = lo;
				seg[2 * ns + 1] = hi;
				ns++;
			}
			seg[2 * ns] = st;
			seg[2 * ns + 1] = e;
			ns++;
			lo = hi = st;
		}
		e = st;
	}
	if (lo != hi) {
		seg[2 * ns] = lo;
		seg[2 * ns + 1] = hi;
		ns++;
	}
	while (ns--)
		if (emit(u, out, w, o, seg[2 * ns], seg[2 * ns + 1], err) < 0)
			return -1;
	return 0;
}
