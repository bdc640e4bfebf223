/*
 * st/ckpt.h - writing a new checkpoint directory (emb-quantize -o):
 * into a temporary directory beside the output, holding only the files
 * emb itself reads, then renamed into place.
 * Layer st: includes base, io.
 */
#ifndef EMB_ST_CKPT_H
#define EMB_ST_CKPT_H

#include "base/base.h"

/*
 * Check that OUT may receive a checkpoint of the model directory MODEL:
 * not a symbolic link, not inside MODEL (nor MODEL inside it), and, when
 * it exists, an empty directory unless FORCE; then create the temporary
 * directory beside it (.NAME.tmp-XXXXXX, same parent, so the final rename
 * stays on one file system).  *tmp: new (free()).
 */
int emb_ckpt_begin(char **tmp, const char *model, const char *out,
                   int force, emb_err *err);

/*
 * Copy into TMP the files of MODEL that emb reads, other than the
 * top-level weights (emb_model_file_names, then config.json and
 * model.safetensors of each module folder modules.json names), each
 * opened under the rules of io/file.h; absent files are skipped.
 */
int emb_ckpt_copy_files(const char *model, const char *tmp, emb_err *err);

/* copy MODEL/REL to TMP/REL (parent folders made) under the same rules;
 * an absent file: 0 */
int emb_ckpt_copy_file(const char *model, const char *tmp, const char *rel,
                       emb_err *err);

/*
 * Put TMP in OUT's place: a rename when OUT is absent or empty; with an
 * existing OUT (FORCE was given), OUT is first renamed aside, then TMP
 * renamed in, then the old tree removed.  On failure OUT is left as it
 * was and TMP removed.
 */
int emb_ckpt_commit(const char *tmp, const char *out, emb_err *err);

/* remove TMP (made by emb_ckpt_begin) and what was written into it */
void emb_ckpt_abort(const char *tmp);
/*
 * The directory emb_ckpt_begin made and the commit has not yet put in
 * place (or, after a --force replace, the old tree being removed), NULL
 * when none: what a signal handler removes before the process dies
 * (tool/signals.c).  Borrowed, static; safe to read in a signal handler.
 */
const char *emb_ckpt_pending(void);

#endif /* EMB_ST_CKPT_H */
