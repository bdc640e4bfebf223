/*
 * myaml.c - the YAML getters of the manifest runner: one value of a
 * case, checked, with a FILE:LINE message naming the case and the key
 * when it is wrong.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

int mf_line_of(const yaml_node_t *n)
{
	return n ? (int)n->start_mark.line + 1 : 0;
}

int mf_yerr(struct yctx *y, const yaml_node_t *n, const char *key,
            const char *fmt, ...)
{
	char msg[EMB_ERR_MAX], where[EMB_ERR_MAX] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (y->cname)
		snprintf(where, sizeof(where), "case '%.100s': ", y->cname);
	if (key)
		snprintf(where + strlen(where), sizeof(where) - strlen(where),
		         "key '%.100s': ", key);
	return emb_err_set(y->err, "%s:%d: %s%s", y->m->path, mf_line_of(n),
	                   where, msg);
}

const char *mf_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ?
	       (const char *)n->data.scalar.value : NULL;
}

int mf_get_str(struct yctx *y, const yaml_node_t *n, const char *key,
               char **out)
{
	const char *s = mf_scalar(n);

	if (!s || !*s)
		return mf_yerr(y, n, key, "expected a non-empty string");
	if (strlen(s) != n->data.scalar.length)
		return mf_yerr(y, n, key, "string contains a NUL byte");
	free(*out);
	*out = emb_xstrdup(s);
	return 0;
}

int mf_get_num(struct yctx *y, const yaml_node_t *n, const char *key,
               double *out)
{
	const char *s = mf_scalar(n);
	char *end;
	double d;

	if (!s || !*s)
		return mf_yerr(y, n, key, "expected a number");
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || !isfinite(d) || d < 0)
		return mf_yerr(y, n, key, "expected a number >= 0, got '%.60s'", s);
	*out = d;
	return 0;
}

int mf_get_count(struct yctx *y, const yaml_node_t *n, const char *key,
                 size_t *out)
{
	const char *s = mf_scalar(n);
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return mf_yerr(y, n, key, "expected a positive integer");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !v || v > SIZE_MAX)
		return mf_yerr(y, n, key, "expected a positive integer, got "
		               "'%.60s'", s);
	*out = (size_t)v;
	return 0;
}

int mf_get_int(struct yctx *y, const yaml_node_t *n, const char *key,
               int *out)
{
	const char *s = mf_scalar(n);
	char *end;
	long v;

	if (!s || !*s)
		return mf_yerr(y, n, key, "expected an integer");
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 255)
		return mf_yerr(y, n, key, "expected an integer 0..255, got '%.60s'",
		               s);
	*out = (int)v;
	return 0;
}

/* true or false */
int mf_get_flag(struct yctx *y, const yaml_node_t *n, const char *key,
                int *out)
{
	const char *s = mf_scalar(n);

	if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
		*out = !strcmp(s, "true");
		return 0;
	}
	return mf_yerr(y, n, key, "expected true or false, got '%.60s'",
	               s ? s : "?");
}

/* a sequence of scalars (a single scalar is a list of one when ONE_OK) */
int mf_get_list(struct yctx *y, const yaml_node_t *n, const char *key,
                int one_ok, char ***out)
{
	char **v;
	size_t k = 0;

	mf_free_strv(*out);
	*out = NULL;
	if (one_ok && mf_scalar(n)) {
		v = emb_xcalloc(2, sizeof(*v));
		v[0] = emb_xstrdup(mf_scalar(n));
		*out = v;
		return 0;
	}
	if (!n || n->type != YAML_SEQUENCE_NODE)
		return mf_yerr(y, n, key, "expected a list");
	v = emb_xcalloc((size_t)(n->data.sequence.items.top -
	                     n->data.sequence.items.start) + 1, sizeof(*v));
	*out = v;
	for (yaml_node_item_t *i = n->data.sequence.items.start;
	     i < n->data.sequence.items.top; i++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *i);
		const char *s = mf_scalar(e);

		if (!s)
			return mf_yerr(y, e, key, "list items must be strings");
		if (strlen(s) != e->data.scalar.length)
			return mf_yerr(y, e, key, "string contains a NUL byte");
		v[k++] = emb_xstrdup(s);
	}
	return 0;
}

/* a scalar split on blanks into a list (no quoting: no shell here) */
int mf_get_list_words(struct yctx *y, const yaml_node_t *n,
                      const char *key, char ***out)
{
	const char *s = mf_scalar(n);
	char *copy, *save = NULL, *w;
	char **v;
	size_t k = 0;

	mf_free_strv(*out);
	*out = NULL;
	for (const char *p = s; *p; p++)
		if (mf_bad_word_char((unsigned char)*p))
			return mf_yerr(y, n, key, "'%c' is not allowed in a string "
			               "of words (use a list)", *p);
	copy = emb_xstrdup(s);
	v = emb_xcalloc(strlen(s) / 2 + 2, sizeof(*v));
	for (w = strtok_r(copy, " \t\r\n", &save); w;
	     w = strtok_r(NULL, " \t\r\n", &save))
		v[k++] = emb_xstrdup(w);
	free(copy);
	*out = v;
	return 0;
}

static void add_tol(struct mcase *c, const char *field, double atol,
                    double min_cos)
{
	for (size_t i = 0; i < c->ntols; i++)
		if (!strcmp(c->tols[i].field, field)) {
			if (atol >= 0)
				c->tols[i].atol = atol;
			if (!isnan(min_cos))
				c->tols[i].min_cos = min_cos;
			return;
		}
	c->tols = realloc(c->tols, (c->ntols + 1) * sizeof(*c->tols));
	if (!c->tols)
		abort();
	c->tols[c->ntols].field = emb_xstrdup(field);
	c->tols[c->ntols].atol = atol;
	c->tols[c->ntols].min_cos = min_cos;
	c->ntols++;
}

/* tolerance: {field: atol}; min_cos: C or {field: C} */
int mf_get_tols(struct yctx *y, struct mcase *c, const yaml_node_t *n,
                const char *key, int is_cos)
{
	double d;

	if (mf_scalar(n))  /* one value for every field */
		return mf_get_num(y, n, key, is_cos ? &c->min_cos : &c->atol);
	if (!n || n->type != YAML_MAPPING_NODE)
		return mf_yerr(y, n, key, "expected a number or a mapping "
		               "field: number");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *val = yaml_document_get_node(y->doc, p->value);
		const char *f = mf_scalar(k);

		if (!f || !emb_validate_field_name(f))
			return mf_yerr(y, k, key, "unknown field '%.60s' (known: "
			               "%s)", f ? f : "?", emb_validate_field_list());
		if (mf_get_num(y, val, key, &d) < 0)
			return -1;
		if (is_cos)
			add_tol(c, f, -1, d);
		else
			add_tol(c, f, d, NAN);
	}
	return 0;
}

