/* lib/tokenizer.c: not yet written (owner fills it in) */
