/*
 * test_synth.c - synthetic checkpoints (SYNTHETIC.md): the test vectors,
 * dtype rounding, and materialized fixtures checked by the sha256 of all
 * tensors' stored bytes in recipe order.  Scratch: $EMB_TOP/test/tmp/unit-synth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "tool/emb-tool.h"

static const char *top(void)
{
	const char *t = getenv("EMB_TOP");

	return t && *t ? t : ".";
}

static const char *scratch(const char *name)
{
	static char dir[1024];
	char cmd[2200];

	snprintf(dir, sizeof(dir), "%s/test/tmp/unit-synth/%s", top(), name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	cr_assert_eq(system(cmd), 0, "cannot create %s", dir);
	return dir;
}

/* ------------------------------------------------------------------ */
/* sha256 (FIPS 180-4), small and slow enough                           */

typedef struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
} sha256;

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
		              ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
		              ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha_init(sha256 *s)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
	s->n = 0;
}

static void sha_update(sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	s->len += n;
	if (s->n) {
		while (n && s->n < 64) {
			s->buf[s->n++] = *p++;
			n--;
		}
		if (s->n < 64)
			return;
		sha_block(s, s->buf);
		s->n = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		sha_block(s, p);
	memcpy(s->buf, p, n);
	s->n = n;
}

static void sha_hex(sha256 *s, char out[65])
{
	uint64_t bits = s->len * 8;
	unsigned char pad = 0x80, z = 0, l[8];

	sha_update(s, &pad, 1);
	while (s->n != 56)
		sha_update(s, &z, 1);
	for (int i = 0; i < 8; i++)
		l[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha_update(s, l, 8);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

Test(synth, sha256_self_check)
{
	sha256 s;
	char hex[65];

	sha_init(&s);
	sha_update(&s, "abc", 3);
	sha_hex(&s, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_init(&s);
	for (int i = 0; i < 1000; i++)
		sha_update(&s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		           1000);
	sha_hex(&s, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* ------------------------------------------------------------------ */
/* SYNTHETIC.md test vectors                                           */

Test(synth, fnv1a64_vectors)
{
	cr_assert_eq(emb_synth_fnv1a64("a"), 0xaf63dc4c8601ec8cull);
	cr_assert_eq(emb_synth_fnv1a64(""), 0xcbf29ce484222325ull);
	/* by the definition, one byte at a time */
	uint64_t h = 0xcbf29ce484222325ull;
	const char *s = "encoder.layer.0.\xc3\xa9";
	for (const char *p = s; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	cr_assert_eq(emb_synth_fnv1a64(s), h);
}

Test(synth, value_vectors)
{
	static const double a[4] = {
		-0.606428861618042, 0.9033616781234741, -0.16860687732696533,
		0.4366793632507324,
	};
	static const double w[4] = {
		0.9022731781005859, -0.6267549991607666, -0.5114121437072754,
		-0.9260880947113037,
	};
	for (int i = 0; i < 4; i++) {
		cr_assert_eq((double)emb_synth_value(42, "a", i, 1, 0), a[i], "a[%d]", i);
		cr_assert_eq((double)emb_synth_value(42, "embeddings.word_embeddings.weight",
		                                     i, 1, 0), w[i], "w[%d]", i);
	}
	/* another seed gives other values */
	cr_assert_neq(emb_synth_value(43, "a", 0, 1, 0), (float)a[0]);
}

Test(synth, value_range_and_grid)
{
	for (uint64_t i = 0; i < 100000; i++) {
		float v = emb_synth_value(7, "t", i, 1, 0);
		double k = ((double)v + 1.0) * 8388608.0;    /* (2k - 2^24)/2^24 */
		cr_assert(v >= -1.0f && v < 1.0f, "v[%llu] = %g", (unsigned long long)i, v);
		cr_assert_eq(k, floor(k), "v[%llu] = %.9g not on the 2^-23 grid",
		             (unsigned long long)i, v);
	}
}

Test(synth, scale_and_offset_are_float32_ops)
{
	for (uint64_t i = 0; i < 2000; i++) {
		float v = emb_synth_value(5, "x", i, 1, 0);
		/* a float product is the double product (exact) rounded once */
		float want = (float)((double)v * 3.0);
		float got = emb_synth_value(5, "x", i, 3, 0);
		cr_assert_eq(got, want, "i=%llu", (unsigned long long)i);
		want = (float)(1.0 + (double)want);
		got = emb_synth_value(5, "x", i, 3, 1);
		cr_assert_eq(got, want, "i=%llu offset", (unsigned long long)i);
		cr_assert_eq(emb_synth_value(5, "x", i, 0.125f, 0), v * 0.125f);
	}
}

/* ------------------------------------------------------------------ */
/* materialized fixtures                                               */

static const struct {
	const char *name, *sha;
} sums[] = {
	{"minilm-l6", "faa31e1573a3a1d2cec48bc58d0652a92cffdc4dcb8936e2657edb4daaffdad6"},
	{"bert-tiny-cls-bf16", "b0a0753b1855afd49b496df9bbfae80904c0c996150d3f7637d7c1f06905cad5"},
	{"ce-minilm-l6", "b78714176796a7e4b1429f6d0e0218435596dcb2d286465e5bf14e4e12df7f00"},
	{"splade-tiny", "eb340e911b2afb586c7b403e4bba6f897dbac4691a04dc908bee034a4854747b"},
};

/* sha256 of the stored bytes of every tensor of RECIPE, in recipe order,
 * read back from the materialized OUT through emb_safetensors */
static void tensors_sha(char hex[65], const char *recipe, const char *out)
{
	json_error_t jerr;
	json_t *r = json_load_file(recipe, 0, &jerr), *ts;
	sha256 s;
	size_t i;

	cr_assert_not_null(r, "%s: %s", recipe, jerr.text);
	ts = json_object_get(r, "tensors");
	sha_init(&s);
	for (i = 0; i < json_array_size(ts); i++) {
		json_t *t = json_array_get(ts, i), *f = json_object_get(t, "file");
		const char *name = json_string_value(json_object_get(t, "name"));
		const char *dt = json_string_value(json_object_get(t, "dtype"));
		json_t *shape = json_object_get(t, "shape");
		char path[2048];
		emb_safetensors *st;
		const emb_tensor *x;
		emb_err err;

		snprintf(path, sizeof(path), "%s/%s", out,
		         f ? json_string_value(f) : "model.safetensors");
		cr_assert_eq(emb_safetensors_open(&st, path, &err), 0, "%s", err.msg);
		x = emb_safetensors_find(st, name);
		cr_assert_not_null(x, "%s: no tensor %s", path, name);
		cr_assert_str_eq(emb_dtype_name(x->dtype), dt ? dt : "F32");
		cr_assert_eq((size_t)x->ndim, json_array_size(shape), "%s", name);
		for (int d = 0; d < x->ndim; d++)
			cr_assert_eq(x->shape[d], json_integer_value(json_array_get(shape, d)));
		sha_update(&s, x->data, x->nbytes);
		emb_safetensors_free(st);
	}
	sha_hex(&s, hex);
	json_decref(r);
}

static int file_equal(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int ca, cb, eq = fa && fb;

	while (eq) {
		ca = getc(fa);
		cb = getc(fb);
		if (ca != cb)
			eq = 0;
		if (ca == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return eq;
}

static void check_fixture(const char *name, const char *sha)
{
	char recipe[2048], root[1024], path[4096], base[4096], hex[65];
	const char *out = scratch(name);
	emb_err err = {{0}};
	json_error_t jerr;
	json_t *r, *files, *v;
	const char *key;
	struct stat sb;

	snprintf(root, sizeof(root), "%s/test/data", top());
	snprintf(recipe, sizeof(recipe), "%s/fixtures/%s/recipe.json", root, name);
	cr_assert_eq(emb_synth_materialize(recipe, root, out, &err), 0, "%s", err.msg);
	tensors_sha(hex, recipe, out);
	cr_assert_str_eq(hex, sha, "%s: sha256 of the tensors", name);

	/* "files" written as JSON equal to the recipe's; base copied minus
	 * PROVENANCE.md/README.md */
	r = json_load_file(recipe, 0, &jerr);
	files = json_object_get(r, "files");
	json_object_foreach(files, key, v) {
		json_t *got;
		snprintf(path, sizeof(path), "%s/%s", out, key);
		got = json_load_file(path, 0, &jerr);
		cr_assert_not_null(got, "%s: %s", path, jerr.text);
		cr_assert(json_equal(got, v), "%s differs from the recipe", path);
		json_decref(got);
	}
	snprintf(base, sizeof(base), "%s/%s/tokenizer.json", root,
	         json_string_value(json_object_get(r, "base")));
	snprintf(path, sizeof(path), "%s/tokenizer.json", out);
	cr_assert(file_equal(base, path), "tokenizer.json not copied");
	snprintf(path, sizeof(path), "%s/PROVENANCE.md", out);
	cr_assert_neq(stat(path, &sb), 0, "PROVENANCE.md copied");
	json_decref(r);
}

Test(synth, fixtures_sha256, .timeout = 60)
{
	int found = 0;

	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
		char recipe[1024];
		struct stat sb;
		snprintf(recipe, sizeof(recipe), "%s/test/data/fixtures/%s/recipe.json",
		         top(), sums[i].name);
		if (stat(recipe, &sb) != 0)
			continue;
		check_fixture(sums[i].name, sums[i].sha);
		found++;
	}
	cr_assert_geq(found, 2, "minilm-l6 and bert-tiny-cls-bf16 must be in test/data");
}

Test(synth, default_root_and_stconfig)
{
	/* root defaults to two levels above the recipe's folder */
	char recipe[1024];
	const char *out = scratch("default-root");
	emb_err err = {{0}};
	emb_st_config c;
	emb_safetensors *st;
	const emb_tensor *t;
	float *w;

	snprintf(recipe, sizeof(recipe), "%s/test/data/fixtures/bert-tiny-cls-bf16/recipe.json",
	         top());
	cr_assert_eq(emb_synth_materialize(recipe, NULL, out, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_st_config_load(&c, out, &err), 0, "%s", err.msg);
	cr_assert_eq(c.pool_modes, EMB_POOL_CLS);
	cr_assert_eq(c.pool_dim, 64);
	cr_assert_eq(c.normalize, 0);
	cr_assert_eq(c.max_seq_length, 128);
	emb_st_config_release(&c);
	/* widened F16 values are the synth values rounded to half */
	cr_assert_eq(emb_safetensors_open(&st, out, &err), 0, "%s", err.msg);
	t = emb_safetensors_find(st, "embeddings.LayerNorm.weight");
	cr_assert_not_null(t);
	cr_assert_eq(t->dtype, EMB_DT_F16);
	w = malloc(t->numel * sizeof(float));
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	for (int64_t i = 0; i < t->numel; i++) {
		float v = emb_synth_value(2, "embeddings.LayerNorm.weight", i, 0.125f, 1.0f);
		/* in [0.875, 1.125): half spacing 2^-10 or 2^-11 */
		cr_assert_leq(fabsf(w[i] - v), ldexpf(1, v < 1 ? -12 : -11), "i=%lld",
		              (long long)i);
	}
	free(w);
	emb_safetensors_free(st);
}

/* ------------------------------------------------------------------ */
/* a recipe written here: files in subfolders, "file" shards, dtypes    */

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* nearest-even check of half/bfloat rounding: widened w is a nearest
 * representable neighbour of v, and on a tie its last bit is 0 */
static void check_rounded(const emb_tensor *t, const float *w, const float *v)
{
	emb_err err;

	for (int64_t i = 0; i < t->numel; i++) {
		uint16_t bits, nb[2];
		float nbw[2];
		emb_tensor one = *t;
		memcpy(&bits, (const char *)t->data + 2 * i, 2);
		nb[0] = bits - 1;
		nb[1] = bits + 1;
		one.numel = 2;
		one.data = nb;
		cr_assert_eq(emb_tensor_to_f32(nbw, &one, &err), 0);
		for (int k = 0; k < 2; k++) {
			/* neighbours by bit pattern are the adjacent values when the
			 * sign does not flip; skip the zero crossing */
			if ((nb[k] ^ bits) & 0x8000)
				continue;
			float dw = fabsf(w[i] - v[i]), dn = fabsf(nbw[k] - v[i]);
			cr_assert_leq(dw, dn, "i=%lld: %.9g stored as %.9g, %.9g is nearer",
			              (long long)i, v[i], w[i], nbw[k]);
			if (dw == dn)
				cr_assert_eq(bits & 1, 0, "i=%lld: tie not to even", (long long)i);
		}
	}
}

Test(synth, custom_recipe)
{
	const char *d = scratch("custom");
	char root[1200], recipe[1300], out[1300], path[4096];
	emb_err err = {{0}};
	emb_safetensors *st;
	const emb_tensor *t;
	float w[300], v[300];
	json_error_t jerr;
	json_t *j;
	struct stat sb;

	snprintf(root, sizeof(root), "%s", d);
	snprintf(path, sizeof(path), "mkdir -p '%s/models/m/sub' '%s/fixtures/f'", root, root);
	cr_assert_eq(system(path), 0);
	snprintf(path, sizeof(path), "%s/models/m/vocab.txt", root);
	put_text(path, "[PAD]\nhello\n");
	snprintf(path, sizeof(path), "%s/models/m/sub/x.json", root);
	put_text(path, "{\"keep\": 1}");
	/* a linked file is copied; a link back up the tree is not followed */
	snprintf(path, sizeof(path), "cd '%s/models/m' && ln -s sub/x.json link.json && "
	         "ln -s .. sub/loop && ln -s . sub/self", root);
	cr_assert_eq(system(path), 0);
	snprintf(path, sizeof(path), "%s/models/m/README.md", root);
	put_text(path, "no");
	snprintf(path, sizeof(path), "%s/models/m/old.safetensors", root);
	put_text(path, "no");
	snprintf(recipe, sizeof(recipe), "%s/fixtures/f/recipe.json", root);
	put_text(recipe,
	         "{\"format\": \"emb-synth-1\", \"seed\": 9, \"base\": \"models/m\","
	         " \"files\": {\"config.json\": {\"eps\": 1e-12, \"n\": 3, \"a\": [1.5, null, true],"
	         "   \"s\": \"q\\\"\\n\"},"
	         "  \"2_Dense/config.json\": {\"in_features\": 4}},"
	         " \"tensors\": ["
	         "  {\"name\": \"w\", \"shape\": [3, 100], \"scale\": 3, \"offset\": 1.0, \"dtype\": \"F32\"},"
	         "  {\"name\": \"linear.weight\", \"file\": \"2_Dense/model.safetensors\","
	         "   \"shape\": [2, 2], \"scale\": 0.5},"
	         "  {\"name\": \"h\", \"shape\": [300], \"scale\": 100, \"dtype\": \"F16\"},"
	         "  {\"name\": \"b\", \"shape\": [300], \"scale\": 0.001, \"offset\": 2, \"dtype\": \"BF16\"},"
	         "  {\"name\": \"s\", \"shape\": [], \"scale\": 1},"
	         "  {\"name\": \"z\", \"shape\": [0, 5], \"scale\": 1, \"dtype\": \"F16\"}"
	         "]}");
	snprintf(out, sizeof(out), "%s/out/deeper", root);
	cr_assert_eq(emb_synth_materialize(recipe, NULL, out, &err), 0, "%s", err.msg);

	/* base copy rules */
	snprintf(path, sizeof(path), "%s/vocab.txt", out);
	cr_assert_eq(stat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/sub/x.json", out);
	cr_assert_eq(stat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/README.md", out);
	cr_assert_neq(stat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/link.json", out);
	cr_assert_eq(lstat(path, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode), "link.json copied as a file");
	snprintf(path, sizeof(path), "%s/sub/loop", out);
	cr_assert_neq(lstat(path, &sb), 0, "sub/loop followed");
	snprintf(path, sizeof(path), "%s/old.safetensors", out);
	cr_assert_neq(stat(path, &sb), 0);
	/* files: JSON that reads back equal */
	snprintf(path, sizeof(path), "%s/config.json", out);
	j = json_load_file(path, 0, &jerr);
	cr_assert_not_null(j, "%s", jerr.text);
	cr_assert_eq(json_real_value(json_object_get(j, "eps")), 1e-12);
	cr_assert_eq(json_integer_value(json_object_get(j, "n")), 3);
	cr_assert_str_eq(json_string_value(json_object_get(j, "s")), "q\"\n");
	cr_assert(json_is_null(json_array_get(json_object_get(j, "a"), 1)));
	json_decref(j);

	/* model.safetensors: recipe order, values as specified */
	cr_assert_eq(emb_safetensors_open(&st, out, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_safetensors_count(st), 5);
	cr_assert_str_eq(emb_safetensors_at(st, 0)->name, "w");
	cr_assert_str_eq(emb_safetensors_at(st, 1)->name, "h");
	cr_assert_str_eq(emb_safetensors_at(st, 2)->name, "b");
	cr_assert_str_eq(emb_safetensors_at(st, 3)->name, "s");
	cr_assert_null(emb_safetensors_find(st, "linear.weight"));
	cr_assert_str_eq(emb_safetensors_meta(st, "format"), "pt");
	t = emb_safetensors_find(st, "w");
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	for (int i = 0; i < 300; i++)
		cr_assert_eq(w[i], emb_synth_value(9, "w", i, 3, 1), "w[%d]", i);
	t = emb_safetensors_find(st, "h");
	cr_assert_eq(t->dtype, EMB_DT_F16);
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	for (int i = 0; i < 300; i++)
		v[i] = emb_synth_value(9, "h", i, 100, 0);
	check_rounded(t, w, v);
	t = emb_safetensors_find(st, "b");
	cr_assert_eq(t->dtype, EMB_DT_BF16);
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	for (int i = 0; i < 300; i++) {
		v[i] = emb_synth_value(9, "b", i, 0.001f, 2);
		uint32_t u;
		memcpy(&u, &v[i], 4);
		u = (uint32_t)(((uint64_t)u + 0x7fff + ((u >> 16) & 1)) >> 16) << 16;
		float want;
		memcpy(&want, &u, 4);
		cr_assert_eq(w[i], want, "b[%d]", i);
	}
	check_rounded(t, w, v);
	t = emb_safetensors_find(st, "s");
	cr_assert_eq(t->ndim, 0);
	cr_assert_eq(t->numel, 1);
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	cr_assert_eq(w[0], emb_synth_value(9, "s", 0, 1, 0));
	t = emb_safetensors_find(st, "z");
	cr_assert_eq(t->numel, 0);
	emb_safetensors_free(st);

	/* the "file" tensor went to 2_Dense/model.safetensors */
	snprintf(path, sizeof(path), "%s/2_Dense/model.safetensors", out);
	cr_assert_eq(emb_safetensors_open(&st, path, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_safetensors_count(st), 1);
	t = emb_safetensors_find(st, "linear.weight");
	cr_assert_eq(emb_tensor_to_f32(w, t, &err), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(w[i], emb_synth_value(9, "linear.weight", i, 0.5f, 0));
	emb_safetensors_free(st);
	snprintf(path, sizeof(path), "%s/2_Dense/config.json", out);
	cr_assert_eq(stat(path, &sb), 0);
}

static void bad_recipe(const char *name, const char *text, const char *want)
{
	const char *d = scratch(name);
	char recipe[1200], out[1200];
	emb_err err = {{0}};

	snprintf(recipe, sizeof(recipe), "%s/recipe.json", d);
	snprintf(out, sizeof(out), "%s/out", d);
	put_text(recipe, text);
	cr_assert_eq(emb_synth_materialize(recipe, d, out, &err), -1, "%s accepted", text);
	cr_assert_not_null(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
	cr_assert_not_null(strstr(err.msg, "recipe.json"), "error '%s' names no file",
	                   err.msg);
}

#define TS(x) "{\"format\":\"emb-synth-1\",\"seed\":1,\"tensors\":[" x "]}"

Test(synth, bad_recipes)
{
	emb_err err = {{0}};

	cr_assert_eq(emb_synth_materialize("/nonexistent/recipe.json", NULL,
	                                   "/nonexistent/out", &err), -1);
	cr_assert_not_null(strstr(err.msg, "/nonexistent/recipe.json"), "%s", err.msg);
	bad_recipe("r1", "{\"format\":", "invalid JSON at line 1");
	bad_recipe("r2", "[]", "not a JSON object");
	bad_recipe("r3", "{\"format\":\"emb-synth-2\",\"seed\":1,\"tensors\":[]}",
	           "field 'format' must be \"emb-synth-1\"");
	bad_recipe("r4", "{\"format\":\"emb-synth-1\",\"seed\":-1,\"tensors\":[]}",
	           "field 'seed'");
	bad_recipe("r5", "{\"format\":\"emb-synth-1\",\"seed\":1}", "field 'tensors'");
	bad_recipe("r6", TS("{\"name\":\"a\",\"shape\":[2],\"scale\":1,\"dtype\":\"I8\"}"),
	           "field 'tensors[0].dtype'");
	bad_recipe("r7", TS("{\"name\":\"a\",\"shape\":[1],\"scale\":1},"
	                    "{\"name\":\"b\",\"shape\":[-2],\"scale\":1}"),
	           "field 'tensors[1].shape'");
	bad_recipe("r8", TS("{\"name\":\"a\",\"shape\":[2]}"), "field 'tensors[0].scale'");
	bad_recipe("r9", TS("{\"shape\":[2],\"scale\":1}"), "field 'tensors[0].name'");
	bad_recipe("r10", TS("{\"name\":\"a\",\"shape\":[2],\"scale\":1,"
	                     "\"file\":\"../evil.safetensors\"}"),
	           "field 'tensors[0].file'");
	bad_recipe("r11", "{\"format\":\"emb-synth-1\",\"seed\":1,\"tensors\":[],"
	                  "\"files\":{\"/etc/x.json\":{}}}", "field 'files'");
	bad_recipe("r12", "{\"format\":\"emb-synth-1\",\"seed\":1,\"tensors\":[],"
	                  "\"base\":\"models/none\"}", "field 'base'");
	bad_recipe("r13", TS("{\"name\":\"a\",\"shape\":[4294967296,4294967296],\"scale\":1}"),
	           "too large");
	bad_recipe("r14", TS("{\"name\":\"a\",\"shape\":[1],\"scale\":1},"
	                     "{\"name\":\"a\",\"shape\":[1],\"scale\":1}"),
	           "appears twice");
}

/* "outliers": [[channel, times], ...] multiplies every element whose
 * index in the last dimension is channel (after scale and offset, in
 * float32, before the storage rounding); the others are untouched */
Test(synth, outlier_channels)
{
	const char *d = scratch("outliers");
	char recipe[1200], out[1200];
	emb_err err = {{0}};
	emb_safetensors *st;
	float w[15], g[4];

	snprintf(recipe, sizeof(recipe), "%s/recipe.json", d);
	snprintf(out, sizeof(out), "%s/out", d);
	put_text(recipe, TS("{\"name\":\"w\",\"shape\":[3,5],\"scale\":0.5,"
	                    "\"outliers\":[[1,32],[4,0.0625]]},"
	                    "{\"name\":\"g\",\"shape\":[4],\"scale\":0.125,"
	                    "\"offset\":1,\"dtype\":\"BF16\",\"outliers\":[[2,64]]}"));
	cr_assert_eq(emb_synth_materialize(recipe, d, out, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_safetensors_open(&st, out, &err), 0, "%s", err.msg);
	cr_assert_eq(emb_tensor_to_f32(w, emb_safetensors_find(st, "w"), &err), 0);
	cr_assert_eq(emb_tensor_to_f32(g, emb_safetensors_find(st, "g"), &err), 0);
	for (int i = 0; i < 15; i++) {
		float v = emb_synth_value(1, "w", (uint64_t)i, 0.5f, 0);
		float want = i % 5 == 1 ? v * 32 : i % 5 == 4 ? v * 0.0625f : v;
		cr_expect_eq(w[i], want, "w[%d] %g, want %g", i, w[i], want);
	}
	for (int i = 0; i < 4; i++) {
		float v = emb_synth_value(1, "g", (uint64_t)i, 0.125f, 1);
		if (i == 2)
			cr_expect(g[i] > 40 && fabsf(g[i] - v * 64) <= v * 64 / 128,
			          "g[2] %g: 64x %g, rounded to bf16", g[i], v);
		else
			cr_expect(fabsf(g[i] - v) <= v / 128, "g[%d] %g vs %g", i, g[i], v);
	}
	emb_safetensors_free(st);
	bad_recipe("o1", TS("{\"name\":\"a\",\"shape\":[2,3],\"scale\":1,"
	                    "\"outliers\":[[3,2]]}"), "field 'tensors[0].outliers[0]'");
	bad_recipe("o2", TS("{\"name\":\"a\",\"shape\":[2,3],\"scale\":1,"
	                    "\"outliers\":[[1]]}"), "field 'tensors[0].outliers[0]'");
	bad_recipe("o3", TS("{\"name\":\"a\",\"shape\":[3],\"scale\":1,"
	                    "\"outliers\":{\"1\":2}}"), "field 'tensors[0].outliers'");
	bad_recipe("o4", TS("{\"name\":\"a\",\"shape\":[3],\"scale\":1,"
	                    "\"outliers\":[[-1,2]]}"), "field 'tensors[0].outliers[0]'");
}
