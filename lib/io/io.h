/*
 * io/io.h - files: safetensors (mmapped read-only), the Hugging Face
 * cache, sentence-transformers module configs, JSONL records in and out.
 * Layer io: includes base only.
 */
#ifndef EMB_IO_H
#define EMB_IO_H

#include "base/base.h"
#include "io/file.h"

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
/*
 * The start of a safetensors file on F: the 8-byte little-endian length
 * of the JSON header HTEXT padded with spaces to a multiple of 8, then
 * the header.  Errors show in ferror(F).
 */
void emb_safetensors_write_header(FILE *f, const char *htext);

/* the same, but every file opened must stay inside the model directory
 * ROOT (io/file.h); emb_safetensors_open uses PATH itself as ROOT when it
 * is a directory, and the index's folder for an index file */
int emb_safetensors_open_in(emb_safetensors **out, const char *root,
                            const char *path, emb_err *err);
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
/* emb_tensor_check_finite on row ROW (< shape[0]) of a 2-D tensor: -1
 * naming file, tensor, row and the element in the row */
int emb_tensor_check_row(const emb_tensor *t, int64_t row, emb_err *err);
/* emb_tensor_check_finite on every tensor but SKIP (NULL: none; models
 * call it at load and check their embedding table's rows at first use) */
int emb_safetensors_check_finite(const emb_safetensors *st,
                                 const emb_tensor *skip, emb_err *err);

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
	float *w;               /* (out, in) row-major, linear.weight; NULL
	                           once st's emb_dense_pack has made wp */
	float *b;               /* (out) linear.bias, or NULL */
	float *wp;              /* W packed for the GEMM (kern/kernels.h),
	                           made by emb_dense_pack (st/st.h) from w,
	                           which it replaces; NULL before */
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
/* *OUT = the hidden size DIR/config.json states (hidden_size, or dim,
 * n_embd, d_model), 0 when it has none or there is no config.json; -1
 * when it cannot be read */
int emb_st_config_hidden(int *out, const char *dir, emb_err *err);
/* prompt text by name (borrowed) or NULL */
const char *emb_st_config_prompt(const emb_st_config *c, const char *name);
/* "mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken";
 * also accepts ST names like "mean_tokens"; returns 0 when unknown */
unsigned emb_pool_mode_parse(const char *s);
/* a list of modes joined by ',' or '+' ("mean,max"): the OR of the
 * parts; 0 when empty or any part is unknown */
unsigned emb_pool_modes_parse(const char *s);

/* ------------------------------------------------------------------ */
/* JSONL records: lines.c (the line reader), record.c and recnum.c    */
/* (parsing, the getters), write.c (the writer, --fields/--drop)       */

typedef struct emb_reader emb_reader;

/* PATH NULL or "-" is stdin, else a regular file or a FIFO
 * (emb_file_open_stream: never a device); lines longer than MAX_LINE bytes are
 * skipped (without being held in memory) and reported as errors.
 * *out: new, emb_reader_free. */
int emb_reader_open(emb_reader **out, const char *path, size_t max_line,
                    emb_err *err);
/* the same over the descriptor FD (stolen; 0: stdin, kept open), named
 * NAME in messages */
int emb_reader_open_fd(emb_reader **out, int fd, const char *name,
                       size_t max_line, emb_err *err);
void emb_reader_free(emb_reader *r);
/* 1: a line in *line, *len (borrowed until the next call; no newline,
 * a trailing CR removed); 0: end of input; -1: this line is bad (too
 * long, NUL byte, read error: err says which) and was skipped. */
int emb_reader_next(emb_reader *r, const char **line, size_t *len,
                    emb_err *err);
/* after a long line is parsed (the line emb_reader_next gave is then
 * invalid): let go of a line buffer of 256 KiB or more, so that one long
 * record does not hold its bytes twice while it is processed */
void emb_reader_shrink(emb_reader *r);
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
/* --raw: the record {"id": ID, "text": LINE} (LINE must be valid UTF-8;
 * an empty line is the empty text); ID: the line's number in the input */
int emb_record_from_text(emb_record *rec, const char *line, size_t len,
                         uint64_t id, emb_err *err);
int emb_record_has(const emb_record *rec, const char *key);
/* Field getters: "missing field 'KEY'", "field 'KEY' is not a string"...
 * *s borrowed from rec (unescaped, may hold NUL bytes: use *len). */
int emb_record_get_string(const emb_record *rec, const char *key,
                          const char **s, size_t *len, emb_err *err);
/* forget the unescaped strings the getters made (the strings they gave
 * are then invalid; a getter makes them again): a long text need not
 * stay in memory twice once it is tokenized */
void emb_record_drop_strings(const emb_record *rec);
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

/* the members --fields/--drop keep (emb_fields_new) */
typedef struct emb_fields emb_fields;

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
	const emb_fields *sel;  /* emb_buf_select, borrowed */
	size_t hide;            /* where the member left out began */
	int hiding;
	int failed;             /* memory ran out: see emb_buf_failed */
} emb_buf;

void emb_buf_init(emb_buf *b);
void emb_buf_release(emb_buf *b);
void emb_buf_add(emb_buf *b, const char *s, size_t n);
/* append FROM's text (whole records, made with emb_out_* in a buffer of
 * their own); FROM failed: b fails too (emb_buf_failed) */
void emb_buf_append(emb_buf *b, const emb_buf *from);
/* S (N bytes of UTF-8) as a JSON string literal, quotes included */
void emb_buf_add_jstr(emb_buf *b, const char *s, size_t n);
/* 1 once memory ran out while writing into b: what was written after
 * that is lost and the record being built is dropped at emb_out_end;
 * the caller reports "out of memory" (the buffer stays unusable) */
int emb_buf_failed(const emb_buf *b);
/* shortest decimal that strtof() reads back as exactly v; writes at most
 * 16 bytes plus NUL; non-finite values are written as null */
size_t emb_fmt_f32(char *out, float v);

/*
 * --fields KEEP, --drop DROP: KEEP (may be NULL: every member) and DROP
 * (may be NULL: none), each a comma-separated list of member names.  A
 * name also selects its base64 form NAME_b64 (as --b64 writes
 * "embedding_b64" for "embedding").  A member is written when KEEP names
 * it (or KEEP is NULL) and DROP does not; names are compared unescaped.
 * *out: new (emb_fields_free).  -1 with err set for an empty name.
 */
int emb_fields_new(emb_fields **out, const char *keep, const char *drop,
                   emb_err *err);
void emb_fields_free(emb_fields *f);
/* the records emb_out_begin starts from now on keep only the members F
 * selects (borrowed; NULL: all), in their order: those copied from the
 * input record and those written */
void emb_buf_select(emb_buf *b, const emb_fields *f);

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
/*
 * Standard base64 (RFC 4648 alphabet) S (LEN bytes) -> OUT (room for
 * LEN / 4 * 3 + 2 bytes): the count of bytes, or -1 on a character
 * outside the alphabet, '=' anywhere but at the end, more than two '=',
 * or '=' in a length that is not a multiple of 4.  PAD_REQUIRED: the
 * length must be a multiple of 4 (else unpadded input is accepted).
 */
long emb_base64_decode(unsigned char *out, const char *s, size_t len,
                       int pad_required);

/* b64: write KEY_b64 instead of KEY */
void emb_out_floats(emb_buf *b, const char *key, const float *v, size_t n,
                    int b64);
void emb_out_matrix(emb_buf *b, const char *key, const float *v,
                    size_t rows, size_t cols, int b64);
/* an array of strings (e.g. "tokens") */
void emb_out_strings(emb_buf *b, const char *key, const char *const *v,
                     size_t n);
void emb_out_end(emb_buf *b);

#endif /* EMB_IO_H */
