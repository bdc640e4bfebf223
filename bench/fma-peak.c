/*
 * fma-peak - measured fp32 FMA throughput of this machine (for `make bench`).
 *
 * usage: fma-peak [--bf16 | --vnni | --amx-int8 | --amx-bf16] [THREADS...]
 *        (default: 1 2)
 * For each thread count, every thread runs independent chains of
 * vfmadd on 12 vector accumulators (AVX-512 when the CPU has it, else
 * AVX2+FMA) in CHUNKS short chunks of about 0.1 ms and keeps its best
 * chunk (the machine may be shared: a chunk that was not preempted
 * shows the core's rate); the count's figure is the sum over its
 * threads.  Prints one JSON line per count:
 * {"threads":T,"isa":"avx512","gflops":G}  (2 flops per FMA lane).
 * --bf16: the same for the bf16 dot product vdpbf16ps (AVX-512 BF16),
 * the ceiling of the AVX-512 bf16 GEMM: 4 flops per 32-bit lane (two
 * products and their two adds), isa "avx512bf16"; exit 1 without it.
 * Its rate relative to the FMA's differs by CPU.
 * --vnni: the same for the int8 dot product vpdpbusd (AVX-512 VNNI),
 * the ceiling of the VNNI int8 GEMM: 8 ops per 32-bit lane (four u8 x
 * s8 products and their four adds: "gflops" is GOP/s), isa "vnni";
 * exit 1 without it.
 * --amx-int8, --amx-bf16: the tile unit's ceiling, the one of the AMX
 * GEMMs (lib/kern/kernels_*_amx.c): four accumulator tiles of 16 x 16
 * fed by two A and two B tiles that stay in the unit (no loads), isa
 * "amx-int8" (tdpbusd, 2 ops per u8 x s8 product: "gflops" is GOP/s)
 * or "amx-bf16" (tdpbf16ps, 2 flops per product); exit 1 where the CPU
 * or OS does not allow the tiles (base/cpu.c asks Linux for them).
 * Build: with lib/libemb.a (the AMX check), as `make bench-progs` does
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/cpu.h"

#define ITERS 50000L   /* per chunk: 12 x 50000 FMAs, about 0.1 ms */
#define CHUNKS 400

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile float sink;

typedef struct probe {
	void (*chunk)(void);
	double best;            /* seconds of the fastest chunk */
} probe;

static void *run(void *arg)
{
	probe *p = arg;

	p->best = 1e30;
	for (int c = 0; c < CHUNKS; c++) {
		double t0 = now();
		p->chunk();
		double dt = now() - t0;
		if (dt < p->best)
			p->best = dt;
	}
	return NULL;
}

__attribute__((target("avx512f")))
static void chunk512(void)
{
	__m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
	/* distinct starting values: identical chains would be merged by the
	 * compiler (common subexpressions), leaving fewer FMAs than counted */
	__m512 c0 = _mm512_set1_ps(1.00f), c1 = _mm512_set1_ps(1.01f),
	       c2 = _mm512_set1_ps(1.02f), c3 = _mm512_set1_ps(1.03f),
	       c4 = _mm512_set1_ps(1.04f), c5 = _mm512_set1_ps(1.05f),
	       c6 = _mm512_set1_ps(1.06f), c7 = _mm512_set1_ps(1.07f),
	       c8 = _mm512_set1_ps(1.08f), c9 = _mm512_set1_ps(1.09f),
	       c10 = _mm512_set1_ps(1.10f), c11 = _mm512_set1_ps(1.11f);
	for (long i = 0; i < ITERS; i++) {
		c0 = _mm512_fmadd_ps(c0, a, b); c1 = _mm512_fmadd_ps(c1, a, b);
		c2 = _mm512_fmadd_ps(c2, a, b); c3 = _mm512_fmadd_ps(c3, a, b);
		c4 = _mm512_fmadd_ps(c4, a, b); c5 = _mm512_fmadd_ps(c5, a, b);
		c6 = _mm512_fmadd_ps(c6, a, b); c7 = _mm512_fmadd_ps(c7, a, b);
		c8 = _mm512_fmadd_ps(c8, a, b); c9 = _mm512_fmadd_ps(c9, a, b);
		c10 = _mm512_fmadd_ps(c10, a, b); c11 = _mm512_fmadd_ps(c11, a, b);
		/* opaque to the optimizer: every chain stays a real FMA */
		__asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),
		                 "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
		                 "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
	}
	__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
	           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
	sink = _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma")))
static void chunk256(void)
{
	__m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
	/* distinct starting values: identical chains would be merged by the
	 * compiler (common subexpressions), leaving fewer FMAs than counted */
	__m256 c0 = _mm256_set1_ps(1.00f), c1 = _mm256_set1_ps(1.01f),
	       c2 = _mm256_set1_ps(1.02f), c3 = _mm256_set1_ps(1.03f),
	       c4 = _mm256_set1_ps(1.04f), c5 = _mm256_set1_ps(1.05f),
	       c6 = _mm256_set1_ps(1.06f), c7 = _mm256_set1_ps(1.07f),
	       c8 = _mm256_set1_ps(1.08f), c9 = _mm256_set1_ps(1.09f),
	       c10 = _mm256_set1_ps(1.10f), c11 = _mm256_set1_ps(1.11f);
	for (long i = 0; i < ITERS; i++) {
		c0 = _mm256_fmadd_ps(c0, a, b); c1 = _mm256_fmadd_ps(c1, a, b);
		c2 = _mm256_fmadd_ps(c2, a, b); c3 = _mm256_fmadd_ps(c3, a, b);
		c4 = _mm256_fmadd_ps(c4, a, b); c5 = _mm256_fmadd_ps(c5, a, b);
		c6 = _mm256_fmadd_ps(c6, a, b); c7 = _mm256_fmadd_ps(c7, a, b);
		c8 = _mm256_fmadd_ps(c8, a, b); c9 = _mm256_fmadd_ps(c9, a, b);
		c10 = _mm256_fmadd_ps(c10, a, b); c11 = _mm256_fmadd_ps(c11, a, b);
		/* opaque to the optimizer: every chain stays a real FMA */
		__asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3),
		                 "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),
		                 "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
	}
	__m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
	           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
	float t[8];
	_mm256_storeu_ps(t, s);
	sink = t[0] + t[7];
}

__attribute__((target("avx512f,avx512bf16")))
static void chunkbf16(void)
{
	/* the bf16 pairs (1, 1): products of ones, sums that stay finite */
	__m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);
	__m512 c0 = _mm512_set1_ps(1.00f), c1 = _mm512_set1_ps(1.01f),
	       c2 = _mm512_set1_ps(1.02f), c3 = _mm512_set1_ps(1.03f),
	       c4 = _mm512_set1_ps(1.04f), c5 = _mm512_set1_ps(1.05f),
	       c6 = _mm512_set1_ps(1.06f), c7 = _mm512_set1_ps(1.07f),
	       c8 = _mm512_set1_ps(1.08f), c9 = _mm512_set1_ps(1.09f),
	       c10 = _mm512_set1_ps(1.10f), c11 = _mm512_set1_ps(1.11f);
	for (long i = 0; i < ITERS; i++) {
		c0 = _mm512_dpbf16_ps(c0, a, a); c1 = _mm512_dpbf16_ps(c1, a, a);
		c2 = _mm512_dpbf16_ps(c2, a, a); c3 = _mm512_dpbf16_ps(c3, a, a);
		c4 = _mm512_dpbf16_ps(c4, a, a); c5 = _mm512_dpbf16_ps(c5, a, a);
		c6 = _mm512_dpbf16_ps(c6, a, a); c7 = _mm512_dpbf16_ps(c7, a, a);
		c8 = _mm512_dpbf16_ps(c8, a, a); c9 = _mm512_dpbf16_ps(c9, a, a);
		c10 = _mm512_dpbf16_ps(c10, a, a); c11 = _mm512_dpbf16_ps(c11, a, a);
		__asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),
		                 "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
		                 "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
	}
	__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
	           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
	sink = _mm512_reduce_add_ps(s);
}

/* twelve vpdpbusd chains on operands 0-11 with operand 12 (a), in one
 * block the compiler leaves as written */
#define VNNI12 \
	"vpdpbusd %12, %12, %0\n\tvpdpbusd %12, %12, %1\n\t" \
	"vpdpbusd %12, %12, %2\n\tvpdpbusd %12, %12, %3\n\t" \
	"vpdpbusd %12, %12, %4\n\tvpdpbusd %12, %12, %5\n\t" \
	"vpdpbusd %12, %12, %6\n\tvpdpbusd %12, %12, %7\n\t" \
	"vpdpbusd %12, %12, %8\n\tvpdpbusd %12, %12, %9\n\t" \
	"vpdpbusd %12, %12, %10\n\tvpdpbusd %12, %12, %11"

__attribute__((target("avx512f,avx512vnni")))
static void chunkvnni(void)
{
	/* u8 ones times s8 ones: each chain grows by 4 a step, far from
	 * overflow in a chunk; the chains named (an array of them is kept
	 * in memory across the asm) */
	__m512i a = _mm512_set1_epi8(1);
	__m512i c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;

	c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = c10 = c11 = a;
	for (long i = 0; i < ITERS; i++)
		__asm__ volatile(VNNI12
		                 : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),
		                   "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
		                   "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11)
		                 : "v"(a));
	c0 = _mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3));
	c4 = _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7));
	c8 = _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11));
	sink = (float)_mm512_reduce_add_epi32(_mm512_add_epi32(c0,
	                                      _mm512_add_epi32(c4, c8)));
}

/* the 64-byte ldtilecfg operand, palette 1: tiles 0-7 of 16 rows x 64
 * bytes */
static void amx_config(void)
{
	unsigned char c[64] __attribute__((aligned(64))) = { 1 };

	for (int t = 0; t < 8; t++) {
		c[16 + 2 * t] = 64;
		c[48 + t] = 16;
	}
	__asm__ volatile("ldtilecfg %0" : : "m"(*(const unsigned char (*)[64])c));
}

#define AMX_ITERS 2000L /* per chunk: 4 x 2000 tile products */

/* A tiles 4, 5 and B tiles 6, 7 (small values), accumulators 0-3 */
static void amx_chunk(int bf16)
{
	static const unsigned char ones[1024] __attribute__((aligned(64))) =
		{ [0 ... 1023] = 1 };
	unsigned char out[1024] __attribute__((aligned(64)));

	amx_config();
	__asm__ volatile(
		"tileloadd (%0,%1,1), %%tmm4\n\t"
		"tileloadd (%0,%1,1), %%tmm5\n\t"
		"tileloadd (%0,%1,1), %%tmm6\n\t"
		"tileloadd (%0,%1,1), %%tmm7\n\t"
		"tilezero %%tmm0\n\ttilezero %%tmm1\n\t"
		"tilezero %%tmm2\n\ttilezero %%tmm3"
		: : "r"(ones), "r"((long)64) : "memory");
	for (long i = 0; i < AMX_ITERS; i++) {
		if (bf16)
			__asm__ volatile(
				"tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
				"tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
				"tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
				"tdpbf16ps %%tmm7, %%tmm5, %%tmm3" : : : "memory");
		else
			__asm__ volatile(
				"tdpbusd %%tmm6, %%tmm4, %%tmm0\n\t"
				"tdpbusd %%tmm7, %%tmm4, %%tmm1\n\t"
				"tdpbusd %%tmm6, %%tmm5, %%tmm2\n\t"
				"tdpbusd %%tmm7, %%tmm5, %%tmm3" : : : "memory");
	}
	__asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilerelease"
	                 : : "r"(out), "r"((long)64) : "memory");
	sink = (float)out[5];
}

static void chunk_amx_int8(void)
{
	amx_chunk(0);
}

static void chunk_amx_bf16(void)
{
	amx_chunk(1);
}

int main(int argc, char **argv)
{
	int counts[16], nc = 0, bf16 = 0, vnni = 0, amx = 0;
	for (int i = 1; i < argc && nc < 16; i++)
		if (!strcmp(argv[i], "--bf16"))
			bf16 = 1;
		else if (!strcmp(argv[i], "--vnni"))
			vnni = 1;
		else if (!strcmp(argv[i], "--amx-int8"))
			amx = 1;
		else if (!strcmp(argv[i], "--amx-bf16"))
			amx = 2;
		else
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
	if (bf16 && !(w512 && __builtin_cpu_supports("avx512bf16"))) {
		fprintf(stderr, "fma-peak: no AVX-512 BF16 support\n");
		return 1;
	}
	if (vnni && !(w512 && __builtin_cpu_supports("avx512vnni"))) {
		fprintf(stderr, "fma-peak: no AVX-512 VNNI support\n");
		return 1;
	}
	if (amx && !(emb_cpu_features() & (amx == 1 ? EMB_CPU_AMXINT8
	                                              : EMB_CPU_AMXBF16))) {
		fprintf(stderr, "fma-peak: no AMX here: %s\n",
		        emb_cpu_amx_why() ? emb_cpu_amx_why() : "no AMX-BF16");
		return 1;
	}
	void (*fn)(void) = amx == 1 ? chunk_amx_int8 : amx == 2 ? chunk_amx_bf16 :
	                   bf16 ? chunkbf16 : vnni ? chunkvnni : w512 ? chunk512 : chunk256;
	/* flops per instruction, halved: 2 per FMA lane, 4 per bf16 lane,
	 * 8 per VNNI lane */
	double lanes = vnni ? 64 : bf16 ? 32 : w512 ? 16 : 8;
	const char *isa = amx == 1 ? "amx-int8" : amx == 2 ? "amx-bf16" :
	                  bf16 ? "avx512bf16" : vnni ? "vnni" : w512 ? "avx512" : "avx2";
	/* ops per chunk: 4 tiles x 16 x 16 x (64 int8 or 32 bf16 products
	 * per element) x 2 */
	double per_chunk = amx ? 4.0 * 256 * (amx == 1 ? 64 : 32) * 2 * AMX_ITERS
	                       : 2.0 * lanes * 12 * ITERS;
	for (int c = 0; c < nc; c++) {
		int t = counts[c] < 1 ? 1 : counts[c] > 64 ? 64 : counts[c];
		pthread_t th[64];
		probe pr[64];
		double gflops = 0;
		for (int i = 0; i < t; i++) {
			pr[i].chunk = fn;
			pthread_create(&th[i], NULL, run, &pr[i]);
		}
		for (int i = 0; i < t; i++) {
			pthread_join(th[i], NULL);
			gflops += per_chunk / pr[i].best / 1e9;
		}
		printf("{\"threads\":%d,\"isa\":\"%s\",\"gflops\":%.1f}\n", t,
		       isa, gflops);
	}
	return 0;
}
