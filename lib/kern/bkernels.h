/*
 * bkernels.h - bf16 compute: the GEMM of linear layers with bfloat16
 * weights and activations and fp32 accumulation (kernels_bf16.c: the
 * rounding, the packing and the scalar oracle; kernels_bf16_avx2.c: AVX2
 * + FMA; kernels_avx512.c: AVX-512 F, FMA on the fp32 GEMM's tiles, for
 * CPUs without vdpbf16ps; kernels_bf16_avx512.c: AVX-512 BF16,
 * vdpbf16ps).  kernels.h's table holds the one to use.
 *
 * Rounding fp32 -> bf16 (emb_f32_to_bf16_ftz) is the one vcvtne2ps2bf16
 * does: base/half.h's rule (round to nearest even, NaN -> quiet NaN)
 * on the input with subnormals flushed to signed zero.  Weights are rounded once at load, activations inside
 * the GEMM (each kernel rounds its rows of x itself, the same way).
 *
 * Packed weights: W (N,K) as ceil(N/16) panels of 16 output columns and
 * k2 = K rounded up to even; panel p, pair g holds for c = 0..15 the two
 * bf16 values W[16p+c][2g], W[16p+c][2g+1] (zero past N and K): 64
 * bytes, one vdpbf16ps operand.
 *
 *   y[i][j] = acc + b[j],  acc = 0, then for g = 0 .. k2/2 - 1:
 *       acc += X[i][2g+1] * W[j][2g+1];  acc += X[i][2g] * W[j][2g]
 *
 * with X the bf16-rounded activations (zero past K), each += one fp32
 * rounding (the order of vdpbf16ps).  A product of two bf16 values has
 * at most 16 significant bits, so it is exact in fp32 and a fused
 * multiply-add equals a multiply then an add: the scalar, AVX2, AVX-512
 * and AVX-512 BF16 kernels give the same bits, except where a product or
 * partial sum is below 2^-126 in magnitude (vdpbf16ps flushes those to
 * zero; the others keep subnormals).
 */
#ifndef EMB_BKERNELS_H
#define EMB_BKERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "base/half.h"

/* fp32 -> bf16 bits as the bf16 GEMMs round (see above): a subnormal
 * input flushed to zero of its sign, as vcvtneps2bf16 does, then
 * base/half.h's rule (nearest even, NaN quieted) */
static inline uint16_t emb_f32_to_bf16_ftz(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if (!(u & 0x7f800000u))
		return (uint16_t)((u >> 16) & 0x8000);
	return emb_f32_to_bf16(f);
}

/* uint16 elements of the packed form of W (n,k); 0 on overflow */
size_t emb_bf16_pack_size(int n, int k);
/* W (n,k) fp32 row-major -> wb (emb_bf16_pack_size(n,k) elements) */
void emb_bf16_pack(uint16_t *wb, const float *w, int n, int k);
/*
 * The same packed form from operands made at run time (attention's K
 * and V): pack_rows packs W (n,k) whose rows are ldw apart; pack_cols
 * packs W = X^T for X (k,n) whose rows are ldx apart (W[j][kk] =
 * X[kk][j]).  Every version gives the same bits; kernels.h's table
 * holds the ones to use.  They do not allocate.
 */
typedef void (*emb_bf16_pack_rows_fn)(uint16_t *wb, const float *w, int ldw,
                                      int n, int k);
typedef void (*emb_bf16_pack_cols_fn)(uint16_t *wb, const float *x, int ldx,
                                      int n, int k);
void emb_bf16_pack_rows(uint16_t *wb, const float *w, int ldw, int n, int k);
void emb_bf16_pack_cols(uint16_t *wb, const float *x, int ldx, int n, int k);
/* the AVX-512 (F/BW/VL) versions when this build and CPU have them, else
 * NULL */
emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512(void);
emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512(void);
/* the AVX-512 BF16 versions (vcvtne2ps2bf16 rounds) when this build and
 * CPU have them, else NULL */
emb_bf16_pack_rows_fn emb_bf16_pack_rows_avx512bf16(void);
emb_bf16_pack_cols_fn emb_bf16_pack_cols_avx512bf16(void);

/*
 * y (m,n) = X (m,k) @ W (n,k)^T + b (n), the formula above; wb: W packed,
 * starting at a panel boundary; b may be NULL; ldy, ldx: row strides.
 * x is fp32 (rounded to bf16 inside).  Kernels do not allocate.
 */
typedef void (*emb_gemm_bf16_fn)(float *y, int ldy, const float *x, int ldx,
                                 const uint16_t *wb, const float *b, int m,
                                 int n, int k);

void emb_gemm_bf16_scalar(float *y, int ldy, const float *x, int ldx,
                          const uint16_t *wb, const float *b, int m, int n,
                          int k);
/* the AVX2 + FMA kernel when this build and CPU have it, else NULL */
emb_gemm_bf16_fn emb_gemm_bf16_avx2(void);
/* the AVX-512 BF16 (vdpbf16ps) kernel when this build and CPU have it */
emb_gemm_bf16_fn emb_gemm_bf16_avx512(void);
/*
 * the AMX-BF16 kernel (tdpbf16ps tiles, kernels_bf16_amx.c) when this
 * build, CPU and OS allow it, else NULL.  Not the formula's bits: the
 * tile unit rounds each pair's two products as one sum, and adds 16
 * pairs per instruction in its own order (measured on Sapphire Rapids:
 * no sequential fp32 order reproduces it), and flushes subnormals.  Its
 * own results do not depend on the call's shape (k runs in steps of 32
 * from 0 for every element); against the formula an element differs by
 * at most a few fp32 roundings of the sum of |products| (test_bf16.c).
 */
emb_gemm_bf16_fn emb_gemm_bf16_amx(void);

#endif /* EMB_BKERNELS_H */
