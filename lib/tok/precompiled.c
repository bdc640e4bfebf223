/*
 * precompiled.c - the Precompiled normalizer: SentencePiece's
 * serialized charsmap (base64 in tokenizer.json), as Hugging Face
 * tokenizers' normalizers::precompiled with the spm_precompiled crate.
 *
 * Blob: u32 little-endian size of the trie in bytes, the trie (a Darts
 * double array of u32 units), then the replacement strings, each NUL
 * terminated.  Normalization walks the text by extended grapheme
 * clusters: a cluster shorter than 6 bytes with an entry is replaced
 * whole; otherwise each character is looked up alone.  A lookup takes
 * the value of the SHORTEST prefix of the chunk found in the trie and
 * replaces the whole chunk by its string (that is what the Rust code
 * does, and our goldens agree).
 *
 * Alignments: as HF's replace(): the replacement characters take the
 * alignment of the replaced ones in order; extra ones are inserted
 * (aligned to the previous character), fewer ones drop the rest.
 * Every index is checked: a truncated or corrupt charsmap fails at load
 * or, for a bad offset inside the trie, is treated as "no entry".
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"

void tk_charsmap_release(tk_charsmap *m)
{
	free(m->units);
	free(m->norm);
	memset(m, 0, sizeof(*m));
}

int tk_charsmap_parse(tk_charsmap *m, const char *b64, size_t len,
                      const char *file, const char *field, emb_err *err)
{
	unsigned char *blob;
	long n;
	uint32_t tsize;
	size_t i;

	memset(m, 0, sizeof(*m));
	blob = malloc(len / 4 * 3 + 4);
	if (!blob)
		return emb_err_set(err, "out of memory");
	n = emb_base64_decode(blob, b64, len, 0);
	if (n < 0) {
		free(blob);
		return emb_err_set(err, "%s: field '%s.precompiled_charsmap' is "
		                   "not valid base64", file, field);
	}
	if (n < 4) {
		free(blob);
		return emb_err_set(err, "%s: field '%s.precompiled_charsmap' is "
		                   "truncated (%ld bytes)", file, field, n);
	}
	tsize = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 |
	        (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 24;
	if (tsize % 4 || tsize > (size_t)n - 4 || tsize == 0) {
		free(blob);
		return emb_err_set(err, "%s: field '%s.precompiled_charsmap' is "
		                   "truncated or corrupt (trie of %u bytes in "
		                   "%ld)", file, field, tsize, n);
	}
	m->n_units = tsize / 4;
	m->units = malloc(tsize);
	m->n_norm = (size_t)n - 4 - tsize;
	m->norm = malloc(m->n_norm + 1);
	if (!m->units || !m->norm) {
		free(blob);
		tk_charsmap_release(m);
		return emb_err_set(err, "out of memory");
	}
	for (i = 0; i < m->n_units; i++) {
		const unsigned char *p = blob + 4 + 4 * i;
		m->units[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		              (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	}
	memcpy(m->norm, blob + 4 + tsize, m->n_norm);
	m->norm[m->n_norm] = 0;
	free(blob);
	/* the strings must be UTF-8 (Rust: String::from_utf8) */
	{
		tk_str t = {0};
		int bad = tk_utf8_decode(&t, m->norm, m->n_norm, NULL) < 0;
		tk_str_release(&t);
		if (bad) {
			tk_charsmap_release(m);
			return emb_err_set(err, "%s: field "
			                   "'%s.precompiled_charsmap' holds invalid "
			                   "UTF-8", file, field);
		}
	}
	return 0;
}

/* Darts unit fields */
#define U_LEAF(u) (((u) >> 8) & 1)
#define U_VALUE(u) ((u) & 0x7fffffffu)
#define U_LABEL(u) ((u) & (0x80000000u | 0xffu))
#define U_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))

/* replacement of the shortest prefix of key[0..len) in the trie, or
 * NULL; *rlen its length */
static const char *lookup(const tk_charsmap *m, const unsigned char *key,
                          size_t len, size_t *rlen)
{
	size_t pos = 0, i;
	uint32_t u;

	if (!m->n_units)
		return NULL;
	u = m->units[0];
	pos ^= U_OFFSET(u);
	for (i = 0; i < len; i++) {
		if (!key[i])
			break;
		pos ^= key[i];
		if (pos >= m->n_units)
			return NULL;
		u = m->units[pos];
		if (U_LABEL(u) != key[i])
			return NULL;
		pos ^= U_OFFSET(u);
		if (pos >= m->n_units)
			return NULL;
		if (U_LEAF(u)) {
			size_t v = U_VALUE(m->units[pos]);
			if (v >= m->n_norm)
				return NULL;
			*rlen = strlen(m->norm + v);
			return m->norm + v;
		}
	}
	return NULL;
}

static int ascii_alnum(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	       (c >= 'a' && c <= 'z');
}

int tk_charsmap_ascii_stable(const tk_charsmap *m)
{
	for (int c = 0x20; c < 0x7f; c++) {
		unsigned char k = (unsigned char)c;
		size_t rlen;
		const char *r = lookup(m, &k, 1, &rlen);
		int d;
		if (!r)
			continue;
		if (rlen != 1)
			return 0;
		d = (unsigned char)r[0];
		if (d < 0x20 || d >= 0x7f)
			return 0;
		if ((c == ' ') != (d == ' ') || ascii_alnum(c) != ascii_alnum(d))
			return 0;
	}
	return 1;
}

/* append the replacement R (UTF-8, RLEN bytes) of s[a, b) to t */
static int replace(tk_str *t, const tk_str *s, size_t a, size_t b,
                   const char *r, size_t rlen)
{
	tk_str tmp = {0};
	size_t k, old = b - a;
	int32_t pa, pb;

	if (tk_utf8_decode(&tmp, r, rlen, NULL) < 0) {
		tk_str_release(&tmp);
		return 0;  /* checked at load: cannot happen */
	}
	if (tk_str_reserve(t, t->n + tmp.n) < 0) {
		tk_str_release(&tmp);
		return -1;
	}
	for (k = 0; k < tmp.n; k++) {
		if (k < old) {
			pa = s->o[2 * (a + k)];
			pb = s->o[2 * (a + k) + 1];
		} else if (t->n) {
			pa = t->o[2 * t->n - 2];
			pb = t->o[2 * t->n - 1];
		} else {
			pa = pb = s->n ? s->o[0] : 0;
		}
		tk_str_put(t, tmp.c[k], pa, pb);
	}
	tk_str_release(&tmp);
	return 0;
}

int tk_charsmap_normalize(const tk_charsmap *m, tk_str *s, tk_str *t)
{
	size_t i = 0, k;
	unsigned char u8[64];
	utf8proc_int32_t state = 0;

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	while (i < s->n) {
		size_t j = i + 1, len = 0, rlen;
		const char *r;
		/* the extended grapheme cluster [i, j) */
		state = 0;
		while (j < s->n &&
		       !utf8proc_grapheme_break_stateful(
		               (utf8proc_int32_t)s->c[j - 1],
		               (utf8proc_int32_t)s->c[j], &state))
			j++;
		for (k = i; k < j && len < 6; k++)
			len += emb_utf8_put((char *)u8 + len, s->c[k]);
		if (k == j && len < 6 && (r = lookup(m, u8, len, &rlen))) {
			if (replace(t, s, i, j, r, rlen) < 0)
				return -1;
			i = j;
			continue;
		}
		for (k = i; k < j; k++) {
			size_t n = emb_utf8_put((char *)u8, s->c[k]);
			if ((r = lookup(m, u8, n, &rlen))) {
				if (replace(t, s, k, k + 1, r, rlen) < 0)
					return -1;
			} else {
				if (tk_str_reserve(t, t->n + 1) < 0)
					return -1;
				tk_str_put(t, s->c[k], s->o[2 * k],
				           s->o[2 * k + 1]);
			}
		}
		i = j;
	}
	{
		tk_str x = *s;
		*s = *t;
		*t = x;
	}
	return 0;
}
