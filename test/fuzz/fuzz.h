/*
 * fuzz.h - helpers shared by the fuzz targets (test/fuzz/fuzz_*.c).
 *
 * Every target is a libFuzzer entry point, LLVMFuzzerTestOneInput, over
 * the public API of libemb (lib/emb.h).  The same sources are built twice:
 * with clang -fsanitize=fuzzer for `make fuzz`, and with the normal $(CC)
 * into test/fuzz/replay (the entry points renamed by -D), which replays
 * the committed seeds and regression inputs in `make check`.
 *
 * Test data is found through $EMB_TOP (the source tree; "." when unset).
 * Scratch files go to one private directory per process under $TMPDIR
 * (memfd where a file name is enough), removed at exit.
 */
#ifndef EMB_FUZZ_H
#define EMB_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/emb-tool.h"

#define FUZZ_UNUSED __attribute__((unused))

/* abort with a message: a broken invariant is a finding */
#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, \
		        __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* with $EMB_FUZZ_VERBOSE set: print what an input led to (to see which
 * seeds get past which check) */
static FUZZ_UNUSED void fuzz_note(const char *what, const char *msg)
{
	static int v = -1;

	if (v < 0)
		v = getenv("EMB_FUZZ_VERBOSE") != NULL;
	if (v)
		fprintf(stderr, "  %s: %s\n", what, msg);
}

static FUZZ_UNUSED const char *fuzz_top(void)
{
	const char *t = getenv("EMB_TOP");

	return t && *t ? t : ".";
}

/* new string "TOP/rel" (free()) */
static FUZZ_UNUSED char *fuzz_data(const char *rel)
{
	const char *top = fuzz_top();
	size_t n = strlen(top) + strlen(rel) + 2;
	char *p = malloc(n);

	if (!p)
		abort();
	snprintf(p, n, "%s/%s", top, rel);
	return p;
}

/* Write DATA to FD from offset 0 and truncate to SIZE. */
static FUZZ_UNUSED void fuzz_fill_fd(int fd, const void *data, size_t size)
{
	const char *p = data;
	off_t off = 0;

	if (ftruncate(fd, 0) < 0)
		abort();
	while (size > 0) {
		ssize_t k = pwrite(fd, p, size, off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			abort();
		}
		p += k;
		off += k;
		size -= (size_t)k;
	}
}

/*
 * An anonymous in-memory file holding DATA; *path: "/proc/self/fd/N",
 * a name any open()/fopen() accepts.  The fd is kept open (reused).
 */
static FUZZ_UNUSED int fuzz_memfile(int *fd, char path[64], const void *data,
                                    size_t size)
{
	if (*fd < 0) {
		*fd = memfd_create("emb-fuzz", MFD_CLOEXEC);
		if (*fd < 0)
			abort();
	}
	fuzz_fill_fd(*fd, data, size);
	snprintf(path, 64, "/proc/self/fd/%d", *fd);
	return 0;
}

/* write DATA to PATH (created or replaced) */
static FUZZ_UNUSED void fuzz_write(const char *path, const void *data,
                                   size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
		abort();
	}
	fuzz_fill_fd(fd, data, size);
	close(fd);
}

static char *fuzz_tmp_dir;

static int fuzz_rm_entry(const char *p, const struct stat *sb, int flag,
                         struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void fuzz_tmp_cleanup(void)
{
	if (fuzz_tmp_dir)
		nftw(fuzz_tmp_dir, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fuzz_tmp_dir);
	fuzz_tmp_dir = NULL;
}

/* this process's scratch directory (created once; removed at exit) */
static FUZZ_UNUSED const char *fuzz_tmp(void)
{
	if (!fuzz_tmp_dir) {
		const char *t = getenv("TMPDIR");
		size_t n;

		if (!t || !*t)
			t = "/tmp";
		n = strlen(t) + 32;
		if (!(fuzz_tmp_dir = malloc(n)))
			abort();
		snprintf(fuzz_tmp_dir, n, "%s/emb-fuzz.XXXXXX", t);
		if (!mkdtemp(fuzz_tmp_dir)) {
			fprintf(stderr, "fuzz: %s: %s\n", fuzz_tmp_dir,
			        strerror(errno));
			abort();
		}
		atexit(fuzz_tmp_cleanup);
	}
	return fuzz_tmp_dir;
}

/* new string "SCRATCH/rel" (free()) */
static FUZZ_UNUSED char *fuzz_tmp_path(const char *rel)
{
	const char *d = fuzz_tmp();
	size_t n = strlen(d) + strlen(rel) + 2;
	char *p = malloc(n);

	if (!p)
		abort();
	snprintf(p, n, "%s/%s", d, rel);
	return p;
}

/*
 * FUZZ_ENTRY(name): the target's entry point.  Built for libFuzzer
 * (test/fuzz/run.sh defines EMB_LIBFUZZER) it is LLVMFuzzerTestOneInput;
 * otherwise fuzz_NAME_one, which test/fuzz/replay.c calls for every
 * target linked into one program.
 */
#ifdef EMB_LIBFUZZER
#define FUZZ_ENTRY(name) LLVMFuzzerTestOneInput
#else
#define FUZZ_ENTRY(name) fuzz_##name##_one
#endif

#endif /* EMB_FUZZ_H */
