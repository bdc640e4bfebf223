/*
 * driver.c - the one forward every family runs: the layer description
 * (emb_net, nn-internal.h) filled by the family's config hook, its
 * tensors loaded from the family's name table, and the layer loop.
 *
 *   h = [emb_norm]((word[id] | word[id] * embed_scale) [+ type[tt]]
 *                  [+ pos[p]])
 *   per layer, post-norm (BERT, nomic):
 *     h = attn_norm(h + o(attention(qkv h)))
 *     h = ffn_norm(h + ffn(h))
 *   per layer, pre-norm (ModernBERT, Qwen3, Gemma 3):
 *     h = h + [post_attn](o(attention(qkv attn_norm(h))))
 *     h = h + [post_ffn](ffn(ffn_norm(h)))
 *   h = [final_norm](h)
 *
 * attention: optional per-head q/k norms, RoPE (global or local
 * frequencies per layer, optional per-length hook), GQA, causal or a
 * window per layer, an MPNet relative position bias; ffn: an MLP
 * down(act(up x)) or gated (act on the first or the second half).
 * Q, K and V are one stacked GEMM, so are a gated FFN's two halves.
 * Everything after attention (o, residuals, norms, the FFN, and the norm
 * that follows: the next layer's pre-norm or the final norm) is one call,
 * emb_post_attn_fwd (layers.c): row blocks on large batches, the layers
 * one by one otherwise or with $EMB_NO_FUSE, the same bits either way.
 * Layer 0's pre-norm runs in the embedding task, so with the fused norms
 * every pre-norm QKV GEMM reads x = attn_norm(h) as the step before left
 * it, without a pass of its own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn-internal.h"

/* ------------------------------------------------------------------ */
/* description and tensors                                             */

int emb_net_layers(emb_model *m, emb_err *err)
{
	free(m->net.layer);
	if (!(m->net.layer = calloc((size_t)m->layers, sizeof(emb_layer))))
		return emb_err_set(err, "out of memory");
	return 0;
}

void emb_net_release(emb_model *m)
{
	free(m->net.layer);
	m->net.layer = NULL;
	free(m->fam_data);
	m->fam_data = NULL;
}

typedef struct names_buf {
	char w[4][192], b[4][192];
} names_buf;

/* "PRE" STEM ".weight" into buf (NULL stem: NULL) */
static const char *nm(char *buf, const char *pre, const char *stem,
                      const char *suf)
{
	if (!stem)
		return NULL;
	snprintf(buf, 192, "%s%s.%s", pre, stem, suf);
	return buf;
}

/* a norm from STEM (absent: left zero) */
static int load_norm(emb_model *m, emb_norm *out, const char *pre,
                     const char *stem, int n, names_buf *nb, emb_err *err)
{
	const emb_net *d = &m->net;

	if (!stem)
		return 0;
	return emb_model_norm_kind(out, m, nm(nb->w[0], pre, stem, "weight"),
	                           d->norm_bias ? nm(nb->b[0], pre, stem, "bias")
	                           : NULL, n, m->eps, d->norm_kind, err);
}

/* a linear from up to three stems stacked along the output */
static int load_linear(emb_model *m, emb_linear *out, const char *pre,
                       int nparts, const char *const *stems, const int *outs,
                       int in, int bias, const emb_norm *from, names_buf *nb,
                       emb_err *err)
{
	const char *wn[3], *bn[3];

	for (int i = 0; i < nparts; i++) {
		wn[i] = nm(nb->w[i], pre, stems[i], "weight");
		bn[i] = nm(nb->b[i], pre, stems[i], "bias");
	}
	return emb_model_linear_cat(out, m, nparts, wn, bias ? bn : NULL, outs,
	                            in, from, err);
}

static int load_layer_norms(emb_model *m, int l, emb_layer *L,
                            const char *pre, names_buf *nb, emb_err *err)
{
	const emb_net_names *n = m->fam->names;
	const emb_net *d = &m->net;
	int H = m->hidden, dh = m->head_dim;

	return load_norm(m, &L->attn_norm, pre, l == 0 && d->no_norm0 ? NULL :
	                 n->attn_norm, H, nb, err) ||
	       load_norm(m, &L->ffn_norm, pre, n->ffn_norm, H, nb, err) ||
	       load_norm(m, &L->post_attn, pre, n->post_attn, H, nb, err) ||
	       load_norm(m, &L->post_ffn, pre, n->post_ffn, H, nb, err) ||
	       load_norm(m, &L->q_norm, pre, n->q_norm, dh, nb, err) ||
	       load_norm(m, &L->k_norm, pre, n->k_norm, dh, nb, err) ? -1 : 0;
}

/* the norm whose output layer l's QKV reads (W8A8 smoothing), NULL
 * without smoothing or such a norm: post-norm, the previous layer's
 * output norm (layer 0: the embedding norm); pre-norm, the layer's
 * attention norm (none at layer 0: the embedding norm) */
static const emb_norm *smooth_qkv(const emb_model *m, int l)
{
	const emb_net *d = &m->net;
	const emb_norm *nm;

	if (m->prec.a8 != 2)
		return NULL;
	if (d->place == EMB_PLACE_POST)
		nm = l ? &d->layer[l - 1].ffn_norm : &d->emb_norm;
	else
		nm = d->layer[l].attn_norm.n ? &d->layer[l].attn_norm :
		     l ? NULL : &d->emb_norm;
	return nm && nm->n ? nm : NULL;
}

static int load_layer(emb_model *m, int l, emb_layer *L, emb_err *err)
{
	const emb_net_names *n = m->fam->names;
	const emb_net *d = &m->net;
	int H = m->hidden, I = m->inter, dh = m->head_dim;
	int nq = m->heads * dh, nkv = d->kv_heads * dh;
	int gated = d->ffn != EMB_FFN_MLP;
	const char *qkv[3] = { n->q, n->k, n->v }, *up[2] = { n->up, n->up2 };
	const int qkv_outs[3] = { nq, nkv, nkv }, fused = nq + 2 * nkv;
	const int up_outs[2] = { I, I }, up_one = gated ? 2 * I : I;
	const int smooth = m->prec.a8 == 2;
	const emb_norm *up_from;
	names_buf nb;
	char pre[64];

	snprintf(pre, sizeof(pre), n->layer, l);
	/* W8A8 smoothing (smooth.c) reads the norm that feeds QKV and up:
	 * the norms first then */
	if (smooth && load_layer_norms(m, l, L, pre, &nb, err))
		return -1;
	up_from = d->place == EMB_PLACE_POST ? &L->attn_norm : &L->ffn_norm;
	if (!smooth || !up_from->n)
		up_from = NULL;
	return load_linear(m, &L->qkv, pre, n->k ? 3 : 1, qkv,
	                   n->k ? qkv_outs : &fused, H, d->bias_qkv,
	                   smooth_qkv(m, l), &nb, err) ||
	       load_linear(m, &L->o, pre, 1, &n->o, &H, nq, d->bias_o, NULL, &nb,
	                   err) ||
	       (n->down_first && load_linear(m, &L->down, pre, 1, &n->down, &H,
	                                     I, d->bias_down, NULL, &nb, err)) ||
	       load_linear(m, &L->up, pre, n->up2 ? 2 : 1, up,
	                   n->up2 ? up_outs : &up_one, H, d->bias_up, up_from,
	                   &nb, err) ||
	       (!n->down_first && load_linear(m, &L->down, pre, 1, &n->down, &H,
	                                      I, d->bias_down, NULL, &nb, err)) ||
	       (!smooth && load_layer_norms(m, l, L, pre, &nb, err)) ? -1 : 0;
}

int emb_net_load(emb_model *m, emb_err *err)
{
	const emb_net_names *n = m->fam->names;
	emb_net *d = &m->net;
	int H = m->hidden;
	names_buf nb;

	if (!d->layer && emb_net_layers(m, err))
		return -1;
	if (emb_model_word_table(&d->word, m, n->word, m->vocab, H, err) ||
	    (n->type && emb_model_table(&d->type, m, n->type, m->type_vocab, H,
	                                err)) ||
	    (n->pos && emb_model_table(&d->pos_table, m, n->pos, m->max_pos, H,
	                               err)) ||
	    load_norm(m, &d->emb_norm, "", n->emb_norm, H, &nb, err) ||
	    load_norm(m, &d->final_norm, "", n->final_norm, H, &nb, err))
		return -1;
	if (d->buckets && emb_model_table(&d->relw, m, n->relbias, d->buckets,
	                                  m->heads, err))
		return -1;
	for (int l = 0; l < m->layers; l++)
		if (load_layer(m, l, &d->layer[l], err))
			return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* embeddings                                                          */

typedef struct embed_job {
	const emb_model *m;
	float *h;
	const emb_batch *b;
	const emb_norm *next;   /* layer 0's pre-norm into x, or NULL */
	float *x;
} embed_job;

/* rows of sequences [begin, end) */
static void embed_task(void *ctx, size_t begin, size_t end, int tid)
{
	const embed_job *j = ctx;
	const emb_net *d = &j->m->net;
	const emb_kernels *k = j->m->k;
	int H = j->m->hidden;

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		const emb_seq *q = &j->b->seqs[s];
		int p = d->pad;         /* RoBERTa: pad + running count of non-pads */
		for (int i = 0; i < q->len; i++) {
			float *h = j->h + (size_t)(j->b->start[s] + i) * H;
			const float *e = d->word + (size_t)q->ids[i] * H, *src = h;
			int tt = q->type_ids ? q->type_ids[i] : 0;
			if (d->embed_scale) {
				for (int c = 0; c < H; c++)
					h[c] = e[c] * d->embed_scale;
			} else if (d->type || d->pos_table || !d->emb_norm.n) {
				memcpy(h, e, (size_t)H * sizeof(float));
			} else {
				src = e;        /* the norm reads the table row */
			}
			if (d->type)
				k->add(h, d->type + (size_t)tt * H, H);
			if (d->pos_table) {
				int pos = i;
				if (d->pad >= 0)
					pos = q->ids[i] == d->pad ? d->pad : ++p;
				k->add(h, d->pos_table + (size_t)pos * H, H);
			}
			if (d->emb_norm.n)
				emb_norm_row(k, &d->emb_norm, h, src);
			if (j->next) {
				const emb_norm *nm = j->next;
				float *x = j->x + (size_t)(j->b->start[s] + i) * H;
				emb_norm_row(k, nm, x, h);
			}
		}
	}
}

/*
 * MPNet's relative position bucket (T5 style, bidirectional) of key j
 * for query i, computed in float32 as transformers does
 */
static int rel_bucket(int rel, int buckets, int max_distance)
{
	int n = -rel, ret = 0, nb = buckets / 2, exact = nb / 2;

	if (n < 0)
		ret += nb;
	n = n < 0 ? -n : n;
	if (n < exact)
		return ret + n;
	float v = logf((float)n / (float)exact);
	v = v / (float)log((double)max_distance / exact);
	v = v * (float)(nb - exact);
	int large = exact + (int)v;
	return ret + (large < nb - 1 ? large : nb - 1);
}

/* (heads, 2 maxlen - 1): bias of relative position j - i per head */
static float *rel_bias(const emb_model *m, int maxlen, emb_err *err)
{
	const emb_net *d = &m->net;
	int R = 2 * maxlen - 1;
	float *t = malloc((size_t)R * (size_t)m->heads * sizeof(float));

	if (!t) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	for (int r = 0; r < R; r++) {
		int bk = rel_bucket(r - (maxlen - 1), d->buckets, 128);
		for (int h = 0; h < m->heads; h++)
			t[(size_t)h * R + r] = d->relw[(size_t)bk * m->heads + h];
	}
	return t;
}

/* cs[0], cs[1]: new, the RoPE tables (emb_rope_table) of the global and
 * the local frequencies for positions 0..maxlen-1, each only where a
 * layer uses it */
static int rope_tables(emb_model *m, float *cs[2], int maxlen, emb_err *err)
{
	const emb_net *d = &m->net;
	int used[2] = { 0, 0 };

	for (int l = 0; l < m->layers; l++)
		used[d->layer[l].local != 0] = 1;
	for (int i = 0; i < 2; i++)
		if (used[i] && !(cs[i] = emb_rope_table(m, i ? d->inv_local :
		                                        d->inv_global, m->head_dim,
		                                        maxlen, err)))
			return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* the layer loop                                                      */

/* the post-attention half of layer l (layers.c); next: the norm that
 * follows it (the next layer's pre-norm into x, the final norm in place
 * on h) or none */
static emb_post_attn post_of(const emb_model *m, int l, float *h, float *x)
{
	const emb_net *d = &m->net;
	const emb_layer *L = &d->layer[l];
	emb_post_attn p = { &L->o, &L->up, &L->down, &L->attn_norm,
	                    &L->ffn_norm, &L->post_attn, &L->post_ffn, NULL,
	                    NULL, d->place, d->ffn, m->act };

	if (l + 1 < m->layers && d->place == EMB_PLACE_PRE &&
	    d->layer[l + 1].attn_norm.n) {
		p.next = &d->layer[l + 1].attn_norm;
		p.out = x;
	} else if (l + 1 == m->layers && d->final_norm.n) {
		p.next = &d->final_norm;
		p.out = h;
	}
	return p;
}

int emb_net_forward(emb_model *m, float *out, const emb_batch *b,
                    emb_err *err)
{
	const emb_net *d = &m->net;
	size_t T = (size_t)b->ntok, H = (size_t)m->hidden, I = (size_t)m->inter;
	size_t nq = (size_t)m->heads * m->head_dim;
	size_t nkv = (size_t)d->kv_heads * m->head_dim, nqkv = nq + 2 * nkv;
	float *qkv, *x, *mid, *h = out, *relbias = NULL;
	float *rope_cs[2] = { NULL, NULL };     /* global, local */
	embed_job ej = { m, h, b, NULL, NULL };
	emb_post_attn pa;
	size_t nmid = 0, per = nqkv + H;
	int rc = -1, normed = 0;

	/* scratch: qkv (T,nqkv), x (T,H), mid: none for the row blocks, else
	 * (T,I) or (T,3I) gated.  The attention's context (T,nq) is written
	 * over Q, in qkv's first nq columns (emb_attention reads each block
	 * of queries before it writes that block's context), so long inputs
	 * hold no (T,nq) buffer of their own. */
	if (T > SIZE_MAX / (per + 3 * I) / sizeof(float))
		return emb_err_set(err, "batch of %zu tokens is too large", T);
	if (m->layers > 0) {
		pa = post_of(m, 0, h, NULL);
		nmid = emb_post_attn_scratch(m, (int)T, &pa);
	}
	if (!(qkv = emb_model_scratch(m, T * per + nmid, err)))
		return -1;
	x = qkv + T * nqkv;
	mid = x + T * H;

	if (d->buckets && !(relbias = rel_bias(m, b->maxlen, err)))
		return -1;
	/* the angles' cos and sin once a batch, not a layer and a sequence
	 * (the per-length frequencies of dynamic NTK: per sequence) */
	if (d->pos == EMB_POS_ROPE && !d->inv_for_len && rope_tables(m, rope_cs,
	                                                         b->maxlen, err))
		goto out;
	// h = the embeddings; x = layer 0's attn_norm(h) (pre-norm)
	if (!m->no_fuse && m->layers > 0 && d->place == EMB_PLACE_PRE &&
	    d->layer[0].attn_norm.n) {
		ej.next = &d->layer[0].attn_norm;
		ej.x = x;
		normed = 1;
	}
	emb_threads_for(m->tp, (size_t)b->nseq, 1, embed_task, &ej);
	for (int l = 0; l < m->layers; l++) {
		const emb_layer *L = &d->layer[l];
		emb_attn a = {
			.heads = m->heads, .kv_heads = d->kv_heads,
			.head_dim = m->head_dim,
			.q = qkv, .k = qkv + nq, .v = qkv + nq + nkv,
			.ldq = (int)nqkv, .ldk = (int)nqkv, .ldv = (int)nqkv,
			.scale = d->scale, .causal = d->causal, .window = L->window,
			.relbias = relbias, .rel_max = relbias ? b->maxlen : 0,
			.ldc = (int)nqkv,
		};
		emb_rope r = {
			.q = qkv, .k = qkv + nq, .ldq = (int)nqkv, .ldk = (int)nqkv,
			.heads = m->heads, .kv_heads = d->kv_heads,
			.head_dim = m->head_dim, .dim = m->head_dim,
			.inv_freq = L->local ? d->inv_local : d->inv_global,
			.inv_for_len = d->inv_for_len, .ctx = d->rope_ctx,
			.cs = rope_cs[L->local != 0],
		};
		const float *in = h;

		// x = attn_norm(h) (pre-norm; computed with the embeddings or
		// at the end of the layer before); qkv (T,nqkv) = in @ Wqkv^T
		if (d->place == EMB_PLACE_PRE && L->attn_norm.n) {
			if (!normed)
				emb_norm_fwd(m, x, h, NULL, (int)T, &L->attn_norm);
			in = x;
		}
		emb_linear_fwd(m, qkv, (int)nqkv, in, (int)H, (int)T, &L->qkv);
		// per-head q_norm, k_norm, then RoPE; the context (T,nq) over Q
		if (L->q_norm.n)
			emb_head_norm_fwd(m, qkv, (int)nqkv, (int)T, m->heads,
			                  &L->q_norm);
		if (L->k_norm.n)
			emb_head_norm_fwd(m, qkv + nq, (int)nqkv, (int)T, d->kv_heads,
			                  &L->k_norm);
		if ((d->pos == EMB_POS_ROPE && emb_rope_fwd(m, &r, b, err)) ||
		    emb_attention(m, qkv, &a, b, err))
			goto out;
		// h = the layer's output from the context (o, residuals, norms,
		// ffn), then the next norm: x = next attn_norm(h) or
		// h = final_norm(h)
		pa = post_of(m, l, h, x);
		if (emb_post_attn_fwd(m, h, qkv, (int)nqkv, x, nmid ? mid : NULL,
		                      (int)T, &pa, err))
			goto out;
		normed = pa.next != NULL;
	}
	if (d->final_norm.n && m->layers == 0)
		emb_norm_fwd(m, h, h, NULL, (int)T, &d->final_norm);
	rc = 0;
out:
	free(relbias);
	free(rope_cs[0]);
	free(rope_cs[1]);
	return rc;
}
