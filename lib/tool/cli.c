/*
 * cli.c - the command driver shared by cmd/emb-*.c: option parsing,
 * the read-parse-transform-write loop with batching, the per-record
 * error policy (--errors=skip|emit, --strict), progress on stderr,
 * write-error and SIGPIPE handling, and the text tokenization
 * (prompts, default max length) that emb-tokenize and emb-encode share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <time.h>
#include <unistd.h>


#include "tool/emb-tool.h"
#include "tool/fields.h"
#include "tool/outwrite.h"
#include "st/ckpt.h"

#define DEFAULT_MAX_LINE ((size_t)64 << 20)
/* input bytes held by one batch at most (a record longer than this is a
 * batch of its own): the token budget alone would let a batch of long
 * lines, each truncated to few tokens, hold many times --max-line */
#define BATCH_BYTES ((size_t)16 << 20)
/* seconds between plain progress lines (--progress=always, stderr not a
 * terminal) */
#define PLAIN_EVERY 10.0

static double now(void);

/* ------------------------------------------------------------------ */
/* messages and exits                                                  */

/* "PROG: KIND: MSG" on stderr, without the newline */
static void vsay(const emb_cli *c, const char *kind, const char *fmt,
                 va_list ap)
{
	fprintf(stderr, "%s: %s: ", c->prog, kind);
	vfprintf(stderr, fmt, ap);
}

void emb_cli_usage_error(const emb_cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(c, "error", fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", c->prog);
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

void emb_cli_need_file(const emb_cli *c, const char *path, int stream)
{
	struct stat st;
	emb_err err = { "" };
	int fd;

	if (!path || !strcmp(path, "-"))
		return;
	/* a FIFO is opened by its reader: its writer may come later */
	if (stream && stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
		return;
	if ((fd = emb_file_open(NULL, path, NULL, &err)) < 0)
		emb_cli_die(c, EMB_EXIT_INPUT, "%s", err.msg);
	close(fd);
}

void emb_cli_warn(const emb_cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(c, "warning", fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
 * PLAIN_EVERY seconds); --no-progress, --progress=never: never.
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
	catch_sigbus(c->prog);
	c->max_line = DEFAULT_MAX_LINE;
	c->max_length = -1;
	c->overlap = -1;
	c->progress = PROGRESS_AUTO;
	c->t_last = now() - PLAIN_EVERY;
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
	if (!final && t - c->t_last < (c->progress_plain ? PLAIN_EVERY : 0.5))
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
	if (c->progress_plain) {
		fprintf(stderr, "%s: %llu records, %.1f records/s, %.0f tokens/s%s\n",
		        c->prog, (unsigned long long)c->records,
		        (double)c->records / dt, (double)c->tokens_done / dt, eta);
		return;
	}
	fprintf(stderr, "\r%s: %llu records, %.1f records/s, %.0f tokens/s%s\033[K%s",
	        c->prog, (unsigned long long)c->records,
	        (double)c->records / dt, (double)c->tokens_done / dt, eta,
	        final ? "\n" : "");
	c->progress_shown = !final;
}

void emb_cli_status(emb_cli *c, int final, const char *fmt, ...)
{
	double t = now();
	va_list ap;

	if (!c->progress)
		return;
	if (!final && t - c->t_last < (c->progress_plain ? PLAIN_EVERY : 0.5))
		return;
	c->t_last = t;
	if (!c->progress_plain)
		fputc('\r', stderr);
	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (!c->progress_plain)
		fputs("\033[K", stderr);
	if (c->progress_plain || final)
		fputc('\n', stderr);
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

/* ---- what a signal removes before the process dies -------------------- */

static const char *volatile remove_file;

void emb_cli_remove_on_signal(const char *path)
{
	remove_file = path;
}

/* remove NAME (in directory DFD) and, when it is a directory, what it
 * holds, DEPTH levels down at most, with async-signal-safe calls only
 * (no opendir, no malloc); links are removed, never followed */
static void rm_at(int dfd, const char *name, int depth)
{
	int fd;

	if (unlinkat(dfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
		return;
#ifdef SYS_getdents64
	if (depth > 0 && (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
	                              O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		char buf[2048];
		long n;
		/* entries go as they are read: read again from the start
		 * until nothing but . and .. is left */
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			int removed = 0;
			for (long k = 0; k < n; ) {
				/* struct linux_dirent64: ino 8, off 8, reclen 2,
				 * type 1, then the name */
				unsigned short reclen;
				const char *nm = buf + k + 19;
				memcpy(&reclen, buf + k + 16, sizeof(reclen));
				if (reclen == 0)
					break;
				if (strcmp(nm, ".") && strcmp(nm, "..")) {
					rm_at(fd, nm, depth - 1);
					removed = 1;
				}
				k += reclen;
			}
			if (!removed)
				break;
			lseek(fd, 0, SEEK_SET);
		}
		close(fd);
	}
#else
	(void)fd;
	(void)depth;
#endif
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void die_by(int sig)
{
	const char *f = remove_file, *d = emb_ckpt_pending();

	if (f)
		unlink(f);
	if (d)
		rm_at(AT_FDCWD, d, 16);
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

static void catch_signals(void);

void emb_cli_catch_signals(void)
{
	catch_signals();
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
		char num[24];
		if (r->parsed)
			id = emb_record_raw(r->rec, "id", &idlen);
		else if (c->raw) {      /* the id the line's record would have */
			idlen = (size_t)snprintf(num, sizeof(num), "%llu",
			                         (unsigned long long)r->raw_id);
			id = num;
		}
		emb_out_begin(out, NULL, NULL);
		if (id)
			emb_out_json(out, "id", id, idlen);
		emb_out_string(out, "error", r->err.msg, strlen(r->err.msg));
		emb_out_end(out);
	}
}

/* what a record written whole lost (r->warn): a warning, or with
 * --strict an error that counts in the exit status; 1 then */
static int warn(emb_cli *c, emb_cli_rec *r)
{
	if (c->progress_shown) {
		fputs("\r\033[K", stderr);
		c->progress_shown = 0;
	}
	fprintf(stderr, "%s: %s (at %s:%zu): %s\n", c->prog,
	        c->strict ? "error" : "warning", r->file, r->lineno,
	        r->warn.msg);
	if (c->strict)
		c->status = EMB_EXIT_RECORD;
	return c->strict;
}

/* 1 when LINE (the first of a file) cannot be a JSON object: its first
 * non-blank character is not '{' (plain text given as JSON Lines) */
static int not_json(const char *line, size_t len)
{
	size_t i = 0;

	/* a byte order mark gets the record parser's own message */
	if (len >= 3 && !memcmp(line, "\xef\xbb\xbf", 3))
		return 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	return i < len && line[i] != '{';
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
			r->warn.msg[0] = 0;
			if (ops->emit(ctx, r, out, &r->err) < 0 ||
			    (c->fields && emb_fields_apply(c->fields, out, mark,
			                                   &r->err) < 0)) {
				out->len = mark;
				r->bad = 1;
			} else {
				c->records++;
				c->tokens_done += r->cost;
				if (r->warn.msg[0] && warn(c, r) && c->strict) {
					write_out(c, out);
					return 1;
				}
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
	uint64_t lines = 0;     /* read, over every operand: --raw's ids */

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
#ifdef M_MMAP_THRESHOLD
	/* blocks of 1 MiB and more (a long record's text, tokens, output)
	 * mapped on their own, so that growing one does not copy it within
	 * the heap and freeing it gives the memory back; glibc would raise
	 * this threshold to the largest block freed so far, and a long
	 * record would then cost several times its size */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	catch_signals();
	c->t0 = now();
	c->t_last = c->t0 - PLAIN_EVERY; /* the first status comes at once */
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
			c->input_failed = 1;
			if (c->strict)
				stop = 1;
			continue;
		}
		for (;;) {
			const char *line;
			size_t len;
			emb_cli_rec *r;
			int rc, plain = 0;

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
			if (!c->chunker)
				lines++;
			r->raw_id = c->chunker ? emb_chunker_lines(c->chunker) : lines;
			r->file = emb_reader_name(rd);
			r->lineno = emb_reader_lineno(rd);
			r->bad = 0;
			r->parsed = 0;
			r->cost = 0;
			if (rc < 0) {
				r->bad = 1;
				r->parsed = rc == -2;   /* a window's document */
			} else if (!c->chunker && !c->raw && r->lineno == 1 &&
			           (plain = not_json(line, len))) {
				/* one line for a file of plain text, not one per line */
				r->bad = 1;
				emb_err_set(&r->err, "not JSON Lines: the first line does not start with '{', the rest of the file is skipped%s",
				            c->common & EMB_CLI_RAW ?
				            " (plain text, one text per line: --raw)" : "");
			} else if (!c->chunker &&
			           (c->raw ? emb_record_from_text(r->rec, line, len,
			                                          lines, &r->err) :
			            emb_record_parse(r->rec, line, len, &r->err)) < 0) {
				r->bad = 1;
			} else {
				r->parsed = 1;
				if (!c->chunker)
					emb_reader_shrink(rd);
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
			if (plain)
				break;
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
	return c->input_failed ? EMB_EXIT_INPUT : c->status;
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

/* emb_text_tok's hook for a window record of --chunk: its window's
 * tokens (tool/chunk.c) */
static int chunk_pretok(void *ctx, emb_encoding *enc, size_t *prompt_length,
                        const emb_record *rec, emb_err *err)
{
	return emb_chunker_current(ctx, enc, prompt_length, rec, err);
}

void emb_text_tok_setup(emb_text_tok *t, const emb_cli *c, const char *dir,
                        int model_max)
{
	emb_text_opts o;
	emb_err err;
	int rc;

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
	err.msg[0] = 0;
	rc = emb_text_tok_init(t, dir, &o, model_max, &err);
	if (rc == EMB_TEXT_BAD_OPTION)
		emb_cli_usage_error(c, "%s", err.msg);
	if (rc < 0)
		emb_cli_die(c, EMB_EXIT_MODEL, "%s", err.msg);
	if (c->chunker) {       /* --chunk: windows of this tokenizer */
		emb_chunker_bind(c->chunker, t, c);
		t->pretok = chunk_pretok;
		t->pretok_ctx = c->chunker;
	}
}

