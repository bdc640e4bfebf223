/*
 * pretok.c - the pre-tokenizers of byte-level BPE and SentencePiece
 * tokenizers (ByteLevel, Metaspace, Whitespace, Punctuation, Digits,
 * Split), Split/Replace patterns, as Hugging Face tokenizers 0.23.
 *
 * Regular expressions.  HF compiles its patterns with Oniguruma.  We
 * use two engines, chosen by measurement:
 *  - the GPT-2 pattern of ByteLevel (and the same pattern in a Split),
 *    the hot path of every byte-level model, is a hand-written scanner
 *    (gpt2_find): on the corpus it splits 5x (short texts) to 20x
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
#include <utf8proc.h>
#include "tok/tok-internal.h"

struct tk_regex {
	pcre2_code *code;
};

static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
	"\\s+(?!\\S)|\\s+";

/* ------------------------------------------------------------------ */
/* character classes                                                   */

/*
 * HF's regex engine (Oniguruma) and Rust's char methods know Unicode 16
 * (and some 17) characters that utf8proc 2.8 (Unicode 15) leaves
 * unassigned.  These tables, measured on tokenizers 0.23.2 by sweeping
 * every code point U+00A0..U+3FFFF through its ByteLevel, Digits and
 * Whitespace pre-tokenizers (bench/unicode-sweep.js), add them.
 */
/* \p{L} of the regex engine (Oniguruma) beyond utf8proc: Unicode 16 letters */
static const uint32_t hf_extra_L[][2] = {
	{0x1C89, 0x1C8A}, {0xA7CB, 0xA7CD}, {0xA7DA, 0xA7DC}, {0x105C0, 0x105F3},
	{0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4},
	{0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E},
	{0x11390, 0x113B5}, {0x113B7, 0x113B7}, {0x113D1, 0x113D1},
	{0x113D3, 0x113D3}, {0x11BC0, 0x11BE0}, {0x13460, 0x143FA},
	{0x16100, 0x1611D}, {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF},
	{0x1E5D0, 0x1E5ED}, {0x1E5F0, 0x1E5F0}, {0x2EBF0, 0x2EE5D},
};
/* \p{N} of the regex engine beyond utf8proc */
static const uint32_t hf_extra_N[][2] = {
	{0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9},
	{0x16130, 0x16139}, {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9},
	{0x1E5F1, 0x1E5FA},
};
/* Rust char::is_numeric (Digits) beyond utf8proc */
static const uint32_t hf_extra_numeric[][2] = {
	{0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9},
	{0x11DE0, 0x11DE9}, {0x16130, 0x16139}, {0x16D70, 0x16D79},
	{0x16FF4, 0x16FF6}, {0x1CCF0, 0x1CCF9}, {0x1E5F1, 0x1E5FA},
};
/* regex \\w (Whitespace pre-tokenizer) beyond tk_is_word's utf8proc classes */
static const uint32_t hf_extra_word[][2] = {
	{0x897, 0x897}, {0x1C89, 0x1C8A}, {0xA7CB, 0xA7CD}, {0xA7DA, 0xA7DC},
	{0x105C0, 0x105F3}, {0x10D40, 0x10D65}, {0x10D69, 0x10D6D},
	{0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x10EFC, 0x10EFC},
	{0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E},
	{0x11390, 0x113B5}, {0x113B7, 0x113C0}, {0x113C2, 0x113C2},
	{0x113C5, 0x113C5}, {0x113C7, 0x113CA}, {0x113CC, 0x113D3},
	{0x113E1, 0x113E2}, {0x116D0, 0x116E3}, {0x11BC0, 0x11BE0},
	{0x11BF0, 0x11BF9}, {0x11F5A, 0x11F5A}, {0x13460, 0x143FA},
	{0x16100, 0x16139}, {0x16D40, 0x16D6C}, {0x16D70, 0x16D79},
	{0x18CFF, 0x18CFF}, {0x1CCF0, 0x1CCF9}, {0x1E5D0, 0x1E5FA},
	{0x2EBF0, 0x2EE5D},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int in_table(const uint32_t (*r)[2], size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < r[mid][0])
			hi = mid;
		else if (c > r[mid][1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

static int cat_in(uint32_t c, int lo, int hi)
{
	int k = utf8proc_category((utf8proc_int32_t)c);

	return k >= lo && k <= hi;
}

static int is_L(uint32_t c)
{
	utf8proc_category_t k;

	if (c < 0x80)
		return (c | 32) >= 'a' && (c | 32) <= 'z';
	k = utf8proc_category((utf8proc_int32_t)c);
	if (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO)
		return 1;
	return k == UTF8PROC_CATEGORY_CN &&
	       in_table(hf_extra_L, NELEM(hf_extra_L), c);
}

static int is_N(uint32_t c)
{
	utf8proc_category_t k;

	if (c < 0x80)
		return c >= '0' && c <= '9';
	k = utf8proc_category((utf8proc_int32_t)c);
	if (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO)
		return 1;
	return k == UTF8PROC_CATEGORY_CN &&
	       in_table(hf_extra_N, NELEM(hf_extra_N), c);
}

/* regex \w (Oniguruma, Unicode): Alphabetic, marks, decimal digits,
 * connector punctuation, Join_Control (U+200C, U+200D).  Alphabetic is
 * the letters, letter numbers (Nl) and Other_Alphabetic, which outside
 * the marks holds only the circled and squared Latin letters below. */
int tk_is_word(uint32_t c)
{
	utf8proc_category_t k;

	if (c < 0x80)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		       (c >= 'A' && c <= 'Z') || c == '_';
	k = utf8proc_category((utf8proc_int32_t)c);
	switch (k) {
	case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
	case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_PC:
		return 1;
	default:
		return c == 0x200c || c == 0x200d ||
		       (c >= 0x24b6 && c <= 0x24e9) ||
		       (c >= 0x1f130 && c <= 0x1f149) ||
		       (c >= 0x1f150 && c <= 0x1f169) ||
		       (c >= 0x1f170 && c <= 0x1f189) ||
		       in_table(hf_extra_word, NELEM(hf_extra_word), c);
	}
}

/* Rust char::is_numeric: Nd, Nl, No */
static int is_numeric(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	if (cat_in(c, UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NO))
		return 1;
	return in_table(hf_extra_numeric, NELEM(hf_extra_numeric), c);
}

/* ------------------------------------------------------------------ */
/* the GPT-2 pattern, by hand:                                         */
/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|      */
/* \s+(?!\S)|\s+                                                       */

static int is_other(uint32_t c)
{
	return !tk_is_whitespace(c) && !is_L(c) && !is_N(c);
}

static int gpt2_find(tk_spans *out, const uint32_t *c, size_t a, size_t b)
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
			int (*cls)(uint32_t) = is_L(c[k]) ? is_L :
			                       is_N(c[k]) ? is_N : is_other;
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

uint32_t *tk_utf8_to_cps(const char *s, size_t len, size_t *n)
{
	tk_str t = {0};
	uint32_t *c;

	if (tk_utf8_decode(&t, s, len, NULL) < 0) {
		tk_str_release(&t);
		return NULL;
	}
	c = malloc((t.n + 1) * sizeof(*c));
	if (c) {
		memcpy(c, t.c, t.n * sizeof(*c));
		c[t.n] = 0;
		*n = t.n;
	}
	tk_str_release(&t);
	return c;
}

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
			out->gpt2 = 1;
			return 0;
		}
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
		return gpt2_find(out, c, a, b);
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
			if (rc < 0) {
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

/* ------------------------------------------------------------------ */
/* ByteLevel                                                           */

static uint32_t byte_char[256];

static void byte_chars_init(void)
{
	int b, n = 0;

	if (byte_char['!'])
		return;
	for (b = 0; b < 256; b++) {
		if ((b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
		    (b >= 0xae && b <= 0xff))
			byte_char[b] = (uint32_t)b;
		else
			byte_char[b] = 256 + (uint32_t)n++;
	}
}

/* append to T piece [a, b) of S, with a prefix code point PRE (0: none)
 * aligned to the piece's first character */
static int put_piece(tk_str *t, const tk_str *s, size_t a, size_t b,
                     uint32_t pre)
{
	size_t i;

	if (tk_str_reserve(t, t->n + (b - a) + 1) < 0)
		return -1;
	if (pre && b > a)
		tk_str_put(t, pre, s->o[2 * a], s->o[2 * a + 1]);
	for (i = a; i < b; i++)
		tk_str_put(t, s->c[i], s->o[2 * i], s->o[2 * i + 1]);
	return 0;
}

static void swap_str(tk_str *a, tk_str *b)
{
	tk_str t = *a;
	*a = *b;
	*b = t;
}

static int pre_bytelevel(const tk_pretok *p, tk_spans *out, tk_str *s,
                         const tk_spans *in, tk_str *t)
{
	size_t k, i, j;
	int rc = -1;

	/* 1. prefix space, regex split: pieces of t (code points) */
	t->n = 0;
	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, ta = t->n;
		int pre = p->u.bl.add_prefix_space && b > a && s->c[a] != ' ';
		if (put_piece(t, s, a, b, pre ? ' ' : 0) < 0)
			goto out;
		if (!p->u.bl.use_regex) {
			if (t->n > ta && tk_spans_push(out, ta, t->n) < 0)
				goto out;
			continue;
		}
		if (gpt2_find(out, t->c, ta, t->n) < 0)
			goto out;
	}
	/* 2. every code point -> its UTF-8 bytes as byte characters */
	{
		size_t nb = 0;
		for (i = 0; i < t->n; i++)
			nb += t->c[i] < 0x80 ? 1 : t->c[i] < 0x800 ? 2 :
			      t->c[i] < 0x10000 ? 3 : 4;
		s->n = 0;
		if (tk_str_reserve(s, nb + 1) < 0)
			goto out;
	}
	{
		/* map old index -> new index as we go: pieces are in order */
		size_t pi = 0;
		for (i = 0; i < t->n; i++) {
			char u8[4];
			size_t n = tk_utf8_put(u8, t->c[i]);
			while (pi < out->n && out->v[pi].a == i) {
				out->v[pi].a = s->n;
				pi++;
			}
			for (j = 0; j < n; j++)
				tk_str_put(s, byte_char[(unsigned char)u8[j]],
				           t->o[2 * i], t->o[2 * i + 1]);
		}
		/* second pass for the ends: recompute from starts */
		for (pi = 0; pi < out->n; pi++) {
			size_t end = pi + 1 < out->n ? out->v[pi + 1].a : s->n;
			out->v[pi].b = end;
		}
	}
	rc = 0;
out:
	return rc;
}

/* ------------------------------------------------------------------ */
/* Metaspace                                                           */

static int pre_metaspace(const tk_pretok *p, tk_spans *out, tk_str *s,
                         const tk_spans *in, tk_str *t)
{
	size_t k, i;
	uint32_t r = p->u.meta.repl;

	t->n = 0;
	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, ta = t->n, start;
		int pre = 0;
		if (b == a)
			continue;
		if (s->c[a] != r && s->c[a] != ' ') {
			if (p->u.meta.scheme == TK_PREPEND_ALWAYS)
				pre = 1;
			else if (p->u.meta.scheme == TK_PREPEND_FIRST)
				pre = s->o[2 * a] == 0;
		}
		if (put_piece(t, s, a, b, pre ? r : 0) < 0)
			return -1;
		for (i = ta; i < t->n; i++)
			if (t->c[i] == ' ')
				t->c[i] = r;
		if (!p->u.meta.split) {
			if (tk_spans_push(out, ta, t->n) < 0)
				return -1;
			continue;
		}
		/* split on r, MergedWithNext: each r starts a piece */
		for (i = start = ta; i < t->n; i++) {
			if (t->c[i] == r && i > start) {
				if (tk_spans_push(out, start, i) < 0)
					return -1;
				start = i;
			}
		}
		if (t->n > start && tk_spans_push(out, start, t->n) < 0)
			return -1;
	}
	swap_str(s, t);
	return 0;
}

/* ------------------------------------------------------------------ */
/* character predicates: Whitespace, Punctuation, Digits               */

static int pre_whitespace(tk_spans *out, const tk_str *s, const tk_spans *in)
{
	size_t k, i;

	/* \w+|[^\w\s]+ kept, whitespace removed */
	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b;
		for (i = a; i < b;) {
			size_t j = i;
			if (tk_is_whitespace(s->c[i])) {
				i++;
				continue;
			}
			if (tk_is_word(s->c[i])) {
				while (j < b && tk_is_word(s->c[j]))
					j++;
			} else {
				while (j < b && !tk_is_word(s->c[j]) &&
				       !tk_is_whitespace(s->c[j]))
					j++;
			}
			if (tk_spans_push(out, i, j) < 0)
				return -1;
			i = j;
		}
	}
	return 0;
}

static int pre_charclass(tk_spans *out, const tk_str *s, const tk_spans *in,
                         int (*pred)(uint32_t), int behavior)
{
	size_t k, i;
	tk_spans m = {0};

	for (k = 0; k < in->n; k++) {
		m.n = 0;
		for (i = in->v[k].a; i < in->v[k].b; i++)
			if (pred(s->c[i]) && tk_spans_push(&m, i, i + 1) < 0)
				goto oom;
		if (tk_split_by(out, in->v[k].a, in->v[k].b, &m, behavior, 0) < 0)
			goto oom;
	}
	tk_spans_release(&m);
	return 0;
oom:
	tk_spans_release(&m);
	return -1;
}

static int pre_split(const tk_pretok *p, tk_spans *out, const tk_str *s,
                     const tk_spans *in)
{
	size_t k;
	tk_spans m = {0};

	for (k = 0; k < in->n; k++) {
		m.n = 0;
		if (tk_pattern_find(&p->u.split.pat, &m, s->c, in->v[k].a,
		                    in->v[k].b) < 0 ||
		    tk_split_by(out, in->v[k].a, in->v[k].b, &m,
		                p->u.split.behavior, p->u.split.invert) < 0) {
			tk_spans_release(&m);
			return -1;
		}
	}
	tk_spans_release(&m);
	return 0;
}

int tk_pretokenize2(const tk_pretok *p, tk_spans *out, tk_str *s,
                    const tk_spans *in, tk_str *stmp)
{
	switch (p->type) {
	case TK_PRE_BYTELEVEL:
		return pre_bytelevel(p, out, s, in, stmp);
	case TK_PRE_METASPACE:
		return pre_metaspace(p, out, s, in, stmp);
	case TK_PRE_WHITESPACE:
		return pre_whitespace(out, s, in);
	case TK_PRE_PUNCTUATION:
		return pre_charclass(out, s, in, tk_is_bert_punct,
		                     p->u.punct.behavior);
	case TK_PRE_DIGITS:
		return pre_charclass(out, s, in, is_numeric,
		                     p->u.digits.individual ? TK_SPLIT_ISOLATED
		                                            : TK_SPLIT_CONTIGUOUS);
	case TK_PRE_SPLIT:
		return pre_split(p, out, s, in);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

static int get_behavior(int *out, const json_t *j, const char *file,
                        const char *field, emb_err *err)
{
	static const char *const names[] = {
		"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
		"Contiguous" };
	json_t *v = json_object_get(j, "behavior");
	int i;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v))
		for (i = 0; i < 5; i++)
			if (!strcmp(json_string_value(v), names[i])) {
				*out = TK_SPLIT_REMOVED + i;
				return 0;
			}
	return emb_err_set(err, "%s: field '%s.behavior' must be one of "
	                   "Removed, Isolated, MergedWithPrevious, "
	                   "MergedWithNext, Contiguous", file, field);
}

int tk_pretok_parse2(tk_pretok *out, const char *type, const json_t *j,
                     const char *file, const char *field, emb_err *err)
{
	if (!strcmp(type, "ByteLevel")) {
		byte_chars_init();  /* here, at load: not racing threads */
		out->type = TK_PRE_BYTELEVEL;
		out->u.bl.add_prefix_space = 1;
		out->u.bl.use_regex = 1;
		return tk_opt_bool(&out->u.bl.add_prefix_space, j,
		                "add_prefix_space", file, field, err) < 0 ||
		       tk_opt_bool(&out->u.bl.use_regex, j, "use_regex", file,
		                field, err) < 0 ? -1 : 0;
	}
	if (!strcmp(type, "Metaspace")) {
		json_t *r = json_object_get(j, "replacement");
		json_t *ps = json_object_get(j, "prepend_scheme");
		int aps = 1;
		size_t n;
		uint32_t *c;
		out->type = TK_PRE_METASPACE;
		out->u.meta.repl = 0x2581;
		out->u.meta.split = 1;
		if (r && !json_is_null(r)) {
			if (!json_is_string(r) ||
			    !(c = tk_utf8_to_cps(json_string_value(r),
			                         json_string_length(r), &n)) ||
			    n != 1) {
				if (json_is_string(r) && c)
					free(c);
				return emb_err_set(err, "%s: field "
				                   "'%s.replacement' must be one "
				                   "character", file, field);
			}
			out->u.meta.repl = c[0];
			free(c);
		}
		if (tk_opt_bool(&out->u.meta.split, j, "split", file, field,
		             err) < 0 ||
		    tk_opt_bool(&aps, j, "add_prefix_space", file, field, err) < 0)
			return -1;
		out->u.meta.scheme = aps ? TK_PREPEND_ALWAYS : TK_PREPEND_NEVER;
		if (ps && !json_is_null(ps)) {
			const char *v = json_is_string(ps) ? json_string_value(ps)
			                                   : "";
			if (!strcmp(v, "always"))
				out->u.meta.scheme = TK_PREPEND_ALWAYS;
			else if (!strcmp(v, "first"))
				out->u.meta.scheme = TK_PREPEND_FIRST;
			else if (!strcmp(v, "never"))
				out->u.meta.scheme = TK_PREPEND_NEVER;
			else
				return emb_err_set(err, "%s: field "
				                   "'%s.prepend_scheme' must be "
				                   "always, first or never", file,
				                   field);
		}
		return 0;
	}
	if (!strcmp(type, "Whitespace")) {
		out->type = TK_PRE_WHITESPACE;
		return 0;
	}
	if (!strcmp(type, "Punctuation")) {
		out->type = TK_PRE_PUNCTUATION;
		out->u.punct.behavior = TK_SPLIT_ISOLATED;
		return get_behavior(&out->u.punct.behavior, j, file, field, err);
	}
	if (!strcmp(type, "Digits")) {
		out->type = TK_PRE_DIGITS;
		return tk_opt_bool(&out->u.digits.individual, j, "individual_digits",
		                file, field, err);
	}
	if (!strcmp(type, "Split")) {
		json_t *pat = json_object_get(j, "pattern");
		out->type = TK_PRE_SPLIT;
		out->u.split.behavior = TK_SPLIT_REMOVED;
		if (!json_is_object(pat))
			return emb_err_set(err, "%s: field '%s.pattern' must be "
			                   "an object", file, field);
		if (get_behavior(&out->u.split.behavior, j, file, field,
		                 err) < 0 ||
		    tk_opt_bool(&out->u.split.invert, j, "invert", file, field,
		             err) < 0)
			return -1;
		if (!json_object_get(j, "behavior"))
			return emb_err_set(err, "%s: missing field '%s.behavior'",
			                   file, field);
		return tk_pattern_parse(&out->u.split.pat, pat, file, field, err);
	}
	return emb_err_set(err, "%s: %s type '%s' is not supported", file,
	                   field, type);
}

void tk_pretok_release2(tk_pretok *p)
{
	if (p->type == TK_PRE_SPLIT)
		tk_pattern_release(&p->u.split.pat);
}
