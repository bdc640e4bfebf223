/*
 * fuzz_tokenizer_json.c - loading tokenizer.json: the model (WordPiece,
 * BPE vocab and merges, Unigram pieces), normalizers (incl. the
 * Precompiled charsmap and Replace regexes), pre-tokenizers (Split
 * regexes, ByteLevel, Metaspace...), the post-processor templates and
 * added tokens.  The input is the file (memfd).  When it loads, a few
 * fixed texts (ASCII, accents, CJK, whitespace runs, added-token-like
 * brackets, a pair, truncation) are tokenized with the invariants of
 * fuzz_tok.h.
 *
 * An input that starts with a NUL byte (never valid JSON) is instead a
 * raw SentencePiece charsmap and a text, to reach precompiled.c without
 * base64 and JSON in the way: bytes 1-3 the blob length N
 * (little-endian), then N bytes of blob (given to tk_charsmap_parse as
 * base64, as tokenizer.json holds it), then the text (UTF-8), which is
 * normalized with the charsmap when both are valid.
 */
#include "fuzz_tok.h"
#include "tok/tok-internal.h"

static int fd = -1;

/* layout bytes (fuzz_tok.h) + text */
#define S(x) { x, sizeof(x) - 1 }
static const struct { const char *s; size_t n; } texts[] = {
	S("\x90\x00\x00Hello, world! I'm [CLS] here <s>"),
	S("\x10\x00\x80" "Caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87  \t\n  x"),
	S("\xb0\x05\x40 a  b\xe2\x96\x81 c</s><pad>[SEP][MASK] 12345 e\xcc\x81"),
	S("\x20\x00\x00\xef\xbb\xbf\xf0\x9f\x98\x80 ab"),
};

static void charsmap(const uint8_t *data, size_t size)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n, k = 0;
	char *enc;
	tk_charsmap m;
	tk_str s = { 0 }, tmp = { 0 };
	emb_err err;
	long ncp;

	if (size < 4)
		return;
	n = (size_t)data[1] | (size_t)data[2] << 8 | (size_t)data[3] << 16;
	data += 4;
	size -= 4;
	if (n > size)
		n = size;
	if (!(enc = malloc(4 * (n / 3 + 1) + 1)))
		abort();
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)data[i + 1] << 8;
		if (i + 2 < n)
			v |= data[i + 2];
		enc[k++] = b64[v >> 18];
		enc[k++] = b64[(v >> 12) & 63];
		enc[k++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		enc[k++] = i + 2 < n ? b64[v & 63] : '=';
	}
	enc[k] = 0;
	if (tk_charsmap_parse(&m, enc, k, "fuzz", "normalizer", &err) < 0) {
		fuzz_note("charsmap", err.msg);
		free(enc);
		return;
	}
	free(enc);
	fuzz_note("charsmap", "ok");
	ncp = fuzz_utf8_count(data + n, size - n);
	if (ncp >= 0 &&
	    tk_utf8_decode(&s, (const char *)data + n, size - n, &err) == 0) {
		FUZZ_CHECK((long)s.n == ncp);
		if (tk_charsmap_normalize(&m, &s, &tmp) == 0) {
			/* alignments stay inside the original text */
			for (size_t i = 0; i < s.n; i++)
				FUZZ_CHECK(s.o[2 * i] >= 0 &&
				           s.o[2 * i] <= s.o[2 * i + 1] &&
				           s.o[2 * i + 1] <= ncp);
		}
	}
	tk_str_release(&s);
	tk_str_release(&tmp);
	tk_charsmap_release(&m);
}

int FUZZ_ENTRY(tokenizer_json)(const uint8_t *data, size_t size)
{
	char path[64];
	emb_tokenizer *tok;
	emb_err err;

	if (size > 0 && data[0] == 0) {
		charsmap(data, size);
		return 0;
	}
	fuzz_memfile(&fd, path, data, size);
	if (emb_tokenizer_load(&tok, path, &err) < 0) {
		FUZZ_CHECK(err.msg[0]);
		fuzz_note("load", err.msg);
		return 0;
	}
	fuzz_note("load", "ok");
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		fuzz_tokenize(tok, (const uint8_t *)texts[i].s, texts[i].n, 0);
	emb_tokenizer_id_to_token(tok, 0);
	emb_tokenizer_id_to_token(tok, -1);
	emb_tokenizer_token_to_id(tok, "[UNK]");
	emb_tokenizer_num_special(tok, 0);
	emb_tokenizer_num_special(tok, 1);
	emb_tokenizer_free(tok);
	return 0;
}
