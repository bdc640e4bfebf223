/*
 * weights.c - the model's memory: big zeroed buffers (huge pages when
 * the kernel gives them), weights read from safetensors (widened,
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
#include "nn/nn-internal.h"
/*
 * Big buffers (weights, scratch) come from anonymous mappings with
 * transparent huge pages asked for: already zero (no memset), one page
 * fault per 2 MiB instead of per 4 KiB (faults are dear in VMs), and
 * fewer TLB misses when the GEMMs stream the weights.  Sanitizer builds
 * use malloc instead, so that overruns are still caught.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BIG_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BIG_MALLOC 1
#endif
#endif
#define BIG_ALIGN ((size_t)2 << 20)

/* a zeroed buffer of at least bytes, 2 MiB aligned (64 with BIG_MALLOC);
 * *len: what big_free needs.  NULL when out of memory. */
static void *big_alloc(size_t bytes, size_t *len)
{
#ifdef BIG_MALLOC
	void *p;

	bytes = (bytes + 63) / 64 * 64;
	if (!bytes || !(p = aligned_alloc(64, bytes)))
		return NULL;
	memset(p, 0, bytes);
	*len = bytes;
	return p;
#else
	char *p, *a;
	size_t n;

	if (bytes > SIZE_MAX - 2 * BIG_ALIGN)
		return NULL;
	bytes = (bytes + BIG_ALIGN - 1) / BIG_ALIGN * BIG_ALIGN;
	n = bytes + BIG_ALIGN;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* trim to a 2 MiB aligned range */
	a = (char *)(((uintptr_t)p + BIG_ALIGN - 1) / BIG_ALIGN * BIG_ALIGN);
	if (a > p)
		munmap(p, (size_t)(a - p));
	if ((size_t)(a - p) < BIG_ALIGN)
		munmap(a + bytes, BIG_ALIGN - (size_t)(a - p));
#ifdef MADV_HUGEPAGE
	madvise(a, bytes, MADV_HUGEPAGE);
#endif
	*len = bytes;
	return a;
#endif
}

static void big_free(void *p, size_t len)
{
	if (!p)
		return;
#ifdef BIG_MALLOC
	(void)len;
	free(p);
#else
	munmap(p, len);
#endif
}

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
#ifdef BIG_MALLOC
	a = NULL;       /* one buffer per call: overruns stay visible */
#endif
	if (!a || a->len - a->used < bytes) {
		size_t want = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
#ifdef BIG_MALLOC
		want = bytes;
#endif
		if (!(a = malloc(sizeof(*a))) || !(a->base = big_alloc(want, &a->len))) {
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

const emb_tensor *emb_model_tensor(emb_model *m, const char *name, int ndim,
                                   const int64_t *shape, emb_err *err)
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

int emb_model_table(const float **out, emb_model *m, const char *name,
                    int64_t rows, int64_t cols, emb_err *err)
{
	int64_t shape[2] = { rows, cols };
	const emb_tensor *t = emb_model_tensor(m, name, cols ? 2 : 1, shape, err);
	float *p;

	if (!t)
		return -1;
	if (t->dtype == EMB_DT_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
		*out = t->data;
		return 0;
	}
	if (!(p = emb_model_alloc(m, (size_t)t->numel, err)) || to_f32(m, p, t, err))
		return -1;
	*out = p;
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
 * SmoothQuant (alpha 0.5) for a linear W (n,k) that reads the output of
 * the norm m->smooth_from: per input channel j,
 *   s_j = sqrt(amax_x_j) / sqrt(amax_w_j),  amax_w_j = max_i |W[i][j]|,
 * with amax_x_j estimated without calibration data from the norm as
 * |gain_j| + |bias_j| (the norm's output is gain * (a value of a few
 * units at most) + bias).  A factor common to every channel changes
 * nothing (the per-row scales absorb it), so s_j is taken relative to
 * the median channel's and rounded to a power of two: W[:, j] * s_j and
 * x_j / s_j are exact in float32 (the product is unchanged before the
 * int8 rounding), and a layer without outlier channels keeps s = 1 on
 * nearly every channel instead of a random split between two powers.
 * W becomes W * s (in place), out->xcs (k, model-owned) = 1 / s.
 * Channels with a zero estimate or a zero column keep s_j = 1.
 */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int smooth_weights(emb_linear *out, emb_model *m, float *w, int n,
                          int k, emb_err *err)
{
	const emb_norm *nm = m->smooth_from;
	float *cs = emb_model_alloc(m, (size_t)k, err);
	double *l2 = malloc(2 * (size_t)k * sizeof(double)), *srt = l2 + k;
	double mid = 0;
	int nv = 0;

	if (!cs || !l2) {
		free(l2);
		return cs ? emb_err_set(err, "out of memory") : -1;
	}
	for (int j = 0; j < k; j++)
		cs[j] = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < k; j++) {
			float a = fabsf(w[(size_t)i * k + j]);
			cs[j] = a > cs[j] ? a : cs[j];
		}
	/* log2 s_j (NAN: keep 1), and their median */
	for (int j = 0; j < k; j++) {
		float ax = fabsf(nm->w[j]) + (nm->b ? fabsf(nm->b[j]) : 0.0f);
		l2[j] = NAN;
		if (ax > 0 && cs[j] > 0 && isfinite(ax))
			srt[nv++] = l2[j] = 0.5 * (log2((double)ax) - log2((double)cs[j]));
	}
	if (nv) {
		qsort(srt, (size_t)nv, sizeof(double), cmp_double);
		mid = srt[nv / 2];
	}
	for (int j = 0; j < k; j++) {
		/* relative to the median channel, rounded, within +-30 */
		double e = isnan(l2[j]) ? 0 : nearbyint(l2[j] - mid);
		e = e < -30 ? -30 : e > 30 ? 30 : e;
		cs[j] = ldexpf(1.0f, -(int)e);   /* 1 / s_j */
	}
	free(l2);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < k; j++)
			w[(size_t)i * k + j] /= cs[j];   /* exact: a power of two */
	out->xcs = cs;
	return 0;
}

/*
 * int8 weights for w (n,k): W8 (weights_int8 or an I8 checkpoint)
 * replaces w by its int8 round trip; with act_int8 also keeps the int8
 * panels for the W8A8 GEMM.
 */
static int linear_int8(emb_linear *out, emb_model *m, float *w, int n, int k,
                       int from_i8, emb_err *err)
{
	size_t bytes = emb_i8_pack_size(n, k);
	int8_t *q = NULL, *wp;
	float *ws;
	int32_t *wsum;

	out->wq = NULL;
	out->ws = NULL;
	out->wsum = NULL;
	out->xcs = NULL;
	m->n_linear++;
	if (!from_i8 && !m->w8_load)
		return 0;
	if (!bytes)
		return emb_err_set(err, "linear layer of %d x %d is too large", n, k);
	if (!(q = malloc((size_t)n * (size_t)k)) ||
	    !(ws = emb_model_alloc(m, (size_t)n, err)) ||
	    !(wsum = (int32_t *)emb_model_alloc(m, (size_t)n, err))) {
		free(q);
		return emb_err_set(err, "out of memory");
	}
	if (m->a8 && m->smooth && m->smooth_from && m->smooth_from->n == k &&
	    smooth_weights(out, m, w, n, k, err)) {
		free(q);
		return -1;
	}
	// W (n,k) -> q (n,k) int8, ws (n)
	emb_i8_quantize_rows(q, ws, w, n, k);
	for (int j = 0; j < n; j++) {
		int32_t sum = 0;
		for (int kk = 0; kk < k; kk++) {
			float v = (float)q[(size_t)j * k + kk] * ws[j];
			/* the float copy (fallback) reads unsmoothed inputs */
			w[(size_t)j * k + kk] = out->xcs ? v * out->xcs[kk] : v;
			sum += q[(size_t)j * k + kk];
		}
		wsum[j] = sum;
	}
	m->n_w8++;
	if (m->a8) {
		if (!(wp = (int8_t *)emb_model_alloc(m, (bytes + 3) / 4, err))) {
			free(q);
			return -1;
		}
		emb_i8_pack(wp, q, n, k);
		out->wq = wp;
		out->ws = ws;
		out->wsum = wsum;
		m->n_a8++;
	}
	free(q);
	return 0;
}

/* W (n,k) -> out->wp (fp32 panels, psize floats) or, with bf16 compute,
 * out->wb (bf16 panels, kern/bkernels.h; wp NULL) */
static int linear_pack(emb_linear *out, emb_model *m, const float *w, int n,
                       int k, size_t psize, emb_err *err)
{
	size_t nb = m->bf16 ? emb_bf16_pack_size(n, k) : 0;
	float *wp;

	out->wb = NULL;
	if (m->bf16 && !nb)
		return emb_err_set(err, "linear layer of %d x %d is too large", n, k);
	if (!(wp = emb_model_alloc(m, m->bf16 ? (nb + 1) / 2 : psize, err)))
		return -1;
	if (m->bf16) {
		// W (n,k) -> bf16 panels
		emb_bf16_pack((uint16_t *)wp, w, n, k);
		out->wb = (const uint16_t *)wp;
		out->wp = NULL;
		return 0;
	}
	// W (n,k) -> panels
	emb_pack_weights(wp, w, n, k);
	out->wp = wp;
	return 0;
}

int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, emb_err *err)
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
	if (nparts == 1 && !any_i8 && !m->w8_load &&
	    wt[0]->dtype == EMB_DT_F32 &&
	    (uintptr_t)wt[0]->data % sizeof(float) == 0) {
		/* float32 and no int8: pack straight from the mapped file */
		if (bt[0] && !(b = emb_model_alloc(m, total, err)))
			return -1;
		if (bt[0] && to_f32(m, b, bt[0], err))
			return -1;
		if (linear_int8(out, m, NULL, (int)total, in, 0, err) ||
		    linear_pack(out, m, wt[0]->data, (int)total, in, psize, err))
			return -1;
		drop_source(wt[0]);
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
	if (linear_int8(out, m, w, (int)total, in, any_i8, err))
		goto out;
	if (linear_pack(out, m, w, (int)total, in, psize, err))
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
	                            &nout, in, err);
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

/* y = x / sqrt(mean(x^2) + eps) * w, one row (float32 as torch) */
void emb_rmsnorm_row(float *y, const float *x, const float *w, int n,
                     float eps)
{
	float sum = 0, r;

	for (int i = 0; i < n; i++)
		sum += x[i] * x[i];
	r = 1.0f / sqrtf(sum / (float)n + eps);
	for (int i = 0; i < n; i++)
		y[i] = w[i] * (x[i] * r);
}

/* ------------------------------------------------------------------ */
/* scratch                                                             */

/* grow *p (cap floats, len bytes mapped) to at least n floats; a quarter
 * more than asked, so that batches of slowly growing size do not map and
 * fault in a new buffer each time.  The old contents are dropped. */
int emb_big_grow(float **p, size_t *cap, size_t *len, size_t n)
{
	size_t want = n;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / 2 / sizeof(float) - (size_t)(4 << 20))
		return -1;
#ifndef BIG_MALLOC
	if (*cap && want < *cap + *cap / 4)
		want = *cap + *cap / 4;
#endif
	big_free(*p, *len);
	*cap = 0;
	*len = 0;
	if (!(*p = big_alloc(want * sizeof(float), len)))
		return -1;
	*cap = *len / sizeof(float);
	return 0;
}

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
		big_free(a->base, a->len);
		free(a);
	}
	free(m->q8);
	big_free(m->scratch, m->scratch_len);
	big_free(m->tscratch, m->tscratch_len);
	big_free(m->rscratch, m->rscratch_len);
	big_free(m->kvt, m->kvt_len);
	free(m->kv);
	m->q8 = NULL;
	m->scratch = m->tscratch = m->rscratch = m->kvt = NULL;
	m->kv = NULL;
}
