/*
 * io/jscan.h - a strict streaming JSON scanner over a text in memory:
 * values are read (or skipped) one at a time, in order, without building
 * a tree, so that a caller can put the members of a large object or
 * array straight into its own tables.
 * Layer io: includes base only.
 *
 * Strict as jansson's decoder is by default (RFC 8259 grammar, UTF-8
 * checked: no overlong forms, surrogates or code points past U+10FFFF;
 * \u escapes with surrogate pairs, a lone surrogate or \u0000 refused;
 * no control characters in strings), nesting at most EMB_JSCAN_MAX_DEPTH.
 * Time is linear in the text, memory at most the longest string.  The
 * first error stops the scan: every later call fails at once.
 */
#ifndef EMB_IO_JSCAN_H
#define EMB_IO_JSCAN_H

#include <stddef.h>

#include "base/base.h"

#define EMB_JSCAN_MAX_DEPTH 2048  /* jansson's JSON_PARSER_MAX_DEPTH */

typedef struct emb_jscan {
	const unsigned char *text, *p, *end;  /* borrowed */
	char *buf;                  /* decoded strings (owned) */
	size_t cap;
	int depth;                  /* objects and arrays open */
	const char *what;           /* the first error (static text), or NULL */
	const unsigned char *at;    /* where it was found */
} emb_jscan;

/* scan TEXT (LEN bytes, borrowed for the scanner's life); release frees
 * the string buffer */
void emb_jscan_init(emb_jscan *s, const char *text, size_t len);
void emb_jscan_release(emb_jscan *s);

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

/* an object's key and the ':' after it, as emb_jscan_string */
int emb_jscan_key(emb_jscan *s, const char **out, size_t *n);

/* a number: 1 and *V when it is an integer (no fraction or exponent)
 * that fits in a long long; 0 when it is a valid real (consumed); -1 on
 * an error or when no number is there.  As jansson, an integer past a
 * long long and a real past a double's range are errors. */
int emb_jscan_int(emb_jscan *s, long long *v);

/* skip one value of any kind, checking it whole: 0, or -1 */
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
