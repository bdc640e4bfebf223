/*
 * gemm-i8-bench - the W8A8 int8 GEMM (qkernels.h) against emb's fp32
 * GEMM on the minilm-l6 shapes (QKV, FFN up, FFN down, attention
 * output), one thread, in isolation; best of 40 short trials (the
 * machine may be shared), the kernels interleaved in each trial.
 * usage: gemm-i8-bench [M [BIG]]      (default 256 4096)
 * Prints one JSON line per shape: GFLOP/s (2 m n k / s) of the fp32
 * kernel, of the int8 kernel alone, of activation quantization + int8
 * kernel, and the quantizer's cost as a share of the int8 kernel's, and
 * of the bf16 kernel (bkernels.h, activations rounded inside); then
 * "blocked": BIG rows (out of cache, as in a forward pass) in blocks of
 * 96 rows, each quantized then multiplied, as emb's W8A8 linear does,
 * against the fp32 kernel on the same blocks, and the bf16 kernel on
 * them (activations rounded inside, per block).  Where the CPU has
 * AVX-512 BF16 and the table chose another bf16 GEMM (Intel's cores
 * without AMX, whose vdpbf16ps runs at half the FMA rate), the
 * vdpbf16ps GEMM in cache too ("gflops_bf16_dot").
 * The kernel table is the one emb picks ($EMB_ISA or the CPU's best):
 * EMB_ISA=amx and EMB_ISA=vnni give the AMX and the AVX-512 int8 and
 * bf16 kernels beside the same AVX-512 fp32 one.
 * Built by scripts/bench against lib/libemb.a.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "kern/kernels.h"
#include "kern/qkernels.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int m = argc > 1 ? atoi(argv[1]) : 256;
	int big = argc > 2 ? atoi(argv[2]) : 4096;
	const emb_kernels *k = NULL;
	int shapes[][2] = { { 1152, 384 }, { 384, 384 }, { 1536, 384 }, { 384, 1536 } };

	/* the table emb would pick ($EMB_ISA or the best the CPU has) */
	if (emb_kernels_select(&k, NULL) < 0)
		k = NULL;
	emb_gemm_i8_fn gi8 = k ? k->gemm_i8 : NULL;
	emb_u8_quant_fn quant = k ? k->u8_quantize : NULL;
	/* the AVX-512 BF16 GEMM where the CPU has it and the table chose
	 * another (vdpbf16ps at half the FMA rate): timed beside it */
	emb_gemm_bf16_fn dot = emb_gemm_bf16_avx512();
	if (k && dot == k->gemm_bf16)
		dot = NULL;
	const char *kname = k ? k->i8_name : NULL;
	if (!gi8 || !k || m < 1 || big < 96) {
		fprintf(stderr, "gemm-i8-bench: no int8 kernel or bad M\n");
		return 1;
	}
	for (int s = 0; s < 4; s++) {
		int n = shapes[s][0], kk = shapes[s][1], kp = (kk + 3) / 4 * 4;
		float *x = malloc(sizeof(float) * m * kk), *w = malloc(sizeof(float) * n * kk);
		float *b = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * m * n);
		float *wp = aligned_alloc(64, (emb_pack_size(n, kk) * 4 + 63) / 64 * 64);
		int8_t *q = malloc((size_t)n * kk);
		int8_t *qp = aligned_alloc(64, (emb_i8_pack_size(n, kk) + 63) / 64 * 64);
		int mu = m > 96 ? m : 96;       /* rows of u, xs, xz */
		uint8_t *u = aligned_alloc(64, ((size_t)mu * kp + 63) / 64 * 64);
		float *ws = malloc(sizeof(float) * n), *xs = malloc(sizeof(float) * mu);
		int32_t *wsum = malloc(sizeof(int32_t) * n), *xz = malloc(sizeof(int32_t) * mu);
		for (int i = 0; i < m * kk; i++) x[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f;
		for (int i = 0; i < n * kk; i++) w[i] = (float)((i * 104729) % 1000) / 1000 - 0.5f;
		for (int i = 0; i < n; i++) b[i] = 0.1f;
		emb_pack_weights(wp, w, n, kk);
		uint16_t *wb = aligned_alloc(64, (emb_bf16_pack_size(n, kk) * 2 + 63) / 64 * 64);
		emb_bf16_pack(wb, w, n, kk);
		emb_i8_quantize_rows(q, ws, w, n, kk);
		for (int j = 0; j < n; j++) {
			wsum[j] = 0;
			for (int t = 0; t < kk; t++)
				wsum[j] += q[(size_t)j * kk + t];
		}
		emb_i8_pack(qp, q, n, kk);
		double bf = 1e30, bi = 1e30, bq = 1e30, bb = 1e30, bd = 1e30;
		int reps = (int)(4e7 / (2.0 * m * n * kk)) + 1;
		for (int t = 0; t < 40; t++) {
			double t0 = now();
			for (int r = 0; r < reps; r++)
				k->gemm(y, n, x, kk, wp, b, m, n, kk);
			double t1 = now();
			for (int r = 0; r < reps; r++)
				gi8(y, n, u, kp, xs, xz, qp, ws, wsum, b, m, n, kp);
			double t2 = now();
			for (int r = 0; r < reps; r++)
				quant(u, kp, xs, xz, x, kk, m, kk);
			double t3 = now();
			for (int r = 0; r < reps; r++)
				k->gemm_bf16(y, n, x, kk, wb, b, m, n, kk);
			double t4 = now();
			for (int r = 0; dot && r < reps; r++)
				dot(y, n, x, kk, wb, b, m, n, kk);
			double t5 = now();
			if ((t5 - t4) / reps < bd) bd = (t5 - t4) / reps;
			if ((t4 - t3) / reps < bb) bb = (t4 - t3) / reps;
			if ((t1 - t0) / reps < bf) bf = (t1 - t0) / reps;
			if ((t2 - t1) / reps < bi) bi = (t2 - t1) / reps;
			if ((t3 - t2) / reps < bq) bq = (t3 - t2) / reps;
		}
		double f = 2.0 * m * n * kk / 1e9;
		printf("{\"isa\":\"%s\",\"i8\":\"%s\",\"bf16\":\"%s\",\"m\":%d,"
		       "\"n\":%d,\"k\":%d,"
		       "\"gflops_f32\":%.1f,\"gops_i8\":%.1f,\"gops_i8_quant\":%.1f,"
		       "\"quant_share\":%.3f,\"speedup\":%.2f,\"gflops_bf16\":%.1f,"
		       "\"speedup_bf16\":%.2f",
		       k->name, kname, k->bf16_name, m, n, kk, f / bf, f / bi,
		       f / (bi + bq), bq / bi, bf / (bi + bq), f / bb, bf / bb);
		if (dot)
			printf(",\"gflops_bf16_dot\":%.1f,\"speedup_bf16_dot\":%.2f",
			       f / bd, bf / bd);
		printf("}\n");

		/* blocked, out of cache */
		float *bx = malloc(sizeof(float) * big * kk), *by = malloc(sizeof(float) * big * n);
		for (size_t i = 0; i < (size_t)big * kk; i++) bx[i] = x[i % ((size_t)m * kk)];
		for (size_t i = 0; i < (size_t)big * n; i++) by[i] = 0;
		double cf = 1e30, ci = 1e30, cb = 1e30;
		for (int t = 0; t < 5; t++) {
			double t0 = now();
			for (int r0 = 0; r0 < big; r0 += 96) {
				int rr = big - r0 < 96 ? big - r0 : 96;
				k->gemm(by + (size_t)r0 * n, n, bx + (size_t)r0 * kk, kk, wp, b, rr, n, kk);
			}
			double t1 = now();
			for (int r0 = 0; r0 < big; r0 += 96) {
				int rr = big - r0 < 96 ? big - r0 : 96;
				quant(u, kp, xs, xz, bx + (size_t)r0 * kk, kk, rr, kk);
				gi8(by + (size_t)r0 * n, n, u, kp, xs, xz, qp, ws, wsum, b, rr, n, kp);
			}
			double t2 = now();
			for (int r0 = 0; r0 < big; r0 += 96) {
				int rr = big - r0 < 96 ? big - r0 : 96;
				k->gemm_bf16(by + (size_t)r0 * n, n, bx + (size_t)r0 * kk, kk, wb, b, rr, n, kk);
			}
			double t3 = now();
			if (t1 - t0 < cf) cf = t1 - t0;
			if (t2 - t1 < ci) ci = t2 - t1;
			if (t3 - t2 < cb) cb = t3 - t2;
		}
		f = 2.0 * big * n * kk / 1e9;
		printf("{\"blocked\":%d,\"n\":%d,\"k\":%d,\"gflops_f32\":%.1f,"
		       "\"gops_i8_quant\":%.1f,\"speedup\":%.2f,\"gflops_bf16\":%.1f,"
		       "\"speedup_bf16\":%.2f}\n",
		       big, n, kk, f / cf, f / ci, cf / ci, f / cb, cf / cb);
		free(bx); free(by);
		free(x); free(w); free(b); free(y); free(wp); free(wb); free(q); free(qp);
		free(u); free(ws); free(xs); free(wsum); free(xz);
	}
	return 0;
}
