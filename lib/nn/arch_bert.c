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

/* tensor names of each layout (after the prefix) */
#define BERT_EMB(tt) \
	.word = "embeddings.word_embeddings.weight", .type = tt, \
	.pos = "embeddings.position_embeddings.weight", \
	.emb_norm = "embeddings.LayerNorm"

static const emb_net_names names_bert = {
	BERT_EMB("embeddings.token_type_embeddings.weight"),
	.layer = "encoder.layer.%d.",
	.q = "attention.self.query", .k = "attention.self.key",
	.v = "attention.self.value", .o = "attention.output.dense",
	.attn_norm = "attention.output.LayerNorm", .up = "intermediate.dense",
	.down = "output.dense", .ffn_norm = "output.LayerNorm",
};
static const emb_net_names names_distil = {
	BERT_EMB(NULL),
	.layer = "transformer.layer.%d.",
	.q = "attention.q_lin", .k = "attention.k_lin", .v = "attention.v_lin",
	.o = "attention.out_lin", .attn_norm = "sa_layer_norm",
	.up = "ffn.lin1", .down = "ffn.lin2", .ffn_norm = "output_layer_norm",
};
static const emb_net_names names_mpnet = {
	BERT_EMB(NULL),
	.relbias = "encoder.relative_attention_bias.weight",
	.layer = "encoder.layer.%d.",
	.q = "attention.attn.q", .k = "attention.attn.k", .v = "attention.attn.v",
	.o = "attention.attn.o", .attn_norm = "attention.LayerNorm",
	.up = "intermediate.dense", .down = "output.dense",
	.ffn_norm = "output.LayerNorm",
};

/* the post-norm encoder with absolute positions, biases everywhere */
static void bert_net(emb_model *m, int pad)
{
	emb_net *d = &m->net;

	d->place = EMB_PLACE_POST;
	d->ffn = EMB_FFN_MLP;
	d->pos = EMB_POS_TABLE;
	d->norm_kind = EMB_NORM_LN;
	d->norm_bias = d->bias_qkv = d->bias_o = d->bias_up = d->bias_down = 1;
	d->pad = pad;
}

/* positions from padding_idx: max_position_embeddings - pad - 1 usable */
static int pad_positions(emb_model *m, const json_t *cfg, emb_err *err)
{
	int pad;

	if (emb_cfg_int(&pad, cfg, "pad_token_id", 1, 0, err))
		return -1;
	if (m->max_pos <= pad + 1)
		return emb_err_set(err, "config.json: field "
		                   "'max_position_embeddings' (%d) must be more than "
		                   "'pad_token_id' + 1 (%d)", m->max_pos, pad + 1);
	m->net.pad = pad;
	m->usable_pos = m->max_pos - pad - 1;
	return 0;
}

static int bert_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	const char *pet;

	if (emb_cfg_dims(m, cfg, "hidden_size", "num_hidden_layers",
	                 "num_attention_heads", "intermediate_size", -1, err) ||
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
	if (emb_cfg_head_dim(m, "hidden_size", "num_attention_heads", err))
		return -1;
	if (!(m->eps >= 0))
		return emb_err_set(err, "config.json: field 'layer_norm_eps' must "
		                   "not be negative");
	m->usable_pos = m->max_pos;
	bert_net(m, -1);
	return emb_net_layers(m, err);
}

/* RoBERTa / XLM-R: position of token i is padding_idx + 1 + i */
static int roberta_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	return bert_config(m, cfg, err) || pad_positions(m, cfg, err) ? -1 : 0;
}

static int distilbert_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	if (emb_cfg_dims(m, cfg, "dim", "n_layers", "n_heads", "hidden_dim", -1,
	                 err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 512, 1, err) ||
	    emb_cfg_act(&m->act, cfg, "activation", "gelu", err) ||
	    emb_cfg_head_dim(m, "dim", "n_heads", err))
		return -1;
	m->eps = 1e-12f;
	m->type_vocab = 2;      /* token_type_ids are accepted and ignored */
	m->usable_pos = m->max_pos;
	bert_net(m, -1);
	return emb_net_layers(m, err);
}

/* MPNet: positions from padding_idx, a relative position bias (T5
 * buckets) shared by all layers */
static int mpnet_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	if (emb_cfg_dims(m, cfg, "hidden_size", "num_hidden_layers",
	                 "num_attention_heads", "intermediate_size", -1, err) ||
	    emb_cfg_int(&m->max_pos, cfg, "max_position_embeddings", 514, 1, err) ||
	    emb_cfg_float(&m->eps, cfg, "layer_norm_eps", 1e-12, err) ||
	    emb_cfg_act(&m->act, cfg, "hidden_act", "gelu", err) ||
	    emb_cfg_int(&m->net.buckets, cfg, "relative_attention_num_buckets",
	                32, 2, err) ||
	    emb_cfg_head_dim(m, "hidden_size", "num_attention_heads", err) ||
	    pad_positions(m, cfg, err))
		return -1;
	m->type_vocab = 2;
	bert_net(m, m->net.pad);
	return emb_net_layers(m, err);
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
	return head_load(m, &heads_bert, m->eps, err);
}

static int roberta_head(emb_model *m, emb_err *err)   /* also MPNet */
{
	return head_load(m, &heads_roberta, m->eps, err);
}

static int distil_head(emb_model *m, emb_err *err)
{
	return head_load(m, &heads_distil, 1e-12f, err);
}

/* the encoder's tensor prefixes: none, the family's, "model." */
#define BERT_FAMILY(nm, cfg, tab, hd, pre) \
	.name = nm, .config = cfg, .names = tab, .head = hd, \
	.probe = "embeddings.word_embeddings.weight", \
	.prefixes = EMB_LIST("", pre, "model.")

const emb_family emb_family_bert = {
	BERT_FAMILY("bert", bert_config, &names_bert, bert_head, "bert."),
	.archs = EMB_LIST("BertModel", "BertForMaskedLM", "BertForPreTraining",
	                  "BertForSequenceClassification",
	                  "BertForTokenClassification",
	                  "BertForNextSentencePrediction",
	                  "BertForMultipleChoice", "BertForQuestionAnswering",
	                  "BertLMHeadModel"),
	.types = EMB_TYPES({ "bert", "BertModel" }),
};
const emb_family emb_family_roberta = {
	BERT_FAMILY("roberta", roberta_config, &names_bert, roberta_head,
	            "roberta."),
	.archs = EMB_LIST("RobertaModel", "RobertaForMaskedLM",
	                  "RobertaForSequenceClassification", "XLMRobertaModel",
	                  "XLMRobertaForMaskedLM",
	                  "XLMRobertaForSequenceClassification",
	                  "CamembertModel"),
	.types = EMB_TYPES({ "roberta", "RobertaModel" },
	                   { "xlm-roberta", "XLMRobertaModel" }),
};
const emb_family emb_family_distilbert = {
	BERT_FAMILY("distilbert", distilbert_config, &names_distil, distil_head,
	            "distilbert."),
	.archs = EMB_LIST("DistilBertModel", "DistilBertForMaskedLM",
	                  "DistilBertForSequenceClassification"),
	.types = EMB_TYPES({ "distilbert", "DistilBertModel" }),
};
const emb_family emb_family_mpnet = {
	BERT_FAMILY("mpnet", mpnet_config, &names_mpnet, roberta_head, "mpnet."),
	.archs = EMB_LIST("MPNetModel", "MPNetForMaskedLM",
	                  "MPNetForSequenceClassification"),
	.types = EMB_TYPES({ "mpnet", "MPNetModel" }),
};
