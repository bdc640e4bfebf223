/*
 * synth.c - synthetic checkpoints (SYNTHETIC.md, format "emb-synth-1")
 *
 * Every weight is a pure function of (seed, tensor name, flat index):
 * splitmix64 over fnv1a64(name) ^ seed, 24 bits -> exact float32 in
 * [-1, 1), times scale, plus offset, then rounded to the stored dtype.
 * An extension of the format: a tensor's optional "outliers" field,
 * [[channel, times], ...], multiplies every element whose index in the
 * last dimension is channel by times (float32, before the rounding):
 * outlier channels such as the LayerNorm gains of trained BERTs.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/half.h"
#include "base/strmap.h"
#include "tool/emb-tool.h"


#define GAMMA 0x9e3779b97f4a7c15ull
#define M1 0xbf58476d1ce4e5b9ull
#define M2 0x94d049bb133111ebull
#define CHUNK 65536
#define MAX_DEPTH 32

uint64_t emb_synth_fnv1a64(const char *s)
{
	return emb_str_hash(s);
}

static inline float uniform(uint64_t base, uint64_t i)
{
	uint64_t z = base + (i + 1) * GAMMA;

	z = (z ^ (z >> 30)) * M1;
	z = (z ^ (z >> 27)) * M2;
	z = z ^ (z >> 31);
	return (float)((int64_t)(2 * (z >> 40)) - (1 << 24)) * 0x1p-24f;
}

static inline float element(uint64_t base, uint64_t i, float scale, float offset)
{
	/* volatile: the float32 multiply and add must not be fused */
	volatile float w = uniform(base, i) * scale;

	if (offset != 0)
		return offset + w;                     /* float32 add */
	return w;
}

float emb_synth_value(uint64_t seed, const char *name, uint64_t i,
                      float scale, float offset)
{
	return element(emb_synth_fnv1a64(name) ^ seed, i, scale, offset);
}

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

typedef struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(p = realloc(b->p, cap))) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_json_string(sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	sb_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[7] = "\\u00";
		switch (c) {
		case '"': sb_add(b, "\\\"", 2); break;
		case '\\': sb_add(b, "\\\\", 2); break;
		case '\n': sb_add(b, "\\n", 2); break;
		case '\r': sb_add(b, "\\r", 2); break;
		case '\t': sb_add(b, "\\t", 2); break;
		default:
			if (c < 0x20) {
				e[4] = hex[c >> 4];
				e[5] = hex[c & 15];
				sb_add(b, e, 6);
			} else {
				sb_add(b, (const char *)&c, 1);
			}
		}
	}
	sb_add(b, "\"", 1);
}

static void sb_indent(sbuf *b, int level)
{
	sb_add(b, "\n", 1);
	for (int i = 0; i < level; i++)
		sb_add(b, "  ", 2);
}

/* JSON with 2-space indent (as Python's json.dump(indent=2)); reals in
 * their shortest round-trip form */
static void sb_json(sbuf *b, const json_t *v, int level)
{
	char num[40];
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *x;
		int first = 1;
		if (!json_object_size(v)) {
			sb_str(b, "{}");
			break;
		}
		sb_str(b, "{");
		json_object_foreach((json_t *)v, k, x) {
			if (!first)
				sb_str(b, ",");
			first = 0;
			sb_indent(b, level + 1);
			sb_json_string(b, k, strlen(k));
			sb_str(b, ": ");
			sb_json(b, x, level + 1);
		}
		sb_indent(b, level);
		sb_str(b, "}");
		break;
	}
	case JSON_ARRAY:
		if (!json_array_size(v)) {
			sb_str(b, "[]");
			break;
		}
		sb_str(b, "[");
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				sb_str(b, ",");
			sb_indent(b, level + 1);
			sb_json(b, json_array_get(v, i), level + 1);
		}
		sb_indent(b, level);
		sb_str(b, "]");
		break;
	case JSON_STRING:
		sb_json_string(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		sb_str(b, num);
		break;
	case JSON_REAL: {
		double d = json_real_value(v);
		for (int p = 1; p <= 17; p++) {
			snprintf(num, sizeof(num), "%.*g", p, d);
			if (strtod(num, NULL) == d)
				break;
		}
		if (!strpbrk(num, ".eEni"))
			strcat(num, ".0");
		sb_str(b, num);
		break;
	}
	case JSON_TRUE: sb_str(b, "true"); break;
	case JSON_FALSE: sb_str(b, "false"); break;
	default: sb_str(b, "null"); break;
	}
}

static int mkdir_p(const char *path, emb_err *err)
{
	char *p = strdup(path);
	size_t n;

	if (!p)
		return emb_err_set(err, "%s: out of memory", path);
	n = strlen(p);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		p[i] = 0;
		if (mkdir(p, 0777) < 0 && errno != EEXIST) {
			emb_err_set(err, "%s: %s", p, strerror(errno));
			free(p);
			return -1;
		}
		if (i < n)
			p[i] = '/';
	}
	free(p);
	return 0;
}

/* mkdir -p the directory part of OUT/REL */
static int mkdir_parent(const char *out, const char *rel, emb_err *err)
{
	char *p = emb_path_join(out, rel), *s;
	int rc = 0;

	if (!p)
		return emb_err_set(err, "%s: out of memory", out);
	s = strrchr(p, '/');
	*s = 0;
	rc = mkdir_p(p, err);
	free(p);
	return rc;
}

static int write_all(const char *path, const char *data, size_t n, emb_err *err)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return emb_err_set(err, "%s: %s", path, strerror(errno));
	if (fwrite(data, 1, n, f) != n || fflush(f) || ferror(f)) {
		emb_err_set(err, "%s: write error: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	if (fclose(f))
		return emb_err_set(err, "%s: write error: %s", path, strerror(errno));
	return 0;
}

/* SRC must stay inside TOP (a recipe's base: no link out of it) */
static int copy_file(const char *top, const char *src, const char *dst,
                     emb_err *err)
{
	char buf[65536];
	int fd = emb_file_open(top, src, NULL, err);
	FILE *in = fd < 0 ? NULL : fdopen(fd, "rb"), *out;
	size_t n;
	int rc = 0;

	if (fd < 0)
		return -1;
	if (!in) {
		close(fd);
		return emb_err_set(err, "%s: %s", src, strerror(errno));
	}
	if (!(out = fopen(dst, "wb"))) {
		fclose(in);
		return emb_err_set(err, "%s: %s", dst, strerror(errno));
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n) {
			rc = emb_err_set(err, "%s: write error: %s", dst, strerror(errno));
			break;
		}
	if (!rc && ferror(in))
		rc = emb_err_set(err, "%s: read error", src);
	fclose(in);
	if (fclose(out) && !rc)
		rc = emb_err_set(err, "%s: write error: %s", dst, strerror(errno));
	return rc;
}

static int skip_name(const char *n)
{
	size_t l = strlen(n);

	return !strcmp(n, "PROVENANCE.md") || !strcmp(n, "README.md") ||
	       (l >= 12 && !strcmp(n + l - 12, ".safetensors"));
}

static int copy_tree(const char *top, const char *src, const char *dst,
                     int depth, emb_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > MAX_DEPTH)
		return emb_err_set(err, "%s: directories nested too deep", src);
	if (mkdir_p(dst, err))
		return -1;
	if (!(d = opendir(src)))
		return emb_err_set(err, "%s: %s", src, strerror(errno));
	while (!rc && (e = readdir(d))) {
		struct stat sb;
		char *s, *t;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		s = emb_path_join(src, e->d_name);
		t = emb_path_join(dst, e->d_name);
		if (!s || !t)
			rc = emb_err_set(err, "%s: out of memory", src);
		else if (lstat(s, &sb) < 0)
			rc = emb_err_set(err, "%s: %s", s, strerror(errno));
		else if (S_ISDIR(sb.st_mode))
			rc = copy_tree(top, s, t, depth + 1, err);
		else if (S_ISLNK(sb.st_mode) && stat(s, &sb) < 0)
			rc = emb_err_set(err, "%s: %s", s, strerror(errno));
		else if (S_ISDIR(sb.st_mode))
			;       /* links to folders are not followed (no loops) */
		else if (S_ISREG(sb.st_mode) && !skip_name(e->d_name))
			rc = copy_file(top, s, t, err);
		free(s);
		free(t);
	}
	closedir(d);
	return rc;
}

/* ------------------------------------------------------------------ */
/* recipe                                                              */

#define SYNTH_MAX_OUTLIERS 64

typedef struct spec {
	const char *name;       /* borrowed from the recipe json */
	const char *file;       /* "model.safetensors" or the "file" field */
	emb_dtype dtype;
	int ndim;
	int64_t shape[EMB_MAX_DIMS];
	uint64_t numel;
	uint64_t nbytes;
	float scale, offset;
	/* "outliers": [[channel, times], ...]: every element whose index in
	 * the last dimension is channel is multiplied by times (after the
	 * offset, in float32, before the storage rounding) */
	int nout;
	int64_t out_ch[SYNTH_MAX_OUTLIERS];
	float out_times[SYNTH_MAX_OUTLIERS];
} spec;

static int get_number(double *out, json_t *v)
{
	if (json_is_real(v))
		*out = json_real_value(v);
	else if (json_is_integer(v))
		*out = (double)json_integer_value(v);
	else
		return -1;
	return 0;
}

static int parse_spec(spec *s, json_t *v, size_t i, const char *rp, emb_err *err)
{
	json_t *x;
	double d;
	size_t k;

	if (!json_is_object(v))
		return emb_err_set(err, "%s: field 'tensors[%zu]' must be an object", rp, i);
	x = json_object_get(v, "name");
	if (!json_is_string(x) || !json_string_length(x) ||
	    strlen(json_string_value(x)) != json_string_length(x))
		return emb_err_set(err, "%s: field 'tensors[%zu].name' must be a "
		                   "non-empty string", rp, i);
	s->name = json_string_value(x);
	x = json_object_get(v, "file");
	s->file = "model.safetensors";
	if (x) {
		if (!json_is_string(x) || !emb_relpath_ok(json_string_value(x), 0))
			return emb_err_set(err, "%s: field 'tensors[%zu].file' must be a "
			                   "relative path", rp, i);
		s->file = json_string_value(x);
	}
	x = json_object_get(v, "dtype");
	s->dtype = EMB_DT_F32;
	if (x) {
		const char *t = json_is_string(x) ? json_string_value(x) : "";
		if (!strcmp(t, "F32"))
			s->dtype = EMB_DT_F32;
		else if (!strcmp(t, "F16"))
			s->dtype = EMB_DT_F16;
		else if (!strcmp(t, "BF16"))
			s->dtype = EMB_DT_BF16;
		else
			return emb_err_set(err, "%s: field 'tensors[%zu].dtype' must be "
			                   "\"F32\", \"F16\" or \"BF16\"", rp, i);
	}
	x = json_object_get(v, "shape");
	if (!json_is_array(x) || json_array_size(x) > EMB_MAX_DIMS)
		return emb_err_set(err, "%s: field 'tensors[%zu].shape' must be an array "
		                   "of at most %d non-negative integers", rp, i, EMB_MAX_DIMS);
	s->ndim = (int)json_array_size(x);
	s->numel = 1;
	for (k = 0; k < json_array_size(x); k++) {
		json_t *e = json_array_get(x, k);
		uint64_t n;
		if (!json_is_integer(e) || json_integer_value(e) < 0)
			return emb_err_set(err, "%s: field 'tensors[%zu].shape' must be an "
			                   "array of non-negative integers", rp, i);
		n = (uint64_t)json_integer_value(e);
		s->shape[k] = (int64_t)n;
		if (n && s->numel > (UINT64_MAX / 8) / n)
			return emb_err_set(err, "%s: field 'tensors[%zu].shape' is too large",
			                   rp, i);
		s->numel *= n;
	}
	s->nbytes = s->numel * emb_dtype_size(s->dtype);
	if (get_number(&d, json_object_get(v, "scale")))
		return emb_err_set(err, "%s: field 'tensors[%zu].scale' must be a number",
		                   rp, i);
	s->scale = (float)d;
	s->offset = 0;
	x = json_object_get(v, "offset");
	if (x && !json_is_null(x)) {
		if (get_number(&d, x))
			return emb_err_set(err, "%s: field 'tensors[%zu].offset' must be a "
			                   "number", rp, i);
		s->offset = (float)d;
	}
	s->nout = 0;
	x = json_object_get(v, "outliers");
	if (x && !json_is_null(x)) {
		int64_t last = s->ndim ? s->shape[s->ndim - 1] : 1;
		if (!json_is_array(x) || json_array_size(x) > SYNTH_MAX_OUTLIERS)
			return emb_err_set(err, "%s: field 'tensors[%zu].outliers' must be "
			                   "an array of at most %d [channel, times] pairs",
			                   rp, i, SYNTH_MAX_OUTLIERS);
		for (k = 0; k < json_array_size(x); k++) {
			json_t *e = json_array_get(x, k), *c = json_array_get(e, 0);
			if (!json_is_array(e) || json_array_size(e) != 2 ||
			    !json_is_integer(c) || json_integer_value(c) < 0 ||
			    json_integer_value(c) >= last ||
			    get_number(&d, json_array_get(e, 1)))
				return emb_err_set(err, "%s: field 'tensors[%zu].outliers[%zu]' "
				                   "must be [channel, times] with 0 <= channel "
				                   "< %lld", rp, i, k, (long long)last);
			s->out_ch[s->nout] = json_integer_value(c);
			s->out_times[s->nout++] = (float)d;
		}
	}
	return 0;
}

/* vals (m) = elements done..done+m-1 of s: its outlier channels scaled */
static void apply_outliers(float *vals, const spec *s, uint64_t done, size_t m)
{
	uint64_t last = s->ndim ? (uint64_t)s->shape[s->ndim - 1] : 1;

	for (size_t k = 0; k < m; k++) {
		uint64_t c = (done + k) % last;
		for (int o = 0; o < s->nout; o++)
			if ((uint64_t)s->out_ch[o] == c) {
				volatile float w = vals[k] * s->out_times[o];
				vals[k] = w;            /* float32 multiply */
			}
	}
}

/* write all specs whose file is FILE (recipe order) into OUT/FILE */
static int write_st(const char *out, const char *file, const spec *sp, size_t n,
                    uint64_t seed, emb_err *err)
{
	sbuf h = {0};
	char num[96], *path;
	uint64_t off = 0;
	FILE *f;
	float *vals = NULL;
	unsigned char *bytes = NULL;
	size_t i, k;
	int rc = -1;

	sb_str(&h, "{");
	for (i = 0; i < n; i++) {
		if (strcmp(sp[i].file, file))
			continue;
		if (h.len > 1)
			sb_str(&h, ",");
		sb_json_string(&h, sp[i].name, strlen(sp[i].name));
		sb_str(&h, ":{\"dtype\":\"");
		sb_str(&h, emb_dtype_name(sp[i].dtype));
		sb_str(&h, "\",\"shape\":[");
		for (k = 0; k < (size_t)sp[i].ndim; k++) {
			snprintf(num, sizeof(num), "%s%lld", k ? "," : "",
			         (long long)sp[i].shape[k]);
			sb_str(&h, num);
		}
		if (off > UINT64_MAX - sp[i].nbytes) {
			free(h.p);
			return emb_err_set(err, "%s/%s: too large", out, file);
		}
		snprintf(num, sizeof(num), "],\"data_offsets\":[%llu,%llu]}",
		         (unsigned long long)off,
		         (unsigned long long)(off + sp[i].nbytes));
		sb_str(&h, num);
		off += sp[i].nbytes;
	}
	sb_str(&h, h.len > 1 ? ",\"__metadata__\":{\"format\":\"pt\"}}"
	                     : "\"__metadata__\":{\"format\":\"pt\"}}");
	while (h.len % 8)
		sb_add(&h, " ", 1);
	if (h.oom)
		return emb_err_set(err, "%s: out of memory", file);
	if (mkdir_parent(out, file, err)) {
		free(h.p);
		return -1;
	}
	if (!(path = emb_path_join(out, file))) {
		free(h.p);
		return emb_err_set(err, "%s: out of memory", file);
	}
	vals = malloc(CHUNK * sizeof(float));
	bytes = malloc(CHUNK * sizeof(float));
	if (!vals || !bytes) {
		emb_err_set(err, "%s: out of memory", path);
		goto done;
	}
	if (!(f = fopen(path, "wb"))) {
		emb_err_set(err, "%s: %s", path, strerror(errno));
		goto done;
	}
	for (k = 0; k < 8; k++)
		num[k] = (char)(((uint64_t)h.len >> (8 * k)) & 0xff);
	fwrite(num, 1, 8, f);
	fwrite(h.p, 1, h.len, f);
	for (i = 0; i < n; i++) {
		uint64_t base, done;
		if (strcmp(sp[i].file, file))
			continue;
		base = emb_synth_fnv1a64(sp[i].name) ^ seed;
		for (done = 0; done < sp[i].numel; ) {
			size_t m = sp[i].numel - done < CHUNK ? (size_t)(sp[i].numel - done)
			                                       : CHUNK, nb;
			for (k = 0; k < m; k++)
				vals[k] = element(base, done + k, sp[i].scale, sp[i].offset);
			if (sp[i].nout)
				apply_outliers(vals, &sp[i], done, m);
			switch (sp[i].dtype) {
			case EMB_DT_F16:
			case EMB_DT_BF16:
				for (k = 0; k < m; k++) {
					uint16_t x = sp[i].dtype == EMB_DT_F16 ?
					             emb_f32_to_f16(vals[k]) : emb_f32_to_bf16(vals[k]);
					bytes[2 * k] = (unsigned char)x;
					bytes[2 * k + 1] = (unsigned char)(x >> 8);
				}
				nb = 2 * m;
				break;
			default:
				for (k = 0; k < m; k++) {
					uint32_t x;
					memcpy(&x, &vals[k], 4);
					bytes[4 * k] = (unsigned char)x;
					bytes[4 * k + 1] = (unsigned char)(x >> 8);
					bytes[4 * k + 2] = (unsigned char)(x >> 16);
					bytes[4 * k + 3] = (unsigned char)(x >> 24);
				}
				nb = 4 * m;
			}
			fwrite(bytes, 1, nb, f);
			done += m;
		}
	}
	if (fflush(f) || ferror(f)) {
		emb_err_set(err, "%s: write error: %s", path, strerror(errno));
		fclose(f);
		goto done;
	}
	if (fclose(f)) {
		emb_err_set(err, "%s: write error: %s", path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	free(vals);
	free(bytes);
	free(path);
	free(h.p);
	return rc;
}

int emb_synth_materialize(const char *recipe, const char *root,
                          const char *outdir, emb_err *err)
{
	json_t *r, *x, *files, *tensors;
	json_error_t jerr;
	char *rootbuf = NULL;
	spec *sp = NULL;
	uint64_t seed;
	size_t n = 0, i, k;
	int rc = -1;

	r = json_load_file(recipe, JSON_REJECT_DUPLICATES, &jerr);
	if (!r) {
		if (jerr.line < 1)
			return emb_err_set(err, "%s: %s", recipe, jerr.text);
		return emb_err_set(err, "%s: invalid JSON at line %d column %d: %s",
		                   recipe, jerr.line, jerr.column, jerr.text);
	}
	if (!json_is_object(r)) {
		emb_err_set(err, "%s: not a JSON object", recipe);
		goto out;
	}
	x = json_object_get(r, "format");
	if (!json_is_string(x) || strcmp(json_string_value(x), "emb-synth-1")) {
		emb_err_set(err, "%s: field 'format' must be \"emb-synth-1\"", recipe);
		goto out;
	}
	x = json_object_get(r, "seed");
	if (!json_is_integer(x) || json_integer_value(x) < 0) {
		emb_err_set(err, "%s: field 'seed' must be a non-negative integer", recipe);
		goto out;
	}
	seed = (uint64_t)json_integer_value(x);
	files = json_object_get(r, "files");
	if (files && !json_is_object(files)) {
		emb_err_set(err, "%s: field 'files' must be an object", recipe);
		goto out;
	}
	tensors = json_object_get(r, "tensors");
	if (!json_is_array(tensors)) {
		emb_err_set(err, "%s: field 'tensors' must be an array", recipe);
		goto out;
	}
	n = json_array_size(tensors);
	if (!(sp = calloc(n + 1, sizeof(*sp)))) {
		emb_err_set(err, "%s: out of memory", recipe);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (parse_spec(&sp[i], json_array_get(tensors, i), i, recipe, err))
			goto out;
		for (k = 0; k < i; k++)
			if (!strcmp(sp[k].file, sp[i].file) && !strcmp(sp[k].name, sp[i].name)) {
				emb_err_set(err, "%s: field 'tensors[%zu]': tensor '%s' appears "
				            "twice in %s", recipe, i, sp[i].name, sp[i].file);
				goto out;
			}
	}
	if (files) {
		const char *key;
		json_object_foreach(files, key, x)
			if (!emb_relpath_ok(key, 0)) {
				emb_err_set(err, "%s: field 'files': '%s' is not a relative path",
				            recipe, key);
				goto out;
			}
	}

	/* 1. the base folder */
	x = json_object_get(r, "base");
	if (x && !json_is_null(x)) {
		struct stat sb;
		char *base;
		if (!json_is_string(x) || !emb_relpath_ok(json_string_value(x), 0)) {
			emb_err_set(err, "%s: field 'base' must be a relative path", recipe);
			goto out;
		}
		if (!root) {
			const char *sl = strrchr(recipe, '/');
			size_t dl = sl ? (size_t)(sl - recipe) : 0;
			if (!(rootbuf = malloc(dl + 8)))
				goto oom;
			if (sl)
				memcpy(rootbuf, recipe, dl);
			else
				rootbuf[dl++] = '.';
			memcpy(rootbuf + dl, "/../..", 7);
			root = rootbuf;
		}
		if (!(base = emb_path_join(root, json_string_value(x))))
			goto oom;
		if (stat(base, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
			emb_err_set(err, "%s: field 'base': %s is not a directory", recipe, base);
			free(base);
			goto out;
		}
		rc = copy_tree(base, base, outdir, 0, err);
		free(base);
		if (rc)
			goto out;
		rc = -1;
	} else if (mkdir_p(outdir, err)) {
		goto out;
	}

	/* 2. the files entries */
	if (files) {
		const char *key;
		json_object_foreach(files, key, x) {
			sbuf b = {0};
			char *p;
			int w;
			if (mkdir_parent(outdir, key, err))
				goto out;
			sb_json(&b, x, 0);
			if (b.oom || !(p = emb_path_join(outdir, key))) {
				free(b.p);
				goto oom;
			}
			w = write_all(p, b.p, b.len, err);
			free(p);
			free(b.p);
			if (w)
				goto out;
		}
	}

	/* 3. safetensors files, each in recipe order */
	for (i = 0; i < n; i++) {
		for (k = 0; k < i; k++)
			if (!strcmp(sp[k].file, sp[i].file))
				break;
		if (k == i && write_st(outdir, sp[i].file, sp, n, seed, err))
			goto out;
	}
	rc = 0;
	goto out;
oom:
	emb_err_set(err, "%s: out of memory", recipe);
out:
	free(rootbuf);
	free(sp);
	json_decref(r);
	return rc;
}
