/*
 * search-internal.h - what the files of the search module share (private
 * to lib/st/): the index as it sits in memory, the element accessors of
 * its matrices and the top-k heap.  The files:
 *
 *   index.c      precision names, the accessors, building an index from
 *                vectors JSONL (the matrices, the ids, the windows)
 *   indexfile.c  the index file: writing it, opening it (mmapped, every
 *                tensor and stored norm checked: it is untrusted input)
 *   query.c      a query record's vector, the results as JSON
 *   topk.c       the bounded heap, the result order, the naive reference
 *   search.c     the searcher: GEMM / Hamming first stage, rescoring
 *   searchwin.c  documents rather than windows (--best-per id)
 */
#ifndef EMB_ST_SEARCH_INTERNAL_H
#define EMB_ST_SEARCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/half.h"
#include "kern/kernels.h"
#include "st/search.h"

/* an index: in memory (built from JSONL) or an index file mmapped */
struct emb_index {
	char *path;
	emb_safetensors *st;    /* index file (NULL: built in memory) */
	size_t n;
	int dim;
	unsigned precs;
	const float *f32;       /* panels (ceil(n/16), dim, 16) */
	const uint16_t *f16;    /* (n, dim) row-major */
	const int8_t *i8;       /* (n, dim) row-major */
	const float *mins, *maxs;   /* int8 ranges (dim) */
	const uint64_t *bin;    /* panels (ceil(n/8), words, 8) */
	int words;              /* 64-bit words per binary vector */
	const float *norm[4];   /* per precision bit index: L2 norms (n) */
	const char *ids;        /* concatenated raw JSON ids */
	const int64_t *idoff;   /* (n + 1) */
	const int64_t *win;     /* (n, 3): chunk, span start, span end of
	                           window records (chunk -1: not a window);
	                           NULL: no window in the index */
	/* owned buffers when built in memory */
	void *own[16];
};

/* the bit index of one precision (EMB_IX_F32 -> 0 ...), -1 otherwise */
static inline int emb_ix_bit(unsigned p)
{
	return p == EMB_IX_F32 ? 0 : p == EMB_IX_F16 ? 1 : p == EMB_IX_INT8 ? 2 :
	       p == EMB_IX_BINARY ? 3 : -1;
}

/* panels of EMB_PANEL documents for n */
static inline size_t emb_ix_panels(size_t n)
{
	return (n + EMB_PANEL - 1) / EMB_PANEL;
}

/* the bucket center of int8 value q in dimension i: emb_vq_dequantize's
 * arithmetic exactly */
static inline float emb_ix_i8(const emb_index *ix, int i, int q)
{
	float step = (ix->maxs[i] - ix->mins[i]) / 255.0f;
	return ix->mins[i] + ((float)(q + 128) + 0.5f) * step;
}

/* element kk of document j in a panel layout of 16 */
static inline size_t emb_ix_pidx(int dim, size_t j, int kk)
{
	return (j / EMB_PANEL) * (size_t)dim * EMB_PANEL + (size_t)kk * EMB_PANEL +
	       j % EMB_PANEL;
}

/* document j's value kk in precision p (float ones) */
static inline float emb_ix_value(const emb_index *ix, unsigned p, size_t j, int kk)
{
	size_t at = emb_ix_pidx(ix->dim, j, kk);

	switch (p) {
	case EMB_IX_F32: return ix->f32[at];
	case EMB_IX_F16: return emb_f16_to_f32(ix->f16[j * ix->dim + kk]);
	default: return emb_ix_i8(ix, kk, ix->i8[j * ix->dim + kk]);
	}
}


/* the sign bits of v (dim) as packbits, in words (zero padded) */
void emb_ix_sign_bits(uint64_t *w, const float *v, int dim, int words);
/* the index of the vectors JSONL records of RD (stolen) holding the
 * matrices PRECS; PATH names it.  *out: new (index.c) */
int emb_ix_from_reader(emb_index **out, emb_reader *rd, const char *path,
                       unsigned precs, emb_err *err);

/* ---- top-k (topk.c) ---- */
/* a ranks before b: score descending, then lower document index */
static inline int emb_hit_before(float as, uint32_t ai, float bs, uint32_t bi)
{
	return as > bs || (as == bs && ai < bi);
}
/* (s, doc) into the bounded heap h (*n kept, cap at most): a min-heap on
 * rank, h[0] the worst kept, which a better hit replaces when full */
void emb_topk_push(emb_hit *h, int *n, int cap, float s, uint32_t doc);
/* qsort order of hits: best first */
int emb_hit_cmp(const void *a, const void *b);

#endif /* EMB_ST_SEARCH_INTERNAL_H */
