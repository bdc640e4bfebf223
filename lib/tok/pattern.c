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
 *  - PCRE2's Unicode tables can be older than the ones the rest of the
 *    tokenizer (utf8proc) and Hugging Face's Oniguruma use (Debian 12:
 *    PCRE2 10.42 has Unicode 14, utf8proc 2.8 and Oniguruma 6.9.8
 *    Unicode 15, which added CJK Extension H, Kawi, Nag Mundari...).  So
 *    every general-category property \p{X} of a pattern is widened by the
 *    code points utf8proc puts in X and PCRE2 does not (gc_extend: found
 *    once per process by matching \P{X} over utf8proc's members of X).
 *    The other way round (PCRE2 newer than utf8proc) is not corrected;
 *    neither are script properties (\p{Han}) nor \P{X} inside a class.
 */
#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
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
	                (long long)n * TK_REGEX_BUDGET_NS_PER_CP : 1LL << 50;

	budget.deadline = now ? now + TK_REGEX_BUDGET_SCALE *
	                  (TK_REGEX_BUDGET_MS * 1000000LL + per) : 0;
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

/* copy P[*I] to R + O (a bracket class's opening "[^" or "[]" whole,
 * *I moved past it), tracking whether a class is open; the new O */
static size_t copy_char(char *r, size_t o, const char *p, size_t n,
                        size_t *i, int *in_class)
{
	if (p[*i] == '[' && !*in_class) {
		*in_class = 1;
		r[o++] = p[*i];
		if (*i + 1 < n && p[*i + 1] == '^')
			r[o++] = p[++*i];
		if (*i + 1 < n && p[*i + 1] == ']')
			r[o++] = p[++*i];
		return o;
	}
	if (p[*i] == ']' && *in_class)
		*in_class = 0;
	r[o++] = p[*i];
	return o;
}

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
		o = copy_char(r, o, p, n, &i, &in_class);
	}
	r[o] = 0;
	return r;
}

/* the general categories a pattern may name, as \p{X} (the C ones,
 * mostly unassigned or private code points, are left alone) */
static const char *const gc_names[] = {
	"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me",
	"N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
	"S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", NULL
};
#define GC_N (sizeof(gc_names) / sizeof(gc_names[0]) - 1)
/* per name, found on first use and kept for the process: "\x{A}-\x{B}..."
 * (owned by this table) or NULL when PCRE2 and utf8proc agree */
static char *gc_extra[GC_N];
static unsigned char gc_done[GC_N];
static pthread_mutex_t gc_lock = PTHREAD_MUTEX_INITIALIZER;

/* utf8proc's general category of every code point below GC_TOP
 * (UTF8PROC_CATEGORY_*), made with the first scan (new; kept for the
 * process), and the names of those categories, in utf8proc's order.
 * Planes 4 to 16 are left out: nothing there is assigned (planes 4-13)
 * but tags, variation selectors (plane 14, in no letter or number
 * category that changed) and private use */
#define GC_TOP 0x40000
static unsigned char *gc_cat;
static const char gc_cat_name[30][3] = {
	"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
	"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
	"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"
};

static int gc_member(const char *name, unsigned char cat)
{
	const char *c = cat < 30 ? gc_cat_name[cat] : "Cn";

	return c[0] == name[0] && (!name[1] || c[1] == name[1]);
}

/* append "\x{LO}-\x{HI}" to *OUT (LEN, CAP); -1 when out of memory */
static int range_push(char **out, size_t *len, size_t *cap, uint32_t lo,
                      uint32_t hi)
{
	char r[40];
	int m = snprintf(r, sizeof(r), "\\x{%x}-\\x{%x}", lo, hi);

	if (*len + (size_t)m + 1 > *cap) {
		size_t c = 2 * *cap + 256;
		char *t = realloc(*out, c);
		if (!t)
			return -1;
		*out = t;
		*cap = c;
	}
	memcpy(*out + *len, r, (size_t)m + 1);
	*len += (size_t)m;
	return 0;
}

/* the code points of utf8proc's general category NAME that PCRE2's
 * \p{NAME} leaves out, as ranges (new string; NULL when there are none
 * or on failure); SUBJ: scratch for GC_TOP code points */
static char *gc_scan(const char *name, uint32_t *subj)
{
	char pat[16], *out = NULL;
	unsigned char want[30];
	size_t n = 0, len = 0, cap = 0;
	uint32_t p32[16], lo = 0, hi = 0;
	int ec, have = 0, bad = 0;
	PCRE2_SIZE eo, at = 0;
	pcre2_code *re;
	pcre2_match_data *md;

	if (!gc_cat && !(gc_cat = calloc(GC_TOP, 1)))
		return NULL;
	if (!gc_cat[0x41]) /* 'A' is Lu: not made yet */
		for (int32_t cp = 0; cp < GC_TOP; cp++)
			gc_cat[cp] = (unsigned char)utf8proc_category(cp);
	for (int k = 0; k < 30; k++)
		want[k] = (unsigned char)gc_member(name, (unsigned char)k);
	for (int32_t cp = 0; cp < GC_TOP; cp++)
		if (gc_cat[cp] < 30 && want[gc_cat[cp]] && (cp < 0xd800 || cp > 0xdfff))
			subj[n++] = (uint32_t)cp;
	/* a maximal run of members from AT (anchored, possessive): one call
	 * per non-member, the run checked in PCRE2's own tight loop */
	snprintf(pat, sizeof(pat), "\\p{%s}*+", name);
	for (size_t i = 0; i < sizeof(pat); i++)
		p32[i] = (unsigned char)pat[i];
	re = pcre2_compile(p32, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP |
	                   PCRE2_ANCHORED, &ec, &eo, NULL);
	if (!re)
		return NULL;
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	md = pcre2_match_data_create_from_pattern(re, NULL);
	while (md && !bad && at < n &&
	       pcre2_match(re, subj, n, at, PCRE2_NO_UTF_CHECK, md, NULL) > 0) {
		PCRE2_SIZE e = pcre2_get_ovector_pointer(md)[1];
		uint32_t c;
		if (e >= n)
			break;
		c = subj[e];
		at = e + 1;
		if (have && c == hi + 1) {
			hi = c;
			continue;
		}
		if (have)
			bad = range_push(&out, &len, &cap, lo, hi) < 0;
		lo = hi = c;
		have = 1;
	}
	if (have && !bad)
		bad = range_push(&out, &len, &cap, lo, hi) < 0;
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	if (bad) {
		free(out);
		return NULL;
	}
	return out;
}

/* the extra ranges of \p{NAME} (NAME: LEN bytes), "" when none */
static const char *gc_extra_of(const char *name, size_t len)
{
	const char *r = "";

	for (size_t k = 0; k < GC_N; k++) {
		if (strlen(gc_names[k]) != len || memcmp(gc_names[k], name, len))
			continue;
		pthread_mutex_lock(&gc_lock);
		if (!gc_done[k]) {
			uint32_t *subj = malloc(sizeof(*subj) * GC_TOP);
			if (subj)
				gc_extra[k] = gc_scan(gc_names[k], subj);
			free(subj);
			gc_done[k] = 1;
		}
		if (gc_extra[k])
			r = gc_extra[k];
		pthread_mutex_unlock(&gc_lock);
		break;
	}
	return r;
}

/* P with every \p{X} (X a general category, or \pX) widened by X's
 * extra ranges: inside a class appended, outside wrapped in one
 * ([\p{X}...], \P{X} as [^\p{X}...]); new string, NULL when out of
 * memory */
static char *gc_extend(const char *p)
{
	size_t n = strlen(p), o = 0, cap = n + 1;
	char *r = malloc(cap);
	int in_class = 0;

	for (size_t i = 0; r && i < n; i++) {
		const char *name = NULL, *extra = "";
		size_t nl = 0, skip = 0;
		if (p[i] == '\\' && i + 1 < n && (p[i + 1] == 'p' || p[i + 1] == 'P')) {
			if (i + 2 < n && p[i + 2] == '{') {
				const char *e = strchr(p + i + 3, '}');
				if (e) {
					name = p + i + 3;
					nl = (size_t)(e - name);
					skip = nl + 4;
				}
			} else if (i + 2 < n) {
				name = p + i + 2;
				nl = 1;
				skip = 3;
			}
			if (name)
				extra = gc_extra_of(name, nl);
		}
		if (*extra && !(in_class && p[i + 1] == 'P')) {
			size_t need = o + strlen(extra) + skip + 8 + (n - i);
			if (need > cap) {
				char *t = realloc(r, cap = 2 * need);
				if (!t) {
					free(r);
					return NULL;
				}
				r = t;
			}
			if (!in_class) {
				r[o++] = '[';
				if (p[i + 1] == 'P')
					r[o++] = '^';
			}
			o += (size_t)sprintf(r + o, "\\p{%.*s}%s", (int)nl, name, extra);
			if (!in_class)
				r[o++] = ']';
			i += skip - 1;
			continue;
		}
		if (o + 3 > cap) {
			char *t = realloc(r, cap *= 2);
			if (!t) {
				free(r);
				return NULL;
			}
			r = t;
		}
		if (p[i] == '\\' && i + 1 < n) {
			r[o++] = p[i++];
			r[o++] = p[i];
			continue;
		}
		o = copy_char(r, o, p, n, &i, &in_class);
	}
	if (r)
		r[o] = 0;
	return r;
}

static int regex_compile(tk_regex **out, const char *pat, const char *file,
                         const char *field, emb_err *err)
{
	char *p0 = onig_to_pcre(pat), *p = p0 ? gc_extend(p0) : NULL;
	uint32_t *c;
	size_t n;
	int ec;
	PCRE2_SIZE eo;
	tk_regex *re;

	*out = NULL;
	free(p0);
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
