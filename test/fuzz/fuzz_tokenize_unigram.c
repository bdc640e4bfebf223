/*
 * fuzz_tokenize_unigram.c - tokenization of arbitrary bytes (valid and
 * invalid UTF-8, pairs, truncation) with the Unigram (SentencePiece)
 * tokenizers of test/data: ALBERT and T5 (Precompiled charsmap,
 * Metaspace), and the synthetic byte-fallback and punctuation ones.
 * Input layout: fuzz_tok.h.
 */
#include "fuzz_tok.h"

static const char *const dirs[] = {
	"test/data/models/sentence-transformers--paraphrase-albert-small-v2",
	"test/data/models/Falconsai--text_summarization",
	"test/data/tokenize-synth/uni-punct",
	"test/data/tokenize-synth/unigram-fallback",
};
#define NTOK (sizeof(dirs) / sizeof(dirs[0]))
static emb_tokenizer *toks[NTOK];

int FUZZ_ENTRY(tokenize_unigram)(const uint8_t *data, size_t size)
{
	return fuzz_tokenize_one_of(dirs, toks, NTOK, data, size);
}
