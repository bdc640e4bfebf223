/*
 * jscan.c - the streaming JSON scanner (io/jscan.h): the one JSON grammar
 * of emb, under jansson's rules or the record path's.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "io/jscan.h"

/* byte classes inside a string: 0 plain ASCII, 1 '"', 2 '\\', 3 a
 * control character, 4 a byte >= 0x80 */
static inline int str_class(unsigned c)
{
	return c >= 0x80 ? 4 : c < 0x20 ? 3 : c == '"' ? 1 : c == '\\' ? 2 : 0;
}

/* the errors a scan reports */
enum {
	E_END, E_CHAR, E_DEPTH, E_OBJ_SEP, E_ARR_SEP, E_STRING, E_COLON,
	E_STR_END, E_CTRL, E_UTF8, E_ESC, E_UESC, E_SURR, E_NUL, E_NUMBER,
	E_TOKEN, E_TRAIL, E_OBJ, E_ARR, E_OOM, E_BIG_NEG, E_BIG, E_REAL,
	E_COUNT
};

struct emb_jscan_rules {
	int lax;                    /* the record path's (io/jscan.h) */
	const char *msg[E_COUNT];   /* NULL: jansson's words */
};

/* jansson's words for its errors */
static const struct emb_jscan_rules jansson = { 0, {
	[E_END] = "unexpected end of input",
	[E_CHAR] = "unexpected character",
	[E_DEPTH] = "maximum parsing depth reached",
	[E_OBJ_SEP] = "',' or '}' expected",
	[E_ARR_SEP] = "',' or ']' expected",
	[E_STRING] = "string expected",
	[E_COLON] = "':' expected",
	[E_STR_END] = "premature end of input in a string",
	[E_CTRL] = "control character in a string",
	[E_UTF8] = "invalid UTF-8",
	[E_ESC] = "invalid escape",
	[E_UESC] = "invalid Unicode escape",
	[E_SURR] = "invalid Unicode escape",
	[E_NUL] = "\\u0000 is not allowed",
	[E_NUMBER] = "invalid number",
	[E_TOKEN] = "invalid token",
	[E_TRAIL] = "end of input expected",
	[E_OBJ] = "'{' expected",
	[E_ARR] = "'[' expected",
	[E_OOM] = "out of memory",
	[E_BIG_NEG] = "too big negative integer",
	[E_BIG] = "too big integer",
	[E_REAL] = "real number overflow",
} };

/* the record path's, as its diagnostics have always said them */
static const struct emb_jscan_rules record = { 1, {
	[E_END] = "unexpected end of line",
	[E_DEPTH] = "nesting too deep",
	[E_OBJ_SEP] = "expected ',' or '}'",
	[E_ARR_SEP] = "expected ',' or ']'",
	[E_STRING] = "expected a string key",
	[E_COLON] = "expected ':'",
	[E_STR_END] = "unterminated string",
	[E_CTRL] = "control character in string",
	[E_ESC] = "invalid escape in string",
	[E_UESC] = "invalid \\u escape",
	[E_SURR] = "unpaired surrogate in \\u escape",
	[E_TOKEN] = "invalid literal",
	[E_TRAIL] = "trailing characters after the object",
	[E_OBJ] = "expected a JSON object",
} };

void emb_jscan_init(emb_jscan *s, const char *text, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->text = s->p = (const unsigned char *)text;
	s->end = s->p + len;
	s->max_depth = EMB_JSCAN_MAX_DEPTH;
	s->rules = &jansson;
}

void emb_jscan_init_record(emb_jscan *s, const char *text, size_t len,
                           int max_depth)
{
	emb_jscan_init(s, text, len);
	s->max_depth = max_depth < EMB_JSCAN_MAX_DEPTH ? max_depth
	                                               : EMB_JSCAN_MAX_DEPTH;
	s->rules = &record;
}

void emb_jscan_release(emb_jscan *s)
{
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
}

static int fail(emb_jscan *s, const unsigned char *at, int e)
{
	if (!s->what) {
		s->what = s->rules->msg[e] ? s->rules->msg[e] : jansson.msg[e];
		s->at = at;
	}
	s->p = s->end;
	return -1;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
#define LOWS 0x7f7f7f7f7f7f7f7full
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    defined(__GNUC__)
#define SWAR 1
#endif
#ifdef __GNUC__
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* 0x80 in each byte of X that is zero, nothing elsewhere (no carries) */
static inline uint64_t zero_bytes(uint64_t x)
{
	return ~(((x & LOWS) + LOWS) | x | LOWS);
}

/* 0x80 in each byte of W that is not JSON whitespace (' ', \n, \r, \t) */
static inline uint64_t ws_stops(uint64_t w)
{
	return ~(zero_bytes(w ^ (0x20 * ONES)) | zero_bytes(w ^ (0x0a * ONES)) |
	         zero_bytes(w ^ (0x0d * ONES)) | zero_bytes(w ^ (0x09 * ONES))) &
	       HIGHS;
}

/* 0x80 in each byte of W that ends a string's plain run: '"', '\\', a
 * control character or a byte >= 0x80 */
static inline uint64_t plain_stops(uint64_t w)
{
	return (w & HIGHS) | zero_bytes(w ^ (0x22 * ONES)) |
	       zero_bytes(w ^ (0x5c * ONES)) | zero_bytes(w & (0xe0 * ONES));
}

#ifdef SWAR
/* 8 bytes at a time from *P: 1 with *P at the first byte STOPS marks,
 * or 0 with *P at the last E - *P < 8 bytes (for the caller's byte loop) */
static ALWAYS_INLINE int
run_end8(const unsigned char **pp, const unsigned char *e,
         uint64_t (*stops)(uint64_t))
{
	const unsigned char *p = *pp;

	for (; e - p >= 8; p += 8) {
		uint64_t w, m;
		memcpy(&w, p, 8);
		if ((m = stops(w))) {
			*pp = p + (__builtin_ctzll(m) >> 3);
			return 1;
		}
	}
	*pp = p;
	return 0;
}
#endif

/* past the run of bytes GO takes at P (STOPS: the same test on 8 bytes) */
static ALWAYS_INLINE const unsigned char *
run_end(const unsigned char *p, const unsigned char *e,
        uint64_t (*stops)(uint64_t), int (*go)(unsigned))
{
#ifdef SWAR
	if (run_end8(&p, e, stops))
		return p;
#else
	(void)stops;
#endif
	while (p < e && go(*p))
		p++;
	return p;
}

static inline int is_ws(unsigned c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline int is_plain(unsigned c)
{
	return !str_class(c);
}

/* past the whitespace at P */
static inline const unsigned char *ws_end(const unsigned char *p,
                                          const unsigned char *e)
{
	/* JSON's four whitespace bytes are all at or below ' ': a byte
	 * above it ends the run at once (compact JSON, between tokens) */
	if (p < e && *p > ' ')
		return p;
	return run_end(p, e, ws_stops, is_ws);
}

static inline int peek(emb_jscan *s)
{
	const unsigned char *p, *e = s->end;

	if (s->what)
		return -1;
	s->p = p = ws_end(s->p, e);
	return p < e ? *p : -1;
}

int emb_jscan_peek(emb_jscan *s)
{
	return peek(s);
}

int emb_jscan_open(emb_jscan *s, int c)
{
	if (peek(s) != c)
		return fail(s, s->p, c == '{' ? E_OBJ : E_ARR);
	if (s->depth >= s->max_depth)
		return fail(s, s->p, E_DEPTH);
	s->p++;
	s->depth++;
	return 0;
}

/* the error where the text ends before an object's key (jansson's is
 * E): the record path calls it a missing key, but in the line's own
 * object the end of the line */
static int key_at_end(const emb_jscan *s, int e)
{
	if (!s->rules->lax)
		return e;
	return s->depth > 1 ? E_STRING : E_END;
}

static ALWAYS_INLINE int more(emb_jscan *s, int *first, int close)
{
	int c = peek(s);

	if (c == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	if (*first) {
		if (c < 0)
			return fail(s, s->p, close == '}' ? key_at_end(s, E_END) : E_END);
		*first = 0;
		return 1;
	}
	if (c == ',') {
		s->p++;
		return 1;
	}
	if (c < 0)
		return fail(s, s->p, E_END);
	return fail(s, s->p, close == '}' ? E_OBJ_SEP : E_ARR_SEP);
}

int emb_jscan_more(emb_jscan *s, int *first, int close)
{
	return more(s, first, close);
}

static int hex4(const unsigned char *p, const unsigned char *e, unsigned *v)
{
	unsigned x = 0;

	if (e - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i];
		x <<= 4;
		if (c >= '0' && c <= '9')
			x |= c - '0';
		else if (c >= 'a' && c <= 'f')
			x |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x |= c - 'A' + 10;
		else
			return -1;
	}
	*v = x;
	return 0;
}

static int buf_room(emb_jscan *s, size_t need)
{
	char *b;
	size_t cap;

	if (need <= s->cap)
		return 0;
	cap = s->cap ? s->cap : 256;
	while (cap < need)
		cap *= 2;
	if (!(b = realloc(s->buf, cap)))
		return -1;
	s->buf = b;
	s->cap = cap;
	return 0;
}

/* past the plain ASCII at P in a string: the first '"', '\\', control
 * character or byte >= 0x80, or E */
static inline const unsigned char *plain_end(const unsigned char *p,
                                             const unsigned char *e)
{
	return run_end(p, e, plain_stops, is_plain);
}

/* the rest of a string from P, an escape, on (START: its opening quote):
 * checked, and decoded into s->buf when DECODE */
static int string_slow(emb_jscan *s, const unsigned char *start,
                       const unsigned char *p, const char **out, size_t *n,
                       int decode)
{
	const unsigned char *e = s->end, *q;
	size_t k = (size_t)(p - start - 1);
	char *o = NULL;

	/* a decoded string is never longer than its text */
	if (decode) {
		if (buf_room(s, (size_t)(e - start)) < 0)
			return fail(s, start, E_OOM);
		o = s->buf;
		memcpy(o, start + 1, k);
	}
	for (;;) {
		unsigned c, v, w;
		size_t m;

		q = plain_end(p, e);
		if (o)
			memcpy(o + k, p, (size_t)(q - p));
		k += (size_t)(q - p);
		if ((p = q) >= e)
			break;
		switch (str_class(*p)) {
		case 1:
			s->p = p + 1;
			if (o) {
				o[k] = 0;
				*out = o;
				*n = k;
			}
			return 0;
		case 3:
			return fail(s, p, E_CTRL);
		case 4:
			if (!(m = emb_utf8_seq(p, (size_t)(e - p))))
				return fail(s, p, E_UTF8);
			if (o)
				memcpy(o + k, p, m);
			k += m;
			p += m;
			continue;
		}
		/* an escape */
		if (e - p < 2)
			return fail(s, s->rules->lax ? p : e, E_STR_END);
		switch (p[1]) {
		case '"': case '\\': case '/': c = p[1]; break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u': c = 0; break;
		default:
			return fail(s, p, E_ESC);
		}
		if (c) {
			if (o)
				o[k] = (char)c;
			k++;
			p += 2;
			continue;
		}
		if (hex4(p + 2, e, &v) < 0)
			return fail(s, p, E_UESC);
		if (v >= 0xdc00 && v <= 0xdfff)
			return fail(s, p, E_SURR);
		if (v >= 0xd800 && v <= 0xdbff) {
			if (e - p < 12 || p[6] != '\\' || p[7] != 'u' ||
			    hex4(p + 8, e, &w) < 0 || w < 0xdc00 || w > 0xdfff)
				return fail(s, p, E_SURR);
			v = 0x10000 + ((v - 0xd800) << 10) + (w - 0xdc00);
			p += 12;
		} else {
			if (v == 0 && !s->rules->lax)
				return fail(s, p, E_NUL);
			p += 6;
		}
		/* 6 or 12 bytes of text make at most 4 bytes */
		if (o)
			k += emb_utf8_put(o + k, v);
	}
	return fail(s, e, E_STR_END);
}

/* a string at s->p, checked, and when DECODE decoded to *OUT, *N */
static inline int string(emb_jscan *s, const char **out, size_t *n,
                         int decode)
{
	const unsigned char *start, *p, *e = s->end;
	int c = peek(s);
	size_t m;

	if (c != '"')
		return fail(s, s->p, c < 0 ? key_at_end(s, E_STRING) : E_STRING);
	start = s->p;
	p = start + 1;
	for (;;) {
		if ((p = plain_end(p, e)) >= e)
			return fail(s, e, E_STR_END);
		switch (str_class(*p)) {
		case 1:
			if (decode) {
				*out = (const char *)start + 1;
				*n = (size_t)(p - start - 1);
			}
			s->p = p + 1;
			return 0;
		case 2:
			return string_slow(s, start, p, out, n, decode);
		case 3:
			return fail(s, p, E_CTRL);
		default:
			if (!(m = emb_utf8_seq(p, (size_t)(e - p))))
				return fail(s, p, E_UTF8);
			p += m;
		}
	}
}

int emb_jscan_string(emb_jscan *s, const char **out, size_t *n)
{
	return string(s, out, n, 1);
}

char *emb_jscan_string_dup(emb_jscan *s, size_t *n)
{
	const char *str;
	char *o;

	if (string(s, &str, n, 1) < 0)
		return NULL;
	if (!(o = malloc(*n + 1))) {
		fail(s, s->p, E_OOM);
		return NULL;
	}
	memcpy(o, str, *n);
	o[*n] = 0;
	return o;
}

int emb_jscan_colon(emb_jscan *s)
{
	if (peek(s) != ':')
		return fail(s, s->p, E_COLON);
	s->p++;
	return 0;
}

int emb_jscan_key(emb_jscan *s, const char **out, size_t *n)
{
	if (emb_jscan_string(s, out, n) < 0)
		return -1;
	return emb_jscan_colon(s);
}

#define DIGIT(c) ((c) >= '0' && (c) <= '9')

/* does the JSON real number T[0, N) overflow a double (strtod's ERANGE
 * with HUGE_VAL, as jansson reads it)?  Long ones are copied to the heap;
 * out of memory counts as an overflow (the caller then refuses). */
static int real_overflows(const char *t, size_t n)
{
	char buf[128], *q = n < sizeof(buf) ? buf : malloc(n + 1);
	double d;
	int over;

	if (!q)
		return 1;
	memcpy(q, t, n);
	q[n] = 0;
	errno = 0;
	d = strtod(q, NULL);
	over = errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL);
	if (q != buf)
		free(q);
	return over;
}

/*
 * The grammar of the JSON number at s->p (where a '-' or a digit is):
 * its end, or NULL after fail() (a bad number is reported at its start,
 * or under the record path's rules at the byte where a digit was
 * wanted).  With VALUE, also its magnitude in *x (*big when past the
 * limit of its sign); *neg and *real say what it was.  Inlined into
 * both callers, so that skipping a number does no arithmetic.
 */
static ALWAYS_INLINE const unsigned char *
number_end(emb_jscan *s, int value, unsigned long long *x, int *neg,
           int *big, int *real)
{
	const unsigned char *p = s->p, *e = s->end, *start = p;
	unsigned long long lim;
	int lax = s->rules->lax;

	*x = 0;
	*neg = *big = *real = 0;
	if (*p == '-') {
		*neg = 1;
		p++;
	}
	if (p >= e || !DIGIT(*p)) {
		fail(s, lax ? p : start, E_NUMBER);
		return NULL;
	}
	lim = *neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	if (*p == '0') {
		p++;
	} else if (!value) {
		while (p < e && DIGIT(*p))
			p++;
	} else {
		while (p < e && DIGIT(*p)) {
			unsigned d = *p++ - '0';
			if (*x > (lim - d) / 10)
				*big = 1;
			else
				*x = *x * 10 + d;
		}
	}
	if (p < e && (*p == '.' || *p == 'e' || *p == 'E')) {
		*real = 1;
		if (*p == '.') {
			p++;
			if (p >= e || !DIGIT(*p)) {
				fail(s, lax ? p : start, E_NUMBER);
				return NULL;
			}
			while (p < e && DIGIT(*p))
				p++;
		}
		if (p < e && (*p == 'e' || *p == 'E')) {
			p++;
			if (p < e && (*p == '+' || *p == '-'))
				p++;
			if (p >= e || !DIGIT(*p)) {
				fail(s, lax ? p : start, E_NUMBER);
				return NULL;
			}
			while (p < e && DIGIT(*p))
				p++;
		}
	}
	return p;
}

int emb_jscan_int(emb_jscan *s, long long *v)
{
	const unsigned char *p, *e = s->end, *start;
	unsigned long long x;
	int neg, big, real, c = peek(s);

	if (c != '-' && !DIGIT(c))
		return fail(s, s->p, c < 0 ? E_END : E_CHAR);
	start = s->p;
	if (!(p = number_end(s, 1, &x, &neg, &big, &real)))
		return -1;
	/* the record path's rules allow any size, and leave what follows
	 * to the caller */
	if (!s->rules->lax) {
		/* a number runs into no letter or digit ("01", "1x") */
		if (p < e && (DIGIT(*p) || (*p >= 'a' && *p <= 'z') ||
		              (*p >= 'A' && *p <= 'Z')))
			return fail(s, start, E_NUMBER);
		/* what jansson refuses, refused: an integer past a long
		 * long, a real past a double's range (underflow is
		 * allowed) */
		if (!real && big)
			return fail(s, start, neg ? E_BIG_NEG : E_BIG);
		if (real && real_overflows((const char *)start,
		                           (size_t)(p - start)))
			return fail(s, start, E_REAL);
	}
	s->p = p;
	if (real || big)
		return 0;
	*v = neg ? (long long)(0 - x) : (long long)x;
	return 1;
}

static int literal(emb_jscan *s)
{
	static const char *const words[] = { "true", "false", "null" };
	const unsigned char *p = s->p;
	size_t left = (size_t)(s->end - p);

	for (int i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);
		if (*p == (unsigned char)words[i][0]) {
			/* the record path's rules leave what follows to
			 * the caller */
			if (left < n || memcmp(p, words[i], n) ||
			    (left > n && !s->rules->lax &&
			     ((p[n] >= 'a' && p[n] <= 'z') ||
			      (p[n] >= 'A' && p[n] <= 'Z') || DIGIT(p[n]))))
				return fail(s, p, E_TOKEN);
			s->p = p + n;
			return 0;
		}
	}
	return fail(s, p, E_TOKEN);
}

/* iterative: the open brackets are s->depth (the caller's) plus the
 * ones counted here */
int emb_jscan_skip(emb_jscan *s)
{
	int base = s->depth, first, c;
	unsigned char close[EMB_JSCAN_MAX_DEPTH];
	const char *str;
	size_t n;
	long long v;

value:
	c = peek(s);
	switch (c) {
	case '{': case '[':
		if (emb_jscan_open(s, c) < 0)
			return -1;
		close[s->depth - base - 1] = c == '{' ? '}' : ']';
		first = 1;
		goto more;
	case '"':
		if (string(s, &str, &n, 0) < 0)
			return -1;
		break;
	case 't': case 'f': case 'n':
		if (literal(s) < 0)
			return -1;
		break;
	case -1:
		return fail(s, s->p, E_END);
	default:
		if (c == '-' || DIGIT(c)) {
			/* the record path leaves what follows a number to
			 * the caller, and keeps numbers of any size: only
			 * the grammar is checked */
			if (s->rules->lax) {
				const unsigned char *p;
				unsigned long long x;
				int neg, big, real;
				if (!(p = number_end(s, 0, &x, &neg, &big, &real)))
					return -1;
				s->p = p;
			} else if (emb_jscan_int(s, &v) < 0) {
				return -1;
			}
			break;
		}
		return fail(s, s->p, E_CHAR);
	}
	first = 0;
more:
	if (s->depth == base)
		return 0;
	switch (more(s, &first, close[s->depth - base - 1])) {
	case -1:
		return -1;
	case 0:
		first = 0;
		goto more;
	}
	if (close[s->depth - base - 1] == '}' &&
	    (string(s, &str, &n, 0) < 0 || emb_jscan_colon(s) < 0))
		return -1;
	goto value;
}

int emb_jscan_finish(emb_jscan *s)
{
	int c = peek(s);

	if (s->what)
		return -1;
	if (c >= 0)
		return fail(s, s->p, E_TRAIL);
	return 0;
}

int emb_jscan_error(const emb_jscan *s, const char *file, emb_err *err)
{
	const unsigned char *p, *at = s->at ? s->at : s->p, *bol = s->text;
	long line = 1;

	for (p = s->text; p < at; p++)
		if (*p == '\n') {
			line++;
			bol = p + 1;
		}
	return emb_err_set(err, "%s: invalid JSON at line %ld column %ld: %s",
	                   file, line, (long)(at - bol) + 1,
	                   s->what ? s->what : "parse error");
}

int emb_jscan_zero_member(const char *text, size_t len, const char *key,
                          char **out, size_t *outlen)
{
	emb_jscan s;
	size_t klen = strlen(key), at = 0, k = 0;
	int first = 1, r, ok = 0;
	char *o = NULL;

	emb_jscan_init(&s, text, len);
	if (emb_jscan_open(&s, '{') < 0)
		goto out;
	while ((r = emb_jscan_more(&s, &first, '}')) > 0) {
		const char *kk;
		size_t n, a;
		if (emb_jscan_key(&s, &kk, &n) < 0 || peek(&s) < 0)
			goto out;
		a = (size_t)(s.p - s.text);
		if (emb_jscan_skip(&s) < 0)
			goto out;
		if (n != klen || memcmp(kk, key, n))
			continue;
		/* a value is at least one byte: "0" never makes it longer */
		if (!o && !(o = malloc(len + 1)))
			goto out;
		memcpy(o + k, text + at, a - at);
		k += a - at;
		o[k++] = '0';
		at = (size_t)(s.p - s.text);
	}
	if (r < 0 || emb_jscan_finish(&s) < 0 || !o)
		goto out;
	memcpy(o + k, text + at, len - at);
	k += len - at;
	o[k] = 0;
	*out = o;
	*outlen = k;
	o = NULL;
	ok = 1;
out:
	emb_jscan_release(&s);
	free(o);
	return ok;
}
