/*
 * vocabtxt.c - a BERT tokenizer from vocab.txt, tokenizer_config.json,
 * special_tokens_map.json and added_tokens.json, as transformers'
 * converter makes it: WordPiece, the BERT normalizer and pre-tokenizer,
 * the special and added tokens, BertProcessing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"

/* string member, or {"content": string} (AddedToken form) */
static const char *cfg_token(const json_t *cfg, const json_t *map,
                             const char *key, const char *def)
{
	const json_t *src[2] = {cfg, map};
	int i;

	for (i = 0; i < 2; i++) {
		json_t *v = json_object_get(src[i], key);
		if (json_is_object(v))
			v = json_object_get(v, "content");
		if (json_is_string(v))
			return json_string_value(v);
	}
	return def;
}

/* DIR/NAME's JSON object (DIR: the model directory, as for
 * tokenizer.json), NULL when absent (*bad 0) or bad (*bad 1, err set) */
static json_t *load_opt_json(const char *dir, const char *path, int *bad,
                             emb_err *err)
{
	json_t *j;

	*bad = 0;
	/* Gemma 3's tokenizer_config.json is 1.1 MB, nearly all of it
	 * added_tokens_decoder, which nothing here reads: no tree of it */
	j = emb_json_file_load_skip(dir, path, (size_t)16 << 20, 0,
	                            "added_tokens_decoder", err);
	if (!j) {
		*bad = errno != ENOENT;
		return NULL;
	}
	if (!json_is_object(j)) {
		*bad = 1;
		emb_err_set(err, "%s: not a JSON object", path);
		json_decref(j);
		return NULL;
	}
	return j;
}

static int cfg_bool(int *out, const json_t *cfg, const char *key,
                    const char *file, emb_err *err)
{
	json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return emb_err_set(err, "%s: field '%s' must be a boolean", file,
		                   key);
	*out = json_is_true(v);
	return 0;
}

/* DIR/added_tokens.json ({"token": id}): tokens added to a vocab.txt
 * model, in id order, as normalized non-special added tokens */
static int load_added_json(emb_tokenizer *t, const char *dir, emb_err *err)
{
	char path[4096];
	json_t *j;
	const char *key;
	json_t *val;
	int bad;
	json_int_t want = 0;

	snprintf(path, sizeof(path), "%s/added_tokens.json", dir);
	j = load_opt_json(dir, path, &bad, err);
	if (bad)
		return -1;
	if (!j)
		return 0;
	json_object_foreach(j, key, val) {
		if (!json_is_integer(val) || json_integer_value(val) < 0) {
			emb_err_set(err, "%s: field '%.60s' must be a token id",
			            path, key);
			json_decref(j);
			return -1;
		}
	}
	/* in id order (few entries: repeated scans) */
	for (;;) {
		const char *best = NULL;
		json_int_t bid = 0;
		json_object_foreach(j, key, val) {
			json_int_t id = json_integer_value(val);
			if (id >= want && (!best || id < bid)) {
				best = key;
				bid = id;
			}
		}
		if (!best)
			break;
		if (tk_added_add(t, best, 0, 1, 0, 0, 0) < 0) {
			json_decref(j);
			return emb_err_set(err, "out of memory");
		}
		want = bid + 1;
	}
	json_decref(j);
	return 0;
}

int tk_vocab_txt_load(emb_tokenizer *t, const char *dir, emb_err *err)
{
	char vocab[4096], cpath[4096], mpath[4096];
	json_t *cfg, *map;
	int bad, rc = -1, lower = 1, chinese = 1, strip = -1;
	const char *unk, *cls, *sep, *pad, *mask;
	int32_t cls_id, sep_id;
	json_t *sa;

	snprintf(vocab, sizeof(vocab), "%s/vocab.txt", dir);
	snprintf(cpath, sizeof(cpath), "%s/tokenizer_config.json", dir);
	snprintf(mpath, sizeof(mpath), "%s/special_tokens_map.json", dir);
	cfg = load_opt_json(dir, cpath, &bad, err);
	if (bad)
		return -1;
	map = load_opt_json(dir, mpath, &bad, err);
	if (bad) {
		json_decref(cfg);
		return -1;
	}
	if (cfg_bool(&lower, cfg, "do_lower_case", cpath, err) < 0 ||
	    cfg_bool(&chinese, cfg, "tokenize_chinese_chars", cpath, err) < 0)
		goto out;
	sa = json_object_get(cfg, "strip_accents");
	if (sa && !json_is_null(sa)) {
		if (!json_is_boolean(sa)) {
			emb_err_set(err, "%s: field 'strip_accents' must be a "
			            "boolean or null", cpath);
			goto out;
		}
		strip = json_is_true(sa);
	}
	unk = cfg_token(cfg, map, "unk_token", "[UNK]");
	cls = cfg_token(cfg, map, "cls_token", "[CLS]");
	sep = cfg_token(cfg, map, "sep_token", "[SEP]");
	pad = cfg_token(cfg, map, "pad_token", "[PAD]");
	mask = cfg_token(cfg, map, "mask_token", "[MASK]");
	if (tk_wordpiece_from_vocab_txt(&t->model, vocab, unk, err) < 0)
		goto out;
	t->has_norm = 1;
	t->norm.type = TK_NORM_BERT;
	t->norm.u.bert.clean_text = 1;
	t->norm.u.bert.chinese = chinese;
	t->norm.u.bert.lowercase = lower;
	t->norm.u.bert.strip_accents = strip < 0 ? lower : strip;
	t->has_pre = 1;
	t->pre.type = TK_PRE_BERT;
	/* the special tokens, in transformers' order, as non-normalized
	 * special added tokens */
	{
		const char *sp[5] = {pad, unk, cls, sep, mask};
		int i;
		for (i = 0; i < 5; i++)
			if (tk_added_add(t, sp[i], 1, 0, 0, 0, 0) < 0) {
				emb_err_set(err, "out of memory");
				goto out;
			}
	}
	if (load_added_json(t, dir, err) < 0 || tk_added_finish(t, err) < 0)
		goto out;
	cls_id = emb_tokenizer_token_to_id(t, cls);
	sep_id = emb_tokenizer_token_to_id(t, sep);
	if (tk_post_bert(&t->post, cls_id, sep_id, 0) < 0) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(cfg);
	json_decref(map);
	return rc;
}
