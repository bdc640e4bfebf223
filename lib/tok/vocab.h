/*
 * vocab.h - vocabularies (string -> id hash map, id -> string), the
 * token list a model appends to (tk_toks) and the models' per-call work
 * buffers (tk_model_work): vocab.c.  Private to lib/tok/ (through
 * tok-internal.h); includes only text.h of the folder.
 */
#ifndef TK_VOCAB_H
#define TK_VOCAB_H

#include "tok/text.h"

/* ------------------------------------------------------------------ */
/* vocabularies: string -> id hash map, id -> string                   */

typedef struct tk_vent {
	uint32_t off, len;      /* the string: arena + off, len bytes */
	int32_t id;
} tk_vent;

typedef struct tk_vocab {
	char *arena;            /* NUL-terminated strings */
	size_t arena_len, arena_cap;
	tk_vent *ent;           /* per entry */
	size_t n, cap;
	uint64_t *slots;        /* the hash's high 32 bits << 32 | entry
	                           index + 1; 0 = empty */
	size_t mask;
	const char **by_id;     /* id -> string (borrowed from arena) */
	size_t n_ids;           /* highest id + 1 */
	size_t maxlen;          /* the longest entry, in bytes */
} tk_vocab;

/* a zeroed table of N items of SIZE bytes for random access
 * (tk_table_free with the same N and SIZE): a big one on 2 MB pages
 * where the system allows; NULL if out of memory */
void *tk_table_calloc(size_t n, size_t size);
void tk_table_free(void *p, size_t n, size_t size);
void tk_vocab_release(tk_vocab *v);
/* add (S, LEN) -> ID; a later duplicate string overrides the id */
int tk_vocab_add(tk_vocab *v, const char *s, size_t len, int32_t id);
/* build the hash table and id index after the last add */
int tk_vocab_build(tk_vocab *v);
/* the same, but a string added twice is an error: 1 (the table is
 * built all the same, the later id winning), 0 when none is, -1 out of
 * memory */
int tk_vocab_build_unique(tk_vocab *v);
/* add every entry of OBJ (borrowed: tokenizer.json's model.vocab, an
 * object of token -> id) and build; 0, or -1 with ERR naming FILE */
int tk_vocab_from_json(tk_vocab *v, const json_t *obj, const char *file,
                       emb_err *err);
/* id of PREFIX + S (prefix may be empty), -1 if absent */
int32_t tk_vocab_get_prefixed(const tk_vocab *v, const char *prefix,
                              size_t plen, const char *s, size_t len);
static inline int32_t tk_vocab_get(const tk_vocab *v, const char *s,
                                   size_t len)
{
	return tk_vocab_get_prefixed(v, "", 0, s, len);
}
const char *tk_vocab_str(const tk_vocab *v, int32_t id);
/* the same lookup in two steps, for many at once: the hash of PREFIX + S,
 * a prefetch of its slot, then the id (as tk_vocab_get_prefixed) */
uint64_t tk_vocab_hash(const char *prefix, size_t plen, const char *s,
                       size_t len);
static inline void tk_vocab_prefetch(const tk_vocab *v, uint64_t h)
{
	if (v->slots)
		__builtin_prefetch(&v->slots[h & v->mask]);
}
/* the second step: after the slot came, fetch its entry */
void tk_vocab_prefetch2(const tk_vocab *v, uint64_t h);
int32_t tk_vocab_get_hashed(const tk_vocab *v, uint64_t h,
                            const char *prefix, size_t plen, const char *s,
                            size_t len);
/* the longest of PREFIX + S[FROM, ends[k]) in the vocabulary, for the
 * NENDS increasing byte offsets ENDS (borrowed): its id, *K = k; -1 if
 * none.  One pass over S: time linear in min(ends[nends-1] - FROM, the
 * longest entry), whatever NENDS is. */
int32_t tk_vocab_longest(const tk_vocab *v, const char *prefix, size_t plen,
                         const char *s, size_t from, const size_t *ends,
                         size_t nends, size_t *k);

/* ------------------------------------------------------------------ */
/* token lists and the models' work buffers                            */

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

/* per-call scratch for models */
typedef struct tk_model_work {
	char *u8;               /* UTF-8 of the current word */
	size_t *pos;            /* byte offset of each code point, +1 */
	size_t cap;
	void *sym;              /* BPE symbols / Unigram lattice */
	size_t sym_cap;         /* in elements of the model's own type */
	void *heap;             /* BPE merge heap / Unigram path */
	size_t heap_cap;        /* idem */
} tk_model_work;

/* make room for N code points in w->u8 / w->pos and fill them from
 * s[a, a+n); -1 out of memory */
int tk_work_utf8(tk_model_work *w, const uint32_t *c, size_t n);
void tk_model_work_release(tk_model_work *w);

#endif /* TK_VOCAB_H */
