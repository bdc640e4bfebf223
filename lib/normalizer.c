/* lib/normalizer.c: not yet written (owner fills it in) */
