/*
 * pattern.c - the Split and Replace patterns of tokenizer.json (string
 * or regex) and splitting by their matches, as Hugging Face tokenizers
 * 0.23.
 *
 * Regular expressions.  HF compiles its patterns with Oniguruma.  We
 * use two engines, chosen by measurement:
 *  - the GPT-2 pattern of ByteLevel (and the same pattern in a Split),
 *    the hot path of every byte-level model, is a hand-written scanner
 *    (tk_gpt2_find): on the corpus it splits 5x (short texts) to 20x
 *    (passages) faster than PCRE2 with JIT, with identical splits
 *    (bench/pretok-regex.c, run by scripts/bench-tokenize; numbers in
 *    bench/RESULTS.md), and it shares its \s, \p{L}, \p{N} predicates
 *    with the rest of the tokenizer;
 *  - any other Split or Replace regex (Qwen, Llama 3, custom ones) goes
 *    to PCRE2 (32-bit code units: it matches our code point arrays in
 *    place; UTF + UCP; JIT when available).  Writing a regex engine
 *    for arbitrary patterns is not worth it; PCRE2 is a Debian package
 *    (libpcre2-dev) kept by its upstream for decades.  Oniguruma's \s
 *    also matches U+0085 and its \w also matches marks, so patterns are
 *    rewritten (\s -> [\s\x{85}], \w -> the class of tk_is_word) to
 *    keep Oniguruma's meaning.
 */
#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"

struct tk_regex {
	pcre2_code *code;
};

/* the regex budget of the text this thread is tokenizing: thread CPU
 * time, so other threads and a busy machine do not spend it */
static _Thread_local struct {
	long long deadline;     /* ns of thread CPU time; 0: none */
	unsigned calls;
	int over;
} budget;

static long long cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void tk_regex_budget_start(size_t n)
{
	long long now = cpu_ns();
	long long per = n < (size_t)1 << 40 ?
	                (long long)n * TK_REGEX_BUDGET_NS_PER_CP : 1LL << 60;

	budget.deadline = now ? now + TK_REGEX_BUDGET_MS * 1000000LL + per : 0;
	budget.calls = 0;
	budget.over = 0;
}

int tk_regex_over_budget(void)
{
	return budget.over;
}

/* after a call that looked at SCANNED characters: spent?  The clock is
 * read every 16 calls, and after every call that went past many
 * characters before its match (the costly ones: a call is bounded only
 * by the match limit) */
static int budget_spent(size_t scanned)
{
	if (!budget.deadline || ((++budget.calls & 15) && scanned < 64))
		return budget.over;
	if (cpu_ns() > budget.deadline)
		budget.over = 1;
	return budget.over;
}

static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
	"\\s+(?!\\S)|\\s+";

/* regexes whose matches always end between an ASCII letter or digit
 * and a space, and start again there (' ?\p{L}+', '[^\r\n\p{L}\p{N}]?
 * \p{L}+', '\p{N}' and the like stop at the space; nothing else takes
 * a letter or digit): cl100k's (GPT-4, Qwen2) and Qwen3's */
static const char *const word_patterns[] = {
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
	"\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
	"\\s+(?!\\S)|\\s+",
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
	"\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
	"\\s+(?!\\S)|\\s+",
	NULL,
};

/* ------------------------------------------------------------------ */
/* the GPT-2 pattern, by hand:                                         */
/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|      */
/* \s+(?!\S)|\s+                                                       */

static int is_other(uint32_t c)
{
	return !tk_is_whitespace(c) && !tk_is_letter(c) && !tk_is_number(c);
}

int tk_gpt2_find(tk_spans *out, const uint32_t *c, size_t a, size_t b)
{
	size_t i = a;

	while (i < b) {
		size_t j = i, k;
		uint32_t x = c[i];
		if (x == '\'' && i + 1 < b) {
			uint32_t y = c[i + 1];
			if (y == 's' || y == 't' || y == 'm' || y == 'd') {
				j = i + 2;
				goto emit;
			}
			if (i + 2 < b && ((y == 'r' && c[i + 2] == 'e') ||
			                  (y == 'v' && c[i + 2] == 'e') ||
			                  (y == 'l' && c[i + 2] == 'l'))) {
				j = i + 3;
				goto emit;
			}
		}
		k = i + (x == ' ' && i + 1 < b);
		if (k < b && !tk_is_whitespace(c[k])) {
			int (*cls)(uint32_t) = tk_is_letter(c[k]) ? tk_is_letter :
			                       tk_is_number(c[k]) ? tk_is_number : is_other;
			/* a lone ' ' before a non-space is matched with it */
			j = k;
			while (j < b && cls(c[j]))
				j++;
			goto emit;
		}
		/* whitespace run [i, e) */
		for (j = i; j < b && tk_is_whitespace(c[j]); j++)
			;
		if (j < b && j - i >= 2)
			j--;    /* \s+(?!\S): leave the last one to the word */
emit:
		if (tk_spans_push(out, i, j) < 0)
			return -1;
		i = j;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* patterns                                                            */

/* Oniguruma's \s and \w in PCRE2 terms (see the top comment) */
#define W_CLASS "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200c}\\x{200d}" \
	"\\x{24b6}-\\x{24e9}\\x{1f130}-\\x{1f149}\\x{1f150}-\\x{1f169}" \
	"\\x{1f170}-\\x{1f189}"

static char *onig_to_pcre(const char *p)
{
	size_t n = strlen(p), i, o = 0;
	/* the longest replacement (W_CLASS in brackets) for 2 characters */
	size_t most = sizeof("[^" W_CLASS "]");
	char *r = n < SIZE_MAX / most ? malloc(n * most / 2 + 2) : NULL;
	int in_class = 0;

	if (!r)
		return NULL;
	for (i = 0; i < n; i++) {
		const char *add = NULL;
		if (p[i] == '\\' && i + 1 < n) {
			char e = p[i + 1];
			if (e == 's')
				add = in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
			else if (e == 'S' && !in_class)
				add = "[^\\s\\x{85}]";
			else if (e == 'w')
				add = in_class ? W_CLASS : "[" W_CLASS "]";
			else if (e == 'W' && !in_class)
				add = "[^" W_CLASS "]";
			if (add) {
				memcpy(r + o, add, strlen(add));
				o += strlen(add);
			} else {
				r[o++] = p[i];
				r[o++] = e;
			}
			i++;
			continue;
		}
		if (p[i] == '[' && !in_class) {
			in_class = 1;
			r[o++] = p[i];
			if (i + 1 < n && p[i + 1] == '^')
				r[o++] = p[++i];
			if (i + 1 < n && p[i + 1] == ']')
				r[o++] = p[++i];
			continue;
		}
		if (p[i] == ']' && in_class)
			in_class = 0;
		r[o++] = p[i];
	}
	r[o] = 0;
	return r;
}

static int regex_compile(tk_regex **out, const char *pat, const char *file,
                         const char *field, emb_err *err)
{
	char *p = onig_to_pcre(pat);
	uint32_t *c;
	size_t n;
	int ec;
	PCRE2_SIZE eo;
	tk_regex *re;

	*out = NULL;
	if (!p)
		return emb_err_set(err, "out of memory");
	c = tk_utf8_to_cps(p, strlen(p), &n);
	free(p);
	if (!c)
		return emb_err_set(err, "%s: field '%s' is not valid UTF-8",
		                   file, field);
	re = calloc(1, sizeof(*re));
	if (!re) {
		free(c);
		return emb_err_set(err, "out of memory");
	}
	re->code = pcre2_compile(c, n, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
	free(c);
	if (!re->code) {
		PCRE2_UCHAR msg[256];
		char m8[256];
		size_t i;
		pcre2_get_error_message(ec, msg, 256);
		for (i = 0; i < 255 && msg[i]; i++)
			m8[i] = msg[i] < 0x80 ? (char)msg[i] : '?';
		m8[i] = 0;
		free(re);
		return emb_err_set(err, "%s: field '%s': regex '%.80s' is not "
		                   "supported: %s", file, field, pat, m8);
	}
	pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
	*out = re;
	return 0;
}

static void regex_free(tk_regex *re)
{
	if (re) {
		pcre2_code_free(re->code);
		free(re);
	}
}

/* {"String": s} or {"Regex": r} */
int tk_pattern_parse(tk_pattern *out, const json_t *j, const char *file,
                     const char *field, emb_err *err)
{
	json_t *s = json_object_get(j, "String"), *r = json_object_get(j, "Regex");
	char f[160];

	memset(out, 0, sizeof(*out));
	if (json_is_string(s)) {
		out->lit = tk_utf8_to_cps(json_string_value(s),
		                          json_string_length(s), &out->n);
		if (!out->lit)
			return emb_err_set(err, "out of memory");
		return 0;
	}
	if (json_is_string(r)) {
		if (!strcmp(json_string_value(r), gpt2_pattern)) {
			out->gpt2 = out->word_split = 1;
			return 0;
		}
		for (int k = 0; word_patterns[k]; k++)
			if (!strcmp(json_string_value(r), word_patterns[k]))
				out->word_split = 1;
		snprintf(f, sizeof(f), "%s.pattern.Regex", field);
		return regex_compile(&out->re, json_string_value(r), file, f, err);
	}
	return emb_err_set(err, "%s: field '%s.pattern' must be {\"String\": "
	                   "...} or {\"Regex\": ...}", file, field);
}

void tk_pattern_release(tk_pattern *p)
{
	free(p->lit);
	regex_free(p->re);
	memset(p, 0, sizeof(*p));
}

int tk_pattern_find(const tk_pattern *p, tk_spans *out, const uint32_t *c,
                    size_t a, size_t b)
{
	if (p->gpt2)
		return tk_gpt2_find(out, c, a, b);
	if (p->lit) {
		size_t i = a;
		if (!p->n)
			return 0;
		while (i + p->n <= b) {
			if (!memcmp(c + i, p->lit, p->n * sizeof(*c))) {
				if (tk_spans_push(out, i, i + p->n) < 0)
					return -1;
				i += p->n;
			} else {
				i++;
			}
		}
		return 0;
	}
	if (p->re) {
		pcre2_match_data *md =
			pcre2_match_data_create_from_pattern(p->re->code, NULL);
		size_t pos = 0, len = b - a, last = (size_t)-1;
		uint32_t opts = 0;

		if (!md)
			return -1;
		/* as Oniguruma's find_iter: empty matches count, except one
		 * right where the previous match ended; after an empty match
		 * the search goes on one character further.  PCRE2 checks
		 * the subject from the start offset to its end on every call:
		 * once is enough (else n matches cost O(n^2)) */
		while (pos <= len) {
			int rc = pcre2_match(p->re->code, c + a, len, pos, opts, md,
			                     NULL);
			PCRE2_SIZE *ov;

			opts = PCRE2_NO_UTF_CHECK;
			if (rc == PCRE2_ERROR_NOMATCH)
				break;
			if (rc < 0 || budget_spent(rc > 0 ?
			    pcre2_get_ovector_pointer(md)[0] - pos : 0)) {
				pcre2_match_data_free(md);
				return -1;
			}
			ov = pcre2_get_ovector_pointer(md);
			if (ov[1] < ov[0] || ov[1] > len)
				break;  /* \K tricks: not supported */
			if (ov[1] == ov[0] && ov[0] == last) {
				pos = ov[0] + 1;
				continue;
			}
			if (tk_spans_push(out, a + ov[0], a + ov[1]) < 0) {
				pcre2_match_data_free(md);
				return -1;
			}
			last = ov[1];
			pos = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
		}
		pcre2_match_data_free(md);
		return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* splitting by matches (NormalizedString::split)                      */

int tk_split_by(tk_spans *out, size_t a, size_t b, const tk_spans *m,
                int behavior, int invert)
{
	size_t i, pos = a, n0 = out->n;
	int prev = 0;
	/* walk the alternating (range, is_match) list */
#define PIECE(x, y, ismatch) do { \
	size_t x_ = (x), y_ = (y); int im_ = (ismatch) ^ invert; \
	switch (behavior) { \
	case TK_SPLIT_REMOVED: \
		if (!im_ && tk_spans_push(out, x_, y_) < 0) return -1; \
		break; \
	case TK_SPLIT_ISOLATED: \
		if (tk_spans_push(out, x_, y_) < 0) return -1; \
		break; \
	case TK_SPLIT_MERGED_PREV: \
		if (im_ && !prev && out->n > n0) out->v[out->n - 1].b = y_; \
		else if (tk_spans_push(out, x_, y_) < 0) return -1; \
		break; \
	case TK_SPLIT_MERGED_NEXT: \
		if (prev && !im_ && out->n > n0) out->v[out->n - 1].b = y_; \
		else if (tk_spans_push(out, x_, y_) < 0) return -1; \
		break; \
	case TK_SPLIT_CONTIGUOUS: \
		if (im_ == prev && out->n > n0) out->v[out->n - 1].b = y_; \
		else if (tk_spans_push(out, x_, y_) < 0) return -1; \
		break; \
	} \
	prev = im_; } while (0)
	if (a == b)
		return 0;
	for (i = 0; i < m->n; i++) {
		if (m->v[i].a > pos)
			PIECE(pos, m->v[i].a, 0);
		PIECE(m->v[i].a, m->v[i].b, 1);
		pos = m->v[i].b;
	}
	if (pos < b)
		PIECE(pos, b, 0);
#undef PIECE
	/* drop empty pieces */
	{
		size_t k, w = n0;
		for (k = n0; k < out->n; k++)
			if (out->v[k].b > out->v[k].a)
				out->v[w++] = out->v[k];
		out->n = w;
	}
	return 0;
}

/*
 * MergedWithNext in HF folds from the right: a match that is not
 * preceded (on its right) by a match starts the piece to its right.
 * Going left to right, that is: a non-match directly after a match
 * joins it.  Two matches in a row stay apart, as in HF.
 */
