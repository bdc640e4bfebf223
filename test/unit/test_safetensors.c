/*
 * test_safetensors.c - safetensors reader (valid files, every kind of
 * corruption, F16/BF16 widening).  Scratch files go to
 * $EMB_TOP/test/tmp/unit-st/<test>.
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

/* raw file: 8-byte length HLEN, then HDR bytes, then DATA */
static void put_raw(const char *path, uint64_t hlen, const char *hdr,
                    size_t hdr_n, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	unsigned char len[8];

	cr_assert_not_null(f, "cannot write %s", path);
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(hlen >> (8 * i));
	fwrite(len, 1, 8, f);
	fwrite(hdr, 1, hdr_n, f);
	if (n)
		fwrite(data, 1, n, f);
	cr_assert_eq(fclose(f), 0);
}

static void put_st(const char *path, const char *hdr, const void *data, size_t n)
{
	put_raw(path, strlen(hdr), hdr, strlen(hdr), data, n);
}

/* open must fail with a one-line message naming NAME and holding WANT */
static void expect_fail(const char *path, const char *name, const char *want)
{
	emb_safetensors *st = (emb_safetensors *)&st;
	emb_err err = {{0}};

	cr_assert_eq(emb_safetensors_open(&st, path, &err), -1,
	             "%s opened, want error '%s'", path, want);
	cr_assert_null(st);
	cr_assert_not_null(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
	cr_assert_not_null(strstr(err.msg, name), "error '%s' does not name %s",
	                   err.msg, name);
	cr_assert_null(strchr(err.msg, '\n'), "error has a newline: %s", err.msg);
}

static emb_safetensors *open_ok(const char *path)
{
	emb_safetensors *st = NULL;
	emb_err err = {{0}};

	cr_assert_eq(emb_safetensors_open(&st, path, &err), 0, "%s: %s", path, err.msg);
	cr_assert_not_null(st);
	return st;
}

/* ------------------------------------------------------------------ */
/* valid files                                                         */

Test(safetensors, dtype_names_and_sizes)
{
	cr_assert_str_eq(emb_dtype_name(EMB_DT_F32), "F32");
	cr_assert_str_eq(emb_dtype_name(EMB_DT_BF16), "BF16");
	cr_assert_str_eq(emb_dtype_name(EMB_DT_BOOL), "BOOL");
	cr_assert_null(emb_dtype_name(EMB_DT_COUNT));
	cr_assert_null(emb_dtype_name((emb_dtype)-1));
	cr_assert_eq(emb_dtype_size(EMB_DT_F32), 4);
	cr_assert_eq(emb_dtype_size(EMB_DT_F16), 2);
	cr_assert_eq(emb_dtype_size(EMB_DT_BF16), 2);
	cr_assert_eq(emb_dtype_size(EMB_DT_F64), 8);
	cr_assert_eq(emb_dtype_size(EMB_DT_I64), 8);
	cr_assert_eq(emb_dtype_size(EMB_DT_U8), 1);
	cr_assert_eq(emb_dtype_size(EMB_DT_COUNT), 0);
}

Test(safetensors, single_file)
{
	const char *d = tu_scratch("single");
	const char *p = tu_pathf(d, "w.safetensors");
	/* data: b (BF16 [2]) at 0, a (F32 [2,3]) at 4, c (F16 [3]) at 28,
	 * e (I64 [0]) empty at 34; header keys deliberately out of order */
	unsigned char data[40] = {0};
	float a[6] = {1, -2, 0.5f, 3e-8f, -1e30f, 7};
	uint16_t b[2] = {0x3f80, 0xc040}; /* 1, -3 */
	uint16_t c[3] = {0x3c00, 0x0001, 0xfc00}; /* 1, 2^-24, -inf */
	const char *hdr =
		"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[4,28]},"
		"\"__metadata__\":{\"format\":\"pt\",\"x\":\"y\"},"
		"\"c\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[28,34]},"
		"\"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[34,34]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}  ";
	emb_safetensors *st;
	const emb_tensor *t;
	float out[6];
	emb_err err;

	memcpy(data, b, 4);
	memcpy(data + 4, a, 24);
	memcpy(data + 28, c, 6);
	put_st(p, hdr, data, 34);
	st = open_ok(p);
	cr_assert_eq(emb_safetensors_count(st), 4);
	/* file order = data offset order */
	cr_assert_str_eq(emb_safetensors_at(st, 0)->name, "b");
	cr_assert_str_eq(emb_safetensors_at(st, 1)->name, "a");
	cr_assert_str_eq(emb_safetensors_at(st, 2)->name, "c");
	cr_assert_str_eq(emb_safetensors_at(st, 3)->name, "e");
	cr_assert_null(emb_safetensors_at(st, 4));
	cr_assert_null(emb_safetensors_find(st, "__metadata__"));
	cr_assert_null(emb_safetensors_find(st, "zz"));
	cr_assert_str_eq(emb_safetensors_meta(st, "format"), "pt");
	cr_assert_str_eq(emb_safetensors_meta(st, "x"), "y");
	cr_assert_null(emb_safetensors_meta(st, "nope"));

	t = emb_safetensors_find(st, "a");
	cr_assert_not_null(t);
	cr_assert_eq(t->dtype, EMB_DT_F32);
	cr_assert_eq(t->ndim, 2);
	cr_assert_eq(t->shape[0], 2);
	cr_assert_eq(t->shape[1], 3);
	cr_assert_eq(t->numel, 6);
	cr_assert_eq(t->nbytes, 24);
	cr_assert_str_eq(t->file, p);
	cr_assert_eq(memcmp(t->data, a, 24), 0);
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), 0);
	cr_assert_eq(memcmp(out, a, 24), 0);

	t = emb_safetensors_find(st, "b");
	cr_assert_eq(t->dtype, EMB_DT_BF16);
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), 0);
	cr_assert_eq(out[0], 1.0f);
	cr_assert_eq(out[1], -3.0f);

	t = emb_safetensors_find(st, "c");
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), 0);
	cr_assert_eq(out[0], 1.0f);
	cr_assert_eq(out[1], ldexpf(1, -24));
	cr_assert(isinf(out[2]) && out[2] < 0);

	t = emb_safetensors_find(st, "e");
	cr_assert_eq(t->numel, 0);
	cr_assert_eq(t->nbytes, 0);
	cr_assert_eq(t->dtype, EMB_DT_I64);
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), -1, "I64 is not a float type");
	cr_assert_not_null(strstr(err.msg, "'e'"), "%s", err.msg);
	emb_safetensors_free(st);
}

Test(safetensors, scalar_f64_and_metadata_free)
{
	const char *d = tu_scratch("scalar");
	const char *p = tu_pathf(d, "s.safetensors");
	double v = -0.1;
	emb_safetensors *st;
	const emb_tensor *t;
	float out;
	emb_err err;

	put_st(p, "{\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}", &v, 8);
	st = open_ok(p);
	t = emb_safetensors_find(st, "s");
	cr_assert_eq(t->ndim, 0);
	cr_assert_eq(t->numel, 1);
	cr_assert_eq(emb_tensor_to_f32(&out, t, &err), 0);
	cr_assert_eq(out, (float)-0.1);
	cr_assert_null(emb_safetensors_meta(st, "format"));
	emb_safetensors_free(st);
}

Test(safetensors, directory_single)
{
	const char *d = tu_scratch("dir1");
	float x[4] = {1, 2, 3, 4};
	emb_safetensors *st;

	put_st(tu_pathf(d, "model.safetensors"),
	       "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", x, 16);
	st = open_ok(d);
	cr_assert_eq(emb_safetensors_count(st), 1);
	cr_assert_not_null(strstr(emb_safetensors_find(st, "w")->file, "model.safetensors"));
	emb_safetensors_free(st);
}

static void make_shards(const char *d)
{
	float x[4] = {1, 2, 3, 4}, y[2] = {5, 6};

	put_st(tu_pathf(d, "model-00001-of-00002.safetensors"),
	       "{\"l0.w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}",
	       x, 16);
	put_st(tu_pathf(d, "model-00002-of-00002.safetensors"),
	       "{\"l1.w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	       "\"__metadata__\":{\"format\":\"pt\"}}", y, 8);
}

Test(safetensors, sharded)
{
	const char *d = tu_scratch("sharded");
	emb_safetensors *st;
	const emb_tensor *t;
	float out[4];
	emb_err err;

	make_shards(d);
	tu_put_text(tu_pathf(d, "model.safetensors.index.json"),
	         "{\"metadata\":{\"total_size\":24},\"weight_map\":{"
	         "\"l1.w\":\"model-00002-of-00002.safetensors\","
	         "\"l0.w\":\"model-00001-of-00002.safetensors\"}}");
	st = open_ok(d);
	cr_assert_eq(emb_safetensors_count(st), 2);
	cr_assert_str_eq(emb_safetensors_at(st, 0)->name, "l0.w");
	cr_assert_str_eq(emb_safetensors_at(st, 1)->name, "l1.w");
	t = emb_safetensors_find(st, "l1.w");
	cr_assert_not_null(strstr(t->file, "model-00002-of-00002.safetensors"));
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), 0);
	cr_assert_eq(out[0], 5.0f);
	cr_assert_eq(out[1], 6.0f);
	t = emb_safetensors_find(st, "l0.w");
	cr_assert_not_null(strstr(t->file, "model-00001-of-00002.safetensors"));
	cr_assert_eq(emb_tensor_to_f32(out, t, &err), 0);
	cr_assert_eq(out[3], 4.0f);
	cr_assert_str_eq(emb_safetensors_meta(st, "format"), "pt");
	emb_safetensors_free(st);
	/* the index file itself is a valid operand too */
	st = open_ok(tu_pathf(d, "model.safetensors.index.json"));
	cr_assert_eq(emb_safetensors_count(st), 2);
	emb_safetensors_free(st);
}

/* ------------------------------------------------------------------ */
/* corruption: each gives its own one-line message                     */

Test(safetensors, missing_file)
{
	const char *d = tu_scratch("missing");

	expect_fail(tu_pathf(d, "nope.safetensors"), "nope.safetensors",
	            "No such file");
	expect_fail(d, d, "no model.safetensors or model.safetensors.index.json");
	/* a dangling link (a cache snapshot whose blob is gone) says so */
	cr_assert_eq(symlink("../blobs/gone", tu_pathf(d, "model.safetensors")), 0);
	expect_fail(d, "model.safetensors", "No such file");
}

Test(safetensors, shorter_than_length_field)
{
	const char *d = tu_scratch("short");
	const char *p = tu_pathf(d, "model.safetensors");
	FILE *f = fopen(p, "wb");

	fwrite("\x10\0\0", 1, 3, f);
	fclose(f);
	expect_fail(p, "model.safetensors", "file is truncated");
}

Test(safetensors, header_length_beyond_file)
{
	const char *d = tu_scratch("hlen");
	const char *p = tu_pathf(d, "model.safetensors");

	put_raw(p, 1226, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors",
	            "file is truncated or not a safetensors file (its header length field exceeds the file's 10 bytes)");
}

Test(safetensors, header_length_insane)
{
	const char *d = tu_scratch("hhuge");
	const char *p = tu_pathf(d, "model.safetensors");

	put_raw(p, (uint64_t)1 << 40, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "larger than 100 MiB");
	put_raw(p, UINT64_MAX, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "larger than 100 MiB");
}

/* ------------------------------------------------------------------ */
/* bad headers: each row is a file of one header and LEN zero bytes of
 * data that open must refuse with a one-line message naming the file
 * and holding WANT                                                    */

static const struct bad_header {
	const char *what, *hdr;
	size_t len;
	const char *want;
} bad_headers[] = {
	{ "offsets out of range",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,999999]}}",
	  4096, "tensor 'x': data_offsets [0, 999999] outside the data section (4096 bytes)" },
	{ "header not json",
	  "{\"x\": {\"dtype\": ",
	  0, "header is not valid JSON" },
	{ "header not json",
	  "{\"x\":1,\"x\":2}",
	  0, "header is not valid JSON" },
	{ "header not object",
	  "[1, 2, 3]",
	  0, "header is not a JSON object" },
	{ "header not object",
	  "{\"x\":[1]}",
	  0, "tensor 'x': entry is not a JSON object" },
	{ "unknown dtype",
	  "{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[0,8]}}",
	  8, "tensor 'x': unknown dtype 'F8_E4M3'" },
	{ "unknown dtype",
	  "{\"x\":{\"dtype\":7,\"shape\":[8],\"data_offsets\":[0,8]}}",
	  8, "tensor 'x': field 'dtype' must be a string" },
	{ "unknown dtype",
	  "{\"x\":{\"shape\":[8],\"data_offsets\":[0,8]}}",
	  8, "field 'dtype'" },
	{ "bad shapes",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
	  8, "tensor 'x': field 'shape' must be an array of non-negative integers" },
	{ "bad shapes",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}",
	  8, "field 'shape'" },
	{ "bad shapes",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}",
	  8, "field 'shape'" },
	{ "bad shapes",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}",
	  8, "9 dimensions" },
	{ "bad shapes",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}",
	  8, "too big integer" },
	{ "shape product overflow",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}",
	  8, "tensor 'x': shape product overflows" },
	{ "shape product overflow",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}",
	  8, "tensor 'x': shape product overflows" },
	{ "offsets out of range",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[9223372036854775799,9223372036854775807]}}",
	  16, "tensor 'x': data_offsets [9223372036854775799, 9223372036854775807] outside the data section" },
	{ "offsets out of range",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
	  16, "end before begin" },
	{ "offsets out of range",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
	  16, "field 'data_offsets'" },
	{ "offsets out of range",
	  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}",
	  16, "field 'data_offsets'" },
	{ "overlapping",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,28]}}",
	  32, "tensor 'b': data_offsets [12, 28] overlap tensor 'a'" },
	{ "overlapping",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
	  32, "overlap tensor" },
	{ "overlapping",
	  "{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
	  32, "overlap tensor 'a'" },
	{ "nbytes mismatch",
	  "{\"w\":{\"dtype\":\"F16\",\"shape\":[3,4],\"data_offsets\":[0,48]}}",
	  64, "tensor 'w': data_offsets [0, 48] hold 48 bytes, but F16 [3,4] needs 24" },
	{ "bad metadata",
	  "{\"__metadata__\":{\"n\":1},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	  8, "field '__metadata__' must be an object of strings" },
	{ "bad metadata",
	  "{\"__metadata__\":[],\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	  8, "'__metadata__'" },
	{ "control chars in name",
	  "{\"a\\nb\":{\"dtype\":\"Q\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	  8, "tensor 'a?b': unknown dtype 'Q'" },
};

Test(safetensors, bad_headers)
{
	const char *d = tu_scratch("badhdr");
	const char *p = tu_pathf(d, "model.safetensors");
	static const char data[4096];

	for (size_t i = 0; i < sizeof(bad_headers) / sizeof(bad_headers[0]); i++) {
		const struct bad_header *b = &bad_headers[i];
		cr_assert(b->len <= sizeof(data));
		put_st(p, b->hdr, b->len ? data : NULL, b->len);
		expect_fail(p, "model.safetensors", b->want);
	}
}

/* headers at the edges that are fine: a zero dimension makes any shape
 * product fine; touching ranges and a hole between tensors */
static const struct good_header {
	const char *hdr;
	size_t len;
} good_headers[] = {
	{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[0,9223372036854775807],\"data_offsets\":[0,0]}}",
	  0 },
	{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}",
	  32 },
};

Test(safetensors, good_edge_headers)
{
	const char *d = tu_scratch("goodhdr");
	const char *p = tu_pathf(d, "model.safetensors");
	static const char data[64];

	for (size_t i = 0; i < sizeof(good_headers) / sizeof(good_headers[0]); i++) {
		put_st(p, good_headers[i].hdr, good_headers[i].len ? data : NULL,
		       good_headers[i].len);
		emb_safetensors_free(open_ok(p));
	}
}

Test(safetensors, header_not_utf8)
{
	const char *d = tu_scratch("notutf8");
	const char *p = tu_pathf(d, "model.safetensors");

	put_raw(p, 2, "\xff\xfe", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "header is not a JSON object");
}

Test(safetensors, truncated_data)
{
	const char *d = tu_scratch("truncdata");
	const char *p = tu_pathf(d, "model.safetensors");
	char data[40] = {0};
	const char *hdr =
		"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
		"\"b\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[16,40]}}";
	char want[128];

	/* a complete file, then cut short in the middle of b */
	put_st(p, hdr, data, 40);
	emb_safetensors_free(open_ok(p));
	put_st(p, hdr, data, 30);
	snprintf(want, sizeof(want), "file is truncated (header says %zu bytes, "
	         "file has %zu)", 8 + strlen(hdr) + 40, 8 + strlen(hdr) + 30);
	expect_fail(p, "model.safetensors", want);
}

Test(safetensors, sharded_errors)
{
	const char *d = tu_scratch("sharderr");
	const char *ix = tu_pathf(d, "model.safetensors.index.json");

	make_shards(d);
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l1.w\":\"model-00009-of-00002.safetensors\"}}");
	expect_fail(d, "model-00009-of-00002.safetensors", "No such file");
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l2.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json",
	            "tensor 'l2.w' is missing from shard model-00002-of-00002.safetensors");
	/* listed in the wrong shard */
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00002-of-00002.safetensors\","
	         "\"l1.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json", "tensor 'l0.w' is missing from shard");
	tu_put_text(ix, "{\"weight_map\":[]}");
	expect_fail(d, "model.safetensors.index.json", "field 'weight_map'");
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"../model-00001-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json", "relative file name");
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"/etc/passwd\"}}");
	expect_fail(d, "model.safetensors.index.json", "relative file name");
	tu_put_text(ix, "{\"weight_map\": {");
	expect_fail(d, "model.safetensors.index.json", "not valid JSON");
	/* a broken shard names the shard */
	put_raw(tu_pathf(d, "model-00002-of-00002.safetensors"), 500, "{}", 2, NULL, 0);
	tu_put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l1.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model-00002-of-00002.safetensors", "file is truncated");
}

Test(safetensors, duplicate_across_shards)
{
	const char *d = tu_scratch("dupshard");
	float x[4] = {0};

	make_shards(d);
	put_st(tu_pathf(d, "model-00002-of-00002.safetensors"),
	       "{\"l0.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", x, 16);
	tu_put_text(tu_pathf(d, "model.safetensors.index.json"),
	         "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l1.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json", "tensor 'l0.w' appears in both");
}

/* ------------------------------------------------------------------ */
/* widening                                                            */

/* reference value of IEEE half bits h, by arithmetic */
static double half_ref(unsigned h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	double v;

	if (e == 31)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, e - 25);
	return s ? -v : v;
}

/* every 16-bit pattern of DTYPE widened by emb_tensor_to_f32 into OUT */
static void widen_all(float out[65536], emb_dtype dtype, const char *name)
{
	static uint16_t h[65536];
	emb_tensor t = {0};
	emb_err err;

	for (unsigned i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	t.name = name;
	t.dtype = dtype;
	t.ndim = 1;
	t.shape[0] = t.numel = 65536;
	t.nbytes = sizeof(h);
	t.data = h;
	cr_assert_eq(emb_tensor_to_f32(out, &t, &err), 0, "%s", err.msg);
}

Test(safetensors, f16_widening_exhaustive)
{
	static float out[65536];

	widen_all(out, EMB_DT_F16, "h");
	for (unsigned i = 0; i < 65536; i++) {
		double r = half_ref(i);
		if (isnan(r)) {
			uint32_t u;
			memcpy(&u, &out[i], 4);
			cr_assert(isnan(out[i]), "0x%04x -> %g, want nan", i, out[i]);
			/* payload and sign kept */
			cr_assert_eq(u & 0x3ff, 0, "0x%04x", i);
			cr_assert_eq((u >> 13) & 0x3ff, i & 0x3ff, "0x%04x payload", i);
			cr_assert_eq(u >> 31, i >> 15, "0x%04x sign", i);
		} else {
			cr_assert_eq((double)out[i], r, "0x%04x -> %.9g, want %.9g", i,
			             out[i], r);
			cr_assert_eq(!!signbit(out[i]), i >> 15, "0x%04x sign", i);
		}
	}
	/* edge values by name */
	cr_assert_eq(out[0x0001], ldexpf(1, -24));          /* smallest subnormal */
	cr_assert_eq(out[0x03ff], ldexpf(1023, -24));       /* largest subnormal */
	cr_assert_eq(out[0x0400], ldexpf(1, -14));          /* smallest normal */
	cr_assert_eq(out[0x7bff], 65504.0f);                /* largest finite */
	cr_assert_eq(out[0x3555], 0.333251953125f);
	cr_assert(isinf(out[0x7c00]) && out[0x7c00] > 0);
	cr_assert(signbit(out[0x8000]) && out[0x8000] == 0);
}

Test(safetensors, bf16_widening_exhaustive)
{
	static float out[65536];

	widen_all(out, EMB_DT_BF16, "b");
	for (unsigned i = 0; i < 65536; i++) {
		uint32_t u;
		memcpy(&u, &out[i], 4);
		cr_assert_eq(u, (uint32_t)i << 16, "0x%04x -> 0x%08x", i, u);
	}
	cr_assert_eq(out[0x3f80], 1.0f);
	cr_assert_eq(out[0xc2f7], -123.5f);
	cr_assert(isinf(out[0x7f80]));
	cr_assert(isnan(out[0x7fc0]));
	cr_assert_eq(out[0x0001], ldexpf(1, -133));          /* bf16 subnormal */
}

Test(safetensors, f32_unaligned)
{
	unsigned char buf[13];
	float v[3] = {1.5f, -2.25f, 1e-40f}, out[3];
	emb_tensor t = {0};
	emb_err err;

	memcpy(buf + 1, v, 12);
	t.name = "u";
	t.dtype = EMB_DT_F32;
	t.ndim = 1;
	t.shape[0] = t.numel = 3;
	t.nbytes = 12;
	t.data = buf + 1;
	cr_assert_eq(emb_tensor_to_f32(out, &t, &err), 0);
	cr_assert_eq(memcmp(out, v, 12), 0);
}

/* ------------------------------------------------------------------ */
/* robustness: every truncation and many random header mutations       */

static const char robust_hdr[] =
	"{\"__metadata__\":{\"format\":\"pt\"},"
	"\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
	"\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
	"\"c\":{\"dtype\":\"F16\",\"shape\":[1,1,2],\"data_offsets\":[32,36]}}";

static size_t robust_file(unsigned char *buf)
{
	size_t h = strlen(robust_hdr);

	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(buf + 8, robust_hdr, h);
	for (int i = 0; i < 36; i++)
		buf[8 + h + i] = (unsigned char)(i * 37 + 1);
	return 8 + h + 36;
}

static void write_bytes(const char *path, const unsigned char *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	if (n)
		fwrite(b, 1, n, f);
	cr_assert_eq(fclose(f), 0);
}

Test(safetensors, every_truncation_fails)
{
	const char *d = tu_scratch("trunc-all");
	const char *p = tu_pathf(d, "model.safetensors");
	unsigned char buf[512];
	size_t n = robust_file(buf);
	emb_safetensors *st;
	emb_err err;

	write_bytes(p, buf, n);
	st = open_ok(p);
	cr_assert_eq(emb_safetensors_count(st), 3);
	emb_safetensors_free(st);
	for (size_t k = 0; k < n; k++) {
		write_bytes(p, buf, k);
		cr_assert_eq(emb_safetensors_open(&st, p, &err), -1, "cut at %zu opened", k);
		cr_assert_null(st);
		cr_assert_neq(err.msg[0], 0);
	}
}

Test(safetensors, header_mutations_never_crash, .timeout = 60)
{
	const char *d = tu_scratch("mutate");
	const char *p = tu_pathf(d, "model.safetensors");
	unsigned char orig[512], buf[512];
	size_t n = robust_file(orig), h = strlen(robust_hdr);
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	static const char alphabet[] = "{}[],:\"0123456789-eE.x \\";
	int opened = 0, failed = 0;

	for (int it = 0; it < 1500; it++) {
		emb_safetensors *st;
		emb_err err = {{0}};
		size_t len = n;
		int muts;

		memcpy(buf, orig, n);
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		muts = 1 + (int)((rng >> 33) % 3);
		for (int m = 0; m < muts; m++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			size_t at = 8 + (size_t)((rng >> 33) % h);
			buf[at] = (unsigned char)alphabet[(rng >> 17) % (sizeof(alphabet) - 1)];
		}
		if (it % 7 == 0) {     /* sometimes also cut the data */
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			len = 8 + h + (size_t)((rng >> 33) % 37);
		}
		write_bytes(p, buf, len);
		if (emb_safetensors_open(&st, p, &err) == 0) {
			opened++;
			/* whatever opened fits in the 36-byte data section */
			for (size_t i = 0; i < emb_safetensors_count(st); i++) {
				const emb_tensor *t = emb_safetensors_at(st, i);
				float tmp[36];
				cr_assert_leq(t->nbytes, 36);
				if (t->dtype <= EMB_DT_F64)
					emb_tensor_to_f32(tmp, t, &err);
				cr_assert_eq(t->nbytes, (size_t)t->numel * emb_dtype_size(t->dtype));
			}
			emb_safetensors_free(st);
		} else {
			failed++;
			cr_assert_null(st);
			cr_assert_neq(err.msg[0], 0);
			cr_assert_null(strchr(err.msg, '\n'), "%s", err.msg);
		}
	}
	cr_assert_gt(failed, 50);
	cr_assert_gt(opened, 5, "opened %d", opened);
}

/* non-finite weights: found in every float dtype, by index, across the
 * 4096-element blocks of the scan; integer dtypes are not checked */
Test(safetensors, check_finite)
{
	static float f[10000];
	static uint16_t h[10000];
	static double d[100];
	emb_tensor t = {0};
	emb_err err;

	t.name = "w";
	t.file = "m.safetensors";
	t.ndim = 1;
	t.dtype = EMB_DT_F32;
	t.numel = t.shape[0] = 10000;
	t.data = f;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);
	f[9999] = INFINITY;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert_str_eq(err.msg, "m.safetensors: tensor 'w': element 9999 is "
	                 "infinite (weights must be finite)");
	f[5000] = NAN;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert(strstr(err.msg, "element 5000 is NaN"), "%s", err.msg);
	f[5000] = f[9999] = 0;
	/* largest finite values are fine */
	f[1] = 3.4028235e38f;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);

	t.data = h;
	t.dtype = EMB_DT_F16;
	h[4096] = 0x7bff;               /* 65504: finite */
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);
	h[4097] = 0xfc00;               /* -inf */
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert(strstr(err.msg, "element 4097 is infinite"), "%s", err.msg);
	h[4097] = 0x7e00;               /* NaN */
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert(strstr(err.msg, "element 4097 is NaN"), "%s", err.msg);
	t.dtype = EMB_DT_BF16;          /* 0x7bff, 0x7e00: finite in BF16 */
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);
	h[7] = 0x7fc0;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert(strstr(err.msg, "element 7 is NaN"), "%s", err.msg);
	t.dtype = EMB_DT_I16;           /* not a float: not checked */
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);

	t.data = d;
	t.dtype = EMB_DT_F64;
	t.numel = t.shape[0] = 100;
	d[3] = 1e300;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), 0);
	d[50] = -INFINITY;
	cr_assert_eq(emb_tensor_check_finite(&t, &err), -1);
	cr_assert(strstr(err.msg, "element 50 is infinite"), "%s", err.msg);
}

/* the vector scan of whole blocks: a non-finite value at every lane of
 * a vector, block edges, in each float dtype, with the data at an odd
 * address (safetensors offsets need not be aligned), found at its index
 * and no earlier; the largest finite values of each sign pass */
/* v's low w bytes at q, little-endian (the file's order) */
static void put_le(unsigned char *q, uint32_t v, int w)
{
	for (int b = 0; b < w; b++)
		q[b] = (unsigned char)(v >> (8 * b));
}

Test(safetensors, check_finite_every_lane)
{
	static unsigned char buf[3 * 4096 * 4 + 1];
	static const size_t pos[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 4095,
	                              4096, 4097, 8190, 8191 };
	static const struct {
		int dt, w;
		uint32_t fin, inf, nan;
	} k[] = {
		{ EMB_DT_F32, 4, 0xff7fffffu, 0xff800000u, 0x7fc00001u },
		{ EMB_DT_F16, 2, 0xfbffu, 0xfc00u, 0x7c01u },
		{ EMB_DT_BF16, 2, 0xff7fu, 0xff80u, 0x7f81u },
	};
	emb_tensor t = {0};
	emb_err err;
	char want[64];

	t.name = "w";
	t.ndim = 1;
	t.numel = t.shape[0] = 3 * 4096;
	t.data = buf + 1;
	for (size_t d = 0; d < sizeof(k) / sizeof(k[0]); d++) {
		unsigned char *p = buf + 1;
		t.dtype = k[d].dt;
		/* every element the largest finite negative value */
		for (size_t i = 0; i < 3 * 4096; i++)
			put_le(p + i * k[d].w, k[d].fin, k[d].w);
		cr_assert_eq(emb_tensor_check_finite(&t, &err), 0, "dtype %d",
		             k[d].dt);
		for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
			for (int nan = 0; nan < 2; nan++) {
				uint32_t v = nan ? k[d].nan : k[d].inf;
				unsigned char *q = p + pos[i] * k[d].w;
				put_le(q, v, k[d].w);
				cr_assert_eq(emb_tensor_check_finite(&t, &err), -1,
				             "dtype %d at %zu", k[d].dt, pos[i]);
				snprintf(want, sizeof(want), "element %zu is %s", pos[i],
				         nan ? "NaN" : "infinite");
				cr_assert(strstr(err.msg, want), "%s (want %s)", err.msg,
				          want);
				put_le(q, k[d].fin, k[d].w);
			}
	}
}

/* one row of a 2-D tensor: only that row's elements, the message naming
 * the row and the element within it */
Test(safetensors, check_row)
{
	static uint16_t h[3 * 5000];
	static double d[2 * 3];
	emb_tensor t = {0};
	emb_err err;

	t.name = "emb";
	t.file = "m.safetensors";
	t.ndim = 2;
	t.dtype = EMB_DT_BF16;
	t.shape[0] = 3;
	t.shape[1] = 5000;
	t.numel = 3 * 5000;
	t.data = h;
	h[5000 + 4500] = 0x7fc0;        /* row 1, past the first block */
	cr_assert_eq(emb_tensor_check_row(&t, 0, &err), 0);
	cr_assert_eq(emb_tensor_check_row(&t, 2, &err), 0);
	cr_assert_eq(emb_tensor_check_row(&t, 1, &err), -1);
	cr_assert_str_eq(err.msg, "m.safetensors: tensor 'emb': row 1: element "
	                 "4500 is NaN (weights must be finite)");
	h[2 * 5000] = 0xff80;           /* row 2's first: -inf */
	cr_assert_eq(emb_tensor_check_row(&t, 2, &err), -1);
	cr_assert(strstr(err.msg, "row 2: element 0 is infinite"), "%s", err.msg);

	t.data = d;
	t.dtype = EMB_DT_F64;
	t.shape[0] = 2;
	t.shape[1] = 3;
	t.numel = 6;
	d[5] = NAN;
	cr_assert_eq(emb_tensor_check_row(&t, 0, &err), 0);
	cr_assert_eq(emb_tensor_check_row(&t, 1, &err), -1);
	cr_assert(strstr(err.msg, "row 1: element 2 is NaN"), "%s", err.msg);
	t.dtype = EMB_DT_I16;           /* not a float: not checked */
	cr_assert_eq(emb_tensor_check_row(&t, 1, &err), 0);
}
