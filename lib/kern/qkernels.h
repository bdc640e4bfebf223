/*
 * qkernels.h - int8 GEMM for W8A8 linear layers (kernels_i8.c: the
 * exact scalar version and the row quantizer; kernels_i8_avx2.c: AVX-VNNI,
 * plain AVX2 and the AVX2 row quantizer; kernels_i8_avx512.c: AVX-512 VNNI, and
 * its row quantizer).  kernels.h's table holds the ones to use.
 *
 * Weights: per-row symmetric int8, w[j][k] ~ ws[j] * q[j][k], q in
 * [-127, 127].  Packed in panels of 16 output rows with k in groups of
 * 4 (the vpdpbusd layout): panel p, group g holds for c = 0..15 the 4
 * bytes q[16p+c][4g..4g+3] (zero past n and past k).  kp = k rounded up
 * to a multiple of 4.
 *
 * Activations: per-row asymmetric uint8, x[k] ~ xs * (u[k] - xz).
 *
 *   y[i][j] = (xs[i] * ws[j]) * (float)(sum_k u[i][k] q[j][k]
 *                                       - xz[i] * wsum[j]) + b[j]
 *
 * The integer sum is exact, and the float epilogue is the same sequence
 * of operations in every version (no fused multiply-add), so the scalar
 * and SIMD kernels give bitwise identical results.
 */
#ifndef EMB_QKERNELS_H
#define EMB_QKERNELS_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

/* bytes of the packed form of q (n,k); 0 on overflow */
size_t emb_i8_pack_size(int n, int k);
/* q (n,k) row-major -> wp (emb_i8_pack_size bytes) */
void emb_i8_pack(int8_t *wp, const int8_t *q, int n, int k);
/* w (n,k) floats -> q (n,k) and scales ws (n): ws = max|w| / 127,
 * q = round(w / ws) (0 rows: ws 1, q 0) */
void emb_i8_quantize_rows(int8_t *q, float *ws, const float *w, int n, int k);
typedef void (*emb_i8_quant_fn)(int8_t *q, float *ws, const float *w, int n,
                                int k);
/* the AVX-512 one (the same bytes and scales, for finite w) when this
 * build and CPU have it, else NULL */
emb_i8_quant_fn emb_i8_quantize_rows_avx512(void);

/* x (rows, k) stride ldx -> u (rows, kp) stride ldu, xs, xz (rows):
 * the range [lo, hi] of the row with 0, xs = (hi - lo) / 255 (1 when
 * hi == lo), xz = round(-lo / xs), u = clamp(round(x * (1 / xs)) + xz,
 * 0, 255) (NaN -> 0), zero past k */
void emb_u8_quantize_rows(uint8_t *u, int ldu, float *xs, int32_t *xz,
                          const float *x, int ldx, int rows, int k);
typedef void (*emb_u8_quant_fn)(uint8_t *u, int ldu, float *xs, int32_t *xz,
                                const float *x, int ldx, int rows, int k);
/* the AVX-512 row quantizer (same bytes, scales and zero points as
 * emb_u8_quantize_rows) when this build and CPU have it, else NULL */
emb_u8_quant_fn emb_u8_quantize_avx512(void);
/* the AVX2 one (same results), for CPUs with AVX-VNNI but not AVX-512 */
emb_u8_quant_fn emb_u8_quantize_avx2(void);

/*
 * The smoothed row quantizer (SmoothQuant: per-input-channel scales
 * migrated into the weights): emb_u8_quantize_rows of the rows x * cs,
 * column kk of every row times cs[kk] (a float32 multiply, the same in
 * every version), without writing x * cs anywhere (cs NULL: exactly
 * emb_u8_quantize_rows):
 * x (rows, k) stride ldx, cs (k) -> u (rows, kp) stride ldu, xs, xz (rows)
 */
void emb_u8_quantize_rows_scaled(uint8_t *u, int ldu, float *xs, int32_t *xz,
                                 const float *x, int ldx, int rows, int k,
                                 const float *cs);
typedef void (*emb_u8_quant_scaled_fn)(uint8_t *u, int ldu, float *xs,
                                       int32_t *xz, const float *x, int ldx,
                                       int rows, int k, const float *cs);
/* the AVX-512 and AVX2 versions (same results) or NULL, as above */
emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx512(void);
emb_u8_quant_scaled_fn emb_u8_quantize_scaled_avx2(void);

/* the per-row parameters of emb_u8_quantize_rows from the row's range
 * (lo <= 0 <= hi), shared by every version so that they agree exactly */
static inline void emb_u8_row_params(float *xs, float *inv, int32_t *xz,
                                     float lo, float hi)
{
	float s = hi > lo ? (hi - lo) / 255.0f : 1.0f;
	float z = nearbyintf(-lo / s);

	*xs = s;
	*inv = 1.0f / s;
	*xz = z > 0 ? (z < 255 ? (int32_t)z : 255) : 0;
}

/* whether a row of range [lo, hi] and inverse scale inv can take the
 * SIMD quantizers' integer path: |x * inv| far inside int16, as it is
 * whenever the row's scale is a normal float; a row whose range
 * underflows the scale goes to the scalar quantizer */
static inline int emb_u8_row_fits(float lo, float hi, float inv)
{
	return (hi > -lo ? hi : -lo) * inv < 16384.0f;
}

/* y (m, n) = the formula above; wp starts at a panel boundary; ws, wsum,
 * b (may be NULL) start at the same column */
typedef void (*emb_gemm_i8_fn)(float *y, int ldy, const uint8_t *u, int ldu,
                               const float *xs, const int32_t *xz,
                               const int8_t *wp, const float *ws,
                               const int32_t *wsum, const float *b,
                               int m, int n, int kp);

void emb_gemm_i8_scalar(float *y, int ldy, const uint8_t *u, int ldu,
                        const float *xs, const int32_t *xz,
                        const int8_t *wp, const float *ws,
                        const int32_t *wsum, const float *b,
                        int m, int n, int kp);
/* the AVX-512 VNNI kernel when this build and CPU have it, else NULL */
emb_gemm_i8_fn emb_gemm_i8_vnni(void);
/* the AMX-INT8 kernel (tdpbusd tiles, kernels_i8_amx.c) when this build,
 * CPU and OS allow it, else NULL */
emb_gemm_i8_fn emb_gemm_i8_amx(void);
/* the AVX-VNNI (256-bit) kernel when this build and CPU have it */
emb_gemm_i8_fn emb_gemm_i8_avxvnni(void);
/* the plain AVX2 kernel (int16 products, vpmaddwd; no VNNI needed) when
 * this build and CPU have AVX2 */
emb_gemm_i8_fn emb_gemm_i8_avx2(void);

#endif /* EMB_QKERNELS_H */
