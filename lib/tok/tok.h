/*
 * tok/tok.h - tokenizers from tokenizer.json (WordPiece, byte-level BPE,
 * SentencePiece Unigram) with their normalizers, pre-tokenizers and
 * post-processors.  Layer tok: includes base and io.
 */
#ifndef EMB_TOK_H
#define EMB_TOK_H

#include "base/base.h"
#include "io/io.h"

/* ------------------------------------------------------------------ */
/* tokenizer                                                           */

typedef struct emb_tokenizer emb_tokenizer;

/*
 * Load DIR/tokenizer.json, or (when absent) DIR/vocab.txt with
 * DIR/tokenizer_config.json (BERT WordPiece).  Needs no weights.
 * *out: new, emb_tokenizer_free.  The loaded tokenizer is immutable and
 * emb_tokenize() may be called on it from several threads at once.
 */
int emb_tokenizer_load(emb_tokenizer **out, const char *dir, emb_err *err);
void emb_tokenizer_free(emb_tokenizer *tok);
/* 1 when DIR has a tokenizer emb_tokenizer_load would read
 * (tokenizer.json or vocab.txt), else 0 */
int emb_tokenizer_exists(const char *dir);

typedef struct emb_encoding {
	int32_t *ids;
	int32_t *type_ids;
	int32_t *offsets;       /* 2*len: [start, end) in characters of
	                           the input (code points); -1,-1 for specials */
	uint8_t *special;       /* 1 for tokens added by the post-processor */
	size_t len, cap;
	size_t truncated;       /* tokens dropped by truncation */
} emb_encoding;

void emb_encoding_init(emb_encoding *enc);
void emb_encoding_release(emb_encoding *enc);

typedef struct emb_tok_opts {
	size_t max_length;      /* 0: no truncation; else total incl. specials */
	int no_special;         /* 1: do not add special tokens */
} emb_tok_opts;

/*
 * Tokenize TEXT (and the pair PAIR when non-NULL) into enc (reused,
 * overwritten).  Text must be valid UTF-8 (else error).  Truncation:
 * right side; longest_first for pairs.
 */
int emb_tokenize(emb_encoding *enc, const emb_tokenizer *tok,
                 const char *text, size_t len,
                 const char *pair, size_t pair_len,
                 const emb_tok_opts *opts, emb_err *err);
/* vocabulary string of id (borrowed), NULL when out of range */
const char *emb_tokenizer_id_to_token(const emb_tokenizer *tok, int32_t id);
/* id of an exact vocabulary/added token, -1 when absent */
int32_t emb_tokenizer_token_to_id(const emb_tokenizer *tok, const char *s);
size_t emb_tokenizer_vocab_size(const emb_tokenizer *tok);
/* the id of the model's unknown token (WordPiece and BPE: unk_token
 * looked up as emb_tokenizer_token_to_id does; Unigram: unk_id), -1 when
 * it has none */
int32_t emb_tokenizer_unk_id(const emb_tokenizer *tok);
/* number of special tokens the post-processor adds around one sequence
 * (e.g. 2 for [CLS] A [SEP]) or a pair (3 or 4) */
size_t emb_tokenizer_num_special(const emb_tokenizer *tok, int pair);
/* the ids of the special tokens the post-processor adds around one
 * sequence or a pair, sorted, each once: *out new (free()), *n of them
 * (0 when it adds none) */
int emb_tokenizer_special_ids(int32_t **out, size_t *n,
                              const emb_tokenizer *tok, emb_err *err);

/* ------------------------------------------------------------------ */
/* windows over long documents (tok/chunk.c)                           */
/* Content tokens c[0..L): a document's untruncated encoding without   */
/* the post-processor's specials and a prompt's tokens.  Window j of   */
/* W tokens overlapping by K covers c[j(W-K) .. min(j(W-K)+W, L)); the */
/* last is the first whose end reaches L; L <= W (also L = 0): one.    */

/* 0 when 1 <= w and 0 <= k < w, else -1 (err names --chunk/--overlap) */
int emb_chunk_check(long long w, long long k, emb_err *err);
/* number of windows (>= 1) of LEN content tokens; 0 when w, k are bad */
size_t emb_chunk_count(size_t len, size_t w, size_t k);
/* window j (< emb_chunk_count) -> [*start, *end) of the content */
void emb_chunk_window(size_t *start, size_t *end, size_t j, size_t len,
                      size_t w, size_t k);

typedef struct emb_chunk_layout {
	size_t lead;    /* tokens before the content: prefix specials, then
	                   the prompt's tokens */
	size_t len;     /* content tokens (L) */
	size_t trail;   /* suffix specials */
} emb_chunk_layout;

/*
 * The layout of ENC (borrowed): an untruncated encoding of one sequence,
 * a prompt of PROMPT_CP code points (0: none) followed by the text.  The
 * prompt's tokens are those ending within its code points.  -1 (err)
 * when a special token sits inside the content.
 */
int emb_chunk_layout_of(emb_chunk_layout *lay, const emb_encoding *enc,
                        size_t prompt_cp, emb_err *err);
/*
 * Window [START, END) of the content of ENC as an encoding of its own:
 * the lead tokens + content[START..END) + the suffix specials, with
 * offsets in code points of the text (the prompt's PROMPT_CP taken off;
 * -1,-1 for specials).  OUT: reused, emb_encoding_release.
 */
int emb_chunk_encoding(emb_encoding *out, const emb_encoding *enc,
                       const emb_chunk_layout *lay, size_t start,
                       size_t end, size_t prompt_cp, emb_err *err);
/* span[0..2): [start of the window's first token, end of its last) in
 * code points of the text; [0, 0] for an empty window */
void emb_chunk_span(size_t span[2], const emb_encoding *enc,
                    const emb_chunk_layout *lay, size_t start, size_t end,
                    size_t prompt_cp);

#endif /* EMB_TOK_H */
