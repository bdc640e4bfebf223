/*
 * arch_qwen3.c - Qwen3 (Qwen3Model: Qwen3-Embedding): the decoder of
 * decoder.c, causal, SiLU-gated FFN, q/k RMSNorm, no sliding window.
 */
#include <stdlib.h>
#include "nn/nn-internal.h"

static int qwen3_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	emb_decoder *d = calloc(1, sizeof(*d));
	int sw;

	if (!d)
		return emb_err_set(err, "out of memory");
	if (emb_decoder_config(m, cfg, d, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_act", "silu", err) ||
	    emb_cfg_bool(&sw, cfg, "use_sliding_window", 0, err))
		return -1;
	if (sw)
		return emb_err_set(err, "config.json: field 'use_sliding_window' "
		                   "value true is not supported (supported: false)");
	d->causal = 1;
	return 0;
}

static const char *const dec_prefixes[] = { "", "model.", NULL };

const emb_family emb_family_qwen3 = {
	.name = "qwen3",
	.prefixes = dec_prefixes,
	.probe = "embed_tokens.weight",
	.config = qwen3_config,
	.load = emb_decoder_load,
	.forward = emb_decoder_forward,
	.release = emb_decoder_release,
};
