/*
 * search.c - exact and quantized top-k search over a vector index (see
 * search.h for the model, emb-search(1) for the file format).
 *
 * The float scores are a GEMM: the queries of a batch against one block
 * of documents at a time, with the documents as the packed "weights" of
 * kernels.h (the f32 matrix is stored packed; f16 and int8 blocks are
 * widened into a per-thread packed buffer first).  Threads take blocks;
 * each keeps a bounded heap per query, and the heaps are merged at the
 * end under one total order (score descending, then document index), so
 * the result does not depend on which thread scored which block.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "st/search-internal.h"

#define FBLOCK 256              /* documents per float block (16 panels) */
#define BBLOCK 512              /* documents per binary block (L1) */
#define QMAX 256                /* queries per pass */
#define HEAP_BYTES ((size_t)64 << 20)   /* all threads' heaps at most */
#define NORM_EPS 1e-12f
/* past this norm a document is scored exactly (in double): 1/norm would
 * lose precision in float, and a float product could overflow */
#define NORM_EXACT 1e30

/* ------------------------------------------------------------------ */
/* the searcher                                                        */

struct emb_search {
	const emb_index *ix;
	const emb_kernels *kern;
	emb_threads *tp;
	int nth;
	int k, kc;              /* results; candidates kept in the first stage */
	int score;
	unsigned first, with;
	int use_thr;
	float thr0;             /* --threshold */
	float thr;              /* the first stage's entry bar */
	int qmax;               /* queries per pass */
	float *inv;             /* (n) 1 / max(norm, eps) of `first`, cosine */
	float *invw;            /* same for `with` */
	float *htab;            /* (64 words + 1) binary score of each distance
	                           (an index file may set its padding bits) */
	float *i8lo, *i8step;   /* (dim) int8 dequantization, as i8_value */
	float *rbuf;            /* (4, dim) documents widened for rescore */
	/* per thread */
	float **sbuf;           /* (qmax, FBLOCK) scores */
	float **dbuf;           /* (FBLOCK, dim) packed block, f16 / int8 */
	emb_hit **heap;         /* (qmax, kc) */
	int **hn;               /* (qmax) */
	int **ovf;              /* (qmax) 1: a score past float32's range */
	/* the pass */
	float *qn;              /* (qmax, dim) queries (normalized: cosine) */
	uint64_t *qb;           /* (qmax, words) query sign bits */
	int m;
	emb_hit *merge;         /* (nth * kc) */
};


static unsigned finest(unsigned precs)
{
	for (int b = 0; b < 4; b++)
		if (precs & (1u << b))
			return 1u << b;
	return 0;
}

void emb_search_free(emb_search *s)
{
	if (!s)
		return;
	for (int t = 0; t < s->nth; t++) {
		if (s->sbuf) free(s->sbuf[t]);
		if (s->dbuf) free(s->dbuf[t]);
		if (s->heap) free(s->heap[t]);
		if (s->hn) free(s->hn[t]);
		if (s->ovf) free(s->ovf[t]);
	}
	free(s->ovf);
	free(s->sbuf);
	free(s->dbuf);
	free(s->heap);
	free(s->hn);
	free(s->inv);
	free(s->invw);
	free(s->htab);
	free(s->rbuf);
	free(s->i8lo);
	free(s->i8step);
	free(s->qn);
	free(s->qb);
	free(s->merge);
	emb_threads_free(s->tp);
	free(s);
}

static float *inv_norms(const emb_index *ix, unsigned p)
{
	const float *nm = ix->norm[emb_ix_bit(p)];
	float *inv = malloc((ix->n + 1) * sizeof(float));

	if (!inv)
		return NULL;
	/* a norm past NORM_EXACT (or past float's range): NAN, which sends
	 * each of its scores to exact_score */
	for (size_t j = 0; j < ix->n; j++)
		inv[j] = !(nm[j] <= NORM_EXACT) ? NAN :
		         1.0f / (nm[j] > NORM_EPS ? nm[j] : NORM_EPS);
	return inv;
}

int emb_search_new(emb_search **out, const emb_index *ix,
                   const emb_search_opts *o, emb_err *err)
{
	emb_search *s = calloc(1, sizeof(*s));
	int dim = ix->dim > 0 ? ix->dim : 1, words = (dim + 63) / 64;
	size_t kc;

	*out = NULL;
	if (!s)
		return emb_err_set(err, "out of memory");
	s->ix = ix;
	s->k = o->k > 0 ? o->k : 1;
	s->score = o->score;
	s->use_thr = o->use_threshold;
	s->thr0 = o->threshold;
	s->first = o->first ? o->first : finest(ix->precs);
	if (!(ix->precs & s->first)) {
		emb_err_set(err, "%s: the index holds no %s vectors (it has %s%s%s%s)",
		            ix->path, emb_ix_prec_name(s->first),
		            ix->precs & EMB_IX_F32 ? "f32 " : "",
		            ix->precs & EMB_IX_F16 ? "f16 " : "",
		            ix->precs & EMB_IX_INT8 ? "int8 " : "",
		            ix->precs & EMB_IX_BINARY ? "binary " : "");
		goto fail;
	}
	if (o->rescore > 0) {
		unsigned finer = ix->precs & (s->first - 1);
		s->with = o->with ? o->with : finest(finer);
		if (!s->with || !(finer & s->with)) {
			emb_err_set(err, "%s: nothing to rescore %s results with: "
			            "rescoring needs %s vectors of a finer precision "
			            "(f32 > f16 > int8 > binary)", ix->path,
			            emb_ix_prec_name(s->first),
			            s->with ? emb_ix_prec_name(s->with) : "index");
			goto fail;
		}
	}
	kc = (size_t)s->k * (size_t)(o->rescore > 0 ? o->rescore : 1);
	if (kc > ix->n)
		kc = ix->n;
	if (kc < 1)
		kc = 1;
	s->kc = (int)kc;
	s->nth = o->threads > 0 ? o->threads : emb_online_cpus();
	if (emb_kernels_select(&s->kern, err) < 0 ||
	    emb_threads_new(&s->tp, s->nth, err) < 0)
		goto fail;
	s->nth = emb_threads_count(s->tp);
	s->qmax = QMAX;
	while (s->qmax > 1 &&
	       (size_t)s->qmax * kc * sizeof(emb_hit) * (size_t)s->nth > HEAP_BYTES)
		s->qmax /= 2;
	if (s->score == EMB_SCORE_COSINE && ix->n) {
		if (!(s->inv = inv_norms(ix, s->first)) ||
		    (s->with && !(s->invw = inv_norms(ix, s->with))))
			goto nomem;
	}
	if (ix->i8) {
		if (!(s->i8lo = malloc((size_t)dim * sizeof(float))) ||
		    !(s->i8step = malloc((size_t)dim * sizeof(float))))
			goto nomem;
		for (int kk = 0; kk < ix->dim; kk++) {
			s->i8lo[kk] = ix->mins[kk];
			s->i8step[kk] = (ix->maxs[kk] - ix->mins[kk]) / 255.0f;
		}
	}
	if (!(s->htab = malloc(((size_t)words * 64 + 1) * sizeof(float))) ||
	    !(s->rbuf = malloc((size_t)4 * dim * sizeof(float))))
		goto nomem;
	for (int h = 0; h <= words * 64; h++)
		s->htab[h] = s->score == EMB_SCORE_COSINE ?
		             (float)(dim - 2 * h) / (float)dim : (float)(dim - 2 * h);
	if (!(s->sbuf = calloc((size_t)s->nth, sizeof(*s->sbuf))) ||
	    !(s->dbuf = calloc((size_t)s->nth, sizeof(*s->dbuf))) ||
	    !(s->heap = calloc((size_t)s->nth, sizeof(*s->heap))) ||
	    !(s->hn = calloc((size_t)s->nth, sizeof(*s->hn))) ||
	    !(s->ovf = calloc((size_t)s->nth, sizeof(*s->ovf))) ||
	    !(s->qn = malloc((size_t)s->qmax * dim * sizeof(float))) ||
	    !(s->qb = malloc((size_t)s->qmax * words * 8)) ||
	    !(s->merge = malloc((size_t)s->nth * kc * sizeof(emb_hit))))
		goto nomem;
	for (int t = 0; t < s->nth; t++) {
		if (!(s->sbuf[t] = malloc((size_t)s->qmax * FBLOCK * sizeof(float))) ||
		    !(s->heap[t] = malloc((size_t)s->qmax * kc * sizeof(emb_hit))) ||
		    !(s->hn[t] = malloc((size_t)s->qmax * sizeof(int))) ||
		    !(s->ovf[t] = malloc((size_t)s->qmax * sizeof(int))))
			goto nomem;
		if ((s->first & (EMB_IX_F16 | EMB_IX_INT8)) &&
		    !(s->dbuf[t] = malloc((size_t)FBLOCK * dim * sizeof(float))))
			goto nomem;
	}
	*out = s;
	return 0;
nomem:
	emb_err_set(err, "out of memory");
fail:
	emb_search_free(s);
	return -1;
}

/* documents [j0, j0 + nb) of a float precision: packed floats */
static const float *float_block(emb_search *s, int tid, size_t j0, int nb)
{
	const emb_index *ix = s->ix;
	size_t at = (j0 / EMB_PANEL) * (size_t)ix->dim * EMB_PANEL;
	size_t cnt = emb_ix_panels((size_t)nb) * EMB_PANEL * (size_t)ix->dim;
	float *d = s->dbuf[tid];

	if (s->first == EMB_IX_F32)
		return ix->f32 + at;
	if (nb % EMB_PANEL)     /* the lanes past the last document */
		memset(d + cnt - (size_t)EMB_PANEL * ix->dim, 0,
		       (size_t)EMB_PANEL * ix->dim * sizeof(float));
	if (s->first == EMB_IX_F16) {
		const uint16_t *h = ix->f16 + j0 * ix->dim;
		for (int j = 0; j < nb; j++, h += ix->dim)
			for (int kk = 0; kk < ix->dim; kk++)
				d[emb_ix_pidx(ix->dim, (size_t)j, kk)] = emb_f16_to_f32(h[kk]);
	} else {
		const int8_t *q = ix->i8 + j0 * ix->dim;
		for (int j = 0; j < nb; j++, q += ix->dim)
			for (int kk = 0; kk < ix->dim; kk++)
				d[emb_ix_pidx(ix->dim, (size_t)j, kk)] = s->i8lo[kk] +
					((float)(q[kk] + 128) + 0.5f) * s->i8step[kk];
	}
	return d;
}

/*
 * The score of document j against query qv (dim; normalized for cosine)
 * in precision p, in double: for the few whose float score is not a
 * number (a product or sum past float32's range, a norm past
 * NORM_EXACT).  Cosine: in [-1, 1]; 0 against a zero vector.  Dot: may
 * lie past float32's range, which the caller reports.
 */
static double exact_score(const emb_search *s, unsigned p, const float *qv,
                          size_t j)
{
	const emb_index *ix = s->ix;
	double dot = 0, ss = 0;

	for (int kk = 0; kk < ix->dim; kk++) {
		double x = emb_ix_value(ix, p, j, kk);
		dot += (double)qv[kk] * x;
		ss += x * x;
	}
	if (s->score != EMB_SCORE_COSINE)
		return dot;
	ss = sqrt(ss);
	return dot / (ss > NORM_EPS ? ss : NORM_EPS);
}

/* one query's scan of a block: its heap, the bar, where to say that a
 * score is past float32's range */
struct scan {
	const emb_search *s;
	const float *qv;        /* the query, as the GEMM saw it */
	emb_hit *h;
	int *n, cap;
	float thr;
	int *ovf;
};

/* document doc's float score x into the heap; a score that is not a
 * number is computed again exactly, and never ranked when that is past
 * float32's range either */
static void offer(const struct scan *sc, float x, uint32_t doc)
{
	if (!isfinite(x)) {
		double e = exact_score(sc->s, sc->s->first, sc->qv, doc);
		if (!(fabs(e) <= FLT_MAX)) {
			*sc->ovf = 1;
			return;
		}
		x = (float)e;
	}
	if (*sc->n < sc->cap ? x >= sc->thr :
	    x > sc->h[0].score || (x == sc->h[0].score && doc < sc->h[0].doc))
		emb_topk_push(sc->h, sc->n, sc->cap, x, doc);
}

/* scores row (nb) of documents j0.. (times inv, when not NULL) into the
 * heap of sc (entry bar sc->thr while not full) */
static void scan_row(const struct scan *sc, const float *row,
                     const float *inv, uint32_t j0, int nb)
{
	int j = 0;

	/* filling: every score that clears the bar goes in */
	for (; j < nb && *sc->n < sc->cap; j++)
		offer(sc, inv ? row[j] * inv[j] : row[j], j0 + (uint32_t)j);
	/* full: only a score at or above the worst kept, or not finite,
	 * needs the exact comparison (ties by index) */
	while (j < nb) {
		j += sc->s->kern->find_ge(row + j, inv ? inv + j : NULL, nb - j,
		                          sc->h[0].score);
		if (j < nb) {
			offer(sc, inv ? row[j] * inv[j] : row[j], j0 + (uint32_t)j);
			j++;
		}
	}
}

static void float_task(void *ctx, size_t begin, size_t end, int tid)
{
	emb_search *s = ctx;
	const emb_index *ix = s->ix;
	float *y = s->sbuf[tid];
	int kc = s->kc;

	for (size_t b = begin; b < end; b++) {
		size_t j0 = b * FBLOCK;
		int nb = ix->n - j0 < FBLOCK ? (int)(ix->n - j0) : FBLOCK;
		const float *wp = float_block(s, tid, j0, nb);
		// queries (m, dim) @ block (nb, dim)^T -> y (m, nb), stride FBLOCK
		s->kern->gemm(y, FBLOCK, s->qn, ix->dim, wp, NULL, s->m, nb, ix->dim);
		for (int q = 0; q < s->m; q++) {
			struct scan sc = { s, s->qn + (size_t)q * ix->dim,
			                   s->heap[tid] + (size_t)q * kc,
			                   &s->hn[tid][q], kc, s->thr,
			                   &s->ovf[tid][q] };
			scan_row(&sc, y + (size_t)q * FBLOCK,
			         s->inv ? s->inv + j0 : NULL, (uint32_t)j0, nb);
		}
	}
}

/*
 * Binary first stage.  Distances of one query's words qw (W) to the
 * documents of a block's panels (W words x 8 documents each): the kernel
 * table's hamming8; the scan keeps -distance as the heap score (the real
 * score, a function of the distance, is put in at the merge), so that
 * the bar is an integer.
 */

/* the 8 distances of a panel into the heap of one query */
static inline void bin_take(emb_hit *h, int *n, int kc, const float *tab,
                            float thr, const int32_t *d, size_t doc0,
                            size_t j1)
{
	int lim = j1 - doc0 < 8 ? (int)(j1 - doc0) : 8;

	for (int c = 0; c < lim; c++) {
		float v = -(float)d[c];
		uint32_t doc = (uint32_t)(doc0 + c);
		if (*n < kc ? tab[d[c]] >= thr :
		    (v > h[0].score || (v == h[0].score && doc < h[0].doc)))
			emb_topk_push(h, n, kc, v, doc);
	}
}

static void binary_task(void *ctx, size_t begin, size_t end, int tid)
{
	emb_search *s = ctx;
	const emb_index *ix = s->ix;
	size_t n = ix->n;
	int kc = s->kc, W = ix->words;
	int32_t d[BBLOCK];

	for (size_t b = begin; b < end; b++) {
		size_t j0 = b * BBLOCK, j1 = n - j0 < BBLOCK ? n : j0 + BBLOCK;
		size_t p0 = j0 / 8, np = (j1 - j0 + 7) / 8;
		for (int q = 0; q < s->m; q++) {
			const uint64_t *qw = s->qb + (size_t)q * W;
			emb_hit *h = s->heap[tid] + (size_t)q * kc;
			int *hn = &s->hn[tid][q];
			s->kern->hamming8(d, ix->bin + p0 * (size_t)W * 8, qw, W, np);
			for (size_t p = 0; p < np; p++) {
				const int32_t *dp = d + p * 8;
				/* bar: a distance above the worst kept cannot enter */
				int bar = *hn < kc ? INT32_MAX - 1 : (int)-h[0].score, any = 0;
				for (int c = 0; c < 8; c++)
					any |= dp[c] <= bar;
				if (any)
					bin_take(h, hn, kc, s->htab, s->thr, dp, (p0 + p) * 8, j1);
			}
		}
	}
}

/* query q (normalized for cosine) against the documents h[0..n) in
 * precision p, four at a time: the kernel table's dot4, one multiply-add
 * per element in order as its GEMM computes an element, so that an f32
 * rescore gives the exact search's score bit for bit; f16 and int8
 * documents are widened into s->rbuf first */
static int rescore(emb_search *s, unsigned p, const float *q, emb_hit *h,
                   int n)
{
	int ovf = 0;

	const emb_index *ix = s->ix;
	int dim = ix->dim;

	for (int c0 = 0; c0 < n; c0 += 4) {
		int g = n - c0 < 4 ? n - c0 : 4;
		float acc[4];
		const float *x[4];
		size_t j[4], inc = 1;
		for (int c = 0; c < 4; c++) {
			float *r = s->rbuf + (size_t)c * dim;
			j[c] = h[c0 + (c < g ? c : 0)].doc;
			x[c] = r;
			if (p == EMB_IX_F32) {
				x[c] = ix->f32 + emb_ix_pidx(dim, j[c], 0);
				inc = EMB_PANEL;
			} else if (p == EMB_IX_F16) {
				const uint16_t *d = ix->f16 + j[c] * dim;
				for (int kk = 0; kk < dim; kk++)
					r[kk] = emb_f16_to_f32(d[kk]);
			} else {
				const int8_t *d = ix->i8 + j[c] * dim;
				for (int kk = 0; kk < dim; kk++)
					r[kk] = s->i8lo[kk] + ((float)(d[kk] + 128) + 0.5f) *
					        s->i8step[kk];
			}
		}
		s->kern->dot4(acc, q, x, inc, dim);
		for (int c = 0; c < g; c++) {
			float v = s->invw ? acc[c] * s->invw[j[c]] : acc[c];
			if (!isfinite(v)) {     /* as offer() */
				double e = exact_score(s, p, q, j[c]);
				if (!(fabs(e) <= FLT_MAX))
					ovf = 1;
				v = (float)e;
			}
			h[c0 + c].score = v;
		}
	}
	return ovf;
}

void emb_search_run(emb_search *s, emb_hit *hits, int *nhits,
                    const float *q, int m)
{
	const emb_index *ix = s->ix;
	int dim = ix->dim, W = ix->words;

	for (int q0 = 0; q0 < m; q0 += s->qmax) {
		int mm = m - q0 < s->qmax ? m - q0 : s->qmax;
		s->m = mm;
		if (ix->n == 0) {
			for (int i = 0; i < mm; i++)
				nhits[q0 + i] = 0;
			continue;
		}
		memcpy(s->qn, q + (size_t)q0 * dim, (size_t)mm * dim * sizeof(float));
		if (s->score == EMB_SCORE_COSINE && s->first != EMB_IX_BINARY)
			for (int i = 0; i < mm; i++)
				emb_normalize(s->qn + (size_t)i * dim, dim);
		for (int t = 0; t < s->nth; t++) {
			memset(s->hn[t], 0, (size_t)mm * sizeof(int));
			memset(s->ovf[t], 0, (size_t)mm * sizeof(int));
		}
		s->thr = s->use_thr && !s->with ? s->thr0 : -INFINITY;
		if (s->first == EMB_IX_BINARY) {
			for (int i = 0; i < mm; i++)
				emb_ix_sign_bits(s->qb + (size_t)i * W, s->qn + (size_t)i * dim, dim, W);
			emb_threads_for(s->tp, (ix->n + BBLOCK - 1) / BBLOCK, 1,
			                binary_task, s);
		} else {
			emb_threads_for(s->tp, (ix->n + FBLOCK - 1) / FBLOCK, 1,
			                float_task, s);
		}
		for (int i = 0; i < mm; i++) {
			emb_hit *out = hits + (size_t)(q0 + i) * s->k;
			int nm = 0, keep, ovf = 0;
			for (int t = 0; t < s->nth; t++)
				ovf |= s->ovf[t][i];
			if (ovf) {      /* a score past float32's range */
				nhits[q0 + i] = -1;
				continue;
			}
			for (int t = 0; t < s->nth; t++) {
				int c = s->hn[t][i];
				memcpy(s->merge + nm, s->heap[t] + (size_t)i * s->kc,
				       (size_t)c * sizeof(emb_hit));
				nm += c;
			}
			qsort(s->merge, (size_t)nm, sizeof(emb_hit), emb_hit_cmp);
			if (nm > s->kc)
				nm = s->kc;
			if (s->first == EMB_IX_BINARY)
				for (int c = 0; c < nm; c++)
					s->merge[c].score = s->htab[(int)-s->merge[c].score];
			if (s->with) {
				const float *qv = q + (size_t)(q0 + i) * dim;
				float *qn = s->qn;   /* row 0 is free again: reuse */
				memcpy(qn, qv, (size_t)dim * sizeof(float));
				if (s->score == EMB_SCORE_COSINE)
					emb_normalize(qn, dim);
				if (rescore(s, s->with, qn, s->merge, nm)) {
					nhits[q0 + i] = -1;
					continue;
				}
				qsort(s->merge, (size_t)nm, sizeof(emb_hit), emb_hit_cmp);
			}
			keep = 0;
			for (int c = 0; c < nm && keep < s->k; c++) {
				if (s->use_thr && !(s->merge[c].score >= s->thr0))
					break;
				out[keep++] = s->merge[c];
			}
			nhits[q0 + i] = keep;
		}
	}
}
