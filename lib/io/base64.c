/*
 * base64.c - the one base64 decoder (io.h): JSONL's KEY_b64 vectors
 * (padding required) and tokenizer.json's precompiled_charsmap (padding
 * optional) differ only in the padding rule.
 */
#include <stdint.h>

#include "io/io.h"

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long emb_base64_decode(unsigned char *out, const char *s, size_t len,
                       int pad_required)
{
	size_t i, n = 0;
	uint32_t acc = 0;
	int bits = 0, pad = 0;

	if (pad_required && len % 4)
		return -1;
	for (i = 0; i < len; i++) {
		int v;
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (pad)
			return -1;
		v = b64val((unsigned char)s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2 || (len % 4 && pad))
		return -1;
	return (long)n;
}
