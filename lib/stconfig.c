/* lib/stconfig.c: not yet written (owner fills it in) */
