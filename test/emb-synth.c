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
 * `emb-synth --split DIR N` rewrites DIR/model.safetensors as N shards
 * with model.safetensors.index.json (tests of sharded checkpoints).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tool/emb-tool.h"

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

/* write the tensors [lo, hi) of st as the safetensors file PATH */
static int write_shard(const char *path, emb_safetensors *st, size_t lo,
                       size_t hi)
{
	json_t *h = json_object();
	char *hs;
	size_t off = 0, hl, pad;
	FILE *f;
	int rc = -1;

	for (size_t i = lo; i < hi; i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		json_t *sh = json_array(), *e = json_object();
		for (int d = 0; d < t->ndim; d++)
			json_array_append_new(sh, json_integer(t->shape[d]));
		json_object_set_new(e, "dtype", json_string(emb_dtype_name(t->dtype)));
		json_object_set_new(e, "shape", sh);
		json_object_set_new(e, "data_offsets",
		                    json_pack("[I,I]", (json_int_t)off,
		                              (json_int_t)(off + t->nbytes)));
		json_object_set_new(h, t->name, e);
		off += t->nbytes;
	}
	hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(h);
	if (!hs || !(f = fopen(path, "wb"))) {
		free(hs);
		return -1;
	}
	hl = strlen(hs);
	pad = (8 - hl % 8) % 8;
	unsigned char le[8];
	for (int b = 0; b < 8; b++)
		le[b] = (unsigned char)((hl + pad) >> (8 * b));
	if (fwrite(le, 1, 8, f) == 8 && fwrite(hs, 1, hl, f) == hl &&
	    fwrite("        ", 1, pad, f) == pad) {
		rc = 0;
		for (size_t i = lo; i < hi && !rc; i++) {
			const emb_tensor *t = emb_safetensors_at(st, i);
			if (fwrite(t->data, 1, t->nbytes, f) != t->nbytes)
				rc = -1;
		}
	}
	if (fclose(f))
		rc = -1;
	free(hs);
	return rc;
}

/* DIR/model.safetensors -> N shards and model.safetensors.index.json
 * (the layout of large Hub checkpoints), in tensor order */
static int split(const char *dir, const char *nstr)
{
	emb_safetensors *st;
	emb_err err = {{0}};
	char path[4096], name[64];
	int n = atoi(nstr), rc = 0;
	size_t cnt, total = 0;
	json_t *wm, *idx;

	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	if (n < 1 || n > 99) {
		fputs("emb-synth: --split: N must be 1..99\n", stderr);
		return EMB_EXIT_USAGE;
	}
	if (emb_safetensors_open(&st, path, &err)) {
		fprintf(stderr, "emb-synth: error: %s\n", err.msg);
		return EMB_EXIT_MODEL;
	}
	cnt = emb_safetensors_count(st);
	wm = json_object();
	for (int k = 0; k < n && !rc; k++) {
		size_t lo = cnt * (size_t)k / (size_t)n;
		size_t hi = cnt * (size_t)(k + 1) / (size_t)n;
		snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors",
		         k + 1, n);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (write_shard(path, st, lo, hi)) {
			fprintf(stderr, "emb-synth: error: cannot write %s\n", path);
			rc = 1;
		}
		for (size_t i = lo; i < hi; i++) {
			const emb_tensor *t = emb_safetensors_at(st, i);
			json_object_set_new(wm, t->name, json_string(name));
			total += t->nbytes;
		}
	}
	emb_safetensors_free(st);
	idx = json_pack("{s:{s:I},s:o}", "metadata", "total_size",
	                (json_int_t)total, "weight_map", wm);
	snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
	if (!rc && json_dump_file(idx, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
		fprintf(stderr, "emb-synth: error: cannot write %s\n", path);
		rc = 1;
	}
	json_decref(idx);
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	if (!rc && remove(path)) {
		fprintf(stderr, "emb-synth: error: cannot remove %s\n", path);
		rc = 1;
	}
	return rc;
}

static void usage(FILE *f)
{
	fputs("usage: emb-synth RECIPE OUTDIR [--root DIR]\n"
	      "       emb-synth --resolve MODEL\n"
	      "       emb-synth --inspect PATH\n"
	      "       emb-synth --split DIR N\n", f);
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
		} else if (!strcmp(a, "--split")) {
			if (i + 3 != argc) {
				usage(stderr);
				return EMB_EXIT_USAGE;
			}
			return split(argv[i + 1], argv[i + 2]);
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
