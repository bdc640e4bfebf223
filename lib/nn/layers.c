/*
 * layers.c - the shared layers every family's forward is built from,
 * run over the thread pool: linear (fp32, W8, W8A8 with the activation
 * quantized inside each GEMM task, bf16), norms, activations, gated FFNs,
 * per-head norms, and the post-attention half of a layer for every
 * family (pre-, post- and sandwich-norm; MLP or gated FFN; any linear
 * mode), in fused row blocks on large batches (emb_post_attn_fwd).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"

/* the fused epilogue (EMB_KACT_*) of activation ACT (EMB_ACT_*):
 * EMB_KACT_NONE for none, -1 for one the kernels do not fuse (tanh,
 * silu: a second pass, act_row); the kernel itself: emb_kernels_act */
static int kact_of(int act)
{
	switch (act) {
	case EMB_ACT_NONE: return EMB_KACT_NONE;
	case EMB_ACT_GELU: return EMB_KACT_GELU;
	case EMB_ACT_GELU_TANH: return EMB_KACT_GELU_TANH;
	case EMB_ACT_RELU: return EMB_KACT_RELU;
	default: return -1;
	}
}
/* ------------------------------------------------------------------ */
/* layers                                                              */

#define GEMM_RB 96      /* rows per task (the kernels' own row block) */

typedef struct linear_job {
	const emb_kernels *k;
	float *y;
	const float *x;
	int ldy, ldx, rows, ncg, pg, np;
	const emb_linear *l;
	int kact;               /* EMB_KACT_* fused into the GEMM epilogue */
	emb_prof *prof;         /* $EMB_PROFILE: busy time, or NULL */
} linear_job;

static void prof_busy(emb_prof *p, int tid, const emb_linear *l, double sec);

/* y (rows, n1-n0) = act(x (rows, in) @ W[n0:n1]^T + b) with bf16
 * weights (l->wb, kern/bkernels.h; n0 = 16 p0); the activation runs on
 * the block while it is in cache, what a second pass would give */
static void bf16_block(const emb_kernels *k, float *y, int ldy,
                       const float *x, int ldx, const emb_linear *l, int p0,
                       int n0, int n1, int rows, int kact)
{
	emb_act_fn f = emb_kernels_act(k, kact);
	size_t k2 = ((size_t)l->in + 1) / 2 * 2;

	// x (rows, in) @ Wb[n0:n1]^T + b -> y (rows, n1-n0)
	k->gemm_bf16(y, ldy, x, ldx, l->wb + (size_t)p0 * EMB_PANEL * k2,
	             l->b ? l->b + n0 : NULL, rows, n1 - n0, l->in);
	if (f)
		for (int r = 0; r < rows; r++)
			f(y + (size_t)r * ldy, n1 - n0);
}

static void linear_task(void *ctx, size_t begin, size_t end, int tid)
{
	const linear_job *j = ctx;
	const emb_linear *l = j->l;
	double t0 = j->prof ? emb_prof_clock() : 0;

	for (size_t t = begin; t < end; t++) {
		int r0 = (int)(t / (size_t)j->ncg) * GEMM_RB;
		int p0 = (int)(t % (size_t)j->ncg) * j->pg;
		int r1 = r0 + GEMM_RB < j->rows ? r0 + GEMM_RB : j->rows;
		int p1 = p0 + j->pg < j->np ? p0 + j->pg : j->np;
		int n0 = p0 * EMB_PANEL;
		int n1 = p1 * EMB_PANEL < l->out ? p1 * EMB_PANEL : l->out;
		if (p0 >= j->np)
			continue;
		if (l->wb) {
			bf16_block(j->k, j->y + (size_t)r0 * j->ldy + n0, j->ldy,
			           j->x + (size_t)r0 * j->ldx, j->ldx, l, p0, n0, n1,
			           r1 - r0, j->kact);
			continue;
		}
		// act(x (r1-r0, in) @ W[n0:n1]^T + b) -> y (r1-r0, n1-n0)
		if (j->kact == EMB_KACT_NONE)
			j->k->gemm(j->y + (size_t)r0 * j->ldy + n0, j->ldy,
			           j->x + (size_t)r0 * j->ldx, j->ldx,
			           l->wp + (size_t)p0 * EMB_PANEL * l->in,
			           l->b ? l->b + n0 : NULL, r1 - r0, n1 - n0, l->in);
		else
			j->k->gemm_act(j->y + (size_t)r0 * j->ldy + n0, j->ldy,
			               j->x + (size_t)r0 * j->ldx, j->ldx,
			               l->wp + (size_t)p0 * EMB_PANEL * l->in,
			               l->b ? l->b + n0 : NULL, r1 - r0, n1 - n0,
			               l->in, j->kact);
	}
	if (j->prof)
		prof_busy(j->prof, tid, l, emb_prof_clock() - t0);
}

/*
 * W8A8: each task quantizes the activation rows of its row block into
 * its thread's scratch slice (u8 rows, scales, zero points), right before
 * the int8 GEMM reads them from cache; a thread that gets another column
 * group of the row block it last quantized reuses it.  A fused activation
 * (kact, EMB_KACT_*) runs on each 64-column block of the output as soon
 * as the int8 kernel has written it, while it is still in cache: the
 * variant's gelu / gelu_tanh / relu on row pieces that start at multiples
 * of 64 columns, bit for bit what the same kernel gives over whole rows.
 */
typedef struct i8_job {
	const emb_model *m;
	float *y;
	const float *x;
	int ldy, ldx, rows, ncg, pg, np, kp;
	const emb_linear *l;
	emb_u8_quant_fn quant;
	uint8_t *scratch;       /* nt slices of `slice` bytes */
	size_t slice;
	int *last;              /* (nt) row block each slice holds, -1 none */
	int kact;               /* EMB_KACT_* on the output */
	emb_prof *prof;         /* $EMB_PROFILE: busy time, or NULL */
} i8_job;

/* y (rows, cols) stride ldy in place: kact (EMB_KACT_*), row by row */
static void i8_act_rows(const emb_kernels *k, float *y, int ldy, int rows,
                        int cols, int kact)
{
	emb_act_fn f = emb_kernels_act(k, kact);

	if (!f)
		return;
	for (int r = 0; r < rows; r++)
		f(y + (size_t)r * ldy, cols);
}

/* y[:, n0:n1] (rows, n1-n0) = the int8 GEMM of quantized rows u (rows,
 * kp), xs, xz with the layer's columns [n0,n1) (n0 at a multiple of 64),
 * then kact on each 64-column block while it is in cache */
static void i8_cols(const emb_model *m, float *y, int ldy, const uint8_t *u,
                    int kp, const float *xs, const int32_t *xz, int rows,
                    const emb_linear *l, int n0, int n1, int kact)
{
	int step = kact == EMB_KACT_NONE ? n1 - n0 : 64;

	if (n1 <= n0)
		return;
	for (int c0 = n0; c0 < n1; c0 += step) {
		int c1 = c0 + step < n1 ? c0 + step : n1;
		float *yc = y + c0;
		// u (rows, kp) @ Wq[c0:c1]^T -> y (rows, c1-c0), then act
		m->gemm_i8(yc, ldy, u, kp, xs, xz, l->wq + (size_t)c0 * kp,
		           l->ws + c0, l->wsum + c0, l->b ? l->b + c0 : NULL, rows,
		           c1 - c0, kp);
		i8_act_rows(m->k, yc, ldy, rows, c1 - c0, kact);
	}
}

static void i8_gemm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const i8_job *j = ctx;
	const emb_linear *l = j->l;
	uint8_t *s = j->scratch + (size_t)tid * j->slice;
	float *xs = (float *)s;
	int32_t *xz = (int32_t *)(s + GEMM_RB * sizeof(float));
	uint8_t *u = s + GEMM_RB * (sizeof(float) + sizeof(int32_t));
	double t0 = j->prof ? emb_prof_clock() : 0;

	for (size_t t = begin; t < end; t++) {
		int blk = (int)(t / (size_t)j->ncg);
		int r0 = blk * GEMM_RB;
		int p0 = (int)(t % (size_t)j->ncg) * j->pg;
		int r1 = r0 + GEMM_RB < j->rows ? r0 + GEMM_RB : j->rows;
		int p1 = p0 + j->pg < j->np ? p0 + j->pg : j->np;
		int n0 = p0 * 16, n1 = p1 * 16 < l->out ? p1 * 16 : l->out;
		if (p0 >= j->np)
			continue;
		if (j->last[tid] != blk) {
			// x rows [r0,r1) (r1-r0, in) [* xcs] -> u (r1-r0, kp), xs, xz
			if (l->xcs)
				j->m->k->u8_quantize_scaled(u, j->kp, xs, xz,
				                            j->x + (size_t)r0 * j->ldx,
				                            j->ldx, r1 - r0, l->in, l->xcs);
			else
				j->quant(u, j->kp, xs, xz, j->x + (size_t)r0 * j->ldx,
				         j->ldx, r1 - r0, l->in);
			j->last[tid] = blk;
		}
		i8_cols(j->m, j->y + (size_t)r0 * j->ldy, j->ldy, u, j->kp, xs, xz,
		        r1 - r0, l, n0, n1, j->kact);
	}
	if (j->prof)
		prof_busy(j->prof, tid, l, emb_prof_clock() - t0);
}

size_t emb_linear_i8_scratch(const emb_linear *l, int rows)
{
	size_t kp = ((size_t)l->in + 3) / 4 * 4;

	return rows > 0 ? (size_t)rows * (kp + 8) : 0;
}

void emb_linear_i8_rows(const emb_model *m, float *y, int ldy,
                        const float *x, int ldx, int rows,
                        const emb_linear *l, int kact, uint8_t *scratch)
{
	int kp = (l->in + 3) / 4 * 4;
	float *xs = (float *)scratch;
	int32_t *xz = (int32_t *)(scratch + (size_t)rows * sizeof(float));
	uint8_t *u = scratch + (size_t)rows * (sizeof(float) + sizeof(int32_t));

	if (rows <= 0)
		return;
	// x (rows, in) [* xcs] -> u (rows, kp), xs, xz
	if (l->xcs)
		m->k->u8_quantize_scaled(u, kp, xs, xz, x, ldx, rows, l->in, l->xcs);
	else
		m->k->u8_quantize(u, kp, xs, xz, x, ldx, rows, l->in);
	i8_cols(m, y, ldy, u, kp, xs, xz, rows, l, 0, l->out, kact);
}

/* $EMB_PROFILE: the key of l's lines */
static const char *prof_what(const emb_linear *l)
{
	return emb_linear_is_i8(l) ? "int8" : l->wb ? "bf16" : "fp32";
}

/* $EMB_PROFILE: one call of l over ROWS rows took SEC thread-seconds */
static void prof_linear(const emb_model *m, int tid, const emb_linear *l,
                        int rows, double sec)
{
	emb_prof_add(m->prof, tid, prof_what(l), l->in, l->out, rows,
	             2.0 * rows * l->in * l->out, sec);
}

/* $EMB_PROFILE: a task of thread TID worked SEC seconds on l */
static void prof_busy(emb_prof *p, int tid, const emb_linear *l, double sec)
{
	emb_prof_busy(p, tid, prof_what(l), l->in, l->out, sec);
}

/* linear_i8's scratch slice per thread for a layer of IN inputs:
 * GEMM_RB rows of kp bytes + a scale and a zero point each, rounded to
 * cache lines */
static size_t i8_slice(int in)
{
	size_t kp = ((size_t)in + 3) / 4 * 4;

	return ((size_t)GEMM_RB * (kp + 8) + 63) / 64 * 64;
}

int emb_linear_i8_reserve(emb_model *m, int in, emb_err *err)
{
	size_t nt = (size_t)emb_threads_count(m->tp);
	/* a slice per thread, then nt tags */
	size_t need = i8_slice(in) * nt + nt * sizeof(int);

	if (need <= m->q8_cap)
		return 0;
	free(m->q8);
	m->q8_cap = 0;
	if (!(m->q8 = aligned_alloc(64, (need + 63) / 64 * 64)))
		return emb_err_set(err, "out of memory (int8 scratch)");
	m->q8_cap = need;
	return 0;
}

/* W8A8 linear, then kact (EMB_KACT_*), in m->q8: reserved for l when
 * it was made (emb_linear_make), at this thread count, so big enough */
static void linear_i8(emb_model *m, float *y, int ldy, const float *x,
                      int ldx, int rows, const emb_linear *l, int kact)
{
	int nt = emb_threads_count(m->tp);
	int rb = (rows + GEMM_RB - 1) / GEMM_RB, np = (l->out + 15) / 16;
	int kp = (l->in + 3) / 4 * 4, want = 4 * nt, ncg, pg;
	size_t slice = i8_slice(l->in);
	double t0;
	i8_job j;

	/* column groups so that there are enough tasks for every thread;
	 * multiples of 4 panels (the kernel's column block) where possible */
	ncg = rb >= want ? 1 : (want + rb - 1) / rb;
	if (ncg > (np + 3) / 4)
		ncg = (np + 3) / 4;
	if (ncg < 1)
		ncg = 1;
	pg = (np + ncg - 1) / ncg;
	pg = (pg + 3) / 4 * 4;
	ncg = (np + pg - 1) / pg;
	j = (i8_job){ m, y, x, ldy, ldx, rows, ncg, pg, np, kp, l,
	              m->k->u8_quantize, m->q8, slice, NULL, kact, m->prof };
	j.last = (int *)(m->q8 + slice * (size_t)nt);
	for (int t = 0; t < nt; t++)
		j.last[t] = -1;
	t0 = m->prof ? emb_prof_clock() : 0;
	emb_threads_for(m->tp, (size_t)rb * ncg, 1, i8_gemm_task, &j);
	if (m->prof)
		prof_linear(m, 0, l, rows, (emb_prof_clock() - t0) * nt);
}

/* float linear, kact (EMB_KACT_*) fused into the kernels' epilogue */
static void linear_f32(emb_model *m, float *y, int ldy, const float *x,
                       int ldx, int rows, const emb_linear *l, int kact)
{
	int nt = emb_threads_count(m->tp);
	int rb = (rows + GEMM_RB - 1) / GEMM_RB;
	int np = (l->out + EMB_PANEL - 1) / EMB_PANEL;
	int want = 4 * nt, ncg, pg;
	double t0;
	linear_job j;

	/* column groups so that there are enough tasks for every thread */
	ncg = rb >= want ? 1 : (want + rb - 1) / rb;
	if (ncg > (np + 1) / 2)
		ncg = (np + 1) / 2;
	if (ncg < 1)
		ncg = 1;
	pg = (np + ncg - 1) / ncg;
	pg += pg & 1;
	ncg = (np + pg - 1) / pg;
	j = (linear_job){ m->k, y, x, ldy, ldx, rows, ncg, pg, np, l, kact,
	                  m->prof };
	t0 = m->prof ? emb_prof_clock() : 0;
	emb_threads_for(m->tp, (size_t)rb * ncg, 1, linear_task, &j);
	if (m->prof)
		prof_linear(m, 0, l, rows, (emb_prof_clock() - t0) * nt);
}

void emb_model_matmul(emb_model *m, float *y, const float *x, int rows,
                      const float *wp, const float *b, int n, int k)
{
	emb_linear l = { .wp = wp, .b = b, .in = k, .out = n };

	if (rows > 0)
		linear_f32(m, y, n, x, k, rows, &l, EMB_KACT_NONE);
}

void emb_linear_fwd(emb_model *m, float *y, int ldy, const float *x,
                    int ldx, int rows, const emb_linear *l)
{
	if (rows <= 0)
		return;
	if (emb_linear_is_i8(l))
		linear_i8(m, y, ldy, x, ldx, rows, l, EMB_KACT_NONE);
	else
		linear_f32(m, y, ldy, x, ldx, rows, l, EMB_KACT_NONE);
}

void emb_linear_act_fwd(emb_model *m, float *y, int ldy, const float *x,
                        int ldx, int rows, const emb_linear *l, int act)
{
	int kact = kact_of(act);

	if (rows <= 0)
		return;
	if (act == EMB_ACT_NONE) {
		emb_linear_fwd(m, y, ldy, x, ldx, rows, l);
		return;
	}
	if (kact >= 0 && emb_linear_is_i8(l)) {
		linear_i8(m, y, ldy, x, ldx, rows, l, kact);
		return;
	}
	if (kact >= 0) {
		linear_f32(m, y, ldy, x, ldx, rows, l, kact);
		return;
	}
	/* an activation the kernels do not fuse: two passes */
	emb_linear_fwd(m, y, ldy, x, ldx, rows, l);
	if (ldy == l->out) {
		emb_act_fwd(m, y, rows, l->out, act);
		return;
	}
	for (int r = 0; r < rows; r++)
		emb_act_fwd(m, y + (size_t)r * ldy, 1, l->out, act);
}

typedef struct rows_job {
	const emb_kernels *k;
	float *y;
	const float *x, *res;
	int n, act;
	const emb_norm *nm;
} rows_job;

/* rows [begin, end) of y (rows, nm->n) = nm(x + res), res may be NULL
 * or y; in the calling thread */
static void norm_rows(const emb_kernels *k, float *y, const float *x,
                      const float *res, size_t begin, size_t end,
                      const emb_norm *nm)
{
	size_t n = (size_t)nm->n;

	for (size_t r = begin; r < end; r++) {
		float *yr = y + r * n;
		const float *xr = x + r * n;
		if (res) {
			const float *rr = res + r * n;
			if (yr == rr) {
				k->add(yr, xr, (int)n);
			} else {
				if (yr != xr)
					memcpy(yr, xr, n * sizeof(float));
				k->add(yr, rr, (int)n);
			}
			xr = yr;
		}
		emb_norm_row(k, nm, yr, xr);
	}
}

static void norm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rows_job *j = ctx;

	(void)tid;
	norm_rows(j->k, j->y, j->x, j->res, begin, end, j->nm);
}

void emb_norm_fwd(emb_model *m, float *y, const float *x, const float *res,
                  int rows, const emb_norm *nm)
{
	rows_job j = { m->k, y, x, res, nm->n, 0, nm };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, norm_task, &j);
}

/* x (n) in place: act (EMB_ACT_*) */
static void act_row(const emb_kernels *k, float *x, int n, int act)
{
	emb_act_fn f = emb_kernels_act(k, kact_of(act));

	if (f) {
		f(x, n);
		return;
	}
	switch (act) {
	case EMB_ACT_TANH:
		for (int i = 0; i < n; i++)
			x[i] = tanhf(x[i]);
		break;
	case EMB_ACT_SILU:
		k->silu(x, x, NULL, n);
		break;
	default: break;
	}
}

static void act_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rows_job *j = ctx;

	(void)tid;
	for (size_t r = begin; r < end; r++)
		act_row(j->k, j->y + r * j->n, j->n, j->act);
}

void emb_act_fwd(emb_model *m, float *x, int rows, int cols, int act)
{
	rows_job j = { m->k, x, NULL, NULL, cols, act, NULL };

	if (act != EMB_ACT_NONE)
		emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16,
		                act_task, &j);
}

/* out (rows, n) = act(x[a]) * x[b] where x (rows, 2n) holds [first | second]
 * and act_first picks which half the activation applies to */
typedef struct glu_job {
	const emb_kernels *k;
	float *y;
	const float *x;
	int n, act, act_first;
} glu_job;

/* y (n) = act(a) * b, or a * act(b) when act_first is 0, from x (2n) =
 * [a | b] */
static void glu_row(const emb_kernels *k, float *y, const float *x, int n,
                    int act, int act_first)
{
	const float *a = x, *b = x + n;

	if (!act_first) {
		a = x + n;
		b = x;
	}
	if (act == EMB_ACT_SILU) {      /* SwiGLU: one pass */
		k->silu(y, a, b, n);
		return;
	}
	memcpy(y, a, (size_t)n * sizeof(float));
	act_row(k, y, n, act);
	for (int i = 0; i < n; i++)
		y[i] *= b[i];
}

static void glu_task(void *ctx, size_t begin, size_t end, int tid)
{
	const glu_job *j = ctx;

	(void)tid;
	for (size_t r = begin; r < end; r++)
		glu_row(j->k, j->y + r * j->n, j->x + r * 2 * j->n, j->n, j->act,
		        j->act_first);
}

void emb_glu_fwd(emb_model *m, float *y, const float *x, int rows, int n,
                 int act, int act_first)
{
	glu_job j = { m->k, y, x, n, act, act_first };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, glu_task, &j);
}

/*
 * The post-attention half of a layer, every family's (driver.c):
 *
 *   post-norm (BERT, nomic):
 *     t = o ctx; h = attn_norm(h + t); t = ffn(h); h = ffn_norm(h + t)
 *   pre-norm (ModernBERT, Qwen3, Gemma 3):
 *     t = [post_attn](o ctx); h += t; t = ffn(ffn_norm(h));
 *     h += [post_ffn](t)
 *   then, optionally, out = next(h): the next layer's attn_norm into its
 *   QKV input, or the final norm in place (residual + norm fused)
 *
 * with ffn an MLP down(act(up x)) or gated down(glu(up x)).  Large
 * batches run in row blocks: each task takes its rows through the output
 * projection, the residual and norms, the feed-forward pair and the next
 * norm, with its intermediates in the thread's own scratch (L2-hot)
 * instead of (rows, inter) buffers in memory, and one wait for the
 * threads instead of six to nine.  Every linear takes the path
 * emb_linear_act_fwd would: fp32 panels (bias and gelu/relu in the GEMM
 * epilogue), bf16 (bf16_block) or W8A8 (the block's rows quantized in
 * the task, emb_linear_i8_rows); W8 is fp32 on dequantized weights.
 * The steps are written once (post_half) and run either over one row
 * block in a task or over all rows with each step threaded (the layers
 * one by one, $EMB_NO_FUSE); the kernels' results depend neither on the
 * number of rows nor on the column split, so the two give the same bits.
 * Row blocks are used when there are enough of them for every thread;
 * small batches keep the column-split GEMMs.
 */
#define POST_RB 96      /* rows per block at most (the kernel's own block) */

/* rows per block, or 0: run the layers one by one */
static int post_rows(const emb_model *m, int rows)
{
	int nt = emb_threads_count(m->tp), nb;

	if (m->no_fuse)
		return 0;
	nb = (rows + POST_RB - 1) / POST_RB;
	if (nb < 2 * nt)
		return 0;
	nb = (nb + nt - 1) / nt * nt;   /* a multiple of the threads */
	/* whole 6-row tiles of the AVX2 kernel (the AVX-512 one tiles 8 rows
	 * and takes 4 at a time at the end) */
	return ((rows + nb - 1) / nb + 5) / 6 * 6;
}

static int gated(const emb_post_attn *p)
{
	return p->ffn != EMB_FFN_MLP;
}

size_t emb_post_attn_scratch(const emb_model *m, int rows,
                             const emb_post_attn *p)
{
	if (post_rows(m, rows))
		return 0;
	return (size_t)rows * (p->up->out + (gated(p) ? p->down->in : 0));
}

/* y (n, l->out) = act(x (n, l->in) @ W^T + b) in the calling thread, the
 * path and the bits emb_linear_act_fwd gives; q8: W8A8 scratch
 * (emb_linear_i8_scratch bytes) */
static void block_linear(const emb_model *m, float *y, int ldy,
                         const float *x, int ldx, int n, const emb_linear *l,
                         int act, uint8_t *q8, int tid)
{
	const emb_kernels *k = m->k;
	int kact = kact_of(act) < 0 ? EMB_KACT_NONE : kact_of(act);
	int rest = kact == EMB_KACT_NONE ? act : EMB_ACT_NONE;
	double t0 = m->prof ? emb_prof_clock() : 0;

	if (emb_linear_is_i8(l))
		// x (n, in) -> u8 rows; @ Wq^T -> y (n, out), kact per 64 columns
		emb_linear_i8_rows(m, y, ldy, x, ldx, n, l, kact, q8);
	else if (l->wb)
		bf16_block(k, y, ldy, x, ldx, l, 0, 0, l->out, n, kact);
	else if (kact == EMB_KACT_NONE)
		k->gemm(y, ldy, x, ldx, l->wp, l->b, n, l->out, l->in);
	else
		k->gemm_act(y, ldy, x, ldx, l->wp, l->b, n, l->out, l->in, kact);
	/* activations the epilogues do not fuse: a second pass, as
	 * emb_linear_act_fwd makes */
	if (rest != EMB_ACT_NONE)
		for (int r = 0; r < n; r++)
			act_row(k, y + (size_t)r * ldy, l->out, rest);
	if (m->prof) {
		double sec = emb_prof_clock() - t0;
		prof_linear(m, tid, l, n, sec);
		prof_busy(m->prof, tid, l, sec);
	}
}

typedef struct post_job {
	const emb_model *m;
	float *h;
	const float *ctx;
	const emb_post_attn *p;
	int ldc, rows, rb;
	size_t q8_off;          /* bytes into each thread's slice */
} post_job;

/*
 * Where the steps of the post-attention half run: over all rows with
 * each step threaded (the layers one by one: column-split GEMMs, rows
 * of norms across the pool), or over one row block in the calling
 * thread (a task of post_task; q8: its W8A8 scratch).  Both give the
 * same bits for every row.
 */
typedef struct post_exec {
	emb_model *m;
	int threaded;
	uint8_t *q8;
	int tid;                /* the thread (row blocks) */
} post_exec;

// y (n, l->out) = act(x (n, l->in) @ W^T + b)
static void px_linear(const post_exec *e, float *y, int ldy, const float *x,
                      int ldx, int n, const emb_linear *l, int act)
{
	if (e->threaded)
		emb_linear_act_fwd(e->m, y, ldy, x, ldx, n, l, act);
	else
		block_linear(e->m, y, ldy, x, ldx, n, l, act, e->q8, e->tid);
}

// y (n, nm->n) = nm(x + res)
static void px_norm(const post_exec *e, float *y, const float *x,
                    const float *res, int n, const emb_norm *nm)
{
	if (e->threaded)
		emb_norm_fwd(e->m, y, x, res, n, nm);
	else
		norm_rows(e->m->k, y, x, res, 0, (size_t)n, nm);
}

// g (n, I) = glu(mid (n, 2I))
static void px_glu(const post_exec *e, float *g, const float *mid, int n,
                   int I, const emb_post_attn *p)
{
	if (e->threaded) {
		emb_glu_fwd(e->m, g, mid, n, I, p->act, p->ffn == EMB_FFN_GLU);
		return;
	}
	for (int r = 0; r < n; r++)
		glu_row(e->m->k, g + (size_t)r * I, mid + (size_t)r * 2 * I, I,
		        p->act, p->ffn == EMB_FFN_GLU);
}

/* h (n,H) += x (n,H) */
static void add_rows(const emb_model *m, float *h, const float *x, size_t T,
                     size_t H)
{
	for (size_t t = 0; t < T; t++)
		m->k->add(h + t * H, x + t * H, (int)H);
}

/*
 * The post-attention half of n rows (the formulas above), written once:
 * h (n,H) the residual stream, ctx (n,Hc) the attention output (row
 * stride ldc), t (n,H) and mid (n,U) [then g (n,I) when gated] scratch,
 * out (n,H) the next norm's output (p->next).
 */
static void post_half(const post_exec *e, float *h, const float *ctx,
                      int ldc, float *t, float *mid, float *out, int n,
                      const emb_post_attn *p)
{
	int H = p->o->out, U = p->up->out, I = p->down->in;
	int pre = p->place == EMB_PLACE_PRE;
	float *g = mid + (size_t)n * U;
	const float *in = h;

	// ctx (n,Hc) @ Wo (H,Hc)^T -> t (n,H)
	px_linear(e, t, H, ctx, ldc, n, p->o, EMB_ACT_NONE);
	// post: h = attn_norm(h + t); pre: h += [post_attn](t),
	// t = ffn_norm(h)
	if (!pre) {
		px_norm(e, h, t, h, n, p->attn_norm);
	} else {
		if (p->post_attn->n)
			px_norm(e, t, t, NULL, n, p->post_attn);
		add_rows(e->m, h, t, (size_t)n, (size_t)H);
		px_norm(e, t, h, NULL, n, p->ffn_norm);
		in = t;
	}
	if (!gated(p)) {
		// act(in (n,H) @ Wup (I,H)^T) -> mid (n,I)
		px_linear(e, mid, U, in, H, n, p->up, p->act);
	} else {
		// in (n,H) @ Wup (2I,H)^T -> mid (n,2I); g (n,I) = glu(mid)
		px_linear(e, mid, U, in, H, n, p->up, EMB_ACT_NONE);
		px_glu(e, g, mid, n, I, p);
	}
	// mid or g (n,I) @ Wdown (H,I)^T -> t (n,H)
	px_linear(e, t, H, gated(p) ? g : mid, I, n, p->down, EMB_ACT_NONE);
	// post: h = ffn_norm(h + t); pre: h += [post_ffn](t); then
	// out = next(h)
	if (!pre) {
		px_norm(e, h, t, h, n, p->ffn_norm);
	} else {
		if (p->post_ffn->n)
			px_norm(e, t, t, NULL, n, p->post_ffn);
		add_rows(e->m, h, t, (size_t)n, (size_t)H);
	}
	if (p->next)
		px_norm(e, out, h, NULL, n, p->next);
}

static void post_task(void *ctx, size_t begin, size_t end, int tid)
{
	const post_job *j = ctx;
	const emb_post_attn *p = j->p;
	int H = p->o->out;
	float *t = j->m->rscratch + (size_t)tid * j->m->rscratch_each;
	post_exec e = { (emb_model *)j->m, 0, (uint8_t *)t + j->q8_off, tid };

	for (size_t blk = begin; blk < end; blk++) {
		int r0 = (int)blk * j->rb;
		int n = j->rows - r0 < j->rb ? j->rows - r0 : j->rb;
		if (n <= 0)
			continue;
		/* t (n,H), mid (n,U), g (n,I) packed for this block's n rows */
		post_half(&e, j->h + (size_t)r0 * H, j->ctx + (size_t)r0 * j->ldc,
		          j->ldc, t, t + (size_t)n * H, p->next ? p->out +
		          (size_t)r0 * H : NULL, n, p);
	}
}

int emb_post_attn_fwd(emb_model *m, float *h, const float *ctx, int ldc,
                      float *tmp, float *mid, int rows,
                      const emb_post_attn *p, emb_err *err)
{
	int rb = post_rows(m, rows), H = p->o->out, U = p->up->out;
	int I = p->down->in, nt = emb_threads_count(m->tp);
	const emb_linear *ls[3] = { p->o, p->up, p->down };
	post_job j = { m, h, ctx, p, ldc, rows, rb, 0 };
	size_t fl, q8 = 0, each;

	if (rows <= 0)
		return 0;
	if (!rb) {
		post_exec e = { m, 1, NULL, 0 };
		post_half(&e, h, ctx, ldc, tmp, mid, p->next ? p->out : NULL,
		          rows, p);
		return 0;
	}
	/* per thread: t (rb,H), mid (rb,U), [g (rb,I)], then the W8A8 rows
	 * of the widest int8 input, at a cache line */
	fl = (size_t)rb * ((size_t)H + U + (gated(p) ? (size_t)I : 0));
	fl = (fl + 15) / 16 * 16;
	for (int i = 0; i < 3; i++)
		if (emb_linear_is_i8(ls[i]) && emb_linear_i8_scratch(ls[i], rb) > q8)
			q8 = emb_linear_i8_scratch(ls[i], rb);
	each = fl + (q8 + sizeof(float) - 1) / sizeof(float);
	each = (each + 15) / 16 * 16;
	j.q8_off = fl * sizeof(float);
	if (each > m->rscratch_each) {
		size_t cap = m->rscratch_len / sizeof(float);
		m->rscratch_each = 0;
		if (emb_big_grow(&m->rscratch, &cap, &m->rscratch_len, each * (size_t)nt))
			return emb_err_set(err, "out of memory (%zu floats of "
			                   "scratch)", each * (size_t)nt);
		m->rscratch_each = each;
	}
	emb_threads_for(m->tp, (size_t)(rows + rb - 1) / rb, 1, post_task, &j);
	return 0;
}

/* per-head norm (q/k norm, an RMSNorm): nheads heads of dh at row stride ld */
typedef struct hnorm_job {
	float *x;
	int ld, nheads;
	const emb_norm *nm;
	const emb_kernels *k;
} hnorm_job;

static void hnorm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const hnorm_job *j = ctx;

	(void)tid;
	for (size_t r = begin; r < end; r++)
		for (int h = 0; h < j->nheads; h++) {
			float *x = j->x + r * (size_t)j->ld + (size_t)h * j->nm->n;
			// x (nm->n) -> the head's norm (RMSNorm), in place
			emb_norm_row(j->k, j->nm, x, x);
		}
}

void emb_head_norm_fwd(emb_model *m, float *x, int ld, int rows, int nheads,
                       const emb_norm *nm)
{
	hnorm_job j = { x, ld, nheads, nm, m->k };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, hnorm_task, &j);
}
