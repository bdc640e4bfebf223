/*
 * pretok.c - the pre-tokenizers of tokenizer.json, one at a time
 * (BertPreTokenizer, WhitespaceSplit, ByteLevel, Metaspace, Whitespace,
 * Punctuation, Digits, Split), as Hugging Face tokenizers 0.23, and at
 * the end a Sequence of them and the choice by type.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok-internal.h"
/* ------------------------------------------------------------------ */
/* BertPreTokenizer, WhitespaceSplit                                   */

/* BertPreTokenizer: split on whitespace (removed), then isolate each
 * punctuation character */
static int pre_bert(tk_spans *out, const tk_str *s, const tk_spans *in)
{
	size_t k, i;

	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, start = a;
		for (i = a; i < b; i++) {
			uint32_t c = s->c[i];
			if (tk_is_whitespace(c)) {
				if (i > start && tk_spans_push(out, start, i) < 0)
					return -1;
				start = i + 1;
			} else if (tk_is_bert_punct(c)) {
				if (i > start && tk_spans_push(out, start, i) < 0)
					return -1;
				if (tk_spans_push(out, i, i + 1) < 0)
					return -1;
				start = i + 1;
			}
		}
		if (b > start && tk_spans_push(out, start, b) < 0)
			return -1;
	}
	return 0;
}

/* WhitespaceSplit: split on whitespace (removed) */
static int pre_ws_split(tk_spans *out, const tk_str *s, const tk_spans *in)
{
	size_t k, i;

	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, start = a;
		for (i = a; i < b; i++) {
			if (!tk_is_whitespace(s->c[i]))
				continue;
			if (i > start && tk_spans_push(out, start, i) < 0)
				return -1;
			start = i + 1;
		}
		if (b > start && tk_spans_push(out, start, b) < 0)
			return -1;
	}
	return 0;
}

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
		if (tk_gpt2_find(out, t->c, ta, t->n) < 0)
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
			size_t n = emb_utf8_put(u8, t->c[i]);
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

int tk_pretok_one(const tk_pretok *p, tk_spans *out, tk_str *s,
                 const tk_spans *in, tk_str *stmp)
{
	switch (p->type) {
	case TK_PRE_BERT:
		return pre_bert(out, s, in);
	case TK_PRE_WHITESPACE_SPLIT:
		return pre_ws_split(out, s, in);
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
		return pre_charclass(out, s, in, tk_is_numeric,
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

int tk_pretok_parse_one(tk_pretok *out, const char *type, const json_t *j,
                        const char *file, const char *field, emb_err *err)
{
	if (!strcmp(type, "BertPreTokenizer")) {
		out->type = TK_PRE_BERT;
		return 0;
	}
	if (!strcmp(type, "WhitespaceSplit")) {
		out->type = TK_PRE_WHITESPACE_SPLIT;
		return 0;
	}
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

void tk_pretok_release_one(tk_pretok *p)
{
	if (p->type == TK_PRE_SPLIT)
		tk_pattern_release(&p->u.split.pat);
}

/* ------------------------------------------------------------------ */
/* pre-tokenizers: a Sequence of them, and the choice by type (one at
 * a time: above)                                                      */

int tk_pretokenize(const tk_pretok *p, tk_spans *out, tk_str *s,
                   const tk_spans *in, tk_spans *tmp, tk_str *stmp)
{
	size_t i;
	tk_spans cur = {0}, t;

	out->n = 0;
	switch (p->type) {
	case TK_PRE_SEQUENCE:
		/* ping-pong between out and tmp */
		for (i = 0; i < in->n; i++)
			if (tk_spans_push(out, in->v[i].a, in->v[i].b) < 0)
				return -1;
		for (i = 0; i < p->u.seq.n; i++) {
			if (tk_pretokenize(&p->u.seq.v[i], tmp, s, out, &cur,
			                   stmp) < 0) {
				tk_spans_release(&cur);
				return -1;
			}
			t = *out;
			*out = *tmp;
			*tmp = t;
		}
		tk_spans_release(&cur);
		return 0;
	default:
		return tk_pretok_one(p, out, s, in, stmp);
	}
	return 0;
}

int tk_pretok_parse(tk_pretok *out, const json_t *j, const char *file,
                    const char *field, int depth, emb_err *err)
{
	const char *type;

	memset(out, 0, sizeof(*out));
	if (depth > 16)
		return emb_err_set(err, "%s: field '%s' is nested too deeply",
		                   file, field);
	type = tk_type_of(j, file, field, "pre-tokenizer", err);
	if (!type)
		return -1;
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "pretokenizers");
		size_t i;
		char sub[128];
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field '%s.pretokenizers' "
			                   "must be an array", file, field);
		out->type = TK_PRE_SEQUENCE;
		out->u.seq.v = calloc(json_array_size(a) + 1,
		                      sizeof(*out->u.seq.v));
		if (!out->u.seq.v)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < json_array_size(a); i++) {
			snprintf(sub, sizeof(sub), "%s.pretokenizers[%zu]",
			         field, i);
			out->u.seq.n = i + 1;
			if (tk_pretok_parse(&out->u.seq.v[i],
			                    json_array_get(a, i), file, sub,
			                    depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	return tk_pretok_parse_one(out, type, j, file, field, err);
}

void tk_pretok_release(tk_pretok *p)
{
	size_t i;

	tk_pretok_release_one(p);

	if (p->type == TK_PRE_SEQUENCE) {
		for (i = 0; i < p->u.seq.n; i++)
			tk_pretok_release(&p->u.seq.v[i]);
		free(p->u.seq.v);
	}
	memset(p, 0, sizeof(*p));
}
