/*
 * fields.h - output field selection (--fields LIST, --drop LIST): keep
 * only some top-level members of each output record.  Used by the record
 * driver's writer (lib/tool/cli.c), so every filter has it.
 */
#ifndef EMB_TOOL_FIELDS_H
#define EMB_TOOL_FIELDS_H

#include <stddef.h>

#include "base/base.h"
#include "io/io.h"

typedef struct emb_fields emb_fields;

/*
 * Compile the selection: KEEP (may be NULL: every member) and DROP (may
 * be NULL: none), each a comma-separated list of member names.  A name
 * also selects its base64 form NAME_b64 (as --b64 writes "embedding_b64"
 * for "embedding").  A member is written when KEEP names it (or KEEP is
 * NULL) and DROP does not.  *out: new (emb_fields_free).  -1 with err
 * set for an empty list or an empty name.
 */
int emb_fields_new(emb_fields **out, const char *keep, const char *drop,
                   emb_err *err);
void emb_fields_free(emb_fields *f);

/*
 * The output record b->p[start..b->len), one JSON object and "\n" as the
 * emb_out_* functions write it, is rewritten in place with only the
 * selected members, each copied byte for byte in its order.  -1 (err
 * set, the record left as it was) when it is not such an object.
 * F: borrowed.
 */
int emb_fields_apply(emb_fields *f, emb_buf *b, size_t start, emb_err *err);

#endif
