/*
 * tool/driver.h - what the parts of the record driver share among
 * themselves (cli.c: options; run.c: the loop; progress.c; signals.c;
 * msg.c, the messages, is emb-tool.h's),
 * not for commands: they use emb-tool.h.
 * Layer tool.
 */
#ifndef EMB_TOOL_DRIVER_H
#define EMB_TOOL_DRIVER_H

#include "tool/emb-tool.h"

/* seconds between plain progress lines (--progress=always, stderr not a
 * terminal) */
#define EMB_CLI_PLAIN_EVERY 10.0

/* the monotonic clock, in seconds */
double emb_cli_now(void);
/* a progress line for the records done so far (R: the reader of the
 * input being read, borrowed, or NULL); FINAL: the last one, always
 * shown when progress is, ending the line */
void emb_cli_progress(emb_cli *c, const emb_reader *r, int final);
/* SIGBUS: "PROG: error: a memory-mapped model file changed ..." and
 * exit 3 (PROG borrowed, copied into the message at once) */
void emb_cli_catch_sigbus(const char *prog);
/* write OUT (whole lines) to standard output with the signals held,
 * then empty it; exits 4 on a write error, quietly on a broken pipe, and
 * dies by a signal that came during the write once it is done */
void emb_cli_write_out(emb_cli *c, emb_buf *out);

#endif /* EMB_TOOL_DRIVER_H */
