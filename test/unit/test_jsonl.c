/* test_jsonl.c - JSONL reader, scanner, getters, output, emb_fmt_f32 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/numfmt.h"
#include "tool/emb-tool.h"

static int parse(emb_record *r, const char *s, emb_err *e)
{
	e->msg[0] = 0;
	return emb_record_parse(r, s, strlen(s), e);
}

Test(jsonl, valid_objects)
{
	static const char *ok[] = {
		"{}", " {} ", "{\"a\":1}", "{\"a\" : [1, 2.5e-3, -0, 1E+9]}",
		"{\"s\":\"\\u00e9\\n\\\"\\\\\\/\\b\\f\\r\\t\"}",
		"{\"u\":\"\\ud83d\\ude00 caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"}",
		"{\"n\":null,\"t\":true,\"f\":false,\"o\":{\"x\":{}},\"e\":[]}",
		"{\"a\":[[[]]],\"b\":[{\"c\":[1,{\"d\":\"]}\"}]}]}\r",
		"\t{\"a\":-0.0}\t",
	};
	emb_record *r = emb_record_new();
	emb_err e;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_expect_eq(parse(r, ok[i], &e), 0, "%s: %s", ok[i], e.msg);
	emb_record_free(r);
}

Test(jsonl, invalid_json)
{
	static const struct { const char *s, *want; } bad[] = {
		{ "", "empty line" },
		{ "   ", "empty line" },
		{ "[1,2]", "invalid JSON at column 1" },
		{ "{\"a\":1", "invalid JSON at column 7" },
		{ "{\"a\":1,}", "invalid JSON at column 8" },
		{ "{a:1}", "invalid JSON at column 2" },
		{ "{\"a\" 1}", "invalid JSON at column 6" },
		{ "{\"a\":01}", "invalid JSON" },
		{ "{\"a\":1.}", "invalid JSON" },
		{ "{\"a\":.5}", "invalid JSON" },
		{ "{\"a\":1e}", "invalid JSON" },
		{ "{\"a\":+1}", "invalid JSON" },
		{ "{\"a\":tru}", "invalid JSON" },
		{ "{\"a\":NaN}", "invalid JSON" },
		{ "{\"a\":\"x\ty\"}", "invalid JSON" },
		{ "{\"a\":\"\\x\"}", "invalid JSON" },
		{ "{\"a\":\"\\u12\"}", "invalid JSON" },
		{ "{\"a\":\"\\ud800\"}", "invalid JSON" },
		{ "{\"a\":\"\\udc00\\ud800\"}", "invalid JSON" },
		{ "{\"a\":[1 2]}", "invalid JSON" },
		{ "{\"a\":[1,]}", "invalid JSON" },
		{ "{\"a\":1} x", "invalid JSON at column 9" },
		{ "{\"a\":1}{}", "invalid JSON" },
		{ "{\"a\":\"unterminated}", "invalid JSON" },
		{ "{\"a\":[}", "invalid JSON" },
		{ "{\"a\":{\"b\":1]}", "invalid JSON" },
	};
	emb_record *r = emb_record_new();
	emb_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(r, bad[i].s, &e), -1, "accepted: %s", bad[i].s);
		cr_expect(strstr(e.msg, bad[i].want) != NULL, "%s: got '%s'",
		          bad[i].s, e.msg);
	}
	emb_record_free(r);
}

Test(jsonl, invalid_utf8)
{
	static const char *bad[] = {
		"{\"a\":\"\xff\"}",             /* invalid byte */
		"{\"a\":\"\xc0\xaf\"}",         /* overlong '/' */
		"{\"a\":\"\xe0\x80\xaf\"}",     /* overlong */
		"{\"a\":\"\xed\xa0\x80\"}",     /* UTF-8 surrogate */
		"{\"a\":\"\xf4\x90\x80\x80\"}", /* > U+10FFFF */
		"{\"a\":\"\xc3\"}",             /* truncated */
		"{\"a\":\"\x80\"}",             /* lone continuation */
		"{\"\xfe\":1}",                 /* in a key */
		"\xef\xbb\xbf{}",               /* BOM is not JSON, but valid UTF-8 */
	};
	emb_record *r = emb_record_new();
	emb_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(r, bad[i], &e), -1, "accepted #%zu", i);
		if (i + 1 < sizeof(bad) / sizeof(bad[0]))
			cr_expect(strstr(e.msg, "invalid UTF-8 at column") != NULL,
			          "#%zu: %s", i, e.msg);
	}
	parse(r, "{\"a\":\"ok\xff\"}", &e);
	cr_expect_str_eq(e.msg, "invalid UTF-8 at column 9");
	cr_expect_eq(emb_record_from_text(r, "a\xc3(", 3, 1, &e), -1);
	cr_expect_str_eq(e.msg, "invalid UTF-8 at column 2");
	emb_record_free(r);
}

static char *nested(int depth, const char *open, const char *close)
{
	size_t n = (size_t)depth * (strlen(open) + strlen(close)) + 16, k = 0;
	char *s = malloc(n);
	int i;

	k += (size_t)sprintf(s, "{\"a\":");
	for (i = 0; i < depth; i++)
		k += (size_t)sprintf(s + k, "%s", open);
	s[k++] = '0';
	for (i = 0; i < depth; i++)
		k += (size_t)sprintf(s + k, "%s", close);
	sprintf(s + k, "}");
	return s;
}

/* parse() of nested(DEPTH, OPEN, CLOSE) */
static int parse_nested(emb_record *r, int depth, const char *open,
                        const char *close, emb_err *e)
{
	char *s = nested(depth, open, close);
	int rc = parse(r, s, e);

	free(s);
	return rc;
}

Test(jsonl, deep_nesting)
{
	emb_record *r = emb_record_new();
	emb_err e;

	cr_expect_eq(parse_nested(r, 500, "[", "]", &e), 0, "%s", e.msg);
	cr_expect_eq(parse_nested(r, 400, "{\"k\":", "}", &e), 0, "%s", e.msg);
	/* no recursion: must not crash */
	cr_expect_eq(parse_nested(r, 100000, "[", "]", &e), -1);
	cr_expect(strstr(e.msg, "nesting too deep") != NULL, "%s", e.msg);
	cr_expect_eq(parse_nested(r, 100000, "{\"k\":[", "]}", &e), -1);
	emb_record_free(r);
}

/* the record path's own rules over the shared scanner: 512 levels in a
 * member and no more, numbers of any size kept as their text, \u0000
 * in keys and values, the BOM and empty-line messages */
Test(jsonl, record_rules)
{
	emb_record *r = emb_record_new();
	emb_err e;
	const char *s;
	size_t len;
	size_t rows;
	int32_t *ids;

	cr_expect_eq(parse_nested(r, 512, "[", "]", &e), 0, "512 levels: %s",
	             e.msg);
	cr_expect_eq(parse_nested(r, 513, "[", "]", &e), -1, "513 levels accepted");
	cr_expect(strstr(e.msg, "nesting too deep") != NULL, "%s", e.msg);
	cr_expect_eq(parse_nested(r, 512, "{\"k\":", "}", &e), 0,
	             "512 objects: %s", e.msg);

	cr_assert_eq(parse(r, "{\"big\":123456789012345678901234567890,"
	                   "\"huge\":1e400,\"tiny\":-1e-400 }", &e), 0, "%s", e.msg);
	s = emb_record_raw(r, "big", &len);
	cr_assert(s);
	cr_expect_eq(len, 30);
	s = emb_record_raw(r, "tiny", &len);
	cr_assert(s);
	cr_expect(len == 7 && !memcmp(s, "-1e-400", 7), "%.*s", (int)len, s);
	cr_expect_eq(emb_record_get_int32s(r, "big", &ids, &rows, &e), -1);

	/* a number skipped by grammar alone: a bad one is named at the
	 * byte where a digit was wanted; what follows it is the caller's */
	{
		static const struct { const char *line, *msg; } bad[] = {
			{ "{\"a\":[1,-]}", "column 10: invalid number" },
			{ "{\"a\":1.}", "column 8: invalid number" },
			{ "{\"a\":1e}", "column 8: invalid number" },
			{ "{\"a\":[2,1.5e+]}", "column 14: invalid number" },
			{ "{\"a\":-x}", "column 7: invalid number" },
			{ "{\"a\":01}", "column 7: expected ',' or '}'" },
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			cr_expect_eq(parse(r, bad[i].line, &e), -1, "%s", bad[i].line);
			cr_expect(strstr(e.msg, bad[i].msg) != NULL, "%s: %s",
			          bad[i].line, e.msg);
		}
		cr_assert_eq(parse(r, "{\"a\":[1.5e3,-0.25E-2,7,0,-0]}", &e), 0,
		             "%s", e.msg);
		s = emb_record_raw(r, "a", &len);
		cr_assert(s);
		cr_expect(len == 23 && !memcmp(s, "[1.5e3,-0.25E-2,7,0,-0]", 23),
		          "%.*s", (int)len, s);
	}

	cr_assert_eq(parse(r, "{\"a\\u0000b\":\"x\\u0000\"}", &e), 0, "%s", e.msg);
	cr_expect(!emb_record_has(r, "a"));
	cr_assert_eq(emb_record_get_string(r, "a", &s, &len, &e), -1);

	cr_expect_eq(parse(r, "\xef\xbb\xbf{}", &e), -1);
	cr_expect(strstr(e.msg, "byte order mark") != NULL, "%s", e.msg);
	cr_expect_eq(parse(r, "\t \r", &e), -1);
	cr_expect_str_eq(e.msg, "empty line");
	cr_expect_eq(parse(r, "{\"a\":1}\r", &e), 0, "%s", e.msg);
	emb_record_free(r);
}

Test(jsonl, getters)
{
	emb_record *r = emb_record_new();
	emb_err e;
	const char *s;
	size_t n, len;
	int32_t *ids;

	cr_assert_eq(parse(r, "{\"id\": \"x\\u0041\" ,\"text\":\"a\\u0000b\\ud83d\\ude00\","
	                   "\"input_ids\":[101, -5 ,2147483647,-2147483648],"
	                   "\"bad\":[1.5],\"big\":[2147483648],\"text\":\"last\"}", &e), 0,
	             "%s", e.msg);
	cr_assert_eq(emb_record_get_string(r, "id", &s, &len, &e), 0);
	cr_expect_eq(len, 2);
	cr_expect_str_eq(s, "xA");
	cr_assert_eq(emb_record_get_string(r, "text", &s, &len, &e), 0);
	cr_expect_eq(len, 4);               /* the last duplicate wins */
	cr_expect_str_eq(s, "last");
	cr_expect_eq(emb_record_get_string(r, "input_ids", &s, &len, &e), -1);
	cr_expect_str_eq(e.msg, "field 'input_ids' is not a string");
	cr_expect_eq(emb_record_get_string(r, "nope", &s, &len, &e), -1);
	cr_expect_str_eq(e.msg, "missing field 'nope'");
	cr_assert_eq(emb_record_get_int32s(r, "input_ids", &ids, &n, &e), 0);
	cr_expect_eq(n, 4);
	cr_expect_eq(ids[0], 101);
	cr_expect_eq(ids[1], -5);
	cr_expect_eq(ids[2], 2147483647);
	cr_expect_eq(ids[3], (int32_t)-2147483648LL);
	free(ids);
	cr_expect_eq(emb_record_get_int32s(r, "bad", &ids, &n, &e), -1);
	cr_expect_eq(emb_record_get_int32s(r, "big", &ids, &n, &e), -1);
	cr_expect_eq(emb_record_get_int32s(r, "id", &ids, &n, &e), -1);
	cr_expect(emb_record_has(r, "bad"));
	cr_expect(!emb_record_has(r, "ba"));
	s = emb_record_raw(r, "id", &len);
	cr_assert(s);
	cr_expect_eq(len, 9);
	cr_expect(!memcmp(s, "\"x\\u0041\"", 9));

	cr_assert_eq(parse(r, "{\"t\":\"a\\u0000b\\ud83d\\ude00\"}", &e), 0);
	cr_assert_eq(emb_record_get_string(r, "t", &s, &len, &e), 0);
	cr_expect_eq(len, 7);
	cr_expect(!memcmp(s, "a\0b\xf0\x9f\x98\x80", 7));
	emb_record_free(r);
}

Test(jsonl, passthrough_exact)
{
	const char *in = "{ \"id\" :  {\"deep\": [1, 2.50, \"\\u00e9\"]},"
	                 "\"x\":1e+00 , \"text\" :\"caf\xc3\xa9\",\"drop\":[],"
	                 "\"embedding\":[1],\"u\":null }";
	const char *const drop[] = { "drop", NULL };
	emb_record *r = emb_record_new();
	emb_buf b;
	emb_err e;
	float v[2] = { 0.5f, -2.0f };

	cr_assert_eq(parse(r, in, &e), 0, "%s", e.msg);
	emb_buf_init(&b);
	emb_out_begin(&b, r, drop);
	emb_out_int(&b, "n", 3);
	emb_out_floats(&b, "embedding", v, 2, 0);
	emb_out_end(&b);
	cr_expect_str_eq(b.p, "{\"id\" :  {\"deep\": [1, 2.50, \"\\u00e9\"]},"
	                 "\"x\":1e+00,\"text\" :\"caf\xc3\xa9\",\"u\":null,"
	                 "\"n\":3,\"embedding\":[0.5,-2]}\n");
	/* appending a second record; no record; nothing new */
	emb_out_begin(&b, NULL, NULL);
	emb_out_end(&b);
	emb_out_begin(&b, r, NULL);
	emb_out_end(&b);
	cr_expect(strstr(b.p, "}\n{}\n{ ") == NULL);
	cr_expect(strstr(b.p, "}\n{}\n{\"id\" :") != NULL, "%s", b.p);
	/* the b64 form replaces the JSON form and vice versa */
	b.len = 0;
	cr_assert_eq(parse(r, "{\"e_b64\":\"AAAAPw==\",\"k\":1}", &e), 0);
	emb_out_begin(&b, r, NULL);
	emb_out_floats(&b, "e", v, 1, 0);
	emb_out_end(&b);
	cr_expect_str_eq(b.p, "{\"k\":1,\"e\":[0.5]}\n");
	b.len = 0;
	emb_out_begin(&b, r, NULL);
	emb_out_floats(&b, "e", v, 1, 1);
	emb_out_string(&b, "s", "a\"\\\n\x01", 5);
	emb_out_end(&b);
	cr_expect_str_eq(b.p, "{\"k\":1,\"e_b64\":\"AAAAPw==\",\"s\":\"a\\\"\\\\\\n\\u0001\"}\n");
	/* output is valid JSON that reads back */
	cr_expect_eq(emb_record_parse(r, b.p, b.len - 1, &e), 0, "%s", e.msg);
	emb_buf_release(&b);
	emb_record_free(r);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static void check_f32(float v)
{
	char s[40];
	size_t n = emb_fmt_f32(s, v);
	float back;
	char *end;

	cr_assert_lt(n, 17, "%s too long", s);
	cr_assert_eq(strlen(s), n);
	back = strtof(s, &end);
	cr_assert_eq(*end, 0, "'%s' not fully read", s);
	cr_assert(memcmp(&back, &v, 4) == 0, "%a -> '%s' -> %a", v, s, back);
	/* JSON number grammar: no leading '+', no bare '.', no inf/nan */
	cr_assert(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'), "%s", s);
	cr_assert(!strchr(s, 'n') && !strchr(s, 'i'), "%s", s);
	if (s[0] == '0' || (s[0] == '-' && s[1] == '0'))
		cr_assert(s[s[0] == '-' ? 2 : 1] == '.' || s[s[0] == '-' ? 2 : 1] == 0,
		          "leading zero: %s", s);
}

/* shortest: no shorter %.Ng reads back as v */
static void check_shortest(float v)
{
	char s[40], t[400], d[40];
	int digits = 0, p, k = 0;
	const char *c;

	emb_fmt_f32(s, v);
	/* significant digits of the mantissa */
	for (c = s; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			d[k++] = *c;
	d[k] = 0;
	for (c = d; *c == '0'; c++)
		;
	digits = (int)strlen(c);
	while (digits > 1 && c[digits - 1] == '0')
		digits--;
	for (p = 1; p < digits; p++) {
		snprintf(t, sizeof(t), "%.*g", p, (double)v);
		cr_assert(strtof(t, NULL) != v, "%s is shorter than %s", t, s);
	}
}

Test(jsonl, fmt_f32_roundtrip)
{
	static const float special[] = {
		0.0f, 1.0f, -1.0f, 0.5f, 0.1f, 1e-7f, 123456789.0f, 1e10f,
		3.4028235e38f, -3.4028235e38f, 1.17549435e-38f, 1.4e-45f,
		-1.4e-45f, 1.1754942e-38f, 16777216.0f, 16777217.0f, 0.3f,
		2.0f / 3.0f, 9.999999e-5f, 1e-5f, 100000.0f, 1e9f, 0.01642313f,
	};
	char s[40];
	size_t i;
	float nz = -0.0f;

	for (i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		check_f32(special[i]);
		check_shortest(special[i]);
	}
	emb_fmt_f32(s, 0.5f);
	cr_expect_str_eq(s, "0.5");
	emb_fmt_f32(s, 1.0f);
	cr_expect_str_eq(s, "1");
	emb_fmt_f32(s, 0.1f);
	cr_expect_str_eq(s, "0.1");
	emb_fmt_f32(s, -2.5e-7f);
	cr_expect(strtof(s, NULL) == -2.5e-7f && strlen(s) <= 8, "%s", s);
	emb_fmt_f32(s, nz);
	cr_expect_str_eq(s, "-0");
	emb_fmt_f32(s, INFINITY);
	cr_expect_str_eq(s, "null");
	emb_fmt_f32(s, -INFINITY);
	cr_expect_str_eq(s, "null");
	emb_fmt_f32(s, NAN);
	cr_expect_str_eq(s, "null");
	for (i = 0; i < 300000; i++) {
		uint32_t w = xorshift();
		float v;
		if (i % 4 == 0)
			w &= 0x807fffffu;   /* subnormals */
		else if (i % 4 == 1)
			w = (w & 0xbfffffffu) | 0x3c000000u; /* around 1 */
		memcpy(&v, &w, 4);
		if (!isfinite(v))
			continue;
		check_f32(v);
		if (i % 16 == 0)
			check_shortest(v);
	}
}

/* the exact formatter against its oracle: the same bytes on every power
 * of two and its neighbours (where the gap below halves), around every
 * power of ten, the subnormals' edges, and random patterns */
Test(jsonl, fmt_f32_oracle)
{
	char a[40], b[40];
	uint32_t w, u;
	int i, d;
	float v;

	for (i = 0; i < 200000; i++) {
		if (i < 256 * 9) {              /* each exponent, 9 neighbours */
			w = (uint32_t)(i / 9) << 23;
			w += (uint32_t)(i % 9) - 4;
		} else if (i < 256 * 9 + 90 * 9) {      /* around 10^k */
			float t = powf(10.0f, (float)((i - 256 * 9) / 9 - 45));
			memcpy(&w, &t, 4);
			w += (uint32_t)((i - 256 * 9) % 9) - 4;
		} else {
			w = xorshift();
			if (i % 3 == 0)
				w &= 0x807fffffu;               /* subnormals */
		}
		for (d = 0; d < 2; d++) {
			u = w | (d ? 0x80000000u : 0);
			memcpy(&v, &u, 4);
			emb_fmt_f32(a, v);
			emb_fmt_f32_ref(b, v);
			cr_assert_str_eq(a, b, "0x%08x: %s, oracle %s", u, a, b);
		}
	}
}

Test(jsonl, floats_both_forms)
{
	emb_record *r = emb_record_new();
	emb_buf b;
	emb_err e;
	float m[6] = { 1.5f, -0.0f, 3.4028235e38f, 1.4e-45f, 0.1f, -7.25e-3f };
	float *v;
	size_t rows, cols;
	int b64;

	for (b64 = 0; b64 < 2; b64++) {
		emb_buf_init(&b);
		emb_out_begin(&b, NULL, NULL);
		emb_out_matrix(&b, "tok", m, 2, 3, b64);
		emb_out_floats(&b, "vec", m, 5, b64);
		emb_out_floats(&b, "one", m + 5, 1, b64);
		emb_out_end(&b);
		cr_assert_eq(emb_record_parse(r, b.p, b.len - 1, &e), 0, "%s", e.msg);
		cr_assert_eq(emb_record_get_floats(r, "tok", &v, &rows, &cols, &e), 0,
		             "%s", e.msg);
		cr_expect_eq(rows, 2);
		cr_expect_eq(cols, 3);
		cr_expect(!memcmp(v, m, sizeof(m)), "matrix b64=%d", b64);
		free(v);
		cr_assert_eq(emb_record_get_floats(r, "vec", &v, &rows, &cols, &e), 0);
		cr_expect_eq(rows, 1);
		cr_expect_eq(cols, 5);
		cr_expect(!memcmp(v, m, 5 * sizeof(float)));
		free(v);
		cr_assert_eq(emb_record_get_floats(r, "one", &v, &rows, &cols, &e), 0);
		cr_expect_eq(cols, 1);
		cr_expect(!memcmp(v, m + 5, sizeof(float)));
		free(v);
		emb_buf_release(&b);
	}
	/* base64 of 1.0f 2.0f little endian: 00 00 80 3f 00 00 00 40 */
	cr_assert_eq(parse(r, "{\"x_b64\":\"AACAPwAAAEA=\",\"y_b64\":[\"AACAPw==\",\"AAAAQA==\"]}",
	                   &e), 0);
	cr_assert_eq(emb_record_get_floats(r, "x", &v, &rows, &cols, &e), 0, "%s", e.msg);
	cr_expect(rows == 1 && cols == 2 && v[0] == 1.0f && v[1] == 2.0f);
	free(v);
	cr_assert_eq(emb_record_get_floats(r, "y", &v, &rows, &cols, &e), 0, "%s", e.msg);
	cr_expect(rows == 2 && cols == 1 && v[0] == 1.0f && v[1] == 2.0f);
	free(v);
	/* errors */
	cr_assert_eq(parse(r, "{\"a\":[[1,2],[3]],\"b\":[1,\"x\"],\"c\":[1e39],"
	                   "\"d_b64\":\"AAA\",\"e_b64\":\"AAAA\",\"f\":[[1],2],"
	                   "\"g\":\"s\",\"h\":[],\"i_b64\":\"AA=A\"}", &e), 0, "%s", e.msg);
	cr_expect_eq(emb_record_get_floats(r, "a", &v, &rows, &cols, &e), -1);
	cr_expect(strstr(e.msg, "row 1 has 1 values") != NULL, "%s", e.msg);
	cr_expect_eq(emb_record_get_floats(r, "b", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "c", &v, &rows, &cols, &e), -1);
	cr_expect(strstr(e.msg, "out of float32 range") != NULL, "%s", e.msg);
	cr_expect_eq(emb_record_get_floats(r, "d", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "e", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "f", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "g", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "i", &v, &rows, &cols, &e), -1);
	cr_expect_eq(emb_record_get_floats(r, "zz", &v, &rows, &cols, &e), -1);
	cr_expect_str_eq(e.msg, "missing field 'zz'");
	cr_assert_eq(emb_record_get_floats(r, "h", &v, &rows, &cols, &e), 0);
	cr_expect(rows == 0 && cols == 0);
	free(v);
	emb_record_free(r);
}

Test(jsonl, base64_roundtrip_lengths)
{
	emb_record *r = emb_record_new();
	emb_buf b;
	emb_err e;
	float src[700], *v;
	size_t n, rows, cols, i;

	for (i = 0; i < 700; i++) {
		uint32_t w = xorshift() & 0x7f7fffffu;
		memcpy(&src[i], &w, 4);
	}
	/* lengths around the 192-float encoder chunk */
	for (n = 0; n < 700; n += (n < 10 ? 1 : 97)) {
		emb_buf_init(&b);
		emb_out_begin(&b, NULL, NULL);
		emb_out_floats(&b, "v", src, n, 1);
		emb_out_end(&b);
		cr_assert_eq(emb_record_parse(r, b.p, b.len - 1, &e), 0);
		cr_assert_eq(emb_record_get_floats(r, "v", &v, &rows, &cols, &e), 0,
		             "n=%zu: %s", n, e.msg);
		cr_expect_eq(cols, n);
		cr_expect(!memcmp(v, src, n * 4), "n=%zu", n);
		free(v);
		emb_buf_release(&b);
	}
	emb_record_free(r);
}

static char *tmpfile_with(const char *data, size_t n)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/emb-test-jsonl-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, n), (ssize_t)n);
	close(fd);
	return path;
}

Test(jsonl, reader_lines)
{
	const char data[] = "{\"a\":1}\r\n\n  \nxx\0yy\n0123456789abcdef\nlast";
	char *path = tmpfile_with(data, sizeof(data) - 1);
	emb_reader *r;
	emb_err e;
	const char *line;
	size_t len;
	uint64_t done, total;

	cr_assert_eq(emb_reader_open(&r, path, 10, &e), 0);
	cr_expect_str_eq(emb_reader_name(r), path);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(len, 7);
	cr_expect(!memcmp(line, "{\"a\":1}", 7));
	cr_expect_eq(emb_reader_lineno(r), 1);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(len, 0);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(len, 2);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), -1);
	cr_expect_str_eq(e.msg, "NUL byte in line");
	cr_expect_eq(emb_reader_lineno(r), 4);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), -1);
	cr_expect_str_eq(e.msg, "line too long (more than 10 bytes)");
	cr_expect_eq(emb_reader_lineno(r), 5);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(len, 4);
	cr_expect(!memcmp(line, "last", 4));
	cr_expect_eq(emb_reader_lineno(r), 6);
	cr_expect_eq(emb_reader_next(r, &line, &len, &e), 0);
	emb_reader_progress(r, &done, &total);
	cr_expect_eq(done, sizeof(data) - 1);
	cr_expect_eq(total, sizeof(data) - 1);
	emb_reader_free(r);
	unlink(path);
	cr_expect_eq(emb_reader_open(&r, "/nonexistent/x.jsonl", 0, &e), -1);
	cr_expect(strstr(e.msg, "/nonexistent/x.jsonl: No such file") != NULL, "%s", e.msg);
}

Test(jsonl, reader_long_lines_across_chunks)
{
	/* lines longer than the read chunk: kept whole, or skipped */
	size_t big = 300000, n = 2 * big + 16, i;
	char *data = malloc(n), *path;
	emb_reader *r;
	emb_err e;
	const char *line;
	size_t len, k = 0;

	for (i = 0; i < big; i++)
		data[k++] = (char)('a' + i % 26);
	data[k++] = '\n';
	for (i = 0; i < big; i++)
		data[k++] = 'z';
	data[k++] = '\n';
	data[k++] = 'o';
	data[k++] = 'k';
	data[k++] = '\n';
	path = tmpfile_with(data, k);
	cr_assert_eq(emb_reader_open(&r, path, big, &e), 0);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(len, big);
	cr_expect(!memcmp(line, data, big));
	emb_reader_free(r);
	cr_assert_eq(emb_reader_open(&r, path, big - 1, &e), 0);
	cr_expect_eq(emb_reader_next(r, &line, &len, &e), -1);
	cr_expect_eq(emb_reader_next(r, &line, &len, &e), -1);
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect(len == 2 && !memcmp(line, "ok", 2));
	cr_expect_eq(emb_reader_lineno(r), 3);
	cr_expect_eq(emb_reader_next(r, &line, &len, &e), 0);
	emb_reader_free(r);
	unlink(path);
	free(data);
}

Test(jsonl, from_text)
{
	emb_record *r = emb_record_new();
	emb_err e;
	const char *s;
	size_t len;

	cr_assert_eq(emb_record_from_text(r, "say \"hi\"\t\\ caf\xc3\xa9", 16, 7, &e), 0,
	             "%s", e.msg);
	cr_assert_eq(emb_record_get_string(r, "text", &s, &len, &e), 0);
	cr_expect_eq(len, 16);
	cr_expect(!memcmp(s, "say \"hi\"\t\\ caf\xc3\xa9", 16));
	/* the line number as its id, before the text */
	s = emb_record_raw(r, "id", &len);
	cr_assert(s != NULL);
	cr_expect_eq(len, 1);
	cr_expect(!memcmp(s, "7", 1));
	cr_assert_eq(emb_record_from_text(r, "", 0, 18446744073709551615ull, &e), 0, "%s", e.msg);
	cr_assert_eq(emb_record_get_string(r, "text", &s, &len, &e), 0);
	cr_expect_eq(len, 0);
	s = emb_record_raw(r, "id", &len);
	cr_assert(s != NULL);
	cr_expect_eq(len, 20);
	cr_expect(!memcmp(s, "18446744073709551615", 20));
	emb_record_free(r);
}

Test(jsonl, out_strings_and_ints)
{
	const char *t[] = { "[CLS]", "caf\xc3\xa9", "q\"\\", NULL };
	int32_t ids[] = { 101, -7, 2147483647 };
	emb_record *r = emb_record_new();
	emb_buf b;
	emb_err e;
	const char *s;
	size_t n;
	int32_t *back;

	emb_buf_init(&b);
	emb_out_begin(&b, NULL, NULL);
	emb_out_strings(&b, "tokens", t, 4);
	emb_out_int32s(&b, "ids", ids, 3);
	emb_out_int32s(&b, "none", ids, 0);
	emb_out_int(&b, "neg", -42);
	emb_out_json(&b, "raw", "{\"a\": [1]}", 10);
	emb_out_end(&b);
	cr_expect_str_eq(b.p, "{\"tokens\":[\"[CLS]\",\"caf\xc3\xa9\",\"q\\\"\\\\\",\"\"],"
	                 "\"ids\":[101,-7,2147483647],\"none\":[],\"neg\":-42,"
	                 "\"raw\":{\"a\": [1]}}\n");
	cr_assert_eq(emb_record_parse(r, b.p, b.len - 1, &e), 0, "%s", e.msg);
	cr_assert_eq(emb_record_get_int32s(r, "ids", &back, &n, &e), 0);
	cr_expect(n == 3 && !memcmp(back, ids, sizeof(ids)));
	free(back);
	cr_assert_eq(emb_record_get_int32s(r, "none", &back, &n, &e), 0);
	cr_expect_eq(n, 0);
	free(back);
	s = emb_record_raw(r, "raw", &n);
	cr_expect(n == 10 && !memcmp(s, "{\"a\": [1]}", 10));
	emb_buf_release(&b);
	emb_record_free(r);
}

/* ------------------------------------------------------------------ */
/* the command driver (cli.c): batches, failures found in ops->run,    */
/* --strict and --errors=emit, with a fake command                      */

/* record {"v":N}: run fails on v == 3 (the whole batch fails, so the
 * driver retries one at a time); emit fails on v == 5 */
static int fake_prepare(void *ctx, emb_cli_rec *r, emb_err *err)
{
	size_t n;
	const char *v = emb_record_raw(r->rec, "v", &n);

	(void)ctx;
	if (!v)
		return emb_err_set(err, "missing field 'v'");
	r->cost = 1;
	r->user = NULL;
	return 0;
}

static int fake_run(void *ctx, emb_cli_rec **rs, int n, emb_err *err)
{
	int *runs = ctx;

	(*runs)++;
	for (int i = 0; i < n; i++) {
		size_t k;
		const char *v = emb_record_raw(rs[i]->rec, "v", &k);
		if (k == 1 && *v == '3')
			return emb_err_set(err, "run failed on 3");
	}
	return 0;
}

static int fake_emit(void *ctx, emb_cli_rec *r, emb_buf *out, emb_err *err)
{
	size_t k;
	const char *v = emb_record_raw(r->rec, "v", &k);

	(void)ctx;
	if (k == 1 && *v == '5')
		return emb_err_set(err, "emit failed on 5");
	emb_out_begin(out, r->rec, NULL);
	emb_out_int(out, "ok", 1);
	emb_out_end(out);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[4096];
	size_t n;

	cr_assert(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* run the fake command over 6 records; returns the status */
static int fake_cmd(int strict, int emit_errors, size_t batch_cost,
                    char *outp, char *errp, int *runs)
{
	static const char data[] = "{\"v\":1}\n{\"v\":2}\n{\"v\":3}\n{\"v\":4}\n"
	                           "{\"v\":5}\n{\"v\":6}\n";
	char *in = strdup(tmpfile_with(data, sizeof(data) - 1));
	char *argv[] = { "fake", in, NULL };
	emb_cli c;
	emb_cli_ops ops = { fake_prepare, fake_run, fake_emit, NULL,
	                    batch_cost, 8 };
	int fd;

	strcpy(outp, "/tmp/emb-test-cli-out-XXXXXX");
	strcpy(errp, "/tmp/emb-test-cli-err-XXXXXX");
	cr_assert((fd = mkstemp(outp)) >= 0);
	close(fd);
	cr_assert((fd = mkstemp(errp)) >= 0);
	close(fd);
	memset(&c, 0, sizeof(c));
	c.prog = "fake";
	c.usage = "usage: fake\n";
	emb_cli_parse(&c, 2, argv, NULL, NULL, NULL);
	c.strict = strict;
	c.errors_emit = emit_errors;
	c.progress = 0;
	cr_assert(freopen(outp, "w", stdout));
	cr_assert(freopen(errp, "w", stderr));
	*runs = 0;
	fd = emb_cli_run(&c, &ops, runs);
	fflush(stderr);
	unlink(in);
	free(in);
	return fd;
}

Test(cli, driver_batches_and_failures)
{
	char outp[64], errp[64];
	int runs, s;
	const char *o, *e;

	/* one batch of 6: it fails, then each record is run alone */
	s = fake_cmd(0, 0, 100, outp, errp, &runs);
	cr_assert_eq(s, EMB_EXIT_RECORD);
	o = slurp(outp);
	cr_assert_eq(count_lines(o), 4, "%s", o);
	cr_assert(strstr(o, "{\"v\":1,\"ok\":1}\n{\"v\":2,\"ok\":1}\n{\"v\":4,\"ok\":1}\n{\"v\":6,\"ok\":1}\n"), "%s", o);
	e = slurp(errp);
	cr_assert_eq(count_lines(e), 2, "%s", e);
	cr_assert(strstr(e, ":3): run failed on 3\n"), "%s", e);
	cr_assert(strstr(e, ":5): emit failed on 5\n"), "%s", e);
	cr_assert_eq(runs, 1 + 6);
	unlink(outp);
	unlink(errp);
}

Test(cli, driver_one_record_a_run_emit)
{
	char outp[64], errp[64];
	int runs, s;
	const char *o;

	/* batch budget 1 token: six runs; --errors=emit keeps lines aligned */
	s = fake_cmd(0, 1, 1, outp, errp, &runs);
	cr_assert_eq(s, EMB_EXIT_RECORD);
	cr_assert_eq(runs, 6);
	o = slurp(outp);
	cr_assert_eq(count_lines(o), 6, "%s", o);
	cr_assert(strstr(o, "{\"v\":2,\"ok\":1}\n{\"error\":\"run failed on 3\"}\n"
	                 "{\"v\":4,\"ok\":1}\n{\"error\":\"emit failed on 5\"}\n"),
	          "%s", o);
}

Test(cli, driver_strict_stops_at_a_run_failure)
{
	char outp[64], errp[64];
	int runs, s;
	const char *o, *e;

	/* --strict: a record that fails in run (not in prepare) stops too */
	s = fake_cmd(1, 0, 100, outp, errp, &runs);
	cr_assert_eq(s, EMB_EXIT_RECORD);
	o = slurp(outp);
	cr_assert_str_eq(o, "{\"v\":1,\"ok\":1}\n{\"v\":2,\"ok\":1}\n");
	e = slurp(errp);
	cr_assert_eq(count_lines(e), 1, "%s", e);
	cr_assert(strstr(e, ":3): run failed on 3\n"), "%s", e);
}

Test(cli, driver_strict_one_record_a_run)
{
	char outp[64], errp[64];
	int runs, s;
	const char *o;

	s = fake_cmd(1, 1, 1, outp, errp, &runs);
	cr_assert_eq(s, EMB_EXIT_RECORD);
	cr_assert_eq(runs, 3, "ran %d times after the failure", runs);
	o = slurp(outp);
	cr_assert_str_eq(o, "{\"v\":1,\"ok\":1}\n{\"v\":2,\"ok\":1}\n"
	                 "{\"error\":\"run failed on 3\"}\n");
}

/* emb_reader_pending: 1 while the next line is at hand (buffered, or the
 * descriptor readable), 0 when the next read would wait (a pipe with
 * nothing in it and its writer still open) */
Test(jsonl, reader_pending)
{
	int fd[2], saved = dup(0);
	emb_reader *r;
	emb_err e;
	const char *line;
	size_t len;

	cr_assert(saved >= 0 && pipe(fd) == 0);
	cr_assert_eq(write(fd[1], "{\"a\":1}\n{\"a\":2}\n", 16), 16);
	cr_assert(dup2(fd[0], 0) == 0);
	close(fd[0]);
	cr_assert_eq(emb_reader_open(&r, "-", 0, &e), 0);
	cr_expect_eq(emb_reader_pending(r), 1, "data in the pipe");
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(emb_reader_pending(r), 1, "the second line is buffered");
	cr_assert_eq(emb_reader_next(r, &line, &len, &e), 1);
	cr_expect_eq(emb_reader_pending(r), 0, "the pipe is empty, its writer open");
	close(fd[1]);
	cr_expect_eq(emb_reader_pending(r), 1, "end of file is at hand");
	cr_expect_eq(emb_reader_next(r, &line, &len, &e), 0);
	emb_reader_free(r);
	dup2(saved, 0);
	close(saved);
}

/* a record buffer grown by one long line shrinks for the next short one,
 * and the long one still parses and passes through */
Test(jsonl, record_buffer_shrinks)
{
	size_t big = (size_t)3 << 20, n;
	char *line = malloc(big + 32);
	emb_record *r = emb_record_new();
	emb_err e;
	const char *s;

	cr_assert(line && r);
	n = (size_t)sprintf(line, "{\"pad\":\"");
	memset(line + n, 'x', big);
	n += big;
	n += (size_t)sprintf(line + n, "\",\"v\":1}");
	cr_assert_eq(emb_record_parse(r, line, n, &e), 0, "%s", e.msg);
	cr_assert_eq(emb_record_get_string(r, "pad", &s, &n, &e), 0);
	cr_expect_eq(n, big);
	cr_assert_eq(emb_record_parse(r, "{\"v\":2}", 7, &e), 0, "%s", e.msg);
	s = emb_record_raw(r, "v", &n);
	cr_expect(n == 1 && *s == '2');
	emb_record_free(r);
	free(line);
}

/* the driver's batch also ends at 16 MiB of input lines, whatever the
 * token budget: three 6 MiB records run as two batches */
Test(cli, driver_batch_byte_budget)
{
	size_t pad = (size_t)6 << 20;
	char path[] = "/tmp/emb-test-cli-big-XXXXXX", outp[] = "/tmp/emb-test-cli-out-XXXXXX";
	char *argv[] = { "fake", path, NULL };
	emb_cli c;
	emb_cli_ops ops = { fake_prepare, fake_run, fake_emit, NULL, 1000, 8 };
	int fd, runs = 0, s;
	FILE *f;
	char *x = malloc(pad);

	cr_assert(x && (fd = mkstemp(path)) >= 0);
	cr_assert(f = fdopen(fd, "w"));
	memset(x, 'x', pad);
	for (int i = 1; i <= 3; i++) {
		fprintf(f, "{\"pad\":\"");
		fwrite(x, 1, pad, f);
		fprintf(f, "\",\"v\":%d}\n", i == 3 ? 4 : i);
	}
	fclose(f);
	free(x);
	cr_assert((fd = mkstemp(outp)) >= 0);
	close(fd);
	memset(&c, 0, sizeof(c));
	c.prog = "fake";
	c.usage = "usage: fake\n";
	emb_cli_parse(&c, 2, argv, NULL, NULL, NULL);
	c.progress = 0;
	cr_assert(freopen(outp, "w", stdout));
	s = emb_cli_run(&c, &ops, &runs);
	cr_expect_eq(s, 0);
	cr_expect_eq(runs, 2, "%d batches", runs);
	unlink(path);
	unlink(outp);
}

/* the one base64 decoder: the padding rule is the only difference */
Test(jsonl, base64_decode_padding_rules)
{
	static const struct {
		const char *in;
		long strict, lax;       /* byte counts, -1: refused */
	} cases[] = {
		{ "", 0, 0 }, { "AAAA", 3, 3 }, { "AAA=", 2, 2 }, { "AA==", 1, 1 },
		{ "AAA", -1, 2 }, { "AA", -1, 1 }, { "A===", -1, -1 },
		{ "AA=A", -1, -1 }, { "AA==AAAA", -1, -1 }, { "AAA==", -1, -1 },
		{ "AAAA=", -1, -1 }, { "AA*A", -1, -1 }, { "====", -1, -1 },
	};
	unsigned char out[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].in);
		cr_assert_eq(emb_base64_decode(out, cases[i].in, n, 1),
		             cases[i].strict, "strict '%s'", cases[i].in);
		cr_assert_eq(emb_base64_decode(out, cases[i].in, n, 0),
		             cases[i].lax, "lax '%s'", cases[i].in);
	}
	cr_assert_eq(emb_base64_decode(out, "AACAPw==", 8, 1), 4);
	cr_assert(out[0] == 0 && out[1] == 0 && out[2] == 0x80 && out[3] == 0x3f,
	          "AACAPw== is 1.0f little-endian");
	cr_assert_eq(emb_base64_decode(out, "+/+/", 4, 1), 3);
	cr_assert(out[0] == 0xfb && out[1] == 0xff && out[2] == 0xbf);
}
