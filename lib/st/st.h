/*
 * st/st.h - sentence-transformers post-processing: Pooling, Normalize,
 * cross-encoder activations and ranking, MaxSim, vector quantization.
 * Layer st: includes base, kern, io, tok and nn.
 */
#ifndef EMB_ST_H
#define EMB_ST_H

#include "base/base.h"
#include "base/half.h"  /* emb_f32_to_f16 and the other conversions */
#include "io/io.h"
#include "tok/tok.h"
#include "nn/nn.h"

/* ------------------------------------------------------------------ */
/* pooling                                                             */

/* width of the pooled vector for MODES over hidden size D */
int emb_pool_dim(unsigned modes, int d);
/*
 * tok (n, d) -> out (emb_pool_dim(modes, d)).  The first SKIP rows take no
 * part in mean/max/weighted pooling (prompt tokens when include_prompt is
 * false); CLS is row 0 and last is row n-1 regardless.
 */
int emb_pool(float *out, const float *tok, int n, int d, unsigned modes,
             int skip, emb_err *err);
/* v /= max(||v||, 1e-12), as torch.nn.functional.normalize */
void emb_normalize(float *v, int d);
/*
 * The Dense modules' weights made ready for the GEMM: each module's w
 * (new) replaced by wp, its packed form (kern/kernels.h); modules
 * already packed are left as they are.  Every st config with Dense
 * modules goes through it once after loading (emb_text_tok_init does).
 */
int emb_dense_pack(emb_dense *dense, size_t n, emb_err *err);
/*
 * The Dense modules DENSE[0..N) (packed) in order on the ROWS vectors
 * *X (rows, *PD values each, new): each y = act(x W^T + b) replaces *X
 * (the old one freed), *PD its width.  The arithmetic of every value is
 * one element of the kernel table's gemm (kern/kernels.h; the table
 * emb_kernels_select gives), so a vector has the same bits alone or
 * among others: M set, on the model's threads (emb_model_matmul); NULL,
 * in this thread.  0, or -1 with ERR set and *X freed (NULL).  The
 * shapes are the caller's to check.
 */
int emb_dense_rows(float **x, int *pd, int rows, const emb_dense *dense,
                   size_t n, emb_model *m, emb_err *err);
/* how many vectors of WIDTH values to give emb_dense_rows at a time:
 * 256, fewer (at least 1) where DENSE's widest module would make them
 * take more than 4 Mi floats */
int emb_dense_chunk(const emb_dense *dense, size_t n, int width);
/* emb_dense_rows on one vector *V, in this thread */
int emb_dense_apply(float **v, int *pd, const emb_dense *dense, size_t n,
                    emb_err *err);
/*
 * Sparse vectors (SPLADE).  w (n) -> idx, val (room for n each): the
 * nonzero entries, or the TOP_K largest of them (0: all; ties by lower
 * index), in ascending index order; returns how many.
 */
size_t emb_sparse_select(int32_t *idx, float *val, const float *w, int n,
                         size_t top_k);
/* member KEY of the record being written to b: {"indices": [...],
 * "values": [...]}, or {"terms": [...], "values": [...]} with the
 * vocabulary strings of TERMS (borrowed) when given; -1 out of memory */
int emb_out_sparse(emb_buf *b, const char *key, const int32_t *idx,
                   const float *val, size_t n, const emb_tokenizer *terms);

/* ------------------------------------------------------------------ */
/* reranking (lib/rerank.c)                                            */

enum emb_activation {
	EMB_ACTIVATION_NONE = 0,        /* raw logits (Identity) */
	EMB_ACTIVATION_SIGMOID = 1,     /* per label */
	EMB_ACTIVATION_SOFTMAX = 2,     /* over the labels */
};
/* "none"/"identity", "sigmoid", "softmax", or a sentence-transformers
 * class name ("torch.nn.modules.activation.Sigmoid"); -1 when unknown */
int emb_activation_parse(const char *s);
const char *emb_activation_name(int act);
/*
 * The cross-encoder activation of the model in DIR with NUM_LABELS
 * labels, resolved as sentence-transformers' CrossEncoder does:
 * config_sentence_transformers.json "activation_fn"; else config.json
 * "sentence_transformers": {"activation_fn"} when that key is present,
 * else config.json "sbert_ce_default_activation_function" (written
 * before sentence-transformers 4.0); else Sigmoid when NUM_LABELS is 1
 * and Identity otherwise.  A null value or a path outside "torch."
 * (which CrossEncoder loads only with trust_remote_code) falls through
 * to the next step.  -1 (err) for a torch class emb cannot apply or a
 * value that is not a string.
 */
int emb_activation_default(int *out, const char *dir, int num_labels,
                           emb_err *err);
/* v (n) in place */
void emb_activation_apply(float *v, int n, int act);
/* order (n): indices of scores (n) best first, ties by lower index */
void emb_rank_order(int *order, const float *scores, int n);
/* member KEY of the record being written to b: the array
 * [{"index": i, "score": s}, ...] of SCORES (n) best first (ties by lower
 * index; sentence-transformers CrossEncoder.rank), the TOP_K best (0: all),
 * each with "document": docs[i] (raw JSON, borrowed) when DOCS is given */
int emb_out_ranking(emb_buf *b, const char *key, const float *scores,
                    size_t n, size_t top_k, const char *const *docs,
                    emb_err *err);
/* the same, each result with members[i] (raw JSON members, "\"id\":7",
 * borrowed; NULL or "" for none) between its index and its score */
int emb_out_ranking_members(emb_buf *b, const char *key, const float *scores,
                            size_t n, size_t top_k, const char *const *docs,
                            const char *const *members, emb_err *err);
/*
 * ColBERT late interaction: sum over query rows q (nq, dim) of the max
 * over document rows d (nd, dim) of cos(q_i, d_j).  Rows are normalized
 * as torch.nn.functional.normalize (eps 1e-12); 0 when nd is 0.
 */
double emb_maxsim(const float *q, int nq, const float *d, int nd, int dim);

/* ------------------------------------------------------------------ */
/* vector quantization (lib/quant.c): sentence-transformers'           */
/* quantize_embeddings in float32, saturating out-of-range values      */

enum emb_vq {
	EMB_VQ_INT8 = 1,        /* (x - min) / ((max - min) / 255) - 128 */
	EMB_VQ_UINT8 = 2,       /* (x - min) / ((max - min) / 255) */
	EMB_VQ_BINARY = 3,      /* packbits(x > 0) - 128 as int8 */
	EMB_VQ_UBINARY = 4,     /* packbits(x > 0) */
};
/* "int8", "uint8", "binary", "ubinary" -> enum emb_vq; 0 when unknown */
int emb_vq_parse(const char *s);
const char *emb_vq_name(int kind);   /* also the output field name */
/* values per quantized vector of dim floats */
size_t emb_vq_width(int kind, int dim);
/* running per-dimension ranges: mins/maxs (dim) start at +inf/-inf */
void emb_vq_ranges_init(float *mins, float *maxs, int dim);
void emb_vq_ranges_add(float *mins, float *maxs, const float *v, int dim);
/*
 * v (dim) -> out (emb_vq_width): float32 arithmetic, truncation toward
 * zero, then saturation to the type's range (NaN, e.g. a dimension with
 * min == max, gives the lowest value).  mins/maxs only for int8/uint8.
 * Returns the number of values that saturated.
 */
size_t emb_vq_quantize(int32_t *out, int kind, const float *v, int dim,
                       const float *mins, const float *maxs);
/* the matching unpacking for scoring: q (emb_vq_width) -> out (dim):
 * binary/ubinary: +1 for a set bit, -1 for a clear one (so that a dot
 * product is dim - 2 * hamming distance); int8/uint8: the center of the
 * value's bucket, min + (u + 0.5) * step (u = q, or q + 128 for int8) */
void emb_vq_dequantize(float *out, int kind, const int32_t *q, int dim,
                       const float *mins, const float *maxs);

/*
 * Write a converted checkpoint of the model in DIR to OUT (written beside
 * it and renamed into place, st/ckpt.h; only the config, tokenizer and
 * module files emb reads are copied; an existing non-empty OUT is
 * replaced only when FORCE, else refused): TYPE "int8": every
 * linear layer weight (2-D "*.weight", not an embedding or norm) as I8
 * with an F32 "<name>_scale" per row (w = q * scale), the rest as is;
 * "f16", "bf16": every F32/F64 tensor converted (round to nearest even).
 * The metadata key "emb.quantization" names the scheme.
 */
int emb_quantize_model(const char *dir, const char *out, const char *type,
                       int force, emb_err *err);
/*
 * The same for a static embedding model (st/qstatic.c; emb_quantize_model
 * calls it for one): TYPE "f16" or "int8" (a Model2Vec folder only), the
 * table as model2vec's quantization stores it (static.h:
 * emb_static_table_convert), the per-token weights and mapping kept, and
 * config.json's "embedding_dtype" rewritten, so that model2vec and emb
 * both load the output.
 */
int emb_quantize_static(const char *dir, const char *out, const char *type,
                        int force, emb_err *err);
/* ------------------------------------------------------------------ */
/* late chunking (st/chunk.c)                                          */

/* width of a late-chunking vector over hidden size D */
int emb_chunk_pool_dim(int d, const emb_dense *dense, size_t n_dense);
/*
 * tok (n, d) rows [START[i], END[i]) for each of NW windows -> *out
 * (new, free()) of NW vectors of *outn values, row i window i's: the
 * mean of its rows, then DENSE (borrowed, N_DENSE modules, packed) in
 * order, as one product over the windows (each row the bits it has
 * alone), then L2-normalized when NORMALIZE.  Shapes and windows are
 * checked before anything is computed.
 */
int emb_chunk_pool_windows(float **out, int *outn, const float *tok, int n,
                           int d, const size_t *start, const size_t *end,
                           size_t nw, const emb_dense *dense, size_t n_dense,
                           int normalize, emb_err *err);
#endif /* EMB_ST_H */
