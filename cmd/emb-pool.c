/* emb-pool - token_embeddings -> embedding (sentence-transformers Pooling) */
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"
#include "tool/modcheck.h"
#include "tool/static.h"

static const char usage[] =
"usage: emb-pool [-m MODEL] [--mode MODE] [--normalize|--no-normalize]\n"
"                [--dim N] [options] [FILE...]\n"
"Reads token_embeddings (or token_embeddings_b64) from each JSON line and\n"
"writes embedding instead; every other field passes through unchanged.\n"
"  -m, --model MODEL  use MODEL's 1_Pooling config and Normalize module\n"
"                     (only its small json files are read)\n"
"  --mode MODE        cls, mean, max, mean_sqrt_len, weightedmean,\n"
"                     lasttoken, or several joined by ',' (default: the\n"
"                     model's, else mean)\n"
"  --normalize        L2-normalize the embedding (default: the model's\n"
"                     Normalize module; without -m: no)\n"
"  --no-normalize     do not normalize\n"
"  --dim N            keep the first N values, then L2-normalize\n"
"  --layer-norm       layer-normalize the pooled embedding (no affine,\n"
"                     eps 1e-5) before --dim: nomic's Matryoshka recipe\n"
"  --chunk W --late   late chunking (needs -m and the record's text): one\n"
"                     record per window of W content tokens, the mean of\n"
"                     their token embeddings (then Dense, Normalize), with\n"
"                     chunk, chunks and span ([start,end) code points)\n"
"  --overlap K        windows overlap by K tokens (0 <= K < W; default 0)\n"
"  --window-text slice|full|none\n"
"                     a window's text: its own slice (default), the whole\n"
"                     document's, or none (its span only)\n"
"  --group-by FIELD   read embedding instead: one record per run of\n"
"                     consecutive records with the same FIELD (e.g. id),\n"
"                     the mean of their embeddings, L2-normalized, and\n"
"                     chunks (how many); the run's first record's fields\n"
"  --b64              write embedding_b64 (base64 of little-endian float32)\n"
EMB_CLI_USAGE_COMMON
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model config, 4 write error,\n"
"5 an input file could not be read.\n";

enum { O_MODE = 1, O_NORM, O_NONORM, O_DIM, O_LN, O_GROUP };

static const emb_cli_opt opts[] = {
	{ "mode", 0, EMB_ARG_REQUIRED, O_MODE },
	{ "normalize", 0, EMB_ARG_NONE, O_NORM },
	{ "no-normalize", 0, EMB_ARG_NONE, O_NONORM },
	{ "dim", 0, EMB_ARG_REQUIRED, O_DIM },
	{ "layer-norm", 0, EMB_ARG_NONE, O_LN },
	{ "group-by", 0, EMB_ARG_REQUIRED, O_GROUP },
	{ NULL, 0, 0, 0 },
};

typedef struct ctx {
	emb_cli cli;
	unsigned modes;         /* 0: not given */
	int normalize;          /* -1: not given */
	int dim;
	int layer_norm;
	emb_pool_spec spec;
	emb_text_tok tt;        /* --late: the tokenizer */
	emb_late late;
	const char *group_by;   /* --group-by FIELD */
	emb_group group;
} ctx;

typedef struct out {
	float *v;
	int n;
} out;

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;

	switch (key) {
	case O_MODE:
		return emb_cli_pool_modes(&c->modes, arg, err);
	case O_NORM: c->normalize = 1; return 0;
	case O_NONORM: c->normalize = 0; return 0;
	case O_DIM: return emb_cli_dim(&c->dim, arg, err);
	case O_LN:
		c->layer_norm = 1;
		return 0;
	case O_GROUP:
		c->group_by = arg;
		return 0;
	}
	return -1;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	ctx *c = vc;
	out *o = r->user;
	float *tok;
	size_t rows, cols;
	int rc, pl;

	if (!o) {
		o = r->user = calloc(1, sizeof(*o));
		if (!o)
			return emb_err_set(err, "out of memory");
	}
	free(o->v);
	o->v = NULL;
	if (c->cli.late || c->group_by) {       /* done as it is written */
		r->cost = 1;
		return 0;
	}
	if (emb_record_get_floats(r->rec, "token_embeddings", &tok, &rows, &cols,
	                          err) < 0)
		return -1;
	if (c->spec.sm) {
		rc = emb_static_pool_record(&o->v, &o->n, &c->spec, r->rec, tok,
		                            rows, cols, err);
		free(tok);
		r->cost = rows + 1;
		return rc;
	}
	if (rows == 0 || cols == 0) {
		free(tok);
		return emb_err_set(err, "field 'token_embeddings' is empty");
	}
	if (rows > (1u << 30) || cols > (1u << 30)) {
		free(tok);
		return emb_err_set(err, "field 'token_embeddings' is too large");
	}
	if (emb_record_prompt_length(&pl, r->rec, err) < 0) {
		free(tok);
		return -1;
	}
	rc = emb_pool_apply(&o->v, &o->n, &c->spec, tok, (int)rows, (int)cols,
	                    pl, err);
	free(tok);
	if (rc < 0)
		return -1;
	r->cost = rows;
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop[] = {
		"token_embeddings", "token_embeddings_b64", NULL };
	ctx *c = vc;
	out *o = r->user;

	if (c->cli.late)
		return emb_late_emit_record(b, &c->late, r->rec, c->cli.b64,
		                            &r->warn, err);
	if (c->group_by)
		return emb_group_add(&c->group, b, r->rec, c->cli.b64, err);
	emb_out_begin(b, r->rec, drop);
	emb_out_floats(b, "embedding", o->v, (size_t)o->n, c->cli.b64);
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	out *o = u;

	(void)vc;
	free(o->v);
	free(o);
}

static int finish(void *vc, emb_buf *b, emb_err *err)
{
	ctx *c = vc;

	return emb_group_finish(&c->group, b, c->cli.b64, err);
}

/* a static model in DIR: its own mean and Normalize (kept for the
 * run); 0 when DIR holds none */
static int static_spec(ctx *c, const char *dir, const emb_st_config *st)
{
	emb_static *sm;
	emb_err err;
	int k = emb_static_detect(dir, &err);

	if (k == EMB_STATIC_NONE)
		return 0;
	if (k < 0 || emb_static_load(&sm, dir, &err) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (c->cli.late || (c->modes && c->modes != EMB_POOL_MEAN))
		emb_cli_usage_error(&c->cli, "a static embedding model averages its tokens: no --late, no --mode but mean");
	emb_pool_spec_static(&c->spec, sm, st, c->normalize, c->dim);
	return 1;
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, NULL, emit, free_user, 0, 1 };
	char *dir;

	c.cli.prog = "emb-pool";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_B64 | EMB_CLI_MODEL | EMB_CLI_CHUNK | EMB_CLI_LATE;
	c.normalize = -1;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	c.spec.modes = EMB_POOL_MEAN;
	c.spec.include_prompt = 1;
	dir = emb_cli_model_dir(&c.cli, c.cli.late);
	if (dir) {
		emb_st_config st;
		emb_err err;
		err.msg[0] = 0;
		int hidden = 0;
		if (emb_st_config_load(&st, dir, &err) < 0 ||
		    emb_dense_pack(st.dense, st.n_dense, &err) < 0 ||
		    emb_st_config_hidden(&hidden, dir, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (!static_spec(&c, dir, &st)) {
			if (st.pool_modes)
				c.spec.modes = st.pool_modes;
			c.spec.normalize = st.normalize;
			c.spec.include_prompt = st.include_prompt;
			c.spec.in_dim = st.pool_dim;
			/* the Dense weights stay for the run */
			c.spec.dense = st.dense;
			c.spec.n_dense = st.n_dense;
			if (c.modes)
				c.spec.modes = c.modes;
			c.spec.dim = c.dim;
			if (emb_pool_spec_check(&c.spec, hidden, st.pool_dim, dir,
			                        &err) < 0)
				emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		}
		st.dense = NULL;
		st.n_dense = 0;
		emb_st_config_release(&st);
		if (c.cli.late)
			emb_text_tok_setup(&c.tt, &c.cli, dir, 0);
		free(dir);
	}
	if (c.modes)
		c.spec.modes = c.modes;
	if (c.normalize >= 0)
		c.spec.normalize = c.normalize;
	c.spec.dim = c.dim;
	c.spec.layer_norm = c.layer_norm;
	if (c.group_by) {
		int status;
		if (c.cli.late || c.cli.model || c.modes || c.normalize >= 0 ||
		    c.dim || c.layer_norm)
			emb_cli_usage_error(&c.cli, "--group-by takes no -m, --late, --mode, --normalize, --no-normalize, --dim or --layer-norm");
		emb_group_init(&c.group, c.group_by);
		c.cli.finish = finish;
		status = emb_cli_run(&c.cli, &ops, &c);
		emb_group_release(&c.group);
		return status;
	}
	if (c.cli.late) {
		emb_err err;
		int status;
		err.msg[0] = 0;
		if (emb_late_init(&c.late, &c.cli, &c.tt, &c.spec, &err) < 0)
			emb_cli_usage_error(&c.cli, "%s", err.msg);
		status = emb_cli_run(&c.cli, &ops, &c);
		emb_text_tok_release(&c.tt);
		return status;
	}
	return emb_cli_run(&c.cli, &ops, &c);
}
