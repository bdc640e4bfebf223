/*
 * mask.h - attention_mask in records of input_ids (mask.c)
 */
#ifndef EMB_MASK_H
#define EMB_MASK_H

#include <stddef.h>
#include "io/io.h"

/* A record's attention_mask (when present) for its N input_ids: HF-style
 * right padding, 1s then 0s, is honoured by dropping the padded
 * positions before the forward (what HF computes for the real tokens:
 * positions count from the start either way), *N becomes the count of
 * 1s.  Any other mask (a 0 before a 1, values other than 0 and 1, a
 * length other than N, no 1 at all) is an error of the record.
 * REC borrowed.  0, or -1 with ERR set. */
int emb_record_apply_mask(const emb_record *rec, size_t *n, emb_err *err);

#endif /* EMB_MASK_H */
