/*
 * progress.c - progress on stderr for the record driver (run.c): a
 * line rewritten in place on a terminal, plain lines every
 * EMB_CLI_PLAIN_EVERY seconds otherwise, and the status lines of
 * commands that report their own steps (emb_cli_status).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "tool/emb-tool.h"
#include "tool/driver.h"

double emb_cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void emb_cli_progress(emb_cli *c, const emb_reader *r, int final)
{
	double t = emb_cli_now(), dt;
	uint64_t done = 0, tot = 0;
	char eta[48] = "";

	if (!c->progress)
		return;
	if (!final && t - c->t_last < (c->progress_plain ? EMB_CLI_PLAIN_EVERY : 0.5))
		return;
	c->t_last = t;
	dt = t - c->t0;
	if (dt <= 0)
		dt = 1e-9;
	if (r)
		emb_reader_progress(r, &done, &tot);
	done += c->bytes_before;
	if (c->bytes_known && c->bytes_total > 0 && done > 0 && !final) {
		double left = (double)(c->bytes_total - (done < c->bytes_total ?
		              done : c->bytes_total)) * dt / (double)done;
		long s = (long)(left + 0.5);
		snprintf(eta, sizeof(eta), ", %.0f%%, ETA %ld:%02ld:%02ld",
		         100.0 * (double)done / (double)c->bytes_total,
		         s / 3600, s / 60 % 60, s % 60);
	}
	if (c->progress_plain) {
		fprintf(stderr, "%s: %llu records, %.1f records/s, %.0f tokens/s%s\n",
		        c->prog, (unsigned long long)c->records,
		        (double)c->records / dt, (double)c->tokens_done / dt, eta);
		return;
	}
	fprintf(stderr, "\r%s: %llu records, %.1f records/s, %.0f tokens/s%s\033[K%s",
	        c->prog, (unsigned long long)c->records,
	        (double)c->records / dt, (double)c->tokens_done / dt, eta,
	        final ? "\n" : "");
	c->progress_shown = !final;
}

void emb_cli_status(emb_cli *c, int final, const char *fmt, ...)
{
	double t = emb_cli_now();
	va_list ap;

	if (!c->progress)
		return;
	if (!final && t - c->t_last < (c->progress_plain ? EMB_CLI_PLAIN_EVERY : 0.5))
		return;
	c->t_last = t;
	if (!c->progress_plain)
		fputc('\r', stderr);
	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (!c->progress_plain)
		fputs("\033[K", stderr);
	if (c->progress_plain || final)
		fputc('\n', stderr);
}
