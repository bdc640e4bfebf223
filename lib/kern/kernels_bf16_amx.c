/*
 * kernels_bf16_amx.c - the bf16 GEMM of bkernels.h on the AMX tile unit
 * (tdpbf16ps: a 16x16 fp32 tile += 16 rows of 32 bf16 times 16 pairs x
 * 16 columns), built with $(AMX_CFLAGS); without them, or where the CPU
 * or OS does not allow AMX (base/cpu.c), it says it is not available.
 *
 * The packed weights of bkernels.h are the B tile layout: a panel's pair
 * g is 64 bytes (the two bf16 of each of its 16 columns), so 16
 * consecutive pairs are one B tile with a 64-byte stride.  The
 * activations are rounded to bf16 once per block of 32 rows and KB k
 * (vcvtneps2bf16, the rounding of emb_f32_to_bf16_ftz) into a stack buffer
 * the A tiles are loaded from, zero past k up to the next multiple of
 * 32.  The tile blocking is kernels_i8_amx.c's (kern/amx.h): 32 rows x
 * 2 panels in four accumulator tiles; between k blocks the partial sums
 * wait in y (exact fp32 copies: continuing from them is the same
 * arithmetic), or in a stack buffer for a last panel narrower than 16.
 * The accumulators start from the bias (a tile loaded with row stride
 * 0: 16 copies of the panel's biases), or from zero without one, so a
 * finished 16-column tile is stored to y as it is, with no pass of its
 * own; a narrower last panel goes through a stack copy that writes only
 * its valid columns.  A k tail shorter than a tile takes a zero-padded
 * copy of the B piece.
 *
 * The sums are the tile unit's (bkernels.h: not the scalar formula's
 * bits: the bias comes first, not last), but each element's sequence of
 * tdpbf16ps steps depends only on k and its bias, so results do not
 * depend on the call's shape.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "base/cpu.h"
#include "kern/bkernels.h"

/* GCC spells the macros __AMX_TILE__, clang __AMXTILE__ */
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && \
    (defined(__AMX_BF16__) || defined(__AMXBF16__)) && \
    defined(__AVX512F__) && defined(__AVX512BF16__) && defined(__x86_64__)
#include <immintrin.h>
#include "kern/amx.h"

#define KB 512          /* k per block (a multiple of 32) */
#define MB 32           /* rows per block */

/* x[0..n) -> h[0..KB): bf16, 0 from n to the next multiple of 32 */
static void round_row(uint16_t *h, const float *x, int n)
{
	int i = 0, end = (n + 31) / 32 * 32;

	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256((__m256i *)(h + i),
		                    (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
	if (i < n) {
		__mmask16 mk = (__mmask16)((1u << (n - i)) - 1);
		_mm256_storeu_si256((__m256i *)(h + i), (__m256i)
		                    _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mk, x + i)));
		i += 16;
	}
	for (; i < end; i++)
		h[i] = 0;
}

/* rows of the fp32 tile acc (16 x 16, stride 16) -> y, nc columns */
static void store_rows(float *y, int ldy, const float *acc, int rows, int nc)
{
	__mmask16 mk = (__mmask16)((1u << nc) - 1);

	for (int r = 0; r < rows; r++)
		_mm512_mask_storeu_ps(y + (size_t)r * ldy, mk,
		                      _mm512_loadu_ps(acc + 16 * r));
}

/* the 16 biases of panel pp (of n columns) in place, or for a narrower
 * last panel copied to buf and zero past n */
static const float *bias_row(float *buf, const float *b, int pp, int n)
{
	int nc = n - 16 * pp;

	if (nc >= 16)
		return b + 16 * pp;
	_mm512_store_ps(buf, _mm512_maskz_loadu_ps((__mmask16)((1u << nc) - 1),
	                                           b + 16 * pp));
	return buf;
}

/* accumulator tile t (0..3) -> p, rows `stride` bytes apart (the
 * tile's own row count) */
static void store_tile(int t, void *p, size_t stride)
{
	switch (t) {
	case 0: _tile_stored(0, p, stride); break;
	case 1: _tile_stored(1, p, stride); break;
	case 2: _tile_stored(2, p, stride); break;
	default: _tile_stored(3, p, stride); break;
	}
}

/* the B tile of pairs [q, q + 16) of panel w (k2 / 2 pairs), or its
 * zero-padded copy in buf when fewer are left */
static const void *b_tile(void *buf, const uint16_t *w, int q, int npairs)
{
	if (npairs - q >= 16)
		return w + (size_t)q * 32;
	emb_amx_pad(buf, w + (size_t)q * 32, 64, npairs - q, 64);
	return buf;
}

// X (m,k) @ W (n,k)^T + b (n) -> y (m,n), W packed bf16
static void gemm_bf16_amx(float *y, int ldy, const float *x, int ldx,
                          const uint16_t *wb, const float *b, int m, int n,
                          int k)
{
	int k2 = (k + 1) / 2 * 2, npairs = k2 / 2, npan = (n + 15) / 16;
	uint16_t xr[MB * KB] __attribute__((aligned(64)));
	float acc[4][256] __attribute__((aligned(64)));
	float tail[MB * 16] __attribute__((aligned(64)));
	uint16_t bt[2][512] __attribute__((aligned(64)));
	float bb[2][16] __attribute__((aligned(64)));
	int cra = -1, crb = -1;

	for (int i0 = 0; i0 < m; i0 += MB) {
		int ra = m - i0 < 16 ? m - i0 : 16;
		int rb = m - i0 - ra < 16 ? m - i0 - ra : 16;
		if (ra != cra || rb != crb) {
			emb_amx_config(ra, rb);
			cra = ra;
			crb = rb;
		}
		for (int k0 = 0; k0 < k; k0 += KB) {
			int kx = k - k0 < KB ? k - k0 : KB;
			int q0 = k0 / 2, nch = (kx + 31) / 32;
			int first = k0 == 0, last = k0 + KB >= k;
			for (int r = 0; r < ra + rb; r++)
				round_row(xr + (size_t)r * KB,
				          x + (size_t)(i0 + r) * ldx + k0, kx);
			for (int p = 0; p < npan; p += 2) {
				int two = p + 1 < npan;
				const uint16_t *w0 = wb + (size_t)p * 16 * k2;
				const uint16_t *w1 = w0 + (size_t)16 * k2;
				/* where the partial sums of panels p and p + 1 wait */
				float *part[2];
				size_t ldp[2];
				for (int t = 0; t < 2; t++) {
					int pp = p + t;
					int full = pp < npan && n - 16 * pp >= 16;
					part[t] = full ? y + (size_t)i0 * ldy + 16 * pp
					               : tail;
					ldp[t] = full ? (size_t)ldy * 4 : 64;
				}
				if (first && b) {
					/* the sums start from the bias: a tile whose 16
					 * rows are the panel's 16 biases (stride 0) */
					const float *b0 = bias_row(bb[0], b, p, n);
					_tile_loadd(0, b0, 0);
					_tile_loadd(2, b0, 0);
					if (two) {
						const float *b1 = bias_row(bb[1], b, p + 1, n);
						_tile_loadd(1, b1, 0);
						_tile_loadd(3, b1, 0);
					}
				} else if (first) {
					_tile_zero(0);
					_tile_zero(1);
					_tile_zero(2);
					_tile_zero(3);
				} else {
					_tile_loadd(0, part[0], ldp[0]);
					if (rb)
						_tile_loadd(2, part[0] + 16 * ldp[0] / 4, ldp[0]);
					if (two) {
						_tile_loadd(1, part[1], ldp[1]);
						if (rb)
							_tile_loadd(3, part[1] + 16 * ldp[1] / 4,
							            ldp[1]);
					}
				}
				for (int c = 0; c < nch; c++) {
					int q = q0 + 16 * c;
					_tile_loadd(4, xr + 32 * c, KB * 2);
					_tile_loadd(6, b_tile(bt[0], w0, q, npairs), 64);
					_tile_dpbf16ps(0, 4, 6);
					if (two) {
						_tile_loadd(7, b_tile(bt[1], w1, q, npairs), 64);
						_tile_dpbf16ps(1, 4, 7);
					}
					if (rb) {
						_tile_loadd(5, xr + 16 * KB + 32 * c, KB * 2);
						_tile_dpbf16ps(2, 5, 6);
						if (two)
							_tile_dpbf16ps(3, 5, 7);
					}
				}
				if (!last) {
					_tile_stored(0, part[0], ldp[0]);
					if (rb)
						_tile_stored(2, part[0] + 16 * ldp[0] / 4, ldp[0]);
					if (two) {
						_tile_stored(1, part[1], ldp[1]);
						if (rb)
							_tile_stored(3, part[1] + 16 * ldp[1] / 4,
							             ldp[1]);
					}
					continue;
				}
				for (int t = 0; t < 4; t++) {
					int pp, r0, rows, nc;
					float *yt;
					if (!emb_amx_tile(t, p, npan, n, ra, rb, &pp, &r0,
					                  &rows, &nc))
						continue;
					yt = y + (size_t)(i0 + r0) * ldy + 16 * pp;
					/* a whole-width tile goes to y as it is, a
					 * narrower one through acc */
					if (nc == 16) {
						store_tile(t, yt, (size_t)ldy * 4);
						continue;
					}
					store_tile(t, acc[t], 64);
					store_rows(yt, ldy, acc[t], rows, nc);
				}
			}
		}
	}
	_tile_release();
}

emb_gemm_bf16_fn emb_gemm_bf16_amx(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AMXBF16) && (f & EMB_CPU_AVX512BF16) ?
	       gemm_bf16_amx : NULL;
}
#else
emb_gemm_bf16_fn emb_gemm_bf16_amx(void)
{
	return NULL;
}
#endif
