/*
 * emb-validate - compare records with a golden file, or run a parity
 * manifest.  See emb-validate(1).
 *
 *   emb-validate [options] GOLDEN [INPUT]
 *   emb-validate [options] --manifest FILE.yaml
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"

static const char usage_head[] =
"usage: emb-validate [options] GOLDEN [INPUT]\n"
"       emb-validate [options] --manifest FILE.yaml\n"
"Compare the records of INPUT (default stdin) with GOLDEN, joined on\n"
"\"id\" (else in line order); print one summary line per field.\n"
"  --atol X          max abs difference of float fields (default 1e-5)\n"
"  --min-cos C       min cosine per vector/row (default: off)\n"
"  --tol FIELD=X     atol for one field (repeatable)\n"
"  --field NAME      compare only this field (repeatable)\n"
"  --golden-only     compare only the records GOLDEN holds: input records\n"
"                    without a golden partner are counted, not a failure\n"
"  --input-only      compare only the records INPUT holds: golden records\n"
"                    without an input partner are counted, not a failure\n"
"  --quiet           print only what fails\n"
"  --manifest FILE   run the parity cases of a YAML manifest\n"
"  --case NAME       with --manifest: run only this case (repeatable)\n"
"  --keep DIR        with --manifest: keep outputs in DIR\n"
"  --trusted         with --manifest: let its commands take options that\n"
"                    write files where they say (emb-quantize's output\n"
"                    directory and saved ranges, emb-validate's kept\n"
"                    outputs; see emb-validate(1)); without it they are\n"
"                    refused and only the run directory is written\n"
"  --errors=skip|emit  input records with an \"error\" member (a stage's\n"
"                    --errors=emit): skip: leave them out, counted; emit\n"
"                    (default): each one is a failure\n"
"  --strict          stop at the first failure (with --manifest: the\n"
"                    first failing case)\n"
"  --max-line BYTES  longest line read (default 64 MiB)\n"
"  --progress[=always], --no-progress\n"
"                    records read (cases run) on stderr, as the other\n"
"                    tools show progress (see emb(7))\n"
"  -h, --help        this help\n"
"  --version         print the version\n";

static const char usage_tail[] =
"exit: 0 all within tolerance, 1 some failure, 2 usage,\n"
"      3 unusable golden or manifest (missing, malformed), 4 write error,\n"
"      5 GOLDEN or INPUT could not be read\n";

enum { O_ATOL = 1, O_MINCOS, O_TOL, O_FIELD, O_QUIET, O_MANIFEST, O_CASE,
       O_KEEP, O_TRUSTED, O_GOLDEN_ONLY, O_INPUT_ONLY };

static const emb_cli_opt opts[] = {
	{ "atol", 0, EMB_ARG_REQUIRED, O_ATOL },
	{ "min-cos", 0, EMB_ARG_REQUIRED, O_MINCOS },
	{ "tol", 0, EMB_ARG_REQUIRED, O_TOL },
	{ "field", 0, EMB_ARG_REQUIRED, O_FIELD },
	{ "quiet", 0, EMB_ARG_NONE, O_QUIET },
	{ "manifest", 0, EMB_ARG_REQUIRED, O_MANIFEST },
	{ "case", 0, EMB_ARG_REQUIRED, O_CASE },
	{ "keep", 0, EMB_ARG_REQUIRED, O_KEEP },
	{ "trusted", 0, EMB_ARG_NONE, O_TRUSTED },
	{ "golden-only", 0, EMB_ARG_NONE, O_GOLDEN_ONLY },
	{ "input-only", 0, EMB_ARG_NONE, O_INPUT_ONLY },
	{ NULL, 0, 0, 0 },
};

typedef struct ctx {
	emb_cli cli;
	emb_validate_opts vo;
	emb_manifest_opts mo;
	const char **fields, **cases;
	emb_vtol *tols;
	size_t nfields, ncases, ntols;
	const char *manifest;
	int cmp_opts;           /* --atol, --min-cos, --tol, --field */
} ctx;

static int parse_double(double *out, const char *s)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !*s || *end || errno || !isfinite(*out) || *out < 0 ? -1 : 0;
}

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	double d;
	const char *eq;

	switch (key) {
	case O_ATOL:
		c->cmp_opts = 1;
		if (parse_double(&c->vo.atol, arg) < 0)
			return emb_err_set(err, "--atol: '%s' is not a number >= 0",
			                   arg);
		return 0;
	case O_MINCOS:
		c->cmp_opts = 1;
		if (parse_double(&d, arg) < 0 || d > 1)
			return emb_err_set(err, "--min-cos: '%s' is not a number in "
			                   "[0, 1]", arg);
		c->vo.min_cos = d;
		return 0;
	case O_TOL: {
		char name[64];
		c->cmp_opts = 1;
		eq = strchr(arg, '=');
		if (!eq || parse_double(&d, eq + 1) < 0)
			return emb_err_set(err, "--tol: expected FIELD=ATOL, got '%s'",
			                   arg);
		snprintf(name, sizeof(name), "%.*s",
		         (int)(eq - arg < 63 ? eq - arg : 63), arg);
		if (!emb_validate_field_name(name))
			return emb_err_set(err, "--tol: unknown field '%s'", name);
		/* the canonical name is static: arg stays borrowed otherwise */
		c->tols[c->ntols].field = emb_validate_field_name(name);
		c->tols[c->ntols].atol = d;
		c->tols[c->ntols].min_cos = NAN;
		c->ntols++;
		return 0;
	}
	case O_FIELD:
		c->cmp_opts = 1;
		if (!emb_validate_field_name(arg))
			return emb_err_set(err, "--field: unknown field '%s'", arg);
		c->fields[c->nfields++] = arg;
		return 0;
	case O_QUIET: c->vo.quiet = 1; return 0;
	case O_MANIFEST: c->manifest = arg; return 0;
	case O_CASE: c->cases[c->ncases++] = arg; return 0;
	case O_KEEP: c->mo.keep_dir = arg; return 0;
	case O_TRUSTED: c->mo.trusted = 1; return 0;
	case O_GOLDEN_ONLY: c->vo.golden_only = 1; return 0;
	case O_INPUT_ONLY: c->vo.input_only = 1; return 0;
	}
	return -1;
}

static void records_read(void *vc, size_t golden, size_t input, int final)
{
	ctx *c = vc;

	emb_cli_status(&c->cli, final, "%zu golden, %zu input records read",
	               golden, input);
}

static void case_started(void *vc, size_t k, size_t n, const char *name)
{
	ctx *c = vc;

	if (!name)
		emb_cli_status(&c->cli, 1, "%zu cases run", n);
	else
		emb_cli_status(&c->cli, 1, "case %zu of %zu: %s", k, n, name);
}

/* the directory of this executable (emb-* siblings live there); new */
static char *self_dir(const char *arg0)
{
	char buf[PATH_MAX + 1];
	ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
	char *s;

	if (n > 0) {
		buf[n] = 0;
	} else if (arg0 && strchr(arg0, '/') && strlen(arg0) <= PATH_MAX) {
		strcpy(buf, arg0);
	} else {
		return NULL;
	}
	s = strrchr(buf, '/');
	if (!s)
		return NULL;
	*s = 0;
	return strdup(buf[0] ? buf : "/");
}

static int finish_output(const ctx *c)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: error: write error: %s\n", c->cli.prog,
		        strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static ctx c;
	static char usage[4096];
	emb_err err = { "" };
	char *bindir;
	int rc;

	snprintf(usage, sizeof(usage), "%sfields: %s\n%s", usage_head,
	         emb_validate_field_list(), usage_tail);
	c.cli.prog = "emb-validate";
	c.cli.usage = usage;
	c.cli.common = 0;
	emb_validate_opts_init(&c.vo);
	/* static: still reachable on the early (usage) exits */
	c.fields = calloc((size_t)argc + 1, sizeof(*c.fields));
	c.cases = calloc((size_t)argc + 1, sizeof(*c.cases));
	c.tols = calloc((size_t)argc + 1, sizeof(*c.tols));
	if (!c.fields || !c.cases || !c.tols)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "out of memory");
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	c.vo.skip_errors = c.cli.errors_set && !c.cli.errors_emit;
	if (c.manifest) {
		if (c.cli.nfiles)
			emb_cli_usage_error(&c.cli, "unexpected operand '%s' with --manifest",
			                    c.cli.files[0]);
		if (c.cmp_opts || c.vo.golden_only || c.vo.input_only ||
		    c.vo.skip_errors)
			emb_cli_usage_error(&c.cli, "--atol, --min-cos, --tol, --field, "
			                    "--golden-only, --input-only and --errors do "
			                    "not apply to --manifest (set them per case)");
		bindir = self_dir(argv[0]);
		c.mo.bindir = bindir;
		c.mo.cases = c.ncases ? c.cases : NULL;
		c.mo.quiet = c.vo.quiet;
		c.mo.out = stdout;
		c.mo.strict = c.cli.strict;
		if (c.cli.progress) {
			c.mo.progress = case_started;
			c.mo.progress_ctx = &c;
		}
		rc = emb_manifest_run(c.manifest, &c.mo, &err);
		free(bindir);
		if (rc < 0) {
			fflush(stdout);
			fprintf(stderr, "%s: error: %s\n", c.cli.prog, err.msg);
			rc = EMB_EXIT_MODEL;
		}
	} else {
		const char *g, *in;

		if (c.ncases || c.mo.keep_dir || c.mo.trusted)
			emb_cli_usage_error(&c.cli, "--case, --keep and --trusted need "
			                    "--manifest");
		if (c.cli.nfiles < 1)
			emb_cli_usage_error(&c.cli, "missing GOLDEN");
		if (c.cli.nfiles > 2)
			emb_cli_usage_error(&c.cli, "unexpected operand '%s'",
			                    c.cli.files[2]);
		g = c.cli.files[0];
		in = c.cli.nfiles > 1 ? c.cli.files[1] : NULL;
		if (!strcmp(g, "-") && (!in || !strcmp(in, "-")))
			emb_cli_usage_error(&c.cli, "GOLDEN and INPUT cannot both be stdin");
		emb_cli_need_file(&c.cli, g, 1);
		emb_cli_need_file(&c.cli, in, 1);
		if (c.nfields)
			c.vo.fields = c.fields;
		c.vo.tols = c.tols;
		c.vo.n_tols = c.ntols;
		/* per-record messages are diagnostics: stderr; the
		 * summary lines are the output */
		c.vo.diag = stderr;
		c.vo.strict = c.cli.strict;
		if (c.cli.progress) {
			c.vo.progress = records_read;
			c.vo.progress_ctx = &c;
		}
		rc = emb_validate_files(g, in, c.cli.max_line, &c.vo, stdout,
		                        &err);
		if (rc < 0) {
			fflush(stdout);
			fprintf(stderr, "%s: error: %s\n", c.cli.prog, err.msg);
			rc = EMB_EXIT_MODEL;
		}
	}
	free(c.fields);
	free(c.cases);
	free(c.tols);
	free(c.cli.files);
	if (finish_output(&c) < 0)
		return EMB_EXIT_WRITE;
	return rc;
}
