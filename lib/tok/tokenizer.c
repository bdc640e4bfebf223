/*
 * tokenizer.c - the pipeline: tokenizer.json (or vocab.txt: vocabtxt.c)
 * loaded into its stages, and the public emb_tokenize API that runs
 * them: added-token splitting, normalizer, pre-tokenizer, model, long
 * texts in pieces, truncation and the post-processor's template.  The
 * stages are their own files (addedtok.c, normalizer.c, pretok.c,
 * model.c, chunksafe.c, postproc.c).  Semantics follow Hugging Face
 * tokenizers (Rust) 0.23: TokenizerImpl::encode with add_special_tokens,
 * char offsets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tok/tok-internal.h"
#include "tok/acmatch.h"

/* ------------------------------------------------------------------ */
/* per-call scratch                                                    */

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
	if (tk_added_find(t, &t->norm_set, s->c, s->n, &w->norm, &w->hits) < 0)
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
	if (tk_added_find(t, &t->raw_set, w->orig.c, w->orig.n, &w->raw,
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
		    tk_chunk_cut(u, a + TK_CHUNK_BYTES, len) : len;
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
	nspec = specials ? tk_post_specials(tpl, ntpl) : 0;
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
	/* room for what the loops below put: a template may name a
	 * sequence more than once (each time all of its tokens, as Hugging
	 * Face's TemplateProcessing does) */
	total = specials ? 0 : n[0] + n[1];
	for (k = 0; k < ntpl; k++)
		total += tpl[k].seq < 0 ? tpl[k].n : n[tpl[k].seq];
	if (enc_reserve(enc, total + 1) < 0) {
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
/* loading                                                             */

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
	tk_post_release(&tok->post);
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
	if (tk_post_parse(&t->post, json_object_get(root, "post_processor"),
	                  path, 0, err) < 0)
		goto out;
	if (tk_added_parse(t, json_object_get(root, "added_tokens"), path,
	                   err) < 0)
		goto out;
	if (tk_added_finish(t, err) < 0 || tk_post_check(t, path, err) < 0)
		goto out;
	rc = 0;
out:
	json_decref(root);
	if (fast_ok)
		tk_fast_release(&fast);
	emb_filebuf_release(&fb);
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
		rc = tk_vocab_txt_load(t, dir, err);
	}
	if (rc < 0) {
		emb_tokenizer_free(t);
		return -1;
	}
	t->chunked = tk_chunk_safe(t);
	*out = t;
	return 0;
}
