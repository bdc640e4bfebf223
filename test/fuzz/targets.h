/* targets.h - the fuzz targets (X-macro): name, then the file stem.
 * Adding a target: a line here, test/fuzz/fuzz_NAME.c (entry point
 * FUZZ_ENTRY(NAME)), and its object in FUZZ_REPLAY_OBJ and FUZZ_TARGETS
 * in the Makefile. */
FUZZ_TARGET(safetensors)
FUZZ_TARGET(config)
FUZZ_TARGET(tokenizer_json)
FUZZ_TARGET(tokenizer_fast)
FUZZ_TARGET(tokenize_wordpiece)
FUZZ_TARGET(tokenize_bpe)
FUZZ_TARGET(tokenize_unigram)
FUZZ_TARGET(jsonl)
FUZZ_TARGET(manifest)
FUZZ_TARGET(index)
FUZZ_TARGET(normalizer)
FUZZ_TARGET(paths)
