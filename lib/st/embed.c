/*
 * embed.c - text in, sentence embedding out: the text front end shared
 * by the emb-* tools (prompts, do_lower_case, the default max length),
 * and Pooling + Dense + Normalize + Matryoshka.  emb_embedder, the
 * public API of lib/emb.h, is in embedder.c.
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
	if (emb_dense_pack(t->st.dense, t->st.n_dense, err) < 0)
		goto fail;
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

int emb_pool_width(const emb_pool_spec *p, int d)
{
	return p->sm ? d : emb_pool_dim(p->modes, d);
}

int emb_pool_into(float *v, const emb_pool_spec *p, const float *tok, int n,
                  int d, int prompt_length, emb_err *err)
{
	int pd = emb_pool_width(p, d);

	if (p->in_dim > 0 && d != p->in_dim)
		return emb_err_set(err, "token embeddings have %d columns, the pooling config says %d",
		                   d, p->in_dim);
	if (pd <= 0)
		return emb_err_set(err, "invalid pooling for dimension %d", d);
	if (p->sm) {
		// tok (n, d) -> v (d): the static model's own mean
		emb_static_mean_rows(v, p->sm, tok, (size_t)n);
	} else if (emb_pool(v, tok, n, d, p->modes,
	                    p->include_prompt ? 0 : prompt_length, err) < 0) {
		return -1;
	}
	return pd;
}

int emb_pool_apply(float **out, int *outn, const emb_pool_spec *p,
                   const float *tok, int n, int d, int prompt_length,
                   emb_err *err)
{
	int pd = emb_pool_width(p, d);
	float *v;

	*out = NULL;
	*outn = 0;
	if (!(v = malloc((size_t)(pd > 0 ? pd : 1) * sizeof(float))))
		return emb_err_set(err, "out of memory");
	if (emb_pool_into(v, p, tok, n, d, prompt_length, err) < 0) {
		free(v);
		return -1;
	}
	return emb_pool_finish(out, outn, p, v, pd, err);
}

int emb_pool_check(const emb_pool_spec *p, int pd, emb_err *err)
{
	if (p->n_dense && p->dense[0].in != pd)
		return emb_err_set(err, "the pooled embedding has %d values, the Dense module takes %d",
		                   pd, p->dense[0].in);
	if ((p->n_dense && p->dim > p->dense[p->n_dense - 1].out) ||
	    (!p->n_dense && p->dim > pd))
		return emb_err_set(err, "--dim %d is larger than the embedding dimension %d",
		                   p->dim, p->n_dense ? p->dense[p->n_dense - 1].out : pd);
	return 0;
}

int emb_pool_finish(float **out, int *outn, const emb_pool_spec *p, float *v,
                    int pd, emb_err *err)
{
	*out = NULL;
	*outn = 0;
	if (emb_pool_check(p, pd, err) < 0) {
		free(v);
		return -1;
	}
	if (emb_dense_apply(&v, &pd, p->dense, p->n_dense, err) < 0)
		return -1;
	return emb_pool_post(out, outn, p, v, pd, err);
}

int emb_pool_post(float **out, int *outn, const emb_pool_spec *p, float *v,
                  int pd, emb_err *err)
{
	int i;

	*out = NULL;
	*outn = 0;
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
