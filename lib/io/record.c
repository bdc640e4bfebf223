/*
 * record.c - reading a JSON Lines record (emb_record, io/io.h): a line
 * validated and the byte spans of the top-level members of its object
 * recorded (so that members a tool does not own are copied to the
 * output byte for byte: write.c), and the getters of keys, raw values
 * and strings; the number getters are recnum.c.  The line reader is
 * lines.c.
 *
 * The grammar has one home, io/jscan.c: the line is walked with its
 * calls under the record path's rules (emb_jscan_init_record: 512
 * levels inside a member, \u0000 and numbers of any size allowed, the
 * record path's messages), which check UTF-8 strictly (no overlong
 * forms, no surrogates, nothing above U+10FFFF) and JSON syntax as RFC
 * 8259.
 *
 * An empty or whitespace-only line is a bad record ("empty line"): every
 * input line yields exactly one output record or one diagnostic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "io/io.h"
#include "io/jscan.h"
#include "io/record.h"

/* how deep a member's value may nest */
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

char *emb_json_unescape(const char *s, size_t n, size_t *out_len)
{
	emb_jscan sc;
	char *o;

	emb_jscan_init_record(&sc, s, n, 0);
	o = emb_jscan_string_dup(&sc, out_len);
	emb_jscan_release(&sc);
	return o;
}

/* the diagnostic of the scan's first error on LINE */
static int bad_json(emb_err *err, const char *line, const emb_jscan *s)
{
	size_t at = (size_t)(s->at - s->text), k;

	if (!strcmp(s->what, "out of memory"))
		return emb_err_set(err, "out of memory");
	if (!strcmp(s->what, "invalid UTF-8"))
		return emb_err_set(err, "invalid UTF-8 at column %zu", at + 1);
	k = utf8_check(line, at);
	if (k < at)     /* cannot happen after a valid prefix, but be safe */
		return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	return emb_err_set(err, "invalid JSON at column %zu: %s", at + 1,
	                   s->what);
}

int emb_record_parse(emb_record *rec, const char *line, size_t len,
                     emb_err *err)
{
	emb_jscan s;
	size_t k;
	int c, r, first = 1;

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
	/* the line's object, and JSON_MAX_DEPTH levels in a member */
	emb_jscan_init_record(&s, rec->text, len, JSON_MAX_DEPTH + 1);
	c = emb_jscan_peek(&s);
	if (c < 0)
		return emb_err_set(err, "empty line");
	if (c != '{') {
		if (s.end - s.p >= 3 && !memcmp(s.p, "\xef\xbb\xbf", 3))
			return emb_err_set(err, "starts with a UTF-8 byte order "
			                   "mark (not allowed in JSON Lines: remove "
			                   "it)");
		/* say invalid UTF-8 before anything else when it is */
		k = utf8_check(line, len);
		if (k < len)
			return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	}
	if (emb_jscan_open(&s, '{') < 0)
		goto bad;
	while ((r = emb_jscan_more(&s, &first, '}')) > 0) {
		member *m;
		if (rec->n == rec->mcap) {
			size_t cap = rec->mcap ? 2 * rec->mcap : 16;
			member *p = realloc(rec->m, cap * sizeof(*p));
			if (!p) {
				emb_jscan_release(&s);
				return emb_err_set(err, "out of memory");
			}
			rec->m = p;
			rec->mcap = cap;
		}
		m = &rec->m[rec->n];
		memset(m, 0, sizeof(*m));
		emb_jscan_peek(&s);
		m->key = m->span = (size_t)(s.p - s.text);
		if (!(m->name = emb_jscan_string_dup(&s, &m->name_len)))
			goto bad;
		m->key_len = (size_t)(s.p - s.text) - m->key;
		rec->n++;
		if (emb_jscan_colon(&s) < 0)
			goto bad;
		emb_jscan_peek(&s);
		m->val = (size_t)(s.p - s.text);
		if (emb_jscan_skip(&s) < 0)
			goto bad;
		m->val_len = (size_t)(s.p - s.text) - m->val;
		m->span_len = (size_t)(s.p - s.text) - m->span;
	}
	if (r < 0 || emb_jscan_finish(&s) < 0)
		goto bad;
	emb_jscan_release(&s);
	return 0;
bad:
	emb_jscan_release(&s);
	return bad_json(err, line, &s);
}

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
