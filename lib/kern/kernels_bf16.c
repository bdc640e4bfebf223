/*
 * kernels_bf16.c - bf16 weight packing and the scalar bf16 GEMM, the
 * portable path and the test oracle of the SIMD ones (bkernels.h).
 */
#include "kern/bkernels.h"

size_t emb_bf16_pack_size(int n, int k)
{
	size_t np = ((size_t)n + 15) / 16, k2 = ((size_t)k + 1) / 2 * 2;

	if (n <= 0 || k <= 0 || k2 > SIZE_MAX / 16 / sizeof(uint16_t) / np)
		return 0;
	return np * 16 * k2;
}

// W (n,k) row-major -> panels [n/16][k2/2][16][2] of bf16, zero padded
void emb_bf16_pack(uint16_t *wb, const float *w, int n, int k)
{
	emb_bf16_pack_rows(wb, w, k, n, k);
}

/* W (n,k) with W[j][kk] = w[j * sj + kk * sk] -> panels
 * [n/16][k2/2][16][2] of bf16, zero padded */
static void pack_strided(uint16_t *wb, const float *w, size_t sj, size_t sk,
                         int n, int k)
{
	int k2 = (k + 1) / 2 * 2;

	for (int p = 0; p < (n + 15) / 16; p++)
		for (int g = 0; g < k2 / 2; g++)
			for (int c = 0; c < 16; c++)
				for (int t = 0; t < 2; t++) {
					int j = 16 * p + c, kk = 2 * g + t;
					*wb++ = j < n && kk < k ? emb_f32_to_bf16_ftz(
					        w[(size_t)j * sj + (size_t)kk * sk]) : 0;
				}
}

// W (n,k), rows ldw apart -> panels [n/16][k2/2][16][2], zero padded
void emb_bf16_pack_rows(uint16_t *wb, const float *w, int ldw, int n, int k)
{
	pack_strided(wb, w, (size_t)ldw, 1, n, k);
}

// W = X^T, X (k,n) rows ldx apart -> panels [n/16][k2/2][16][2]
void emb_bf16_pack_cols(uint16_t *wb, const float *x, int ldx, int n, int k)
{
	pack_strided(wb, x, 1, (size_t)ldx, n, k);
}

/* x[kk] rounded to bf16, as fp32; 0 past k */
static float xr(const float *x, int kk, int k)
{
	return kk < k ? emb_bf16_to_f32(emb_f32_to_bf16_ftz(x[kk])) : 0.0f;
}

// X (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16
void emb_gemm_bf16_scalar(float *y, int ldy, const float *x, int ldx,
                          const uint16_t *wb, const float *b, int m, int n,
                          int k)
{
	int k2 = (k + 1) / 2 * 2;

	for (int i = 0; i < m; i++) {
		const float *xi = x + (size_t)i * ldx;
		for (int p = 0; p < (n + 15) / 16; p++) {
			const uint16_t *w = wb + (size_t)p * 16 * k2;
			int nc = n - 16 * p < 16 ? n - 16 * p : 16;
			float acc[16] = { 0 };
			for (int g = 0; g < k2 / 2; g++) {
				float x0 = xr(xi, 2 * g, k), x1 = xr(xi, 2 * g + 1, k);
				const uint16_t *wg = w + (size_t)g * 32;
				/* odd element first, then even (vdpbf16ps' order);
				 * the products are exact (bkernels.h) */
				for (int c = 0; c < 16; c++) {
					acc[c] = acc[c] + x1 * emb_bf16_to_f32(wg[2 * c + 1]);
					acc[c] = acc[c] + x0 * emb_bf16_to_f32(wg[2 * c]);
				}
			}
			for (int c = 0; c < nc; c++) {
				int j = 16 * p + c;
				y[(size_t)i * ldy + j] = b ? acc[c] + b[j] : acc[c];
			}
		}
	}
}
