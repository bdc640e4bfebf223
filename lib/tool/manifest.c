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
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <yaml.h>

#include "tool/emb-tool.h"
#include "tool/xalloc.h"

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

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static void free_strv(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static size_t strv_len(char **v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

static char *resolve(const char *dir, const char *p)
{
	if (p[0] == '/' || !strcmp(dir, "."))
		return emb_xstrdup(p);
	return emb_xasprintf("%s/%s", dir, p);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void case_release(struct mcase *c)
{
	free(c->name);
	free(c->model);
	free(c->model_name);
	free(c->synth);
	free(c->synth_root);
	free(c->input);
	free(c->golden);
	for (int i = 0; i < c->nstages; i++)
		free_strv(c->stages[i]);
	free_strv(c->args);
	free_strv(c->input_fields);
	free_strv(c->fields);
	for (size_t i = 0; i < c->ntols; i++)
		free((char *)c->tols[i].field);
	free(c->tols);
	free(c->out);
	free(c->errf);
}

static void manifest_release(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		case_release(&m->c[i]);
	free(m->c);
	free(m->dir);
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

struct yctx {
	struct manifest *m;
	yaml_document_t *doc;
	emb_err *err;
	const char *cname;      /* current case name, for messages */
};

static int line_of(const yaml_node_t *n)
{
	return n ? (int)n->start_mark.line + 1 : 0;
}

static int yerr(struct yctx *y, const yaml_node_t *n, const char *key,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int yerr(struct yctx *y, const yaml_node_t *n, const char *key,
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
	return emb_err_set(y->err, "%s:%d: %s%s", y->m->path, line_of(n),
	                   where, msg);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ?
	       (const char *)n->data.scalar.value : NULL;
}

static int get_str(struct yctx *y, const yaml_node_t *n, const char *key,
                   char **out)
{
	const char *s = scalar(n);

	if (!s || !*s)
		return yerr(y, n, key, "expected a non-empty string");
	if (strlen(s) != n->data.scalar.length)
		return yerr(y, n, key, "string contains a NUL byte");
	free(*out);
	*out = emb_xstrdup(s);
	return 0;
}

static int get_num(struct yctx *y, const yaml_node_t *n, const char *key,
                   double *out)
{
	const char *s = scalar(n);
	char *end;
	double d;

	if (!s || !*s)
		return yerr(y, n, key, "expected a number");
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || !isfinite(d) || d < 0)
		return yerr(y, n, key, "expected a number >= 0, got '%.60s'", s);
	*out = d;
	return 0;
}

static int get_count(struct yctx *y, const yaml_node_t *n, const char *key,
                     size_t *out)
{
	const char *s = scalar(n);
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return yerr(y, n, key, "expected a positive integer");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !v || v > SIZE_MAX)
		return yerr(y, n, key, "expected a positive integer, got "
		            "'%.60s'", s);
	*out = (size_t)v;
	return 0;
}

static int get_int(struct yctx *y, const yaml_node_t *n, const char *key,
                   int *out)
{
	const char *s = scalar(n);
	char *end;
	long v;

	if (!s || !*s)
		return yerr(y, n, key, "expected an integer");
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 255)
		return yerr(y, n, key, "expected an integer 0..255, got '%.60s'",
		            s);
	*out = (int)v;
	return 0;
}

/* true or false */
static int get_flag(struct yctx *y, const yaml_node_t *n, const char *key,
                    int *out)
{
	const char *s = scalar(n);

	if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
		*out = !strcmp(s, "true");
		return 0;
	}
	return yerr(y, n, key, "expected true or false, got '%.60s'",
	            s ? s : "?");
}

/* a sequence of scalars (a single scalar is a list of one when ONE_OK) */
static int get_list(struct yctx *y, const yaml_node_t *n, const char *key,
                    int one_ok, char ***out)
{
	char **v;
	size_t k = 0;

	free_strv(*out);
	*out = NULL;
	if (one_ok && scalar(n)) {
		v = emb_xcalloc(2, sizeof(*v));
		v[0] = emb_xstrdup(scalar(n));
		*out = v;
		return 0;
	}
	if (!n || n->type != YAML_SEQUENCE_NODE)
		return yerr(y, n, key, "expected a list");
	v = emb_xcalloc((size_t)(n->data.sequence.items.top -
	                     n->data.sequence.items.start) + 1, sizeof(*v));
	*out = v;
	for (yaml_node_item_t *i = n->data.sequence.items.start;
	     i < n->data.sequence.items.top; i++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *i);
		const char *s = scalar(e);

		if (!s)
			return yerr(y, e, key, "list items must be strings");
		if (strlen(s) != e->data.scalar.length)
			return yerr(y, e, key, "string contains a NUL byte");
		v[k++] = emb_xstrdup(s);
	}
	return 0;
}

static int bad_word_char(int ch);

/* a scalar split on blanks into a list (no quoting: no shell here) */
static int get_list_words(struct yctx *y, const yaml_node_t *n,
                          const char *key, char ***out)
{
	const char *s = scalar(n);
	char *copy, *save = NULL, *w;
	char **v;
	size_t k = 0;

	free_strv(*out);
	*out = NULL;
	for (const char *p = s; *p; p++)
		if (bad_word_char((unsigned char)*p))
			return yerr(y, n, key, "'%c' is not allowed in a string "
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
static int get_tols(struct yctx *y, struct mcase *c, const yaml_node_t *n,
                    const char *key, int is_cos)
{
	double d;

	if (scalar(n))  /* one value for every field */
		return get_num(y, n, key, is_cos ? &c->min_cos : &c->atol);
	if (!n || n->type != YAML_MAPPING_NODE)
		return yerr(y, n, key, "expected a number or a mapping "
		            "field: number");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *val = yaml_document_get_node(y->doc, p->value);
		const char *f = scalar(k);

		if (!f || !emb_validate_field_name(f))
			return yerr(y, k, key, "unknown field '%.60s' (known: "
			            "%s)", f ? f : "?", emb_validate_field_list());
		if (get_num(y, val, key, &d) < 0)
			return -1;
		if (is_cos)
			add_tol(c, f, -1, d);
		else
			add_tol(c, f, d, NAN);
	}
	return 0;
}

static int bad_word_char(int ch)
{
	return strchr("'\"`$;&<>\\(){}*?~#", ch) != NULL;
}

int emb_manifest_name_ok(const char *name)
{
	const char *p = name;

	if (!name || !*name || *name == '/' || strlen(name) > 200)
		return 0;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return 0;
		p += n;
		if (*p)
			p++;
	}
	return 1;
}

/*
 * The allow-list (emb(7) SECURITY): the programs a manifest may run and,
 * for each, the options it may give them without --trusted.  Everything
 * else is refused at load: an option that writes a file (-o, --output,
 * --save-ranges, --force, emb-search --build), emb-validate itself
 * (--keep, --manifest), emb-fetch (the network, $HF_TOKEN), any other
 * emb-* program, and any option a program's own parser would not read
 * the way this one does.  The words are read as emb_cli_parse reads
 * them: exact long names, --NAME=VALUE, -XVALUE, a required value in the
 * next word, operands (files read) anywhere, "--" ending the options.
 */
struct mopt {
	const char *name;
	char shrt;              /* short letter, or 0 */
	char arg;               /* 0: none, 'r': required, 'o': optional (=) */
};

#define G_BASE 1u
#define G_RAW 2u
#define G_B64 4u
#define G_MODEL 8u
#define G_TEXT 16u
#define G_CHUNK 32u
#define G_LATE 64u
#define G_COMPUTE 128u

/* lib/tool/cli.c's common options, by the group that enables them */
static const struct { struct mopt o; unsigned group; } common_ok[] = {
	{ { "help", 'h', 0 }, G_BASE }, { { "version", 0, 0 }, G_BASE },
	{ { "errors", 0, 'r' }, G_BASE }, { { "strict", 0, 0 }, G_BASE },
	{ { "max-line", 0, 'r' }, G_BASE }, { { "progress", 0, 'o' }, G_BASE },
	{ { "no-progress", 0, 0 }, G_BASE }, { { "fields", 0, 'r' }, G_BASE },
	{ { "drop", 0, 'r' }, G_BASE }, { { "raw", 0, 0 }, G_RAW },
	{ { "b64", 0, 0 }, G_B64 }, { { "model", 'm', 'r' }, G_MODEL },
	{ { "max-length", 0, 'r' }, G_TEXT }, { { "no-truncate", 0, 0 }, G_TEXT },
	{ { "prompt", 0, 'r' }, G_TEXT }, { { "prompt-name", 0, 'r' }, G_TEXT },
	{ { "no-prompt", 0, 0 }, G_TEXT }, { { "tokens", 0, 0 }, G_TEXT },
	{ { "chunk", 0, 'r' }, G_CHUNK }, { { "overlap", 0, 'r' }, G_CHUNK },
	{ { "late", 0, 0 }, G_LATE }, { { "compute", 0, 'r' }, G_COMPUTE },
};

static const struct mopt tokenize_ok[] = { { "offsets", 0, 0 }, { 0 } };
static const struct mopt encode_ok[] = {
	{ "pool", 0, 'o' }, { "normalize", 0, 0 }, { "no-normalize", 0, 0 },
	{ "dim", 0, 'r' }, { "threads", 'j', 'r' }, { "batch-tokens", 0, 'r' },
	{ "top-k", 0, 'r' }, { "terms", 0, 0 }, { "weights", 0, 'r' },
	{ "act", 0, 'r' }, { 0 } };
static const struct mopt pool_ok[] = {
	{ "mode", 0, 'r' }, { "normalize", 0, 0 }, { "no-normalize", 0, 0 },
	{ "dim", 0, 'r' }, { "layer-norm", 0, 0 }, { "group-by", 0, 'r' },
	{ 0 } };
static const struct mopt rerank_ok[] = {
	{ "activation", 0, 'r' }, { "top-k", 0, 'r' },
	{ "return-documents", 0, 0 }, { "label", 0, 'r' }, { "logits", 0, 0 },
	{ "threads", 'j', 'r' }, { "batch-tokens", 0, 'r' }, { "maxsim", 0, 0 },
	{ "query", 0, 'r' }, { "skip-special", 0, 0 }, { "skip-prefix", 0, 'o' },
	{ 0 } };
/* not -o/--output, --save-ranges, --force, --weights (checkpoint writing) */
static const struct mopt quantize_ok[] = {
	{ "vectors", 0, 'r' }, { "ranges", 0, 'r' }, { "keep", 0, 0 },
	{ "unpack", 0, 'r' }, { 0 } };
/* not --build, --precision (index writing) */
static const struct mopt search_ok[] = {
	{ "index", 0, 'r' }, { "top-k", 'k', 'r' }, { "score", 0, 'r' },
	{ "threshold", 0, 'r' }, { "search", 0, 'r' }, { "rescore", 0, 'r' },
	{ "rescore-with", 0, 'r' }, { "keep", 0, 0 }, { "threads", 'j', 'r' },
	{ "best-per", 0, 'r' }, { 0 } };

static const struct mprog {
	const char *name;
	unsigned groups;
	const struct mopt *opts;
} manifest_progs[] = {
	{ "emb-tokenize", G_BASE | G_RAW | G_MODEL | G_TEXT | G_CHUNK,
	  tokenize_ok },
	{ "emb-encode", G_BASE | G_RAW | G_B64 | G_MODEL | G_TEXT | G_CHUNK |
	  G_LATE | G_COMPUTE, encode_ok },
	{ "emb-pool", G_BASE | G_B64 | G_MODEL | G_CHUNK | G_LATE, pool_ok },
	{ "emb-rerank", G_BASE | G_MODEL | G_TEXT | G_COMPUTE, rerank_ok },
	{ "emb-quantize", G_BASE | G_MODEL | G_B64, quantize_ok },
	{ "emb-search", G_BASE, search_ok },
};

/* the option of P named N (long, length len) or short letter SH */
static const struct mopt *allowed_opt(const struct mprog *p, const char *n,
                                      size_t len, char sh)
{
	for (size_t i = 0; i < sizeof(common_ok) / sizeof(common_ok[0]); i++) {
		const struct mopt *o = &common_ok[i].o;
		if (!(p->groups & common_ok[i].group))
			continue;
		if (n ? strlen(o->name) == len && !memcmp(o->name, n, len) :
		        o->shrt && o->shrt == sh)
			return o;
	}
	for (const struct mopt *o = p->opts; o->name; o++)
		if (n ? strlen(o->name) == len && !memcmp(o->name, n, len) :
		        o->shrt && o->shrt == sh)
			return o;
	return NULL;
}

/* why an option a program does have is still refused */
static const char *writer_why(const char *w)
{
	static const char *const wl[] = { "output", "save-ranges", "force",
		"build", "keep", "manifest", "trusted", "weights", "precision" };
	size_t n;

	if (w[0] == '-' && w[1] == 'o')
		return "writes files";
	if (w[0] != '-' || w[1] != '-')
		return NULL;
	n = strcspn(w + 2, "=");
	for (size_t i = 0; i < sizeof(wl) / sizeof(wl[0]); i++)
		if (strlen(wl[i]) == n && !strncmp(w + 2, wl[i], n))
			return "writes files";
	return NULL;
}

int emb_manifest_argv_check(size_t *bad, char *why, size_t whylen,
                            const char *const *argv)
{
	const struct mprog *p = NULL;
	const char *prog = argv[0];
	int dashdash = 0;

	*bad = 0;
	for (size_t i = 0; i < sizeof(manifest_progs) / sizeof(manifest_progs[0]);
	     i++)
		if (!strcmp(prog, manifest_progs[i].name))
			p = &manifest_progs[i];
	if (!p) {
		snprintf(why, whylen, "is not a program a manifest may run "
		         "(emb-tokenize, emb-encode, emb-pool, emb-rerank, "
		         "emb-quantize, emb-search; %s): refused unless "
		         "emb-validate --trusted",
		         !strcmp(prog, "emb-fetch") ? "emb-fetch goes to the "
		         "network" : !strcmp(prog, "emb-validate") ? "emb-validate "
		         "writes files and runs commands" : "emb(7) SECURITY");
		return -1;
	}
	for (size_t i = 1; argv[i]; i++) {
		const char *w = argv[i], *eq = NULL;
		const struct mopt *o;

		if (dashdash || w[0] != '-' || !w[1])
			continue;       /* an operand: a file it reads */
		if (!strcmp(w, "--")) {
			dashdash = 1;
			continue;
		}
		if (w[1] == '-') {
			eq = strchr(w + 2, '=');
			o = allowed_opt(p, w + 2, eq ? (size_t)(eq - w - 2) :
			                strlen(w + 2), 0);
		} else {
			o = allowed_opt(p, NULL, 0, w[1]);
			if (o && o->arg)
				eq = w[2] ? w + 2 : NULL;
			else if (o && w[2])
				o = NULL;       /* -xy: not read as two options */
		}
		if (!o || (eq && !o->arg)) {
			const char *ww = writer_why(w);
			*bad = i;
			snprintf(why, whylen, "%s: refused unless emb-validate "
			         "--trusted (a manifest gives %s only the options "
			         "emb(7) SECURITY lists)", ww ? ww : "is not an "
			         "option a manifest may give", prog);
			return -1;
		}
		if (o->arg == 'r' && !eq) {
			if (!argv[i + 1]) {
				*bad = i;
				snprintf(why, whylen, "needs a value");
				return -1;
			}
			i++;    /* its value */
		}
	}
	return 0;
}

/* "emb-a x | emb-b" -> stages */
static int get_command(struct yctx *y, struct mcase *c, const yaml_node_t *n)
{
	const char *s = scalar(n);
	const char *p;

	if (!s || !*s)
		return yerr(y, n, "command", "expected a string");
	for (p = s; *p; p++)
		if (bad_word_char((unsigned char)*p))
			return yerr(y, n, "command", "'%c' is not allowed: the "
			            "command is not run by a shell (put option "
			            "values with blanks in 'args')", *p);
	for (int i = 0; i < c->nstages; i++)
		free_strv(c->stages[i]);
	c->nstages = 0;
	p = s;
	for (;;) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p), nw = 0;
		char *seg = emb_xcalloc(len + 1, 1), *save = NULL, *w;
		char **words = emb_xcalloc(len / 2 + 2, sizeof(*words));

		memcpy(seg, p, len);
		for (w = strtok_r(seg, " \t\r\n", &save); w;
		     w = strtok_r(NULL, " \t\r\n", &save))
			words[nw++] = emb_xstrdup(w);
		free(seg);
		if (!nw) {
			free(words);
			return yerr(y, n, "command", "empty pipeline stage");
		}
		if (c->nstages == MAX_STAGES) {
			free_strv(words);
			return yerr(y, n, "command", "more than %d stages",
			            MAX_STAGES);
		}
		c->stages[c->nstages++] = words;
		if (strncmp(words[0], "emb-", 4) || strchr(words[0], '/') ||
		    !words[0][4])
			return yerr(y, n, "command", "'%.60s' is not an emb-* "
			            "command", words[0]);
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

static const char *case_keys[] = {
	"name", "model", "synth", "synth_root", "input", "input_fields",
	"golden", "golden_case", "command", "args", "tolerance", "atol",
	"min_cos", "fields", "expect_exit", "timeout", "limit",
	"description", "input_only", NULL
};

static int check_file(struct yctx *y, const yaml_node_t *n, const char *key,
                      const char *path, int want_dir)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return yerr(y, n, key, "%.200s: %s", path, strerror(errno));
	if (want_dir ? !S_ISDIR(sb.st_mode) : S_ISDIR(sb.st_mode))
		return yerr(y, n, key, "%.200s: %s", path, want_dir ?
		            "not a directory" : "is a directory");
	/* a FIFO or device would make the run wait in open() */
	if (!want_dir && !S_ISREG(sb.st_mode))
		return yerr(y, n, key, "%.200s: not a regular file", path);
	return 0;
}

static int parse_case(struct yctx *y, struct mcase *c, const yaml_node_t *n)
{
	const yaml_node_t *kn[32] = { 0 }; /* value node per case_keys[] */
	const yaml_node_t *keyn[32] = { 0 };
	char *tmp = NULL;

	c->golden_case = -1;
	c->atol = NAN;
	c->min_cos = NAN;
	c->timeout = 600;
	c->line = line_of(n);
	if (!n || n->type != YAML_MAPPING_NODE)
		return yerr(y, n, NULL, "each case must be a mapping");
	/* the name first, for the messages */
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		const char *ks = scalar(yaml_document_get_node(y->doc, p->key));
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);

		if (ks && !strcmp(ks, "name") && !c->name && scalar(v) &&
		    *scalar(v)) {
			c->name = emb_xstrdup(scalar(v));
			y->cname = c->name;
		}
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		const char *ks = scalar(k);
		int i;

		for (i = 0; ks && case_keys[i]; i++)
			if (!strcmp(case_keys[i], ks))
				break;
		if (!ks || !case_keys[i])
			return yerr(y, k, ks, "unknown key");
		if (kn[i])
			return yerr(y, k, ks, "given twice");
		kn[i] = yaml_document_get_node(y->doc, p->value);
		keyn[i] = k;
	}
	if (!kn[0])
		return yerr(y, n, "name", "missing (every case needs a name)");
	if (get_str(y, kn[0], "name", &c->name) < 0)
		return -1;
	y->cname = c->name;
	if (c->name[0] == '.' ||
	    strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                    "0123456789._+-") != strlen(c->name))
		return yerr(y, kn[0], "name", "use only letters, digits and "
		            "'._+-' (not first '.')");
	for (size_t i = 0; i < y->m->n && &y->m->c[i] != c; i++)
		if (!strcmp(y->m->c[i].name, c->name))
			return yerr(y, kn[0], "name", "duplicate case name (also "
			            "on line %d)", y->m->c[i].line);
	for (int i = 1; case_keys[i]; i++) {
		const char *key = case_keys[i];
		const yaml_node_t *v = kn[i];
		int r = 0;

		if (!v)
			continue;
		if (!strcmp(key, "model") || !strcmp(key, "synth") ||
		    !strcmp(key, "synth_root") || !strcmp(key, "input") ||
		    !strcmp(key, "golden")) {
			char **dst = !strcmp(key, "model") ? &c->model :
			             !strcmp(key, "synth") ? &c->synth :
			             !strcmp(key, "synth_root") ? &c->synth_root :
			             !strcmp(key, "input") ? &c->input : &c->golden;

			r = get_str(y, v, key, &tmp);
			if (!r) {
				*dst = resolve(y->m->dir, tmp);
				if (dst == &c->model) {
					free(c->model_name);
					c->model_name = emb_xstrdup(tmp);
					c->model_line = line_of(v);
				}
				free(tmp);
				tmp = NULL;
			}
		} else if (!strcmp(key, "golden_case")) {
			const char *s = scalar(v);
			size_t j;

			for (j = 0; s && j < y->m->n && &y->m->c[j] != c; j++)
				if (!strcmp(y->m->c[j].name, s))
					break;
			if (!s || j >= y->m->n || &y->m->c[j] == c)
				return yerr(y, v, key, "'%.60s' is not the name "
				            "of an earlier case", s ? s : "?");
			c->golden_case = (int)j;
		} else if (!strcmp(key, "command")) {
			r = get_command(y, c, v);
		} else if (!strcmp(key, "args") && scalar(v)) {
			/* "args: -j 2": split on blanks */
			r = get_list_words(y, v, key, &c->args);
		} else if (!strcmp(key, "args")) {
			r = get_list(y, v, key, 0, &c->args);
		} else if (!strcmp(key, "input_fields")) {
			r = get_list(y, v, key, 1, &c->input_fields);
		} else if (!strcmp(key, "fields")) {
			r = get_list(y, v, key, 1, &c->fields);
			for (size_t j = 0; !r && c->fields[j]; j++)
				if (!emb_validate_field_name(c->fields[j]))
					return yerr(y, v, key, "unknown field "
					            "'%.60s' (known: %s)",
					            c->fields[j],
					            emb_validate_field_list());
		} else if (!strcmp(key, "tolerance")) {
			r = get_tols(y, c, v, key, 0);
		} else if (!strcmp(key, "min_cos")) {
			r = get_tols(y, c, v, key, 1);
		} else if (!strcmp(key, "atol")) {
			r = get_num(y, v, key, &c->atol);
		} else if (!strcmp(key, "expect_exit")) {
			r = get_int(y, v, key, &c->expect_exit);
		} else if (!strcmp(key, "timeout")) {
			r = get_num(y, v, key, &c->timeout);
		} else if (!strcmp(key, "limit")) {
			r = get_count(y, v, key, &c->limit);
		} else if (!strcmp(key, "input_only")) {
			r = get_flag(y, v, key, &c->input_only);
		}
		if (r < 0)
			return -1;
	}
	if (!c->input)
		return yerr(y, n, "input", "missing");
	if (!c->nstages)
		return yerr(y, n, "command", "missing");
	if (!c->golden == (c->golden_case < 0))
		return yerr(y, n, "golden", "exactly one of 'golden' and "
		            "'golden_case' is needed");
	if (c->synth && !c->model)
		return yerr(y, kn[2], "synth", "needs 'model' (the name of the "
		            "checkpoint to build)");
	if (c->synth && !emb_manifest_name_ok(c->model_name))
		return yerr(y, kn[1], "model", "with 'synth', the name of the "
		            "checkpoint built inside the run directory: a relative "
		            "path without '.' or '..' components, not '%.60s'",
		            c->model_name);
	for (int s = 0; s < c->nstages && !y->m->trusted; s++) {
		/* each stage's words, then the args it is given too */
		size_t nw = strv_len(c->stages[s]), na = strv_len(c->args), bad;
		const char **argv = emb_xcalloc(nw + na + 1, sizeof(*argv));
		char why[EMB_ERR_MAX];
		int r;

		for (size_t i = 0; i < nw; i++)
			argv[i] = c->stages[s][i];
		for (size_t i = 0; i < na; i++)
			argv[nw + i] = c->args[i];
		r = emb_manifest_argv_check(&bad, why, sizeof(why), argv);
		free(argv);
		if (r < 0 && bad >= nw)
			return yerr(y, kn[9], "args", "'%.60s' (given to %s) %s",
			            c->args[bad - nw], c->stages[s][0], why);
		if (r < 0 && bad)
			return yerr(y, kn[8], "command", "'%s': '%.60s' %s",
			            c->stages[s][0], c->stages[s][bad], why);
		if (r < 0)
			return yerr(y, kn[8], "command", "'%.60s' %s",
			            c->stages[s][0], why);
	}
	if (c->synth_root && !c->synth)
		return yerr(y, kn[3], "synth_root", "only makes sense with "
		            "'synth'");
	if (check_file(y, kn[4], "input", c->input, 0) < 0)
		return -1;
	if (c->golden && check_file(y, kn[6], "golden", c->golden, 0) < 0)
		return -1;
	if (c->synth && check_file(y, kn[2], "synth", c->synth, 0) < 0)
		return -1;
	if (c->synth_root &&
	    check_file(y, kn[3], "synth_root", c->synth_root, 1) < 0)
		return -1;
	if (c->model && !c->synth &&
	    check_file(y, kn[1], "model", c->model, 1) < 0)
		return -1;
	(void)keyn;
	y->cname = NULL;
	return 0;
}

static void yaml_error(emb_err *err, const char *path,
                       const yaml_parser_t *p)
{
	emb_err_set(err, "%s:%zu: invalid YAML: %s%s%s", path,
	            (size_t)p->problem_mark.line + 1,
	            p->problem ? p->problem : "parse error",
	            p->context ? " " : "", p->context ? p->context : "");
}

/*
 * One pass over the events of TEXT before the loader builds anything:
 * nesting deeper than MANIFEST_DEPTH and aliases are refused as soon as
 * the parser meets them.  (libyaml's scanner keeps one entry per open
 * flow level and visits them all for each token: deep nesting alone
 * would make the load slower than quadratic.)
 */
static int yaml_prescan(const char *path, const char *text, size_t len,
                        emb_err *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, rc = 1;

	if (!yaml_parser_initialize(&p))
		return emb_err_set(err, "%s: cannot initialize the YAML parser",
		                   path);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (rc > 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			yaml_error(err, path, &p);
			rc = -1;
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > MANIFEST_DEPTH)
				rc = emb_err_set(err, "%s:%zu: nested deeper than %d "
				                 "levels (a manifest needs 4)", path,
				                 (size_t)ev.start_mark.line + 1,
				                 MANIFEST_DEPTH);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_ALIAS_EVENT:
			rc = emb_err_set(err, "%s:%zu: an alias (*name): anchors and "
			                 "aliases are not allowed in a manifest", path,
			                 (size_t)ev.start_mark.line + 1);
			break;
		case YAML_STREAM_END_EVENT:
			rc = 0;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

static int parse_manifest(struct manifest *m, const char *path, int trusted,
                          emb_err *err)
{
	char *text;
	size_t len;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *cases = NULL;
	struct yctx y = { m, &doc, err, NULL };
	char *slash;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	m->path = path;
	m->trusted = trusted;
	m->dir = emb_xstrdup(path);
	slash = strrchr(m->dir, '/');
	if (!slash)
		strcpy(m->dir, ".");
	else if (slash == m->dir)
		slash[1] = 0;
	else
		*slash = 0;
	if (!(text = emb_file_read(NULL, path, MANIFEST_MAX, &len, err)))
		return -1;
	if (yaml_prescan(path, text, len, err) < 0) {
		free(text);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		free(text);
		return emb_err_set(err, "%s: cannot initialize the YAML parser",
		                   path);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_error(err, path, &parser);
		yaml_parser_delete(&parser);
		free(text);
		return -1;
	}
	yaml_parser_delete(&parser);
	free(text);
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		yerr(&y, NULL, NULL, "empty manifest (expected 'cases:')");
		goto done;
	}
	if (root->type != YAML_MAPPING_NODE) {
		yerr(&y, root, NULL, "expected a mapping with 'cases'");
		goto done;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		const char *ks = scalar(k);

		if (ks && !strcmp(ks, "cases") && !cases) {
			cases = yaml_document_get_node(&doc, p->value);
			continue;
		}
		yerr(&y, k, ks, ks && !strcmp(ks, "cases") ? "given twice" :
		     "unknown key (expected 'cases')");
		goto done;
	}
	if (!cases) {
		yerr(&y, root, "cases", "missing");
		goto done;
	}
	if (cases->type != YAML_SEQUENCE_NODE ||
	    cases->data.sequence.items.top == cases->data.sequence.items.start) {
		yerr(&y, cases, "cases", "expected a non-empty list of cases");
		goto done;
	}
	if (cases->data.sequence.items.top - cases->data.sequence.items.start >
	    MANIFEST_CASES) {
		yerr(&y, cases, "cases", "more than %d cases", MANIFEST_CASES);
		goto done;
	}
	m->c = emb_xcalloc((size_t)(cases->data.sequence.items.top -
	                        cases->data.sequence.items.start),
	               sizeof(*m->c));
	for (yaml_node_item_t *i = cases->data.sequence.items.start;
	     i < cases->data.sequence.items.top; i++) {
		struct mcase *c = &m->c[m->n++];

		if (parse_case(&y, c, yaml_document_get_node(&doc, *i)) < 0)
			goto done;
	}
	rc = 0;
done:
	yaml_document_delete(&doc);
	return rc;
}

/* ------------------------------------------------------------------ */
/* synthetic models                                                    */

/* a whole file the run made or a recipe (regular, at most 256 MiB), or
 * NULL */
static char *slurp(const char *path, size_t *len, emb_err *err)
{
	return emb_file_read(NULL, path, (size_t)256 << 20, len, err);
}

static int mkdir_p(const char *dir)
{
	char *p = emb_xstrdup(dir);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || !*s) {
			char c = *s;

			*s = 0;
			if (mkdir(p, 0777) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return rc;
}

/* the directory holding the recipe's "base": walk up from the recipe */
static char *find_root(const char *recipe, const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, 0, NULL);
	const char *base = j ? json_string_value(json_object_get(j, "base"))
	                     : NULL;
	char *dir = emb_xstrdup(recipe), *s;
	struct stat sb;

	s = strrchr(dir, '/');
	if (s)
		*s = 0;
	else
		strcpy(dir, ".");
	if (base && base[0] != '/') {
		char *d = emb_xstrdup(dir);

		for (;;) {
			char *cand = emb_xasprintf("%s/%s", d, base);
			int ok = stat(cand, &sb) == 0 && S_ISDIR(sb.st_mode);

			free(cand);
			if (ok) {
				free(dir);
				json_decref(j);
				return d;
			}
			s = strrchr(d, '/');
			if (!s || s == d)
				break;
			*s = 0;
		}
		free(d);
	}
	json_decref(j);
	return dir;
}

static int ensure_synth(const struct mcase *c, emb_err *err)
{
	size_t rlen = 0, dlen = 0;
	char *recipe = slurp(c->synth, &rlen, err), *done = NULL, *donepath;
	char *tmp;
	char *root = NULL;
	struct stat sb;
	FILE *fp;
	int rc = -1;

	if (!recipe)
		return -1;
	donepath = emb_xasprintf("%s/.done", c->model);
	tmp = emb_xasprintf("%s/.done.tmp", c->model);
	done = slurp(donepath, &dlen, NULL);
	if (done && dlen == rlen && !memcmp(done, recipe, rlen)) {
		rc = 0;
		goto out;
	}
	if (stat(c->model, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			emb_err_set(err, "%s: not a directory", c->model);
			goto out;
		}
		if (done) {
			/* ours, from an older recipe: start afresh */
			if (emb_rm_tree(c->model)) {
				emb_err_set(err, "%s: cannot remove: %s",
				            c->model, strerror(errno));
				goto out;
			}
		} else if (rmdir(c->model) < 0 && errno != ENOENT) {
			emb_err_set(err, "%s: exists and was not made by a "
			            "synth recipe; refusing to write into it",
			            c->model);
			goto out;
		}
	}
	if (mkdir_p(c->model) < 0) {
		emb_err_set(err, "%s: %s", c->model, strerror(errno));
		goto out;
	}
	root = c->synth_root ? emb_xstrdup(c->synth_root)
	                     : find_root(c->synth, recipe, rlen);
	if (emb_synth_materialize(c->synth, root, c->model, err) < 0)
		goto out;
	fp = fopen(tmp, "wb");
	if (!fp || fwrite(recipe, 1, rlen, fp) != rlen || fclose(fp) != 0 ||
	    rename(tmp, donepath) < 0) {
		emb_err_set(err, "%s: %s", donepath, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(root);
	free(recipe);
	free(done);
	free(donepath);
	free(tmp);
	return rc;
}

/* ------------------------------------------------------------------ */
/* input projection                                                    */

/* copy the first LIMIT (0: all) non-blank lines of IN to OUT, keeping
 * only the members KEEP (NULL: the line as it is) */
static int project(const char *in, const char *out, char **keep,
                   size_t limit, emb_err *err)
{
	emb_reader *r = NULL;
	emb_record *rec = NULL;
	emb_buf b;
	FILE *fp;
	const char *line;
	size_t len;
	int k, rc = -1;
	size_t nrec = 0;

	emb_buf_init(&b);
	if (emb_reader_open(&r, in, (size_t)64 << 20, err) < 0)
		return -1;
	k = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	         0644);
	fp = k < 0 ? NULL : fdopen(k, "wb");
	if (!fp) {
		if (k >= 0)
			close(k);
		emb_reader_free(r);
		return emb_err_set(err, "%s: %s", out, strerror(errno));
	}
	rec = emb_record_new();
	while ((k = emb_reader_next(r, &line, &len, err)) != 0) {
		size_t i;

		if (k < 0)
			continue;
		for (i = 0; i < len && line[i] && strchr(" \t\r", line[i]); i++)
			;
		if (i == len)
			continue;
		if (limit && nrec++ == limit)
			break;
		if (!keep || emb_record_parse(rec, line, len, err) < 0) {
			/* pass a bad line on as it is: the command sees it */
			fwrite(line, 1, len, fp);
			fputc('\n', fp);
			continue;
		}
		b.len = 0;
		emb_out_begin(&b, NULL, NULL);
		for (size_t i = 0; keep[i]; i++) {
			size_t rl = 0;
			const char *raw = emb_record_raw(rec, keep[i], &rl);

			if (raw)
				emb_out_json(&b, keep[i], raw, rl);
		}
		emb_out_end(&b);
		fwrite(b.p, 1, b.len, fp);
	}
	if (fclose(fp) != 0)
		emb_err_set(err, "%s: %s", out, strerror(errno));
	else
		rc = 0;
	emb_record_free(rec);
	emb_reader_free(r);
	emb_buf_release(&b);
	return rc;
}

/* ------------------------------------------------------------------ */
/* running a pipeline                                                  */

static char *find_prog(const char *bindir, const char *name)
{
	const char *path = getenv("PATH"), *p, *e;

	if (bindir) {
		char *cand = emb_xasprintf("%s/%s", bindir, name);

		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	/* absolute PATH entries only: an empty or relative one would find
	 * programs in the current directory (a manifest's own folder) */
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = e + 1) {
		char *cand;

		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (*p == '/') {
			cand = emb_xasprintf("%.*s/%s", (int)(e - p), p, name);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		if (!*e)
			break;
	}
	return NULL;
}

/* argv of stage S: prog -m MODEL words... args... [IN] (new,
 * NULL-terminated); the first stage reads IN as its file operand */
static char **stage_argv(const struct mcase *c, int s, const char *in)
{
	size_t nw = strv_len(c->stages[s]), na = strv_len(c->args), k = 0;
	char **v = emb_xcalloc(nw + na + 4, sizeof(*v));

	v[k++] = c->stages[s][0];
	if (c->model) {
		v[k++] = "-m";
		v[k++] = c->model;
	}
	for (size_t i = 1; i < nw; i++)
		v[k++] = c->stages[s][i];
	for (size_t i = 0; i < na; i++)
		v[k++] = c->args[i];
	if (s == 0)
		v[k++] = (char *)in;
	return v;
}

/*
 * Run the stages of C: the first reads IN (its operand; stdin is IN
 * too), the last writes into OUT, all stderr goes to ERRF.
 * WHY gets a message when the pipeline did not exit as expected.
 * Returns the pipeline status (rightmost non-zero exit, as pipefail;
 * 128+N for a signal), or -1 when it could not be started / timed out.
 */
static int run_pipeline(const struct mcase *c, const char *bindir,
                        const char *in, const char *out, const char *errf,
                        char *why, size_t whylen)
{
	pid_t pid[MAX_STAGES];
	int st[MAX_STAGES], done[MAX_STAGES] = { 0 };
	char *prog[MAX_STAGES] = { 0 };
	int infd = -1, outfd = -1, errfd = -1, prev, n = c->nstages, left;
	int status = 0, rc = -1, timed_out = 0;
	double t0 = now_s(), nap = 1e-3;

	for (int s = 0; s < n; s++) {
		prog[s] = find_prog(bindir, c->stages[s][0]);
		if (!prog[s]) {
			snprintf(why, whylen, "%s: command not found",
			         c->stages[s][0]);
			goto out;
		}
	}
	{
		emb_err e = { "" };
		/* the input the manifest named: a regular file, never waited on */
		if ((infd = emb_file_open(NULL, in, NULL, &e)) < 0) {
			snprintf(why, whylen, "%s", e.msg);
			goto out;
		}
	}
	outfd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	             0644);
	errfd = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW |
	             O_CLOEXEC, 0644);
	if (infd < 0 || outfd < 0 || errfd < 0) {
		snprintf(why, whylen, "%s: %s", infd < 0 ? in : outfd < 0 ? out
		         : errf, strerror(errno));
		goto out;
	}
	fflush(NULL);
	prev = infd;
	for (int s = 0; s < n; s++) {
		int p[2] = { -1, -1 };
		char **argv;

		if (s < n - 1 && pipe2(p, O_CLOEXEC) < 0) {
			snprintf(why, whylen, "pipe: %s", strerror(errno));
			n = s;
			break;
		}
		argv = stage_argv(c, s, in);
		pid[s] = fork();
		if (pid[s] == 0) {
			signal(SIGPIPE, SIG_DFL);
			if (dup2(prev, 0) < 0 ||
			    dup2(s < n - 1 ? p[1] : outfd, 1) < 0 ||
			    dup2(errfd, 2) < 0)
				_exit(126);
			execv(prog[s], argv);
			dprintf(2, "emb-validate: %s: %s\n", prog[s],
			        strerror(errno));
			_exit(127);
		}
		free(argv);
		if (prev != infd)
			close(prev);
		if (p[1] >= 0)
			close(p[1]);
		if (pid[s] < 0) {
			snprintf(why, whylen, "fork: %s", strerror(errno));
			if (p[0] >= 0)
				close(p[0]);
			n = s;
			break;
		}
		prev = p[0];
	}
	if (prev != infd && prev >= 0)
		close(prev);
	close(infd);
	close(outfd);
	close(errfd);
	infd = outfd = errfd = -1;
	/* reap, with a timeout */
	for (left = n; left > 0;) {
		int any = 0;

		for (int s = 0; s < n; s++) {
			pid_t r;

			if (done[s])
				continue;
			r = waitpid(pid[s], &st[s], WNOHANG);
			if (r == pid[s] || (r < 0 && errno == ECHILD)) {
				if (r < 0)
					st[s] = 127 << 8;
				done[s] = 1;
				left--;
				any = 1;
			}
		}
		if (!left)
			break;
		if (c->timeout > 0 && !timed_out && now_s() - t0 > c->timeout) {
			timed_out = 1;
			for (int s = 0; s < n; s++)
				if (!done[s])
					kill(pid[s], SIGKILL);
		}
		if (!any) {
			struct timespec ts = { 0, (long)(nap * 1e9) };

			nanosleep(&ts, NULL);
			if (nap < 0.02)
				nap *= 2;
		} else {
			nap = 1e-3;
		}
	}
	if (why[0])
		goto out;       /* a stage could not be started */
	if (timed_out) {
		snprintf(why, whylen, "timed out after %g s", c->timeout);
		goto out;
	}
	/* pipefail: the rightmost stage that failed decides */
	for (int s = n; s-- > 0;) {
		int code = WIFEXITED(st[s]) ? WEXITSTATUS(st[s]) :
		           WIFSIGNALED(st[s]) ? 128 + WTERMSIG(st[s]) : 255;

		if (!code)
			continue;
		status = code;
		if (WIFSIGNALED(st[s]))
			snprintf(why, whylen, "%s killed by signal %d",
			         c->stages[s][0], WTERMSIG(st[s]));
		else
			snprintf(why, whylen, "%s exited %d", c->stages[s][0],
			         code);
		break;
	}
	rc = status;
out:
	for (int s = 0; s < MAX_STAGES; s++)
		free(prog[s]);
	if (infd >= 0)
		close(infd);
	if (outfd >= 0)
		close(outfd);
	if (errfd >= 0)
		close(errfd);
	return rc;
}

/* print the last N lines of FILE, indented */
static void tail_file(FILE *out, const char *pfx, const char *path, int n)
{
	size_t len = 0, i;
	char *buf = slurp(path, &len, NULL);
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
	double t0 = now_s();
	int rc = 1, st, vr;

	c->out = emb_xasprintf("%s/%s.jsonl", dir, c->name);
	c->errf = emb_xasprintf("%s/%s.err", dir, c->name);
	if (c->synth) {
		/* built inside the run directory, never where the manifest
		 * points: nothing outside it is written or removed */
		free(c->model);
		c->model = emb_xasprintf("%s/models/%s", dir, c->model_name);
	}
	if (c->synth && ensure_synth(c, &err) < 0) {
		snprintf(why, sizeof(why), "synth: %s", err.msg);
		goto done;
	}
	if (c->input_fields || c->limit) {
		inpath = emb_xasprintf("%s/%s.in.jsonl", dir, c->name);
		if (project(c->input, inpath, c->input_fields, c->limit,
		            &err) < 0) {
			snprintf(why, sizeof(why), "input: %s", err.msg);
			goto done;
		}
	}
	if (c->limit && c->golden) {
		gpath = emb_xasprintf("%s/%s.golden.jsonl", dir, c->name);
		if (project(c->golden, gpath, NULL, c->limit, &err) < 0) {
			snprintf(why, sizeof(why), "golden: %s", err.msg);
			goto done;
		}
	}
	st = run_pipeline(c, o->bindir, inpath ? inpath : c->input, c->out,
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
		fprintf(out, "%sFAIL (%s, %.1f s)\n", pfx, why, now_s() - t0);
	else if (!o->quiet)
		fprintf(out, "%sok (%.1f s)\n", pfx, now_s() - t0);
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
	int rc = parse_manifest(&m, path, 0, err);

	manifest_release(&m);
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
	if (parse_manifest(&m, path, o->trusted, err) < 0) {
		manifest_release(&m);
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
			manifest_release(&m);
			return -1;
		}
	}
	for (size_t i = m.n; i-- > 0;)
		if (m.c[i].run && m.c[i].golden_case >= 0)
			m.c[m.c[i].golden_case].run = 1;
	if (o->keep_dir) {
		if (mkdir_p(o->keep_dir) < 0) {
			emb_err_set(err, "%s: %s", o->keep_dir, strerror(errno));
			manifest_release(&m);
			return -1;
		}
		dir = emb_xstrdup(o->keep_dir);
	} else {
		const char *t = getenv("TMPDIR");

		dir = emb_xasprintf("%s/emb-validate.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir)) {
			emb_err_set(err, "%s: %s", dir, strerror(errno));
			free(dir);
			manifest_release(&m);
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
	manifest_release(&m);
	return failed ? 1 : 0;
}
