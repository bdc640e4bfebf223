/*
 * io/jscan.h - a strict streaming JSON scanner over a text in memory:
 * values are read (or skipped) one at a time, in order, without building
 * a tree, so that a caller can put the members of a large object or
 * array straight into its own tables.  The one home of JSON's grammar in
 * emb: the record path (record.c) walks each line with it too.
 * Layer io: includes base only.
 *
 * Strict as jansson's decoder is by default (RFC 8259 grammar, UTF-8
 * checked: no overlong forms, surrogates or code points past U+10FFFF;
 * \u escapes with surrogate pairs, a lone surrogate or \u0000 refused;
 * no control characters in strings), nesting at most EMB_JSCAN_MAX_DEPTH.
 * Time is linear in the text, memory at most the longest string.  The
 * first error stops the scan: every later call fails at once.
 *
 * The record path's rules (emb_jscan_init_record) are the same grammar
 * with three things allowed that jansson refuses: \u0000 in a string, a
 * number of any size, and a number or literal that runs into the next
 * byte ("01", "truex": that byte is then the error, as a missing ',').
 * Its errors have their own words, some at other bytes: a bad number at
 * the byte where a digit was wanted, a string cut after its '\' at the
 * '\'; and a key missing where the line ends is "the end of the line"
 * in the line's own object, "a string key" in a nested one.
 */
#ifndef EMB_IO_JSCAN_H
#define EMB_IO_JSCAN_H

#include <stddef.h>

#include "base/base.h"

#define EMB_JSCAN_MAX_DEPTH 2048  /* jansson's JSON_PARSER_MAX_DEPTH */

struct emb_jscan_rules;

typedef struct emb_jscan {
	const unsigned char *text, *p, *end;  /* borrowed; p: the next byte */
	char *buf;                  /* decoded strings (owned) */
	size_t cap;
	int depth;                  /* objects and arrays open */
	int max_depth;              /* at most EMB_JSCAN_MAX_DEPTH */
	const struct emb_jscan_rules *rules;  /* jansson's or the record's */
	const char *what;           /* the first error (static text), or NULL */
	const unsigned char *at;    /* where it was found */
} emb_jscan;

/* scan TEXT (LEN bytes, borrowed for the scanner's life); release frees
 * the string buffer */
void emb_jscan_init(emb_jscan *s, const char *text, size_t len);
void emb_jscan_release(emb_jscan *s);

/* as emb_jscan_init, with the record path's rules (above) and nesting at
 * most MAX_DEPTH (<= EMB_JSCAN_MAX_DEPTH) objects and arrays open */
void emb_jscan_init_record(emb_jscan *s, const char *text, size_t len,
                           int max_depth);

/* skip whitespace; the next byte (0-255), or -1 at the end or after an
 * error.  Consumes nothing else. */
int emb_jscan_peek(emb_jscan *s);

/* open an object ('{') or array ('['): 0, or -1 (not there, too deep) */
int emb_jscan_open(emb_jscan *s, int c);

/* between the members of the object or array last opened: *FIRST is 1
 * before the first (set it so after emb_jscan_open).  1: a member follows
 * (for an object, read its key with emb_jscan_key); 0: the closing
 * bracket was consumed; -1: an error. */
int emb_jscan_more(emb_jscan *s, int *first, int close);

/* a string: *OUT (borrowed, valid until the next call; not
 * NUL-terminated when it points into the text), *N its length in bytes.
 * 0, or -1. */
int emb_jscan_string(emb_jscan *s, const char **out, size_t *n);

/* a string as a new NUL-terminated copy (free()), *N its length in
 * bytes; NULL on an error (out of memory is one) */
char *emb_jscan_string_dup(emb_jscan *s, size_t *n);

/* the ':' after an object's key: 0, or -1 */
int emb_jscan_colon(emb_jscan *s);

/* an object's key and the ':' after it, as emb_jscan_string */
int emb_jscan_key(emb_jscan *s, const char **out, size_t *n);

/* a number: 1 and *V when it is an integer (no fraction or exponent)
 * that fits in a long long; 0 when it is a valid real (consumed); -1 on
 * an error or when no number is there.  As jansson, an integer past a
 * long long and a real past a double's range are errors; under the
 * record path's rules they are valid (0, as a real). */
int emb_jscan_int(emb_jscan *s, long long *v);

/* skip one value of any kind, checking it whole (its strings are
 * checked, not decoded): 0, or -1 */
int emb_jscan_skip(emb_jscan *s);

/* only whitespace is left: 0, or -1 */
int emb_jscan_finish(emb_jscan *s);

/* after an error: set ERR to "FILE: invalid JSON at line L column C:
 * WHAT" (column in bytes, from 1; never the text's bytes) and return -1 */
int emb_jscan_error(const emb_jscan *s, const char *file, emb_err *err);

/* TEXT (LEN bytes, borrowed) with the value of each top-level member
 * named KEY replaced by 0, for a reader that never looks at it (and so
 * need not build a tree of it): 1 and *OUT (new: free()), *OUTLEN, when
 * TEXT is a strictly valid JSON object that has KEY; else 0 (use TEXT
 * as it is, which also gives any error its own message) */
int emb_jscan_zero_member(const char *text, size_t len, const char *key,
                          char **out, size_t *outlen);

#endif /* EMB_IO_JSCAN_H */
