/*
 * normalizer.c - the normalizers of tokenizer.json (BertNormalizer,
 * NFD/NFKD/NFC/NFKC, Lowercase, StripAccents, Strip, Replace, Prepend,
 * Precompiled, Sequence) with the semantics of Hugging Face tokenizers
 * (Rust).  NFD is utf8proc's canonical decomposition and reordering,
 * except the code points in hf_nfd_keep that HF's older normalization
 * tables leave alone.  Built on text.c (predicates, strings), pattern.c
 * (Replace) and precompiled.c (Precompiled).
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"

/* measured on tokenizers 0.23.2 (its NFKD and NFC normalizers over
 * U+00A0..U+3FFFF, bench/unicode-sweep.js): */
/* compatibility decompositions that HF's (older) NFKD tables lack */
static const uint32_t hf_nfkd_keep[][2] = {
	{0x32FF, 0x32FF}, {0xA7F2, 0xA7F4}, {0xAB69, 0xAB69}, {0x10781, 0x10785},
	{0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D},
	{0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9},
};
/* composites utf8proc recomposes that HF's NFC leaves decomposed */
static const uint32_t hf_comp_excl[][2] = {
	{0x2ADC, 0x2ADC}, {0x1D15E, 0x1D164}, {0x1D1BB, 0x1D1C0},
};
/* code points whose decomposition HF's NFD tables do not have */
static const uint32_t hf_nfd_keep[] = { 0x11938 };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* normalizer steps: each maps s to tmp, then swaps them               */

static void swap_str(tk_str *a, tk_str *b)
{
	tk_str t = *a;
	*a = *b;
	*b = t;
}

static int clean_text(tk_str *s, tk_str *t)
{
	size_t i;

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		uint32_t c = s->c[i];
		if (c == 0 || c == 0xfffd || tk_is_control(c))
			continue;
		tk_str_put(t, tk_is_whitespace(c) ? ' ' : c, s->o[2 * i],
		           s->o[2 * i + 1]);
	}
	swap_str(s, t);
	return 0;
}

/* HF: [(' ', 0), (c, 1), (' ', 1)]: all three align to c */
static int pad_chinese(tk_str *s, tk_str *t)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += tk_is_chinese(s->c[i]) ? 3 : 1;
	t->n = 0;
	if (tk_str_reserve(t, n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		int32_t a = s->o[2 * i], b = s->o[2 * i + 1];
		if (tk_is_chinese(s->c[i])) {
			tk_str_put(t, ' ', a, b);
			tk_str_put(t, s->c[i], a, b);
			tk_str_put(t, ' ', a, b);
		} else {
			tk_str_put(t, s->c[i], a, b);
		}
	}
	swap_str(s, t);
	return 0;
}

static int nfd_keep(uint32_t c)
{
	size_t i;

	for (i = 0; i < NELEM(hf_nfd_keep); i++)
		if (hf_nfd_keep[i] == c)
			return 1;
	return 0;
}

/* canonical combining class, 0 for the marks HF's (older) normalization
 * tables do not know: they do not reorder */
static int ccc(uint32_t c)
{
	if (c < 0x300 || !tk_is_combining_mark(c))
		return 0;
	return utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

/*
 * Canonical decomposition, then canonical ordering of combining marks
 * (stable sort by combining class within each run of nonzero classes).
 * Alignments as HF's NormalizedString::nfd: each output character is
 * flagged "first of its decomposition" or "inserted"; the flags move
 * with the reordered marks, then a first character takes the alignment
 * of the next input character and an inserted one that of the output
 * character before it.
 */
static int nfd(tk_str *s, tk_str *t, int compat)
{
	size_t i, j, cur;
	utf8proc_int32_t buf[32];
	uint32_t fast = compat ? 0xa0 : 0xc0;

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		uint32_t c = s->c[i];
		utf8proc_ssize_t n, k;
		int last = 0;

		if (c < fast || nfd_keep(c) ||
		    (compat && tk_in_ranges(hf_nfkd_keep, NELEM(hf_nfkd_keep), c))) {
			if (tk_str_push(t, c, 0, 0) < 0)
				return -1;
			continue;
		}
		n = utf8proc_decompose_char((utf8proc_int32_t)c, buf, 32,
		                            compat ? UTF8PROC_DECOMPOSE |
		                                     UTF8PROC_COMPAT
		                                   : UTF8PROC_DECOMPOSE, &last);
		if (n < 1 || n > 32) {
			buf[0] = (utf8proc_int32_t)c;
			n = 1;
		}
		if (tk_str_reserve(t, t->n + (size_t)n) < 0)
			return -1;
		for (k = 0; k < n; k++)
			tk_str_put(t, (uint32_t)buf[k], k > 0, 0);
	}
	/* canonical ordering: insertion sort inside runs of ccc > 0 */
	for (i = 1; i < t->n; i++) {
		int ci = ccc(t->c[i]);
		if (!ci)
			continue;
		for (j = i; j > 0; j--) {
			int cj = ccc(t->c[j - 1]);
			uint32_t tc;
			int32_t tf;
			if (!cj || cj <= ci)
				break;
			tc = t->c[j];
			t->c[j] = t->c[j - 1];
			t->c[j - 1] = tc;
			tf = t->o[2 * j];
			t->o[2 * j] = t->o[2 * j - 2];
			t->o[2 * j - 2] = tf;
		}
	}
	/* alignments from the flags */
	for (i = 0, cur = 0; i < t->n; i++) {
		size_t from;
		if (!t->o[2 * i] && cur < s->n) {
			from = cur++;
			t->o[2 * i] = s->o[2 * from];
			t->o[2 * i + 1] = s->o[2 * from + 1];
		} else if (i > 0) {
			t->o[2 * i] = t->o[2 * i - 2];
			t->o[2 * i + 1] = t->o[2 * i - 1];
		} else {
			t->o[0] = s->n ? s->o[0] : 0;
			t->o[1] = s->n ? s->o[1] : 0;
		}
	}
	swap_str(s, t);
	return 0;
}

static int strip_marks(tk_str *s, int (*is_mark)(uint32_t))
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++) {
		if (is_mark(s->c[i]))
			continue;
		s->c[n] = s->c[i];
		s->o[2 * n] = s->o[2 * i];
		s->o[2 * n + 1] = s->o[2 * i + 1];
		n++;
	}
	s->n = n;
	return 0;
}

static int lowercase(tk_str *s, tk_str *t)
{
	size_t i;
	uint32_t lc[3];

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		int k, n = tk_tolower(lc, s->c[i]);
		if (tk_str_reserve(t, t->n + (size_t)n) < 0)
			return -1;
		for (k = 0; k < n; k++)
			tk_str_put(t, lc[k], s->o[2 * i], s->o[2 * i + 1]);
	}
	swap_str(s, t);
	return 0;
}

/*
 * Canonical composition of the decomposed S (NFC = NFD + this, NFKC =
 * NFKD + this) by utf8proc.  Alignments: each output character covers
 * as many input characters as its canonical decomposition has (NFD of
 * the composed text is the decomposed input, in order), and takes the
 * alignment of the first of them, as HF gives a composed character
 * the alignment of its first part.
 */
static int compose(tk_str *s, tk_str *t)
{
	utf8proc_int32_t *buf, dec[32];
	utf8proc_ssize_t n;
	size_t i, cur = 0;

	if (!s->n)
		return 0;
	buf = malloc(s->n * sizeof(*buf));
	if (!buf)
		return -1;
	for (i = 0; i < s->n; i++)
		buf[i] = (utf8proc_int32_t)s->c[i];
	n = utf8proc_normalize_utf32(buf, (utf8proc_ssize_t)s->n,
	                             UTF8PROC_COMPOSE);
	if (n < 0 || (size_t)n > s->n) {
		free(buf);
		return 0;   /* leave it decomposed */
	}
	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0) {
		free(buf);
		return -1;
	}
	for (i = 0; i < (size_t)n; i++) {
		uint32_t c = (uint32_t)buf[i];
		int last = 0;
		utf8proc_ssize_t l = 1;
		size_t at = cur < s->n ? cur : s->n - 1;
		if (c >= 0xc0 && !nfd_keep(c)) {
			l = utf8proc_decompose_char(buf[i], dec, 32,
			                            UTF8PROC_DECOMPOSE, &last);
			if (l < 1)
				l = 1;
		}
		if (tk_in_ranges(hf_comp_excl, NELEM(hf_comp_excl), c) && l > 1) {
			/* HF leaves it decomposed: the input characters */
			utf8proc_ssize_t k;
			if (tk_str_reserve(t, t->n + (size_t)l) < 0) {
				free(buf);
				return -1;
			}
			for (k = 0; k < l && cur + (size_t)k < s->n; k++)
				tk_str_put(t, s->c[cur + k], s->o[2 * (cur + k)],
				           s->o[2 * (cur + k) + 1]);
			cur += (size_t)l;
			continue;
		}
		tk_str_put(t, c, s->o[2 * at], s->o[2 * at + 1]);
		cur += (size_t)l;
	}
	free(buf);
	swap_str(s, t);
	return 0;
}

static int strip(tk_str *s, int left, int right)
{
	size_t a = 0, b = s->n;

	if (left)
		while (a < b && tk_is_whitespace(s->c[a]))
			a++;
	if (right)
		while (b > a && tk_is_whitespace(s->c[b - 1]))
			b--;
	if (a) {
		memmove(s->c, s->c + a, (b - a) * sizeof(*s->c));
		memmove(s->o, s->o + 2 * a, 2 * (b - a) * sizeof(*s->o));
	}
	s->n = b - a;
	return 0;
}

/* every match of P -> CONTENT.  As HF's NormalizedString::replace (a
 * transform that removes the match, then inserts the content): every
 * content character takes the alignment of the last matched one */
static int replace(tk_str *s, tk_str *t, const tk_pattern *p,
                   const uint32_t *content, size_t cn)
{
	tk_spans m = {0};
	size_t i, pos = 0, k;

	if (tk_pattern_find(p, &m, s->c, 0, s->n) < 0) {
		tk_spans_release(&m);
		return -1;
	}
	if (!m.n) {
		tk_spans_release(&m);
		return 0;
	}
	t->n = 0;
	if (tk_str_reserve(t, s->n + m.n * (cn + 1)) < 0) {
		tk_spans_release(&m);
		return -1;
	}
	for (i = 0; i < m.n; i++) {
		size_t a = m.v[i].a, b = m.v[i].b;
		for (; pos < a; pos++)
			tk_str_put(t, s->c[pos], s->o[2 * pos], s->o[2 * pos + 1]);
		for (k = 0; k < cn; k++) {
			/* the last matched character; for an empty match the
			 * one before it (at the start: an empty span where the
			 * text starts, as HF's (0, 0) in the slice; 0 when
			 * the string is empty, with no alignment to read) */
			int32_t oa = s->n ? s->o[0] : 0, ob = oa;
			if (b > 0) {
				oa = s->o[2 * (b - 1)];
				ob = s->o[2 * (b - 1) + 1];
			}
			tk_str_put(t, content[k], oa, ob);
		}
		pos = b;
	}
	for (; pos < s->n; pos++)
		tk_str_put(t, s->c[pos], s->o[2 * pos], s->o[2 * pos + 1]);
	tk_spans_release(&m);
	swap_str(s, t);
	return 0;
}

/* Prepend: nothing on an empty string; the prefix aligns to the first
 * character */
static int prepend(tk_str *s, tk_str *t, const uint32_t *p, size_t pn)
{
	size_t i;

	if (!s->n || !pn)
		return 0;
	t->n = 0;
	if (tk_str_reserve(t, s->n + pn) < 0)
		return -1;
	for (i = 0; i < pn; i++)
		tk_str_put(t, p[i], s->o[0], s->o[1]);
	for (i = 0; i < s->n; i++)
		tk_str_put(t, s->c[i], s->o[2 * i], s->o[2 * i + 1]);
	swap_str(s, t);
	return 0;
}

/* the most code points normalizing N code points may give */
size_t tk_norm_limit(size_t n)
{
	return n < (SIZE_MAX - TK_NORM_SLACK) / TK_NORM_GROWTH ?
	       TK_NORM_GROWTH * n + TK_NORM_SLACK : SIZE_MAX;
}

/*
 * The BERT normalizer on an all-ASCII S in one pass, in place: what the
 * steps below give for ASCII (no Chinese characters, NFD and the marks
 * leave it as it is, lowercase is A-Z only); 0 (S untouched) when S
 * holds a character past ASCII.
 */
static int bert_ascii(const tk_normalizer *n, tk_str *s)
{
	size_t i, k = 0;

	for (i = 0; i < s->n; i++)
		if (s->c[i] >= 0x80)
			return 0;
	for (i = 0; i < s->n; i++) {
		uint32_t c = s->c[i];
		if (n->u.bert.clean_text) {
			if (c == 0 || tk_is_control(c))
				continue;
			if (tk_is_whitespace(c))
				c = ' ';
		}
		if (n->u.bert.lowercase && c >= 'A' && c <= 'Z')
			c += 32;
		s->c[k] = c;
		s->o[2 * k] = s->o[2 * i];
		s->o[2 * k + 1] = s->o[2 * i + 1];
		k++;
	}
	s->n = k;
	return 1;
}

int tk_normalize(const tk_normalizer *n, tk_str *s, tk_str *tmp)
{
	size_t i;

	switch (n->type) {
	case TK_NORM_BERT:
		if (bert_ascii(n, s))
			return 0;
		if (n->u.bert.clean_text && clean_text(s, tmp) < 0)
			return -1;
		if (n->u.bert.chinese && pad_chinese(s, tmp) < 0)
			return -1;
		if (n->u.bert.strip_accents &&
		    (nfd(s, tmp, 0) < 0 ||
		     strip_marks(s, tk_is_nonspacing_mark) < 0))
			return -1;
		if (n->u.bert.lowercase && lowercase(s, tmp) < 0)
			return -1;
		return 0;
	case TK_NORM_LOWERCASE:
		return lowercase(s, tmp);
	case TK_NORM_NFD:
		return nfd(s, tmp, 0);
	case TK_NORM_NFKD:
		return nfd(s, tmp, 1);
	case TK_NORM_NFC:
		return nfd(s, tmp, 0) < 0 ? -1 : compose(s, tmp);
	case TK_NORM_NFKC:
		return nfd(s, tmp, 1) < 0 ? -1 : compose(s, tmp);
	case TK_NORM_STRIP:
		return strip(s, n->u.strip.left, n->u.strip.right);
	case TK_NORM_REPLACE:
		return replace(s, tmp, &n->u.replace.pat, n->u.replace.content,
		               n->u.replace.n);
	case TK_NORM_PREPEND:
		return prepend(s, tmp, n->u.prepend.s, n->u.prepend.n);
	case TK_NORM_PRECOMPILED:
		return tk_charsmap_normalize(&n->u.cmap, s, tmp);
	case TK_NORM_STRIP_ACCENTS:
		return strip_marks(s, tk_is_combining_mark);
	case TK_NORM_SEQUENCE:
		for (i = 0; i < n->u.seq.n; i++)
			if (tk_normalize(&n->u.seq.v[i], s, tmp) < 0)
				return -1;
		return 0;
	}
	return 0;
}


/* the leaves of a (nested) Sequence */
static size_t norm_steps(const tk_normalizer *n)
{
	size_t k = 0;

	if (n->type != TK_NORM_SEQUENCE)
		return 1;
	for (size_t i = 0; i < n->u.seq.n; i++)
		k += norm_steps(&n->u.seq.v[i]);
	return k;
}

int tk_normalizer_parse(tk_normalizer *out, const json_t *j,
                        const char *file, const char *field, int depth,
                        emb_err *err)
{
	const char *type;

	memset(out, 0, sizeof(*out));
	if (depth > 16)
		return emb_err_set(err, "%s: field '%s' is nested too deeply",
		                   file, field);
	type = tk_type_of(j, file, field, "normalizer", err);
	if (!type)
		return -1;
	if (!strcmp(type, "BertNormalizer")) {
		json_t *sa = json_object_get(j, "strip_accents");
		out->type = TK_NORM_BERT;
		out->u.bert.clean_text = 1;
		out->u.bert.chinese = 1;
		out->u.bert.lowercase = 1;
		if (tk_opt_bool(&out->u.bert.clean_text, j, "clean_text", file,
		             field, err) < 0 ||
		    tk_opt_bool(&out->u.bert.chinese, j, "handle_chinese_chars",
		             file, field, err) < 0 ||
		    tk_opt_bool(&out->u.bert.lowercase, j, "lowercase", file,
		             field, err) < 0)
			return -1;
		/* strip_accents null (or absent): follow lowercase */
		out->u.bert.strip_accents = out->u.bert.lowercase;
		if (sa && !json_is_null(sa)) {
			if (!json_is_boolean(sa))
				return emb_err_set(err, "%s: field "
				                   "'%s.strip_accents' must be a "
				                   "boolean or null", file, field);
			out->u.bert.strip_accents = json_is_true(sa);
		}
		return 0;
	}
	if (!strcmp(type, "Lowercase")) {
		out->type = TK_NORM_LOWERCASE;
		return 0;
	}
	if (!strcmp(type, "NFD")) {
		out->type = TK_NORM_NFD;
		return 0;
	}
	if (!strcmp(type, "StripAccents")) {
		out->type = TK_NORM_STRIP_ACCENTS;
		return 0;
	}
	if (!strcmp(type, "NFC") || !strcmp(type, "NFKC") ||
	    !strcmp(type, "NFKD")) {
		out->type = !strcmp(type, "NFC") ? TK_NORM_NFC :
		            !strcmp(type, "NFKC") ? TK_NORM_NFKC : TK_NORM_NFKD;
		return 0;
	}
	if (!strcmp(type, "Strip")) {
		out->type = TK_NORM_STRIP;
		out->u.strip.left = out->u.strip.right = 1;
		return tk_opt_bool(&out->u.strip.left, j, "strip_left", file, field,
		                err) < 0 ||
		       tk_opt_bool(&out->u.strip.right, j, "strip_right", file,
		                field, err) < 0 ? -1 : 0;
	}
	if (!strcmp(type, "Replace")) {
		json_t *pat = json_object_get(j, "pattern");
		json_t *c = json_object_get(j, "content");
		out->type = TK_NORM_REPLACE;
		if (!json_is_object(pat) || !json_is_string(c))
			return emb_err_set(err, "%s: field '%s' must have a "
			                   "'pattern' object and a 'content' "
			                   "string", file, field);
		if (tk_pattern_parse(&out->u.replace.pat, pat, file, field,
		                     err) < 0)
			return -1;
		out->u.replace.content = tk_utf8_to_cps(json_string_value(c),
		                                        json_string_length(c),
		                                        &out->u.replace.n);
		if (!out->u.replace.content)
			return emb_err_set(err, "out of memory");
		return 0;
	}
	if (!strcmp(type, "Prepend")) {
		json_t *c = json_object_get(j, "prepend");
		out->type = TK_NORM_PREPEND;
		if (!json_is_string(c))
			return emb_err_set(err, "%s: field '%s.prepend' must be a "
			                   "string", file, field);
		out->u.prepend.s = tk_utf8_to_cps(json_string_value(c),
		                                  json_string_length(c),
		                                  &out->u.prepend.n);
		if (!out->u.prepend.s)
			return emb_err_set(err, "out of memory");
		return 0;
	}
	if (!strcmp(type, "Precompiled")) {
		json_t *c = json_object_get(j, "precompiled_charsmap");
		char f[160];
		out->type = TK_NORM_PRECOMPILED;
		if (json_is_null(c))
			return 0;   /* HF: an empty charsmap does nothing */
		if (!json_is_string(c))
			return emb_err_set(err, "%s: field "
			                   "'%s.precompiled_charsmap' must be a "
			                   "base64 string", file, field);
		snprintf(f, sizeof(f), "%s", field);
		return tk_charsmap_parse(&out->u.cmap, json_string_value(c),
		                         json_string_length(c), file, f, err);
	}
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "normalizers");
		size_t i;
		char sub[128];
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field '%s.normalizers' "
			                   "must be an array", file, field);
		out->type = TK_NORM_SEQUENCE;
		out->u.seq.v = calloc(json_array_size(a) + 1,
		                      sizeof(*out->u.seq.v));
		if (!out->u.seq.v)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < json_array_size(a); i++) {
			snprintf(sub, sizeof(sub), "%s.normalizers[%zu]",
			         field, i);
			out->u.seq.n = i + 1;
			if (tk_normalizer_parse(&out->u.seq.v[i],
			                        json_array_get(a, i), file, sub,
			                        depth + 1, err) < 0)
				return -1;
		}
		if (!depth && norm_steps(out) > TK_NORM_MAX_STEPS)
			return emb_err_set(err, "%s: field '%s' has more than %d "
			                   "normalizer steps", file, field,
			                   TK_NORM_MAX_STEPS);
		return 0;
	}
	return emb_err_set(err, "%s: %s type '%s' is not supported", file,
	                   field, type);
}

void tk_normalizer_release(tk_normalizer *n)
{
	size_t i;

	if (n->type == TK_NORM_SEQUENCE) {
		for (i = 0; i < n->u.seq.n; i++)
			tk_normalizer_release(&n->u.seq.v[i]);
		free(n->u.seq.v);
	} else if (n->type == TK_NORM_REPLACE) {
		tk_pattern_release(&n->u.replace.pat);
		free(n->u.replace.content);
	} else if (n->type == TK_NORM_PREPEND) {
		free(n->u.prepend.s);
	} else if (n->type == TK_NORM_PRECOMPILED) {
		tk_charsmap_release(&n->u.cmap);
	}
	memset(n, 0, sizeof(*n));
}
