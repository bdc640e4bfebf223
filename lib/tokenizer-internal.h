/*
 * tokenizer-internal.h - the tokenizer pipeline (private to lib/).
 *
 * A tokenizer is a pipeline of components, as in Hugging Face
 * tokenizer.json:
 *
 *   input (UTF-8) -> code points with alignments (tk_str)
 *     -> split on added tokens that are not normalized (original text)
 *     -> normalizer                       (tk_normalizer, normalizer.c)
 *     -> split on normalized added tokens (normalized text)
 *     -> pre-tokenizer: pieces (tk_spans)  (tk_pretok, normalizer.c)
 *     -> model: tokens per piece           (tk_model, wordpiece.c)
 *     -> truncation, post-processor        (tk_post, tokenizer.c)
 *
 * Every stage is a tagged struct with a switch on its type, so new
 * component types (NFC, Precompiled, ByteLevel, Metaspace, BPE,
 * Unigram...) are added as new enum values and cases, without changing
 * the pipeline.  Text is kept as code points, each carrying the span
 * [start, end) of original code points it came from, so that token
 * offsets map back to the input through any normalization.
 */
#ifndef TOKENIZER_INTERNAL_H
#define TOKENIZER_INTERNAL_H

#include <jansson.h>
#include "emb.h"

/* ------------------------------------------------------------------ */
/* aligned code point strings                                          */

typedef struct tk_str {
	uint32_t *c;            /* code points */
	int32_t *o;             /* 2 per code point: [start, end) in original
	                           code points */
	size_t n, cap;
} tk_str;

void tk_str_release(tk_str *s);
int tk_str_reserve(tk_str *s, size_t n);   /* 0, or -1 out of memory */
/* append one code point aligned to [os, oe); caller reserved room */
static inline void tk_str_put(tk_str *s, uint32_t c, int32_t os, int32_t oe)
{
	s->c[s->n] = c;
	s->o[2 * s->n] = os;
	s->o[2 * s->n + 1] = oe;
	s->n++;
}
int tk_str_push(tk_str *s, uint32_t c, int32_t os, int32_t oe);

/* strict UTF-8 decoding (no overlongs, surrogates or > U+10FFFF):
 * *out (n code points) aligned to [i, i+1); -1 with a message on error */
int tk_utf8_decode(tk_str *out, const char *s, size_t len, emb_err *err);
/* write c as UTF-8 into p (4 bytes room); returns bytes written */
size_t tk_utf8_put(char *p, uint32_t c);

/* a range [a, b) of code points of a tk_str */
typedef struct tk_span {
	size_t a, b;
} tk_span;

typedef struct tk_spans {
	tk_span *v;
	size_t n, cap;
} tk_spans;

int tk_spans_push(tk_spans *s, size_t a, size_t b);
void tk_spans_release(tk_spans *s);

/* ------------------------------------------------------------------ */
/* Unicode predicates with Hugging Face tokenizers' exact semantics     */

int tk_is_whitespace(uint32_t c);     /* Rust char::is_whitespace */
int tk_is_control(uint32_t c);        /* BertNormalizer is_control */
int tk_is_bert_punct(uint32_t c);     /* ASCII or Unicode punctuation */
int tk_is_nonspacing_mark(uint32_t c);   /* BertNormalizer strip_accents */
int tk_is_combining_mark(uint32_t c);    /* StripAccents normalizer */
int tk_is_chinese(uint32_t c);
/* Rust char::to_lowercase: writes 1..3 code points, returns count */
int tk_tolower(uint32_t out[3], uint32_t c);

/* ------------------------------------------------------------------ */
/* normalizers                                                         */

enum tk_norm_type {
	TK_NORM_BERT = 1,
	TK_NORM_LOWERCASE,
	TK_NORM_NFD,
	TK_NORM_STRIP_ACCENTS,
	TK_NORM_SEQUENCE,
};

typedef struct tk_normalizer {
	int type;
	union {
		struct {
			int clean_text, chinese, strip_accents, lowercase;
		} bert;
		struct {
			struct tk_normalizer *v;
			size_t n;
		} seq;
	} u;
} tk_normalizer;

/* Parse JSON J (FILE and FIELD name it in messages). DEPTH bounds
 * nesting. */
int tk_normalizer_parse(tk_normalizer *out, const json_t *j,
                        const char *file, const char *field, int depth,
                        emb_err *err);
void tk_normalizer_release(tk_normalizer *n);
/* s := normalize(s); tmp is scratch.  -1 only when out of memory. */
int tk_normalize(const tk_normalizer *n, tk_str *s, tk_str *tmp);

/* ------------------------------------------------------------------ */
/* pre-tokenizers                                                      */

enum tk_pretok_type {
	TK_PRE_BERT = 1,
	TK_PRE_WHITESPACE_SPLIT,
	TK_PRE_SEQUENCE,
};

typedef struct tk_pretok {
	int type;
	union {
		struct {
			struct tk_pretok *v;
			size_t n;
		} seq;
	} u;
} tk_pretok;

int tk_pretok_parse(tk_pretok *out, const json_t *j, const char *file,
                    const char *field, int depth, emb_err *err);
void tk_pretok_release(tk_pretok *p);
/* Split the pieces IN of S into OUT (cleared first); tmp is scratch.
 * Pre-tokenizers that rewrite text (issue 3) may rewrite S. */
int tk_pretokenize(const tk_pretok *p, tk_spans *out, tk_str *s,
                   const tk_spans *in, tk_spans *tmp);

/* ------------------------------------------------------------------ */
/* vocabularies: string -> id hash map, id -> string                   */

typedef struct tk_vocab {
	char *arena;            /* NUL-terminated strings */
	size_t arena_len, arena_cap;
	uint32_t *off, *len;    /* per entry */
	int32_t *id;            /* per entry */
	size_t n, cap;
	uint32_t *slots;        /* entry index + 1; 0 = empty */
	size_t mask;
	const char **by_id;     /* id -> string (borrowed from arena) */
	size_t n_ids;           /* highest id + 1 */
} tk_vocab;

void tk_vocab_release(tk_vocab *v);
/* add (S, LEN) -> ID; a later duplicate string overrides the id */
int tk_vocab_add(tk_vocab *v, const char *s, size_t len, int32_t id);
/* build the hash table and id index after the last add */
int tk_vocab_build(tk_vocab *v);
/* id of PREFIX + S (prefix may be empty), -1 if absent */
int32_t tk_vocab_get2(const tk_vocab *v, const char *prefix, size_t plen,
                      const char *s, size_t len);
static inline int32_t tk_vocab_get(const tk_vocab *v, const char *s,
                                   size_t len)
{
	return tk_vocab_get2(v, "", 0, s, len);
}
const char *tk_vocab_str(const tk_vocab *v, int32_t id);

/* ------------------------------------------------------------------ */
/* models                                                              */

enum tk_model_type {
	TK_MODEL_WORDPIECE = 1,
};

/* tokens of one sequence: ids and [start, end) original offsets */
typedef struct tk_toks {
	int32_t *id;
	int32_t *off;           /* 2 per token */
	uint32_t *ws;           /* TK_WS_KNOWN | leading | trailing << 15:
	                           whitespace at the ends of an added
	                           token's text; 0 for model tokens (their
	                           text is their vocabulary string) */
	size_t n, cap;
} tk_toks;

#define TK_WS_KNOWN (1u << 31)

int tk_toks_push(tk_toks *t, int32_t id, int32_t os, int32_t oe);
void tk_toks_release(tk_toks *t);

typedef struct tk_wordpiece {
	tk_vocab vocab;
	char *unk;              /* unk token string */
	int32_t unk_id;         /* -1 when unk is not in the vocab */
	char *prefix;           /* continuing_subword_prefix */
	size_t prefix_len;
	size_t max_chars;       /* max_input_chars_per_word */
} tk_wordpiece;

typedef struct tk_model {
	int type;
	union {
		tk_wordpiece wp;
	} u;
} tk_model;

/* per-call scratch for models */
typedef struct tk_model_work {
	char *u8;               /* UTF-8 of the current word */
	size_t *pos;            /* byte offset of each code point, +1 */
	size_t cap;
} tk_model_work;

void tk_model_work_release(tk_model_work *w);

int tk_model_parse(tk_model *out, const json_t *j, const char *file,
                   emb_err *err);
/* the BERT WordPiece model from a vocab.txt file */
int tk_wordpiece_from_vocab_txt(tk_model *out, const char *path,
                                const char *unk, emb_err *err);
void tk_model_release(tk_model *m);
/* append the tokens of the piece SP of S to OUT */
int tk_model_tokenize(const tk_model *m, tk_toks *out, const tk_str *s,
                      tk_span sp, tk_model_work *w, emb_err *err);
const tk_vocab *tk_model_vocab(const tk_model *m);

/* ------------------------------------------------------------------ */
/* added tokens                                                        */

typedef struct tk_added {
	char *content;          /* UTF-8, as in the file */
	uint32_t *c;            /* code points to match (normalized when
	                           normalized is set) */
	size_t n;
	int32_t id;
	unsigned char special, lstrip, rstrip, single_word, normalized;
} tk_added;

/* a matching set: indices into the added array sorted by first code
 * point, then by length (longest first) */
typedef struct tk_addset {
	size_t *ix;
	size_t n;
} tk_addset;

/* ------------------------------------------------------------------ */
/* post-processor: a template of special tokens and sequences           */

typedef struct tk_tpl_item {
	int seq;                /* -1: special tokens; 0: A; 1: B */
	int type_id;
	int32_t *ids;           /* special: the ids it adds */
	size_t n;
} tk_tpl_item;

enum tk_post_type {
	TK_POST_NONE = 0,
	TK_POST_TEMPLATE,       /* TemplateProcessing, BertProcessing and
	                           RobertaProcessing all become templates */
};

typedef struct tk_post {
	int type;
	int trim_offsets;       /* RobertaProcessing: trim whitespace */
	int add_prefix_space;
	tk_tpl_item *single, *pair;
	size_t n_single, n_pair;
} tk_post;

/* ------------------------------------------------------------------ */

struct emb_tokenizer {
	char *file;             /* path named in messages */
	int has_norm, has_pre;
	tk_normalizer norm;
	tk_pretok pre;
	tk_model model;
	tk_post post;
	tk_added *added;
	size_t n_added;
	tk_addset raw_set;      /* normalized == 0 */
	tk_addset norm_set;     /* normalized == 1 */
	tk_vocab added_vocab;   /* content -> id */
	size_t n_ids;           /* highest id + 1 over model and added */
};

#endif /* TOKENIZER_INTERNAL_H */
