/*
 * kernels.h - the compute kernels behind the transformer forward.
 *
 * One table of function pointers, float and int8 alike, chosen at start
 * by CPU features (base/cpu.h) or the EMB_ISA environment variable
 * (lib/kern/dispatch.c).  The float kernels come one file per
 * instruction set: "scalar" (portable C, also the test oracle),
 * kernels_avx2.c (AVX2+FMA), kernels_avx512.c (AVX-512 F/BW/VL/DQ); the
 * int8 ones (qkernels.h) likewise: kernels_i8.c (scalar),
 * kernels_i8_avx2.c (AVX-VNNI, plain AVX2 and the AVX2 row quantizer),
 * kernels_i8_avx512.c (AVX-512 VNNI and its row quantizer),
 * kernels_i8_amx.c (AMX-INT8 tiles); the bf16 ones (bkernels.h) one
 * file each for AVX2, AVX-512 BF16 and AMX-BF16.  Kernels
 * never allocate memory and never fail; they work on caller-provided
 * buffers.
 *
 * Determinism: every output element of every kernel is computed by the
 * same sequence of operations whatever the shape of the call it is part
 * of (a row of a GEMM does not depend on the other rows, a column not on
 * the panel it sits in).  Splitting a GEMM over threads or batching
 * sequences together therefore never changes results.
 *
 * Packed GEMM weights: W (N,K) row-major is stored as ceil(N/16) panels
 * of 16 output columns; panel p holds, for k = 0..K-1, the 16 values
 * W[16p+0..16p+15][k] (zero past N).  The same layout serves every ISA.
 */
#ifndef EMB_KERNELS_H
#define EMB_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "kern/qkernels.h"
#include "kern/bkernels.h"

#define EMB_PANEL 16

/* floats of the packed form of W (n,k); 0 on overflow */
size_t emb_pack_size(int n, int k);
/* W (n,k) row-major -> wp (packed, emb_pack_size(n,k) floats) */
void emb_pack_weights(float *wp, const float *w, int n, int k);

/* activations gemm_act applies in its epilogue */
enum {
	EMB_KACT_NONE = 0,
	EMB_KACT_GELU,          /* as the gelu kernel (erf) */
	EMB_KACT_GELU_TANH,     /* as the gelu_tanh kernel */
	EMB_KACT_RELU,          /* as the relu kernel */
};

typedef struct emb_kernels {
	/* the table: "scalar", "avx2", "avxvnni", "avx512", "vnni" or "amx" */
	const char *name;

	/*
	 * y (m,n) = x (m,k) @ W (n,k)^T + b (n).  wp: W packed (see above),
	 * starting at a panel boundary; b may be NULL.  ldy, ldx: row strides.
	 * Per element: acc = 0; acc += x[i][kk] * W[j][kk] for kk = 0..k-1 in
	 * order (fused multiply-add in the SIMD variants); y = acc + b[j].
	 */
	void (*gemm)(float *y, int ldy, const float *x, int ldx,
	             const float *wp, const float *b, int m, int n, int k);
	/*
	 * gemm, then act (EMB_KACT_*) on every output element while the tile
	 * is still in registers: bit for bit what gemm followed by this
	 * variant's gelu / gelu_tanh / relu over each row gives, without the
	 * second pass over y.  Unknown act: as EMB_KACT_NONE.
	 */
	void (*gemm_act)(float *y, int ldy, const float *x, int ldx,
	                 const float *wp, const float *b, int m, int n, int k,
	                 int act);

	/* y (n) = (x - mean) / sqrt(var + eps) * g + b, one row; y may be x */
	void (*layernorm)(float *y, const float *x, const float *g,
	                  const float *b, int n, float eps);
	/* y (n) = g * (x / sqrt(mean(x^2) + eps)), one row, float32 as
	 * torch; y may be x.  Gemma's (1 + w): g holds 1 + w (added once at
	 * load).  Every version sums the squares in emb_rmsnorm_sumsq's
	 * order and scales each element as emb_rmsnorm_scalar does, so the
	 * bits do not depend on the instruction set */
	void (*rmsnorm)(float *y, const float *x, const float *g, int n,
	                float eps);
	/* x (n) in place: 0.5 x (1 + erf(x / sqrt 2)) */
	void (*gelu)(float *x, int n);
	/* x (n) in place: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
	void (*gelu_tanh)(float *x, int n);
	/* x (n) in place: max(x, 0) */
	void (*relu)(float *x, int n);
	/* y (n) = x * (1 / (1 + exp(-x))), then times g (n) when g is not
	 * NULL: SiLU, and SwiGLU's activated half times the other; y may
	 * be x */
	void (*silu)(float *y, const float *x, const float *g, int n);
	/*
	 * x (rows, n, finite; row stride ld >= n) in place, each row on
	 * its own: e = exp((x - max(x)) * scale) by the quintic of the
	 * formula at EMB_EXP2_C0 below (7.5e-8 relative, and the rounding
	 * of its argument: 1.2e-7 times |x - max(x)| scale log2(e)),
	 * not normalized; inv (rows) = 1 / the row's sum of e (summed in
	 * emb_rmsnorm_sumsq's order), so that every table gives the
	 * scalar one's bits, for a row alone or in a block; x[n..ld) of a
	 * row is not touched.  scale > 0.  The softmax of fp32 attention:
	 * the caller scales P V's rows by inv (one multiply per context
	 * value instead of one per score).  Rows come in blocks so that the
	 * vector versions can overlap one row's reductions with the next
	 */
	void (*softmax)(float *x, int ld, int rows, int n, float scale,
	                float *inv);
	/*
	 * softmax's contract with the cubic of the formula (7.5e-5
	 * relative): the softmax of attention in the bf16 and int8 modes,
	 * whose P the bf16 GEMM rounds to 8 bits next (2^-9 relative)
	 */
	void (*softmax_bf16)(float *x, int ld, int rows, int n, float scale,
	                     float *inv);
	/* wp = W (n,k), row stride ldw >= k, packed as emb_pack_weights
	 * packs it: the same floats, bit for bit (run-time packing: the
	 * model's weights at load, attention's K) */
	void (*pack)(float *wp, const float *w, int ldw, int n, int k);
	/* y (n) += x (n) */
	void (*add)(float *y, const float *x, int n);
	/* a (n) . b (n) */
	float (*dot)(const float *a, const float *b, int n);
	/* y (n) += a * x (n) */
	void (*axpy)(float *y, float a, const float *x, int n);
	/* y (n) = x (n IEEE halves), widened exactly (base/half.h); a NaN
	 * stays a NaN (the vector versions may quiet it) */
	void (*f16_to_f32)(float *y, const uint16_t *x, int n);
	/* y (n) += x (n IEEE halves) widened exactly: one float add per
	 * element, so that a sum of rows added in turn has the same bits in
	 * every table (the static model's mean) */
	void (*add_f16)(float *y, const uint16_t *x, int n);

	/* ---- vector search kernels (lib/st/search.c) ---- */
	/*
	 * Hamming distances of the query bits qw (w words) to the documents
	 * of np panels pw (np, w, 8): panel p holds, for word i, the 8
	 * documents' words at pw[(p * w + i) * 8 + c].
	 * d (np * 8): d[8p + c] = sum over i of popcount(pw[(p*w+i)*8+c] ^ qw[i]).
	 */
	void (*hamming8)(int32_t *d, const uint64_t *pw, const uint64_t *qw,
	                 int w, size_t np);
	/*
	 * y (4) = x[c] (n, element i at x[c][i * inc]) . q (n), c = 0..3:
	 * acc = 0; acc += q[i] * x[c][i * inc] for i = 0..n-1 in order, as gemm
	 * computes an element (fused multiply-add in the SIMD variants), so
	 * that a rescored score equals the GEMM's bit for bit.
	 */
	void (*dot4)(float *y, const float *q, const float *const *x,
	             size_t inc, int n);
	/*
	 * The first i in [0, n) whose x = row[i] * inv[i] (row[i] when inv is
	 * NULL; one float multiply, as the caller computes it) is >= bar or
	 * not finite (infinite or NaN); n when there is none.  The scan of a
	 * full top-k heap: only such a score can enter (or needs a second look).
	 */
	int (*find_ge)(const float *row, const float *inv, int n, float bar);
	/* ---- end of the vector search kernels ---- */

	/* int8 (qkernels.h), set in the tables emb_kernels_get returns
	 * (NULL in the float-only variants below): the W8A8 GEMM, the
	 * activation row quantizer to pair with it (same results in every
	 * version), and the GEMM's name: "scalar", "avx2", "avxvnni",
	 * "vnni" or "amx" */
	emb_gemm_i8_fn gemm_i8;
	emb_u8_quant_fn u8_quantize;
	emb_u8_quant_scaled_fn u8_quantize_scaled;  /* smoothed (x * cs) */
	/* the weights' int8 rounding at load: emb_i8_quantize_rows' bytes
	 * and scales (AVX-512 in the tables from avx512 up) */
	emb_i8_quant_fn i8_quantize_rows;
	const char *i8_name;

	/* bf16 compute (bkernels.h), set like the int8 members: the bf16
	 * GEMM (the same bits in every version but AMX's, whose sums are
	 * the tile unit's) and its name: "scalar", "avx2", "avx512" (FMA on
	 * the widened pairs), "avx512bf16" or "amx" */
	emb_gemm_bf16_fn gemm_bf16;
	const char *bf16_name;
	/* the packing of operands made at run time for it (attention's K
	 * and V; bkernels.h): the same bits in every version */
	emb_bf16_pack_rows_fn bf16_pack_rows;
	emb_bf16_pack_cols_fn bf16_pack_cols;
	/* 1: the bf16 and int8 modes run attention's two GEMMs through
	 * gemm_bf16 where it outruns the fp32 GEMM: the AMX GEMM, or the
	 * AVX-512 BF16 one on a CPU with EMB_CPU_BF16_FAST (base/cpu.h); 0
	 * elsewhere (fp32 attention: a bf16 GEMM on widened pairs is no
	 * faster than the fp32 one, and rounding its operands costs) */
	int bf16_attn;
} emb_kernels;

/* the float variants (int8 members NULL); the SIMD ones exist only when
 * compiled in */
extern const emb_kernels emb_kernels_scalar;
#ifdef EMB_HAVE_AVX2
extern const emb_kernels emb_kernels_avx2;
#endif
#ifdef EMB_HAVE_AVX512
extern const emb_kernels emb_kernels_avx512;
/* the same but for the fp32 GEMMs (gemm, gemm_act): chunks of up to
 * 1536 values of k, each group of panels' piece of W streamed from L2,
 * against 192 with the piece kept in L1 (kernels_avx512.c); the same
 * bits.  The AVX-512 tables take it on AMD's cores (EMB_CPU_AMD) */
extern const emb_kernels emb_kernels_avx512_long;
#endif

/*
 * The table for ISA when it is compiled in and this CPU and OS support
 * it, else NULL (borrowed, static):
 *   "scalar"   scalar float, scalar int8 (the oracle)
 *   "avx2"     AVX2 float, AVX2 (int16) int8 GEMM, AVX2 row quantizer
 *   "avxvnni"  AVX2 float, AVX-VNNI int8 GEMM
 *   "avx512"   AVX-512 float, AVX2 int8 GEMM, AVX-512 row quantizer
 *   "vnni"     AVX-512 float, AVX-512 VNNI int8 GEMM
 *   "amx"      AVX-512 float, AMX-INT8 int8 GEMM, AMX-BF16 bf16 GEMM
 *              (where the CPU has AMX and the OS grants the tile state)
 * The bf16 GEMM: scalar in "scalar", AVX2 in "avx2" and "avxvnni", and
 * in "avx512" and "vnni" AVX-512 BF16 where the CPU runs vdpbf16ps at
 * its FMA rate (EMB_CPU_BF16_FAST), else the AVX-512 float variant's
 * own (emb_kernels_avx512.gemm_bf16: the pairs widened to fp32 and
 * multiplied by FMA on the fp32 GEMM's tiles; twice the AVX-512 BF16
 * GEMM's speed on Intel's cores, where vdpbf16ps runs at half the FMA
 * rate).
 */
const emb_kernels *emb_kernels_get(const char *isa);
/*
 * The best supported table (in the order amx, vnni, avx512, avxvnni,
 * avx2, scalar), or the one named by $EMB_ISA (error when unknown or
 * unsupported; for amx the error says why: CPU, OS or build).  *out
 * borrowed (static).
 */
struct emb_err;
int emb_kernels_select(const emb_kernels **out, struct emb_err *err);

/* the sum of x (n)'s squares in the one order every RMSNorm uses (16
 * partial sums, element i into sum i mod 16, folded i + i+8, i + i+4,
 * i + i+2, i + i+1) */
float emb_rmsnorm_sumsq(const float *x, int n);
/*
 * The exponential of softmax and softmax_bf16, the one formula of every
 * version: with a = scale log2(e) and m = max(x), t = max((x - m) a,
 * -125) (the difference first: the max's t is exactly 0 and no t is
 * above 0, whatever the scores' magnitude); n = t rounded to
 * nearest even, f = t - n (exact), and e = 2^n p(f), p evaluated from
 * its highest coefficient down, each step a fused multiply-add, and the
 * scaling exact (e stays normal): softmax_bf16's p the cubic C3..C0, a
 * fit of 2^f on [-1/2, 1/2] to 7.5e-5 relative; softmax's the quintic
 * F5..F0, to 7.5e-8
 */
#define EMB_EXP2_C0 9.999280572e-01f
#define EMB_EXP2_C1 6.932609677e-01f
#define EMB_EXP2_C2 2.426111549e-01f
#define EMB_EXP2_C3 5.517166108e-02f
#define EMB_EXP2_F0 1.000000119e+00f
#define EMB_EXP2_F1 6.931469440e-01f
#define EMB_EXP2_F2 2.402212024e-01f
#define EMB_EXP2_F3 5.550713465e-02f
#define EMB_EXP2_F4 9.675541893e-03f
#define EMB_EXP2_F5 1.327646896e-03f
#define EMB_LOG2E_F 1.44269504088896341f
/* the portable RMSNorm (the scalar table's rmsnorm, the oracle) */
void emb_rmsnorm_scalar(float *y, const float *x, const float *g, int n,
                        float eps);

/* the table's in-place activation for ACT (EMB_KACT_*, what gemm_act
 * fuses): the one map from EMB_KACT_* to the kernels; NULL for
 * EMB_KACT_NONE or an unknown value */
typedef void (*emb_act_fn)(float *x, int n);
static inline emb_act_fn emb_kernels_act(const emb_kernels *k, int act)
{
	return act == EMB_KACT_GELU ? k->gelu :
	       act == EMB_KACT_GELU_TANH ? k->gelu_tanh :
	       act == EMB_KACT_RELU ? k->relu : NULL;
}

#endif /* EMB_KERNELS_H */
