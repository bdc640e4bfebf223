/* emb-pool - token_embeddings -> embedding (sentence-transformers Pooling) */
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"

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
"  --b64              write embedding_b64 (base64 of little-endian float32)\n"
"  --errors=skip|emit on a bad record: skip it, or write {\"id\",\"error\"}\n"
"  --strict           stop at the first bad record\n"
"  --max-line BYTES   longest accepted line (default 64M)\n"
"  --progress[=always], --no-progress\n"
"                     status on stderr when it is a terminal (default: only\n"
"                     when stdout is not a pipe); always: even when not\n"
"  -h, --help         this text\n"
"  --version          print the version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model config, 4 write error.\n";

enum { O_MODE = 1, O_NORM, O_NONORM, O_DIM, O_LN };

static const emb_cli_opt opts[] = {
	{ "mode", 0, EMB_ARG_REQUIRED, O_MODE },
	{ "normalize", 0, EMB_ARG_NONE, O_NORM },
	{ "no-normalize", 0, EMB_ARG_NONE, O_NONORM },
	{ "dim", 0, EMB_ARG_REQUIRED, O_DIM },
	{ "layer-norm", 0, EMB_ARG_NONE, O_LN },
	{ NULL, 0, 0, 0 },
};

typedef struct ctx {
	emb_cli cli;
	unsigned modes;         /* 0: not given */
	int normalize;          /* -1: not given */
	int dim;
	int layer_norm;
	emb_pool_spec spec;
} ctx;

typedef struct out {
	float *v;
	int n;
} out;

/* "cls", "mean,max": OR of the parts; 0 when any part is unknown */
static unsigned parse_modes(const char *s)
{
	unsigned m = 0, x;
	char part[64];

	while (*s) {
		size_t n = strcspn(s, ",+");
		if (n == 0 || n >= sizeof(part))
			return 0;
		memcpy(part, s, n);
		part[n] = 0;
		if (!(x = emb_pool_mode_parse(part)))
			return 0;
		m |= x;
		s += n;
		if (*s)
			s++;
	}
	return m;
}

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	long long v;

	switch (key) {
	case O_MODE:
		if (!(c->modes = parse_modes(arg)))
			return emb_err_set(err, "unknown pooling mode '%s' (cls, mean, max, mean_sqrt_len, weightedmean, lasttoken)",
			                   arg);
		return 0;
	case O_NORM: c->normalize = 1; return 0;
	case O_NONORM: c->normalize = 0; return 0;
	case O_DIM:
		if (emb_cli_parse_int(&v, arg, 1, 1 << 30, 0) < 0)
			return emb_err_set(err, "--dim must be a positive integer, not '%s'",
			                   arg);
		c->dim = (int)v;
		return 0;
	case O_LN:
		c->layer_norm = 1;
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
	if (emb_record_get_floats(r->rec, "token_embeddings", &tok, &rows, &cols,
	                          err) < 0)
		return -1;
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

	(void)err;
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

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, NULL, emit, free_user, 0, 1 };
	char *dir;

	c.cli.prog = "emb-pool";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_B64 | EMB_CLI_MODEL;
	c.normalize = -1;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	c.spec.modes = EMB_POOL_MEAN;
	c.spec.include_prompt = 1;
	dir = emb_cli_model_dir(&c.cli, 0);
	if (dir) {
		emb_st_config st;
		emb_err err;
		err.msg[0] = 0;
		if (emb_st_config_load(&st, dir, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (st.pool_modes)
			c.spec.modes = st.pool_modes;
		c.spec.normalize = st.normalize;
		c.spec.include_prompt = st.include_prompt;
		c.spec.in_dim = st.pool_dim;
		/* the Dense weights stay for the run */
		c.spec.dense = st.dense;
		c.spec.n_dense = st.n_dense;
		st.dense = NULL;
		st.n_dense = 0;
		emb_st_config_release(&st);
		free(dir);
	}
	if (c.modes)
		c.spec.modes = c.modes;
	if (c.normalize >= 0)
		c.spec.normalize = c.normalize;
	c.spec.dim = c.dim;
	c.spec.layer_norm = c.layer_norm;
	return emb_cli_run(&c.cli, &ops, &c);
}
