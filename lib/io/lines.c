/*
 * lines.c - the line reader of JSON Lines input (emb_reader, io/io.h):
 * lines of any length up to a limit, a longer one skipped without being
 * held in memory and reported; NUL bytes refused; regular files and
 * FIFOs only (never a device); progress in bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"

#define READ_CHUNK (1 << 16)

struct emb_reader {
	int fd;
	int is_stdin;
	char *name;
	char *rbuf;            /* READ_CHUNK bytes of raw input */
	size_t rpos, rend;
	char *line;            /* assembled line when it spans reads */
	size_t line_len, line_cap;
	size_t max_line;
	size_t lineno;
	int eof;
	uint64_t done, total;
};

int emb_reader_open_fd(emb_reader **out, int fd, const char *name,
                       size_t max_line, emb_err *err)
{
	emb_reader *r;
	struct stat st;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		if (fd > 0)
			close(fd);
		return emb_err_set(err, "out of memory");
	}
	r->fd = fd;
	r->is_stdin = fd == 0;
	r->name = strdup(name);
	r->rbuf = malloc(READ_CHUNK);
	if (!r->name || !r->rbuf) {
		emb_reader_free(r);
		return emb_err_set(err, "out of memory");
	}
	if (fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		emb_err_set(err, "%s: not a regular file (a directory)", r->name);
		emb_reader_free(r);
		return -1;
	}
	if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t pos = lseek(r->fd, 0, SEEK_CUR);
		r->total = (uint64_t)st.st_size;
		if (pos > 0 && (uint64_t)pos <= r->total)
			r->total -= (uint64_t)pos;
	}
	r->max_line = max_line ? max_line : (size_t)-1;
	*out = r;
	return 0;
}

int emb_reader_open(emb_reader **out, const char *path, size_t max_line,
                    emb_err *err)
{
	int fd;

	*out = NULL;
	if (!path || !strcmp(path, "-"))
		return emb_reader_open_fd(out, 0, "<stdin>", max_line, err);
	/* a regular file or a FIFO; never a device, socket or directory */
	if ((fd = emb_file_open_stream(path, err)) < 0)
		return -1;
	return emb_reader_open_fd(out, fd, path, max_line, err);
}

void emb_reader_free(emb_reader *r)
{
	if (!r)
		return;
	if (!r->is_stdin && r->fd >= 0)
		close(r->fd);
	free(r->name);
	free(r->rbuf);
	free(r->line);
	free(r);
}

void emb_reader_shrink(emb_reader *r)
{
	if (r->line_cap >= ((size_t)1 << 18)) {
		free(r->line);
		r->line = NULL;
		r->line_cap = 0;
		r->line_len = 0;
	}
}

const char *emb_reader_name(const emb_reader *r) { return r->name; }
size_t emb_reader_lineno(const emb_reader *r) { return r->lineno; }

void emb_reader_progress(const emb_reader *r, uint64_t *done, uint64_t *total)
{
	*done = r->done;
	*total = r->total;
}

int emb_reader_pending(const emb_reader *r)
{
	struct pollfd p = { r->fd, POLLIN, 0 };

	if (r->rpos < r->rend || r->eof)
		return 1;
	/* readable now (data, end of file, an error): no wait */
	return poll(&p, 1, 0) != 0;
}

/* refill rbuf; 1: data, 0: eof, -1: error */
static int reader_fill(emb_reader *r, emb_err *err)
{
	ssize_t n;

	if (r->eof)
		return 0;
	for (;;) {
		n = read(r->fd, r->rbuf, READ_CHUNK);
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		emb_err_set(err, "read error: %s", strerror(errno));
		r->eof = 1;
		return -1;
	}
	if (n == 0) {
		r->eof = 1;
		return 0;
	}
	r->rpos = 0;
	r->rend = (size_t)n;
	return 1;
}

static int line_append(emb_reader *r, const char *s, size_t n)
{
	if (r->line_len + n > r->line_cap) {
		size_t cap = r->line_cap ? r->line_cap : 256;
		char *p;
		while (cap < r->line_len + n)
			cap *= 2;
		p = realloc(r->line, cap + 1);
		if (!p)
			return -1;
		r->line = p;
		r->line_cap = cap;
	}
	memcpy(r->line + r->line_len, s, n);
	r->line_len += n;
	return 0;
}

int emb_reader_next(emb_reader *r, const char **line, size_t *len,
                    emb_err *err)
{
	size_t total = 0;       /* bytes of this line so far (no newline) */
	int have = 0;           /* saw any byte (or newline) of a line */
	int too_long = 0, nul = 0, oom = 0, rc;
	int direct = 1;         /* line lies entirely in rbuf */
	const char *start = NULL;

	*line = NULL;
	*len = 0;
	r->line_len = 0;
	for (;;) {
		char *p, *nl;
		size_t avail, seg;

		if (r->rpos >= r->rend) {
			if (have && direct && start) {
				/* the line continues past this chunk: keep it */
				if (!too_long && line_append(r, start,
				    total) < 0)
					oom = 1;
				direct = 0;
			}
			rc = reader_fill(r, err);
			if (rc < 0) {
				if (!have)
					r->lineno++;
				return -1;
			}
			if (rc == 0) {
				if (!have)
					return 0;
				break;  /* last line without newline */
			}
		}
		if (!have)
			r->lineno++;
		have = 1;
		p = r->rbuf + r->rpos;
		avail = r->rend - r->rpos;
		nl = memchr(p, '\n', avail);
		seg = nl ? (size_t)(nl - p) : avail;
		if (!nul && memchr(p, '\0', seg))
			nul = 1;
		if (direct && !start && total == 0)
			start = p;
		if (!too_long && total + seg > r->max_line) {
			too_long = 1;
			r->line_len = 0;
		}
		if (!direct && !too_long && line_append(r, p, seg) < 0)
			oom = 1;
		total += seg;
		r->rpos += seg + (nl ? 1 : 0);
		r->done += seg + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (too_long)
		return emb_err_set(err, "line too long (more than %zu bytes)",
		                   r->max_line);
	if (oom)
		return emb_err_set(err, "out of memory reading a line of %zu bytes",
		                   total);
	if (nul)
		return emb_err_set(err, "NUL byte in line");
	if (direct) {
		*line = start ? start : "";
	} else {
		*line = r->line ? r->line : "";
	}
	if (total > 0 && (*line)[total - 1] == '\r')
		total--;
	*len = total;
	return 1;
}
