/*
 * vfield.c - the fields emb-validate compares (vd_defs: kind and keys on
 * each side), and one field of a record extracted into a struct vval:
 * only what is compared is kept, never the JSON.
 *
 * Adding a field: one line in vd_defs[] (kind + keys on each side), and
 * NDEFS (vstate.h) one more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

const struct vdef vd_defs[] = {
	{ "input_ids", VK_INTS, { "input_ids" }, { "input_ids" }, NULL, 0, 0 },
	{ "token_type_ids", VK_INTS, { "token_type_ids" },
	  { "token_type_ids" }, NULL, 0, 1 },
	{ "tokens", VK_STRS, { "tokens" }, { "tokens" }, NULL, 0, 0 },
	{ "span", VK_INTS, { "span" }, { "span" }, NULL, 0, 1 },
	{ "embedding", VK_FLOATS, { "embedding" }, { "embedding" }, NULL, -1, 0 },
	{ "token_embeddings", VK_FLOATS,
	  { "last_hidden_state", "token_embeddings" },
	  { "token_embeddings", "last_hidden_state" }, "last_hidden_state", -1, 0 },
	{ "logits", VK_FLOATS, { "logits" }, { "logits" }, NULL, -1, 0 },
	{ "scores", VK_FLOATS, { "scores" }, { "scores" }, NULL, -1, 0 },
	{ "sparse", VK_SPARSE, { "sparse" }, { "sparse" }, NULL, -1, 0 },
	{ "int8", VK_QUANT, { "int8" }, { "int8" }, NULL, 0, 0 },
	{ "uint8", VK_QUANT, { "uint8" }, { "uint8" }, NULL, 0, 0 },
	{ "binary", VK_QUANT, { "binary" }, { "binary" }, NULL, 0, 0 },
	{ "ubinary", VK_QUANT, { "ubinary" }, { "ubinary" }, NULL, 0, 0 },
};
_Static_assert(sizeof(vd_defs) / sizeof(vd_defs[0]) == NDEFS,
               "NDEFS (vstate.h) is the number of fields");

/* ------------------------------------------------------------------ */
/* field table                                                         */

int vd_def_index(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (!strcmp(vd_defs[i].name, name) ||
		    (vd_defs[i].alias && !strcmp(vd_defs[i].alias, name)))
			return (int)i;
	return -1;
}

const char *emb_validate_field_name(const char *name)
{
	int i = name ? vd_def_index(name) : -1;

	return i < 0 ? NULL : vd_defs[i].name;
}

const char *emb_validate_field_list(void)
{
	static char buf[512];

	if (!buf[0]) {
		size_t n = 0;

		for (size_t i = 0; i < NDEFS; i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
			                      i ? ", " : "", vd_defs[i].name);
	}
	return buf;
}

/* ------------------------------------------------------------------ */
/* extracting one field of a record                                    */

void vd_vval_release(struct vval *x)
{
	free(x->msg);
	free(x->iv);
	free(x->fv);
	free(x->idx);
	if (x->sv) {
		for (size_t i = 0; i < x->cols; i++)
			free(x->sv[i].p);
		free(x->sv);
	}
	memset(x, 0, sizeof(*x));
}

static int has_key(const emb_record *rec, const char *key, int b64)
{
	char buf[64];

	if (emb_record_has(rec, key))
		return 1;
	if (!b64)
		return 0;
	snprintf(buf, sizeof(buf), "%s_b64", key);
	return emb_record_has(rec, buf);
}

static const char *present_key(const emb_record *rec, const struct vdef *d,
                               int side)
{
	const char *const *keys = side == EMB_SIDE_GOLDEN ? d->gkeys : d->ikeys;

	for (int k = 0; k < 3 && keys[k]; k++)
		if (has_key(rec, keys[k], d->kind == VK_FLOATS))
			return keys[k];
	return NULL;
}

static json_t *raw_json(const emb_record *rec, const char *key, emb_err *err)
{
	size_t len = 0;
	const char *raw = emb_record_raw(rec, key, &len);
	json_error_t je;
	json_t *j;

	if (!raw) {
		emb_err_set(err, "missing field '%s'", key);
		return NULL;
	}
	j = json_loadb(raw, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!j)
		emb_err_set(err, "field '%s': invalid JSON: %s", key, je.text);
	return j;
}

static int get_strs(struct vval *x, const emb_record *rec, const char *key,
                    emb_err *err)
{
	json_t *j = raw_json(rec, key, err);
	size_t n;

	if (!j)
		return -1;
	if (!json_is_array(j)) {
		json_decref(j);
		return emb_err_set(err, "field '%s' is not an array of strings",
		                   key);
	}
	n = json_array_size(j);
	x->sv = emb_xcalloc(n, sizeof(*x->sv));
	x->rows = 1;
	x->cols = n;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(j, i);

		if (!json_is_string(e)) {
			json_decref(j);
			return emb_err_set(err, "field '%s' is not an array "
			                   "of strings (element %zu)", key, i);
		}
		x->sv[i].n = json_string_length(e);
		x->sv[i].p = emb_xstrndup(json_string_value(e), x->sv[i].n);
	}
	json_decref(j);
	return 0;
}

struct spair {
	int64_t i;
	float w;
};

static int cmp_spair(const void *a, const void *b)
{
	const struct spair *x = a, *y = b;

	return (x->i > y->i) - (x->i < y->i);
}

static int parse_index(int64_t *out, const char *s)
{
	char *end;
	long long v;

	if (!*s || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* sparse vector: {"123": 0.5, ...} or {"indices": [...], "values": [...]} */
static int get_sparse(struct vval *x, const emb_record *rec, const char *key,
                      emb_err *err)
{
	json_t *j = raw_json(rec, key, err), *ji, *jv;
	struct spair *p = NULL;
	size_t n = 0;

	if (!j)
		return -1;
	if (!json_is_object(j)) {
		json_decref(j);
		return emb_err_set(err, "field '%s' is not an object", key);
	}
	ji = json_object_get(j, "indices");
	jv = json_object_get(j, "values");
	if (ji && jv) {
		if (!json_is_array(ji) || !json_is_array(jv) ||
		    json_array_size(ji) != json_array_size(jv)) {
			json_decref(j);
			return emb_err_set(err, "field '%s': 'indices' and "
			                   "'values' must be arrays of the same "
			                   "length", key);
		}
		n = json_array_size(ji);
		p = emb_xcalloc(n, sizeof(*p));
		for (size_t i = 0; i < n; i++) {
			json_t *a = json_array_get(ji, i);
			json_t *b = json_array_get(jv, i);

			if (!json_is_integer(a) || !json_is_number(b)) {
				free(p);
				json_decref(j);
				return emb_err_set(err, "field '%s': element %zu "
				                   "is not an integer index and a "
				                   "number", key, i);
			}
			p[i].i = json_integer_value(a);
			p[i].w = (float)json_number_value(b);
		}
	} else {
		const char *k;
		json_t *val;
		size_t i = 0;

		n = json_object_size(j);
		p = emb_xcalloc(n, sizeof(*p));
		json_object_foreach(j, k, val) {
			if (parse_index(&p[i].i, k) < 0 || !json_is_number(val)) {
				emb_err_set(err, "field '%s': member '%s' is not "
				            "an integer index with a number", key, k);
				free(p);
				json_decref(j);
				return -1;
			}
			p[i].w = (float)json_number_value(val);
			i++;
		}
	}
	json_decref(j);
	qsort(p, n, sizeof(*p), cmp_spair);
	for (size_t i = 1; i < n; i++)
		if (p[i].i == p[i - 1].i) {
			emb_err_set(err, "field '%s': index %lld appears twice",
			            key, (long long)p[i].i);
			free(p);
			return -1;
		}
	x->idx = emb_xcalloc(n, sizeof(*x->idx));
	x->fv = emb_xcalloc(n, sizeof(*x->fv));
	for (size_t i = 0; i < n; i++) {
		x->idx[i] = p[i].i;
		x->fv[i] = p[i].w;
	}
	free(p);
	x->rows = 1;
	x->cols = n;
	return 0;
}

void vd_extract(struct vval *x, const emb_record *rec,
                const struct vdef *d, int side)
{
	const char *key = present_key(rec, d, side);
	emb_err err = { "" };
	size_t n = 0;
	int r = -1;

	memset(x, 0, sizeof(*x));
	if (!key)
		return;
	switch (d->kind) {
	case VK_INTS:
	case VK_QUANT:
		r = emb_record_get_int32s(rec, key, &x->iv, &n, &err);
		x->rows = 1;
		x->cols = n;
		break;
	case VK_STRS:
		r = get_strs(x, rec, key, &err);
		break;
	case VK_FLOATS:
		r = emb_record_get_floats(rec, key, &x->fv, &x->rows, &x->cols,
		                          &err);
		if (!x->rows || !x->cols)
			x->rows = x->cols = 0;  /* [] == [[]] == "" */
		break;
	case VK_SPARSE:
		r = get_sparse(x, rec, key, &err);
		break;
	}
	if (r < 0) {
		vd_vval_release(x);
		x->state = VS_BAD;
		x->msg = emb_xstrndup(err.msg, strlen(err.msg));
		if (!*x->msg)
			vd_set_str(&x->msg, "unreadable");
	} else {
		x->state = VS_OK;
	}
}
