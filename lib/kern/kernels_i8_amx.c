/*
 * kernels_i8_amx.c - the int8 GEMM of qkernels.h on the AMX tile unit
 * (tdpbusd: a 16x16 int32 tile += 16 rows of u8 x 64 k times 64 k x 16
 * columns of s8), built with $(AMX_CFLAGS); without them, or where the
 * CPU or OS does not allow AMX (base/cpu.c), it says it is not
 * available.
 *
 * The packed weights of qkernels.h are already the B tile layout: a
 * panel's group g is 64 bytes, the 4 k bytes of each of its 16 columns,
 * so 16 consecutive groups (64 k) are one B tile with a 64-byte stride,
 * and the weights need no packing of their own.  The A tiles are 16
 * rows of u, 64 bytes each, read in place with stride ldu.
 *
 * Blocking: 32 rows (two A tiles) x 2 panels (two B tiles) -> four
 * accumulator tiles (tmm0-3) that stay in the unit for the whole k loop;
 * per 64 k, 4 tile loads feed 4 tdpbusd.  A row block of fewer than 32
 * rows gets a tile configuration with that many rows (loaded between
 * row blocks: ldtilecfg zeroes the tiles).  The k tail (kp not a
 * multiple of 64) goes through zero-padded copies of its A and B pieces
 * on the stack, so that no load reads past u's rows or the panel.
 *
 * The sums are exact int32 (as vpdpbusd's), and the float epilogue
 * (zero point, scale, bias) is the scalar kernel's sequence of
 * operations, on the accumulators stored to the stack: the results are
 * emb_gemm_i8_scalar's, bit for bit.  Each call loads its tile
 * configuration (it is per thread) and releases the tiles when done.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "base/cpu.h"
#include "kern/qkernels.h"

/* GCC spells the macros __AMX_TILE__, clang __AMXTILE__ */
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && \
    (defined(__AMX_INT8__) || defined(__AMXINT8__)) && \
    defined(__AVX512F__) && defined(__AVX512BW__) && defined(__x86_64__)
#include <immintrin.h>
#include "kern/amx.h"

/* rows [0,rows) of the int32 tile acc (16 x 16, stride 16) -> y, the
 * scalar epilogue: (xs[i] * ws[j]) * (float)(acc - xz[i] * wsum[j]) + b[j];
 * nc valid columns */
static void epilogue(float *y, int ldy, const int32_t *acc, int rows,
                     const float *xs, const int32_t *xz, const float *ws,
                     const int32_t *wsum, const float *b, int nc)
{
	__mmask16 mk = (__mmask16)((1u << nc) - 1);
	__m512 wsv = _mm512_maskz_loadu_ps(mk, ws);
	__m512i sumv = _mm512_maskz_loadu_epi32(mk, wsum);
	__m512 bv = b ? _mm512_maskz_loadu_ps(mk, b) : _mm512_setzero_ps();

	for (int r = 0; r < rows; r++) {
		__m512i d = _mm512_sub_epi32(_mm512_loadu_si512(acc + 16 * r),
			_mm512_mullo_epi32(_mm512_set1_epi32(xz[r]), sumv));
		__m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(xs[r]), wsv),
		                         _mm512_cvtepi32_ps(d));
		if (b)
			v = _mm512_add_ps(v, bv);
		_mm512_mask_storeu_ps(y + (size_t)r * ldy, mk, v);
	}
}

static void gemm_i8_amx(float *y, int ldy, const uint8_t *u, int ldu,
                        const float *xs, const int32_t *xz,
                        const int8_t *wp, const float *ws,
                        const int32_t *wsum, const float *b,
                        int m, int n, int kp)
{
	int np = (n + 15) / 16, kc = kp / 64, kt = kp % 64;
	size_t ps = (size_t)16 * kp;    /* bytes per panel */
	int32_t acc[4][256] __attribute__((aligned(64)));
	uint8_t at[2][1024] __attribute__((aligned(64)));
	uint8_t bt[2][1024] __attribute__((aligned(64)));
	int cra = -1, crb = -1;

	for (int i0 = 0; i0 < m; i0 += 32) {
		int ra = m - i0 < 16 ? m - i0 : 16;
		int rb = m - i0 - ra < 16 ? m - i0 - ra : 16;
		const uint8_t *u0 = u + (size_t)i0 * ldu;
		const uint8_t *u1 = u0 + (size_t)16 * ldu;
		if (ra != cra || rb != crb) {
			emb_amx_config(ra, rb);
			cra = ra;
			crb = rb;
		}
		if (kt) {
			emb_amx_pad(at[0], u0 + 64 * (size_t)kc, (size_t)ldu, ra, kt);
			emb_amx_pad(at[1], u1 + 64 * (size_t)kc, (size_t)ldu, rb, kt);
		}
		for (int p = 0; p < np; p += 2) {
			int two = p + 1 < np;
			const int8_t *w0 = wp + (size_t)p * ps, *w1 = w0 + ps;
			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			for (int g = 0; g < kc; g++) {
				_tile_loadd(4, u0 + 64 * (size_t)g, ldu);
				_tile_loadd(6, w0 + 1024 * (size_t)g, 64);
				_tile_dpbusd(0, 4, 6);
				if (two) {
					_tile_loadd(7, w1 + 1024 * (size_t)g, 64);
					_tile_dpbusd(1, 4, 7);
				}
				if (rb) {
					_tile_loadd(5, u1 + 64 * (size_t)g, ldu);
					_tile_dpbusd(2, 5, 6);
					if (two)
						_tile_dpbusd(3, 5, 7);
				}
			}
			if (kt) {
				/* the last kt / 4 groups of the panels, zero padded
				 * (the A tails were copied above) */
				emb_amx_pad(bt[0], (const uint8_t *)w0 + 1024 * (size_t)kc,
				         64, kt / 4, 64);
				_tile_loadd(4, at[0], 64);
				_tile_loadd(6, bt[0], 64);
				_tile_dpbusd(0, 4, 6);
				if (two) {
					emb_amx_pad(bt[1], (const uint8_t *)w1 +
					         1024 * (size_t)kc, 64, kt / 4, 64);
					_tile_loadd(7, bt[1], 64);
					_tile_dpbusd(1, 4, 7);
				}
				if (rb) {
					_tile_loadd(5, at[1], 64);
					_tile_dpbusd(2, 5, 6);
					if (two)
						_tile_dpbusd(3, 5, 7);
				}
			}
			emb_amx_store4(acc);
			for (int t = 0; t < 4; t++) {
				int pp, r0, rows, nc;
				if (!emb_amx_tile(t, p, np, n, ra, rb, &pp, &r0, &rows,
				                  &nc))
					continue;
				epilogue(y + (size_t)(i0 + r0) * ldy + 16 * pp, ldy,
				         acc[t], rows, xs + i0 + r0, xz + i0 + r0,
				         ws + 16 * pp, wsum + 16 * pp,
				         b ? b + 16 * pp : NULL, nc);
			}
		}
	}
	_tile_release();
}

emb_gemm_i8_fn emb_gemm_i8_amx(void)
{
	unsigned f = emb_cpu_features();

	return (f & EMB_CPU_AMXINT8) && (f & EMB_CPU_AVX512) ? gemm_i8_amx
	                                                     : NULL;
}
#else
emb_gemm_i8_fn emb_gemm_i8_amx(void)
{
	return NULL;
}
#endif
