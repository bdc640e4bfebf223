/*
 * dispatch.c - the one kernel table (kernels.h), float and int8: each
 * table pairs a float variant with an int8 GEMM and row quantizer, and
 * the best one this CPU and OS can run (base/cpu.h) is chosen at start,
 * or the one $EMB_ISA names.  "amx" pairs AVX-512 float with the tile
 * int8 and bf16 GEMMs (kernels_i8_amx.c, kernels_bf16_amx.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "base/base.h"
#include "base/cpu.h"
#include "kern/kernels.h"

enum { T_SCALAR, T_AVX2, T_AVXVNNI, T_AVX512, T_VNNI, T_AMX, T_N };

static const char *const names[T_N] = {
	"scalar", "avx2", "avxvnni", "avx512", "vnni", "amx"
};
static emb_kernels tables[T_N];
static int usable[T_N];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* table t = float variant f + int8 GEMM g (named gn) + quantizer q and
 * its smoothed twin qs (NULL: the scalar one) */
static void make(int t, const emb_kernels *f, emb_gemm_i8_fn g,
                 const char *gn, emb_u8_quant_fn q, emb_u8_quant_scaled_fn qs)
{
	tables[t] = *f;
	tables[t].name = names[t];
	tables[t].gemm_i8 = g;
	tables[t].i8_name = gn;
	tables[t].u8_quantize = q;
	tables[t].u8_quantize_scaled = qs ? qs : emb_u8_quantize_rows_scaled;
	tables[t].i8_quantize_rows = t >= T_AVX512 &&
	                             emb_i8_quantize_rows_avx512() ?
	                             emb_i8_quantize_rows_avx512() :
	                             emb_i8_quantize_rows;
	usable[t] = 1;
}

/* bf16 compute, kept apart from the int8 and float members: the bf16
 * GEMM of table t, g when available, else the float variant's own (the
 * AVX-512 one: the products by FMA), else AVX2, else scalar */
static void make_bf16(int t, emb_gemm_bf16_fn g, const char *gn)
{
	emb_gemm_bf16_fn a = emb_gemm_bf16_avx2();

	if (!usable[t])
		return;
	if (!g && tables[t].gemm_bf16) {
		g = tables[t].gemm_bf16;
		gn = tables[t].bf16_name;
	}
	tables[t].gemm_bf16 = g ? g : a ? a : emb_gemm_bf16_scalar;
	tables[t].bf16_name = g ? gn : a ? "avx2" : "scalar";
	tables[t].bf16_pack_rows = emb_bf16_pack_rows;
	tables[t].bf16_pack_cols = emb_bf16_pack_cols;
	if (t >= T_AVX512 && emb_bf16_pack_rows_avx512bf16()) {
		tables[t].bf16_pack_rows = emb_bf16_pack_rows_avx512bf16();
		tables[t].bf16_pack_cols = emb_bf16_pack_cols_avx512bf16();
	} else if (t >= T_AVX512 && emb_bf16_pack_rows_avx512()) {
		tables[t].bf16_pack_rows = emb_bf16_pack_rows_avx512();
		tables[t].bf16_pack_cols = emb_bf16_pack_cols_avx512();
	}
	/* attention in the bf16 and int8 modes: in bf16 where that GEMM
	 * outruns the fp32 one: the tiles, or vdpbf16ps (chosen by bf16_dot
	 * only where it runs at the FMA's rate) */
	tables[t].bf16_attn = g && (g == emb_gemm_bf16_amx() ||
	                            g == emb_gemm_bf16_avx512());
}

/* the AVX-512 BF16 GEMM where vdpbf16ps runs at the FMA's rate
 * (EMB_CPU_BF16_FAST: AMD's), else NULL: Intel's runs it at half that
 * rate, so there the FMA GEMM on the widened pairs (the same bits) is
 * the faster one */
static emb_gemm_bf16_fn bf16_dot(unsigned cpu)
{
	return (cpu & EMB_CPU_BF16_FAST) ? emb_gemm_bf16_avx512() : NULL;
}

static void build(void)
{
	unsigned cpu = emb_cpu_features();

	make(T_SCALAR, &emb_kernels_scalar, emb_gemm_i8_scalar, "scalar",
	     emb_u8_quantize_rows, NULL);
#ifdef EMB_HAVE_AVX2
	if (cpu & EMB_CPU_AVX2) {
		emb_u8_quant_fn q = emb_u8_quantize_avx2();
		if (!q)
			q = emb_u8_quantize_rows;
		/* without VNNI: the int16 AVX2 int8 GEMM */
		emb_gemm_i8_fn g = emb_gemm_i8_avx2();
		make(T_AVX2, &emb_kernels_avx2, g ? g : emb_gemm_i8_scalar,
		     g ? "avx2" : "scalar", q, emb_u8_quantize_scaled_avx2());
		if (emb_gemm_i8_avxvnni())
			make(T_AVXVNNI, &emb_kernels_avx2, emb_gemm_i8_avxvnni(),
			     "avxvnni", q, emb_u8_quantize_scaled_avx2());
	}
#endif
#ifdef EMB_HAVE_AVX512
	if (cpu & EMB_CPU_AVX512) {
		emb_u8_quant_fn q = emb_u8_quantize_avx512();
		/* the fp32 GEMM's chunks of k by the core (kernels.h) */
		const emb_kernels *f = cpu & EMB_CPU_AMD ?
		                       &emb_kernels_avx512_long :
		                       &emb_kernels_avx512;
		if (!q)
			q = emb_u8_quantize_rows;
		/* AVX-512 without VNNI: the AVX2 int8 GEMM (every AVX-512
		 * CPU has AVX2) */
		emb_gemm_i8_fn g = emb_gemm_i8_avx2();
		make(T_AVX512, f, g ? g : emb_gemm_i8_scalar,
		     g ? "avx2" : "scalar", q, emb_u8_quantize_scaled_avx512());
		if (emb_gemm_i8_vnni())
			make(T_VNNI, f, emb_gemm_i8_vnni(),
			     "vnni", q, emb_u8_quantize_scaled_avx512());
		/* AMX: the tile int8 GEMM (and bf16 below) beside AVX-512
		 * float, where the CPU and OS allow the tiles */
		if (emb_gemm_i8_amx())
			make(T_AMX, f, emb_gemm_i8_amx(),
			     "amx", q, emb_u8_quantize_scaled_avx512());
		/* the search kernels: VPOPCNTDQ is not in every AVX-512 CPU */
		if (!(cpu & EMB_CPU_AVX512POPCNT))
			tables[T_AVX512].hamming8 = tables[T_VNNI].hamming8 =
				tables[T_AMX].hamming8 = emb_kernels_avx2.hamming8;
	}
#endif
	/* the search scan, the half conversions and the packer of the
	 * AVX-512 tables: AVX2's (every AVX-512 CPU has AVX2 and F16C; the
	 * packer moves the bits, so every table the same) */
	for (int t = 0; t < T_N; t++) {
#ifdef EMB_HAVE_AVX2
		const emb_kernels *f = &emb_kernels_avx2;
#else
		const emb_kernels *f = &emb_kernels_scalar;
#endif
		if (!usable[t])
			continue;
		if (!tables[t].find_ge)
			tables[t].find_ge = f->find_ge;
		if (!tables[t].pack)
			tables[t].pack = f->pack;
		if (!tables[t].f16_to_f32) {
			tables[t].f16_to_f32 = f->f16_to_f32;
			tables[t].add_f16 = f->add_f16;
		}
	}
	/* bf16 */
	make_bf16(T_SCALAR, emb_gemm_bf16_scalar, "scalar");
	make_bf16(T_AVX2, NULL, NULL);
	make_bf16(T_AVXVNNI, NULL, NULL);
	make_bf16(T_AVX512, bf16_dot(cpu), "avx512bf16");
	make_bf16(T_VNNI, bf16_dot(cpu), "avx512bf16");
	if (emb_gemm_bf16_amx())
		make_bf16(T_AMX, emb_gemm_bf16_amx(), "amx");
	else
		make_bf16(T_AMX, bf16_dot(cpu), "avx512bf16");
}

/* why the amx table is missing: the CPU or OS (base/cpu.c), else the
 * build */
static const char *amx_why(void)
{
	const char *why = emb_cpu_amx_why();

	if (why)
		return why;
	return "this build has no AMX kernels (AMX_CFLAGS in config.mk is "
	       "empty: the compiler lacks -mamx-int8)";
}

const emb_kernels *emb_kernels_get(const char *isa)
{
	pthread_once(&once, build);
	for (int t = 0; t < T_N; t++)
		if (!strcmp(isa, names[t]))
			return usable[t] ? &tables[t] : NULL;
	return NULL;
}

int emb_kernels_select(const emb_kernels **out, emb_err *err)
{
	const char *env = getenv("EMB_ISA");
	int t;

	if (env && *env && strcmp(env, "auto")) {
		for (t = 0; t < T_N; t++)
			if (!strcmp(env, names[t]))
				break;
		if (t == T_N)
			return emb_err_set(err, "EMB_ISA: unknown value '%s' "
			                   "(expected scalar, avx2, avxvnni, avx512, "
			                   "vnni, amx or auto)", env);
		*out = emb_kernels_get(env);
		if (!*out && t == T_AMX)
			return emb_err_set(err, "EMB_ISA: amx is not usable here: %s",
			                   amx_why());
		if (!*out)
			return emb_err_set(err, "EMB_ISA: %s is not supported by "
			                   "this CPU or build", env);
		return 0;
	}
	for (t = T_N - 1; t >= 0; t--)
		if ((*out = emb_kernels_get(names[t])))
			return 0;
	return emb_err_set(err, "no kernels");   /* unreachable: scalar */
}
