/*
 * model.c - the model switch: a tokenizer.json "model" parsed by its
 * type (WordPiece, BPE, Unigram), released, run on one piece, and its
 * vocabulary.  Each model is its own file (wordpiece.c, bpe.c,
 * unigram.c).
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"

int tk_model_parse(tk_model *out, const json_t *j, const char *file,
                   tk_fast *fast, emb_err *err)
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
		return tk_wordpiece_parse(&out->u.wp, j, file, err);
	}
	if (!strcmp(type, "BPE")) {
		out->type = TK_MODEL_BPE;
		return tk_bpe_parse(&out->u.bpe, j, file, fast, err);
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
		return tk_wordpiece_tokenize(&m->u.wp, out, s, sp, w, err);
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
