/* test_static.c - static embedding models: float16 rounding, the
 * averages against a naive oracle, the C API */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"
#include "static/static-internal.h"
#include "testutil.h"

Test(static, half_round_trip_and_ties)
{
	/* every finite half comes back; the midpoint of two neighbours goes
	 * to the one with an even mantissa, a hair off it to the nearer */
	for (uint32_t h = 0; h < 0x7c00; h++) {
		double a = emb_static_h2f((uint16_t)h), b, mid;
		cr_assert_eq(emb_static_d2h(a), h, "half %#x", h);
		cr_assert_eq(emb_static_d2h(-a), h | 0x8000, "half -%#x", h);
		if (h + 1 >= 0x7c00)
			break;
		b = emb_static_h2f((uint16_t)(h + 1));
		mid = (a + b) / 2;
		cr_assert_eq(emb_static_d2h(mid), h % 2 ? h + 1 : h, "mid %#x", h);
		cr_assert_eq(emb_static_d2h(nextafter(mid, 0)), h, "below mid %#x", h);
		cr_assert_eq(emb_static_d2h(nextafter(mid, 1e9)), h + 1, "above mid %#x", h);
	}
	cr_expect_eq(emb_static_d2h(65519.99), 0x7bff);
	cr_expect_eq(emb_static_d2h(65520.0), 0x7c00);
	cr_expect_eq(emb_static_d2h(1e300), 0x7c00);
	cr_expect_eq(emb_static_d2h(0x1p-26), 0);       /* half of the smallest, to even */
}

static char *model(void)
{
	return tu_path("%s/test/data/static/m2v-minilm-l6", tu_top());
}

Test(static, mean_against_the_naive_oracle)
{
	emb_static *m;
	emb_encoding enc;
	emb_err err = { "" };
	char *dir = model();
	float *rows, a[64], b[64];
	const uint16_t *tab;
	int d;

	cr_assert_eq(emb_static_load(&m, dir, &err), 0, "%s", err.msg);
	d = emb_static_dim(m);
	cr_assert_eq(d, 64);
	cr_assert_str_eq(emb_static_dtype(m), "float16");
	emb_encoding_init(&enc);
	cr_assert_eq(emb_static_tokenize(&enc, m, "a static model averages its rows", 32,
	                                 emb_static_max_length(m), &err), 0);
	cr_assert_gt(enc.len, 3);
	/* the naive oracle: float sums in token order, / n, to float16 */
	tab = m->table;
	for (int i = 0; i < d; i++) {
		float s = 0;
		for (size_t t = 0; t < enc.len; t++)
			s += emb_static_h2f(tab[(size_t)enc.ids[t] * (size_t)d + (size_t)i]);
		a[i] = emb_static_h2f(emb_static_d2h(s / (float)enc.len));
	}
	emb_static_mean(b, m, enc.ids, enc.len);
	cr_expect_eq(memcmp(a, b, sizeof(a)), 0, "the table's mean");
	/* the general path (rows given) agrees bit for bit */
	rows = malloc(enc.len * (size_t)d * sizeof(float));
	emb_static_rows(rows, m, enc.ids, enc.len);
	emb_static_mean_rows(a, m, rows, enc.len);
	cr_expect_eq(memcmp(a, b, sizeof(a)), 0, "the rows' mean");
	emb_static_mean(a, m, enc.ids, 0);
	cr_expect_eq(a[0], 0.0f);
	cr_expect_eq(a[63], 0.0f);
	free(rows);
	emb_encoding_release(&enc);
	emb_static_free(m);
	free(dir);
}

Test(static, embedder)
{
	emb_embedder *e;
	emb_static *m;
	emb_encoding enc;
	emb_err err = { "" };
	char msg[512], *dir = model();
	const char *texts[] = { "hello world", "" };
	float v[2 * 64], w[64];

	cr_assert_eq(emb_embedder_load(&e, dir, NULL, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(emb_embedder_dim(e), 64);
	cr_assert_eq(emb_embed(e, v, texts, NULL, 2, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(emb_static_load(&m, dir, &err), 0);
	emb_encoding_init(&enc);
	cr_assert_eq(emb_static_tokenize(&enc, m, "hello world", 11, 512, &err), 0);
	emb_static_mean(w, m, enc.ids, enc.len);
	emb_static_normalize(w, m, 64);
	cr_expect_eq(memcmp(v, w, sizeof(w)), 0, "emb_embed as emb-encode --pool");
	cr_expect_eq(v[64], 0.0f, "a text without tokens: zeros");
	emb_encoding_release(&enc);
	emb_static_free(m);
	emb_embedder_free(e);
	free(dir);
}
