/*
 * profile.c - $EMB_PROFILE: where a model's forward time goes.  Each
 * linear layer call is timed by its shape and arithmetic (fp32, bf16,
 * int8), and each attention call, in thread-seconds: a call split over
 * the pool counts its wall time once per thread, a row block run inside
 * one thread's task its own time.  So GFLOP per thread-second reads
 * against one core's FMA peak, however the forward ran the call.
 * Every thread adds to a table of its own (tid), read only once the
 * threads are idle (emb_model_profile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/nn-internal.h"

#define PROF_KEYS 64

typedef struct prof_ent {
	const char *what;       /* a static string: "fp32", "bf16", "int8",
	                           "attention" */
	int in, out;            /* linear: the layer's; attention: head dim,
	                           heads */
	long calls;
	double rows, flop, sec; /* sec: thread-seconds */
	double busy;            /* seconds inside the threads' tasks */
} prof_ent;

struct emb_prof {
	int nt;
	prof_ent *e;            /* (nt, PROF_KEYS) */
	int *n;                 /* (nt) entries in use; keys past
	                           PROF_KEYS are not counted */
};

/* E is the key (WHAT, IN, OUT): the names compared as strings, so that
 * the same name from two files is one key */
static int same(const prof_ent *e, const char *what, int in, int out)
{
	return e->in == in && e->out == out && !strcmp(e->what, what);
}

emb_prof *emb_prof_new(int threads)
{
	emb_prof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nt = threads > 0 ? threads : 1;
	p->e = calloc((size_t)p->nt * PROF_KEYS, sizeof(*p->e));
	p->n = calloc((size_t)p->nt, sizeof(*p->n));
	if (!p->e || !p->n) {
		emb_prof_free(p);
		return NULL;
	}
	return p;
}

void emb_prof_free(emb_prof *p)
{
	if (!p)
		return;
	free(p->e);
	free(p->n);
	free(p);
}

double emb_prof_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* thread TID's entry of the key (WHAT, IN, OUT), new if need be; NULL
 * when the table is full */
static prof_ent *entry(emb_prof *p, int tid, const char *what, int in,
                       int out)
{
	prof_ent *e;
	int i;

	if (tid < 0 || tid >= p->nt)
		tid = 0;
	e = p->e + (size_t)tid * PROF_KEYS;
	for (i = 0; i < p->n[tid]; i++)
		if (same(&e[i], what, in, out))
			return &e[i];
	if (i == PROF_KEYS)
		return NULL;
	e[i] = (prof_ent){ what, in, out, 0, 0, 0, 0, 0 };
	p->n[tid]++;
	return &e[i];
}

void emb_prof_add(emb_prof *p, int tid, const char *what, int in, int out,
                  double rows, double flop, double sec)
{
	prof_ent *e = entry(p, tid, what, in, out);

	if (!e)
		return;
	e->calls++;
	e->rows += rows;
	e->flop += flop;
	e->sec += sec;
}

void emb_prof_busy(emb_prof *p, int tid, const char *what, int in, int out,
                   double sec)
{
	prof_ent *e = entry(p, tid, what, in, out);

	if (e)
		e->busy += sec;
}

int emb_model_profile(const emb_model *m, FILE *f, const char *prefix)
{
	const emb_prof *p = m->prof;
	prof_ent all[PROF_KEYS];
	int n = 0;

	if (!p)
		return 0;
	// every thread's table -> all, by key in the order first seen
	for (int t = 0; t < p->nt; t++) {
		const prof_ent *e = p->e + (size_t)t * PROF_KEYS;
		for (int i = 0; i < p->n[t]; i++) {
			int k;
			for (k = 0; k < n; k++)
				if (same(&all[k], e[i].what, e[i].in, e[i].out))
					break;
			if (k == n) {
				if (n == PROF_KEYS)
					continue;
				all[n] = e[i];
				all[n].calls = 0;
				all[n].rows = all[n].flop = all[n].sec = 0;
				all[n].busy = 0;
				n++;
			}
			all[k].calls += e[i].calls;
			all[k].rows += e[i].rows;
			all[k].flop += e[i].flop;
			all[k].sec += e[i].sec;
			all[k].busy += e[i].busy;
		}
	}
	fprintf(f, "%s{\"kernels\":\"%s\",\"threads\":%d}\n", prefix,
	        m->k->name, p->nt);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s{\"what\":\"%s\",\"in\":%d,\"out\":%d,\"calls\":%ld,"
		        "\"rows\":%.0f,\"gflop\":%.6f,\"thread_s\":%.6f,"
		        "\"gflops_per_thread\":%.1f,\"busy_s\":%.6f,"
		        "\"gflops_per_busy\":%.1f}\n", prefix, all[k].what,
		        all[k].in, all[k].out, all[k].calls, all[k].rows,
		        all[k].flop / 1e9, all[k].sec, all[k].sec > 0 ?
		        all[k].flop / all[k].sec / 1e9 : 0.0, all[k].busy,
		        all[k].busy > 0 ? all[k].flop / all[k].busy / 1e9 : 0.0);
	return n + 1;
}
