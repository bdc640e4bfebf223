/*
 * outwrite.h - writing whole lines to standard output so that a signal
 * can stop the writer at a line boundary even when the reader has
 * stopped reading (outwrite.c)
 */
#ifndef EMB_OUTWRITE_H
#define EMB_OUTWRITE_H

#include <signal.h>
#include <stddef.h>

/* seconds a line cut by a signal gets to be finished */
#define EMB_WRITE_GRACE_MS 1000

/* Write P[0, LEN) (borrowed: complete lines) to FD.  To a pipe it goes
 * in runs of whole lines that fit the pipe's free room, so that no write
 * blocks part-way through a line; a line longer than the pipe can hold
 * is written as it comes.  Once *STOP is nonzero (a signal handler sets
 * it) it returns 1 at the next line boundary, with *DONE the bytes
 * written; a line already started then gets EMB_WRITE_GRACE_MS to be
 * finished (the reader must take it), after which it returns 1 anyway.
 * 0: all written; -1: write error (errno). */
int emb_write_lines(int fd, const char *p, size_t len,
                    volatile sig_atomic_t *stop, size_t *done);

#endif /* EMB_OUTWRITE_H */
