/*
 * test_threadpool.c - the persistent thread pool (lib/threadpool.c) on its
 * own: every item of every job runs exactly once, per-thread scratch
 * (tid) is never shared by two threads at once, results do not depend on
 * the thread count, and pools come and go cleanly.
 *
 * Written for ThreadSanitizer: the jobs here write shared memory only
 * through the pool's hand-off, so any missing happens-before edge in the
 * pool (a worker reading a job's fields before they are published, the
 * caller returning before a worker has finished writing) is a TSan
 * report.  Under a plain build the assertions still check the counts.
 * Pools of 2 and 4 threads: 4 on a 2-core machine is oversubscription,
 * which is the point.
 *
 * Criterion cannot run under TSan (its boxfort arena fails to map:
 * "Could not initialize inheritable arena", Criterion issue #274), so
 * with -DEMB_NO_CRITERION this file is its own program instead
 * (test/sanitize/threadpool-run, built and run by make check-tsan): the
 * few Criterion macros used here are defined below, and each test prints
 * "ok - threadpool/NAME" or "not ok - threadpool/NAME: what failed".
 */
#ifdef EMB_NO_CRITERION
#include <setjmp.h>
#include <stdio.h>

typedef struct tp_test {
	const char *name;
	void (*fn)(void);
} tp_test;
static tp_test tp_tests[32];
static int tp_ntests;
static jmp_buf tp_jmp;
static const char *tp_failed;
static int tp_line;

static void tp_register(const char *name, void (*fn)(void))
{
	if (tp_ntests < (int)(sizeof(tp_tests) / sizeof(tp_tests[0])))
		tp_tests[tp_ntests++] = (tp_test){ name, fn };
}

#define Test(suite, name) \
	static void suite##_##name(void); \
	__attribute__((constructor)) static void reg_##suite##_##name(void) \
	{ tp_register(#suite "/" #name, suite##_##name); } \
	static void suite##_##name(void)
#define cr_assert(cond, ...) do { if (!(cond)) { \
	tp_failed = #cond; tp_line = __LINE__; longjmp(tp_jmp, 1); } } while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b))
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b))
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b))
#define cr_assert_null(p, ...) cr_assert((p) == NULL)
#else
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nn/nn-internal.h"

typedef struct count_job {
	unsigned *hits;         /* (n) plain ints: a race is a TSan report */
	size_t n;
	atomic_int busy[8];     /* per tid: 1 while a chunk of that tid runs */
	int nthreads;
	atomic_int bad_tid, overlap;
} count_job;

static void count_task(void *ctx, size_t b, size_t e, int tid)
{
	count_job *j = ctx;

	if (tid < 0 || tid >= j->nthreads) {
		atomic_store(&j->bad_tid, 1);
		return;
	}
	if (atomic_exchange(&j->busy[tid], 1))
		atomic_store(&j->overlap, 1);
	for (size_t i = b; i < e; i++)
		j->hits[i]++;
	atomic_store(&j->busy[tid], 0);
}

/* every item once per job, over many jobs of varied size and grain */
static void every_item_once(int threads)
{
	emb_threads *tp;
	emb_err err;
	static const size_t sizes[] = { 1, 2, 3, 7, 64, 100, 1000, 4097 };
	static const size_t grains[] = { 0, 1, 3, 16, 5000 };

	cr_assert_eq(emb_threads_new(&tp, threads, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_threads_count(tp), threads);
	for (int rep = 0; rep < 20; rep++)
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
			for (size_t gi = 0; gi < sizeof(grains) / sizeof(grains[0]); gi++) {
				count_job j = { .n = sizes[si], .nthreads = threads };
				j.hits = calloc(j.n, sizeof(*j.hits));
				cr_assert(j.hits);
				emb_threads_for(tp, j.n, grains[gi], count_task, &j);
				/* read right after the call: the pool must have
				 * waited for every worker's writes */
				for (size_t i = 0; i < j.n; i++)
					cr_assert_eq(j.hits[i], 1, "n %zu grain %zu: item %zu "
					             "ran %u times", j.n, grains[gi], i, j.hits[i]);
				cr_assert(!atomic_load(&j.bad_tid), "tid out of range");
				cr_assert(!atomic_load(&j.overlap), "one tid ran twice at once");
				free(j.hits);
			}
	emb_threads_free(tp);
}

Test(threadpool, every_item_once_2) { every_item_once(2); }
Test(threadpool, every_item_once_4) { every_item_once(4); }
Test(threadpool, every_item_once_1) { every_item_once(1); }

/* per-tid scratch, then a reduction after the call: the pattern the
 * model code uses (scratch rows indexed by tid) */
typedef struct sum_job {
	const uint32_t *x;      /* (n) */
	uint64_t *part;         /* (threads) per-thread partial sums */
} sum_job;

static void sum_task(void *ctx, size_t b, size_t e, int tid)
{
	sum_job *j = ctx;
	uint64_t s = 0;

	for (size_t i = b; i < e; i++)
		s += j->x[i];
	j->part[tid] += s;
}

Test(threadpool, per_thread_scratch_sum)
{
	enum { N = 100000 };
	uint32_t *x = malloc(N * sizeof(*x));
	uint64_t want = 0;

	cr_assert(x);
	for (uint32_t i = 0; i < N; i++) {
		x[i] = i * 2654435761u >> 7;
		want += x[i];
	}
	for (int threads = 1; threads <= 4; threads++) {
		emb_threads *tp;
		emb_err err;
		cr_assert_eq(emb_threads_new(&tp, threads, &err), 0, "%s", err.msg);
		for (int rep = 0; rep < 50; rep++) {
			uint64_t part[4] = { 0 }, got = 0;
			sum_job j = { x, part };
			emb_threads_for(tp, N, 1 + (size_t)rep * 97, sum_task, &j);
			for (int t = 0; t < threads; t++)
				got += part[t];
			for (int t = threads; t < 4; t++)
				cr_assert_eq(part[t], 0, "tid %d used by a %d-thread pool",
				             t, threads);
			cr_assert_eq(got, want, "%d threads, rep %d", threads, rep);
		}
		emb_threads_free(tp);
	}
	free(x);
}

/* pools created and freed back to back, some never given a job, one job
 * then free at once (workers may not have reached their wait yet) */
Test(threadpool, create_free_cycles)
{
	for (int rep = 0; rep < 40; rep++) {
		emb_threads *tp;
		emb_err err;
		int threads = 1 + rep % 4;
		cr_assert_eq(emb_threads_new(&tp, threads, &err), 0, "%s", err.msg);
		if (rep % 3) {
			count_job j = { .n = 50, .nthreads = threads };
			j.hits = calloc(j.n, sizeof(*j.hits));
			cr_assert(j.hits);
			emb_threads_for(tp, j.n, 1, count_task, &j);
			for (size_t i = 0; i < j.n; i++)
				cr_assert_eq(j.hits[i], 1);
			free(j.hits);
		}
		emb_threads_free(tp);
	}
	emb_threads_free(NULL);
	cr_assert_eq(emb_threads_count(NULL), 1);
}

Test(threadpool, bad_counts)
{
	emb_threads *tp = (emb_threads *)&tp;
	emb_err err;

	cr_assert_neq(emb_threads_new(&tp, 0, &err), 0);
	cr_assert_null(tp);
	cr_assert(strstr(err.msg, "out of range"), "%s", err.msg);
	cr_assert_neq(emb_threads_new(&tp, 5000, &err), 0);
	cr_assert_null(tp);
	cr_assert_gt(emb_online_cpus(), 0);
}

/* a NULL pool runs everything on the caller, tid 0 */
Test(threadpool, null_pool_runs_inline)
{
	count_job j = { .n = 33, .nthreads = 1 };

	j.hits = calloc(j.n, sizeof(*j.hits));
	cr_assert(j.hits);
	emb_threads_for(NULL, j.n, 4, count_task, &j);
	emb_threads_for(NULL, 0, 4, count_task, &j);
	for (size_t i = 0; i < j.n; i++)
		cr_assert_eq(j.hits[i], 1);
	cr_assert(!atomic_load(&j.bad_tid));
	free(j.hits);
}

#ifdef EMB_NO_CRITERION
int main(void)
{
	volatile int failed = 0;

	for (volatile int i = 0; i < tp_ntests; i++) {
		if (setjmp(tp_jmp) == 0) {
			tp_tests[i].fn();
			printf("ok - %s\n", tp_tests[i].name);
		} else {
			printf("not ok - %s: line %d: %s\n", tp_tests[i].name,
			       tp_line, tp_failed);
			failed++;
		}
		fflush(stdout);
	}
	printf("%d tests, %d failed\n", tp_ntests, failed);
	return failed != 0;
}
#endif

typedef struct stack_job {
	atomic_size_t size[2];  /* per tid: its stack's size, 0 not seen */
} stack_job;

static void stack_task(void *ctx, size_t b, size_t e, int tid)
{
	stack_job *j = ctx;
	pthread_attr_t a;
	size_t sz = 0;
	struct timespec ts = { 0, 200000 };

	(void)b;
	(void)e;
	if (tid < 0 || tid > 1 || pthread_getattr_np(pthread_self(), &a))
		return;
	pthread_attr_getstacksize(&a, &sz);
	pthread_attr_destroy(&a);
	atomic_store(&j->size[tid], sz);
	nanosleep(&ts, NULL);   /* leave the other thread an item */
}

/* a worker's stack is 8 MiB whatever the C library's default or the
 * stack limit (kernels keep blocks of a few hundred KiB there) */
Test(threadpool, worker_stacks)
{
	emb_threads *tp;
	emb_err err;
	stack_job j;

	cr_assert_eq(emb_threads_new(&tp, 2, &err), 0, "%s", err.msg);
	atomic_init(&j.size[0], 0);
	atomic_init(&j.size[1], 0);
	for (int rep = 0; rep < 200 && !atomic_load(&j.size[1]); rep++)
		emb_threads_for(tp, 8, 1, stack_task, &j);
	emb_threads_free(tp);
	cr_assert(atomic_load(&j.size[1]) > 0, "the worker never ran an item");
	cr_assert(atomic_load(&j.size[1]) >= (size_t)8 << 20,
	          "worker stack %zu bytes", atomic_load(&j.size[1]));
}
