/*
 * weights.c - the model's memory: weights (in big zeroed buffers of
 * base/bigmem.h) read from safetensors (widened,
 * checked against the config, packed for the GEMM kernels, int8 rows
 * for W8/W8A8), and the per-model and per-thread scratch.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "base/bigmem.h"
#include "nn/nn-internal.h"
/* model-owned weight memory: a list of big chunks, handed out in 64-byte
 * aligned pieces and freed all together */
#define ARENA_CHUNK ((size_t)64 << 20)

struct emb_alloc {
	emb_alloc *next;
	char *base;
	size_t len, used;       /* bytes */
};

/* ------------------------------------------------------------------ */
/* weights                                                             */

float *emb_model_alloc(emb_model *m, size_t n, emb_err *err)
{
	emb_alloc *a = m->allocs;
	size_t bytes;
	char *p;

	if (n == 0)
		n = 1;
	if (n > (SIZE_MAX - 2 * ARENA_CHUNK) / sizeof(float)) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	bytes = (n * sizeof(float) + 63) / 64 * 64;
#ifdef EMB_BIG_MALLOC
	a = NULL;       /* one buffer per call: overruns stay visible */
#endif
	if (!a || a->len - a->used < bytes) {
		size_t want = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
#ifdef EMB_BIG_MALLOC
		want = bytes;
#endif
		/* streamed by the GEMMs: 4 KiB pages (base/bigmem.h) */
		if (!(a = malloc(sizeof(*a))) ||
		    !(a->base = emb_big_alloc(want, &a->len, 0))) {
			free(a);
			emb_err_set(err, "out of memory (%zu bytes of weights)", bytes);
			return NULL;
		}
		a->used = 0;
		a->next = m->allocs;
		m->allocs = a;
	}
	p = a->base + a->used;
	a->used += bytes;
	return (float *)p;
}

/* the path to name in messages about tensors that are absent */
static void weights_path(char *buf, size_t n, const emb_model *m)
{
	snprintf(buf, n, "%s/model.safetensors.index.json", m->dir);
	if (access(buf, F_OK) != 0)
		snprintf(buf, n, "%s/model.safetensors", m->dir);
}

static void fmt_shape(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; i < ndim && off < n; i++)
		off += snprintf(buf + off, n - off, "%s%lld", i ? "," : "",
		                (long long)shape[i]);
}

/* the F32 (rows) scale tensor NAME_scale of an I8 (rows, cols) tensor,
 * or NULL (err set when err is non-NULL) */
static const emb_tensor *i8_scale(const emb_model *m, const emb_tensor *t,
                                  emb_err *err)
{
	char name[600];
	const emb_tensor *s;

	snprintf(name, sizeof(name), "%s_scale", t->name);
	s = emb_safetensors_find(m->st, name);
	if (!s || s->dtype != EMB_DT_F32 || s->ndim != 1 ||
	    s->shape[0] != t->shape[0]) {
		if (err)
			emb_err_set(err, "%s: int8 tensor '%s' needs an F32 tensor "
			            "'%s' of shape [%lld]", t->file, t->name, name,
			            (long long)t->shape[0]);
		return NULL;
	}
	return s;
}

/* emb_model_tensor without the finite check of the embedding table */
static const emb_tensor *find_tensor(emb_model *m, const char *name,
                                     int ndim, const int64_t *shape,
                                     emb_err *err)
{
	char full[512], a[160], b[160];
	const emb_tensor *t;
	int same;

	snprintf(full, sizeof(full), "%s%s", m->prefix, name);
	t = emb_safetensors_find(m->st, full);
	if (!t) {   /* TensorFlow-era names: LayerNorm.gamma / .beta */
		size_t n = strlen(full);
		char alt[520];
		if (n > 16 && !strcmp(full + n - 16, "LayerNorm.weight"))
			snprintf(alt, sizeof(alt), "%.*sgamma", (int)(n - 6), full);
		else if (n > 14 && !strcmp(full + n - 14, "LayerNorm.bias"))
			snprintf(alt, sizeof(alt), "%.*sbeta", (int)(n - 4), full);
		else
			alt[0] = 0;
		if (alt[0])
			t = emb_safetensors_find(m->st, alt);
	}
	if (!t) {
		char path[4200];
		weights_path(path, sizeof(path), m);
		emb_err_set(err, "%s: missing tensor '%s'", path, full);
		return NULL;
	}
	if (t->dtype == EMB_DT_I8 && ndim == 2 && i8_scale(m, t, NULL)) {
		/* an emb-quantize int8 weight: checked with its scale */
	} else if (t->dtype != EMB_DT_F32 && t->dtype != EMB_DT_F16 &&
	    t->dtype != EMB_DT_BF16 && t->dtype != EMB_DT_F64) {
		const char *dn = emb_dtype_name(t->dtype);
		emb_err_set(err, "%s: tensor '%s' has dtype %s, expected a float "
		            "type (F32, F16, BF16)", t->file, full, dn ? dn : "?");
		return NULL;
	}
	same = t->ndim == ndim;
	for (int i = 0; same && i < ndim; i++)
		same = t->shape[i] == shape[i];
	if (!same) {
		fmt_shape(a, sizeof(a), t->ndim, t->shape);
		fmt_shape(b, sizeof(b), ndim, shape);
		emb_err_set(err, "%s: tensor '%s' has shape [%s], config.json says "
		            "[%s]", t->file, full, a, b);
		return NULL;
	}
	return t;
}

const emb_tensor *emb_model_tensor(emb_model *m, const char *name, int ndim,
                                   const int64_t *shape, emb_err *err)
{
	const emb_tensor *t = find_tensor(m, name, ndim, shape, err);

	/* the embedding table, used whole (a tied decoder): all of it */
	if (t && t == m->word_t && emb_tensor_check_finite(t, err) < 0)
		return NULL;
	return t;
}

/* widen t into dst (t->numel floats); I8: times its row scales */
static int to_f32(const emb_model *m, float *dst, const emb_tensor *t,
                  emb_err *err)
{
	if (t->dtype == EMB_DT_I8) {
		const emb_tensor *s = i8_scale(m, t, err);
		const int8_t *q = t->data;
		int64_t cols = t->ndim == 2 ? t->shape[1] : 1;
		float sc;
		if (!s)
			return -1;
		for (int64_t i = 0; i < t->numel; i++) {
			memcpy(&sc, (const char *)s->data + (size_t)(i / cols) * 4, 4);
			dst[i] = (float)q[i] * sc;
			/* a finite scale can still make infinite weights
			 * (3e38 x 127): refused as NaN/Inf weights are, for
			 * any int8 value of the row */
			if (!isfinite(dst[i]) || !isfinite(sc * 127.0f))
				return emb_err_set(err, "%s: tensor '%s': row %lld: "
				                   "scale %g times the int8 weights is "
				                   "not finite (weights must be "
				                   "finite)", t->file, t->name,
				                   (long long)(i / cols), (double)sc);
		}
		return 0;
	}
	if (t->dtype == EMB_DT_F32) {
		memcpy(dst, t->data, (size_t)t->numel * sizeof(float));
		return 0;
	}
	return emb_tensor_to_f32(dst, t, err);
}

/* emb_model_table; WORD: the embedding table, its rows checked later */
static int table(const float **out, emb_model *m, const char *name,
                 int64_t rows, int64_t cols, int word, emb_err *err)
{
	int64_t shape[2] = { rows, cols };
	int nd = cols ? 2 : 1;
	const emb_tensor *t = word ? find_tensor(m, name, nd, shape, err) :
	                      emb_model_tensor(m, name, nd, shape, err);
	float *p;

	if (!t)
		return -1;
	if (word && t == m->word_t && !m->word_ok &&
	    !(m->word_ok = calloc(((size_t)rows + 63) / 64, sizeof(*m->word_ok))))
		return emb_err_set(err, "out of memory");
	if (t->dtype == EMB_DT_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
		*out = t->data;
		return 0;
	}
	if (!(p = emb_model_alloc(m, (size_t)t->numel, err)) || to_f32(m, p, t, err))
		return -1;
	*out = p;
	return 0;
}

int emb_model_table(const float **out, emb_model *m, const char *name,
                    int64_t rows, int64_t cols, emb_err *err)
{
	return table(out, m, name, rows, cols, 0, err);
}

int emb_model_word_table(const float **out, emb_model *m, const char *name,
                         int64_t rows, int64_t cols, emb_err *err)
{
	return table(out, m, name, rows, cols, 1, err);
}

int emb_model_word_row(const emb_model *m, int64_t id, emb_err *err)
{
	atomic_ullong *w;
	unsigned long long bit = 1ull << (id % 64);

	if (!m->word_ok)        /* none, or checked at load */
		return 0;
	w = &m->word_ok[id / 64];
	if (atomic_load_explicit(w, memory_order_relaxed) & bit)
		return 0;
	if (emb_tensor_check_row(m->word_t, id, err) < 0)
		return -1;
	atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
	return 0;
}

/*
 * t's bytes in the read-only private file mapping are not needed again
 * (packed into model memory): give their pages back, the page-aligned
 * interior only (neighbours share the edge pages).  Safe whatever reads
 * them later: untouched pages of a private file mapping are re-read
 * from the file.  Keeps peak RSS near one copy of the weights.
 */
static void drop_source(const emb_tensor *t)
{
#ifdef MADV_DONTNEED
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a, b;

	if (!t || pg == 0 || pg == (uintptr_t)-1 || t->nbytes < pg)
		return;
	a = ((uintptr_t)t->data + pg - 1) / pg * pg;
	b = ((uintptr_t)t->data + t->nbytes) / pg * pg;
	if (b > a)
		madvise((void *)a, (size_t)(b - a), MADV_DONTNEED);
#else
	(void)t;
#endif
}

/*
 * the parts of a linear layer can be packed straight from the mapped
 * file: fp32 mode, every part F32 and aligned; several parts only without
 * bf16 and with every part but the last a whole number of panels (the
 * panels of the stack are then the parts' panels one after the other)
 */
static int mapped_parts(const emb_model *m, int nparts,
                        const emb_tensor *const *wt, const int *outs)
{
	if (m->prec.w8 || (nparts > 1 && m->prec.bf16))
		return 0;
	for (int i = 0; i < nparts; i++)
		if (wt[i]->dtype != EMB_DT_F32 ||
		    (uintptr_t)wt[i]->data % sizeof(float) != 0 ||
		    (i + 1 < nparts && outs[i] % EMB_PANEL != 0))
			return 0;
	return 1;
}

int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, const emb_norm *from,
                         emb_err *err)
{
	const emb_tensor *wt[8], *bt[8];
	size_t total = 0, psize;
	int any_i8 = 0;
	float *w = NULL, *b = NULL;
	int rc = -1;

	if (nparts < 1 || nparts > 8)
		return emb_err_set(err, "linear layer '%s%s': %d parts", m->prefix,
		                   names[0], nparts);
	/* every tensor's shape first: a lying config fails here, not in malloc */
	for (int i = 0; i < nparts; i++) {
		int64_t shape[2] = { outs[i], in }, bs[1] = { outs[i] };
		if (!(wt[i] = emb_model_tensor(m, names[i], 2, shape, err)))
			return -1;
		any_i8 |= wt[i]->dtype == EMB_DT_I8;
		bt[i] = NULL;
		if (bnames && bnames[i] &&
		    !(bt[i] = emb_model_tensor(m, bnames[i], 1, bs, err)))
			return -1;
		total += (size_t)outs[i];
	}
	if (total > INT32_MAX || !(psize = emb_pack_size((int)total, in)))
		return emb_err_set(err, "linear layer '%s%s' is too large",
		                   m->prefix, names[0]);
	if (mapped_parts(m, nparts, wt, outs)) {
		/* float32 and no int8: pack straight from the mapped file */
		const float *wf[8];
		if ((nparts == 1 ? bt[0] != NULL : bnames != NULL) &&
		    !(b = emb_model_alloc(m, total, err)))
			return -1;
		for (int i = 0, row = 0; i < nparts; row += outs[i], i++) {
			if (bt[i] && to_f32(m, b + row, bt[i], err))
				return -1;
			wf[i] = wt[i]->data;
		}
		if (nparts == 1 ? emb_linear_make(out, m, NULL, wf[0], (int)total,
		                                  in, psize, 0, from, err) :
		    emb_linear_make_parts(out, m, nparts, wf, outs, in, psize, err))
			return -1;
		for (int i = 0; i < nparts; i++)
			drop_source(wt[i]);
		out->b = b;
		out->in = in;
		out->out = (int)total;
		return 0;
	}
	if (!(w = malloc(total * (size_t)in * sizeof(float))))
		return emb_err_set(err, "out of memory");
	if (bnames && !(b = emb_model_alloc(m, total, err)))
		goto out;
	for (int i = 0, row = 0; i < nparts; row += outs[i], i++) {
		if (to_f32(m, w + (size_t)row * in, wt[i], err))
			goto out;
		if (bt[i] && to_f32(m, b + row, bt[i], err))
			goto out;
	}
	if (emb_linear_make(out, m, w, NULL, (int)total, in, psize, any_i8,
	                    from, err))
		goto out;
	for (int i = 0; i < nparts; i++)
		drop_source(wt[i]);
	out->b = b;
	out->in = in;
	out->out = (int)total;
	rc = 0;
out:
	free(w);
	return rc;
}

int emb_model_linear(emb_linear *out, emb_model *m, const char *wname,
                     const char *bname, int nout, int in, emb_err *err)
{
	const char *bn[1] = { bname };

	return emb_model_linear_cat(out, m, 1, &wname, bname ? bn : NULL,
	                            &nout, in, NULL, err);
}

int emb_model_norm(emb_norm *out, emb_model *m, const char *wname,
                   const char *bname, int n, float eps, emb_err *err)
{
	return emb_model_norm_kind(out, m, wname, bname, n, eps,
	                           bname ? EMB_NORM_LN : EMB_NORM_RMS, err);
}

int emb_model_norm_kind(emb_norm *out, emb_model *m, const char *wname,
                        const char *bname, int n, float eps, int kind,
                        emb_err *err)
{
	memset(out, 0, sizeof(*out));
	if (emb_model_table(&out->w, m, wname, n, 0, err))
		return -1;
	if (bname && emb_model_table(&out->b, m, bname, n, 0, err))
		return -1;
	if (kind == EMB_NORM_LN && !out->b) {   /* LayerNorm(bias=False) */
		float *z = emb_model_alloc(m, (size_t)n, err);
		if (!z)
			return -1;
		out->b = z;
	}
	if (kind == EMB_NORM_RMS1) {            /* Gemma: x * (1 + w) */
		float *w1 = emb_model_alloc(m, (size_t)n, err);
		if (!w1)
			return -1;
		for (int i = 0; i < n; i++)
			w1[i] = 1.0f + out->w[i];
		out->w = w1;
	}
	out->rms = kind != EMB_NORM_LN;
	out->n = n;
	out->eps = eps;
	return 0;
}

/* ------------------------------------------------------------------ */
/* scratch                                                             */

float *emb_model_scratch(emb_model *m, size_t n, emb_err *err)
{
	if (emb_big_grow(&m->scratch, &m->scratch_cap, &m->scratch_len, n)) {
		emb_err_set(err, "out of memory (%zu floats of scratch)", n);
		return NULL;
	}
	return m->scratch;
}

int emb_model_thread_scratch(emb_model *m, size_t each, emb_err *err)
{
	size_t nt = (size_t)emb_threads_count(m->tp), cap = 0;

	each = (each + 15) / 16 * 16;
	if (each <= m->tscratch_each)
		return 0;
	if (each > SIZE_MAX / sizeof(float) / 2 / nt)
		return emb_err_set(err, "out of memory");
	cap = m->tscratch_len / sizeof(float);
	if (emb_big_grow(&m->tscratch, &cap, &m->tscratch_len, each * nt)) {
		m->tscratch_each = 0;
		return emb_err_set(err, "out of memory");
	}
	m->tscratch_each = each;
	return 0;
}

void emb_model_memory_release(emb_model *m)
{
	while (m->allocs) {
		emb_alloc *a = m->allocs;
		m->allocs = a->next;
		emb_big_free(a->base, a->len);
		free(a);
	}
	free(m->q8);
	free(m->word_ok);
	emb_big_free(m->scratch, m->scratch_len);
	emb_big_free(m->tscratch, m->tscratch_len);
	emb_big_free(m->rscratch, m->rscratch_len);
	emb_big_free(m->kvt, m->kvt_len);
	free(m->kv);
	m->q8 = NULL;
	m->word_ok = NULL;
	m->scratch = m->tscratch = m->rscratch = m->kvt = NULL;
	m->kv = NULL;
}
