/*
 * outwrite.c - whole lines to a pipe whose reader may stop (outwrite.h).
 *
 * A blocking write(2) of many lines to a full pipe waits inside the
 * kernel with part of the buffer written; a signal then either restarts
 * it (SA_RESTART: the tool cannot be stopped) or returns the partial
 * count (the pipe ends in half a line).  So to a pipe we write only what
 * fits: its free room is its capacity (F_GETPIPE_SZ) less the unread
 * bytes (FIONREAD) less one page (a page the reader has half consumed
 * is not free yet), and we write the whole lines that fit in that, or
 * wait a millisecond (a sleep a signal interrupts) for the reader.  A
 * reader that has closed the pipe leaves its unread bytes there for
 * good: poll's POLLERR says so, and the write then fails with EPIPE.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tool/outwrite.h"

#define PAGE 4096

/* free room of pipe FD in bytes, and the most it can ever have; -1 when
 * FD is not a pipe or the system does not say */
static int pipe_room(int fd, size_t *room, size_t *most)
{
#ifdef F_GETPIPE_SZ
	int cap = fcntl(fd, F_GETPIPE_SZ), used = 0;

	if (cap <= PAGE || ioctl(fd, FIONREAD, &used) < 0 || used < 0)
		return -1;
	*most = (size_t)cap - PAGE;
	*room = used < cap - PAGE ? (size_t)(cap - PAGE - used) : 0;
	return 0;
#else
	(void)fd;
	(void)room;
	(void)most;
	return -1;
#endif
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* a line was cut by a stop: give its rest GRACE to go out */
static void finish_line(int fd, const char *p, size_t len, size_t *off,
                        int is_pipe)
{
	const char *nl = memchr(p + *off, '\n', len - *off);
	size_t end = nl ? (size_t)(nl - p) + 1 : len;
	long long until = now_ms() + EMB_WRITE_GRACE_MS;

	while (*off < end) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		long long left = until - now_ms();
		size_t chunk = end - *off, room, most;
		ssize_t n;
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return;
		if (is_pipe && pipe_room(fd, &room, &most) == 0) {
			room += PAGE;   /* the margin is not needed now */
			if (!room)
				continue;
			if (chunk > room)
				chunk = room;
		}
		n = write(fd, p + *off, chunk);
		if (n <= 0 && !(n < 0 && errno == EINTR))
			return;
		if (n > 0)
			*off += (size_t)n;
	}
}

int emb_write_lines(int fd, const char *p, size_t len,
                    volatile sig_atomic_t *stop, size_t *done)
{
	struct stat sb;
	int is_pipe = fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode);
	size_t off = 0;

	while (off < len) {
		size_t chunk = len - off, room, most;
		ssize_t n;
		if (*stop && (off == 0 || p[off - 1] == '\n')) {
			*done = off;
			return 1;
		}
		if (is_pipe && pipe_room(fd, &room, &most) == 0 && room < chunk) {
			const char *nl = room ? memrchr(p + off, '\n', room) : NULL;
			if (nl) {
				chunk = (size_t)(nl - (p + off)) + 1;
			} else {
				const char *e = memchr(p + off, '\n', len - off);
				size_t line = e ? (size_t)(e - (p + off)) + 1 : len - off;
				struct pollfd pf = { .fd = fd, .events = POLLOUT };
				if (line <= most && !(poll(&pf, 1, 0) > 0 &&
				    (pf.revents & (POLLERR | POLLHUP | POLLNVAL)))) {
					/* it will fit once the reader reads */
					struct timespec ms = { 0, 1000000 };
					nanosleep(&ms, NULL);
					continue;
				}
				/* longer than the pipe: as it comes; or the
				 * reader is gone (what it left unread never
				 * drains): the write says so (EPIPE) */
				chunk = line;
			}
		}
		n = write(fd, p + off, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EIO;
			return -1;
		}
		off += (size_t)n;
		if (*stop && p[off - 1] != '\n' && off < len) {
			finish_line(fd, p, len, &off, is_pipe);
			*done = off;
			return 1;
		}
	}
	*done = off;
	return 0;
}
