/* lib/pool.c: not yet written (owner fills it in) */
