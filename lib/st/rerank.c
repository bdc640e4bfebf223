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

/* 1: found in FILE (object OBJ or its member SUB), 0: not said, -1: bad */
static int activation_in(int *out, const char *dir, const char *file,
                         const char *sub, emb_err *err)
{
	char path[4200];
	json_t *root, *o, *v;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!(root = emb_json_file_load(dir, path, (size_t)16 << 20, 0, NULL)))
		return 0;   /* absent or unreadable: the loader reports those */
	o = sub ? json_object_get(root, sub) : root;
	v = json_is_object(o) ? json_object_get(o, "activation_fn") : NULL;
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) ||
		    (*out = emb_activation_parse(json_string_value(v))) < 0)
			rc = emb_err_set(err, "%s: field '%sactivation_fn' value %s is "
			                 "not supported (supported: Identity, Sigmoid, "
			                 "Softmax)", path, sub ? "sentence_transformers." :
			                 "", json_is_string(v) ? json_string_value(v) :
			                 "(not a string)");
		else
			rc = 1;
	}
	json_decref(root);
	return rc;
}

int emb_activation_default(int *out, const char *dir, emb_err *err)
{
	int rc;

	*out = EMB_ACTIVATION_NONE;
	rc = activation_in(out, dir, "config_sentence_transformers.json", NULL,
	                   err);
	if (rc == 0)
		rc = activation_in(out, dir, "config.json", "sentence_transformers",
		                   err);
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
		int k = snprintf(num, sizeof(num), "%s{\"index\":%d,\"score\":",
		                 i ? "," : "", order[i]);
		emb_buf_add(&j, num, (size_t)k);
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
