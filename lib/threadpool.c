/* lib/threadpool.c: not yet written (owner fills it in) */
