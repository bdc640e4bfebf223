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
	.word = "embed_tokens.weight", .final_norm = "norm",
	.layer = "layers.%d.",
	.q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
	.o = "self_attn.o_proj", .up = "mlp.gate_proj", .up2 = "mlp.up_proj",
	.down = "mlp.down_proj", .attn_norm = "input_layernorm",
	.ffn_norm = "post_attention_layernorm",
	.q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm",
};

static const char *const qwen3_prefixes[] = { "", "model.", NULL };
static const char *const qwen3_archs[] = { "Qwen3Model", "Qwen3ForCausalLM",
                                           NULL };
static const emb_model_type qwen3_types[] = { { "qwen3", "Qwen3Model" },
                                              { 0 } };

const emb_family emb_family_qwen3 = {
	.name = "qwen3",
	.archs = qwen3_archs,
	.types = qwen3_types,
	.prefixes = qwen3_prefixes,
	.probe = "embed_tokens.weight",
	.config = qwen3_config,
	.names = &qwen3_names,
};
