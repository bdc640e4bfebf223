/*
 * nn/nn-internal.h - the transformer engine's private interface: the
 * model object, the family (architecture) table and the
 * layer helpers every family's forward is built from.
 *
 * A family (arch_*.c) supplies an emb_family: its registration
 * (architectures, model types, tensor prefixes), a config.json reader
 * that fills the common fields and the layer description m->net
 * (emb_net: norm placement and kind, biases, FFN kind, positions, q/k
 * norms, GQA, causal, windows per layer, scales), the table of its
 * tensor names, and optionally its heads.  driver.c loads the tensors
 * and runs the one forward from that description with the shared
 * layers (emb_linear_fwd, emb_norm_fwd, emb_attention...).
 */
#ifndef EMB_NN_INTERNAL_H
#define EMB_NN_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include "base/base.h"
#include "base/bigmem.h"  /* emb_big_grow: the scratch buffers */
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
	/* W8A8 (model opened with prec.a8): int8 weights, qkernels.h */
	const int8_t *wq;       /* packed; NULL: float only */
	const float *ws;        /* (out) row scales */
	const int32_t *wsum;    /* (out) row sums of the int8 weights */
	/* W8A8 smoothing (prec.a8 2): (in) activation column scales 1/s_j;
	 * the int8 weights are of W[:, j] * s_j; NULL: none */
	const float *xcs;
	/* bf16 compute (model opened with prec.bf16): W packed as bf16
	 * (kern/bkernels.h), model-owned; then wp is NULL */
	const uint16_t *wb;
} emb_linear;

/* the arithmetic of one linear layer, as loading decided it from the
 * precision mode (weights.c): int8 activations when it has int8 weights
 * packed for them; else bf16 when wb is set; else fp32 over wp */
static inline int emb_linear_is_i8(const emb_linear *l)
{
	return l->wq != NULL;
}

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

/* config.json "model_type" (when there is no "architectures") and the
 * architecture it stands for */
typedef struct emb_model_type {
	const char *type, *arch;
} emb_model_type;

/* registration lists inside an emb_family initializer:
 * .archs = EMB_LIST("BertModel", ...), .types = EMB_TYPES({ "bert",
 * "BertModel" }, ...), .prefixes = EMB_LIST("", "bert.") */
#define EMB_LIST(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define EMB_TYPES(...) ((const emb_model_type[]){ __VA_ARGS__, { NULL, NULL } })

/*
 * A family: its registration (the architectures and model types it
 * runs), its config.json reader (common fields and the layer
 * description m->net) and the tensor names the driver loads from.
 */
typedef struct emb_family {
	const char *name;               /* "bert" */
	const char *const *archs;       /* NULL-terminated: "BertModel"... */
	const emb_model_type *types;    /* ends with { NULL }; may be NULL */
	const char *const *prefixes;    /* tried in order, e.g. "", "bert." */
	const char *probe;              /* tensor that selects the prefix */
	/* read the family's fields from config.json into m and m->net
	 * (m->fam_data: the family's own, freed with the model) */
	int (*config)(emb_model *m, const json_t *cfg, emb_err *err);
	const struct emb_net_names *names;  /* tensors (driver.c) */
	/* optional: fill m->cls (m->head == EMB_HEAD_CLASSIFIER) or m->mlm
	 * (EMB_HEAD_MLM) from the checkpoint; called once, on first use */
	int (*head)(emb_model *m, emb_err *err);
} emb_family;

/* ------------------------------------------------------------------ */
/* the layer description one driver runs for every family (driver.c)   */

enum emb_place {
	EMB_PLACE_POST,         /* h = attn_norm(h + attn(h));
	                           h = ffn_norm(h + ffn(h))  (BERT) */
	EMB_PLACE_PRE,          /* h = h + [post_attn](attn(attn_norm(h)));
	                           h = h + [post_ffn](ffn(ffn_norm(h)));
	                           with post_attn/post_ffn: sandwich (Gemma) */
};

enum emb_ffn {
	EMB_FFN_MLP,            /* down(act(up x)) */
	EMB_FFN_GLU,            /* down(act(a) * b), [a | b] = up x */
	EMB_FFN_GLU2,           /* down(a * act(b)), [a | b] = up x (nomic) */
};

enum emb_pos {
	EMB_POS_NONE,
	EMB_POS_TABLE,          /* absolute table (net.pad: RoBERTa offset) */
	EMB_POS_ROPE,           /* rotary, per layer global/local theta */
};

/* one layer's weights and attention shape (n == 0 / in == 0: absent) */
typedef struct emb_layer {
	emb_linear qkv, o, up, down;    /* qkv: [Q | K | V]; up: (I or 2I, H) */
	emb_norm attn_norm, ffn_norm;   /* placement: enum emb_place */
	emb_norm post_attn, post_ffn;   /* pre-norm: on the branch (sandwich) */
	emb_norm q_norm, k_norm;        /* per head, before RoPE */
	int window;             /* > 0: keys |i - j| < window only */
	int local;              /* RoPE: net.inv_local, else inv_global */
} emb_layer;

/*
 * The tensors a family's checkpoint names, without prefix; NULL: none.
 * Linear and norm names are stems ("attention.self.query"): ".weight"
 * and ".bias" are appended.  Layer names follow layer ("encoder.layer.%d.").
 */
typedef struct emb_net_names {
	const char *word, *type, *pos;  /* embedding tables (".weight" full) */
	const char *emb_norm, *final_norm;
	const char *relbias;    /* MPNet: (buckets, heads) table */
	const char *layer;
	const char *q, *k, *v;  /* k NULL: q names the fused QKV */
	const char *o;
	const char *up, *up2;   /* up2: the second half, stacked [up | up2] */
	const char *down;
	const char *attn_norm, *ffn_norm, *post_attn, *post_ffn;
	const char *q_norm, *k_norm;
	int down_first;         /* load down before up (the tensor a shape
	                           message names first) */
} emb_net_names;

struct emb_rope;

typedef struct emb_net {
	int place;              /* enum emb_place */
	int ffn;                /* enum emb_ffn (activation: m->act) */
	int pos;                /* enum emb_pos */
	int kv_heads;           /* GQA: query head h reads kv head
	                           h / (heads / kv_heads) */
	int causal;
	int norm_kind;          /* enum emb_norm_kind, every norm */
	int norm_bias;          /* LayerNorms have .bias tensors */
	int bias_qkv, bias_o, bias_up, bias_down;
	int no_norm0;           /* layer 0 has no attn_norm (ModernBERT) */
	int pad;                /* TABLE: >= 0, positions from padding_idx */
	int buckets;            /* > 0: MPNet relative position buckets */
	float scale;            /* attention score scale */
	float embed_scale;      /* 0: none, else word rows times it */
	float inv_global[512], inv_local[512];  /* RoPE frequencies */
	/* optional RoPE frequencies for a sequence of len (dynamic NTK) */
	void (*inv_for_len)(float *inv, const struct emb_rope *r, int len);
	const void *rope_ctx;
	/* loaded */
	const float *word, *type, *pos_table, *relw;
	emb_norm emb_norm, final_norm;
	emb_layer *layer;       /* (layers) */
} emb_net;

typedef struct emb_alloc emb_alloc;

struct emb_model {
	const emb_family *fam;
	char *arch;             /* config.json architectures[0] (or derived) */
	char *dir;
	emb_safetensors *st;
	/* the token-embedding table (vocab x hidden, most of a checkpoint):
	 * not checked at load but a row at a time, the first time an input
	 * uses it (emb_model_check); word_ok has a bit per row checked, set
	 * atomically (checking twice is harmless) */
	const emb_tensor *word_t;
	atomic_ullong *word_ok;
	const char *prefix;     /* borrowed from fam->prefixes */
	const emb_kernels *k;
	emb_threads *tp;

	/* common config (families fill these in their config hook) */
	int hidden, layers, heads, head_dim, inter;
	int vocab, type_vocab, max_pos;
	int usable_pos;         /* emb_model_max_positions() */
	float eps;
	int act;                /* enum emb_act */
	void *fam_data;         /* the family's own (freed with the model) */
	emb_net net;            /* the layer description (driver.c) */

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

	/* the precision mode (emb_model_opts prec); what it makes of each
	 * linear layer is in the layer's packed form (emb_linear_is_i8) */
	emb_prec prec;
	int n_linear, n_w8, n_a8;  /* linear layers: all, int8 weights, W8A8 */
	emb_gemm_i8_fn gemm_i8; /* the table's int8 GEMM (never NULL) */
	const char *i8_kernel;  /* its name, with int8 activations */
	uint8_t *q8;            /* activation scratch: u8 rows, scales, zeros */
	size_t q8_cap;          /* bytes */
	struct emb_prof *prof;  /* $EMB_PROFILE set at load: the time of each
	                           linear shape and of attention; else NULL */
};

/* ------------------------------------------------------------------ */
/* $EMB_PROFILE (profile.c)                                             */

typedef struct emb_prof emb_prof;
/* tables for THREADS threads; new: emb_prof_free; NULL: out of memory */
emb_prof *emb_prof_new(int threads);
void emb_prof_free(emb_prof *p);
double emb_prof_clock(void);
/* one call of the key (WHAT, a static string; IN; OUT): ROWS rows, FLOP
 * operations, SEC thread-seconds, in thread TID's table */
void emb_prof_add(emb_prof *p, int tid, const char *what, int in, int out,
                  double rows, double flop, double sec);
/* SEC seconds of work on the key inside one task of thread TID (busy
 * time; the call itself is counted by emb_prof_add) */
void emb_prof_busy(emb_prof *p, int tid, const char *what, int in, int out,
                   double sec);

/* ------------------------------------------------------------------ */
/* config.json helpers: messages "config.json: field 'X' ..."           */

/* a name and the enum value it stands for (lookup tables) */
typedef struct emb_named {
	const char *name;
	int value;
} emb_named;

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
/* emb_model_table for the token-embedding table m->word_t, whose rows
 * are checked to be finite at first use (emb_model_word_row), not here;
 * any other use of that tensor (emb_model_tensor) checks all of it */
int emb_model_word_table(const float **out, emb_model *m, const char *name,
                         int64_t rows, int64_t cols, emb_err *err);
/* 0 when row ID of the embedding table is finite (checked once, then
 * remembered); -1 naming file, tensor, row and element */
int emb_model_word_row(const emb_model *m, int64_t id, emb_err *err);
/*
 * A linear layer from NPARTS weight tensors stacked along the output
 * dimension (Q, K, V -> one QKV GEMM), each names[i] (outs[i], in), with
 * biases bnames[i] (bnames NULL: no bias); FROM (borrowed, NULL: none):
 * the norm whose output it reads, for W8A8 smoothing.  Packed once here.
 */
int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, const emb_norm *from,
                         emb_err *err);
/*
 * The packed forms of W (n,k) that m->prec asks for (pack.c): out->wq,
 * ws, wsum, xcs (int8) and out->wp or out->wb.  W: a float copy (W8
 * rounds it in place; I8 checkpoints: FROM_I8 1), or NULL with WF the
 * mapped fp32 tensor (no int8 then); PSIZE: emb_pack_size(n, k); FROM:
 * the norm whose output the layer reads (W8A8 smoothing), or NULL.
 */
int emb_linear_make(emb_linear *out, emb_model *m, float *w, const float *wf,
                    int n, int k, size_t psize, int from_i8,
                    const emb_norm *from, emb_err *err);
/* emb_linear_make in the fp32 mode (no int8, no bf16) from NPARTS
 * mapped fp32 tensors WF[i] (outs[i], k) stacked along n, every part but
 * the last a whole number of EMB_PANEL rows: each part packed straight
 * into its panels, without a stacked copy (the same bytes) */
int emb_linear_make_parts(emb_linear *out, emb_model *m, int nparts,
                          const float *const *wf, const int *outs, int k,
                          size_t psize, emb_err *err);
/* SmoothQuant of W (n,k), which reads the output of norm NM (smooth.c):
 * W scaled in place, out->xcs new (model-owned) */
int emb_smooth_weights(emb_linear *out, emb_model *m, const emb_norm *nm,
                       float *w, int n, int k, emb_err *err);
int emb_model_linear(emb_linear *out, emb_model *m, const char *wname,
                     const char *bname, int nout, int in, emb_err *err);
/* LayerNorm (bname non-NULL) or RMSNorm (bname NULL) */
int emb_model_norm(emb_norm *out, emb_model *m, const char *wname,
                   const char *bname, int n, float eps, emb_err *err);
/* kind: enum emb_norm_kind (bname may be NULL for a bias-free LayerNorm) */
int emb_model_norm_kind(emb_norm *out, emb_model *m, const char *wname,
                        const char *bname, int n, float eps, int kind,
                        emb_err *err);
/* y (nm->n) = the norm NM of x (nm->n), one row, y may be x: the one
 * place that picks the kernel for a norm (RMSNorm or LayerNorm, from
 * the kernel table K) */
static inline void emb_norm_row(const emb_kernels *k, const emb_norm *nm,
                                float *y, const float *x)
{
	if (nm->rms)
		k->rmsnorm(y, x, nm->w, nm->n, nm->eps);
	else
		k->layernorm(y, x, nm->w, nm->b, nm->n, nm->eps);
}

/* ------------------------------------------------------------------ */
/* layers (parallel over the model's thread pool)                      */

/* scratch of n floats for this forward (borrowed; reused and overwritten
 * by the next call) */
float *emb_model_scratch(emb_model *m, size_t n, emb_err *err);
/* per-thread scratch of at least EACH floats for every pool thread
 * (m->tscratch, m->tscratch_each apart); 0 or -1 out of memory */
int emb_model_thread_scratch(emb_model *m, size_t each, emb_err *err);
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
/* W8A8 only (emb_linear_is_i8): y (rows, l->out) = act(x (rows,
 * l->in) @ W^T + b) (kact: EMB_KACT_*) in the calling thread (e.g. inside
 * a row-block task), bit for bit what emb_linear_act_fwd gives; scratch:
 * emb_linear_i8_scratch(l, rows) bytes, 4-byte aligned */
size_t emb_linear_i8_scratch(const emb_linear *l, int rows);
/* the model's int8 scratch (m->q8) grown for a W8A8 layer of IN inputs
 * at the model's thread count, so that its forward never needs more; 0
 * or -1 (out of memory) */
int emb_linear_i8_reserve(emb_model *m, int in, emb_err *err);
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
/*
 * The post-attention half of a layer (every family):
 *   post-norm: h = ffn_norm(h1 + ffn(h1)), h1 = attn_norm(h + o(ctx))
 *   pre-norm:  h1 = h + [post_attn](o(ctx));
 *              h = h1 + [post_ffn](ffn(ffn_norm(h1)))
 * then out = next(h) when next is set (the next layer's pre-norm into
 * its QKV input, or the final norm with out == h); ffn per enum emb_ffn.
 */
typedef struct emb_post_attn {
	const emb_linear *o, *up, *down;    /* up: (I or 2I, H) */
	const emb_norm *attn_norm, *ffn_norm;
	const emb_norm *post_attn, *post_ffn;   /* pre-norm; n == 0: none */
	const emb_norm *next;   /* NULL: none */
	float *out;             /* (rows, H): next(h); may be h; borrowed */
	int place;              /* enum emb_place */
	int ffn;                /* enum emb_ffn */
	int act;                /* enum emb_act */
} emb_post_attn;
/* floats of mid emb_post_attn_fwd needs for rows (0: it may be NULL) */
size_t emb_post_attn_scratch(const emb_model *m, int rows,
                             const emb_post_attn *p);
/* h (rows, H) in place from ctx (rows, o->in; row stride ldc); tmp
 * (rows, H) and mid (emb_post_attn_scratch floats) are scratch (tmp may
 * be p->out).  Row
 * blocks in parallel when the batch is large (bit-identical to the
 * layers one by one; every linear kind: fp32, W8, W8A8, bf16).  -1 only
 * when out of memory. */
int emb_post_attn_fwd(emb_model *m, float *h, const float *ctx, int ldc,
                      float *tmp, float *mid, int rows,
                      const emb_post_attn *p, emb_err *err);
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
	/* optional, borrowed: (positions, dim) cos then sin of each
	 * position's angles (emb_rope_table of inv_freq); not read with
	 * inv_for_len */
	const float *cs;
} emb_rope;
/* inv[i] = 1 / base^(2i/dim) in float32, as torch computes it */
void emb_rope_inv_freq(float *inv, int dim, double base);
/* new (free()): the (npos, dim) table of emb_rope.cs for the frequencies
 * inv (dim/2), positions 0..npos-1, the bits emb_rope_fwd computes;
 * NULL with err set for a dim it does not support or out of memory */
float *emb_rope_table(emb_model *m, const float *inv, int dim, int npos,
                      emb_err *err);
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
	int ldc;                /* ctx's row stride; 0: heads * head_dim */
} emb_attn;
/* ctx (ntok, heads*head_dim, row stride ldc): softmax(q k^T * scale) v
 * per sequence and head (query head h reads kv head h / (heads /
 * kv_heads)); no cross-sequence attention.  ctx may be q itself (ldc ==
 * ldq): the queries of a (sequence, head, block) are read before the
 * block's context is written over them, and no other block reads them.
 * -1 only when out of memory. */
int emb_attention(emb_model *m, float *ctx, const emb_attn *a,
                  const emb_batch *b, emb_err *err);
/* 1 when emb_attention runs its GEMMs in bf16: the bf16 and the int8
 * activation modes over a kernel table with bf16_attn */
int emb_attention_bf16(const emb_model *m);

/* ------------------------------------------------------------------ */
/* the driver (driver.c)                                               */

/* m->net.layer for m->layers layers (zeroed); families call it from
 * their config hook once m->layers is known */
int emb_net_layers(emb_model *m, emb_err *err);
/* load m->net's tensors from m->fam->names (m->st is open) */
int emb_net_load(emb_model *m, emb_err *err);
/* out (b->ntok, hidden): ids already checked against the vocab */
int emb_net_forward(emb_model *m, float *out, const emb_batch *b,
                    emb_err *err);
/* free m->net.layer and m->fam_data */
void emb_net_release(emb_model *m);

/* the Hugging Face decoder's tensor names (Qwen3, Gemma 3), inside an
 * emb_net_names initializer; the family adds its FFN-side norms */
#define EMB_DECODER_NAMES \
	.word = "embed_tokens.weight", .final_norm = "norm", \
	.layer = "layers.%d.", .q = "self_attn.q_proj", .k = "self_attn.k_proj", \
	.v = "self_attn.v_proj", .o = "self_attn.o_proj", \
	.up = "mlp.gate_proj", .up2 = "mlp.up_proj", .down = "mlp.down_proj", \
	.attn_norm = "input_layernorm", .q_norm = "self_attn.q_norm", \
	.k_norm = "self_attn.k_norm"

/* config.json sizes common to every family, read in this order under
 * the family's names: hidden, layers, heads, intermediate (default
 * inter_def when >= 0), vocab_size */
int emb_cfg_dims(emb_model *m, const json_t *cfg, const char *hidden,
                 const char *layers, const char *heads, const char *inter,
                 int inter_def, emb_err *err);
/* m->head_dim = hidden / heads, "config.json: field 'HKEY' (%d) must be
 * a multiple of 'NKEY' (%d)" otherwise */
int emb_cfg_head_dim(emb_model *m, const char *hkey, const char *nkey,
                     emb_err *err);
/* KEY absent or null, else "config.json: field 'KEY'NOTE is not
 * supported (supported: null)" */
int emb_cfg_null(const json_t *cfg, const char *key, const char *note,
                 emb_err *err);
/* v > 0, else "config.json: field 'KEY' must be positive" */
int emb_cfg_positive(float v, const char *key, emb_err *err);
/* RoPE head size: even and at most 1024, else "config.json: PRE<head_dim>POST
 * must be even and at most 1024" */
int emb_cfg_rope_dim(const emb_model *m, const char *pre, const char *post,
                     emb_err *err);
/* the Hugging Face decoder fields (Qwen3, Gemma 3): sizes, kv heads,
 * head_dim, rms_norm_eps, rope_theta (m->net.inv_global),
 * attention_bias; pre-norm RMSNorm, gated FFN, RoPE */
int emb_cfg_decoder(emb_model *m, const json_t *cfg, emb_err *err);

#endif /* EMB_NN_INTERNAL_H */
