/*
 * fuzz_index.c - an emb-search index file (lib/st/search.h): the
 * safetensors container, the metadata (format, dim, count), the tensors'
 * dtypes and shapes, ids.offsets, and then every byte of the matrices as
 * data.  When the file opens, each precision it holds is searched (top 3,
 * cosine and dot, binary rescored) with two queries, and the results are
 * written out as emb-search writes them (which checks every id).
 */
#include "fuzz.h"
#include "st/search.h"

static int fd = -1;

static void search(const emb_index *ix, unsigned first, int score,
                   int rescore)
{
	emb_search_opts o = { 0 };
	emb_search *s;
	emb_err err;
	emb_hit hits[2 * 3];
	int nh[2], dim = emb_index_dim(ix) > 0 ? emb_index_dim(ix) : 1;
	float *q = calloc(2 * (size_t)dim, sizeof(float));
	emb_buf b;

	if (!q)
		abort();
	for (int i = 0; i < 2 * dim; i++)
		q[i] = (float)((i * 7) % 5) - 2.0f;
	o.k = 3;
	o.score = score;
	o.first = first;
	o.rescore = rescore;
	o.threads = 1;
	if (emb_search_new(&s, ix, &o, &err) < 0) {
		FUZZ_CHECK(err.msg[0] && strlen(err.msg) < EMB_ERR_MAX);
		free(q);
		return;
	}
	emb_search_run(s, hits, nh, q, 2);
	emb_buf_init(&b);
	for (int i = 0; i < 2; i++) {
		/* -1: a dot product past float32's range (search.h), an
		 * error the results writer reports */
		FUZZ_CHECK(nh[i] >= (score == EMB_SCORE_DOT ? -1 : 0) &&
		           nh[i] <= 3);
		for (int r = 0; r < nh[i]; r++)
			FUZZ_CHECK(hits[i * 3 + r].doc < emb_index_count(ix));
		b.len = 0;
		if (emb_search_results_json(&b, ix, hits + i * 3, nh[i], &err) < 0)
			FUZZ_CHECK(err.msg[0]);
		else
			FUZZ_CHECK(nh[i] >= 0);
	}
	emb_buf_release(&b);
	emb_search_free(s);
	free(q);
}

int FUZZ_ENTRY(index)(const uint8_t *data, size_t size)
{
	char path[64];
	emb_index *ix;
	emb_err err;

	fuzz_memfile(&fd, path, data, size);
	if (emb_index_open(&ix, path, 1 << 16, &err) < 0) {
		FUZZ_CHECK(err.msg[0] && strlen(err.msg) < EMB_ERR_MAX);
		fuzz_note("open", err.msg);
		return 0;
	}
	fuzz_note("open", "ok");
	for (unsigned p = EMB_IX_F32; p <= EMB_IX_BINARY; p <<= 1) {
		if (!(emb_index_precisions(ix) & p))
			continue;
		search(ix, p, EMB_SCORE_COSINE, 0);
		search(ix, p, EMB_SCORE_DOT, p == EMB_IX_F32 ? 0 : 2);
	}
	emb_index_free(ix);
	return 0;
}
