/*
 * fuzz_normalizer.c - normalizers on their own, growth above all: the
 * input is a normalizer's JSON (the first line) and a text (the rest).
 * When it parses and the text is UTF-8, the text is normalized with the
 * per-record bound the tokenizer sets (tk_norm_limit): it either fails
 * (the bound, a regex giving up) or gives at most that many code points,
 * each aligned inside the original text.  A Sequence over the step cap
 * must not parse.  Chained Replace a -> aa, a Replace by a long content
 * and thousands of Prepends are the seeds.
 */
#include "fuzz_tok.h"
#include "tok/tok-internal.h"

/* the leaves of a parsed normalizer */
static size_t steps(const tk_normalizer *n)
{
	size_t k = 0;

	if (n->type != TK_NORM_SEQUENCE)
		return 1;
	for (size_t i = 0; i < n->u.seq.n; i++)
		k += steps(&n->u.seq.v[i]);
	return k;
}

int FUZZ_ENTRY(normalizer)(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t jn = nl ? (size_t)(nl - data) : size;
	const char *text = nl ? (const char *)nl + 1 : "";
	size_t tn = nl ? size - jn - 1 : 0;
	json_error_t je;
	json_t *j = json_loadb((const char *)data, jn, 0, &je);
	tk_normalizer n;
	tk_str s = { 0 }, tmp = { 0 };
	emb_err err;
	long ncp;

	if (!j)
		return 0;
	if (tk_normalizer_parse(&n, j, "fuzz", "normalizer", 0, &err) < 0) {
		FUZZ_CHECK(err.msg[0]);
		fuzz_note("parse", err.msg);
		tk_normalizer_release(&n);
		json_decref(j);
		return 0;
	}
	json_decref(j);
	FUZZ_CHECK(steps(&n) <= TK_NORM_MAX_STEPS);
	ncp = fuzz_utf8_count((const uint8_t *)text, tn);
	if (ncp >= 0 && tk_utf8_decode(&s, text, tn, &err) == 0) {
		size_t limit = tk_norm_limit(s.n);
		FUZZ_CHECK((long)s.n == ncp);
		s.max = tmp.max = limit;
		if (tk_normalize(&n, &s, &tmp) == 0) {
			FUZZ_CHECK(s.n <= limit);
			for (size_t i = 0; i < s.n; i++)
				FUZZ_CHECK(s.o[2 * i] >= 0 &&
				           s.o[2 * i] <= s.o[2 * i + 1] &&
				           s.o[2 * i + 1] <= ncp);
			fuzz_note("normalize", "ok");
		} else {
			fuzz_note("normalize", s.over || tmp.over ?
			          "over the bound" : "failed");
		}
	}
	tk_str_release(&s);
	tk_str_release(&tmp);
	tk_normalizer_release(&n);
	return 0;
}
