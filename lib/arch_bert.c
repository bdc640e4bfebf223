/* lib/arch_bert.c: not yet written (owner fills it in) */
