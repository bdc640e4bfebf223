/*
 * fuzz_tokenize_bpe.c - tokenization of arbitrary bytes (valid and
 * invalid UTF-8, pairs, truncation) with the BPE tokenizers of test/data:
 * byte-level (RoBERTa, ModernBERT with NFC, the add_prefix_space one),
 * and the synthetic ones with Split regexes, char fallback and empty
 * regex matches.  Input layout: fuzz_tok.h.
 */
#include "fuzz_tok.h"

static const char *const dirs[] = {
	"test/data/models/sentence-transformers--all-distilroberta-v1",
	"test/data/models/answerdotai--ModernBERT-large",
	"test/data/tokenize-synth/bl-prefix",
	"test/data/tokenize-synth/bpe-chars-fallback",
	"test/data/tokenize-synth/bpe-qwen-split",
	"test/data/tokenize-synth/bpe-splits",
	"test/data/tokenize-synth/empty-matches",
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
