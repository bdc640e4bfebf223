/*
 * arch_modernbert.c - ModernBERT (ModernBertModel), transformers'
 * modeling_modernbert semantics:
 *
 *   h = LN(tok[id])                              (embeddings.norm)
 *   per layer l (pre-norm; layer 0 has no attn_norm):
 *     q, k, v = Wqkv attn_norm(h); q, k = RoPE   (global_rope_theta on
 *         layers l % global_attn_every_n_layers == 0, local_rope_theta and
 *         a sliding window |i - j| <= local_attention / 2 on the others)
 *     h = h + Wo softmax(q k^T / sqrt(dh)) v
 *     x, g = Wi mlp_norm(h);  h = h + Wo(act(x) * g)        (GeGLU)
 *   h = final_norm(h)
 *
 * LayerNorms without bias unless norm_bias; no linear biases unless
 * attention_bias / mlp_bias.
 */
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

static int mb_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	emb_net *d = &m->net;
	float gtheta, ltheta;
	int every, local;       /* global_attn_every_n_layers, local_attention */

	if (emb_cfg_dims(m, cfg, "hidden_size", "num_hidden_layers",
	                 "num_attention_heads", "intermediate_size", -1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 8192, 1,
	                err) ||
	    emb_cfg_float(&m->eps, cfg, "norm_eps", 1e-5, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_activation", "gelu", err) ||
	    emb_cfg_int(&every, cfg, "global_attn_every_n_layers", 1, 1, err) ||
	    emb_cfg_int(&local, cfg, "local_attention", -1, 0, err) ||
	    emb_cfg_float(&gtheta, cfg, "global_rope_theta", 160000, err) ||
	    emb_cfg_float(&ltheta, cfg, "local_rope_theta", gtheta, err) ||
	    emb_cfg_bool(&d->bias_qkv, cfg, "attention_bias", 0, err) ||
	    emb_cfg_bool(&d->bias_up, cfg, "mlp_bias", 0, err) ||
	    emb_cfg_bool(&d->norm_bias, cfg, "norm_bias", 0, err) ||
	    emb_cfg_head_dim(m, "hidden_size", "num_attention_heads", err))
		return -1;
	if (emb_cfg_rope_dim(m, "head size ", "", err))
		return -1;
	if (emb_cfg_positive(gtheta, "global_rope_theta", err) ||
	    emb_cfg_positive(ltheta, "local_rope_theta", err))
		return -1;
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'norm_eps' must not be "
		                   "negative");
	emb_rope_inv_freq(d->inv_global, m->head_dim, gtheta);
	emb_rope_inv_freq(d->inv_local, m->head_dim, ltheta);
	d->place = EMB_PLACE_PRE;
	d->ffn = EMB_FFN_GLU;
	d->pos = EMB_POS_ROPE;
	d->norm_kind = EMB_NORM_LN;
	d->no_norm0 = 1;
	d->bias_o = d->bias_qkv;
	d->bias_down = d->bias_up;
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->usable_pos = m->max_pos;
	if (emb_net_layers(m, err))
		return -1;
	for (int l = 0; l < m->layers; l++)
		if (l % every) {        /* local: |i - j| <= local_attention / 2 */
			d->layer[l].window = local / 2 + 1;
			d->layer[l].local = 1;
		}
	return 0;
}

static const emb_net_names mb_names = {
	.word = "embeddings.tok_embeddings.weight", .emb_norm = "embeddings.norm",
	.final_norm = "final_norm",
	.layer = "layers.%d.", .q = "attn.Wqkv", .o = "attn.Wo",
	.attn_norm = "attn_norm", .up = "mlp.Wi", .down = "mlp.Wo",
	.ffn_norm = "mlp_norm",
};

const emb_family emb_family_modernbert = {
	.name = "modernbert", .config = mb_config, .names = &mb_names,
	.archs = EMB_LIST("ModernBertModel", "ModernBertForMaskedLM"),
	.types = EMB_TYPES({ "modernbert", "ModernBertModel" }),
	.prefixes = EMB_LIST("", "model."),
	.probe = "embeddings.tok_embeddings.weight",
};
