/* targets.h - the fuzz targets (X-macro): name, then the file stem.
 * Adding a target: a line here, test/fuzz/fuzz_NAME.c, its line in
 * FUZZ_TARGETS and its replay object rule in the Makefile. */
FUZZ_TARGET(safetensors)
FUZZ_TARGET(config)
FUZZ_TARGET(tokenizer_json)
FUZZ_TARGET(tokenize_wordpiece)
FUZZ_TARGET(tokenize_bpe)
FUZZ_TARGET(tokenize_unigram)
FUZZ_TARGET(jsonl)
FUZZ_TARGET(manifest)
FUZZ_TARGET(index)
