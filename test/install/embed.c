/*
 * embed.c - a program outside emb, built against an installed libemb
 * (test/cli/96-install.sh): embeds every line of standard input (plain
 * text) with the model in argv[1] and writes {"embedding": [...]} per
 * line, the floats with %.9g (which reads back as the same float32).
 *
 *   embed [-p fp32|bf16|w8|w8a8|w8a8-smooth] MODEL_DIR [PROMPT_NAME]
 *         < texts.txt
 */
#define _POSIX_C_SOURCE 200809L  /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <emb.h>

static void free_texts(char **texts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
}

int main(int argc, char **argv)
{
	emb_embedder_opts o;
	emb_embedder *e;
	char err[512], line[65536];
	char **texts = NULL;
	size_t n = 0, cap = 0;
	float *v;
	int dim, precision = EMB_PRECISION_FP32;
	static const char *const names[] = { "fp32", "bf16", "w8", "w8a8",
	                                     "w8a8-smooth" };

	if (argc >= 3 && !strcmp(argv[1], "-p")) {
		precision = -1;
		for (int i = 0; i < 5; i++)
			if (!strcmp(argv[2], names[i]))
				precision = i;  /* enum emb_precision order */
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || argc > 3 || precision < 0) {
		fprintf(stderr, "usage: embed [-p fp32|bf16|w8|w8a8|w8a8-smooth] "
		        "MODEL_DIR [PROMPT_NAME] < texts\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			texts = realloc(texts, cap * sizeof(*texts));
			if (!texts)
				return 1;
		}
		if (!(texts[n++] = strdup(line)))
			return 1;
	}
	emb_embedder_opts_init(&o);
	o.threads = 2;
	o.precision = precision;
	if (argc == 3)
		o.prompt_name = argv[2];
	if (emb_embedder_load(&e, argv[1], &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "embed: %s\n", err);
		free_texts(texts, n);
		return 3;
	}
	dim = emb_embedder_dim(e);
	if (!(v = malloc((n ? n : 1) * (size_t)dim * sizeof(float)))) {
		free_texts(texts, n);
		emb_embedder_free(e);
		return 1;
	}
	if (emb_embed(e, v, (const char *const *)texts, NULL, n, err,
	              sizeof(err)) < 0) {
		fprintf(stderr, "embed: %s\n", err);
		free_texts(texts, n);
		free(v);
		emb_embedder_free(e);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		printf("{\"embedding\":[");
		for (int k = 0; k < dim; k++)
			printf("%s%.9g", k ? "," : "", v[i * (size_t)dim + k]);
		printf("]}\n");
	}
	fprintf(stderr, "embed: emb %s, %d dimensions, max length %d\n",
	        emb_version(), dim, emb_embedder_max_length(e));
	free_texts(texts, n);
	free(v);
	emb_embedder_free(e);
	return ferror(stdout) ? 1 : 0;
}
