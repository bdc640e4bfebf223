/* testutil.c - helpers shared by the Criterion unit tests */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tool/emb-tool.h"
#include "kern/kernels.h"
#include "testutil.h"

const char *tu_top(void)
{
	const char *t = getenv("EMB_TOP");
	return t && *t ? t : ".";
}

char *tu_path(const char *fmt, ...)
{
	char *p = NULL;
	va_list ap;

	va_start(ap, fmt);
	cr_assert(vasprintf(&p, fmt, ap) >= 0);
	va_end(ap);
	return p;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb; (void)flag; (void)f;
	return remove(p);
}

void tu_rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 4096 > cap) {
			cap = (cap + 4096) * 2;
			cr_assert(buf = realloc(buf, cap + 1));
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

char *tu_fixture(const char *name)
{
	char *recipe = tu_path("%s/test/data/fixtures/%s/recipe.json", tu_top(), name);
	char *root = tu_path("%s/test/data", tu_top());
	char *dir = tu_path("%s/test/tmp/units/%s", tu_top(), name);
	char *done = tu_path("%s/.done", dir);
	char *want = tu_slurp(recipe, NULL), *have = tu_slurp(done, NULL);

	cr_assert(want, "cannot read %s", recipe);
	if (!have || strcmp(have, want)) {
		char *tmp = tu_path("%s.tmp%ld", dir, (long)getpid());
		char *tdone = tu_path("%s/.done", tmp);
		char *parent = tu_path("%s/test/tmp", tu_top());
		emb_err err = { "" };
		FILE *f;

		mkdir(parent, 0777);
		free(parent);
		parent = tu_path("%s/test/tmp/units", tu_top());
		mkdir(parent, 0777);
		free(parent);
		tu_rm_rf(tmp);
		cr_assert_eq(emb_synth_materialize(recipe, root, tmp, &err), 0,
		             "materialize %s: %s", name, err.msg);
		cr_assert(f = fopen(tdone, "w"));
		fputs(want, f);
		cr_assert_eq(fclose(f), 0);
		if (have)
			tu_rm_rf(dir);   /* stale */
		if (rename(tmp, dir) != 0)
			tu_rm_rf(tmp);   /* another process won the race */
		free(tmp);
		free(tdone);
	}
	free(recipe); free(root); free(done); free(want); free(have);
	return dir;
}

const char *tu_scratch(const char *name)
{
	static char dir[1024];
	char cmd[2200];

	snprintf(dir, sizeof(dir), "%s/test/tmp/unit-st/%s", tu_top(), name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	cr_assert_eq(system(cmd), 0, "cannot create %s", dir);
	return dir;
}

char *tu_pathf(const char *dir, const char *name)
{
	static char bufs[4][2300];
	static int k;
	char *b = bufs[k++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

void tu_put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static uint64_t rng = 88172645463325252ull;

float tu_frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

float *tu_rand_vec(size_t n, float scale)
{
	float *v = malloc((n ? n : 1) * sizeof(float));

	cr_assert(v);
	for (size_t i = 0; i < n; i++)
		v[i] = tu_frand() * scale;
	return v;
}

int tu_simd_variants(const emb_kernels **out)
{
	int n = 0;
	const emb_kernels *k;

	if ((k = emb_kernels_get("avx2")))
		out[n++] = k;
	if ((k = emb_kernels_get("avx512"))) {
#ifdef EMB_HAVE_AVX512
		/* a copy of the table with the fp32 GEMMs of the other chunks
		 * of k (the table holds those this core runs faster) */
		static emb_kernels other;
		const emb_kernels *f = k->gemm == emb_kernels_avx512.gemm ?
		                       &emb_kernels_avx512_long :
		                       &emb_kernels_avx512;
		other = *k;
		other.name = f->name;
		other.gemm = f->gemm;
		other.gemm_act = f->gemm_act;
		out[n++] = k;
		out[n++] = &other;
#else
		out[n++] = k;
#endif
	}
	out[n] = NULL;
	return n;
}

int tu_all_variants(const emb_kernels **out)
{
	out[0] = &emb_kernels_scalar;
	return 1 + tu_simd_variants(out + 1);
}

/* /proc/cpuinfo's first line that starts with KEY contains WORD (as a
 * whole word); -1: no such line or no /proc/cpuinfo */
int tu_cpuinfo_has(const char *key, const char *word)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	static char line[1 << 16];      /* the flags line, whole */
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			char *p = strchr(line, ':');
			r = 0;
			for (p = p ? strtok(p + 1, " \t\n") : NULL; p;
			     p = strtok(NULL, " \t\n"))
				if (!strcmp(p, word))
					r = 1;
			break;
		}
	fclose(f);
	return r;
}
