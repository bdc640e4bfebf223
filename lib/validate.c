/* lib/validate.c: not yet written (owner fills it in) */
