/*
 * cli.c - the command driver shared by cmd/emb-*.c: option parsing,
 * the read-parse-transform-write loop with batching, the per-record
 * error policy (--errors=skip|emit, --strict), progress on stderr,
 * write-error and SIGPIPE handling, and the text tokenization
 * (prompts, default max length) that emb-tokenize and emb-encode share.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <utf8proc.h>

#include "tool/emb-tool.h"
#include "tool/fields.h"
#include "tool/outwrite.h"

#define DEFAULT_MAX_LINE ((size_t)64 << 20)
/* input bytes held by one batch at most (a record longer than this is a
 * batch of its own): the token budget alone would let a batch of long
 * lines, each truncated to few tokens, hold many times --max-line */
#define BATCH_BYTES ((size_t)16 << 20)

/* ------------------------------------------------------------------ */
/* messages and exits                                                  */

void emb_cli_usage_error(const emb_cli *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: error: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", c->usage);
	exit(EMB_EXIT_USAGE);
}

void emb_cli_die(const emb_cli *c, int status, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: error: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

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

/* ------------------------------------------------------------------ */
/* options                                                             */

enum {
	K_HELP = 1000, K_VERSION, K_ERRORS, K_STRICT, K_MAXLINE, K_PROGRESS,
	K_NOPROGRESS, K_RAW, K_B64, K_MODEL, K_MAXLEN, K_NOTRUNC, K_PROMPT,
	K_PROMPTNAME, K_NOPROMPT, K_TOKENS, K_FIELDS, K_DROP, K_CHUNK, K_OVERLAP,
	K_LATE,
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
	{ { "progress", 0, EMB_ARG_NONE, K_PROGRESS }, 0 },
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
};
#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

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
	case K_PROGRESS: c->progress = 1; return 0;
	case K_NOPROGRESS: c->progress = 0; return 0;
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

static void catch_sigbus(const char *prog);

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
}

void emb_cli_parse(emb_cli *c, int argc, char **argv,
                   const emb_cli_opt *extra,
                   int (*handler)(void *ctx, int key, const char *arg,
                                  emb_err *err),
                   void *ctx)
{
	int i, dashdash = 0;

	signal(SIGPIPE, SIG_DFL);
	catch_sigbus(c->prog);
	c->max_line = DEFAULT_MAX_LINE;
	c->max_length = -1;
	c->overlap = -1;
	c->progress = isatty(2);
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
/* progress                                                            */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(emb_cli *c, const emb_reader *r, int final)
{
	double t = now(), dt;
	uint64_t done = 0, tot = 0;
	char eta[48] = "";

	if (!c->progress)
		return;
	if (!final && t - c->t_last < 0.5)
		return;
	c->t_last = t;
	dt = t - c->t0;
	if (dt <= 0)
		dt = 1e-9;
	if (r)
		emb_reader_progress(r, &done, &tot);
	done += c->bytes_before;
	if (c->bytes_known && c->bytes_total > 0 && done > 0 && !final) {
		double left = (double)(c->bytes_total - (done < c->bytes_total ?
		              done : c->bytes_total)) * dt / (double)done;
		long s = (long)(left + 0.5);
		snprintf(eta, sizeof(eta), ", %.0f%%, ETA %ld:%02ld:%02ld",
		         100.0 * (double)done / (double)c->bytes_total,
		         s / 3600, s / 60 % 60, s % 60);
	}
	fprintf(stderr, "\r%s: %llu records, %.1f records/s, %.0f tokens/s%s\033[K%s",
	        c->prog, (unsigned long long)c->records,
	        (double)c->records / dt, (double)c->tokens_done / dt, eta,
	        final ? "\n" : "");
	c->progress_shown = !final;
}

/* ------------------------------------------------------------------ */
/* the loop                                                            */

/*
 * Whole lines only.  Records go to standard output only through
 * write_out, with write(2) (no stdio buffer), and out holds complete
 * lines whenever it is written.  SIGINT, SIGTERM and SIGHUP outside
 * write_out end the process at once (the usual death by that signal, so
 * the shell sees 128 + N); during write_out they are held until the
 * buffer is out.  Either way standard output ends at a line boundary:
 * records computed but not yet written are dropped, none is cut.
 */
static volatile sig_atomic_t in_write, pending_sig;

static void die_by(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_signal(int sig)
{
	if (in_write) {
		pending_sig = sig;
		return;
	}
	die_by(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* an ignored signal (nohup, a background job) stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		/* no SA_RESTART: a write blocked on a stalled reader must
		 * return, so the signal can end the run (emb_write_lines) */
		sa.sa_flags = 0;
		sigfillset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* A model file truncated while mmapped (`cp new model.safetensors` over
 * a running job rewrites it in place) makes the next read of a lost page
 * SIGBUS: say so in one line and exit 3, rather than die without a word.
 * Replacing a model by rename (mv, or an atomic download) is safe: the
 * running tool keeps the old file. */
static char bus_msg[320];
static size_t bus_len;

static void on_sigbus(int sig)
{
	ssize_t w;

	(void)sig;
	w = write(2, bus_msg, bus_len);
	(void)w;
	_exit(EMB_EXIT_MODEL);
}

static void catch_sigbus(const char *prog)
{
	struct sigaction sa;
	int n = snprintf(bus_msg, sizeof(bus_msg), "%s: error: a memory-mapped "
	                 "model file changed while in use (truncated or "
	                 "rewritten in place; replace a model by renaming a "
	                 "new copy over it)\n", prog ? prog : "emb");

	bus_len = n > 0 && (size_t)n < sizeof(bus_msg) ? (size_t)n : 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

static void write_out(emb_cli *c, emb_buf *out)
{
	size_t off = 0;

	if (emb_buf_failed(out))
		emb_cli_die(c, EMB_EXIT_RECORD, "out of memory writing output");
	in_write = 1;
	switch (emb_write_lines(1, out->p, out->len, &pending_sig, &off)) {
	case 1:         /* a signal came: stopped at a line boundary */
		die_by(pending_sig);
		break;
	case -1: {
		int e = errno;
		if (e == EPIPE)
			_exit(EMB_EXIT_WRITE);  /* SIGPIPE ignored: still quiet */
		emb_cli_die(c, EMB_EXIT_WRITE, "write error: %s", strerror(e));
	}
	}
	out->len = 0;
	in_write = 0;
	if (pending_sig)
		die_by(pending_sig);
}

/* diagnostic for a bad record, and its --errors=emit line */
static void report(emb_cli *c, emb_cli_rec *r, emb_buf *out)
{
	if (c->progress_shown) {
		fputs("\r\033[K", stderr);
		c->progress_shown = 0;
	}
	fprintf(stderr, "%s: error (at %s:%zu): %s\n", c->prog, r->file,
	        r->lineno, r->err.msg);
	c->status = EMB_EXIT_RECORD;
	if (c->errors_emit) {
		const char *id = NULL;
		size_t idlen = 0;
		if (r->parsed)
			id = emb_record_raw(r->rec, "id", &idlen);
		emb_out_begin(out, NULL, NULL);
		if (id)
			emb_out_json(out, "id", id, idlen);
		emb_out_string(out, "error", r->err.msg, strlen(r->err.msg));
		emb_out_end(out);
	}
}

typedef struct batch {
	emb_cli_rec **s;        /* slots; first n in use */
	int n, cap;
	size_t cost;
	size_t bytes;           /* input line bytes of the records held */
	emb_cli_rec **good;
} batch;

static emb_cli_rec *slot(batch *b, int i)
{
	if (!b->s[i]) {
		b->s[i] = calloc(1, sizeof(emb_cli_rec));
		if (!b->s[i] || !(b->s[i]->rec = emb_record_new()))
			return NULL;
	}
	return b->s[i];
}

/* run and emit the first n records of the batch; with --strict, stop
 * after the first bad one (also one that failed in ops->run or
 * ops->emit) and return 1 */
static int flush(emb_cli *c, const emb_cli_ops *ops, void *ctx, batch *b,
                 int n, emb_buf *out, const emb_reader *rd)
{
	int i, ng = 0;

	for (i = 0; i < n; i++)
		if (!b->s[i]->bad)
			b->good[ng++] = b->s[i];
	if (ops->run && ng > 0) {
		emb_err err;
		err.msg[0] = 0;
		if (ops->run(ctx, b->good, ng, &err) < 0) {
			if (ng == 1) {
				b->good[0]->bad = 1;
				b->good[0]->err = err;
			} else {
				for (i = 0; i < ng; i++) {
					emb_cli_rec *r = b->good[i];
					r->err.msg[0] = 0;
					if (ops->run(ctx, &r, 1, &r->err) < 0)
						r->bad = 1;
				}
			}
		}
	}
	for (i = 0; i < n; i++) {
		emb_cli_rec *r = b->s[i];
		if (!r->bad) {
			size_t mark = out->len;
			r->err.msg[0] = 0;
			if (ops->emit(ctx, r, out, &r->err) < 0 ||
			    (c->fields && emb_fields_apply(c->fields, out, mark,
			                                   &r->err) < 0)) {
				out->len = mark;
				r->bad = 1;
			} else {
				c->records++;
				c->tokens_done += r->cost;
			}
		}
		if (r->bad) {
			report(c, r, out);
			if (c->strict) {
				write_out(c, out);
				return 1;
			}
		}
		if (out->len >= (1u << 16))
			write_out(c, out);
	}
	/* more input at hand: keep collecting lines; else write them now,
	 * before the next read waits for a slow producer */
	if (!emb_reader_pending(rd))
		write_out(c, out);
	progress(c, rd, 0);
	return 0;
}

/* flush every record held, then empty the batch; flush's return */
static int flush_all(emb_cli *c, const emb_cli_ops *ops, void *ctx, batch *b,
                     emb_buf *out, const emb_reader *rd)
{
	int stop = flush(c, ops, ctx, b, b->n, out, rd);

	b->n = 0;
	b->cost = 0;
	b->bytes = 0;
	return stop;
}

int emb_cli_run(emb_cli *c, const emb_cli_ops *ops, void *ctx)
{
	batch b;
	emb_buf out;
	int bmax = ops->batch_max > 0 ? ops->batch_max : 1, fi, nf, stop = 0;
	char *stdin_name[] = { "-" };
	char **files = c->nfiles ? c->files : stdin_name;
	struct stat st;

	nf = c->nfiles ? c->nfiles : 1;
	if (c->chunker && !emb_chunker_bound(c->chunker))
		emb_cli_die(c, EMB_EXIT_MODEL, "--chunk needs the model's tokenizer files");
	memset(&b, 0, sizeof(b));
	b.cap = bmax + 1;
	b.s = calloc((size_t)b.cap, sizeof(*b.s));
	b.good = calloc((size_t)b.cap, sizeof(*b.good));
	if (!b.s || !b.good)
		emb_cli_die(c, EMB_EXIT_RECORD, "out of memory");
	emb_buf_init(&out);
	catch_signals();
	c->t0 = now();
	c->t_last = c->t0 - 1.0;        /* the first status comes at once */
	c->bytes_known = 1;
	c->bytes_total = 0;
	for (fi = 0; fi < nf; fi++) {
		const char *f = files[fi];
		if (strcmp(f, "-") && stat(f, &st) == 0 && S_ISREG(st.st_mode))
			c->bytes_total += (uint64_t)st.st_size;
		else if (!strcmp(f, "-") && fstat(0, &st) == 0 && S_ISREG(st.st_mode))
			c->bytes_total += (uint64_t)st.st_size;
		else
			c->bytes_known = 0;
	}
	for (fi = 0; fi < nf && !stop; fi++) {
		emb_reader *rd;
		emb_err err;
		uint64_t d, t;

		err.msg[0] = 0;
		if (emb_reader_open(&rd, files[fi], c->max_line, &err) < 0) {
			if (c->progress_shown)
				fputs("\r\033[K", stderr);
			c->progress_shown = 0;
			fprintf(stderr, "%s: error: %s\n", c->prog, err.msg);
			c->status = EMB_EXIT_RECORD;
			if (c->strict)
				stop = 1;
			continue;
		}
		for (;;) {
			const char *line;
			size_t len;
			emb_cli_rec *r;
			int rc;

			/* the producer is slow: run what we have before waiting */
			if (b.n > 0 && !emb_reader_pending(rd)) {
				stop = flush_all(c, ops, ctx, &b, &out, rd);
				if (stop)
					break;
			}
			r = slot(&b, b.n);
			if (!r)
				emb_cli_die(c, EMB_EXIT_RECORD, "out of memory");
			r->err.msg[0] = 0;
			rc = c->chunker ? emb_chunker_next(c->chunker, rd, r->rec, &len,
			                                   &r->err) :
			     emb_reader_next(rd, &line, &len, &r->err);
			if (rc == 0)
				break;
			r->file = emb_reader_name(rd);
			r->lineno = emb_reader_lineno(rd);
			r->bad = 0;
			r->parsed = 0;
			r->cost = 0;
			if (rc < 0) {
				r->bad = 1;
				r->parsed = rc == -2;   /* a window's document */
			} else if (!c->chunker &&
			           (c->raw ? emb_record_from_text(r->rec, line, len,
			                                          &r->err) :
			            emb_record_parse(r->rec, line, len, &r->err)) < 0) {
				r->bad = 1;
			} else {
				r->parsed = 1;
				if (ops->prepare(ctx, r, &r->err) < 0)
					r->bad = 1;
			}
			if (r->bad && c->strict) {
				if (!flush(c, ops, ctx, &b, b.n, &out, rd)) {
					report(c, r, &out);
					write_out(c, &out);
				}
				stop = 1;
				break;
			}
			if (b.n > 0 && ((!r->bad && ops->batch_cost && b.cost > 0 &&
			                 b.cost + r->cost > ops->batch_cost) ||
			                b.bytes + len > BATCH_BYTES)) {
				/* r opens the next batch */
				if (flush(c, ops, ctx, &b, b.n, &out, rd)) {
					stop = 1;
					break;
				}
				b.s[b.n] = b.s[0];
				b.s[0] = r;
				b.n = 0;
				b.cost = 0;
				b.bytes = 0;
			}
			b.n++;
			b.bytes += len;
			if (!r->bad)
				b.cost += r->cost;
			if (b.n >= bmax || !ops->batch_cost) {
				stop = flush_all(c, ops, ctx, &b, &out, rd);
				if (stop)
					break;
			}
		}
		if (b.n > 0 && !stop) {
			stop = flush_all(c, ops, ctx, &b, &out, rd);
		}
		emb_reader_progress(rd, &d, &t);
		c->bytes_before += d;
		emb_reader_free(rd);
	}
	if (c->finish && !stop) {
		emb_err err;
		size_t mark = out.len;
		err.msg[0] = 0;
		if (c->finish(ctx, &out, &err) < 0) {
			out.len = mark;
			if (c->progress_shown)
				fputs("\r\033[K", stderr);
			c->progress_shown = 0;
			fprintf(stderr, "%s: error: %s\n", c->prog, err.msg);
			c->status = EMB_EXIT_RECORD;
		}
	}
	write_out(c, &out);
	progress(c, NULL, 1);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno == EPIPE)
			_exit(EMB_EXIT_WRITE);
		emb_cli_die(c, EMB_EXIT_WRITE, "write error: %s", strerror(errno));
	}
	if (fclose(stdout) != 0) {
		if (errno == EPIPE)
			_exit(EMB_EXIT_WRITE);
		emb_cli_die(c, EMB_EXIT_WRITE, "write error: %s", strerror(errno));
	}
	for (fi = 0; fi < b.cap; fi++) {
		if (!b.s[fi])
			continue;
		if (ops->free_user && b.s[fi]->user)
			ops->free_user(ctx, b.s[fi]->user);
		emb_record_free(b.s[fi]->rec);
		free(b.s[fi]);
	}
	free(b.s);
	free(b.good);
	emb_buf_release(&out);
	free(c->files);
	c->files = NULL;
	emb_fields_free(c->fields);
	c->fields = NULL;
	emb_chunker_free(c->chunker);
	c->chunker = NULL;
	return c->status;
}

/* ------------------------------------------------------------------ */
/* text tokenization shared by emb-tokenize and emb-encode             */

static int json_int_field(const json_t *o, const char *key, long long *v)
{
	json_t *x = json_object_get(o, key);

	if (!x)
		return 0;
	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return 1;
	}
	if (json_is_real(x)) {
		double d = json_real_value(x);
		*v = d > 9e18 ? (long long)9e18 : (long long)d;
		return 1;
	}
	return 0;
}

static json_t *load_json(const char *dir, const char *name, int *missing,
                         emb_err *err)
{
	char path[4096];
	json_t *j;

	*missing = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	j = emb_json_file_load(dir, path, (size_t)16 << 20,
	                       JSON_DECODE_INT_AS_REAL, err);
	if (!j && errno == ENOENT)
		*missing = 1;
	return j;
}

int emb_default_max_length(const char *dir, const emb_st_config *st,
                           emb_err *err)
{
	long long max = 0, v;
	json_t *j;
	int missing;

	if (st && st->max_seq_length > 0)
		max = st->max_seq_length;
	if (max <= 0) {
		j = load_json(dir, "tokenizer_config.json", &missing, err);
		if (!j && !missing)
			return -1;
		if (j && json_is_object(j) &&
		    json_int_field(j, "model_max_length", &v) && v > 0 && v < 1000000)
			max = v;
		json_decref(j);
	}
	j = load_json(dir, "config.json", &missing, err);
	if (!j && !missing)
		return -1;
	if (j && json_is_object(j) &&
	    json_int_field(j, "max_position_embeddings", &v) && v > 0) {
		/* the family's own reading (positions after padding_idx for
		 * RoBERTa-like ones); max_position_embeddings for the rest */
		long long cap = v;
		char path[4096];
		json_t *ints;
		int fam;
		snprintf(path, sizeof(path), "%s/config.json", dir);
		/* integers as the model loader reads them */
		ints = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
		fam = emb_model_config_positions(ints);
		json_decref(ints);
		if (fam > 0)
			cap = fam;
		if (cap > 0 && (max <= 0 || cap < max))
			max = cap;
	}
	json_decref(j);
	if (max > (1 << 30))
		max = 1 << 30;
	return (int)max;
}

static char *lower_utf8(const char *s, size_t n, size_t *outn);

void emb_text_tok_setup(emb_text_tok *t, const emb_cli *c, const char *dir,
                        int model_max)
{
	emb_err err;
	const char *prompt = NULL;
	int max;

	memset(t, 0, sizeof(*t));
	err.msg[0] = 0;
	if ((c->tok_only ? emb_st_config_load_text(&t->st, dir, &err) :
	                   emb_st_config_load(&t->st, dir, &err)) < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", err.msg);
	if (emb_tokenizer_load(&t->tok, dir, &err) < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", err.msg);
	t->lower = t->st.do_lower_case;
	if (c->no_truncate) {
		max = 0;
	} else if (c->max_length > 0) {
		max = (int)c->max_length;
	} else {
		max = emb_default_max_length(dir, &t->st, &err);
		if (max < 0)
			emb_cli_die(c, EMB_EXIT_MODEL, "%s", err.msg);
		if (model_max > 0 && (max == 0 || max > model_max))
			max = model_max;
	}
	t->opts.max_length = (size_t)max;
	if (c->prompt) {
		prompt = c->prompt;
	} else if (c->prompt_name) {
		prompt = emb_st_config_prompt(&t->st, c->prompt_name);
		if (!prompt) {
			emb_buf b;
			size_t i;
			emb_buf_init(&b);
			for (i = 0; i < t->st.n_prompts; i++) {
				if (i)
					emb_buf_add(&b, ", ", 2);
				emb_buf_add(&b, t->st.prompts[i].name,
				            strlen(t->st.prompts[i].name));
			}
			emb_cli_usage_error(c, "unknown prompt name '%s' (known: %s)",
			                    c->prompt_name,
			                    b.len ? b.p : "none");
		}
	} else if (!c->no_prompt && t->st.default_prompt_name) {
		prompt = emb_st_config_prompt(&t->st, t->st.default_prompt_name);
	}
	if (prompt && *prompt) {
		emb_encoding enc;
		t->prompt = strdup(prompt);
		t->prompt_len = strlen(prompt);
		if (!t->prompt)
			emb_cli_die(c, EMB_EXIT_MODEL, "out of memory");
		/* as sentence-transformers: tokens of the prompt alone, minus
		 * the trailing special token */
		emb_encoding_init(&enc);
		if (t->lower) {
			/* ST lowercases the prompt too (do_lower_case) */
			size_t ln;
			char *lp = lower_utf8(t->prompt, t->prompt_len, &ln);
			if (!lp)
				emb_cli_die(c, EMB_EXIT_MODEL, "out of memory");
			if (emb_tokenize(&enc, t->tok, lp, ln, NULL, 0, &t->opts,
			                 &err) < 0)
				emb_cli_die(c, EMB_EXIT_MODEL, "prompt: %s", err.msg);
			free(lp);
		} else if (emb_tokenize(&enc, t->tok, t->prompt, t->prompt_len,
		                        NULL, 0, &t->opts, &err) < 0) {
			emb_cli_die(c, EMB_EXIT_MODEL, "prompt: %s", err.msg);
		}
		t->prompt_tokens = enc.len > 0 ? enc.len - 1 : 0;
		emb_encoding_release(&enc);
	}
	if (c->chunker) {       /* --chunk: windows of this tokenizer */
		emb_chunker_bind(c->chunker, t, c);
		t->chunker = c->chunker;
	}
}

void emb_text_tok_release(emb_text_tok *t)
{
	emb_tokenizer_free(t->tok);
	emb_st_config_release(&t->st);
	free(t->prompt);
	memset(t, 0, sizeof(*t));
}

/* Python str.lower() per code point (utf8proc simple mappings) */
static char *lower_utf8(const char *s, size_t n, size_t *outn)
{
	char *o = malloc(4 * n + 1);
	size_t i = 0, k = 0;

	if (!o)
		return NULL;
	while (i < n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(n - i), &cp);
		if (l <= 0) {
			o[k++] = s[i++];
			continue;
		}
		i += (size_t)l;
		if (cp == 0x130) {      /* İ -> i + combining dot above */
			k += (size_t)utf8proc_encode_char('i', (utf8proc_uint8_t *)o + k);
			cp = 0x307;
		} else {
			cp = utf8proc_tolower(cp);
		}
		k += (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)o + k);
	}
	o[k] = 0;
	*outn = k;
	return o;
}

int emb_text_tok_pair(emb_encoding *enc, size_t *prompt_length,
                      const emb_text_tok *t, const char *text, size_t tlen,
                      const char *pair, size_t plen, emb_err *err)
{
	char *buf = NULL, *lt = NULL, *lp = NULL;
	int rc;

	*prompt_length = 0;
	if (t->prompt) {
		buf = malloc(t->prompt_len + tlen + 1);
		if (!buf)
			return emb_err_set(err, "out of memory");
		memcpy(buf, t->prompt, t->prompt_len);
		memcpy(buf + t->prompt_len, text, tlen);
		buf[t->prompt_len + tlen] = 0;
		text = buf;
		tlen += t->prompt_len;
	}
	if (t->lower) {
		lt = lower_utf8(text, tlen, &tlen);
		if (pair)
			lp = lower_utf8(pair, plen, &plen);
		if (!lt || (pair && !lp)) {
			free(buf);
			free(lt);
			free(lp);
			return emb_err_set(err, "out of memory");
		}
		text = lt;
		if (pair)
			pair = lp;
	}
	rc = emb_tokenize(enc, t->tok, text, tlen, pair, plen, &t->opts, err);
	free(buf);
	free(lt);
	free(lp);
	if (rc < 0)
		return -1;
	if (t->prompt)
		*prompt_length = t->prompt_tokens;
	return 0;
}

int emb_text_tok_record(emb_encoding *enc, size_t *prompt_length,
                        const emb_text_tok *t, const emb_record *rec,
                        emb_err *err)
{
	const char *text, *pair = NULL;
	size_t tlen, plen = 0;

	*prompt_length = 0;
	if (t->chunker) {       /* a window record: its window's tokens */
		int rc = emb_chunker_current(t->chunker, enc, prompt_length, rec,
		                             err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	if (emb_record_get_string(rec, "text", &text, &tlen, err) < 0)
		return -1;
	if (emb_record_has(rec, "text_pair") &&
	    emb_record_get_string(rec, "text_pair", &pair, &plen, err) < 0)
		return -1;
	return emb_text_tok_pair(enc, prompt_length, t, text, tlen, pair, plen,
	                         err);
}

/* ------------------------------------------------------------------ */
/* pooling                                                             */

int emb_record_prompt_length(int *out, const emb_record *rec, emb_err *err)
{
	const char *raw;
	size_t k;
	char *end;
	long x;

	*out = 0;
	raw = emb_record_raw(rec, "prompt_length", &k);
	if (!raw)
		return 0;
	errno = 0;
	x = strtol(raw, &end, 10);
	if (errno || end != raw + k || x < 0 || x > INT_MAX)
		return emb_err_set(err, "field 'prompt_length' must be a non-negative integer");
	*out = (int)x;
	return 0;
}

int emb_pool_apply(float **out, int *outn, const emb_pool_spec *p,
                   const float *tok, int n, int d, int prompt_length,
                   emb_err *err)
{
	int pd = emb_pool_dim(p->modes, d), skip = 0;
	float *v;

	*out = NULL;
	*outn = 0;
	if (p->in_dim > 0 && d != p->in_dim)
		return emb_err_set(err, "token embeddings have %d columns, the pooling config says %d",
		                   d, p->in_dim);
	if (pd <= 0)
		return emb_err_set(err, "invalid pooling for dimension %d", d);
	if (p->n_dense && p->dense[0].in != pd)
		return emb_err_set(err, "the pooled embedding has %d values, the Dense module takes %d",
		                   pd, p->dense[0].in);
	if (p->n_dense && p->dim > p->dense[p->n_dense - 1].out)
		return emb_err_set(err, "--dim %d is larger than the embedding dimension %d",
		                   p->dim, p->dense[p->n_dense - 1].out);
	if (!p->n_dense && p->dim > pd)
		return emb_err_set(err, "--dim %d is larger than the embedding dimension %d",
		                   p->dim, pd);
	if (!p->include_prompt)
		skip = prompt_length;
	v = malloc((size_t)pd * sizeof(float));
	if (!v)
		return emb_err_set(err, "out of memory");
	if (emb_pool(v, tok, n, d, p->modes, skip, err) < 0) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < p->n_dense; i++) {   /* Dense: act(W v + b) */
		const emb_dense *dn = &p->dense[i];
		float *y = malloc((size_t)dn->out * sizeof(float));
		if (!y) {
			free(v);
			return emb_err_set(err, "out of memory");
		}
		for (int o = 0; o < dn->out; o++) {
			const float *w = dn->w + (size_t)o * dn->in;
			float acc = 0;
			for (int k = 0; k < dn->in; k++)
				acc += w[k] * v[k];
			if (dn->b)
				acc += dn->b[o];
			y[o] = dn->tanh ? tanhf(acc) : acc;
		}
		free(v);
		v = y;
		pd = dn->out;
	}
	if (p->layer_norm) {    /* F.layer_norm(v, (pd,)), eps 1e-5 */
		double mean = 0, var = 0;
		for (int i = 0; i < pd; i++)
			mean += v[i];
		mean /= pd;
		for (int i = 0; i < pd; i++)
			var += (v[i] - mean) * (v[i] - mean);
		float m = (float)mean, r = (float)(1.0 / sqrt(var / pd + 1e-5));
		for (int i = 0; i < pd; i++)
			v[i] = (v[i] - m) * r;
	}
	if (p->normalize)
		emb_normalize(v, pd);
	if (p->dim > 0) {
		pd = p->dim;
		emb_normalize(v, pd);
	}
	for (skip = 0; skip < pd; skip++) {
		if (!isfinite(v[skip])) {
			free(v);
			return emb_err_set(err, "the embedding is not finite (NaN or infinity at %d)",
			                   skip);
		}
	}
	*out = v;
	*outn = pd;
	return 0;
}
