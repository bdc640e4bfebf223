/*
 * test_heads.c - model heads (cross-encoder logits, SPLADE), ranking,
 * MaxSim and vector quantization.
 *
 * 1. ce-minilm-l6 (BertForSequenceClassification) logits within 1e-4 of
 *    every golden; batched and one at a time bitwise identical.
 * 2. splade-tiny (BertForMaskedLM, tied decoder): the SPLADE vector has
 *    exactly the golden's nonzero index set, values within 1e-4.
 * 3. emb_maxsim against a brute-force similarity matrix on random data.
 * 4. Vector quantization: exactly sentence-transformers' outputs
 *    (golden.vq.jsonl with vq.ranges.json); saturation; ranges.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tool/emb-tool.h"
#include "testutil.h"
#include "kern/qkernels.h"


/* the JSON lines of a test/data file */
static json_t **read_jsonl(const char *rel, size_t *n)
{
	char *path = tu_path("%s/test/data/%s", tu_top(), rel);
	char *text = tu_slurp(path, NULL), *line, *save = NULL;
	json_t **v = NULL;
	size_t cap = 0;

	cr_assert(text, "cannot read %s", path);
	*n = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		if (*n == cap)
			cr_assert(v = realloc(v, (cap = cap * 2 + 64) * sizeof(*v)));
		cr_assert(v[*n] = json_loads(line, 0, &je), "%s: %s", path, je.text);
		(*n)++;
	}
	free(text);
	free(path);
	return v;
}

static int32_t *ints_of(const json_t *a, int *n)
{
	int32_t *v = malloc((json_array_size(a) + 1) * sizeof(int32_t));
	size_t i;
	json_t *x;

	cr_assert(v && json_is_array(a));
	json_array_foreach(a, i, x)
		v[i] = (int32_t)json_integer_value(x);
	*n = (int)json_array_size(a);
	return v;
}

static void free_lines(json_t **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(v[i]);
	free(v);
}

Test(heads, cross_encoder_logits)
{
	char *dir = tu_fixture("ce-minilm-l6");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 2 };
	size_t n;
	json_t **g = read_jsonl("fixtures/ce-minilm-l6/golden.jsonl", &n);
	emb_seq *seqs = calloc(n, sizeof(*seqs));
	float *all, one[8];
	double worst = 0;
	int L;

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_head(m), EMB_HEAD_CLASSIFIER);
	L = emb_model_num_labels(m);
	cr_assert_eq(L, 1);
	cr_assert_str_eq(emb_model_label(m, 0), "LABEL_0");
	cr_assert_null(emb_model_label(m, 1));
	cr_assert_eq(emb_model_out_width(m, EMB_OUT_LOGITS), 1);
	cr_assert(n >= 100 && seqs);
	for (size_t i = 0; i < n; i++) {
		int len, tl;
		seqs[i].ids = ints_of(json_object_get(g[i], "input_ids"), &len);
		seqs[i].type_ids = ints_of(json_object_get(g[i], "token_type_ids"), &tl);
		seqs[i].len = len;
		cr_assert_eq(len, tl);
	}
	cr_assert(all = malloc(n * sizeof(float)));
	/* in batches of 7 */
	for (size_t s = 0; s < n; s += 7) {
		int k = n - s < 7 ? (int)(n - s) : 7;
		cr_assert_eq(emb_model_forward_head(m, all + s, EMB_OUT_LOGITS,
		                                    seqs + s, k, &err), 0, "%s", err.msg);
	}
	for (size_t i = 0; i < n; i++) {
		double want = json_number_value(json_array_get(
			json_object_get(g[i], "logits"), 0));
		double d = fabs(all[i] - want);
		if (d > worst)
			worst = d;
		cr_expect_leq(d, 1e-4, "record %zu: logit %g, golden %g", i,
		              all[i], want);
		if (i % 17 == 0) {
			cr_assert_eq(emb_model_forward_head(m, one, EMB_OUT_LOGITS,
			                                    seqs + i, 1, &err), 0);
			cr_expect_eq(memcmp(one, all + i, sizeof(float)), 0,
			             "record %zu: batched differs from single", i);
		}
	}
	cr_log_info("cross-encoder: max abs diff %.3g over %zu records", worst, n);
	/* a classifier has no masked-LM head */
	cr_assert_eq(emb_model_forward_head(m, all, EMB_OUT_SPLADE, seqs, 1,
	                                    &err), -1);
	cr_assert(strstr(err.msg, "masked-LM"), "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		free((void *)seqs[i].ids);
		free((void *)seqs[i].type_ids);
	}
	free(seqs);
	free(all);
	emb_model_free(m);
	free_lines(g, n);
	free(dir);
}

Test(heads, splade_sparse)
{
	char *dir = tu_fixture("splade-tiny");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 2 };
	size_t n;
	json_t **g = read_jsonl("fixtures/splade-tiny/golden.jsonl", &n);
	float *w;
	int V;
	double worst = 0;

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_head(m), EMB_HEAD_MLM);
	cr_assert_eq(emb_model_num_labels(m), 0);
	V = emb_model_vocab_size(m);
	cr_assert_eq(emb_model_out_width(m, EMB_OUT_SPLADE), (size_t)V);
	cr_assert(w = malloc(2 * (size_t)V * sizeof(float)));
	for (size_t i = 0; i < n; i += (i < 40 ? 1 : 3)) {
		int len;
		emb_seq s[2];
		const json_t *sp = json_object_get(g[i], "sparse");
		const char *key;
		json_t *val;
		size_t nz = 0;
		s[0].ids = ints_of(json_object_get(g[i], "input_ids"), &len);
		s[0].type_ids = NULL;
		s[0].len = len;
		s[1] = s[0];
		/* two copies in one batch: both rows must be equal */
		cr_assert_eq(emb_model_forward_head(m, w, EMB_OUT_SPLADE, s, 2,
		                                    &err), 0, "%s", err.msg);
		cr_expect_eq(memcmp(w, w + V, (size_t)V * sizeof(float)), 0);
		for (int v = 0; v < V; v++)
			nz += w[v] != 0;
		cr_expect_eq(nz, json_object_size(sp), "record %zu: %zu nonzeros, "
		             "golden %zu", i, nz, json_object_size(sp));
		json_object_foreach((json_t *)sp, key, val) {
			int id = atoi(key);
			double d;
			cr_assert(id >= 0 && id < V);
			cr_expect_neq(w[id], 0, "record %zu: index %d missing", i, id);
			d = fabs(w[id] - json_number_value(val));
			if (d > worst)
				worst = d;
			cr_expect_leq(d, 1e-4, "record %zu index %d: %g vs %g", i, id,
			              w[id], json_number_value(val));
		}
		free((void *)s[0].ids);
	}
	cr_log_info("splade: max abs diff %.3g", worst);
	/* no classifier on a masked-LM */
	cr_assert_eq(emb_model_forward_head(m, w, EMB_OUT_LOGITS, NULL, 0, &err), -1);
	free(w);
	emb_model_free(m);
	free_lines(g, n);
	free(dir);
}

Test(heads, base_model_has_no_head)
{
	char *dir = tu_fixture("minilm-l6");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 1 };
	int32_t ids[3] = { 101, 1037, 102 };
	emb_seq s = { ids, NULL, 3 };
	float out[4];

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_head(m), EMB_HEAD_NONE);
	cr_assert_eq(emb_model_forward_head(m, out, EMB_OUT_LOGITS, &s, 1, &err), -1);
	cr_assert(strstr(err.msg, "no head"), "%s", err.msg);
	cr_assert_eq(emb_model_forward_head(m, out, 99, &s, 1, &err), -1);
	emb_model_free(m);
	free(dir);
}

static uint64_t rng_state = 88172645463325252ull;

static float frand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

/* the definition, literally: normalize copies, full matrix, max, sum */
static double maxsim_brute(const float *q, int nq, const float *d, int nd,
                           int dim)
{
	double *qn = malloc((size_t)nq * dim * sizeof(double));
	double *dn = malloc((size_t)nd * dim * sizeof(double));
	double *sim = malloc((size_t)nq * nd * sizeof(double) + 8), total = 0;

	for (int pass = 0; pass < 2; pass++) {
		const float *x = pass ? d : q;
		double *y = pass ? dn : qn;
		int rows = pass ? nd : nq;
		for (int r = 0; r < rows; r++) {
			double ss = 0;
			for (int k = 0; k < dim; k++)
				ss += (double)x[r * dim + k] * x[r * dim + k];
			ss = fmax(sqrt(ss), 1e-12);
			for (int k = 0; k < dim; k++)
				y[r * dim + k] = x[r * dim + k] / ss;
		}
	}
	for (int i = 0; i < nq; i++)
		for (int j = 0; j < nd; j++) {
			double s = 0;
			for (int k = 0; k < dim; k++)
				s += qn[i * dim + k] * dn[j * dim + k];
			sim[i * nd + j] = s;
		}
	for (int i = 0; i < nq && nd > 0; i++) {
		double best = sim[i * nd];
		for (int j = 1; j < nd; j++)
			best = fmax(best, sim[i * nd + j]);
		total += best;
	}
	free(qn); free(dn); free(sim);
	return total;
}

Test(heads, maxsim_brute_force)
{
	for (int t = 0; t < 60; t++) {
		int nq = 1 + t % 9, nd = 1 + (t * 7) % 23, dim = 1 + (t * 13) % 70;
		float *q = malloc((size_t)nq * dim * sizeof(float));
		float *d = malloc((size_t)nd * dim * sizeof(float));
		double got, want;
		for (int i = 0; i < nq * dim; i++)
			q[i] = frand();
		for (int i = 0; i < nd * dim; i++)
			d[i] = frand() * (1 + t);
		if (t % 5 == 0)     /* a zero row: cosine 0 */
			memset(d, 0, (size_t)dim * sizeof(float));
		got = emb_maxsim(q, nq, d, nd, dim);
		want = maxsim_brute(q, nq, d, nd, dim);
		cr_expect(fabs(got - want) <= 1e-9 * (1 + fabs(want)),
		          "case %d (%dx%d, dim %d): %.12g vs %.12g", t, nq, nd, dim,
		          got, want);
		/* a document equal to the query scores nq (every cos 1) */
		if (t % 5)
			cr_expect(fabs(emb_maxsim(q, nq, q, nq, dim) - nq) < 1e-6);
		free(q);
		free(d);
	}
	cr_expect_eq(emb_maxsim(NULL, 0, NULL, 0, 4), 0);
}

Test(heads, rank_and_activation)
{
	float s[6] = { 0.5f, 2.0f, NAN, 2.0f, -1.0f, 0.75f };
	int order[6], want[6] = { 1, 3, 5, 0, 4, 2 };
	float v[3] = { 1, 2, 3 }, sig[2] = { 0, 1 };

	emb_rank_order(order, s, 6);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(order[i], want[i], "rank %d: %d", i, order[i]);
	/* many ties: non-increasing, ties by index, a permutation */
	{
		enum { N = 301 };
		float r[N];
		int o[N], seen[N] = { 0 };
		for (int i = 0; i < N; i++)
			r[i] = (float)(int)(frand() * 8);
		emb_rank_order(o, r, N);
		for (int i = 0; i < N; i++) {
			cr_assert(o[i] >= 0 && o[i] < N && !seen[o[i]]);
			seen[o[i]] = 1;
			if (i)
				cr_expect(r[o[i - 1]] > r[o[i]] ||
				          (r[o[i - 1]] == r[o[i]] && o[i - 1] < o[i]),
				          "positions %d, %d", i - 1, i);
		}
	}
	cr_assert_eq(emb_activation_parse("torch.nn.modules.activation.Sigmoid"),
	             EMB_ACTIVATION_SIGMOID);
	cr_assert_eq(emb_activation_parse("torch.nn.modules.linear.Identity"),
	             EMB_ACTIVATION_NONE);
	cr_assert_eq(emb_activation_parse("softmax"), EMB_ACTIVATION_SOFTMAX);
	cr_assert_eq(emb_activation_parse("torch.nn.modules.activation.Mish"), -1);
	emb_activation_apply(v, 3, EMB_ACTIVATION_SOFTMAX);
	cr_expect(fabsf(v[0] + v[1] + v[2] - 1) < 1e-6f);
	cr_expect(v[2] > v[1] && v[1] > v[0]);
	cr_expect(fabsf(v[0] - 0.09003057f) < 1e-6f);
	emb_activation_apply(sig, 2, EMB_ACTIVATION_SIGMOID);
	cr_expect_eq(sig[0], 0.5f);
	cr_expect(fabsf(sig[1] - 0.7310586f) < 1e-6f);
}

/* the first line of FILE in case dir CASE (new) or NULL */
static char *case_file(const char *cdir, const char *name)
{
	char *p = tu_path("%s/%s", cdir, name);
	char *s = tu_slurp(p, NULL);

	free(p);
	if (s)
		s[strcspn(s, "\n")] = 0;
	return s;
}

/*
 * Every case of test/data/ce-activation: a config.json (architectures,
 * the case's members) and config_sentence_transformers.json in a fresh
 * directory; emb_activation_default must give the case's "expect".
 */
Test(heads, activation_default_cases)
{
	static const char *const cases[] = {
		"none-1label", "none-3labels", "st-json", "st-config", "legacy",
		"legacy-3labels", "legacy-softmax", "st-before-legacy",
		"st-null-skips-legacy", "st-json-first", "st-json-null",
		"untrusted-path", "unsupported",
	};
	char *dir = tu_path("%s/test/tmp/units/ce-activation", tu_top());

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cdir = tu_path("%s/test/data/ce-activation/%s", tu_top(),
		                     cases[i]);
		char *labels = case_file(cdir, "labels");
		char *expect = case_file(cdir, "expect");
		char *members = case_file(cdir, "config.members");
		char *stj = tu_path("%s/config_sentence_transformers.json", cdir);
		char *stcfg = tu_slurp(stj, NULL);
		char *p;
		FILE *f;
		emb_err err = { "" };
		int act = -7, rc;

		cr_assert(labels && expect, "%s: labels and expect", cases[i]);
		tu_rm_rf(dir);
		p = tu_path("%s/test/tmp", tu_top());
		mkdir(p, 0777);
		free(p);
		p = tu_path("%s/test/tmp/units", tu_top());
		mkdir(p, 0777);
		free(p);
		cr_assert_eq(mkdir(dir, 0777), 0, "%s: %s", dir, strerror(errno));
		p = tu_path("%s/config.json", dir);
		cr_assert(f = fopen(p, "w"));
		fprintf(f, "{%s%s\"architectures\": [\"BertForSequenceClassification\"]}\n",
		        members ? members : "", members ? ", " : "");
		fclose(f);
		free(p);
		if (stcfg) {
			p = tu_path("%s/config_sentence_transformers.json", dir);
			cr_assert(f = fopen(p, "w"));
			fputs(stcfg, f);
			fclose(f);
			free(p);
		}
		rc = emb_activation_default(&act, dir, atoi(labels), &err);
		if (!strcmp(expect, "error")) {
			cr_expect_eq(rc, -1, "%s: want an error", cases[i]);
			cr_expect(strstr(err.msg, "config.json") != NULL, "%s: %s",
			          cases[i], err.msg);
		} else {
			cr_expect_eq(rc, 0, "%s: %s", cases[i], err.msg);
			cr_expect_eq(act, emb_activation_parse(expect),
			             "%s: got %s, want %s", cases[i],
			             emb_activation_name(act), expect);
		}
		free(labels);
		free(expect);
		free(members);
		free(stj);
		free(stcfg);
		free(cdir);
	}
	tu_rm_rf(dir);
	free(dir);
}

/* vq.ranges.json -> mins, maxs (dim) */
static int read_ranges(float **mins, float **maxs)
{
	char *path = tu_path("%s/test/data/fixtures/minilm-l6/vq.ranges.json", tu_top());
	json_error_t je;
	json_t *r = json_load_file(path, 0, &je), *a, *b;
	int dim;

	cr_assert(r, "%s: %s", path, je.text);
	a = json_array_get(json_object_get(r, "ranges"), 0);
	b = json_array_get(json_object_get(r, "ranges"), 1);
	dim = (int)json_array_size(a);
	cr_assert(dim > 0 && json_array_size(b) == (size_t)dim);
	*mins = malloc((size_t)dim * sizeof(float));
	*maxs = malloc((size_t)dim * sizeof(float));
	for (int i = 0; i < dim; i++) {
		(*mins)[i] = (float)json_number_value(json_array_get(a, (size_t)i));
		(*maxs)[i] = (float)json_number_value(json_array_get(b, (size_t)i));
	}
	json_decref(r);
	free(path);
	return dim;
}

Test(quant, sentence_transformers_golden)
{
	float *mins, *maxs, *rmin, *rmax;
	int dim = read_ranges(&mins, &maxs);
	size_t n, checked = 0;
	json_t **g = read_jsonl("fixtures/minilm-l6/golden.vq.jsonl", &n);
	float *v = malloc((size_t)dim * sizeof(float));
	int32_t *q = malloc((size_t)dim * sizeof(int32_t));

	cr_assert(n >= 100);
	rmin = malloc((size_t)dim * sizeof(float));
	rmax = malloc((size_t)dim * sizeof(float));
	emb_vq_ranges_init(rmin, rmax, dim);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_object_get(g[i], "embedding");
		cr_assert_eq(json_array_size(e), (size_t)dim);
		for (int k = 0; k < dim; k++)
			v[k] = (float)json_number_value(json_array_get(e, (size_t)k));
		emb_vq_ranges_add(rmin, rmax, v, dim);
		for (int kind = EMB_VQ_INT8; kind <= EMB_VQ_UBINARY; kind++) {
			const json_t *want = json_object_get(g[i], emb_vq_name(kind));
			size_t w = emb_vq_width(kind, dim);
			cr_assert_eq(json_array_size(want), w, "%s width",
			             emb_vq_name(kind));
			cr_expect_eq(emb_vq_quantize(q, kind, v, dim, mins, maxs), 0,
			             "record %zu: in-range values saturated", i);
			for (size_t k = 0; k < w; k++)
				cr_expect_eq(q[k], json_integer_value(json_array_get(want, k)),
				             "record %zu %s[%zu]: %d vs %lld", i,
				             emb_vq_name(kind), k, q[k],
				             (long long)json_integer_value(json_array_get(want, k)));
			checked++;
		}
	}
	cr_assert_eq(checked, 4 * n);
	/* the ranges are the per-dimension min/max of these rows */
	cr_expect_eq(memcmp(rmin, mins, (size_t)dim * sizeof(float)), 0);
	cr_expect_eq(memcmp(rmax, maxs, (size_t)dim * sizeof(float)), 0);
	free(v); free(q); free(mins); free(maxs); free(rmin); free(rmax);
	free_lines(g, n);
}

Test(quant, saturation_and_unpacking)
{
	float mins[4] = { -1, -1, 0, 2 }, maxs[4] = { 1, 1, 1, 2 };
	float v[4] = { 5, -7, 0.5f, 2 }, back[10];
	int32_t q[4];

	/* over max -> top, under min -> bottom, min == max -> NaN -> bottom */
	cr_assert_eq(emb_vq_quantize(q, EMB_VQ_UINT8, v, 4, mins, maxs), 3);
	cr_expect_eq(q[0], 255);
	cr_expect_eq(q[1], 0);
	cr_expect_eq(q[2], 127);    /* 0.5 / (1/255) = 127.5 -> 127 */
	cr_expect_eq(q[3], 0);
	cr_assert_eq(emb_vq_quantize(q, EMB_VQ_INT8, v, 4, mins, maxs), 3);
	cr_expect_eq(q[0], 127);
	cr_expect_eq(q[1], -128);
	cr_expect_eq(q[2], 0);      /* 127.5 - 128 = -0.5 -> 0 (toward zero) */
	/* packbits: first value in the high bit, zero padding */
	{
		float b[10] = { 1, -1, 0, 2, -3, 4, 5, 0.1f, 0, 9 };
		int32_t p[2];
		cr_assert_eq(emb_vq_width(EMB_VQ_UBINARY, 10), 2);
		emb_vq_quantize(p, EMB_VQ_UBINARY, b, 10, NULL, NULL);
		cr_expect_eq(p[0], 0x97);
		cr_expect_eq(p[1], 0x40);
		emb_vq_quantize(p, EMB_VQ_BINARY, b, 10, NULL, NULL);
		cr_expect_eq(p[0], 0x97 - 128);
		cr_expect_eq(p[1], 0x40 - 128);
		emb_vq_dequantize(back, EMB_VQ_BINARY, p, 10, NULL, NULL);
		for (int i = 0; i < 10; i++)
			cr_expect_eq(back[i], b[i] > 0 ? 1.0f : -1.0f, "bit %d", i);
	}
	emb_vq_quantize(q, EMB_VQ_UINT8, v, 3, mins, maxs);
	emb_vq_dequantize(back, EMB_VQ_UINT8, q, 3, mins, maxs);
	cr_expect(fabsf(back[2] - 0.5f) < 1.0f / 255);
	cr_assert_eq(emb_vq_parse("int8"), EMB_VQ_INT8);
	cr_assert_eq(emb_vq_parse("float"), 0);
}

/* the int8 GEMM: exact integer sums, scalar == VNNI bit for bit, and
 * close to the float product of the dequantized operands */
Test(quant, int8_gemm_kernels)
{
	emb_gemm_i8_fn vnni = emb_gemm_i8_vnni();
	emb_gemm_i8_fn avx = emb_gemm_i8_avxvnni();
	int shapes[][3] = { { 1, 1, 1 }, { 3, 17, 5 }, { 7, 33, 64 },
	                    { 5, 16, 384 }, { 9, 40, 1537 } };

	for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		int m = shapes[t][0], n = shapes[t][1], k = shapes[t][2];
		int kp = (k + 3) / 4 * 4;
		float *x = malloc((size_t)m * k * 4), *w = malloc((size_t)n * k * 4);
		float *b = malloc((size_t)n * 4), *ws = malloc((size_t)n * 4);
		float *xs = malloc((size_t)m * 4), *y1 = malloc((size_t)m * n * 4);
		float *y2 = malloc((size_t)m * n * 4);
		int8_t *q = malloc((size_t)n * k), *wp = malloc(emb_i8_pack_size(n, k));
		uint8_t *u = malloc((size_t)m * kp);
		int32_t *xz = malloc((size_t)m * 4), *wsum = malloc((size_t)n * 4);
		for (int i = 0; i < m * k; i++)
			x[i] = frand() * 3 + (i % 5 == 0 ? 1 : 0);
		for (int i = 0; i < n * k; i++)
			w[i] = frand() * 0.2f;
		for (int j = 0; j < n; j++)
			b[j] = frand();
		emb_i8_quantize_rows(q, ws, w, n, k);
		for (int j = 0; j < n; j++) {
			wsum[j] = 0;
			for (int kk = 0; kk < k; kk++) {
				cr_assert(q[(size_t)j * k + kk] >= -127 && q[(size_t)j * k + kk] <= 127);
				wsum[j] += q[(size_t)j * k + kk];
			}
		}
		emb_i8_pack(wp, q, n, k);
		emb_u8_quantize_rows(u, kp, xs, xz, x, k, m, k);
		emb_gemm_i8_scalar(y1, n, u, kp, xs, xz, wp, ws, wsum, b, m, n, kp);
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) {
				/* exact: the integer sum from the unpacked operands */
				long long acc = 0;
				double ref = 0;
				for (int kk = 0; kk < k; kk++) {
					acc += (long long)u[(size_t)i * kp + kk] * q[(size_t)j * k + kk];
					ref += (double)x[(size_t)i * k + kk] * w[(size_t)j * k + kk];
				}
				float want = xs[i] * ws[j] * (float)(acc - (long long)xz[i] * wsum[j]);
				want = want + b[j];
				cr_expect_eq(y1[(size_t)i * n + j], want, "%dx%dx%d [%d,%d]",
				             m, n, k, i, j);
				ref += b[j];
				cr_expect(fabs(y1[(size_t)i * n + j] - ref) <= 0.02 * sqrt(k) + 1e-3,
				          "%dx%dx%d [%d,%d]: %g vs float %g", m, n, k, i, j,
				          y1[(size_t)i * n + j], ref);
			}
		if (avx) {
			avx(y2, n, u, kp, xs, xz, wp, ws, wsum, b, m, n, kp);
			cr_expect_eq(memcmp(y1, y2, (size_t)m * n * 4), 0,
			             "%dx%dx%d: AVX-VNNI differs from scalar", m, n, k);
		}
		if (vnni) {
			vnni(y2, n, u, kp, xs, xz, wp, ws, wsum, b, m, n, kp);
			cr_expect_eq(memcmp(y1, y2, (size_t)m * n * 4), 0,
			             "%dx%dx%d: VNNI differs from scalar", m, n, k);
			/* a column block at a panel boundary, no bias */
			if (n > 16) {
				emb_gemm_i8_scalar(y1, n, u, kp, xs, xz, wp + 16 * kp, ws + 16,
				                   wsum + 16, NULL, m, n - 16, kp);
				vnni(y2, n, u, kp, xs, xz, wp + 16 * kp, ws + 16, wsum + 16,
				     NULL, m, n - 16, kp);
				for (int i = 0; i < m; i++)
					cr_expect_eq(memcmp(y1 + (size_t)i * n, y2 + (size_t)i * n,
					                    (size_t)(n - 16) * 4), 0);
			}
		}
		free(x); free(w); free(b); free(ws); free(xs); free(y1); free(y2);
		free(q); free(wp); free(u); free(xz); free(wsum);
	}
	if (!vnni || !avx)
		cr_log_info("VNNI kernels in this build and CPU: avx512 %s, avx %s",
		            vnni ? "yes" : "no", avx ? "yes" : "no");
}

/* prec.w8 / prec.a8 really switch the linear layers over */
Test(quant, model_paths_taken)
{
	char *dir = tu_fixture("splade-tiny");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 1 };
	int lin, w8, a8;
	const char *kern;
	int32_t ids[5] = { 101, 2023, 2003, 1037, 102 };
	emb_seq s = { ids, NULL, 5 };
	float *f = malloc(5 * 128 * 4), *g = malloc(5 * 128 * 4);
	float *h = malloc(5 * 128 * 4);

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	emb_model_quant_stats(m, &lin, &w8, &a8, &kern);
	cr_assert(lin >= 8 && w8 == 0 && a8 == 0 && !kern);
	cr_assert_eq(emb_model_forward(m, f, &s, 1, &err), 0);
	emb_model_free(m);
	o.prec.w8 = 1;
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	emb_model_quant_stats(m, &lin, &w8, &a8, &kern);
	cr_assert(w8 == lin && a8 == 0, "%d of %d int8", w8, lin);
	cr_assert_eq(emb_model_forward(m, g, &s, 1, &err), 0);
	cr_assert_neq(memcmp(f, g, 5 * 128 * 4), 0, "W8 output == fp32 output");
	emb_model_free(m);
	o.prec.a8 = 1;
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	emb_model_quant_stats(m, &lin, &w8, &a8, &kern);
	cr_assert(a8 == lin && kern, "%d of %d W8A8", a8, lin);
	cr_assert_eq(emb_model_forward(m, h, &s, 1, &err), 0);
	cr_assert_neq(memcmp(g, h, 5 * 128 * 4), 0, "W8A8 output == W8 output");
	for (int i = 0; i < 5 * 128; i++)
		cr_expect(fabsf(h[i] - f[i]) < 0.25f, "%d: %g vs %g", i, h[i], f[i]);
	emb_model_free(m);
	/* int8 activations need int8 weights */
	o.prec.w8 = 0;
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), -1);
	cr_assert(strstr(err.msg, "need int8 weights"), "%s", err.msg);
	free(f); free(g); free(h);
	free(dir);
}

/* ------------------------------------------------------------------ */
/* heads of the other families                                        */

/*
 * A classifier variant of fixture NAME: architectures ARCH, num_labels 3,
 * tensors PRE (H,H) + bias and OUT (3,H) + bias added to its recipe.
 * Checks logits == OUT act(PRE h[0]) from the weights in the file and
 * the hidden states of the same model.
 */
static void family_classifier(const char *name, const char *arch,
                              const char *pre, const char *out, int act)
{
	char *src = tu_path("%s/test/data/fixtures/%s/recipe.json", tu_top(), name);
	char *root = tu_path("%s/test/data", tu_top());
	char *dir = tu_path("%s/test/tmp/units/heads-cls-%s", tu_top(), name);
	json_error_t je;
	json_t *r = json_load_file(src, 0, &je), *cfg, *t;
	emb_err err = { "" };
	emb_model *m;
	emb_model_opts o = { .threads = 2 };
	emb_safetensors *st;
	const char *nm[4];
	char names[4][96];
	float *w[4], *h, logits[6];
	int32_t ids[2][5] = { { 5, 9, 200, 17, 7 }, { 3, 44, 8, 0, 0 } };
	emb_seq s[2] = { { ids[0], NULL, 5 }, { ids[1], NULL, 3 } };
	int H;

	cr_assert(r, "%s: %s", src, je.text);
	cfg = json_object_get(json_object_get(r, "files"), "config.json");
	H = (int)json_integer_value(json_object_get(cfg, "hidden_size"));
	if (!H)
		H = (int)json_integer_value(json_object_get(cfg, "dim"));
	json_object_set_new(cfg, "architectures", json_pack("[s]", arch));
	json_object_set_new(cfg, "id2label", json_pack("{s:s,s:s,s:s}", "0", "a",
	                                               "1", "b", "2", "c"));
	snprintf(names[0], 96, "%s.weight", pre);
	snprintf(names[1], 96, "%s.bias", pre);
	snprintf(names[2], 96, "%s.weight", out);
	snprintf(names[3], 96, "%s.bias", out);
	for (int i = 0; i < 4; i++) {
		t = json_pack("{s:s,s:[i,i],s:f,s:s}", "name", names[i], "shape",
		              i < 2 ? H : 3, H, "scale", 0.125, "dtype", "F32");
		if (i % 2)
			json_array_remove(json_object_get(t, "shape"), 1);
		json_array_append_new(json_object_get(r, "tensors"), t);
	}
	char *rec = tu_path("%s.recipe.json", dir);
	cr_assert_eq(json_dump_file(r, rec, 0), 0);
	tu_rm_rf(dir);
	cr_assert_eq(emb_synth_materialize(rec, root, dir, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_head(m), EMB_HEAD_CLASSIFIER);
	cr_assert_eq(emb_model_num_labels(m), 3);
	cr_assert_str_eq(emb_model_label(m, 2), "c");
	cr_assert_eq(emb_model_forward_head(m, logits, EMB_OUT_LOGITS, s, 2, &err),
	             0, "%s", err.msg);
	cr_assert(h = malloc(8 * (size_t)H * sizeof(float)));
	cr_assert_eq(emb_model_forward(m, h, s, 2, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_safetensors_open(&st, dir, &err), 0, "%s", err.msg);
	for (int i = 0; i < 4; i++) {
		const emb_tensor *tt = emb_safetensors_find(st, names[i]);
		nm[i] = names[i];
		cr_assert(tt, "%s", nm[i]);
		cr_assert(w[i] = malloc((size_t)tt->numel * sizeof(float)));
		cr_assert_eq(emb_tensor_to_f32(w[i], tt, &err), 0);
	}
	for (int q = 0; q < 2; q++) {
		const float *x = h + (q ? 5 : 0) * (size_t)H;
		float p[1024];
		for (int i = 0; i < H; i++) {
			double a = w[1][i];
			for (int k = 0; k < H; k++)
				a += (double)w[0][(size_t)i * H + k] * x[k];
			p[i] = act ? (a > 0 ? (float)a : 0.0f) : (float)tanh(a);
		}
		for (int l = 0; l < 3; l++) {
			double a = w[3][l];
			for (int k = 0; k < H; k++)
				a += (double)w[2][(size_t)l * H + k] * p[k];
			cr_expect(fabs(a - logits[q * 3 + l]) < 1e-4, "%s seq %d label "
			          "%d: %g vs reference %g", name, q, l, logits[q * 3 + l], a);
		}
	}
	for (int i = 0; i < 4; i++)
		free(w[i]);
	emb_safetensors_free(st);
	emb_model_free(m);
	free(h);
	tu_rm_rf(dir);
	remove(rec);
	free(rec);
	json_decref(r);
	free(src); free(root); free(dir);
}

Test(heads, distilbert_classifier)
{
	family_classifier("distilbert-tiny", "DistilBertForSequenceClassification",
	                  "pre_classifier", "classifier", 1);
}

Test(heads, roberta_classifier)
{
	family_classifier("roberta-tiny", "RobertaForSequenceClassification",
	                  "classifier.dense", "classifier.out_proj", 0);
}

Test(heads, mpnet_classifier)
{
	family_classifier("mpnet-tiny", "MPNetForSequenceClassification",
	                  "classifier.dense", "classifier.out_proj", 0);
}

/* DistilBertForMaskedLM (distilbert. prefix, vocab_projector tied to the
 * word embeddings): SPLADE index sets and values of the goldens */
Test(heads, distilbert_splade)
{
	char *dir = tu_fixture("splade-distil-tiny");
	emb_model *m;
	emb_err err = { "" };
	emb_model_opts o = { .threads = 2 };
	size_t n;
	json_t **g = read_jsonl("fixtures/splade-distil-tiny/golden.jsonl", &n);
	float *w;
	int V;

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_head(m), EMB_HEAD_MLM);
	V = emb_model_vocab_size(m);
	cr_assert(w = malloc((size_t)V * sizeof(float)));
	for (size_t i = 0; i < n; i += 2) {
		int len;
		emb_seq s;
		const json_t *sp = json_object_get(g[i], "sparse");
		const char *key;
		json_t *val;
		size_t nz = 0;
		s.ids = ints_of(json_object_get(g[i], "input_ids"), &len);
		s.type_ids = NULL;
		s.len = len;
		cr_assert_eq(emb_model_forward_head(m, w, EMB_OUT_SPLADE, &s, 1, &err),
		             0, "%s", err.msg);
		for (int v = 0; v < V; v++)
			nz += w[v] != 0;
		cr_expect_eq(nz, json_object_size(sp), "record %zu", i);
		json_object_foreach((json_t *)sp, key, val)
			cr_expect(fabs(w[atoi(key)] - json_number_value(val)) <= 1e-4,
			          "record %zu index %s", i, key);
		free((void *)s.ids);
	}
	free(w);
	emb_model_free(m);
	free_lines(g, n);
	free(dir);
}
