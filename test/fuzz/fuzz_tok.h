/*
 * fuzz_tok.h - tokenization checks shared by fuzz_tokenize_*.c and
 * fuzz_tokenizer_json.c.
 *
 * Input layout of the tokenize targets:
 *   byte 0: bits 0-3 tokenizer (mod the target's list), bit 4 a pair,
 *           bit 5 no special tokens, bit 7 truncation
 *   byte 1: max_length when truncating (0 -> 1)
 *   byte 2: where the pair splits the rest (rest * byte / 256)
 *   rest:   the text (any bytes: invalid UTF-8 must be an error)
 */
#ifndef EMB_FUZZ_TOK_H
#define EMB_FUZZ_TOK_H

#include "fuzz.h"

/* strict UTF-8 (RFC 3629): no overlongs, surrogates, > U+10FFFF;
 * returns the number of code points, or -1 */
static FUZZ_UNUSED long fuzz_utf8_count(const uint8_t *s, size_t n)
{
	long cps = 0;
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		uint32_t cp;
		size_t k;

		if (c < 0x80) {
			i++;
			cps++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			k = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 3;
			cp = c & 0x07;
		} else {
			return -1;
		}
		if (n - i < k + 1)
			return -1;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return -1;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		i += k + 1;
		cps++;
	}
	return cps;
}

/* check the invariants of one successful encoding */
static FUZZ_UNUSED void fuzz_check_encoding(const emb_tokenizer *tok,
                                            const emb_encoding *enc,
                                            const emb_tok_opts *o,
                                            long cps_a, long cps_b)
{
	size_t nid = emb_tokenizer_vocab_size(tok);

	if (o->max_length)
		FUZZ_CHECK(enc->len <= o->max_length);
	for (size_t i = 0; i < enc->len; i++) {
		int32_t s = enc->offsets[2 * i], e = enc->offsets[2 * i + 1];
		int t = enc->type_ids[i];

		FUZZ_CHECK(enc->ids[i] >= 0 && (size_t)enc->ids[i] < nid);
		FUZZ_CHECK(enc->special[i] <= 1);
		if (enc->special[i]) {
			FUZZ_CHECK(s == -1 && e == -1);
			continue;
		}
		FUZZ_CHECK(s >= 0 && s <= e);
		/* a pair: offsets are into the sequence the token came from
		 * (type ids say which, except with type ids all 0) */
		FUZZ_CHECK(e <= (cps_a > cps_b ? cps_a : cps_b));
		(void)t;
		emb_tokenizer_id_to_token(tok, enc->ids[i]);
	}
}

/*
 * Tokenize per the input layout above with TOK.  STRICT: TOK is a known
 * good tokenizer: valid UTF-8 must tokenize, and the result must not
 * change when the same input is tokenized again into a used encoding.
 */
static FUZZ_UNUSED void fuzz_tokenize(const emb_tokenizer *tok,
                                      const uint8_t *data, size_t size,
                                      int strict)
{
	static emb_encoding enc, enc2;
	emb_tok_opts o = { 0 };
	emb_err err;
	const char *a, *b = NULL;
	size_t na, nb = 0;
	long ca, cb = 0;
	int rc;

	if (size < 3)
		return;
	if (data[0] & 0x80)
		o.max_length = data[1] ? data[1] : 1;
	o.no_special = (data[0] >> 5) & 1;
	a = (const char *)data + 3;
	na = size - 3;
	if (data[0] & 0x10) {
		nb = na - na * data[2] / 256;
		na -= nb;
		b = a + na;
	}
	ca = fuzz_utf8_count((const uint8_t *)a, na);
	if (b)
		cb = fuzz_utf8_count((const uint8_t *)b, nb);
	rc = emb_tokenize(&enc, tok, a, na, b, nb, &o, &err);
	if (ca < 0 || cb < 0) {
		FUZZ_CHECK(rc < 0);     /* invalid UTF-8 is an error */
		return;
	}
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0]);
		/* only a max_length below the special tokens may fail */
		if (strict)
			FUZZ_CHECK(!o.no_special && o.max_length &&
			           o.max_length <
			           emb_tokenizer_num_special(tok, b != NULL));
		return;
	}
	fuzz_check_encoding(tok, &enc, &o, ca, cb);
	if (strict) {
		rc = emb_tokenize(&enc2, tok, a, na, b, nb, &o, &err);
		FUZZ_CHECK(rc == 0 && enc2.len == enc.len &&
		           enc2.truncated == enc.truncated);
		FUZZ_CHECK(!memcmp(enc.ids, enc2.ids, enc.len * 4));
		FUZZ_CHECK(!memcmp(enc.type_ids, enc2.type_ids, enc.len * 4));
		FUZZ_CHECK(!memcmp(enc.offsets, enc2.offsets, enc.len * 8));
	}
}

/* the entry point of the tokenize_* targets: byte 0 of the input picks
 * one of the n tokenizer paths in dirs (loaded once into toks[], which
 * has n slots), the rest is tokenized as fuzz_tokenize lays it out */
static FUZZ_UNUSED int fuzz_tokenize_one_of(const char *const *dirs,
                                            emb_tokenizer **toks, size_t n,
                                            const uint8_t *data, size_t size)
{
	size_t i;

	if (size < 1)
		return 0;
	i = (data[0] & 15) % n;
	if (!toks[i]) {
		char *p = fuzz_data(dirs[i]);
		emb_err err;
		if (emb_tokenizer_load(&toks[i], p, &err) < 0) {
			fprintf(stderr, "fuzz: %s\n", err.msg);
			abort();
		}
		free(p);
	}
	fuzz_tokenize(toks[i], data, size, 1);
	return 0;
}

#endif /* EMB_FUZZ_TOK_H */
