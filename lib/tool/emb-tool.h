/*
 * tool/emb-tool.h - what only the commands need: the option parser and
 * record driver shared by cmd/emb-*.c, the text front end, validation
 * against goldens, the YAML manifest runner, synthetic checkpoints.
 * Layer tool: the only one that may exit, fork or use libyaml; includes
 * every layer below it.
 */
#ifndef EMB_TOOL_H
#define EMB_TOOL_H

#include "base/base.h"
#include "io/io.h"
#include "tok/tok.h"
#include "nn/nn.h"
#include "st/st.h"
#include "st/embed.h"

/* ------------------------------------------------------------------ */
/* synthetic checkpoints (recipe.json, format "emb-synth-1"; test/data) */

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
/* command driver (lib/tool: cli.c, msg.c, run.c, progress.c, signals.c) */
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
	EMB_CLI_CHUNK = 1u << 4, /* --chunk W --overlap K (windows) */
	EMB_CLI_LATE = 1u << 5,  /* --late (with --chunk) */
	EMB_CLI_COMPUTE = 1u << 6, /* --compute MODE (nn.h emb_prec) */
};

/*
 * The --help lines of the options emb_cli_parse reads for every record
 * filter, --errors to --version: the end of a command's usage text
 * before its "Exit:" line.
 */
#define EMB_CLI_USAGE_COMMON \
"  --errors=skip|emit on a bad record: skip it, or write {\"id\",\"error\"}\n" \
"  --strict           stop at the first bad record\n" \
"  --max-line BYTES   longest accepted line (default 64M)\n" \
"  --fields LIST      write only these members of each output record\n" \
"                     (comma-separated; NAME also selects NAME_b64)\n" \
"  --drop LIST        write every member but these\n" \
"  --progress[=always], --no-progress\n" \
"                     status on stderr when it is a terminal (default: only\n" \
"                     when stdout is not a pipe); always: even when not\n" \
"  -h, --help         this text\n" \
"  --version          print the version\n"

typedef struct emb_chunker emb_chunker;
typedef struct emb_window emb_window;

typedef struct emb_cli {
	/* set by the command before emb_cli_parse */
	const char *prog;       /* "emb-encode" */
	const char *usage;      /* --help text (the whole of it) */
	unsigned common;        /* EMB_CLI_* */
	/* common options (filled by emb_cli_parse) */
	int errors_emit, strict, raw, b64;
	int errors_set;         /* --errors was given */
	int progress;           /* after emb_cli_parse: 1 to show progress */
	size_t max_line;        /* default 64 MiB */
	const char *model;      /* -m argument, NULL when absent */
	long max_length;        /* --max-length, -1 when absent */
	int no_truncate, no_prompt, tokens;
	const char *prompt, *prompt_name;
	char **files;           /* operands (borrowed from argv) */
	int nfiles;
	/* --fields LIST, --drop LIST (borrowed from argv, NULL when absent)
	 * and their compiled form (io/io.h emb_fields; NULL: write every
	 * member), applied to each output record by emb_cli_run */
	const char *keep_fields, *drop_fields;
	struct emb_fields *fields;
	/* run state */
	int status;
	int input_failed;       /* an operand could not be read: exit 5 */
	uint64_t records, tokens_done;
	double t0, t_last;
	uint64_t bytes_before, bytes_total;
	int bytes_known, progress_shown;
	int progress_plain;     /* progress as plain lines (stderr is not a
	                           terminal: --progress=always) */
	/* set by the command: it only tokenizes (emb_text_tok_setup reads
	 * no modules.json, see emb_st_config_load_text) */
	int tok_only;
	/* --chunk W (0: absent), --overlap K (-1: absent), --late,
	 * --window-text (EMB_WINDOW_TEXT_*) */
	long long chunk, overlap;
	int late, window_text;
	/* --compute MODE (and emb-encode's --weights, --act): the precision
	 * mode, emb_model_opts.prec */
	emb_prec prec;
	/* windows (--chunk without --late): new at emb_cli_parse, bound to
	 * the tokenizer by emb_text_tok_setup, freed by emb_cli_run */
	emb_chunker *chunker;
	/* set by the command (optional): append what it still holds at the
	 * end of the input (records that gather several input records) */
	int (*finish)(void *ctx, emb_buf *out, emb_err *err);
} emb_cli;

/* one record moving through the driver */
typedef struct emb_cli_rec {
	emb_record *rec;        /* parsed record; invalid when bad before parse */
	int parsed;             /* rec holds this line's record */
	const char *file;       /* borrowed */
	size_t lineno;
	uint64_t raw_id;        /* --raw: the line's number over every
	                           operand, its record's "id" */
	int bad;                /* err holds the diagnostic */
	emb_err err;
	/* set by the command's emit (optional): a record written whole but
	 * with something lost (late chunking cut at the model's maximum):
	 * one warning on stderr; with --strict, a bad record */
	emb_err warn;
	size_t cost;            /* tokens (batch budget, progress) */
	void *user;             /* the command's per-record state */
	/* --chunk (c->chunker): the window (its document: emb_window_doc);
	 * rec is not used then (emb_chunker_next); NULL otherwise */
	emb_window *win;
} emb_cli_rec;

/*
 * Tokens per forward pass unless --batch-tokens says otherwise
 * (emb-encode, emb-rerank; lib/st/embedder.c keeps the same number):
 * small enough that a pass's activations stay near the cores' caches.
 */
#define EMB_BATCH_TOKENS 4096

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
 * usage error prints "PROG: error: MSG" and "Try 'PROG --help' for more
 * information." on stderr and exits 2.  Resolves --progress[=WHEN] into
 * c->progress (see lib/tool/cli.c resolve_progress).  Also sets SIGPIPE
 * to its default action.
 */
void emb_cli_parse(emb_cli *c, int argc, char **argv,
                   const emb_cli_opt *extra,
                   int (*handler)(void *ctx, int key, const char *arg,
                                  emb_err *err),
                   void *ctx);
/* print "PROG: error: MSG" and "Try 'PROG --help' ..." on stderr, exit 2 */
void emb_cli_usage_error(const emb_cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* a status line "PROG: MSG" on stderr as progress is shown (c->progress:
 * on a terminal rewritten in place, at most twice a second; else plain
 * lines every 10 s); FINAL: always, and ends the line */
void emb_cli_status(emb_cli *c, int final, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* print "PROG: warning: MSG" on stderr */
void emb_cli_warn(const emb_cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* print "PROG: error: MSG" on stderr and exit with STATUS */
void emb_cli_die(const emb_cli *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/*
 * A file the program reads besides the record operands emb_cli_run
 * reads (emb-search --index and the input of --build, emb-rerank
 * --texts and --query, a golden): when PATH cannot be opened for
 * reading (missing, unreadable, a directory, a device; with STREAM 0
 * also a FIFO), "PROG: error: PATH: WHY" and exit EMB_EXIT_INPUT (5),
 * the status of an operand that cannot be read.  NULL and "-" (standard
 * input) pass.  A file whose contents are wrong is its loader's error.
 */
void emb_cli_need_file(const emb_cli *c, const char *path, int stream);
/* parse a decimal integer in [min, max] (size suffixes k, M, G when
 * SUFFIX); 0 or -1 */
int emb_cli_parse_int(long long *out, const char *s, long long min,
                      long long max, int suffix);

/*
 * The pooling options emb-encode and emb-pool share: *MODES from a list
 * of pooling modes ARG ("cls,mean"), *DIM from --dim ARG (a positive
 * integer).  0, or -1 with ERR set to the usage message.
 */
int emb_cli_pool_modes(unsigned *modes, const char *arg, emb_err *err);
int emb_cli_dim(int *dim, const char *arg, emb_err *err);
/* resolve c->model (emb_model_resolve); exits 2 when absent and REQUIRED,
 * 3 when it cannot be resolved.  *dir: new (free()) or NULL. */
char *emb_cli_model_dir(const emb_cli *c, int required);
/*
 * Read every operand (stdin when none), parse each line (--raw: as
 * {"id": N, "text": LINE}, N the line number over every operand), call
 * ops, write outputs in input order to stdout, report bad records per
 * --errors/--strict, show progress.  Returns the exit status (0, 1, 4
 * or 5: an operand could not be read); never returns on a write error (exit 4) or a
 * broken pipe (killed by SIGPIPE, or a quiet exit).
 */
int emb_cli_run(emb_cli *c, const emb_cli_ops *ops, void *ctx);
/*
 * SIGINT, SIGTERM and SIGHUP end the process with the signal's status
 * (emb_cli_run installs the same handlers for its run); before it dies,
 * the handler removes the file named by emb_cli_remove_on_signal
 * (borrowed until cleared with NULL: a temporary file the command made)
 * and the temporary checkpoint directory (emb_ckpt_pending), and
 * nothing else.  An ignored signal stays ignored.
 */
void emb_cli_catch_signals(void);
void emb_cli_remove_on_signal(const char *path);

/*
 * A record a model can run: one with "input_ids", or with "text" when
 * TEXT_OK (the model has tokenizer files).  -1 (err) otherwise, naming
 * what is missing ("the record has neither 'text' nor 'input_ids'").
 */
int emb_record_check_input(const emb_record *rec, int text_ok, emb_err *err);

/*
 * emb_text_tok_init (st/embed.h) with c's --max-length, --no-truncate,
 * --prompt, --prompt-name, --no-prompt (and c->tok_only).  MODEL_MAX: the
 * model's limit (0: none).  Exits 3 on a load error and 2 on an option
 * the model refuses (an unknown prompt name, listing the known ones; a
 * --max-length above the model's limit).
 */
void emb_text_tok_setup(emb_text_tok *t, const emb_cli *c, const char *dir,
                        int model_max);
/* checks a command makes of the model it loaded before its tokenizer's
 * errors count (emb_cli_model_tok); exits as emb_cli_die on a failure */
typedef void (*emb_model_check_fn)(void *ctx, emb_model *m);
/*
 * The model in DIR (emb_model_load with MO; exits 3 naming the error),
 * then CHECK (may be NULL) on it, then, when T is not NULL, its
 * tokenizer (emb_text_tok_setup with the model's positions).  With more
 * than one thread (MO's, or the CPUs when it says 0) and no --late, the
 * model loads on a thread of its own while this one reads the
 * tokenizer files: the same model, tokenizer and errors, in the same
 * order, as one after the other.  Returns the model (new,
 * emb_model_free).
 */
emb_model *emb_cli_model_tok(emb_text_tok *t, const emb_cli *c,
                             const char *dir, const emb_model_opts *mo,
                             emb_model_check_fn check, void *ctx);
/* ------------------------------------------------------------------ */
/* emb-rerank's records (lib/tool/rerank.c)                            */

typedef struct emb_rerank_query {
	float *v;               /* (n, dim) kept rows */
	int n;
} emb_rerank_query;

typedef struct emb_rerank {
	/* options, set by the caller before the setup */
	int act;                /* EMB_ACTIVATION_*, -1: the model's */
	long long top_k;        /* 0: all */
	int return_docs, label, logits, threads, skip_special;
	int skip_prefix;        /* -2: off, -1: prompt_length, else N */
	long long batch_tokens;
	const char *query_file;
	const char *texts_file; /* --texts FILE: documents' text by id */
	size_t max_line;
	struct emb_rr_texts *texts;
	/* cross-encoder state */
	emb_model *m;
	int labels;
	emb_text_tok tt;
	int tt_loaded;
	emb_seq *seqs;
	size_t seqs_cap;
	float *logit_buf;
	size_t logit_cap;
	/* maxsim state */
	int maxsim;
	emb_tokenizer *tok;
	int32_t *special;       /* sorted ids of special tokens */
	size_t nspecial;
	emb_rerank_query *queries;
	size_t nq;
	int dim;
} emb_rerank;

/* load the cross-encoder in DIR (a *ForSequenceClassification model and
 * its head), its activation unless c->act is set, and the text front end
 * with CLI's options (emb_cli_model_tok: the model on a thread of its
 * own with more than one thread); a model that is not a cross-encoder
 * or lacks c->label, and the model's and the tokenizer's errors, exit
 * here (3; 2 for --label); -1 (err): the --texts file or the head, the
 * caller exits 3 */
int emb_rerank_setup(emb_rerank *c, const emb_cli *cli, const char *dir,
                     emb_err *err);
/* MaxSim: read c->query_file's token_embeddings records (and with
 * c->skip_special the special token ids of the tokenizer in DIR) */
int emb_rerank_maxsim_setup(emb_rerank *c, const char *dir, emb_err *err);
void emb_rerank_release(emb_rerank *c);
/* the record driver's callbacks (ctx: the emb_rerank) */
extern const emb_cli_ops emb_rerank_ops, emb_rerank_maxsim_ops;

/* ------------------------------------------------------------------ */
/* long documents (tool/chunk.c): windows and late chunking            */

/*
 * A splitter of documents into windows (W, K as emb_chunk_check takes
 * them; TOKENS: windows write "tokens"; RAW: input lines are plain
 * text).  Each document is parsed once and tokenized once; its windows
 * reach the command as structs (emb_window) that share it, and become
 * JSON only in the command's output (emb_window_begin).  *out: new,
 * emb_chunker_free (after the windows it handed out).
 */
int emb_chunker_new(emb_chunker **out, long long w, long long k, int tokens,
                    int raw, emb_err *err);
void emb_chunker_free(emb_chunker *c);
/* what a window record holds of its document's text: */
enum {
	EMB_WINDOW_TEXT_SLICE = 0,  /* "text": its own slice (span) */
	EMB_WINDOW_TEXT_FULL = 1,   /* "text": the whole document's */
	EMB_WINDOW_TEXT_NONE = 2,   /* no "text": span only */
};
/* byte offset of code point CP in s (n bytes of UTF-8; n when past its
 * end): where a span's bound lies in the text */
size_t emb_text_cp_offset(const char *s, size_t n, size_t cp);
/* "slice", "full", "none" -> EMB_WINDOW_TEXT_*, -1 otherwise */
int emb_window_text_parse(const char *s);
void emb_chunker_text(emb_chunker *c, int mode);
/* tokenize with TT (borrowed; it must outlive c): 0, or -1 (ERR: the
 * usage message) when a window would be longer than TT's maximum length */
int emb_chunker_bind(emb_chunker *c, const emb_text_tok *tt, emb_err *err);
/* 1 once bound */
int emb_chunker_bound(const emb_chunker *c);
/* the lines read so far, over every input (--raw: the last one's id) */
uint64_t emb_chunker_lines(const emb_chunker *c);

/* one window of a document, as the command gets it */
struct emb_window {
	size_t index, count;    /* chunk, chunks */
	size_t span[2];         /* [start, end) code points of its text */
	emb_encoding enc;       /* the model's input: the specials, the
	                           prompt's tokens and the window's content
	                           tokens; offsets in code points of the
	                           text (emb_chunk_encoding) */
	size_t prompt_length;   /* the prompt's tokens (0: no prompt) */
	/* private to tool/chunk.c */
	struct emb_chunk_doc *ref;      /* the reference held on its
	                                   document (emb_window_doc) */
	const emb_chunker *c;
	/* --window-text=slice: span's bytes of the document's text, as
	 * decoded when the window was cut (borrowed from the document: no
	 * one asks it to drop its strings while windows hold it); the
	 * record writer reads them without touching it, on any thread */
	const char *slice;
	size_t slice_len;
};

/*
 * The next window for the command: the next one of the current
 * document, else the first of the next line of RD.  *W: reused (new
 * when NULL; emb_window_free), its old document released.  1: a window
 * (*len: the input bytes it holds); 0: end of input; -1: a bad line
 * (err; emb_window_doc NULL); -2: a bad document (err;
 * emb_window_doc is it).
 */
int emb_chunker_next(emb_chunker *c, emb_reader *rd, emb_window **w,
                     size_t *len, emb_err *err);
/* W's document (borrowed, shared by its windows); NULL after a line
 * that is not one */
const emb_record *emb_window_doc(const emb_window *w);
void emb_window_free(emb_window *w);
/*
 * Begin W's output record on B (emb_out_begin, the caller adds its own
 * members and ends it): the document's members but the window's and
 * per-token ones, "text" (as emb_chunker_text says), chunk, chunks,
 * span; with IDS also input_ids, token_type_ids, tokens (when asked)
 * and prompt_length (when a prompt was applied): what a tokenized
 * record holds.  0, or -1 (err) out of memory.
 */
int emb_window_begin(emb_buf *b, const emb_window *w, int ids, emb_err *err);

/* late chunking: windows pooled from one forward pass */
typedef struct emb_late {
	const emb_text_tok *tt; /* borrowed: tokenizer (and prompt) */
	size_t w, k;
	int window_text;        /* EMB_WINDOW_TEXT_* */
	const emb_pool_spec *spec; /* borrowed: Dense, Normalize, dim */
} emb_late;

/* from c's --chunk/--overlap; -1 (err) without a tokenizer or with
 * spec->layer_norm */
int emb_late_init(emb_late *l, const emb_cli *c, const emb_text_tok *tt,
                  const emb_pool_spec *spec, emb_err *err);
/*
 * Append to b one record per window of REC (borrowed: its text, and
 * prompt_length when present, say where the content sits in IDS): IDS
 * (n; NULL: not known) the model's input, TOK (n, d) its token
 * embeddings.  Each record: REC's fields without the per-token ones, plus
 * chunk, chunks, span, truncated (content tokens past the model's
 * maximum, when any) and embedding (embedding_b64 when B64).  Content
 * cut at the model's maximum is also said in WARN (when not NULL).
 */
int emb_late_emit(emb_buf *b, const emb_late *l, const emb_record *rec,
                  const int32_t *ids, size_t n, const float *tok, int d,
                  int b64, emb_err *warn, emb_err *err);
/* the same from REC's token_embeddings (and input_ids when present) */
int emb_late_emit_record(emb_buf *b, const emb_late *l, const emb_record *rec,
                         int b64, emb_err *warn, emb_err *err);

/* one vector per document: the mean of the embeddings of consecutive
 * records with the same FIELD (raw JSON equal), L2-normalized */
typedef struct emb_group {
	const char *field;      /* borrowed */
	emb_record *first;      /* copy of the group's first record */
	char *key;              /* the group's FIELD (raw JSON) */
	size_t keylen, count;
	float *sum;             /* (dim) */
	int dim;
	emb_buf line;
} emb_group;

void emb_group_init(emb_group *g, const char *field);
void emb_group_release(emb_group *g);
/* add REC's embedding (borrowed); when REC starts a new group, first
 * append the finished one to b: the first record's fields without the
 * window's, chunks (the records averaged) and embedding */
int emb_group_add(emb_group *g, emb_buf *b, const emb_record *rec, int b64,
                  emb_err *err);
/* append the group still held (at the end of the input) */
int emb_group_finish(emb_group *g, emb_buf *b, int b64, emb_err *err);

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
	int golden_only;        /* input records without a golden partner
	                           are counted, not a failure */
	int input_only;         /* golden records without an input partner
	                           are counted, not a failure (an input of
	                           some of the golden's records) */
	int skip_errors;        /* input records with an "error" member are
	                           left out and counted, not a failure */
	int strict;             /* emb_validate_files: stop reading at the
	                           first failure (the summary says so) */
	/* emb_validate_files: called now and then with the records read so
	 * far, and once more with FINAL 1 at the end (NULL: never) */
	void (*progress)(void *ctx, size_t golden, size_t input, int final);
	void *progress_ctx;
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
 * OUT: 0 pass, 1 fail, -1 a file cannot be opened or the golden has an
 * unreadable line (err; the summary is printed first then). */
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
	int strict;             /* stop after the first failing case */
	/* called before case K (1-based) of N runs, and at the end with
	 * NAME NULL and N the cases run (NULL: never) */
	void (*progress)(void *ctx, size_t k, size_t n, const char *name);
	void *progress_ctx;
} emb_manifest_opts;

/* 1 when NAME may name a synthetic checkpoint inside the run directory:
 * a relative path of components other than "", "." and "..", without
 * control characters */
int emb_manifest_name_ok(const char *name);
/*
 * The allow-list of emb(7) SECURITY: 0 when a manifest may run ARGV[0]
 * (a program name) with the words ARGV[1..] (NULL-terminated; read as
 * emb_cli_parse reads them) without --trusted.  Else -1, *bad the index
 * of the word refused (0: the program itself) and WHY (WHYLEN bytes) the
 * reason, without the word: "writes files: refused unless ...".
 */
int emb_manifest_argv_check(size_t *bad, char *why, size_t whylen,
                            const char *const *argv);

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

#endif /* EMB_TOOL_H */
