/*
 * base/threadpool.h - a fixed pool of worker threads that runs a task
 * over a range of items and waits (base/threadpool.c).
 */
#ifndef EMB_THREADPOOL_H
#define EMB_THREADPOOL_H

#include <stddef.h>
#include "base/base.h"

/* ------------------------------------------------------------------ */
/* thread pool                                                         */

typedef struct emb_threads emb_threads;
/* work on items [begin, end); tid in 0..threads-1 names per-thread scratch */
typedef void (*emb_task_fn)(void *ctx, size_t begin, size_t end, int tid);

/* number of CPUs this process may run on (at least 1) */
int emb_online_cpus(void);
/* n threads in all (the caller's counts as one: n - 1 are started,
 * each with an 8 MiB stack whatever the C library's default).
 * *out: new, emb_threads_free. */
int emb_threads_new(emb_threads **out, int n, emb_err *err);
void emb_threads_free(emb_threads *tp);
int emb_threads_count(const emb_threads *tp);
/*
 * Run fn over [0, n) in chunks of GRAIN items, on all threads, and wait.
 * Which thread runs which chunk varies: fn must write disjoint outputs
 * that do not depend on the chunking or the thread.  Not reentrant.
 */
void emb_threads_for(emb_threads *tp, size_t n, size_t grain,
                     emb_task_fn fn, void *ctx);

#endif /* EMB_THREADPOOL_H */
