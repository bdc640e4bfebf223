/*
 * base/cpu.h - what this CPU and OS can run (base/cpu.c): cpuid, and the
 * OS's XSAVE support for the wide registers.  lib/kern/dispatch.c picks
 * the kernel table from it.
 */
#ifndef EMB_CPU_H
#define EMB_CPU_H

enum emb_cpu_feature {
	EMB_CPU_AVX2 = 1u << 0,         /* AVX2 + FMA + F16C, ymm saved */
	EMB_CPU_AVX512 = 1u << 1,       /* AVX-512 F/BW/VL/DQ, zmm saved */
	EMB_CPU_AVX512VNNI = 1u << 2,   /* with EMB_CPU_AVX512: vpdpbusd */
	EMB_CPU_AVXVNNI = 1u << 3,      /* with EMB_CPU_AVX2: 256-bit VEX vpdpbusd */
	EMB_CPU_AVX512BF16 = 1u << 4,   /* with EMB_CPU_AVX512: vdpbf16ps */
	EMB_CPU_AVX512POPCNT = 1u << 8, /* with EMB_CPU_AVX512: VPOPCNTDQ */
};

/* the EMB_CPU_* bits of this machine (a few cpuid instructions; 0 on
 * other architectures) */
unsigned emb_cpu_features(void);

#endif /* EMB_CPU_H */
