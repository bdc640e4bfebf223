/*
 * base/bigmem.h - big zeroed buffers (base/bigmem.c), the one home of
 * the huge-page allocator: model weights and scratch (lib/nn) and the
 * big hash tables of the tokenizers (lib/tok) come from here.
 *
 * Anonymous mappings: already zero (no memset).  Transparent huge pages
 * are asked for where the access is random (the tokenizers' hash
 * tables: fewer TLB misses per lookup), not for the buffers that are
 * streamed (packed weights, scratch): there the system's zeroing of
 * fresh huge pages cost more than the TLB misses spared (on 2 vCPUs of
 * the Zen 4 kind under KVM a first touch of huge pages ran at 0.5-0.7
 * GB/s against 2.5 GB/s for 4 KiB pages; Gemma 3 on 2048-token
 * documents took 0.955x the time with 4 KiB pages, W8A8 MiniLM on the
 * passages 0.961x; bench/RESULTS.md).  Sanitizer builds use malloc
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
 * EMB_BIG_MALLOC), on transparent huge pages where HUGE is set and the
 * system lends them; *len: its usable length in bytes (BYTES rounded
 * up).  new: emb_big_free; NULL when out of memory or BYTES is 0 */
void *emb_big_alloc(size_t bytes, size_t *len, int huge);
/* free P (from emb_big_alloc; NULL is fine); LEN: the *len it gave or
 * the BYTES asked for */
void emb_big_free(void *p, size_t len);
/* grow *p (cap floats, len bytes mapped, from emb_big_alloc, 4 KiB
 * pages: scratch) to at least
 * n floats; a quarter more than asked, so that batches of slowly growing
 * size do not map and fault in a new buffer each time.  The old contents
 * are dropped.  0, or -1 when out of memory (*p then NULL) */
int emb_big_grow(float **p, size_t *cap, size_t *len, size_t n);

#endif /* EMB_BIGMEM_H */
