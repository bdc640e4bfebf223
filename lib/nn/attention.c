/*
 * attention.c - rotary position embeddings and multi-head attention
 * (per sequence and head, with K/V packed in per-thread scratch; GQA,
 * causal and sliding-window masks).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"
void emb_rope_inv_freq(float *inv, int dim, double base)
{
	for (int i = 0; i < dim / 2; i++) {
		float e = (float)(2 * i) / (float)dim;
		inv[i] = 1.0f / (float)pow(base, (double)e);
	}
}

/* cs (dim): position i's cos (dim/2 values) then sin (dim/2), of the
 * frequencies inv (dim/2) */
static void rope_cs(float *cs, const float *inv, int dim, int i)
{
	int half = dim / 2;

	for (int d = 0; d < half; d++) {
		float f = (float)i * inv[d];
		cs[d] = (float)cos((double)f);
		cs[half + d] = (float)sin((double)f);
	}
}

static int rope_dim_check(int dim, int head_dim, emb_err *err)
{
	if (dim < 2 || dim > 1024 || dim % 2 || dim > head_dim)
		return emb_err_set(err, "rotary dimension %d is not supported",
		                   dim);
	return 0;
}

typedef struct rope_tab_job {
	float *cs;
	const float *inv;
	int dim;
} rope_tab_job;

/* rows [begin, end) of the table: positions begin..end-1 */
static void rope_tab_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rope_tab_job *j = ctx;

	(void)tid;
	for (size_t i = begin; i < end; i++)
		rope_cs(j->cs + i * (size_t)j->dim, j->inv, j->dim, (int)i);
}

float *emb_rope_table(emb_model *m, const float *inv, int dim, int npos,
                      emb_err *err)
{
	rope_tab_job j = { NULL, inv, dim };

	if (rope_dim_check(dim, dim, err))
		return NULL;
	if (npos < 1)
		npos = 1;
	if (!(j.cs = malloc((size_t)npos * (size_t)dim * sizeof(float)))) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	// (npos, dim): cos then sin of every position's angles
	emb_threads_for(m->tp, (size_t)npos, 64, rope_tab_task, &j);
	return j.cs;
}

typedef struct rope_job {
	const emb_batch *b;
	const emb_rope *r;
} rope_job;

static void rope_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rope_job *j = ctx;
	const emb_rope *r = j->r;
	int half = r->dim / 2;
	float own[2 * 512];

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		int len = j->b->seqs[s].len;
		const float *inv = r->inv_freq;
		float dyn[512];
		if (r->inv_for_len) {   /* dynamic NTK: frequencies per length */
			r->inv_for_len(dyn, r, len);
			inv = dyn;
		}
		for (int i = 0; i < len; i++) {
			size_t row = (size_t)(j->b->start[s] + i);
			const float *cs = own;
			// cs (dim) = cos, sin of position i: the batch's table,
			// or computed here
			if (r->cs && !r->inv_for_len)
				cs = r->cs + (size_t)i * r->dim;
			else
				rope_cs(own, inv, r->dim, i);
			for (int t = 0; t < 2; t++) {
				float *x = t ? r->k : r->q;
				int ld = t ? r->ldk : r->ldq, nh = t ? r->kv_heads : r->heads;
				if (!x)
					continue;
				for (int h = 0; h < nh; h++) {
					float *v = x + row * (size_t)ld + (size_t)h * r->head_dim;
					for (int d = 0; d < half; d++) {
						float x1 = v[d], x2 = v[d + half];
						float c = cs[d], sn = cs[half + d];
						float a1 = x1 * c, b1 = x2 * sn;
						float a2 = x2 * c, b2 = x1 * sn;
						v[d] = a1 - b1;
						v[d + half] = a2 + b2;
					}
				}
			}
		}
	}
}

int emb_rope_fwd(emb_model *m, const emb_rope *r, const emb_batch *b,
                 emb_err *err)
{
	rope_job j = { b, r };

	if (rope_dim_check(r->dim, r->head_dim, err))
		return -1;
	emb_threads_for(m->tp, (size_t)b->nseq, 1, rope_task, &j);
	return 0;
}

/*
 * Attention per sequence and head, as two GEMMs over packed operands:
 * phase 1 packs K_h (keys as GEMM "weights": S = Q K^T) and V_h (V^T as
 * weights: ctx = P V) of every (sequence, kv head) once; phase 2 runs
 * (sequence, head, block of ATTN_QB queries) tasks: S (qb, keys) =
 * Q K^T, the exponentials of a softmax over each row's allowed keys
 * (others set to 0; the table's softmax: P not normalized), then
 * ctx = P V, each context row scaled by its 1 / sum after P V (one
 * multiply per context value, not a third pass over the scores).  Every
 * element's arithmetic is independent of the blocks
 * (keys outside a row's range contribute exact zeros), so batching and
 * threads do not change results.  Memory: O(tokens) + per thread
 * ATTN_QB x longest sequence.
 *
 * With at least 4 sequences per thread (and no $EMB_NO_FUSE) both phases
 * run as one job of per-sequence tasks instead: pack every kv head of the
 * sequence (16 rows at a time, in row order) into the thread's own K/V
 * buffer, then run all its query blocks while that buffer is in L2.  One
 * wait for the threads instead of two, no O(tokens) K/V buffer, and the
 * same arithmetic per element (bit-identical results).
 *
 * In the bf16 mode (prec.bf16) and the int8 activation modes, where the
 * kernel table says its bf16 GEMM outruns the fp32 one (bf16_attn; on
 * other CPUs fp32 attention is both faster and exact), both GEMMs are
 * the bf16 GEMM of the kernel table: K and V^T packed as
 * its weights (kern/bkernels.h, rounded once when packed), Q and P
 * rounded inside the kernel.  The softmax is the table's softmax_bf16
 * (its exponentials to 7.5e-5, well inside the bf16 rounding that
 * follows).  Scores and sums stay fp32.  The packed bf16 forms take no
 * more room than the fp32 ones and sit at the same offsets.
 */
#define ATTN_QB 32
#define ATTN_PACK 64    /* rows a phase-1 task packs (fp32), a multiple of 16 */
#define RUP16(x) (((size_t)(x) + 15) / 16 * 16)
#define RUP2(x) (((size_t)(x) + 1) / 2 * 2)

typedef struct attn_job {
	const emb_model *m;
	float *ctx;
	const emb_attn *a;
	const emb_batch *b;
	float *kv;              /* packed K and V of every (seq, kv head) */
	const size_t *kvoff;    /* (nseq) offset of seq's block in kv */
	const size_t *task0;    /* (nseq+1) first phase-2 task of each seq */
	const size_t *pack0;    /* (nseq+1) first fp32 phase-1 task of each */
	float *kvt;             /* fused: per thread, one sequence's K and V */
	size_t kvt_each;        /* floats */
	int bf16;               /* K, V and both GEMMs in bf16 */
} attn_job;

/* $EMB_PROFILE: a task of thread TID worked on attention since T0 */
static void prof_busy(const attn_job *j, int tid, double t0)
{
	if (j->m->prof)
		emb_prof_busy(j->m->prof, tid, "attention", j->a->head_dim,
		              j->a->heads, emb_prof_clock() - t0);
}

/* floats of packed K plus packed V of one kv head of a sequence of len */
static size_t kv_size(int len, int dh)
{
	return RUP16(len) * (size_t)dh + RUP16(dh) * (size_t)len;
}

/* bf16: uint16 elements of the packed K of one kv head (V^T follows) */
static size_t kb_size(int len, int dh)
{
	return RUP16(len) * RUP2(dh);
}

/* bf16: K and V^T of kv head h of sequence seq -> kvs, the sequence's
 * block (kv_size floats per head hold the packed form) */
static void pack_kv_bf16(const attn_job *j, int seq, int h, float *kvs)
{
	const emb_attn *a = j->a;
	int dh = a->head_dim, r0 = j->b->start[seq], len = j->b->seqs[seq].len;
	uint16_t *kb = (uint16_t *)(kvs + (size_t)h * kv_size(len, dh));
	const float *k = a->k + (size_t)r0 * a->ldk + (size_t)h * dh;
	const float *v = a->v + (size_t)r0 * a->ldv + (size_t)h * dh;

	// K (len,dh) as W (len,dh); V (len,dh) as W = V^T (dh,len)
	j->m->k->bf16_pack_rows(kb, k, a->ldk, len, dh);
	j->m->k->bf16_pack_cols(kb + kb_size(len, dh), v, a->ldv, dh, len);
}

static void pack_rows(const attn_job *j, int seq, int p0, int p1, float *kv);

/* phase 1: tasks (sequence, block of ATTN_PACK rows) in fp32, every kv
 * head of those rows in row order; (sequence, kv head) in bf16 */
static void pack_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	int kvh = j->a->kv_heads, seq = 0;
	double t0 = j->m->prof ? emb_prof_clock() : 0;

	for (size_t t = begin; t < end; t++) {
		if (j->bf16) {
			seq = (int)(t / (size_t)kvh);
			pack_kv_bf16(j, seq, (int)(t % (size_t)kvh),
			             j->kv + j->kvoff[seq]);
			continue;
		}
		while (t >= j->pack0[seq + 1])
			seq++;
		int p0 = (int)(t - j->pack0[seq]) * ATTN_PACK;
		int len = j->b->seqs[seq].len;
		pack_rows(j, seq, p0, p0 + ATTN_PACK < len ? p0 + ATTN_PACK : len,
		          j->kv + j->kvoff[seq]);
	}
	prof_busy(j, tid, t0);
}

/* allowed keys [*j0, *j1) of query i in a sequence of len */
static void key_range(const emb_attn *a, int i, int len, int *j0, int *j1)
{
	*j0 = 0;
	*j1 = len;
	if (a->window > 0) {
		*j0 = i - a->window + 1 > 0 ? i - a->window + 1 : 0;
		*j1 = i + a->window < len ? i + a->window : len;
	}
	if (a->causal && *j1 > i + 1)
		*j1 = i + 1;
}

/* bf16: s (m, kb1-kb0) @ V[kb0:kb1] (kb1-kb0, dh) -> c, vb the packed
 * V^T (dh, len) of the head: kb0 is even, so the keys from kb0 on start
 * at a pair of every panel */
static void pv_bf16(const attn_job *j, float *c, int ldc, const float *s,
                    int lds, const uint16_t *vb, int m, int kb0, int kb1,
                    int len)
{
	const emb_kernels *k = j->m->k;
	int dh = j->a->head_dim;
	size_t k2 = RUP2(len);

	if (kb0 == 0 && kb1 == len) {
		k->gemm_bf16(c, ldc, s, lds, vb, NULL, m, dh, len);
		return;
	}
	// one panel of 16 head dims at a time: pair kb0/2 of panel p/16
	for (int p = 0; p < dh; p += 16)
		k->gemm_bf16(c + p, ldc, s, lds, vb + (size_t)p * k2 +
		             (size_t)kb0 * 16, NULL, m, dh - p < 16 ? dh - p : 16,
		             kb1 - kb0);
}

/* x (n) *= f, eight at a time where it can (straight-line blocks the
 * compiler turns into vector multiplies; the same product either way) */
static void scale_row(float *x, float f, int n)
{
	int d = 0;

	for (; d + 8 <= n; d += 8) {
		float t[8];
		memcpy(t, x + d, sizeof(t));
		for (int e = 0; e < 8; e++)
			t[e] *= f;
		memcpy(x + d, t, sizeof(t));
	}
	for (; d < n; d++)
		x[d] *= f;
}

/* queries [i0, i0 + ATTN_QB) of head h of sequence seq (its kv head
 * packed); s: this thread's scratch */
static void attn_block(const attn_job *j, int seq, int h, int i0, float *s,
                       const float *kvs)
{
	const emb_attn *a = j->a;
	const emb_kernels *k = j->m->k;
	int dh = a->head_dim, ldc = a->ldc ? a->ldc : a->heads * a->head_dim;
	int len = j->b->seqs[seq].len, r0 = j->b->start[seq];
	int i1 = i0 + ATTN_QB < len ? i0 + ATTN_QB : len;
	int kh = h / (a->heads / a->kv_heads), kb0, kb1, lo, hi, lds;
	float inv[ATTN_QB];     /* 1 / sum of each row's exponentials */
	const float *kp = kvs + (size_t)kh * kv_size(len, dh);
	const float *vp = kp + RUP16(len) * (size_t)dh;
	const float *q = a->q + (size_t)(r0 + i0) * a->ldq + (size_t)h * dh;
	float *c = j->ctx + (size_t)(r0 + i0) * ldc + (size_t)h * dh;

	key_range(a, i0, len, &kb0, &lo);
	key_range(a, i1 - 1, len, &lo, &kb1);
	kb0 = kb0 / 16 * 16;
	lds = (int)RUP16(kb1 - kb0);
	// Q (i1-i0,dh) @ K[kb0:kb1] (kb1-kb0,dh)^T -> s (i1-i0, kb1-kb0)
	if (j->bf16)
		k->gemm_bf16(s, lds, q, a->ldq, (const uint16_t *)kp +
		             (size_t)kb0 * RUP2(dh), NULL, i1 - i0, kb1 - kb0, dh);
	else
		k->gemm(s, lds, q, a->ldq, kp + (size_t)kb0 * dh, NULL, i1 - i0,
		        kb1 - kb0, dh);
	// each run of rows [i, e) whose allowed keys [lo, hi) are the same
	// or move on by one key a row (d: windows away from the ends): the
	// softmax over those keys (a block of row stride lds + d), zeros
	// elsewhere
	for (int i = i0, e; i < i1; i = e) {
		float *row = s + (size_t)(i - i0) * lds, sc = a->scale;
		int lo2, hi2, d = 0;
		key_range(a, i, len, &lo, &hi);
		for (e = i + 1; e < i1; e++) {
			key_range(a, e, len, &lo2, &hi2);
			if (e == i + 1 && lo2 - lo == 1 && hi2 - hi == 1)
				d = 1;
			if (lo2 != lo + (e - i) * d || hi2 != hi + (e - i) * d)
				break;
		}
		if (a->relbias) {   /* scores * scale + bias[h][j - r] */
			for (int r = i; r < e; r++) {
				const float *rb = a->relbias +
				                  (size_t)h * (2 * a->rel_max - 1) +
				                  (a->rel_max - 1 - r);
				float *rr = row + (size_t)(r - i) * lds;
				int l = lo + (r - i) * d, u = hi + (r - i) * d;
				for (int jj = l; jj < u; jj++)
					rr[jj - kb0] = rr[jj - kb0] * a->scale + rb[jj];
			}
			sc = 1.0f;
		}
		(j->bf16 ? k->softmax_bf16 : k->softmax)(row + (lo - kb0), lds + d,
		                                         e - i, hi - lo, sc,
		                                         inv + (i - i0));
		for (int r = i; r < e; r++, row += lds) {
			int l = lo + (r - i) * d, u = hi + (r - i) * d;
			memset(row, 0, (size_t)(l - kb0) * sizeof(float));
			memset(row + (u - kb0), 0, (size_t)(kb1 - u) * sizeof(float));
		}
	}
	// (e V) rows -> ctx, then each scaled by its 1 / sum(e)
	if (j->bf16) {
		pv_bf16(j, c, ldc, s, lds, (const uint16_t *)kp +
		        kb_size(len, dh), i1 - i0, kb0, kb1, len);
	} else if (kb0 == 0 && kb1 == len) {
		// s (i1-i0, len) @ V (len, dh): the V^T panels are the packed
		// form of V^T (dh, len)
		k->gemm(c, ldc, s, lds, vp, NULL, i1 - i0, dh, len);
	} else {
		// s (i1-i0, kb1-kb0) @ V[kb0:kb1] (kb1-kb0, dh), one panel of
		// 16 head dims at a time
		for (int p = 0; p < dh; p += 16)
			k->gemm(c + p, ldc, s, lds, vp + (size_t)p * len +
			        (size_t)kb0 * 16, NULL, i1 - i0,
			        dh - p < 16 ? dh - p : 16, kb1 - kb0);
	}
	for (int i = 0; i < i1 - i0; i++)
		scale_row(c + (size_t)i * ldc, inv[i], dh);
}

/* phase 2: tasks (sequence, head, block of ATTN_QB queries) */
static void attn_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	float *s = j->m->tscratch + (size_t)tid * j->m->tscratch_each;
	int seq = 0;
	double t0 = j->m->prof ? emb_prof_clock() : 0;

	for (size_t t = begin; t < end; t++) {
		while (t >= j->task0[seq + 1])
			seq++;
		int len = j->b->seqs[seq].len;
		size_t nqb = (size_t)(len + ATTN_QB - 1) / ATTN_QB;
		attn_block(j, seq, (int)((t - j->task0[seq]) / nqb),
		           (int)((t - j->task0[seq]) % nqb) * ATTN_QB, s,
		           j->kv + j->kvoff[seq]);
	}
	prof_busy(j, tid, t0);
}

/* fp32: rows [p0, p1) (p0 a multiple of 16) of K and V^T of every kv
 * head of sequence seq into kv, the sequence's block: 16 rows at a time
 * across all heads (rows read in order; whole panel lines written) */
static void pack_rows(const attn_job *j, int seq, int p0, int p1, float *kv)
{
	const emb_attn *a = j->a;
	int dh = a->head_dim, r0 = j->b->start[seq], len = j->b->seqs[seq].len;
	size_t each = kv_size(len, dh);

	for (int p = p0; p < p1; p += 16) {
		int nr = p1 - p < 16 ? p1 - p : 16;
		const float *k = a->k + (size_t)(r0 + p) * a->ldk;
		// K rows [p, p+nr) of each head -> panel p/16 ([dh][16])
		for (int h = 0; h < a->kv_heads; h++)
			j->m->k->pack(kv + (size_t)h * each + (size_t)p * dh,
			              k + (size_t)h * dh, a->ldk, nr, dh);
	}
	for (int r = p0; r < p1; r++) {
		const float *v = a->v + (size_t)(r0 + r) * a->ldv;
		for (int h = 0; h < a->kv_heads; h++, v += dh) {
			float *vp = kv + (size_t)h * each + RUP16(len) * (size_t)dh +
			            (size_t)r * 16;
			// V row r -> row r of each [len][16] panel of V^T
			for (int p = 0; p < dh; p += 16, vp += (size_t)len * 16) {
				if (dh - p >= 16) {
					memcpy(vp, v + p, 16 * sizeof(float));
				} else {
					memcpy(vp, v + p, (size_t)(dh - p) * sizeof(float));
					memset(vp + dh - p, 0, (size_t)(16 - dh + p) *
					       sizeof(float));
				}
			}
		}
	}
}

/* K and V^T of every kv head of sequence seq into kv */
static void pack_seq(const attn_job *j, int seq, float *kv)
{
	if (j->bf16) {
		for (int h = 0; h < j->a->kv_heads; h++)
			pack_kv_bf16(j, seq, h, kv);
		return;
	}
	pack_rows(j, seq, 0, j->b->seqs[seq].len, kv);
}

/* both phases in one job: a task per sequence packs its K and V, then
 * runs every query block of every head over them (still in cache) */
static void attn_fused_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	const emb_attn *a = j->a;
	float *s = j->m->tscratch + (size_t)tid * j->m->tscratch_each;
	float *kv = j->kvt + (size_t)tid * j->kvt_each;
	double t0 = j->m->prof ? emb_prof_clock() : 0;

	for (size_t t = begin; t < end; t++) {
		int len = j->b->seqs[t].len;
		pack_seq(j, (int)t, kv);
		for (int h = 0; h < a->heads; h++)
			for (int i0 = 0; i0 < len; i0 += ATTN_QB)
				attn_block(j, (int)t, h, i0, s, kv);
	}
	prof_busy(j, tid, t0);
}

/* $EMB_PROFILE: one attention call over the batch took SEC
 * thread-seconds; its flops are those of the allowed (query, key)
 * pairs, Q K^T and P V, every head */
static void prof_attention(const emb_model *m, const emb_attn *a,
                           const emb_batch *b, double sec)
{
	double pairs = 0, rows = 0;

	for (int s = 0; s < b->nseq; s++) {
		int len = b->seqs[s].len, j0, j1;
		for (int i = 0; i < len; i++) {
			key_range(a, i, len, &j0, &j1);
			pairs += j1 - j0;
		}
		rows += len;
	}
	emb_prof_add(m->prof, 0, "attention", a->head_dim, a->heads, rows,
	             4.0 * pairs * a->head_dim * a->heads, sec);
}

int emb_attention_reserve(emb_model *m, int maxlen, emb_err *err)
{
	return emb_model_thread_scratch(m, ATTN_QB * RUP16(maxlen), err);
}

int emb_attention_bf16(const emb_model *m)
{
	return (m->prec.bf16 || m->prec.a8) && m->k->bf16_attn;
}

int emb_attention(emb_model *m, float *ctx, const emb_attn *a,
                  const emb_batch *b, emb_err *err)
{
	attn_job j = { m, ctx, a, b, NULL, NULL, NULL, NULL, NULL, 0,
	               emb_attention_bf16(m) };
	size_t *kvoff, *task0, *pack0, total = 0;
	size_t nt = (size_t)emb_threads_count(m->tp);
	double t0;
	int rc = -1, fused = !m->no_fuse && (size_t)b->nseq >= 4 * nt;

	if (a->kv_heads < 1 || a->heads % a->kv_heads || a->head_dim < 1)
		return emb_err_set(err, "attention: %d heads, %d kv heads",
		                   a->heads, a->kv_heads);
	if (j.bf16 && (!m->k->gemm_bf16 || !m->k->bf16_pack_rows ||
	               !m->k->bf16_pack_cols))
		return emb_err_set(err, "attention: the %s kernels have no bf16 "
		                   "GEMM", m->k->name);
	if (!(kvoff = malloc((size_t)(b->nseq + 1) * 3 * sizeof(size_t))))
		return emb_err_set(err, "out of memory");
	task0 = kvoff + b->nseq + 1;
	pack0 = task0 + b->nseq + 1;
	task0[0] = pack0[0] = 0;
	for (int s = 0; s < b->nseq; s++) {
		int len = b->seqs[s].len;
		kvoff[s] = total;
		total += kv_size(len, a->head_dim) * (size_t)a->kv_heads;
		task0[s + 1] = task0[s] + (size_t)a->heads *
		               (size_t)((len + ATTN_QB - 1) / ATTN_QB);
		pack0[s + 1] = pack0[s] + (size_t)((len + ATTN_PACK - 1) / ATTN_PACK);
	}
	if (fused) {
		/* a sequence's K and V at a time per thread, reused: L2-hot */
		size_t each = RUP16(kv_size(b->maxlen, a->head_dim) *
		                    (size_t)a->kv_heads), cap;
		if (each > m->kvt_each) {
			cap = m->kvt_len / sizeof(float);
			m->kvt_each = 0;
			if (each > SIZE_MAX / sizeof(float) / 2 / nt ||
			    emb_big_grow(&m->kvt, &cap, &m->kvt_len, each * nt)) {
				emb_err_set(err, "out of memory (attention scratch)");
				goto out;
			}
			m->kvt_each = each;
		}
		j.kvt = m->kvt;
		j.kvt_each = m->kvt_each;
	} else if (total > m->kv_cap) {   /* malloc'ed: tests free it */
		free(m->kv);
		m->kv_cap = 0;
		if (!(m->kv = aligned_alloc(64, RUP16(total) * sizeof(float)))) {
			emb_err_set(err, "out of memory (attention scratch)");
			goto out;
		}
		m->kv_cap = total;
	}
	if (ATTN_QB * RUP16(b->maxlen) > m->tscratch_each) {
		emb_err_set(err, "attention: thread scratch too small");
		goto out;
	}
	j.kv = m->kv;
	j.kvoff = kvoff;
	j.task0 = task0;
	j.pack0 = pack0;
	t0 = m->prof ? emb_prof_clock() : 0;
	/* one job (one wait for the threads instead of two) when the
	 * sequences are enough to keep every thread busy */
	if (fused) {
		emb_threads_for(m->tp, (size_t)b->nseq, 1, attn_fused_task, &j);
	} else {
		emb_threads_for(m->tp, j.bf16 ? (size_t)b->nseq * a->kv_heads :
		                pack0[b->nseq], 1, pack_task, &j);
		emb_threads_for(m->tp, task0[b->nseq], 1, attn_task, &j);
	}
	if (m->prof)
		prof_attention(m, a, b, (emb_prof_clock() - t0) * (double)nt);
	rc = 0;
out:
	free(kvoff);
	return rc;
}
