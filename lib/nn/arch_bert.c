/*
 * arch_bert.c - the BERT family (BertModel and the encoder of BertFor*
 * heads, prefix "bert."): Hugging Face modeling_bert semantics.
 *
 *   h = LayerNorm(word[id] + type[tt] + pos[p])
 *   per layer (post-norm):
 *     qkv = h Wqkv^T + b                   (Q, K, V fused at load)
 *     a   = LayerNorm(h + Wo softmax(q k^T / sqrt(dh)) v + bo)
 *     h   = LayerNorm(a + W2 act(W1 a + b1) + b2)
 *
 * The same post-norm encoder under other names and embeddings:
 *   roberta    (RoBERTa, XLM-R) positions from padding_idx, prefix roberta.
 *   distilbert no token types, transformer.layer.N.{q_lin,...}
 *   mpnet      positions from padding_idx, no token types, a relative
 *              position bias (T5 buckets) shared by all layers
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

typedef struct bert_layer {
	emb_linear qkv, o, up, down;
	emb_norm ln_attn, ln_out;
} bert_layer;

/* tensor names of a layout (after the prefix; "%d" is the layer) */
typedef struct bert_names {
	const char *type;       /* token type table or NULL */
	const char *layer;      /* "encoder.layer.%d." */
	const char *q, *k, *v, *o, *ln_attn, *up, *down, *ln_out;
} bert_names;

static const bert_names names_bert = {
	"embeddings.token_type_embeddings.weight", "encoder.layer.%d.",
	"attention.self.query", "attention.self.key", "attention.self.value",
	"attention.output.dense", "attention.output.LayerNorm",
	"intermediate.dense", "output.dense", "output.LayerNorm",
};
static const bert_names names_distil = {
	NULL, "transformer.layer.%d.",
	"attention.q_lin", "attention.k_lin", "attention.v_lin",
	"attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2",
	"output_layer_norm",
};
static const bert_names names_mpnet = {
	NULL, "encoder.layer.%d.",
	"attention.attn.q", "attention.attn.k", "attention.attn.v",
	"attention.attn.o", "attention.LayerNorm", "intermediate.dense",
	"output.dense", "output.LayerNorm",
};

typedef struct bert {
	const bert_names *nm;
	int pad;                /* >= 0: positions from padding_idx (RoBERTa) */
	int buckets;            /* MPNet relative attention buckets, 0: none */
	const float *word;      /* (vocab, H) */
	const float *pos;       /* (max_pos, H) */
	const float *type;      /* (type_vocab, H) or NULL */
	const float *relw;      /* (buckets, heads) */
	emb_norm ln_emb;
	bert_layer *layer;      /* (layers) */
} bert;

static bert *bert_new(emb_model *m, const bert_names *nm, int pad,
                      emb_err *err)
{
	bert *w = calloc(1, sizeof(*w));

	if (!w) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	w->nm = nm;
	w->pad = pad;
	m->fam_data = w;
	return w;
}

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
	return bert_new(m, &names_bert, -1, err) ? 0 : -1;
}

/* RoBERTa / XLM-R: position of token i is padding_idx + 1 + i */
static int roberta_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	int pad;

	if (bert_config(m, cfg, err) ||
	    emb_cfg_int(&pad, cfg, "pad_token_id", 1, 0, err))
		return -1;
	((bert *)m->fam_data)->pad = pad;
	if (m->max_pos <= pad + 1)
		return emb_err_set(err, "config.json: field "
		                   "'max_position_embeddings' (%d) must be more than "
		                   "'pad_token_id' + 1 (%d)", m->max_pos, pad + 1);
	m->usable_pos = m->max_pos - pad - 1;
	return 0;
}

static int distilbert_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	if (emb_cfg_int(&m->hidden, cfg, "dim", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "n_layers", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "n_heads", -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, "hidden_dim", -1, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 512, 1, err) ||
	    emb_cfg_act(&m->act, cfg, "activation", "gelu", err))
		return -1;
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field 'dim' (%d) must be a "
		                   "multiple of 'n_heads' (%d)", m->hidden, m->heads);
	m->eps = 1e-12f;
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->head_dim = m->hidden / m->heads;
	m->usable_pos = m->max_pos;
	return bert_new(m, &names_distil, -1, err) ? 0 : -1;
}

static int mpnet_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	int pad;
	bert *w;

	if (emb_cfg_int(&m->hidden, cfg, "hidden_size", -1, 1, err) ||
	    emb_cfg_int(&m->layers, cfg, "num_hidden_layers", -1, 1, err) ||
	    emb_cfg_int(&m->heads, cfg, "num_attention_heads", -1, 1, err) ||
	    emb_cfg_int(&m->inter, cfg, "intermediate_size", -1, 1, err) ||
	    emb_cfg_int(&m->vocab, cfg, "vocab_size", -1, 1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 514, 1, err) ||
	    emb_cfg_float(&m->eps, cfg, "layer_norm_eps", 1e-12, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_act", "gelu", err) ||
	    emb_cfg_int(&pad, cfg, "pad_token_id", 1, 0, err) ||
	    !(w = bert_new(m, &names_mpnet, -1, err)) ||
	    emb_cfg_int(&w->buckets, cfg, "relative_attention_num_buckets", 32,
	                2, err))
		return -1;
	if (m->hidden % m->heads)
		return emb_err_set(err, "config.json: field 'hidden_size' (%d) must "
		                   "be a multiple of 'num_attention_heads' (%d)",
		                   m->hidden, m->heads);
	if (m->max_pos <= pad + 1)
		return emb_err_set(err, "config.json: field "
		                   "'max_position_embeddings' (%d) must be more than "
		                   "'pad_token_id' + 1 (%d)", m->max_pos, pad + 1);
	w->pad = pad;
	m->type_vocab = 2;
	m->head_dim = m->hidden / m->heads;
	m->usable_pos = m->max_pos - pad - 1;
	return 0;
}

static int bert_load(emb_model *m, emb_err *err)
{
	bert *w = m->fam_data;
	const bert_names *nm = w->nm;
	int H = m->hidden;
	char n[8][128];

	if (!(w->layer = calloc((size_t)m->layers, sizeof(bert_layer))))
		return emb_err_set(err, "out of memory");
	if (emb_model_table(&w->word, m, "embeddings.word_embeddings.weight",
	                    m->vocab, H, err) ||
	    emb_model_table(&w->pos, m, "embeddings.position_embeddings.weight",
	                    m->max_pos, H, err) ||
	    (nm->type && emb_model_table(&w->type, m, nm->type, m->type_vocab, H,
	                                 err)) ||
	    emb_model_norm(&w->ln_emb, m, "embeddings.LayerNorm.weight",
	                   "embeddings.LayerNorm.bias", H, m->eps, err))
		return -1;
	if (w->buckets && emb_model_table(&w->relw, m,
	                                  "encoder.relative_attention_bias.weight",
	                                  w->buckets, m->heads, err))
		return -1;
	for (int l = 0; l < m->layers; l++) {
		bert_layer *L = &w->layer[l];
		const char *wn[3] = { n[0], n[1], n[2] }, *bn[3] = { n[3], n[4], n[5] };
		const int outs[3] = { H, H, H };
		const char *parts[3] = { nm->q, nm->k, nm->v };
		char pre[64];
		snprintf(pre, sizeof(pre), nm->layer, l);
		for (int i = 0; i < 3; i++) {
			snprintf(n[i], sizeof(n[i]), "%s%s.weight", pre, parts[i]);
			snprintf(n[3 + i], sizeof(n[i]), "%s%s.bias", pre, parts[i]);
		}
		if (emb_model_linear_cat(&L->qkv, m, 3, wn, bn, outs, H, err))
			return -1;
#define NM(i, part, suf) (snprintf(n[i], sizeof(n[i]), "%s%s.%s", pre, part, suf), n[i])
		if (emb_model_linear(&L->o, m, NM(0, nm->o, "weight"),
		                     NM(1, nm->o, "bias"), H, H, err) ||
		    emb_model_norm(&L->ln_attn, m, NM(2, nm->ln_attn, "weight"),
		                   NM(3, nm->ln_attn, "bias"), H, m->eps, err) ||
		    emb_model_linear(&L->up, m, NM(4, nm->up, "weight"),
		                     NM(5, nm->up, "bias"), m->inter, H, err) ||
		    emb_model_linear(&L->down, m, NM(6, nm->down, "weight"),
		                     NM(7, nm->down, "bias"), H, m->inter, err) ||
		    emb_model_norm(&L->ln_out, m, NM(0, nm->ln_out, "weight"),
		                   NM(1, nm->ln_out, "bias"), H, m->eps, err))
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
		int p = w->pad;         /* RoBERTa: pad + running count of non-pads */
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			int tt = q->type_ids ? q->type_ids[i] : 0;
			int pos = i;
			if (w->pad >= 0)
				pos = q->ids[i] == w->pad ? w->pad : ++p;
			memcpy(h, w->word + (size_t)q->ids[i] * H, (size_t)H * sizeof(float));
			if (w->type)
				k->add(h, w->type + (size_t)tt * H, H);
			k->add(h, w->pos + (size_t)pos * H, H);
			k->layernorm(h, h, w->ln_emb.w, w->ln_emb.b, H, w->ln_emb.eps);
		}
	}
}

/*
 * MPNet's relative position bucket (T5 style, bidirectional) of key j
 * for query i, computed in float32 as transformers does
 */
static int mpnet_bucket(int rel, int buckets, int max_distance)
{
	int n = -rel, ret = 0, nb = buckets / 2, exact = nb / 2;

	if (n < 0)
		ret += nb;
	n = n < 0 ? -n : n;
	if (n < exact)
		return ret + n;
	float v = logf((float)n / (float)exact);
	v = v / (float)log((double)max_distance / exact);
	v = v * (float)(nb - exact);
	int large = exact + (int)v;
	return ret + (large < nb - 1 ? large : nb - 1);
}

/* (heads, 2 maxlen - 1): bias of relative position j - i per head */
static float *mpnet_bias(emb_model *m, int maxlen, emb_err *err)
{
	const bert *w = m->fam_data;
	int R = 2 * maxlen - 1;
	float *t = malloc((size_t)R * (size_t)m->heads * sizeof(float));

	if (!t) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	for (int r = 0; r < R; r++) {
		int bk = mpnet_bucket(r - (maxlen - 1), w->buckets, 128);
		for (int h = 0; h < m->heads; h++)
			t[(size_t)h * R + r] = w->relw[(size_t)bk * m->heads + h];
	}
	return t;
}

static int bert_forward(emb_model *m, float *out, const emb_batch *b,
                        emb_err *err)
{
	const bert *w = m->fam_data;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	float *qkv, *ctx, *tmp, *mid, *h = out, *relbias = NULL;
	embed_job ej = { m, h, b };
	emb_post_attn pa = { 0 };
	size_t nmid;

	if (m->layers > 0)
		pa = (emb_post_attn){ &w->layer[0].o, &w->layer[0].up,
		                      &w->layer[0].down, &w->layer[0].ln_attn,
		                      &w->layer[0].ln_out, m->act };
	nmid = m->layers > 0 ? emb_post_attn_scratch(m, (int)T, &pa) : 0;

	/* scratch: qkv (T,3H), ctx (T,H), tmp (T,H), mid (T,I) or none */
	if (T > SIZE_MAX / (5 * H + I) / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (!(qkv = emb_model_scratch(m, T * 5 * H + nmid, err)))
		return -1;
	ctx = qkv + T * 3 * H;
	tmp = ctx + T * H;
	mid = tmp + T * H;

	if (w->buckets && !(relbias = mpnet_bias(m, b->maxlen, err)))
		return -1;
	// h (T,H) = LN(word[ids] + type[tt] + pos)
	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const bert_layer *L = &w->layer[l];
		emb_attn a = {
			.heads = m->heads, .kv_heads = m->heads, .head_dim = m->head_dim,
			.q = qkv, .k = qkv + H, .v = qkv + 2 * H,
			.ldq = 3 * (int)H, .ldk = 3 * (int)H, .ldv = 3 * (int)H,
			.scale = 1.0f / sqrtf((float)m->head_dim),
			.relbias = relbias, .rel_max = b->maxlen,
		};
		// h (T,H) @ Wqkv (3H,H)^T -> qkv (T,3H)
		emb_linear_fwd(m, qkv, 3 * (int)H, h, (int)H, (int)T, &L->qkv);
		// qkv -> ctx (T,H)
		if (emb_attention(m, ctx, &a, b, err)) {
			free(relbias);
			return -1;
		}
		// h = LN(h1 + down(act(up(h1)))), h1 = LN(h + o(ctx)) (T,H)
		pa = (emb_post_attn){ &L->o, &L->up, &L->down, &L->ln_attn,
		                      &L->ln_out, m->act };
		if (emb_post_attn_fwd(m, h, ctx, tmp, nmid ? mid : NULL, (int)T,
		                      &pa, err)) {
			free(relbias);
			return -1;
		}
	}
	free(relbias);
	return 0;
}

/* find NAME with no prefix ("classifier.weight", "cls.predictions.*") */
static const emb_tensor *find_raw(const emb_model *m, const char *name)
{
	return emb_safetensors_find(m->st, name);
}

/* the heads' tensors of each layout (without prefix) */
typedef struct head_names {
	const char *pre, *out;  /* classifier: out(act(pre(h[0]))) */
	int pre_act;
	const char *transform, *ln, *decoder, *bias, *bias2;  /* masked LM */
	int mlm_act;            /* -1: config's activation */
} head_names;

static const head_names heads_bert = {
	"%spooler.dense", "classifier", EMB_ACT_TANH,
	"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
	"cls.predictions.decoder", "cls.predictions.decoder.bias",
	"cls.predictions.bias", -1,
};
static const head_names heads_roberta = {   /* also MPNet */
	"classifier.dense", "classifier.out_proj", EMB_ACT_TANH,
	"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder",
	"lm_head.decoder.bias", "lm_head.bias", EMB_ACT_GELU,
};
static const head_names heads_distil = {
	"pre_classifier", "classifier", EMB_ACT_RELU,
	"vocab_transform", "vocab_layer_norm", "vocab_projector",
	"vocab_projector.bias", "vocab_projector.bias", -1,
};

/*
 * ForSequenceClassification: out(act(pre(h[first token])));
 * ForMaskedLM: decoder(LN(act(transform(h)))) + bias, the decoder tied to
 * the word embeddings when its weight is absent.  Head tensors carry no
 * prefix (BERT's pooler does).
 */
static int head_load(emb_model *m, const head_names *hn, float ln_eps,
                     emb_err *err)
{
	const char *pre = m->prefix;
	int H = m->hidden, rc;
	char a[160], b[160], c[200], d[200];

	m->prefix = "";
	if (m->head == EMB_HEAD_CLASSIFIER) {
		m->cls.pre_act = hn->pre_act;
		snprintf(a, sizeof(a), hn->pre, pre);
		snprintf(c, sizeof(c), "%s.weight", a);
		snprintf(d, sizeof(d), "%s.bias", a);
		snprintf(a, sizeof(a), "%s.weight", hn->out);
		snprintf(b, sizeof(b), "%s.bias", hn->out);
		rc = emb_model_linear(&m->cls.pre, m, c, d, H, H, err) ||
		     emb_model_linear(&m->cls.out, m, a, b, m->num_labels, H, err)
		     ? -1 : 0;
	} else if (m->head == EMB_HEAD_MLM) {
		m->mlm.act = hn->mlm_act >= 0 ? hn->mlm_act : m->act;
		snprintf(a, sizeof(a), "%s.weight", hn->transform);
		snprintf(b, sizeof(b), "%s.bias", hn->transform);
		snprintf(c, sizeof(c), "%s.weight", hn->ln);
		snprintf(d, sizeof(d), "%s.bias", hn->ln);
		rc = emb_model_linear(&m->mlm.transform, m, a, b, H, H, err) ||
		     emb_model_norm(&m->mlm.ln, m, c, d, H, ln_eps, err) ? -1 : 0;
		snprintf(a, sizeof(a), "%s.weight", hn->decoder);
		if (!find_raw(m, a))
			snprintf(a, sizeof(a), "%sembeddings.word_embeddings.weight",
			         pre);
		snprintf(b, sizeof(b), "%s", find_raw(m, hn->bias) ? hn->bias :
		         hn->bias2);
		if (!rc)
			rc = emb_model_linear(&m->mlm.decoder, m, a, b, m->vocab, H,
			                      err);
	} else {
		rc = emb_err_set(err, "%s: no head to load", m->dir);
	}
	m->prefix = pre;
	return rc;
}

static int bert_head(emb_model *m, emb_err *err)
{
	const bert *w = m->fam_data;

	if (w->nm == &names_distil)
		return head_load(m, &heads_distil, 1e-12f, err);
	if (w->pad >= 0)
		return head_load(m, &heads_roberta, m->eps, err);
	return head_load(m, &heads_bert, m->eps, err);
}

static const char *const bert_prefixes[] = { "", "bert.", "model.", NULL };
static const char *const roberta_prefixes[] = { "", "roberta.", "model.",
                                                NULL };
static const char *const distil_prefixes[] = { "", "distilbert.", "model.",
                                               NULL };
static const char *const mpnet_prefixes[] = { "", "mpnet.", "model.", NULL };

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

const emb_family emb_family_roberta = {
	.name = "roberta",
	.prefixes = roberta_prefixes,
	.probe = "embeddings.word_embeddings.weight",
	.config = roberta_config,
	.load = bert_load,
	.forward = bert_forward,
	.release = bert_release,
	.head = bert_head,
};

const emb_family emb_family_distilbert = {
	.name = "distilbert",
	.prefixes = distil_prefixes,
	.probe = "embeddings.word_embeddings.weight",
	.config = distilbert_config,
	.load = bert_load,
	.forward = bert_forward,
	.release = bert_release,
	.head = bert_head,
};

const emb_family emb_family_mpnet = {
	.name = "mpnet",
	.prefixes = mpnet_prefixes,
	.probe = "embeddings.word_embeddings.weight",
	.config = mpnet_config,
	.load = bert_load,
	.forward = bert_forward,
	.release = bert_release,
	.head = bert_head,
};
