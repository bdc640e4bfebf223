/*
 * vcompare.c - a joined pair of records compared field by field (both
 * sides VS_OK): exact for ids and strings, a tolerance for quantized
 * vectors, atol and cosine for floats and sparse vectors; each field's
 * statistics and first offenders kept in its struct fstat.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

/* ------------------------------------------------------------------ */
/* comparisons (both sides VS_OK)                                      */

static void note_max(struct fstat *fs, double d, const char *label)
{
	if (!fs->max_abs_id || d > fs->st.max_abs ||
	    (isnan(d) && !isnan(fs->st.max_abs))) {
		fs->st.max_abs = d;
		vd_set_str(&fs->max_abs_id, label);
	}
}

static void note_cos(struct fstat *fs, double c, const char *label)
{
	if (!fs->min_cos_id || c < fs->st.min_cos) {
		fs->st.min_cos = c;
		vd_set_str(&fs->min_cos_id, label);
	}
}

static void note_fail(struct fstat *fs, const char *label)
{
	if (!fs->first_bad_id)
		vd_set_str(&fs->first_bad_id, label);
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
		vd_fdiag(fs, v, "%s: %s: length %zu, golden %zu", label,
		         fs->def->name, x->cols, g->cols);
	} else if (strs) {
		vd_fdiag(fs, v, "%s: %s: [%zu] is \"%.40s\", golden \"%.40s\" "
		         "(length %zu, golden %zu)", label, fs->def->name, i,
		         x->sv[i].p, g->sv[i].p, x->cols, g->cols);
	} else {
		vd_fdiag(fs, v, "%s: %s: [%zu] is %ld, golden %ld (length %zu, "
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
			vd_set_str(&fs->first_shape_id, label);
		vd_fdiag(fs, v, "%s: %s: length %zu, golden %zu", label,
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
		vd_fdiag(fs, v, "%s: %s: [%zu] is %ld, golden %ld (diff %g > %g)",
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
			vd_set_str(&fs->first_shape_id, label);
		vd_fdiag(fs, v, "%s: %s: shape [%zu,%zu], golden [%zu,%zu]", label,
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
			vd_fdiag(fs, v, "%s: %s: max abs diff %.3g > %g at %s "
			         "(%.9g, golden %.9g)", label, fs->def->name,
			         worst, fs->st.atol, pos, (double)x->fv[at],
			         (double)g->fv[at]);
		} else {
			vd_fdiag(fs, v, "%s: %s: cosine %.7g < %g (row %zu)", label,
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
			vd_fdiag(fs, v, "%s: %s: max abs diff %.3g > %g at index "
			         "%lld (%.9g, golden %.9g)%s", label,
			         fs->def->name, worst, fs->st.atol, (long long)at,
			         atx, atg, only ? " (index sets differ)" : "");
		else
			vd_fdiag(fs, v, "%s: %s: cosine %.7g < %g", label,
			         fs->def->name, c, fs->st.min_cos_req);
	} else if (only) {
		vd_fdiag(fs, v, "%s: %s: note: %zu indices on one side only (first "
		         "%lld), all within tolerance", label, fs->def->name, only,
		         (long long)oidx);
	}
}

void vd_compare(emb_validate *v, const struct item *g,
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
				vd_set_str(&fs->first_gonly_id, label);
			continue;
		}
		fs->st.count++;
		if (a->state == VS_BAD || b->state == VS_BAD) {
			const struct vval *bad = a->state == VS_BAD ? a : b;

			fs->st.bad++;
			note_fail(fs, label);
			vd_fdiag(fs, v, "%s: %s: %s: %s", label, fs->def->name,
			         vd_side_name[bad == a ? 0 : 1], bad->msg);
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
