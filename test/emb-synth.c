/*
 * emb-synth - materialize a synthetic checkpoint (SYNTHETIC.md)
 *
 *   emb-synth RECIPE OUTDIR [--root DIR]
 *
 * RECIPE is ROOT/fixtures/NAME/recipe.json; its "base" is relative to
 * ROOT (default: the directory two levels above the recipe's folder).
 * A test helper also used by `make demo`.  `emb-synth --resolve MODEL`
 * prints the directory -m MODEL resolves to (tests of the hub cache);
 * `emb-synth --inspect PATH` lists the tensors of a safetensors file or
 * model directory, one "NAME DTYPE [SHAPE]" line each, in file order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emb.h"

static int inspect(const char *path)
{
	emb_safetensors *st;
	emb_err err = {{0}};

	if (emb_safetensors_open(&st, path, &err)) {
		fprintf(stderr, "emb-synth: error: %s\n", err.msg);
		return EMB_EXIT_MODEL;
	}
	for (size_t i = 0; i < emb_safetensors_count(st); i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		printf("%s %s [", t->name, emb_dtype_name(t->dtype));
		for (int d = 0; d < t->ndim; d++)
			printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
		puts("]");
	}
	emb_safetensors_free(st);
	if (fflush(stdout) || ferror(stdout)) {
		fputs("emb-synth: error: write error\n", stderr);
		return EMB_EXIT_WRITE;
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: emb-synth RECIPE OUTDIR [--root DIR]\n"
	      "       emb-synth --resolve MODEL\n"
	      "       emb-synth --inspect PATH\n", f);
}

int main(int argc, char **argv)
{
	const char *ops[2], *root = NULL;
	int nops = 0;
	emb_err err = {{0}};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			puts("emb-synth " EMB_VERSION);
			return 0;
		} else if (!strcmp(a, "--inspect")) {
			if (i + 2 != argc) {
				usage(stderr);
				return EMB_EXIT_USAGE;
			}
			return inspect(argv[i + 1]);
		} else if (!strcmp(a, "--resolve")) {
			char *dir;
			if (i + 1 >= argc || i + 2 != argc) {
				usage(stderr);
				return EMB_EXIT_USAGE;
			}
			if (emb_model_resolve(&dir, argv[i + 1], &err)) {
				fprintf(stderr, "emb-synth: error: %s\n", err.msg);
				return EMB_EXIT_MODEL;
			}
			puts(dir);
			free(dir);
			return 0;
		} else if (!strcmp(a, "--root") || !strncmp(a, "--root=", 7)) {
			if (a[6] == '=') {
				root = a + 7;
			} else if (i + 1 < argc) {
				root = argv[++i];
			} else {
				fputs("emb-synth: option '--root' needs an argument\n", stderr);
				usage(stderr);
				return EMB_EXIT_USAGE;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "emb-synth: unknown option '%s'\n", a);
			usage(stderr);
			return EMB_EXIT_USAGE;
		} else if (nops < 2) {
			ops[nops++] = a;
		} else {
			usage(stderr);
			return EMB_EXIT_USAGE;
		}
	}
	if (nops != 2) {
		usage(stderr);
		return EMB_EXIT_USAGE;
	}
	if (emb_synth_materialize(ops[0], root, ops[1], &err)) {
		fprintf(stderr, "emb-synth: error: %s\n", err.msg);
		return 1;
	}
	return 0;
}
