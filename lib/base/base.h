/*
 * base/base.h - the bottom layer: errors and exit codes, the version.
 * Every other layer includes it (see lib/README).
 *
 * Conventions (README "Hacking"):
 *   - lifecycle: emb_x_init/_release for caller-owned structs,
 *     emb_x_load/_open + emb_x_free for opaque heap objects;
 *   - functions that can fail return 0 on success and -1 on failure and
 *     fill an emb_err with a one-line, lower-case message without a full
 *     stop, naming the file and field involved;
 *   - output arguments first, const inputs after;
 *   - ownership words in every prototype comment: "borrowed" (the caller
 *     must not free it; valid while its owner lives), "new" (caller frees
 *     with the named function), "stolen" (callee takes ownership).
 */
#ifndef EMB_BASE_H
#define EMB_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EMB_VERSION "0.1.0"

/* ------------------------------------------------------------------ */
/* errors and exit codes                                               */

#define EMB_ERR_MAX 512
typedef struct emb_err {
	char msg[EMB_ERR_MAX];
} emb_err;

/* Format a one-line message into err (may be NULL). Always returns -1.
 * The message is built apart and then copied, so an argument may be
 * err->msg (a prefix added to the message already there). */
int emb_err_set(emb_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

enum {
	EMB_EXIT_OK = 0,     /* every record produced an output record */
	EMB_EXIT_RECORD = 1, /* at least one record got a diagnostic */
	EMB_EXIT_USAGE = 2,  /* bad command line */
	EMB_EXIT_MODEL = 3,  /* model/tokenizer/manifest could not be loaded */
	EMB_EXIT_WRITE = 4,  /* writing stdout failed */
	EMB_EXIT_INPUT = 5,  /* an input file could not be read (missing,
	                        unreadable, a directory); before 1 */
};

#endif /* EMB_BASE_H */
