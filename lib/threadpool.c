/*
 * threadpool.c - a persistent pthread pool with a parallel-for.
 *
 * Workers sleep on a condition variable between jobs; a job is a range
 * [0, n) handed out in chunks through an atomic counter.  The caller's
 * thread works too (tid 0).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model-internal.h"

struct emb_threads {
	int n;                  /* threads in all, the caller included */
	pthread_t *th;
	int started;            /* workers actually running */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned long gen;      /* job number */
	int stop;
	int active;             /* workers still on the current job */
	/* the job */
	emb_task_fn fn;
	void *ctx;
	size_t items, grain;
	atomic_size_t next;
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

static void run_chunks(emb_threads *tp, int tid)
{
	size_t b;

	while ((b = atomic_fetch_add(&tp->next, tp->grain)) < tp->items) {
		size_t e = tp->items - b > tp->grain ? b + tp->grain : tp->items;
		tp->fn(tp->ctx, b, e, tid);
	}
}

static void *worker(void *p)
{
	worker_arg *wa = p;
	emb_threads *tp = wa->tp;
	int tid = wa->tid;
	unsigned long seen = 0;

	free(wa);
	for (;;) {
		pthread_mutex_lock(&tp->mu);
		while (tp->gen == seen && !tp->stop)
			pthread_cond_wait(&tp->go, &tp->mu);
		if (tp->stop) {
			pthread_mutex_unlock(&tp->mu);
			return NULL;
		}
		seen = tp->gen;
		pthread_mutex_unlock(&tp->mu);
		run_chunks(tp, tid);
		pthread_mutex_lock(&tp->mu);
		if (--tp->active == 0)
			pthread_cond_signal(&tp->done);
		pthread_mutex_unlock(&tp->mu);
	}
}

int emb_threads_new(emb_threads **out, int n, emb_err *err)
{
	emb_threads *tp;

	*out = NULL;
	if (n < 1 || n > 4096)
		return emb_err_set(err, "thread count %d is out of range (1..4096)", n);
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->th = calloc((size_t)n, sizeof(pthread_t)))) {
		free(tp);
		return emb_err_set(err, "out of memory");
	}
	tp->n = n;
	pthread_mutex_init(&tp->mu, NULL);
	pthread_cond_init(&tp->go, NULL);
	pthread_cond_init(&tp->done, NULL);
	atomic_init(&tp->next, 0);
	for (int i = 1; i < n; i++) {
		worker_arg *wa = malloc(sizeof(*wa));
		int rc;
		if (!wa) {
			emb_threads_free(tp);
			return emb_err_set(err, "out of memory");
		}
		wa->tp = tp;
		wa->tid = i;
		rc = pthread_create(&tp->th[i], NULL, worker, wa);
		if (rc) {
			free(wa);
			emb_threads_free(tp);
			return emb_err_set(err, "cannot start thread: %s", strerror(rc));
		}
		tp->started = i;
	}
	*out = tp;
	return 0;
}

void emb_threads_free(emb_threads *tp)
{
	if (!tp)
		return;
	pthread_mutex_lock(&tp->mu);
	tp->stop = 1;
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
	if (n == 0)
		return;
	if (grain == 0)
		grain = 1;
	if (!tp || tp->started == 0 || n <= grain) {
		for (size_t b = 0; b < n; b += grain)
			fn(ctx, b, n - b > grain ? b + grain : n, 0);
		return;
	}
	pthread_mutex_lock(&tp->mu);
	tp->fn = fn;
	tp->ctx = ctx;
	tp->items = n;
	tp->grain = grain;
	atomic_store(&tp->next, 0);
	tp->active = tp->started;
	tp->gen++;
	pthread_cond_broadcast(&tp->go);
	pthread_mutex_unlock(&tp->mu);
	run_chunks(tp, 0);
	pthread_mutex_lock(&tp->mu);
	while (tp->active > 0)
		pthread_cond_wait(&tp->done, &tp->mu);
	pthread_mutex_unlock(&tp->mu);
}
