/*
 * test_model.c - the transformer engine end to end.
 *
 * 1. Synthetic fixtures (test/data/fixtures/NAME, materialized into
 *    test/tmp/units/NAME) against the PyTorch goldens: last_hidden_state
 *    within 1e-4, pooled embeddings within 1e-5.
 * 2. Small BERTs of other shapes written here (own safetensors writer)
 *    against a plain double-precision reference forward.
 * 3. Batched vs one at a time and -j1 vs -j2: bitwise identical.
 * 4. Load and input errors and their messages.
 *
 * Data: $EMB_TOP/test/data (EMB_TOP defaults to the current directory).
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
#include "nn/nn-internal.h"
#include "testutil.h"


/* ------------------------------------------------------------------ */
/* goldens                                                             */

typedef struct golden {
	int32_t *ids, *types;
	int len;
	float *emb;             /* (demb) */
	int demb;
	float *lhs;             /* (len, d) or NULL */
	int dlhs;
} golden;

static int32_t *int_array(const json_t *a, int *n)
{
	int32_t *v;
	size_t i;
	const json_t *x;

	cr_assert(json_is_array(a));
	*n = (int)json_array_size(a);
	cr_assert(v = malloc((*n + 1) * sizeof(int32_t)));
	json_array_foreach(a, i, x)
		v[i] = (int32_t)json_integer_value(x);
	return v;
}

static golden *read_golden(const char *name, const char *file, int *count)
{
	char *path = tu_path("%s/test/data/fixtures/%s/%s", tu_top(), name, file);
	FILE *f = fopen(path, "r");
	golden *g = NULL;
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	cr_assert(f, "cannot open %s", path);
	while (getline(&line, &cap, f) > 0) {
		json_error_t jerr;
		json_t *o = json_loads(line, JSON_ALLOW_NUL, &jerr), *e, *l;
		golden *r;
		int tn;
		cr_assert(o, "%s: %s", path, jerr.text);
		cr_assert(g = realloc(g, (n + 1) * sizeof(*g)));
		r = &g[n++];
		memset(r, 0, sizeof(*r));
		r->ids = int_array(json_object_get(o, "input_ids"), &r->len);
		r->types = int_array(json_object_get(o, "token_type_ids"), &tn);
		cr_assert_eq(tn, r->len);
		if ((e = json_object_get(o, "embedding"))) {
			r->demb = (int)json_array_size(e);
			cr_assert(r->emb = malloc(r->demb * sizeof(float)));
			for (int i = 0; i < r->demb; i++)
				r->emb[i] = (float)json_number_value(json_array_get(e, i));
		}
		if ((l = json_object_get(o, "last_hidden_state"))) {
			cr_assert_eq((int)json_array_size(l), r->len);
			r->dlhs = (int)json_array_size(json_array_get(l, 0));
			cr_assert(r->lhs = malloc((size_t)r->len * r->dlhs * sizeof(float)));
			for (int i = 0; i < r->len; i++)
				for (int j = 0; j < r->dlhs; j++)
					r->lhs[(size_t)i * r->dlhs + j] = (float)json_number_value(
						json_array_get(json_array_get(l, i), j));
		}
		json_decref(o);
	}
	free(line);
	fclose(f);
	free(path);
	*count = n;
	return g;
}

static void free_golden(golden *g, int n)
{
	for (int i = 0; i < n; i++) {
		free(g[i].ids); free(g[i].types); free(g[i].emb); free(g[i].lhs);
	}
	free(g);
}

static emb_model *load(const char *dir, int threads)
{
	emb_model *m = NULL;
	emb_err err = { "" };
	emb_model_opts o = { .threads = threads };

	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "load %s: %s", dir,
	             err.msg);
	return m;
}

static float *forward(emb_model *m, const golden *g, int first, int n)
{
	emb_seq *s = calloc(n, sizeof(*s));
	size_t rows = 0;
	float *out;
	emb_err err = { "" };

	for (int i = 0; i < n; i++) {
		s[i] = (emb_seq){ g[first + i].ids, g[first + i].types, g[first + i].len };
		rows += g[first + i].len;
	}
	cr_assert(out = malloc((rows + 1) * emb_model_hidden_size(m) * sizeof(float)));
	cr_assert_eq(emb_model_forward(m, out, s, n, &err), 0, "forward: %s", err.msg);
	free(s);
	return out;
}

/* every golden last_hidden_state within 1e-4 */
static void check_lhs(const char *name, const char *isa)
{
	char *dir = tu_fixture(name);
	int n, checked = 0;
	golden *g = read_golden(name, "golden.jsonl", &n);
	emb_model *m;

	if (isa)
		setenv("EMB_ISA", isa, 1);
	m = load(dir, 2);
	for (int i = 0; i < n; i++) {
		float *out;
		double worst = 0;
		if (!g[i].lhs)
			continue;
		cr_assert_eq(g[i].dlhs, emb_model_hidden_size(m));
		out = forward(m, g, i, 1);
		for (size_t e = 0; e < (size_t)g[i].len * g[i].dlhs; e++)
			worst = fmax(worst, fabs(out[e] - g[i].lhs[e]));
		cr_assert(worst <= 1e-4, "%s row %d (%s): last_hidden_state max abs "
		          "diff %g", name, i, isa ? isa : "auto", worst);
		free(out);
		checked++;
	}
	cr_assert_gt(checked, 0, "no last_hidden_state rows in %s", name);
	emb_model_free(m);
	free_golden(g, n);
	free(dir);
}

Test(model, minilm_last_hidden_state)
{
	check_lhs("minilm-l6", NULL);
}

Test(model, bert_tiny_bf16_last_hidden_state)
{
	check_lhs("bert-tiny-cls-bf16", NULL);
}

/* the oracle and each SIMD variant on the same goldens */
Test(model, last_hidden_state_every_isa)
{
	static const char *isas[] = { "scalar", "avx2", "avx512" };
	emb_err err;

	for (int i = 0; i < 3; i++) {
		setenv("EMB_ISA", isas[i], 1);
		{
			emb_model *m = NULL;
			char *dir = tu_fixture("bert-tiny-cls-bf16");
			int ok = emb_model_load(&m, dir, NULL, &err) == 0;
			emb_model_free(m);
			free(dir);
			if (!ok) {   /* this CPU lacks it: the message says so */
				cr_assert(strstr(err.msg, "not supported"), "%s", err.msg);
				continue;
			}
		}
		check_lhs("bert-tiny-cls-bf16", isas[i]);
		check_lhs("minilm-l6", isas[i]);
	}
	unsetenv("EMB_ISA");
}

/* mean pooling + L2 normalize (minilm) against the golden embedding */
Test(model, minilm_mean_normalized_embeddings)
{
	char *dir = tu_fixture("minilm-l6");
	int n;
	golden *g = read_golden("minilm-l6", "golden.jsonl", &n);
	emb_model *m = load(dir, 2);
	int d = emb_model_hidden_size(m), checked = 0;

	for (int first = 0; first < n; first += 16) {
		/* the first 48 rows, then every 5th batch of 16 (long texts too) */
		int cnt = n - first < 16 ? n - first : 16;
		float *out;
		size_t row = 0;
		if (first >= 48 && (first / 16) % 5)
			continue;
		out = forward(m, g, first, cnt);
		for (int i = 0; i < cnt; i++) {
			const golden *r = &g[first + i];
			double v[1024] = { 0 }, norm = 0;
			cr_assert(d <= 1024 && r->demb == d);
			for (int t = 0; t < r->len; t++)
				for (int j = 0; j < d; j++)
					v[j] += out[(row + t) * d + j];
			for (int j = 0; j < d; j++) {
				v[j] /= r->len;
				norm += v[j] * v[j];
			}
			norm = fmax(sqrt(norm), 1e-12);
			for (int j = 0; j < d; j++)
				cr_assert(fabs(v[j] / norm - r->emb[j]) <= 1e-5, "minilm row %d "
				          "dim %d: %.8g vs golden %.8g", first + i, j,
				          v[j] / norm, r->emb[j]);
			row += r->len;
			checked++;
		}
		free(out);
	}
	cr_assert_gt(checked, 100);
	emb_model_free(m);
	free_golden(g, n);
	free(dir);
}

/* CLS pooling (bert-tiny, no Normalize): every golden embedding */
Test(model, bert_tiny_cls_embeddings_all_rows)
{
	char *dir = tu_fixture("bert-tiny-cls-bf16");
	int n;
	golden *g = read_golden("bert-tiny-cls-bf16", "golden.jsonl", &n);
	emb_model *m = load(dir, 2);
	int d = emb_model_hidden_size(m);
	float *out = forward(m, g, 0, n);
	size_t row = 0;

	cr_assert_eq(d, 64);
	cr_assert_eq(emb_model_max_positions(m), 128);
	cr_assert_eq(emb_model_vocab_size(m), 30522);
	cr_assert_eq(emb_model_type_vocab_size(m), 2);
	cr_assert_str_eq(emb_model_arch(m), "BertModel");
	for (int i = 0; i < n; i++) {
		cr_assert_eq(g[i].demb, d);
		for (int j = 0; j < d; j++)
			cr_assert(fabsf(out[row * d + j] - g[i].emb[j]) <= 1e-5f,
			          "row %d dim %d: %.8g vs golden %.8g", i, j,
			          out[row * d + j], g[i].emb[j]);
		row += g[i].len;
	}
	free(out);
	emb_model_free(m);
	free_golden(g, n);
	free(dir);
}

/* batched == one at a time == other thread counts, bit for bit */
Test(model, batching_and_threads_bitwise)
{
	char *dir = tu_fixture("minilm-l6");
	int n, first = 0, cnt = 24;
	golden *g = read_golden("minilm-l6", "golden.jsonl", &n);
	emb_model *m1 = load(dir, 1), *m2 = load(dir, 2), *m3 = load(dir, 3);
	int d = emb_model_hidden_size(m1);
	float *b1 = forward(m1, g, first, cnt), *b2 = forward(m2, g, first, cnt);
	float *b3 = forward(m3, g, first, cnt);
	size_t rows = 0;

	for (int i = 0; i < cnt; i++) {
		float *one = forward(m2, g, first + i, 1);
		cr_assert(!memcmp(one, b1 + rows * d, (size_t)g[first + i].len * d *
		                  sizeof(float)), "sequence %d alone differs from "
		          "the batch", i);
		free(one);
		rows += g[first + i].len;
	}
	cr_assert(!memcmp(b1, b2, rows * d * sizeof(float)), "-j1 and -j2 differ");
	cr_assert(!memcmp(b1, b3, rows * d * sizeof(float)), "-j1 and -j3 differ");
	/* reversed order: the same rows in the other place */
	{
		emb_seq s[2] = {
			{ g[first + 5].ids, g[first + 5].types, g[first + 5].len },
			{ g[first + 3].ids, g[first + 3].types, g[first + 3].len },
		};
		float *out = malloc((s[0].len + s[1].len) * d * sizeof(float));
		float *a = forward(m2, g, first + 3, 1), *b = forward(m2, g, first + 5, 1);
		emb_err err;
		cr_assert_eq(emb_model_forward(m2, out, s, 2, &err), 0, "%s", err.msg);
		cr_assert(!memcmp(out, b, (size_t)s[0].len * d * sizeof(float)));
		cr_assert(!memcmp(out + (size_t)s[0].len * d, a,
		                  (size_t)s[1].len * d * sizeof(float)));
		free(out); free(a); free(b);
	}
	free(b1); free(b2); free(b3);
	emb_model_free(m1); emb_model_free(m2); emb_model_free(m3);
	free_golden(g, n);
	free(dir);
}

/* a forward of T tokens holds one (T, q + k + v + hidden) scratch buffer
 * and no more: the attention's context is written over Q, and the
 * post-attention half runs in row blocks (no (T, intermediate) buffer).
 * The buffer is rounded up to EMB_BIG_ALIGN bytes (a fresh model's
 * first forward), so T is taken large enough that a (T, q) buffer more
 * would show; the result is the golden's */
Test(model, scratch_of_a_large_batch)
{
	char *dir = tu_fixture("qwen3-tiny");
	int n, cnt = 0;
	golden *g = read_golden("qwen3-tiny", "golden.jsonl", &n);
	emb_model *m = load(dir, 2);
	size_t T = 0, nq, nkv, want, H = (size_t)emb_model_hidden_size(m);
	size_t granule = EMB_BIG_ALIGN / sizeof(float);
	int checked = 0;
	float *out;

	nq = (size_t)m->heads * m->head_dim;
	nkv = (size_t)m->net.kv_heads * m->head_dim;
	cr_assert_lt(nkv, nq, "the fixture is no GQA model");
	while (cnt < n && T * nq <= granule)
		T += (size_t)g[cnt++].len;
	cr_assert_gt(T * nq, granule, "too few golden tokens (%zu)", T);
	want = T * (nq + 2 * nkv + H);
	out = forward(m, g, 0, cnt);
	cr_assert(m->scratch_cap >= want && m->scratch_cap < want + granule,
	          "scratch of %zu floats for %zu tokens (%zu wanted)",
	          m->scratch_cap, T, want);
	for (size_t r = 0, i = 0; i < (size_t)cnt; r += (size_t)g[i++].len) {
		if (!g[i].lhs)
			continue;
		for (size_t e = 0; e < (size_t)g[i].len * H; e++)
			cr_assert(fabs(out[r * H + e] - g[i].lhs[e]) <= 1e-4,
			          "sequence %zu element %zu", i, e);
		checked++;
	}
	cr_assert_gt(checked, 0, "no last_hidden_state among the %d goldens",
	             cnt);
	free(out);
	emb_model_free(m);
	free_golden(g, n);
	free(dir);
}

/* the linear-layer modes every family runs: fp32, bf16 compute, W8
 * (int8 weights, fp32 GEMM on their round trip), W8A8 */
typedef struct fuse_mode {
	const char *name;
	emb_model_opts o;
} fuse_mode;

static const fuse_mode fuse_modes[] = {
	{ "fp32", { 0 } },
	{ "bf16", { .prec = { .bf16 = 1 } } },
	{ "W8", { .prec = { .w8 = 1 } } },
	{ "W8A8", { .prec = { .w8 = 1, .a8 = 1 } } },
};

static emb_model *load_mode(const char *dir, int threads, const fuse_mode *md)
{
	emb_model *m = NULL;
	emb_err err = { "" };
	emb_model_opts o = md->o;

	o.threads = threads;
	cr_assert_eq(emb_model_load(&m, dir, &o, &err), 0, "load %s (%s): %s",
	             dir, md->name, err.msg);
	return m;
}

/*
 * The fused paths (attention one task per sequence over a per-thread K/V
 * buffer; the post-attention half of each layer in row blocks, the next
 * norm included) against the layers one by one ($EMB_NO_FUSE), bit for
 * bit, on a batch big enough for both at 1 and 2 threads, in every
 * linear-layer mode; and a few sequences alone (too few for either)
 * against their rows of the batch.
 */
static void fused_bitwise(const char *name, const fuse_mode *md)
{
	char *dir = tu_fixture(name);
	int n, d, reps = 0;
	golden *g = read_golden(name, "golden.jsonl", &n);
	emb_model *f1 = load_mode(dir, 1, md), *f2 = load_mode(dir, 2, md), *u2;
	emb_seq *s = NULL;
	size_t rows = 0, cap = 0, off = 0;
	float *a, *b, *c;
	emb_err err = { "" };
	int w8, a8;

	cr_assert_eq(setenv("EMB_NO_FUSE", "1", 1), 0);
	u2 = load_mode(dir, 2, md);
	cr_assert_eq(unsetenv("EMB_NO_FUSE"), 0);
	d = emb_model_hidden_size(f1);
	/* the mode is the one asked for */
	emb_model_quant_stats(f1, NULL, &w8, &a8, NULL);
	cr_assert(md->o.prec.w8 ? w8 > 0 : w8 == 0, "%s %s: %d int8 "
	          "layers", name, md->name, w8);
	cr_assert(md->o.prec.a8 ? a8 > 0 && f1->gemm_i8 : a8 == 0,
	          "%s %s: %d W8A8 layers", name, md->name, a8);
	cr_assert(md->o.prec.bf16 ? f1->net.layer[0].up.wb != NULL :
	          f1->net.layer[0].up.wb == NULL, "%s %s: bf16", name, md->name);
	/* every golden sequence, over and over: >= 800 rows (8 row blocks of
	 * 96 at 2 threads) and >= 8 sequences */
	while (rows < 800 || reps < 8) {
		if ((size_t)reps == cap) {
			cap = cap ? 2 * cap : 64;
			cr_assert(s = realloc(s, cap * sizeof(*s)));
		}
		s[reps] = (emb_seq){ g[reps % n].ids, g[reps % n].types,
		                     g[reps % n].len };
		rows += (size_t)g[reps % n].len;
		reps++;
	}
	cr_assert(a = malloc(rows * d * sizeof(float)));
	cr_assert(b = malloc(rows * d * sizeof(float)));
	cr_assert(c = malloc(rows * d * sizeof(float)));
	cr_assert_eq(emb_model_forward(f1, a, s, reps, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_forward(f2, b, s, reps, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_forward(u2, c, s, reps, &err), 0, "%s", err.msg);
	/* the fused paths ran (their scratch exists) and the others did not */
	cr_assert(f1->rscratch_each > 0 && f2->rscratch_each > 0,
	          "%s %s: row blocks not used", name, md->name);
	cr_assert(f1->kvt_each > 0 && f2->kvt_each > 0,
	          "%s %s: per-sequence attention not used", name, md->name);
	cr_assert(u2->rscratch_each == 0 && u2->kvt_each == 0);
	cr_assert(!memcmp(a, c, rows * d * sizeof(float)),
	          "%s %s: fused -j1 differs from the layers one by one", name,
	          md->name);
	cr_assert(!memcmp(b, c, rows * d * sizeof(float)),
	          "%s %s: fused -j2 differs from the layers one by one", name,
	          md->name);
	for (int i = 0; i < reps && i < n && i < 4; i++) {
		float *one = forward(f2, g, i, 1);
		cr_assert(!memcmp(one, b + off * d, (size_t)g[i].len * d *
		                  sizeof(float)), "%s %s: sequence %d alone differs "
		          "from the fused batch", name, md->name, i);
		off += (size_t)g[i].len;
		free(one);
	}
	free(a); free(b); free(c); free(s);
	emb_model_free(f1); emb_model_free(f2); emb_model_free(u2);
	free_golden(g, n);
	free(dir);
}

static void fused_all_modes(const char *name)
{
	for (size_t i = 0; i < sizeof(fuse_modes) / sizeof(fuse_modes[0]); i++)
		fused_bitwise(name, &fuse_modes[i]);
}

/* post-norm MLP (BERT) */
Test(model, fused_paths_bitwise_minilm) { fused_all_modes("minilm-l6"); }
/* MPNet: attention with a relative position bias */
Test(model, fused_paths_bitwise_mpnet) { fused_all_modes("mpnet-tiny"); }
/* RoBERTa: padding-offset positions */
Test(model, fused_paths_bitwise_roberta) { fused_all_modes("roberta-tiny"); }
Test(model, fused_paths_bitwise_distilbert) { fused_all_modes("distilbert-tiny"); }
/* nomic: post-norm, gated (act on the second half), RoPE */
Test(model, fused_paths_bitwise_nomic) { fused_all_modes("coderank-tiny"); }
/* ModernBERT: pre-norm LayerNorm without bias, layer 0 without
 * attn_norm, gated GELU, final norm, local/global attention */
Test(model, fused_paths_bitwise_modernbert) { fused_all_modes("modernbert-tiny"); }
/* Qwen3: pre-norm RMSNorm, SiLU gate, q/k norms, GQA, final norm */
Test(model, fused_paths_bitwise_qwen3) { fused_all_modes("qwen3-tiny"); }
/* Gemma 3: sandwich norms, (1 + w) RMSNorm, gelu_tanh gate */
Test(model, fused_paths_bitwise_gemma3) { fused_all_modes("gemma-embed-tiny"); }

/* ------------------------------------------------------------------ */
/* small BERTs of other shapes, written here                           */

typedef struct tiny_cfg {
	int H, heads, I, layers, vocab, maxpos, types;
	const char *act;        /* hidden_act */
	float eps;
	const char *prefix;     /* "" or "bert." */
	const char *arch;
	const char *skip;       /* tensor left out (without prefix) or NULL */
	const char *bad;        /* tensor written with a wrong first dim */
	const char *extra;      /* extra config.json members or "" */
	int bf16;               /* store matrices as BF16 */
	int gamma;              /* LayerNorm.gamma/.beta names (old checkpoints) */
} tiny_cfg;

typedef struct tensor_w {
	char name[128];
	int ndim;
	int64_t shape[2];
	float *v;               /* values as stored (after rounding) */
} tensor_w;

typedef struct tiny {
	tensor_w t[256];
	int n;
} tiny;

static uint64_t trng = 0x9e3779b97f4a7c15ull;

static float trand(void)
{
	trng ^= trng << 13;
	trng ^= trng >> 7;
	trng ^= trng << 17;
	return (float)((trng >> 40) * (2.0 / 16777216.0) - 1.0);
}

static float bf16_round(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

static tensor_w *add_tensor(tiny *w, const char *name, int64_t r, int64_t c,
                            float scale, float offset)
{
	tensor_w *t = &w->t[w->n++];
	int64_t n = r * (c ? c : 1);

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ndim = c ? 2 : 1;
	t->shape[0] = r;
	t->shape[1] = c;
	cr_assert(t->v = malloc(n * sizeof(float)));
	for (int64_t i = 0; i < n; i++)
		t->v[i] = offset + trand() * scale;
	return t;
}

static const float *tget(const tiny *w, const char *fmt, int l)
{
	char name[128];
	snprintf(name, sizeof(name), fmt, l);
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->t[i].name, name))
			return w->t[i].v;
	cr_assert_fail("no tensor %s", name);
	return NULL;
}

static void build_tiny(tiny *w, const tiny_cfg *c)
{
	char nm[128];

	memset(w, 0, sizeof(*w));
	add_tensor(w, "embeddings.word_embeddings.weight", c->vocab, c->H, 1.0f, 0);
	add_tensor(w, "embeddings.position_embeddings.weight", c->maxpos, c->H, 0.5f, 0);
	add_tensor(w, "embeddings.token_type_embeddings.weight", c->types, c->H, 0.5f, 0);
	add_tensor(w, "embeddings.LayerNorm.weight", c->H, 0, 0.2f, 1.0f);
	add_tensor(w, "embeddings.LayerNorm.bias", c->H, 0, 0.1f, 0);
	for (int l = 0; l < c->layers; l++) {
		static const char *lin[][2] = {
			{ "attention.self.query", "H" }, { "attention.self.key", "H" },
			{ "attention.self.value", "H" }, { "attention.output.dense", "H" },
			{ "intermediate.dense", "I" }, { "output.dense", "O" },
		};
		for (int i = 0; i < 6; i++) {
			int out = lin[i][1][0] == 'I' ? c->I : c->H;
			int in = lin[i][1][0] == 'O' ? c->I : c->H;
			tensor_w *t;
			snprintf(nm, sizeof(nm), "encoder.layer.%d.%s.weight", l, lin[i][0]);
			t = add_tensor(w, nm, out, in, 0.7f / sqrtf((float)in), 0);
			if (c->bf16)
				for (int e = 0; e < out * in; e++)
					t->v[e] = bf16_round(t->v[e]);
			snprintf(nm, sizeof(nm), "encoder.layer.%d.%s.bias", l, lin[i][0]);
			add_tensor(w, nm, out, 0, 0.1f, 0);
		}
		snprintf(nm, sizeof(nm), "encoder.layer.%d.attention.output.LayerNorm.weight", l);
		add_tensor(w, nm, c->H, 0, 0.2f, 1.0f);
		snprintf(nm, sizeof(nm), "encoder.layer.%d.attention.output.LayerNorm.bias", l);
		add_tensor(w, nm, c->H, 0, 0.1f, 0);
		snprintf(nm, sizeof(nm), "encoder.layer.%d.output.LayerNorm.weight", l);
		add_tensor(w, nm, c->H, 0, 0.2f, 1.0f);
		snprintf(nm, sizeof(nm), "encoder.layer.%d.output.LayerNorm.bias", l);
		add_tensor(w, nm, c->H, 0, 0.1f, 0);
	}
}

static void free_tiny(tiny *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->t[i].v);
}

/* write DIR/config.json and DIR/model.safetensors; returns DIR (new) */
static char *write_tiny(const tiny *w, const tiny_cfg *c, const char *tag)
{
	char *dir = tu_path("%s/test/tmp/units/tiny-%s-%ld", tu_top(), tag, (long)getpid());
	char *cfgp = tu_path("%s/config.json", dir), *stp = tu_path("%s/model.safetensors", dir);
	char *parent = tu_path("%s/test/tmp/units", tu_top());
	json_t *hdr = json_object();
	size_t off = 0, hlen;
	char *hs;
	FILE *f;

	char *tmpd = tu_path("%s/test/tmp", tu_top());
	mkdir(tmpd, 0777);
	free(tmpd);
	mkdir(parent, 0777);
	tu_rm_rf(dir);
	cr_assert_eq(mkdir(dir, 0777), 0, "mkdir %s: %s", dir, strerror(errno));
	cr_assert(f = fopen(cfgp, "w"));
	fprintf(f, "{\"architectures\": [\"%s\"], \"model_type\": \"bert\", "
	        "\"hidden_size\": %d, \"num_attention_heads\": %d, "
	        "\"intermediate_size\": %d, \"num_hidden_layers\": %d, "
	        "\"vocab_size\": %d, \"max_position_embeddings\": %d, "
	        "\"type_vocab_size\": %d, \"hidden_act\": \"%s\", "
	        "\"layer_norm_eps\": %g%s}\n", c->arch, c->H, c->heads, c->I,
	        c->layers, c->vocab, c->maxpos, c->types, c->act, c->eps, c->extra);
	cr_assert_eq(fclose(f), 0);
	for (int i = 0; i < w->n; i++) {
		const tensor_w *t = &w->t[i];
		char name[160];
		int64_t r = t->shape[0], n;
		int bf = c->bf16 && t->ndim == 2 && !strncmp(t->name, "encoder", 7);
		json_t *o;
		if (c->skip && !strcmp(c->skip, t->name))
			continue;
		if (c->bad && !strcmp(c->bad, t->name))
			r--;
		n = r * (t->ndim == 2 ? t->shape[1] : 1);
		snprintf(name, sizeof(name), "%s%s", c->prefix, t->name);
		if (c->gamma && strstr(name, "LayerNorm.weight"))
			strcpy(strstr(name, "LayerNorm.weight"), "LayerNorm.gamma");
		if (c->gamma && strstr(name, "LayerNorm.bias"))
			strcpy(strstr(name, "LayerNorm.bias"), "LayerNorm.beta");
		o = json_pack("{s:s, s:[I,I], s:[I,I]}", "dtype", bf ? "BF16" : "F32",
		              "shape", (json_int_t)r, (json_int_t)t->shape[1],
		              "data_offsets", (json_int_t)off,
		              (json_int_t)(off + n * (bf ? 2 : 4)));
		if (t->ndim == 1)
			json_array_remove(json_object_get(o, "shape"), 1);
		json_object_set_new(hdr, name, o);
		off += n * (bf ? 2 : 4);
	}
	hs = json_dumps(hdr, JSON_COMPACT);
	hlen = strlen(hs);
	cr_assert(f = fopen(stp, "wb"));
	{
		uint64_t hl = (hlen + 7) / 8 * 8;
		unsigned char le[8];
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(hl >> (8 * i));
		fwrite(le, 1, 8, f);
		fwrite(hs, 1, hlen, f);
		for (size_t i = hlen; i < hl; i++)
			fputc(' ', f);
	}
	for (int i = 0; i < w->n; i++) {
		const tensor_w *t = &w->t[i];
		int64_t r = t->shape[0], n;
		int bf = c->bf16 && t->ndim == 2 && !strncmp(t->name, "encoder", 7);
		if (c->skip && !strcmp(c->skip, t->name))
			continue;
		if (c->bad && !strcmp(c->bad, t->name))
			r--;
		n = r * (t->ndim == 2 ? t->shape[1] : 1);
		for (int64_t e = 0; e < n; e++) {
			uint32_t u;
			memcpy(&u, &t->v[e], 4);
			if (bf) {
				unsigned char b[2] = { (unsigned char)(u >> 16), (unsigned char)(u >> 24) };
				fwrite(b, 1, 2, f);
			} else {
				unsigned char b[4] = { (unsigned char)u, (unsigned char)(u >> 8),
				                       (unsigned char)(u >> 16), (unsigned char)(u >> 24) };
				fwrite(b, 1, 4, f);
			}
		}
	}
	cr_assert_eq(fclose(f), 0);
	free(hs);
	json_decref(hdr);
	free(cfgp); free(stp); free(parent);
	return dir;
}

static void ref_layernorm(double *x, const float *g, const float *b, int n, double eps)
{
	double mean = 0, var = 0;
	for (int i = 0; i < n; i++)
		mean += x[i];
	mean /= n;
	for (int i = 0; i < n; i++)
		var += (x[i] - mean) * (x[i] - mean);
	var /= n;
	for (int i = 0; i < n; i++)
		x[i] = (x[i] - mean) / sqrt(var + eps) * g[i] + b[i];
}

/* y (L,out) = x (L,in) W^T + b, double */
static void ref_linear(double *y, const double *x, const float *W, const float *b,
                       int L, int out, int in)
{
	for (int i = 0; i < L; i++)
		for (int o = 0; o < out; o++) {
			double s = b[o];
			for (int k = 0; k < in; k++)
				s += x[(size_t)i * in + k] * W[(size_t)o * in + k];
			y[(size_t)i * out + o] = s;
		}
}

/* modeling_bert in double precision, one sequence */
static void ref_forward(double *h, const tiny *w, const tiny_cfg *c,
                        const int32_t *ids, const int32_t *tt, int L)
{
	int H = c->H, I = c->I, dh = H / c->heads;
	double *q = malloc(sizeof(double) * L * H), *k = malloc(sizeof(double) * L * H);
	double *v = malloc(sizeof(double) * L * H), *ctx = malloc(sizeof(double) * L * H);
	double *t = malloc(sizeof(double) * L * H), *mid = malloc(sizeof(double) * L * I);
	double *p = malloc(sizeof(double) * L);

	for (int i = 0; i < L; i++) {
		for (int j = 0; j < H; j++)
			h[i * H + j] = (double)tget(w, "embeddings.word_embeddings.weight", 0)[ids[i] * H + j] +
			               tget(w, "embeddings.token_type_embeddings.weight", 0)[(tt ? tt[i] : 0) * H + j] +
			               tget(w, "embeddings.position_embeddings.weight", 0)[i * H + j];
		ref_layernorm(h + i * H, tget(w, "embeddings.LayerNorm.weight", 0),
		              tget(w, "embeddings.LayerNorm.bias", 0), H, c->eps);
	}
	for (int l = 0; l < c->layers; l++) {
		ref_linear(q, h, tget(w, "encoder.layer.%d.attention.self.query.weight", l),
		           tget(w, "encoder.layer.%d.attention.self.query.bias", l), L, H, H);
		ref_linear(k, h, tget(w, "encoder.layer.%d.attention.self.key.weight", l),
		           tget(w, "encoder.layer.%d.attention.self.key.bias", l), L, H, H);
		ref_linear(v, h, tget(w, "encoder.layer.%d.attention.self.value.weight", l),
		           tget(w, "encoder.layer.%d.attention.self.value.bias", l), L, H, H);
		for (int hd = 0; hd < c->heads; hd++)
			for (int i = 0; i < L; i++) {
				double mx = -INFINITY, sum = 0;
				for (int j = 0; j < L; j++) {
					double s = 0;
					for (int e = 0; e < dh; e++)
						s += q[i * H + hd * dh + e] * k[j * H + hd * dh + e];
					p[j] = s / sqrt((double)dh);
					mx = fmax(mx, p[j]);
				}
				for (int j = 0; j < L; j++)
					sum += (p[j] = exp(p[j] - mx));
				for (int e = 0; e < dh; e++) {
					double s = 0;
					for (int j = 0; j < L; j++)
						s += p[j] / sum * v[j * H + hd * dh + e];
					ctx[i * H + hd * dh + e] = s;
				}
			}
		ref_linear(t, ctx, tget(w, "encoder.layer.%d.attention.output.dense.weight", l),
		           tget(w, "encoder.layer.%d.attention.output.dense.bias", l), L, H, H);
		for (int i = 0; i < L; i++) {
			for (int j = 0; j < H; j++)
				h[i * H + j] += t[i * H + j];
			ref_layernorm(h + i * H, tget(w, "encoder.layer.%d.attention.output.LayerNorm.weight", l),
			              tget(w, "encoder.layer.%d.attention.output.LayerNorm.bias", l), H, c->eps);
		}
		ref_linear(mid, h, tget(w, "encoder.layer.%d.intermediate.dense.weight", l),
		           tget(w, "encoder.layer.%d.intermediate.dense.bias", l), L, I, H);
		for (int e = 0; e < L * I; e++) {
			double x = mid[e];
			if (!strcmp(c->act, "gelu"))
				mid[e] = 0.5 * x * (1 + erf(x / sqrt(2.0)));
			else if (!strcmp(c->act, "relu"))
				mid[e] = x > 0 ? x : 0;
			else
				mid[e] = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
		}
		ref_linear(t, mid, tget(w, "encoder.layer.%d.output.dense.weight", l),
		           tget(w, "encoder.layer.%d.output.dense.bias", l), L, H, I);
		for (int i = 0; i < L; i++) {
			for (int j = 0; j < H; j++)
				h[i * H + j] += t[i * H + j];
			ref_layernorm(h + i * H, tget(w, "encoder.layer.%d.output.LayerNorm.weight", l),
			              tget(w, "encoder.layer.%d.output.LayerNorm.bias", l), H, c->eps);
		}
	}
	free(q); free(k); free(v); free(ctx); free(t); free(mid); free(p);
}

static void check_tiny(const tiny_cfg *c, const char *tag)
{
	static const int lens[] = { 1, 7, 2, 23, 16 };
	enum { NS = sizeof(lens) / sizeof(lens[0]) };
	tiny w;
	char *dir;
	emb_model *m;
	emb_seq s[NS];
	int32_t *ids[NS], *tt[NS];
	size_t rows = 0;
	float *out;
	emb_err err = { "" };

	build_tiny(&w, c);
	dir = write_tiny(&w, c, tag);
	m = load(dir, 2);
	cr_assert_eq(emb_model_hidden_size(m), c->H);
	cr_assert_str_eq(emb_model_arch(m), c->arch);
	for (int i = 0; i < NS; i++) {
		ids[i] = malloc(lens[i] * sizeof(int32_t));
		tt[i] = malloc(lens[i] * sizeof(int32_t));
		for (int j = 0; j < lens[i]; j++) {
			ids[i][j] = (int32_t)((trng >> 33) % (uint64_t)c->vocab);
			trand();
			tt[i][j] = (int32_t)((trng >> 33) % (uint64_t)c->types);
			trand();
		}
		s[i] = (emb_seq){ ids[i], i == 2 ? NULL : tt[i], lens[i] };
		rows += lens[i];
	}
	out = malloc(rows * c->H * sizeof(float));
	cr_assert_eq(emb_model_forward(m, out, s, NS, &err), 0, "%s", err.msg);
	rows = 0;
	for (int i = 0; i < NS; i++) {
		double *h = malloc(sizeof(double) * lens[i] * c->H);
		ref_forward(h, &w, c, ids[i], s[i].type_ids, lens[i]);
		for (int e = 0; e < lens[i] * c->H; e++)
			cr_assert(fabs(out[rows * c->H + e] - h[e]) <= 2e-5,
			          "%s: seq %d element %d: %.8g vs reference %.8g", tag, i,
			          e, out[rows * c->H + e], h[e]);
		rows += lens[i];
		free(h);
		free(ids[i]);
		free(tt[i]);
	}
	free(out);
	emb_model_free(m);
	tu_rm_rf(dir);
	free(dir);
	free_tiny(&w);
}

Test(model, other_shapes_gelu)
{
	tiny_cfg c = { 20, 5, 36, 2, 50, 40, 3, "gelu", 1e-5f, "", "BertModel",
	               NULL, NULL, "", 0, 0 };
	check_tiny(&c, "gelu");
}

Test(model, other_shapes_gelu_new_prefix_bf16)
{
	tiny_cfg c = { 24, 3, 50, 3, 31, 30, 1, "gelu_new", 1e-12f, "bert.",
	               "BertForMaskedLM", NULL, NULL, "", 1, 0 };
	check_tiny(&c, "gelunew");
}

Test(model, other_shapes_relu_wide_heads)
{
	tiny_cfg c = { 48, 2, 17, 1, 70, 24, 2, "relu", 1e-6f, "", "BertModel",
	               NULL, NULL, ", \"position_embedding_type\": \"absolute\"", 0, 1 };
	check_tiny(&c, "relu");
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

static void expect_load_error(const tiny_cfg *c, const char *tag, const char *want)
{
	tiny w;
	char *dir;
	emb_model *m = (emb_model *)1;
	emb_err err = { "" };

	build_tiny(&w, c);
	dir = write_tiny(&w, c, tag);
	cr_assert_eq(emb_model_load(&m, dir, NULL, &err), -1, "%s: loaded", tag);
	cr_assert_null(m);
	cr_assert(strstr(err.msg, want), "%s: message '%s' lacks '%s'", tag,
	          err.msg, want);
	tu_rm_rf(dir);
	free(dir);
	free_tiny(&w);
}

Test(model, error_unknown_architecture)
{
	tiny_cfg c = { 8, 2, 8, 1, 10, 8, 2, "gelu", 1e-12f, "", "FooModel",
	               NULL, NULL, "", 0, 0 };
	expect_load_error(&c, "arch", "config.json: architecture 'FooModel' is not "
	                  "supported (supported: BertModel");
}

Test(model, error_unsupported_hidden_act)
{
	tiny_cfg c = { 8, 2, 8, 1, 10, 8, 2, "quick_gelu", 1e-12f, "", "BertModel",
	               NULL, NULL, "", 0, 0 };
	expect_load_error(&c, "act", "config.json: field 'hidden_act' value "
	                  "'quick_gelu' is not supported");
}

Test(model, error_relative_positions)
{
	tiny_cfg c = { 8, 2, 8, 1, 10, 8, 2, "gelu", 1e-12f, "", "BertModel",
	               NULL, NULL, ", \"position_embedding_type\": \"relative_key\"", 0, 0 };
	expect_load_error(&c, "pet", "field 'position_embedding_type' value "
	                  "'relative_key' is not supported");
}

Test(model, error_heads_do_not_divide)
{
	tiny_cfg c = { 10, 3, 8, 1, 10, 8, 2, "gelu", 1e-12f, "", "BertModel",
	               NULL, NULL, "", 0, 0 };
	expect_load_error(&c, "heads", "config.json: field 'hidden_size' (10) must "
	                  "be a multiple of 'num_attention_heads' (3)");
}

Test(model, error_bad_config_value)
{
	tiny_cfg c = { 8, 2, 8, 1, 10, 8, 2, "gelu", 1e-12f, "", "BertModel",
	               NULL, NULL, ", \"position_embedding_type\": 3", 0, 0 };
	expect_load_error(&c, "cfgval", "config.json: field "
	                  "'position_embedding_type' must be a string");
}

Test(model, error_missing_tensor)
{
	tiny_cfg c = { 8, 2, 12, 2, 10, 8, 2, "gelu", 1e-12f, "bert.", "BertModel",
	               "encoder.layer.1.output.dense.bias", NULL, "", 0, 0 };
	expect_load_error(&c, "missing", "model.safetensors: missing tensor "
	                  "'bert.encoder.layer.1.output.dense.bias'");
}

Test(model, error_wrong_shape)
{
	tiny_cfg c = { 8, 2, 12, 1, 10, 8, 2, "gelu", 1e-12f, "", "BertModel",
	               NULL, "encoder.layer.0.intermediate.dense.weight", "", 0, 0 };
	expect_load_error(&c, "shape", "model.safetensors: tensor "
	                  "'encoder.layer.0.intermediate.dense.weight' has shape "
	                  "[11,8], config.json says [12,8]");
}

Test(model, error_no_config)
{
	emb_model *m = (emb_model *)1;
	emb_err err = { "" };
	char *dir = tu_path("%s/test/data/corpus", tu_top());

	cr_assert_eq(emb_model_load(&m, dir, NULL, &err), -1);
	cr_assert_null(m);
	cr_assert(strstr(err.msg, "config.json"), "%s", err.msg);
	free(dir);
}

Test(model, error_bad_inputs_name_the_position)
{
	tiny_cfg c = { 8, 2, 8, 1, 10, 6, 2, "gelu", 1e-12f, "", "BertModel",
	               NULL, NULL, "", 0, 0 };
	tiny w;
	char *dir;
	emb_model *m;
	emb_err err = { "" };
	int32_t ids[7] = { 1, 2, 10, 3, 4, 5, 6 }, tt[3] = { 0, 2, 0 };
	int32_t ok[2] = { 1, 2 };
	float out[7 * 8];

	build_tiny(&w, &c);
	dir = write_tiny(&w, &c, "inputs");
	m = load(dir, 1);
	emb_seq s = { ids, NULL, 3 };
	cr_assert_eq(emb_model_forward(m, out, &s, 1, &err), -1);
	cr_assert(strstr(err.msg, "input_ids[2] = 10 is out of range (vocab_size 10)"),
	          "%s", err.msg);
	ids[2] = -1;
	emb_seq two[2] = { { ok, NULL, 2 }, { ids, NULL, 3 } };
	cr_assert_eq(emb_model_forward(m, out, two, 2, &err), -1);
	cr_assert(strstr(err.msg, "sequence 1: input_ids[2] = -1"), "%s", err.msg);
	ids[2] = 3;
	s = (emb_seq){ ids, tt, 3 };
	cr_assert_eq(emb_model_forward(m, out, &s, 1, &err), -1);
	cr_assert(strstr(err.msg, "token_type_ids[1] = 2 is out of range"), "%s", err.msg);
	s = (emb_seq){ ids, NULL, 7 };
	cr_assert_eq(emb_model_forward(m, out, &s, 1, &err), -1);
	cr_assert(strstr(err.msg, "7 tokens"), "%s", err.msg);
	s = (emb_seq){ ids, NULL, 6 };
	cr_assert_eq(emb_model_forward(m, out, &s, 1, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_check(m, &s, &err), 0, "%s", err.msg);
	s = (emb_seq){ ids, tt, 3 };
	cr_assert_eq(emb_model_check(m, &s, &err), -1);
	cr_assert_str_eq(err.msg, "token_type_ids[1] = 2 is out of range "
	                 "(type_vocab_size 2)");
	ids[0] = 11;
	cr_assert_eq(emb_model_check(m, &s, &err), -1);
	cr_assert_str_eq(err.msg, "input_ids[0] = 11 is out of range (vocab_size 10)");
	cr_assert_eq(emb_model_forward(m, out, &s, 0, &err), 0);
	emb_model_free(m);
	tu_rm_rf(dir);
	free(dir);
	free_tiny(&w);
}

/* ------------------------------------------------------------------ */
/* the families beyond BERT                                            */

/*
 * Per family fixture: the architecture is recognized, max positions
 * follow the family's rule (RoBERTa/MPNet: max_position_embeddings -
 * padding_idx - 1), and the hidden states of a batch of the goldens'
 * longest and shortest sequences equal those of each sequence alone and
 * of 1 vs 3 threads, bit for bit (relative bias tables, rotary tables and
 * sliding windows must not depend on the batch).
 */
static void family_bitwise(const char *name, const char *arch, int maxpos)
{
	char *dir = tu_fixture(name);
	int n, idx[6], cnt = 0;
	golden *g = read_golden(name, "golden.jsonl", &n);
	emb_model *m1 = load(dir, 1), *m3 = load(dir, 3);
	int d = emb_model_hidden_size(m1);
	emb_seq s[6];
	size_t rows = 0, off = 0;
	float *b1, *b3;
	emb_err err = { "" };

	cr_assert_str_eq(emb_model_arch(m1), arch);
	cr_assert_eq(emb_model_max_positions(m1), maxpos, "%s: max positions %d",
	             name, emb_model_max_positions(m1));
	/* the three longest and three short ones, mixed */
	for (int k = 0; k < 3; k++) {
		int best = -1;
		for (int i = 0; i < n; i++) {
			int used = 0;
			for (int j = 0; j < cnt; j++)
				used |= idx[j] == i;
			if (!used && (best < 0 || g[i].len > g[best].len))
				best = i;
		}
		idx[cnt++] = best;
		idx[cnt++] = 3 + k;
	}
	for (int i = 0; i < cnt; i++) {
		s[i] = (emb_seq){ g[idx[i]].ids, g[idx[i]].types, g[idx[i]].len };
		rows += (size_t)s[i].len;
	}
	cr_assert(g[idx[0]].len > 40, "%s: a long sequence", name);
	cr_assert(b1 = malloc(rows * d * sizeof(float)));
	cr_assert(b3 = malloc(rows * d * sizeof(float)));
	cr_assert_eq(emb_model_forward(m1, b1, s, cnt, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_forward(m3, b3, s, cnt, &err), 0, "%s", err.msg);
	cr_assert(!memcmp(b1, b3, rows * d * sizeof(float)), "%s: -j1 and -j3 "
	          "differ", name);
	for (int i = 0; i < cnt; i++) {
		float *one = malloc((size_t)s[i].len * d * sizeof(float) + 1);
		cr_assert_eq(emb_model_forward(m3, one, &s[i], 1, &err), 0, "%s",
		             err.msg);
		cr_assert(!memcmp(one, b1 + off * d, (size_t)s[i].len * d *
		                  sizeof(float)), "%s: sequence %d alone differs "
		          "from the batch", name, i);
		for (size_t k = 0; k < (size_t)s[i].len * d; k++)
			cr_assert(isfinite(one[k]));
		off += (size_t)s[i].len;
		free(one);
	}
	free(b1); free(b3);
	emb_model_free(m1); emb_model_free(m3);
	free_golden(g, n);
	free(dir);
}

Test(model, family_roberta) { family_bitwise("roberta-tiny", "RobertaModel", 512); }
Test(model, family_distilbert) { family_bitwise("distilbert-tiny", "DistilBertModel", 512); }
Test(model, family_mpnet) { family_bitwise("mpnet-tiny", "MPNetModel", 512); }
Test(model, family_nomic) { family_bitwise("coderank-tiny", "NomicBertModel", 8192); }
Test(model, family_modernbert) { family_bitwise("modernbert-tiny", "ModernBertModel", 8192); }
Test(model, family_qwen3) { family_bitwise("qwen3-tiny", "Qwen3Model", 32768); }
Test(model, family_gemma3) { family_bitwise("gemma-embed-tiny", "Gemma3TextModel", 2048); }

/* causal Qwen3: a prefix's hidden states do not depend on what follows */
Test(model, family_qwen3_causal_prefix)
{
	char *dir = tu_fixture("qwen3-tiny");
	int n, i, best = 0;
	golden *g = read_golden("qwen3-tiny", "golden.jsonl", &n);
	emb_model *m = load(dir, 2);
	int d = emb_model_hidden_size(m);
	emb_err err = { "" };

	for (i = 0; i < n; i++)
		if (g[i].len > g[best].len)
			best = i;
	emb_seq full = { g[best].ids, g[best].types, g[best].len };
	emb_seq pre = { g[best].ids, g[best].types, g[best].len / 2 };
	float *a = malloc((size_t)full.len * d * sizeof(float));
	float *b = malloc((size_t)pre.len * d * sizeof(float));
	cr_assert_eq(emb_model_forward(m, a, &full, 1, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_forward(m, b, &pre, 1, &err), 0, "%s", err.msg);
	cr_assert(!memcmp(a, b, (size_t)pre.len * d * sizeof(float)),
	          "prefix rows changed by later tokens");
	/* bidirectional Gemma: they do change */
	emb_model_free(m);
	free(dir);
	free_golden(g, n);
	dir = tu_fixture("gemma-embed-tiny");
	g = read_golden("gemma-embed-tiny", "golden.jsonl", &n);
	m = load(dir, 2);
	d = emb_model_hidden_size(m);
	for (i = 0, best = 0; i < n; i++)
		if (g[i].len > g[best].len)
			best = i;
	full = (emb_seq){ g[best].ids, g[best].types, g[best].len };
	pre = (emb_seq){ g[best].ids, g[best].types, 4 };
	a = realloc(a, (size_t)full.len * d * sizeof(float));
	b = realloc(b, (size_t)pre.len * d * sizeof(float));
	cr_assert_eq(emb_model_forward(m, a, &full, 1, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_model_forward(m, b, &pre, 1, &err), 0, "%s", err.msg);
	cr_assert(memcmp(a, b, (size_t)pre.len * d * sizeof(float)),
	          "gemma: later tokens must change earlier rows");
	free(a); free(b);
	emb_model_free(m);
	free_golden(g, n);
	free(dir);
}

/* RoBERTa over the position limit: max_position_embeddings - pad - 1 */
Test(model, family_roberta_position_limit)
{
	char *dir = tu_fixture("roberta-tiny");
	emb_model *m = load(dir, 1);
	int32_t ids[513];
	emb_seq q = { ids, NULL, 513 };
	float *out = malloc(513 * (size_t)emb_model_hidden_size(m) * sizeof(float));
	emb_err err = { "" };

	for (int i = 0; i < 513; i++)
		ids[i] = 5 + i % 100;
	cr_assert_eq(emb_model_forward(m, out, &q, 1, &err), -1);
	cr_assert(strstr(err.msg, "maximum of 512"), "%s", err.msg);
	q.len = 512;
	cr_assert_eq(emb_model_forward(m, out, &q, 1, &err), 0, "%s", err.msg);
	free(out);
	emb_model_free(m);
	free(dir);
}

/*
 * The precision mode (nn/precision.c): --compute's names and the older
 * --weights/--act spellings give the same emb_prec as emb.h's enum, the
 * names read back, bad values are refused naming the option and value,
 * and the one exclusion (bf16 with int8 activations) is refused.
 */
Test(model, precision_modes)
{
	static const char *names[] = { "fp32", "bf16", "w8", "w8a8",
	                               "w8a8-smooth" };
	emb_prec p, q;
	emb_err err;

	for (int v = 0; v < 5; v++) {
		memset(&p, 0xff, sizeof(p));
		cr_assert_eq(emb_prec_parse(&p, "compute", names[v], &err), 0);
		cr_assert_eq(emb_prec_from_enum(&q, v, &err), 0);
		cr_assert_eq(memcmp(&p, &q, sizeof(p)), 0, "%s", names[v]);
		cr_assert_str_eq(emb_prec_name(&p), names[v]);
		cr_assert_eq(emb_prec_check(&p, &err), 0, "%s", names[v]);
	}
	cr_assert_eq(emb_prec_from_enum(&q, 5, &err), -1);
	cr_assert_eq(emb_prec_from_enum(&q, -1, &err), -1);
	/* the older spellings add to the mode: --weights int8 --act int8 */
	memset(&p, 0, sizeof(p));
	cr_assert_eq(emb_prec_parse(&p, "weights", "int8", &err), 0);
	cr_assert_str_eq(emb_prec_name(&p), "w8");
	cr_assert_eq(emb_prec_parse(&p, "act", "int8", &err), 0);
	cr_assert_str_eq(emb_prec_name(&p), "w8a8");
	cr_assert_eq(emb_prec_parse(&p, "act", "int8-smooth", &err), 0);
	cr_assert_str_eq(emb_prec_name(&p), "w8a8-smooth");
	/* --compute sets the whole mode */
	cr_assert_eq(emb_prec_parse(&p, "compute", "fp32", &err), 0);
	cr_assert_str_eq(emb_prec_name(&p), "fp32");
	cr_assert_eq(emb_prec_parse(&p, "compute", "fp16", &err), -1);
	cr_assert(strstr(err.msg, "--compute: 'fp16' is not"), "%s", err.msg);
	cr_assert_eq(emb_prec_parse(&p, "weights", "int4", &err), -1);
	cr_assert(strstr(err.msg, "--weights: 'int4'"), "%s", err.msg);
	cr_assert_eq(emb_prec_parse(&p, "act", "fp8", &err), -1);
	cr_assert(strstr(err.msg, "--act: 'fp8'"), "%s", err.msg);
	/* bf16 with int8 activations */
	cr_assert_eq(emb_prec_parse(&p, "compute", "bf16", &err), 0);
	cr_assert_eq(emb_prec_parse(&p, "act", "int8", &err), 0);
	cr_assert_eq(emb_prec_check(&p, &err), -1);
	cr_assert(strstr(err.msg, "exclude each other"), "%s", err.msg);
	/* bf16 over int8 weights is allowed (W8 rounded, then bf16) */
	memset(&p, 0, sizeof(p));
	p.bf16 = p.w8 = 1;
	cr_assert_eq(emb_prec_check(&p, &err), 0);
	cr_assert_str_eq(emb_prec_name(&p), "bf16+w8");
}
