/*
 * grow.c - the growable array (grow.h)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

int emb_grow(void *pp, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *p, *q;

	if (need <= *cap)
		return 0;
	if (size == 0 || need > SIZE_MAX / size)
		return -1;
	while (c < need)
		c = c > SIZE_MAX / 2 / size ? need : 2 * c;
	/* the caller's pointer, whatever its type, through its bytes */
	memcpy(&p, pp, sizeof(p));
	if (!(q = realloc(p, c * size)))
		return -1;
	memcpy(pp, &q, sizeof(q));
	*cap = c;
	return 0;
}
