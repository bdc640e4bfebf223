/*
 * base/utf8.h - UTF-8, the one home of its encoder and of its sequence
 * check (utf8.c), for every layer: the JSON Lines reader and writer and
 * the JSON scanner of io/, the tokenizers of tok/.
 *
 * The rules are RFC 3629's: a code point is a Unicode scalar value,
 * U+0000..U+10FFFF without the surrogates U+D800..U+DFFF; its shortest
 * form only (no overlong sequences); nothing past U+10FFFF.
 * Includes nothing of emb's.
 */
#ifndef EMB_BASE_UTF8_H
#define EMB_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* the most bytes emb_utf8_put writes */
#define EMB_UTF8_MAX 4

/*
 * Write the UTF-8 form of the code point C to OUT (room for EMB_UTF8_MAX
 * bytes, not NUL-terminated): its length, 1 to 4.  A value that is not a
 * Unicode scalar value (a surrogate, or past U+10FFFF) is written as
 * U+FFFD, the replacement character, so that the output is always valid
 * UTF-8; callers check their code points before, this is the backstop.
 */
size_t emb_utf8_put(char *out, uint32_t c);

/*
 * The length (1 to 4) of the valid UTF-8 sequence at S, which has N > 0
 * bytes, or 0 when it does not start with one (a stray continuation
 * byte, an overlong form, a surrogate, a value past U+10FFFF, a lead
 * byte C0, C1 or F5..FF, or a sequence cut short by the end).
 */
size_t emb_utf8_seq(const unsigned char *s, size_t n);

#endif /* EMB_BASE_UTF8_H */
