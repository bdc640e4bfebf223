/*
 * load.c - static embedding model folders (static.h): Model2Vec's
 * (config.json, model.safetensors, tokenizer.json) and the
 * sentence-transformers StaticEmbedding module's (modules.json, its
 * folder's model.safetensors and tokenizer.json).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "io/file.h"
#include "static/static-internal.h"

#define JSON_MAX ((size_t)16 << 20)
/* tokenizer.json is read for its "truncation" alone (the vocabulary is
 * the tokenizer's): big files are fine */
#define TOKJSON_MAX ((size_t)512 << 20)

/* DIR/NAME as JSON; *j NULL when the file is absent; -1 (err) when it
 * cannot be read or parsed */
static int load_json(json_t **j, const char *dir, const char *name,
                     emb_err *err)
{
	char *path = emb_path_join(dir, name);

	*j = NULL;
	if (!path)
		return emb_err_set(err, "out of memory");
	if (access(path, F_OK) != 0) {
		free(path);
		return 0;
	}
	*j = emb_json_file_load(dir, path, JSON_MAX, JSON_REJECT_DUPLICATES, err);
	free(path);
	return *j ? 0 : -1;
}

/* the class name at the end of a module type ("...StaticEmbedding") */
static int is_static_type(const char *t)
{
	const char *p = strrchr(t, '.');

	return !strcmp(p ? p + 1 : t, "StaticEmbedding");
}

/* modules.json's first entry when it is a StaticEmbedding: 1 and *path
 * (borrowed from *mods, "" for none); 0 when not */
static int st_first(json_t *mods, const char **path)
{
	json_t *m = json_is_array(mods) ? json_array_get(mods, 0) : NULL;
	json_t *t = m ? json_object_get(m, "type") : NULL;
	json_t *p = m ? json_object_get(m, "path") : NULL;

	if (!json_is_string(t) || !is_static_type(json_string_value(t)))
		return 0;
	*path = json_is_string(p) ? json_string_value(p) : "";
	return 1;
}

int emb_static_detect(const char *dir, emb_err *err)
{
	json_t *c, *mods, *mt;
	const char *path;
	int fmt = EMB_STATIC_NONE;

	if (load_json(&c, dir, "config.json", err) < 0)
		return -1;
	mt = json_is_object(c) ? json_object_get(c, "model_type") : NULL;
	if (json_is_string(mt) && !strcmp(json_string_value(mt), "model2vec"))
		fmt = EMB_STATIC_M2V;
	json_decref(c);
	if (fmt)
		return fmt;
	if (load_json(&mods, dir, "modules.json", err) < 0)
		return -1;
	if (st_first(mods, &path))
		fmt = EMB_STATIC_ST;
	json_decref(mods);
	return fmt;
}

void emb_static_free(emb_static *m)
{
	if (!m)
		return;
	emb_tokenizer_free(m->tok);
	emb_safetensors_free(m->st);
	free(m->h2f);
	free(m->tfile);
	free(m);
}

/* Model2Vec's config.json: normalize, max_length */
static int m2v_config(emb_static *m, const char *dir, emb_err *err)
{
	json_t *c, *v;
	int rc = -1;

	if (load_json(&c, dir, "config.json", err) < 0)
		return -1;
	m->max_length = 512;    /* model2vec's DEFAULT_MAX_LENGTH */
	v = json_object_get(c, "normalize");
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		emb_err_set(err, "%s/config.json: field 'normalize' must be true or false",
		            dir);
		goto out;
	}
	m->normalize = json_is_true(v);
	v = json_object_get(c, "max_length");
	if (json_is_null(v)) {
		m->max_length = 0;
	} else if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > (1 << 30)) {
			emb_err_set(err, "%s/config.json: field 'max_length' must be a positive integer or null",
			            dir);
			goto out;
		}
		m->max_length = (size_t)json_integer_value(v);
	}
	rc = 0;
out:
	json_decref(c);
	return rc;
}

/* tokenizer.json's "truncation": max_length and direction (the
 * sentence-transformers form, which keeps the tokenizer's settings) */
static int st_truncation(emb_static *m, const char *sub, emb_err *err)
{
	char *path = emb_path_join(sub, "tokenizer.json");
	json_t *j, *t, *v;
	int rc = -1;

	if (!path)
		return emb_err_set(err, "out of memory");
	j = emb_json_file_load_skip(sub, path, TOKJSON_MAX, 0, "model", err);
	if (!j)
		goto out;
	t = json_object_get(j, "truncation");
	if (t && !json_is_null(t)) {
		v = json_object_get(t, "max_length");
		if (!json_is_object(t) || !json_is_integer(v) ||
		    json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30)) {
			emb_err_set(err, "%s: field 'truncation.max_length' must be a non-negative integer",
			            path);
			goto out;
		}
		m->max_length = (size_t)json_integer_value(v);
		v = json_object_get(t, "direction");
		if (v && !json_is_string(v)) {
			emb_err_set(err, "%s: field 'truncation.direction' must be a string",
			            path);
			goto out;
		}
		if (v && strcmp(json_string_value(v), "Right")) {
			if (strcmp(json_string_value(v), "Left")) {
				emb_err_set(err, "%s: field 'truncation.direction' must be \"Right\" or \"Left\"",
				            path);
				goto out;
			}
			m->trunc_left = 1;
		}
	}
	rc = 0;
out:
	json_decref(j);
	free(path);
	return rc;
}

/* index I of a 1-D integer tensor */
static int64_t int_at(const void *p, emb_dtype dt, size_t i)
{
	return dt == EMB_DT_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* the tensors: table, weights, mapping; checked against each other */
static int tensors(emb_static *m, const char *file, emb_err *err)
{
	const emb_tensor *t, *w, *map;
	size_t i, n;
	emb_err ign;

	t = emb_safetensors_find(m->st, "embedding.weight");
	if (!t)
		t = emb_safetensors_find(m->st, "embeddings");
	if (!t)
		return emb_err_set(err, "%s: no tensor 'embeddings' (Model2Vec) or 'embedding.weight' (StaticEmbedding)",
		                   file);
	if (t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1 ||
	    t->shape[1] > (1 << 20))
		return emb_err_set(err, "%s: tensor '%s' must be a matrix (tokens, dimensions)",
		                   file, t->name);
	if (t->dtype != EMB_DT_F32 && t->dtype != EMB_DT_F16 &&
	    t->dtype != EMB_DT_F64 && t->dtype != EMB_DT_I8)
		return emb_err_set(err, "%s: tensor '%s' is %s (F32, F16, F64 or I8 are read)",
		                   file, t->name, emb_dtype_name(t->dtype));
	if (emb_tensor_check_finite(t, err) < 0)
		return -1;
	m->table = t->data;
	m->tname = t->name;
	m->tdt = t->dtype;
	m->rows = (size_t)t->shape[0];
	m->dim = (int)t->shape[1];
	m->ids = m->rows;
	w = emb_safetensors_find(m->st, "weights");
	map = emb_safetensors_find(m->st, "mapping");
	if (w) {
		if (w->ndim != 1 || (w->dtype != EMB_DT_F64 && w->dtype != EMB_DT_F32 &&
		                     w->dtype != EMB_DT_F16))
			return emb_err_set(err, "%s: tensor 'weights' must be a vector of F64, F32 or F16",
			                   file);
		if (emb_tensor_check_finite(w, err) < 0)
			return -1;
		m->w = w->data;
		m->wdt = w->dtype;
	}
	if (map) {
		if (map->ndim != 1 || (map->dtype != EMB_DT_I32 && map->dtype != EMB_DT_I64))
			return emb_err_set(err, "%s: tensor 'mapping' must be a vector of I32 or I64",
			                   file);
		n = (size_t)map->shape[0];
		for (i = 0; i < n; i++) {
			int64_t r = int_at(map->data, map->dtype, i);
			if (r < 0 || (uint64_t)r >= m->rows)
				return emb_err_set(err, "%s: tensor 'mapping': row %lld of token %zu is out of range (the table has %zu rows)",
				                   file, (long long)r, i, m->rows);
		}
		m->map = map->data;
		m->mdt = map->dtype;
		m->ids = n;
	}
	if (w && (size_t)w->shape[0] < m->ids)
		m->ids = (size_t)w->shape[0];
	if (m->tdt == EMB_DT_F16) {
		if (!(m->h2f = malloc(65536 * sizeof(float))))
			return emb_err_set(err, "out of memory");
		for (i = 0; i < 65536; i++)
			m->h2f[i] = emb_static_h2f((uint16_t)i);
	}
	/* every table's half kernels give the same bits: an EMB_ISA the
	 * transformer path would refuse only leaves the scalar ones here */
	if (emb_kernels_select(&m->k, &ign) < 0)
		m->k = &emb_kernels_scalar;
	return 0;
}

/* code points of the UTF-8 string s */
static size_t cps(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* int(np.median(len(token) for every vocabulary token)) */
static int median_length(emb_static *m, size_t n_ids, emb_err *err)
{
	size_t *len = malloc((n_ids + 1) * sizeof(*len)), n = 0;

	if (!len)
		return emb_err_set(err, "out of memory");
	for (size_t id = 0; id < n_ids; id++) {
		const char *s = emb_tokenizer_id_to_token(m->tok, (int32_t)id);
		if (s)
			len[n++] = cps(s);
	}
	qsort(len, n, sizeof(*len), cmp_size);
	m->median = n == 0 ? 0 : n % 2 ? len[n / 2] :
	            (len[n / 2 - 1] + len[n / 2]) / 2;
	free(len);
	return 0;
}

int emb_static_load(emb_static **out, const char *dir, emb_err *err)
{
	emb_static *m;
	json_t *mods = NULL;
	const char *mp = "";
	char *sub = NULL, *file = NULL;
	size_t n_ids;
	int fmt;

	*out = NULL;
	if ((fmt = emb_static_detect(dir, err)) < 0)
		return -1;
	if (fmt == EMB_STATIC_NONE)
		return emb_err_set(err, "%s: not a static embedding model (no config.json with \"model_type\": \"model2vec\", no StaticEmbedding module in modules.json)",
		                   dir);
	if (!(m = calloc(1, sizeof(*m))))
		return emb_err_set(err, "out of memory");
	m->format = fmt;
	m->unk = -1;
	if (fmt == EMB_STATIC_ST) {
		if (load_json(&mods, dir, "modules.json", err) < 0)
			goto fail;
		st_first(mods, &mp);
		if (!emb_relpath_ok(mp, EMB_RELPATH_EMPTY_OK)) {
			emb_err_set(err, "%s/modules.json: entry 0: field 'path' must be a relative path inside the model",
			            dir);
			goto fail;
		}
	}
	sub = *mp && strcmp(mp, ".") ? emb_path_join(dir, mp) : strdup(dir);
	file = sub ? emb_path_join(sub, "model.safetensors") : NULL;
	if (!file) {
		emb_err_set(err, "out of memory");
		goto fail;
	}
	m->tfile = *mp && strcmp(mp, ".") ? emb_path_join(mp, "model.safetensors") :
	           strdup("model.safetensors");
	if (!m->tfile) {
		emb_err_set(err, "out of memory");
		goto fail;
	}
	if (fmt == EMB_STATIC_M2V ? m2v_config(m, dir, err) < 0 :
	    st_truncation(m, sub, err) < 0)
		goto fail;
	if (emb_tokenizer_load(&m->tok, sub, err) < 0)
		goto fail;
	if (emb_safetensors_open_in(&m->st, dir, file, err) < 0 ||
	    tensors(m, file, err) < 0)
		goto fail;
	n_ids = emb_tokenizer_vocab_size(m->tok);
	if (n_ids > m->ids) {
		emb_err_set(err, "%s: the table covers %zu token ids, the tokenizer has %zu",
		            file, m->ids, n_ids);
		goto fail;
	}
	if (fmt == EMB_STATIC_M2V) {
		m->unk = emb_tokenizer_unk_id(m->tok);
		if (median_length(m, n_ids, err) < 0)
			goto fail;
	}
	json_decref(mods);
	free(sub);
	free(file);
	*out = m;
	return 0;
fail:
	json_decref(mods);
	free(sub);
	free(file);
	emb_static_free(m);
	return -1;
}

int emb_static_format(const emb_static *m) { return m->format; }
int emb_static_dim(const emb_static *m) { return m->dim; }
const emb_tokenizer *emb_static_tokenizer(const emb_static *m) { return m->tok; }
size_t emb_static_ids(const emb_static *m) { return m->ids; }
size_t emb_static_max_length(const emb_static *m) { return m->max_length; }
int emb_static_normalizes(const emb_static *m) { return m->normalize; }

const char *emb_static_dtype(const emb_static *m)
{
	switch (m->tdt) {
	case EMB_DT_F16: return "float16";
	case EMB_DT_F64: return "float64";
	case EMB_DT_I8: return "int8";
	default: return "float32";
	}
}
