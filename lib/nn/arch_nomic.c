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

typedef struct nomic_layer {
	emb_linear qkv, o, fc1, fc2;    /* fc1: fc11 and fc12 stacked */
	emb_norm norm1, norm2;
} nomic_layer;

typedef struct nomic {
	int qkv_bias, fc1_bias, fc2_bias;
	float scaling;          /* rotary_scaling_factor, 0: none */
	int max_trained;
	double base;
	const float *word, *type;
	emb_norm ln_emb;
	float inv_freq[512];
	nomic_layer *layer;
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

static int nomic_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	nomic *w = calloc(1, sizeof(*w));
	const char *act;
	const json_t *v;
	float frac, base;
	int x;

	if (!w)
		return emb_err_set(err, "out of memory");
	m->fam_data = w;
	if (emb_cfg_int(&m->hidden, cfg, "n_embd", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "n_layer", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "n_head", -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, "n_inner", 4 * m->hidden, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
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
	    cfg_bool(&w->qkv_bias, cfg, "qkv_proj_bias", 0, -1, err) ||
	    cfg_bool(&w->fc1_bias, cfg, "mlp_fc1_bias", 0, -1, err) ||
	    cfg_bool(&w->fc2_bias, cfg, "mlp_fc2_bias", 0, -1, err))
		return -1;
	if (strcmp(act, "swiglu"))
		return emb_err_set(err, "config.json: field 'activation_function' "
		                   "value '%s' is not supported (supported: swiglu)",
		                   act);
	if (frac != 1.0f)
		return emb_err_set(err, "config.json: field 'rotary_emb_fraction' "
		                   "value %g is not supported (supported: 1.0)",
		                   (double)frac);
	v = json_object_get(cfg, "rotary_emb_scale_base");
	if (v && !json_is_null(v))
		return emb_err_set(err, "config.json: field 'rotary_emb_scale_base' "
		                   "(xpos) is not supported (supported: null)");
	if (!(base > 0))
		return emb_err_set(err, "config.json: field 'rotary_emb_base' must "
		                   "be positive");
	if (w->scaling != 0 && !(w->scaling >= 1))
		return emb_err_set(err, "config.json: field 'rotary_scaling_factor' "
		                   "must be at least 1");
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field 'n_embd' (%d) must be a "
		                   "multiple of 'n_head' (%d)", m->hidden, m->heads);
	m->head_dim = m->hidden / m->heads;
	if (m->head_dim % 2 || m->head_dim > 1024)
		return emb_err_set(err, "config.json: head size %d (n_embd / "
		                   "n_head) must be even and at most 1024",
		                   m->head_dim);
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'layer_norm_epsilon' "
		                   "must not be negative");
	w->base = base;
	emb_rope_inv_freq(w->inv_freq, m->head_dim, base);
	m->act = EMB_ACT_SILU;
	m->usable_pos = m->max_pos;
	return 0;
}

static int nomic_load(emb_model *m, emb_err *err)
{
	nomic *w = m->fam_data;
	int H = m->hidden, I = m->inter;
	char n[6][128];

	if (!(w->layer = calloc((size_t)m->layers, sizeof(nomic_layer))))
		return emb_err_set(err, "out of memory");
	if (emb_model_table(&w->word, m, "embeddings.word_embeddings.weight",
	                    m->vocab, H, err) ||
	    emb_model_table(&w->type, m, "embeddings.token_type_embeddings.weight",
	                    m->type_vocab, H, err) ||
	    emb_model_norm(&w->ln_emb, m, "emb_ln.weight", "emb_ln.bias", H,
	                   m->eps, err))
		return -1;
	for (int l = 0; l < m->layers; l++) {
		nomic_layer *L = &w->layer[l];
		const char *fw[2] = { n[0], n[1] }, *fb[2] = { n[2], n[3] };
		const int outs[2] = { I, I };
#define NM(i, fmt) (snprintf(n[i], sizeof(n[i]), "encoder.layers.%d." fmt, l), n[i])
		if (emb_model_linear(&L->qkv, m, NM(0, "attn.Wqkv.weight"),
		                     w->qkv_bias ? NM(1, "attn.Wqkv.bias") : NULL,
		                     3 * H, H, err) ||
		    emb_model_linear(&L->o, m, NM(0, "attn.out_proj.weight"),
		                     w->qkv_bias ? NM(1, "attn.out_proj.bias") : NULL,
		                     H, H, err) ||
		    emb_model_linear(&L->fc2, m, NM(0, "mlp.fc2.weight"),
		                     w->fc2_bias ? NM(1, "mlp.fc2.bias") : NULL, H, I,
		                     err) ||
		    emb_model_norm(&L->norm1, m, NM(0, "norm1.weight"),
		                   NM(1, "norm1.bias"), H, m->eps, err) ||
		    emb_model_norm(&L->norm2, m, NM(2, "norm2.weight"),
		                   NM(3, "norm2.bias"), H, m->eps, err))
			return -1;
		NM(0, "mlp.fc11.weight");
		NM(1, "mlp.fc12.weight");
		NM(2, "mlp.fc11.bias");
		NM(3, "mlp.fc12.bias");
#undef NM
		if (emb_model_linear_cat(&L->fc1, m, 2, fw, w->fc1_bias ? fb : NULL,
		                         outs, H, err))
			return -1;
	}
	return 0;
}

static void nomic_release(emb_model *m)
{
	nomic *w = m->fam_data;

	if (w) {
		free(w->layer);
		free(w);
		m->fam_data = NULL;
	}
}

/* dynamic NTK: the frequencies for a sequence of len */
static void ntk_inv_freq(float *inv, const emb_rope *r, int len)
{
	const nomic *w = r->ctx;

	if (w->scaling == 0 || len <= w->max_trained) {
		memcpy(inv, w->inv_freq, (size_t)(r->dim / 2) * sizeof(float));
		return;
	}
	double f = w->scaling;
	double base = w->base * pow(f * len / w->max_trained - (f - 1),
	                            (double)r->dim / (r->dim - 2));
	emb_rope_inv_freq(inv, r->dim, base);
}

typedef struct embed_job {
	const emb_model *m;
	float *h;
	const emb_batch *b;
} embed_job;

static void embed_task(void *ctx, size_t begin, size_t end, int tid)
{
	const embed_job *j = ctx;
	const nomic *w = j->m->fam_data;
	int H = j->m->hidden;

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		const emb_seq *q = &j->b->seqs[s];
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			int tt = q->type_ids ? q->type_ids[i] : 0;
			memcpy(h, w->word + (size_t)q->ids[i] * H, (size_t)H * sizeof(float));
			j->m->k->add(h, w->type + (size_t)tt * H, H);
			j->m->k->layernorm(h, h, w->ln_emb.w, w->ln_emb.b, H, w->ln_emb.eps);
		}
	}
}

static int nomic_forward(emb_model *m, float *out, const emb_batch *b,
                         emb_err *err)
{
	const nomic *w = m->fam_data;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	float *qkv, *ctx, *tmp, *mid, *h = out;
	embed_job ej = { m, h, b };

	/* scratch: qkv (T,3H), ctx (T,H), tmp (T,H), mid (T,3I) */
	if (T > SIZE_MAX / (5 * H + 3 * I) / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (!(qkv = emb_model_scratch(m, T * (5 * H + 3 * I), err)))
		return -1;
	ctx = qkv + T * 3 * H;
	tmp = ctx + T * H;
	mid = tmp + T * H;

	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const nomic_layer *L = &w->layer[l];
		emb_attn a = {
			.heads = m->heads, .kv_heads = m->heads, .head_dim = m->head_dim,
			.q = qkv, .k = qkv + H, .v = qkv + 2 * H,
			.ldq = 3 * (int)H, .ldk = 3 * (int)H, .ldv = 3 * (int)H,
			.scale = 1.0f / sqrtf((float)m->head_dim),
		};
		emb_rope r = {
			.q = qkv, .k = qkv + H, .ldq = 3 * (int)H, .ldk = 3 * (int)H,
			.heads = m->heads, .kv_heads = m->heads,
			.head_dim = m->head_dim, .dim = m->head_dim,
			.inv_freq = w->inv_freq,
			.inv_for_len = w->scaling != 0 ? ntk_inv_freq : NULL, .ctx = w,
		};
		// h (T,H) @ Wqkv (3H,H)^T -> qkv (T,3H); rotate q, k
		emb_linear_fwd(m, qkv, 3 * (int)H, h, (int)H, (int)T, &L->qkv);
		if (emb_rope_fwd(m, &r, b, err) || emb_attention(m, ctx, &a, b, err))
			return -1;
		// h = norm1(h + out_proj ctx)
		emb_linear_fwd(m, tmp, (int)H, ctx, (int)H, (int)T, &L->o);
		emb_norm_fwd(m, h, tmp, h, (int)T, &L->norm1);
		// mid (T,2I) = [fc11 h | fc12 h]; tmp2 (T,I) = fc11 * silu(fc12)
		emb_linear_fwd(m, mid, 2 * (int)I, h, (int)H, (int)T, &L->fc1);
		emb_glu_fwd(m, mid + T * 2 * I, mid, (int)T, (int)I, EMB_ACT_SILU, 0);
		// h = norm2(h + fc2 (..))
		emb_linear_fwd(m, tmp, (int)H, mid + T * 2 * I, (int)I, (int)T,
		               &L->fc2);
		emb_norm_fwd(m, h, tmp, h, (int)T, &L->norm2);
	}
	return 0;
}

static const char *const nomic_prefixes[] = { "", "bert.", "model.", NULL };

const emb_family emb_family_nomic = {
	.name = "nomic_bert",
	.prefixes = nomic_prefixes,
	.probe = "embeddings.word_embeddings.weight",
	.config = nomic_config,
	.load = nomic_load,
	.forward = nomic_forward,
	.release = nomic_release,
};
