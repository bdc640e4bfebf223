/*
 * search.c - exact and quantized top-k search over a vector index (see
 * search.h for the model, emb-search(1) for the file format).
 *
 * The float scores are a GEMM: the queries of a batch against one block
 * of documents at a time, with the documents as the packed "weights" of
 * kernels.h (the f32 matrix is stored packed; f16 and int8 blocks are
 * widened into a per-thread packed buffer first).  Threads take blocks;
 * each keeps a bounded heap per query, and the heaps are merged at the
 * end under one total order (score descending, then document index), so
 * the result does not depend on which thread scored which block.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/threadpool.h"
#include "kern/kernels.h"
#include "st/search.h"

#define FORMAT "emb-search-1"
#define FBLOCK 256              /* documents per float block (16 panels) */
#define BBLOCK 512              /* documents per binary block (L1) */
#define QMAX 256                /* queries per pass */
#define HEAP_BYTES ((size_t)64 << 20)   /* all threads' heaps at most */
#define NORM_EPS 1e-12f
/* past this norm a document is scored exactly (in double): 1/norm would
 * lose precision in float, and a float product could overflow */
#define NORM_EXACT 1e30

struct emb_index {
	char *path;
	emb_safetensors *st;    /* index file (NULL: built in memory) */
	size_t n;
	int dim;
	unsigned precs;
	const float *f32;       /* panels (ceil(n/16), dim, 16) */
	const uint16_t *f16;    /* (n, dim) row-major */
	const int8_t *i8;       /* (n, dim) row-major */
	const float *mins, *maxs;   /* int8 ranges (dim) */
	const uint64_t *bin;    /* panels (ceil(n/8), words, 8) */
	int words;              /* 64-bit words per binary vector */
	const float *norm[4];   /* per precision bit index: L2 norms (n) */
	const char *ids;        /* concatenated raw JSON ids */
	const int64_t *idoff;   /* (n + 1) */
	const int64_t *win;     /* (n, 3): chunk, span start, span end of
	                           window records (chunk -1: not a window);
	                           NULL: no window in the index */
	/* owned buffers when built in memory */
	void *own[16];
};

static int prec_bit(unsigned p)
{
	return p == EMB_IX_F32 ? 0 : p == EMB_IX_F16 ? 1 : p == EMB_IX_INT8 ? 2 :
	       p == EMB_IX_BINARY ? 3 : -1;
}

static const char *const prec_names[4] = { "f32", "f16", "int8", "binary" };

const char *emb_ix_prec_name(unsigned prec)
{
	int b = prec_bit(prec);
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
const char *emb_index_name(const emb_index *ix) { return ix->path; }

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

/* ------------------------------------------------------------------ */
static inline float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f,
	         man = h & 0x3ff, x;
	float f;

	if (e == 0x1f) {
		x = sign | 0x7f800000 | (man << 13);
	} else if (e == 0) {
		/* zero or subnormal: man * 2^-24 is exact */
		f = (float)man * 5.9604644775390625e-8f;
		return sign ? -f : f;
	} else {
		x = sign | ((e + 112) << 23) | (man << 13);
	}
	memcpy(&f, &x, 4);
	return f;
}

/* the bucket center of int8 value q in dimension i: emb_vq_dequantize's
 * arithmetic exactly */
static inline float i8_value(const emb_index *ix, int i, int q)
{
	float step = (ix->maxs[i] - ix->mins[i]) / 255.0f;
	return ix->mins[i] + ((float)(q + 128) + 0.5f) * step;
}

/* element kk of document j in a panel layout of 16 */
static inline size_t pidx(int dim, size_t j, int kk)
{
	return (j / EMB_PANEL) * (size_t)dim * EMB_PANEL + (size_t)kk * EMB_PANEL +
	       j % EMB_PANEL;
}

/* document j's value kk in precision p (float ones) */
static inline float doc_value(const emb_index *ix, unsigned p, size_t j, int kk)
{
	size_t at = pidx(ix->dim, j, kk);

	switch (p) {
	case EMB_IX_F32: return ix->f32[at];
	case EMB_IX_F16: return f16_to_f32(ix->f16[j * ix->dim + kk]);
	default: return i8_value(ix, kk, ix->i8[j * ix->dim + kk]);
	}
}

/* the sign bits of v (dim) as packbits, in words (zero padded) */
static void sign_bits(uint64_t *w, const float *v, int dim, int words)
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

static size_t panels(size_t n)
{
	return (n + EMB_PANEL - 1) / EMB_PANEL;
}

/* the matrices PRECS of rows v (n, dim) into ix (owned buffers) */
static int build_matrices(emb_index *ix, const float *v, unsigned precs,
                          emb_err *err)
{
	size_t n = ix->n, np = panels(n), pn = np * EMB_PANEL * (size_t)ix->dim;
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
				sign_bits(w, v + j * dim, dim, words);
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
					float x = doc_value(ix, p, j, kk);
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

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -1;
		c *= 2;
	}
	if (!(q = realloc(*p, c * size)))
		return -1;
	*p = q;
	*cap = c;
	return 0;
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

static int from_reader(emb_index **out, emb_reader *rd, const char *path,
                       unsigned precs, emb_err *err);

int emb_index_from_jsonl(emb_index **out, const char *path, unsigned precs,
                         size_t max_line, emb_err *err)
{
	emb_reader *rd;

	*out = NULL;
	if (emb_reader_open(&rd, path, max_line, err) < 0)
		return -1;
	return from_reader(out, rd, path, precs, err);
}

/* the index of the records of RD (stolen) */
static int from_reader(emb_index **out, emb_reader *rd, const char *path,
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
	if (grow((void **)&off, &ocap, 1, sizeof(*off)) < 0)
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
		    grow((void **)&v, &vcap, (ix->n + 1) * cols, sizeof(float)) < 0) {
			free(row);
			goto nomem;
		}
		memcpy(v + ix->n * cols, row, cols * sizeof(float));
		free(row);
		if (!(id = emb_record_raw(rec, "id", &idlen))) {
			idlen = (size_t)snprintf(num, sizeof(num), "%zu", ix->n);
			id = num;
		}
		if (grow((void **)&ids, &icap, ilen + idlen + 1, 1) < 0 ||
		    grow((void **)&off, &ocap, ix->n + 2, sizeof(*off)) < 0)
			goto nomem;
		memcpy(ids + ilen, id, idlen);
		ilen += idlen;
		if (grow((void **)&win, &wcap, 3 * (ix->n + 1), sizeof(*win)) < 0)
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

/* ------------------------------------------------------------------ */
/* the index file                                                      */

typedef struct wtensor {
	const char *name;
	const char *dtype;
	int ndim;
	long long shape[3];
	const void *data;
	size_t bytes;
} wtensor;

int emb_index_write(const emb_index *ix, const char *path, emb_err *err)
{
	wtensor t[13];
	int nt = 0, dim = ix->dim;
	size_t n = ix->n, np = panels(n), nb = (n + 7) / 8;
	size_t pn = dim ? np * EMB_PANEL * (size_t)dim : 0;
	json_t *hdr = json_object(), *meta = json_object();
	char *htext = NULL, num[32];
	uint64_t off = 0;
	FILE *f = NULL;
	int rc = -1;

	if (!hdr || !meta)
		goto nomem;
	/* 8-byte types first, then 4, 2 and 1: every tensor aligned */
	t[nt++] = (wtensor){ "ids.offsets", "I64", 1, { (long long)n + 1 },
	                     ix->idoff, (n + 1) * 8 };
	if (ix->win)
		t[nt++] = (wtensor){ "windows", "I64", 2, { (long long)n, 3 },
		                     ix->win, n * 3 * 8 };
	if (ix->bin)
		t[nt++] = (wtensor){ "binary", "U8", 3,
		                     { (long long)nb, ix->words, 64 }, ix->bin,
		                     nb * (size_t)ix->words * 64 };
	if (ix->f32)
		t[nt++] = (wtensor){ "f32", "F32", 3, { (long long)np, dim, 16 },
		                     ix->f32, pn * 4 };
	for (int b = 0; b < 4; b++) {
		static const char *const nn[4] = { "norms.f32", "norms.f16",
		                                   "norms.int8", "norms.binary" };
		if (ix->norm[b])
			t[nt++] = (wtensor){ nn[b], "F32", 1, { (long long)n },
			                     ix->norm[b], n * 4 };
	}
	if (ix->i8) {
		t[nt++] = (wtensor){ "int8.min", "F32", 1, { dim }, ix->mins,
		                     (size_t)dim * 4 };
		t[nt++] = (wtensor){ "int8.max", "F32", 1, { dim }, ix->maxs,
		                     (size_t)dim * 4 };
	}
	if (ix->f16)
		t[nt++] = (wtensor){ "f16", "F16", 2, { (long long)n, dim },
		                     ix->f16, n * (size_t)dim * 2 };
	if (ix->i8)
		t[nt++] = (wtensor){ "int8", "I8", 2, { (long long)n, dim },
		                     ix->i8, n * (size_t)dim };
	t[nt++] = (wtensor){ "ids", "U8", 1, { (long long)ix->idoff[n] },
	                     ix->ids, (size_t)ix->idoff[n] };
	for (int i = 0; i < nt; i++) {
		json_t *o = json_object(), *shape = json_array();
		if (!o || !shape)
			goto nomem;
		for (int d = 0; d < t[i].ndim; d++)
			json_array_append_new(shape, json_integer(t[i].shape[d]));
		json_object_set_new(o, "dtype", json_string(t[i].dtype));
		json_object_set_new(o, "shape", shape);
		json_object_set_new(o, "data_offsets", json_pack("[II]",
			(json_int_t)off, (json_int_t)(off + t[i].bytes)));
		json_object_set_new(hdr, t[i].name, o);
		off += t[i].bytes;
	}
	json_object_set_new(meta, "format", json_string(FORMAT));
	snprintf(num, sizeof(num), "%d", dim);
	json_object_set_new(meta, "dim", json_string(num));
	snprintf(num, sizeof(num), "%zu", n);
	json_object_set_new(meta, "count", json_string(num));
	json_object_set_new(hdr, "__metadata__", meta);
	meta = NULL;
	if (!(htext = json_dumps(hdr, JSON_COMPACT)))
		goto nomem;
	if (!(f = fopen(path, "wb"))) {
		emb_err_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	emb_safetensors_write_header(f, htext);
	for (int i = 0; i < nt; i++)
		if (t[i].bytes)
			fwrite(t[i].data, 1, t[i].bytes, f);
	if (ferror(f) | (fclose(f) != 0)) {
		f = NULL;
		emb_err_set(err, "%s: write error: %s", path, strerror(errno));
		goto out;
	}
	f = NULL;
	rc = 0;
	goto out;
nomem:
	emb_err_set(err, "%s: out of memory", path);
out:
	if (f)
		fclose(f);
	free(htext);
	json_decref(meta);
	json_decref(hdr);
	return rc;
}

/* tensor NAME of dtype DT and shape (a, b, c) (ndim of them), or NULL
 * when absent; -1 in *bad when present but wrong */
static const uint64_t empty_data[1];

static const void *want(const emb_index *ix, const char *name, emb_dtype dt,
                        int ndim, int64_t a, int64_t b, int64_t c, int *bad,
                        emb_err *err)
{
	const emb_tensor *t = emb_safetensors_find(ix->st, name);
	int64_t sh[3] = { a, b, c };

	if (!t || *bad)
		return NULL;
	if (t->dtype != dt || t->ndim != ndim)
		goto wrong;
	for (int d = 0; d < ndim; d++)
		if (t->shape[d] != sh[d])
			goto wrong;
	if (!t->data || !t->nbytes)
		return empty_data;
	/* read in place: the values must be aligned (the binary matrix is
	 * read as 64-bit words) */
	if ((uintptr_t)t->data % (dt == EMB_DT_U8 ? 8 : emb_dtype_size(dt))) {
		*bad = 1;
		emb_err_set(err, "%s: tensor '%s' is not aligned to its values in "
		            "the file (emb-search --build writes aligned tensors)",
		            ix->path, name);
		return NULL;
	}
	return t->data;
wrong:
	*bad = 1;
	emb_err_set(err, "%s: tensor '%s' is not %s with the shape the index "
	            "needs", ix->path, name, emb_dtype_name(dt));
	return NULL;
}

/* the L2 norm of document j in precision p, in double (cannot overflow
 * for finite float32 values); NAN when a value is not finite */
static double doc_norm(const emb_index *ix, unsigned p, size_t j)
{
	double ss = 0;

	if (p == EMB_IX_BINARY)
		return sqrt((double)ix->dim);
	for (int kk = 0; kk < ix->dim; kk++) {
		double x = doc_value(ix, p, j, kk);
		ss += x * x;
	}
	return sqrt(ss);
}

/*
 * An index file's stored norms are not trusted: each is checked against
 * the norm of its vector, computed here (which also finds a NaN or
 * infinity in the matrix), as the writer stores it (float).
 */
static int check_norms(const emb_index *ix, emb_err *err)
{
	static const char *const nn[4] = { "norms.f32", "norms.f16",
	                                   "norms.int8", "norms.binary" };

	for (int b = 0; b < 4; b++) {
		unsigned p = 1u << b;
		if (!(ix->precs & p))
			continue;
		for (size_t j = 0; j < ix->n; j++) {
			double d = doc_norm(ix, p, j);
			float want = (float)d, got = ix->norm[b][j];
			if (!isfinite(d))
				return emb_err_set(err, "%s: tensor '%s': document %zu "
				                   "holds a value that is not finite",
				                   ix->path, prec_names[b], j);
			if (got == want || (isfinite(want) && isfinite(got) &&
			    fabs((double)got - d) <= 1e-6 * d))
				continue;
			return emb_err_set(err, "%s: tensor '%s': document %zu's "
			                   "norm %g is not its vector's (%g)",
			                   ix->path, nn[b], j, (double)got, d);
		}
	}
	return 0;
}

static int open_file(emb_index *ix, emb_err *err)
{
	const char *fmt, *s;
	const emb_tensor *ids, *off;
	int bad = 0;
	long long dim, n;
	char *end;
	size_t np, nb;

	if (emb_safetensors_open(&ix->st, ix->path, err) < 0)
		return -1;
	fmt = emb_safetensors_meta(ix->st, "format");
	if (!fmt || strcmp(fmt, FORMAT))
		return emb_err_set(err, "%s: not an emb-search index (metadata "
		                   "'format' is not '" FORMAT "')", ix->path);
	s = emb_safetensors_meta(ix->st, "dim");
	errno = 0;
	dim = s ? strtoll(s, &end, 10) : -1;
	if (!s || *end || errno || dim < 0 || dim > (1 << 20))
		return emb_err_set(err, "%s: metadata 'dim' is missing or bad",
		                   ix->path);
	s = emb_safetensors_meta(ix->st, "count");
	n = s ? strtoll(s, &end, 10) : -1;
	if (!s || *end || errno || n < 0 || n >= INT32_MAX || (n > 0 && !dim))
		return emb_err_set(err, "%s: metadata 'count' is missing or bad",
		                   ix->path);
	ix->dim = (int)dim;
	ix->n = (size_t)n;
	np = panels(ix->n);
	nb = (ix->n + 7) / 8;
	ix->words = (ix->dim + 63) / 64;
	off = emb_safetensors_find(ix->st, "ids.offsets");
	ids = emb_safetensors_find(ix->st, "ids");
	if (!off || !ids || off->dtype != EMB_DT_I64 || off->ndim != 1 ||
	    off->shape[0] != n + 1 || ids->dtype != EMB_DT_U8 || ids->ndim != 1)
		return emb_err_set(err, "%s: tensors 'ids' (U8) and 'ids.offsets' "
		                   "(I64, count + 1) are missing or bad", ix->path);
	if ((uintptr_t)off->data % 8)
		return emb_err_set(err, "%s: tensor 'ids.offsets' is not aligned to "
		                   "its values in the file", ix->path);
	ix->idoff = off->data;
	ix->ids = ids->numel ? ids->data : "";
	if (ix->idoff[0] != 0 || ix->idoff[n] != ids->numel)
		return emb_err_set(err, "%s: tensor 'ids.offsets' does not span "
		                   "'ids'", ix->path);
	for (long long i = 0; i < n; i++)
		if (ix->idoff[i + 1] <= ix->idoff[i])
			return emb_err_set(err, "%s: tensor 'ids.offsets': id %lld is "
			                   "empty or out of order", ix->path, i);
	ix->f32 = want(ix, "f32", EMB_DT_F32, 3, (int64_t)np, dim, 16, &bad, err);
	ix->f16 = want(ix, "f16", EMB_DT_F16, 2, n, dim, 0, &bad, err);
	ix->i8 = want(ix, "int8", EMB_DT_I8, 2, n, dim, 0, &bad, err);
	ix->bin = want(ix, "binary", EMB_DT_U8, 3, (int64_t)nb, ix->words, 64,
	               &bad, err);
	if (ix->i8) {
		ix->mins = want(ix, "int8.min", EMB_DT_F32, 1, dim, 0, 0, &bad, err);
		ix->maxs = want(ix, "int8.max", EMB_DT_F32, 1, dim, 0, 0, &bad, err);
		if (!bad && (!ix->mins || !ix->maxs))
			return emb_err_set(err, "%s: tensors 'int8.min' and 'int8.max' "
			                   "are missing", ix->path);
		for (int i = 0; !bad && i < ix->dim; i++)
			if (!isfinite(ix->mins[i]) || !isfinite(ix->maxs[i]) ||
			    !isfinite(ix->maxs[i] - ix->mins[i]) ||
			    ix->maxs[i] < ix->mins[i])
				return emb_err_set(err, "%s: tensors 'int8.min' and "
				                   "'int8.max': dimension %d is not a "
				                   "finite range", ix->path, i);
	}
	for (int b = 0; b < 4; b++) {
		static const char *const nn[4] = { "norms.f32", "norms.f16",
		                                   "norms.int8", "norms.binary" };
		const void *m = b == 0 ? (const void *)ix->f32 :
		                b == 1 ? (const void *)ix->f16 :
		                b == 2 ? (const void *)ix->i8 : (const void *)ix->bin;
		if (!m)
			continue;
		ix->precs |= 1u << b;
		ix->norm[b] = want(ix, nn[b], EMB_DT_F32, 1, n, 0, 0, &bad, err);
		if (!bad && !ix->norm[b])
			return emb_err_set(err, "%s: tensor '%s' is missing", ix->path,
			                   nn[b]);
	}
	if (bad)
		return -1;
	if (!ix->precs)
		return emb_err_set(err, "%s: the index holds no vectors (no f32, "
		                   "f16, int8 or binary tensor)", ix->path);
	return check_norms(ix, err);
}

/* the optional tensor 'windows' (n, 3) of an index file */
static int open_windows(emb_index *ix, emb_err *err)
{
	int bad = 0;

	ix->win = want(ix, "windows", EMB_DT_I64, 2, (int64_t)ix->n, 3, 0, &bad,
	               err);
	if (bad)
		return -1;
	for (size_t i = 0; ix->win && i < ix->n; i++)
		if (ix->win[3 * i] >= INT32_MAX || ix->win[3 * i + 1] < 0 ||
		    ix->win[3 * i + 2] < ix->win[3 * i + 1])
			return emb_err_set(err, "%s: tensor 'windows': row %zu is not a chunk and a span",
			                   ix->path, i);
	return 0;
}

int emb_index_open(emb_index **out, const char *path, size_t max_line,
                   emb_err *err)
{
	unsigned char h[9];
	size_t size;
	int fd, isst = 0;
	emb_index *ix;
	emb_reader *rd;

	*out = NULL;
	/* the one opener of io/file.h: a regular file, opened without
	 * waiting (a FIFO or /dev/zero as the index is refused) */
	if ((fd = emb_file_open(NULL, path, &size, err)) < 0)
		return -1;
	if (size >= 9 && pread(fd, h, 9, 0) == 9 && h[8] == '{') {
		uint64_t hl = 0;
		for (int i = 0; i < 8; i++)
			hl |= (uint64_t)h[i] << (8 * i);
		isst = hl <= (uint64_t)size - 8;
	}
	if (!isst) {
		/* vectors JSONL, read from the descriptor checked here */
		if (emb_reader_open_fd(&rd, fd, path, max_line, err) < 0)
			return -1;
		return from_reader(out, rd, path, EMB_IX_F32, err);
	}
	close(fd);
	if (!(ix = calloc(1, sizeof(*ix))) || !(ix->path = strdup(path))) {
		free(ix);
		return emb_err_set(err, "%s: out of memory", path);
	}
	if (open_file(ix, err) < 0 || open_windows(ix, err) < 0) {
		emb_index_free(ix);
		return -1;
	}
	*out = ix;
	return 0;
}

/* ------------------------------------------------------------------ */
/* queries                                                             */

int emb_search_query(float **v, int *dim, const emb_index *ix,
                     const emb_record *rec, emb_err *err)
{
	static const struct { const char *name; int kind; } qf[] = {
		{ "int8", EMB_VQ_INT8 }, { "uint8", EMB_VQ_UINT8 },
		{ "binary", EMB_VQ_BINARY }, { "ubinary", EMB_VQ_UBINARY },
	};
	size_t rows, cols;

	*v = NULL;
	*dim = 0;
	if (emb_record_has(rec, "embedding") ||
	    emb_record_has(rec, "embedding_b64")) {
		if (emb_record_get_floats(rec, "embedding", v, &rows, &cols, err) < 0)
			return -1;
		if (rows != 1 || cols == 0) {
			free(*v);
			*v = NULL;
			return emb_err_set(err, "field 'embedding' must be one "
			                   "non-empty vector");
		}
		for (size_t i = 0; i < cols; i++)
			if (!isfinite((*v)[i])) {
				free(*v);
				*v = NULL;
				return emb_err_set(err, "field 'embedding': value %zu is not "
				                   "finite", i);
			}
		if (ix->n && cols != (size_t)ix->dim) {
			free(*v);
			*v = NULL;
			return emb_err_set(err, "field 'embedding' has %zu values, the "
			                   "index %s %d", cols, ix->path, ix->dim);
		}
		*dim = (int)cols;
		return 0;
	}
	for (size_t f = 0; f < sizeof(qf) / sizeof(qf[0]); f++) {
		int32_t *q;
		size_t nq, want;
		int kind = qf[f].kind, lo;
		if (!emb_record_has(rec, qf[f].name))
			continue;
		if (emb_record_get_int32s(rec, qf[f].name, &q, &nq, err) < 0)
			return -1;
		if ((kind == EMB_VQ_INT8 || kind == EMB_VQ_UINT8) && !ix->mins) {
			free(q);
			return emb_err_set(err, "field '%s' needs the int8 ranges of an "
			                   "int8 index, and %s has none", qf[f].name,
			                   ix->path);
		}
		want = emb_vq_width(kind, ix->dim);
		if (ix->n == 0 && (kind == EMB_VQ_BINARY || kind == EMB_VQ_UBINARY))
			want = nq;
		if (nq != want || nq == 0) {
			free(q);
			return emb_err_set(err, "field '%s' has %zu values, the index %s "
			                   "needs %zu (dimension %d)", qf[f].name, nq,
			                   ix->path, want, ix->dim);
		}
		lo = kind == EMB_VQ_UINT8 || kind == EMB_VQ_UBINARY ? 0 : -128;
		for (size_t i = 0; i < nq; i++)
			if (q[i] < lo || q[i] > lo + 255) {
				free(q);
				return emb_err_set(err, "field '%s': value at position %zu "
				                   "is out of range", qf[f].name, i);
			}
		*dim = ix->n ? ix->dim : (int)(nq * 8);
		if (!(*v = malloc(((size_t)*dim + 1) * sizeof(float)))) {
			free(q);
			return emb_err_set(err, "out of memory");
		}
		emb_vq_dequantize(*v, kind, q, *dim, ix->mins, ix->maxs);
		free(q);
		return 0;
	}
	return emb_err_set(err, "missing field 'embedding' (or embedding_b64, "
	                   "int8, uint8, binary, ubinary)");
}

/* ------------------------------------------------------------------ */
/* top-k                                                               */

/* a ranks before b */
static inline int before(float as, uint32_t ai, float bs, uint32_t bi)
{
	return as > bs || (as == bs && ai < bi);
}

/* min-heap on rank: h[0] is the worst kept */
static inline void heap_push(emb_hit *h, int *n, int cap, float s,
                             uint32_t doc)
{
	int i;

	if (*n < cap) {
		i = (*n)++;
		while (i > 0) {
			int p = (i - 1) / 2;
			if (!before(h[p].score, h[p].doc, s, doc))
				break;
			h[i] = h[p];
			i = p;
		}
		h[i].score = s;
		h[i].doc = doc;
		return;
	}
	if (!before(s, doc, h[0].score, h[0].doc))
		return;
	i = 0;
	for (;;) {
		int l = 2 * i + 1, r = l + 1, w = i;
		float ws = s;
		uint32_t wd = doc;
		if (l < *n && before(ws, wd, h[l].score, h[l].doc)) {
			w = l;
			ws = h[l].score;
			wd = h[l].doc;
		}
		if (r < *n && before(ws, wd, h[r].score, h[r].doc))
			w = r;
		if (w == i)
			break;
		h[i] = h[w];
		i = w;
	}
	h[i].score = s;
	h[i].doc = doc;
}

static int hit_cmp(const void *a, const void *b)
{
	const emb_hit *x = a, *y = b;

	if (before(x->score, x->doc, y->score, y->doc))
		return -1;
	return before(y->score, y->doc, x->score, x->doc) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* the searcher                                                        */

struct emb_search {
	const emb_index *ix;
	const emb_kernels *kern;
	emb_threads *tp;
	int nth;
	int k, kc;              /* results; candidates kept in the first stage */
	int score;
	unsigned first, with;
	int use_thr;
	float thr0;             /* --threshold */
	float thr;              /* the first stage's entry bar */
	int qmax;               /* queries per pass */
	float *inv;             /* (n) 1 / max(norm, eps) of `first`, cosine */
	float *invw;            /* same for `with` */
	float *htab;            /* (64 words + 1) binary score of each distance
	                           (an index file may set its padding bits) */
	float *i8lo, *i8step;   /* (dim) int8 dequantization, as i8_value */
	float *rbuf;            /* (4, dim) documents widened for rescore */
	/* per thread */
	float **sbuf;           /* (qmax, FBLOCK) scores */
	float **dbuf;           /* (FBLOCK, dim) packed block, f16 / int8 */
	emb_hit **heap;         /* (qmax, kc) */
	int **hn;               /* (qmax) */
	int **ovf;              /* (qmax) 1: a score past float32's range */
	/* the pass */
	float *qn;              /* (qmax, dim) queries (normalized: cosine) */
	uint64_t *qb;           /* (qmax, words) query sign bits */
	int m;
	emb_hit *merge;         /* (nth * kc) */
};


unsigned emb_search_first(const emb_search *s) { return s->first; }
unsigned emb_search_with(const emb_search *s) { return s->with; }

static unsigned finest(unsigned precs)
{
	for (int b = 0; b < 4; b++)
		if (precs & (1u << b))
			return 1u << b;
	return 0;
}

void emb_search_free(emb_search *s)
{
	if (!s)
		return;
	for (int t = 0; t < s->nth; t++) {
		if (s->sbuf) free(s->sbuf[t]);
		if (s->dbuf) free(s->dbuf[t]);
		if (s->heap) free(s->heap[t]);
		if (s->hn) free(s->hn[t]);
		if (s->ovf) free(s->ovf[t]);
	}
	free(s->ovf);
	free(s->sbuf);
	free(s->dbuf);
	free(s->heap);
	free(s->hn);
	free(s->inv);
	free(s->invw);
	free(s->htab);
	free(s->rbuf);
	free(s->i8lo);
	free(s->i8step);
	free(s->qn);
	free(s->qb);
	free(s->merge);
	emb_threads_free(s->tp);
	free(s);
}

static float *inv_norms(const emb_index *ix, unsigned p)
{
	const float *nm = ix->norm[prec_bit(p)];
	float *inv = malloc((ix->n + 1) * sizeof(float));

	if (!inv)
		return NULL;
	/* a norm past NORM_EXACT (or past float's range): NAN, which sends
	 * each of its scores to exact_score */
	for (size_t j = 0; j < ix->n; j++)
		inv[j] = !(nm[j] <= NORM_EXACT) ? NAN :
		         1.0f / (nm[j] > NORM_EPS ? nm[j] : NORM_EPS);
	return inv;
}

int emb_search_new(emb_search **out, const emb_index *ix,
                   const emb_search_opts *o, emb_err *err)
{
	emb_search *s = calloc(1, sizeof(*s));
	int dim = ix->dim > 0 ? ix->dim : 1, words = (dim + 63) / 64;
	size_t kc;

	*out = NULL;
	if (!s)
		return emb_err_set(err, "out of memory");
	s->ix = ix;
	s->k = o->k > 0 ? o->k : 1;
	s->score = o->score;
	s->use_thr = o->use_threshold;
	s->thr0 = o->threshold;
	s->first = o->first ? o->first : finest(ix->precs);
	if (!(ix->precs & s->first)) {
		emb_err_set(err, "%s: the index holds no %s vectors (it has %s%s%s%s)",
		            ix->path, emb_ix_prec_name(s->first),
		            ix->precs & EMB_IX_F32 ? "f32 " : "",
		            ix->precs & EMB_IX_F16 ? "f16 " : "",
		            ix->precs & EMB_IX_INT8 ? "int8 " : "",
		            ix->precs & EMB_IX_BINARY ? "binary " : "");
		goto fail;
	}
	if (o->rescore > 0) {
		unsigned finer = ix->precs & (s->first - 1);
		s->with = o->with ? o->with : finest(finer);
		if (!s->with || !(finer & s->with)) {
			emb_err_set(err, "%s: nothing to rescore %s results with: "
			            "rescoring needs %s vectors of a finer precision "
			            "(f32 > f16 > int8 > binary)", ix->path,
			            emb_ix_prec_name(s->first),
			            s->with ? emb_ix_prec_name(s->with) : "index");
			goto fail;
		}
	}
	kc = (size_t)s->k * (size_t)(o->rescore > 0 ? o->rescore : 1);
	if (kc > ix->n)
		kc = ix->n;
	if (kc < 1)
		kc = 1;
	s->kc = (int)kc;
	s->nth = o->threads > 0 ? o->threads : emb_online_cpus();
	if (emb_kernels_select(&s->kern, err) < 0 ||
	    emb_threads_new(&s->tp, s->nth, err) < 0)
		goto fail;
	s->nth = emb_threads_count(s->tp);
	s->qmax = QMAX;
	while (s->qmax > 1 &&
	       (size_t)s->qmax * kc * sizeof(emb_hit) * (size_t)s->nth > HEAP_BYTES)
		s->qmax /= 2;
	if (s->score == EMB_SCORE_COSINE && ix->n) {
		if (!(s->inv = inv_norms(ix, s->first)) ||
		    (s->with && !(s->invw = inv_norms(ix, s->with))))
			goto nomem;
	}
	if (ix->i8) {
		if (!(s->i8lo = malloc((size_t)dim * sizeof(float))) ||
		    !(s->i8step = malloc((size_t)dim * sizeof(float))))
			goto nomem;
		for (int kk = 0; kk < ix->dim; kk++) {
			s->i8lo[kk] = ix->mins[kk];
			s->i8step[kk] = (ix->maxs[kk] - ix->mins[kk]) / 255.0f;
		}
	}
	if (!(s->htab = malloc(((size_t)words * 64 + 1) * sizeof(float))) ||
	    !(s->rbuf = malloc((size_t)4 * dim * sizeof(float))))
		goto nomem;
	for (int h = 0; h <= words * 64; h++)
		s->htab[h] = s->score == EMB_SCORE_COSINE ?
		             (float)(dim - 2 * h) / (float)dim : (float)(dim - 2 * h);
	if (!(s->sbuf = calloc((size_t)s->nth, sizeof(*s->sbuf))) ||
	    !(s->dbuf = calloc((size_t)s->nth, sizeof(*s->dbuf))) ||
	    !(s->heap = calloc((size_t)s->nth, sizeof(*s->heap))) ||
	    !(s->hn = calloc((size_t)s->nth, sizeof(*s->hn))) ||
	    !(s->ovf = calloc((size_t)s->nth, sizeof(*s->ovf))) ||
	    !(s->qn = malloc((size_t)s->qmax * dim * sizeof(float))) ||
	    !(s->qb = malloc((size_t)s->qmax * words * 8)) ||
	    !(s->merge = malloc((size_t)s->nth * kc * sizeof(emb_hit))))
		goto nomem;
	for (int t = 0; t < s->nth; t++) {
		if (!(s->sbuf[t] = malloc((size_t)s->qmax * FBLOCK * sizeof(float))) ||
		    !(s->heap[t] = malloc((size_t)s->qmax * kc * sizeof(emb_hit))) ||
		    !(s->hn[t] = malloc((size_t)s->qmax * sizeof(int))) ||
		    !(s->ovf[t] = malloc((size_t)s->qmax * sizeof(int))))
			goto nomem;
		if ((s->first & (EMB_IX_F16 | EMB_IX_INT8)) &&
		    !(s->dbuf[t] = malloc((size_t)FBLOCK * dim * sizeof(float))))
			goto nomem;
	}
	*out = s;
	return 0;
nomem:
	emb_err_set(err, "out of memory");
fail:
	emb_search_free(s);
	return -1;
}

/* documents [j0, j0 + nb) of a float precision: packed floats */
static const float *float_block(emb_search *s, int tid, size_t j0, int nb)
{
	const emb_index *ix = s->ix;
	size_t at = (j0 / EMB_PANEL) * (size_t)ix->dim * EMB_PANEL;
	size_t cnt = panels((size_t)nb) * EMB_PANEL * (size_t)ix->dim;
	float *d = s->dbuf[tid];

	if (s->first == EMB_IX_F32)
		return ix->f32 + at;
	if (nb % EMB_PANEL)     /* the lanes past the last document */
		memset(d + cnt - (size_t)EMB_PANEL * ix->dim, 0,
		       (size_t)EMB_PANEL * ix->dim * sizeof(float));
	if (s->first == EMB_IX_F16) {
		const uint16_t *h = ix->f16 + j0 * ix->dim;
		for (int j = 0; j < nb; j++, h += ix->dim)
			for (int kk = 0; kk < ix->dim; kk++)
				d[pidx(ix->dim, (size_t)j, kk)] = f16_to_f32(h[kk]);
	} else {
		const int8_t *q = ix->i8 + j0 * ix->dim;
		for (int j = 0; j < nb; j++, q += ix->dim)
			for (int kk = 0; kk < ix->dim; kk++)
				d[pidx(ix->dim, (size_t)j, kk)] = s->i8lo[kk] +
					((float)(q[kk] + 128) + 0.5f) * s->i8step[kk];
	}
	return d;
}

/*
 * The score of document j against query qv (dim; normalized for cosine)
 * in precision p, in double: for the few whose float score is not a
 * number (a product or sum past float32's range, a norm past
 * NORM_EXACT).  Cosine: in [-1, 1]; 0 against a zero vector.  Dot: may
 * lie past float32's range, which the caller reports.
 */
static double exact_score(const emb_search *s, unsigned p, const float *qv,
                          size_t j)
{
	const emb_index *ix = s->ix;
	double dot = 0, ss = 0;

	for (int kk = 0; kk < ix->dim; kk++) {
		double x = doc_value(ix, p, j, kk);
		dot += (double)qv[kk] * x;
		ss += x * x;
	}
	if (s->score != EMB_SCORE_COSINE)
		return dot;
	ss = sqrt(ss);
	return dot / (ss > NORM_EPS ? ss : NORM_EPS);
}

/* one query's scan of a block: its heap, the bar, where to say that a
 * score is past float32's range */
struct scan {
	const emb_search *s;
	const float *qv;        /* the query, as the GEMM saw it */
	emb_hit *h;
	int *n, cap;
	float thr;
	int *ovf;
};

/* document doc's float score x into the heap; a score that is not a
 * number is computed again exactly, and never ranked when that is past
 * float32's range either */
static void offer(const struct scan *sc, float x, uint32_t doc)
{
	if (!isfinite(x)) {
		double e = exact_score(sc->s, sc->s->first, sc->qv, doc);
		if (!(fabs(e) <= FLT_MAX)) {
			*sc->ovf = 1;
			return;
		}
		x = (float)e;
	}
	if (*sc->n < sc->cap ? x >= sc->thr :
	    x > sc->h[0].score || (x == sc->h[0].score && doc < sc->h[0].doc))
		heap_push(sc->h, sc->n, sc->cap, x, doc);
}

/* scores row (nb) of documents j0.. (times inv, when not NULL) into the
 * heap of sc (entry bar sc->thr while not full) */
static void scan_row(const struct scan *sc, const float *row,
                     const float *inv, uint32_t j0, int nb)
{
	int j = 0;

	/* filling: every score that clears the bar goes in */
	for (; j < nb && *sc->n < sc->cap; j++)
		offer(sc, inv ? row[j] * inv[j] : row[j], j0 + (uint32_t)j);
	if (j >= nb)
		return;
#ifdef __SSE2__
	/* full: 4 at a time, only a lane at or above the worst kept, or not
	 * a number, needs the exact comparison (ties by index) */
	for (; j + 4 <= nb; j += 4) {
		__m128 v = _mm_loadu_ps(row + j);
		if (inv)
			v = _mm_mul_ps(v, _mm_loadu_ps(inv + j));
		__m128 in = _mm_or_ps(_mm_cmpge_ps(v, _mm_set1_ps(sc->h[0].score)),
		                      _mm_cmpnlt_ps(_mm_andnot_ps(_mm_set1_ps(-0.0f),
		                                                  v),
		                                    _mm_set1_ps(INFINITY)));
		if (!_mm_movemask_ps(in))
			continue;
		for (int l = j; l < j + 4; l++)
			offer(sc, inv ? row[l] * inv[l] : row[l], j0 + (uint32_t)l);
	}
#endif
	for (; j < nb; j++)
		offer(sc, inv ? row[j] * inv[j] : row[j], j0 + (uint32_t)j);
}

static void float_task(void *ctx, size_t begin, size_t end, int tid)
{
	emb_search *s = ctx;
	const emb_index *ix = s->ix;
	float *y = s->sbuf[tid];
	int kc = s->kc;

	for (size_t b = begin; b < end; b++) {
		size_t j0 = b * FBLOCK;
		int nb = ix->n - j0 < FBLOCK ? (int)(ix->n - j0) : FBLOCK;
		const float *wp = float_block(s, tid, j0, nb);
		// queries (m, dim) @ block (nb, dim)^T -> y (m, nb), stride FBLOCK
		s->kern->gemm(y, FBLOCK, s->qn, ix->dim, wp, NULL, s->m, nb, ix->dim);
		for (int q = 0; q < s->m; q++) {
			struct scan sc = { s, s->qn + (size_t)q * ix->dim,
			                   s->heap[tid] + (size_t)q * kc,
			                   &s->hn[tid][q], kc, s->thr,
			                   &s->ovf[tid][q] };
			scan_row(&sc, y + (size_t)q * FBLOCK,
			         s->inv ? s->inv + j0 : NULL, (uint32_t)j0, nb);
		}
	}
}

/*
 * Binary first stage.  Distances of one query's words qw (W) to the
 * documents of a block's panels (W words x 8 documents each): the kernel
 * table's hamming8; the scan keeps -distance as the heap score (the real
 * score, a function of the distance, is put in at the merge), so that
 * the bar is an integer.
 */

/* the 8 distances of a panel into the heap of one query */
static inline void bin_take(emb_hit *h, int *n, int kc, const float *tab,
                            float thr, const int32_t *d, size_t doc0,
                            size_t j1)
{
	int lim = j1 - doc0 < 8 ? (int)(j1 - doc0) : 8;

	for (int c = 0; c < lim; c++) {
		float v = -(float)d[c];
		uint32_t doc = (uint32_t)(doc0 + c);
		if (*n < kc ? tab[d[c]] >= thr :
		    (v > h[0].score || (v == h[0].score && doc < h[0].doc)))
			heap_push(h, n, kc, v, doc);
	}
}

static void binary_task(void *ctx, size_t begin, size_t end, int tid)
{
	emb_search *s = ctx;
	const emb_index *ix = s->ix;
	size_t n = ix->n;
	int kc = s->kc, W = ix->words;
	int32_t d[BBLOCK];

	for (size_t b = begin; b < end; b++) {
		size_t j0 = b * BBLOCK, j1 = n - j0 < BBLOCK ? n : j0 + BBLOCK;
		size_t p0 = j0 / 8, np = (j1 - j0 + 7) / 8;
		for (int q = 0; q < s->m; q++) {
			const uint64_t *qw = s->qb + (size_t)q * W;
			emb_hit *h = s->heap[tid] + (size_t)q * kc;
			int *hn = &s->hn[tid][q];
			s->kern->hamming8(d, ix->bin + p0 * (size_t)W * 8, qw, W, np);
			for (size_t p = 0; p < np; p++) {
				const int32_t *dp = d + p * 8;
				/* bar: a distance above the worst kept cannot enter */
				int bar = *hn < kc ? INT32_MAX - 1 : (int)-h[0].score, any = 0;
				for (int c = 0; c < 8; c++)
					any |= dp[c] <= bar;
				if (any)
					bin_take(h, hn, kc, s->htab, s->thr, dp, (p0 + p) * 8, j1);
			}
		}
	}
}

/* query q (normalized for cosine) against the documents h[0..n) in
 * precision p, four at a time: the kernel table's dot4, one multiply-add
 * per element in order as its GEMM computes an element, so that an f32
 * rescore gives the exact search's score bit for bit; f16 and int8
 * documents are widened into s->rbuf first */
static int rescore(emb_search *s, unsigned p, const float *q, emb_hit *h,
                   int n)
{
	int ovf = 0;

	const emb_index *ix = s->ix;
	int dim = ix->dim;

	for (int c0 = 0; c0 < n; c0 += 4) {
		int g = n - c0 < 4 ? n - c0 : 4;
		float acc[4];
		const float *x[4];
		size_t j[4], inc = 1;
		for (int c = 0; c < 4; c++) {
			float *r = s->rbuf + (size_t)c * dim;
			j[c] = h[c0 + (c < g ? c : 0)].doc;
			x[c] = r;
			if (p == EMB_IX_F32) {
				x[c] = ix->f32 + pidx(dim, j[c], 0);
				inc = EMB_PANEL;
			} else if (p == EMB_IX_F16) {
				const uint16_t *d = ix->f16 + j[c] * dim;
				for (int kk = 0; kk < dim; kk++)
					r[kk] = f16_to_f32(d[kk]);
			} else {
				const int8_t *d = ix->i8 + j[c] * dim;
				for (int kk = 0; kk < dim; kk++)
					r[kk] = s->i8lo[kk] + ((float)(d[kk] + 128) + 0.5f) *
					        s->i8step[kk];
			}
		}
		s->kern->dot4(acc, q, x, inc, dim);
		for (int c = 0; c < g; c++) {
			float v = s->invw ? acc[c] * s->invw[j[c]] : acc[c];
			if (!isfinite(v)) {     /* as offer() */
				double e = exact_score(s, p, q, j[c]);
				if (!(fabs(e) <= FLT_MAX))
					ovf = 1;
				v = (float)e;
			}
			h[c0 + c].score = v;
		}
	}
	return ovf;
}

void emb_search_run(emb_search *s, emb_hit *hits, int *nhits,
                    const float *q, int m)
{
	const emb_index *ix = s->ix;
	int dim = ix->dim, W = ix->words;

	for (int q0 = 0; q0 < m; q0 += s->qmax) {
		int mm = m - q0 < s->qmax ? m - q0 : s->qmax;
		s->m = mm;
		if (ix->n == 0) {
			for (int i = 0; i < mm; i++)
				nhits[q0 + i] = 0;
			continue;
		}
		memcpy(s->qn, q + (size_t)q0 * dim, (size_t)mm * dim * sizeof(float));
		if (s->score == EMB_SCORE_COSINE && s->first != EMB_IX_BINARY)
			for (int i = 0; i < mm; i++)
				emb_normalize(s->qn + (size_t)i * dim, dim);
		for (int t = 0; t < s->nth; t++) {
			memset(s->hn[t], 0, (size_t)mm * sizeof(int));
			memset(s->ovf[t], 0, (size_t)mm * sizeof(int));
		}
		s->thr = s->use_thr && !s->with ? s->thr0 : -INFINITY;
		if (s->first == EMB_IX_BINARY) {
			for (int i = 0; i < mm; i++)
				sign_bits(s->qb + (size_t)i * W, s->qn + (size_t)i * dim, dim, W);
			emb_threads_for(s->tp, (ix->n + BBLOCK - 1) / BBLOCK, 1,
			                binary_task, s);
		} else {
			emb_threads_for(s->tp, (ix->n + FBLOCK - 1) / FBLOCK, 1,
			                float_task, s);
		}
		for (int i = 0; i < mm; i++) {
			emb_hit *out = hits + (size_t)(q0 + i) * s->k;
			int nm = 0, keep, ovf = 0;
			for (int t = 0; t < s->nth; t++)
				ovf |= s->ovf[t][i];
			if (ovf) {      /* a score past float32's range */
				nhits[q0 + i] = -1;
				continue;
			}
			for (int t = 0; t < s->nth; t++) {
				int c = s->hn[t][i];
				memcpy(s->merge + nm, s->heap[t] + (size_t)i * s->kc,
				       (size_t)c * sizeof(emb_hit));
				nm += c;
			}
			qsort(s->merge, (size_t)nm, sizeof(emb_hit), hit_cmp);
			if (nm > s->kc)
				nm = s->kc;
			if (s->first == EMB_IX_BINARY)
				for (int c = 0; c < nm; c++)
					s->merge[c].score = s->htab[(int)-s->merge[c].score];
			if (s->with) {
				const float *qv = q + (size_t)(q0 + i) * dim;
				float *qn = s->qn;   /* row 0 is free again: reuse */
				memcpy(qn, qv, (size_t)dim * sizeof(float));
				if (s->score == EMB_SCORE_COSINE)
					emb_normalize(qn, dim);
				if (rescore(s, s->with, qn, s->merge, nm)) {
					nhits[q0 + i] = -1;
					continue;
				}
				qsort(s->merge, (size_t)nm, sizeof(emb_hit), hit_cmp);
			}
			keep = 0;
			for (int c = 0; c < nm && keep < s->k; c++) {
				if (s->use_thr && !(s->merge[c].score >= s->thr0))
					break;
				out[keep++] = s->merge[c];
			}
			nhits[q0 + i] = keep;
		}
	}
}

void emb_search_naive(emb_hit *hits, int *nhits, const emb_index *ix,
                      unsigned prec, int score, const float *q, int k)
{
	emb_hit *all = malloc((ix->n + 1) * sizeof(emb_hit));
	int dim = ix->dim;
	double qq = 0;

	*nhits = 0;
	if (!all)
		return;
	for (int kk = 0; kk < dim; kk++)
		qq += (double)q[kk] * q[kk];
	qq = sqrt(qq);
	for (size_t j = 0; j < ix->n; j++) {
		double s = 0, dd = 0;
		if (prec == EMB_IX_BINARY) {
			for (int kk = 0; kk < dim; kk++) {
				size_t w = j / 8 * (size_t)ix->words * 8 +
				           (size_t)(kk / 64) * 8 + j % 8;
				const unsigned char *b = (const unsigned char *)(ix->bin + w);
				int bit = b[(kk % 64) / 8] & (0x80 >> (kk % 8)) ? 1 : -1;
				s += q[kk] > 0 ? bit : -bit;
			}
			if (score == EMB_SCORE_COSINE)
				s /= dim;
		} else {
			for (int kk = 0; kk < dim; kk++) {
				double x = doc_value(ix, prec, j, kk);
				s += q[kk] * x;
				dd += x * x;
			}
			if (score == EMB_SCORE_COSINE)
				s /= (qq > 1e-12 ? qq : 1e-12) *
				     (sqrt(dd) > 1e-12 ? sqrt(dd) : 1e-12);
		}
		all[j].score = (float)s;
		all[j].doc = (uint32_t)j;
	}
	qsort(all, ix->n, sizeof(emb_hit), hit_cmp);
	for (size_t j = 0; j < ix->n && (int)j < k; j++)
		hits[(*nhits)++] = all[j];
	free(all);
}

/* ,"chunk":C,"span":[S,E] of a window document */
static void window_json(emb_buf *b, const emb_index *ix, size_t doc)
{
	long long c, sp[2];
	char num[96];
	int n;

	if (!emb_index_window(ix, doc, &c, sp))
		return;
	n = snprintf(num, sizeof(num), ",\"chunk\":%lld,\"span\":[%lld,%lld]",
	             c, sp[0], sp[1]);
	emb_buf_add(b, num, (size_t)n);
}

int emb_search_results_json(emb_buf *b, const emb_index *ix,
                            const emb_hit *hits, int n, emb_err *err)
{
	char num[32];

	if (n < 0)
		return emb_err_set(err, "a dot product with a document of %s is "
		                   "past float32's range (above 3.4e38 in "
		                   "magnitude): no score to rank it by (--score "
		                   "cosine, in [-1, 1], has no such limit)",
		                   ix->path);
	emb_buf_add(b, "[", 1);
	for (int i = 0; i < n; i++) {
		size_t len;
		const char *id = emb_index_id(ix, hits[i].doc, &len);
		if (ix->st) {
			json_error_t je;
			json_t *v = json_loadb(id, len, JSON_DECODE_ANY |
			                       JSON_ALLOW_NUL, &je);
			if (!v)
				return emb_err_set(err, "%s: the id of document %u is not "
				                   "a JSON value", ix->path, hits[i].doc);
			json_decref(v);
			if (memchr(id, '\n', len) || memchr(id, '\r', len))
				return emb_err_set(err, "%s: the id of document %u spans "
				                   "lines", ix->path, hits[i].doc);
		}
		emb_buf_add(b, i ? ",{\"id\":" : "{\"id\":", i ? 7 : 6);
		emb_buf_add(b, id, len);
		window_json(b, ix, hits[i].doc);
		emb_buf_add(b, ",\"score\":", 9);
		emb_fmt_f32(num, hits[i].score);
		emb_buf_add(b, num, strlen(num));
		emb_buf_add(b, "}", 1);
	}
	emb_buf_add(b, "]", 1);
	return 0;
}
