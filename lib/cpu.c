/* lib/cpu.c: not yet written (owner fills it in) */
