/*
 * write.c - writing JSON Lines records (io/io.h): the output buffer
 * (emb_buf), JSON strings, base64, the members of a record (emb_out_*: the input record's
 * members copied byte for byte, then the new ones) and the selection of
 * --fields/--drop (emb_fields), applied as the members are written.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/record.h"

void emb_buf_init(emb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void emb_buf_release(emb_buf *b)
{
	free(b->p);
	free(b->gone);
	memset(b, 0, sizeof(*b));
}

/* room for EXTRA more bytes and the terminating 0; -1 (b->failed set)
 * when memory runs out: the writers then stop writing, emb_out_end drops
 * the record being built and the caller reports it (emb_buf_failed) */
static int buf_reserve(emb_buf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (b->failed)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2 || extra > SIZE_MAX / 2) {
			b->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int emb_buf_failed(const emb_buf *b)
{
	return b->failed;
}

void emb_buf_add(emb_buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void emb_buf_append(emb_buf *b, const emb_buf *from)
{
	if (from->failed)
		b->failed = 1;
	else
		emb_buf_add(b, from->p ? from->p : "", from->len);
}

static void buf_addc(emb_buf *b, char c)
{
	if (buf_reserve(b, 1) < 0)
		return;
	b->p[b->len++] = c;
	b->p[b->len] = 0;
}

void emb_buf_add_jstr(emb_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	(void)buf_reserve(b, n + 2);
	buf_addc(b, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[7];
		size_t el = 2;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		emb_buf_add(b, s + run, i - run);
		run = i + 1;
		e[0] = '\\';
		switch (c) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		default:
			e[1] = 'u'; e[2] = '0'; e[3] = '0';
			e[4] = hex[c >> 4]; e[5] = hex[c & 15];
			el = 6;
		}
		emb_buf_add(b, e, el);
	}
	emb_buf_add(b, s + run, n - run);
	buf_addc(b, '"');
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(emb_buf *b, const unsigned char *s, size_t n)
{
	size_t i;
	char q[4];

	if (buf_reserve(b, (n + 2) / 3 * 4 + 4) < 0)
		return;
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		b->p[b->len++] = b64chars[w >> 18];
		b->p[b->len++] = b64chars[(w >> 12) & 63];
		b->p[b->len++] = b64chars[(w >> 6) & 63];
		b->p[b->len++] = b64chars[w & 63];
	}
	if (i < n) {
		uint32_t w = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)s[i + 1] << 8;
		q[0] = b64chars[w >> 18];
		q[1] = b64chars[(w >> 12) & 63];
		q[2] = i + 1 < n ? b64chars[(w >> 6) & 63] : '=';
		q[3] = '=';
		memcpy(b->p + b->len, q, 4);
		b->len += 4;
	}
	b->p[b->len] = 0;
}

static void b64_floats(emb_buf *b, const float *v, size_t n)
{
	unsigned char tmp[3 * 256];
	size_t i = 0;

	buf_addc(b, '"');
	while (i < n) {
		/* chunks of 192 floats = 768 bytes, a multiple of 3 */
		size_t k = n - i < 192 ? n - i : 192, j;
		for (j = 0; j < k; j++) {
			uint32_t w;
			memcpy(&w, &v[i + j], 4);
			tmp[4 * j] = (unsigned char)w;
			tmp[4 * j + 1] = (unsigned char)(w >> 8);
			tmp[4 * j + 2] = (unsigned char)(w >> 16);
			tmp[4 * j + 3] = (unsigned char)(w >> 24);
		}
		b64_encode(b, tmp, 4 * k);
		i += k;
	}
	buf_addc(b, '"');
}

/* ------------------------------------------------------------------ */
/* --fields / --drop                                                   */

struct emb_fields {
	char **keep;            /* NULL: every member */
	size_t nkeep;
	char **drop;
	size_t ndrop;
};

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* "a,b,c" -> *out (new), *n; -1 on an empty name */
static int parse_list(char ***out, size_t *n, const char *s, const char *opt,
                      emb_err *err)
{
	size_t cap = 1, k = 0;
	const char *p;
	char **v;

	for (p = s; *p; p++)
		if (*p == ',')
			cap++;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return emb_err_set(err, "out of memory");
	for (p = s;; ) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == 0) {
			free_list(v, k);
			return emb_err_set(err, "%s: empty field name in '%s'", opt, s);
		}
		v[k] = malloc(l + 1);
		if (!v[k]) {
			free_list(v, k);
			return emb_err_set(err, "out of memory");
		}
		memcpy(v[k], p, l);
		v[k++][l] = 0;
		if (!e)
			break;
		p = e + 1;
	}
	*out = v;
	*n = k;
	return 0;
}

int emb_fields_new(emb_fields **out, const char *keep, const char *drop,
                   emb_err *err)
{
	emb_fields *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f)
		return emb_err_set(err, "out of memory");
	if ((keep && parse_list(&f->keep, &f->nkeep, keep, "--fields", err) < 0) ||
	    (drop && parse_list(&f->drop, &f->ndrop, drop, "--drop", err) < 0)) {
		emb_fields_free(f);
		return -1;
	}
	*out = f;
	return 0;
}

void emb_fields_free(emb_fields *f)
{
	if (!f)
		return;
	free_list(f->keep, f->nkeep);
	free_list(f->drop, f->ndrop);
	free(f);
}

/* NAME or NAME_b64 in the list */
static int listed(char *const *v, size_t n, const char *k, size_t kl)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]);
		if (kl == l && !memcmp(k, v[i], l))
			return 1;
		if (kl == l + 4 && !memcmp(k, v[i], l) && !memcmp(k + l, "_b64", 4))
			return 1;
	}
	return 0;
}

/* whether the member named K (KL bytes) is written */
static int selected(const emb_fields *f, const char *k, size_t kl)
{
	return !f || ((!f->keep || listed(f->keep, f->nkeep, k, kl)) &&
	              !listed(f->drop, f->ndrop, k, kl));
}

void emb_buf_select(emb_buf *b, const emb_fields *f)
{
	b->sel = f;
}

void emb_out_begin(emb_buf *b, const emb_record *rec,
                   const char *const *drop)
{
	size_t need = rec ? rec->n : 0, i;

	b->rec = rec;
	b->drop = drop;
	b->obj = b->len;
	b->nnew = 0;
	b->hiding = 0;
	if (need > b->gone_cap) {
		unsigned char *g = realloc(b->gone, need);
		if (!g) {
			b->failed = 1;
			b->rec = NULL;
			return;
		}
		b->gone = g;
		b->gone_cap = need;
	}
	for (i = 0; i < need; i++)
		b->gone[i] = 0;
	buf_addc(b, '{');
}

/* KEY followed by SUF selected? */
static int selected_key(const emb_fields *f, const char *key, size_t kl,
                        const char *suf, size_t sl)
{
	char t[256];

	if (!sl)
		return selected(f, key, kl);
	if (kl + sl > sizeof(t)) {
		char *p = malloc(kl + sl);
		int r;
		if (!p)
			return 1;
		memcpy(p, key, kl);
		memcpy(p + kl, suf, sl);
		r = selected(f, p, kl + sl);
		free(p);
		return r;
	}
	memcpy(t, key, kl);
	memcpy(t + kl, suf, sl);
	return selected(f, t, kl + sl);
}

/* take back the member written last when the selection leaves it out */
static void unhide(emb_buf *b)
{
	if (!b->hiding)
		return;
	b->hiding = 0;
	if (b->failed)
		return;
	b->len = b->hide;
	b->p[b->len] = 0;
}

/* start a new member KEY (with suffix SUF, may be "") */
static void out_key(emb_buf *b, const char *key, const char *suf)
{
	const emb_record *rec = b->rec;
	size_t kl = strlen(key), sl = strlen(suf), i;

	if (rec) {
		/* the written key replaces KEY and its other form */
		for (i = 0; i < rec->n; i++) {
			const member *m = &rec->m[i];
			if (m->name_len < kl || memcmp(m->name, key, kl))
				continue;
			if (m->name_len == kl ||
			    (m->name_len == kl + 4 && !memcmp(m->name + kl, "_b64", 4)))
				b->gone[i] = 1;
		}
	}
	unhide(b);
	if (b->sel && !selected_key(b->sel, key, kl, suf, sl)) {
		/* its value is written and then taken back (unhide) */
		b->hide = b->len;
		b->hiding = 1;
	} else if (b->nnew++) {
		buf_addc(b, ',');
	}
	if (buf_reserve(b, kl + sl + 3) < 0)
		return;
	b->p[b->len++] = '"';
	memcpy(b->p + b->len, key, kl);
	b->len += kl;
	memcpy(b->p + b->len, suf, sl);
	b->len += sl;
	b->p[b->len++] = '"';
	b->p[b->len++] = ':';
	b->p[b->len] = 0;
}

void emb_out_int(emb_buf *b, const char *key, long long v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%lld", v);

	out_key(b, key, "");
	emb_buf_add(b, t, (size_t)n);
}

void emb_out_string(emb_buf *b, const char *key, const char *s, size_t n)
{
	out_key(b, key, "");
	emb_buf_add_jstr(b, s, n);
}

void emb_out_json(emb_buf *b, const char *key, const char *json, size_t n)
{
	out_key(b, key, "");
	emb_buf_add(b, json, n);
}

/* V[i] in decimal, as printf's %d writes it, without printf: the digits
 * last to first into a scratch, then copied */
static size_t put_i32(char *d, const void *v, size_t i)
{
	int32_t x = ((const int32_t *)v)[i];
	uint32_t u = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
	char t[12], *e = t + sizeof(t), *p = e;
	size_t n = 0;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (x < 0)
		d[n++] = '-';
	memcpy(d + n, p, (size_t)(e - p));
	return n + (size_t)(e - p);
}

static size_t put_f32(char *d, const void *v, size_t i)
{
	return emb_fmt_f32(d, ((const float *)v)[i]);
}

/* [v0,v1,...]: N elements of V, each at most PER bytes as PUT writes it */
static void array_json(emb_buf *b, const void *v, size_t n, size_t per,
                       size_t (*put)(char *, const void *, size_t))
{
	if (n > SIZE_MAX / (2 * per) || buf_reserve(b, per * n + 2) < 0) {
		b->failed = 1;
		return;
	}
	b->p[b->len++] = '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			b->p[b->len++] = ',';
		b->len += put(b->p + b->len, v, i);
	}
	b->p[b->len++] = ']';
	b->p[b->len] = 0;
}

void emb_out_int32s(emb_buf *b, const char *key, const int32_t *v, size_t n)
{
	out_key(b, key, "");
	array_json(b, v, n, 12, put_i32);
}

static void floats_json(emb_buf *b, const float *v, size_t n)
{
	array_json(b, v, n, 17, put_f32);
}

void emb_out_floats(emb_buf *b, const char *key, const float *v, size_t n,
                    int b64)
{
	out_key(b, key, b64 ? "_b64" : "");
	if (b64)
		b64_floats(b, v, n);
	else
		floats_json(b, v, n);
}

void emb_out_matrix(emb_buf *b, const char *key, const float *v,
                    size_t rows, size_t cols, int b64)
{
	size_t r;

	out_key(b, key, b64 ? "_b64" : "");
	buf_addc(b, '[');
	for (r = 0; r < rows; r++) {
		if (r)
			buf_addc(b, ',');
		if (b64)
			b64_floats(b, v + r * cols, cols);
		else
			floats_json(b, v + r * cols, cols);
	}
	buf_addc(b, ']');
}

void emb_out_strings(emb_buf *b, const char *key, const char *const *v,
                     size_t n)
{
	size_t i;

	out_key(b, key, "");
	buf_addc(b, '[');
	for (i = 0; i < n; i++) {
		if (i)
			buf_addc(b, ',');
		emb_buf_add_jstr(b, v[i] ? v[i] : "", v[i] ? strlen(v[i]) : 0);
	}
	buf_addc(b, ']');
}

/* a member of the input record that is not written: DROP names it, or
 * the selection leaves it out */
static int dropped(const emb_buf *b, const member *m)
{
	const char *const *d;

	if (b->sel && !selected(b->sel, m->name, m->name_len))
		return 1;
	if (!b->drop)
		return 0;
	for (d = b->drop; *d; d++)
		if (strlen(*d) == m->name_len && !memcmp(*d, m->name, m->name_len))
			return 1;
	return 0;
}

void emb_out_end(emb_buf *b)
{
	const emb_record *rec = b->rec;
	size_t i, pass = 0, body = b->obj + 1, nnew, k = 0;
	int first = 1;

	unhide(b);
	nnew = b->len - body;
	if (b->failed) {
		b->len = b->obj;        /* drop the half-built record */
		b->rec = NULL;
		return;
	}
	if (rec) {
		for (i = 0; i < rec->n; i++)
			if (!b->gone[i] && !dropped(b, &rec->m[i]))
				pass += rec->m[i].span_len + 1;
		if (pass && !nnew)
			pass--;         /* no comma before the new members */
		/* move the new members right and copy the kept ones in front */
		if (buf_reserve(b, pass) < 0) {
			b->len = b->obj;
			b->rec = NULL;
			return;
		}
		memmove(b->p + body + pass, b->p + body, nnew);
		for (i = 0; i < rec->n; i++) {
			const member *m = &rec->m[i];
			if (b->gone[i] || dropped(b, m))
				continue;
			if (!first)
				b->p[body + k++] = ',';
			first = 0;
			memcpy(b->p + body + k, rec->text + m->span, m->span_len);
			k += m->span_len;
		}
		if (nnew && pass)
			b->p[body + k++] = ',';
		b->len += pass;
	}
	b->rec = NULL;
	emb_buf_add(b, "}\n", 2);
}
