/*
 * threadpool.c - a persistent pthread pool with a parallel-for.
 *
 * A job is a range [0, n) handed out in chunks through an atomic counter;
 * the caller's thread works too (tid 0).  A forward pass runs dozens of
 * jobs of 10..1000 us each, so the hand-over is the cost that matters:
 *
 * - Workers spin (with a CPU pause) on the job number for a while after
 *   each job before they sleep on a condition variable, and the caller
 *   spins on the count of finished items before it sleeps: back-to-back
 *   jobs then start and end without a system call.  EMB_SPIN_US (default
 *   100; 0: never spin) bounds each spin in microseconds.
 * - The caller waits for the job's items, not for every worker: a worker
 *   that is asleep or descheduled when the job comes and goes is not
 *   waited for.  A job is "open" while gen is even and non-zero; the
 *   caller closes it (gen odd) and waits for workers still inside it
 *   (inside == 0) before it writes the next job.  A worker enters by
 *   incrementing inside and then checking that gen is still the job it
 *   saw (Dekker-style, sequentially consistent atomics on both sides).
 * - Sleeping on either side is announced (sleepers, caller_waits) before
 *   the last check, and the other side signals only when it sees the
 *   announcement, so the fast path takes no lock.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/threadpool.h"

/* bytes of stack each worker gets (see emb_threads_new) */
#define EMB_THREAD_STACK ((size_t)8 << 20)

struct emb_threads {
	int n;                  /* threads in all, the caller included */
	pthread_t *th;
	int started;            /* workers actually running */
	long spin_ns;           /* spin this long before sleeping */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	atomic_ulong gen;       /* even > 0: job gen open; odd: closed */
	atomic_int stop;
	atomic_int inside;      /* workers inside the open job */
	atomic_int sleepers;    /* workers asleep (or about to be) on go */
	atomic_int caller_waits;/* the caller asleep (or about to be) on done */
	/* the job (written only while gen is odd and inside is 0) */
	emb_task_fn fn;
	void *ctx;
	size_t items, grain;
	atomic_size_t next;     /* first item not handed out */
	atomic_size_t finished; /* items done */
};

typedef struct worker_arg {
	emb_threads *tp;
	int tid;
} worker_arg;

int emb_online_cpus(void)
{
#ifdef CPU_COUNT
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
#endif
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (n > 1024 ? 1024 : (int)n) : 1;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* run chunks of the open job until none are left */
static void run_chunks(emb_threads *tp, int tid)
{
	size_t b, items = tp->items, grain = tp->grain;

	while ((b = atomic_fetch_add(&tp->next, grain)) < items) {
		size_t e = items - b > grain ? b + grain : items;
		tp->fn(tp->ctx, b, e, tid);
		if (atomic_fetch_add(&tp->finished, e - b) + (e - b) == items &&
		    atomic_load(&tp->caller_waits)) {
			pthread_mutex_lock(&tp->mu);
			pthread_cond_signal(&tp->done);
			pthread_mutex_unlock(&tp->mu);
		}
	}
}

/* every 64th turn I of a spin loop that began at *T0 (0: not yet read):
 * 1 once it has spun longer than spin_ns */
static int spun_out(const emb_threads *tp, unsigned i, long *t0)
{
	long t;

	if ((i & 63) != 63)
		return 0;
	t = now_ns();
	if (!*t0) {
		*t0 = t;
		return 0;
	}
	return t - *t0 > tp->spin_ns;
}

/* wait until gen differs from seen (or stop); returns the new gen */
static unsigned long wait_gen(emb_threads *tp, unsigned long seen)
{
	unsigned long g;
	long t0 = 0;

	for (unsigned i = 0; tp->spin_ns > 0; i++) {
		if ((g = atomic_load(&tp->gen)) != seen || atomic_load(&tp->stop))
			return g;
		cpu_relax();
		if (spun_out(tp, i, &t0))
			break;
	}
	pthread_mutex_lock(&tp->mu);
	atomic_fetch_add(&tp->sleepers, 1);
	while ((g = atomic_load(&tp->gen)) == seen && !atomic_load(&tp->stop))
		pthread_cond_wait(&tp->go, &tp->mu);
	atomic_fetch_sub(&tp->sleepers, 1);
	pthread_mutex_unlock(&tp->mu);
	return g;
}

static void *worker(void *p)
{
	worker_arg *wa = p;
	emb_threads *tp = wa->tp;
	int tid = wa->tid;
	unsigned long seen = 0;

	free(wa);
	for (;;) {
		seen = wait_gen(tp, seen);
		if (atomic_load(&tp->stop))
			return NULL;
		if (seen & 1)
			continue;   /* closed before we came: wait for the next */
		atomic_fetch_add(&tp->inside, 1);
		if (atomic_load(&tp->gen) == seen)
			run_chunks(tp, tid);
		atomic_fetch_sub(&tp->inside, 1);
	}
}

int emb_threads_new(emb_threads **out, int n, emb_err *err)
{
	emb_threads *tp;
	const char *spin = getenv("EMB_SPIN_US");

	*out = NULL;
	if (n < 1 || n > 4096)
		return emb_err_set(err, "thread count %d is out of range (1..4096)", n);
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->th = calloc((size_t)n, sizeof(pthread_t)))) {
		free(tp);
		return emb_err_set(err, "out of memory");
	}
	tp->n = n;
	tp->spin_ns = 100000;
	if (spin && *spin) {
		char *end;
		long us = strtol(spin, &end, 10);
		if (*end || us < 0 || us > 1000000) {
			free(tp->th);
			free(tp);
			return emb_err_set(err, "EMB_SPIN_US: '%s' is not a number of "
			                   "microseconds from 0 to 1000000", spin);
		}
		tp->spin_ns = us * 1000;
	}
	pthread_mutex_init(&tp->mu, NULL);
	pthread_cond_init(&tp->go, NULL);
	pthread_cond_init(&tp->done, NULL);
	atomic_init(&tp->gen, 1);
	atomic_init(&tp->stop, 0);
	atomic_init(&tp->inside, 0);
	atomic_init(&tp->sleepers, 0);
	atomic_init(&tp->caller_waits, 0);
	atomic_init(&tp->next, 0);
	atomic_init(&tp->finished, 0);
	/* workers never take SIGINT, SIGTERM or SIGHUP: the thread that
	 * writes the output gets them, so that a write blocked on a stalled
	 * reader is interrupted (they inherit this mask) */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	/* stacks of EMB_THREAD_STACK whatever the C library's default (musl's
	 * is 128 KiB): a kernel may keep a block of a few hundred KiB on its
	 * stack (the AVX-512 BF16 GEMM's rounded activations: 192 KiB) */
	pthread_attr_t attr, *ap = NULL;
	if (!pthread_attr_init(&attr)) {
		ap = &attr;
		if (pthread_attr_setstacksize(&attr, EMB_THREAD_STACK)) {
			pthread_attr_destroy(&attr);    /* the default, then */
			ap = NULL;
		}
	}
	for (int i = 1; i < n; i++) {
		worker_arg *wa = malloc(sizeof(*wa));
		int rc;
		if (!wa) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (ap)
				pthread_attr_destroy(ap);
			emb_threads_free(tp);
			return emb_err_set(err, "out of memory");
		}
		wa->tp = tp;
		wa->tid = i;
		rc = pthread_create(&tp->th[i], ap, worker, wa);
		if (rc) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (ap)
				pthread_attr_destroy(ap);
			free(wa);
			emb_threads_free(tp);
			return emb_err_set(err, "cannot start thread: %s", strerror(rc));
		}
		tp->started = i;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ap)
		pthread_attr_destroy(ap);
	*out = tp;
	return 0;
}

void emb_threads_free(emb_threads *tp)
{
	if (!tp)
		return;
	pthread_mutex_lock(&tp->mu);
	atomic_store(&tp->stop, 1);
	pthread_cond_broadcast(&tp->go);
	pthread_mutex_unlock(&tp->mu);
	for (int i = 1; i <= tp->started; i++)
		pthread_join(tp->th[i], NULL);
	pthread_mutex_destroy(&tp->mu);
	pthread_cond_destroy(&tp->go);
	pthread_cond_destroy(&tp->done);
	free(tp->th);
	free(tp);
}

int emb_threads_count(const emb_threads *tp)
{
	return tp ? tp->n : 1;
}

void emb_threads_for(emb_threads *tp, size_t n, size_t grain,
                     emb_task_fn fn, void *ctx)
{
	unsigned long g;
	long t0 = 0;

	if (n == 0)
		return;
	if (grain == 0)
		grain = 1;
	if (!tp || tp->started == 0 || n <= grain) {
		for (size_t b = 0; b < n; b += grain)
			fn(ctx, b, n - b > grain ? b + grain : n, 0);
		return;
	}
	/* gen is odd (closed) and no worker is inside: write the job, open it */
	tp->fn = fn;
	tp->ctx = ctx;
	tp->items = n;
	tp->grain = grain;
	atomic_store(&tp->next, 0);
	atomic_store(&tp->finished, 0);
	g = atomic_load(&tp->gen) + 1;
	atomic_store(&tp->gen, g);
	if (atomic_load(&tp->sleepers)) {
		pthread_mutex_lock(&tp->mu);
		pthread_cond_broadcast(&tp->go);
		pthread_mutex_unlock(&tp->mu);
	}
	run_chunks(tp, 0);
	/* every item done? (chunks handed out may still be running) */
	for (unsigned i = 0; atomic_load(&tp->finished) < n; i++) {
		cpu_relax();
		if (spun_out(tp, i, &t0))
			break;
	}
	if (atomic_load(&tp->finished) < n) {
		pthread_mutex_lock(&tp->mu);
		atomic_store(&tp->caller_waits, 1);
		while (atomic_load(&tp->finished) < n)
			pthread_cond_wait(&tp->done, &tp->mu);
		atomic_store(&tp->caller_waits, 0);
		pthread_mutex_unlock(&tp->mu);
	}
	/* close the job; wait out workers that entered it late and found
	 * nothing left (a few instructions) */
	atomic_store(&tp->gen, g + 1);
	for (unsigned i = 0; atomic_load(&tp->inside); i++) {
		cpu_relax();
		if ((i & 1023) == 1023)
			sched_yield();  /* one was descheduled in there */
	}
}
