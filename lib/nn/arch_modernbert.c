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
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

typedef struct mb_layer {
	emb_linear qkv, o, wi, wo;
	emb_norm attn_norm, mlp_norm;   /* attn_norm.n == 0: identity */
} mb_layer;

typedef struct modernbert {
	int every, local;       /* global_attn_every_n_layers, local_attention */
	int attn_bias, mlp_bias, norm_bias;
	const float *tok;
	emb_norm emb_norm, final_norm;
	float inv_global[512], inv_local[512];
	mb_layer *layer;
} modernbert;

static int mb_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	modernbert *w = calloc(1, sizeof(*w));
	float gtheta, ltheta;

	if (!w)
		return emb_err_set(err, "out of memory");
	m->fam_data = w;
	if (emb_cfg_int(&m->hidden, cfg, "hidden_size", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "num_hidden_layers", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "num_attention_heads", -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, "intermediate_size", -1, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 8192, 1,
	                err) ||
	    emb_cfg_float(&m->eps, cfg, "norm_eps", 1e-5, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_activation", "gelu", err) ||
	    emb_cfg_int(&w->every, cfg, "global_attn_every_n_layers", 1, 1, err) ||
	    emb_cfg_int(&w->local, cfg, "local_attention", -1, 0, err) ||
	    emb_cfg_float(&gtheta, cfg, "global_rope_theta", 160000, err) ||
	    emb_cfg_float(&ltheta, cfg, "local_rope_theta", gtheta, err) ||
	    emb_cfg_bool(&w->attn_bias, cfg, "attention_bias", 0, err) ||
	    emb_cfg_bool(&w->mlp_bias, cfg, "mlp_bias", 0, err) ||
	    emb_cfg_bool(&w->norm_bias, cfg, "norm_bias", 0, err))
		return -1;
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field 'hidden_size' (%d) must "
		                   "be a multiple of 'num_attention_heads' (%d)",
		                   m->hidden, m->heads);
	m->head_dim = m->hidden / m->heads;
	if (m->head_dim % 2 || m->head_dim > 1024)
		return emb_err_set(err, "config.json: head size %d must be even and "
		                   "at most 1024", m->head_dim);
	if (!(gtheta > 0) || !(ltheta > 0))
		return emb_err_set(err, "config.json: field '%s' must be positive",
		                   gtheta > 0 ? "local_rope_theta" :
		                   "global_rope_theta");
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'norm_eps' must not be "
		                   "negative");
	emb_rope_inv_freq(w->inv_global, m->head_dim, gtheta);
	emb_rope_inv_freq(w->inv_local, m->head_dim, ltheta);
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->usable_pos = m->max_pos;
	return 0;
}

static int mb_load(emb_model *m, emb_err *err)
{
	modernbert *w = m->fam_data;
	int H = m->hidden, I = m->inter;
	char n[2][128];

	if (!(w->layer = calloc((size_t)m->layers, sizeof(mb_layer))))
		return emb_err_set(err, "out of memory");
	if (emb_model_table(&w->tok, m, "embeddings.tok_embeddings.weight",
	                    m->vocab, H, err) ||
	    emb_model_norm_kind(&w->emb_norm, m, "embeddings.norm.weight",
	                        w->norm_bias ? "embeddings.norm.bias" : NULL, H,
	                        m->eps, EMB_NORM_LN, err) ||
	    emb_model_norm_kind(&w->final_norm, m, "final_norm.weight",
	                        w->norm_bias ? "final_norm.bias" : NULL, H, m->eps,
	                        EMB_NORM_LN, err))
		return -1;
	for (int l = 0; l < m->layers; l++) {
		mb_layer *L = &w->layer[l];
#define NM(i, fmt) (snprintf(n[i], sizeof(n[i]), "layers.%d." fmt, l), n[i])
		if ((l > 0 &&
		     emb_model_norm_kind(&L->attn_norm, m, NM(0, "attn_norm.weight"),
		                         w->norm_bias ? NM(1, "attn_norm.bias") : NULL,
		                         H, m->eps, EMB_NORM_LN, err)) ||
		    emb_model_norm_kind(&L->mlp_norm, m, NM(0, "mlp_norm.weight"),
		                        w->norm_bias ? NM(1, "mlp_norm.bias") : NULL, H,
		                        m->eps, EMB_NORM_LN, err) ||
		    emb_model_linear(&L->qkv, m, NM(0, "attn.Wqkv.weight"),
		                     w->attn_bias ? NM(1, "attn.Wqkv.bias") : NULL,
		                     3 * H, H, err) ||
		    emb_model_linear(&L->o, m, NM(0, "attn.Wo.weight"),
		                     w->attn_bias ? NM(1, "attn.Wo.bias") : NULL, H, H,
		                     err) ||
		    emb_model_linear(&L->wi, m, NM(0, "mlp.Wi.weight"),
		                     w->mlp_bias ? NM(1, "mlp.Wi.bias") : NULL, 2 * I,
		                     H, err) ||
		    emb_model_linear(&L->wo, m, NM(0, "mlp.Wo.weight"),
		                     w->mlp_bias ? NM(1, "mlp.Wo.bias") : NULL, H, I,
		                     err))
			return -1;
#undef NM
	}
	return 0;
}

static void mb_release(emb_model *m)
{
	modernbert *w = m->fam_data;

	if (w) {
		free(w->layer);
		free(w);
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
	const modernbert *w = j->m->fam_data;
	int H = j->m->hidden;

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		const emb_seq *q = &j->b->seqs[s];
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			j->m->k->layernorm(h, w->tok + (size_t)q->ids[i] * H,
			                   w->emb_norm.w, w->emb_norm.b, H,
			                   w->emb_norm.eps);
		}
	}
}

static int mb_forward(emb_model *m, float *out, const emb_batch *b,
                      emb_err *err)
{
	const modernbert *w = m->fam_data;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	float *qkv, *ctx, *x, *mid, *h = out;
	embed_job ej = { m, h, b };

	/* scratch: qkv (T,3H), ctx (T,H), x (T,H), mid (T,3I) */
	if (T > SIZE_MAX / (5 * H + 3 * I) / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (!(qkv = emb_model_scratch(m, T * (5 * H + 3 * I), err)))
		return -1;
	ctx = qkv + T * 3 * H;
	x = ctx + T * H;
	mid = x + T * H;

	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const mb_layer *L = &w->layer[l];
		int global = l % w->every == 0;
		emb_attn a = {
			.heads = m->heads, .kv_heads = m->heads, .head_dim = m->head_dim,
			.q = qkv, .k = qkv + H, .v = qkv + 2 * H,
			.ldq = 3 * (int)H, .ldk = 3 * (int)H, .ldv = 3 * (int)H,
			.scale = 1.0f / sqrtf((float)m->head_dim),
			.window = global ? 0 : w->local / 2 + 1,
		};
		emb_rope r = {
			.q = qkv, .k = qkv + H, .ldq = 3 * (int)H, .ldk = 3 * (int)H,
			.heads = m->heads, .kv_heads = m->heads,
			.head_dim = m->head_dim, .dim = m->head_dim,
			.inv_freq = global ? w->inv_global : w->inv_local,
		};
		// x = attn_norm(h) (layer 0: h)
		const float *in = h;
		if (L->attn_norm.n) {
			emb_norm_fwd(m, x, h, NULL, (int)T, &L->attn_norm);
			in = x;
		}
		emb_linear_fwd(m, qkv, 3 * (int)H, in, (int)H, (int)T, &L->qkv);
		if (emb_rope_fwd(m, &r, b, err) || emb_attention(m, ctx, &a, b, err))
			return -1;
		// h += Wo ctx
		emb_linear_fwd(m, x, (int)H, ctx, (int)H, (int)T, &L->o);
		m->k->add(h, x, (int)(T * H));
		// h += Wo(act(x) * g), [x | g] = Wi mlp_norm(h)
		emb_norm_fwd(m, x, h, NULL, (int)T, &L->mlp_norm);
		emb_linear_fwd(m, mid, 2 * (int)I, x, (int)H, (int)T, &L->wi);
		emb_glu_fwd(m, mid + T * 2 * I, mid, (int)T, (int)I, m->act, 1);
		emb_linear_fwd(m, x, (int)H, mid + T * 2 * I, (int)I, (int)T, &L->wo);
		m->k->add(h, x, (int)(T * H));
	}
	emb_norm_fwd(m, h, h, NULL, (int)T, &w->final_norm);
	return 0;
}

static const char *const mb_prefixes[] = { "", "model.", NULL };

const emb_family emb_family_modernbert = {
	.name = "modernbert",
	.prefixes = mb_prefixes,
	.probe = "embeddings.tok_embeddings.weight",
	.config = mb_config,
	.load = mb_load,
	.forward = mb_forward,
	.release = mb_release,
};
