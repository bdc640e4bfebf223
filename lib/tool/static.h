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

#endif /* EMB_TOOL_STATIC_H */
