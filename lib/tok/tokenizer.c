/*
 * tokenizer.c - loading tokenizer.json (or vocab.txt) into a pipeline,
 * added-token splitting, truncation and post-processing, the public
 * emb_tokenize API.  Semantics follow Hugging Face tokenizers (Rust)
 * 0.23: TokenizerImpl::encode with add_special_tokens, char offsets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"
#include "tok/acmatch.h"

/* ------------------------------------------------------------------ */
/* pre-tokenizers: a Sequence of them, and the choice by type (one at
 * a time: pretok.c)                                                   */

int tk_pretokenize(const tk_pretok *p, tk_spans *out, tk_str *s,
                   const tk_spans *in, tk_spans *tmp, tk_str *stmp)
{
	size_t i;
	tk_spans cur = {0}, t;

	out->n = 0;
	switch (p->type) {
	case TK_PRE_SEQUENCE:
		/* ping-pong between out and tmp */
		for (i = 0; i < in->n; i++)
			if (tk_spans_push(out, in->v[i].a, in->v[i].b) < 0)
				return -1;
		for (i = 0; i < p->u.seq.n; i++) {
			if (tk_pretokenize(&p->u.seq.v[i], tmp, s, out, &cur,
			                   stmp) < 0) {
				tk_spans_release(&cur);
				return -1;
			}
			t = *out;
			*out = *tmp;
			*tmp = t;
		}
		tk_spans_release(&cur);
		return 0;
	default:
		return tk_pretok_one(p, out, s, in, stmp);
	}
	return 0;
}

int tk_pretok_parse(tk_pretok *out, const json_t *j, const char *file,
                    const char *field, int depth, emb_err *err)
{
	const char *type;

	memset(out, 0, sizeof(*out));
	if (depth > 16)
		return emb_err_set(err, "%s: field '%s' is nested too deeply",
		                   file, field);
	type = tk_type_of(j, file, field, "pre-tokenizer", err);
	if (!type)
		return -1;
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "pretokenizers");
		size_t i;
		char sub[128];
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field '%s.pretokenizers' "
			                   "must be an array", file, field);
		out->type = TK_PRE_SEQUENCE;
		out->u.seq.v = calloc(json_array_size(a) + 1,
		                      sizeof(*out->u.seq.v));
		if (!out->u.seq.v)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < json_array_size(a); i++) {
			snprintf(sub, sizeof(sub), "%s.pretokenizers[%zu]",
			         field, i);
			out->u.seq.n = i + 1;
			if (tk_pretok_parse(&out->u.seq.v[i],
			                    json_array_get(a, i), file, sub,
			                    depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	return tk_pretok_parse_one(out, type, j, file, field, err);
}

void tk_pretok_release(tk_pretok *p)
{
	size_t i;

	tk_pretok_release_one(p);

	if (p->type == TK_PRE_SEQUENCE) {
		for (i = 0; i < p->u.seq.n; i++)
			tk_pretok_release(&p->u.seq.v[i]);
		free(p->u.seq.v);
	}
	memset(p, 0, sizeof(*p));
}

/* ------------------------------------------------------------------ */
/* the model switch                                                    */

int tk_model_parse(tk_model *out, const json_t *j, const char *file,
                   tk_fast *fast, emb_err *err)
{
	json_t *t;
	const char *type;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(j))
		return emb_err_set(err, "%s: field 'model' must be an object",
		                   file);
	t = json_object_get(j, "type");
	if (t && !json_is_string(t))
		return emb_err_set(err, "%s: field 'model.type' must be a "
		                   "string", file);
	if (t) {
		type = json_string_value(t);
	} else if (json_object_get(j, "continuing_subword_prefix") ||
	           json_object_get(j, "max_input_chars_per_word")) {
		type = "WordPiece";   /* old files without a type */
	} else {
		return emb_err_set(err, "%s: missing field 'model.type'", file);
	}
	if (!strcmp(type, "WordPiece")) {
		out->type = TK_MODEL_WORDPIECE;
		return tk_wordpiece_parse(&out->u.wp, j, file, err);
	}
	if (!strcmp(type, "BPE")) {
		out->type = TK_MODEL_BPE;
		return tk_bpe_parse(&out->u.bpe, j, file, fast, err);
	}
	if (!strcmp(type, "Unigram")) {
		out->type = TK_MODEL_UNIGRAM;
		return tk_unigram_parse(&out->u.uni, j, file, err);
	}
	return emb_err_set(err, "%s: model type '%s' is not supported", file,
	                   type);
}

void tk_model_release(tk_model *m)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		tk_vocab_release(&m->u.wp.vocab);
		free(m->u.wp.unk);
		free(m->u.wp.prefix);
		break;
	case TK_MODEL_BPE:
		tk_bpe_release(&m->u.bpe);
		break;
	case TK_MODEL_UNIGRAM:
		tk_unigram_release(&m->u.uni);
		break;
	}
	memset(m, 0, sizeof(*m));
}

int tk_model_tokenize(const tk_model *m, tk_toks *out, const tk_str *s,
                      tk_span sp, tk_model_work *w, emb_err *err)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		return tk_wordpiece_tokenize(&m->u.wp, out, s, sp, w, err);
	case TK_MODEL_BPE:
		return tk_bpe_tokenize(&m->u.bpe, out, s, sp, w, err);
	case TK_MODEL_UNIGRAM:
		return tk_unigram_tokenize(&m->u.uni, out, s, sp, w, err);
	}
	return emb_err_set(err, "no model");
}

const tk_vocab *tk_model_vocab(const tk_model *m)
{
	switch (m->type) {
	case TK_MODEL_WORDPIECE:
		return &m->u.wp.vocab;
	case TK_MODEL_BPE:
		return &m->u.bpe.vocab;
	case TK_MODEL_UNIGRAM:
		return &m->u.uni.vocab;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* per-call scratch                                                    */

typedef struct tk_seg {
	size_t a, b;            /* [a, b) code points */
	long tok;               /* index into tok->added, -1 for text */
} tk_seg;

typedef struct tk_segs {
	tk_seg *v;
	size_t n, cap;
} tk_segs;

typedef struct tk_work {
	tk_str orig, seg, tmp, piece;
	tk_spans in, out, sptmp;
	tk_segs raw, norm;
	tk_acm_hits hits;
	tk_model_work mw;
	tk_toks seq[2];
	size_t cap_at;          /* see truncate_pair */
	size_t capped;          /* tokens when the cap was reached */
} tk_work;

static void work_release(tk_work *w)
{
	tk_str_release(&w->orig);
	tk_str_release(&w->seg);
	tk_str_release(&w->tmp);
	tk_str_release(&w->piece);
	tk_spans_release(&w->in);
	tk_spans_release(&w->out);
	tk_spans_release(&w->sptmp);
	free(w->raw.v);
	free(w->norm.v);
	tk_acm_hits_release(&w->hits);
	tk_model_work_release(&w->mw);
	tk_toks_release(&w->seq[0]);
	tk_toks_release(&w->seq[1]);
}

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

/* ------------------------------------------------------------------ */
/* added tokens: leftmost-longest matching, then the single_word,      */
/* lstrip and rstrip rules of AddedVocabulary::find_matches            */

/* regex \w (see tk_is_word) */
#define is_word_char tk_is_word

/* the longest added token starting at each position comes from one
 * scan (acmatch.c: linear in the text, whatever the tokens share); the
 * leftmost of those after the last match is the next match */
static int find_matches(const emb_tokenizer *t, const tk_addset *set,
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
/* one sequence: text -> tokens (no specials)                           */

/* whitespace (or U+0120, byte-level space) at both ends of c[0..n) */
static uint32_t ws_ends(const uint32_t *c, size_t n)
{
	size_t lead = 0, trail = 0;

	while (lead < n && (tk_is_whitespace(c[lead]) || c[lead] == 0x120))
		lead++;
	while (trail < n &&
	       (tk_is_whitespace(c[n - 1 - trail]) || c[n - 1 - trail] == 0x120))
		trail++;
	if (lead > 0x7fff)
		lead = 0x7fff;
	if (trail > 0x7fff)
		trail = 0x7fff;
	return TK_WS_KNOWN | (uint32_t)lead | (uint32_t)trail << 15;
}

/* note the token count at the end of the first pre-token whose tokens
 * bring it to cap_at (added tokens count but do not stop it): see
 * truncate_pair */
#define CAP(w, out) do { \
	if (!(w)->capped && (w)->cap_at && (out)->n >= (w)->cap_at) \
		(w)->capped = (out)->n; } while (0)

static const char over_budget[] = "regexes took over their time budget "
	"for this text (a pattern that backtracks on it)";

static int tokenize_text(const emb_tokenizer *t, tk_work *w, tk_toks *out,
                         emb_err *err)
{
	tk_str *s = &w->seg;
	size_t k, i;

	/* normalizers and pre-tokenizers fail only when out of memory or
	 * when a Replace/Split regex gives up (PCRE2's match limit: a
	 * pattern that backtracks catastrophically on this text) */
	if (t->has_norm) {
		int rc;
		/* a rule that grows the text without bound stops at the
		 * limit, before it takes the memory (tk_norm_limit) */
		s->max = w->tmp.max = tk_norm_limit(s->n);
		s->over = w->tmp.over = 0;
		rc = tk_normalize(&t->norm, s, &w->tmp);
		s->max = w->tmp.max = 0;
		if (rc < 0 && (s->over || w->tmp.over))
			return emb_err_set(err, "normalizer failed: the normalized "
			                   "text would be over %d times the input "
			                   "(plus %d characters)", TK_NORM_GROWTH,
			                   TK_NORM_SLACK);
		if (rc < 0 && tk_regex_over_budget())
			return emb_err_set(err, "normalizer failed: %s", over_budget);
		if (rc < 0)
			return emb_err_set(err, "normalizer failed: out of memory, "
			                   "or a regex exceeded its match limit");
	}
	if (find_matches(t, &t->norm_set, s->c, s->n, &w->norm, &w->hits) < 0)
		return emb_err_set(err, "out of memory");
	for (k = 0; k < w->norm.n; k++) {
		const tk_seg *g = &w->norm.v[k];
		const tk_spans *pieces = &w->in;
		if (g->tok >= 0) {
			if (tk_toks_push(out, t->added[g->tok].id, s->o[2 * g->a],
			                 s->o[2 * (g->b - 1) + 1]) < 0)
				return emb_err_set(err, "out of memory");
			out->ws[out->n - 1] = ws_ends(s->c + g->a, g->b - g->a);
			continue;
		}
		/* the pre-tokenizer may rewrite the text: give it a copy of
		 * this segment */
		if (w->norm.n == 1 && g->a == 0 && g->b == s->n) {
			/* the whole text: move it (s is not read again) */
			tk_str tmp = w->piece;
			w->piece = *s;
			*s = tmp;
			s->n = 0;
		} else {
			tk_str *p = &w->piece;
			p->n = 0;
			if (tk_str_reserve(p, g->b - g->a + 1) < 0)
				return emb_err_set(err, "out of memory");
			for (i = g->a; i < g->b; i++)
				tk_str_put(p, s->c[i], s->o[2 * i], s->o[2 * i + 1]);
		}
		w->in.n = 0;
		if (tk_spans_push(&w->in, 0, w->piece.n) < 0)
			return emb_err_set(err, "out of memory");
		if (t->has_pre) {
			if (tk_pretokenize(&t->pre, &w->out, &w->piece, &w->in,
			                   &w->sptmp, &w->tmp) < 0) {
				if (tk_regex_over_budget())
					return emb_err_set(err, "pre-tokenizer failed: "
					                   "%s", over_budget);
				return emb_err_set(err, "pre-tokenizer failed: out of "
				                   "memory, or a regex exceeded its "
				                   "match limit");
			}
			pieces = &w->out;
		}
		for (i = 0; i < pieces->n; i++) {
			if (pieces->v[i].b <= pieces->v[i].a)
				continue;
			if (tk_model_tokenize(&t->model, out, &w->piece,
			                      pieces->v[i], &w->mw, err) < 0)
				return -1;
			CAP(w, out);
		}
	}
	return 0;
}

/* the piece TEXT[0, LEN) of a text, its first code point the BASE-th
 * and its first byte the BYTE0-th of the text: its tokens appended to
 * OUT */
static int encode_piece(const emb_tokenizer *t, tk_work *w, tk_toks *out,
                        const char *text, size_t len, size_t base,
                        size_t byte0, emb_err *err)
{
	size_t k, i;

	if (tk_utf8_decode_at(&w->orig, text, len, base, byte0, err) < 0)
		return -1;
	if (find_matches(t, &t->raw_set, w->orig.c, w->orig.n, &w->raw,
	                 &w->hits) < 0)
		return emb_err_set(err, "out of memory");
	for (k = 0; k < w->raw.n; k++) {
		const tk_seg *g = &w->raw.v[k];
		if (g->tok >= 0) {
			if (tk_toks_push(out, t->added[g->tok].id,
			                 (int32_t)(base + g->a),
			                 (int32_t)(base + g->b)) < 0)
				return emb_err_set(err, "out of memory");
			out->ws[out->n - 1] = ws_ends(w->orig.c + g->a,
			                              g->b - g->a);
			continue;
		}
		w->seg.n = 0;
		if (w->raw.n == 1 && g->a == 0 && g->b == w->orig.n) {
			/* the whole text: move it, not copy it (orig is not
			 * read again; its alignments are the same) */
			tk_str tmp = w->seg;
			w->seg = w->orig;
			w->orig = tmp;
		} else {
			if (tk_str_reserve(&w->seg, g->b - g->a) < 0)
				return emb_err_set(err, "out of memory");
			for (i = g->a; i < g->b; i++)
				tk_str_put(&w->seg, w->orig.c[i],
				           (int32_t)(base + i),
				           (int32_t)(base + i) + 1);
		}
		if (tokenize_text(t, w, out, err) < 0)
			return -1;
	}
	return 0;
}

#define ASCII_ALNUM(c) (((c) >= '0' && (c) <= '9') || \
	((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z'))

/* the next cut of U[0, LEN) at or after FROM (tk_chunk_safe), or LEN */
static size_t next_cut(const unsigned char *u, size_t from, size_t len)
{
	size_t j;

	for (j = from < 2 ? 2 : from; j + 2 < len; j++)
		if (u[j] == ' ' && ASCII_ALNUM(u[j + 1]) &&
		    ASCII_ALNUM(u[j - 1]) && ASCII_ALNUM(u[j - 2]) &&
		    u[j + 2] < 0x80)
			return j;
	return len;
}

/* the tokens of TEXT into OUT; when KEEP is not 0, only the first KEEP
 * of them are kept and *MORE counts the others (a truncating caller
 * needs no more) */
static int encode_seq(const emb_tokenizer *t, tk_work *w, tk_toks *out,
                      const char *text, size_t len, size_t keep,
                      size_t *more, emb_err *err)
{
	const unsigned char *u = (const unsigned char *)text;
	size_t a = 0, b, ncp = 0, i;

	out->n = 0;
	*more = 0;
	w->capped = 0;
	if (len > (size_t)INT32_MAX)
		return emb_err_set(err, "text too long (%zu bytes)", len);
	for (i = 0; i < len; i++)
		ncp += (u[i] & 0xc0) != 0x80;
	tk_regex_budget_start(ncp);
	ncp = 0;
	do {
		b = t->chunked && len - a > 2 * TK_CHUNK_BYTES ?
		    next_cut(u, a + TK_CHUNK_BYTES, len) : len;
		if (encode_piece(t, w, out, text + a, b - a, ncp, a, err) < 0)
			return -1;
		for (i = a; i < b; i++)
			ncp += (u[i] & 0xc0) != 0x80;
		if (keep && out->n > keep) {
			*more += out->n - keep;
			out->n = keep;
		}
		a = b;
	} while (a < len);
	return 0;
}

/* ------------------------------------------------------------------ */
/* truncation (TruncationParams: longest_first, right) and assembly    */

/*
 * LongestFirst for a pair (TruncationParams, right side).  N1, N2: the
 * lengths; MAX: the budget left after the special tokens.  When only
 * one side must give, the shorter stays whole; when both must, the
 * budget is halved, the odd token to the longer (to B on a tie).
 *
 * Measured on tokenizers 0.23.2: with truncation on, it stops
 * tokenizing a sequence after the pre-token whose tokens bring it to
 * max_length tokens (specials included; added tokens count, but the
 * check follows model pre-tokens only), so the lengths it compares are
 * capped at that point (L1, L2 here) while the real lengths (N1, N2)
 * bound what is kept.
 */
static void truncate_pair(size_t *n1p, size_t *n2p, size_t l1, size_t l2,
                          size_t max)
{
	size_t n1 = *n1p, n2 = *n2p, a = l1, b = l2;
	int swap = 0;

	if (n1 + n2 <= max)
		return;
	if (a > b) {
		swap = 1;
		a = l2;
		b = l1;
	}
	b = max - (a < max ? a : max);
	if (b < a)
		b = a;
	if (a + b > max) {
		a = max / 2;
		b = a + max % 2;
	}
	if (swap) {
		size_t x = a;
		a = b;
		b = x;
	}
	if (a < n1)
		*n1p = a;
	if (b < n2)
		*n2p = b;
}

static int enc_reserve(emb_encoding *enc, size_t n)
{
	size_t cap;

	if (n <= enc->cap)
		return 0;
	cap = enc->cap ? enc->cap : 64;
	while (cap < n)
		cap *= 2;
	int32_t *ids = realloc(enc->ids, cap * sizeof(*ids));
	if (!ids)
		return -1;
	enc->ids = ids;
	ids = realloc(enc->type_ids, cap * sizeof(*ids));
	if (!ids)
		return -1;
	enc->type_ids = ids;
	ids = realloc(enc->offsets, 2 * cap * sizeof(*ids));
	if (!ids)
		return -1;
	enc->offsets = ids;
	uint8_t *sp = realloc(enc->special, cap);
	if (!sp)
		return -1;
	enc->special = sp;
	enc->cap = cap;
	return 0;
}

static void enc_put(emb_encoding *enc, int32_t id, int32_t type, int32_t os,
                    int32_t oe, int special)
{
	enc->ids[enc->len] = id;
	enc->type_ids[enc->len] = type;
	enc->offsets[2 * enc->len] = os;
	enc->offsets[2 * enc->len + 1] = oe;
	enc->special[enc->len] = (uint8_t)special;
	enc->len++;
}

static size_t tpl_specials(const tk_tpl_item *it, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (it[i].seq < 0)
			k += it[i].n;
	return k;
}

size_t emb_tokenizer_num_special(const emb_tokenizer *tok, int pair)
{
	if (tok->post.type != TK_POST_TEMPLATE)
		return 0;
	return pair ? tpl_specials(tok->post.pair, tok->post.n_pair)
	            : tpl_specials(tok->post.single, tok->post.n_single);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int emb_tokenizer_special_ids(int32_t **out, size_t *n,
                              const emb_tokenizer *tok, emb_err *err)
{
	const tk_post *p = &tok->post;
	size_t k = 0, cap = 1;
	int32_t *v;

	*out = NULL;
	*n = 0;
	if (p->type == TK_POST_TEMPLATE) {
		for (size_t i = 0; i < p->n_single; i++)
			if (p->single[i].seq < 0)
				cap += p->single[i].n;
		for (size_t i = 0; i < p->n_pair; i++)
			if (p->pair[i].seq < 0)
				cap += p->pair[i].n;
	}
	if (!(v = malloc(cap * sizeof(*v))))
		return emb_err_set(err, "out of memory");
	for (int pair = 0; pair < 2 && p->type == TK_POST_TEMPLATE; pair++) {
		const tk_tpl_item *it = pair ? p->pair : p->single;
		size_t ni = pair ? p->n_pair : p->n_single;
		for (size_t i = 0; i < ni; i++)
			if (it[i].seq < 0)
				for (size_t j = 0; j < it[i].n; j++)
					v[k++] = it[i].ids[j];
	}
	qsort(v, k, sizeof(*v), cmp_i32);
	*n = 0;
	for (size_t i = 0; i < k; i++)
		if (!*n || v[*n - 1] != v[i])
			v[(*n)++] = v[i];
	*out = v;
	return 0;
}

void emb_encoding_init(emb_encoding *enc)
{
	memset(enc, 0, sizeof(*enc));
}

void emb_encoding_release(emb_encoding *enc)
{
	free(enc->ids);
	free(enc->type_ids);
	free(enc->offsets);
	free(enc->special);
	memset(enc, 0, sizeof(*enc));
}

/* RobertaProcessing trim_offsets (HF process_offsets): drop the
 * whitespace at both ends of each token's text from its offsets */
static void trim_offsets(const emb_tokenizer *tok, tk_toks *t, size_t n,
                         tk_work *w)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t ws = t->ws[i];
		size_t lead, trail;
		int32_t *o = &t->off[2 * i];
		if (!(ws & TK_WS_KNOWN)) {
			const char *s = emb_tokenizer_id_to_token(tok, t->id[i]);
			if (!s || tk_utf8_decode(&w->tmp, s, strlen(s), NULL) < 0)
				continue;
			ws = ws_ends(w->tmp.c, w->tmp.n);
		}
		lead = ws & 0x7fff;
		trail = (ws >> 15) & 0x7fff;
		if (lead) {
			int first = i == 0 || o[0] == 0;
			if (!(first && tok->post.add_prefix_space && lead == 1)) {
				int32_t x = o[0] + (int32_t)lead;
				o[0] = x < o[1] ? x : o[1];
			}
		}
		if (trail && o[1] >= (int32_t)trail) {
			int32_t x = o[1] - (int32_t)trail;
			o[1] = x > o[0] ? x : o[0];
		}
	}
}

/* one sequence: ENC takes the first N tokens of T (their id and offset
 * arrays, moved up for the specials of the template TPL, or none), so
 * that a long text's tokens are not held twice.  0: done; 1: the
 * template holds A more than once (copy instead); -1: out of memory */
static int enc_take(emb_encoding *enc, tk_toks *t, size_t n,
                    const tk_tpl_item *tpl, size_t ntpl)
{
	size_t pre = 0, post = 0, total, k, i, j, seqs = 0;
	int32_t a_type = 0, *p, *type;
	uint8_t *sp;

	for (k = 0; k < ntpl; k++) {
		if (tpl[k].seq >= 0) {
			seqs++;
			a_type = tpl[k].type_id;
		} else if (seqs) {
			post += tpl[k].n;
		} else {
			pre += tpl[k].n;
		}
	}
	if (ntpl && seqs != 1)
		return 1;
	total = pre + n + post;
	free(t->ws);
	t->ws = NULL;
	t->cap = 0;     /* (no push after this) */
	if (!(p = realloc(t->id, (total + 1) * sizeof(*p))))
		return -1;
	t->id = p;
	memmove(p + pre, p, n * sizeof(*p));
	if (!(p = realloc(t->off, 2 * (total + 1) * sizeof(*p))))
		return -1;
	t->off = p;
	memmove(p + 2 * pre, p, 2 * n * sizeof(*p));
	type = malloc((total + 1) * sizeof(*type));
	sp = malloc(total + 1);
	if (!type || !sp) {
		free(type);
		free(sp);
		return -1;
	}
	for (i = pre; i < pre + n; i++) {
		type[i] = a_type;
		sp[i] = 0;
	}
	for (k = 0, j = 0; k < ntpl; k++) {
		const tk_tpl_item *it = &tpl[k];
		if (it->seq >= 0) {
			j = pre + n;
			continue;
		}
		for (i = 0; i < it->n; i++, j++) {
			t->id[j] = it->ids[i];
			t->off[2 * j] = t->off[2 * j + 1] = -1;
			type[j] = it->type_id;
			sp[j] = 1;
		}
	}
	free(enc->ids);
	free(enc->type_ids);
	free(enc->offsets);
	free(enc->special);
	enc->ids = t->id;
	enc->offsets = t->off;
	enc->type_ids = type;
	enc->special = sp;
	enc->len = total;
	enc->cap = total + 1;
	t->id = t->off = NULL;
	t->n = 0;
	return 0;
}

int emb_tokenize(emb_encoding *enc, const emb_tokenizer *tok,
                 const char *text, size_t len,
                 const char *pair, size_t pair_len,
                 const emb_tok_opts *opts, emb_err *err)
{
	tk_work w;
	size_t n[2] = {0, 0}, cap[2] = {0, 0}, more[2] = {0, 0}, keep;
	size_t total, nspec, i, k;
	int npair = pair != NULL, specials;
	const tk_tpl_item *tpl = NULL;
	size_t ntpl = 0;
	int rc = -1;

	memset(&w, 0, sizeof(w));
	enc->len = 0;
	enc->truncated = 0;
	if (!text)
		return emb_err_set(err, "no text");
	specials = !(opts && opts->no_special) &&
	           tok->post.type == TK_POST_TEMPLATE;
	if (specials) {
		tpl = npair ? tok->post.pair : tok->post.single;
		ntpl = npair ? tok->post.n_pair : tok->post.n_single;
	}
	nspec = specials ? tpl_specials(tpl, ntpl) : 0;
	if (opts && opts->max_length && opts->max_length < nspec) {
		emb_err_set(err, "max length %zu is less than the %zu special "
		            "tokens", opts->max_length, nspec);
		goto out;
	}
	if (npair && opts && opts->max_length)
		w.cap_at = opts->max_length;
	/* truncation keeps at most max_length tokens of a sequence */
	keep = opts ? opts->max_length : 0;
	if (encode_seq(tok, &w, &w.seq[0], text, len, keep, &more[0], err) < 0)
		goto out;
	cap[0] = w.capped ? w.capped : w.seq[0].n + more[0];
	if (npair && encode_seq(tok, &w, &w.seq[1], pair, pair_len, keep,
	                        &more[1], err) < 0) {
		if (err) {
			char m[EMB_ERR_MAX];
			snprintf(m, sizeof(m), "text_pair: %.480s", err->msg);
			memcpy(err->msg, m, sizeof(m));
		}
		goto out;
	}
	if (npair)
		cap[1] = w.capped ? w.capped : w.seq[1].n + more[1];
	n[0] = w.seq[0].n + more[0];
	n[1] = npair ? w.seq[1].n + more[1] : 0;
	total = n[0] + n[1];
	if (opts && opts->max_length) {
		size_t max = opts->max_length - nspec;
		if (npair)
			truncate_pair(&n[0], &n[1], cap[0], cap[1], max);
		else if (n[0] > max)
			n[0] = max;
		enc->truncated = total - n[0] - n[1];
	}
	if (tok->post.trim_offsets) {
		trim_offsets(tok, &w.seq[0], n[0], &w);
		if (npair)
			trim_offsets(tok, &w.seq[1], n[1], &w);
	}
	if (!npair) {
		int r = enc_take(enc, &w.seq[0], n[0], specials ? tpl : NULL,
		                 specials ? ntpl : 0);
		if (r < 0) {
			emb_err_set(err, "out of memory");
			goto out;
		}
		if (r == 0) {
			rc = 0;
			goto out;
		}
	}
	if (enc_reserve(enc, n[0] + n[1] + nspec + 1) < 0) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	if (!specials) {
		for (k = 0; k < (size_t)(npair ? 2 : 1); k++)
			for (i = 0; i < n[k]; i++)
				enc_put(enc, w.seq[k].id[i], (int32_t)k,
				        w.seq[k].off[2 * i],
				        w.seq[k].off[2 * i + 1], 0);
	} else {
		for (k = 0; k < ntpl; k++) {
			const tk_tpl_item *it = &tpl[k];
			if (it->seq < 0) {
				for (i = 0; i < it->n; i++)
					enc_put(enc, it->ids[i], it->type_id, -1,
					        -1, 1);
				continue;
			}
			for (i = 0; i < n[it->seq]; i++)
				enc_put(enc, w.seq[it->seq].id[i], it->type_id,
				        w.seq[it->seq].off[2 * i],
				        w.seq[it->seq].off[2 * i + 1], 0);
		}
	}
	rc = 0;
out:
	work_release(&w);
	return rc;
}

/* ------------------------------------------------------------------ */
/* vocabulary queries                                                  */

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

/* ------------------------------------------------------------------ */
/* loading                                                             */

static void post_release(tk_post *p)
{
	size_t i;

	for (i = 0; i < p->n_single; i++)
		free(p->single[i].ids);
	for (i = 0; i < p->n_pair; i++)
		free(p->pair[i].ids);
	free(p->single);
	free(p->pair);
	memset(p, 0, sizeof(*p));
}

void emb_tokenizer_free(emb_tokenizer *tok)
{
	size_t i;

	if (!tok)
		return;
	if (tok->has_norm)
		tk_normalizer_release(&tok->norm);
	if (tok->has_pre)
		tk_pretok_release(&tok->pre);
	tk_model_release(&tok->model);
	post_release(&tok->post);
	for (i = 0; i < tok->n_added; i++) {
		free(tok->added[i].content);
		free(tok->added[i].c);
	}
	free(tok->added);
	free(tok->raw_set.ix);
	free(tok->norm_set.ix);
	tk_acm_free(tok->raw_set.acm);
	tk_acm_free(tok->norm_set.acm);
	tk_vocab_release(&tok->added_vocab);
	json_decref(tok->added_ids);
	free(tok->file);
	free(tok);
}

/* template item with special ids */
static int tpl_special(tk_tpl_item *it, int type_id, const int32_t *ids,
                       size_t n)
{
	it->seq = -1;
	it->type_id = type_id;
	it->n = n;
	it->ids = malloc((n ? n : 1) * sizeof(*ids));
	if (!it->ids)
		return -1;
	memcpy(it->ids, ids, n * sizeof(*ids));
	return 0;
}

static int tpl_seq(tk_tpl_item *it, int seq, int type_id)
{
	it->seq = seq;
	it->type_id = type_id;
	return 0;
}

/* BertProcessing and RobertaProcessing as templates */
static int post_bert(tk_post *p, int32_t cls, int32_t sep, int roberta)
{
	tk_tpl_item *s = calloc(3, sizeof(*s)), *q = calloc(6, sizeof(*q));
	int b = roberta ? 0 : 1;

	p->single = s;
	p->pair = q;
	if (!s || !q)
		return -1;
	p->type = TK_POST_TEMPLATE;
	p->n_single = 3;
	if (tpl_special(&s[0], 0, &cls, 1) < 0 || tpl_seq(&s[1], 0, 0) < 0 ||
	    tpl_special(&s[2], 0, &sep, 1) < 0)
		return -1;
	p->n_pair = 0;
	if (tpl_special(&q[p->n_pair++], 0, &cls, 1) < 0)
		return -1;
	tpl_seq(&q[p->n_pair++], 0, 0);
	if (tpl_special(&q[p->n_pair++], 0, &sep, 1) < 0)
		return -1;
	if (roberta && tpl_special(&q[p->n_pair++], 0, &sep, 1) < 0)
		return -1;
	tpl_seq(&q[p->n_pair++], 1, b);
	if (tpl_special(&q[p->n_pair++], b, &sep, 1) < 0)
		return -1;
	return 0;
}

/* ["[SEP]", 102] */
static int parse_tok_pair(int32_t *id, const json_t *j, const char *file,
                          const char *field, emb_err *err)
{
	json_t *v = json_array_get(j, 1);

	if (!json_is_array(j) || json_array_size(j) != 2 ||
	    !json_is_string(json_array_get(j, 0)) || !json_is_integer(v) ||
	    json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return emb_err_set(err, "%s: field 'post_processor.%s' must be "
		                   "[token, id]", file, field);
	*id = (int32_t)json_integer_value(v);
	return 0;
}

static int parse_template(tk_tpl_item **out, size_t *nout, const json_t *a,
                          const json_t *specials, const char *file,
                          const char *field, emb_err *err)
{
	size_t i, n;

	if (!json_is_array(a))
		return emb_err_set(err, "%s: field 'post_processor.%s' must be "
		                   "an array", file, field);
	n = json_array_size(a);
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return emb_err_set(err, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *it = json_array_get(a, i), *sp, *sq, *body, *tid, *id;
		tk_tpl_item *t = &(*out)[i];
		json_int_t type_id = 0;

		*nout = i + 1;
		sp = json_object_get(it, "SpecialToken");
		sq = json_object_get(it, "Sequence");
		body = sp ? sp : sq;
		if (!json_is_object(body))
			return emb_err_set(err, "%s: field 'post_processor.%s[%zu]' "
			                   "must be {\"SpecialToken\": ...} or "
			                   "{\"Sequence\": ...}", file, field, i);
		tid = json_object_get(body, "type_id");
		id = json_object_get(body, "id");
		if (tid) {
			if (!json_is_integer(tid) || json_integer_value(tid) < 0 ||
			    json_integer_value(tid) > INT32_MAX)
				return emb_err_set(err, "%s: field 'post_processor."
				                   "%s[%zu].type_id' must be a "
				                   "non-negative integer", file,
				                   field, i);
			type_id = json_integer_value(tid);
		}
		if (!json_is_string(id))
			return emb_err_set(err, "%s: field 'post_processor.%s[%zu]"
			                   ".id' must be a string", file, field, i);
		if (sq) {
			const char *s = json_string_value(id);
			if (strcmp(s, "A") && strcmp(s, "B"))
				return emb_err_set(err, "%s: field 'post_processor."
				                   "%s[%zu].id' must be \"A\" or "
				                   "\"B\"", file, field, i);
			tpl_seq(t, s[0] == 'B', (int)type_id);
		} else {
			json_t *st = json_object_get(specials,
			                             json_string_value(id));
			json_t *ids = json_object_get(st, "ids");
			size_t k;
			int32_t buf[64];
			if (!json_is_array(ids) || json_array_size(ids) > 64)
				return emb_err_set(err, "%s: field 'post_processor."
				                   "special_tokens' has no ids for "
				                   "'%s'", file, json_string_value(id));
			for (k = 0; k < json_array_size(ids); k++) {
				json_t *x = json_array_get(ids, k);
				if (!json_is_integer(x) || json_integer_value(x) < 0 ||
				    json_integer_value(x) > INT32_MAX)
					return emb_err_set(err, "%s: field "
					                   "'post_processor.special_tokens."
					                   "%s.ids' must hold token ids",
					                   file, json_string_value(id));
				buf[k] = (int32_t)json_integer_value(x);
			}
			if (tpl_special(t, (int)type_id, buf, k) < 0)
				return emb_err_set(err, "out of memory");
		}
	}
	return 0;
}

static void post_release(tk_post *p);

/* RobertaProcessing's and ByteLevel's offset options (default true) */
static void post_offsets(tk_post *p, const json_t *j)
{
	json_t *x = json_object_get(j, "trim_offsets");

	p->trim_offsets = json_is_boolean(x) ? json_is_true(x) : 1;
	x = json_object_get(j, "add_prefix_space");
	p->add_prefix_space = json_is_boolean(x) ? json_is_true(x) : 1;
}

static int parse_post(tk_post *p, const json_t *j, const char *file,
                      int depth, emb_err *err)
{
	json_t *t;
	const char *type;

	memset(p, 0, sizeof(*p));
	if (!j || json_is_null(j))
		return 0;
	t = json_object_get(j, "type");
	if (!json_is_object(j) || !json_is_string(t))
		return emb_err_set(err, "%s: field 'post_processor.type' must be "
		                   "a string naming the post-processor", file);
	type = json_string_value(t);
	if (!strcmp(type, "TemplateProcessing")) {
		json_t *sp = json_object_get(j, "special_tokens");
		if (sp && !json_is_object(sp))
			return emb_err_set(err, "%s: field "
			                   "'post_processor.special_tokens' must be "
			                   "an object", file);
		p->type = TK_POST_TEMPLATE;
		if (parse_template(&p->single, &p->n_single,
		                   json_object_get(j, "single"), sp, file,
		                   "single", err) < 0 ||
		    parse_template(&p->pair, &p->n_pair,
		                   json_object_get(j, "pair"), sp, file, "pair",
		                   err) < 0)
			return -1;
		return 0;
	}
	if (!strcmp(type, "BertProcessing") ||
	    !strcmp(type, "RobertaProcessing")) {
		int32_t cls, sep;
		if (parse_tok_pair(&cls, json_object_get(j, "cls"), file, "cls",
		                   err) < 0 ||
		    parse_tok_pair(&sep, json_object_get(j, "sep"), file, "sep",
		                   err) < 0)
			return -1;
		if (post_bert(p, cls, sep, type[0] == 'R') < 0)
			return emb_err_set(err, "out of memory");
		if (type[0] == 'R')
			post_offsets(p, j);
		return 0;
	}
	if (!strcmp(type, "ByteLevel")) {
		/* no special tokens; trims offsets like RobertaProcessing */
		post_offsets(p, j);
		return 0;
	}
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "processors");
		size_t i;
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field "
			                   "'post_processor.processors' must be an "
			                   "array", file);
		if (depth > 8)
			return emb_err_set(err, "%s: field 'post_processor' is "
			                   "nested too deeply", file);
		for (i = 0; i < json_array_size(a); i++) {
			tk_post q;
			if (parse_post(&q, json_array_get(a, i), file, depth + 1,
			               err) < 0) {
				post_release(&q);
				return -1;
			}
			if (q.type == TK_POST_TEMPLATE) {
				if (p->type == TK_POST_TEMPLATE) {
					post_release(&q);
					return emb_err_set(err, "%s: field "
					                   "'post_processor': a Sequence "
					                   "with two processors that add "
					                   "special tokens is not "
					                   "supported", file);
				}
				p->type = q.type;
				p->single = q.single;
				p->pair = q.pair;
				p->n_single = q.n_single;
				p->n_pair = q.n_pair;
			}
			if (q.trim_offsets) {
				p->trim_offsets = 1;
				p->add_prefix_space = q.add_prefix_space;
			}
		}
		return 0;
	}
	return emb_err_set(err, "%s: post_processor type '%s' is not "
	                   "supported", file, type);
}

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
static int added_finish(emb_tokenizer *t, emb_err *err)
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

static int add_token(emb_tokenizer *t, const char *content, int special,
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

static int parse_added(emb_tokenizer *t, const json_t *a, const char *file,
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
		if (add_token(t, json_string_value(c), special, normalized,
		              lstrip, rstrip, single) < 0)
			return emb_err_set(err, "out of memory");
	}
	return 0;
}

/* every special token the post-processor adds must be in a vocabulary */
static int post_check(const emb_tokenizer *t, const char *file, emb_err *err)
{
	const tk_tpl_item *v[2] = {t->post.single, t->post.pair};
	size_t n[2] = {t->post.n_single, t->post.n_pair}, k, i, j;

	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++)
			for (j = 0; v[k][i].seq < 0 && j < v[k][i].n; j++)
				if (!emb_tokenizer_id_to_token(t, v[k][i].ids[j]))
					return emb_err_set(err, "%s: field "
					                   "'post_processor': special "
					                   "token id %d is not in the "
					                   "vocabulary", file,
					                   v[k][i].ids[j]);
	return 0;
}

/* the largest tokenizer.json read (Gemma 3's is 33 MB) */
#define TOKENIZER_JSON_MAX ((size_t)1 << 30)

/* DIR: the model directory PATH must stay in (io/file.h), or NULL for
 * a file the user named.  Messages name the file, line and column, and
 * never quote its bytes (emb_json_file_load). */
static int load_json(emb_tokenizer *t, const char *dir, const char *path,
                     emb_err *err)
{
	json_t *root = NULL;
	json_t *v;
	int rc = -1, fast_ok = 0;
	tk_fast fast;
	emb_filebuf fb;
	const char *text;
	char *res = NULL;
	size_t len, rlen;

	if (emb_file_map(&fb, dir, path, TOKENIZER_JSON_MAX, err) < 0)
		return -1;
	text = fb.text;
	len = fb.len;
	/* the big tables straight from the text, jansson for the rest
	 * (fastjson.c); the whole text through jansson when that declines
	 * or jansson finds fault with the rest */
	if (tk_fast_read(&fast, text, len, &res, &rlen) == 1) {
		root = json_loadb(res, rlen, 0, NULL);
		free(res);
		if (root)
			fast_ok = 1;
		else
			tk_fast_release(&fast);
	}
	if (!root)
		root = emb_json_text_load(text, len, path, 0, err);
	if (!root) {
		emb_filebuf_release(&fb);
		return -1;
	}
	if (!json_is_object(root)) {
		emb_err_set(err, "%s: not a JSON object", path);
		goto out;
	}
	v = json_object_get(root, "model");
	if (!v || json_is_null(v)) {
		emb_err_set(err, "%s: missing field 'model'", path);
		goto out;
	}
	if (tk_model_parse(&t->model, v, path, fast_ok ? &fast : NULL,
	                   err) < 0)
		goto out;
	v = json_object_get(root, "normalizer");
	if (v && !json_is_null(v)) {
		t->has_norm = 1;
		if (tk_normalizer_parse(&t->norm, v, path, "normalizer", 0,
		                        err) < 0)
			goto out;
	}
	v = json_object_get(root, "pre_tokenizer");
	if (v && !json_is_null(v)) {
		t->has_pre = 1;
		if (tk_pretok_parse(&t->pre, v, path, "pre_tokenizer", 0,
		                    err) < 0)
			goto out;
	}
	if (parse_post(&t->post, json_object_get(root, "post_processor"),
	               path, 0, err) < 0)
		goto out;
	if (parse_added(t, json_object_get(root, "added_tokens"), path,
	                err) < 0)
		goto out;
	if (added_finish(t, err) < 0 || post_check(t, path, err) < 0)
		goto out;
	rc = 0;
out:
	json_decref(root);
	if (fast_ok)
		tk_fast_release(&fast);
	emb_filebuf_release(&fb);
	return rc;
}

/* ------------------------------------------------------------------ */
/* may long texts be tokenized in pieces? (tk_chunk_safe)              */

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

/* ------------------------------------------------------------------ */
/* vocab.txt + tokenizer_config.json (BERT, as transformers' converter) */

/* string member, or {"content": string} (AddedToken form) */
static const char *cfg_token(const json_t *cfg, const json_t *map,
                             const char *key, const char *def)
{
	const json_t *src[2] = {cfg, map};
	int i;

	for (i = 0; i < 2; i++) {
		json_t *v = json_object_get(src[i], key);
		if (json_is_object(v))
			v = json_object_get(v, "content");
		if (json_is_string(v))
			return json_string_value(v);
	}
	return def;
}

/* DIR/NAME's JSON object (DIR: as load_json), NULL when absent (*bad
 * 0) or bad (*bad 1, err set) */
static json_t *load_opt_json(const char *dir, const char *path, int *bad,
                             emb_err *err)
{
	json_t *j;

	*bad = 0;
	/* Gemma 3's tokenizer_config.json is 1.1 MB, nearly all of it
	 * added_tokens_decoder, which nothing here reads: no tree of it */
	j = emb_json_file_load_skip(dir, path, (size_t)16 << 20, 0,
	                            "added_tokens_decoder", err);
	if (!j) {
		*bad = errno != ENOENT;
		return NULL;
	}
	if (!json_is_object(j)) {
		*bad = 1;
		emb_err_set(err, "%s: not a JSON object", path);
		json_decref(j);
		return NULL;
	}
	return j;
}

static int cfg_bool(int *out, const json_t *cfg, const char *key,
                    const char *file, emb_err *err)
{
	json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return emb_err_set(err, "%s: field '%s' must be a boolean", file,
		                   key);
	*out = json_is_true(v);
	return 0;
}

/* DIR/added_tokens.json ({"token": id}): tokens added to a vocab.txt
 * model, in id order, as normalized non-special added tokens */
static int load_added_json(emb_tokenizer *t, const char *dir, emb_err *err)
{
	char path[4096];
	json_t *j;
	const char *key;
	json_t *val;
	int bad;
	json_int_t want = 0;

	snprintf(path, sizeof(path), "%s/added_tokens.json", dir);
	j = load_opt_json(dir, path, &bad, err);
	if (bad)
		return -1;
	if (!j)
		return 0;
	json_object_foreach(j, key, val) {
		if (!json_is_integer(val) || json_integer_value(val) < 0) {
			emb_err_set(err, "%s: field '%.60s' must be a token id",
			            path, key);
			json_decref(j);
			return -1;
		}
	}
	/* in id order (few entries: repeated scans) */
	for (;;) {
		const char *best = NULL;
		json_int_t bid = 0;
		json_object_foreach(j, key, val) {
			json_int_t id = json_integer_value(val);
			if (id >= want && (!best || id < bid)) {
				best = key;
				bid = id;
			}
		}
		if (!best)
			break;
		if (add_token(t, best, 0, 1, 0, 0, 0) < 0) {
			json_decref(j);
			return emb_err_set(err, "out of memory");
		}
		want = bid + 1;
	}
	json_decref(j);
	return 0;
}

static int load_vocab_txt(emb_tokenizer *t, const char *dir, emb_err *err)
{
	char vocab[4096], cpath[4096], mpath[4096];
	json_t *cfg, *map;
	int bad, rc = -1, lower = 1, chinese = 1, strip = -1;
	const char *unk, *cls, *sep, *pad, *mask;
	int32_t cls_id, sep_id;
	json_t *sa;

	snprintf(vocab, sizeof(vocab), "%s/vocab.txt", dir);
	snprintf(cpath, sizeof(cpath), "%s/tokenizer_config.json", dir);
	snprintf(mpath, sizeof(mpath), "%s/special_tokens_map.json", dir);
	cfg = load_opt_json(dir, cpath, &bad, err);
	if (bad)
		return -1;
	map = load_opt_json(dir, mpath, &bad, err);
	if (bad) {
		json_decref(cfg);
		return -1;
	}
	if (cfg_bool(&lower, cfg, "do_lower_case", cpath, err) < 0 ||
	    cfg_bool(&chinese, cfg, "tokenize_chinese_chars", cpath, err) < 0)
		goto out;
	sa = json_object_get(cfg, "strip_accents");
	if (sa && !json_is_null(sa)) {
		if (!json_is_boolean(sa)) {
			emb_err_set(err, "%s: field 'strip_accents' must be a "
			            "boolean or null", cpath);
			goto out;
		}
		strip = json_is_true(sa);
	}
	unk = cfg_token(cfg, map, "unk_token", "[UNK]");
	cls = cfg_token(cfg, map, "cls_token", "[CLS]");
	sep = cfg_token(cfg, map, "sep_token", "[SEP]");
	pad = cfg_token(cfg, map, "pad_token", "[PAD]");
	mask = cfg_token(cfg, map, "mask_token", "[MASK]");
	if (tk_wordpiece_from_vocab_txt(&t->model, vocab, unk, err) < 0)
		goto out;
	t->has_norm = 1;
	t->norm.type = TK_NORM_BERT;
	t->norm.u.bert.clean_text = 1;
	t->norm.u.bert.chinese = chinese;
	t->norm.u.bert.lowercase = lower;
	t->norm.u.bert.strip_accents = strip < 0 ? lower : strip;
	t->has_pre = 1;
	t->pre.type = TK_PRE_BERT;
	/* the special tokens, in transformers' order, as non-normalized
	 * special added tokens */
	{
		const char *sp[5] = {pad, unk, cls, sep, mask};
		int i;
		for (i = 0; i < 5; i++)
			if (add_token(t, sp[i], 1, 0, 0, 0, 0) < 0) {
				emb_err_set(err, "out of memory");
				goto out;
			}
	}
	if (load_added_json(t, dir, err) < 0 || added_finish(t, err) < 0)
		goto out;
	cls_id = emb_tokenizer_token_to_id(t, cls);
	sep_id = emb_tokenizer_token_to_id(t, sep);
	if (post_bert(&t->post, cls_id, sep_id, 0) < 0) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(cfg);
	json_decref(map);
	return rc;
}

int emb_tokenizer_exists(const char *dir)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/tokenizer.json", dir);
	if (access(p, F_OK) == 0)
		return 1;
	snprintf(p, sizeof(p), "%s/vocab.txt", dir);
	return access(p, F_OK) == 0;
}

int emb_tokenizer_load(emb_tokenizer **out, const char *dir, emb_err *err)
{
	emb_tokenizer *t;
	char path[4096];
	struct stat st;
	int rc, isdir;

	*out = NULL;
	if (stat(dir, &st) < 0)
		return emb_err_set(err, "%s: %s", dir, strerror(errno));
	isdir = S_ISDIR(st.st_mode);
	if (isdir)
		snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
	else
		snprintf(path, sizeof(path), "%s", dir);
	t = calloc(1, sizeof(*t));
	if (!t)
		return emb_err_set(err, "out of memory");
	if (stat(path, &st) == 0) {
		t->file = strdup(path);
		rc = load_json(t, isdir ? dir : NULL, path, err);
	} else {
		char vocab[4096];
		snprintf(vocab, sizeof(vocab), "%s/vocab.txt", dir);
		if (stat(vocab, &st) < 0) {
			emb_tokenizer_free(t);
			return emb_err_set(err, "%s: no tokenizer.json or vocab.txt",
			                   dir);
		}
		t->file = strdup(vocab);
		rc = load_vocab_txt(t, dir, err);
	}
	if (rc < 0) {
		emb_tokenizer_free(t);
		return -1;
	}
	t->chunked = tk_chunk_safe(t);
	*out = t;
	return 0;
}
