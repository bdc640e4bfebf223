/*
 * cli.c - the command line of cmd/emb-*.c: the option parser (the common options and the command's own), and the
 * text tokenization (prompts, default max length) that emb-tokenize and
 * emb-encode share.  The messages and exits are msg.c, the record loop
 * run.c, progress progress.c, the signals signals.c (their shared
 * parts: tool/driver.h).
 */
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/emb-tool.h"
#include "tool/driver.h"
#include "base/threadpool.h"

#define DEFAULT_MAX_LINE ((size_t)64 << 20)

int emb_cli_parse_int(long long *out, const char *s, long long min,
                      long long max, int suffix)
{
	char *end;
	long long v, mul = 1;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (suffix && *end) {
		switch (*end) {
		case 'k': case 'K': mul = 1LL << 10; break;
		case 'm': case 'M': mul = 1LL << 20; break;
		case 'g': case 'G': mul = 1LL << 30; break;
		default: return -1;
		}
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*end)
		return -1;
	if (v > 0 && v > LLONG_MAX / mul)
		return -1;
	v *= mul;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int emb_cli_pool_modes(unsigned *modes, const char *arg, emb_err *err)
{
	if (!(*modes = emb_pool_modes_parse(arg)))
		return emb_err_set(err, "unknown pooling mode '%s' (cls, mean, max, mean_sqrt_len, weightedmean, lasttoken)",
		                   arg);
	return 0;
}

int emb_cli_dim(int *dim, const char *arg, emb_err *err)
{
	long long v;

	if (emb_cli_parse_int(&v, arg, 1, 1 << 30, 0) < 0)
		return emb_err_set(err, "--dim must be a positive integer, not '%s'",
		                   arg);
	*dim = (int)v;
	return 0;
}


/* ------------------------------------------------------------------ */
/* options                                                             */

enum {
	K_HELP = 1000, K_VERSION, K_ERRORS, K_STRICT, K_MAXLINE, K_PROGRESS,
	K_NOPROGRESS, K_RAW, K_B64, K_MODEL, K_MAXLEN, K_NOTRUNC, K_PROMPT,
	K_PROMPTNAME, K_NOPROMPT, K_TOKENS, K_FIELDS, K_DROP, K_CHUNK, K_OVERLAP,
	K_LATE, K_COMPUTE, K_WINTEXT,
};

static const struct copt {
	emb_cli_opt o;
	unsigned need;
} common_opts[] = {
	{ { "help", 'h', EMB_ARG_NONE, K_HELP }, 0 },
	{ { "version", 0, EMB_ARG_NONE, K_VERSION }, 0 },
	{ { "errors", 0, EMB_ARG_REQUIRED, K_ERRORS }, 0 },
	{ { "strict", 0, EMB_ARG_NONE, K_STRICT }, 0 },
	{ { "max-line", 0, EMB_ARG_REQUIRED, K_MAXLINE }, 0 },
	{ { "progress", 0, EMB_ARG_OPTIONAL, K_PROGRESS }, 0 },
	{ { "no-progress", 0, EMB_ARG_NONE, K_NOPROGRESS }, 0 },
	{ { "fields", 0, EMB_ARG_REQUIRED, K_FIELDS }, 0 },
	{ { "drop", 0, EMB_ARG_REQUIRED, K_DROP }, 0 },
	{ { "raw", 0, EMB_ARG_NONE, K_RAW }, EMB_CLI_RAW },
	{ { "b64", 0, EMB_ARG_NONE, K_B64 }, EMB_CLI_B64 },
	{ { "model", 'm', EMB_ARG_REQUIRED, K_MODEL }, EMB_CLI_MODEL },
	{ { "max-length", 0, EMB_ARG_REQUIRED, K_MAXLEN }, EMB_CLI_TEXT },
	{ { "no-truncate", 0, EMB_ARG_NONE, K_NOTRUNC }, EMB_CLI_TEXT },
	{ { "prompt", 0, EMB_ARG_REQUIRED, K_PROMPT }, EMB_CLI_TEXT },
	{ { "prompt-name", 0, EMB_ARG_REQUIRED, K_PROMPTNAME }, EMB_CLI_TEXT },
	{ { "no-prompt", 0, EMB_ARG_NONE, K_NOPROMPT }, EMB_CLI_TEXT },
	{ { "tokens", 0, EMB_ARG_NONE, K_TOKENS }, EMB_CLI_TEXT },
	{ { "chunk", 0, EMB_ARG_REQUIRED, K_CHUNK }, EMB_CLI_CHUNK },
	{ { "overlap", 0, EMB_ARG_REQUIRED, K_OVERLAP }, EMB_CLI_CHUNK },
	{ { "late", 0, EMB_ARG_NONE, K_LATE }, EMB_CLI_LATE },
	{ { "window-text", 0, EMB_ARG_REQUIRED, K_WINTEXT }, EMB_CLI_CHUNK },
	{ { "compute", 0, EMB_ARG_REQUIRED, K_COMPUTE }, EMB_CLI_COMPUTE },
};
#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

/* --progress[=WHEN] before emb_cli_parse resolves it into c->progress */
enum { PROGRESS_AUTO = 0, PROGRESS_TTY, PROGRESS_ALWAYS, PROGRESS_NEVER };

/*
 * Whether to show progress: by default (auto) only when stderr is a
 * terminal and stdout is not a pipe, so that of a pipeline only the last
 * stage reports and one line is seen; --progress: when stderr is a
 * terminal, whatever stdout is; --progress=always: also when it is not
 * (then plain lines, no carriage returns or escape sequences, one every
 * EMB_CLI_PLAIN_EVERY seconds); --no-progress, --progress=never: never.
 */
static void resolve_progress(emb_cli *c)
{
	struct stat st;
	int tty = isatty(2);
	int pipe_out = fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) ||
	                                      S_ISSOCK(st.st_mode));

	switch (c->progress) {
	case PROGRESS_AUTO: c->progress = tty && !pipe_out; break;
	case PROGRESS_TTY: c->progress = tty; break;
	case PROGRESS_ALWAYS: c->progress = 1; break;
	default: c->progress = 0; break;
	}
	c->progress_plain = c->progress && !tty;
}

static int common_option(emb_cli *c, int key, const char *arg)
{
	long long v;

	switch (key) {
	case K_HELP:
		fputs(c->usage, stdout);
		if (fflush(stdout) || ferror(stdout))
			emb_cli_die(c, EMB_EXIT_WRITE, "write error: %s",
			            strerror(errno));
		exit(EMB_EXIT_OK);
	case K_VERSION:
		printf("%s %s\n", c->prog, EMB_VERSION);
		if (fflush(stdout) || ferror(stdout))
			emb_cli_die(c, EMB_EXIT_WRITE, "write error: %s",
			            strerror(errno));
		exit(EMB_EXIT_OK);
	case K_ERRORS:
		c->errors_set = 1;
		if (!strcmp(arg, "skip"))
			c->errors_emit = 0;
		else if (!strcmp(arg, "emit"))
			c->errors_emit = 1;
		else
			emb_cli_usage_error(c, "--errors must be skip or emit, not '%s'",
			                    arg);
		return 0;
	case K_STRICT: c->strict = 1; return 0;
	case K_MAXLINE:
		if (emb_cli_parse_int(&v, arg, 1, (long long)(SIZE_MAX / 2), 1) < 0)
			emb_cli_usage_error(c, "--max-line must be a positive number of bytes, not '%s'",
			                    arg);
		c->max_line = (size_t)v;
		return 0;
	case K_PROGRESS:
		if (!arg)
			c->progress = PROGRESS_TTY;
		else if (!strcmp(arg, "auto"))
			c->progress = PROGRESS_AUTO;
		else if (!strcmp(arg, "always"))
			c->progress = PROGRESS_ALWAYS;
		else if (!strcmp(arg, "never"))
			c->progress = PROGRESS_NEVER;
		else
			emb_cli_usage_error(c, "--progress must be auto, always or never, not '%s'",
			                    arg);
		return 0;
	case K_NOPROGRESS: c->progress = PROGRESS_NEVER; return 0;
	case K_RAW: c->raw = 1; return 0;
	case K_B64: c->b64 = 1; return 0;
	case K_MODEL: c->model = arg; return 0;
	case K_MAXLEN:
		if (emb_cli_parse_int(&v, arg, 1, 1 << 30, 0) < 0)
			emb_cli_usage_error(c, "--max-length must be a positive integer, not '%s'",
			                    arg);
		c->max_length = (long)v;
		return 0;
	case K_NOTRUNC: c->no_truncate = 1; return 0;
	case K_PROMPT: c->prompt = arg; return 0;
	case K_PROMPTNAME: c->prompt_name = arg; return 0;
	case K_NOPROMPT: c->no_prompt = 1; return 0;
	case K_TOKENS: c->tokens = 1; return 0;
	case K_FIELDS: c->keep_fields = arg; return 0;
	case K_DROP: c->drop_fields = arg; return 0;
	case K_CHUNK:
	case K_OVERLAP:
		if (emb_cli_parse_int(&v, arg, key == K_CHUNK ? 1 : 0, 1 << 30, 0) < 0)
			emb_cli_usage_error(c, "--%s must be a %s number of tokens, not '%s'",
			                    key == K_CHUNK ? "chunk" : "overlap",
			                    key == K_CHUNK ? "positive" : "non-negative",
			                    arg);
		*(key == K_CHUNK ? &c->chunk : &c->overlap) = v;
		return 0;
	case K_LATE: c->late = 1; return 0;
	case K_WINTEXT:
		if ((c->window_text = emb_window_text_parse(arg)) < 0)
			emb_cli_usage_error(c, "--window-text: '%s' is not slice, full or none",
			                    arg);
		return 0;
	case K_COMPUTE: {
		emb_err e;
		if (emb_prec_parse(&c->prec, "compute", arg, &e) < 0)
			emb_cli_usage_error(c, "%s", e.msg);
		return 0;
	}
	}
	return -1;
}

/* find option by long name (len n) or short char; *common set if common */
static const emb_cli_opt *find_opt(const emb_cli *c, const emb_cli_opt *extra,
                                   const char *name, size_t n, char sh,
                                   int *common)
{
	size_t i;

	for (i = 0; i < NCOMMON; i++) {
		const emb_cli_opt *o = &common_opts[i].o;
		if (common_opts[i].need && !(c->common & common_opts[i].need))
			continue;
		if (name ? (strlen(o->name) == n && !memcmp(o->name, name, n)) :
		           (o->shortname && o->shortname == sh)) {
			*common = 1;
			return o;
		}
	}
	for (; extra && extra->name; extra++) {
		if (name ? (strlen(extra->name) == n && !memcmp(extra->name, name, n)) :
		           (extra->shortname && extra->shortname == sh)) {
			*common = 0;
			return extra;
		}
	}
	return NULL;
}

/* --chunk W [--overlap K] [--late]: checked, and the windows' splitter */
static void chunk_options(emb_cli *c)
{
	emb_err err;

	err.msg[0] = 0;
	if (!c->chunk && c->overlap >= 0)
		emb_cli_usage_error(c, "--overlap needs --chunk");
	if (!c->chunk && c->late)
		emb_cli_usage_error(c, "--late needs --chunk");
	if (c->chunk && !c->late && !(c->common & EMB_CLI_TEXT))
		emb_cli_usage_error(c, "--chunk needs --late here (token embeddings are cut into windows only by late chunking)");
	if (c->chunk && emb_chunk_check(c->chunk, c->overlap < 0 ? 0 : c->overlap,
	                                &err) < 0)
		emb_cli_usage_error(c, "%s", err.msg);
	if (c->chunk && !c->late &&
	    emb_chunker_new(&c->chunker, c->chunk, c->overlap < 0 ? 0 : c->overlap,
	                    c->tokens, c->raw, &err) < 0)
		emb_cli_die(c, EMB_EXIT_USAGE, "%s", err.msg);
	if (c->window_text && !c->chunk)
		emb_cli_usage_error(c, "--window-text needs --chunk");
	if (c->chunker)
		emb_chunker_text(c->chunker, c->window_text);
}

void emb_cli_parse(emb_cli *c, int argc, char **argv,
                   const emb_cli_opt *extra,
                   int (*handler)(void *ctx, int key, const char *arg,
                                  emb_err *err),
                   void *ctx)
{
	int i, dashdash = 0;

	signal(SIGPIPE, SIG_DFL);
	emb_cli_catch_sigbus(c->prog);
	c->max_line = DEFAULT_MAX_LINE;
	c->max_length = -1;
	c->overlap = -1;
	c->progress = PROGRESS_AUTO;
	c->t_last = emb_cli_now() - EMB_CLI_PLAIN_EVERY;
	c->files = calloc((size_t)argc + 1, sizeof(char *));
	if (!c->files)
		emb_cli_die(c, EMB_EXIT_USAGE, "out of memory");
	c->nfiles = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *arg = NULL;
		const emb_cli_opt *o;
		int common = 0;
		char shown[64];

		if (dashdash || a[0] != '-' || !a[1]) {
			c->files[c->nfiles++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = 1;
			continue;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			snprintf(shown, sizeof(shown), "--%.*s", (int)(n > 40 ? 40 : n),
			         a + 2);
			o = find_opt(c, extra, a + 2, n, 0, &common);
			if (!o)
				emb_cli_usage_error(c, "unknown option '%s'", shown);
			if (eq) {
				if (o->arg == EMB_ARG_NONE)
					emb_cli_usage_error(c, "option '%s' takes no argument",
					                    shown);
				arg = eq + 1;
			} else if (o->arg == EMB_ARG_REQUIRED) {
				if (i + 1 >= argc)
					emb_cli_usage_error(c, "option '%s' needs an argument",
					                    shown);
				arg = argv[++i];
			}
		} else {
			snprintf(shown, sizeof(shown), "-%c", a[1]);
			o = find_opt(c, extra, NULL, 0, a[1], &common);
			if (!o)
				emb_cli_usage_error(c, "unknown option '%s'", shown);
			if (o->arg != EMB_ARG_NONE) {
				if (a[2])
					arg = a + 2;
				else if (o->arg == EMB_ARG_REQUIRED) {
					if (i + 1 >= argc)
						emb_cli_usage_error(c, "option '%s' needs an argument",
						                    shown);
					arg = argv[++i];
				}
			} else if (a[2]) {
				emb_cli_usage_error(c, "unknown option '%s'", a);
			}
		}
		if (common) {
			common_option(c, o->key, arg);
		} else {
			emb_err err;
			err.msg[0] = 0;
			if (!handler || handler(ctx, o->key, arg, &err) < 0)
				emb_cli_usage_error(c, "%s", err.msg[0] ? err.msg :
				                    "bad option");
		}
	}
	if (c->keep_fields || c->drop_fields) {
		emb_err err;
		err.msg[0] = 0;
		if (emb_fields_new(&c->fields, c->keep_fields, c->drop_fields,
		                   &err) < 0)
			emb_cli_usage_error(c, "%s", err.msg);
	}
	chunk_options(c);
	resolve_progress(c);
}

char *emb_cli_model_dir(const emb_cli *c, int required)
{
	char *dir = NULL;
	emb_err err;

	if (!c->model) {
		if (required)
			emb_cli_usage_error(c, "a model is required (-m MODEL)");
		return NULL;
	}
	err.msg[0] = 0;
	if (emb_model_resolve(&dir, c->model, &err) < 0 ||
	    emb_model_dir_check(dir, &err) < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", err.msg);
	return dir;
}


/* ------------------------------------------------------------------ */
/* text tokenization shared by emb-tokenize and emb-encode             */

int emb_record_check_input(const emb_record *rec, int text_ok, emb_err *err)
{
	if (emb_record_has(rec, "input_ids") ||
	    (text_ok && emb_record_has(rec, "text")))
		return 0;
	if (text_ok)
		return emb_err_set(err, "the record has neither 'text' nor 'input_ids'");
	if (emb_record_has(rec, "text"))
		return emb_err_set(err, "missing field 'input_ids' (the model has no "
		                   "tokenizer files, so 'text' cannot be used)");
	return emb_err_set(err, "missing field 'input_ids'");
}

/* emb_text_tok_init with c's options; returns its status, err set */
static int text_tok_open(emb_text_tok *t, const emb_cli *c, const char *dir,
                         int model_max, emb_err *err)
{
	emb_text_opts o;

	memset(&o, 0, sizeof(o));
	o.max_length = c->max_length;
	/* late chunking reads as far as the model's positions go, not
	 * max_seq_length (which is for one vector per text) */
	if (c->late && c->max_length < 0 && model_max > 0)
		o.max_length = model_max;
	o.no_truncate = c->no_truncate;
	o.prompt = c->prompt;
	o.prompt_name = c->prompt_name;
	o.no_prompt = c->no_prompt;
	o.tok_only = c->tok_only;
	err->msg[0] = 0;
	return emb_text_tok_init(t, dir, &o, model_max, err);
}

/* the end of emb_text_tok_setup, RC and ERR what text_tok_open gave */
static void text_tok_done(emb_text_tok *t, const emb_cli *c, int rc,
                          const emb_err *err)
{
	emb_err e;

	if (rc == EMB_TEXT_BAD_OPTION)
		emb_cli_usage_error(c, "%s", err->msg);
	if (rc < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", err->msg);
	/* --chunk: windows of this tokenizer */
	if (c->chunker && emb_chunker_bind(c->chunker, t, &e) < 0)
		emb_cli_usage_error(c, "%s", e.msg);
}

void emb_text_tok_setup(emb_text_tok *t, const emb_cli *c, const char *dir,
                        int model_max)
{
	emb_err err;

	text_tok_done(t, c, text_tok_open(t, c, dir, model_max, &err), &err);
}

typedef struct model_load_job {
	emb_model *m;
	const char *dir;
	const emb_model_opts *mo;
	emb_err err;
	int rc;
} model_load_job;

static void *model_load_thread(void *arg)
{
	model_load_job *j = arg;

	j->rc = emb_model_load(&j->m, j->dir, j->mo, &j->err);
	return NULL;
}

emb_model *emb_cli_model_tok(emb_text_tok *t, const emb_cli *c,
                             const char *dir, const emb_model_opts *mo,
                             emb_model_check_fn check, void *ctx)
{
	model_load_job j = { NULL, dir, mo, { { 0 } }, -1 };
	int both = t && mo->threads != 1 && !c->late &&
	           (mo->threads > 1 || emb_online_cpus() > 1);
	int trc = 0;
	pthread_t th;
	emb_err terr;

	if (both && pthread_create(&th, NULL, model_load_thread, &j) != 0)
		both = 0;
	if (both) {
		trc = text_tok_open(t, c, dir, 0, &terr);
		pthread_join(th, NULL);
	} else {
		model_load_thread(&j);
	}
	if (j.rc < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", j.err.msg);
	if (check)
		check(ctx, j.m);
	if (both)
		text_tok_done(t, c, trc, &terr);
	else if (t)
		emb_text_tok_setup(t, c, dir, emb_model_max_positions(j.m));
	return j.m;
}

