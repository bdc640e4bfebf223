/*
 * fuzz_jsonl.c - the JSONL side: the line reader (small max_line, lines
 * split across reads, CR, NUL bytes, no final newline), emb_record_parse,
 * every field getter (strings with escapes, int32 arrays with huge
 * numbers, float vectors and matrices, KEY_b64 base64 vectors),
 * "prompt_length", the output writer (a record copied through
 * emb_out_* must parse again) and emb_validate over the records (odd
 * lines golden, even lines input).
 *
 * Input: byte 0: max_line = 1 + 8 * byte (1..2041); byte 1: the stream
 * is handed to the reader in packets of 1 + byte % 64 bytes (the first
 * 32; then the rest at once), so lines span reads; the rest: the stream.
 */
#include <sys/socket.h>
#include "fuzz.h"

static const char *const keys[] = {
	"id", "text", "text_pair", "input_ids", "token_type_ids", "embedding",
	"token_embeddings", "scores", "logits", "sparse", "tokens", "",
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void check_record(const emb_record *rec, emb_validate *v, int side,
                         const char *where)
{
	static const char *const drop[] = { "text", "text_pair", NULL };
	emb_err err;
	emb_buf b;
	emb_record *back;
	float *fv, *keep = NULL;
	int32_t *iv, *ikeep = NULL;
	size_t rows, cols, n, fn = 0, in = 0;
	const char *s;
	int pl;

	for (size_t k = 0; k < NKEYS; k++) {
		emb_record_has(rec, keys[k]);
		emb_record_raw(rec, keys[k], &n);
		if (emb_record_get_string(rec, keys[k], &s, &n, &err) == 0)
			FUZZ_CHECK(s != NULL);
		if (emb_record_get_int32s(rec, keys[k], &iv, &n, &err) == 0) {
			FUZZ_CHECK(iv != NULL);
			if (!ikeep) {
				ikeep = iv;
				in = n;
			} else {
				free(iv);
			}
		}
		if (emb_record_get_floats(rec, keys[k], &fv, &rows, &cols,
		                          &err) == 0) {
			FUZZ_CHECK(fv != NULL);
			FUZZ_CHECK(rows == 0 || cols <= SIZE_MAX / rows);
			/* the last element is readable */
			if (rows * cols != 0)
				(void)*(volatile float *)&fv[rows * cols - 1];
			if (!keep) {
				keep = fv;
				fn = rows * cols;
			} else {
				free(fv);
			}
		}
	}
	emb_record_prompt_length(&pl, rec, &err);

	/* copy through the writer: the output line must parse again */
	emb_buf_init(&b);
	emb_out_begin(&b, rec, drop);
	emb_out_int(&b, "n", (long long)fn);
	if (keep) {
		emb_out_floats(&b, "embedding", keep, fn, 0);
		emb_out_floats(&b, "vec", keep, fn, 1);
	}
	if (ikeep)
		emb_out_int32s(&b, "input_ids", ikeep, in);
	emb_out_string(&b, "s", "a\"\\\n\x01\xc3\xa9", 8);
	emb_out_end(&b);
	FUZZ_CHECK(b.len > 0 && b.p[b.len - 1] == '\n');
	FUZZ_CHECK(memchr(b.p, '\n', b.len) == b.p + b.len - 1);
	if (!(back = emb_record_new()))
		abort();
	if (emb_record_parse(back, b.p, b.len - 1, &err) < 0) {
		fprintf(stderr, "output does not parse: %s\n%.*s", err.msg,
		        (int)b.len, b.p);
		abort();
	}
	if (keep) {
		/* floats round-trip exactly (text and base64) */
		float *f2;
		if (emb_record_get_floats(back, "vec", &f2, &rows, &cols,
		                          &err) == 0) {
			FUZZ_CHECK(rows * cols == fn);
			for (size_t i = 0; i < fn; i++)
				FUZZ_CHECK(memcmp(&f2[i], &keep[i], 4) == 0 ||
				           (keep[i] != keep[i] && f2[i] != f2[i]));
			free(f2);
		} else {
			FUZZ_CHECK(fn == 0);
		}
	}
	emb_record_free(back);
	emb_buf_release(&b);
	free(keep);
	free(ikeep);
	emb_validate_add(v, side, rec, where);
}

int FUZZ_ENTRY(jsonl)(const uint8_t *data, size_t size)
{
	int sv[2], saved;
	size_t max_line, chunk, off;
	emb_reader *r;
	emb_record *rec;
	emb_validate *v;
	emb_validate_opts vo;
	emb_err err;
	const char *line;
	size_t len;
	int rc, side = 0;

	if (size < 2)
		return 0;
	max_line = 1 + 8 * (size_t)data[0];
	chunk = 1 + data[1] % 64;
	data += 2;
	size -= 2;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	for (off = 0; off < size;) {
		size_t k = size - off;
		if (off < 32 * chunk && k > chunk)
			k = chunk;
		if (write(sv[1], data + off, k) != (ssize_t)k)
			abort();
		off += k;
	}
	close(sv[1]);
	/* the reader reads stdin when given no path */
	saved = dup(0);
	if (saved < 0 || dup2(sv[0], 0) < 0)
		abort();
	close(sv[0]);
	if (emb_reader_open(&r, NULL, max_line, &err) < 0)
		abort();
	if (!(rec = emb_record_new()))
		abort();
	emb_validate_opts_init(&vo);
	if (emb_validate_new(&v, &vo, &err) < 0)
		abort();
	while ((rc = emb_reader_next(r, &line, &len, &err)) != 0) {
		char where[32];

		snprintf(where, sizeof(where), "in:%zu", emb_reader_lineno(r));
		if (rc < 0) {
			FUZZ_CHECK(err.msg[0]);
			emb_validate_bad(v, side, where, err.msg);
		} else {
			FUZZ_CHECK(len <= max_line);
			FUZZ_CHECK(!memchr(line, '\n', len));
			FUZZ_CHECK(!memchr(line, '\0', len));
			if (emb_record_parse(rec, line, len, &err) == 0)
				check_record(rec, v, side, where);
			else
				emb_validate_bad(v, side, where, err.msg);
			if (emb_record_from_text(rec, line, len,
			                         emb_reader_lineno(r), &err) == 0) {
				const char *s;
				size_t n;
				FUZZ_CHECK(emb_record_get_string(rec, "text", &s,
				           &n, &err) == 0 && n == len &&
				           !memcmp(s, line, len));
			}
		}
		side ^= 1;
	}
	emb_validate_finish(v, NULL);
	emb_validate_free(v);
	emb_record_free(rec);
	emb_reader_free(r);
	if (dup2(saved, 0) < 0)
		abort();
	close(saved);
	return 0;
}
