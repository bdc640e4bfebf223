/*
 * encode.h - emb-encode's record processing (encode.c): a record's model
 * input (its input_ids, or its text tokenized), the batched forward with
 * pooling or the SPLADE head, and the output record.
 */
#ifndef EMB_ENCODE_H
#define EMB_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include "tool/emb-tool.h"

/* one record's input and result */
typedef struct emb_enc_rec {
	int32_t *ids, *types;   /* new */
	size_t n;
	int has_types;
	int tokenized;          /* ids come from the record's text */
	size_t truncated, prompt_length;
	int skip;               /* prompt tokens for pooling */
	float *v;               /* (n, hidden) or pooled (vn) or sparse
	                           values (vn) */
	int32_t *sp_idx;        /* sparse indices (vn) */
	size_t vcap;
	int vn;
} emb_enc_rec;

typedef struct emb_encoder {
	/* set by the caller */
	emb_model *m;           /* borrowed */
	const emb_text_tok *tt; /* borrowed; tt->tok NULL: input_ids only */
	const emb_pool_spec *spec; /* borrowed; NULL: token_embeddings */
	int splade;             /* the SPLADE head: sparse vectors */
	long long top_k;        /* sparse: the K largest, 0: all */
	int terms;              /* sparse: vocabulary strings for indices */
	int tokens;             /* write "tokens" for tokenized records */
	int b64;                /* vectors as KEY_b64 */
	/* from the model (emb_encoder_init) */
	int hidden, maxpos, vocab, types;
	/* scratch, grown once per batch size */
	float *scratch;
	size_t scratch_cap;
	emb_seq *seqs;
	size_t *skips;          /* (seqs_cap) prompt tokens for pooling */
	int seqs_cap;
} emb_encoder;

/* E's model M (borrowed) and its sizes; the other members stay (the
 * caller's, zero where unset) */
void emb_encoder_init(emb_encoder *e, emb_model *m);
/* E's scratch; E itself and what it borrows stay */
void emb_encoder_release(emb_encoder *e);

/*
 * REC's (borrowed) model input into O (its old contents replaced):
 * input_ids (token_type_ids, attention_mask, prompt_length) or, where
 * the model has a tokenizer and REC has text but no input_ids, the text
 * tokenized; WIN (not NULL: a window of --chunk, REC unused) its tokens
 * (and its document's attention_mask).  Checked against the model's
 * limits.  0, or -1 with ERR set (the record's error).
 */
int emb_encoder_prepare(const emb_encoder *e, emb_enc_rec *o,
                        const emb_record *rec, const emb_window *win,
                        emb_err *err);

/*
 * The forward of records RS[0..N) (their user: emb_enc_rec, prepared),
 * then per record its pooled embedding, sparse vector or token
 * embeddings; a record whose output is not finite is marked bad.  0, or
 * -1 with ERR set (the batch's error).
 */
int emb_encoder_run(emb_encoder *e, emb_cli_rec **rs, int n, emb_err *err);

/* REC (borrowed; WIN not NULL: the window's record, emb_window_begin)
 * with O's fields into B: the tokenizer's fields for tokenized records,
 * then sparse, embedding or token_embeddings.  0, or -1 with ERR set */
int emb_encoder_emit(const emb_encoder *e, emb_buf *b, const emb_record *rec,
                     const emb_window *win, const emb_enc_rec *o,
                     emb_err *err);

/* after a tokenized record's input_ids: "tokens" (the strings of IDS in
 * TOK; NULL: none), "truncated" and "prompt_length" when not 0.  0, or
 * -1 (err) out of memory */
int emb_out_tok_fields(emb_buf *b, const emb_tokenizer *tok,
                       const int32_t *ids, size_t n, size_t truncated,
                       size_t prompt_length, emb_err *err);

/* O and what it holds (NULL: nothing) */
void emb_enc_rec_free(emb_enc_rec *o);

#endif /* EMB_ENCODE_H */
