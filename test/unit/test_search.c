/*
 * test_search.c - lib/st/search.c against its naive reference
 * (emb_search_naive: every document scored alone, in double precision).
 *
 * 1. Exact search: values k/64 with small k, so that every dot product is
 *    exact in float32 and in double: ids, order (ties included: there are
 *    many) and scores equal the reference bit for bit, for f32, f16 and
 *    binary, for dims across panel and word boundaries, index sizes 1..
 *    past a block, query counts past one pass (QMAX), k from 1 to past
 *    the index size, and 1 to 3 threads.  Cosine and int8 (rounded):
 *    scores within 1e-6 rank by rank.
 * 2. An index file written and opened again gives the same results.
 * 3. f16 rounds to nearest even; an empty index gives no results.
 * 4. A tampered index file (ids.offsets out of order, a wrong shape) is
 *    refused with an error naming it.
 * 5. The search kernels of every kernel table this CPU runs: hamming8
 *    equals the scalar oracle bit for bit (and the scalar one a bit-by-bit
 *    count); dot4 equals a chain of fmaf in order bit for bit, and the
 *    scalar oracle the double-precision product within rounding; find_ge
 *    (the scan of a full heap) gives the first value at or above the bar
 *    or not finite, in the scalar table against a plain loop, in the
 *    others against the scalar one, for every start, length and bar.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "tool/emb-tool.h"
#include "st/search.h"
#include "kern/kernels.h"
#include "testutil.h"

static uint32_t rng = 777;

static int irand(int n)
{
	rng = rng * 1664525u + 1013904223u;
	return (int)((rng >> 8) % (uint32_t)n);
}

static char *tmpdir(void)
{
	char *d = tu_path("%s/test/tmp/units/search", tu_top());
	char *cmd = tu_path("mkdir -p '%s'", d);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	return d;
}

/* n vectors (dim) of values k/64, k in [-8, 8]: with some exact copies */
static float *vectors(int n, int dim)
{
	float *v = malloc(((size_t)n * dim + 1) * sizeof(float));

	cr_assert(v);
	for (int i = 0; i < n; i++) {
		if (i > 2 && irand(5) == 0) {
			memcpy(v + (size_t)i * dim, v + (size_t)irand(i) * dim,
			       (size_t)dim * sizeof(float));
			continue;
		}
		for (int k = 0; k < dim; k++)
			v[(size_t)i * dim + k] = (float)(irand(17) - 8) / 64.0f;
		v[(size_t)i * dim] += 1.0f / 64;     /* never all zero */
	}
	return v;
}

static char *write_jsonl(const char *dir, const char *name, const float *v,
                         int n, int dim)
{
	char *path = tu_path("%s/%s", dir, name), num[32];
	FILE *f = fopen(path, "w");

	cr_assert(f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "{\"id\":%d,\"embedding\":[", i);
		for (int k = 0; k < dim; k++) {
			emb_fmt_f32(num, v[(size_t)i * dim + k]);
			fprintf(f, "%s%s", k ? "," : "", num);
		}
		fputs("]}\n", f);
	}
	cr_assert_eq(fclose(f), 0);
	return path;
}

/* fast vs naive for every query; EXACT: bit for bit, else scores within
 * 1e-6 and ids equal where the neighbours are 1e-5 apart */
static void check(const emb_index *ix, unsigned prec, int score, int k,
                  int threads, const float *q, int m, int exact)
{
	emb_search_opts o = { 0 };
	emb_search *s;
	emb_err err = { "" };
	emb_hit *hits = malloc(((size_t)m * k + 1) * sizeof(emb_hit));
	emb_hit *ref = malloc(((size_t)k + 2) * sizeof(emb_hit));
	int *nh = malloc(((size_t)m + 1) * sizeof(int)), nr;
	int dim = emb_index_dim(ix);

	o.k = k;
	o.score = score;
	o.first = prec;
	o.threads = threads;
	cr_assert(hits && ref && nh);
	cr_assert_eq(emb_search_new(&s, ix, &o, &err), 0, "%s", err.msg);
	emb_search_run(s, hits, nh, q, m);
	for (int i = 0; i < m; i++) {
		const emb_hit *h = hits + (size_t)i * k;
		int nr1;
		/* one more: whether the last kept is near-tied with the next */
		emb_search_naive(ref, &nr1, ix, prec, score, q + (size_t)i * dim,
		                 k + 1);
		nr = nr1 < k ? nr1 : k;
		cr_assert_eq(nh[i], nr, "query %d: %d hits, want %d", i, nh[i], nr);
		for (int r = 0; r < nr; r++) {
			if (exact) {
				cr_assert(h[r].doc == ref[r].doc && h[r].score == ref[r].score,
				          "%s score %d k %d j %d query %d rank %d: %u %.9g, "
				          "want %u %.9g", emb_ix_prec_name(prec), score, k,
				          threads, i, r, h[r].doc, h[r].score, ref[r].doc,
				          ref[r].score);
				continue;
			}
			cr_assert(fabsf(h[r].score - ref[r].score) <= 1e-6f,
			          "query %d rank %d: %.9g, want %.9g", i, r, h[r].score,
			          ref[r].score);
			if ((r == 0 || ref[r - 1].score - ref[r].score > 1e-5f) &&
			    (r + 1 >= nr1 || ref[r].score - ref[r + 1].score > 1e-5f))
				cr_assert_eq(h[r].doc, ref[r].doc, "%s score %d k %d: query %d "
				             "rank %d: %u %.9g, want %u %.9g", emb_ix_prec_name(prec),
				             score, k, i, r, h[r].doc, h[r].score, ref[r].doc,
				             ref[r].score);
		}
	}
	emb_search_free(s);
	free(hits);
	free(ref);
	free(nh);
}

Test(search, exact_against_reference)
{
	static const int dims[] = { 1, 16, 63, 70, 130 };
	static const int ns[] = { 1, 15, 17, 300, 1100 };
	char *dir = tmpdir();

	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		for (size_t b = 0; b < sizeof(ns) / sizeof(ns[0]); b++) {
			int dim = dims[a], n = ns[b], m = b == 3 ? 300 : 9;
			float *v = vectors(n, dim), *q = vectors(m, dim);
			char *path = write_jsonl(dir, "exact.jsonl", v, n, dim);
			emb_index *ix;
			emb_err err = { "" };
			/* queries: some documents themselves (ties at the top) */
			for (int i = 0; i < m && i < n; i += 3)
				memcpy(q + (size_t)i * dim, v + (size_t)(i * 7 % n) * dim,
				       (size_t)dim * sizeof(float));
			cr_assert_eq(emb_index_from_jsonl(&ix, path, EMB_IX_ALL, 0, &err),
			             0, "%s", err.msg);
			cr_assert_eq(emb_index_count(ix), (size_t)n);
			for (int k = 1; k <= n + 3; k = k < 4 ? k + 3 : k * 5) {
				int j = 1 + (k + (int)a) % 3;
				check(ix, EMB_IX_F32, EMB_SCORE_DOT, k, j, q, m, 1);
				check(ix, EMB_IX_F16, EMB_SCORE_DOT, k, j, q, m, 1);
				check(ix, EMB_IX_BINARY, EMB_SCORE_DOT, k, j, q, m, 1);
				check(ix, EMB_IX_BINARY, EMB_SCORE_COSINE, k, j, q, m, 1);
				check(ix, EMB_IX_F32, EMB_SCORE_COSINE, k, j, q, m, 0);
				check(ix, EMB_IX_INT8, EMB_SCORE_DOT, k, j, q, m, 0);
				check(ix, EMB_IX_INT8, EMB_SCORE_COSINE, k, j, q, m, 0);
			}
			emb_index_free(ix);
			free(path);
			free(v);
			free(q);
		}
	free(dir);
}

/* every query's hits, as text, for comparing two runs */
static char *run_text(const emb_index *ix, const emb_search_opts *o,
                      const float *q, int m)
{
	emb_search *s;
	emb_err err = { "" };
	emb_hit *h = malloc((size_t)m * o->k * sizeof(emb_hit));
	int *nh = malloc((size_t)m * sizeof(int));
	size_t cap = (size_t)m * o->k * 32 + 1, len = 0;
	char *out = malloc(cap);

	cr_assert(h && nh && out);
	cr_assert_eq(emb_search_new(&s, ix, o, &err), 0, "%s", err.msg);
	emb_search_run(s, h, nh, q, m);
	out[0] = 0;
	for (int i = 0; i < m; i++)
		for (int r = 0; r < nh[i]; r++)
			len += (size_t)snprintf(out + len, cap - len, "%d:%u:%a ", i,
			                        h[(size_t)i * o->k + r].doc,
			                        h[(size_t)i * o->k + r].score);
	emb_search_free(s);
	free(h);
	free(nh);
	return out;
}

Test(search, file_round_trip_and_rescore)
{
	char *dir = tmpdir(), *path, *file = tu_path("%s/ix.st", dir);
	int n = 500, dim = 40, m = 20;
	float *v = vectors(n, dim), *q = vectors(m, dim);
	emb_index *a, *b;
	emb_err err = { "" };
	emb_search_opts o = { 0 };

	path = write_jsonl(dir, "rt.jsonl", v, n, dim);
	cr_assert_eq(emb_index_from_jsonl(&a, path, EMB_IX_ALL, 0, &err), 0,
	             "%s", err.msg);
	cr_assert_eq(emb_index_write(a, file, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_index_open(&b, file, 0, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_index_count(b), (size_t)n);
	cr_assert_eq(emb_index_dim(b), dim);
	cr_assert_eq(emb_index_precisions(b), EMB_IX_ALL);
	o.k = 8;
	for (unsigned p = EMB_IX_F32; p <= EMB_IX_BINARY; p <<= 1)
		for (int sc = 0; sc < 2; sc++) {
			char *x, *y;
			o.first = p;
			o.score = sc;
			o.rescore = p == EMB_IX_F32 ? 0 : 3;
			o.threads = 1 + (int)(p % 3);
			x = run_text(a, &o, q, m);
			y = run_text(b, &o, q, m);
			cr_assert_str_eq(x, y, "%s score %d", emb_ix_prec_name(p), sc);
			free(x);
			free(y);
		}
	/* binary + rescore in f32 with a multiplier covering the whole index:
	 * exactly the f32 search */
	{
		char *x, *y;
		o.score = EMB_SCORE_COSINE;
		o.first = EMB_IX_F32;
		o.rescore = 0;
		x = run_text(b, &o, q, m);
		o.first = EMB_IX_BINARY;
		o.rescore = n;
		o.with = EMB_IX_F32;
		y = run_text(b, &o, q, m);
		cr_assert_str_eq(x, y);
		free(x);
		free(y);
	}
	emb_index_free(a);
	emb_index_free(b);
	free(path);
	free(file);
	free(dir);
	free(v);
	free(q);
}

Test(search, f16_rounding_and_empty)
{
	char *dir = tmpdir(), *path;
	float v[4] = { 1.0f / 3, 65519.0f, 1e-8f, -2.0009765625f };
	float q[4] = { 1, 0, 0, 0 };
	emb_index *ix;
	emb_err err = { "" };
	emb_search_opts o = { 0 };
	emb_search *s;
	emb_hit h[4];
	int nh[2];
	/* f16 of each value, by dot with the unit vectors */
	static const float want[4] = { 0.333251953125f, 65504.0f, 0.0f,
	                               -2.0f };

	path = write_jsonl(dir, "one.jsonl", v, 1, 4);
	cr_assert_eq(emb_index_from_jsonl(&ix, path, EMB_IX_F16, 0, &err), 0,
	             "%s", err.msg);
	o.k = 1;
	o.score = EMB_SCORE_DOT;
	cr_assert_eq(emb_search_new(&s, ix, &o, &err), 0, "%s", err.msg);
	for (int d = 0; d < 4; d++) {
		memset(q, 0, sizeof(q));
		q[d] = 1;
		emb_search_run(s, h, nh, q, 1);
		cr_assert_eq(nh[0], 1);
		cr_assert(h[0].score == want[d], "value %d: %.9g, want %.9g", d,
		          h[0].score, want[d]);
	}
	emb_search_free(s);
	emb_index_free(ix);
	free(path);

	path = tu_path("%s/empty.jsonl", dir);
	fclose(fopen(path, "w"));
	cr_assert_eq(emb_index_from_jsonl(&ix, path, EMB_IX_ALL, 0, &err), 0,
	             "%s", err.msg);
	cr_assert_eq(emb_index_count(ix), 0);
	o.k = 5;
	cr_assert_eq(emb_search_new(&s, ix, &o, &err), 0, "%s", err.msg);
	nh[0] = nh[1] = -1;
	emb_search_run(s, h, nh, q, 2);
	cr_assert(nh[0] == 0 && nh[1] == 0);
	emb_search_free(s);
	emb_index_free(ix);
	free(path);
	free(dir);
}

Test(search, tampered_file)
{
	char *dir = tmpdir(), *path, *file = tu_path("%s/t.st", dir), *text, *orig;
	float *v = vectors(20, 8);
	emb_index *ix;
	emb_err err = { "" };
	size_t len;
	char *p;
	FILE *f;

	path = write_jsonl(dir, "t.jsonl", v, 20, 8);
	cr_assert_eq(emb_index_from_jsonl(&ix, path, EMB_IX_F32, 0, &err), 0);
	cr_assert_eq(emb_index_write(ix, file, &err), 0, "%s", err.msg);
	emb_index_free(ix);
	cr_assert((text = tu_slurp(file, &len)));
	cr_assert((orig = malloc(len)));
	memcpy(orig, text, len);
	/* ids.offsets is the first tensor: make offset 1 larger than 2 */
	{
		uint64_t hl;
		int64_t o2;
		memcpy(&hl, text, 8);
		memcpy(&o2, text + 8 + hl + 16, 8);
		o2 += 100;
		memcpy(text + 8 + hl + 8, &o2, 8);
	}
	cr_assert((f = fopen(file, "wb")));
	fwrite(text, 1, len, f);
	fclose(f);
	cr_assert_eq(emb_index_open(&ix, file, 0, &err), -1);
	cr_assert(strstr(err.msg, "t.st") && strstr(err.msg, "ids.offsets"),
	          "%s", err.msg);
	/* a wrong shape of the same size for f32: (2, 8, 16) -> (4, 4, 16) */
	memcpy(text, orig, len);
	p = memmem(text + 8, len - 8, "\"shape\":[2,8,16],", 17);
	cr_assert(p, "%.300s", text + 8);
	memcpy(p, "\"shape\":[4,4,16],", 17);
	cr_assert((f = fopen(file, "wb")));
	fwrite(text, 1, len, f);
	fclose(f);
	cr_assert_eq(emb_index_open(&ix, file, 0, &err), -1);
	cr_assert(strstr(err.msg, "t.st") && strstr(err.msg, "'f32'"), "%s",
	          err.msg);
	free(orig);
	free(text);
	free(path);
	free(file);
	free(dir);
	free(v);
}

/* ---- the search kernels of the kernel table ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

Test(search_kernels, hamming8_scalar_counts_bits)
{
	static const int words[] = { 1, 2, 5, 12, 31, 32, 33, 64 };
	const emb_kernels *k = emb_kernels_get("scalar");

	cr_assert(k && k->hamming8);
	for (size_t wi = 0; wi < sizeof(words) / sizeof(words[0]); wi++) {
		int w = words[wi];
		size_t np = 3;
		uint64_t *pw = malloc(np * w * 8 * sizeof(uint64_t));
		uint64_t *qw = malloc(w * sizeof(uint64_t));
		int32_t d[3 * 8];
		cr_assert(pw && qw);
		for (size_t i = 0; i < np * w * 8; i++)
			pw[i] = rng64();
		for (int i = 0; i < w; i++)
			qw[i] = i == 0 ? ~0ull : rng64();
		pw[0] = 0;      /* document 0, word 0: all 64 bits differ */
		k->hamming8(d, pw, qw, w, np);
		for (size_t p = 0; p < np; p++)
			for (int c = 0; c < 8; c++) {
				int want = 0;
				for (int i = 0; i < w; i++)
					for (int b = 0; b < 64; b++)
						want += (int)(((pw[(p * w + i) * 8 + c] ^ qw[i]) >>
						               b) & 1);
				cr_assert_eq(d[p * 8 + c], want, "w=%d panel %zu doc %d",
				             w, p, c);
			}
		free(pw);
		free(qw);
	}
}

Test(search_kernels, every_table_matches_scalar)
{
	static const char *const isas[] = { "avx2", "avxvnni", "avx512", "vnni",
	                                    "amx" };
	static const int words[] = { 1, 3, 12, 30, 31, 32, 62, 63, 100 };
	static const int dims[] = { 1, 3, 16, 17, 64, 385 };
	const emb_kernels *ref = emb_kernels_get("scalar");
	int tested = 0;

	for (size_t t = 0; t < sizeof(isas) / sizeof(isas[0]); t++) {
		const emb_kernels *k = emb_kernels_get(isas[t]);
		if (!k)
			continue;
		tested++;
		cr_assert(k->hamming8 && k->dot4, "%s: search kernels missing",
		          isas[t]);
		for (size_t wi = 0; wi < sizeof(words) / sizeof(words[0]); wi++) {
			int w = words[wi];
			size_t np = 5;
			uint64_t *pw = malloc(np * w * 8 * sizeof(uint64_t));
			uint64_t *qw = malloc(w * sizeof(uint64_t));
			int32_t a[5 * 8 + 1], b[5 * 8 + 1];
			cr_assert(pw && qw);
			for (size_t i = 0; i < np * w * 8; i++)
				pw[i] = i % 7 == 0 ? ~0ull : rng64();
			for (int i = 0; i < w; i++)
				qw[i] = i % 5 == 0 ? 0 : rng64();
			a[np * 8] = b[np * 8] = -7;
			ref->hamming8(a, pw, qw, w, np);
			k->hamming8(b, pw, qw, w, np);
			cr_assert(!memcmp(a, b, sizeof(a)), "%s hamming8 w=%d", isas[t],
			          w);
			cr_assert_eq(b[np * 8], -7, "%s hamming8 wrote past np panels",
			             isas[t]);
			free(pw);
			free(qw);
		}
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++) {
			int n = dims[di];
			for (size_t inc = 1; inc <= EMB_PANEL; inc += EMB_PANEL - 1) {
				float *q = tu_rand_vec((size_t)n, 1.0f);
				float *x = tu_rand_vec((size_t)n * inc * 4, 1.0f);
				const float *xs[4];
				float ya[4], yb[4];
				for (int c = 0; c < 4; c++)
					xs[c] = x + (size_t)c * n * inc;
				ref->dot4(ya, q, xs, inc, n);
				k->dot4(yb, q, xs, inc, n);
				for (int c = 0; c < 4; c++) {
					/* same operations, fused: one rounding fewer each */
					double want = 0, mag = 0;
					float fused = 0;
					for (int i = 0; i < n; i++) {
						want += (double)q[i] * xs[c][(size_t)i * inc];
						mag += fabs((double)q[i] * xs[c][(size_t)i * inc]);
						fused = fmaf(q[i], xs[c][(size_t)i * inc], fused);
					}
					cr_assert_eq(yb[c], fused, "%s dot4 n=%d inc=%zu lane %d: "
					             "%.9g, fused chain %.9g", isas[t], n, inc, c,
					             yb[c], fused);
					cr_assert(fabs(ya[c] - want) <= 1e-6 * mag + 1e-7,
					          "scalar dot4 n=%d lane %d: %.9g vs %.9g", n, c,
					          ya[c], want);
				}
				free(q);
				free(x);
			}
		}
	}
	if (!tested)
		cr_skip_test("no SIMD kernel table in this build or on this CPU");
}

/* the first i with x = row[i] (* inv[i]) >= bar or not finite: a plain loop */
static int find_ge_ref(const float *row, const float *inv, int n, float bar)
{
	for (int i = 0; i < n; i++) {
		float x = inv ? row[i] * inv[i] : row[i];
		if (x >= bar || x != x || x == INFINITY || x == -INFINITY)
			return i;
	}
	return n;
}

Test(search_kernels, find_ge_every_table)
{
	static const char *const isas[] = { "scalar", "avx2", "avxvnni", "avx512",
	                                    "vnni", "amx" };
	enum { N = 67 };
	float row[N], inv[N];
	const emb_kernels *ref = emb_kernels_get("scalar");
	int hits = 0;

	cr_assert(ref && ref->find_ge);
	for (int i = 0; i < N; i++) {
		row[i] = (float)(irand(2001) - 1000) / 100.0f;
		inv[i] = (float)(irand(100) + 1) / 50.0f;
	}
	/* values that are not finite, and a product that overflows */
	row[13] = NAN;
	row[29] = -INFINITY;
	row[41] = INFINITY;
	row[50] = 3e38f;
	inv[50] = 4.0f;
	for (size_t t = 0; t < sizeof(isas) / sizeof(isas[0]); t++) {
		const emb_kernels *k = emb_kernels_get(isas[t]);
		if (!k)
			continue;
		cr_assert(k->find_ge, "%s: find_ge missing", isas[t]);
		for (int j = 0; j < N; j++)
			for (int n = 0; j + n <= N; n += 1 + n / 3)
				for (float bar = -12; bar <= 12; bar += 1.5f)
					for (int wi = 0; wi < 2; wi++) {
						const float *w = wi ? inv + j : NULL;
						int want = find_ge_ref(row + j, w, n, bar);
						int got = k->find_ge(row + j, w, n, bar);
						cr_assert_eq(got, want, "%s find_ge start %d n %d "
						             "bar %g inv %d: %d, want %d", isas[t],
						             j, n, (double)bar, wi, got, want);
						hits += want < n;
					}
	}
	cr_assert(hits > 0);
}

/* finite float32 documents and queries whose float products overflow:
 * every score written is a number, the parallel document is kept, and a
 * dot product past float32's range is the query's error (nhits -1) */
Test(search, scores_past_float_range)
{
	char *dir = tmpdir(), *path;
	/* 40 documents: 0 huge, 1 parallel to it, the others small */
	enum { N = 40, DIM = 8 };
	float v[N * DIM], q[2 * DIM];
	emb_index *ix;
	emb_err err = { "" };
	emb_search_opts o = { 0 };
	emb_search *s;
	emb_hit h[2 * N];
	int nh[2];

	for (int j = 0; j < N; j++)
		for (int k = 0; k < DIM; k++)
			v[j * DIM + k] = j == 0 ? 3e38f : j == 1 ? 1.0f :
			                 (float)((j * 7 + k * 3) % 11) - 5.0f;
	for (int k = 0; k < DIM; k++) {
		q[k] = 1.0f;            /* parallel to documents 0 and 1 */
		q[DIM + k] = 3e38f;     /* a huge query: the same direction */
	}
	path = write_jsonl(dir, "huge.jsonl", v, N, DIM);
	cr_assert_eq(emb_index_from_jsonl(&ix, path, EMB_IX_F32, 0, &err), 0,
	             "%s", err.msg);
	for (int th = 1; th <= 2; th++) {
		o.k = N;
		o.threads = th;
		o.score = EMB_SCORE_COSINE;
		cr_assert_eq(emb_search_new(&s, ix, &o, &err), 0, "%s", err.msg);
		emb_search_run(s, h, nh, q, 2);
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(nh[i], N, "query %d: %d hits", i, nh[i]);
			for (int c = 0; c < N; c++)
				cr_assert(isfinite(h[i * N + c].score) &&
				          fabsf(h[i * N + c].score) <= 1.0001f,
				          "query %d hit %d: %g", i, c,
				          (double)h[i * N + c].score);
			/* both parallel documents first, score 1, by index */
			cr_assert_eq(h[i * N].doc, 0);
			cr_assert_eq(h[i * N + 1].doc, 1);
			cr_assert_float_eq(h[i * N].score, 1.0f, 1e-6);
			cr_assert_float_eq(h[i * N + 1].score, 1.0f, 1e-6);
		}
		emb_search_free(s);
		o.score = EMB_SCORE_DOT;
		cr_assert_eq(emb_search_new(&s, ix, &o, &err), 0, "%s", err.msg);
		emb_search_run(s, h, nh, q, 2);
		cr_assert_eq(nh[0], -1, "q . huge overflows: %d", nh[0]);
		cr_assert_eq(nh[1], -1);
		emb_buf b = { 0 };
		cr_assert_eq(emb_search_results_json(&b, ix, h, -1, &err), -1);
		cr_assert_not_null(strstr(err.msg, "past float32's range"));
		free(b.p);
		emb_search_free(s);
	}
	emb_index_free(ix);
	free(path);
	free(dir);
}
