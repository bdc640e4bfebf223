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

int FUZZ_ENTRY(tokenize_bpe)(const uint8_t *data, size_t size)
{
	return fuzz_tokenize_one_of(dirs, toks, NTOK, data, size);
}
