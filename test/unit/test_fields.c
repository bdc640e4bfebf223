/* test_fields.c - --fields / --drop: member selection as output records
 * are written (io/write.c), of the members copied from the input record
 * and of those written new */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

/* the record LINE (with its newline) written again by emb_out_* with
 * the selection KEEP/DROP, after a prefix; the result (without the
 * prefix) in a static buffer */
static const char *sel(const char *keep, const char *drop, const char *line)
{
	static char res[512];
	emb_record *rec = emb_record_new();
	emb_fields *f;
	emb_buf b;
	emb_err e;

	e.msg[0] = 0;
	cr_assert_eq(emb_fields_new(&f, keep, drop, &e), 0, "%s", e.msg);
	cr_assert_eq(emb_record_parse(rec, line, strlen(line) - 1, &e), 0,
	             "%s", e.msg);
	emb_buf_init(&b);
	emb_buf_add(&b, "PREFIX\n", 7);
	emb_buf_select(&b, f);
	emb_out_begin(&b, rec, NULL);
	emb_out_end(&b);
	cr_assert_eq(memcmp(b.p, "PREFIX\n", 7), 0);
	snprintf(res, sizeof(res), "%.*s", (int)(b.len - 7), b.p + 7);
	cr_assert_eq(strlen(b.p), b.len, "NUL-terminated at len");
	emb_buf_release(&b);
	emb_fields_free(f);
	emb_record_free(rec);
	return res;
}

Test(fields, keep)
{
	const char *l = "{\"id\":7,\"text\":\"a,\\\"}b\",\"input_ids\":[1,2],"
	                "\"embedding\":[0.5,-1e-3]}\n";
	cr_assert_str_eq(sel("id,embedding", NULL, l),
	                 "{\"id\":7,\"embedding\":[0.5,-1e-3]}\n");
	/* order is the record's, not the list's */
	cr_assert_str_eq(sel("embedding,id", NULL, l),
	                 "{\"id\":7,\"embedding\":[0.5,-1e-3]}\n");
	cr_assert_str_eq(sel("text", NULL, l), "{\"text\":\"a,\\\"}b\"}\n");
	cr_assert_str_eq(sel("nothing", NULL, l), "{}\n");
	cr_assert_str_eq(sel("id,text,input_ids,embedding", NULL, l), l);
}

Test(fields, drop)
{
	const char *l = "{\"id\":\"x\",\"meta\":{\"a\":[1,{\"b\":\"]\"}],\"c\":null},"
	                "\"text\":\"t\",\"ok\":true}\n";
	cr_assert_str_eq(sel(NULL, "text", l),
	                 "{\"id\":\"x\",\"meta\":{\"a\":[1,{\"b\":\"]\"}],\"c\":null},\"ok\":true}\n");
	cr_assert_str_eq(sel(NULL, "id,meta", l), "{\"text\":\"t\",\"ok\":true}\n");
	cr_assert_str_eq(sel(NULL, "ok", l),
	                 "{\"id\":\"x\",\"meta\":{\"a\":[1,{\"b\":\"]\"}],\"c\":null},\"text\":\"t\"}\n");
	cr_assert_str_eq(sel("id,text", "text", l), "{\"id\":\"x\"}\n");
	cr_assert_str_eq(sel(NULL, "absent", l), l);
}

Test(fields, b64_form_and_spacing)
{
	/* members copied from input keep their own spacing */
	const char *l = "{\"id\": 1,\"src\": \"prose\",\"embedding_b64\":\"AAAA\"}\n";
	cr_assert_str_eq(sel("id,embedding", NULL, l),
	                 "{\"id\": 1,\"embedding_b64\":\"AAAA\"}\n");
	cr_assert_str_eq(sel(NULL, "embedding", l),
	                 "{\"id\": 1,\"src\": \"prose\"}\n");
	cr_assert_str_eq(sel("embedding_b64", NULL, l),
	                 "{\"embedding_b64\":\"AAAA\"}\n");
	cr_assert_str_eq(sel("{}", NULL, "{}\n"), "{}\n");
}

Test(fields, escaped_keys)
{
	/* keys are compared unescaped */
	cr_assert_str_eq(sel("id", NULL, "{\"\\u0069d\":1,\"x\":2}\n"),
	                 "{\"\\u0069d\":1}\n");
	cr_assert_str_eq(sel("caf\xc3\xa9", NULL, "{\"caf\\u00e9\":1,\"x\":2}\n"),
	                 "{\"caf\\u00e9\":1}\n");
	cr_assert_str_eq(sel("\xf0\x9f\x98\x80", NULL,
	                     "{\"\\ud83d\\ude00\":1,\"a\\\"b\":2}\n"),
	                 "{\"\\ud83d\\ude00\":1}\n");
	cr_assert_str_eq(sel(NULL, "a\"b", "{\"\\ud83d\\ude00\":1,\"a\\\"b\":2}\n"),
	                 "{\"\\ud83d\\ude00\":1}\n");
}

Test(fields, bad)
{
	emb_fields *f;
	emb_err e;

	cr_assert_eq(emb_fields_new(&f, "a,,b", NULL, &e), -1);
	cr_assert(strstr(e.msg, "--fields: empty field name"), "%s", e.msg);
	cr_assert_null(f);
	cr_assert_eq(emb_fields_new(&f, NULL, "", &e), -1);
	cr_assert(strstr(e.msg, "--drop"), "%s", e.msg);
	cr_assert_eq(emb_fields_new(&f, "a,", NULL, &e), -1);
}

/* the members written new are selected as the copied ones, one by one,
 * in every record written while the selection is set */
Test(fields, new_members_and_many_records)
{
	emb_record *rec = emb_record_new();
	static const float v[2] = { 0.5f, -2.0f };
	static const int32_t ids[3] = { 101, 7, 102 };
	emb_fields *f;
	emb_buf b;
	emb_err e;
	const char *in = "{\"id\": 3,\"text\":\"t\",\"embedding\":[9]}";

	e.msg[0] = 0;
	cr_assert_eq(emb_record_parse(rec, in, strlen(in), &e), 0, "%s", e.msg);
	cr_assert_eq(emb_fields_new(&f, "id,embedding,chunk", "text", &e), 0);
	emb_buf_init(&b);
	emb_buf_select(&b, f);
	for (int k = 0; k < 2; k++) {
		emb_out_begin(&b, rec, NULL);
		emb_out_int(&b, "chunk", k);
		emb_out_int32s(&b, "input_ids", ids, 3);
		emb_out_floats(&b, "embedding", v, 2, k);
		emb_out_string(&b, "text", "x", 1);
		emb_out_end(&b);
	}
	cr_assert_str_eq(b.p, "{\"id\": 3,\"chunk\":0,\"embedding\":[0.5,-2]}\n"
	                 "{\"id\": 3,\"chunk\":1,\"embedding_b64\":\"AAAAPwAAAMA=\"}\n");
	/* nothing selected but a member written last */
	b.len = 0;
	emb_fields_free(f);
	cr_assert_eq(emb_fields_new(&f, "input_ids", NULL, &e), 0);
	emb_buf_select(&b, f);
	emb_out_begin(&b, rec, NULL);
	emb_out_int(&b, "chunk", 1);
	emb_out_int32s(&b, "input_ids", ids, 3);
	emb_out_end(&b);
	emb_out_begin(&b, rec, NULL);
	emb_out_int32s(&b, "input_ids", ids, 3);
	emb_out_int(&b, "chunk", 1);
	emb_out_end(&b);
	cr_assert_str_eq(b.p, "{\"input_ids\":[101,7,102]}\n{\"input_ids\":[101,7,102]}\n");
	/* without a selection, everything again */
	b.len = 0;
	emb_buf_select(&b, NULL);
	emb_out_begin(&b, rec, NULL);
	emb_out_int(&b, "chunk", 1);
	emb_out_end(&b);
	cr_assert_str_eq(b.p, "{\"id\": 3,\"text\":\"t\",\"embedding\":[9],\"chunk\":1}\n");
	emb_buf_release(&b);
	emb_fields_free(f);
	emb_record_free(rec);
}
