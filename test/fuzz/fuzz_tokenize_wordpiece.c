/*
 * fuzz_tokenize_wordpiece.c - tokenization of arbitrary bytes (valid and
 * invalid UTF-8, pairs, truncation) with the WordPiece tokenizers of
 * test/data: BERT tokenizer.json (BertNormalizer, BertPreTokenizer),
 * MPNet's, and vocab.txt + tokenizer_config.json (no tokenizer.json).
 * Input layout: fuzz_tok.h.
 */
#include "fuzz_tok.h"

static const char *const dirs[] = {
	"test/data/models/sentence-transformers--all-MiniLM-L6-v2",
	"test/data/models/sentence-transformers--all-mpnet-base-v2/tokenizer.json",
	"test/data/models/naver--splade_v2_distil",
};
#define NTOK (sizeof(dirs) / sizeof(dirs[0]))
static emb_tokenizer *toks[NTOK];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i;

	if (size < 1)
		return 0;
	i = (data[0] & 15) % NTOK;
	if (!toks[i]) {
		char *p = fuzz_data(dirs[i]);
		emb_err err;
		if (emb_tokenizer_load(&toks[i], p, &err) < 0) {
			fprintf(stderr, "fuzz: %s\n", err.msg);
			abort();
		}
		free(p);
	}
	fuzz_tokenize(toks[i], data, size, 1);
	return 0;
}
