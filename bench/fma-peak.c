/*
 * fma-peak - measured fp32 FMA throughput of this machine (for `make bench`).
 *
 * usage: fma-peak [THREADS...]     (default: 1 2)
 * For each thread count, every thread runs independent chains of
 * vfmadd on 12 vector accumulators (AVX-512 when the CPU has it, else
 * AVX2+FMA) for a few ms; best of 40 (the machine may be shared).  Prints one JSON line per count:
 * {"threads":T,"isa":"avx512","gflops":G}  (2 flops per FMA lane).
 * Build: cc -O2 -pthread -o fma-peak fma-peak.c
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 4000000L

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile float sink;

__attribute__((target("avx512f")))
static void *run512(void *arg)
{
	(void)arg;
	__m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
	__m512 c0 = _mm512_set1_ps(1), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0,
	       c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
	for (long i = 0; i < ITERS; i++) {
		c0 = _mm512_fmadd_ps(c0, a, b); c1 = _mm512_fmadd_ps(c1, a, b);
		c2 = _mm512_fmadd_ps(c2, a, b); c3 = _mm512_fmadd_ps(c3, a, b);
		c4 = _mm512_fmadd_ps(c4, a, b); c5 = _mm512_fmadd_ps(c5, a, b);
		c6 = _mm512_fmadd_ps(c6, a, b); c7 = _mm512_fmadd_ps(c7, a, b);
		c8 = _mm512_fmadd_ps(c8, a, b); c9 = _mm512_fmadd_ps(c9, a, b);
		c10 = _mm512_fmadd_ps(c10, a, b); c11 = _mm512_fmadd_ps(c11, a, b);
		__asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3));
	}
	__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
	           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
	sink = _mm512_reduce_add_ps(s);
	return NULL;
}

__attribute__((target("avx2,fma")))
static void *run256(void *arg)
{
	(void)arg;
	__m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
	__m256 c0 = _mm256_set1_ps(1), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0,
	       c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
	for (long i = 0; i < ITERS; i++) {
		c0 = _mm256_fmadd_ps(c0, a, b); c1 = _mm256_fmadd_ps(c1, a, b);
		c2 = _mm256_fmadd_ps(c2, a, b); c3 = _mm256_fmadd_ps(c3, a, b);
		c4 = _mm256_fmadd_ps(c4, a, b); c5 = _mm256_fmadd_ps(c5, a, b);
		c6 = _mm256_fmadd_ps(c6, a, b); c7 = _mm256_fmadd_ps(c7, a, b);
		c8 = _mm256_fmadd_ps(c8, a, b); c9 = _mm256_fmadd_ps(c9, a, b);
		c10 = _mm256_fmadd_ps(c10, a, b); c11 = _mm256_fmadd_ps(c11, a, b);
		__asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3));
	}
	__m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
	           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
	float t[8];
	_mm256_storeu_ps(t, s);
	sink = t[0] + t[7];
	return NULL;
}

int main(int argc, char **argv)
{
	int counts[16], nc = 0;
	for (int i = 1; i < argc && nc < 16; i++)
		counts[nc++] = atoi(argv[i]);
	if (!nc) {
		counts[0] = 1; counts[1] = 2; nc = 2;
	}
	__builtin_cpu_init();
	int w512 = __builtin_cpu_supports("avx512f");
	if (!w512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
		fprintf(stderr, "fma-peak: no FMA support\n");
		return 1;
	}
	void *(*fn)(void *) = w512 ? run512 : run256;
	double lanes = w512 ? 16 : 8;
	for (int c = 0; c < nc; c++) {
		int t = counts[c] < 1 ? 1 : counts[c] > 64 ? 64 : counts[c];
		double best = 1e30;
		for (int rep = 0; rep < 40; rep++) {
			pthread_t th[64];
			double t0 = now();
			for (int i = 0; i < t; i++)
				pthread_create(&th[i], NULL, fn, NULL);
			for (int i = 0; i < t; i++)
				pthread_join(th[i], NULL);
			double dt = now() - t0;
			if (dt < best)
				best = dt;
		}
		double flops = 2.0 * lanes * 12 * ITERS * t;
		printf("{\"threads\":%d,\"isa\":\"%s\",\"gflops\":%.1f}\n", t,
		       w512 ? "avx512" : "avx2", flops / best / 1e9);
	}
	return 0;
}
