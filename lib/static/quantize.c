/*
 * quantize.c - a static model's table at another precision, as
 * model2vec's quantize_embeddings computes it (static.h), for
 * emb-quantize to write a folder model2vec itself reads back.
 */
#include <math.h>
#include <string.h>

#include "static/static-internal.h"

void emb_static_table_info(emb_static_table *t, const emb_static *m)
{
	t->file = m->tfile;
	t->name = m->tname;
	t->st = m->st;
	t->dtype = m->tdt;
	t->rows = m->rows;
	t->dim = m->dim;
	t->mapped = m->map != NULL;
}

/* element I of the table, exactly, as a double */
static double at(const emb_static *m, size_t i)
{
	switch (m->tdt) {
	case EMB_DT_F64: return ((const double *)m->table)[i];
	case EMB_DT_F16: return m->h2f[((const uint16_t *)m->table)[i]];
	case EMB_DT_I8: return ((const int8_t *)m->table)[i];
	default: return ((const float *)m->table)[i];
	}
}

/* x rounded to float16 and back */
static float half(double x)
{
	return emb_static_h2f(emb_static_d2h(x));
}

int emb_static_table_convert(void *out, emb_dtype to, const emb_static *m,
                             emb_err *err)
{
	size_t n = m->rows * (size_t)m->dim, i;
	double amax = 0, scale;

	if (to != EMB_DT_F16 && to != EMB_DT_I8)
		return emb_err_set(err, "a static model's table is converted to "
		                   "float16 or int8 only");
	if (to == m->tdt) {
		memcpy(out, m->table, n * emb_dtype_size(to));
		return 0;
	}
	if (to == EMB_DT_F16) {
		uint16_t *h = out;
		for (i = 0; i < n; i++)
			if (((h[i] = emb_static_d2h(at(m, i))) & 0x7c00) == 0x7c00)
				return emb_err_set(err, "tensor '%s': element %zu is "
				                   "outside the float16 range (+-65504)",
				                   m->tname, i);
		return 0;
	}
	/* np.max(np.abs(e)) / 127.0: the stored type's arithmetic (a
	 * Python float is weak under numpy 2's promotion) */
	for (i = 0; i < n; i++)
		if (fabs(at(m, i)) > amax)
			amax = fabs(at(m, i));
	if (m->tdt == EMB_DT_F64)
		scale = amax / 127.0;
	else if (m->tdt == EMB_DT_F32)
		scale = (float)amax / 127.0f;
	else            /* float16: numpy computes in float, rounds to half */
		scale = half((float)amax / 127.0f);
	if (scale == 0) {       /* an all-zero table: numpy's 0/0 casts to 0 */
		memset(out, 0, n);
		return 0;
	}
	for (i = 0; i < n; i++) {
		float b = half(at(m, i)), q;
		/* float16 / float16 and float16 / float32 run in float32,
		 * float16 / float64 in double; out=buf rounds to float16 */
		q = m->tdt == EMB_DT_F64 ? half(b / scale) :
		    half((float)(b / (float)scale));
		q = rintf(q);
		if (q > 127.0f)
			q = 127.0f;
		if (q < -127.0f)
			q = -127.0f;
		((int8_t *)out)[i] = (int8_t)q;
	}
	return 0;
}
