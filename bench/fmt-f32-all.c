/*
 * bench/fmt-f32-all.c - emb_fmt_f32 against its oracle emb_fmt_f32_ref
 * (io/numfmt.h) over float32 bit patterns, and the time of each.
 *
 *   fmt-f32-all [FIRST LAST [THREADS]]
 *
 * Checks every bit pattern from FIRST to LAST (hex or decimal; default
 * 0 to 0x7f800000, every non-negative finite float and +inf: a negative
 * one is the same text after a '-') on THREADS threads (default 2),
 * prints the first differences, then the count and the nanoseconds per
 * value of each implementation (over a sample of 2^20 values spread over
 * the range, one thread).  Exit 1 when any pattern differs.  Not part of
 * make check (the whole range takes the oracle about an hour a core).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io.h"
#include "io/numfmt.h"

struct part {
	uint64_t first, last;
	uint64_t diffs;
};

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static void *check(void *arg)
{
	struct part *p = arg;
	char a[32], b[32];

	for (uint64_t u = p->first; u <= p->last; u++) {
		float f = from_bits((uint32_t)u);
		emb_fmt_f32(a, f);
		emb_fmt_f32_ref(b, f);
		if (strcmp(a, b) && p->diffs++ < 10)
			fprintf(stderr, "0x%08x: %s, oracle %s\n", (unsigned)u, a, b);
	}
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static double ns_per(size_t (*fmt)(char *, float), uint64_t first,
                     uint64_t last)
{
	char s[32];
	uint64_t step = (last - first) / (1 << 20) + 1, n = 0;
	volatile size_t sink = 0;
	double t = now();

	for (uint64_t u = first; u <= last; u += step, n++)
		sink += fmt(s, from_bits((uint32_t)u));
	(void)sink;
	return (now() - t) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
	uint64_t first = 0, last = 0x7f800000, diffs = 0, span;
	int threads = 2;
	pthread_t tid[64];
	struct part part[64];

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		puts("usage: fmt-f32-all [FIRST LAST [THREADS]]");
		return 0;
	}
	if (argc >= 3) {
		first = strtoull(argv[1], NULL, 0);
		last = strtoull(argv[2], NULL, 0);
	}
	if (argc >= 4)
		threads = atoi(argv[3]);
	if (threads < 1 || threads > 64 || first > last || last > UINT32_MAX) {
		fputs("fmt-f32-all: bad range or thread count\n", stderr);
		return 2;
	}
	span = (last - first + 1) / (uint64_t)threads;
	for (int i = 0; i < threads; i++) {
		part[i].first = first + span * (uint64_t)i;
		part[i].last = i == threads - 1 ? last : part[i].first + span - 1;
		part[i].diffs = 0;
		pthread_create(&tid[i], NULL, check, &part[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		diffs += part[i].diffs;
	}
	printf("%llu patterns from 0x%08llx to 0x%08llx: %llu differ\n",
	       (unsigned long long)(last - first + 1), (unsigned long long)first,
	       (unsigned long long)last, (unsigned long long)diffs);
	printf("ns per value: emb_fmt_f32 %.1f, emb_fmt_f32_ref %.1f\n",
	       ns_per(emb_fmt_f32, first, last), ns_per(emb_fmt_f32_ref, first, last));
	return diffs != 0;
}
