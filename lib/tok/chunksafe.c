/*
 * chunksafe.c - long texts in pieces (tok-internal.h, TK_CHUNK_BYTES):
 * where a text is cut, and whether a tokenizer gives the same tokens
 * for the pieces as for the whole text.
 */
#include <stdlib.h>
#include "tok/tok-internal.h"

#define ASCII_ALNUM(c) (((c) >= '0' && (c) <= '9') || \
	((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z'))

/* the next cut of U[0, LEN) at or after FROM (tk_chunk_safe), or LEN */
size_t tk_chunk_cut(const unsigned char *u, size_t from, size_t len)
{
	size_t j;

	for (j = from < 2 ? 2 : from; j + 2 < len; j++)
		if (u[j] == ' ' && ASCII_ALNUM(u[j + 1]) &&
		    ASCII_ALNUM(u[j - 1]) && ASCII_ALNUM(u[j - 2]) &&
		    u[j + 2] < 0x80)
			return j;
	return len;
}

static int cps_plain(const uint32_t *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i] == ' ' || (c[i] < 0x80 && ASCII_ALNUM(c[i])))
			return 0;
	return 1;
}

static int norm_safe(const tk_normalizer *n)
{
	switch (n->type) {
	case TK_NORM_BERT: case TK_NORM_LOWERCASE: case TK_NORM_NFD:
	case TK_NORM_NFC: case TK_NORM_NFKD: case TK_NORM_NFKC:
	case TK_NORM_STRIP_ACCENTS:
		return 1;
	case TK_NORM_SEQUENCE:
		for (size_t i = 0; i < n->u.seq.n; i++)
			if (!norm_safe(&n->u.seq.v[i]))
				return 0;
		return 1;
	case TK_NORM_PRECOMPILED:
		return tk_charsmap_ascii_stable(&n->u.cmap);
	case TK_NORM_REPLACE:
		/* a literal without ASCII letters, digits or spaces matches
		 * nowhere near the cut (its five ASCII characters), so the
		 * matches, and what replaces them, are the same either way */
		return n->u.replace.pat.lit && !n->u.replace.pat.re &&
		       !n->u.replace.pat.gpt2 &&
		       cps_plain(n->u.replace.pat.lit, n->u.replace.pat.n);
	}
	return 0;       /* Strip, Prepend: they see the ends of the text */
}

/* *space: the cut's space is still a space (no stage replaced it);
 * *split: a stage split there.  0: a stage may cross the cut */
static int pretok_safe(const tk_pretok *p, int *space, int *split)
{
	/* split at the cut: what follows works within pieces (a regex
	 * sees only its piece), the same pieces either way */
	if (*split && p->type != TK_PRE_SEQUENCE)
		return 1;
	switch (p->type) {
	case TK_PRE_SEQUENCE:
		for (size_t i = 0; i < p->u.seq.n; i++)
			if (!pretok_safe(&p->u.seq.v[i], space, split))
				return 0;
		return 1;
	case TK_PRE_BERT: case TK_PRE_WHITESPACE_SPLIT: case TK_PRE_WHITESPACE:
		*split |= *space;
		return 1;
	case TK_PRE_PUNCTUATION: case TK_PRE_DIGITS:
		return 1;
	case TK_PRE_BYTELEVEL:
		*split |= *space && p->u.bl.use_regex;
		*space = 0;     /* now U+0120 */
		return 1;
	case TK_PRE_METASPACE:
		*split |= *space && p->u.meta.split;
		*space = 0;     /* now the replacement */
		return 1;
	case TK_PRE_SPLIT: {
		const tk_pattern *pt = &p->u.split.pat;
		int b = p->u.split.behavior;
		if (p->u.split.invert || b == TK_SPLIT_CONTIGUOUS)
			return 0;
		if (pt->word_split && *space) {
			*split = 1;
			return 1;
		}
		if (!pt->lit)
			return 0;
		if (pt->n == 1 && pt->lit[0] == ' ' && *space &&
		    b != TK_SPLIT_MERGED_PREV) {
			*split = 1;
			return 1;
		}
		/* an ASCII literal without letters, digits or spaces
		 * cannot touch the cut */
		for (size_t i = 0; i < pt->n; i++)
			if (pt->lit[i] >= 0x80)
				return 0;
		return cps_plain(pt->lit, pt->n);
	}
	}
	return 0;
}

int tk_chunk_safe(const emb_tokenizer *t)
{
	int space = 1, split = 0;

	if (t->has_norm && !norm_safe(&t->norm))
		return 0;
	if (!t->has_pre || !pretok_safe(&t->pre, &space, &split) || !split)
		return 0;
	for (size_t i = 0; i < t->n_added; i++) {
		const tk_added *a = &t->added[i];
		if (!a->n)
			continue;
		if (a->n == 1 && a->c[0] == ' ')
			return 0;
		for (size_t k = 0; k + 1 < a->n; k++) {
			uint32_t x = a->c[k], y = a->c[k + 1];
			if ((x == ' ' && y < 0x80 && ASCII_ALNUM(y)) ||
			    (y == ' ' && x < 0x80 && ASCII_ALNUM(x)))
				return 0;
		}
		if (a->rstrip && a->c[a->n - 1] < 0x80 &&
		    ASCII_ALNUM(a->c[a->n - 1]))
			return 0;
	}
	return 1;
}
