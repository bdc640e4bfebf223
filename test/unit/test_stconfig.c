/*
 * test_stconfig.c - the sentence-transformers module configs
 * (modules.json, 1_Pooling/config.json, sentence_bert_config.json,
 * config_sentence_transformers.json) of real models and broken ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tool/emb-tool.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* stconfig: sentence-transformers modules                             */

static char *model_dir(const char *name)
{
	static char b[1024];

	snprintf(b, sizeof(b), "%s/test/data/models/%s", tu_top(), name);
	return b;
}

static void st_ok(emb_st_config *c, const char *dir)
{
	emb_err err = {{0}};

	cr_assert_eq(emb_st_config_load(c, dir, &err), 0, "%s: %s", dir, err.msg);
}

static void st_fail(const char *dir, const char *file, const char *want)
{
	emb_st_config c;
	emb_err err = {{0}};

	cr_assert_eq(emb_st_config_load(&c, dir, &err), -1, "%s loaded, want '%s'",
	             dir, want);
	cr_assert_not_null(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
	cr_assert_not_null(strstr(err.msg, file), "error '%s' does not name %s",
	                   err.msg, file);
	cr_assert_eq(c.n_prompts, 0);
	cr_assert_null(c.prompts);
}

Test(stconfig, pool_mode_parse)
{
	cr_assert_eq(emb_pool_mode_parse("cls"), EMB_POOL_CLS);
	cr_assert_eq(emb_pool_mode_parse("mean"), EMB_POOL_MEAN);
	cr_assert_eq(emb_pool_mode_parse("mean_tokens"), EMB_POOL_MEAN);
	cr_assert_eq(emb_pool_mode_parse("max"), EMB_POOL_MAX);
	cr_assert_eq(emb_pool_mode_parse("max_tokens"), EMB_POOL_MAX);
	cr_assert_eq(emb_pool_mode_parse("cls_token"), EMB_POOL_CLS);
	cr_assert_eq(emb_pool_mode_parse("mean_sqrt_len"), EMB_POOL_MEAN_SQRT_LEN);
	cr_assert_eq(emb_pool_mode_parse("mean_sqrt_len_tokens"), EMB_POOL_MEAN_SQRT_LEN);
	cr_assert_eq(emb_pool_mode_parse("weightedmean"), EMB_POOL_WEIGHTED_MEAN);
	cr_assert_eq(emb_pool_mode_parse("lasttoken"), EMB_POOL_LAST);
	cr_assert_eq(emb_pool_mode_parse("cls,mean"), EMB_POOL_CLS | EMB_POOL_MEAN);
	cr_assert_eq(emb_pool_mode_parse("max+mean"), EMB_POOL_MAX | EMB_POOL_MEAN);
	cr_assert_eq(emb_pool_mode_parse(""), 0);
	cr_assert_eq(emb_pool_mode_parse(NULL), 0);
	cr_assert_eq(emb_pool_mode_parse("avg"), 0);
	cr_assert_eq(emb_pool_mode_parse("Mean"), 0);
	cr_assert_eq(emb_pool_mode_parse("mean,"), 0);
	cr_assert_eq(emb_pool_mode_parse("cls,bogus"), 0);
	cr_assert_eq(emb_pool_mode_parse("meanx"), 0);
}

Test(stconfig, minilm_old_booleans)
{
	emb_st_config c;

	st_ok(&c, model_dir("sentence-transformers--all-MiniLM-L6-v2"));
	cr_assert_eq(c.pool_modes, EMB_POOL_MEAN);
	cr_assert_eq(c.pool_dim, 384);
	cr_assert_eq(c.normalize, 1);
	cr_assert_eq(c.include_prompt, 1);
	cr_assert_eq(c.max_seq_length, 256);
	cr_assert_eq(c.do_lower_case, 0);
	cr_assert_eq(c.n_prompts, 0);
	cr_assert_null(c.default_prompt_name);
	emb_st_config_release(&c);
}

Test(stconfig, bge_new_form)
{
	emb_st_config c;

	st_ok(&c, model_dir("BAAI--bge-small-en-v1.5"));
	cr_assert_eq(c.pool_modes, EMB_POOL_CLS);
	cr_assert_eq(c.pool_dim, 384);
	cr_assert_eq(c.normalize, 1);
	cr_assert_eq(c.include_prompt, 1);
	cr_assert_eq(c.max_seq_length, 0);       /* not in this file */
	cr_assert_eq(c.n_prompts, 2);
	cr_assert_str_eq(emb_st_config_prompt(&c, "query"), "");
	cr_assert_str_eq(emb_st_config_prompt(&c, "document"), "");
	cr_assert_null(emb_st_config_prompt(&c, "passage"));
	cr_assert_null(c.default_prompt_name);
	emb_st_config_release(&c);
}

Test(stconfig, e5_and_mpnet)
{
	emb_st_config c;

	st_ok(&c, model_dir("intfloat--e5-small-v2"));
	cr_assert_eq(c.pool_modes, EMB_POOL_MEAN);
	cr_assert_eq(c.max_seq_length, 512);
	cr_assert_eq(c.n_prompts, 2);
	emb_st_config_release(&c);
	st_ok(&c, model_dir("sentence-transformers--all-mpnet-base-v2"));
	cr_assert_eq(c.pool_dim, 768);
	cr_assert_eq(c.max_seq_length, 384);
	cr_assert_eq(c.normalize, 1);
	emb_st_config_release(&c);
}

Test(stconfig, no_modules)
{
	emb_st_config c;

	/* a plain HF model (cross-encoder): no ST files at all */
	st_ok(&c, model_dir("cross-encoder--ms-marco-MiniLM-L-6-v2"));
	cr_assert_eq(c.pool_modes, 0);
	cr_assert_eq(c.normalize, 0);
	cr_assert_eq(c.max_seq_length, 0);
	cr_assert_eq(c.include_prompt, 1);
	emb_st_config_release(&c);
	st_ok(&c, tu_scratch("st-empty"));
	cr_assert_eq(c.pool_modes, 0);
	emb_st_config_release(&c);
}

static const char *st_dir(const char *name, const char *modules,
                          const char *pool_path, const char *pool)
{
	const char *d = tu_scratch(name);

	if (modules)
		tu_put_text(tu_pathf(d, "modules.json"), modules);
	if (pool) {
		char sub[1200];
		snprintf(sub, sizeof(sub), "%s/%s", d, pool_path);
		mkdir(sub, 0777);
		tu_put_text(tu_pathf(sub, "config.json"), pool);
	}
	return d;
}

#define MODS(pool_path, extra) \
	"[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"}," \
	"{\"idx\":1,\"name\":\"1\",\"path\":\"" pool_path "\",\"type\":\"sentence_transformers.models.Pooling\"}" extra "]"

Test(stconfig, pooling_path_from_modules)
{
	emb_st_config c;
	const char *d = st_dir("st-path", MODS("pool_here", ""), "pool_here",
	                       "{\"word_embedding_dimension\":32,"
	                       "\"pooling_mode_max_tokens\":true,"
	                       "\"pooling_mode_mean_tokens\":true,"
	                       "\"pooling_mode_lasttoken\":false,"
	                       "\"include_prompt\":false}");

	st_ok(&c, d);
	cr_assert_eq(c.pool_modes, EMB_POOL_MAX | EMB_POOL_MEAN);
	cr_assert_eq(c.pool_dim, 32);
	cr_assert_eq(c.include_prompt, 0);
	cr_assert_eq(c.normalize, 0);
	emb_st_config_release(&c);
}

Test(stconfig, every_old_flag)
{
	static const struct {
		const char *key;
		unsigned bit;
	} f[] = {
		{"pooling_mode_cls_token", EMB_POOL_CLS},
		{"pooling_mode_mean_tokens", EMB_POOL_MEAN},
		{"pooling_mode_max_tokens", EMB_POOL_MAX},
		{"pooling_mode_mean_sqrt_len_tokens", EMB_POOL_MEAN_SQRT_LEN},
		{"pooling_mode_weightedmean_tokens", EMB_POOL_WEIGHTED_MEAN},
		{"pooling_mode_lasttoken", EMB_POOL_LAST},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char cfg[200];
		emb_st_config c;
		snprintf(cfg, sizeof(cfg), "{\"%s\": true}", f[i].key);
		st_ok(&c, st_dir("st-flags", MODS("1_Pooling", ""), "1_Pooling", cfg));
		cr_assert_eq(c.pool_modes, f[i].bit, "%s", f[i].key);
		cr_assert_eq(c.pool_dim, 0);
		emb_st_config_release(&c);
	}
}

Test(stconfig, new_form_modes)
{
	static const struct {
		const char *mode;
		unsigned bit;
	} f[] = {
		{"\"mean\"", EMB_POOL_MEAN}, {"\"max\"", EMB_POOL_MAX},
		{"\"lasttoken\"", EMB_POOL_LAST},
		{"\"mean_sqrt_len_tokens\"", EMB_POOL_MEAN_SQRT_LEN},
		{"\"weightedmean\"", EMB_POOL_WEIGHTED_MEAN},
		{"[\"cls\", \"mean\"]", EMB_POOL_CLS | EMB_POOL_MEAN},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char cfg[200];
		emb_st_config c;
		snprintf(cfg, sizeof(cfg), "{\"embedding_dimension\": 48, "
		         "\"pooling_mode\": %s, \"pooling_mode_cls_token\": true}", f[i].mode);
		st_ok(&c, st_dir("st-new", MODS("1_Pooling", ""), "1_Pooling", cfg));
		cr_assert_eq(c.pool_modes, f[i].bit, "%s", f[i].mode);
		cr_assert_eq(c.pool_dim, 48);
		emb_st_config_release(&c);
	}
}

Test(stconfig, sbert_and_prompts)
{
	emb_st_config c;
	const char *d = tu_scratch("st-prompts");

	tu_put_text(tu_pathf(d, "sentence_bert_config.json"),
	         "{\"max_seq_length\": 77, \"do_lower_case\": true}");
	tu_put_text(tu_pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": {\"query\": \"query: \", \"passage\": \"passage: \"},"
	         " \"default_prompt_name\": \"query\"}");
	st_ok(&c, d);
	cr_assert_eq(c.max_seq_length, 77);
	cr_assert_eq(c.do_lower_case, 1);
	cr_assert_eq(c.n_prompts, 2);
	cr_assert_str_eq(emb_st_config_prompt(&c, "query"), "query: ");
	cr_assert_str_eq(emb_st_config_prompt(&c, "passage"), "passage: ");
	cr_assert_str_eq(c.default_prompt_name, "query");
	cr_assert_eq(c.pool_modes, 0);
	emb_st_config_release(&c);
	cr_assert_eq(c.n_prompts, 0);
	cr_assert_null(c.prompts);
	/* null values are defaults */
	tu_put_text(tu_pathf(d, "sentence_bert_config.json"), "{\"max_seq_length\": null}");
	tu_put_text(tu_pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": null, \"default_prompt_name\": null}");
	st_ok(&c, d);
	cr_assert_eq(c.max_seq_length, 0);
	cr_assert_eq(c.n_prompts, 0);
	emb_st_config_release(&c);
}

Test(stconfig, malformed)
{
	const char *d;

	d = st_dir("st-bad1", "{\"not\": \"an array\"}", NULL, NULL);
	st_fail(d, "modules.json", "not a JSON array");
	d = st_dir("st-bad2", "[{\"idx\": 0", NULL, NULL);
	st_fail(d, "modules.json", "invalid JSON at line 1");
	d = st_dir("st-bad3", "[{\"path\": \"\"}]", NULL, NULL);
	st_fail(d, "modules.json", "field 'type' must be a string");
	d = st_dir("st-bad4", MODS("1_Pooling", ""), NULL, NULL);
	st_fail(d, "1_Pooling/config.json", "missing");
	d = st_dir("st-bad5", MODS("1_Pooling", ""), "1_Pooling",
	           "{\"pooling_mode_mean_tokens\": \"yes\"}");
	st_fail(d, "1_Pooling/config.json", "field 'pooling_mode_mean_tokens' must be "
	        "true or false");
	d = st_dir("st-bad6", MODS("1_Pooling", ""), "1_Pooling",
	           "{\"pooling_mode\": \"avg\"}");
	st_fail(d, "1_Pooling/config.json", "field 'pooling_mode': unknown pooling mode 'avg'");
	d = st_dir("st-bad7", MODS("1_Pooling", ""), "1_Pooling",
	           "{\"pooling_mode_mean_tokens\": false}");
	st_fail(d, "1_Pooling/config.json", "no pooling mode");
	d = st_dir("st-bad8", MODS("1_Pooling", ""), "1_Pooling",
	           "{\"pooling_mode\": \"cls\", \"word_embedding_dimension\": -3}");
	st_fail(d, "1_Pooling/config.json", "field 'word_embedding_dimension' must be a "
	        "positive integer");
	d = st_dir("st-bad9", MODS("1_Pooling", ""), "1_Pooling",
	           "{\"pooling_mode\": \"cls\", \"include_prompt\": 0}");
	st_fail(d, "1_Pooling/config.json", "field 'include_prompt'");
	d = st_dir("st-bad10", MODS("../up", ""), NULL, NULL);
	st_fail(d, "modules.json", "field 'path' must be a relative path");
	d = st_dir("st-bad11", MODS("1_Pooling", ",{\"idx\":2,\"name\":\"2\",\"path\":"
	           "\"2_LSTM\",\"type\":\"sentence_transformers.models.LSTM\"}"),
	           "1_Pooling", "{\"pooling_mode\": \"mean\"}");
	st_fail(d, "modules.json", "module 'sentence_transformers.models.LSTM' (entry 2) "
	        "is not supported");
	d = st_dir("st-bad12", MODS("1_Pooling", ",{\"path\":\"p2\",\"type\":\"Pooling\"}"),
	           "1_Pooling", "{\"pooling_mode\": \"mean\"}");
	st_fail(d, "modules.json", "more than one Pooling module");

	d = tu_scratch("st-bad13");
	tu_put_text(tu_pathf(d, "sentence_bert_config.json"), "{\"max_seq_length\": \"256\"}");
	st_fail(d, "sentence_bert_config.json", "field 'max_seq_length' must be a "
	        "positive integer");
	tu_put_text(tu_pathf(d, "sentence_bert_config.json"), "{\"do_lower_case\": 1}");
	st_fail(d, "sentence_bert_config.json", "field 'do_lower_case'");
	tu_put_text(tu_pathf(d, "sentence_bert_config.json"), "[]");
	st_fail(d, "sentence_bert_config.json", "not a JSON object");

	d = tu_scratch("st-bad14");
	tu_put_text(tu_pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": {\"query\": 3}}");
	st_fail(d, "config_sentence_transformers.json", "field 'prompts.query' must be "
	        "a string");
	tu_put_text(tu_pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": {\"query\": \"q: \"}, \"default_prompt_name\": \"doc\"}");
	st_fail(d, "config_sentence_transformers.json", "'doc' is not in 'prompts'");
	tu_put_text(tu_pathf(d, "config_sentence_transformers.json"), "{\"prompts\": [\"q\"]}");
	st_fail(d, "config_sentence_transformers.json", "field 'prompts'");
}

Test(stconfig, new_st_type_names)
{
	emb_st_config c;
	const char *d = st_dir("st-types",
	    "[{\"path\":\"\",\"type\":\"sentence_transformers.base.modules.transformer.Transformer\"},"
	    "{\"path\":\"p\",\"type\":\"sentence_transformers.sentence_transformer.modules.pooling.Pooling\"},"
	    "{\"path\":\"n\",\"type\":\"sentence_transformers.sentence_transformer.modules.normalize.Normalize\"}]",
	    "p", "{\"pooling_mode\": \"lasttoken\"}");

	st_ok(&c, d);
	cr_assert_eq(c.pool_modes, EMB_POOL_LAST);
	cr_assert_eq(c.normalize, 1);
	emb_st_config_release(&c);
}
