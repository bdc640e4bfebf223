/*
 * tool/chunk.c - long documents in the record driver.
 *
 * Windows (--chunk W [--overlap K]): the driver hands the command one
 * emb_window per window instead of the document's record
 * (emb_chunker_next).  The document is parsed and tokenized once; each
 * window holds a reference to it, its index, count and span, and its
 * slice of the document's encoding (the specials, the prompt's tokens,
 * its content tokens), which emb-encode embeds and emb-tokenize writes
 * as they are.  The output record is written from the window and the
 * document's members (emb_window_begin): the document's fields, chunk,
 * chunks, span, input_ids, token_type_ids (and prompt_length, tokens).
 *
 * Late chunking (--chunk W [--overlap K] --late): the command runs the
 * model once over the document (up to the model's maximum positions,
 * not max_seq_length, unless --max-length says otherwise) and
 * emb_late_emit writes one record per window of the content that fits,
 * its vector pooled from the token embeddings (emb_chunk_pool_windows);
 * what is cut is said in a warning.
 *
 * A window record holds its own slice of the text (span), not the
 * document's (--window-text=full, none).
 *
 * Pairs (text_pair) are not cut into windows: a record with one is an
 * error.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"

/* a document and the windows that hold it */
struct emb_chunk_doc {
	emb_record *rec;
	size_t refs;
};

struct emb_chunker {
	size_t w, k;
	int tokens, raw;
	uint64_t lines;                 /* read so far, over every input */
	const emb_text_tok *tt;         /* borrowed (emb_chunker_bind) */
	struct emb_chunk_doc *cur;      /* the document being cut (a
	                                   reference of its own) */
	emb_encoding full;
	emb_chunk_layout lay;
	size_t prompt_cp;
	size_t n, next;                 /* windows, the next to hand out */
	size_t cp_at, byte_at;          /* a code point of the text and its
	                                   byte offset: where the next
	                                   window's slice is looked for */
	int text;                       /* EMB_WINDOW_TEXT_* */
};

int emb_chunker_new(emb_chunker **out, long long w, long long k, int tokens,
                    int raw, emb_err *err)
{
	emb_chunker *c;

	*out = NULL;
	if (emb_chunk_check(w, k, err) < 0)
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return emb_err_set(err, "out of memory");
	c->w = (size_t)w;
	c->k = (size_t)k;
	c->tokens = tokens;
	c->raw = raw;
	emb_encoding_init(&c->full);
	*out = c;
	return 0;
}

static void doc_unref(struct emb_chunk_doc *d)
{
	if (d && --d->refs == 0) {
		emb_record_free(d->rec);
		free(d);
	}
}

int emb_window_text_parse(const char *s)
{
	return !strcmp(s, "slice") ? EMB_WINDOW_TEXT_SLICE :
	       !strcmp(s, "full") ? EMB_WINDOW_TEXT_FULL :
	       !strcmp(s, "none") ? EMB_WINDOW_TEXT_NONE : -1;
}

void emb_chunker_text(emb_chunker *c, int mode)
{
	c->text = mode;
}

size_t emb_text_cp_offset(const char *s, size_t n, size_t cp)
{
	size_t i = 0;

	for (; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cp-- == 0)
			return i;
	return n;
}

/* a late window's "text" after emb_out_begin dropped the document's
 * (MODE not EMB_WINDOW_TEXT_FULL): the code points SPAN of it, or
 * nothing */
static void window_text(emb_buf *b, const emb_record *doc,
                        const size_t span[2], int mode)
{
	const char *t;
	size_t n, a, e;

	if (mode != EMB_WINDOW_TEXT_SLICE ||
	    emb_record_get_string(doc, "text", &t, &n, NULL) < 0)
		return;
	a = emb_text_cp_offset(t, n, span[0]);
	e = emb_text_cp_offset(t, n, span[1]);
	emb_out_string(b, "text", t + a, e > a ? e - a : 0);
}

void emb_chunker_free(emb_chunker *c)
{
	if (!c)
		return;
	doc_unref(c->cur);
	emb_encoding_release(&c->full);
	free(c);
}

/* code points of s (n bytes of valid UTF-8), as the front end feeds it to
 * the tokenizer: lowercasing turns U+0130 into two code points */
static size_t code_points(const char *s, size_t n, int lower)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch & 0xc0) != 0x80)
			k++;
		if (lower && ch == 0xc4 && i + 1 < n &&
		    (unsigned char)s[i + 1] == 0xb0)
			k++;
	}
	return k;
}

/* the full, untruncated encoding of the record's text (the prompt first,
 * as the front end applies it) and its layout */
static int encode_full(emb_encoding *full, emb_chunk_layout *lay,
                       size_t *prompt_cp, const emb_text_tok *tt,
                       const emb_record *rec, int with_prompt, emb_err *err)
{
	emb_text_tok t = *tt;
	size_t pl;

	if (emb_record_has(rec, "text_pair"))
		return emb_err_set(err, "field 'text_pair': pairs are not cut into windows (--chunk takes single texts)");
	t.opts.max_length = 0;
	if (!with_prompt) {
		t.prompt = NULL;
		t.prompt_len = 0;
	}
	if (emb_text_tok_record(full, &pl, &t, rec, err) < 0)
		return -1;
	*prompt_cp = t.prompt ? code_points(t.prompt, t.prompt_len, t.lower) : 0;
	return emb_chunk_layout_of(lay, full, *prompt_cp, err);
}

int emb_chunker_bound(const emb_chunker *c)
{
	return c->tt != NULL;
}

uint64_t emb_chunker_lines(const emb_chunker *c)
{
	return c->lines;
}

int emb_chunker_bind(emb_chunker *c, const emb_text_tok *tt, emb_err *err)
{
	size_t extra, max = tt->opts.max_length;

	c->tt = tt;
	/* the longest window: W + the specials + the prompt's tokens
	 * (prompt_tokens counts the leading special, when there are
	 * specials: a static model's encoding has none) */
	if (tt->opts.no_special)
		extra = tt->prompt ? tt->prompt_tokens : 0;
	else
		extra = tt->prompt ? tt->prompt_tokens + 1 :
		        emb_tokenizer_num_special(tt->tok, 0);
	if (max > 0 && c->w + extra > max)
		return emb_err_set(err, "--chunk %zu: windows of %zu tokens with the %zu special and prompt tokens are longer than the maximum length %zu (--max-length)",
		                   c->w, c->w + extra, extra, max);
	return 0;
}

/* the byte offset of code point CP of the current document's text T (N
 * bytes): from the last one looked up when CP is not before it, as the
 * windows' spans go forward */
static size_t text_offset(emb_chunker *c, const char *t, size_t n, size_t cp)
{
	if (cp < c->cp_at)
		c->cp_at = c->byte_at = 0;
	c->byte_at += emb_text_cp_offset(t + c->byte_at, n - c->byte_at,
	                                 cp - c->cp_at);
	c->cp_at = cp;
	return c->byte_at;
}

/* window c->next of the current document into w */
static int window_of(emb_chunker *c, emb_window *w, size_t *len, emb_err *err)
{
	const char *t;
	size_t s, e, n;

	emb_chunk_window(&s, &e, c->next, c->lay.len, c->w, c->k);
	if (emb_chunk_encoding(&w->enc, &c->full, &c->lay, s, e, c->prompt_cp,
	                       err) < 0)
		return -1;
	emb_chunk_span(w->span, &c->full, &c->lay, s, e, c->prompt_cp);
	w->index = c->next;
	w->count = c->n;
	w->prompt_length = c->tt->prompt ? c->tt->prompt_tokens : 0;
	w->c = c;
	w->slice = NULL;
	w->slice_len = 0;
	if (c->text == EMB_WINDOW_TEXT_SLICE &&
	    emb_record_get_string(c->cur->rec, "text", &t, &n, NULL) == 0) {
		size_t at = text_offset(c, t, n, w->span[0]);
		w->slice = t + at;
		w->slice_len = emb_text_cp_offset(w->slice, n - at,
		                                  w->span[1] - w->span[0]);
	}
	/* the memory the window holds: its tokens (the document, held
	 * once, is counted with its first window) */
	*len += w->enc.len * (4 * sizeof(int32_t) + 1);
	c->next++;
	return 0;
}

/* w holds the current document; a window that cannot be cut ends its
 * document: one diagnostic */
static void hold(emb_window *w, struct emb_chunk_doc *d)
{
	w->ref = d;
	d->refs++;
}

static int next_window(emb_chunker *c, emb_window *w, size_t *len,
                       emb_err *err)
{
	hold(w, c->cur);
	if (window_of(c, w, len, err) < 0) {
		c->n = c->next = 0;
		return -2;
	}
	return 1;
}

int emb_chunker_next(emb_chunker *c, emb_reader *rd, emb_window **wp,
                     size_t *len, emb_err *err)
{
	emb_window *w = *wp;
	struct emb_chunk_doc *d;
	const char *line;
	size_t n;
	int rc;

	if (!w) {
		if (!(w = *wp = calloc(1, sizeof(*w))))
			return emb_err_set(err, "out of memory");
		emb_encoding_init(&w->enc);
	}
	doc_unref(w->ref);
	w->ref = NULL;
	*len = 0;
	if (c->next < c->n)
		return next_window(c, w, len, err);
	c->n = c->next = 0;
	doc_unref(c->cur);
	c->cur = NULL;
	rc = emb_reader_next(rd, &line, &n, err);
	if (rc != 0)
		c->lines++;
	if (rc <= 0)
		return rc;
	*len = n;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->rec = emb_record_new())) {
		free(d);
		return emb_err_set(err, "out of memory");
	}
	d->refs = 1;
	if ((c->raw ? emb_record_from_text(d->rec, line, n, c->lines, err) :
	              emb_record_parse(d->rec, line, n, err)) < 0) {
		doc_unref(d);
		return -1;
	}
	c->cur = d;
	c->cp_at = c->byte_at = 0;
	if (encode_full(&c->full, &c->lay, &c->prompt_cp, c->tt, d->rec, 1,
	                err) < 0) {
		/* w holds the document: its id names it in the diagnostic */
		hold(w, d);
		return -2;
	}
	c->n = emb_chunk_count(c->lay.len, c->w, c->k);
	return next_window(c, w, len, err);
}

const emb_record *emb_window_doc(const emb_window *w)
{
	return w->ref ? w->ref->rec : NULL;
}

void emb_window_free(emb_window *w)
{
	if (!w)
		return;
	doc_unref(w->ref);
	emb_encoding_release(&w->enc);
	free(w);
}

int emb_window_begin(emb_buf *b, const emb_window *w, int ids, emb_err *err)
{
	static const char *const drop[] = { "text",
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", "offsets", "chunk", "chunks", "span",
		"token_embeddings", "token_embeddings_b64", NULL };
	static const char *const drop_pl[] = { "text",
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", "offsets", "chunk", "chunks", "span",
		"token_embeddings", "token_embeddings_b64",
		"prompt_length_b64", NULL };
	const emb_chunker *c = w->c;
	const char *const *d;
	char js[64];

	/* without IDS the caller writes prompt_length when not 0: a prompt
	 * of no tokens still replaces the document's prompt_length_b64 */
	d = !ids && c->tt->prompt && !w->prompt_length ? drop_pl : drop;
	emb_out_begin(b, emb_window_doc(w), c->text == EMB_WINDOW_TEXT_FULL ? d + 1 : d);
	if (w->slice)
		emb_out_string(b, "text", w->slice, w->slice_len);
	emb_out_int(b, "chunk", (long long)w->index);
	emb_out_int(b, "chunks", (long long)w->count);
	emb_out_json(b, "span", js, (size_t)snprintf(js, sizeof(js), "[%zu,%zu]",
	                                             w->span[0], w->span[1]));
	if (!ids)
		return 0;
	emb_out_int32s(b, "input_ids", w->enc.ids, w->enc.len);
	emb_out_int32s(b, "token_type_ids", w->enc.type_ids, w->enc.len);
	if (c->tokens) {
		const char **tk = malloc((w->enc.len + 1) * sizeof(*tk));
		if (!tk)
			return emb_err_set(err, "out of memory");
		for (size_t i = 0; i < w->enc.len; i++)
			tk[i] = emb_tokenizer_id_to_token(c->tt->tok, w->enc.ids[i]);
		emb_out_strings(b, "tokens", tk, w->enc.len);
		free(tk);
	}
	if (c->tt->prompt)
		emb_out_int(b, "prompt_length", (long long)w->prompt_length);
	return 0;
}

/* ------------------------------------------------------------------ */
/* late chunking                                                       */

int emb_late_init(emb_late *l, const emb_cli *c, const emb_text_tok *tt,
                  const emb_pool_spec *spec, emb_err *err)
{
	memset(l, 0, sizeof(*l));
	if (emb_chunk_check(c->chunk, c->overlap > 0 ? c->overlap : 0, err) < 0)
		return -1;
	if (!tt || !tt->tok)
		return emb_err_set(err, "--late needs the model's tokenizer files");
	if (spec->layer_norm)
		return emb_err_set(err, "--layer-norm does not apply with --late");
	l->tt = tt;
	l->w = (size_t)c->chunk;
	l->k = c->overlap > 0 ? (size_t)c->overlap : 0;
	l->window_text = c->window_text;
	l->spec = spec;
	return 0;
}

/* ids (n) == lead tokens (from LEAD_FROM on; before that: a prompt the
 * layout does not know), content[0..n - lead - trail), suffix of full */
static int matches(const int32_t *ids, size_t n, const emb_encoding *full,
                   const emb_chunk_layout *lay, size_t lead, int lead_known)
{
	size_t lmax, i;

	if (n < lead + lay->trail || n - lead - lay->trail > lay->len)
		return 0;
	if (!ids)
		return 1;
	lmax = n - lead - lay->trail;
	if (lead_known)
		for (i = 0; i < lead; i++)
			if (ids[i] != full->ids[i])
				return 0;
	for (i = 0; i < lmax; i++)
		if (ids[lead + i] != full->ids[lay->lead + i])
			return 0;
	for (i = 0; i < lay->trail; i++)
		if (ids[n - lay->trail + i] != full->ids[full->len - lay->trail + i])
			return 0;
	return 1;
}

/*
 * Where the content sits in the model's input ids (n; NULL: unknown):
 * *lead positions before it.  Tried in turn: the text with the front
 * end's prompt (when it has one and the record does not say it had
 * none), then the text alone after the record's prompt_length leading
 * tokens (or the prefix specials when it has none).
 */
static int late_layout(emb_encoding *full, emb_chunk_layout *lay,
                       size_t *prompt_cp, size_t *lead,
                       const emb_text_tok *tt, const emb_record *rec,
                       const int32_t *ids, size_t n, emb_err *err)
{
	int pl;

	if (emb_record_prompt_length(&pl, rec, err) < 0)
		return -1;
	if (tt->prompt && (pl > 0 || !emb_record_has(rec, "prompt_length"))) {
		if (encode_full(full, lay, prompt_cp, tt, rec, 1, err) < 0)
			return -1;
		if (matches(ids, n, full, lay, lay->lead, 1)) {
			*lead = lay->lead;
			return 0;
		}
	}
	if (encode_full(full, lay, prompt_cp, tt, rec, 0, err) < 0)
		return -1;
	*lead = pl > 0 && (size_t)pl >= lay->lead ? (size_t)pl : lay->lead;
	if (matches(ids, n, full, lay, *lead, pl <= 0))
		return 0;
	if (!ids)
		return emb_err_set(err, "%zu token embeddings do not fit the %zu tokens of 'text' (%zu before and %zu after them)",
		                   n, lay->len, *lead, lay->trail);
	return emb_err_set(err, "field 'input_ids' does not hold the tokens of 'text' as the model's tokenizer cuts it");
}

/* window j of nw (content tokens [s, e)) with its vector v (pd values,
 * pooled; --dim applied here) -> its record in b */
static int late_window(emb_buf *b, const emb_late *l, const emb_record *rec,
                       const emb_encoding *full, const emb_chunk_layout *lay,
                       size_t pcp, size_t j, size_t nw, size_t s, size_t e,
                       size_t lmax, float *v, int pd, int b64,
                       emb_err *err)
{
	static const char *const drop[] = { "text",
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", "offsets", "chunk", "chunks", "span",
		"token_embeddings", "token_embeddings_b64", "embedding",
		"embedding_b64", NULL };
	const emb_pool_spec *sp = l->spec;
	size_t span[2];
	int vn = pd;
	char js[64];

	if (sp->dim > 0) {
		vn = sp->dim;
		emb_normalize(v, vn);
	}
	for (int i = 0; i < vn; i++)
		if (!isfinite(v[i]))
			return emb_err_set(err, "the embedding is not finite (NaN or infinity at %d)",
			                   i);
	emb_chunk_span(span, full, lay, s, e, pcp);
	emb_out_begin(b, rec, l->window_text == EMB_WINDOW_TEXT_FULL ?
	                      drop + 1 : drop);
	window_text(b, rec, span, l->window_text);
	emb_out_int(b, "chunk", (long long)j);
	emb_out_int(b, "chunks", (long long)nw);
	emb_out_json(b, "span", js,
	             (size_t)snprintf(js, sizeof(js), "[%zu,%zu]", span[0],
	                              span[1]));
	if (lay->len > lmax)
		emb_out_int(b, "truncated", (long long)(lay->len - lmax));
	emb_out_floats(b, "embedding", v, (size_t)vn, b64);
	emb_out_end(b);
	return 0;
}

int emb_late_emit(emb_buf *b, const emb_late *l, const emb_record *rec,
                  const int32_t *ids, size_t n, const float *tok, int d,
                  int b64, emb_err *warn, emb_err *err)
{
	const emb_pool_spec *sp = l->spec;
	emb_encoding full;
	emb_chunk_layout lay;
	size_t pcp, lead, lmax, nw, j, c0, cw, *ws = NULL;
	float *vs = NULL;
	int rc = -1, pd = 0;

	emb_encoding_init(&full);
	if (n > INT_MAX || late_layout(&full, &lay, &pcp, &lead, l->tt, rec, ids,
	                               n, err) < 0) {
		if (n > INT_MAX)
			emb_err_set(err, "too many token embeddings (%zu)", n);
		goto out;
	}
	lmax = n - lead - lay.trail;
	if (lmax == 0) {
		emb_err_set(err, "field 'text' has no tokens to pool (late chunking)");
		goto out;
	}
	nw = emb_chunk_count(lmax, l->w, l->k);
	if (lay.len > lmax && warn)
		emb_err_set(warn, "late chunking: %zu of the %zu tokens of 'text' are past the model's input of %zu and were cut: %zu windows instead of %zu (a larger --max-length, or windows without --late)",
		            lay.len - lmax, lay.len, n, nw,
		            emb_chunk_count(lay.len, l->w, l->k));
	if (!(ws = malloc(2 * nw * sizeof(*ws)))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	// the windows' token rows [ws[j], ws[nw + j]), then their vectors
	// vs (c1-c0, pd), pooled and through the Dense modules together,
	// emb_dense_chunk windows at a time
	for (j = 0; j < nw; j++) {
		emb_chunk_window(&ws[j], &ws[nw + j], j, lmax, l->w, l->k);
		ws[j] += lead;
		ws[nw + j] += lead;
	}
	cw = (size_t)emb_dense_chunk(sp->dense, sp->n_dense, d);
	for (c0 = 0; c0 < nw; c0 += cw) {
		size_t c1 = c0 + cw < nw ? c0 + cw : nw;
		free(vs);
		vs = NULL;
		if (emb_chunk_pool_windows(&vs, &pd, tok, (int)n, d, ws + c0,
		                           ws + nw + c0, c1 - c0, sp->dense,
		                           sp->n_dense, sp->normalize, err) < 0)
			goto out;
		if (sp->dim > pd) {
			emb_err_set(err, "--dim %d is larger than the embedding dimension %d",
			            sp->dim, pd);
			goto out;
		}
		for (j = c0; j < c1; j++)
			if (late_window(b, l, rec, &full, &lay, pcp, j, nw,
			                ws[j] - lead, ws[nw + j] - lead, lmax,
			                vs + (j - c0) * (size_t)pd, pd, b64, err) < 0)
				goto out;
	}
	rc = 0;
out:
	free(vs);
	free(ws);
	emb_encoding_release(&full);
	return rc;
}

int emb_late_emit_record(emb_buf *b, const emb_late *l, const emb_record *rec,
                         int b64, emb_err *warn, emb_err *err)
{
	float *tok = NULL;
	int32_t *ids = NULL;
	size_t rows, cols, nids = 0;
	int rc = -1;

	if (emb_record_get_floats(rec, "token_embeddings", &tok, &rows, &cols,
	                          err) < 0)
		return -1;
	if (rows == 0 || cols == 0) {
		emb_err_set(err, "field 'token_embeddings' is empty");
		goto out;
	}
	if (rows > (1u << 30) || cols > (1u << 30)) {
		emb_err_set(err, "field 'token_embeddings' is too large");
		goto out;
	}
	if (emb_record_has(rec, "input_ids")) {
		if (emb_record_get_int32s(rec, "input_ids", &ids, &nids, err) < 0)
			goto out;
		if (nids != rows) {
			emb_err_set(err, "field 'input_ids' has %zu values, 'token_embeddings' %zu rows",
			            nids, rows);
			goto out;
		}
	}
	if (l->spec->in_dim > 0 && (int)cols != l->spec->in_dim) {
		emb_err_set(err, "token embeddings have %zu columns, the pooling config says %d",
		            cols, l->spec->in_dim);
		goto out;
	}
	rc = emb_late_emit(b, l, rec, ids, rows, tok, (int)cols, b64, warn, err);
out:
	free(tok);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------------ */
/* one vector per document from its windows                            */

void emb_group_init(emb_group *g, const char *field)
{
	memset(g, 0, sizeof(*g));
	g->field = field;
	emb_buf_init(&g->line);
}

void emb_group_release(emb_group *g)
{
	emb_record_free(g->first);
	free(g->key);
	free(g->sum);
	emb_buf_release(&g->line);
	memset(g, 0, sizeof(*g));
}

/* 1 when REC's text is its window's slice (--window-text=slice), not
 * its document's: as many code points as its span */
static int slice_text(const emb_record *rec)
{
	int32_t *span = NULL;
	const char *t;
	size_t n, ns = 0;
	int yes;

	if (!emb_record_has(rec, "span") ||
	    emb_record_get_string(rec, "text", &t, &n, NULL) < 0 ||
	    emb_record_get_int32s(rec, "span", &span, &ns, NULL) < 0)
		return 0;
	yes = ns == 2 && span[1] >= span[0] &&
	      code_points(t, n, 0) == (size_t)(span[1] - span[0]);
	free(span);
	return yes;
}

/* the group held (if any) as one record on b: the first window's
 * fields but the window's own (its text too when a slice) */
static int group_write(emb_group *g, emb_buf *b, int b64, emb_err *err)
{
	static const char *const drop[] = { "text",
		"chunk", "chunks", "span", "input_ids", "token_type_ids",
		"tokens", "offsets", "prompt_length", "embedding",
		"embedding_b64", NULL };
	int i;

	if (!g->count)
		return 0;
	for (i = 0; i < g->dim; i++)
		g->sum[i] /= (float)g->count;
	emb_normalize(g->sum, g->dim);
	for (i = 0; i < g->dim; i++)
		if (!isfinite(g->sum[i]))
			return emb_err_set(err, "the mean embedding of %s %.*s is not finite",
			                   g->field, (int)(g->keylen > 64 ? 64 : g->keylen),
			                   g->key);
	emb_out_begin(b, g->first, slice_text(g->first) ? drop : drop + 1);
	emb_out_int(b, "chunks", (long long)g->count);
	emb_out_floats(b, "embedding", g->sum, (size_t)g->dim, b64);
	emb_out_end(b);
	g->count = 0;
	return 0;
}

int emb_group_add(emb_group *g, emb_buf *b, const emb_record *rec, int b64,
                  emb_err *err)
{
	const char *key;
	size_t klen, rows, cols;
	float *v;
	int i;

	key = emb_record_raw(rec, g->field, &klen);
	if (!key)
		return emb_err_set(err, "missing field '%s' (--group-by)", g->field);
	if (emb_record_get_floats(rec, "embedding", &v, &rows, &cols, err) < 0)
		return -1;
	if (rows != 1 || cols == 0 || cols > (1u << 30)) {
		free(v);
		return emb_err_set(err, "field 'embedding' must be one non-empty vector");
	}
	if (g->count && (klen != g->keylen || memcmp(key, g->key, klen))) {
		if (group_write(g, b, b64, err) < 0) {
			g->count = 0;
			free(v);
			return -1;
		}
	}
	if (g->count && (int)cols != g->dim) {
		free(v);
		return emb_err_set(err, "field 'embedding' has %zu values, the others of %s %.*s %d",
		                   cols, g->field, (int)(klen > 64 ? 64 : klen), key,
		                   g->dim);
	}
	if (!g->count) {
		char *k = malloc(klen + 1);
		float *s = realloc(g->sum, cols * sizeof(float));
		if (!g->first)
			g->first = emb_record_new();
		if (!k || !s || !g->first) {
			free(k);
			if (s)
				g->sum = s;
			free(v);
			return emb_err_set(err, "out of memory");
		}
		memcpy(k, key, klen);
		free(g->key);
		g->key = k;
		g->keylen = klen;
		g->sum = s;
		g->dim = (int)cols;
		for (i = 0; i < g->dim; i++)
			g->sum[i] = 0;
		/* a copy of the first record: its fields head the group's */
		g->line.len = 0;
		emb_out_begin(&g->line, rec, NULL);
		emb_out_end(&g->line);
		if (emb_buf_failed(&g->line) ||
		    emb_record_parse(g->first, g->line.p, g->line.len - 1, err) < 0) {
			free(v);
			return emb_err_set(err, "out of memory");
		}
	}
	for (i = 0; i < g->dim; i++)
		g->sum[i] += v[i];
	g->count++;
	free(v);
	return 0;
}

int emb_group_finish(emb_group *g, emb_buf *b, int b64, emb_err *err)
{
	return group_write(g, b, b64, err);
}
