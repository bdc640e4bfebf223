/*
 * static/static.h - static embedding models: a table of token vectors
 * averaged per text, as Model2Vec's StaticModel and sentence-transformers'
 * StaticEmbedding module run them (load.c: the folders; embed.c: the
 * tokenization, the gather-and-average, the normalization).  Not a
 * transformer: no layers, no positions.  Layer static: includes base, io
 * and tok.
 */
#ifndef EMB_STATIC_H
#define EMB_STATIC_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "io/io.h"
#include "tok/tok.h"

typedef struct emb_static emb_static;

enum emb_static_format {
	EMB_STATIC_NONE = 0,    /* not a static model */
	EMB_STATIC_M2V = 1,     /* Model2Vec: config.json "model_type":
	                           "model2vec", model.safetensors
	                           "embeddings" (+ "weights", "mapping") */
	EMB_STATIC_ST = 2,      /* sentence-transformers: modules.json's
	                           first module StaticEmbedding, its folder's
	                           model.safetensors "embedding.weight" (or
	                           model2vec's names) and tokenizer.json */
};

/*
 * Which format DIR holds (enum emb_static_format).  A config.json whose
 * model_type is "model2vec" decides; otherwise modules.json's first
 * entry.  -1 (err) when one of those files is there but cannot be read.
 */
int emb_static_detect(const char *dir, emb_err *err);

/*
 * Load the static model in DIR: tokenizer, table (mmapped, kept as
 * stored: F32, F16, F64 or I8), per-token weights and token mapping,
 * the library's settings (normalize, max_length; the tokenizer's
 * truncation for the sentence-transformers form), every id the
 * tokenizer can give checked against the table.  *out: new,
 * emb_static_free.  -1 (err) naming the file and field.
 */
int emb_static_load(emb_static **out, const char *dir, emb_err *err);
void emb_static_free(emb_static *m);

int emb_static_format(const emb_static *m);
int emb_static_dim(const emb_static *m);
/* the tokenizer (borrowed: it lives as long as m) */
const emb_tokenizer *emb_static_tokenizer(const emb_static *m);
/* token ids the table covers: [0, n) */
size_t emb_static_ids(const emb_static *m);
/* the default maximum of tokens per text (0: none): Model2Vec's
 * config.json max_length (512 when absent, null: none); the
 * sentence-transformers form: tokenizer.json's truncation */
size_t emb_static_max_length(const emb_static *m);
/* Model2Vec: config.json "normalize" (default false); the
 * sentence-transformers form: 0 (modules.json's Normalize says) */
int emb_static_normalizes(const emb_static *m);
/* the table's type as the library names it: "float32", "float16",
 * "float64", "int8" */
const char *emb_static_dtype(const emb_static *m);

/* the table as stored (quantize.c), all borrowed from the model */
typedef struct emb_static_table {
	const char *file;       /* its safetensors file, relative to the
	                           model folder ("model.safetensors",
	                           "0_StaticEmbedding/model.safetensors") */
	const char *name;       /* "embeddings" or "embedding.weight" */
	const emb_safetensors *st;      /* that file, every tensor */
	emb_dtype dtype;        /* F32, F16, F64, I8 */
	size_t rows;            /* rows of the table (clusters when mapped) */
	int dim;
	int mapped;             /* a token mapping (vocabulary quantization) */
} emb_static_table;
void emb_static_table_info(emb_static_table *t, const emb_static *m);
/*
 * The table converted to TO (EMB_DT_F16 or EMB_DT_I8) as model2vec's
 * quantize_embeddings does it (numpy 2 promotion): float16 is one
 * rounding to nearest even from the stored type; int8 is
 * scale = max|table| / 127 in the stored type, then the table as
 * float16, divided by scale (in the promoted type, rounded to float16),
 * rounded to even, clipped to +-127.  A table already of type TO is
 * copied.  out (rows, dim) of TO, little-endian: caller's.  0, or -1
 * (err) for another TO.
 */
int emb_static_table_convert(void *out, emb_dtype to, const emb_static *m,
                             emb_err *err);

/*
 * TEXT (LEN bytes of UTF-8) -> ENC (reused): the ids the library
 * averages, without special tokens, at most MAX_LENGTH of them (0: no
 * limit).  Model2Vec also cuts the text to MAX_LENGTH times the median
 * vocabulary token length in code points first, and drops the unknown
 * token after truncation (StaticModel.tokenize); the
 * sentence-transformers form keeps it and truncates on the side its
 * tokenizer.json says.  0, or -1 (err).
 */
int emb_static_tokenize(emb_encoding *enc, const emb_static *m,
                        const char *text, size_t len, size_t max_length,
                        emb_err *err);
/* 0 when every id of IDS (n) is in [0, emb_static_ids), else -1 (err
 * naming the first one out of range) */
int emb_static_check_ids(const emb_static *m, const int32_t *ids, size_t n,
                         emb_err *err);
/*
 * ids (n, checked) -> out (dim): the mean of their rows (row = table
 * [mapping[id]] * weights[id]) in the arithmetic the library uses for
 * the table's type (numpy's promotion: float32 sums for float32 and
 * float16, double for int8 and float64 weights), rounded to its result
 * type (float16 for a float16 table); zeros for n = 0.
 */
void emb_static_mean(float *out, const emb_static *m, const int32_t *ids,
                     size_t n);
/* ids (n, checked) -> rows (n, dim): each token's row, as float32 */
void emb_static_rows(float *rows, const emb_static *m, const int32_t *ids,
                     size_t n);
/* rows (n, dim) -> out (dim): the mean of rows emb_static_rows gave, as
 * emb_static_mean computes it for the table's type (equal to it when the
 * model has no weights) */
void emb_static_mean_rows(float *out, const emb_static *m, const float *rows,
                          size_t n);
/*
 * v (d) L2-normalized as the model's library does: Model2Vec: numpy's
 * norm in float32 (pairwise sum) + 1e-32; the sentence-transformers
 * form: v / max(||v||, 1e-12); then rounded to float16 for a float16
 * table.
 */
void emb_static_normalize(float *v, const emb_static *m, int d);

#endif /* EMB_STATIC_H */
