/*
 * acmatch.h - the longest of a set of code point patterns starting at
 * each position of a text, all positions in one linear pass (acmatch.c).
 * Private to lib/tok/.
 */
#ifndef TK_ACMATCH_H
#define TK_ACMATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct tk_acm tk_acm;

/* hits of one scan: (position, pattern index) pairs in v[2k], v[2k+1],
 * positions decreasing, only the positions where a pattern starts */
typedef struct tk_acm_hits {
	uint32_t *v;
	size_t n, cap;
} tk_acm_hits;

/* *OUT = a new automaton for the NPAT patterns PAT[k] (LEN[k] code
 * points; borrowed, not kept); of equal patterns the first wins; empty
 * ones never match.  0, or -1 (out of memory, or a value over U+1FFFFF) */
int tk_acm_build(tk_acm **out, const uint32_t *const *pat, const size_t *len,
                 size_t npat);
void tk_acm_free(tk_acm *a);
/* H (borrowed, reused) = for every position i of S[0, N) where one
 * starts, the longest pattern starting at i.  A NULL automaton has no
 * hits.  Time O(N).  0, or -1 (out of memory) */
int tk_acm_scan(const tk_acm *a, const uint32_t *s, size_t n, tk_acm_hits *h);
void tk_acm_hits_release(tk_acm_hits *h);

#endif /* TK_ACMATCH_H */
