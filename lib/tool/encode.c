/*
 * encode.c - emb-encode's record processing (encode.h): input_ids or
 * text in, a forward per batch, pooled, sparse or token embeddings out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/encode.h"
#include "tool/mask.h"

/* SPLADE: SPLADE_SEQS sequences a forward */
#define SPLADE_SEQS 32

static const char not_finite[] =
	"the model output is not finite (NaN or infinity)";

void emb_encoder_init(emb_encoder *e, emb_model *m)
{
	e->m = m;
	e->hidden = emb_model_hidden_size(m);
	e->maxpos = emb_model_max_positions(m);
	e->vocab = emb_model_vocab_size(m);
	e->types = emb_model_type_vocab_size(m);
}

void emb_encoder_release(emb_encoder *e)
{
	free(e->scratch);
	free(e->seqs);
	free(e->skips);
	e->scratch = NULL;
	e->seqs = NULL;
	e->skips = NULL;
	e->scratch_cap = 0;
	e->seqs_cap = 0;
}

void emb_enc_rec_free(emb_enc_rec *o)
{
	if (!o)
		return;
	free(o->sp_idx);
	free(o->ids);
	free(o->types);
	free(o->v);
	free(o);
}

/* the record's input_ids (and token_type_ids, mask, prompt_length) */
static int ids_of(emb_enc_rec *o, const emb_record *rec, emb_err *err)
{
	size_t nt;

	if (emb_record_get_int32s(rec, "input_ids", &o->ids, &o->n, err) < 0)
		return -1;
	if (emb_record_has(rec, "token_type_ids")) {
		if (emb_record_get_int32s(rec, "token_type_ids", &o->types, &nt,
		                          err) < 0)
			return -1;
		if (nt != o->n)
			return emb_err_set(err, "field 'token_type_ids' has %zu values, 'input_ids' has %zu",
			                   nt, o->n);
		o->has_types = 1;
	}
	if (emb_record_apply_mask(rec, &o->n, err) < 0)
		return -1;
	return emb_record_prompt_length(&o->skip, rec, err);
}

/* the record's text tokenized */
static int text_of(emb_enc_rec *o, const emb_text_tok *tt,
                   const emb_record *rec, emb_err *err)
{
	emb_encoding enc;
	int rc = -1;

	emb_encoding_init(&enc);
	if (emb_text_tok_record(&enc, &o->prompt_length, tt, rec, err) < 0)
		goto out;
	o->n = enc.len;
	o->truncated = enc.truncated;
	o->ids = malloc((enc.len + 1) * sizeof(int32_t));
	o->types = malloc((enc.len + 1) * sizeof(int32_t));
	if (!o->ids || !o->types) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	memcpy(o->ids, enc.ids, enc.len * sizeof(int32_t));
	memcpy(o->types, enc.type_ids, enc.len * sizeof(int32_t));
	o->has_types = 1;
	o->tokenized = 1;
	o->skip = (int)o->prompt_length;
	rc = 0;
out:
	emb_encoding_release(&enc);
	return rc;
}

/* a window's tokens (as a record of them: the document's
 * attention_mask applies) */
static int window_ids(emb_enc_rec *o, const emb_window *w, emb_err *err)
{
	size_t n = w->enc.len;

	o->ids = malloc((n + 1) * sizeof(int32_t));
	o->types = malloc((n + 1) * sizeof(int32_t));
	if (!o->ids || !o->types)
		return emb_err_set(err, "out of memory");
	memcpy(o->ids, w->enc.ids, n * sizeof(int32_t));
	memcpy(o->types, w->enc.type_ids, n * sizeof(int32_t));
	o->n = n;
	o->has_types = 1;
	if (emb_record_apply_mask(emb_window_doc(w), &o->n, err) < 0)
		return -1;
	o->skip = (int)w->prompt_length;
	return 0;
}

int emb_encoder_prepare(const emb_encoder *e, emb_enc_rec *o,
                        const emb_record *rec, const emb_window *win,
                        emb_err *err)
{
	int text = e->tt->tok != NULL;
	size_t i;

	free(o->ids);
	free(o->types);
	o->ids = o->types = NULL;
	o->n = 0;
	o->has_types = o->tokenized = 0;
	o->truncated = o->prompt_length = 0;
	if (win) {
		if (window_ids(o, win, err) < 0)
			return -1;
	} else if (emb_record_check_input(rec, text, err) < 0) {
		return -1;
	} else if (emb_record_has(rec, "input_ids") || !text ||
	           !emb_record_has(rec, "text")) {
		if (ids_of(o, rec, err) < 0)
			return -1;
	} else if (text_of(o, e->tt, rec, err) < 0) {
		return -1;
	}
	if (o->n == 0)
		return emb_err_set(err, "field 'input_ids' is empty");
	if (e->maxpos > 0 && o->n > (size_t)e->maxpos)
		return emb_err_set(err, "field 'input_ids' has %zu tokens, more than the model's maximum of %d",
		                   o->n, e->maxpos);
	for (i = 0; i < o->n; i++)
		if (o->ids[i] < 0 || (e->vocab > 0 && o->ids[i] >= e->vocab))
			return emb_err_set(err, "field 'input_ids': id %d at position %zu is out of range (vocabulary size %d)",
			                   (int)o->ids[i], i, e->vocab);
	for (i = 0; o->has_types && i < o->n; i++)
		if (o->types[i] < 0 || (e->types > 0 && o->types[i] >= e->types))
			return emb_err_set(err, "field 'token_type_ids': %d at position %zu is out of range (type vocabulary size %d)",
			                   (int)o->types[i], i, e->types);
	return 0;
}

static int all_finite(const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return 0;
	return 1;
}

/* *p (*cap floats) grown to at least n floats */
static int grow(float **p, size_t *cap, size_t n, emb_err *err)
{
	float *q;

	if (n <= *cap)
		return 0;
	if (!(q = realloc(*p, n * sizeof(float))))
		return emb_err_set(err, "out of memory");
	*p = q;
	*cap = n;
	return 0;
}

/* w (vocab) -> o->sp_idx, o->v: the nonzeros (top_k largest), ascending */
static int sparse_of(emb_enc_rec *o, const float *w, int vocab,
                     long long top_k, emb_err *err)
{
	free(o->v);
	free(o->sp_idx);
	o->vcap = 0;
	o->v = malloc(((size_t)vocab + 1) * sizeof(float));
	o->sp_idx = malloc(((size_t)vocab + 1) * sizeof(int32_t));
	if (!o->v || !o->sp_idx)
		return emb_err_set(err, "out of memory");
	o->vn = (int)emb_sparse_select(o->sp_idx, o->v, w, vocab,
	                               top_k > 0 ? (size_t)top_k : 0);
	return 0;
}

/* SPLADE: e->seqs (n) -> sparse vectors */
static int run_splade(emb_encoder *e, emb_cli_rec **rs, int n, emb_err *err)
{
	size_t V = (size_t)e->vocab;

	if (grow(&e->scratch, &e->scratch_cap, SPLADE_SEQS * V, err) < 0)
		return -1;
	for (int s0 = 0; s0 < n; s0 += SPLADE_SEQS) {
		int k = n - s0 < SPLADE_SEQS ? n - s0 : SPLADE_SEQS;
		// seqs -> scratch (k, vocab)
		if (emb_model_forward_head(e->m, e->scratch, EMB_OUT_SPLADE,
		                           e->seqs + s0, k, err) < 0)
			return -1;
		for (int i = 0; i < k; i++) {
			const float *w = e->scratch + (size_t)i * V;
			if (!all_finite(w, V)) {
				rs[s0 + i]->bad = 1;
				emb_err_set(&rs[s0 + i]->err, "%s", not_finite);
				continue;
			}
			if (sparse_of(rs[s0 + i]->user, w, e->vocab, e->top_k, err) < 0)
				return -1;
		}
	}
	return 0;
}

typedef struct enc_rows {
	const emb_encoder *e;
	emb_cli_rec **rs;
} enc_rows;

/* sequence i's pooled vector (taken) or token rows (copied) -> its record */
static int enc_row(void *u, int i, float **v, int vn, emb_err *err)
{
	const enc_rows *r = u;
	emb_enc_rec *o = r->rs[i]->user;

	if (r->e->spec) {
		free(o->v);
		o->v = *v;
		o->vn = vn;
		o->vcap = 0;
		*v = NULL;
	} else {
		if (grow(&o->v, &o->vcap, (size_t)vn, err) < 0)
			return -1;
		memcpy(o->v, *v, (size_t)vn * sizeof(float));
	}
	if (!all_finite(o->v, (size_t)vn)) {
		r->rs[i]->bad = 1;
		emb_err_set(&r->rs[i]->err, "%s", not_finite);
	}
	return 0;
}

int emb_encoder_run(emb_encoder *e, emb_cli_rec **rs, int n, emb_err *err)
{
	enc_rows r = { e, rs };
	int i, at;

	if (n > e->seqs_cap) {
		emb_seq *s = realloc(e->seqs, (size_t)n * sizeof(*s));
		size_t *k = s ? realloc(e->skips, (size_t)n * sizeof(*k)) : NULL;
		if (s)
			e->seqs = s;
		if (!k)
			return emb_err_set(err, "out of memory");
		e->skips = k;
		e->seqs_cap = n;
	}
	for (i = 0; i < n; i++) {
		emb_enc_rec *o = rs[i]->user;
		e->seqs[i].ids = o->ids;
		e->seqs[i].type_ids = o->has_types ? o->types : NULL;
		e->seqs[i].len = (int)o->n;
		e->skips[i] = (size_t)o->skip;
	}
	if (e->splade)
		return run_splade(e, rs, n, err);
	return emb_forward_pool(e->m, &e->scratch, &e->scratch_cap, e->seqs, n,
	                        e->spec, e->skips, enc_row, &r, &at, err);
}

int emb_out_tok_fields(emb_buf *b, const emb_tokenizer *tok,
                       const int32_t *ids, size_t n, size_t truncated,
                       size_t prompt_length, emb_err *err)
{
	if (tok) {
		const char **t = malloc((n + 1) * sizeof(*t));
		if (!t)
			return emb_err_set(err, "out of memory");
		for (size_t i = 0; i < n; i++)
			t[i] = emb_tokenizer_id_to_token(tok, ids[i]);
		emb_out_strings(b, "tokens", t, n);
		free(t);
	}
	if (truncated > 0)
		emb_out_int(b, "truncated", (long long)truncated);
	if (prompt_length > 0)
		emb_out_int(b, "prompt_length", (long long)prompt_length);
	return 0;
}

int emb_encoder_emit(const emb_encoder *e, emb_buf *b, const emb_record *rec,
                     const emb_window *win, const emb_enc_rec *o,
                     emb_err *err)
{
	static const char *const drop_tok[] = {
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", NULL };

	if (win) {
		if (emb_window_begin(b, win, 1, err) < 0)
			return -1;
	} else {
		emb_out_begin(b, rec, o->tokenized ? drop_tok : NULL);
	}
	if (o->tokenized) {
		emb_out_int32s(b, "input_ids", o->ids, o->n);
		emb_out_int32s(b, "token_type_ids", o->types, o->n);
		if (emb_out_tok_fields(b, e->tokens ? e->tt->tok : NULL, o->ids, o->n,
		                       o->truncated, o->prompt_length, err) < 0)
			return -1;
	}
	if (e->splade) {
		if (emb_out_sparse(b, "sparse", o->sp_idx, o->v, (size_t)o->vn,
		                   e->terms ? e->tt->tok : NULL) < 0)
			return emb_err_set(err, "out of memory");
	} else if (e->spec)
		emb_out_floats(b, "embedding", o->v, (size_t)o->vn, e->b64);
	else
		emb_out_matrix(b, "token_embeddings", o->v, o->n,
		               (size_t)e->hidden, e->b64);
	emb_out_end(b);
	return 0;
}
