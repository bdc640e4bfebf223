/*
 * indexfile.c - the index file (emb-search(1)): safetensors with the
 * metadata format "emb-search-1", written by emb_index_write, opened by
 * mmap and read in place.  An index file is untrusted input: every
 * tensor's dtype, shape and alignment, the ids' offsets, the int8
 * ranges, the windows and each stored norm (against its vector) are
 * checked before anything is searched.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "st/search-internal.h"

#define FORMAT "emb-search-1"

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
	size_t n = ix->n, np = emb_ix_panels(n), nb = (n + 7) / 8;
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
		double x = emb_ix_value(ix, p, j, kk);
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
				                   ix->path, emb_ix_prec_name(1u << b), j);
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
	np = emb_ix_panels(ix->n);
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
		return emb_ix_from_reader(out, rd, path, EMB_IX_F32, err);
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
