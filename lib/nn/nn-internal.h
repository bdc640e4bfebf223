/*
 * nn/nn-internal.h - the transformer engine's private interface: the
 * model object, the family (architecture) table and the
 * layer helpers every family's forward is built from.
 *
 * A family (arch_*.c) supplies an emb_family: parse its config.json
 * fields, map and check its tensors (emb_model_linear, emb_model_norm,
 * emb_model_table), and run its forward over an emb_batch with the shared
 * layers (emb_linear_fwd, emb_norm_fwd, emb_act_fwd, emb_attention...).
 */
#ifndef EMB_NN_INTERNAL_H
#define EMB_NN_INTERNAL_H

#include <jansson.h>
#include "base/base.h"
#include "base/threadpool.h"
#include "kern/kernels.h"
#include "kern/qkernels.h"
#include "io/io.h"
#include "nn/nn.h"

/* ------------------------------------------------------------------ */
/* weights                                                             */

typedef struct emb_linear {
	const float *wp;        /* W (out,in) packed (kernels.h); model-owned */
	const float *b;         /* (out) or NULL; model-owned */
	int in, out;
	/* W8A8 (model opened with act_int8): int8 weights, qkernels.h */
	const int8_t *wq;       /* packed; NULL: float only */
	const float *ws;        /* (out) row scales */
	const int32_t *wsum;    /* (out) row sums of the int8 weights */
	/* bf16 compute (model opened with compute_bf16): W packed as bf16
	 * (kern/bkernels.h), model-owned; then wp is NULL */
	const uint16_t *wb;
} emb_linear;

typedef struct emb_norm {
	const float *w;         /* (n) */
	const float *b;         /* (n) or NULL */
	int n;
	float eps;
	int rms;                /* RMSNorm: x / rms(x) * w (no mean, no b) */
} emb_norm;

enum emb_norm_kind {
	EMB_NORM_LN,            /* LayerNorm; no bias name: zero bias */
	EMB_NORM_RMS,           /* RMSNorm, w * x / rms */
	EMB_NORM_RMS1,          /* Gemma RMSNorm, (1 + w) * x / rms */
};

enum emb_act {
	EMB_ACT_NONE,
	EMB_ACT_GELU,           /* exact erf */
	EMB_ACT_GELU_TANH,      /* gelu_new, gelu_pytorch_tanh */
	EMB_ACT_RELU,
	EMB_ACT_TANH,
	EMB_ACT_SILU,           /* x * sigmoid(x) */
};

/* ------------------------------------------------------------------ */
/* heads (loaded on first use by the family's head hook)               */

/* sequence classification: out(act(pre(h[first token]))) */
typedef struct emb_head_cls {
	emb_linear pre;         /* pooler / pre_classifier; in == 0: none */
	int pre_act;            /* enum emb_act (tanh for BERT's pooler) */
	emb_linear out;         /* classifier (labels, hidden) */
} emb_head_cls;

/* masked LM: decoder(LN(act(transform(h)))) per token */
typedef struct emb_head_mlm {
	emb_linear transform;   /* (hidden, hidden); in == 0: none */
	int act;                /* enum emb_act */
	emb_norm ln;            /* n == 0: none */
	emb_linear decoder;     /* (vocab, hidden) with bias */
} emb_head_mlm;

/* ------------------------------------------------------------------ */
/* model                                                               */

typedef struct emb_batch {
	const emb_seq *seqs;
	int nseq;
	const int *start;       /* (nseq+1) first row of each sequence */
	int ntok;               /* rows in all */
	int maxlen;             /* longest sequence */
} emb_batch;

typedef struct emb_family {
	const char *name;               /* "bert" */
	const char *const *prefixes;    /* tried in order, e.g. "", "bert." */
	const char *probe;              /* tensor that selects the prefix */
	/* read the family's fields from config.json into m (and m->fam_data) */
	int (*config)(emb_model *m, const json_t *cfg, emb_err *err);
	/* look up, check and convert the weights (m->st is open) */
	int (*load)(emb_model *m, emb_err *err);
	/* out (b->ntok, hidden): ids already checked against the vocab */
	int (*forward)(emb_model *m, float *out, const emb_batch *b,
	               emb_err *err);
	void (*release)(emb_model *m);  /* may be NULL */
	/* optional: fill m->cls (m->head == EMB_HEAD_CLASSIFIER) or m->mlm
	 * (EMB_HEAD_MLM) from the checkpoint; called once, on first use */
	int (*head)(emb_model *m, emb_err *err);
} emb_family;

typedef struct emb_alloc emb_alloc;

struct emb_model {
	const emb_family *fam;
	char *arch;             /* config.json architectures[0] (or derived) */
	char *dir;
	emb_safetensors *st;
	const char *prefix;     /* borrowed from fam->prefixes */
	const emb_kernels *k;
	emb_threads *tp;

	/* common config (families fill these in their config hook) */
	int hidden, layers, heads, head_dim, inter;
	int vocab, type_vocab, max_pos;
	int usable_pos;         /* emb_model_max_positions() */
	float eps;
	int act;                /* enum emb_act */
	void *fam_data;         /* the family's own (freed by release) */

	/* head named by the architecture (emb_model_head) */
	int head;               /* enum emb_head */
	int head_state;         /* 0 not loaded, 1 loaded, -1 failed */
	emb_err head_err;       /* why loading the head failed */
	int num_labels;
	char **labels;          /* (num_labels) id2label names */
	emb_head_cls cls;
	emb_head_mlm mlm;

	/* scratch (grown per batch, kept; *_len: bytes mapped) */
	float *scratch;
	size_t scratch_cap, scratch_len;        /* floats, bytes */
	float *tscratch;        /* per thread: tscratch_each floats */
	size_t tscratch_each, tscratch_len;
	float *kv;              /* attention: packed K and V of a batch */
	size_t kv_cap;          /* floats */
	float *kvt;             /* attention, per thread: kvt_each floats */
	size_t kvt_each, kvt_len;
	float *rscratch;        /* per thread: rscratch_each floats (row
	                           blocks of emb_post_attn_fwd) */
	int no_fuse;            /* $EMB_NO_FUSE set at load: layers one by
	                           one, attention in two jobs (A/B timing;
	                           the same results) */
	size_t rscratch_each, rscratch_len;
	emb_alloc *allocs;      /* model-owned weight memory (chunks) */

	/* int8 (emb_model_opts weights_int8, act_int8; I8 checkpoints) */
	int w8_load, a8;
	int n_linear, n_w8, n_a8;  /* linear layers: all, int8 weights, W8A8 */
	emb_gemm_i8_fn gemm_i8;
	const char *i8_kernel;
	uint8_t *q8;            /* activation scratch: u8 rows, scales, zeros */
	size_t q8_cap;          /* bytes */
	int bf16;               /* emb_model_opts compute_bf16 */
};

/* ------------------------------------------------------------------ */
/* config.json helpers: messages "config.json: field 'X' ..."           */

/* integer field: def when absent and def >= 0, else required;
 * must be >= min */
/* config.json boolean KEY (default DEF when absent or null) */
int emb_cfg_bool(int *out, const json_t *cfg, const char *key, int def,
                 emb_err *err);
int emb_cfg_int(int *out, const json_t *cfg, const char *key, int def,
                int min, emb_err *err);
int emb_cfg_float(float *out, const json_t *cfg, const char *key,
                  double def, emb_err *err);
/* string field or def when absent (borrowed) */
int emb_cfg_str(const char **out, const json_t *cfg, const char *key,
                const char *def, emb_err *err);
/* hidden_act-style field -> enum emb_act (gelu, gelu_new, relu...) */
int emb_cfg_act(int *out, const json_t *cfg, const char *key,
                const char *def, emb_err *err);

/* ------------------------------------------------------------------ */
/* tensor helpers: the name is without prefix; "%d" formats allowed     */

/* zeroed buffer of n floats, 64-byte aligned, or NULL (borrowed: the
 * model owns it and frees it in emb_model_free) */
float *emb_model_alloc(emb_model *m, size_t n, emb_err *err);
/* find prefix+name (borrowed from m->st); NULL (and err "FILE: missing
 * tensor 'NAME'") when absent.  Checks a float dtype and SHAPE (ndim
 * dims) against config ("FILE: tensor 'X' has shape [a,b], config.json
 * says [c,d]").  LayerNorm.weight/.bias also match .gamma/.beta. */
const emb_tensor *emb_model_tensor(emb_model *m, const char *name, int ndim,
                                   const int64_t *shape, emb_err *err);
/* *out (borrowed): float32 data of a (rows,cols) or (rows) tensor (cols
 * 0): in place in the mmap when F32 and aligned, else widened into a
 * model-owned copy */
int emb_model_table(const float **out, emb_model *m, const char *name,
                    int64_t rows, int64_t cols, emb_err *err);
/*
 * A linear layer from NPARTS weight tensors stacked along the output
 * dimension (Q, K, V -> one QKV GEMM), each names[i] (outs[i], in), with
 * biases bnames[i] (bnames NULL: no bias).  Packed once here.
 */
int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, emb_err *err);
int emb_model_linear(emb_linear *out, emb_model *m, const char *wname,
                     const char *bname, int nout, int in, emb_err *err);
/* LayerNorm (bname non-NULL) or RMSNorm (bname NULL) */
int emb_model_norm(emb_norm *out, emb_model *m, const char *wname,
                   const char *bname, int n, float eps, emb_err *err);
/* kind: enum emb_norm_kind (bname may be NULL for a bias-free LayerNorm) */
int emb_model_norm_kind(emb_norm *out, emb_model *m, const char *wname,
                        const char *bname, int n, float eps, int kind,
                        emb_err *err);
void emb_rmsnorm_row(float *y, const float *x, const float *w, int n,
                     float eps);

/* ------------------------------------------------------------------ */
/* layers (parallel over the model's thread pool)                      */

/* scratch of n floats for this forward (borrowed; reused and overwritten
 * by the next call) */
float *emb_model_scratch(emb_model *m, size_t n, emb_err *err);
/* per-thread scratch of at least EACH floats for every pool thread
 * (m->tscratch, m->tscratch_each apart); 0 or -1 out of memory */
int emb_model_thread_scratch(emb_model *m, size_t each, emb_err *err);
/* grow the big buffer *p (cap floats, len bytes mapped) to at least n
 * floats (old contents dropped); 0 or -1 out of memory */
int emb_big_grow(float **p, size_t *cap, size_t *len, size_t n);
/* free every buffer weights.c handed out for m (weights, packed tables,
 * scratch) */
void emb_model_memory_release(emb_model *m);
/* the per-thread attention scratch for sequences up to maxlen tokens,
 * reserved before the layers run (attention.c) */
int emb_attention_reserve(emb_model *m, int maxlen, emb_err *err);

/* y (rows, l->out) = x (rows, l->in) @ W^T + b; strides ldy, ldx */
void emb_linear_fwd(emb_model *m, float *y, int ldy, const float *x,
                    int ldx, int rows, const emb_linear *l);
/* y (rows, l->out) = act(x (rows, l->in) @ W^T + b) (EMB_ACT_*): the same
 * values as emb_linear_fwd then emb_act_fwd; gelu, gelu_tanh and relu are
 * fused into the GEMM epilogue (no second pass over y) */
void emb_linear_act_fwd(emb_model *m, float *y, int ldy, const float *x,
                        int ldx, int rows, const emb_linear *l, int act);
/* W8A8 only (l->wq and m->gemm_i8 set): y (rows, l->out) = act(x (rows,
 * l->in) @ W^T + b) (kact: EMB_KACT_*) in the calling thread (e.g. inside
 * a row-block task), bit for bit what emb_linear_act_fwd gives; scratch:
 * emb_linear_i8_scratch(l, rows) bytes, 4-byte aligned */
size_t emb_linear_i8_scratch(const emb_linear *l, int rows);
void emb_linear_i8_rows(const emb_model *m, float *y, int ldy,
                        const float *x, int ldx, int rows,
                        const emb_linear *l, int kact, uint8_t *scratch);
/* y (rows, n) = LayerNorm(x (rows, n) [+ res (rows, n)]); res may be NULL;
 * y may be x or res */
void emb_norm_fwd(emb_model *m, float *y, const float *x, const float *res,
                  int rows, const emb_norm *nm);
/* x (rows, cols) in place */
void emb_act_fwd(emb_model *m, float *x, int rows, int cols, int act);
/* y (rows, n) = act(first half) * second half of x (rows, 2n), or
 * first * act(second) when act_first is 0 */
void emb_glu_fwd(emb_model *m, float *y, const float *x, int rows, int n,
                 int act, int act_first);
/* the post-attention half of a post-LN layer (BERT):
 * h = LN2(h1 + down(act(up(h1)))) with h1 = LN1(h + o(ctx)) */
typedef struct emb_post_attn {
	const emb_linear *o, *up, *down;
	const emb_norm *ln1, *ln2;
	int act;                /* enum emb_act */
} emb_post_attn;
/* floats of mid emb_post_attn_fwd needs for rows (0: it may be NULL) */
size_t emb_post_attn_scratch(const emb_model *m, int rows,
                             const emb_post_attn *p);
/* h (rows, H) in place from ctx (rows, o->in); tmp (rows, H) and mid
 * (emb_post_attn_scratch floats) are scratch.  Row blocks in parallel
 * when the batch is large (bit-identical to the layers one by one).
 * -1 only when out of memory. */
int emb_post_attn_fwd(emb_model *m, float *h, const float *ctx, float *tmp,
                      float *mid, int rows, const emb_post_attn *p,
                      emb_err *err);
/* RMSNorm of each of nheads heads (nm->n wide) of rows at stride ld */
void emb_head_norm_fwd(emb_model *m, float *x, int ld, int rows, int nheads,
                       const emb_norm *nm);

/* rotary position embeddings, NeoX layout (rotate_half), positions
 * 0..len-1 of each sequence, on the first dim values of every head */
typedef struct emb_rope {
	float *q, *k;           /* k may be NULL */
	int ldq, ldk, heads, kv_heads, head_dim, dim;
	const float *inv_freq;  /* (dim/2) */
	/* optional: inv (dim/2) for a sequence of len (dynamic NTK) */
	void (*inv_for_len)(float *inv, const struct emb_rope *r, int len);
	const void *ctx;        /* for inv_for_len */
} emb_rope;
/* inv[i] = 1 / base^(2i/dim) in float32, as torch computes it */
void emb_rope_inv_freq(float *inv, int dim, double base);
int emb_rope_fwd(emb_model *m, const emb_rope *r, const emb_batch *b,
                 emb_err *err);

typedef struct emb_attn {
	int heads, kv_heads, head_dim;
	const float *q, *k, *v; /* row r of head h: q + r*ld + h*head_dim */
	int ldq, ldk, ldv;
	float scale;            /* usually 1/sqrt(head_dim) */
	int causal;             /* keys j <= i only */
	int window;             /* > 0: keys with |i - j| < window only */
	/* optional relative position bias added to the scaled scores:
	 * relbias[h * (2 rel_max - 1) + (j - i + rel_max - 1)], rel_max >=
	 * the longest sequence */
	const float *relbias;
	int rel_max;
} emb_attn;
/* ctx (ntok, heads*head_dim): softmax(q k^T * scale) v per sequence and
 * head (query head h reads kv head h / (heads / kv_heads)); no
 * cross-sequence attention.  -1 only when out of memory. */
int emb_attention(emb_model *m, float *ctx, const emb_attn *a,
                  const emb_batch *b, emb_err *err);

/* ------------------------------------------------------------------ */
/* decoder-style families (decoder.c; arch_qwen3.c, arch_gemma3.c)     */

typedef struct emb_dec_layer {
	emb_linear qkv, o, gate_up, down;   /* gate_up: [gate | up] */
	emb_norm in_norm, post_attn, pre_ff, post_ff, q_norm, k_norm;
} emb_dec_layer;

typedef struct emb_decoder {
	int kv_heads, bias, causal;
	int sandwich;           /* Gemma: post-attention and pre/post-FF norms */
	int unit_norm;          /* Gemma: RMSNorm x * (1 + w) */
	float embed_scale;      /* 0: none */
	float theta, scale;     /* rope_theta; attention score scale */
	unsigned char *sliding; /* (layers) 1: local layer, or NULL */
	int window;             /* local layers: keys |i - j| < window */
	const float *embed;
	emb_norm norm;
	float inv_global[512], inv_local[512];
	emb_dec_layer *layer;
} emb_decoder;

/* common fields (hidden_size, heads, kv heads, head_dim, rope_theta...);
 * d (calloc'ed) becomes m->fam_data */
int emb_decoder_config(emb_model *m, const json_t *cfg, emb_decoder *d,
                       emb_err *err);
int emb_decoder_load(emb_model *m, emb_err *err);
int emb_decoder_forward(emb_model *m, float *out, const emb_batch *b,
                        emb_err *err);
void emb_decoder_release(emb_model *m);

#endif /* EMB_NN_INTERNAL_H */
