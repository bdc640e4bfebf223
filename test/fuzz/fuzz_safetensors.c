/*
 * fuzz_safetensors.c - a .safetensors file: the 8-byte header length, the
 * JSON header (dtypes, shapes, data_offsets, __metadata__) and the data
 * ranges.  The input is opened twice: as the whole file (memfd), and as
 * a sharded index (model.safetensors.index.json: "weight_map") in a
 * scratch directory holding two small valid shards, s1.safetensors and
 * s2.safetensors.  When it opens, every tensor's fields are checked
 * against the file and float tensors are widened to float32 (which
 * reads every byte of their range).
 */
#include "fuzz.h"

static int fd = -1;
static char *index_path;

/* 8-byte little-endian header length + JSON header + data */
static void write_shard(const char *name, const char *hdr,
                        const void *blob, size_t nblob)
{
	size_t nh = strlen(hdr), n = 8 + nh + nblob;
	unsigned char *b = malloc(n);
	char *p = fuzz_tmp_path(name);

	if (!b)
		abort();
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)nh >> (8 * i));
	memcpy(b + 8, hdr, nh);
	memcpy(b + 8 + nh, blob, nblob);
	fuzz_write(p, b, n);
	free(b);
	free(p);
}

static void setup(void)
{
	static const float w[6] = { 1, 2, 3, 4, 5, 6 };

	write_shard("s1.safetensors", "{\"a.weight\": {\"dtype\": \"F32\", "
	            "\"shape\": [2, 2], \"data_offsets\": [0, 16]}}", w, 16);
	write_shard("s2.safetensors", "{\"__metadata__\": {\"format\": "
	            "\"pt\"}, \"b.bias\": {\"dtype\": \"F16\", \"shape\": "
	            "[4], \"data_offsets\": [0, 8]}, \"c\": {\"dtype\": "
	            "\"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
	            w, 12);
	index_path = fuzz_tmp_path("model.safetensors.index.json");
}

static void check(emb_safetensors *st);

int FUZZ_ENTRY(safetensors)(const uint8_t *data, size_t size)
{
	char path[64];
	emb_safetensors *st;
	emb_err err;

	if (!index_path)
		setup();
	fuzz_write(index_path, data, size);
	if (emb_safetensors_open(&st, index_path, &err) == 0) {
		fuzz_note("index", "ok");
		check(st);
	} else {
		FUZZ_CHECK(err.msg[0] && strlen(err.msg) < EMB_ERR_MAX);
		fuzz_note("index", err.msg);
	}
	fuzz_memfile(&fd, path, data, size);
	if (emb_safetensors_open(&st, path, &err) < 0) {
		FUZZ_CHECK(err.msg[0] && strlen(err.msg) < EMB_ERR_MAX);
		fuzz_note("open", err.msg);
		return 0;
	}
	fuzz_note("open", "ok");
	check(st);
	return 0;
}

static void check(emb_safetensors *st)
{
	emb_err err;

	emb_safetensors_meta(st, "format");
	for (size_t i = 0; i < emb_safetensors_count(st); i++) {
		const emb_tensor *t = emb_safetensors_at(st, i);
		int64_t numel = 1;

		FUZZ_CHECK(t && t->name);
		FUZZ_CHECK(emb_safetensors_find(st, t->name) != NULL);
		FUZZ_CHECK(t->ndim >= 0 && t->ndim <= EMB_MAX_DIMS);
		for (int d = 0; d < t->ndim; d++) {
			FUZZ_CHECK(t->shape[d] >= 0);
			numel *= t->shape[d];
		}
		FUZZ_CHECK(numel == t->numel);
		FUZZ_CHECK(t->nbytes == (size_t)t->numel *
		           emb_dtype_size(t->dtype));
		if (t->numel <= 65536) {
			float *f = malloc(((size_t)t->numel + 1) * sizeof(float));
			if (!f)
				abort();
			/* the range is readable: touch every byte */
			volatile unsigned sum = 0;
			for (size_t k = 0; k < t->nbytes; k++)
				sum += ((const unsigned char *)t->data)[k];
			(void)sum;
			emb_tensor_to_f32(f, t, &err);
			free(f);
		}
	}
	emb_safetensors_find(st, "no.such.tensor");
	emb_safetensors_free(st);
}
