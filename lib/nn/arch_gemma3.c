/*
 * arch_gemma3.c - Gemma 3 text encoders (Gemma3TextModel with
 * use_bidirectional_attention: EmbeddingGemma): the pre-norm decoder of
 * emb_cfg_decoder (as arch_qwen3.c) with Gemma's differences:
 *
 *   embeddings times sqrt(hidden_size) (float32); RMSNorm x * (1 + w)
 *   everywhere (q_norm and k_norm too); post-attention, pre- and
 *   post-feedforward norms; scores scaled by query_pre_attn_scalar^-0.5;
 *   layer_types (or sliding_window_pattern) picks full or sliding layers:
 *   sliding ones use rope_local_base_freq and, bidirectional, keys with
 *   |i - j| < sliding_window / 2 + 1 (as transformers sets it up);
 *   GeGLU with hidden_activation (gelu_pytorch_tanh).
 */
#include <math.h>
#include <string.h>
#include "nn/nn-internal.h"

static int gemma3_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	emb_net *d = &m->net;
	const json_t *lt = json_object_get(cfg, "layer_types");
	const json_t *v;
	float qpas, local;
	int window, pattern;

	if (emb_cfg_decoder(m, cfg, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_activation", "gelu_pytorch_tanh",
	                err) ||
	    emb_cfg_float(&qpas, cfg, "query_pre_attn_scalar", m->head_dim, err) ||
	    emb_cfg_float(&local, cfg, "rope_local_base_freq", 10000, err) ||
	    emb_cfg_int(&window, cfg, "sliding_window", 4096, 1, err) ||
	    emb_cfg_int(&pattern, cfg, "sliding_window_pattern", 6, 1, err))
		return -1;
	v = json_object_get(cfg, "use_bidirectional_attention");
	if (!json_is_true(v))
		return emb_err_set(err, "config.json: field "
		                   "'use_bidirectional_attention' must be true (emb "
		                   "runs Gemma 3 as a bidirectional encoder)");
	if (emb_cfg_null(cfg, "attn_logit_softcapping", "", err))
		return -1;
	if (emb_cfg_positive(qpas, "query_pre_attn_scalar", err) ||
	    emb_cfg_positive(local, "rope_local_base_freq", err))
		return -1;
	if (lt && !json_is_null(lt)) {
		if (!json_is_array(lt) || json_array_size(lt) != (size_t)m->layers)
			return emb_err_set(err, "config.json: field 'layer_types' must "
			                   "be an array of num_hidden_layers (%d) strings",
			                   m->layers);
		for (int l = 0; l < m->layers; l++) {
			const char *t = json_string_value(json_array_get(lt, (size_t)l));
			if (t && !strcmp(t, "sliding_attention"))
				d->layer[l].local = 1;
			else if (!t || strcmp(t, "full_attention"))
				return emb_err_set(err, "config.json: field 'layer_types' "
				                   "entry %d must be 'full_attention' or "
				                   "'sliding_attention'", l);
		}
	} else {
		for (int l = 0; l < m->layers; l++)
			d->layer[l].local = (l + 1) % pattern != 0;
	}
	for (int l = 0; l < m->layers; l++)
		if (d->layer[l].local)
			d->layer[l].window = window / 2 + 1;
	d->norm_kind = EMB_NORM_RMS1;
	d->embed_scale = (float)sqrt((double)m->hidden);
	d->scale = (float)pow((double)qpas, -0.5);
	emb_rope_inv_freq(d->inv_local, m->head_dim, local);
	return 0;
}

static const emb_net_names gemma3_names = {
	EMB_DECODER_NAMES,
	.post_attn = "post_attention_layernorm",
	.ffn_norm = "pre_feedforward_layernorm",
	.post_ffn = "post_feedforward_layernorm",
};

const emb_family emb_family_gemma3 = {
	.name = "gemma3_text", .config = gemma3_config, .names = &gemma3_names,
	.archs = EMB_LIST("Gemma3TextModel"),
	.types = EMB_TYPES({ "gemma3_text", "Gemma3TextModel" }),
	.prefixes = EMB_LIST("", "model."), .probe = "embed_tokens.weight",
};
