/*
 * embed.c - text in, sentence embedding out: the text front end shared
 * by the emb-* tools (prompts, do_lower_case, the default max length),
 * Pooling + Dense + Normalize + Matryoshka, and emb_embedder, the public
 * API of lib/emb.h (emb-encode --pool's computation in one call).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <utf8proc.h>

#include "st/st.h"
#include "st/embed.h"

static char *lower_utf8(const char *s, size_t n, size_t *outn);

/* ------------------------------------------------------------------ */
/* the text front end                                                  */

static int json_int_field(const json_t *o, const char *key, long long *v)
{
	json_t *x = json_object_get(o, key);

	if (!x)
		return 0;
	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return 1;
	}
	if (json_is_real(x)) {
		double d = json_real_value(x);
		*v = d > 9e18 ? (long long)9e18 : (long long)d;
		return 1;
	}
	return 0;
}

static json_t *load_json(const char *dir, const char *name, int *missing,
                         emb_err *err)
{
	char path[4096];
	json_t *j;

	*missing = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* no tree of tokenizer_config.json's added_tokens_decoder (1.1 MB
	 * in Gemma 3's), never read */
	j = emb_json_file_load_skip(dir, path, (size_t)16 << 20,
	                            JSON_DECODE_INT_AS_REAL,
	                            "added_tokens_decoder", err);
	if (!j && errno == ENOENT)
		*missing = 1;
	return j;
}

int emb_default_max_length(const char *dir, const emb_st_config *st,
                           emb_err *err)
{
	long long max = 0, v;
	json_t *j;
	int missing;

	if (st && st->max_seq_length > 0)
		max = st->max_seq_length;
	if (max <= 0) {
		j = load_json(dir, "tokenizer_config.json", &missing, err);
		if (!j && !missing)
			return -1;
		if (j && json_is_object(j) &&
		    json_int_field(j, "model_max_length", &v) && v > 0 && v < 1000000)
			max = v;
		json_decref(j);
	}
	j = load_json(dir, "config.json", &missing, err);
	if (!j && !missing)
		return -1;
	if (j && json_is_object(j) &&
	    json_int_field(j, "max_position_embeddings", &v) && v > 0) {
		/* the family's own reading (positions after padding_idx for
		 * RoBERTa-like ones); max_position_embeddings for the rest */
		long long cap = v;
		char path[4096];
		json_t *ints;
		int fam;
		snprintf(path, sizeof(path), "%s/config.json", dir);
		/* integers as the model loader reads them */
		ints = emb_json_file_load(dir, path, (size_t)16 << 20,
		                          JSON_REJECT_DUPLICATES, NULL);
		fam = emb_model_config_positions(ints);
		json_decref(ints);
		if (fam > 0)
			cap = fam;
		if (cap > 0 && (max <= 0 || cap < max))
			max = cap;
	}
	json_decref(j);
	if (max > (1 << 30))
		max = 1 << 30;
	return (int)max;
}

/* the positions DIR/config.json gives its family (as the model loader
 * reads them), 0 when there is no such config */
static int config_positions(const char *dir)
{
	char path[4096];
	json_t *ints;
	int n;

	if (snprintf(path, sizeof(path), "%s/config.json", dir) >= (int)sizeof(path) ||
	    access(path, F_OK) != 0)
		return 0;
	ints = emb_json_file_load(dir, path, (size_t)16 << 20,
	                          JSON_REJECT_DUPLICATES, NULL);
	n = emb_model_config_positions(ints);
	json_decref(ints);
	return n > 0 ? n : 0;
}

/* the prompt O asks for (or the model's default) into *prompt
 * (borrowed from O or t->st, NULL: none); EMB_TEXT_BAD_OPTION (err) for
 * a name the model does not have */
static int resolve_prompt(const char **prompt_out, const emb_text_tok *t,
                          const char *dir, const emb_text_opts *o,
                          emb_err *err)
{
	const char *prompt = NULL;

	if (o->prompt) {
		prompt = o->prompt;
	} else if (o->prompt_name) {
		prompt = emb_st_config_prompt(&t->st, o->prompt_name);
		if (!prompt) {
			emb_buf b;
			size_t i;
			emb_buf_init(&b);
			for (i = 0; i < t->st.n_prompts; i++) {
				if (i)
					emb_buf_add(&b, ", ", 2);
				emb_buf_add(&b, t->st.prompts[i].name,
				            strlen(t->st.prompts[i].name));
			}
			emb_buf_add(&b, "", 1);
			emb_err_set(err, "unknown prompt name '%s' (known: %s; the prompts of %s/config_sentence_transformers.json)",
			            o->prompt_name, b.len > 1 && !emb_buf_failed(&b) ?
			            b.p : "none", dir);
			emb_buf_release(&b);
			return EMB_TEXT_BAD_OPTION;
		}
	} else if (!o->no_prompt && t->st.default_prompt_name) {
		prompt = emb_st_config_prompt(&t->st, t->st.default_prompt_name);
	}
	*prompt_out = prompt;
	return 0;
}

/* the rest of emb_text_tok_init for the static model t->sm: its
 * tokenizer, max length and prompt (the prompt's tokens counted without
 * specials: a static model adds none) */
static int static_tok(emb_text_tok *t, const char *dir,
                      const emb_text_opts *o, emb_err *err)
{
	const char *prompt = NULL;
	int rc = -1;

	t->tok = (emb_tokenizer *)emb_static_tokenizer(t->sm);
	t->opts.no_special = 1;
	t->opts.max_length = o->no_truncate ? 0 : o->max_length > 0 ?
	                     (size_t)o->max_length : emb_static_max_length(t->sm);
	t->lower = t->st.do_lower_case;
	if ((rc = resolve_prompt(&prompt, t, dir, o, err)) < 0)
		goto fail;
	rc = -1;
	if (prompt && *prompt) {
		emb_encoding enc;
		if (!(t->prompt = strdup(prompt))) {
			emb_err_set(err, "out of memory");
			goto fail;
		}
		t->prompt_len = strlen(prompt);
		emb_encoding_init(&enc);
		if (emb_static_tokenize(&enc, t->sm, t->prompt, t->prompt_len, 0,
		                        err) < 0) {
			emb_encoding_release(&enc);
			goto fail;
		}
		t->prompt_tokens = enc.len;
		emb_encoding_release(&enc);
	}
	return 0;
fail:
	emb_text_tok_release(t);
	return rc;
}

int emb_text_tok_init(emb_text_tok *t, const char *dir,
                      const emb_text_opts *o, int model_max, emb_err *err)
{
	static const emb_text_opts defaults;
	const char *prompt = NULL;
	int max, rc = -1;

	if (!o)
		o = &defaults;
	memset(t, 0, sizeof(*t));
	if ((o->tok_only ? emb_st_config_load_text(&t->st, dir, err) :
	                   emb_st_config_load(&t->st, dir, err)) < 0)
		return -1;
	if ((rc = emb_static_detect(dir, err)) != EMB_STATIC_NONE) {
		rc = -1;
		if (emb_static_load(&t->sm, dir, err) < 0)
			goto fail;
		return static_tok(t, dir, o, err);
	}
	rc = -1;
	if (emb_tokenizer_load(&t->tok, dir, err) < 0)
		goto fail;
	t->lower = t->st.do_lower_case;
	/* without the model loaded (emb-tokenize): the limit its config
	 * says, so that every tool takes the same --max-length */
	if (model_max <= 0)
		model_max = config_positions(dir);
	if (o->no_truncate) {
		max = 0;
	} else if (o->max_length > 0) {
		if (model_max > 0 && o->max_length > model_max) {
			emb_err_set(err, "max length %ld is above the model's limit "
			            "of %d tokens (%s/config.json "
			            "max_position_embeddings)", o->max_length,
			            model_max, dir);
			rc = EMB_TEXT_BAD_OPTION;
			goto fail;
		}
		max = (int)o->max_length;
	} else {
		max = emb_default_max_length(dir, &t->st, err);
		if (max < 0)
			goto fail;
		if (model_max > 0 && (max == 0 || max > model_max))
			max = model_max;
	}
	t->opts.max_length = (size_t)max;
	if ((rc = resolve_prompt(&prompt, t, dir, o, err)) < 0)
		goto fail;
	rc = -1;
	if (prompt && *prompt) {
		emb_encoding enc;
		int trc;
		t->prompt = strdup(prompt);
		t->prompt_len = strlen(prompt);
		if (!t->prompt) {
			emb_err_set(err, "out of memory");
			goto fail;
		}
		/* as sentence-transformers: tokens of the prompt alone, minus
		 * the trailing special token; ST lowercases the prompt too
		 * (do_lower_case) */
		emb_encoding_init(&enc);
		if (t->lower) {
			size_t ln;
			char *lp = lower_utf8(t->prompt, t->prompt_len, &ln);
			if (!lp) {
				emb_err_set(err, "out of memory");
				goto fail;
			}
			trc = emb_tokenize(&enc, t->tok, lp, ln, NULL, 0, &t->opts,
			                   err);
			free(lp);
		} else {
			trc = emb_tokenize(&enc, t->tok, t->prompt, t->prompt_len,
			                   NULL, 0, &t->opts, err);
		}
		if (trc < 0) {
			char m[EMB_ERR_MAX];
			snprintf(m, sizeof(m), "%s", err ? err->msg : "");
			emb_err_set(err, "prompt: %s", m);
			emb_encoding_release(&enc);
			goto fail;
		}
		t->prompt_tokens = enc.len > 0 ? enc.len - 1 : 0;
		emb_encoding_release(&enc);
	}
	return 0;
fail:
	emb_text_tok_release(t);
	return rc;
}

void emb_text_tok_release(emb_text_tok *t)
{
	if (t->sm)
		emb_static_free(t->sm);
	else
		emb_tokenizer_free(t->tok);
	emb_st_config_release(&t->st);
	free(t->prompt);
	memset(t, 0, sizeof(*t));
}

/* Python str.lower() per code point (utf8proc simple mappings) */
static char *lower_utf8(const char *s, size_t n, size_t *outn)
{
	char *o = malloc(4 * n + 1);
	size_t i = 0, k = 0;

	if (!o)
		return NULL;
	while (i < n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(n - i), &cp);
		if (l <= 0) {
			o[k++] = s[i++];
			continue;
		}
		i += (size_t)l;
		if (cp == 0x130) {      /* İ -> i + combining dot above */
			k += (size_t)utf8proc_encode_char('i', (utf8proc_uint8_t *)o + k);
			cp = 0x307;
		} else {
			cp = utf8proc_tolower(cp);
		}
		k += (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)o + k);
	}
	o[k] = 0;
	*outn = k;
	return o;
}

int emb_text_tok_text(emb_encoding *enc, size_t *prompt_length,
                      const emb_text_tok *t, const char *text, size_t tlen,
                      const char *pair, size_t plen, emb_err *err)
{
	char *buf = NULL, *lt = NULL, *lp = NULL;
	int rc;

	*prompt_length = 0;
	if (t->prompt) {
		buf = malloc(t->prompt_len + tlen + 1);
		if (!buf)
			return emb_err_set(err, "out of memory");
		memcpy(buf, t->prompt, t->prompt_len);
		memcpy(buf + t->prompt_len, text, tlen);
		buf[t->prompt_len + tlen] = 0;
		text = buf;
		tlen += t->prompt_len;
	}
	if (t->lower) {
		lt = lower_utf8(text, tlen, &tlen);
		if (pair)
			lp = lower_utf8(pair, plen, &plen);
		if (!lt || (pair && !lp)) {
			free(buf);
			free(lt);
			free(lp);
			return emb_err_set(err, "out of memory");
		}
		text = lt;
		if (pair)
			pair = lp;
	}
	if (t->sm && pair)
		rc = emb_err_set(err, "a static embedding model embeds single texts: field 'text_pair' is not supported");
	else if (t->sm)
		rc = emb_static_tokenize(enc, t->sm, text, tlen, t->opts.max_length,
		                         err);
	else
		rc = emb_tokenize(enc, t->tok, text, tlen, pair, plen, &t->opts,
		                  err);
	free(buf);
	free(lt);
	free(lp);
	if (rc < 0)
		return -1;
	if (t->prompt)
		*prompt_length = t->prompt_tokens;
	return 0;
}

int emb_text_tok_record(emb_encoding *enc, size_t *prompt_length,
                        const emb_text_tok *t, const emb_record *rec,
                        emb_err *err)
{
	const char *text, *pair = NULL;
	size_t tlen, plen = 0;
	int rc;

	*prompt_length = 0;
	if (t->pretok) {        /* a record tokenized beforehand */
		rc = t->pretok(t->pretok_ctx, enc, prompt_length, rec, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	if (emb_record_get_string(rec, "text", &text, &tlen, err) < 0)
		return -1;
	if (emb_record_has(rec, "text_pair") &&
	    emb_record_get_string(rec, "text_pair", &pair, &plen, err) < 0)
		return -1;
	rc = emb_text_tok_text(enc, prompt_length, t, text, tlen, pair, plen,
	                       err);
	emb_record_drop_strings(rec);   /* a long text: not held twice */
	return rc;
}

/* ------------------------------------------------------------------ */
/* pooling and the modules after it                                    */

void emb_pool_spec_model(emb_pool_spec *p, const emb_st_config *st,
                         int normalize, int dim)
{
	memset(p, 0, sizeof(*p));
	p->modes = st->pool_modes ? st->pool_modes : EMB_POOL_MEAN;
	p->normalize = normalize >= 0 ? normalize : st->normalize;
	p->include_prompt = st->include_prompt;
	p->dim = dim;
	p->dense = st->dense;
	p->n_dense = st->n_dense;
}

void emb_pool_spec_static(emb_pool_spec *p, const emb_static *sm,
                          const emb_st_config *st, int normalize, int dim)
{
	emb_pool_spec_model(p, st, normalize, dim);
	p->modes = EMB_POOL_MEAN;
	p->include_prompt = 1;
	p->in_dim = emb_static_dim(sm);
	p->sm = sm;
	if (normalize < 0 && emb_static_format(sm) == EMB_STATIC_M2V)
		p->normalize = emb_static_normalizes(sm);
}

int emb_pool_spec_dim(const emb_pool_spec *p, int d)
{
	int pd = emb_pool_dim(p->modes, d);

	if (p->n_dense)
		pd = p->dense[p->n_dense - 1].out;
	return pd;
}

int emb_record_prompt_length(int *out, const emb_record *rec, emb_err *err)
{
	const char *raw;
	size_t k;
	char *end;
	long x;

	*out = 0;
	raw = emb_record_raw(rec, "prompt_length", &k);
	if (!raw)
		return 0;
	errno = 0;
	x = strtol(raw, &end, 10);
	if (errno || end != raw + k || x < 0 || x > INT_MAX)
		return emb_err_set(err, "field 'prompt_length' must be a non-negative integer");
	*out = (int)x;
	return 0;
}

int emb_pool_apply(float **out, int *outn, const emb_pool_spec *p,
                   const float *tok, int n, int d, int prompt_length,
                   emb_err *err)
{
	int pd = emb_pool_dim(p->modes, d), skip = 0;
	float *v;

	*out = NULL;
	*outn = 0;
	if (p->in_dim > 0 && d != p->in_dim)
		return emb_err_set(err, "token embeddings have %d columns, the pooling config says %d",
		                   d, p->in_dim);
	if (pd <= 0)
		return emb_err_set(err, "invalid pooling for dimension %d", d);
	if (!p->include_prompt)
		skip = prompt_length;
	v = malloc((size_t)pd * sizeof(float));
	if (!v)
		return emb_err_set(err, "out of memory");
	if (p->sm) {
		// tok (n, d) -> v (d): the static model's own mean
		emb_static_mean_rows(v, p->sm, tok, (size_t)n);
	} else if (emb_pool(v, tok, n, d, p->modes, skip, err) < 0) {
		free(v);
		return -1;
	}
	return emb_pool_finish(out, outn, p, v, pd, err);
}

int emb_pool_finish(float **out, int *outn, const emb_pool_spec *p, float *v,
                    int pd, emb_err *err)
{
	int i;

	*out = NULL;
	*outn = 0;
	if ((p->n_dense && p->dense[0].in != pd) ||
	    (p->n_dense && p->dim > p->dense[p->n_dense - 1].out) ||
	    (!p->n_dense && p->dim > pd)) {
		if (p->n_dense && p->dense[0].in != pd)
			emb_err_set(err, "the pooled embedding has %d values, the Dense module takes %d",
			            pd, p->dense[0].in);
		else
			emb_err_set(err, "--dim %d is larger than the embedding dimension %d",
			            p->dim, p->n_dense ? p->dense[p->n_dense - 1].out : pd);
		free(v);
		return -1;
	}
	if (emb_dense_apply(&v, &pd, p->dense, p->n_dense, err) < 0)
		return -1;
	if (p->layer_norm) {    /* F.layer_norm(v, (pd,)), eps 1e-5 */
		double mean = 0, var = 0;
		for (i = 0; i < pd; i++)
			mean += v[i];
		mean /= pd;
		for (i = 0; i < pd; i++)
			var += (v[i] - mean) * (v[i] - mean);
		float m = (float)mean, r = (float)(1.0 / sqrt(var / pd + 1e-5));
		for (i = 0; i < pd; i++)
			v[i] = (v[i] - m) * r;
	}
	if (p->normalize) {
		if (p->sm && !p->n_dense)
			emb_static_normalize(v, p->sm, pd);
		else
			emb_normalize(v, pd);
	}
	if (p->dim > 0) {
		pd = p->dim;
		emb_normalize(v, pd);
	}
	for (i = 0; i < pd; i++) {
		if (!isfinite(v[i])) {
			free(v);
			return emb_err_set(err, "the embedding is not finite (NaN or infinity at %d)",
			                   i);
		}
	}
	*out = v;
	*outn = pd;
	return 0;
}

/* ------------------------------------------------------------------ */
/* emb_embedder                                                        */

/* tokens per forward pass and sequences per pass at most (emb-encode's
 * defaults; results do not depend on either) */
#define EMBED_BATCH_TOKENS 8192
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
