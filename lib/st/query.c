/*
 * query.c - the two ends of a search: the query vector of a record (a
 * float embedding or emb-quantize's int8 / binary fields) and the
 * results as JSON (ids as the index holds them, checked when they come
 * from an index file).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "st/search-internal.h"

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
