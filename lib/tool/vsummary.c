/*
 * vsummary.c - emb_validate_finish: one line per field compared, the
 * records line, and the verdict.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

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
			vd_out(v, out, "%s: FAIL (%s)", body, why);
		else
			vd_out(v, out, "%s: %s", body, st->ok ? "ok" : "FAIL");
	}
	if (fs->ndiag > v->o.max_diag && v->o.diag)
		vd_out(v, v->o.diag, "%s: %zu more messages not shown",
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
		vd_out(v, out, "records: %zu %s records not in the %s, not "
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
		vd_out(v, v->o.diag, "records: %zu more messages not shown",
		       v->nrdiag - v->o.max_diag);
	if (v->stopped) {
		vd_out(v, out, "records: %zu golden, %zu input read: FAIL "
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
		vd_out(v, out, "records: %zu error records skipped "
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
		vd_out(v, out, "%s", body);
		fail = 1;
	}
	return fail;
}
