/*
 * mexec.c - a case's pipeline run: each stage an emb-* program found
 * next to emb-validate or on PATH, forked and exec'd with no shell, the
 * stages joined by pipes, reaped with a timeout; the exit status as
 * pipefail gives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

/* ------------------------------------------------------------------ */
/* running a pipeline                                                  */

static char *find_prog(const char *bindir, const char *name)
{
	const char *path = getenv("PATH"), *p, *e;

	if (bindir) {
		char *cand = emb_xasprintf("%s/%s", bindir, name);

		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	/* absolute PATH entries only: an empty or relative one would find
	 * programs in the current directory (a manifest's own folder) */
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = e + 1) {
		char *cand;

		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (*p == '/') {
			cand = emb_xasprintf("%.*s/%s", (int)(e - p), p, name);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		if (!*e)
			break;
	}
	return NULL;
}

/* argv of stage S: prog -m MODEL words... args... [IN] (new,
 * NULL-terminated); the first stage reads IN as its file operand */
static char **stage_argv(const struct mcase *c, int s, const char *in)
{
	size_t nw = mf_strv_len(c->stages[s]), na = mf_strv_len(c->args), k = 0;
	char **v = emb_xcalloc(nw + na + 4, sizeof(*v));

	v[k++] = c->stages[s][0];
	if (c->model) {
		v[k++] = "-m";
		v[k++] = c->model;
	}
	for (size_t i = 1; i < nw; i++)
		v[k++] = c->stages[s][i];
	for (size_t i = 0; i < na; i++)
		v[k++] = c->args[i];
	if (s == 0)
		v[k++] = (char *)in;
	return v;
}

/*
 * Run the stages of C: the first reads IN (its operand; stdin is IN
 * too), the last writes into OUT, all stderr goes to ERRF.
 * WHY gets a message when the pipeline did not exit as expected.
 * Returns the pipeline status (rightmost non-zero exit, as pipefail;
 * 128+N for a signal), or -1 when it could not be started / timed out.
 */
int mf_run_pipeline(const struct mcase *c, const char *bindir,
                    const char *in, const char *out, const char *errf,
                    char *why, size_t whylen)
{
	pid_t pid[MAX_STAGES];
	int st[MAX_STAGES], done[MAX_STAGES] = { 0 };
	char *prog[MAX_STAGES] = { 0 };
	int infd = -1, outfd = -1, errfd = -1, prev, n = c->nstages, left;
	int status = 0, rc = -1, timed_out = 0;
	double t0 = mf_now(), nap = 1e-3;

	for (int s = 0; s < n; s++) {
		prog[s] = find_prog(bindir, c->stages[s][0]);
		if (!prog[s]) {
			snprintf(why, whylen, "%s: command not found",
			         c->stages[s][0]);
			goto out;
		}
	}
	{
		emb_err e = { "" };
		/* the input the manifest named: a regular file, never waited on */
		if ((infd = emb_file_open(NULL, in, NULL, &e)) < 0) {
			snprintf(why, whylen, "%s", e.msg);
			goto out;
		}
	}
	outfd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	             0644);
	errfd = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW |
	             O_CLOEXEC, 0644);
	if (infd < 0 || outfd < 0 || errfd < 0) {
		snprintf(why, whylen, "%s: %s", infd < 0 ? in : outfd < 0 ? out
		         : errf, strerror(errno));
		goto out;
	}
	fflush(NULL);
	prev = infd;
	for (int s = 0; s < n; s++) {
		int p[2] = { -1, -1 };
		char **argv;

		if (s < n - 1 && pipe2(p, O_CLOEXEC) < 0) {
			snprintf(why, whylen, "pipe: %s", strerror(errno));
			n = s;
			break;
		}
		argv = stage_argv(c, s, in);
		pid[s] = fork();
		if (pid[s] == 0) {
			signal(SIGPIPE, SIG_DFL);
			if (dup2(prev, 0) < 0 ||
			    dup2(s < n - 1 ? p[1] : outfd, 1) < 0 ||
			    dup2(errfd, 2) < 0)
				_exit(126);
			execv(prog[s], argv);
			dprintf(2, "emb-validate: %s: %s\n", prog[s],
			        strerror(errno));
			_exit(127);
		}
		free(argv);
		if (prev != infd)
			close(prev);
		if (p[1] >= 0)
			close(p[1]);
		if (pid[s] < 0) {
			snprintf(why, whylen, "fork: %s", strerror(errno));
			if (p[0] >= 0)
				close(p[0]);
			n = s;
			break;
		}
		prev = p[0];
	}
	if (prev != infd && prev >= 0)
		close(prev);
	close(infd);
	close(outfd);
	close(errfd);
	infd = outfd = errfd = -1;
	/* reap, with a timeout */
	for (left = n; left > 0;) {
		int any = 0;

		for (int s = 0; s < n; s++) {
			pid_t r;

			if (done[s])
				continue;
			r = waitpid(pid[s], &st[s], WNOHANG);
			if (r == pid[s] || (r < 0 && errno == ECHILD)) {
				if (r < 0)
					st[s] = 127 << 8;
				done[s] = 1;
				left--;
				any = 1;
			}
		}
		if (!left)
			break;
		if (c->timeout > 0 && !timed_out && mf_now() - t0 > c->timeout) {
			timed_out = 1;
			for (int s = 0; s < n; s++)
				if (!done[s])
					kill(pid[s], SIGKILL);
		}
		if (!any) {
			struct timespec ts = { 0, (long)(nap * 1e9) };

			nanosleep(&ts, NULL);
			if (nap < 0.02)
				nap *= 2;
		} else {
			nap = 1e-3;
		}
	}
	if (why[0])
		goto out;       /* a stage could not be started */
	if (timed_out) {
		snprintf(why, whylen, "timed out after %g s", c->timeout);
		goto out;
	}
	/* pipefail: the rightmost stage that failed decides */
	for (int s = n; s-- > 0;) {
		int code = WIFEXITED(st[s]) ? WEXITSTATUS(st[s]) :
		           WIFSIGNALED(st[s]) ? 128 + WTERMSIG(st[s]) : 255;

		if (!code)
			continue;
		status = code;
		if (WIFSIGNALED(st[s]))
			snprintf(why, whylen, "%s killed by signal %d",
			         c->stages[s][0], WTERMSIG(st[s]));
		else
			snprintf(why, whylen, "%s exited %d", c->stages[s][0],
			         code);
		break;
	}
	rc = status;
out:
	for (int s = 0; s < MAX_STAGES; s++)
		free(prog[s]);
	if (infd >= 0)
		close(infd);
	if (outfd >= 0)
		close(outfd);
	if (errfd >= 0)
		close(errfd);
	return rc;
}

