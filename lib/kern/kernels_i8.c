/*
 * kernels_i8.c - int8 weight packing and quantization, row quantization
 * of activations, and the exact scalar int8 GEMM (see qkernels.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kern/qkernels.h"

size_t emb_i8_pack_size(int n, int k)
{
	size_t np = ((size_t)n + 15) / 16, kp = ((size_t)k + 3) / 4 * 4;

	if (n <= 0 || k <= 0 || kp > SIZE_MAX / 16 / np)
		return 0;
	return np * 16 * kp;
}

void emb_i8_pack(int8_t *wp, const int8_t *q, int n, int k)
{
	int kp = (k + 3) / 4 * 4;

	for (int p = 0; p < (n + 15) / 16; p++)
		for (int g = 0; g < kp / 4; g++)
			for (int c = 0; c < 16; c++)
				for (int t = 0; t < 4; t++) {
					int j = 16 * p + c, kk = 4 * g + t;
					*wp++ = j < n && kk < k ? q[(size_t)j * k + kk] : 0;
				}
}

void emb_i8_quantize_rows(int8_t *q, float *ws, const float *w, int n, int k)
{
	for (int j = 0; j < n; j++) {
		const float *r = w + (size_t)j * k;
		float mx = 0, s;
		for (int kk = 0; kk < k; kk++)
			if (fabsf(r[kk]) > mx)
				mx = fabsf(r[kk]);
		s = mx > 0 ? mx / 127.0f : 1.0f;
		ws[j] = s;
		for (int kk = 0; kk < k; kk++) {
			float v = nearbyintf(r[kk] / s);
			q[(size_t)j * k + kk] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
		}
	}
}

/* the rows x (or x * cs per column, cs not NULL) quantized: both entry
 * points below, the same products and roundings */
static inline void u8_rows(uint8_t *u, int ldu, float *xs, int32_t *xz,
                           const float *x, int ldx, int rows, int k,
                           const float *cs)
{
	int kp = (k + 3) / 4 * 4;

	for (int i = 0; i < rows; i++) {
		const float *r = x + (size_t)i * ldx;
		uint8_t *o = u + (size_t)i * ldu;
		float lo = 0, hi = 0, inv;
		int32_t z;
		for (int kk = 0; kk < k; kk++) {
			float v = cs ? r[kk] * cs[kk] : r[kk];
			if (v < lo)
				lo = v;
			if (v > hi)
				hi = v;
		}
		emb_u8_row_params(&xs[i], &inv, &z, lo, hi);
		xz[i] = z;
		for (int kk = 0; kk < k; kk++) {
			float v = nearbyintf((cs ? r[kk] * cs[kk] : r[kk]) * inv) +
			          (float)z;
			v = v > 0 ? v : 0;      /* NaN -> 0 */
			v = v < 255 ? v : 255;
			o[kk] = (uint8_t)v;
		}
		for (int kk = k; kk < kp; kk++)
			o[kk] = 0;
	}
}

void emb_u8_quantize_rows(uint8_t *u, int ldu, float *xs, int32_t *xz,
                          const float *x, int ldx, int rows, int k)
{
	u8_rows(u, ldu, xs, xz, x, ldx, rows, k, NULL);
}

void emb_u8_quantize_rows_scaled(uint8_t *u, int ldu, float *xs, int32_t *xz,
                                 const float *x, int ldx, int rows, int k,
                                 const float *cs)
{
	u8_rows(u, ldu, xs, xz, x, ldx, rows, k, cs);
}

void emb_gemm_i8_scalar(float *y, int ldy, const uint8_t *u, int ldu,
                        const float *xs, const int32_t *xz,
                        const int8_t *wp, const float *ws,
                        const int32_t *wsum, const float *b,
                        int m, int n, int kp)
{
	for (int p = 0; p < (n + 15) / 16; p++) {
		const int8_t *pw = wp + (size_t)p * 16 * kp;
		int nc = n - 16 * p < 16 ? n - 16 * p : 16;
		for (int i = 0; i < m; i++) {
			const uint8_t *ui = u + (size_t)i * ldu;
			int32_t acc[16] = { 0 };
			for (int g = 0; g < kp / 4; g++) {
				const int8_t *w4 = pw + (size_t)g * 64;
				for (int c = 0; c < 16; c++)
					for (int t = 0; t < 4; t++)
						acc[c] += (int32_t)ui[4 * g + t] * w4[4 * c + t];
			}
			for (int c = 0; c < nc; c++) {
				int j = 16 * p + c;
				float sc = xs[i] * ws[j];
				float v = sc * (float)(acc[c] - xz[i] * wsum[j]);
				y[(size_t)i * ldy + j] = b ? v + b[j] : v;
			}
		}
	}
}
