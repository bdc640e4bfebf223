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

int FUZZ_ENTRY(tokenize_wordpiece)(const uint8_t *data, size_t size)
{
	return fuzz_tokenize_one_of(dirs, toks, NTOK, data, size);
}
