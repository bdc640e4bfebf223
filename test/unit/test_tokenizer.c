/*
 * test_tokenizer.c - the tokenizer against Hugging Face tokenizers'
 * goldens (test/data/tokenize), plus hand-checked cases: vocab.txt-only
 * models, offsets, invalid UTF-8, malformed tokenizer files.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tool/emb-tool.h"

/* data lives under $EMB_TOP/test/data, else ./test/data */
static void data_path(char *buf, size_t n, const char *rel)
{
	const char *top = getenv("EMB_TOP");

	snprintf(buf, n, "%s/test/data/%s", top && *top ? top : ".", rel);
}

static emb_tokenizer *load_model(const char *name)
{
	char dir[4096], rel[512];
	emb_tokenizer *tok = NULL;
	emb_err err = {{0}};

	snprintf(rel, sizeof(rel), "models/%s", name);
	data_path(dir, sizeof(dir), rel);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0,
	             "load %s: %s", dir, err.msg);
	cr_assert_not_null(tok);
	return tok;
}

static char *ids_str(const int32_t *v, size_t n)
{
	size_t cap = 16 * n + 8, len = 0, i;
	char *s = malloc(cap);

	len += (size_t)snprintf(s + len, cap - len, "[");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "",
		                        v[i]);
	snprintf(s + len, cap - len, "]");
	return s;
}

/* compare every line of test/data/tokenize/MODEL/FILE: ids, type ids
 * and tokens exactly; fail at the first mismatching record */
static void check_golden(const char *model, const char *file,
                         size_t max_length, int pairs)
{
	char path[4096], rel[512];
	emb_tokenizer *tok = load_model(model);
	emb_encoding enc;
	emb_tok_opts opts = {0};
	emb_err err = {{0}};
	FILE *f;
	char *line = NULL;
	size_t cap = 0, nrec = 0;
	ssize_t len;

	snprintf(rel, sizeof(rel), "tokenize/%s/%s", model, file);
	data_path(path, sizeof(path), rel);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	opts.max_length = max_length;
	emb_encoding_init(&enc);
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *r = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &je);
		json_t *text, *pair, *ids, *types, *toks;
		size_t i, n;

		cr_assert_not_null(r, "%s: bad golden line: %s", path, je.text);
		text = json_object_get(r, "text");
		pair = json_object_get(r, "text_pair");
		ids = json_object_get(r, "input_ids");
		types = json_object_get(r, "token_type_ids");
		toks = json_object_get(r, "tokens");
		cr_assert(json_is_string(text) && json_is_array(ids) &&
		          json_is_array(types) && json_is_array(toks));
		cr_assert(!pairs || json_is_string(pair));
		cr_assert_eq(emb_tokenize(&enc, tok, json_string_value(text),
		                          json_string_length(text),
		                          pairs ? json_string_value(pair) : NULL,
		                          pairs ? json_string_length(pair) : 0,
		                          &opts, &err), 0,
		             "%s id %lld: %s", path,
		             (long long)json_integer_value(json_object_get(r, "id")),
		             err.msg);
		n = json_array_size(ids);
		for (i = 0; i < n && i < enc.len; i++)
			if (enc.ids[i] != json_integer_value(json_array_get(ids, i)))
				break;
		if (i < n || enc.len != n) {
			char *got = ids_str(enc.ids, enc.len);
			char *want = json_dumps(ids, JSON_COMPACT);
			cr_assert_fail("%s: id %lld, token %zu differs\ntext: %s\n"
			        "pair: %s\ngot:  %s\nwant: %s", path,
			        (long long)json_integer_value(json_object_get(r, "id")),
			        i, json_string_value(text),
			        pairs ? json_string_value(pair) : "-", got, want);
			free(got);
			free(want);
			json_decref(r);
			break;
		}
		for (i = 0; i < n; i++) {
			const char *want = json_string_value(json_array_get(toks, i));
			const char *got = emb_tokenizer_id_to_token(tok, enc.ids[i]);
			cr_assert_eq(enc.type_ids[i],
			             json_integer_value(json_array_get(types, i)),
			             "%s: id %lld: type id of token %zu", path,
			             (long long)json_integer_value(json_object_get(r, "id")),
			             i);
			/* HF reports the matched text as the token of an unk
			 * (Unigram, BPE) or of an added token with lstrip/rstrip:
			 * those are not vocabulary strings; every other token
			 * must be its vocabulary string */
			if (want && emb_tokenizer_token_to_id(tok, want) < 0)
				continue;
			cr_assert(got && want && !strcmp(got, want),
			          "%s: id %lld: token %zu is '%s', want '%s'", path,
			          (long long)json_integer_value(json_object_get(r, "id")),
			          i, got ? got : "(null)", want ? want : "(null)");
		}
		/* truncated counts the tokens dropped */
		if (!max_length)
			cr_assert_eq(enc.truncated, 0);
		else if (enc.truncated)
			cr_assert_eq(enc.len, max_length);
		nrec++;
		json_decref(r);
	}
	free(line);
	fclose(f);
	cr_assert_gt(nrec, 100, "%s: only %zu records", path, nrec);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

#define GOLDEN(tag, model) \
	Test(tokenizer, tag##_full) { check_golden(model, "full.jsonl", 0, 0); } \
	Test(tokenizer, tag##_trunc16) { check_golden(model, "trunc16.jsonl", 16, 0); } \
	Test(tokenizer, tag##_pairs64) { check_golden(model, "pairs64.jsonl", 64, 1); }

GOLDEN(minilm, "sentence-transformers--all-MiniLM-L6-v2")
GOLDEN(bge, "BAAI--bge-small-en-v1.5")
GOLDEN(e5, "intfloat--e5-small-v2")
GOLDEN(msmarco, "cross-encoder--ms-marco-MiniLM-L-6-v2")
GOLDEN(mpnet, "sentence-transformers--all-mpnet-base-v2")
/* byte-level BPE */
GOLDEN(distilroberta, "sentence-transformers--all-distilroberta-v1")
GOLDEN(modernbert, "answerdotai--ModernBERT-large")
/* Unigram with a Precompiled charsmap */
GOLDEN(albert, "sentence-transformers--paraphrase-albert-small-v2")
GOLDEN(t5, "Falconsai--text_summarization")

/* ------------------------------------------------------------------ */
/* vocab.txt + tokenizer_config.json                                   */

/* splade_v2_distil has only vocab.txt (the bert-base-uncased vocabulary,
 * as all-MiniLM-L6-v2) and tokenizer_config.json (do_lower_case): its
 * BERT pipeline must give MiniLM's goldens */
Test(tokenizer, vocab_txt_matches_minilm_goldens)
{
	char path[4096];
	emb_tokenizer *tok = load_model("naver--splade_v2_distil");
	emb_encoding enc;
	emb_tok_opts opts = {0};
	emb_err err = {{0}};
	FILE *f;
	char *line = NULL;
	size_t cap = 0, nrec = 0;
	ssize_t len;

	cr_assert_eq(emb_tokenizer_vocab_size(tok), 30522);
	cr_assert_eq(emb_tokenizer_num_special(tok, 0), 2);
	cr_assert_eq(emb_tokenizer_num_special(tok, 1), 3);
	cr_assert_eq(emb_tokenizer_token_to_id(tok, "[CLS]"), 101);
	data_path(path, sizeof(path),
	          "tokenize/sentence-transformers--all-MiniLM-L6-v2/full.jsonl");
	f = fopen(path, "r");
	cr_assert_not_null(f);
	emb_encoding_init(&enc);
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *r = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, NULL);
		json_t *text = json_object_get(r, "text");
		json_t *ids = json_object_get(r, "input_ids");
		size_t i;
		cr_assert_eq(emb_tokenize(&enc, tok, json_string_value(text),
		                          json_string_length(text), NULL, 0,
		                          &opts, &err), 0, "%s", err.msg);
		cr_assert_eq(enc.len, json_array_size(ids), "record %zu: %s",
		             nrec, json_string_value(text));
		for (i = 0; i < enc.len; i++)
			cr_assert_eq(enc.ids[i],
			             json_integer_value(json_array_get(ids, i)),
			             "record %zu token %zu", nrec, i);
		json_decref(r);
		nrec++;
	}
	cr_assert_gt(nrec, 100);
	free(line);
	fclose(f);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* write FILE in DIR with CONTENT */
static void put_file(const char *dir, const char *file, const char *content)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(content, f);
	cr_assert_eq(fclose(f), 0);
}

/* a fresh directory under $EMB_TMP (else /tmp); new (rm_dir) */
static char *tmp_dir(void)
{
	const char *base = getenv("EMB_TMP");
	char tmpl[4096];
	char *d;

	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0777);
	snprintf(tmpl, sizeof(tmpl), "%s/emb-tok-XXXXXX", base);
	d = mkdtemp(tmpl);
	cr_assert_not_null(d, "mkdtemp %s: %s", tmpl, strerror(errno));
	return strdup(d);
}

static void rm_dir(char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(dir);
}

static void tokenize_ok(emb_encoding *enc, const emb_tokenizer *tok,
                        const char *text, const char *pair, size_t max)
{
	emb_tok_opts opts = {0};
	emb_err err = {{0}};

	opts.max_length = max;
	cr_assert_eq(emb_tokenize(enc, tok, text, strlen(text), pair,
	                          pair ? strlen(pair) : 0, &opts, &err), 0,
	             "tokenize '%s': %s", text, err.msg);
}

/* tokens of enc as one space-separated string */
static char *tok_str(const emb_tokenizer *tok, const emb_encoding *enc)
{
	static char buf[4096];
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < enc->len && n < sizeof(buf) - 64; i++) {
		const char *s = emb_tokenizer_id_to_token(tok, enc->ids[i]);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
		                      i ? " " : "", s ? s : "(null)");
	}
	return buf;
}

/* a small vocab.txt model: do_lower_case false, strip_accents false,
 * custom special tokens given as AddedToken objects */
Test(tokenizer, vocab_txt_config)
{
	char *dir = tmp_dir();
	emb_tokenizer *tok = NULL;
	emb_encoding enc;
	emb_err err = {{0}};

	put_file(dir, "vocab.txt",
	         "<pad>\n<unk>\n<cls>\n<sep>\n<mask>\nHello\nhello\n,\nwor\n"
	         "##ld\nCafé\ncafe\n##s\n");
	put_file(dir, "tokenizer_config.json",
	         "{\"do_lower_case\": false, \"strip_accents\": false,"
	         " \"unk_token\": \"<unk>\", \"cls_token\": {\"content\": "
	         "\"<cls>\"}, \"sep_token\": \"<sep>\", \"pad_token\": "
	         "\"<pad>\", \"mask_token\": \"<mask>\"}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s", err.msg);
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "Hello, world<mask> Cafés HELLO", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc),
	                 "<cls> Hello , wor ##ld <mask> Café ##s <unk> <sep>");
	cr_assert_eq(enc.special[0], 1);
	cr_assert_eq(enc.special[5], 0);   /* literal <mask>: not added */
	cr_assert_eq(enc.ids[5], 4);
	/* pairs: type ids 1 for B and its separator */
	tokenize_ok(&enc, tok, "hello", "cafe", 0);
	cr_assert_str_eq(tok_str(tok, &enc), "<cls> hello <sep> cafe <sep>");
	cr_assert_eq(enc.type_ids[2], 0);
	cr_assert_eq(enc.type_ids[3], 1);
	cr_assert_eq(enc.type_ids[4], 1);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
	/* added_tokens.json: split out of the text, ids after the vocab */
	put_file(dir, "added_tokens.json", "{\"<new>\": 13}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s", err.msg);
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "Hello<new>cafe", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc), "<cls> Hello <new> cafe <sep>");
	cr_assert_eq(enc.ids[2], 13);
	cr_assert_eq(emb_tokenizer_vocab_size(tok), 14);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
	put_file(dir, "added_tokens.json", "{\"<new>\": \"x\"}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1);
	cr_assert(strstr(err.msg, "added_tokens.json: field '<new>'"), "%s",
	          err.msg);
	put_file(dir, "added_tokens.json", "{}");
	/* do_lower_case true (default) with accents stripped */
	put_file(dir, "tokenizer_config.json", "{}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s", err.msg);
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "CAFÉ", NULL, 0);
	/* default special names [CLS]/[SEP] are not in this vocabulary:
	 * they get ids after it, as transformers adds them */
	cr_assert_eq(enc.len, 3);
	cr_assert_eq(enc.ids[1], 11);
	cr_assert_eq(enc.ids[0], emb_tokenizer_token_to_id(tok, "[CLS]"));
	cr_assert_geq(enc.ids[0], 13);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
	rm_dir(dir);
}

/* ------------------------------------------------------------------ */
/* offsets, checked by hand                                            */

Test(tokenizer, offsets_minilm)
{
	emb_tokenizer *tok = load_model("sentence-transformers--all-MiniLM-L6-v2");
	emb_encoding enc;
	/* code points: "Héllo, 世界! unbelievable" (界 is not in the
	 * vocabulary) */
	const char *text = "H\xc3\xa9llo, \xe4\xb8\x96\xe7\x95\x8c! unbelievable";
	const int32_t want[][2] = {
		{-1, -1}, {0, 5}, {5, 6}, {7, 8}, {8, 9}, {9, 10}, {11, 23},
		{-1, -1},
	};
	size_t i;

	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, text, NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc),
	                 "[CLS] hello , 世 [UNK] ! unbelievable [SEP]");
	cr_assert_eq(enc.len, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < enc.len; i++) {
		cr_assert_eq(enc.offsets[2 * i], want[i][0], "token %zu", i);
		cr_assert_eq(enc.offsets[2 * i + 1], want[i][1], "token %zu", i);
	}
	/* literal [SEP] in the text is the special token, offsets kept */
	tokenize_ok(&enc, tok, "a [SEP]b", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc), "[CLS] a [SEP] b [SEP]");
	cr_assert_eq(enc.offsets[4], 2);
	cr_assert_eq(enc.offsets[5], 7);
	cr_assert_eq(enc.special[2], 0);
	cr_assert_eq(enc.special[4], 1);
	/* removed control characters do not shift later offsets */
	tokenize_ok(&enc, tok, "\x01x\xe2\x80\x8b y", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc), "[CLS] x y [SEP]");
	cr_assert_eq(enc.offsets[2], 1);
	cr_assert_eq(enc.offsets[3], 2);
	cr_assert_eq(enc.offsets[4], 4);
	cr_assert_eq(enc.offsets[5], 5);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* mpnet: <mask> has lstrip; RobertaProcessing trims its offsets */
Test(tokenizer, offsets_mpnet_lstrip)
{
	emb_tokenizer *tok = load_model("sentence-transformers--all-mpnet-base-v2");
	emb_encoding enc;

	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "a   <mask>   b", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc), "<s> a <mask> b </s>");
	cr_assert_eq(enc.offsets[4], 4);
	cr_assert_eq(enc.offsets[5], 10);
	cr_assert_eq(enc.offsets[6], 13);
	cr_assert_eq(enc.offsets[7], 14);
	/* <unk> is a normalized added token: it matches after lowercasing */
	tokenize_ok(&enc, tok, "x <UNK>", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc), "<s> x <unk> </s>");
	cr_assert_eq(enc.offsets[4], 2);
	cr_assert_eq(enc.offsets[5], 7);
	/* pairs: <s> A </s></s> B </s>, all type 0 */
	tokenize_ok(&enc, tok, "a", "b", 0);
	cr_assert_str_eq(tok_str(tok, &enc), "<s> a </s> </s> b </s>");
	for (size_t i = 0; i < enc.len; i++)
		cr_assert_eq(enc.type_ids[i], 0);
	cr_assert_eq(emb_tokenizer_num_special(tok, 1), 4);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* Rust char::to_lowercase maps U+0130 to "i" + U+0307 (strip_accents
 * then drops the mark); Chinese characters are split apart */
Test(tokenizer, normalizer_details)
{
	emb_tokenizer *tok = load_model("sentence-transformers--all-MiniLM-L6-v2");
	emb_encoding enc;

	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "\xc4\xb0stanbul caf\x65\xcc\x81 \xe4\xb8\xad\xe6\x96\x87", NULL, 0);
	cr_assert_str_eq(tok_str(tok, &enc),
	                 "[CLS] istanbul cafe 中 文 [SEP]");
	/* a word longer than max_input_chars_per_word (100) is [UNK] */
	{
		char w[202];
		memset(w, 'a', 101);
		w[101] = 0;
		tokenize_ok(&enc, tok, w, NULL, 0);
		cr_assert_str_eq(tok_str(tok, &enc), "[CLS] [UNK] [SEP]");
		cr_assert_eq(enc.offsets[2], 0);
		cr_assert_eq(enc.offsets[3], 101);
	}
	/* empty and whitespace-only text: only the special tokens */
	tokenize_ok(&enc, tok, "", NULL, 0);
	cr_assert_eq(enc.len, 2);
	tokenize_ok(&enc, tok, " \t\n", NULL, 0);
	cr_assert_eq(enc.len, 2);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ */
/* truncation                                                          */

/* "x x x ..." and "y y y ...": one token per word */
static char *words(const char *w, int n)
{
	char *s = malloc((size_t)n * (strlen(w) + 1) + 1);
	int i;

	s[0] = 0;
	for (i = 0; i < n; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, w);
	}
	return s;
}

static void pair_split(const emb_tokenizer *tok, const char *a,
                       const char *b, size_t max, size_t want_a,
                       size_t want_b)
{
	emb_encoding enc;
	size_t sep, n;

	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, a, b, max);
	for (sep = 1; sep < enc.len && !enc.special[sep]; sep++)
		;
	n = enc.len - sep - 2;
	cr_assert_eq(sep - 1, want_a, "'%s' + '%s' at %zu: A keeps %zu, "
	             "want %zu", a, b, max, sep - 1, want_a);
	cr_assert_eq(n, want_b, "'%s' + '%s' at %zu: B keeps %zu, want %zu",
	             a, b, max, n, want_b);
	cr_assert_eq(enc.len, max);
	emb_encoding_release(&enc);
}

/* longest_first as tokenizers 0.23.2 does it (cases measured there) */
Test(tokenizer, truncation_longest_first)
{
	emb_tokenizer *tok = load_model("sentence-transformers--all-MiniLM-L6-v2");
	char *x13 = words("x", 13), *x15 = words("x", 15), *y12 = words("y", 12);
	char *y14 = words("y", 14), *y3 = words("y", 3), *y30 = words("y", 30);
	char *xa = words("x", 12), *xb;
	emb_encoding enc;

	/* only the longer side gives */
	pair_split(tok, x13, y3, 14, 8, 3);
	pair_split(tok, y3, x13, 14, 3, 8);
	/* both give: halves, the odd one to the longer */
	pair_split(tok, x13, y12, 14, 6, 5);
	pair_split(tok, y12, x13, 14, 5, 6);
	/* both reach max_length tokens: lengths compared are capped at
	 * max_length (at a word end), so a tie gives B the odd one */
	pair_split(tok, x15, y14, 14, 5, 6);
	pair_split(tok, y30, x15, 14, 5, 6);
	/* ...but a word that crosses max_length counts whole */
	xb = malloc(strlen(xa) + 16);
	sprintf(xb, "%s xylophone", xa);     /* 12 + 3 = 15 tokens */
	pair_split(tok, xb, y30, 14, 6, 5);
	/* single sequence: right side; truncated counts dropped tokens */
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, x15, NULL, 10);
	cr_assert_eq(enc.len, 10);
	cr_assert_eq(enc.truncated, 7);
	cr_assert_eq(enc.ids[9], 102);
	tokenize_ok(&enc, tok, x15, NULL, 17);
	cr_assert_eq(enc.truncated, 0);
	cr_assert_eq(enc.len, 17);
	/* no_special: neither specials nor their budget */
	{
		emb_tok_opts o = {0};
		emb_err err;
		o.no_special = 1;
		o.max_length = 4;
		cr_assert_eq(emb_tokenize(&enc, tok, x15, strlen(x15), NULL, 0,
		                          &o, &err), 0);
		cr_assert_eq(enc.len, 4);
		cr_assert_eq(enc.truncated, 11);
		cr_assert_eq(enc.special[0], 0);
		/* max_length below the number of specials is an error */
		o.no_special = 0;
		o.max_length = 1;
		cr_assert_eq(emb_tokenize(&enc, tok, "x", 1, NULL, 0, &o, &err),
		             -1);
		cr_assert(strstr(err.msg, "special"), "%s", err.msg);
	}
	emb_encoding_release(&enc);
	free(x13); free(x15); free(y12); free(y14); free(y3); free(y30);
	free(xa); free(xb);
	emb_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

Test(tokenizer, invalid_utf8)
{
	emb_tokenizer *tok = load_model("sentence-transformers--all-MiniLM-L6-v2");
	emb_encoding enc;
	emb_err err;
	const char *bad[] = {
		"a\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xe2\x82", "ok\x80",
	};
	size_t i;

	emb_encoding_init(&enc);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = 0;
		cr_assert_eq(emb_tokenize(&enc, tok, bad[i], strlen(bad[i]),
		                          NULL, 0, NULL, &err), -1, "case %zu", i);
		cr_assert(strstr(err.msg, "invalid UTF-8"), "%s", err.msg);
	}
	/* in the pair too, named as such */
	cr_assert_eq(emb_tokenize(&enc, tok, "ok", 2, "\xff", 1, NULL, &err), -1);
	cr_assert(strstr(err.msg, "text_pair"), "%s", err.msg);
	/* NUL is valid UTF-8: clean_text drops it */
	cr_assert_eq(emb_tokenize(&enc, tok, "a\0b", 3, NULL, 0, NULL, &err), 0);
	cr_assert_str_eq(tok_str(tok, &enc), "[CLS] ab [SEP]");
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* load DIR/tokenizer.json holding JSON; expect failure naming WANT */
static void bad_tokenizer(const char *json, const char *want)
{
	char *dir = tmp_dir();
	emb_tokenizer *tok = NULL;
	emb_err err = {{0}};

	put_file(dir, "tokenizer.json", json);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1,
	             "loaded a bad tokenizer: %s", json);
	cr_assert_null(tok);
	cr_assert(strstr(err.msg, "tokenizer.json"), "no file in '%s'",
	          err.msg);
	cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
	rm_dir(dir);
}

#define WP_MODEL "\"model\": {\"type\": \"WordPiece\", \"vocab\": " \
	"{\"[UNK]\": 0, \"a\": 1, \"[CLS]\": 2, \"[SEP]\": 3}}"

Test(tokenizer, malformed_files)
{
	bad_tokenizer("{\"model\": ", "invalid JSON");
	bad_tokenizer("[1, 2]", "not a JSON object");
	bad_tokenizer("{\"normalizer\": null}", "missing field 'model'");
	bad_tokenizer("{\"model\": {\"type\": \"WordPiece\"}}",
	              "missing field 'model.vocab'");
	bad_tokenizer("{\"model\": {\"type\": \"WordPiece\", \"vocab\": [1]}}",
	              "field 'model.vocab' must be an object");
	bad_tokenizer("{\"model\": {\"type\": \"WordPiece\", \"vocab\": "
	              "{\"a\": \"x\"}}}", "field 'model.vocab'");
	bad_tokenizer("{\"model\": {\"type\": \"WordPiece\", \"vocab\": "
	              "{\"a\": -4}}}", "out of range");
	bad_tokenizer("{\"model\": {\"type\": 7}}", "field 'model.type'");
	bad_tokenizer("{\"model\": {\"type\": \"Mystery\", \"vocab\": {}}}",
	              "model type 'Mystery' is not supported");
	bad_tokenizer("{" WP_MODEL ", \"normalizer\": {\"type\": "
	              "\"Mystery\"}}",
	              "normalizer type 'Mystery' is not supported");
	bad_tokenizer("{" WP_MODEL ", \"normalizer\": {\"type\": \"Sequence\", "
	              "\"normalizers\": [{\"type\": \"NFKC\"}, "
	              "{\"type\": \"Nope\"}]}}",
	              "normalizer.normalizers[1] type 'Nope' is not supported");
	bad_tokenizer("{" WP_MODEL ", \"normalizer\": {\"lowercase\": true}}",
	              "field 'normalizer.type'");
	bad_tokenizer("{" WP_MODEL ", \"normalizer\": {\"type\": "
	              "\"BertNormalizer\", \"lowercase\": \"yes\"}}",
	              "field 'normalizer.lowercase' must be a boolean");
	bad_tokenizer("{" WP_MODEL ", \"pre_tokenizer\": {\"type\": "
	              "\"Mystery\"}}",
	              "pre_tokenizer type 'Mystery' is not supported");
	bad_tokenizer("{" WP_MODEL ", \"pre_tokenizer\": 3}",
	              "field 'pre_tokenizer'");
	bad_tokenizer("{" WP_MODEL ", \"post_processor\": {\"type\": "
	              "\"Mystery\"}}",
	              "post_processor type 'Mystery' is not supported");
	bad_tokenizer("{" WP_MODEL ", \"post_processor\": {\"type\": "
	              "\"BertProcessing\", \"sep\": [\"[SEP]\"], "
	              "\"cls\": [\"[CLS]\", 2]}}", "'post_processor.sep'");
	bad_tokenizer("{" WP_MODEL ", \"post_processor\": {\"type\": "
	              "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
	              "{\"id\": \"[X]\", \"type_id\": 0}}], \"pair\": [], "
	              "\"special_tokens\": {}}}", "'[X]'");
	bad_tokenizer("{" WP_MODEL ", \"post_processor\": {\"type\": "
	              "\"TemplateProcessing\", \"single\": [{\"Sequence\": "
	              "{\"id\": \"C\", \"type_id\": 0}}], \"pair\": []}}",
	              "must be \"A\" or \"B\"");
	bad_tokenizer("{" WP_MODEL ", \"post_processor\": {\"type\": "
	              "\"BertProcessing\", \"sep\": [\"[SEP]\", 3], "
	              "\"cls\": [\"[CLS]\", 99]}}",
	              "special token id 99 is not in the vocabulary");
	bad_tokenizer("{" WP_MODEL ", \"added_tokens\": {}}",
	              "field 'added_tokens' must be an array");
	bad_tokenizer("{" WP_MODEL ", \"added_tokens\": [{\"id\": 5}]}",
	              "field 'added_tokens[0].content'");
	bad_tokenizer("{" WP_MODEL ", \"added_tokens\": [{\"id\": 5, "
	              "\"content\": \"x\", \"lstrip\": 1}]}",
	              "field 'added_tokens[0].lstrip' must be a boolean");
}

Test(tokenizer, missing_files)
{
	char *dir = tmp_dir();
	emb_tokenizer *tok = NULL;
	emb_err err = {{0}};

	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1);
	cr_assert(strstr(err.msg, "no tokenizer.json or vocab.txt"), "%s",
	          err.msg);
	cr_assert_eq(emb_tokenizer_load(&tok, "/nonexistent/emb", &err), -1);
	cr_assert(strstr(err.msg, "/nonexistent/emb"), "%s", err.msg);
	/* vocab.txt with a broken tokenizer_config.json */
	put_file(dir, "vocab.txt", "[UNK]\na\n");
	put_file(dir, "tokenizer_config.json", "{\"do_lower_case\": ");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1);
	cr_assert(strstr(err.msg, "tokenizer_config.json"), "%s", err.msg);
	put_file(dir, "tokenizer_config.json", "{\"do_lower_case\": 1}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1);
	cr_assert(strstr(err.msg, "'do_lower_case' must be a boolean"), "%s",
	          err.msg);
	put_file(dir, "vocab.txt", "");
	put_file(dir, "tokenizer_config.json", "{}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), -1);
	cr_assert(strstr(err.msg, "vocab.txt: the vocabulary is empty"), "%s",
	          err.msg);
	rm_dir(dir);
}

/* a minimal tokenizer.json: no normalizer, WhitespaceSplit, no
 * post-processor (pairs get type ids 0 and 1), added tokens with
 * single_word and rstrip, unk missing from the vocabulary */
Test(tokenizer, minimal_json_pipeline)
{
	char *dir = tmp_dir();
	emb_tokenizer *tok = NULL;
	emb_encoding enc;
	emb_err err = {{0}};

	put_file(dir, "tokenizer.json",
	         "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"?\", "
	         "\"continuing_subword_prefix\": \"++\", "
	         "\"max_input_chars_per_word\": 5, \"vocab\": {\"ab\": 0, "
	         "\"++c\": 1, \"A\": 2, \"d\": 3}},"
	         " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},"
	         " \"added_tokens\": [{\"id\": 9, \"content\": \"ab\", "
	         "\"single_word\": true, \"rstrip\": true, \"special\": false, "
	         "\"normalized\": false}, {\"id\": 10, \"content\": \"@@\"}]}");
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_tokenizer_num_special(tok, 0), 0);
	/* "ab" exists in the vocabulary: the added token takes its id;
	 * "@@" is new: it gets the next id after the vocabulary */
	cr_assert_eq(emb_tokenizer_token_to_id(tok, "ab"), 0);
	cr_assert_eq(emb_tokenizer_token_to_id(tok, "@@"), 4);
	cr_assert_eq(emb_tokenizer_vocab_size(tok), 5);
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "abc A ab  d", "d@@d", 0);
	cr_assert_str_eq(tok_str(tok, &enc), "ab ++c A ab d d @@ d");
	cr_assert_eq(enc.len, 8);
	cr_assert_eq(enc.type_ids[4], 0);
	cr_assert_eq(enc.type_ids[5], 1);
	cr_assert_eq(enc.offsets[2 * 3], 6);       /* "ab  " with rstrip */
	cr_assert_eq(enc.offsets[2 * 3 + 1], 10);
	/* unk token absent from the vocabulary: an error, not a crash */
	cr_assert_eq(emb_tokenize(&enc, tok, "zz", 2, NULL, 0, NULL, &err), -1);
	cr_assert(strstr(err.msg, "unk token '?'"), "%s", err.msg);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
	rm_dir(dir);
}

/* ------------------------------------------------------------------ */
/* threads: one const tokenizer, several threads, same results          */

struct thr {
	const emb_tokenizer *tok;
	const char **texts;
	size_t n;
	uint32_t *sum;  /* per text: a checksum of its ids */
	int fail;
};

static void *thr_run(void *arg)
{
	struct thr *t = arg;
	emb_encoding enc;
	emb_err err;
	emb_tok_opts o = {0};
	size_t i, k, rep;

	emb_encoding_init(&enc);
	o.max_length = 64;
	for (rep = 0; rep < 4; rep++)
		for (i = 0; i < t->n; i++) {
			uint32_t s = 0;
			if (emb_tokenize(&enc, t->tok, t->texts[i],
			                 strlen(t->texts[i]), NULL, 0, &o, &err) < 0) {
				t->fail = 1;
				continue;
			}
			for (k = 0; k < enc.len; k++)
				s = s * 31 + (uint32_t)enc.ids[k];
			t->sum[i] = s;
		}
	emb_encoding_release(&enc);
	return NULL;
}

/* MODEL's full.jsonl texts in 4 threads sharing one tokenizer: the
 * same ids in every thread */
static void threads_check(const char *model)
{
	emb_tokenizer *tok = load_model(model);
	char path[4096], rel[512];
	FILE *f;
	char *line = NULL;
	size_t cap = 0, n = 0, i;
	ssize_t len;
	const char *texts[600];
	struct thr th[4];
	pthread_t tid[4];
	int k;

	snprintf(rel, sizeof(rel), "tokenize/%s/full.jsonl", model);
	data_path(path, sizeof(path), rel);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (n < 600 && (len = getline(&line, &cap, f)) > 0) {
		json_t *r = json_loadb(line, (size_t)len, 0, NULL);
		json_t *t = json_object_get(r, "text");
		if (json_is_string(t) && strlen(json_string_value(t)) ==
		    json_string_length(t))
			texts[n++] = strdup(json_string_value(t));
		json_decref(r);
	}
	fclose(f);
	free(line);
	cr_assert_gt(n, 100);
	for (k = 0; k < 4; k++) {
		th[k].tok = tok;
		th[k].texts = texts;
		th[k].n = n;
		th[k].sum = calloc(n, sizeof(uint32_t));
		th[k].fail = 0;
		cr_assert_eq(pthread_create(&tid[k], NULL, thr_run, &th[k]), 0);
	}
	for (k = 0; k < 4; k++)
		pthread_join(tid[k], NULL);
	for (k = 0; k < 4; k++) {
		cr_assert_eq(th[k].fail, 0);
		for (i = 0; i < n; i++)
			cr_assert_eq(th[k].sum[i], th[0].sum[i], "text %zu", i);
	}
	for (k = 0; k < 4; k++)
		free(th[k].sum);
	for (i = 0; i < n; i++)
		free((void *)texts[i]);
	emb_tokenizer_free(tok);
}

Test(tokenizer, threads)
{
	threads_check("sentence-transformers--all-mpnet-base-v2");
}

Test(tokenizer, threads_bpe)
{
	threads_check("sentence-transformers--all-distilroberta-v1");
}

Test(tokenizer, threads_unigram)
{
	threads_check("Falconsai--text_summarization");
}

/* ------------------------------------------------------------------ */
/* every tokenizer component, offsets included                        */

/*
 * DIR (under test/data) holds a tokenizer.json, GOLDEN (under
 * test/data) records made by test/tokgold.js with Hugging Face
 * tokenizers 0.23.2: input_ids, token_type_ids, special_tokens_mask and
 * character offsets, no truncation, some records with a text_pair.
 * Ids and type ids must be equal, and the offsets of every token that
 * is not a special token.
 */
static void check_offsets_golden(const char *dir_rel, const char *golden_rel)
{
	char dir[4096], path[4096];
	emb_tokenizer *tok = NULL;
	emb_encoding enc;
	emb_err err = {{0}};
	FILE *f;
	char *line = NULL;
	size_t cap = 0, nrec = 0, npair = 0, ntok = 0;
	ssize_t len;

	data_path(dir, sizeof(dir), dir_rel);
	data_path(path, sizeof(path), golden_rel);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "load %s: %s",
	             dir, err.msg);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	emb_encoding_init(&enc);
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *r = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &je);
		json_t *text, *pair, *ids, *types, *mask, *offs;
		long long id;
		size_t i, n;

		cr_assert_not_null(r, "%s: bad golden line: %s", path, je.text);
		id = json_integer_value(json_object_get(r, "id"));
		text = json_object_get(r, "text");
		pair = json_object_get(r, "text_pair");
		ids = json_object_get(r, "input_ids");
		types = json_object_get(r, "token_type_ids");
		mask = json_object_get(r, "special_tokens_mask");
		offs = json_object_get(r, "offsets");
		cr_assert(json_is_string(text) && json_is_array(ids) &&
		          json_is_array(types) && json_is_array(mask) &&
		          json_is_array(offs));
		cr_assert_eq(emb_tokenize(&enc, tok, json_string_value(text),
		                          json_string_length(text),
		                          pair ? json_string_value(pair) : NULL,
		                          pair ? json_string_length(pair) : 0,
		                          NULL, &err), 0, "%s id %lld: %s", path,
		             id, err.msg);
		n = json_array_size(ids);
		if (enc.len != n) {
			char *got = ids_str(enc.ids, enc.len);
			char *want = json_dumps(ids, JSON_COMPACT);
			cr_assert_fail("%s: id %lld: %zu tokens, want %zu\ngot:  %s\n"
			               "want: %s", path, id, enc.len, n, got, want);
		}
		for (i = 0; i < n; i++) {
			json_t *o = json_array_get(offs, i);
			cr_assert_eq(enc.ids[i],
			             json_integer_value(json_array_get(ids, i)),
			             "%s: id %lld: token %zu", path, id, i);
			cr_assert_eq(enc.type_ids[i],
			             json_integer_value(json_array_get(types, i)),
			             "%s: id %lld: type id of token %zu", path, id, i);
			cr_assert_eq(enc.special[i] != 0,
			             json_integer_value(json_array_get(mask, i)) != 0,
			             "%s: id %lld: special flag of token %zu", path,
			             id, i);
			if (enc.special[i])
				continue;
			cr_assert(enc.offsets[2 * i] ==
			          json_integer_value(json_array_get(o, 0)) &&
			          enc.offsets[2 * i + 1] ==
			          json_integer_value(json_array_get(o, 1)),
			          "%s: id %lld: token %zu (id %d) has offsets "
			          "[%d,%d], want [%lld,%lld]", path, id, i,
			          enc.ids[i], enc.offsets[2 * i],
			          enc.offsets[2 * i + 1],
			          json_integer_value(json_array_get(o, 0)),
			          json_integer_value(json_array_get(o, 1)));
			ntok++;
		}
		nrec++;
		npair += pair != NULL;
		json_decref(r);
	}
	free(line);
	fclose(f);
	cr_assert_gt(nrec, 100, "%s: only %zu records", path, nrec);
	cr_assert_gt(npair, 10, "%s: only %zu pairs", path, npair);
	cr_assert_gt(ntok, 1000, "%s: only %zu tokens", path, ntok);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

#define OFFSETS(tag, model) Test(tokenizer, offsets_##tag) { \
	check_offsets_golden("models/" model, "tokenize/" model "/offsets.jsonl"); }
OFFSETS(distilroberta, "sentence-transformers--all-distilroberta-v1")
OFFSETS(modernbert, "answerdotai--ModernBERT-large")
OFFSETS(albert, "sentence-transformers--paraphrase-albert-small-v2")
OFFSETS(t5, "Falconsai--text_summarization")

/* test/data/tokenize-synth (see make.py there): byte-level BPE with a
 * Qwen-style Split regex (PCRE2), ByteLevel without regex, NFKC, Strip,
 * Replace (regex), Prepend, post-processor Sequence [ByteLevel,
 * TemplateProcessing], ignore_merges, lstrip/rstrip/single_word added
 * tokens; char BPE with byte_fallback and fused unk, Whitespace, Digits,
 * Punctuation, NFD, StripAccents, Lowercase; BPE with subword prefix and
 * suffix, Split with every behavior, invert, NFKD, Replace (string);
 * Unigram with byte_fallback, Metaspace prepend_scheme first without
 * split, NFC, Strip right */
#define SYNTH(tag, name) Test(tokenizer, synth_##tag) { \
	check_offsets_golden("tokenize-synth/" name, \
	                     "tokenize-synth/" name "/golden.jsonl"); }
SYNTH(bpe_qwen_split, "bpe-qwen-split")
SYNTH(bpe_chars_fallback, "bpe-chars-fallback")
SYNTH(bpe_splits, "bpe-splits")
SYNTH(unigram_fallback, "unigram-fallback")
/* ByteLevel add_prefix_space + RobertaProcessing add_prefix_space;
 * Punctuation MergedWithNext, Digits, Metaspace never, Prepend, NFKC;
 * regexes with empty matches and a look-ahead, \w \s \S \W */
SYNTH(bl_prefix, "bl-prefix")
SYNTH(uni_punct, "uni-punct")
SYNTH(empty_matches, "empty-matches")

#define BPE_MODEL(merges) "\"model\": {\"type\": \"BPE\", \"vocab\": " \
	"{\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": " merges "}"

Test(tokenizer, malformed_bpe_unigram_charsmap)
{
	bad_tokenizer("{" BPE_MODEL("[\"a b\", \"a zz\"]") "}",
	              "field 'model.merges[1]' references token 'zz' that is "
	              "not in the vocabulary");
	bad_tokenizer("{" BPE_MODEL("[[\"b\", \"a\"]]") "}",
	              "field 'model.merges[0]' makes token 'ba' that is not "
	              "in the vocabulary");
	bad_tokenizer("{" BPE_MODEL("[\"ab\"]") "}",
	              "field 'model.merges[0]' must be \"A B\"");
	bad_tokenizer("{" BPE_MODEL("{}") "}",
	              "field 'model.merges' must be an array");
	bad_tokenizer("{\"model\": {\"type\": \"BPE\", \"vocab\": [\"a\"]}}",
	              "field 'model.vocab' must be an object");
	bad_tokenizer("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, "
	              "\"byte_fallback\": \"yes\"}}",
	              "field 'model.byte_fallback' must be a boolean");
	bad_tokenizer("{\"model\": {\"type\": \"Unigram\", \"vocab\": "
	              "[[\"a\", -1.0], [\"b\"]]}}",
	              "field 'model.vocab[1]' must be [piece, score]");
	bad_tokenizer("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 5, "
	              "\"vocab\": [[\"a\", -1.0]]}}",
	              "field 'model.unk_id' must be an index");
	bad_tokenizer("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
	              "field 'model.vocab' is empty");
	/* charsmaps: not base64, too short, trie size past the end */
	bad_tokenizer("{" BPE_MODEL("[]") ", \"normalizer\": {\"type\": "
	              "\"Precompiled\", \"precompiled_charsmap\": \"@@@@\"}}",
	              "precompiled_charsmap' is not valid base64");
	bad_tokenizer("{" BPE_MODEL("[]") ", \"normalizer\": {\"type\": "
	              "\"Precompiled\", \"precompiled_charsmap\": \"AAA=\"}}",
	              "precompiled_charsmap' is truncated");
	/* 4-byte header saying 177152 bytes of trie, then 6 bytes */
	bad_tokenizer("{" BPE_MODEL("[]") ", \"normalizer\": {\"type\": "
	              "\"Precompiled\", \"precompiled_charsmap\": "
	              "\"ALQCAACEAAAAAACA\"}}",
	              "precompiled_charsmap' is truncated or corrupt");
	bad_tokenizer("{" BPE_MODEL("[]") ", \"pre_tokenizer\": {\"type\": "
	              "\"Split\", \"pattern\": {\"Regex\": \"(a\"}, "
	              "\"behavior\": \"Isolated\"}}",
	              "regex '(a' is not supported");
	bad_tokenizer("{" BPE_MODEL("[]") ", \"pre_tokenizer\": {\"type\": "
	              "\"Split\", \"pattern\": {\"String\": \"a\"}, "
	              "\"behavior\": \"Sideways\"}}",
	              "field 'pre_tokenizer.behavior' must be one of");
	bad_tokenizer("{" BPE_MODEL("[]") ", \"pre_tokenizer\": {\"type\": "
	              "\"Metaspace\", \"prepend_scheme\": \"sometimes\"}}",
	              "field 'pre_tokenizer.prepend_scheme'");
	bad_tokenizer("{" BPE_MODEL("[]") ", \"post_processor\": {\"type\": "
	              "\"Sequence\", \"processors\": [{\"type\": \"Nope\"}]}}",
	              "post_processor type 'Nope' is not supported");
}

/* a charsmap whose trie points everywhere: lookups stay in bounds, the
 * text passes through unchanged, nothing crashes */
Test(tokenizer, corrupt_charsmap_no_crash)
{
	static const char b64[] =
		"EAAAAP////////////////////94AA==";  /* 16-byte trie of 0xff + "x\0" */
	char json[1024];
	char *dir = tmp_dir();
	emb_tokenizer *tok = NULL;
	emb_encoding enc;
	emb_err err = {{0}};

	snprintf(json, sizeof(json),
	         "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": "
	         "[[\"<unk>\", 0.0], [\"a\", -1.0], [\"b\", -2.0]]}, "
	         "\"normalizer\": {\"type\": \"Precompiled\", "
	         "\"precompiled_charsmap\": \"%s\"}}", b64);
	put_file(dir, "tokenizer.json", json);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s", err.msg);
	emb_encoding_init(&enc);
	tokenize_ok(&enc, tok, "ab\xc3\xa9", NULL, 0);
	cr_assert_eq(enc.len, 3);
	cr_assert_eq(enc.ids[0], 1);
	cr_assert_eq(enc.ids[1], 2);
	cr_assert_eq(enc.ids[2], 0);    /* unk */
	cr_assert_eq(enc.offsets[4], 2);
	cr_assert_eq(enc.offsets[5], 3);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
	rm_dir(dir);
}

/* ------------------------------------------------------------------ */
/* long texts in pieces (tk_chunk_safe): the same encoding as whole    */

#include "tok/tok-internal.h"

/* a long text of every corpus text (accents, CJK, emoji, punctuation,
 * runs of spaces, newlines), with the tokenizer's added tokens here and
 * there, over SIZE bytes; new (free()) */
static char *long_text(const emb_tokenizer *tok, size_t size, size_t *len)
{
	char path[4096];
	FILE *f;
	char *line = NULL, *s = malloc(size + 65536);
	size_t cap = 0, n = 0, k = 0;
	ssize_t l;

	cr_assert_not_null(s);
	data_path(path, sizeof(path), "corpus/texts.jsonl");
	while (n < size) {
		f = fopen(path, "r");
		cr_assert_not_null(f);
		while (n < size && (l = getline(&line, &cap, f)) > 0) {
			json_t *r = json_loadb(line, (size_t)l, 0, NULL);
			const char *t = json_string_value(json_object_get(r, "text"));
			size_t tl = t ? strlen(t) : 0;
			if (t && n + tl + 64 < size + 65536) {
				memcpy(s + n, t, tl);
				n += tl;
				if (tok->n_added && k % 7 == 3) {
					const char *c =
					    tok->added[k % tok->n_added].content;
					size_t cl = strlen(c);
					if (n + cl + 3 < size + 65536) {
						s[n++] = ' ';
						memcpy(s + n, c, cl);
						n += cl;
					}
				}
				s[n++] = k % 5 ? ' ' : '\n';
			}
			k++;
			json_decref(r);
		}
		fclose(f);
	}
	free(line);
	*len = n;
	return s;
}

static void check_chunked(const char *model, int want_chunked,
                          size_t max_length)
{
	emb_tokenizer *tok = NULL;
	char dir[4096], rel[512];
	emb_err lerr = {{0}};

	/* "synth/NAME": test/data/tokenize-synth/NAME */
	snprintf(rel, sizeof(rel), "%s%s", strncmp(model, "synth/", 6) ?
	         "models/" : "tokenize-synth/", strncmp(model, "synth/", 6) ?
	         model : model + 6);
	data_path(dir, sizeof(dir), rel);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &lerr), 0, "load %s: %s",
	             dir, lerr.msg);
	emb_encoding a, b;
	emb_tok_opts opts = {0};
	emb_err err = {{0}};
	size_t len, i;
	char *text = long_text(tok, 5 * TK_CHUNK_BYTES, &len);

	cr_assert_eq(tok->chunked, want_chunked, "%s: chunked is %d", model,
	             tok->chunked);
	opts.max_length = max_length;
	emb_encoding_init(&a);
	emb_encoding_init(&b);
	cr_assert_eq(emb_tokenize(&a, tok, text, len, NULL, 0, &opts, &err), 0,
	             "%s: %s", model, err.msg);
	tok->chunked = 0;
	cr_assert_eq(emb_tokenize(&b, tok, text, len, NULL, 0, &opts, &err), 0,
	             "%s: %s", model, err.msg);
	cr_assert_eq(a.len, b.len, "%s: %zu tokens in pieces, %zu whole", model,
	             a.len, b.len);
	cr_assert_eq(a.truncated, b.truncated);
	for (i = 0; i < a.len; i++) {
		cr_assert_eq(a.ids[i], b.ids[i], "%s: token %zu", model, i);
		cr_assert_eq(a.type_ids[i], b.type_ids[i]);
		cr_assert_eq(a.offsets[2 * i], b.offsets[2 * i],
		             "%s: offset of token %zu", model, i);
		cr_assert_eq(a.offsets[2 * i + 1], b.offsets[2 * i + 1]);
		cr_assert_eq(a.special[i], b.special[i]);
	}
	if (max_length)
		cr_assert(a.truncated > 0 && a.len == max_length);
	else
		cr_assert(a.len > len / 16, "%s: %zu tokens", model, a.len);
	emb_encoding_release(&a);
	emb_encoding_release(&b);
	free(text);
	emb_tokenizer_free(tok);
}

Test(tokenizer, chunked_same_as_whole)
{
	check_chunked("sentence-transformers--all-MiniLM-L6-v2", 1, 0);
	check_chunked("sentence-transformers--all-mpnet-base-v2", 1, 0);
	check_chunked("sentence-transformers--all-distilroberta-v1", 1, 0);
	check_chunked("sentence-transformers--paraphrase-albert-small-v2", 1, 0);
	check_chunked("Falconsai--text_summarization", 1, 0);
	check_chunked("naver--splade_v2_distil", 1, 0);      /* vocab.txt */
	check_chunked("sentence-transformers--all-MiniLM-L6-v2", 1, 300);
	check_chunked("sentence-transformers--all-distilroberta-v1", 1, 7);
	/* space-only added tokens: still in pieces; the same */
	check_chunked("answerdotai--ModernBERT-large", 1, 0);
	/* hand-made tokenizers: stages after the split, a Replace of a
	 * non-ASCII literal, Digits, Punctuation, a prefix space */
	check_chunked("synth/bpe-splits", 1, 0);
	check_chunked("synth/bpe-chars-fallback", 1, 0);
	/* an added token "hello world" (it could match across a cut),
	 * Strip, Prepend, regex Replace: whole texts (and the same) */
	check_chunked("synth/bl-prefix", 0, 0);
	check_chunked("synth/bpe-qwen-split", 0, 0);
	check_chunked("synth/uni-punct", 0, 0);
	check_chunked("synth/unigram-fallback", 0, 0);
	check_chunked("synth/empty-matches", 0, 0);
}
