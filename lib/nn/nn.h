/*
 * nn/nn.h - the transformer engine: load a checkpoint, run the forward
 * and the heads.  Layer nn: includes base, kern and io.
 */
#ifndef EMB_NN_H
#define EMB_NN_H

#include <stdio.h>
#include "base/base.h"
#include "io/io.h"

/* ------------------------------------------------------------------ */
/* transformer model                                                   */

typedef struct emb_model emb_model;

/*
 * The precision mode of the linear layers (README "Precision modes"):
 * the one value that emb-encode's and emb-rerank's options, emb.h's
 * enum emb_precision and the loader share (nn/precision.c parses,
 * names and checks it; weights.c and layers.c read it).  All zero:
 * fp32.
 */
typedef struct emb_prec {
	unsigned char w8;       /* 1: quantize float linear weights to int8
	                           per row at load (W8: computed on the
	                           dequantized weights); I8 checkpoints are
	                           W8 anyway */
	unsigned char a8;       /* 1: int8 activations too (W8A8, u8 x s8);
	                           needs int8 weights (w8 or an I8
	                           checkpoint); 2: W8A8 with smoothing
	                           (SmoothQuant, alpha 0.5: each linear that
	                           reads a norm's output gets per-input-channel
	                           scales from the norm's gain and bias,
	                           migrated into the weights at load) */
	unsigned char bf16;     /* 1: linear layers in bf16 (weights rounded
	                           at load, activations in the GEMM, fp32
	                           sums; kern/bkernels.h); not with a8 */
} emb_prec;

/*
 * Parse one command-line option into *p: OPT "compute" with ARG fp32,
 * bf16, w8, w8a8 or w8a8-smooth (the whole mode), or the older spellings
 * OPT "weights" with ARG int8 (sets w8) and OPT "act" with int8 or
 * int8-smooth (sets a8).  0, or -1 with ERR naming the option and value.
 */
int emb_prec_parse(emb_prec *p, const char *opt, const char *arg,
                   emb_err *err);
/* *p from emb.h's enum emb_precision value V (0 fp32, 1 bf16, 2 W8,
 * 3 W8A8, 4 W8A8 smoothed; st/embed.c asserts the enum says the same);
 * 0, or -1 (ERR) when V is no such value */
int emb_prec_from_enum(emb_prec *p, int v, emb_err *err);
/* the exclusions, checked once for every entry point: 0, or -1 with ERR
 * saying which (bf16 with int8 activations) */
int emb_prec_check(const emb_prec *p, emb_err *err);
/* the mode's name as --compute spells it ("fp32", "w8a8-smooth", ...;
 * "bf16+w8" for bf16 over int8 weights); static */
const char *emb_prec_name(const emb_prec *p);

typedef struct emb_model_opts {
	int threads;            /* 0: all online cores */
	emb_prec prec;          /* the linear layers' precision (zero: fp32) */
} emb_model_opts;

/*
 * Load DIR/config.json and the weights (mmapped; converted/packed once).
 * Unknown architectures, missing tensors and shapes that disagree with
 * the config are errors naming the file and field.  *out: new, emb_model_free.
 */
int emb_model_load(emb_model **out, const char *dir,
                   const emb_model_opts *opts, emb_err *err);
/*
 * The tokens a sequence may have (emb_model_max_positions) for the
 * parsed config.json CFG (a json_t, borrowed) as its family reads it,
 * without weights: RoBERTa, XLM-R and MPNet positions start after
 * padding_idx.  -1 when the config names no supported family or is bad.
 */
struct json_t;
int emb_model_config_positions(const struct json_t *cfg);
void emb_model_free(emb_model *m);
int emb_model_hidden_size(const emb_model *m);
int emb_model_max_positions(const emb_model *m);  /* usable tokens/seq */
int emb_model_vocab_size(const emb_model *m);
int emb_model_type_vocab_size(const emb_model *m);
const char *emb_model_arch(const emb_model *m);    /* borrowed */

typedef struct emb_seq {
	const int32_t *ids;      /* borrowed */
	const int32_t *type_ids; /* borrowed; NULL means all 0 */
	int len;
} emb_seq;

/*
 * Forward NSEQ sequences of different lengths as one batch (no padding).
 * out: (sum of seqs[i].len, hidden) token embeddings, sequence after
 * sequence.  Ids out of range are an error naming the position.
 * Results do not depend on how sequences are batched or on threads.
 */
int emb_model_forward(emb_model *m, float *out, const emb_seq *seqs,
                      int nseq, emb_err *err);
/*
 * Check one sequence (length, input_ids and token_type_ids ranges)
 * without running it: the per-record errors emb_model_forward would give
 * ("input_ids[5] = 40000 is out of range (vocab_size 30522)"), so that a
 * caller can reject one record before batching it with others.
 * emb_model_forward is not reentrant: one call at a time per model.
 */
int emb_model_check(const emb_model *m, const emb_seq *seq, emb_err *err);
/*
 * y (rows, n) = x (rows, k) @ W (n, k)^T + b (n) with the model's float
 * GEMM on its threads, whatever its precision mode: for the modules
 * after pooling (sentence-transformers' Dense).  wp: W packed as
 * kern/kernels.h says (emb_pack_weights); b may be NULL.  Each row's
 * bits are those of one gemm call of the table emb_kernels_select
 * gives, whatever ROWS and the threads.  Not reentrant (the threads).
 */
void emb_model_matmul(emb_model *m, float *y, const float *x, int rows,
                      const float *wp, const float *b, int n, int k);
/*
 * With $EMB_PROFILE set (not empty) when M was loaded: one JSON line to F
 * (each after PREFIX) naming the kernel table and threads, then one per
 * kind of call the forwards made: {"what": "fp32", "bf16" or "int8" (a
 * linear layer of "in" -> "out" features) or "attention" ("in": head
 * dim, "out": heads), "calls", "rows" (tokens through it), "gflop"
 * (linear: 2 rows in out; attention: 4 head-dim flops per query and
 * allowed key per head), "thread_s" (wall seconds of a call split over
 * the pool times its threads, or a row block's own seconds in the
 * thread that ran it), "gflops_per_thread"} (gflop / thread_s, to read
 * against one core's FMA peak).  Returns the lines written (0 without
 * $EMB_PROFILE).  Not while a forward runs.
 */
int emb_model_profile(const emb_model *m, FILE *f, const char *prefix);
/* linear layers in all, with int8 weights, and running W8A8; *kernel
 * (borrowed): "vnni", "avxvnni", "avx2" or "scalar" (the int8 GEMM in use), or
 * NULL without W8A8; $EMB_ISA forces one (kern/kernels.h) */
void emb_model_quant_stats(const emb_model *m, int *linear, int *w8,
                           int *a8, const char **kernel);

/*
 * Heads.  The architecture in config.json names the head
 * (*ForSequenceClassification: a classifier over the first token, with
 * num_labels from id2label; *ForMaskedLM: the masked-LM head, decoder
 * tied to the word embeddings when the file has none).  Head weights are
 * read on the first emb_model_forward_head call that needs them.
 */
enum emb_head {
	EMB_HEAD_NONE = 0,
	EMB_HEAD_CLASSIFIER = 1,
	EMB_HEAD_MLM = 2,
};
/* what emb_model_forward_head writes */
enum emb_out {
	EMB_OUT_HIDDEN = 0,     /* (tokens, hidden): as emb_model_forward */
	EMB_OUT_LOGITS = 1,     /* classifier: (nseq, num_labels) */
	EMB_OUT_MLM = 2,        /* masked LM: (tokens, vocab) logits */
	EMB_OUT_SPLADE = 3,     /* masked LM: (nseq, vocab) SPLADE weights,
	                           max over tokens of log(1 + relu(logit)) */
};
int emb_model_head(const emb_model *m);         /* enum emb_head */
int emb_model_num_labels(const emb_model *m);   /* 0: no classifier */
/* id2label name of label i (borrowed), NULL when out of range */
const char *emb_model_label(const emb_model *m, int i);
/* floats per row of output KIND (rows: tokens or sequences, see enum) */
size_t emb_model_out_width(const emb_model *m, int kind);
/*
 * Forward NSEQ sequences (as emb_model_forward) through the head that
 * KIND needs; out: rows x emb_model_out_width(m, kind).  Error when the
 * model has no such head or its weights are missing.  Batching and
 * threads do not change results.
 */
int emb_model_forward_head(emb_model *m, float *out, int kind,
                           const emb_seq *seqs, int nseq, emb_err *err);
/* emb_model_forward_head over seqs [0, nseq) in consecutive slices of at
 * most MAX_TOKENS tokens (0: one slice; a longer sequence goes alone);
 * out as one call over all of them would write it */
int emb_model_forward_head_budget(emb_model *m, float *out, int kind,
                                  const emb_seq *seqs, int nseq,
                                  size_t max_tokens, emb_err *err);
/* read the head that KIND needs now (it is otherwise read on the first
 * forward that needs it), so that a checkpoint without it fails at load:
 * the error emb_model_forward_head would give */
int emb_model_head_load(emb_model *m, int kind, emb_err *err);

#endif /* EMB_NN_H */
