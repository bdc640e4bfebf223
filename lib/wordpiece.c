/* lib/wordpiece.c: not yet written (owner fills it in) */
