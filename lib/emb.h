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

typedef struct emb_st_config {
	/* 1_Pooling/config.json; 0 when the model has no Pooling module */
	unsigned pool_modes;    /* emb_pool_mode bits; output concatenated
	                           in the order of the enum (as ST does) */
	int pool_dim;           /* word_embedding_dimension, 0 if unknown */
	int include_prompt;     /* default 1 */
	int normalize;          /* a Normalize module is in modules.json */
	int max_seq_length;     /* sentence_bert_config.json, 0 if unset */
	int do_lower_case;      /* sentence_bert_config.json */
	emb_prompt *prompts;    /* config_sentence_transformers.json */
	size_t n_prompts;
	char *default_prompt_name; /* NULL if none */
} emb_st_config;

/* Read modules.json & co from DIR; missing files mean defaults. */
int emb_st_config_load(emb_st_config *out, const char *dir, emb_err *err);
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
/* 1: a line in *line/*len (borrowed until the next call; no newline,
 * a trailing CR removed); 0: end of input; -1: this line is bad (too
 * long, NUL byte, read error: err says which) and was skipped. */
int emb_reader_next(emb_reader *r, const char **line, size_t *len,
                    emb_err *err);
const char *emb_reader_name(const emb_reader *r);  /* "<stdin>" or path */
size_t emb_reader_lineno(const emb_reader *r);     /* of the last line */
/* bytes of input consumed so far and total (0 if unknown): progress */
void emb_reader_progress(const emb_reader *r, uint64_t *done, uint64_t *total);

typedef struct emb_record emb_record;  /* one parsed JSON object line */

emb_record *emb_record_new(void);       /* new, emb_record_free */
void emb_record_free(emb_record *rec);
/* Parse LINE (copied) as one JSON object; invalid JSON or UTF-8 is an
 * error ("invalid JSON at column 12: ..."). */
int emb_record_parse(emb_record *rec, const char *line, size_t len,
                     emb_err *err);
/* --raw: the record {"text": LINE} (LINE must be valid UTF-8) */
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
} emb_buf;

void emb_buf_init(emb_buf *b);
void emb_buf_release(emb_buf *b);
void emb_buf_add(emb_buf *b, const char *s, size_t n);
/* shortest decimal that strtof() reads back as exactly v; writes at most
 * 16 bytes plus NUL; non-finite values are written as null */
size_t emb_fmt_f32(char *out, float v);

/* Output records: "{" + the members of REC (may be NULL) copied byte for
 * byte in input order, minus those named in DROP (NULL-terminated, may be
 * NULL) and minus any key later written by emb_out_*; then new members;
 * emb_out_end closes with "}\n". */
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
void emb_out_end(emb_buf *b);

/* ------------------------------------------------------------------ */
/* command driver (lib/cli.c): options and the read-transform-write    */
/* loop shared by every cmd/emb-*.c (declared by its author below)     */

#endif /* EMB_H */
