/* lib/manifest.c: not yet written (owner fills it in) */
