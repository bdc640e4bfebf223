/*
 * runtime - wall time and peak RSS of one command (for `make bench`).
 * usage: runtime CMD [ARG...]
 * Runs CMD (stdin/stdout/stderr inherited) and prints, on fd 3 when it is
 * open else on stderr, one JSON line: {"wall":S,"maxrss_kb":K,"rc":N}.
 * Exit status: CMD's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: runtime CMD [ARG...]\n");
		return 2;
	}
	int fd = fcntl(3, F_GETFD) == -1 ? 2 : 3;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0)
		return 127;
	if (pid == 0) {
		if (fd == 3)
			close(3);
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return 127;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	dprintf(fd, "{\"wall\":%.4f,\"maxrss_kb\":%ld,\"rc\":%d}\n",
	        (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
	        ru.ru_maxrss, rc);
	return rc;
}
