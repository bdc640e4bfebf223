/* lib/kernels_avx2.c: not yet written (owner fills it in) */
