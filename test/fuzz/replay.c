/*
 * replay.c - run the fuzz targets' LLVMFuzzerTestOneInput over files,
 * without libFuzzer (built with the normal $(CC); `make check` runs it,
 * the sanitizer build runs it under ASan/UBSan).
 *
 *   replay [-v]                 every target over test/fuzz/corpus/T and
 *                               test/fuzz/regress/T (under $EMB_TOP)
 *   replay [-v] TARGET PATH...  one target over files / directories
 *
 * Prints "replay TARGET: N inputs" per target and "replay: N inputs, N
 * targets" at the end; exits 0.  A finding aborts the process (with -v
 * the last "replay: TARGET FILE" line on stderr names the input).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_TARGET(n) int fuzz_##n##_one(const uint8_t *data, size_t size);
#include "targets.h"
#undef FUZZ_TARGET

static const struct target {
	const char *name;
	int (*one)(const uint8_t *, size_t);
} targets[] = {
#define FUZZ_TARGET(n) { #n, fuzz_##n##_one },
#include "targets.h"
#undef FUZZ_TARGET
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static int verbose;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const struct target *t, const char *path, size_t *count)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (!fp) {
		perror(path);
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			if (!(buf = realloc(buf, cap)))
				abort();
		}
		k = fread(buf + n, 1, cap - n, fp);
		n += k;
		if (k == 0)
			break;
	}
	fclose(fp);
	if (verbose)
		fprintf(stderr, "replay: %s %s\n", t->name, path);
	/* an exact-size copy, so that ASan sees reads past the end */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact)
		abort();
	memcpy(exact, buf, n);
	free(buf);
	t->one(exact, n);
	free(exact);
	(*count)++;
	return 0;
}

/* PATH: a file, or a directory of files (sorted; dot files skipped) */
static int run_path(const struct target *t, const char *path, size_t *count,
                    int missing_ok)
{
	struct stat sb;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t nn = 0, cap = 0;
	int rc = 0;

	if (stat(path, &sb) < 0) {
		if (missing_ok)
			return 0;
		perror(path);
		return -1;
	}
	if (!S_ISDIR(sb.st_mode))
		return run_file(t, path, count);
	if (!(d = opendir(path))) {
		perror(path);
		return -1;
	}
	while ((e = readdir(d))) {
		size_t l;
		if (e->d_name[0] == '.')
			continue;
		if (nn == cap) {
			cap = cap ? 2 * cap : 64;
			if (!(names = realloc(names, cap * sizeof(*names))))
				abort();
		}
		l = strlen(path) + strlen(e->d_name) + 2;
		if (!(names[nn] = malloc(l)))
			abort();
		snprintf(names[nn++], l, "%s/%s", path, e->d_name);
	}
	closedir(d);
	if (nn)
		qsort(names, nn, sizeof(*names), cmp_str);
	for (size_t i = 0; i < nn; i++) {
		if (rc == 0 && stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode))
			rc = run_file(t, names[i], count);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	const char *top = getenv("EMB_TOP");
	size_t total = 0, ntargets = 0;
	int i = 1;

	if (i < argc && !strcmp(argv[i], "-v")) {
		verbose = 1;
		i++;
	}
	if (!top || !*top)
		top = ".";
	if (i < argc) {
		const struct target *t = NULL;
		size_t count = 0;

		for (size_t k = 0; k < NTARGETS; k++)
			if (!strcmp(targets[k].name, argv[i]))
				t = &targets[k];
		if (!t || i + 1 >= argc) {
			fprintf(stderr, "usage: replay [-v] [TARGET PATH...]\n"
			        "targets:");
			for (size_t k = 0; k < NTARGETS; k++)
				fprintf(stderr, " %s", targets[k].name);
			fprintf(stderr, "\n");
			return 2;
		}
		for (i++; i < argc; i++)
			if (run_path(t, argv[i], &count, 0) < 0)
				return 1;
		printf("replay %s: %zu inputs\n", t->name, count);
		return 0;
	}
	for (size_t k = 0; k < NTARGETS; k++) {
		static const char *const sub[] = { "corpus", "regress" };
		size_t count = 0;

		for (int s = 0; s < 2; s++) {
			char dir[4096];
			snprintf(dir, sizeof(dir), "%s/test/fuzz/%s/%s", top,
			         sub[s], targets[k].name);
			if (run_path(&targets[k], dir, &count, 1) < 0)
				return 1;
		}
		printf("replay %s: %zu inputs\n", targets[k].name, count);
		fflush(stdout);
		total += count;
		ntargets++;
	}
	printf("replay: %zu inputs, %zu targets\n", total, ntargets);
	return 0;
}
