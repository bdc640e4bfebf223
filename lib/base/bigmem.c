/*
 * bigmem.c - big zeroed buffers, huge pages where asked (base/bigmem.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/bigmem.h"

void *emb_big_alloc(size_t bytes, size_t *len, int huge)
{
#ifdef EMB_BIG_MALLOC
	void *p;

	if (bytes > SIZE_MAX - 63)
		return NULL;
	bytes = (bytes + 63) / 64 * 64;
	(void)huge;
	if (!bytes || !(p = aligned_alloc(64, bytes)))
		return NULL;
	memset(p, 0, bytes);
	*len = bytes;
	return p;
#else
	char *p, *a;
	size_t n;

	if (!bytes || bytes > SIZE_MAX - 2 * EMB_BIG_ALIGN)
		return NULL;
	bytes = (bytes + EMB_BIG_ALIGN - 1) / EMB_BIG_ALIGN * EMB_BIG_ALIGN;
	n = bytes + EMB_BIG_ALIGN;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* trim to a 2 MiB aligned range */
	a = (char *)(((uintptr_t)p + EMB_BIG_ALIGN - 1) / EMB_BIG_ALIGN *
	             EMB_BIG_ALIGN);
	if (a > p)
		munmap(p, (size_t)(a - p));
	if ((size_t)(a - p) < EMB_BIG_ALIGN)
		munmap(a + bytes, EMB_BIG_ALIGN - (size_t)(a - p));
#ifdef MADV_HUGEPAGE
	if (huge)
		madvise(a, bytes, MADV_HUGEPAGE);
#else
	(void)huge;
#endif
	*len = bytes;
	return a;
#endif
}

void emb_big_free(void *p, size_t len)
{
	if (!p)
		return;
#ifdef EMB_BIG_MALLOC
	(void)len;
	free(p);
#else
	munmap(p, (len + EMB_BIG_ALIGN - 1) / EMB_BIG_ALIGN * EMB_BIG_ALIGN);
#endif
}

int emb_big_grow(float **p, size_t *cap, size_t *len, size_t n)
{
	size_t want = n;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / 2 / sizeof(float) - (size_t)(4 << 20))
		return -1;
#ifndef EMB_BIG_MALLOC
	if (*cap && want < *cap + *cap / 4)
		want = *cap + *cap / 4;
#endif
	emb_big_free(*p, *len);
	*cap = 0;
	*len = 0;
	if (!(*p = emb_big_alloc(want * sizeof(float), len, 0)))
		return -1;
	*cap = *len / sizeof(float);
	return 0;
}
