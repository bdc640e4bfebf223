/*
 * bpe.c - the BPE model, as Hugging Face tokenizers' models::bpe
 * (0.23): each character of a word is a symbol (its vocabulary id, with
 * continuing_subword_prefix on non-first and end_of_word_suffix on the
 * last character; unknown characters become <0xXX> byte tokens with
 * byte_fallback, else the unk token, fused when fuse_unk, else they are
 * dropped), then the adjacent pair of lowest merge rank is merged,
 * leftmost first, until no pair has a merge.  ignore_merges: a word
 * that is itself in the vocabulary is one token.  dropout is ignored
 * (inference).
 */
#include <stdlib.h>
#include <string.h>
#include "base/grow.h"
#include "tok/tok-internal.h"

#define MAX_ID (1 << 26)

typedef struct sym {
	int32_t id;
	int32_t prev, next;     /* -1 at the ends */
	uint32_t a, b;          /* code points [a, b) of the word */
} sym;

typedef struct hent {
	int32_t rank;
	uint32_t pos;           /* left symbol */
	int32_t id;             /* merged id */
} hent;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static const tk_merge *merge_get(const tk_bpe *b, int32_t l, int32_t r)
{
	uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;
	size_t i;

	if (!b->merges)
		return NULL;
	i = mix64(key) & b->mask;
	for (;;) {
		const tk_merge *m = &b->merges[i];
		if (!m->key)
			return NULL;
		if (m->key == key)
			return m;
		i = (i + 1) & b->mask;
	}
}

/* a later merge of the same pair replaces the earlier one (HF collects
 * the merges into a HashMap: the last rank wins) */
static void merge_prefetch(const tk_bpe *b, int32_t l, int32_t r)
{
	uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;

	__builtin_prefetch(&b->merges[mix64(key) & b->mask]);
}

#define MERGE_BATCH 32

static void merge_put(tk_bpe *b, int32_t l, int32_t r, int32_t rank,
                      int32_t id)
{
	uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;
	size_t i = mix64(key) & b->mask;

	for (;;) {
		tk_merge *m = &b->merges[i];
		if (!m->key) {
			m->key = key;
			m->rank = rank;
			m->id = id;
			b->n_merges++;
			return;
		}
		if (m->key == key) {
			m->rank = rank;
			m->id = id;
			return;
		}
		i = (i + 1) & b->mask;
	}
}

void tk_bpe_release(tk_bpe *b)
{
	tk_vocab_release(&b->vocab);
	if (b->merges)
		tk_table_free(b->merges, b->mask + 1, sizeof(*b->merges));
	free(b->unk);
	free(b->prefix);
	free(b->suffix);
	memset(b, 0, sizeof(*b));
}

static int opt_str(char **out, const json_t *j, const char *key,
                   const char *file, emb_err *err)
{
	json_t *v = json_object_get(j, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return emb_err_set(err, "%s: field 'model.%s' must be a string "
		                   "or null", file, key);
	*out = strdup(json_string_value(v));
	if (!*out)
		return emb_err_set(err, "out of memory");
	return 0;
}

/* one merge "a b" or ["a", "b"] -> its two strings */
static int merge_parts(const json_t *m, const char **a, size_t *na,
                       const char **b, size_t *nb)
{
	if (json_is_string(m)) {
		const char *s = json_string_value(m), *sp;
		size_t n = json_string_length(m);
		sp = memchr(s, ' ', n);
		if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
			return -1;
		*a = s;
		*na = (size_t)(sp - s);
		*b = sp + 1;
		*nb = n - *na - 1;
		return 0;
	}
	if (json_is_array(m) && json_array_size(m) == 2 &&
	    json_is_string(json_array_get(m, 0)) &&
	    json_is_string(json_array_get(m, 1))) {
		*a = json_string_value(json_array_get(m, 0));
		*na = json_string_length(json_array_get(m, 0));
		*b = json_string_value(json_array_get(m, 1));
		*nb = json_string_length(json_array_get(m, 1));
		return 0;
	}
	return -1;
}

int tk_bpe_parse(tk_bpe *b, const json_t *j, const char *file, tk_fast *fast,
                 emb_err *err)
{
	json_t *vocab = json_object_get(j, "vocab");
	json_t *merges = json_object_get(j, "merges");
	size_t i, i0, size = 16, nm, plen;
	int k;

	memset(b, 0, sizeof(*b));
	b->unk_id = -1;
	b->fuse_unk = 0;
	for (k = 0; k < 256; k++)
		b->byte_id[k] = -1;
	if (!json_is_object(vocab))
		return emb_err_set(err, "%s: field 'model.vocab' must be an "
		                   "object of token ids", file);
	if (merges && !json_is_null(merges) && !json_is_array(merges))
		return emb_err_set(err, "%s: field 'model.merges' must be an "
		                   "array", file);
	if (opt_str(&b->unk, j, "unk_token", file, err) < 0 ||
	    opt_str(&b->prefix, j, "continuing_subword_prefix", file, err) < 0 ||
	    opt_str(&b->suffix, j, "end_of_word_suffix", file, err) < 0 ||
	    tk_opt_bool(&b->fuse_unk, j, "fuse_unk", file, "model", err) < 0 ||
	    tk_opt_bool(&b->byte_fallback, j, "byte_fallback", file, "model", err) < 0 ||
	    tk_opt_bool(&b->ignore_merges, j, "ignore_merges", file, "model", err) < 0)
		return -1;
	{
		json_t *d = json_object_get(j, "dropout");
		if (d && !json_is_null(d) && !json_is_number(d))
			return emb_err_set(err, "%s: field 'model.dropout' must "
			                   "be a number or null", file);
	}
	if (!b->prefix && !(b->prefix = strdup("")))
		return emb_err_set(err, "out of memory");
	if (!b->suffix && !(b->suffix = strdup("")))
		return emb_err_set(err, "out of memory");
	if (fast) {
		/* read and built by tk_fast_read: moved here */
		b->vocab = fast->vocab;
		memset(&fast->vocab, 0, sizeof(fast->vocab));
	} else if (tk_vocab_from_json(&b->vocab, vocab, file, err) < 0) {
		return -1;
	}
	if (b->unk)
		b->unk_id = tk_vocab_get(&b->vocab, b->unk, strlen(b->unk));
	for (k = 0; k < 256; k++) {
		char hex[8];
		snprintf(hex, sizeof(hex), "<0x%02X>", k);
		b->byte_id[k] = tk_vocab_get(&b->vocab, hex, 6);
	}
	if (fast)
		nm = fast->have_merges ? fast->n_merges : 0;
	else
		nm = merges ? json_array_size(merges) : 0;
	if (nm >= MAX_ID)
		return emb_err_set(err, "%s: field 'model.merges' has too many "
		                   "entries", file);
	while (size < 2 * nm + 2)
		size *= 2;
	b->merges = tk_table_calloc(size, sizeof(*b->merges));
	if (!b->merges)
		return emb_err_set(err, "out of memory");
	b->mask = size - 1;
	plen = strlen(b->prefix);
	/* in batches: the hash slots of a batch's lookups are fetched
	 * together, as are their merge-table slots */
	for (i0 = 0; i0 < nm; i0 += MERGE_BATCH) {
		size_t m = nm - i0 < MERGE_BATCH ? nm - i0 : MERGE_BATCH, j;
		struct {
			const char *sa, *sb;
			size_t na, nb, nb2;
			int bad;
			uint64_t h[3];
			int32_t ia, ib, in;
		} q[MERGE_BATCH];
		for (j = 0; j < m; j++) {
			const char *sb2;
			i = i0 + j;
			if (fast) {
				const tk_fast_merge *fm = &fast->merges[i];
				q[j].bad = fm->na == TK_FAST_BAD;
				q[j].sa = tk_fast_str(fast, fm->a);
				q[j].na = fm->na;
				q[j].sb = tk_fast_str(fast, fm->b);
				q[j].nb = fm->nb;
			} else {
				q[j].bad = merge_parts(json_array_get(merges, i),
				                       &q[j].sa, &q[j].na, &q[j].sb,
				                       &q[j].nb) < 0;
			}
			if (q[j].bad)
				continue;
			/* the merged token: A + B without B's subword prefix */
			sb2 = q[j].sb;
			q[j].nb2 = q[j].nb;
			if (plen && q[j].nb >= plen &&
			    !memcmp(sb2, b->prefix, plen)) {
				sb2 += plen;
				q[j].nb2 -= plen;
			}
			q[j].h[0] = tk_vocab_hash("", 0, q[j].sa, q[j].na);
			q[j].h[1] = tk_vocab_hash("", 0, q[j].sb, q[j].nb);
			q[j].h[2] = tk_vocab_hash(q[j].sa, q[j].na, sb2,
			                          q[j].nb2);
			for (k = 0; k < 3; k++)
				tk_vocab_prefetch(&b->vocab, q[j].h[k]);
		}
		for (j = 0; j < m; j++)
			for (k = 0; !q[j].bad && k < 3; k++)
				tk_vocab_prefetch2(&b->vocab, q[j].h[k]);
		for (j = 0; j < m; j++) {
			const char *sa = q[j].sa, *sb = q[j].sb;
			size_t na = q[j].na, nb = q[j].nb;
			int32_t ia, ib;
			i = i0 + j;
			if (q[j].bad)
				return emb_err_set(err, "%s: field "
				                   "'model.merges[%zu]' must be "
				                   "\"A B\" or [\"A\", \"B\"]",
				                   file, i);
			ia = tk_vocab_get_hashed(&b->vocab, q[j].h[0], "", 0, sa,
			                         na);
			ib = tk_vocab_get_hashed(&b->vocab, q[j].h[1], "", 0, sb,
			                         nb);
			if (ia < 0 || ib < 0)
				return emb_err_set(err, "%s: field "
				                   "'model.merges[%zu]' references "
				                   "token '%.*s' that is not in the "
				                   "vocabulary", file, i,
				                   ia < 0 ? (int)(na > 60 ? 60 : na)
				                          : (int)(nb > 60 ? 60 : nb),
				                   ia < 0 ? sa : sb);
			sb += nb - q[j].nb2;
			nb = q[j].nb2;
			q[j].in = tk_vocab_get_hashed(&b->vocab, q[j].h[2], sa, na,
			                              sb, nb);
			if (q[j].in < 0) {
				int n1 = (int)(na > 60 ? 60 : na);
				int n2 = na + nb > 60 ? 60 - n1 : (int)nb;
				return emb_err_set(err, "%s: field "
				                   "'model.merges[%zu]' makes token "
				                   "'%.*s%.*s' that is not in the "
				                   "vocabulary", file, i, n1, sa, n2,
				                   sb);
			}
			q[j].ia = ia;
			q[j].ib = ib;
			merge_prefetch(b, ia, ib);
		}
		for (j = 0; j < m; j++)
			merge_put(b, q[j].ia, q[j].ib, (int32_t)(i0 + j), q[j].in);
	}
	return 0;
}

/* min-heap on (rank, pos) */
static int hless(const hent *x, const hent *y)
{
	return x->rank != y->rank ? x->rank < y->rank : x->pos < y->pos;
}

static void hpush(hent *h, size_t *n, hent e)
{
	size_t i = (*n)++;

	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!hless(&e, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static hent hpop(hent *h, size_t *n)
{
	hent top = h[0], e = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const hent *best = &e;
		if (l < *n && hless(&h[l], best)) {
			m = l;
			best = &h[l];
		}
		if (r < *n && hless(&h[r], best))
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = e;
	return top;
}

/* look up PREFIX? + s[a,b) + SUFFIX? */
static int32_t char_id(const tk_bpe *b, tk_model_work *w, size_t a, size_t e,
                       int first, int last, char *tmp, size_t tmpcap)
{
	size_t pl = first ? 0 : strlen(b->prefix);
	size_t sl = last ? strlen(b->suffix) : 0;
	size_t n = w->pos[e] - w->pos[a];

	if (!pl && !sl)
		return tk_vocab_get(&b->vocab, w->u8 + w->pos[a], n);
	if (pl + n + sl > tmpcap)
		return -1;
	memcpy(tmp, b->prefix, pl);
	memcpy(tmp + pl, w->u8 + w->pos[a], n);
	memcpy(tmp + pl + n, b->suffix, sl);
	return tk_vocab_get(&b->vocab, tmp, pl + n + sl);
}

/* PREFIX? + s[a,e) + SUFFIX? as bytes (in tmp when needed) */
static const unsigned char *fb_bytes(const tk_bpe *b, tk_model_work *w,
                                     size_t a, size_t e, int first, int last,
                                     char *tmp, size_t tmpcap, size_t *len)
{
	size_t pl = first ? 0 : strlen(b->prefix);
	size_t sl = last ? strlen(b->suffix) : 0;
	size_t n = w->pos[e] - w->pos[a];

	*len = pl + n + sl;
	if (!pl && !sl)
		return (const unsigned char *)w->u8 + w->pos[a];
	if (pl + n + sl > tmpcap)
		return NULL;
	memcpy(tmp, b->prefix, pl);
	memcpy(tmp + pl, w->u8 + w->pos[a], n);
	memcpy(tmp + pl + n, b->suffix, sl);
	return (const unsigned char *)tmp;
}

int tk_bpe_tokenize(const tk_bpe *b, tk_toks *out, const tk_str *s,
                    tk_span sp, tk_model_work *w, emb_err *err)
{
	size_t n = sp.b - sp.a, i, ns = 0, nh = 0, per;
	sym *v;
	hent *h;
	int32_t unk_n = 0;      /* pending unk: code points fused */
	size_t unk_a = 0;
	char tmp[512];
	const uint32_t *c = s->c + sp.a;
	const int32_t *o = s->o + 2 * sp.a;

	if (!n)
		return 0;
	if (tk_work_utf8(w, c, n) < 0)
		return emb_err_set(err, "out of memory");
	if (b->ignore_merges) {
		int32_t id = tk_vocab_get(&b->vocab, w->u8, w->pos[n]);
		if (id >= 0) {
			if (tk_toks_push(out, id, o[0], o[2 * n - 1]) < 0)
				return emb_err_set(err, "out of memory");
			return 0;
		}
	}
	/* up to PER symbols per code point (byte tokens of prefix + char
	 * + suffix); each merge pushes at most two heap entries */
	per = 4 + strlen(b->prefix) + strlen(b->suffix);
	if (per > 512 || n > SIZE_MAX / 64 / per ||
	    emb_grow(&w->sym, &w->sym_cap, per * n + 1, sizeof(sym)) < 0 ||
	    emb_grow(&w->heap, &w->heap_cap, 3 * per * n + 4, sizeof(hent)) < 0)
		return emb_err_set(err, "out of memory");
	v = w->sym;
	h = w->heap;
#define ADD(id_, a_, b_) do { \
	v[ns].id = (id_); v[ns].a = (uint32_t)(a_); v[ns].b = (uint32_t)(b_); \
	v[ns].prev = (int32_t)ns - 1; v[ns].next = (int32_t)ns + 1; ns++; \
	} while (0)
#define FLUSH_UNK() do { if (unk_n) { ADD(b->unk_id, unk_a, unk_a + unk_n); \
	unk_n = 0; } } while (0)
	for (i = 0; i < n; i++) {
		int32_t id = char_id(b, w, i, i + 1, i == 0, i + 1 == n, tmp,
		                     sizeof(tmp));
		if (id >= 0) {
			FLUSH_UNK();
			ADD(id, i, i + 1);
			continue;
		}
		if (b->byte_fallback) {
			/* the bytes of the string looked up: with the prefix
			 * and suffix, as HF */
			size_t k, nb;
			const unsigned char *u = fb_bytes(b, w, i, i + 1, i == 0,
			                                  i + 1 == n, tmp,
			                                  sizeof(tmp), &nb);
			for (k = 0; u && k < nb; k++)
				if (b->byte_id[u[k]] < 0)
					break;
			if (u && k == nb) {
				/* HF does not flush a pending unk here */
				for (k = 0; k < nb; k++)
					ADD(b->byte_id[u[k]], i, i + 1);
				continue;
			}
		}
		if (!b->unk)
			continue;
		if (b->unk_id < 0)
			return emb_err_set(err, "unk token '%s' is not in the "
			                   "vocabulary", b->unk);
		if (unk_n && b->fuse_unk) {
			unk_n++;
		} else {
			FLUSH_UNK();
			unk_a = i;
			unk_n = 1;
		}
	}
	FLUSH_UNK();
#undef ADD
#undef FLUSH_UNK
	if (!ns)
		return 0;
	v[ns - 1].next = -1;
	for (i = 0; i + 1 < ns; i++) {
		const tk_merge *m = merge_get(b, v[i].id, v[i + 1].id);
		if (m)
			hpush(h, &nh, (hent){ m->rank, (uint32_t)i, m->id });
	}
	while (nh) {
		hent t = hpop(h, &nh);
		sym *l = &v[t.pos], *r;
		const tk_merge *m;
		if (l->b == l->a || l->next < 0)
			continue;
		r = &v[l->next];
		m = merge_get(b, l->id, r->id);
		if (!m || m->id != t.id)
			continue;
		l->id = t.id;
		l->b = r->b;
		r->b = r->a;    /* removed */
		l->next = r->next;
		if (l->next >= 0)
			v[l->next].prev = (int32_t)t.pos;
		if (l->prev >= 0) {
			m = merge_get(b, v[l->prev].id, l->id);
			if (m)
				hpush(h, &nh, (hent){ m->rank,
				                      (uint32_t)l->prev, m->id });
		}
		if (l->next >= 0) {
			m = merge_get(b, l->id, v[l->next].id);
			if (m)
				hpush(h, &nh, (hent){ m->rank, t.pos, m->id });
		}
	}
	for (i = 0; i < ns; i++) {
		if (v[i].b == v[i].a)
			continue;
		if (tk_toks_push(out, v[i].id, o[2 * v[i].a],
		                 o[2 * (v[i].b - 1) + 1]) < 0)
			return emb_err_set(err, "out of memory");
	}
	return 0;
}
