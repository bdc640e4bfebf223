/*
 * base/bigmem.h - big zeroed buffers (base/bigmem.c), the one home of
 * the huge-page allocator: model weights and scratch (lib/nn) and the
 * big hash tables of the tokenizers (lib/tok) come from here.
 *
 * Anonymous mappings with transparent huge pages asked for: already
 * zero (no memset), one page fault per 2 MiB instead of per 4 KiB
 * (faults are dear in VMs), and fewer TLB misses when kernels stream
 * weights or probe tables at random.  Sanitizer builds use malloc
 * instead (EMB_BIG_MALLOC), so that overruns are still caught.
 */
#ifndef EMB_BIGMEM_H
#define EMB_BIGMEM_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EMB_BIG_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EMB_BIG_MALLOC 1
#endif
#endif
#define EMB_BIG_ALIGN ((size_t)2 << 20)

/* a zeroed buffer of at least BYTES, 2 MiB aligned (64 with
 * EMB_BIG_MALLOC); *len: its usable length in bytes (BYTES rounded up).
 * new: emb_big_free; NULL when out of memory or BYTES is 0 */
void *emb_big_alloc(size_t bytes, size_t *len);
/* free P (from emb_big_alloc; NULL is fine); LEN: the *len it gave or
 * the BYTES asked for */
void emb_big_free(void *p, size_t len);
/* grow *p (cap floats, len bytes mapped, from emb_big_alloc) to at least
 * n floats; a quarter more than asked, so that batches of slowly growing
 * size do not map and fault in a new buffer each time.  The old contents
 * are dropped.  0, or -1 when out of memory (*p then NULL) */
int emb_big_grow(float **p, size_t *cap, size_t *len, size_t n);

#endif /* EMB_BIGMEM_H */
