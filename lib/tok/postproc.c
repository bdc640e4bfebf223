/*
 * postproc.c - the post-processor: tokenizer.json's post_processor
 * (TemplateProcessing; BertProcessing and RobertaProcessing as
 * templates; ByteLevel's and RobertaProcessing's offset trimming; a
 * Sequence of them) parsed into the template of special tokens and
 * sequences that emb_tokenize follows, and the special tokens it adds.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"

size_t tk_post_specials(const tk_tpl_item *it, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (it[i].seq < 0)
			k += it[i].n;
	return k;
}

size_t emb_tokenizer_num_special(const emb_tokenizer *tok, int pair)
{
	if (tok->post.type != TK_POST_TEMPLATE)
		return 0;
	return pair ? tk_post_specials(tok->post.pair, tok->post.n_pair)
	            : tk_post_specials(tok->post.single, tok->post.n_single);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int emb_tokenizer_special_ids(int32_t **out, size_t *n,
                              const emb_tokenizer *tok, emb_err *err)
{
	const tk_post *p = &tok->post;
	size_t k = 0, cap = 1;
	int32_t *v;

	*out = NULL;
	*n = 0;
	if (p->type == TK_POST_TEMPLATE) {
		for (size_t i = 0; i < p->n_single; i++)
			if (p->single[i].seq < 0)
				cap += p->single[i].n;
		for (size_t i = 0; i < p->n_pair; i++)
			if (p->pair[i].seq < 0)
				cap += p->pair[i].n;
	}
	if (!(v = malloc(cap * sizeof(*v))))
		return emb_err_set(err, "out of memory");
	for (int pair = 0; pair < 2 && p->type == TK_POST_TEMPLATE; pair++) {
		const tk_tpl_item *it = pair ? p->pair : p->single;
		size_t ni = pair ? p->n_pair : p->n_single;
		for (size_t i = 0; i < ni; i++)
			if (it[i].seq < 0)
				for (size_t j = 0; j < it[i].n; j++)
					v[k++] = it[i].ids[j];
	}
	qsort(v, k, sizeof(*v), cmp_i32);
	*n = 0;
	for (size_t i = 0; i < k; i++)
		if (!*n || v[*n - 1] != v[i])
			v[(*n)++] = v[i];
	*out = v;
	return 0;
}

void tk_post_release(tk_post *p)
{
	size_t i;

	for (i = 0; i < p->n_single; i++)
		free(p->single[i].ids);
	for (i = 0; i < p->n_pair; i++)
		free(p->pair[i].ids);
	free(p->single);
	free(p->pair);
	memset(p, 0, sizeof(*p));
}

/* template item with special ids */
static int tpl_special(tk_tpl_item *it, int type_id, const int32_t *ids,
                       size_t n)
{
	it->seq = -1;
	it->type_id = type_id;
	it->n = n;
	it->ids = malloc((n ? n : 1) * sizeof(*ids));
	if (!it->ids)
		return -1;
	memcpy(it->ids, ids, n * sizeof(*ids));
	return 0;
}

static int tpl_seq(tk_tpl_item *it, int seq, int type_id)
{
	it->seq = seq;
	it->type_id = type_id;
	return 0;
}

/* BertProcessing and RobertaProcessing as templates */
int tk_post_bert(tk_post *p, int32_t cls, int32_t sep, int roberta)
{
	tk_tpl_item *s = calloc(3, sizeof(*s)), *q = calloc(6, sizeof(*q));
	int b = roberta ? 0 : 1;

	p->single = s;
	p->pair = q;
	if (!s || !q)
		return -1;
	p->type = TK_POST_TEMPLATE;
	p->n_single = 3;
	if (tpl_special(&s[0], 0, &cls, 1) < 0 || tpl_seq(&s[1], 0, 0) < 0 ||
	    tpl_special(&s[2], 0, &sep, 1) < 0)
		return -1;
	p->n_pair = 0;
	if (tpl_special(&q[p->n_pair++], 0, &cls, 1) < 0)
		return -1;
	tpl_seq(&q[p->n_pair++], 0, 0);
	if (tpl_special(&q[p->n_pair++], 0, &sep, 1) < 0)
		return -1;
	if (roberta && tpl_special(&q[p->n_pair++], 0, &sep, 1) < 0)
		return -1;
	tpl_seq(&q[p->n_pair++], 1, b);
	if (tpl_special(&q[p->n_pair++], b, &sep, 1) < 0)
		return -1;
	return 0;
}

/* ["[SEP]", 102] */
static int parse_tok_pair(int32_t *id, const json_t *j, const char *file,
                          const char *field, emb_err *err)
{
	json_t *v = json_array_get(j, 1);

	if (!json_is_array(j) || json_array_size(j) != 2 ||
	    !json_is_string(json_array_get(j, 0)) || !json_is_integer(v) ||
	    json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return emb_err_set(err, "%s: field 'post_processor.%s' must be "
		                   "[token, id]", file, field);
	*id = (int32_t)json_integer_value(v);
	return 0;
}

static int parse_template(tk_tpl_item **out, size_t *nout, const json_t *a,
                          const json_t *specials, const char *file,
                          const char *field, emb_err *err)
{
	size_t i, n;

	if (!json_is_array(a))
		return emb_err_set(err, "%s: field 'post_processor.%s' must be "
		                   "an array", file, field);
	n = json_array_size(a);
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return emb_err_set(err, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *it = json_array_get(a, i), *sp, *sq, *body, *tid, *id;
		tk_tpl_item *t = &(*out)[i];
		json_int_t type_id = 0;

		*nout = i + 1;
		sp = json_object_get(it, "SpecialToken");
		sq = json_object_get(it, "Sequence");
		body = sp ? sp : sq;
		if (!json_is_object(body))
			return emb_err_set(err, "%s: field 'post_processor.%s[%zu]' "
			                   "must be {\"SpecialToken\": ...} or "
			                   "{\"Sequence\": ...}", file, field, i);
		tid = json_object_get(body, "type_id");
		id = json_object_get(body, "id");
		if (tid) {
			if (!json_is_integer(tid) || json_integer_value(tid) < 0 ||
			    json_integer_value(tid) > INT32_MAX)
				return emb_err_set(err, "%s: field 'post_processor."
				                   "%s[%zu].type_id' must be a "
				                   "non-negative integer", file,
				                   field, i);
			type_id = json_integer_value(tid);
		}
		if (!json_is_string(id))
			return emb_err_set(err, "%s: field 'post_processor.%s[%zu]"
			                   ".id' must be a string", file, field, i);
		if (sq) {
			const char *s = json_string_value(id);
			if (strcmp(s, "A") && strcmp(s, "B"))
				return emb_err_set(err, "%s: field 'post_processor."
				                   "%s[%zu].id' must be \"A\" or "
				                   "\"B\"", file, field, i);
			tpl_seq(t, s[0] == 'B', (int)type_id);
		} else {
			json_t *st = json_object_get(specials,
			                             json_string_value(id));
			json_t *ids = json_object_get(st, "ids");
			size_t k;
			int32_t buf[64];
			if (!json_is_array(ids) || json_array_size(ids) > 64)
				return emb_err_set(err, "%s: field 'post_processor."
				                   "special_tokens' has no ids for "
				                   "'%s'", file, json_string_value(id));
			for (k = 0; k < json_array_size(ids); k++) {
				json_t *x = json_array_get(ids, k);
				if (!json_is_integer(x) || json_integer_value(x) < 0 ||
				    json_integer_value(x) > INT32_MAX)
					return emb_err_set(err, "%s: field "
					                   "'post_processor.special_tokens."
					                   "%s.ids' must hold token ids",
					                   file, json_string_value(id));
				buf[k] = (int32_t)json_integer_value(x);
			}
			if (tpl_special(t, (int)type_id, buf, k) < 0)
				return emb_err_set(err, "out of memory");
		}
	}
	return 0;
}

/* RobertaProcessing's and ByteLevel's offset options (default true) */
static void post_offsets(tk_post *p, const json_t *j)
{
	json_t *x = json_object_get(j, "trim_offsets");

	p->trim_offsets = json_is_boolean(x) ? json_is_true(x) : 1;
	x = json_object_get(j, "add_prefix_space");
	p->add_prefix_space = json_is_boolean(x) ? json_is_true(x) : 1;
}

int tk_post_parse(tk_post *p, const json_t *j, const char *file,
                  int depth, emb_err *err)
{
	json_t *t;
	const char *type;

	memset(p, 0, sizeof(*p));
	if (!j || json_is_null(j))
		return 0;
	t = json_object_get(j, "type");
	if (!json_is_object(j) || !json_is_string(t))
		return emb_err_set(err, "%s: field 'post_processor.type' must be "
		                   "a string naming the post-processor", file);
	type = json_string_value(t);
	if (!strcmp(type, "TemplateProcessing")) {
		json_t *sp = json_object_get(j, "special_tokens");
		if (sp && !json_is_object(sp))
			return emb_err_set(err, "%s: field "
			                   "'post_processor.special_tokens' must be "
			                   "an object", file);
		p->type = TK_POST_TEMPLATE;
		if (parse_template(&p->single, &p->n_single,
		                   json_object_get(j, "single"), sp, file,
		                   "single", err) < 0 ||
		    parse_template(&p->pair, &p->n_pair,
		                   json_object_get(j, "pair"), sp, file, "pair",
		                   err) < 0)
			return -1;
		return 0;
	}
	if (!strcmp(type, "BertProcessing") ||
	    !strcmp(type, "RobertaProcessing")) {
		int32_t cls, sep;
		if (parse_tok_pair(&cls, json_object_get(j, "cls"), file, "cls",
		                   err) < 0 ||
		    parse_tok_pair(&sep, json_object_get(j, "sep"), file, "sep",
		                   err) < 0)
			return -1;
		if (tk_post_bert(p, cls, sep, type[0] == 'R') < 0)
			return emb_err_set(err, "out of memory");
		if (type[0] == 'R')
			post_offsets(p, j);
		return 0;
	}
	if (!strcmp(type, "ByteLevel")) {
		/* no special tokens; trims offsets like RobertaProcessing */
		post_offsets(p, j);
		return 0;
	}
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "processors");
		size_t i;
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field "
			                   "'post_processor.processors' must be an "
			                   "array", file);
		if (depth > 8)
			return emb_err_set(err, "%s: field 'post_processor' is "
			                   "nested too deeply", file);
		for (i = 0; i < json_array_size(a); i++) {
			tk_post q;
			if (tk_post_parse(&q, json_array_get(a, i), file, depth + 1,
			                  err) < 0) {
				tk_post_release(&q);
				return -1;
			}
			if (q.type == TK_POST_TEMPLATE) {
				if (p->type == TK_POST_TEMPLATE) {
					tk_post_release(&q);
					return emb_err_set(err, "%s: field "
					                   "'post_processor': a Sequence "
					                   "with two processors that add "
					                   "special tokens is not "
					                   "supported", file);
				}
				p->type = q.type;
				p->single = q.single;
				p->pair = q.pair;
				p->n_single = q.n_single;
				p->n_pair = q.n_pair;
			}
			if (q.trim_offsets) {
				p->trim_offsets = 1;
				p->add_prefix_space = q.add_prefix_space;
			}
		}
		return 0;
	}
	return emb_err_set(err, "%s: post_processor type '%s' is not "
	                   "supported", file, type);
}

/* every special token the post-processor adds must be in a vocabulary */
int tk_post_check(const emb_tokenizer *t, const char *file, emb_err *err)
{
	const tk_tpl_item *v[2] = {t->post.single, t->post.pair};
	size_t n[2] = {t->post.n_single, t->post.n_pair}, k, i, j;

	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++)
			for (j = 0; v[k][i].seq < 0 && j < v[k][i].n; j++)
				if (!emb_tokenizer_id_to_token(t, v[k][i].ids[j]))
					return emb_err_set(err, "%s: field "
					                   "'post_processor': special "
					                   "token id %d is not in the "
					                   "vocabulary", file,
					                   v[k][i].ids[j]);
	return 0;
}
