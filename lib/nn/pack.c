/*
 * pack.c - a linear layer's weights in the form its precision mode
 * computes with (nn/nn.h emb_prec): fp32 GEMM panels (kern/kernels.h),
 * bf16 panels (kern/bkernels.h), or int8 rows and panels for W8 and
 * W8A8 (kern/qkernels.h), smoothed for W8A8 smoothing (smooth.c).  The
 * one place that decides, per layer, what the mode makes of it.
 */
#include <stdint.h>
#include <stdlib.h>
#include "kern/bkernels.h"
#include "nn/nn-internal.h"

/* a layer's int8 form (linear_int8), a share of its rows per task */
typedef struct i8_job {
	const emb_kernels *kt;
	float *w;               /* (n,k) in: fp32; out: the int8 round trip */
	int8_t *q;              /* (n,k) */
	float *ws;              /* (n) */
	int32_t *wsum;          /* (n) */
	int8_t *wp;             /* W8A8 panels, or NULL */
	const float *xcs;       /* smoothing's column scales, or NULL */
	int n, k;
} i8_job;

#define I8_GRAIN 128    /* rows per task: 8 panels of 16 */

static void i8_task(void *ctx, size_t begin, size_t end, int tid)
{
	const i8_job *j = ctx;
	size_t k = (size_t)j->k, kp = (k + 3) / 4 * 4;
	size_t r0 = begin * I8_GRAIN, r1 = end * I8_GRAIN;

	(void)tid;
	if (r1 > (size_t)j->n)
		r1 = (size_t)j->n;
	// W[r0:r1] (r1-r0, k) -> q rows, ws (each row its own scale)
	j->kt->i8_quantize_rows(j->q + r0 * k, j->ws + r0, j->w + r0 * k,
	                        (int)(r1 - r0), (int)k);
	for (size_t r = r0; r < r1; r++) {
		int32_t sum = 0;
		for (size_t kk = 0; kk < k; kk++) {
			float v = (float)j->q[r * k + kk] * j->ws[r];
			/* the float copy (W8's panels) reads unsmoothed inputs */
			j->w[r * k + kk] = j->xcs ? v * j->xcs[kk] : v;
			sum += j->q[r * k + kk];
		}
		j->wsum[r] = sum;
	}
	// q[r0:r1] -> panels r0/16..: what the whole call writes there
	if (j->wp)
		emb_i8_pack(j->wp + r0 * kp, j->q + r0 * k, (int)(r1 - r0),
		            (int)k);
}

static void i8_rows(const emb_model *m, i8_job *j)
{
	emb_threads_for(m->tp, ((size_t)j->n + I8_GRAIN - 1) / I8_GRAIN, 1,
	                i8_task, j);
}

/*
 * int8 weights for w (n,k): W8 (prec.w8 or an I8 checkpoint) replaces w
 * by its int8 round trip; with prec.a8 also keeps the int8 panels for
 * the W8A8 GEMM, smoothed (prec.a8 2) when the layer reads the norm FROM.
 */
static int linear_int8(emb_linear *out, emb_model *m, float *w, int n, int k,
                       int from_i8, const emb_norm *from, emb_err *err)
{
	size_t bytes = emb_i8_pack_size(n, k);
	int8_t *q = NULL, *wp;
	float *ws;
	int32_t *wsum;

	out->wq = NULL;
	out->ws = NULL;
	out->wsum = NULL;
	out->xcs = NULL;
	m->n_linear++;
	if (!from_i8 && !m->prec.w8)
		return 0;
	if (!bytes)
		return emb_err_set(err, "linear layer of %d x %d is too large", n, k);
	if (!(q = malloc((size_t)n * (size_t)k)) ||
	    !(ws = emb_model_alloc(m, (size_t)n, err)) ||
	    !(wsum = (int32_t *)emb_model_alloc(m, (size_t)n, err))) {
		free(q);
		return emb_err_set(err, "out of memory");
	}
	if (m->prec.a8 == 2 && from && from->n == k &&
	    emb_smooth_weights(out, m, from, w, n, k, err)) {
		free(q);
		return -1;
	}
	wp = NULL;
	if (m->prec.a8 &&
	    !(wp = (int8_t *)emb_model_alloc(m, (bytes + 3) / 4, err))) {
		free(q);
		return -1;
	}
	// W (n,k) -> q (n,k) int8, ws (n); w its round trip, wsum (n);
	// q -> wp panels; rows shared out over the threads
	i8_rows(m, &(i8_job){ m->k, w, q, ws, wsum, wp, out->xcs, n, k });
	m->n_w8++;
	if (m->prec.a8) {
		out->wq = wp;
		out->ws = ws;
		out->wsum = wsum;
		m->n_a8++;
	}
	free(q);
	return 0;
}

/* panels of W (n,k) -> wp (fp32) or wb (bf16, kernel table kt), a share
 * of them per task */
typedef struct pack_job {
	float *wp;
	uint16_t *wb;
	const emb_kernels *kt;
	const float *w;
	int n, k;
} pack_job;

#define PACK_GRAIN 8    /* panels per task */

/* panels [PACK_GRAIN begin, PACK_GRAIN end): W's rows 16 p on */
static void pack_task(void *ctx, size_t begin, size_t end, int tid)
{
	const pack_job *j = ctx;
	size_t p0 = begin * PACK_GRAIN, p1 = end * PACK_GRAIN;
	size_t r0 = p0 * EMB_PANEL, r1 = p1 * EMB_PANEL;
	size_t k2 = ((size_t)j->k + 1) / 2 * 2;

	(void)tid;
	if (r1 > (size_t)j->n)
		r1 = (size_t)j->n;
	// W[r0:r1] (r1-r0, k) -> panels p0..: the same values the whole
	// call writes there (a panel is 16 rows of W: 16 k floats, or
	// 16 k2 bf16)
	if (j->wb)
		j->kt->bf16_pack_rows(j->wb + r0 * k2, j->w + r0 * (size_t)j->k,
		                      j->k, (int)(r1 - r0), j->k);
	else
		j->kt->pack(j->wp + r0 * (size_t)j->k, j->w + r0 * (size_t)j->k,
		            j->k, (int)(r1 - r0), j->k);
}

/* W (n,k) -> wp (emb_pack_size(n, k) floats) or, wb not NULL, wb
 * (emb_bf16_pack_size(n, k) bf16, the table's packer), the panels shared
 * out over the model's threads (and their pages first touched by them) */
static void pack_panels(const emb_model *m, float *wp, uint16_t *wb,
                        const float *w, int n, int k)
{
	pack_job j = { wp, wb, m->k, w, n, k };
	size_t np = ((size_t)n + EMB_PANEL - 1) / EMB_PANEL;

	emb_threads_for(m->tp, (np + PACK_GRAIN - 1) / PACK_GRAIN, 1,
	                pack_task, &j);
}

/* W (n,k) -> out->wp (fp32 panels, psize floats) or, with bf16 compute,
 * out->wb (bf16 panels, kern/bkernels.h; wp NULL) */
static int linear_pack(emb_linear *out, emb_model *m, const float *w, int n,
                       int k, size_t psize, emb_err *err)
{
	size_t nb = m->prec.bf16 ? emb_bf16_pack_size(n, k) : 0;
	float *wp;

	out->wb = NULL;
	if (m->prec.bf16 && !nb)
		return emb_err_set(err, "linear layer of %d x %d is too large", n, k);
	if (!(wp = emb_model_alloc(m, m->prec.bf16 ? (nb + 1) / 2 : psize, err)))
		return -1;
	if (m->prec.bf16) {
		// W (n,k) -> bf16 panels (the table's packer: the same bits)
		pack_panels(m, NULL, (uint16_t *)wp, w, n, k);
		out->wb = (const uint16_t *)wp;
		out->wp = NULL;
		return 0;
	}
	// W (n,k) -> panels
	pack_panels(m, wp, NULL, w, n, k);
	out->wp = wp;
	return 0;
}

int emb_linear_make(emb_linear *out, emb_model *m, float *w, const float *wf,
                    int n, int k, size_t psize, int from_i8,
                    const emb_norm *from, emb_err *err)
{
	if (linear_int8(out, m, w, n, k, from_i8, from, err))
		return -1;
	if (out->wq) {
		/* W8A8: the int8 panels are all its forward reads (its
		 * scratch reserved now, so that no float fallback is needed):
		 * no fp32 panels (as many bytes again as the checkpoint, and
		 * their page faults at load) */
		out->wp = NULL;
		out->wb = NULL;
		return emb_linear_i8_reserve(m, k, err);
	}
	return linear_pack(out, m, w ? w : wf, n, k, psize, err);
}

int emb_linear_make_parts(emb_linear *out, emb_model *m, int nparts,
                          const float *const *wf, const int *outs, int k,
                          size_t psize, emb_err *err)
{
	size_t n = 0;
	float *wp;

	for (int i = 0; i < nparts; i++)
		n += (size_t)outs[i];
	if (linear_int8(out, m, NULL, (int)n, k, 0, NULL, err) ||
	    !(wp = emb_model_alloc(m, psize, err)))
		return -1;
	// each part (outs[i],k) -> its own panels, from row n on
	n = 0;
	for (int i = 0; i < nparts; i++) {
		pack_panels(m, wp + n * (size_t)k, NULL, wf[i], outs[i], k);
		n += (size_t)outs[i];
	}
	out->wb = NULL;
	out->wp = wp;
	return 0;
}
