/* lib/kernels_avx512.c: not yet written (owner fills it in) */
