/* emb-encode - input_ids (or text) -> token_embeddings or embedding */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"
#include "tool/mask.h"
#include "tool/modcheck.h"

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
"                     token embeddings (then Dense, Normalize)\n"
"  -j, --threads N    threads (default: all online cores)\n"
"  --batch-tokens N   tokens per forward pass (default 8192)\n"
"  --weights int8     quantize the linear weights to int8 at load (W8)\n"
"  --act int8         int8 activations too (W8A8; needs int8 weights: an\n"
"                     emb-quantize checkpoint or --weights int8)\n"
"  --compute fp32|bf16\n"
"                     arithmetic of the linear layers (default fp32; bf16:\n"
"                     bf16 weights and products, fp32 sums; not with --act)\n"
"  --b64              write vectors as KEY_b64 (base64 little-endian float32)\n"
"When tokenizing text (as emb-tokenize; input_ids, token_type_ids,\n"
"truncated and prompt_length are written too):\n"
"  --max-length N, --no-truncate, --prompt STR, --prompt-name NAME,\n"
"  --no-prompt, --tokens, --raw (input lines are plain text)\n"
"  --errors=skip|emit on a bad record: skip it, or write {\"id\",\"error\"}\n"
"  --strict           stop at the first bad record\n"
"  --max-line BYTES   longest accepted line (default 64M)\n"
"  --fields LIST      write only these members of each output record\n"
"                     (comma-separated; NAME also selects NAME_b64)\n"
"  --drop LIST        write every member but these\n"
"  --progress[=always], --no-progress\n"
"                     status on stderr when it is a terminal (default: only\n"
"                     when stdout is not a pipe); always: even when not\n"
"  -h, --help         this text\n"
"  --version          print the version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model load, 4 write error.\n";

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
	int splade, terms;      /* --pool=splade, --terms */
	int w8, a8;             /* --weights int8, --act int8 */
	long long top_k;        /* --top-k, 0: all */
	emb_model *m;
	int hidden, maxpos, vocab, types;
	emb_text_tok tt;        /* tt.tok NULL: no tokenizer files */
	emb_pool_spec spec;
	emb_late late;          /* --late */
	float *scratch;
	size_t scratch_cap;
	emb_seq *seqs;
	int seqs_cap;
} ctx;

typedef struct out {
	int32_t *ids, *types;   /* new */
	size_t n;
	int has_types;
	int tokenized;
	size_t truncated, prompt_length;
	int skip;               /* prompt tokens for pooling */
	float *v;               /* (n, hidden) or pooled (vn) or sparse
	                           values (vn) */
	int32_t *sp_idx;        /* sparse indices (vn) */
	size_t vcap;
	int vn;
} out;

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;
	long long v;

	switch (key) {
	case O_POOL:
		c->pool = 1;
		if (arg && !strcmp(arg, "splade")) {
			c->splade = 1;
			return 0;
		}
		if (arg && !(c->modes = emb_pool_modes_parse(arg)))
			return emb_err_set(err, "unknown pooling mode '%s' (cls, mean, max, mean_sqrt_len, weightedmean, lasttoken)",
			                   arg);
		return 0;
	case O_TOPK:
		if (emb_cli_parse_int(&c->top_k, arg, 1, 1LL << 30, 0) < 0)
			return emb_err_set(err, "--top-k must be a positive integer, not '%s'",
			                   arg);
		return 0;
	case O_TERMS: c->terms = 1; return 0;
	case O_WEIGHTS:
		if (strcmp(arg, "int8"))
			return emb_err_set(err, "--weights: '%s' is not int8", arg);
		c->w8 = 1;
		return 0;
	case O_ACT:
		if (strcmp(arg, "int8"))
			return emb_err_set(err, "--act: '%s' is not int8", arg);
		c->a8 = 1;
		return 0;
	case O_NORM: c->normalize = 1; return 0;
	case O_NONORM: c->normalize = 0; return 0;
	case O_DIM:
		if (emb_cli_parse_int(&v, arg, 1, 1 << 30, 0) < 0)
			return emb_err_set(err, "--dim must be a positive integer, not '%s'",
			                   arg);
		c->dim = (int)v;
		return 0;
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
	out *o = r->user;
	size_t i, nt;

	if (!o) {
		o = r->user = calloc(1, sizeof(*o));
		if (!o)
			return emb_err_set(err, "out of memory");
	}
	free(o->ids);
	free(o->types);
	o->ids = o->types = NULL;
	o->n = 0;
	o->has_types = o->tokenized = 0;
	o->truncated = o->prompt_length = 0;
	if (emb_record_check_input(r->rec, c->tt.tok != NULL, err) < 0)
		return -1;
	if (emb_record_has(r->rec, "input_ids") || !c->tt.tok ||
	    !emb_record_has(r->rec, "text")) {
		if (emb_record_get_int32s(r->rec, "input_ids", &o->ids, &o->n,
		                          err) < 0)
			return -1;
		if (emb_record_has(r->rec, "token_type_ids")) {
			if (emb_record_get_int32s(r->rec, "token_type_ids",
			                          &o->types, &nt, err) < 0)
				return -1;
			if (nt != o->n)
				return emb_err_set(err, "field 'token_type_ids' has %zu values, 'input_ids' has %zu",
				                   nt, o->n);
			o->has_types = 1;
		}
		if (emb_record_apply_mask(r->rec, &o->n, err) < 0)
			return -1;
		if (emb_record_prompt_length(&o->skip, r->rec, err) < 0)
			return -1;
	} else {
		emb_encoding enc;
		emb_encoding_init(&enc);
		if (emb_text_tok_record(&enc, &o->prompt_length, &c->tt, r->rec,
		                        err) < 0) {
			emb_encoding_release(&enc);
			return -1;
		}
		o->n = enc.len;
		o->truncated = enc.truncated;
		o->ids = malloc((enc.len + 1) * sizeof(int32_t));
		o->types = malloc((enc.len + 1) * sizeof(int32_t));
		if (!o->ids || !o->types) {
			emb_encoding_release(&enc);
			return emb_err_set(err, "out of memory");
		}
		memcpy(o->ids, enc.ids, enc.len * sizeof(int32_t));
		memcpy(o->types, enc.type_ids, enc.len * sizeof(int32_t));
		o->has_types = 1;
		o->tokenized = 1;
		o->skip = (int)o->prompt_length;
		emb_encoding_release(&enc);
	}
	if (o->n == 0)
		return emb_err_set(err, "field 'input_ids' is empty");
	if (c->maxpos > 0 && o->n > (size_t)c->maxpos)
		return emb_err_set(err, "field 'input_ids' has %zu tokens, more than the model's maximum of %d",
		                   o->n, c->maxpos);
	for (i = 0; i < o->n; i++)
		if (o->ids[i] < 0 || (c->vocab > 0 && o->ids[i] >= c->vocab))
			return emb_err_set(err, "field 'input_ids': id %d at position %zu is out of range (vocabulary size %d)",
			                   (int)o->ids[i], i, c->vocab);
	for (i = 0; o->has_types && i < o->n; i++)
		if (o->types[i] < 0 || (c->types > 0 && o->types[i] >= c->types))
			return emb_err_set(err, "field 'token_type_ids': %d at position %zu is out of range (type vocabulary size %d)",
			                   (int)o->types[i], i, c->types);
	r->cost = o->n;
	return 0;
}

static int all_finite(const float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return 0;
	return 1;
}

/* w (vocab) -> o->sp_idx, o->v: the nonzeros (top_k largest), ascending */
static int sparse_of(out *o, const float *w, int vocab, long long top_k,
                     emb_err *err)
{
	free(o->v);
	free(o->sp_idx);
	o->vcap = 0;
	o->v = malloc(((size_t)vocab + 1) * sizeof(float));
	o->sp_idx = malloc(((size_t)vocab + 1) * sizeof(int32_t));
	if (!o->v || !o->sp_idx)
		return emb_err_set(err, "out of memory");
	o->vn = (int)emb_sparse_select(o->sp_idx, o->v, w, vocab,
	                               top_k > 0 ? (size_t)top_k : 0);
	return 0;
}

/* SPLADE: seqs (n) -> sparse vectors, SPLADE_SEQS sequences a forward */
#define SPLADE_SEQS 32

static int run_splade(ctx *c, emb_cli_rec **rs, int n, emb_err *err)
{
	size_t V = (size_t)c->vocab;

	if (SPLADE_SEQS * V > c->scratch_cap) {
		float *p = realloc(c->scratch, SPLADE_SEQS * V * sizeof(float));
		if (!p)
			return emb_err_set(err, "out of memory");
		c->scratch = p;
		c->scratch_cap = SPLADE_SEQS * V;
	}
	for (int s0 = 0; s0 < n; s0 += SPLADE_SEQS) {
		int k = n - s0 < SPLADE_SEQS ? n - s0 : SPLADE_SEQS;
		// seqs -> scratch (k, vocab)
		if (emb_model_forward_head(c->m, c->scratch, EMB_OUT_SPLADE,
		                           c->seqs + s0, k, err) < 0)
			return -1;
		for (int i = 0; i < k; i++) {
			out *o = rs[s0 + i]->user;
			const float *w = c->scratch + (size_t)i * V;
			if (!all_finite(w, V)) {
				rs[s0 + i]->bad = 1;
				emb_err_set(&rs[s0 + i]->err, "the model output is not finite (NaN or infinity)");
				continue;
			}
			if (sparse_of(o, w, c->vocab, c->top_k, err) < 0)
				return -1;
		}
	}
	return 0;
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	ctx *c = vc;
	size_t total = 0, off = 0, h = (size_t)c->hidden;
	int i;

	if (n > c->seqs_cap) {
		emb_seq *s = realloc(c->seqs, (size_t)n * sizeof(*s));
		if (!s)
			return emb_err_set(err, "out of memory");
		c->seqs = s;
		c->seqs_cap = n;
	}
	for (i = 0; i < n; i++) {
		out *o = rs[i]->user;
		c->seqs[i].ids = o->ids;
		c->seqs[i].type_ids = o->has_types ? o->types : NULL;
		c->seqs[i].len = (int)o->n;
		total += o->n;
	}
	if (c->splade)
		return run_splade(c, rs, n, err);
	if (total * h > c->scratch_cap) {
		float *p = realloc(c->scratch, total * h * sizeof(float));
		if (!p)
			return emb_err_set(err, "out of memory");
		c->scratch = p;
		c->scratch_cap = total * h;
	}
	// forward: seqs -> scratch (total tokens, hidden)
	if (emb_model_forward(c->m, c->scratch, c->seqs, n, err) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		out *o = rs[i]->user;
		const float *tok = c->scratch + off * h;
		off += o->n;
		if (c->pool && !c->cli.late) {
			free(o->v);
			o->v = NULL;
			o->vcap = 0;
			if (emb_pool_apply(&o->v, &o->vn, &c->spec, tok, (int)o->n,
			                   c->hidden, o->skip, err) < 0)
				return -1;
		} else {
			if (o->n * h > o->vcap) {
				float *p = realloc(o->v, o->n * h * sizeof(float));
				if (!p)
					return emb_err_set(err, "out of memory");
				o->v = p;
				o->vcap = o->n * h;
			}
			memcpy(o->v, tok, o->n * h * sizeof(float));
		}
		if (!all_finite(o->v, c->pool && !c->cli.late ? (size_t)o->vn :
		                o->n * h)) {
			rs[i]->bad = 1;
			emb_err_set(&rs[i]->err, "the model output is not finite (NaN or infinity)");
		}
	}
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop_tok[] = {
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", NULL };
	ctx *c = vc;
	out *o = r->user;

	if (c->cli.late)
		return emb_late_emit(b, &c->late, r->rec, o->ids, o->n, o->v,
		                     c->hidden, c->cli.b64, err);
	emb_out_begin(b, r->rec, o->tokenized ? drop_tok : NULL);
	if (o->tokenized) {
		emb_out_int32s(b, "input_ids", o->ids, o->n);
		emb_out_int32s(b, "token_type_ids", o->types, o->n);
		if (c->cli.tokens) {
			const char **t = malloc((o->n + 1) * sizeof(*t));
			size_t i;
			if (!t)
				return emb_err_set(err, "out of memory");
			for (i = 0; i < o->n; i++)
				t[i] = emb_tokenizer_id_to_token(c->tt.tok, o->ids[i]);
			emb_out_strings(b, "tokens", t, o->n);
			free(t);
		}
		if (o->truncated > 0)
			emb_out_int(b, "truncated", (long long)o->truncated);
		if (o->prompt_length > 0)
			emb_out_int(b, "prompt_length", (long long)o->prompt_length);
	}
	if (c->splade) {
		if (emb_out_sparse(b, "sparse", o->sp_idx, o->v, (size_t)o->vn,
		                   c->terms ? c->tt.tok : NULL) < 0)
			return emb_err_set(err, "out of memory");
	} else if (c->pool)
		emb_out_floats(b, "embedding", o->v, (size_t)o->vn, c->cli.b64);
	else
		emb_out_matrix(b, "token_embeddings", o->v, o->n,
		               (size_t)c->hidden, c->cli.b64);
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	out *o = u;

	(void)vc;
	free(o->sp_idx);
	free(o->ids);
	free(o->types);
	free(o->v);
	free(o);
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, run, emit, free_user, 8192, 4096 };
	emb_model_opts mo;
	emb_err err;
	char *dir;
	int status, pd;

	c.cli.prog = "emb-encode";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_RAW | EMB_CLI_B64 | EMB_CLI_MODEL | EMB_CLI_TEXT |
	               EMB_CLI_CHUNK | EMB_CLI_LATE | EMB_CLI_COMPUTE;
	c.normalize = -1;
	c.batch_tokens = 8192;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	if (c.dim && !c.pool)
		emb_cli_usage_error(&c.cli, "--dim needs --pool");
	if ((c.top_k || c.terms) && !c.splade)
		emb_cli_usage_error(&c.cli, "--top-k and --terms need --pool=splade");
	if (c.splade && (c.dim || c.normalize >= 0))
		emb_cli_usage_error(&c.cli, "--pool=splade takes no --dim, --normalize or --no-normalize");
	if (c.cli.late && (!c.pool || c.splade || (c.modes && c.modes != EMB_POOL_MEAN)))
		emb_cli_usage_error(&c.cli, "--late needs --pool (each window is the mean of its token embeddings)");
	if (c.cli.bf16 && c.a8)
		emb_cli_usage_error(&c.cli, "--compute bf16 and --act int8 exclude each other");
	dir = emb_cli_model_dir(&c.cli, 1);
	err.msg[0] = 0;
	memset(&mo, 0, sizeof(mo));
	mo.threads = c.threads;
	mo.weights_int8 = c.w8;
	mo.act_int8 = c.a8;
	mo.compute_bf16 = c.cli.bf16;
	if (emb_model_load(&c.m, dir, &mo, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (c.splade && emb_model_head(c.m) != EMB_HEAD_MLM)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s: --pool=splade needs a masked-LM model (*ForMaskedLM), not %s",
		            dir, emb_model_arch(c.m));
	c.hidden = emb_model_hidden_size(c.m);
	c.maxpos = emb_model_max_positions(c.m);
	c.vocab = emb_model_vocab_size(c.m);
	c.types = emb_model_type_vocab_size(c.m);
	if (emb_tokenizer_exists(dir)) {
		emb_text_tok_setup(&c.tt, &c.cli, dir, c.maxpos);
	} else if (emb_st_config_load(&c.tt.st, dir, &err) < 0) {
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	}
	emb_pool_spec_model(&c.spec, &c.tt.st, c.normalize, c.dim);
	if (c.modes)
		c.spec.modes = c.modes;
	pd = emb_pool_spec_dim(&c.spec, c.hidden);
	if (c.splade) {
		/* load the head now: missing head weights are a load error */
		if (emb_model_head_load(c.m, EMB_OUT_SPLADE, &err) < 0)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
		if (c.terms && !c.tt.tok)
			emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s: --terms needs the tokenizer files", dir);
	}
	if (c.pool && !c.splade &&
	    emb_pool_spec_check(&c.spec, c.hidden, c.tt.st.pool_dim, dir, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	if (c.pool && !c.splade && c.dim > pd)
		emb_cli_usage_error(&c.cli, "--dim %d is larger than the embedding dimension %d",
		                    c.dim, pd);
	if (c.cli.late && emb_late_init(&c.late, &c.cli, &c.tt, &c.spec, &err) < 0)
		emb_cli_die(&c.cli, EMB_EXIT_MODEL, "%s", err.msg);
	ops.batch_cost = (size_t)c.batch_tokens;
	free(dir);
	status = emb_cli_run(&c.cli, &ops, &c);
	emb_model_free(c.m);
	if (c.tt.tok)
		emb_text_tok_release(&c.tt);
	else
		emb_st_config_release(&c.tt.st);
	free(c.scratch);
	free(c.seqs);
	return status;
}
