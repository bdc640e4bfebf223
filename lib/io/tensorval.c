/*
 * tensorval.c - the values of a safetensors tensor (io.h): converted to
 * float32 from F32, F16, BF16 and F64, and checked to be finite (models
 * refuse a NaN or an infinity at load).  Little-endian in the file,
 * read byte by byte where the host order could differ.
 */
#include <stdint.h>
#include <string.h>

#include "base/half.h"
#include "io/io.h"
#include "io/safetensors-internal.h"

static inline uint16_t ld16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/*
 * Non-finite weights: a NaN or infinity in a checkpoint (a flipped bit,
 * a diverged training run) either spreads through every vector or, worse,
 * is absorbed by a clamp or a max and leaves finite but wrong ones, so
 * models refuse them at load.  Blocks of FINITE_BLK elements are
 * OR-reduced (block_bad, in vectors); only a bad block is searched for
 * the element.
 */
static inline uint32_t ld32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#define FINITE_BLK 4096     /* elements OR-reduced at a time */

/* 1 when one of the e elements of W bytes at p has all its exponent
 * bits EX set, one element at a time (a block's tail; whole blocks
 * where the host has no vector types below) */
static int span_bad(const unsigned char *p, size_t e, size_t w, uint32_t ex)
{
	unsigned bad = 0;

	for (size_t i = 0; i < e; i++)
		bad |= ((w == 4 ? ld32(p + 4 * i) : ld16(p + 2 * i)) & ex) == ex;
	return bad != 0;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * 1 when one of the FINITE_BLK elements of W bytes at p has all its
 * exponent bits EX set: 16 bytes at a time in the compiler's vector
 * types (SSE2 on any x86-64, NEON on arm64; the host's order is the
 * file's), per lane t = ~u & ex, which is 0 exactly for such an element
 * and otherwise below the lane's sign bit, so (t - 1) & ~t sets that bit
 * only then.  Loads go through memcpy: p need not be aligned.
 */
typedef uint32_t emb_v4u32 __attribute__((vector_size(16)));
typedef uint16_t emb_v8u16 __attribute__((vector_size(16)));

static int block_bad(const unsigned char *p, size_t w, uint32_t ex)
{
	if (w == 4) {
		emb_v4u32 acc = { 0 }, exv = { ex, ex, ex, ex }, v, t;
		for (size_t i = 0; i < FINITE_BLK * 4; i += 16) {
			memcpy(&v, p + i, 16);
			t = ~v & exv;
			acc |= (t - 1) & ~t;
		}
		return ((acc[0] | acc[1] | acc[2] | acc[3]) >> 31) != 0;
	} else {
		uint16_t e16 = (uint16_t)ex, bits = 0;
		emb_v8u16 acc = { 0 }, v, t, exv = { e16, e16, e16, e16, e16,
		                                      e16, e16, e16 };
		for (size_t i = 0; i < FINITE_BLK * 2; i += 16) {
			memcpy(&v, p + i, 16);
			t = ~v & exv;
			acc |= (t - 1) & ~t;
		}
		for (int l = 0; l < 8; l++)
			bits |= acc[l];
		return (bits >> 15) != 0;
	}
}
#else
static int block_bad(const unsigned char *p, size_t w, uint32_t ex)
{
	return span_bad(p, FINITE_BLK, w, ex);
}
#endif

/* index of the first element of p (n elements of W = 2 or 4 bytes) whose
 * exponent bits EX are all ones, n if none; *is_nan: that one is a NaN */
static size_t first_nonfinite(const unsigned char *p, size_t n, size_t w,
                              uint32_t ex, int *is_nan)
{
	const size_t blk = FINITE_BLK;
	uint32_t mag = w == 4 ? 0x7fffffffu : 0x7fffu;

	*is_nan = 0;
	for (size_t b = 0; b < n; b += blk) {
		size_t e = n - b < blk ? n - b : blk;
		int bad = e == blk ? block_bad(p + w * b, w, ex)
		                   : span_bad(p + w * b, e, w, ex);
		if (!bad)
			continue;
		for (size_t i = b; i < b + e; i++) {
			uint32_t u = w == 4 ? ld32(p + 4 * i) : ld16(p + 2 * i);
			if ((u & ex) == ex) {
				*is_nan = (u & mag) != ex;
				return i;
			}
		}
	}
	return n;
}

/* index of the first non-finite element among elements [from, from + n)
 * of float tensor t, from + n if none (and for non-float dtypes); *is_nan:
 * that one is a NaN */
static size_t first_bad(const emb_tensor *t, size_t from, size_t n,
                        int *is_nan)
{
	const unsigned char *p = t->data;
	size_t i;

	*is_nan = 0;
	switch (t->dtype) {
	case EMB_DT_F32:
		return from + first_nonfinite(p + 4 * from, n, 4, 0x7f800000u,
		                              is_nan);
	case EMB_DT_F16:
		return from + first_nonfinite(p + 2 * from, n, 2, 0x7c00u, is_nan);
	case EMB_DT_BF16:
		return from + first_nonfinite(p + 2 * from, n, 2, 0x7f80u, is_nan);
	case EMB_DT_F64:
		for (i = from; i < from + n; i++) {
			const unsigned char *q = p + 8 * i;
			uint32_t hi = ld32(q + 4), lo = ld32(q);
			if ((hi & 0x7ff00000u) == 0x7ff00000u) {
				*is_nan = (hi & 0xfffffu) || lo;
				return i;
			}
		}
		return i;
	default:
		return from + n;
	}
}

int emb_tensor_check_finite(const emb_tensor *t, emb_err *err)
{
	char nb[132];
	size_t n = (size_t)t->numel;
	int is_nan;
	size_t i = first_bad(t, 0, n, &is_nan);

	if (i < n)
		return emb_err_set(err, "%s: tensor '%s': element %zu is %s "
		                   "(weights must be finite)",
		                   t->file ? t->file : "safetensors",
		                   emb_st_shown(nb, t->name ? t->name : ""), i,
		                   is_nan ? "NaN" : "infinite");
	return 0;
}

int emb_tensor_check_row(const emb_tensor *t, int64_t row, emb_err *err)
{
	char nb[132];
	size_t cols = t->ndim == 2 ? (size_t)t->shape[1] : 1, i;
	int is_nan;

	i = first_bad(t, (size_t)row * cols, cols, &is_nan) - (size_t)row * cols;
	if (i < cols)
		return emb_err_set(err, "%s: tensor '%s': row %lld: element %zu "
		                   "is %s (weights must be finite)",
		                   t->file ? t->file : "safetensors",
		                   emb_st_shown(nb, t->name ? t->name : ""),
		                   (long long)row, i, is_nan ? "NaN" : "infinite");
	return 0;
}

int emb_safetensors_check_finite(const emb_safetensors *st,
                                 const emb_tensor *skip, emb_err *err)
{
	for (size_t i = 0; i < emb_safetensors_count(st); i++)
		if (emb_safetensors_at(st, i) != skip &&
		    emb_tensor_check_finite(emb_safetensors_at(st, i), err) < 0)
			return -1;
	return 0;
}

int emb_tensor_to_f32(float *out, const emb_tensor *t, emb_err *err)
{
	const unsigned char *p = t->data;
	size_t n = (size_t)t->numel, i;

	switch (t->dtype) {
	case EMB_DT_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (n)
			memcpy(out, p, n * 4);
#else
		for (i = 0; i < n; i++) {
			uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			             (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
			memcpy(&out[i], &u, 4);
		}
#endif
		return 0;
	case EMB_DT_F16:
		for (i = 0; i < n; i++)
			out[i] = emb_f16_to_f32(ld16(p + 2 * i));
		return 0;
	case EMB_DT_BF16:
		for (i = 0; i < n; i++) {
			uint32_t u = (uint32_t)ld16(p + 2 * i) << 16;
			memcpy(&out[i], &u, 4);
		}
		return 0;
	case EMB_DT_F64:
		for (i = 0; i < n; i++) {
			uint64_t u = 0;
			double d;
			for (int k = 0; k < 8; k++)
				u |= (uint64_t)p[8 * i + k] << (8 * k);
			memcpy(&d, &u, 8);
			out[i] = (float)d;
		}
		return 0;
	default: {
		char nb[132];
		return emb_err_set(err, "%s: tensor '%s': dtype %s is not a float type",
		                   t->file ? t->file : "safetensors",
		                   emb_st_shown(nb, t->name ? t->name : ""),
		                   emb_dtype_name(t->dtype) ? emb_dtype_name(t->dtype) : "?");
	}
	}
}
