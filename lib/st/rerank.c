/*
 * rerank.c - cross-encoder score activations, ranking and ColBERT-style
 * late interaction (MaxSim), shared by emb-rerank and the tests.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include "st/st.h"

int emb_activation_parse(const char *s)
{
	static const struct {
		const char *name;
		int act;
	} names[] = {
		{ "none", EMB_ACTIVATION_NONE },
		{ "identity", EMB_ACTIVATION_NONE },
		{ "sigmoid", EMB_ACTIVATION_SIGMOID },
		{ "softmax", EMB_ACTIVATION_SOFTMAX },
	};
	const char *dot = strrchr(s, '.');

	/* "torch.nn.modules.activation.Sigmoid" -> "Sigmoid" */
	if (dot && !strncmp(s, "torch.", 6))
		s = dot + 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].act;
	return -1;
}

const char *emb_activation_name(int act)
{
	switch (act) {
	case EMB_ACTIVATION_NONE: return "none";
	case EMB_ACTIVATION_SIGMOID: return "sigmoid";
	case EMB_ACTIVATION_SOFTMAX: return "softmax";
	default: return NULL;
	}
}

/*
 * The value sentence-transformers would import for an activation_fn
 * path V (JSON) found at FIELD of PATH: 1 and *out set for a "torch."
 * class emb can apply; 0 for null or a path outside torch (loaded only
 * with trust_remote_code, so CrossEncoder warns and falls back to its
 * default); -1 (err) for a torch class emb does not have or a value that
 * is not a string.
 */
static int activation_path(int *out, const json_t *v, const char *path,
                           const char *field, emb_err *err)
{
	const char *s;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return emb_err_set(err, "%s: field '%s' must be a string", path,
		                   field);
	s = json_string_value(v);
	if (strncmp(s, "torch.", 6))
		return 0;
	if ((*out = emb_activation_parse(s)) < 0)
		return emb_err_set(err, "%s: field '%s' value %s is not supported "
		                   "(supported: Identity, Sigmoid, Softmax)", path,
		                   field, s);
	return 1;
}

/* DIR/FILE parsed (new), or NULL when absent or unreadable (the model
 * loader reports those) */
static json_t *load_obj(const char *dir, const char *file, char *path,
                        size_t pathsz)
{
	json_t *root;

	snprintf(path, pathsz, "%s/%s", dir, file);
	/* through the model-file checks (io/file.h): a regular file inside
	 * the model directory */
	root = emb_json_file_load(dir, path, (size_t)16 << 20, 0, NULL);
	if (root && !json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/*
 * CrossEncoder's order (sentence-transformers 5: _parse_model_config,
 * then get_default_activation_fn; 4.x: the latter only):
 *   1. config_sentence_transformers.json "activation_fn";
 *   2. config.json "sentence_transformers": {"activation_fn": ...} when
 *      that key is present (even null), else the legacy config.json
 *      "sbert_ce_default_activation_function" (written before 4.0);
 *   3. Sigmoid when num_labels == 1, Identity otherwise.
 * A step whose value is null or not a torch.* path falls through.
 */
int emb_activation_default(int *out, const char *dir, int num_labels,
                           emb_err *err)
{
	char path[4200];
	json_t *root, *st, *v = NULL;
	const char *field = NULL;
	int rc = 0;

	*out = num_labels == 1 ? EMB_ACTIVATION_SIGMOID : EMB_ACTIVATION_NONE;
	if ((root = load_obj(dir, "config_sentence_transformers.json", path,
	                     sizeof(path)))) {
		rc = activation_path(out, json_object_get(root, "activation_fn"),
		                     path, "activation_fn", err);
		json_decref(root);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	if (!(root = load_obj(dir, "config.json", path, sizeof(path))))
		return 0;
	st = json_object_get(root, "sentence_transformers");
	if (json_is_object(st) && json_object_get(st, "activation_fn")) {
		v = json_object_get(st, "activation_fn");
		field = "sentence_transformers.activation_fn";
	} else {
		v = json_object_get(root, "sbert_ce_default_activation_function");
		field = "sbert_ce_default_activation_function";
	}
	rc = activation_path(out, v, path, field, err);
	json_decref(root);
	if (rc == 0)
		*out = num_labels == 1 ? EMB_ACTIVATION_SIGMOID :
		       EMB_ACTIVATION_NONE;
	return rc < 0 ? -1 : 0;
}

void emb_activation_apply(float *v, int n, int act)
{
	if (act == EMB_ACTIVATION_SIGMOID) {
		for (int i = 0; i < n; i++)
			v[i] = 1.0f / (1.0f + expf(-v[i]));
	} else if (act == EMB_ACTIVATION_SOFTMAX && n > 0) {
		float mx = v[0], sum = 0;
		for (int i = 1; i < n; i++)
			if (v[i] > mx)
				mx = v[i];
		for (int i = 0; i < n; i++)
			sum += v[i] = expf(v[i] - mx);
		for (int i = 0; i < n; i++)
			v[i] /= sum;
	}
}

/* 1 when index i goes before index j: higher score, NaN last, then the
 * lower index */
static int before(const float *s, int i, int j)
{
	if (isnan(s[i]) != isnan(s[j]))
		return !isnan(s[i]);
	if (s[i] != s[j] && !isnan(s[i]))
		return s[i] > s[j];
	return i < j;
}

void emb_rank_order(int *order, const float *scores, int n)
{
	int *tmp;

	for (int i = 0; i < n; i++)
		order[i] = i;
	if (n < 2)
		return;
	if (!(tmp = malloc((size_t)n * sizeof(int)))) {
		/* no memory: insertion sort, in place */
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && before(scores, order[j], order[j - 1]); j--) {
				int t = order[j];
				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		return;
	}
	/* bottom-up merge sort (reentrant, unlike qsort with a global) */
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n;
			int hi = lo + 2 * w < n ? lo + 2 * w : n;
			int a = lo, b = mid, k = lo;
			while (a < mid && b < hi)
				tmp[k++] = before(scores, order[b], order[a]) ?
				           order[b++] : order[a++];
			while (a < mid)
				tmp[k++] = order[a++];
			while (b < hi)
				tmp[k++] = order[b++];
		}
		memcpy(order, tmp, (size_t)n * sizeof(int));
	}
	free(tmp);
}

static double row_norm(const float *v, int dim)
{
	double s = 0;

	for (int k = 0; k < dim; k++)
		s += (double)v[k] * v[k];
	s = sqrt(s);
	return s > 1e-12 ? s : 1e-12;
}

double emb_maxsim(const float *q, int nq, const float *d, int nd, int dim)
{
	double total = 0, *dn;

	if (nq <= 0 || nd <= 0 || dim <= 0)
		return 0;
	if (!(dn = malloc((size_t)nd * sizeof(double))))
		return NAN;
	for (int j = 0; j < nd; j++)
		dn[j] = row_norm(d + (size_t)j * dim, dim);
	for (int i = 0; i < nq; i++) {
		const float *qi = q + (size_t)i * dim;
		double qn = row_norm(qi, dim), best = -INFINITY;
		for (int j = 0; j < nd; j++) {
			const float *dj = d + (size_t)j * dim;
			double dot = 0;
			for (int k = 0; k < dim; k++)
				dot += (double)qi[k] * dj[k];
			dot /= qn * dn[j];
			if (dot > best)
				best = dot;
		}
		total += best;
	}
	free(dn);
	return total;
}

int emb_out_ranking(emb_buf *b, const char *key, const float *scores,
                    size_t n, size_t top_k, const char *const *docs,
                    emb_err *err)
{
	return emb_out_ranking_members(b, key, scores, n, top_k, docs, NULL,
	                               err);
}

int emb_out_ranking_members(emb_buf *b, const char *key, const float *scores,
                            size_t n, size_t top_k, const char *const *docs,
                            const char *const *members, emb_err *err)
{
	int *order = malloc((n ? n : 1) * sizeof(int));
	size_t keep = top_k && top_k < n ? top_k : n;
	emb_buf j;
	char num[64];

	if (!order)
		return emb_err_set(err, "out of memory");
	emb_rank_order(order, scores, (int)n);
	emb_buf_init(&j);
	emb_buf_add(&j, "[", 1);
	for (size_t i = 0; i < keep; i++) {
		const char *m = members ? members[order[i]] : NULL;
		int k = snprintf(num, sizeof(num), "%s{\"index\":%d,",
		                 i ? "," : "", order[i]);
		emb_buf_add(&j, num, (size_t)k);
		if (m && *m) {
			emb_buf_add(&j, m, strlen(m));
			emb_buf_add(&j, ",", 1);
		}
		emb_buf_add(&j, "\"score\":", 8);
		emb_buf_add(&j, num, emb_fmt_f32(num, scores[order[i]]));
		if (docs) {
			emb_buf_add(&j, ",\"document\":", 12);
			emb_buf_add(&j, docs[order[i]], strlen(docs[order[i]]));
		}
		emb_buf_add(&j, "}", 1);
	}
	emb_buf_add(&j, "]", 1);
	if (emb_buf_failed(&j)) {
		emb_buf_release(&j);
		free(order);
		return emb_err_set(err, "out of memory");
	}
	emb_out_json(b, key, j.p, j.len);
	emb_buf_release(&j);
	free(order);
	return 0;
}
