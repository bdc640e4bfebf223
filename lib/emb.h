/*
 * emb.h - the one public header of libemb.
 *
 * Everything cmd/emb-*.c may use is declared here.  Modules keep their
 * private helpers in lib/<module>-internal.h (never included by cmd/).
 *
 * Conventions (see README "Hacking"):
 *   - lifecycle: emb_x_init/_release for caller-owned structs,
 *     emb_x_load/_open + emb_x_free for opaque heap objects;
 *   - functions that can fail return 0 on success and -1 on failure and
 *     fill an emb_err with a one-line, lower-case message without a full
 *     stop, naming the file and field involved;
 *   - output arguments first, const inputs after;
 *   - ownership words in every prototype comment: "borrowed" (the caller
 *     must not free it; valid while its owner lives), "new" (caller frees
 *     with the named function), "stolen" (callee takes ownership).
 */
#ifndef EMB_H
#define EMB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EMB_VERSION "0.1.0"

/* ------------------------------------------------------------------ */
/* errors and exit codes                                               */

#define EMB_ERR_MAX 512
typedef struct emb_err {
	char msg[EMB_ERR_MAX];
} emb_err;

/* Format a one-line message into err (may be NULL). Always returns -1. */
int emb_err_set(emb_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

enum {
	EMB_EXIT_OK = 0,     /* every record produced an output record */
	EMB_EXIT_RECORD = 1, /* at least one record got a diagnostic */
	EMB_EXIT_USAGE = 2,  /* bad command line */
	EMB_EXIT_MODEL = 3,  /* model/tokenizer/manifest could not be loaded */
	EMB_EXIT_WRITE = 4,  /* writing stdout failed */
};

/* ------------------------------------------------------------------ */
/* model location                                                      */

/*
 * Resolve the argument of -m: an existing directory is used as is;
 * otherwise ORG/NAME[@REVISION] is looked up in the local Hugging Face
 * cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub:
 * models--ORG--NAME/snapshots/<rev>, rev from refs/main or @REVISION).
 * *out: new string (free()).
 */
int emb_model_resolve(char **out, const char *arg, emb_err *err);

/* ------------------------------------------------------------------ */
/* safetensors (mmapped read-only)                                     */

typedef enum emb_dtype {
	EMB_DT_F32,
	EMB_DT_F16,
	EMB_DT_BF16,
	EMB_DT_F64,
	EMB_DT_I8,
	EMB_DT_U8,
	EMB_DT_I16,
	EMB_DT_I32,
	EMB_DT_I64,
	EMB_DT_BOOL,
	EMB_DT_COUNT
} emb_dtype;

#define EMB_MAX_DIMS 8

typedef struct emb_tensor {
	const char *name;               /* borrowed from the safetensors */
	emb_dtype dtype;
	int ndim;
	int64_t shape[EMB_MAX_DIMS];
	int64_t numel;
	const void *data;               /* borrowed: points into the mmap */
	size_t nbytes;
	const char *file;               /* borrowed: path of its file */
} emb_tensor;

typedef struct emb_safetensors emb_safetensors;

/* "F32" etc.; NULL for out of range */
const char *emb_dtype_name(emb_dtype dt);
size_t emb_dtype_size(emb_dtype dt);

/*
 * Open PATH: a .safetensors file, or a directory holding model.safetensors
 * or model.safetensors.index.json (sharded).  Every header field is
 * validated against the file size (offsets in range, ordered, no overlap,
 * nbytes == numel * dtype size, no overflow).  *out: new, emb_safetensors_free.
 */
int emb_safetensors_open(emb_safetensors **out, const char *path, emb_err *err);
void emb_safetensors_free(emb_safetensors *st);
size_t emb_safetensors_count(const emb_safetensors *st);
/* i-th tensor in file order (borrowed) */
const emb_tensor *emb_safetensors_at(const emb_safetensors *st, size_t i);
/* by exact name; NULL when absent (borrowed) */
const emb_tensor *emb_safetensors_find(const emb_safetensors *st, const char *name);
/* __metadata__ value for key, or NULL (borrowed) */
const char *emb_safetensors_meta(const emb_safetensors *st, const char *key);
/* widen any float dtype to float32: out has t->numel elements */
int emb_tensor_to_f32(float *out, const emb_tensor *t, emb_err *err);
/* -1 (naming file, tensor and element) when a float tensor holds a NaN or
 * an infinity; 0 for finite ones and non-float dtypes */
int emb_tensor_check_finite(const emb_tensor *t, emb_err *err);
/* emb_tensor_check_finite on every tensor (models call it at load) */
int emb_safetensors_check_finite(const emb_safetensors *st, emb_err *err);

/* ------------------------------------------------------------------ */
/* sentence-transformers modules                                       */

enum emb_pool_mode {
	EMB_POOL_CLS = 1u << 0,
	EMB_POOL_MAX = 1u << 1,
	EMB_POOL_MEAN = 1u << 2,
	EMB_POOL_MEAN_SQRT_LEN = 1u << 3,
	EMB_POOL_WEIGHTED_MEAN = 1u << 4,
	EMB_POOL_LAST = 1u << 5,
};

typedef struct emb_prompt {
	char *name;
	char *text;
} emb_prompt;

/* a sentence-transformers Dense module: y = act(W x + b) */
typedef struct emb_dense {
	int in, out;            /* in_features, out_features */
	int tanh;               /* activation Tanh (else Identity) */
	float *w;               /* (out, in) row-major, linear.weight */
	float *b;               /* (out) linear.bias, or NULL */
} emb_dense;

typedef struct emb_st_config {
	/* 1_Pooling/config.json; 0 when the model has no Pooling module */
	unsigned pool_modes;    /* emb_pool_mode bits; output concatenated
	                           in the order of the enum (as ST does) */
	int pool_dim;           /* word_embedding_dimension, 0 if unknown */
	int include_prompt;     /* default 1 */
	int normalize;          /* a Normalize module is in modules.json */
	emb_dense *dense;       /* Dense modules after Pooling, in order */
	size_t n_dense;
	int max_seq_length;     /* sentence_bert_config.json, 0 if unset */
	int do_lower_case;      /* sentence_bert_config.json */
	emb_prompt *prompts;    /* config_sentence_transformers.json */
	size_t n_prompts;
	char *default_prompt_name; /* NULL if none */
} emb_st_config;

/* Read modules.json & co from DIR; missing files mean defaults. */
int emb_st_config_load(emb_st_config *out, const char *dir, emb_err *err);
/* Only what tokenizing needs (sentence_bert_config.json and
 * config_sentence_transformers.json): modules.json is not read, so
 * modules emb cannot run (Dense, ...) are no error here. */
int emb_st_config_load_text(emb_st_config *out, const char *dir,
                            emb_err *err);
void emb_st_config_release(emb_st_config *c);
/* prompt text by name (borrowed) or NULL */
const char *emb_st_config_prompt(const emb_st_config *c, const char *name);
/* "mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken";
 * also accepts ST names like "mean_tokens"; returns 0 when unknown */
unsigned emb_pool_mode_parse(const char *s);

/* ------------------------------------------------------------------ */
/* tokenizer                                                           */

typedef struct emb_tokenizer emb_tokenizer;

/*
 * Load DIR/tokenizer.json, or (when absent) DIR/vocab.txt with
 * DIR/tokenizer_config.json (BERT WordPiece).  Needs no weights.
 * *out: new, emb_tokenizer_free.  The loaded tokenizer is immutable and
 * emb_tokenize() may be called on it from several threads at once.
 */
int emb_tokenizer_load(emb_tokenizer **out, const char *dir, emb_err *err);
void emb_tokenizer_free(emb_tokenizer *tok);

typedef struct emb_encoding {
	int32_t *ids;
	int32_t *type_ids;
	int32_t *offsets;       /* 2*len: [start, end) in characters of
	                           the input (code points); -1,-1 for specials */
	uint8_t *special;       /* 1 for tokens added by the post-processor */
	size_t len, cap;
	size_t truncated;       /* tokens dropped by truncation */
} emb_encoding;

void emb_encoding_init(emb_encoding *enc);
void emb_encoding_release(emb_encoding *enc);

typedef struct emb_tok_opts {
	size_t max_length;      /* 0: no truncation; else total incl. specials */
	int no_special;         /* 1: do not add special tokens */
} emb_tok_opts;

/*
 * Tokenize TEXT (and the pair PAIR when non-NULL) into enc (reused,
 * overwritten).  Text must be valid UTF-8 (else error).  Truncation:
 * right side; longest_first for pairs.
 */
int emb_tokenize(emb_encoding *enc, const emb_tokenizer *tok,
                 const char *text, size_t len,
                 const char *pair, size_t pair_len,
                 const emb_tok_opts *opts, emb_err *err);
/* vocabulary string of id (borrowed), NULL when out of range */
const char *emb_tokenizer_id_to_token(const emb_tokenizer *tok, int32_t id);
/* id of an exact vocabulary/added token, -1 when absent */
int32_t emb_tokenizer_token_to_id(const emb_tokenizer *tok, const char *s);
size_t emb_tokenizer_vocab_size(const emb_tokenizer *tok);
/* number of special tokens the post-processor adds around one sequence
 * (e.g. 2 for [CLS] A [SEP]) or a pair (3 or 4) */
size_t emb_tokenizer_num_special(const emb_tokenizer *tok, int pair);

/* ------------------------------------------------------------------ */
/* transformer model                                                   */

typedef struct emb_model emb_model;

typedef struct emb_model_opts {
	int threads;            /* 0: all online cores */
	int weights_int8;       /* 1: quantize linear weights to int8 per row
	                           at load (W8: computed on the dequantized
	                           weights); I8 checkpoints are W8 anyway */
	int act_int8;           /* 1: int8 activations too (W8A8, u8 x s8
	                           with AVX-512 VNNI when present); needs int8
	                           weights (weights_int8 or an I8 checkpoint) */
} emb_model_opts;

/*
 * Load DIR/config.json and the weights (mmapped; converted/packed once).
 * Unknown architectures, missing tensors and shapes that disagree with
 * the config are errors naming the file and field.  *out: new, emb_model_free.
 */
int emb_model_load(emb_model **out, const char *dir,
                   const emb_model_opts *opts, emb_err *err);
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
/* linear layers in all, with int8 weights, and running W8A8; *kernel
 * (borrowed): "vnni", "avxvnni" or "scalar" (the int8 GEMM in use), or
 * NULL without W8A8; $EMB_I8 forces one */
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

/* ------------------------------------------------------------------ */
/* pooling                                                             */

/* width of the pooled vector for MODES over hidden size D */
int emb_pool_dim(unsigned modes, int d);
/*
 * tok (n, d) -> out (emb_pool_dim(modes, d)).  The first SKIP rows take no
 * part in mean/max/weighted pooling (prompt tokens when include_prompt is
 * false); CLS is row 0 and last is row n-1 regardless.
 */
int emb_pool(float *out, const float *tok, int n, int d, unsigned modes,
             int skip, emb_err *err);
/* v /= max(||v||, 1e-12), as torch.nn.functional.normalize */
void emb_normalize(float *v, int d);

/* ------------------------------------------------------------------ */
/* synthetic checkpoints (../shared/SYNTHETIC.md, format "emb-synth-1") */

uint64_t emb_synth_fnv1a64(const char *s);
/* element i of tensor NAME under SEED, before dtype rounding */
float emb_synth_value(uint64_t seed, const char *name, uint64_t i,
                      float scale, float offset);
/*
 * Materialize recipe.json at RECIPE into directory OUTDIR (created):
 * copies the base model folder (recipe "base", relative to ROOT), writes
 * the "files" entries, then model.safetensors (and per-"file" shards such
 * as 2_Dense/model.safetensors) with tensors in recipe order.
 */
int emb_synth_materialize(const char *recipe, const char *root,
                          const char *outdir, emb_err *err);

/* ------------------------------------------------------------------ */
/* JSONL records (lib/jsonl.c)                                         */

typedef struct emb_reader emb_reader;

/* PATH NULL or "-" is stdin; lines longer than MAX_LINE bytes are
 * skipped (without being held in memory) and reported as errors.
 * *out: new, emb_reader_free. */
int emb_reader_open(emb_reader **out, const char *path, size_t max_line,
                    emb_err *err);
void emb_reader_free(emb_reader *r);
/* 1: a line in *line, *len (borrowed until the next call; no newline,
 * a trailing CR removed); 0: end of input; -1: this line is bad (too
 * long, NUL byte, read error: err says which) and was skipped. */
int emb_reader_next(emb_reader *r, const char **line, size_t *len,
                    emb_err *err);
const char *emb_reader_name(const emb_reader *r);  /* "<stdin>" or path */
size_t emb_reader_lineno(const emb_reader *r);     /* of the last line */
/* bytes of input consumed so far and total (0 if unknown): progress */
void emb_reader_progress(const emb_reader *r, uint64_t *done, uint64_t *total);
/* 1 when the next line can be had without waiting (input buffered, or
 * the descriptor readable: always for a regular file), 0 when the next
 * read would wait for the producer */
int emb_reader_pending(const emb_reader *r);

typedef struct emb_record emb_record;  /* one parsed JSON object line */

emb_record *emb_record_new(void);       /* new, emb_record_free */
void emb_record_free(emb_record *rec);
/* Parse LINE (copied) as one JSON object; invalid JSON or UTF-8 is an
 * error ("invalid JSON at column 12: ...", "invalid UTF-8 at column 3");
 * so is an empty or whitespace-only line ("empty line"), so that every
 * input line yields one output record or one diagnostic.  Nesting is
 * limited to 512 levels; a duplicate key: getters see the last one. */
int emb_record_parse(emb_record *rec, const char *line, size_t len,
                     emb_err *err);
/* --raw: the record {"text": LINE} (LINE must be valid UTF-8; an empty
 * line is the empty text) */
int emb_record_from_text(emb_record *rec, const char *line, size_t len,
                         emb_err *err);
int emb_record_has(const emb_record *rec, const char *key);
/* Field getters: "missing field 'KEY'", "field 'KEY' is not a string"...
 * *s borrowed from rec (unescaped, may hold NUL bytes: use *len). */
int emb_record_get_string(const emb_record *rec, const char *key,
                          const char **s, size_t *len, emb_err *err);
/* integer array; *v new (free()) */
int emb_record_get_int32s(const emb_record *rec, const char *key,
                          int32_t **v, size_t *n, emb_err *err);
/* float vector or matrix from KEY (JSON numbers: a flat array gives
 * rows=1; an array of arrays gives rows x cols, all rows equal length) or
 * KEY_b64 (string = base64 of little-endian float32, rows=1; array of
 * strings = one per row).  *v new (free()). */
int emb_record_get_floats(const emb_record *rec, const char *key,
                          float **v, size_t *rows, size_t *cols,
                          emb_err *err);
/* the raw JSON text of member KEY (borrowed) or NULL */
const char *emb_record_raw(const emb_record *rec, const char *key,
                           size_t *len);

/* growable output buffer for one record */
typedef struct emb_buf {
	char *p;
	size_t len, cap;
	/* private state of emb_out_begin..emb_out_end */
	const emb_record *rec;
	const char *const *drop;
	size_t obj, nnew;
	unsigned char *gone;
	size_t gone_cap;
} emb_buf;

void emb_buf_init(emb_buf *b);
void emb_buf_release(emb_buf *b);
void emb_buf_add(emb_buf *b, const char *s, size_t n);
/* shortest decimal that strtof() reads back as exactly v; writes at most
 * 16 bytes plus NUL; non-finite values are written as null */
size_t emb_fmt_f32(char *out, float v);

/* Output records: "{" + the members of REC (may be NULL) copied byte for
 * byte in input order, minus those named in DROP (NULL-terminated, may be
 * NULL) and minus any key later written by emb_out_* (writing KEY or
 * KEY_b64 replaces both forms); then new members in the order written;
 * emb_out_end closes with "}\n".  REC must outlive emb_out_end.  The
 * record is appended to b (b->len is not reset). */
void emb_out_begin(emb_buf *b, const emb_record *rec,
                   const char *const *drop);
void emb_out_int(emb_buf *b, const char *key, long long v);
void emb_out_string(emb_buf *b, const char *key, const char *s, size_t n);
void emb_out_json(emb_buf *b, const char *key, const char *json, size_t n);
void emb_out_int32s(emb_buf *b, const char *key, const int32_t *v, size_t n);
/* b64: write KEY_b64 instead of KEY */
void emb_out_floats(emb_buf *b, const char *key, const float *v, size_t n,
                    int b64);
void emb_out_matrix(emb_buf *b, const char *key, const float *v,
                    size_t rows, size_t cols, int b64);
/* an array of strings (e.g. "tokens") */
void emb_out_strings(emb_buf *b, const char *key, const char *const *v,
                     size_t n);
void emb_out_end(emb_buf *b);

/* ------------------------------------------------------------------ */
/* command driver (lib/cli.c): options and the read-transform-write    */
/* loop shared by every cmd/emb-*.c (declared by its author below)     */

enum {
	EMB_ARG_NONE = 0,
	EMB_ARG_REQUIRED = 1,   /* --name ARG, --name=ARG, -c ARG, -cARG */
	EMB_ARG_OPTIONAL = 2,   /* --name or --name=ARG only */
};

/* a command-specific option; the table ends with name == NULL */
typedef struct emb_cli_opt {
	const char *name;       /* long name without "--" */
	char shortname;         /* 0: none */
	int arg;                /* EMB_ARG_* */
	int key;                /* handed to the command's handler */
} emb_cli_opt;

/* common options a command accepts besides --help, --version,
 * --errors, --strict, --max-line, --progress, --no-progress */
enum {
	EMB_CLI_RAW = 1u << 0,   /* --raw */
	EMB_CLI_B64 = 1u << 1,   /* --b64 */
	EMB_CLI_MODEL = 1u << 2, /* -m/--model MODEL */
	EMB_CLI_TEXT = 1u << 3,  /* --max-length --no-truncate --prompt
	                            --prompt-name --no-prompt --tokens */
};

typedef struct emb_cli {
	/* set by the command before emb_cli_parse */
	const char *prog;       /* "emb-encode" */
	const char *usage;      /* --help text (the whole of it) */
	unsigned common;        /* EMB_CLI_* */
	/* common options (filled by emb_cli_parse) */
	int errors_emit, strict, raw, b64, progress;
	size_t max_line;        /* default 64 MiB */
	const char *model;      /* -m argument, NULL when absent */
	long max_length;        /* --max-length, -1 when absent */
	int no_truncate, no_prompt, tokens;
	const char *prompt, *prompt_name;
	char **files;           /* operands (borrowed from argv) */
	int nfiles;
	/* run state */
	int status;
	uint64_t records, tokens_done;
	double t0, t_last;
	uint64_t bytes_before, bytes_total;
	int bytes_known, progress_shown;
	/* set by the command: it only tokenizes (emb_text_tok_setup reads
	 * no modules.json, see emb_st_config_load_text) */
	int tok_only;
} emb_cli;

/* one record moving through the driver */
typedef struct emb_cli_rec {
	emb_record *rec;        /* parsed record; invalid when bad before parse */
	int parsed;             /* rec holds this line's record */
	const char *file;       /* borrowed */
	size_t lineno;
	int bad;                /* err holds the diagnostic */
	emb_err err;
	size_t cost;            /* tokens (batch budget, progress) */
	void *user;             /* the command's per-record state */
} emb_cli_rec;

typedef struct emb_cli_ops {
	/* in input order, per good record: check fields, prepare; set
	 * r->cost; -1 (err) makes it a bad record */
	int (*prepare)(void *ctx, emb_cli_rec *r, emb_err *err);
	/* optional: process the good records of a batch; -1 fails the batch
	 * (the driver then retries them one at a time to find the bad one) */
	int (*run)(void *ctx, emb_cli_rec **rs, int n, emb_err *err);
	/* append the output record to out (emb_out_begin..emb_out_end) */
	int (*emit)(void *ctx, emb_cli_rec *r, emb_buf *out, emb_err *err);
	/* free r->user (optional) */
	void (*free_user)(void *ctx, void *user);
	size_t batch_cost;      /* token budget per run; 0: one record a run */
	int batch_max;          /* records per run at most (0: 1) */
} emb_cli_ops;

/*
 * Parse argv (GNU style: options and operands in any order, "--" ends
 * options).  Handles the common options itself; HANDLER gets
 * the command's own (EXTRA) and returns -1 with err set for a bad value.
 * --help prints c->usage on stdout and exits 0; --version exits 0; a
 * usage error prints "PROG: error: MSG" and the usage on stderr and
 * exits 2.  Also sets SIGPIPE to its default action.
 */
void emb_cli_parse(emb_cli *c, int argc, char **argv,
                   const emb_cli_opt *extra,
                   int (*handler)(void *ctx, int key, const char *arg,
                                  emb_err *err),
                   void *ctx);
/* print "PROG: error: MSG" + usage on stderr, exit 2 */
void emb_cli_usage_error(const emb_cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* print "PROG: error: MSG" on stderr and exit with STATUS */
void emb_cli_die(const emb_cli *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/* parse a decimal integer in [min, max] (size suffixes k, M, G when
 * SUFFIX); 0 or -1 */
int emb_cli_parse_int(long long *out, const char *s, long long min,
                      long long max, int suffix);
/* resolve c->model (emb_model_resolve); exits 2 when absent and REQUIRED,
 * 3 when it cannot be resolved.  *dir: new (free()) or NULL. */
char *emb_cli_model_dir(const emb_cli *c, int required);
/*
 * Read every operand (stdin when none), parse each line (--raw: as
 * {"text": LINE}), call ops, write outputs in input order to stdout,
 * report bad records per --errors/--strict, show progress.  Returns the
 * exit status (0, 1 or 4); never returns on a write error (exit 4) or a
 * broken pipe (killed by SIGPIPE, or a quiet exit).
 */
int emb_cli_run(emb_cli *c, const emb_cli_ops *ops, void *ctx);

/* text -> tokens the way emb-tokenize and emb-encode share */
typedef struct emb_text_tok {
	emb_tokenizer *tok;     /* new (emb_text_tok_release) */
	emb_st_config st;
	emb_tok_opts opts;      /* max_length: the effective maximum */
	char *prompt;           /* NULL: no prompt */
	size_t prompt_len;
	size_t prompt_tokens;   /* prompt_length (ST): prompt tokens + 1 */
	int lower;              /* sentence_bert_config do_lower_case */
} emb_text_tok;

/*
 * Load the tokenizer and sentence-transformers config from DIR and apply
 * c's --max-length, --no-truncate, --prompt, --prompt-name, --no-prompt.
 * MODEL_MAX: a further cap on the max length (0: none).  Exits 3 on a
 * load error and 2 on an unknown prompt name (listing the known ones).
 */
/* pooling as emb-encode --pool and emb-pool apply it */
typedef struct emb_pool_spec {
	unsigned modes;         /* emb_pool_mode bits */
	int normalize;          /* Normalize module (or --normalize) */
	int dim;                /* --dim (Matryoshka), 0: keep all */
	int include_prompt;     /* 0: skip prompt_length leading tokens */
	int in_dim;             /* expected hidden size, 0: any */
	const emb_dense *dense; /* applied after pooling, before Normalize */
	size_t n_dense;
	int layer_norm;         /* LayerNorm (no affine, eps 1e-5) after the
	                           Dense modules: nomic's Matryoshka recipe */
} emb_pool_spec;

/*
 * tok (n, d) -> *out (new, free()) of *outn values: pooling (leaving out
 * the first PROMPT_LENGTH rows when p->include_prompt is 0), the Dense
 * modules, Normalize,
 * then with dim: keep the first dim values and L2-normalize.
 */
int emb_pool_apply(float **out, int *outn, const emb_pool_spec *p,
                   const float *tok, int n, int d, int prompt_length,
                   emb_err *err);
/* the record's "prompt_length" (0 when absent) */
int emb_record_prompt_length(int *out, const emb_record *rec, emb_err *err);

void emb_text_tok_setup(emb_text_tok *t, const emb_cli *c, const char *dir,
                        int model_max);
void emb_text_tok_release(emb_text_tok *t);
/* Default max length of the model in DIR (spec: sentence_bert_config
 * max_seq_length, else tokenizer model_max_length if < 1e6, capped by
 * config.json max_position_embeddings); 0 when unknown */
int emb_default_max_length(const char *dir, const emb_st_config *st,
                           emb_err *err);
/* tokenize the record's text (+ text_pair) with the prompt prepended;
 * *prompt_length: 0 when no prompt was applied */
int emb_text_tok_record(emb_encoding *enc, size_t *prompt_length,
                        const emb_text_tok *t, const emb_record *rec,
                        emb_err *err);

/* ------------------------------------------------------------------ */
/* validation against goldens (lib/validate.c, lib/manifest.c)         */

/*
 * An emb_validate joins two record streams, "golden" (side 0) and
 * "input" (side 1), on the raw JSON text of their "id" members (in line
 * order when the first record of either side has no id), and compares
 * every known field present in both:
 *   exact:   input_ids, token_type_ids, tokens
 *   floats:  embedding, token_embeddings (golden last_hidden_state or
 *            token_embeddings), logits, scores: max abs diff <= atol and
 *            per-row cosine >= min_cos
 *   sparse:  {"id": weight, ...} or {"indices": [...], "values": [...]};
 *            a weight missing on one side counts as 0
 *   integer: int8, uint8, binary, ubinary (quantized; default atol 0)
 * Vectors are read with emb_record_get_floats (KEY or KEY_b64).
 */
typedef struct emb_validate emb_validate;

enum { EMB_SIDE_GOLDEN = 0, EMB_SIDE_INPUT = 1 };

typedef struct emb_vtol {
	const char *field;      /* borrowed: field name or alias */
	double atol;            /* < 0: keep the default */
	double min_cos;         /* NAN: keep the default */
} emb_vtol;

typedef struct emb_validate_opts {
	double atol;            /* float fields (default 1e-5) */
	double min_cos;         /* per-row cosine floor; NAN (default): off */
	const char *const *fields; /* borrowed, NULL-terminated: compare only
	                           these (each must be compared); NULL: all */
	const emb_vtol *tols;   /* borrowed: per-field overrides */
	size_t n_tols;
	int quiet;              /* print only lines that fail */
	const char *prefix;     /* borrowed: put before every line (or NULL) */
	FILE *diag;             /* per-record messages (NULL: none) */
	size_t max_diag;        /* per field and kind (default 5) */
} emb_validate_opts;

void emb_validate_opts_init(emb_validate_opts *o);
/* canonical name of a field or alias ("last_hidden_state" ->
 * "token_embeddings"), borrowed; NULL when unknown */
const char *emb_validate_field_name(const char *name);
/* "input_ids, token_type_ids, ..." (borrowed): for usage messages */
const char *emb_validate_field_list(void);

/* o is copied (its borrowed strings must outlive v); unknown field names
 * are an error.  *out: new, emb_validate_free. */
int emb_validate_new(emb_validate **out, const emb_validate_opts *o,
                     emb_err *err);
void emb_validate_free(emb_validate *v);
/* add one record of SIDE (borrowed for the call); WHERE ("file:line",
 * may be NULL) names it in diagnostics */
void emb_validate_add(emb_validate *v, int side, const emb_record *rec,
                      const char *where);
/* a line of SIDE that could not be read or parsed: a failure (it still
 * takes its place in line order) */
void emb_validate_bad(emb_validate *v, int side, const char *where,
                      const char *msg);
/* Print the summary lines on OUT (may be NULL) and report:
 * 0 everything within tolerance, 1 some failure. Call once. */
int emb_validate_finish(emb_validate *v, FILE *out);

typedef struct emb_vstat {
	const char *field;      /* borrowed: canonical name */
	int exact;              /* 1: exact comparison (ids, tokens) */
	size_t count;           /* records where both sides have it */
	size_t mismatches;      /* records differing / out of tolerance */
	size_t shape_errors;    /* records whose lengths/shapes differ */
	size_t bad;             /* records whose field could not be read */
	size_t golden_only;     /* golden has it, the joined input does not */
	size_t input_only;
	double max_abs;         /* float/integer fields */
	const char *max_abs_id; /* borrowed: "id 17", "record 3"; or NULL */
	double min_cos;         /* 1 when nothing compared */
	const char *min_cos_id;
	double atol, min_cos_req; /* in effect (min_cos_req NAN: off) */
	int ok;                 /* after emb_validate_finish */
} emb_vstat;

typedef struct emb_vrecords {
	size_t golden, input;   /* records read per side (bad lines too) */
	size_t joined;
	size_t missing_input;   /* golden records with no input partner */
	size_t missing_golden;
	size_t bad;             /* unreadable lines, both sides */
	size_t duplicates;      /* repeated ids */
	size_t no_id;           /* records without id while joining by id */
	size_t errors;          /* records with an "error" member */
	int by_id;              /* 1: joined on id, 0: line order */
} emb_vrecords;

/* stats of FIELD (any name emb_validate_field_name knows); -1 when the
 * field is not compared in this run */
int emb_validate_stat(const emb_validate *v, const char *field,
                      emb_vstat *out);
void emb_validate_records(const emb_validate *v, emb_vrecords *out);

/* Compare GOLDEN with INPUT (NULL or "-": stdin), print the summary on
 * OUT: 0 pass, 1 fail, -1 a file cannot be opened (err). */
int emb_validate_files(const char *golden, const char *input,
                       size_t max_line, const emb_validate_opts *o,
                       FILE *out, emb_err *err);

typedef struct emb_manifest_opts {
	const char *bindir;     /* borrowed: where emb-* live (NULL: PATH) */
	const char *const *cases; /* borrowed, NULL-terminated: run only
	                           these names; NULL: all */
	int quiet;              /* print only failures and the last line */
	FILE *out;              /* results (NULL: stdout) */
	const char *keep_dir;   /* borrowed: keep each case's output there
	                           as NAME.jsonl, stderr as NAME.err, the
	                           synthetic checkpoints under models/ (NULL:
	                           a temporary directory, removed) */
	int trusted;            /* 1: the commands may take any option,
	                           also those that write files (-o,
	                           --save-ranges, --keep...); 0: refused */
} emb_manifest_opts;

/*
 * Run the parity manifest PATH (YAML, see emb-validate(1)): for every
 * case, materialize the synthetic model if asked, run the command or
 * pipeline on the input, and validate its output against the golden.
 * Returns 0 when every case passes, 1 when some case fails, -1 when the
 * manifest cannot be read or is malformed (err names file, line, key).
 */
int emb_manifest_run(const char *path, const emb_manifest_opts *o,
                     emb_err *err);
/* Only read and check the manifest PATH as emb_manifest_run does before
 * running anything (YAML, keys, values, that named files exist); runs
 * nothing.  0, or -1 (err names file, line, key). */
int emb_manifest_check(const char *path, emb_err *err);

/* ------------------------------------------------------------------ */
/* reranking (lib/rerank.c)                                            */

enum emb_activation {
	EMB_ACTIVATION_NONE = 0,        /* raw logits (Identity) */
	EMB_ACTIVATION_SIGMOID = 1,     /* per label */
	EMB_ACTIVATION_SOFTMAX = 2,     /* over the labels */
};
/* "none"/"identity", "sigmoid", "softmax", or a sentence-transformers
 * class name ("torch.nn.modules.activation.Sigmoid"); -1 when unknown */
int emb_activation_parse(const char *s);
const char *emb_activation_name(int act);
/*
 * The cross-encoder activation the model in DIR declares:
 * config_sentence_transformers.json or config.json
 * "sentence_transformers": {"activation_fn": ...}; EMB_ACTIVATION_NONE
 * when neither says anything.  -1 (err) on an unknown or bad value.
 */
int emb_activation_default(int *out, const char *dir, emb_err *err);
/* v (n) in place */
void emb_activation_apply(float *v, int n, int act);
/* order (n): indices of scores (n) best first, ties by lower index */
void emb_rank_order(int *order, const float *scores, int n);
/*
 * ColBERT late interaction: sum over query rows q (nq, dim) of the max
 * over document rows d (nd, dim) of cos(q_i, d_j).  Rows are normalized
 * as torch.nn.functional.normalize (eps 1e-12); 0 when nd is 0.
 */
double emb_maxsim(const float *q, int nq, const float *d, int nd, int dim);

/* ------------------------------------------------------------------ */
/* vector quantization (lib/quant.c): sentence-transformers'           */
/* quantize_embeddings in float32, saturating out-of-range values      */

enum emb_vq {
	EMB_VQ_INT8 = 1,        /* (x - min) / ((max - min) / 255) - 128 */
	EMB_VQ_UINT8 = 2,       /* (x - min) / ((max - min) / 255) */
	EMB_VQ_BINARY = 3,      /* packbits(x > 0) - 128 as int8 */
	EMB_VQ_UBINARY = 4,     /* packbits(x > 0) */
};
/* "int8", "uint8", "binary", "ubinary" -> enum emb_vq; 0 when unknown */
int emb_vq_parse(const char *s);
const char *emb_vq_name(int kind);   /* also the output field name */
/* values per quantized vector of dim floats */
size_t emb_vq_width(int kind, int dim);
/* running per-dimension ranges: mins/maxs (dim) start at +inf/-inf */
void emb_vq_ranges_init(float *mins, float *maxs, int dim);
void emb_vq_ranges_add(float *mins, float *maxs, const float *v, int dim);
/*
 * v (dim) -> out (emb_vq_width): float32 arithmetic, truncation toward
 * zero, then saturation to the type's range (NaN, e.g. a dimension with
 * min == max, gives the lowest value).  mins/maxs only for int8/uint8.
 * Returns the number of values that saturated.
 */
size_t emb_vq_quantize(int32_t *out, int kind, const float *v, int dim,
                       const float *mins, const float *maxs);
/* the matching unpacking for scoring: q (emb_vq_width) -> out (dim):
 * binary/ubinary: +1 for a set bit, -1 for a clear one (so that a dot
 * product is dim - 2 * hamming distance); int8/uint8: the center of the
 * value's bucket, min + (u + 0.5) * step (u = q, or q + 128 for int8) */
void emb_vq_dequantize(float *out, int kind, const int32_t *q, int dim,
                       const float *mins, const float *maxs);

/*
 * Write a converted checkpoint of the model in DIR to OUT (written beside
 * it and renamed into place; only the files emb reads are copied; an
 * existing non-empty OUT is replaced only when FORCE): TYPE "int8": every
 * linear layer weight (2-D "*.weight", not an embedding or norm) as I8
 * with an F32 "<name>_scale" per row (w = q * scale), the rest as is;
 * "f16", "bf16": every F32/F64 tensor converted (round to nearest even).
 * The metadata key "emb.quantization" names the scheme.
 */
int emb_quantize_model(const char *dir, const char *out, const char *type,
                       int force, emb_err *err);

#endif /* EMB_H */
