/* emb-encode - input_ids (or text) -> token_embeddings or embedding */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"
#include "tool/encode.h"
#include "tool/modcheck.h"
#include "tool/static.h"

static const char usage[] =
"usage: emb-encode -m MODEL [options] [FILE...]\n"
"Reads input_ids (and token_type_ids) from each JSON line, or text (and\n"
"text_pair) when input_ids is absent, runs the model and writes\n"
"token_embeddings (one row per token); every other field passes through.\n"
"  -m, --model MODEL  model directory or ORG/NAME[@REV] in the Hugging Face\n"
"                     cache\n"
"  --pool[=MODE]      apply the model's Pooling (or MODE: cls, mean, max,\n"
"                     mean_sqrt_len, weightedmean, lasttoken) and Normalize\n"
"                     modules and write embedding instead\n"
"  --normalize, --no-normalize\n"
"                     override the model's Normalize module (with --pool)\n"
"  --dim N            keep the first N values, then L2-normalize (--pool)\n"
"  --pool=splade      masked-LM models: write sparse: {\"indices\": [...],\n"
"                     \"values\": [...]} (indices ascending), the max over\n"
"                     tokens of log(1 + relu(logits))\n"
"  --top-k K          keep the K largest sparse values (--pool=splade)\n"
"  --terms            sparse: write \"terms\" (vocabulary strings) instead\n"
"                     of \"indices\" (--pool=splade)\n"
"  --chunk W          long texts: one record per window of W content tokens\n"
"                     (no specials, no prompt), with chunk, chunks and span\n"
"                     ([start,end) code points of text); pairs are an error\n"
"  --overlap K        windows overlap by K tokens (0 <= K < W; default 0)\n"
"  --late             with --pool and --chunk: late chunking, one forward\n"
"                     pass over the text, each window the mean of its\n"
"                     token embeddings (then Dense, Normalize); reads up\n"
"                     to the model's positions (not max_seq_length) unless\n"
"                     --max-length; a cut document is a warning\n"
"  --window-text slice|full|none\n"
"                     a window's text: its own slice (default), the whole\n"
"                     document's, or none (its span only)\n"
"  -j, --threads N    threads (default: all online cores)\n"
"  --batch-tokens N   tokens per forward pass (default 4096)\n"
"  --compute MODE     precision of the linear layers: fp32 (default); bf16\n"
"                     (bf16 weights and products, fp32 sums); w8 (int8\n"
"                     weights at load); w8a8 (int8 activations too);\n"
"                     w8a8-smooth (W8A8 with activation outlier channels\n"
"                     moved into the weights, SmoothQuant)\n"
"  --weights int8, --act int8|int8-smooth\n"
"                     the older spelling of w8, w8a8, w8a8-smooth (--act\n"
"                     alone: over an emb-quantize int8 checkpoint)\n"
"  --b64              write vectors as KEY_b64 (base64 little-endian float32)\n"
"When tokenizing text (as emb-tokenize; input_ids, token_type_ids,\n"
"truncated and prompt_length are written too):\n"
"  --max-length N, --no-truncate, --prompt STR, --prompt-name NAME,\n"
"  --no-prompt, --tokens, --raw (input lines are plain text: {\"id\": N,\n"
"  \"text\": LINE}, N the line number over every FILE)\n"
"A static embedding model (a Model2Vec folder, or a sentence-transformers\n"
"StaticEmbedding module) is a token table averaged per text, hundreds of\n"
"times cheaper than a transformer: a first stage that shortlists\n"
"candidates for a reranker, or embeds a large corpus for deduplication\n"
"and clustering; --pool gives what its library's encode gives.\n"
EMB_CLI_USAGE_COMMON
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model load, 4 write error,\n"
"5 an input file could not be read.\n";

enum { O_POOL = 1, O_NORM, O_NONORM, O_DIM, O_THREADS, O_BATCH, O_TOPK,
       O_TERMS, O_WEIGHTS, O_ACT };

static const emb_cli_opt opts[] = {
	{ "pool", 0, EMB_ARG_OPTIONAL, O_POOL },
	{ "normalize", 0, EMB_ARG_NONE, O_NORM },
	{ "no-normalize", 0, EMB_ARG_NONE, O_NONORM },
	{ "dim", 0, EMB_ARG_REQUIRED, O_DIM },
	{ "threads", 'j', EMB_ARG_REQUIRED, O_THREADS },
	{ "batch-tokens", 0, EMB_ARG_REQUIRED, O_BATCH },
	{ "top-k", 0, EMB_ARG_REQUIRED, O_TOPK },
	{ "terms", 0, EMB_ARG_NONE, O_TERMS },
	{ "weights", 0, EMB_ARG_REQUIRED, O_WEIGHTS },
	{ "act", 0, EMB_ARG_REQUIRED, O_ACT },
	{ NULL, 0, 0, 0 },
};

typedef struct ctx {
	emb_cli cli;
	int pool;               /* --pool given */
	unsigned modes;         /* --pool=MODE, 0: the model's */
	int normalize;          /* -1: the model's */
	int dim, threads;
	long long batch_tokens;
	emb_encoder e;          /* e.splade, e.terms, e.top_k: options */
	emb_text_tok tt;        /* tt.tok NULL: no tokenizer files */
	emb_pool_spec spec;
	emb_late late;          /* --late */
	const char *dir;        /* the model's (borrowed) */
} ctx;

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	long long v;

	switch (key) {
	case O_POOL:
		c->pool = 1;
		if (arg && !strcmp(arg, "splade")) {
			c->e.splade = 1;
			return 0;
		}
		return arg ? emb_cli_pool_modes(&c->modes, arg, err) : 0;
	case O_TOPK:
		if (emb_cli_parse_int(&c->e.top_k, arg, 1, 1LL << 30, 0) < 0)
			return emb_err_set(err, "--top-k must be a positive integer, not '%s'",
			                   arg);
		return 0;
	case O_TERMS: c->e.terms = 1; return 0;
	case O_WEIGHTS:
		return emb_prec_parse(&c->cli.prec, "weights", arg, err);
	case O_ACT:
		return emb_prec_parse(&c->cli.prec, "act", arg, err);
	case O_NORM: c->normalize = 1; return 0;
	case O_NONORM: c->normalize = 0; return 0;
	case O_DIM: return emb_cli_dim(&c->dim, arg, err);
	case O_THREADS:
		if (emb_cli_parse_int(&v, arg, 1, 4096, 0) < 0)
			return emb_err_set(err, "-j must be a number of threads from 1 to 4096, not '%s'",
			                   arg);
		c->threads = (int)v;
		return 0;
	case O_BATCH:
		if (emb_cli_parse_int(&v, arg, 1, 1LL << 30, 1) < 0)
			return emb_err_set(err, "--batch-tokens must be a positive integer, not '%s'",
			                   arg);
		c->batch_tokens = v;
		return 0;
	}
	return -1;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	ctx *c = vc;
	emb_enc_rec *o = r->user;

	if (!o && !(o = r->user = calloc(1, sizeof(*o))))
		return emb_err_set(err, "out of memory");
	if (emb_encoder_prepare(&c->e, o, r->rec, r->win, err) < 0)
		return -1;
	r->cost = o->n;
	return 0;
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	return emb_encoder_run(&((ctx *)vc)->e, rs, n, err);
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	ctx *c = vc;
	emb_enc_rec *o = r->user;

	if (c->cli.late)
		return emb_late_emit(b, &c->late, r->rec, o->ids, o->n, o->v,
		                     c->e.hidden, c->cli.b64, &r->warn, err);
	return emb_encoder_emit(&c->e, b, r->rec, r->win, o, err);
}

static void free_user(void *vc, void *u)
{
	(void)vc;
	emb_enc_rec_free(u);
}

/* what the options ask of the model, before its tokenizer is looked at */
static void check_model(void *vc, emb_model *m)
{
	ctx *c = vc;

	if (c->e.splade && emb_model_head(m) != EMB_HEAD_MLM)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: --pool=splade needs a masked-LM model (*ForMaskedLM), not %s",
		            c->dir, emb_model_arch(m));
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, run, emit, free_user, EMB_BATCH_TOKENS,
	                     4096 };
	emb_model_opts mo;
	emb_model *m;
	emb_err err;
	char *dir;
	int status, pd, has_tok;

	c.cli.prog = "emb-encode";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_RAW | EMB_CLI_B64 | EMB_CLI_MODEL | EMB_CLI_TEXT |
	               EMB_CLI_CHUNK | EMB_CLI_LATE | EMB_CLI_COMPUTE;
	c.normalize = -1;
	c.batch_tokens = EMB_BATCH_TOKENS;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	if (c.dim && !c.pool)
		emb_cli_usage_error(&c.cli, "--dim needs --pool");
	if ((c.e.top_k || c.e.terms) && !c.e.splade)
		emb_cli_usage_error(&c.cli, "--top-k and --terms need --pool=splade");
	if (c.e.splade && (c.dim || c.normalize >= 0))
		emb_cli_usage_error(&c.cli, "--pool=splade takes no --dim, --normalize or --no-normalize");
	if (c.cli.late && (!c.pool || c.e.splade || (c.modes && c.modes != EMB_POOL_MEAN)))
		emb_cli_usage_error(&c.cli, "--late needs --pool (each window is the mean of its token embeddings)");
	if (emb_prec_check(&c.cli.prec, &err) < 0)
		emb_cli_usage_error(&c.cli, "%s", err.msg);
	dir = emb_cli_model_dir(&c.cli, 1);
	err.msg[0] = 0;
	if ((pd = emb_static_detect(dir, &err)) != EMB_STATIC_NONE) {
		emb_static_run so = { c.pool, c.modes, c.normalize, c.dim, c.threads };
		if (pd < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (c.e.splade || strcmp(emb_prec_name(&c.cli.prec), "fp32"))
			emb_cli_usage_error(&c.cli, "a static embedding model takes no --pool=splade, --weights, --act or --compute");
		if (c.cli.late)
			emb_cli_usage_error(&c.cli, "a static embedding model's token vectors do not depend on their context: --late would give what --chunk gives (use --chunk)");
		status = emb_static_encode(&c.cli, dir, &so);
		free(dir);
		return status;
	}
	memset(&mo, 0, sizeof(mo));
	mo.threads = c.threads;
	mo.prec = c.cli.prec;
	c.dir = dir;
	has_tok = emb_tokenizer_exists(dir);
	m = emb_cli_model_tok(has_tok ? &c.tt : NULL, &c.cli, dir, &mo,
	                      check_model, &c);
	emb_encoder_init(&c.e, m);
	c.e.tt = &c.tt;
	c.e.tokens = c.cli.tokens;
	c.e.b64 = c.cli.b64;
	c.e.spec = c.pool && !c.cli.late ? &c.spec : NULL;
	if (!has_tok && (emb_st_config_load(&c.tt.st, dir, &err) < 0 ||
	                 emb_dense_pack(c.tt.st.dense, c.tt.st.n_dense,
	                                &err) < 0))
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	emb_pool_spec_model(&c.spec, &c.tt.st, c.normalize, c.dim);
	if (c.modes)
		c.spec.modes = c.modes;
	pd = emb_pool_spec_dim(&c.spec, c.e.hidden);
	if (c.e.splade) {
		/* load the head now: missing head weights are a load error */
		if (emb_model_head_load(m, EMB_OUT_SPLADE, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (c.e.terms && !c.tt.tok)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s: --terms needs the tokenizer files", dir);
	}
	if (c.pool && !c.e.splade &&
	    emb_pool_spec_check(&c.spec, c.e.hidden, c.tt.st.pool_dim, dir, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (c.pool && !c.e.splade && c.dim > pd)
		emb_cli_usage_error(&c.cli, "--dim %d is larger than the embedding dimension %d",
		                    c.dim, pd);
	if (c.cli.late && emb_late_init(&c.late, &c.cli, &c.tt, &c.spec, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	ops.batch_cost = (size_t)c.batch_tokens;
	free(dir);
	c.dir = NULL;
	status = emb_cli_run(&c.cli, &ops, &c);
	emb_encoder_release(&c.e);
	if (m)
		emb_model_profile(m, stderr, "emb-encode: profile: ");
	emb_model_free(m);
	if (c.tt.tok)
		emb_text_tok_release(&c.tt);
	else
		emb_st_config_release(&c.tt.st);
	return status;
}
