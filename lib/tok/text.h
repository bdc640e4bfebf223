/*
 * text.h - the bottom of the tokenizer (text.c): code point strings
 * aligned to the input (tk_str), spans, growable arrays, UTF-8, the
 * Unicode predicates with Hugging Face tokenizers' semantics and the
 * JSON helpers every tokenizer.json parser uses.  Private to lib/tok/
 * (through tok-internal.h); includes nothing else of the folder.
 */
#ifndef TK_TEXT_H
#define TK_TEXT_H

#include <jansson.h>
#include "base/utf8.h"
#include "tok/tok.h"

/* ------------------------------------------------------------------ */
/* aligned code point strings                                          */

typedef struct tk_str {
	uint32_t *c;            /* code points */
	int32_t *o;             /* 2 per code point: [start, end) in original
	                           code points */
	size_t n, cap;
	size_t max;             /* 0, or the most code points it may hold */
	int over;               /* a reserve went over max */
} tk_str;

void tk_str_release(tk_str *s);
/* 0, or -1: out of memory, or over s->max (then s->over is set) */
int tk_str_reserve(tk_str *s, size_t n);
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
/* the same for a piece of a longer text: code point i aligned to
 * [base + i, base + i + 1), invalid bytes reported at BYTE0 + their
 * index */
int tk_utf8_decode_at(tk_str *out, const char *s, size_t len, size_t base,
                      size_t byte0, emb_err *err);

/* a range [a, b) of code points of a tk_str */
typedef struct tk_span {
	size_t a, b;
} tk_span;

typedef struct tk_spans {
	tk_span *v;
	size_t n, cap;
} tk_spans;

/* room for one more item of SIZE bytes in the array *VP (VP: the address
 * of a T *) of *CAP items holding N: doubled (FIRST items at first) when
 * full; 0, or -1 when out of memory (*VP unchanged) */
int tk_grow(void *vp, size_t *cap, size_t n, size_t size, size_t first);
int tk_spans_push(tk_spans *s, size_t a, size_t b);
void tk_spans_release(tk_spans *s);

/* ------------------------------------------------------------------ */
/* Unicode predicates with Hugging Face tokenizers' exact semantics     */

/* Each inline with its ASCII answer (the text of most inputs: no call);
 * the _u functions (text.c) answer for c >= 0x80 only. */
int tk_is_whitespace_u(uint32_t c);
int tk_is_control_u(uint32_t c);
int tk_is_bert_punct_u(uint32_t c);
int tk_is_word_u(uint32_t c);
int tk_is_letter_u(uint32_t c);
int tk_is_number_u(uint32_t c);
int tk_is_numeric_u(uint32_t c);
int tk_tolower_u(uint32_t out[3], uint32_t c);

/* Rust char::is_whitespace */
static inline int tk_is_whitespace(uint32_t c)
{
	if (c < 0x80)
		return c == ' ' || (c >= 0x09 && c <= 0x0d);
	return tk_is_whitespace_u(c);
}

/* BertNormalizer is_control */
static inline int tk_is_control(uint32_t c)
{
	if (c < 0x80)   /* the tables' answer for ASCII: Cc but \t \n \r */
		return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') ||
		       c == 0x7f;
	return tk_is_control_u(c);
}

/* ASCII or Unicode punctuation */
static inline int tk_is_bert_punct(uint32_t c)
{
	if (c < 0x80)   /* BERT's ASCII rule, which the table holds too */
		return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
		       (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
	return tk_is_bert_punct_u(c);
}

int tk_is_nonspacing_mark(uint32_t c);   /* BertNormalizer strip_accents */
int tk_is_combining_mark(uint32_t c);    /* StripAccents normalizer */
int tk_is_chinese(uint32_t c);

/* regex \w (Oniguruma, Unicode) */
static inline int tk_is_word(uint32_t c)
{
	if (c < 0x80)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		       (c >= 'A' && c <= 'Z') || c == '_';
	return tk_is_word_u(c);
}

/* regex \p{L} */
static inline int tk_is_letter(uint32_t c)
{
	if (c < 0x80)
		return (c | 32) >= 'a' && (c | 32) <= 'z';
	return tk_is_letter_u(c);
}

/* regex \p{N} */
static inline int tk_is_number(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	return tk_is_number_u(c);
}

/* Rust char::is_numeric */
static inline int tk_is_numeric(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	return tk_is_numeric_u(c);
}

/* c in one of the N sorted, disjoint ranges R[i] = [lo, hi] */
int tk_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c);
/* the "type" member of J (an object named FIELD in FILE), a WHAT such
 * as "normalizer"; NULL (err) when J is not an object or has none */
const char *tk_type_of(const json_t *j, const char *file, const char *field,
                       const char *what, emb_err *err);
/* Rust char::to_lowercase: writes 1..3 code points, returns count */
static inline int tk_tolower(uint32_t out[3], uint32_t c)
{
	if (c < 0x80) {
		out[0] = c >= 'A' && c <= 'Z' ? c + 32 : c;
		return 1;
	}
	return tk_tolower_u(out, c);
}

/* decode UTF-8 S (NUL-terminated) into a new code point array */
uint32_t *tk_utf8_to_cps(const char *s, size_t len, size_t *n);
/* optional boolean member KEY of J (an object named FIELD in FILE): *out
 * keeps its default when absent or null; a non-boolean is an error */
int tk_opt_bool(int *out, const json_t *j, const char *key,
                const char *file, const char *field, emb_err *err);

#endif /* TK_TEXT_H */
