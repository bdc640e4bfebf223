/*
 * emb-validate - compare records with a golden file, or run a parity
 * manifest.  See emb-validate(1).
 *
 *   emb-validate [options] GOLDEN [INPUT]
 *   emb-validate [options] --manifest FILE.yaml
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"

static const char *argv0 = "emb-validate";

static void usage(FILE *fp)
{
	fprintf(fp,
	"usage: %s [options] GOLDEN [INPUT]\n"
	"       %s [options] --manifest FILE.yaml\n"
	"Compare the records of INPUT (default stdin) with GOLDEN, joined on\n"
	"\"id\" (else in line order); print one summary line per field.\n"
	"  --atol X          max abs difference of float fields (default 1e-5)\n"
	"  --min-cos C       min cosine per vector/row (default: off)\n"
	"  --tol FIELD=X     atol for one field (repeatable)\n"
	"  --field NAME      compare only this field (repeatable)\n"
	"  --quiet           print only what fails\n"
	"  --max-line BYTES  longest line read (default 64 MiB)\n"
	"  --manifest FILE   run the parity cases of a YAML manifest\n"
	"  --case NAME       with --manifest: run only this case (repeatable)\n"
	"  --keep DIR        with --manifest: keep outputs in DIR\n"
	"  --trusted         with --manifest: let its commands take options that\n"
	"                    write files where they say (emb-quantize -o, --force,\n"
	"                    --save-ranges, emb-validate --keep...); without it\n"
	"                    they are refused and only the run directory is written\n"
	"  -h, --help        this help\n"
	"      --version     print the version\n"
	"fields: %s\n"
	"exit: 0 all within tolerance, 1 some failure, 2 usage,\n"
	"      3 unreadable file or malformed manifest, 4 write error\n",
	argv0, argv0, emb_validate_field_list());
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", argv0);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	usage(stderr);
	return EMB_EXIT_USAGE;
}

static int parse_double(double *out, const char *s)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !*s || *end || errno || !isfinite(*out) || *out < 0 ? -1 : 0;
}

/* the directory of this executable (emb-* siblings live there); new */
static char *self_dir(const char *arg0)
{
	char buf[PATH_MAX + 1];
	ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
	char *s;

	if (n > 0) {
		buf[n] = 0;
	} else if (strchr(arg0, '/') && strlen(arg0) <= PATH_MAX) {
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

static int finish_output(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: error: write error: %s\n", argv0,
		        strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_ATOL = 256, O_MINCOS, O_TOL, O_FIELD, O_QUIET, O_MAXLINE,
	       O_MANIFEST, O_CASE, O_KEEP, O_TRUSTED, O_VERSION };
	static const struct option lopts[] = {
		{ "atol", required_argument, NULL, O_ATOL },
		{ "min-cos", required_argument, NULL, O_MINCOS },
		{ "tol", required_argument, NULL, O_TOL },
		{ "field", required_argument, NULL, O_FIELD },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "max-line", required_argument, NULL, O_MAXLINE },
		{ "manifest", required_argument, NULL, O_MANIFEST },
		{ "case", required_argument, NULL, O_CASE },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "trusted", no_argument, NULL, O_TRUSTED },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	emb_validate_opts vo;
	emb_manifest_opts mo = { 0 };
	emb_err err = { "" };
	/* static: still reachable on the early (usage) returns */
	static const char **fields, **cases;
	static emb_vtol *tols;
	size_t nfields = 0, ncases = 0, ntols = 0, max_line = 0;
	const char *manifest = NULL;
	char *bindir;
	int c, rc, cmp_opts = 0;

	if (argv[0] && *argv[0]) {
		const char *s = strrchr(argv[0], '/');

		argv0 = s ? s + 1 : argv[0];
	}
	emb_validate_opts_init(&vo);
	fields = calloc((size_t)argc + 1, sizeof(*fields));
	cases = calloc((size_t)argc + 1, sizeof(*cases));
	tols = calloc((size_t)argc + 1, sizeof(*tols));
	if (!fields || !cases || !tols) {
		fprintf(stderr, "%s: error: out of memory\n", argv0);
		return EMB_EXIT_MODEL;
	}
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		double d;
		char *eq, *end;

		if (c == O_ATOL || c == O_MINCOS || c == O_TOL || c == O_FIELD)
			cmp_opts = 1;
		switch (c) {
		case O_ATOL:
			if (parse_double(&vo.atol, optarg) < 0)
				return bad_usage("--atol: '%s' is not a number "
				                 ">= 0", optarg);
			break;
		case O_MINCOS:
			if (parse_double(&d, optarg) < 0 || d > 1)
				return bad_usage("--min-cos: '%s' is not a number "
				                 "in [0, 1]", optarg);
			vo.min_cos = d;
			break;
		case O_TOL:
			eq = strchr(optarg, '=');
			if (!eq || parse_double(&d, eq + 1) < 0)
				return bad_usage("--tol: expected FIELD=ATOL, got "
				                 "'%s'", optarg);
			*eq = 0;
			if (!emb_validate_field_name(optarg))
				return bad_usage("--tol: unknown field '%s'",
				                 optarg);
			tols[ntols].field = optarg;
			tols[ntols].atol = d;
			tols[ntols].min_cos = NAN;
			ntols++;
			break;
		case O_FIELD:
			if (!emb_validate_field_name(optarg))
				return bad_usage("--field: unknown field '%s'",
				                 optarg);
			fields[nfields++] = optarg;
			break;
		case O_QUIET:
			vo.quiet = 1;
			break;
		case O_MAXLINE:
			errno = 0;
			max_line = (size_t)strtoull(optarg, &end, 10);
			if (!*optarg || *end || errno || !max_line ||
			    *optarg == '-')
				return bad_usage("--max-line: '%s' is not a "
				                 "positive integer", optarg);
			break;
		case O_MANIFEST:
			manifest = optarg;
			break;
		case O_CASE:
			cases[ncases++] = optarg;
			break;
		case O_KEEP:
			mo.keep_dir = optarg;
			break;
		case O_TRUSTED:
			mo.trusted = 1;
			break;
		case 'h':
			usage(stdout);
			return finish_output() < 0 ? EMB_EXIT_WRITE : 0;
		case O_VERSION:
			printf("%s %s\n", argv0, EMB_VERSION);
			return finish_output() < 0 ? EMB_EXIT_WRITE : 0;
		default:
			usage(stderr);
			return EMB_EXIT_USAGE;
		}
	}
	if (manifest) {
		if (optind != argc)
			return bad_usage("unexpected operand '%s' with --manifest",
			                 argv[optind]);
		if (cmp_opts)
			return bad_usage("%s", "--atol, --min-cos, --tol and "
			                 "--field do not apply to --manifest "
			                 "(set them per case)");
		bindir = self_dir(argv[0]);
		mo.bindir = bindir;
		mo.cases = ncases ? cases : NULL;
		mo.quiet = vo.quiet;
		mo.out = stdout;
		rc = emb_manifest_run(manifest, &mo, &err);
		free(bindir);
		if (rc < 0) {
			fflush(stdout);
			fprintf(stderr, "%s: error: %s\n", argv0, err.msg);
			rc = EMB_EXIT_MODEL;
		}
	} else {
		if (ncases || mo.keep_dir || mo.trusted)
			return bad_usage("%s", "--case, --keep and --trusted need "
			                 "--manifest");
		if (optind >= argc)
			return bad_usage("%s", "missing GOLDEN");
		if (argc - optind > 2)
			return bad_usage("unexpected operand '%s'",
			                 argv[optind + 2]);
		{
			const char *g = argv[optind];
			const char *in = optind + 1 < argc ? argv[optind + 1]
			                                   : NULL;
			int gstdin = !strcmp(g, "-");
			int istdin = !in || !strcmp(in, "-");

			if (gstdin && istdin)
				return bad_usage("%s", "GOLDEN and INPUT cannot "
				                 "both be stdin");
			if (nfields)
				vo.fields = fields;
			vo.tols = tols;
			vo.n_tols = ntols;
			/* per-record messages are diagnostics: stderr; the
			 * summary lines are the output */
			vo.diag = stderr;
			rc = emb_validate_files(g, in, max_line, &vo, stdout,
			                        &err);
			if (rc < 0) {
				fflush(stdout);
				fprintf(stderr, "%s: error: %s\n", argv0, err.msg);
				rc = EMB_EXIT_MODEL;
			}
		}
	}
	free(fields);
	free(cases);
	free(tols);
	if (finish_output() < 0)
		return EMB_EXIT_WRITE;
	return rc;
}
