/*
 * test_safetensors.c - safetensors reader (valid files, every kind of
 * corruption, F16/BF16 widening), sentence-transformers module configs
 * (stconfig) and model resolution in the Hugging Face cache (hub).
 * Scratch files go to $EMB_TOP/test/tmp/unit-st/<test>.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tool/emb-tool.h"

static const char *top(void)
{
	const char *t = getenv("EMB_TOP");

	return t && *t ? t : ".";
}

/* a fresh scratch directory for one test (static buffer) */
static const char *scratch(const char *name)
{
	static char dir[1024];
	char cmd[2200];

	snprintf(dir, sizeof(dir), "%s/test/tmp/unit-st/%s", top(), name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	cr_assert_eq(system(cmd), 0, "cannot create %s", dir);
	return dir;
}

static char *pathf(const char *dir, const char *name)
{
	static char bufs[4][2300];
	static int k;
	char *b = bufs[k++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

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

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
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
	const char *d = scratch("single");
	const char *p = pathf(d, "w.safetensors");
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
	const char *d = scratch("scalar");
	const char *p = pathf(d, "s.safetensors");
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
	const char *d = scratch("dir1");
	float x[4] = {1, 2, 3, 4};
	emb_safetensors *st;

	put_st(pathf(d, "model.safetensors"),
	       "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", x, 16);
	st = open_ok(d);
	cr_assert_eq(emb_safetensors_count(st), 1);
	cr_assert_not_null(strstr(emb_safetensors_find(st, "w")->file, "model.safetensors"));
	emb_safetensors_free(st);
}

static void make_shards(const char *d)
{
	float x[4] = {1, 2, 3, 4}, y[2] = {5, 6};

	put_st(pathf(d, "model-00001-of-00002.safetensors"),
	       "{\"l0.w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}",
	       x, 16);
	put_st(pathf(d, "model-00002-of-00002.safetensors"),
	       "{\"l1.w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	       "\"__metadata__\":{\"format\":\"pt\"}}", y, 8);
}

Test(safetensors, sharded)
{
	const char *d = scratch("sharded");
	emb_safetensors *st;
	const emb_tensor *t;
	float out[4];
	emb_err err;

	make_shards(d);
	put_text(pathf(d, "model.safetensors.index.json"),
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
	st = open_ok(pathf(d, "model.safetensors.index.json"));
	cr_assert_eq(emb_safetensors_count(st), 2);
	emb_safetensors_free(st);
}

/* ------------------------------------------------------------------ */
/* corruption: each gives its own one-line message                     */

Test(safetensors, missing_file)
{
	const char *d = scratch("missing");

	expect_fail(pathf(d, "nope.safetensors"), "nope.safetensors",
	            "No such file");
	expect_fail(d, d, "no model.safetensors or model.safetensors.index.json");
	/* a dangling link (a cache snapshot whose blob is gone) says so */
	cr_assert_eq(symlink("../blobs/gone", pathf(d, "model.safetensors")), 0);
	expect_fail(d, "model.safetensors", "No such file");
}

Test(safetensors, shorter_than_length_field)
{
	const char *d = scratch("short");
	const char *p = pathf(d, "model.safetensors");
	FILE *f = fopen(p, "wb");

	fwrite("\x10\0\0", 1, 3, f);
	fclose(f);
	expect_fail(p, "model.safetensors", "file is truncated");
}

Test(safetensors, header_length_beyond_file)
{
	const char *d = scratch("hlen");
	const char *p = pathf(d, "model.safetensors");

	put_raw(p, 1226, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors",
	            "file is truncated (header says 1234 bytes, file has 10)");
}

Test(safetensors, header_length_insane)
{
	const char *d = scratch("hhuge");
	const char *p = pathf(d, "model.safetensors");

	put_raw(p, (uint64_t)1 << 40, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "larger than 100 MiB");
	put_raw(p, UINT64_MAX, "{}", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "larger than 100 MiB");
}

Test(safetensors, header_not_json)
{
	const char *d = scratch("notjson");
	const char *p = pathf(d, "model.safetensors");

	put_st(p, "{\"x\": {\"dtype\": ", NULL, 0);
	expect_fail(p, "model.safetensors", "header is not valid JSON");
	put_st(p, "{\"x\":1,\"x\":2}", NULL, 0);
	expect_fail(p, "model.safetensors", "header is not valid JSON");
	put_raw(p, 2, "\xff\xfe", 2, NULL, 0);
	expect_fail(p, "model.safetensors", "header is not a JSON object");
}

Test(safetensors, header_not_object)
{
	const char *d = scratch("notobj");
	const char *p = pathf(d, "model.safetensors");

	put_st(p, "[1, 2, 3]", NULL, 0);
	expect_fail(p, "model.safetensors", "header is not a JSON object");
	put_st(p, "{\"x\":[1]}", NULL, 0);
	expect_fail(p, "model.safetensors", "tensor 'x': entry is not a JSON object");
}

Test(safetensors, unknown_dtype)
{
	const char *d = scratch("dtype");
	const char *p = pathf(d, "model.safetensors");
	char data[8] = {0};

	put_st(p, "{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[0,8]}}",
	       data, 8);
	expect_fail(p, "model.safetensors", "tensor 'x': unknown dtype 'F8_E4M3'");
	put_st(p, "{\"x\":{\"dtype\":7,\"shape\":[8],\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "tensor 'x': field 'dtype' must be a string");
	put_st(p, "{\"x\":{\"shape\":[8],\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "field 'dtype'");
}

Test(safetensors, bad_shapes)
{
	const char *d = scratch("shape");
	const char *p = pathf(d, "model.safetensors");
	char data[8] = {0};

	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
	       data, 8);
	expect_fail(p, "model.safetensors", "tensor 'x': field 'shape' must be an array "
	            "of non-negative integers");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}",
	       data, 8);
	expect_fail(p, "model.safetensors", "field 'shape'");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}",
	       data, 8);
	expect_fail(p, "model.safetensors", "field 'shape'");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
	       "\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "9 dimensions");
	/* beyond int64: the JSON parser refuses it */
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],"
	       "\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "too big integer");
}

Test(safetensors, shape_product_overflow)
{
	const char *d = scratch("overflow");
	const char *p = pathf(d, "model.safetensors");
	char data[8] = {0};

	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
	       "\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "tensor 'x': shape product overflows");
	/* numel fits in int64 but numel * 4 bytes does not */
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
	       "\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "tensor 'x': shape product overflows");
	/* a zero dimension makes any product fine */
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[0,9223372036854775807],"
	       "\"data_offsets\":[0,0]}}", NULL, 0);
	emb_safetensors_free(open_ok(p));
}

Test(safetensors, offsets_out_of_range)
{
	const char *d = scratch("range");
	const char *p = pathf(d, "model.safetensors");
	char data[4096] = {0};

	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,999999]}}",
	       data, sizeof(data));
	expect_fail(p, "model.safetensors", "tensor 'x': data_offsets [0, 999999] "
	            "outside the data section (4096 bytes)");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
	       "\"data_offsets\":[9223372036854775799,9223372036854775807]}}",
	       data, 16);
	expect_fail(p, "model.safetensors", "tensor 'x': data_offsets "
	            "[9223372036854775799, 9223372036854775807] outside the data section");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
	       data, 16);
	expect_fail(p, "model.safetensors", "end before begin");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
	       data, 16);
	expect_fail(p, "model.safetensors", "field 'data_offsets'");
	put_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}",
	       data, 16);
	expect_fail(p, "model.safetensors", "field 'data_offsets'");
}

Test(safetensors, truncated_data)
{
	const char *d = scratch("truncdata");
	const char *p = pathf(d, "model.safetensors");
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

Test(safetensors, overlapping)
{
	const char *d = scratch("overlap");
	const char *p = pathf(d, "model.safetensors");
	char data[32] = {0};

	put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
	       "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,28]}}",
	       data, 32);
	expect_fail(p, "model.safetensors", "tensor 'b': data_offsets [12, 28] overlap "
	            "tensor 'a'");
	/* the same range twice */
	put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
	       "\"b\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
	       data, 32);
	expect_fail(p, "model.safetensors", "overlap tensor");
	/* one inside another */
	put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]},"
	       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
	       data, 32);
	expect_fail(p, "model.safetensors", "overlap tensor 'a'");
	/* touching ranges and a hole are fine */
	put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
	       "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}",
	       data, 32);
	emb_safetensors_free(open_ok(p));
}

Test(safetensors, nbytes_mismatch)
{
	const char *d = scratch("nbytes");
	const char *p = pathf(d, "model.safetensors");
	char data[64] = {0};

	put_st(p, "{\"w\":{\"dtype\":\"F16\",\"shape\":[3,4],\"data_offsets\":[0,48]}}",
	       data, 64);
	expect_fail(p, "model.safetensors", "tensor 'w': data_offsets [0, 48] hold 48 "
	            "bytes, but F16 [3,4] needs 24");
}

Test(safetensors, bad_metadata)
{
	const char *d = scratch("meta");
	const char *p = pathf(d, "model.safetensors");
	char data[8] = {0};

	put_st(p, "{\"__metadata__\":{\"n\":1},"
	       "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "field '__metadata__' must be an object "
	            "of strings");
	put_st(p, "{\"__metadata__\":[],"
	       "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data, 8);
	expect_fail(p, "model.safetensors", "'__metadata__'");
}

Test(safetensors, control_chars_in_name)
{
	const char *d = scratch("ctrl");
	const char *p = pathf(d, "model.safetensors");
	char data[8] = {0};

	put_st(p, "{\"a\\nb\":{\"dtype\":\"Q\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	       data, 8);
	expect_fail(p, "model.safetensors", "tensor 'a?b': unknown dtype 'Q'");
}

Test(safetensors, sharded_errors)
{
	const char *d = scratch("sharderr");
	const char *ix = pathf(d, "model.safetensors.index.json");

	make_shards(d);
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l1.w\":\"model-00009-of-00002.safetensors\"}}");
	expect_fail(d, "model-00009-of-00002.safetensors", "No such file");
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l2.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json",
	            "tensor 'l2.w' is missing from shard model-00002-of-00002.safetensors");
	/* listed in the wrong shard */
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00002-of-00002.safetensors\","
	         "\"l1.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json", "tensor 'l0.w' is missing from shard");
	put_text(ix, "{\"weight_map\":[]}");
	expect_fail(d, "model.safetensors.index.json", "field 'weight_map'");
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"../model-00001-of-00002.safetensors\"}}");
	expect_fail(d, "model.safetensors.index.json", "relative file name");
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"/etc/passwd\"}}");
	expect_fail(d, "model.safetensors.index.json", "relative file name");
	put_text(ix, "{\"weight_map\": {");
	expect_fail(d, "model.safetensors.index.json", "not valid JSON");
	/* a broken shard names the shard */
	put_raw(pathf(d, "model-00002-of-00002.safetensors"), 500, "{}", 2, NULL, 0);
	put_text(ix, "{\"weight_map\":{\"l0.w\":\"model-00001-of-00002.safetensors\","
	         "\"l1.w\":\"model-00002-of-00002.safetensors\"}}");
	expect_fail(d, "model-00002-of-00002.safetensors", "file is truncated");
}

Test(safetensors, duplicate_across_shards)
{
	const char *d = scratch("dupshard");
	float x[4] = {0};

	make_shards(d);
	put_st(pathf(d, "model-00002-of-00002.safetensors"),
	       "{\"l0.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", x, 16);
	put_text(pathf(d, "model.safetensors.index.json"),
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

Test(safetensors, f16_widening_exhaustive)
{
	static uint16_t h[65536];
	static float out[65536];
	emb_tensor t = {0};
	emb_err err;

	for (unsigned i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	t.name = "h";
	t.dtype = EMB_DT_F16;
	t.ndim = 1;
	t.shape[0] = t.numel = 65536;
	t.nbytes = sizeof(h);
	t.data = h;
	cr_assert_eq(emb_tensor_to_f32(out, &t, &err), 0);
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
	static uint16_t h[65536];
	static float out[65536];
	emb_tensor t = {0};
	emb_err err;

	for (unsigned i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	t.name = "b";
	t.dtype = EMB_DT_BF16;
	t.ndim = 1;
	t.shape[0] = t.numel = 65536;
	t.nbytes = sizeof(h);
	t.data = h;
	cr_assert_eq(emb_tensor_to_f32(out, &t, &err), 0);
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
/* stconfig: sentence-transformers modules                             */

static char *model_dir(const char *name)
{
	static char b[1024];

	snprintf(b, sizeof(b), "%s/test/data/models/%s", top(), name);
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
	st_ok(&c, scratch("st-empty"));
	cr_assert_eq(c.pool_modes, 0);
	emb_st_config_release(&c);
}

static const char *st_dir(const char *name, const char *modules,
                          const char *pool_path, const char *pool)
{
	const char *d = scratch(name);

	if (modules)
		put_text(pathf(d, "modules.json"), modules);
	if (pool) {
		char sub[1200];
		snprintf(sub, sizeof(sub), "%s/%s", d, pool_path);
		mkdir(sub, 0777);
		put_text(pathf(sub, "config.json"), pool);
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
	const char *d = scratch("st-prompts");

	put_text(pathf(d, "sentence_bert_config.json"),
	         "{\"max_seq_length\": 77, \"do_lower_case\": true}");
	put_text(pathf(d, "config_sentence_transformers.json"),
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
	put_text(pathf(d, "sentence_bert_config.json"), "{\"max_seq_length\": null}");
	put_text(pathf(d, "config_sentence_transformers.json"),
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

	d = scratch("st-bad13");
	put_text(pathf(d, "sentence_bert_config.json"), "{\"max_seq_length\": \"256\"}");
	st_fail(d, "sentence_bert_config.json", "field 'max_seq_length' must be a "
	        "positive integer");
	put_text(pathf(d, "sentence_bert_config.json"), "{\"do_lower_case\": 1}");
	st_fail(d, "sentence_bert_config.json", "field 'do_lower_case'");
	put_text(pathf(d, "sentence_bert_config.json"), "[]");
	st_fail(d, "sentence_bert_config.json", "not a JSON object");

	d = scratch("st-bad14");
	put_text(pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": {\"query\": 3}}");
	st_fail(d, "config_sentence_transformers.json", "field 'prompts.query' must be "
	        "a string");
	put_text(pathf(d, "config_sentence_transformers.json"),
	         "{\"prompts\": {\"query\": \"q: \"}, \"default_prompt_name\": \"doc\"}");
	st_fail(d, "config_sentence_transformers.json", "'doc' is not in 'prompts'");
	put_text(pathf(d, "config_sentence_transformers.json"), "{\"prompts\": [\"q\"]}");
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

/* ------------------------------------------------------------------ */
/* hub: -m ORG/NAME[@REV] in the Hugging Face cache                     */

static const char *fake_cache(const char *name)
{
	const char *d = scratch(name);
	char cmd[3000];

	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && mkdir -p hub/models--org--name/refs hub/models--org--name/snapshots/abc123 "
	         "hub/models--org--name/snapshots/def456 hub/models--org--name/refs/refs/pr "
	         "hub/models--solo/snapshots/0a0a hub/models--org--one/snapshots/f00d && "
	         "printf abc123 > hub/models--org--name/refs/main && "
	         "printf 'def456\\n' > hub/models--org--name/refs/v2 && "
	         "printf def456 > hub/models--org--name/refs/refs/pr/1 && "
	         "printf 'nothere' > hub/models--org--name/refs/broken && "
	         "mkdir -p hub/models--solo/refs && printf 0a0a > hub/models--solo/refs/main && "
	         "touch plainfile", d);
	cr_assert_eq(system(cmd), 0);
	return d;
}

static void resolve_ok(const char *arg, const char *want_suffix)
{
	char *out = NULL;
	emb_err err = {{0}};
	size_t a, b;

	cr_assert_eq(emb_model_resolve(&out, arg, &err), 0, "%s: %s", arg, err.msg);
	a = strlen(out);
	b = strlen(want_suffix);
	cr_assert(a >= b && !strcmp(out + a - b, want_suffix), "%s -> %s, want ...%s",
	          arg, out, want_suffix);
	free(out);
}

static void resolve_fail(const char *arg, const char *want)
{
	char *out = (char *)&out;
	emb_err err = {{0}};

	cr_assert_eq(emb_model_resolve(&out, arg, &err), -1, "%s resolved", arg);
	cr_assert_null(out);
	cr_assert_not_null(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
}

Test(hub, directory_as_is)
{
	const char *d = fake_cache("hub-dir");
	char *out;
	emb_err err;

	cr_assert_eq(emb_model_resolve(&out, d, &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, d);
	free(out);
	resolve_fail(pathf(d, "plainfile"), "not a directory");
	resolve_fail(pathf(d, "nonexistent"), "no such model directory");
}

Test(hub, cache_lookup)
{
	const char *d = fake_cache("hub-cache");
	char hub[1200];

	snprintf(hub, sizeof(hub), "%s/hub", d);
	setenv("HF_HUB_CACHE", hub, 1);
	resolve_ok("org/name", "/hub/models--org--name/snapshots/abc123");
	resolve_ok("org/name@main", "/hub/models--org--name/snapshots/abc123");
	resolve_ok("org/name@v2", "/hub/models--org--name/snapshots/def456");
	resolve_ok("org/name@refs/pr/1", "/hub/models--org--name/snapshots/def456");
	resolve_ok("org/name@def456", "/hub/models--org--name/snapshots/def456");
	resolve_ok("solo", "/hub/models--solo/snapshots/0a0a");
	/* no refs/main but a single snapshot */
	resolve_ok("org/one", "/hub/models--org--one/snapshots/f00d");
	resolve_fail("org/one@v9", "revision 'v9' not in the Hugging Face cache");
	resolve_fail("org/name@v9", "refs/v9");
	resolve_fail("org/name@broken", "names commit nothere");
	resolve_fail("org/missing", "models--org--missing");
	resolve_fail("org/missing", "emb-fetch org/missing");
	resolve_fail("../etc", "no such model directory");
	resolve_fail("org/..", "not a Hub model id");
	resolve_fail("org/name@../../x", "bad revision");
	resolve_fail("/abs/nonexistent", "no such model directory");
	resolve_fail("a/b/c", "not a Hub model id");
	resolve_fail("org/na me", "not a Hub model id");
	resolve_fail("", "empty");
}

Test(hub, env_precedence)
{
	const char *d = fake_cache("hub-env");
	char home[1200];

	snprintf(home, sizeof(home), "%s", d);
	unsetenv("HF_HUB_CACHE");
	unsetenv("HUGGINGFACE_HUB_CACHE");
	setenv("HF_HOME", home, 1);   /* HF_HOME/hub */
	resolve_ok("org/name", "/hub-env/hub/models--org--name/snapshots/abc123");
	unsetenv("HF_HOME");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/nonexistent-home", 1);
	resolve_fail("org/name", "/nonexistent-home/.cache/huggingface/hub/models--org--name");
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
	const char *d = scratch("trunc-all");
	const char *p = pathf(d, "model.safetensors");
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
	const char *d = scratch("mutate");
	const char *p = pathf(d, "model.safetensors");
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
