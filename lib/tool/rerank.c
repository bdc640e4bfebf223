/*
 * rerank.c - what emb-rerank does to records: cross-encoder scores of
 * {"text", "text_pair"} records and rankings of {"query", "documents"}
 * records (the documents tokenized as pairs with the query, forwarded
 * through the classification head in slices of a token budget, the
 * activation applied, best first), and ColBERT-style MaxSim of
 * token_embeddings records against a file of query records.  The
 * driver (cmd/emb-rerank.c) fills an emb_rerank with its options, calls
 * emb_rerank_setup or emb_rerank_maxsim_setup and runs emb_rerank_ops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "base/grow.h"
#include "base/strmap.h"
#include "tool/emb-tool.h"

typedef struct rr_item {
	int ranking;            /* query/documents record */
	int tokenized;          /* pair record tokenized from text */
	size_t n;               /* sequences (documents, or 1) */
	int32_t **ids, **types;
	int *lens;
	char **docs;            /* (n) raw JSON of each document's text */
	char **members;         /* (n) an object document's other members
	                           ("\"id\":7,..."), NULL for a string */
	int from_results;       /* documents made from emb-search results */
	float *scores;          /* (n, labels) after activation */
	float *logits;          /* (n, labels) raw (--logits) */
	double *sims;           /* maxsim: (nq) */
} rr_item;

static void item_clear(rr_item *it)
{
	for (size_t i = 0; i < it->n; i++) {
		if (it->ids)
			free(it->ids[i]);
		if (it->types)
			free(it->types[i]);
		if (it->docs)
			free(it->docs[i]);
		if (it->members)
			free(it->members[i]);
	}
	free(it->members);
	free(it->ids);
	free(it->types);
	free(it->lens);
	free(it->docs);
	free(it->scores);
	free(it->logits);
	free(it->sims);
	memset(it, 0, sizeof(*it));
}

static int item_alloc(rr_item *it, size_t n, emb_err *err)
{
	size_t k = n ? n : 1;

	it->n = n;
	it->ids = calloc(k, sizeof(*it->ids));
	it->types = calloc(k, sizeof(*it->types));
	it->lens = calloc(k, sizeof(*it->lens));
	it->docs = calloc(k, sizeof(*it->docs));
	it->members = calloc(k, sizeof(*it->members));
	if (!it->ids || !it->types || !it->lens || !it->docs || !it->members)
		return emb_err_set(err, "out of memory");
	return 0;
}

/* take enc's ids as sequence i of it */
static int take_enc(rr_item *it, size_t i, const emb_encoding *enc,
                    emb_err *err)
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

/* the per-record checks of emb_model_check, and the model's limit named
 * for WHAT ("document 3") */
static int check_seq(const emb_rerank *c, const int32_t *ids,
                     const int32_t *types, size_t n, const char *what,
                     emb_err *err)
{
	emb_seq q = { ids, types, (int)n };
	emb_err e;

	if (n == 0)
		return emb_err_set(err, "%s has no tokens", what);
	if (n > (size_t)emb_model_max_positions(c->m))
		return emb_err_set(err, "%s has %zu tokens, more than the model's "
		                   "maximum of %d", what, n,
		                   emb_model_max_positions(c->m));
	if (emb_model_check(c->m, &q, &e) < 0)
		return emb_err_set(err, "%s: %s", what, e.msg);
	return 0;
}

/* ------------------------------------------------------------------ */
/* --texts FILE: the documents' texts by id                            */

/* one document's text */
typedef struct rr_text {
	size_t len;
	char text[];            /* UTF-8, NUL-terminated */
} rr_text;

struct emb_rr_texts {
	emb_strmap by_id;       /* compact JSON of the id -> its rr_text */
	rr_text **all;          /* (n) every text, to free */
	size_t n, cap;
};

static void texts_free(struct emb_rr_texts *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->all[i]);
	free(t->all);
	emb_strmap_release(&t->by_id);
	free(t);
}

/* the compact JSON of a value (new), NULL when out of memory */
static char *compact(const json_t *v)
{
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int load_texts(emb_rerank *c, emb_err *errp)
{
	struct emb_rr_texts *t = calloc(1, sizeof(*t));
	emb_reader *rd = NULL;
	emb_record *rec = emb_record_new();
	emb_err err = { "" };
	const char *line;
	size_t len;
	int rc, ret = -1;

	if (!t || !rec) {
		emb_err_set(errp, "out of memory");
		goto out;
	}
	if (emb_reader_open(&rd, c->texts_file, c->max_line, &err) < 0) {
		*errp = err;
		goto out;
	}
	while ((rc = emb_reader_next(rd, &line, &len, &err)) != 0) {
		const char *raw, *text;
		size_t rl, tl;
		rr_text *txt;
		json_t *id = NULL;
		json_error_t je;
		char *key;
		int put;
		if (rc < 0 || emb_record_parse(rec, line, len, &err) < 0 ||
		    emb_record_get_string(rec, "text", &text, &tl, &err) < 0 ||
		    (!(raw = emb_record_raw(rec, "id", &rl)) &&
		     emb_err_set(&err, "missing field 'id'") < 0) ||
		    (!(id = json_loadb(raw, rl, JSON_DECODE_ANY, &je)) &&
		     emb_err_set(&err, "field 'id' is not JSON") < 0)) {
			emb_err_set(errp, "%s:%zu: %s", emb_reader_name(rd),
			            emb_reader_lineno(rd), err.msg);
			goto out;
		}
		key = compact(id);
		json_decref(id);
		if (!key) {
			emb_err_set(errp, "out of memory");
			goto out;
		}
		if (emb_strmap_has(&t->by_id, key)) {
			emb_err_set(errp, "%s:%zu: id %.64s is there twice",
			            emb_reader_name(rd), emb_reader_lineno(rd), key);
			free(key);
			goto out;
		}
		if (emb_grow(&t->all, &t->cap, t->n + 1, sizeof(*t->all)) < 0 ||
		    !(txt = malloc(sizeof(*txt) + tl + 1))) {
			free(key);
			emb_err_set(errp, "out of memory");
			goto out;
		}
		memcpy(txt->text, text, tl);
		txt->text[tl] = 0;
		txt->len = tl;
		t->all[t->n++] = txt;
		put = emb_strmap_put(&t->by_id, key, txt);
		free(key);
		if (put < 0) {
			emb_err_set(errp, "out of memory");
			goto out;
		}
	}
	c->texts = t;
	t = NULL;
	ret = 0;
out:
	texts_free(t);
	emb_reader_free(rd);
	emb_record_free(rec);
	return ret;
}

/*
 * The documents of a record of emb-search's results (--texts): one
 * object per result, its members but the score and "text": its
 * document's text from the --texts file, or of a window (span) the
 * window's slice of it.
 */
static json_t *docs_of_results(const emb_rerank *c, json_t *res,
                               emb_err *err)
{
	json_t *docs = json_array(), *r;
	size_t i;

	if (!docs)
		goto nomem;
	json_array_foreach(res, i, r) {
		json_t *id = json_object_get(r, "id"), *span, *d;
		char *key;
		size_t a, e, n;
		const char *t;
		const rr_text *txt;
		if (!json_is_object(r) || !id) {
			emb_err_set(err, "field 'results': element %zu has no id", i);
			goto fail;
		}
		if (!(key = compact(id)))
			goto nomem;
		if (!(txt = emb_strmap_get(&c->texts->by_id, key))) {
			emb_err_set(err, "field 'results': element %zu: id %.64s is not in %s",
			            i, key, c->texts_file);
			free(key);
			goto fail;
		}
		free(key);
		t = txt->text;
		n = txt->len;
		a = 0;
		e = n;
		span = json_object_get(r, "span");
		if (span) {
			json_t *s0 = json_array_get(span, 0), *s1 = json_array_get(span, 1);
			if (!json_is_integer(s0) || !json_is_integer(s1) ||
			    json_integer_value(s0) < 0 ||
			    json_integer_value(s1) < json_integer_value(s0)) {
				emb_err_set(err, "field 'results': element %zu: 'span' is not [start, end]",
				            i);
				goto fail;
			}
			a = emb_text_cp_offset(t, n, (size_t)json_integer_value(s0));
			e = emb_text_cp_offset(t, n, (size_t)json_integer_value(s1));
		}
		if (!(d = json_deep_copy(r)))
			goto nomem;
		json_object_del(d, "score");
		if (json_object_set_new(d, "text", json_stringn(t + a, e - a)) < 0 ||
		    json_array_append_new(docs, d) < 0)
			goto nomem;
	}
	return docs;
nomem:
	emb_err_set(err, "out of memory");
fail:
	json_decref(docs);
	return NULL;
}

/* the members of object document D but "text", as ("\"id\":7,...")
 * (new; "" for none), NULL when out of memory */
static char *members_of(const json_t *d)
{
	json_t *o = json_deep_copy(d);
	char *s, *m;
	size_t n;

	if (!o)
		return NULL;
	json_object_del(o, "text");
	s = compact(o);
	json_decref(o);
	if (!s)
		return NULL;
	/* "{...}" -> "..." */
	n = strlen(s);
	memmove(s, s + 1, n - 2);
	s[n - 2] = 0;
	m = s;
	return m;
}

/* the query and documents of a ranking record: "query" and
 * "documents", or (with --texts) "text" and emb-search's "results" */
static int ranking_input(const emb_rerank *c, rr_item *it,
                         const emb_record *rec, json_t **q, json_t **docs,
                         emb_err *err)
{
	const char *raw;
	size_t len;
	json_error_t je;
	int results = c->texts && !emb_record_has(rec, "documents") &&
	              emb_record_has(rec, "results");
	const char *qf = results && !emb_record_has(rec, "query") ? "text" :
	                 "query";

	if (!(raw = emb_record_raw(rec, qf, &len)) ||
	    !(*q = json_loadb(raw, len, JSON_DECODE_ANY, &je)) ||
	    !json_is_string(*q))
		return emb_err_set(err, raw ? "field '%s' is not a string" :
		                   "missing field '%s'", qf);
	if (!results) {
		if (!(raw = emb_record_raw(rec, "documents", &len)))
			return emb_err_set(err, c->texts ?
			                   "missing field 'documents' (or 'results')" :
			                   "missing field 'documents'");
		if (!(*docs = json_loadb(raw, len, JSON_DECODE_ANY, &je)) ||
		    !json_is_array(*docs))
			return emb_err_set(err, "field 'documents' is not an array");
		return 0;
	}
	it->from_results = 1;
	raw = emb_record_raw(rec, "results", &len);
	json_t *res = json_loadb(raw, len, JSON_DECODE_ANY, &je);
	if (!json_is_array(res)) {
		json_decref(res);
		return emb_err_set(err, "field 'results' is not an array");
	}
	*docs = docs_of_results(c, res, err);
	json_decref(res);
	return *docs ? 0 : -1;
}

static int prepare_ranking(emb_rerank *c, emb_cli_rec *r, rr_item *it,
                           emb_err *err)
{
	size_t i;
	json_t *q = NULL, *docs = NULL, *d;
	emb_encoding enc;
	size_t pl;
	int rc = -1;

	emb_encoding_init(&enc);
	it->ranking = 1;
	if (ranking_input(c, it, r->rec, &q, &docs, err) < 0)
		goto out;
	if (item_alloc(it, json_array_size(docs), err) < 0)
		goto out;
	r->cost = 0;
	json_array_foreach(docs, i, d) {
		char what[64];
		const json_t *text = d;
		if (json_is_object(d)) {
			text = json_object_get(d, "text");
			if (!json_is_string(text)) {
				emb_err_set(err, "field 'documents': element %zu has no "
				            "string 'text'", i);
				goto out;
			}
			if (!(it->members[i] = members_of(d))) {
				emb_err_set(err, "out of memory");
				goto out;
			}
		} else if (!json_is_string(d)) {
			emb_err_set(err, "field 'documents': element %zu is not a "
			            "string or an object with 'text'", i);
			goto out;
		}
		if (!(it->docs[i] = json_dumps(text, JSON_ENCODE_ANY))) {
			emb_err_set(err, "out of memory");
			goto out;
		}
		snprintf(what, sizeof(what), "document %zu", i);
		if (emb_text_tok_text(&enc, &pl, &c->tt, json_string_value(q),
		                      json_string_length(q), json_string_value(text),
		                      json_string_length(text), err) < 0 ||
		    take_enc(it, i, &enc, err) ||
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

static int prepare_pair(emb_rerank *c, emb_cli_rec *r, rr_item *it,
                        emb_err *err)
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
static int keep_rows(float **out, int *nout, const emb_rerank *c,
                     const float *te,
                     size_t rows, size_t dim, const emb_record *rec,
                     int skip, emb_err *err)
{
	int32_t *ids = NULL;
	size_t nids = 0, k = 0;

	if (c->skip_special) {
		emb_err e = { "" };

		if (emb_record_get_int32s(rec, "input_ids", &ids, &nids, &e) < 0)
			return emb_err_set(err, "--skip-special needs input_ids: %s",
			                   e.msg);
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

static int prepare_maxsim(emb_rerank *c, emb_cli_rec *r, rr_item *it,
                          emb_err *err)
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
	emb_rerank *c = vc;
	rr_item *it = r->user;

	if (!it && !(it = r->user = calloc(1, sizeof(*it))))
		return emb_err_set(err, "out of memory");
	item_clear(it);
	if (c->maxsim)
		return prepare_maxsim(c, r, it, err);
	if (emb_record_has(r->rec, "query") ||
	    emb_record_has(r->rec, "documents") ||
	    (c->texts && emb_record_has(r->rec, "results")))
		return prepare_ranking(c, r, it, err);
	return prepare_pair(c, r, it, err);
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	emb_rerank *c = vc;
	size_t total = 0, k = 0, L = (size_t)c->labels;

	if (c->maxsim)
		return 0;
	for (int i = 0; i < n; i++)
		total += ((rr_item *)rs[i]->user)->n;
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
		rr_item *it = rs[i]->user;
		for (size_t j = 0; j < it->n; j++, k++) {
			c->seqs[k].ids = it->ids[j];
			c->seqs[k].type_ids = it->types[j];
			c->seqs[k].len = it->lens[j];
		}
	}
	if (emb_model_forward_head_budget(c->m, c->logit_buf, EMB_OUT_LOGITS,
	                                  c->seqs, (int)total,
	                                  (size_t)c->batch_tokens, err) < 0)
		return -1;
	k = 0;
	for (int i = 0; i < n; i++) {
		rr_item *it = rs[i]->user;
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
	emb_rerank *c = vc;
	rr_item *it = r->user;
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
		static const char *const drop_res[] = { "results", NULL };
		float *s = malloc((it->n ? it->n : 1) * sizeof(float));
		int rc;
		if (!s)
			return emb_err_set(err, "out of memory");
		for (size_t i = 0; i < it->n; i++)
			s[i] = it->scores[i * L + (size_t)c->label];
		emb_out_begin(b, r->rec, it->from_results ? drop_res : NULL);
		rc = emb_out_ranking_members(b, "results", s, it->n,
		                             (size_t)c->top_k,
		                             c->return_docs ?
		                             (const char *const *)it->docs : NULL,
		                             (const char *const *)it->members, err);
		emb_out_end(b);
		free(s);
		return rc;
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

static int load_queries(emb_rerank *c, emb_err *errp)
{
	emb_reader *rd;
	emb_record *rec = emb_record_new();
	emb_err err;
	const char *line;
	size_t len;
	int rc, ret = -1;

	err.msg[0] = 0;
	if (!rec)
		return emb_err_set(errp, "out of memory");
	if (emb_reader_open(&rd, c->query_file, c->max_line, &err) < 0) {
		emb_record_free(rec);
		*errp = err;
		return -1;
	}
	while ((rc = emb_reader_next(rd, &line, &len, &err)) != 0) {
		float *te = NULL;
		size_t rows, cols;
		int skip = 0;
		emb_rerank_query *q;
		if (rc < 0 || emb_record_parse(rec, line, len, &err) < 0 ||
		    emb_record_get_floats(rec, "token_embeddings", &te, &rows,
		                          &cols, &err) < 0 ||
		    (c->skip_prefix == -1 &&
		     emb_record_prompt_length(&skip, rec, &err) < 0)) {
			emb_err_set(errp, "%s:%zu: %s", emb_reader_name(rd),
			            emb_reader_lineno(rd), err.msg);
			free(te);
			goto out;
		}
		if (c->skip_prefix >= 0)
			skip = c->skip_prefix;
		if (c->nq && cols != (size_t)c->dim) {
			emb_err_set(errp, "%s:%zu: token_embeddings has %zu columns, "
			            "the first query %d", emb_reader_name(rd),
			            emb_reader_lineno(rd), cols, c->dim);
			free(te);
			goto out;
		}
		c->dim = (int)cols;
		if (!(q = realloc(c->queries, (c->nq + 1) * sizeof(*q)))) {
			emb_err_set(errp, "out of memory");
			free(te);
			goto out;
		}
		c->queries = q;
		q = &c->queries[c->nq];
		if (keep_rows(&q->v, &q->n, c, te, rows, cols, rec, skip, &err) < 0) {
			emb_err_set(errp, "%s:%zu: %s", emb_reader_name(rd),
			            emb_reader_lineno(rd), err.msg);
			free(te);
			goto out;
		}
		c->nq++;
		free(te);
	}
	if (rc == 0 && c->nq == 0) {
		emb_err_set(errp, "%s: no query records", emb_reader_name(rd));
		goto out;
	}
	ret = 0;
out:
	emb_reader_free(rd);
	emb_record_free(rec);
	return ret;
}

typedef struct rerank_check_ctx {
	emb_rerank *c;
	const emb_cli *cli;
	const char *dir;
} rerank_check_ctx;

/* the model is a cross-encoder with --label's label (emb_cli_model_tok's
 * check, before the tokenizer's errors); exits 3, or 2 for --label */
static void rerank_check(void *vctx, emb_model *m)
{
	rerank_check_ctx *x = vctx;
	emb_rerank *c = x->c;
	emb_err err;

	if (emb_model_head(m) != EMB_HEAD_CLASSIFIER)
		emb_cli_die(x->cli, EMB_EXIT_MODEL, "%s: architecture %s is not a "
		            "cross-encoder (a *ForSequenceClassification model)",
		            x->dir, emb_model_arch(m));
	c->labels = emb_model_num_labels(m);
	if (c->label >= c->labels)
		emb_cli_usage_error(x->cli, "--label %d: the model has %d label%s",
		                    c->label, c->labels, c->labels == 1 ? "" : "s");
	if (c->act < 0 &&
	    emb_activation_default(&c->act, x->dir, c->labels, &err) < 0)
		emb_cli_die(x->cli, EMB_EXIT_MODEL, "%s", err.msg);
}

int emb_rerank_setup(emb_rerank *c, const emb_cli *cli, const char *dir,
                     emb_err *err)
{
	emb_model_opts mo;
	rerank_check_ctx x = { c, cli, dir };

	memset(&mo, 0, sizeof(mo));
	mo.threads = c->threads;
	mo.prec = cli->prec;
	if (emb_static_detect(dir, err) > 0)
		return emb_err_set(err, "%s: a static embedding model is not a cross-encoder (embed with emb-encode --pool, rank with emb-search)",
		                   dir);
	/* the model (on a thread of its own with -j > 1) and its tokenizer;
	 * their errors exit here */
	c->m = emb_cli_model_tok(&c->tt, cli, dir, &mo, rerank_check, &x);
	c->tt_loaded = 1;
	if (c->texts_file && load_texts(c, err) < 0)
		return -1;
	/* a checkpoint without the head fails here, at load (exit 3) */
	return emb_model_head_load(c->m, EMB_OUT_LOGITS, err);
}

int emb_rerank_maxsim_setup(emb_rerank *c, const char *dir, emb_err *err)
{
	c->maxsim = 1;
	if (c->skip_special) {
		int rc;
		if (emb_tokenizer_load(&c->tok, dir, err) < 0)
			return -1;
		rc = emb_tokenizer_special_ids(&c->special, &c->nspecial, c->tok,
		                               err);
		emb_tokenizer_free(c->tok);
		c->tok = NULL;
		if (rc < 0)
			return -1;
	}
	return load_queries(c, err);
}

void emb_rerank_release(emb_rerank *c)
{
	for (size_t q = 0; q < c->nq; q++)
		free(c->queries[q].v);
	free(c->queries);
	free(c->special);
	texts_free(c->texts);
	c->texts = NULL;
	if (c->tok)
		emb_tokenizer_free(c->tok);
	if (c->tt_loaded)
		emb_text_tok_release(&c->tt);
	if (c->m)
		emb_model_profile(c->m, stderr, "emb-rerank: profile: ");
	emb_model_free(c->m);
	free(c->seqs);
	free(c->logit_buf);
	c->queries = NULL;
	c->special = NULL;
	c->tok = NULL;
	c->m = NULL;
	c->seqs = NULL;
	c->logit_buf = NULL;
	c->nq = c->nspecial = 0;
	c->tt_loaded = 0;
}

const emb_cli_ops emb_rerank_ops = { prepare, run, emit, free_user,
                                     EMB_BATCH_TOKENS, 4096 };
const emb_cli_ops emb_rerank_maxsim_ops = { prepare, NULL, emit, free_user, 0,
                                            4096 };
