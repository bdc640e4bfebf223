/*
 * fastjson.c - the two big tables of a BPE tokenizer.json (model.vocab,
 * model.merges: Gemma 3's are 262,144 tokens and 514,906 merges, most of
 * its 33 MB) read straight from the text with the streaming scanner
 * (io/jscan.h) into the vocabulary and a flat merge list, without a
 * jansson tree of half a million small objects.  The rest of the file,
 * a small residue with those two values emptied, is left to jansson.
 *
 * Anything unusual makes tk_fast_read decline (0), and the caller reads
 * the whole text as before: invalid JSON anywhere, a second "model" or
 * a second "vocab" or "merges" in it, a model that is not BPE, a vocab
 * entry that is not a plain integer id in range, a token listed twice.
 * So the messages for bad files, and what a file with duplicate keys
 * means, stay those of the jansson path; the fast path only has to
 * agree with it on the files it takes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/jscan.h"
#include "tok/tok-internal.h"

#define MAX_ID (1 << 26)

void tk_fast_release(tk_fast *f)
{
	tk_vocab_release(&f->vocab);
	free(f->merges);
	free(f->arena);
	memset(f, 0, sizeof(*f));
}

/* a string's offset: in the text, or copied to the arena */
static int str_off(tk_fast *f, const char *s, size_t n, uint32_t *off)
{
	const char *t = f->text;

	if ((uintptr_t)s - (uintptr_t)t < f->len) {   /* in the text */
		*off = (uint32_t)(s - t);
		return 0;
	}
	if (f->arena_len + n > TK_FAST_ARENA - 1)
		return -1;
	if (f->arena_len + n > f->arena_cap) {
		size_t cap = f->arena_cap ? f->arena_cap : 4096;
		char *a;
		while (cap < f->arena_len + n)
			cap *= 2;
		if (!(a = realloc(f->arena, cap)))
			return -1;
		f->arena = a;
		f->arena_cap = cap;
	}
	memcpy(f->arena + f->arena_len, s, n);
	*off = (uint32_t)f->arena_len | TK_FAST_ARENA;
	f->arena_len += n;
	return 0;
}

static int merge_push(tk_fast *f, tk_fast_merge m)
{
	if (f->n_merges == f->cap_merges) {
		size_t cap = f->cap_merges ? 2 * f->cap_merges : 4096;
		tk_fast_merge *v = realloc(f->merges, cap * sizeof(*v));
		if (!v)
			return -1;
		f->merges = v;
		f->cap_merges = cap;
	}
	f->merges[f->n_merges++] = m;
	return 0;
}

/* the value of "vocab": an object of token -> id; 1 read, 0 decline */
static int read_vocab(tk_fast *f, emb_jscan *s)
{
	int first = 1, r;

	if (emb_jscan_open(s, '{') < 0)
		return 0;
	while ((r = emb_jscan_more(s, &first, '}')) > 0) {
		const char *k;
		size_t n;
		long long id;
		if (emb_jscan_key(s, &k, &n) < 0 ||
		    emb_jscan_int(s, &id) != 1 || id < 0 || id >= MAX_ID ||
		    memchr(k, 0, n) ||
		    tk_vocab_add(&f->vocab, k, n, (int32_t)id) < 0)
			return 0;
	}
	return r == 0;
}

/* one entry of "merges": "A B" or ["A", "B"]; another shape of valid
 * JSON is kept as a bad entry (tk_bpe_parse names it); 1, or 0 */
static int read_merge(tk_fast *f, emb_jscan *s)
{
	tk_fast_merge m = { 0, TK_FAST_BAD, 0, 0 };
	const char *a, *sp;
	size_t na, len[2] = { 0, 0 };
	int c = emb_jscan_peek(s), first = 1, r, cnt = 0, strs = 0;

	if (c == '"') {
		if (emb_jscan_string(s, &a, &na) < 0)
			return 0;
		sp = memchr(a, ' ', na);
		if (sp && !memchr(sp + 1, ' ', na - (size_t)(sp + 1 - a))) {
			if (str_off(f, a, na, &m.a) < 0)
				return 0;
			m.na = (uint32_t)(sp - a);
			m.b = m.a + m.na + 1;
			m.nb = (uint32_t)(na - m.na - 1);
		}
		return merge_push(f, m) == 0;
	}
	if (c != '[')
		return emb_jscan_skip(s) == 0 && merge_push(f, m) == 0;
	if (emb_jscan_open(s, '[') < 0)
		return 0;
	while ((r = emb_jscan_more(s, &first, ']')) > 0) {
		if (cnt < 2 && emb_jscan_peek(s) == '"') {
			if (emb_jscan_string(s, &a, &na) < 0 ||
			    str_off(f, a, na, cnt ? &m.b : &m.a) < 0)
				return 0;
			len[cnt] = na;
			strs++;
		} else if (emb_jscan_skip(s) < 0) {
			return 0;
		}
		cnt++;
	}
	if (r < 0)
		return 0;
	if (cnt == 2 && strs == 2) {
		m.na = (uint32_t)len[0];
		m.nb = (uint32_t)len[1];
	}
	return merge_push(f, m) == 0;
}

/* the value of "merges": an array; 1 read, 0 decline */
static int read_merges(tk_fast *f, emb_jscan *s)
{
	int first = 1, r;

	if (emb_jscan_open(s, '[') < 0)
		return 0;
	while ((r = emb_jscan_more(s, &first, ']')) > 0)
		if (!read_merge(f, s))
			return 0;
	f->have_merges = 1;
	return r == 0;
}

typedef struct span {
	size_t a, b;            /* [a, b) of the text; a == b: none */
	char empty[3];          /* what replaces it */
} span;

/* the "model" object: 1 read (BPE, with an object vocab), 0 decline */
static int read_model(tk_fast *f, emb_jscan *s, span sp[2])
{
	int first = 1, r, bpe = 0, seen_type = 0;
	const char *base = (const char *)s->text;

	if (emb_jscan_open(s, '{') < 0)
		return 0;
	while ((r = emb_jscan_more(s, &first, '}')) > 0) {
		const char *k, *v;
		size_t n, nv;
		if (emb_jscan_key(s, &k, &n) < 0)
			return 0;
		if (n == 4 && !memcmp(k, "type", 4)) {
			seen_type = 1;
			if (emb_jscan_peek(s) != '"')
				return 0;
			if (emb_jscan_string(s, &v, &nv) < 0)
				return 0;
			bpe = nv == 3 && !memcmp(v, "BPE", 3);
		} else if (n == 5 && !memcmp(k, "vocab", 5)) {
			if (sp[0].b || emb_jscan_peek(s) != '{')
				return 0;
			sp[0].a = (size_t)((const char *)s->p - base);
			if (!read_vocab(f, s))
				return 0;
			sp[0].b = (size_t)((const char *)s->p - base);
			memcpy(sp[0].empty, "{}", 3);
		} else if (n == 6 && !memcmp(k, "merges", 6)) {
			if (sp[1].b)
				return 0;
			if (emb_jscan_peek(s) != '[') {
				if (emb_jscan_skip(s) < 0)
					return 0;
				continue;
			}
			sp[1].a = (size_t)((const char *)s->p - base);
			if (!read_merges(f, s))
				return 0;
			sp[1].b = (size_t)((const char *)s->p - base);
			memcpy(sp[1].empty, "[]", 3);
		} else if (emb_jscan_skip(s) < 0) {
			return 0;
		}
	}
	return r == 0 && seen_type && bpe && sp[0].b;
}

int tk_fast_read(tk_fast *f, const char *text, size_t len, char **residue,
                 size_t *rlen)
{
	emb_jscan s;
	span sp[2];
	int first = 1, r, models = 0, ok = 0;
	char *out = NULL;

	memset(f, 0, sizeof(*f));
	memset(sp, 0, sizeof(sp));
	f->text = text;
	f->len = len;
	if (len >= TK_FAST_ARENA)
		return 0;
	emb_jscan_init(&s, text, len);
	if (emb_jscan_open(&s, '{') < 0)
		goto out;
	while ((r = emb_jscan_more(&s, &first, '}')) > 0) {
		const char *k;
		size_t n;
		if (emb_jscan_key(&s, &k, &n) < 0)
			goto out;
		if (n == 5 && !memcmp(k, "model", 5)) {
			if (models++ || emb_jscan_peek(&s) != '{' ||
			    !read_model(f, &s, sp))
				goto out;
		} else if (emb_jscan_skip(&s) < 0) {
			goto out;
		}
	}
	if (r < 0 || emb_jscan_finish(&s) < 0 || !models)
		goto out;
	if (tk_vocab_build_unique(&f->vocab) != 0)
		goto out;
	/* the residue: the text without the two spans, in text order */
	{
		span *lo = &sp[0], *hi = &sp[1];
		size_t at = 0, k = 0;
		if (!hi->b || (lo->b && hi->a < lo->a)) {
			lo = &sp[1];
			hi = &sp[0];
		}
		if (!(out = malloc(len + 5)))
			goto out;
		for (span *x = lo; ; x = hi) {
			if (x->b) {
				memcpy(out + k, text + at, x->a - at);
				k += x->a - at;
				memcpy(out + k, x->empty, 2);
				k += 2;
				at = x->b;
			}
			if (x == hi)
				break;
		}
		memcpy(out + k, text + at, len - at);
		k += len - at;
		out[k] = 0;
		*residue = out;
		*rlen = k;
		out = NULL;
	}
	ok = 1;
out:
	emb_jscan_release(&s);
	free(out);
	if (!ok) {
		tk_fast_release(f);
		f->text = text;
	}
	return ok;
}
