/*
 * cpu.c - the CPU features the kernels need (base/cpu.h): cpuid leaves 1
 * and 7, XGETBV for the register state the OS saves, and for AMX the
 * Linux permission to use the tile data state.
 */
#include <pthread.h>
#include <stddef.h>
#include "base/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static unsigned long long xgetbv0(void)
{
	unsigned eax, edx;

	__asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
	return ((unsigned long long)edx << 32) | eax;
}

/*
 * AMX: cpuid leaf 7 edx AMX-BF16 (22), AMX-TILE (24), AMX-INT8 (25);
 * XCR0 XTILECFG (17) and XTILEDATA (18); then, since Linux 5.16 keeps
 * the tile data state off until a process asks, arch_prctl
 * ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18).  The
 * permission is the process's (every thread, present and future, has
 * it); the tile configuration is per thread, loaded by each kernel call
 * (lib/kern/kernels_i8_amx.c).  Asked once, the answer kept.
 */
static const char *amx_why = "the CPU has no AMX";
static unsigned amx_bits;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void)
{
	unsigned a, b, c, d;

	if (__get_cpuid_max(0, NULL) < 7)
		return;
	__cpuid_count(7, 0, a, b, c, d);
	if (!(d & (1u << 24)) || !(d & (1u << 25)))
		return;
	if ((xgetbv0() & 0x60000) != 0x60000) {
		amx_why = "the OS does not save the AMX tile state";
		return;
	}
#if defined(__linux__) && defined(__x86_64__)
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
		amx_why = "the OS refused the AMX tile data permission";
		return;
	}
	amx_why = NULL;
	amx_bits = EMB_CPU_AMXINT8 | (d & (1u << 22) ? EMB_CPU_AMXBF16 : 0);
#else
	amx_why = "AMX is only used on Linux x86-64";
#endif
}

const char *emb_cpu_amx_why(void)
{
	if (!(emb_cpu_features() & EMB_CPU_AVX512))
		return "the CPU has no AMX";
	pthread_once(&amx_once, amx_probe);
	return amx_why;
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
	/* the vendor: "AuthenticAMD" in ebx, edx, ecx of leaf 0 */
	__cpuid(0, a, b, c, d);
	if (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) {
		f |= EMB_CPU_AMD;
		if (f & EMB_CPU_AVX512BF16)
			f |= EMB_CPU_BF16_FAST;
	}
	if (f & EMB_CPU_AVX512) {
		pthread_once(&amx_once, amx_probe);
		f |= amx_bits;
	}
	return f;
}
#else
unsigned emb_cpu_features(void)
{
	return 0;
}

const char *emb_cpu_amx_why(void)
{
	return "the CPU has no AMX";
}
#endif
