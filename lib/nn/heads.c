/*
 * heads.c - the classification and masked-LM heads over the encoder
 * output (cross-encoder logits, MLM logits, SPLADE weights).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"
/* ------------------------------------------------------------------ */
/* heads                                                               */

int emb_model_head(const emb_model *m) { return m->head; }
int emb_model_num_labels(const emb_model *m) { return m->num_labels; }

const char *emb_model_label(const emb_model *m, int i)
{
	return i >= 0 && i < m->num_labels ? m->labels[i] : NULL;
}

size_t emb_model_out_width(const emb_model *m, int kind)
{
	switch (kind) {
	case EMB_OUT_HIDDEN: return (size_t)m->hidden;
	case EMB_OUT_LOGITS: return (size_t)m->num_labels;
	case EMB_OUT_MLM:
	case EMB_OUT_SPLADE: return (size_t)m->vocab;
	default: return 0;
	}
}

static int head_ready(emb_model *m, int want, emb_err *err)
{
	static const char *const names[] = { "no", "sequence-classification",
	                                     "masked-LM" };

	if (m->head != want)
		return emb_err_set(err, "%s: architecture %s has %s head, not a %s "
		                   "head", m->dir, m->arch, names[m->head],
		                   names[want]);
	if (m->head_state == 0) {
		if (!m->fam->head)
			emb_err_set(&m->head_err, "%s: the %s head of %s is not "
			            "supported", m->dir, names[want], m->arch);
		m->head_state = m->fam->head && !m->fam->head(m, &m->head_err) ?
		                1 : -1;
	}
	if (m->head_state < 0) {
		if (err)
			*err = m->head_err;
		return -1;
	}
	return 0;
}

/* tokens per slice of the MLM head: bounds the (rows, vocab) scratch */
#define MLM_ROWS 64

typedef struct splade_job {
	float *out;             /* (vocab) of this sequence */
	const float *logits;    /* (rows, vocab) */
	int rows, vocab;
} splade_job;

static void splade_task(void *ctx, size_t begin, size_t end, int tid)
{
	const splade_job *j = ctx;

	(void)tid;
	for (size_t v = begin; v < end; v++) {
		float mx = j->out[v];
		for (int r = 0; r < j->rows; r++) {
			float x = j->logits[(size_t)r * j->vocab + v];
			float y = x > 0 ? log1pf(x) : 0.0f;
			if (y > mx)
				mx = y;
		}
		j->out[v] = mx;
	}
}

/* h (T,H) -> classifier logits out (nseq, labels) */
static int cls_forward(emb_model *m, float *out, const float *h,
                       const emb_batch *b, emb_err *err)
{
	const emb_head_cls *c = &m->cls;
	size_t H = (size_t)m->hidden, n = (size_t)b->nseq;
	size_t P = c->pre.in ? (size_t)c->pre.out : H;
	float *x, *p;

	if (!(x = emb_model_scratch(m, n * (H + P), err)))
		return -1;
	p = x + n * H;
	// first token of every sequence -> x (n,H)
	for (size_t s = 0; s < n; s++)
		memcpy(x + s * H, h + (size_t)b->start[s] * H, H * sizeof(float));
	if (c->pre.in) {
		// x (n,H) @ Wpre (P,H)^T -> p (n,P); act
		emb_linear_fwd(m, p, (int)P, x, (int)H, (int)n, &c->pre);
		emb_act_fwd(m, p, (int)n, (int)P, c->pre_act);
	} else {
		p = x;
	}
	// p (n,P) @ Wout (labels,P)^T -> out (n,labels)
	emb_linear_fwd(m, out, m->num_labels, p, (int)P, (int)n, &c->out);
	return 0;
}

/* h (T,H) -> per-token logits out (T,V) (kind MLM) or per-sequence
 * max log(1 + relu(logits)) out (nseq,V) (kind SPLADE) */
static int mlm_forward(emb_model *m, float *out, int kind, const float *h,
                       const emb_batch *b, emb_err *err)
{
	const emb_head_mlm *c = &m->mlm;
	size_t H = (size_t)m->hidden, V = (size_t)m->vocab;
	float *t, *lg;

	if (!(t = emb_model_scratch(m, MLM_ROWS * (H + V), err)))
		return -1;
	lg = t + MLM_ROWS * H;
	if (kind == EMB_OUT_SPLADE)
		memset(out, 0, (size_t)b->nseq * V * sizeof(float));
	for (int s = 0; s < b->nseq; s++) {
		for (int r0 = b->start[s]; r0 < b->start[s + 1]; r0 += MLM_ROWS) {
			int rows = b->start[s + 1] - r0 < MLM_ROWS ?
			           b->start[s + 1] - r0 : MLM_ROWS;
			float *y = kind == EMB_OUT_MLM ? out + (size_t)r0 * V : lg;
			const float *x = h + (size_t)r0 * H;
			if (c->transform.in) {
				// act(x (rows,H) @ Wt (H,H)^T) -> t (rows,H); LN
				emb_linear_act_fwd(m, t, (int)H, x, (int)H, rows,
				                   &c->transform, c->act);
				x = t;
			}
			if (c->ln.n) {
				emb_norm_fwd(m, t, x, NULL, rows, &c->ln);
				x = t;
			}
			// x (rows,H) @ Wdec (V,H)^T -> y (rows,V)
			emb_linear_fwd(m, y, (int)V, x, (int)H, rows, &c->decoder);
			if (kind == EMB_OUT_SPLADE) {
				splade_job j = { out + (size_t)s * V, lg, rows, (int)V };
				emb_threads_for(m->tp, V, 1024, splade_task, &j);
			}
		}
	}
	return 0;
}

int emb_model_head_load(emb_model *m, int kind, emb_err *err)
{
	if (kind == EMB_OUT_HIDDEN)
		return 0;
	if (kind != EMB_OUT_LOGITS && kind != EMB_OUT_MLM &&
	    kind != EMB_OUT_SPLADE)
		return emb_err_set(err, "unknown output kind %d", kind);
	return head_ready(m, kind == EMB_OUT_LOGITS ? EMB_HEAD_CLASSIFIER :
	                  EMB_HEAD_MLM, err);
}

int emb_model_forward_head_budget(emb_model *m, float *out, int kind,
                                  const emb_seq *seqs, int nseq,
                                  size_t max_tokens, emb_err *err)
{
	size_t w = emb_model_out_width(m, kind);
	int s0 = 0;

	while (s0 < nseq) {
		size_t tok = 0, rows = 0;
		int s1 = s0;
		for (; s1 < nseq; s1++) {
			size_t len = seqs[s1].len > 0 ? (size_t)seqs[s1].len : 0;
			if (s1 > s0 && max_tokens && tok + len > max_tokens)
				break;
			tok += len;
		}
		if (emb_model_forward_head(m, out, kind, seqs + s0, s1 - s0,
		                           err) < 0)
			return -1;
		/* rows written: tokens for per-token kinds, else sequences */
		rows = kind == EMB_OUT_HIDDEN || kind == EMB_OUT_MLM ? tok
		                                                   : (size_t)(s1 - s0);
		out += rows * w;
		s0 = s1;
	}
	return 0;
}

int emb_model_forward_head(emb_model *m, float *out, int kind,
                           const emb_seq *seqs, int nseq, emb_err *err)
{
	emb_batch b;
	int *start;
	size_t total = 0;
	float *h;
	int rc;

	if (kind == EMB_OUT_HIDDEN)
		return emb_model_forward(m, out, seqs, nseq, err);
	if (kind != EMB_OUT_LOGITS && kind != EMB_OUT_MLM &&
	    kind != EMB_OUT_SPLADE)
		return emb_err_set(err, "unknown output kind %d", kind);
	if (head_ready(m, kind == EMB_OUT_LOGITS ? EMB_HEAD_CLASSIFIER :
	               EMB_HEAD_MLM, err))
		return -1;
	if (nseq <= 0)
		return nseq < 0 ? emb_err_set(err, "negative sequence count %d",
		                              nseq) : 0;
	for (int s = 0; s < nseq; s++) {
		if (seqs[s].len < 1 && kind == EMB_OUT_LOGITS)
			return emb_err_set(err, "sequence %d is empty", s);
		total += seqs[s].len > 0 ? (size_t)seqs[s].len : 0;
	}
	if (total > (size_t)INT32_MAX / 4 ||
	    total > SIZE_MAX / sizeof(float) / (size_t)m->hidden)
		return emb_err_set(err, "batch of %zu tokens is too large", total);
	if (!(h = malloc((total ? total : 1) * (size_t)m->hidden * sizeof(float))))
		return emb_err_set(err, "out of memory");
	if (!(start = malloc(((size_t)nseq + 1) * sizeof(int)))) {
		free(h);
		return emb_err_set(err, "out of memory");
	}
	start[0] = 0;
	for (int s = 0; s < nseq; s++)
		start[s + 1] = start[s] + (seqs[s].len > 0 ? seqs[s].len : 0);
	b = (emb_batch){ seqs, nseq, start, (int)total, 0 };
	rc = emb_model_forward(m, h, seqs, nseq, err);
	if (!rc && kind == EMB_OUT_LOGITS)
		rc = cls_forward(m, out, h, &b, err);
	else if (!rc)
		rc = mlm_forward(m, out, kind, h, &b, err);
	free(start);
	free(h);
	return rc;
}
