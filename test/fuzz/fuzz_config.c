/*
 * fuzz_config.c - config.json (model families, heads) and the
 * sentence-transformers module files: modules.json, 1_Pooling/config.json,
 * 2_Dense/config.json, sentence_bert_config.json,
 * config_sentence_transformers.json, tokenizer_config.json.
 *
 * A tiny valid BERT checkpoint (hidden 8, one layer, vocab 32, a Dense
 * 8 -> 4 module) is materialized once with emb_synth_materialize.  The
 * first input byte picks one of the files above, the rest of the input
 * replaces it; the other files keep their valid contents.  Then every
 * reader of those files runs (emb_st_config_load/_load_text,
 * emb_default_max_length, emb_activation_default, emb_model_load) and,
 * when the model loads, one short forward pass, the head, and pooling
 * with the loaded modules, so that a config whose numbers disagree with
 * the weights is caught at load and never reaches a kernel.
 */
#include "fuzz.h"

static const char *const files[] = {
	"config.json",
	"modules.json",
	"1_Pooling/config.json",
	"2_Dense/config.json",
	"sentence_bert_config.json",
	"config_sentence_transformers.json",
	"tokenizer_config.json",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static const char *const valid[NFILES] = {
	"{\"architectures\": [\"BertModel\"], \"model_type\": \"bert\", "
	"\"hidden_act\": \"gelu\", \"hidden_size\": 8, "
	"\"intermediate_size\": 16, \"layer_norm_eps\": 1e-12, "
	"\"max_position_embeddings\": 16, \"num_attention_heads\": 2, "
	"\"num_hidden_layers\": 1, \"pad_token_id\": 0, "
	"\"position_embedding_type\": \"absolute\", \"type_vocab_size\": 2, "
	"\"vocab_size\": 32}",
	"[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
	"\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, "
	"\"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
	"\"sentence_transformers.models.Pooling\"}, {\"idx\": 2, \"name\": "
	"\"2\", \"path\": \"2_Dense\", \"type\": "
	"\"sentence_transformers.models.Dense\"}, {\"idx\": 3, \"name\": "
	"\"3\", \"path\": \"3_Normalize\", \"type\": "
	"\"sentence_transformers.models.Normalize\"}]",
	"{\"word_embedding_dimension\": 8, \"pooling_mode_cls_token\": false, "
	"\"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": "
	"false, \"pooling_mode_mean_sqrt_len_tokens\": false}",
	"{\"in_features\": 8, \"out_features\": 4, \"bias\": true, "
	"\"activation_function\": \"torch.nn.modules.activation.Tanh\"}",
	"{\"max_seq_length\": 12, \"do_lower_case\": false}",
	"{\"prompts\": {\"query\": \"query: \", \"passage\": \"passage: \"}, "
	"\"default_prompt_name\": null}",
	"{\"do_lower_case\": true, \"model_max_length\": 512}",
};

#define T(name, shape, file) "{\"name\": \"" name "\", \"shape\": " shape \
	", \"scale\": 0.125" file "}"
#define L "encoder.layer.0."
static const char recipe[] =
	"{\"format\": \"emb-synth-1\", \"seed\": 7, \"tensors\": ["
	T("embeddings.word_embeddings.weight", "[32, 8]", "") ","
	T("embeddings.position_embeddings.weight", "[16, 8]", "") ","
	T("embeddings.token_type_embeddings.weight", "[2, 8]", "") ","
	T("embeddings.LayerNorm.weight", "[8]", "") ","
	T("embeddings.LayerNorm.bias", "[8]", "") ","
	T(L "attention.self.query.weight", "[8, 8]", "") ","
	T(L "attention.self.query.bias", "[8]", "") ","
	T(L "attention.self.key.weight", "[8, 8]", "") ","
	T(L "attention.self.key.bias", "[8]", "") ","
	T(L "attention.self.value.weight", "[8, 8]", "") ","
	T(L "attention.self.value.bias", "[8]", "") ","
	T(L "attention.output.dense.weight", "[8, 8]", "") ","
	T(L "attention.output.dense.bias", "[8]", "") ","
	T(L "attention.output.LayerNorm.weight", "[8]", "") ","
	T(L "attention.output.LayerNorm.bias", "[8]", "") ","
	T(L "intermediate.dense.weight", "[16, 8]", "") ","
	T(L "intermediate.dense.bias", "[16]", "") ","
	T(L "output.dense.weight", "[8, 16]", "") ","
	T(L "output.dense.bias", "[8]", "") ","
	T(L "output.LayerNorm.weight", "[8]", "") ","
	T(L "output.LayerNorm.bias", "[8]", "") ","
	T("pooler.dense.weight", "[8, 8]", "") ","
	T("pooler.dense.bias", "[8]", "") ","
	T("linear.weight", "[4, 8]", ", \"file\": \"2_Dense/model.safetensors\"") ","
	T("linear.bias", "[4]", ", \"file\": \"2_Dense/model.safetensors\"")
	"]}";

static char *dir;
static char *paths[NFILES];

static void setup(void)
{
	char *rpath = fuzz_tmp_path("recipe.json");
	emb_err err;

	dir = fuzz_tmp_path("model");
	fuzz_write(rpath, recipe, sizeof(recipe) - 1);
	if (emb_synth_materialize(rpath, fuzz_tmp(), dir, &err) < 0) {
		fprintf(stderr, "fuzz_config: %s\n", err.msg);
		abort();
	}
	free(rpath);
	for (size_t i = 0; i < NFILES; i++) {
		size_t n = strlen(dir) + strlen(files[i]) + 2;
		if (!(paths[i] = malloc(n)))
			abort();
		snprintf(paths[i], n, "%s/%s", dir, files[i]);
	}
	for (size_t i = 0; i < NFILES; i++) {  /* the module folders */
		char *slash = strrchr(paths[i], '/');
		if (slash > paths[i] + strlen(dir)) {
			*slash = 0;
			mkdir(paths[i], 0755);
			*slash = '/';
		}
	}
}

static void run_model(void)
{
	emb_model_opts mo = { .threads = 1 };
	emb_model *m;
	emb_st_config st;
	emb_err err;
	int32_t ids[3] = { 1, 5, 2 };
	emb_seq seq = { ids, NULL, 3 };
	float *out;
	int d;

	if (emb_model_load(&m, dir, &mo, &err) < 0) {
		fuzz_note("model", err.msg);
		return;
	}
	fuzz_note("model", "loaded");
	d = emb_model_hidden_size(m);
	FUZZ_CHECK(d > 0);
	if (emb_model_vocab_size(m) <= 5 || emb_model_max_positions(m) < 3 ||
	    emb_model_check(m, &seq, &err) < 0) {
		emb_model_free(m);
		return;
	}
	if (!(out = calloc(3 * (size_t)d, sizeof(float))))
		abort();
	if (emb_model_forward(m, out, &seq, 1, &err) == 0 &&
	    emb_st_config_load(&st, dir, &err) == 0) {
		emb_pool_spec ps = {
			.modes = st.pool_modes ? st.pool_modes : EMB_POOL_MEAN,
			.normalize = st.normalize, .include_prompt = 1,
			.in_dim = st.pool_dim, .dense = st.dense,
			.n_dense = st.n_dense,
		};
		float *pooled = NULL;
		int pn = 0;

		if (emb_pool_apply(&pooled, &pn, &ps, out, 3, d, 0, &err) == 0)
			FUZZ_CHECK(pn > 0);
		free(pooled);
		emb_st_config_release(&st);
	}
	free(out);
	for (int kind = EMB_OUT_LOGITS; kind <= EMB_OUT_SPLADE; kind++) {
		size_t w = emb_model_out_width(m, kind);
		if (w == 0 || w > (1u << 20))
			continue;
		if (!(out = calloc(3 * w, sizeof(float))))
			abort();
		emb_model_forward_head(m, out, kind, &seq, 1, &err);
		free(out);
	}
	for (int i = 0; i < emb_model_num_labels(m) && i < 4; i++)
		emb_model_label(m, i);
	emb_model_free(m);
}

int FUZZ_ENTRY(config)(const uint8_t *data, size_t size)
{
	emb_st_config st;
	emb_err err;
	int act;
	size_t which;

	if (!dir)
		setup();
	if (size < 1)
		return 0;
	which = data[0] % NFILES;
	for (size_t i = 0; i < NFILES; i++) {
		if (i == which)
			fuzz_write(paths[i], data + 1, size - 1);
		else
			fuzz_write(paths[i], valid[i], strlen(valid[i]));
	}
	if (emb_st_config_load(&st, dir, &err) == 0) {
		FUZZ_CHECK(st.n_dense == 0 || st.dense);
		for (size_t i = 0; i < st.n_prompts; i++)
			FUZZ_CHECK(emb_st_config_prompt(&st, st.prompts[i].name));
		emb_default_max_length(dir, &st, &err);
		emb_st_config_release(&st);
	} else {
		FUZZ_CHECK(err.msg[0]);
		fuzz_note("st config", err.msg);
	}
	if (emb_st_config_load_text(&st, dir, &err) == 0)
		emb_st_config_release(&st);
	emb_default_max_length(dir, NULL, &err);
	emb_activation_default(&act, dir, 1, &err);
	run_model();
	return 0;
}
