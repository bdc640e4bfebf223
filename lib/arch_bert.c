/*
 * arch_bert.c - the BERT family (BertModel and the encoder of BertFor*
 * heads, prefix "bert."): Hugging Face modeling_bert semantics.
 *
 *   h = LayerNorm(word[id] + type[tt] + pos[p])
 *   per layer (post-norm):
 *     qkv = h Wqkv^T + b                   (Q, K, V fused at load)
 *     a   = LayerNorm(h + Wo softmax(q k^T / sqrt(dh)) v + bo)
 *     h   = LayerNorm(a + W2 act(W1 a + b1) + b2)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model-internal.h"

typedef struct bert_layer {
	emb_linear qkv, o, up, down;
	emb_norm ln_attn, ln_out;
} bert_layer;

typedef struct bert {
	const float *word;      /* (vocab, H) */
	const float *pos;       /* (max_pos, H) */
	const float *type;      /* (type_vocab, H) */
	emb_norm ln_emb;
	bert_layer *layer;      /* (layers) */
} bert;

static int bert_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	const char *pet;

	if (emb_cfg_int(&m->hidden, cfg, "hidden_size", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "num_hidden_layers", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "num_attention_heads", -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, "intermediate_size", -1, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
	    emb_cfg_int(&m->type_vocab, cfg, "type_vocab_size", 2, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 512, 1, err) ||
	    emb_cfg_float(&m->eps, cfg, "layer_norm_eps", 1e-12, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_act", "gelu", err) ||
	    emb_cfg_str(&pet, cfg, "position_embedding_type", "absolute", err))
		return -1;
	if (strcmp(pet, "absolute"))
		return emb_err_set(err, "config.json: field 'position_embedding_type' "
		                   "value '%s' is not supported (supported: absolute)",
		                   pet);
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field 'hidden_size' (%d) must "
		                   "be a multiple of 'num_attention_heads' (%d)",
		                   m->hidden, m->heads);
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'layer_norm_eps' must "
		                   "not be negative");
	m->head_dim = m->hidden / m->heads;
	m->usable_pos = m->max_pos;
	return 0;
}

static int bert_load(emb_model *m, emb_err *err)
{
	bert *w = calloc(1, sizeof(*w));
	int H = m->hidden;
	char n[8][96];

	if (!w || !(w->layer = calloc((size_t)m->layers, sizeof(bert_layer)))) {
		free(w);
		return emb_err_set(err, "out of memory");
	}
	m->fam_data = w;
	if (emb_model_table(&w->word, m, "embeddings.word_embeddings.weight",
	                    m->vocab, H, err) ||
	    emb_model_table(&w->pos, m, "embeddings.position_embeddings.weight",
	                    m->max_pos, H, err) ||
	    emb_model_table(&w->type, m, "embeddings.token_type_embeddings.weight",
	                    m->type_vocab, H, err) ||
	    emb_model_norm(&w->ln_emb, m, "embeddings.LayerNorm.weight",
	                   "embeddings.LayerNorm.bias", H, m->eps, err))
		return -1;
	for (int l = 0; l < m->layers; l++) {
		bert_layer *L = &w->layer[l];
		const char *wn[3] = { n[0], n[1], n[2] }, *bn[3] = { n[3], n[4], n[5] };
		const int outs[3] = { H, H, H };
		const char *parts[3] = { "query", "key", "value" };
		for (int i = 0; i < 3; i++) {
			snprintf(n[i], sizeof(n[i]),
			         "encoder.layer.%d.attention.self.%s.weight", l, parts[i]);
			snprintf(n[3 + i], sizeof(n[i]),
			         "encoder.layer.%d.attention.self.%s.bias", l, parts[i]);
		}
		if (emb_model_linear_cat(&L->qkv, m, 3, wn, bn, outs, H, err))
			return -1;
#define NM(i, fmt) (snprintf(n[i], sizeof(n[i]), "encoder.layer.%d." fmt, l), n[i])
		if (emb_model_linear(&L->o, m, NM(0, "attention.output.dense.weight"),
		                     NM(1, "attention.output.dense.bias"), H, H, err) ||
		    emb_model_norm(&L->ln_attn, m,
		                   NM(2, "attention.output.LayerNorm.weight"),
		                   NM(3, "attention.output.LayerNorm.bias"), H,
		                   m->eps, err) ||
		    emb_model_linear(&L->up, m, NM(4, "intermediate.dense.weight"),
		                     NM(5, "intermediate.dense.bias"), m->inter, H,
		                     err) ||
		    emb_model_linear(&L->down, m, NM(6, "output.dense.weight"),
		                     NM(7, "output.dense.bias"), H, m->inter, err) ||
		    emb_model_norm(&L->ln_out, m, NM(0, "output.LayerNorm.weight"),
		                   NM(1, "output.LayerNorm.bias"), H, m->eps, err))
			return -1;
#undef NM
	}
	return 0;
}

static void bert_release(emb_model *m)
{
	bert *w = m->fam_data;

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

/* rows of sequences [begin, end): word + type, + position, LayerNorm */
static void embed_task(void *ctx, size_t begin, size_t end, int tid)
{
	const embed_job *j = ctx;
	const bert *w = j->m->fam_data;
	const emb_kernels *k = j->m->k;
	int H = j->m->hidden;

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		const emb_seq *q = &j->b->seqs[s];
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			int tt = q->type_ids ? q->type_ids[i] : 0;
			memcpy(h, w->word + (size_t)q->ids[i] * H, (size_t)H * sizeof(float));
			k->add(h, w->type + (size_t)tt * H, H);
			k->add(h, w->pos + (size_t)i * H, H);
			k->layernorm(h, h, w->ln_emb.w, w->ln_emb.b, H, w->ln_emb.eps);
		}
	}
}

static int bert_forward(emb_model *m, float *out, const emb_batch *b,
                        emb_err *err)
{
	const bert *w = m->fam_data;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	float *qkv, *ctx, *tmp, *mid, *h = out;
	embed_job ej = { m, h, b };

	/* scratch: qkv (T,3H), ctx (T,H), tmp (T,H), mid (T,I) */
	if (T > SIZE_MAX / (5 * H + I) / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (!(qkv = emb_model_scratch(m, T * (5 * H + I), err)))
		return -1;
	ctx = qkv + T * 3 * H;
	tmp = ctx + T * H;
	mid = tmp + T * H;

	// h (T,H) = LN(word[ids] + type[tt] + pos)
	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const bert_layer *L = &w->layer[l];
		emb_attn a = {
			.heads = m->heads, .kv_heads = m->heads, .head_dim = m->head_dim,
			.q = qkv, .k = qkv + H, .v = qkv + 2 * H,
			.ldq = 3 * (int)H, .ldk = 3 * (int)H, .ldv = 3 * (int)H,
			.scale = 1.0f / sqrtf((float)m->head_dim),
		};
		// h (T,H) @ Wqkv (3H,H)^T -> qkv (T,3H)
		emb_linear_fwd(m, qkv, 3 * (int)H, h, (int)H, (int)T, &L->qkv);
		// qkv -> ctx (T,H)
		if (emb_attention(m, ctx, &a, b, err))
			return -1;
		// ctx (T,H) @ Wo (H,H)^T -> tmp (T,H); h = LN(tmp + h)
		emb_linear_fwd(m, tmp, (int)H, ctx, (int)H, (int)T, &L->o);
		emb_norm_fwd(m, h, tmp, h, (int)T, &L->ln_attn);
		// h (T,H) @ W1 (I,H)^T -> mid (T,I); act
		emb_linear_fwd(m, mid, (int)I, h, (int)H, (int)T, &L->up);
		emb_act_fwd(m, mid, (int)T, (int)I, m->act);
		// mid (T,I) @ W2 (H,I)^T -> tmp (T,H); h = LN(tmp + h)
		emb_linear_fwd(m, tmp, (int)H, mid, (int)I, (int)T, &L->down);
		emb_norm_fwd(m, h, tmp, h, (int)T, &L->ln_out);
	}
	return 0;
}

/* find NAME with no prefix ("classifier.weight", "cls.predictions.*") */
static const emb_tensor *find_raw(const emb_model *m, const char *name)
{
	return emb_safetensors_find(m->st, name);
}

/*
 * BertForSequenceClassification: classifier(tanh(pooler(h[CLS])));
 * BertForMaskedLM: decoder(LN(act(transform(h)))) + bias, decoder tied
 * to the word embeddings when cls.predictions.decoder.weight is absent.
 */
static int bert_head(emb_model *m, emb_err *err)
{
	const char *pre = m->prefix;
	int H = m->hidden, rc;
	char word[160];

	if (m->head == EMB_HEAD_CLASSIFIER) {
		m->cls.pre_act = EMB_ACT_TANH;
		if (emb_model_linear(&m->cls.pre, m, "pooler.dense.weight",
		                     "pooler.dense.bias", H, H, err))
			return -1;
		m->prefix = "";
		rc = emb_model_linear(&m->cls.out, m, "classifier.weight",
		                      "classifier.bias", m->num_labels, H, err);
		m->prefix = pre;
		return rc;
	}
	if (m->head != EMB_HEAD_MLM)
		return emb_err_set(err, "%s: no head to load", m->dir);
	snprintf(word, sizeof(word), "%sembeddings.word_embeddings.weight", pre);
	m->prefix = "";
	m->mlm.act = m->act;
	rc = emb_model_linear(&m->mlm.transform, m,
	                      "cls.predictions.transform.dense.weight",
	                      "cls.predictions.transform.dense.bias", H, H, err) ||
	     emb_model_norm(&m->mlm.ln, m,
	                    "cls.predictions.transform.LayerNorm.weight",
	                    "cls.predictions.transform.LayerNorm.bias", H,
	                    m->eps, err) ||
	     emb_model_linear(&m->mlm.decoder, m,
	                      find_raw(m, "cls.predictions.decoder.weight") ?
	                      "cls.predictions.decoder.weight" : word,
	                      find_raw(m, "cls.predictions.decoder.bias") ?
	                      "cls.predictions.decoder.bias" :
	                      "cls.predictions.bias", m->vocab, H, err) ? -1 : 0;
	m->prefix = pre;
	return rc;
}

static const char *const bert_prefixes[] = { "", "bert.", "model.", NULL };

const emb_family emb_family_bert = {
	.name = "bert",
	.prefixes = bert_prefixes,
	.probe = "embeddings.word_embeddings.weight",
	.config = bert_config,
	.load = bert_load,
	.forward = bert_forward,
	.release = bert_release,
	.head = bert_head,
};
