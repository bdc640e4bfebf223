/*
 * base/grow.h - the growable array (grow.c): one realloc rule for every
 * buffer that is filled an element at a time.
 */
#ifndef EMB_GROW_H
#define EMB_GROW_H

#include <stddef.h>

/*
 * Make the array *pp (pp: the address of the caller's pointer, of any
 * element type; *pp NULL or from malloc) of *cap elements of SIZE bytes
 * hold at least NEED: nothing when it does, else reallocated to 64
 * elements or twice *cap until it does (need itself when doubling would
 * pass SIZE_MAX bytes).  0, or -1 when need * size overflows or memory
 * runs out (*pp and *cap unchanged: still the caller's to free).
 */
int emb_grow(void *pp, size_t *cap, size_t need, size_t size);

#endif /* EMB_GROW_H */
