/*
 * tokenizer-internal.h - the tokenizer pipeline (private to lib/).
 *
 * A tokenizer is a pipeline of components, as in Hugging Face
 * tokenizer.json:
 *
 *   input (UTF-8) -> code points with alignments (tk_str)
 *     -> split on added tokens that are not normalized (original text)
 *     -> normalizer                       (tk_normalizer, normalizer.c;
 *                                            Precompiled: precompiled.c)
 *     -> split on normalized added tokens (normalized text)
 *     -> pre-tokenizer: pieces (tk_spans)  (tk_pretok, normalizer.c and
 *                                            pretok.c; regexes: pretok.c)
 *     -> model: tokens per piece           (tk_model, wordpiece.c, bpe.c,
 *                                            unigram.c)
 *     -> truncation, post-processor        (tk_post, tokenizer.c and
 *                                            postproc.c)
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
#include "tok/tok.h"
#include "tok/text.h"     /* tk_str, spans, UTF-8, Unicode predicates */
#include "tok/vocab.h"    /* tk_vocab, tk_toks, tk_model_work */

/* ------------------------------------------------------------------ */
/* normalizers                                                         */

enum tk_norm_type {
	TK_NORM_BERT = 1,
	TK_NORM_LOWERCASE,
	TK_NORM_NFD,
	TK_NORM_STRIP_ACCENTS,
	TK_NORM_SEQUENCE,
	TK_NORM_NFC,
	TK_NORM_NFKD,
	TK_NORM_NFKC,
	TK_NORM_STRIP,          /* Strip: whitespace at the ends */
	TK_NORM_REPLACE,        /* Replace: string or regex -> content */
	TK_NORM_PREPEND,
	TK_NORM_PRECOMPILED,    /* SentencePiece charsmap (precompiled.c) */
};

/* a compiled regular expression (pattern.c): PCRE2, 32-bit code units,
 * so that it matches tk_str code points directly */
typedef struct tk_regex tk_regex;

/* a pattern of Split and Replace: a literal string or a regex */
typedef struct tk_pattern {
	uint32_t *lit;          /* literal code points (NULL for a regex) */
	size_t n;
	tk_regex *re;
	int gpt2;               /* the GPT-2 pattern: hand-written scanner */
	int word_split;         /* a known regex (GPT-2's, cl100k's, Qwen's)
	                           whose matches always end between an ASCII
	                           letter or digit and a space */
} tk_pattern;

int tk_pattern_parse(tk_pattern *out, const json_t *j, const char *file,
                     const char *field, emb_err *err);
void tk_pattern_release(tk_pattern *p);
/* Matches of P in c[a, b) (non-overlapping, left to right) appended to
 * OUT as spans. -1 out of memory or regex failure. */
int tk_pattern_find(const tk_pattern *p, tk_spans *out, const uint32_t *c,
                    size_t a, size_t b);
/* matches of the GPT-2 pattern in c[a, b) appended to OUT (the
 * hand-written scanner ByteLevel and such Splits use) */
int tk_gpt2_find(tk_spans *out, const uint32_t *c, size_t a, size_t b);
/* The regex work of one text is bounded: PCRE2's match limit bounds one
 * call, and a text can take one call per character, so the calls of one
 * text (its normalizer and pre-tokenizer regexes, in this thread) share
 * a CPU time budget of TK_REGEX_BUDGET_MS plus TK_REGEX_BUDGET_NS_PER_CP
 * per code point, times TK_REGEX_BUDGET_SCALE.  tk_regex_budget_start(N)
 * starts it for a text of N code points; past it tk_pattern_find fails
 * and tk_regex_over_budget() says so until the next start.  Ordinary
 * patterns take well under 1 us a code point, a pattern with an empty
 * match at every character about 1 us; thread CPU time on a virtual
 * machine also counts the time the host takes the CPU away, so the
 * budget keeps a wide margin.  A sanitizer build runs the code around
 * each regex call several times slower (PCRE2 itself is not
 * instrumented): its budget is doubled. */
#define TK_REGEX_BUDGET_MS 1000
#define TK_REGEX_BUDGET_NS_PER_CP 10000
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TK_REGEX_BUDGET_SCALE 2
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TK_REGEX_BUDGET_SCALE 2
#endif
#endif
#ifndef TK_REGEX_BUDGET_SCALE
#define TK_REGEX_BUDGET_SCALE 1
#endif
void tk_regex_budget_start(size_t n);
int tk_regex_over_budget(void);

/* SentencePiece precompiled charsmap (Darts double array + strings) */
typedef struct tk_charsmap {
	uint32_t *units;        /* double array */
	size_t n_units;
	char *norm;             /* NUL-separated replacement strings */
	size_t n_norm;
} tk_charsmap;

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
		struct {
			int left, right;
		} strip;
		struct {
			tk_pattern pat;
			uint32_t *content;
			size_t n;
		} replace;
		struct {
			uint32_t *s;
			size_t n;
		} prepend;
		tk_charsmap cmap;
	} u;
} tk_normalizer;

int tk_charsmap_parse(tk_charsmap *out, const char *b64, size_t len,
                      const char *file, const char *field, emb_err *err);
void tk_charsmap_release(tk_charsmap *m);
int tk_charsmap_normalize(const tk_charsmap *m, tk_str *s, tk_str *tmp);
/* 1 when M maps each printable ASCII character to itself, nothing, or
 * one printable ASCII character, letters and digits to letters or
 * digits and the space to the space (see tk_chunk_safe) */
int tk_charsmap_ascii_stable(const tk_charsmap *m);
/* Parse JSON J (FILE and FIELD name it in messages). DEPTH bounds
 * nesting. */
int tk_normalizer_parse(tk_normalizer *out, const json_t *j,
                        const char *file, const char *field, int depth,
                        emb_err *err);
void tk_normalizer_release(tk_normalizer *n);
/* s := normalize(s); tmp is scratch.  -1 when out of memory, a regex
 * gives up, or the text grows over s->max (then s->over or tmp->over is
 * set: give both the same max, see tk_norm_limit). */
int tk_normalize(const tk_normalizer *n, tk_str *s, tk_str *tmp);
/* Normalizing may grow a text: NFKD up to 18 code points for one, a
 * Replace by its content, Prepend by its prefix; rules chained in a
 * Sequence multiply (30 Replace a -> aa: 2^30).  A normalized text over
 * TK_NORM_GROWTH times the input plus TK_NORM_SLACK code points is an
 * error of that record (or, for an added token, of the tokenizer), and a
 * Sequence of more than TK_NORM_MAX_STEPS steps in all is refused at
 * load: each step is a pass over the text. */
#define TK_NORM_GROWTH 16
#define TK_NORM_SLACK 4096
#define TK_NORM_MAX_STEPS 64
/* the most code points normalizing N code points may give */
size_t tk_norm_limit(size_t n);

/* ------------------------------------------------------------------ */
/* pre-tokenizers                                                      */

enum tk_pretok_type {
	TK_PRE_BERT = 1,
	TK_PRE_WHITESPACE_SPLIT,
	TK_PRE_SEQUENCE,
	TK_PRE_BYTELEVEL,
	TK_PRE_METASPACE,
	TK_PRE_WHITESPACE,
	TK_PRE_PUNCTUATION,
	TK_PRE_DIGITS,
	TK_PRE_SPLIT,
};

/* SplitDelimiterBehavior */
enum tk_split_behavior {
	TK_SPLIT_REMOVED = 1,
	TK_SPLIT_ISOLATED,
	TK_SPLIT_MERGED_PREV,
	TK_SPLIT_MERGED_NEXT,
	TK_SPLIT_CONTIGUOUS,
};

enum { TK_PREPEND_ALWAYS = 0, TK_PREPEND_FIRST, TK_PREPEND_NEVER };

typedef struct tk_pretok {
	int type;
	union {
		struct {
			struct tk_pretok *v;
			size_t n;
		} seq;
		struct {
			int add_prefix_space, use_regex;
		} bl;
		struct {
			uint32_t repl;
			int scheme, split;
		} meta;
		struct {
			int behavior;
		} punct;
		struct {
			int individual;
		} digits;
		struct {
			tk_pattern pat;
			int behavior, invert;
		} split;
	} u;
} tk_pretok;

int tk_pretok_parse(tk_pretok *out, const json_t *j, const char *file,
                    const char *field, int depth, emb_err *err);
void tk_pretok_release(tk_pretok *p);
/* Split the pieces IN of S into OUT (cleared first); tmp and stmp are
 * scratch.  Pre-tokenizers that rewrite text (ByteLevel, Metaspace)
 * rewrite S, and OUT then indexes the new S. */
int tk_pretokenize(const tk_pretok *p, tk_spans *out, tk_str *s,
                   const tk_spans *in, tk_spans *tmp, tk_str *stmp);

/* one pre-tokenizer that is not a Sequence (tk_pretok_parse and
 * tk_pretokenize run Sequences and choose by type): parse TYPE from J,
 * split IN of S into OUT (stmp: scratch), release */
int tk_pretok_parse_one(tk_pretok *out, const char *type, const json_t *j,
                        const char *file, const char *field, emb_err *err);
int tk_pretok_one(const tk_pretok *p, tk_spans *out, tk_str *s,
                  const tk_spans *in, tk_str *stmp);
void tk_pretok_release_one(tk_pretok *p);
/* split pieces by the spans M of matches, as BEHAVIOR says */
int tk_split_by(tk_spans *out, size_t a, size_t b, const tk_spans *m,
                int behavior, int invert);

/* ------------------------------------------------------------------ */
/* models                                                              */

enum tk_model_type {
	TK_MODEL_WORDPIECE = 1,
	TK_MODEL_BPE,
	TK_MODEL_UNIGRAM,
};

typedef struct tk_wordpiece {
	tk_vocab vocab;
	char *unk;              /* unk token string */
	int32_t unk_id;         /* -1 when unk is not in the vocab */
	char *prefix;           /* continuing_subword_prefix */
	size_t prefix_len;
	size_t max_chars;       /* max_input_chars_per_word */
} tk_wordpiece;

/* BPE merges: (left id, right id) -> (rank, new id), open addressing */
typedef struct tk_merge {
	uint64_t key;           /* left << 32 | right, + 1; 0 = empty */
	int32_t rank, id;
} tk_merge;

typedef struct tk_bpe {
	tk_vocab vocab;
	tk_merge *merges;
	size_t mask, n_merges;
	char *unk;              /* NULL: unknown characters are dropped */
	int32_t unk_id;
	char *prefix, *suffix;  /* continuing_subword_prefix,
	                           end_of_word_suffix ("" when none) */
	int fuse_unk, byte_fallback, ignore_merges;
	int32_t byte_id[256];   /* <0xXX> ids, -1 when absent */
} tk_bpe;

typedef struct tk_unigram {
	tk_vocab vocab;
	double *score;          /* per id */
	size_t n;
	int32_t unk_id;         /* -1: none */
	double unk_score;       /* min score - 10 */
	int byte_fallback;
	size_t max_len;         /* longest piece, bytes */
	int32_t byte_id[256];
} tk_unigram;

typedef struct tk_model {
	int type;
	union {
		tk_wordpiece wp;
		tk_bpe bpe;
		tk_unigram uni;
	} u;
} tk_model;

/* tokenizer.json's big tables read without a jansson tree (fastjson.c):
 * a BPE model's model.vocab (an object of token -> id, built into VOCAB)
 * and model.merges (in order: two strings each, offsets into the text
 * or, with TK_FAST_ARENA set, into ARENA; na == TK_FAST_BAD for an entry
 * of another shape) */
#define TK_FAST_ARENA 0x80000000u
#define TK_FAST_BAD 0xffffffffu
typedef struct tk_fast_merge {
	uint32_t a, na, b, nb;
} tk_fast_merge;
typedef struct tk_fast {
	tk_vocab vocab;
	int have_merges;        /* model.merges was an array */
	tk_fast_merge *merges;
	size_t n_merges, cap_merges;
	const char *text;       /* borrowed: the file's text */
	size_t len;             /* its length */
	char *arena;            /* merge strings that held escapes */
	size_t arena_len, arena_cap;
} tk_fast;
/* read TEXT (LEN bytes, borrowed, and it must outlive F): 1 when it is a
 * strictly valid JSON object whose one "model" is a BPE model with an
 * object "vocab" of distinct tokens and integer ids in range; then F
 * holds the tables and *RESIDUE (new: free()) is the text with
 * model.vocab and model.merges emptied ({} and []), *RLEN its length,
 * for jansson to read the rest.  0 (F empty) when it is not so, or out
 * of memory: then read the whole text the usual way, which also gives
 * the messages for what is wrong. */
int tk_fast_read(tk_fast *f, const char *text, size_t len, char **residue,
                 size_t *rlen);
void tk_fast_release(tk_fast *f);
/* merge I's two strings */
static inline const char *tk_fast_str(const tk_fast *f, uint32_t off)
{
	return off & TK_FAST_ARENA ? f->arena + (off & ~TK_FAST_ARENA)
	                           : f->text + off;
}

/* the three models (wordpiece.c, bpe.c, unigram.c): parse the "model"
 * object J of FILE, release, append the tokens of piece SP of S */
int tk_wordpiece_parse(tk_wordpiece *wp, const json_t *j, const char *file,
                       emb_err *err);
int tk_wordpiece_tokenize(const tk_wordpiece *wp, tk_toks *out,
                          const tk_str *s, tk_span sp, tk_model_work *w,
                          emb_err *err);
/* FAST (borrowed; its vocabulary is moved out): the tables read by
 * tk_fast_read, which J holds emptied, or NULL */
int tk_bpe_parse(tk_bpe *b, const json_t *j, const char *file,
                 tk_fast *fast, emb_err *err);
void tk_bpe_release(tk_bpe *b);
int tk_bpe_tokenize(const tk_bpe *b, tk_toks *out, const tk_str *s,
                    tk_span sp, tk_model_work *w, emb_err *err);
int tk_unigram_parse(tk_unigram *u, const json_t *j, const char *file,
                     emb_err *err);
void tk_unigram_release(tk_unigram *u);
int tk_unigram_tokenize(const tk_unigram *u, tk_toks *out, const tk_str *s,
                        tk_span sp, tk_model_work *w, emb_err *err);

/* the model switch (model.c) */
/* FAST: as tk_bpe_parse's, or NULL */
int tk_model_parse(tk_model *out, const json_t *j, const char *file,
                   tk_fast *fast, emb_err *err);
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
	struct tk_acm *acm;     /* matches the set's tokens (acmatch.h) */
} tk_addset;

/* a text cut by the matches of a set: [a, b) code points, each an
 * added token (tok: its index into the added array) or text (-1) */
typedef struct tk_seg {
	size_t a, b;            /* [a, b) code points */
	long tok;               /* index into tok->added, -1 for text */
} tk_seg;

typedef struct tk_segs {
	tk_seg *v;
	size_t n, cap;
} tk_segs;

struct tk_acm_hits;             /* acmatch.h */

/* addedtok.c.  Append an added token (HF AddedVocabulary::add_tokens:
 * its id is that of the same string already known, else the next free
 * one); -1 out of memory */
int tk_added_add(emb_tokenizer *t, const char *content, int special,
                 int normalized, int lstrip, int rstrip, int single);
/* tokenizer.json's added_tokens A (NULL or null: none) of FILE */
int tk_added_parse(emb_tokenizer *t, const json_t *a, const char *file,
                   emb_err *err);
/* after all added tokens and the normalizer are known: the code points
 * to match, the two matching sets, the id maps */
int tk_added_finish(emb_tokenizer *t, emb_err *err);
/* OUT (cleared first) = S[0, N) cut at the matches of SET, leftmost
 * longest, with the single_word, lstrip and rstrip rules; HITS:
 * scratch.  -1 out of memory */
int tk_added_find(const emb_tokenizer *t, const tk_addset *set,
                  const uint32_t *s, size_t n, tk_segs *out,
                  struct tk_acm_hits *hits);

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
	                           RobertaProcessing all become templates;
	                           ByteLevel only sets trim_offsets; a
	                           Sequence merges its members */
};

typedef struct tk_post {
	int type;
	int trim_offsets;       /* RobertaProcessing: trim whitespace */
	int add_prefix_space;
	tk_tpl_item *single, *pair;
	size_t n_single, n_pair;
} tk_post;

/* postproc.c: tokenizer.json's post_processor J (NULL or null: none)
 * of FILE into P; DEPTH bounds the nesting of Sequences */
int tk_post_parse(tk_post *p, const json_t *j, const char *file,
                  int depth, emb_err *err);
/* BertProcessing (ROBERTA 0) or RobertaProcessing as a template; -1
 * out of memory */
int tk_post_bert(tk_post *p, int32_t cls, int32_t sep, int roberta);
void tk_post_release(tk_post *p);
/* the special tokens of the N template items IT */
size_t tk_post_specials(const tk_tpl_item *it, size_t n);
/* every special token the post-processor adds must be in a vocabulary
 * (the tokenizer's added tokens are final) */
int tk_post_check(const emb_tokenizer *t, const char *file, emb_err *err);

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
	json_t *added_ids;      /* while loading: content -> id (new) */
	int32_t added_max;      /* the highest added id so far */
	int chunked;            /* long texts are tokenized in pieces
	                           (tk_chunk_safe) */
};

/*
 * Long texts in pieces.  A text is cut before a space that has two
 * ASCII letters or digits before it, one after it and an ASCII
 * character after that ("ab cd", the cut before the space), at least
 * TK_CHUNK_BYTES after the previous cut.  Tokenizing the pieces one
 * after the other gives the tokens of the whole text when every stage
 * keeps such a place as it is and one stage splits there: normalizers
 * that map code points alone or by grapheme (BERT, Lowercase, NF*,
 * StripAccents, Precompiled when ASCII-stable, Replace of a literal
 * without ASCII letters, digits or spaces); pre-tokenizers that split at
 * spaces (BERT, Whitespace, WhitespaceSplit, ByteLevel with its regex,
 * Metaspace with split, Split by a known word regex or by " ") with
 * only such stages before them (any stage after them works within the
 * pieces); added tokens that cannot match across
 * the cut (none holds a space next to a letter or digit, or is a lone
 * space, or strips on the right after a letter or digit).  Strip,
 * Prepend and regex Replace normalizers, other Split regexes, and
 * tokenizers without such a split keep texts whole.  Memory per text
 * is then its tokens plus a constant.
 */
#define TK_CHUNK_BYTES 65536
/* chunksafe.c: 1 when T may tokenize long texts in pieces; the next cut
 * of U[0, LEN) at or after FROM, or LEN */
int tk_chunk_safe(const emb_tokenizer *t);
size_t tk_chunk_cut(const unsigned char *u, size_t from, size_t len);

/* vocabtxt.c: T (zeroed but for its file) from DIR/vocab.txt and the
 * JSON files beside it (tokenizer_config.json, special_tokens_map.json,
 * added_tokens.json) */
int tk_vocab_txt_load(emb_tokenizer *t, const char *dir, emb_err *err);

#endif /* TOKENIZER_INTERNAL_H */
