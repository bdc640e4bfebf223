/*
 * search-bench - emb-search's core in process (for scripts/bench-search).
 * usage: search-bench INDEX QUERIES.f32 K REPS THREADS...
 * INDEX: an index file with f32, int8 and binary matrices; QUERIES.f32:
 * raw little-endian float32 rows of its dimension.  Prints JSON lines:
 *   {"what":"load", "ms", "rss_kb", "file_kb"}  emb_index_open + the
 *       searcher (emb_search_new, 1 thread), best of 5; resident memory
 *       added by the first open
 *   {"what":"gemm", "threads", "s", "gflops"}  the scoring GEMM alone:
 *       the kernel over every 256-document block of the mmapped f32
 *       panels for the queries in passes of 256, as the search runs it,
 *       without the top-k
 *   {"what":"f32"|"bin-i8"|"bin-f32", "threads", "s"}  emb_search_run over
 *       all queries (dot, top K; binary: --rescore 4 with int8 or f32)
 * Seconds: best of REPS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/threadpool.h"
#include "io/io.h"
#include "kern/kernels.h"
#include "st/search.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long rss_kb(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * 4;
}

typedef struct gjob {
	const emb_kernels *k;
	const float *wp, *q;
	float **y;
	int m, dim;
	size_t n;
} gjob;

static void gemm_task(void *ctx, size_t b0, size_t b1, int tid)
{
	gjob *g = ctx;
	for (size_t b = b0; b < b1; b++) {
		size_t j0 = b * 256;
		int nb = g->n - j0 < 256 ? (int)(g->n - j0) : 256;
		g->k->gemm(g->y[tid], 256, g->q, g->dim,
		           g->wp + j0 * (size_t)g->dim, NULL, g->m, nb, g->dim);
	}
}

int main(int argc, char **argv)
{
	emb_err err = { "" };
	emb_index *ix;
	emb_search *s;
	emb_search_opts o = { 0 };
	double best;
	long r0, r1;

	if (argc < 6) {
		fprintf(stderr, "usage: search-bench INDEX QUERIES.f32 K REPS THREADS...\n");
		return 2;
	}
	int k = atoi(argv[3]), reps = atoi(argv[4]);
	o.k = k;
	o.score = EMB_SCORE_DOT;
	o.threads = 1;
	/* load */
	r0 = rss_kb();
	best = 1e30;
	for (int r = 0; r < 5; r++) {
		double t0 = now();
		if (emb_index_open(&ix, argv[1], 0, &err) < 0 ||
		    emb_search_new(&s, ix, &o, &err) < 0) {
			fprintf(stderr, "search-bench: %s\n", err.msg);
			return 1;
		}
		double dt = now() - t0;
		if (r == 0)
			r1 = rss_kb();
		best = dt < best ? dt : best;
		emb_search_free(s);
		if (r < 4)
			emb_index_free(ix);
	}
	{
		FILE *f = fopen(argv[1], "rb");
		long sz = 0;
		if (f) {
			fseek(f, 0, SEEK_END);
			sz = ftell(f);
			fclose(f);
		}
		printf("{\"what\":\"load\",\"ms\":%.3f,\"rss_kb\":%ld,\"file_kb\":%ld}\n",
		       best * 1e3, r1 - r0, sz / 1024);
	}
	int dim = emb_index_dim(ix);
	size_t n = emb_index_count(ix);
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	int m = (int)(ftell(f) / 4 / dim);
	fseek(f, 0, SEEK_SET);
	float *q = malloc((size_t)m * dim * 4);
	if (!q || fread(q, 4, (size_t)m * dim, f) != (size_t)m * dim)
		return 1;
	fclose(f);
	emb_hit *hits = malloc((size_t)m * k * sizeof(emb_hit));
	int *nh = malloc((size_t)m * sizeof(int));

	/* the scoring GEMM alone, over the mmapped panels */
	emb_safetensors *st;
	const emb_tensor *t;
	const emb_kernels *kern;
	if (emb_safetensors_open(&st, argv[1], &err) < 0 ||
	    !(t = emb_safetensors_find(st, "f32")) ||
	    emb_kernels_select(&kern, &err) < 0) {
		fprintf(stderr, "search-bench: no f32 matrix %s\n", err.msg);
		return 1;
	}
	for (int a = 5; a < argc; a++) {
		int th = atoi(argv[a]);
		emb_threads *tp;
		gjob g = { kern, t->data, NULL, NULL, 0, dim, n };
		if (emb_threads_new(&tp, th, &err) < 0)
			return 1;
		g.y = malloc((size_t)th * sizeof(float *));
		for (int i = 0; i < th; i++)
			g.y[i] = malloc(256 * 256 * sizeof(float));
		best = 1e30;
		for (int r = 0; r < reps; r++) {
			double t0 = now();
			for (int q0 = 0; q0 < m; q0 += 256) {
				g.q = q + (size_t)q0 * dim;
				g.m = m - q0 < 256 ? m - q0 : 256;
				emb_threads_for(tp, (n + 255) / 256, 1, gemm_task, &g);
			}
			double dt = now() - t0;
			best = dt < best ? dt : best;
		}
		printf("{\"what\":\"gemm\",\"isa\":\"%s\",\"threads\":%d,\"s\":%.6f,"
		       "\"gflops\":%.1f}\n", kern->name, th, best,
		       2.0 * m * (double)n * dim / best / 1e9);
		for (int i = 0; i < th; i++)
			free(g.y[i]);
		free(g.y);
		emb_threads_free(tp);
	}
	emb_safetensors_free(st);

	static const struct { const char *what; unsigned first, with; } runs[] = {
		{ "f32", EMB_IX_F32, 0 },
		{ "bin-i8", EMB_IX_BINARY, EMB_IX_INT8 },
		{ "bin-f32", EMB_IX_BINARY, EMB_IX_F32 },
	};
	for (size_t x = 0; x < sizeof(runs) / sizeof(runs[0]); x++)
		for (int a = 5; a < argc; a++) {
			o.threads = atoi(argv[a]);
			o.first = runs[x].first;
			o.with = runs[x].with;
			o.rescore = runs[x].with ? 4 : 0;
			if (emb_search_new(&s, ix, &o, &err) < 0) {
				fprintf(stderr, "search-bench: %s\n", err.msg);
				return 1;
			}
			best = 1e30;
			for (int r = 0; r < reps; r++) {
				double t0 = now();
				emb_search_run(s, hits, nh, q, m);
				double dt = now() - t0;
				best = dt < best ? dt : best;
			}
			printf("{\"what\":\"%s\",\"threads\":%d,\"s\":%.6f}\n",
			       runs[x].what, o.threads, best);
			emb_search_free(s);
		}
	emb_index_free(ix);
	free(q);
	free(hits);
	free(nh);
	return 0;
}
