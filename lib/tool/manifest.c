/*
 * manifest.c - run a parity suite described in YAML (emb-validate --manifest)
 *
 *   cases:
 *     - name: minilm-pipeline
 *       model: tmp/fixtures/minilm-l6           # relative to this file
 *       synth: data/fixtures/minilm-l6/recipe.json
 *       input: data/corpus/texts.jsonl
 *       golden: data/fixtures/minilm-l6/golden.jsonl
 *       command: emb-tokenize | emb-encode -j 2 | emb-pool
 *       args: []
 *       tolerance: {embedding: 1e-5, token_embeddings: 1e-4}
 *
 * Other case keys: synth_root (what the recipe's "base" is relative to;
 * default: the nearest directory above the recipe that holds it),
 * input_fields (keep only these members of each input record), limit
 * (first N records of input and golden), golden_case (the output of an
 * earlier case as the golden), atol / min_cos (a number, or min_cos per
 * field), fields (compare only these), expect_exit (default 0), timeout
 * (seconds, default 600), description (ignored).
 *
 * The whole manifest is checked before anything runs (a malformed one is
 * exit 3 with FILE:LINE and the key).  Commands are never given to a
 * shell: "a | b c" is split on '|' and blanks, each stage is an emb-*
 * program found next to emb-validate (bindir) or on PATH, run as
 * "PROG -m MODEL WORDS... ARGS..." (the first stage also gets the input
 * file as its operand); the output of the last stage goes into a file
 * that is then validated against the golden.
 *
 * This file runs the cases and validates their outputs; mcase.h names
 * the files that do the rest.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

/* print the last N lines of FILE, indented */
static void tail_file(FILE *out, const char *pfx, const char *path, int n)
{
	size_t len = 0, i;
	char *buf = mf_slurp(path, &len, NULL);
	int lines = 0;

	if (!buf)
		return;
	while (len && buf[len - 1] == '\n')
		buf[--len] = 0;
	for (i = len; i > 0; i--)
		if (buf[i - 1] == '\n' && ++lines == n)
			break;
	if (len) {
		char *s = buf + i, *e;

		for (; s; s = e ? e + 1 : NULL) {
			e = strchr(s, '\n');
			fprintf(out, "%s  | %.*s\n", pfx,
			        (int)(e ? e - s : (long)strlen(s)), s);
		}
	}
	free(buf);
}

/* ------------------------------------------------------------------ */
/* the runner                                                          */

static int run_case(struct manifest *m, size_t ci, const char *dir,
                    const emb_manifest_opts *o, FILE *out)
{
	struct mcase *c = &m->c[ci];
	char why[EMB_ERR_MAX + 64] = "", *pfx = emb_xasprintf("%s: ", c->name);
	char *inpath = NULL, *gpath = NULL;
	emb_err err = { "" };
	emb_validate_opts vo;
	const char *golden;
	double t0 = mf_now();
	int rc = 1, st, vr;

	c->out = emb_xasprintf("%s/%s.jsonl", dir, c->name);
	c->errf = emb_xasprintf("%s/%s.err", dir, c->name);
	if (c->synth) {
		/* built inside the run directory, never where the manifest
		 * points: nothing outside it is written or removed */
		free(c->model);
		c->model = emb_xasprintf("%s/models/%s", dir, c->model_name);
	}
	if (c->synth && mf_ensure_synth(c, &err) < 0) {
		snprintf(why, sizeof(why), "synth: %s", err.msg);
		goto done;
	}
	if (c->input_fields || c->limit) {
		inpath = emb_xasprintf("%s/%s.in.jsonl", dir, c->name);
		if (mf_project(c->input, inpath, c->input_fields, c->limit,
		               &err) < 0) {
			snprintf(why, sizeof(why), "input: %s", err.msg);
			goto done;
		}
	}
	if (c->limit && c->golden) {
		gpath = emb_xasprintf("%s/%s.golden.jsonl", dir, c->name);
		if (mf_project(c->golden, gpath, NULL, c->limit, &err) < 0) {
			snprintf(why, sizeof(why), "golden: %s", err.msg);
			goto done;
		}
	}
	st = mf_run_pipeline(c, o->bindir, inpath ? inpath : c->input, c->out,
	                     c->errf, why, sizeof(why));
	if (st < 0)
		goto done;
	if (st != c->expect_exit) {
		size_t wl;

		if (!why[0])
			snprintf(why, sizeof(why), "exit %d", st);
		wl = strlen(why);
		snprintf(why + wl, sizeof(why) - wl, ", expected %d",
		         c->expect_exit);
		goto done;
	}
	why[0] = 0;
	if (c->golden_case >= 0) {
		golden = m->c[c->golden_case].out;
		if (!m->c[c->golden_case].ok) {
			snprintf(why, sizeof(why), "case '%s' failed",
			         m->c[c->golden_case].name);
			goto done;
		}
	} else {
		golden = gpath ? gpath : c->golden;
	}
	emb_validate_opts_init(&vo);
	if (!isnan(c->atol))
		vo.atol = c->atol;
	vo.min_cos = c->min_cos;
	vo.input_only = c->input_only;
	vo.fields = (const char *const *)c->fields;
	vo.tols = c->tols;
	vo.n_tols = c->ntols;
	vo.quiet = o->quiet;
	vo.prefix = pfx;
	vo.diag = out;
	vr = emb_validate_files(golden, c->out, 0, &vo, out, &err);
	if (vr < 0)
		snprintf(why, sizeof(why), "%s", err.msg);
	else if (vr > 0)
		snprintf(why, sizeof(why), "output differs from %s",
		         c->golden_case >= 0 ? "that case" : "the golden");
	else
		rc = 0;
done:
	if (rc)
		fprintf(out, "%sFAIL (%s, %.1f s)\n", pfx, why, mf_now() - t0);
	else if (!o->quiet)
		fprintf(out, "%sok (%.1f s)\n", pfx, mf_now() - t0);
	if (rc && c->errf)
		tail_file(out, pfx, c->errf, 5);
	c->ok = !rc;
	fflush(out);
	if (inpath && !o->keep_dir)
		unlink(inpath);
	if (gpath && !o->keep_dir)
		unlink(gpath);
	free(inpath);
	free(gpath);
	free(pfx);
	return rc;
}

int emb_manifest_check(const char *path, emb_err *err)
{
	struct manifest m;
	int rc = mf_parse(&m, path, 0, err);

	mf_release(&m);
	return rc;
}

int emb_manifest_run(const char *path, const emb_manifest_opts *o,
                     emb_err *err)
{
	struct manifest m;
	emb_manifest_opts def = { 0 };
	FILE *out;
	char *dir = NULL;
	size_t failed = 0, ran = 0;

	if (!o)
		o = &def;
	out = o->out ? o->out : stdout;
	if (mf_parse(&m, path, o->trusted, err) < 0) {
		mf_release(&m);
		return -1;
	}
	/* selection (+ the cases whose output others compare with) */
	for (size_t i = 0; i < m.n; i++) {
		m.c[i].run = !o->cases;
		for (size_t k = 0; o->cases && o->cases[k]; k++)
			if (!strcmp(o->cases[k], m.c[i].name))
				m.c[i].run = 1;
	}
	for (size_t k = 0; o->cases && o->cases[k]; k++) {
		size_t i;

		for (i = 0; i < m.n && strcmp(o->cases[k], m.c[i].name); i++)
			;
		if (i == m.n) {
			emb_err_set(err, "%s: no case named '%s'", path,
			            o->cases[k]);
			mf_release(&m);
			return -1;
		}
	}
	for (size_t i = m.n; i-- > 0;)
		if (m.c[i].run && m.c[i].golden_case >= 0)
			m.c[m.c[i].golden_case].run = 1;
	if (o->keep_dir) {
		if (mf_mkdir_p(o->keep_dir) < 0) {
			emb_err_set(err, "%s: %s", o->keep_dir, strerror(errno));
			mf_release(&m);
			return -1;
		}
		dir = emb_xstrdup(o->keep_dir);
	} else {
		const char *t = getenv("TMPDIR");

		dir = emb_xasprintf("%s/emb-validate.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir)) {
			emb_err_set(err, "%s: %s", dir, strerror(errno));
			free(dir);
			mf_release(&m);
			return -1;
		}
	}
	size_t nrun = 0;
	for (size_t i = 0; i < m.n; i++)
		nrun += m.c[i].run ? 1 : 0;
	for (size_t i = 0; i < m.n; i++) {
		if (!m.c[i].run)
			continue;
		ran++;
		if (o->progress)
			o->progress(o->progress_ctx, ran, nrun, m.c[i].name);
		if (run_case(&m, i, dir, o, out)) {
			failed++;
			if (o->strict) {
				fprintf(out, "%s: stopped after the first failing "
				        "case (--strict)\n", path);
				break;
			}
		}
	}
	if (o->progress)
		o->progress(o->progress_ctx, 0, ran, NULL);
	fprintf(out, "%s: %zu cases, %zu failed\n", path, ran, failed);
	fflush(out);
	if (!o->keep_dir) {
		char *models = emb_xasprintf("%s/models", dir);

		for (size_t i = 0; i < m.n; i++) {
			if (m.c[i].out)
				unlink(m.c[i].out);
			if (m.c[i].errf)
				unlink(m.c[i].errf);
		}
		/* the synthetic checkpoints: made here, by this run */
		emb_rm_tree(models);
		free(models);
		rmdir(dir);
	}
	free(dir);
	mf_release(&m);
	return failed ? 1 : 0;
}
