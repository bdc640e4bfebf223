/*
 * arch_qwen3.c - Qwen3 (Qwen3Model: Qwen3-Embedding), transformers
 * semantics: the pre-norm decoder of emb_cfg_decoder, causal,
 * SiLU-gated FFN, per-head q/k RMSNorm, no sliding window.
 *
 *   h = embed[id]
 *   per layer:
 *     h = h + Wo attention(RoPE(q_norm(Wq x), k_norm(Wk x)), Wv x),
 *         x = input_layernorm(h)          (GQA, causal)
 *     h = h + down(silu(gate x) * up x), x = post_attention_layernorm(h)
 *   h = norm(h)
 */
#include "nn/nn-internal.h"

static int qwen3_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	int sw;

	if (emb_cfg_decoder(m, cfg, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_act", "silu", err) ||
	    emb_cfg_bool(&sw, cfg, "use_sliding_window", 0, err))
		return -1;
	if (sw)
		return emb_err_set(err, "config.json: field 'use_sliding_window' "
		                   "value true is not supported (supported: false)");
	m->net.causal = 1;
	return 0;
}

static const emb_net_names qwen3_names = {
	EMB_DECODER_NAMES, .ffn_norm = "post_attention_layernorm",
};

const emb_family emb_family_qwen3 = {
	.name = "qwen3", .config = qwen3_config, .names = &qwen3_names,
	.archs = EMB_LIST("Qwen3Model", "Qwen3ForCausalLM"),
	.types = EMB_TYPES({ "qwen3", "Qwen3Model" }),
	.prefixes = EMB_LIST("", "model."), .probe = "embed_tokens.weight",
};
