/*
 * quant.c - embedding quantization as sentence-transformers'
 * quantize_embeddings computes it (numpy, float32):
 *
 *   steps = (max - min) / 255
 *   uint8 = ((x - min) / steps).astype(uint8)
 *   int8  = ((x - min) / steps - 128).astype(int8)
 *   ubinary = packbits(x > 0)          (first value in the high bit)
 *   binary  = ubinary - 128 as int8
 *
 * numpy's astype truncates toward zero and wraps values outside the
 * type; here they saturate (and NaN gives the lowest value).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include "st/st.h"
#include "st/ckpt.h"
#include "static/static.h"
#include "kern/qkernels.h"

static const char *const vq_names[] = { NULL, "int8", "uint8", "binary",
                                        "ubinary" };

int emb_vq_parse(const char *s)
{
	for (int i = 1; i < 5; i++)
		if (!strcmp(s, vq_names[i]))
			return i;
	return 0;
}

const char *emb_vq_name(int kind)
{
	return kind >= 1 && kind <= 4 ? vq_names[kind] : NULL;
}

size_t emb_vq_width(int kind, int dim)
{
	if (dim <= 0)
		return 0;
	if (kind == EMB_VQ_BINARY || kind == EMB_VQ_UBINARY)
		return ((size_t)dim + 7) / 8;
	return (size_t)dim;
}

void emb_vq_ranges_init(float *mins, float *maxs, int dim)
{
	for (int i = 0; i < dim; i++) {
		mins[i] = INFINITY;
		maxs[i] = -INFINITY;
	}
}

void emb_vq_ranges_add(float *mins, float *maxs, const float *v, int dim)
{
	for (int i = 0; i < dim; i++) {
		if (v[i] < mins[i])
			mins[i] = v[i];
		if (v[i] > maxs[i])
			maxs[i] = v[i];
	}
}

/* truncate toward zero and clamp to [lo, hi]; *sat counts clamps */
static int32_t clampf(float x, int lo, int hi, size_t *sat)
{
	if (isnan(x)) {
		(*sat)++;
		return lo;
	}
	x = truncf(x);
	if (x < (float)lo) {
		(*sat)++;
		return lo;
	}
	if (x > (float)hi) {
		(*sat)++;
		return hi;
	}
	return (int32_t)x;
}

size_t emb_vq_quantize(int32_t *out, int kind, const float *v, int dim,
                       const float *mins, const float *maxs)
{
	size_t sat = 0;

	if (kind == EMB_VQ_INT8 || kind == EMB_VQ_UINT8) {
		for (int i = 0; i < dim; i++) {
			/* float32 throughout, as numpy; this file is built
			 * without -mfma, so nothing is contracted */
			float step = (maxs[i] - mins[i]) / 255.0f;
			float q = (v[i] - mins[i]) / step;
			if (kind == EMB_VQ_INT8)
				out[i] = clampf(q - 128.0f, -128, 127, &sat);
			else
				out[i] = clampf(q, 0, 255, &sat);
		}
		return sat;
	}
	for (size_t b = 0; b < emb_vq_width(kind, dim); b++) {
		int byte = 0;
		for (int k = 0; k < 8; k++) {
			size_t i = b * 8 + (size_t)k;
			if (i < (size_t)dim && v[i] > 0)
				byte |= 0x80 >> k;
		}
		out[b] = kind == EMB_VQ_BINARY ? byte - 128 : byte;
	}
	return 0;
}

void emb_vq_dequantize(float *out, int kind, const int32_t *q, int dim,
                       const float *mins, const float *maxs)
{
	if (kind == EMB_VQ_INT8 || kind == EMB_VQ_UINT8) {
		for (int i = 0; i < dim; i++) {
			float step = (maxs[i] - mins[i]) / 255.0f;
			int u = q[i] + (kind == EMB_VQ_INT8 ? 128 : 0);
			out[i] = mins[i] + ((float)u + 0.5f) * step;
		}
		return;
	}
	for (int i = 0; i < dim; i++) {
		int byte = q[i / 8] + (kind == EMB_VQ_BINARY ? 128 : 0);
		out[i] = byte & (0x80 >> (i % 8)) ? 1.0f : -1.0f;
	}
}

/* ------------------------------------------------------------------ */
/* quantized checkpoints                                               */

/* a linear layer's weight: 2-D "*.weight", not an embedding or a norm */
static int is_linear(const emb_tensor *t)
{
	char low[512];
	size_t n = strlen(t->name), i;

	if (t->ndim != 2 || n < 7 || n >= sizeof(low) ||
	    strcmp(t->name + n - 7, ".weight"))
		return 0;
	for (i = 0; i <= n; i++)
		low[i] = (char)tolower((unsigned char)t->name[i]);
	return !strstr(low, "embed") && !strstr(low, "norm");
}

static int is_float(emb_dtype d)
{
	return d == EMB_DT_F32 || d == EMB_DT_F16 || d == EMB_DT_BF16 ||
	       d == EMB_DT_F64;
}

/* --weights f16 over float tensors beyond the f16 range (65504, and
 * what rounds past it): refused before anything is written, naming the
 * first such element (an infinity would make every tool refuse the
 * output); bf16 has float32's range */
static int f16_range_check(const emb_safetensors *st, emb_err *err)
{
	size_t n = emb_safetensors_count(st), cap = 0;
	float *buf = NULL;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		size_t cnt = (size_t)t->numel;
		if (!is_float(t->dtype) || t->dtype == EMB_DT_F16 ||
		    t->dtype == EMB_DT_BF16)
			continue;
		if (cnt > cap) {
			float *b = realloc(buf, cnt * sizeof(*b));
			if (!b) {
				rc = emb_err_set(err, "out of memory");
				break;
			}
			buf = b;
			cap = cnt;
		}
		if (emb_tensor_to_f32(buf, t, err) < 0) {
			rc = -1;
			break;
		}
		for (size_t k = 0; k < cnt; k++) {
			uint16_t v = emb_f32_to_f16(buf[k]);
			if ((v & 0x7c00) == 0x7c00) {
				rc = emb_err_set(err, "%s: tensor '%s': element %zu "
				                 "is outside the f16 range "
				                 "(+-65504); use --weights bf16",
				                 t->file, t->name, k);
				break;
			}
		}
	}
	free(buf);
	return rc;
}

int emb_quantize_model(const char *dir, const char *out, const char *type,
                       int force, emb_err *err)
{
	emb_safetensors *st = NULL;
	json_t *hdr = NULL, *meta;
	char path[PATH_MAX], *htext = NULL, *tmp = NULL, *outc = NULL;
	FILE *f = NULL;
	size_t n, off = 0;
	int w8 = !strcmp(type, "int8"), f16 = !strcmp(type, "f16");
	int rc = -1, nq = 0;
	float *buf = NULL;
	void *obuf = NULL;

	if (!w8 && !f16 && strcmp(type, "bf16"))
		return emb_err_set(err, "unknown weight type '%s' (int8, f16, bf16)",
		                   type);
	switch (emb_static_detect(dir, err)) {
	case EMB_STATIC_NONE: break;
	case -1: return -1;
	default: return emb_quantize_static(dir, out, type, force, err);
	}
	if (emb_safetensors_open(&st, dir, err) < 0)
		return -1;
	/* OUT without trailing slashes: "OUT/" would follow a link */
	if (!(outc = strdup(out))) {
		emb_safetensors_free(st);
		return emb_err_set(err, "out of memory");
	}
	for (n = strlen(outc); n > 1 && outc[n - 1] == '/'; n--)
		outc[n - 1] = 0;
	out = outc;
	if (emb_safetensors_check_finite(st, NULL, err) < 0 ||
	    (f16 && f16_range_check(st, err) < 0) ||
	    emb_ckpt_begin(&tmp, dir, out, force, err) < 0) {
		free(outc);
		emb_safetensors_free(st);
		return -1;
	}
	if (!(hdr = json_object()) || !(meta = json_object()))
		goto oom;
	json_object_set_new(meta, "format", json_string("pt"));
	json_object_set_new(meta, "emb.quantization", json_string(
		w8 ? "int8-rowwise-symmetric: I8 weight W, F32 W_scale (rows), "
		     "w = W * W_scale" : type));
	n = emb_safetensors_count(st);
	/* the header: every tensor's new dtype, shape and offsets */
	for (size_t i = 0; i < n; i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		int q = w8 && is_float(t->dtype) && is_linear(t);
		int h = !w8 && is_float(t->dtype) && t->dtype != EMB_DT_F16 &&
		        t->dtype != EMB_DT_BF16;
		emb_dtype dt = q ? EMB_DT_I8 : h ? (f16 ? EMB_DT_F16 : EMB_DT_BF16) :
		               t->dtype;
		size_t bytes = (size_t)t->numel * emb_dtype_size(dt);
		json_t *o = json_object(), *shape = json_array();
		if (!o || !shape)
			goto oom;
		for (int d = 0; d < t->ndim; d++)
			json_array_append_new(shape, json_integer(t->shape[d]));
		json_object_set_new(o, "dtype", json_string(emb_dtype_name(dt)));
		json_object_set_new(o, "shape", shape);
		json_object_set_new(o, "data_offsets", json_pack("[II]",
			(json_int_t)off, (json_int_t)(off + bytes)));
		json_object_set_new(hdr, t->name, o);
		off += bytes;
		if (q) {
			char sn[600];
			snprintf(sn, sizeof(sn), "%s_scale", t->name);
			if (emb_safetensors_find(st, sn)) {
				emb_err_set(err, "%s: tensor '%s' exists already", t->file,
				            sn);
				goto out;
			}
			bytes = (size_t)t->shape[0] * 4;
			json_object_set_new(hdr, sn, json_pack("{s:s,s:[I],s:[II]}",
				"dtype", "F32", "shape", (json_int_t)t->shape[0],
				"data_offsets", (json_int_t)off, (json_int_t)(off + bytes)));
			off += bytes;
			nq++;
		}
	}
	if (w8 && nq == 0) {
		emb_err_set(err, "%s: no linear layer weights to quantize", dir);
		goto out;
	}
	json_object_set_new(hdr, "__metadata__", meta);
	if (!(htext = json_dumps(hdr, JSON_COMPACT)))
		goto oom;
	if (emb_ckpt_copy_files(dir, tmp, err) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/model.safetensors", tmp);
	if (!(f = fopen(path, "wb"))) {
		emb_err_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	emb_safetensors_write_header(f, htext);
	for (size_t i = 0; i < n; i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		int q = w8 && is_float(t->dtype) && is_linear(t);
		int h = !w8 && is_float(t->dtype) && t->dtype != EMB_DT_F16 &&
		        t->dtype != EMB_DT_BF16;
		size_t cnt = (size_t)t->numel;
		if (!q && !h) {
			fwrite(t->data, 1, t->nbytes, f);
			continue;
		}
		free(buf);
		free(obuf);
		obuf = NULL;
		if (!(buf = malloc((cnt ? cnt : 1) * sizeof(float))) ||
		    !(obuf = malloc((cnt ? cnt : 1) * 2 + (q ? (size_t)t->shape[0] * 4 : 0))))
			goto oom;
		if (emb_tensor_to_f32(buf, t, err) < 0)
			goto out;
		if (q) {
			int rows = (int)t->shape[0], cols = (int)t->shape[1];
			float *ws = malloc((size_t)rows * sizeof(float));
			if (!ws)
				goto oom;
			// W (rows,cols) -> I8 (rows,cols) + scales (rows)
			emb_i8_quantize_rows(obuf, ws, buf, rows, cols);
			fwrite(obuf, 1, cnt, f);
			for (int r = 0; r < rows; r++) {
				unsigned char le[4];
				uint32_t x;
				memcpy(&x, &ws[r], 4);
				for (int b = 0; b < 4; b++)
					le[b] = (unsigned char)(x >> (8 * b));
				fwrite(le, 1, 4, f);
			}
			free(ws);
		} else {
			unsigned char *o = obuf;
			for (size_t k = 0; k < cnt; k++) {
				uint16_t v = f16 ? emb_f32_to_f16(buf[k]) : emb_f32_to_bf16(buf[k]);
				o[2 * k] = (unsigned char)(v & 0xff);
				o[2 * k + 1] = (unsigned char)(v >> 8);
			}
			fwrite(o, 1, 2 * cnt, f);
		}
	}
	if (ferror(f)) {
		emb_err_set(err, "%s: write error: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
oom:
	emb_err_set(err, "out of memory");
out:
	if (f && fclose(f) != 0 && rc == 0)
		rc = emb_err_set(err, "%s: write error: %s", path, strerror(errno));
	if (rc == 0 && emb_ckpt_commit(tmp, out, err) < 0)
		rc = -1;        /* commit removed tmp */
	else if (rc != 0)
		emb_ckpt_abort(tmp);
	free(tmp);
	free(outc);
	free(buf);
	free(obuf);
	free(htext);
	json_decref(hdr);
	emb_safetensors_free(st);
	return rc;
}
