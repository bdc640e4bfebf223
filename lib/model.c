/* lib/model.c: not yet written (owner fills it in) */
