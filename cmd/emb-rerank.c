/* emb-rerank - cross-encoder scores and rankings; ColBERT MaxSim */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "tool/emb-tool.h"

static const char usage[] =
"usage: emb-rerank -m MODEL [options] [FILE...]\n"
"       emb-rerank --maxsim --query QFILE [options] [FILE...]\n"
"Cross-encoder (a *ForSequenceClassification model) over each JSON line:\n"
"  {\"query\": Q, \"documents\": [D...]}  adds results: [{\"index\", \"score\"}]\n"
"                       sorted best first (score of label --label)\n"
"  {\"text\": A, \"text_pair\": B}        adds scores: one per label (input_ids\n"
"                       and token_type_ids are used instead when present)\n"
"  -m, --model MODEL    model directory or ORG/NAME[@REV]\n"
"  --activation none|sigmoid|softmax\n"
"                       applied to the logits (default: as\n"
"                       sentence-transformers' CrossEncoder picks it, see\n"
"                       emb-rerank(1): the declared activation_fn, else\n"
"                       sigmoid for one label and none for several)\n"
"  --top-k K            keep the K best results\n"
"  --return-documents   add \"document\" to every result\n"
"  --label N            label ranked in query mode (default 0)\n"
"  --logits             also write the raw logits (pair records)\n"
"  -j, --threads N      threads (default: all online cores)\n"
"  --batch-tokens N     tokens per forward pass (default 8192)\n"
"  --max-length N, --no-truncate\n"
"                       pair truncation (default: the model's maximum)\n"
"Late interaction (no model needed):\n"
"  --maxsim             score token_embeddings records against every query\n"
"                       in QFILE: adds scores, one per query, each the sum\n"
"                       over query tokens of the max cosine over the\n"
"                       record's tokens\n"
"  --query QFILE        token_embeddings records of the queries\n"
"  --skip-special       leave out special tokens (needs -m for the\n"
"                       tokenizer and input_ids in the records)\n"
"  --skip-prefix[=N]    leave out the first N query tokens (default: each\n"
"                       query's prompt_length)\n"
"Common: --errors=skip|emit, --strict, --max-line BYTES, --progress,\n"
"  --no-progress, -h/--help, --version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model load, 4 write error.\n";

enum { O_ACT = 1, O_TOPK, O_RETDOCS, O_LABEL, O_LOGITS, O_THREADS, O_BATCH,
       O_MAXSIM, O_QUERY, O_SKIPSPECIAL, O_SKIPPREFIX };

static const emb_cli_opt opts[] = {
	{ "activation", 0, EMB_ARG_REQUIRED, O_ACT },
	{ "top-k", 0, EMB_ARG_REQUIRED, O_TOPK },
	{ "return-documents", 0, EMB_ARG_NONE, O_RETDOCS },
	{ "label", 0, EMB_ARG_REQUIRED, O_LABEL },
	{ "logits", 0, EMB_ARG_NONE, O_LOGITS },
	{ "threads", 'j', EMB_ARG_REQUIRED, O_THREADS },
	{ "batch-tokens", 0, EMB_ARG_REQUIRED, O_BATCH },
	{ "maxsim", 0, EMB_ARG_NONE, O_MAXSIM },
	{ "query", 0, EMB_ARG_REQUIRED, O_QUERY },
	{ "skip-special", 0, EMB_ARG_NONE, O_SKIPSPECIAL },
	{ "skip-prefix", 0, EMB_ARG_OPTIONAL, O_SKIPPREFIX },
	{ NULL, 0, 0, 0 },
};

typedef struct query {
	float *v;               /* (n, dim) kept rows */
	int n;
} query;

typedef struct ctx {
	emb_cli cli;
	int act;                /* -1: the model's */
	long long top_k;        /* 0: all */
	int return_docs, label, logits, threads, maxsim, skip_special;
	int skip_prefix;        /* -2: off, -1: prompt_length, else N */
	long long batch_tokens;
	const char *query_file;
	/* cross-encoder */
	emb_model *m;
	int labels, maxpos, vocab, types;
	emb_text_tok tt;
	emb_seq *seqs;
	size_t seqs_cap;
	float *logit_buf;
	size_t logit_cap;
	/* maxsim */
	emb_tokenizer *tok;     /* --skip-special */
	int32_t *special;       /* sorted ids of special tokens */
	size_t nspecial;
	query *queries;
	size_t nq;
	int dim;
} ctx;

typedef struct item {
	int ranking;            /* query/documents record */
	int tokenized;          /* pair record tokenized from text */
	size_t n;               /* sequences (documents, or 1) */
	int32_t **ids, **types;
	int *lens;
	char **docs;            /* (n) raw JSON of each document */
	float *scores;          /* (n, labels) after activation */
	float *logits;          /* (n, labels) raw (--logits) */
	double *sims;           /* maxsim: (nq) */
} item;

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	long long v;

	switch (key) {
	case O_ACT:
		if ((c->act = emb_activation_parse(arg)) < 0)
			return emb_err_set(err, "unknown activation '%s' (none, "
			                   "sigmoid, softmax)", arg);
		return 0;
	case O_TOPK:
		if (emb_cli_parse_int(&c->top_k, arg, 1, 1LL << 40, 0) < 0)
			return emb_err_set(err, "--top-k must be a positive integer, "
			                   "not '%s'", arg);
		return 0;
	case O_RETDOCS: c->return_docs = 1; return 0;
	case O_LABEL:
		if (emb_cli_parse_int(&v, arg, 0, 1 << 20, 0) < 0)
			return emb_err_set(err, "--label must be an integer >= 0, "
			                   "not '%s'", arg);
		c->label = (int)v;
		return 0;
	case O_LOGITS: c->logits = 1; return 0;
	case O_THREADS:
		if (emb_cli_parse_int(&v, arg, 1, 4096, 0) < 0)
			return emb_err_set(err, "-j must be a number of threads from 1 "
			                   "to 4096, not '%s'", arg);
		c->threads = (int)v;
		return 0;
	case O_BATCH:
		if (emb_cli_parse_int(&c->batch_tokens, arg, 1, 1LL << 30, 1) < 0)
			return emb_err_set(err, "--batch-tokens must be a positive "
			                   "integer, not '%s'", arg);
		return 0;
	case O_MAXSIM: c->maxsim = 1; return 0;
	case O_QUERY: c->query_file = arg; return 0;
	case O_SKIPSPECIAL: c->skip_special = 1; return 0;
	case O_SKIPPREFIX:
		c->skip_prefix = -1;
		if (arg) {
			if (emb_cli_parse_int(&v, arg, 0, 1 << 30, 0) < 0)
				return emb_err_set(err, "--skip-prefix must be an integer "
				                   ">= 0, not '%s'", arg);
			c->skip_prefix = (int)v;
		}
		return 0;
	}
	return -1;
}

static void item_clear(item *it)
{
	for (size_t i = 0; i < it->n; i++) {
		if (it->ids)
			free(it->ids[i]);
		if (it->types)
			free(it->types[i]);
		if (it->docs)
			free(it->docs[i]);
	}
	free(it->ids);
	free(it->types);
	free(it->lens);
	free(it->docs);
	free(it->scores);
	free(it->logits);
	free(it->sims);
	memset(it, 0, sizeof(*it));
}

static int item_alloc(item *it, size_t n, emb_err *err)
{
	size_t k = n ? n : 1;

	it->n = n;
	it->ids = calloc(k, sizeof(*it->ids));
	it->types = calloc(k, sizeof(*it->types));
	it->lens = calloc(k, sizeof(*it->lens));
	it->docs = calloc(k, sizeof(*it->docs));
	if (!it->ids || !it->types || !it->lens || !it->docs)
		return emb_err_set(err, "out of memory");
	return 0;
}

/* take enc's ids as sequence i of it */
static int take_enc(item *it, size_t i, const emb_encoding *enc, emb_err *err)
{
	it->ids[i] = malloc((enc->len + 1) * sizeof(int32_t));
	it->types[i] = malloc((enc->len + 1) * sizeof(int32_t));
	if (!it->ids[i] || !it->types[i])
		return emb_err_set(err, "out of memory");
	memcpy(it->ids[i], enc->ids, enc->len * sizeof(int32_t));
	memcpy(it->types[i], enc->type_ids, enc->len * sizeof(int32_t));
	it->lens[i] = (int)enc->len;
	return 0;
}

/* tokenize the pair (a, b) the way emb-tokenize does (prompt, case) */
static int tok_pair(emb_encoding *enc, const ctx *c, const json_t *a,
                    const json_t *b, emb_err *err)
{
	json_t *o = json_object();
	emb_record *rec = emb_record_new();
	char *s = NULL;
	size_t pl;
	int rc = -1;

	if (!o || !rec || json_object_set(o, "text", (json_t *)a) ||
	    json_object_set(o, "text_pair", (json_t *)b) ||
	    !(s = json_dumps(o, JSON_COMPACT))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	if (emb_record_parse(rec, s, strlen(s), err) < 0 ||
	    emb_text_tok_record(enc, &pl, &c->tt, rec, err) < 0)
		goto out;
	rc = 0;
out:
	free(s);
	emb_record_free(rec);
	json_decref(o);
	return rc;
}

static int check_seq(const ctx *c, const int32_t *ids, const int32_t *types,
                     size_t n, const char *what, emb_err *err)
{
	if (n == 0)
		return emb_err_set(err, "%s has no tokens", what);
	if (n > (size_t)c->maxpos)
		return emb_err_set(err, "%s has %zu tokens, more than the model's "
		                   "maximum of %d", what, n, c->maxpos);
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= c->vocab)
			return emb_err_set(err, "%s: input_ids[%zu] = %d is out of range "
			                   "(vocabulary size %d)", what, i, (int)ids[i],
			                   c->vocab);
		if (types && (types[i] < 0 || types[i] >= c->types))
			return emb_err_set(err, "%s: token_type_ids[%zu] = %d is out of "
			                   "range (type vocabulary size %d)", what, i,
			                   (int)types[i], c->types);
	}
	return 0;
}

static int prepare_ranking(ctx *c, emb_cli_rec *r, item *it, emb_err *err)
{
	const char *raw;
	size_t len, i;
	json_t *q = NULL, *docs = NULL, *d;
	json_error_t je;
	emb_encoding enc;
	int rc = -1;

	emb_encoding_init(&enc);
	it->ranking = 1;
	if (!(raw = emb_record_raw(r->rec, "query", &len)) ||
	    !(q = json_loadb(raw, len, JSON_DECODE_ANY, &je)) ||
	    !json_is_string(q)) {
		emb_err_set(err, raw ? "field 'query' is not a string" :
		            "missing field 'query'");
		goto out;
	}
	if (!(raw = emb_record_raw(r->rec, "documents", &len))) {
		emb_err_set(err, "missing field 'documents'");
		goto out;
	}
	if (!(docs = json_loadb(raw, len, JSON_DECODE_ANY, &je)) ||
	    !json_is_array(docs)) {
		emb_err_set(err, "field 'documents' is not an array of strings");
		goto out;
	}
	if (item_alloc(it, json_array_size(docs), err) < 0)
		goto out;
	r->cost = 0;
	json_array_foreach(docs, i, d) {
		char what[64];
		if (!json_is_string(d)) {
			emb_err_set(err, "field 'documents': element %zu is not a "
			            "string", i);
			goto out;
		}
		if (!(it->docs[i] = json_dumps(d, JSON_ENCODE_ANY))) {
			emb_err_set(err, "out of memory");
			goto out;
		}
		snprintf(what, sizeof(what), "document %zu", i);
		if (tok_pair(&enc, c, q, d, err) < 0 || take_enc(it, i, &enc, err) ||
		    check_seq(c, it->ids[i], it->types[i], enc.len, what, err))
			goto out;
		r->cost += enc.len;
	}
	rc = 0;
out:
	emb_encoding_release(&enc);
	json_decref(q);
	json_decref(docs);
	return rc;
}

static int prepare_pair(ctx *c, emb_cli_rec *r, item *it, emb_err *err)
{
	size_t n = 0, nt;

	if (item_alloc(it, 1, err) < 0)
		return -1;
	if (emb_record_check_input(r->rec, 1, err) < 0)
		return -1;
	if (emb_record_has(r->rec, "input_ids") ||
	    !emb_record_has(r->rec, "text")) {
		if (emb_record_get_int32s(r->rec, "input_ids", &it->ids[0], &n,
		                          err) < 0)
			return -1;
		if (emb_record_has(r->rec, "token_type_ids")) {
			if (emb_record_get_int32s(r->rec, "token_type_ids",
			                          &it->types[0], &nt, err) < 0)
				return -1;
			if (nt != n)
				return emb_err_set(err, "field 'token_type_ids' has %zu "
				                   "values, 'input_ids' has %zu", nt, n);
		}
	} else {
		emb_encoding enc;
		size_t pl;
		int rc;
		emb_encoding_init(&enc);
		rc = emb_text_tok_record(&enc, &pl, &c->tt, r->rec, err) < 0 ||
		     take_enc(it, 0, &enc, err) < 0 ? -1 : 0;
		n = enc.len;
		emb_encoding_release(&enc);
		if (rc)
			return -1;
		it->tokenized = 1;
	}
	it->lens[0] = (int)n;
	r->cost = n;
	return check_seq(c, it->ids[0], it->types[0], n, "field 'input_ids'", err);
}

static int cmp_id(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* keep the rows of te (rows, dim) that --skip-special / skip allow */
static int keep_rows(float **out, int *nout, const ctx *c, const float *te,
                     size_t rows, size_t dim, const emb_record *rec,
                     int skip, emb_err *err)
{
	int32_t *ids = NULL;
	size_t nids = 0, k = 0;

	if (c->skip_special) {
		if (emb_record_get_int32s(rec, "input_ids", &ids, &nids, err) < 0)
			return emb_err_set(err, "--skip-special needs input_ids: %s",
			                   err ? err->msg : "missing");
		if (nids != rows) {
			free(ids);
			return emb_err_set(err, "field 'input_ids' has %zu values, "
			                   "'token_embeddings' has %zu rows", nids, rows);
		}
	}
	if (!(*out = malloc((rows ? rows : 1) * dim * sizeof(float)))) {
		free(ids);
		return emb_err_set(err, "out of memory");
	}
	for (size_t i = 0; i < rows; i++) {
		if ((long long)i < skip)
			continue;
		if (ids && bsearch(&ids[i], c->special, c->nspecial,
		                   sizeof(int32_t), cmp_id))
			continue;
		memcpy(*out + k * dim, te + i * dim, dim * sizeof(float));
		k++;
	}
	free(ids);
	*nout = (int)k;
	return 0;
}

static int prepare_maxsim(ctx *c, emb_cli_rec *r, item *it, emb_err *err)
{
	float *te = NULL, *kept = NULL;
	size_t rows, cols;
	int nk, rc = -1;

	if (emb_record_get_floats(r->rec, "token_embeddings", &te, &rows, &cols,
	                          err) < 0)
		return -1;
	if (c->nq && cols != (size_t)c->dim) {
		emb_err_set(err, "field 'token_embeddings' has %zu columns, the "
		            "queries have %d", cols, c->dim);
		goto out;
	}
	if (keep_rows(&kept, &nk, c, te, rows, cols, r->rec, 0, err) < 0)
		goto out;
	if (!(it->sims = calloc(c->nq ? c->nq : 1, sizeof(double)))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	for (size_t q = 0; q < c->nq; q++)
		it->sims[q] = emb_maxsim(c->queries[q].v, c->queries[q].n, kept, nk,
		                         c->dim);
	r->cost = rows;
	rc = 0;
out:
	free(te);
	free(kept);
	return rc;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	ctx *c = vc;
	item *it = r->user;

	if (!it && !(it = r->user = calloc(1, sizeof(*it))))
		return emb_err_set(err, "out of memory");
	item_clear(it);
	if (c->maxsim)
		return prepare_maxsim(c, r, it, err);
	if (emb_record_has(r->rec, "query") || emb_record_has(r->rec, "documents"))
		return prepare_ranking(c, r, it, err);
	return prepare_pair(c, r, it, err);
}

/* forward seqs [0, n) in slices of at most batch_tokens tokens */
static int forward(ctx *c, size_t n, emb_err *err)
{
	size_t s0 = 0, L = (size_t)c->labels;

	while (s0 < n) {
		size_t s1 = s0, tok = 0;
		while (s1 < n && (s1 == s0 ||
		                  tok + (size_t)c->seqs[s1].len <= (size_t)c->batch_tokens))
			tok += (size_t)c->seqs[s1++].len;
		if (emb_model_forward_head(c->m, c->logit_buf + s0 * L,
		                           EMB_OUT_LOGITS, c->seqs + s0,
		                           (int)(s1 - s0), err) < 0)
			return -1;
		s0 = s1;
	}
	return 0;
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	ctx *c = vc;
	size_t total = 0, k = 0, L = (size_t)c->labels;

	if (c->maxsim)
		return 0;
	for (int i = 0; i < n; i++)
		total += ((item *)rs[i]->user)->n;
	if (total > c->seqs_cap) {
		emb_seq *s = realloc(c->seqs, total * sizeof(*s));
		if (!s)
			return emb_err_set(err, "out of memory");
		c->seqs = s;
		c->seqs_cap = total;
	}
	if (total * L > c->logit_cap) {
		float *p = realloc(c->logit_buf, total * L * sizeof(float));
		if (!p)
			return emb_err_set(err, "out of memory");
		c->logit_buf = p;
		c->logit_cap = total * L;
	}
	for (int i = 0; i < n; i++) {
		item *it = rs[i]->user;
		for (size_t j = 0; j < it->n; j++, k++) {
			c->seqs[k].ids = it->ids[j];
			c->seqs[k].type_ids = it->types[j];
			c->seqs[k].len = it->lens[j];
		}
	}
	if (forward(c, total, err) < 0)
		return -1;
	k = 0;
	for (int i = 0; i < n; i++) {
		item *it = rs[i]->user;
		size_t bytes = (it->n ? it->n : 1) * L * sizeof(float);
		free(it->scores);
		free(it->logits);
		it->logits = NULL;
		if (!(it->scores = malloc(bytes)) ||
		    (c->logits && !(it->logits = malloc(bytes))))
			return emb_err_set(err, "out of memory");
		memcpy(it->scores, c->logit_buf + k * L, it->n * L * sizeof(float));
		if (it->logits)
			memcpy(it->logits, it->scores, it->n * L * sizeof(float));
		for (size_t j = 0; j < it->n; j++) {
			emb_activation_apply(it->scores + j * L, (int)L, c->act);
			for (size_t l = 0; l < L; l++)
				if (!isfinite(it->scores[j * L + l])) {
					rs[i]->bad = 1;
					emb_err_set(&rs[i]->err, "the model output is not "
					            "finite (NaN or infinity)");
				}
		}
		k += it->n;
	}
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop_tok[] = { "input_ids", "token_type_ids",
	                                        NULL };
	ctx *c = vc;
	item *it = r->user;
	size_t L = (size_t)c->labels;

	if (c->maxsim) {
		float *v = malloc((c->nq ? c->nq : 1) * sizeof(float));
		if (!v)
			return emb_err_set(err, "out of memory");
		for (size_t q = 0; q < c->nq; q++)
			v[q] = (float)it->sims[q];
		emb_out_begin(b, r->rec, NULL);
		emb_out_floats(b, "scores", v, c->nq, 0);
		emb_out_end(b);
		free(v);
		return 0;
	}
	if (it->ranking) {
		emb_buf j;
		int *order = malloc((it->n ? it->n : 1) * sizeof(int));
		float *s = calloc(it->n ? it->n : 1, sizeof(float));
		size_t keep = it->n;
		char num[32];
		if (!order || !s) {
			free(order);
			free(s);
			return emb_err_set(err, "out of memory");
		}
		for (size_t i = 0; i < it->n; i++)
			s[i] = it->scores[i * L + (size_t)c->label];
		emb_rank_order(order, s, (int)it->n);
		if (c->top_k && (size_t)c->top_k < keep)
			keep = (size_t)c->top_k;
		emb_buf_init(&j);
		emb_buf_add(&j, "[", 1);
		for (size_t i = 0; i < keep; i++) {
			int n = snprintf(num, sizeof(num), "%s{\"index\":%d,\"score\":",
			                 i ? "," : "", order[i]);
			emb_buf_add(&j, num, (size_t)n);
			n = (int)emb_fmt_f32(num, s[order[i]]);
			emb_buf_add(&j, num, (size_t)n);
			if (c->return_docs) {
				emb_buf_add(&j, ",\"document\":", 12);
				emb_buf_add(&j, it->docs[order[i]],
				            strlen(it->docs[order[i]]));
			}
			emb_buf_add(&j, "}", 1);
		}
		emb_buf_add(&j, "]", 1);
		emb_out_begin(b, r->rec, NULL);
		emb_out_json(b, "results", j.p, j.len);
		emb_out_end(b);
		emb_buf_release(&j);
		free(order);
		free(s);
		return 0;
	}
	emb_out_begin(b, r->rec, it->tokenized ? drop_tok : NULL);
	if (it->tokenized) {
		emb_out_int32s(b, "input_ids", it->ids[0], (size_t)it->lens[0]);
		emb_out_int32s(b, "token_type_ids", it->types[0], (size_t)it->lens[0]);
	}
	if (c->logits)
		emb_out_floats(b, "logits", it->logits, L, 0);
	emb_out_floats(b, "scores", it->scores, L, 0);
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	(void)vc;
	item_clear(u);
	free(u);
}

/* the ids the tokenizer's post-processor adds (single and pair) */
static void load_specials(ctx *c, const char *dir)
{
	emb_encoding enc;
	emb_err err;
	size_t cap = 0;

	err.msg[0] = 0;
	if (emb_tokenizer_load(&c->tok, dir, &err) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s", err.msg);
	emb_encoding_init(&enc);
	for (int pair = 0; pair < 2; pair++) {
		if (emb_tokenize(&enc, c->tok, "a", 1, pair ? "a" : NULL, 1, NULL,
		                 &err) < 0)
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s", err.msg);
		for (size_t i = 0; i < enc.len; i++) {
			if (!enc.special || !enc.special[i])
				continue;
			if (c->nspecial == cap) {
				int32_t *p = realloc(c->special, (cap = cap * 2 + 8) *
				                     sizeof(int32_t));
				if (!p)
					emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
				c->special = p;
			}
			c->special[c->nspecial++] = enc.ids[i];
		}
	}
	emb_encoding_release(&enc);
	qsort(c->special, c->nspecial, sizeof(int32_t), cmp_id);
}

static void load_queries(ctx *c)
{
	emb_reader *rd;
	emb_record *rec = emb_record_new();
	emb_err err;
	const char *line;
	size_t len;
	int rc;

	err.msg[0] = 0;
	if (!rec)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
	if (emb_reader_open(&rd, c->query_file, c->cli.max_line, &err) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s", err.msg);
	while ((rc = emb_reader_next(rd, &line, &len, &err)) != 0) {
		float *te = NULL;
		size_t rows, cols;
		int skip = 0;
		query *q;
		if (rc < 0 || emb_record_parse(rec, line, len, &err) < 0 ||
		    emb_record_get_floats(rec, "token_embeddings", &te, &rows,
		                          &cols, &err) < 0 ||
		    (c->skip_prefix == -1 &&
		     emb_record_prompt_length(&skip, rec, &err) < 0))
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s:%zu: %s",
			            emb_reader_name(rd), emb_reader_lineno(rd), err.msg);
		if (c->skip_prefix >= 0)
			skip = c->skip_prefix;
		if (c->nq && cols != (size_t)c->dim)
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s:%zu: token_embeddings "
			            "has %zu columns, the first query %d",
			            emb_reader_name(rd), emb_reader_lineno(rd), cols,
			            c->dim);
		c->dim = (int)cols;
		if (!(q = realloc(c->queries, (c->nq + 1) * sizeof(*q))))
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
		c->queries = q;
		q = &c->queries[c->nq++];
		if (keep_rows(&q->v, &q->n, c, te, rows, cols, rec, skip, &err) < 0)
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s:%zu: %s",
			            emb_reader_name(rd), emb_reader_lineno(rd), err.msg);
		free(te);
	}
	if (c->nq == 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: no query records",
		            emb_reader_name(rd));
	emb_reader_free(rd);
	emb_record_free(rec);
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, run, emit, free_user, 8192, 4096 };
	emb_model_opts mo;
	emb_err err;
	char *dir;
	int status;

	c.cli.prog = "emb-rerank";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_MODEL | EMB_CLI_TEXT;
	c.act = -1;
	c.skip_prefix = -2;
	c.batch_tokens = 8192;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	err.msg[0] = 0;
	if (c.maxsim) {
		if (!c.query_file)
			emb_cli_usage_error(&c.cli, "--maxsim needs --query QFILE");
		if (c.skip_special) {
			if (!c.cli.model)
				emb_cli_usage_error(&c.cli, "--skip-special needs -m MODEL "
				                    "(for its special tokens)");
			dir = emb_cli_model_dir(&c.cli, 1);
			load_specials(&c, dir);
			free(dir);
		}
		load_queries(&c);
		ops.run = NULL;
		ops.batch_cost = 0;
		status = emb_cli_run(&c.cli, &ops, &c);
		for (size_t q = 0; q < c.nq; q++)
			free(c.queries[q].v);
		free(c.queries);
		free(c.special);
		if (c.tok)
			emb_tokenizer_free(c.tok);
		return status;
	}
	if (c.query_file || c.skip_special || c.skip_prefix != -2)
		emb_cli_usage_error(&c.cli, "--query, --skip-special and "
		                    "--skip-prefix need --maxsim");
	dir = emb_cli_model_dir(&c.cli, 1);
	memset(&mo, 0, sizeof(mo));
	mo.threads = c.threads;
	if (emb_model_load(&c.m, dir, &mo, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (emb_model_head(c.m) != EMB_HEAD_CLASSIFIER)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s: architecture %s is not a "
		            "cross-encoder (a *ForSequenceClassification model)",
		            dir, emb_model_arch(c.m));
	c.labels = emb_model_num_labels(c.m);
	if (c.label >= c.labels)
		emb_cli_usage_error(&c.cli, "--label %d: the model has %d label%s",
		                    c.label, c.labels, c.labels == 1 ? "" : "s");
	if (c.act < 0 && emb_activation_default(&c.act, dir, c.labels, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	c.maxpos = emb_model_max_positions(c.m);
	c.vocab = emb_model_vocab_size(c.m);
	c.types = emb_model_type_vocab_size(c.m);
	emb_text_tok_setup(&c.tt, &c.cli, dir, c.maxpos);
	/* load the head now: a checkpoint without it fails at load (exit 3) */
	{
		int32_t id = 0;
		emb_seq s = { &id, NULL, 1 };
		float *tmp = malloc((size_t)c.labels * sizeof(float));
		if (!tmp || emb_model_forward_head(c.m, tmp, EMB_OUT_LOGITS, &s, 1,
		                                   &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", tmp ? err.msg :
			            "out of memory");
		free(tmp);
	}
	ops.batch_cost = (size_t)c.batch_tokens;
	free(dir);
	status = emb_cli_run(&c.cli, &ops, &c);
	emb_model_free(c.m);
	emb_text_tok_release(&c.tt);
	free(c.seqs);
	free(c.logit_buf);
	return status;
}
