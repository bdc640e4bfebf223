/*
 * search.h - exact and quantized top-k search over a vector index
 * (lib/st/: index.c, indexfile.c, query.c, topk.c, search.c; the files
 * in search-internal.h), the library behind emb-search.
 *
 * An index holds n document vectors of one dimension, their ids (the raw
 * JSON text of each document record's "id"), and one or more matrices of
 * the vectors, each in one precision:
 *
 *   f32     float32, in the packed GEMM panel layout of kernels.h
 *   f16     IEEE half, the same panel layout
 *   int8    sentence-transformers' int8 (per-dimension ranges, the values
 *           emb-quantize --vectors int8 writes), the same panel layout;
 *           scored as the bucket centers emb_vq_dequantize gives
 *   binary  the sign bits (x > 0, as packbits), 64-bit words, panels of
 *           8 documents; scored as the +1/-1 vectors: dim - 2 * hamming
 *
 * It is read from a vectors JSONL file (records with "embedding" or
 * "embedding_b64", and "id") or from an index file: safetensors, opened
 * by mmap and used in place (see emb-search(1) for its tensors).
 *
 * Search: the queries (m, dim) against every document in one precision
 * (a GEMM for the float ones, Hamming distances for binary), keeping a
 * streaming top-k per query; optionally the best k * rescore candidates
 * are then scored again in a more precise matrix.  Order: score
 * descending, ties by lower document index; results do not depend on
 * the thread count or on how queries are batched.
 */
#ifndef EMB_ST_SEARCH_H
#define EMB_ST_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include "st/st.h"

enum emb_ix_prec {
	EMB_IX_F32 = 1u << 0,
	EMB_IX_F16 = 1u << 1,
	EMB_IX_INT8 = 1u << 2,
	EMB_IX_BINARY = 1u << 3,
};
#define EMB_IX_ALL (EMB_IX_F32 | EMB_IX_F16 | EMB_IX_INT8 | EMB_IX_BINARY)

enum emb_score {
	EMB_SCORE_COSINE = 0,   /* q . d / (|q| |d|), norms floored at 1e-12 */
	EMB_SCORE_DOT = 1,
};

/* "f32,int8,binary" -> bits (also "float32", "float16", "ubinary");
 * 0 when a part is unknown */
unsigned emb_ix_prec_parse(const char *list);
/* name of one precision bit ("f32"), NULL otherwise */
const char *emb_ix_prec_name(unsigned prec);

typedef struct emb_index emb_index;

/*
 * Open PATH: an index file (safetensors written by emb_index_write:
 * mmapped, nothing copied) or a vectors JSONL file (read, held as f32).
 * Bad input is an error naming the file (and line).  *out: new,
 * emb_index_free.
 */
int emb_index_open(emb_index **out, const char *path, size_t max_line,
                   emb_err *err);
/*
 * Read the vectors JSONL file PATH (NULL or "-": stdin) into an index
 * holding the matrices PRECS (EMB_IX_* bits, at least one); int8 ranges
 * are the per-dimension minimum and maximum over the file.  A record
 * without "id" gets its 0-based record number.  *out: new.
 */
int emb_index_from_jsonl(emb_index **out, const char *path, unsigned precs,
                         size_t max_line, emb_err *err);
/* write IX as an index file PATH (created or truncated) */
int emb_index_write(const emb_index *ix, const char *path, emb_err *err);
void emb_index_free(emb_index *ix);

size_t emb_index_count(const emb_index *ix);
int emb_index_dim(const emb_index *ix);        /* 0 for an empty index */
unsigned emb_index_precisions(const emb_index *ix);
/* raw JSON text of document I's id (borrowed, not NUL-terminated) */
const char *emb_index_id(const emb_index *ix, size_t i, size_t *len);
/* 1 when document I is a window of a longer one (a record with "chunk",
 * from emb-encode --chunk): its chunk and span ([start, end) in code
 * points of its document's text); 0 otherwise.  The index keeps them
 * (the optional tensor "windows") and the results carry them, so that a
 * window's identity is (id, chunk). */
int emb_index_window(const emb_index *ix, size_t i, long long *chunk,
                     long long span[2]);

/*
 * The query vector of REC: "embedding" / "embedding_b64", else
 * emb-quantize's "int8" / "uint8" (with the index's int8 ranges) or
 * "binary" / "ubinary" (+1/-1 per bit), for dim = the index's.
 * Non-finite values and a dimension other than the index's are errors
 * (naming the index file).  *v: new (free()), *dim values.
 */
int emb_search_query(float **v, int *dim, const emb_index *ix,
                     const emb_record *rec, emb_err *err);

typedef struct emb_search_opts {
	int k;                  /* results per query (>= 1) */
	int score;              /* enum emb_score */
	unsigned first;         /* precision searched; 0: the most precise
	                           the index holds */
	int rescore;            /* 0: none; M: the best k * M of the first
	                           stage are scored again in `with` */
	unsigned with;          /* 0: the most precise held, above first */
	int use_threshold;      /* 1: drop results scoring below threshold */
	float threshold;
	int threads;            /* 0: all online CPUs */
} emb_search_opts;

typedef struct emb_hit {
	float score;
	uint32_t doc;           /* index of the document */
} emb_hit;

typedef struct emb_search emb_search;

/* a searcher over IX (borrowed: must outlive it); bad options (a
 * precision the index lacks, rescoring with nothing finer) are errors.
 * Scratch and threads are allocated here once.  *out: new. */
int emb_search_new(emb_search **out, const emb_index *ix,
                   const emb_search_opts *o, emb_err *err);
void emb_search_free(emb_search *s);
/*
 * q (m, dim) -> hits (m, k) best first, nhits (m) found per query (fewer
 * than k with a small index or a threshold).  Every score is a finite
 * float: one whose float product or norm overflows is computed again in
 * double; with EMB_SCORE_DOT, a query whose dot product with some
 * document lies past float32's range gets nhits -1 (no hits: a score
 * that cannot be written is never ranked), which
 * emb_search_results_json reports.  Never fails otherwise.
 */
void emb_search_run(emb_search *s, emb_hit *hits, int *nhits,
                    const float *q, int m);

/*
 * Append the JSON array [{"id": ID, "score": S}, ...] of hits (n; -1:
 * the query's overflow, an error) to b (a window's with "chunk" and
 * "span" after its id):
 * ids as the index holds them (checked to be one JSON value: an index
 * file is untrusted input), scores as emb_fmt_f32.  -1 (err) for a bad id.
 */
int emb_search_results_json(emb_buf *b, const emb_index *ix,
                            const emb_hit *hits, int n, emb_err *err);

/*
 * Documents rather than windows (lib/st/searchwin.c): the top o->k ids
 * of an index whose records share ids (the windows of long documents),
 * each id ranked by its best window and given as that window's hit;
 * exact (the windows are searched deeper until k distinct ids are
 * found).  *out: new, emb_best_per_free; IX borrowed.
 */
typedef struct emb_best_per emb_best_per;
int emb_best_per_new(emb_best_per **out, const emb_index *ix,
                     const emb_search_opts *o, emb_err *err);
void emb_best_per_free(emb_best_per *b);
/* q (m, dim) -> hits (m, o->k), nhits (m; -1 for a query as
 * emb_search_run says); -1 (err): out of memory */
int emb_best_per_run(emb_best_per *b, emb_hit *hits, int *nhits,
                     const float *q, int m, emb_err *err);

/* the reference the tests hold the fast path to: one query, every
 * document scored one at a time in double precision, sorted */
void emb_search_naive(emb_hit *hits, int *nhits, const emb_index *ix,
                      unsigned prec, int score, const float *q, int k);

#endif /* EMB_ST_SEARCH_H */
