/* emb-tokenize - text -> input_ids, token_type_ids (JSONL filter) */
#include <stdlib.h>
#include <string.h>

#include "tool/emb-tool.h"

static const char usage[] =
"usage: emb-tokenize -m MODEL [options] [FILE...]\n"
"Reads text (and text_pair) from each JSON line and adds input_ids,\n"
"token_type_ids, truncated (tokens dropped, when any) and prompt_length\n"
"(when a prompt was applied); every other field passes through unchanged.\n"
"  -m, --model MODEL  model directory or ORG/NAME[@REV] in the Hugging Face\n"
"                     cache (only the tokenizer files are needed)\n"
"  --max-length N     truncate to N tokens including specials (default:\n"
"                     the model's max_seq_length)\n"
"  --no-truncate      do not truncate\n"
"  --prompt STR       prepend STR to text\n"
"  --prompt-name NAME prepend the model's prompt NAME\n"
"  --no-prompt        ignore the model's default prompt\n"
"  --tokens           also write the token strings as tokens\n"
"  --chunk W          long documents: one record per window of W content\n"
"                     tokens (no specials, no prompt), with chunk, chunks\n"
"                     and span ([start,end) code points of text); nothing\n"
"                     is truncated; pairs are an error\n"
"  --overlap K        windows overlap by K tokens (0 <= K < W; default 0)\n"
"  --window-text slice|full|none\n"
"                     a window's text: its own slice (default), the whole\n"
"                     document's, or none (its span only)\n"
"  --offsets          also write offsets: [start,end) of each token in\n"
"                     code points of its text (text_pair for the second\n"
"                     sequence; [0,0] for special tokens)\n"
"  --raw              input lines are plain text, read as {\"id\": N,\n"
"                     \"text\": LINE}, N the line number (over every FILE)\n"
EMB_CLI_USAGE_COMMON
"Exit: 0 ok, 1 some record failed, 2 usage, 3 tokenizer load, 4 write error,\n"
"5 an input file could not be read.\n";

typedef struct ctx {
	emb_cli cli;
	emb_text_tok tt;
	int offsets;
} ctx;

enum { OPT_OFFSETS = 1 };

static int handle(void *vc, int key, const char *arg, emb_err *err)
{
	ctx *c = vc;

	(void)arg;
	(void)err;
	if (key == OPT_OFFSETS)
		c->offsets = 1;
	return 0;
}

/* "offsets": [[s,e],...] */
static int out_offsets(emb_buf *b, const emb_encoding *enc, emb_err *err)
{
	size_t i, n = 0, cap = 24 * enc->len + 8;
	char *s = malloc(cap);

	if (!s)
		return emb_err_set(err, "out of memory");
	s[n++] = '[';
	for (i = 0; i < enc->len; i++) {
		int32_t a = enc->offsets[2 * i], e = enc->offsets[2 * i + 1];
		if (enc->special[i] || a < 0 || e < 0)
			a = e = 0;
		n += (size_t)snprintf(s + n, cap - n, "%s[%d,%d]", i ? "," : "",
		                      a, e);
	}
	s[n++] = ']';
	emb_out_json(b, "offsets", s, n);
	free(s);
	return 0;
}

typedef struct out {
	emb_encoding enc;
	size_t prompt_length;
} out;

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	ctx *c = vc;
	out *o = r->user;

	if (!o) {
		o = r->user = calloc(1, sizeof(*o));
		if (!o)
			return emb_err_set(err, "out of memory");
		emb_encoding_init(&o->enc);
	}
	if (r->win) {           /* --chunk: the window's tokens */
		o->prompt_length = r->win->prompt_length;
		r->cost = r->win->enc.len;
		return 0;
	}
	if (emb_text_tok_record(&o->enc, &o->prompt_length, &c->tt, r->rec,
	                        err) < 0)
		return -1;
	r->cost = o->enc.len;
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop[] = {
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", "offsets", NULL };
	ctx *c = vc;
	out *o = r->user;
	const emb_encoding *enc = r->win ? &r->win->enc : &o->enc;

	if (!r->win)
		emb_out_begin(b, r->rec, drop);
	else if (emb_window_begin(b, r->win, 0, err) < 0)
		return -1;
	emb_out_int32s(b, "input_ids", enc->ids, enc->len);
	emb_out_int32s(b, "token_type_ids", enc->type_ids, enc->len);
	if (c->cli.tokens) {
		const char **t = malloc((enc->len + 1) * sizeof(*t));
		size_t i;
		if (!t)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < enc->len; i++)
			t[i] = emb_tokenizer_id_to_token(c->tt.tok, enc->ids[i]);
		emb_out_strings(b, "tokens", t, enc->len);
		free(t);
	}
	if (c->offsets && out_offsets(b, enc, err) < 0)
		return -1;
	if (enc->truncated > 0)
		emb_out_int(b, "truncated", (long long)enc->truncated);
	if (o->prompt_length > 0)
		emb_out_int(b, "prompt_length", (long long)o->prompt_length);
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	out *o = u;

	(void)vc;
	emb_encoding_release(&o->enc);
	free(o);
}

int main(int argc, char **argv)
{
	static ctx c;
	emb_cli_ops ops = { prepare, NULL, emit, free_user, 0, 1 };
	char *dir;
	int status;

	c.cli.prog = "emb-tokenize";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_RAW | EMB_CLI_MODEL | EMB_CLI_TEXT | EMB_CLI_CHUNK;
	c.cli.tok_only = 1;     /* modules.json is not needed */
	static const emb_cli_opt extra[] = {
		{ "offsets", 0, EMB_ARG_NONE, OPT_OFFSETS },
		{ NULL, 0, 0, 0 } };

	emb_cli_parse(&c.cli, argc, argv, extra, handle, &c);
	dir = emb_cli_model_dir(&c.cli, 1);
	emb_text_tok_setup(&c.tt, &c.cli, dir, 0);
	free(dir);
	status = emb_cli_run(&c.cli, &ops, &c);
	emb_text_tok_release(&c.tt);
	return status;
}
