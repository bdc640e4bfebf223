/* emb-rerank - cross-encoder scores and rankings; ColBERT MaxSim */
#include <stdlib.h>

#include "tool/emb-tool.h"

static const char usage[] =
"usage: emb-rerank -m MODEL [options] [FILE...]\n"
"       emb-rerank --maxsim --query QFILE [options] [FILE...]\n"
"Cross-encoder (a *ForSequenceClassification model) over each JSON line:\n"
"  {\"query\": Q, \"documents\": [D...]}  adds results: [{\"index\", \"score\"}]\n"
"                       sorted best first (score of label --label); a\n"
"                       document is a string or an object {\"text\", ...}\n"
"                       whose other members (\"id\"...) go into its result\n"
"  {\"text\": Q, \"results\": [{\"id\"...}...]}  emb-search's output, with\n"
"                       --texts: its results reranked, their texts looked\n"
"                       up by id (a window's: the slice its span says)\n"
"  {\"text\": A, \"text_pair\": B}        adds scores: one per label (input_ids\n"
"                       and token_type_ids are used instead when present)\n"
"  -m, --model MODEL    model directory or ORG/NAME[@REV]\n"
"  --activation none|sigmoid|softmax\n"
"                       applied to the logits (default: as\n"
"                       sentence-transformers' CrossEncoder picks it, see\n"
"                       emb-rerank(1): the declared activation_fn, else\n"
"                       sigmoid for one label and none for several)\n"
"  --top-k K            keep the K best results\n"
"  --texts FILE         JSONL records {\"id\", \"text\"}: the documents of\n"
"                       emb-search results records\n"
"  --return-documents   add \"document\" to every result\n"
"  --label N            label ranked in query mode (default 0)\n"
"  --logits             also write the raw logits (pair records)\n"
"  -j, --threads N      threads (default: all online cores)\n"
"  --batch-tokens N     tokens per forward pass (default 4096)\n"
"  --compute MODE       precision of the linear layers: fp32 (default), bf16,\n"
"                       w8, w8a8, w8a8-smooth (see emb-encode --help)\n"
"  --max-length N, --no-truncate\n"
"                       pair truncation (default: the model's maximum)\n"
"Late interaction (no model needed):\n"
"  --maxsim             score token_embeddings records against every query\n"
"                       in QFILE: adds scores, one per query, each the sum\n"
"                       over query tokens of the max cosine over the\n"
"                       record's tokens\n"
"  --query QFILE        token_embeddings records of the queries\n"
"  --skip-special       leave out special tokens (needs -m for the\n"
"                       tokenizer and input_ids in the records)\n"
"  --skip-prefix[=N]    leave out the first N query tokens (default: each\n"
"                       query's prompt_length)\n"
"Common: --errors=skip|emit, --strict, --max-line BYTES, --fields LIST,\n"
"  --drop LIST, --progress,\n""  --no-progress, -h/--help, --version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model load, 4 write error,\n"
"5 an input file (or --texts, --query) could not be read.\n";

enum { O_ACT = 1, O_TOPK, O_RETDOCS, O_LABEL, O_LOGITS, O_THREADS, O_BATCH,
       O_MAXSIM, O_QUERY, O_SKIPSPECIAL, O_SKIPPREFIX, O_TEXTS };

static const emb_cli_opt opts[] = {
	{ "activation", 0, EMB_ARG_REQUIRED, O_ACT },
	{ "top-k", 0, EMB_ARG_REQUIRED, O_TOPK },
	{ "return-documents", 0, EMB_ARG_NONE, O_RETDOCS },
	{ "label", 0, EMB_ARG_REQUIRED, O_LABEL },
	{ "logits", 0, EMB_ARG_NONE, O_LOGITS },
	{ "threads", 'j', EMB_ARG_REQUIRED, O_THREADS },
	{ "batch-tokens", 0, EMB_ARG_REQUIRED, O_BATCH },
	{ "maxsim", 0, EMB_ARG_NONE, O_MAXSIM },
	{ "query", 0, EMB_ARG_REQUIRED, O_QUERY },
	{ "skip-special", 0, EMB_ARG_NONE, O_SKIPSPECIAL },
	{ "skip-prefix", 0, EMB_ARG_OPTIONAL, O_SKIPPREFIX },
	{ "texts", 0, EMB_ARG_REQUIRED, O_TEXTS },
	{ NULL, 0, 0, 0 },
};

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	emb_rerank *c = vc;
	long long v;

	switch (key) {
	case O_ACT:
		if ((c->act = emb_activation_parse(arg)) < 0)
			return emb_err_set(err, "unknown activation '%s' (none, "
			                   "sigmoid, softmax)", arg);
		return 0;
	case O_TOPK:
		if (emb_cli_parse_int(&c->top_k, arg, 1, 1LL << 40, 0) < 0)
			return emb_err_set(err, "--top-k must be a positive integer, "
			                   "not '%s'", arg);
		return 0;
	case O_RETDOCS: c->return_docs = 1; return 0;
	case O_TEXTS: c->texts_file = arg; return 0;
	case O_LABEL:
		if (emb_cli_parse_int(&v, arg, 0, 1 << 20, 0) < 0)
			return emb_err_set(err, "--label must be an integer >= 0, "
			                   "not '%s'", arg);
		c->label = (int)v;
		return 0;
	case O_LOGITS: c->logits = 1; return 0;
	case O_THREADS:
		if (emb_cli_parse_int(&v, arg, 1, 4096, 0) < 0)
			return emb_err_set(err, "-j must be a number of threads from 1 "
			                   "to 4096, not '%s'", arg);
		c->threads = (int)v;
		return 0;
	case O_BATCH:
		if (emb_cli_parse_int(&c->batch_tokens, arg, 1, 1LL << 30, 1) < 0)
			return emb_err_set(err, "--batch-tokens must be a positive "
			                   "integer, not '%s'", arg);
		return 0;
	case O_MAXSIM: c->maxsim = 1; return 0;
	case O_QUERY: c->query_file = arg; return 0;
	case O_SKIPSPECIAL: c->skip_special = 1; return 0;
	case O_SKIPPREFIX:
		c->skip_prefix = -1;
		if (arg) {
			if (emb_cli_parse_int(&v, arg, 0, 1 << 30, 0) < 0)
				return emb_err_set(err, "--skip-prefix must be an integer "
				                   ">= 0, not '%s'", arg);
			c->skip_prefix = (int)v;
		}
		return 0;
	}
	return -1;
}

/* the driver's state: the shared options and the reranker's */
typedef struct ctx {
	emb_rerank r;           /* first: option() gets it as its context */
	emb_cli cli;
} ctx;

int main(int argc, char **argv)
{
	static ctx c;
	emb_err err;
	char *dir = NULL;
	int status;

	c.cli.prog = "emb-rerank";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_MODEL | EMB_CLI_TEXT | EMB_CLI_COMPUTE;
	c.r.act = -1;
	c.r.skip_prefix = -2;
	c.r.batch_tokens = EMB_BATCH_TOKENS;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c.r);
	c.r.max_line = c.cli.max_line;
	err.msg[0] = 0;
	if (c.r.maxsim) {
		if (!c.r.query_file)
			emb_cli_usage_error(&c.cli, "--maxsim needs --query QFILE");
		if (c.r.skip_special && !c.cli.model)
			emb_cli_usage_error(&c.cli, "--skip-special needs -m MODEL "
			                    "(for its special tokens)");
		emb_cli_need_file(&c.cli, c.r.query_file, 1);
		if (c.r.skip_special)
			dir = emb_cli_model_dir(&c.cli, 1);
		if (emb_rerank_maxsim_setup(&c.r, dir, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		free(dir);
		status = emb_cli_run(&c.cli, &emb_rerank_maxsim_ops, &c.r);
		emb_rerank_release(&c.r);
		return status;
	}
	if (c.r.query_file || c.r.skip_special || c.r.skip_prefix != -2)
		emb_cli_usage_error(&c.cli, "--query, --skip-special and "
		                    "--skip-prefix need --maxsim");
	emb_cli_need_file(&c.cli, c.r.texts_file, 1);
	dir = emb_cli_model_dir(&c.cli, 1);
	if (emb_rerank_setup(&c.r, &c.cli, dir, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	free(dir);
	{
		emb_cli_ops ops = emb_rerank_ops;
		ops.batch_cost = (size_t)c.r.batch_tokens;
		status = emb_cli_run(&c.cli, &ops, &c.r);
	}
	emb_rerank_release(&c.r);
	return status;
}
