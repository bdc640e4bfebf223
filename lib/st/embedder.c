/*
 * embedder.c - emb_embedder, the public API of lib/emb.h: emb-encode
 * --pool's computation in one call, over the text front end and the
 * pooling of embed.c; and emb_forward_pool, the one batch-forward-then-
 * pool loop that emb-encode shares.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "st/st.h"
#include "st/embed.h"

/* ------------------------------------------------------------------ */
/* emb_embedder                                                        */

/* tokens per forward pass and sequences per pass at most (emb-encode's
 * defaults, EMB_BATCH_TOKENS in tool/emb-tool.h, a layer above this
 * one; results do not depend on either) */
#define EMBED_BATCH_TOKENS 4096
#define EMBED_BATCH_SEQS 4096

struct emb_embedder {
	emb_model *m;
	emb_text_tok tt;
	emb_pool_spec spec;
	int hidden, dim;
	float *scratch;         /* (tokens, hidden) of one pass */
	size_t scratch_cap;
	emb_seq *seqs;          /* (EMBED_BATCH_SEQS) */
	emb_encoding *encs;     /* (EMBED_BATCH_SEQS) */
	size_t *skip;           /* (EMBED_BATCH_SEQS) prompt lengths */
};

static int fail_msg(char *err, size_t errsz, const emb_err *e)
{
	if (err && errsz)
		snprintf(err, errsz, "%s", e->msg);
	return -1;
}

void emb_embedder_opts_init(emb_embedder_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->normalize = -1;
}

const char *emb_version(void)
{
	return EMB_VERSION;
}

void emb_embedder_free(emb_embedder *e)
{
	if (!e)
		return;
	for (int i = 0; e->encs && i < EMBED_BATCH_SEQS; i++)
		emb_encoding_release(&e->encs[i]);
	free(e->encs);
	free(e->seqs);
	free(e->skip);
	free(e->scratch);
	if (e->tt.tok || e->tt.prompt || e->tt.sm)
		emb_text_tok_release(&e->tt);
	emb_model_free(e->m);
	free(e);
}

int emb_embedder_load(emb_embedder **out, const char *dir,
                      const emb_embedder_opts *o, char *err, size_t errsz)
{
	emb_embedder_opts defaults;
	emb_model_opts mo;
	emb_text_opts to;
	emb_embedder *e;
	emb_err er = { "" };
	int full;

	*out = NULL;
	if (!o) {
		emb_embedder_opts_init(&defaults);
		o = &defaults;
	}
	if (!dir) {
		emb_err_set(&er, "no model directory");
		return fail_msg(err, errsz, &er);
	}
	if (o->dim < 0 || o->normalize < -1 || o->normalize > 1 ||
	    o->max_length < -1 || o->threads < 0 ||
	    o->precision < EMB_PRECISION_FP32 ||
	    o->precision > EMB_PRECISION_W8A8_SMOOTH) {
		emb_err_set(&er, "bad option (dim, normalize, max_length, "
		            "threads or precision)");
		return fail_msg(err, errsz, &er);
	}
	if (!(e = calloc(1, sizeof(*e))) ||
	    !(e->seqs = calloc(EMBED_BATCH_SEQS, sizeof(*e->seqs))) ||
	    !(e->encs = calloc(EMBED_BATCH_SEQS, sizeof(*e->encs))) ||
	    !(e->skip = calloc(EMBED_BATCH_SEQS, sizeof(*e->skip)))) {
		emb_embedder_free(e);
		emb_err_set(&er, "out of memory");
		return fail_msg(err, errsz, &er);
	}
	for (int i = 0; i < EMBED_BATCH_SEQS; i++)
		emb_encoding_init(&e->encs[i]);
	memset(&mo, 0, sizeof(mo));
	mo.threads = o->threads;
	/* the values emb_prec_from_enum reads */
	_Static_assert(EMB_PRECISION_FP32 == 0 && EMB_PRECISION_BF16 == 1 &&
	               EMB_PRECISION_W8 == 2 && EMB_PRECISION_W8A8 == 3 &&
	               EMB_PRECISION_W8A8_SMOOTH == 4, "enum emb_precision");
	if (emb_prec_from_enum(&mo.prec, o->precision, &er) < 0)
		goto fail;
	memset(&to, 0, sizeof(to));
	to.max_length = o->max_length > 0 ? o->max_length : 0;
	to.no_truncate = o->max_length < 0;
	to.prompt = o->prompt;
	to.prompt_name = o->prompt_name;
	to.no_prompt = o->no_prompt;
	if ((full = emb_static_detect(dir, &er)) < 0)
		goto fail;
	if (full != EMB_STATIC_NONE) {  /* a static model: no transformer */
		if (o->precision != EMB_PRECISION_FP32) {
			emb_err_set(&er, "%s: a static embedding model has no precision modes",
			            dir);
			goto fail;
		}
		if (emb_text_tok_init(&e->tt, dir, &to, 0, &er) != 0)
			goto fail;
		e->hidden = emb_static_dim(e->tt.sm);
		emb_pool_spec_static(&e->spec, e->tt.sm, &e->tt.st, o->normalize,
		                     o->dim);
	} else {
		if (emb_model_load(&e->m, dir, &mo, &er) < 0)
			goto fail;
		e->hidden = emb_model_hidden_size(e->m);
		if (emb_text_tok_init(&e->tt, dir, &to,
		                      emb_model_max_positions(e->m), &er) != 0)
			goto fail;
		emb_pool_spec_model(&e->spec, &e->tt.st, o->normalize, o->dim);
	}
	full = emb_pool_spec_dim(&e->spec, e->hidden);
	if (full <= 0) {
		emb_err_set(&er, "%s: invalid pooling for hidden size %d", dir,
		            e->hidden);
		goto fail;
	}
	if (o->dim > full) {
		emb_err_set(&er, "dim %d is larger than the embedding dimension %d",
		            o->dim, full);
		goto fail;
	}
	e->dim = o->dim > 0 ? o->dim : full;
	*out = e;
	return 0;
fail:
	emb_embedder_free(e);
	return fail_msg(err, errsz, &er);
}

int emb_embedder_dim(const emb_embedder *e)
{
	return e->dim;
}

int emb_embedder_max_length(const emb_embedder *e)
{
	return (int)e->tt.opts.max_length;
}

int emb_embedder_tokenize(const emb_embedder *e, int32_t **ids, size_t *n,
                          const char *text, size_t len, char *err,
                          size_t errsz)
{
	emb_encoding enc;
	emb_err er = { "" };
	size_t pl;

	*ids = NULL;
	*n = 0;
	emb_encoding_init(&enc);
	if (emb_text_tok_text(&enc, &pl, &e->tt, text, len, NULL, 0, &er) < 0) {
		emb_encoding_release(&enc);
		return fail_msg(err, errsz, &er);
	}
	if (!(*ids = malloc((enc.len + 1) * sizeof(int32_t)))) {
		emb_encoding_release(&enc);
		emb_err_set(&er, "out of memory");
		return fail_msg(err, errsz, &er);
	}
	memcpy(*ids, enc.ids, enc.len * sizeof(int32_t));
	*n = enc.len;
	emb_encoding_release(&enc);
	return 0;
}


/*
 * emb_forward_pool's pooling when SPEC has Dense modules: the pooled
 * vectors of up to emb_dense_chunk sequences through them as one GEMM on the
 * model's threads (the same bits as one at a time, emb_dense_rows),
 * then each sequence's rest and EACH in order.  A sequence whose
 * pooling fails ends the run after those before it have gone to EACH.
 */
static int pool_dense(emb_model *m, const float *tok, const emb_seq *seqs,
                      int k, const emb_pool_spec *spec, const size_t *skip,
                      emb_rows_fn each, void *u, int *at, emb_err *err)
{
	int h = emb_model_hidden_size(m), pw = emb_pool_width(spec, h), chunk;
	emb_err perr = { "" };
	size_t off = 0;

	if (pw <= 0)
		pw = 1;
	chunk = emb_dense_chunk(spec->dense, spec->n_dense, pw);
	for (int i0 = 0; i0 < k; i0 += chunk) {
		int i1 = i0 + chunk < k ? i0 + chunk : k, ok = i1, pd = pw;
		float *x = malloc((size_t)(i1 - i0) * (size_t)pw * sizeof(float));
		*at = -1;       /* an error of the chunk as a whole */
		if (!x)
			return emb_err_set(err, "out of memory");
		// tok rows of sequences i0..i1-1 -> x (i1-i0, pw), pooled
		for (int i = i0; i < i1; i++) {
			float *v = x + (size_t)(i - i0) * (size_t)pw;
			int w = emb_pool_into(v, spec, tok + off * (size_t)h,
			                      seqs[i].len, h, skip ? (int)skip[i] : 0,
			                      &perr);
			off += (size_t)seqs[i].len;
			if (w < 0 || emb_pool_check(spec, w, &perr) < 0) {
				ok = i;
				break;
			}
		}
		// x (ok-i0, pw) -> x (ok-i0, pd): the Dense modules
		if (ok > i0 && emb_dense_rows(&x, &pd, ok - i0, spec->dense,
		                              spec->n_dense, m, err) < 0)
			return -1;
		for (int i = i0; i < ok; i++) {
			float *row = malloc((size_t)pd * sizeof(float)), *v;
			int vn, rc;
			*at = i;
			if (!row) {
				free(x);
				return emb_err_set(err, "out of memory");
			}
			memcpy(row, x + (size_t)(i - i0) * (size_t)pd,
			       (size_t)pd * sizeof(float));
			// row (pd) -> v (vn): LayerNorm, Normalize, --dim
			if (emb_pool_post(&v, &vn, spec, row, pd, err) < 0) {
				free(x);
				return -1;
			}
			rc = each(u, i, &v, vn, err);
			free(v);
			if (rc < 0) {
				free(x);
				return -1;
			}
		}
		free(x);
		if (ok < i1) {
			*at = ok;
			*err = perr;
			return -1;
		}
	}
	*at = -1;
	return 0;
}

int emb_forward_pool(emb_model *m, float **scratch, size_t *cap,
                     const emb_seq *seqs, int k, const emb_pool_spec *spec,
                     const size_t *skip, emb_rows_fn each, void *u,
                     int *at, emb_err *err)
{
	size_t h = (size_t)emb_model_hidden_size(m), tokens = 0, off = 0;

	*at = -1;
	for (int i = 0; i < k; i++)
		tokens += (size_t)seqs[i].len;
	if (tokens > SIZE_MAX / sizeof(float) / (h ? h : 1))
		return emb_err_set(err, "out of memory");
	if (tokens * h > *cap) {
		float *p = realloc(*scratch, tokens * h * sizeof(float));
		if (!p)
			return emb_err_set(err, "out of memory");
		*scratch = p;
		*cap = tokens * h;
	}
	// forward: seqs (k) -> scratch (tokens, hidden)
	if (emb_model_forward(m, *scratch, seqs, k, err) < 0)
		return -1;
	if (spec && spec->n_dense && !spec->sm)
		return pool_dense(m, *scratch, seqs, k, spec, skip, each, u, at,
		                  err);
	for (int i = 0; i < k; i++) {
		float *tok = *scratch + off * h, *v = tok;
		int vn = seqs[i].len * (int)h, rc;
		off += (size_t)seqs[i].len;
		*at = i;
		// tok (len, hidden) -> v (vn): pooling and the modules after it
		if (spec && emb_pool_apply(&v, &vn, spec, tok, seqs[i].len,
		                           (int)h, skip ? (int)skip[i] : 0, err) < 0)
			return -1;
		rc = each(u, i, &v, vn, err);
		if (spec)
			free(v);
		if (rc < 0)
			return -1;
	}
	*at = -1;
	return 0;
}

typedef struct embed_rows {
	const emb_embedder *e;
	float *out;             /* (k, e->dim) */
} embed_rows;

static int embed_row(void *u, int i, float **v, int vn, emb_err *err)
{
	const embed_rows *r = u;

	if (vn != r->e->dim)
		return emb_err_set(err, "%d values, want %d", vn, r->e->dim);
	memcpy(r->out + (size_t)i * (size_t)vn, *v, (size_t)vn * sizeof(float));
	return 0;
}

/* the K sequences in e->seqs -> rows of out (K, e->dim) */
static int embed_pass(emb_embedder *e, float *out, int k, size_t first,
                      emb_err *er)
{
	embed_rows r = { e, out };
	char m[EMB_ERR_MAX];
	int at;

	if (emb_forward_pool(e->m, &e->scratch, &e->scratch_cap, e->seqs, k,
	                     &e->spec, e->skip, embed_row, &r, &at, er) == 0)
		return 0;
	if (at < 0)
		return -1;
	snprintf(m, sizeof(m), "%s", er->msg);
	return emb_err_set(er, "text %zu: %s", first + (size_t)at, m);
}

/* emb_embed with a static model: each text tokenized and averaged */
static int embed_static(emb_embedder *e, float *out, const char *const *texts,
                        const size_t *lens, size_t n, emb_err *er)
{
	emb_encoding *enc = &e->encs[0];
	size_t pl;
	float *v;
	int vn;
	char m[EMB_ERR_MAX];

	for (size_t i = 0; i < n; i++) {
		if (!texts[i])
			return emb_err_set(er, "text %zu is NULL", i);
		if (emb_text_tok_text(enc, &pl, &e->tt, texts[i],
		                      lens ? lens[i] : strlen(texts[i]), NULL, 0,
		                      er) < 0)
			goto bad;
		if (!(v = malloc((size_t)e->hidden * sizeof(float))))
			return emb_err_set(er, "out of memory");
		// ids (len) -> v (hidden) -> the modules after it
		emb_static_mean(v, e->tt.sm, enc->ids, enc->len);
		if (emb_pool_finish(&v, &vn, &e->spec, v, e->hidden, er) < 0)
			goto bad;
		memcpy(out + i * (size_t)e->dim, v, (size_t)e->dim * sizeof(float));
		free(v);
		continue;
bad:
		snprintf(m, sizeof(m), "%s", er->msg);
		return emb_err_set(er, "text %zu: %s", i, m);
	}
	return 0;
}

int emb_embed(emb_embedder *e, float *out, const char *const *texts,
              const size_t *lens, size_t n, char *err, size_t errsz)
{
	emb_err er = { "" };
	size_t i = 0, first = 0, tokens = 0;
	int k = 0;

	if (e->tt.sm)
		return embed_static(e, out, texts, lens, n, &er) < 0 ?
		       fail_msg(err, errsz, &er) : 0;
	while (i < n) {
		emb_encoding *enc = &e->encs[k];
		size_t len;
		char m[EMB_ERR_MAX];

		if (!texts[i]) {
			emb_err_set(&er, "text %zu is NULL", i);
			return fail_msg(err, errsz, &er);
		}
		len = lens ? lens[i] : strlen(texts[i]);
		if (emb_text_tok_text(enc, &e->skip[k], &e->tt, texts[i], len,
		                      NULL, 0, &er) < 0) {
			snprintf(m, sizeof(m), "%s", er.msg);
			emb_err_set(&er, "text %zu: %s", i, m);
			return fail_msg(err, errsz, &er);
		}
		if (enc->len == 0 || enc->len > INT_MAX) {
			emb_err_set(&er, "text %zu gives no tokens", i);
			return fail_msg(err, errsz, &er);
		}
		e->seqs[k].ids = enc->ids;
		e->seqs[k].type_ids = enc->type_ids;
		e->seqs[k].len = (int)enc->len;
		if (emb_model_check(e->m, &e->seqs[k], &er) < 0) {
			snprintf(m, sizeof(m), "%s", er.msg);
			emb_err_set(&er, "text %zu: %s", i, m);
			return fail_msg(err, errsz, &er);
		}
		len = enc->len;
		/* this text opens the next pass when the budget is spent */
		if (k > 0 && tokens + len > EMBED_BATCH_TOKENS) {
			emb_seq s = e->seqs[k];
			size_t sk = e->skip[k];
			emb_encoding tmp = e->encs[k];
			if (embed_pass(e, out + first * (size_t)e->dim, k, first,
			               &er) < 0)
				return fail_msg(err, errsz, &er);
			/* move it to slot 0 (swap the encodings: no copy) */
			e->encs[k] = e->encs[0];
			e->encs[0] = tmp;
			e->seqs[0] = s;
			e->skip[0] = sk;
			first = i;
			k = 0;
			tokens = 0;
		}
		tokens += len;
		k++;
		i++;
		if (k == EMBED_BATCH_SEQS) {
			if (embed_pass(e, out + first * (size_t)e->dim, k, first,
			               &er) < 0)
				return fail_msg(err, errsz, &er);
			first = i;
			k = 0;
			tokens = 0;
		}
	}
	if (k > 0 && embed_pass(e, out + first * (size_t)e->dim, k, first,
	                        &er) < 0)
		return fail_msg(err, errsz, &er);
	return 0;
}
