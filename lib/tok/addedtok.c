/*
 * addedtok.c - added tokens (HF AddedVocabulary): tokenizer.json's
 * added_tokens parsed, their ids, the two matching sets (tokens matched
 * in the original text and in the normalized one, each an automaton:
 * acmatch.c), the matches in a text, and the vocabulary queries over
 * the added tokens and the model's vocabulary.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"
#include "tok/acmatch.h"

/* ------------------------------------------------------------------ */
/* added tokens: leftmost-longest matching, then the single_word,      */
/* lstrip and rstrip rules of AddedVocabulary::find_matches            */

static int segs_push(tk_segs *s, size_t a, size_t b, long tok)
{
	if (tk_grow(&s->v, &s->cap, s->n, sizeof(*s->v), 32) < 0)
		return -1;
	s->v[s->n].a = a;
	s->v[s->n].b = b;
	s->v[s->n].tok = tok;
	s->n++;
	return 0;
}

/* regex \w (see tk_is_word) */
#define is_word_char tk_is_word

/* the longest added token starting at each position comes from one
 * scan (acmatch.c: linear in the text, whatever the tokens share); the
 * leftmost of those after the last match is the next match */
int tk_added_find(const emb_tokenizer *t, const tk_addset *set,
                  const uint32_t *s, size_t n, tk_segs *out,
                  tk_acm_hits *hits)
{
	size_t pos = 0, start_off = 0, i, h;

	out->n = 0;
	if (tk_acm_scan(set->acm, s, n, hits) < 0)
		return -1;
	h = hits->n;    /* positions decreasing: walk from the end */
	while (h > 0 && pos < n) {
		long m;
		size_t start, stop;
		const tk_added *a;

		i = hits->v[2 * (h - 1)];
		m = (long)set->ix[hits->v[2 * (h - 1) + 1]];
		h--;
		if (i < pos)
			continue;
		a = &t->added[m];
		start = i;
		stop = i + a->n;
		pos = stop;
		if (a->single_word) {
			int sp0 = start == 0 || !is_word_char(s[start - 1]);
			int sp1 = stop == n || !is_word_char(s[stop]);
			if (!sp0 || !sp1)
				continue;
		}
		if (a->lstrip) {
			size_t ns = start;
			while (ns > 0 && tk_is_whitespace(s[ns - 1]))
				ns--;
			start = ns > start_off ? ns : start_off;
		}
		if (start < start_off)
			start = start_off;
		if (a->rstrip)
			while (stop < n && tk_is_whitespace(s[stop]))
				stop++;
		if (start_off < start && segs_push(out, start_off, start, -1) < 0)
			return -1;
		if (segs_push(out, start, stop, m) < 0)
			return -1;
		start_off = stop;
	}
	if (start_off < n && segs_push(out, start_off, n, -1) < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* loading: ids, the matching sets                                    */

static int cmp_added(const void *x, const void *y, void *ctx)
{
	const emb_tokenizer *t = ctx;
	const tk_added *a = &t->added[*(const size_t *)x];
	const tk_added *b = &t->added[*(const size_t *)y];

	if (a->c[0] != b->c[0])
		return a->c[0] < b->c[0] ? -1 : 1;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	/* same length: the one added first wins */
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* the automaton of SET, its patterns in SET's order (the first of equal
 * tokens is the one added first, as cmp_added sorts them) */
static int addset_build(const emb_tokenizer *t, tk_addset *set)
{
	const uint32_t **pat = malloc((set->n + 1) * sizeof(*pat));
	size_t *len = malloc((set->n + 1) * sizeof(*len));
	int rc = -1;

	if (pat && len) {
		for (size_t k = 0; k < set->n; k++) {
			pat[k] = t->added[set->ix[k]].c;
			len[k] = t->added[set->ix[k]].n;
		}
		rc = set->n ? tk_acm_build(&set->acm, pat, len, set->n) : 0;
	}
	free(pat);
	free(len);
	return rc;
}

/* after all added tokens and the normalizer are known: the code points
 * to match, the two matching sets, the id maps */
int tk_added_finish(emb_tokenizer *t, emb_err *err)
{
	size_t i;
	tk_str s = {0}, tmp = {0};
	int rc = -1;
	const tk_vocab *mv = tk_model_vocab(&t->model);

	t->raw_set.ix = calloc(t->n_added + 1, sizeof(size_t));
	t->norm_set.ix = calloc(t->n_added + 1, sizeof(size_t));
	if (!t->raw_set.ix || !t->norm_set.ix)
		goto oom;
	for (i = 0; i < t->n_added; i++) {
		tk_added *a = &t->added[i];
		size_t k;
		if (tk_utf8_decode(&s, a->content, strlen(a->content), err) < 0)
			goto out;
		if (a->normalized && t->has_norm) {
			int r;
			s.max = tmp.max = tk_norm_limit(s.n);
			s.over = tmp.over = 0;
			r = tk_normalize(&t->norm, &s, &tmp);
			s.max = tmp.max = 0;
			if (r < 0 && (s.over || tmp.over)) {
				emb_err_set(err, "added token %zu (id %d) grows "
				            "over %d times when normalized", i,
				            (int)a->id, TK_NORM_GROWTH);
				goto out;
			}
			if (r < 0)
				goto oom;
		}
		a->c = malloc((s.n + 1) * sizeof(*a->c));
		if (!a->c)
			goto oom;
		for (k = 0; k < s.n; k++)
			a->c[k] = s.c[k];
		a->n = s.n;
		if (!a->n)
			continue;   /* never matches */
		if (a->normalized)
			t->norm_set.ix[t->norm_set.n++] = i;
		else
			t->raw_set.ix[t->raw_set.n++] = i;
		if (tk_vocab_add(&t->added_vocab, a->content,
		                 strlen(a->content), a->id) < 0)
			goto oom;
	}
	qsort_r(t->raw_set.ix, t->raw_set.n, sizeof(size_t), cmp_added, t);
	qsort_r(t->norm_set.ix, t->norm_set.n, sizeof(size_t), cmp_added, t);
	if (addset_build(t, &t->raw_set) < 0 || addset_build(t, &t->norm_set) < 0)
		goto oom;
	if (tk_vocab_build(&t->added_vocab) < 0)
		goto oom;
	t->n_ids = mv ? mv->n_ids : 0;
	if (t->added_vocab.n_ids > t->n_ids)
		t->n_ids = t->added_vocab.n_ids;
	rc = 0;
	goto out;
oom:
	emb_err_set(err, "out of memory");
out:
	tk_str_release(&s);
	tk_str_release(&tmp);
	return rc;
}

/* HF AddedVocabulary::add_tokens: an added token takes the id of the
 * same string already known (added or model vocabulary), else the next
 * free id after the model vocabulary */
static int32_t added_id(const emb_tokenizer *t, const char *content)
{
	const tk_vocab *mv = tk_model_vocab(&t->model);
	json_t *seen = t->added_ids ? json_object_get(t->added_ids, content)
	                            : NULL;
	int32_t max = t->n_added ? t->added_max : -1, id;

	/* a hash lookup, not a scan: a tokenizer may add 100k tokens */
	if (seen)
		return (int32_t)json_integer_value(seen);
	id = tk_vocab_get(mv, content, strlen(content));
	if (id >= 0)
		return id;
	if (max < 0 || ((size_t)max < mv->n && mv->n))
		return (int32_t)mv->n;
	return max + 1;
}

int tk_added_add(emb_tokenizer *t, const char *content, int special,
                 int normalized, int lstrip, int rstrip, int single)
{
	tk_added *a;

	if (!(t->n_added & (t->n_added + 1)) || !t->added) {
		/* grow at 0, 1, 3, 7, ... */
		tk_added *v = realloc(t->added,
		                      2 * (t->n_added + 1) * sizeof(*v));
		if (!v)
			return -1;
		t->added = v;
	}
	a = &t->added[t->n_added];
	memset(a, 0, sizeof(*a));
	a->id = added_id(t, content);
	a->content = strdup(content);
	if (!a->content)
		return -1;
	if (!t->added_ids && !(t->added_ids = json_object()))
		return -1;
	if (!json_object_get(t->added_ids, content) &&
	    json_object_set_new(t->added_ids, content,
	                        json_integer(a->id)) < 0) {
		free(a->content);
		return -1;
	}
	if (!t->n_added || a->id > t->added_max)
		t->added_max = a->id;
	a->special = (unsigned char)special;
	a->normalized = (unsigned char)normalized;
	a->lstrip = (unsigned char)lstrip;
	a->rstrip = (unsigned char)rstrip;
	a->single_word = (unsigned char)single;
	t->n_added++;
	return 0;
}

int tk_added_parse(emb_tokenizer *t, const json_t *a, const char *file,
                   emb_err *err)
{
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return emb_err_set(err, "%s: field 'added_tokens' must be an "
		                   "array", file);
	for (i = 0; i < json_array_size(a); i++) {
		json_t *o = json_array_get(a, i), *c;
		int special = 0, normalized, lstrip = 0, rstrip = 0, single = 0;
		char f[64];

		snprintf(f, sizeof(f), "added_tokens[%zu]", i);
		if (!json_is_object(o))
			return emb_err_set(err, "%s: field '%s' must be an object",
			                   file, f);
		c = json_object_get(o, "content");
		if (!json_is_string(c))
			return emb_err_set(err, "%s: field '%s.content' must be a "
			                   "string", file, f);
#define GETB(key, var) do { \
	json_t *v_ = json_object_get(o, key); \
	if (v_ && !json_is_boolean(v_)) \
		return emb_err_set(err, "%s: field '%s.%s' must be a boolean", \
		                   file, f, key); \
	if (v_) var = json_is_true(v_); } while (0)
		GETB("special", special);
		normalized = !special;
		GETB("normalized", normalized);
		GETB("lstrip", lstrip);
		GETB("rstrip", rstrip);
		GETB("single_word", single);
#undef GETB
		{
			json_t *id = json_object_get(o, "id");
			if (id && (!json_is_integer(id) ||
			           json_integer_value(id) < 0))
				return emb_err_set(err, "%s: field '%s.id' must be a "
				                   "non-negative integer", file, f);
		}
		if (memchr(json_string_value(c), 0, json_string_length(c)))
			return emb_err_set(err, "%s: field '%s.content' holds a "
			                   "NUL character", file, f);
		if (tk_added_add(t, json_string_value(c), special, normalized,
		                 lstrip, rstrip, single) < 0)
			return emb_err_set(err, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* vocabulary queries: the added tokens first, then the model's       */

const char *emb_tokenizer_id_to_token(const emb_tokenizer *tok, int32_t id)
{
	const char *s = tk_vocab_str(&tok->added_vocab, id);

	return s ? s : tk_vocab_str(tk_model_vocab(&tok->model), id);
}

int32_t emb_tokenizer_token_to_id(const emb_tokenizer *tok, const char *s)
{
	size_t n = strlen(s);
	int32_t id = tk_vocab_get(&tok->added_vocab, s, n);

	return id >= 0 ? id : tk_vocab_get(tk_model_vocab(&tok->model), s, n);
}

size_t emb_tokenizer_vocab_size(const emb_tokenizer *tok)
{
	return tok->n_ids;
}

int32_t emb_tokenizer_unk_id(const emb_tokenizer *tok)
{
	const char *unk = NULL;

	switch (tok->model.type) {
	case TK_MODEL_WORDPIECE: unk = tok->model.u.wp.unk; break;
	case TK_MODEL_BPE: unk = tok->model.u.bpe.unk; break;
	case TK_MODEL_UNIGRAM: return tok->model.u.uni.unk_id;
	}
	return unk ? emb_tokenizer_token_to_id(tok, unk) : -1;
}
