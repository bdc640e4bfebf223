/*
 * model.c - generic model loading (config.json -> family, weights from
 * safetensors, shape checks), scratch, the shared layers and the forward
 * driver.  The families live in lib/arch_*.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"

extern const emb_family emb_family_bert, emb_family_roberta,
       emb_family_distilbert, emb_family_mpnet, emb_family_nomic,
       emb_family_modernbert, emb_family_qwen3, emb_family_gemma3;

/* config.json "architectures" entry -> family */
static const struct {
	const char *arch;
	const emb_family *fam;
} families[] = {
	{ "BertModel", &emb_family_bert },
	{ "BertForMaskedLM", &emb_family_bert },
	{ "BertForPreTraining", &emb_family_bert },
	{ "BertForSequenceClassification", &emb_family_bert },
	{ "BertForTokenClassification", &emb_family_bert },
	{ "BertForNextSentencePrediction", &emb_family_bert },
	{ "BertForMultipleChoice", &emb_family_bert },
	{ "BertForQuestionAnswering", &emb_family_bert },
	{ "BertLMHeadModel", &emb_family_bert },
	{ "RobertaModel", &emb_family_roberta },
	{ "RobertaForMaskedLM", &emb_family_roberta },
	{ "RobertaForSequenceClassification", &emb_family_roberta },
	{ "XLMRobertaModel", &emb_family_roberta },
	{ "XLMRobertaForMaskedLM", &emb_family_roberta },
	{ "XLMRobertaForSequenceClassification", &emb_family_roberta },
	{ "CamembertModel", &emb_family_roberta },
	{ "DistilBertModel", &emb_family_distilbert },
	{ "DistilBertForMaskedLM", &emb_family_distilbert },
	{ "DistilBertForSequenceClassification", &emb_family_distilbert },
	{ "MPNetModel", &emb_family_mpnet },
	{ "MPNetForMaskedLM", &emb_family_mpnet },
	{ "MPNetForSequenceClassification", &emb_family_mpnet },
	{ "NomicBertModel", &emb_family_nomic },
	{ "ModernBertModel", &emb_family_modernbert },
	{ "ModernBertForMaskedLM", &emb_family_modernbert },
	{ "Qwen3Model", &emb_family_qwen3 },
	{ "Qwen3ForCausalLM", &emb_family_qwen3 },
	{ "Gemma3TextModel", &emb_family_gemma3 },
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* config.json "model_type" when there is no "architectures" */
static const struct {
	const char *type, *arch;
} model_types[] = {
	{ "bert", "BertModel" },
	{ "roberta", "RobertaModel" },
	{ "xlm-roberta", "XLMRobertaModel" },
	{ "distilbert", "DistilBertModel" },
	{ "mpnet", "MPNetModel" },
	{ "nomic_bert", "NomicBertModel" },
	{ "modernbert", "ModernBertModel" },
	{ "qwen3", "Qwen3Model" },
	{ "gemma3_text", "Gemma3TextModel" },
};

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
/* config.json fields                                                  */

int emb_cfg_int(int *out, const json_t *cfg, const char *key, int def,
                int min, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	const int max = 1 << 24;

	if (!v || json_is_null(v)) {
		if (def < 0)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return emb_err_set(err, "config.json: field '%s' must be an "
		                   "integer from %d to %d", key, min, max);
	*out = (int)json_integer_value(v);
	return 0;
}

int emb_cfg_float(float *out, const json_t *cfg, const char *key,
                  double def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		*out = (float)def;
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return emb_err_set(err, "config.json: field '%s' must be a number",
		                   key);
	*out = (float)json_number_value(v);
	return 0;
}

int emb_cfg_str(const char **out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		if (!def)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return emb_err_set(err, "config.json: field '%s' must be a string",
		                   key);
	*out = json_string_value(v);
	return 0;
}

int emb_cfg_act(int *out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	static const struct {
		const char *name;
		int act;
	} acts[] = {
		{ "gelu", EMB_ACT_GELU },
		{ "gelu_new", EMB_ACT_GELU_TANH },
		{ "gelu_pytorch_tanh", EMB_ACT_GELU_TANH },
		{ "relu", EMB_ACT_RELU },
		{ "silu", EMB_ACT_SILU },
		{ "swish", EMB_ACT_SILU },
		{ "tanh", EMB_ACT_TANH },
	};
	const char *s;

	if (emb_cfg_str(&s, cfg, key, def, err))
		return -1;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (!strcmp(s, acts[i].name)) {
			*out = acts[i].act;
			return 0;
		}
	return emb_err_set(err, "config.json: field '%s' value '%s' is not "
	                   "supported (supported: gelu, gelu_new, "
	                   "gelu_pytorch_tanh, relu, silu, tanh)", key, s);
}

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
	// W (n,k) -> q (n,k) int8, ws (n)
	emb_i8_quantize_rows(q, ws, w, n, k);
	for (int j = 0; j < n; j++) {
		int32_t sum = 0;
		for (int kk = 0; kk < k; kk++) {
			w[(size_t)j * k + kk] = (float)q[(size_t)j * k + kk] * ws[j];
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

int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, emb_err *err)
{
	const emb_tensor *wt[8], *bt[8];
	size_t total = 0, psize;
	int any_i8 = 0;
	float *w = NULL, *wp, *b = NULL;
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
		    !(wp = emb_model_alloc(m, psize, err)))
			return -1;
		// W (total,in) -> panels
		emb_pack_weights(wp, wt[0]->data, (int)total, in);
		out->wp = wp;
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
	if (!(wp = emb_model_alloc(m, psize, err)))
		goto out;
	// W (total,in) -> panels
	emb_pack_weights(wp, w, (int)total, in);
	out->wp = wp;
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
/* load / free                                                         */

static const emb_family *find_family(const char *arch)
{
	for (size_t i = 0; i < NFAMILIES; i++)
		if (!strcmp(arch, families[i].arch))
			return families[i].fam;
	return NULL;
}

static int pick_family(emb_model *m, const json_t *cfg, emb_err *err)
{
	const json_t *archs = json_object_get(cfg, "architectures");
	const char *first = NULL;
	char list[1024];
	size_t off = 0;

	if (archs && !json_is_null(archs)) {
		size_t i;
		const json_t *v;
		if (!json_is_array(archs) || json_array_size(archs) == 0)
			return emb_err_set(err, "config.json: field 'architectures' "
			                   "must be a non-empty array of strings");
		json_array_foreach(archs, i, v) {
			if (!json_is_string(v))
				return emb_err_set(err, "config.json: field "
				                   "'architectures' must be a non-empty "
				                   "array of strings");
			if (!first)
				first = json_string_value(v);
			if ((m->fam = find_family(json_string_value(v)))) {
				m->arch = strdup(json_string_value(v));
				break;
			}
		}
	} else {
		const json_t *mt = json_object_get(cfg, "model_type");
		if (!json_is_string(mt))
			return emb_err_set(err, "config.json: missing field "
			                   "'architectures'");
		first = json_string_value(mt);
		for (size_t i = 0; i < sizeof(model_types) / sizeof(model_types[0]); i++)
			if (!strcmp(first, model_types[i].type)) {
				m->fam = find_family(model_types[i].arch);
				m->arch = strdup(model_types[i].arch);
			}
	}
	if (m->fam)
		return m->arch ? 0 : emb_err_set(err, "out of memory");
	list[0] = 0;
	for (size_t i = 0; i < NFAMILIES && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s",
		                i ? ", " : "", families[i].arch);
	if (archs && !json_is_null(archs))
		return emb_err_set(err, "config.json: architecture '%s' is not "
		                   "supported (supported: %s)", first, list);
	return emb_err_set(err, "config.json: model_type '%s' is not supported "
	                   "(supported architectures: %s)", first, list);
}

/* the head the architecture names, and its labels (id2label) */
static int head_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	static const struct {
		const char *suffix;
		int head;
	} heads[] = {
		{ "ForSequenceClassification", EMB_HEAD_CLASSIFIER },
		{ "ForMaskedLM", EMB_HEAD_MLM },
	};
	const json_t *id2label = json_object_get(cfg, "id2label");
	const json_t *nl = json_object_get(cfg, "num_labels");
	size_t alen = strlen(m->arch);
	int n = 2;

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		size_t sl = strlen(heads[i].suffix);
		if (alen > sl && !strcmp(m->arch + alen - sl, heads[i].suffix))
			m->head = heads[i].head;
	}
	if (m->head != EMB_HEAD_CLASSIFIER)
		return 0;
	if (id2label && !json_is_null(id2label)) {
		if (!json_is_object(id2label) || json_object_size(id2label) == 0 ||
		    json_object_size(id2label) > 1 << 20)
			return emb_err_set(err, "config.json: field 'id2label' must be "
			                   "a non-empty object");
		n = (int)json_object_size(id2label);
	} else if (nl && !json_is_null(nl)) {
		if (emb_cfg_int(&n, cfg, "num_labels", -1, 1, err))
			return -1;
	}
	if (!(m->labels = calloc((size_t)n, sizeof(char *))))
		return emb_err_set(err, "out of memory");
	m->num_labels = n;
	for (int i = 0; i < n; i++) {
		char key[24], def[32];
		const json_t *v;
		snprintf(key, sizeof(key), "%d", i);
		v = id2label ? json_object_get(id2label, key) : NULL;
		if (id2label && !json_is_null(id2label) && !v)
			return emb_err_set(err, "config.json: field 'id2label' has no "
			                   "key '%d' (keys must be 0..%d)", i, n - 1);
		if (v && !json_is_string(v))
			return emb_err_set(err, "config.json: field 'id2label' value "
			                   "of '%d' must be a string", i);
		snprintf(def, sizeof(def), "LABEL_%d", i);
		if (!(m->labels[i] = strdup(v ? json_string_value(v) : def)))
			return emb_err_set(err, "out of memory");
	}
	return 0;
}

int emb_model_load(emb_model **out, const char *dir,
                   const emb_model_opts *opts, emb_err *err)
{
	emb_model *m;
	json_t *cfg = NULL;
	char path[4200];
	int threads = opts ? opts->threads : 0;
	int rc = -1;

	*out = NULL;
	if (!(m = calloc(1, sizeof(*m))) || !(m->dir = strdup(dir))) {
		free(m);
		return emb_err_set(err, "out of memory");
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (!(cfg = emb_json_file_load(dir, path, (size_t)16 << 20,
	                               JSON_REJECT_DUPLICATES, err)))
		goto out;
	if (!json_is_object(cfg)) {
		emb_err_set(err, "%s: not a JSON object", path);
		goto out;
	}
	m->w8_load = opts && opts->weights_int8;
	m->no_fuse = getenv("EMB_NO_FUSE") && *getenv("EMB_NO_FUSE");
	m->a8 = opts && opts->act_int8;
	if (m->a8 && !(m->gemm_i8 = emb_gemm_i8_select(&m->i8_kernel))) {
		emb_err_set(err, "EMB_I8: the int8 kernel '%s' is unknown or not "
		            "supported by this CPU or build (scalar, avxvnni, "
		            "vnni, auto)", m->i8_kernel);
		goto out;
	}
	if (pick_family(m, cfg, err) || m->fam->config(m, cfg, err) ||
	    head_config(m, cfg, err)) {
		/* the family readers say "config.json: ..."; name the file */
		if (!strncmp(err->msg, "config.json: ", 13)) {
			char msg[EMB_ERR_MAX];
			snprintf(msg, sizeof(msg), "%s", err->msg + 13);
			emb_err_set(err, "%s: %s", path, msg);
		}
		goto out;
	}
	if (emb_kernels_select(&m->k, err))
		goto out;
	if (emb_safetensors_open(&m->st, dir, err) ||
	    emb_safetensors_check_finite(m->st, err))
		goto out;
	m->prefix = m->fam->prefixes[0];
	for (int i = 0; m->fam->prefixes[i]; i++) {
		char name[512];
		snprintf(name, sizeof(name), "%s%s", m->fam->prefixes[i],
		         m->fam->probe);
		if (emb_safetensors_find(m->st, name)) {
			m->prefix = m->fam->prefixes[i];
			break;
		}
	}
	if (m->fam->load(m, err))
		goto out;
	if (m->a8 && m->n_a8 == 0) {
		emb_err_set(err, "%s: int8 activations need int8 weights (a "
		            "checkpoint from emb-quantize --weights int8, or "
		            "--weights int8)", dir);
		goto out;
	}
	if (threads <= 0)
		threads = emb_online_cpus();
	if (emb_threads_new(&m->tp, threads, err))
		goto out;
	rc = 0;
out:
	json_decref(cfg);
	if (rc)
		emb_model_free(m);
	else
		*out = m;
	return rc;
}

void emb_model_free(emb_model *m)
{
	if (!m)
		return;
	if (m->fam && m->fam->release)
		m->fam->release(m);
	emb_threads_free(m->tp);
	while (m->allocs) {
		emb_alloc *a = m->allocs;
		m->allocs = a->next;
		big_free(a->base, a->len);
		free(a);
	}
	for (int i = 0; m->labels && i < m->num_labels; i++)
		free(m->labels[i]);
	free(m->labels);
	free(m->q8);
	big_free(m->scratch, m->scratch_len);
	big_free(m->tscratch, m->tscratch_len);
	big_free(m->rscratch, m->rscratch_len);
	big_free(m->kvt, m->kvt_len);
	free(m->kv);
	emb_safetensors_free(m->st);
	free(m->arch);
	free(m->dir);
	free(m);
}

int emb_model_hidden_size(const emb_model *m) { return m->hidden; }
int emb_model_max_positions(const emb_model *m) { return m->usable_pos; }
int emb_model_vocab_size(const emb_model *m) { return m->vocab; }
int emb_model_type_vocab_size(const emb_model *m) { return m->type_vocab; }
const char *emb_model_arch(const emb_model *m) { return m->arch; }

/* ------------------------------------------------------------------ */
/* scratch                                                             */

/* grow *p (cap floats, len bytes mapped) to at least n floats; a quarter
 * more than asked, so that batches of slowly growing size do not map and
 * fault in a new buffer each time.  The old contents are dropped. */
static int grow(float **p, size_t *cap, size_t *len, size_t n)
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
	if (grow(&m->scratch, &m->scratch_cap, &m->scratch_len, n)) {
		emb_err_set(err, "out of memory (%zu floats of scratch)", n);
		return NULL;
	}
	return m->scratch;
}

static int thread_scratch(emb_model *m, size_t each, emb_err *err)
{
	size_t nt = (size_t)emb_threads_count(m->tp), cap = 0;

	each = (each + 15) / 16 * 16;
	if (each <= m->tscratch_each)
		return 0;
	if (each > SIZE_MAX / sizeof(float) / 2 / nt)
		return emb_err_set(err, "out of memory");
	cap = m->tscratch_len / sizeof(float);
	if (grow(&m->tscratch, &cap, &m->tscratch_len, each * nt)) {
		m->tscratch_each = 0;
		return emb_err_set(err, "out of memory");
	}
	m->tscratch_each = each;
	return 0;
}

/* ------------------------------------------------------------------ */
/* layers                                                              */

#define GEMM_RB 96      /* rows per task (the kernels' own row block) */

typedef struct linear_job {
	const emb_kernels *k;
	float *y;
	const float *x;
	int ldy, ldx, rows, ncg, pg, np;
	const emb_linear *l;
	int kact;               /* EMB_KACT_* fused into the GEMM epilogue */
} linear_job;

static void linear_task(void *ctx, size_t begin, size_t end, int tid)
{
	const linear_job *j = ctx;
	const emb_linear *l = j->l;

	(void)tid;
	for (size_t t = begin; t < end; t++) {
		int r0 = (int)(t / (size_t)j->ncg) * GEMM_RB;
		int p0 = (int)(t % (size_t)j->ncg) * j->pg;
		int r1 = r0 + GEMM_RB < j->rows ? r0 + GEMM_RB : j->rows;
		int p1 = p0 + j->pg < j->np ? p0 + j->pg : j->np;
		int n0 = p0 * EMB_PANEL;
		int n1 = p1 * EMB_PANEL < l->out ? p1 * EMB_PANEL : l->out;
		if (p0 >= j->np)
			continue;
		// act(x (r1-r0, in) @ W[n0:n1]^T + b) -> y (r1-r0, n1-n0)
		if (j->kact == EMB_KACT_NONE)
			j->k->gemm(j->y + (size_t)r0 * j->ldy + n0, j->ldy,
			           j->x + (size_t)r0 * j->ldx, j->ldx,
			           l->wp + (size_t)p0 * EMB_PANEL * l->in,
			           l->b ? l->b + n0 : NULL, r1 - r0, n1 - n0, l->in);
		else
			j->k->gemm_act(j->y + (size_t)r0 * j->ldy + n0, j->ldy,
			               j->x + (size_t)r0 * j->ldx, j->ldx,
			               l->wp + (size_t)p0 * EMB_PANEL * l->in,
			               l->b ? l->b + n0 : NULL, r1 - r0, n1 - n0,
			               l->in, j->kact);
	}
}

void emb_model_quant_stats(const emb_model *m, int *linear, int *w8,
                           int *a8, const char **kernel)
{
	if (linear)
		*linear = m->n_linear;
	if (w8)
		*w8 = m->n_w8;
	if (a8)
		*a8 = m->n_a8;
	if (kernel)
		*kernel = m->n_a8 ? m->i8_kernel : NULL;
}

/*
 * W8A8: each task quantizes the activation rows of its row block into
 * its thread's scratch slice (u8 rows, scales, zero points), right before
 * the int8 GEMM reads them from cache; a thread that gets another column
 * group of the row block it last quantized reuses it.  A fused activation
 * (kact, EMB_KACT_*) runs on each 64-column block of the output as soon
 * as the int8 kernel has written it, while it is still in cache: the
 * variant's gelu / gelu_tanh / relu on row pieces that start at multiples
 * of 64 columns, bit for bit what the same kernel gives over whole rows.
 */
typedef struct i8_job {
	const emb_model *m;
	float *y;
	const float *x;
	int ldy, ldx, rows, ncg, pg, np, kp;
	const emb_linear *l;
	emb_u8_quant_fn quant;
	uint8_t *scratch;       /* nt slices of `slice` bytes */
	size_t slice;
	int *last;              /* (nt) row block each slice holds, -1 none */
	int kact;               /* EMB_KACT_* on the output */
} i8_job;

/* y (rows, cols) stride ldy in place: kact (EMB_KACT_*), row by row */
static void i8_act_rows(const emb_kernels *k, float *y, int ldy, int rows,
                        int cols, int kact)
{
	void (*f)(float *, int) = kact == EMB_KACT_GELU ? k->gelu :
	                          kact == EMB_KACT_GELU_TANH ? k->gelu_tanh :
	                          kact == EMB_KACT_RELU ? k->relu : NULL;

	if (!f)
		return;
	for (int r = 0; r < rows; r++)
		f(y + (size_t)r * ldy, cols);
}

/* y[:, n0:n1] (rows, n1-n0) = the int8 GEMM of quantized rows u (rows,
 * kp), xs, xz with the layer's columns [n0,n1) (n0 at a multiple of 64),
 * then kact on each 64-column block while it is in cache */
static void i8_cols(const emb_model *m, float *y, int ldy, const uint8_t *u,
                    int kp, const float *xs, const int32_t *xz, int rows,
                    const emb_linear *l, int n0, int n1, int kact)
{
	int step = kact == EMB_KACT_NONE ? n1 - n0 : 64;

	if (n1 <= n0)
		return;
	for (int c0 = n0; c0 < n1; c0 += step) {
		int c1 = c0 + step < n1 ? c0 + step : n1;
		float *yc = y + c0;
		// u (rows, kp) @ Wq[c0:c1]^T -> y (rows, c1-c0), then act
		m->gemm_i8(yc, ldy, u, kp, xs, xz, l->wq + (size_t)c0 * kp,
		           l->ws + c0, l->wsum + c0, l->b ? l->b + c0 : NULL, rows,
		           c1 - c0, kp);
		i8_act_rows(m->k, yc, ldy, rows, c1 - c0, kact);
	}
}

static void i8_gemm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const i8_job *j = ctx;
	const emb_linear *l = j->l;
	uint8_t *s = j->scratch + (size_t)tid * j->slice;
	float *xs = (float *)s;
	int32_t *xz = (int32_t *)(s + GEMM_RB * sizeof(float));
	uint8_t *u = s + GEMM_RB * (sizeof(float) + sizeof(int32_t));

	for (size_t t = begin; t < end; t++) {
		int blk = (int)(t / (size_t)j->ncg);
		int r0 = blk * GEMM_RB;
		int p0 = (int)(t % (size_t)j->ncg) * j->pg;
		int r1 = r0 + GEMM_RB < j->rows ? r0 + GEMM_RB : j->rows;
		int p1 = p0 + j->pg < j->np ? p0 + j->pg : j->np;
		int n0 = p0 * 16, n1 = p1 * 16 < l->out ? p1 * 16 : l->out;
		if (p0 >= j->np)
			continue;
		if (j->last[tid] != blk) {
			// x rows [r0,r1) (r1-r0, in) -> u (r1-r0, kp), xs, xz
			j->quant(u, j->kp, xs, xz, j->x + (size_t)r0 * j->ldx, j->ldx,
			         r1 - r0, l->in);
			j->last[tid] = blk;
		}
		i8_cols(j->m, j->y + (size_t)r0 * j->ldy, j->ldy, u, j->kp, xs, xz,
		        r1 - r0, l, n0, n1, j->kact);
	}
}

size_t emb_linear_i8_scratch(const emb_linear *l, int rows)
{
	size_t kp = ((size_t)l->in + 3) / 4 * 4;

	return rows > 0 ? (size_t)rows * (kp + 8) : 0;
}

void emb_linear_i8_rows(const emb_model *m, float *y, int ldy,
                        const float *x, int ldx, int rows,
                        const emb_linear *l, int kact, uint8_t *scratch)
{
	int kp = (l->in + 3) / 4 * 4;
	float *xs = (float *)scratch;
	int32_t *xz = (int32_t *)(scratch + (size_t)rows * sizeof(float));
	uint8_t *u = scratch + (size_t)rows * (sizeof(float) + sizeof(int32_t));

	if (rows <= 0)
		return;
	// x (rows, in) -> u (rows, kp), xs, xz
	emb_u8_quant_for(m->gemm_i8)(u, kp, xs, xz, x, ldx, rows, l->in);
	i8_cols(m, y, ldy, u, kp, xs, xz, rows, l, 0, l->out, kact);
}

/* W8A8 linear, then kact (EMB_KACT_*); 0 done, -1 no scratch (the
 * caller runs it in float) */
static int linear_i8(emb_model *m, float *y, int ldy, const float *x,
                     int ldx, int rows, const emb_linear *l, int kact)
{
	int nt = emb_threads_count(m->tp);
	int rb = (rows + GEMM_RB - 1) / GEMM_RB, np = (l->out + 15) / 16;
	int kp = (l->in + 3) / 4 * 4, want = 4 * nt, ncg, pg;
	/* per thread: GEMM_RB rows of kp bytes + a scale and a zero point
	 * each, rounded to cache lines; then nt tags */
	size_t slice = ((size_t)GEMM_RB * ((size_t)kp + 8) + 63) / 64 * 64;
	size_t need = slice * (size_t)nt + (size_t)nt * sizeof(int);
	i8_job j;

	if (need > m->q8_cap) {
		free(m->q8);
		m->q8_cap = 0;
		if (!(m->q8 = aligned_alloc(64, (need + 63) / 64 * 64)))
			return -1;
		m->q8_cap = need;
	}
	/* column groups so that there are enough tasks for every thread;
	 * multiples of 4 panels (the kernel's column block) where possible */
	ncg = rb >= want ? 1 : (want + rb - 1) / rb;
	if (ncg > (np + 3) / 4)
		ncg = (np + 3) / 4;
	if (ncg < 1)
		ncg = 1;
	pg = (np + ncg - 1) / ncg;
	pg = (pg + 3) / 4 * 4;
	ncg = (np + pg - 1) / pg;
	j = (i8_job){ m, y, x, ldy, ldx, rows, ncg, pg, np, kp, l,
	              emb_u8_quant_for(m->gemm_i8), m->q8, slice, NULL, kact };
	j.last = (int *)(m->q8 + slice * (size_t)nt);
	for (int t = 0; t < nt; t++)
		j.last[t] = -1;
	emb_threads_for(m->tp, (size_t)rb * ncg, 1, i8_gemm_task, &j);
	return 0;
}

/* float linear, kact (EMB_KACT_*) fused into the kernels' epilogue */
static void linear_f32(emb_model *m, float *y, int ldy, const float *x,
                       int ldx, int rows, const emb_linear *l, int kact)
{
	int nt = emb_threads_count(m->tp);
	int rb = (rows + GEMM_RB - 1) / GEMM_RB;
	int np = (l->out + EMB_PANEL - 1) / EMB_PANEL;
	int want = 4 * nt, ncg, pg;
	linear_job j;

	/* column groups so that there are enough tasks for every thread */
	ncg = rb >= want ? 1 : (want + rb - 1) / rb;
	if (ncg > (np + 1) / 2)
		ncg = (np + 1) / 2;
	if (ncg < 1)
		ncg = 1;
	pg = (np + ncg - 1) / ncg;
	pg += pg & 1;
	ncg = (np + pg - 1) / pg;
	j = (linear_job){ m->k, y, x, ldy, ldx, rows, ncg, pg, np, l, kact };
	emb_threads_for(m->tp, (size_t)rb * ncg, 1, linear_task, &j);
}

void emb_linear_fwd(emb_model *m, float *y, int ldy, const float *x,
                    int ldx, int rows, const emb_linear *l)
{
	if (rows <= 0)
		return;
	if (l->wq && m->gemm_i8 &&
	    linear_i8(m, y, ldy, x, ldx, rows, l, EMB_KACT_NONE) == 0)
		return;
	linear_f32(m, y, ldy, x, ldx, rows, l, EMB_KACT_NONE);
}

void emb_linear_act_fwd(emb_model *m, float *y, int ldy, const float *x,
                        int ldx, int rows, const emb_linear *l, int act)
{
	int kact = act == EMB_ACT_GELU ? EMB_KACT_GELU
	         : act == EMB_ACT_GELU_TANH ? EMB_KACT_GELU_TANH
	         : act == EMB_ACT_RELU ? EMB_KACT_RELU : -1;

	if (rows <= 0)
		return;
	if (act == EMB_ACT_NONE) {
		emb_linear_fwd(m, y, ldy, x, ldx, rows, l);
		return;
	}
	if (kact >= 0 && l->wq && m->gemm_i8 &&
	    linear_i8(m, y, ldy, x, ldx, rows, l, kact) == 0)
		return;
	if (kact >= 0 && !(l->wq && m->gemm_i8)) {
		linear_f32(m, y, ldy, x, ldx, rows, l, kact);
		return;
	}
	/* int8 or an activation the kernels do not fuse: two passes */
	emb_linear_fwd(m, y, ldy, x, ldx, rows, l);
	if (ldy == l->out) {
		emb_act_fwd(m, y, rows, l->out, act);
		return;
	}
	for (int r = 0; r < rows; r++)
		emb_act_fwd(m, y + (size_t)r * ldy, 1, l->out, act);
}

typedef struct rows_job {
	const emb_kernels *k;
	float *y;
	const float *x, *res;
	int n, act;
	const emb_norm *nm;
} rows_job;

static void norm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rows_job *j = ctx;
	const emb_norm *nm = j->nm;

	(void)tid;
	for (size_t r = begin; r < end; r++) {
		float *y = j->y + r * j->n;
		const float *x = j->x + r * j->n;
		if (j->res) {
			const float *res = j->res + r * j->n;
			if (y == res) {
				j->k->add(y, x, j->n);
			} else {
				if (y != x)
					memcpy(y, x, (size_t)j->n * sizeof(float));
				j->k->add(y, res, j->n);
			}
			x = y;
		}
		if (nm->rms)
			emb_rmsnorm_row(y, x, nm->w, j->n, nm->eps);
		else
			j->k->layernorm(y, x, nm->w, nm->b, j->n, nm->eps);
	}
}

void emb_norm_fwd(emb_model *m, float *y, const float *x, const float *res,
                  int rows, const emb_norm *nm)
{
	rows_job j = { m->k, y, x, res, nm->n, 0, nm };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, norm_task, &j);
}

static void act_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rows_job *j = ctx;

	(void)tid;
	for (size_t r = begin; r < end; r++) {
		float *x = j->y + r * j->n;
		switch (j->act) {
		case EMB_ACT_GELU: j->k->gelu(x, j->n); break;
		case EMB_ACT_GELU_TANH: j->k->gelu_tanh(x, j->n); break;
		case EMB_ACT_RELU: j->k->relu(x, j->n); break;
		case EMB_ACT_TANH:
			for (int i = 0; i < j->n; i++)
				x[i] = tanhf(x[i]);
			break;
		case EMB_ACT_SILU:
			for (int i = 0; i < j->n; i++)
				x[i] = x[i] * (1.0f / (1.0f + expf(-x[i])));
			break;
		default: break;
		}
	}
}

void emb_act_fwd(emb_model *m, float *x, int rows, int cols, int act)
{
	rows_job j = { m->k, x, NULL, NULL, cols, act, NULL };

	if (act != EMB_ACT_NONE)
		emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16,
		                act_task, &j);
}

/*
 * The post-attention half of a post-LN encoder layer (BERT) in row blocks:
 * each task takes RB rows through the output projection, residual +
 * LayerNorm, the feed-forward pair and the second residual + LayerNorm,
 * with its (RB, inter) intermediate in the thread's own scratch (L2-hot)
 * instead of a (rows, inter) buffer in memory, and one wait for the
 * threads instead of five.  Every row's arithmetic is that of the
 * separate layers (the kernels' results do not depend on the call
 * shape), so the output is bit-identical.  Used when there are enough row
 * blocks for every thread; small batches keep the column-split GEMMs.
 */
#define POST_RB 96      /* rows per block at most (the kernel's own block) */

/* rows per block, or 0: run the layers one by one */
static int post_rows(const emb_model *m, int rows, const emb_post_attn *p)
{
	int nt = emb_threads_count(m->tp), nb;
	const emb_linear *ls[3] = { p->o, p->up, p->down };

	if (m->no_fuse)
		return 0;
	for (int i = 0; i < 3; i++)
		if (ls[i]->wq && m->gemm_i8)    /* W8A8 goes through linear_i8 */
			return 0;
	nb = (rows + POST_RB - 1) / POST_RB;
	if (nb < 2 * nt)
		return 0;
	nb = (nb + nt - 1) / nt * nt;   /* a multiple of the threads */
	return ((rows + nb - 1) / nb + 5) / 6 * 6;  /* the kernel's 6 rows */
}

size_t emb_post_attn_scratch(const emb_model *m, int rows,
                             const emb_post_attn *p)
{
	return post_rows(m, rows, p) ? 0 : (size_t)rows * p->up->out;
}

typedef struct post_job {
	const emb_model *m;
	float *h;
	const float *ctx;
	const emb_post_attn *p;
	int rows, rb;
} post_job;

static void norm_row(const emb_kernels *k, const emb_norm *nm, float *y,
                     const float *x)
{
	if (nm->rms)
		emb_rmsnorm_row(y, x, nm->w, nm->n, nm->eps);
	else
		k->layernorm(y, x, nm->w, nm->b, nm->n, nm->eps);
}

static void post_task(void *ctx, size_t begin, size_t end, int tid)
{
	const post_job *j = ctx;
	const emb_post_attn *p = j->p;
	const emb_kernels *k = j->m->k;
	int H = p->o->out, I = p->up->out;
	float *t = j->m->rscratch + (size_t)tid * j->m->rscratch_each;
	float *mid = t + (size_t)j->rb * H;
	rows_job aj = { k, NULL, NULL, NULL, I, p->act, NULL };
	int kact = p->act == EMB_ACT_GELU ? EMB_KACT_GELU
	         : p->act == EMB_ACT_GELU_TANH ? EMB_KACT_GELU_TANH
	         : p->act == EMB_ACT_RELU ? EMB_KACT_RELU : -1;

	for (size_t blk = begin; blk < end; blk++) {
		int r0 = (int)blk * j->rb;
		int n = j->rows - r0 < j->rb ? j->rows - r0 : j->rb;
		float *h = j->h + (size_t)r0 * H;
		if (n <= 0)
			continue;
		// ctx (n,Hc) @ Wo (H,Hc)^T -> t (n,H); h = LN1(h + t)
		k->gemm(t, H, j->ctx + (size_t)r0 * p->o->in, p->o->in, p->o->wp,
		        p->o->b, n, H, p->o->in);
		for (int r = 0; r < n; r++) {
			k->add(h + (size_t)r * H, t + (size_t)r * H, H);
			norm_row(k, p->ln1, h + (size_t)r * H, h + (size_t)r * H);
		}
		// act(h (n,H) @ W1 (I,H)^T) -> mid (n,I)
		if (kact >= 0 && k->gemm_act) {
			k->gemm_act(mid, I, h, H, p->up->wp, p->up->b, n, I, H, kact);
		} else {
			k->gemm(mid, I, h, H, p->up->wp, p->up->b, n, I, H);
			aj.y = mid;
			act_task(&aj, 0, (size_t)n, tid);
		}
		// mid (n,I) @ W2 (H,I)^T -> t (n,H); h = LN2(h + t)
		k->gemm(t, H, mid, I, p->down->wp, p->down->b, n, H, I);
		for (int r = 0; r < n; r++) {
			k->add(h + (size_t)r * H, t + (size_t)r * H, H);
			norm_row(k, p->ln2, h + (size_t)r * H, h + (size_t)r * H);
		}
	}
}

int emb_post_attn_fwd(emb_model *m, float *h, const float *ctx, float *tmp,
                      float *mid, int rows, const emb_post_attn *p,
                      emb_err *err)
{
	int rb = post_rows(m, rows, p), H = p->o->out, I = p->up->out;
	int nt = emb_threads_count(m->tp);
	post_job j = { m, h, ctx, p, rows, rb };

	if (rows <= 0)
		return 0;
	if (!rb) {
		// ctx (T,Hc) @ Wo (H,Hc)^T -> tmp (T,H); h = LN1(tmp + h)
		emb_linear_fwd(m, tmp, H, ctx, p->o->in, rows, p->o);
		emb_norm_fwd(m, h, tmp, h, rows, p->ln1);
		// act(h (T,H) @ W1 (I,H)^T) -> mid (T,I)
		emb_linear_act_fwd(m, mid, I, h, H, rows, p->up, p->act);
		// mid (T,I) @ W2 (H,I)^T -> tmp (T,H); h = LN2(tmp + h)
		emb_linear_fwd(m, tmp, H, mid, I, rows, p->down);
		emb_norm_fwd(m, h, tmp, h, rows, p->ln2);
		return 0;
	}
	size_t each = ((size_t)rb * (H + I) + 15) / 16 * 16;
	if (each > m->rscratch_each) {
		size_t cap = m->rscratch_len / sizeof(float);
		m->rscratch_each = 0;
		if (grow(&m->rscratch, &cap, &m->rscratch_len, each * (size_t)nt))
			return emb_err_set(err, "out of memory (%zu floats of "
			                   "scratch)", each * (size_t)nt);
		m->rscratch_each = each;
	}
	emb_threads_for(m->tp, (size_t)(rows + rb - 1) / rb, 1, post_task, &j);
	return 0;
}

/* out (rows, n) = act(x[a]) * x[b] where x (rows, 2n) holds [first | second]
 * and act_first picks which half the activation applies to */
typedef struct glu_job {
	const emb_kernels *k;
	float *y;
	const float *x;
	int n, act, act_first;
} glu_job;

static void glu_task(void *ctx, size_t begin, size_t end, int tid)
{
	const glu_job *j = ctx;
	rows_job rj = { j->k, NULL, NULL, NULL, j->n, j->act, NULL };

	(void)tid;
	for (size_t r = begin; r < end; r++) {
		float *y = j->y + r * j->n;
		const float *a = j->x + r * 2 * j->n, *b = a + j->n;
		if (!j->act_first) {
			const float *t = a;
			a = b;
			b = t;
		}
		memcpy(y, a, (size_t)j->n * sizeof(float));
		rj.y = y;
		act_task(&rj, 0, 1, 0);
		for (int i = 0; i < j->n; i++)
			y[i] *= b[i];
	}
}

void emb_glu_fwd(emb_model *m, float *y, const float *x, int rows, int n,
                 int act, int act_first)
{
	glu_job j = { m->k, y, x, n, act, act_first };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, glu_task, &j);
}

/* per-head RMSNorm (q/k norm): nheads heads of dh at row stride ld */
typedef struct hnorm_job {
	float *x;
	int ld, nheads;
	const emb_norm *nm;
} hnorm_job;

static void hnorm_task(void *ctx, size_t begin, size_t end, int tid)
{
	const hnorm_job *j = ctx;

	(void)tid;
	for (size_t r = begin; r < end; r++)
		for (int h = 0; h < j->nheads; h++) {
			float *x = j->x + r * (size_t)j->ld + (size_t)h * j->nm->n;
			emb_rmsnorm_row(x, x, j->nm->w, j->nm->n, j->nm->eps);
		}
}

void emb_head_norm_fwd(emb_model *m, float *x, int ld, int rows, int nheads,
                       const emb_norm *nm)
{
	hnorm_job j = { x, ld, nheads, nm };

	emb_threads_for(m->tp, (size_t)(rows > 0 ? rows : 0), 16, hnorm_task, &j);
}

void emb_rope_inv_freq(float *inv, int dim, double base)
{
	for (int i = 0; i < dim / 2; i++) {
		float e = (float)(2 * i) / (float)dim;
		inv[i] = 1.0f / (float)pow(base, (double)e);
	}
}

typedef struct rope_job {
	const emb_batch *b;
	const emb_rope *r;
} rope_job;

static void rope_task(void *ctx, size_t begin, size_t end, int tid)
{
	const rope_job *j = ctx;
	const emb_rope *r = j->r;
	int half = r->dim / 2;
	float cs[2 * 512];

	(void)tid;
	for (size_t s = begin; s < end; s++) {
		int len = j->b->seqs[s].len;
		const float *inv = r->inv_freq;
		float dyn[512];
		if (r->inv_for_len) {   /* dynamic NTK: frequencies per length */
			r->inv_for_len(dyn, r, len);
			inv = dyn;
		}
		for (int i = 0; i < len; i++) {
			size_t row = (size_t)(j->b->start[s] + i);
			for (int d = 0; d < half; d++) {
				float f = (float)i * inv[d];
				cs[d] = (float)cos((double)f);
				cs[half + d] = (float)sin((double)f);
			}
			for (int t = 0; t < 2; t++) {
				float *x = t ? r->k : r->q;
				int ld = t ? r->ldk : r->ldq, nh = t ? r->kv_heads : r->heads;
				if (!x)
					continue;
				for (int h = 0; h < nh; h++) {
					float *v = x + row * (size_t)ld + (size_t)h * r->head_dim;
					for (int d = 0; d < half; d++) {
						float x1 = v[d], x2 = v[d + half];
						float c = cs[d], sn = cs[half + d];
						float a1 = x1 * c, b1 = x2 * sn;
						float a2 = x2 * c, b2 = x1 * sn;
						v[d] = a1 - b1;
						v[d + half] = a2 + b2;
					}
				}
			}
		}
	}
}

int emb_rope_fwd(emb_model *m, const emb_rope *r, const emb_batch *b,
                 emb_err *err)
{
	rope_job j = { b, r };

	if (r->dim < 2 || r->dim > 1024 || r->dim % 2 || r->dim > r->head_dim)
		return emb_err_set(err, "rotary dimension %d is not supported",
		                   r->dim);
	emb_threads_for(m->tp, (size_t)b->nseq, 1, rope_task, &j);
	return 0;
}

/*
 * Attention per sequence and head, as two GEMMs over packed operands:
 * phase 1 packs K_h (keys as GEMM "weights": S = Q K^T) and V_h (V^T as
 * weights: ctx = P V) of every (sequence, kv head) once; phase 2 runs
 * (sequence, head, block of ATTN_QB queries) tasks: S (qb, keys) =
 * Q K^T, a softmax over each row's allowed keys (others set to 0), then
 * ctx = S V.  Every element's arithmetic is independent of the blocks
 * (keys outside a row's range contribute exact zeros), so batching and
 * threads do not change results.  Memory: O(tokens) + per thread
 * ATTN_QB x longest sequence.
 *
 * With at least 4 sequences per thread (and no $EMB_NO_FUSE) both phases
 * run as one job of per-sequence tasks instead: pack every kv head of the
 * sequence (16 rows at a time, in row order) into the thread's own K/V
 * buffer, then run all its query blocks while that buffer is in L2.  One
 * wait for the threads instead of two, no O(tokens) K/V buffer, and the
 * same arithmetic per element (bit-identical results).
 */
#define ATTN_QB 32
#define RUP16(x) (((size_t)(x) + 15) / 16 * 16)

typedef struct attn_job {
	const emb_model *m;
	float *ctx;
	const emb_attn *a;
	const emb_batch *b;
	float *kv;              /* packed K and V of every (seq, kv head) */
	const size_t *kvoff;    /* (nseq) offset of seq's block in kv */
	const size_t *task0;    /* (nseq+1) first phase-2 task of each seq */
	float *kvt;             /* fused: per thread, one sequence's K and V */
	size_t kvt_each;        /* floats */
} attn_job;

/* floats of packed K plus packed V of one kv head of a sequence of len */
static size_t kv_size(int len, int dh)
{
	return RUP16(len) * (size_t)dh + RUP16(dh) * (size_t)len;
}

/* pack K and V^T of kv head h of sequence seq into the job's kv */
static void pack_kv(const attn_job *j, int seq, int h)
{
	const emb_attn *a = j->a;
	int dh = a->head_dim, r0 = j->b->start[seq], len = j->b->seqs[seq].len;
	float *kp = j->kv + j->kvoff[seq] + (size_t)h * kv_size(len, dh);
	float *vp = kp + RUP16(len) * (size_t)dh;
	const float *k = a->k + (size_t)r0 * a->ldk + (size_t)h * dh;
	const float *v = a->v + (size_t)r0 * a->ldv + (size_t)h * dh;

	// K (len,dh) -> panels [len/16][dh][16], zero past len
	for (int p = 0; p < len; p += 16) {
		float *dst = kp + (size_t)p * dh;
		int nr = len - p < 16 ? len - p : 16;
		for (int c = 0; c < nr; c++) {
			const float *src = k + (size_t)(p + c) * a->ldk;
			for (int kk = 0; kk < dh; kk++)
				dst[kk * 16 + c] = src[kk];
		}
		for (int kk = 0; nr < 16 && kk < dh; kk++)
			memset(dst + kk * 16 + nr, 0, (size_t)(16 - nr) * sizeof(float));
	}
	// V^T (dh,len) -> panels [dh/16][len][16], zero past dh
	for (int p = 0; p < dh; p += 16) {
		int nc = dh - p < 16 ? dh - p : 16;
		for (int r = 0; r < len; r++, vp += 16) {
			memcpy(vp, v + (size_t)r * a->ldv + p, (size_t)nc * sizeof(float));
			if (nc < 16)
				memset(vp + nc, 0, (size_t)(16 - nc) * sizeof(float));
		}
	}
}

static void pack_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	int kvh = j->a->kv_heads;

	(void)tid;
	for (size_t t = begin; t < end; t++)
		pack_kv(j, (int)(t / (size_t)kvh), (int)(t % (size_t)kvh));
}

/* allowed keys [*j0, *j1) of query i in a sequence of len */
static void key_range(const emb_attn *a, int i, int len, int *j0, int *j1)
{
	*j0 = 0;
	*j1 = len;
	if (a->window > 0) {
		*j0 = i - a->window + 1 > 0 ? i - a->window + 1 : 0;
		*j1 = i + a->window < len ? i + a->window : len;
	}
	if (a->causal && *j1 > i + 1)
		*j1 = i + 1;
}

/* queries [i0, i0 + ATTN_QB) of head h of sequence seq (its kv head
 * packed); s: this thread's scratch */
static void attn_block(const attn_job *j, int seq, int h, int i0, float *s,
                       const float *kvs)
{
	const emb_attn *a = j->a;
	const emb_kernels *k = j->m->k;
	int dh = a->head_dim, ldc = a->heads * a->head_dim;
	int len = j->b->seqs[seq].len, r0 = j->b->start[seq];
	int i1 = i0 + ATTN_QB < len ? i0 + ATTN_QB : len;
	int kh = h / (a->heads / a->kv_heads), kb0, kb1, lo, hi, lds;
	const float *kp = kvs + (size_t)kh * kv_size(len, dh);
	const float *vp = kp + RUP16(len) * (size_t)dh;
	const float *q = a->q + (size_t)(r0 + i0) * a->ldq + (size_t)h * dh;
	float *c = j->ctx + (size_t)(r0 + i0) * ldc + (size_t)h * dh;

	key_range(a, i0, len, &kb0, &lo);
	key_range(a, i1 - 1, len, &lo, &kb1);
	kb0 = kb0 / 16 * 16;
	lds = (int)RUP16(kb1 - kb0);
	// Q (i1-i0,dh) @ K[kb0:kb1] (kb1-kb0,dh)^T -> s (i1-i0, kb1-kb0)
	k->gemm(s, lds, q, a->ldq, kp + (size_t)kb0 * dh, NULL, i1 - i0,
	        kb1 - kb0, dh);
	for (int i = i0; i < i1; i++) {
		float *row = s + (size_t)(i - i0) * lds;
		key_range(a, i, len, &lo, &hi);
		if (a->relbias) {   /* scores * scale + bias[h][j - i] */
			const float *rb = a->relbias + (size_t)h * (2 * a->rel_max - 1) +
			                  (a->rel_max - 1 - i);
			for (int jj = lo; jj < hi; jj++)
				row[jj - kb0] = row[jj - kb0] * a->scale + rb[jj];
			k->softmax(row + (lo - kb0), hi - lo, 1.0f);
		} else {
			k->softmax(row + (lo - kb0), hi - lo, a->scale);
		}
		memset(row, 0, (size_t)(lo - kb0) * sizeof(float));
		memset(row + (hi - kb0), 0, (size_t)(kb1 - hi) * sizeof(float));
	}
	if (kb0 == 0 && kb1 == len) {
		// s (i1-i0, len) @ V (len, dh) -> ctx: the V^T panels are the
		// packed form of V^T (dh, len)
		k->gemm(c, ldc, s, lds, vp, NULL, i1 - i0, dh, len);
		return;
	}
	// s (i1-i0, kb1-kb0) @ V[kb0:kb1] (kb1-kb0, dh) -> ctx, one panel
	// of 16 head dims at a time
	for (int p = 0; p < dh; p += 16)
		k->gemm(c + p, ldc, s, lds, vp + (size_t)p * len + (size_t)kb0 * 16,
		        NULL, i1 - i0, dh - p < 16 ? dh - p : 16, kb1 - kb0);
}

/* phase 2: tasks (sequence, head, block of ATTN_QB queries) */
static void attn_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	float *s = j->m->tscratch + (size_t)tid * j->m->tscratch_each;
	int seq = 0;

	for (size_t t = begin; t < end; t++) {
		while (t >= j->task0[seq + 1])
			seq++;
		int len = j->b->seqs[seq].len;
		size_t nqb = (size_t)(len + ATTN_QB - 1) / ATTN_QB;
		attn_block(j, seq, (int)((t - j->task0[seq]) / nqb),
		           (int)((t - j->task0[seq]) % nqb) * ATTN_QB, s,
		           j->kv + j->kvoff[seq]);
	}
}

/* pack K and V^T of every kv head of sequence seq, 16 rows at a time
 * across all heads (rows read in order; whole panel lines written) */
static void pack_seq(const attn_job *j, int seq, float *kv)
{
	const emb_attn *a = j->a;
	int dh = a->head_dim, r0 = j->b->start[seq], len = j->b->seqs[seq].len;
	size_t each = kv_size(len, dh);

	for (int p = 0; p < len; p += 16) {
		int nr = len - p < 16 ? len - p : 16;
		const float *k = a->k + (size_t)(r0 + p) * a->ldk;
		for (int h = 0; h < a->kv_heads; h++) {
			// K rows [p, p+nr) of head h -> panel p/16 ([dh][16])
			float *kp = kv + (size_t)h * each + (size_t)p * dh;
			const float *kh = k + (size_t)h * dh;
			for (int kk = 0; kk < dh; kk++, kp += 16) {
				int c;
				for (c = 0; c < nr; c++)
					kp[c] = kh[(size_t)c * a->ldk + kk];
				for (; c < 16; c++)
					kp[c] = 0.0f;
			}
		}
	}
	for (int r = 0; r < len; r++) {
		const float *v = a->v + (size_t)(r0 + r) * a->ldv;
		for (int h = 0; h < a->kv_heads; h++, v += dh) {
			float *vp = kv + (size_t)h * each + RUP16(len) * (size_t)dh +
			            (size_t)r * 16;
			// V row r -> row r of each [len][16] panel of V^T
			for (int p = 0; p < dh; p += 16, vp += (size_t)len * 16) {
				if (dh - p >= 16) {
					memcpy(vp, v + p, 16 * sizeof(float));
				} else {
					memcpy(vp, v + p, (size_t)(dh - p) * sizeof(float));
					memset(vp + dh - p, 0, (size_t)(16 - dh + p) *
					       sizeof(float));
				}
			}
		}
	}
}

/* both phases in one job: a task per sequence packs its K and V, then
 * runs every query block of every head over them (still in cache) */
static void attn_fused_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	const emb_attn *a = j->a;
	float *s = j->m->tscratch + (size_t)tid * j->m->tscratch_each;
	float *kv = j->kvt + (size_t)tid * j->kvt_each;

	for (size_t t = begin; t < end; t++) {
		int len = j->b->seqs[t].len;
		pack_seq(j, (int)t, kv);
		for (int h = 0; h < a->heads; h++)
			for (int i0 = 0; i0 < len; i0 += ATTN_QB)
				attn_block(j, (int)t, h, i0, s, kv);
	}
}

int emb_attention(emb_model *m, float *ctx, const emb_attn *a,
                  const emb_batch *b, emb_err *err)
{
	attn_job j = { m, ctx, a, b, NULL, NULL, NULL, NULL, 0 };
	size_t *kvoff, *task0, total = 0;
	size_t nt = (size_t)emb_threads_count(m->tp);
	int rc = -1, fused = !m->no_fuse && (size_t)b->nseq >= 4 * nt;

	if (a->kv_heads < 1 || a->heads % a->kv_heads || a->head_dim < 1)
		return emb_err_set(err, "attention: %d heads, %d kv heads",
		                   a->heads, a->kv_heads);
	if (!(kvoff = malloc((size_t)(b->nseq + 1) * 2 * sizeof(size_t))))
		return emb_err_set(err, "out of memory");
	task0 = kvoff + b->nseq + 1;
	task0[0] = 0;
	for (int s = 0; s < b->nseq; s++) {
		int len = b->seqs[s].len;
		kvoff[s] = total;
		total += kv_size(len, a->head_dim) * (size_t)a->kv_heads;
		task0[s + 1] = task0[s] + (size_t)a->heads *
		               (size_t)((len + ATTN_QB - 1) / ATTN_QB);
	}
	if (fused) {
		/* a sequence's K and V at a time per thread, reused: L2-hot */
		size_t each = RUP16(kv_size(b->maxlen, a->head_dim) *
		                    (size_t)a->kv_heads), cap;
		if (each > m->kvt_each) {
			cap = m->kvt_len / sizeof(float);
			m->kvt_each = 0;
			if (each > SIZE_MAX / sizeof(float) / 2 / nt ||
			    grow(&m->kvt, &cap, &m->kvt_len, each * nt)) {
				emb_err_set(err, "out of memory (attention scratch)");
				goto out;
			}
			m->kvt_each = each;
		}
		j.kvt = m->kvt;
		j.kvt_each = m->kvt_each;
	} else if (total > m->kv_cap) {   /* malloc'ed: tests free it */
		free(m->kv);
		m->kv_cap = 0;
		if (!(m->kv = aligned_alloc(64, RUP16(total) * sizeof(float)))) {
			emb_err_set(err, "out of memory (attention scratch)");
			goto out;
		}
		m->kv_cap = total;
	}
	if (ATTN_QB * RUP16(b->maxlen) > m->tscratch_each) {
		emb_err_set(err, "attention: thread scratch too small");
		goto out;
	}
	j.kv = m->kv;
	j.kvoff = kvoff;
	j.task0 = task0;
	/* one job (one wait for the threads instead of two) when the
	 * sequences are enough to keep every thread busy */
	if (fused) {
		emb_threads_for(m->tp, (size_t)b->nseq, 1, attn_fused_task, &j);
	} else {
		emb_threads_for(m->tp, (size_t)b->nseq * a->kv_heads, 1,
		                pack_task, &j);
		emb_threads_for(m->tp, task0[b->nseq], 1, attn_task, &j);
	}
	rc = 0;
out:
	free(kvoff);
	return rc;
}

/* ------------------------------------------------------------------ */
/* forward driver                                                      */

int emb_model_check(const emb_model *m, const emb_seq *q, emb_err *err)
{
	if (q->len < 0)
		return emb_err_set(err, "negative sequence length %d", q->len);
	if (q->len > m->usable_pos)
		return emb_err_set(err, "%d tokens are more than the model's maximum "
		                   "of %d (max_position_embeddings)", q->len,
		                   m->usable_pos);
	if (q->len > 0 && !q->ids)
		return emb_err_set(err, "no input_ids");
	for (int i = 0; i < q->len; i++) {
		if (q->ids[i] < 0 || q->ids[i] >= m->vocab)
			return emb_err_set(err, "input_ids[%d] = %ld is out of range "
			                   "(vocab_size %d)", i, (long)q->ids[i], m->vocab);
		if (q->type_ids && (q->type_ids[i] < 0 ||
		                    q->type_ids[i] >= m->type_vocab))
			return emb_err_set(err, "token_type_ids[%d] = %ld is out of range "
			                   "(type_vocab_size %d)", i, (long)q->type_ids[i],
			                   m->type_vocab);
	}
	return 0;
}

int emb_model_forward(emb_model *m, float *out, const emb_seq *seqs,
                      int nseq, emb_err *err)
{
	emb_batch b;
	int *start;
	long long total = 0;
	int maxlen = 0, rc;

	if (nseq < 0)
		return emb_err_set(err, "negative sequence count %d", nseq);
	if (nseq == 0)
		return 0;
	for (int s = 0; s < nseq; s++) {
		if (emb_model_check(m, &seqs[s], err)) {
			if (nseq > 1 && err) {   /* prefix "sequence N: " */
				char pre[32];
				size_t pl = (size_t)snprintf(pre, sizeof(pre),
				                             "sequence %d: ", s);
				size_t ml = strlen(err->msg);
				if (pl + ml >= sizeof(err->msg))
					ml = sizeof(err->msg) - 1 - pl;
				memmove(err->msg + pl, err->msg, ml);
				memcpy(err->msg, pre, pl);
				err->msg[pl + ml] = 0;
			}
			return -1;
		}
		total += seqs[s].len;
		if (seqs[s].len > maxlen)
			maxlen = seqs[s].len;
	}
	if (total > INT32_MAX / 4)
		return emb_err_set(err, "batch of %lld tokens is too large", total);
	if (total == 0)
		return 0;
	if (thread_scratch(m, ATTN_QB * RUP16(maxlen), err))
		return -1;
	if (!(start = malloc(((size_t)nseq + 1) * sizeof(int))))
		return emb_err_set(err, "out of memory");
	start[0] = 0;
	for (int s = 0; s < nseq; s++)
		start[s + 1] = start[s] + seqs[s].len;
	b = (emb_batch){ seqs, nseq, start, (int)total, maxlen };
	rc = m->fam->forward(m, out, &b, err);
	free(start);
	return rc;
}

/* ------------------------------------------------------------------ */
/* heads                                                               */

int emb_model_head(const emb_model *m) { return m->head; }
int emb_model_num_labels(const emb_model *m) { return m->num_labels; }

const char *emb_model_label(const emb_model *m, int i)
{
	return i >= 0 && i < m->num_labels ? m->labels[i] : NULL;
}

size_t emb_model_out_width(const emb_model *m, int kind)
{
	switch (kind) {
	case EMB_OUT_HIDDEN: return (size_t)m->hidden;
	case EMB_OUT_LOGITS: return (size_t)m->num_labels;
	case EMB_OUT_MLM:
	case EMB_OUT_SPLADE: return (size_t)m->vocab;
	default: return 0;
	}
}

static int head_ready(emb_model *m, int want, emb_err *err)
{
	static const char *const names[] = { "no", "sequence-classification",
	                                     "masked-LM" };

	if (m->head != want)
		return emb_err_set(err, "%s: architecture %s has %s head, not a %s "
		                   "head", m->dir, m->arch, names[m->head],
		                   names[want]);
	if (m->head_state == 0) {
		if (!m->fam->head)
			emb_err_set(&m->head_err, "%s: the %s head of %s is not "
			            "supported", m->dir, names[want], m->arch);
		m->head_state = m->fam->head && !m->fam->head(m, &m->head_err) ?
		                1 : -1;
	}
	if (m->head_state < 0) {
		if (err)
			*err = m->head_err;
		return -1;
	}
	return 0;
}

/* tokens per slice of the MLM head: bounds the (rows, vocab) scratch */
#define MLM_ROWS 64

typedef struct splade_job {
	float *out;             /* (vocab) of this sequence */
	const float *logits;    /* (rows, vocab) */
	int rows, vocab;
} splade_job;

static void splade_task(void *ctx, size_t begin, size_t end, int tid)
{
	const splade_job *j = ctx;

	(void)tid;
	for (size_t v = begin; v < end; v++) {
		float mx = j->out[v];
		for (int r = 0; r < j->rows; r++) {
			float x = j->logits[(size_t)r * j->vocab + v];
			float y = x > 0 ? log1pf(x) : 0.0f;
			if (y > mx)
				mx = y;
		}
		j->out[v] = mx;
	}
}

/* h (T,H) -> classifier logits out (nseq, labels) */
static int cls_forward(emb_model *m, float *out, const float *h,
                       const emb_batch *b, emb_err *err)
{
	const emb_head_cls *c = &m->cls;
	size_t H = (size_t)m->hidden, n = (size_t)b->nseq;
	size_t P = c->pre.in ? (size_t)c->pre.out : H;
	float *x, *p;

	if (!(x = emb_model_scratch(m, n * (H + P), err)))
		return -1;
	p = x + n * H;
	// first token of every sequence -> x (n,H)
	for (size_t s = 0; s < n; s++)
		memcpy(x + s * H, h + (size_t)b->start[s] * H, H * sizeof(float));
	if (c->pre.in) {
		// x (n,H) @ Wpre (P,H)^T -> p (n,P); act
		emb_linear_fwd(m, p, (int)P, x, (int)H, (int)n, &c->pre);
		emb_act_fwd(m, p, (int)n, (int)P, c->pre_act);
	} else {
		p = x;
	}
	// p (n,P) @ Wout (labels,P)^T -> out (n,labels)
	emb_linear_fwd(m, out, m->num_labels, p, (int)P, (int)n, &c->out);
	return 0;
}

/* h (T,H) -> per-token logits out (T,V) (kind MLM) or per-sequence
 * max log(1 + relu(logits)) out (nseq,V) (kind SPLADE) */
static int mlm_forward(emb_model *m, float *out, int kind, const float *h,
                       const emb_batch *b, emb_err *err)
{
	const emb_head_mlm *c = &m->mlm;
	size_t H = (size_t)m->hidden, V = (size_t)m->vocab;
	float *t, *lg;

	if (!(t = emb_model_scratch(m, MLM_ROWS * (H + V), err)))
		return -1;
	lg = t + MLM_ROWS * H;
	if (kind == EMB_OUT_SPLADE)
		memset(out, 0, (size_t)b->nseq * V * sizeof(float));
	for (int s = 0; s < b->nseq; s++) {
		for (int r0 = b->start[s]; r0 < b->start[s + 1]; r0 += MLM_ROWS) {
			int rows = b->start[s + 1] - r0 < MLM_ROWS ?
			           b->start[s + 1] - r0 : MLM_ROWS;
			float *y = kind == EMB_OUT_MLM ? out + (size_t)r0 * V : lg;
			const float *x = h + (size_t)r0 * H;
			if (c->transform.in) {
				// act(x (rows,H) @ Wt (H,H)^T) -> t (rows,H); LN
				emb_linear_act_fwd(m, t, (int)H, x, (int)H, rows,
				                   &c->transform, c->act);
				x = t;
			}
			if (c->ln.n) {
				emb_norm_fwd(m, t, x, NULL, rows, &c->ln);
				x = t;
			}
			// x (rows,H) @ Wdec (V,H)^T -> y (rows,V)
			emb_linear_fwd(m, y, (int)V, x, (int)H, rows, &c->decoder);
			if (kind == EMB_OUT_SPLADE) {
				splade_job j = { out + (size_t)s * V, lg, rows, (int)V };
				emb_threads_for(m->tp, V, 1024, splade_task, &j);
			}
		}
	}
	return 0;
}

int emb_model_forward_head(emb_model *m, float *out, int kind,
                           const emb_seq *seqs, int nseq, emb_err *err)
{
	emb_batch b;
	int *start;
	size_t total = 0;
	float *h;
	int rc;

	if (kind == EMB_OUT_HIDDEN)
		return emb_model_forward(m, out, seqs, nseq, err);
	if (kind != EMB_OUT_LOGITS && kind != EMB_OUT_MLM &&
	    kind != EMB_OUT_SPLADE)
		return emb_err_set(err, "unknown output kind %d", kind);
	if (head_ready(m, kind == EMB_OUT_LOGITS ? EMB_HEAD_CLASSIFIER :
	               EMB_HEAD_MLM, err))
		return -1;
	if (nseq <= 0)
		return nseq < 0 ? emb_err_set(err, "negative sequence count %d",
		                              nseq) : 0;
	for (int s = 0; s < nseq; s++) {
		if (seqs[s].len < 1 && kind == EMB_OUT_LOGITS)
			return emb_err_set(err, "sequence %d is empty", s);
		total += seqs[s].len > 0 ? (size_t)seqs[s].len : 0;
	}
	if (total > (size_t)INT32_MAX / 4 ||
	    total > SIZE_MAX / sizeof(float) / (size_t)m->hidden)
		return emb_err_set(err, "batch of %zu tokens is too large", total);
	if (!(h = malloc((total ? total : 1) * (size_t)m->hidden * sizeof(float))))
		return emb_err_set(err, "out of memory");
	if (!(start = malloc(((size_t)nseq + 1) * sizeof(int)))) {
		free(h);
		return emb_err_set(err, "out of memory");
	}
	start[0] = 0;
	for (int s = 0; s < nseq; s++)
		start[s + 1] = start[s] + (seqs[s].len > 0 ? seqs[s].len : 0);
	b = (emb_batch){ seqs, nseq, start, (int)total, 0 };
	rc = emb_model_forward(m, h, seqs, nseq, err);
	if (!rc && kind == EMB_OUT_LOGITS)
		rc = cls_forward(m, out, h, &b, err);
	else if (!rc)
		rc = mlm_forward(m, out, kind, h, &b, err);
	free(start);
	free(h);
	return rc;
}
