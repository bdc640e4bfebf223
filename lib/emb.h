/*
 * emb.h - the public C API of libemb: load a sentence-transformers model
 * directory, embed texts exactly as `emb-encode --pool` does, free.
 *
 *   #include <emb.h>
 *   cc prog.c $(pkg-config --cflags --libs emb)
 *
 *   emb_embedder *e;
 *   char err[512];
 *   if (emb_embedder_load(&e, "path/to/model", NULL, err, sizeof(err)) < 0)
 *           die(err);
 *   float *v = malloc(n * emb_embedder_dim(e) * sizeof(float));
 *   if (emb_embed(e, v, texts, NULL, n, err, sizeof(err)) < 0)
 *           die(err);
 *   emb_embedder_free(e);
 *
 * Self-contained: it needs only the C standard headers below.  The
 * model directory is what sentence-transformers saves (config.json,
 * *.safetensors, tokenizer.json or vocab.txt, modules.json, 1_Pooling/,
 * 2_Dense/, config_sentence_transformers.json, sentence_bert_config.json);
 * ORG/NAME ids are not resolved here (give the snapshot directory that
 * emb-fetch prints).  Functions that can fail return 0 or -1 with a
 * one-line message in ERR; "new" results are the caller's to free with
 * the named function, "borrowed" pointers are not.  An emb_embedder may
 * be used from one thread at a time.  See emb(7) and the README.
 *
 * (The declarations below are lib/st/embed.h's public block, copied
 * verbatim; test/cli/96-install.sh checks that the two stay equal.)
 */
#ifndef EMB_H
#define EMB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EMB_VERSION "0.1.0"

/* public-api-begin */
typedef struct emb_embedder emb_embedder;

/* the arithmetic of the model's linear layers (README "Precision
 * modes"; emb-encode --compute, --weights, --act) */
enum emb_precision {
	EMB_PRECISION_FP32 = 0, /* float32 (the default) */
	EMB_PRECISION_BF16,     /* bf16 weights and activations, fp32 sums */
	EMB_PRECISION_W8,       /* int8 weights per row, float activations */
	EMB_PRECISION_W8A8,     /* int8 weights and int8 activations per row */
	EMB_PRECISION_W8A8_SMOOTH, /* W8A8 with activation outlier channels
	                              moved into the weights (SmoothQuant) */
};

typedef struct emb_embedder_opts {
	int threads;            /* 0: all online cores */
	long max_length;        /* > 0: at most this many tokens per text (at
	                           most the model's limit); 0: the model's
	                           default; -1: no truncation */
	const char *prompt;     /* borrowed: prepended to every text; NULL:
	                           prompt_name, else the model's default */
	const char *prompt_name; /* borrowed: a prompt of the model's
	                           config_sentence_transformers.json */
	int no_prompt;          /* 1: not even the model's default prompt */
	int normalize;          /* -1: the model's Normalize module; 0: off;
	                           1: on */
	int dim;                /* > 0: keep the first dim values, then
	                           L2-normalize (Matryoshka); 0: all */
	int precision;          /* enum emb_precision */
} emb_embedder_opts;

/* the defaults: everything as the model's sentence-transformers
 * configuration says (emb-encode --pool with no other option) */
void emb_embedder_opts_init(emb_embedder_opts *o);
/*
 * Load the model in directory DIR: its tokenizer, config.json and
 * weights (mmapped), and its sentence-transformers modules (Pooling,
 * Dense, Normalize, prompts, max_seq_length, do_lower_case); or a static
 * embedding model (a Model2Vec folder, or a StaticEmbedding module:
 * emb-encode(1); precision EMB_PRECISION_FP32 only).  O may be
 * NULL (the defaults).  0, or -1 with a one-line message in ERR (ERRSZ
 * bytes, may be NULL) naming the file and field.  *out: new,
 * emb_embedder_free.
 */
int emb_embedder_load(emb_embedder **out, const char *dir,
                      const emb_embedder_opts *o, char *err, size_t errsz);
void emb_embedder_free(emb_embedder *e);
/* floats per embedding */
int emb_embedder_dim(const emb_embedder *e);
/* the effective max length in tokens (prompt and special tokens
 * included); 0: no truncation */
int emb_embedder_max_length(const emb_embedder *e);
/*
 * Embed N texts (UTF-8; LENS[i] bytes each, or NUL-terminated when LENS
 * is NULL) into OUT (N rows of emb_embedder_dim floats), exactly as
 * `emb-encode --pool` does from {"text": ...} records: prompt,
 * do_lower_case, truncation, the model, Pooling, Dense, Normalize, dim.
 * Results do not depend on N or on the thread count.  0, or -1 with
 * ERR naming the text (by index) that failed; OUT is then undefined.
 * Not reentrant: one call at a time per embedder.
 */
int emb_embed(emb_embedder *e, float *out, const char *const *texts,
              const size_t *lens, size_t n, char *err, size_t errsz);
/*
 * The token ids emb_embed runs for TEXT (LEN bytes, prompt included):
 * *ids new (free()), *n of them.  0, or -1 (ERR).
 */
int emb_embedder_tokenize(const emb_embedder *e, int32_t **ids, size_t *n,
                          const char *text, size_t len, char *err,
                          size_t errsz);
/* the library's version, "0.1.0" */
const char *emb_version(void);
/* public-api-end */

#ifdef __cplusplus
}
#endif

#endif /* EMB_H */
