/* lib/cli.c: not yet written (owner fills it in) */
