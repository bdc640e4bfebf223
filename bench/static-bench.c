/*
 * static-bench - where a static model's time goes, in process, one
 * thread (for scripts/bench-static): the records of a JSON Lines file
 * parsed, their texts tokenized (emb_static_tokenize), averaged and
 * normalized (emb_static_mean, emb_static_normalize), and written
 * (emb_out_floats), each phase timed on its own over every record,
 * best of REPS.
 * usage: static-bench MODEL FILE REPS
 * Prints one JSON line: {"records", "tokens", "parse", "tokenize",
 * "gather", "json"} (seconds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io.h"
#include "static/static.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double best(double a, double b)
{
	return a < b ? a : b;
}

int main(int argc, char **argv)
{
	emb_static *m;
	emb_err err = { "" };
	emb_encoding enc;
	emb_buf out;
	FILE *f;
	char **line = NULL, **text = NULL, buf[1 << 16];
	size_t n = 0, cap = 0, tokens = 0, *tlen, *len;
	int32_t **ids;
	size_t *nids;
	double tp = 1e30, tt = 1e30, tg = 1e30, tj = 1e30, t0;
	int reps, d;
	float *v;

	if (argc != 4 || (reps = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: static-bench MODEL FILE REPS\n");
		return 2;
	}
	if (emb_static_load(&m, argv[1], &err) < 0) {
		fprintf(stderr, "static-bench: %s\n", err.msg);
		return 3;
	}
	if (!(f = fopen(argv[2], "r"))) {
		perror(argv[2]);
		return 5;
	}
	while (fgets(buf, sizeof(buf), f)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			line = realloc(line, cap * sizeof(*line));
			if (!line)
				return 1;
		}
		line[n++] = strdup(buf);
	}
	fclose(f);
	d = emb_static_dim(m);
	text = calloc(n + 1, sizeof(*text));
	tlen = calloc(n + 1, sizeof(*tlen));
	len = calloc(n + 1, sizeof(*len));
	ids = calloc(n + 1, sizeof(*ids));
	nids = calloc(n + 1, sizeof(*nids));
	v = malloc((size_t)d * sizeof(float));
	if (!text || !tlen || !len || !ids || !nids || !v)
		return 1;
	emb_encoding_init(&enc);
	emb_buf_init(&out);
	for (int r = 0; r < reps; r++) {
		emb_record *rec = emb_record_new();
		const char *s;
		// parse: lines -> texts
		t0 = now();
		for (size_t i = 0; i < n; i++) {
			len[i] = strlen(line[i]);
			if (emb_record_parse(rec, line[i], len[i], &err) < 0 ||
			    emb_record_get_string(rec, "text", &s, &tlen[i], &err) < 0) {
				fprintf(stderr, "static-bench: line %zu: %s\n", i + 1, err.msg);
				return 1;
			}
			if (r == 0 && !(text[i] = malloc(tlen[i] + 1)))
				return 1;
			memcpy(text[i], s, tlen[i]);
		}
		tp = best(tp, now() - t0);
		// tokenize: texts -> ids
		t0 = now();
		tokens = 0;
		for (size_t i = 0; i < n; i++) {
			if (emb_static_tokenize(&enc, m, text[i], tlen[i],
			                        emb_static_max_length(m), &err) < 0) {
				fprintf(stderr, "static-bench: %s\n", err.msg);
				return 1;
			}
			if (r == 0 && !(ids[i] = malloc((enc.len + 1) * sizeof(int32_t))))
				return 1;
			memcpy(ids[i], enc.ids, enc.len * sizeof(int32_t));
			nids[i] = enc.len;
			tokens += enc.len;
		}
		tt = best(tt, now() - t0);
		// gather: ids -> mean (dim), normalized
		t0 = now();
		for (size_t i = 0; i < n; i++) {
			emb_static_mean(v, m, ids[i], nids[i]);
			emb_static_normalize(v, m, d);
		}
		tg = best(tg, now() - t0);
		// json: the output records (the input's members, then embedding)
		t0 = now();
		for (size_t i = 0; i < n; i++) {
			emb_record_parse(rec, line[i], len[i], &err);
			out.len = 0;
			emb_out_begin(&out, rec, NULL);
			emb_out_floats(&out, "embedding", v, (size_t)d, 0);
			emb_out_end(&out);
		}
		tj = best(tj, now() - t0);
		emb_record_free(rec);
	}
	printf("{\"records\":%zu,\"tokens\":%zu,\"parse\":%.6f,\"tokenize\":%.6f,"
	       "\"gather\":%.6f,\"json\":%.6f}\n", n, tokens, tp, tt, tg, tj);
	for (size_t i = 0; i < n; i++) {
		free(line[i]);
		free(text[i]);
		free(ids[i]);
	}
	free(line);
	free(text);
	free(tlen);
	free(len);
	free(ids);
	free(nids);
	free(v);
	emb_buf_release(&out);
	emb_encoding_release(&enc);
	emb_static_free(m);
	return 0;
}
