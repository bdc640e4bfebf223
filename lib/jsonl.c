/* lib/jsonl.c: not yet written (owner fills it in) */
