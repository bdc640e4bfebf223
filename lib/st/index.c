/*
 * index.c - the index in memory (search-internal.h): precision names,
 * the accessors of search.h, and building an index from vectors JSONL
 * records: the matrices of each precision with their norms, the ids, the
 * windows of emb-encode --chunk records.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "st/search-internal.h"

static const char *const prec_names[4] = { "f32", "f16", "int8", "binary" };

const char *emb_ix_prec_name(unsigned prec)
{
	int b = emb_ix_bit(prec);
	return b < 0 ? NULL : prec_names[b];
}

unsigned emb_ix_prec_parse(const char *s)
{
	unsigned bits = 0;

	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned b = 0;
		if (n == 3 && !memcmp(s, "f32", 3)) b = EMB_IX_F32;
		else if (n == 7 && !memcmp(s, "float32", 7)) b = EMB_IX_F32;
		else if (n == 3 && !memcmp(s, "f16", 3)) b = EMB_IX_F16;
		else if (n == 7 && !memcmp(s, "float16", 7)) b = EMB_IX_F16;
		else if (n == 4 && !memcmp(s, "int8", 4)) b = EMB_IX_INT8;
		else if (n == 6 && !memcmp(s, "binary", 6)) b = EMB_IX_BINARY;
		else if (n == 7 && !memcmp(s, "ubinary", 7)) b = EMB_IX_BINARY;
		if (!b)
			return 0;
		bits |= b;
		s += n + (s[n] == ',');
	}
	return bits;
}

size_t emb_index_count(const emb_index *ix) { return ix->n; }
int emb_index_dim(const emb_index *ix) { return ix->dim; }
unsigned emb_index_precisions(const emb_index *ix) { return ix->precs; }
const char *emb_index_id(const emb_index *ix, size_t i, size_t *len)
{
	*len = (size_t)(ix->idoff[i + 1] - ix->idoff[i]);
	return ix->ids + ix->idoff[i];
}

int emb_index_window(const emb_index *ix, size_t i, long long *chunk,
                     long long span[2])
{
	if (!ix->win || ix->win[3 * i] < 0)
		return 0;
	*chunk = ix->win[3 * i];
	span[0] = ix->win[3 * i + 1];
	span[1] = ix->win[3 * i + 2];
	return 1;
}

void emb_index_free(emb_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < sizeof(ix->own) / sizeof(ix->own[0]); i++)
		free(ix->own[i]);
	emb_safetensors_free(ix->st);
	free(ix->path);
	free(ix);
}


void emb_ix_sign_bits(uint64_t *w, const float *v, int dim, int words)
{
	unsigned char *b = (unsigned char *)w;

	memset(w, 0, (size_t)words * 8);
	for (int i = 0; i < dim; i++)
		if (v[i] > 0)
			b[i / 8] |= (unsigned char)(0x80 >> (i % 8));
}

/* ------------------------------------------------------------------ */
/* building                                                            */

static int oom(emb_err *err, const char *what)
{
	return emb_err_set(err, "%s: out of memory", what);
}

/* the matrices PRECS of rows v (n, dim) into ix (owned buffers) */
static int build_matrices(emb_index *ix, const float *v, unsigned precs,
                          emb_err *err)
{
	size_t n = ix->n, np = emb_ix_panels(n), pn = np * EMB_PANEL * (size_t)ix->dim;
	int dim = ix->dim, slot = 2;

	ix->precs = precs;
	if (dim == 0)
		pn = 0;
	for (int b = 0; b < 4; b++) {
		unsigned p = 1u << b;
		float *norm;
		if (!(precs & p))
			continue;
		if (!(norm = ix->own[slot++] = calloc(n + 1, sizeof(float))))
			goto nomem;
		ix->norm[b] = norm;
		if (p == EMB_IX_F32) {
			float *m = ix->own[slot++] = calloc(pn + 1, sizeof(float));
			if (!m)
				goto nomem;
			if (n)
				emb_pack_weights(m, v, (int)n, dim);
			ix->f32 = m;
		} else if (p == EMB_IX_F16) {
			uint16_t *m = ix->own[slot++] = calloc(pn + 1, 2);
			if (!m)
				goto nomem;
			for (size_t j = 0; j < n; j++)
				for (int kk = 0; kk < dim; kk++) {
					float x = v[j * dim + kk];
					uint16_t h = emb_f32_to_f16(x);
					/* rounded to infinity: not a number to score */
					if ((h & 0x7c00) == 0x7c00)
						return emb_err_set(err, "%s: record %zu: value "
						                   "%d (%g) is past float16's "
						                   "range (65504): no f16 "
						                   "matrix of it", ix->path,
						                   j + 1, kk, (double)x);
					m[j * dim + kk] = h;
				}
			ix->f16 = m;
		} else if (p == EMB_IX_INT8) {
			int8_t *m = ix->own[slot++] = calloc(pn + 1, 1);
			float *r = ix->own[slot++] = malloc(2 * ((size_t)dim + 1) *
			                                    sizeof(float));
			int32_t *q = malloc(((size_t)dim + 1) * sizeof(int32_t));
			if (!m || !r || !q) {
				free(q);
				goto nomem;
			}
			ix->mins = r;
			ix->maxs = r + dim;
			emb_vq_ranges_init(r, r + dim, dim);
			for (size_t j = 0; j < n; j++)
				emb_vq_ranges_add(r, r + dim, v + j * dim, dim);
			for (int kk = 0; n && kk < dim; kk++)
				if (!isfinite(r[dim + kk] - r[kk])) {
					free(q);
					return emb_err_set(err, "%s: dimension %d spans "
					                   "more than float32's range (%g "
					                   "to %g): no int8 matrix of it",
					                   ix->path, kk, (double)r[kk],
					                   (double)r[dim + kk]);
				}
			for (size_t j = 0; j < n; j++) {
				emb_vq_quantize(q, EMB_VQ_INT8, v + j * dim, dim, r, r + dim);
				for (int kk = 0; kk < dim; kk++)
					m[j * dim + kk] = (int8_t)q[kk];
			}
			free(q);
			ix->i8 = m;
		} else {
			int words = (dim + 63) / 64;
			size_t nb = (n + 7) / 8;
			uint64_t *m = ix->own[slot++] = calloc(nb * (size_t)words * 8 + 1,
			                                       8);
			uint64_t *w = malloc(((size_t)words + 1) * 8);
			if (!m || !w) {
				free(w);
				goto nomem;
			}
			ix->words = words;
			for (size_t j = 0; j < n; j++) {
				emb_ix_sign_bits(w, v + j * dim, dim, words);
				for (int k = 0; k < words; k++)
					m[(j / 8) * words * 8 + (size_t)k * 8 + j % 8] = w[k];
			}
			free(w);
			ix->bin = m;
		}
		/* the norms of the vectors as this matrix holds them */
		for (size_t j = 0; j < n; j++) {
			double s = 0;
			if (p == EMB_IX_BINARY) {
				s = dim;
			} else {
				for (int kk = 0; kk < dim; kk++) {
					float x = emb_ix_value(ix, p, j, kk);
					s += (double)x * x;
				}
			}
			norm[j] = (float)sqrt(s);
		}
	}
	return 0;
nomem:
	return oom(err, ix->path);
}

/* a window record's chunk and span (emb-encode --chunk) into w (3);
 * chunk -1 for a record that is not a window */
static int window_of(int64_t *w, const emb_record *rec, emb_err *err)
{
	size_t rlen, n = 0;
	const char *raw = emb_record_raw(rec, "chunk", &rlen);
	int32_t *span = NULL;
	char num[24], *end;
	long long c;

	w[0] = -1;
	w[1] = w[2] = 0;
	if (!raw)
		return 0;
	if (rlen >= sizeof(num))
		rlen = sizeof(num) - 1;
	memcpy(num, raw, rlen);
	num[rlen] = 0;
	errno = 0;
	c = strtoll(num, &end, 10);
	if (end == num || *end || errno || c < 0 || c >= INT32_MAX)
		return emb_err_set(err, "field 'chunk' must be a window number (a non-negative integer)");
	if (emb_record_has(rec, "span")) {
		if (emb_record_get_int32s(rec, "span", &span, &n, err) < 0)
			return -1;
		if (n != 2 || span[0] < 0 || span[1] < span[0]) {
			free(span);
			return emb_err_set(err, "field 'span' must be [start, end] of the window");
		}
		w[1] = span[0];
		w[2] = span[1];
		free(span);
	}
	w[0] = c;
	return 0;
}

int emb_index_from_jsonl(emb_index **out, const char *path, unsigned precs,
                         size_t max_line, emb_err *err)
{
	emb_reader *rd;

	*out = NULL;
	if (emb_reader_open(&rd, path, max_line, err) < 0)
		return -1;
	return emb_ix_from_reader(out, rd, path, precs, err);
}

int emb_ix_from_reader(emb_index **out, emb_reader *rd, const char *path,
                       unsigned precs, emb_err *err)
{
	emb_index *ix = calloc(1, sizeof(*ix));
	emb_record *rec = emb_record_new();
	float *v = NULL;
	char *ids = NULL;
	int64_t *off = NULL, *win = NULL;
	size_t vcap = 0, icap = 0, ocap = 0, ilen = 0, wcap = 0;
	int wins = 0;
	const char *line;
	size_t len;
	int rc;

	*out = NULL;
	if (!ix || !rec || !(ix->path = strdup(path ? path : "-")))
		goto nomem;
	if (emb_grow(&off, &ocap, 1, sizeof(*off)) < 0)
		goto nomem;
	off[0] = 0;
	while ((rc = emb_reader_next(rd, &line, &len, err)) != 0) {
		float *row;
		size_t rows, cols, idlen;
		const char *id;
		char num[32];
		emb_err e = { "" };

		if (rc < 0)     /* the reader's message, into e: no aliasing */
			snprintf(e.msg, sizeof(e.msg), "%s", err->msg);
		if (rc < 0 || emb_record_parse(rec, line, len, &e) < 0 ||
		    emb_record_get_floats(rec, "embedding", &row, &rows, &cols,
		                          &e) < 0) {
			emb_err_set(err, "%s:%zu: %s", emb_reader_name(rd),
			            emb_reader_lineno(rd), e.msg);
			goto fail;
		}
		if (rows != 1 || cols == 0 || cols > (1u << 20)) {
			free(row);
			emb_err_set(err, "%s:%zu: field 'embedding' must be one "
			            "non-empty vector", emb_reader_name(rd),
			            emb_reader_lineno(rd));
			goto fail;
		}
		if (ix->n == 0) {
			ix->dim = (int)cols;
		} else if (cols != (size_t)ix->dim) {
			free(row);
			emb_err_set(err, "%s:%zu: field 'embedding' has %zu values, "
			            "the first record %d", emb_reader_name(rd),
			            emb_reader_lineno(rd), cols, ix->dim);
			goto fail;
		}
		if (ix->n >= INT32_MAX ||
		    emb_grow(&v, &vcap, (ix->n + 1) * cols, sizeof(float)) < 0) {
			free(row);
			goto nomem;
		}
		memcpy(v + ix->n * cols, row, cols * sizeof(float));
		free(row);
		if (!(id = emb_record_raw(rec, "id", &idlen))) {
			idlen = (size_t)snprintf(num, sizeof(num), "%zu", ix->n);
			id = num;
		}
		if (emb_grow(&ids, &icap, ilen + idlen + 1, 1) < 0 ||
		    emb_grow(&off, &ocap, ix->n + 2, sizeof(*off)) < 0)
			goto nomem;
		memcpy(ids + ilen, id, idlen);
		ilen += idlen;
		if (emb_grow(&win, &wcap, 3 * (ix->n + 1), sizeof(*win)) < 0)
			goto nomem;
		if (window_of(win + 3 * ix->n, rec, &e) < 0) {
			emb_err_set(err, "%s:%zu: %s", emb_reader_name(rd),
			            emb_reader_lineno(rd), e.msg);
			goto fail;
		}
		wins |= win[3 * ix->n] >= 0;
		off[++ix->n] = (int64_t)ilen;
	}
	if (wins) {
		ix->win = win;
		ix->own[15] = win;
		win = NULL;
	}
	if (!ids && !(ids = malloc(1)))
		goto nomem;
	ix->ids = ids;
	ix->own[0] = ids;
	ix->idoff = off;
	ix->own[1] = off;
	ids = NULL;
	off = NULL;
	if (build_matrices(ix, v, precs, err) < 0)
		goto fail;
	free(v);
	free(win);
	emb_reader_free(rd);
	emb_record_free(rec);
	*out = ix;
	return 0;
nomem:
	emb_err_set(err, "%s: out of memory", path ? path : "-");
fail:
	free(v);
	free(ids);
	free(off);
	free(win);
	emb_reader_free(rd);
	emb_record_free(rec);
	emb_index_free(ix);
	return -1;
}
