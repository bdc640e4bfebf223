/*
 * cpu.c - the CPU features the kernels need (base/cpu.h): cpuid leaves 1
 * and 7, and XGETBV for the register state the OS saves.
 */
#include <stddef.h>
#include "base/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
	unsigned eax, edx;

	__asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
	return ((unsigned long long)edx << 32) | eax;
}

unsigned emb_cpu_features(void)
{
	unsigned a, b, c, d, c1, f = 0;
	unsigned long long xcr;

	if (!__get_cpuid(1, &a, &b, &c1, &d))
		return 0;
	/* OSXSAVE, AVX, FMA, F16C */
	if (!(c1 & (1u << 27)) || !(c1 & (1u << 28)) || !(c1 & (1u << 12)) ||
	    !(c1 & (1u << 29)))
		return 0;
	xcr = xgetbv0();
	if ((xcr & 0x6) != 0x6)
		return 0;    /* the OS does not save the ymm state */
	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	if (!(b & (1u << 5)))
		return 0;    /* no AVX2 */
	f |= EMB_CPU_AVX2;
	/* F (16), DQ (17), BW (30), VL (31), and opmask/zmm state saved */
	if ((xcr & 0xe6) == 0xe6 && (b & (1u << 16)) && (b & (1u << 17)) &&
	    (b & (1u << 30)) && (b & (1u << 31))) {
		f |= EMB_CPU_AVX512;
		if (c & (1u << 11))
			f |= EMB_CPU_AVX512VNNI;
		if (c & (1u << 14))
			f |= EMB_CPU_AVX512POPCNT;
	}
	__cpuid_count(7, 1, a, b, c, d);
	if (a & (1u << 4))
		f |= EMB_CPU_AVXVNNI;
	if ((f & EMB_CPU_AVX512) && (a & (1u << 5)))
		f |= EMB_CPU_AVX512BF16;        /* AVX512_BF16 */
	return f;
}
#else
unsigned emb_cpu_features(void)
{
	return 0;
}
#endif
