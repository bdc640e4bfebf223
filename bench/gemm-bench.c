/*
 * gemm-bench - GFLOP/s of emb's fp32 GEMM kernel on the minilm-l6 shapes
 * (QKV, FFN up, FFN down, attention output), one thread, in isolation;
 * best of 40 short trials (the machine may be shared).
 * usage: gemm-bench [ISA] [M] [ACT]   (default: avx512, M = 256, no act)
 * Prints one JSON line per shape.  ACT (gelu, gelu_tanh, relu): time the
 * GEMM with that activation fused into its epilogue (gemm_act) instead,
 * and add "act" to each line.  Built by scripts/bench against lib/libemb.a.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kern/kernels.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *isa = argc > 1 ? argv[1] : "avx512";
	if (!emb_kernels_get(isa))
		isa = emb_kernels_get("avx2") ? "avx2" : "scalar";
	int m = argc > 2 ? atoi(argv[2]) : 256;
	const char *actname = argc > 3 ? argv[3] : NULL;
	int act = EMB_KACT_NONE;
	if (actname) {
		if (!strcmp(actname, "gelu"))
			act = EMB_KACT_GELU;
		else if (!strcmp(actname, "gelu_tanh"))
			act = EMB_KACT_GELU_TANH;
		else if (!strcmp(actname, "relu"))
			act = EMB_KACT_RELU;
		else {
			fprintf(stderr, "gemm-bench: unknown act %s\n", actname);
			return 2;
		}
	}
	const emb_kernels *k = emb_kernels_get(isa);
	int shapes[][2] = { { 384, 384 }, { 1152, 384 }, { 1536, 384 }, { 384, 1536 } };
	if (!k) {
		fprintf(stderr, "gemm-bench: %s unsupported\n", isa);
		return 1;
	}
	for (int s = 0; s < 4; s++) {
		int n = shapes[s][0], kk = shapes[s][1];
		float *x = malloc(sizeof(float) * m * kk), *w = malloc(sizeof(float) * n * kk);
		float *b = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * m * n);
		float *wp = aligned_alloc(64, (emb_pack_size(n, kk) * 4 + 63) / 64 * 64);
		for (int i = 0; i < m * kk; i++) x[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f;
		for (int i = 0; i < n * kk; i++) w[i] = (float)((i * 104729) % 1000) / 1000 - 0.5f;
		for (int i = 0; i < n; i++) b[i] = 0.1f;
		emb_pack_weights(wp, w, n, kk);
		double best = 1e30;
		int reps = (int)(4e7 / (2.0 * m * n * kk)) + 1;
		for (int t = 0; t < 40; t++) {
			double t0 = now();
			for (int r = 0; r < reps; r++) {
				if (act == EMB_KACT_NONE)
					k->gemm(y, n, x, kk, wp, b, m, n, kk);
				else
					k->gemm_act(y, n, x, kk, wp, b, m, n, kk, act);
			}
			double dt = (now() - t0) / reps;
			if (dt < best) best = dt;
		}
		printf("{\"isa\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,", k->name, m, n, kk);
		if (act != EMB_KACT_NONE)
			printf("\"act\":\"%s\",", actname);
		printf("\"gflops\":%.1f}\n", 2.0 * m * n * kk / best / 1e9);
		free(x); free(w); free(b); free(y); free(wp);
	}
	return 0;
}
