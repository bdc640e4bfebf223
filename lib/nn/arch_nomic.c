/*
 * arch_nomic.c - nomic-bert (NomicBertModel: nomic-embed-text,
 * CodeRankEmbed), as contrastors / the remote modeling code computes it:
 *
 *   h = LayerNorm(word[id] + type[tt])          (emb_ln; no positions)
 *   per layer (post-norm, no biases by default):
 *     q, k, v = Wqkv h; q, k = RoPE(q, k)        (NeoX, rotary_emb_base)
 *     h = norm1(h + out_proj softmax(q k^T / sqrt(dh)) v)
 *     h = norm2(h + fc2(fc11(h) * silu(fc12(h))))
 *
 * Past max_trained_positions, rotary_scaling_factor enables dynamic NTK
 * scaling: base' = base * (f * len / max_trained - (f - 1))^(d / (d - 2)),
 * with len the sequence's own length.  Configs the forward does not
 * implement (prenorm, interleaved or partial rotary, xpos, parallel
 * blocks, RMSNorm, causal) are load errors naming the field.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

/* dynamic NTK scaling (m->fam_data) */
typedef struct nomic {
	float scaling;          /* rotary_scaling_factor, 0: none */
	int max_trained;
	double base;
	const float *inv_freq;  /* m->net.inv_global */
} nomic;

/* boolean field (absent or null: def); want >= 0: other values rejected */
static int cfg_bool(int *out, const json_t *cfg, const char *key, int def,
                    int want, emb_err *err)
{
	if (emb_cfg_bool(out, cfg, key, def, err))
		return -1;
	if (want >= 0 && *out != want)
		return emb_err_set(err, "config.json: field '%s' value %s is not "
		                   "supported (supported: %s)", key,
		                   *out ? "true" : "false", want ? "true" : "false");
	return 0;
}

/* dynamic NTK: the frequencies for a sequence of len */
static void ntk_inv_freq(float *inv, const emb_rope *r, int len)
{
	const nomic *w = r->ctx;

	if (len <= w->max_trained) {
		memcpy(inv, w->inv_freq, (size_t)(r->dim / 2) * sizeof(float));
		return;
	}
	double f = w->scaling;
	double base = w->base * pow(f * len / w->max_trained - (f - 1),
	                            (double)r->dim / (r->dim - 2));
	emb_rope_inv_freq(inv, r->dim, base);
}

static int nomic_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	nomic *w = calloc(1, sizeof(*w));
	emb_net *d = &m->net;
	const char *act;
	float frac, base;
	int x;

	if (!w)
		return emb_err_set(err, "out of memory");
	m->fam_data = w;
	if (emb_cfg_int(&m->hidden, cfg, "n_embd", -1, 1, err) ||
	    emb_cfg_dims(m, cfg, "n_embd", "n_layer", "n_head", "n_inner",
	                 4 * m->hidden, err) ||
	    emb_cfg_int(&m->type_vocab, cfg, "type_vocab_size", 2, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "n_positions", 2048, 1, err) ||
	    emb_cfg_int(&w->max_trained, cfg, "max_trained_positions", 2048, 1,
	                err) ||
	    emb_cfg_float(&m->eps, cfg, "layer_norm_epsilon", 1e-5, err) ||
	    emb_cfg_float(&base, cfg, "rotary_emb_base", 10000, err) ||
	    emb_cfg_float(&frac, cfg, "rotary_emb_fraction", 1.0, err) ||
	    emb_cfg_float(&w->scaling, cfg, "rotary_scaling_factor", 0, err) ||
	    emb_cfg_str(&act, cfg, "activation_function", "swiglu", err) ||
	    cfg_bool(&x, cfg, "prenorm", 0, 0, err) ||
	    cfg_bool(&x, cfg, "rotary_emb_interleaved", 0, 0, err) ||
	    cfg_bool(&x, cfg, "parallel_block", 0, 0, err) ||
	    cfg_bool(&x, cfg, "use_rms_norm", 0, 0, err) ||
	    cfg_bool(&x, cfg, "causal", 0, 0, err) ||
	    cfg_bool(&x, cfg, "scale_attn_weights", 1, 1, err) ||
	    cfg_bool(&d->bias_qkv, cfg, "qkv_proj_bias", 0, -1, err) ||
	    cfg_bool(&d->bias_up, cfg, "mlp_fc1_bias", 0, -1, err) ||
	    cfg_bool(&d->bias_down, cfg, "mlp_fc2_bias", 0, -1, err))
		return -1;
	if (strcmp(act, "swiglu"))
		return emb_err_set(err, "config.json: field 'activation_function' "
		                   "value '%s' is not supported (supported: swiglu)",
		                   act);
	if (frac != 1.0f)
		return emb_err_set(err, "config.json: field 'rotary_emb_fraction' "
		                   "value %g is not supported (supported: 1.0)",
		                   (double)frac);
	if (emb_cfg_null(cfg, "rotary_emb_scale_base", " (xpos)", err) ||
	    emb_cfg_positive(base, "rotary_emb_base", err))
		return -1;
	if (w->scaling != 0 && !(w->scaling >= 1))
		return emb_err_set(err, "config.json: field 'rotary_scaling_factor' "
		                   "must be at least 1");
	if (emb_cfg_head_dim(m, "n_embd", "n_head", err) ||
	    emb_cfg_rope_dim(m, "head size ", " (n_embd / n_head)", err))
		return -1;
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'layer_norm_epsilon' "
		                   "must not be negative");
	w->base = base;
	w->inv_freq = d->inv_global;
	emb_rope_inv_freq(d->inv_global, m->head_dim, base);
	if (w->scaling != 0) {
		d->inv_for_len = ntk_inv_freq;
		d->rope_ctx = w;
	}
	d->place = EMB_PLACE_POST;
	d->ffn = EMB_FFN_GLU2;          /* fc11 * silu(fc12) */
	d->pos = EMB_POS_ROPE;
	d->norm_kind = EMB_NORM_LN;
	d->norm_bias = 1;
	d->bias_o = d->bias_qkv;
	m->act = EMB_ACT_SILU;
	m->usable_pos = m->max_pos;
	return emb_net_layers(m, err);
}

static const emb_net_names nomic_names = {
	.word = "embeddings.word_embeddings.weight",
	.type = "embeddings.token_type_embeddings.weight", .emb_norm = "emb_ln",
	.layer = "encoder.layers.%d.", .q = "attn.Wqkv", .o = "attn.out_proj",
	.attn_norm = "norm1", .up = "mlp.fc11", .up2 = "mlp.fc12",
	.down = "mlp.fc2", .ffn_norm = "norm2", .down_first = 1,
};

const emb_family emb_family_nomic = {
	.name = "nomic_bert", .config = nomic_config, .names = &nomic_names,
	.archs = EMB_LIST("NomicBertModel"),
	.types = EMB_TYPES({ "nomic_bert", "NomicBertModel" }),
	.prefixes = EMB_LIST("", "bert.", "model."),
	.probe = "embeddings.word_embeddings.weight",
};
