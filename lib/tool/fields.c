/*
 * fields.c - --fields / --drop: keep only the chosen top-level members of
 * an output record.  The record is the writer's own serialization (one
 * JSON object, no space between members), scanned once: member
 * boundaries only, values are skipped without being parsed.
 */
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "tool/fields.h"

struct emb_fields {
	char **keep;            /* NULL: every member */
	size_t nkeep;
	char **drop;
	size_t ndrop;
	char *key;              /* scratch: an unescaped key */
	size_t key_cap;
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
	free(f->key);
	free(f);
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at '"': the byte after the closing quote, or NULL */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\') {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* the end of the value at p, or NULL */
static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	while (p < end) {
		switch (*p) {
		case '"':
			p = skip_string(p, end);
			if (!p)
				return NULL;
			if (depth == 0)
				return p;
			continue;
		case '{': case '[':
			depth++;
			break;
		case '}': case ']':
			if (depth == 0)
				return p;       /* a scalar ends here */
			if (--depth == 0)
				return p + 1;
			break;
		case ',': case ' ': case '\t': case '\n': case '\r':
			if (depth == 0)
				return p;
			break;
		}
		p++;
	}
	return depth == 0 ? p : NULL;
}

static int hex4(const char *p, const char *end, unsigned *v)
{
	*v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		*v <<= 4;
		if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
		else return -1;
	}
	return 0;
}

/* the key between the quotes s..e, unescaped: *k (borrowed from f or
 * from the record), *kl; -1 on a bad escape or out of memory */
static int key_text(emb_fields *f, const char *s, const char *e,
                    const char **k, size_t *kl)
{
	size_t n = (size_t)(e - s), o = 0;

	if (!memchr(s, '\\', n)) {
		*k = s;
		*kl = n;
		return 0;
	}
	if (n + 1 > f->key_cap) {
		char *p = realloc(f->key, n + 1);
		if (!p)
			return -1;
		f->key = p;
		f->key_cap = n + 1;
	}
	while (s < e) {
		unsigned cp, lo;
		if (*s != '\\') {
			f->key[o++] = *s++;
			continue;
		}
		if (++s >= e)
			return -1;
		switch (*s++) {
		case '"': f->key[o++] = '"'; break;
		case '\\': f->key[o++] = '\\'; break;
		case '/': f->key[o++] = '/'; break;
		case 'b': f->key[o++] = '\b'; break;
		case 'f': f->key[o++] = '\f'; break;
		case 'n': f->key[o++] = '\n'; break;
		case 'r': f->key[o++] = '\r'; break;
		case 't': f->key[o++] = '\t'; break;
		case 'u':
			/* \uXXXX is 6 bytes, its UTF-8 at most 3; a pair is 12
			 * bytes for 4: the output never outgrows the input */
			if (hex4(s, e, &cp) < 0)
				return -1;
			s += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && e - s >= 6 && s[0] == '\\' &&
			    s[1] == 'u' && hex4(s + 2, e, &lo) == 0 &&
			    lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			}
			o += emb_utf8_put(f->key + o, cp);
			break;
		default:
			return -1;
		}
	}
	*k = f->key;
	*kl = o;
	return 0;
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

int emb_fields_apply(emb_fields *f, emb_buf *b, size_t start, emb_err *err)
{
	char *base = b->p + start;
	const char *end = b->p + b->len, *p;
	size_t o = 1, nkept = 0;

	if (start >= b->len)
		return 0;       /* nothing written (a buffer out of memory) */
	p = skip_ws(base, end);
	if (p >= end || *p != '{')
		goto bad;
	p = skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return 0;
	for (;;) {
		const char *ks = p, *ke, *ve, *k;
		size_t kl;
		int keep;

		if (p >= end || *p != '"' || !(ke = skip_string(p, end)))
			goto bad;
		if (key_text(f, ks + 1, ke - 1, &k, &kl) < 0)
			goto bad;
		p = skip_ws(ke, end);
		if (p >= end || *p != ':')
			goto bad;
		p = skip_ws(p + 1, end);
		ve = skip_value(p, end);
		if (!ve || ve == p)
			goto bad;
		keep = (!f->keep || listed(f->keep, f->nkeep, k, kl)) &&
		       !listed(f->drop, f->ndrop, k, kl);
		if (keep) {
			/* o never passes ks: the move is always leftwards */
			if (nkept++)
				base[o++] = ',';
			memmove(base + o, ks, (size_t)(ve - ks));
			o += (size_t)(ve - ks);
		}
		p = skip_ws(ve, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}')
			break;
		goto bad;
	}
	base[o++] = '}';
	base[o++] = '\n';
	b->len = start + o;
	b->p[b->len] = 0;
	return 0;
bad:
	return emb_err_set(err, "--fields/--drop: the output record is not a JSON object");
}
