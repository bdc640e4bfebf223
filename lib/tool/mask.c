/*
 * mask.c - attention_mask in records of input_ids (mask.h).  HF models
 * take padded batches with a mask; emb runs one sequence at a time, so
 * the padding is simply not fed: the same vectors for the real tokens
 * as HF's, for right padding.  A mask with holes or left padding would
 * need position ids emb does not take: refused, not guessed.
 */
#include <stdlib.h>
#include "tool/mask.h"

int emb_record_apply_mask(const emb_record *rec, size_t *n, emb_err *err)
{
	int32_t *m = NULL;
	size_t nm = 0, ones = 0, i;
	int rc = -1;

	if (!emb_record_has(rec, "attention_mask"))
		return 0;
	if (emb_record_get_int32s(rec, "attention_mask", &m, &nm, err) < 0)
		return -1;
	if (nm != *n) {
		emb_err_set(err, "field 'attention_mask' has %zu values, "
		            "'input_ids' has %zu", nm, *n);
		goto out;
	}
	for (i = 0; i < nm; i++) {
		if (m[i] != 0 && m[i] != 1) {
			emb_err_set(err, "field 'attention_mask': %d at position "
			            "%zu (values are 0 or 1)", (int)m[i], i);
			goto out;
		}
		if (m[i] && ones != i) {
			emb_err_set(err, "field 'attention_mask': 1 at position "
			            "%zu after a 0 (only right padding, 1s then "
			            "0s, is supported)", i);
			goto out;
		}
		ones += (size_t)m[i];
	}
	if (!ones) {
		emb_err_set(err, "field 'attention_mask' has no 1 (no token to "
		            "encode)");
		goto out;
	}
	*n = ones;
	rc = 0;
out:
	free(m);
	return rc;
}
