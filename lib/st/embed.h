/*
 * st/embed.h - text in, sentence embedding out, as sentence-transformers'
 * SentenceTransformer.encode does it: the text front end (prompts,
 * do_lower_case, the default max length), Pooling, Dense, Normalize and
 * Matryoshka truncation, and emb_embedder, which strings them together
 * with the model.  emb-encode --pool, emb-tokenize, emb-rerank and
 * emb-pool use the pieces; programs outside use emb_embedder through
 * lib/emb.h.  Layer st: includes base, io, tok and nn.
 */
#ifndef EMB_ST_EMBED_H
#define EMB_ST_EMBED_H

#include "base/base.h"
#include "io/io.h"
#include "tok/tok.h"
#include "nn/nn.h"
#include "static/static.h"

/* ------------------------------------------------------------------ */
/* the text front end                                                  */

/* text -> tokens the way emb-tokenize, emb-encode and emb_embedder share */
typedef struct emb_text_tok {
	emb_tokenizer *tok;     /* new (emb_text_tok_release); sm's own when
	                           sm is set */
	emb_static *sm;         /* new: DIR is a static model (static.h),
	                           tokenized as its library does; NULL: not */
	emb_st_config st;
	emb_tok_opts opts;      /* max_length: the effective maximum */
	char *prompt;           /* NULL: no prompt */
	size_t prompt_len;
	size_t prompt_tokens;   /* prompt_length (ST): prompt tokens + 1 */
	int lower;              /* sentence_bert_config do_lower_case */
} emb_text_tok;

/* what the caller asks of the front end (the emb-* text options) */
typedef struct emb_text_opts {
	long max_length;        /* > 0: this maximum; otherwise the model's */
	int no_truncate;        /* 1: no maximum at all */
	const char *prompt;     /* borrowed: this prompt text, or NULL */
	const char *prompt_name; /* borrowed: this named prompt, or NULL */
	int no_prompt;          /* 1: not the model's default prompt */
	int tok_only;           /* 1: read only what tokenizing needs
	                           (emb_st_config_load_text: no modules.json) */
} emb_text_opts;

enum {
	EMB_TEXT_BAD_OPTION = -2, /* emb_text_tok_init: an option the model
	                             refuses (unknown prompt name, a
	                             max_length above the model's limit) */
};

/*
 * Load the tokenizer and sentence-transformers config from DIR and apply
 * O (NULL: the model's defaults).  A static model (emb_static_detect) is
 * loaded whole into t->sm: its texts are tokenized as
 * emb_static_tokenize does, at most its emb_static_max_length tokens by
 * default, with no model limit.  MODEL_MAX: the model's own limit
 * (emb_model_max_positions; 0: none): the default max length is capped
 * by it and an explicit o->max_length above it is refused.  0; -1 (err)
 * when a file cannot be loaded; EMB_TEXT_BAD_OPTION (err) for an option
 * the model refuses.  t is released on failure.
 */
int emb_text_tok_init(emb_text_tok *t, const char *dir,
                      const emb_text_opts *o, int model_max, emb_err *err);
void emb_text_tok_release(emb_text_tok *t);
/* Default max length of the model in DIR (spec: sentence_bert_config
 * max_seq_length, else tokenizer model_max_length if < 1e6, capped by
 * config.json max_position_embeddings); 0 when unknown */
int emb_default_max_length(const char *dir, const emb_st_config *st,
                           emb_err *err);
/* tokenize TEXT (LEN bytes) and PAIR (NULL: none) with the prompt
 * prepended and do_lower_case applied; *prompt_length: 0 when no prompt
 * was applied */
int emb_text_tok_text(emb_encoding *enc, size_t *prompt_length,
                      const emb_text_tok *t, const char *text, size_t len,
                      const char *pair, size_t pair_len, emb_err *err);
/* the same for the record's "text" (+ "text_pair") */
int emb_text_tok_record(emb_encoding *enc, size_t *prompt_length,
                        const emb_text_tok *t, const emb_record *rec,
                        emb_err *err);

/* ------------------------------------------------------------------ */
/* pooling and the modules after it                                    */

/* pooling as emb-encode --pool and emb-pool apply it */
typedef struct emb_pool_spec {
	unsigned modes;         /* emb_pool_mode bits */
	int normalize;          /* Normalize module (or --normalize) */
	int dim;                /* --dim (Matryoshka), 0: keep all */
	int include_prompt;     /* 0: skip prompt_length leading tokens */
	int in_dim;             /* expected hidden size, 0: any */
	const emb_dense *dense; /* borrowed: applied after pooling, before
	                           Normalize */
	const emb_static *sm;   /* borrowed: a static model's mean
	                           (emb_static_mean_rows) instead of the
	                           modes, and its own Normalize when no
	                           Dense comes before it */
	size_t n_dense;
	int layer_norm;         /* LayerNorm (no affine, eps 1e-5) after the
	                           Dense modules: nomic's Matryoshka recipe */
} emb_pool_spec;

/*
 * The model's own spec from its sentence-transformers config ST:
 * Pooling modes (mean when it has no Pooling module), Normalize,
 * include_prompt, the Dense modules (borrowed from ST).  NORMALIZE -1:
 * the model's Normalize module, else 0 or 1; DIM: Matryoshka (0: all).
 */
void emb_pool_spec_model(emb_pool_spec *p, const emb_st_config *st,
                         int normalize, int dim);
/*
 * The spec of the static model SM (borrowed): its mean, the Dense modules
 * of ST (borrowed), Normalize as NORMALIZE (-1: the model's: Model2Vec's
 * config.json normalize, else ST's Normalize module), DIM as above.
 */
void emb_pool_spec_static(emb_pool_spec *p, const emb_static *sm,
                          const emb_st_config *st, int normalize, int dim);
/* width of the vectors P gives for hidden size D (0 when invalid) */
int emb_pool_spec_dim(const emb_pool_spec *p, int d);

/*
 * tok (n, d) -> *out (new, free()) of *outn values: pooling (leaving out
 * the first PROMPT_LENGTH rows when p->include_prompt is 0), the Dense
 * modules, Normalize,
 * then with dim: keep the first dim values and L2-normalize.
 */
int emb_pool_apply(float **out, int *outn, const emb_pool_spec *p,
                   const float *tok, int n, int d, int prompt_length,
                   emb_err *err);
/* width of the pooled vector of P for hidden size D, before the
 * modules after pooling (0 when invalid) */
int emb_pool_width(const emb_pool_spec *p, int d);
/* the pooling alone: tok (n, d) -> v (emb_pool_width values); returns
 * that width, or -1 with ERR set */
int emb_pool_into(float *v, const emb_pool_spec *p, const float *tok, int n,
                  int d, int prompt_length, emb_err *err);
/*
 * The modules after pooling on V (PD values, stolen): the Dense modules,
 * the LayerNorm, Normalize, then --dim; *out (new) of *outn values.  0,
 * or -1 with ERR set (V freed): a shape that does not fit, a value that
 * is not finite.  In steps: emb_pool_check (the shapes, for PD pooled
 * values), emb_dense_rows (st.h), emb_pool_post (the rest, on V of the
 * last Dense module's width, stolen).
 */
int emb_pool_finish(float **out, int *outn, const emb_pool_spec *p, float *v,
                    int pd, emb_err *err);
int emb_pool_check(const emb_pool_spec *p, int pd, emb_err *err);
int emb_pool_post(float **out, int *outn, const emb_pool_spec *p, float *v,
                  int pd, emb_err *err);
/* the record's "prompt_length" (0 when absent) */
int emb_record_prompt_length(int *out, const emb_record *rec, emb_err *err);

/*
 * The batch forward then the pooling, for emb_embed and emb-encode: the
 * K sequences SEQS forwarded as one batch into *scratch (grown to the
 * batch's tokens x hidden floats, *cap floats; new, free()), then for
 * each sequence i in order EACH(U, i, &v, vn, err) with v its pooled
 * vector of vn values (SPEC set: emb_pool_apply, prompt length SKIP[i],
 * SKIP may be NULL; new, freed after EACH unless EACH takes it by
 * setting v to NULL) or, SPEC NULL, its token rows (len, hidden),
 * borrowed.  0, or -1 with ERR and *AT the failing sequence (-1: the
 * forward itself), EACH's -1 included.
 */
typedef int (*emb_rows_fn)(void *u, int i, float **v, int vn, emb_err *err);
int emb_forward_pool(emb_model *m, float **scratch, size_t *cap,
                     const emb_seq *seqs, int k, const emb_pool_spec *spec,
                     const size_t *skip, emb_rows_fn each, void *u,
                     int *at, emb_err *err);

/* ------------------------------------------------------------------ */
/* emb_embedder: the public API, declared in lib/emb.h (a header without
 * dependencies, the one programs outside emb include); implemented in
 * embed.c                                                              */
#include "emb.h"

#endif /* EMB_ST_EMBED_H */
