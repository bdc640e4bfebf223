/*
 * modcheck.h - the module shapes of a sentence-transformers pipeline
 * checked at load (modcheck.c)
 */
#ifndef EMB_MODCHECK_H
#define EMB_MODCHECK_H

#include "tool/emb-tool.h"

/* The shapes P (borrowed) will meet, checked once before any record:
 * HIDDEN the model's hidden size (0: unknown), POOL_DIM the Pooling
 * module's word_embedding_dimension (0: none stated): they must agree,
 * and each Dense module takes what the step before it gives (--dim is
 * the caller's: a usage error).
 * DIR names the model in messages.  0, or -1 with ERR set (a load
 * error: exit 3). */
int emb_pool_spec_check(const emb_pool_spec *p, int hidden, int pool_dim,
                        const char *dir, emb_err *err);

#endif /* EMB_MODCHECK_H */
