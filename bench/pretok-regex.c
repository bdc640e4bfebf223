/*
 * pretok-regex.c - the measurement behind pretok.c's choice: the GPT-2
 * pre-tokenizer pattern by the hand-written scanner vs by PCRE2 (JIT),
 * on the texts of a JSONL file, repeated.  Both must split every text
 * identically (checked), then each is timed.
 * usage: pretok-regex FILE.jsonl [REPEAT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tok/tok-internal.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

#define GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+"

int main(int argc, char **argv)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0, n = 0, i, k, rep = argc > 2 ? (size_t)atoi(argv[2]) : 20;
	ssize_t len;
	tk_str *texts = NULL;
	tk_pattern hand, pcre;
	json_t *j;
	emb_err err = {{0}};
	tk_spans a = {0}, b = {0};
	double t0, th, tp;
	size_t cps = 0, pieces = 0;

	if (argc < 2 || !(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: pretok-regex FILE.jsonl [REPEAT]\n");
		return 2;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *r = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, NULL);
		json_t *t = json_object_get(r, "text");
		if (json_is_string(t)) {
			texts = realloc(texts, (n + 1) * sizeof(*texts));
			memset(&texts[n], 0, sizeof(texts[n]));
			if (tk_utf8_decode(&texts[n], json_string_value(t),
			                   json_string_length(t), NULL) == 0) {
				cps += texts[n].n;
				n++;
			}
		}
		json_decref(r);
	}
	fclose(f);
	j = json_loads("{\"Regex\": \"" GPT2 "\"}", 0, NULL);
	if (tk_pattern_parse(&hand, j, "bench", "gpt2", &err) < 0 || !hand.gpt2)
		return fprintf(stderr, "hand: %s\n", err.msg), 1;
	json_decref(j);
	/* the same pattern in a group: not recognised, so PCRE2 */
	j = json_loads("{\"Regex\": \"(?:" GPT2 ")\"}", 0, NULL);
	if (tk_pattern_parse(&pcre, j, "bench", "pcre", &err) < 0 || !pcre.re)
		return fprintf(stderr, "pcre: %s\n", err.msg), 1;
	json_decref(j);
	for (i = 0; i < n; i++) {
		a.n = b.n = 0;
		tk_pattern_find(&hand, &a, texts[i].c, 0, texts[i].n);
		tk_pattern_find(&pcre, &b, texts[i].c, 0, texts[i].n);
		if (a.n != b.n || memcmp(a.v, b.v, a.n * sizeof(*a.v))) {
			fprintf(stderr, "text %zu: the scanner and PCRE2 differ\n", i);
			return 1;
		}
		pieces += a.n;
	}
	t0 = now();
	for (k = 0; k < rep; k++)
		for (i = 0; i < n; i++) {
			a.n = 0;
			tk_pattern_find(&hand, &a, texts[i].c, 0, texts[i].n);
		}
	th = now() - t0;
	t0 = now();
	for (k = 0; k < rep; k++)
		for (i = 0; i < n; i++) {
			b.n = 0;
			tk_pattern_find(&pcre, &b, texts[i].c, 0, texts[i].n);
		}
	tp = now() - t0;
	printf("%zu texts, %zu code points, %zu pieces, identical splits; "
	       "x%zu: scanner %.1f Mcp/s, PCRE2-JIT %.1f Mcp/s (%.1fx)\n",
	       n, cps, pieces, rep, cps * rep / th / 1e6, cps * rep / tp / 1e6,
	       tp / th);
	return 0;
}
