/*
 * tool/static.h - emb-encode's record processing for static embedding
 * models (static.c): text or input_ids in, each record tokenized and
 * averaged in one pass on a thread of its own, embedding or
 * token_embeddings out.
 */
#ifndef EMB_TOOL_STATIC_H
#define EMB_TOOL_STATIC_H

#include "tool/emb-tool.h"

/* what emb-encode was asked for */
typedef struct emb_static_run {
	int pool;               /* --pool: embedding; else token_embeddings */
	unsigned modes;         /* --pool=MODE (0: the model's, mean) */
	int normalize;          /* -1: the model's */
	int dim;                /* --dim, 0: all */
	int threads;            /* -j, 0: every core */
} emb_static_run;

/*
 * Run emb-encode over CLI's input with the static model in DIR (CLI's
 * text options apply): setup (exits 3 on a load error, 2 on an option the
 * model cannot take), emb_cli_run, release.  Returns the exit status.
 */
int emb_static_encode(emb_cli *cli, const char *dir, const emb_static_run *o);

/*
 * emb-pool with a static model (p->sm): REC's token_embeddings TOK
 * (rows, cols; rows 0: a text without tokens) -> *v (new) of *vn values,
 * pooled by emb_pool_apply.  When REC also has the input_ids those rows
 * are the model's rows of (emb_static_rows, compared exactly), the mean
 * is taken from the ids themselves (emb_static_mean): the same vector
 * emb-encode --pool gives, where float32 rows of a model with float64
 * weights would lose what the library's float64 products keep.
 */
int emb_static_pool_record(float **v, int *vn, const emb_pool_spec *p,
                           const emb_record *rec, const float *tok,
                           size_t rows, size_t cols, emb_err *err);

#endif /* EMB_TOOL_STATIC_H */
