/*
 * gemm-fwd - the fp32 GEMM kernel on the call shapes of the transformer
 * forward, one thread, against the FMA peak measured in the same process.
 *
 * usage: gemm-fwd [ISA] [TRIALS]   (default: avx2, 200)
 *
 * The shapes: the linear layers as lib/nn/layers.c calls them (96-row
 * blocks of a 2048-row activation, the whole output width per call, the
 * FFN up with its GELU fused) at the minilm-l6 (384, inner 1536) and the
 * 768 (inner 3072) widths, and attention as lib/nn/attention.c calls it
 * for one head of a 512-token sequence (head dim 64, blocks of 32
 * queries: S = Q K^T, k = 64, then ctx = S V, k = 512; S one scratch
 * that every query block reuses, as there).
 *
 * The machine may be shared, so every figure is the best of TRIALS short
 * trials (one call for a linear shape, 0.3 to 5 ms; every query block
 * of the head for attention; the best ones are those the OS gave a whole
 * core), and the trials of the peak probe and of every shape are
 * interleaved so that they see the same load.  The peak probe: 12
 * independent chains of FMA (2 flops a lane) at the table's vector
 * width: 256 bits for avx2 and avxvnni, 512 for avx512, vnni and amx
 * (Intel's cores run twice the flops with 512 bits, AMD's Zen 4 the
 * same).  Prints one JSON line per shape:
 * {"isa","shape","m","n","k","gflops","peak","pct"}, then one for
 * attention's softmax over a block of scores as attention.c calls it
 * (QB rows of SEQ keys, the table's softmax, scores spread like a
 * real head's, about +-3 after the scale):
 * {"isa","shape":"attn softmax","m","n","ns_per_score"}, the best trial.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kern/kernels.h"

#define ROWS 2048       /* activation rows the linear shapes walk through */
#define RB 96           /* rows per call, as layers.c */
#define SEQ 512         /* attention: keys per sequence */
#define DH 64           /* attention: head dim */
#define QB 32           /* attention: queries per call, as attention.c */
#define PEAK_ITERS 20000

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 12 FMA chains, one instruction each: c_i = a * c_i + b */
#define FMA12 \
	"vfmadd213ps %[b], %[a], %[c0]\n\t" \
	"vfmadd213ps %[b], %[a], %[c1]\n\t" \
	"vfmadd213ps %[b], %[a], %[c2]\n\t" \
	"vfmadd213ps %[b], %[a], %[c3]\n\t" \
	"vfmadd213ps %[b], %[a], %[c4]\n\t" \
	"vfmadd213ps %[b], %[a], %[c5]\n\t" \
	"vfmadd213ps %[b], %[a], %[c6]\n\t" \
	"vfmadd213ps %[b], %[a], %[c7]\n\t" \
	"vfmadd213ps %[b], %[a], %[c8]\n\t" \
	"vfmadd213ps %[b], %[a], %[c9]\n\t" \
	"vfmadd213ps %[b], %[a], %[c10]\n\t" \
	"vfmadd213ps %[b], %[a], %[c11]\n\t"
/* the operands of FMA12 for c[12], a, b in registers of constraint R */
#define FMA12_OPS(R) \
	: [c0] "+" R(c[0]), [c1] "+" R(c[1]), [c2] "+" R(c[2]), \
	  [c3] "+" R(c[3]), [c4] "+" R(c[4]), [c5] "+" R(c[5]), \
	  [c6] "+" R(c[6]), [c7] "+" R(c[7]), [c8] "+" R(c[8]), \
	  [c9] "+" R(c[9]), [c10] "+" R(c[10]), [c11] "+" R(c[11]) \
	: [a] R(a), [b] R(b)

/* NAME: 12 chains of PEAK_ITERS FMAs on vectors VT of LANES floats
 * (target TGT, set1 SET1, register constraint R); returns flops */
#define PEAK_PROBE(NAME, TGT, VT, SET1, LANES, R) \
	__attribute__((target(TGT), noinline)) \
	static double NAME(void) \
	{ \
		VT a = SET1(0.999999f), b = SET1(1e-7f), c[12]; \
		for (int i = 0; i < 12; i++) \
			c[i] = SET1(1.0f + 0.01f * i); \
		for (int it = 0; it < PEAK_ITERS; it++) \
			__asm__ volatile(FMA12 FMA12_OPS(R)); \
		return 2.0 * LANES * 12 * PEAK_ITERS; \
	}

/* the AVX2 tables' (8 lanes) and the AVX-512 tables' (16) */
PEAK_PROBE(peak_probe, "avx2,fma", __m256, _mm256_set1_ps, 8, "x")
PEAK_PROBE(peak_probe512, "avx512f", __m512, _mm512_set1_ps, 16, "v")

typedef struct shape {
	const char *name;
	int m, n, k, act;
	int attn;       /* 0 linear, 1 Q K^T, 2 S V */
	float *x, *wp, *b, *y;
	int ldx, ldy, next;     /* next: the row block the next trial takes */
	double best;            /* GFLOP/s */
} shape;

static float *fill(size_t n, unsigned seed)
{
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);

	if (!p) {
		fprintf(stderr, "gemm-fwd: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
	}
	return p;
}

static void setup(shape *s)
{
	int xr = s->attn ? QB * (SEQ / QB) : ROWS;
	float *w = fill((size_t)s->n * s->k, 7);

	s->ldx = s->attn == 1 ? 3 * 768 : s->k;   /* Q sits in the QKV rows */
	s->ldy = s->attn == 2 ? 768 : s->n;       /* ctx rows hold every head */
	s->x = fill((size_t)xr * s->ldx, 3);
	s->y = fill((size_t)xr * s->ldy, 5);
	s->b = s->attn ? NULL : fill((size_t)s->n, 11);
	s->wp = aligned_alloc(64, (emb_pack_size(s->n, s->k) * sizeof(float) + 63)
	                          / 64 * 64);
	if (!s->wp) {
		fprintf(stderr, "gemm-fwd: out of memory\n");
		exit(1);
	}
	emb_pack_weights(s->wp, w, s->n, s->k);
	free(w);
}

/* one trial: a few row blocks (linear) or every query block of the
 * head (attention), about a millisecond or more; returns flops */
static double trial(const emb_kernels *kt, shape *s)
{
	double fl = 0;
	int blocks = s->attn ? SEQ / QB : 1;
	int nb = s->attn ? SEQ / QB : ROWS / RB;

	for (int t = 0; t < blocks; t++) {
		int r0 = s->next * s->m;
		/* attention.c's scores S are one per-thread scratch, written
		 * by Q K^T and read by S V for every query block */
		const float *x = s->x + (s->attn == 2 ? 0 : (size_t)r0 * s->ldx);
		float *y = s->y + (s->attn == 1 ? 0 : (size_t)r0 * s->ldy);
		s->next = (s->next + 1) % nb;
		if (s->act == EMB_KACT_NONE)
			kt->gemm(y, s->ldy, x, s->ldx, s->wp, s->b, s->m, s->n, s->k);
		else
			kt->gemm_act(y, s->ldy, x, s->ldx, s->wp, s->b, s->m, s->n,
			             s->k, s->act);
		fl += 2.0 * s->m * s->n * s->k;
	}
	return fl;
}

/* the softmax of one query block: QB rows of SEQ scores, every trial on
 * the same scores copied in afresh; prints the best ns a score */
static void softmax_trials(const emb_kernels *kt, int trials)
{
	size_t n = (size_t)QB * SEQ;
	float *src = fill(n, 13), *x = fill(n, 13), inv[QB];
	double best = 1e30;

	for (size_t i = 0; i < n; i++)
		src[i] *= 24.0f;        /* x 0.125: +-3 */
	for (int t = 0; t < trials; t++) {
		double t0;
		memcpy(x, src, n * sizeof(float));
		t0 = now();
		// x (QB, SEQ) -> exponentials, inv (QB)
		kt->softmax(x, SEQ, QB, SEQ, 0.125f, inv);
		t0 = now() - t0;
		if (t0 < best)
			best = t0;
	}
	printf("{\"isa\":\"%s\",\"shape\":\"attn softmax\",\"m\":%d,"
	       "\"n\":%d,\"ns_per_score\":%.3f}\n", kt->name, QB, SEQ,
	       best / (double)n * 1e9);
	free(src);
	free(x);
}

int main(int argc, char **argv)
{
	const emb_kernels *kt = NULL;
	int trials = argc > 2 ? atoi(argv[2]) : 200;
	shape sh[] = {
		{ .name = "minilm qkv", .m = RB, .n = 1152, .k = 384,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "minilm out", .m = RB, .n = 384, .k = 384,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "minilm up+gelu", .m = RB, .n = 1536, .k = 384,
		  .act = EMB_KACT_GELU, .attn = 0 },
		{ .name = "minilm down", .m = RB, .n = 384, .k = 1536,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "768 qkv", .m = RB, .n = 2304, .k = 768,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "768 out", .m = RB, .n = 768, .k = 768,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "768 up+gelu", .m = RB, .n = 3072, .k = 768,
		  .act = EMB_KACT_GELU, .attn = 0 },
		{ .name = "768 down", .m = RB, .n = 768, .k = 3072,
		  .act = EMB_KACT_NONE, .attn = 0 },
		{ .name = "attn q.k", .m = QB, .n = SEQ, .k = DH,
		  .act = EMB_KACT_NONE, .attn = 1 },
		{ .name = "attn s.v", .m = QB, .n = DH, .k = SEQ,
		  .act = EMB_KACT_NONE, .attn = 2 },
	};
	int ns = (int)(sizeof sh / sizeof sh[0]);
	double peak = 0, (*probe)(void) = peak_probe;

	if (argc > 1)
		kt = emb_kernels_get(argv[1]);
	if (!kt)
		kt = emb_kernels_get("avx2");
	if (!kt || !__builtin_cpu_supports("fma")) {
		fprintf(stderr, "gemm-fwd: needs AVX2 and FMA\n");
		return 1;
	}
	if (trials < 1)
		trials = 1;
	/* the AVX-512 tables: avx512, vnni, amx */
	if (!strcmp(kt->name, "avx512") || !strcmp(kt->name, "vnni") ||
	    !strcmp(kt->name, "amx"))
		probe = peak_probe512;
	for (int s = 0; s < ns; s++)
		setup(&sh[s]);
	for (int t = 0; t < trials; t++) {
		double t0 = now(), fl = probe(), dt = now() - t0;
		if (fl / dt / 1e9 > peak)
			peak = fl / dt / 1e9;
		for (int s = 0; s < ns; s++) {
			t0 = now();
			fl = trial(kt, &sh[s]);
			dt = now() - t0;
			if (fl / dt / 1e9 > sh[s].best)
				sh[s].best = fl / dt / 1e9;
		}
	}
	for (int s = 0; s < ns; s++)
		printf("{\"isa\":\"%s\",\"shape\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,"
		       "\"gflops\":%.1f,\"peak\":%.1f,\"pct\":%.1f}\n", kt->name,
		       sh[s].name, sh[s].m, sh[s].n, sh[s].k, sh[s].best, peak,
		       100.0 * sh[s].best / peak);
	softmax_trials(kt, trials);
	return 0;
}
