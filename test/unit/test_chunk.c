/* test_chunk.c - windows over long documents (tok/chunk.c) and late
 * chunking's pooling (st/chunk.c) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"

/* the semantics as written: start at 0, step W-K, stop at the first
 * window whose end reaches L; one window when L <= W.  -> n windows */
static size_t ref_windows(size_t *s, size_t *e, size_t cap, size_t L,
                          size_t W, size_t K)
{
	size_t n = 0, a = 0;

	if (L <= W) {
		s[0] = 0;
		e[0] = L;
		return 1;
	}
	for (;;) {
		size_t b = a + W < L ? a + W : L;
		cr_assert_lt(n, cap);
		s[n] = a;
		e[n] = b;
		n++;
		if (b == L)
			return n;
		a += W - K;
	}
}

static void expect_windows(size_t L, size_t W, size_t K, size_t n,
                           const size_t *ws, const size_t *we)
{
	size_t j, s, e;

	cr_assert_eq(emb_chunk_count(L, W, K), n, "L=%zu W=%zu K=%zu: %zu windows",
	             L, W, K, emb_chunk_count(L, W, K));
	for (j = 0; j < n; j++) {
		emb_chunk_window(&s, &e, j, L, W, K);
		cr_expect_eq(s, ws[j], "L=%zu W=%zu K=%zu window %zu start %zu",
		             L, W, K, j, s);
		cr_expect_eq(e, we[j], "L=%zu W=%zu K=%zu window %zu end %zu",
		             L, W, K, j, e);
	}
}

Test(chunk, shorter_than_a_window)
{
	size_t s[] = { 0 }, e[] = { 5 };
	expect_windows(5, 8, 2, 1, s, e);
}

Test(chunk, exactly_one_window)
{
	size_t s[] = { 0 }, e[] = { 8 };
	expect_windows(8, 8, 0, 1, s, e);
	expect_windows(8, 8, 7, 1, s, e);
}

Test(chunk, one_past_a_window)
{
	size_t s[] = { 0, 6 }, e[] = { 8, 9 };
	expect_windows(9, 8, 2, 2, s, e);
}

Test(chunk, no_overlap)
{
	size_t s[] = { 0, 4, 8 }, e[] = { 4, 8, 10 };
	expect_windows(10, 4, 0, 3, s, e);
	/* the last window ends exactly at L: no empty window after it */
	size_t s2[] = { 0, 4 }, e2[] = { 4, 8 };
	expect_windows(8, 4, 0, 2, s2, e2);
}

Test(chunk, overlap_w_minus_one)
{
	/* stride 1: L - W + 1 windows */
	size_t s[] = { 0, 1, 2, 3 }, e[] = { 4, 5, 6, 7 };
	expect_windows(7, 4, 3, 4, s, e);
}

Test(chunk, one_token)
{
	size_t s[] = { 0 }, e[] = { 1 };
	expect_windows(1, 1, 0, 1, s, e);
	expect_windows(1, 64, 16, 1, s, e);
	/* W = 1: one window per token */
	size_t s3[] = { 0, 1, 2 }, e3[] = { 1, 2, 3 };
	expect_windows(3, 1, 0, 3, s3, e3);
}

Test(chunk, empty_document)
{
	size_t s[] = { 0 }, e[] = { 0 };
	expect_windows(0, 4, 1, 1, s, e);
}

Test(chunk, matches_the_reference_everywhere)
{
	size_t rs[256], re[256], L, W, K, j, s, e;

	for (L = 0; L <= 70; L++)
		for (W = 1; W <= 12; W++)
			for (K = 0; K < W; K++) {
				size_t n = ref_windows(rs, re, 256, L, W, K);
				cr_assert_eq(emb_chunk_count(L, W, K), n,
				             "L=%zu W=%zu K=%zu", L, W, K);
				for (j = 0; j < n; j++) {
					emb_chunk_window(&s, &e, j, L, W, K);
					cr_assert(s == rs[j] && e == re[j],
					          "L=%zu W=%zu K=%zu j=%zu: [%zu,%zu) want [%zu,%zu)",
					          L, W, K, j, s, e, rs[j], re[j]);
					cr_assert(e - s <= W && e <= L);
				}
			}
}

Test(chunk, bad_sizes)
{
	emb_err err;

	cr_expect_eq(emb_chunk_check(1, 0, &err), 0);
	cr_expect_eq(emb_chunk_check(64, 63, &err), 0);
	cr_expect_eq(emb_chunk_check(0, 0, &err), -1);
	cr_expect(strstr(err.msg, "--chunk") != NULL, "%s", err.msg);
	cr_expect_eq(emb_chunk_check(-3, 0, &err), -1);
	cr_expect_eq(emb_chunk_check(8, 8, &err), -1);
	cr_expect(strstr(err.msg, "--overlap") != NULL, "%s", err.msg);
	cr_expect_eq(emb_chunk_check(8, 9, &err), -1);
	cr_expect_eq(emb_chunk_check(8, -1, &err), -1);
	cr_expect_eq(emb_chunk_count(5, 4, 4), 0);
	cr_expect_eq(emb_chunk_count(5, 0, 0), 0);
}

/* ------------------------------------------------------------------ */
/* layouts of real encodings                                           */

static emb_tokenizer *load(const char *name)
{
	char dir[4096];
	const char *top = getenv("EMB_TOP");
	emb_tokenizer *tok = NULL;
	emb_err err = {{0}};

	snprintf(dir, sizeof(dir), "%s/test/data/models/%s",
	         top && *top ? top : ".", name);
	cr_assert_eq(emb_tokenizer_load(&tok, dir, &err), 0, "%s: %s", dir,
	             err.msg);
	return tok;
}

static void encode(emb_encoding *enc, const emb_tokenizer *tok,
                   const char *s)
{
	emb_tok_opts o = { 0, 0 };
	emb_err err = {{0}};

	cr_assert_eq(emb_tokenize(enc, tok, s, strlen(s), NULL, 0, &o, &err), 0,
	             "%s", err.msg);
}

Test(chunk, layout_prefix_and_suffix)
{
	emb_tokenizer *tok = load("sentence-transformers--all-MiniLM-L6-v2");
	emb_encoding enc, win;
	emb_chunk_layout lay;
	emb_err err;
	size_t span[2];

	emb_encoding_init(&enc);
	emb_encoding_init(&win);
	/* [CLS] hello world again [SEP] */
	encode(&enc, tok, "hello world again");
	cr_assert_eq(emb_chunk_layout_of(&lay, &enc, 0, &err), 0, "%s", err.msg);
	cr_expect_eq(lay.lead, 1);
	cr_expect_eq(lay.len, 3);
	cr_expect_eq(lay.trail, 1);
	cr_assert_eq(emb_chunk_encoding(&win, &enc, &lay, 1, 3, 0, &err), 0);
	cr_assert_eq(win.len, 4);
	cr_expect_eq(win.ids[0], enc.ids[0]);
	cr_expect_eq(win.ids[1], enc.ids[2]);
	cr_expect_eq(win.ids[2], enc.ids[3]);
	cr_expect_eq(win.ids[3], enc.ids[4]);
	cr_expect(win.special[0] && win.special[3] && !win.special[1]);
	emb_chunk_span(span, &enc, &lay, 1, 3, 0);
	cr_expect(span[0] == 6 && span[1] == 17, "[%zu,%zu)", span[0], span[1]);
	/* the empty text: one window of the specials alone */
	encode(&enc, tok, "");
	cr_assert_eq(emb_chunk_layout_of(&lay, &enc, 0, &err), 0);
	cr_expect_eq(lay.len, 0);
	cr_expect_eq(emb_chunk_count(lay.len, 4, 1), 1);
	cr_assert_eq(emb_chunk_encoding(&win, &enc, &lay, 0, 0, 0, &err), 0);
	cr_expect_eq(win.len, 2);
	emb_chunk_span(span, &enc, &lay, 0, 0, 0);
	cr_expect(span[0] == 0 && span[1] == 0);
	cr_expect_eq(emb_chunk_encoding(&win, &enc, &lay, 0, 1, 0, &err), -1);
	emb_encoding_release(&enc);
	emb_encoding_release(&win);
	emb_tokenizer_free(tok);
}

Test(chunk, layout_prompt)
{
	emb_tokenizer *tok = load("sentence-transformers--all-distilroberta-v1");
	emb_encoding enc, win;
	emb_chunk_layout lay;
	emb_err err;
	size_t span[2];

	emb_encoding_init(&enc);
	emb_encoding_init(&win);
	/* <s> query : Ġhello Ġworld </s>: the space before "hello" goes
	 * with the text's token, which straddles the prompt's end */
	encode(&enc, tok, "query: hello world");
	cr_assert_eq(emb_chunk_layout_of(&lay, &enc, 7, &err), 0, "%s", err.msg);
	cr_expect_eq(lay.lead, 3);
	cr_expect_eq(lay.len, 2);
	cr_expect_eq(lay.trail, 1);
	cr_assert_eq(emb_chunk_encoding(&win, &enc, &lay, 1, 2, 7, &err), 0);
	cr_assert_eq(win.len, 5);
	/* every window starts with the prompt's tokens */
	cr_expect(win.ids[1] == enc.ids[1] && win.ids[2] == enc.ids[2]);
	cr_expect_eq(win.ids[3], enc.ids[4]);
	/* offsets and span in code points of the text, not the prompt's */
	cr_expect_eq(win.offsets[2 * 3], 6);
	cr_expect_eq(win.offsets[2 * 3 + 1], 11);
	emb_chunk_span(span, &enc, &lay, 0, 2, 7);
	cr_expect(span[0] == 0 && span[1] == 11, "[%zu,%zu)", span[0], span[1]);
	emb_encoding_release(&enc);
	emb_encoding_release(&win);
	emb_tokenizer_free(tok);
}

Test(chunk, layout_without_specials)
{
	emb_tokenizer *tok = load("sentence-transformers--all-MiniLM-L6-v2");
	emb_encoding enc;
	emb_chunk_layout lay;
	emb_tok_opts o = { 0, 1 };
	emb_err err;

	emb_encoding_init(&enc);
	cr_assert_eq(emb_tokenize(&enc, tok, "a b c", 5, NULL, 0, &o, &err), 0);
	cr_assert_eq(emb_chunk_layout_of(&lay, &enc, 0, &err), 0);
	cr_expect(lay.lead == 0 && lay.len == 3 && lay.trail == 0);
	/* a special token inside the content cannot be cut around */
	enc.special[1] = 1;
	cr_expect_eq(emb_chunk_layout_of(&lay, &enc, 0, &err), -1);
	emb_encoding_release(&enc);
	emb_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ */
/* late chunking's pooling                                             */

/* tok (4, 3) */
static const float T[4][3] = {
	{ 1.0f, -2.0f, 0.5f },
	{ 3.0f, 0.0f, -1.0f },
	{ -1.0f, 4.0f, 2.0f },
	{ 0.25f, 1.0f, -3.0f },
};

/* one window [start, end) of tok (n, d): emb_chunk_pool_windows of one */
static int pool1(float **out, int *outn, const float *tok, int n, int d,
                 size_t start, size_t end, const emb_dense *dense,
                 size_t n_dense, int normalize, emb_err *err)
{
	return emb_chunk_pool_windows(out, outn, tok, n, d, &start, &end, 1,
	                              dense, n_dense, normalize, err);
}

Test(chunk, pool_mean_of_the_window)
{
	float *v;
	int n;
	emb_err err;

	cr_assert_eq(pool1(&v, &n, &T[0][0], 4, 3, 1, 3, NULL, 0, 0,
	                            &err), 0, "%s", err.msg);
	cr_assert_eq(n, 3);
	cr_expect_float_eq(v[0], 1.0f, 1e-7);
	cr_expect_float_eq(v[1], 2.0f, 1e-7);
	cr_expect_float_eq(v[2], 0.5f, 1e-7);
	free(v);
	cr_assert_eq(pool1(&v, &n, &T[0][0], 4, 3, 3, 4, NULL, 0, 1,
	                            &err), 0);
	double norm = sqrt(0.25 * 0.25 + 1 + 9);
	cr_expect_float_eq(v[0], (float)(0.25 / norm), 1e-6);
	cr_expect_float_eq(v[2], (float)(-3 / norm), 1e-6);
	free(v);
	cr_expect_eq(pool1(&v, &n, &T[0][0], 4, 3, 2, 2, NULL, 0, 0,
	                            &err), -1);
	cr_expect_eq(pool1(&v, &n, &T[0][0], 4, 3, 3, 5, NULL, 0, 0,
	                            &err), -1);
}

Test(chunk, pool_dense)
{
	/* W (2, 3), b (2), tanh */
	float w0[6] = { 1, 0, 0, 0, 1, 1 }, b[2] = { 0.5f, -1 };
	float *w = malloc(sizeof(w0));
	emb_dense d = { 3, 2, 1, w, b, NULL };
	float *v;
	int n;
	emb_err err;

	cr_assert(w != NULL);
	memcpy(w, w0, sizeof(w0));
	cr_assert_eq(emb_dense_pack(&d, 1, &err), 0, "%s", err.msg);

	cr_expect_eq(emb_chunk_pool_dim(3, &d, 1), 2);
	cr_expect_eq(emb_chunk_pool_dim(3, NULL, 0), 3);
	cr_assert_eq(pool1(&v, &n, &T[0][0], 4, 3, 0, 2, &d, 1, 0,
	                            &err), 0, "%s", err.msg);
	cr_assert_eq(n, 2);
	/* mean of rows 0, 1: (2, -1, -0.25) */
	cr_expect_float_eq(v[0], tanhf(2.5f), 1e-6);
	cr_expect_float_eq(v[1], tanhf(-2.25f), 1e-6);
	free(v);
	/* three windows at once: each row the bits of its window alone */
	{
		size_t st[3] = { 0, 1, 2 }, en[3] = { 2, 4, 3 };
		float *all;
		int na;
		cr_assert_eq(emb_chunk_pool_windows(&all, &na, &T[0][0], 4, 3, st,
		                                    en, 3, &d, 1, 1, &err), 0,
		             "%s", err.msg);
		cr_assert_eq(na, 2);
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(pool1(&v, &n, &T[0][0], 4, 3, st[i], en[i], &d, 1,
			                   1, &err), 0, "%s", err.msg);
			cr_expect_eq(memcmp(v, all + 2 * i, 2 * sizeof(float)), 0,
			             "window %d", i);
			free(v);
		}
		free(all);
		/* one bad window refuses them all */
		en[1] = 5;
		cr_expect_eq(emb_chunk_pool_windows(&all, &na, &T[0][0], 4, 3, st,
		                                    en, 3, &d, 1, 1, &err), -1);
		cr_expect(strstr(err.msg, "[1, 5)") != NULL, "%s", err.msg);
	}
	d.in = 4;
	cr_expect_eq(pool1(&v, &n, &T[0][0], 4, 3, 0, 2, &d, 1, 0,
	                            &err), -1);
	free(d.wp);
}
