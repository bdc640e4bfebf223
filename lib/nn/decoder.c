/*
 * decoder.c - the decoder-style layers Qwen3 (arch_qwen3.c) and Gemma 3
 * (arch_gemma3.c) share, transformers semantics:
 *
 *   h = embed[id] (* embed_scale)
 *   per layer (pre-norm):
 *     x = input_layernorm(h)
 *     q, k, v = Wq x, Wk x, Wv x;  q, k = per-head q_norm, k_norm; RoPE
 *     a = Wo softmax(q k^T * scale [+ mask]) v   (GQA; causal or a window)
 *     h = h + post_attention_layernorm(a)     (Gemma; Qwen3: h + a)
 *     x = pre_feedforward_layernorm(h)        (Gemma; Qwen3:
 *                                              post_attention_layernorm)
 *     h = h + [post_feedforward_layernorm](down(act(gate x) * up x))
 *   h = norm(h)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

int emb_decoder_config(emb_model *m, const json_t *cfg, emb_decoder *d,
                       emb_err *err)
{
	const json_t *v;

	m->fam_data = d;
	if (emb_cfg_int(&m->hidden, cfg, "hidden_size", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "num_hidden_layers", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "num_attention_heads", -1, 1, err) ||
	    emb_cfg_int(&d->kv_heads, cfg, "num_key_value_heads", m->heads, 1,
	                err) ||
	    emb_cfg_int(&m->inter, cfg, "intermediate_size", -1, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", -1, 1, err) ||
	    emb_cfg_float(&m->eps, cfg, "rms_norm_eps", 1e-6, err) ||
	    emb_cfg_float(&d->theta, cfg, "rope_theta", 10000, err) ||
	    emb_cfg_bool(&d->bias, cfg, "attention_bias", 0, err))
		return -1;
	if (m->hidden % m->heads && !json_object_get(cfg, "head_dim"))
		return emb_err_set(err, "config.json: missing field 'head_dim'");
	if (emb_cfg_int(&m->head_dim, cfg, "head_dim", m->hidden / m->heads, 2,
	                err))
		return -1;
	if (m->head_dim % 2 || m->head_dim > 1024)
		return emb_err_set(err, "config.json: field 'head_dim' (%d) must be "
		                   "even and at most 1024", m->head_dim);
	if (m->heads % d->kv_heads)
		return emb_err_set(err, "config.json: field 'num_attention_heads' "
		                   "(%d) must be a multiple of 'num_key_value_heads' "
		                   "(%d)", m->heads, d->kv_heads);
	v = json_object_get(cfg, "rope_scaling");
	if (v && !json_is_null(v))
		return emb_err_set(err, "config.json: field 'rope_scaling' is not "
		                   "supported (supported: null)");
	if (!(d->theta > 0))
		return emb_err_set(err, "config.json: field 'rope_theta' must be "
		                   "positive");
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'rms_norm_eps' must not "
		                   "be negative");
	d->scale = 1.0f / sqrtf((float)m->head_dim);
	emb_rope_inv_freq(d->inv_global, m->head_dim, d->theta);
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->usable_pos = m->max_pos;
	return 0;
}

int emb_decoder_load(emb_model *m, emb_err *err)
{
	emb_decoder *d = m->fam_data;
	int H = m->hidden, I = m->inter, dh = m->head_dim;
	int nq = m->heads * dh, nkv = d->kv_heads * dh;
	int nk = d->unit_norm ? EMB_NORM_RMS1 : EMB_NORM_RMS;
	char n[8][128];

	if (!(d->layer = calloc((size_t)m->layers, sizeof(emb_dec_layer))))
		return emb_err_set(err, "out of memory");
	if (emb_model_table(&d->embed, m, "embed_tokens.weight", m->vocab, H,
	                    err) ||
	    emb_model_norm_kind(&d->norm, m, "norm.weight", NULL, H, m->eps, nk,
	                        err))
		return -1;
	for (int l = 0; l < m->layers; l++) {
		emb_dec_layer *L = &d->layer[l];
		const char *wn[3] = { n[0], n[1], n[2] }, *bn[3] = { n[3], n[4], n[5] };
		const int outs[3] = { nq, nkv, nkv };
		const char *wg[2] = { n[0], n[1] };
		const int gouts[2] = { I, I };
#define NM(i, fmt) (snprintf(n[i], sizeof(n[i]), "layers.%d." fmt, l), n[i])
		NM(0, "self_attn.q_proj.weight");
		NM(1, "self_attn.k_proj.weight");
		NM(2, "self_attn.v_proj.weight");
		NM(3, "self_attn.q_proj.bias");
		NM(4, "self_attn.k_proj.bias");
		NM(5, "self_attn.v_proj.bias");
		if (emb_model_linear_cat(&L->qkv, m, 3, wn, d->bias ? bn : NULL,
		                         outs, H, err))
			return -1;
		NM(0, "mlp.gate_proj.weight");
		NM(1, "mlp.up_proj.weight");
		if (emb_model_linear_cat(&L->gate_up, m, 2, wg, NULL, gouts, H, err) ||
		    emb_model_linear(&L->o, m, NM(0, "self_attn.o_proj.weight"),
		                     d->bias ? NM(1, "self_attn.o_proj.bias") : NULL,
		                     H, nq, err) ||
		    emb_model_linear(&L->down, m, NM(0, "mlp.down_proj.weight"), NULL,
		                     H, I, err) ||
		    emb_model_norm_kind(&L->in_norm, m,
		                        NM(0, "input_layernorm.weight"), NULL, H,
		                        m->eps, nk, err) ||
		    emb_model_norm_kind(&L->post_attn, m,
		                        NM(0, "post_attention_layernorm.weight"), NULL,
		                        H, m->eps, nk, err) ||
		    emb_model_norm_kind(&L->q_norm, m, NM(0, "self_attn.q_norm.weight"),
		                        NULL, dh, m->eps, nk, err) ||
		    emb_model_norm_kind(&L->k_norm, m, NM(0, "self_attn.k_norm.weight"),
		                        NULL, dh, m->eps, nk, err))
			return -1;
		if (d->sandwich &&
		    (emb_model_norm_kind(&L->pre_ff, m,
		                         NM(0, "pre_feedforward_layernorm.weight"),
		                         NULL, H, m->eps, nk, err) ||
		     emb_model_norm_kind(&L->post_ff, m,
		                         NM(0, "post_feedforward_layernorm.weight"),
		                         NULL, H, m->eps, nk, err)))
			return -1;
#undef NM
	}
	return 0;
}

void emb_decoder_release(emb_model *m)
{
	emb_decoder *d = m->fam_data;

	if (d) {
		free(d->layer);
		free(d->sliding);
		free(d);
		m->fam_data = NULL;
	}
}

typedef struct embed_job {
	const emb_model *m;
	float *h;
	const emb_batch *b;
} embed_job;

static void embed_task(void *ctx, size_t begin, size_t end, int tid)
{
	const embed_job *j = ctx;
	const emb_decoder *d = j->m->fam_data;
	int H = j->m->hidden;

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		const emb_seq *q = &j->b->seqs[s];
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			const float *e = d->embed + (size_t)q->ids[i] * H;
			if (d->embed_scale) {
				for (int c = 0; c < H; c++)
					h[c] = e[c] * d->embed_scale;
			} else {
				memcpy(h, e, (size_t)H * sizeof(float));
			}
		}
	}
}

int emb_decoder_forward(emb_model *m, float *out, const emb_batch *b,
                        emb_err *err)
{
	const emb_decoder *d = m->fam_data;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	size_t nq = (size_t)m->heads * m->head_dim;
	size_t nkv = (size_t)d->kv_heads * m->head_dim, nqkv = nq + 2 * nkv;
	size_t per = nqkv + nq + H + 3 * I;
	float *qkv, *ctx, *x, *mid, *h = out;
	embed_job ej = { m, h, b };

	/* scratch: qkv (T,nqkv), ctx (T,nq), x (T,H), mid (T,3I) */
	if (T > SIZE_MAX / per / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (!(qkv = emb_model_scratch(m, T * per, err)))
		return -1;
	ctx = qkv + T * nqkv;
	x = ctx + T * nq;
	mid = x + T * H;

	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const emb_dec_layer *L = &d->layer[l];
		int sliding = d->sliding && d->sliding[l];
		emb_attn a = {
			.heads = m->heads, .kv_heads = d->kv_heads,
			.head_dim = m->head_dim,
			.q = qkv, .k = qkv + nq, .v = qkv + nq + nkv,
			.ldq = (int)nqkv, .ldk = (int)nqkv, .ldv = (int)nqkv,
			.scale = d->scale, .causal = d->causal,
			.window = sliding ? d->window : 0,
		};
		emb_rope r = {
			.q = qkv, .k = qkv + nq, .ldq = (int)nqkv, .ldk = (int)nqkv,
			.heads = m->heads, .kv_heads = d->kv_heads,
			.head_dim = m->head_dim, .dim = m->head_dim,
			.inv_freq = sliding ? d->inv_local : d->inv_global,
		};
		// x = input_layernorm(h); qkv = [Wq | Wk | Wv] x
		emb_norm_fwd(m, x, h, NULL, (int)T, &L->in_norm);
		emb_linear_fwd(m, qkv, (int)nqkv, x, (int)H, (int)T, &L->qkv);
		// per-head q_norm, k_norm, then RoPE
		emb_head_norm_fwd(m, qkv, (int)nqkv, (int)T, m->heads, &L->q_norm);
		emb_head_norm_fwd(m, qkv + nq, (int)nqkv, (int)T, d->kv_heads,
		                  &L->k_norm);
		if (emb_rope_fwd(m, &r, b, err) || emb_attention(m, ctx, &a, b, err))
			return -1;
		// h += [post_attention_layernorm](Wo ctx)
		emb_linear_fwd(m, x, (int)H, ctx, (int)nq, (int)T, &L->o);
		if (d->sandwich)
			emb_norm_fwd(m, x, x, NULL, (int)T, &L->post_attn);
		for (size_t t = 0; t < T; t++)
			m->k->add(h + t * H, x + t * H, (int)H);
		// x = norm(h); mid = [gate | up] x; act(gate) * up; down
		emb_norm_fwd(m, x, h, NULL, (int)T,
		             d->sandwich ? &L->pre_ff : &L->post_attn);
		emb_linear_fwd(m, mid, 2 * (int)I, x, (int)H, (int)T, &L->gate_up);
		emb_glu_fwd(m, mid + T * 2 * I, mid, (int)T, (int)I, m->act, 1);
		emb_linear_fwd(m, x, (int)H, mid + T * 2 * I, (int)I, (int)T,
		               &L->down);
		if (d->sandwich)
			emb_norm_fwd(m, x, x, NULL, (int)T, &L->post_ff);
		for (size_t t = 0; t < T; t++)
			m->k->add(h + t * H, x + t * H, (int)H);
	}
	emb_norm_fwd(m, h, h, NULL, (int)T, &d->norm);
	return 0;
}
