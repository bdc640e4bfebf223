/*
 * cpu.c - pick the kernel table by CPU features (cpuid, and the OS's
 * XSAVE support for the wide registers) or by $EMB_ISA.
 */
#include <stdlib.h>
#include <string.h>
#include "base/base.h"
#include "kern/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
	unsigned eax, edx;

	__asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
	return ((unsigned long long)edx << 32) | eax;
}

/* 1: AVX2+FMA usable; 2: AVX-512 F/BW/VL/DQ usable too */
static int cpu_level(void)
{
	unsigned a, b, c, d, c1;
	unsigned long long xcr;
	int level = 0;

	if (!__get_cpuid(1, &a, &b, &c1, &d))
		return 0;
	if (!(c1 & (1u << 27)) || !(c1 & (1u << 28)) || !(c1 & (1u << 12)))
		return 0;    /* no OSXSAVE, AVX or FMA */
	xcr = xgetbv0();
	if ((xcr & 0x6) != 0x6)
		return 0;    /* OS does not save YMM state */
	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	if (b & (1u << 5))
		level = 1;
	if (level && (xcr & 0xe6) == 0xe6 && (b & (1u << 16)) &&
	    (b & (1u << 17)) && (b & (1u << 30)) && (b & (1u << 31)))
		level = 2;
	return level;
}
#else
static int cpu_level(void)
{
	return 0;
}
#endif

const emb_kernels *emb_kernels_get(const char *isa)
{
	int level = cpu_level();   /* cheap: a few cpuid instructions */

	(void)level;
	if (!strcmp(isa, "scalar"))
		return &emb_kernels_scalar;
#ifdef EMB_HAVE_AVX2
	if (!strcmp(isa, "avx2") && level >= 1)
		return &emb_kernels_avx2;
#endif
#ifdef EMB_HAVE_AVX512
	if (!strcmp(isa, "avx512") && level >= 2)
		return &emb_kernels_avx512;
#endif
	return NULL;
}

int emb_kernels_select(const emb_kernels **out, emb_err *err)
{
	static const char *const order[] = { "avx512", "avx2", "scalar" };
	const char *env = getenv("EMB_ISA");

	if (env && *env && strcmp(env, "auto")) {
		if (strcmp(env, "scalar") && strcmp(env, "avx2") &&
		    strcmp(env, "avx512"))
			return emb_err_set(err, "EMB_ISA: unknown value '%s' "
			                   "(expected scalar, avx2, avx512 or auto)", env);
		*out = emb_kernels_get(env);
		if (!*out)
			return emb_err_set(err, "EMB_ISA: %s is not supported by "
			                   "this CPU or build", env);
		return 0;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((*out = emb_kernels_get(order[i])))
			return 0;
	return emb_err_set(err, "no kernels");   /* unreachable: scalar */
}
