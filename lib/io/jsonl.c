/*
 * jsonl.c - JSON Lines records: a line reader with a length limit, a
 * validating scanner that records the byte spans of the top-level members
 * of one object (so members a tool does not own are copied to the output
 * byte for byte), field getters that parse only what is asked for, and
 * the output side (emb_buf, emb_out_*, emb_fmt_f32, base64).
 *
 * The scanner is iterative (an explicit depth counter and a bit stack),
 * bounded to JSON_MAX_DEPTH levels, and checks UTF-8 strictly (no
 * overlong forms, no surrogates, nothing above U+10FFFF) and JSON syntax
 * as RFC 8259 (escapes, control characters, number grammar).
 *
 * An empty or whitespace-only line is a bad record ("empty line"): every
 * input line yields exactly one output record or one diagnostic.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"
#include "io/io.h"

#define JSON_MAX_DEPTH 512
#define READ_CHUNK (1 << 16)

/* ------------------------------------------------------------------ */
/* reader                                                              */

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

/* ------------------------------------------------------------------ */
/* UTF-8                                                               */

/* offset of the first invalid byte, or n when S is valid UTF-8 */
static size_t utf8_check(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		k = emb_utf8_seq(u + i, n - i);
		if (!k)
			return i;
		i += k;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* records                                                             */

typedef struct member {
	size_t key, key_len;    /* span of the key string incl. quotes */
	size_t val, val_len;    /* span of the value */
	size_t span, span_len;  /* "key" ws : ws value */
	char *name;             /* unescaped key (NUL-terminated) */
	size_t name_len;
	char *str;              /* unescaped string value, on demand */
	size_t str_len;
} member;

struct emb_record {
	char *text;             /* copy of the line, NUL-terminated */
	size_t len, cap;
	member *m;
	size_t n, mcap;
};

emb_record *emb_record_new(void)
{
	return calloc(1, sizeof(emb_record));
}

static void record_clear(emb_record *rec)
{
	size_t i;

	for (i = 0; i < rec->n; i++) {
		free(rec->m[i].name);
		free(rec->m[i].str);
	}
	/* a record with very many members does not pin its array */
	if (rec->mcap > 1024) {
		free(rec->m);
		rec->m = NULL;
		rec->mcap = 0;
	}
	rec->n = 0;
	rec->len = 0;
}

void emb_record_free(emb_record *rec)
{
	if (!rec)
		return;
	record_clear(rec);
	free(rec->m);
	free(rec->text);
	free(rec);
}

typedef struct scan {
	const char *s;
	size_t n, i;
	const char *why;
} scan;

static void skip_ws(scan *sc)
{
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		sc->i++;
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(const char *s, uint32_t *v)
{
	int i, h;

	*v = 0;
	for (i = 0; i < 4; i++) {
		if ((h = hexval((unsigned char)s[i])) < 0)
			return -1;
		*v = *v << 4 | (uint32_t)h;
	}
	return 0;
}

/* string at sc->i (on the quote); leaves sc->i after the closing quote */
static int scan_string(scan *sc)
{
	const unsigned char *u = (const unsigned char *)sc->s;
	size_t i = sc->i + 1, n = sc->n, k;

	for (;;) {
		unsigned c;
		/* fast run over plain ASCII */
		while (i < n && u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' &&
		       u[i] != '\\')
			i++;
		if (i >= n) {
			sc->i = i;
			sc->why = "unterminated string";
			return -1;
		}
		c = u[i];
		if (c == '"') {
			sc->i = i + 1;
			return 0;
		}
		if (c < 0x20) {
			sc->i = i;
			sc->why = "control character in string";
			return -1;
		}
		if (c == '\\') {
			if (i + 1 >= n) {
				sc->i = i;
				sc->why = "unterminated string";
				return -1;
			}
			c = u[i + 1];
			if (c == 'u') {
				uint32_t v, w;
				if (i + 6 > n || hex4(sc->s + i + 2, &v) < 0) {
					sc->i = i;
					sc->why = "invalid \\u escape";
					return -1;
				}
				if (v >= 0xd800 && v < 0xdc00) {
					if (i + 12 > n || u[i + 6] != '\\' ||
					    u[i + 7] != 'u' ||
					    hex4(sc->s + i + 8, &w) < 0 ||
					    w < 0xdc00 || w >= 0xe000) {
						sc->i = i;
						sc->why = "unpaired surrogate in \\u escape";
						return -1;
					}
					i += 12;
				} else if (v >= 0xdc00 && v < 0xe000) {
					sc->i = i;
					sc->why = "unpaired surrogate in \\u escape";
					return -1;
				} else {
					i += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
				sc->i = i;
				sc->why = "invalid escape in string";
				return -1;
			}
			i += 2;
			continue;
		}
		k = emb_utf8_seq(u + i, n - i);
		if (!k) {
			sc->i = i;
			sc->why = "invalid UTF-8";
			return -1;
		}
		i += k;
	}
}

static int isdig(int c) { return c >= '0' && c <= '9'; }

/* one or more digits from J: *I past them, or -1 (sc->i at J) */
static int digits(scan *sc, size_t *i, size_t j)
{
	if (j >= sc->n || !isdig(sc->s[j])) {
		sc->i = j;
		sc->why = "invalid number";
		return -1;
	}
	while (j < sc->n && isdig(sc->s[j]))
		j++;
	*i = j;
	return 0;
}

static int scan_number(scan *sc)
{
	const char *s = sc->s;
	size_t i = sc->i, n = sc->n;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else if (i < n && isdig(s[i])) {
		while (i < n && isdig(s[i]))
			i++;
	} else {
		sc->i = i;
		sc->why = "invalid number";
		return -1;
	}
	if (i < n && s[i] == '.' && digits(sc, &i, i + 1) < 0)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (digits(sc, &i, i) < 0)
			return -1;
	}
	sc->i = i;
	return 0;
}

static int scan_lit(scan *sc, const char *lit)
{
	size_t k = strlen(lit);

	if (sc->n - sc->i < k || memcmp(sc->s + sc->i, lit, k)) {
		sc->why = "invalid literal";
		return -1;
	}
	sc->i += k;
	return 0;
}

/*
 * One JSON value at sc->i, iteratively; nesting bounded by
 * JSON_MAX_DEPTH.  stack bit d: 1 = inside an object at depth d.
 */
static int scan_value(scan *sc)
{
	unsigned char stack[JSON_MAX_DEPTH / 8 + 1];
	int depth = 0;
	char c;

	for (;;) {
		/* here: expect a value */
		skip_ws(sc);
		if (sc->i >= sc->n) {
			sc->why = "unexpected end of line";
			return -1;
		}
		c = sc->s[sc->i];
		if (c == '{' || c == '[') {
			if (depth >= JSON_MAX_DEPTH) {
				sc->why = "nesting too deep";
				return -1;
			}
			if (c == '{')
				stack[depth / 8] |= (unsigned char)(1u << (depth % 8));
			else
				stack[depth / 8] &= (unsigned char)~(1u << (depth % 8));
			depth++;
			sc->i++;
			skip_ws(sc);
			if (sc->i < sc->n && sc->s[sc->i] == (c == '{' ? '}' : ']')) {
				sc->i++;
				depth--;
				goto after_value;
			}
			if (c == '{')
				goto object_key;
			continue;
		}
		if (c == '"') {
			if (scan_string(sc) < 0)
				return -1;
		} else if (c == '-' || isdig(c)) {
			if (scan_number(sc) < 0)
				return -1;
		} else if (c == 't') {
			if (scan_lit(sc, "true") < 0)
				return -1;
		} else if (c == 'f') {
			if (scan_lit(sc, "false") < 0)
				return -1;
		} else if (c == 'n') {
			if (scan_lit(sc, "null") < 0)
				return -1;
		} else {
			sc->why = "unexpected character";
			return -1;
		}
after_value:
		for (;;) {
			int inobj;
			if (depth == 0)
				return 0;
			inobj = stack[(depth - 1) / 8] >> ((depth - 1) % 8) & 1;
			skip_ws(sc);
			if (sc->i >= sc->n) {
				sc->why = "unexpected end of line";
				return -1;
			}
			c = sc->s[sc->i];
			if (c == ',') {
				sc->i++;
				if (inobj)
					goto object_key;
				break;  /* next array element */
			}
			if (c == (inobj ? '}' : ']')) {
				sc->i++;
				depth--;
				continue;
			}
			sc->why = inobj ? "expected ',' or '}'" : "expected ',' or ']'";
			return -1;
		}
		continue;
object_key:
		skip_ws(sc);
		if (sc->i >= sc->n || sc->s[sc->i] != '"') {
			sc->why = "expected a string key";
			return -1;
		}
		if (scan_string(sc) < 0)
			return -1;
		skip_ws(sc);
		if (sc->i >= sc->n || sc->s[sc->i] != ':') {
			sc->why = "expected ':'";
			return -1;
		}
		sc->i++;
	}
}

/* unescape a validated JSON string span (with quotes) into a new buffer */
static char *unescape(const char *s, size_t n, size_t *out_len)
{
	char *o = malloc(n + 1), *p;
	size_t i;

	if (!o)
		return NULL;
	p = o;
	for (i = 1; i + 1 < n; ) {
		char c = s[i];
		if (c != '\\') {
			*p++ = c;
			i++;
			continue;
		}
		c = s[i + 1];
		switch (c) {
		case 'b': *p++ = '\b'; i += 2; break;
		case 'f': *p++ = '\f'; i += 2; break;
		case 'n': *p++ = '\n'; i += 2; break;
		case 'r': *p++ = '\r'; i += 2; break;
		case 't': *p++ = '\t'; i += 2; break;
		case 'u': {
			uint32_t v, w;
			hex4(s + i + 2, &v);
			i += 6;
			if (v >= 0xd800 && v < 0xdc00) {
				hex4(s + i + 2, &w);
				i += 6;
				v = 0x10000 + ((v - 0xd800) << 10) + (w - 0xdc00);
			}
			p += emb_utf8_put(p, v);
			break;
		}
		default: *p++ = c; i += 2; break;
		}
	}
	*p = 0;
	*out_len = (size_t)(p - o);
	return o;
}

static int bad_json(emb_err *err, const scan *sc)
{
	return emb_err_set(err, "invalid JSON at column %zu: %s", sc->i + 1,
	                   sc->why);
}

int emb_record_parse(emb_record *rec, const char *line, size_t len,
                     emb_err *err)
{
	scan sc;
	size_t k;

	record_clear(rec);
	if (rec->cap > ((size_t)1 << 20) && len + 1 < rec->cap / 4) {
		/* a long line once does not pin its buffer for good: a batch
		 * holds many records, each its own */
		free(rec->text);
		rec->text = NULL;
		rec->cap = 0;
	}
	if (len + 1 > rec->cap) {
		char *p = realloc(rec->text, len + 1);
		if (!p)
			return emb_err_set(err, "out of memory");
		rec->text = p;
		rec->cap = len + 1;
	}
	memcpy(rec->text, line, len);
	rec->text[len] = 0;
	rec->len = len;
	sc.s = rec->text;
	sc.n = len;
	sc.i = 0;
	sc.why = NULL;
	skip_ws(&sc);
	if (sc.i >= len)
		return emb_err_set(err, "empty line");
	if (sc.s[sc.i] != '{') {
		if (sc.i + 3 <= len && !memcmp(sc.s + sc.i, "\xef\xbb\xbf", 3))
			return emb_err_set(err, "starts with a UTF-8 byte order "
			                   "mark (not allowed in JSON Lines: remove "
			                   "it)");
		/* say invalid UTF-8 before anything else when it is */
		k = utf8_check(line, len);
		if (k < len)
			return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
		sc.why = "expected a JSON object";
		return bad_json(err, &sc);
	}
	sc.i++;
	skip_ws(&sc);
	if (sc.i < len && sc.s[sc.i] == '}') {
		sc.i++;
		goto tail;
	}
	for (;;) {
		member *m;
		skip_ws(&sc);
		if (sc.i >= len || sc.s[sc.i] != '"') {
			sc.why = sc.i >= len ? "unexpected end of line" :
			         "expected a string key";
			goto bad;
		}
		if (rec->n == rec->mcap) {
			size_t cap = rec->mcap ? 2 * rec->mcap : 16;
			member *p = realloc(rec->m, cap * sizeof(*p));
			if (!p)
				return emb_err_set(err, "out of memory");
			rec->m = p;
			rec->mcap = cap;
		}
		m = &rec->m[rec->n];
		memset(m, 0, sizeof(*m));
		m->key = m->span = sc.i;
		if (scan_string(&sc) < 0)
			goto bad;
		m->key_len = sc.i - m->key;
		m->name = unescape(sc.s + m->key, m->key_len, &m->name_len);
		if (!m->name)
			return emb_err_set(err, "out of memory");
		rec->n++;
		skip_ws(&sc);
		if (sc.i >= len || sc.s[sc.i] != ':') {
			sc.why = "expected ':'";
			goto bad;
		}
		sc.i++;
		skip_ws(&sc);
		m->val = sc.i;
		if (scan_value(&sc) < 0)
			goto bad;
		m->val_len = sc.i - m->val;
		m->span_len = sc.i - m->span;
		skip_ws(&sc);
		if (sc.i < len && sc.s[sc.i] == ',') {
			sc.i++;
			continue;
		}
		if (sc.i < len && sc.s[sc.i] == '}') {
			sc.i++;
			break;
		}
		sc.why = sc.i >= len ? "unexpected end of line" :
		         "expected ',' or '}'";
		goto bad;
	}
tail:
	skip_ws(&sc);
	if (sc.i < len) {
		sc.why = "trailing characters after the object";
		goto bad;
	}
	return 0;
bad:
	if (!strcmp(sc.why, "invalid UTF-8"))
		return emb_err_set(err, "invalid UTF-8 at column %zu", sc.i + 1);
	k = utf8_check(line, sc.i);
	if (k < sc.i)   /* cannot happen after a valid prefix, but be safe */
		return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	return bad_json(err, &sc);
}

/* append S as a JSON string literal (with quotes) */

int emb_record_from_text(emb_record *rec, const char *line, size_t len,
                         uint64_t id, emb_err *err)
{
	char num[48];       /* {"id":N,"text": with N up to 20 digits */
	emb_buf b;
	size_t k;
	int rc;

	k = utf8_check(line, len);
	if (k < len) {
		record_clear(rec);
		return emb_err_set(err, "invalid UTF-8 at column %zu", k + 1);
	}
	emb_buf_init(&b);
	emb_buf_add(&b, num, (size_t)snprintf(num, sizeof(num),
	                                      "{\"id\":%llu,\"text\":",
	                                      (unsigned long long)id));
	emb_buf_add_jstr(&b, line, len);
	emb_buf_add(&b, "}", 1);
	rc = emb_record_parse(rec, b.p, b.len, err);
	emb_buf_release(&b);
	return rc;
}

/* last member named KEY (as JSON does: the last duplicate wins) */
static member *find(const emb_record *rec, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = rec->n; i-- > 0; ) {
		member *m = &rec->m[i];
		if (m->name_len == kl && !memcmp(m->name, key, kl))
			return m;
	}
	return NULL;
}

int emb_record_has(const emb_record *rec, const char *key)
{
	return find(rec, key) != NULL;
}

const char *emb_record_raw(const emb_record *rec, const char *key,
                           size_t *len)
{
	member *m = find(rec, key);

	if (!m)
		return NULL;
	if (len)
		*len = m->val_len;
	return rec->text + m->val;
}

int emb_record_get_string(const emb_record *rec, const char *key,
                          const char **s, size_t *len, emb_err *err)
{
	member *m = find(rec, key);

	*s = NULL;
	*len = 0;
	if (!m)
		return emb_err_set(err, "missing field '%s'", key);
	if (rec->text[m->val] != '"')
		return emb_err_set(err, "field '%s' is not a string", key);
	if (!m->str) {
		m->str = unescape(rec->text + m->val, m->val_len, &m->str_len);
		if (!m->str)
			return emb_err_set(err, "out of memory");
	}
	*s = m->str;
	*len = m->str_len;
	return 0;
}

void emb_record_drop_strings(const emb_record *rec)
{
	for (size_t i = 0; i < rec->n; i++) {
		free(rec->m[i].str);
		rec->m[i].str = NULL;
		rec->m[i].str_len = 0;
	}
}

static void ws_skip(const char *s, size_t *i)
{
	while (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n' || s[*i] == '\r')
		(*i)++;
}

/* grow a typed array */
static int grow(void **p, size_t *cap, size_t need, size_t elsize)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / elsize)
			return -1;
		c *= 2;
	}
	q = realloc(*p, c * elsize);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

int emb_record_get_int32s(const emb_record *rec, const char *key,
                          int32_t **v, size_t *n, emb_err *err)
{
	member *m = find(rec, key);
	const char *s;
	size_t i, cnt = 0, cap = 0;
	int32_t *a = NULL;

	*v = NULL;
	*n = 0;
	if (!m)
		return emb_err_set(err, "missing field '%s'", key);
	s = rec->text;
	i = m->val;
	if (s[i] != '[')
		return emb_err_set(err, "field '%s' is not an array of integers",
		                   key);
	i++;
	ws_skip(s, &i);
	if (s[i] == ']')
		goto done;
	for (;;) {
		int neg = 0;
		int64_t x = 0;
		size_t d0;

		ws_skip(s, &i);
		if (s[i] == '-') {
			neg = 1;
			i++;
		}
		d0 = i;
		while (isdig(s[i])) {
			if (x <= (int64_t)INT32_MAX + 1)
				x = x * 10 + (s[i] - '0');
			i++;
		}
		if (i == d0 || s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
			free(a);
			return emb_err_set(err, "field '%s' is not an array of integers",
			                   key);
		}
		if (neg)
			x = -x;
		if (x > INT32_MAX || x < INT32_MIN) {
			free(a);
			return emb_err_set(err, "field '%s': element %zu is out of range",
			                   key, cnt);
		}
		if (grow((void **)&a, &cap, cnt + 1, sizeof(*a)) < 0) {
			free(a);
			return emb_err_set(err, "out of memory");
		}
		a[cnt++] = (int32_t)x;
		ws_skip(s, &i);
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] == ']')
			break;
		free(a);
		return emb_err_set(err, "field '%s' is not an array of integers",
		                   key);
	}
done:
	if (!a)
		a = malloc(sizeof(*a));
	if (!a)
		return emb_err_set(err, "out of memory");
	*v = a;
	*n = cnt;
	return 0;
}

/* parse a flat array of numbers at s[*i] == '['; appends to *a */
static int parse_float_row(const char *s, size_t *i, float **a, size_t *cnt,
                           size_t *cap, const char *key, emb_err *err)
{
	(*i)++;
	ws_skip(s, i);
	if (s[*i] == ']') {
		(*i)++;
		return 0;
	}
	for (;;) {
		char *end;
		float f;

		ws_skip(s, i);
		if (s[*i] != '-' && !isdig(s[*i]))
			return emb_err_set(err, "field '%s' holds a value that is not a number",
			                   key);
		errno = 0;
		f = strtof(s + *i, &end);
		if (isinf(f))
			return emb_err_set(err, "field '%s': number out of float32 range",
			                   key);
		*i = (size_t)(end - s);
		if (grow((void **)a, cap, *cnt + 1, sizeof(float)) < 0)
			return emb_err_set(err, "out of memory");
		(*a)[(*cnt)++] = f;
		ws_skip(s, i);
		if (s[*i] == ',') {
			(*i)++;
			continue;
		}
		if (s[*i] == ']') {
			(*i)++;
			return 0;
		}
		return emb_err_set(err, "field '%s' is not an array of numbers", key);
	}
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int is_little_endian(void)
{
	const uint16_t x = 1;
	return *(const unsigned char *)&x == 1;
}

/* decode one base64 string member value span into floats appended */
static int b64_row(const char *s, size_t len, float **a, size_t *cnt,
                   size_t *cap, size_t *ncols, const char *key, emb_err *err)
{
	unsigned char *raw;
	size_t i, nf, tmp;
	long rn;
	char *str;

	/* base64 never needs escapes; unescape anyway for robustness */
	str = unescape(s, len, &tmp);
	if (!str)
		return emb_err_set(err, "out of memory");
	raw = malloc(tmp / 4 * 3 + 3);
	rn = raw ? emb_base64_decode(raw, str, tmp, 1) : -1;
	if (rn < 0 || rn % 4) {
		free(str);
		free(raw);
		return emb_err_set(err, "field '%s_b64' is not valid base64 of float32 values",
		                   key);
	}
	free(str);
	nf = (size_t)rn / 4;
	if (grow((void **)a, cap, *cnt + nf + 1, sizeof(float)) < 0) {
		free(raw);
		return emb_err_set(err, "out of memory");
	}
	for (i = 0; i < nf; i++) {
		uint32_t w;
		float f;
		if (is_little_endian())
			memcpy(&w, raw + 4 * i, 4);
		else
			w = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
			    (uint32_t)raw[4 * i + 2] << 16 |
			    (uint32_t)raw[4 * i + 3] << 24;
		memcpy(&f, &w, 4);
		if (!isfinite(f)) {
			free(raw);
			return emb_err_set(err, "field '%s_b64' holds a value that is not finite",
			                   key);
		}
		(*a)[*cnt + i] = f;
	}
	*cnt += nf;
	*ncols = nf;
	free(raw);
	return 0;
}

/* span of the next string element starting at s[*i] == '"' */
static size_t str_span(const char *s, size_t i)
{
	size_t j = i + 1;

	while (s[j] != '"') {
		if (s[j] == '\\')
			j++;
		j++;
	}
	return j + 1 - i;
}

int emb_record_get_floats(const emb_record *rec, const char *key,
                          float **v, size_t *rows, size_t *cols,
                          emb_err *err)
{
	member *m = find(rec, key);
	const char *s = rec->text;
	float *a = NULL;
	size_t cnt = 0, cap = 0, nr = 0, nc = 0, i;
	char kb[256];

	*v = NULL;
	*rows = *cols = 0;
	if (!m) {
		snprintf(kb, sizeof(kb), "%s_b64", key);
		m = find(rec, kb);
		if (!m)
			return emb_err_set(err, "missing field '%s'", key);
		i = m->val;
		if (s[i] == '"') {
			if (b64_row(s + i, m->val_len, &a, &cnt, &cap, &nc, key,
			            err) < 0)
				goto fail;
			nr = 1;
		} else if (s[i] == '[') {
			i++;
			ws_skip(s, &i);
			if (s[i] == ']')
				goto out;
			for (;;) {
				size_t c;
				ws_skip(s, &i);
				if (s[i] != '"') {
					emb_err_set(err, "field '%s_b64' is not a base64 string or an array of them",
					            key);
					goto fail;
				}
				if (b64_row(s + i, str_span(s, i), &a, &cnt, &cap,
				            &c, key, err) < 0)
					goto fail;
				if (nr > 0 && c != nc) {
					emb_err_set(err, "field '%s_b64': row %zu has %zu values, row 0 has %zu",
					            key, nr, c, nc);
					goto fail;
				}
				nc = c;
				nr++;
				i += str_span(s, i);
				ws_skip(s, &i);
				if (s[i] == ',') {
					i++;
					continue;
				}
				break;  /* ']' (validated JSON) */
			}
		} else {
			emb_err_set(err, "field '%s_b64' is not a base64 string or an array of them",
			            key);
			goto fail;
		}
		goto out;
	}
	i = m->val;
	if (s[i] != '[') {
		emb_err_set(err, "field '%s' is not an array of numbers", key);
		goto fail;
	}
	{
		size_t j = i + 1;
		ws_skip(s, &j);
		if (s[j] == ']')
			goto out;       /* [] : 0 x 0 */
		if (s[j] != '[') {
			if (parse_float_row(s, &i, &a, &cnt, &cap, key, err) < 0)
				goto fail;
			nr = 1;
			nc = cnt;
			goto out;
		}
	}
	/* array of arrays */
	i++;
	for (;;) {
		size_t before = cnt;
		ws_skip(s, &i);
		if (s[i] != '[') {
			emb_err_set(err, "field '%s' mixes numbers and arrays", key);
			goto fail;
		}
		if (parse_float_row(s, &i, &a, &cnt, &cap, key, err) < 0)
			goto fail;
		if (nr > 0 && cnt - before != nc) {
			emb_err_set(err, "field '%s': row %zu has %zu values, row 0 has %zu",
			            key, nr, cnt - before, nc);
			goto fail;
		}
		nc = cnt - before;
		nr++;
		ws_skip(s, &i);
		if (s[i] == ',') {
			i++;
			continue;
		}
		break;
	}
out:
	if (!a)
		a = malloc(sizeof(float));
	if (!a)
		return emb_err_set(err, "out of memory");
	*v = a;
	*rows = nr;
	*cols = nc;
	return 0;
fail:
	free(a);
	return -1;
}

/* ------------------------------------------------------------------ */
/* output                                                              */

void emb_buf_init(emb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void emb_buf_release(emb_buf *b)
{
	free(b->p);
	free(b->gone);
	memset(b, 0, sizeof(*b));
}

/* room for EXTRA more bytes and the terminating 0; -1 (b->failed set)
 * when memory runs out: the writers then stop writing, emb_out_end drops
 * the record being built and the caller reports it (emb_buf_failed) */
static int buf_reserve(emb_buf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (b->failed)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2 || extra > SIZE_MAX / 2) {
			b->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int emb_buf_failed(const emb_buf *b)
{
	return b->failed;
}

void emb_buf_add(emb_buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void buf_addc(emb_buf *b, char c)
{
	if (buf_reserve(b, 1) < 0)
		return;
	b->p[b->len++] = c;
	b->p[b->len] = 0;
}

void emb_buf_add_jstr(emb_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	(void)buf_reserve(b, n + 2);
	buf_addc(b, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[7];
		size_t el = 2;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		emb_buf_add(b, s + run, i - run);
		run = i + 1;
		e[0] = '\\';
		switch (c) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		default:
			e[1] = 'u'; e[2] = '0'; e[3] = '0';
			e[4] = hex[c >> 4]; e[5] = hex[c & 15];
			el = 6;
		}
		emb_buf_add(b, e, el);
	}
	emb_buf_add(b, s + run, n - run);
	buf_addc(b, '"');
}

/*
 * Shortest decimal that reads back (strtof, round to nearest) as v.
 *
 * For p = 9, 8, ... significant digits we form the correctly rounded
 * p-digit decimal of v and keep going down while it still reads back as
 * v (round-tripping is monotonic in p; 9 digits always round-trip a
 * float32).  The p-digit integer comes from scaling |v| (exact in a
 * double) by a power of ten in double arithmetic: the relative error is a
 * few 2^-53, far below the 10^-9 resolution needed, except when the
 * scaled value lies within 1e-6 of a rounding tie; then printf's exact
 * conversion decides.  Every candidate is checked with strtof, so the
 * output always round-trips.
 */
static const double p10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* d * 10^k, k in [-60, 60] */
static double scale10(double d, int k)
{
	while (k > 22) {
		d *= 1e22;
		k -= 22;
	}
	while (k < -22) {
		d /= 1e22;
		k += 22;
	}
	return k >= 0 ? d * p10[k] : d / p10[-k];
}

/* the correctly rounded P-digit decimal of D > 0: digits into dig, and
 * the decimal exponent of the first digit */
static void round_p(char *dig, int *exp10, uint64_t *nv, int *kv,
                    double d, int p, int e10)
{
	double sc, fl, frac;
	uint64_t n, lim = (uint64_t)p10[p];
	int i, tries;

	for (tries = 0; tries < 3; tries++) {
		sc = scale10(d, p - 1 - e10);
		if (sc < p10[p - 1] * (1 - 1e-12)) {
			e10--;
			continue;
		}
		if (sc >= p10[p] * (1 + 1e-12)) {
			e10++;
			continue;
		}
		break;
	}
	fl = floor(sc);
	frac = sc - fl;
	if (tries == 3 || fabs(frac - 0.5) < 1e-6 || sc < p10[p - 1] * (1 - 1e-9)) {
		char b[40];
		snprintf(b, sizeof(b), "%.*e", p - 1, d);
		dig[0] = b[0];
		if (p > 1)
			memcpy(dig + 1, b + 2, (size_t)p - 1);
		*exp10 = atoi(strchr(b, 'e') + 1);
		*kv = INT_MIN;
		return;
	}
	n = (uint64_t)fl + (frac > 0.5);
	*nv = n;
	*kv = p - 1 - e10;      /* the candidate is n * 10^-kv */
	if (n >= lim) {         /* 9.99.. rounded up to 10.0.. */
		n /= 10;
		e10++;
	}
	if (n < lim / 10)       /* 0.99.. below the range: cannot happen */
		n = lim / 10;
	for (i = p - 1; i >= 0; i--) {
		dig[i] = (char)('0' + n % 10);
		n /= 10;
	}
	*exp10 = e10;
}

/* write digits D (p of them, D[0] at 10^e) as a JSON number */
static size_t fmt_digits(char *out, int neg, const char *d, int p, int e)
{
	char *o = out;
	int i;

	while (p > 1 && d[p - 1] == '0')
		p--;
	if (neg)
		*o++ = '-';
	if (e >= -5 && e < 9 && (e < 0 || e < p + 3)) {
		if (e < 0) {
			*o++ = '0';
			*o++ = '.';
			for (i = -1; i > e; i--)
				*o++ = '0';
			for (i = 0; i < p; i++)
				*o++ = d[i];
		} else {
			for (i = 0; i <= e; i++)
				*o++ = i < p ? d[i] : '0';
			if (p > e + 1) {
				*o++ = '.';
				for (i = e + 1; i < p; i++)
					*o++ = d[i];
			}
		}
	} else {
		int ae = e < 0 ? -e : e;
		*o++ = d[0];
		if (p > 1) {
			*o++ = '.';
			for (i = 1; i < p; i++)
				*o++ = d[i];
		}
		*o++ = 'e';
		*o++ = e < 0 ? '-' : '+';
		if (ae >= 10) {
			*o++ = (char)('0' + ae / 10);
			*o++ = (char)('0' + ae % 10);
		} else {
			*o++ = '0';
			*o++ = (char)('0' + ae);
		}
	}
	*o = 0;
	return (size_t)(o - out);
}

/* 1: n * 10^-k lies strictly inside (lo, hi); 0: outside; -1: too close
 * to a bound to tell in double arithmetic */
static int inside(uint64_t n, int k, double lo, double hi)
{
	double x = (double)n, l = scale10(lo, k), h = scale10(hi, k);

	if (fabs(x - l) < 1e-6 || fabs(x - h) < 1e-6)
		return -1;
	return x > l && x < h;
}

size_t emb_fmt_f32(char *out, float v)
{
	char dig[10], best[10], cand[24];
	int neg, p, best_p, best_e, e10, de, k, in;
	uint64_t n;
	float a, prev, next;
	double d, lo, hi;

	if (!isfinite(v)) {
		memcpy(out, "null", 5);
		return 4;
	}
	if (v == 0) {
		if (signbit(v)) {
			memcpy(out, "-0", 3);
			return 2;
		}
		memcpy(out, "0", 2);
		return 1;
	}
	neg = v < 0;
	a = fabsf(v);
	d = (double)a;
	/* the decimals that read back as a lie between the midpoints to
	 * its neighbours (exact in double) */
	prev = nextafterf(a, 0.0f);
	next = nextafterf(a, INFINITY);
	lo = ((double)prev + d) / 2;
	hi = isinf(next) ? d + (d - (double)prev) / 2 : (d + (double)next) / 2;
	e10 = (int)floor(log10(d));
	round_p(best, &best_e, &n, &k, d, 9, e10);
	best_p = 9;
	for (p = 8; p >= 1; p--) {
		round_p(dig, &de, &n, &k, d, p, e10);
		in = k == INT_MIN ? -1 : inside(n, k, lo, hi);
		if (in < 0) {
			fmt_digits(cand, 0, dig, p, de);
			in = strtof(cand, NULL) == a;
		}
		if (!in)
			break;
		memcpy(best, dig, (size_t)p);
		best_p = p;
		best_e = de;
	}
	return fmt_digits(out, neg, best, best_p, best_e);
}

static void b64_encode(emb_buf *b, const unsigned char *s, size_t n)
{
	size_t i;
	char q[4];

	if (buf_reserve(b, (n + 2) / 3 * 4 + 4) < 0)
		return;
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		b->p[b->len++] = b64chars[w >> 18];
		b->p[b->len++] = b64chars[(w >> 12) & 63];
		b->p[b->len++] = b64chars[(w >> 6) & 63];
		b->p[b->len++] = b64chars[w & 63];
	}
	if (i < n) {
		uint32_t w = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)s[i + 1] << 8;
		q[0] = b64chars[w >> 18];
		q[1] = b64chars[(w >> 12) & 63];
		q[2] = i + 1 < n ? b64chars[(w >> 6) & 63] : '=';
		q[3] = '=';
		memcpy(b->p + b->len, q, 4);
		b->len += 4;
	}
	b->p[b->len] = 0;
}

static void b64_floats(emb_buf *b, const float *v, size_t n)
{
	unsigned char tmp[3 * 256];
	size_t i = 0;

	buf_addc(b, '"');
	while (i < n) {
		/* chunks of 192 floats = 768 bytes, a multiple of 3 */
		size_t k = n - i < 192 ? n - i : 192, j;
		for (j = 0; j < k; j++) {
			uint32_t w;
			memcpy(&w, &v[i + j], 4);
			tmp[4 * j] = (unsigned char)w;
			tmp[4 * j + 1] = (unsigned char)(w >> 8);
			tmp[4 * j + 2] = (unsigned char)(w >> 16);
			tmp[4 * j + 3] = (unsigned char)(w >> 24);
		}
		b64_encode(b, tmp, 4 * k);
		i += k;
	}
	buf_addc(b, '"');
}

void emb_out_begin(emb_buf *b, const emb_record *rec,
                   const char *const *drop)
{
	size_t need = rec ? rec->n : 0, i;

	b->rec = rec;
	b->drop = drop;
	b->obj = b->len;
	b->nnew = 0;
	if (need > b->gone_cap) {
		unsigned char *g = realloc(b->gone, need);
		if (!g) {
			b->failed = 1;
			b->rec = NULL;
			return;
		}
		b->gone = g;
		b->gone_cap = need;
	}
	for (i = 0; i < need; i++)
		b->gone[i] = 0;
	buf_addc(b, '{');
}

/* start a new member KEY (with suffix SUF, may be "") */
static void out_key(emb_buf *b, const char *key, const char *suf)
{
	const emb_record *rec = b->rec;
	size_t kl = strlen(key), sl = strlen(suf), i;

	if (rec) {
		/* the written key replaces KEY and its other form */
		for (i = 0; i < rec->n; i++) {
			const member *m = &rec->m[i];
			if (m->name_len < kl || memcmp(m->name, key, kl))
				continue;
			if (m->name_len == kl ||
			    (m->name_len == kl + 4 && !memcmp(m->name + kl, "_b64", 4)))
				b->gone[i] = 1;
		}
	}
	if (b->nnew++)
		buf_addc(b, ',');
	if (buf_reserve(b, kl + sl + 3) < 0)
		return;
	b->p[b->len++] = '"';
	memcpy(b->p + b->len, key, kl);
	b->len += kl;
	memcpy(b->p + b->len, suf, sl);
	b->len += sl;
	b->p[b->len++] = '"';
	b->p[b->len++] = ':';
	b->p[b->len] = 0;
}

void emb_out_int(emb_buf *b, const char *key, long long v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%lld", v);

	out_key(b, key, "");
	emb_buf_add(b, t, (size_t)n);
}

void emb_out_string(emb_buf *b, const char *key, const char *s, size_t n)
{
	out_key(b, key, "");
	emb_buf_add_jstr(b, s, n);
}

void emb_out_json(emb_buf *b, const char *key, const char *json, size_t n)
{
	out_key(b, key, "");
	emb_buf_add(b, json, n);
}

static size_t put_i32(char *d, const void *v, size_t i)
{
	return (size_t)sprintf(d, "%d", (int)((const int32_t *)v)[i]);
}

static size_t put_f32(char *d, const void *v, size_t i)
{
	return emb_fmt_f32(d, ((const float *)v)[i]);
}

/* [v0,v1,...]: N elements of V, each at most PER bytes as PUT writes it */
static void array_json(emb_buf *b, const void *v, size_t n, size_t per,
                       size_t (*put)(char *, const void *, size_t))
{
	if (n > SIZE_MAX / (2 * per) || buf_reserve(b, per * n + 2) < 0) {
		b->failed = 1;
		return;
	}
	b->p[b->len++] = '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			b->p[b->len++] = ',';
		b->len += put(b->p + b->len, v, i);
	}
	b->p[b->len++] = ']';
	b->p[b->len] = 0;
}

void emb_out_int32s(emb_buf *b, const char *key, const int32_t *v, size_t n)
{
	out_key(b, key, "");
	array_json(b, v, n, 12, put_i32);
}

static void floats_json(emb_buf *b, const float *v, size_t n)
{
	array_json(b, v, n, 17, put_f32);
}

void emb_out_floats(emb_buf *b, const char *key, const float *v, size_t n,
                    int b64)
{
	out_key(b, key, b64 ? "_b64" : "");
	if (b64)
		b64_floats(b, v, n);
	else
		floats_json(b, v, n);
}

void emb_out_matrix(emb_buf *b, const char *key, const float *v,
                    size_t rows, size_t cols, int b64)
{
	size_t r;

	out_key(b, key, b64 ? "_b64" : "");
	buf_addc(b, '[');
	for (r = 0; r < rows; r++) {
		if (r)
			buf_addc(b, ',');
		if (b64)
			b64_floats(b, v + r * cols, cols);
		else
			floats_json(b, v + r * cols, cols);
	}
	buf_addc(b, ']');
}

void emb_out_strings(emb_buf *b, const char *key, const char *const *v,
                     size_t n)
{
	size_t i;

	out_key(b, key, "");
	buf_addc(b, '[');
	for (i = 0; i < n; i++) {
		if (i)
			buf_addc(b, ',');
		emb_buf_add_jstr(b, v[i] ? v[i] : "", v[i] ? strlen(v[i]) : 0);
	}
	buf_addc(b, ']');
}

static int dropped(const emb_buf *b, const member *m)
{
	const char *const *d;

	if (!b->drop)
		return 0;
	for (d = b->drop; *d; d++)
		if (strlen(*d) == m->name_len && !memcmp(*d, m->name, m->name_len))
			return 1;
	return 0;
}

void emb_out_end(emb_buf *b)
{
	const emb_record *rec = b->rec;
	size_t i, pass = 0, body = b->obj + 1, nnew = b->len - body, k = 0;
	int first = 1;

	if (b->failed) {
		b->len = b->obj;        /* drop the half-built record */
		b->rec = NULL;
		return;
	}
	if (rec) {
		for (i = 0; i < rec->n; i++)
			if (!b->gone[i] && !dropped(b, &rec->m[i]))
				pass += rec->m[i].span_len + 1;
		if (pass && !nnew)
			pass--;         /* no comma before the new members */
		/* move the new members right and copy the kept ones in front */
		if (buf_reserve(b, pass) < 0) {
			b->len = b->obj;
			b->rec = NULL;
			return;
		}
		memmove(b->p + body + pass, b->p + body, nnew);
		for (i = 0; i < rec->n; i++) {
			const member *m = &rec->m[i];
			if (b->gone[i] || dropped(b, m))
				continue;
			if (!first)
				b->p[body + k++] = ',';
			first = 0;
			memcpy(b->p + body + k, rec->text + m->span, m->span_len);
			k += m->span_len;
		}
		if (nnew && pass)
			b->p[body + k++] = ',';
		b->len += pass;
	}
	b->rec = NULL;
	emb_buf_add(b, "}\n", 2);
}
