/*
 * mcase.h - a manifest's cases, and the insides of the YAML manifest
 * runner (emb-tool.h: emb_manifest_run) shared by the files that make
 * it up; private to them (private to lib/tool/):
 *
 *   myaml.c     the YAML getters: one value of a case, checked
 *   mpolicy.c   the command policy: the programs and options a manifest
 *               may give without --trusted
 *   mparse.c    the manifest read and checked into cases
 *   mfixture.c  synthetic models made from their recipes
 *   mproject.c  an input cut to its first records and chosen members
 *   mexec.c     a case's pipeline run: fork, exec, pipes, the timeout
 *   manifest.c  the cases run and validated
 */
#ifndef EMB_MCASE_H
#define EMB_MCASE_H

#include <stdlib.h>
#include <time.h>

#include <yaml.h>

#include "tool/emb-tool.h"

#define MAX_STAGES 8
/* caps checked before and while parsing, so that no manifest costs more
 * than linear time: its size, its nesting (a manifest needs 4 levels:
 * cases, a case, its tolerance or args), its number of cases */
#define MANIFEST_MAX ((size_t)4 << 20)
#define MANIFEST_DEPTH 16
#define MANIFEST_CASES 10000

struct mcase {
	char *name;
	int line;
	char *model;            /* resolved paths (or NULL) */
	char *model_name;       /* with synth: as written, the checkpoint's
	                           name under the run directory */
	int model_line;         /* line of the model key */
	char *synth, *synth_root;
	char *input, *golden;
	int golden_case;        /* index of an earlier case, or -1 */
	char **stages[MAX_STAGES]; /* words of each stage, NULL-terminated */
	int nstages;
	char **args;            /* NULL-terminated */
	char **input_fields;    /* NULL-terminated, or NULL */
	size_t limit;           /* first N records of input and golden */
	char **fields;          /* NULL-terminated, or NULL */
	emb_vtol *tols;
	size_t ntols;
	double atol, min_cos;   /* NAN: default */
	int expect_exit;
	int input_only;         /* the input holds some of the golden's
	                           records (emb-validate --input-only) */
	double timeout;         /* seconds, 0: none */
	/* run state */
	int run;                /* selected */
	int ok;                 /* ran and passed */
	char *out;              /* output file when the command ran */
	char *errf;
};

struct manifest {
	const char *path;
	int trusted;            /* --trusted: any option of the commands */
	char *dir;
	struct mcase *c;
	size_t n;
};

/* a NULL-terminated string vector: freed, counted */
static inline void mf_free_strv(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static inline size_t mf_strv_len(char **v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* seconds on the monotonic clock */
static inline double mf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* myaml.c: the value N of KEY in the case being read (y->cname); each
 * returns 0, or -1 with a FILE:LINE message in y->err (mf_yerr)      */

struct yctx {
	struct manifest *m;
	yaml_document_t *doc;
	emb_err *err;
	const char *cname;      /* current case name, for messages */
};

int mf_line_of(const yaml_node_t *n);
int mf_yerr(struct yctx *y, const yaml_node_t *n, const char *key,
            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* N's text when it is a scalar, else NULL */
const char *mf_scalar(const yaml_node_t *n);
int mf_get_str(struct yctx *y, const yaml_node_t *n, const char *key,
               char **out);
int mf_get_num(struct yctx *y, const yaml_node_t *n, const char *key,
               double *out);
int mf_get_count(struct yctx *y, const yaml_node_t *n, const char *key,
                 size_t *out);
int mf_get_int(struct yctx *y, const yaml_node_t *n, const char *key,
               int *out);
/* true or false */
int mf_get_flag(struct yctx *y, const yaml_node_t *n, const char *key,
                int *out);
/* a sequence of scalars (a single scalar is a list of one when ONE_OK) */
int mf_get_list(struct yctx *y, const yaml_node_t *n, const char *key,
                int one_ok, char ***out);
/* a scalar split on blanks into a list (no quoting: no shell here) */
int mf_get_list_words(struct yctx *y, const yaml_node_t *n,
                      const char *key, char ***out);
/* tolerance: {field: atol}; min_cos: C or {field: C} */
int mf_get_tols(struct yctx *y, struct mcase *c, const yaml_node_t *n,
                const char *key, int is_cos);

/* mpolicy.c: CH may not stand in a word of a command or of args (no
 * shell reads them, so no quoting either) */
int mf_bad_word_char(int ch);

/* mparse.c: M (released with mf_release, whether or not it parsed) from
 * the manifest PATH, every case checked; TRUSTED: --trusted */
int mf_parse(struct manifest *m, const char *path, int trusted,
             emb_err *err);
void mf_release(struct manifest *m);

/* mfixture.c: a whole file the run made or a recipe (regular, at most
 * 256 MiB: new), or NULL; mkdir -p DIR; C's synthetic model made in
 * c->model from c->synth unless it is there already from that recipe */
char *mf_slurp(const char *path, size_t *len, emb_err *err);
int mf_mkdir_p(const char *dir);
int mf_ensure_synth(const struct mcase *c, emb_err *err);

/* mproject.c: copy the first LIMIT (0: all) non-blank lines of IN to
 * OUT, keeping only the members KEEP (NULL: the line as it is) */
int mf_project(const char *in, const char *out, char **keep,
               size_t limit, emb_err *err);

/*
 * mexec.c: run the stages of C: the first reads IN (its operand; stdin is IN
 * too), the last writes into OUT, all stderr goes to ERRF.
 * WHY gets a message when the pipeline did not exit as expected.
 * Returns the pipeline status (rightmost non-zero exit, as pipefail;
 * 128+N for a signal), or -1 when it could not be started / timed out.
 */
int mf_run_pipeline(const struct mcase *c, const char *bindir,
                    const char *in, const char *out, const char *errf,
                    char *why, size_t whylen);

#endif /* EMB_MCASE_H */
