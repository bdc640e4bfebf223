/*
 * strmap.c - a hash map from strings to pointers (strmap.h)
 */
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

struct emb_strmap_ent {
	emb_strmap_ent *next;   /* the bucket's chain */
	uint64_t hash;
	void *val;
	char key[];
};

uint64_t emb_str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t emb_mem_hash(const void *s, size_t n)
{
	const unsigned char *p = s;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* twice the buckets (64 at first), the chains moved over */
static int grow(emb_strmap *m)
{
	size_t nsz = m->cap ? m->cap * 2 : 64;
	emb_strmap_ent **nt, *e, *next;

	if (nsz < m->cap || !(nt = calloc(nsz, sizeof(*nt))))
		return -1;
	for (size_t b = 0; b < m->cap; b++)
		for (e = m->tab[b]; e; e = next) {
			next = e->next;
			e->next = nt[e->hash & (nsz - 1)];
			nt[e->hash & (nsz - 1)] = e;
		}
	free(m->tab);
	m->tab = nt;
	m->cap = nsz;
	return 0;
}

int emb_strmap_put(emb_strmap *m, const char *key, void *val)
{
	size_t len = strlen(key);
	emb_strmap_ent *e;

	if (m->n + 1 > m->cap / 2 && grow(m) < 0)
		return -1;
	if (!(e = malloc(sizeof(*e) + len + 1)))
		return -1;
	memcpy(e->key, key, len + 1);
	e->hash = emb_str_hash(key);
	e->val = val;
	e->next = m->tab[e->hash & (m->cap - 1)];
	m->tab[e->hash & (m->cap - 1)] = e;
	m->n++;
	return 0;
}

/* the link that points at KEY's latest entry, or NULL */
static emb_strmap_ent **find(const emb_strmap *m, const char *key)
{
	uint64_t h = emb_str_hash(key);
	emb_strmap_ent **pp;

	if (!m->cap)
		return NULL;
	for (pp = &m->tab[h & (m->cap - 1)]; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && !strcmp((*pp)->key, key))
			return pp;
	return NULL;
}

void *emb_strmap_get(const emb_strmap *m, const char *key)
{
	emb_strmap_ent **pp = find(m, key);

	return pp ? (*pp)->val : NULL;
}

int emb_strmap_has(const emb_strmap *m, const char *key)
{
	return find(m, key) != NULL;
}

void *emb_strmap_take(emb_strmap *m, const char *key)
{
	emb_strmap_ent **pp = find(m, key), *e;
	void *val;

	if (!pp)
		return NULL;
	e = *pp;
	*pp = e->next;
	val = e->val;
	free(e);
	m->n--;
	return val;
}

void emb_strmap_release(emb_strmap *m)
{
	emb_strmap_ent *e, *next;

	for (size_t b = 0; b < m->cap; b++)
		for (e = m->tab[b]; e; e = next) {
			next = e->next;
			free(e);
		}
	free(m->tab);
	memset(m, 0, sizeof(*m));
}
