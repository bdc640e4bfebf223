/*
 * embed.c - a static model's tokenization, gather-and-average and
 * normalization (static.h), in the order and the arithmetic of the
 * library that wrote the model: Model2Vec's StaticModel.encode (numpy)
 * or sentence-transformers' StaticEmbedding (torch EmbeddingBag) with
 * its Normalize module.
 */
#include <math.h>
#include <string.h>

#include "static/static-internal.h"

/* dimensions a pass of the average holds in its accumulators */
#define CHUNK 64

/* ------------------------------------------------------------------ */
/* float16                                                             */

float emb_static_h2f(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, f = h & 1023;
	union { uint32_t u; float f; } v;

	if (e == 0) {           /* zero, subnormal: f * 2^-24 */
		float x = (float)f * 0x1p-24f;
		return s ? -x : x;
	}
	if (e == 31)
		v.u = s | 0x7f800000u | (f << 13);
	else
		v.u = s | ((e + 112) << 23) | (f << 13);
	return v.f;
}

uint16_t emb_static_d2h(double x)
{
	uint16_t s = signbit(x) ? 0x8000 : 0;
	double a = fabs(x), r;
	int e;

	if (isnan(x))
		return 0x7e00;
	if (a >= 65520.0)       /* halfway past 65504 and up: infinity */
		return s | 0x7c00;
	if (a < 0x1p-14)        /* subnormal: units of 2^-24 */
		return s | (uint16_t)nearbyint(a * 0x1p24);
	frexp(a, &e);           /* a in [2^(e-1), 2^e) */
	r = nearbyint(ldexp(a, 11 - e));        /* [1024, 2048] */
	if (r >= 2048.0) {
		r = 1024.0;
		e++;
	}
	if (e - 1 > 15)
		return s | 0x7c00;
	return s | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(r - 1024.0);
}

static float round_h(float x)
{
	return emb_static_h2f(emb_static_d2h(x));
}

/* ------------------------------------------------------------------ */
/* tokenization                                                        */

/* byte length of the first N code points of s (LEN bytes) */
static size_t cp_prefix(const char *s, size_t len, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && k++ == n)
			return i;
	return len;
}

/* keep the tokens [a, b) of enc */
static void keep(emb_encoding *enc, size_t a, size_t b)
{
	size_t n = b - a;

	memmove(enc->ids, enc->ids + a, n * sizeof(*enc->ids));
	memmove(enc->type_ids, enc->type_ids + a, n * sizeof(*enc->type_ids));
	memmove(enc->offsets, enc->offsets + 2 * a, 2 * n * sizeof(*enc->offsets));
	memmove(enc->special, enc->special + a, n * sizeof(*enc->special));
	enc->len = n;
}

/* drop the tokens with id UNK */
static void drop_id(emb_encoding *enc, int32_t unk)
{
	size_t i, k = 0;

	for (i = 0; i < enc->len; i++) {
		if (enc->ids[i] == unk)
			continue;
		enc->ids[k] = enc->ids[i];
		enc->type_ids[k] = enc->type_ids[i];
		enc->offsets[2 * k] = enc->offsets[2 * i];
		enc->offsets[2 * k + 1] = enc->offsets[2 * i + 1];
		enc->special[k] = enc->special[i];
		k++;
	}
	enc->len = k;
}

int emb_static_tokenize(emb_encoding *enc, const emb_static *m,
                        const char *text, size_t len, size_t max_length,
                        emb_err *err)
{
	emb_tok_opts o;

	memset(&o, 0, sizeof(o));
	o.no_special = 1;
	o.max_length = m->trunc_left ? 0 : max_length;
	/* model2vec: sentence[:max_length * median_token_length] */
	if (m->format == EMB_STATIC_M2V && max_length > 0 &&
	    (m->median == 0 || max_length <= (size_t)-1 / m->median))
		len = cp_prefix(text, len, max_length * m->median);
	if (emb_tokenize(enc, m->tok, text, len, NULL, 0, &o, err) < 0)
		return -1;
	if (m->trunc_left && max_length > 0 && enc->len > max_length) {
		enc->truncated += enc->len - max_length;
		keep(enc, enc->len - max_length, enc->len);
	}
	if (m->unk >= 0)
		drop_id(enc, m->unk);
	return 0;
}

int emb_static_check_ids(const emb_static *m, const int32_t *ids, size_t n,
                         emb_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || (size_t)ids[i] >= m->ids)
			return emb_err_set(err, "field 'input_ids': id %d at position %zu is out of range (the table covers %zu ids)",
			                   (int)ids[i], i, m->ids);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the average                                                         */

/* what is averaged: the table's rows of IDS, or ROWS given (n, dim) */
typedef struct src {
	const emb_static *m;
	const int32_t *ids;
	const float *rows;
} src;

/* the arithmetic, from the table's and the weights' types */
typedef struct plan {
	int acc64;      /* sums in double (else float) */
	int prod16;     /* each weighted row rounded to float16 (numpy's
	                   float16 product) */
	int out16;      /* the mean rounded to float16 */
} plan;

static plan plan_of(const emb_static *m)
{
	plan p = { 0, 0, 0 };
	emb_dtype e = m->tdt;

	if (!m->w) {
		/* numpy: mean of int8 in float64; float16 in float32, then
		 * rounded to float16; torch's float16 bag alike */
		p.acc64 = e == EMB_DT_I8 || e == EMB_DT_F64;
		p.out16 = e == EMB_DT_F16;
	} else if (m->format == EMB_STATIC_ST) {
		/* folded into float32 rows (float64 for a float64 table) */
		p.acc64 = e == EMB_DT_F64;
	} else {
		/* numpy's promotion of table * weights */
		p.acc64 = m->wdt == EMB_DT_F64 || e == EMB_DT_F64;
		p.prod16 = m->wdt == EMB_DT_F16 &&
		           (e == EMB_DT_F16 || e == EMB_DT_I8);
		p.out16 = e == EMB_DT_F16 || p.prod16;
	}
	return p;
}

static size_t row_of(const emb_static *m, int32_t id)
{
	if (!m->map)
		return (size_t)id;
	return m->mdt == EMB_DT_I32 ? (size_t)((const int32_t *)m->map)[id] :
	       (size_t)((const int64_t *)m->map)[id];
}

static double weight_of(const emb_static *m, int32_t id)
{
	switch (m->wdt) {
	case EMB_DT_F64: return ((const double *)m->w)[id];
	case EMB_DT_F32: return ((const float *)m->w)[id];
	default: return emb_static_h2f(((const uint16_t *)m->w)[id]);
	}
}

/* table[r][a..b) -> o, exactly */
static void table_d(double *o, const emb_static *m, size_t r, int a, int b)
{
	size_t base = r * (size_t)m->dim;
	int i;

	switch (m->tdt) {
	case EMB_DT_F32:
		for (i = a; i < b; i++)
			o[i - a] = ((const float *)m->table)[base + i];
		break;
	case EMB_DT_F16:
		for (i = a; i < b; i++)
			o[i - a] = emb_static_h2f(((const uint16_t *)m->table)[base + i]);
		break;
	case EMB_DT_F64:
		for (i = a; i < b; i++)
			o[i - a] = ((const double *)m->table)[base + i];
		break;
	default:
		for (i = a; i < b; i++)
			o[i - a] = ((const int8_t *)m->table)[base + i];
		break;
	}
}

/* token t's values [a, b) as the plan sums them (each exact in a
 * double; a float when the sums are float) */
static void vals(double *o, const src *s, const plan *p, size_t t, int a,
                 int b)
{
	const emb_static *m = s->m;
	int32_t id;
	double w;
	int i;

	if (s->rows) {
		for (i = a; i < b; i++)
			o[i - a] = s->rows[t * (size_t)m->dim + (size_t)i];
		return;
	}
	id = s->ids[t];
	table_d(o, m, row_of(m, id), a, b);
	if (!m->w)
		return;
	w = weight_of(m, id);
	for (i = 0; i < b - a; i++) {
		if (p->acc64)
			o[i] = o[i] * w;
		else if (m->format == EMB_STATIC_ST && m->wdt == EMB_DT_F64)
			o[i] = (float)(o[i] * w);       /* torch: f64, then f32 */
		else
			o[i] = (float)o[i] * (float)w;
		if (p->prod16)
			o[i] = round_h((float)o[i]);
	}
}

/* the mean of a float32 or float16 table's rows of ids (n > 0), without
 * weights: the same sums as mean_of, in out itself */
static void mean_table(float *out, const emb_static *m, const int32_t *ids,
                       size_t n, int out16)
{
	size_t d = (size_t)m->dim, i, t;

	if (m->tdt == EMB_DT_F32) {
		const float *tab = m->table, *r = tab + row_of(m, ids[0]) * d;
		memcpy(out, r, d * sizeof(float));
		for (t = 1; t < n; t++) {
			r = tab + row_of(m, ids[t]) * d;
			for (i = 0; i < d; i++)
				out[i] += r[i];
		}
	} else {
		const uint16_t *tab = m->table;
		m->k->f16_to_f32(out, tab + row_of(m, ids[0]) * d, (int)d);
		for (t = 1; t < n; t++)
			m->k->add_f16(out, tab + row_of(m, ids[t]) * d, (int)d);
	}
	for (i = 0; i < d; i++) {
		float x = out[i] / (float)n;
		out[i] = out16 ? round_h(x) : x;
	}
}

/* the mean of s's n tokens -> out (dim) */
static void mean_of(float *out, const src *s, size_t n)
{
	const emb_static *m = s->m;
	plan p = plan_of(m);
	double v[CHUNK], accd[CHUNK];
	float accf[CHUNK];
	int a, b, i;

	if (n == 0) {
		memset(out, 0, (size_t)m->dim * sizeof(float));
		return;
	}
	if (s->ids && !m->w && (m->tdt == EMB_DT_F32 || m->tdt == EMB_DT_F16)) {
		mean_table(out, m, s->ids, n, p.out16);
		return;
	}
	for (a = 0; a < m->dim; a = b) {
		b = a + CHUNK < m->dim ? a + CHUNK : m->dim;
		// tokens (n, b - a) -> sum (b - a), in token order
		vals(v, s, &p, 0, a, b);
		for (i = 0; i < b - a; i++) {
			accd[i] = v[i];
			accf[i] = (float)v[i];
		}
		for (size_t t = 1; t < n; t++) {
			vals(v, s, &p, t, a, b);
			if (p.acc64)
				for (i = 0; i < b - a; i++)
					accd[i] += v[i];
			else
				for (i = 0; i < b - a; i++)
					accf[i] += (float)v[i];
		}
		for (i = 0; i < b - a; i++) {
			if (p.acc64) {
				double x = accd[i] / (double)n;
				out[a + i] = p.out16 ? emb_static_h2f(emb_static_d2h(x)) :
				             (float)x;
			} else {
				float x = accf[i] / (float)n;
				out[a + i] = p.out16 ? round_h(x) : x;
			}
		}
	}
}

void emb_static_mean(float *out, const emb_static *m, const int32_t *ids,
                     size_t n)
{
	src s = { m, ids, NULL };

	mean_of(out, &s, n);
}

void emb_static_mean_rows(float *out, const emb_static *m, const float *rows,
                          size_t n)
{
	src s = { m, NULL, rows };

	mean_of(out, &s, n);
}

void emb_static_rows(float *rows, const emb_static *m, const int32_t *ids,
                     size_t n)
{
	src s = { m, ids, NULL };
	plan p = plan_of(m);
	double v[CHUNK];
	int a, b, i;

	for (size_t t = 0; t < n; t++) {
		for (a = 0; a < m->dim; a = b) {
			b = a + CHUNK < m->dim ? a + CHUNK : m->dim;
			vals(v, &s, &p, t, a, b);
			for (i = 0; i < b - a; i++)
				rows[t * (size_t)m->dim + (size_t)(a + i)] = (float)v[i];
		}
	}
}

/* ------------------------------------------------------------------ */
/* normalization                                                       */

/* numpy's pairwise sum of x (n) in float32 (add.reduce over a
 * contiguous axis: 8 accumulators, blocks of 128) */
static float pairwise(const float *x, size_t n)
{
	float r[8], res;
	size_t i;

	if (n < 8) {
		res = 0.0f;
		for (i = 0; i < n; i++)
			res += x[i];
		return res;
	}
	if (n <= 128) {
		for (i = 0; i < 8; i++)
			r[i] = x[i];
		for (i = 8; i < n - n % 8; i += 8)
			for (int j = 0; j < 8; j++)
				r[j] += x[i + j];
		res = ((r[0] + r[1]) + (r[2] + r[3])) +
		      ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += x[i];
		return res;
	}
	i = n / 2;
	i -= i % 8;
	return pairwise(x, i) + pairwise(x + i, n - i);
}

/* squares of the dimensions numpy's norm sums pairwise here at most */
#define NORM_MAX 4096

void emb_static_normalize(float *v, const emb_static *m, int d)
{
	int out16 = plan_of(m).out16, i;
	float sq[NORM_MAX], norm;
	double t = 0;

	if (m->format == EMB_STATIC_M2V && d <= NORM_MAX) {
		/* np.linalg.norm(out32, axis=1) + 1e-32, in float32 */
		for (i = 0; i < d; i++)
			sq[i] = v[i] * v[i];
		norm = sqrtf(pairwise(sq, (size_t)d)) + 1e-32f;
	} else {
		/* torch.nn.functional.normalize: v / max(||v||, 1e-12) */
		for (i = 0; i < d; i++)
			t += (double)v[i] * v[i];
		norm = (float)sqrt(t);
		if (m->format == EMB_STATIC_M2V)
			norm += 1e-32f;
		else if (norm < 1e-12f)
			norm = 1e-12f;
	}
	for (i = 0; i < d; i++)
		v[i] = out16 ? round_h(v[i] / norm) : v[i] / norm;
}
