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
#include <unistd.h>
#include "model-internal.h"

extern const emb_family emb_family_bert;

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
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* config.json "model_type" when there is no "architectures" */
static const struct {
	const char *type, *arch;
} model_types[] = {
	{ "bert", "BertModel" },
};

struct emb_alloc {
	emb_alloc *next;
	float *p;
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
	                   "gelu_pytorch_tanh, relu)", key, s);
}

/* ------------------------------------------------------------------ */
/* weights                                                             */

float *emb_model_alloc(emb_model *m, size_t n, emb_err *err)
{
	emb_alloc *a;
	size_t bytes;

	if (n == 0)
		n = 1;
	if (n > (SIZE_MAX - 64) / sizeof(float)) {
		emb_err_set(err, "out of memory");
		return NULL;
	}
	bytes = (n * sizeof(float) + 63) / 64 * 64;
	if (!(a = malloc(sizeof(*a))) || !(a->p = aligned_alloc(64, bytes))) {
		free(a);
		emb_err_set(err, "out of memory (%zu bytes of weights)", bytes);
		return NULL;
	}
	memset(a->p, 0, bytes);
	a->next = m->allocs;
	m->allocs = a;
	return a->p;
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
	if (t->dtype != EMB_DT_F32 && t->dtype != EMB_DT_F16 &&
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

/* widen t into dst (t->numel floats) */
static int to_f32(float *dst, const emb_tensor *t, emb_err *err)
{
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
	if (!(p = emb_model_alloc(m, (size_t)t->numel, err)) || to_f32(p, t, err))
		return -1;
	*out = p;
	return 0;
}

int emb_model_linear_cat(emb_linear *out, emb_model *m, int nparts,
                         const char *const *names, const char *const *bnames,
                         const int *outs, int in, emb_err *err)
{
	const emb_tensor *wt[8], *bt[8];
	size_t total = 0, psize;
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
		bt[i] = NULL;
		if (bnames && bnames[i] &&
		    !(bt[i] = emb_model_tensor(m, bnames[i], 1, bs, err)))
			return -1;
		total += (size_t)outs[i];
	}
	if (total > INT32_MAX || !(psize = emb_pack_size((int)total, in)))
		return emb_err_set(err, "linear layer '%s%s' is too large",
		                   m->prefix, names[0]);
	if (!(w = malloc(total * (size_t)in * sizeof(float))))
		return emb_err_set(err, "out of memory");
	if (bnames && !(b = emb_model_alloc(m, total, err)))
		goto out;
	for (int i = 0, row = 0; i < nparts; row += outs[i], i++) {
		if (to_f32(w + (size_t)row * in, wt[i], err))
			goto out;
		if (bt[i] && to_f32(b + row, bt[i], err))
			goto out;
	}
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
	out->b = NULL;
	if (emb_model_table(&out->w, m, wname, n, 0, err))
		return -1;
	if (bname && emb_model_table(&out->b, m, bname, n, 0, err))
		return -1;
	out->n = n;
	out->eps = eps;
	return 0;
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

int emb_model_load(emb_model **out, const char *dir,
                   const emb_model_opts *opts, emb_err *err)
{
	emb_model *m;
	json_t *cfg = NULL;
	json_error_t jerr;
	char path[4200];
	int threads = opts ? opts->threads : 0;
	int rc = -1;

	*out = NULL;
	if (!(m = calloc(1, sizeof(*m))) || !(m->dir = strdup(dir))) {
		free(m);
		return emb_err_set(err, "out of memory");
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (!(cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr))) {
		if (jerr.line > 0)
			emb_err_set(err, "%s: invalid JSON at line %d: %s", path,
			            jerr.line, jerr.text);
		else
			emb_err_set(err, "%s: %s", path, jerr.text);
		goto out;
	}
	if (!json_is_object(cfg)) {
		emb_err_set(err, "%s: not a JSON object", path);
		goto out;
	}
	if (pick_family(m, cfg, err) || m->fam->config(m, cfg, err))
		goto out;
	if (emb_kernels_select(&m->k, err))
		goto out;
	if (emb_safetensors_open(&m->st, dir, err))
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
		free(a->p);
		free(a);
	}
	free(m->scratch);
	free(m->tscratch);
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

float *emb_model_scratch(emb_model *m, size_t n, emb_err *err)
{
	if (n > m->scratch_cap) {
		size_t bytes;
		if (n > (SIZE_MAX - 64) / sizeof(float)) {
			emb_err_set(err, "out of memory");
			return NULL;
		}
		bytes = (n * sizeof(float) + 63) / 64 * 64;
		free(m->scratch);
		m->scratch_cap = 0;
		if (!(m->scratch = aligned_alloc(64, bytes))) {
			emb_err_set(err, "out of memory (%zu bytes of scratch)", bytes);
			return NULL;
		}
		m->scratch_cap = n;
	}
	return m->scratch;
}

static int thread_scratch(emb_model *m, size_t each, emb_err *err)
{
	size_t nt = (size_t)emb_threads_count(m->tp), bytes;

	each = (each + 15) / 16 * 16;
	if (each <= m->tscratch_each)
		return 0;
	if (each > SIZE_MAX / sizeof(float) / nt)
		return emb_err_set(err, "out of memory");
	bytes = each * nt * sizeof(float);
	free(m->tscratch);
	m->tscratch_each = 0;
	if (!(m->tscratch = aligned_alloc(64, bytes)))
		return emb_err_set(err, "out of memory");
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
		// x (r1-r0, in) @ W[n0:n1]^T -> y (r1-r0, n1-n0)
		j->k->gemm(j->y + (size_t)r0 * j->ldy + n0, j->ldy,
		           j->x + (size_t)r0 * j->ldx, j->ldx,
		           l->wp + (size_t)p0 * EMB_PANEL * l->in,
		           l->b ? l->b + n0 : NULL, r1 - r0, n1 - n0, l->in);
	}
}

void emb_linear_fwd(emb_model *m, float *y, int ldy, const float *x,
                    int ldx, int rows, const emb_linear *l)
{
	int nt = emb_threads_count(m->tp);
	int rb = (rows + GEMM_RB - 1) / GEMM_RB;
	int np = (l->out + EMB_PANEL - 1) / EMB_PANEL;
	int want = 4 * nt, ncg, pg;
	linear_job j;

	if (rows <= 0)
		return;
	/* column groups so that there are enough tasks for every thread */
	ncg = rb >= want ? 1 : (want + rb - 1) / rb;
	if (ncg > (np + 1) / 2)
		ncg = (np + 1) / 2;
	if (ncg < 1)
		ncg = 1;
	pg = (np + ncg - 1) / ncg;
	pg += pg & 1;
	ncg = (np + pg - 1) / pg;
	j = (linear_job){ m->k, y, x, ldy, ldx, rows, ncg, pg, np, l };
	emb_threads_for(m->tp, (size_t)rb * ncg, 1, linear_task, &j);
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
 * Attention per sequence and head, as two GEMMs over packed operands:
 * phase 1 packs K_h (keys as GEMM "weights": S = Q K^T) and V_h (V^T as
 * weights: ctx = P V) of every (sequence, kv head) once; phase 2 runs
 * (sequence, head, block of ATTN_QB queries) tasks: S (qb, keys) =
 * Q K^T, a softmax over each row's allowed keys (others set to 0), then
 * ctx = S V.  Every element's arithmetic is independent of the blocks
 * (keys outside a row's range contribute exact zeros), so batching and
 * threads do not change results.  Memory: O(tokens) + per thread
 * ATTN_QB x longest sequence.
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
} attn_job;

/* floats of packed K plus packed V of one kv head of a sequence of len */
static size_t kv_size(int len, int dh)
{
	return RUP16(len) * (size_t)dh + RUP16(dh) * (size_t)len;
}

static void pack_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	const emb_attn *a = j->a;
	int dh = a->head_dim;

	(void)tid;
	for (size_t t = begin; t < end; t++) {
		int seq = (int)(t / (size_t)a->kv_heads), h = (int)(t % (size_t)a->kv_heads);
		int r0 = j->b->start[seq], len = j->b->seqs[seq].len;
		float *kp = j->kv + j->kvoff[seq] + (size_t)h * kv_size(len, dh);
		float *vp = kp + RUP16(len) * (size_t)dh;
		const float *k = a->k + (size_t)r0 * a->ldk + (size_t)h * dh;
		const float *v = a->v + (size_t)r0 * a->ldv + (size_t)h * dh;
		// K (len,dh) -> panels [len/16][dh][16]
		for (int p = 0; p < len; p += 16)
			for (int kk = 0; kk < dh; kk++)
				for (int c = 0; c < 16; c++)
					*kp++ = p + c < len ? k[(size_t)(p + c) * a->ldk + kk] : 0.0f;
		// V^T (dh,len) -> panels [dh/16][len][16]
		for (int p = 0; p < dh; p += 16)
			for (int r = 0; r < len; r++)
				for (int c = 0; c < 16; c++)
					*vp++ = p + c < dh ? v[(size_t)r * a->ldv + p + c] : 0.0f;
	}
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

static void attn_task(void *ctx, size_t begin, size_t end, int tid)
{
	const attn_job *j = ctx;
	const emb_attn *a = j->a;
	const emb_kernels *k = j->m->k;
	float *s = j->m->tscratch + (size_t)tid * j->m->tscratch_each;
	int dh = a->head_dim, ldc = a->heads * a->head_dim;
	int group = a->heads / a->kv_heads;
	int seq = 0;

	for (size_t t = begin; t < end; t++) {
		while (t >= j->task0[seq + 1])
			seq++;
		int len = j->b->seqs[seq].len, r0 = j->b->start[seq];
		int nqb = (len + ATTN_QB - 1) / ATTN_QB;
		int h = (int)((t - j->task0[seq]) / (size_t)nqb);
		int i0 = (int)((t - j->task0[seq]) % (size_t)nqb) * ATTN_QB;
		int i1 = i0 + ATTN_QB < len ? i0 + ATTN_QB : len;
		int kh = h / group, kb0, kb1, lo, hi, lds;
		const float *kp = j->kv + j->kvoff[seq] + (size_t)kh * kv_size(len, dh);
		const float *vp = kp + RUP16(len) * (size_t)dh;
		const float *q = a->q + (size_t)(r0 + i0) * a->ldq + (size_t)h * dh;

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
			k->softmax(row + (lo - kb0), hi - lo, a->scale);
			memset(row, 0, (size_t)(lo - kb0) * sizeof(float));
			memset(row + (hi - kb0), 0, (size_t)(kb1 - hi) * sizeof(float));
		}
		// s (i1-i0, kb1-kb0) @ V[kb0:kb1] (kb1-kb0, dh) -> ctx, one panel
		// of 16 head dims at a time
		for (int p = 0; p < dh; p += 16) {
			float *c = j->ctx + (size_t)(r0 + i0) * ldc + (size_t)h * dh + p;
			k->gemm(c, ldc, s, lds, vp + (size_t)p * len + (size_t)kb0 * 16,
			        NULL, i1 - i0, dh - p < 16 ? dh - p : 16, kb1 - kb0);
		}
	}
}

int emb_attention(emb_model *m, float *ctx, const emb_attn *a,
                  const emb_batch *b, emb_err *err)
{
	attn_job j = { m, ctx, a, b, NULL, NULL, NULL };
	size_t *kvoff, *task0, total = 0;
	int rc = -1;

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
	if (total > m->kv_cap) {
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
	emb_threads_for(m->tp, (size_t)b->nseq * a->kv_heads, 1, pack_task, &j);
	emb_threads_for(m->tp, task0[b->nseq], 1, attn_task, &j);
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
