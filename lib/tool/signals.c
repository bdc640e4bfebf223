/*
 * signals.c - the record driver's signals and its one way to standard
 * output: SIGINT, SIGTERM and SIGHUP held while whole lines are written
 * (emb_cli_write_out) and then fatal, after removing what the command
 * asked to (emb_cli_remove_on_signal, the pending checkpoint: with
 * io/file.h's emb_rm_tree, which is async-signal-safe); SIGBUS from a
 * model file changed under its mapping, said in one line.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool/emb-tool.h"
#include "tool/driver.h"
#include "tool/outwrite.h"
#include "st/ckpt.h"

/*
 * Whole lines only.  Records go to standard output only through
 * emb_cli_write_out, with write(2) (no stdio buffer), and out holds complete
 * lines whenever it is written.  SIGINT, SIGTERM and SIGHUP outside
 * emb_cli_write_out end the process at once (the usual death by that signal, so
 * the shell sees 128 + N); during emb_cli_write_out they are held until the
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

static void die_by(int sig)
{
	const char *f = remove_file, *d = emb_ckpt_pending();

	if (f)
		unlink(f);
	if (d)
		emb_rm_tree(d);
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

void emb_cli_catch_signals(void)
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

void emb_cli_catch_sigbus(const char *prog)
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

void emb_cli_write_out(emb_cli *c, emb_buf *out)
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
