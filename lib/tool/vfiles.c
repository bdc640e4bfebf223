/*
 * vfiles.c - emb_validate_files: a golden file and an input file read
 * line by line, in step, into one emb_validate.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

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
