/*
 * run.c - the record driver shared by cmd/emb-*.c (emb_cli_run): the
 * read-parse-transform-write loop with batching by records, tokens and
 * bytes, the per-record error policy (--errors=skip|emit, --strict),
 * --fields/--drop (io/io.h emb_buf_select) on every record written,
 * warnings.  Output goes out
 * through signals.c's emb_cli_write_out only.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/emb-tool.h"
#include "tool/driver.h"

/* input bytes held by one batch at most (a record longer than this is a
 * batch of its own): the token budget alone would let a batch of long
 * lines, each truncated to few tokens, hold many times --max-line */
#define BATCH_BYTES ((size_t)16 << 20)

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
		if (r->parsed)  /* a window's: its document's */
			id = emb_record_raw(r->win ? emb_window_doc(r->win) :
			                             r->rec, "id", &idlen);
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
			int rc;
			emb_buf_select(out, c->fields);
			rc = ops->emit(ctx, r, out, &r->err);
			emb_buf_select(out, NULL);
			if (rc < 0) {
				out->len = mark;
				r->bad = 1;
			} else {
				c->records++;
				c->tokens_done += r->cost;
				if (r->warn.msg[0] && warn(c, r) && c->strict) {
					emb_cli_write_out(c, out);
					return 1;
				}
			}
		}
		if (r->bad) {
			report(c, r, out);
			if (c->strict) {
				emb_cli_write_out(c, out);
				return 1;
			}
		}
		if (out->len >= (1u << 16))
			emb_cli_write_out(c, out);
	}
	/* more input at hand: keep collecting lines; else write them now,
	 * before the next read waits for a slow producer */
	if (!emb_reader_pending(rd))
		emb_cli_write_out(c, out);
	emb_cli_progress(c, rd, 0);
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
	emb_cli_catch_signals();
	c->t0 = emb_cli_now();
	c->t_last = c->t0 - EMB_CLI_PLAIN_EVERY; /* the first status comes at once */
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
			rc = c->chunker ? emb_chunker_next(c->chunker, rd, &r->win, &len,
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
					emb_cli_write_out(c, &out);
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
		int rc;
		err.msg[0] = 0;
		emb_buf_select(&out, c->fields);
		rc = c->finish(ctx, &out, &err);
		emb_buf_select(&out, NULL);
		if (rc < 0) {
			out.len = mark;
			if (c->progress_shown)
				fputs("\r\033[K", stderr);
			c->progress_shown = 0;
			fprintf(stderr, "%s: error: %s\n", c->prog, err.msg);
			c->status = EMB_EXIT_RECORD;
		}
	}
	emb_cli_write_out(c, &out);
	emb_cli_progress(c, NULL, 1);
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
		emb_window_free(b.s[fi]->win);
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

