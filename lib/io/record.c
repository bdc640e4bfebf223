/*
 * record.c - reading a JSON Lines record (emb_record, io/io.h): the
 * record path's one scanner, which validates a line and records the byte
 * spans of the top-level members of its object (so that members a tool
 * does not own are copied to the output byte for byte: write.c), and
 * the getters of keys, raw values and strings; the number getters are
 * recnum.c.  The line reader is lines.c.
 *
 * The scanner is iterative (an explicit depth counter and a bit stack),
 * bounded to JSON_MAX_DEPTH levels, and checks UTF-8 strictly
 * (base/utf8.h: no overlong forms, no surrogates, nothing above
 * U+10FFFF) and JSON syntax as RFC 8259 (escapes, control characters,
 * number grammar).
 *
 * An empty or whitespace-only line is a bad record ("empty line"): every
 * input line yields exactly one output record or one diagnostic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "io/io.h"
#include "io/record.h"

#define JSON_MAX_DEPTH 512

/* offset of the first invalid byte, or n when S is valid UTF-8 */
static size_t utf8_check(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		k = emb_utf8_seq(u + i, n - i);
		if (!k)
			return i;
		i += k;
	}
	return n;
}

emb_record *emb_record_new(void)
{
	return calloc(1, sizeof(emb_record));
}

static void record_clear(emb_record *rec)
{
	size_t i;

	for (i = 0; i < rec->n; i++) {
		free(rec->m[i].name);
		free(rec->m[i].str);
	}
	/* a record with very many members does not pin its array */
	if (rec->mcap > 1024) {
		free(rec->m);
		rec->m = NULL;
		rec->mcap = 0;
	}
	rec->n = 0;
	rec->len = 0;
}

void emb_record_free(emb_record *rec)
{
	if (!rec)
		return;
	record_clear(rec);
	free(rec->m);
	free(rec->text);
	free(rec);
}

typedef struct scan {
	const char *s;
	size_t n, i;
	const char *why;
} scan;

static void skip_ws(scan *sc)
{
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		sc->i++;
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(const char *s, uint32_t *v)
{
	int i, h;

	*v = 0;
	for (i = 0; i < 4; i++) {
		if ((h = hexval((unsigned char)s[i])) < 0)
			return -1;
		*v = *v << 4 | (uint32_t)h;
	}
	return 0;
}

/* string at sc->i (on the quote); leaves sc->i after the closing quote */
static int scan_string(scan *sc)
{
	const unsigned char *u = (const unsigned char *)sc->s;
	size_t i = sc->i + 1, n = sc->n, k;

	for (;;) {
		unsigned c;
		/* fast run over plain ASCII */
		while (i < n && u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' &&
		       u[i] != '\\')
			i++;
		if (i >= n) {
			sc->i = i;
			sc->why = "unterminated string";
			return -1;
		}
		c = u[i];
		if (c == '"') {
			sc->i = i + 1;
			return 0;
		}
		if (c < 0x20) {
			sc->i = i;
			sc->why = "control character in string";
			return -1;
		}
		if (c == '\\') {
			if (i + 1 >= n) {
				sc->i = i;
				sc->why = "unterminated string";
				return -1;
			}
			c = u[i + 1];
			if (c == 'u') {
				uint32_t v, w;
				if (i + 6 > n || hex4(sc->s + i + 2, &v) < 0) {
					sc->i = i;
					sc->why = "invalid \\u escape";
					return -1;
				}
				if (v >= 0xd800 && v < 0xdc00) {
					if (i + 12 > n || u[i + 6] != '\\' ||
					    u[i + 7] != 'u' ||
					    hex4(sc->s + i + 8, &w) < 0 ||
					    w < 0xdc00 || w >= 0xe000) {
						sc->i = i;
						sc->why = "unpaired surrogate in \\u escape";
						return -1;
					}
					i += 12;
				} else if (v >= 0xdc00 && v < 0xe000) {
					sc->i = i;
					sc->why = "unpaired surrogate in \\u escape";
					return -1;
				} else {
					i += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
				sc->i = i;
				sc->why = "invalid escape in string";
				return -1;
			}
			i += 2;
			continue;
		}
		k = emb_utf8_seq(u + i, n - i);
		if (!k) {
			sc->i = i;
			sc->why = "invalid UTF-8";
			return -1;
		}
		i += k;
	}
}


/* one or more digits from J: *I past them, or -1 (sc->i at J) */
static int digits(scan *sc, size_t *i, size_t j)
{
	if (j >= sc->n || !emb_json_digit(sc->s[j])) {
		sc->i = j;
		sc->why = "invalid number";
		return -1;
	}
	while (j < sc->n && emb_json_digit(sc->s[j]))
		j++;
	*i = j;
	return 0;
}

static int scan_number(scan *sc)
{
	const char *s = sc->s;
	size_t i = sc->i, n = sc->n;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else if (i < n && emb_json_digit(s[i])) {
		while (i < n && emb_json_digit(s[i]))
			i++;
	} else {
		sc->i = i;
		sc->why = "invalid number";
		return -1;
	}
	if (i < n && s[i] == '.' && digits(sc, &i, i + 1) < 0)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (digits(sc, &i, i) < 0)
			return -1;
	}
	sc->i = i;
	return 0;
}

static int scan_lit(scan *sc, const char *lit)
{
	size_t k = strlen(lit);

	if (sc->n - sc->i < k || memcmp(sc->s + sc->i, lit, k)) {
		sc->why = "invalid literal";
		return -1;
	}
	sc->i += k;
	return 0;
}

/*
 * One JSON value at sc->i, iteratively; nesting bounded by
 * JSON_MAX_DEPTH.  stack bit d: 1 = inside an object at depth d.
 */
static int scan_value(scan *sc)
{
	unsigned char stack[JSON_MAX_DEPTH / 8 + 1];
	int depth = 0;
	char c;

	for (;;) {
		/* here: expect a value */
		skip_ws(sc);
		if (sc->i >= sc->n) {
			sc->why = "unexpected end of line";
			return -1;
		}
		c = sc->s[sc->i];
		if (c == '{' || c == '[') {
			if (depth >= JSON_MAX_DEPTH) {
				sc->why = "nesting too deep";
				return -1;
			}
			if (c == '{')
				stack[depth / 8] |= (unsigned char)(1u << (depth % 8));
			else
				stack[depth / 8] &= (unsigned char)~(1u << (depth % 8));
			depth++;
			sc->i++;
			skip_ws(sc);
			if (sc->i < sc->n && sc->s[sc->i] == (c == '{' ? '}' : ']')) {
				sc->i++;
				depth--;
				goto after_value;
			}
			if (c == '{')
				goto object_key;
			continue;
		}
		if (c == '"') {
			if (scan_string(sc) < 0)
				return -1;
		} else if (c == '-' || emb_json_digit(c)) {
			if (scan_number(sc) < 0)
				return -1;
		} else if (c == 't') {
			if (scan_lit(sc, "true") < 0)
				return -1;
		} else if (c == 'f') {
			if (scan_lit(sc, "false") < 0)
				return -1;
		} else if (c == 'n') {
			if (scan_lit(sc, "null") < 0)
				return -1;
		} else {
			sc->why = "unexpected character";
			return -1;
		}
after_value:
		for (;;) {
			int inobj;
			if (depth == 0)
				return 0;
			inobj = stack[(depth - 1) / 8] >> ((depth - 1) % 8) & 1;
			skip_ws(sc);
			if (sc->i >= sc->n) {
				sc->why = "unexpected end of line";
				return -1;
			}
			c = sc->s[sc->i];
			if (c == ',') {
				sc->i++;
				if (inobj)
					goto object_key;
				break;  /* next array element */
			}
			if (c == (inobj ? '}' : ']')) {
				sc->i++;
				depth--;
				continue;
			}
			sc->why = inobj ? "expected ',' or '}'" : "expected ',' or ']'";
			return -1;
		}
		continue;
object_key:
		skip_ws(sc);
		if (sc->i >= sc->n || sc->s[sc->i] != '"') {
			sc->why = "expected a string key";
			return -1;
		}
		if (scan_string(sc) < 0)
			return -1;
		skip_ws(sc);
		if (sc->i >= sc->n || sc->s[sc->i] != ':') {
			sc->why = "expected ':'";
			return -1;
		}
		sc->i++;
	}
}

char *emb_json_unescape(const char *s, size_t n, size_t *out_len)
{
	char *o = malloc(n + 1), *p;
	size_t i;

	if (!o)
		return NULL;
	p = o;
	for (i = 1; i + 1 < n; ) {
		char c = s[i];
		if (c != '\\') {
			*p++ = c;
			i++;
			continue;
		}
		c = s[i + 1];
		switch (c) {
		case 'b': *p++ = '\b'; i += 2; break;
		case 'f': *p++ = '\f'; i += 2; break;
		case 'n': *p++ = '\n'; i += 2; break;
		case 'r': *p++ = '\r'; i += 2; break;
		case 't': *p++ = '\t'; i += 2; break;
		case 'u': {
			uint32_t v, w;
			hex4(s + i + 2, &v);
			i += 6;
			if (v >= 0xd800 && v < 0xdc00) {
				hex4(s + i + 2, &w);
				i += 6;
				v = 0x10000 + ((v - 0xd800) << 10) + (w - 0xdc00);
			}
			p += emb_utf8_put(p, v);
			break;
		}
		default: *p++ = c; i += 2; break;
		}
	}
	*p = 0;
	*out_len = (size_t)(p - o);
	return o;
}

static int bad_json(emb_err *err, const scan *sc)
{
	return emb_err_set(err, "invalid JSON at column %zu: %s", sc->i + 1,
	                   sc->why);
}

int emb_record_parse(emb_record *rec, const char *line, size_t len,
                     emb_err *err)
{
	scan sc;
	size_t k;

	record_clear(rec);
	if (rec->cap > ((size_t)1 << 20) && len + 1 < rec->cap / 4) {
		/* a long line once does not pin its buffer for good: a batch
		 * holds many records, each its own */
		free(rec->text);
		rec->text = NULL;
		rec->cap = 0;
	}
	if (len + 1 > rec->cap) {
		char *p = realloc(rec->text, len + 1);
		if (!p)
			return emb_err_set(err, "out of memory");
		rec->text = p;
		rec->cap = len + 1;
	}
	memcpy(rec->text, line, len);
	rec->text[len] = 0;
	rec->len = len;
	sc.s = rec->text;
	sc.n = len;
	sc.i = 0;
	sc.why = NULL;
	skip_ws(&sc);
	if (sc.i >= len)
		return emb_err_set(err, "empty line");
	if (sc.s[sc.i] != '{') {
		if (sc.i + 3 <= len && !memcmp(sc.s + sc.i, "\xef\xbb\xbf", 3))
			return emb_err_set(err, "starts with a UTF-8 byte order "
			                   "mark (not allowed in JSON Lines: remove "
			                   "it)");
		/* say invalid UTF-8 before anything else when it is */
		k = utf8_check(line, len);
		if (k < len)
			return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
		sc.why = "expected a JSON object";
		return bad_json(err, &sc);
	}
	sc.i++;
	skip_ws(&sc);
	if (sc.i < len && sc.s[sc.i] == '}') {
		sc.i++;
		goto tail;
	}
	for (;;) {
		member *m;
		skip_ws(&sc);
		if (sc.i >= len || sc.s[sc.i] != '"') {
			sc.why = sc.i >= len ? "unexpected end of line" :
			         "expected a string key";
			goto bad;
		}
		if (rec->n == rec->mcap) {
			size_t cap = rec->mcap ? 2 * rec->mcap : 16;
			member *p = realloc(rec->m, cap * sizeof(*p));
			if (!p)
				return emb_err_set(err, "out of memory");
			rec->m = p;
			rec->mcap = cap;
		}
		m = &rec->m[rec->n];
		memset(m, 0, sizeof(*m));
		m->key = m->span = sc.i;
		if (scan_string(&sc) < 0)
			goto bad;
		m->key_len = sc.i - m->key;
		m->name = emb_json_unescape(sc.s + m->key, m->key_len, &m->name_len);
		if (!m->name)
			return emb_err_set(err, "out of memory");
		rec->n++;
		skip_ws(&sc);
		if (sc.i >= len || sc.s[sc.i] != ':') {
			sc.why = "expected ':'";
			goto bad;
		}
		sc.i++;
		skip_ws(&sc);
		m->val = sc.i;
		if (scan_value(&sc) < 0)
			goto bad;
		m->val_len = sc.i - m->val;
		m->span_len = sc.i - m->span;
		skip_ws(&sc);
		if (sc.i < len && sc.s[sc.i] == ',') {
			sc.i++;
			continue;
		}
		if (sc.i < len && sc.s[sc.i] == '}') {
			sc.i++;
			break;
		}
		sc.why = sc.i >= len ? "unexpected end of line" :
		         "expected ',' or '}'";
		goto bad;
	}
tail:
	skip_ws(&sc);
	if (sc.i < len) {
		sc.why = "trailing characters after the object";
		goto bad;
	}
	return 0;
bad:
	if (!strcmp(sc.why, "invalid UTF-8"))
		return emb_err_set(err, "invalid UTF-8 at column %zu", sc.i + 1);
	k = utf8_check(line, sc.i);
	if (k < sc.i)   /* cannot happen after a valid prefix, but be safe */
		return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	return bad_json(err, &sc);
}

/* append S as a JSON string literal (with quotes) */

int emb_record_from_text(emb_record *rec, const char *line, size_t len,
                         uint64_t id, emb_err *err)
{
	char num[48];       /* {"id":N,"text": with N up to 20 digits */
	emb_buf b;
	size_t k;
	int rc;

	k = utf8_check(line, len);
	if (k < len) {
		record_clear(rec);
		return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	}
	emb_buf_init(&b);
	emb_buf_add(&b, num, (size_t)snprintf(num, sizeof(num),
	                                      "{\"id\":%llu,\"text\":",
	                                      (unsigned long long)id));
	emb_buf_add_jstr(&b, line, len);
	emb_buf_add(&b, "}", 1);
	rc = emb_record_parse(rec, b.p, b.len, err);
	emb_buf_release(&b);
	return rc;
}

member *emb_record_find(const emb_record *rec, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = rec->n; i-- > 0; ) {
		member *m = &rec->m[i];
		if (m->name_len == kl && !memcmp(m->name, key, kl))
			return m;
	}
	return NULL;
}

int emb_record_has(const emb_record *rec, const char *key)
{
	return emb_record_find(rec, key) != NULL;
}

const char *emb_record_raw(const emb_record *rec, const char *key,
                           size_t *len)
{
	member *m = emb_record_find(rec, key);

	if (!m)
		return NULL;
	if (len)
		*len = m->val_len;
	return rec->text + m->val;
}

int emb_record_get_string(const emb_record *rec, const char *key,
                          const char **s, size_t *len, emb_err *err)
{
	member *m = emb_record_find(rec, key);

	*s = NULL;
	*len = 0;
	if (!m)
		return emb_err_set(err, "missing field '%s'", key);
	if (rec->text[m->val] != '"')
		return emb_err_set(err, "field '%s' is not a string", key);
	if (!m->str) {
		m->str = emb_json_unescape(rec->text + m->val, m->val_len, &m->str_len);
		if (!m->str)
			return emb_err_set(err, "out of memory");
	}
	*s = m->str;
	*len = m->str_len;
	return 0;
}

void emb_record_drop_strings(const emb_record *rec)
{
	for (size_t i = 0; i < rec->n; i++) {
		free(rec->m[i].str);
		rec->m[i].str = NULL;
		rec->m[i].str_len = 0;
	}
}
