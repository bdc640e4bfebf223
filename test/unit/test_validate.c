/*
 * test_validate.c - the comparison logic of emb-validate on hand-made
 * records (lib/validate.c) and the manifest loader's errors
 * (lib/manifest.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"

/* feed the lines of G (golden) and X (input), NULL-terminated arrays,
 * alternately as the file driver does; return finish's verdict */
static int run(emb_validate *v, const char *const *g, const char *const *x)
{
	emb_record *rec = emb_record_new();
	emb_err err;
	size_t i = 0, j = 0;

	cr_assert(rec);
	while ((g && g[i]) || (x && x[j])) {
		if (g && g[i]) {
			cr_assert_eq(emb_record_parse(rec, g[i], strlen(g[i]),
			                              &err), 0, "%s", err.msg);
			emb_validate_add(v, EMB_SIDE_GOLDEN, rec, "golden");
			i++;
		}
		if (x && x[j]) {
			cr_assert_eq(emb_record_parse(rec, x[j], strlen(x[j]),
			                              &err), 0, "%s", err.msg);
			emb_validate_add(v, EMB_SIDE_INPUT, rec, "input");
			j++;
		}
	}
	emb_record_free(rec);
	return emb_validate_finish(v, NULL);
}

static emb_validate *mk(const emb_validate_opts *o)
{
	emb_validate *v = NULL;
	emb_validate_opts def;
	emb_err err;

	if (!o) {
		emb_validate_opts_init(&def);
		o = &def;
	}
	cr_assert_eq(emb_validate_new(&v, o, &err), 0, "%s", err.msg);
	return v;
}

static emb_vstat stat_of(const emb_validate *v, const char *f)
{
	emb_vstat st;

	cr_assert_eq(emb_validate_stat(v, f, &st), 0, "no stat for %s", f);
	return st;
}

/* base64 of little-endian float32 (test helper, x86 is little-endian) */
static char *b64(const float *f, size_t n)
{
	static const char t[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)f;
	size_t len = n * 4, k = 0;
	char *o = calloc(len / 3 * 4 + 8, 1);

	for (size_t i = 0; i < len; i += 3) {
		unsigned v = p[i] << 16;

		if (i + 1 < len)
			v |= p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		o[k++] = t[(v >> 18) & 63];
		o[k++] = t[(v >> 12) & 63];
		o[k++] = i + 1 < len ? t[(v >> 6) & 63] : '=';
		o[k++] = i + 2 < len ? t[v & 63] : '=';
	}
	return o;
}

Test(validate, identical_records_pass)
{
	const char *g[] = {
		"{\"id\":1,\"input_ids\":[101,7,102],\"token_type_ids\":[0,0,0],"
		"\"embedding\":[0.25,-0.5,1]}",
		"{\"id\":2,\"input_ids\":[101,102],\"token_type_ids\":[0,0],"
		"\"embedding\":[1,0,0]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;
	emb_vstat st;

	cr_assert_eq(run(v, g, g), 0);
	st = stat_of(v, "embedding");
	cr_assert_eq(st.count, 2);
	cr_assert_eq(st.max_abs, 0);
	cr_assert_float_eq(st.min_cos, 1, 1e-12);
	cr_assert(st.ok);
	st = stat_of(v, "input_ids");
	cr_assert_eq(st.count, 2);
	cr_assert_eq(st.mismatches, 0);
	cr_assert(st.exact);
	emb_validate_records(v, &r);
	cr_assert_eq(r.joined, 2);
	cr_assert(r.by_id);
	/* not compared: no stat */
	cr_assert_eq(emb_validate_stat(v, "logits", &st), 0);
	cr_assert_eq(st.count, 0);
	cr_assert_eq(emb_validate_stat(v, "no_such_field", &st), -1);
	emb_validate_free(v);
}

Test(validate, one_id_out_of_tolerance_is_named)
{
	const char *g[] = {
		"{\"id\":\"a\",\"embedding\":[0.5,0.5]}",
		"{\"id\":\"b\",\"embedding\":[0.5,0.5]}",
		"{\"id\":\"c\",\"embedding\":[0.5,0.5]}", NULL };
	const char *x[] = {
		"{\"id\":\"a\",\"embedding\":[0.5,0.5]}",
		"{\"id\":\"b\",\"embedding\":[0.5,0.5001]}",
		"{\"id\":\"c\",\"embedding\":[0.5000001,0.5]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vstat st;

	cr_assert_eq(run(v, g, x), 1);
	st = stat_of(v, "embedding");
	cr_assert_eq(st.count, 3);
	cr_assert_eq(st.mismatches, 1);
	cr_assert_str_eq(st.max_abs_id, "id \"b\"");
	cr_assert_float_eq(st.max_abs, 0.5001f - 0.5f, 1e-9);
	cr_assert_not(st.ok);
	emb_validate_free(v);
}

Test(validate, tolerance_boundary_is_inclusive)
{
	/* 0.5078125 - 0.5 = 2^-7 exactly in float and double */
	const char *g[] = { "{\"id\":0,\"embedding\":[0.5,1]}", NULL };
	const char *x[] = { "{\"id\":0,\"embedding\":[0.5078125,1]}", NULL };
	emb_validate_opts o;
	emb_validate *v;

	emb_validate_opts_init(&o);
	o.atol = 0.0078125;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 0, "diff == atol must pass");
	emb_validate_free(v);
	o.atol = 0.0078124;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 1, "diff > atol must fail");
	emb_validate_free(v);
}

Test(validate, default_atol_is_1e5)
{
	const char *g[] = { "{\"embedding\":[1]}", NULL };
	const char *ok[] = { "{\"embedding\":[1.000009]}", NULL };
	const char *bad[] = { "{\"embedding\":[1.00002]}", NULL };
	emb_validate *v = mk(NULL);

	cr_assert_eq(run(v, g, ok), 0);
	emb_validate_free(v);
	v = mk(NULL);
	cr_assert_eq(run(v, g, bad), 1);
	emb_validate_free(v);
}

Test(validate, joins_on_id_in_any_order)
{
	const char *g[] = {
		"{\"id\":1,\"input_ids\":[1]}", "{\"id\":2,\"input_ids\":[2]}",
		"{\"id\":3,\"input_ids\":[3]}", "{\"id\":4,\"input_ids\":[4]}",
		NULL };
	const char *x[] = {
		"{\"id\":4,\"input_ids\":[4]}", "{\"id\":3,\"input_ids\":[3]}",
		"{\"id\":2,\"input_ids\":[2]}", "{\"id\":1,\"input_ids\":[1]}",
		NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 0);
	emb_validate_records(v, &r);
	cr_assert_eq(r.joined, 4);
	cr_assert_eq(stat_of(v, "input_ids").count, 4);
	emb_validate_free(v);
}

Test(validate, id_text_is_compared_raw)
{
	/* "1" (string) and 1 (number) are different ids */
	const char *g[] = { "{\"id\":1,\"input_ids\":[5]}", NULL };
	const char *x[] = { "{\"id\":\"1\",\"input_ids\":[5]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.joined, 0);
	cr_assert_eq(r.missing_input, 1);
	cr_assert_eq(r.missing_golden, 1);
	emb_validate_free(v);
}

Test(validate, line_order_without_ids)
{
	const char *g[] = { "{\"id\":7,\"input_ids\":[1,2]}",
	                    "{\"id\":8,\"input_ids\":[3]}", NULL };
	const char *x[] = { "{\"input_ids\":[1,2]}", "{\"input_ids\":[4]}",
	                    NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;
	emb_vstat st;

	cr_assert_eq(run(v, g, x), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.by_id, 0);
	cr_assert_eq(r.joined, 2);
	st = stat_of(v, "input_ids");
	cr_assert_eq(st.mismatches, 1);
	emb_validate_free(v);
}

Test(validate, missing_records_fail_both_ways)
{
	const char *g[] = { "{\"id\":1,\"input_ids\":[1]}",
	                    "{\"id\":2,\"input_ids\":[2]}",
	                    "{\"id\":3,\"input_ids\":[3]}", NULL };
	const char *x[] = { "{\"id\":1,\"input_ids\":[1]}",
	                    "{\"id\":3,\"input_ids\":[3]}",
	                    "{\"id\":9,\"input_ids\":[9]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.joined, 2);
	cr_assert_eq(r.missing_input, 1);
	cr_assert_eq(r.missing_golden, 1);
	cr_assert(stat_of(v, "input_ids").ok);
	emb_validate_free(v);
}

Test(validate, empty_input_fails)
{
	const char *g[] = { "{\"id\":1,\"input_ids\":[1]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, NULL), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.missing_input, 1);
	emb_validate_free(v);
	v = mk(NULL);
	cr_assert_eq(run(v, NULL, NULL), 1, "nothing compared must fail");
	emb_validate_free(v);
}

Test(validate, duplicate_and_missing_ids)
{
	const char *g[] = { "{\"id\":1,\"input_ids\":[1]}",
	                    "{\"id\":1,\"input_ids\":[1]}",
	                    "{\"input_ids\":[1]}", NULL };
	const char *x[] = { "{\"id\":1,\"input_ids\":[1]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.duplicates, 1);
	cr_assert_eq(r.no_id, 1);
	cr_assert_eq(r.joined, 1);
	emb_validate_free(v);
}

Test(validate, shape_mismatch)
{
	const char *g[] = { "{\"id\":1,\"embedding\":[1,2,3]}",
	                    "{\"id\":2,\"last_hidden_state\":[[1,2],[3,4]]}",
	                    NULL };
	const char *x[] = { "{\"id\":1,\"embedding\":[1,2]}",
	                    "{\"id\":2,\"token_embeddings\":[[1,2],[3,4],"
	                    "[5,6]]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vstat st;

	cr_assert_eq(run(v, g, x), 1);
	st = stat_of(v, "embedding");
	cr_assert_eq(st.shape_errors, 1);
	st = stat_of(v, "token_embeddings");
	cr_assert_eq(st.shape_errors, 1);
	cr_assert_not(st.ok);
	emb_validate_free(v);
}

Test(validate, token_embeddings_against_last_hidden_state)
{
	const char *g[] = {
		"{\"id\":1,\"last_hidden_state\":[[1,0],[0,1],[0.5,0.5]]}",
		"{\"id\":2,\"embedding\":[1]}", NULL };
	const char *x[] = {
		"{\"id\":1,\"token_embeddings\":[[1,0],[0,1],[0.5,0.50005]]}",
		"{\"id\":2,\"token_embeddings\":[[1]],\"embedding\":[1]}",
		NULL };
	emb_validate_opts o;
	emb_vtol t = { "last_hidden_state", 1e-4, NAN };
	emb_validate *v;
	emb_vstat st;

	/* default atol 1e-5: fails at row 2 */
	v = mk(NULL);
	cr_assert_eq(run(v, g, x), 1);
	st = stat_of(v, "token_embeddings");
	cr_assert_eq(st.count, 1, "only records with both sides count");
	cr_assert_eq(st.input_only, 1);
	cr_assert_eq(st.mismatches, 1);
	emb_validate_free(v);
	/* per-field tolerance through the alias */
	emb_validate_opts_init(&o);
	o.tols = &t;
	o.n_tols = 1;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 0);
	st = stat_of(v, "token_embeddings");
	cr_assert_float_eq(st.atol, 1e-4, 1e-15);
	cr_assert_float_eq(stat_of(v, "embedding").atol, 1e-5, 1e-15);
	emb_validate_free(v);
}

Test(validate, b64_inputs_are_accepted)
{
	float e[3] = { 0.1f, -2.5f, 3e-7f };
	float m0[2] = { 1.5f, -1 }, m1[2] = { 0.25f, 8 };
	char *s = b64(e, 3), *r0 = b64(m0, 2), *r1 = b64(m1, 2);
	char gl[256], xl[512];
	const char *g[] = { gl, NULL }, *x[] = { xl, NULL };
	emb_validate *v = mk(NULL);
	emb_vstat st;

	snprintf(gl, sizeof(gl), "{\"id\":5,\"embedding\":[%.9g,%.9g,%.9g],"
	         "\"last_hidden_state\":[[1.5,-1],[0.25,8]]}",
	         (double)e[0], (double)e[1], (double)e[2]);
	snprintf(xl, sizeof(xl), "{\"id\":5,\"embedding_b64\":\"%s\","
	         "\"token_embeddings_b64\":[\"%s\",\"%s\"]}", s, r0, r1);
	cr_assert_eq(run(v, g, x), 0);
	st = stat_of(v, "embedding");
	cr_assert_eq(st.count, 1);
	cr_assert_eq(st.max_abs, 0);
	cr_assert_eq(stat_of(v, "token_embeddings").count, 1);
	emb_validate_free(v);
	free(s);
	free(r0);
	free(r1);
}

Test(validate, min_cos_catches_direction)
{
	/* tiny vectors: within atol but orthogonal */
	const char *g[] = { "{\"id\":1,\"embedding\":[1e-6,0]}", NULL };
	const char *x[] = { "{\"id\":1,\"embedding\":[0,1e-6]}", NULL };
	emb_validate_opts o;
	emb_validate *v;
	emb_vstat st;

	emb_validate_opts_init(&o);
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 0, "min cos is off by default");
	emb_validate_free(v);
	o.min_cos = 0.5;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 1);
	st = stat_of(v, "embedding");
	cr_assert_float_eq(st.min_cos, 0, 1e-12);
	cr_assert_str_eq(st.min_cos_id, "id 1");
	emb_validate_free(v);
}

Test(validate, exact_fields)
{
	const char *g[] = {
		"{\"id\":1,\"input_ids\":[101,5,102],\"token_type_ids\":[0,0,0],"
		"\"tokens\":[\"[CLS]\",\"a\",\"[SEP]\"]}",
		"{\"id\":2,\"input_ids\":[101,102],\"token_type_ids\":[0,0],"
		"\"tokens\":[\"[CLS]\",\"[SEP]\"]}",
		"{\"id\":3,\"input_ids\":[101,102],\"token_type_ids\":[0,0],"
		"\"tokens\":[\"[CLS]\",\"[SEP]\"]}", NULL };
	const char *x[] = {
		"{\"id\":1,\"input_ids\":[101,6,102],\"token_type_ids\":[0,0,0],"
		"\"tokens\":[\"[CLS]\",\"b\",\"[SEP]\"]}",
		"{\"id\":2,\"input_ids\":[101,102,102],\"token_type_ids\":[0,0],"
		"\"tokens\":[\"[CLS]\",\"[SEP]\"]}",
		"{\"id\":3,\"input_ids\":[101,102],\"token_type_ids\":[0,1],"
		"\"tokens\":[\"[CLS]\",\"[SEP]\"]}", NULL };
	emb_validate *v = mk(NULL);

	cr_assert_eq(run(v, g, x), 1);
	cr_assert_eq(stat_of(v, "input_ids").mismatches, 2);
	cr_assert_eq(stat_of(v, "token_type_ids").mismatches, 1);
	cr_assert_eq(stat_of(v, "tokens").mismatches, 1);
	cr_assert_eq(stat_of(v, "tokens").count, 3);
	emb_validate_free(v);
}

Test(validate, field_selection)
{
	const char *g[] = { "{\"id\":1,\"input_ids\":[1],\"embedding\":[1]}",
	                    NULL };
	const char *x[] = { "{\"id\":1,\"input_ids\":[2],\"embedding\":[1]}",
	                    NULL };
	const char *only_emb[] = { "embedding", NULL };
	const char *only_logits[] = { "logits", NULL };
	const char *bogus[] = { "embeddings", NULL };
	emb_validate_opts o;
	emb_validate *v = NULL;
	emb_vstat st;
	emb_err err;

	emb_validate_opts_init(&o);
	o.fields = only_emb;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 0, "input_ids not compared");
	cr_assert_eq(emb_validate_stat(v, "input_ids", &st), -1);
	emb_validate_free(v);
	o.fields = only_logits;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 1, "a requested field must be compared");
	emb_validate_free(v);
	o.fields = bogus;
	cr_assert_eq(emb_validate_new(&v, &o, &err), -1);
	cr_assert(strstr(err.msg, "embeddings"), "%s", err.msg);
}

Test(validate, field_missing_in_some_input_records)
{
	/* the input has embeddings, but not for id 2 */
	const char *g[] = { "{\"id\":1,\"embedding\":[1]}",
	                    "{\"id\":2,\"embedding\":[1]}", NULL };
	const char *x[] = { "{\"id\":1,\"embedding\":[1]}",
	                    "{\"id\":2}", NULL };
	/* an input with no embedding at all is simply not compared */
	const char *y[] = { "{\"id\":1,\"input_ids\":[1]}",
	                    "{\"id\":2,\"input_ids\":[1]}", NULL };
	const char *gy[] = { "{\"id\":1,\"input_ids\":[1],\"embedding\":[1]}",
	                     "{\"id\":2,\"input_ids\":[1],\"embedding\":[1]}",
	                     NULL };
	emb_validate *v = mk(NULL);
	emb_vstat st;

	cr_assert_eq(run(v, g, x), 1);
	st = stat_of(v, "embedding");
	cr_assert_eq(st.golden_only, 1);
	emb_validate_free(v);
	v = mk(NULL);
	cr_assert_eq(run(v, gy, y), 0);
	emb_validate_free(v);
}

Test(validate, sparse_vectors)
{
	const char *g[] = {
		"{\"id\":1,\"sparse\":{\"94\":0.5,\"2578\":0.25}}",
		"{\"id\":2,\"sparse\":{\"7\":0.5}}",
		"{\"id\":3,\"sparse\":{\"7\":0.5,\"9\":0.000001}}", NULL };
	const char *same[] = {
		"{\"id\":1,\"sparse\":{\"indices\":[2578,94],"
		"\"values\":[0.25,0.5]}}",
		"{\"id\":2,\"sparse\":{\"7\":0.500001}}",
		"{\"id\":3,\"sparse\":{\"7\":0.5}}", NULL };
	const char *diff[] = {
		"{\"id\":1,\"sparse\":{\"94\":0.5,\"2578\":0.25,\"3\":0.1}}",
		"{\"id\":2,\"sparse\":{\"7\":0.5}}",
		"{\"id\":3,\"sparse\":{\"7\":0.5,\"9\":0.000001}}", NULL };
	emb_validate *v = mk(NULL);
	emb_vstat st;

	cr_assert_eq(run(v, g, same), 0);
	cr_assert_eq(stat_of(v, "sparse").count, 3);
	emb_validate_free(v);
	v = mk(NULL);
	cr_assert_eq(run(v, g, diff), 1);
	st = stat_of(v, "sparse");
	cr_assert_eq(st.mismatches, 1);
	cr_assert_str_eq(st.max_abs_id, "id 1");
	cr_assert_float_eq(st.max_abs, 0.1, 1e-7);
	emb_validate_free(v);
}

Test(validate, quantized_integers)
{
	const char *g[] = { "{\"id\":1,\"int8\":[-13,35,127]}", NULL };
	const char *x[] = { "{\"id\":1,\"int8\":[-13,36,127]}", NULL };
	emb_vtol t = { "int8", 1, NAN };
	emb_validate_opts o;
	emb_validate *v = mk(NULL);

	cr_assert_eq(run(v, g, x), 1, "quantized default is exact");
	cr_assert_eq(stat_of(v, "int8").max_abs, 1);
	emb_validate_free(v);
	emb_validate_opts_init(&o);
	o.tols = &t;
	o.n_tols = 1;
	v = mk(&o);
	cr_assert_eq(run(v, g, x), 0);
	emb_validate_free(v);
}

Test(validate, unreadable_field_and_bad_line)
{
	const char *g[] = { "{\"id\":1,\"embedding\":[1,2]}", NULL };
	const char *x[] = { "{\"id\":1,\"embedding\":[1,\"two\"]}", NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 1);
	cr_assert_eq(stat_of(v, "embedding").bad, 1);
	emb_validate_free(v);
	v = mk(NULL);
	emb_validate_bad(v, EMB_SIDE_INPUT, "in.jsonl:1", "invalid JSON");
	cr_assert_eq(run(v, g, g), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.bad, 1);
	emb_validate_free(v);
}

Test(validate, nan_never_passes)
{
	float e[2] = { 1, NAN };
	char *s = b64(e, 2), xl[128];
	const char *g[] = { "{\"id\":1,\"embedding\":[1,0]}", NULL };
	const char *x[] = { xl, NULL };
	emb_validate *v = mk(NULL);

	snprintf(xl, sizeof(xl), "{\"id\":1,\"embedding_b64\":\"%s\"}", s);
	cr_assert_eq(run(v, g, x), 1);
	emb_validate_free(v);
	free(s);
}

Test(validate, summary_lines)
{
	const char *g[] = { "{\"id\":17,\"input_ids\":[1],"
	                    "\"embedding\":[0.5,0.25]}", NULL };
	const char *x[] = { "{\"id\":17,\"input_ids\":[1],"
	                    "\"embedding\":[0.5,0.25]}", NULL };
	emb_validate_opts o;
	emb_validate *v;
	emb_record *rec = emb_record_new();
	emb_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	emb_validate_opts_init(&o);
	o.prefix = "case: ";
	v = mk(&o);
	cr_assert_eq(emb_record_parse(rec, g[0], strlen(g[0]), &err), 0);
	emb_validate_add(v, EMB_SIDE_GOLDEN, rec, NULL);
	cr_assert_eq(emb_record_parse(rec, x[0], strlen(x[0]), &err), 0);
	emb_validate_add(v, EMB_SIDE_INPUT, rec, NULL);
	cr_assert_eq(emb_validate_finish(v, fp), 0);
	fclose(fp);
	cr_assert(strstr(buf, "case: input_ids: 1 records, 0 mismatches: ok\n"),
	          "%s", buf);
	cr_assert(strstr(buf, "case: embedding: 1 records, max abs diff 0 "
	                 "(id 17), min cos 1 (id 17): ok\n"), "%s", buf);
	free(buf);
	emb_validate_free(v);
	emb_record_free(rec);
}

Test(validate, field_names)
{
	cr_assert_str_eq(emb_validate_field_name("last_hidden_state"),
	                 "token_embeddings");
	cr_assert_str_eq(emb_validate_field_name("embedding"), "embedding");
	cr_assert_null(emb_validate_field_name("embeddings"));
	cr_assert(strstr(emb_validate_field_list(), "sparse"));
}

/* ------------------------------------------------------------------ */
/* manifest errors: exit 3 material, with the line and the key         */

static int manifest_err(const char *yaml, emb_err *err)
{
	const char *tmp = getenv("EMB_TMP");
	char path[4096];
	int fd, rc;
	emb_manifest_opts o = { 0 };
	FILE *devnull = fopen("/dev/null", "w");

	snprintf(path, sizeof(path), "%s/test_manifest_XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "%s", path);
	cr_assert_eq(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	o.out = devnull;
	rc = emb_manifest_run(path, &o, err);
	unlink(path);
	fclose(devnull);
	return rc;
}

Test(manifest, malformed)
{
	emb_err err;

	cr_assert_eq(manifest_err("cases: [\n", &err), -1);
	cr_assert(strstr(err.msg, "invalid YAML"), "%s", err.msg);
	cr_assert_eq(manifest_err("foo: 1\n", &err), -1);
	cr_assert(strstr(err.msg, ":1: key 'foo'"), "%s", err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    golden: /dev/null\n"
	                          "    command: emb-pool\n"
	                          "    tolerence: {embedding: 1}\n", &err), -1);
	cr_assert(strstr(err.msg, ":6: case 'a': key 'tolerence': unknown key"),
	          "%s", err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    golden: /dev/null\n"
	                          "    command: emb-pool\n"
	                          "    tolerance: {embedding: fast}\n", &err),
	             -1);
	cr_assert(strstr(err.msg, ":6: case 'a': key 'tolerance'"), "%s",
	          err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    golden: /dev/null\n"
	                          "    command: sh -c 'rm -rf /'\n", &err), -1);
	cr_assert(strstr(err.msg, "key 'command'"), "%s", err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    golden: /dev/null\n"
	                          "    command: emb-pool | ls\n", &err), -1);
	cr_assert(strstr(err.msg, "'ls' is not an emb-* command"), "%s",
	          err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /nonexistent\n"
	                          "    golden: /dev/null\n"
	                          "    command: emb-pool\n", &err), -1);
	cr_assert(strstr(err.msg, ":3: case 'a': key 'input': /nonexistent"),
	          "%s", err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    command: emb-pool\n", &err), -1);
	cr_assert(strstr(err.msg, "'golden'"), "%s", err.msg);
	cr_assert_eq(manifest_err("cases:\n  - name: a\n    input: /dev/null\n"
	                          "    golden_case: b\n"
	                          "    command: emb-pool\n", &err), -1);
	cr_assert(strstr(err.msg, "earlier case"), "%s", err.msg);
}

Test(validate, many_records_in_reverse_order)
{
	/* enough pending records to grow the join tables several times */
	enum { N = 3000 };
	emb_validate *v = mk(NULL);
	emb_record *rec = emb_record_new();
	emb_vrecords r;
	emb_err err;
	char line[128];

	for (int i = 0; i < N; i++) {
		int n = snprintf(line, sizeof(line), "{\"id\":\"k%d\","
		                 "\"embedding\":[%d,1]}", i, i % 7);

		cr_assert_eq(emb_record_parse(rec, line, (size_t)n, &err), 0);
		emb_validate_add(v, EMB_SIDE_GOLDEN, rec, NULL);
	}
	for (int i = N - 1; i >= 0; i--) {
		int n = snprintf(line, sizeof(line), "{\"id\":\"k%d\","
		                 "\"embedding\":[%d,%s]}", i, i % 7,
		                 i == 1234 ? "1.5" : "1");

		cr_assert_eq(emb_record_parse(rec, line, (size_t)n, &err), 0);
		emb_validate_add(v, EMB_SIDE_INPUT, rec, NULL);
	}
	cr_assert_eq(emb_validate_finish(v, NULL), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.joined, N);
	cr_assert_eq(r.missing_input + r.missing_golden, 0);
	cr_assert_eq(stat_of(v, "embedding").mismatches, 1);
	cr_assert_str_eq(stat_of(v, "embedding").max_abs_id, "id \"k1234\"");
	emb_validate_free(v);
	emb_record_free(rec);
}

Test(validate, error_records_fail)
{
	const char *g[] = { "{\"id\":1,\"embedding\":[1]}",
	                    "{\"id\":2,\"embedding\":[1]}", NULL };
	const char *x[] = { "{\"id\":1,\"embedding\":[1]}",
	                    "{\"id\":2,\"error\":\"missing field 'text'\"}",
	                    NULL };
	emb_validate *v = mk(NULL);
	emb_vrecords r;

	cr_assert_eq(run(v, g, x), 1);
	emb_validate_records(v, &r);
	cr_assert_eq(r.errors, 1);
	cr_assert_eq(r.joined, 2);
	cr_assert_eq(stat_of(v, "embedding").golden_only, 1);
	emb_validate_free(v);
}
