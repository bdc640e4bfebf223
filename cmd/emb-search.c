/* emb-search - exact and quantized top-k search of query embeddings in a
 * vector index */
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"
#include "st/search.h"

static const char usage[] =
"usage: emb-search --index INDEX [options] [FILE...]\n"
"       emb-search --build OUT [--precision LIST] [FILE]\n"
"Search: reads query records with embedding (or embedding_b64, or the int8,\n"
"uint8, binary or ubinary field of emb-quantize) from each JSON line and\n"
"adds results: [{\"id\": ID, \"score\": S}, ...], best first; ties go to the\n"
"document that comes first in the index.  A window of a long document\n"
"(emb-encode with windows) is found as {\"id\", \"chunk\", \"span\", \"score\"}.\n"
"  --index INDEX      an index file (emb-search --build) or a vectors JSONL\n"
"                     file (records with embedding and id)\n"
"  -k, --top-k K      results per query (default 10)\n"
"  --score cosine|dot (default cosine)\n"
"  --threshold T      leave out results scoring below T\n"
"  --search PREC      the index matrix to search: f32, f16, int8 or binary\n"
"                     (default: the most precise it holds)\n"
"  --rescore M        score the best K x M candidates again with a more\n"
"                     precise matrix of the index\n"
"  --rescore-with PREC  that matrix (default: the most precise held)\n"
"  --best-per id      the K best documents, not windows: each id once, ranked\n"
"                     by its best window (max), given as that window\n"
"  --keep             keep the query's vector fields (default: dropped)\n"
"  -j, --threads N    threads (default: all online cores)\n"
"Build: reads vectors JSONL records (embedding or embedding_b64, and id:\n"
"any JSON value; the record number when absent) and writes an index file.\n"
"  --build OUT        write the index to OUT\n"
"  --precision LIST   matrices to store, from f32, f16, int8, binary\n"
"                     (default f32); int8 ranges come from the input\n"
"Common: --errors=skip|emit, --strict, --max-line BYTES, --fields LIST,\n"
"  --drop LIST, --progress, --no-progress, -h/--help, --version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 index load or build error,\n"
"4 write error,\n"
"5 an input file (or the --index file) could not be read.\n";

enum { O_INDEX = 1, O_TOPK, O_SCORE, O_THRESHOLD, O_SEARCH, O_RESCORE,
       O_WITH, O_KEEP, O_THREADS, O_BUILD, O_PRECISION, O_BESTPER };

static const emb_cli_opt opts[] = {
	{ "index", 0, EMB_ARG_REQUIRED, O_INDEX },
	{ "top-k", 'k', EMB_ARG_REQUIRED, O_TOPK },
	{ "score", 0, EMB_ARG_REQUIRED, O_SCORE },
	{ "threshold", 0, EMB_ARG_REQUIRED, O_THRESHOLD },
	{ "search", 0, EMB_ARG_REQUIRED, O_SEARCH },
	{ "rescore", 0, EMB_ARG_REQUIRED, O_RESCORE },
	{ "rescore-with", 0, EMB_ARG_REQUIRED, O_WITH },
	{ "keep", 0, EMB_ARG_NONE, O_KEEP },
	{ "threads", 'j', EMB_ARG_REQUIRED, O_THREADS },
	{ "build", 0, EMB_ARG_REQUIRED, O_BUILD },
	{ "precision", 0, EMB_ARG_REQUIRED, O_PRECISION },
	{ "best-per", 0, EMB_ARG_REQUIRED, O_BESTPER },
	{ NULL, 0, 0, 0 },
};

typedef struct ctx {
	emb_cli cli;
	const char *index, *build;
	unsigned precision;
	int keep, best_per;
	emb_search_opts so;
	emb_index *ix;
	emb_search *s;
	emb_best_per *bp;       /* --best-per id */
	float *q;               /* (batch, dim) */
	emb_hit *hits;          /* (batch, k) */
	int *nhits;
	emb_buf res;
} ctx;

typedef struct item {
	float *v;
	emb_hit *hits;          /* (k) */
	int n;
} item;

/* one precision name, for --search and --rescore-with */
static int one_prec(unsigned *out, const char *arg, const char *opt,
                    emb_err *err)
{
	unsigned p = emb_ix_prec_parse(arg);

	if (!p || (p & (p - 1)))
		return emb_err_set(err, "%s: '%s' is not one of f32, f16, int8, "
		                   "binary", opt, arg);
	*out = p;
	return 0;
}

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	long long v;
	char *end;

	switch (key) {
	case O_INDEX: c->index = arg; return 0;
	case O_TOPK:
		if (emb_cli_parse_int(&v, arg, 1, 1 << 20, 0) < 0)
			return emb_err_set(err, "--top-k must be an integer from 1 to "
			                   "1048576, not '%s'", arg);
		c->so.k = (int)v;
		return 0;
	case O_SCORE:
		if (!strcmp(arg, "cosine"))
			c->so.score = EMB_SCORE_COSINE;
		else if (!strcmp(arg, "dot"))
			c->so.score = EMB_SCORE_DOT;
		else
			return emb_err_set(err, "--score: '%s' is not cosine or dot",
			                   arg);
		return 0;
	case O_THRESHOLD:
		c->so.threshold = strtof(arg, &end);
		if (!*arg || *end || c->so.threshold != c->so.threshold)
			return emb_err_set(err, "--threshold must be a number, not '%s'",
			                   arg);
		c->so.use_threshold = 1;
		return 0;
	case O_SEARCH: return one_prec(&c->so.first, arg, "--search", err);
	case O_WITH: return one_prec(&c->so.with, arg, "--rescore-with", err);
	case O_RESCORE:
		if (emb_cli_parse_int(&v, arg, 1, 1 << 16, 0) < 0)
			return emb_err_set(err, "--rescore must be a positive integer, "
			                   "not '%s'", arg);
		c->so.rescore = (int)v;
		return 0;
	case O_KEEP: c->keep = 1; return 0;
	case O_BESTPER:
		if (strcmp(arg, "id"))
			return emb_err_set(err, "--best-per: '%s' is not 'id' (the "
			                   "one field an index holds)", arg);
		c->best_per = 1;
		return 0;
	case O_THREADS:
		if (emb_cli_parse_int(&v, arg, 1, 4096, 0) < 0)
			return emb_err_set(err, "-j must be a positive integer, not "
			                   "'%s'", arg);
		c->so.threads = (int)v;
		return 0;
	case O_BUILD: c->build = arg; return 0;
	case O_PRECISION:
		if (!(c->precision = emb_ix_prec_parse(arg)))
			return emb_err_set(err, "--precision: '%s' is not a list of "
			                   "f32, f16, int8, binary", arg);
		return 0;
	}
	return -1;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	ctx *c = vc;
	item *it = r->user;
	int dim;

	if (!it) {
		if (!(it = r->user = calloc(1, sizeof(*it))) ||
		    !(it->hits = malloc((size_t)c->so.k * sizeof(emb_hit))))
			return emb_err_set(err, "out of memory");
	}
	free(it->v);
	it->v = NULL;
	it->n = 0;
	if (emb_search_query(&it->v, &dim, c->ix, r->rec, err) < 0)
		return -1;
	r->cost = 1;
	return 0;
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	ctx *c = vc;
	int dim = emb_index_dim(c->ix);

	if (emb_index_count(c->ix) == 0)
		return 0;
	for (int i = 0; i < n; i++)
		memcpy(c->q + (size_t)i * dim, ((item *)rs[i]->user)->v,
		       (size_t)dim * sizeof(float));
	if (c->bp) {
		if (emb_best_per_run(c->bp, c->hits, c->nhits, c->q, n, err) < 0)
			return -1;
	} else {
		emb_search_run(c->s, c->hits, c->nhits, c->q, n);
	}
	for (int i = 0; i < n; i++) {
		item *it = rs[i]->user;
		it->n = c->nhits[i];
		if (it->n > 0)
			memcpy(it->hits, c->hits + (size_t)i * c->so.k,
			       (size_t)it->n * sizeof(emb_hit));
	}
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop[] = { "embedding", "embedding_b64", "int8",
		"uint8", "binary", "ubinary", NULL };
	ctx *c = vc;
	item *it = r->user;

	c->res.len = 0;
	if (emb_search_results_json(&c->res, c->ix, it->hits, it->n, err) < 0)
		return -1;
	emb_out_begin(b, r->rec, c->keep ? NULL : drop);
	emb_out_json(b, "results", c->res.p, c->res.len);
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	item *it = u;

	(void)vc;
	free(it->v);
	free(it->hits);
	free(it);
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, run, emit, free_user, 256, 256 };
	emb_err err = { "" };
	int status;

	c.cli.prog = "emb-search";
	c.cli.usage = usage;
	c.cli.common = 0;
	c.so.k = 10;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	if (c.build) {
		if (c.index)
			emb_cli_usage_error(&c.cli, "give --index or --build, not both");
		if (c.cli.nfiles > 1)
			emb_cli_usage_error(&c.cli, "--build reads one FILE (or stdin)");
		if (c.best_per)
			emb_cli_usage_error(&c.cli, "--best-per goes with --index");
		if (c.cli.nfiles)
			emb_cli_need_file(&c.cli, c.cli.files[0], 1);
		if (emb_index_from_jsonl(&c.ix, c.cli.nfiles ? c.cli.files[0] : NULL,
		                         c.precision ? c.precision : EMB_IX_F32,
		                         c.cli.max_line, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (emb_index_count(c.ix) == 0)
			emb_cli_warn(&c.cli, "%s holds no vectors: %s is an empty index",
			             c.cli.nfiles ? c.cli.files[0] : "the input",
			             c.build);
		if (emb_index_write(c.ix, c.build, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_WRITE, "%s", err.msg);
		emb_index_free(c.ix);
		free(c.cli.files);
		return 0;
	}
	if (!c.index)
		emb_cli_usage_error(&c.cli, "--index INDEX is required (or --build "
		                    "OUT)");
	if (c.precision)
		emb_cli_usage_error(&c.cli, "--precision goes with --build");
	if (c.so.with && !c.so.rescore)
		emb_cli_usage_error(&c.cli, "--rescore-with needs --rescore");
	emb_cli_need_file(&c.cli, c.index, 0);
	if (emb_index_open(&c.ix, c.index, c.cli.max_line, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (emb_index_count(c.ix) == 0)
		emb_cli_warn(&c.cli, "%s holds no documents: every query gets no "
		             "results", c.index);
	if (emb_search_new(&c.s, c.ix, &c.so, &err) < 0 ||
	    (c.best_per && emb_best_per_new(&c.bp, c.ix, &c.so, &err) < 0))
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (!(c.q = malloc(((size_t)ops.batch_max + 1) *
	                   ((size_t)emb_index_dim(c.ix) + 1) * sizeof(float))) ||
	    !(c.hits = malloc(((size_t)ops.batch_max + 1) * c.so.k * sizeof(emb_hit))) ||
	    !(c.nhits = malloc(((size_t)ops.batch_max + 1) * sizeof(int))))
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "out of memory");
	emb_buf_init(&c.res);
	status = emb_cli_run(&c.cli, &ops, &c);
	emb_buf_release(&c.res);
	emb_best_per_free(c.bp);
	emb_search_free(c.s);
	emb_index_free(c.ix);
	free(c.q);
	free(c.hits);
	free(c.nhits);
	return status;
}
