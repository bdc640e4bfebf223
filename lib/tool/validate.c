/*
 * validate.c - compare a record stream with a golden one (emb-validate)
 *
 * Records of the two sides are joined on the raw JSON text of "id" (or
 * on their ordinal in line order when the first record of either side
 * has no id); a window of a long document (--chunk) on "id" and
 * "chunk".  Both streams are consumed incrementally: a record waits in
 * a per-side table until its partner arrives, so streams in the same
 * order need almost no memory, and any order works.  Only the fields
 * that are compared are kept (extracted into struct vval), never the
 * JSON.
 *
 * Adding a field: one line in defs[] (kind + keys on each side).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/strmap.h"
#include "tool/emb-tool.h"
#include "tool/xalloc.h"

enum vkind {
	VK_INTS,        /* int arrays, exact (input_ids) */
	VK_STRS,        /* string arrays, exact (tokens) */
	VK_FLOATS,      /* float vector or matrix, atol + cosine */
	VK_SPARSE,      /* {"idx": w} or {"indices":[],"values":[]} */
	VK_QUANT,       /* int arrays with an integer tolerance */
};

struct vdef {
	const char *name;
	enum vkind kind;
	const char *gkeys[3];   /* golden keys, first present wins */
	const char *ikeys[3];   /* input keys */
	const char *alias;      /* another accepted name, or NULL */
	double atol;            /* default; < 0: opts.atol */
	int lenient;            /* 1: compared only where both records have
	                           it (else a record of an input that has the
	                           field elsewhere must have it too) */
};

static const struct vdef defs[] = {
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
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

enum { VS_ABSENT, VS_OK, VS_BAD };

struct vstr {
	char *p;
	size_t n;
};

/* one field of one record */
struct vval {
	int state;
	char *msg;              /* VS_BAD: why */
	size_t rows, cols;      /* ints/strs/sparse: rows 1, cols n */
	int32_t *iv;
	float *fv;
	struct vstr *sv;
	int64_t *idx;           /* sparse: sorted indices, fv the weights */
};

struct item {
	char *key;              /* join key */
	char *label;            /* "id 17" or "record 3" */
	char *where;            /* "file:line" of a record without id */
	int has_id;
	int skip;               /* an error record under skip_errors */
	size_t ord;
	struct vval *vals;      /* one per active field */
	struct item *prev, *next;       /* pending list, arrival order */
};

struct side {
	struct item *head, *tail;
	emb_strmap pending;     /* key -> pending item (empty until
	                           joining) */
	emb_strmap seen;        /* ids seen (duplicates) */
	size_t n;               /* records so far (ordinal) */
	int first_has_id;       /* -1 unknown */
	int any[NDEFS];         /* the field occurs on this side */
};

struct fstat {
	const struct vdef *def;
	int di;                 /* index in defs */
	emb_vstat st;
	char *max_abs_id, *min_cos_id;
	char *first_bad_id;     /* first mismatch/shape/bad/golden_only */
	char *first_shape_id, *first_gonly_id;
	size_t ndiag;
	int requested;
};

struct emb_validate {
	emb_validate_opts o;
	struct fstat *f;
	size_t nf;
	struct side s[2];
	int mode;               /* -1 undecided, 0 line order, 1 by id */
	emb_vrecords rec;
	size_t nrdiag;          /* record-level messages printed */
	int finished;
	int stopped;            /* o.strict: reading stopped at a failure */
	size_t skipped;         /* error records left out (skip_errors) */
	size_t pairs_skipped;   /* joins with a skipped error record */
};

static const char *side_name[2] = { "golden", "input" };

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? emb_xstrndup(s, strlen(s)) : NULL;
}

static void out_line(const emb_validate *v, FILE *fp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void out_line(const emb_validate *v, FILE *fp, const char *fmt, ...)
{
	va_list ap;

	if (!fp)
		return;
	if (v->o.prefix)
		fputs(v->o.prefix, fp);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fputc('\n', fp);
}

/* a message, the COUNTth of its kind (limited to max_diag) */
static void vdiag(const emb_validate *v, size_t *count, const char *fmt,
                  va_list ap)
{
	if ((*count)++ >= v->o.max_diag || !v->o.diag)
		return;
	if (v->o.prefix)
		fputs(v->o.prefix, v->o.diag);
	vfprintf(v->o.diag, fmt, ap);
	fputc('\n', v->o.diag);
}

/* a per-record message about field FS */
static void fdiag(struct fstat *fs, const emb_validate *v, const char *fmt,
                  ...) __attribute__((format(printf, 3, 4)));
static void fdiag(struct fstat *fs, const emb_validate *v, const char *fmt,
                  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(v, &fs->ndiag, fmt, ap);
	va_end(ap);
}

/* a message about a record */
static void rdiag(emb_validate *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rdiag(emb_validate *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(v, &v->nrdiag, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* field table                                                         */

static int def_index(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (!strcmp(defs[i].name, name) ||
		    (defs[i].alias && !strcmp(defs[i].alias, name)))
			return (int)i;
	return -1;
}

const char *emb_validate_field_name(const char *name)
{
	int i = name ? def_index(name) : -1;

	return i < 0 ? NULL : defs[i].name;
}

const char *emb_validate_field_list(void)
{
	static char buf[512];

	if (!buf[0]) {
		size_t n = 0;

		for (size_t i = 0; i < NDEFS; i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
			                      i ? ", " : "", defs[i].name);
	}
	return buf;
}

void emb_validate_opts_init(emb_validate_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->atol = 1e-5;
	o->min_cos = NAN;
	o->max_diag = 5;
}

/* ------------------------------------------------------------------ */
/* extracting one field of a record                                    */

static void vval_release(struct vval *x)
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

static void extract(struct vval *x, const emb_record *rec,
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
		vval_release(x);
		x->state = VS_BAD;
		x->msg = emb_xstrndup(err.msg, strlen(err.msg));
		if (!*x->msg)
			set_str(&x->msg, "unreadable");
	} else {
		x->state = VS_OK;
	}
}

/* ------------------------------------------------------------------ */
/* comparisons (both sides VS_OK)                                      */

static void note_max(struct fstat *fs, double d, const char *label)
{
	if (!fs->max_abs_id || d > fs->st.max_abs ||
	    (isnan(d) && !isnan(fs->st.max_abs))) {
		fs->st.max_abs = d;
		set_str(&fs->max_abs_id, label);
	}
}

static void note_cos(struct fstat *fs, double c, const char *label)
{
	if (!fs->min_cos_id || c < fs->st.min_cos) {
		fs->st.min_cos = c;
		set_str(&fs->min_cos_id, label);
	}
}

static void note_fail(struct fstat *fs, const char *label)
{
	if (!fs->first_bad_id)
		set_str(&fs->first_bad_id, label);
}

static double cosine(double dot, double ng, double ni)
{
	double c;

	if (ng == 0 && ni == 0)
		return 1;
	if (ng == 0 || ni == 0)
		return 0;
	c = dot / sqrt(ng * ni);
	if (isnan(c))
		return -1;
	return c > 1 ? 1 : c < -1 ? -1 : c;
}

static int cos_fails(const struct fstat *fs, double c)
{
	return !isnan(fs->st.min_cos_req) && !(c >= fs->st.min_cos_req);
}

static void cmp_exact(struct fstat *fs, emb_validate *v,
                      const struct vval *g, const struct vval *x,
                      const char *label)
{
	size_t n = g->cols < x->cols ? g->cols : x->cols, i;
	int strs = fs->def->kind == VK_STRS;

	for (i = 0; i < n; i++) {
		if (strs ? (g->sv[i].n != x->sv[i].n ||
		            memcmp(g->sv[i].p, x->sv[i].p, g->sv[i].n))
		         : g->iv[i] != x->iv[i])
			break;
	}
	if (i == n && g->cols == x->cols)
		return;
	fs->st.mismatches++;
	note_fail(fs, label);
	if (i == n) {
		fdiag(fs, v, "%s: %s: length %zu, golden %zu", label,
		      fs->def->name, x->cols, g->cols);
	} else if (strs) {
		fdiag(fs, v, "%s: %s: [%zu] is \"%.40s\", golden \"%.40s\" "
		      "(length %zu, golden %zu)", label, fs->def->name, i,
		      x->sv[i].p, g->sv[i].p, x->cols, g->cols);
	} else {
		fdiag(fs, v, "%s: %s: [%zu] is %ld, golden %ld (length %zu, "
		      "golden %zu)", label, fs->def->name, i, (long)x->iv[i],
		      (long)g->iv[i], x->cols, g->cols);
	}
}

static void cmp_quant(struct fstat *fs, emb_validate *v,
                      const struct vval *g, const struct vval *x,
                      const char *label)
{
	double worst = 0;
	size_t at = 0;

	if (g->cols != x->cols) {
		fs->st.shape_errors++;
		note_fail(fs, label);
		if (!fs->first_shape_id)
			set_str(&fs->first_shape_id, label);
		fdiag(fs, v, "%s: %s: length %zu, golden %zu", label,
		      fs->def->name, x->cols, g->cols);
		return;
	}
	for (size_t i = 0; i < g->cols; i++) {
		double d = fabs((double)x->iv[i] - (double)g->iv[i]);

		if (d > worst) {
			worst = d;
			at = i;
		}
	}
	note_max(fs, worst, label);
	if (worst > fs->st.atol) {
		fs->st.mismatches++;
		note_fail(fs, label);
		fdiag(fs, v, "%s: %s: [%zu] is %ld, golden %ld (diff %g > %g)",
		      label, fs->def->name, at, (long)x->iv[at],
		      (long)g->iv[at], worst, fs->st.atol);
	}
}

static void cmp_floats(struct fstat *fs, emb_validate *v,
                       const struct vval *g, const struct vval *x,
                       const char *label)
{
	double worst = 0, wcos = 1;
	size_t at = 0, crow = 0;
	int first = 1;

	if (g->rows != x->rows || g->cols != x->cols) {
		fs->st.shape_errors++;
		note_fail(fs, label);
		if (!fs->first_shape_id)
			set_str(&fs->first_shape_id, label);
		fdiag(fs, v, "%s: %s: shape [%zu,%zu], golden [%zu,%zu]", label,
		      fs->def->name, x->rows, x->cols, g->rows, g->cols);
		return;
	}
	for (size_t r = 0; r < g->rows; r++) {
		// row r of golden (rows, cols) vs input (rows, cols)
		const float *a = g->fv + r * g->cols, *b = x->fv + r * x->cols;
		double dot = 0, na = 0, nb = 0, c;

		for (size_t j = 0; j < g->cols; j++) {
			double d = fabs((double)b[j] - (double)a[j]);

			if (isnan(d))
				d = INFINITY;
			if (first || d > worst) {
				worst = d;
				at = r * g->cols + j;
				first = 0;
			}
			dot += (double)a[j] * b[j];
			na += (double)a[j] * a[j];
			nb += (double)b[j] * b[j];
		}
		c = cosine(dot, na, nb);
		if (r == 0 || c < wcos) {
			wcos = c;
			crow = r;
		}
	}
	note_max(fs, worst, label);
	note_cos(fs, wcos, label);
	if (!(worst <= fs->st.atol) || cos_fails(fs, wcos)) {
		fs->st.mismatches++;
		note_fail(fs, label);
		if (!(worst <= fs->st.atol)) {
			char pos[48];

			if (g->rows > 1)
				snprintf(pos, sizeof(pos), "[%zu,%zu]",
				         at / g->cols, at % g->cols);
			else
				snprintf(pos, sizeof(pos), "[%zu]", at);
			fdiag(fs, v, "%s: %s: max abs diff %.3g > %g at %s "
			      "(%.9g, golden %.9g)", label, fs->def->name,
			      worst, fs->st.atol, pos, (double)x->fv[at],
			      (double)g->fv[at]);
		} else {
			fdiag(fs, v, "%s: %s: cosine %.7g < %g (row %zu)", label,
			      fs->def->name, wcos, fs->st.min_cos_req, crow);
		}
	}
}

static void cmp_sparse(struct fstat *fs, emb_validate *v,
                       const struct vval *g, const struct vval *x,
                       const char *label)
{
	double worst = 0, dot = 0, na = 0, nb = 0, c;
	size_t i = 0, j = 0, only = 0;
	int64_t at = -1, oidx = 0;
	double atg = 0, atx = 0;

	while (i < g->cols || j < x->cols) {
		double a = 0, b = 0, d;
		int64_t k;

		if (j >= x->cols || (i < g->cols && g->idx[i] < x->idx[j])) {
			k = g->idx[i];
			a = g->fv[i++];
			if (!only++)
				oidx = k;
		} else if (i >= g->cols || x->idx[j] < g->idx[i]) {
			k = x->idx[j];
			b = x->fv[j++];
			if (!only++)
				oidx = k;
		} else {
			k = g->idx[i];
			a = g->fv[i++];
			b = x->fv[j++];
		}
		d = fabs(b - a);
		if (isnan(d))
			d = INFINITY;
		if (at < 0 || d > worst) {
			worst = d;
			at = k;
			atg = a;
			atx = b;
		}
		dot += a * b;
		na += a * a;
		nb += b * b;
	}
	c = cosine(dot, na, nb);
	note_max(fs, worst, label);
	note_cos(fs, c, label);
	if (!(worst <= fs->st.atol) || cos_fails(fs, c)) {
		fs->st.mismatches++;
		note_fail(fs, label);
		if (!(worst <= fs->st.atol))
			fdiag(fs, v, "%s: %s: max abs diff %.3g > %g at index "
			      "%lld (%.9g, golden %.9g)%s", label,
			      fs->def->name, worst, fs->st.atol, (long long)at,
			      atx, atg, only ? " (index sets differ)" : "");
		else
			fdiag(fs, v, "%s: %s: cosine %.7g < %g", label,
			      fs->def->name, c, fs->st.min_cos_req);
	} else if (only) {
		fdiag(fs, v, "%s: %s: note: %zu indices on one side only (first "
		      "%lld), all within tolerance", label, fs->def->name, only,
		      (long long)oidx);
	}
}

static void compare(emb_validate *v, const struct item *g,
                    const struct item *x)
{
	const char *label = g->label;

	for (size_t f = 0; f < v->nf; f++) {
		struct fstat *fs = &v->f[f];
		const struct vval *a = &g->vals[f], *b = &x->vals[f];

		if (a->state == VS_ABSENT && b->state == VS_ABSENT)
			continue;
		if (a->state == VS_ABSENT) {
			fs->st.input_only++;
			continue;
		}
		if (b->state == VS_ABSENT) {
			fs->st.golden_only++;
			if (!fs->first_gonly_id)
				set_str(&fs->first_gonly_id, label);
			continue;
		}
		fs->st.count++;
		if (a->state == VS_BAD || b->state == VS_BAD) {
			const struct vval *bad = a->state == VS_BAD ? a : b;

			fs->st.bad++;
			note_fail(fs, label);
			fdiag(fs, v, "%s: %s: %s: %s", label, fs->def->name,
			      side_name[bad == a ? 0 : 1], bad->msg);
			continue;
		}
		switch (fs->def->kind) {
		case VK_INTS:
		case VK_STRS:
			cmp_exact(fs, v, a, b, label);
			break;
		case VK_QUANT:
			cmp_quant(fs, v, a, b, label);
			break;
		case VK_FLOATS:
			cmp_floats(fs, v, a, b, label);
			break;
		case VK_SPARSE:
			cmp_sparse(fs, v, a, b, label);
			break;
		}
	}
}

/* ------------------------------------------------------------------ */
/* items and the per-side tables                                       */

static void item_free(emb_validate *v, struct item *it)
{
	if (!it)
		return;
	if (it->vals)
		for (size_t f = 0; f < v->nf; f++)
			vval_release(&it->vals[f]);
	free(it->vals);
	free(it->key);
	free(it->label);
	free(it->where);
	free(it);
}

static void list_append(struct side *s, struct item *it)
{
	it->next = NULL;
	it->prev = s->tail;
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
}

static void list_unlink(struct side *s, struct item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		s->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		s->tail = it->prev;
	it->prev = it->next = NULL;
}

static void tab_insert(struct side *s, struct item *it)
{
	emb_xok(emb_strmap_put(&s->pending, it->key, it));
}

/* remove and return the pending item with KEY, or NULL */
static struct item *tab_take(struct side *s, const char *key)
{
	struct item *it = emb_strmap_take(&s->pending, key);

	if (it)
		list_unlink(s, it);
	return it;
}

/* 1 when KEY was already seen on this side (else remember it) */
static int seen_before(struct side *s, const char *key)
{
	if (emb_strmap_has(&s->seen, key))
		return 1;
	emb_xok(emb_strmap_put(&s->seen, key, s));
	return 0;
}

/* join IT (of SIDE) now that the mode is known */
static void place(emb_validate *v, int side, struct item *it)
{
	struct side *s = &v->s[side], *o = &v->s[!side];
	struct item *p;

	if (v->mode == 1) {
		if (!it->has_id) {
			v->rec.no_id++;
			rdiag(v, "%s: error (at %s): record has no id (joining by "
			      "id)", side_name[side], it->where ? it->where : "?");
			item_free(v, it);
			return;
		}
		if (seen_before(s, it->key)) {
			v->rec.duplicates++;
			rdiag(v, "%s: duplicate %s", side_name[side], it->label);
			item_free(v, it);
			return;
		}
	} else {
		free(it->key);
		it->key = emb_xasprintf("%zu", it->ord);
		free(it->label);
		it->label = emb_xasprintf("record %zu", it->ord);
	}
	p = tab_take(o, it->key);
	if (!p) {
		list_append(s, it);
		tab_insert(s, it);
		return;
	}
	v->rec.joined++;
	if (it->skip || p->skip)
		v->pairs_skipped++;
	else if (side == EMB_SIDE_GOLDEN)
		compare(v, it, p);
	else
		compare(v, p, it);
	item_free(v, it);
	item_free(v, p);
}

static void decide_mode(emb_validate *v)
{
	struct item *it, *next;

	v->mode = v->s[0].first_has_id == 1 && v->s[1].first_has_id == 1;
	v->rec.by_id = v->mode;
	for (int sd = 0; sd < 2; sd++) {
		it = v->s[sd].head;
		v->s[sd].head = v->s[sd].tail = NULL;
		for (; it; it = next) {
			next = it->next;
			it->prev = it->next = NULL;
			place(v, sd, it);
		}
	}
}

static void take_item(emb_validate *v, int side, struct item *it)
{
	struct side *s = &v->s[side];

	if (s->first_has_id < 0)
		s->first_has_id = it->has_id;
	if (v->mode < 0) {
		if (v->s[!side].first_has_id < 0) {
			list_append(s, it);
			return;
		}
		list_append(s, it);
		decide_mode(v);
		return;
	}
	place(v, side, it);
}

void emb_validate_add(emb_validate *v, int side, const emb_record *rec,
                      const char *where)
{
	struct side *s;
	struct item *it;
	const char *raw;
	size_t len = 0;

	if (!v || (side != 0 && side != 1) || v->finished)
		return;
	s = &v->s[side];
	s->n++;
	if (side == EMB_SIDE_GOLDEN)
		v->rec.golden++;
	else
		v->rec.input++;
	it = emb_xcalloc(1, sizeof(*it));
	it->ord = s->n;
	raw = emb_record_raw(rec, "id", &len);
	if (raw && emb_record_raw(rec, "chunk", NULL)) {
		/* windows share their document's id */
		size_t clen = 0;
		const char *ch = emb_record_raw(rec, "chunk", &clen);
		it->has_id = 1;
		it->key = emb_xasprintf("%.*s#%.*s", (int)len, raw, (int)clen, ch);
		it->label = emb_xasprintf("id %.*s chunk %.*s", (int)len, raw,
		                      (int)clen, ch);
	} else if (raw) {
		it->has_id = 1;
		it->key = emb_xstrndup(raw, len);
		it->label = emb_xasprintf("id %s", it->key);
	} else {
		it->key = emb_xasprintf("%zu", it->ord);
		it->label = emb_xasprintf("record %zu", it->ord);
		it->where = where ? emb_xstrndup(where, strlen(where))
		                  : emb_xasprintf("record %zu", it->ord);
	}
	if (emb_record_has(rec, "error")) {
		const char *msg = NULL;
		size_t mlen = 0;

		/* an --errors=emit record stands for a failed one (unless
		 * the caller skips those) */
		if (emb_record_get_string(rec, "error", &msg, &mlen, NULL) < 0)
			msg = "?", mlen = 1;
		if (v->o.skip_errors && side == EMB_SIDE_INPUT) {
			it->skip = 1;
			v->skipped++;
		} else {
			v->rec.errors++;
			rdiag(v, "%s: %s: error record: %.*s", side_name[side],
			      it->label, (int)(mlen > 300 ? 300 : mlen), msg);
		}
	}
	it->vals = emb_xcalloc(v->nf, sizeof(*it->vals));
	for (size_t f = 0; f < v->nf; f++) {
		extract(&it->vals[f], rec, v->f[f].def, side);
		if (it->vals[f].state != VS_ABSENT)
			s->any[v->f[f].di] = 1;
	}
	take_item(v, side, it);
}

void emb_validate_bad(emb_validate *v, int side, const char *where,
                      const char *msg)
{
	if (!v || (side != 0 && side != 1) || v->finished)
		return;
	v->s[side].n++;
	if (side == EMB_SIDE_GOLDEN)
		v->rec.golden++;
	else
		v->rec.input++;
	v->rec.bad++;
	rdiag(v, "%s: error (at %s): %s", side_name[side],
	      where ? where : "?", msg ? msg : "unreadable record");
}

/* ------------------------------------------------------------------ */
/* lifecycle and summary                                               */

int emb_validate_new(emb_validate **out, const emb_validate_opts *o,
                     emb_err *err)
{
	emb_validate *v;
	emb_validate_opts def;
	int want[NDEFS] = { 0 };

	*out = NULL;
	if (!o) {
		emb_validate_opts_init(&def);
		o = &def;
	}
	if (!(o->atol >= 0))
		return emb_err_set(err, "atol must be a number >= 0");
	if (o->fields) {
		for (size_t i = 0; o->fields[i]; i++) {
			int d = def_index(o->fields[i]);

			if (d < 0)
				return emb_err_set(err, "unknown field '%s' "
				                   "(known: %s)", o->fields[i],
				                   emb_validate_field_list());
			want[d] = 1;
		}
	}
	for (size_t i = 0; i < o->n_tols; i++) {
		if (!o->tols[i].field || def_index(o->tols[i].field) < 0)
			return emb_err_set(err, "unknown field '%s' (known: %s)",
			                   o->tols[i].field ? o->tols[i].field : "",
			                   emb_validate_field_list());
		if (isnan(o->tols[i].atol) || isinf(o->tols[i].atol))
			return emb_err_set(err, "field '%s': atol must be a "
			                   "finite number", o->tols[i].field);
	}
	v = emb_xcalloc(1, sizeof(*v));
	v->o = *o;
	v->mode = -1;
	v->s[0].first_has_id = v->s[1].first_has_id = -1;
	v->f = emb_xcalloc(NDEFS, sizeof(*v->f));
	for (size_t d = 0; d < NDEFS; d++) {
		struct fstat *fs;

		if (o->fields && !want[d])
			continue;
		fs = &v->f[v->nf++];
		fs->def = &defs[d];
		fs->di = (int)d;
		fs->requested = o->fields != NULL;
		fs->st.field = defs[d].name;
		fs->st.exact = defs[d].kind == VK_INTS ||
		               defs[d].kind == VK_STRS;
		fs->st.atol = defs[d].atol >= 0 ? defs[d].atol : o->atol;
		fs->st.min_cos_req = defs[d].kind == VK_FLOATS ||
		                     defs[d].kind == VK_SPARSE ? o->min_cos : NAN;
		fs->st.min_cos = 1;
		for (size_t i = 0; i < o->n_tols; i++) {
			if (def_index(o->tols[i].field) != (int)d)
				continue;
			if (o->tols[i].atol >= 0)
				fs->st.atol = o->tols[i].atol;
			if (!isnan(o->tols[i].min_cos))
				fs->st.min_cos_req = o->tols[i].min_cos;
		}
	}
	*out = v;
	return 0;
}

void emb_validate_free(emb_validate *v)
{
	if (!v)
		return;
	for (int sd = 0; sd < 2; sd++) {
		struct side *s = &v->s[sd];
		struct item *it, *next;

		for (it = s->head; it; it = next) {
			next = it->next;
			item_free(v, it);
		}
		emb_strmap_release(&s->pending);
		emb_strmap_release(&s->seen);
	}
	for (size_t f = 0; f < v->nf; f++) {
		free(v->f[f].max_abs_id);
		free(v->f[f].min_cos_id);
		free(v->f[f].first_bad_id);
		free(v->f[f].first_shape_id);
		free(v->f[f].first_gonly_id);
	}
	free(v->f);
	free(v);
}

static struct fstat *find_fstat(const emb_validate *v, const char *field)
{
	int d = field ? def_index(field) : -1;

	for (size_t f = 0; d >= 0 && f < v->nf; f++)
		if (v->f[f].di == d)
			return &v->f[f];
	return NULL;
}

int emb_validate_stat(const emb_validate *v, const char *field,
                      emb_vstat *out)
{
	struct fstat *fs = v ? find_fstat(v, field) : NULL;

	if (!fs)
		return -1;
	*out = fs->st;
	out->max_abs_id = fs->max_abs_id;
	out->min_cos_id = fs->min_cos_id;
	return 0;
}

void emb_validate_records(const emb_validate *v, emb_vrecords *out)
{
	*out = v->rec;
}

/* append ", " + formatted text to a bounded buffer */
static void cat(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
}

/* the list of pending labels of side S, at most 10 */
static void list_ids(char *buf, size_t cap, const struct side *s)
{
	size_t k = 0;

	for (const struct item *it = s->head; it; it = it->next, k++) {
		if (k == 10) {
			size_t rest = 0;

			for (; it; it = it->next)
				rest++;
			cat(buf, cap, ", ... and %zu more", rest);
			return;
		}
		cat(buf, cap, "%s%s", k ? ", " : "", it->label);
	}
}

static int field_line(emb_validate *v, struct fstat *fs, FILE *out)
{
	emb_vstat *st = &fs->st;
	char body[1024] = "";
	char why[256] = "";
	int lack = st->golden_only > 0 && (fs->requested ||
	           (!fs->def->lenient && v->s[EMB_SIDE_INPUT].any[fs->di]));

	if (st->count == 0 && !lack && !fs->requested)
		return -1;      /* not compared: no line */
	st->ok = 1;
	snprintf(body, sizeof(body), "%s: %zu records", st->field, st->count);
	if (st->exact) {
		cat(body, sizeof(body), ", %zu mismatches", st->mismatches);
		if (st->mismatches)
			cat(body, sizeof(body), " (first %s)", fs->first_bad_id);
	} else if (st->count > st->bad + st->shape_errors) {
		cat(body, sizeof(body), ", max abs diff %.2g (%s)", st->max_abs,
		    fs->max_abs_id);
		if (fs->def->kind != VK_QUANT)
			cat(body, sizeof(body), ", min cos %.7g (%s)",
			    st->min_cos, fs->min_cos_id);
	}
	if (st->shape_errors)
		cat(body, sizeof(body), ", %zu shape mismatches (first %s)",
		    st->shape_errors, fs->first_shape_id);
	if (st->bad)
		cat(body, sizeof(body), ", %zu unreadable", st->bad);
	if (lack)
		cat(body, sizeof(body), ", %zu records lack it in input "
		    "(first %s)", st->golden_only, fs->first_gonly_id);
	if (st->count == 0) {
		st->ok = 0;
		snprintf(why, sizeof(why), "not present in both");
	}
	if (st->mismatches || st->shape_errors || st->bad || lack)
		st->ok = 0;
	if (!st->ok && !why[0] && !st->exact && st->mismatches) {
		if (!isnan(st->min_cos_req))
			snprintf(why, sizeof(why), "atol %g, min cos %g: "
			         "%zu records out of tolerance", st->atol,
			         st->min_cos_req, st->mismatches);
		else
			snprintf(why, sizeof(why), "atol %g: %zu records out "
			         "of tolerance", st->atol, st->mismatches);
	}
	if (!st->ok || !v->o.quiet) {
		if (why[0])
			out_line(v, out, "%s: FAIL (%s)", body, why);
		else
			out_line(v, out, "%s: %s", body, st->ok ? "ok" : "FAIL");
	}
	if (fs->ndiag > v->o.max_diag && v->o.diag)
		out_line(v, v->o.diag, "%s: %zu more messages not shown",
		         st->field, fs->ndiag - v->o.max_diag);
	return st->ok;
}

/* ON: the MISSING records of side WHO (not in side OTHER) are counted,
 * not a failure */
static void not_compared(struct emb_validate *v, FILE *out, size_t *missing,
                         int on, const char *who, const char *other,
                         const char *opt)
{
	if (!*missing || !on)
		return;
	if (!v->o.quiet)
		out_line(v, out, "records: %zu %s records not in the %s, not "
		         "compared (%s)", *missing, who, other, opt);
	*missing = 0;
}

int emb_validate_finish(emb_validate *v, FILE *out)
{
	int fail = 0, compared = 0;
	emb_vrecords *r = &v->rec;
	char body[2048];

	if (v->finished)
		return 1;
	v->finished = 1;
	for (size_t f = 0; f < v->nf; f++) {
		int ok = field_line(v, &v->f[f], out);

		if (ok == 0)
			fail = 1;
		if (ok >= 0 && v->f[f].st.count)
			compared = 1;
	}
	for (const struct item *it = v->s[0].head; it; it = it->next)
		r->missing_input++;
	for (const struct item *it = v->s[1].head; it; it = it->next)
		if (!it->skip)
			r->missing_golden++;
	if (v->stopped)         /* what was not read is not missing */
		r->missing_input = r->missing_golden = 0;
	if (v->nrdiag > v->o.max_diag && v->o.diag)
		out_line(v, v->o.diag, "records: %zu more messages not shown",
		         v->nrdiag - v->o.max_diag);
	if (v->stopped) {
		out_line(v, out, "records: %zu golden, %zu input read: FAIL "
		         "(stopped at the first failure: --strict)", r->golden,
		         r->input);
		return 1;
	}
	/* --golden-only: only the records the golden holds are compared;
	 * --input-only: only those the input holds */
	not_compared(v, out, &r->missing_golden, v->o.golden_only, "input",
	             "golden", "--golden-only");
	not_compared(v, out, &r->missing_input, v->o.input_only, "golden",
	             "input", "--input-only");
	if (v->skipped && !v->o.quiet)
		out_line(v, out, "records: %zu error records skipped "
		         "(--errors=skip)", v->skipped);
	if (r->missing_input || r->missing_golden || r->bad || r->duplicates ||
	    r->no_id || r->errors || !compared) {
		snprintf(body, sizeof(body), "records: %zu golden, %zu input, "
		         "%zu joined%s", r->golden, r->input, r->joined,
		         v->mode == 0 ? " in line order" :
		         v->mode == 1 ? " by id" : "");
		cat(body, sizeof(body), ": FAIL (");
		if (r->missing_input) {
			cat(body, sizeof(body), "%zu missing in input: ",
			    r->missing_input);
			list_ids(body, sizeof(body), &v->s[0]);
			cat(body, sizeof(body), "; ");
		}
		if (r->missing_golden) {
			cat(body, sizeof(body), "%zu missing in golden: ",
			    r->missing_golden);
			list_ids(body, sizeof(body), &v->s[1]);
			cat(body, sizeof(body), "; ");
		}
		if (r->bad)
			cat(body, sizeof(body), "%zu unreadable lines; ", r->bad);
		if (r->duplicates)
			cat(body, sizeof(body), "%zu duplicate ids; ",
			    r->duplicates);
		if (r->no_id)
			cat(body, sizeof(body), "%zu records without id; ",
			    r->no_id);
		if (r->errors)
			cat(body, sizeof(body), "%zu error records; ",
			    r->errors);
		if (!compared)
			cat(body, sizeof(body), "no field compared; ");
		/* drop the last "; " */
		size_t n = strlen(body);
		if (n >= 2 && !strcmp(body + n - 2, "; "))
			body[n - 2] = 0;
		cat(body, sizeof(body), ")");
		out_line(v, out, "%s", body);
		fail = 1;
	}
	return fail;
}

/* ------------------------------------------------------------------ */
/* two files                                                           */

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* read one line of SIDE into v; 0 at end of input */
static int feed(emb_validate *v, int side, emb_reader *r, emb_record *rec)
{
	const char *line;
	size_t len;
	char where[600];
	emb_err err = { "" };
	int k;

	for (;;) {
		k = emb_reader_next(r, &line, &len, &err);
		if (k == 0)
			return 0;
		snprintf(where, sizeof(where), "%s:%zu", emb_reader_name(r),
		         emb_reader_lineno(r));
		if (k < 0) {
			emb_validate_bad(v, side, where, err.msg);
			return 1;
		}
		if (blank(line, len))
			continue;
		if (emb_record_parse(rec, line, len, &err) < 0)
			emb_validate_bad(v, side, where, err.msg);
		else
			emb_validate_add(v, side, rec, where);
		return 1;
	}
}

/* 1 once something has failed (what --strict stops at) */
static int failing_now(const emb_validate *v)
{
	const emb_vrecords *r = &v->rec;

	if (r->bad || r->duplicates || r->no_id || r->errors)
		return 1;
	for (size_t f = 0; f < v->nf; f++) {
		const emb_vstat *st = &v->f[f].st;
		if (st->mismatches || st->shape_errors || st->bad)
			return 1;
	}
	return 0;
}

int emb_validate_files(const char *golden, const char *input,
                       size_t max_line, const emb_validate_opts *o,
                       FILE *out, emb_err *err)
{
	emb_reader *rg = NULL, *ri = NULL;
	emb_record *recg = NULL, *reci = NULL;
	emb_validate *v = NULL;
	emb_vrecords r0, r1;
	size_t gbad = 0, gfirst = 0;
	int more_g = 1, more_i = 1, rc = -1;

	if (!max_line)
		max_line = (size_t)64 << 20;
	for (int k = 0; k < 2; k++) {
		const char *p = k ? input : golden;
		struct stat sb;

		if (p && strcmp(p, "-") && stat(p, &sb) == 0 &&
		    S_ISDIR(sb.st_mode))
			return emb_err_set(err, "%s: Is a directory", p);
	}
	if (emb_validate_new(&v, o, err) < 0)
		return -1;
	if (emb_reader_open(&rg, golden, max_line, err) < 0)
		goto done;
	if (emb_reader_open(&ri, input, max_line, err) < 0)
		goto done;
	recg = emb_record_new();
	reci = emb_record_new();
	if (!recg || !reci) {
		emb_err_set(err, "out of memory");
		goto done;
	}
	while (more_g || more_i) {
		if (more_g) {
			emb_validate_records(v, &r0);
			more_g = feed(v, EMB_SIDE_GOLDEN, rg, recg);
			emb_validate_records(v, &r1);
			if (r1.bad > r0.bad && !gbad++)
				gfirst = emb_reader_lineno(rg);
		}
		if (more_i)
			more_i = feed(v, EMB_SIDE_INPUT, ri, reci);
		if (o && o->strict && failing_now(v)) {
			v->stopped = 1;
			break;
		}
		if (o && o->progress && !((v->rec.golden + v->rec.input) & 1023))
			o->progress(o->progress_ctx, v->rec.golden, v->rec.input, 0);
	}
	if (o && o->progress)
		o->progress(o->progress_ctx, v->rec.golden, v->rec.input, 1);
	rc = emb_validate_finish(v, out);
	/* a golden that cannot be read is a bad reference, not a failed
	 * comparison: the caller's "unreadable file" status */
	if (gbad)
		rc = emb_err_set(err, "%s:%zu: unreadable golden line (%zu in "
		                 "all): the golden must be valid JSON Lines",
		                 emb_reader_name(rg), gfirst, gbad);
done:
	emb_record_free(recg);
	emb_record_free(reci);
	emb_reader_free(rg);
	emb_reader_free(ri);
	emb_validate_free(v);
	return rc;
}
