/*
 * base/strmap.h - a hash map from NUL-terminated strings to pointers
 * (strmap.c): chained, FNV-1a hashed, doubled when half full.  The map
 * keeps a copy of each key; the values are the caller's.
 */
#ifndef EMB_STRMAP_H
#define EMB_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct emb_strmap_ent emb_strmap_ent;

/* zeroed: an empty map (emb_strmap_release) */
typedef struct emb_strmap {
	emb_strmap_ent **tab;
	size_t cap, n;
} emb_strmap;

/* the 64-bit FNV-1a hash of S; of the N bytes at S (not NUL-terminated:
 * the same value as emb_str_hash of those bytes as a string) */
uint64_t emb_str_hash(const char *s);
uint64_t emb_mem_hash(const void *s, size_t n);
/* add KEY (copied) -> VAL (borrowed) in front of any entry of the same
 * key; 0, or -1 when out of memory (M unchanged) */
int emb_strmap_put(emb_strmap *m, const char *key, void *val);
/* KEY's latest value (borrowed), or NULL when there is none */
void *emb_strmap_get(const emb_strmap *m, const char *key);
/* 1 when KEY is in M */
int emb_strmap_has(const emb_strmap *m, const char *key);
/* remove KEY's latest entry: its value, or NULL when there is none */
void *emb_strmap_take(emb_strmap *m, const char *key);
/* free the entries (not the values) and empty M */
void emb_strmap_release(emb_strmap *m);

#endif /* EMB_STRMAP_H */
