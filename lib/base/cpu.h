/*
 * base/cpu.h - what this CPU and OS can run (base/cpu.c): cpuid, and the
 * OS's XSAVE support for the wide registers and the AMX tiles.  lib/kern/dispatch.c picks
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
	/* AMX (with EMB_CPU_AVX512): the tile unit, tile state saved by the
	 * OS and the tile data permission granted to this process (Linux
	 * arch_prctl ARCH_REQ_XCOMP_PERM, asked once) */
	EMB_CPU_AMXINT8 = 1u << 9,      /* tdpbusd */
	EMB_CPU_AMXBF16 = 1u << 10,     /* tdpbf16ps */
	/* with EMB_CPU_AVX512BF16: vdpbf16ps runs at the rate of the fp32
	 * FMA, so a bf16 GEMM does twice the fp32 one's products per cycle:
	 * AMD's cores (Zen 4 measured: bench/fma-peak --bf16); Intel's run
	 * it at half that rate (the Sapphire Rapids kind measured) */
	EMB_CPU_BF16_FAST = 1u << 11,
	/* an AMD core (the vendor string "AuthenticAMD"): with
	 * EMB_CPU_AVX512, the fp32 GEMM in long chunks of k, W streamed
	 * from L2, outruns the one keeping W's piece in L1 (Zen 4 measured:
	 * kern/kernels.h); Intel's cores the other way round */
	EMB_CPU_AMD = 1u << 12,
};

/* the EMB_CPU_* bits of this machine (a few cpuid instructions; 0 on
 * other architectures) */
unsigned emb_cpu_features(void);
/* why AMX is not usable here ("the CPU has no AMX", "the OS does not
 * save the tile state", "the OS refused the tile data permission"), or
 * NULL when it is (EMB_CPU_AMXINT8 set) */
const char *emb_cpu_amx_why(void);

#endif /* EMB_CPU_H */
