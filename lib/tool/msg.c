/*
 * msg.c - the messages and exits of cmd/emb-*.c: usage errors (exit 2,
 * with the --help hint), fatal errors with their status, warnings, and
 * the check of a file a command reads besides its operands.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/emb-tool.h"

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

