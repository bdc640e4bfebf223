/*
 * config.c - typed reads of config.json fields, with the file and key
 * named in every message.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"
/* ------------------------------------------------------------------ */
/* config.json fields                                                  */

int emb_cfg_int(int *out, const json_t *cfg, const char *key, int def,
                int min, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	const int max = 1 << 24;

	if (!v || json_is_null(v)) {
		if (def < 0)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return emb_err_set(err, "config.json: field '%s' must be an "
		                   "integer from %d to %d", key, min, max);
	*out = (int)json_integer_value(v);
	return 0;
}

int emb_cfg_float(float *out, const json_t *cfg, const char *key,
                  double def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		*out = (float)def;
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return emb_err_set(err, "config.json: field '%s' must be a number",
		                   key);
	*out = (float)json_number_value(v);
	return 0;
}

int emb_cfg_str(const char **out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		if (!def)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return emb_err_set(err, "config.json: field '%s' must be a string",
		                   key);
	*out = json_string_value(v);
	return 0;
}

int emb_cfg_act(int *out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	static const emb_named acts[] = {
		{ "gelu", EMB_ACT_GELU },
		{ "gelu_new", EMB_ACT_GELU_TANH },
		{ "gelu_pytorch_tanh", EMB_ACT_GELU_TANH },
		{ "relu", EMB_ACT_RELU },
		{ "silu", EMB_ACT_SILU },
		{ "swish", EMB_ACT_SILU },
		{ "tanh", EMB_ACT_TANH },
	};
	const char *s;

	if (emb_cfg_str(&s, cfg, key, def, err))
		return -1;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (!strcmp(s, acts[i].name)) {
			*out = acts[i].value;
			return 0;
		}
	return emb_err_set(err, "config.json: field '%s' value '%s' is not "
	                   "supported (supported: gelu, gelu_new, "
	                   "gelu_pytorch_tanh, relu, silu, tanh)", key, s);
}

int emb_cfg_bool(int *out, const json_t *cfg, const char *key, int def,
                 emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	*out = def;
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return emb_err_set(err, "config.json: field '%s' must be true "
			                   "or false", key);
		*out = json_is_true(v);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* fields every family reads                                           */

int emb_cfg_dims(emb_model *m, const json_t *cfg, const char *hidden,
                 const char *layers, const char *heads, const char *inter,
                 int inter_def, emb_err *err)
{
	if (emb_cfg_int(&m->hidden, cfg, hidden, -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, layers, -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, heads, -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, inter, inter_def, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err))
		return -1;
	m->net.kv_heads = m->heads;
	return 0;
}

int emb_cfg_head_dim(emb_model *m, const char *hkey, const char *nkey,
                     emb_err *err)
{
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field '%s' (%d) must be a "
		                   "multiple of '%s' (%d)", hkey, m->hidden, nkey,
		                   m->heads);
	m->head_dim = m->hidden / m->heads;
	m->net.scale = 1.0f / sqrtf((float)m->head_dim);
	return 0;
}

int emb_cfg_null(const json_t *cfg, const char *key, const char *note,
                 emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (v && !json_is_null(v))
		return emb_err_set(err, "config.json: field '%s'%s is not supported "
		                   "(supported: null)", key, note);
	return 0;
}

int emb_cfg_positive(float v, const char *key, emb_err *err)
{
	if (!(v > 0))
		return emb_err_set(err, "config.json: field '%s' must be positive",
		                   key);
	return 0;
}

int emb_cfg_rope_dim(const emb_model *m, const char *pre, const char *post,
                     emb_err *err)
{
	if (m->head_dim % 2 || m->head_dim > 1024)
		return emb_err_set(err, "config.json: %s%d%s must be even and at "
		                   "most 1024", pre, m->head_dim, post);
	return 0;
}

int emb_cfg_decoder(emb_model *m, const json_t *cfg, emb_err *err)
{
	emb_net *d = &m->net;
	float theta;

	if (emb_cfg_dims(m, cfg, "hidden_size", "num_hidden_layers",
	                 "num_attention_heads", "intermediate_size", -1, err))
		return -1;
	if (emb_cfg_int(&d->kv_heads, cfg, "num_key_value_heads", m->heads, 1,
	                err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", -1, 1, err) ||
	    emb_cfg_float(&m->eps, cfg, "rms_norm_eps", 1e-6, err) ||
	    emb_cfg_float(&theta, cfg, "rope_theta", 10000, err) ||
	    emb_cfg_bool(&d->bias_qkv, cfg, "attention_bias", 0, err))
		return -1;
	if (m->hidden % m->heads && !json_object_get(cfg, "head_dim"))
		return emb_err_set(err, "config.json: missing field 'head_dim'");
	if (emb_cfg_int(&m->head_dim, cfg, "head_dim", m->hidden / m->heads, 2,
	                err))
		return -1;
	if (emb_cfg_rope_dim(m, "field 'head_dim' (", ")", err))
		return -1;
	if (m->heads % d->kv_heads)
		return emb_err_set(err, "config.json: field 'num_attention_heads' "
		                   "(%d) must be a multiple of 'num_key_value_heads' "
		                   "(%d)", m->heads, d->kv_heads);
	if (emb_cfg_null(cfg, "rope_scaling", "", err) ||
	    emb_cfg_positive(theta, "rope_theta", err))
		return -1;
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'rms_norm_eps' must not "
		                   "be negative");
	d->scale = 1.0f / sqrtf((float)m->head_dim);
	emb_rope_inv_freq(d->inv_global, m->head_dim, theta);
	d->place = EMB_PLACE_PRE;
	d->ffn = EMB_FFN_GLU;
	d->pos = EMB_POS_ROPE;
	d->norm_kind = EMB_NORM_RMS;
	d->bias_o = d->bias_qkv;
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->usable_pos = m->max_pos;
	return emb_net_layers(m, err);
}
