/*
 * io/record.h - the inside of a parsed record (emb_record, io/io.h),
 * shared by the files of the record module: record.c (the scanner,
 * parsing, the string getters), recnum.c (the number getters) and
 * write.c (the writer, which copies members byte for byte).  Private to
 * lib/io/.
 */
#ifndef EMB_IO_RECORD_H
#define EMB_IO_RECORD_H

#include <stddef.h>

#include "io/io.h"

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

/* the last member named KEY (as JSON does: the last duplicate wins),
 * or NULL; borrowed from REC */
member *emb_record_find(const emb_record *rec, const char *key);

/* a JSON string S (N bytes, quotes included) the scanner validated,
 * unescaped: new (free()), NUL-terminated, *OUT_LEN bytes; NULL when
 * out of memory */
char *emb_json_unescape(const char *s, size_t n, size_t *out_len);

/* the characters JSON's grammar calls digits */
static inline int emb_json_digit(int c) { return c >= '0' && c <= '9'; }

#endif /* EMB_IO_RECORD_H */
