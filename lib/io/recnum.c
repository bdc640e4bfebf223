/*
 * recnum.c - the number getters of a parsed record (io/io.h): integer
 * arrays, float vectors and matrices as JSON numbers or as base64 of
 * little-endian float32 (KEY_b64).  Values were validated by the record
 * scanner (record.c): these only convert.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/record.h"

static void ws_skip(const char *s, size_t *i)
{
	while (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n' || s[*i] == '\r')
		(*i)++;
}

/* grow a typed array */
static int grow(void **p, size_t *cap, size_t need, size_t elsize)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / elsize)
			return -1;
		c *= 2;
	}
	q = realloc(*p, c * elsize);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

int emb_record_get_int32s(const emb_record *rec, const char *key,
                          int32_t **v, size_t *n, emb_err *err)
{
	member *m = emb_record_find(rec, key);
	const char *s;
	size_t i, cnt = 0, cap = 0;
	int32_t *a = NULL;

	*v = NULL;
	*n = 0;
	if (!m)
		return emb_err_set(err, "missing field '%s'", key);
	s = rec->text;
	i = m->val;
	if (s[i] != '[')
		return emb_err_set(err, "field '%s' is not an array of integers",
		                   key);
	i++;
	ws_skip(s, &i);
	if (s[i] == ']')
		goto done;
	for (;;) {
		int neg = 0;
		int64_t x = 0;
		size_t d0;

		ws_skip(s, &i);
		if (s[i] == '-') {
			neg = 1;
			i++;
		}
		d0 = i;
		while (emb_json_digit(s[i])) {
			if (x <= (int64_t)INT32_MAX + 1)
				x = x * 10 + (s[i] - '0');
			i++;
		}
		if (i == d0 || s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
			free(a);
			return emb_err_set(err, "field '%s' is not an array of integers",
			                   key);
		}
		if (neg)
			x = -x;
		if (x > INT32_MAX || x < INT32_MIN) {
			free(a);
			return emb_err_set(err, "field '%s': element %zu is out of range",
			                   key, cnt);
		}
		if (grow((void **)&a, &cap, cnt + 1, sizeof(*a)) < 0) {
			free(a);
			return emb_err_set(err, "out of memory");
		}
		a[cnt++] = (int32_t)x;
		ws_skip(s, &i);
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] == ']')
			break;
		free(a);
		return emb_err_set(err, "field '%s' is not an array of integers",
		                   key);
	}
done:
	if (!a)
		a = malloc(sizeof(*a));
	if (!a)
		return emb_err_set(err, "out of memory");
	*v = a;
	*n = cnt;
	return 0;
}

/* parse a flat array of numbers at s[*i] == '['; appends to *a */
static int parse_float_row(const char *s, size_t *i, float **a, size_t *cnt,
                           size_t *cap, const char *key, emb_err *err)
{
	(*i)++;
	ws_skip(s, i);
	if (s[*i] == ']') {
		(*i)++;
		return 0;
	}
	for (;;) {
		char *end;
		float f;

		ws_skip(s, i);
		if (s[*i] != '-' && !emb_json_digit(s[*i]))
			return emb_err_set(err, "field '%s' holds a value that is not a number",
			                   key);
		errno = 0;
		f = strtof(s + *i, &end);
		if (isinf(f))
			return emb_err_set(err, "field '%s': number out of float32 range",
			                   key);
		*i = (size_t)(end - s);
		if (grow((void **)a, cap, *cnt + 1, sizeof(float)) < 0)
			return emb_err_set(err, "out of memory");
		(*a)[(*cnt)++] = f;
		ws_skip(s, i);
		if (s[*i] == ',') {
			(*i)++;
			continue;
		}
		if (s[*i] == ']') {
			(*i)++;
			return 0;
		}
		return emb_err_set(err, "field '%s' is not an array of numbers", key);
	}
}

static int is_little_endian(void)
{
	const uint16_t x = 1;
	return *(const unsigned char *)&x == 1;
}

/* decode one base64 string member value span into floats appended */
static int b64_row(const char *s, size_t len, float **a, size_t *cnt,
                   size_t *cap, size_t *ncols, const char *key, emb_err *err)
{
	unsigned char *raw;
	size_t i, nf, tmp;
	long rn;
	char *str;

	/* base64 never needs escapes; unescape anyway for robustness */
	str = emb_json_unescape(s, len, &tmp);
	if (!str)
		return emb_err_set(err, "out of memory");
	raw = malloc(tmp / 4 * 3 + 3);
	rn = raw ? emb_base64_decode(raw, str, tmp, 1) : -1;
	if (rn < 0 || rn % 4) {
		free(str);
		free(raw);
		return emb_err_set(err, "field '%s_b64' is not valid base64 of float32 values",
		                   key);
	}
	free(str);
	nf = (size_t)rn / 4;
	if (grow((void **)a, cap, *cnt + nf + 1, sizeof(float)) < 0) {
		free(raw);
		return emb_err_set(err, "out of memory");
	}
	for (i = 0; i < nf; i++) {
		uint32_t w;
		float f;
		if (is_little_endian())
			memcpy(&w, raw + 4 * i, 4);
		else
			w = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
			    (uint32_t)raw[4 * i + 2] << 16 |
			    (uint32_t)raw[4 * i + 3] << 24;
		memcpy(&f, &w, 4);
		if (!isfinite(f)) {
			free(raw);
			return emb_err_set(err, "field '%s_b64' holds a value that is not finite",
			                   key);
		}
		(*a)[*cnt + i] = f;
	}
	*cnt += nf;
	*ncols = nf;
	free(raw);
	return 0;
}

/* span of the next string element starting at s[*i] == '"' */
static size_t str_span(const char *s, size_t i)
{
	size_t j = i + 1;

	while (s[j] != '"') {
		if (s[j] == '\\')
			j++;
		j++;
	}
	return j + 1 - i;
}

int emb_record_get_floats(const emb_record *rec, const char *key,
                          float **v, size_t *rows, size_t *cols,
                          emb_err *err)
{
	member *m = emb_record_find(rec, key);
	const char *s = rec->text;
	float *a = NULL;
	size_t cnt = 0, cap = 0, nr = 0, nc = 0, i;
	char kb[256];

	*v = NULL;
	*rows = *cols = 0;
	if (!m) {
		snprintf(kb, sizeof(kb), "%s_b64", key);
		m = emb_record_find(rec, kb);
		if (!m)
			return emb_err_set(err, "missing field '%s'", key);
		i = m->val;
		if (s[i] == '"') {
			if (b64_row(s + i, m->val_len, &a, &cnt, &cap, &nc, key,
			            err) < 0)
				goto fail;
			nr = 1;
		} else if (s[i] == '[') {
			i++;
			ws_skip(s, &i);
			if (s[i] == ']')
				goto out;
			for (;;) {
				size_t c;
				ws_skip(s, &i);
				if (s[i] != '"') {
					emb_err_set(err, "field '%s_b64' is not a base64 string or an array of them",
					            key);
					goto fail;
				}
				if (b64_row(s + i, str_span(s, i), &a, &cnt, &cap,
				            &c, key, err) < 0)
					goto fail;
				if (nr > 0 && c != nc) {
					emb_err_set(err, "field '%s_b64': row %zu has %zu values, row 0 has %zu",
					            key, nr, c, nc);
					goto fail;
				}
				nc = c;
				nr++;
				i += str_span(s, i);
				ws_skip(s, &i);
				if (s[i] == ',') {
					i++;
					continue;
				}
				break;  /* ']' (validated JSON) */
			}
		} else {
			emb_err_set(err, "field '%s_b64' is not a base64 string or an array of them",
			            key);
			goto fail;
		}
		goto out;
	}
	i = m->val;
	if (s[i] != '[') {
		emb_err_set(err, "field '%s' is not an array of numbers", key);
		goto fail;
	}
	{
		size_t j = i + 1;
		ws_skip(s, &j);
		if (s[j] == ']')
			goto out;       /* [] : 0 x 0 */
		if (s[j] != '[') {
			if (parse_float_row(s, &i, &a, &cnt, &cap, key, err) < 0)
				goto fail;
			nr = 1;
			nc = cnt;
			goto out;
		}
	}
	/* array of arrays */
	i++;
	for (;;) {
		size_t before = cnt;
		ws_skip(s, &i);
		if (s[i] != '[') {
			emb_err_set(err, "field '%s' mixes numbers and arrays", key);
			goto fail;
		}
		if (parse_float_row(s, &i, &a, &cnt, &cap, key, err) < 0)
			goto fail;
		if (nr > 0 && cnt - before != nc) {
			emb_err_set(err, "field '%s': row %zu has %zu values, row 0 has %zu",
			            key, nr, cnt - before, nc);
			goto fail;
		}
		nc = cnt - before;
		nr++;
		ws_skip(s, &i);
		if (s[i] == ',') {
			i++;
			continue;
		}
		break;
	}
out:
	if (!a)
		a = malloc(sizeof(float));
	if (!a)
		return emb_err_set(err, "out of memory");
	*v = a;
	*rows = nr;
	*cols = nc;
	return 0;
fail:
	free(a);
	return -1;
}
