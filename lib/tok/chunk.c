/*
 * tok/chunk.c - windows over a document's content tokens.
 *
 * A document's content tokens c[0..L) are its full, untruncated encoding
 * without the special tokens the post-processor adds around it (and
 * without a prompt's tokens).  Windows of W tokens overlapping by K
 * (0 <= K < W): window j covers c[j(W-K) .. min(j(W-K)+W, L)); the last
 * window is the first whose end reaches L, and a document with L <= W
 * (the empty one included) is one window.  Each window is encoded as the
 * document's leading tokens (prefix specials, then the prompt's tokens)
 * + its content tokens + the suffix specials.
 */
#include <stdlib.h>
#include <string.h>

#include "tok/tok.h"

int emb_chunk_check(long long w, long long k, emb_err *err)
{
	if (w < 1)
		return emb_err_set(err, "--chunk must be a positive number of tokens, not %lld",
		                   w);
	if (k < 0 || k >= w)
		return emb_err_set(err, "--overlap %lld must be at least 0 and less than --chunk %lld",
		                   k, w);
	return 0;
}

size_t emb_chunk_count(size_t len, size_t w, size_t k)
{
	size_t step;

	if (w == 0 || k >= w)
		return 0;
	if (len <= w)
		return 1;
	step = w - k;
	/* windows start at 0, step, 2 step, ...; the last one starts at the
	 * first multiple of step with start + w >= len */
	return 1 + (len - w + step - 1) / step;
}

void emb_chunk_window(size_t *start, size_t *end, size_t j, size_t len,
                      size_t w, size_t k)
{
	size_t s = j * (w - k);

	if (s > len)
		s = len;
	*start = s;
	*end = len - s < w ? len : s + w;
}

int emb_chunk_layout_of(emb_chunk_layout *lay, const emb_encoding *enc,
                        size_t prompt_cp, emb_err *err)
{
	size_t n = enc->len, lead = 0, trail = 0, i;

	while (lead < n && enc->special[lead])
		lead++;
	/* the prompt's tokens: those that end within the prompt's code
	 * points (a token that straddles the boundary is the text's) */
	while (prompt_cp > 0 && lead < n && !enc->special[lead] &&
	       enc->offsets[2 * lead + 1] >= 0 &&
	       (size_t)enc->offsets[2 * lead + 1] <= prompt_cp)
		lead++;
	while (trail < n - lead && enc->special[n - 1 - trail])
		trail++;
	for (i = lead; i < n - trail; i++)
		if (enc->special[i])
			return emb_err_set(err, "a special token at position %zu inside the text: cannot cut it into windows",
			                   i);
	lay->lead = lead;
	lay->len = n - lead - trail;
	lay->trail = trail;
	return 0;
}

/* out->len = 0 and room for n tokens */
static int reserve(emb_encoding *out, size_t n)
{
	if (n + 1 > out->cap) {
		size_t cap = n + 1;
		int32_t *p;
		uint8_t *s;
		if (!(p = realloc(out->ids, cap * sizeof(*p))))
			return -1;
		out->ids = p;
		if (!(p = realloc(out->type_ids, cap * sizeof(*p))))
			return -1;
		out->type_ids = p;
		if (!(p = realloc(out->offsets, 2 * cap * sizeof(*p))))
			return -1;
		out->offsets = p;
		if (!(s = realloc(out->special, cap)))
			return -1;
		out->special = s;
		out->cap = cap;
	}
	out->len = 0;
	out->truncated = 0;
	return 0;
}

static void put(emb_encoding *out, const emb_encoding *enc, size_t i,
                size_t prompt_cp)
{
	size_t k = out->len++;
	int32_t a = enc->offsets[2 * i], e = enc->offsets[2 * i + 1];

	out->ids[k] = enc->ids[i];
	out->type_ids[k] = enc->type_ids[i];
	out->special[k] = enc->special[i];
	if (!enc->special[i] && a >= 0 && e >= 0) {
		/* code points of the text, after the prompt */
		a = (size_t)a >= prompt_cp ? a - (int32_t)prompt_cp : 0;
		e = (size_t)e >= prompt_cp ? e - (int32_t)prompt_cp : 0;
	}
	out->offsets[2 * k] = a;
	out->offsets[2 * k + 1] = e;
}

int emb_chunk_encoding(emb_encoding *out, const emb_encoding *enc,
                       const emb_chunk_layout *lay, size_t start,
                       size_t end, size_t prompt_cp, emb_err *err)
{
	size_t i;

	if (start > end || end > lay->len)
		return emb_err_set(err, "window [%zu, %zu) outside the %zu content tokens",
		                   start, end, lay->len);
	if (reserve(out, lay->lead + (end - start) + lay->trail) < 0)
		return emb_err_set(err, "out of memory");
	for (i = 0; i < lay->lead; i++)
		put(out, enc, i, prompt_cp);
	for (i = lay->lead + start; i < lay->lead + end; i++)
		put(out, enc, i, prompt_cp);
	for (i = enc->len - lay->trail; i < enc->len; i++)
		put(out, enc, i, prompt_cp);
	return 0;
}

void emb_chunk_span(size_t span[2], const emb_encoding *enc,
                    const emb_chunk_layout *lay, size_t start, size_t end,
                    size_t prompt_cp)
{
	int32_t a, e;

	span[0] = span[1] = 0;
	if (start >= end || end > lay->len)
		return;
	a = enc->offsets[2 * (lay->lead + start)];
	e = enc->offsets[2 * (lay->lead + end - 1) + 1];
	span[0] = a >= 0 && (size_t)a > prompt_cp ? (size_t)a - prompt_cp : 0;
	span[1] = e >= 0 && (size_t)e > prompt_cp ? (size_t)e - prompt_cp : 0;
	if (span[1] < span[0])
		span[1] = span[0];
}
